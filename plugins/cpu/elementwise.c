/*
 * elementwise.c - the unary, binary and ternary (where) kernels in single
 * and double.
 *
 * Each (op, dtype) has two bodies made from one expression: a flat one for
 * views that coalesce to one dense run (one OpenMP loop the compiler
 * vectorizes; this is the path that must run at memory bandwidth; below
 * DLA__CPU_PAR_MIN it stays out of any parallel region, whose entry alone
 * costs more than a small op), and a
 * row one that the strided walk calls, with branches for the unit-stride
 * and broadcast-scalar runs so those still vectorize.
 *
 * max and min ignore a NaN operand, as MATLAB's max(a, b) does: NaN comes
 * out only when both are NaN. relu (max(x, 0)) follows suit.
 *
 * Comparisons read two float operands and write logical bytes 0/1; where
 * reads a logical condition and two float operands. Their bodies are the
 * same two shapes with a different element type on one side.
 */
#include "plugins/cpu/elementwise_ops.h"
#include "plugins/cpu/share.h"
#include "plugins/cpu/strided.h"
#include "plugins/cpu/vmath.h"

typedef struct unary_ctx {
    char *y;
    const char *x;
    double alpha, beta;
} unary_ctx;

typedef void (*unary_flat_fn)(char *y, const char *x, int64_t n, double alpha, double beta);

#define DEFINE_UNARY(name, EXPR, T, sfx)                                                           \
    static void unary_flat_##name##_##sfx(char *yb, const char *xb, int64_t n, double alpha,       \
                                          double beta)                                             \
    {                                                                                              \
        T *y = (T *)yb;                                                                            \
        const T *x = (const T *)xb;                                                                \
        const T al = (T)alpha, be = (T)beta;                                                       \
        (void)al, (void)be;                                                                        \
        if (n < DLA__CPU_PAR_MIN) {                                                                \
            _Pragma("omp simd")                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i] = EXPR(x[i], al, be);                                                         \
            return;                                                                                \
        }                                                                                          \
        _Pragma("omp parallel for simd schedule(static)")                                          \
        for (int64_t i = 0; i < n; i++)                                                            \
            y[i] = EXPR(x[i], al, be);                                                             \
    }                                                                                              \
    static void unary_row_##name##_##sfx(void *ctx, int64_t n, const int64_t *off,                 \
                                         const int64_t *step)                                      \
    {                                                                                              \
        const unary_ctx *c = ctx;                                                                  \
        T *y = (T *)c->y + off[0];                                                                 \
        const T *x = (const T *)c->x + off[1];                                                     \
        const T al = (T)c->alpha, be = (T)c->beta;                                                 \
        const int64_t sy = step[0], sx = step[1];                                                  \
        (void)al, (void)be;                                                                        \
        if (sy == 1 && sx == 1) {                                                                  \
            _Pragma("omp simd")                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i] = EXPR(x[i], al, be);                                                         \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i * sy] = EXPR(x[i * sx], al, be);                                               \
        }                                                                                          \
    }

#define DEFINE_UNARY_BOTH(name, EXPR)                                                              \
    DEFINE_UNARY(name, EXPR, float, f32)                                                           \
    DEFINE_UNARY(name, EXPR, double, f64)
UNARY_OPS(DEFINE_UNARY_BOTH)

#define UNARY_FLAT_ENTRY(name, EXPR) {unary_flat_##name##_f32, unary_flat_##name##_f64},
#define UNARY_ROW_ENTRY(name, EXPR) {unary_row_##name##_f32, unary_row_##name##_f64},
static const unary_flat_fn unary_flat[][2] = {UNARY_OPS(UNARY_FLAT_ENTRY)};
static const dla__cpu_row_fn unary_row[][2] = {UNARY_OPS(UNARY_ROW_ENTRY)};
_Static_assert(sizeof unary_row / sizeof unary_row[0] == DLA_UNARY_COUNT,
               "UNARY_OPS out of step with DLA_UNARY_LIST");

/* exp, log, tanh, sigmoid and erf through the vector functions (vmath.c),
 * as the fused programs run them. A dense run goes over the team in
 * chunks; a chunk boundary changes no element's bits (vmath.c). */
#define VM_CHUNK 4096

typedef struct vm_ctx {
    char *y;
    const char *x;
    dla__cpu_vmath_f32_fn f32;
    dla__cpu_vmath_f64_fn f64;
} vm_ctx;

