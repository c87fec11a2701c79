#!/bin/sh
# The docs as a user reads them. Every C block of README.md and docs/*.md
# marked as an example compiles against this build with -Wall -Werror and
# runs to exit status 0, printing what the doc says it prints; every
# relative link of those files (a file, a folder, a #heading of a
# markdown file) resolves; every dla_ name they use exists; and
# docs/environment.md names exactly the DLACCEL_ variables the code reads.
# No network; a few seconds. Speaks TAP.
#
# Marking a block (HTML comments, which a markdown viewer does not show):
#
#     <!-- doc-example -->              the next ```c block is a complete
#     ```c                              program
#     ...
#     ```
#     <!-- doc-example-expect: TEXT --> (any number) its stdout has TEXT
#
# A fragment gets the code around it in the comments themselves: the lines
# between "<!-- doc-example" and "-->" go before the block, the lines
# between "<!-- doc-example-end" and "-->" (right after the block) after
# it. Error messages name the markdown file and line (#line directives).
srcdir=$(cd "$(dirname "$0")/.." && pwd)
build=${DLA_TEST_BUILDDIR:?DLA_TEST_BUILDDIR is the build folder}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-docs-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_DEVICE DLACCEL_LOG DLACCEL_PLAN
cd "$srcdir" || exit 1
docs="README.md $(ls docs/*.md)"

# The compiler and flags the build used (a sanitizer's included).
CC=$(sed -n 's/^CC = //p' "$build/Makefile")
CFLAGS=$(sed -n 's/^CFLAGS = //p' "$build/Makefile")

