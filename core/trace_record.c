/*
 * trace_record.c - recording a trace while a function runs eagerly.
 *
 * The recorder maps each tensor it meets to a value, by address and serial:
 * it holds no reference, so intermediates die as early as in an eager run
 * (a recording's peak memory is eager's), and an address freed and reused
 * for another tensor carries another serial, so the map never confuses
 * the two. A tensor
 * read by an op that is neither an input nor an earlier op's output is a
 * constant: the recorder keeps it, and the trace bakes its values in.
 *
 * It hears of ops and host reads as a subscriber of the hooks
 * (core/hooks.h) while it records; the runtime never calls it by name.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, CLOCK_MONOTONIC under -std=c11 */
#include "core/alloc.h"
#include "core/error.h"
#include "core/handle.h"
#include "core/log.h"
#include "core/hooks.h"
#include "core/tape.h"
#include "core/tensor.h"
#include "core/trace.h"

#include <stdint.h>
#include <string.h>
#include <time.h>

typedef struct recorder {
    dla__observer hook; /* first: the hooks hand it back as self */
    /* tensor -> value id; open addressing, grown at half load */
    dla_tensor **keys; /* never dereferenced: the tensor may be gone */
    uint64_t *serials;
    int *ids;
    size_t cap, used;
    dla__trace *t;
    int capv, cape, capc;
    int failed;
    double start;
    /* The function's own tape context (dla__tape_context): an op run at
     * another depth or pause count is off its tape (entry off_tape). */
    int tape_depth, tape_pauses;
} recorder;

static _Thread_local recorder *active;

int dla__trace_recording(void) { return active != NULL; }

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static size_t slot_of(const recorder *r, const dla_tensor *p)
{
    uint64_t x = (uint64_t)(uintptr_t)p;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    size_t i = (size_t)x & (r->cap - 1);
    while (r->keys[i] && r->keys[i] != p)
        i = (i + 1) & (r->cap - 1);
    return i;
}

/* p's value, when p is the tensor that was mapped (not a later tensor at
 * the same address); -1 otherwise. p is alive: the caller holds it. */
static int find(const recorder *r, const dla_tensor *p)
{
    size_t i = slot_of(r, p);
    return r->keys[i] && r->serials[i] == p->serial ? r->ids[i] : -1;
}

static dla_status grow_map(recorder *r)
{
    size_t cap = r->cap ? r->cap * 2 : 256;
    dla_tensor **keys = dla__calloc(cap, sizeof *keys);
    uint64_t *serials = dla__calloc(cap, sizeof *serials);
    int *ids = dla__calloc(cap, sizeof *ids);
    if (!keys || !ids || !serials) {
        dla__free(keys);
        dla__free(serials);
        dla__free(ids);
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot grow the recorder's map");
    }
    recorder old = *r;
    r->keys = keys;
    r->serials = serials;
    r->ids = ids;
    r->cap = cap;
    for (size_t i = 0; i < old.cap; i++)
        if (old.keys[i]) {
            size_t j = slot_of(r, old.keys[i]);
            r->keys[j] = old.keys[i];
            r->serials[j] = old.serials[i];
            r->ids[j] = old.ids[i];
        }
    dla__free(old.keys);
    dla__free(old.serials);
    dla__free(old.ids);
    return DLA_OK;
}

/* A new value for tensor p (mapped, not retained). */
static int add_value(recorder *r, dla_tensor *p, dla__value_kind kind, int index)
{
    dla__trace *t = r->t;
    if ((r->used + 1) * 2 > r->cap && grow_map(r) != DLA_OK)
        return -1;
    if (t->nvalues == r->capv) {
        int cap = r->capv ? r->capv * 2 : 64;
        dla__trace_value *v = dla__realloc(t->values, (size_t)cap * sizeof *v);
        if (!v) {
            dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot grow the trace's values");
            return -1;
        }
        t->values = v;
        r->capv = cap;
    }
    int id = t->nvalues++;
    dla__trace_value *v = &t->values[id];
    memset(v, 0, sizeof *v);
    v->kind = kind;
    v->index = index;
    v->dtype = p->dtype;
    v->ndims = p->ndims;
    memcpy(v->dims, p->dims, sizeof v->dims);
    memcpy(v->format, p->format, sizeof v->format);
    v->last_use = -1;
    size_t s = slot_of(r, p);
    if (!r->keys[s])
        r->used++;
    r->keys[s] = p; /* a stale entry at p's address is overwritten */
    r->serials[s] = p->serial;
    r->ids[s] = id;
    return id;
}

