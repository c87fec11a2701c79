/*
 * kitunary.c - the hello plugin (examples/plugin-hello/hello.c, included
 * whole) with a unary kernel for single written on the plugin kit, as a
 * third party adds its first kernel, and a bug that DLA_KITUNARY_BUG
 * chooses, for check-plugin to find (tests/check_plugin_broken.sh):
 *
 *   sigmoid-tail  sigmoid flushed to 0 below -20 (where it is 2e-9 and
 *                 less): a shortcut inputs in -4..4 never show.
 *
 * Unset, it has no bug and check-plugin passes it.
 */
#define dlaccel_plugin_init hello_plugin_init
#include "../../examples/plugin-hello/hello.c"
#undef dlaccel_plugin_init

#include <dlaccel/plugin_kit.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>

static dla_kit kit;
static int sigmoid_tail_bug;

static size_t block_bytes(dla_mem mem) { return ((hello_block *)mem)->bytes; }

static int supports(void *dev, dla_kernel k, dla_dtype t)
{
    (void)dev;
    return k == DLA_KERNEL_UNARY && t == DLA_F32;
}

static float unary_one(dla_unary_op op, float v, float al, float be)
{
    switch (op) {
    case DLA_UNARY_NEG: return -v;
    case DLA_UNARY_EXP: return expf(v);
    case DLA_UNARY_LOG: return logf(v);
    case DLA_UNARY_SQRT: return sqrtf(v);
    case DLA_UNARY_ABS: return fabsf(v);
    case DLA_UNARY_SIN: return sinf(v);
    case DLA_UNARY_COS: return cosf(v);
    case DLA_UNARY_TANH: return tanhf(v);
    case DLA_UNARY_SIGMOID: return sigmoid_tail_bug && v < -20 ? 0.0f : 1.0f / (1.0f + expf(-v));
    case DLA_UNARY_RELU: return v > 0 ? v : 0.0f;
    default: return v * al + be; /* affine, the last op of ABI 1.0 */
    }
}

static dla_status unary(void *dev, const dla_unary_args *a)
{
    (void)dev;
    dla_status s = dla_kit_check_unary(&kit, a);
    if (s != DLA_OK)
        return s;
    if (a->op > DLA_UNARY_AFFINE)
        return host->error(DLA_ERR_UNSUPPORTED, "kitunary unary: op %d is newer than ABI 1.0",
                           (int)a->op);
    float *y = (float *)(void *)((hello_block *)a->y.mem)->data;
    const float *x = (const float *)(void *)((hello_block *)a->x.mem)->data;
    int64_t n = 1;
    for (int d = 0; d < a->x.ndims; d++)
        n *= a->x.dims[d];
    for (int64_t i = 0; i < n; i++) {
        int64_t r = i, ox = a->x.offset, oy = a->y.offset;
        for (int d = 0; d < a->x.ndims; d++) {
            const int64_t c = r % a->x.dims[d];
            r /= a->x.dims[d];
            ox += c * a->x.strides[d];
            oy += c * a->y.strides[d];
        }
        y[oy] = unary_one(a->op, x[ox], (float)a->alpha, (float)a->beta);
    }
    return DLA_OK;
}

DLA_PLUGIN_EXPORT dla_status dlaccel_plugin_init(const dla_plugin_host *h, dla_plugin *table)
{
    dla_status s = hello_plugin_init(h, table);
    if (s != DLA_OK)
        return s;
    const char *bug = getenv("DLA_KITUNARY_BUG");
    sigmoid_tail_bug = bug && strcmp(bug, "sigmoid-tail") == 0;
    kit = (dla_kit){.host = h, .name = "kitunary", .mem_bytes = block_bytes};
    if (table->struct_size >= offsetof(dla_plugin, unary) + sizeof table->unary) {
        table->supports = supports;
        table->unary = unary;
    }
    return DLA_OK;
}
