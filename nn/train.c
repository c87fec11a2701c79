/*
 * train.c - trainnet: the training loop MATLAB's trainnet runs, over a
 * mini-batch queue, with validation, the iteration table, the progress
 * display and checkpoints.
 *
 * One iteration is one dla_feval of step(): the network's forward (which
 * the network accelerates by itself), the loss (built in, a function, or an
 * accelerated function whose replay lands on this feval's tape), and the
 * gradients of every learnable. Then, outside the tape: the new state, L2
 * regularization, clipping and the solver's update, all ops on the
 * training device. Only the loss and the metrics come back to the host.
 *
 * Everything an iteration makes lives in a scope of its own, so a long
 * training holds the network, the optimizer's state and one batch at a
 * time.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, localtime_r */
#include <dlaccel.h>

#include "nn/nn.h" /* dla__net_device, dla__net_cast_name */
#include "nn/train_impl.h"
#include "nn/data_image.h" /* dla__imds_first_skipped */
#include "nn/data_mbq.h"
#include "nn/data_util.h" /* dla__data_deliver */
#include "nn/datastore.h" /* dla__ds_gather, dla__ds_live */
#include "nn/train_parallel.h"

#include "core/scope.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct history {
    int64_t n, cap;
    dla_training_info *info;
} history;

typedef struct trainer {
    /* The public function messages name: dla_trainnet or dla_testnet. */
    const char *fn;
    dla_training_options o;
    const dla_train_loss *loss;
    dla_net *net;
    dla_device *dev;
    int nl, ns;
    dla_tensor **params;         /* the Learnables table's values (updated in place) */
    dla_tensor **state1, **state2; /* the solver's lists (velocity / averages) */
    double *lr_factor, *l2_factor;
    /* What gradient treatment sees, as MATLAB's trainer does: the L2
     * factor, 0 on a frozen row (learn-rate factor 0: MATLAB's L2
     * regularizer skips a gradient that goes unused), and the rows of the
     * layers that learn (some row of the layer has a learn-rate factor
     * other than 0), treated[0..ntreated): MATLAB computes no gradient for
     * a layer whose factors are all 0, so its rows count in no clipping
     * norm. Counted in, a frozen backbone's gradients and their L2 terms
     * made "global-l2norm" scale the trained layers' steps down, in
     * silence. */
    double *l2_used;
    int *treated, ntreated;
    /* The rows of the layers that do not learn (NULL when every layer
     * learns, or none does): their gradients are not asked for, so the
     * backward stops at the earliest layer that learns, as MATLAB's
     * does; they get zeros, which no update, norm or L2 term uses. */
    char *unasked;
    int uniform_lr;              /* every learn-rate factor is 1 */
    int metrics;                 /* DLA__METRIC_* */
    int classify;                /* targets are class numbers */
    /* The targets are sequences of their own: target_sequences, or a
     * datastore's class numbers per step. */
    int seq_targets;
    /* Targets per step that their predictors' padding mask does not fit
     * (an output of other steps than its input: a datastore's class
     * numbers or responses) come padded with NaN, the steps that hold a
     * class or are not NaN being the ones with a target (responses: with
     * a built-in loss; a custom one sees SequencePaddingValue there).
     * Other targets per step line up with the predictors, whose mask is
     * theirs. */
    int nan_steps;
    /* The longest sequence of the training data [0] and of the validation
     * (or testnet's) data [1]: 0 for other data (align_targets). */
    int64_t longest[2];
    int64_t classes;
    int has_recurrent;
    int64_t chunk;               /* SequenceLength as a number, else 0 */
    /* The current batch's padding mask (1 x B x T "CBT" in the data's
     * dtype, borrowed from the batch's scope) when some of its steps are
     * padding, else NULL; and its count of valid steps. */
    dla_tensor *mask;
    double mask_steps;
    dla_tensor *batch_mask;      /* the batch's mask as it came (padding or not), or NULL */
    char out_format[DLA_MAX_DIMS + 1];
    dla_mbq *train_q, *val_q;
    dla_tensor *train_targets, *val_targets; /* views relabeled "CB" (class numbers) */
    /* The training [0] and validation (testnet's) [1] queues' targets come
     * from their datastore's second output: checked per batch. */
    int ds_targets[2];
    dla_progress *progress;
    dla__train_table table;
    double start;
    int64_t iteration;
    int epoch;
    int64_t iterations_per_epoch;
    history hist;
    double best_val_loss;
    int val_bad;                 /* validations in a row without a new lowest loss */
    int64_t updated;             /* the last iteration whose update was applied */
    int64_t validated;           /* the last iteration validated (0: none) */
    int64_t reported;            /* the last iteration whose table row was printed */
    /* In parallel, a row without validation figures waits for the ranks'
     * agreement on stopping (held_row set: run_epochs prints it). */
    dla_training_state held;
    int held_row;
    dla_tensor *class_list;      /* 0..K-1 along C, to one-hot class numbers */
    /* The validation datastore whose own labels are its targets (the
     * training data is no datastore to match them to by name), or NULL. */
    const dla_imds *val_own_labels;
    dla__train_par par;          /* the workers of "parallel" and "multi-gpu" */
    struct {                     /* solver "lbfgs" */
        dla_lbfgs_state *state;
        dla_tensor *x, *t;       /* the one batch: all the data (+1) */
        dla_tensor *mask;        /* its padding mask or NULL (+1) */
        dla_tensor **out;        /* [2 + nl + ns] an evaluation's outputs */
        /* The last evaluation: the point's first learnable (to tell that
         * it is the point the update returned), Y and the new state (+1). */
        const dla_tensor *at;
        dla_tensor *y, **state_out;
        /* The rows it updates: those whose learn-rate factor is not 0
         * (frozen ones keep their values), rows[0..n); their values as
         * the update's list (p), and the table's own while a point is
         * tried (own). */
        int *rows, n;
        dla_tensor **p, **own;
    } lb;
    /* Lines printed after "Training finished" (the population statistics
     * and the final validation with them). */
    char finish_note[768];
    /* OutputNetwork "best-validation": the network at the best validation
     * so far (a copy sharing its values, which never change in place), its
     * iteration and figures. */
    dla_net *best_net;
    int64_t best_iteration;
    double best_figures[3];
    /* Training stopped at a non-finite loss or gradient (stop_diverged),
     * and the best validation's network took the last one's place. */
    int diverged, took_best;
    double chart_written; /* when the chart was last written (now()), 0: never */
} trainer;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Output to the table's stream, above the bar when there is one. */
static void say(trainer *tr, const char *text)
{
    if (tr->progress)
        dla_progress_printf(tr->progress, "%s", text);
    else {
        fputs(text, tr->o.output);
        fflush(tr->o.output);
    }
}

static void say_ctx(void *ctx, const char *text)
{
    say(ctx, text);
}

/* ------------------------------------------------------------------- loss */

/* The built-in loss name of y and t over the steps of m (1 x B x T) alone,
 * summed, not normalized; and (per) how many of y's elements a step of m
 * stands for in the loss's count: its channels (and any S dims), but one
 * a step for "crossentropy", which is normalized by non-channel elements. */
static dla_tensor *masked_loss_sum(const char *name, dla_tensor *y, dla_tensor *t, dla_tensor *m,
                                   double *per)
{
    const int c = dla_tensor_find_dim(y, 'C');
    const int ce = !strcmp(name, "crossentropy");
    *per = (double)dla_tensor_numel(y) / (double)dla_tensor_numel(m);
    if (ce && c)
        *per /= (double)dla_tensor_dim(y, c);
    if (ce || !strcmp(name, "binary-crossentropy")) {
        const dla_crossentropy_options o = {.mask = m, .normalization_factor = "none"};
        return ce ? dla_crossentropy(y, t, &o) : dla_binary_crossentropy(y, t, &o);
    }
    if (!strcmp(name, "huber"))
        return dla_huber(y, t, &(dla_huber_options){.mask = m, .normalization_factor = "none"});
    const dla_regression_loss_options o = {.mask = m, .normalization_factor = "none"};
    return !strcmp(name, "mse") || !strcmp(name, "mean-squared-error") || !strcmp(name, "l2loss")
               ? dla_l2loss(y, t, &o)
               : dla_l1loss(y, t, &o);
}

/* MATLAB trainnet's lossFcn names, normalized as its table says:
 * "crossentropy" by the output's non-channel elements (N, or N x T for
 * sequences, N x H x W for images), the others by all its elements (N x
 * responses). The losses' own default, the batch size, made "mse" of R
 * responses R times MATLAB's and a sequence's cross-entropy T times.
 * With a padding mask m (1 x B x T, steps valid of y's B x T), padded steps
 * add nothing and the count is of the valid steps' elements alone, so
 * the loss is the mean over the unpadded steps (MATLAB masks them). */
static dla_tensor *builtin_loss(const char *name, dla_tensor *y, dla_tensor *t, dla_tensor *m,
                                double steps)
{
    if (m) {
        double per;
        dla_tensor *sum = masked_loss_sum(name, y, t, m, &per);
        const double count = steps * per;
        return count > 0 ? dla_affine(sum, 1.0 / count, 0.0) : sum;
    }
    if (!strcmp(name, "crossentropy")) {
        const int c = dla_tensor_find_dim(y, 'C');
        const int64_t channels = c ? dla_tensor_dim(y, c) : 1, n = dla_tensor_numel(y);
        dla_tensor *sum = dla_crossentropy(y, t, &(dla_crossentropy_options){
                                                     .normalization_factor = "none"});
        return n / channels > 0 ? dla_affine(sum, 1.0 / (double)(n / channels), 0.0) : sum;
    }
    if (!strcmp(name, "binary-crossentropy"))
        return dla_binary_crossentropy(y, t, &(dla_crossentropy_options){
                                                 .normalization_factor = "all-elements"});
    const dla_regression_loss_options all = {.normalization_factor = "all-elements"};
    if (!strcmp(name, "mse") || !strcmp(name, "mean-squared-error") || !strcmp(name, "l2loss"))
        return dla_l2loss(y, t, &all);
    if (!strcmp(name, "huber"))
        return dla_huber(y, t, &(dla_huber_options){.normalization_factor = "all-elements"});
    return dla_l1loss(y, t, &all); /* "l1loss", "mae", "mean-absolute-error" (checked) */
}

static int builtin_known(const char *name)
{
    static const char *const names[] = {"crossentropy", "binary-crossentropy", "mse",
                                        "mean-squared-error", "l2loss", "l1loss", "mae",
                                        "mean-absolute-error", "huber", NULL};
    for (int i = 0; names[i]; i++)
        if (!strcmp(names[i], name))
            return 1;
    return 0;
}

/* Whether y is a sequence of the steps of m, the input's padding mask
 * (sequence-to-sequence); not for any other output (sequence-to-label,
 * or a layer that changed the number of steps: nothing to match). */
static int steps_of(dla_tensor *y, dla_tensor *m)
{
    const int td = dla_tensor_find_dim(y, 'T'), bd = dla_tensor_find_dim(y, 'B');
    return m && td && bd && dla_tensor_dim(y, td) == dla_tensor_dim(m, 3) &&
           dla_tensor_dim(y, bd) == dla_tensor_dim(m, 2);
}

/* The batch's padding mask for y, or NULL (no padding, or not y's steps). */
static dla_tensor *mask_for(const trainer *tr, dla_tensor *y)
{
    return steps_of(y, tr->mask) ? tr->mask : NULL;
}

/* Whether y's targets are class numbers (or responses) per step padded
 * with NaN, which the batch's padding mask does not fit (an output of
 * other steps than its input, a stride-2 convolution over T): their
 * padding holds no class (one-hot zeros, training.md) or NaN, and the
 * steps that hold one stand in for the mask, the loss and the accuracy
 * being means over them. Only those (tr->nan_steps): targets that line
 * up with their predictors in a batch with no step padded (no mask) have
 * a target at every step, and took this path too, an extra reduction,
 * comparison and upload per batch (and a read in "parallel") for the
 * same mean, which moved the loss of ordinary training by a rounding. */
static int by_class_steps(const trainer *tr, dla_tensor *y)
{
    return tr->nan_steps && (!tr->classify || tr->seq_targets) && !mask_for(tr, y) &&
           dla_tensor_find_dim(y, 'C') && dla_tensor_find_dim(y, 'T');
}

/* The steps of t (targets of y's dims) that hold a target, logical 1 x B x
 * T, when by_class_steps: one-hot targets with a class, responses not NaN
 * (tr->nan_steps); else NULL. */
static dla_tensor *class_steps_of(const trainer *tr, dla_tensor *y, dla_tensor *t)
{
    if (!by_class_steps(tr, y))
        return NULL;
    const int64_t along = dla_tensor_find_dim(t, 'C');
    dla_tensor *zero = dla_tensor_to_device(dla_zeros(dla_tensor_dtype(t), "", 0, NULL),
                                            dla_tensor_device(t));
    if (!tr->classify)
        return dla_eq(dla_sum(dla_cast(dla_ne(t, t), dla_tensor_dtype(t)), 1, &along), zero);
    return dla_gt(dla_sum(t, 1, &along), zero);
}

/* The built-in loss over the steps that hold a class (held), normalized
 * by their count, on the device. It was normalized by every step of the
 * batch, those of no class too, so testnet's and validation's
 * cross-entropy moved with MiniBatchSize (a batch padded to its longest
 * sequence divided by more steps) and was none of the means over the
 * data's steps that the accuracy is. */
static dla_tensor *builtin_loss_by_class_steps(const char *name, dla_tensor *y, dla_tensor *t,
                                               dla_tensor *held)
{
    const dla_dtype dt = dla_tensor_dtype(y);
    dla_tensor *m = dla_cast(held, dt);
    double per, one = 1;
    dla_tensor *sum = masked_loss_sum(name, y, t, m, &per);
    dla_tensor *count = dla_reshape(dla_affine(dla_sum(m, 0, NULL), per, 0.0), "", DLA_DIMS(1, 1));
    /* No step holds a class: the sum of nothing, 0, over 1. */
    dla_tensor *at_least = dla_tensor_to_device(
        dla_cast(dla_tensor_from_host(&one, DLA_F64, "", DLA_DIMS(1, 1)), dt),
        dla_tensor_device(y));
    return dla_div(sum, dla_max2(count, at_least));
}

/* Whether the batch's figures of y are means over its valid steps (the
 * metrics), and its loss too (a built-in loss: a custom one's
 * normalization is its own): weighted by them where batches are combined
 * ("parallel"), else by their observations. Sequence-to-sequence outputs,
 * padded or not (unpadded, a mean over B x T is one over the valid
 * steps). */
static int metrics_by_steps(const trainer *tr, dla_tensor *y)
{
    return steps_of(y, tr->batch_mask);
}

static int loss_by_steps(const trainer *tr, dla_tensor *y)
{
    return tr->loss->name && (metrics_by_steps(tr, y) || by_class_steps(tr, y));
}

/* The loss of y against t, a scalar; owned by the current scope. */
static dla_status loss_of(const trainer *tr, dla_tensor *y, dla_tensor *t, dla_tensor **loss)
{
    const dla_train_loss *l = tr->loss;
    dla_status st;
    *loss = NULL;
    if (l->name) {
        dla_tensor *held = class_steps_of(tr, y, t);
        *loss = held ? builtin_loss_by_class_steps(l->name, y, t, held)
                     : builtin_loss(l->name, y, t, mask_for(tr, y), tr->mask_steps);
        st = dla_tensor_status(*loss);
    } else if (l->accel) {
        st = dla_accel_call(l->accel, l->ctx, 2, (dla_tensor *[]){y, t}, 1, loss);
    } else {
        st = l->fn(l->ctx, 2, (dla_tensor *[]){y, t}, 1, loss);
        if (st == DLA_OK && !*loss)
            st = dla_set_error(DLA_ERR_STATE, "the loss function left its output unset");
        if (st == DLA_OK)
            st = dla_tensor_status(*loss);
    }
    if (st == DLA_OK && dla_tensor_numel(*loss) != 1) {
        char d[128];
        dla_tensor_describe(*loss, d, sizeof d);
        st = dla_set_error(DLA_ERR_SHAPE, "the loss function returned %s, not a scalar", d);
    }
    return st;
}

/* The dla_function of an iteration: in = {X, T}; out = {loss, Y,
 * gradients (one per learnable), new state (one per State row)}. */
static dla_status step(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin;
    (void)nout;
    trainer *tr = ctx;
    dla_status st = dla_net_forward(tr->net, 1, &in[0], 1, &out[1], tr->ns ? out + 2 + tr->nl : NULL,
                                    NULL);
    if (st == DLA_OK)
        st = loss_of(tr, out[1], in[1], &out[0]);
    /* In parallel, each bucket of gradients starts its reduction as the
     * sweep finishes it (NULL hooks otherwise). */
    if (st == DLA_OK)
        st = dla__net_gradient_rows(tr->net, out[0], out + 2,
                                    dla__train_par_backward(&tr->par, out[0],
                                                            loss_by_steps(tr, out[1])),
                                    tr->unasked);
    return st;
}

/* The one element of t as a double, or t's status (a refused allocation
 * must fail the step, not become a NaN metric). */
static dla_status scalar_of(dla_tensor *t, double *v)
{
    *v = NAN;
    dla_status st = dla_tensor_to_host(dla_cast(t, DLA_F64), v, sizeof *v);
    if (st != DLA_OK)
        *v = NAN;
    return st;
}

/* The mean of x (cast to double) over every element, or, with a padding
 * mask m, over the valid steps' elements alone (count of them). */
static dla_status mean_of(dla_tensor *x, dla_tensor *m, double count, double *v)
{
    x = dla_cast(x, DLA_F64);
    if (!m)
        return scalar_of(dla_mean(x, 0, NULL), v);
    dla_status st = scalar_of(dla_sum(dla_mul(x, dla_cast(m, DLA_F64)), 0, NULL), v);
    *v /= count;
    return st;
}

