/*
 * op_run.c - running ops: dla__apply, the one path every op takes from its
 * public function to its results, and dla__run_op, the run itself, which
 * the trace replay and the planner call directly.
 *
 * Running an op knows nothing of who watches: when an outermost op (not
 * one a forward runs inside itself) has run, it is announced through the
 * hooks (core/hooks.h), and the gradient tape and the trace recorder,
 * subscribed there, record it.
 */
#include "core/error.h"
#include "core/hooks.h"
#include "core/op.h"
#include "core/tensor.h"

/* > 0 while an op's forward runs: ops a forward runs inside (a composite
 * loss built from public ops) are part of that op, not nodes of their own,
 * on the tape and in traces alike. */
static _Thread_local int forward_depth;

/* The forward depth the innermost dla_feval opened at (0 outside any, and
 * for a feval outside every forward). A feval an op's forward opens (a
 * custom layer's forward computing a gradient, the slope of an "adjoint"
 * dla_ode45 taking one) records the ops run directly in it: they are
 * outermost to its tape, and part of the enclosing op to everyone else. */
static _Thread_local int feval_base;

/* The device of the innermost dla_trace_replay on this thread, and the
 * device its trace was recorded on. */
static _Thread_local dla_device *replay_device, *replay_from;

int dla__in_forward(void) { return forward_depth > 0; }

int dla__forward_depth(void) { return forward_depth; }

int dla__feval_base(void) { return feval_base; }

int dla__feval_base_swap(int base)
{
    const int outer = feval_base;
    feval_base = base;
    return outer;
}

int dla__ops_announced(void)
{
    return forward_depth == 0 ? dla__hooks_hear(DLA__HEAR_OP_RAN)
                              : forward_depth == feval_base && dla__hooks_hear(DLA__HEAR_OP_NESTED);
}

dla_device *dla__replay_device(void) { return replay_device; }

dla_device *dla__replay_device_swap(dla_device *dev)
{
    dla_device *outer = replay_device;
    replay_device = dev;
    return outer;
}

/* Only to the forward of an op the replay runs itself: a move an op's
 * forward makes inside it (to its own choice of device) keeps its target. */
dla_device *dla__replay_from(void) { return forward_depth == 1 ? replay_from : NULL; }

dla_device *dla__replay_from_swap(dla_device *dev)
{
    dla_device *outer = replay_from;
    replay_from = dev;
    return outer;
}

/* "dla_add: argument b is NULL": the public function and its name for
 * input i where the op says them. */
static void null_argument(const dla__op *op, const void *attrs, int i)
{
    const char *call = op->call_name ? op->call_name(attrs) : op->name;
    const char *arg = NULL;
    for (int k = 0; op->arg_names && op->arg_names[k]; k++)
        if (k == i)
            arg = op->arg_names[k];
    if (arg)
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", call, arg);
    else
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: input %d is NULL", call, i + 1);
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
    if (st == DLA_OK && forward_depth == 0 && dla__hooks_hear(DLA__HEAR_OP_RAN))
        st = dla__hooks_op_ran(op, attrs, attrs_size, nin, in, out, saved);
    else if (st == DLA_OK && forward_depth > 0 && forward_depth == feval_base &&
             dla__hooks_hear(DLA__HEAR_OP_NESTED))
        st = dla__hooks_op_ran_nested(op, attrs, attrs_size, nin, in, out, saved);
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
                null_argument(op, attrs, i);
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
