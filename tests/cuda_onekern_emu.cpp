/*
 * cuda_onekern_emu.cpp - the cuda plugin's one-kernel replay and small
 * GEMM run on the CPU (part of tests/cuda_fused_emu, whose main calls
 * emu_onekern_cases; no GPU needed).
 *
 * What runs is the plugin's own code: gemm.c, reduce.c and fused.c's
 * members with the recording of onekern.c and the counting of space.c's
 * dla__cu_enter, and the kernels of onekern_kernels.cu compiled for the
 * host (cuda_fused_emu_shim.h): the small GEMM kernel launched as a grid
 * of threads one by one, the reduce kernels likewise (a block per output
 * with its threads at once, below), and
 * the one kernel as one block of EMU_TEAM threads at once, meeting at its
 * barriers, its copies in and out dealt round groups of 8 of them.
 *
 * The checks:
 *   - the small GEMM (trans, padded leading dims, page strides including
 *     a broadcast page, beta 0 over a NaN, f32 and f64) against a
 *     reference that adds the k products in the same order in the same
 *     type: the same bits;
 *   - a chain of launches made as plan.c makes them during a capture
 *     (small GEMMs, fused, fused_multi with an extra, a sum and a max
 *     with its position), recorded, uploaded and run again as the one
 *     kernel from the state before the chain, with copies in and out:
 *     every byte of every buffer the same as after the launches one by
 *     one;
 *   - a launch with too much work, or a member that records nothing,
 *     leaves no one kernel (dla__cu_k1_upload gives NULL);
 *   - sums, means and maxima with positions over two and three reduced
 *     dims (red_pos's division by each dim, with reduce.c's multiply-high
 *     constants) against the positions in order: the same bits;
 *   - reduce.c's other launch shapes (a block per output, in one part and
 *     in parts; a thread per output in parts; the parts' combine), the
 *     block bodies of reduce_dev.cuh run with EMU_TEAM threads at once on
 *     cuda_fused_emu.cpp's team.
 * What the device's arithmetic gives is check-plugin's business on a GPU.
 */
#include "plugins/cuda/libs.h"
#include "plugins/cuda/onekern_kern.h"

#include "tests/cuda_fused_emu.h"

#include <cuda_runtime.h>
#include <math.h>

#include "tests/cuda_fused_emu_shim.h"

#define DLA__CU_EMU 1
/* Groups of 8 of the team's 32 threads copy the one kernel's regions in
 * and out, so that regions are dealt round several groups here too. */
#define DLA__CU_K1_LANES 8
#include "plugins/cuda/onekern_kernels.cu"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <unistd.h>
#include <vector>



/* The one kernel's dynamic shared memory (48 KiB, as its launcher asks at
 * most). */
int4 dla__cu_k1_smem[48 * 1024 / sizeof(int4)];

int emu_alloc_allowed; /* cuda_fused_emu.cpp's dla__cu_mem_alloc gives memory */
extern int emu_nvrtc_builds; /* its dla__cu_nvrtc_build's tries */

namespace {

int g_k1_launches, g_sgemm_launches;
/* The last reduce launch's shape and parts. */
struct {
    int64_t shape, parts;
} g_red_seen;
/* Steps the emulated launch stages in shared memory (-1: as many as fit,
 * as the launcher does). */
int g_k1_staged = -1;
/* Whether the last one kernel ran with the regions in shared memory. */
int g_k1_windows = 0;

/* reduce_kernels.cu's launches of dtype T: shape 0's block kernels with
 * EMU_TEAM threads a block (the GPU's have 256; the bodies take the count
 * as a template argument) at once on the team, their shared memory
 * static here; shape 1's kernel (the one kernel's step) thread by thread;
 * the parts' combine. Both loop over the grid, so at most 2 blocks run
 * of the first. */
template <typename T> void red_emu(const dla__cu_red_launch &l)
{
    static double sh[EMU_TEAM];
    static T shv[EMU_TEAM];
    static int64_t shp[EMU_TEAM];
    if (l.shape == 0)
        emu_run_blocks(l.grid < 2 ? l.grid : 2, EMU_TEAM, [&] {
            if (l.op <= 1)
                red_sum_block_body<T, EMU_TEAM>(l, sh);
            else if (l.op == 2)
                red_ext_block_body<true, T, EMU_TEAM>(l, shv, shp);
            else
                red_ext_block_body<false, T, EMU_TEAM>(l, shv, shp);
        });
    else
        emu_run_grid(l.grid, DLA__CU_THREADS, [&] { reduce_step<T>(l); });
    if (l.parts > 1)
        emu_run_grid(l.combine_grid < 2 ? l.combine_grid : 2, DLA__CU_THREADS, [&] {
            if (l.op <= 1)
                red_sum_combine_body<T>(l);
            else if (l.op == 2)
                red_ext_combine_body<true, T>(l);
            else
                red_ext_combine_body<false, T>(l);
        });
}

} // namespace

/* ----------------------------- what gemm.c, reduce.c and onekern.c call */
extern "C" {

cudaError_t dla__cu_sgemm_launch(cudaStream_t stream, unsigned blocks, const dla__cu_sgemm *g)
{
    (void)stream;
    g_sgemm_launches++;
    if (g->f64)
        emu_run_grid(blocks, DLA__CU_THREADS, [&] { sgemm_k<double>(*g); });
    else
        emu_run_grid(blocks, DLA__CU_THREADS, [&] { sgemm_k<float>(*g); });
    return cudaSuccess;
}

cudaError_t dla__cu_k1_launch(cudaStream_t stream, const dla__cu_k1_step *steps, int32_t n,
                              const dla__cu_copies *in, const dla__cu_copies *out,
                              unsigned long long *prof, int how, const dla__cu_k1_win *win)
{
    (void)stream;
    /* DLA__CU_K1_EARLY: one launch at a time here, nothing to start early
     * beside (its wait is a no-op off the GPU). */
    (void)how;
    g_k1_launches++;
    /* Every step staged, as the launcher stages as many as fit; the
     * emulation runs those past the shared memory from global memory. */
    const int32_t fit = (int32_t)(sizeof dla__cu_k1_smem / (sizeof(dla__cu_k1_step)));
    const int32_t staged = g_k1_staged < 0 ? (n < fit ? n : fit) : g_k1_staged;
    /* The windows as the launcher takes them: every step staged, and room. */
    const size_t stage = ((size_t)staged * sizeof(dla__cu_k1_step) + 15) / 16 * 16;
    const int windows = win && win->nrel >= 0 && staged == n &&
                        stage + (size_t)win->bytes <= sizeof dla__cu_k1_smem;
    const dla__cu_k1_reloc *rel = windows ? win->rel : NULL;
    const int32_t nrel = windows ? win->nrel : -1;
    g_k1_windows = windows;
    if (prof)
        emu_run_blocks(1, EMU_TEAM,
                       [&] { onekern_k<true>(steps, n, staged, *in, *out, prof, rel, nrel); });
    else
        emu_run_blocks(1, EMU_TEAM,
                       [&] { onekern_k<false>(steps, n, staged, *in, *out, prof, rel, nrel); });
    return cudaSuccess;
}

cudaError_t dla__cu_reduce_launch(const dla__cu_red_launch *l, cudaStream_t stream)
{
    (void)stream;
    g_red_seen.shape = l->shape;
    g_red_seen.parts = l->parts;
    if (l->f64)
        red_emu<double>(*l);
    else
        red_emu<float>(*l);
    return cudaSuccess;
}

/* elementwise.c's and copy.c's kernels are elementwise_kernels.cu's and
 * copy_kernels.cu's, compiled for the host (tests/cuda_kernels_emu.cpp). */

cudaError_t cudaMemsetAsync(void *dst, int value, size_t count, cudaStream_t stream)
{
    (void)stream;
    memset(dst, value, count);
    return cudaSuccess;
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    (void)kind;
    (void)stream;
    memcpy(dst, src, count);
    return cudaSuccess;
}

/* The copies above are done when they return. */
cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    (void)stream;
    return cudaSuccess;
}

