/*
 * tape.c - recording ops onto the tape, and dla__apply, the one path every
 * differentiable op takes from its public function to its results.
 *
 * While dla_feval runs, every op is recorded, not only those on tensors
 * marked for differentiation: dla_gradient may be asked about any tensor
 * the computation used (a network's weights reached through ctx), and the
 * trace recorder needs every op anyway. A node holds references to its
 * inputs, outputs and saved tensors until the feval returns.
 */
#include "core/tape.h"

#include "core/alloc.h"
#include "core/error.h"
#include "core/tensor.h"
#include "core/trace.h"

#include <string.h>

static _Thread_local dla__tape *innermost;
static _Thread_local int paused;
/* > 0 while an op's forward runs: ops a forward runs inside (a composite
 * loss built from public ops) are part of that op, not nodes of their own,
 * on the tape and in traces alike. */
static _Thread_local int forward_depth;

dla__tape *dla__tape_current(void) { return innermost; }

int dla__in_forward(void) { return forward_depth > 0; }

int dla__recording(void) { return innermost != NULL && paused == 0 && forward_depth == 0; }

void dla__recording_pause(void) { paused++; }
void dla__recording_resume(void) { paused--; }

void dla__tape_push(dla__tape *t)
{
    t->outer = innermost;
    innermost = t;
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
    t->nodes = NULL;
    t->count = t->capacity = 0;
}

static dla_status record(const dla__op *op, const void *attrs, size_t attrs_size, int nin,
                         dla_tensor *const *in, dla_tensor *const *out, dla_tensor *const *saved)
{
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

static void fail_all(const dla__op *op, dla_tensor **out, dla_tensor *err)
{
    for (int i = 0; i < op->nout; i++)
        out[i] = i == 0 ? err : dla__return(dla_tensor_retain(err));
}

dla_status dla__run_op(const dla__op *op, const void *attrs, size_t attrs_size, int nin,
                       dla_tensor *const *in, dla_tensor **out, dla_tensor **saved)
{
    forward_depth++;
    dla_status st = op->forward(attrs, in, nin, out, saved);
    forward_depth--;
    if (st == DLA_OK && dla__recording())
        st = record(op, attrs, attrs_size, nin, in, out, saved);
    if (st == DLA_OK && forward_depth == 0 && dla__trace_recording())
        st = dla__trace_note(op, attrs, attrs_size, nin, in, out, saved);
    if (st != DLA_OK) {
        for (int i = 0; i < op->nout; i++) {
            dla_tensor_release(out[i]);
            out[i] = NULL;
        }
        for (int i = 0; i < op->nsaved; i++) {
            dla_tensor_release(saved[i]);
            saved[i] = NULL;
        }
        dla__error_prefix(op->name);
    }
    return st;
}

dla_status dla__apply_n(const dla__op *op, const void *attrs, size_t attrs_size, int nin,
                        dla_tensor *const *in, dla_tensor **out)
{
    if (op->nin >= 0)
        nin = op->nin;
    DLA_ASSERT(nin <= DLA__OP_MAX_IO && op->nout <= DLA__OP_MAX_IO && op->nsaved <= DLA__OP_MAX_IO);
    for (int i = 0; i < nin; i++) {
        if (!in[i] || in[i]->status != DLA_OK) {
            if (!in[i])
                dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: input %d is NULL", op->name, i + 1);
            dla_tensor *e = in[i] ? dla__pass_error(in[i]) : dla__return(dla__error_tensor());
            fail_all(op, out, e);
            return e->status;
        }
    }
    dla_tensor *res[DLA__OP_MAX_IO] = {0}, *saved[DLA__OP_MAX_IO] = {0};
    dla_status st = dla__run_op(op, attrs, attrs_size, nin, in, res, saved);
    for (int i = 0; i < op->nsaved; i++)
        dla_tensor_release(saved[i]);
    if (st != DLA_OK) {
        fail_all(op, out, dla__return(dla__error_tensor()));
        return st;
    }
    for (int i = 0; i < op->nout; i++)
        out[i] = dla__return(res[i]);
    return DLA_OK;
}

dla_tensor *dla__apply(const dla__op *op, const void *attrs, size_t attrs_size, int nin,
                       dla_tensor *const *in)
{
    dla_tensor *out[DLA__OP_MAX_IO];
    dla__apply_n(op, attrs, attrs_size, nin, in, out);
    /* Ops applied this way have one output; extra outputs would leak. */
    DLA_ASSERT(op->nout == 1);
    return out[0];
}
