#!/bin/bash
# tools/gpu_run.sh - the cuda plugin's checks and figures on a GPU machine,
# from the bundle tools/gpu_pack.sh made (.gpu/bundle.tar.xz). Logs go to
# $OUT (default /tmp/dla-out); a summary table is printed last.
#
#   bash tools/gpu_run.sh STEP...     (in the order given; default: all)
#
#   check   dlaccel devices, dlaccel check-plugin on cuda:0 (every kernel
#           against the cpu plugin), with graphs and NVRTC both on
#   suites  the tensor, autodiff, accelerate, training and layer suites
#           with DLACCEL_DEVICE=cuda
#   bench   dlaccel-bench on cuda:0: digit CNN train step replayed (batch
#           128 and 1024), inference, the tiny MLP replayed
#   torch128   ../shared/peers/cnn_cuda.py, batch 128, eager and
#              torch.compile with CUDA graphs (reduce-overhead), the MLP too
#   torch1024  the same at batch 1024, torch.compile (default mode)
#   train      the main job: cnn_fmnist 3 epochs on cuda, same seed as
#              the cpu run it is compared with
#   traincpu   the same on the cpu device
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-/tmp/dla-out}
mkdir -p "$out"
w=/tmp/dla-gpu
rm -rf "$w" && mkdir -p "$w"
tar -xJf "$root/.gpu/bundle.tar.xz" -C "$w" || exit 1
s=$w/stage
steps="$*"
[ -z "$steps" ] && steps="check bench torch128 train suites torch1024 traincpu"

# The toolkit's libraries (cuBLAS, cuDNN, NVRTC) wherever this machine has
# them: the toolkit, or the wheels of its PyTorch.
libdirs=
for name in libcublas.so.13 libcudnn.so.9 libnvrtc.so.13 libcublasLt.so.13; do
    f=$(find /usr/local/cuda/ /usr/local/cuda*/ /opt /usr/lib -name "$name" 2>/dev/null | head -1)
    [ -n "$f" ] && libdirs="$libdirs:$(dirname "$f")"
done
export LD_LIBRARY_PATH="$s/lib$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
mkdir -p "$s/plugins.d"
for p in cpu cuda; do
    sed "s|@LIBRARY_PATH@|$s/lib/libdlaccel-$p.so|" "$s/manifests/$p.json.in" >"$s/plugins.d/$p.json"
done
export DLACCEL_PLUGIN_PATH=$s/plugins.d
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-8}
export CMOCKA_MESSAGE_OUTPUT=TAP
summary=$out/summary.txt
: >"$summary"
line() { echo "$*" | tee -a "$summary"; }

{
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm --format=csv
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    DLACCEL_LOG=info "$s/bin/dlaccel" devices
} >"$out/devices.log" 2>&1
cat "$out/devices.log"


step_check() {
    local start rc
    start=$(date +%s)
    timeout 90 "$s/bin/dlaccel" check-plugin "$s/plugins.d/cuda.json" >"$out/check.log" 2>&1
    rc=$?
    line "check-plugin cuda: exit $rc, $(($(date +%s) - start)) s; failing lines: $(grep -ci 'fail' "$out/check.log")"
    grep -iE 'fail|cases|rerun' "$out/check.log" | head -40
}

step_suites() {
    local t rc
    for t in test_tensor test_autodiff test_accel test_train test_conv test_nnops_norm test_plan \
        test_fused_kernels test_loss test_nnops_pool test_nnops_fc test_net test_optim; do
        [ -x "$s/bin/$t" ] || continue
        DLA_TEST_BUILDDIR=$s DLACCEL_DEVICE=cuda timeout 25 "$s/bin/$t" >"$out/suite_$t.log" 2>&1
        rc=$?
        line "suite $t (DLACCEL_DEVICE=cuda): exit $rc, ok $(grep -c '^ok' "$out/suite_$t.log"), not ok $(grep -c '^not ok' "$out/suite_$t.log")"
        grep -A4 '^not ok' "$out/suite_$t.log" | head -10
    done
}

step_bench() {
    timeout 90 "$s/bin/dlaccel-bench" --device cuda:0 --workload replay >"$out/bench_replay.log" 2>&1
    timeout 40 "$s/bin/dlaccel-bench" --device cuda:0 --workload cnn_inference >"$out/bench_infer.log" 2>&1
    cat "$out/bench_replay.log" "$out/bench_infer.log" | grep -E '^(device|cuda)|ratio|note|plan' | tee -a "$summary"
}

torch_run() { # NAME ARGS...
    local name=$1
    shift
    PYTHONUNBUFFERED=1 timeout 170 python3 "$s/peers/cnn_cuda.py" "$@" >"$out/$name.json" 2>"$out/$name.err"
    line "torch $name ($*): exit $?"
    tr -d '\n ' <"$out/$name.json" | tee -a "$summary"
    echo | tee -a "$summary"
}

step_train() { # DEVICE
    local start
    start=$(date +%s)
    DLACCEL_DEVICE=$1 timeout 120 "$s/bin/cnn_fmnist" --data "$s/data" --epochs 3 --seed 1 \
        >"$out/train_$1.log" 2>&1
    line "main job on $1: exit $?, $(($(date +%s) - start)) s: $(tr '\r' '\n' <"$out/train_$1.log" | grep -iE 'accuracy|HitRate|epoch|device' | grep -v '%|' | tail -8 | tr '\n' ' ' | cut -c1-400)"
}

for step in $steps; do
    case $step in
    check) step_check ;;
    suites) step_suites ;;
    bench) step_bench ;;
    torch128) torch_run torch128 --batches 128 --modes eager,reduce-overhead --rounds 5 --iters 30 ;;
    torch1024) torch_run torch1024 --batches 1024 --modes default --rounds 5 --iters 20 ;;
    train) step_train cuda ;;
    traincpu) step_train cpu ;;
    *) echo "gpu_run: unknown step $step" ;;
    esac
done
echo "==== summary"
cat "$summary"
