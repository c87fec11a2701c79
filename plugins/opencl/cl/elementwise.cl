/*
 * elementwise.cl - unary, binary (comparisons write logical bytes) and
 * where, one kernel per op and float type, each an expression of ops.cl
 * stored through DLA_CANON.
 * y may alias x (z may alias a or b) exactly: every work-item reads its
 * element before writing it.
 */
#define DEF_UNARY(kname, EXPR, T)                                              \
    __kernel void kname(dla_shape sh, __global T *y, dla_vw vy,                \
                                     __global const T *x, dla_vw vx, T al,     \
                                     T be)                                     \
    {                                                                          \
        DLA_ELEMENT(sh, c);                                                    \
        const T v = x[dla_at(&vx, c)];                                         \
        const T r = EXPR(v, al, be);                                           \
        y[dla_at(&vy, c)] = DLA_CANON(T, r);                                   \
    }

#define ZT_ARITH(T) T
#define ZT_CMP(T) uchar
#define STORE_ARITH(T, v) DLA_CANON(T, (T)(v))
#define STORE_CMP(T, v) ((uchar)(v))
#define DEF_BINARY(kname, EXPR, KIND, T)                                       \
    __kernel void kname(dla_shape sh, __global ZT_##KIND(T) *z,                \
                                      dla_vw vz, __global const T *a,          \
                                      dla_vw va, __global const T *b,          \
                                      dla_vw vb)                               \
    {                                                                          \
        DLA_ELEMENT(sh, c);                                                    \
        const T p = a[dla_at(&va, c)], q = b[dla_at(&vb, c)];                  \
        z[dla_at(&vz, c)] = STORE_##KIND(T, EXPR(p, q));                       \
    }

#define DEF_WHERE(T)                                                           \
    __kernel void where_##T(dla_shape sh, __global T *z, dla_vw vz,            \
                            __global const uchar *cond, dla_vw vc,             \
                            __global const T *a, dla_vw va,                    \
                            __global const T *b, dla_vw vb)                    \
    {                                                                          \
        DLA_ELEMENT(sh, c);                                                    \
        const T p = a[dla_at(&va, c)], q = b[dla_at(&vb, c)];                  \
        const T r = cond[dla_at(&vc, c)] ? p : q;                              \
        z[dla_at(&vz, c)] = DLA_CANON(T, r);                                   \
    }

/* The kernel's name is pasted here, where the op's name is not expanded:
 * OpenCL implementations may define builtins such as exp as macros. */
#define UNARY_F32(name, EXPR) DEF_UNARY(unary_##name##_float, EXPR, float)
#define BINARY_F32(name, EXPR, KIND) DEF_BINARY(binary_##name##_float, EXPR, KIND, float)
DLA_UNARY_OPS(UNARY_F32)
DLA_BINARY_OPS(BINARY_F32)
DEF_WHERE(float)
#ifdef DLA_FP64
#define UNARY_F64(name, EXPR) DEF_UNARY(unary_##name##_double, EXPR, double)
#define BINARY_F64(name, EXPR, KIND) DEF_BINARY(binary_##name##_double, EXPR, KIND, double)
DLA_UNARY_OPS(UNARY_F64)
DLA_BINARY_OPS(BINARY_F64)
DEF_WHERE(double)
#endif