static void vm_flat(const vm_ctx *c, int64_t n)
{
    const int64_t chunks = (n + VM_CHUNK - 1) / VM_CHUNK;
    const size_t es = c->f32 ? sizeof(float) : sizeof(double);
#pragma omp parallel for schedule(static) if (n >= DLA__CPU_PAR_MIN)
    for (int64_t k = 0; k < chunks; k++) {
        const int64_t at = k * VM_CHUNK, len = n - at < VM_CHUNK ? n - at : VM_CHUNK;
        char *y = c->y + (size_t)at * es;
        const char *x = c->x + (size_t)at * es;
        if (c->f32)
            c->f32((float *)y, 1, (const float *)x, 1, len);
        else
            c->f64((double *)y, 1, (const double *)x, 1, len);
    }
}

static void vm_row(void *ctx, int64_t n, const int64_t *off, const int64_t *step)
{
    const vm_ctx *c = ctx;
    if (c->f32)
        c->f32((float *)c->y + off[0], step[0], (const float *)c->x + off[1], step[1], n);
    else
        c->f64((double *)c->y + off[0], step[0], (const double *)c->x + off[1], step[1], n);
}

dla_status dla__cpu_unary(void *dev, const dla_unary_args *args)
{
    const dla_view *y = &args->y, *x = &args->x;
    dla_status s = dla_kit_check_unary(&dla__cpu_kit, args);
    if (s != DLA_OK)
        return s;
    const int t = x->dtype == DLA_F64;
    dla__cpu_iter it;
    const dla_view *views[] = {y, x};
    dla__cpu_iter_init(&it, 2, views);
    if (it.numel == 0)
        return DLA_OK;
    vm_ctx vm = {(char *)y->mem, (const char *)x->mem, t ? NULL : dla__cpu_vmath_f32(args->op),
                 t ? dla__cpu_vmath_f64(args->op) : NULL};
    if (vm.f32 || vm.f64) {
        if (dla__cpu_iter_flat(&it)) {
            vm.y = dla__cpu_at(y, it.offset[0]);
            vm.x = dla__cpu_at(x, it.offset[1]);
            vm_flat(&vm, it.numel);
        } else {
            dla__cpu_iter_run(&it, vm_row, &vm);
        }
        return DLA_OK;
    }
    if (dla__cpu_iter_flat(&it)) {
        unary_flat[args->op][t](dla__cpu_at(y, it.offset[0]), dla__cpu_at(x, it.offset[1]),
                                it.numel, args->alpha, args->beta);
        return DLA_OK;
    }
    unary_ctx c = {(char *)y->mem, (const char *)x->mem, args->alpha, args->beta};
    dla__cpu_iter_run(&it, unary_row[args->op][t], &c);
    return DLA_OK;
}

/* ------------------------------------------------------------- binary */

/* The element type of z: the operands' (ARITH) or logical (CMP). */
#define ZTYPE_ARITH(T) T
#define ZTYPE_CMP(T) uint8_t

typedef struct binary_ctx {
    char *z;
    const char *a, *b;
} binary_ctx;

typedef void (*binary_flat_fn)(char *z, const char *a, const char *b, int64_t n);

/* A flat binary op of DLA__CPU_PAR_MIN to SHARE_MAX elements (an LSTM
 * train step's accumulation of its 512 x 132 weight gradient, 98 a step)
 * goes to share.c in chunks of SHARE_CHUNK: a few microseconds of work,
 * which an OpenMP region's closing barrier held up whenever a teammate
 * was not running. Larger ones keep their region (bound by memory, long
 * enough to amortize it). */
#define SHARE_MAX ((int64_t)1 << 20)
#define SHARE_CHUNK ((int64_t)8192)

typedef struct binary_share {
    char *z;
    const char *a, *b;
    int64_t n;
} binary_share;

