/*
 * train_parallel.h - trainnet's ExecutionEnvironment "parallel" and
 * "multi-gpu": what train.c calls at each point of the loop where the
 * workers meet (nn/train_parallel.c). With p->on 0 every call is the
 * single-process behaviour, so train.c calls them unconditionally.
 */
#ifndef DLA_NN_TRAIN_PARALLEL_H
#define DLA_NN_TRAIN_PARALLEL_H

#include <dlaccel.h>

typedef struct dla__train_par {
    int on;             /* ExecutionEnvironment "parallel" or "multi-gpu" */
    int rank, size;
    int64_t global;     /* MiniBatchSize: the global mini-batch */
    int64_t share;      /* this rank's share of it */
    dla_mbq *whole;     /* unused */
    int empty;          /* this iteration's batch is a placeholder: no share of it */
    int64_t batches;    /* this rank's mini-batches so far */
    double step_seconds, reduce_seconds; /* of them: in the step, in reductions */
    /* Reductions overlapped with the backward pass (DLACCEL_OVERLAP, on by
     * default where the communicator has non-blocking reductions), this
     * step's buckets between prestep and step, and their figures. */
    int overlap;
    struct dla__overlap *ov;
    dla_gradient_hooks hooks;
    /* This batch's observations and valid steps (0: not sequences; both 0
     * without a share), and the whole batch's; this step's share of it. */
    double mine_count, mine_steps, step_global, steps_global;
    double weight;
    /* This iteration's learning rate (the schedule's, a function's may
     * differ by rank): compared with rank 0's where the workers agree on
     * the batch, before the update. */
    double learn_rate;
    /* after: from the backward's end until the gradients are combined
     * (both paths; with the step's agreement, without the state's). */
    double flight_seconds, after_seconds;
    /* Of each step's after, the least over the ranks (the last rank to end
     * its backward), summed; this step's own until the iteration ends. */
    double after_last_seconds, step_after;
    int64_t buckets, started_early;
} dla__train_par;

/* The device of "parallel" (the current one, as "auto") or "multi-gpu"
 * (the non-cpu device at this rank's local rank). */
dla_status dla__train_par_device(const char *env, dla_device **out);
/* Starts the world for "parallel"/"multi-gpu" (resolved options) and
 * silences every rank but 0: no table, no chart, no checkpoints. */
void dla__train_par_begin(dla__train_par *p, dla_training_options *o);
/* Every rank's st in one: DLA_OK everywhere, or on every rank an error
 * naming the ranks that failed (a rank's own message kept). */
dla_status dla__train_par_agree(const dla__train_par *p, dla_status st, const char *when);
/* At set-up, after the ranks agreed it went well (collective): what
 * decides the iterations and the updates (the resolved options, the loss,
 * n_train and n_val observations, the nl learnables' learn-rate and L2
 * factors) compared with rank 0's; on a difference
 * every rank fails with the same message naming the rank and the option
 * (nn/train_par_same.c). */
dla_status dla__train_par_same(const dla__train_par *p, const dla_training_options *o,
                               const dla_train_loss *loss, int64_t n_train, int64_t n_val,
                               int nl, const double *lr_factor, const double *l2_factor);
/* After set-up: rank 0's network to every rank, and *q (the whole data)
 * made this rank's view: its share of each mini-batch (dla__mbq_set_worker);
 * *iterations is the epoch's length, one process's. */
dla_status dla__train_par_setup(dla__train_par *p, dla_net *net, dla_mbq **q,
                                const dla_training_options *o, int64_t *iterations);
/* gop(@and, hasdata) of the part queues; 0 on a collective's failure (*st). */
int dla__train_par_hasdata(dla__train_par *p, dla_mbq *q, dla_status *st);
/* Before the step's dla_feval (status st so far) on a batch of count
 * observations holding steps valid time steps (its padding mask's sum; 0
 * without one): both kept for the step, and with overlapped reductions
 * the workers agree on st and the counts, and the step's buckets are
 * planned. Called for every batch. */
dla_status dla__train_par_prestep(dla__train_par *p, dla_status st, dla_net *net, int64_t count,
                                  double steps, int nl);
/* Inside the step, the loss computed: hands it over and gives the hooks of
 * the gradient sweep (NULL without overlapped reductions). by_steps: the
 * loss is a mean over the batch's valid steps (masked), so it and the
 * gradients are weighted by them; else by the observations. The same on
 * every rank (the same network on the same padded length). */
const dla_gradient_hooks *dla__train_par_backward(dla__train_par *p, dla_tensor *loss,
                                                 int by_steps);
/* After one rank's dla_feval (status st) on its batch (prestep's;
 * sequences of seq_len steps; 0: not sequences): out = {loss, Y,
 * grads[nl], state[ns]} made whole-batch: loss and gradients weighted
 * (by_steps as for _backward) and summed, state combined by
 * observations. */
dla_status dla__train_par_step(dla__train_par *p, dla_status st, dla_net *net, int by_steps,
                               int64_t seq_len, int nl, int ns, dla_tensor **out);
/* The mini-batch metrics of this rank's batch (metrics: the
 * DLA__METRIC_* bits computed; NaN the others) made whole-batch, weighted
 * by its valid steps when by_steps (metrics over them), else by its
 * observations; the accuracy by acc_over instead where that is not
 * negative (the number of steps it is a mean over: those that hold a
 * class); with st agreed. */
dla_status dla__train_par_metrics(dla__train_par *p, dla_status st, int metrics, int by_steps,
                                  double acc_over, double *acc, double *rmse);
/* A rank whose batch could not be made (st, the last error saying why)
 * takes part in the iteration's meetings as iterate's step does with a
 * failure, so that every rank fails there with "rank r failed" instead of
 * meeting other collectives out of step. Returns st. */
dla_status dla__train_par_failed_batch(dla__train_par *p, dla_status st);
/* The end of an iteration: st agreed, and *stop set on every rank when set
 * on any (an OutputFcn). */
dla_status dla__train_par_end(dla__train_par *p, dla_status st, int *stop);
/* A line for the start of training ("" when not on). */
void dla__train_par_describe(const dla__train_par *p, const dla_device *dev, char *buf,
                             size_t size);
/* At the end: each worker's figures sent to rank 0 through a DataQueue
 * and written there with say(ctx, line) when verbose. Collective. */
void dla__train_par_report(dla__train_par *p, int verbose, void (*say)(void *ctx, const char *),
                           void *ctx);
void dla__train_par_free(dla__train_par *p);

#endif
