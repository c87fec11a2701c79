/*
 * dlaccel/train.h - included by dlaccel.h; do not include it directly.
 *
 * Training: MATLAB's trainnet and trainingOptions, and the training progress
 * display that trainnet and custom training loops share (MATLAB's
 * trainingProgressMonitor): a progress bar on a terminal and a chart of
 * loss and accuracy per iteration written as SVG.
 *
 *     // net = trainnet(XTrain, TTrain, layers, "crossentropy", options)
 *     dla_train_data data = {.predictors = x, .targets = labels};   // 28x28x1xN, 1xN int32
 *     dla_training_options o = {.solver = "sgdm", .max_epochs = 3,
 *                               .metrics = "accuracy", .plots = "training-progress"};
 *     dla_net *trained;
 *     dla_training_info *info;
 *     if (dla_trainnet(&data, net, &(dla_train_loss){.name = "crossentropy"}, &o,
 *                      &trained, &info) != DLA_OK)
 *         fprintf(stderr, "%s\n", dla_last_error());
 *
 * A custom loss is a dla_function of (Y, T) returning the loss; an
 * accelerated one (dla_accelerate) is given as .accel and is then served
 * from its traces, as MATLAB's trainnet(..., accLossFun, ...) is:
 *
 *     static dla_status weighted_ce(void *ctx, int nin, dla_tensor *const *in,
 *                                   int nout, dla_tensor **out)
 *     {
 *         dla_crossentropy_options o = {.weights = ctx, .weights_format = "C",
 *                                       .normalization_factor = "all-elements"};
 *         out[0] = dla_affine(dla_crossentropy(in[0], in[1], &o), 4.0, 0.0);
 *         return dla_tensor_status(out[0]);
 *     }
 *     dla_accel *acc = dla_accelerate(weighted_ce, NULL);
 *     dla_trainnet(&data, net, &(dla_train_loss){.accel = acc, .ctx = class_weights}, &o, ...);
 *     printf("HitRate %.0f%%\n", dla_accel_hit_rate(acc));
 *
 * Errors: functions return a dla_status and set dla_last_error(), naming
 * the function, the option or argument and what is wrong.
 */
/* Before the guard: included first, this header still comes in dlaccel.h's
 * order, after the declarations it uses. */
#include <dlaccel.h>
#ifndef DLACCEL_TRAIN_H
#define DLACCEL_TRAIN_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- progress */

/* A progress display for training (MATLAB's trainingProgressMonitor): a
 * progress bar, and metrics recorded per iteration that make a chart.
 *
 *     dla_progress *p = dla_progress_create(&(dla_progress_options){
 *         .total = num_iterations, .title = "Fashion-MNIST CNN"});
 *     for (...) {
 *         dla_progress_record(p, "TrainingLoss", iteration, loss);
 *         dla_progress_update(p, iteration, "epoch 1/3  loss 0.4213");
 *     }
 *     dla_progress_write_chart(p, "training-progress.svg");
 *     dla_progress_finish(p, NULL);
 *     dla_progress_free(p);
 *
 * The bar. On a terminal (the stream is a tty) one line is redrawn in
 * place, at most ten times a second:
 * "[#######.............]  35%  812/2340  00:19 < 00:35  42.1 it/s  text"
 * (elapsed < left, then iterations per second since the first update, or
 * seconds per iteration below one a second). The line is fitted to the
 * terminal's width, read at every draw (COLUMNS, else 80, when the stream
 * is not a terminal but the bar is forced): the text is shortened first,
 * then the bar, then the times, the rate and the count are left out.
 * Elsewhere (a pipe, a file, a log) nothing is redrawn: a plain line with
 * the same fields ("00:00:19 elapsed, 00:00:35 left  42.1 it/s  text") is
 * written at the first update, when the progress crosses each tenth of
 * the total, and at the end. Lines written with dla_progress_printf go above
 * the bar (the bar is cleared and redrawn around them), so a table and a
 * bar share a terminal.
 *
 * The chart. A metric is a named series of (iteration, value) points. Its
 * panel is its name without a leading "Training" or "Validation":
 * "TrainingLoss" and "ValidationLoss" share the panel "Loss",
 * "TrainingAccuracy" and "ValidationAccuracy" the panel "Accuracy"; any
 * other name is a panel of its own. Panels are stacked in the order their
 * first metric was recorded, with Accuracy above Loss as MATLAB draws them.
 * A training series is drawn as a light line of the raw values with a
 * smoothed darker line over it, a validation series as black dashes with a
 * marker on each point; epoch boundaries (dla_progress_mark_epoch) are
 * dotted vertical lines. The file is plain SVG 1.1 text in UTF-8 (no
 * script, no external reference), which any browser shows: a byte of the
 * title, the x label or a metric's name that is no UTF-8 character
 * (Latin-1 text) is written as U+FFFD. */

typedef struct dla_progress dla_progress;

typedef struct dla_progress_options {
    /* Where the bar and lines go; NULL: stdout. Not closed. */
    FILE *stream;
    /* 0: a bar when the stream is a terminal, plain lines otherwise;
     * 1: always the bar; -1: plain lines only; -2: neither (the chart
     * and the metrics only). */
    int bar;
    /* The iterations expected in all (the 100% of the bar); 0: unknown
     * (no percentage, no time left). */
    int64_t total;
    /* The chart's title; NULL: "Training Progress". */
    const char *title;
    /* The x axis label; NULL: "Iteration". */
    const char *xlabel;
} dla_progress_options;

/* A new progress display (opts may be NULL). NULL when out of memory.
 * Nothing is drawn until the first update. */
DLA_API dla_progress *dla_progress_create(const dla_progress_options *opts);
/* Frees p and its metrics; NULL does nothing. It does not finish the bar.
 * A display freed already, given here or to the other dla_progress_
 * calls, is refused and logged (docs/checks.md). */
DLA_API void dla_progress_free(dla_progress *p);

/* Appends the point (x, value) to the metric name (made on first use).
 * NaN values are kept but not drawn. DLA_ERR_INVALID_ARGUMENT for a NULL
 * or empty name, or more than 16 metrics; DLA_ERR_OUT_OF_MEMORY. */
DLA_API dla_status dla_progress_record(dla_progress *p, const char *name, int64_t x, double value);
/* The points of a metric: their count, and pointers to its x and values
 * (valid until the next record); -1 when there is no such metric. */
