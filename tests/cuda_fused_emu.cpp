/*
 * cuda_fused_emu.cpp - the cuda plugin's fused and fused_multi kernels run
 * on the CPU, against their steps one by one, bit for bit (no GPU needed).
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
 * and fused_multi with
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
#include <sys/mman.h>
#include <vector>

emu_dim blockIdx, blockDim, threadIdx, gridDim;

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
    m->ptr = (char *)(m + 1);
    m->bytes = m->cap = bytes;
    *out = (dla_mem)m;
    return DLA_OK;
}

void dla__cu_mem_free(void *dev, dla_mem mem)
{
    (void)dev;
    free(mem);
}

/* The runtime calls of space.c (no CUDA library is linked). */
cudaError_t cudaSetDevice(int device)
{
    (void)device;
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
    return cudaSuccess;
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

int dla__cu_fused_compiled(dla__cu_device *d, const dla_fused_args *a, int kind, int reg2,
                           const int32_t *lay, const void **k1, const void **k2)
{
    (void)d;
    *k1 = *k2 = NULL;
    if (g_mode == 0 || kind != 0)
        return 0;
    dla__cu_fused_key_t k;
    dla__cu_fused_key(a, kind, reg2, &k);
    if (lay)
        memcpy(k.lay, lay, sizeof k.lay);
    *k1 = find_compiled(k);
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
 * as a scalar (every stride 0). */
enum { L_DENSE, L_OFFSET, L_PADDED, L_REVERSED, L_BCAST, L_SCALAR, L_COUNT };

/* View v of dims in layout lk over buffer b, made anew (fill: the byte of
 * a result's buffer; inputs get random values). */
void make_view(buf &b, dla_view &v, int nd, const int64_t *dims, int lk, dla_dtype dt,
               int fill)
{
    const int dsz = (int)dla_kit_dtype_size(dt);
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.dtype = dt;
    v.ndims = nd;
    v.offset = lk == L_DENSE ? 0 : 3;
    int64_t st = 1;
    for (int d = 0; d < nd; d++)
        v.dims[d] = dims[d];
    if (lk == L_REVERSED) {
        for (int d = nd - 1; d >= 0; d--) {
            v.strides[d] = st;
            st *= dims[d];
        }
    } else {
        for (int d = 0; d < nd; d++) {
            if ((lk == L_BCAST && d == 1) || lk == L_SCALAR) {
                v.strides[d] = 0;
                continue;
            }
            v.strides[d] = st;
            st *= dims[d] + (lk == L_PADDED && d < 2 ? d + 1 : 0);
        }
    }
    const size_t bytes = (size_t)(v.offset + st + 5) * dsz;
    b.data.assign(bytes, (unsigned char)fill);
    if (fill < 0)
        for (size_t e = 0; e < bytes / dsz; e++) {
            const double x = rnd();
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
    for (int wide = 1; wide < 4; wide++)
        for (int mode = 0; mode < 2; mode++)
            wide_case(wide, mode);
    emu_onekern_cases(result);
    error_cases();
    printf("1..%d\n", ntests);
    return nfailed != 0;
}