#define DEFINE_BINARY(name, EXPR, T, Z, sfx)                                                       \
    static void binary_chunk_##name##_##sfx(void *arg, int64_t it)                                 \
    {                                                                                              \
        const binary_share *s = arg;                                                               \
        const int64_t at = it * SHARE_CHUNK;                                                       \
        const int64_t n = s->n - at < SHARE_CHUNK ? s->n - at : SHARE_CHUNK;                       \
        Z *z = (Z *)s->z + at;                                                                     \
        const T *a = (const T *)s->a + at, *b = (const T *)s->b + at;                              \
        _Pragma("omp simd")                                                                        \
        for (int64_t i = 0; i < n; i++)                                                            \
            z[i] = (Z)EXPR(a[i], b[i]);                                                            \
    }                                                                                              \
    static void binary_flat_##name##_##sfx(char *zb, const char *ab, const char *bb, int64_t n)    \
    {                                                                                              \
        Z *z = (Z *)zb;                                                                            \
        const T *a = (const T *)ab, *b = (const T *)bb;                                            \
        if (n < DLA__CPU_PAR_MIN) {                                                                \
            _Pragma("omp simd")                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                z[i] = (Z)EXPR(a[i], b[i]);                                                        \
            return;                                                                                \
        }                                                                                          \
        if (n < SHARE_MAX && dla__cpu_share_wanted()) {                                                \
            binary_share s = {zb, ab, bb, n};                                                      \
            dla__cpu_share((n + SHARE_CHUNK - 1) / SHARE_CHUNK, binary_chunk_##name##_##sfx, &s);  \
            return;                                                                                \
        }                                                                                          \
        _Pragma("omp parallel for simd schedule(static)")                                          \
        for (int64_t i = 0; i < n; i++)                                                            \
            z[i] = (Z)EXPR(a[i], b[i]);                                                            \
    }                                                                                              \
    static void binary_row_##name##_##sfx(void *ctx, int64_t n, const int64_t *off,                \
                                          const int64_t *step)                                     \
    {                                                                                              \
        const binary_ctx *c = ctx;                                                                 \
        Z *z = (Z *)c->z + off[0];                                                                 \
        const T *a = (const T *)c->a + off[1], *b = (const T *)c->b + off[2];                      \
        const int64_t sz = step[0], sa = step[1], sb = step[2];                                    \
        if (sz == 1 && sa == 1 && sb == 1) {                                                       \
            _Pragma("omp simd")                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                z[i] = (Z)EXPR(a[i], b[i]);                                                        \
        } else if (sz == 1 && sa == 1 && sb == 0) {                                                \
            const T bs = *b;                                                                       \
            _Pragma("omp simd")                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                z[i] = (Z)EXPR(a[i], bs);                                                          \
        } else if (sz == 1 && sa == 0 && sb == 1) {                                                \
            const T as = *a;                                                                       \
            _Pragma("omp simd")                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                z[i] = (Z)EXPR(as, b[i]);                                                          \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                        \
                z[i * sz] = (Z)EXPR(a[i * sa], b[i * sb]);                                         \
        }                                                                                          \
    }

