/*
 * tape.c - recording ops onto the tape of a dla_feval call.
 *
 * While dla_feval runs, every op is recorded, not only those on tensors
 * marked for differentiation: dla_gradient may be asked about any tensor
 * the computation used (a network's weights reached through ctx), and the
 * trace recorder needs every op anyway. A node holds references to its
 * inputs, outputs and saved tensors until the feval returns.
 *
 * The tape hears of ops as a subscriber of the hooks (core/hooks.h): it
 * listens while a tape is open and recording is not paused, so running an
 * op (op_run.c) never calls the tape by name.
 */
#include "core/tape.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/hooks.h"
#include "core/tensor.h"

#include <string.h>

static _Thread_local dla__tape *innermost;
static _Thread_local int paused;
static _Thread_local dla__observer listener;
static _Thread_local int listening;

static dla_status record(dla__observer *self, const dla__op *op, const void *attrs,
                         size_t attrs_size, int nin, dla_tensor *const *in,
                         dla_tensor *const *out, dla_tensor *const *saved);

/* Listens exactly while ops are to be recorded. */
static void listen_if_recording(void)
{
    const int want = innermost != NULL && paused == 0;
    if (want && !listening) {
        listener = (dla__observer){.op_ran = record, .op_ran_nested = record};
        dla__hooks_subscribe(&listener);
    } else if (!want && listening) {
        dla__hooks_unsubscribe(&listener);
    }
    listening = want;
}

dla__tape *dla__tape_current(void) { return innermost; }

/* Ops run directly in the innermost feval are recorded: outside every
 * forward, or in a feval an op's forward opened (at that forward depth),
 * not inside the forward of an op run there (they belong to that op). */
int dla__recording(void)
{
    return innermost != NULL && paused == 0 && dla__forward_depth() == dla__feval_base();
}

void dla__tape_context(int *depth, int *pauses)
{
    int n = 0;
    for (const dla__tape *t = innermost; t; t = t->outer)
        n++;
    *depth = n;
    *pauses = paused;
}

void dla__recording_pause(void)
{
    paused++;
    listen_if_recording();
}

void dla__recording_resume(void)
{
    paused--;
    listen_if_recording();
}

void dla__tape_push(dla__tape *t)
{
    t->outer = innermost;
    t->outer_paused = paused;
    innermost = t;
    paused = 0;
    listen_if_recording();
}

static void node_release(dla__node *n)
{
    for (int i = 0; i < n->nin; i++)
        dla_tensor_release(n->in[i]);
    for (int i = 0; i < n->nout; i++)
        dla_tensor_release(n->out[i]);
    for (int i = 0; i < n->nsaved; i++)
        dla_tensor_release(n->saved[i]);
    dla__free((void *)n->attrs);
}

void dla__tape_pop(void)
{
    dla__tape *t = innermost;
    DLA_ASSERT(t);
    /* Newest first: outputs go before the inputs they were made from. */
    for (size_t i = t->count; i-- > 0;)
        node_release(&t->nodes[i]);
    dla__free(t->nodes);
    innermost = t->outer;
    paused = t->outer_paused;
    listen_if_recording();
    t->nodes = NULL;
    t->count = t->capacity = 0;
}

/* The hook: an outermost op ran while recording. */
static dla_status record(dla__observer *self, const dla__op *op, const void *attrs,
                         size_t attrs_size, int nin, dla_tensor *const *in,
                         dla_tensor *const *out, dla_tensor *const *saved)
{
    (void)self;
    dla__tape *t = innermost;
    if (t->count == t->capacity) {
        size_t cap = t->capacity ? t->capacity * 2 : 64;
        dla__node *grown = dla__realloc(t->nodes, cap * sizeof *grown);
        if (!grown)
            return dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot record the op on the tape (%zu ops)",
                             op->name, t->count + 1);
        t->nodes = grown;
        t->capacity = cap;
    }
    void *copy = NULL;
    if (attrs_size) {
        copy = dla__malloc(attrs_size);
        if (!copy)
            return dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot record the op's attributes",
                             op->name);
        memcpy(copy, attrs, attrs_size);
    }
    dla__node *n = &t->nodes[t->count++];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->attrs = copy;
    n->attrs_size = attrs_size;
    n->nin = nin;
    n->nout = op->nout;
    n->nsaved = op->nsaved;
    for (int i = 0; i < nin; i++)
        n->in[i] = dla_tensor_retain(in[i]);
    for (int i = 0; i < op->nout; i++)
        n->out[i] = dla_tensor_retain(out[i]);
    for (int i = 0; i < op->nsaved; i++)
        n->saved[i] = dla_tensor_retain(saved[i]);
    return DLA_OK;
}
