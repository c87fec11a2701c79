/*
 * ops_dropout.c - dropout with a Philox mask.
 *
 * The forward draws from the calling thread's stream when it runs, not when
 * the public function is called: a random op (dla__op.random), so a trace
 * of dla_accelerate replays it as an RNG slot that draws a new mask each
 * time, the one eager would draw. The mask is drawn as dla_rand draws (host
 * Philox, then uploaded) and kept already scaled, 0 or 1/(1 - p): forward
 * and backward are each one multiply by it.
 */
#include "core/alloc.h"
#include "core/op.h"
#include "core/ops_nn.h"
#include "core/philox.h"

#include <math.h>

typedef struct dropout_attrs {
    double prob;
} dropout_attrs;

/* Philox blocks a uniform draw of n elements of dtype takes. */
static uint64_t blocks_for(dla_dtype dtype, int64_t n)
{
    return dtype == DLA_F32 ? (uint64_t)(n + 3) / 4 : (uint64_t)(n + 1) / 2;
}

/* The scaled mask for x, dense, with x's dims and format, drawn from the
 * stream at (seed, counter). */
static dla_tensor *make_mask(const dropout_attrs *a, uint64_t seed, uint64_t counter,
                             const dla_tensor *x)
{
    static const char op[] = "dla_dropout";
    dla_tensor *m = dla__tensor_alloc(op, x->storage->device, x->dtype, x->format, x->ndims, x->dims);
    if (!m || !m->storage->bytes)
        return m;
    int64_t n = dla__numel(x->ndims, x->dims);
    void *host = dla__malloc(m->storage->bytes);
    if (!host) {
        dla_tensor_release(m);
        dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot stage the %zu-byte mask", op, m->storage->bytes);
        return NULL;
    }
    const double keep = 1.0 / (1.0 - a->prob);
    if (x->dtype == DLA_F32) {
        float *u = host, p = (float)a->prob, k = (float)keep;
        dla__philox_uniform_f32(seed, counter, u, n);
        for (int64_t i = 0; i < n; i++)
            u[i] = u[i] >= p ? k : 0.0f;
    } else {
        double *u = host;
        dla__philox_uniform_f64(seed, counter, u, n);
        for (int64_t i = 0; i < n; i++)
            u[i] = u[i] >= a->prob ? keep : 0.0;
    }
    dla_device *dev = m->storage->device;
    dla_status st = dla__k_upload(dev, m->storage->mem, 0, host, m->storage->bytes);
    dla__free(host);
    if (st != DLA_OK) {
        dla_tensor_release(m);
        return NULL;
    }
    return m;
}

static dla_status dropout_forward(const void *attrs, dla_tensor *const *in, int nin,
                                  dla_tensor **out, dla_tensor **saved)
{
    (void)nin;
    dla_tensor *x = in[0];
    if (!dla__nn_is_float(x->dtype))
        return dla__fail(DLA_ERR_DTYPE, "dla_dropout: argument x: %s; needs single or double",
                         dla_dtype_name(x->dtype));
    dla_device *dev = x->storage->device;
    uint64_t seed, counter;
    dla_rng_get(&seed, &counter);
    dla_tensor *mask = make_mask(attrs, seed, counter, x);
    dla_tensor *y = mask ? dla__tensor_alloc("dla_dropout", dev, x->dtype, x->format, x->ndims,
                                             x->dims)
                         : NULL;
    dla_status st = y ? DLA_OK : dla_last_status();
    if (st == DLA_OK) {
        dla_view vy, vx, vm;
        dla__view_of(y, &vy);
        dla__view_of(x, &vx);
        dla__view_of(mask, &vm);
        st = dla__nn_binary(dev, DLA_BINARY_MUL, &vy, &vx, &vm);
    }
    if (st != DLA_OK) {
        dla_tensor_release(mask);
        dla_tensor_release(y);
        return st;
    }
    /* The stream moves on only for a mask actually drawn, as dla_rand's. */
    dla_rng_set(seed, counter + blocks_for(x->dtype, dla__numel(x->ndims, x->dims)));
    out[0] = y;
    saved[0] = mask;
    return DLA_OK;
}

static dla_status dropout_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    gin[0] = dla_mul(gout[0], n->saved[0]);
    return DLA_OK;
}

static const dla__op dropout_op = {
    .name = "dla_dropout", .nin = 1, .nout = 1, .nsaved = 1, .forward = dropout_forward,
    .backward = dropout_backward, .random = 1,
};
DLA__OP_REGISTER(dropout_op, sizeof(dropout_attrs));

DLA_API dla_tensor *dla_dropout(dla_tensor *x, double prob)
{
    if (!(prob >= 0.0 && prob < 1.0))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "dla_dropout: argument prob: %g is outside "
                          "[0, 1)", prob);
    dropout_attrs a = {.prob = prob};
    return dla__apply(&dropout_op, &a, sizeof a, 1, &x);
}