static int add_const(recorder *r, dla_tensor *p)
{
    dla__trace *t = r->t;
    if (t->nconsts == r->capc) {
        int cap = r->capc ? r->capc * 2 : 16;
        dla_tensor **c = dla__realloc(t->consts, (size_t)cap * sizeof *c);
        if (c)
            t->consts = c;
        unsigned char *o = c ? dla__realloc(t->const_outer, (size_t)cap) : NULL;
        if (o)
            t->const_outer = o;
        uint64_t *w = o ? dla__realloc(t->const_writes, (size_t)cap * sizeof *w) : NULL;
        if (w)
            t->const_writes = w;
        if (!w) {
            dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot grow the trace's constants");
            return -1;
        }
        r->capc = cap;
    }
    /* One made before the recording (weights reached through ctx) is held
     * through a header of the trace's own: the caller's headers alone then
     * tell whether the caller still holds it (dla__trace_stale). */
    int outer = p->serial < t->serial_start && p->storage;
    /* One a scope holds (a constant the function made in the call's
     * scope) is held through a header of the trace's own too: a +1 on the
     * scope's header would let the function's dla_tensor_release of it,
     * a misuse refused in eager code, pass, and the scope's end then freed
     * the header the trace replays (a crash at the first hit). */
    int own_header = outer || (p->storage && atomic_load(&p->scoped) > 0);
    dla_tensor *held = own_header ? dla__tensor_view("dla_accelerate", p) : dla_tensor_retain(p);
    if (!held)
        return -1;
    held->trace_outer = (unsigned char)outer;
    int id = add_value(r, p, DLA__VALUE_CONST, t->nconsts);
    if (id < 0) {
        dla_tensor_release(held);
        return -1;
    }
    t->const_outer[t->nconsts] = (unsigned char)outer;
    t->const_writes[t->nconsts] = outer ? atomic_load(&p->storage->writes) : 0;
    if (outer)
        atomic_fetch_add(&p->storage->trace_views, 1);
    t->consts[t->nconsts++] = held;
    if (p->serial >= t->serial_start)
        t->inner_consts++;
    return id;
}

static void release_map(recorder *r)
{
    dla__free(r->keys);
    dla__free(r->serials);
    dla__free(r->ids);
}

static dla_status note(dla__observer *self, const dla__op *op, const void *attrs,
                       size_t attrs_size, int nin, dla_tensor *const *in, dla_tensor *const *out,
                       dla_tensor *const *saved);
static void host_read(dla__observer *self, const dla_tensor *x);

dla_status dla__trace_begin(int nin, dla_tensor *const *in, int own_tape)
{
    if (active)
        return dla__fail(DLA_ERR_STATE, "dla_accelerate: a trace is already being recorded on "
                         "this thread");
    recorder *r = dla__calloc(1, sizeof *r);
    dla__trace *t = r ? dla__calloc(1, sizeof *t) : NULL;
    if (!t) {
        dla__free(r);
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot start a recording");
    }
    r->t = t;
    t->refs = 1;
    t->magic = DLA__HANDLE_TRACE;
    t->nin = nin;
    t->device = nin ? in[0]->storage->device : dla_device_current();
    t->serial_start = dla__tensor_serial_next();
    r->start = now_s();
    dla__tape_context(&r->tape_depth, &r->tape_pauses);
    if (own_tape) { /* dla_feval pushes a tape, with no pause on it */
        r->tape_depth++;
        r->tape_pauses = 0;
    }
    active = r;
    r->hook = (dla__observer){.op_ran = note, .host_read = host_read};
    dla__hooks_subscribe(&r->hook);
    for (int i = 0; i < nin; i++) {
        /* The same tensor passed twice is one value: its second slot aliases. */
        int id = r->cap ? find(r, in[i]) : -1;
        if (id >= 0) {
            if (!t->in_alias && (t->in_alias = dla__malloc((size_t)nin * sizeof *t->in_alias)))
                for (int k = 0; k < nin; k++)
                    t->in_alias[k] = -1;
            if (!t->in_alias) {
                dla__trace *none;
                dla__trace_end(0, 0, NULL, &none);
                return dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot start a recording");
            }
            t->in_alias[i] = t->values[id].index;
            continue;
        }
        if (add_value(r, in[i], DLA__VALUE_INPUT, i) < 0) {
            dla_status st = dla_last_status();
            dla__trace *none;
            dla__trace_end(0, 0, NULL, &none);
            return st;
        }
    }
    return DLA_OK;
}

