/*
 * fused.c - the fused elementwise kernel (ABI 1.2): a program of unary and
 * binary steps over several views of one shape, in one pass; and
 * fused_multi (ABI 1.8), the same program that also stores some of its
 * earlier registers into extra results; and a convolution's epilogue
 * (ABI 1.9), the program over the images the convolution has just
 * written, on the thread that wrote them (dla__cpu_fused_images).
 *
 * The views' dims are coalesced as strided.c does, and the space is cut in
 * blocks of up to BLOCK consecutive elements (column-major): pieces of one
 * run of the innermost dim when it is long, whole runs together when it is
 * short (a 4 x 128 batch with broadcast class weights is one block, not
 * 128). Each block interprets the program once: an
 * instruction is one tight vector loop over the block (its op's expression
 * from elementwise_ops.h), reading an input in place where it is laid out
 * as the space is, as one value where it is broadcast everywhere, and from
 * a copy gathered along its strides otherwise (a broadcast channel within
 * one run is one value again), and writing its register, a
 * block of the thread's stack. The last instruction writes y in place when
 * y is laid out as the space, else its register is scattered into y. An
 * extra result is a written operand of the space like y (its strides
 * coalesce with the others'): after the program, its register (never the
 * last, so always on the stack) is copied into it where it is laid out as
 * the space, else scattered. So
 * intermediates stay in L1 and the program's dispatch is paid once per
 * block, not per element. Blocks are independent and go over the OpenMP
 * team when the space is large. The plain fused kernel is the same run
 * with no extra result.
 *
 * Every register holds T and every step stores its result as T, exactly
 * as the one-op kernels store theirs (exp, log, tanh, sigmoid and erf
 * through the same vector functions, vmath.c), so a program and its steps
 * launched one by one give the same bits, for y and for every extra
 * result.
 */
#include "plugins/cpu/elementwise_ops.h"
#include "plugins/cpu/share.h"
#include "plugins/cpu/strided.h"
#include "plugins/cpu/vmath.h"

#include <omp.h>
#include <stddef.h>
#include <string.h>

#define BLOCK 512
/* Programs of fewer elements go to share.c (run_f32 says why). */
#define SHARE_MAX ((int64_t)1 << 20)
#define NOPS (1 + DLA_FUSED_MAX_INPUTS + DLA_FUSED_MAX_EXTRA)

/* The coalesced space: op 0 is y, op 1 + i input i, op 1 + ninputs + k
 * extra result k. */
typedef struct space {
    int ndims;
    int64_t numel;
    /* Blocks never straddle a run of dim 0 that is BLOCK long or more
     * (per_row pieces each), and hold rows_per whole runs otherwise. */
    int64_t per_row, rows_per, blocks;
    int64_t dims[DLA_MAX_DIMS];
    int64_t strides[NOPS][DLA_MAX_DIMS];
    int64_t offset[NOPS];
} space;

static void coalesce(space *sp, int nops, const dla_view *const *v)
{
    const dla_view *y = v[0];
    sp->ndims = 0;
    sp->numel = 1;
    for (int op = 0; op < nops; op++)
        sp->offset[op] = v[op]->offset;
    for (int d = 0; d < y->ndims; d++) {
        sp->numel *= y->dims[d];
        if (y->dims[d] == 1)
            continue;
        int n = sp->ndims;
        int merge = n > 0;
        for (int op = 0; op < nops && merge; op++)
            merge = v[op]->strides[d] == sp->strides[op][n - 1] * sp->dims[n - 1];
        if (merge) {
            sp->dims[n - 1] *= y->dims[d];
            continue;
        }
        sp->dims[n] = y->dims[d];
        for (int op = 0; op < nops; op++)
            sp->strides[op][n] = v[op]->strides[d];
        sp->ndims++;
    }
    if (sp->ndims == 0) {
        sp->ndims = 1;
        sp->dims[0] = 1;
        for (int op = 0; op < nops; op++)
            sp->strides[op][0] = 0;
    }
}

/* ------------------------------------------------------- the op loops */

/* The steps are the interpreter's whole arithmetic, so each is compiled
 * for AVX-512, AVX2 and the baseline, picked once at load (ifunc), as
 * sum.c's sums are: as the baseline's 4-lane SSE loops they, not memory,
 * set a program's pace where the data sit in cache (dlaccel-bench
 * batchnorm_step, 2 threads: 1.33 -> 1.02 ms with the operand arrays below).
 * The plugin is built with -ffp-contract=off, so every clone gives the
 * same bits, which the conformance suite checks against the steps
 * launched one by one. */
#if defined(__x86_64__) && defined(__GNUC__)
#define STEP_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define STEP_CLONES
#endif

/* A unary step over a vector operand; binary steps for vector-vector,
 * vector-scalar and scalar-vector operands. */
#define DEFINE_UNARY_STEP(name, EXPR, T, sfx)                                                      \
    STEP_CLONES static void u_##name##_##sfx(T *o, const T *x, int64_t n, T al, T be)              \
    {                                                                                              \
        (void)al, (void)be;                                                                        \
        _Pragma("omp simd")                                                                        \
        for (int64_t i = 0; i < n; i++)                                                            \
            o[i] = EXPR(x[i], al, be);                                                             \
    }
