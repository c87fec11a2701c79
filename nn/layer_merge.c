/*
 * layer_merge.c - the layers with several inputs: additionLayer (sum),
 * multiplicationLayer (product, singletons broadcast), concatenationLayer
 * (dla_cat along a dim) and depthConcatenationLayer (along "C"). Their
 * inputs are "in1".."inN".
 */
#include "nn/nn.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

#define MAX_INPUTS 64

static const dla__field add_fields[] = {F("NumInputs", DLA__F_INT, count, 1), {NULL, 0, 0, 0}};
static const dla__field cat_fields[] = {
    F("Dim", DLA__F_INT, dim, 1),
    F("NumInputs", DLA__F_INT, count, 1),
    {NULL, 0, 0, 0},
};

static dla_status inputs_check(const char *type, const dla__props *p, const char *name)
{
    if (p->count < 1 || p->count > MAX_INPUTS)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "%s '%s': NumInputs %lld must be in "
                            "1..%d", type, name, (long long)p->count, MAX_INPUTS);
    return DLA_OK;
}

static dla_status add_check(const dla__props *p, const char *name)
{
    return inputs_check("addition", p, name);
}

static dla_status mul_check(const dla__props *p, const char *name)
{
    return inputs_check("multiplication", p, name);
}

static dla_status depth_check(const dla__props *p, const char *name)
{
    return inputs_check("depthConcatenation", p, name);
}

static dla_status cat_check(const dla__props *p, const char *name)
{
    if (p->dim < 1 || p->dim > DLA_MAX_DIMS)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "concatenation '%s': Dim %lld must be in 1..%d",
                            name, (long long)p->dim, DLA_MAX_DIMS);
    if (p->count < 1 || p->count > MAX_INPUTS)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "concatenation '%s': NumInputs %lld must be "
                            "in 1..%d", name, (long long)p->count, MAX_INPUTS);
    return DLA_OK;
}

static dla_status init_none(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)l;
    (void)nin;
    (void)in;
    (void)sink;
    return DLA_OK;
}

/* Nonzero when a and b have the same format and dims (trailing
 * singletons aside). */
static int same_shape(const dla__shape *a, const dla__shape *b)
{
    if (strcmp(a->format, b->format))
        return 0;
    int n = a->ndims > b->ndims ? a->ndims : b->ndims;
    for (int d = 0; d < n; d++)
        if ((d < a->ndims ? a->dims[d] : 1) != (d < b->ndims ? b->dims[d] : 1))
            return 0;
    return 1;
}

/* MATLAB's additionLayer needs inputs of one size: the sum must not
 * broadcast (4x4x3 + 1x1x1 would add one number everywhere, silently). */
static dla_status add_same_sizes(int n, const dla__shape *in)
{
    for (int i = 1; i < n; i++)
        if (!same_shape(&in[0], &in[i])) {
            char a[160], b[160];
            dla__shape_str(&in[0], a, sizeof a);
            dla__shape_str(&in[i], b, sizeof b);
            return dla__nn_fail(DLA_ERR_SHAPE, "the inputs of an addition must have the same size "
                                "and format: in1 is %s, in%d %s", a, i + 1, b);
        }
    return DLA_OK;
}

/* MATLAB's multiplicationLayer: inputs of one format whose sizes agree
 * dim by dim or are 1 there (a gate of 1 x 1 x C x B on an H x W x C x B
 * activation). Each input is checked against the product of those before
 * it: in2 and in3 may each broadcast against in1 (4x1 and 3x1 against
 * 1x5) and not against each other, which dla_mul then refused in its own
 * words. */
static dla_status mul_sizes(int n, const dla__shape *in)
{
    dla__shape acc = in[0];
    for (int i = 1; i < n; i++) {
        int ok = !strcmp(acc.format, in[i].format);
        const int nd = acc.ndims > in[i].ndims ? acc.ndims : in[i].ndims;
        for (int d = 0; ok && d < nd; d++) {
            const int64_t a = d < acc.ndims ? acc.dims[d] : 1;
            const int64_t b = d < in[i].ndims ? in[i].dims[d] : 1;
            ok = a == b || a == 1 || b == 1;
        }
        if (!ok) {
            char a[160], b[160], what[48];
            dla__shape_str(&acc, a, sizeof a);
            dla__shape_str(&in[i], b, sizeof b);
            snprintf(what, sizeof what, i == 1 ? "in1 is" : "in1..in%d broadcast to", i);
            return dla__nn_fail(DLA_ERR_SHAPE, "the inputs of a multiplication must have one "
                                "format and sizes that agree or are 1 in each dim: %s %s, "
                                "in%d %s", what, a, i + 1, b);
        }
        for (int d = 0; d < nd; d++) {
            const int64_t a = d < acc.ndims ? acc.dims[d] : 1;
            const int64_t b = d < in[i].ndims ? in[i].dims[d] : 1;
            acc.dims[d] = a == 1 ? b : a;
        }
        acc.ndims = nd;
    }
    return DLA_OK;
}

static dla_status mul_init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)l;
    (void)sink;
    return mul_sizes(nin, in);
}

/* depthConcatenationLayer: along each input's "C" dim, which must be
 * there and at one place in all of them. */
static dla_status depth_dim(int n, const dla__shape *in, int *dim)
{
    const char *c = strchr(in[0].format, 'C');
    for (int i = 0; i < n; i++)
        if (!c || strcmp(in[i].format, in[0].format)) {
            char a[160], b[160];
            dla__shape_str(&in[0], a, sizeof a);
            dla__shape_str(&in[i], b, sizeof b);
            return dla__nn_fail(DLA_ERR_FORMAT, "depth concatenation needs inputs of one format "
                                "with a \"C\" dim: in1 is %s, in%d %s", a, i + 1, b);
        }
    *dim = (int)(c - in[0].format) + 1;
    return DLA_OK;
}

