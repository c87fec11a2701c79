/*
 * cuda_kernels_emu.cpp - the cuda plugin's own kernels that had no run
 * off the GPU, run on the CPU against the cpu plugin (part of
 * tests/cuda_fused_emu, whose main calls emu_kernel_cases; no GPU
 * needed).
 *
 * What runs is the plugin's own code: its members (copy.c, elementwise.c,
 * random.c, pool.c, index.c, conv.c, gemm.c, reduce.c) as they check the
 * arguments, coalesce the views and choose a launch, and the kernel files
 * copy_kernels.cu, elementwise_kernels.cu, random_kernels.cu,
 * pool_kernels.cu, index_kernels.cu and conv_kernels.cu compiled by the
 * host's compiler with their launchers (tests/cuda_kern_emu_launch.h:
 * every thread of every block in turn, the grid the member chose, the
 * convolution filter gradient's 256 threads a block at once; d.sms of 2
 * caps a grid at 64 blocks of 256, so sizes above 16,384 elements wrap
 * the grid-stride loops). reduce.c's kernels are reduce_dev.cuh's, run
 * as cuda_onekern_emu.cpp runs them; conv.c finds no cuDNN here, so
 * every convolution runs on the plugin's direct kernels, as it does where
 * cuDNN is missing or cannot express the call.
 *
 * The reference is the cpu plugin itself (plugins/cpu/.libs, loaded with
 * dlopen and initialised with a host table of this file's), given the
 * same arguments over copies of the same bytes; every case compares the
 * status and then the buffers written, the parts outside the views too.
 * Bit for bit, every byte, wherever both sides do the same host
 * arithmetic in the same order: the kernels' plugin_ops.h and
 * plugin_philox.h against the cpu plugin's scalar math (its vector math
 * off, DLACCEL_CPU_VMATH=off), pooling's and scatter_add's sums in the
 * cpu plugin's order, reduce's sums of small integers (exact in any
 * order). The convolutions and the GEMMs sum in other orders than the
 * cpu plugin's (im2col and OpenBLAS, DLACCEL_CPU_CONV=im2col), so their
 * operands are small integers, every sum exact, and their results are
 * compared as values, equal with no tolerance: -0 and +0 count as equal
 * there (a sum of no terms or of -0 products may take either sign with
 * another order), and NaN as NaN. What the GPU's own arithmetic gives
 * (its exp, its rounding of a double sum to float) is check-plugin's
 * business on a GPU.
 *
 * plan.c's copies of a graph's regions in and out (copies_k) run too,
 * against memcpy.
 *
 * Not run here: cuDNN's and cuBLAS's calls (the emulation has neither:
 * a product of C's overlapping pages, which gemm.c sends to cuBLAS page
 * by page, is left out). The pooling ABI has no dilation.
 */
#include "plugins/cuda/conv_engine.h"
#include "plugins/cuda/copy_kern.h"
#include "plugins/cuda/cu.h"
#include "plugins/cuda/libs.h"

#include "tests/cuda_fused_emu.h"
#include "tests/cuda_fused_emu_shim.h"

#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <pthread.h>
#include <string>
#include <thread>
#include <vector>

extern "C" long emu_kern_launches;
extern "C" unsigned emu_kern_grid, emu_kern_threads;
/* cuda_fused_emu.cpp: the barrier __syncthreads meets at. */
void emu_set_barrier(pthread_barrier_t *b);

/* cuda_kern_emu_launch.h's launch of a kernel with barriers: a host
 * thread for each of the block's threads, the blocks in turn (thread 0
 * moves blockIdx on between two meetings). */
void emu_run_at_once(unsigned gx, unsigned gy, unsigned threads, const std::function<void()> &one)
{
    emu_kern_launches++;
    emu_kern_grid = gx * gy;
    emu_kern_threads = threads;
    gridDim.x = gx;
    gridDim.y = gy;
    blockDim.x = threads;
    pthread_barrier_t bar;
    pthread_barrier_init(&bar, nullptr, threads);
    emu_set_barrier(&bar);
    std::vector<std::thread> th;
    for (unsigned t = 0; t < threads; t++)
        th.emplace_back([&, t] {
            threadIdx.x = t;
            for (unsigned y = 0; y < gy; y++)
                for (unsigned x = 0; x < gx; x++) {
                    if (t == 0)
                        blockIdx.x = x, blockIdx.y = y;
                    pthread_barrier_wait(&bar);
                    one();
                    pthread_barrier_wait(&bar);
                }
        });
    for (auto &x : th)
        x.join();
    emu_set_barrier(nullptr);
    pthread_barrier_destroy(&bar);
    gridDim.y = blockIdx.y = 0;
}

extern "C" {

long emu_kern_launches;
unsigned emu_kern_grid, emu_kern_threads;
int emu_kern_reverse;

/* memory.c's copies (index.c reads its index back and uploads groups):
 * the "device" is host memory. */
dla_status dla__cu_copy_to_host(void *dev, void *dst, dla_mem src, size_t offset_bytes,
                                size_t bytes)
{
    (void)dev;
    memcpy(dst, ((dla__cu_mem *)src)->ptr + offset_bytes, bytes);
    return DLA_OK;
}

dla_status dla__cu_copy_to_device(void *dev, dla_mem dst, size_t offset_bytes, const void *src,
                                  size_t bytes)
{
    (void)dev;
    memcpy(((dla__cu_mem *)dst)->ptr + offset_bytes, src, bytes);
    return DLA_OK;
}

/* conv.c without cuDNN: every convolution on the plugin's own kernels
 * (as where cuDNN is missing, or cannot express the call). */
cudnnHandle_t dla__cu_dnn_of(dla__cu_device *d)
{
    (void)d;
    return NULL;
}

const dla__cu_dnn *dla__cu_dnn_lib(const char **why)
{
    *why = "no cuDNN in the emulation";
    return NULL;
}

const char *dla__cu_dnn_msg(cudnnStatus_t st)
{
    (void)st;
    return "no cuDNN in the emulation";
}

dla_status dla__cu_plan_flush(dla__cu_device *d, const char *why)
{
    (void)d, (void)why;
    return DLA_OK; /* no capture here */
}

void dla__cu_conv_engine_find(const dla__cu_dnn *L, cudnnHandle_t h, cudaStream_t stream, int dir,
                              dla_dtype dtype, const dla__cu_conv_shape *g, int tf32, char *x,
                              char *w, char *y, void *ws, size_t ws_bytes, float beat_ms,
                              int device, dla__cu_conv_plan **best, float *best_ms)
{
    abort(); /* not reached without cuDNN */
}

int dla__cu_conv_engine_fits(const dla__cu_conv_plan *pl, const char *x, const char *w,
                             const char *y)
{
    abort();
}

cudnnStatus_t dla__cu_conv_engine_run(const dla__cu_dnn *L, cudnnHandle_t h,
                                      const dla__cu_conv_plan *pl, char *x, char *w, char *y,
                                      void *ws)
{
    abort();
}

void dla__cu_conv_engine_free(const dla__cu_dnn *L, dla__cu_conv_plan *pl)
{
    (void)L, (void)pl;
}

/* conv.c's timing of cuDNN's algorithms: not reached either. */
cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    abort();
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    abort();
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    abort();
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t a, cudaEvent_t b)
{
    abort();
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    abort();
}

} // extern "C"

