/*
 * launch_dense.c - the dense retry of a declined kernel call.
 *
 * plugin.h lets any kernel member that takes views (every one but
 * strided_copy and gemm) answer DLA_ERR_UNSUPPORTED when a view it was
 * given is not dense; the host then makes those views dense and calls once
 * more. Views reach plugins permuted, sliced and broadcast (a CBT input of
 * a 1-d convolution arrives with x strides 6,1,3), so without the retry a
 * plugin with only a dense path would fail real ops that the conformance
 * suite never showed it.
 *
 * Each non-dense view gets a dense buffer on the same device, filled with
 * the strided_copy kernel (outputs too: scatter_add adds into y), the call
 * is made again on the dense views, and the written ones are copied back.
 * strided_copy is the one kernel that may not decline: it is how views are
 * made dense (launch.c runs a declined copy on the cpu plugin instead).
 */
#include "core/launch.h"

#include "core/error.h"
#include "core/plan.h"

#include <stdio.h>
#include <string.h>

/* The largest argument struct, so one copy fits every kernel. */
typedef union any_args {
    dla_view view[2];
    dla_unary_args unary;
    dla_binary_args binary;
    dla_reduce_args reduce;
    dla_ternary_args ternary;
    dla_conv_args conv;
    dla_pool_args pool;
    dla_index_args index;
    dla_fused_args fused;
    dla_fused_reduce_args fused_reduce;
    dla_random_args random;
} any_args;

#define MAX_VIEWS (DLA_FUSED_MAX_INPUTS + 2)

typedef struct view_list {
    dla_view *v[MAX_VIEWS];
    int written[MAX_VIEWS];
    int n;
} view_list;

static void add(view_list *l, dla_view *v, int written)
{
    if (v->mem == NULL)
        return; /* an optional view not given (bias, index, y2) */
    l->v[l->n] = v;
    l->written[l->n++] = written;
}

/* The memory views of kernel k's arguments in a, with the ones it writes.
 * fill and cast pass their views as a[0] (y) and a[1] (x). */
static void views_of(dla_kernel k, any_args *a, view_list *l)
{
    l->n = 0;
    switch (k) {
    case DLA_KERNEL_FILL: add(l, &a->view[0], 1); break;
    case DLA_KERNEL_CAST: add(l, &a->view[0], 1), add(l, &a->view[1], 0); break;
    case DLA_KERNEL_UNARY: add(l, &a->unary.y, 1), add(l, &a->unary.x, 0); break;
    case DLA_KERNEL_BINARY:
        add(l, &a->binary.z, 1), add(l, &a->binary.a, 0), add(l, &a->binary.b, 0);
        break;
    case DLA_KERNEL_REDUCE:
        add(l, &a->reduce.y, 1), add(l, &a->reduce.x, 0), add(l, &a->reduce.index, 1);
        break;
    case DLA_KERNEL_TERNARY:
        add(l, &a->ternary.z, 1), add(l, &a->ternary.cond, 0);
        add(l, &a->ternary.a, 0), add(l, &a->ternary.b, 0);
        break;
    case DLA_KERNEL_CONV_FORWARD:
    case DLA_KERNEL_CONV_BACKWARD_DATA:
    case DLA_KERNEL_CONV_BACKWARD_FILTER:
        add(l, &a->conv.x, k == DLA_KERNEL_CONV_BACKWARD_DATA);
        add(l, &a->conv.w, k == DLA_KERNEL_CONV_BACKWARD_FILTER);
        add(l, &a->conv.y, k == DLA_KERNEL_CONV_FORWARD);
        add(l, &a->conv.bias, 0);
        break;
    case DLA_KERNEL_POOL_FORWARD:
    case DLA_KERNEL_POOL_BACKWARD: {
        const int fwd = k == DLA_KERNEL_POOL_FORWARD;
        add(l, &a->pool.x, !fwd), add(l, &a->pool.y, fwd), add(l, &a->pool.index, fwd);
        break;
    }
    case DLA_KERNEL_GATHER:
    case DLA_KERNEL_SCATTER_ADD:
        add(l, &a->index.y, 1), add(l, &a->index.x, 0), add(l, &a->index.index, 0);
        break;
    case DLA_KERNEL_FUSED:
        add(l, &a->fused.y, 1);
        for (int i = 0; i < a->fused.ninputs && i < DLA_FUSED_MAX_INPUTS; i++)
            add(l, &a->fused.inputs[i], 0);
        break;
    case DLA_KERNEL_FUSED_REDUCE:
    case DLA_KERNEL_FUSED_REDUCE_PAIR:
        /* program.y gives only the space: no memory. */
        add(l, &a->fused_reduce.y, 1);
        if (a->fused_reduce.struct_size >= sizeof(dla_fused_reduce_args))
            add(l, &a->fused_reduce.y2, 1);
        for (int i = 0; i < a->fused_reduce.program.ninputs && i < DLA_FUSED_MAX_INPUTS; i++)
            add(l, &a->fused_reduce.program.inputs[i], 0);
        break;
    case DLA_KERNEL_RANDOM_UNIFORM:
    case DLA_KERNEL_RANDOM_NORMAL: add(l, &a->random.y, 1); break;
    default: break; /* strided_copy and gemm are not retried */
    }
}

int dla__view_is_dense(const dla_view *v)
{
    int64_t s = 1;
    for (int d = 0; d < v->ndims; d++)
        if (v->dims[d] == 0)
            return 1; /* nothing to touch */
    for (int d = 0; d < v->ndims; d++) {
        if (v->strides[d] != s)
            return 0;
        s *= v->dims[d];
    }
    return 1;
}

