/*
 * workloads_conv.c - the convolutions of the digit CNN at batch 128, one
 * kernel call each: forward, backward data and backward filter of
 *   conv1: 28x28x1 -> 24x24x20, 5x5 filters, no padding
 *   conv2: 24x24x20 -> 24x24x20, 3x3 filters, padding 1 (conv3 is the same)
 * in single precision.
 *
 * These time the plugin's kernels themselves (dla_conv_args through the
 * device's table, as the core calls them), because backward filter has no
 * public function of its own: dla_conv's gradient reaches it only through
 * dla_gradient. Each is held against the cpu plugin's im2col + OpenBLAS
 * path on the same shapes (DLACCEL_CPU_CONV=im2col for the reference's
 * calls), the algorithm the direct AVX-512 kernels were chosen over
 * (docs/convolution.md).
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include "bench/workload.h"

#include <dlaccel/device_table.h>

#include <stdlib.h>
#include <string.h>

#define BATCH 128

typedef struct conv_bench {
    dla_device *dev;
    dla_kernel which;
    int im2col;
    dla_conv_args a;
    dla_mem mem[4];
} conv_bench;

static void conv_teardown(void *state)
{
    conv_bench *s = state;
    if (!s)
        return;
    for (int i = 0; i < 4; i++)
        if (s->mem[i])
            dla_device_table(s->dev)->mem_free(dla_device_context(s->dev), s->mem[i]);
    free(s);
}

/* A dense float view of dims on mem. */
static void dense(dla_view *v, dla_mem mem, int nd, const int64_t *dims)
{
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    v->mem = mem;
    v->dtype = DLA_F32;
    v->ndims = nd;
    int64_t s = 1;
    for (int i = 0; i < nd; i++) {
        v->dims[i] = dims[i];
        v->strides[i] = s;
        s *= dims[i];
    }
}

/* w->size encodes the case: layer (1 or 2) * 10 + direction (0..2). */
static dla_status conv_setup_on(const bench_workload *w, void **state, dla_device *dev, int im2col)
{
    conv_bench *s = calloc(1, sizeof *s);
    if (!s)
        return DLA_ERR_OUT_OF_MEMORY;
    *state = s;
    s->dev = dev;
    s->im2col = im2col;
    if (!dev)
        return DLA_ERR_NO_DEVICE;
    static const dla_kernel kernels[3] = {DLA_KERNEL_CONV_FORWARD, DLA_KERNEL_CONV_BACKWARD_DATA,
                                          DLA_KERNEL_CONV_BACKWARD_FILTER};
    const int layer = (int)(w->size / 10), dir = (int)(w->size % 10);
    s->which = kernels[dir];
    const dla_plugin *t = dla_device_table(dev);
    void *ctx = dla_device_context(dev);
    dla_status (*fn)(void *, const dla_conv_args *) =
        dir == 0 ? t->conv_forward : dir == 1 ? t->conv_backward_data : t->conv_backward_filter;
    if (!fn)
        return DLA_ERR_UNSUPPORTED;
    const int64_t in = layer == 1 ? 28 : 24, C = layer == 1 ? 1 : 20, F = 20,
                  fs = layer == 1 ? 5 : 3, pad = layer == 1 ? 0 : 1;
    const int64_t out = in + 2 * pad - fs + 1;
    const int64_t xd[4] = {in, in, C, BATCH}, wd[5] = {fs, fs, C, F, 1},
                  yd[4] = {out, out, F, BATCH}, bd[1] = {F};
    const int64_t n[4] = {in * in * C * BATCH, fs * fs * C * F, out * out * F * BATCH, F};
    for (int i = 0; i < 4; i++) {
        float *h = malloc((size_t)n[i] * sizeof(float));
        if (!h)
            return DLA_ERR_OUT_OF_MEMORY;
        uint32_t r = 2463534242u + (uint32_t)i;
        for (int64_t j = 0; j < n[i]; j++) {
            r ^= r << 13, r ^= r >> 17, r ^= r << 5;
            h[j] = (float)(r >> 8) * (1.0f / 16777216.0f) - 0.5f;
        }
        dla_status st = t->mem_alloc(ctx, (size_t)n[i] * sizeof(float), &s->mem[i]);
        if (st == DLA_OK)
            st = t->copy_to_device(ctx, s->mem[i], 0, h, (size_t)n[i] * sizeof(float));
        free(h);
        if (st != DLA_OK)
            return st;
    }
    dla_conv_args *a = &s->a;
    a->struct_size = sizeof *a;
    a->dtype = DLA_F32;
    a->nspatial = 2;
    a->batch = BATCH, a->in_channels = C, a->out_channels = F, a->groups = 1;
    for (int i = 0; i < 2; i++) {
        a->in_size[i] = in, a->out_size[i] = out, a->filter_size[i] = fs;
        a->stride[i] = 1, a->dilation[i] = 1, a->pad_begin[i] = pad;
    }
    dense(&a->x, s->mem[0], 4, xd);
    dense(&a->w, s->mem[1], 5, wd);
    dense(&a->y, s->mem[2], 4, yd);
    if (dir == 0)
        dense(&a->bias, s->mem[3], 1, bd);
    else
        a->bias.struct_size = sizeof a->bias;
    return DLA_OK;
}

