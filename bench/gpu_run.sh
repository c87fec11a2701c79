#!/bin/bash
# bench/gpu_run.sh - the cuda plugin's checks and figures on a GPU machine,
# from the bundle bench/gpu_pack.sh made (.gpu/bundle.tar.xz). Logs go to
# $OUT (default /tmp/dla-out); a summary table is printed last.
#
#   bash bench/gpu_run.sh STEP...     (in the order given; default: all)
#
#   check   dlaccel devices, dlaccel check-plugin on cuda:0 (every kernel
#           against the cpu plugin), with graphs and NVRTC both on
#   suites  the tensor, autodiff, accelerate, training and layer suites
#           with DLACCEL_DEVICE=cuda, and test_plan's random graphs there
#   bench   dlaccel-bench on cuda:0, the replay workloads: the digit CNN's
#           train step (loss and gradients; and with its update inside)
#           and inference at batch 128 and 1024, the tiny MLP
#   torch128   ../shared/peers/cnn_cuda.py, batch 128, eager, and the
#              tiny MLP eager
#   benchtf32  the CNN replays (step and inference, batch 128 and 1024)
#              with DLACCEL_CUDA_TF32=1 and without, alternating, 30 calls
#              to a sync, 2 rounds (PyTorch's convolutions run on TF32 by
#              default)
#   torchgraph bench/torch_cuda_graph.py: PyTorch's training step captured
#              whole as a CUDA graph (torch.cuda.graph), inference as a
#              graph and with torch.compile reduce-overhead, the MLP
#   benchplain   the replays with DLACCEL_CUDA_GRAPHS=0 (plain launches)
#   benchpipe  the replays timed 30 calls to a sync (--pipeline 30), as
#              PyTorch's references are
#   graphlog   what the CUDA graphs cost and how often they ran: the debug
#              log of the replay workloads and of test_accel
#   profile    the GPU time of each kernel member in the digit CNN's step
#              (DLACCEL_CUDA_PROFILE=1)
#   suitesplain  test_accel and test_train with DLACCEL_CUDA_GRAPHS=0
#   suitescpu  test_train and test_accel with cpu the default device
#              (their "gpu" and other-device cases then take cuda)
#   torch1024  the same at batch 1024, torch.compile (default mode)
#   train      the main job: cnn_fmnist 3 epochs on cuda, same seed as
#              the cpu run it is compared with
#   traincpu   the same on the cpu device
#   higher     second derivatives: examples/pinn on cuda (its error, replay
#              against eager; and with --lbfgs), dlaccel-bench's pinn workloads on cuda:0 and
#              bench/torch_pinn.py on the GPU, the same step in PyTorch
#   ode        examples/neural_ode on cuda (300 iterations, direct and
#              adjoint), dlaccel-bench's ode workloads on cuda:0, and
#              bench/torch_neural_ode.py on the GPU when the carried
#              torchdiffeq imports there
#   floor      bench/cuda_launch_floor.cu (an empty kernel, one with 2 KiB of
#              parameters, a one-node graph, 30 launches to a sync) beside
#              the tiny MLP's replay, alternating, 3 rounds: the machine's
#              own floor under the MLP's target
#   seeds      the main job on cuda and on cpu for seeds 1 2 3
#              (DLA_SEEDS): each seed's two accuracies and their
#              difference
#   variants   the fused kernel's variants side by side (checked first)
#   ncu        Nsight Compute on the step's kernels at batch 1024
#              (DLA_NCU_WORKLOAD, DLA_NCU_SKIP, DLA_NCU_COUNT: another)
#   nccl       the collectives on the GPU's own transport (NCCL): a world
#              of one forced onto them (DLACCEL_DEVICE_COLLECTIVES=force),
#              tests/test_spmd's cases on cuda tensors; with mpirun, 2
#              ranks as well
#   torchprof  bench/torch_cuda_profile.py: PyTorch's kernels in the digit
#              CNN's inference and train step at batch 128 (torch.profiler;
#              cuDNN TF32 on and off), and the cuDNN algorithms this
#              plugin measured and chose for the same convolutions
#   engines    the convolutions through cuDNN's graph API engines: the
#              conv kernels of check-plugin (every engine taken checked
#              against the cpu plugin), which engine each CNN shape took,
#              and the CNN replays with and without them, alternating
#   nsys       Nsight Systems on the replays with graphs on (each graph's
#              kernels traced as nodes): the GPU time a replay of the
#              digit CNN's inference and step at batch 128 and of the MLP
#              spends in each kernel and copy (DLA_NSYS_WORKLOADS)
#   samecheck  the main job with the new fused kernels and the old: the
#              same losses
#   multi      ABI 1.8's fused_multi: check-plugin on its interpreted,
#              compiled and 64-bit paths, the replays' graph node counts,
#              and the replays with it and without
#              (DLACCEL_PLAN=single-result), alternating
#   async      plan_end returning with the replay queued (the default)
#              against waiting for it (DLACCEL_CUDA_PLAN_WAIT=1): the
#              replays step by step and 30 calls to a sync, alternating,
#              and test_accel and test_train on each; and the MLP's replay
#              on graphwrap (the cpu plugin serving whole replays): what
#              the core itself costs a replay on this machine's CPU
#   layout     the compiled elementwise programs with their operands'
#              layout as constants and fused_reduce's block kernel on rows
#              with four loads in flight (the defaults), against each off
#              (DLACCEL_CUDA_FUSED_LAYOUT=0, DLACCEL_CUDA_FR_ROWS=0) and
#              both: check-plugin's fused kernels (the defaults), then the CNN
#              replays 30 calls to a sync, alternating, 3 rounds
#   segments   runs of small launches as one graph node (segment.c) and
#              the convolutions' bias moved into the chain after them
#              (the core's plans), each against the default
#              (DLACCEL_CUDA_SEGMENTS=1, off by default since the H100
#              measured it slower; DLACCEL_PLAN=conv-bias-in, on the
#              inference replays only: the training plans keep every
#              bias): test_accel with the graphs asserted, the capture
#              lines of the debug log (nodes before and after), then the
#              CNN replays 30 calls to a sync, alternating, 3 rounds
#   k1         the interpreted one kernel (plugins/cuda/onekern_kernels.cu;
#              DLACCEL_CUDA_K1_COMPILE=0 throughout):
#              check-plugin on gemm, reduce, fused_multi; test_accel and
#              test_train, plain and with all three variants below; the
#              small replays (MLP and cross-entropy) plain, launched early
#              (DLACCEL_CUDA_K1_PDL=1), with the data in shared memory
#              (DLACCEL_CUDA_K1_SHARED=1), with independent steps joined
#              (DLACCEL_CUDA_K1_JOIN=1) and with all three, alternating,
#              3 rounds; the one kernel's phases, GPU cycles each, every
#              way (DLACCEL_CUDA_K1_PROFILE=1, its info lines); the CNN
#              replays at batch 128 once
#   k1c        the one kernel compiled for its plan (DLACCEL_CUDA_K1_COMPILE=1)
#              against the interpreted one, plain and launched early: the
#              suites compiled, which plans compiled (debug log), the MLP and
#              cross-entropy replays alternating, 3 rounds, and the phases
#              of each (DLACCEL_CUDA_K1_PROFILE=1)
#   onekern    small plans as one kernel (plugins/cuda/onekern.c):
#              check-plugin on the kernels it takes steps of, which
#              replays became one kernel (debug log), the suites with
#              their replays checked against eager, and the replays
#              with it and without (DLACCEL_CUDA_ONE_KERNEL=0), alternating
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
if [ -f "$s/manifests/graphwrap.json.in" ]; then
    mkdir -p "$s/graphwrap.d"
    sed "s|@LIBRARY_PATH@|$s/lib/libdlaccel-graphwrap.so|" "$s/manifests/graphwrap.json.in" \
        >"$s/graphwrap.d/graphwrap.json"