/* Percent of observations (and time steps) whose largest output is the
 * target's; the root mean squared error over every element. Padded steps
 * (the batch's mask) count in neither. *acc_over (may be NULL) is the
 * number of steps the accuracy is a mean over where they are the steps
 * that hold a class (class numbers per step of an output of other steps
 * than the input's), else -1: the batch's figures are then combined
 * (validation batches, "parallel" workers) by that count, not by
 * observations. */
static dla_status metrics_of(const trainer *tr, dla_tensor *y, dla_tensor *t, double *acc,
                             double *rmse, double *acc_over)
{
    *acc = *rmse = NAN;
    if (acc_over)
        *acc_over = -1;
    dla_status st = DLA_OK;
    dla_tensor *m = mask_for(tr, y);
    if (tr->metrics & DLA__METRIC_ACCURACY) {
        const int c = dla_tensor_find_dim(y, 'C');
        dla_tensor *hit;
        if (c && dla_tensor_dim(y, c) == 1) {
            /* One channel: binary classification, the output the
             * probability of class 1 (a sigmoid's, "binary-crossentropy"),
             * a hit where output and target are on the same side of 0.5.
             * The largest of one channel is always channel 0: every
             * observation was a hit, 100% for a network that had learnt
             * nothing. */
            const double half = 0.5;
            dla_tensor *h = dla_tensor_to_device(dla_tensor_from_host(&half, DLA_F64, "",
                                                                      DLA_DIMS(1, 1)),
                                                 dla_tensor_device(y));
            hit = dla_eq(dla_ge(y, h), dla_ge(t, h));
        } else {
            hit = dla_eq(dla_onehotdecode(y, NULL), dla_onehotdecode(t, NULL));
        }
        /* Class numbers per step that the input's mask does not fit (an
         * output of other steps than the input's): their padded steps are
         * one-hot zeros, no class, which decodes as class 0; counted, they
         * made the accuracy depend on what the network gave there. Only
         * the steps that hold a class count. */
        dla_tensor *am = m;
        double count = tr->mask_steps;
        dla_tensor *held = class_steps_of(tr, y, t);
        if (held) {
            am = held;
            st = scalar_of(dla_sum(dla_cast(am, DLA_F64), 0, NULL), &count);
            if (acc_over)
                *acc_over = count;
        }
        if (st == DLA_OK)
            st = mean_of(hit, am, count, acc);
        *acc *= 100.0;
    }
    if (st == DLA_OK && (tr->metrics & DLA__METRIC_RMSE)) {
        dla_tensor *d = dla_sub(y, dla_cast(t, dla_tensor_dtype(y)));
        dla_tensor *rm = m;
        double steps = tr->mask_steps;
        /* Responses per step padded with NaN: the steps with a target
         * alone (their NaN errors put to 0, not multiplied by it). */
        dla_tensor *held = tr->classify ? NULL : class_steps_of(tr, y, t);
        if (held) {
            rm = held;
            d = dla_where(held, d,
                          dla_tensor_to_device(dla_zeros(dla_tensor_dtype(d), "", 0, NULL),
                                               dla_tensor_device(d)));
            st = scalar_of(dla_sum(dla_cast(held, DLA_F64), 0, NULL), &steps);
        }
        const double per = rm ? (double)dla_tensor_numel(y) / (double)dla_tensor_numel(rm) : 1;
        if (st == DLA_OK)
            st = mean_of(dla_square(d), rm, steps * per, rmse);
        *rmse = sqrt(*rmse);
    }
    return st;
}

/* Sequence-to-sequence targets given as one array, padded to the longest
 * sequence of the whole data, for a batch x whose sequences are shorter
 * (padded to the batch's longest, or cut to its shortest): the targets'
 * steps that line up with x's. With right padding (and cutting at the
 * end) observation i's step s is at s in both, so they are the first
 * steps. With left padding they are not any one range: the array's own
 * padding side is unknown (a C array is usually filled from step 0, its
 * end padded, while the batch aligns the sequences' ends), and guessing
 * would train on shifted targets, so the batch is refused. Targets of
 * another number of steps than the data's longest sequence or the
 * training data's (validation targets padded as the training ones) are
 * left to the loss, whose error names both shapes: a network whose output
 * has more steps than its input has such targets. longest: the data's
 * longest sequence. */
static dla_status align_targets(const trainer *tr, int64_t longest, dla_tensor *x, dla_tensor *m,
                                dla_tensor **t)
{
    const int xt = dla_tensor_find_dim(x, 'T'), tt = *t ? dla_tensor_find_dim(*t, 'T') : 0;
    if (!m || !xt || !tt)
        return DLA_OK;
    const int64_t steps = dla_tensor_dim(x, xt), have = dla_tensor_dim(*t, tt);
    if (have <= steps || (have != longest && have != tr->longest[0]))
        return DLA_OK;
    if (!strcmp(tr->o.sequence_padding_direction, "left"))
        return dla_set_error(DLA_ERR_SHAPE,
                             "the mini-batch's sequences have %lld time steps, its targets %lld "
                             "(padded to the longest sequence of the data): with "
                             "SequencePaddingDirection \"left\" the steps of such targets that "
                             "line up with the batch's are not known; give them as "
                             "target_sequences, one per observation, padded with the "
                             "predictors, or use \"right\"",
                             (long long)steps, (long long)have);
    *t = dla_slice(*t, tt, 0, 1, steps);
    return dla_tensor_status(*t);
}

/* The queue's next batch: x, its padding mask (NULL unless the queue
 * makes one: sequence data) and t, its steps x's (align_targets; q is
 * the training queue or the validation one). */
static dla_status check_ds_batch(const trainer *tr, int val, int64_t index, dla_tensor *x,
                                 dla_tensor *m, dla_tensor *t);

static dla_status next_batch(const trainer *tr, dla_mbq *q, int64_t index, dla_tensor **x,
                             dla_tensor **m, dla_tensor **t)
{
    const int val = q != tr->train_q;
    const int64_t longest = tr->longest[val];
    dla_tensor *b[3] = {NULL, NULL, NULL};
    const int n = dla_mbq_num_outputs(q);
    dla_status st = dla_mbq_next(q, n, b);
    *x = b[0];
    *m = n == 3 ? b[1] : NULL;
    *t = b[n - 1];
    if (st == DLA_OK && tr->ds_targets[val])
        st = check_ds_batch(tr, val, index, *x, *m, *t);
    return st == DLA_OK ? align_targets(tr, longest, *x, *m, t) : st;
}

/* Sets tr->mask to m in dtype when some step of it is padding (NULL when
 * every step is valid: the loss and metrics stay as they are unmasked),
 * tr->mask_steps to its count of valid steps either way. */
static dla_status use_mask(trainer *tr, dla_tensor *m, dla_dtype dtype)
{
    tr->mask = NULL;
    tr->mask_steps = 0;
    tr->batch_mask = m;
    if (!m)
        return DLA_OK;
    dla_status st = scalar_of(dla_sum(dla_cast(m, DLA_F64), 0, NULL), &tr->mask_steps);
    if (st != DLA_OK || tr->mask_steps == (double)dla_tensor_numel(m))
        return st;
    tr->mask = dla_cast(m, dtype);
    return dla_tensor_status(tr->mask);
}

/* Class numbers one-hot in dtype: a comparison with the list 0..K-1, as
 * dla_onehotencode makes it, but without its check of the labels (set-up
 * checked every class number once) and its upload of the list per call. */
static dla_tensor *onehot(const trainer *tr, dla_tensor *t, dla_tensor *m, dla_dtype dtype)
{
    dla_tensor *h = dla_cast(dla_eq(t, tr->class_list), dtype);
    /* Class numbers per step (target_sequences): a padded step holds the
     * padding value, which may be a class number; it one-hots as zeros,
     * so that a custom loss sees no class there (m, the padding mask). */
    if (tr->seq_targets && m && steps_of(h, m))
        h = dla_mul(h, dla_cast(m, dtype));
    return h;
}

/* Targets of a batch as the loss wants them: class numbers one-hot. */
static dla_tensor *targets_for_loss(const trainer *tr, dla_tensor *t, dla_tensor *y)
{
    if (tr->classify)
        return onehot(tr, t, tr->mask, dla_tensor_dtype(y));
    if (dla_tensor_dtype(t) != dla_tensor_dtype(y))
        return dla_cast(t, dla_tensor_dtype(y));
    return t;
}

/* ---------------------------------------------------------------- history */

static dla_status history_push(trainer *tr, const dla_training_state *s)
{
    history *h = &tr->hist;
    dla_training_info *in = h->info;
    if (h->n == h->cap) {
        int64_t cap = h->cap ? h->cap * 2 : 1024;
        size_t d = sizeof(double) * (size_t)cap;
        int *e = dla_realloc(in->epoch, sizeof(int) * (size_t)cap);
        if (e)
            in->epoch = e;
        double **arrays[] = {&in->time_elapsed, &in->learn_rate, &in->training_loss,
                             &in->training_accuracy, &in->training_rmse, &in->gradient_norm,
                             &in->step_norm};
        int ok = e != NULL;
        for (size_t k = 0; ok && k < sizeof arrays / sizeof arrays[0]; k++) {
            double *p = dla_realloc(*arrays[k], d);
            if (p)
                *arrays[k] = p;
            ok = p != NULL;
        }
        if (!ok)
            return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: cannot grow the history");
        h->cap = cap;
    }
    in->epoch[h->n] = s->epoch;
    in->time_elapsed[h->n] = s->time_elapsed;
    in->learn_rate[h->n] = s->learn_rate;
    in->training_loss[h->n] = s->training_loss;
    in->training_accuracy[h->n] = s->training_accuracy;
    in->training_rmse[h->n] = s->training_rmse;
    in->gradient_norm[h->n] = s->gradient_norm;
    in->step_norm[h->n] = s->step_norm;
    in->iterations = ++h->n;
    return DLA_OK;
}

static dla_status validation_push(dla_training_info *in, int64_t iteration, double loss, double acc,
                                  double rmse)
{
    int64_t n = in->validations + 1;
    int64_t *it = dla_realloc(in->validation_iteration, sizeof *it * (size_t)n);
    if (it)
        in->validation_iteration = it;
    double **arrays[] = {&in->validation_loss, &in->validation_accuracy, &in->validation_rmse};
    double vals[] = {loss, acc, rmse};
    int ok = it != NULL;
    for (int k = 0; ok && k < 3; k++) {
        double *p = dla_realloc(*arrays[k], sizeof *p * (size_t)n);
        if (p)
            *arrays[k] = p;
        ok = p != NULL;
    }
    if (!ok)
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: cannot grow the history");
    it[n - 1] = iteration;
    for (int k = 0; k < 3; k++)
        (*arrays[k])[n - 1] = vals[k];
    in->validations = n;
    in->final_validation_loss = loss;
    in->final_validation_accuracy = acc;
    in->final_validation_rmse = rmse;
    return DLA_OK;
}

DLA_API void dla_training_info_free(dla_training_info *info)
{
    if (!info)
        return;
    dla_free(info->epoch);
    dla_free(info->time_elapsed);
    dla_free(info->learn_rate);
    dla_free(info->training_loss);
    dla_free(info->training_accuracy);
    dla_free(info->training_rmse);
    dla_free(info->gradient_norm);
    dla_free(info->step_norm);
    dla_free(info->validation_iteration);
    dla_free(info->validation_loss);
    dla_free(info->validation_accuracy);
    dla_free(info->validation_rmse);
    dla_free(info);
}

/* ------------------------------------------------------------------- data */

/* Nonzero when d's targets are its datastore's second output (two
 * outputs, no targets given; d passed check_data, which saw the
 * datastore alive and refuses the other cases). */
static int ds_targets(const dla_train_data *d)
{
    return d->datastore && !d->targets && !d->target_sequences &&
           dla_datastore_num_outputs(d->datastore) == 2;
}

static dla_status check_data(const char *fn, const char *what, const dla_train_data *d)
{
    if (!d)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "%s: %s is NULL", fn, what);
    int sources = !!d->predictors + !!d->sequences + !!d->images + !!d->datastore;
    if (sources != 1)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "%s: %s: set exactly one of predictors, sequences, images and "
                             "datastore (%s)", fn, what,
                             sources == 2 ? "both are set" : sources ? "more than two are set" : "none is set");
    if (d->datastore) {
        char arg[64];
        snprintf(arg, sizeof arg, "%s.datastore", what);
        if (!dla__ds_live(d->datastore, fn, arg))
            return dla_last_status();
        /* MATLAB's {predictors, targets} reads: the network has one input
         * and one output, so a second output is the targets. */
        const int nout = dla_datastore_num_outputs(d->datastore);
        if (nout > 2 || (nout == 2 && (d->targets || d->target_sequences)))
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                 "%s: %s: the %s has %d outputs%s; %s takes a datastore of the "
                                 "predictors alone (one output, the targets in targets) or of the "
                                 "predictors and the targets (two outputs, targets NULL: the "
                                 "network has one input and one output)",
                                 fn, what, d->datastore->kind->name, nout,
                                 nout == 2 ? " and targets are given too" : "", fn + 4);
    }
    if (d->target_sequences && d->targets)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "%s: %s: set one of targets and target_sequences (both are set)", fn,
                             what);
    if (d->target_sequences && !d->sequences)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "%s: %s: target_sequences are sequence-to-sequence targets, one per "
                             "predictor sequence: they need sequences (the predictors are %s)",
                             fn, what, d->images ? "an image datastore"
                                       : d->datastore ? "a datastore" : "an array");
    if (!d->targets && !d->target_sequences && !ds_targets(d))
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "%s: %s: targets is NULL%s", fn, what,
                             d->datastore ? " (or give a datastore whose second output is the "
                                            "targets)" : "");
    dla_tensor *bad = d->predictors && dla_tensor_status(d->predictors) != DLA_OK ? d->predictors
                      : d->targets && dla_tensor_status(d->targets) != DLA_OK    ? d->targets
                                                                                 : NULL;
    if (bad)
        return dla_set_error(dla_tensor_status(bad), "%s: %s: %s: %s", fn, what,
                             bad == d->targets ? "targets" : "predictors", dla_tensor_error(bad));
    return DLA_OK;
}

/* The count of d's datastore read in order that does not know it: read
 * through once per call (it may have grown since the last), as MATLAB
 * reads one until hasdata is false. */
static dla_status learn_count(const dla_train_data *d, const char *fn)
{
    return d && d->datastore ? dla__ds_learn_count(d->datastore, 1, fn) : DLA_OK;
}

/* A datastore read in order (MATLAB's datastore that is neither
 * shuffleable nor partitionable) is trained on in its order, by one
 * process: Shuffle "never", no "parallel", and no validation data that
 * reads its position (the two queues would take each other's
 * observations). */
static dla_status check_in_order(const trainer *tr, const dla_train_data *d)
{
    const dla_train_data *v = tr->o.validation_data;
    dla_datastore *ds = d->datastore;
    if (ds && !dla_datastore_is_indexed(ds)) {
        if (strcmp(tr->o.shuffle, "never") != 0)
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                 "%s: data: the %s is read in order, so it cannot be shuffled; "
                                 "use Shuffle \"never\" (it is \"%s\"), or a datastore read by "
                                 "number (a custom datastore with read_at)",
                                 tr->fn, ds->kind->name, tr->o.shuffle);
        if (tr->par.on)
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                 "%s: data: the %s is read in order, so it cannot be shared out "
                                 "among workers (ExecutionEnvironment \"%s\"); use a datastore "
                                 "read by number (a custom datastore with read_at)",
                                 tr->fn, ds->kind->name, tr->o.execution_environment);
        if (v && v->datastore && !dla_datastore_is_indexed(v->datastore) &&
            dla__ds_share_position(ds, v->datastore))
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                 "%s: ValidationData reads, in order, the datastore the training "
                                 "data reads (the same one, or one made of the other): each would "
                                 "take the other's observations",
                                 tr->fn);
    }
    return DLA_OK;
}

/* The observation dim of a tensor: its B dim, or its last one. */
static int obs_dim(dla_tensor *t)
{
    int b = dla_tensor_find_dim(t, 'B');
    return b ? b : dla_tensor_ndims(t);
}

static int64_t observations(const dla_train_data *d)
{
    if (d->images)
        return dla_imds_num_files(d->images);
    if (d->datastore)
        return dla_datastore_num_observations(d->datastore);
    return d->sequences ? dla_seqlist_count(d->sequences)
                        : dla_tensor_dim(d->predictors, obs_dim(d->predictors));
}

/* The last error's message (train_check.c's, which start "dla_trainnet: ")
 * named by fn instead, or by nothing when fn is NULL (a batch's, which its
 * caller prefixes with the function and the epoch or validation). */
static dla_status renamed(dla_status st, const char *fn)
{
    if (st == DLA_OK)
        return st;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", dla_last_error());
    static const char own[] = "dla_trainnet: ";
    const char *body = strncmp(msg, own, sizeof own - 1) ? msg : msg + sizeof own - 1;
    return dla_set_error(st, "%s%s%s", fn ? fn : "", fn ? ": " : "", body);
}

/* The steps of observation o (one sequence): along its own T when it is
 * labeled, else along the T of fmt, the labels the queue gives it. */
static int64_t obs_steps(dla_tensor *o, const char *fmt)
{
    const int own = dla_tensor_find_dim(o, 'T');
    const char *t = strchr(fmt, 'T');
    return own ? dla_tensor_dim(o, own) : dla_tensor_dim(o, (int)(t - fmt) + 1);
}

/* The targets of the datastore's first observation (its second output):
 * class numbers when one int32, else responses (the tensor path's rule,
 * per observation); with check, checked against tr->classify (the
 * training data's kind) and the network's output as the tensor path
 * checks all its targets before training (the rest are checked per
 * batch: check_ds_batch). format (DLA_MAX_DIMS + 1 chars): their labels,
 * "" when they carry none. */