# Split the marked blocks into $tmp/exN.c, with $tmp/exN.where (FILE:LINE)
# and $tmp/exN.expect (one expected text a line).
# shellcheck disable=SC2086
awk -v out="$tmp" '
function unterminated() {
    if (state != "" && state != "text" && state != "after") {
        printf "%s: the doc-example at line %s is not closed (in its %s)\n", last_file, last_line, state
        bad = 1
    }
}
FNR == 1 { unterminated(); state = "text" }
state == "after" && !/^<!-- doc-example-(end|expect: )/ { state = "text" }
state == "text" && /^<!-- doc-example( -->)? *$/ {
    last_file = FILENAME; last_line = FNR
    n++; f = out "/ex" n
    where[n] = FILENAME ":" (FNR + 1)
    print "" > (f ".expect")
    if ($0 ~ /-->/) { state = "fence"; next }
    printf "#line %d \"%s\"\n", FNR + 1, FILENAME > (f ".c")
    state = "prefix"; next
}
state == "prefix" { if ($0 ~ /^--> *$/) { state = "fence"; next } print > (f ".c"); next }
state == "fence" {
    if ($0 !~ /^```c *$/) { printf "%s:%d: a doc-example mark not followed by a ```c block\n", FILENAME, FNR; bad = 1; state = "text"; next }
    where[n] = FILENAME ":" (FNR + 1)
    printf "#line %d \"%s\"\n", FNR + 1, FILENAME > (f ".c")
    state = "body"; next
}
state == "body" { if ($0 ~ /^``` *$/) { state = "after"; next } print > (f ".c"); next }
state == "after" && /^<!-- doc-example-end *$/ { printf "#line %d \"%s\"\n", FNR + 1, FILENAME > (f ".c"); state = "suffix"; next }
state == "suffix" { if ($0 ~ /^--> *$/) { state = "after"; next } print > (f ".c"); next }
state == "after" && /^<!-- doc-example-expect: .* -->$/ {
    t = $0; sub(/^<!-- doc-example-expect: /, "", t); sub(/ -->$/, "", t)
    print t >> (f ".expect"); next
}
END {
    unterminated()
    for (i = 1; i <= n; i++) print where[i] > (out "/ex" i ".where")
    print n > (out "/count")
    exit bad
}' $docs || { echo 'Bail out! a doc-example mark above is malformed'; exit 1; }
count=$(cat "$tmp/count")
[ "$count" -gt 0 ] || { echo "1..0 # SKIP no marked examples"; exit 77; }

echo "1..$((count + 3))"
i=0
while [ "$i" -lt "$count" ]; do
    i=$((i + 1))
    ex="$tmp/ex$i"; where=$(cat "$ex.where")
    # shellcheck disable=SC2086
    if ! "$build/libtool" --quiet --mode=link $CC $CFLAGS -std=c11 -Wall -Werror \
        -I"$srcdir/api" -o "$ex" "$ex.c" "$build/libdlaccel.la" -lm >"$ex.log" 2>&1; then
        sed 's/^/#   /' "$ex.log"
        echo "not ok $i - $where: compiles"
        continue
    fi
    (cd "$tmp" && timeout 60 "$ex") >"$ex.out" 2>"$ex.err"
    status=$?
    ok=yes
    [ "$status" -eq 0 ] || { echo "# exit status $status"; ok=no; }
    while IFS= read -r text; do
        [ -z "$text" ] && continue
        grep -qF -- "$text" "$ex.out" || { echo "# stdout lacks '$text'"; ok=no; }
    done <"$ex.expect"
    if [ "$ok" = yes ]; then
        echo "ok $i - $where: compiles, runs$(grep -qv '^$' "$ex.expect" && echo ', prints what the doc says')"
    else
        echo "# stdout, then stderr:"
        sed 's/^/#   /' "$ex.out" "$ex.err"
        echo "not ok $i - $where: runs"
    fi
done

# The links: GitHub's anchor of a heading is its text in lower case, with
# everything but letters, digits, blanks, - and _ dropped and blanks made
# -; a repeated heading gets -1, -2, ...  Links in code are not links.
# shellcheck disable=SC2086
if awk '
function slug(h,   s) { s = tolower(h); gsub(/[^a-z0-9 _\200-\377-]/, "", s); gsub(/ /, "-", s); return s }
function dirof(p) { if (p ~ /\//) { sub(/\/[^\/]*$/, "", p); return p } return "." }
function norm(p,   n, parts, stack, i, k, o) {
    n = split(p, parts, "/"); k = 0
    for (i = 1; i <= n; i++) {
        if (parts[i] == "." || parts[i] == "") continue
        if (parts[i] == ".." && k > 0 && stack[k] != "..") { k--; continue }
        stack[++k] = parts[i]
    }
    o = ""
    for (i = 1; i <= k; i++) o = o (i > 1 ? "/" : "") stack[i]
    return o == "" ? "." : o
}
function check(t,   i, path, a, p) {
    if (t ~ /^[a-z]+:/) return
    i = index(t, "#")
    if (i) { path = substr(t, 1, i - 1); a = substr(t, i + 1) } else { path = t; a = "" }
    p = (path == "") ? norm(FILENAME) : norm(dirof(FILENAME) "/" path)
    if (path != "" && system("test -e \"" p "\"") != 0) {
        printf "#   %s:%d: %s: no file %s\n", FILENAME, FNR, t, p; bad++; return
    }
    if (a != "" && p ~ /\.md$/ && !((p, a) in anchor)) {
        printf "#   %s:%d: %s: no heading of %s has the anchor #%s\n", FILENAME, FNR, t, p, a; bad++
    }
}
FNR == 1 { code = 0 }
/^ *```/ { code = !code; next }
code { next }
pass == 1 && /^#+ / {
    h = $0; sub(/^#+ +/, "", h); sub(/ +#* *$/, "", h)
    s = slug(h); f = norm(FILENAME)
    if ((f, s) in seen) s = s "-" seen[f, s]++; else seen[f, s] = 1
    anchor[f, s] = 1
    next
}
pass == 2 {
    line = $0
    gsub(/`[^`]*`/, "", line)
    while (match(line, /\]\([^) ]+\)/)) {
        t = substr(line, RSTART + 2, RLENGTH - 3); line = substr(line, RSTART + RLENGTH); check(t)
    }
    if (match(line, /^ *\[[^]]+\]: +[^ ]+/)) { t = line; sub(/^ *\[[^]]+\]: +/, "", t); sub(/ .*/, "", t); check(t) }
}
END { exit bad > 0 }' pass=1 $docs pass=2 $docs >"$tmp/links"; then
    echo "ok $((count + 1)) - every relative link and #anchor of the docs resolves"
else
    cat "$tmp/links"
    echo "not ok $((count + 1)) - every relative link and #anchor of the docs resolves"
fi

# The names: every public dla_ name the docs use is declared in api/ or
# used in the sources (a tool's or a kernel's own name); a name that ends
# in _ is a family (dla_dataqueue_*). A renamed or removed function the
# docs still call fails here.
# shellcheck disable=SC2086
grep -ohE '\bdla_[a-z0-9][a-z0-9_]*' $docs | grep -v '_$' | sort -u >"$tmp/names"
missing=""
while IFS= read -r name; do
    grep -rqw -- "$name" api core nn plugins tools examples bench tests ||
        missing="$missing $name"
done <"$tmp/names"
if [ -z "$missing" ]; then
    echo "ok $((count + 2)) - every dla_ name of the docs exists ($(wc -l <"$tmp/names") names)"
else
    echo "# not in api/ nor the sources:$missing"
    echo "not ok $((count + 2)) - every dla_ name of the docs exists"
fi

# The environment: docs/environment.md names every DLACCEL_ variable the
# library, its plugins, tools, examples and bench read, and each one it
# names is read (DLACCEL_CUDA_* stands for a family).
grep -rhoE '"DLACCEL_[A-Z0-9_]+"' core nn plugins tools examples bench | tr -d '"' | sort -u >"$tmp/env_code"
grep -oE '\bDLACCEL_[A-Z0-9_]*[A-Z0-9]\b' docs/environment.md | sort -u >"$tmp/env_doc"
undocumented=$(comm -23 "$tmp/env_code" "$tmp/env_doc" | tr '\n' ' ')
unread=$(comm -13 "$tmp/env_code" "$tmp/env_doc" | tr '\n' ' ')
if [ -z "$undocumented$unread" ]; then
    echo "ok $((count + 3)) - docs/environment.md and the code agree on the DLACCEL_ variables ($(wc -l <"$tmp/env_doc"))"
else
    [ -n "$undocumented" ] && echo "# read by the code, not in docs/environment.md: $undocumented"
    [ -n "$unread" ] && echo "# in docs/environment.md, read nowhere: $unread"
    echo "not ok $((count + 3)) - docs/environment.md and the code agree on the DLACCEL_ variables"
fi