fi
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
    echo "NCCL: $(find / -name 'libnccl.so*' -not -path '/proc/*' 2>/dev/null | head -3 | tr '\n' ' ')"
    python3 -c 'import torch; print("torch", torch.__version__, "nccl", torch.cuda.nccl.version())' 2>&1 | tail -1
    command -v nsys ncu
} >"$out/devices.log" 2>&1
cat "$out/devices.log"


step_check() {
    local start rc
    start=$(date +%s)
    timeout 90 "$s/bin/dlaccel" check-plugin --cases 50 "$s/plugins.d/cuda.json" >"$out/check.log" 2>&1
    rc=$?
    line "check-plugin cuda (50 cases a kernel): exit $rc, $(($(date +%s) - start)) s; failing lines: $(grep -ci 'fail' "$out/check.log")"
    grep -iE 'fail|cases|rerun' "$out/check.log" | head -40
    # The fused kernels compiled with NVRTC on first sight, and the
    # interpreter alone.
    for mode in first 0; do
        for k in fused fused_reduce fused_reduce_pair; do
            DLACCEL_CUDA_FUSED_COMPILE=$mode timeout 60 "$s/bin/dlaccel" check-plugin --kernel $k \
                --cases 50 --seed 7 "$s/plugins.d/cuda.json" >"$out/check_$k.$mode.log" 2>&1
            line "check-plugin cuda --kernel $k (DLACCEL_CUDA_FUSED_COMPILE=$mode): exit $?: $(grep -E '^cuda' "$out/check_$k.$mode.log" | tr -s ' ' | cut -c1-120)"
        done
    done
}

# The suites whose tests pick "gpu" themselves, with cpu the default:
# ExecutionEnvironment "gpu" and a trace replayed on another device.
step_suites_cpu() {
    local t rc
    for t in test_train test_accel; do
        DLA_TEST_BUILDDIR=$s DLACCEL_DEVICE=cpu timeout 40 "$s/bin/$t" >"$out/suitecpu_$t.log" 2>&1
        rc=$?
        line "suite $t (DLACCEL_DEVICE=cpu, cuda loaded): exit $rc, ok $(grep -c '^ok' "$out/suitecpu_$t.log"), not ok $(grep -c '^not ok' "$out/suitecpu_$t.log")"
        grep -A4 '^not ok' "$out/suitecpu_$t.log" | head -10
    done
}

# float32 GEMM and convolutions on TF32 tensor cores, as PyTorch's default
# convolutions are (torch.backends.cudnn.allow_tf32).
step_bench_tf32() {
    cnn_rounds benchtf32 2 "fp32 X=1" "tf32 DLACCEL_CUDA_TF32=1"
}

# The replays as plain launches (DLACCEL_CUDA_GRAPHS=0), beside the
# default (recurring replays as CUDA graphs) above.
step_bench_plain() {
    DLACCEL_CUDA_GRAPHS=0 timeout 90 "$s/bin/dlaccel-bench" --device cuda:0 --workload replay \
        >"$out/bench_plain.log" 2>&1
    grep -E '^(device|cuda)' "$out/bench_plain.log" | sed 's/^/plain /' | tee -a "$summary"
}

# The replays timed as PyTorch's references time theirs: 30 calls and
# one sync a sample (--pipeline 30), beside the default step-by-step.
step_bench_pipe() {
    timeout 90 "$s/bin/dlaccel-bench" --device cuda:0 --workload replay --pipeline 30 \
        >"$out/bench_pipe.log" 2>&1
    grep -E '^(device|cuda)' "$out/bench_pipe.log" | sed 's/^/pipeline30 /' | tee -a "$summary"
}

step_suites_plain() {
    local t
    for t in test_accel test_train; do
        DLA_TEST_BUILDDIR=$s DLACCEL_DEVICE=cuda DLACCEL_CUDA_GRAPHS=0 timeout 40 "$s/bin/$t" \
            >"$out/suiteplain_$t.log" 2>&1
        line "suite $t (DLACCEL_DEVICE=cuda DLACCEL_CUDA_GRAPHS=0): exit $?, ok $(grep -c '^ok' "$out/suiteplain_$t.log"), not ok $(grep -c '^not ok' "$out/suiteplain_$t.log")"
    done
}

step_graphlog() {
    DLACCEL_LOG=debug timeout 60 "$s/bin/dlaccel-bench" --device cuda:0 --workload replay --reps 100 \
        >"$out/graphlog_bench.log" 2>&1
    DLA_TEST_BUILDDIR=$s DLACCEL_DEVICE=cuda DLACCEL_LOG=debug timeout 40 "$s/bin/test_accel" \
        >"$out/graphlog_accel.log" 2>&1
    grep -hE 'graph|offered whole|^cuda:0 ' "$out/graphlog_bench.log" "$out/graphlog_accel.log" |
        sort | uniq -c | sort -rn | head -40 | tee -a "$summary"
}

# The GPU time of each kernel member (DLACCEL_CUDA_PROFILE=1) in the
# digit CNN's train step at batch 128 and 1024 and its inference.
step_profile() {
    local w
    for w in =cnn_step_replay_b1024 =cnn_step_replay =cnn_inference_replay; do
        DLACCEL_CUDA_PROFILE=1 DLACCEL_LOG=info timeout 60 "$s/bin/dlaccel-bench" --device cuda:0 \
            --workload "$w" --reps 50 >"$out/profile_${w#=}.log" 2>&1
        grep -E "cuda profile" "$out/profile_${w#=}.log" | sed "s/^/${w#=} /" | tee -a "$summary"
    done
}

