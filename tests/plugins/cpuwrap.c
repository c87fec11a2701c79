/*
 * cpuwrap.c - test-only plugins that wrap the cpu plugin and change one
 * thing, built once per mode (CPUWRAP_MODE) for the conformance tests:
 *
 *   denseonly   declines (DLA_ERR_UNSUPPORTED) every kernel call that has a
 *               view which is not dense, except strided_copy, as a plugin
 *               with only dense fast paths may; the core's dense retry
 *               rescues each decline, so it passes check-plugin and the
 *               tensor, autodiff and accelerate suites on its device.
 *   declineall  the same, strided_copy included: the core makes views dense
 *               with strided_copy, so nothing rescues those declines and
 *               check-plugin must fail it.
 *   badindex    gather and scatter_add read the index as if it were dense
 *               (strides ignored), a bug a plugin written from the old
 *               header ("a dense DLA_I32 vector") would have: check-plugin
 *               must fail it.
 *   zerosign    unary neg computed as affine with alpha -1 and beta 0,
 *               which gives +0 for +0 where neg gives -0: only the sign
 *               of a zero is wrong, and check-plugin must fail it (its
 *               "exact" compare was ==, which takes -0 for +0).
 *
 * The cpu plugin's library (CPU_PLUGIN_LIB, the build tree's) is opened
 * with dlopen and its init fills the inner table; the wrapper copies it and
 * replaces the kernel members it changes. Its memory is the cpu plugin's.
 */
#include <dlaccel/plugin.h>
#include "cpu_inner.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODE_DENSEONLY 1
#define MODE_DECLINEALL 2
#define MODE_BADINDEX 3
#define MODE_ZEROSIGN 4
/* The modes that decline views which are not dense. */
#define WRAPS_DENSE (CPUWRAP_MODE == MODE_DENSEONLY || CPUWRAP_MODE == MODE_DECLINEALL)

#ifndef CPUWRAP_MODE
#error "build with -DCPUWRAP_MODE=MODE_DENSEONLY, MODE_DECLINEALL, MODE_BADINDEX or MODE_ZEROSIGN"
#endif

#if CPUWRAP_MODE == MODE_DENSEONLY
#define NAME "denseonly"
#elif CPUWRAP_MODE == MODE_DECLINEALL
#define NAME "declineall"
#elif CPUWRAP_MODE == MODE_BADINDEX
#define NAME "badindex"
#else
#define NAME "zerosign"
#endif

static const dla_plugin_host *host;
static dla_plugin inner;

#if WRAPS_DENSE
/* The docs' dense: strides[0] == 1 and each stride the one before times
 * the dim before (an empty view has nothing to touch). */
static int dense(const dla_view *v)
{
    if (v->mem == NULL)
        return 1;
    for (int d = 0; d < v->ndims; d++)
        if (v->dims[d] == 0)
            return 1;
    int64_t s = 1;
    for (int d = 0; d < v->ndims; d++) {
        if (v->strides[d] != s)
            return 0;
        s *= v->dims[d];
    }
    return 1;
}

/* Each decline is also a line "kernel argument" appended to the file
 * $CPUWRAP_DECLINES names, when set: how a test sees which calls reached
 * the device with views that were not dense. */
static dla_status decline(const char *kernel, const char *arg)
{
    const char *path = getenv("CPUWRAP_DECLINES");
    FILE *f = path && *path ? fopen(path, "a") : NULL;
    if (f) {
        fprintf(f, "%s %s\n", kernel, arg);
        fclose(f);
    }
    return host->error(DLA_ERR_UNSUPPORTED, NAME " %s: argument %s is not dense", kernel, arg);
}

#define CHECK(kernel, v, name)                                                                    \
    do {                                                                                           \
        if (!dense(v))                                                                             \
            return decline(kernel, name);                                                          \
    } while (0)
#endif

static dla_status device_info(int index, dla_plugin_device_info *info)
{
    return cpu_inner_device_info(&inner, NAME, index, info);
}

