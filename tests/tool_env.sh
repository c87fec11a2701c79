#!/bin/sh
# The environment as a user sets it, wrongly: a DLACCEL_* variable with a
# value outside its fixed set is named once on stderr with the value and
# the accepted values (and the default applies), and an absurd
# OMP_NUM_THREADS is clamped with a warning instead of crashing inside the
# OpenMP runtime. Runs tests/env_probe, which touches what each variable
# steers. Speaks TAP.
probe="$DLA_TEST_BUILDDIR/tests/env_probe"
tool="$DLA_TEST_BUILDDIR/tools/dlaccel"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dla-env-XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
unset DLACCEL_DEVICE DLACCEL_PLUGINS_DISABLE DLACCEL_LOG DLACCEL_PLAN DLACCEL_CPU_CONV \
    DLACCEL_CPU_CACHE_IDLE DLACCEL_CPU_VMATH DLACCEL_PLAN_PROFILE \
    DLACCEL_OPENCL_GEMM DLACCEL_OPENCL_FUSED DLACCEL_OPENCL_FUSED_REDUCE DLACCEL_OPENCL_FP64 \
    OMP_WAIT_POLICY GOMP_SPINCOUNT DLACCEL_OMP_SPIN OPENBLAS_CORETYPE DLACCEL_OPENBLAS_CORE \
    DLACCEL_SHARE_CORES DLACCEL_OVERLAP DLACCEL_BUCKET_MIB
opencl=no
if DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/plugins/opencl:$DLACCEL_PLUGIN_PATH" \
    DLACCEL_DEVICE=opencl "$tool" devices >/dev/null 2>&1; then
    opencl=yes
fi

echo "1..36"
n=0
# run VAR=VALUE...: the probe with those variables, output in $tmp/out.
run() {
    env "$@" "$probe" >"$tmp/out" 2>&1
    status=$?
}
# verdict DESCRIPTION PATTERN...: ok when the probe exited 0 and printed
# "probe: ok", and each pattern is on exactly one line of the output.
verdict() {
    n=$((n + 1)); what=$1; shift
    ok=yes
    [ "$status" -eq 0 ] || { echo "# exit status $status"; ok=no; }
    grep -q "^probe: ok" "$tmp/out" || { echo "# no 'probe: ok'"; ok=no; }
    for pattern in "$@"; do
        c=$(grep -cF -- "$pattern" "$tmp/out")
        [ "$c" -eq 1 ] || { echo "# '$pattern' on $c lines, expected 1"; ok=no; }
    done
    if [ $ok = yes ]; then echo "ok $n - $what"; else
        sed 's/^/#   /' "$tmp/out"; echo "not ok $n - $what"; fi
}

run DLACCEL_PLAN=of DLACCEL_CPU_CONV=Direct DLACCEL_CPU_VMATH=of
verdict "unknown DLACCEL_PLAN, DLACCEL_CPU_CONV and DLACCEL_CPU_VMATH values are named once with the accepted ones" \
    "dlaccel[warn]: DLACCEL_PLAN=of is not one of its values (on, 1, yes, off, 0, no, single-result, conv-bias-in, no-in-place, no-epilogue)" \
    "dlaccel[warn]: cpu: DLACCEL_CPU_CONV=Direct is not one of its values (im2col, direct)" \
    "dlaccel[warn]: cpu: DLACCEL_CPU_VMATH=of is not one of its values (on, off)"

# DLACCEL_SHARE_CORES took any value but off, 0 and no for on, silently.
run DLACCEL_SHARE_CORES=of
verdict "an unknown DLACCEL_SHARE_CORES value is named once with the accepted ones" \
    "dlaccel[warn]: cpu: DLACCEL_SHARE_CORES=of is not one of its values (on, 1, yes, off, 0, no)"

