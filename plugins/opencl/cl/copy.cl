/*
 * copy.cl - fill, strided copy and cast for every dtype.
 *
 * Fill and copy move bit patterns of 1, 4 or 8 bytes (the host converts a
 * fill value once, exactly as the cpu plugin does), so double data moves
 * on a device without cl_khr_fp64 too. Casts follow the header and the cpu
 * plugin: float to integer truncates toward zero and saturates at the
 * type's range, NaN becomes 0, to logical is x != 0 (NaN gives 1).
 */
#define DEF_FILL(T, sfx)                                                       \
    __kernel void fill_##sfx(dla_shape sh, __global T *y, dla_vw vy, T v)      \
    {                                                                          \
        DLA_ELEMENT(sh, c);                                                    \
        y[dla_at(&vy, c)] = v;                                                 \
    }
DEF_FILL(uchar, 1)
DEF_FILL(uint, 4)
DEF_FILL(ulong, 8)

#define DEF_COPY(T, sfx)                                                       \
    __kernel void copy_##sfx(dla_shape sh, __global T *y, dla_vw vy,           \
                             __global const T *x, dla_vw vx)                   \
    {                                                                          \
        DLA_ELEMENT(sh, c);                                                    \
        y[dla_at(&vy, c)] = x[dla_at(&vx, c)];                                 \
    }
DEF_COPY(uchar, 1)
DEF_COPY(uint, 4)
DEF_COPY(ulong, 8)

/* Conversions by target, from a float (F), double (D) or integer (I)
 * source. The comparisons against 2^31 - 1 and -2^31 are the cpu
 * plugin's: a float at or above 2147483647.0f (which is 2^31) saturates. */
#define F_TO_I32(v) (isnan(v) ? 0 : (v) >= 2147483647.0f ? 2147483647                   \
                     : (v) <= -2147483648.0f ? (-2147483647 - 1) : (int)(v))
#define D_TO_I32(v) (isnan(v) ? 0 : (v) >= 2147483647.0 ? 2147483647                    \
                     : (v) <= -2147483648.0 ? (-2147483647 - 1) : (int)(v))
#define F_TO_U8(v) ((uchar)(isnan(v) || (v) <= 0 ? 0 : (v) >= 255 ? 255 : (uchar)(v)))
#define I_TO_U8(v) ((uchar)((v) <= 0 ? 0 : (v) >= 255 ? 255 : (v)))
#define TO_B8(v) ((uchar)((v) != 0))

#define DEF_CAST(from, TF, to, TT, CONV)                                       \
    __kernel void cast_##from##_##to(dla_shape sh, __global TT *y, dla_vw vy,  \
                                     __global const TF *x, dla_vw vx)          \
    {                                                                          \
        DLA_ELEMENT(sh, c);                                                    \
        const TF v = x[dla_at(&vx, c)];                                        \
        y[dla_at(&vy, c)] = CONV(v);                                           \
    }

#define AS_F32(v) ((float)(v))
#define AS_F64(v) ((double)(v))
#define AS_I32(v) ((int)(v))
#define AS_U8(v) ((uchar)(v))

DEF_CAST(f32, float, i32, int, F_TO_I32)
DEF_CAST(f32, float, u8, uchar, F_TO_U8)
DEF_CAST(f32, float, b8, uchar, TO_B8)
DEF_CAST(i32, int, f32, float, AS_F32)
DEF_CAST(i32, int, u8, uchar, I_TO_U8)
DEF_CAST(i32, int, b8, uchar, TO_B8)
DEF_CAST(u8, uchar, f32, float, AS_F32)
DEF_CAST(u8, uchar, i32, int, AS_I32)
DEF_CAST(u8, uchar, b8, uchar, TO_B8)
DEF_CAST(b8, uchar, f32, float, AS_F32)
DEF_CAST(b8, uchar, i32, int, AS_I32)
DEF_CAST(b8, uchar, u8, uchar, AS_U8)
#ifdef DLA_FP64
DEF_CAST(f32, float, f64, double, AS_F64)
DEF_CAST(f64, double, f32, float, AS_F32)
DEF_CAST(f64, double, i32, int, D_TO_I32)
DEF_CAST(f64, double, u8, uchar, F_TO_U8)
DEF_CAST(f64, double, b8, uchar, TO_B8)
DEF_CAST(i32, int, f64, double, AS_F64)
DEF_CAST(u8, uchar, f64, double, AS_F64)
DEF_CAST(b8, uchar, f64, double, AS_F64)
#endif
