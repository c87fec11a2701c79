/*
 * elementwise.c - the unary and binary kernels in single and double.
 *
 * Each (op, dtype) has two bodies made from one expression: a flat one for
 * views that coalesce to one dense run (one OpenMP loop the compiler
 * vectorizes; this is the path that must run at memory bandwidth), and a
 * row one that the strided walk calls, with branches for the unit-stride
 * and broadcast-scalar runs so those still vectorize.
 *
 * max and min ignore a NaN operand, as MATLAB's max(a, b) does: NaN comes
 * out only when both are NaN. relu (max(x, 0)) follows suit.
 */
#include "plugins/cpu/strided.h"

#include <math.h>

/* The libm function of x's type: FN(exp, x) is expf(x) for a float x. */
#define FN(name, x) _Generic((x), float : name##f, default : name)(x)
#define FN2(name, x, y) _Generic((x), float : name##f, default : name)(x, y)

/* -------------------------------------------------------------- unary */

#define U_NEG(x, al, be) (-(x))
#define U_EXP(x, al, be) FN(exp, x)
#define U_LOG(x, al, be) FN(log, x)
#define U_SQRT(x, al, be) FN(sqrt, x)
#define U_ABS(x, al, be) FN(fabs, x)
#define U_SIN(x, al, be) FN(sin, x)
#define U_COS(x, al, be) FN(cos, x)
#define U_TANH(x, al, be) FN(tanh, x)
#define U_SIGMOID(x, al, be) (1 / (1 + FN(exp, -(x))))
#define U_RELU(x, al, be) ((x) > 0 ? (x) : 0)
#define U_AFFINE(x, al, be) ((x) * (al) + (be))

/* In DLA_UNARY_LIST order. */
#define UNARY_OPS(X)                                                                               \
    X(neg, U_NEG)                                                                                  \
    X(exp, U_EXP)                                                                                  \
    X(log, U_LOG)                                                                                  \
    X(sqrt, U_SQRT)                                                                                \
    X(abs, U_ABS)                                                                                  \
    X(sin, U_SIN)                                                                                  \
    X(cos, U_COS)                                                                                  \
    X(tanh, U_TANH)                                                                                \
    X(sigmoid, U_SIGMOID)                                                                          \
    X(relu, U_RELU)                                                                                \
    X(affine, U_AFFINE)

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
        _Pragma("omp parallel for simd schedule(static) if(n >= DLA__CPU_PAR_MIN)")                \
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

dla_status dla__cpu_unary(void *dev, const dla_unary_args *args)
{
    const dla_plugin_host *h = dla__cpu_host;
    if (args->struct_size < sizeof(dla_unary_args))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "cpu unary: args struct_size %zu is smaller than ABI 1.0's %zu",
                        args->struct_size, sizeof(dla_unary_args));
    if ((unsigned)args->op >= DLA_UNARY_COUNT)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "cpu unary: argument op: unknown op %d",
                        (int)args->op);
    const dla_view *y = &args->y, *x = &args->x;
    dla_status s;
    if ((s = dla__cpu_check_view("unary", "y", y)) != DLA_OK ||
        (s = dla__cpu_check_view("unary", "x", x)) != DLA_OK ||
        (s = dla__cpu_check_same_dims("unary", "x", x, "y", y)) != DLA_OK ||
        (s = dla__cpu_check_float("unary", "x", x)) != DLA_OK)
        return s;
    if (y->dtype != x->dtype) {
        char buf[DLA__CPU_DIMS_BUF];
        return h->error(DLA_ERR_DTYPE,
                        "cpu unary: argument y (dims %s): dtype %s differs from x's %s",
                        dla__cpu_dims_str(buf, sizeof buf, y->ndims, y->dims),
                        dla__cpu_dtype_name(y->dtype), dla__cpu_dtype_name(x->dtype));
    }
    const int t = x->dtype == DLA_F64;
    dla__cpu_iter it;
    const dla_view *views[] = {y, x};
    dla__cpu_iter_init(&it, 2, views);
    if (it.numel == 0)
        return DLA_OK;
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

#define B_ADD(a, b) ((a) + (b))
#define B_SUB(a, b) ((a) - (b))
#define B_MUL(a, b) ((a) * (b))
#define B_DIV(a, b) ((a) / (b))
#define B_MAX(a, b) ((a) > (b) || (b) != (b) ? (a) : (b))
#define B_MIN(a, b) ((a) < (b) || (b) != (b) ? (a) : (b))
#define B_POW(a, b) FN2(pow, a, b)

/* In DLA_BINARY_LIST order. */
#define BINARY_OPS(X)                                                                              \
    X(add, B_ADD)                                                                                  \
    X(sub, B_SUB)                                                                                  \
    X(mul, B_MUL)                                                                                  \
    X(div, B_DIV)                                                                                  \
    X(max, B_MAX)                                                                                  \
    X(min, B_MIN)                                                                                  \
    X(pow, B_POW)

