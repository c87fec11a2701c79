#!/bin/bash
# tools/gpu_run.sh - the cuda plugin's checks and figures on a GPU machine,
# from the bundle tools/gpu_pack.sh made (.gpu/bundle.tar.xz). Logs go to
# $OUT (default /tmp/dla-out); a summary table is printed last.
#
#   bash tools/gpu_run.sh [check] [suites] [bench] [torch] [train] [all]
#
#   check   dlaccel devices, dlaccel check-plugin on cuda:0 (every kernel
#           against the cpu plugin), with graphs and NVRTC both on
#   suites  the tensor, autodiff, accelerate, training and layer suites
#           with DLACCEL_DEVICE=cuda
#   bench   dlaccel-bench on cuda:0: digit CNN train step replayed (batch
#           128 and 1024), inference, the tiny MLP replayed
#   torch   ../shared/peers/cnn_cuda.py (PyTorch eager, torch.compile,
#           CUDA graphs) in the same call
#   train   the main job: cnn_fmnist 3 epochs on cuda, then on cpu, same seed
set -u
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${OUT:-/tmp/dla-out}
mkdir -p "$out"
w=/tmp/dla-gpu
rm -rf "$w" && mkdir -p "$w"
tar -xJf "$root/.gpu/bundle.tar.xz" -C "$w" || exit 1
s=$w/stage
steps="$*"
[ -z "$steps" ] && steps=all
want() { case " $steps " in *" $1 "* | *" all "*) return 0 ;; esac; return 1; }

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

if want check; then
    start=$(date +%s)
    timeout 300 "$s/bin/dlaccel" check-plugin "$s/plugins.d/cuda.json" >"$out/check.log" 2>&1
    rc=$?
    line "check-plugin cuda: exit $rc, $(($(date +%s) - start)) s; failing: $(grep -c 'FAIL\|^not ok' "$out/check.log")"
    grep -E '^(ok|not ok|FAIL|  )|kernel|fail' "$out/check.log" | head -60
fi

if want suites; then
    for t in test_tensor test_autodiff test_accel test_train test_conv test_loss test_nnops_act \
        test_nnops_fc test_nnops_norm test_nnops_pool test_net test_net_grad test_optim test_plan \
        test_fused_kernels test_shape test_data; do
        [ -x "$s/bin/$t" ] || continue
        DLA_TEST_BUILDDIR=$s DLACCEL_DEVICE=cuda timeout 180 "$s/bin/$t" >"$out/suite_$t.log" 2>&1
        rc=$?
        line "suite $t (DLACCEL_DEVICE=cuda): exit $rc, ok $(grep -c '^ok' "$out/suite_$t.log"), not ok $(grep -c '^not ok' "$out/suite_$t.log")"
        grep -A3 '^not ok' "$out/suite_$t.log" | head -12
    done
fi

if want bench; then
    timeout 240 "$s/bin/dlaccel-bench" --device cuda:0 --workload replay >"$out/bench_replay.log" 2>&1
    timeout 120 "$s/bin/dlaccel-bench" --device cuda:0 --workload cnn_inference >"$out/bench_infer.log" 2>&1
    cat "$out/bench_replay.log" "$out/bench_infer.log" | grep -E '^(device|cuda)' | tee -a "$summary"
fi

if want torch; then
    PYTHONUNBUFFERED=1 timeout 300 python3 "$s/peers/cnn_cuda.py" >"$out/torch.json" 2>"$out/torch.err"
    line "torch cnn_cuda.py: exit $?"
    tail -c 3000 "$out/torch.json" | tee -a "$summary"
fi

if want train; then
    for dev in cuda cpu; do
        start=$(date +%s)
        DLACCEL_DEVICE=$dev timeout 400 "$s/bin/cnn_fmnist" --data "$s/data" --epochs 3 --seed 1 \
            >"$out/train_$dev.log" 2>&1
        line "main job on $dev: exit $?, $(($(date +%s) - start)) s: $(grep -iE 'accuracy|HitRate|per epoch' "$out/train_$dev.log" | tr '\n' ' ' | cut -c1-300)"
    done
fi
echo "==== summary"
cat "$summary"
