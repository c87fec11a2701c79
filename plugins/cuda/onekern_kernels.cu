/*
 * onekern_kernels.cu - the small GEMM kernel and the one-kernel replay of
 * a small plan (onekern_kern.h says what each takes and why).
 *
 * Every loop below is a grid-stride loop, so a step runs the same code in
 * the one kernel (one block: a block-stride loop) as in a launch of its
 * own. Between steps, __syncthreads makes the block's global writes
 * visible to the whole block, which is all a step reads (steps joined
 * into one phase, DLACCEL_CUDA_K1_JOIN, need none: neither reads or
 * writes a byte the other writes). With DLACCEL_CUDA_K1_SHARED the
 * block's data live in shared memory, as onekern_kern.h says.
 */
#include "plugins/cuda/kern.cuh"
#include "plugins/cuda/onekern_kern.h"
#include "plugins/cuda/reduce_dev.cuh"

#include <dlaccel/plugin_ops.h>
#include <stddef.h>
#include <string.h>

DLA__CU_FUSED_FRAME(DLA__CU_ID)
DLA__CU_FMULTI_FRAME(DLA__CU_ID)

/* The copies and the steps are the kernel's parameters and a pointer: the
 * launch's limit is 4 KiB. */
static_assert(2 * sizeof(dla__cu_copies) + 24 < 4096, "the one kernel's parameters fit in 4 KiB");
static_assert(sizeof(dla__cu_k1_step) % 8 == 0, "a step is staged in 8-byte words");

/* The one kernel's dynamic shared memory: the first steps, staged (every
 * thread reads every field of a step's descriptor, and from shared memory
 * each read is one short round trip where one from global memory is an L2
 * round trip). */
extern __shared__ int4 dla__cu_k1_smem[];