static int64_t numel(const dla_view *v)
{
    int64_t n = 1;
    for (int d = 0; d < v->ndims; d++)
        n *= v->dims[d];
    return n;
}

/* The kernel call itself, on the (copied) arguments (fill, whose value
 * is not a view, is called by the retry itself). */
static dla_status call(dla_device *dev, dla_kernel k, any_args *a)
{
    const dla_plugin *t = dev->table;
    void *ctx = dev->ctx;
    switch (k) {
    case DLA_KERNEL_CAST: return t->cast(ctx, &a->view[0], &a->view[1]);
    case DLA_KERNEL_UNARY: return t->unary(ctx, &a->unary);
    case DLA_KERNEL_BINARY: return t->binary(ctx, &a->binary);
    case DLA_KERNEL_REDUCE: return t->reduce(ctx, &a->reduce);
    case DLA_KERNEL_TERNARY: return t->ternary(ctx, &a->ternary);
    case DLA_KERNEL_CONV_FORWARD: return t->conv_forward(ctx, &a->conv);
    case DLA_KERNEL_CONV_BACKWARD_DATA: return t->conv_backward_data(ctx, &a->conv);
    case DLA_KERNEL_CONV_BACKWARD_FILTER: return t->conv_backward_filter(ctx, &a->conv);
    case DLA_KERNEL_POOL_FORWARD: return t->pool_forward(ctx, &a->pool);
    case DLA_KERNEL_POOL_BACKWARD: return t->pool_backward(ctx, &a->pool);
    case DLA_KERNEL_GATHER: return t->gather(ctx, &a->index);
    case DLA_KERNEL_SCATTER_ADD: return t->scatter_add(ctx, &a->index);
    case DLA_KERNEL_FUSED: return t->fused(ctx, &a->fused);
    case DLA_KERNEL_FUSED_REDUCE:
    case DLA_KERNEL_FUSED_REDUCE_PAIR: return t->fused_reduce(ctx, &a->fused_reduce);
    case DLA_KERNEL_RANDOM_UNIFORM:
    case DLA_KERNEL_RANDOM_NORMAL: return t->random(ctx, &a->random);
    default: return DLA_ERR_STATE;
    }
}

static const char *kernel_name(dla_kernel k)
{
#define DLA__KERNEL_STR(name, str) str,
    static const char *const names[] = {DLA_KERNEL_LIST(DLA__KERNEL_STR)};
#undef DLA__KERNEL_STR
    return (unsigned)k < DLA_KERNEL_COUNT ? names[k] : "?";
}

dla_status dla__k_declined(dla_device *dev, dla_kernel k, const void *args, size_t size,
                           double fill_value, dla_status declined)
{
    if (declined != DLA_ERR_UNSUPPORTED)
        return declined;
    any_args a;
    DLA_ASSERT(size <= sizeof a);
    memset(&a, 0, sizeof a);
    memcpy(&a, args, size);
    view_list l;
    views_of(k, &a, &l);
    int sparse = 0;
    for (int i = 0; i < l.n; i++)
        sparse |= !dla__view_is_dense(l.v[i]);
    if (!sparse)
        return declined; /* a decline of dense views fails the op: the plugin's message stands */
    char why[320];
    snprintf(why, sizeof why, "%s", dla_last_error());

    /* The copies are the retry's own: a capture watching this thread sees
     * the declined call only, which a replay declines and retries again. */
    dla__capture *capture = dla__capture_current;
    dla__capture_current = NULL;
    dla_view orig[MAX_VIEWS];
    dla_mem temp[MAX_VIEWS] = {0};
    dla_status st = DLA_OK;
    for (int i = 0; i < l.n && st == DLA_OK; i++) {
        dla_view *v = l.v[i];
        orig[i] = *v;
        if (dla__view_is_dense(v))
            continue;
        const int64_t n = numel(v);
        st = dev->table->mem_alloc(dev->ctx, (size_t)n * dla_dtype_size(v->dtype), &temp[i]);
        if (st != DLA_OK) {
            temp[i] = NULL;
            break;
        }
        v->mem = temp[i];
        v->offset = 0;
        for (int64_t d = 0, s = 1; d < v->ndims; s *= v->dims[d], d++)
            v->strides[d] = s;
        /* Outputs too: a kernel may add into its output (scatter_add). */
        const int overwritten = k == DLA_KERNEL_FILL || k == DLA_KERNEL_RANDOM_UNIFORM ||
                                k == DLA_KERNEL_RANDOM_NORMAL;
        if (!overwritten)
            st = dla__k_copy(dev, v, &orig[i]);
    }
    if (st == DLA_OK) {
        st = k == DLA_KERNEL_FILL ? dev->table->fill(dev->ctx, &a.view[0], fill_value)
                                  : call(dev, k, &a);
        if (st == DLA_ERR_UNSUPPORTED)
            st = dla__fail(st, "%s declined '%s' for non-dense views (%s) and again for dense "
                           "copies of them: %s", dev->name, kernel_name(k), why, dla_last_error());
    }
    for (int i = 0; i < l.n && st == DLA_OK; i++)
        if (temp[i] && l.written[i])
            st = dla__k_copy(dev, &orig[i], l.v[i]);
    for (int i = 0; i < l.n; i++)
        if (temp[i])
            dev->table->mem_free(dev->ctx, temp[i]);
    dla__capture_current = capture;
    return st;
}