#define DEFINE_BINARY_STEP(name, EXPR, T, sfx)                                                     \
    STEP_CLONES static void b_##name##_vv_##sfx(T *o, const T *a, const T *b, int64_t n)           \
    {                                                                                              \
        _Pragma("omp simd")                                                                        \
        for (int64_t i = 0; i < n; i++)                                                            \
            o[i] = EXPR(a[i], b[i]);                                                               \
    }                                                                                              \
    STEP_CLONES static void b_##name##_vs_##sfx(T *o, const T *a, T b, int64_t n)                  \
    {                                                                                              \
        _Pragma("omp simd")                                                                        \
        for (int64_t i = 0; i < n; i++)                                                            \
            o[i] = EXPR(a[i], b);                                                                  \
    }                                                                                              \
    STEP_CLONES static void b_##name##_sv_##sfx(T *o, T a, const T *b, int64_t n)                  \
    {                                                                                              \
        _Pragma("omp simd")                                                                        \
        for (int64_t i = 0; i < n; i++)                                                            \
            o[i] = EXPR(a, b[i]);                                                                  \
    }

#define DEFINE_UNARY_BOTH(name, EXPR)                                                              \
    DEFINE_UNARY_STEP(name, EXPR, float, f32)                                                      \
    DEFINE_UNARY_STEP(name, EXPR, double, f64)
UNARY_OPS(DEFINE_UNARY_BOTH)

/* A comparison stores its 0 or 1 as T: the register of a logical. */
#define DEFINE_BINARY(name, EXPR, KIND)                                                            \
    DEFINE_BINARY_STEP(name, EXPR, float, f32)                                                     \
    DEFINE_BINARY_STEP(name, EXPR, double, f64)
BINARY_OPS(DEFINE_BINARY)

/* where: the condition is true where nonzero. Both values are arguments,
 * read whatever the condition, so the loops make vector blends (as
 * elementwise.c's where). One loop per pattern of vector (V) and one-value
 * (S) operands, condition first. */
static inline float pick_f32(float c, float a, float b) { return c != 0 ? a : b; }
static inline double pick_f64(double c, double a, double b) { return c != 0 ? a : b; }
#define AT_V(x) x[i]
#define AT_S(x) x[0]
#define DEFINE_WHERE_FORM(T, sfx, C, A, B)                                                         \
    STEP_CLONES static void where_##C##A##B##_##sfx(T *o, const T *c, const T *a, const T *b,      \
                                                    int64_t n)                                     \
    {                                                                                              \
        _Pragma("omp simd")                                                                        \
        for (int64_t i = 0; i < n; i++)                                                            \
            o[i] = pick_##sfx(AT_##C(c), AT_##A(a), AT_##B(b));                                    \
    }