#define DEFINE_BINARY_BOTH(name, EXPR, KIND)                                                       \
    DEFINE_BINARY(name, EXPR, float, ZTYPE_##KIND(float), f32)                                     \
    DEFINE_BINARY(name, EXPR, double, ZTYPE_##KIND(double), f64)
BINARY_OPS(DEFINE_BINARY_BOTH)

#define BINARY_FLAT_ENTRY(name, EXPR, KIND) {binary_flat_##name##_f32, binary_flat_##name##_f64},
#define BINARY_ROW_ENTRY(name, EXPR, KIND) {binary_row_##name##_f32, binary_row_##name##_f64},
static const binary_flat_fn binary_flat[][2] = {BINARY_OPS(BINARY_FLAT_ENTRY)};
static const dla__cpu_row_fn binary_row[][2] = {BINARY_OPS(BINARY_ROW_ENTRY)};
_Static_assert(sizeof binary_row / sizeof binary_row[0] == DLA_BINARY_COUNT,
               "BINARY_OPS out of step with DLA_BINARY_LIST");

dla_status dla__cpu_binary(void *dev, const dla_binary_args *args)
{
    const dla_view *z = &args->z, *a = &args->a, *b = &args->b;
    dla_status s = dla_kit_check_binary(&dla__cpu_kit, args);
    if (s != DLA_OK)
        return s;
    const int t = a->dtype == DLA_F64;
    dla__cpu_iter it;
    const dla_view *views[] = {z, a, b};
    dla__cpu_iter_init(&it, 3, views);
    if (it.numel == 0)
        return DLA_OK;
    if (dla__cpu_iter_flat(&it)) {
        binary_flat[args->op][t](dla__cpu_at(z, it.offset[0]), dla__cpu_at(a, it.offset[1]),
                                 dla__cpu_at(b, it.offset[2]), it.numel);
        return DLA_OK;
    }
    binary_ctx c = {(char *)z->mem, (const char *)a->mem, (const char *)b->mem};
    dla__cpu_iter_run(&it, binary_row[args->op][t], &c);
    return DLA_OK;
}

/* ------------------------------------------------------------ ternary */

typedef struct ternary_ctx {
    char *z;
    const char *cond, *a, *b;
} ternary_ctx;

typedef void (*ternary_flat_fn)(char *z, const char *cond, const char *a, const char *b,
                                int64_t n);

/* Both operands are read whatever the condition (they are arguments): a
 * load under a branch keeps the compiler from making vector blends. */
static inline float pick_f32(uint8_t c, float a, float b) { return c ? a : b; }
static inline double pick_f64(uint8_t c, double a, double b) { return c ? a : b; }

/* The row body picks a loop per stride pattern: where(mask, x, 0) and
 * where(mask, x, y) vectorize as blends; a broadcast condition turns the
 * run into a copy of one operand. */
#define DEFINE_WHERE(T, sfx)                                                                       \
    static void where_flat_##sfx(char *zb, const char *cb, const char *ab, const char *bb,         \
                                 int64_t n)                                                        \
    {                                                                                              \
        T *z = (T *)zb;                                                                            \
        const uint8_t *c = (const uint8_t *)cb;                                                    \
        const T *a = (const T *)ab, *b = (const T *)bb;                                            \
        if (n < DLA__CPU_PAR_MIN) {                                                                \
            _Pragma("omp simd")                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                z[i] = pick_##sfx(c[i], a[i], b[i]);                                               \
            return;                                                                                \
        }                                                                                          \
        _Pragma("omp parallel for simd schedule(static)")                                          \
        for (int64_t i = 0; i < n; i++)                                                            \
            z[i] = pick_##sfx(c[i], a[i], b[i]);                                                   \
    }                                                                                              \
    static void where_row_##sfx(void *ctx, int64_t n, const int64_t *off, const int64_t *step)     \
    {                                                                                              \
        const ternary_ctx *x = ctx;                                                                \
        T *z = (T *)x->z + off[0];                                                                 \
        const uint8_t *c = (const uint8_t *)x->cond + off[1];                                      \
        const T *a = (const T *)x->a + off[2], *b = (const T *)x->b + off[3];                      \
        const int64_t sz = step[0], sc = step[1], sa = step[2], sb = step[3];                      \
        if (sz == 1 && sc == 1 && sa == 1 && sb == 1) {                                            \
            _Pragma("omp simd")                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                z[i] = pick_##sfx(c[i], a[i], b[i]);                                               \
        } else if (sz == 1 && sc == 1 && sa == 1 && sb == 0) {                                     \
            const T bs = *b;                                                                       \
            _Pragma("omp simd")                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                z[i] = pick_##sfx(c[i], a[i], bs);                                                 \
        } else if (sz == 1 && sc == 1 && sa == 0 && sb == 1) {                                     \
            const T as = *a;                                                                       \
            _Pragma("omp simd")                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                z[i] = pick_##sfx(c[i], as, b[i]);                                                 \
        } else if (sc == 0) {                                                                      \
            const T *src = *c ? a : b;                                                             \
            const int64_t ss = *c ? sa : sb;                                                       \
            for (int64_t i = 0; i < n; i++)                                                        \
                z[i * sz] = src[i * ss];                                                           \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                        \
                z[i * sz] = c[i * sc] ? a[i * sa] : b[i * sb];                                     \
        }                                                                                          \
    }
DEFINE_WHERE(float, f32)
DEFINE_WHERE(double, f64)

static const ternary_flat_fn where_flat[2] = {where_flat_f32, where_flat_f64};
static const dla__cpu_row_fn where_row[2] = {where_row_f32, where_row_f64};
_Static_assert(DLA_TERNARY_COUNT == 1, "a ternary op beside where needs its bodies here");

dla_status dla__cpu_ternary(void *dev, const dla_ternary_args *args)
{
    const dla_view *z = &args->z, *cond = &args->cond, *a = &args->a, *b = &args->b;
    dla_status s = dla_kit_check_ternary(&dla__cpu_kit, args);
    if (s != DLA_OK)
        return s;
    const int t = z->dtype == DLA_F64;
    dla__cpu_iter it;
    const dla_view *views[] = {z, cond, a, b};
    dla__cpu_iter_init(&it, 4, views);
    if (it.numel == 0)
        return DLA_OK;
    if (dla__cpu_iter_flat(&it)) {
        where_flat[t](dla__cpu_at(z, it.offset[0]), dla__cpu_at(cond, it.offset[1]),
                      dla__cpu_at(a, it.offset[2]), dla__cpu_at(b, it.offset[3]), it.numel);
        return DLA_OK;
    }
    ternary_ctx c = {(char *)z->mem, (const char *)cond->mem, (const char *)a->mem,
                     (const char *)b->mem};
    dla__cpu_iter_run(&it, where_row[t], &c);
    return DLA_OK;
}