# DLACCEL_OVERLAP took only 0 for off: "off" left the overlap on, silently.
run DLACCEL_OVERLAP=of
verdict "an unknown DLACCEL_OVERLAP value is named once with the accepted ones" \
    "dlaccel[warn]: DLACCEL_OVERLAP=of is not one of its values (1, on, yes, 0, off, no)"

# DLACCEL_BUCKET_MIB left the default in place for a value that is no
# number, silently.
run DLACCEL_BUCKET_MIB=8M
verdict "a DLACCEL_BUCKET_MIB value that is no number is named once, and the default applies" \
    "dlaccel[warn]: DLACCEL_BUCKET_MIB=8M is not a number of MiB above 0 (below 1e6); ignored, the default applies (4)"

run DLACCEL_LOG=verbose
verdict "an unknown DLACCEL_LOG value is named, and warn applies" \
    "DLACCEL_LOG=verbose is not one of its values (none, error, warn, info, debug, any case); warn applies"

run DLACCEL_CPU_CACHE_IDLE=soon
verdict "an unknown DLACCEL_CPU_CACHE_IDLE value is named once, and the default applies" \
    "dlaccel[warn]: cpu: DLACCEL_CPU_CACHE_IDLE=soon is not a number of seconds (>= 0) or off; ignored, the default applies (10)"

run DLACCEL_PLAN=off DLACCEL_CPU_CONV=im2col DLACCEL_CPU_CACHE_IDLE=2.5 DLACCEL_CPU_VMATH=off \
    DLACCEL_SHARE_CORES=off DLACCEL_OVERLAP=off DLACCEL_BUCKET_MIB=0.5
n=$((n + 1))
if [ "$status" -eq 0 ] && ! grep -q "not one of its values" "$tmp/out"; then
    echo "ok $n - accepted values say nothing"
else
    sed 's/^/#   /' "$tmp/out"; echo "not ok $n - accepted values say nothing"
fi

if [ $opencl = yes ]; then
    run DLACCEL_PLUGIN_PATH="$DLA_TEST_BUILDDIR/plugins/opencl:$DLACCEL_PLUGIN_PATH" \
        DLACCEL_DEVICE=opencl DLACCEL_OPENCL_GEMM=mine DLACCEL_OPENCL_FUSED=always \
        DLACCEL_OPENCL_FUSED_REDUCE=rows
    verdict "unknown DLACCEL_OPENCL_* values are named once with the accepted ones" \
        "dlaccel[warn]: opencl: DLACCEL_OPENCL_GEMM=mine is not one of its values (own, clblast)" \
        "dlaccel[warn]: opencl: DLACCEL_OPENCL_FUSED=always is not one of its values (interpret, compile)" \
        "dlaccel[warn]: opencl: DLACCEL_OPENCL_FUSED_REDUCE=rows is not one of its values (runs, lanes)"
else
    n=$((n + 1)); echo "ok $n # SKIP no OpenCL device"
fi

# Before the clamp this died with SIGSEGV inside libgomp's team start.
run OMP_NUM_THREADS=100000
verdict "OMP_NUM_THREADS=100000 is clamped with a warning, not a crash" \
    "cpu: OMP_NUM_THREADS asks for 100000 threads; using "

OMP_NUM_THREADS=100000 "$tool" devices >"$tmp/out" 2>&1
n=$((n + 1))
if grep -q "threads=100000" "$tmp/out" || ! grep -q "threads=" "$tmp/out"; then
    sed 's/^/#   /' "$tmp/out"; echo "not ok $n - dlaccel devices shows the clamped thread count"
else
    echo "ok $n - dlaccel devices shows the clamped thread count"
fi

# How OpenMP's idle threads wait (core/omp_defaults.c): a short spin by
# default, set before the cpu plugin loads the runtime; the user's own
# settings win; nothing can be set once the program loaded OpenMP itself.
run
verdict "by default the library sets a short OpenMP spin before loading the cpu plugin" \
    "probe: openmp wait: dlaccel's (GOMP_SPINCOUNT=1000, the default)" "probe: GOMP_SPINCOUNT=1000"