/* gemm.c's cuBLAS path and C = beta C: not reached by these cases. */
const dla__cu_blas *dla__cu_blas_lib(const char **why)
{
    *why = "no cuBLAS in the emulation";
    return NULL;
}

dla__cu_blas_state *dla__cu_blas_of(dla__cu_device *d, const char *member, dla_status *st)
{
    (void)d;
    (void)member;
    *st = DLA_ERR_UNSUPPORTED;
    return NULL;
}

const char *dla__cu_blas_msg(cublasStatus_t st)
{
    (void)st;
    return "no cuBLAS in the emulation";
}


} // extern "C"

namespace {

typedef void (*result_fn)(int ok, const char *fmt, ...);

/* Device memory: a block of the "device" (host memory) with its handle. */
struct dbuf {
    dla__cu_mem m;
    std::vector<unsigned char> data;
    void init(size_t bytes)
    {
        data.assign(bytes, 0);
        m.ptr = (char *)data.data();
        m.bytes = m.cap = bytes;
        m.next = NULL;
    }
};

unsigned long long rng = 0x9e3779b97f4a7c15ULL;
double rnd()
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng % 2000001) / 1000000.0 - 1.0;
}

template <typename T> void fill_random(dbuf &b)
{
    for (size_t e = 0; e + sizeof(T) <= b.data.size(); e += sizeof(T)) {
        const T x = (T)rnd();
        memcpy(&b.data[e], &x, sizeof x);
    }
}

void new_device(dla__cu_device &d)
{
    memset(&d, 0, sizeof d);
    d.kit.host = dla__cu_host;
    d.kit.name = "cuda";
    d.kit.mem_bytes = dla__cu_mem_bytes;
    d.sms = 2;
    d.fused_off32 = 1;
}

dla_view dense(dbuf &b, dla_dtype dt, int nd, const int64_t *dims, int64_t offset)
{
    dla_view v;
    memset(&v, 0, sizeof v);
    v.struct_size = sizeof v;
    v.mem = (dla_mem)&b.m;
    v.dtype = dt;
    v.ndims = nd;
    v.offset = offset;
    int64_t st = 1;
    for (int k = 0; k < nd; k++) {
        v.dims[k] = dims[k];
        v.strides[k] = st;
        st *= dims[k];
    }
    return v;
}

/* --------------------------------------------------------- the small GEMM */

template <typename T> T at(const dbuf &b, int64_t e)
{
    T x;
    memcpy(&x, &b.data[(size_t)e * sizeof(T)], sizeof x);
    return x;
}

/* k of 7 and of 19 (more than the eight products a thread might load
 * ahead: the H100 found that slower in the one kernel, 2026-11-27). */
template <typename T>
void gemm_case(result_fn result, int ta, int tb, int bcast, int beta0, int64_t k)
{
    const dla_dtype dt = sizeof(T) == 8 ? DLA_F64 : DLA_F32;
    const int64_t m = 5, n = 3, batch = 3;
    dla_gemm_args g;
    memset(&g, 0, sizeof g);
    g.struct_size = sizeof g;
    g.dtype = dt;
    g.m = m, g.n = n, g.k = k, g.batch = batch;
    g.trans_a = ta, g.trans_b = tb;
    g.alpha = 0.75;
    g.beta = beta0 ? 0.0 : -1.5;
    /* stored A is m x k (k x m transposed), B k x n (n x k); leading dims
     * padded by 2, pages apart by more than a page, A's broadcast. */
    const int64_t ra = ta ? k : m, ca = ta ? m : k, rb = tb ? n : k, cb = tb ? k : n;
    g.a.ld = ra + 2, g.b.ld = rb + 1, g.c.ld = m + 3;
    g.a.batch_stride = bcast ? 0 : g.a.ld * ca + 4;
    g.b.batch_stride = g.b.ld * cb + 1;
    g.c.batch_stride = g.c.ld * n + 2;
    g.a.offset = 2, g.b.offset = 1, g.c.offset = 3;
    dbuf A, B, C;
    A.init((size_t)(g.a.offset + g.a.batch_stride * (batch - 1) + g.a.ld * ca) * sizeof(T));
    B.init((size_t)(g.b.offset + g.b.batch_stride * (batch - 1) + g.b.ld * cb) * sizeof(T));
    C.init((size_t)(g.c.offset + g.c.batch_stride * (batch - 1) + g.c.ld * n + 5) * sizeof(T));
    fill_random<T>(A);
    fill_random<T>(B);
    fill_random<T>(C);
    if (beta0) /* beta 0 must not read C */
        for (size_t e = 0; e < C.data.size() / sizeof(T); e++) {
            const T nan = (T)NAN;
            memcpy(&C.data[e * sizeof(T)], &nan, sizeof nan);
        }
    g.a.mem = (dla_mem)&A.m, g.b.mem = (dla_mem)&B.m, g.c.mem = (dla_mem)&C.m;
    std::vector<unsigned char> want = C.data;
    for (int64_t p = 0; p < batch; p++)
        for (int64_t j = 0; j < n; j++)
            for (int64_t i = 0; i < m; i++) {
                T acc = 0;
                for (int64_t l = 0; l < k; l++) {
                    const int64_t ea = g.a.offset + p * g.a.batch_stride +
                                       (ta ? l + i * g.a.ld : i + l * g.a.ld);
                    const int64_t eb = g.b.offset + p * g.b.batch_stride +
                                       (tb ? j + l * g.b.ld : l + j * g.b.ld);
                    acc = acc + at<T>(A, ea) * at<T>(B, eb);
                }
                const int64_t ec = g.c.offset + p * g.c.batch_stride + i + j * g.c.ld;
                T v = (T)g.alpha * acc;
                if (!beta0)
                    v = v + (T)g.beta * at<T>(C, ec);
                memcpy(&want[(size_t)ec * sizeof(T)], &v, sizeof v);
            }
    dla__cu_device d;
    new_device(d);
    const int launches = g_sgemm_launches;
    const dla_status s = dla__cu_gemm(&d, &g);
    const int ok = s == DLA_OK && g_sgemm_launches == launches + 1 && C.data == want;
    result(ok, "small gemm %s, k %d, trans %d%d, %s, beta %s: the reference's bits",
           sizeof(T) == 8 ? "f64" : "f32", (int)k, ta, tb, bcast ? "A's page broadcast" : "A paged",
           beta0 ? "0 over NaN" : "-1.5");
}