namespace {

typedef void (*result_fn)(int ok, const char *fmt, ...);
result_fn g_result;
/* The run's thread order, for its lines. */
const char *g_order = "";

/* ------------------------------------------------------- the cpu plugin */

char g_cpu_error[512];

void c_log(dla_log_level level, const char *fmt, ...)
{
    (void)level;
    (void)fmt;
}

dla_status c_error(dla_status s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g_cpu_error, sizeof g_cpu_error, fmt, ap);
    va_end(ap);
    return s;
}

void *c_alloc(size_t n, size_t align)
{
    void *p = NULL;
    if (align < sizeof(void *))
        align = sizeof(void *);
    return posix_memalign(&p, align, n ? n : 1) ? NULL : p;
}

void c_free(void *p)
{
    free(p);
}

const dla_plugin_host cpu_host = {sizeof(dla_plugin_host), DLA_PLUGIN_ABI_MAJOR,
                                  DLA_PLUGIN_ABI_MINOR, c_log, c_error, c_alloc, c_free};
dla_plugin cpu;
void *cpu_dev;
dla__cu_device cu;

/* -------------------------------------------------------------- buffers */

/* One operand's memory on both sides, from the same bytes. */
struct twin {
    std::vector<unsigned char> cub; /* the cuda side's "device" memory */
    dla__cu_mem m;
    dla_mem c = NULL;
    size_t bytes = 0;
    twin() { memset(&m, 0, sizeof m); }
    twin(const twin &) = delete;
    ~twin()
    {
        if (c)
            cpu.mem_free(cpu_dev, c);
    }
    void set(const void *src, size_t n)
    {
        bytes = n;
        cub.assign(n + 8, 0xa5);
        memcpy(cub.data(), src, n);
        m.ptr = (char *)cub.data();
        m.bytes = m.cap = n;
        if (c)
            cpu.mem_free(cpu_dev, c);
        c = NULL;
        if (cpu.mem_alloc(cpu_dev, n + 8, &c) != DLA_OK)
            abort();
        cpu.copy_to_device(cpu_dev, c, 0, cub.data(), n + 8);
    }
    /* Every element of dtype dt the same value on both sides (-0 and +0
     * equal, NaN equal to NaN). */
    bool same_values(dla_dtype dt, std::string *why) const
    {
        std::vector<unsigned char> h(bytes + 8);
        cpu.copy_to_host(cpu_dev, h.data(), c, 0, bytes + 8);
        const size_t es = dla_kit_dtype_size(dt);
        for (size_t i = 0; i + es <= bytes; i += es) {
            double u, v;
            if (es == 4) {
                float a, b;
                memcpy(&a, &cub[i], 4), memcpy(&b, &h[i], 4);
                u = a, v = b;
            } else
                memcpy(&u, &cub[i], 8), memcpy(&v, &h[i], 8);
            if (!(u == v || (std::isnan(u) && std::isnan(v)))) {
                char b[160];
                snprintf(b, sizeof b, "element %zu: cuda %.17g, cpu %.17g", i / es, u, v);
                *why = b;
                return false;
            }
        }
        return true;
    }
    /* Every byte the same on both sides. */
    bool same(std::string *why) const
    {
        std::vector<unsigned char> h(bytes + 8);
        cpu.copy_to_host(cpu_dev, h.data(), c, 0, bytes + 8);
        for (size_t i = 0; i < bytes + 8; i++)
            if (h[i] != cub[i]) {
                char b[160];
                snprintf(b, sizeof b, "byte %zu: cuda %02x, cpu %02x", i, cub[i], h[i]);
                *why = b;
                return false;
            }
        return true;
    }
};

unsigned long long rng = 0x2545f4914f6cdd1dULL;
unsigned rnd_u()
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)(rng >> 11);
}

/* Values with ties (a few distinct ones), NaN where nan, of dtype dt. */
void fill_values(twin &t, dla_dtype dt, size_t n, int kind)
{
    const size_t es = dla_kit_dtype_size(dt);
    std::vector<unsigned char> b(n * es);
    for (size_t i = 0; i < n; i++) {
        double v;
        if (kind == 0) /* small integers: every sum exact */
            v = (double)((int)(rnd_u() % 9) - 4);
        else if (kind == 1) /* ties and NaN */
            v = rnd_u() % 7 == 0 ? NAN : (double)((int)(rnd_u() % 3) - 1);
        else if (kind == 2) /* a cast's edges */ {
            static const double e[] = {NAN, INFINITY, -INFINITY, 0.5, -0.5, 1.5, -2.5, 255.5,
                                       256, -1, 3e9, -3e9, 0, -0.0, 2147483647.0, 1e-30};
            v = e[rnd_u() % 16];
        } else /* general */
            v = (double)(int)(rnd_u() % 20001 - 10000) / 997.0;
        if (dt == DLA_F32) {
            const float f = (float)v;
            memcpy(&b[i * es], &f, 4);
        } else if (dt == DLA_F64)
            memcpy(&b[i * es], &v, 8);
        else if (dt == DLA_I32) {
            const int32_t k = (int32_t)(rnd_u() % 2001) - 1000;
            memcpy(&b[i * es], &k, 4);
        } else
            b[i] = (unsigned char)(dt == DLA_BOOL ? rnd_u() % 2 : rnd_u() % 256);
    }
    t.set(b.data(), b.size());
}

/* A view of nd dims, strides st (NULL: dense), at offset, on t's side
 * (cpu nonzero: the cpu plugin's). */
dla_view view(dla_dtype dt, int nd, const int64_t *dims, const int64_t *st, int64_t off)
{
    dla_view v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.dtype = dt;
    v.ndims = nd;
    v.offset = off;
    int64_t s = 1;
    for (int k = 0; k < nd; k++) {
        v.dims[k] = dims[k];
        v.strides[k] = st ? st[k] : s;
        s *= dims[k];
    }
    return v;
}

/* Elements a view spans in memory (offset included). */
size_t span(const dla_view &v)
{
    int64_t last = v.offset;
    for (int k = 0; k < v.ndims; k++) {
        if (v.dims[k] == 0)
            return (size_t)v.offset + 1;
        last += (v.dims[k] - 1) * v.strides[k];
    }
    return (size_t)last + 1;
}

dla_view on(dla_view v, const twin &t, int cpu_side)
{
    v.mem = cpu_side ? t.c : (dla_mem)&t.m;
    return v;
}

