/*
 * conv.c - the cpu plugin's convolution kernels: conv_forward,
 * conv_backward_data and conv_backward_filter of the ABI (dla_conv_args:
 * MATLAB layouts, 1-3 spatial dims, stride, dilation, padding, groups).
 *
 * Here the arguments are checked and reduced to a dla__cpu_conv; then one
 * of two algorithms runs (docs/convolution.md has the measurements behind
 * the choice):
 * - direct kernels (conv_direct_body.h) with every stride 1 (and, with
 *   AVX-512, the forward pass of strided ones, on phase planes): for float32
 *   AVX-512 (conv_avx512.c) on a CPU that has AVX-512F, else AVX2
 *   (conv_avx2.c) on one with AVX2 and FMA; for float64 AVX2
 *   (conv_avx2_f64.c) on any CPU with AVX2 and FMA. On the small channel
 *   counts of image models they run 2-5x faster than the GEMMs of im2col
 *   (in double, a depthwise 3x3 layer 2.5-5.5x; docs/performance.md). The
 *   float AVX-512 forward, backward data and backward filter hand 3x3
 *   layers with 8+ channels to Winograd F(2x2, 3x3) (conv_winograd.c);
 * - depthwise kernels (conv_depthwise.c) for strided depthwise layers
 *   (one channel and one filter a group: a MobileNet's);
 * - the backward passes of strided convolutions with dilation 1 as one
 *   stride-1 call of the float AVX-512 direct kernels per phase
 *   (conv_phases.c);
 * - im2col + OpenBLAS GEMM (conv_im2col.h) for everything else: strided
 *   convolutions with dilation, and any strided ones without AVX-512
 *   (double included), CPUs with neither (and valgrind).
 * DLACCEL_CPU_CONV=im2col forces im2col, DLACCEL_CPU_CONV=direct keeps
 * the direct kernels without Winograd, and DLACCEL_CPU_CONV_PHASES=off
 * keeps im2col for strided backward passes, for comparisons and tests.
 *
 * Padding may be asymmetric and even negative (cropping): an input index
 * outside x reads as zero, and out_size is taken as given.
 */
#define _GNU_SOURCE /* secure_getenv */
#include "core/env_choice.h"
#include "plugins/cpu/conv_impl.h"
#include "plugins/cpu/strided.h"

#include <cblas.h>
#include <limits.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* Threads whose buffers one call keeps (the team is never larger here). */
#define DLA__CONV_MAX_THREADS 256

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* dst[o] = src[2 o] for o < n with AVX-512: whole vectors loaded and the
 * even lanes picked. The rows of stride-2 layers (ResNet-20's downsampling
 * convolutions) are im2col's one strided copy that matters, and GCC keeps
 * the loop scalar (the general one for its variable step, this one too
 * when the stride is a constant); im2col took 7% of ResNet-20's
 * inference. Such rows are short (15 or 16 outputs there), so the last
 * vector is loaded with masks: it reads up to src[2n - 2], the last
 * element needed, and no further. */
__attribute__((target("avx512f"))) static void every_other_avx512(float *dst, const float *src,
                                                                   int64_t n)
{
    const __m512i even =
        _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    int64_t o = 0;
    for (; o + 16 < n; o += 16)
        _mm512_storeu_ps(dst + o, _mm512_permutex2var_ps(_mm512_loadu_ps(src + 2 * o), even,
                                                         _mm512_loadu_ps(src + 2 * o + 16)));
    /* The last 1 to 16 outputs: 2m - 1 source elements. */
    const int64_t m = n - o, need = 2 * m - 1;
    if (m <= 0)
        return;
    const __mmask16 lo = (__mmask16)(need >= 16 ? 0xFFFF : (1u << need) - 1);
    const __mmask16 hi = (__mmask16)(need > 16 ? (1u << (need - 16)) - 1 : 0);
    const __m512 x = _mm512_permutex2var_ps(_mm512_maskz_loadu_ps(lo, src + 2 * o), even,
                                            _mm512_maskz_loadu_ps(hi, src + 2 * o + 16));
    if (m == 16)
        _mm512_storeu_ps(dst + o, x);
    else
        _mm512_mask_storeu_ps(dst + o, (__mmask16)((1u << m) - 1), x);
}