/* -------------------------------------------------- the one-kernel replay */

/* y = op(x) over the dims where y has 1, through reduce.c. */
dla_status reduce(dla__cu_device &d, dla_reduce_op op, dla_view x, dla_view y,
                  const dla_view *index = NULL)
{
    dla_reduce_args r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.op = op;
    r.x = x;
    r.y = y;
    if (index)
        r.index = *index;
    return dla__cu_reduce(&d, &r);
}

/* The chain of launches, as a capture makes them: h = W x (8x4 by 4x3),
 * y = relu(h + b) keeping h + b, q = (h + b) y - h keeping two, s = sum
 * of y along dim 1, z = 0.5 W' s + z, u = 2 z - 1, m = max of y along dim
 * 0 with its position, two fills, e = exp(y), p = e b, its transpose, and
 * two more reductions (below). too_big: one more fused launch over more
 * elements than a step may take; silent: a member that records nothing
 * is called (as a convolution would be). */
/* The one kernel compiled for steps[0 .. n-1] (onekern_source.c, what the
 * plugin gives NVRTC), built here by the host compiler as a shared object
 * after the shim (its kernel a plain function, run by emu_run_blocks as
 * the interpreted one is) and loaded; NULL, with the reason printed, when
 * it does not build or load. *so: the loaded object (dlclose it). The
 * object finds threadIdx, blockDim and __syncthreads in this program
 * (linked -rdynamic). */
typedef void (*k1c_fn)(dla__cu_copies, dla__cu_copies, unsigned long long *, int);
k1c_fn host_compiled(const dla__cu_k1_step *steps, int32_t n, void **so)
{
    *so = NULL;
    const size_t size = dla__cu_k1_source(steps, n, 0, NULL, 0) + 1;
    if (size == 1) {
        printf("# the one kernel's steps have no compiled source\n");
        return NULL;
    }
    std::vector<char> body(size);
    dla__cu_k1_source(steps, n, 0, body.data(), size);
    const char *tmp = getenv("TMPDIR");
    std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/dla_k1c_XXXXXX";
    if (!mkdtemp(&dir[0])) {
        printf("# mkdtemp %s failed\n", dir.c_str());
        return NULL;
    }
    const std::string cpp = dir + "/k1c.cpp", lib = dir + "/k1c.so", log = dir + "/k1c.log";
    FILE *f = fopen(cpp.c_str(), "w");
    if (f) {
        fprintf(f, "#include <cuda_runtime.h>\n#include \"tests/cuda_fused_emu_shim.h\"\n"
                   "#include <cmath>\n#include <cstring>\nusing std::isnan;\n"
                   "static inline double __longlong_as_double(unsigned long long b)\n"
                   "{\n  double d;\n  memcpy(&d, &b, sizeof d);\n  return d;\n}\n%s",
                body.data());
        fclose(f);
    }
    const std::string cmd = std::string(DLA_EMU_CXX) +
                            " -std=c++17 -O1 -ffp-contract=off -fPIC -shared -w " +
                            DLA_EMU_CPPFLAGS + " " + cpp + " -o " + lib + " >" + log + " 2>&1";
    k1c_fn fn = NULL;
    if (!f || system(cmd.c_str()) != 0) {
        printf("# the host compiler refused the one kernel's source: %s\n", cmd.c_str());
        if (FILE *l = fopen(log.c_str(), "r")) {
            char line[512];
            for (int i = 0; i < 20 && fgets(line, sizeof line, l); i++)
                printf("# %s", line);
            fclose(l);
        }
    } else if (!(*so = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL))) {
        printf("# dlopen: %s\n", dlerror());
    } else if (!(fn = (k1c_fn)dlsym(*so, DLA__CU_K_K1C))) {
        printf("# dlsym %s: %s\n", DLA__CU_K_K1C, dlerror());
    }
    unlink(cpp.c_str());
    unlink(lib.c_str()); /* a loaded object stays mapped */
    unlink(log.c_str());
    rmdir(dir.c_str());
    return fn;
}

