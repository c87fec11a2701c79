/*
 * copy.c - the data-movement kernels: fill, strided copy and cast, for
 * every dtype.
 *
 * Conversions follow the header (float to integer truncates toward zero, to
 * bool is x != 0) and settle what it leaves open the way MATLAB's casts do:
 * a value out of the target's range saturates to its nearest end, and NaN
 * becomes 0. Plain C conversion would be undefined there.
 */
#include "plugins/cpu/strided.h"

#include <string.h>

/* ------------------------------------------------------------------ fill */

typedef struct fill_ctx {
    char *mem;
    union {
        uint8_t u8;
        uint32_t u32;
        uint64_t u64;
    } bits;
} fill_ctx;

#define DEFINE_FILL_ROW(T, member)                                                                 \
    static void fill_row_##T(void *ctx, int64_t n, const int64_t *off, const int64_t *step)        \
    {                                                                                              \
        const fill_ctx *c = ctx;                                                                   \
        T *y = (T *)c->mem + off[0];                                                               \
        const T v = c->bits.member;                                                                \
        const int64_t s = step[0];                                                                 \
        if (s == 1) {                                                                              \
            if (sizeof(T) == 1) {                                                                  \
                memset(y, (int)v, (size_t)n);                                                      \
                return;                                                                            \
            }                                                                                      \
            _Pragma("omp simd")                                                                    \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i] = v;                                                                          \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i * s] = v;                                                                      \
        }                                                                                          \
    }
DEFINE_FILL_ROW(uint8_t, u8)
DEFINE_FILL_ROW(uint32_t, u32)
DEFINE_FILL_ROW(uint64_t, u64)

dla_status dla__cpu_fill(void *dev, const dla_view *y, double value)
{
    dla_status s = dla_kit_check_view(&dla__cpu_kit, "fill", "y", y);
    if (s != DLA_OK)
        return s;
    fill_ctx c = {.mem = (char *)y->mem};
    dla_kit_fill_bits(y->dtype, value, &c.bits);
    const size_t size = dla_kit_dtype_size(y->dtype);
    const dla__cpu_row_fn fn = size == 1   ? fill_row_uint8_t
                               : size == 4 ? fill_row_uint32_t
                                           : fill_row_uint64_t;
    dla__cpu_iter it;
    const dla_view *views[] = {y};
    dla__cpu_iter_init(&it, 1, views);
    dla__cpu_iter_run(&it, fn, &c);
    return DLA_OK;
}

/* ---------------------------------------------------------- strided copy */

typedef struct move_ctx {
    char *y;
    const char *x;
} move_ctx;

#define DEFINE_COPY_ROW(T)                                                                         \
    static void copy_row_##T(void *ctx, int64_t n, const int64_t *off, const int64_t *step)        \
    {                                                                                              \
        const move_ctx *c = ctx;                                                                   \
        T *y = (T *)c->y + off[0];                                                                 \
        const T *x = (const T *)c->x + off[1];                                                     \
        const int64_t sy = step[0], sx = step[1];                                                  \
        if (sy == 1 && sx == 1) {                                                                  \
            memcpy(y, x, (size_t)n * sizeof(T));                                                   \
        } else if (sy == 1) {                                                                      \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i] = x[i * sx];                                                                  \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i * sy] = x[i * sx];                                                             \
        }                                                                                          \
    }
DEFINE_COPY_ROW(uint8_t)
DEFINE_COPY_ROW(uint32_t)
DEFINE_COPY_ROW(uint64_t)

static dla__cpu_row_fn copy_row_for(size_t size)
{
    return size == 1 ? copy_row_uint8_t : size == 4 ? copy_row_uint32_t : copy_row_uint64_t;
}

/* y = x for two checked views of equal dims and dtype. */
static void copy_views(const dla_view *y, const dla_view *x)
{
    const size_t size = dla_kit_dtype_size(y->dtype);
    dla__cpu_iter it;
    const dla_view *views[] = {y, x};
    dla__cpu_iter_init(&it, 2, views);
    if (it.numel == 0)
        return;
    if (dla__cpu_iter_flat(&it)) {
        dla__cpu_memcpy(dla__cpu_at(y, it.offset[0]), dla__cpu_at(x, it.offset[1]),
                        (size_t)it.numel * size);
        return;
    }
    move_ctx c = {(char *)y->mem, (const char *)x->mem};
    dla__cpu_iter_run(&it, copy_row_for(size), &c);
}

