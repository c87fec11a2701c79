/*
 * cuda_fused_emu.cpp - the cuda plugin's fused, fused_multi and
 * fused_reduce kernels run on the CPU, against their steps one by one, bit
 * for bit (no GPU needed).
 *
 * What runs is the plugin's own code: fused.c's members (the kit's checks,
 * the coalesced space of space.c, the slots, the 32-bit choice) call the
 * launchers, which this file replaces by a loop over the grid's blocks and
 * threads calling the kernel as one thread (cuda_fused_emu_shim.h gives
 * blockIdx and threadIdx); the kernel is the frame of fused_kern.h
 * (DLA__CU_FUSED_FRAME, DLA__CU_FMULTI_FRAME) with its interpreter
 * (DLA__CU_FUSED_INTERP), as fused_kernels.cu expands them, or a compiled
 * program: the source fused_source.c writes for NVRTC, compiled here by
 * the host compiler (tests/cuda_fused_emu_write writes it), found by its
 * key as nvrtc.c finds a compiled program. Only the one-line __global__
 * wrappers of fused_kernels.cu are restated (fused_k, fused_multi_k).
 *
 * The reference: each step of the program with the plugin_ops.h function
 * the unary / binary kernels call, element by element over y's dims, from
 * the inputs as they were; y and the extras written at their views'
 * offsets in an image of each buffer. Every byte of every buffer (gaps,
 * the offset's prefix and a tail past the views included) must then
 * equal its image. The arithmetic is the host's on both sides, so what
 * this proves is the kernels' indexing and wiring: the views' offsets on
 * both index paths, the slots of inputs and extras, the grid-stride loop
 * (the grid is capped at 32 blocks per multiprocessor, and the device has
 * 2: 16384 threads for up to 40000 elements), the registers each result
 * takes, and an input that is y or an extra itself being read before it
 * is written. What the device's arithmetic gives is tools/conformance's
 * business (dlaccel check-plugin on a GPU).
 *
 * Cases: 4 programs (1..8 inputs, 1..7 extras) x f32, f64 x fused,
 * fused_multi x 6 shapes (1-D, 3-D, 4-D with a dim of 1, a scalar, an
 * empty one) x 3 layouts (dense; inputs with an offset, padded,
 * reversed, broadcast along a dim and broadcast as a scalar, results
 * with an offset, padded, reversed; the same with y the very view of
 * input 0 and extra 0 that of input 1) x 64-bit indexing, 32-bit, and
 * 32-bit with the operands' layout compiled in (dla__cu_lay_of; the
 * compiled programs here read its words from the launch at hand, where
 * NVRTC's have them as constants) x the interpreter and a compiled program
 * with its ops read from the argument and written as constants (2592
 * cases); that the layouts reaching compiled kernels held every kind of
 * operand (dense, as an earlier one, walked with dims of stride 0 left
 * out, walked), and the words of a batch normalization's views (2 cases);
 * fused_reduce (fused_reduce.c's members, the frames' block, thread and
 * combine kernels; 448 cases and their coverage, fr_cases), the block
 * kernel's threads at once on a team of host threads that meet at its
 * barriers; and fused_multi with
 * an input, an extra or both at offsets past INT_MAX (sparse memory),
 * where fused.c must choose 64-bit indexing, interpreted and compiled (6).
 * main then runs tests/cuda_onekern_emu.cpp's cases (the small GEMM and
 * the one-kernel replay, 40), and space.c's CUDA errors as messages (10:
 * which carry the note that a kernel queued before the call may have
 * failed while running).
 */
#include "plugins/cuda/fused_kern.h"

#include "tests/cuda_fused_emu.h"
#include "tests/cuda_fused_emu_shim.h"

#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <pthread.h>
#include <sys/mman.h>
#include <thread>
#include <vector>

emu_dim blockIdx, blockDim, gridDim;
__thread emu_dim threadIdx;
/* fused_kern.h's block kernel's dynamic shared memory (its launcher asks
 * for a pair of doubles for each of at most 256 threads). */
double dla_fr_sm[2 * DLA__CU_FR_THREADS];

DLA__CU_FUSED_FRAME(DLA__CU_ID)
DLA__CU_FMULTI_FRAME(DLA__CU_ID)

namespace {

DLA__CU_FUSED_INTERP(DLA__CU_ID)

/* fused_kernels.cu's interpreted kernels. */
template <typename T> void fused_k(dla_fviews a, dla_fprog p)
{
    dla_fused_body<T, interp, 8>(a, p);
}

template <typename T> void fused_multi_k(dla_fmviews a, dla_fprog p)
{
    dla_fused_multi_body<T, interp, 8, 7>(a, p);
}

/* ------------------------------------------------------- the test's state */

/* 0: interpret; 1: the compiled program, ops written as constants; 2:
 * the compiled program, ops read from the argument. */
int g_mode;
/* What the last launch saw. */
struct {
    int launches;
    int compiled;
    int missing; /* a compiled program the written source lacks */
    unsigned grid;
    int flags;
    long long n;
} g_seen;
int g_errors;
/* What the last fused_reduce call launched, and what all of them did. */
struct {
    int launches, combines, thread, rows, compiled;
    long long parts;
} g_fr_seen;
struct {
    int rows, walk, thread, parts;
} g_fr_cover;

/* The block kernel's shared memory (fused_kern.h's dla_fr_sm, at most 256
 * threads' pairs of doubles), and the barrier of the block whose threads
 * run at once. */
pthread_barrier_t *g_barrier;



/* The layout words of the compiled launch at hand (emu_lay_rt), and what
 * the compiled launches' layouts held, over the whole run. */
unsigned g_lay[DLA__CU_LAY_WORDS];
struct {
    int with_layout, dense, same, zero, walked;
} g_lay_seen;

void note_layout(const dla__cu_fused_key_t &k0)
{
    const int32_t *lay = k0.lay;
    if (!lay[0])
        return;
    g_lay_seen.with_layout++;
    for (int k = 0; k < DLA__CU_FMOPS; k++) {
        if (k > k0.ninputs && (k < DLA__CU_FM_X0 || k >= DLA__CU_FM_X0 + k0.nextra))
            continue; /* no operand in this slot */
        const unsigned w = (unsigned)lay[1 + k];
        const int dense = (w >> DLA__CU_LAY_DENSE_BIT) & 1, same = (w >> DLA__CU_LAY_SAME_SHIFT) != 0;
        g_lay_seen.dense += dense;
        g_lay_seen.same += same;
        g_lay_seen.zero += !dense && !same && (w & 0xff) != 0;
        g_lay_seen.walked += !dense && !same && (w & 0xff) != (1u << lay[0]) - 1;
    }
}

/* The written program of key k (whose keys hold no layout: their kernels
 * read k's from g_lay). */
const emu_gen *find_compiled(const dla__cu_fused_key_t &k)
{
    int32_t key[EMU_KEY_INTS];
    static_assert(sizeof k <= sizeof key, "the key fits emu_gen's");
    dla__cu_fused_key_t bare = k;
    memset(bare.lay, 0, sizeof bare.lay);
    memset(key, 0, sizeof key);
    memcpy(key, &bare, sizeof bare);
    for (int g = 0; g < emu_ngens; g++)
        if (emu_gens[g].constops == (g_mode == 1) && !memcmp(emu_gens[g].key, key, sizeof key)) {
            for (int i = 0; i < DLA__CU_LAY_WORDS; i++)
                g_lay[i] = (unsigned)k.lay[i];
            note_layout(k);
            return &emu_gens[g];
        }
    g_seen.missing++;
    return nullptr;
}

void h_log(dla_log_level level, const char *fmt, ...)
{
    (void)level;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

char g_last_error[1024];

dla_status h_error(dla_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_last_error, sizeof g_last_error, fmt, ap);
    va_end(ap);
    printf("# error: %s\n", g_last_error);
    g_errors++;
    return s;
}

void *h_alloc(size_t n, size_t align)
{
    (void)align;
    return malloc(n);
}

void h_free(void *p)
{
    free(p);
}

const dla_plugin_host host = {sizeof(dla_plugin_host), DLA_PLUGIN_ABI_MAJOR, DLA_PLUGIN_ABI_MINOR,
                              h_log, h_error, h_alloc, h_free};

} // namespace

