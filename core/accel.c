/*
 * accel.c - dla_accelerate: the trace cache with MATLAB's AcceleratedFunction
 * surface (Enabled, CacheSize, HitRate, Occupancy, CheckMode,
 * CheckTolerance, clear).
 *
 * A call builds its key, looks it up under the function's mutex, and
 * replays outside it: traces are immutable once recorded and reference
 * counted, so an eviction by another thread never frees one being replayed.
 * A miss records on the calling thread; two threads missing on one key at
 * once both record, and the second trace is dropped. Each miss has a reason
 * (the first key component that differs from the most recently used
 * trace's); a run of misses warns once with the most frequent one.
 */
#define _POSIX_C_SOURCE 200809L
#include "core/accel_advice.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/scope.h"
#include "core/handle.h"
#include "core/log.h"
#include "core/op.h"
#include "core/plan.h"
#include "core/tape.h"
#include "core/tensor.h"
#include "core/trace.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------------ keys */

typedef struct key_input {
    dla_dtype dtype;
    int ndims;
    int64_t dims[DLA_MAX_DIMS];
    char format[DLA_MAX_DIMS + 1];
    dla_device *device;
    /* The first earlier input that is this same tensor, or -1: a trace
     * recorded with one tensor in two places reads it once (trace_record.c
     * makes the second place an alias), so it must not serve a call with
     * two tensors there, nor the other way round. */
    int same_as;
    /* Its strides (0 along dims of 1): the trace keeps what recording
     * decided from them (a reshape's view or copy, and with it how the
     * gradient's pieces add up), so a call whose input is laid out
     * otherwise records anew, or its gradient could differ from eager's
     * in the last bits. Offsets do not matter and are not kept. */
    int64_t strides[DLA_MAX_DIMS];
} key_input;

typedef struct key {
    int grad; /* recorded through dla_accel_feval */
    int nin, nout;
    int nuser;          /* in[] given to the call; the ctx kind's tensors follow */
    key_input *inputs;
    unsigned char *bytes; /* the ctx kind's structure, then the non-tensor inputs */
    size_t nbytes;
    size_t nstruct;       /* of them, the structure's */
    /* The calling thread's current device: what the function makes from
     * host data (dla_ones, dla_tensor_from_host) is made there, and
     * dla_tensor_to_device(x, NULL) moves there, and the trace keeps both
     * as recorded. A replay after dla_device_set_current put its results
     * where the recording's current device was (a cpu result where eager
     * gave an opencl one), so a call with another current device records
     * anew. */
    dla_device *current;
} key;

static void key_free(key *k)
{
    dla__free(k->inputs);
    dla__free(k->bytes);
    memset(k, 0, sizeof *k);
}

/* What a miss was about, counted for the low-hit-rate warning. */
typedef enum miss_kind {
    MISS_FIRST, MISS_MODE, MISS_NIN, MISS_NOUT, MISS_STRUCTURE, MISS_DTYPE, MISS_DIMS, MISS_FORMAT,
    MISS_DEVICE, MISS_SAME, MISS_LAYOUT, MISS_CURRENT, MISS_VALUES, MISS_EVICTED, MISS_STALE,
    MISS_REPLAY, MISS_COUNT
} miss_kind;

static const char *const miss_names[] = {
    "first call", "gradient mode", "number of inputs", "number of outputs",
    "ctx key (its structure or a value it writes)",
    "input dtype", "input dims", "input format", "input device", "same tensor in two places",
    "input layout", "current device",
    "non-tensor input values", "trace evicted", "stale constant", "failed replay",
};
_Static_assert(sizeof miss_names / sizeof miss_names[0] == MISS_COUNT, "miss names");

/* ----------------------------------------------------------------- cache */

typedef struct entry {
    key k;
    dla__trace *trace;
    int refs; /* the cache's own one plus replays in flight */
    long hits;
    long last_used;
} entry;

struct dla_accel {
    uint32_t magic; /* DLA__HANDLE_ACCEL; DEAD once freed (docs/checks.md) */
    dla_function fn;
    char name[64];
    dla_accel_key_fn keyfn;
    const dla_accel_kind *kind; /* of ctx; NULL: opaque */
    pthread_mutex_t lock;
    int enabled;
    int cache_size;
    int check_tolerance_mode;
    double check_tolerance;
    entry **entries; /* most recently used first */
    int nentries;
    long calls, hits;
    /* The last 16 calls (1 = miss), and miss counts by kind since the warning. */
    unsigned recent;
    long miss_counts[MISS_COUNT];
    int warned;
    int warned_stale; /* the stale-constant warning is given once */
    char miss_advice[320]; /* dla__accel_set_miss_advice; "": the general remedy */
    char last_miss[512];
    char last_check[640]; /* room for the message and a whole 320-byte cause */
    key last_key; /* of the most recent trace used or made: misses compare to it */
    /* The keys of the last traces evicted, so that a call with one of them
     * misses with "its trace was evicted" whichever key came last: a cache
     * too small for the shapes it is fed then says so, and the low-hit-rate
     * warning does not blame "a change of input dims" and tell to keep
     * them fixed (until 2026-11-29 only the most recent key was known). */
    key evicted[8];
    int evicted_next;
};

static void entry_release(entry *e)
{
    if (--e->refs > 0)
        return;
    key_free(&e->k);
    __atomic_sub_fetch(&e->trace->cache_refs, 1, __ATOMIC_ACQ_REL);
    dla__trace_free(e->trace);
    dla__free(e);
}

DLA_API dla_accel *dla_accelerate(dla_function fn, const dla_accel_options *opts)
{
    if (!fn) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_accelerate: argument fn is NULL");
        return NULL;
    }
    dla_accel *af = dla__calloc(1, sizeof *af);
    if (!af) {
        dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot allocate the function");
        return NULL;
    }
    af->magic = DLA__HANDLE_ACCEL;
    af->fn = fn;
    af->keyfn = opts ? opts->key : NULL;
    af->kind = opts ? opts->ctx_kind : NULL;
    if (af->kind && !af->kind->tensors) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_accelerate: argument opts: ctx_kind \"%s\" has "
                  "no tensors function", af->kind->name ? af->kind->name : "(null)");
        dla__free(af);
        return NULL;
    }
    if (opts && opts->name)
        snprintf(af->name, sizeof af->name, "%s", opts->name);
    else
        snprintf(af->name, sizeof af->name, "fn@%p", *(void **)&fn);
    pthread_mutex_init(&af->lock, NULL);
    af->enabled = 1;
    af->cache_size = 50;
    af->check_tolerance = 1e-4;
    return af;
}

static void forget_evicted(dla_accel *af)
{
    for (size_t i = 0; i < sizeof af->evicted / sizeof af->evicted[0]; i++)
        key_free(&af->evicted[i]);
    af->evicted_next = 0;
}

static void drop_entries(dla_accel *af)
{
    for (int i = 0; i < af->nentries; i++)
        entry_release(af->entries[i]);
    dla__free(af->entries);
    af->entries = NULL;
    af->nentries = 0;
}

/* Nonzero when af is a live accelerated function; else logs why for op. */
static int accel_live(const dla_accel *af, const char *op)
{
    if (af->magic == DLA__HANDLE_ACCEL)
        return 1;
    dla__misuse(DLA_ERR_INVALID_ARGUMENT, "%s: %p is %s", op, (const void *)af,
                af->magic == DLA__HANDLE_DEAD ? "an accelerated function freed already (freed "
                "twice, or used after dla_accel_free)" : "not an accelerated function handle");
    return 0;
}

DLA_API void dla_accel_free(dla_accel *af)
{
    if (!af || !accel_live(af, "dla_accel_free"))
        return;
    drop_entries(af);
    forget_evicted(af);
    key_free(&af->last_key);
    pthread_mutex_destroy(&af->lock);
    af->magic = DLA__HANDLE_DEAD; /* parked, not freed: a stale pointer reads "dead" */
    dla__quarantine(DLA__RING_OBJECTS, af);
}

/* A key function is told how many bytes it may write and says how many
 * it needs; one that writes what it needs whatever it was told (a struct
 * of 1600 bytes memcpy'd into the 256 given) overran the buffer on this
 * stack and crashed the process. Each buffer it is given is followed by
 * KEY_GUARD bytes of a pattern, so such a write lands there and is an
 * error naming the function; only a write past the guard too goes
 * unseen. */
