/*
 * tape.h - the gradient tape of a dla_feval call (internal).
 *
 * A tape is the list of nodes recorded while its feval runs, in execution
 * order. Tapes form a per-thread stack so fevals nest; only the innermost
 * records.
 */
#ifndef DLA_CORE_TAPE_H
#define DLA_CORE_TAPE_H

#include "core/op.h"

typedef struct dla__tape {
    dla__node *nodes;
    size_t count, capacity;
    /* Plain dla_gradient sweeps over this tape so far: their gradients
     * are constants to later sweeps, which a message then says. */
    int plain_sweeps;
    /* The pause count of the enclosing code, restored at the pop: a
     * dla_feval records on its own tape even where its caller paused
     * recording (a backward rule that differentiates a function). */
    int outer_paused;
    /* The dla_feval's inputs (the caller's array, alive while the tape
     * is): MATLAB's traced variables, from which a loss is traced. */
    int nin;
    dla_tensor *const *in;
    struct dla__tape *outer;
} dla__tape;

/* The innermost tape of this thread, NULL outside dla_feval. */
dla__tape *dla__tape_current(void);
/* Pushes t (zeroed by the caller) as the innermost tape. */
void dla__tape_push(dla__tape *t);
/* Pops the innermost tape and releases everything it holds. */
void dla__tape_pop(void);
/* dla_gradient_opts of one wrt (recorded: enable_higher_derivatives),
 * except that a loss that does not depend on x gives zeros with x's dims
 * and adds 1 to *missing instead of failing: the derivatives of
 * dla_jacobian, dla_divergence and dla_laplacian that are identically
 * zero (a ReLU network's second derivatives). */
dla_status dla__gradient_or_zeros(dla_tensor *loss, dla_tensor *x, dla_tensor **grad, int recorded,
                                  int *missing);
/* dla_gradient_hooked, except that a wrt[i] with may_miss[i] set that the
 * loss does not depend on gets zeros instead of failing the call
 * (dla_net_gradient's learnables of a layer that reaches the outputs only
 * through a "ref" input, whose values are never read), and that the loss
 * counts as traced (the others it does not reach get zeros) only when it
 * reaches a wrt[i] without may_miss[i] set: a loss that reaches none of
 * a network's learnables is an error, not zeros. may_miss[i] == 2: wrt[i]
 * is not asked for; it gets zeros (its own gradient when it is also a
 * wrt[j] asked for), and the sweep runs no backward that leads only to
 * it (trainnet's frozen layers). */
dla_status dla__gradient_may_miss(dla_tensor *loss, int nwrt, dla_tensor *const *wrt,
                                  dla_tensor **grads, const dla_gradient_hooks *hooks,
                                  const char *may_miss);
/* Where an op run now stands: how many tapes are open on this thread
 * (fevals nest) and how many pauses are in force on the innermost. An op
 * is on the tape of the code that runs it only at that code's depth and
 * pause count: the trace recorder keeps, per op, whether it ran there
 * (core/trace_record.c), so that a replay puts on a tape what eager did. */
void dla__tape_context(int *depth, int *pauses);
/* Turns recording off (backward passes) and back on; nests. */
void dla__recording_pause(void);
void dla__recording_resume(void);

#endif
