#!/bin/bash
# bench/gpu_pack.sh - bundles a build tree for a GPU machine that has the
# NVIDIA driver and the CUDA toolkit (cuBLAS, cuDNN, NVRTC) but none of this
# machine's packages and no network: the real binaries behind libtool's
# wrappers, libdlaccel, the cpu and cuda plugins with their manifests, the
# shared libraries they need that a bare machine lacks (ldd: OpenBLAS,
# Jansson, cmocka, libgomp, libpng, ...), Fashion-MNIST and the PyTorch
# reference, as one .gpu/bundle.tar.xz (64 MiB travel in all). Run
# bench/gpu_run.sh there.
#
#   bash bench/gpu_pack.sh [BUILDDIR]        (default: build)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
b=$(cd "${1:-$root/build}" && pwd)
out=$root/.gpu
stage=$out/stage
rm -rf "$out"
mkdir -p "$stage/bin" "$stage/lib" "$stage/data" "$stage/peers" "$stage/manifests"
[ -f "$b/plugins/cuda/.libs/libdlaccel-cuda.so" ] || { echo "gpu_pack: $b has no cuda plugin (configure --enable-cuda)" >&2; exit 1; }

# A libtool wrapper's real program lives in .libs beside it.
real() {
    local d f
    d=$(dirname "$1") f=$(basename "$1")
    if [ -x "$d/.libs/$f" ]; then echo "$d/.libs/$f"; else echo "$1"; fi
}
bins="tools/dlaccel bench/dlaccel-bench examples/cnn_fmnist examples/parallel_training
tests/test_tensor tests/test_autodiff tests/test_accel tests/test_train tests/test_conv
tests/test_loss tests/test_nnops_act tests/test_nnops_fc tests/test_nnops_norm
tests/test_nnops_pool tests/test_net tests/test_net_grad tests/test_optim tests/test_plan
tests/test_fused_kernels tests/test_shape tests/test_data tests/test_spmd tests/test_higher
tests/test_net_layers tests/test_null_args tests/test_derivatives tests/test_attention
tests/test_ode45 tests/test_resize tests/test_lbfgs examples/pinn examples/autoencoder examples/neural_ode"
for x in $bins; do
    [ -e "$b/$x" ] && cp -L "$(real "$b/$x")" "$stage/bin/"
done
cp -a "$b"/.libs/libdlaccel.so* "$stage/lib/"
cp -L "$b/plugins/cpu/.libs/libdlaccel-cpu.so" "$b/plugins/cuda/.libs/libdlaccel-cuda.so" "$stage/lib/"
cp "$root/plugins/cpu/manifest.json.in" "$stage/manifests/cpu.json.in"
cp "$root/plugins/cuda/manifest.json.in" "$stage/manifests/cuda.json.in"
# graphwrap (tests/plugins/graphwrap.c), the cpu plugin serving whole
# replays itself: the core's own cost of a replay on that machine's CPU.
if [ -f "$b/tests/plugins/.libs/libdlaccel-graphwrap.so" ]; then
    cp -L "$b/tests/plugins/.libs/libdlaccel-graphwrap.so" "$stage/lib/"
    cp "$root/tests/plugins/graphwrap.json.in" "$stage/manifests/graphwrap.json.in"
fi
# What the programs need beyond the C library and the toolkit.
for f in "$stage"/bin/* "$stage"/lib/*.so*; do
    ldd "$f" 2>/dev/null | awk '/=> \//{print $3}'
done | sort -u | grep -Ev '/(libc|libm|libdl|libpthread|librt|ld-linux[^/]*|libgcc_s|libstdc\+\+)\.so' |
    while read -r lib; do
        case $lib in "$b"/*) continue ;; esac
        cp -L "$lib" "$stage/lib/"
    done
# The MPI communicator plugin, apart: its MPI library must be the GPU
# machine's own (its mpirun's), so none is carried (gpu_run.sh nccl).
if [ -f "$b/plugins/mpi/.libs/libdlaccel-mpi.so" ]; then
    mkdir -p "$stage/mpi"
    cp -L "$b/plugins/mpi/.libs/libdlaccel-mpi.so" "$stage/mpi/"
    cp "$root/plugins/mpi/manifest.json.in" "$stage/manifests/mpi.json.in"
fi
cp /usr/share/datasets/fashion-mnist/*.gz "$stage/data/"
# The PyTorch reference, with one line added: torch.compile's CUDA graphs
# (mode "reduce-overhead") overwrite a step's outputs on the next replay,
# and PyTorch 2.11 refuses the backward of the unmarked step ("accessing
# tensor output of CUDAGraphs that has been overwritten"): each step is
# marked as a new one, as PyTorch's message asks.
sed 's/^\(        \)loss = fwd(x, y)$/\1if mode == "reduce-overhead":\n\1    torch.compiler.cudagraph_mark_step_begin()\n\1loss = fwd(x, y)/' \
    "$root/../shared/peers/cnn_cuda.py" >"$stage/peers/cnn_cuda.py"
grep -q cudagraph_mark_step_begin "$stage/peers/cnn_cuda.py" || { echo "gpu_pack: cnn_cuda.py patch did not apply" >&2; exit 1; }
# PyTorch's CUDA-graph figures that cnn_cuda.py cannot give (its
# reduce-overhead training step fails under PyTorch 2.11 even so).
cp "$root/bench/torch_cuda_graph.py" "$root/bench/torch_cuda_profile.py" "$root/bench/torch_pinn.py" \
    "$root/bench/torch_neural_ode.py" \
    "$stage/peers/"
# torchdiffeq (pure Python) for torch_neural_ode.py there, when an
# interpreter here has it (pip install torchdiffeq); it wants scipy too.
for py in "${T2PY:-/tmp/torch2/bin/python}" python3; do
    d=$("$py" -c 'import os, torchdiffeq; print(os.path.dirname(torchdiffeq.__file__))' 2>/dev/null) &&
        { cp -r "$d" "$stage/peers/"; break; }
done
# The launch floor (bench/cuda_launch_floor.cu): what one launch costs on
# that machine, whatever library makes it.
nvcc -O2 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 \
    -gencode arch=compute_90,code=compute_90 -o "$stage/bin/cuda_launch_floor" \
    "$root/bench/cuda_launch_floor.cu"
cp "$root/bench/gpu_run.sh" "$stage/"
tar -C "$out" -cf - stage | xz -T2 -6 > "$out/bundle.tar.xz"
rm -rf "$stage"
grep -qx '/.gpu/' "$root/.git/info/exclude" 2>/dev/null || echo '/.gpu/' >> "$root/.git/info/exclude"
ls -la "$out/bundle.tar.xz"