enum { KEY_SMALL = 256, KEY_GUARD = 4096, KEY_FILL = 0xA5 };
#define KEY_MAX ((size_t)1 << 30)

/* Every byte still KEY_FILL: the first is, and each equals the next (one
 * memcmp, which libc vectorizes; a byte loop cost 1 us of every call with
 * a key function, 70 ns this way). */
static int guard_intact(const unsigned char *g)
{
    return g[0] == KEY_FILL && !memcmp(g, g + 1, KEY_GUARD - 1);
}

/* Appends the bytes of fn(ctx) to k->bytes; what names the function in
 * errors. */
static dla_status key_bytes(key *k, dla_accel_key_fn fn, void *ctx, const char *what)
{
    static const char op[] = "dla_accelerate";
    unsigned char small[KEY_SMALL + KEY_GUARD];
    size_t n = sizeof ctx;
    if (fn) {
        memset(small + KEY_SMALL, KEY_FILL, KEY_GUARD);
        n = fn(ctx, small, KEY_SMALL);
        if (!guard_intact(small + KEY_SMALL))
            return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: %s wrote past the %d bytes it was "
                             "given (it returned %zu): a key function writes at most size bytes "
                             "and returns how many it needs (it is called again with that many)",
                             op, what, KEY_SMALL, n);
        /* (size_t)-1 of a function that meant to fail asked for 16 EiB,
         * and the call failed as out of memory. */
        if (n > KEY_MAX)
            return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: %s returned %zu bytes; a key is at "
                             "most %zu bytes", op, what, n, KEY_MAX);
    }
    unsigned char *b = dla__realloc(k->bytes, k->nbytes + (n ? n : 1));
    if (!b)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot build the key");
    k->bytes = b;
    if (!fn) {
        memcpy(b + k->nbytes, &ctx, sizeof ctx);
    } else if (n <= KEY_SMALL) {
        memcpy(b + k->nbytes, small, n);
    } else {
        /* Called again with room for what it asked, in a guarded buffer
         * of its own: a second answer that differs (300 bytes asked, 8
         * written) left the rest of the key unwritten, bytes of the heap
         * that made calls miss, or hit, at random. */
        unsigned char *room = dla__malloc(n + KEY_GUARD);
        if (!room)
            return dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot build the key");
        memset(room + n, KEY_FILL, KEY_GUARD);
        const size_t again = fn(ctx, room, n);
        dla_status st = DLA_OK;
        if (!guard_intact(room + n))
            st = dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: %s wrote past the %zu bytes it was "
                           "given (it returned %zu)", op, what, n, again);
        else if (again != n)
            st = dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: %s asked for %zu bytes, then, given "
                           "them, returned %zu: it must return the same count for the same "
                           "ctx", op, what, n, again);
        else
            memcpy(b + k->nbytes, room, n);
        dla__free(room);
        if (st != DLA_OK)
            return st;
    }
    k->nbytes += n;
    return DLA_OK;
}

/* Builds the key of a call: in[0..nin-1] are the call's tensors, the ctx
 * kind's after the first nuser. */
static dla_status make_key(dla_accel *af, void *ctx, int grad, int nuser, int nin,
                           dla_tensor *const *in, int nout, key *k)
{
    memset(k, 0, sizeof *k);
    k->grad = grad;
    k->nin = nin;
    k->nuser = nuser;
    k->nout = nout;
    k->current = dla_device_current();
    k->inputs = dla__calloc((size_t)(nin ? nin : 1), sizeof *k->inputs);
    if (!k->inputs)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot build the key");
    for (int i = 0; i < nin; i++) {
        key_input *ki = &k->inputs[i];
        ki->dtype = in[i]->dtype;
        ki->ndims = in[i]->ndims;
        memcpy(ki->dims, in[i]->dims, (size_t)in[i]->ndims * sizeof *ki->dims);
        memcpy(ki->format, in[i]->format, sizeof ki->format);
        ki->device = in[i]->storage->device;
        for (int d = 0; d < ki->ndims; d++)
            ki->strides[d] = ki->dims[d] == 1 ? 0 : in[i]->strides[d];
        ki->same_as = -1;
        for (int j = 0; j < i && ki->same_as < 0; j++)
            if (in[j] == in[i])
                ki->same_as = j;
    }
    dla_status st = DLA_OK;
    char what[96];
    if (af->kind && af->kind->key) {
        snprintf(what, sizeof what, "the ctx kind's key function (%.60s)",
                 af->kind->name ? af->kind->name : "no name");
        st = key_bytes(k, af->kind->key, ctx, what);
    }
    k->nstruct = k->nbytes;
    if (st == DLA_OK && (af->keyfn || !af->kind))
        st = key_bytes(k, af->keyfn, ctx, "the key function (dla_accel_options.key)");
    if (st == DLA_OK && !k->bytes && !(k->bytes = dla__malloc(1))) /* never NULL for memcmp */
        st = dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot build the key");
    if (st != DLA_OK)
        key_free(k);
    return st;
}

/* "input 2", or "ctx (dla_net) tensor 3" for the kind's. */
static const char *input_name(const dla_accel *af, const key *k, int i, char *buf, size_t size)
{
    if (i < k->nuser)
        snprintf(buf, size, "input %d", i + 1);
    else
        snprintf(buf, size, "ctx (%s) tensor %d", af->kind && af->kind->name ? af->kind->name
                 : "structured", i - k->nuser + 1);
    return buf;
}

/* "[1 8]": strides in elements, as the miss reason shows them. */
static const char *strides_str(char *buf, size_t size, int ndims, const int64_t *strides)
{
    size_t n = (size_t)snprintf(buf, size, "[");
    for (int d = 0; d < ndims && n < size; d++)
        n += (size_t)snprintf(buf + n, size - n, d ? " %lld" : "%lld", (long long)strides[d]);
    if (n < size)
        snprintf(buf + n, size - n, "]");
    return buf;
}

/* MISS_COUNT when equal; otherwise the first component that differs, with
 * a sentence about it in why. */
