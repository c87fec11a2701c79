/*
 * spmd_net.c - every worker starts from rank root's network: its
 * Learnables, State and fixed parameters (input normalization statistics)
 * broadcast into new tensors, one broadcast per table.
 *
 * Why new tensors: a network's values may share storage with another
 * network (dla_net_copy) or a user's tensor; a broadcast writes in place.
 */
#include <dlaccel.h>

#include <stdio.h>

#include "nn/nn.h"
#include "nn/spmd_impl.h"

static dla_status broadcast_table(dla_table *t, int root, const char *what)
{
    int n = t->count;
    /* An empty table is broadcast too (a check of the counts alone): a
     * rank whose network has rows where another's has none then fails
     * with it instead of leaving it waiting. */
    dla_tensor **copy = dla__nn_calloc((size_t)(n ? n : 1), sizeof *copy);
    if (!copy)
        return dla__spmd_take_part_failed(
            dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "dla_spmd_broadcast_net: out of memory"), root);
    dla_scope_begin();
    dla_status st = DLA_OK;
    for (int i = 0; st == DLA_OK && i < n; i++) {
        /* dla_cat of one tensor is a dense copy with its dims and format. */
        copy[i] = dla_cat(1, 1, &t->values[i]);
        st = dla_tensor_status(copy[i]);
    }
    /* A copy that failed is an error tensor: the broadcast refuses it,
     * taking part, and every rank fails with this one. */
    st = dla_broadcast(n, copy, root);
    for (int i = 0; st == DLA_OK && i < n; i++) {
        dla_tensor *old = t->values[i];
        t->values[i] = dla_tensor_retain(copy[i]);
        dla_tensor_release(old);
    }
    dla_scope_end();
    dla__nn_free(copy);
    if (st != DLA_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        return dla__nn_fail(st, "dla_spmd_broadcast_net: %s: %s", what, msg);
    }
    return DLA_OK;
}

DLA_API dla_status dla_spmd_broadcast_net(dla_net *net, int root)
{
    if (!net || !dla_net_initialized(net))
        return dla__spmd_take_part_failed(dla__nn_fail(DLA_ERR_INVALID_ARGUMENT,
                                             "dla_spmd_broadcast_net: argument net is %s",
                                             net ? "not initialized" : "NULL"),
                                root);
    int size = dla_spmd_size();
    if (root < 0 || root >= size)
        return dla__spmd_take_part_failed(dla__nn_fail(DLA_ERR_INVALID_ARGUMENT,
                                             "dla_spmd_broadcast_net: root %d is not a rank of "
                                             "0..%d", root, size - 1),
                                root);
    static const char *const what[DLA__PARAM_KIND_COUNT] = {"Learnables", "State", "fixed parameters"};
    dla_status st = DLA_OK;
    for (int k = 0; st == DLA_OK && k < DLA__PARAM_KIND_COUNT; k++)
        st = broadcast_table(&net->tables[k], root, what[k]);
    return st;
}