/* The case's line: statuses equal, then every twin the same. */
void check(const char *what, dla_status scu, dla_status scpu, std::initializer_list<const twin *> outs,
           long launches_before, int want_launch)
{
    std::string why;
    bool ok = scu == scpu;
    if (!ok)
        why = "status cuda " + std::to_string((int)scu) + ", cpu " + std::to_string((int)scpu) +
              (scpu != DLA_OK ? std::string(" (cpu: ") + g_cpu_error + ")" : std::string());
    for (const twin *t : outs)
        if (ok && !t->same(&why))
            ok = false;
    if (ok && want_launch && emu_kern_launches == launches_before) {
        ok = false;
        why = "no kernel launched";
    }
    g_result(ok, "cuda kernels on the CPU against the cpu plugin%s: %s%s%s", g_order, what,
             ok ? "" : ": ", why.c_str());
}

/* --------------------------------------------------- fill, copy and cast */

struct shape {
    int nd;
    int64_t dims[8];
    int64_t pad; /* added to each stride after the first dim's */
    int64_t off;
    const char *name;
    int rev; /* the last dim fastest in memory (a transposed view) */
};
const shape shapes[] = {
    {1, {0}, 0, 0, "empty", 0},
    {1, {7}, 0, 3, "7 at offset 3", 0},
    {2, {3, 5}, 2, 1, "3x5 in rows of 5", 0},
    {1, {70001}, 0, 0, "70001 (the grid wraps)", 0},
    {4, {5, 1, 4, 3}, 1, 2, "5x1x4x3 padded", 0},
    {3, {33, 0, 2}, 1, 0, "33x0x2", 0},
    {3, {257, 3, 2}, 3, 5, "257x3x2 padded", 0},
    {0, {0}, 0, 4, "a scalar", 0},
    {8, {2, 3, 2, 3, 2, 1, 3, 2}, 1, 1, "8 dims, none merged", 0},
    {3, {5, 4, 3}, 0, 0, "5x4x3 transposed", 1},
    {2, {130, 129}, 2, 3, "130x129 transposed and padded (the grid wraps)", 1},
};

/* A view of s with its strides padded (every dim after the first
 * pad elements further apart than dense). */
dla_view shaped(dla_dtype dt, const shape &s, int bcast_dim)
{
    int64_t st[8], run = 1;
    for (int i = 0; i < s.nd; i++) {
        const int k = s.rev ? s.nd - 1 - i : i;
        st[k] = run;
        run = run * s.dims[k] + s.pad;
    }
    if (bcast_dim >= 0 && bcast_dim < s.nd)
        st[bcast_dim] = 0;
    return view(dt, s.nd, s.dims, st, s.off);
}

const dla_dtype dtypes[] = {DLA_F32, DLA_F64, DLA_I32, DLA_U8, DLA_BOOL};
const char *dtname(dla_dtype d)
{
    static const char *n[] = {"f32", "f64", "i32", "u8", "bool"};
    return (unsigned)d < 5 ? n[d] : "?";
}

void copy_cases()
{
    static const double values[] = {0.0, 1.5, -3.75, NAN, 300.0, -0.0};
    for (const shape &s : shapes)
        for (dla_dtype dt : dtypes)
            for (double value : values) {
                const dla_view y = shaped(dt, s, -1);
                twin t;
                fill_values(t, dt, span(y), 3);
                const long before = emu_kern_launches;
                const dla_view yu = on(y, t, 0), yc = on(y, t, 1);
                const dla_status a = dla__cu_fill(&cu, &yu, value);
                const dla_status b = cpu.fill(cpu_dev, &yc, value);
                char what[160];
                snprintf(what, sizeof what, "fill %s %s with %g", dtname(dt), s.name, value);
                check(what, a, b, {&t}, before, 0);
            }
    for (const shape &s : shapes)
        for (dla_dtype dt : dtypes)
            for (int bc = -1; bc < 1; bc++) {
                const dla_view y = shaped(dt, s, -1), x = shaped(dt, s, bc);
                /* y dense and at 0 where the source is broadcast: only the
                 * source's stride 0 keeps it off the memcpy. */
                const dla_view yd = bc >= 0 ? view(dt, s.nd, s.dims, NULL, 0) : y;
                twin ty, tx;
                fill_values(ty, dt, span(yd), 3);
                fill_values(tx, dt, span(x), 3);
                const long before = emu_kern_launches;
                const dla_view yu = on(yd, ty, 0), xu = on(x, tx, 0), yc = on(yd, ty, 1),
                               xc = on(x, tx, 1);
                const dla_status a = dla__cu_strided_copy(&cu, &yu, &xu);
                const dla_status b = cpu.strided_copy(cpu_dev, &yc, &xc);
                char what[160];
                snprintf(what, sizeof what, "strided_copy %s %s%s", dtname(dt), s.name,
                         bc >= 0 ? ", source broadcast along dim 0" : "");
                int64_t n = 1;
                for (int k = 0; k < s.nd; k++)
                    n *= s.dims[k];
                /* (a dense space is a cudaMemcpyAsync) */
                check(what, a, b, {&ty}, before, n > 0 && ((bc >= 0 && s.nd > 0) || s.pad > 0 || s.rev));
            }
    for (const shape &s : shapes)
        for (dla_dtype from : dtypes)
            for (dla_dtype to : dtypes) {
                const dla_view y = shaped(to, s, -1), x = shaped(from, s, s.nd > 1 ? 1 : -1);
                twin ty, tx;
                fill_values(ty, to, span(y), 3);
                fill_values(tx, from, span(x), 2);
                const long before = emu_kern_launches;
                const dla_view yu = on(y, ty, 0), xu = on(x, tx, 0), yc = on(y, ty, 1),
                               xc = on(x, tx, 1);
                const dla_status a = dla__cu_cast(&cu, &yu, &xu);
                const dla_status b = cpu.cast(cpu_dev, &yc, &xc);
                char what[160];
                snprintf(what, sizeof what, "cast %s to %s, %s", dtname(from), dtname(to),
                         s.name);
                check(what, a, b, {&ty}, before, 0);
            }
}

/* ----------------------------------------------- unary, binary, where */

const dla_dtype floats[] = {DLA_F32, DLA_F64};