static miss_kind key_diff(const dla_accel *af, const key *old, const key *new, char *why,
                          size_t size)
{
    char a[DLA__DIMS_BUF], b[DLA__DIMS_BUF], nm[64];
    const char *kind = af->kind && af->kind->name ? af->kind->name : "structured";
    if (old->grad != new->grad) {
        snprintf(why, size, "gradient mode %s -> %s", old->grad ? "dla_accel_feval" : "dla_accel_call",
                 new->grad ? "dla_accel_feval" : "dla_accel_call");
        return MISS_MODE;
    }
    if (old->nuser != new->nuser) {
        snprintf(why, size, "number of inputs %d -> %d", old->nuser, new->nuser);
        return MISS_NIN;
    }
    if (old->nout != new->nout) {
        snprintf(why, size, "number of outputs %d -> %d", old->nout, new->nout);
        return MISS_NOUT;
    }
    if (old->nstruct != new->nstruct || memcmp(old->bytes, new->bytes, new->nstruct)) {
        /* The kind's key holds the structure and, for a struct of one's
         * own, the non-tensor values it writes after it (a learning rate):
         * until 2026-11-29 a changed value read "structure changed (8 -> 8
         * bytes of its key: the architecture or a parameter size)". */
        size_t at = 0;
        while (at < old->nstruct && at < new->nstruct && old->bytes[at] == new->bytes[at])
            at++;
        snprintf(why, size, "ctx (%s) key changed (%zu -> %zu bytes, first difference at byte "
                 "%zu): its structure (a network's architecture or a parameter size) or a "
                 "non-tensor value the kind's key writes", kind, old->nstruct, new->nstruct, at);
        return MISS_STRUCTURE;
    }
    if (old->nin != new->nin) {
        snprintf(why, size, "ctx (%s) tensors %d -> %d", kind, old->nin - old->nuser,
                 new->nin - new->nuser);
        return MISS_STRUCTURE;
    }
    for (int i = 0; i < new->nin; i++) {
        const key_input *o = &old->inputs[i], *n = &new->inputs[i];
        if (o->dtype != n->dtype) {
            snprintf(why, size, "%s dtype %s -> %s", input_name(af, new, i, nm, sizeof nm),
                     dla_dtype_name(o->dtype), dla_dtype_name(n->dtype));
            return MISS_DTYPE;
        }
        if (o->ndims != n->ndims || memcmp(o->dims, n->dims, (size_t)n->ndims * sizeof *n->dims)) {
            snprintf(why, size, "%s dims %s -> %s", input_name(af, new, i, nm, sizeof nm),
                     dla__dims_str(a, sizeof a, o->ndims, o->dims),
                     dla__dims_str(b, sizeof b, n->ndims, n->dims));
            return MISS_DIMS;
        }
        if (strcmp(o->format, n->format)) {
            snprintf(why, size, "%s format \"%s\" -> \"%s\"", input_name(af, new, i, nm, sizeof nm),
                     o->format, n->format);
            return MISS_FORMAT;
        }
        if (o->device != n->device) {
            snprintf(why, size, "%s device %s -> %s", input_name(af, new, i, nm, sizeof nm),
                     o->device->name, n->device->name);
            return MISS_DEVICE;
        }
        if (o->same_as != n->same_as) {
            char was[80], is[80], other[64];
            snprintf(was, sizeof was, "%s",
                     o->same_as < 0 ? "a tensor of its own"
                                    : input_name(af, new, o->same_as, other, sizeof other));
            snprintf(is, sizeof is, "%s",
                     n->same_as < 0 ? "a tensor of its own"
                                    : input_name(af, new, n->same_as, other, sizeof other));
            snprintf(why, size, "%s is the same tensor as: %s -> %s",
                     input_name(af, new, i, nm, sizeof nm), was, is);
            return MISS_SAME;
        }
        if (memcmp(o->strides, n->strides, (size_t)n->ndims * sizeof *n->strides)) {
            snprintf(why, size, "%s strides %s -> %s", input_name(af, new, i, nm, sizeof nm),
                     strides_str(a, sizeof a, o->ndims, o->strides),
                     strides_str(b, sizeof b, n->ndims, n->strides));
            return MISS_LAYOUT;
        }
    }
    if (old->current != new->current) {
        snprintf(why, size, "current device %s -> %s", old->current ? old->current->name : "(none)",
                 new->current ? new->current->name : "(none)");
        return MISS_CURRENT;
    }
    if (old->nbytes != new->nbytes || memcmp(old->bytes, new->bytes, new->nbytes)) {
        size_t at = new->nstruct;
        while (at < old->nbytes && at < new->nbytes && old->bytes[at] == new->bytes[at])
            at++;
        snprintf(why, size, "non-tensor input values changed (%s, first difference at byte %zu "
                 "of %zu)", !af->keyfn ? "the ctx pointer" : "the key function's bytes",
                 at - new->nstruct, new->nbytes - new->nstruct);
        return MISS_VALUES;
    }
    return MISS_COUNT;
}

/* The lookup's comparison: every call makes it against each trace, so
 * plain memcmp, no messages. */
static int key_equal(const key *a, const key *b)
{
    if (a->grad != b->grad || a->nin != b->nin || a->nuser != b->nuser || a->nout != b->nout ||
        a->current != b->current || a->nbytes != b->nbytes || a->nstruct != b->nstruct ||
        memcmp(a->bytes, b->bytes, b->nbytes))
        return 0;
    for (int i = 0; i < b->nin; i++) {
        const key_input *x = &a->inputs[i], *y = &b->inputs[i];
        if (x->dtype != y->dtype || x->ndims != y->ndims || x->device != y->device ||
            x->same_as != y->same_as ||
            memcmp(x->dims, y->dims, (size_t)y->ndims * sizeof *y->dims) ||
            memcmp(x->strides, y->strides, (size_t)y->ndims * sizeof *y->strides) ||
            strcmp(x->format, y->format))
            return 0;
    }
    return 1;
}

static dla_status key_copy(key *dst, const key *src)
{
    key k = *src;
    k.inputs = dla__malloc((size_t)(src->nin ? src->nin : 1) * sizeof *k.inputs);
    k.bytes = dla__malloc(src->nbytes ? src->nbytes : 1);
    if (!k.inputs || !k.bytes) {
        dla__free(k.inputs);
        dla__free(k.bytes);
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot keep the key");
    }
    memcpy(k.inputs, src->inputs, (size_t)src->nin * sizeof *k.inputs);
    memcpy(k.bytes, src->bytes, src->nbytes);
    key_free(dst);
    *dst = k;
    return DLA_OK;
}

/* Eviction score: what keeping a trace saves, roughly. Its recording cost
 * is counted in recorded ops rather than seconds, so the policy does not
 * depend on how busy the machine was when it recorded. */
static double keep_score(const dla_accel *af, const entry *e)
{
    return (double)(e->trace->nentries + 1) * (double)(e->hits + 1) /
           (double)(af->calls - e->last_used + 1);
}

/* first: the first entry that may go; 1 during a call, whose trace (the
 * one just made, entry 0) must stay, 0 when CacheSize is lowered between
 * calls, which has no current trace to keep. */
static void evict_to(dla_accel *af, int size, int first)
{
    while (af->nentries > size) {
        /* The least recently used among equal scores. */
        int worst = af->nentries - 1;
        for (int i = af->nentries - 1; i >= first; i--)
            if (keep_score(af, af->entries[i]) < keep_score(af, af->entries[worst]))
                worst = i;
        entry *e = af->entries[worst];
        memmove(&af->entries[worst], &af->entries[worst + 1],
                (size_t)(af->nentries - worst - 1) * sizeof *af->entries);
        af->nentries--;
        dla__log(DLA_LOG_INFO, "dla_accelerate: %s: cache full (%d): evicted a trace hit %ld times",
                 af->name, size, e->hits);
        /* Kept for the miss reason; without memory for it, a later miss
         * names the component that differs from the last key instead. */
        int n = (int)(sizeof af->evicted / sizeof af->evicted[0]);
        key_copy(&af->evicted[af->evicted_next], &e->k);
        af->evicted_next = (af->evicted_next + 1) % n;
        entry_release(e);
    }
}

/* Moves entry i to the front (most recently used). */
static void touch(dla_accel *af, int i)
{
    entry *e = af->entries[i];
    memmove(&af->entries[1], &af->entries[0], (size_t)i * sizeof *af->entries);
    af->entries[0] = e;
    e->last_used = af->calls;
}

/* ------------------------------------------------------------ statistics */

static void note_miss(dla_accel *af, miss_kind kind);

static void note_call(dla_accel *af, int miss, miss_kind kind)
{
    af->calls++;
    af->recent = (af->recent << 1) | (unsigned)miss;
    if (!miss) {
        af->hits++;
        return;
    }
    note_miss(af, kind);
}

/* A call counted as a hit whose replay then failed: it found a trace but
 * was not served by one, so it is a call and no hit (MATLAB's HitRate is
 * the share of calls that reused a cached trace; until 2026-11-29 a failed
 * replay counted as one, and calls that all failed read 100%). The trace
 * loses the hit its eviction score got. Under af's lock; the call is
 * taken to be the latest in the last-10 window (another thread's call may
 * have come between, which shifts that window by one at most). */
static void note_failed_replay(dla_accel *af, entry *e)
{
    /* dla_accel_clear may have zeroed the counts since the lookup. */
    if (af->hits > 0)
        af->hits--;
    if (e->hits > 0)
        e->hits--;
    af->recent |= 1u;
    note_miss(af, MISS_REPLAY);
}

