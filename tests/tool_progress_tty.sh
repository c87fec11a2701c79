#!/bin/sh
# The progress bar in a real terminal (tmux, at 40, 80 and 120 columns):
# what stays on the screen is the line printed above the bar, the bar's
# last draw and the closing line, none wider than the terminal, and the
# bar shows the rate. A bar wider than the terminal used to wrap at every
# redraw and leave a stale line behind each time. Skipped without tmux.
# Speaks TAP.
prog="$DLA_TEST_BUILDDIR/tests/progress_tty"
if ! command -v tmux >/dev/null 2>&1; then
    echo "1..0 # SKIP tmux is not installed"
    exit 0
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-tty-XXXXXX") || exit 1
sock="dla-progress-$$"
trap 'tmux -L "$sock" kill-server 2>/dev/null; rm -rf "$tmp"' EXIT
unset COLUMNS LINES TMUX

echo "1..3"
n=0
for width in 40 80 120; do
    n=$((n + 1))
    rm -f "$tmp/finished"
    # The program runs in a fresh pane; the shell then marks the end and
    # keeps the pane open for the capture.
    tmux -L "$sock" -f /dev/null new-session -d -x "$width" -y 20 \
        "'$prog'; echo \$? >'$tmp/finished'; sleep 60" || { echo "not ok $n - tmux"; continue; }
    tries=0
    while [ ! -s "$tmp/finished" ] && [ $tries -lt 300 ]; do
        sleep 0.1; tries=$((tries + 1))
    done
    tmux -L "$sock" capture-pane -p >"$tmp/screen"
    tmux -L "$sock" kill-server 2>/dev/null
    ok=yes
    [ "$(cat "$tmp/finished" 2>/dev/null)" = 0 ] || { echo "# the program did not exit 0"; ok=no; }
    lines=$(grep -c . "$tmp/screen")
    [ "$lines" -eq 3 ] || { echo "# $lines lines on the screen, expected 3"; ok=no; }
    wide=$(awk -v w="$width" 'length($0) >= w' "$tmp/screen" | wc -l)
    [ "$wide" -eq 0 ] || { echo "# $wide line(s) as wide as the terminal"; ok=no; }
    grep -q "^halfway" "$tmp/screen" || { echo "# no 'halfway' line"; ok=no; }
    grep -q "100%  500/500.* it/s" "$tmp/screen" || { echo "# no final bar with the rate"; ok=no; }
    grep -q "^done" "$tmp/screen" || { echo "# no 'done' line"; ok=no; }
    if [ $ok = yes ]; then
        echo "ok $n - a ${width}-column terminal keeps 3 lines, none too wide"
    else
        sed 's/^/#   |/' "$tmp/screen"
        echo "not ok $n - a ${width}-column terminal keeps 3 lines, none too wide"
    fi
done