#if WRAPS_DENSE
static dla_status fill(void *dev, const dla_view *y, double value)
{
    CHECK("fill", y, "y");
    return inner.fill(dev, y, value);
}

#if CPUWRAP_MODE == MODE_DECLINEALL
static dla_status strided_copy(void *dev, const dla_view *y, const dla_view *x)
{
    CHECK("strided_copy", y, "y");
    CHECK("strided_copy", x, "x");
    return inner.strided_copy(dev, y, x);
}
#endif

static dla_status cast(void *dev, const dla_view *y, const dla_view *x)
{
    CHECK("cast", y, "y");
    CHECK("cast", x, "x");
    return inner.cast(dev, y, x);
}

static dla_status unary(void *dev, const dla_unary_args *a)
{
    CHECK("unary", &a->y, "y");
    CHECK("unary", &a->x, "x");
    return inner.unary(dev, a);
}

static dla_status binary(void *dev, const dla_binary_args *a)
{
    CHECK("binary", &a->z, "z");
    CHECK("binary", &a->a, "a");
    CHECK("binary", &a->b, "b");
    return inner.binary(dev, a);
}

static dla_status reduce(void *dev, const dla_reduce_args *a)
{
    CHECK("reduce", &a->y, "y");
    CHECK("reduce", &a->x, "x");
    CHECK("reduce", &a->index, "index");
    return inner.reduce(dev, a);
}

static dla_status ternary(void *dev, const dla_ternary_args *a)
{
    CHECK("ternary", &a->z, "z");
    CHECK("ternary", &a->cond, "cond");
    CHECK("ternary", &a->a, "a");
    CHECK("ternary", &a->b, "b");
    return inner.ternary(dev, a);
}