static void note_miss(dla_accel *af, miss_kind kind)
{
    af->miss_counts[kind]++;
    /* tf.function's rule, roughly: most of the last 10 calls missed. */
    int recent_misses = __builtin_popcount(af->recent & 0x3ffu);
    if (!af->warned && af->calls >= 10 && recent_misses >= 8) {
        /* "first call" again and again: no trace was kept, the calls
         * failed. It is the reason only when no other is: until
         * 2026-11-29 it was never, and ten failing calls warned of "a
         * change of gradient mode" that no call had made. */
        int top = MISS_FIRST;
        for (int k = MISS_FIRST + 1; k < MISS_COUNT; k++)
            if (af->miss_counts[k] > 0 && af->miss_counts[k] >= af->miss_counts[top])
                top = k;
        af->warned = 1;
        char advice[sizeof af->last_miss + sizeof af->miss_advice + 400];
        /* Evictions and stale traces are no change of the calls: their
         * remedy is another. */
        if (top == MISS_FIRST)
            snprintf(advice, sizeof advice, "no trace was kept (last: %s): the calls failed, or "
                     "their traces could not be kept; see the errors they returned",
                     af->last_miss);
        else if (top == MISS_EVICTED)
            snprintf(advice, sizeof advice, "the most frequent reason is a trace evicted from the "
                     "full cache (last: %s). Raise CacheSize to hold every input pattern in use "
                     "(dla_accel_set_cache_size)", af->last_miss);
        else if (top == MISS_STALE)
            snprintf(advice, sizeof advice, "the most frequent reason is a stale trace (last: "
                     "%s). Pass what changes as tensor inputs", af->last_miss);
        else if (top == MISS_REPLAY)
            snprintf(advice, sizeof advice, "the most frequent reason is a replay that failed "
                     "(last: %s); see the errors the calls returned", af->last_miss);
        else
            /* A full cache: the calls may cycle through more patterns
             * than it holds, each met again after its trace was evicted
             * (counted as the change that made it new), and a larger
             * CacheSize is the remedy rather than fixed inputs. */
            snprintf(advice, sizeof advice, "the most frequent reason is a change of %s (last: "
                     "%s). %s%s",
                     miss_names[top], af->last_miss,
                     af->miss_advice[0] ? af->miss_advice
                                        : "Keep it fixed between calls, or call the function itself",
                     af->nentries >= af->cache_size
                         ? "; or, if the calls cycle through more input patterns than the "
                           "full cache holds, raise CacheSize (dla_accel_set_cache_size)"
                         : "");
        /* The hit rate over every call, to a tenth: rounded to a whole
         * percent it read "8 of the last 10 calls missed the cache (hit
         * rate 100%)" after a long run of hits. */
        dla__log(DLA_LOG_WARN,
                 "dla_accelerate: %s: %d of the last 10 calls missed the cache (hit rate %.1f%% "
                 "over %lld calls); %s", af->name, recent_misses,
                 100.0 * (double)af->hits / (double)af->calls, (long long)af->calls, advice);
    }
}

/* ------------------------------------------------------------- checking */

/* Compares replayed outputs with eager ones; warns when they differ. */
static void check_outputs(dla_accel *af, void *ctx, const dla__trace *t, int nout,
                          dla_tensor **got, dla_tensor **want)
{
    for (int i = 0; i < nout; i++) {
        if (got[i]->status != DLA_OK || want[i]->status != DLA_OK)
            continue;
        /* A trace frozen on a value read on the host can give an output of
         * another size or class than the function now does: that is the
         * plainest difference of all, not one to pass over. */
        /* The labels too: a trace frozen on a host read can label its
         * result "CB" where the function now says "SB", values equal, and
         * what reads it next (a loss, a layer) finds the channels apart. */
        const int relabelled = strcmp(got[i]->format, want[i]->format) != 0;
        if (got[i]->dtype != want[i]->dtype || !dla__same_but_trailing_ones(got[i], want[i]) ||
            relabelled) {
            char a[DLA__DIMS_BUF], b[DLA__DIMS_BUF], fa[DLA_MAX_DIMS + 4] = "",
                 fb[DLA_MAX_DIMS + 4] = "";
            if (relabelled) {
                snprintf(fa, sizeof fa, " \"%s\"", got[i]->format);
                snprintf(fb, sizeof fb, " \"%s\"", want[i]->format);
            }
            snprintf(af->last_check, sizeof af->last_check,
                     "Accelerated outputs differ from underlying function outputs: output %d: "
                     "the trace gives %s %s%s, the function %s %s%s%s%s", i + 1,
                     dla__dims_str(a, sizeof a, got[i]->ndims, got[i]->dims),
                     dla_dtype_name(got[i]->dtype), fa,
                     dla__dims_str(b, sizeof b, want[i]->ndims, want[i]->dims),
                     dla_dtype_name(want[i]->dtype), fb, t->data_dependent ? "; the trace is "
                     "data-dependent: " : "", t->data_dependent ? t->data_dependent_note : "");
            dla__log(DLA_LOG_WARN, "dla_accelerate: %s: %s", af->name, af->last_check);
            continue;
        }
        int64_t n = dla_tensor_numel(got[i]);
        double *a = dla__malloc(sizeof(double) * (size_t)(n ? n : 1));
        double *b = dla__malloc(sizeof(double) * (size_t)(n ? n : 1));
        int ok = a && b;
        dla_scope_begin();
        if (ok)
            ok = dla_tensor_to_host(dla_cast(got[i], DLA_F64), a, sizeof(double) * (size_t)n) == DLA_OK &&
                 dla_tensor_to_host(dla_cast(want[i], DLA_F64), b, sizeof(double) * (size_t)n) == DLA_OK;
        dla_scope_end();
        double abs_err = 0, rel_err = 0;
        for (int64_t j = 0; ok && j < n; j++) {
            double d = fabs(a[j] - b[j]);
            double r = d / (fabs(b[j]) > 1e-30 ? fabs(b[j]) : 1e-30);
            /* NaN against a number, or an infinity against anything else:
             * inf / inf would make the relative difference NaN, which no
             * comparison sees, and an eager inf against a replayed 2 passed. */
            if (isnan(a[j]) != isnan(b[j]) || (a[j] != b[j] && (isinf(a[j]) || isinf(b[j]))))
                d = r = INFINITY;
            abs_err = d > abs_err ? d : abs_err;
            rel_err = r > rel_err ? r : rel_err;
        }
        dla__free(a);
        dla__free(b);
        if (ok && abs_err > af->check_tolerance && rel_err > af->check_tolerance) {
            char cause[320] = "";
            /* Tensors made before the call and read through ctx or a
             * global (weights swapped for others the caller still holds,
             * which no stale check sees) are the trap the check is for
             * most often: until 2026-11-29 the warning named no cause
             * for them. */
            int outer = 0;
            for (int c = 0; t->const_outer && c < t->nconsts; c++)
                outer += t->const_outer[c] != 0;
            if (t->inner_consts || outer) {
                char in[160] = "", out[160] = "";
                if (t->inner_consts)
                    snprintf(in, sizeof in, " %d constant%s made inside the function (random "
                             "numbers not drawn like a traced tensor, or host data)",
                             t->inner_consts, t->inner_consts == 1 ? "" : "s");
                if (outer)
                    snprintf(out, sizeof out, "%s %d constant%s made before the call (read "
                             "through ctx or a global, not passed as a tensor input)",
                             t->inner_consts ? " and" : "", outer, outer == 1 ? "" : "s");
                snprintf(cause, sizeof cause, "; the trace bakes%s%s", in, out);
            } else if (t->data_dependent)
                snprintf(cause, sizeof cause, "; the trace is data-dependent: %s",
                         t->data_dependent_note);
            /* Neither: what is left is a non-tensor value read through
             * ctx or a global and missing from the key, MATLAB's
             * non-dlarray argument, which its key holds by value. Until
             * 2026-11-29 this warning then named no cause at all. */
            else if (!af->keyfn && !af->kind && ctx)
                snprintf(cause, sizeof cause, "; the key holds the ctx pointer, not the values "
                         "it points to (no dla_accel_options.key): a value the function reads "
                         "through ctx (a scale, a flag) that changed since the trace was "
                         "recorded is baked into it; give a key function that writes it");
            else
                snprintf(cause, sizeof cause, "; no constant or host read of the trace explains "
                         "it: a non-tensor value the function reads (through ctx or a global) "
                         "and that the key does not hold is baked into the trace; write it in "
                         "the key (dla_accel_options.key)");
            snprintf(af->last_check, sizeof af->last_check,
                     "Accelerated outputs differ from underlying function outputs: output %d: "
                     "largest absolute difference %.6g, largest relative difference %.6g "
                     "(CheckTolerance %g)%s", i + 1, abs_err, rel_err, af->check_tolerance, cause);
            dla__log(DLA_LOG_WARN, "dla_accelerate: %s: %s", af->name, af->last_check);
        }
    }
}

/* ----------------------------------------------------------------- calls */