/* tests/cuda_kernels_emu.cpp's blocks whose threads run at once. */
void emu_set_barrier(pthread_barrier_t *b)
{
    g_barrier = b;
}

void __syncthreads(void)
{
    if (g_barrier)
        pthread_barrier_wait(g_barrier);
}

/* The threads that run a block whose kernel has barriers, made once
 * (main): each waits at start, runs the job as thread t of the block
 * if t < active, and meets the others and the caller at done. */
namespace {
struct team {
    std::vector<std::thread> th;
    pthread_barrier_t start, done;
    const std::function<void()> *job = nullptr;
    unsigned active = 0;
    bool quit = false;
} g_team;
} // namespace

void emu_team_open()
{
    pthread_barrier_init(&g_team.start, nullptr, EMU_TEAM + 1);
    pthread_barrier_init(&g_team.done, nullptr, EMU_TEAM + 1);
    for (unsigned t = 0; t < EMU_TEAM; t++)
        g_team.th.emplace_back([t] {
            for (;;) {
                pthread_barrier_wait(&g_team.start);
                if (g_team.quit)
                    return;
                if (t < g_team.active) {
                    threadIdx.x = t;
                    (*g_team.job)();
                }
                pthread_barrier_wait(&g_team.done);
            }
        });
}

void emu_team_close()
{
    g_team.quit = true;
    pthread_barrier_wait(&g_team.start);
    for (auto &x : g_team.th)
        x.join();
    g_team.th.clear();
    pthread_barrier_destroy(&g_team.start);
    pthread_barrier_destroy(&g_team.done);
}

void emu_run_blocks(unsigned grid, unsigned threads, const std::function<void()> &one)
{
    gridDim.x = grid;
    blockDim.x = threads;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, nullptr, threads);
    g_barrier = &bar;
    g_team.job = &one;
    g_team.active = threads;
    for (unsigned b = 0; b < grid; b++) {
        blockIdx.x = b;
        pthread_barrier_wait(&g_team.start);
        pthread_barrier_wait(&g_team.done);
    }
    g_barrier = nullptr;
    pthread_barrier_destroy(&bar);
}

unsigned emu_lay_rt::w(int i)
{
    return i >= 0 && i < DLA__CU_LAY_WORDS ? g_lay[i] : 0u;
}

/* -------------------------------- what fused.c and space.c call, replaced */
/* A launch of grid blocks: the compiled program kernel (an emu_gen), else
 * the interpreter kernel of the dtype (kf, kd), each thread in turn; what
 * it was asked is noted in g_seen. */
template <typename V, typename KF, typename KD>
static cudaError_t emulate(unsigned grid, int f64, const V *a, const dla_fprog *p,
                           const void *kernel, KF kf, KD kd)
{
    g_seen.launches++;
    g_seen.compiled = kernel != NULL;
    g_seen.grid = grid;
    g_seen.flags = p->flags;
    g_seen.n = a->sp.n;
    const emu_gen *g = (const emu_gen *)kernel;
    if (g)
        emu_run_grid(grid, DLA__CU_THREADS, [&] { g->run(a, p); });
    else if (f64)
        emu_run_grid(grid, DLA__CU_THREADS, [&] { kd(*a, *p); });
    else
        emu_run_grid(grid, DLA__CU_THREADS, [&] { kf(*a, *p); });
    return cudaSuccess;
}