void elementwise_cases()
{
    static const int which[] = {1, 2, 3, 4, 6, 7, 8, 9, 10};
    for (int si : which) {
        const shape &s = shapes[si];
        for (dla_dtype dt : floats) {
            for (int op = 0; op < DLA_UNARY_COUNT; op++)
                for (int inplace = 0; inplace < 2; inplace++) {
                    dla_unary_args u;
                    memset(&u, 0, sizeof u);
                    u.struct_size = sizeof u;
                    u.op = (dla_unary_op)op;
                    u.alpha = 0.37, u.beta = -1.25;
                    const dla_view x = shaped(dt, s, -1);
                    const dla_view y = inplace ? x : view(dt, s.nd, s.dims, NULL, 1);
                    twin ty, tx;
                    fill_values(tx, dt, span(x), 3);
                    fill_values(ty, dt, span(y), 3);
                    dla_unary_args uc = u;
                    u.x = on(x, tx, 0), u.y = on(y, inplace ? tx : ty, 0);
                    uc.x = on(x, tx, 1), uc.y = on(y, inplace ? tx : ty, 1);
                    const long before = emu_kern_launches;
                    const dla_status a = dla__cu_unary(&cu, &u);
                    const dla_status b = cpu.unary(cpu_dev, &uc);
                    char what[160];
                    snprintf(what, sizeof what, "unary op %d %s %s%s", op, dtname(dt), s.name,
                             inplace ? " in place" : "");
                    check(what, a, b, {&ty, &tx}, before, 1);
                }
            for (int op = 0; op < DLA_BINARY_COUNT; op++)
                for (int bc = 0; bc < 2; bc++) {
                    const bool cmp = op >= DLA_BINARY_EQ;
                    dla_binary_args g;
                    memset(&g, 0, sizeof g);
                    g.struct_size = sizeof g;
                    g.op = (dla_binary_op)op;
                    /* b broadcast along the first dim, a along the last */
                    const dla_view av = shaped(dt, s, bc ? s.nd - 1 : -1);
                    const dla_view bv = shaped(dt, s, bc ? 0 : -1);
                    const dla_view zv = view(cmp ? DLA_BOOL : dt, s.nd, s.dims, NULL, 2);
                    twin tz, ta, tb;
                    fill_values(ta, dt, span(av), 1);
                    fill_values(tb, dt, span(bv), 1);
                    fill_values(tz, zv.dtype, span(zv), 3);
                    dla_binary_args gc = g;
                    g.z = on(zv, tz, 0), g.a = on(av, ta, 0), g.b = on(bv, tb, 0);
                    gc.z = on(zv, tz, 1), gc.a = on(av, ta, 1), gc.b = on(bv, tb, 1);
                    const long before = emu_kern_launches;
                    const dla_status a = dla__cu_binary(&cu, &g);
                    const dla_status b = cpu.binary(cpu_dev, &gc);
                    char what[160];
                    snprintf(what, sizeof what, "binary op %d %s %s%s (ties, NaN)", op,
                             dtname(dt), s.name, bc ? ", a and b broadcast" : "");
                    check(what, a, b, {&tz}, before, 1);
                }
            dla_ternary_args w;
            memset(&w, 0, sizeof w);
            w.struct_size = sizeof w;
            w.op = DLA_TERNARY_WHERE;
            const dla_view cv = shaped(DLA_BOOL, s, 0), av = shaped(dt, s, -1),
                           bv = shaped(dt, s, s.nd - 1), zv = view(dt, s.nd, s.dims, NULL, 0);
            twin tc, ta, tb, tz;
            fill_values(tc, DLA_U8, span(cv), 0); /* any byte: nonzero is true */
            fill_values(ta, dt, span(av), 1);
            fill_values(tb, dt, span(bv), 3);
            fill_values(tz, dt, span(zv), 3);
            dla_ternary_args wc = w;
            w.z = on(zv, tz, 0), w.cond = on(cv, tc, 0), w.a = on(av, ta, 0), w.b = on(bv, tb, 0);
            wc.z = on(zv, tz, 1), wc.cond = on(cv, tc, 1), wc.a = on(av, ta, 1),
            wc.b = on(bv, tb, 1);
            const long before = emu_kern_launches;
            const dla_status a = dla__cu_ternary(&cu, &w);
            const dla_status b = cpu.ternary(cpu_dev, &wc);
            char what[160];
            snprintf(what, sizeof what, "where %s %s, cond (bytes 0-255) and b broadcast", dtname(dt), s.name);
            check(what, a, b, {&tz}, before, 1);
        }
    }
}

/* --------------------------------------------------------------- random */

void random_cases()
{
    static const uint64_t counters[] = {0, 5, 0xfffffffffffffffeULL};
    for (const shape &s : shapes)
        for (dla_dtype dt : floats)
            for (int dist = 0; dist < 2; dist++)
                for (uint64_t counter : counters) {
                    dla_random_args r;
                    memset(&r, 0, sizeof r);
                    r.struct_size = sizeof r;
                    r.dist = dist ? DLA_RANDOM_NORMAL : DLA_RANDOM_UNIFORM;
                    r.seed = 0x1234567890abcdefULL + (uint64_t)dist;
                    r.counter = counter;
                    const dla_view y = shaped(dt, s, -1);
                    twin t;
                    fill_values(t, dt, span(y), 3);
                    dla_random_args rc = r;
                    r.y = on(y, t, 0), rc.y = on(y, t, 1);
                    const long before = emu_kern_launches;
                    const dla_status a = dla__cu_random(&cu, &r);
                    const dla_status b = cpu.random(cpu_dev, &rc);
                    char what[160];
                    snprintf(what, sizeof what, "random %s %s %s, counter %llu",
                             dist ? "normal" : "uniform", dtname(dt), s.name,
                             (unsigned long long)counter);
                    check(what, a, b, {&t}, before, 0);
                }
}

/* ------------------------------------------------------------------ pool */

struct pool_geom {
    int ns;
    int64_t in[3], win[3], stride[3], pad[3], padend[3];
    int64_t channels, batch;
    const char *name;
};
const pool_geom pools[] = {
    {1, {9}, {3}, {2}, {1}, {1}, 3, 2, "1-d 9, window 3 stride 2 pad 1"},
    {2, {7, 6}, {3, 2}, {1, 2}, {1, 0}, {2, 1}, 2, 3, "2-d 7x6 overlapping, pads 1/2 and 0/1"},
    {2, {5, 5}, {2, 2}, {3, 3}, {0, 0}, {0, 0}, 1, 1, "2-d 5x5, stride above the window"},
    {3, {4, 5, 3}, {2, 3, 2}, {2, 1, 1}, {1, 1, 0}, {1, 1, 1}, 2, 2, "3-d 4x5x3"},
    {2, {67, 70}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, 2, 2, "2-d 67x70 (the grid wraps)"},
    {2, {6, 6}, {2, 2}, {2, 2}, {0, 0}, {0, 0}, 3, 0, "batch 0"},
    {1, {3}, {5}, {1}, {2}, {2}, 1, 2, "1-d window past both ends"},
};