/* Runs fn eagerly: through dla_feval (grad) or in a scope. out[] are +1
 * references (unscoped). */
static dla_status run_eager(dla_accel *af, void *ctx, int grad, int nin, dla_tensor *const *in,
                            int nout, dla_tensor **out)
{
    dla_status st;
    /* Guarded (dla_feval's is for grad): one dla_scope_end too many in fn
     * released its outputs, then closed the caller's scope. */
    const int mark = dla__scope_open_guarded(NULL);
    for (int i = 0; i < nout; i++)
        out[i] = NULL;
    if (grad) {
        st = dla_feval(af->fn, ctx, nin, in, nout, out);
    } else {
        const unsigned long said = dla__fail_count();
        st = af->fn(ctx, nin, in, nout, out);
        dla__fail_unsaid("dla_accel_call", st, said);
        const int imbalance = dla__scope_guarded_imbalance(mark);
        if (st == DLA_OK && imbalance) {
            char why[120];
            st = dla__fail(DLA_ERR_STATE, "dla_accel_call: the function %s",
                           dla__scope_imbalance_str(imbalance, why, sizeof why));
        }
        for (int i = 0; i < nout; i++)
            if (!out[i]) {
                dla__fail(st != DLA_OK ? st : DLA_ERR_STATE,
                          "dla_accel_call: the function left output %d unset", i + 1);
                out[i] = dla__return(dla__error_tensor());
            }
        /* An output that is an error fails the call, as dla_feval has it:
         * a trace kept from such a run held the error tensor as a
         * constant, and its replays crashed on it. */
        for (int i = 0; st == DLA_OK && i < nout; i++)
            if (out[i]->status != DLA_OK)
                st = dla__fail(out[i]->status, "%s", out[i]->message ? out[i]->message : "");
    }
    for (int i = 0; i < nout; i++)
        dla_tensor_retain(out[i]);
    dla__scope_close_guarded(mark);
    return st;
}

/* Fresh handles for the function's tensor inputs, made where this
 * accelerated function calls it for real (a recording, the tolerance
 * check): the recorder binds them to the input slots, so a caller's handle
 * the function also reaches through an opaque ctx or a global is a
 * constant of the trace like any tensor made before the call, not the
 * input (a trace of f(mu) for f(x) = x - mu recorded x - x, and f(a)
 * replayed a - a). Each is a full dla_slice, an exact view (dims, strides,
 * offset, format) made by a recorded op: a tape open around a
 * dla_accel_call takes the gradient through it to the caller's tensor. A
 * tensor in two places gets one handle (the function sees the sameness it
 * was given, and the key's same-tensor component keeps its meaning), and
 * one the ctx kind also lists keeps the caller's: the kind's tensors are
 * inputs of the trace too, so the recorder sees both places and the key
 * tells such calls apart. Nothing is made on a replay, which does not call
 * the function. *ali is in itself when nothing needs a handle, else room
 * (cap entries) or a new block; alias_release undoes it. */
static dla_status alias_inputs(int grad, int nin, dla_tensor *const *in, int nall,
                               dla_tensor *const *all, dla_tensor **room, int cap,
                               dla_tensor *const **ali)
{
    *ali = in;
    if (!nin)
        return DLA_OK;
    dla_tensor **a = nin <= cap ? room : dla__malloc(sizeof *a * (size_t)nin);
    if (!a)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "dla_accelerate: cannot hold %d input handles",
                         nin);
    /* dla_accel_feval's function records on a tape of its own: the views
     * belong on no enclosing one. */
    if (grad)
        dla__recording_pause();
    dla_status st = DLA_OK;
    dla_scope_begin();
    for (int i = 0; i < nin; i++) {
        a[i] = NULL;
        int j = 0;
        while (j < i && in[j] != in[i])
            j++;
        int listed = 0;
        for (int k = nin; k < nall && !listed; k++)
            listed = all[k] == in[i];
        if (j < i)
            a[i] = dla_tensor_retain(a[j]);
        else if (listed)
            a[i] = dla_tensor_retain(in[i]);
        else {
            dla_tensor *v = in[i]->ndims ? dla_slice(in[i], 1, 0, 1, DLA_END)
                                         : dla_reshape(in[i], in[i]->format, 0, NULL);
            if (v->status != DLA_OK) {
                st = v->status;
                break;
            }
            a[i] = dla_tensor_retain(v);
        }
    }
    dla_scope_end();
    if (grad)
        dla__recording_resume();
    if (st != DLA_OK) {
        for (int i = 0; i < nin && a[i]; i++)
            dla_tensor_release(a[i]);
        if (a != room)
            dla__free(a);
        return st;
    }
    *ali = a;
    return DLA_OK;
}

/* The caller's handle where the function returned the fresh one it was
 * given for an input unchanged (a replay returns the caller's there too),
 * then the fresh handles released. */
static void alias_release(int nin, dla_tensor *const *in, dla_tensor *const *ali, dla_tensor **room,
                          int nout, dla_tensor **out)
{
    if (ali == in)
        return;
    for (int i = 0; i < nout; i++)
        for (int j = 0; out[i] && j < nin; j++)
            if (out[i] == ali[j] && ali[j] != in[j]) {
                dla_tensor_release(out[i]);
                out[i] = dla_tensor_retain(in[j]);
                break;
            }
    for (int i = 0; i < nin; i++)
        dla_tensor_release(ali[i]);
    if (ali != room)
        dla__free((void *)ali);
}

/* A kind's tensors function is told how many it may write and says how
 * many there are; one that writes them all whatever it was told (a loop
 * over a network's parameters with no look at cap) overran the room on
 * the stack, or wrote through NULL when there was none. Each list it is
 * given is followed by TENSORS_GUARD entries of a mark, so such a write
 * lands there and is an error naming the kind. */
enum { TENSORS_GUARD = 64 };
static char tensors_mark_at;
#define TENSORS_MARK ((dla_tensor *)&tensors_mark_at)

static void tensors_mark(dla_tensor **g)
{
    for (int i = 0; i < TENSORS_GUARD; i++)
        g[i] = TENSORS_MARK;
}

static int tensors_marked(dla_tensor *const *g)
{
    for (int i = 0; i < TENSORS_GUARD; i++)
        if (g[i] != TENSORS_MARK)
            return 0;
    return 1;
}

/* The call's traced tensors: in[0..nin-1], then those the ctx kind lists.
 * *all is in itself without a kind, else room (cap entries, and
 * TENSORS_GUARD more after them) or a new block (the caller frees it when
 * it is neither). */
static dla_status gather(dla_accel *af, void *ctx, const char *op, int nin, dla_tensor *const *in,
                         dla_tensor **room, int cap, dla_tensor *const **all, int *nall)
{
    *all = in;
    *nall = nin;
    if (!af->kind)
        return DLA_OK;
    const char *name = af->kind->name ? af->kind->name : "structured";
    const int first = cap > nin ? cap - nin : 0;
    dla_tensor **list = cap > nin ? room + nin : room + cap;
    tensors_mark(room + cap);
    int n = af->kind->tensors(ctx, first, list);
    if (!tensors_marked(room + cap))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument ctx (%s): its kind's tensors "
                         "function wrote past the %d entries it was given (it returned %d): it "
                         "writes at most cap tensors and returns how many there are", op, name,
                         first, n);
    if (n < 0) {
        char msg[512];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        return dla__fail(dla_last_status() != DLA_OK ? dla_last_status() : DLA_ERR_INVALID_ARGUMENT,
                         "%s: argument ctx (%s): %s", op, name, msg);
    }
    dla_tensor **t = room;
    if (nin + n > cap) {
        if (n > (1 << 24) ||
            !(t = dla__malloc(sizeof *t * ((size_t)nin + (size_t)n + TENSORS_GUARD))))
            return dla__fail(n > (1 << 24) ? DLA_ERR_INVALID_ARGUMENT : DLA_ERR_OUT_OF_MEMORY,
                             "%s: argument ctx (%s): cannot list %d ctx tensors", op, name, n);
        tensors_mark(t + nin + n);
        const int again = af->kind->tensors(ctx, n, t + nin);
        if (!tensors_marked(t + nin + n) || again != n) {
            dla__free(t);
            return dla__fail(DLA_ERR_STATE, "%s: argument ctx (%s): %s", op, name,
                             again != n ? "its tensor count changed between two listings"
                                        : "its kind's tensors function wrote past the entries "
                                          "it was given");
        }
    }
    memcpy(t, in, sizeof *t * (size_t)nin);
    for (int i = nin; i < nin + n; i++)
        if (!t[i] || t[i]->status != DLA_OK) {
            dla_status st = !t[i] ? dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument ctx (%s): "
                                              "tensor %d is NULL", op, name, i - nin + 1)
                                  : dla__fail(t[i]->status, "%s: argument ctx (%s): tensor %d: %s",
                                              op, name, i - nin + 1, t[i]->message);
            if (t != room)
                dla__free(t);
            return st;
        }
    *all = t;
    *nall = nin + n;
    return DLA_OK;
}