extern "C" {

const dla_plugin_host *dla__cu_host = &host;
dla_kit dla__cu_kit;
__thread const struct dla__cu_graph *dla__cu_remap;

char *dla__cu_remapped(dla_mem m)
{
    (void)m;
    abort(); /* no capture here */
}

size_t dla__cu_mem_bytes(dla_mem m)
{
    return ((dla__cu_mem *)m)->bytes;
}

/* fused and fused_multi take no scratch: memory only for the one
 * kernel's steps (cuda_onekern_emu.cpp). */
dla_status dla__cu_mem_alloc(void *dev, size_t bytes, dla_mem *out)
{
    (void)dev;
    *out = NULL;
    if (!emu_alloc_allowed)
        return DLA_ERR_OUT_OF_MEMORY;
    dla__cu_mem *m = (dla__cu_mem *)calloc(1, sizeof *m + bytes);
    if (!m)
        return DLA_ERR_OUT_OF_MEMORY;
    emu_allocs++;
    m->ptr = (char *)(m + 1);
    m->bytes = m->cap = bytes;
    *out = (dla_mem)m;
    return DLA_OK;
}

/* Blocks given back to the pool while a plan is captured: a kernel the
 * graph holds may still use one on every replay, so plan.c's
 * dla__cu_scratch_done keeps scratch until the graph goes. */
int emu_freed_capturing;
/* Blocks dla__cu_mem_alloc gave, ever. */
int emu_allocs;

void dla__cu_mem_free(void *dev, dla_mem mem)
{
    if (dev && mem && ((dla__cu_device *)dev)->capturing)
        emu_freed_capturing++;
    free(mem);
}

/* The runtime calls of space.c (no CUDA library is linked). */
cudaError_t cudaSetDevice(int device)
{
    (void)device;
    return cudaSuccess;
}

/* The thread's last error, as the runtime keeps it: a failed call sets
 * it (the graph model's queries do), cudaGetLastError reads and clears
 * it. */
int emu_last_error;

cudaError_t cudaGetLastError(void)
{
    const cudaError_t e = (cudaError_t)emu_last_error;
    emu_last_error = cudaSuccess;
    return e;
}

const char *cudaGetErrorString(cudaError_t e)
{
    (void)e;
    return "an emulated error";
}

const char *cudaGetErrorName(cudaError_t e)
{
    (void)e;
    return "cudaErrorEmulated";
}

/* No NVRTC here: onekern.c's compiled one kernels are not built (their
 * source goes through NVRTC in tests/cuda_fused_source, and through the
 * host compiler in cuda_onekern_emu.cpp's chain test); the tries are
 * counted. */
int emu_nvrtc_builds;
int dla__cu_nvrtc_build(dla__cu_device *d, const char *body, const char *what,
                        const char *const *names, int nk, cudaLibrary_t *lib, cudaKernel_t *k,
                        char *why, size_t why_size)
{
    (void)d;
    (void)body;
    (void)what;
    (void)names;
    (void)nk;
    (void)k;
    *lib = NULL;
    emu_nvrtc_builds++;
    snprintf(why, why_size, "no NVRTC in the emulation");
    return 0;
}

cudaError_t cudaLibraryUnload(cudaLibrary_t lib)
{
    (void)lib;
    return cudaSuccess;
}

int dla__cu_fused_compiled(dla__cu_device *d, const dla_fused_args *a, int kind, int reg2,
                           const int32_t *lay, const void **k1, const void **k2)
{
    (void)d;
    *k1 = *k2 = NULL;
    if (g_mode == 0)
        return 0;
    dla__cu_fused_key_t k;
    dla__cu_fused_key(a, kind, reg2, &k);
    if (lay)
        memcpy(k.lay, lay, sizeof k.lay);
    /* A reduce's two kernels are one emu_gen's run and run2 (the
     * launcher knows which it launches). */
    *k1 = *k2 = find_compiled(k);
    return *k1 != NULL;
}

int dla__cu_fused_multi_compiled(dla__cu_device *d, const dla_fused_multi_args *m,
                                 const int32_t *lay, const void **k1)
{
    (void)d;
    *k1 = NULL;
    if (g_mode == 0)
        return 0;
    dla__cu_fused_key_t k;
    dla__cu_fused_multi_key(m, &k);
    if (lay)
        memcpy(k.lay, lay, sizeof k.lay);
    *k1 = find_compiled(k);
    return *k1 != NULL;
}

cudaError_t dla__cu_fused_launch(cudaStream_t st, unsigned grid, int f64, const dla_fviews *a,
                                 const dla_fprog *p, const void *kernel)
{
    (void)st;
    return emulate(grid, f64, a, p, kernel, fused_k<float>, fused_k<double>);
}

cudaError_t dla__cu_fused_multi_launch(cudaStream_t st, unsigned grid, int f64,
                                       const dla_fmviews *a, const dla_fprog *p,
                                       const void *kernel)
{
    (void)st;
    return emulate(grid, f64, a, p, kernel, fused_multi_k<float>, fused_multi_k<double>);
}

/* fused_reduce.c's launches. Both kernels loop over the grid's blocks
 * (grid-stride), so a few blocks compute every output whatever grid was
 * asked: at most 2 run here. The block kernel's threads run at once, with
 * its barriers (emu_run_blocks), at most 32 of them: it reads its block's
 * size from blockDim, any power of two up to the launch's (each thread of
 * its own costs the host some 10 us); the thread kernel's and the parts'
 * combine's run one by one. */
cudaError_t dla__cu_fr_launch(cudaStream_t st, int thread, unsigned grid, unsigned block, int f64,
                              int pair, const dla_fr *f, const dla_fprog *p, const void *kernel)
{
    (void)st;
    g_fr_seen.launches++;
    g_fr_seen.thread = thread;
    g_fr_seen.rows = (f->flags & DLA__CU_FR_ROWS) != 0;
    g_fr_seen.compiled = kernel != NULL;
    g_fr_seen.parts = f->parts;
    const emu_gen *g = (const emu_gen *)kernel;
    const unsigned blocks = grid < 2 ? grid : 2;
    if (thread) {
        emu_run_grid(blocks, DLA__CU_THREADS, [&] {
            if (g)
                g->run2(f, p);
            else if (f64)
                pair ? dla_fr_thread_body<double, interp, 8, 1>(*f, *p)
                     : dla_fr_thread_body<double, interp, 8, 0>(*f, *p);
            else
                pair ? dla_fr_thread_body<float, interp, 8, 1>(*f, *p)
                     : dla_fr_thread_body<float, interp, 8, 0>(*f, *p);
        });
    } else {
        emu_run_blocks(blocks, block < EMU_TEAM ? block : EMU_TEAM, [&] {
            if (g)
                g->run(f, p);
            else if (f64)
                pair ? dla_fr_block_body<double, interp, 8, 1>(*f, *p)
                     : dla_fr_block_body<double, interp, 8, 0>(*f, *p);
            else
                pair ? dla_fr_block_body<float, interp, 8, 1>(*f, *p)
                     : dla_fr_block_body<float, interp, 8, 0>(*f, *p);
        });
    }
    return cudaSuccess;
}

cudaError_t dla__cu_fr_combine(cudaStream_t st, unsigned grid, int f64, int pair, const dla_fr *f)
{
    (void)st;
    g_fr_seen.combines++;
    emu_run_grid(grid < 2 ? grid : 2, DLA__CU_THREADS, [&] {
        if (f64)
            pair ? dla_fr_combine_body<double, 1>(*f) : dla_fr_combine_body<double, 0>(*f);
        else
            pair ? dla_fr_combine_body<float, 1>(*f) : dla_fr_combine_body<float, 0>(*f);
    });
    return cudaSuccess;
}

/* plan.c's: a scratch block back, at once unless a plan is captured,
 * whose graph keeps it until it goes, and whose later members may take it
 * again (d->scratch_free: space.c's dla__cu_scratch looks there first). */
void dla__cu_scratch_done(dla__cu_device *d, dla__cu_mem *mem)
{
    if (d->capturing && dla__cu_planning_here(d)) {
        mem->next = d->scratch_free;
        d->scratch_free = mem;
        return;
    }
    dla__cu_mem_free(d, (dla_mem)mem);
}

} // extern "C"

