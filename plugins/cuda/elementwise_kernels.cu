/*
 * elementwise_kernels.cu - unary, binary and ternary (where) over a
 * coalesced space. The arithmetic is dlaccel/plugin_ops.h's, the same
 * text the fused programs compile, so a fused program gives the bits of
 * its steps launched one by one; the op is a template argument (one
 * kernel per op and type, the switch folded away), the launcher picks
 * the instance.
 */
#include "plugins/cuda/elementwise_kern.h"
#include "plugins/cuda/kern.cuh"

#include <dlaccel/plugin_ops.h>
#include <stdint.h>

namespace {

__device__ __forceinline__ float un(int op, float x, float al, float be)
{
    return dla_ops_unary_f32(op, x, al, be);
}
__device__ __forceinline__ double un(int op, double x, double al, double be)
{
    return dla_ops_unary_f64(op, x, al, be);
}
__device__ __forceinline__ float bin(int op, float a, float b)
{
    return dla_ops_binary_f32(op, a, b);
}
__device__ __forceinline__ double bin(int op, double a, double b)
{
    return dla_ops_binary_f64(op, a, b);
}

/* views: y, x */
template <typename T, int OP> __global__ void unary_k(dla__cu_views<2> a, T al, T be)
{
    DLA__CU_FOR(i, a.sp.n)
    {
        int64_t off[2];
        dla__cu_locate<2>(a, i, off);
        const T x = *dla__cu_elem<T>(a.v[1], off[1]);
        *dla__cu_elem<T>(a.v[0], off[0]) = un(OP, x, al, be);
    }
}

/* views: z, a, b; a comparison stores a logical byte. */
template <typename T, int OP> __global__ void binary_k(dla__cu_views<3> a)
{
    DLA__CU_FOR(i, a.sp.n)
    {
        int64_t off[3];
        dla__cu_locate<3>(a, i, off);
        const T l = *dla__cu_elem<T>(a.v[1], off[1]);
        const T r = *dla__cu_elem<T>(a.v[2], off[2]);
        const T v = bin(OP, l, r);
        if (dla_ops_binary_is_cmp(OP))
            *dla__cu_elem<uint8_t>(a.v[0], off[0]) = (uint8_t)(v != (T)0);
        else
            *dla__cu_elem<T>(a.v[0], off[0]) = v;
    }
}

/* views: z, cond, a, b */
template <typename T> __global__ void where_k(dla__cu_views<4> a)
{
    DLA__CU_FOR(i, a.sp.n)
    {
        int64_t off[4];
        dla__cu_locate<4>(a, i, off);
        const uint8_t c = *dla__cu_elem<uint8_t>(a.v[1], off[1]);
        *dla__cu_elem<T>(a.v[0], off[0]) =
            c ? *dla__cu_elem<T>(a.v[2], off[2]) : *dla__cu_elem<T>(a.v[3], off[3]);
    }
}

template <int N> dla__cu_views<N> views_of(const dla__cu_space *sp, const dla__cu_vw *const *v)
{
    dla__cu_views<N> a;
    a.sp = *sp;
    for (int k = 0; k < N; k++)
        a.v[k] = *v[k];
    return a;
}

#define DLA__CU_UNARY_CASE(OP)                                                                     \
    case OP: unary_k<T, OP><<<blocks, DLA__CU_THREADS, 0, stream>>>(a, al, be); break;

template <typename T>
cudaError_t unary_launch(cudaStream_t stream, unsigned blocks, const dla__cu_views<2> &a, int op,
                         T al, T be)
{
    static_assert(DLA_OPS_U_COUNT == 19, "a case per unary op");
    switch (op) {
        DLA__CU_UNARY_CASE(DLA_OPS_U_NEG)
        DLA__CU_UNARY_CASE(DLA_OPS_U_EXP)
        DLA__CU_UNARY_CASE(DLA_OPS_U_LOG)
        DLA__CU_UNARY_CASE(DLA_OPS_U_SQRT)
        DLA__CU_UNARY_CASE(DLA_OPS_U_ABS)
        DLA__CU_UNARY_CASE(DLA_OPS_U_SIN)
        DLA__CU_UNARY_CASE(DLA_OPS_U_COS)
        DLA__CU_UNARY_CASE(DLA_OPS_U_TANH)
        DLA__CU_UNARY_CASE(DLA_OPS_U_SIGMOID)
        DLA__CU_UNARY_CASE(DLA_OPS_U_RELU)
        DLA__CU_UNARY_CASE(DLA_OPS_U_AFFINE)
        DLA__CU_UNARY_CASE(DLA_OPS_U_ERF)
        DLA__CU_UNARY_CASE(DLA_OPS_U_SIGN)
        DLA__CU_UNARY_CASE(DLA_OPS_U_POWS)
        DLA__CU_UNARY_CASE(DLA_OPS_U_LEAKY_RELU)
        DLA__CU_UNARY_CASE(DLA_OPS_U_ELU)
        DLA__CU_UNARY_CASE(DLA_OPS_U_STEP)
        DLA__CU_UNARY_CASE(DLA_OPS_U_RECIPROCAL)
        DLA__CU_UNARY_CASE(DLA_OPS_U_SQUARE)
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

#define DLA__CU_BINARY_CASE(OP)                                                                    \
    case OP: binary_k<T, OP><<<blocks, DLA__CU_THREADS, 0, stream>>>(a); break;

template <typename T>
cudaError_t binary_launch(cudaStream_t stream, unsigned blocks, const dla__cu_views<3> &a, int op)
{
    static_assert(DLA_OPS_B_COUNT == 13, "a case per binary op");
    switch (op) {
        DLA__CU_BINARY_CASE(DLA_OPS_B_ADD)
        DLA__CU_BINARY_CASE(DLA_OPS_B_SUB)
        DLA__CU_BINARY_CASE(DLA_OPS_B_MUL)
        DLA__CU_BINARY_CASE(DLA_OPS_B_DIV)
        DLA__CU_BINARY_CASE(DLA_OPS_B_MAX)
        DLA__CU_BINARY_CASE(DLA_OPS_B_MIN)
        DLA__CU_BINARY_CASE(DLA_OPS_B_POW)
        DLA__CU_BINARY_CASE(DLA_OPS_B_EQ)
        DLA__CU_BINARY_CASE(DLA_OPS_B_NE)
        DLA__CU_BINARY_CASE(DLA_OPS_B_LT)
        DLA__CU_BINARY_CASE(DLA_OPS_B_LE)
        DLA__CU_BINARY_CASE(DLA_OPS_B_GT)
        DLA__CU_BINARY_CASE(DLA_OPS_B_GE)
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

} // namespace

extern "C" cudaError_t dla__cu_launch_unary(cudaStream_t stream, unsigned blocks,
                                            const dla__cu_space *sp, const dla__cu_vw *y,
                                            const dla__cu_vw *x, int op, int f64, double alpha,
                                            double beta)
{
    if (sp->n <= 0)
        return cudaSuccess;
    const dla__cu_vw *v[] = {y, x};
    const dla__cu_views<2> a = views_of<2>(sp, v);
    if (f64)
        return unary_launch<double>(stream, blocks, a, op, alpha, beta);
    return unary_launch<float>(stream, blocks, a, op, (float)alpha, (float)beta);
}

extern "C" cudaError_t dla__cu_launch_binary(cudaStream_t stream, unsigned blocks,
                                             const dla__cu_space *sp, const dla__cu_vw *z,
                                             const dla__cu_vw *a, const dla__cu_vw *b, int op,
                                             int f64)
{
    if (sp->n <= 0)
        return cudaSuccess;
    const dla__cu_vw *v[] = {z, a, b};
    const dla__cu_views<3> w = views_of<3>(sp, v);
    if (f64)
        return binary_launch<double>(stream, blocks, w, op);
    return binary_launch<float>(stream, blocks, w, op);
}

extern "C" cudaError_t dla__cu_launch_where(cudaStream_t stream, unsigned blocks,
                                            const dla__cu_space *sp, const dla__cu_vw *z,
                                            const dla__cu_vw *cond, const dla__cu_vw *a,
                                            const dla__cu_vw *b, int f64)
{
    if (sp->n <= 0)
        return cudaSuccess;
    const dla__cu_vw *v[] = {z, cond, a, b};
    const dla__cu_views<4> w = views_of<4>(sp, v);
    if (f64)
        where_k<double><<<blocks, DLA__CU_THREADS, 0, stream>>>(w);
    else
        where_k<float><<<blocks, DLA__CU_THREADS, 0, stream>>>(w);
    return cudaGetLastError();
}
