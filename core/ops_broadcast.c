/*
 * ops_broadcast.c - moving between a tensor's dims and broadcast dims: the
 * two halves every broadcasting op's gradient needs. dla__expand copies a
 * tensor out to larger dims (a strided copy from a stride-0 view), and
 * dla__sum_to sums a gradient back down; each is the other's backward.
 */
#include "core/error.h"
#include "core/launch.h"
#include "core/op.h"
#include "core/ops.h"
#include "core/tensor.h"

#include <string.h>

dla_tensor *dla__sum_to(dla_tensor *g, const dla_tensor *like)
{
    if (!g || g->status != DLA_OK)
        return dla__pass_error(g);
    int64_t red[DLA_MAX_DIMS];
    int nred = 0;
    for (int i = 0; i < g->ndims; i++) {
        int64_t l = i < like->ndims ? like->dims[i] : 1;
        if (l == 1 && g->dims[i] != 1)
            red[nred++] = i + 1;
    }
    dla_tensor *r = nred ? dla_sum(g, nred, red) : dla__return(dla_tensor_retain(g));
    int same = r->status == DLA_OK && r->ndims == like->ndims &&
               !memcmp(r->dims, like->dims, (size_t)like->ndims * sizeof *like->dims) &&
               !strcmp(r->format, like->format);
    return same ? r : dla_reshape(r, like->format, like->ndims, like->dims);
}

typedef struct expand_attrs {
    int ndims;
    int64_t dims[DLA_MAX_DIMS];
    char format[DLA_MAX_DIMS + 1];
} expand_attrs;

static dla_status expand_forward(const void *attrs, dla_tensor *const *in, int nin,
                                 dla_tensor **out, dla_tensor **saved)
{
    const expand_attrs *a = attrs;
    dla_tensor *g = in[0];
    char gd[DLA__DIMS_BUF], ld[DLA__DIMS_BUF];
    for (int i = 0; i < g->ndims; i++) {
        int64_t l = i < a->ndims ? a->dims[i] : 1;
        if (g->dims[i] != l && g->dims[i] != 1)
            return dla__fail(DLA_ERR_SHAPE, "expand: %s does not broadcast to %s",
                             dla__tensor_dims_str(g, gd, sizeof gd),
                             dla__dims_str(ld, sizeof ld, a->ndims, a->dims));
    }
    dla_tensor *y = dla__tensor_alloc("expand", g->storage->device, g->dtype, a->format, a->ndims,
                                      a->dims);
    if (!y)
        return dla_last_status();
    dla_view yv, xv;
    dla__view_of(y, &yv);
    dla__view_of(g, &xv);
    xv.ndims = a->ndims;
    for (int i = 0; i < a->ndims; i++) {
        xv.dims[i] = a->dims[i];
        xv.strides[i] = (i < g->ndims && g->dims[i] != 1) ? g->strides[i] : 0;
    }
    dla_status st = dla__k_copy(g->storage->device, &yv, &xv);
    if (st != DLA_OK) {
        dla_tensor_release(y);
        return st;
    }
    out[0] = y;
    return DLA_OK;
}

static dla_status expand_backward(const dla__node *n, dla_tensor *const *gout, dla_tensor **gin)
{
    gin[0] = dla__sum_to(gout[0], n->in[0]);
    return DLA_OK;
}

/* expand_forward makes a tensor of its attributes' dims and format and
 * reads x through them. */
static dla_status expand_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    const expand_attrs *a = attrs;
    if (a->ndims < 0 || a->ndims > DLA_MAX_DIMS || !dla__attr_str_ok(a->format, sizeof a->format))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "expand: attribute ndims is %d, or its format "
                         "does not end", a->ndims);
    char gd[DLA__DIMS_BUF], ld[DLA__DIMS_BUF];
    for (int i = 0; i < (in[0].ndims > a->ndims ? in[0].ndims : a->ndims); i++) {
        int64_t g = i < in[0].ndims ? in[0].dims[i] : 1, l = i < a->ndims ? a->dims[i] : 1;
        if (l < 0 || (g != l && g != 1))
            return dla__fail(DLA_ERR_SHAPE, "expand: argument %s does not broadcast to attribute "
                             "dims %s", dla__dims_str(gd, sizeof gd, in[0].ndims, in[0].dims),
                             dla__dims_str(ld, sizeof ld, a->ndims, a->dims));
    }
    out[0] = in[0];
    out[0].ndims = a->ndims;
    memcpy(out[0].dims, a->dims, sizeof a->dims);
    memcpy(out[0].format, a->format, sizeof a->format);
    return DLA_OK;
}

static const dla__op expand_op = {
    .name = "expand", .nin = 1, .nout = 1, .forward = expand_forward, .backward = expand_backward,
    .infer = expand_infer,
};
DLA__OP_REGISTER(expand_op, sizeof(expand_attrs));

dla_tensor *dla__expand(dla_tensor *g, const dla_tensor *like)
{
    /* Zeroed whole, padding included: traces save attributes byte for byte. */
    expand_attrs a;
    memset(&a, 0, sizeof a);
    a.ndims = like->ndims;
    memcpy(a.dims, like->dims, sizeof a.dims);
    memcpy(a.format, like->format, sizeof a.format);
    return dla__apply(&expand_op, &a, sizeof a, 1, &g);
}