static dla_status ds_first_targets(const trainer *tr, const dla_train_data *d, const char *what,
                                   int check, int *classify, int *per_step, char *format,
                                   dla_dtype *dtype)
{
    dla_tensor *o[DLA__DS_MAX] = {NULL};
    dla_status st = dla__ds_first_obs(d->datastore, o, tr->fn);
    if (st != DLA_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        return dla_set_error(st, "%s: %s: the datastore's observation 0: %s", tr->fn, what, msg);
    }
    dla_tensor *t = o[1];
    /* int32 of one channel for a network whose output is a sequence of
     * classes: a class number per step (one per observation could not
     * train such a network). A single value stays one class per
     * observation, which read_network refuses with the remedy for the
     * usual mistake (OutputMode "last"), unless labeled a sequence. */
    const int cdim = dla_tensor_find_dim(t, 'C');
    const int64_t channels = dla_tensor_dim(t, cdim ? cdim : 1);
    const int i32 = dla_tensor_dtype(t) == DLA_I32;
    /* A single unlabeled value beside predictors of one step is that
     * step's class too: data whose first sequence is one step long were
     * refused. */
    int64_t in_dims[DLA_MAX_DIMS];
    char in_fmt[DLA_MAX_DIMS + 1] = "";
    dla_net_input_activation(tr->net, 0, in_dims, in_fmt);
    const int one_step = !*dla_tensor_format(t) && strchr(in_fmt, 'T') &&
                         obs_steps(o[0], in_fmt) == 1;
    *per_step = i32 && channels == 1 && tr->classes > 1 && strchr(tr->out_format, 'T') &&
                (dla_tensor_numel(t) > 1 || dla_tensor_find_dim(t, 'T') || one_step);
    *classify = i32 && (dla_tensor_numel(t) == 1 || *per_step);
    snprintf(format, DLA_MAX_DIMS + 1, "%s", dla_tensor_format(t));
    *dtype = dla_tensor_dtype(t);
    char w[192];
    snprintf(w, sizeof w, "%s: the datastore's observation 0", what);
    if (check && *classify != tr->classify)
        st = dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                           "%s: %s: the datastore's targets are %s where the training data's are "
                           "%s", tr->fn, what,
                           tr->classify ? "responses" : "class numbers (int32)",
                           tr->classify ? "class numbers" : "responses");
    else if (check)
        st = renamed(*classify ? dla__train_check_classes(w, t, tr->classes)
                               : dla__train_check_channels(w, t, tr->out_format, tr->classes, 1),
                     tr->fn);
    dla__ds_drop(d->datastore->nout, o);
    return st;
}

/* Whether the datastore's sequence targets line up with their predictors
 * step for step: when the first observation's do (fmts, the labels the
 * queue gives its two outputs, both with T). A network whose output has
 * another number of steps than its input (a strided convolution or
 * pooling over T, a custom layer) has targets of its output's steps,
 * which the predictors' cannot check. */
static int ds_steps_align(const trainer *tr, const dla_train_data *d, const char *const *fmts)
{
    dla_tensor *o[DLA__DS_MAX] = {NULL};
    if (dla__ds_first_obs(d->datastore, o, tr->fn) != DLA_OK)
        return 1; /* the queue's first batch names the failure */
    const int same = obs_steps(o[0], fmts[0]) == obs_steps(o[1], fmts[1]);
    dla__ds_drop(d->datastore->nout, o);
    return same;
}

/* Responses per step padded with NaN (tr->nan_steps): the steps that are
 * NaN must be each observation's padding, whole steps after its last
 * target (before its first with left padding). A NaN among an
 * observation's targets (a missing measurement) was taken for padding and
 * left out of the loss and the RMSE in silence, while the same NaN in
 * targets that line up with their predictors stops training ("training
 * loss is NaN"). Whole NaN steps at the end (the start) of an observation's
 * targets are its padding still: a NaN there cannot be told from it. Read
 * on the host, as class numbers per step are. */
static dla_status check_nan_padding(const char *what, dla_tensor *t, int left)
{
    const int bd = dla_tensor_find_dim(t, 'B'), td = dla_tensor_find_dim(t, 'T');
    const int64_t n = dla_tensor_numel(t);
    if (!bd || !td || n == 0)
        return DLA_OK;
    const int64_t nb = dla_tensor_dim(t, bd), ns = dla_tensor_dim(t, td), per = n / (nb * ns);
    int64_t sb = 1, st_ = 1;
    for (int d = 1; d < bd; d++)
        sb *= dla_tensor_dim(t, d);
    for (int d = 1; d < td; d++)
        st_ *= dla_tensor_dim(t, d);
    double *v = dla_malloc(sizeof *v * (size_t)n);
    int64_t *nans = dla_malloc(sizeof *nans * (size_t)(nb * ns));
    if (!v || !nans) {
        dla_free(v);
        dla_free(nans);
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "%s: cannot read the %lld targets to check "
                             "them", what, (long long)n);
    }
    dla_scope_begin();
    dla_status st = dla_tensor_to_host(dla_cast(t, DLA_F64), v, sizeof *v * (size_t)n);
    dla_scope_end();
    memset(nans, 0, sizeof *nans * (size_t)(nb * ns));
    for (int64_t i = 0; st == DLA_OK && i < n; i++)
        if (isnan(v[i]))
            nans[(i / sb) % nb + nb * ((i / st_) % ns)]++;
    /* Right padding: no NaN step before the last with targets; left: none
     * after the first. A step NaN in some channels alone is no padding. */
    int64_t bad_b = -1, bad_s = -1;
    for (int64_t b = 0; st == DLA_OK && b < nb && bad_b < 0; b++) {
        int64_t edge = -1; /* the last step with targets (left: the first) */
        for (int64_t s = 0; s < ns; s++)
            if (nans[b + nb * s] == 0 && (edge < 0 || !left))
                edge = s;
        for (int64_t s = 0; s < ns && bad_b < 0; s++) {
            const int64_t c = nans[b + nb * s];
            if ((c > 0 && c < per) || (c == per && edge >= 0 && (left ? s > edge : s < edge)))
                bad_b = b, bad_s = s;
        }
    }
    dla_free(v);
    dla_free(nans);
    if (st != DLA_OK || bad_b < 0)
        return st;
    return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                         "%s: observation %lld of the batch, step %lld: NaN among its targets. "
                         "Targets of an output of other steps than its input are padded with "
                         "NaN, and a NaN target cannot be told from padding (it was left out "
                         "of the loss in silence): remove or fill it",
                         what, (long long)bad_b, (long long)bad_s);
}

/* A batch of a datastore's targets, checked as the tensor path checks all
 * its targets before training: one int32 class number in 0..K-1 per
 * observation when the first observation's were such (tr->classify), else
 * responses with the network's channels. val: the validation (testnet's)
 * queue; index: the batch's number in its pass, from 1. The message names
 * the data and the batch; the caller prefixes the function and the epoch
 * (or the validation's iteration). */
static dla_status check_ds_batch(const trainer *tr, int val, int64_t index, dla_tensor *x,
                                 dla_tensor *m, dla_tensor *t)
{
    char what[192];
    snprintf(what, sizeof what, "%s: the datastore's mini-batch %lld",
             val && strcmp(tr->fn, "dla_testnet") ? "ValidationData" : "data", (long long)index);
    if (tr->classify && tr->seq_targets)
        return renamed(dla__train_check_step_classes(
                           what, t, m && dla_tensor_numel(m) == dla_tensor_numel(t) ? m : NULL,
                           tr->classes),
                       NULL);
    const int xb = dla_tensor_find_dim(x, 'B');
    const int64_t n = xb ? dla_tensor_dim(x, xb) : dla_tensor_dim(x, dla_tensor_ndims(x));
    if (tr->classify && (dla_tensor_dtype(t) != DLA_I32 || dla_tensor_numel(t) != n)) {
        char d[256];
        dla_tensor_describe(t, d, sizeof d);
        return dla_set_error(DLA_ERR_SHAPE,
                             "%s: targets (%s) are not one int32 class number per observation "
                             "(%lld), as the datastore's observation 0 gave", what, d,
                             (long long)n);
    }
    dla_status st = renamed(tr->classify ? dla__train_check_classes(what, t, tr->classes)
                                         : dla__train_check_channels(what, t, tr->out_format,
                                                                     tr->classes, n),
                            NULL);
    if (st == DLA_OK && !tr->classify && tr->nan_steps)
        st = check_nan_padding(what, t, !strcmp(tr->o.sequence_padding_direction, "left"));
    return st;
}

/* A mini-batch queue over d: predictors cast to the network's dtype (in
 * its input's format when unformatted), targets as they come (class
 * numbers relabeled 1 x N "CB" so that one-hot encoding finds C). */
static int input_layer(const dla_net *net, const char *name);

static dla_status make_queue(trainer *tr, const dla_train_data *d, int validation, dla_mbq **q,
                             dla_tensor **targets)
{
    /* testnet's data is its only data, read as validation data is. */
    const char *what = validation && strcmp(tr->fn, "dla_testnet") ? "ValidationData" : "data";
    int64_t n = observations(d);
    /* Empty validation data would validate nothing and report NaN losses
     * as if the network had diverged. */
    if (n < 1)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "%s: %s has no observation (%lld along the %s); give "
                             "data, or no %s", tr->fn, what, (long long)n,
                             d->images ? "datastore's files" : d->datastore ? "datastore"
                                         : d->sequences ? "sequence list"
                                                        : "predictors' observation dim",
                             validation ? "ValidationData" : "training data");
    tr->longest[validation] = 0;
    for (int64_t i = 0; d->sequences && i < n; i++)
        if (dla_seqlist_length(d->sequences, i) > tr->longest[validation])
            tr->longest[validation] = dla_seqlist_length(d->sequences, i);
    /* Sequence targets: padded by the queue with the predictors, checked
     * once here (train_seqtarget.c). */
    if (d->target_sequences) {
        dla_status sst = dla__train_check_target_sequences(tr->fn, what, d->sequences,
                                                           d->target_sequences, tr->out_format,
                                                           tr->classes);
        if (sst == DLA_OK &&
            dla__train_seq_targets_are_classes(d->target_sequences, tr->classes) != tr->classify)
            sst = dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                "%s: %s: target_sequences are %s where the training data's are %s",
                                tr->fn, what, tr->classify ? "responses" : "class numbers",
                                tr->classify ? "class numbers" : "responses");
        if (sst != DLA_OK)
            return sst;
        *targets = NULL;
    } else if (tr->seq_targets && tr->classify && !ds_targets(d)) {
        /* Class numbers per step come only as sequences (or a datastore's
         * int32 sequences, checked below). */
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "%s: %s: the training data's target_sequences are class numbers; "
                             "give these targets as target_sequences of class numbers too",
                             tr->fn, what);
    }
    /* Targets in the datastore: its first observation's checked here,
     * every batch's as it comes (check_ds_batch). */
    const int dst = ds_targets(d);
    int ds_classify = 0, ds_per_step = 0;
    char ds_tfmt[DLA_MAX_DIMS + 1] = "";
    dla_dtype ds_tdtype = DLA_F32;
    if (dst) {
        dla_status fst = ds_first_targets(tr, d, what, 1, &ds_classify, &ds_per_step, ds_tfmt,
                                          &ds_tdtype);
        if (fst != DLA_OK)
            return fst;
    }
    tr->ds_targets[validation] = dst;
    /* The predictors against the network's input layer first: laid out
     * the other way (MATLAB's N-by-numFeatures), they made the targets'
     * checks below speak of class counts. (An input given by example has
     * no fixed size: a convolutional network may take larger images.) */
    if (d->predictors && input_layer(tr->net, dla_net_input_name(tr->net, 0))) {
        char in_fmt[DLA_MAX_DIMS + 1] = "";
        int64_t in_dims[DLA_MAX_DIMS];
        const int in_nd = dla_net_input_activation(tr->net, 0, in_dims, in_fmt);
        dla_status pst = in_nd > 0 ? dla__train_check_predictors(tr->fn, what, d->predictors,
                                                                  in_fmt, in_nd, in_dims)
                                   : DLA_OK;
        if (pst != DLA_OK)
            return pst;
    }
    /* Labels and class counts, once per data set (train_check.c). */
    dla_status cst = d->target_sequences || dst ? DLA_OK
                     : tr->classify && !tr->seq_targets
                         ? dla__train_check_classes(what, d->targets, tr->classes)
                         : dla__train_check_channels(what, d->targets, tr->out_format,
                                                     tr->classes, n);
    /* train_check.c's messages name dla_trainnet: testnet's said
     * "dla_testnet: dla_trainnet: data: ...". */
    if (cst != DLA_OK)
        return renamed(cst, tr->fn);
    if (d->target_sequences || dst) {
        /* padded by the queue below; or the datastore's */
        *targets = NULL;
    } else if (dla_tensor_numel(d->targets) == n && dla_tensor_dtype(d->targets) == DLA_I32 &&
        tr->classify) {
        /* A reference of our own even when the caller has a scope open. */
        dla_scope_begin();
        *targets = dla_tensor_retain(dla_reshape(d->targets, "CB", DLA_DIMS(1, n)));
        dla_scope_end();
    } else if (tr->classify) {
        return dla_set_error(DLA_ERR_SHAPE,
                             "%s: %s: targets hold %lld values; class numbers need one "
                             "int32 per observation (%lld)", tr->fn, what,
                             (long long)dla_tensor_numel(d->targets), (long long)n);
    } else {
        int od = obs_dim(d->targets);
        if (dla_tensor_dim(d->targets, od) != n)
            return dla_set_error(DLA_ERR_SHAPE,
                                 "%s: %s: %lld targets along dim %d for %lld observations",
                                 tr->fn, what, (long long)dla_tensor_dim(d->targets, od), od, (long long)n);
        *targets = dla_tensor_retain(d->targets);
    }
    if (*targets && dla_tensor_status(*targets) != DLA_OK) {
        dla_status st = dla_tensor_status(*targets);
        dla_tensor_release(*targets);
        *targets = NULL;
        return st;
    }
    const char *cast = dla__net_cast_name(tr->net);
    char in_fmt[DLA_MAX_DIMS + 1] = "";
    int64_t dims[DLA_MAX_DIMS];
    /* A datastore's batches always take the input's labels: its B dim
     * says which dim observations are joined along. */
    if ((d->predictors && !*dla_tensor_format(d->predictors)) || d->datastore)
        dla_net_input_activation(tr->net, 0, dims, in_fmt);
    const char *tfmt = *targets && !tr->classify && !*dla_tensor_format(*targets) ? tr->out_format
                                                                                : NULL;
    /* Sequence targets in memory for a datastore of sequences, which is
     * not read through before training: taken as padded to its longest
     * sequence (their steps), as a list's are checked to be, so that
     * align_targets cuts them to each batch's steps (the loss refused
     * every batch shorter than the longest: "1x6x12 does not match y's
     * 1x6x10"). */
    if (d->datastore && strchr(in_fmt, 'T') && *targets) {
        const char *labels = *dla_tensor_format(*targets) ? dla_tensor_format(*targets)
                                                          : tr->out_format;
        const char *steps = strchr(labels, 'T');
        if (steps)
            tr->longest[validation] = dla_tensor_dim(*targets, (int)(steps - labels) + 1);
    }
    /* A datastore's targets: class numbers 1 x B "CB" (one-hot finds C),
     * unformatted responses labeled and joined as the network's output;
     * formatted ones keep their labels, and their own B and T say how
     * they join (sequence responses "CBT" padded per batch as unformatted
     * ones labeled so are: left to the datastore's rule, sequences of
     * different lengths were refused at the first batch). */
    const int own_labels = strchr(ds_tfmt, 'B') && strchr(ds_tfmt, 'T');
    const char *ds_fmts[2] = {*in_fmt ? in_fmt : NULL,
                              ds_per_step      ? (own_labels ? ds_tfmt : "CBT")
                              : ds_classify    ? "CB"
                              : own_labels     ? ds_tfmt
                              : !*ds_tfmt && *tr->out_format ? tr->out_format
                                                             : NULL};
    /* Class numbers per step are padded as a list's target_sequences are:
     * in single, with the padding value (one-hot as no class). Integer
     * or logical response sequences are padded in the network's dtype,
     * which the loss takes them in anyway: SequencePaddingValue is the
     * predictors' (-1 or 0.5, which uint8 and int32 do not hold, refused
     * every batch naming casts trainnet has none of), and their padded
     * steps are masked out. */
    const int int_steps = ds_fmts[1] && strchr(ds_fmts[1], 'T') && ds_tdtype != DLA_F32 &&
                          ds_tdtype != DLA_F64;
    const char *ds_casts[2] = {cast, ds_per_step ? "single" : int_steps ? cast : NULL};
    dla_mbq_input in[2] = {
        /* Sequences come with their padding mask (the second output),
         * for the loss and metrics of sequence-to-sequence targets. */
        {.tensor = d->predictors, .sequences = d->sequences, .images = d->images,
         .datastore = d->datastore, .cast = dst ? NULL : cast,
         .format = *in_fmt && !dst ? in_fmt : NULL, .formats = dst ? ds_fmts : NULL,
         .casts = dst ? ds_casts : NULL,
         .mask = d->sequences != NULL || (d->datastore && strchr(in_fmt, 'T'))},
        {.tensor = *targets, .sequences = d->target_sequences, .format = tfmt && *tfmt ? tfmt : NULL},
    };
    /* Chunked sequences are padded to the longest here and cut later. */
    const char *len = tr->chunk ? "longest" : tr->o.sequence_length;
    dla_mbq_options mo = {
        .mini_batch_size = tr->o.mini_batch_size,
        .partial_mini_batch = validation ? "return" : tr->o.partial_mini_batch,
        .seed = tr->o.shuffle_seed,
        .dispatch_in_background = tr->o.dispatch_in_background || d->images || d->datastore,
        .device = tr->dev,
        .sequence = {.length = len, .padding_value = tr->o.sequence_padding_value,
                     .padding_direction = tr->o.sequence_padding_direction},
    };
    /* Sequence targets in the datastore line up with their predictors
     * step for step, as target_sequences are checked to. */
    const int align = dst && ds_fmts[0] && strchr(ds_fmts[0], 'T') && ds_fmts[1] &&
                      strchr(ds_fmts[1], 'T') && ds_steps_align(tr, d, ds_fmts);
    /* Class numbers per step that do not line up with their predictors
     * have no mask: padded with NaN, their padded steps are no class (one-
     * hot zeros, passed over by check_ds_batch). Padded with
     * SequencePaddingValue, its default 0 trained every padded step as
     * class 0, in silence. */
    const int nan_responses = dst && ds_fmts[1] && strchr(ds_fmts[1], 'T') && !align &&
                              !ds_per_step && !ds_classify && (!tr->loss || tr->loss->name);
    const int nan_pad = (ds_per_step && !align) || nan_responses;
    tr->nan_steps |= nan_pad;
    dla_status st = dla__mbq_create_counted(dst ? 1 : 2, in, &mo, align, nan_pad, q);
    if (st != DLA_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        dla_set_error(st, "%s: %s: %s", tr->fn, what, msg);
        dla_tensor_release(*targets);
        *targets = NULL;
    }
    return st;
}