void dla__cpu_every_other_f32(float *dst, const float *src, int64_t n)
{
    if (__builtin_cpu_supports("avx512f")) { /* a flag libgcc has set up by now */
        every_other_avx512(dst, src, n);
        return;
    }
    for (int64_t o = 0; o < n; o++)
        dst[o] = src[2 * o];
}
#define CONV_EVERY_OTHER dla__cpu_every_other_f32
#else
void dla__cpu_every_other_f32(float *dst, const float *src, int64_t n)
{
    for (int64_t o = 0; o < n; o++)
        dst[o] = src[2 * o];
}
#endif

#define CT float
#define CSFX f32
#define CGEMM dla__cpu_gemm_tiled_f32
#include "plugins/cpu/conv_im2col.h"
#undef CT
#undef CSFX
#undef CGEMM
#undef CONV_EVERY_OTHER

#define CT double
#define CSFX f64
#define CGEMM dla__cpu_gemm_tiled_f64
#include "plugins/cpu/conv_im2col.h"
#undef CT
#undef CSFX
#undef CGEMM

dla_status dla__cpu_conv_im2col(const dla__cpu_conv *p, dla__cpu_conv_dir dir)
{
    /* The unfolded input has K = C/G x taps rows, and K goes to OpenBLAS
     * as a dimension and a leading dimension, which are int: each size is
     * within int32 (the kit checks), their product need not be (2^30 + 1
     * channels of a 2-tap filter), and a K cast to int came out negative
     * (OpenBLAS refused the call and left Y unwritten) or, past 2^32,
     * small (a product over the wrong rows). Refused before the weights'
     * copy of K x F elements is allocated. */
    const int64_t K = p->g.Cg * p->g.ntaps;
    if (K > INT_MAX)
        return dla__cpu_host->error(
            DLA_ERR_UNSUPPORTED,
            "cpu %s: %lld channels per group x %lld filter taps = %lld rows of the unfolded "
            "input, more than the %d a GEMM dimension of OpenBLAS holds",
            dla_kit_conv_name(dir), (long long)p->g.Cg, (long long)p->g.ntaps, (long long)K,
            INT_MAX);
    return p->dtype == DLA_F64 ? im2col_run_f64(p, dir) : im2col_run_f32(p, dir);
}

/* p's pointers from a, once the kit has checked a into p->g. */
static void point(const dla_conv_args *a, dla__cpu_conv *p)
{
    const int64_t size = (int64_t)dla_kit_dtype_size(a->dtype);
    p->dtype = a->dtype;
    p->x = (char *)a->x.mem + p->g.xoff * size;
    p->w = (char *)a->w.mem + p->g.woff * size;
    p->y = (char *)a->y.mem + p->g.yoff * size;
    if (p->g.has_bias)
        p->bias = (const char *)a->bias.mem + p->g.boff * size;
}

void *dla__cpu_conv_scratch(size_t bytes, dla_mem *mem)
{
    const size_t least = (size_t)1 << 20; /* the cache's smallest block */
    if (dla__cpu_mem_alloc(NULL, bytes < least ? least : bytes, mem) != DLA_OK)
        return NULL;
    return (void *)*mem;
}

void dla__cpu_conv_scratch_free(dla_mem mem)
{
    dla__cpu_mem_free(NULL, mem);
}

int dla__cpu_conv_env(void)
{
    static const char *const values[] = {"im2col", "direct", NULL};
    static atomic_int warned;
    return dla__env_choice("DLACCEL_CPU_CONV", values, &warned, dla__cpu_host->log);
}

dla__cpu_conv_direct_fn dla__cpu_conv_direct_usable(dla_dtype dtype)
{
    if (dla__cpu_conv_env() == DLA__CONV_IM2COL)
        return NULL;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    const int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (dtype == DLA_F64)
        return avx2 ? dla__cpu_conv_direct_avx2_f64 : NULL;
    if (__builtin_cpu_supports("avx512f"))
        return dla__cpu_conv_direct_avx512;
    if (avx2)
        return dla__cpu_conv_direct_avx2;
#endif
    (void)dtype;
    return NULL;
}

/* Whether the direct kernels pay for this call, by measurement
 * (docs/convolution.md): with AVX2 the backward filter of 1x1 filters is
 * a plain GEMM whose register blocks load more than they multiply (one
 * tap: 1 + 4 loads per 4 FMAs), and ran at 0.24-0.74x of im2col's speed
 * (56x56, 64 -> 64 channels); in double at 0.6x (the same at batch 8:
 * 23.5 ms against 14.0). DLACCEL_CPU_CONV=direct takes them anyway. */