#define DEFINE_WHERE_STEP(T, sfx)                                                                  \
    DEFINE_WHERE_FORM(T, sfx, V, V, V)                                                             \
    DEFINE_WHERE_FORM(T, sfx, V, V, S)                                                             \
    DEFINE_WHERE_FORM(T, sfx, V, S, V)                                                             \
    DEFINE_WHERE_FORM(T, sfx, V, S, S)                                                             \
    DEFINE_WHERE_FORM(T, sfx, S, V, V)                                                             \
    DEFINE_WHERE_FORM(T, sfx, S, V, S)                                                             \
    DEFINE_WHERE_FORM(T, sfx, S, S, V)                                                             \
    DEFINE_WHERE_FORM(T, sfx, S, S, S)                                                             \
    /* Indexed by (c is one value) << 2 | (a is) << 1 | (b is). */                                \
    static void (*const where_##sfx[8])(T *, const T *, const T *, const T *, int64_t) = {         \
        where_VVV_##sfx, where_VVS_##sfx, where_VSV_##sfx, where_VSS_##sfx,                        \
        where_SVV_##sfx, where_SVS_##sfx, where_SSV_##sfx, where_SSS_##sfx};
DEFINE_WHERE_STEP(float, f32)
DEFINE_WHERE_STEP(double, f64)

#define U_F32(name, EXPR) u_##name##_f32,
#define U_F64(name, EXPR) u_##name##_f64,
#define B_VV_F32(name, EXPR, KIND) b_##name##_vv_f32,
#define B_VS_F32(name, EXPR, KIND) b_##name##_vs_f32,
#define B_SV_F32(name, EXPR, KIND) b_##name##_sv_f32,
#define B_VV_F64(name, EXPR, KIND) b_##name##_vv_f64,
#define B_VS_F64(name, EXPR, KIND) b_##name##_vs_f64,
#define B_SV_F64(name, EXPR, KIND) b_##name##_sv_f64,

typedef void (*u_f32)(float *, const float *, int64_t, float, float);
typedef void (*u_f64)(double *, const double *, int64_t, double, double);
typedef void (*vv_f32)(float *, const float *, const float *, int64_t);
typedef void (*vs_f32)(float *, const float *, float, int64_t);
typedef void (*sv_f32)(float *, float, const float *, int64_t);
typedef void (*vv_f64)(double *, const double *, const double *, int64_t);
typedef void (*vs_f64)(double *, const double *, double, int64_t);
typedef void (*sv_f64)(double *, double, const double *, int64_t);

static const u_f32 unary_f32[] = {UNARY_OPS(U_F32)};
static const u_f64 unary_f64[] = {UNARY_OPS(U_F64)};
static const vv_f32 vv_f32s[] = {BINARY_OPS(B_VV_F32)};
static const vs_f32 vs_f32s[] = {BINARY_OPS(B_VS_F32)};
static const sv_f32 sv_f32s[] = {BINARY_OPS(B_SV_F32)};
static const vv_f64 vv_f64s[] = {BINARY_OPS(B_VV_F64)};
static const vs_f64 vs_f64s[] = {BINARY_OPS(B_VS_F64)};
static const sv_f64 sv_f64s[] = {BINARY_OPS(B_SV_F64)};
_Static_assert(sizeof unary_f32 / sizeof unary_f32[0] == DLA_UNARY_COUNT,
               "UNARY_OPS out of step with DLA_UNARY_LIST");
_Static_assert(sizeof vv_f32s / sizeof vv_f32s[0] == DLA_BINARY_COUNT,
               "BINARY_OPS out of step with DLA_BINARY_LIST");

/* ---------------------------------------------------------- the program */

/* How an operand is read (y: written) over a block of the space: in place
 * (its layout is the space's own, dense), as one value (stride 0
 * everywhere), or through a copy walked along its strides. */
enum { AT_DENSE, AT_SCALAR, AT_WALK };

/* Runs of dim 0 at least this long are blocks of their own when inputs
 * would otherwise be walked, a block's worth of them a run: a block
 * inside one run reads such an input in place. Shorter blocks cost their
 * steps' calls more often: attention's 64-long runs of one walked input
 * took 1.05x the time as blocks of their own. */
#define ROW_BLOCK_MIN 128

static void classify(space *sp, int nops, int ninputs, int *how)
{
    const int64_t d0 = sp->dims[0], rows = sp->numel / d0;
    int64_t in_place = 0; /* inputs readable in place within a run */
    for (int op = 0; op < nops; op++) {
        int dense = 1, zero = 1;
        int64_t ds = 1;
        for (int d = 0; d < sp->ndims; d++) {
            dense &= sp->strides[op][d] == ds || sp->dims[d] == 1;
            zero &= sp->strides[op][d] == 0;
            ds *= sp->dims[d];
        }
        how[op] = dense ? AT_DENSE : zero ? AT_SCALAR : AT_WALK;
        in_place += op >= 1 && op <= ninputs && how[op] == AT_WALK &&
                    (sp->strides[op][0] == 1 || sp->strides[op][0] == 0);
    }
    /* An LSTM's gates are 128-row slices of its 512-row product, each
     * column a unit-stride run: blocks of 4 runs gathered them (on one
     * thread, a quarter of the gate program's time), blocks of one run
     * read them where they are. */
    if (d0 >= BLOCK || (d0 >= ROW_BLOCK_MIN && in_place * d0 >= BLOCK)) {
        sp->per_row = (d0 + BLOCK - 1) / BLOCK;
        sp->rows_per = 0;
        sp->blocks = rows * sp->per_row;
    } else {
        sp->per_row = 0;
        sp->rows_per = BLOCK / d0;
        sp->blocks = (rows + sp->rows_per - 1) / sp->rows_per;
    }
}

static int operands(const dla_fused_insn *in)
{
    return in->kind == DLA_FUSED_WHERE ? 3 : in->kind == DLA_FUSED_BINARY ? 2 : 1;
}

/* A program's work an element, in one-op kernels' elements (their
 * threshold is DLA__CPU_PAR_MIN): each step one, a transcendental four (a
 * vector exp or tanh takes about four times a multiplication's time). By
 * its element count alone, an LSTM's gate program (three sigmoids, two
 * tanh and four products on 128 x 64) ran on one thread, 34 us a step;
 * shared out, LSTM inference took 0.70x the time and its train step
 * 0.82x. */
static int64_t program_cost(const dla_fused_args *a)
{
    int64_t cost = 0;
    for (int j = 0; j < a->ninsns; j++) {
        const dla_fused_insn *in = &a->insns[j];
        const int heavy = in->kind == DLA_FUSED_UNARY &&
                          (in->op == DLA_UNARY_EXP || in->op == DLA_UNARY_LOG ||
                           in->op == DLA_UNARY_TANH || in->op == DLA_UNARY_SIGMOID ||
                           in->op == DLA_UNARY_ERF || in->op == DLA_UNARY_SIN ||
                           in->op == DLA_UNARY_COS || in->op == DLA_UNARY_POWS ||
                           in->op == DLA_UNARY_ELU);
        cost += heavy ? 4 : 1;
    }
    return cost > 0 ? cost : 1;
}

/* Blocks per grab of a dynamic schedule: about eight grabs per thread. */
static int64_t chunk_of(int64_t blocks)
{
    const int64_t grabs = 8 * (int64_t)omp_get_max_threads();
    return blocks > grabs ? (blocks + grabs - 1) / grabs : 1;
}

/* Moves the index idx (and the offset off of a view with strides st)
 * run elements along dim 0, which ends its run there or before, carrying
 * into the outer dims. */
static inline void step_past(const space *sp, const int64_t *st, int64_t run, int64_t *idx,
                             int64_t *off)
{
    *off += run * st[0];
    idx[0] += run;
    for (int d = 0; d + 1 < sp->ndims && idx[d] == sp->dims[d]; d++) {
        idx[d] = 0;
        idx[d + 1]++;
        *off += st[d + 1] - sp->dims[d] * st[d];
    }
}

/* Block u of the space: its first element (column-major) and length. */
static int64_t block_range(const space *sp, int64_t u, int64_t *n)
{
    const int64_t d0 = sp->dims[0];
    if (sp->per_row) {
        const int64_t row = u / sp->per_row, piece = u % sp->per_row;
        *n = d0 - piece * BLOCK < BLOCK ? d0 - piece * BLOCK : BLOCK;
        return row * d0 + piece * BLOCK;
    }
    const int64_t at = u * sp->rows_per * d0;
    *n = sp->numel - at < sp->rows_per * d0 ? sp->numel - at : sp->rows_per * d0;
    return at;
}

/* The extra results of a fused_multi call: register reg[k] into view[k]
 * (its mem; the space holds its offset and strides). n 0: plain fused. */
typedef struct extras {
    int n;
    const int32_t *reg;
    const dla_view *view;
} extras;

/* One operand of a step over the current block: n elements at p, or one
 * value s for all of them (p NULL). */
#define DEFINE_RUN(T, sfx)                                                                         \
    /* An operand over the current block is n elements at p[k], or one                           \
     * value s[k] for all of them (p[k] NULL). Pointers and values sit in                         \
     * arrays of their own: a struct of both, written field by field and                          \
     * copied whole, cost a stalled store-to-load forward per step. */                            \
    static void step_##sfx(const dla_fused_insn *in, T *o, const T *const *p, const T *s,          \
                           int64_t n)                                                              \
    {                                                                                              \
        if (in->kind == DLA_FUSED_WHERE) {                                                         \
            const T *v[3];                                                                         \
            int form = 0;                                                                          \
            for (int k = 0; k < 3; k++) {                                                          \
                v[k] = p[k] ? p[k] : &s[k];                                                        \
                form = form << 1 | !p[k];                                                          \
            }                                                                                      \
            where_##sfx[form](o, v[0], v[1], v[2], n);                                             \
        } else if (in->kind == DLA_FUSED_UNARY) {                                                  \
            const T al = (T)in->alpha, be = (T)in->beta;                                           \
            /* exp, tanh...: the vector functions, as the one-op kernel's. */                      \
            const dla__cpu_vmath_##sfx##_fn vm = dla__cpu_vmath_##sfx(in->op);                     \
            if (p[0] && vm) {                                                                      \
                vm(o, 1, p[0], 1, n);                                                              \
            } else if (p[0]) {                                                                     \
                unary_##sfx[in->op](o, p[0], n, al, be);                                           \
            } else {                                                                               \
                T v;                                                                               \
                if (vm)                                                                            \
                    vm(&v, 1, &s[0], 1, 1);                                                        \
                else                                                                               \
                    unary_##sfx[in->op](&v, &s[0], 1, al, be);                                     \
                for (int64_t i = 0; i < n; i++)                                                    \
                    o[i] = v;                                                                      \
            }                                                                                      \
        } else if (p[0] && p[1]) {                                                                 \
            vv_##sfx##s[in->op](o, p[0], p[1], n);                                                 \
        } else if (p[0]) {                                                                         \
            vs_##sfx##s[in->op](o, p[0], s[1], n);                                                 \
        } else if (p[1]) {                                                                         \
            sv_##sfx##s[in->op](o, s[0], p[1], n);                                                 \
        } else {                                                                                   \
            T v;                                                                                   \
            vv_##sfx##s[in->op](&v, &s[0], &s[1], 1);                                              \
            for (int64_t i = 0; i < n; i++)                                                        \
                o[i] = v;                                                                          \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* Elements [at, at + n) of the space, as the view at x with strides                           \
     * st sees them, into dst (gather) or, with scatter, from dst into the                         \
     * view. Along dim 0 in runs, with a carry into the outer dims; a view                         \
     * broadcast along every outer dim (class weights against a batch) is                          \
     * one period gathered once and doubled.                                                       \
     */                                                                                            \
    static void walk_##sfx(T *x, const int64_t *st, const space *sp, int64_t at, int64_t n,         \
                           T *dst, int scatter)                                                    \
    {                                                                                              \
        const int64_t d0 = sp->dims[0], s0 = st[0];                                                \
        int periodic = !scatter;                                                                   \
        for (int d = 1; d < sp->ndims; d++)                                                        \
            periodic &= st[d] == 0;                                                                \
        if (periodic && n > d0) {                                                                  \
            int64_t k = 0, j = at % d0;                                                            \
            for (; j < d0; j++)                                                                    \
                dst[k++] = x[j * s0];                                                              \
            const int64_t p0 = k;                                                                  \
            for (j = 0; j < d0 && k < n; j++)                                                      \
                dst[k++] = x[j * s0];                                                              \
            while (k < n) {                                                                        \
                int64_t c = k - p0 < n - k ? k - p0 : n - k;                                       \
                memcpy(dst + k, dst + p0, (size_t)c * sizeof(T));                                  \
                k += c;                                                                            \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        if (sp->ndims == 2 && at % d0 == 0) {                                                      \
            /* Whole rows (blocks start on one): no carry to keep. */                              \
            const int64_t s1 = st[1], r0 = at / d0;                                                \
            for (int64_t r = 0, k = 0; k < n; r++) {                                               \
                T *v = x + (r0 + r) * s1;                                                          \
                const int64_t run = d0 < n - k ? d0 : n - k;                                       \
                if (scatter) {                                                                     \
                    for (int64_t i = 0; i < run; i++)                                              \
                        v[i * s0] = dst[k + i];                                                    \
                } else if (s0 == 0) {                                                              \
                    const T c = *v;                                                                \
                    _Pragma("omp simd")                                                            \
                    for (int64_t i = 0; i < run; i++)                                              \
                        dst[k + i] = c;                                                            \
                } else {                                                                           \
                    for (int64_t i = 0; i < run; i++)                                              \
                        dst[k + i] = v[i * s0];                                                    \
                }                                                                                  \
                k += run;                                                                          \
            }                                                                                      \
            return;                                                                                \
        }                                                                                          \
        int64_t idx[DLA_MAX_DIMS], rem = at, off = 0;                                              \
        for (int d = 0; d < sp->ndims; d++) {                                                      \
            idx[d] = rem % sp->dims[d];                                                            \
            rem /= sp->dims[d];                                                                    \
            off += idx[d] * st[d];                                                                 \
        }                                                                                          \
        for (int64_t done = 0; done < n;) {                                                        \
            const int64_t run = d0 - idx[0] < n - done ? d0 - idx[0] : n - done;                   \
            T *v = x + off, *b = dst + done;                                                       \
            if (scatter) {                                                                         \
                for (int64_t i = 0; i < run; i++)                                                  \
                    v[i * s0] = b[i];                                                              \
            } else if (s0 == 0) {                                                                  \
                const T c = *v;                                                                    \
                _Pragma("omp simd")                                                                \
                for (int64_t i = 0; i < run; i++)                                                  \
                    b[i] = c;                                                                      \
            } else {                                                                               \
                for (int64_t i = 0; i < run; i++)                                                  \
                    b[i] = v[i * s0];                                                              \
            }                                                                                      \
            done += run;                                                                           \
            step_past(sp, st, run, idx, &off);                                                     \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* Runs the program on the n elements of the space from at (a block),                         \
     * the last instruction writing y (n elements, or regs[last] when NULL);                       \
     * returns where the result is. */                                                             \
    static T *program_##sfx(const dla_fused_args *a, const space *sp, const int *how, int64_t at,  \
                            int64_t n, T (*regs)[BLOCK], T (*stage)[BLOCK], T *y)                  \
    {                                                                                              \
        const T *ip[DLA_FUSED_MAX_INPUTS];                                                         \
        T is[DLA_FUSED_MAX_INPUTS];                                                                \
        /* A block inside one run of dim 0 reads a walked operand in place                         \
         * (unit stride) or as one value (stride 0, a broadcast channel). */                      \
        const int in_run = sp->rows_per <= 1;                                                      \
        int64_t idx[DLA_MAX_DIMS], rem = at;                                                       \
        for (int d = 0; d < sp->ndims && in_run; d++) {                                            \
            idx[d] = rem % sp->dims[d];                                                            \
            rem /= sp->dims[d];                                                                    \
        }                                                                                          \
        for (int i = 0; i < a->ninputs; i++) {                                                     \
            T *base = (T *)a->inputs[i].mem + sp->offset[1 + i];                                   \
            const int64_t *st = sp->strides[1 + i];                                                \
            if (how[1 + i] == AT_DENSE) {                                                          \
                ip[i] = base + at;                                                                 \
                is[i] = 0;                                                                         \
            } else if (how[1 + i] == AT_SCALAR) {                                                  \
                ip[i] = NULL;                                                                      \
                is[i] = *base;                                                                     \
            } else if (in_run && (st[0] == 0 || st[0] == 1)) {                                     \
                const T *first = base;                                                             \
                for (int d = 0; d < sp->ndims; d++)                                                \
                    first += idx[d] * st[d];                                                       \
                ip[i] = st[0] ? first : NULL;                                                      \
                is[i] = *first;                                                                    \
            } else {                                                                               \
                walk_##sfx(base, sp->strides[1 + i], sp, at, n, stage[i], 0);                      \
                ip[i] = stage[i];                                                                  \
                is[i] = 0;                                                                         \
            }                                                                                      \
        }                                                                                          \
        const int last = a->ninsns - 1;                                                            \
        if (last < 0) { /* no instruction: input 0 itself (the reduce kernel's sums) */            \
            if (ip[0])                                                                             \
                return (T *)ip[0];                                                                 \
            for (int64_t i = 0; i < n; i++)                                                        \
                regs[0][i] = is[0];                                                                \
            return regs[0];                                                                        \
        }                                                                                          \
        if (!y)                                                                                    \
            y = regs[last];                                                                        \
        for (int j = 0; j <= last; j++) {                                                          \
            const dla_fused_insn *in = &a->insns[j];                                               \
            const T *p[3] = {NULL, NULL, NULL};                                                    \
            T sv[3] = {0, 0, 0};                                                                   \
            for (int k = 0; k < operands(in); k++) {                                               \
                const int32_t src = in->src[k];                                                    \
                p[k] = src >= 0 ? regs[src] : ip[-1 - src];                                        \
                if (src < 0)                                                                       \
                    sv[k] = is[-1 - src];                                                          \
            }                                                                                      \
            step_##sfx(in, j == last ? y : regs[j], p, sv, n);                                     \
        }                                                                                          \
        return y;                                                                                  \
    }                                                                                              \
                                                                                                   \
    /* Runs the program on block u: elements [u * block, ...) of the space,                       \
     * in its column-major order, into y and the extra results. */                                 \
    static void block_##sfx(const dla_fused_args *a, const extras *ex, const space *sp,            \
                            const int *how, int64_t u, T (*regs)[BLOCK], T (*stage)[BLOCK])        \
    {                                                                                              \
        int64_t n;                                                                                 \
        const int64_t at = block_range(sp, u, &n);                                                 \
        const int last = a->ninsns - 1;                                                            \
        program_##sfx(a, sp, how, at, n, regs, stage,                                              \
                      how[0] == AT_DENSE ? (T *)a->y.mem + sp->offset[0] + at : NULL);             \
        if (how[0] != AT_DENSE)                                                                    \
            walk_##sfx((T *)a->y.mem + sp->offset[0], sp->strides[0], sp, at, n, regs[last], 1);    \
        /* An extra's register is below the last, so it is in regs. */                             \
        for (int k = 0; k < ex->n; k++) {                                                          \
            const int op = 1 + a->ninputs + k;                                                     \
            T *base = (T *)ex->view[k].mem + sp->offset[op];                                       \
            if (how[op] == AT_DENSE)                                                               \
                memcpy(base + at, regs[ex->reg[k]], (size_t)n * sizeof(T));                        \
            else                                                                                   \
                walk_##sfx(base, sp->strides[op], sp, at, n, regs[ex->reg[k]], 1);                 \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* Every block on the calling thread. */                                                       \
    static void run_serial_##sfx(const dla_fused_args *a, const extras *ex, const space *sp,       \
                                 const int *how)                                                   \
    {                                                                                              \
        _Alignas(64) T regs[DLA_FUSED_MAX_INSNS][BLOCK];                                           \
        _Alignas(64) T stage[DLA_FUSED_MAX_INPUTS][BLOCK];                                         \
        for (int64_t u = 0; u < sp->blocks; u++)                                                   \
            block_##sfx(a, ex, sp, how, u, regs, stage);                                           \
    }                                                                                              \
                                                                                                   \
    /* Item it of a program shared by share.c, its blocks from chunk * it:                         \
     * one of fewer than SHARE_MAX elements (an LSTM step's gates, 8,192),                         \
     * whose OpenMP region's closing barrier waited for a descheduled                              \
     * teammate longer than its work. */                                                           \
    typedef struct share_##sfx {                                                                   \
        const dla_fused_args *a;                                                                   \
        const extras *ex;                                                                          \
        const space *sp;                                                                           \
        const int *how;                                                                            \
        int64_t chunk, blocks;                                                                     \
    } share_##sfx;                                                                                 \
    static void share_item_##sfx(void *arg, int64_t it)                                            \
    {                                                                                              \
        const share_##sfx *s = arg;                                                                \
        _Alignas(64) T regs[DLA_FUSED_MAX_INSNS][BLOCK];                                           \
        _Alignas(64) T stage[DLA_FUSED_MAX_INPUTS][BLOCK];                                         \
        const int64_t u1 = (it + 1) * s->chunk < s->blocks ? (it + 1) * s->chunk : s->blocks;      \
        for (int64_t u = it * s->chunk; u < u1; u++)                                               \
            block_##sfx(s->a, s->ex, s->sp, s->how, u, regs, stage);                               \
    }                                                                                              \
                                                                                                   \
    static void run_##sfx(const dla_fused_args *a, const extras *ex, const space *sp,              \
                          const int *how)                                                          \
    {                                                                                              \
        const int64_t blocks = sp->blocks;                                                         \
        /* Shared out by its element count, as the one-op kernels, or by                           \
         * its work when the team is awake (after the GEMM of an LSTM's                            \
         * step): woken from sleep for 16,000 elements of three steps, it                          \
         * took 43 us where one thread takes 4. */                                                 \
        if (sp->numel < DLA__CPU_PAR_MIN &&                                                        \
            (sp->numel * program_cost(a) < DLA__CPU_PAR_MIN ||                                       \
             !(dla__cpu_team_awake() || dla__cpu_share_awake()))) {                                \
            run_serial_##sfx(a, ex, sp, how);                                                      \
            return;                                                                                \
        }                                                                                          \
        /* Eight chunks per thread, taken as threads come: a thread that                          \
         * joins late (woken from sleep, or its core lent to another                              \
         * process) no longer holds the others at the barrier for a fixed                        \
         * half. The blocks write disjoint outputs, so the bits do not                            \
         * depend on who runs which. */                                                           \
        const int64_t chunk = chunk_of(blocks);                                                    \
        if (sp->numel < SHARE_MAX && dla__cpu_share_wanted()) {                                    \
            share_##sfx s = {a, ex, sp, how, chunk, blocks};                                       \
            dla__cpu_share((blocks + chunk - 1) / chunk, share_item_##sfx, &s);                    \
            return;                                                                                \
        }                                                                                          \
        _Pragma("omp parallel")                                                                    \
        {                                                                                          \
            _Alignas(64) T regs[DLA_FUSED_MAX_INSNS][BLOCK];                                       \
            _Alignas(64) T stage[DLA_FUSED_MAX_INPUTS][BLOCK];                                     \
            _Pragma("omp for schedule(dynamic, chunk)")                                            \
            for (int64_t u = 0; u < blocks; u++)                                                   \
                block_##sfx(a, ex, sp, how, u, regs, stage);                                       \
        }                                                                                          \
        dla__cpu_team_used();                                                                      \
    }
DEFINE_RUN(float, f32)
DEFINE_RUN(double, f64)

/* ------------------------------------------------------- fused reduce */

/* The sum of a program runs as the program does, in blocks; each block's
 * values are added into double accumulators, one per output, instead of
 * being stored. Operand 0 of the space is not y itself but y's position of
 * each element (y's dense strides, 0 along the summed dims), so a block
 * inside one run of a summed dim is one vector sum into one accumulator
 * (batchnorm's 576 positions of a channel), and a kept dim's run adds
 * element by element. Each run of blocks (sum_run) has its own
 * accumulators; they are added in run order at the end. */
#define DEFINE_SUM(T, sfx)                                                                         \
    static void accumulate_##sfx(const space *sp, const int64_t *st, int64_t at, int64_t n,        \
                                 const T *v, double *acc)                                          \
    {                                                                                              \
        const int64_t d0 = sp->dims[0], s0 = st[0];                                                \
        int64_t idx[DLA_MAX_DIMS], rem = at, off = 0;                                              \
        for (int d = 0; d < sp->ndims; d++) {                                                      \
            idx[d] = rem % sp->dims[d];                                                            \
            rem /= sp->dims[d];                                                                    \
            off += idx[d] * st[d];                                                                 \
        }                                                                                          \
        for (int64_t done = 0; done < n;) {                                                        \
            const int64_t run = d0 - idx[0] < n - done ? d0 - idx[0] : n - done;                   \
            const T *b = v + done;                                                                 \
            if (s0 == 0) {                                                                         \
                acc[off] += dla__cpu_sum_##sfx(b, run);                                            \
            } else {                                                                               \
                for (int64_t i = 0; i < run; i++)                                                  \
                    acc[off + i * s0] += (double)b[i];                                             \
            }                                                                                      \
            done += run;                                                                           \
            step_past(sp, st, run, idx, &off);                                                     \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* The blocks cut in nslots runs of consecutive blocks, each summed                           \
     * into its own accumulators (acc + slot * ny), the runs taken by the                         \
     * nthreads threads as they come: a late thread holds no one up, and                          \
     * the bits depend on nslots only, not on who ran which run.                                  \
     * acc2 (reg2 >= 0): register reg2's accumulators, as acc's. */                               \
    static void sum_run_##sfx(const dla_fused_args *a, const space *sp, const int *how,            \
                              double *acc, int reg2, double *acc2, int64_t ny, int nslots,         \
                              int nthreads)                                                        \
    {                                                                                              \
        const int64_t blocks = sp->blocks;                                                         \
        _Pragma("omp parallel num_threads(nthreads)")                                              \
        {                                                                                          \
            _Alignas(64) T regs[DLA_FUSED_MAX_INSNS][BLOCK];                                       \
            _Alignas(64) T stage[DLA_FUSED_MAX_INPUTS][BLOCK];                                     \
            _Pragma("omp for schedule(dynamic, 1)")                                                \
            for (int slot = 0; slot < nslots; slot++) {                                            \
                double *mine = acc + (int64_t)slot * ny;                                           \
                double *mine2 = reg2 >= 0 ? acc2 + (int64_t)slot * ny : NULL;                      \
                const int64_t u1 = blocks * (slot + 1) / nslots;                                   \
                for (int64_t u = blocks * slot / nslots; u < u1; u++) {                            \
                    int64_t n;                                                                     \
                    const int64_t at = block_range(sp, u, &n);                                     \
                    const T *v = program_##sfx(a, sp, how, at, n, regs, stage, NULL);              \
                    accumulate_##sfx(sp, sp->strides[0], at, n, v, mine);                          \
                    /* Every register but the last is in regs (the last is v). */                  \
                    if (mine2)                                                                     \
                        accumulate_##sfx(sp, sp->strides[0], at, n, regs[reg2], mine2);            \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }                                                                                              \
                                                                                                   \
    /* y = the runs' accumulators added in order (divided by count for a                          \
     * mean), rounded to T. */                                                                     \
    static void sum_store_##sfx(const dla_view *y, const double *acc, int64_t ny, int nslots,      \
                                double divide)                                                     \
    {                                                                                              \
        T *base = (T *)y->mem + y->offset;                                                         \
        int64_t idx[DLA_MAX_DIMS] = {0}, off = 0;                                                  \
        for (int64_t q = 0; q < ny; q++) {                                                         \
            double s = 0.0;                                                                        \
            for (int t = 0; t < nslots; t++)                                                       \
                s += acc[t * ny + q];                                                              \
            base[off] = (T)(divide != 1.0 ? s / divide : s);                                       \
            for (int d = 0; d < y->ndims; d++) {                                                   \
                off += y->strides[d];                                                              \
                if (++idx[d] < y->dims[d])                                                         \
                    break;                                                                         \
                off -= idx[d] * y->strides[d];                                                     \
                idx[d] = 0;                                                                        \
            }                                                                                      \
        }                                                                                          \
    }
DEFINE_SUM(float, f32)
DEFINE_SUM(double, f64)

/* ------------------------------------------------------------- kernels */

/* The checked program a into y and the extra results ex (after y and the
 * inputs in the space, so their strides coalesce with the others'). */
static dla_status run_program(const dla_fused_args *a, const extras *ex)
{
    const dla_view *v[NOPS];
    v[0] = &a->y;
    for (int i = 0; i < a->ninputs; i++)
        v[1 + i] = &a->inputs[i];
    for (int k = 0; k < ex->n; k++)
        v[1 + a->ninputs + k] = &ex->view[k];
    const int nops = 1 + a->ninputs + ex->n;
    space sp;
    int how[NOPS];
    coalesce(&sp, nops, v);
    if (sp.numel == 0)
        return DLA_OK;
    classify(&sp, nops, a->ninputs, how);
    if (a->dtype == DLA_F32)
        run_f32(a, ex, &sp, how);
    else
        run_f64(a, ex, &sp, how);
    return DLA_OK;
}

dla_status dla__cpu_fused(void *dev, const dla_fused_args *args)
{
    const dla_status s = dla_kit_check_fused(&dla__cpu_kit, args);
    if (s != DLA_OK)
        return s;
    const extras none = {0, NULL, NULL};
    return run_program(args, &none);
}

dla_status dla__cpu_fused_multi(void *dev, const dla_fused_multi_args *args)
{
    const dla_status s = dla_kit_check_fused_multi(&dla__cpu_kit, args);
    if (s != DLA_OK)
        return s;
    const extras ex = {args->nextra, args->extra_reg, args->extra};
    return run_program(&args->program, &ex);
}

/* The views of program a, cut to images b0 .. b0 + nb - 1 along their
 * last dim, run on this thread: each image's slice of every operand is
 * the same elements as in the whole, so the bits are the whole program's. */
void dla__cpu_fused_images(const dla_fused_args *a, int64_t b0, int64_t nb)
{
    dla_fused_args cut = *a;
    const int last = a->y.ndims - 1;
    const dla_view *v[NOPS];
    for (int op = 0; op < 1 + a->ninputs; op++) {
        dla_view *w = op ? &cut.inputs[op - 1] : &cut.y;
        w->offset += b0 * w->strides[last];
        w->dims[last] = nb;
        v[op] = w;
    }
    const int nops = 1 + a->ninputs;
    space sp;
    int how[NOPS];
    coalesce(&sp, nops, v);
    if (sp.numel == 0)
        return;
    classify(&sp, nops, a->ninputs, how);
    const extras none = {0, NULL, NULL};
    if (a->dtype == DLA_F32)
        run_serial_f32(&cut, &none, &sp, how);
    else
        run_serial_f64(&cut, &none, &sp, how);
}

/* Accumulators past this many doubles (all slots together) would cost
 * more memory than the pass saves: such sums run in one slot. */
#define SUM_ACC_MAX ((int64_t)1 << 22)
#define SLOTS_MANY 64
#define SLOTS_FEW 8

static dla_status sum_program(const dla_fused_reduce_args *args, int pair);

dla_status dla__cpu_fused_reduce(void *dev, const dla_fused_reduce_args *args)
{
    const dla_status s = dla_kit_check_fused_reduce(&dla__cpu_kit, args);
    if (s != DLA_OK)
        return s;
    /* A 1.3 caller's struct may end before y2: not read then. */
    return sum_program(args, dla_kit_fused_reduce_pair(args));
}

dla_status dla__cpu_sum_blocks(const dla_view *y, const dla_view *x, int mean)
{
    dla_fused_reduce_args r;
    memset(&r, 0, sizeof r);
    r.struct_size = sizeof r;
    r.op = mean ? DLA_REDUCE_MEAN : DLA_REDUCE_SUM;
    r.program.dtype = x->dtype;
    r.program.ninputs = 1;
    r.program.ninsns = 0;
    r.program.inputs[0] = *x;
    r.program.y = *x;
    r.y = *y;
    return sum_program(&r, 0);
}

/* The sum of a checked program (no instruction: of input 0), and with
 * pair the sum of register reg2 into y2. */
static dla_status sum_program(const dla_fused_reduce_args *args, int pair)
{
    const dla_plugin_host *h = dla__cpu_host;
    const dla_fused_args *a = &args->program;
    const dla_view *shape = &a->y, *y = &args->y;
    char by[DLA_KIT_DIMS_BUF];
    /* Operand 0: each element's position in y, dense, 0 along summed dims. */
    dla_view pos = *shape;
    int64_t ny = 1, numel = 1;
    for (int d = 0; d < shape->ndims; d++) {
        pos.strides[d] = y->dims[d] == 1 && shape->dims[d] != 1 ? 0 : ny;
        ny *= y->dims[d];
        numel *= shape->dims[d];
    }
    pos.offset = 0;
    if (ny == 0)
        return DLA_OK;
    const dla_view *v[NOPS];
    v[0] = &pos;
    for (int i = 0; i < a->ninputs; i++)
        v[1 + i] = &a->inputs[i];
    space sp;
    int how[NOPS];
    coalesce(&sp, 1 + a->ninputs, v);
    const int results = pair ? 2 : 1;
    /* The runs of blocks (slots) are fixed by the work alone, never by the
     * thread count, so that the sums' bits are the same with any
     * OMP_NUM_THREADS (the cpu device is the reference every other device
     * and every machine is compared with): 64 runs where their
     * accumulators are cheap (a few statistics: enough for a dynamic
     * schedule to balance up to 8 threads), 8 where they cost more, one
     * where even that would cost more memory than the pass saves. */
    int nslots = 1;
    if (numel >= DLA__CPU_PAR_MIN)
        nslots = results * ny * SLOTS_MANY <= SUM_ACC_MAX / 64 ? SLOTS_MANY
                 : results * ny * SLOTS_FEW <= SUM_ACC_MAX     ? SLOTS_FEW
                                                               : 1;
    int nthreads = omp_get_max_threads();
    if (nthreads > nslots)
        nthreads = nslots;
    if (nthreads < 1)
        nthreads = 1;
    const int64_t nacc = results * ny * nslots;
    double *acc = h->alloc((size_t)nacc * sizeof *acc, 0);
    if (!acc)
        return h->error(DLA_ERR_OUT_OF_MEMORY, "cpu fused_reduce: %lld accumulators for y "
                        "(dims %s)", (long long)nacc,
                        dla_kit_dims_str(by, sizeof by, y->ndims, y->dims));
    memset(acc, 0, (size_t)nacc * sizeof *acc);
    double *acc2 = pair ? acc + ny * nslots : NULL;
    const int reg2 = pair ? args->reg2 : -1;
    if (sp.numel > 0) {
        /* Blocks as before whatever the inputs (ninputs 0 here): where
         * they start and end is the order of the double sums. */
        classify(&sp, 1 + a->ninputs, 0, how);
        if (a->dtype == DLA_F32)
            sum_run_f32(a, &sp, how, acc, reg2, acc2, ny, nslots, nthreads);
        else
            sum_run_f64(a, &sp, how, acc, reg2, acc2, ny, nslots, nthreads);
    }
    const double divide = args->op == DLA_REDUCE_MEAN ? (double)(numel / ny) : 1.0;
    for (int k = 0; k < results; k++) {
        const dla_view *out = k ? &args->y2 : y;
        if (a->dtype == DLA_F32)
            sum_store_f32(out, acc + k * ny * nslots, ny, nslots, divide);
        else
            sum_store_f64(out, acc + k * ny * nslots, ny, nslots, divide);
    }
    h->free(acc);
    return DLA_OK;
}