template <typename T> void chain_case(result_fn result, int too_big, int silent)
{
    const dla_dtype dt = sizeof(T) == 8 ? DLA_F64 : DLA_F32;
    const int64_t d_h[2] = {8, 3}, d_s[2] = {8, 1}, d_z[2] = {4, 1}, d_m[2] = {1, 3},
                  d_big[1] = {70000};
    const int64_t d_r[2] = {4, 128}, d_one[2] = {1, 1}, d_f[2] = {4, 3};
    enum {
        W, X, H, B, Y, HB, S, Z, U, M, MI, XRUN, URUN, BIG,
        F, ZR, E, P, TP, TOT, R, RS, Q, Q0, Q1, NB
    };
    dbuf b[NB];
    const int64_t el[NB] = {32, 12, 24, 8, 24, 24, 8, 4, 4, 3, 3, 12, 4, 70000,
                            12, 8,  24, 24, 24, 1, 512, 1, 24, 24, 24};
    for (int i = 0; i < NB; i++) {
        b[i].init((size_t)(el[i] + 1) * (i == MI ? 4 : sizeof(T)));
        if (i != MI)
            fill_random<T>(b[i]);
    }
    memcpy(b[XRUN].data.data(), b[X].data.data(), b[X].data.size()); /* the run's input */
    std::vector<std::vector<unsigned char>> before(NB);
    for (int i = 0; i < NB; i++)
        before[i] = b[i].data;

    dla__cu_device d;
    new_device(d);
    dla__cu_set_planning_here(&d);
    dla__cu_k1_begin(&d);
    d.capturing = 1;
    int ok = 1;
    dla_status s;

    dla_gemm_args g1;
    memset(&g1, 0, sizeof g1);
    g1.struct_size = sizeof g1;
    g1.dtype = dt;
    g1.m = 8, g1.n = 3, g1.k = 4, g1.batch = 1, g1.alpha = 1.0, g1.beta = 0.0;
    g1.a.mem = (dla_mem)&b[W].m, g1.a.ld = 8;
    g1.b.mem = (dla_mem)&b[X].m, g1.b.ld = 4;
    g1.c.mem = (dla_mem)&b[H].m, g1.c.ld = 8;
    ok &= (s = dla__cu_gemm(&d, &g1)) == DLA_OK;

    dla_fused_multi_args fm;
    memset(&fm, 0, sizeof fm);
    fm.struct_size = sizeof fm;
    dla_fused_args &a = fm.program;
    a.struct_size = sizeof a;
    a.dtype = dt;
    a.ninputs = 2;
    a.inputs[0] = dense(b[H], dt, 2, d_h, 0);
    a.inputs[1] = dense(b[B], dt, 2, d_h, 0);
    a.inputs[1].strides[1] = 0; /* b broadcast along dim 1 */
    a.y = dense(b[Y], dt, 2, d_h, 0);
    a.ninsns = 2;
    a.insns[0] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_ADD, -1, -2, 0, 0, 0);
    a.insns[1] = emu_insn(DLA_FUSED_UNARY, DLA_UNARY_RELU, 0, 0, 0, 0, 0);
    fm.nextra = 1;
    fm.extra_reg[0] = 0;
    fm.extra[0] = dense(b[HB], dt, 2, d_h, 0);
    ok &= dla__cu_fused_multi(&d, &fm) == DLA_OK;

    /* q = (h + b) y - h, keeping h + b and (h + b) y: 3 inputs, 2 extras
     * (the frame's widest instance in the one kernel). */
    dla_fused_multi_args fw = fm;
    fw.program.ninputs = 3;
    fw.program.inputs[2] = dense(b[Y], dt, 2, d_h, 0);
    fw.program.y = dense(b[Q], dt, 2, d_h, 0);
    fw.program.ninsns = 3;
    fw.program.insns[1] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_MUL, 0, -3, 0, 0, 0);
    fw.program.insns[2] = emu_insn(DLA_FUSED_BINARY, DLA_BINARY_SUB, 1, -1, 0, 0, 0);
    fw.nextra = 2;
    fw.extra_reg[0] = 0;
    fw.extra_reg[1] = 1;
    fw.extra[0] = dense(b[Q0], dt, 2, d_h, 0);
    fw.extra[1] = dense(b[Q1], dt, 2, d_h, 0);
    ok &= dla__cu_fused_multi(&d, &fw) == DLA_OK;

    ok &= reduce(d, DLA_REDUCE_SUM, dense(b[Y], dt, 2, d_h, 0), dense(b[S], dt, 2, d_s, 0)) ==
          DLA_OK;

    dla_gemm_args g2 = g1; /* z = 0.5 W' s + z */
    g2.m = 4, g2.n = 1, g2.k = 8, g2.trans_a = 1, g2.alpha = 0.5, g2.beta = 1.0;
    g2.b.mem = (dla_mem)&b[S].m, g2.b.ld = 8;
    g2.c.mem = (dla_mem)&b[Z].m, g2.c.ld = 4;
    ok &= dla__cu_gemm(&d, &g2) == DLA_OK;

    dla_fused_args f;
    memset(&f, 0, sizeof f);
    f.struct_size = sizeof f;
    f.dtype = dt;
    f.ninputs = 1;
    f.inputs[0] = dense(b[Z], dt, 2, d_z, 0);
    f.y = dense(b[U], dt, 2, d_z, 0);
    f.ninsns = 1;
    f.insns[0] = emu_insn(DLA_FUSED_UNARY, DLA_UNARY_AFFINE, -1, 0, 0, 2.0, -1.0);
    ok &= dla__cu_fused(&d, &f) == DLA_OK;

    const dla_view mi = dense(b[MI], DLA_I32, 2, d_m, 0);
    ok &= reduce(d, DLA_REDUCE_MAX, dense(b[Y], dt, 2, d_h, 0), dense(b[M], dt, 2, d_m, 0), &mi) ==
          DLA_OK;

    /* A fill of 1.5 (a kernel), a fill of zeros (a memset), e = exp(y),
     * p = e b (b broadcast), t = p' (a strided copy), the sums of p and
     * of a 4x128 block (one thread each, DLA__CU_K1_SMALL_REDUCE). */
    dla_view vf = dense(b[F], dt, 2, d_f, 0), vzr = dense(b[ZR], dt, 2, d_s, 0);
    ok &= dla__cu_fill(&d, &vf, 1.5) == DLA_OK;
    ok &= dla__cu_fill(&d, &vzr, 0.0) == DLA_OK;
    dla_unary_args ua;
    memset(&ua, 0, sizeof ua);
    ua.struct_size = sizeof ua;
    ua.op = DLA_UNARY_EXP;
    ua.x = dense(b[Y], dt, 2, d_h, 0);
    ua.y = dense(b[E], dt, 2, d_h, 0);
    ok &= dla__cu_unary(&d, &ua) == DLA_OK;
    dla_binary_args ba;
    memset(&ba, 0, sizeof ba);
    ba.struct_size = sizeof ba;
    ba.op = DLA_BINARY_MUL;
    ba.a = dense(b[E], dt, 2, d_h, 0);
    ba.b = a.inputs[1]; /* b, broadcast along dim 1 */
    ba.z = dense(b[P], dt, 2, d_h, 0);
    ok &= dla__cu_binary(&d, &ba) == DLA_OK;
    dla_view vt = dense(b[TP], dt, 2, d_h, 0), vp = dense(b[P], dt, 2, d_h, 0);
    vt.strides[0] = 3, vt.strides[1] = 1; /* t(i, j) at j + 3 i: p's transpose */
    ok &= dla__cu_strided_copy(&d, &vt, &vp) == DLA_OK;
    ok &= reduce(d, DLA_REDUCE_SUM, dense(b[P], dt, 2, d_h, 0), dense(b[TOT], dt, 2, d_one, 0)) ==
          DLA_OK;
    ok &= reduce(d, DLA_REDUCE_MEAN, dense(b[R], dt, 2, d_r, 0), dense(b[RS], dt, 2, d_one, 0)) ==
          DLA_OK;

    if (too_big) {
        dla_fused_args fb = f;
        fb.inputs[0] = dense(b[BIG], dt, 1, d_big, 0);
        fb.y = fb.inputs[0];
        ok &= dla__cu_fused(&d, &fb) == DLA_OK;
    }
    if (silent)
        ok &= dla__cu_enter(&d, "conv_forward") == DLA_OK;
    d.capturing = 0;
    dla__cu_set_planning_here(NULL);
    emu_alloc_allowed = 1;
    int32_t nsteps = 0;
    /* The roles as plan.c gives them: X copied in, U copied out; their
     * windows and the intermediates' (DLACCEL_CUDA_K1_SHARED) made too. */
    const char *role_lo[2] = {b[X].m.ptr, b[U].m.ptr};
    const int64_t role_bytes[2] = {12 * (int64_t)sizeof(T), 4 * (int64_t)sizeof(T)};
    dla__cu_k1_win win;
    d.k1_shared = 1;
    dla__cu_mem *k = dla__cu_k1_upload(&d, &nsteps, role_lo, role_bytes, 2, &win);
    emu_alloc_allowed = 0;
    const char *what = sizeof(T) == 8 ? "f64" : "f32";
    if (too_big || silent) {
        /* The debug log's reason names the launch. */
        const char *why = too_big ? "a fused launch of 70000 elements"
                                  : "its conv_forward launch is not a step";
        if (!strstr(d.k1_why, why))
            printf("# why: \"%s\", not \"%s\"\n", d.k1_why, why);
        result(ok && !k && nsteps == 0 && strstr(d.k1_why, why), "one kernel %s: none with %s",
               what, too_big ? "a launch of 70000 elements" : "a member that records no step");
        if (k)
            dla__cu_mem_free(&d, (dla_mem)k);
        dla__cu_k1_release(&d);
        dla__cu_seg_release(&d); /* the steps segment.c kept too */
        return;
    }
    ok &= k != NULL && nsteps == 14;
    if (!ok) {
        result(0, "one kernel %s: recorded %d steps of 14 (%s)", what, (int)nsteps, d.k1_why);
        if (k)
            dla__cu_mem_free(&d, (dla_mem)k);
        dla__cu_k1_release(&d);
        dla__cu_seg_release(&d); /* the steps segment.c kept too */
        return;
    }

    /* The launches one by one left eager. The one kernel runs from the
     * state before them, but for the run's input, which it copies in
     * from its own buffer, and the buffer the result is copied out to;
     * with every step staged in shared memory, and with 5 (the rest read
     * from global memory). */
    std::vector<std::vector<unsigned char>> eager(NB);
    for (int i = 0; i < NB; i++)
        eager[i] = b[i].data;
    memcpy(eager[URUN].data(), eager[U].data(), 4 * sizeof(T));
    memset(eager[URUN].data() + 4 * sizeof(T), 0x5a, eager[URUN].size() - 4 * sizeof(T));
    dla__cu_copies in, out;
    memset(&in, 0, sizeof in);
    memset(&out, 0, sizeof out);
    in.n = 1;
    in.src[0] = b[XRUN].m.ptr, in.dst[0] = b[X].m.ptr, in.bytes[0] = 12 * sizeof(T);
    out.n = 1;
    out.src[0] = b[U].m.ptr, out.dst[0] = b[URUN].m.ptr, out.bytes[0] = 4 * sizeof(T);
    /* Which buffers the windows hold: the roles X and U, and the
     * intermediates, which a step writes before any reads them; not W, B
     * and R, which the steps only read, nor Z, which the second GEMM reads
     * before it writes it (beta 1). */
    int moved[NB] = {0};
    const int64_t esize = (int64_t)sizeof(T);
    for (int32_t e = 0; e < win.nrel; e++)
        for (int i = 0; i < NB; i++)
            if ((uintptr_t)win.rel[e].lo >= (uintptr_t)b[i].m.ptr &&
                (uintptr_t)win.rel[e].lo < (uintptr_t)b[i].m.ptr + b[i].data.size())
                moved[i] = 1 + (win.rel[e].lo != (int64_t)(uintptr_t)b[i].m.ptr);
    int windows_ok = win.nrel > 0;
    for (int i : {X, U, H, Y, HB, S, M, MI, E, P, TP, TOT, RS, Q, Q0, Q1, F, ZR})
        windows_ok &= moved[i] == 1;
    for (int i : {W, B, R, Z, XRUN, URUN, BIG})
        windows_ok &= moved[i] == 0;
    if (!windows_ok) {
        printf("# windows: %d relocations; moved:", (int)win.nrel);
        for (int i = 0; i < NB; i++)
            printf(" %d", moved[i]);
        printf("\n");
    }
    result(windows_ok, "one kernel %s: the windows hold the two roles and the 16 intermediates, "
                       "not the 3 buffers only read nor the one the second GEMM reads first",
           sizeof(T) == 8 ? "f64" : "f32");

    /* Every step staged; 5 staged; every step staged with the windows
     * (DLACCEL_CUDA_K1_SHARED: the steps' pointers moved to them, the
     * moved buffers' global bytes never touched, the intermediates'
     * results left in the windows); and the windows asked for with 5
     * staged, which cannot have them (the steps past the staging keep
     * their global pointers). */
    /* The same steps with independent ones joined into phases
     * (DLACCEL_CUDA_K1_JOIN): gemm h; y and h + b (reads h); q (reads
     * them); s (reads y: not written by q's phase, joins it); z (reads
     * s); u (reads z); m (reads y, joins u); the fills of f and 0 (join);
     * e (reads y, joins); p (reads e); its transpose (reads p); the sum of
     * p (joins the transpose); the mean of r (joins): 7 phases of 14. */
    std::vector<dla__cu_k1_step> joined((const dla__cu_k1_step *)k->ptr,
                                        (const dla__cu_k1_step *)k->ptr + nsteps);
    const int32_t phases = dla__cu_k1_join(joined.data(), nsteps);
    char pattern[64] = "";
    for (int32_t i = 0; i < nsteps && i < 63; i++)
        pattern[i] = joined[(size_t)i].join ? 'j' : '|';
    if (phases != 7 || strcmp(pattern, "|||j||jjjj||jj") != 0)
        printf("# joins: %d phases, %s\n", (int)phases, pattern);
    result(phases == 7 && strcmp(pattern, "|||j||jjjj||jj") == 0,
           "one kernel %s: independent steps joined into 7 phases of 14 (%s, j: joined)", what,
           pattern);

    const struct {
        int staged, windows, join;
        const char *name;
    } runs[] = {{-1, 0, 0, "every step staged in shared memory"},
                {5, 0, 0, "5 steps staged"},
                {-1, 1, 0, "every step staged, its data in shared memory"},
                {5, 1, 0, "5 steps staged, its data asked for in shared memory"},
                {-1, 0, 1, "every step staged, independent steps joined"},
                {5, 0, 1, "5 steps staged, independent steps joined"},
                {-1, 1, 1, "every step staged, its data in shared memory, independent steps joined"}};
    for (const auto &run : runs) {
        const int staged = run.staged;
        for (int i = 0; i < NB; i++)
            memcpy(b[i].data.data(), before[i].data(), before[i].size());
        memset(b[X].data.data(), 0, 12 * sizeof(T)); /* the region copied in */
        memset(b[URUN].data.data(), 0x5a, b[URUN].data.size());
        const int launches = g_k1_launches;
        g_k1_staged = staged;
        /* The staged run is profiled too (DLACCEL_CUDA_K1_PROFILE): the
         * same bits, and its launch counted. */
        unsigned long long prof[DLA__CU_K1_PROF_SLOTS] = {0};
        const dla__cu_k1_step *steps = run.join ? joined.data() : (const dla__cu_k1_step *)k->ptr;
        int run_ok = dla__cu_k1_launch(NULL, steps, nsteps, &in,
                                       &out, staged == 5 ? prof : NULL, 0,
                                       run.windows ? &win : NULL) == cudaSuccess &&
                     g_k1_launches == launches + 1 &&
                     prof[DLA__CU_K1_PROF_LAUNCHES] == (staged == 5 ? 1u : 0u);
        const int windows = run.windows && staged < 0;
        run_ok &= g_k1_windows == windows;
        g_k1_staged = -1;
        /* With windows the moved buffers' global bytes are what they
         * held (X the zeros above), and each intermediate's result is in
         * its window, the first of the relocations into it: its whole
         * buffer but the spare element the buffers have. */
        std::vector<std::vector<unsigned char>> want = eager;
        int differ = -1;
        if (windows) {
            const char *base = (const char *)dla__cu_k1_smem +
                               ((int64_t)nsteps * (int64_t)sizeof(dla__cu_k1_step) + 15) / 16 * 16;
            for (int i = 0; i < NB; i++) {
                if (!moved[i] || i == X || i == U)
                    continue;
                want[i] = before[i];
                const size_t n = (size_t)el[i] * (size_t)(i == MI ? 4 : esize);
                for (int32_t e = 0; e < win.nrel; e++)
                    if (win.rel[e].lo == (int64_t)(uintptr_t)b[i].m.ptr) {
                        if (memcmp(base + win.rel[e].off, eager[i].data(), n) != 0 && differ < 0)
                            differ = i;
                        break;
                    }
            }
            want[X] = b[X].data;
            memset(want[X].data(), 0, 12 * sizeof(T));
            want[U] = before[U];
        }
        if (differ >= 0)
            printf("# the window of buffer %d differs from the launches one by one\n", differ);
        for (int i = 0; i < NB && differ < 0; i++)
            if (b[i].data != want[i]) {
                differ = i;
                printf("# buffer %d differs from the launches one by one\n", differ);
            }
        result(ok && run_ok && differ < 0,
               "one kernel %s, %s: 14 steps (2 small gemm, 2 fused_multi, fused, unary, binary, "
               "2 fills, a strided copy, 2 sums, a mean and a max with positions) and its copies "
               "give the bits of the launches one by one",
               what, run.name);
    }
    /* The one kernel compiled for these steps (DLACCEL_CUDA_K1_COMPILE,
     * onekern_source.c), from the same state: every byte the launches'. */
    for (int i = 0; i < NB; i++)
        memcpy(b[i].data.data(), before[i].data(), before[i].size());
    memset(b[X].data.data(), 0, 12 * sizeof(T));
    memset(b[URUN].data.data(), 0x5a, b[URUN].data.size());
    void *so = NULL;
    const k1c_fn fn = host_compiled((const dla__cu_k1_step *)k->ptr, nsteps, &so);
    int differ = -1;
    if (fn) {
        emu_run_blocks(1, EMU_TEAM, [&] { fn(in, out, NULL, DLA_UNARY_NEG); });
        for (int i = 0; i < NB && differ < 0; i++)
            if (b[i].data != eager[i]) {
                differ = i;
                printf("# buffer %d differs from the launches one by one\n", differ);
            }
    }
    if (so)
        dlclose(so);
    result(ok && fn && differ < 0,
           "one kernel %s compiled for its 14 steps (built by the host compiler from the source "
           "NVRTC gets) gives the bits of the launches one by one",
           what);
    /* Where NVRTC fails (here: none), the plan keeps the interpreted
     * kernel and the device tries no more; with DLACCEL_CUDA_K1_COMPILE=0
     * it does not try. */
    dla__cu_k1c c1;
    const int builds = emu_nvrtc_builds;
    d.k1_compile = 0;
    int fallback = !dla__cu_k1_compile(&d, &c1) && !c1.lib && !d.k1c_refused &&
                   emu_nvrtc_builds == builds;
    d.k1_compile = 1;
    fallback &= !dla__cu_k1_compile(&d, &c1) && !c1.lib && d.k1c_refused &&
                emu_nvrtc_builds == builds + 1;
    fallback &= !dla__cu_k1_compile(&d, &c1) && !c1.lib && emu_nvrtc_builds == builds + 1;
    result(fallback, "one kernel %s: not compiled with DLACCEL_CUDA_K1_COMPILE=0; a failed "
                     "compile leaves it interpreted and the device compiling no more",
           what);
    dla__cu_mem_free(&d, (dla_mem)k);
    dla__cu_k1_release(&d);
    dla__cu_seg_release(&d); /* the steps segment.c kept too */
}

