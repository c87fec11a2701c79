/*
 * trace_replay.c - running a recorded trace, and printing one.
 *
 * Replay walks the entries in order and calls each op's forward through
 * dla__run_op, with no user code, no scope and no key checks in between.
 * A value is released right after its last reader, so the device allocator
 * reuses memory as it goes. Constants recorded on the trace's device, when
 * it replays on another, are copied over once per replay
 * (dla__trace_const_moves).
 *
 * That is the plain replay. A replay first offers the call to the trace's
 * plan for the device (core/plan.h), which makes the same launches without
 * the ops around them; the plain one runs when the planner steps aside.
 */
#include "core/alloc.h"
#include "core/error.h"
#include "core/ops.h"
#include "core/plan.h"
#include "core/tape.h"
#include "core/tensor.h"
#include "core/trace.h"

#include <stdio.h>
#include <string.h>

static dla_status replay_plain(const dla__trace *t, dla_tensor *const *in, dla_tensor **out)
{
    dla_tensor **v = dla__calloc((size_t)(t->nvalues ? t->nvalues : 1), sizeof *v);
    unsigned char *owned = dla__calloc((size_t)(t->nvalues ? t->nvalues : 1), 1);
    if (!v || !owned) {
        dla__free(v);
        dla__free(owned);
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot replay (%d values)",
                         t->nvalues);
    }
    dla_device *dev = t->nin ? in[0]->storage->device : dla_device_current();
    dla_status st = DLA_OK;
    for (int id = 0; id < t->nvalues && st == DLA_OK; id++) {
        const dla__trace_value *val = &t->values[id];
        if (val->kind == DLA__VALUE_INPUT) {
            v[id] = in[val->index];
        } else if (val->kind == DLA__VALUE_CONST) {
            dla_tensor *c = t->consts[val->index];
            if (dla__trace_const_moves(t, val->index, dev)) {
                /* A device move as an op, so an outer recording sees it. */
                dla_scope_begin();
                dla_tensor *moved = dla_tensor_to_device(c, dev);
                if (moved->status == DLA_OK)
                    v[id] = dla_tensor_retain(moved);
                else
                    st = moved->status;
                dla_scope_end();
                owned[id] = 1;
            } else {
                v[id] = c;
            }
        }
    }
    for (int k = 0; k < t->nentries && st == DLA_OK; k++) {
        const dla__trace_entry *e = &t->entries[k];
        dla_tensor *ins[DLA__OP_MAX_IO] = {0}, *res[DLA__OP_MAX_IO] = {0}, *saved[DLA__OP_MAX_IO] = {0};
        for (int i = 0; i < e->nin; i++)
            ins[i] = v[e->in[i]];
        /* Off the tape eagerly (a nested dla_feval's op, a plain sweep's):
         * off any tape that hears this replay too. */
        if (e->off_tape)
            dla__recording_pause();
        st = dla__run_op(e->op, e->attrs, e->attrs_size, e->nin, ins, res, saved);
        if (e->off_tape)
            dla__recording_resume();
        if (st != DLA_OK)
            break;
        for (int i = 0; i < e->nout + e->nsaved; i++) {
            int id = e->out[i];
            v[id] = i < e->nout ? res[i] : saved[i - e->nout];
            owned[id] = 1;
            if (t->values[id].last_use < 0 && !t->values[id].is_output) {
                dla_tensor_release(v[id]); /* nobody reads it */
                v[id] = NULL;
            }
        }
        for (int i = 0; i < e->nin; i++) {
            int id = e->in[i];
            if (t->values[id].last_use == k && !t->values[id].is_output && owned[id]) {
                dla_tensor_release(v[id]);
                v[id] = NULL;
                owned[id] = 0;
            }
        }
    }
    for (int i = 0; i < t->nout; i++)
        out[i] = st == DLA_OK ? dla_tensor_retain(v[t->outputs[i]]) : NULL;
    for (int id = 0; id < t->nvalues; id++)
        if (owned[id])
            dla_tensor_release(v[id]);
    dla__free(v);
    dla__free(owned);
    return st;
}

int dla__trace_const_moves(const dla__trace *t, int j, const dla_device *dev)
{
    const dla_device *on = t->consts[j]->storage->device;
    return dev && on != dev &&
           (t->device ? on == t->device : !(t->const_pinned && t->const_pinned[j]));
}

dla_status dla__trace_replay(const dla__trace *t, dla_tensor *const *in, dla_tensor **out)
{
    dla_status st;
    if (!dla__plan_replay(t, in, out, &st))
        st = replay_plain(t, in, out);
    return st == DLA_OK ? dla__trace_unalias(t, t->nout, out) : st;
}