void pool_case(const pool_geom &p, int mode, int exclude, int with_index, dla_dtype dt,
               int strided)
{
    dla_pool_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.mode = mode ? DLA_POOL_AVG : DLA_POOL_MAX;
    a.dtype = dt;
    a.nspatial = p.ns;
    a.avg_exclude_pad = exclude;
    a.channels = p.channels, a.batch = p.batch;
    int64_t xd[5], yd[5];
    for (int d = 0; d < 3; d++) {
        const int64_t in = d < p.ns ? p.in[d] : 1;
        a.in_size[d] = in;
        a.window[d] = d < p.ns ? p.win[d] : 1;
        a.stride[d] = d < p.ns ? p.stride[d] : 1;
        a.pad_begin[d] = d < p.ns ? p.pad[d] : 0;
        const int64_t pe = d < p.ns ? p.padend[d] : 0;
        a.out_size[d] = (in + a.pad_begin[d] + pe - a.window[d]) / a.stride[d] + 1;
    }
    for (int d = 0; d < p.ns; d++)
        xd[d] = a.in_size[d], yd[d] = a.out_size[d];
    xd[p.ns] = yd[p.ns] = p.channels;
    xd[p.ns + 1] = yd[p.ns + 1] = p.batch;
    const int nd = p.ns + 2;
    /* strided: x padded along every dim, y's channel and batch swapped
     * in memory; else dense at offsets. */
    int64_t xs[5], ys[5], run = 1;
    for (int d = 0; d < nd; d++) {
        xs[d] = run;
        run = run * xd[d] + (strided ? 1 : 0);
    }
    run = 1;
    for (int d = 0; d < p.ns; d++) {
        ys[d] = run;
        run *= yd[d];
    }
    if (strided)
        ys[p.ns + 1] = run, ys[p.ns] = run * p.batch;
    else
        ys[p.ns] = run, ys[p.ns + 1] = run * p.channels;
    const dla_view x = view(dt, nd, xd, xs, strided ? 3 : 0);
    const dla_view y = view(dt, nd, yd, ys, strided ? 2 : 1);
    const dla_view ix = view(DLA_I32, nd, yd, ys, 4);
    char what[200];
    snprintf(what, sizeof what, "pool %s %s%s%s %s%s", mode ? "avg" : "max", p.name,
             mode && exclude ? ", padding excluded" : "", with_index ? ", with index" : "",
             dtname(dt), strided ? ", strided views" : "");
    /* forward: x read (ties and NaN for max), y and index written */
    twin tx, ty, ti;
    fill_values(tx, dt, span(x), mode ? 3 : 1);
    fill_values(ty, dt, span(y), 3);
    fill_values(ti, DLA_I32, span(ix), 3);
    dla_pool_args ac = a;
    a.x = on(x, tx, 0), a.y = on(y, ty, 0);
    ac.x = on(x, tx, 1), ac.y = on(y, ty, 1);
    if (with_index)
        a.index = on(ix, ti, 0), ac.index = on(ix, ti, 1);
    const int64_t nout = p.batch * p.channels * a.out_size[0] * a.out_size[1] * a.out_size[2];
    long before = emu_kern_launches;
    dla_status sa = dla__cu_pool_forward(&cu, &a);
    dla_status sb = cpu.pool_forward(cpu_dev, &ac);
    std::string w = std::string(what) + ", forward";
    check(w.c_str(), sa, sb, {&ty, &ti}, before, nout > 0);
    if (!mode && !with_index)
        return; /* a max's backward takes the index */
    /* backward: y (dy) and index read, x (dx) written; the index is the
     * forward's (the same bytes on both sides when that passed). */
    fill_values(ty, dt, span(y), 0);
    fill_values(tx, dt, span(x), 3);
    a.x = on(x, tx, 0), a.y = on(y, ty, 0);
    ac.x = on(x, tx, 1), ac.y = on(y, ty, 1);
    before = emu_kern_launches;
    sa = dla__cu_pool_backward(&cu, &a);
    sb = cpu.pool_backward(cpu_dev, &ac);
    w = std::string(what) + ", backward";
    check(w.c_str(), sa, sb, {&tx}, before, p.batch > 0);
}

void pool_cases()
{
    for (const pool_geom &p : pools)
        for (dla_dtype dt : floats)
            for (int strided = 0; strided < 2; strided++) {
                pool_case(p, 0, 0, 0, dt, strided);
                pool_case(p, 0, 0, 1, dt, strided);
                pool_case(p, 1, 0, 0, dt, strided);
                pool_case(p, 1, 1, 0, dt, strided);
            }
}

/* ------------------------------------------------ gather and scatter_add */

void index_case(int scatter, dla_dtype dt, int dim, int64_t len, int64_t target, int bad,
                int strided)
{
    /* x and y 5 x 4 x 3 with dim's size len (gather's y, scatter's x) or
     * target; the index len positions, two apart at offset 1 when
     * strided, repeated. */
    int64_t yd[4] = {5, 4, 3, 1}, xd[4] = {5, 4, 3, 1};
    (scatter ? xd : yd)[dim] = len;
    (scatter ? yd : xd)[dim] = target;
    int64_t xs[4], ys[4], rx = 1, ry = 1;
    for (int d = 0; d < 4; d++) {
        xs[d] = rx, ys[d] = ry;
        rx = rx * xd[d] + (strided ? 2 : 0);
        ry = ry * yd[d] + (strided && d == 0 ? 1 : 0);
    }
    if (strided == 2)
        xs[0] = 0; /* x broadcast along dim 0 */
    /* Along dim 3 the operand whose dim is 1 (target 1) is sent with 3
     * dims, as the core sends a gather from x 1x3 into y 1x3x2. */
    const int xnd = xd[3] != 1 ? 4 : 3, ynd = yd[3] != 1 ? 4 : 3;
    const dla_view x = view(dt, xnd, xd, xs, strided ? 2 : 0);
    const dla_view y = view(dt, ynd, yd, ys, strided ? 1 : 0);
    const int64_t idims[2] = {1, len}, ist[2] = {1, strided ? 2 : 1};
    const dla_view iv = view(DLA_I32, 2, idims, ist, strided ? 1 : 0);
    std::vector<int32_t> pos(span(iv), -7);
    for (int64_t i = 0; i < len; i++)
        pos[(size_t)(iv.offset + i * ist[1])] =
            target ? (int32_t)((i * 7 + (i % 3 == 0 ? 0 : 3)) % target) : 0;
    if (bad && len > 0)
        pos[(size_t)(iv.offset + (len - 1) * ist[1])] = bad > 0 ? (int32_t)target : -1;
    twin tx, ty, ti;
    fill_values(tx, dt, span(x), 3);
    fill_values(ty, dt, span(y), 3);
    ti.set(pos.data(), pos.size() * sizeof(int32_t));
    dla_index_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.dim = dim;
    dla_index_args ac = a;
    a.x = on(x, tx, 0), a.y = on(y, ty, 0), a.index = on(iv, ti, 0);
    ac.x = on(x, tx, 1), ac.y = on(y, ty, 1), ac.index = on(iv, ti, 1);
    const long before = emu_kern_launches;
    const dla_status sa = scatter ? dla__cu_scatter_add(&cu, &a) : dla__cu_gather(&cu, &a);
    const dla_status sb = scatter ? cpu.scatter_add(cpu_dev, &ac) : cpu.gather(cpu_dev, &ac);
    char what[200];
    snprintf(what, sizeof what, "%s %s along dim %d, %lld positions (repeated) into %lld%s%s",
             scatter ? "scatter_add" : "gather", dtname(dt), dim, (long long)len,
             (long long)target, bad ? (bad > 0 ? ", one past the end" : ", one negative") : "",
             strided == 2 ? ", x broadcast along dim 0, strided index"
             : strided  ? ", strided views and index"
                        : "");
    check(what, sa, sb, {&ty}, before, !bad && len > 0 && target > 0);
}

