#!/bin/bash
# fuzz/mutate/run.sh BUILDDIR [net] [image] [idx] - mutation fuzzers for
# the readers of user files, run against a build (best one configured with
# --enable-sanitizers: every mutant then also runs under ASan + UBSan).
# Each format's mutants are made by a Python script (numpy and PIL for the
# images) into a folder under /dev/shm (or $TMPDIR), read by a small C
# driver linked to BUILDDIR's library, one line per mutant, and the step
# fails on a sanitizer report, a crash, a run past its time (a hang), or
# a refusal whose message does not name the file (NONAME). Not part of
# make check: a few minutes per format (docs/hardening.md).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$(cd "${1:?usage: run.sh BUILDDIR [net] [image] [idx]}" && pwd); shift
steps=("$@"); [ ${#steps[@]} -gt 0 ] || steps=(net image idx)
tmp=$(mktemp -d "${TMPDIR:-/dev/shm}/dla-mutate.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
flags="$(sed -n "s/^CFLAGS = //p" "$build/Makefile") $(sed -n "s/^SANITIZER_CFLAGS = //p" "$build/Makefile")"
export ASAN_OPTIONS=${ASAN_OPTIONS:-intercept_tls_get_addr=0}
export DLACCEL_PLUGIN_PATH=$build/plugins.d OMP_NUM_THREADS=1
failed=0
for drv in netfz imfz idxfz; do
    # shellcheck disable=SC2086
    gcc -std=c11 $flags -I"$root/api" -o "$tmp/$drv" "$here/$drv.c" -L"$build/.libs" \
        -ldlaccel -Wl,-rpath,"$build/.libs" || exit 1
done
# run NAME DRIVER FILES...: the driver over the files, in batches.
run() {
    local name=$1 drv=$2; shift 2
    printf '%s\n' "$@" | xargs timeout 1200 "$tmp/$drv" >"$tmp/$name.out" 2>"$tmp/$name.err"
    local rc=$?
    local bad
    bad=$(grep -cE 'ERROR: (Address|Leak)Sanitizer|runtime error' "$tmp/$name.err")
    local noname
    noname=$(grep -c '^NONAME' "$tmp/$name.out")
    echo "$name: $(grep -c . "$tmp/$name.out") lines, exit $rc, $bad sanitizer reports, $noname messages without the file"
    if [ "$rc" -ne 0 ] || [ "$bad" -ne 0 ] || [ "$noname" -ne 0 ]; then
        grep -E 'ERROR:|runtime error|^==' "$tmp/$name.err" | tail -5
        grep '^NONAME' "$tmp/$name.out" | head -5
        failed=$((failed + 1))
    fi
}
for step in "${steps[@]}"; do
    case $step in
    net)
        mkdir -p "$tmp/netseed" "$tmp/net"
        "$tmp/netfz" seed "$tmp/netseed" || exit 1
        for s in "$tmp"/netseed/*.safetensors; do python3 "$here/netmut.py" "$s" "$tmp/net" >/dev/null; done
        # MinLength 1000003 is valid: loading runs the recurrent layers
        # over a million steps (minutes under ASan), left out here.
        mapfile -t files < <(find "$tmp/net" -name '*.safetensors' | sort | \
            xargs grep -L -a 'MinLength\\": 1000003')
        run net netfz "${files[@]}" ;;
    image)
        python3 "$here/immut.py" "$tmp/image" >/dev/null || exit 1
        mapfile -t files < <(find "$tmp/image" -type f | sort)
        IMFZ_GOOD=$tmp/image/rgb.png run image imfz "${files[@]}"
        IMFZ_SKIP=1 IMFZ_GOOD=$tmp/image/rgb.jpg run image_skip imfz "${files[@]}" ;;
    idx)
        python3 "$here/idxmut.py" "$tmp/idx" || exit 1
        mkfifo "$tmp/idx/fifo_without_writer"
        mapfile -t files < <(find "$tmp/idx" \( -type f -o -type p \) | sort)
        run idx idxfz "${files[@]}" ;;
    *) echo "run.sh: unknown step $step (net, image, idx)"; exit 2 ;;
    esac
done
echo "$failed failed"
[ "$failed" -eq 0 ]
