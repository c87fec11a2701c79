/*
 * conformance_call.c - a kernel call as the core makes it, declines
 * included.
 *
 * A plugin may answer DLA_ERR_UNSUPPORTED for a call with a view that is
 * not dense; the core then calls once more with dense copies of those
 * views (core/launch_dense.c). The suite does the same on the device under
 * test, so a plugin with only dense paths is tested on the calls it does
 * run, and fails where the core would not rescue it: a decline of
 * strided_copy or gemm, of a call whose views were all dense, or of the
 * dense retry. Which views a kernel has and which it writes is the core's
 * own table (core/kernel_views.h). The dense copies are made through the
 * host here (copy_to_host, rearranged, copy_to_device), so a device's own
 * strided_copy is not trusted to check itself.
 */
#include "tools/conformance.h"

#include "core/kernel_views.h"

#include <stdlib.h>
#include <string.h>

static size_t args_size(dla_kernel k)
{
    switch (k) {
    case DLA_KERNEL_FILL:
    case DLA_KERNEL_STRIDED_COPY:
    case DLA_KERNEL_CAST: return 2 * sizeof(dla_view);
    case DLA_KERNEL_UNARY: return sizeof(dla_unary_args);
    case DLA_KERNEL_BINARY: return sizeof(dla_binary_args);
    case DLA_KERNEL_REDUCE: return sizeof(dla_reduce_args);
    case DLA_KERNEL_GEMM: return sizeof(dla_gemm_args);
    case DLA_KERNEL_TERNARY: return sizeof(dla_ternary_args);
    case DLA_KERNEL_CONV_FORWARD:
    case DLA_KERNEL_CONV_BACKWARD_DATA:
    case DLA_KERNEL_CONV_BACKWARD_FILTER: return sizeof(dla_conv_args);
    case DLA_KERNEL_POOL_FORWARD:
    case DLA_KERNEL_POOL_BACKWARD: return sizeof(dla_pool_args);
    case DLA_KERNEL_GATHER:
    case DLA_KERNEL_SCATTER_ADD: return sizeof(dla_index_args);
    case DLA_KERNEL_FUSED: return sizeof(dla_fused_args);
    case DLA_KERNEL_FUSED_REDUCE:
    case DLA_KERNEL_FUSED_REDUCE_PAIR: return sizeof(dla_fused_reduce_args);
    case DLA_KERNEL_RANDOM_UNIFORM:
    case DLA_KERNEL_RANDOM_NORMAL: return sizeof(dla_random_args);
    case DLA_KERNEL_FUSED_MULTI: return sizeof(dla_fused_multi_args);
    case DLA_KERNEL_CONV_FORWARD_FUSED:
    case DLA_KERNEL_CONV_BACKWARD_DATA_FUSED: return sizeof(dla_conv_fused_args);
    default: return 0;
    }
}

/* Elements from element 0 of v's memory to one past its last element. */
static int64_t reach(const dla_view *v)
{
    int64_t e = v->offset + 1;
    for (int d = 0; d < v->ndims; d++)
        e += (v->dims[d] - 1) * v->strides[d];
    return e;
}

/* Element l (column-major over v's dims) of v: its element offset. */
static int64_t at(const dla_view *v, int64_t l)
{
    int64_t o = v->offset;
    for (int d = 0; d < v->ndims; d++) {
        o += (l % v->dims[d]) * v->strides[d];
        l /= v->dims[d];
    }
    return o;
}

/* Moves the elements of view v between its memory's host image `whole`
 * and the dense host image `dense`. */
static void rearrange(const dla_view *v, unsigned char *whole, unsigned char *dense, int to_dense)
{
    const size_t es = dla_dtype_size(v->dtype);
    const int64_t n = dla__view_numel(v);
    for (int64_t l = 0; l < n; l++) {
        unsigned char *w = whole + (size_t)at(v, l) * es, *d = dense + (size_t)l * es;
        memcpy(to_dense ? d : w, to_dense ? w : d, es);
    }
}

/* Copies view v (on the device under test) into new dense memory *temp;
 * 0 (failed and reported) when the device refused. */
static int make_dense(cf_case *c, const dla_view *v, dla_mem *temp)
{
    const cf_device *dev = c->suite->dev[CF_DUT];
    const size_t es = dla_dtype_size(v->dtype);
    const size_t whole_bytes = (size_t)reach(v) * es, bytes = (size_t)dla__view_numel(v) * es;
    unsigned char *whole = malloc(whole_bytes), *dense = malloc(bytes);
    int ok = whole && dense;
    if (!ok)
        cf_fail(c, "out of host memory");
    if (ok && dev->table->copy_to_host(dev->ctx, whole, v->mem, 0, whole_bytes) != DLA_OK) {
        cf_fail(c, "copy_to_host for the dense retry: %s", dla_last_error());
        ok = 0;
    }
    if (ok && dev->table->mem_alloc(dev->ctx, bytes, temp) != DLA_OK) {
        cf_fail(c, "mem_alloc for the dense retry: %s", dla_last_error());
        *temp = NULL, ok = 0;
    }
    if (ok) {
        rearrange(v, whole, dense, 1);
        if (dev->table->copy_to_device(dev->ctx, *temp, 0, dense, bytes) != DLA_OK) {
            cf_fail(c, "copy_to_device for the dense retry: %s", dla_last_error());
            ok = 0;
        }
    }
    free(whole);
    free(dense);
    return ok;
}