namespace {

/* ----------------------------------------------------------- the reference */

/* A buffer: the "device" memory the kernels see (m.ptr into data) and the
 * image the reference writes. */
struct buf {
    dla__cu_mem m;
    std::vector<unsigned char> data, ref;
};

unsigned long long rng = 88172645463325252ULL;
double rnd()
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng % 2000001) / 1000000.0 - 1.0; /* [-1, 1] */
}

/* Layouts: dense; dense after an offset; padded (dims 0 and 1 by 1 and
 * 2); reversed (the last dim fastest); broadcast along dim 1; broadcast
 * as a scalar (every stride 0); broadcast along dim 0 (a row read down
 * every column: the planner's outer products, C = a b', read b so). */
enum { L_DENSE, L_OFFSET, L_PADDED, L_REVERSED, L_BCAST, L_SCALAR, L_BCAST0, L_COUNT };

/* View v of dims with strides st (elements) after offset elements over
 * buffer b, made anew, span elements long before a tail (fill: the byte
 * of a result's buffer; inputs get random values, FILL_INTS small
 * integers, whose sums in double are exact in any order). */
enum { FILL_RANDOM = -1, FILL_INTS = -2 };
void make_view_strided(buf &b, dla_view &v, int nd, const int64_t *dims, const int64_t *st,
                       int64_t offset, int64_t span, dla_dtype dt, int fill)
{
    const int dsz = (int)dla_kit_dtype_size(dt);
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.dtype = dt;
    v.ndims = nd;
    v.offset = offset;
    for (int d = 0; d < nd; d++) {
        v.dims[d] = dims[d];
        v.strides[d] = st[d];
    }
    const size_t bytes = (size_t)(offset + span + 5) * dsz;
    b.data.assign(bytes, (unsigned char)fill);
    if (fill < 0)
        for (size_t e = 0; e < bytes / dsz; e++) {
            const double x = fill == FILL_INTS ? (double)((int)((rnd() + 1.0) * 8.5) - 8) : rnd();
            if (dt == DLA_F64)
                memcpy(&b.data[e * dsz], &x, sizeof x);
            else {
                const float f = (float)x;
                memcpy(&b.data[e * dsz], &f, sizeof f);
            }
        }
    b.ref = b.data;
    b.m.ptr = (char *)b.data.data();
    b.m.bytes = b.m.cap = bytes;
    b.m.next = NULL;
    v.mem = (dla_mem)&b.m;
}

/* View v of dims in layout lk over buffer b, made anew (fill as above). */
void make_view(buf &b, dla_view &v, int nd, const int64_t *dims, int lk, dla_dtype dt,
               int fill)
{
    int64_t st = 1, strides[DLA_MAX_DIMS] = {0};
    if (lk == L_REVERSED) {
        for (int d = nd - 1; d >= 0; d--) {
            strides[d] = st;
            st *= dims[d];
        }
    } else {
        for (int d = 0; d < nd; d++) {
            if ((lk == L_BCAST && d == 1) || (lk == L_BCAST0 && d == 0) || lk == L_SCALAR)
                continue;
            strides[d] = st;
            st *= dims[d] + (lk == L_PADDED && d < 2 ? d + 1 : 0);
        }
    }
    make_view_strided(b, v, nd, dims, strides, lk == L_DENSE ? 0 : 3, st, dt, fill);
}

float unary(int op, float x, double al, double be)
{
    return dla_ops_unary_f32(op, x, (float)al, (float)be);
}
double unary(int op, double x, double al, double be)
{
    return dla_ops_unary_f64(op, x, al, be);
}
float binary(int op, float a, float b)
{
    return dla_ops_binary_f32(op, a, b);
}
double binary(int op, double a, double b)
{
    return dla_ops_binary_f64(op, a, b);
}

int64_t offset_of(const dla_view &v, const int64_t *ix)
{
    int64_t o = v.offset;
    for (int d = 0; d < v.ndims; d++)
        o += ix[d] * v.strides[d];
    return o;
}

/* The registers of program a at element ix, its steps one by one. */
template <typename T> void steps(const dla_fused_args &a, const int64_t *ix, T *r)
{
    for (int j = 0; j < a.ninsns; j++) {
        const dla_fused_insn &s = a.insns[j];
        T o[3] = {0, 0, 0};
        for (int k = 0; k < dla_kit_fused_nsrc(s.kind); k++) {
            const int src = s.src[k];
            if (src >= 0) {
                o[k] = r[src];
            } else {
                const dla_view &v = a.inputs[-1 - src];
                memcpy(&o[k], dla__cu_ptr(v.mem) + offset_of(v, ix) * sizeof(T), sizeof(T));
            }
        }
        if (s.kind == DLA_FUSED_UNARY)
            r[j] = unary(s.op, o[0], s.alpha, s.beta);
        else if (s.kind == DLA_FUSED_BINARY)
            r[j] = binary(s.op, o[0], o[1]);
        else
            r[j] = o[0] != (T)0 ? o[1] : o[2];
    }
}

/* Writes r into the image ref of the buffer of view v at element ix. */
template <typename T> void put(const dla_view &v, const int64_t *ix, T x)
{
    buf *b = (buf *)(void *)v.mem; /* m is buf's first member */
    memcpy(&b->ref[offset_of(v, ix) * sizeof(T)], &x, sizeof x);
}

/* The results of m (nextra < 0: a plain fused call, y only) in the
 * buffers' images, from the inputs as they are now. */