/* Takes entry i out of the cache (a stale trace). */
static void drop_entry(dla_accel *af, int i)
{
    entry *e = af->entries[i];
    memmove(&af->entries[i], &af->entries[i + 1],
            (size_t)(af->nentries - i - 1) * sizeof *af->entries);
    af->nentries--;
    entry_release(e);
}

static dla_status call(dla_accel *af, void *ctx, int grad, int nin, dla_tensor *const *in,
                       int nout, dla_tensor **out)
{
    const char *op = grad ? "dla_accel_feval" : "dla_accel_call";
    if (nout < 0 || (nout && !out))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument out: %d outputs", op, nout);
    for (int i = 0; i < nout; i++)
        out[i] = NULL;
    dla_status st = DLA_OK;
    if (!af || nin < 0 || (nin && !in))
        st = dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is invalid", op, !af ? "af" : "in");
    else if (!accel_live(af, op))
        st = dla_last_status();
    for (int i = 0; st == DLA_OK && i < nin; i++)
        if (!in[i] || in[i]->status != DLA_OK)
            st = in[i] ? dla__fail(in[i]->status, "%s", in[i]->message)
                       : dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: input %d is NULL", op, i + 1);
    if (st != DLA_OK) {
        for (int i = 0; i < nout; i++)
            out[i] = dla__return(dla__error_tensor());
        return st;
    }
    /* Inside an op's forward (a custom layer's with a backward of its
     * own, dla_ode45's "adjoint" solve) a trace is replayed, but none is
     * recorded: the ops a forward runs are part of its op and are
     * announced to no one, so a recording there saw none, held no ops and
     * baked the first call's results as constants, and every replay gave
     * them back whatever the inputs (until 2026-11-29: an adjoint solve
     * whose slope function was accelerated integrated the first slope).
     * A miss there runs the function itself, uncounted. */
    const int in_forward = dla__in_forward();
    /* Disabled, or inside another recording (then the ops go inline into
     * that trace): the function itself. Not inside an op's forward, whose
     * ops that recording does not hear (they are part of the op): there a
     * trace is replayed as anywhere in a forward (until 2026-11-29 the
     * function ran itself there, "inline, into that trace", which it was
     * not). */
    /* Inside an op's forward while another trace's plan is made (its first
     * replay: a network's, whose custom layer calls this function): the
     * function itself too, so that the capture places what it makes. A
     * replay there launched on this trace's constants and its plan's
     * arena, memory that capture cannot place, and that plan failed for
     * good ("launches a kernel on memory that is neither an input, a
     * constant nor made by the replay"; until 2026-11-29 such a network
     * replayed op by op ever after once the function had a trace). */
    const int in_capture = in_forward && dla__plan_capturing();
    if (!dla_accel_enabled(af) || (dla__trace_recording() && !in_forward) || in_capture) {
        /* Not served by a trace, and not counted: the reason says so
         * (until 2026-11-29 it kept the last counted call's, "" after a
         * hit, which reads "served by a trace"). */
        pthread_mutex_lock(&af->lock);
        snprintf(af->last_miss, sizeof af->last_miss, "%s",
                 !dla_accel_enabled(af) ? "Enabled is false: the function ran itself"
                 : in_capture ? "called inside an op's forward while the plan of that op's "
                                "trace is made: the function ran itself, for the plan to hold "
                                "what it launches"
                              : "called while another accelerated function records: "
                                "the function ran inline, into that trace");
        pthread_mutex_unlock(&af->lock);
        st = run_eager(af, ctx, grad, nin, in, nout, out);
        for (int i = 0; i < nout; i++)
            out[i] = dla__return(out[i]);
        return st;
    }
    dla_tensor *room[64 + TENSORS_GUARD]; /* gather's guard after the 64 */
    dla_tensor *const *all;
    int nall;
    key k;
    if ((st = gather(af, ctx, op, nin, in, room, 64, &all, &nall)) != DLA_OK ||
        (st = make_key(af, ctx, grad, nin, nall, all, nout, &k)) != DLA_OK) {
        if (all != in && all != room)
            dla__free((void *)all);
        for (int i = 0; i < nout; i++)
            out[i] = dla__return(dla__error_tensor());
        return st;
    }
    entry *hit = NULL;
    int hit_at = 0;
    char stale[400] = "";
    pthread_mutex_lock(&af->lock);
    for (int i = 0; i < af->nentries; i++)
        if (key_equal(&af->entries[i]->k, &k)) {
            /* A trace that baked a tensor the caller has since changed or
             * let go of gives old numbers: record anew instead. */
            if (dla__trace_stale(af->entries[i]->trace, stale, sizeof stale)) {
                /* Inside an op's forward nothing is recorded in its place:
                 * the trace is left to a call that records anew, which says
                 * why. Dropped here, that call read "its trace was evicted
                 * (CacheSize n)" (until 2026-11-29), whose remedy is
                 * another, and the stale warning was never given. */
                if (!in_forward)
                    drop_entry(af, i);
                break;
            }
            hit = af->entries[i];
            hit->refs++;
            hit->hits++;
            hit_at = i;
            break;
        }
    int check = af->check_tolerance_mode;
    if (hit) {
        af->last_miss[0] = '\0';
        note_call(af, 0, MISS_COUNT);
        /* After note_call has counted this call: a trace made by a miss
         * is stamped with it, and a hit stamped with the call before
         * looked a call older than it was, so a full cache evicted it
         * against the score docs/accelerate.md gives. */
        touch(af, hit_at);
        key_copy(&af->last_key, &k);
    } else if (in_forward) {
        if (stale[0])
            snprintf(af->last_miss, sizeof af->last_miss, "%s; called inside an op's forward (a "
                     "custom layer's, an adjoint dla_ode45's), the function ran itself, as part "
                     "of that op, and no trace was recorded", stale);
        else
            snprintf(af->last_miss, sizeof af->last_miss, "%s",
                     "called inside an op's forward (a custom layer's, an adjoint dla_ode45's) "
                     "with no trace for its key: the function ran itself, as part of that op, "
                     "and no trace was recorded");
    } else {
        miss_kind kind = MISS_FIRST;
        char why[400];
        if (stale[0]) {
            kind = MISS_STALE;
            snprintf(why, sizeof why, "%s", stale);
            if (!af->warned_stale) {
                af->warned_stale = 1;
                dla__log(DLA_LOG_WARN, "dla_accelerate: %s: a trace was stale and is recorded "
                         "anew: %s", af->name, stale);
            }
        } else if (af->last_key.inputs) {
            kind = key_diff(af, &af->last_key, &k, why, sizeof why);
            for (size_t i = 0; kind != MISS_COUNT && i < sizeof af->evicted / sizeof af->evicted[0];
                 i++)
                if (af->evicted[i].inputs && key_equal(&af->evicted[i], &k))
                    kind = MISS_COUNT;
            if (kind == MISS_COUNT) { /* it was cached once: evicted or cleared */
                kind = MISS_EVICTED;
                snprintf(why, sizeof why, "its trace was evicted (CacheSize %d)", af->cache_size);
            }
        } else {
            snprintf(why, sizeof why, "first call");
        }
        snprintf(af->last_miss, sizeof af->last_miss, "%s", why);
        note_call(af, 1, kind);
        dla__log(DLA_LOG_INFO, "dla_accelerate: %s: miss: %s", af->name, why);
    }
    pthread_mutex_unlock(&af->lock);

    if (hit) {
        uint64_t seed, before, after;
        dla_rng_get(&seed, &before);
        /* dla_accel_feval is dla_feval: the function's ops are on a tape of
         * its own, never on the caller's (an outer dla_feval), so nothing
         * flows back through them; the replay's ops must not be there
         * either, or a gradient the miss did not see appears on every hit. */
        if (grad)
            dla__recording_pause();
        st = dla__trace_replay(hit->trace, all, out);
        if (grad)
            dla__recording_resume();
        if (st == DLA_OK && check) {
            /* The eager run draws the same random numbers as the replay did
             * (RNG slots must agree), and the stream ends where one call
             * leaves it. */
            /* A model loss returns a gradient per learnable: more outputs
             * than the stack's room take the heap. */
            dla_tensor *room_want[DLA__OP_MAX_IO * 4];
            dla_tensor **want = nout <= (int)(sizeof room_want / sizeof room_want[0])
                                    ? room_want
                                    : dla__calloc((size_t)nout, sizeof *want);
            /* Empty until run_eager fills them: when the fresh handles
             * cannot be made it does not run, and the release below must
             * not see the stack's garbage. */
            for (int i = 0; want && i < nout; i++)
                want[i] = NULL;
            dla_rng_get(&seed, &after);
            dla_rng_set(seed, before);
            dla_tensor *room_ali[16];
            dla_tensor *const *ali = in;
            dla_status es = !want ? dla__fail(DLA_ERR_OUT_OF_MEMORY,
                                              "no memory to hold the eager run's %d outputs", nout)
                                  : alias_inputs(grad, nin, in, nall, all, room_ali, 16, &ali);
            if (es == DLA_OK) {
                es = run_eager(af, ctx, grad, nin, ali, nout, want);
                alias_release(nin, in, ali, room_ali, nout, want);
            }
            dla_rng_set(seed, after);
            if (es == DLA_OK) {
                pthread_mutex_lock(&af->lock);
                check_outputs(af, ctx, hit->trace, nout, out, want);
                pthread_mutex_unlock(&af->lock);
            } else {
                /* The replay's results stand; the check could not be made,
                 * and says so rather than passing in silence. */
                dla__log(DLA_LOG_WARN, "dla_accelerate: %s: CheckMode \"tolerance\": the "
                         "check of this call was not made: %s", af->name, dla_last_error());
            }
            /* run_eager fills every output, failed or not (error tensors); NULL
             * where it did not run. */
            for (int i = 0; want && i < nout; i++)
                if (want[i])
                    dla_tensor_release(want[i]);
            if (want != room_want)
                dla__free(want);
        }
        /* hit is released below, once the call's status is known. */
        key_free(&k);
    } else if (in_forward) {
        key_free(&k);
        st = run_eager(af, ctx, grad, nin, in, nout, out);
    } else {
        /* Record while running eagerly: the function gets fresh handles
         * for in[] (alias_inputs) and ctx as given; the ctx kind's tensors
         * are inputs of the trace. */
        dla__trace *trace = NULL;
        dla_tensor *room_ali[16], *room_rec[64];
        dla_tensor *const *ali = in, *const *rec = all;
        st = alias_inputs(grad, nin, in, nall, all, room_ali, 16, &ali);
        /* The recorder's inputs: the fresh handles, then the kind's. */
        if (st == DLA_OK && ali != in) {
            dla_tensor **r = nall <= 64 ? room_rec : dla__malloc(sizeof *r * (size_t)nall);
            if (r) {
                memcpy(r, ali, sizeof *r * (size_t)nin);
                memcpy(r + nin, all + nin, sizeof *r * (size_t)(nall - nin));
                rec = r;
            } else
                st = dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot list %d traced inputs", op, nall);
        }
        /* When recording cannot start (memory), the call still runs. */
        int recording = st == DLA_OK && dla__trace_begin(nall, rec, grad) == DLA_OK;
        if (st == DLA_OK) /* else out[] stays NULL: error tensors below */
            st = run_eager(af, ctx, grad, nin, ali, nout, out);
        if (recording) {
            dla_status rs = dla__trace_end(st == DLA_OK, nout, out, &trace);
            if (rs != DLA_OK)
                dla__log(DLA_LOG_WARN, "dla_accelerate: %s: the trace could not be kept: %s",
                         af->name, dla_last_error());
        }
        if (ali != in)
            alias_release(nin, in, ali, room_ali, nout, out);
        if (rec != all && rec != room_rec)
            dla__free((void *)rec);
        /* The results the caller gets must not be the trace's storage. */
        if (trace)
            st = dla__trace_unalias(trace, nout, out);
        entry *e = trace ? dla__calloc(1, sizeof *e) : NULL;
        if (trace && !e)
            dla__trace_free(trace);
        if (e) {
            e->k = k;
            e->trace = trace;
            __atomic_add_fetch(&trace->cache_refs, 1, __ATOMIC_ACQ_REL);
            e->refs = 1;
            pthread_mutex_lock(&af->lock);
            int dup = 0;
            for (int i = 0; i < af->nentries && !dup; i++)
                dup = key_equal(&af->entries[i]->k, &k);
            entry **grown = dup ? NULL
                                : dla__realloc(af->entries, (size_t)(af->nentries + 1) * sizeof *grown);
            if (grown) {
                af->entries = grown;
                memmove(&af->entries[1], &af->entries[0], (size_t)af->nentries * sizeof *grown);
                af->entries[0] = e;
                af->nentries++;
                e->last_used = af->calls;
                key_copy(&af->last_key, &k);
                evict_to(af, af->cache_size, 1);
                e = NULL;
            }
            pthread_mutex_unlock(&af->lock);
            if (e) { /* a duplicate, or no room to keep it */
                entry_release(e);
            }
        } else {
            key_free(&k);
        }
    }
    if (all != in && all != room)
        dla__free((void *)all);
    for (int i = 0; i < nout; i++) {
        if (!out[i])
            out[i] = dla__error_tensor();
        out[i] = dla__return(out[i]);
        /* With the output's message: the status alone left the last error
         * empty (an output the function released, dead by the time the
         * call returned, failed it with "invalid argument" and no word). */
        if (st == DLA_OK && out[i]->status != DLA_OK)
            st = out[i]->magic == DLA__HANDLE_DEAD
                     ? dla__fail(out[i]->status, "%s: output %d was released before the call "
                                 "returned (the function released a reference to it that a "
                                 "scope or the tape held)", op, i + 1)
                     : dla__fail(out[i]->status, "%s: output %d: %s", op, i + 1,
                                 out[i]->message ? out[i]->message
                                                 : dla_status_str(out[i]->status));
    }
    if (hit) {
        /* A hit is a call served by its trace: one whose replay failed, or
         * whose results could not be handed back (an output an error
         * tensor, no room in the caller's scope), served nothing. */
        pthread_mutex_lock(&af->lock);
        if (st != DLA_OK) {
            snprintf(af->last_miss, sizeof af->last_miss,
                     "a trace was found but its replay failed: %s", dla_last_error());
            note_failed_replay(af, hit);
        }
        entry_release(hit);
        pthread_mutex_unlock(&af->lock);
    }
    return st;
}