dla_status dla__cpu_strided_copy(void *dev, const dla_view *y, const dla_view *x)
{
    dla_status s = dla_kit_check_copy(&dla__cpu_kit, "strided_copy", y, x, 1);
    if (s != DLA_OK)
        return s;
    copy_views(y, x);
    return DLA_OK;
}

/* ------------------------------------------------------------------ cast */

/* Element types and conversions of each dtype, in DLA_DTYPE_LIST order. */
#define CONV_f32(v) ((float)(v))
#define CONV_f64(v) ((double)(v))
#define CONV_i32(v) dla_kit_to_i32((double)(v))
#define CONV_u8(v) dla_kit_to_u8((double)(v))
#define CONV_b8(v) ((uint8_t)((v) != 0))

#define DEFINE_CAST_ROW(TO, TT, FROM, TF)                                                          \
    static void cast_row_##FROM##_##TO(void *ctx, int64_t n, const int64_t *off,                   \
                                       const int64_t *step)                                        \
    {                                                                                              \
        const move_ctx *c = ctx;                                                                   \
        TT *y = (TT *)c->y + off[0];                                                               \
        const TF *x = (const TF *)c->x + off[1];                                                   \
        const int64_t sy = step[0], sx = step[1];                                                  \
        if (sy == 1 && sx == 1) {                                                                  \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i] = CONV_##TO(x[i]);                                                            \
        } else {                                                                                   \
            for (int64_t i = 0; i < n; i++)                                                        \
                y[i * sy] = CONV_##TO(x[i * sx]);                                                  \
        }                                                                                          \
    }

#define DEFINE_CAST_FROM(FROM, TF)                                                                 \
    DEFINE_CAST_ROW(f32, float, FROM, TF)                                                          \
    DEFINE_CAST_ROW(f64, double, FROM, TF)                                                         \
    DEFINE_CAST_ROW(i32, int32_t, FROM, TF)                                                        \
    DEFINE_CAST_ROW(u8, uint8_t, FROM, TF)                                                         \
    DEFINE_CAST_ROW(b8, uint8_t, FROM, TF)
DEFINE_CAST_FROM(f32, float)
DEFINE_CAST_FROM(f64, double)
DEFINE_CAST_FROM(i32, int32_t)
DEFINE_CAST_FROM(u8, uint8_t)
DEFINE_CAST_FROM(b8, uint8_t)

#define CAST_ROWS_FROM(FROM)                                                                       \
    {                                                                                              \
        cast_row_##FROM##_f32, cast_row_##FROM##_f64, cast_row_##FROM##_i32, cast_row_##FROM##_u8, \
            cast_row_##FROM##_b8                                                                   \
    }
/* [from][to] */
static const dla__cpu_row_fn cast_rows[DLA_DTYPE_COUNT][DLA_DTYPE_COUNT] = {
    CAST_ROWS_FROM(f32), CAST_ROWS_FROM(f64), CAST_ROWS_FROM(i32), CAST_ROWS_FROM(u8),
    CAST_ROWS_FROM(b8)};
_Static_assert(DLA_DTYPE_COUNT == 5, "cast_rows needs a row and a column per dtype");

dla_status dla__cpu_cast(void *dev, const dla_view *y, const dla_view *x)
{
    dla_status s = dla_kit_check_copy(&dla__cpu_kit, "cast", y, x, 0);
    if (s != DLA_OK)
        return s;
    if (x->dtype == y->dtype) {
        copy_views(y, x);
        return DLA_OK;
    }
    dla__cpu_iter it;
    const dla_view *views[] = {y, x};
    dla__cpu_iter_init(&it, 2, views);
    move_ctx c = {(char *)y->mem, (const char *)x->mem};
    dla__cpu_iter_run(&it, cast_rows[x->dtype][y->dtype], &c);
    return DLA_OK;
}