void index_cases()
{
    for (int scatter = 0; scatter < 2; scatter++)
        for (dla_dtype dt : dtypes) {
            if (scatter && dt != DLA_F32 && dt != DLA_F64)
                continue;
            for (int dim = 0; dim < 3; dim++)
                for (int strided = 0; strided < 2; strided++) {
                    index_case(scatter, dt, dim, 11, 4, 0, strided);
                    index_case(scatter, dt, dim, 3, 6, 0, strided);
                    index_case(scatter, dt, dim, 0, 4, 0, strided);
                    index_case(scatter, dt, dim, 5, 4, 1, strided);
                    index_case(scatter, dt, dim, 5, 4, -1, strided);
                }
            index_case(scatter, dt, 1, 3000, 5, 0, 0); /* above a block */
            index_case(scatter, dt, 3, 4, 1, 0, 0);    /* past the other one's dims */
            index_case(scatter, dt, 1, 6, 4, 0, 2);    /* x broadcast along dim 0 */
        }
}

/* ------------------------------------------------ reduce with positions */

/* ystrided: y padded, the index transposed (last dim fastest). */
void reduce_case(int op, dla_dtype dt, int nd, const int64_t *xd, const int *keep, int kind,
                 int with_index, const char *name, int ystrided = 0)
{
    int64_t yd[4];
    for (int d = 0; d < nd; d++)
        yd[d] = keep[d] ? xd[d] : 1;
    int64_t xs[4], ys[4], is[4], run = 1;
    for (int d = 0; d < nd; d++)
        xs[d] = run, run = run * xd[d] + 1;
    run = 1;
    for (int d = 0; d < nd; d++)
        ys[d] = run, run = run * yd[d] + 2;
    run = 1;
    for (int d = nd - 1; d >= 0; d--)
        is[d] = run, run *= yd[d];
    const dla_view x = view(dt, nd, xd, xs, 2);
    const dla_view y = view(dt, nd, yd, ystrided ? ys : NULL, 1);
    const dla_view iv = view(DLA_I32, nd, yd, ystrided ? is : NULL, 3);
    twin tx, ty, ti;
    fill_values(tx, dt, span(x), kind);
    fill_values(ty, dt, span(y), 3);
    fill_values(ti, DLA_I32, span(iv), 3);
    dla_reduce_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.op = (dla_reduce_op)op;
    dla_reduce_args ac = a;
    a.x = on(x, tx, 0), a.y = on(y, ty, 0);
    ac.x = on(x, tx, 1), ac.y = on(y, ty, 1);
    if (with_index)
        a.index = on(iv, ti, 0), ac.index = on(iv, ti, 1);
    const dla_status sa = dla__cu_reduce(&cu, &a);
    const dla_status sb = cpu.reduce(cpu_dev, &ac);
    static const char *ops[] = {"sum", "mean", "max", "min", "count"};
    char what[200];
    snprintf(what, sizeof what, "reduce %s%s %s %s%s%s", ops[op],
             with_index ? " with positions" : "", dtname(dt), name,
             kind == 1 ? " (ties, NaN)" : "",
             ystrided ? ", y padded, the positions transposed" : "");
    check(what, sa, sb, {&ty, &ti}, emu_kern_launches, 0);
}

void reduce_cases()
{
    static const int64_t d1[] = {37, 5, 3}, d2[] = {3, 700, 2}, d3[] = {6, 0, 2}, d4[] = {4, 3, 5, 2};
    static const int k01[] = {0, 0, 1}, k1[] = {1, 0, 1}, k0[] = {0, 1, 1}, k02[] = {0, 1, 0, 1},
                     kall[] = {0, 0, 0};
    for (dla_dtype dt : floats)
        for (int op = 0; op < 4; op++)
            for (int wi = 0; wi < (op >= 2 ? 2 : 1); wi++) {
                const int kind = op >= 2 ? 1 : 0;
                reduce_case(op, dt, 3, d1, k01, kind, wi, "37x5x3 over dims 0 and 1");
                reduce_case(op, dt, 3, d1, k1, kind, wi, "37x5x3 over dim 1");
                reduce_case(op, dt, 3, d2, k0, kind, wi, "3x700x2 over dim 0");
                reduce_case(op, dt, 3, d2, k1, kind, wi, "3x700x2 over dim 1 (parts)");
                reduce_case(op, dt, 3, d1, kall, kind, wi, "37x5x3 over everything");
                reduce_case(op, dt, 4, d4, k02, kind, wi, "4x3x5x2 over dims 0 and 2");
                reduce_case(op, dt, 3, d3, k0, kind, wi, "6x0x2 over dim 0 (empty)");
                reduce_case(op, dt, 3, d3, k1, kind, wi, "6x0x2 over dim 1 (an empty block)");
                reduce_case(op, dt, 3, d1, k1, kind, wi, "37x5x3 over dim 1", 1);
                reduce_case(op, dt, 4, d4, k02, kind, wi, "4x3x5x2 over dims 0 and 2", 1);
                reduce_case(op, dt, 3, d2, k1, kind, wi, "3x700x2 over dim 1 (parts)", 1);
            }
}

/* ------------------------------------------ gemm: C = beta C, the small one */

/* k 0 or alpha 0 (conv_kernels.cu's gemm_scale, page by page), else the
 * small kernel (onekern_kernels.cu); C's pages apart or overlapping
 * (scaled in turn). Integers: every sum exact in any order. */