static dla_status conv_setup(const bench_workload *w, void **state)
{
    return conv_setup_on(w, state, dla_device_current(), 0);
}

static dla_status im2col_setup(const bench_workload *w, void **state)
{
    return conv_setup_on(w, state, dla_device_get("cpu"), 1);
}

static dla_status conv_run(void *state)
{
    conv_bench *s = state;
    const dla_plugin *t = dla_device_table(s->dev);
    void *ctx = dla_device_context(s->dev);
    /* The user's own choice (DLACCEL_CPU_CONV=direct, say) comes back
     * after the reference's call. */
    char *user = NULL;
    if (s->im2col) {
        const char *was = getenv("DLACCEL_CPU_CONV");
        user = was ? strdup(was) : NULL;
        setenv("DLACCEL_CPU_CONV", "im2col", 1);
    }
    dla_status st = s->which == DLA_KERNEL_CONV_FORWARD ? t->conv_forward(ctx, &s->a)
                    : s->which == DLA_KERNEL_CONV_BACKWARD_DATA
                        ? t->conv_backward_data(ctx, &s->a)
                        : t->conv_backward_filter(ctx, &s->a);
    if (s->im2col) {
        if (user)
            setenv("DLACCEL_CPU_CONV", user, 1);
        else
            unsetenv("DLACCEL_CPU_CONV");
        free(user);
    }
    if (st == DLA_OK && t->sync)
        st = t->sync(ctx);
    return st;
}

/* Multiply-adds x 2 of one call: every direction does the forward's. */
#define FLOPS(in, C, fs, pad) (2.0 * BATCH * 20 * (C) * (fs) * (fs) * ((in) + 2 * (pad) - (fs) + 1) * ((in) + 2 * (pad) - (fs) + 1))
#define CONV(layer, dir, dname, flops)                                                             \
    {.name = "conv" #layer "_" dname, .unit = BENCH_FLOPS, .work = (flops),                        \
     .size = (layer) * 10 + (dir), .setup = conv_setup, .run = conv_run,                           \
     .teardown = conv_teardown, .label = "conv" #layer " " dname,                                  \
     .reference = "im2col_conv" #layer "_" dname, .target = 0}
#define REF(layer, dir, dname, flops)                                                              \
    {.name = "im2col_conv" #layer "_" dname, .unit = BENCH_FLOPS, .work = (flops),                 \
     .size = (layer) * 10 + (dir), .setup = im2col_setup, .run = conv_run,                         \
     .teardown = conv_teardown, .label = "im2col+OpenBLAS"}

#define C1 FLOPS(28, 1, 5, 0)
#define C2 FLOPS(24, 20, 3, 1)

const bench_workload bench_conv_workloads[] = {
    CONV(1, 0, "fwd", C1), CONV(1, 1, "bwd_data", C1), CONV(1, 2, "bwd_filter", C1),
    CONV(2, 0, "fwd", C2), CONV(2, 1, "bwd_data", C2), CONV(2, 2, "bwd_filter", C2),
    {.name = NULL},
};

const bench_workload bench_conv_reference_workloads[] = {
    REF(1, 0, "fwd", C1), REF(1, 1, "bwd_data", C1), REF(1, 2, "bwd_filter", C1),
    REF(2, 0, "fwd", C2), REF(2, 1, "bwd_data", C2), REF(2, 2, "bwd_filter", C2),
    {.name = NULL},
};