/* Writes the dense result `temp` back into view v. */
static int write_back(cf_case *c, const dla_view *v, dla_mem temp)
{
    const cf_device *dev = c->suite->dev[CF_DUT];
    const size_t es = dla_dtype_size(v->dtype);
    const size_t whole_bytes = (size_t)reach(v) * es, bytes = (size_t)dla__view_numel(v) * es;
    unsigned char *whole = malloc(whole_bytes), *dense = malloc(bytes);
    int ok = whole && dense;
    if (!ok)
        cf_fail(c, "out of host memory");
    if (ok && (dev->table->copy_to_host(dev->ctx, whole, v->mem, 0, whole_bytes) != DLA_OK ||
               dev->table->copy_to_host(dev->ctx, dense, temp, 0, bytes) != DLA_OK)) {
        cf_fail(c, "copy_to_host after the dense retry: %s", dla_last_error());
        ok = 0;
    }
    if (ok) {
        rearrange(v, whole, dense, 0);
        if (dev->table->copy_to_device(dev->ctx, v->mem, 0, whole, whole_bytes) != DLA_OK) {
            cf_fail(c, "copy_to_device after the dense retry: %s", dla_last_error());
            ok = 0;
        }
    }
    free(whole);
    free(dense);
    return ok;
}

/* The dense retry of a declined call on the device under test. */
static dla_status retry(cf_case *c, dla_kernel kernel, const void *args, double fill_value,
                        const char *why)
{
    const cf_device *dev = c->suite->dev[CF_DUT];
    const char *name = dla__kernel_name(kernel);
    if (kernel == DLA_KERNEL_CONV_FORWARD_FUSED || kernel == DLA_KERNEL_CONV_BACKWARD_DATA_FUSED) {
        /* The core runs the convolution and its epilogue as two launches
         * (core/launch.c): so does the suite. */
        const dla_conv_fused_args *f = args;
        c->retried = 1;
        const dla_status s = cf_call(c, CF_DUT,
                                     kernel == DLA_KERNEL_CONV_FORWARD_FUSED
                                         ? DLA_KERNEL_CONV_FORWARD
                                         : DLA_KERNEL_CONV_BACKWARD_DATA,
                                     &f->conv, 0);
        return s == DLA_OK ? cf_call(c, CF_DUT, DLA_KERNEL_FUSED, &f->epilogue, 0) : s;
    }
    if (!dla__kernel_retried(kernel)) {
        cf_fail(c, "declined with DLA_ERR_UNSUPPORTED (%s); the core rescues no decline of %s "
                   "(%s), so the user's op fails",
                why, name,
                kernel == DLA_KERNEL_GEMM ? "its operands are not views"
                                          : "it is how the core makes views dense");
        return DLA_ERR_UNSUPPORTED;
    }
    dla__kernel_args a;
    memset(&a, 0, sizeof a);
    memcpy(&a, args, args_size(kernel));
    dla__view_list l;
    dla__kernel_views(kernel, &a, &l);
    int sparse = 0;
    for (int i = 0; i < l.n; i++)
        sparse |= !dla__view_is_dense(l.v[i]);
    if (!sparse) {
        cf_fail(c, "declined dense views with DLA_ERR_UNSUPPORTED (%s); the core retries only "
                   "calls with a view that is not dense, so the user's op fails",
                why);
        return DLA_ERR_UNSUPPORTED;
    }
    dla_view orig[DLA__MAX_KERNEL_VIEWS];
    dla_mem temp[DLA__MAX_KERNEL_VIEWS] = {0};
    int ok = 1;
    for (int i = 0; i < l.n && ok; i++) {
        orig[i] = *l.v[i];
        if (dla__view_is_dense(l.v[i]))
            continue;
        if ((ok = make_dense(c, l.v[i], &temp[i])))
            dla__view_make_dense(l.v[i], temp[i]);
    }
    dla_status s = DLA_ERR_UNSUPPORTED;
    if (ok) {
        s = dla__kernel_call(dev->table, dev->ctx, kernel, &a, fill_value);
        if (s == DLA_ERR_UNSUPPORTED)
            cf_fail(c, "declined a call with non-dense views (%s) and then its dense retry too "
                       "(%s), so the user's op fails",
                    why, dla_last_error());
        c->retried = 1;
    }
    for (int i = 0; i < l.n && ok && s == DLA_OK; i++)
        if (temp[i] && l.written[i])
            ok = write_back(c, &orig[i], temp[i]);
    for (int i = 0; i < l.n; i++)
        if (temp[i])
            dev->table->mem_free(dev->ctx, temp[i]);
    return ok ? s : DLA_ERR_UNSUPPORTED;
}

dla_status cf_call(cf_case *c, int k, dla_kernel kernel, const void *args, double fill_value)
{
    const cf_device *dev = c->suite->dev[k];
    dla__kernel_args a;
    memset(&a, 0, sizeof a);
    memcpy(&a, args, args_size(kernel));
    dla_status s = dla__kernel_call(dev->table, dev->ctx, kernel, &a, fill_value);
    if (k != CF_DUT || s != DLA_ERR_UNSUPPORTED)
        return s;
    char why[320];
    snprintf(why, sizeof why, "%s", dla_last_error());
    return retry(c, kernel, args, fill_value, why);
}