DLA_API dla_status dla_accel_feval(dla_accel *af, void *ctx, int nin, dla_tensor *const *in,
                                   int nout, dla_tensor **out)
{
    return call(af, ctx, 1, nin, in, nout, out);
}

DLA_API dla_status dla_accel_call(dla_accel *af, void *ctx, int nin, dla_tensor *const *in,
                                  int nout, dla_tensor **out)
{
    return call(af, ctx, 0, nin, in, nout, out);
}

/* ------------------------------------------------------------ properties */

/* The statistics change under the lock on every call (note_call), so
 * they are read under it too: a reader on another thread would otherwise
 * race with the writer (ThreadSanitizer says so) and could see hits and
 * calls from different calls. The const is the caller's view; the lock is
 * not part of the value. */
static pthread_mutex_t *lock_of(const dla_accel *af) { return (pthread_mutex_t *)&af->lock; }

DLA_API void dla_accel_set_enabled(dla_accel *af, int enabled)
{
    if (af && accel_live(af, "dla_accel_set_enabled"))
        __atomic_store_n(&af->enabled, enabled != 0, __ATOMIC_RELAXED);
}

void dla__accel_set_miss_advice(dla_accel *af, const char *advice)
{
    if (!af || !accel_live(af, "dla__accel_set_miss_advice"))
        return;
    pthread_mutex_lock(&af->lock);
    snprintf(af->miss_advice, sizeof af->miss_advice, "%s", advice ? advice : "");
    pthread_mutex_unlock(&af->lock);
}