template <typename T> void reference(const dla_fused_multi_args &m, int multi)
{
    const dla_fused_args &a = m.program;
    int64_t n = 1;
    for (int d = 0; d < a.y.ndims; d++)
        n *= a.y.dims[d];
    std::vector<T> out((size_t)n * (1 + DLA_FUSED_MAX_EXTRA));
    /* All first (y or an extra may be an input), then stored. */
    for (int pass = 0; pass < 2; pass++)
        for (int64_t p = 0; p < n; p++) {
            int64_t ix[DLA_MAX_DIMS] = {0}, q = p;
            for (int d = 0; d < a.y.ndims; d++) {
                ix[d] = q % a.y.dims[d];
                q /= a.y.dims[d];
            }
            T *o = &out[(size_t)p * (1 + DLA_FUSED_MAX_EXTRA)];
            if (pass == 0) {
                T r[DLA_FUSED_MAX_INSNS];
                steps<T>(a, ix, r);
                o[0] = r[a.ninsns - 1];
                for (int k = 0; multi && k < m.nextra; k++)
                    o[1 + k] = r[m.extra_reg[k]];
                continue;
            }
            put<T>(a.y, ix, o[0]);
            for (int k = 0; multi && k < m.nextra; k++)
                put<T>(m.extra[k], ix, o[1 + k]);
        }
}

/* off32: 0 64-bit indexing, 1 32-bit where it fits, 2 that and the
 * layout compiled in. */
void new_device(dla__cu_device &d, int off32)
{
    memset(&d, 0, sizeof d);
    d.kit.host = dla__cu_host;
    d.kit.name = "cuda";
    d.kit.mem_bytes = dla__cu_mem_bytes;
    d.sms = 2; /* at most 64 blocks (dla__cu_blocks): the grid-stride loop wraps */
    d.fused_off32 = off32 != 0;
    d.fused_layout = off32 == 2;
}

int ntests, nfailed;

void result(int ok, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf("%s %d - ", ok ? "ok" : "not ok", ++ntests);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    nfailed += !ok;
}

/* One case; its line. */
void one_case(int prog, int f64, int multi, int shape, int lay, int off32, int mode)
{
    static const int64_t shapes[][4] = {{20}, {40000}, {5, 7, 3}, {0}, {33, 1, 65, 2}, {6, 0, 2}};
    static const int nds[] = {1, 1, 3, 0, 4, 3};
    static const char *const lays[] = {"dense", "strided", "aliased"};
    static const char *const modes[] = {"interpreted", "compiled", "compiled (ops read)"};
    static const char *const indexing[] = {"64-bit indexing", "32-bit indexing",
                                           "32-bit indexing, layout compiled in"};
    const dla_dtype dt = f64 ? DLA_F64 : DLA_F32;
    dla_fused_multi_args m;
    emu_program(prog, f64, &m);
    dla_fused_args &a = m.program;
    const int nd = nds[shape];
    const int64_t *dims = shapes[shape];
    buf bufs[1 + DLA_FUSED_MAX_INPUTS + DLA_FUSED_MAX_EXTRA];
    int nb = 0;
    for (int i = 0; i < a.ninputs; i++) {
        /* Inputs 0 and 1 become y and extra 0 in the aliased layout:
         * never stride 0 there (the ABI: no output view has one). */
        const int lk = lay == 0                 ? L_DENSE
                       : lay == 2 && i < 2 ? L_OFFSET + (i + prog) % 3
                                           : L_OFFSET + (i + prog) % (L_COUNT - 1);
        make_view(bufs[nb++], a.inputs[i], nd, dims, lk, dt, -1);
    }
    if (lay == 2)
        a.y = a.inputs[0]; /* the very same view */
    else
        make_view(bufs[nb++], a.y, nd, dims, lay == 0 ? L_DENSE : L_PADDED, dt, 0xab);
    if (!multi)
        m.nextra = 0;
    for (int k = 0; k < m.nextra; k++) {
        if (lay == 2 && k == 0 && a.ninputs >= 2) {
            m.extra[0] = a.inputs[1]; /* an extra may be an input itself */
            continue;
        }
        static const int res[] = {L_OFFSET, L_PADDED, L_REVERSED};
        make_view(bufs[nb++], m.extra[k], nd, dims, lay == 0 ? L_DENSE : res[k % 3], dt,
                  0xcd);
    }
    if (f64)
        reference<double>(m, multi);
    else
        reference<float>(m, multi);
    dla__cu_device d;
    new_device(d, off32);
    g_mode = mode;
    memset(&g_seen, 0, sizeof g_seen);
    const int errors = g_errors;
    const dla_status s = multi ? dla__cu_fused_multi(&d, &m) : dla__cu_fused(&d, &a);
    int64_t n = 1;
    for (int k = 0; k < nd; k++)
        n *= dims[k];
    int ok = s == DLA_OK && g_errors == errors && !g_seen.missing;
    /* What the launch was meant to be: one launch (none when empty), the
     * kernel asked for, 32-bit indexing when allowed (these views are
     * small), a grid that covers n or wraps. */
    if (n > 0)
        ok = ok && g_seen.launches == 1 && g_seen.compiled == (mode != 0) && g_seen.n == n &&
             (g_seen.flags == (off32 ? DLA__CU_F_OFF32 : 0)) &&
             (g_seen.grid == (unsigned)((n + DLA__CU_THREADS - 1) / DLA__CU_THREADS) ||
              g_seen.grid == 64);
    else
        ok = ok && g_seen.launches == 0;
    if (!ok)
        printf("# status %d, %d launches, compiled %d (%d missing), flags %d, n %lld, grid %u\n",
               (int)s, g_seen.launches, g_seen.compiled, g_seen.missing, g_seen.flags,
               g_seen.n, g_seen.grid);
    for (int b = 0; b < nb; b++)
        if (bufs[b].data != bufs[b].ref) {
            size_t e = 0;
            while (bufs[b].data[e] == bufs[b].ref[e])
                e++;
            const size_t dsz = dla_kit_dtype_size(dt);
            printf("# buffer %d differs first at element %zu\n", b, e / dsz);
            ok = 0;
        }
    result(ok, "%s program %d %s %s, %dD %lld elements%s, %s, %s, %s",
           multi ? "fused_multi" : "fused", prog, f64 ? "f64" : "f32", lays[lay], nd, (long long)n,
           n > (int64_t)64 * DLA__CU_THREADS ? " (the grid wraps)" : "",
           indexing[off32], modes[mode],
           multi ? "y and extras" : "y");
}

/* fused_multi over views whose offsets pass INT_MAX (in sparse memory):
 * input 1 (wide 1), extra 0 (wide 2) or both (3); fused.c must choose
 * 64-bit indexing although the device allows 32-bit. */