void gemm_case(dla_dtype dt, int64_t k, double alpha, double beta, int overlap, int ta)
{
    dla_gemm_args g;
    memset(&g, 0, sizeof g);
    g.struct_size = sizeof g;
    g.dtype = dt;
    g.m = 5, g.n = 3, g.k = k, g.batch = 3;
    g.trans_a = ta;
    g.alpha = alpha, g.beta = beta;
    const int64_t ra = ta ? k : g.m, ca = ta ? g.m : k;
    g.a.ld = (ra > 0 ? ra : 1) + 2, g.b.ld = (k > 0 ? k : 1) + 1, g.c.ld = g.m + 3;
    g.a.batch_stride = g.a.ld * ca + 1, g.b.batch_stride = 0;
    g.c.batch_stride = overlap ? 4 : g.c.ld * g.n + 2;
    g.a.offset = 1, g.b.offset = 2, g.c.offset = 3;
    const size_t es = dla_kit_dtype_size(dt);
    (void)es;
    twin ta_, tb, tc;
    fill_values(ta_, dt, (size_t)(g.a.offset + g.a.batch_stride * 3 + g.a.ld * (ca + 1)), 0);
    fill_values(tb, dt, (size_t)(g.b.offset + g.b.ld * (g.n + 1)), 0);
    fill_values(tc, dt, (size_t)(g.c.offset + g.c.batch_stride * 2 + g.c.ld * g.n), beta == 0 ? 1 : 0);
    dla_gemm_args gc = g;
    g.a.mem = (dla_mem)&ta_.m, g.b.mem = (dla_mem)&tb.m, g.c.mem = (dla_mem)&tc.m;
    gc.a.mem = ta_.c, gc.b.mem = tb.c, gc.c.mem = tc.c;
    const long before = emu_kern_launches;
    const dla_status sa = dla__cu_gemm(&cu, &g);
    const dla_status sb = cpu.gemm(cpu_dev, &gc);
    std::string why;
    bool ok = sa == sb;
    if (!ok)
        why = "status cuda " + std::to_string((int)sa) + ", cpu " + std::to_string((int)sb) +
              (sb != DLA_OK ? std::string(" (cpu: ") + g_cpu_error + ")" : std::string());
    if (ok && !tc.same_values(dt, &why))
        ok = false;
    if (ok && (k == 0 || alpha == 0) && emu_kern_launches == before)
        ok = false, why = "no kernel launched";
    g_result(ok, "cuda kernels on the CPU against the cpu plugin%s: gemm %s k %lld alpha %g beta %g%s%s%s%s",
             g_order, dtname(dt), (long long)k, alpha, beta, overlap ? ", C's pages overlapping" : "",
             ta ? ", A transposed" : "", ok ? "" : ": ", why.c_str());
}

void gemm_cases()
{
    for (dla_dtype dt : floats)
        for (int64_t k : {0, 7})
            for (double alpha : {0.0, 0.75})
                for (double beta : {0.0, -1.5, 1.0})
                    /* (overlapping pages of a product go to cuBLAS page by
                     * page, which the emulation has not got) */
                    for (int overlap = 0; overlap < (k == 0 || alpha == 0 ? 2 : 1); overlap++)
                        gemm_case(dt, k, alpha, beta, overlap, k == 7 && alpha != 0);
}

/* ----------------------------------- plan.c's copies of a graph's regions */

/* copy_kernels.cu's copies_k: regions of every size and alignment (16-,
 * 4- and 1-byte units), a row of blocks each, against memcpy. */
void copies_cases()
{
    static const int64_t sizes[] = {0, 1, 3, 4, 16, 17, 48, 4101, 100000, 64, 12, 7};
    static const int offs[] = {0, 1, 4, 16, 3, 8, 12, 2, 0, 5, 4, 16};
    const int n = (int)(sizeof sizes / sizeof *sizes);
    for (int blocks = 1; blocks <= 5; blocks += 4) {
        std::vector<std::vector<unsigned char>> src(n), dst(n), want(n);
        dla__cu_copies c;
        memset(&c, 0, sizeof c);
        c.n = n;
        for (int r = 0; r < n; r++) {
            const size_t room = (size_t)sizes[r] + 32;
            src[r].resize(room), dst[r].resize(room);
            for (size_t i = 0; i < room; i++)
                src[r][i] = (unsigned char)rnd_u(), dst[r][i] = (unsigned char)rnd_u();
            /* 16-aligned bases (vector storage is), the offsets unalign them */
            want[r] = dst[r];
            memcpy(&want[r][(size_t)offs[(r + 3) % n]], &src[r][(size_t)offs[r]],
                   (size_t)sizes[r]);
            c.src[r] = (const char *)&src[r][(size_t)offs[r]];
            c.dst[r] = (char *)&dst[r][(size_t)offs[(r + 3) % n]];
            c.bytes[r] = sizes[r];
        }
        const long before = emu_kern_launches;
        const cudaError_t e = dla__cu_launch_copies(NULL, (unsigned)blocks, &c);
        int bad = -1;
        for (int r = 0; r < n && bad < 0; r++)
            if (dst[r] != want[r])
                bad = r;
        g_result(e == cudaSuccess && bad < 0 && emu_kern_launches == before + 1,
                 "cuda kernels on the CPU%s: plan.c's copies of %d regions (0 to 100,000 bytes, "
                 "every alignment) in rows of %d blocks, against memcpy%s",
                 g_order, n, blocks, bad >= 0 ? (": region " + std::to_string(bad) + " differs").c_str() : "");
    }
}

/* --------------------------------------------------------- convolutions */

struct conv_geom {
    int ns;
    int64_t batch, C, F, G;
    int64_t in[3], fs[3], st[3], dl[3], pb[3], pe[3];
    const char *name;
};
const conv_geom convs[] = {
    {1, 2, 3, 4, 1, {9}, {3}, {2}, {1}, {1}, {1}, "1-d 9, 3 taps, stride 2, pad 1"},
    {2, 2, 4, 6, 2, {7, 6}, {3, 2}, {1, 2}, {2, 1}, {2, 0}, {1, 1},
     "2-d 7x6, 2 groups, dilation 2x1, asymmetric padding"},
    {3, 1, 2, 2, 1, {4, 5, 3}, {2, 3, 2}, {1, 2, 1}, {1, 1, 1}, {1, 1, 0}, {0, 1, 1}, "3-d 4x5x3"},
    {1, 2, 2, 3, 1, {10}, {3}, {1}, {1}, {-1}, {-2}, "1-d negative padding"},
    {2, 1, 4, 4, 4, {6, 6}, {3, 3}, {2, 2}, {1, 1}, {1, 1}, {1, 1}, "2-d depthwise, stride 2"},
    {2, 6, 2, 2, 1, {40, 40}, {3, 3}, {1, 1}, {1, 1}, {1, 1}, {1, 1},
     "2-d 40x40, batch 6 (the grid wraps; 9,600 terms a filter element)"},
    {2, 0, 2, 2, 1, {5, 5}, {3, 3}, {1, 1}, {1, 1}, {0, 0}, {0, 0}, "batch 0"},
    {1, 3, 2, 2, 1, {8}, {1}, {3}, {1}, {0}, {0}, "1-d 1 tap, stride 3 (inputs no output reads)"},
};

/* dir: 0 forward (bias too when bias), 1 backward data, 2 backward
 * filter. perm: x channel-fastest (a CBT input's strides), y padded. */