/* The hook: an outermost op ran while recording. */
static dla_status note(dla__observer *self, const dla__op *op, const void *attrs,
                       size_t attrs_size, int nin, dla_tensor *const *in, dla_tensor *const *out,
                       dla_tensor *const *saved)
{
    recorder *r = (recorder *)self;
    if (r->failed)
        return DLA_OK; /* already broken: the recording will be dropped */
    dla__trace *t = r->t;
    if (t->nentries == r->cape) {
        int cap = r->cape ? r->cape * 2 : 64;
        dla__trace_entry *e = dla__realloc(t->entries, (size_t)cap * sizeof *e);
        if (!e) {
            r->failed = 1;
            return dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot grow the trace");
        }
        t->entries = e;
        r->cape = cap;
    }
    int k = t->nentries;
    dla__trace_entry *e = &t->entries[k];
    memset(e, 0, sizeof *e);
    e->op = op;
    e->nin = nin;
    e->nout = op->nout;
    e->nsaved = op->nsaved;
    int depth, pauses;
    dla__tape_context(&depth, &pauses);
    e->off_tape = depth != r->tape_depth || pauses != r->tape_pauses;
    for (int i = 0; i < nin; i++) {
        int id = r->cap ? find(r, in[i]) : -1;
        if (id < 0)
            id = add_const(r, in[i]);
        if (id < 0) {
            r->failed = 1;
            return dla_last_status();
        }
        e->in[i] = id;
        t->values[id].last_use = k;
    }
    for (int i = 0; i < op->nout + op->nsaved; i++) {
        dla_tensor *o = i < op->nout ? out[i] : saved[i - op->nout];
        int id = add_value(r, o, DLA__VALUE_OP, k);
        if (id < 0) {
            r->failed = 1;
            return dla_last_status();
        }
        e->out[i] = id;
    }
    if (attrs_size) {
        e->attrs = dla__malloc(attrs_size);
        if (!e->attrs) {
            r->failed = 1;
            return dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot copy the attributes");
        }
        memcpy(e->attrs, attrs, attrs_size);
        e->attrs_size = attrs_size;
    }
    t->nentries++;
    if (op->random)
        t->rng_entries++;
    return DLA_OK;
}

/* The hook: the function read x on the host. */
static void host_read(dla__observer *self, const dla_tensor *x)
{
    recorder *r = (recorder *)self;
    /* Announced for the function's own reads only (an op reading its own
     * inputs inside its forward re-reads them on every replay): those are
     * what freeze control flow. */
    if (!r->cap || find(r, x) < 0 ||
        r->t->values[find(r, x)].kind == DLA__VALUE_CONST)
        return;
    dla__trace *t = r->t;
    if (!t->data_dependent) {
        char buf[DLA__DIMS_BUF];
        snprintf(t->data_dependent_note, sizeof t->data_dependent_note,
                 "the function read a traced value (%s %s) on the host while recording; the trace "
                 "replays the control flow of that call, whatever later values are",
                 dla__tensor_dims_str(x, buf, sizeof buf), dla_dtype_name(x->dtype));
        dla__log(DLA_LOG_WARN, "dla_accelerate: %s", t->data_dependent_note);
    }
    t->data_dependent++;
}

/* The input slot whose tensor is a view of x's very elements (the fresh
 * handle dla_accelerate gave the function for the caller's x), or -1.
 * Inputs are alive while recording: their holders outlive it. */
static int passed_as(const recorder *r, const dla_tensor *x)
{
    for (size_t i = 0; i < r->cap; i++) {
        const dla_tensor *k = r->keys[i];
        if (!k || r->t->values[r->ids[i]].kind != DLA__VALUE_INPUT || k->serial != r->serials[i] ||
            k->storage != x->storage || k->offset != x->offset || k->ndims != x->ndims ||
            memcmp(k->dims, x->dims, (size_t)x->ndims * sizeof *x->dims) ||
            memcmp(k->strides, x->strides, (size_t)x->ndims * sizeof *x->strides))
            continue;
        return r->t->values[r->ids[i]].index;
    }
    return -1;
}