/* reduce.c's launches beside the one kernel's: x of small integers
 * (sums exact in any order) reduced as each case says, sum, mean, max and
 * min with positions (ties among the integers: the first position),
 * against the positions in order, and the launch shape and parts the case
 * names. The cases: several reduced dims walked through red_pos, which
 * divides by them with reduce.c's multiply-high constants (3x4x5x2 over
 * dims 0 and 2, which do not merge, and over 0, 1 and 3: 12 and 2; a
 * thread per output in one part); shape 0 (a block per output, threads
 * striding over its positions, a tree) in parts and in one part over two
 * reduced dims; shape 1 in parts; with parts, the combine. */
struct red_case {
    const char *name;
    int64_t dims[4];
    int keep[4];
    int64_t shape;
    int in_parts;
};
const red_case red_cases[] = {
    {"dims 0 and 2 of 3x4x5x2", {3, 4, 5, 2}, {0, 1, 0, 1}, 1, 0},
    {"dims 0, 1 and 3 of 3x4x5x2", {3, 4, 5, 2}, {0, 0, 1, 0}, 1, 0},
    {"dim 0 of 5000x3", {5000, 3, 1, 1}, {0, 1, 1, 1}, 0, 1},
    {"dims 0 and 2 of 300x4x7", {300, 4, 7, 1}, {0, 1, 0, 1}, 0, 0},
    {"dim 1 of 40x3000", {40, 3000, 1, 1}, {1, 0, 1, 1}, 1, 1},
};

