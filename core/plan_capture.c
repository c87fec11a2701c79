/*
 * plan_capture.c - the planning replay: the first replay of a trace on a
 * device runs as the plain replay does, with this file watching.
 *
 * While it runs, the capture subscribes to the hooks (core/hooks.h) and so
 * hears of every storage made and freed (tensor.c) and every kernel launch
 * with a copy of its arguments (launch.c). Each memory
 * handle a launch names is placed at once, while the handle still means
 * what it meant then (a freed handle is soon handed out again): an input's
 * storage, a constant's, or a buffer this replay made. Entries that moved
 * data to or from the host, or draw random numbers without the device's
 * random kernel, are marked as op invocations; for them the record keeps
 * where each input value lives, so the plan can hand them tensors later.
 *
 * Entries whose results nobody reads are not run at all: a dead op costs
 * nothing here and is left out of the plan (random ops and in-place ones
 * always run, for the stream's position and for what they write).
 */
#include "core/alloc.h"
#include "core/error.h"
#include "core/plan_impl.h"

#include <string.h>

/* Makes room for one more element of *arr (count *n, capacity *cap). */
static int grow(void **arr, int *cap, int n, size_t elsize)
{
    if (n < *cap)
        return 1;
    int c = *cap ? *cap * 2 : 32;
    void *p = dla__realloc(*arr, (size_t)c * elsize);
    if (!p)
        return 0;
    *arr = p;
    *cap = c;
    return 1;
}

void dla__capture_fail(dla__capture *c) { c->failed = 1; }

/* The live buffer whose memory is mem; -1 when none. Newest first: a
 * handle names at most one live buffer, and recent ones are hit most. */
static int live_buffer(const dla__capture *c, dla_mem mem)
{
    for (int i = c->nbufs; i-- > 0;)
        if (c->bufs[i].died < 0 && c->bufs[i].mem == mem)
            return i;
    return -1;
}

static dla__slot place(const dla__capture *c, dla_mem mem)
{
    if (!mem)
        return (dla__slot){DLA__SLOT_NONE, 0, 0};
    int b = live_buffer(c, mem);
    if (b >= 0)
        return (dla__slot){DLA__SLOT_BUFFER, b, 0};
    const dla__trace *t = c->t;
    for (int i = 0; i < t->nin; i++)
        if (c->in[i]->storage->mem == mem)
            return (dla__slot){DLA__SLOT_INPUT, i, 0};
    for (int j = 0; j < t->nconsts; j++)
        if (c->consts[j]->storage->mem == mem)
            return (dla__slot){DLA__SLOT_CONST, j, 0};
    return (dla__slot){DLA__SLOT_UNKNOWN, 0, 0};
}

static void heard_launch(dla__observer *self, dla_device *dev, const dla__launch *l)
{
    dla__capture *c = (dla__capture *)self;
    if (c->failed || c->entry < 0)
        return;
    if (!grow((void **)&c->launches, &c->caplaunches, c->nlaunches, sizeof *c->launches)) {
        c->failed = 1;
        return;
    }
    dla__cap_launch *cl = &c->launches[c->nlaunches];
    memset(cl, 0, sizeof *cl);
    cl->l = *l;
    size_t bytes;
    const void *block = dla__launch_block(l, &bytes);
    if (block) {
        /* The caller's arguments live on its stack: keep a copy. */
        void *copy = dla__malloc(bytes);
        if (!copy) {
            cl->l.kind = DLA__LAUNCH_FILL; /* owns nothing to free */
            c->failed = 1;
            return;
        }
        memcpy(copy, block, bytes);
        if (l->kind == DLA__LAUNCH_FUSED)
            cl->l.u.fused = copy;
        else if (l->kind == DLA__LAUNCH_FUSED_REDUCE)
            cl->l.u.fused_reduce = copy;
        else if (l->kind == DLA__LAUNCH_FUSED_MULTI)
            cl->l.u.fused_multi = copy;
        else
            cl->l.u.conv_fused = copy;
    }
    c->nlaunches++;
    c->drew |= l->kind == DLA__LAUNCH_RANDOM;
    cl->dev = dev;
    cl->entry = c->entry;
    dla__field f[DLA__LAUNCH_MAX_FIELDS];
    int n = dla__launch_fields(&cl->l, f);
    for (int i = 0; i < n; i++)
        cl->slot[i] = place(c, *f[i].mem);
}

static void heard_transfer(dla__observer *self) { ((dla__capture *)self)->transfer = 1; }

static void heard_storage_made(dla__observer *self, const dla__storage *st)
{
    dla__capture *c = (dla__capture *)self;
    if (c->failed)
        return;
    if (!grow((void **)&c->bufs, &c->capbufs, c->nbufs, sizeof *c->bufs)) {
        c->failed = 1;
        return;
    }
    c->bufs[c->nbufs++] = (dla__cap_buffer){
        .st = st, .mem = st->mem, .dev = st->device, .bytes = st->bytes, .entry = c->entry,
        .died = -1, .opval = -1, .fresh = -1, .first = -1, .last = -1,
    };
}