run OMP_WAIT_POLICY=passive
verdict "OMP_WAIT_POLICY set by the user is left alone" \
    "probe: openmp wait: the user's (OMP_WAIT_POLICY=passive, GOMP_SPINCOUNT=unset)" \
    "probe: GOMP_SPINCOUNT=(unset)"

run GOMP_SPINCOUNT=77
verdict "GOMP_SPINCOUNT set by the user is left alone" \
    "probe: openmp wait: the user's (OMP_WAIT_POLICY=unset, GOMP_SPINCOUNT=77)" "probe: GOMP_SPINCOUNT=77"

run DLACCEL_OMP_SPIN=off
verdict "DLACCEL_OMP_SPIN=off keeps the runtime's own wait" \
    "probe: openmp wait: the OpenMP runtime's own (DLACCEL_OMP_SPIN=off)" "probe: GOMP_SPINCOUNT=(unset)"

run DLACCEL_OMP_SPIN=lots
verdict "a DLACCEL_OMP_SPIN that is no count is named, and the default applies" \
    "DLACCEL_OMP_SPIN='lots' is neither a count of spin rounds (0 or more) nor 'off'; using 1000" \
    "probe: GOMP_SPINCOUNT=1000"

run
verdict "a parameter update's plan keeps two results from one fused launch (fused_multi)" \
    "probe: fused launches keeping several results: 1"

run DLACCEL_PLAN=single-result
verdict "DLACCEL_PLAN=single-result plans it as before fused_multi" \
    "probe: fused launches keeping several results: 0"

run
verdict "a convolution's bias moves into the chain that alone reads its result" \
    "probe: convolutions adding their own bias: 0"

run DLACCEL_PLAN=conv-bias-in
verdict "DLACCEL_PLAN=conv-bias-in leaves the bias in its convolution" \
    "probe: convolutions adding their own bias: 1"

run
verdict "an elementwise result takes the memory of the input it reads last" \
    "probe: arena 262144 bytes for 2 intermediates of 524288 bytes"

run DLACCEL_PLAN=no-in-place
verdict "DLACCEL_PLAN=no-in-place gives each intermediate memory of its own" \
    "probe: arena 524288 bytes for 2 intermediates of 524288 bytes"

run
verdict "a convolution runs the fused launch after it as its epilogue" \
    "probe: convolutions running their epilogue: 1"

run DLACCEL_PLAN=no-epilogue
verdict "DLACCEL_PLAN=no-epilogue keeps the convolution and its fused launch apart" \
    "probe: convolutions running their epilogue: 0"

# DLACCEL_PLAN_PROFILE (core/plan_exec.c): the probe's function is called
# three times, so its plan (made on the second call) runs once.
run
verdict "a plan is not profiled by default" \
    "probe: plan runs timed step by step: -1"

run DLACCEL_PLAN_PROFILE=1
verdict "DLACCEL_PLAN_PROFILE=1 times the plan's runs step by step" \
    "probe: plan runs timed step by step: 1"

run DLACCEL_PLAN_PROFILE=sometimes
verdict "an unknown DLACCEL_PLAN_PROFILE value is named once, and the default (off) applies" \
    "dlaccel[warn]: DLACCEL_PLAN_PROFILE=sometimes is not one of its values (off, 0, no, on, 1, yes)" \
    "probe: plan runs timed step by step: -1"

# Which kernels OpenBLAS runs (core/blas_defaults.c): the library sets
# OPENBLAS_CORETYPE from the CPU's instruction set before the cpu plugin
# loads OpenBLAS (which otherwise picks them by model number, and falls
# back to SSE3 kernels on a model newer than itself); the user's own
# setting and DLACCEL_OPENBLAS_CORE=off win; a program that loaded
# OpenBLAS itself is told, and warned when its kernels are below the CPU.
flags=$(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null)
has() { case " $flags " in *" $1 "*) return 0 ;; esac; return 1; }
if has avx512f && has avx512cd && has avx512bw && has avx512dq && has avx512vl; then
    fit=SkylakeX isa="AVX-512"
