/*
 * workloads_conv.c - convolutions, one kernel call each: forward,
 * backward data and backward filter of
 *   conv1: 28x28x1 -> 24x24x20, 5x5 filters, no padding   } the digit CNN,
 *   conv2: 24x24x20 -> 24x24x20, 3x3 filters, padding 1   } batch 128
 *          (its conv3 is the same)
 *   conv3: 256x256x64 -> 256x256x64 depthwise (64 groups of one channel),
 *          3x3 filters, padding 1, batch 10: the MATLAB Answers slicing
 *          layer's convolution at the page's size (workloads_slice.c)
 *   conv4: 32x32x16 -> 32x32x16, 3x3 filters, padding 1   } ResNet-20's
 *   conv5: 16x16x32 -> 16x16x32, the same                 } three stages'
 *   conv6: 8x8x64 -> 8x8x64, the same                     } convolutions,
 *                                                           batch 128
 *   conv7: 28x28x16 -> 14x14x16 depthwise, 3x3, stride 2,  } the stride-2
 *          padding "same" (0 before, 1 after)              } depthwise layers
 *   conv8: 14x14x32 -> 7x7x32, the same                    } of cnn_fmnist
 *                                                            --mobile, batch 128
 *   conv9:  32x32x16 -> 16x16x32, 3x3, stride 2, padding 1 } ResNet-20's
 *   conv10: 16x16x32 -> 8x8x64, the same                   } downsampling
 *   conv11: 32x32x16 -> 16x16x32, 1x1, stride 2            } convolutions and
 *   conv12: 16x16x32 -> 8x8x64, the same                   } their shortcuts,
 *                                                            batch 128
 * in single precision, and conv3 in double too (conv3_*_f64: that layer
 * runs in double in MATLAB; issue 19), and conv9 and conv11 (conv9_*_f64,
 * conv11_*_f64: the strided backward passes' phases in double).
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

/* The layers by number: input size (square), channels, filters, groups,
 * filter size (square), padding before and after, images, stride. */
typedef struct conv_layer {
    int64_t in, C, F, G, fs, pad, pad_after, batch, stride;
} conv_layer;
static const conv_layer layers[] = {
    {0},
    {28, 1, 20, 1, 5, 0, 0, 128, 1},
    {24, 20, 20, 1, 3, 1, 1, 128, 1},
    {256, 64, 64, 64, 3, 1, 1, 10, 1},
    {32, 16, 16, 1, 3, 1, 1, 128, 1},
    {16, 32, 32, 1, 3, 1, 1, 128, 1},
    {8, 64, 64, 1, 3, 1, 1, 128, 1},
    {28, 16, 16, 16, 3, 0, 1, 128, 2},
    {14, 32, 32, 32, 3, 0, 1, 128, 2},
    {32, 16, 32, 1, 3, 1, 1, 128, 2},
    {16, 32, 64, 1, 3, 1, 1, 128, 2},
    {32, 16, 32, 1, 1, 0, 0, 128, 2},
    {16, 32, 64, 1, 1, 0, 0, 128, 2},
};

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

/* A dense view of dims on mem. */
static void dense(dla_view *v, dla_mem mem, dla_dtype dt, int nd, const int64_t *dims)
{
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    v->mem = mem;
    v->dtype = dt;
    v->ndims = nd;
    int64_t s = 1;
    for (int i = 0; i < nd; i++) {
        v->dims[i] = dims[i];
        v->strides[i] = s;
        s *= dims[i];
    }
}

/* w->size encodes the case: layer (1..12) * 10 + direction (0..2), plus
 * 1000 for double. */
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
    const int layer = (int)(w->size % 1000 / 10), dir = (int)(w->size % 10);
    const dla_dtype dt = w->size >= 1000 ? DLA_F64 : DLA_F32;
    const size_t esize = dt == DLA_F64 ? sizeof(double) : sizeof(float);
    s->which = kernels[dir];
    const dla_plugin *t = dla_device_table(dev);
    void *ctx = dla_device_context(dev);
    dla_status (*fn)(void *, const dla_conv_args *) =
        dir == 0 ? t->conv_forward : dir == 1 ? t->conv_backward_data : t->conv_backward_filter;
    if (!fn)
        return DLA_ERR_UNSUPPORTED;
    const conv_layer *l = &layers[layer];
    const int64_t in = l->in, C = l->C, F = l->F, G = l->G, fs = l->fs, pad = l->pad,
                  B = l->batch;
    const int64_t out = (in + pad + l->pad_after - fs) / l->stride + 1;
    const int64_t xd[4] = {in, in, C, B}, wd[5] = {fs, fs, C / G, F / G, G},
                  yd[4] = {out, out, F, B}, bd[1] = {F};
    const int64_t n[4] = {in * in * C * B, fs * fs * (C / G) * F, out * out * F * B, F};
    for (int i = 0; i < 4; i++) {
        void *h = malloc((size_t)n[i] * esize);
        if (!h)
            return DLA_ERR_OUT_OF_MEMORY;
        uint32_t r = 2463534242u + (uint32_t)i;
        for (int64_t j = 0; j < n[i]; j++) {
            r ^= r << 13, r ^= r >> 17, r ^= r << 5;
            const float v = (float)(r >> 8) * (1.0f / 16777216.0f) - 0.5f;
            if (dt == DLA_F64)
                ((double *)h)[j] = v;
            else
                ((float *)h)[j] = v;
        }
        dla_status st = t->mem_alloc(ctx, (size_t)n[i] * esize, &s->mem[i]);
        if (st == DLA_OK)
            st = t->copy_to_device(ctx, s->mem[i], 0, h, (size_t)n[i] * esize);
        free(h);
        if (st != DLA_OK)
            return st;
    }
    dla_conv_args *a = &s->a;
    a->struct_size = sizeof *a;
    a->dtype = dt;
    a->nspatial = 2;
    a->batch = B, a->in_channels = C, a->out_channels = F, a->groups = G;
    for (int i = 0; i < 2; i++) {
        a->in_size[i] = in, a->out_size[i] = out, a->filter_size[i] = fs;
        a->stride[i] = l->stride, a->dilation[i] = 1, a->pad_begin[i] = pad;
    }
    dense(&a->x, s->mem[0], dt, 4, xd);
    dense(&a->w, s->mem[1], dt, 5, wd);
    dense(&a->y, s->mem[2], dt, 4, yd);
    if (dir == 0)
        dense(&a->bias, s->mem[3], dt, 1, bd);
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
#define FLOPS(batch, in, Cg, F, fs, pad)                                                           \
    (2.0 * (batch) * (F) * (Cg) * (fs) * (fs) * ((in) + 2 * (pad) - (fs) + 1) *                  \
     ((in) + 2 * (pad) - (fs) + 1))
