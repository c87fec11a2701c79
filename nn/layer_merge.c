/*
 * layer_merge.c - the layers with several inputs: additionLayer (sum) and
 * concatenationLayer (dla_cat along a dim). Their inputs are "in1".."inN".
 */
#include "nn/nn.h"

#include <stddef.h>
#include <stdio.h>

#define F(key, type, field, count) {key, type, offsetof(dla__props, field), count}

#define MAX_INPUTS 64

static const dla__field add_fields[] = {F("NumInputs", DLA__F_INT, count, 1), {NULL, 0, 0, 0}};
static const dla__field cat_fields[] = {
    F("Dim", DLA__F_INT, dim, 1),
    F("NumInputs", DLA__F_INT, count, 1),
    {NULL, 0, 0, 0},
};

static dla_status add_check(const dla__props *p, const char *name)
{
    if (p->count < 1 || p->count > MAX_INPUTS)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "addition '%s': NumInputs %lld must be in "
                            "1..%d", name, (long long)p->count, MAX_INPUTS);
    return DLA_OK;
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

static dla_status add_forward(const dla__props *p, dla__call *c)
{
    (void)p;
    dla_tensor *y = c->x[0];
    for (int i = 1; i < c->nx; i++)
        y = dla_add(y, c->x[i]);
    c->y = y;
    return dla_tensor_status(y);
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

static void cat_describe(const dla__props *p, const dla__shape *in, char *buf, size_t size)
{
    (void)in;
    snprintf(buf, size, "Concatenation of %lld inputs along dimension %lld", (long long)p->count,
             (long long)p->dim);
}

const dla__layer_kind dla__kind_addition = {
    .type = "addition", .display = "Addition", .default_name = "addition", .fields = add_fields,
    .multi_input = 1,
    .check = add_check, .init = init_none, .forward = add_forward, .describe = add_describe,
};

const dla__layer_kind dla__kind_concatenation = {
    .type = "concatenation", .display = "Concatenation", .default_name = "concat",
    .fields = cat_fields, .multi_input = 1, .check = cat_check, .init = init_none,
    .forward = cat_forward, .describe = cat_describe,
};

DLA_API dla_layer *dla_addition_layer(int num_inputs, const dla_layer_options *opts)
{
    dla__props p = {.count = num_inputs};
    return dla__layer_new(&dla__kind_addition, opts ? opts->name : NULL,
                          num_inputs >= 1 && num_inputs <= MAX_INPUTS ? num_inputs : 1, &p, DLA_OK);
}

DLA_API dla_layer *dla_concatenation_layer(int dim, int num_inputs, const dla_layer_options *opts)
{
    dla__props p = {.count = num_inputs, .dim = dim};
    return dla__layer_new(&dla__kind_concatenation, opts ? opts->name : NULL,
                          num_inputs >= 1 && num_inputs <= MAX_INPUTS ? num_inputs : 1, &p, DLA_OK);
}