DLA_API int64_t dla_progress_metric(const dla_progress *p, const char *name, const int64_t **x,
                                    const double **values);
/* Marks the start of epoch (1-based) at iteration x on the chart. */
DLA_API dla_status dla_progress_mark_epoch(dla_progress *p, int epoch, int64_t x);

/* Moves the bar to done (of total) and sets the text after it (copied; at
 * most 200 characters are kept; NULL keeps the previous one). Redraws at
 * most 10 times a second on a terminal, and always at done == total. */
DLA_API void dla_progress_update(dla_progress *p, int64_t done, const char *text);
/* Writes a line (printf format, at most 4095 characters; a newline is
 * added when it does not end with one) above the bar. */
DLA_API void dla_progress_printf(dla_progress *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Draws the bar one last time and ends its line, then writes line (NULL:
 * nothing) on a line of its own. Later updates start a new bar (or new
 * plain lines), with its own time and rate. */
DLA_API void dla_progress_finish(dla_progress *p, const char *line);
/* Seconds since the first update of the current bar (0 before it). */
DLA_API double dla_progress_elapsed(const dla_progress *p);

/* Writes the chart of every metric recorded so far to path as SVG (to a
 * temporary file renamed over path, so a browser never reads half a file).
 * DLA_ERR_IO with the path and the system's reason; DLA_ERR_STATE when no
 * point was recorded. */
DLA_API dla_status dla_progress_write_chart(const dla_progress *p, const char *path);

/* ------------------------------------------------- training in parallel */

/* The pieces of MATLAB's "Train Network in Parallel with Custom Training
 * Loop", for a loop that every MPI rank runs (the spmd world of
 * parallel.h; in a world of one each is the identity):
 *
 *     int r = dla_spmd_rank(), n = dla_spmd_size();
 *     int64_t mine = dla_spmd_share(global_batch);      // workerMiniBatchSize(labindex)
 *     double w = (double)mine / global_batch;             // workerNormalizationFactor
 *     dla_spmd_broadcast_net(net, 0);                     // every worker starts the same
 *     dla_mbq_partition(q, n, r, &part);                  // partition(imds, N, labindex)
 *     dla_mbq_set_mini_batch_size(part, mine);
 *     bool go;
 *     while (dla_spmd_all(dla_mbq_hasdata(part), &go) == DLA_OK && go) {   // gop(@and, hasdata)
 *         ... dla_feval(model_loss, ...) -> loss, grads[nl], state[ns] ...
 *         dla_spmd_combine(nl, grads, w, grads);          // aggregateGradients (gplus)
 *         dla_spmd_combine(1, &loss, w, &loss);           // gplus(factor * loss)
 *         dla_spmd_combine_state(net, ns, state, mine, global_batch, state);  // aggregateState
 *         dla_net_set_state(net, ns, state);
 *         dla_sgdmupdate(...);                            // the same update on every worker
 *     }
 *
 * The progress channel from the workers to rank 0 is parallel.h's
 * dla_dataqueue. docs/parallel.md ("Training") tells the whole story. */

/* Each worker's share of a global mini-batch of global observations among
 * size workers (MATLAB's workerMiniBatchSize): global / size each, the
 * remainder one each to the first workers, into shares[0..size-1]. With
 * global < size the last workers get 0: they take part in every
 * collective with weight 0. DLA_ERR_INVALID_ARGUMENT for global < 0,
 * size < 1 or shares NULL. */
DLA_API dla_status dla_spmd_shares(int64_t global, int size, int64_t *shares);
/* This rank's share of global among dla_spmd_size() workers; -1 (with
 * dla_last_error) for global < 0. */
DLA_API int64_t dla_spmd_share(int64_t global);

/* MATLAB's gplus(weight * x) of aggregateGradients: out[i] is the sum over
 * the ranks of each rank's weight times x[i] (weight: its share of the
 * global mini-batch, so the sum is the whole batch's mean), the same bits
 * on every rank. The n tensors (gradients, a loss) are scaled and packed in
 * order into buckets of one dtype of at most DLACCEL_BUCKET_MIB MiB (4 by
 * default; a larger tensor is a bucket of its own), one allreduce per
 * bucket, in the same order on every rank; out[i] is a view of its bucket
 * with x[i]'s dims and format, owned as op results are (out may be x: the
 * pointers are replaced, the caller's references are not released). A rank
 * with weight 0 contributes zeros whatever x holds (x then only gives the
 * shapes and formats: a worker without observations passes the
 * learnables themselves). Every rank passes the same n, dtypes, dims and
 * formats (the labels of the dims but trailing singletons), in the same
 * order: each bucket's reduction compares what it packs, so tensors of
 * other sizes, other labels or in another order (that a bucket of the
 * same total size would have summed element by element) fail every rank,
 * DLA_ERR_INVALID_ARGUMENT naming the rank. A rank
 * that refuses its own arguments (a weight outside [0, 1], an error
 * tensor) still takes part in the reduction the others are in: every rank
 * fails, the others naming it and its reason, and the next collective
 * works. */
DLA_API dla_status dla_spmd_combine(int n, dla_tensor *const *x, double weight, dla_tensor **out);

/* MATLAB's aggregateState, done right: state[0..n-1] is the new State
 * (one tensor per row of dla_net_state(net), as dla_net_forward gave it)
 * of this worker's count observations of a global mini-batch of global;
 * net still holds the State from before that forward, the same on every
 * rank. out[i] (out may be state) becomes, on every rank:
 *  - batch normalization TrainedMean: the running mean updated with the
 *    whole batch's mean (the workers' means weighted by share);
 *  - TrainedVariance: updated with the whole batch's unbiased variance,
 *    by the parallel-variance formula (each worker's variance plus its
 *    mean's squared distance to the whole mean, weighted by share): a
 *    weighted average of the workers' variances is not the variance of
 *    the whole batch;
 *  - any other state (a custom layer's) whose row has the network's dims
 *    and a float dtype on every worker: MATLAB's gplus(share * state),
 *    the workers' values weighted by share, so every worker holds the
 *    same network;
 *  - the hidden and cell states of LSTM, BiLSTM and GRU layers (one
 *    column per observation of this worker's own batch), whatever their
 *    dims (H x 1 for a worker of one observation), and any row of other
 *    dims on some worker: this worker's own, not combined.
 * The unbiased variances count the elements per channel of each layer's
 * output as the network was initialized: for sequence data ("T" dims),
 * whose length varies by batch, use dla_spmd_combine_state_seq. Sums are
 * taken in double. A worker with count 0 passes any tensors of the rows'
 * dims (net's own State will do) and contributes nothing; a custom
 * layer's rows are summed whatever their formats, each rank's result
 * labelled as the tensor it passed. The workers'
 * counts add up to global, the same on every rank (a smaller last batch:
 * each worker's own count of it, and its size as global); otherwise every
 * rank fails with DLA_ERR_INVALID_ARGUMENT, since shares that do not sum
 * to one shrink or swell the means. A rank that
 * refuses its own arguments (a count past global, statistics that do not
 * fit their rows) still takes part in the first reduction: every rank
 * fails there, the others naming it and its reason. */
DLA_API dla_status dla_spmd_combine_state(dla_net *net, int n, dla_tensor *const *state,
                                          int64_t count, int64_t global, dla_tensor **out);
/* The same for a batch of sequences of seq_len steps (this worker's
 * padded length; workers may differ): a layer's elements per channel take
 * that T, not the initialized one (the network's minimum length, 1 by
 * default), and the whole batch's count is the sum over the workers.
 * seq_len 0 is dla_spmd_combine_state. trainnet "parallel" passes it. */
DLA_API dla_status dla_spmd_combine_state_seq(dla_net *net, int n, dla_tensor *const *state,
                                              int64_t count, int64_t global, int64_t seq_len,
                                              dla_tensor **out);

/* Copies root's Learnables, State and fixed parameters (input
 * normalization statistics) into net on every rank (the networks must
 * have the same layout), so that every worker starts from the same
 * weights. The network's values are replaced by new tensors: tensors
 * shared with another network are not written. A rank that refuses its
 * own arguments (a network not initialized, a root out of range) or whose
 * network has another number of rows in a table still takes part: every
 * rank fails, the others naming it. */
DLA_API dla_status dla_spmd_broadcast_net(dla_net *net, int root);

/* -------------------------------------------------------------- trainnet */

/* The data trainnet reads (MATLAB's XTrain/TTrain arguments, or its
 * ValidationData). Exactly one of predictors, sequences, images and
 * datastore is set.
 * Borrowed: it must stay valid and unchanged while trainnet runs. */
typedef struct dla_train_data {
    /* Observations along the B dim: "SSCB" images (h x w x c x N) for an
     * imageInput network, "CB" features, or an unformatted array read in
     * the network input's format with observations along the last dim.
     * Any real dtype (uint8 images take a quarter of single's memory);
     * each mini-batch is cast to single (double for a double network;
     * an uninitialized network initialized from double predictors is
     * double). */
    dla_tensor *predictors;
    /* Or one C x T sequence per observation for a sequenceInput network
     * (MATLAB's cell array of sequences); padded or truncated per batch by
     * the SequenceLength options. */
    const dla_seqlist *sequences;
    /* Or an image datastore (MATLAB's trainnet(imds, ...)): its files in
     * its current order, read and decoded a mini-batch at a time on a
     * background thread (DispatchInBackground is implied), so only the
     * batches read ahead are in memory. targets may then be NULL: the
     * datastore's labels (dla_imds_labels) are the targets. Skipped
     * corrupt files drop out of their batch with their labels (and a
     * network without input layers is initialized from the first file
     * that is not skipped). A
     * validation datastore's labels, when the training data is a datastore
     * too, are matched to its classes by name (MATLAB's categorical labels:
     * a validation folder may lack a class); a validation class that the
     * training datastore does not have is DLA_ERR_INVALID_ARGUMENT naming
     * it. Beside training data in memory, a validation datastore's labels
     * are its own class numbers, and one whose class count is not the
     * network's output's is DLA_ERR_INVALID_ARGUMENT (a folder that lacks
     * a class numbers the others differently). */
    dla_imds *images;
    /* Or a generic datastore (api/dlaccel/data.h, "datastores":
     * arrayDatastore, fileDatastore, transform, combine, custom), indexed
     * (shuffled and shared among workers), or read in order with a known
     * count (MATLAB's datastore neither shuffleable nor partitionable:
     * trained on in its order, so Shuffle must be "never", not with
     * "parallel" or "multi-gpu", and ValidationData must not read its
     * position: DLA_ERR_INVALID_ARGUMENT otherwise, as for an unknown
     * count), read a mini-batch at a time on a
     * background thread, each batch of predictors labeled with the network
     * input's format (its B dim the one observations are joined along).
     * Either one output, the predictors, with targets given as for
     * predictors (in memory); or two, MATLAB's trainnet(ds) whose reads
     * give {predictors, targets} (combine(arrayDatastore(X),
     * arrayDatastore(T)), a transform returning both), targets and
     * target_sequences NULL. The targets' kind comes from the first
     * observation: one int32 value is a class number (joined 1 x B "CB"),
     * anything else responses (joined as the network output's format when
     * unformatted). What the tensor targets are checked for before
     * training is checked of the first observation before training and of
     * every mini-batch as it is read (training, validation, testnet): a
     * class number outside 0..K-1 is DLA_ERR_INVALID_ARGUMENT and a class
     * count or kind that does not fit DLA_ERR_SHAPE (or
     * DLA_ERR_INVALID_ARGUMENT for validation targets of another kind than
     * the training ones), naming the observation or the mini-batch (its
     * number in the pass, from 1) and targets[i] within it. More than two
     * outputs, or two with targets given, are DLA_ERR_INVALID_ARGUMENT
     * (the network has one input and one output). */
    dla_datastore *datastore;
    /* Targets, one per observation: int32 class numbers 0..K-1 (any dims
     * of N elements, MATLAB's categorical targets), one-hot encoded per
     * mini-batch as K x N "CB" single, K the network output's channels; or
     * responses with observations along B in the network output's format
     * (single or double). Class numbers are checked once, before training:
     * one outside 0..K-1 is DLA_ERR_INVALID_ARGUMENT naming the first
     * (targets[i]), the range, and MATLAB's 1-based numbering when they
     * look 1-based; targets with a C dim (one-hot) of another size than K
     * are DLA_ERR_SHAPE naming both counts (and, for one value per
     * observation of another dtype than int32, saying that class numbers
     * are int32). Sequence-to-sequence targets as one C x N x T array
     * ("CBT") are padded to the longest sequence of the whole data
     * (validation targets: of theirs or of the training data's): a
     * mini-batch whose sequences are shorter (padded to its own longest,
     * or cut to its shortest) is given the targets' first steps, as many
     * as its sequences have, which line up with them when the padding is
     * on the right (SequencePaddingDirection "right", the default). With
     * "left" the array cannot say on which side each observation's steps
     * were padded, so such a batch is DLA_ERR_SHAPE, pointing to
     * target_sequences. */
    dla_tensor *targets;
    /* Or, with sequences, sequence-to-sequence targets as one sequence per
     * observation (MATLAB's cell array of sequence responses or of
     * categorical sequences), each as long as its predictor sequence,
     * padded, cut and chunked with the predictors (the same
     * SequenceLength, SequencePaddingValue and SequencePaddingDirection),
     * so every mini-batch's targets have its steps. Each sequence is
     * K x T_i responses, K the network output's channels, or, for an
     * output of K > 1 channels, 1 x T_i class numbers 0..K-1 (whole
     * numbers, held as the list's single values), one-hot encoded per
     * step; padded steps of one-hot targets are all 0. The network's
     * output must be a sequence ("CBT"). Checked once, before training:
     * set with targets, or without sequences, is DLA_ERR_INVALID_ARGUMENT;
     * a count of sequences or a sequence's length other than the
     * predictors', or a channel count neither K nor 1, is DLA_ERR_SHAPE
     * naming the first; a class number not a whole number in 0..K-1 is
     * DLA_ERR_INVALID_ARGUMENT naming the sequence and step. Borrowed as
     * sequences is. */
    const dla_seqlist *target_sequences;
} dla_train_data;

/* The loss trainnet minimizes (MATLAB's lossFcn): exactly one of name, fn
 * and accel.
 *   name: "crossentropy", "binary-crossentropy", "mse" (also
 *         "mean-squared-error" and "l2loss": dla_l2loss), "l1loss" (also
 *         "mae", "mean-absolute-error": dla_l1loss), "huber" (dla_huber,
 *         transition point 1), normalized as MATLAB's
 *         trainnet does: "crossentropy" by the number of the output's
 *         non-channel elements (the batch size for N x C outputs, N x T
 *         for sequences), the others by the output's number of elements
 *         (so "mse" is the mean of the squared errors over every
 *         response). With sequence-to-sequence outputs of padded
 *         sequences, padded time steps are masked out, as MATLAB's: the
 *         loss is the mean over the valid steps (their elements), and the
 *         accuracy and RMSE are over them too (docs/training.md). Class
 *         numbers (and responses) per step of an output of other steps
 *         than its input are padded with no class (NaN): the loss, the
 *         accuracy and the RMSE are means over the steps that hold one
 *         (a NaN among a sequence's responses, which cannot be told from
 *         that padding, is DLA_ERR_INVALID_ARGUMENT naming it).
 *   fn:   a custom loss: called as fn(ctx, 2, {Y, T}, 1, &loss) with the
 *         network's output Y and the mini-batch's targets T (one-hot for
 *         class targets), padded steps included (no mask is passed: a
 *         loss over padded sequences must mask them itself, e.g. where T
 *         holds its padding); it sets out[0] to a scalar loss made with ops
 *         (inside trainnet's dla_feval: no release needed). Its ops are
 *         differentiated through, so it must be written with differentiable
 *         ops, as any model loss.
 *   accel: the same function accelerated with dla_accelerate; trainnet
 *         calls it with dla_accel_call, so a mini-batch of the same shapes
 *         replays a trace (recorded on the tape of trainnet's dla_feval,
 *         so the gradient goes through it) and the function's HitRate,
 *         Occupancy and CheckMode say how it went. Give the accelerated
 *         function a key (dla_accel_options.key) when ctx carries values
 *         that change the loss. */
typedef struct dla_train_loss {
    const char *name;
    dla_function fn;
    dla_accel *accel;
    void *ctx;
} dla_train_loss;

/* What trainnet passes to an OutputFcn and records per iteration (MATLAB's
 * info structure). Values not computed at this iteration are NaN. */
typedef struct dla_training_state {
    const char *stage;        /* "start", "iteration", "done" */
    int epoch;                /* 1-based; 0 at "start" */
    int64_t iteration;        /* 1-based, over all epochs; 0 at "start" */
    double time_elapsed;      /* seconds since training started */
    double learn_rate;        /* the base learning rate of this iteration */
    double training_loss;
    double training_accuracy; /* percent; Metrics "accuracy" */
    double training_rmse;     /* Metrics "rmse" */
    double validation_loss;
    double validation_accuracy;
    double validation_rmse;
    /* Solver "lbfgs": the L2 norm of the gradients at the point returned
     * and of the step taken (MATLAB's GradientNorm and StepNorm); NaN for
     * the other solvers. */
    double gradient_norm;
    double step_norm;
} dla_training_state;

/* An OutputFcn: called at the start, after every iteration and at the end
 * ("done": the last iteration's figures and the last validation's).
 * Return nonzero to stop training (the stop reason is then "Stopped by
 * OutputFcn"); at "start", before the first iteration (the network comes
 * back untrained, with no history). With ValidationData, the iteration it
 * stops at is validated after it returns, when ValidationFrequency had
 * not (the end of training: its table row and the final validation
 * figures, which "done" is given, are the network returned's, and
 * OutputNetwork "best-validation" weighs it too). */
typedef int (*dla_training_output_fn)(void *ctx, const dla_training_state *state);

/* MATLAB trainingOptions(solverName, Name=Value). A zero field means
 * MATLAB's default, written beside it; where zero is also a value one may
 * want, a negative number asks for it, as noted. dla_training_options_resolve
 * gives the values a zeroed struct stands for. */
typedef struct dla_training_options {
    /* -------------------------------------------------------------- solver */
    /* "sgdm" (NULL), "adam", "rmsprop": mini-batch solvers, the options
     * below; "lbfgs": full-batch L-BFGS (MATLAB's TrainingOptionsLBFGS),
     * its options at the end of the struct. The options of one kind of
     * solver must be left zero with the other (MATLAB's TrainingOptionsLBFGS
     * has no MiniBatchSize, MaxEpochs, InitialLearnRate and schedule,
     * Momentum, the decay factors and Epsilon, L2Regularization, the
     * gradient threshold, Shuffle, PartialMiniBatch; the mini-batch
     * solvers have no MaxIterations, tolerances or line search):
     * dla_training_options_resolve names the first one set, so a
     * mini-batch setting never goes silently unused. So do the mini-batch
     * solvers' own options set for another of them: Momentum is "sgdm"'s,
     * GradientDecayFactor "adam"'s, SquaredGradientDecayFactor and
     * Epsilon "adam"'s and "rmsprop"'s. */
    const char *solver;
    int max_epochs;             /* MaxEpochs: 30 */
    int64_t mini_batch_size;    /* MiniBatchSize: 128 */
    /* InitialLearnRate: 0.01 for "sgdm", 0.001 for "adam" and "rmsprop". */
    double initial_learn_rate;
    /* LearnRateSchedule, LearnRateDropFactor, LearnRateDropPeriod and a
     * warm-up, or a list of schedules through its `next` (optim.h);
     * zeroed: constant. drop_factor 0: 0.1; negative: 0 (resolved as -1,
     * which dla_learn_rate_at reads as 0, since a schedule's 0 is the
     * default there too). warmup_start_factor must be finite and >= 0.
     * Resolving fills in the first schedule's defaults (its period,
     * frequency_unit and factors); the list's others are read as given
     * (their zeros are defaults to dla_learn_rate_at too) and checked. */
    dla_learn_rate_schedule learn_rate_schedule;
    double momentum;            /* "sgdm" Momentum: 0.9; negative: 0 */
    double gradient_decay_factor;         /* "adam": 0.9; negative: 0 */
    /* SquaredGradientDecayFactor: 0.999 for "adam", 0.9 for "rmsprop";
     * negative: 0. */
    double squared_gradient_decay_factor;
    double epsilon;             /* "adam", "rmsprop" Epsilon: 1e-8; finite */
    double l2_regularization;   /* L2Regularization: 1e-4; negative: none; finite */
    double gradient_threshold;  /* GradientThreshold: Inf (no clipping) */
    /* GradientThresholdMethod: "l2norm" (NULL), "global-l2norm",
     * "absolute-value". As MATLAB's trainer, a frozen row (learn-rate
     * factor 0) takes no L2 term, and a layer whose rows are all frozen
     * counts in no norm (its gradients are not used). */
    const char *gradient_threshold_method;

    /* ---------------------------------------------------------------- data */
    /* Shuffle: "once" (NULL: before the first epoch), "every-epoch",
     * "never". */
    const char *shuffle;
    /* The seed of the shuffling stream (numpy's default_rng(seed), see
     * data.h); 0 is a seed like any other. */
    uint64_t shuffle_seed;
    /* What becomes of the last observations of an epoch that do not fill
     * a mini-batch: "discard" (NULL; MATLAB's trainnet), "return" (a
     * smaller last mini-batch). */
    const char *partial_mini_batch;
    /* SequenceLength: "longest" (NULL), "shortest", or a number written
     * out ("100", at most INT64_MAX; a batch shorter than it is padded to
     * it, and a padding too large to make fails the iteration, naming
     * SequenceLength): each mini-batch is padded to a multiple of it and split
     * into chunks of that many steps, trained one after the other (an
     * iteration each) with the network state (LSTM hidden and cell state)
     * carried from chunk to chunk and reset before each mini-batch
     * (validation mini-batches are padded to their longest sequence and
     * predicted whole). Sequence-to-sequence targets (with a T dim, one
     * step per input step, else DLA_ERR_SHAPE) are padded and cut the same
     * way, each chunk given its own steps; padded steps hold
     * SequencePaddingValue in the targets too. Padded steps (of any
     * SequenceLength) count in neither the built-in loss nor the metrics,
     * as MATLAB masks them (dla_train_loss). SequencePaddingValue and
     * SequencePaddingDirection as data.h's dla_sequence_options. */
    const char *sequence_length;
    double sequence_padding_value;
    const char *sequence_padding_direction;
    /* DispatchInBackground: mini-batches are made on a thread while the
     * previous one trains (the same batches, in the same order). */
    int dispatch_in_background;
    /* ExecutionEnvironment: "auto" (NULL: the calling thread's current
     * device, which is the best loaded device unless DLACCEL_DEVICE or
     * dla_device_set_current says otherwise), "cpu", "gpu" (see
     * dla_training_device). The network is trained there; the returned
     * network lives there. "parallel": every MPI rank (parallel.h; a
     * program run without mpirun is one worker) trains on its share of
     * each mini-batch, on the device "auto" gives it: the mini-batches
     * are those "auto" trains on (the same shuffles, iterations and last
     * partial batch; a world of one trains as "auto", bit for bit), each
     * divided among the workers as dla_spmd_shares divides it, and the
     * gradients are averaged weighted by share; "multi-gpu": the
     * same with one rank per GPU of each machine, rank mapped to GPU by
     * its local rank. Every rank calls trainnet with the same arguments
     * (compared at set-up; a schedule function's rates at each
     * iteration: a difference is DLA_ERR_INVALID_ARGUMENT on every rank)
     * and gets the same trained network; only rank 0 prints, draws the
     * chart and writes checkpoints (docs/parallel.md, "Training"). */
    const char *execution_environment;
    /* ResetInputNormalization: 0 or 1: the statistics of every input
     * layer that normalizes are computed from the training data before
     * training (MATLAB's true); negative (MATLAB's false): the network's
     * are kept, but empty ones are computed, as MATLAB computes them
     * "when they are empty": a layer given none in its options whose Mean
     * (and StandardDeviation) are still the zeros (and ones) it was made
     * with, which normalize nothing. */
    int reset_input_normalization;
    /* BatchNormalizationStatistics: "population" (NULL or "auto";
     * MATLAB's default, shown as "auto" in its later releases, which we
     * read as "population"): after training, one more pass over the
     * training data in the last epoch's order, in training mode, gives
     * each batch normalization layer's TrainedMean and TrainedVariance the
     * statistics of its input over the whole data (a partial last
     * mini-batch too, which PartialMiniBatch "discard" leaves out of
     * training; the mini-batches' means and variances pooled, weighted
     * by their observations; with "parallel", over every worker's share);
     * "moving": the running estimates updated every iteration (MeanDecay,
     * VarianceDecay) are kept. The moving ones lag weights that were still
     * moving fast at the end: a short training could predict one class
     * for everything. A network without batch normalization layers is
     * not passed over again. */
    const char *batch_normalization_statistics;

    /* ---------------------------------------------------------- validation */
    /* ValidationData: NULL: none. Evaluated in inference mode (predict) in
     * mini-batches of MiniBatchSize, at the first iteration, every
     * validation_frequency iterations and at the end (the last iteration,
     * whatever stopped training there). Data with no
     * observation is DLA_ERR_INVALID_ARGUMENT (it would validate nothing). */
    const dla_train_data *validation_data;
    int validation_frequency;   /* ValidationFrequency: 50 (iterations) */
    /* ValidationPatience: 0: Inf. Training stops when the validation loss
     * has not been below its lowest value this many validations in a row. */
    int validation_patience;
    /* OutputNetwork: "last-iteration" (NULL): the network as the last
     * iteration left it; "best-validation": the network of the validation
     * with the lowest loss (MATLAB's ObjectiveMetricName "loss"), its
     * iteration in info->output_network_iteration and its figures the
     * final validation ones (evaluated again after BatchNormalizationStatistics
     * "population" sets a batch normalization layer's statistics); it needs
     * validation_data. A tie keeps the earlier one. */
    const char *output_network;

    /* ---------------------------------------------------------- monitoring */
    /* Metrics: NULL (none), "accuracy" (percent of observations whose
     * largest output is the target's class; for an output of one channel,
     * binary classification with a sigmoid and "binary-crossentropy",
     * whose output and target are on the same side of 0.5: both >= 0.5,
     * or both below), "rmse" (the root of the mean
     * squared error over all elements), or both: "accuracy,rmse". */
    const char *metrics;
    /* Verbose: 0 or 1: the iteration table is printed (MATLAB's true);
     * negative: silent. */
    int verbose;
    int verbose_frequency;      /* VerboseFrequency: 50 (iterations) */
    /* Plots: "none" (NULL), "training-progress": a progress bar (on a
     * terminal; plain lines otherwise, see dla_progress) and the chart of
     * loss (and the metrics) per iteration, written to plots_path at the
     * end of the first epoch, of later ones at most once a second, and of
     * training. */
    const char *plots;
    /* The chart's file; NULL: "training-progress.svg" in the current
     * directory ("" is DLA_ERR_INVALID_ARGUMENT). Its folder must exist
     * and be writable: checked before the first iteration (DLA_ERR_IO). */
    const char *plots_path;
    /* Where the table and the bar go; NULL: stdout. */
    FILE *output;
    /* OutputFcn and its ctx; NULL: none. */
    dla_training_output_fn output_fn;
    void *output_ctx;

    /* --------------------------------------------------------- checkpoints */
    /* CheckpointPath: a folder (it must exist and be writable: checked
     * before the first iteration, DLA_ERR_IO) where the network is saved
     * with dla_net_save as net_checkpoint__<iteration>__<yyyy_mm_dd__hh_mm_ss>.safetensors;
     * NULL: none. */
    const char *checkpoint_path;
    int checkpoint_frequency;   /* CheckpointFrequency: 1 */
    /* CheckpointFrequencyUnit: "epoch" (NULL), "iteration" (the same for
     * "lbfgs", whose every iteration is a pass over all the data). */
    const char *checkpoint_frequency_unit;

    /* ----------------------------------------------- solver "lbfgs" alone */
    /* The whole training set is one batch (MATLAB: "a full-batch
     * solver"); every iteration is one dla_lbfgsupdate (optim.h) of the
     * network's learnables, its loss function trainnet's forward, loss and
     * gradients over all the data. Learnables of learn-rate factor 0 stay
     * out of the update (frozen); L-BFGS has no learning rate for another
     * factor to multiply, so a factor other than 0 and 1 is refused
     * (DLA_ERR_INVALID_ARGUMENT naming the row), as is a network with
     * every learnable frozen. */
    int max_iterations;         /* MaxIterations: 1000 */
    /* GradientTolerance: training stops when the L2 norm of the gradients
     * (all learnables not frozen together) at the iteration's point is at most this
     * (absolute, as the GradientsNorm of MATLAB's custom-loop examples);
     * 0: 1e-5; negative: 0 (never). */
    double gradient_tolerance;
    /* StepTolerance: stops when the L2 norm of the iteration's step is at
     * most this; 0: 1e-5; negative: 0 (never). */
    double step_tolerance;
    /* LineSearchMethod, HistorySize, InitialInverseHessianFactor,
     * InitialStepSize, MaxNumLineSearchIterations: dla_lbfgs_options'
     * fields (optim.h), zero meaning the same defaults ("weak-wolfe", 10,
     * 1, "auto", 20). */
    const char *line_search_method;
    int history_size;
    double initial_inverse_hessian_factor;
    double initial_step_size;
    int max_num_line_search_iterations;
} dla_training_options;

/* Writes into *out the options trainnet uses for opts (NULL: all
 * defaults): every zero field replaced by its default, negative "asks for
 * zero" values by 0 (and l2_regularization by 0), strings by their default
 * names. Checks every value: DLA_ERR_INVALID_ARGUMENT naming the option
 * (MATLAB's name) for an unknown string, a negative count, momentum or a
 * decay outside [0, 1], a drop factor above 1, a negative drop period or
 * warm-up start factor, a sequence length that is neither "longest",
 * "shortest" nor a positive number, "accuracy"/"rmse" misspelt, an option
 * of the other kind of solver or of another mini-batch solver set (see
 * solver), the lbfgs options as
 * dla_lbfgs_state_create checks them. The options that do not apply to
 * the solver stay zero (NULL) in *out. Pointers are copied as they are
 * (strings are not duplicated). */
DLA_API dla_status dla_training_options_resolve(const dla_training_options *opts,
                                                dla_training_options *out);
/* The options as MATLAB displays a TrainingOptionsSGDM (ADAM, RMSProp,
 * LBFGS: one "Name: value" line per option of the solver, MATLAB's names)
 * into buf, snprintf rules. opts NULL: the defaults. */
DLA_API int dla_training_options_describe(const dla_training_options *opts, char *buf,
                                          size_t size);

/* The device ExecutionEnvironment names: "auto" (NULL): the calling
 * thread's current device; "cpu": the first device of type "cpu"; "gpu":
 * the best device that is not a cpu (the highest plugin priority among
 * loaded devices whose type is not "cpu"; all plugins are loaded to find
 * it); "parallel": as "auto", in each rank; "multi-gpu": the devices
 * that are not a cpu, in order, the one at this rank's local rank
 * (dla_spmd_local_rank). DLA_ERR_NO_DEVICE when there is none ("gpu": the
 * message lists the devices found and how to load a GPU plugin;
 * "multi-gpu": no GPU, or fewer GPUs than ranks on this machine),
 * DLA_ERR_INVALID_ARGUMENT for another name. */
DLA_API dla_status dla_training_device(const char *environment, dla_device **out);

/* What trainnet returns besides the network (MATLAB's TrainingInfo). */
typedef struct dla_training_info {
    /* TrainingHistory: one entry per iteration, iterations of them. Values
     * of metrics not asked for are NaN. */
    int64_t iterations;
    int *epoch;
    double *time_elapsed;       /* seconds */
    double *learn_rate;         /* base learning rate */
    double *training_loss;
    double *training_accuracy;  /* percent */
    double *training_rmse;
    /* Solver "lbfgs": GradientNorm and StepNorm per iteration (NaN for the
     * other solvers). */
    double *gradient_norm;
    double *step_norm;
    /* ValidationHistory: one entry per validation. */
    int64_t validations;
    int64_t *validation_iteration;
    double *validation_loss;
    double *validation_accuracy;
    double *validation_rmse;
    /* The last validation's figures (NaN without validation data, and for
     * a metric not in .metrics: accuracy without "accuracy"). */
    double final_validation_loss;
    double final_validation_accuracy;
    double final_validation_rmse;
    /* The iteration the returned network is from: the last one whose
     * update was applied. */
    int64_t output_network_iteration;
    /* "Max epochs completed", "Stopped by OutputFcn", "Met validation
     * criterion" (ValidationPatience), "Training loss is NaN" (or Inf,
     * -Inf), "Gradient of <layer>/<parameter> is not finite" (these two
     * with DLA_ERR_STATE, see dla_trainnet); with "lbfgs": "Max iterations
     * completed", "Gradient tolerance reached", "Step tolerance reached",
     * "Line search failed" (the line search found no length meeting its
     * conditions in MaxNumLineSearchIterations evaluations; training ends
     * there, as MATLAB's L-BFGS loops do, with DLA_OK); room for names of
     * about 100 characters each, cut beyond. */
    char stop_reason[256];
    /* The device trained on ("cpu:0"). */
    char device[64];
    double seconds;              /* the whole call */
} dla_training_info;

/* Options of dla_testnet and dla_minibatchpredict (MATLAB's name-value
 * arguments of testnet and minibatchpredict). */
typedef struct dla_predict_options {
    int64_t mini_batch_size;   /* MiniBatchSize: 0: 128 */
    /* Sequences: each mini-batch padded to its longest ("longest", NULL)
     * or cut to its shortest ("shortest"), SequencePaddingValue and
     * SequencePaddingDirection as trainnet's. A number (trainnet's
     * chunks) is DLA_ERR_INVALID_ARGUMENT: predictions read whole
     * sequences. */
    const char *sequence_length;
    double sequence_padding_value;
    const char *sequence_padding_direction;
} dla_predict_options;

/* MATLAB metricValues = testnet(net, data, metrics): the network in
 * inference mode (predict) over data (predictors, sequences, an image
 * datastore or a datastore, and targets or target_sequences or a
 * datastore's second output, as trainnet takes them:
 * class numbers or responses; an image datastore's labels, its own class
 * numbers, when targets is NULL: DLA_ERR_INVALID_ARGUMENT when its class
 * count is not the network's output's, as a test folder that lacks a
 * class numbers the others differently), in mini-batches, each metric
 * over the whole data.
 * metrics names them, comma-separated: "accuracy" (percent, as Metrics
 * "accuracy" counts it: a one-channel output thresholded at 0.5), "rmse", or a
 * loss of trainnet's lossFcn ("crossentropy", "binary-crossentropy",
 * "mse", "l1loss", "huber" and their other names), normalized as trainnet
 * normalizes it (padded steps of sequence-to-sequence data masked out:
 * each a mean over the valid steps); values[i] receives the i-th (at most
 * 8). The network is not changed (a recurrent one's state is restored).
 * Errors:
 * DLA_ERR_INVALID_ARGUMENT (an unknown metric, data or targets missing),
 * DLA_ERR_STATE (a network not initialized), and the data's own, each
 * naming dla_testnet. */
DLA_API dla_status dla_testnet(dla_net *net, const dla_train_data *data, const char *metrics,
                               const dla_predict_options *opts, double *values);

/* MATLAB scores = minibatchpredict(net, data): the network in inference
 * mode (dla_net_predict) over data's predictors, sequences, image
 * datastore or datastore (targets and target_sequences are not read;
 * targets may be NULL; a datastore's second output, trainnet's targets,
 * is read with each observation, as its read gives it, but not joined
 * into batches nor used), a mini-batch at a
 * time, so that only one mini-batch's activations are in memory; the
 * outputs joined along their "B" dim (an unformatted output's last) into
 * *scores (ownership as dlaccel.h's results). Classes from the scores:
 * dla_onehotdecode (MATLAB's scores2label). Sequence-to-sequence outputs
 * of mini-batches padded to different lengths are padded along "T" to the
 * longest before they are joined, with SequencePaddingValue, on the side
 * SequencePaddingDirection gives (MATLAB's UniformOutput true): each
 * observation's steps keep their places, its padded steps are padding.
 * The scores are one per observation, in order: over a datastore with
 * skip_corrupt, a file skipped as corrupt would shift every later score
 * into another file's place, so it is an error (DLA_ERR_FORMAT naming the
 * file; predict over a dla_imds_subset without it).
 * Errors name dla_minibatchpredict. */
DLA_API dla_status dla_minibatchpredict(dla_net *net, const dla_train_data *data,
                                        const dla_predict_options *opts, dla_tensor **scores);

/* Frees an info returned by dla_trainnet; NULL does nothing. */
DLA_API void dla_training_info_free(dla_training_info *info);

/* MATLAB [netTrained, info] = trainnet(data, net, lossFcn, options).
 *
 * net is not changed (MATLAB's value semantics): *trained is a new network
 * (dla_net_free), a copy of net moved to the training device and trained
 * there. An uninitialized net (inputs that are not input layers) is
 * initialized with the first mini-batch. Before training, with
 * ResetInputNormalization, the statistics of each normalizing input layer
 * are computed from data (dla_net_set_input_statistics, in chunks);
 * without it, those of the layers whose statistics are empty (see the
 * option).
 *
 * Every iteration: the next mini-batch X, T (cast to the network's dtype, targets
 * one-hot encoded for class numbers); inside dla_feval, Y and the new state
 * from dla_net_forward (accelerated by the network itself), the loss of Y
 * and T, and the gradients with respect to every learnable; the state is
 * set; L2 regularization (the Learnables rows' L2 factors), gradient
 * clipping, and the solver's update with the learning rate of this epoch
 * and iteration times each row's learn-rate factor. The mini-batch loss
 * (and metrics) are read to the host each iteration for the table, the
 * chart and the history.
 *
 * Output: with Verbose, MATLAB's iteration table
 *   |  Epoch  |  Iteration  |  Time Elapsed  |  Mini-batch  |  Validation  |  Mini-batch  |  Validation  |  Base Learning  |
 *   |         |             |   (hh:mm:ss)   |   Accuracy   |   Accuracy   |     Loss     |     Loss     |      Rate       |
 * (accuracy columns with Metrics "accuracy", RMSE columns with "rmse",
 * validation columns with ValidationData) at iteration 1, every
 * VerboseFrequency iterations, at validations and at the last iteration,
 * then "Training finished: <stop reason>."; with Plots, the bar and the
 * chart (dla_progress).
 *
 * After the last iteration, with OutputNetwork "best-validation", the
 * network of the best validation takes the last one's place. Then, with
 * BatchNormalizationStatistics
 * "population" (the default) and batch normalization layers in the
 * network: one more pass over the training data sets their statistics
 * (see the option), the validation data is evaluated again with them
 * (info->final_validation_*), and two lines say so after "Training
 * finished".
 *
 * *info (may be NULL if not wanted) holds the history; free it with
 * dla_training_info_free.
 *
 * Solver "lbfgs" (MATLAB's trainingOptions("lbfgs")): the data is one
 * batch of all observations, read once; each iteration is one
 * dla_lbfgsupdate of the learnables (optim.h), whose loss function is the
 * dla_feval above over that batch (called once or more by the line
 * search), so the iteration count is MaxIterations at most and each
 * iteration is also an epoch (info->epoch[i] is i + 1). The network's
 * state (batch normalization statistics) is set from the evaluation at
 * the point the update returns; a recurrent network's state is not
 * carried between iterations (the loss must stay a function of the
 * learnables alone for the line search). Training stops at MaxIterations,
 * at GradientTolerance or StepTolerance, when the line search fails, or
 * by ValidationPatience or OutputFcn. The table's columns are the
 * iteration, the time, the metrics, the training (and validation) loss
 * and the gradient and step norms; the history's learn_rate is the
 * line search's step length (1: the quasi-Newton step). ExecutionEnvironment
 * "parallel" and "multi-gpu" and SequenceLength as a number are refused
 * with "lbfgs" (DLA_ERR_INVALID_ARGUMENT). A NaN or infinite loss or
 * gradient at the starting point stops it as for the other solvers
 * (DLA_ERR_STATE); at a point the line search tries it only shortens the
 * step.
 *
 * Checked before the first iteration, so that a mistake fails at once:
 * the options, the data, the predictors' dims but B and T against the
 * network's input layer (DLA_ERR_SHAPE; an unformatted array has its observations
 * along its last dim: MATLAB's N-by-numFeatures is its transpose), the
 * class numbers (0..K-1) and class count of the targets, and the folders of the chart and of CheckpointPath (they exist
 * and are writable). A failure there leaves *trained and *info NULL and
 * nothing allocated.
 *
 * The work is never lost: once training has started, a failure (a
 * checkpoint or the chart that cannot be written, a loss function that
 * fails, a device error, a non-finite loss) still returns the network as
 * trained so far in *trained, and the history in *info, together with the
 * error status; free both as after a success. info->output_network_iteration
 * says which iteration the network is from (after a failure inside the
 * solver's update, rows updated before it hold their new values).
 *
 * A NaN or infinite mini-batch loss, or gradient of any learnable, stops
 * training at that iteration (MATLAB's trainnet stops at a NaN loss, with
 * the stop reason "Training loss is NaN"; dlaccel watches the gradients
 * too, because a relu turns a NaN input into 0 and leaves the loss finite
 * while the first layer's weights become NaN): its row is printed, with
 * "NaN" in the table, the stop reason says which, and trainnet returns
 * DLA_ERR_STATE naming the epoch and iteration, with *trained the network
 * of the iteration before (the bad iteration's state and update are not
 * applied), or with OutputNetwork "best-validation" that of the best
 * validation so far (info->output_network_iteration, the final validation
 * figures its). The check costs one reduction per learnable per iteration,
 * read back with the loss (one host read, as before).
 *
 * Errors: DLA_ERR_INVALID_ARGUMENT (an option, data with neither or both
 * sources, a loss with none or several of name/fn/accel, targets whose
 * count differs from the predictors', a class number outside 0..K-1),
 * DLA_ERR_NO_DEVICE (ExecutionEnvironment), DLA_ERR_SHAPE (targets that do
 * not fit the network's output), DLA_ERR_IO (a folder of the chart or of
 * CheckpointPath missing or not writable, or a write that failed; the
 * message names the user's path), DLA_ERR_STATE (a non-finite loss or
 * gradient), and whatever an iteration fails with (the message names the
 * epoch and iteration). */
DLA_API dla_status dla_trainnet(const dla_train_data *data, dla_net *net,
                                const dla_train_loss *loss, const dla_training_options *opts,
                                dla_net **trained, dla_training_info **info);

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_TRAIN_H */