static dla_status depth_init(const dla_layer *l, int nin, const dla__shape *in,
                             dla__param_sink *sink)
{
    (void)l;
    (void)sink;
    int dim;
    return depth_dim(nin, in, &dim);
}

static dla_status add_init(const dla_layer *l, int nin, const dla__shape *in, dla__param_sink *sink)
{
    (void)l;
    (void)sink;
    return add_same_sizes(nin, in);
}

static dla_status call_shapes(dla__call *c, dla_status (*check)(int, const dla__shape *));

static dla_status add_forward(const dla__props *p, dla__call *c)
{
    (void)p;
    dla_status st = call_shapes(c, add_same_sizes);
    if (st != DLA_OK) {
        c->y = dla__nn_error_tensor();
        return st;
    }
    dla_tensor *y = c->x[0];
    for (int i = 1; i < c->nx; i++)
        y = dla_add(y, c->x[i]);
    c->y = y;
    return dla_tensor_status(y);
}

/* The shapes of a call's inputs, checked by check (add_same_sizes...):
 * shapes can change after initialization (another batch, other steps). */
static dla_status call_shapes(dla__call *c, dla_status (*check)(int, const dla__shape *))
{
    dla__shape in[MAX_INPUTS];
    const int n = c->nx < MAX_INPUTS ? c->nx : MAX_INPUTS;
    for (int i = 0; i < n; i++)
        dla__shape_of(c->x[i], &in[i]);
    return check(n, in);
}

static dla_status mul_forward(const dla__props *p, dla__call *c)
{
    (void)p;
    dla_status st = call_shapes(c, mul_sizes);
    if (st != DLA_OK) {
        c->y = dla__nn_error_tensor();
        return st;
    }
    dla_tensor *y = c->x[0];
    for (int i = 1; i < c->nx; i++)
        y = dla_mul(y, c->x[i]);
    c->y = y;
    return dla_tensor_status(y);
}

static dla_status depth_forward(const dla__props *p, dla__call *c)
{
    (void)p;
    dla__shape in[MAX_INPUTS];
    const int n = c->nx < MAX_INPUTS ? c->nx : MAX_INPUTS;
    for (int i = 0; i < n; i++)
        dla__shape_of(c->x[i], &in[i]);
    int dim;
    dla_status st = depth_dim(n, in, &dim);
    if (st != DLA_OK) {
        c->y = dla__nn_error_tensor();
        return st;
    }
    c->y = dla_cat(dim, c->nx, c->x);
    return dla_tensor_status(c->y);
}

static dla_status cat_forward(const dla__props *p, dla__call *c)
{
    c->y = dla_cat((int)p->dim, c->nx, c->x);
    return dla_tensor_status(c->y);
}

static void add_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "Element-wise addition of %lld inputs", (long long)p->count);
}

static void mul_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "Element-wise multiplication of %lld inputs", (long long)p->count);
}

static void depth_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "Depth concatenation of %lld inputs", (long long)p->count);
}

static void cat_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "Concatenation of %lld inputs along dimension %lld", (long long)p->count,
             (long long)p->dim);
}

const dla__layer_kind dla__kind_addition = {
    .type = "addition", .display = "Addition", .default_name = "addition", .fields = add_fields,
    .multi_input = 1,
    .check = add_check, .init = add_init, .forward = add_forward, .describe = add_describe,
};

const dla__layer_kind dla__kind_concatenation = {
    .type = "concatenation", .display = "Concatenation", .default_name = "concat",
    .fields = cat_fields, .multi_input = 1, .check = cat_check, .init = init_none,
    .forward = cat_forward, .describe = cat_describe,
};

const dla__layer_kind dla__kind_multiplication = {
    .type = "multiplication", .display = "Multiplication", .default_name = "multiplication",
    .fields = add_fields, .multi_input = 1,
    .check = mul_check, .init = mul_init, .forward = mul_forward, .describe = mul_describe,
};

const dla__layer_kind dla__kind_depth_concatenation = {
    .type = "depthConcatenation", .display = "Depth concatenation", .default_name = "depthcat",
    .fields = add_fields, .multi_input = 1,
    .check = depth_check, .init = depth_init, .forward = depth_forward, .describe = depth_describe,
};

/* A layer of kind with num_inputs inputs (a count out of range is refused
 * by the kind's check, with one input meanwhile). */
static dla_layer *with_inputs(const dla__layer_kind *kind, dla__props *p, int num_inputs,
                              const dla_layer_options *opts)
{
    return dla__layer_new(kind, opts ? opts->name : NULL,
                          num_inputs >= 1 && num_inputs <= MAX_INPUTS ? num_inputs : 1, p, DLA_OK);
}

DLA_API dla_layer *dla_addition_layer(int num_inputs, const dla_layer_options *opts)
{
    dla__props p = {.count = num_inputs};
    return with_inputs(&dla__kind_addition, &p, num_inputs, opts);
}

DLA_API dla_layer *dla_multiplication_layer(int num_inputs, const dla_layer_options *opts)
{
    dla__props p = {.count = num_inputs};
    return with_inputs(&dla__kind_multiplication, &p, num_inputs, opts);
}

DLA_API dla_layer *dla_depth_concatenation_layer(int num_inputs, const dla_layer_options *opts)
{
    dla__props p = {.count = num_inputs};
    return with_inputs(&dla__kind_depth_concatenation, &p, num_inputs, opts);
}

DLA_API dla_layer *dla_concatenation_layer(int dim, int num_inputs, const dla_layer_options *opts)
{
    dla__props p = {.count = num_inputs, .dim = dim};
    return with_inputs(&dla__kind_concatenation, &p, num_inputs, opts);
}