int dla__trace_stale(const dla__trace *t, char *why, size_t size)
{
    for (int i = 0; t->const_outer && i < t->nconsts; i++) {
        const dla__storage *st = t->consts[i]->storage;
        if (!st)
            continue;
        int outer = t->const_outer[i];
        int written = atomic_load_explicit(&st->writes, memory_order_relaxed) != t->const_writes[i];
        /* Every header on the storage is a trace's own: the caller's are gone. */
        int dropped = outer && atomic_load_explicit(&st->refcount, memory_order_acquire) ==
                                   atomic_load_explicit(&st->trace_views, memory_order_acquire);
        if (!written && !dropped)
            continue;
        char buf[DLA__DIMS_BUF];
        if (outer)
            snprintf(why, size, "constant %d (%s %s), made outside the function and baked into "
                     "its trace, %s; pass it as a tensor input (a network: "
                     "dla_accel_options.ctx_kind)",
                     i + 1, dla__tensor_dims_str(t->consts[i], buf, sizeof buf),
                     dla_dtype_name(t->consts[i]->dtype),
                     written ? "was written since it was recorded"
                             : "is held only by the trace now: the caller replaced or released it");
        else
            snprintf(why, size, "constant %d (%s %s), made inside the function while it was "
                     "recorded, was written in place since (a collective on a tensor the function "
                     "kept); copy a tensor before writing to it in place",
                     i + 1, dla__tensor_dims_str(t->consts[i], buf, sizeof buf),
                     dla_dtype_name(t->consts[i]->dtype));
        return 1;
    }
    return 0;
}

static int own_storage(const dla__trace *t, const dla__storage *st)
{
    for (int i = 0; i < t->nconsts; i++)
        if ((!t->const_outer || !t->const_outer[i]) && t->consts[i]->storage == st)
            return 1;
    return 0;
}

dla_status dla__trace_unalias(const dla__trace *t, int nout, dla_tensor **out)
{
    /* A recorded trace whose function made no constant owns none (the
     * usual case: every replay would compare each result with each
     * constant for nothing). */
    if (t->const_outer && !t->inner_consts)
        return DLA_OK;
    for (int i = 0; i < nout; i++) {
        dla_tensor *x = out[i];
        if (!x || x->status != DLA_OK || !x->storage || !own_storage(t, x->storage))
            continue;
        dla_tensor *c = dla__copy("a trace's result that is its constant", x);
        if (!c) {
            dla_status st = dla_last_status();
            for (int k = 0; k < nout; k++) {
                dla_tensor_release(out[k]);
                out[k] = NULL;
            }
            return st;
        }
        dla_tensor_release(x);
        out[i] = c;
    }
    return DLA_OK;
}

static const char *kind_name(dla__value_kind k)
{
    return k == DLA__VALUE_INPUT ? "input" : k == DLA__VALUE_CONST ? "const" : "op";
}

static size_t value_bytes(const dla__trace_value *v)
{
    int64_t n = 1;
    for (int i = 0; i < v->ndims; i++)
        n *= v->dims[i];
    return (size_t)n * dla_dtype_size(v->dtype);
}

static void print_value(FILE *f, const dla__trace *t, int id)
{
    const dla__trace_value *v = &t->values[id];
    char buf[DLA__DIMS_BUF];
    fprintf(f, "%%%d:%s %s%s%s", id, dla__dims_str(buf, sizeof buf, v->ndims, v->dims),
            dla_dtype_name(v->dtype), v->format[0] ? " " : "", v->format);
}

void dla__trace_print(const dla__trace *t, FILE *f)
{
    size_t inter = 0, consts = 0;
    for (int id = 0; id < t->nvalues; id++) {
        if (t->values[id].kind == DLA__VALUE_OP)
            inter += value_bytes(&t->values[id]);
        else if (t->values[id].kind == DLA__VALUE_CONST)
            consts += value_bytes(&t->values[id]);
    }
    fprintf(f, "trace: %d inputs, %d outputs, %d ops (%d RNG slots), %d constants (%zu bytes, %d "
            "made inside the function), %d values; recorded in %.3f ms\n", t->nin, t->nout,
            t->nentries, t->rng_entries, t->nconsts, consts, t->inner_consts, t->nvalues,
            t->record_seconds * 1e3);
    if (t->data_dependent)
        fprintf(f, "data-dependent: %s (%d host reads)\n", t->data_dependent_note,
                t->data_dependent);
    for (int id = 0; id < t->nvalues; id++) {
        const dla__trace_value *v = &t->values[id];
        if (v->kind == DLA__VALUE_OP)
            continue;
        fprintf(f, "  %s %d: ", kind_name(v->kind), v->index);
        print_value(f, t, id);
        fputc('\n', f);
    }
    for (int k = 0; k < t->nentries; k++) {
        const dla__trace_entry *e = &t->entries[k];
        fprintf(f, "  [%3d] ", k);
        for (int i = 0; i < e->nout + e->nsaved; i++) {
            if (i)
                fputs(", ", f);
            print_value(f, t, e->out[i]);
        }
        fprintf(f, " = %s%s%s(", e->op->name, e->op->random ? " [rng]" : "",
                e->off_tape ? " [off tape]" : "");
        for (int i = 0; i < e->nin; i++)
            fprintf(f, i ? ", %%%d" : "%%%d", e->in[i]);
        fputs(")\n", f);
    }
    fputs("  outputs:", f);
    for (int i = 0; i < t->nout; i++)
        fprintf(f, " %%%d", t->outputs[i]);
    fprintf(f, "\n  intermediates: %zu bytes in all\n", inter);
    dla__plan_print(t, f);
}