step_suites() {
    local t rc
    # test_plan as a whole is left out: it asks for the plans of cpu:0 by
    # name (its random graphs run below).
    for t in test_tensor test_autodiff test_accel test_train test_conv test_nnops_norm \
        test_fused_kernels test_loss test_nnops_pool test_nnops_fc test_net test_optim \
        test_higher test_net_grad test_net_layers test_null_args test_derivatives \
        test_attention test_ode45 test_resize test_lbfgs; do
        [ -x "$s/bin/$t" ] || continue
        DLA_TEST_BUILDDIR=$s DLACCEL_DEVICE=cuda DLA_TEST_EXPECT_DEVICE_RUNS=1 timeout 25 "$s/bin/$t" \
            >"$out/suite_$t.log" 2>&1
        rc=$?
        line "suite $t (DLACCEL_DEVICE=cuda): exit $rc, ok $(grep -c '^ok' "$out/suite_$t.log"), not ok $(grep -c '^not ok' "$out/suite_$t.log")"
        grep -A4 '^not ok' "$out/suite_$t.log" | head -10
    done
    # test_plan's random graphs, which plan on the default device: each
    # planned replay on cuda (graphs, one kernel) against eager there, bit
    # for bit, with each graph's last runs the device's own. Longer: many
    # distinct fused programs, each compiled by NVRTC when it recurs.
    [ -x "$s/bin/test_plan" ] || return 0
    DLA_TEST_BUILDDIR=$s DLACCEL_DEVICE=cuda DLA_TEST_EXPECT_DEVICE_RUNS=1 \
        DLA_TEST_FILTER='*graphs_*plan_to_eager_bits' timeout 240 "$s/bin/test_plan" \
        >"$out/suite_test_plan_graphs.log" 2>&1
    rc=$?
    line "suite test_plan random graphs (DLACCEL_DEVICE=cuda): exit $rc, ok $(grep -c '^ok' "$out/suite_test_plan_graphs.log"), not ok $(grep -c '^not ok' "$out/suite_test_plan_graphs.log")"
    grep -A4 '^not ok' "$out/suite_test_plan_graphs.log" | head -10
}

step_bench() {
    timeout 90 "$s/bin/dlaccel-bench" --device cuda:0 --workload replay >"$out/bench_replay.log" 2>&1
    grep -E '^(device|cuda)|ratio|note|plan' "$out/bench_replay.log" | tee -a "$summary"
}

torch_run() { # NAME ARGS...
    local name=$1
    shift
    PYTHONUNBUFFERED=1 timeout 120 python3 "$s/peers/cnn_cuda.py" "$@" >"$out/$name.json" 2>"$out/$name.err"
    line "torch $name ($*): exit $?"
    tr -d '\n ' <"$out/$name.json" | tee -a "$summary"
    echo | tee -a "$summary"
}

step_train() { # DEVICE [NAME ENV...]
    local start rc dev=$1 name=${2:-$1}
    shift 2 2>/dev/null || shift
    start=$(date +%s)
    env "$@" DLACCEL_DEVICE=$dev timeout 120 "$s/bin/cnn_fmnist" --data "$s/data" --epochs 3 \
        --seed 1 >"$out/train_$name.log" 2>&1
    rc=$?
    line "main job on $dev ($name${*:+, $*}): exit $rc, $(($(date +%s) - start)) s: $(tr '\r' '\n' <"$out/train_$name.log" | grep -iE 'accuracy|HitRate|epoch|device|error|fail' | grep -v '%|' | tail -8 | tr '\n' ' ' | cut -c1-500)"
    # A failure with graphs is retried without them, so the accuracy is
    # still measured (and the failure is in the log).
    if [ $rc -ne 0 ] && [ "$dev" = cuda ] && [ "$name" = cuda ]; then
        tail -5 "$out/train_$name.log" | tee -a "$summary"
        step_train cuda cuda_nographs DLACCEL_CUDA_GRAPHS=0
    fi
}

step_floor() {
    local r
    for r in 1 2 3; do
        line "floor: round $r: $(timeout 60 "$s/bin/cuda_launch_floor" 2>&1 | tail -1)"
        line "floor: round $r: $(timeout 60 "$s/bin/dlaccel-bench" --device cuda:0 \
            --workload =mlp_replay 2>&1 | grep -E '^cuda:0 +mlp_replay')"
    done
}

step_higher() {
    DLACCEL_DEVICE=cuda timeout 120 "$s/bin/pinn" >"$out/higher_pinn.log" 2>&1
    line "higher: examples/pinn on cuda: exit $?: $(grep -iE 'device|error|eager|ms' "$out/higher_pinn.log" | tail -6 | tr '\n' ' ' | cut -c1-400)"
    DLACCEL_DEVICE=cuda timeout 120 "$s/bin/pinn" --lbfgs >"$out/higher_pinn_lbfgs.log" 2>&1
    line "higher: examples/pinn --lbfgs on cuda: exit $?: $(grep -E 'stopped|trained|L-BFGS:' "$out/higher_pinn_lbfgs.log" | tr '\n' ' ' | cut -c1-400)"
    timeout 90 "$s/bin/dlaccel-bench" --device cuda:0 --workload pinn >"$out/higher_bench.log" 2>&1
    grep -E 'pinn|error' "$out/higher_bench.log" | sed 's/^/higher: /' | tee -a "$summary"
    PYTHONUNBUFFERED=1 timeout 120 python3 "$s/peers/torch_pinn.py" --device cuda >"$out/higher_torch.log" 2>&1
    line "higher: torch_pinn.py on cuda: exit $?: $(tail -2 "$out/higher_torch.log" | tr '\n' ' ' | cut -c1-300)"
}

step_ode() {
    local m
    for m in "" --adjoint; do
        DLACCEL_DEVICE=cuda timeout 150 "$s/bin/neural_ode" --iterations 300 $m >"$out/ode_run$m.log" 2>&1
        line "ode: examples/neural_ode $m on cuda: exit $?: $(grep -E 'device|time per|solver|prediction from \[-2' "$out/ode_run$m.log" | tr '\n' ' ' | cut -c1-500)"
    done
    timeout 120 "$s/bin/dlaccel-bench" --device cuda:0 --workload ode >"$out/ode_bench.log" 2>&1
    grep -E 'ode_|error' "$out/ode_bench.log" | sed 's/^/ode: /' | tee -a "$summary"
    for m in "" --adjoint; do
        PYTHONPATH="$s/peers" PYTHONUNBUFFERED=1 timeout 150 python3 "$s/peers/torch_neural_ode.py" \
            --device cuda --iterations 300 $m >"$out/ode_torch$m.log" 2>&1
        line "ode: torch_neural_ode.py $m on cuda: exit $?: $(grep -E 'time per|Error|error' "$out/ode_torch$m.log" | tail -2 | tr '\n' ' ' | cut -c1-300)"
    done
}