dla_status dla__trace_check_wrt(const char *op, int n, dla_tensor *const *wrt)
{
    recorder *r = active;
    for (int i = 0; r && i < n; i++) {
        dla_tensor *x = wrt[i];
        int id = r->cap ? find(r, x) : -1;
        /* Inputs and results of recorded ops are traced; a tensor made
         * inside the function that no op made is rebuilt alike on every
         * call. What came from outside without being an input is baked. */
        if (x->serial >= r->t->serial_start ||
            (id >= 0 && r->t->values[id].kind != DLA__VALUE_CONST))
            continue;
        char buf[DLA__DIMS_BUF], given[200] = "";
        int slot = passed_as(r, x);
        if (slot >= 0)
            snprintf(given, sizeof given, " (it is also passed as input %d, for which the "
                     "function is given a handle of its own, in[%d]: take the gradient with "
                     "respect to that)", slot + 1, slot);
        return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                         "%s: argument wrt[%d] (%s %s) is a constant of the trace dla_accelerate "
                         "is recording: it was made before the accelerated call and is not one "
                         "of its tensor inputs (reached through ctx or a global), so every "
                         "replay would use its value of now and the gradient would never see an "
                         "update. Pass it as a tensor input%s, or pass the network as ctx with "
                         "dla_accel_options.ctx_kind = dla_net_accel_kind()",
                         op, i, dla__tensor_dims_str(x, buf, sizeof buf), dla_dtype_name(x->dtype),
                         given);
    }
    return DLA_OK;
}

dla_status dla__trace_end(int ok, int nout, dla_tensor *const *out, dla__trace **trace)
{
    recorder *r = active;
    DLA_ASSERT(r);
    active = NULL;
    dla__hooks_unsubscribe(&r->hook);
    *trace = NULL;
    dla__trace *t = r->t;
    dla_status st = ok && r->failed ? DLA_ERR_OUT_OF_MEMORY : DLA_OK;
    if (ok && !r->failed) {
        t->nout = nout;
        t->outputs = dla__calloc((size_t)(nout ? nout : 1), sizeof *t->outputs);
        if (!t->outputs)
            st = dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot finish the trace");
        for (int i = 0; st == DLA_OK && i < nout; i++) {
            /* An output no op made (a constant, an input) is still an output. */
            active = r;
            int id = r->cap ? find(r, out[i]) : -1;
            if (id < 0)
                id = add_const(r, out[i]);
            active = NULL;
            if (id < 0)
                st = dla_last_status();
            else {
                t->outputs[i] = id;
                t->values[id].is_output = 1;
            }
        }
        /* A constant the function made is the trace's from here on:
         * a write after this is one the replays must not see. */
        for (int i = 0; i < t->nconsts; i++)
            if (!t->const_outer[i] && t->consts[i]->storage)
                t->const_writes[i] = atomic_load(&t->consts[i]->storage->writes);
        t->record_seconds = now_s() - r->start;
    }
    release_map(r);
    dla__free(r);
    if (!ok || st != DLA_OK) {
        dla__trace_free(t);
        return ok ? st : DLA_OK;
    }
    *trace = t;
    return DLA_OK;
}

void dla__trace_free(dla__trace *t)
{
    if (!t || __atomic_sub_fetch(&t->refs, 1, __ATOMIC_ACQ_REL) > 0)
        return;
    for (int i = 0; i < t->nentries; i++)
        dla__free(t->entries[i].attrs);
    for (int i = 0; i < t->nconsts; i++) {
        if (t->const_outer && t->const_outer[i])
            atomic_fetch_sub(&t->consts[i]->storage->trace_views, 1);
        dla_tensor_release(t->consts[i]);
    }
    dla__free(t->const_outer);
    dla__free(t->const_writes);
    dla__free(t->const_pinned);
    dla__free(t->in_alias);
    dla__free(t->entries);
    dla__free(t->values);
    dla__free(t->consts);
    dla__free(t->outputs);
    /* The planner left its cleanup with the plans it added. */
    if (t->plans_free)
        t->plans_free(t);
    t->magic = DLA__HANDLE_DEAD; /* parked, not freed: a stale handle reads "dead" */
    t->nentries = t->nconsts = 0;
    dla__quarantine(DLA__RING_OBJECTS, t);
}
