/*
 * ops_dropout.c - dropout with a Philox mask.
 *
 * The forward draws from the calling thread's stream when it runs, not when
 * the public function is called: a random op (dla__op.random), so a trace
 * of dla_accelerate replays it as an RNG slot that draws a new mask each
 * time, the one eager would draw. The mask is drawn as dla_rand draws (the
 * device's random kernel, or host Philox and an upload) and kept already
 * scaled, 0 or 1/(1 - p): forward and backward are each one multiply by
 * it.
 */
#include "core/alloc.h"
#include "core/launch.h"
#include "core/op.h"
#include "core/ops_nn.h"
#include "core/philox.h"

#include <math.h>

typedef struct dropout_attrs {
    double prob;
} dropout_attrs;

/* The scaled mask for x, dense, with x's dims and format, drawn from the
 * stream at (seed, counter): uniforms u (on the device where it has the
 * random kernel), then u >= p ? 1/(1 - p) : 0 in two exact steps, step
 * (u > alpha) and affine (* keep). u lies on the grid of multiples of 2^-24
 * (single) or 2^-53 (double), so u >= p is u > the dtype's largest value
 * below p, and, where that is below the grid's first step, u > 0 (alpha
 * 0 then, never a subnormal a device might flush); p = 0 keeps all. */
static dla_tensor *make_mask(const dropout_attrs *a, uint64_t seed, uint64_t counter,
                             const dla_tensor *x)
{
    static const char op[] = "dla_dropout";
    dla_tensor *m = dla__tensor_alloc(op, x->storage->device, x->dtype, x->format, x->ndims, x->dims);
    if (!m || !m->storage->bytes)
        return m;
    dla_device *dev = m->storage->device;
    dla_random_args r = {.struct_size = sizeof r, .dist = DLA_RANDOM_UNIFORM, .seed = seed,
                         .counter = counter};
    dla__view_of(m, &r.y);
    double alpha, keep = 1.0 / (1.0 - a->prob);
    if (x->dtype == DLA_F32) {
        const float p = (float)a->prob, below = nextafterf(p, -1.0f);
        alpha = p <= 0.0f ? -0.5 : below < 0x1p-24f ? 0.0 : (double)below;
    } else {
        const double below = nextafter(a->prob, -1.0);
        alpha = a->prob <= 0.0 ? -0.5 : below < 0x1p-53 ? 0.0 : below;
    }
    dla_status st = dla__k_random(dev, &r);
    if (st == DLA_OK)
        st = dla__nn_unary(dev, DLA_UNARY_STEP, alpha, 0.0, &r.y, &r.y);
    if (st == DLA_OK)
        st = dla__nn_unary(dev, DLA_UNARY_AFFINE, keep, 0.0, &r.y, &r.y);
    if (st != DLA_OK) {
        dla__error_prefix(op);
        dla_tensor_release(m);
        return NULL;
    }
    return m;
}

/* The mask is drawn in x's dtype: single or double. */
static dla_status x_check(dla_dtype dtype)
{
    if (!dla__nn_is_float(dtype))
        return dla__fail(DLA_ERR_DTYPE, "dla_dropout: argument x: %s; needs single or double",
                         dla_dtype_name(dtype));
    return DLA_OK;
}

static dla_status dropout_forward(const void *attrs, dla_tensor *const *in, int nin,
                                  dla_tensor **out, dla_tensor **saved)
{
    (void)nin;
    dla_tensor *x = in[0];
    if (x_check(x->dtype) != DLA_OK)
        return dla_last_status();
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
    dla_rng_set(seed, counter + dla__philox_blocks(0, x->dtype == DLA_F64,
                                                   dla__numel(x->ndims, x->dims)));
    out[0] = y;
    saved[0] = mask;
    return DLA_OK;
}

static dla_status dropout_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    gin[0] = dla_mul(gout[0], n->saved[0]);
    return DLA_OK;
}

/* The mask keeps 1/(1 - prob): prob in [0, 1), as a probability. */
static dla_status prob_check(double prob)
{
    if (!(prob >= 0.0 && prob < 1.0))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_dropout: argument prob: %g is outside "
                         "[0, 1)", prob);
    return DLA_OK;
}

/* The result and the saved mask have x's shape; x is checked as forward
 * checks it. */
static dla_status dropout_infer(const void *attrs, int nin, const dla__vshape *in,
                                dla__vshape *out)
{
    (void)nin;
    dla_status st = prob_check(((const dropout_attrs *)attrs)->prob);
    if (st == DLA_OK)
        st = x_check(in[0].dtype);
    out[0] = out[1] = in[0];
    return st;
}

static const dla__op dropout_op = {
    .name = "dla_dropout", .nin = 1, .nout = 1, .nsaved = 1, .forward = dropout_forward,
    .saved_constant = 1, /* the mask */
    .backward = dropout_backward, .random = 1, .infer = dropout_infer,
    .arg_names = (const char *const[]){"x", NULL},
};
DLA__OP_REGISTER(dropout_op, sizeof(dropout_attrs));

DLA_API dla_tensor *dla_dropout(dla_tensor *x, double prob)
{
    if (prob_check(prob) != DLA_OK)
        return dla__return(dla__error_tensor());
    dropout_attrs a = {.prob = prob};
    return dla__apply(&dropout_op, &a, sizeof a, 1, &x);
}