namespace {

DLA__CU_FUSED_INTERP(DLA__CU_ID)

template <typename T> __device__ __forceinline__ void sgemm_body(const dla__cu_sgemm &g)
{
    const int64_t mn = g.m * g.n, total = mn * g.batch;
    /* op(A)(i, l) = a[i * ai + l * al], op(B)(l, j) = b[l * bl + j * bj] */
    const int64_t ai = g.trans_a ? g.lda : 1, al = g.trans_a ? 1 : g.lda;
    const int64_t bl = g.trans_b ? g.ldb : 1, bj = g.trans_b ? 1 : g.ldb;
    const T alpha = (T)g.alpha, beta = (T)g.beta;
    DLA__CU_FOR(t, total)
    {
        const int64_t p = t / mn, r = t - p * mn, j = r / g.m, i = r - j * g.m;
        const T *a = (const T *)g.a + p * g.sa + i * ai;
        const T *b = (const T *)g.b + p * g.sb + j * bj;
        T *c = (T *)g.c + p * g.sc + i + j * g.ldc;
        T acc = 0;
        for (int64_t l = 0; l < g.k; l++)
            acc = acc + a[l * al] * b[l * bl];
        T v = alpha * acc;
        if (beta != (T)0)
            v = v + beta * *c;
        *c = v;
    }
}

template <typename T> __global__ void sgemm_k(const dla__cu_sgemm g)
{
    sgemm_body<T>(g);
}

template <typename T> __device__ __forceinline__ void reduce_step(const dla__cu_red_launch &l)
{
    switch (l.op) {
    case 0:
    case 1:
        red_sum_thread_body<T>(l);
        break;
    case 2:
        red_ext_thread_body<true, T>(l);
        break;
    default:
        red_ext_thread_body<false, T>(l);
        break;
    }
}

static_assert(offsetof(dla__cu_k1_move, sp) == offsetof(dla__cu_views<2>, sp) &&
                  offsetof(dla__cu_k1_move, v) == offsetof(dla__cu_views<2>, v) &&
                  offsetof(dla__cu_views<1>, v) == offsetof(dla__cu_views<2>, v),
              "a move step starts as dla__cu_views<2> (and <1>) do");

/* copy_kernels.cu's fill and copy, by element size. */
template <typename U> __device__ __forceinline__ void fill_body(const dla__cu_k1_move &m)
{
    const dla__cu_views<1> &a = reinterpret_cast<const dla__cu_views<1> &>(m);
    const U v = (U)m.bits;
    DLA__CU_FOR(i, a.sp.n)
    {
        int64_t off[1];
        dla__cu_locate<1>(a, i, off);
        *dla__cu_elem<U>(a.v[0], off[0]) = v;
    }
}

template <typename U> __device__ __forceinline__ void copy_body(const dla__cu_k1_move &m)
{
    const dla__cu_views<2> &a = reinterpret_cast<const dla__cu_views<2> &>(m);
    DLA__CU_FOR(i, a.sp.n)
    {
        int64_t off[2];
        dla__cu_locate<2>(a, i, off);
        *dla__cu_elem<U>(a.v[0], off[0]) = *dla__cu_elem<U>(a.v[1], off[1]);
    }
}

__device__ __forceinline__ void move_step(int kind, const dla__cu_k1_move &m)
{
    if (kind == DLA__CU_K1_FILL) {
        if (m.esize == 1)
            fill_body<uint8_t>(m);
        else if (m.esize == 4)
            fill_body<uint32_t>(m);
        else
            fill_body<uint64_t>(m);
    } else {
        if (m.esize == 1)
            copy_body<uint8_t>(m);
        else if (m.esize == 4)
            copy_body<uint32_t>(m);
        else
            copy_body<uint64_t>(m);
    }
}

#ifndef DLA__CU_K1_LANES
#define DLA__CU_K1_LANES 32 /* a warp: its loads coalesce */
#endif
#define K1_GROUP_BYTES DLA__CU_K1_GROUP_BYTES(DLA__CU_K1_LANES)

/* DLACCEL_CUDA_K1_SHARED=1 (onekern_kern.h): p, the start of a role (a
 * copy's destination in, or its source out), as its window's address
 * (win: the windows' start), laid out as dla__cu_k1_windows lays out the
 * roles. Inlined: called, it took the copies' addresses, and the kernel
 * copied both to a 3 KiB stack frame and spilled (ptxas -v,
 * tests/cuda_onekern_spills.sh). */
__device__ __forceinline__ char *k1_relocated(char *p, const dla__cu_copies &in,
                                              const dla__cu_copies &out, char *win)
{
    int64_t at = 0;
    for (int r = 0; r < in.n + out.n; r++) {
        const char *lo = r < in.n ? in.dst[r] : out.src[r - in.n];
        const int64_t w = dla__cu_k1_window_at(at, (uintptr_t)lo);
        if (p == lo)
            return win + w;
        at = w + (r < in.n ? in.bytes[r] : out.bytes[r - in.n]);
    }
    return p;
}

/* The pointer fields of a staged step, field f of each kind (NULL past
 * its last): what k1_relocated moves. */
__device__ __forceinline__ char **k1_pointer(dla__cu_k1_step &st, int f)
{
    switch (st.kind) {
    case DLA__CU_K1_FUSED:
        return f < 16 ? &st.u.fused.v.v[f].base : NULL;
    case DLA__CU_K1_REDUCE:
        return f == 0   ? &st.u.red.y
               : f == 1 ? (char **)&st.u.red.x
               : f == 2 ? (char **)&st.u.red.index
                        : NULL; /* part_v and part_i: one part, never used */
    case DLA__CU_K1_GEMM:
        return f == 0   ? (char **)&st.u.gemm.a
               : f == 1 ? (char **)&st.u.gemm.b
               : f == 2 ? &st.u.gemm.c
                        : NULL;
    default:
        return f < 2 ? &st.u.move.v[f].base : NULL;
    }
}

/* The block's byte copies c (a replay's inputs in, or its results out),
 * dealt round groups of K1_LANES threads (dla__cu_deal_regions). win: the
 * roles' windows (k1_relocated), or NULL; the roles are c's destinations
 * (out 0) or its sources (out 1). */
__device__ __forceinline__ void block_copies(const dla__cu_copies &c, const dla__cu_copies &in,
                                             const dla__cu_copies &out, char *win, int is_out)
{
    const unsigned lanes = blockDim.x < DLA__CU_K1_LANES ? blockDim.x : DLA__CU_K1_LANES;
    dla__cu_deal_regions(c, lanes, K1_GROUP_BYTES, [&](int r, long long first, long long stride) {
        char *dst = c.dst[r];
        const char *src = c.src[r];
        if (win && is_out)
            src = k1_relocated((char *)src, in, out, win);
        else if (win)
            dst = k1_relocated(dst, in, out, win);
        dla__cu_copy_region(dst, src, c.bytes[r], first, stride);
    });
}

/* A fused step with only the slots it has located: fewer inputs and
 * extras than the frame's 8 and 7 cost fewer offsets an element (the same
 * values, and the same bits). */
template <typename T> __device__ __forceinline__ void fused_step(const dla_fmviews &v,
                                                                const dla_fprog &p)
{
    if (p.ninputs <= 2 && v.nextra == 0)
        dla_fused_multi_body<T, interp, 2, 0>(v, p);
    else if (p.ninputs <= 4 && v.nextra <= 1)
        dla_fused_multi_body<T, interp, 4, 1>(v, p);
    else
        dla_fused_multi_body<T, interp, 8, 7>(v, p);
}

/* The profile's clock and counters (DLACCEL_CUDA_K1_PROFILE): the
 * emulation has no SM clock, and counts the launches alone. */
#ifdef DLA__CU_EMU
static long long k1_clock(void)
{
    return 0;
}
static void k1_add(unsigned long long *c, unsigned long long v)
{
    __atomic_fetch_add(c, v, __ATOMIC_RELAXED);
}
#else
__device__ __forceinline__ long long k1_clock(void)
{
    return clock64();
}
__device__ __forceinline__ void k1_add(unsigned long long *c, unsigned long long v)
{
    atomicAdd(c, v);
}
#endif

/* The block's first thread adds the cycles since *t to counter slot, and
 * starts the next lap (after a barrier: the whole block's phase). */
__device__ __forceinline__ void k1_lap(unsigned long long *prof, int slot, long long *t)
{
    if (threadIdx.x == 0) {
        const long long now = k1_clock();
        k1_add(&prof[slot], (unsigned long long)(now - *t));
        *t = now;
    }
}

/* Programmatic dependent launch (DLACCEL_CUDA_K1_PDL=1, compute
 * capability 9.0 on): a replay's one kernel launched with
 * cudaLaunchAttributeProgrammaticStreamSerialization may start while the
 * kernel before it on the stream still runs, once that one has let it
 * (launch_dependents, which the one kernel does first thing). It stages
 * its steps, which nothing on the stream writes (uploaded and waited for
 * once, at capture), and then waits (griddepcontrol.wait: the kernel
 * before has ended and its writes are visible) before it touches any
 * other memory. So a loop of replays pays the launch and the staging of
 * the next one kernel while this one runs. Without that launch attribute,
 * or before sm_90, both are no-ops. */
__device__ __forceinline__ void k1_let_next_start(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

__device__ __forceinline__ void k1_wait_for_previous(void)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

/* steps[0 .. staged-1] are staged in dla__cu_k1_smem, 16 bytes a load
 * where steps allows it (the staging is the kernel's first latency: two
 * rounds of 8-byte loads for the tiny MLP's ten steps, one of 16), and
 * read from there. PROF: prof is the profile's counters (onekern_kern.h);
 * a kernel of its own, because its laps, even skipped, made the compiler
 * spill registers to local memory (ptxas -v: 36 bytes), every step. */
template <bool PROF>
__global__ void __launch_bounds__(DLA__CU_THREADS)
    onekern_k(const dla__cu_k1_step *steps, int32_t n, int32_t staged, const dla__cu_copies in,
              const dla__cu_copies out, unsigned long long *prof, const dla__cu_k1_reloc *rel,
              int32_t nrel)
{
    k1_let_next_start();
    long long lap = PROF ? k1_clock() : 0;
    const int64_t stage_bytes = (int64_t)staged * (int64_t)sizeof(dla__cu_k1_step);
    if ((uintptr_t)steps % 16 == 0) {
        dla__cu_copy_units<int4>((char *)dla__cu_k1_smem, (const char *)steps, stage_bytes / 16,
                                 threadIdx.x, blockDim.x);
        if (stage_bytes % 16 != 0 && threadIdx.x == blockDim.x - 1)
            ((int2 *)dla__cu_k1_smem)[stage_bytes / 8 - 1] =
                ((const int2 *)steps)[stage_bytes / 8 - 1];
    } else {
        dla__cu_copy_units<int2>((char *)dla__cu_k1_smem, (const char *)steps, stage_bytes / 8,
                                 threadIdx.x, blockDim.x);
    }
    /* Nothing before this line reads or writes what the stream's earlier
     * work does (k1_let_next_start). */
    k1_wait_for_previous();
    /* nrel >= 0: every step is staged, and the windows follow them
     * (onekern_kern.h): the staged steps' pointers are moved first. */
    char *win = NULL;
    if (nrel >= 0) {
        win = (char *)dla__cu_k1_smem + (stage_bytes + 15) / 16 * 16;
        __syncthreads();
        dla__cu_k1_step *st = (dla__cu_k1_step *)dla__cu_k1_smem;
        for (int32_t t = threadIdx.x; t < nrel; t += blockDim.x) {
            const dla__cu_k1_reloc e = rel[t];
            char **f = k1_pointer(st[e.step], e.field);
            *f = win + e.off + (*f - (char *)(uintptr_t)e.lo);
        }
    }
    block_copies(in, in, out, win, 0);
    __syncthreads();
    if (PROF)
        k1_lap(prof, 0, &lap);
    const dla__cu_k1_step *shared_steps = (const dla__cu_k1_step *)dla__cu_k1_smem;
    for (int32_t s = 0; s < n; s++) {
        const dla__cu_k1_step &st = s < staged ? shared_steps[s] : steps[s];
        if (st.kind == DLA__CU_K1_FUSED) {
            if (st.f64)
                fused_step<double>(st.u.fused.v, st.u.fused.p);
            else
                fused_step<float>(st.u.fused.v, st.u.fused.p);
        } else if (st.kind == DLA__CU_K1_REDUCE) {
            if (st.f64)
                reduce_step<double>(st.u.red);
            else
                reduce_step<float>(st.u.red);
        } else if (st.kind == DLA__CU_K1_GEMM) {
            if (st.f64)
                sgemm_body<double>(st.u.gemm);
            else
                sgemm_body<float>(st.u.gemm);
        } else {
            move_step(st.kind, st.u.move);
        }
        /* A barrier ends the phase unless the next step joins it
         * (dla__cu_k1_join: it shares no byte with the phase that either
         * writes); a joined step's cycles count with the phase's last. */
        if (s + 1 < n && (s + 1 < staged ? shared_steps[s + 1] : steps[s + 1]).join)
            continue;
        __syncthreads();
        if (PROF)
            k1_lap(prof, 1 + (s < DLA__CU_K1_PROF_STEPS ? s : DLA__CU_K1_PROF_STEPS - 1), &lap);
    }
    block_copies(out, in, out, win, 1);
    if (PROF) {
        __syncthreads();
        k1_lap(prof, DLA__CU_K1_PROF_OUT, &lap);
        if (threadIdx.x == 0)
            k1_add(&prof[DLA__CU_K1_PROF_LAUNCHES], 1);
    }
}

} // namespace

/* The launchers; tests/cuda_onekern_emu.cpp compiles the kernels above
 * for the CPU and launches them its own way. */
#ifndef DLA__CU_EMU
extern "C" cudaError_t dla__cu_sgemm_launch(cudaStream_t stream, unsigned blocks,
                                            const dla__cu_sgemm *g)
{
    if (g->f64)
        sgemm_k<double><<<blocks, DLA__CU_THREADS, 0, stream>>>(*g);
    else
        sgemm_k<float><<<blocks, DLA__CU_THREADS, 0, stream>>>(*g);
    return cudaGetLastError();
}

/* A one kernel's launch: one block of DLA__CU_THREADS, smem bytes of
 * dynamic shared memory, a programmatic dependent launch when early (*at:
 * the attribute's storage, zeroed). */
static cudaLaunchConfig_t k1_config(cudaStream_t stream, size_t smem, int early,
                                    cudaLaunchAttribute *at)
{
    at->id = cudaLaunchAttributeProgrammaticStreamSerialization;
    at->val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(1);
    cfg.blockDim = dim3(DLA__CU_THREADS);
    cfg.dynamicSmemBytes = smem;
    cfg.stream = stream;
    cfg.attrs = at;
    cfg.numAttrs = early ? 1 : 0;
    return cfg;
}

/* The steps of n staged in shared memory: as many as 48 KiB hold, which
 * a block may use as dynamic shared memory on every architecture without
 * asking. */
static int32_t staged_of(int32_t n)
{
    const int32_t fit = (int32_t)(48 * 1024 / sizeof(dla__cu_k1_step));
    return n < fit ? n : fit;
}

extern "C" cudaError_t dla__cu_k1_launch(cudaStream_t stream, const dla__cu_k1_step *steps,
                                         int32_t n, const dla__cu_copies *in,
                                         const dla__cu_copies *out, unsigned long long *prof,
                                         int how, const dla__cu_k1_win *win)
{
    const int32_t staged = staged_of(n);
    size_t smem = (size_t)staged * sizeof(dla__cu_k1_step);
    /* The windows when every step is staged and they fit beside them in
     * the 48 KiB (dla__cu_k1_windows kept to that budget). */
    const dla__cu_k1_reloc *rel = NULL;
    int32_t nrel = -1;
    if (win && win->nrel >= 0 && staged == n &&
        (smem + 15) / 16 * 16 + (size_t)win->bytes <= 48 * 1024) {
        smem = (smem + 15) / 16 * 16 + (size_t)win->bytes;
        rel = win->rel;
        nrel = win->nrel;
    }
    if (how & DLA__CU_K1_EARLY) {
        cudaLaunchAttribute at = {};
        const cudaLaunchConfig_t cfg = k1_config(stream, smem, 1, &at);
        if (prof)
            return cudaLaunchKernelEx(&cfg, onekern_k<true>, steps, n, staged, *in, *out, prof,
                                      rel, nrel);
        return cudaLaunchKernelEx(&cfg, onekern_k<false>, steps, n, staged, *in, *out, prof, rel,
                                  nrel);
    }
    if (prof)
        onekern_k<true><<<1, DLA__CU_THREADS, smem, stream>>>(steps, n, staged, *in, *out, prof,
                                                              rel, nrel);
    else
        onekern_k<false><<<1, DLA__CU_THREADS, smem, stream>>>(steps, n, staged, *in, *out, prof,
                                                               rel, nrel);
    return cudaGetLastError();
}

extern "C" cudaError_t dla__cu_k1c_launch(cudaStream_t stream, const dla__cu_k1c *c,
                                          const dla__cu_copies *in, const dla__cu_copies *out,
                                          unsigned long long *prof, int how)
{
    dla__cu_copies i = *in, o = *out;
    int negop = DLA_UNARY_NEG;
    void *args[] = {(void *)&i, (void *)&o, (void *)&prof, (void *)&negop};
    cudaLaunchAttribute at = {};
    const cudaLaunchConfig_t cfg = k1_config(stream, 0, how & DLA__CU_K1_EARLY, &at);
    const cudaError_t e = cudaLaunchKernelExC(&cfg, (const void *)c->kernel, args);
    const cudaError_t last = cudaGetLastError(); /* clears it either way */
    return e != cudaSuccess ? e : last;
}

extern "C" cudaError_t dla__cu_k1_node(cudaGraph_t graph, const cudaGraphNode_t *deps,
                                       size_t ndeps, const dla__cu_k1_step *steps, int32_t n,
                                       cudaGraphNode_t *node)
{
    int32_t staged = staged_of(n);
    dla__cu_copies none;
    memset(&none, 0, sizeof none);
    unsigned long long *prof = NULL;
    const dla__cu_k1_reloc *rel = NULL;
    int32_t nrel = -1;
    void *args[] = {(void *)&steps, (void *)&n,    (void *)&staged, (void *)&none,
                    (void *)&none,  (void *)&prof, (void *)&rel,    (void *)&nrel};
    cudaKernelNodeParams p = {};
    p.func = (void *)onekern_k<false>;
    p.gridDim = dim3(1);
    p.blockDim = dim3(DLA__CU_THREADS);
    p.sharedMemBytes = (unsigned)((size_t)staged * sizeof(dla__cu_k1_step));
    p.kernelParams = args;
    return cudaGraphAddKernelNode(node, graph, deps, ndeps, &p);
}
#endif