/* Nonzero when the layer the network input name feeds is an input layer
 * (one that can normalize), not another layer taking the input (a custom
 * layer may have a parameter called "Mean" too). */
static int input_layer(const dla_net *net, const char *name)
{
    for (int i = 0; i < dla_net_layer_count(net); i++)
        if (strcmp(dla_net_layer_name(net, i), name) == 0) {
            const char *type = dla_net_layer_type(net, i);
            return !strcmp(type, "imageInput") || !strcmp(type, "image3dInput") ||
                   !strcmp(type, "sequenceInput") ||
                   !strcmp(type, "featureInput");
        }
    return 0;
}

/* Whether tensor v (NULL: none) holds value alone; -1 when it cannot be
 * read. */
static int all_equal(dla_tensor *v, double value)
{
    if (!v)
        return 1;
    const int64_t n = dla_tensor_numel(v);
    double *h = dla_malloc(sizeof *h * (size_t)(n ? n : 1));
    if (!h)
        return -1;
    dla_scope_begin();
    dla_status st = dla_tensor_to_host(dla_cast(v, DLA_F64), h, sizeof *h * (size_t)n);
    dla_scope_end();
    int same = st == DLA_OK;
    for (int64_t k = 0; same && k < n; k++)
        same = h[k] == value;
    dla_free(h);
    return st == DLA_OK ? same : -1;
}

/* Input layer `name`'s statistics are empty (MATLAB's word): none given in
 * its options, and its Mean (and StandardDeviation) still the values it
 * was made with, 0 (and 1), which normalize nothing. Statistics computed
 * or set since (a trained, loaded or edited network) are not empty. */
static int statistics_empty(const dla_net *net, const char *name)
{
    const int i = dla__net_find(net, name);
    if (i < 0 || net->layers[i]->given[0] || net->layers[i]->given[1])
        return 0;
    dla_status before = dla_last_status();
    dla_tensor *sd = dla_net_get(net, name, "StandardDeviation");
    if (!sd && before == DLA_OK)
        dla_clear_error(); /* "zerocenter": no StandardDeviation */
    return all_equal(dla_net_get(net, name, "Mean"), 0.0) == 1 && all_equal(sd, 1.0) == 1;
}

/* Statistics of each normalizing input layer from the training data, in
 * chunks (a chunk is cast to double inside): every such layer's with
 * ResetInputNormalization, else (MATLAB's false) those that are empty. */
static dla_status input_statistics(trainer *tr, const dla_train_data *d, int only_empty, int *done)
{
    *done = 0;
    int nin = dla_net_input_count(tr->net);
    for (int i = 0; i < nin; i++) {
        const char *name = dla_net_input_name(tr->net, i);
        dla_status before = dla_last_status();
        if (!input_layer(tr->net, name) || !dla_net_get(tr->net, name, "Mean")) {
            if (before == DLA_OK)
                dla_clear_error();
            continue; /* "none": nothing to compute */
        }
        if (only_empty && !statistics_empty(tr->net, name))
            continue;
        int64_t n = observations(d);
        char fmt[DLA_MAX_DIMS + 1] = "";
        int64_t dims[DLA_MAX_DIMS];
        dla_net_input_activation(tr->net, i, dims, fmt);
        /* A datastore's sequences may differ in length: one at a time. */
        const int64_t per = d->sequences || (d->datastore && strchr(fmt, 'T')) ? 1 : 1024;
        int nchunks = (int)((n + per - 1) / per);
        dla_tensor **chunks = dla_malloc(sizeof *chunks * (size_t)(nchunks ? nchunks : 1));
        if (!chunks)
            return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
        dla_scope_begin();
        dla_status rst = DLA_OK; /* a datastore's read, whose message names the file */
        for (int c = 0; c < nchunks && rst == DLA_OK; c++) {
            if (d->sequences) {
                int64_t idx = c;
                dla_padsequences(d->sequences, 1, &idx, NULL, &chunks[c], NULL);
                continue;
            }
            if (d->images) { /* the whole datastore, read once (docs/data.md) */
                int64_t idx[1024], m = n - (int64_t)c * 1024 < 1024 ? n - (int64_t)c * 1024 : 1024;
                for (int64_t k = 0; k < m; k++)
                    idx[k] = (int64_t)c * 1024 + k;
                rst = dla_imds_read_files(d->images, m, idx, &chunks[c], NULL);
                continue;
            }
            if (d->datastore) { /* the same, a chunk of observations at a time, in order */
                const int64_t m = n - (int64_t)c * per < per ? n - (int64_t)c * per : per;
                const dla__ds_how how = {.at = {dla__ds_format_b_dim(fmt)}};
                dla_tensor *outs[DLA__DS_MAX] = {NULL};
                rst = dla__ds_read_span(d->datastore, (int64_t)c * per, m, &how, outs,
                                        "dla_trainnet");
                dla_tensor *x = outs[0];
                dla__ds_drop(d->datastore->nout - 1, outs + 1); /* the targets, when there */
                if (rst == DLA_OK) {
                    int64_t xd[DLA_MAX_DIMS];
                    int nd = dla_tensor_dims(x, xd);
                    chunks[c] = dla_reshape(dla__data_deliver(x), fmt, nd, xd);
                }
                continue;
            }
            dla_tensor *x = d->predictors;
            int od = obs_dim(x);
            dla_tensor *s = dla_slice(x, od, (int64_t)c * 1024, 1, (int64_t)(c + 1) * 1024);
            if (!*dla_tensor_format(x)) {
                int64_t sd[DLA_MAX_DIMS];
                int nd = dla_tensor_dims(s, sd);
                s = dla_reshape(dla_contiguous(s), fmt, nd, sd);
            }
            chunks[c] = s;
        }
        dla_status st = rst;
        if (st != DLA_OK) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", dla_last_error());
            dla_set_error(st, "dla_trainnet: input normalization statistics: %s", msg);
        } else {
            st = dla_net_set_input_statistics(tr->net, name, nchunks, chunks);
        }
        dla_scope_end();
        dla_free(chunks);
        if (st != DLA_OK)
            return st;
        *done = 1;
    }
    return DLA_OK;
}

/* -------------------------------------------------------------- validation */

/* Loss and metrics of the validation data in inference mode, weighted by
 * each batch's observations. */
static dla_status validate(trainer *tr, double *loss, double *acc, double *rmse)
{
    *loss = *acc = *rmse = NAN;
    dla_tensor **saved = NULL;
    dla_status st = DLA_OK;
    if (tr->has_recurrent && tr->ns) {
        /* The recurrent state of the current batch stays for its next chunk;
         * validation starts from the initial state. */
        saved = dla_malloc(sizeof *saved * (size_t)tr->ns);
        if (!saved)
            return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
        for (int i = 0; i < tr->ns; i++)
            saved[i] = dla_tensor_retain(dla_table_value(dla_net_state(tr->net), i));
        st = dla_net_reset_state(tr->net);
    }
    double sl = 0, sa = 0, sr = 0, count = 0, elems = 0, acount = 0, lcount = 0;
    /* The training batch's mask (L-BFGS keeps its one) comes back after. */
    dla_tensor *train_mask = tr->mask;
    const double train_steps = tr->mask_steps;
    dla_mbq_reset(tr->val_q);
    int64_t vb = 0; /* the batch's number, for messages */
    while (st == DLA_OK && dla_mbq_hasdata(tr->val_q)) {
        dla_scope_begin();
        dla_tensor *b[2], *m, *y, *l;
        st = next_batch(tr, tr->val_q, ++vb, &b[0], &m, &b[1]);
        if (st == DLA_OK)
            st = use_mask(tr, m, dla_tensor_dtype(b[0]));
        if (st == DLA_OK)
            st = dla_net_predict(tr->net, 1, &b[0], 1, &y, NULL);
        dla_tensor *t = st == DLA_OK ? targets_for_loss(tr, b[1], y) : NULL;
        if (st == DLA_OK)
            st = loss_of(tr, y, t, &l);
        double a, r, lv, aover;
        if (st == DLA_OK)
            st = scalar_of(l, &lv);
        if (st == DLA_OK)
            st = metrics_of(tr, y, t, &a, &r, &aover);
        if (st == DLA_OK) {
            /* A sequence-to-sequence batch weighs its valid steps (its
             * figures are means over them), so that the whole is a mean
             * over every valid step; any other its observations. */
            const int seq = steps_of(y, m);
            double nb = seq ? tr->mask_steps : (double)dla_tensor_dim(y, obs_dim(y));
            /* A loss over the steps that hold a class weighs them, as the
             * accuracy does. */
            double lw = nb;
            dla_tensor *held = class_steps_of(tr, y, t);
            if (held)
                st = scalar_of(dla_sum(dla_cast(held, DLA_F64), 0, NULL), &lw);
            sl += lw > 0 ? lv * lw : 0;
            lcount += lw;
            /* An accuracy over the steps that hold a class weighs them
             * (the batches' accuracies weighted by observations were not
             * the whole data's, nor testnet's); a batch without one adds
             * nothing. */
            const double aw = aover >= 0 ? aover : nb;
            sa += aw > 0 ? a * aw : 0;
            acount += aw;
            double ne = seq    ? tr->mask_steps * (double)dla_tensor_numel(y) / (double)dla_tensor_numel(m)
                        : held ? lw * (double)dla_tensor_numel(y) / (double)dla_tensor_numel(held)
                               : (double)dla_tensor_numel(y);
            sr += r * r * ne;
            count += nb;
            elems += ne;
        }
        tr->mask = tr->batch_mask = NULL;
        dla_scope_end();
    }
    tr->mask = train_mask;
    tr->mask_steps = train_steps;
    if (saved) {
        dla_status rs = dla_net_set_state(tr->net, tr->ns, saved);
        st = st == DLA_OK ? rs : st;
        for (int i = 0; i < tr->ns; i++)
            dla_tensor_release(saved[i]);
        dla_free(saved);
    }
    if (st == DLA_OK && count > 0) {
        *loss = sl / lcount;
        if (tr->metrics & DLA__METRIC_ACCURACY)
            *acc = sa / acount;
        if (tr->metrics & DLA__METRIC_RMSE)
            *rmse = sqrt(sr / elems);
    }
    return st;
}

/* --------------------------------------------------------------- updating */

static dla_status update(trainer *tr, dla_tensor **grads, double lr)
{
    const char *solver = tr->o.solver;
    int n = tr->nl;
    /* One call for all rows when their factors agree, else one per row
     * (MATLAB's per-layer learn-rate factors). */
    int first = 0, count = tr->uniform_lr ? n : 1;
    dla_status st = DLA_OK;
    for (; st == DLA_OK && first < n; first += count) {
        double r = lr * (tr->uniform_lr ? 1.0 : tr->lr_factor[first]);
        if (!strcmp(solver, "sgdm"))
            st = dla_sgdmupdate(count, tr->params + first, grads + first, tr->state1 + first, r,
                                tr->o.momentum);
        else if (!strcmp(solver, "adam"))
            st = dla_adamupdate(count, tr->params + first, grads + first, tr->state1 + first,
                                tr->state2 + first, (int)tr->iteration, r,
                                tr->o.gradient_decay_factor, tr->o.squared_gradient_decay_factor,
                                tr->o.epsilon);
        else
            st = dla_rmspropupdate(count, tr->params + first, grads + first, tr->state1 + first, r,
                                   tr->o.squared_gradient_decay_factor, tr->o.epsilon);
    }
    return st;
}

/* ------------------------------------------------------------ checkpoints */

static dla_status checkpoint(trainer *tr)
{
    char stamp[64], path[4096];
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(stamp, sizeof stamp, "%Y_%m_%d__%H_%M_%S", &tm);
    int len = snprintf(path, sizeof path, "%s/net_checkpoint__%lld__%s.safetensors",
                       tr->o.checkpoint_path, (long long)tr->iteration, stamp);
    /* Checked before training (dla__train_check_paths); a cut name would
     * save under another file name. */
    if (len < 0 || (size_t)len >= sizeof path)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_trainnet: CheckpointPath: the "
                             "checkpoint's path is longer than %zu bytes", sizeof path - 1);
    dla_status st = dla_net_save(tr->net, path);
    if (st != DLA_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        dla_set_error(st, "dla_trainnet: CheckpointPath: %s", msg);
    }
    return st;
}

/* The checkpoint at the end of an epoch, when CheckpointFrequencyUnit is
 * "epoch" and this is one of them. */
static dla_status epoch_checkpoint(trainer *tr, int64_t epoch)
{
    if (tr->o.checkpoint_path && !strcmp(tr->o.checkpoint_frequency_unit, "epoch") &&
        epoch % tr->o.checkpoint_frequency == 0)
        return checkpoint(tr);
    return DLA_OK;
}

/* ------------------------------------------------------------ the report */

static void report_row(trainer *tr, const dla_training_state *s, int validated)
{
    char row[512];
    dla__train_table_row(&tr->table, s, validated, row, sizeof row);
    say(tr, row);
    tr->reported = s->iteration;
}

static void progress_text(trainer *tr, const dla_training_state *s)
{
    if (!tr->progress)
        return;
    char text[200], loss[32];
    const int lbfgs = tr->lb.state != NULL;
    if (isfinite(s->training_loss))
        snprintf(loss, sizeof loss, "%.4f", s->training_loss);
    else
        snprintf(loss, sizeof loss, "%s", isnan(s->training_loss) ? "NaN" : s->training_loss < 0 ? "-Inf" : "Inf");
    int n = snprintf(text, sizeof text, "%s %lld/%d  loss %s", lbfgs ? "iteration" : "epoch",
                     lbfgs ? (long long)s->iteration : (long long)s->epoch,
                     lbfgs ? tr->o.max_iterations : tr->o.max_epochs, loss);
    if (!isnan(s->training_accuracy) && n > 0 && (size_t)n < sizeof text)
        n += snprintf(text + n, sizeof text - (size_t)n, "  accuracy %.1f%%", s->training_accuracy);
    if (!isnan(tr->hist.info->final_validation_loss) && n > 0 && (size_t)n < sizeof text)
        snprintf(text + n, sizeof text - (size_t)n, "  validation %.4f",
                 tr->hist.info->final_validation_loss);
    dla_progress_update(tr->progress, tr->iteration, text);
}

/* The chart's series of an iteration: the training ones (training) and
 * the validation figures it has. */
static void record_series(trainer *tr, const dla_training_state *s, int training)
{
    if (!tr->progress)
        return;
    if (training)
        dla_progress_record(tr->progress, "TrainingLoss", s->iteration, s->training_loss);
    if (!isnan(s->validation_loss))
        dla_progress_record(tr->progress, "ValidationLoss", s->iteration, s->validation_loss);
    if (tr->metrics & DLA__METRIC_ACCURACY) {
        if (training)
            dla_progress_record(tr->progress, "TrainingAccuracy", s->iteration,
                                s->training_accuracy);
        if (!isnan(s->validation_accuracy))
            dla_progress_record(tr->progress, "ValidationAccuracy", s->iteration,
                                s->validation_accuracy);
    }
    if (tr->metrics & DLA__METRIC_RMSE) {
        if (training)
            dla_progress_record(tr->progress, "TrainingRMSE", s->iteration, s->training_rmse);
        if (!isnan(s->validation_rmse))
            dla_progress_record(tr->progress, "ValidationRMSE", s->iteration, s->validation_rmse);
    }
}

static void record(trainer *tr, const dla_training_state *s) { record_series(tr, s, 1); }

static dla_status write_chart(trainer *tr)
{
    if (!tr->progress)
        return DLA_OK;
    dla_status st = dla_progress_write_chart(tr->progress, tr->o.plots_path);
    if (st != DLA_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        dla_set_error(st, "dla_trainnet: Plots: %s", msg);
    }
    return st;
}

/* ------------------------------------------------------------- the loop */

/* The loss, read to the host; why stays "" when it and every gradient are
 * finite, else says which is not. One read checks both: the loss plus 0
 * times the sum of each gradient is the loss itself, or NaN when any
 * element of any gradient is NaN or infinite. (A relu turns a NaN input
 * into 0, so NaN data can leave the loss finite while the gradient of the
 * first layer, and then its weights, are NaN.) */