DLA_API int dla_accel_enabled(const dla_accel *af)
{
    return af ? __atomic_load_n(&af->enabled, __ATOMIC_RELAXED) : 0;
}

DLA_API dla_status dla_accel_set_cache_size(dla_accel *af, int size)
{
    if (!af)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_accel_set_cache_size: argument af is NULL");
    if (!accel_live(af, "dla_accel_set_cache_size"))
        return dla_last_status();
    if (size < 1)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                         "dla_accel_set_cache_size: argument size: %d; it must be at least 1", size);
    pthread_mutex_lock(&af->lock);
    af->cache_size = size;
    /* Until 2026-11-29 the most recently used trace was kept here as in a
     * call: lowered to 1, a cache kept a trace just made and dropped one
     * hit thirty times, against the score. */
    evict_to(af, size, 0);
    pthread_mutex_unlock(&af->lock);
    return DLA_OK;
}

/* The properties' getters read under the lock their setters write under
 * (docs/accelerate.md, "Threads": a monitor thread may read them while
 * another sets them); until 2026-11-29 CacheSize, CheckMode and
 * CheckTolerance were read bare, a data race with the setters that
 * ThreadSanitizer reported. */
DLA_API int dla_accel_cache_size(const dla_accel *af)
{
    if (!af)
        return 0;
    pthread_mutex_lock(lock_of(af));
    int n = af->cache_size;
    pthread_mutex_unlock(lock_of(af));
    return n;
}


static double hit_rate_locked(const dla_accel *af)
{
    return af->calls ? 100.0 * (double)af->hits / (double)af->calls : 0.0;
}

DLA_API double dla_accel_hit_rate(const dla_accel *af)
{
    if (!af)
        return 0.0;
    pthread_mutex_lock(lock_of(af));
    double r = hit_rate_locked(af);
    pthread_mutex_unlock(lock_of(af));
    return r;
}

DLA_API int dla_accel_occupancy(const dla_accel *af)
{
    if (!af)
        return 0;
    pthread_mutex_lock(lock_of(af));
    int n = af->nentries;
    pthread_mutex_unlock(lock_of(af));
    return n;
}

/* MATLAB's Occupancy is a percentage of CacheSize (its example shows 2
 * after one call with the default 50), not a count: until 2026-11-29
 * dla_accel_describe showed the count there, 1 where MATLAB shows 2. */
static double occupancy_percent_locked(const dla_accel *af)
{
    return 100.0 * (double)af->nentries / (double)af->cache_size;
}

DLA_API double dla_accel_occupancy_percent(const dla_accel *af)
{
    if (!af)
        return 0.0;
    pthread_mutex_lock(lock_of(af));
    double p = occupancy_percent_locked(af);
    pthread_mutex_unlock(lock_of(af));
    return p;
}

DLA_API dla_status dla_accel_set_check_mode(dla_accel *af, const char *mode)
{
    if (!af)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_accel_set_check_mode: argument af is NULL");
    if (!accel_live(af, "dla_accel_set_check_mode"))
        return dla_last_status();
    if (mode && (!strcmp(mode, "none") || !strcmp(mode, "tolerance"))) {
        pthread_mutex_lock(&af->lock);
        af->check_tolerance_mode = !strcmp(mode, "tolerance");
        pthread_mutex_unlock(&af->lock);
    } else
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_accel_set_check_mode: argument mode: "
                         "\"%s\"; use \"none\" or \"tolerance\"", mode ? mode : "(null)");
    return DLA_OK;
}

static const char *check_mode_locked(const dla_accel *af)
{
    return af->check_tolerance_mode ? "tolerance" : "none";
}

DLA_API const char *dla_accel_check_mode(const dla_accel *af)
{
    if (!af)
        return "none";
    pthread_mutex_lock(lock_of(af));
    const char *m = check_mode_locked(af);
    pthread_mutex_unlock(lock_of(af));
    return m;
}

DLA_API dla_status dla_accel_set_check_tolerance(dla_accel *af, double tolerance)
{
    if (!af)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                         "dla_accel_set_check_tolerance: argument af is NULL");
    if (!accel_live(af, "dla_accel_set_check_tolerance"))
        return dla_last_status();
    if (!(tolerance >= 0))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_accel_set_check_tolerance: argument "
                         "tolerance: %g; it must be >= 0", tolerance);
    pthread_mutex_lock(&af->lock);
    af->check_tolerance = tolerance;
    pthread_mutex_unlock(&af->lock);
    return DLA_OK;
}

DLA_API double dla_accel_check_tolerance(const dla_accel *af)
{
    if (!af)
        return 0;
    pthread_mutex_lock(lock_of(af));
    double t = af->check_tolerance;
    pthread_mutex_unlock(lock_of(af));
    return t;
}

DLA_API void dla_accel_clear(dla_accel *af)
{
    if (!af || !accel_live(af, "dla_accel_clear"))
        return;
    pthread_mutex_lock(&af->lock);
    drop_entries(af);
    forget_evicted(af);
    key_free(&af->last_key);
    af->calls = af->hits = 0;
    af->recent = 0;
    af->warned = 0;
    af->warned_stale = 0;
    memset(af->miss_counts, 0, sizeof af->miss_counts);
    af->last_miss[0] = af->last_check[0] = '\0';
    pthread_mutex_unlock(&af->lock);
}

DLA_API const char *dla_accel_last_miss(const dla_accel *af) { return af ? af->last_miss : ""; }
DLA_API const char *dla_accel_last_check(const dla_accel *af) { return af ? af->last_check : ""; }

DLA_API int dla_accel_describe(const dla_accel *af, char *buf, size_t size)
{
    if (!af)
        return snprintf(buf, size, "(null accelerated function)");
    pthread_mutex_lock(lock_of(af));
    int n = snprintf(buf, size,
                    "  AcceleratedFunction with properties:\n\n"
                    "          Function: @%s\n"
                    "           Enabled: %d\n"
                    "         CacheSize: %d\n"
                    "           HitRate: %.4g\n"
                    "         Occupancy: %.4g\n"
                    "         CheckMode: '%s'\n"
                    "    CheckTolerance: %.4e\n",
                    af->name, dla_accel_enabled(af), af->cache_size, hit_rate_locked(af),
                    occupancy_percent_locked(af), check_mode_locked(af), af->check_tolerance);
    pthread_mutex_unlock(lock_of(af));
    return n;
}

DLA_API dla_trace *dla_accel_trace(dla_accel *af, int i)
{
    if (!af) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_accel_trace: argument af is NULL");
        return NULL;
    }
    if (!accel_live(af, "dla_accel_trace"))
        return NULL;
    pthread_mutex_lock(&af->lock);
    if (i < 0 || i >= af->nentries) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_accel_trace: argument i: %d is outside 0..%d", i,
                  af->nentries - 1);
        pthread_mutex_unlock(&af->lock);
        return NULL;
    }
    dla_trace *t = dla_trace_retain((dla_trace *)af->entries[i]->trace);
    pthread_mutex_unlock(&af->lock);
    return t;
}

DLA_API dla_status dla_accel_print_trace(const dla_accel *af, int i, FILE *f)
{
    if (!af || !f)
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_accel_print_trace: argument %s is NULL",
                         !af ? "af" : "f");
    if (!accel_live(af, "dla_accel_print_trace"))
        return dla_last_status();
    pthread_mutex_lock(lock_of(af));
    if (i < 0 || i >= af->nentries) {
        int last = af->nentries - 1;
        pthread_mutex_unlock(lock_of(af));
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "dla_accel_print_trace: argument i: %d is "
                         "outside 0..%d", i, last);
    }
    entry *e = af->entries[i];
    fprintf(f, "trace %d of %s: hit %ld times\n", i, af->name, e->hits);
    dla__trace_print(e->trace, f);
    pthread_mutex_unlock(lock_of(af));
    return DLA_OK;
}
