/*
 * conv_kernels.cu - the cuda plugin's direct convolution kernels (see
 * conv_kern.h): correct for every geometry the ABI allows (1 to 3 spatial
 * dims, stride, dilation, asymmetric and negative padding, groups, any
 * strides of the views), deterministic (no atomics).
 */
#include "plugins/cuda/conv_kern.h"
#include "plugins/cuda/kern.cuh"

namespace {

/* Splits i (column-major over out or in, then channel, then batch) into
 * p[0..2], channel and image. */
__device__ __forceinline__ void split(int64_t i, const int64_t *sz, int64_t nch, int64_t *p,
                                      int64_t *ch, int64_t *b)
{
    p[0] = i % sz[0];
    i /= sz[0];
    p[1] = i % sz[1];
    i /= sz[1];
    p[2] = i % sz[2];
    i /= sz[2];
    *ch = i % nch;
    *b = i / nch;
}

template <typename T>
__global__ void conv_fwd(dla__cu_conv_geom g, T *__restrict__ y, const T *__restrict__ x,
                         const T *__restrict__ w, const T *__restrict__ bias)
{
    const int64_t n = g.out_px * g.F * g.batch;
    DLA__CU_FOR(i, n)
    {
        int64_t o[3], f, b;
        split(i, g.out, g.F, o, &f, &b);
        const int64_t grp = f / g.Fg, fl = f - grp * g.Fg;
        T acc = 0;
        for (int64_t cl = 0; cl < g.Cg; cl++) {
            const T *xb = x + b * g.xb + (grp * g.Cg + cl) * g.xc;
            const T *wb = w + cl * g.wc + fl * g.wf + grp * g.wg;
            for (int64_t k2 = 0; k2 < g.fs[2]; k2++) {
                const int64_t i2 = o[2] * g.st[2] - g.pb[2] + k2 * g.dl[2];
                if (i2 < 0 || i2 >= g.in[2])
                    continue;
                for (int64_t k1 = 0; k1 < g.fs[1]; k1++) {
                    const int64_t i1 = o[1] * g.st[1] - g.pb[1] + k1 * g.dl[1];
                    if (i1 < 0 || i1 >= g.in[1])
                        continue;
                    const T *xr = xb + i1 * g.xs[1] + i2 * g.xs[2];
                    const T *wr = wb + k1 * g.ws[1] + k2 * g.ws[2];
                    for (int64_t k0 = 0; k0 < g.fs[0]; k0++) {
                        const int64_t i0 = o[0] * g.st[0] - g.pb[0] + k0 * g.dl[0];
                        if (i0 < 0 || i0 >= g.in[0])
                            continue;
                        acc += xr[i0 * g.xs[0]] * wr[k0 * g.ws[0]];
                    }
                }
            }
        }
        if (bias)
            acc += bias[f * g.bs];
        y[o[0] * g.ys[0] + o[1] * g.ys[1] + o[2] * g.ys[2] + f * g.yf + b * g.yb] = acc;
    }
}

/* The output position o along one dim whose tap k reads input position
 * i, or -1. */
__device__ __forceinline__ int64_t out_of(int64_t i, int64_t k, int64_t pb, int64_t dl,
                                          int64_t st, int64_t out)
{
    const int64_t t = i + pb - k * dl;
    if (t < 0)
        return -1;
    const int64_t o = t / st;
    return o * st == t && o < out ? o : -1;
}

template <typename T>
__global__ void conv_bwd_data(dla__cu_conv_geom g, T *__restrict__ x, const T *__restrict__ y,
                              const T *__restrict__ w)
{
    const int64_t n = g.in_px * g.C * g.batch;
    DLA__CU_FOR(i, n)
    {
        int64_t p[3], c, b;
        split(i, g.in, g.C, p, &c, &b);
        const int64_t grp = c / g.Cg, cl = c - grp * g.Cg;
        T acc = 0;
        for (int64_t fl = 0; fl < g.Fg; fl++) {
            const int64_t f = grp * g.Fg + fl;
            const T *yb = y + b * g.yb + f * g.yf;
            const T *wb = w + cl * g.wc + fl * g.wf + grp * g.wg;
            for (int64_t k2 = 0; k2 < g.fs[2]; k2++) {
                const int64_t o2 = out_of(p[2], k2, g.pb[2], g.dl[2], g.st[2], g.out[2]);
                if (o2 < 0)
                    continue;
                for (int64_t k1 = 0; k1 < g.fs[1]; k1++) {
                    const int64_t o1 = out_of(p[1], k1, g.pb[1], g.dl[1], g.st[1], g.out[1]);
                    if (o1 < 0)
                        continue;
                    const T *yr = yb + o1 * g.ys[1] + o2 * g.ys[2];
                    const T *wr = wb + k1 * g.ws[1] + k2 * g.ws[2];
                    for (int64_t k0 = 0; k0 < g.fs[0]; k0++) {
                        const int64_t o0 = out_of(p[0], k0, g.pb[0], g.dl[0], g.st[0], g.out[0]);
                        if (o0 < 0)
                            continue;
                        acc += yr[o0 * g.ys[0]] * wr[k0 * g.ws[0]];
                    }
                }
            }
        }
        x[p[0] * g.xs[0] + p[1] * g.xs[1] + p[2] * g.xs[2] + c * g.xc + b * g.xb] = acc;
    }
}

template <typename T>
__global__ void __launch_bounds__(DLA__CU_CONV_RED_THREADS)
    conv_bwd_filter(dla__cu_conv_geom g, T *__restrict__ w, const T *__restrict__ x,
                    const T *__restrict__ y)
{
    __shared__ T part[DLA__CU_CONV_RED_THREADS];
    const int64_t nw = g.ntaps * g.Cg * g.Fg * g.G;
    const int64_t terms = g.out_px * g.batch;
    for (int64_t e = blockIdx.x; e < nw; e += gridDim.x) {
        /* Weight element e: taps k, channel cl, filter fl, group grp. */
        int64_t k[3], r = e;
        k[0] = r % g.fs[0], r /= g.fs[0];
        k[1] = r % g.fs[1], r /= g.fs[1];
        k[2] = r % g.fs[2], r /= g.fs[2];
        const int64_t cl = r % g.Cg;
        r /= g.Cg;
        const int64_t fl = r % g.Fg, grp = r / g.Fg;
        const T *xc = x + (grp * g.Cg + cl) * g.xc;
        const T *yf = y + (grp * g.Fg + fl) * g.yf;
        T acc = 0;
        for (int64_t j = threadIdx.x; j < terms; j += blockDim.x) {
            int64_t o[3], b, q = j;
            o[0] = q % g.out[0], q /= g.out[0];
            o[1] = q % g.out[1], q /= g.out[1];
            o[2] = q % g.out[2], b = q / g.out[2];
            int64_t xo = b * g.xb, ok = 1;
#pragma unroll
            for (int d = 0; d < 3; d++) {
                const int64_t id = o[d] * g.st[d] - g.pb[d] + k[d] * g.dl[d];
                ok &= id >= 0 && id < g.in[d];
                xo += id * g.xs[d];
            }
            if (ok)
                acc += xc[xo] * yf[o[0] * g.ys[0] + o[1] * g.ys[1] + o[2] * g.ys[2] + b * g.yb];
        }
        part[threadIdx.x] = acc;
        __syncthreads();
        for (int half = DLA__CU_CONV_RED_THREADS / 2; half > 0; half /= 2) {
            if ((int)threadIdx.x < half)
                part[threadIdx.x] += part[threadIdx.x + half];
            __syncthreads();
        }
        if (threadIdx.x == 0)
            w[k[0] * g.ws[0] + k[1] * g.ws[1] + k[2] * g.ws[2] + cl * g.wc + fl * g.wf +
              grp * g.wg] = part[0];
        __syncthreads(); /* part is reused by the next element */
    }
}

template <typename T>
__global__ void conv_bias(dla__cu_conv_geom g, T *__restrict__ y, const T *__restrict__ bias)
{
    const int64_t n = g.out_px * g.F * g.batch;
    DLA__CU_FOR(i, n)
    {
        int64_t o[3], f, b;
        split(i, g.out, g.F, o, &f, &b);
        y[o[0] * g.ys[0] + o[1] * g.ys[1] + o[2] * g.ys[2] + f * g.yf + b * g.yb] += bias[f * g.bs];
    }
}

template <typename T>
__global__ void gemm_scale(T *__restrict__ c, int64_t m, int64_t n, int64_t ldc, T beta)
{
    DLA__CU_FOR(i, m * n)
    {
        const int64_t col = i / m, row = i - col * m;
        T *p = c + row + col * ldc;
        *p = beta == (T)0 ? (T)0 : beta * *p;
    }
}

} // namespace