void wide_case(int wide, int mode)
{
    const int64_t big = (int64_t)1 << 30; /* elements: dim 1's stride */
    const int64_t dims[2] = {3, 4};
    const size_t wide_bytes = (size_t)(3 * big + 16) * sizeof(float);
    const char *const what[] = {"", "an input", "an extra", "an input and an extra"};
    void *w[2];
    for (int k = 0; k < 2; k++) {
        w[k] = mmap(NULL, wide_bytes, PROT_READ | PROT_WRITE,
                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (w[k] == MAP_FAILED) {
            if (k)
                munmap(w[0], wide_bytes);
            printf("ok %d # SKIP fused_multi past INT_MAX: no %zu bytes of address space\n",
                   ++ntests, wide_bytes);
            return;
        }
    }
    dla_fused_multi_args m;
    emu_program(0, 0, &m); /* 3 inputs, extra 0 = register 1 */
    dla_fused_args &a = m.program;
    buf bufs[3];
    make_view(bufs[0], a.inputs[0], 2, dims, L_DENSE, DLA_F32, -1);
    make_view(bufs[1], a.inputs[2], 2, dims, L_REVERSED, DLA_F32, -1);
    make_view(bufs[2], a.y, 2, dims, L_PADDED, DLA_F32, 0xab);
    dla__cu_mem wm[2];
    dla_view *wv[2] = {&a.inputs[1], &m.extra[0]};
    int64_t st[2];
    for (int k = 0; k < 2; k++) {
        st[k] = wide & (1 << k) ? big : 4;
        wm[k].ptr = (char *)w[k];
        wm[k].bytes = wm[k].cap = wide_bytes;
        wm[k].next = NULL;
        dla_view &v = *wv[k];
        memset(&v, 0, sizeof v);
        v.struct_size = sizeof v;
        v.mem = (dla_mem)&wm[k];
        v.dtype = DLA_F32;
        v.ndims = 2;
        v.dims[0] = 3;
        v.dims[1] = 4;
        v.offset = 5 + k;
        v.strides[0] = 1;
        v.strides[1] = st[k];
    }
    /* Input 1's values; the extra's memory stays 0 but where written. */
    for (int64_t j = 0; j < 4; j++)
        for (int64_t i = 0; i < 3; i++)
            ((float *)w[0])[5 + i + j * st[0]] = (float)rnd();
    dla__cu_device d;
    new_device(d, 2);
    g_mode = mode;
    memset(&g_seen, 0, sizeof g_seen);
    memset(g_lay, 0xff, sizeof g_lay);
    const int errors = g_errors;
    const dla_status s = dla__cu_fused_multi(&d, &m);
    /* 64-bit indexing, and so no layout in the key (the frame uses it on
     * the 32-bit path only). */
    int ok = s == DLA_OK && g_errors == errors && !g_seen.missing && g_seen.launches == 1 &&
             g_seen.flags == 0 && g_seen.compiled == (mode != 0) && (mode == 0 || !g_lay[0]);
    /* Against the steps; the extra's elements and their neighbours. */
    int bad = 0;
    for (int64_t j = 0; j < 4; j++)
        for (int64_t i = 0; i < 3; i++) {
            const int64_t ix[2] = {i, j};
            float r[DLA_FUSED_MAX_INSNS];
            steps<float>(a, ix, r);
            put<float>(a.y, ix, r[a.ninsns - 1]);
            const float *x = (const float *)w[1] + 6 + j * st[1];
            bad += memcmp(&x[i], &r[1], sizeof r[1]) != 0;
            if (i == 0)
                bad += x[-1] != 0.0f || x[3] != 0.0f;
        }
    bad += bufs[2].data != bufs[2].ref;
    ok = ok && !bad;
    if (!ok)
        printf("# status %d, %d launches, flags %d, %d elements wrong\n", (int)s,
               g_seen.launches, g_seen.flags, bad);
    result(ok, "fused_multi f32, %s with offsets past INT_MAX: 64-bit indexing, %s",
           what[wide], mode ? "compiled" : "interpreted");
    munmap(w[0], wide_bytes);
    munmap(w[1], wide_bytes);
}

/* ------------------------------------------------------------ fused_reduce */

/* One fused_reduce case: the sums' program prog (1: a pair) over a shape
 * of dims whose kept dims are keep's, its inputs laid out as lay says (0:
 * x dense, m per kept element (stride 0 along the summed dims), dy dense
 * after an offset; 1: x and dy padded along dim 0), y (and y2) dense after
 * an offset. Every byte of every buffer must equal its image, where the
 * sums (exact: integer values) were written. expect: 't' the thread
 * kernel, 'r' the block kernel on rows (when rows is on), 'b' the block
 * kernel's walk, 'e' no launch (an empty sum). */
void fr_case(const char *name, int nd, const int64_t *dims, const int *keep, int lay, int prog,
             int f64, int mean, int mode, int rows, char expect)
{
    const dla_dtype dt = f64 ? DLA_F64 : DLA_F32;
    const int pair = prog == 1;
    dla_fused_reduce_args r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    emu_reduce_program(prog, f64, &r.program);
    r.op = mean ? DLA_REDUCE_MEAN : DLA_REDUCE_SUM;
    r.reg2 = pair ? EMU_REDUCE_REG2 : 0;
    dla_fused_args &a = r.program;
    buf bufs[5];
    int64_t dense[DLA_MAX_DIMS], padded[DLA_MAX_DIMS], kept[DLA_MAX_DIMS], ydims[DLA_MAX_DIMS];
    int64_t st = 1, sp = 1, sk = 1, n = 1, outputs = 1;
    for (int d = 0; d < nd; d++) {
        dense[d] = st;
        st *= dims[d];
        padded[d] = sp;
        sp *= dims[d] + (d == 0);
        kept[d] = keep[d] ? sk : 0;
        sk *= keep[d] ? dims[d] : 1;
        ydims[d] = keep[d] ? dims[d] : 1;
        n *= dims[d];
        outputs *= ydims[d];
    }
    make_view_strided(bufs[0], a.inputs[0], nd, dims, lay ? padded : dense, 0, lay ? sp : st, dt,
                      FILL_INTS);
    make_view_strided(bufs[1], a.inputs[1], nd, dims, kept, 2, sk, dt, FILL_INTS);
    if (a.ninputs > 2)
        make_view_strided(bufs[2], a.inputs[2], nd, dims, lay ? padded : dense, 3,
                          lay ? sp : st, dt, FILL_INTS);
    int64_t ydense[DLA_MAX_DIMS], sy = 1;
    for (int d = 0; d < nd; d++) {
        ydense[d] = sy;
        sy *= ydims[d];
    }
    make_view_strided(bufs[3], r.y, nd, ydims, ydense, 3, sy, dt, 0xab);
    /* The program's y names the space summed over: ndims and dims only. */
    a.y.struct_size = sizeof a.y;
    a.y.dtype = dt;
    a.y.ndims = nd;
    for (int d = 0; d < nd; d++)
        a.y.dims[d] = dims[d];
    if (pair)
        make_view_strided(bufs[4], r.y2, nd, ydims, ydense, 1, sy, dt, 0xcd);
    /* The reference: each output's sum over its positions, in double. */
    const int64_t per = outputs ? n / outputs : 0;
    std::vector<double> sum((size_t)outputs), sum2((size_t)outputs);
    for (int64_t e = 0; e < n; e++) {
        int64_t ix[DLA_MAX_DIMS] = {0}, q = e, o = 0;
        for (int d = 0; d < nd; d++) {
            ix[d] = q % dims[d];
            q /= dims[d];
            o += keep[d] ? ix[d] * ydense[d] : 0;
        }
        if (f64) {
            double v[DLA_FUSED_MAX_INSNS];
            steps<double>(a, ix, v);
            sum[(size_t)o] += v[a.ninsns - 1];
            sum2[(size_t)o] += v[EMU_REDUCE_REG2];
        } else {
            float v[DLA_FUSED_MAX_INSNS];
            steps<float>(a, ix, v);
            sum[(size_t)o] += v[a.ninsns - 1];
            sum2[(size_t)o] += v[EMU_REDUCE_REG2];
        }
    }
    for (int64_t o = 0; o < outputs; o++) {
        int64_t ix[DLA_MAX_DIMS] = {0}, q = o;
        for (int d = 0; d < nd; d++) {
            ix[d] = q % ydims[d];
            q /= ydims[d];
        }
        const double s = mean ? (per ? sum[(size_t)o] / (double)per : NAN) : sum[(size_t)o];
        const double s2 = mean ? (per ? sum2[(size_t)o] / (double)per : NAN) : sum2[(size_t)o];
        if (f64) {
            put<double>(r.y, ix, s);
            if (pair)
                put<double>(r.y2, ix, s2);
        } else {
            put<float>(r.y, ix, (float)s);
            if (pair)
                put<float>(r.y2, ix, (float)s2);
        }
    }
    dla__cu_device d;
    new_device(d, 1);
    d.fr_rows = rows;
    g_mode = mode;
    memset(&g_seen, 0, sizeof g_seen);
    memset(&g_fr_seen, 0, sizeof g_fr_seen);
    const int errors = g_errors;
    emu_alloc_allowed = 1; /* the parts' sums */
    const dla_status s = dla__cu_fused_reduce(&d, &r);
    emu_alloc_allowed = 0;
    int ok = s == DLA_OK && g_errors == errors && !g_seen.missing;
    if (expect == 'e')
        ok = ok && g_fr_seen.launches == 0;
    else
        ok = ok && g_fr_seen.launches == 1 && g_fr_seen.compiled == (mode != 0) &&
             g_fr_seen.thread == (expect == 't') &&
             g_fr_seen.rows == (expect == 'r' && rows) &&
             g_fr_seen.combines == (g_fr_seen.parts > 1);
    if (!ok)
        printf("# status %d, %d launches (%d missing), thread %d, rows %d, compiled %d, "
               "parts %lld, %d combines\n",
               (int)s, g_fr_seen.launches, g_seen.missing, g_fr_seen.thread, g_fr_seen.rows,
               g_fr_seen.compiled, g_fr_seen.parts, g_fr_seen.combines);
    for (int b = 0; b < 5; b++)
        if (bufs[b].data != bufs[b].ref) {
            printf("# buffer %d differs\n", b);
            ok = 0;
        }
    g_fr_cover.rows += g_fr_seen.rows;
    g_fr_cover.walk += g_fr_seen.launches && !g_fr_seen.thread && !g_fr_seen.rows;
    g_fr_cover.thread += g_fr_seen.thread;
    g_fr_cover.parts += g_fr_seen.parts > 1;
    static const char *const modes[] = {"interpreted", "compiled", "compiled (ops read)"};
    result(ok, "fused_reduce%s %s %s, %s, %s, %s, %s", pair ? " pair" : "", mean ? "mean" : "sum",
           f64 ? "f64" : "f32", name, lay ? "padded inputs" : "dense inputs", modes[mode],
           rows ? "rows allowed" : "rows off");
}

void fr_cases()
{
    static const struct {
        const char *name;
        int nd;
        int64_t dims[5];
        int keep[5];
        char expect[2]; /* by lay: 0, 1 */
    } shapes[] = {
        {"per channel of 6x5x4x3", 4, {6, 5, 4, 3}, {0, 0, 1, 0}, {'r', 'b'}},
        {"all of 97x61 (in parts)", 2, {97, 61}, {0, 0}, {'r', 'r'}},
        {"dims 0 and 2 of 7x3x11x5", 4, {7, 3, 11, 5}, {0, 1, 0, 1}, {'r', 'r'}},
        {"dims 0, 2 and 4 of 3x2x4x2x5", 5, {3, 2, 4, 2, 5}, {0, 1, 0, 1, 0}, {'b', 'b'}},
        {"dim 1 of 48x40 (strided)", 2, {48, 40}, {1, 0}, {'r', 'r'}},
        {"dim 0 of 5x20 (short)", 2, {5, 20}, {0, 1}, {'t', 't'}},
        {"dim 0 of 0x4 (empty)", 2, {0, 4}, {0, 1}, {'e', 'e'}},
    };
    for (const auto &sh : shapes)
        for (int lay = 0; lay < 2; lay++)
            for (int prog = 0; prog < EMU_NREDPROG; prog++)
                for (int f64 = 0; f64 < 2; f64++)
                    for (int mode = 0; mode < 3; mode++)
                        for (int rows = 0; rows < 2; rows++)
                            /* the mean only differs in the store */
                            for (int mean = 0; mean < 1 + (mode == 1); mean++)
                                fr_case(sh.name, sh.nd, sh.dims, sh.keep, lay, prog, f64, mean,
                                        mode, rows, sh.expect[lay]);
    result(g_fr_cover.rows > 0 && g_fr_cover.walk > 0 && g_fr_cover.thread > 0 &&
               g_fr_cover.parts > 0,
           "fused_reduce launches: %d on rows, %d walking, %d a thread per output, %d in parts",
           g_fr_cover.rows, g_fr_cover.walk, g_fr_cover.thread, g_fr_cover.parts);
}
/* dla__cu_lay_of on a batch normalization's views, S S C B = 4 3 5 2:
 * y and x dense, two per-channel vectors (strides 0 0 1 0), a view padded
 * along dim 0 (strides 1 5 15 75), another padded the same way as an
 * extra (slot 9). No two neighbouring dims merge for every view (the
 * padded ones part 0 and 1, the vectors 1, 2 and 3), so the space keeps
 * its 4 dims. */
void layout_cases()
{
    const int64_t dims[4] = {4, 3, 5, 2};
    const int64_t st[6][4] = {{1, 4, 12, 60}, {1, 4, 12, 60}, {0, 0, 1, 0},
                              {0, 0, 1, 0},   {1, 5, 15, 75}, {1, 5, 15, 75}};
    dla_view v[6];
    const dla_view *pv[6];
    dla__cu_mem mem;
    memset(&mem, 0, sizeof mem);
    for (int k = 0; k < 6; k++) {
        memset(&v[k], 0, sizeof v[k]);
        v[k].struct_size = sizeof v[k];
        v[k].mem = (dla_mem)&mem;
        v[k].dtype = DLA_F32;
        v[k].ndims = 4;
        memcpy(v[k].dims, dims, sizeof dims);
        memcpy(v[k].strides, st[k], sizeof st[k]);
        pv[k] = &v[k];
    }
    dla__cu_space sp;
    dla__cu_vw vw[6];
    dla__cu_space_of(6, pv, &sp, vw);
    const int slot[6] = {0, 1, 2, 3, 4, 9};
    int32_t lay[DLA__CU_LAY_WORDS];
    dla__cu_lay_of(&sp, vw, 6, slot, lay);
    const int32_t D = 1 << DLA__CU_LAY_DENSE_BIT, S = DLA__CU_LAY_SAME_SHIFT;
    int32_t want[DLA__CU_LAY_WORDS] = {0};
    want[0] = 4;
    want[1 + 0] = D;                        /* y: its offset is the position */
    want[1 + 1] = D;                        /* x */
    want[1 + 2] = 0xb;                      /* stride 0 along dims 0, 1 and 3 */
    want[1 + 3] = 0xb | (1 + 2) << S;       /* the second vector: slot 2's offset */
    want[1 + 4] = 0;                        /* padded: walks every dim */
    want[1 + 9] = (1 + 4) << S;             /* the extra: slot 4's offset */
    int ok = !memcmp(lay, want, sizeof want);
    if (!ok) {
        printf("# words (got/want):");
        for (int i = 0; i < DLA__CU_LAY_WORDS; i++)
            printf(" %d/%d", (int)lay[i], (int)want[i]);
        printf("\n");
    }
    result(ok, "layout words of a batch normalization's views: dense, per-channel, "
               "the strides of an earlier slot");
    /* A scalar's space has no dims: no layout. */
    dla__cu_space sp0;
    memset(&sp0, 0, sizeof sp0);
    sp0.n = 1;
    dla__cu_lay_of(&sp0, vw, 6, slot, lay);
    int zero = 1;
    for (int i = 0; i < DLA__CU_LAY_WORDS; i++)
        zero = zero && lay[i] == 0;
    result(zero, "no layout words for a space of no dims");
}

} // namespace

