/*
 * conv.c - the cpu plugin's convolution kernels: conv_forward,
 * conv_backward_data and conv_backward_filter of the ABI (dla_conv_args:
 * MATLAB layouts, 1-3 spatial dims, stride, dilation, padding, groups).
 *
 * Here the arguments are checked and reduced to a dla__cpu_conv; then one
 * of two algorithms runs (docs/convolution.md has the measurements behind
 * the choice):
 * - direct AVX-512 kernels (conv_avx512.c) for float32 with every stride 1,
 *   on a CPU that has AVX-512F: on the small channel counts of image
 *   models they run 2-5x faster than the GEMMs of im2col. Their forward
 *   and backward data hand 3x3 layers with 8+ channels to Winograd
 *   F(2x2, 3x3) (conv_winograd.c), 14% faster again;
 * - im2col + OpenBLAS GEMM (conv_im2col.h) for everything else: double,
 *   strided convolutions, CPUs without AVX-512 (and valgrind).
 * DLACCEL_CPU_CONV=im2col forces the second, DLACCEL_CPU_CONV=direct keeps
 * the first without Winograd, for comparisons and tests.
 *
 * Padding may be asymmetric and even negative (cropping): an input index
 * outside x reads as zero, and out_size is taken as given.
 */
#define _GNU_SOURCE /* secure_getenv */
#include "core/env_choice.h"
#include "plugins/cpu/conv_impl.h"
#include "plugins/cpu/strided.h"

#include <cblas.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* Threads whose buffers one call keeps (the team is never larger here). */
#define DLA__CONV_MAX_THREADS 256

#define CT float
#define CSFX f32
#define CGEMM cblas_sgemm
#include "plugins/cpu/conv_im2col.h"
#undef CT
#undef CSFX
#undef CGEMM

#define CT double
#define CSFX f64
#define CGEMM cblas_dgemm
#include "plugins/cpu/conv_im2col.h"
#undef CT
#undef CSFX
#undef CGEMM

dla_status dla__cpu_conv_im2col(const dla__cpu_conv *p, dla__cpu_conv_dir dir)
{
    return p->dtype == DLA_F64 ? im2col_run_f64(p, dir) : im2col_run_f32(p, dir);
}

static const char *const kernel_names[] = {"conv_forward", "conv_backward_data",
                                           "conv_backward_filter"};

/* Size of dim i of v, 1 past its ndims. */
static int64_t dim_of(const dla_view *v, int i)
{
    return i < v->ndims ? v->dims[i] : 1;
}
static int64_t stride_of(const dla_view *v, int i)
{
    return i < v->ndims ? v->strides[i] : 0;
}

/* v must have dims want[0..n-1] (dims past its ndims count as 1, dims past
 * n must be 1). */
static dla_status check_dims(const char *k, const char *arg, const dla_view *v, int n,
                             const int64_t *want, const char *meaning)
{
    int ok = 1;
    for (int i = 0; i < n; i++)
        ok &= dim_of(v, i) == want[i];
    for (int i = n; i < v->ndims; i++)
        ok &= v->dims[i] == 1;
    if (ok)
        return DLA_OK;
    char got[DLA__CPU_DIMS_BUF], exp[DLA__CPU_DIMS_BUF];
    return dla__cpu_host->error(DLA_ERR_SHAPE, "cpu %s: argument %s: dims %s, expected %s (%s)", k,
                                arg, dla__cpu_dims_str(got, sizeof got, v->ndims, v->dims),
                                dla__cpu_dims_str(exp, sizeof exp, n, want), meaning);
}

static dla_status check_view(const char *k, const char *arg, const dla_view *v, dla_dtype dtype)
{
    dla_status s = dla__cpu_check_view(k, arg, v);
    if (s != DLA_OK)
        return s;
    if (v->dtype != dtype)
        return dla__cpu_host->error(DLA_ERR_DTYPE, "cpu %s: argument %s: %s, the call's dtype is %s",
                                    k, arg, dla__cpu_dtype_name(v->dtype),
                                    dla__cpu_dtype_name(dtype));
    return DLA_OK;
}

