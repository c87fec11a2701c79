/*
 * feval.c - dla_feval: run a function with its own gradient tape.
 *
 * The function runs inside an implicit scope, so model code needs no
 * release calls; its outputs are kept out of that scope for the caller.
 * Tensors carry no tape state (the tape refers to them, not the reverse),
 * so outputs are detached by construction once the tape is gone.
 */
#include "core/error.h"
#include "core/scope.h"
#include "core/tape.h"
#include "core/tensor.h"

#include <string.h>

DLA_API dla_status dla_feval(dla_function fn, void *ctx, int nin, dla_tensor *const *in, int nout,
                             dla_tensor **out)
{
    static const char op[] = "dla_feval";
    if (nout < 0 || (nout && !out))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument out: %d outputs", op, nout);
    for (int i = 0; i < nout; i++)
        out[i] = NULL;
    if (!fn || nin < 0 || (nin && !in)) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is invalid", op,
                  !fn ? "fn" : "in");
        for (int i = 0; i < nout; i++)
            out[i] = dla__return(dla__error_tensor());
        return DLA_ERR_INVALID_ARGUMENT;
    }
    dla__tape tape;
    memset(&tape, 0, sizeof tape);
    tape.nin = nin;
    tape.in = in;
    /* Guarded: one dla_scope_end too many in fn released its outputs and
     * then closed the caller's scope under it. */
    dla_status scope;
    const int mark = dla__scope_open_guarded(&scope);
    /* Opened inside an op's forward, it records the ops run directly in
     * it (until 2026-11-29 none: dla_gradient in it said "called outside
     * dla_feval"). */
    const int outer_base = dla__feval_base_swap(dla__forward_depth());
    dla__tape_push(&tape);
    const unsigned long said = dla__fail_count();
    dla_status st = scope == DLA_OK ? fn(ctx, nin, in, nout, out) : scope;
    const int imbalance = dla__scope_guarded_imbalance(mark);
    if (st == DLA_OK && imbalance) {
        char why[120];
        st = dla__fail(DLA_ERR_STATE, "%s: the function %s", op,
                       dla__scope_imbalance_str(imbalance, why, sizeof why));
    }
    /* An error with no message of its own would leave an older, unrelated
     * one as the last error: until 2026-11-29 the caller read that. */
    dla__fail_unsaid(op, st, said);
    /* Keep the outputs (they leave the scope), then drop the tape. */
    for (int i = 0; i < nout; i++) {
        if (!out[i]) {
            /* A function that failed has said why: its outputs carry
             * that message, not this one. */
            if (st == DLA_OK || dla_last_status() == DLA_OK)
                dla__fail(st != DLA_OK ? st : DLA_ERR_STATE,
                          "%s: the function left output %d unset", op, i + 1);
            out[i] = dla__error_tensor();
        } else {
            dla_tensor_retain(out[i]);
        }
    }
    dla__tape_pop();
    dla__feval_base_swap(outer_base);
    dla__scope_close_guarded(mark);
    for (int i = 0; i < nout; i++) {
        out[i] = dla__return(out[i]);
        if (st == DLA_OK && out[i]->status != DLA_OK)
            st = out[i]->status;
    }
    return st;
}