extern "C" {

void dla__cu_conv_fwd_launch(cudaStream_t s, unsigned blocks, int f64, dla__cu_conv_geom g,
                             void *y, const void *x, const void *w, const void *bias)
{
    if (f64)
        conv_fwd<double><<<blocks, DLA__CU_THREADS, 0, s>>>(
            g, (double *)y, (const double *)x, (const double *)w, (const double *)bias);
    else
        conv_fwd<float><<<blocks, DLA__CU_THREADS, 0, s>>>(g, (float *)y, (const float *)x,
                                                            (const float *)w, (const float *)bias);
}

void dla__cu_conv_bwd_data_launch(cudaStream_t s, unsigned blocks, int f64, dla__cu_conv_geom g,
                                  void *x, const void *y, const void *w)
{
    if (f64)
        conv_bwd_data<double><<<blocks, DLA__CU_THREADS, 0, s>>>(
            g, (double *)x, (const double *)y, (const double *)w);
    else
        conv_bwd_data<float><<<blocks, DLA__CU_THREADS, 0, s>>>(g, (float *)x, (const float *)y,
                                                                 (const float *)w);
}

void dla__cu_conv_bwd_filter_launch(cudaStream_t s, unsigned blocks, int f64,
                                    dla__cu_conv_geom g, void *w, const void *x, const void *y)
{
    if (f64)
        conv_bwd_filter<double><<<blocks, DLA__CU_CONV_RED_THREADS, 0, s>>>(
            g, (double *)w, (const double *)x, (const double *)y);
    else
        conv_bwd_filter<float><<<blocks, DLA__CU_CONV_RED_THREADS, 0, s>>>(
            g, (float *)w, (const float *)x, (const float *)y);
}

void dla__cu_conv_bias_launch(cudaStream_t s, unsigned blocks, int f64, dla__cu_conv_geom g,
                              void *y, const void *bias)
{
    if (f64)
        conv_bias<double><<<blocks, DLA__CU_THREADS, 0, s>>>(g, (double *)y,
                                                             (const double *)bias);
    else
        conv_bias<float><<<blocks, DLA__CU_THREADS, 0, s>>>(g, (float *)y, (const float *)bias);
}

void dla__cu_gemm_scale_launch(cudaStream_t s, unsigned blocks, int f64, void *c, int64_t m,
                               int64_t n, int64_t ldc, double beta)
{
    if (f64)
        gemm_scale<double><<<blocks, DLA__CU_THREADS, 0, s>>>((double *)c, m, n, ldc, beta);
    else
        gemm_scale<float><<<blocks, DLA__CU_THREADS, 0, s>>>((float *)c, m, n, ldc, (float)beta);
}

} // extern "C"