/* space.c's CUDA errors as messages: the errors of a kernel that failed
 * while running, and any error of a wait, say that it may be a kernel
 * queued before the call (replays return queued: plan.c); others do not. */
static void error_cases(void)
{
    struct {
        int wait;
        cudaError_t e;
        dla_status want;
        int queued;
    } const cases[] = {
        {0, cudaErrorIllegalAddress, DLA_ERR_DEVICE, 1},
        {0, cudaErrorLaunchFailure, DLA_ERR_DEVICE, 1},
        {0, cudaErrorAssert, DLA_ERR_DEVICE, 1},
        {0, cudaErrorInvalidValue, DLA_ERR_DEVICE, 0},
        {0, cudaErrorMemoryAllocation, DLA_ERR_OUT_OF_MEMORY, 0},
        {1, cudaErrorInvalidValue, DLA_ERR_DEVICE, 1},
        {1, cudaErrorIllegalAddress, DLA_ERR_DEVICE, 1},
        {1, cudaErrorMemoryAllocation, DLA_ERR_OUT_OF_MEMORY, 0},
        {1, cudaSuccess, DLA_OK, 0},
        {0, cudaSuccess, DLA_OK, 0},
    };
    for (const auto &c : cases) {
        g_last_error[0] = '\0';
        const dla_status s = c.wait ? dla__cu_wait_err(c.e, "sync") : dla__cu_err(c.e, "gemm");
        const int queued = strstr(g_last_error, "queued before this call") != NULL;
        const int named = c.e == cudaSuccess || strstr(g_last_error, c.wait ? "cuda sync: "
                                                                             : "cuda gemm: ");
        result(s == c.want && queued == c.queued && named,
               "%s of CUDA error %d: status %d, %s the note of queued work", c.wait ? "a wait"
               : "a call", (int)c.e, (int)s, queued ? "with" : "without");
    }
}