static void heard_storage_freed(dla__observer *self, const dla__storage *st)
{
    dla__capture *c = (dla__capture *)self;
    for (int i = c->nbufs; i-- > 0;)
        if (c->bufs[i].died < 0 && c->bufs[i].st == st) {
            c->bufs[i].died = c->time++;
            return;
        }
}

void dla__capture_free_record(dla__capture *c)
{
    size_t bytes;
    for (int i = 0; i < c->nlaunches; i++)
        dla__free(dla__launch_block(&c->launches[i].l, &bytes));
    dla__free(c->bufs);
    dla__free(c->launches);
    dla__free(c->entries);
    dla__free(c->specs);
    dla__free(c->sources);
    dla__free(c->out_src);
    dla__free(c->out_mem);
    memset(c, 0, sizeof *c);
}

/* Where the plan will find value id (tensor x now) when it must hand it
 * out: appended to c->sources. */
static void add_source(dla__capture *c, int id, const dla_tensor *x)
{
    if (c->failed)
        return;
    const dla__trace_value *v = &c->t->values[id];
    dla__source s;
    if (v->kind == DLA__VALUE_INPUT) {
        s = (dla__source){DLA__SRC_INPUT, v->index};
    } else if (v->kind == DLA__VALUE_CONST) {
        s = (dla__source){DLA__SRC_CONST, v->index};
    } else if (c->entries[v->index].invoke) {
        s = (dla__source){DLA__SRC_RT, id};
    } else {
        if (!grow((void **)&c->specs, &c->capspecs, c->nspecs, sizeof *c->specs)) {
            c->failed = 1;
            return;
        }
        dla__spec *sp = &c->specs[c->nspecs];
        memset(sp, 0, sizeof *sp);
        sp->value = id;
        sp->slot = place(c, x->storage->mem);
        sp->dtype = x->dtype;
        sp->ndims = x->ndims;
        memcpy(sp->dims, x->dims, sizeof sp->dims);
        memcpy(sp->strides, x->strides, sizeof sp->strides);
        sp->offset = x->offset;
        if (sp->slot.kind == DLA__SLOT_INPUT)
            sp->offset -= c->in[sp->slot.id]->offset;
        memcpy(sp->format, x->format, sizeof sp->format);
        s = (dla__source){DLA__SRC_SPEC, c->nspecs++};
    }
    if (!grow((void **)&c->sources, &c->capsources, c->nsources, sizeof *c->sources)) {
        c->failed = 1;
        return;
    }
    c->sources[c->nsources++] = s;
}

/* Marks the entries whose results something reads (or that must run
 * anyway), and each value's last reader among them. need is nvalues
 * zeroed bytes, taken with the capture's other arrays: a liveness pass
 * that could fail would have to mark every value read to the end, or the
 * replay would release intermediates its later entries still read. */
static void liveness(const dla__trace *t, dla__cap_entry *entries, int *last_use,
                     unsigned char *need)
{
    for (int i = 0; i < t->nvalues; i++)
        last_use[i] = -1;
    for (int i = 0; i < t->nout; i++)
        need[t->outputs[i]] = 1;
    for (int k = t->nentries; k-- > 0;) {
        const dla__trace_entry *e = &t->entries[k];
        int live = e->op->random || e->op->inplace;
        for (int i = 0; i < e->nout + e->nsaved && !live; i++)
            live = need[e->out[i]];
        entries[k].live = live;
        for (int i = 0; live && i < e->nin; i++)
            need[e->in[i]] = 1;
    }
    for (int k = 0; k < t->nentries; k++)
        for (int i = 0; entries[k].live && i < t->entries[k].nin; i++)
            last_use[t->entries[k].in[i]] = k;
}