static dla_status read_loss(const trainer *tr, dla_tensor *loss, dla_tensor **grads, double *value,
                            char *why, size_t size)
{
    /* Unformatted 1 x 1 in the loss's dtype, whatever a custom loss gave;
     * two ops a learnable (its sum, an add) and two more. */
    dla_dtype dt = dla_tensor_dtype(loss);
    dla_tensor *sum = NULL;
    for (int i = 0; i < tr->nl; i++) {
        dla_tensor *g = dla_reshape(dla_sum(grads[i], 0, NULL), "", DLA_DIMS(1, 1));
        if (dla_tensor_dtype(g) != dt)
            g = dla_cast(g, dt);
        sum = sum ? dla_add(sum, g) : g;
    }
    dla_tensor *probe = dla_add(dla_reshape(loss, "", DLA_DIMS(1, 1)), dla_affine(sum, 0.0, 0.0));
    /* scalar_of, not dla_tensor_item: a refused allocation in the read
     * must fail the step, not pass for a NaN loss. */
    dla_status st = scalar_of(probe, value);
    if (st != DLA_OK)
        return st;
    if (isfinite(*value))
        return DLA_OK;
    if ((st = scalar_of(loss, value)) != DLA_OK)
        return st;
    if (!isfinite(*value)) {
        snprintf(why, size, "Training loss is %s",
                 isnan(*value) ? "NaN" : *value < 0 ? "-Inf" : "Inf");
        return DLA_OK;
    }
    dla_table *lt = dla_net_learnables(tr->net);
    for (int i = 0; i < tr->nl; i++) {
        double g;
        if ((st = scalar_of(dla_sum(grads[i], 0, NULL), &g)) != DLA_OK)
            return st;
        if (!isfinite(g)) {
            snprintf(why, size, "Gradient of %s/%s is not finite", dla_table_layer(lt, i),
                     dla_table_parameter(lt, i));
            return DLA_OK;
        }
    }
    snprintf(why, size, "Gradients are not finite");
    return DLA_OK;
}

/* A NaN or infinite mini-batch loss, or gradient. MATLAB's trainnet stops
 * at a NaN loss (stop reason "Training loss is NaN"); this one stops at
 * either, with the iteration in the history and the table, and fails with
 * DLA_ERR_STATE so that a C caller cannot take NaN weights for a trained
 * network. The iteration's state and update were not applied: *trained is
 * the network of the iteration before. */
static dla_status stop_diverged(trainer *tr, dla_training_state *s, const char *why, int *stop)
{
    snprintf(tr->hist.info->stop_reason, sizeof tr->hist.info->stop_reason, "%s", why);
    *stop = 1;
    tr->diverged = 1;
    s->time_elapsed = now() - tr->start;
    dla_status st = history_push(tr, s);
    if (st != DLA_OK)
        return st;
    record(tr, s);
    if (tr->o.verbose) {
        char rule[512], line[sizeof tr->hist.info->stop_reason + 32];
        report_row(tr, s, 0);
        dla__train_table_rule(&tr->table, rule, sizeof rule);
        say(tr, rule);
        snprintf(line, sizeof line, "Training stopped: %s.\n", why);
        say(tr, line);
    }
    progress_text(tr, s);
    char lower[sizeof tr->hist.info->stop_reason], loss[64] = "";
    snprintf(lower, sizeof lower, "%s", why);
    lower[0] = (char)(lower[0] - 'A' + 'a');
    if (isfinite(s->training_loss))
        snprintf(loss, sizeof loss, " (the loss, %.6g, is finite)", s->training_loss);
    /* OutputNetwork "best-validation" is honoured here too (dla_trainnet
     * swaps the network in): the last one, which ran into the NaN, was
     * returned in its place, though the user asked for the best. */
    char which[160];
    if (tr->best_net)
        snprintf(which, sizeof which, "iteration %lld, the best validation (OutputNetwork "
                 "\"best-validation\")", (long long)tr->best_iteration);
    else
        snprintf(which, sizeof which, "iteration %lld (this iteration's update was not applied)",
                 (long long)tr->updated);
    return dla_set_error(DLA_ERR_STATE,
                         "dla_trainnet: epoch %d, iteration %lld: %s%s; training stopped, and "
                         "*trained holds the network of %s. Look for NaN or Inf in the "
                         "predictors and targets, or lower InitialLearnRate or set "
                         "GradientThreshold",
                         tr->epoch, (long long)tr->iteration, lower, loss, which);
}

static dla_status finish_iteration(trainer *tr, dla_training_state *sp, int last, int *stop);

/* One iteration on x, t (the batch's targets as the queue gave them) and
 * m (x's padding mask, or NULL). Sets *stop when an OutputFcn or
 * ValidationPatience ends training. */
static dla_status iterate(trainer *tr, dla_tensor *x, dla_tensor *m, dla_tensor *t, int last,
                          int *stop)
{
    int nl = tr->nl, ns = tr->ns;
    dla_status st = DLA_OK;
    dla_tensor **out = dla_malloc(sizeof *out * (size_t)(2 + nl + ns));
    if (!out)
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
    tr->iteration++;
    dla_training_state s = {.stage = "iteration", .epoch = tr->epoch, .iteration = tr->iteration,
                            .training_accuracy = NAN, .training_rmse = NAN,
                            .validation_loss = NAN, .validation_accuracy = NAN,
                            .validation_rmse = NAN, .gradient_norm = NAN, .step_norm = NAN};
    /* The iterations of an epoch place the schedules of a list that change
     * unit, and make a whole-training period in iterations; with chunks of
     * sequences an epoch has no fixed count (0: unknown). */
    s.learn_rate = dla__learn_rate_named("LearnRateSchedule", &tr->o.learn_rate_schedule,
                                         tr->o.initial_learn_rate, tr->epoch, (int)tr->iteration,
                                         tr->chunk ? 0 : tr->iterations_per_epoch,
                                         tr->o.max_epochs);
    /* Only a schedule function, or a list that changes unit with chunked
     * epochs, can refuse here (the options were checked):
     * training stops before this iteration's update, the work kept. */
    if (isnan(s.learn_rate)) {
        dla_free(out);
        char msg[512];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        dla_set_error(DLA_ERR_INVALID_ARGUMENT, "%s: %s", tr->fn, msg);
        /* A function's refusal may be this rank's alone: it meets the
         * others in the iteration's collectives with it (it skipped them,
         * and they waited out of step until the give-up). */
        return dla__train_par_failed_batch(&tr->par, DLA_ERR_INVALID_ARGUMENT);
    }
    tr->par.learn_rate = s.learn_rate;
    dla_scope_begin();
    /* The targets the loss sees: one-hot for class numbers, in Y's dtype
     * (single unless the network is double). */
    dla_tensor *tl = tr->classify ? onehot(tr, t, m, dla_tensor_dtype(x))
                                  : dla_tensor_dtype(t) != dla_tensor_dtype(x) ? dla_cast(t, dla_tensor_dtype(x))
                                                                               : t;
    st = dla_tensor_status(tl);
    if (st == DLA_OK)
        st = use_mask(tr, m, dla_tensor_dtype(x));
    /* In parallel with overlapped reductions, the workers agree on the
     * batch's sizes first: the weights go into the buckets as they start. */
    /* Whose loss is a mean over the steps that hold a class (the targets
     * have the output's dims) weighs them: their count, read only where
     * workers combine. */
    double steps = tr->mask_steps;
    if (st == DLA_OK && tr->par.on && tr->par.size > 1 && tr->loss->name) {
        dla_tensor *held = class_steps_of(tr, tl, tl);
        if (held)
            st = scalar_of(dla_sum(dla_cast(held, DLA_F64), 0, NULL), &steps);
    }
    st = dla__train_par_prestep(&tr->par, st, tr->net, dla_tensor_dim(x, obs_dim(x)), steps, nl);
    /* In parallel, the share's place in the batch, so that its random
     * draws (dropout) are one process's. */
    if (tr->par.on && tr->par.size > 1) {
        dla__batch_share bs = {.mine = dla_tensor_dim(x, obs_dim(x))};
        dla__mbq_last_share(tr->train_q, &bs.before, &bs.whole);
        dla__batch_share_set(&bs);
    }
    if (st == DLA_OK)
        st = dla_feval(step, tr, 2, (dla_tensor *[]){x, tl}, 2 + nl + ns, out);
    dla__batch_share_set(NULL);
    /* In parallel, the whole batch's loss, gradients and state. */
    const int tdim = dla_tensor_find_dim(x, 'T');
    st = dla__train_par_step(&tr->par, st, tr->net, st == DLA_OK && loss_by_steps(tr, out[1]),
                             tdim ? dla_tensor_dim(x, tdim) : 0, nl, ns, out);
    /* The loss and the gradients are checked before the new state and the
     * update are applied: a non-finite one stops training with the
     * network as it was (stop_diverged). */
    int diverged = 0;
    char why[sizeof tr->hist.info->stop_reason] = "";
    if (st == DLA_OK)
        st = read_loss(tr, out[0], out + 2, &s.training_loss, why, sizeof why);
    diverged = why[0] != '\0';
    if (st == DLA_OK && ns && !diverged)
        st = dla_net_set_state(tr->net, ns, out + 2 + nl);
    dla_tensor **grads = out + 2;
    dla_tensor **treated = NULL;
    if (st == DLA_OK && !diverged &&
        (tr->o.l2_regularization > 0 || isfinite(tr->o.gradient_threshold))) {
        treated = dla_malloc(sizeof *treated * (size_t)nl);
        if (!treated)
            st = dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
        if (st == DLA_OK && tr->o.l2_regularization > 0) {
            st = dla_l2_regularize(nl, grads, tr->params, tr->o.l2_regularization, tr->l2_used,
                                   treated);
            grads = treated;
        }
        if (st == DLA_OK && isfinite(tr->o.gradient_threshold)) {
            /* The learning layers' rows alone (see l2_used); a frozen
             * row's gradient is not used. */
            const int nt = tr->ntreated;
            dla_tensor **part = dla_malloc(sizeof *part * (size_t)(2 * nt + 1));
            if (!part) {
                st = dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
            } else {
                for (int k = 0; k < nt; k++)
                    part[k] = grads[tr->treated[k]];
                st = dla_clip_gradients(nt, part, tr->o.gradient_threshold_method,
                                        tr->o.gradient_threshold, part + nt);
            }
            if (st == DLA_OK) {
                if (grads != treated)
                    memcpy(treated, grads, sizeof *treated * (size_t)nl);
                for (int k = 0; k < nt; k++)
                    treated[tr->treated[k]] = part[nt + k];
            }
            grads = treated;
            dla_free(part);
        }
    }
    if (st == DLA_OK && !diverged && (st = update(tr, grads, s.learn_rate)) == DLA_OK)
        tr->updated = tr->iteration;
    double acc_over = -1;
    if (st == DLA_OK)
        st = metrics_of(tr, out[1], tl, &s.training_accuracy, &s.training_rmse, &acc_over);
    st = dla__train_par_metrics(&tr->par, st, tr->metrics,
                                st == DLA_OK && metrics_by_steps(tr, out[1]), acc_over,
                                &s.training_accuracy, &s.training_rmse);
    tr->mask = tr->batch_mask = NULL;
    dla_scope_end();
    dla_free(treated);
    dla_free(out);
    if (st != DLA_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        return dla_set_error(st, "dla_trainnet: epoch %d, iteration %lld: %s", tr->epoch,
                             (long long)tr->iteration, msg);
    }
    if (diverged)
        return stop_diverged(tr, &s, why, stop);
    return finish_iteration(tr, &s, last, stop);
}

/* Validates the network of this iteration into s: the history, the best
 * validation (OutputNetwork "best-validation") and, when stop is not NULL,
 * ValidationPatience. */
static dla_status validate_iteration(trainer *tr, dla_training_state *s, int *stop)
{
    dla_status st = validate(tr, &s->validation_loss, &s->validation_accuracy, &s->validation_rmse);
    if (st != DLA_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        return dla_set_error(st, "dla_trainnet: validation at iteration %lld: %s",
                             (long long)tr->iteration, msg);
    }
    if ((st = validation_push(tr->hist.info, tr->iteration, s->validation_loss,
                              s->validation_accuracy, s->validation_rmse)) != DLA_OK)
        return st;
    tr->validated = tr->iteration;
    if (s->validation_loss < tr->best_val_loss) {
        tr->best_val_loss = s->validation_loss;
        tr->val_bad = 0;
        if (!strcmp(tr->o.output_network, "best-validation")) {
            dla_net_free(tr->best_net);
            tr->best_net = dla_net_copy(tr->net);
            if (!tr->best_net)
                return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: OutputNetwork "
                                     "\"best-validation\": out of memory copying the network");
            tr->best_iteration = tr->iteration;
            tr->best_figures[0] = s->validation_loss;
            tr->best_figures[1] = s->validation_accuracy;
            tr->best_figures[2] = s->validation_rmse;
        }
    } else if (stop && tr->o.validation_patience && ++tr->val_bad >= tr->o.validation_patience) {
        snprintf(tr->hist.info->stop_reason, sizeof tr->hist.info->stop_reason,
                 "Met validation criterion");
        *stop = 1;
    }
    return DLA_OK;
}

/* The OutputFcn's answer, in a scope dlaccel guards: one dla_scope_end
 * too many in it closed trainnet's scope and then the caller's (its
 * tensors released under it), and a scope it left open stayed open after
 * trainnet returned, in silence. *st is set to the error saying so. */
static int call_output_fn(const trainer *tr, const dla_training_state *s, dla_status *st)
{
    const int mark = dla__scope_open_guarded(NULL);
    const int answer = tr->o.output_fn(tr->o.output_ctx, s);
    const int imbalance = dla__scope_close_guarded(mark);
    if (imbalance) {
        char why[120];
        *st = dla__nn_fail(DLA_ERR_STATE, "dla_trainnet: OutputFcn at stage \"%s\" (iteration "
                           "%lld) %s", s->stage, (long long)s->iteration,
                           dla__scope_imbalance_str(imbalance, why, sizeof why));
    }
    return answer;
}

/* What follows an iteration's update for every solver: validation, the
 * history, the chart, the table, the checkpoint and the OutputFcn. */
static dla_status finish_iteration(trainer *tr, dla_training_state *sp, int last, int *stop)
{
    dla_training_state s = *sp;
    dla_status st;
    int validated = 0;
    if (tr->val_q && (tr->iteration == 1 || tr->iteration % tr->o.validation_frequency == 0 || last)) {
        validated = 1;
        if ((st = validate_iteration(tr, &s, stop)) != DLA_OK)
            return st;
    }
    s.time_elapsed = now() - tr->start;
    if ((st = history_push(tr, &s)) != DLA_OK)
        return st;
    record(tr, &s);
    const int row = tr->iteration == 1 || tr->iteration % tr->o.verbose_frequency == 0 ||
                    validated || last || *stop;
    progress_text(tr, &s);
    if (tr->o.checkpoint_path && !strcmp(tr->o.checkpoint_frequency_unit, "iteration") &&
        tr->iteration % tr->o.checkpoint_frequency == 0 && (st = checkpoint(tr)) != DLA_OK)
        return st;
    int fn_stop = 0;
    st = DLA_OK;
    if (tr->o.output_fn && call_output_fn(tr, &s, &st) && st == DLA_OK) {
        snprintf(tr->hist.info->stop_reason, sizeof tr->hist.info->stop_reason,
                 "Stopped by OutputFcn");
        *stop = fn_stop = 1;
    }
    /* The row after the OutputFcn's answer: a stop it makes where no
     * validation ran is validated at the end (validate_at_the_end), which
     * prints this row with the returned network's figures; printed here
     * too, the table showed the iteration twice. Without validation data
     * the row of such a stop is printed here (it was missing). */
    if (st != DLA_OK)
        return st;
    if (tr->o.verbose && (row || fn_stop) && !(fn_stop && tr->val_q && !validated)) {
        /* In parallel, another rank's OutputFcn may still stop training
         * here (the ranks agree after the iteration): the final
         * validation then prints this row with its figures, as one
         * process does. Printed now, it lacked them (and the final
         * validation could not print it again). */
        if (tr->par.on && tr->val_q && !validated && !*stop) {
            tr->held = s;
            tr->held_row = 1;
        } else {
            report_row(tr, &s, validated);
        }
    }
    return DLA_OK;
}

/* One mini-batch: one iteration, or one per chunk of a SequenceLength
 * number, with the state carried from chunk to chunk. Targets with a T
 * dim (sequence-to-sequence) are padded and cut with the predictors, each
 * chunk its own steps' targets (every chunk was given all of them, which
 * the loss refused). */
static dla_status train_batch(trainer *tr, dla_tensor *x, dla_tensor *m, dla_tensor *t,
                              int last_batch, int *stop)
{
    if (tr->has_recurrent && tr->ns) {
        dla_status st = dla_net_reset_state(tr->net);
        if (st != DLA_OK)
            return st;
    }
    if (!tr->chunk)
        return iterate(tr, x, m, t, last_batch, stop);
    int td = dla_tensor_find_dim(x, 'T');
    int tt = td && t ? dla_tensor_find_dim(t, 'T') : 0;
    int64_t steps = td ? dla_tensor_dim(x, td) : 1, L = tr->chunk;
    /* steps + L - 1 overflowed for a SequenceLength near INT64_MAX: the
     * padding came out negative ("dla_pad: ... padding -12 after"). Up to
     * the next multiple, which is L itself for a batch shorter than L. */
    int64_t padded = steps % L ? steps + (L - steps % L) : steps;
    if (tt && dla_tensor_dim(t, tt) != steps)
        return dla_set_error(DLA_ERR_SHAPE, "dla_trainnet: epoch %d: SequenceLength %lld: the "
                             "mini-batch's sequences have %lld time steps, its targets %lld; "
                             "sequence-to-sequence targets need one per step", tr->epoch,
                             (long long)L, (long long)steps, (long long)dla_tensor_dim(t, tt));
    dla_scope_begin();
    if (td && padded != steps) {
        /* The padding goes before or after: one array of it, one of none
         * (a store through (left ? a : b)[i] is one UBSan's object-size
         * check cannot size). */
        int left = !strcmp(tr->o.sequence_padding_direction, "left");
        int64_t xpad[DLA_MAX_DIMS] = {0}, tpad[DLA_MAX_DIMS] = {0}, none[DLA_MAX_DIMS] = {0};
        xpad[td - 1] = padded - steps;
        x = dla_pad(x, dla_tensor_ndims(x), left ? xpad : none, left ? none : xpad,
                    tr->o.sequence_padding_value);
        if (tt) {
            tpad[tt - 1] = padded - steps;
            t = dla_pad(t, dla_tensor_ndims(t), left ? tpad : none, left ? none : tpad,
                        tr->o.sequence_padding_value);
        }
        /* The chunks' padding is padding too: 0 in the mask (1 x B x T). */
        if (m)
            m = dla_pad(dla_cast(m, dla_tensor_dtype(x)), dla_tensor_ndims(m), left ? xpad : none,
                        left ? none : xpad, 0.0);
    }
    dla_status st = dla_tensor_status(x);
    if (st == DLA_OK && tt)
        st = dla_tensor_status(t);
    if (st == DLA_OK && m)
        st = dla_tensor_status(m);
    /* The padding's own message named dla_pad alone, not trainnet nor the
     * option that asked for the length. */
    if (st != DLA_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        dla_set_error(st, "dla_trainnet: epoch %d: SequenceLength %lld: padding the mini-batch's "
                      "%lld time steps to %lld: %s", tr->epoch, (long long)L, (long long)steps,
                      (long long)padded, msg);
    }
    for (int64_t c = 0; st == DLA_OK && c < padded / L && !*stop; c++) {
        dla_scope_begin();
        dla_tensor *xc = td ? dla_contiguous(dla_slice(x, td, c * L, 1, (c + 1) * L)) : x;
        dla_tensor *tc = tt ? dla_contiguous(dla_slice(t, tt, c * L, 1, (c + 1) * L)) : t;
        dla_tensor *mc = td && m ? dla_contiguous(dla_slice(m, 3, c * L, 1, (c + 1) * L)) : m;
        st = dla_tensor_status(xc);
        if (st == DLA_OK)
            st = dla_tensor_status(tc);
        if (st == DLA_OK && mc)
            st = dla_tensor_status(mc);
        if (st == DLA_OK)
            st = iterate(tr, xc, mc, tc, last_batch && c + 1 == padded / L, stop);
        dla_scope_end();
    }
    dla_scope_end();
    return st;
}