int main(void)
{
    setvbuf(stdout, NULL, _IOLBF, 0); /* the lines before a crash */
    emu_team_open();
    for (int prog = 0; prog < EMU_NPROG; prog++)
        for (int f64 = 0; f64 < 2; f64++)
            for (int multi = 0; multi < 2; multi++)
                for (int shape = 0; shape < 6; shape++)
                    for (int lay = 0; lay < 3; lay++)
                        for (int off32 = 0; off32 < 3; off32++)
                            for (int mode = 0; mode < 3; mode++)
                                one_case(prog, f64, multi, shape, lay, off32, mode);
    /* Every kind of operand reached a compiled kernel as its layout. */
    result(g_lay_seen.with_layout > 0 && g_lay_seen.dense > 0 && g_lay_seen.same > 0 &&
               g_lay_seen.zero > 0 && g_lay_seen.walked > 0,
           "compiled launches with a layout: %d; operands dense %d, as an earlier one %d, "
           "walked with dims of stride 0 left out %d, walked %d",
           g_lay_seen.with_layout, g_lay_seen.dense, g_lay_seen.same, g_lay_seen.zero,
           g_lay_seen.walked);
    layout_cases();
    fr_cases();
    for (int wide = 1; wide < 4; wide++)
        for (int mode = 0; mode < 2; mode++)
            wide_case(wide, mode);
    emu_onekern_cases(result);
    emu_segment_cases(result);
    emu_kernel_cases(result);
    error_cases();
    emu_team_close();
    printf("1..%d\n", ntests);
    return nfailed != 0;
}
