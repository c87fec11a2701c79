/*
 * trace_api.c - the public handle on a trace: take one from an accelerated
 * function, replay it on any device, print it.
 *
 * dla_trace is dla__trace itself; its reference count is shared with the
 * cache entry that holds it, so a handle outlives an eviction.
 */
#include "core/error.h"
#include "core/handle.h"
#include "core/tensor.h"
#include "core/trace.h"

#include <string.h>

struct dla_trace; /* == dla__trace */

/* Nonzero when t is a live trace; else logs why for op (docs/checks.md). */
static int trace_live(const dla_trace *t, const char *op)
{
    uint32_t m = ((const dla__trace *)t)->magic;
    if (m == DLA__HANDLE_TRACE)
        return 1;
    dla__misuse(DLA_ERR_INVALID_ARGUMENT, "%s: %p is %s", op, (const void *)t,
                m == DLA__HANDLE_DEAD ? "a trace released already (released twice, or used after "
                "its last dla_trace_release)" : "not a trace handle");
    return 0;
}

DLA_API dla_trace *dla_trace_retain(dla_trace *t)
{
    if (t && trace_live(t, "dla_trace_retain"))
        __atomic_add_fetch(&((dla__trace *)t)->refs, 1, __ATOMIC_ACQ_REL);
    return t;
}

DLA_API void dla_trace_release(dla_trace *t)
{
    if (!t || !trace_live(t, "dla_trace_release"))
        return;
    /* Every reference left is a cache's: releasing one here (a handle of
     * dla_accel_trace released twice) would leave the cache freeing a
     * freed trace when it evicts it or is freed (an abort in free). */
    dla__trace *tr = (dla__trace *)t;
    if (__atomic_load_n(&tr->refs, __ATOMIC_ACQUIRE) <=
        __atomic_load_n(&tr->cache_refs, __ATOMIC_ACQUIRE)) {
        dla__misuse(DLA_ERR_INVALID_ARGUMENT, "dla_trace_release: %p: every reference left is "
                    "its accelerated function's cache (released more often than dla_accel_trace "
                    "and dla_trace_retain gave it)", (const void *)t);
        return;
    }
    dla__trace_free(tr);
}

DLA_API dla_status dla_trace_print(const dla_trace *t, FILE *f)
{
    if (!t || !f)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_trace_print: argument %s is NULL",
                         t ? "f" : "t");
    if (!trace_live(t, "dla_trace_print"))
        return dla_last_status();
    dla__trace_print((const dla__trace *)t, f);
    return DLA_OK;
}

/* A slot recorded as the same tensor as an earlier one has no value: the
 * trace reads the earlier slot in its place, so it must be given that
 * tensor again (two tensors would be computed as one, silently). */
static dla_status check_aliases(const char *op, const dla__trace *t, dla_tensor *const *in)
{
    if (t->in_alias) {
        for (int i = 0; i < t->nin; i++) {
            const int k = t->in_alias[i];
            if (k >= 0 && in[i] != in[k])
                return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: input %d was recorded as the same "
                                 "tensor as input %d, and the trace reads input %d in both "
                                 "places: pass that tensor as both (a trace recorded with two "
                                 "tensors computes with two)", op, i + 1, k + 1, k + 1);
        }
        return DLA_OK;
    }
    /* A loaded trace of format 1.0: the file does not name the earlier slot. */
    for (int i = 0; t->in_alias_unknown && i < t->nin; i++) {
        int valued = 0;
        for (int id = 0; id < t->nvalues && !valued; id++)
            valued = t->values[id].kind == DLA__VALUE_INPUT && t->values[id].index == i;
        int same = 0;
        for (int k = 0; k < i && !valued && !same; k++)
            same = in[k] == in[i];
        if (!valued && !same)
            return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: input %d was recorded as the same "
                             "tensor as an earlier input, which the trace reads in its place: "
                             "pass that tensor again", op, i + 1);
    }
    return DLA_OK;
}

DLA_API dla_status dla_trace_replay(dla_trace *handle, int nin, dla_tensor *const *in, int nout,
                                    dla_tensor **out)
{
    static const char op[] = "dla_trace_replay";
    const dla__trace *t = (const dla__trace *)handle;
    dla_status st = DLA_OK;
    for (int i = 0; i < nout && out; i++)
        out[i] = NULL;
    char a[DLA__DIMS_BUF], b[DLA__DIMS_BUF];
    /* in may be NULL when nin is 0: naming it by !in alone blamed in for
     * a NULL out. */
    if (!t || (nin && !in) || (nout && !out))
        st = dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", op,
                       !t ? "t" : nin && !in ? "in" : "out");
    else if (!trace_live(handle, op))
        st = dla_last_status();
    else if (nin != t->nin || nout != t->nout)
        st = dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: %d input%s and %d output%s; the trace has %d "
                       "and %d", op, nin, nin == 1 ? "" : "s", nout, nout == 1 ? "" : "s", t->nin,
                       t->nout);
    /* Every slot, the ones the trace reads and the aliases it does not. */
    for (int i = 0; st == DLA_OK && i < t->nin; i++) {
        const dla_tensor *x = in[i];
        if (!x || x->status != DLA_OK)
            st = x ? dla__fail(x->status, "%s", x->message)
                   : dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: input %d is NULL", op, i + 1);
    }
    if (st == DLA_OK)
        st = check_aliases(op, t, in);
    for (int id = 0; st == DLA_OK && id < t->nvalues; id++) {
        const dla__trace_value *v = &t->values[id];
        if (v->kind != DLA__VALUE_INPUT)
            continue;
        const dla_tensor *x = in[v->index];
        if (x->dtype != v->dtype)
            st = dla__fail(DLA_ERR_DTYPE, "%s: input %d is %s; the trace was recorded with %s", op,
                           v->index + 1, dla_dtype_name(x->dtype), dla_dtype_name(v->dtype));
        else if (x->ndims != v->ndims || memcmp(x->dims, v->dims, (size_t)v->ndims * sizeof *v->dims))
            st = dla__fail(DLA_ERR_SHAPE, "%s: input %d is %s; the trace was recorded with %s", op,
                           v->index + 1, dla__tensor_dims_str(x, a, sizeof a),
                           dla__dims_str(b, sizeof b, v->ndims, v->dims));
        /* The labels decided what the ops did when they were recorded (the
         * dim a softmax or a sum ran over): an input labelled otherwise
         * would get the recorded computation and labels, silently. */
        else if (strcmp(x->format, v->format))
            st = dla__fail(DLA_ERR_FORMAT, "%s: input %d is %s \"%s\"; the trace was recorded "
                           "with \"%s\"", op, v->index + 1, dla__tensor_dims_str(x, a, sizeof a),
                           x->format, v->format);
    }
    if (st == DLA_OK) {
        dla_device *outer =
            dla__replay_device_swap(t->nin ? in[0]->storage->device : dla_device_current());
        dla_device *outer_from = dla__replay_from_swap(t->device);
        st = dla__trace_replay(t, in, out);
        dla__replay_from_swap(outer_from);
        dla__replay_device_swap(outer);
    }
    for (int i = 0; i < nout && out; i++) {
        if (!out[i])
            out[i] = dla__error_tensor();
        out[i] = dla__return(out[i]);
    }
    return st;
}