/* ------------------------------------------------------ solver "lbfgs" */

/* dla_lbfgsupdate's loss function: the iteration's dla_feval over the one
 * batch. p is the point tried for the rows it updates (tr->lb.rows, the
 * frozen ones left out), set in the table for the forward; the gradients
 * given back are those rows'.
 * Keeps Y and the new state of the latest point, for the metrics and the
 * state once the update has chosen its point. */
static dla_status lbfgs_loss(void *ctx, int n, dla_tensor *const *p, int nout, dla_tensor **out)
{
    (void)n;
    (void)nout;
    trainer *tr = ctx;
    const int nl = tr->nl, ns = tr->ns;
    dla_tensor **all = tr->lb.out;
    /* The point tried, in the table for the forward; the table's own
     * values back afterwards (the point's tensors are the update's). */
    for (int k = 0; k < tr->lb.n; k++)
        tr->params[tr->lb.rows[k]] = p[k];
    dla_status st = dla_feval(step, tr, 2, (dla_tensor *[]){tr->lb.x, tr->lb.t}, 2 + nl + ns, all);
    for (int k = 0; k < tr->lb.n; k++)
        tr->params[tr->lb.rows[k]] = tr->lb.own[k];
    out[0] = all[0];
    for (int k = 0; k < tr->lb.n; k++)
        out[1 + k] = all[2 + tr->lb.rows[k]];
    if (st != DLA_OK)
        return st;
    dla_tensor_release(tr->lb.y);
    tr->lb.y = dla_tensor_retain(all[1]);
    for (int i = 0; i < ns; i++) {
        dla_tensor_release(tr->lb.state_out[i]);
        tr->lb.state_out[i] = dla_tensor_retain(all[2 + nl + i]);
    }
    tr->lb.at = p[0];
    return DLA_OK;
}

/* One L-BFGS iteration over all the data. */
static dla_status iterate_lbfgs(trainer *tr, int last, int *stop)
{
    tr->iteration++;
    tr->epoch = (int)tr->iteration;
    dla_training_state s = {.stage = "iteration", .epoch = tr->epoch, .iteration = tr->iteration,
                            .learn_rate = NAN, .training_accuracy = NAN, .training_rmse = NAN,
                            .validation_loss = NAN, .validation_accuracy = NAN,
                            .validation_rmse = NAN, .gradient_norm = NAN, .step_norm = NAN};
    /* The update's list holds the table's references: a point it accepts
     * replaces them there. */
    for (int k = 0; k < tr->lb.n; k++)
        tr->lb.p[k] = tr->lb.own[k] = tr->params[tr->lb.rows[k]];
    dla_status st = dla_lbfgsupdate(tr->lb.n, tr->lb.p, lbfgs_loss, tr, tr->lb.state);
    for (int k = 0; k < tr->lb.n; k++)
        tr->params[tr->lb.rows[k]] = tr->lb.p[k];
    if (st == DLA_ERR_STATE) {
        /* No finite loss or gradient where the update starts: evaluated
         * once more, the check of the other solvers says which. */
        char msg[1024], why[sizeof tr->hist.info->stop_reason] = "";
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        dla_tensor **out = tr->lb.out;
        dla_scope_begin();
        dla_status rst = dla_feval(step, tr, 2, (dla_tensor *[]){tr->lb.x, tr->lb.t},
                                   2 + tr->nl + tr->ns, out);
        if (rst == DLA_OK)
            rst = read_loss(tr, out[0], out + 2, &s.training_loss, why, sizeof why);
        dla_scope_end();
        if (rst == DLA_OK && *why)
            return stop_diverged(tr, &s, why, stop);
        dla_set_error(st, "%s", msg);
    }
    if (st != DLA_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        return dla_set_error(st, "dla_trainnet: iteration %lld: %s", (long long)tr->iteration, msg);
    }
    tr->updated = tr->iteration;
    dla_lbfgs_info in;
    dla_lbfgs_state_info(tr->lb.state, &in);
    s.training_loss = in.loss;
    s.learn_rate = in.learn_rate;
    s.gradient_norm = in.gradients_norm;
    s.step_norm = in.step_norm;
    /* The latest evaluation is of the point returned unless the search
     * failed and fell back to an earlier one: then the state waits. */
    if (tr->lb.at == tr->params[tr->lb.rows[0]]) {
        if (tr->ns && !tr->has_recurrent)
            st = dla_net_set_state(tr->net, tr->ns, tr->lb.state_out);
        if (st == DLA_OK) {
            dla_scope_begin();
            st = metrics_of(tr, tr->lb.y, tr->lb.t, &s.training_accuracy, &s.training_rmse,
                            NULL);
            dla_scope_end();
        }
        if (st != DLA_OK) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", dla_last_error());
            return dla_set_error(st, "dla_trainnet: iteration %lld: %s", (long long)tr->iteration,
                                 msg);
        }
    }
    const char *reason = !strcmp(in.line_search_status, "failed") ? "Line search failed"
                         : in.gradients_norm <= tr->o.gradient_tolerance ? "Gradient tolerance reached"
                         : in.step_norm <= tr->o.step_tolerance ? "Step tolerance reached"
                                                                : NULL;
    if (reason) {
        snprintf(tr->hist.info->stop_reason, sizeof tr->hist.info->stop_reason, "%s", reason);
        *stop = 1;
    }
    /* A stop here is the last iteration: validated, so that the final
     * validation figures are of the network returned. */
    return finish_iteration(tr, &s, last || reason, stop);
}

/* Solver "lbfgs": all the data as one batch, MaxIterations updates at
 * most. */
static dla_status run_lbfgs(trainer *tr)
{
    const int nl = tr->nl, ns = tr->ns;
    tr->lb.out = dla_malloc(sizeof *tr->lb.out * (size_t)(2 + nl + ns));
    tr->lb.state_out = dla_malloc(sizeof *tr->lb.state_out * (size_t)(ns ? ns : 1));
    if (!tr->lb.out || !tr->lb.state_out)
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
    memset(tr->lb.state_out, 0, sizeof *tr->lb.state_out * (size_t)(ns ? ns : 1));
    /* L-BFGS has no learning rate for a factor to multiply; a factor of 0
     * still freezes its row (set-up refused any other than 0 and 1). */
    tr->lb.rows = dla_malloc(sizeof *tr->lb.rows * (size_t)nl);
    tr->lb.p = dla_malloc(sizeof *tr->lb.p * (size_t)nl);
    tr->lb.own = dla_malloc(sizeof *tr->lb.own * (size_t)nl);
    if (!tr->lb.rows || !tr->lb.p || !tr->lb.own)
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
    tr->lb.n = 0;
    for (int i = 0; i < nl; i++)
        if (tr->lr_factor[i] != 0)
            tr->lb.rows[tr->lb.n++] = i;
    tr->lb.state = dla_lbfgs_state_create(&(dla_lbfgs_options){
        .history_size = tr->o.history_size,
        .initial_inverse_hessian_factor = tr->o.initial_inverse_hessian_factor,
        .initial_step_size = tr->o.initial_step_size,
        .line_search_method = tr->o.line_search_method,
        .max_num_line_search_iterations = tr->o.max_num_line_search_iterations});
    if (!tr->lb.state)
        return dla_last_status();
    dla_status st;
    dla_mbq_reset(tr->train_q);
    dla_scope_begin();
    dla_tensor *batch[2], *m;
    st = next_batch(tr, tr->train_q, 1, &batch[0], &m, &batch[1]);
    if (st == DLA_OK)
        st = use_mask(tr, m, dla_tensor_dtype(batch[0]));
    if (st == DLA_OK) {
        /* The targets as the loss sees them, once: one-hot for class
         * numbers, in the predictors' dtype; the padding mask kept for
         * every evaluation. */
        dla_tensor *x = batch[0], *t = batch[1];
        tr->lb.mask = tr->mask = dla_tensor_retain(tr->mask);
        tr->batch_mask = NULL; /* this scope's; L-BFGS combines no batches */
        tr->lb.x = dla_tensor_retain(x);
        tr->lb.t = dla_tensor_retain(tr->classify ? onehot(tr, t, tr->mask, dla_tensor_dtype(x))
                                     : dla_tensor_dtype(t) != dla_tensor_dtype(x) ? dla_cast(t, dla_tensor_dtype(x))
                                                                                  : t);
        st = dla_tensor_status(tr->lb.t);
    } else {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        dla_set_error(st, "dla_trainnet: reading the data: %s", msg);
    }
    dla_scope_end();
    if (tr->progress)
        dla_progress_mark_epoch(tr->progress, 1, 1);
    int stop = 0;
    for (int it = 1; st == DLA_OK && !stop && it <= tr->o.max_iterations; it++) {
        st = iterate_lbfgs(tr, it == tr->o.max_iterations, &stop);
        if (st == DLA_OK)
            st = epoch_checkpoint(tr, tr->iteration);
    }
    if (st == DLA_OK && tr->progress)
        st = write_chart(tr);
    if (st == DLA_OK && !stop)
        snprintf(tr->hist.info->stop_reason, sizeof tr->hist.info->stop_reason,
                 "Max iterations completed");
    return st;
}

static dla_status run_epochs(trainer *tr)
{
    int stop = 0;
    dla_status st = DLA_OK;
    for (tr->epoch = 1; st == DLA_OK && tr->epoch <= tr->o.max_epochs && !stop; tr->epoch++) {
        if (!strcmp(tr->o.shuffle, "every-epoch") || (tr->epoch == 1 && !strcmp(tr->o.shuffle, "once")))
            dla_mbq_shuffle(tr->train_q);
        else
            dla_mbq_reset(tr->train_q);
        if (tr->progress)
            dla_progress_mark_epoch(tr->progress, tr->epoch, tr->iteration + 1);
        int64_t b = 0, nb = tr->par.on ? tr->iterations_per_epoch : dla_mbq_num_batches(tr->train_q);
        while (st == DLA_OK && !stop && dla__train_par_hasdata(&tr->par, tr->train_q, &st)) {
            dla_scope_begin();
            dla_tensor *batch[2], *m;
            st = next_batch(tr, tr->train_q, b + 1, &batch[0], &m, &batch[1]);
            if (st != DLA_OK) {
                char msg[1024];
                snprintf(msg, sizeof msg, "%s", dla_last_error());
                dla_set_error(st, "dla_trainnet: epoch %d: %s", tr->epoch, msg);
                /* Only this worker may have failed (a corrupt file in its
                 * share): it meets the others where their step does. */
                st = dla__train_par_failed_batch(&tr->par, st);
            } else {
                b++;
                /* In parallel, a batch of fewer observations than workers
                 * leaves some without a share: they run on a placeholder
                 * and weigh 0. */
                tr->par.empty = dla__mbq_last_empty(tr->train_q);
                st = train_batch(tr, batch[0], m, batch[1],
                                 tr->epoch == tr->o.max_epochs && b == nb, &stop);
            }
            dla_scope_end();
            st = dla__train_par_end(&tr->par, st, &stop);
            /* The row held for the agreement: printed unless the
             * final validation prints it (an agreed stop). */
            if (tr->held_row && (st != DLA_OK || !stop))
                report_row(tr, &tr->held, 0);
            tr->held_row = 0;
            /* Another rank's OutputFcn asked (the only stop the ranks do
             * not each decide alike): this rank says why too, instead of
             * an empty reason ("Training finished: ." at rank 0). */
            if (st == DLA_OK && stop && !tr->hist.info->stop_reason[0])
                snprintf(tr->hist.info->stop_reason, sizeof tr->hist.info->stop_reason,
                         "Stopped by OutputFcn");
        }
        if (st == DLA_OK)
            st = epoch_checkpoint(tr, tr->epoch);
        /* The chart at most once a second between the first epoch and the
         * last (or a stop): 2000 epochs of 2 iterations of a tiny network
         * took 2.5 s writing it every epoch, 0.05 s without. */
        if (st == DLA_OK && tr->progress &&
            (tr->chart_written == 0 || stop || tr->epoch == tr->o.max_epochs ||
             now() - tr->chart_written >= 1.0)) {
            st = write_chart(tr);
            tr->chart_written = now();
        }
        st = dla__train_par_agree(&tr->par, st, "the end of the epoch");
    }
    tr->epoch--;
    if (st == DLA_OK && !stop)
        snprintf(tr->hist.info->stop_reason, sizeof tr->hist.info->stop_reason,
                 "Max epochs completed");
    return st;
}

/* Validation at the end of training: a stop that no validation saw (an
 * OutputFcn's, in any rank, at an iteration off ValidationFrequency) left
 * the final validation figures, and OutputNetwork "best-validation"'s
 * choice, to an earlier network than the one returned; the last
 * iteration's table row was not printed either. Every rank of a parallel
 * training gets here at the same iteration (the stop is agreed), and
 * validation reads each rank's whole validation data, so they agree. */
static dla_status validate_at_the_end(trainer *tr)
{
    const dla_training_info *in = tr->hist.info;
    if (!tr->val_q || in->iterations == 0 || tr->validated == tr->iteration)
        return DLA_OK;
    const int64_t i = in->iterations - 1;
    dla_training_state s = {.stage = "iteration", .epoch = in->epoch[i], .iteration = tr->iteration,
                            .time_elapsed = in->time_elapsed[i], .learn_rate = in->learn_rate[i],
                            .training_loss = in->training_loss[i],
                            .training_accuracy = in->training_accuracy[i],
                            .training_rmse = in->training_rmse[i],
                            .validation_loss = NAN, .validation_accuracy = NAN,
                            .validation_rmse = NAN, .gradient_norm = in->gradient_norm[i],
                            .step_norm = in->step_norm[i]};
    dla_status st = validate_iteration(tr, &s, NULL);
    if (st != DLA_OK)
        return st;
    record_series(tr, &s, 0);
    /* Printed already where another rank's OutputFcn stopped training. */
    if (tr->o.verbose && tr->reported != tr->iteration)
        report_row(tr, &s, 1);
    progress_text(tr, &s);
    return write_chart(tr);
}

/* OutputNetwork "best-validation": the network of the best validation in
 * place of the last one, with that validation's figures as the final
 * ones. */
static void use_best_network(trainer *tr)
{
    dla_net_free(tr->net);
    tr->net = tr->best_net;
    tr->best_net = NULL;
    dla_training_info *in = tr->hist.info;
    in->final_validation_loss = tr->best_figures[0];
    in->final_validation_accuracy = tr->best_figures[1];
    in->final_validation_rmse = tr->best_figures[2];
    snprintf(tr->finish_note, sizeof tr->finish_note, "Output network: iteration %lld, the best "
             "validation loss (%.4f) (OutputNetwork \"best-validation\").\n",
             (long long)tr->best_iteration, tr->best_figures[0]);
}

/* BatchNormalizationStatistics "population": the statistics from one more
 * pass over the training data (train_population.c); then the validation
 * data once more, so that the final validation figures are those of the
 * network returned. */
static dla_status finalize_batchnorm(trainer *tr)
{
    int computed = 0;
    dla_status st = dla__train_population_statistics(tr->net, tr->train_q,
                                                     tr->par.on && tr->par.size > 1, &computed);
    st = dla__train_par_agree(&tr->par, st, "the batch normalization statistics");
    if (st != DLA_OK || !computed)
        return st;
    dla_training_info *in = tr->hist.info;
    char line[512];
    if (tr->val_q) {
        double loss, acc, rmse;
        st = validate(tr, &loss, &acc, &rmse);
        if (st != DLA_OK) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", dla_last_error());
            return dla_set_error(st, "dla_trainnet: the final validation: %s", msg);
        }
        in->final_validation_loss = loss;
        in->final_validation_accuracy = acc;
        in->final_validation_rmse = rmse;
        int n = snprintf(line, sizeof line, "Final validation (population statistics): loss %.4f",
                         loss);
        if (!isnan(acc) && n > 0 && (size_t)n < sizeof line)
            n += snprintf(line + n, sizeof line - (size_t)n, ", accuracy %.2f%%", acc);
        if (!isnan(rmse) && n > 0 && (size_t)n < sizeof line)
            snprintf(line + n, sizeof line - (size_t)n, ", RMSE %.4f", rmse);
    }
    const size_t at = strlen(tr->finish_note);
    snprintf(tr->finish_note + at, sizeof tr->finish_note - at, "Batch normalization statistics "
             "computed from the training data (BatchNormalizationStatistics \"population\").\n%s%s",
             tr->val_q ? line : "", tr->val_q ? ".\n" : "");
    return DLA_OK;
}