void conv_case(const conv_geom &c, int dir, int bias, dla_dtype dt, int perm)
{
    dla_conv_args a;
    memset(&a, 0, sizeof a);
    a.struct_size = sizeof a;
    a.dtype = dt;
    a.nspatial = c.ns;
    a.batch = c.batch, a.in_channels = c.C, a.out_channels = c.F, a.groups = c.G;
    int64_t xd[5], wd[6], yd[5];
    for (int d = 0; d < 3; d++) {
        const bool on_ = d < c.ns;
        a.in_size[d] = on_ ? c.in[d] : 1;
        a.filter_size[d] = on_ ? c.fs[d] : 1;
        a.stride[d] = on_ ? c.st[d] : 1;
        a.dilation[d] = on_ ? c.dl[d] : 1;
        a.pad_begin[d] = on_ ? c.pb[d] : 0;
        const int64_t pe = on_ ? c.pe[d] : 0;
        a.out_size[d] = (a.in_size[d] + a.pad_begin[d] + pe - a.dilation[d] * (a.filter_size[d] - 1) -
                         1) / a.stride[d] + 1;
    }
    for (int d = 0; d < c.ns; d++)
        xd[d] = a.in_size[d], yd[d] = a.out_size[d], wd[d] = a.filter_size[d];
    xd[c.ns] = c.C, xd[c.ns + 1] = c.batch;
    yd[c.ns] = c.F, yd[c.ns + 1] = c.batch;
    wd[c.ns] = c.C / c.G, wd[c.ns + 1] = c.F / c.G, wd[c.ns + 2] = c.G;
    const int nx = c.ns + 2, nw = c.ns + 3;
    int64_t xs[5], ys[5], run = 1;
    if (perm) { /* channel, batch, then the spatial dims */
        xs[c.ns] = 1, xs[c.ns + 1] = c.C, run = c.C * c.batch;
        for (int d = 0; d < c.ns; d++)
            xs[d] = run, run *= xd[d];
        run = 1;
        for (int d = 0; d < nx; d++)
            ys[d] = run, run = run * yd[d] + 1;
    }
    const dla_view x = view(dt, nx, xd, perm ? xs : NULL, perm ? 1 : 0);
    const dla_view y = view(dt, nx, yd, perm ? ys : NULL, perm ? 2 : 0);
    const dla_view w = view(dt, nw, wd, NULL, 0);
    const int64_t bst = 2;
    const dla_view bv = view(dt, 1, &c.F, &bst, 1);
    twin tx, tw, ty, tb;
    fill_values(tx, dt, span(x), dir == 1 ? 3 : 0);
    fill_values(tw, dt, span(w), dir == 2 ? 3 : 0);
    fill_values(ty, dt, span(y), dir == 0 ? 3 : 0);
    fill_values(tb, dt, span(bv), 0);
    dla_conv_args ac = a;
    a.x = on(x, tx, 0), a.w = on(w, tw, 0), a.y = on(y, ty, 0);
    ac.x = on(x, tx, 1), ac.w = on(w, tw, 1), ac.y = on(y, ty, 1);
    if (bias && dir == 0)
        a.bias = on(bv, tb, 0), ac.bias = on(bv, tb, 1);
    const long before = emu_kern_launches;
    dla_status sa, sb;
    const twin *out;
    dla_dtype odt = dt;
    if (dir == 0)
        sa = dla__cu_conv_forward(&cu, &a), sb = cpu.conv_forward(cpu_dev, &ac), out = &ty;
    else if (dir == 1)
        sa = dla__cu_conv_backward_data(&cu, &a), sb = cpu.conv_backward_data(cpu_dev, &ac),
        out = &tx;
    else
        sa = dla__cu_conv_backward_filter(&cu, &a), sb = cpu.conv_backward_filter(cpu_dev, &ac),
        out = &tw;
    static const char *dirs[] = {"forward", "backward data", "backward filter"};
    std::string why;
    bool ok = sa == sb;
    if (!ok)
        why = "status cuda " + std::to_string((int)sa) + ", cpu " + std::to_string((int)sb) +
              (sb != DLA_OK ? std::string(" (cpu: ") + g_cpu_error + ")" : std::string());
    if (ok && !out->same_values(odt, &why))
        ok = false;
    const int64_t work = dir == 0 ? c.batch * c.F : dir == 1 ? c.batch * c.C : c.F;
    if (ok && work > 0 && emu_kern_launches == before)
        ok = false, why = "no kernel launched";
    g_result(ok, "cuda kernels on the CPU against the cpu plugin: conv %s%s %s %s%s%s%s",
             dirs[dir], bias && dir == 0 ? " with bias" : "", dtname(dt), c.name,
             perm ? ", x channel-fastest and y padded" : "", ok ? "" : ": ", why.c_str());
}

void conv_cases()
{
    for (const conv_geom &c : convs)
        for (dla_dtype dt : floats)
            for (int perm = 0; perm < 2; perm++) {
                conv_case(c, 0, 0, dt, perm);
                conv_case(c, 0, 1, dt, perm);
                conv_case(c, 1, 0, dt, perm);
                /* The filter gradient's blocks run 256 host threads
                 * meeting at 10 barriers an element (about half a second a
                 * case on two cores): its views permuted in one dtype. */
                if (!perm || dt == DLA_F32)
                    conv_case(c, 2, 0, dt, perm);
            }
}

} // namespace

void emu_kernel_cases(void (*result)(int ok, const char *fmt, ...))
{
    g_result = result;
    setenv("DLACCEL_CPU_VMATH", "off", 1);
    /* im2col and OpenBLAS: sums of products of small integers, exact in
     * any order (Winograd's transforms would round them). */
    setenv("DLACCEL_CPU_CONV", "im2col", 1);
    void *lib = dlopen(DLA_EMU_CPU_PLUGIN, RTLD_NOW | RTLD_LOCAL);
    dla_plugin_init_fn init = lib ? (dla_plugin_init_fn)dlsym(lib, "dlaccel_plugin_init") : NULL;
    memset(&cpu, 0, sizeof cpu);
    cpu.struct_size = sizeof cpu;
    if (!init || init(&cpu_host, &cpu) != DLA_OK || cpu.device_open(0, &cpu_dev) != DLA_OK) {
        result(0, "cuda kernels on the CPU: the cpu plugin %s: %s", DLA_EMU_CPU_PLUGIN,
               lib ? g_cpu_error : dlerror());
        return;
    }
    memset(&cu, 0, sizeof cu);
    cu.kit.host = dla__cu_host;
    cu.kit.name = "cuda";
    cu.kit.mem_bytes = dla__cu_mem_bytes;
    cu.sms = 2;
    emu_alloc_allowed = 1;
    /* Twice: the launches' threads in order, then in reverse (the last
     * block's last thread first). A GPU runs them in no order, so a
     * result that depends on it (a thread reading what another writes)
     * would differ between the two. (The convolution filter gradient's
     * threads run at once, in whatever order the host gives them.) */
    for (emu_kern_reverse = 0; emu_kern_reverse < 2; emu_kern_reverse++) {
        g_order = emu_kern_reverse ? " (threads in reverse order)" : "";
        copy_cases();
        elementwise_cases();
        random_cases();
        pool_cases();
        index_cases();
        gemm_cases();
        copies_cases();
    }
    emu_kern_reverse = 0;
    g_order = "";
    reduce_cases();
    conv_cases();
    emu_alloc_allowed = 0;
    cpu.device_close(cpu_dev);
    if (cpu.shutdown)
        cpu.shutdown();
    /* (the library stays loaded: its threads may still be winding down) */
}
