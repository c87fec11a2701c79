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
 * strided_copy may not decline: it is how views are made dense (and gemm
 * takes no views). Which views each kernel has, and which it writes, is
 * core/kernel_views.h, which check-plugin reads too.
 */
#include "core/launch.h"

#include "core/error.h"
#include "core/kernel_views.h"
#include "core/log.h"
#include "core/hooks.h"

#include <stdio.h>
#include <string.h>

dla_status dla__k_declined(dla_device *dev, dla_kernel k, const void *args, size_t size,
                           double fill_value, dla_status declined)
{
    if (declined != DLA_ERR_UNSUPPORTED)
        return declined;
    dla__kernel_args a;
    DLA_ASSERT(size <= sizeof a);
    memset(&a, 0, sizeof a);
    memcpy(&a, args, size);
    dla__view_list l;
    dla__kernel_views(k, &a, &l);
    int sparse = 0;
    for (int i = 0; i < l.n; i++)
        sparse |= !dla__view_is_dense(l.v[i]);
    if (!sparse)
        return declined; /* a decline of dense views fails the op: the plugin's message stands */
    char why[320];
    snprintf(why, sizeof why, "%s", dla_last_error());
    dla__log(DLA_LOG_DEBUG, "%s declined '%s' (%s): calling again with dense copies", dev->name,
             dla__kernel_name(k), why);

    /* The copies are the retry's own: a capture watching this thread sees
     * the declined call only, which a replay declines and retries again. */
    dla__observer *observers = dla__hooks_mute();
    dla_view orig[DLA__MAX_KERNEL_VIEWS];
    dla_mem temp[DLA__MAX_KERNEL_VIEWS] = {0};
    dla_status st = DLA_OK;
    for (int i = 0; i < l.n && st == DLA_OK; i++) {
        dla_view *v = l.v[i];
        orig[i] = *v;
        if (dla__view_is_dense(v))
            continue;
        const int64_t n = dla__view_numel(v);
        st = dev->table->mem_alloc(dev->ctx, (size_t)n * dla_dtype_size(v->dtype), &temp[i]);
        if (st != DLA_OK) {
            temp[i] = NULL;
            break;
        }
        dla__view_make_dense(v, temp[i]);
        /* Outputs too: a kernel may add into its output (scatter_add). */
        const int overwritten = k == DLA_KERNEL_FILL || k == DLA_KERNEL_RANDOM_UNIFORM ||
                                k == DLA_KERNEL_RANDOM_NORMAL;
        if (!overwritten)
            st = dla__k_copy(dev, v, &orig[i]);
    }
    if (st == DLA_OK) {
        st = dla__kernel_call(dev->table, dev->ctx, k, &a, fill_value);
        if (st == DLA_ERR_UNSUPPORTED)
            st = dla__fail(st, "%s declined '%s' for non-dense views (%s) and again for dense "
                           "copies of them: %s", dev->name, dla__kernel_name(k), why, dla_last_error());
    }
    for (int i = 0; i < l.n && st == DLA_OK; i++)
        if (temp[i] && l.written[i])
            st = dla__k_copy(dev, &orig[i], l.v[i]);
    for (int i = 0; i < l.n; i++)
        if (temp[i])
            dev->table->mem_free(dev->ctx, temp[i]);
    dla__hooks_unmute(observers);
    return st;
}