# The main job's accuracy on cuda and on this machine's cpu device, seed
# by seed (DLA_SEEDS, default 1 2 3): one seed's final accuracy moves by up
# to half a point with the rounding of any one operation
# (docs/training.md), so the 0.3-point target is read over several seeds
# as well as per seed. Each run has 150 s.
step_seeds() {
    local seed dev acc c g
    for seed in ${DLA_SEEDS:-1 2 3}; do
        for dev in cuda cpu; do
            DLACCEL_DEVICE=$dev timeout 150 "$s/bin/cnn_fmnist" --data "$s/data" --epochs 3 \
                --seed $seed >"$out/seeds_${dev}_$seed.log" 2>&1
            acc=$(grep -E '^test accuracy' "$out/seeds_${dev}_$seed.log" | tail -1 | sed 's/^test accuracy: \([0-9.]*\)%.*/\1/')
            eval "acc_$dev=\${acc:-none}"
        done
        c=$acc_cuda g=$acc_cpu
        line "seeds: seed $seed: cuda $c%, cpu $g%, difference $(awk -v a="$c" -v b="$g" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%+.2f", a - b; else print "n/a" }') points"
    done
}

# The fused kernels' variants side by side (plugins/cuda/fused.c,
# fused_source.c): the default (ops compiled in, 32-bit indexing with
# division by multiply-high), the ops read from the argument, and the old
# kernel (64-bit indexing, ops read from the argument); each checked
# against the cpu plugin first (compiled on first sight).
step_variants() {
    local v name w k
    for v in "DEFAULT X=1" "ARGOPS DLACCEL_CUDA_FUSED_CONSTOPS=0" \
        "OLD DLACCEL_CUDA_FUSED_CONSTOPS=0 DLACCEL_CUDA_FUSED_OFF32=0"; do
        name=${v%% *}
        # DLA_VARIANTS="OLD ...": only those.
        case " ${DLA_VARIANTS:-$name} " in *" $name "*) ;; *) continue ;; esac
        for k in fused fused_reduce_pair; do
            env ${v#* } DLACCEL_CUDA_FUSED_COMPILE=first timeout 60 "$s/bin/dlaccel" check-plugin \
                --kernel $k --cases 50 --seed 11 "$s/plugins.d/cuda.json" >"$out/variant_check_${name}_$k.log" 2>&1
            line "variant $name check-plugin $k: exit $?: $(grep -E '^cuda' "$out/variant_check_${name}_$k.log" | tr -s ' ' | cut -c1-100)"
        done
        for w in ${DLA_VARIANT_WORKLOADS:-=cnn_step_replay_b1024 =cnn_step_replay =cnn_inference_replay}; do
            env ${v#* } timeout 60 "$s/bin/dlaccel-bench" --device cuda:0 --workload $w \
                >"$out/variant_${name}_${w#=}.log" 2>&1
            grep -E '^cuda' "$out/variant_${name}_${w#=}.log" | sed "s/^/variant $name /" | tee -a "$summary"
        done
    done
}

# The main job for 2 epochs with deterministic convolutions, with the
# default fused kernels and the old ones (64-bit indexing, ops read from
# the argument): they do the same arithmetic, so every printed loss and
# accuracy must be the same.
step_samecheck() {
    local v
    for v in "new X=1" "old DLACCEL_CUDA_FUSED_CONSTOPS=0 DLACCEL_CUDA_FUSED_OFF32=0"; do
        env ${v#* } DLACCEL_CUDA_DETERMINISTIC=1 DLACCEL_DEVICE=cuda timeout 120 \
            "$s/bin/cnn_fmnist" --data "$s/data" --epochs 2 --seed 1 >"$out/samecheck_${v%% *}.log" 2>&1
        tr '\r' '\n' <"$out/samecheck_${v%% *}.log" | grep -oE 'mean loss [0-9.]+|test accuracy [0-9.]+%' \
            >"$out/samecheck_${v%% *}.txt"
    done
    if [ -s "$out/samecheck_new.txt" ] && cmp -s "$out/samecheck_new.txt" "$out/samecheck_old.txt"; then
        line "samecheck: the same losses and accuracies: $(tr '\n' ' ' <"$out/samecheck_new.txt")"
    else
        line "samecheck: DIFFERENT: new $(tr '\n' ' ' <"$out/samecheck_new.txt") | old $(tr '\n' ' ' <"$out/samecheck_old.txt")"
    fi
}

# Nsight Compute on the fused kernels of the digit CNN's step at batch
# 1024 (plain launches), when the machine has it.
step_ncu() {
    local ncu
    ncu=$(command -v ncu || ls /usr/local/cuda*/bin/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
    if [ -z "$ncu" ]; then
        line "ncu: not on this machine"
        return
    fi
    DLACCEL_CUDA_GRAPHS=0 timeout 240 "$ncu" --target-processes all \
        --launch-skip "${DLA_NCU_SKIP:-3000}" --launch-count "${DLA_NCU_COUNT:-100}" \
        --section SpeedOfLight --section LaunchStats --section Occupancy \
        "$s/bin/dlaccel-bench" --device cuda:0 --workload "${DLA_NCU_WORKLOAD:-=cnn_step_replay_b1024}" --reps 30 \
        >"$out/ncu.log" 2>&1
    line "ncu ($ncu): exit $?"
    # One line a kernel: name, duration, memory and SM throughput (% of
    # peak), registers a thread, achieved occupancy.
    awk '/^  [^ ].*, Context [0-9]+, Stream/ { if (k) print k, d, m, c, r, o
                k = $0; sub(/^  (void )?/, "", k); sub(/[ (<].*/, "", k); d = m = c = r = o = "-" }
         /^ +Duration/ { d = $(NF) $(NF-1) }
         /^ +Memory Throughput/ { m = "mem" $(NF) "%" }
         /^ +Compute \(SM\) Throughput/ { c = "sm" $(NF) "%" }
         /^ +Registers Per Thread/ { r = "regs" $(NF) }
         /^ +Achieved Occupancy/ { o = "occ" $(NF) "%" }
         END { if (k) print k, d, m, c, r, o }' "$out/ncu.log" >"$out/ncu_short.log"
    sed 's/^/ncu /' "$out/ncu_short.log" | tee -a "$summary"
}

# Nsight Systems on the replays as they run by default (CUDA graphs), the
# graph's kernels traced one by one: per kernel name the total GPU time,
# count and median, and the copies, over --reps replays.
step_nsys() {
    local nsys w reps=${DLA_NSYS_REPS:-200}
    nsys=$(command -v nsys || ls /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys \
        /usr/local/cuda*/nsight-systems*/bin/nsys 2>/dev/null | head -1)
    if [ -z "$nsys" ]; then
        line "nsys: not on this machine"
        return
    fi
    for w in ${DLA_NSYS_WORKLOADS:-=cnn_inference_replay =cnn_step_replay =mlp_replay}; do
        timeout 120 "$nsys" profile -t cuda --cuda-graph-trace=node --force-overwrite true \
            -o "$out/nsys_${w#=}" "$s/bin/dlaccel-bench" --device cuda:0 --workload "$w" \
            --reps "$reps" >"$out/nsys_${w#=}.log" 2>&1
        line "nsys ${w#=} ($reps reps): exit $?"
        timeout 120 "$nsys" stats -r cuda_gpu_kern_sum,cuda_gpu_mem_time_sum -f csv \
            "$out/nsys_${w#=}.nsys-rep" >"$out/nsys_${w#=}.csv" 2>&1
        # A line a kernel or copy: total us, instances, median ns, name (the
        # 25 costliest of each report).
        python3 - "$out/nsys_${w#=}.csv" <<'PYEOF' | sed "s/^/nsys ${w#=} /" | tee -a "$summary"
import csv, sys
rows = []
for r in csv.reader(open(sys.argv[1], errors="replace")):
    if len(r) >= 9 and r[0].replace(".", "").isdigit():
        rows.append(r)
for r in rows[:50]:
    print("total_us %.1f inst %s med_ns %s %s" % (float(r[1]) / 1000, r[2], r[4], r[-1][:90]))
PYEOF
        rm -f "$out/nsys_${w#=}.sqlite"
    done
}

step_nccl() {
    local cases=allreduce,broadcast,bcast_dense,allgather,async,world
    DLACCEL_DEVICE=cuda DLACCEL_DEVICE_COLLECTIVES=force DLACCEL_LOG=info timeout 60 \
        "$s/bin/test_spmd" $cases >"$out/nccl_one.log" 2>&1
    line "nccl, a world of one forced (test_spmd $cases on cuda): exit $?, $(grep -c ': ok ' "$out/nccl_one.log") ok of 6; $(grep -c 'NCCL\|a group of 1\|FAIL\|not ok' "$out/nccl_one.log") lines about NCCL/the group/failures"
    grep -E 'NCCL|group of|own transport|could not|FAIL|not ok|rank 0: ' "$out/nccl_one.log" | head -20 | tee -a "$summary"
    DLACCEL_DEVICE=cuda DLACCEL_LOG=info timeout 60 "$s/bin/test_spmd" $cases >"$out/nccl_off.log" 2>&1
    line "test_spmd on cuda, a world of one (not forced): exit $?, $(grep -c ': ok ' "$out/nccl_off.log") ok of 6"
    if ! command -v mpirun >/dev/null 2>&1 || [ ! -f "$s/mpi/libdlaccel-mpi.so" ]; then
        line "no mpirun on this machine, or no MPI plugin in the bundle: several ranks not run"
        return
    fi
    # The MPI plugin against this machine's MPI library (carried without).
    mkdir -p "$s/plugins.d/comm"
    sed "s|@LIBRARY_PATH@|$s/mpi/libdlaccel-mpi.so|" "$s/manifests/mpi.json.in" >"$s/plugins.d/comm/mpi.json"
    { mpirun --version; ldd "$s/mpi/libdlaccel-mpi.so"; } >"$out/nccl_mpi_ldd.log" 2>&1
    line "mpirun: $(command -v mpirun), $(head -1 "$out/nccl_mpi_ldd.log"); the MPI plugin's libmpi: $(grep libmpi "$out/nccl_mpi_ldd.log" | tr -s ' \t' ' ')"
    local np
    for np in 2 3; do
        OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 DLACCEL_DEVICE=cuda DLACCEL_LOG=info \
            timeout 120 mpirun --allow-run-as-root --oversubscribe -np $np -x LD_LIBRARY_PATH \
            -x DLACCEL_PLUGIN_PATH -x DLACCEL_DEVICE -x DLACCEL_LOG -x OMP_NUM_THREADS \
            "$s/bin/test_spmd" $cases,mismatch >"$out/nccl_np$np.log" 2>&1
        line "nccl, mpirun -np $np on the one GPU (test_spmd $cases,mismatch): exit $?, $(grep -c ': ok ' "$out/nccl_np$np.log") ok of $((np * 7))"
        grep -E 'NCCL|group of|own transport|could not|not ok|FAIL|rror' "$out/nccl_np$np.log" | sort | uniq -c | head -12 | tee -a "$summary"
    done
}

step_torchprof() {
    PYTHONUNBUFFERED=1 timeout 120 python3 "$s/peers/torch_cuda_profile.py" >"$out/torchprof.log" 2>&1
    line "torchprof: exit $?"
    sed 's/^/torchprof /' "$out/torchprof.log" | grep -v Warning | tee -a "$summary"
    DLACCEL_LOG=debug timeout 60 "$s/bin/dlaccel-bench" --device cuda:0 --workload =cnn_step_replay \
        --reps 20 >"$out/cudnn_algos.log" 2>&1
    grep -E 'cuDNN algorithm' "$out/cudnn_algos.log" | sed 's/^dlaccel\[debug\]: cuda: //' | tee -a "$summary"
    grep -E '^cuda' "$out/cudnn_algos.log" | tee -a "$summary"
}

step_engines() {
    local k v r
    for k in conv_forward conv_backward_data conv_backward_filter; do
        DLACCEL_LOG=debug timeout 120 "$s/bin/dlaccel" check-plugin --kernel $k --cases 50 --seed 5 \
            "$s/plugins.d/cuda.json" >"$out/engines_check_$k.log" 2>&1
        line "engines check-plugin $k: exit $?: $(grep -E '^cuda' "$out/engines_check_$k.log" | tr -s ' ' | cut -c1-120); engines taken: $(grep -c 'runs instead' "$out/engines_check_$k.log"), graph API failures: $(grep -c 'graph API failed' "$out/engines_check_$k.log")"
        grep -m3 'graph API failed\|no plan' "$out/engines_check_$k.log" | cut -c1-250 | tee -a "$summary"
    done
    DLACCEL_LOG=debug timeout 60 "$s/bin/dlaccel-bench" --device cuda:0 --workload =cnn_step_replay \
        --reps 5 >"$out/engines_cnn.log" 2>&1
    grep -E 'runs instead|graph API failed' "$out/engines_cnn.log" | sed 's/^dlaccel\[debug\]: cuda: //' | tee -a "$summary"
    for r in 1 2; do
        for v in "on X=1" "off DLACCEL_CUDA_CONV_ENGINES=0"; do
            env ${v#* } timeout 90 "$s/bin/dlaccel-bench" --device cuda:0 \
                --workload replay \
                >"$out/engines_bench_${v%% *}_$r.log" 2>&1
            grep -E '^cuda' "$out/engines_bench_${v%% *}_$r.log" | sed "s/^/engines ${v%% *} round $r /" | tee -a "$summary"
        done
    done
}

# ABI 1.8's fused_multi on the GPU: check-plugin on its three paths
# (interpreted, compiled, 64-bit indexing), the graphs' node counts and
# the replays with it and without (DLACCEL_PLAN=single-result), alternating.
step_multi() {
    local v r
    for v in "interp DLACCEL_CUDA_FUSED_COMPILE=0" "compiled DLACCEL_CUDA_FUSED_COMPILE=first" \
        "off32 DLACCEL_CUDA_FUSED_OFF32=0"; do
        env ${v#* } DLACCEL_LOG=debug timeout 120 "$s/bin/dlaccel" check-plugin --kernel fused_multi \
            --cases 400 --seed 9 "$s/plugins.d/cuda.json" >"$out/multi_check_${v%% *}.log" 2>&1
        line "multi check-plugin ${v%% *}: exit $?: $(grep -E '^cuda' "$out/multi_check_${v%% *}.log" | tr -s ' ' | cut -c1-120); compiled: $(grep -c 'fused_multi program' "$out/multi_check_${v%% *}.log")"
    done
    for v in "on X=1" "off DLACCEL_PLAN=single-result"; do
        env ${v#* } DLACCEL_LOG=debug timeout 90 "$s/bin/dlaccel-bench" --device cuda:0 \
            --workload replay --reps 5 >"$out/multi_nodes_${v%% *}.log" 2>&1
        grep -o 'captured as a CUDA graph of [0-9]* nodes' "$out/multi_nodes_${v%% *}.log" | sort | uniq -c |
            sed "s/^/multi ${v%% *} /" | tee -a "$summary"
    done
    for r in 1 2 3; do
        for v in "on X=1" "off DLACCEL_PLAN=single-result"; do
            env ${v#* } timeout 90 "$s/bin/dlaccel-bench" --device cuda:0 --workload replay \
                >"$out/multi_bench_${v%% *}_$r.log" 2>&1
            grep -E '^cuda' "$out/multi_bench_${v%% *}_$r.log" | sed "s/^/multi ${v%% *} round $r /" | tee -a "$summary"
        done
    done
}

# The one-kernel replay of small plans: check-plugin on the kernels whose
# launches become its steps (the small GEMM kernel is gemm's for small
# problems), the captures' verdicts, the suites (test_accel compares each
# replay with eager, bit for bit), and the replays with it and without.
step_onekern() {
    local k t v r w
    for k in gemm reduce fused fused_multi; do
        timeout 60 "$s/bin/dlaccel" check-plugin --kernel $k --cases 300 --seed 13 \
            "$s/plugins.d/cuda.json" >"$out/k1_check_$k.log" 2>&1
        line "onekern check-plugin $k: exit $?: $(grep -E '^cuda' "$out/k1_check_$k.log" | tr -s ' ' | cut -c1-120)"
    done
    DLACCEL_LOG=debug timeout 90 "$s/bin/dlaccel-bench" --device cuda:0 --workload replay \
        --reps 5 >"$out/k1_nodes.log" 2>&1
    grep -oE 'captured as a CUDA graph of [0-9]+ nodes.*' "$out/k1_nodes.log" |
        sed -E 's/regions \(.*\); /regions; /' | sort | uniq -c | sed 's/^/onekern capture /' |
        tee -a "$summary"
    grep -E 'ran as one kernel|ran as one CUDA graph' "$out/k1_nodes.log" | sed 's/^/onekern /' |
        tee -a "$summary"
    # Not with DLACCEL_LOG=debug: test_accel checks the text of a warning
    # among the log's lines.
    for t in test_accel test_train test_autodiff test_tensor test_optim test_net test_loss; do
        DLA_TEST_BUILDDIR=$s DLACCEL_DEVICE=cuda DLA_TEST_EXPECT_DEVICE_RUNS=1 \
            timeout 40 "$s/bin/$t" >"$out/k1_suite_$t.log" 2>&1
        line "onekern suite $t (DLACCEL_DEVICE=cuda): exit $?, ok $(grep -c '^ok' "$out/k1_suite_$t.log"), not ok $(grep -c '^not ok' "$out/k1_suite_$t.log")"
        grep -A4 '^not ok' "$out/k1_suite_$t.log" | head -10
    done
    for r in 1 2; do
        for v in "on X=1" "off DLACCEL_CUDA_ONE_KERNEL=0"; do
            env ${v#* } timeout 90 "$s/bin/dlaccel-bench" --device cuda:0 --workload replay \
                >"$out/k1_bench_${v%% *}_$r.log" 2>&1
            grep -E '^cuda' "$out/k1_bench_${v%% *}_$r.log" | sed "s/^/onekern ${v%% *} round $r /" |
                tee -a "$summary"
            # The small replays timed 30 calls to a sync, as PyTorch's are.
            for w in =mlp_replay =ce_replay =ce_softmax_replay; do
                env ${v#* } timeout 30 "$s/bin/dlaccel-bench" --device cuda:0 --workload $w \
                    --pipeline 30 2>&1 | grep -E '^cuda' |
                    sed "s/^/onekern ${v%% *} round $r pipeline30 /" | tee -a "$summary"
            done
        done
    done
}

# plan_end without its wait: a replay returns queued, as launches do, so
# that the host's next call is made while it runs. Timed step by step
# (each call to its own sync: the latency) and 30 calls to a sync (the
# throughput, PyTorch's protocol), queued and waiting alternating.
step_async() {
    local r v t
    for t in test_accel test_train; do
        for v in "queue X=1" "wait DLACCEL_CUDA_PLAN_WAIT=1"; do
            suite_variant async "$v" $t
        done
    done
    # The core's own cost of a replay on this machine's CPU: the cpu
    # plugin serving whole replays (graphwrap), the MLP's kernels on the CPU.
    [ -d "$s/graphwrap.d" ] && for r in 1 2 3; do
        DLA_TEST_CPU_PLUGIN_LIB=$s/lib/libdlaccel-cpu.so DLACCEL_DEVICE=graphwrap \
            DLACCEL_PLUGIN_PATH=$s/graphwrap.d:$s/plugins.d timeout 60 "$s/bin/dlaccel-bench" \
            --device graphwrap --workload =mlp_replay 2>&1 | grep -E '^graphwrap' |
            sed "s/^/async host floor round $r /" | tee -a "$summary"
    done
    for r in 1 2; do
        for v in "queue X=1" "wait DLACCEL_CUDA_PLAN_WAIT=1"; do
            env ${v#* } timeout 90 "$s/bin/dlaccel-bench" --device cuda:0 --workload replay \
                >"$out/async_bench_${v%% *}_$r.log" 2>&1
            grep -E '^cuda' "$out/async_bench_${v%% *}_$r.log" |
                sed "s/^/async ${v%% *} round $r /" | tee -a "$summary"
            env ${v#* } timeout 90 "$s/bin/dlaccel-bench" --device cuda:0 --workload replay \
                --pipeline 30 >"$out/async_pipe_${v%% *}_$r.log" 2>&1
            grep -E '^cuda' "$out/async_pipe_${v%% *}_$r.log" |
                sed "s/^/async ${v%% *} round $r pipeline30 /" | tee -a "$summary"
        done
    done
}

# The compiled elementwise programs with their operands' layout as
# constants and the sums on rows with four loads in flight (both the
# default), against each off (DLACCEL_CUDA_FUSED_LAYOUT=0,
# DLACCEL_CUDA_FR_ROWS=0) and both: check-plugin's fused kernels with the
# defaults (compiled on first sight), then the CNN replays 30 calls to a
# sync, each variant in turn, 3 rounds.
# Step $1's run of test suite $3 on cuda with variant $2 ("name VAR=value
# ...") under a timeout of $4 seconds (default 40): its exit and counts
# in the summary, its log as $out/$1_suite_$3_name.log.
suite_variant() {
    local v=$2 t=$3 log="$out/$1_suite_$3_${2%% *}.log"
    env ${v#* } DLA_TEST_BUILDDIR=$s DLACCEL_DEVICE=cuda DLA_TEST_EXPECT_DEVICE_RUNS=1 \
        timeout "${4:-40}" "$s/bin/$t" >"$log" 2>&1
    line "$1 suite $t ${v%% *}: exit $?, ok $(grep -c '^ok' "$log"), not ok $(grep -c '^not ok' "$log")"
}

# Step $1's run of replay workload $3 with variant $2 ("name VAR=value
# ..."), round $4: 30 calls to a sync, its line in the summary.
bench_variant() {
    local v=$2 w=$3
    env ${v#* } timeout 60 "$s/bin/dlaccel-bench" --device cuda:0 --workload $w \
        --pipeline 30 >"$out/$1_${v%% *}_${w#=}_$4.log" 2>&1
    grep -E '^cuda' "$out/$1_${v%% *}_${w#=}_$4.log" |
        sed "s/^/$1 ${v%% *} round $4 pipeline30 /" | tee -a "$summary"
}

# Step $1's $2 rounds of the four CNN replays (step and inference, batch
# 128 and 1024), each with every variant after it ("name VAR=value ...").
cnn_rounds() {
    local step=$1 rounds=$2 r v w
    shift 2
    for r in $(seq "$rounds"); do
        for v in "$@"; do
            for w in =cnn_step_replay =cnn_step_replay_b1024 =cnn_inference_replay \
                =cnn_inference_replay_b1024; do
                bench_variant "$step" "$v" $w $r
            done
        done
    done
}

step_layout() {
    local k
    local variants=("new X=1" "nolayout DLACCEL_CUDA_FUSED_LAYOUT=0" "norows DLACCEL_CUDA_FR_ROWS=0"
        "old DLACCEL_CUDA_FUSED_LAYOUT=0 DLACCEL_CUDA_FR_ROWS=0")
    for k in fused fused_multi fused_reduce fused_reduce_pair; do
        DLACCEL_CUDA_FUSED_COMPILE=first timeout 120 "$s/bin/dlaccel" check-plugin \
            --kernel $k --cases 60 --seed 13 "$s/plugins.d/cuda.json" \
            >"$out/layout_check_$k.log" 2>&1
        line "layout check-plugin $k (compiled on first sight): exit $?: $(grep -E '^cuda' "$out/layout_check_$k.log" | tr -s ' ' | cut -c1-100)"
    done
    cnn_rounds layout 3 "${variants[@]}"
}

step_k1() {
    local k t r v w
    # The interpreted one kernel (compiled and launched early are the
    # defaults since 2026-11-27: step k1c compares those).
    local b="DLACCEL_CUDA_K1_COMPILE=0 DLACCEL_CUDA_K1_PDL=0"
    local all="DLACCEL_CUDA_K1_COMPILE=0 DLACCEL_CUDA_K1_PDL=1 DLACCEL_CUDA_K1_SHARED=1 DLACCEL_CUDA_K1_JOIN=1"
    local k1_variants=("default $b" "pdl $b DLACCEL_CUDA_K1_PDL=1" "shared $b DLACCEL_CUDA_K1_SHARED=1"
        "join $b DLACCEL_CUDA_K1_JOIN=1" "all $all")
    for k in gemm reduce fused_multi; do
        timeout 60 "$s/bin/dlaccel" check-plugin --kernel $k --cases 200 --seed 17 \
            "$s/plugins.d/cuda.json" >"$out/k1_check_$k.log" 2>&1
        line "k1 check-plugin $k: exit $?: $(grep -E '^cuda' "$out/k1_check_$k.log" | tr -s ' ' | cut -c1-100)"
    done
    for t in test_accel test_train; do
        for v in "plain $b" "all $all"; do
            suite_variant k1 "$v" $t
        done
    done
    for r in 1 2 3; do
        for w in =mlp_replay =ce_replay =ce_softmax_replay; do
            for v in "${k1_variants[@]}"; do
                bench_variant k1 "$v" $w $r
            done
        done
    done
    for v in "${k1_variants[@]}"; do
        for w in =mlp_replay =ce_replay; do
            env ${v#* } DLACCEL_CUDA_K1_PROFILE=1 DLACCEL_LOG=info timeout 60 \
                "$s/bin/dlaccel-bench" --device cuda:0 --workload $w --pipeline 30 \
                >"$out/k1_profile_${v%% *}_${w#=}.log" 2>&1
            grep -E 'one-kernel profile' "$out/k1_profile_${v%% *}_${w#=}.log" | tail -1 |
                sed "s/^/k1 ${v%% *} ${w#=} /" | cut -c1-900 | tee -a "$summary"
        done
    done
    for w in =cnn_step_replay =cnn_inference_replay; do
        bench_variant k1 "default X=1" $w 1
    done
}

# The one kernel compiled for its plan (DLACCEL_CUDA_K1_COMPILE=1,
# onekern_source.c) against the interpreted one, each plain and launched
# early (DLACCEL_CUDA_K1_PDL=1): test_accel and test_train compiled
# (their replays checked against eager), the debug log's capture lines
# (which plans compiled), the small replays alternating, 3 rounds, and
# the one kernel's phases (DLACCEL_CUDA_K1_PROFILE=1) each way.
step_k1c() {
    local t r v w
    local c="DLACCEL_CUDA_K1_COMPILE=1" i="DLACCEL_CUDA_K1_COMPILE=0"
    local variants=("interp $i DLACCEL_CUDA_K1_PDL=0" "interppdl $i DLACCEL_CUDA_K1_PDL=1"
        "compiled $c DLACCEL_CUDA_K1_PDL=0" "compiledpdl $c DLACCEL_CUDA_K1_PDL=1")
    for t in test_accel test_train; do
        suite_variant k1c "compiled $c DLACCEL_CUDA_K1_PDL=0" $t 60
    done
    suite_variant k1c "compiledpdl $c DLACCEL_CUDA_K1_PDL=1" test_accel 60
    # Which of test_accel's captured plans ran as a compiled one kernel.
    DLACCEL_LOG=debug DLA_TEST_BUILDDIR=$s DLACCEL_DEVICE=cuda timeout 60 "$s/bin/test_accel" \
        >"$out/k1c_accel_debug.log" 2>&1
    grep -o 'one kernel of [0-9]* steps stays interpreted.*' "$out/k1c_accel_debug.log" |
        sort | uniq -c | sed 's/^/k1c test_accel: /' | tee -a "$summary"
    line "k1c test_accel: $(grep -c 'runs as one kernel of [0-9]* steps, compiled' \
        "$out/k1c_accel_debug.log") plans compiled as one kernel, $(grep -c \
        'runs as one kernel of [0-9]* steps;' "$out/k1c_accel_debug.log") interpreted, $(grep -c \
        'could not be compiled' "$out/k1c_accel_debug.log") compile failures"
    for w in =mlp_replay =ce_replay; do
        env $c DLACCEL_LOG=debug timeout 60 "$s/bin/dlaccel-bench" --device cuda:0 --workload $w \
            >"$out/k1c_debug_${w#=}.log" 2>&1
        grep -E 'one kernel|compiled \(|NVRTC' "$out/k1c_debug_${w#=}.log" | grep -v 'program of' |
            sort | uniq -c | cut -c1-300 | sed "s/^/k1c ${w#=} log: /" | tee -a "$summary"
    done
    for r in 1 2 3; do
        for w in =mlp_replay =ce_replay; do
            for v in "${variants[@]}"; do
                bench_variant k1c "$v" $w $r
            done
        done
    done
    for v in "${variants[@]}"; do
        env ${v#* } DLACCEL_CUDA_K1_PROFILE=1 DLACCEL_LOG=info timeout 60 \
            "$s/bin/dlaccel-bench" --device cuda:0 --workload =mlp_replay --pipeline 30 \
            >"$out/k1c_profile_${v%% *}.log" 2>&1
        grep -E 'one-kernel profile' "$out/k1c_profile_${v%% *}.log" | tail -1 |
            sed "s/^/k1c ${v%% *} mlp_replay /" | cut -c1-600 | tee -a "$summary"
    done
}

step_segments() {
    local r v w
    for v in "noseg X=1" "seg DLACCEL_CUDA_SEGMENTS=1"; do
        suite_variant segments "$v" test_accel 60
    done
    DLACCEL_LOG=debug timeout 60 "$s/bin/dlaccel-bench" --device cuda:0 \
        --workload =cnn_step_replay --quick >"$out/segments_graphlog.log" 2>&1
    DLACCEL_CUDA_SEGMENTS=1 DLACCEL_LOG=debug timeout 60 "$s/bin/dlaccel-bench" --device cuda:0 \
        --workload =cnn_step_replay --quick >>"$out/segments_graphlog.log" 2>&1
    grep -E 'captured as a CUDA graph|runs of small launches' "$out/segments_graphlog.log" |
        cut -c1-220 | tee -a "$summary"
    for r in 1 2 3; do
        for v in "noseg X=1" "seg DLACCEL_CUDA_SEGMENTS=1" "biasin DLACCEL_PLAN=conv-bias-in"; do
            for w in =cnn_step_replay =cnn_step_replay_b1024 =cnn_inference_replay \
                =cnn_inference_replay_b1024 =mlp_replay; do
                [ "${v%% *}" = biasin ] && [ "${w#=cnn_inference}" = "$w" ] && continue
                bench_variant segments "$v" $w $r
            done
        done
    done
}

for step in $steps; do
    case $step in
    check) step_check ;;
    suites) step_suites ;;
    ode) step_ode ;;
    bench) step_bench ;;
    torch128) torch_run torch128_eager --batches 128 --modes eager --rounds 5 --iters 30 ;;
    torch1024) torch_run torch1024 --batches 1024 --modes default --rounds 5 --iters 20 ;;
    benchtf32) step_bench_tf32 ;;
    benchplain) step_bench_plain ;;
    benchpipe) step_bench_pipe ;;
    async) step_async ;;
    layout) step_layout ;;
    segments) step_segments ;;
    k1) step_k1 ;;
    k1c) step_k1c ;;
    graphlog) step_graphlog ;;
    profile) step_profile ;;
    suitesplain) step_suites_plain ;;
    torchgraph)
        PYTHONUNBUFFERED=1 timeout 150 python3 "$s/peers/torch_cuda_graph.py" --batches 128,1024 \
            >"$out/torch_graph.json" 2>"$out/torch_graph.err"
        line "torch torch_cuda_graph.py: exit $?"
        tr -d '\n ' <"$out/torch_graph.json" | tee -a "$summary"
        echo | tee -a "$summary"
        tail -3 "$out/torch_graph.err" ;;
    suitescpu) step_suites_cpu ;;
    variants) step_variants ;;
    ncu) step_ncu ;;
    nsys) step_nsys ;;
    nccl) step_nccl ;;
    engines) step_engines ;;
    multi) step_multi ;;
    onekern) step_onekern ;;
    torchprof) step_torchprof ;;
    samecheck) step_samecheck ;;
    train) step_train cuda ;;
    traincpu) step_train cpu ;;
    seeds) step_seeds ;;
    higher) step_higher ;;
    floor) step_floor ;;
    *) echo "gpu_run: unknown step $step" ;;
    esac
done
echo "==== summary"
cat "$summary"
# Every log in one file ($OUT brings back a few files only).
tar -C "$out" -czf /tmp/dla-logs.tar.gz --exclude=logs.tar.gz . && mv /tmp/dla-logs.tar.gz "$out/logs.tar.gz"
find "$out" -type f ! -name logs.tar.gz ! -name summary.txt -delete
