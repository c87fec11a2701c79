/*
 * copy_kernels.cu - fill, strided copy and cast over a coalesced space
 * (copy.c chooses these when the runtime's own memset and memcpy do not
 * fit). Fill and copy move 1-, 4- or 8-byte patterns whatever the dtype;
 * cast converts with the ABI's rules (float to integer truncating toward
 * zero and saturating, NaN to 0; to bool x != 0, so NaN gives 1), as the
 * cpu plugin (plugins/cpu/copy.c, dlaccel/plugin_kit_args.h) does.
 */
#include "plugins/cuda/copy_kern.h"
#include "plugins/cuda/kern.cuh"

#include <dlaccel/plugin_ops.h>

#include <stdint.h>

namespace {

template <typename U> __global__ void fill_k(dla__cu_views<1> a, U v)
{
    DLA__CU_FOR(i, a.sp.n)
    {
        int64_t off[1];
        dla__cu_locate<1>(a, i, off);
        *dla__cu_elem<U>(a.v[0], off[0]) = v;
    }
}

/* Region blockIdx.y of c. */
__global__ void copies_k(dla__cu_copies c)
{
    const int r = blockIdx.y;
    dla__cu_copy_bytes(c.dst[r], c.src[r], c.bytes[r]);
}

template <typename U> __global__ void copy_k(dla__cu_views<2> a)
{
    DLA__CU_FOR(i, a.sp.n)
    {
        int64_t off[2];
        dla__cu_locate<2>(a, i, off);
        *dla__cu_elem<U>(a.v[0], off[0]) = *dla__cu_elem<U>(a.v[1], off[1]);
    }
}

/* The storage type of a dtype (DLA_F32 F64 I32 U8 BOOL) and the
 * conversion to it from a value of any storage type. */
template <int DT> struct dt;
template <> struct dt<DLA_F32> {
    typedef float T;
    template <typename S> static __device__ __forceinline__ float of(S v) { return (float)v; }
};
template <> struct dt<DLA_F64> {
    typedef double T;
    template <typename S> static __device__ __forceinline__ double of(S v) { return (double)v; }
};
template <> struct dt<DLA_I32> {
    typedef int32_t T;
    /* dla_kit_to_i32 of (double)v */
    template <typename S> static __device__ __forceinline__ int32_t of(S s)
    {
        return (int32_t)dla_ops_to_i32((double)s);
    }
};
template <> struct dt<DLA_U8> {
    typedef uint8_t T;
    /* dla_kit_to_u8 of (double)v */
    template <typename S> static __device__ __forceinline__ uint8_t of(S s)
    {
        return (uint8_t)dla_ops_to_u8((double)s);
    }
};
template <> struct dt<DLA_BOOL> {
    typedef uint8_t T;
    template <typename S> static __device__ __forceinline__ uint8_t of(S v)
    {
        return (uint8_t)(v != 0);
    }
};

template <int FROM, int TO> __global__ void cast_k(dla__cu_views<2> a)
{
    typedef typename dt<FROM>::T S;
    typedef typename dt<TO>::T D;
    DLA__CU_FOR(i, a.sp.n)
    {
        int64_t off[2];
        dla__cu_locate<2>(a, i, off);
        *dla__cu_elem<D>(a.v[0], off[0]) = dt<TO>::of(*dla__cu_elem<S>(a.v[1], off[1]));
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

template <int FROM>
cudaError_t cast_from(cudaStream_t stream, unsigned blocks, const dla__cu_views<2> &a, int to)
{
    switch (to) {
    case DLA_F32: cast_k<FROM, DLA_F32><<<blocks, DLA__CU_THREADS, 0, stream>>>(a); break;
    case DLA_F64: cast_k<FROM, DLA_F64><<<blocks, DLA__CU_THREADS, 0, stream>>>(a); break;
    case DLA_I32: cast_k<FROM, DLA_I32><<<blocks, DLA__CU_THREADS, 0, stream>>>(a); break;
    case DLA_U8: cast_k<FROM, DLA_U8><<<blocks, DLA__CU_THREADS, 0, stream>>>(a); break;
    case DLA_BOOL: cast_k<FROM, DLA_BOOL><<<blocks, DLA__CU_THREADS, 0, stream>>>(a); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

} // namespace

extern "C" cudaError_t dla__cu_launch_fill(cudaStream_t stream, unsigned blocks,
                                           const dla__cu_space *sp, const dla__cu_vw *y, int esize,
                                           uint64_t bits)
{
    if (sp->n <= 0)
        return cudaSuccess;
    const dla__cu_vw *v[] = {y};
    const dla__cu_views<1> a = views_of<1>(sp, v);
    switch (esize) {
    case 1: fill_k<uint8_t><<<blocks, DLA__CU_THREADS, 0, stream>>>(a, (uint8_t)bits); break;
    case 4: fill_k<uint32_t><<<blocks, DLA__CU_THREADS, 0, stream>>>(a, (uint32_t)bits); break;
    case 8: fill_k<uint64_t><<<blocks, DLA__CU_THREADS, 0, stream>>>(a, bits); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t dla__cu_launch_copy(cudaStream_t stream, unsigned blocks,
                                           const dla__cu_space *sp, const dla__cu_vw *y,
                                           const dla__cu_vw *x, int esize)
{
    if (sp->n <= 0)
        return cudaSuccess;
    const dla__cu_vw *v[] = {y, x};
    const dla__cu_views<2> a = views_of<2>(sp, v);
    switch (esize) {
    case 1: copy_k<uint8_t><<<blocks, DLA__CU_THREADS, 0, stream>>>(a); break;
    case 4: copy_k<uint32_t><<<blocks, DLA__CU_THREADS, 0, stream>>>(a); break;
    case 8: copy_k<uint64_t><<<blocks, DLA__CU_THREADS, 0, stream>>>(a); break;
    default: return cudaErrorInvalidValue;
    }
    return cudaGetLastError();
}

extern "C" cudaError_t dla__cu_launch_cast(cudaStream_t stream, unsigned blocks,
                                           const dla__cu_space *sp, const dla__cu_vw *y,
                                           const dla__cu_vw *x, int to, int from)
{
    if (sp->n <= 0)
        return cudaSuccess;
    const dla__cu_vw *v[] = {y, x};
    const dla__cu_views<2> a = views_of<2>(sp, v);
    switch (from) {
    case DLA_F32: return cast_from<DLA_F32>(stream, blocks, a, to);
    case DLA_F64: return cast_from<DLA_F64>(stream, blocks, a, to);
    case DLA_I32: return cast_from<DLA_I32>(stream, blocks, a, to);
    case DLA_U8: return cast_from<DLA_U8>(stream, blocks, a, to);
    case DLA_BOOL: return cast_from<DLA_BOOL>(stream, blocks, a, to);
    default: return cudaErrorInvalidValue;
    }
}

extern "C" cudaError_t dla__cu_launch_copies(cudaStream_t stream, unsigned blocks,
                                             const dla__cu_copies *c)
{
    if (c->n <= 0)
        return cudaSuccess;
    copies_k<<<dim3(blocks, (unsigned)c->n), DLA__CU_THREADS, 0, stream>>>(*c);
    return cudaGetLastError();
}