/* sfx: "" or "_f64", with dt 0 or 1000 (the size's dtype part). */
#define CONV(layer, dir, dname, sfx, dt, flops)                                                    \
    {.name = "conv" #layer "_" dname sfx, .unit = BENCH_FLOPS, .work = (flops),                    \
     .size = (dt) + (layer) * 10 + (dir), .setup = conv_setup, .run = conv_run,                    \
     .teardown = conv_teardown, .label = "conv" #layer " " dname sfx,                              \
     .reference = "im2col_conv" #layer "_" dname sfx, .target = 0}
#define REF(layer, dir, dname, sfx, dt, flops)                                                     \
    {.name = "im2col_conv" #layer "_" dname sfx, .unit = BENCH_FLOPS, .work = (flops),             \
     .size = (dt) + (layer) * 10 + (dir), .setup = im2col_setup, .run = conv_run,                  \
     .teardown = conv_teardown, .label = "im2col+OpenBLAS"}
/* The three directions of a layer. */
#define DIRS(M, layer, sfx, dt, flops)                                                             \
    M(layer, 0, "fwd", sfx, dt, flops), M(layer, 1, "bwd_data", sfx, dt, flops),                  \
        M(layer, 2, "bwd_filter", sfx, dt, flops)

#define C1 FLOPS(128, 28, 1, 20, 5, 0)
#define C2 FLOPS(128, 24, 20, 20, 3, 1)
#define C3 FLOPS(10, 256, 1, 64, 3, 1)
#define C4 FLOPS(128, 32, 16, 16, 3, 1)
#define C5 FLOPS(128, 16, 32, 32, 3, 1)
#define C6 FLOPS(128, 8, 64, 64, 3, 1)
/* Stride 2: a quarter of the stride-1 count of the padded input. */
#define C7 (2.0 * 128 * 16 * 9 * 14 * 14)
#define C8 (2.0 * 128 * 32 * 9 * 7 * 7)
#define C9 (2.0 * 128 * 32 * 16 * 9 * 16 * 16)
#define C10 (2.0 * 128 * 64 * 32 * 9 * 8 * 8)
#define C11 (2.0 * 128 * 32 * 16 * 16 * 16)
#define C12 (2.0 * 128 * 64 * 32 * 8 * 8)

const bench_workload bench_conv_workloads[] = {
    DIRS(CONV, 1, "", 0, C1), DIRS(CONV, 2, "", 0, C2), DIRS(CONV, 3, "", 0, C3),
    DIRS(CONV, 3, "_f64", 1000, C3), DIRS(CONV, 4, "", 0, C4), DIRS(CONV, 5, "", 0, C5),
    DIRS(CONV, 6, "", 0, C6), DIRS(CONV, 7, "", 0, C7), DIRS(CONV, 8, "", 0, C8),
    DIRS(CONV, 9, "", 0, C9), DIRS(CONV, 10, "", 0, C10), DIRS(CONV, 11, "", 0, C11),
    DIRS(CONV, 12, "", 0, C12), DIRS(CONV, 9, "_f64", 1000, C9), DIRS(CONV, 11, "_f64", 1000, C11),
    {.name = NULL},
};

const bench_workload bench_conv_reference_workloads[] = {
    DIRS(REF, 1, "", 0, C1), DIRS(REF, 2, "", 0, C2), DIRS(REF, 3, "", 0, C3),
    DIRS(REF, 3, "_f64", 1000, C3), DIRS(REF, 4, "", 0, C4), DIRS(REF, 5, "", 0, C5),
    DIRS(REF, 6, "", 0, C6), DIRS(REF, 7, "", 0, C7), DIRS(REF, 8, "", 0, C8),
    DIRS(REF, 9, "", 0, C9), DIRS(REF, 10, "", 0, C10), DIRS(REF, 11, "", 0, C11),
    DIRS(REF, 12, "", 0, C12), DIRS(REF, 9, "_f64", 1000, C9), DIRS(REF, 11, "_f64", 1000, C11),
    {.name = NULL},
};