static int direct_pays(const dla__cpu_conv *p, dla__cpu_conv_dir dir,
                       dla__cpu_conv_direct_fn direct)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if ((direct == dla__cpu_conv_direct_avx2 || direct == dla__cpu_conv_direct_avx2_f64) &&
        dir == DLA__CONV_BACKWARD_FILTER && p->g.ntaps == 1)
        return dla__cpu_conv_env() == DLA__CONV_DIRECT;
#endif
    (void)p, (void)dir, (void)direct;
    return 1;
}

/* Whether strided backward passes go to dla__cpu_conv_phases with these
 * direct kernels: the float AVX-512 ones, which took 0.3-0.6x im2col's
 * time for backward data and 0.5-0.96x for backward filter on ResNet-20's
 * downsampling layers (docs/performance.md). The double AVX2 kernels took
 * as long as im2col for backward data and up to 2x for backward filter
 * (dlaccel-bench conv9_*_f64, conv11_*_f64), and the float AVX2 ones were
 * not measured: both keep im2col, as for the strided forward. */
static int phases_pay(dla__cpu_conv_direct_fn direct)
{
#if defined(__x86_64__) && defined(__GNUC__)
    return direct == dla__cpu_conv_direct_avx512;
#else
    (void)direct;
    return 0;
#endif
}

/* The checked convolution p in direction dir, by the first path that
 * takes it. A path declines (DLA_ERR_UNSUPPORTED) before it writes its
 * result, so an epilogue runs once, on the path that wrote the images. */
static dla_status run_checked(const dla__cpu_conv *p, dla__cpu_conv_dir dir)
{
    if (dla__cpu_conv_depthwise_takes(p))
        return dla__cpu_conv_depthwise(p, dir);
    const dla__cpu_conv_direct_fn direct = dla__cpu_conv_direct_usable(p->dtype);
    if (direct && direct_pays(p, dir, direct)) {
        dla_status s = direct(p, dir);
        if (s != DLA_ERR_UNSUPPORTED)
            return s;
        if (phases_pay(direct)) {
            s = dla__cpu_conv_phases(p, dir, direct);
            if (s != DLA_ERR_UNSUPPORTED)
                return s;
        }
    }
    return dla__cpu_conv_im2col(p, dir);
}

static dla_status run(const dla_conv_args *a, dla__cpu_conv_dir dir)
{
    dla__cpu_conv p;
    memset(&p, 0, sizeof p);
    const dla_status s = dla_kit_conv_prepare(&dla__cpu_kit, a, dir, &p.g);
    if (s != DLA_OK)
        return s;
    point(a, &p);
    return run_checked(&p, dir);
}

dla_status dla__cpu_conv_forward(void *dev, const dla_conv_args *args)
{
    (void)dev;
    return run(args, DLA__CONV_FORWARD);
}

/* A pass with its epilogue (ABI 1.9): every path calls
 * dla__cpu_conv_epilogue on the images of its result it has just written,
 * from the thread that wrote them, so the program reads them from that
 * core's cache rather than in a pass of its own over memory. */
static dla_status run_fused(const dla_conv_fused_args *args, dla__cpu_conv_dir dir)
{
    dla__cpu_conv p;
    memset(&p, 0, sizeof p);
    const dla_status s = dla_kit_conv_fused_prepare(&dla__cpu_kit, args, dir, &p.g);
    if (s != DLA_OK)
        return s;
    point(&args->conv, &p);
    p.epi = &args->epilogue;
    return run_checked(&p, dir);
}

dla_status dla__cpu_conv_forward_fused(void *dev, const dla_conv_fused_args *args)
{
    (void)dev;
    return run_fused(args, DLA__CONV_FORWARD);
}

dla_status dla__cpu_conv_backward_data_fused(void *dev, const dla_conv_fused_args *args)
{
    (void)dev;
    return run_fused(args, DLA__CONV_BACKWARD_DATA);
}

dla_status dla__cpu_conv_backward_data(void *dev, const dla_conv_args *args)
{
    (void)dev;
    return run(args, DLA__CONV_BACKWARD_DATA);
}

dla_status dla__cpu_conv_backward_filter(void *dev, const dla_conv_args *args)
{
    (void)dev;
    return run(args, DLA__CONV_BACKWARD_FILTER);
}