template <typename T> void reduce_case(result_fn result, const red_case &c, dla_reduce_op op)
{
    const dla_dtype dt = sizeof(T) == 8 ? DLA_F64 : DLA_F32;
    const int64_t *dx = c.dims;
    const int *keep = c.keep;
    int64_t dy[4], n = 1, nred = 1, outputs = 1;
    for (int k = 0; k < 4; k++) {
        dy[k] = keep[k] ? dx[k] : 1;
        n *= dx[k];
        (keep[k] ? outputs : nred) *= dx[k];
    }
    dbuf bx, by, bi;
    bx.init((size_t)n * sizeof(T));
    for (int64_t e = 0; e < n; e++) {
        const T v = (T)((int)((rnd() + 1.0) * 4.5) - 4);
        memcpy(&bx.data[(size_t)e * sizeof(T)], &v, sizeof v);
    }
    by.init((size_t)outputs * sizeof(T));
    bi.init((size_t)outputs * sizeof(int32_t));
    dla__cu_device d;
    new_device(d);
    dla_view vi = dense(bi, DLA_I32, 4, dy, 0);
    const int ext = op == DLA_REDUCE_MAX || op == DLA_REDUCE_MIN;
    emu_alloc_allowed = 1; /* the parts' results */
    memset(&g_red_seen, 0xff, sizeof g_red_seen);
    const dla_status s = reduce(d, op, dense(bx, dt, 4, dx, 0), dense(by, dt, 4, dy, 0),
                                ext ? &vi : NULL);
    emu_alloc_allowed = 0;
    int bad = 0;
    for (int64_t o = 0; o < outputs; o++) {
        int64_t ix[4] = {0}, q = o;
        for (int k = 0; k < 4; k++)
            if (keep[k]) {
                ix[k] = q % dx[k];
                q /= dx[k];
            }
        double sum = 0;
        T best = 0;
        int64_t pos = -1;
        for (int64_t p = 0; p < nred; p++) {
            int64_t r = p;
            for (int k = 0; k < 4; k++)
                if (!keep[k]) {
                    ix[k] = r % dx[k];
                    r /= dx[k];
                }
            const T v = at<T>(bx, ix[0] + dx[0] * (ix[1] + dx[1] * (ix[2] + dx[2] * ix[3])));
            sum += (double)v;
            if (pos < 0 || (op == DLA_REDUCE_MAX ? v > best : v < best))
                best = v, pos = p;
        }
        int64_t yo = 0, st = 1;
        for (int k = 0; k < 4; k++) {
            yo += (keep[k] ? ix[k] : 0) * st;
            st *= dy[k];
        }
        const T want = op == DLA_REDUCE_SUM    ? (T)sum
                       : op == DLA_REDUCE_MEAN ? (T)(sum / (double)nred)
                                               : best;
        const T got = at<T>(by, yo);
        bad += memcmp(&got, &want, sizeof got) != 0;
        if (ext)
            bad += at<int32_t>(bi, yo) != (int32_t)pos;
    }
    const int shape_ok = g_red_seen.shape == c.shape &&
                         (c.in_parts ? g_red_seen.parts > 1 : g_red_seen.parts == 1);
    if (!shape_ok)
        printf("# launched shape %lld in %lld parts\n", (long long)g_red_seen.shape,
               (long long)g_red_seen.parts);
    static const char *const ops[] = {"sum", "mean", "max", "min"};
    result(s == DLA_OK && !bad && shape_ok,
           "reduce %s %s over %s: shape %lld in %lld part%s%s, the bits of the positions in order",
           ops[op], sizeof(T) == 8 ? "f64" : "f32", c.name, (long long)g_red_seen.shape,
           (long long)g_red_seen.parts, g_red_seen.parts == 1 ? "" : "s",
           g_red_seen.parts > 1 ? " and their combine" : "");
}