/* Checks a and fills p. */
static dla_status prepare(const dla_conv_args *a, dla__cpu_conv_dir dir, dla__cpu_conv *p)
{
    const dla_plugin_host *h = dla__cpu_host;
    const char *k = kernel_names[dir];
    if (a->struct_size < sizeof(dla_conv_args))
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "cpu %s: args struct_size %zu is smaller than ABI 1.1's %zu", k,
                        a->struct_size, sizeof(dla_conv_args));
    if (a->dtype != DLA_F32 && a->dtype != DLA_F64)
        return h->error(DLA_ERR_DTYPE, "cpu %s: argument dtype: %s is not single or double", k,
                        dla__cpu_dtype_name(a->dtype));
    if (a->nspatial < 1 || a->nspatial > 3)
        return h->error(DLA_ERR_INVALID_ARGUMENT, "cpu %s: argument nspatial: %d outside 1..3", k,
                        (int)a->nspatial);
    const int64_t big = INT32_MAX;
    if (a->batch < 0 || a->batch > big || a->in_channels < 1 || a->in_channels > big ||
        a->out_channels < 1 || a->out_channels > big || a->groups < 1 ||
        a->in_channels % a->groups || a->out_channels % a->groups)
        return h->error(DLA_ERR_INVALID_ARGUMENT,
                        "cpu %s: arguments batch=%lld in_channels=%lld out_channels=%lld "
                        "groups=%lld: channels must be positive multiples of groups",
                        k, (long long)a->batch, (long long)a->in_channels,
                        (long long)a->out_channels, (long long)a->groups);
    memset(p, 0, sizeof *p);
    p->dtype = a->dtype;
    p->nsp = a->nspatial;
    p->batch = a->batch;
    p->C = a->in_channels, p->F = a->out_channels, p->G = a->groups;
    p->Cg = p->C / p->G, p->Fg = p->F / p->G;
    for (int i = 0; i < 3; i++) {
        if (i >= p->nsp) {
            p->in[i] = p->out[i] = p->fs[i] = p->st[i] = p->dl[i] = 1;
            continue;
        }
        if (a->in_size[i] < 0 || a->in_size[i] > big || a->out_size[i] < 0 ||
            a->out_size[i] > big || a->filter_size[i] < 1 || a->filter_size[i] > big ||
            a->stride[i] < 1 || a->stride[i] > big || a->dilation[i] < 1 ||
            a->dilation[i] > big || a->pad_begin[i] < -big || a->pad_begin[i] > big)
            return h->error(DLA_ERR_INVALID_ARGUMENT,
                            "cpu %s: spatial dim %d: in_size %lld, out_size %lld, filter_size "
                            "%lld, stride %lld, dilation %lld, pad_begin %lld: sizes must be >= 0, "
                            "filter, stride and dilation >= 1",
                            k, i + 1, (long long)a->in_size[i], (long long)a->out_size[i],
                            (long long)a->filter_size[i], (long long)a->stride[i],
                            (long long)a->dilation[i], (long long)a->pad_begin[i]);
        p->in[i] = a->in_size[i], p->out[i] = a->out_size[i], p->fs[i] = a->filter_size[i];
        p->st[i] = a->stride[i], p->dl[i] = a->dilation[i], p->pb[i] = a->pad_begin[i];
    }
    p->ntaps = p->fs[0] * p->fs[1] * p->fs[2];
    p->in_px = p->in[0] * p->in[1] * p->in[2];
    p->out_px = p->out[0] * p->out[1] * p->out[2];

    dla_status s;
    const int n = p->nsp;
    int64_t want[6];
    if ((s = check_view(k, "x", &a->x, a->dtype)) != DLA_OK ||
        (s = check_view(k, "w", &a->w, a->dtype)) != DLA_OK ||
        (s = check_view(k, "y", &a->y, a->dtype)) != DLA_OK)
        return s;
    for (int i = 0; i < n; i++)
        want[i] = p->in[i];
    want[n] = p->C, want[n + 1] = p->batch;
    if ((s = check_dims(k, "x", &a->x, n + 2, want, "in_size x C x batch")) != DLA_OK)
        return s;
    for (int i = 0; i < n; i++)
        want[i] = p->fs[i];
    want[n] = p->Cg, want[n + 1] = p->Fg, want[n + 2] = p->G;
    if ((s = check_dims(k, "w", &a->w, n + 3, want, "filter_size x C/G x F/G x G")) != DLA_OK)
        return s;
    for (int i = 0; i < n; i++)
        want[i] = p->out[i];
    want[n] = p->F, want[n + 1] = p->batch;
    if ((s = check_dims(k, "y", &a->y, n + 2, want, "out_size x F x batch")) != DLA_OK)
        return s;

    p->x = (char *)a->x.mem + a->x.offset * (int64_t)dla__cpu_dtype_size(a->dtype);
    p->w = (char *)a->w.mem + a->w.offset * (int64_t)dla__cpu_dtype_size(a->dtype);
    p->y = (char *)a->y.mem + a->y.offset * (int64_t)dla__cpu_dtype_size(a->dtype);
    for (int i = 0; i < 3; i++) {
        p->xs[i] = i < n ? stride_of(&a->x, i) : 0;
        p->ws[i] = i < n ? stride_of(&a->w, i) : 0;
        p->ys[i] = i < n ? stride_of(&a->y, i) : 0;
    }
    p->xc = stride_of(&a->x, n), p->xb = stride_of(&a->x, n + 1);
    p->wc = stride_of(&a->w, n), p->wf = stride_of(&a->w, n + 1), p->wg = stride_of(&a->w, n + 2);
    p->yf = stride_of(&a->y, n), p->yb = stride_of(&a->y, n + 1);

    if (dir == DLA__CONV_FORWARD && a->bias.mem != NULL) {
        if ((s = check_view(k, "bias", &a->bias, a->dtype)) != DLA_OK)
            return s;
        /* A vector of F elements along any one dim. */
        int along = -1, others = 0;
        for (int i = 0; i < a->bias.ndims; i++)
            if (a->bias.dims[i] != 1) {
                others += along >= 0;
                along = i;
            }
        if (dla__cpu_numel(&a->bias) != p->F || others) {
            char got[DLA__CPU_DIMS_BUF];
            return h->error(DLA_ERR_SHAPE,
                            "cpu %s: argument bias: dims %s, expected a vector of %lld elements", k,
                            dla__cpu_dims_str(got, sizeof got, a->bias.ndims, a->bias.dims),
                            (long long)p->F);
        }
        p->bias = (const char *)a->bias.mem +
                  a->bias.offset * (int64_t)dla__cpu_dtype_size(a->dtype);
        p->bs = along >= 0 ? a->bias.strides[along] : 0;
    }
    return DLA_OK;
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

int dla__cpu_conv_direct_usable(void)
{
    if (dla__cpu_conv_env() == DLA__CONV_IM2COL)
        return 0;
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f");
#else
    return 0;
#endif
}

static dla_status run(const dla_conv_args *a, dla__cpu_conv_dir dir)
{
    dla__cpu_conv p;
    dla_status s = prepare(a, dir, &p);
    if (s != DLA_OK)
        return s;
    if (dla__cpu_conv_direct_usable()) {
        s = dla__cpu_conv_direct(&p, dir);
        if (s != DLA_ERR_UNSUPPORTED)
            return s;
    }
    return dla__cpu_conv_im2col(&p, dir);
}

dla_status dla__cpu_conv_forward(void *dev, const dla_conv_args *args)
{
    (void)dev;
    return run(args, DLA__CONV_FORWARD);
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