elif has avx2 && has fma; then
    fit=Haswell isa="AVX2 and FMA"
else
    fit= isa=
fi
run
if [ -n "$fit" ]; then
    verdict "by default OpenBLAS runs the kernels of the CPU's instruction set ($fit)" \
        "probe: openblas core: dlaccel's (OPENBLAS_CORETYPE=$fit, from the CPU's $isa)" \
        "probe: OPENBLAS_CORETYPE=$fit" "blas=OpenBLAS" "($fit); threads="
else
    verdict "without AVX2 OpenBLAS chooses its kernels itself" \
        "probe: openblas core: OpenBLAS's own detection (the CPU has neither AVX-512 nor AVX2" \
        "probe: OPENBLAS_CORETYPE=(unset)"
fi

run OPENBLAS_CORETYPE=Nehalem
verdict "OPENBLAS_CORETYPE set by the user is left alone" \
    "probe: openblas core: the user's (OPENBLAS_CORETYPE=Nehalem)" "probe: OPENBLAS_CORETYPE=Nehalem" \
    "(Nehalem); threads="

run DLACCEL_OPENBLAS_CORE=off
verdict "DLACCEL_OPENBLAS_CORE=off leaves OpenBLAS's own detection" \
    "probe: openblas core: OpenBLAS's own detection (DLACCEL_OPENBLAS_CORE=off)" \
    "probe: OPENBLAS_CORETYPE=(unset)"

default_core="OpenBLAS's own detection"
[ -n "$fit" ] && default_core="dlaccel's"
run DLACCEL_OPENBLAS_CORE=sometimes
verdict "a DLACCEL_OPENBLAS_CORE that is neither auto nor off is named, and the default applies" \
    "dlaccel[warn]: DLACCEL_OPENBLAS_CORE=sometimes is not one of its values (auto, off)" \
    "probe: openblas core: $default_core"

probe="$DLA_TEST_BUILDDIR/tests/env_probe_openblas"
run DLACCEL_LOG=info
verdict "a program that links OpenBLAS itself is told the library could not choose its kernels" \
    "OpenBLAS kernels: OpenBLAS's own detection: it was loaded before dlaccel's first plugin" \
    "probe: OPENBLAS_CORETYPE=(unset)"
# Warned when OpenBLAS's own choice is below the CPU's instruction set
# (a model it does not know), not otherwise.
have=$(sed -n 's/^probe: the program.s OpenBLAS kernels: //p' "$tmp/out")
below=no
case "$have" in
Prescott | Katmai | Coppermine | Northwood | Banias | Core2 | Penryn | Dunnington | Nehalem | \
    Sandybridge | Atom | Nano | Athlon | Opteron | Opteron_SSE3 | Barcelona | Bobcat | Bulldozer | \
    Piledriver | Steamroller | Excavator) [ -n "$fit" ] && below=yes ;;
Haswell | Zen) [ "$fit" = SkylakeX ] && below=yes ;;
esac
warned=$(grep -c "dlaccel\[warn\]: cpu: OpenBLAS runs its $have kernels on a CPU with" "$tmp/out")
n=$((n + 1))
if { [ $below = yes ] && [ "$warned" -eq 1 ]; } || { [ $below = no ] && [ "$warned" -eq 0 ]; }; then
    echo "ok $n - its OpenBLAS kernels ($have; the CPU's: ${fit:-none}) are warned of only when below the CPU"
else
    sed 's/^/#   /' "$tmp/out"
    echo "not ok $n - its OpenBLAS kernels ($have; the CPU's: ${fit:-none}) are warned of only when below the CPU"