typedef struct binary_ctx {
    char *z;
    const char *a, *b;
} binary_ctx;

typedef void (*binary_flat_fn)(char *z, const char *a, const char *b, int64_t n);

#define DEFINE_BINARY(name, EXPR, T, sfx)                                                          \
    static void binary_flat_##name##_##sfx(char *zb, const char *ab, const char *bb, int64_t n)    \
    {                                                                                              \
        T *z = (T *)zb;                                                                            \
        const T *a = (const T *)ab, *b = (const T *)bb;                                            \
        _Pragma("omp parallel for simd schedule(static) if(n >= DLA__CPU_PAR_MIN)")                \
        for (int64_t i = 0; i < n; i++)                                                            \
            z[i] = EXPR(a[i], b[i]);                                                               \
    }                                                                                              \
    static void binary_row_##name##_##sfx(void *ctx, int64_t n, const int64_t *off,                \
                                          const int64_t *step)                                     \
    {                                                                                              \
        const binary_ctx *c = ctx;                                                                 \
        T *z = (T *)c->z + off[0];                                                                 \
        const T *a = (const T *)c->a + off[1], *b = (const T *)c->b + off[2];                      \
        const int64_t sz = step[0], sa = step[1], sb = step[2];                                    \
        if (sz == 1 && sa == 1 && sb == 1) {                                                       \
            _Pragma("omp simd")                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                z[i] = EXPR(a[i], b[i]);                                                           \
        } else if (sz == 1 && sa == 1 && sb == 0) {                                                \
            const T bs = *b;                                                                       \
            _Pragma("omp simd")                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                z[i] = EXPR(a[i], bs);                                                             \
        } else if (sz == 1 && sa == 0 && sb == 1) {                                                \
            const T as = *a;                                                                       \
            _Pragma("omp simd")                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                z[i] = EXPR(as, b[i]);                                                             \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                        \
                z[i * sz] = EXPR(a[i * sa], b[i * sb]);                                            \
        }                                                                                          \
    }

#define DEFINE_BINARY_BOTH(name, EXPR)                                                             \
    DEFINE_BINARY(name, EXPR, float, f32)                                                          \
    DEFINE_BINARY(name, EXPR, double, f64)
BINARY_OPS(DEFINE_BINARY_BOTH)

#define BINARY_FLAT_ENTRY(name, EXPR) {binary_flat_##name##_f32, binary_flat_##name##_f64},
#define BINARY_ROW_ENTRY(name, EXPR) {binary_row_##name##_f32, binary_row_##name##_f64},
static const binary_flat_fn binary_flat[][2] = {BINARY_OPS(BINARY_FLAT_ENTRY)};
static const dla__cpu_row_fn binary_row[][2] = {BINARY_OPS(BINARY_ROW_ENTRY)};
_Static_assert(sizeof binary_row / sizeof binary_row[0] == DLA_BINARY_COUNT,
               "BINARY_OPS out of step with DLA_BINARY_LIST");

dla_status dla__cpu_binary(void *dev, const dla_binary_args *args)
{
    const dla_plugin_host *h = dla__cpu_host;
    if (args->struct_size < sizeof(dla_binary_args))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "cpu binary: args struct_size %zu is smaller than ABI 1.0's %zu",
                        args->struct_size, sizeof(dla_binary_args));
    if ((unsigned)args->op >= DLA_BINARY_COUNT)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "cpu binary: argument op: unknown op %d",
                        (int)args->op);
    const dla_view *z = &args->z, *a = &args->a, *b = &args->b;
    dla_status s;
    if ((s = dla__cpu_check_view("binary", "z", z)) != DLA_OK ||
        (s = dla__cpu_check_view("binary", "a", a)) != DLA_OK ||
        (s = dla__cpu_check_view("binary", "b", b)) != DLA_OK ||
        (s = dla__cpu_check_same_dims("binary", "a", a, "z", z)) != DLA_OK ||
        (s = dla__cpu_check_same_dims("binary", "b", b, "z", z)) != DLA_OK ||
        (s = dla__cpu_check_float("binary", "z", z)) != DLA_OK)
        return s;
    if (a->dtype != z->dtype || b->dtype != z->dtype) {
        const dla_view *odd = a->dtype != z->dtype ? a : b;
        char buf[DLA__CPU_DIMS_BUF];
        return h->error(
            DLA_ERR_DTYPE, "cpu binary: argument %s (dims %s): dtype %s differs from z's %s",
            odd == a ? "a" : "b", dla__cpu_dims_str(buf, sizeof buf, odd->ndims, odd->dims),
            dla__cpu_dtype_name(odd->dtype), dla__cpu_dtype_name(z->dtype));
    }
    const int t = z->dtype == DLA_F64;
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