/* A reduce in parts while a plan is captured: the graph's partial-sums
 * and combine kernels read the parts' scratch on every replay, so it must
 * stay the graph's (plan.c's dla__cu_scratch_done keeps it), not go back
 * to the pool where the next allocation would take it. A second reduce
 * of the capture takes the same block again (space.c's dla__cu_scratch:
 * the graph runs them in order), so the graph holds one block, not two. */
template <typename T> void reduce_captured_case(result_fn result, const red_case &c)
{
    const dla_dtype dt = sizeof(T) == 8 ? DLA_F64 : DLA_F32;
    int64_t dy[4], n = 1, outputs = 1;
    for (int k = 0; k < 4; k++) {
        dy[k] = c.keep[k] ? c.dims[k] : 1;
        n *= c.dims[k];
        outputs *= dy[k];
    }
    dbuf bx, by;
    bx.init((size_t)n * sizeof(T));
    by.init((size_t)outputs * sizeof(T));
    dla__cu_device d;
    new_device(d);
    dla__cu_set_planning_here(&d);
    d.capturing = 1;
    emu_freed_capturing = 0;
    emu_alloc_allowed = 1;
    const int allocs0 = emu_allocs;
    dla_status s = reduce(d, DLA_REDUCE_SUM, dense(bx, dt, 4, c.dims, 0), dense(by, dt, 4, dy, 0));
    if (s == DLA_OK)
        s = reduce(d, DLA_REDUCE_SUM, dense(bx, dt, 4, c.dims, 0), dense(by, dt, 4, dy, 0));
    emu_alloc_allowed = 0;
    const int freed = emu_freed_capturing, allocs = emu_allocs - allocs0;
    int kept = 0;
    d.capturing = 0;
    while (d.scratch_free) {
        dla__cu_mem *next = d.scratch_free->next;
        dla__cu_mem_free(&d, (dla_mem)d.scratch_free);
        d.scratch_free = next;
        kept++;
    }
    dla__cu_set_planning_here(NULL);
    result(s == DLA_OK && g_red_seen.parts > 1 && freed == 0 && kept == 1 && allocs == 1,
           "reduce sum %s over %s in %lld parts, twice while captured: its scratch stays the "
           "graph's, one block for both (%d back to the pool during the capture, %d allocated, "
           "%d kept)",
           sizeof(T) == 8 ? "f64" : "f32", c.name, (long long)g_red_seen.parts, freed, allocs,
           kept);
}

} // namespace

/* The one kernel's copies alone (no steps): regions in, from a source
 * arena into a middle one, and out, from the middle into a destination,
 * of sizes and places that take each unit (16, 4 and 1 bytes), fewer
 * bytes than a group's round and more (the whole block's), more small
 * regions than the team has groups (dealt round them twice and more):
 * every byte copied where it belongs, nothing else written. */
static void k1_copies_case(result_fn result)
{
    static const int64_t sizes[] = {1, 3, 4, 7, 16, 64, 100, 512, 513, 2000, 4096, 48, 5, 32};
    const int n = (int)(sizeof sizes / sizeof *sizes);
    std::vector<unsigned char> src(16384), mid(16384, 0x5a), dst(16384, 0xa5);
    for (size_t i = 0; i < src.size(); i++)
        src[i] = (unsigned char)(i * 131 + 7);
    std::vector<unsigned char> want_mid = mid, want_dst = dst;
    dla__cu_copies in, out;
    memset(&in, 0, sizeof in);
    memset(&out, 0, sizeof out);
    int64_t at = 0;
    for (int r = 0; r < n; r++) {
        /* Every third region starts off any 4-byte boundary. */
        const int64_t off = at + (r % 3 == 2 ? 1 : 0), back = 8192 + off;
        in.src[r] = (const char *)src.data() + off;
        in.dst[r] = (char *)mid.data() + off;
        in.bytes[r] = sizes[r];
        out.src[r] = (const char *)mid.data() + off;
        out.dst[r] = (char *)dst.data() + back;
        out.bytes[r] = sizes[r];
        memcpy(want_mid.data() + off, src.data() + off, (size_t)sizes[r]);
        memcpy(want_dst.data() + back, src.data() + off, (size_t)sizes[r]);
        at = (off + sizes[r] + 16 + 15) / 16 * 16;
    }
    in.n = out.n = n;
    const int run_ok = dla__cu_k1_launch(NULL, NULL, 0, &in, &out, NULL, 0, NULL) == cudaSuccess;
    result(run_ok && mid == want_mid && dst == want_dst,
           "one kernel's copies: %d regions in and out of 1 to 4096 bytes, some off any 4-byte "
           "boundary, dealt round the groups and over the block: every byte where it belongs",
           n);
}

/* dla__cu_k1_windows on steps made by hand, at addresses never
 * dereferenced: a reduce whose operands are their memory's element 0
 * with offsets (x's pointer 256 bytes before its role, y's in no role),
 * then a copy that reads y's bytes and writes z's. x's accesses lie in
 * the role, so x moves with it though its pointer is outside; y is
 * written first (an intermediate); z's window follows. A role too large
 * for the budget, or a read across a role's edge, gives no windows. */