/* --------------------------------------------------------------- set-up */

static dla_status check_loss(const dla_train_loss *l)
{
    if (!l)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_trainnet: argument loss is NULL");
    int set = (l->name != NULL) + (l->fn != NULL) + (l->accel != NULL);
    if (set != 1)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "dla_trainnet: argument loss: set exactly one of name, fn and accel "
                             "(%d are set)", set);
    if (l->name && !builtin_known(l->name))
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "dla_trainnet: loss \"%s\" is not one of \"crossentropy\", "
                             "\"binary-crossentropy\", \"mse\", \"mean-squared-error\", \"l2loss\", "
                             "\"l1loss\", \"mae\", \"mean-absolute-error\", \"huber\"", l->name);
    return DLA_OK;
}

/* Initializes the network from one observation of the data when it is not
 * initialized yet (its inputs are not input layers). */
static dla_status init_from_data(dla_net *net, const dla_train_data *d)
{
    if (dla_net_initialized(net))
        return DLA_OK;
    dla_scope_begin();
    dla_tensor *ex = NULL;
    if (d->sequences) {
        dla_padsequences(d->sequences, 1, NULL, NULL, &ex, NULL);
    } else if (d->images) {
        /* The first file that reads: one skipped as corrupt (skip_corrupt)
         * is passed over here as the batches pass over it. */
        const int64_t n = dla_imds_num_files(d->images);
        for (int64_t i = 0; i < n; i++)
            if (dla_imds_read_files(d->images, 1, &i, &ex, NULL) == DLA_OK ||
                !dla__imds_first_skipped(d->images, i, 1))
                break;
        if (!ex) { /* the read's error (the file's), or no file at all */
            dla_scope_end();
            return n ? dla_last_status()
                     : dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                     "dla_trainnet: the datastore has no file to initialize "
                                     "the network from");
        }
        if (dla_tensor_dtype(ex) != DLA_F64)
            ex = dla_cast(ex, DLA_F32);
    } else if (d->datastore) {
        /* The first observation, as the queue would batch it alone. */
        dla_tensor *first = NULL;
        if (dla_datastore_num_observations(d->datastore) < 1) {
            dla_scope_end();
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                 "dla_trainnet: the datastore has no observation to initialize "
                                 "the network from");
        }
        dla_tensor *outs[DLA__DS_MAX] = {NULL};
        if (dla__ds_read_span(d->datastore, 0, 1, NULL, outs, "dla_trainnet") != DLA_OK) {
            dla_scope_end();
            return dla_last_status();
        }
        first = outs[0];
        dla__ds_drop(d->datastore->nout - 1, outs + 1); /* the targets, when there */
        ex = dla__data_deliver(first);
        if (dla_tensor_dtype(ex) != DLA_F64)
            ex = dla_cast(ex, DLA_F32);
    } else {
        dla_tensor *x = d->predictors;
        ex = dla_slice(x, obs_dim(x), 0, 1, 1);
        if (dla_tensor_dtype(x) != DLA_F64)
            ex = dla_cast(ex, DLA_F32);
    }
    dla_status st = dla_tensor_status(ex);
    if (st == DLA_OK && !*dla_tensor_format(ex))
        st = dla_set_error(DLA_ERR_FORMAT,
                           "dla_trainnet: the network is not initialized and the predictors are "
                           "unformatted: give them labels (\"SSCB\", \"CB\") or add an input layer");
    if (st == DLA_OK)
        st = dla_net_init(net, 1, &ex);
    dla_scope_end();
    return st;
}

/* The class numbers 0..K-1 along C (dim 1), on the training device. */
static dla_status make_class_list(trainer *tr)
{
    int32_t *v = dla_malloc(sizeof *v * (size_t)tr->classes);
    if (!v)
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
    for (int64_t k = 0; k < tr->classes; k++)
        v[k] = (int32_t)k;
    /* A reference of our own even when the caller has a scope open. */
    dla_scope_begin();
    tr->class_list = dla_tensor_retain(dla_tensor_from_host(v, DLA_I32, "", DLA_DIMS(tr->classes)));
    dla_scope_end();
    dla_free(v);
    return dla_tensor_status(tr->class_list);
}

/* What trainnet and testnet read from the network: one input and one
 * output, its counts, whether it is recurrent, its output's format and
 * classes, and whether the targets are class numbers for it. */
static dla_status read_network(trainer *tr, const dla_train_data *data)
{
    if (dla_net_input_count(tr->net) != 1 || dla_net_output_count(tr->net) != 1) {
        char hint[512];
        dla__mask_unfed_hint(tr->net, hint, sizeof hint);
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "%s: the network has %d input%s and %d output%s; %s takes one of "
                             "each%s", tr->fn, dla_net_input_count(tr->net),
                             dla_net_input_count(tr->net) == 1 ? "" : "s",
                             dla_net_output_count(tr->net),
                             dla_net_output_count(tr->net) == 1 ? "" : "s", tr->fn + 4, hint);
    }
    tr->nl = dla_net_learnable_count(tr->net);
    tr->ns = dla_net_state_count(tr->net);
    for (int i = 0; i < dla_net_layer_count(tr->net); i++)
        tr->has_recurrent |= !strcmp(dla_net_layer_type(tr->net, i), "lstm") ||
                             !strcmp(dla_net_layer_type(tr->net, i), "bilstm") ||
                             !strcmp(dla_net_layer_type(tr->net, i), "gru");
    int64_t odims[DLA_MAX_DIMS];
    int ond = dla_net_activation(tr->net, dla_net_output_name(tr->net, 0), odims, tr->out_format);
    int cdim = 0;
    for (int i = 0; i < ond; i++)
        if (tr->out_format[i] == 'C')
            cdim = i + 1;
    /* Class numbers: int32 targets, one per observation, for an output
     * with channels. */
    int64_t n = observations(data);
    tr->classes = cdim ? odims[cdim - 1] : 0;
    tr->seq_targets = data->target_sequences != NULL;
    if (ds_targets(data)) {
        char format[DLA_MAX_DIMS + 1];
        int per_step;
        dla_dtype dtype;
        dla_status st = ds_first_targets(tr, data, "data", 0, &tr->classify, &per_step, format,
                                         &dtype);
        if (st != DLA_OK)
            return st;
        tr->seq_targets = per_step;
    } else {
        tr->classify = tr->seq_targets
                           ? dla__train_seq_targets_are_classes(data->target_sequences, tr->classes)
                           : dla_tensor_dtype(data->targets) == DLA_I32 &&
                                 dla_tensor_numel(data->targets) == n;
    }
    if (tr->classify && !cdim)
        return dla_set_error(DLA_ERR_SHAPE,
                             "%s: the targets are class numbers but the network's output "
                             "(%s) has no C dim", tr->fn, tr->out_format);
    if (tr->classify && !tr->seq_targets && strchr(tr->out_format, 'T'))
        return dla_set_error(DLA_ERR_SHAPE,
                             "%s: the targets are one class per observation but the "
                             "network's output \"%s\" is a sequence: end it with OutputMode \"last\" "
                             "or a global pooling layer", tr->fn, tr->out_format);
    if (n < 1)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "%s: the data has no observation", tr->fn);
    return DLA_OK;
}

/* An image datastore's labels number its own classes (its sorted folder
 * names): a folder that lacks one of the network's classes numbers the
 * others differently from the training classes, and was scored against
 * the wrong ones in silence. Its class count must be the network's, as
 * MATLAB's testnet and trainnet, which one-hot encode the labels by their
 * categories, fail otherwise. (A one-channel output takes no class
 * numbers: the check of the targets says so.) */
static dla_status own_labels_fit(const trainer *tr, const dla_imds *ds, const char *what)
{
    const int nc = dla_imds_num_categories(ds);
    if (!tr->classify || tr->classes < 2 || nc == tr->classes)
        return DLA_OK;
    return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                         "%s: %s: the image datastore has %d classes (\"%s\" ...) where the "
                         "network's output has %lld; its labels number its own classes, so "
                         "pass targets numbered by the training classes",
                         tr->fn, what, nc, nc ? dla_imds_category(ds, 0) : "",
                         (long long)tr->classes);
}

static dla_status setup(trainer *tr, const dla_train_data *data, dla_net *net, int *normalized)
{
    dla_status st;
    tr->net = dla_net_copy(net);
    if (!tr->net)
        return dla_last_status() != DLA_OK ? dla_last_status()
                                           : dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
    if ((st = init_from_data(tr->net, data)) != DLA_OK ||
        (st = dla_net_to_device(tr->net, tr->dev)) != DLA_OK)
        return st;
    if ((st = read_network(tr, data)) != DLA_OK)
        return st;
    if (tr->nl < 1)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_trainnet: the network has no learnables");
    tr->chunk = dla__train_parse_sequence_length(tr->o.sequence_length);
    tr->chunk = tr->chunk > 0 ? tr->chunk : 0;
    if (!strcmp(tr->o.solver, "lbfgs")) {
        /* Full batch: every observation in the one mini-batch. */
        if (tr->chunk)
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                 "dla_trainnet: solver \"lbfgs\" with SequenceLength \"%s\": a "
                                 "full-batch solver trains whole sequences; use \"longest\" or "
                                 "\"shortest\"", tr->o.sequence_length);
        tr->o.mini_batch_size = observations(data);
    }
    if (tr->classify && (st = make_class_list(tr)) != DLA_OK)
        return st;

    dla_table *lt = dla_net_learnables(tr->net);
    tr->params = dla_table_values(lt);
    tr->state1 = dla_malloc(sizeof *tr->state1 * (size_t)tr->nl);
    tr->state2 = dla_malloc(sizeof *tr->state2 * (size_t)tr->nl);
    tr->lr_factor = dla_malloc(sizeof *tr->lr_factor * (size_t)tr->nl);
    tr->l2_factor = dla_malloc(sizeof *tr->l2_factor * (size_t)tr->nl);
    tr->l2_used = dla_malloc(sizeof *tr->l2_used * (size_t)(tr->nl ? tr->nl : 1));
    tr->treated = dla_malloc(sizeof *tr->treated * (size_t)(tr->nl ? tr->nl : 1));
    /* Cleared before anything can fail: teardown frees what they hold. */
    if (tr->state1)
        memset(tr->state1, 0, sizeof *tr->state1 * (size_t)tr->nl);
    if (tr->state2)
        memset(tr->state2, 0, sizeof *tr->state2 * (size_t)tr->nl);
    if (!tr->state1 || !tr->state2 || !tr->lr_factor || !tr->l2_factor || !tr->l2_used ||
        !tr->treated)
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
    tr->uniform_lr = 1;
    for (int i = 0; i < tr->nl; i++) {
        tr->state1[i] = tr->state2[i] = NULL;
        tr->lr_factor[i] = dla_table_learn_rate_factor(lt, i);
        tr->l2_factor[i] = dla_table_l2_factor(lt, i);
        tr->uniform_lr &= tr->lr_factor[i] == 1.0;
    }
    tr->ntreated = 0;
    for (int i = 0; i < tr->nl; i++) {
        tr->l2_used[i] = tr->lr_factor[i] != 0 ? tr->l2_factor[i] : 0;
        int learns = 0;
        for (int j = 0; j < tr->nl && !learns; j++)
            learns = tr->lr_factor[j] != 0 &&
                     !strcmp(dla_table_layer(lt, j), dla_table_layer(lt, i));
        if (learns)
            tr->treated[tr->ntreated++] = i;
    }
    if (tr->ntreated > 0 && tr->ntreated < tr->nl) {
        tr->unasked = dla_malloc((size_t)tr->nl);
        if (!tr->unasked)
            return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
        memset(tr->unasked, 1, (size_t)tr->nl);
        for (int k = 0; k < tr->ntreated; k++)
            tr->unasked[tr->treated[k]] = 0;
    }
    if (!strcmp(tr->o.solver, "lbfgs")) {
        /* Without a learning rate a factor of 2 or 0.1 would be ignored
         * in silence; 0 freezes the row, as with the other solvers. */
        int trained = 0;
        for (int i = 0; i < tr->nl; i++) {
            if (tr->lr_factor[i] != 0 && tr->lr_factor[i] != 1)
                return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                     "dla_trainnet: solver \"lbfgs\" has no learning rate: "
                                     "%s/%s has learn-rate factor %g; use 0 (frozen) or 1",
                                     dla_table_layer(lt, i), dla_table_parameter(lt, i),
                                     tr->lr_factor[i]);
            trained += tr->lr_factor[i] != 0;
        }
        if (!trained)
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                 "dla_trainnet: solver \"lbfgs\": every learnable has "
                                 "learn-rate factor 0 (frozen); nothing to train");
    }

    if ((st = input_statistics(tr, data, !tr->o.reset_input_normalization, normalized)) != DLA_OK)
        return st;
    if ((st = make_queue(tr, data, 0, &tr->train_q, &tr->train_targets)) != DLA_OK)
        return st;
    if (dla_mbq_num_batches(tr->train_q) < 1)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "dla_trainnet: %lld observation%s make%s no full mini-batch of %lld "
                             "(PartialMiniBatch \"discard\" drops the partial one, so no "
                             "iteration would run); set MiniBatchSize to at most %lld, or "
                             "PartialMiniBatch to \"return\"",
                             (long long)observations(data), observations(data) == 1 ? "" : "s",
                             observations(data) == 1 ? "s" : "",
                             (long long)tr->o.mini_batch_size, (long long)observations(data));
    if (tr->val_own_labels &&
        (st = own_labels_fit(tr, tr->val_own_labels, "ValidationData")) != DLA_OK)
        return st;
    if (tr->o.validation_data && (st = make_queue(tr, tr->o.validation_data, 1, &tr->val_q,
                                                  &tr->val_targets)) != DLA_OK)
        return st;
    tr->iterations_per_epoch = dla_mbq_num_batches(tr->train_q);
    return DLA_OK;
}

static void teardown(trainer *tr)
{
    dla_net_free(tr->best_net); /* not taken: training failed */
    tr->best_net = NULL;
    dla_lbfgs_state_free(tr->lb.state);
    dla_tensor_release(tr->lb.x);
    dla_tensor_release(tr->lb.mask);
    dla_tensor_release(tr->lb.t);
    dla_tensor_release(tr->lb.y);
    if (tr->lb.state_out)
        dla_optim_free(tr->ns, tr->lb.state_out);
    dla_free(tr->lb.state_out);
    dla_free(tr->lb.out);
    dla_free(tr->lb.rows);
    dla_free(tr->lb.p);
    dla_free(tr->lb.own);
    dla__train_par_free(&tr->par);
    dla_mbq_free(tr->train_q);
    dla_mbq_free(tr->val_q);
    dla_tensor_release(tr->train_targets);
    dla_tensor_release(tr->val_targets);
    dla_tensor_release(tr->class_list);
    if (tr->state1)
        dla_optim_free(tr->nl, tr->state1);
    if (tr->state2)
        dla_optim_free(tr->nl, tr->state2);
    dla_free(tr->state1);
    dla_free(tr->state2);
    dla_free(tr->lr_factor);
    dla_free(tr->l2_factor);
    dla_free(tr->l2_used);
    dla_free(tr->treated);
    dla_free(tr->unasked);
    dla_progress_free(tr->progress);
}

static void print_start(trainer *tr, int normalized)
{
    char line[512];
    snprintf(line, sizeof line, "Training on %s (%s).\n", dla_device_name(tr->dev),
             dla_device_description(tr->dev));
    say(tr, line);
    dla__train_par_describe(&tr->par, tr->dev, line, sizeof line);
    if (*line)
        say(tr, line);
    if (normalized)
        say(tr, "Initializing input data normalization.\n");
    char header[2048];
    dla__train_table_header(&tr->table, header, sizeof header);
    say(tr, header);
}

/* The labels of validation datastore val as class numbers of training
 * datastore train, matched by name (MATLAB's categorical labels): two
 * folders read apart number their classes each in its own sorted list, so
 * a validation folder without one of the classes gave the classes after
 * it the numbers of their neighbours, without a word. NULL with the error
 * set when val has a class that train lacks. */
static dla_tensor *labels_by_name(const dla_imds *val, const dla_imds *train)
{
    const int nv = dla_imds_num_categories(val), nt = dla_imds_num_categories(train);
    const int64_t n = dla_imds_num_files(val);
    int32_t *to = dla_malloc(sizeof *to * (size_t)(nv ? nv : 1));
    int32_t *v = dla_malloc(sizeof *v * (size_t)(n ? n : 1));
    dla_tensor *out = NULL;
    if (!to || !v) {
        dla_set_error(DLA_ERR_OUT_OF_MEMORY, "out of memory");
        goto done;
    }
    for (int c = 0; c < nv; c++) {
        to[c] = -1;
        for (int k = 0; k < nt && to[c] < 0; k++)
            if (!strcmp(dla_imds_category(val, c), dla_imds_category(train, k)))
                to[c] = k;
        if (to[c] < 0) {
            dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                          "the datastore has class \"%s\", which the training datastore's %d "
                          "classes (\"%s\" ...) do not have",
                          dla_imds_category(val, c), nt, nt ? dla_imds_category(train, 0) : "");
            goto done;
        }
    }
    for (int64_t i = 0; i < n; i++) {
        const int c = dla_imds_label(val, i);
        if (c < 0) { /* a datastore without labels: dla_imds_labels says so */
            out = dla_imds_labels(val);
            goto done;
        }
        v[i] = to[c];
    }
    out = dla_tensor_from_host(v, DLA_I32, "CB", DLA_DIMS(1, n));
done:
    dla_free(to);
    dla_free(v);
    return out;
}