fi
if [ -n "$fit" ]; then
    run DLACCEL_LOG=info OPENBLAS_CORETYPE=Nehalem
    verdict "kernels below the CPU that the user asked for are said at info" \
        "dlaccel[info]: cpu: OpenBLAS runs its Nehalem kernels on a CPU with $isa, where its $fit kernels are several times faster (as OPENBLAS_CORETYPE or DLACCEL_OPENBLAS_CORE=off asked)"
else
    n=$((n + 1)); echo "ok $n # SKIP the CPU has neither AVX-512 nor AVX2"
fi

probe="$DLA_TEST_BUILDDIR/tests/env_probe_openmp"
run DLACCEL_LOG=info
verdict "a program that links OpenMP itself is told the library could not choose" \
    "OpenMP wait policy: the OpenMP runtime's own: it was loaded before dlaccel's first plugin" \
    "probe: GOMP_SPINCOUNT=(unset)"

# Every variable the code checks against a fixed set of values (the
# dla__env_choice calls) is in docs/environment.md's list of them, which
# lacked DLACCEL_COMM, DLACCEL_OPENBLAS_CORE and DLACCEL_CUDA_FUSED_COMPILE.
src="${srcdir:-.}"
n=$((n + 1))
vars=$(cat "$src"/core/*.c "$src"/core/*.h "$src"/nn/*.c "$src"/plugins/*/*.c 2>/dev/null |
    sed -n 's/.*dla__env_choice("\(DLACCEL_[A-Z0-9_]*\)".*/\1/p' | sort -u)
listed=$(sed -n '/^## Values outside the set/,/^## /p' "$src/docs/environment.md" | tr -s ' \n' '  ')
missing=
for v in $vars; do
    case "$listed" in *"\`$v\`"*) ;; *) missing="$missing $v" ;; esac
done
if [ "$(echo $vars | wc -w)" -ge 10 ] && [ -z "$missing" ]; then
    echo "ok $n - docs/environment.md lists the $(echo $vars | wc -w) variables checked against a set of values"
else
    echo "not ok $n - docs/environment.md's 'Values outside the set' lacks:$missing (found: $(echo $vars))"
fi

# Every variable the sources read is named in docs/environment.md: the
# names given to getenv and secure_getenv, and every "DLACCEL_..." string
# (the cuda plugin's env_flag, the collectives' env_seconds and the like
# take the name as an argument). The page lacked DLA_EXAMPLE_SMALL,
# DLACCEL_BENCH_SLICE_FULL, DLACCEL_BENCH_REEXEC and COLUMNS. HOME is
# the system's own (the breadcrumb's ~/.cache).
n=$((n + 1))
read_vars=$( (cat "$src"/core/*.c "$src"/core/*.h "$src"/nn/*.c "$src"/plugins/*/*.c \
        "$src"/plugins/*/*.h "$src"/tools/*.c "$src"/bench/*.c "$src"/examples/*.c \
        "$src"/examples/*.h 2>/dev/null |
        sed -n 's/.*getenv("\([A-Z_][A-Z0-9_]*\)").*/\1/p'
    cat "$src"/core/*.c "$src"/core/*.h "$src"/nn/*.c "$src"/plugins/*/*.c "$src"/plugins/*/*.h \
        "$src"/plugins/*/*.cu "$src"/tools/*.c "$src"/bench/*.c "$src"/examples/*.c 2>/dev/null |
        grep -o '"DLACCEL_[A-Z0-9_]*"' | tr -d '"') | sort -u | grep -vx 'HOME')
documented=$(tr -s ' \n' '  ' <"$src/docs/environment.md")
missing=
for v in $read_vars; do
    case "$documented" in *"\`$v\`"* | *"\`$v="*) ;; *) missing="$missing $v" ;; esac
done
if [ "$(echo $read_vars | wc -w)" -ge 30 ] && [ -z "$missing" ]; then
    echo "ok $n - docs/environment.md names the $(echo $read_vars | wc -w) variables the sources read"
else
    echo "not ok $n - docs/environment.md does not name:$missing"
fi