void k1_windows_case(result_fn result)
{
    char *const mem = (char *)(uintptr_t)0x100000; /* 256-byte aligned, like the pool's */
    dla__cu_k1_step st[2];
    memset(st, 0, sizeof st);
    st[0].kind = DLA__CU_K1_REDUCE;
    dla__cu_red_launch &l = st[0].u.red;
    l.x = mem;        /* x: 3 x 4 floats at element 64 (byte 256) */
    l.y = mem + 4096; /* y: 3 floats at element 2 */
    l.g.xoff = 64, l.g.yoff = 2;
    l.g.nk = 1, l.g.kd[0] = 3, l.g.kx[0] = 1, l.g.ky[0] = 1;
    l.g.nr = 1, l.g.rd[0] = 4, l.g.rx[0] = 3;
    l.g.outputs = 3, l.g.nred = 4;
    st[1].kind = DLA__CU_K1_COPY;
    dla__cu_k1_move &m = st[1].u.move;
    m.sp.nd = 1, m.sp.n = 3, m.sp.dims[0] = 3;
    m.esize = 4;
    m.v[0].base = mem + 8192 + 4, m.v[0].st[0] = 1; /* z, 4 bytes past a 16-byte boundary */
    m.v[1].base = mem + 4096 + 8, m.v[1].st[0] = 1; /* y's 3 floats */
    const char *role_lo[1] = {mem + 256};
    const int64_t role_bytes[1] = {48};
    dla__cu_k1_reloc rel[32];
    int64_t bytes = -1;
    const int32_t n = dla__cu_k1_windows(st, 2, role_lo, role_bytes, 1, 4096, rel, &bytes);
    /* The role's window at 0 (48 bytes); y's run at 56 (8 past the
     * boundary at 48, as its address is 8 past one), 12 bytes; z's at 84
     * (4 past 80), 12 bytes: 96 in all. */
    int ok = n == 4 && bytes == 96;
    int seen = 0;
    for (int32_t e = 0; ok && e < n; e++) {
        const dla__cu_k1_reloc &r = rel[e];
        if (r.step == 0 && r.field == 1)
            ok &= r.lo == (int64_t)(uintptr_t)(mem + 256) && r.off == 0, seen |= 1;
        else if (r.step == 0 && r.field == 0)
            ok &= r.lo == (int64_t)(uintptr_t)(mem + 4096 + 8) && r.off == 56, seen |= 2;
        else if (r.step == 1 && r.field == 1)
            ok &= r.lo == (int64_t)(uintptr_t)(mem + 4096 + 8) && r.off == 56, seen |= 4;
        else if (r.step == 1 && r.field == 0)
            ok &= r.lo == (int64_t)(uintptr_t)(mem + 8192 + 4) && r.off == 84, seen |= 8;
        else
            ok = 0;
    }
    if (!ok || seen != 15) {
        printf("# windows: %d relocations, %lld bytes:", (int)n, (long long)bytes);
        for (int32_t e = 0; e < n && e < 32; e++)
            printf(" (%d %d %lld %lld)", (int)rel[e].step, (int)rel[e].field,
                   (long long)(rel[e].lo - (int64_t)(uintptr_t)mem), (long long)rel[e].off);
        printf("\n");
    }
    result(ok && seen == 15, "one kernel's windows: a reduce's x moved with its role though its "
                             "pointer lies 256 bytes before it, y and z (written first) moved "
                             "to windows of their own, each at its address's offset past 16 bytes");
    const int32_t small = dla__cu_k1_windows(st, 2, role_lo, role_bytes, 1, 40, rel, &bytes);
    const int64_t edge_bytes[1] = {40}; /* x's last 8 bytes past the role's end */
    const int32_t edge = dla__cu_k1_windows(st, 2, role_lo, edge_bytes, 1, 4096, rel, &bytes);
    /* The copy first: y is read before the reduce writes it, and keeps
     * its place; z is still written first. */
    std::swap(st[0], st[1]);
    const int32_t read_first = dla__cu_k1_windows(st, 2, role_lo, role_bytes, 1, 4096, rel, &bytes);
    int y_moved = 0;
    for (int32_t e = 0; e < read_first; e++)
        y_moved |= rel[e].lo == (int64_t)(uintptr_t)(mem + 4096 + 8);
    result(small == -1 && edge == -1 && read_first == 2 && !y_moved,
           "one kernel's windows: none when the role exceeds the budget (%d) or an access crosses "
           "its edge (%d); a run read before it is written keeps its place (%d relocations, the "
           "role's and z's)",
           (int)small, (int)edge, (int)read_first);
}

/* dla__cu_k1_join on copies and a fill made by hand (addresses never
 * dereferenced), 4 floats each: a copy a -> b; c -> a, which writes what
 * the first reads (no join); d -> e (joins); f -> e, which writes what
 * the one before writes (no join); a fill of g (joins); g -> h, which
 * reads what the fill writes (no join). */
void k1_join_case(result_fn result)
{
    char *const mem = (char *)(uintptr_t)0x200000;
    enum { A, B, C, D, E, F, G, H };
    const int pairs[6][2] = {{B, A}, {A, C}, {E, D}, {E, F}, {G, -1}, {H, G}};
    dla__cu_k1_step st[6];
    memset(st, 0, sizeof st);
    for (int s = 0; s < 6; s++) {
        st[s].kind = pairs[s][1] < 0 ? DLA__CU_K1_FILL : DLA__CU_K1_COPY;
        dla__cu_k1_move &m = st[s].u.move;
        m.sp.nd = 1, m.sp.n = 4, m.sp.dims[0] = 4, m.esize = 4;
        for (int v = 0; v < 2; v++)
            if (pairs[s][v] >= 0)
                m.v[v].base = mem + 256 * pairs[s][v], m.v[v].st[0] = 1;
    }
    const int32_t phases = dla__cu_k1_join(st, 6);
    char pattern[8] = "";
    for (int s = 0; s < 6; s++)
        pattern[s] = st[s].join ? 'j' : '|';
    result(phases == 4 && strcmp(pattern, "||j|j|") == 0,
           "one kernel's phases: a step joins none whose writes it reads (%s), none that reads "
           "what it writes, none that writes what it writes; independent ones join (%d phases)",
           pattern, (int)phases);
}

void emu_onekern_cases(result_fn result)
{
    k1_copies_case(result);
    k1_windows_case(result);
    k1_join_case(result);
    for (int f64 = 0; f64 < 2; f64++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++)
                for (int bcast = 0; bcast < 2; bcast++)
                    for (int beta0 = 0; beta0 < 2; beta0++)
                        for (int64_t k : {7, 19})
                            if (f64)
                                gemm_case<double>(result, ta, tb, bcast, beta0, k);
                            else
                                gemm_case<float>(result, ta, tb, bcast, beta0, k);
    for (int f64 = 0; f64 < 2; f64++)
        for (int c = 0; c < 3; c++)
            if (f64)
                chain_case<double>(result, c == 1, c == 2);
            else
                chain_case<float>(result, c == 1, c == 2);
    static const dla_reduce_op all[] = {DLA_REDUCE_SUM, DLA_REDUCE_MEAN, DLA_REDUCE_MAX,
                                        DLA_REDUCE_MIN};
    for (int f64 = 0; f64 < 2; f64++)
        for (const red_case &c : red_cases)
            for (dla_reduce_op op : all)
                if (f64)
                    reduce_case<double>(result, c, op);
                else
                    reduce_case<float>(result, c, op);
    for (int f64 = 0; f64 < 2; f64++)
        for (const red_case &c : red_cases)
            if (c.in_parts) {
                if (f64)
                    reduce_captured_case<double>(result, c);
                else
                    reduce_captured_case<float>(result, c);
            }
}