/* dla_trainnet once the data's targets are in place. */
static dla_status trainnet_checked(const dla_train_data *data, dla_net *net,
                                   const dla_train_loss *loss, trainer *trp, dla_net **trained,
                                   dla_training_info **info, double t0);

DLA_API dla_status dla_trainnet(const dla_train_data *data, dla_net *net,
                                const dla_train_loss *loss, const dla_training_options *opts,
                                dla_net **trained, dla_training_info **info)
{
    double t0 = now();
    if (trained)
        *trained = NULL;
    if (info)
        *info = NULL;
    dla_status st;
    if (!trained)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_trainnet: argument trained is NULL");
    if (!net)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_trainnet: argument net is NULL");
    trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.fn = "dla_trainnet";
    /* A datastore without targets: its labels are the targets. */
    dla_train_data own[2];
    dla_tensor *labels[2] = {NULL, NULL};
    if ((st = dla_training_options_resolve(opts, &tr.o)) != DLA_OK)
        return st;
    const dla_train_data **sets[2] = {&data, &tr.o.validation_data};
    for (int k = 0; k < 2; k++) {
        const dla_train_data *d = *sets[k];
        if (!d || !d->images || d->targets)
            continue;
        dla_scope_begin();
        /* Validation labels by the names of the training datastore's
         * classes, when its labels are the training targets. */
        labels[k] = dla_tensor_retain(k && labels[0]
                                          ? labels_by_name(d->images, (*sets[0])->images)
                                          : dla_imds_labels(d->images));
        dla_scope_end();
        if (!labels[k]) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", dla_last_error());
            dla_tensor_release(labels[0]);
            return dla_set_error(dla_last_status(), "dla_trainnet: %s: %s",
                                 k ? "ValidationData" : "data", msg);
        }
        if (k && !labels[0])
            tr.val_own_labels = d->images;
        own[k] = *d;
        own[k].targets = labels[k];
        *sets[k] = &own[k];
    }
    st = trainnet_checked(data, net, loss, &tr, trained, info, t0);
    dla_tensor_release(labels[0]);
    dla_tensor_release(labels[1]);
    return st;
}

static dla_status trainnet_checked(const dla_train_data *data, dla_net *net,
                                   const dla_train_loss *loss, trainer *trp, dla_net **trained,
                                   dla_training_info **info, double t0)
{
    dla_status st;
    trainer tr = *trp;
    if ((st = check_loss(loss)) != DLA_OK ||
        (st = check_data(tr.fn, "data", data)) != DLA_OK ||
        (tr.o.validation_data &&
         (st = check_data(tr.fn, "ValidationData", tr.o.validation_data)) != DLA_OK))
        return st;
    /* "parallel", "multi-gpu": only rank 0 writes, so only it checks
     * where; every rank learns whether that went well. */
    dla__train_par_begin(&tr.par, &tr.o);
    /* A datastore read in order refused on one rank (the others given
     * another) fails every rank here, not only that one. */
    st = check_in_order(&tr, data);
    if (st == DLA_OK)
        st = dla__train_check_paths(&tr.o);
    /* Counted before the ranks agree: a read that fails on one rank's
     * copy left it returning while the others went on to set-up's
     * collectives. */
    if (st == DLA_OK)
        st = learn_count(data, tr.fn);
    if (st == DLA_OK)
        st = learn_count(tr.o.validation_data, tr.fn);
    st = dla__train_par_agree(&tr.par, st, "checking the options");
    if (st != DLA_OK)
        return st;
    tr.loss = loss;
    tr.metrics = dla__train_parse_metrics(tr.o.metrics);
    tr.best_val_loss = INFINITY;
    tr.hist.info = dla_malloc(sizeof *tr.hist.info);
    if (!tr.hist.info)
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_trainnet: out of memory");
    memset(tr.hist.info, 0, sizeof *tr.hist.info);
    tr.hist.info->final_validation_loss = tr.hist.info->final_validation_accuracy =
        tr.hist.info->final_validation_rmse = NAN;

    /* The training device is the current one while training, so that
     * what initialization and the loss make lands there. */
    dla_device *prev = dla_device_current();
    int normalized = 0, started = 0;
    st = dla_training_device(tr.o.execution_environment, &tr.dev);
    if (st == DLA_OK) {
        dla_device_set_current(tr.dev);
        st = setup(&tr, data, net, &normalized);
    }
    if (st == DLA_OK && tr.par.on && !strcmp(tr.o.solver, "lbfgs"))
        st = dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                           "dla_trainnet: solver \"lbfgs\" with ExecutionEnvironment \"%s\": "
                           "L-BFGS trains on one device (use \"auto\", \"cpu\" or \"gpu\")",
                           tr.o.execution_environment);
    if (tr.par.on) {
        st = dla__train_par_agree(&tr.par, st, "set-up");
        if (st == DLA_OK)
            st = dla__train_par_same(&tr.par, &tr.o, tr.loss, dla_mbq_num_observations(tr.train_q),
                                     tr.val_q ? dla_mbq_num_observations(tr.val_q) : 0, tr.nl,
                                     tr.lr_factor, tr.l2_factor);
        if (st == DLA_OK && tr.chunk)
            st = dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                               "dla_trainnet: ExecutionEnvironment \"%s\" with SequenceLength "
                               "\"%s\": chunks of sequences are not trained in parallel (a "
                               "stop within a batch's chunks is not agreed among the workers); "
                               "use \"longest\" or \"shortest\"",
                               tr.o.execution_environment, tr.o.sequence_length);
        if (st == DLA_OK)
            st = dla__train_par_setup(&tr.par, tr.net, &tr.train_q, &tr.o, &tr.iterations_per_epoch);
        st = dla__train_par_agree(&tr.par, st, "partitioning the data");
    }
    if (st == DLA_OK) {
        snprintf(tr.hist.info->device, sizeof tr.hist.info->device, "%s", dla_device_name(tr.dev));
        const int lbfgs = !strcmp(tr.o.solver, "lbfgs");
        tr.table = (dla__train_table){tr.metrics & DLA__METRIC_ACCURACY,
                                      (tr.metrics & DLA__METRIC_RMSE) != 0, tr.val_q != NULL, lbfgs};
        if (!strcmp(tr.o.plots, "training-progress")) {
            int64_t total = lbfgs     ? tr.o.max_iterations
                            : tr.chunk ? 0
                                       : tr.iterations_per_epoch * tr.o.max_epochs;
            tr.progress = dla_progress_create(&(dla_progress_options){
                .stream = tr.o.output, .total = total, .title = "Training Progress"});
            if (!tr.progress)
                st = dla_last_status();
        }
    }
    if (st == DLA_OK) {
        if (tr.o.verbose)
            print_start(&tr, normalized);
        tr.start = now();
        int stop_now = 0;
        if (tr.o.output_fn) {
            dla_training_state s0 = {.stage = "start", .learn_rate = tr.o.initial_learn_rate,
                                     .training_loss = NAN, .training_accuracy = NAN,
                                     .training_rmse = NAN, .validation_loss = NAN,
                                     .validation_accuracy = NAN, .validation_rmse = NAN,
                                     .gradient_norm = NAN, .step_norm = NAN};
            if (!strcmp(tr.o.solver, "lbfgs"))
                s0.learn_rate = NAN;
            stop_now = call_output_fn(&tr, &s0, &st) != 0;
        }
        started = 1;
        /* MATLAB's OutputFcn stops training at any stage, "start" included;
         * its answer there was dropped and every epoch ran. The ranks of a
         * parallel training agree on it, as after an iteration. */
        st = dla__train_par_end(&tr.par, st, &stop_now);
        if (st == DLA_OK && stop_now)
            snprintf(tr.hist.info->stop_reason, sizeof tr.hist.info->stop_reason,
                     "Stopped by OutputFcn");
        else if (st == DLA_OK)
            st = !strcmp(tr.o.solver, "lbfgs") ? run_lbfgs(&tr) : run_epochs(&tr);
        if (st == DLA_OK)
            st = validate_at_the_end(&tr);
        if ((st == DLA_OK || (tr.diverged && st == DLA_ERR_STATE)) && tr.best_net) {
            use_best_network(&tr);
            tr.took_best = 1;
        }
        /* After a failure too: the network returned holds no state of a
         * half-read sequence. The best validation's network too: it was
         * copied with the state of the training batch of its iteration. */
        if (tr.has_recurrent && tr.ns) {
            dla_status rs = dla_net_reset_state(tr.net);
            st = st == DLA_OK ? rs : st;
        }
        if (st == DLA_OK && !strcmp(tr.o.batch_normalization_statistics, "population"))
            st = finalize_batchnorm(&tr);
    }
    if (started) {
        /* The report's collectives clear the thread's error: a failure's
         * message is kept past them. */
        char why[2048] = "";
        if (st != DLA_OK)
            snprintf(why, sizeof why, "%s", dla_last_error());
        dla__train_par_report(&tr.par, tr.o.verbose, say_ctx, &tr);
        if (st != DLA_OK)
            dla_set_error(st, "%s", why);
    }
    if (st == DLA_OK) {
        dla_training_info *in = tr.hist.info;
        in->output_network_iteration = tr.best_iteration ? tr.best_iteration : tr.iteration;
        if (tr.o.verbose) {
            char rule[512], line[sizeof in->stop_reason + 32];
            dla__train_table_rule(&tr.table, rule, sizeof rule);
            say(&tr, rule);
            snprintf(line, sizeof line, "Training finished: %s.\n", in->stop_reason);
            say(&tr, line);
            if (tr.finish_note[0])
                say(&tr, tr.finish_note);
        }
        if (tr.progress) {
            char line[4200];
            snprintf(line, sizeof line, "Training progress chart: %s", tr.o.plots_path);
            dla_progress_finish(tr.progress, line);
        }
        if (tr.o.output_fn) {
            dla_training_state s = {.stage = "done", .epoch = tr.epoch, .iteration = tr.iteration,
                                    .time_elapsed = now() - tr.start,
                                    .learn_rate = in->iterations ? in->learn_rate[in->iterations - 1] : NAN,
                                    .training_loss = in->iterations ? in->training_loss[in->iterations - 1] : NAN,
                                    /* The last iteration's, as its loss:
                                     * NaN here told an OutputFcn that
                                     * read the final accuracy at "done"
                                     * that none was computed. */
                                    .training_accuracy = in->iterations ? in->training_accuracy[in->iterations - 1] : NAN,
                                    .training_rmse = in->iterations ? in->training_rmse[in->iterations - 1] : NAN,
                                    .validation_loss = in->final_validation_loss,
                                    .validation_accuracy = in->final_validation_accuracy,
                                    .validation_rmse = in->final_validation_rmse,
                                    .gradient_norm = in->iterations ? in->gradient_norm[in->iterations - 1] : NAN,
                                    .step_norm = in->iterations ? in->step_norm[in->iterations - 1] : NAN};
            call_output_fn(&tr, &s, &st);
        }
        in->seconds = now() - t0;
    } else if (tr.progress) {
        dla_progress_finish(tr.progress, NULL);
    }
    if (tr.dev)
        dla_device_set_current(prev);
    /* Keep the failure's message past teardown's own calls. */
    char msg[2048] = "";
    if (st != DLA_OK)
        snprintf(msg, sizeof msg, "%s", dla_last_error());
    teardown(&tr);
    if (st != DLA_OK && !started) {
        dla_net_free(tr.net);
        dla_training_info_free(tr.hist.info);
        dla_set_error(st, "%s", msg);
        return st;
    }
    /* Once training has started, a failure still returns the network as
     * trained so far (and the history): the work is never lost. */
    if (st != DLA_OK) {
        tr.hist.info->output_network_iteration = tr.took_best ? tr.best_iteration : tr.updated;
        tr.hist.info->seconds = now() - t0;
    }
    *trained = tr.net;
    if (info)
        *info = tr.hist.info;
    else
        dla_training_info_free(tr.hist.info);
    if (st != DLA_OK)
        dla_set_error(st, "%s", msg);
    return st;
}

/* ---------------------------------------------------------------- testnet */

enum { TEST_MAX_METRICS = 8 };

/* The metrics of testnet's list: which is a loss (its name), accuracy or
 * RMSE, in order. */
static dla_status parse_test_metrics(const char *metrics, char names[][32], int *n)
{
    *n = 0;
    const char *p = metrics;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        size_t len = strcspn(p, ", ");
        if (*n == TEST_MAX_METRICS || len >= 32)
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_testnet: metrics \"%s\": %s",
                                 metrics, len >= 32 ? "a name is too long" : "more than 8");
        memcpy(names[*n], p, len);
        names[*n][len] = '\0';
        if (strcmp(names[*n], "accuracy") && strcmp(names[*n], "rmse") && !builtin_known(names[*n]))
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_testnet: metric \"%s\": use "
                                 "\"accuracy\", \"rmse\" or a loss (\"crossentropy\", "
                                 "\"binary-crossentropy\", \"mse\", \"l1loss\", \"huber\")",
                                 names[*n]);
        (*n)++;
        p += len;
    }
    if (*n == 0)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_testnet: no metric named (\"%s\")",
                             metrics);
    return DLA_OK;
}

/* dla_testnet once an image datastore's labels are in place; labelled is
 * that datastore when its labels are the targets. */
static dla_status testnet_checked(dla_net *net, const dla_train_data *data, const char *metrics,
                                  const dla_predict_options *opts, double *values,
                                  const dla_imds *labelled)
{
    static const char fn[] = "dla_testnet";
    if (!net || !metrics || !values)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", fn,
                             !net ? "net" : !metrics ? "metrics" : "values");
    if (!dla_net_initialized(net))
        return dla_set_error(DLA_ERR_STATE, "%s: the network is not initialized", fn);
    char names[TEST_MAX_METRICS][32];
    int n = 0;
    dla_status st = parse_test_metrics(metrics, names, &n);
    if (st == DLA_OK)
        st = check_data(fn, "data", data);
    if (st == DLA_OK)
        st = learn_count(data, fn);
    if (st != DLA_OK)
        return st;
    const dla_predict_options p = opts ? *opts : (dla_predict_options){0};
    if (dla__train_parse_sequence_length(p.sequence_length) > 0)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "%s: SequenceLength \"%s\": a prediction "
                             "reads whole sequences; use \"longest\" or \"shortest\"", fn,
                             p.sequence_length);
    trainer tr;
    memset(&tr, 0, sizeof tr);
    tr.fn = fn;
    if ((st = dla_training_options_resolve(&(dla_training_options){
                                               .mini_batch_size = p.mini_batch_size,
                                               .sequence_length = p.sequence_length,
                                               .sequence_padding_value = p.sequence_padding_value,
                                               .sequence_padding_direction =
                                                   p.sequence_padding_direction},
                                           &tr.o)) != DLA_OK) {
        /* The options are testnet's own: its name, not the resolver's. */
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        const char *own = "dla_training_options: ";
        return dla_set_error(st, "%s: %s", fn,
                             strncmp(msg, own, strlen(own)) ? msg : msg + strlen(own));
    }
    tr.net = net;
    tr.dev = dla__net_device(net);
    for (int i = 0; i < n; i++)
        tr.metrics |= !strcmp(names[i], "accuracy") ? DLA__METRIC_ACCURACY
                      : !strcmp(names[i], "rmse")   ? DLA__METRIC_RMSE
                                                    : 0;
    dla_device *prev = dla_device_current();
    dla_device_set_current(tr.dev);
    st = read_network(&tr, data);
    if (st == DLA_OK && labelled)
        st = own_labels_fit(&tr, labelled, "data");
    if (st == DLA_OK && tr.classify)
        st = make_class_list(&tr);
    if (st == DLA_OK)
        st = make_queue(&tr, data, 1, &tr.val_q, &tr.val_targets);
    /* One pass per loss asked for; accuracy and RMSE come with any (a
     * pass needs a loss: the classification's or the regression's). */
    int passes = 0, any_loss = 0;
    for (int i = 0; i < n; i++)
        any_loss |= builtin_known(names[i]);
    for (int i = 0; i < n && st == DLA_OK; i++) {
        const int is_loss = builtin_known(names[i]);
        if (!is_loss && (any_loss || passes))
            continue;
        dla_train_loss loss = {.name = is_loss ? names[i] : tr.classify ? "crossentropy" : "mse"};
        tr.loss = &loss;
        double l, acc, rmse;
        st = validate(&tr, &l, &acc, &rmse);
        passes++;
        for (int k = 0; k < n && st == DLA_OK; k++) {
            if (!strcmp(names[k], "accuracy"))
                values[k] = acc;
            else if (!strcmp(names[k], "rmse"))
                values[k] = rmse;
            else if (!strcmp(names[k], loss.name))
                values[k] = l;
        }
    }
    if (st != DLA_OK && strncmp(dla_last_error(), fn, sizeof fn - 1)) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        dla_set_error(st, "%s: %s", fn, msg);
    }
    dla_device_set_current(prev);
    dla_mbq_free(tr.val_q);
    dla_tensor_release(tr.val_targets);
    dla_tensor_release(tr.class_list);
    return st;
}

DLA_API dla_status dla_testnet(dla_net *net, const dla_train_data *data, const char *metrics,
                               const dla_predict_options *opts, double *values)
{
    /* An image datastore without targets: its labels are the targets, as
     * trainnet takes it (MATLAB's testnet(net, imds, metrics) scores the
     * datastore's labels). They were refused as "targets is NULL". The
     * class numbers are the datastore's own (its sorted folder names). */
    if (!data || !data->images || data->targets || data->target_sequences)
        return testnet_checked(net, data, metrics, opts, values, NULL);
    dla_scope_begin();
    dla_tensor *labels = dla_tensor_retain(dla_imds_labels(data->images));
    dla_scope_end();
    if (!labels) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        return dla_set_error(dla_last_status(), "dla_testnet: data: %s", msg);
    }
    dla_train_data own = *data;
    own.targets = labels;
    dla_status st = testnet_checked(net, &own, metrics, opts, values, data->images);
    dla_tensor_release(labels);
    return st;
}