dla_status dla__plan_capture(dla__plan *p, const dla__trace *t, dla_tensor *const *in,
                             dla_tensor **out)
{
    dla__capture c;
    memset(&c, 0, sizeof c);
    c.t = t;
    c.dev = p->dev;
    c.in = in;
    c.consts = p->consts;
    c.entry = -1;
    size_t nv = (size_t)(t->nvalues ? t->nvalues : 1);
    c.entries = dla__calloc((size_t)(t->nentries ? t->nentries : 1), sizeof *c.entries);
    c.out_src = dla__calloc((size_t)(t->nout ? t->nout : 1), sizeof *c.out_src);
    c.out_mem = dla__calloc((size_t)(t->nout ? t->nout : 1), sizeof *c.out_mem);
    int *last_use = dla__malloc(nv * sizeof *last_use);
    dla_tensor **v = dla__calloc(nv, sizeof *v);
    unsigned char *owned = dla__calloc(nv, 1), *need = dla__calloc(nv, 1);
    if (!c.entries || !c.out_src || !c.out_mem || !last_use || !v || !owned || !need) {
        dla__free(last_use);
        dla__free(v);
        dla__free(owned);
        dla__free(need);
        dla__capture_free_record(&c);
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot replay (%d values)",
                         t->nvalues);
    }
    liveness(t, c.entries, last_use, need);
    dla__free(need);
    for (int id = 0; id < t->nvalues; id++) {
        const dla__trace_value *val = &t->values[id];
        if (val->kind == DLA__VALUE_INPUT)
            v[id] = in[val->index];
        else if (val->kind == DLA__VALUE_CONST)
            v[id] = p->consts[val->index];
    }

    dla_status st = DLA_OK;
    c.hook = (dla__observer){.storage_made = heard_storage_made,
                             .storage_freed = heard_storage_freed,
                             .launch = heard_launch,
                             .transfer = heard_transfer};
    dla__hooks_subscribe(&c.hook);
    for (int k = 0; k < t->nentries && st == DLA_OK; k++) {
        if (!c.entries[k].live)
            continue;
        const dla__trace_entry *e = &t->entries[k];
        dla_tensor *ins[DLA__OP_MAX_IO] = {0}, *res[DLA__OP_MAX_IO] = {0}, *saved[DLA__OP_MAX_IO] = {0};
        /* Where its inputs are, kept only if it turns out an invocation. */
        int src0 = c.nsources, spec0 = c.nspecs;
        c.entries[k].src0 = src0;
        for (int i = 0; i < e->nin; i++) {
            ins[i] = v[e->in[i]];
            add_source(&c, e->in[i], ins[i]);
        }
        c.entry = k;
        c.transfer = 0;
        c.drew = 0;
        /* Temporaries a forward makes with public ops die with the entry. */
        dla_scope_begin();
        st = dla__run_op(e->op, e->attrs, e->attrs_size, e->nin, ins, res, saved);
        dla_scope_end();
        c.entry = -1;
        if (st != DLA_OK)
            break;
        /* A random op that drew on the device is launches like any other
         * (the run patches its seed and counter); one that drew on the
         * host uploaded, and runs as itself. */
        c.entries[k].invoke = c.transfer || (e->op->random && !c.drew);
        if (!c.entries[k].invoke) {
            c.nsources = src0;
            c.nspecs = spec0;
        }
        for (int i = 0; i < e->nout + e->nsaved; i++) {
            int id = e->out[i];
            dla_tensor *o = i < e->nout ? res[i] : saved[i - e->nout];
            if (c.entries[k].invoke) {
                int b = live_buffer(&c, o->storage->mem);
                if (b >= 0 && c.bufs[b].entry == k && c.bufs[b].opval < 0) {
                    c.bufs[b].opval = id;
                    c.bufs[b].opval_offset = o->offset;
                }
            }
            v[id] = o;
            owned[id] = 1;
            if (last_use[id] < 0 && !t->values[id].is_output) {
                dla_tensor_release(v[id]);
                v[id] = NULL;
                owned[id] = 0;
            }
        }
        for (int i = 0; i < e->nin; i++) {
            int id = e->in[i];
            if (last_use[id] == k && !t->values[id].is_output && owned[id]) {
                dla_tensor_release(v[id]);
                v[id] = NULL;
                owned[id] = 0;
            }
        }
    }
    for (int i = 0; i < t->nout; i++) {
        out[i] = st == DLA_OK ? dla_tensor_retain(v[t->outputs[i]]) : NULL;
        if (st == DLA_OK) {
            c.out_mem[i] = out[i]->storage->mem;
            c.out_src[i] = c.nsources;
            add_source(&c, t->outputs[i], out[i]);
        }
    }
    for (int id = 0; id < t->nvalues; id++)
        if (owned[id])
            dla_tensor_release(v[id]);
    dla__hooks_unsubscribe(&c.hook);
    dla__free(v);
    dla__free(owned);
    dla__free(last_use);

    if (st != DLA_OK)
        snprintf(p->why, sizeof p->why, "the planning replay failed: %s", dla_last_error());
    else if (c.failed)
        snprintf(p->why, sizeof p->why, "out of memory while planning");
    int ok = st == DLA_OK && !c.failed && dla__plan_lower(p, &c);
    /* The profile's sums, made before the plan is published so that a
     * listing never meets them half made. */
    if (ok && p->profile) {
        p->step_ns = dla__calloc((size_t)p->nsteps + 1, sizeof *p->step_ns);
        p->run_ns = dla__calloc((size_t)p->nsteps + 1, sizeof *p->run_ns);
        if (!p->step_ns || !p->run_ns) {
            snprintf(p->why, sizeof p->why, "out of memory for the profile's sums");
            ok = 0;
        }
    }
    atomic_store(&p->state, ok ? DLA__PLAN_READY : DLA__PLAN_FAILED);
    dla__capture_free_record(&c);
    return st;
}