#define CONV(member)                                                                               \
    static dla_status member(void *dev, const dla_conv_args *a)                                   \
    {                                                                                              \
        CHECK(#member, &a->x, "x");                                                                \
        CHECK(#member, &a->w, "w");                                                                \
        CHECK(#member, &a->y, "y");                                                                \
        CHECK(#member, &a->bias, "bias");                                                          \
        return inner.member(dev, a);                                                               \
    }
CONV(conv_forward)
CONV(conv_backward_data)
CONV(conv_backward_filter)

#define POOL(member)                                                                               \
    static dla_status member(void *dev, const dla_pool_args *a)                                   \
    {                                                                                              \
        CHECK(#member, &a->x, "x");                                                                \
        CHECK(#member, &a->y, "y");                                                                \
        CHECK(#member, &a->index, "index");                                                        \
        return inner.member(dev, a);                                                               \
    }
POOL(pool_forward)
POOL(pool_backward)

#define INDEX(member)                                                                              \
    static dla_status member(void *dev, const dla_index_args *a)                                  \
    {                                                                                              \
        CHECK(#member, &a->y, "y");                                                                \
        CHECK(#member, &a->x, "x");                                                                \
        CHECK(#member, &a->index, "index");                                                        \
        return inner.member(dev, a);                                                               \
    }
INDEX(gather)
INDEX(scatter_add)

static dla_status fused(void *dev, const dla_fused_args *a)
{
    CHECK("fused", &a->y, "y");
    for (int i = 0; i < a->ninputs; i++)
        CHECK("fused", &a->inputs[i], "an input");
    return inner.fused(dev, a);
}

static dla_status fused_reduce(void *dev, const dla_fused_reduce_args *a)
{
    CHECK("fused_reduce", &a->y, "y");
    if (a->struct_size >= sizeof *a)
        CHECK("fused_reduce", &a->y2, "y2");
    for (int i = 0; i < a->program.ninputs; i++)
        CHECK("fused_reduce", &a->program.inputs[i], "an input");
    return inner.fused_reduce(dev, a);
}

/* A convolution with its epilogue (ABI 1.9): declined as a whole, which
 * the core answers with the two launches (each retried dense on its own). */
#define CONV_FUSED(member)                                                                         \
    static dla_status member(void *dev, const dla_conv_fused_args *a)                             \
    {                                                                                              \
        CHECK(#member, &a->conv.x, "conv.x");                                                      \
        CHECK(#member, &a->conv.w, "conv.w");                                                      \
        CHECK(#member, &a->conv.y, "conv.y");                                                      \
        CHECK(#member, &a->conv.bias, "conv.bias");                                                \
        CHECK(#member, &a->epilogue.y, "epilogue.y");                                              \
        for (int i = 0; i < a->epilogue.ninputs; i++)                                              \
            CHECK(#member, &a->epilogue.inputs[i], "an epilogue input");                           \
        return inner.member(dev, a);                                                               \
    }
CONV_FUSED(conv_forward_fused)
CONV_FUSED(conv_backward_data_fused)

static dla_status random_fill(void *dev, const dla_random_args *a)
{
    CHECK("random", &a->y, "y");
    return inner.random(dev, a);
}
#elif CPUWRAP_MODE == MODE_BADINDEX
/* The index read as a dense vector: element i at offset + i, whatever its
 * strides say. */
static dla_index_args dense_index(const dla_index_args *a)
{
    dla_index_args b = *a;
    for (int d = 0; d < b.index.ndims; d++)
        b.index.strides[d] = d == 0 ? 1 : b.index.strides[d - 1] * b.index.dims[d - 1];
    return b;
}

static dla_status gather(void *dev, const dla_index_args *a)
{
    const dla_index_args b = dense_index(a);
    return inner.gather(dev, &b);
}

static dla_status scatter_add(void *dev, const dla_index_args *a)
{
    const dla_index_args b = dense_index(a);
    return inner.scatter_add(dev, &b);
}
#else
/* neg as x * -1 + 0: -0 + 0 is +0, so +0 comes back +0, not -0. */
static dla_status unary(void *dev, const dla_unary_args *a)
{
    if (a->op != DLA_UNARY_NEG)
        return inner.unary(dev, a);
    dla_unary_args b = *a;
    b.op = DLA_UNARY_AFFINE;
    b.alpha = -1;
    b.beta = 0;
    return inner.unary(dev, &b);
}
#endif

DLA_PLUGIN_EXPORT dla_status dlaccel_plugin_init(const dla_plugin_host *h, dla_plugin *table)
{
    host = h;
    dla_status s = cpu_inner_open(h, NAME, &inner);
    if (s != DLA_OK)
        return s;
    const size_t size = table->struct_size < sizeof inner ? table->struct_size : sizeof inner;
    dla_plugin mine = inner;
    mine.struct_size = size;
    /* The cpu plugin's own record is shut down by the host (it is loaded
     * as the fallback); this one only borrows it. */
    mine.shutdown = NULL;
    mine.device_info = device_info;
#if WRAPS_DENSE
    mine.fill = fill;
#if CPUWRAP_MODE == MODE_DECLINEALL
    mine.strided_copy = strided_copy;
#endif
    mine.cast = cast;
    mine.unary = unary;
    mine.binary = binary;
    mine.reduce = reduce;
    mine.ternary = ternary;
    mine.conv_forward = conv_forward;
    mine.conv_backward_data = conv_backward_data;
    mine.conv_backward_filter = conv_backward_filter;
    mine.pool_forward = pool_forward;
    mine.pool_backward = pool_backward;
    mine.gather = gather;
    mine.scatter_add = scatter_add;
    mine.fused = fused;
    mine.fused_reduce = fused_reduce;
    mine.random = random_fill;
    mine.conv_forward_fused = inner.conv_forward_fused ? conv_forward_fused : NULL;
    mine.conv_backward_data_fused = inner.conv_backward_data_fused ? conv_backward_data_fused
                                                                   : NULL;
#elif CPUWRAP_MODE == MODE_BADINDEX
    mine.gather = gather;
    mine.scatter_add = scatter_add;
#else
    mine.unary = unary;
#endif
    memcpy(table, &mine, size);
    return DLA_OK;
}
