/*
 * parallel_train_check.c - the training pieces of issue 15 checked under
 * mpirun (tests/parallel_train.sh runs it with 1 to 4 ranks). One mode
 * per run; every rank checks, rank 0 alone prints "ok"/"FAIL" lines, and
 * the exit status is 0 only when every rank passed.
 *
 *   steps      N workers against 1 on one global mini-batch of 37
 *              observations (no batch norm), 30 SGDM steps: the weights
 *              agree within 1e-5 * max(1, |w|); after every step every
 *              rank holds the same bits (a digest gathered from all);
 *              a second identical run gives the same bits.
 *   bn         batch-normalization state combined across the workers
 *              equals the state of the whole mini-batch within 1e-6
 *              relative (decays 1: the batch's own statistics; and the
 *              default 0.1); the plain weighted average does not.
 *   trainnet DIR [EPOCHS]
 *              trainnet with ExecutionEnvironment "parallel" with uneven
 *              shares (they must end together), a
 *              checkpoint in DIR at rank 0, the same network on every
 *              rank; verbose on stdout (rank 0 alone may print).
 *   resume DIR trainnet again from the newest checkpoint in DIR, with
 *              whatever number of workers this run has.
 *   overlap    trainnet "parallel" with the gradient reductions started
 *              during the backward pass (DLACCEL_OVERLAP=1) against the
 *              blocking path (DLACCEL_OVERLAP=0), from the same network:
 *              the same bits with 2 ranks (each element a sum of two, in
 *              either order); within 1e-5 with more (MPI's non-blocking
 *              reduction may add in another order than its blocking one;
 *              whether the bits agree is printed); the same network on
 *              every rank; buckets started during the backward; the loss
 *              as an accelerated function (a replay on the tape) too; and
 *              a rank whose loss fails at iteration 3 ends training on
 *              every rank with an error, not a hang.
 *   global     trainnet "parallel" against "auto" in the same process, on 23
 *              observations (images; sequences of 3 to 9 steps) with
 *              mini-batches of 5, 3 and 2, the partial last one returned
 *              or discarded: the same number of iterations, the loss and
 *              the validation loss within 1e-4, the accuracy the same,
 *              the learnables and the batch-normalization state (its
 *              population statistics) within 1e-3: the workers' shares
 *              of an iteration are "auto"'s mini-batch (some workers
 *              without a share where a batch has fewer observations than
 *              workers).
 *   seq2seq    trainnet "parallel" against "auto" on sequence-to-sequence
 *              data, sequences of 1 to 12 steps (13 observations, 7 to
 *              validate) padded per mini-batch of 3, 4 and 5, so that the
 *              workers' shares hold different numbers of valid steps (and
 *              some none, in a last batch of one): loss "crossentropy"
 *              with accuracy and "mse" with RMSE, the blocking and the
 *              overlapped reductions; every figure and the learnables
 *              within 1e-6 (float rounding; each was off by up to 1e-2
 *              when the shares were weighted by observations). Also with
 *              mini-batches lacking a sequence of 12 steps, the targets
 *              as target_sequences and as the array padded to 12.
 *   dsseq      trainnet "parallel" over sequences of 2 to 11 steps read
 *              through a custom datastore, against the same sequences as
 *              a sequence list: the same bits (each worker pads its share
 *              to the whole batch's length), padding on either side,
 *              a class per observation or per step.
 *   nan        a NaN target in the first worker's share of the first
 *              mini-batch: "parallel" stops there as "auto" does ("Training
 *              loss is NaN"), and the batch's RMSE is NaN on every rank
 *              (the other workers' finite figures alone were reported).
 *              Also an OutputFcn that stops on the last rank only: every
 *              rank stops at that iteration, with the stop reason
 *              "Stopped by OutputFcn" (the others' was empty), and rank
 *              0's table is one process's (the stop's row printed once,
 *              with the final validation's figures: they were missing).
 *   dropout    trainnet "parallel" against "auto" with a dropout (and a
 *              spatial dropout) layer, 13 observations in mini-batches of
 *              5 and 4: the loss and the learnables within 1e-6 (every
 *              worker drew the same masks for its share before); a
 *              dropout before a batch normalization: its population
 *              statistics within 1e-6; the random stream at the end where
 *              one process's is, on every rank.
 *   badfile DIR
 *              trainnet "parallel" on the image datastore DIR, one of whose
 *              files is corrupt and read by one worker only (its share):
 *              every worker fails, the world still in step (a barrier
 *              passes), with the blocking and the overlapped reductions.
 *   augment DIR
 *              trainnet "parallel" against "auto" on an augmented datastore
 *              over DIR (copies of one image, told apart by their random
 *              transforms only): the losses within 1e-5, each image
 *              transformed as in one process.
 *   combos     trainnet "parallel" against "auto" with features rarely
 *              combined with it: learn-rate schedules (piecewise, a
 *              warm-up then a drop), L2, gradient clipping (global-l2norm
 *              on the whole batch's gradients, l2norm), adam,
 *              OutputNetwork "best-validation" with ValidationPatience,
 *              MiniBatchSize 1 (workers without a share), an LSTM
 *              encoder's state outputs into a decoder's state inputs over
 *              left-padded sequences, a custom layer's state in a double
 *              network: the same iterations, output network and stop
 *              reason, the loss, the validation loss, the learnables and
 *              the state within float rounding.
 *   halved     trainnet "parallel" against "auto" on a datastore of
 *              sequences of 4 to 14 steps with class numbers at every
 *              other step, a network whose output has half the input's
 *              steps: the loss and the accuracy (a mean over the steps
 *              that hold a class) of every iteration the same within
 *              float rounding (the workers' accuracies were weighted by
 *              observations: 40.40% where one process had 40.00%).
 *   refused    (2 ranks or more) the last rank refuses its own arguments
 *              of a collective the others make (dla_spmd_combine with a
 *              weight NaN, with an error tensor; dla_spmd_combine_state
 *              with a count past the global batch; dla_spmd_broadcast_net
 *              of a network not initialized, of one without State where
 *              the others have it; dla_spmd_combine with fewer tensors
 *              on one rank, none or one fewer; dla_spmd_combine_state with counts that
 *              do not add up to the global batch, or another global batch
 *              on one rank): every rank fails with
 *              its reason, and a barrier after it passes (no rank left
 *              waiting, none a collective out of step).
 *              Then trainnet "parallel" where the last rank passes another
 *              InitialLearnRate, MiniBatchSize, number of observations or
 *              MaxEpochs: every rank fails at set-up naming that rank and
 *              the option (they trained on their own terms with DLA_OK, or
 *              hung), or whose ValidationData, read in order and counted
 *              by reading it through, fails on the last rank only (it
 *              returned while the others went on to set-up), or whose
 *              network has another learn-rate or L2 factor on the last
 *              rank (each rank trained with its own), or whose
 *              LearnRateSchedule function gives the last rank another
 *              rate from iteration 3 (each rank returned another
 *              network) or refuses there (a negative rate: the ranks'
 *              collectives went out of step until the give-up), and then
 *              trains when called alike.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlaccel.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define GLOBAL 37
#define FEATURES 8
#define CLASSES 4

static int rank, size, failures;

/* One verdict; detail (may be "") says what was measured. */
static void check(int ok, const char *what, const char *detail)
{
    if (!ok)
        failures++;
    if (rank == 0 || !ok)
        printf("%s%s%s%s (rank %d of %d)\n", ok ? "ok " : "FAIL ", what, *detail ? ": " : "",
               detail, rank, size);
}

static void die(const char *what)
{
    fprintf(stderr, "rank %d: %s: %s\n", rank, what, dla_last_error());
    exit(1);
}

/* A small host generator: every rank makes the same data. */
static unsigned long long lcg = 12345;
static double uniform(void)
{
    lcg = lcg * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(lcg >> 11) / 9007199254740992.0;
}

/* FNV-1a over the bytes of every Learnables and State value. */
static unsigned long long digest(dla_net *net)
{
    unsigned long long h = 1469598103934665603ull;
    dla_table *tables[2] = {dla_net_learnables(net), dla_net_state(net)};
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < dla_table_count(tables[k]); i++) {
            dla_tensor *v = dla_table_value(tables[k], i);
            size_t bytes = (size_t)dla_tensor_numel(v) * dla_dtype_size(dla_tensor_dtype(v));
            unsigned char *b = malloc(bytes ? bytes : 1);
            if (!b || dla_tensor_to_host(v, b, bytes) != DLA_OK)
                die("digest");
            for (size_t j = 0; j < bytes; j++)
                h = (h ^ b[j]) * 1099511628211ull;
            free(b);
        }
    return h;
}

/* 1 when every rank's digest is d. */
static int same_everywhere(unsigned long long d)
{
    double mine[2] = {(double)(d >> 32), (double)(d & 0xffffffffull)};
    dla_scope_begin();
    dla_tensor *x = dla_tensor_from_host(mine, DLA_F64, "", DLA_DIMS(2)), *all = NULL;
    if (dla_allgather(x, &all) != DLA_OK)
        die("allgather");
    double *v = malloc(sizeof *v * 2 * (size_t)size);
    if (!v || dla_tensor_to_host(all, v, sizeof *v * 2 * (size_t)size) != DLA_OK)
        die("allgather read");
    int same = 1;
    for (int r = 0; r < size; r++)
        same &= v[2 * r] == mine[0] && v[2 * r + 1] == mine[1];
    free(v);
    dla_scope_end();
    return same;
}

static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_net *net = ctx;
    dla_tensor *y;
    dla_status st = dla_net_forward(net, 1, &in[0], 1, &y, NULL, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_crossentropy(y, in[1], NULL);
    return dla_net_gradient(net, out[0], out + 1);
}

/* --------------------------------------------------------------- steps */

static float xs[FEATURES * GLOBAL], ts[CLASSES * GLOBAL];

static void make_data(void)
{
    lcg = 12345;
    for (int j = 0; j < GLOBAL; j++) {
        int c = (int)(uniform() * CLASSES);
        for (int f = 0; f < FEATURES; f++)
            xs[FEATURES * j + f] = (float)((f % CLASSES == c ? 1.5 : 0.0) + uniform() - 0.5);
        ts[CLASSES * j + c] = 1.0f;
    }
}

static dla_net *mlp(void)
{
    dla_rng_seed(3);
    dla_layer *layers[] = {dla_fc_layer(16, NULL), dla_relu_layer(NULL), dla_fc_layer(CLASSES, NULL),
                           dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(4, layers);
    dla_scope_begin();
    dla_tensor *example = dla_zeros(DLA_F32, "CB", DLA_DIMS(FEATURES, 1));
    if (!net || dla_net_init(net, 1, &example) != DLA_OK)
        die("network");
    dla_scope_end();
    return net;
}

/* 30 SGDM steps on observations [first, first + count) of the global
 * batch; combined across the ranks when parallel. Returns the final
 * digest; *same is cleared when a step's digest differs among ranks. */
static unsigned long long train(dla_net *net, int parallel, int64_t first, int64_t count, int *same)
{
    int nl = dla_net_learnable_count(net);
    dla_tensor *vel[8] = {0}, *out[9];
    double weight = (double)count / GLOBAL;
    for (int step = 0; step < 30; step++) {
        dla_scope_begin();
        dla_tensor *x = dla_tensor_from_host(xs + FEATURES * first, DLA_F32, "CB",
                                             DLA_DIMS(FEATURES, count ? count : 1));
        dla_tensor *t = dla_tensor_from_host(ts + CLASSES * first, DLA_F32, "CB",
                                             DLA_DIMS(CLASSES, count ? count : 1));
        dla_tensor **grads = out + 1;
        if (count) {
            if (dla_feval(model_loss, net, 2, (dla_tensor *[]){x, t}, 1 + nl, out) != DLA_OK)
                die("feval");
        } else {
            /* A worker without observations: weight 0, the learnables give
             * the shapes. */
            for (int i = 0; i < nl; i++)
                grads[i] = dla_table_value(dla_net_learnables(net), i);
        }
        if (parallel && dla_spmd_combine(nl, grads, weight, grads) != DLA_OK)
            die("dla_spmd_combine");
        if (dla_sgdmupdate(nl, dla_table_values(dla_net_learnables(net)), grads, vel, 0.1, 0.9) !=
            DLA_OK)
            die("sgdm");
        dla_scope_end();
        if (parallel && !same_everywhere(digest(net)))
            *same = 0;
    }
    dla_optim_free(nl, vel);
    return digest(net);
}

static void host_weights(dla_net *net, double *w, int64_t *n)
{
    *n = 0;
    dla_table *lt = dla_net_learnables(net);
    for (int i = 0; i < dla_table_count(lt); i++) {
        dla_tensor *v = dla_table_value(lt, i);
        int64_t k = dla_tensor_numel(v);
        dla_scope_begin();
        if (dla_tensor_to_host(dla_cast(v, DLA_F64), w + *n, sizeof *w * (size_t)k) != DLA_OK)
            die("weights");
        dla_scope_end();
        *n += k;
    }
}

static void mode_steps(void)
{
    make_data();
    int64_t shares[64], first = 0;
    if (size > 64 || dla_spmd_shares(GLOBAL, size, shares) != DLA_OK)
        die("shares");
    for (int r = 0; r < rank; r++)
        first += shares[r];
    dla_net *init = mlp();
    /* The reference: one worker, the whole batch, no collective. */
    dla_net *one = dla_net_copy(init);
    int ignored = 1;
    train(one, 0, 0, GLOBAL, &ignored);
    /* N workers; twice, for the bits. */
    int same = 1;
    dla_net *a = dla_net_copy(init), *b = dla_net_copy(init);
    if (dla_spmd_broadcast_net(a, 0) != DLA_OK || dla_spmd_broadcast_net(b, 0) != DLA_OK)
        die("broadcast");
    unsigned long long da = train(a, 1, first, shares[rank], &same);
    unsigned long long db = train(b, 1, first, shares[rank], &same);
    static double w1[4096], wn[4096];
    int64_t n1, nn;
    host_weights(one, w1, &n1);
    host_weights(a, wn, &nn);
    double worst = 0;
    for (int64_t i = 0; i < n1 && i < nn; i++) {
        double bound = 1e-5 * fmax(1.0, fabs(w1[i]));
        worst = tu_worse(worst, fabs(wn[i] - w1[i]) / bound);
    }
    char detail[128];
    snprintf(detail, sizeof detail, "max |w_N - w_1| / (1e-5 max(1, |w|)) = %.3g (limit 1)", worst);
    check(n1 == nn && worst <= 1.0, "N workers against 1", detail);
    check(same, "the same bits on every rank after every step", "");
    check(da == db, "two identical runs give identical bits", "");
    dla_net_free(init);
    dla_net_free(one);
    dla_net_free(a);
    dla_net_free(b);
}

/* ------------------------------------------------------------------ bn */

/* Variants: decay 1 (the state is the batch's own statistics) and the
 * default 0.1, each in double (the formula, limit 1e-6) and in single
 * (the same with single-precision statistics per worker and for the
 * reference, limit 1e-5: a few ulps of each). */
static void mode_bn(void)
{
    for (int variant = 0; variant < 4; variant++) {
        double decay = variant % 2 == 0 ? 1.0 : 0.0; /* 0: the default 0.1 */
        int dbl = variant < 2;
        double limit = dbl ? 1e-6 : 1e-5;
        dla_rng_seed(5);
        dla_layer *layers[] = {
            dla_conv2d_layer(3, 3, 4, NULL),
            dla_batchnorm_layer(&(dla_batchnorm_layer_options){.mean_decay = decay,
                                                               .variance_decay = decay}),
            dla_relu_layer(NULL), dla_fc_layer(3, NULL)};
        dla_net *net = dla_net_create(4, layers);
        enum { H = 6, W = 6, C = 2 };
        static float img[H * W * C * GLOBAL];
        lcg = 777;
        /* A trend along the batch, so that the workers' means differ and a
         * plain weighted average of their variances is visibly wrong. */
        for (int j = 0; j < GLOBAL; j++)
            for (int e = 0; e < H * W * C; e++)
                img[H * W * C * j + e] = (float)(3.0 + 0.1 * j + 2.0 * (uniform() - 0.5));
        dla_scope_begin();
        dla_tensor *all = dla_tensor_from_host(img, DLA_F32, "SSCB", DLA_DIMS(H, W, C, GLOBAL));
        if (dbl)
            all = dla_cast(all, DLA_F64);
        dla_tensor *ex = dla_slice(all, 4, 0, 1, 1);
        if (!net || dla_net_init(net, 1, &ex) != DLA_OK || (dbl && dla_net_cast(net, DLA_F64) != DLA_OK))
            die("bn network");
        if (dla_spmd_broadcast_net(net, 0) != DLA_OK)
            die("broadcast");
        /* Start from a state that is not the initial one. */
        dla_tensor *y, *st0[2], *whole[2], *part[2], *comb[2];
        if (dla_net_forward(net, 1, &all, 1, &y, st0, NULL) != DLA_OK ||
            dla_net_set_state(net, 2, st0) != DLA_OK)
            die("bn forward");
        int64_t shares[64], first = 0;
        if (size > 64 || dla_spmd_shares(GLOBAL, size, shares) != DLA_OK)
            die("shares");
        for (int r = 0; r < rank; r++)
            first += shares[r];
        dla_tensor *mine = shares[rank] ? dla_slice(all, 4, first, 1, first + shares[rank]) : ex;
        if (dla_net_forward(net, 1, &all, 1, &y, whole, NULL) != DLA_OK ||
            dla_net_forward(net, 1, &mine, 1, &y, part, NULL) != DLA_OK)
            die("bn forward");
        if (dla_spmd_combine_state(net, 2, part, shares[rank], GLOBAL, comb) != DLA_OK)
            die("dla_spmd_combine_state");
        /* The seed page's aggregateState: gplus(share * state). */
        dla_tensor *naive[2];
        if (dla_spmd_combine(2, part, (double)shares[rank] / GLOBAL, naive) != DLA_OK)
            die("naive");
        double worst[2] = {0, 0}, naive_off = 0;
        for (int k = 0; k < 2; k++)
            for (int c = 0; c < 4; c++) {
                double want = dla_tensor_item(whole[k], c), got = dla_tensor_item(comb[k], c);
                worst[k] = tu_worse(worst[k], fabs(got - want) / fmax(fabs(want), 1e-30));
                if (k == 1)
                    naive_off = tu_worse(naive_off, fabs(dla_tensor_item(naive[k], c) - want) /
                                                        fmax(fabs(want), 1e-30));
            }
        char what[128], detail[128];
        for (int k = 0; k < 2; k++) {
            snprintf(what, sizeof what, "BN %s combined, decay %s, %s", k ? "variance" : "mean",
                     variant % 2 ? "0.1" : "1", dbl ? "double" : "single");
            snprintf(detail, sizeof detail, "relative error %.3g (limit %g)", worst[k], limit);
            check(worst[k] <= limit, what, detail);
        }
        if (rank == 0 && size > 1)
            printf("# the weighted average of the variances is off by %.3g relative\n", naive_off);
        check(same_everywhere(digest(net)), "the same network on every rank", "");
        dla_scope_end();
        dla_net_free(net);
    }
}

/* --------------------------------------------------------------- state */

/* A running mean of its input's mean, as a custom layer's state. */
static dla_status avg_init(const dla_layer *l, dla_layer_init *init, int nx, dla_tensor *const *x)
{
    (void)l, (void)nx, (void)x;
    return dla_layer_add_state(init, "Avg", DLA_DIMS(1, 1), "zeros");
}

static dla_status avg_predict(dla_layer_io *io)
{
    io->y = dla_sub(io->x[0], io->state[0]);
    return dla_tensor_status(io->y);
}

static dla_status avg_forward(dla_layer_io *io)
{
    dla_tensor *mean = dla_reshape(dla_mean(io->x[0], 0, NULL), "", DLA_DIMS(1, 1));
    io->new_state[0] = dla_add(dla_affine(io->state[0], 0.5, 0), dla_affine(mean, 0.5, 0));
    io->y = dla_sub(io->x[0], io->state[0]);
    return dla_tensor_status(io->y);
}

/* A running mean of each channel over the batch, as a custom
 * normalization layer writes it: the mean over "B" of "CB" data is "CB",
 * where the row initialize declared is unformatted. */
static dla_status chan_init(const dla_layer *l, dla_layer_init *init, int nx, dla_tensor *const *x)
{
    (void)l, (void)nx;
    return dla_layer_add_state(init, "Mean", DLA_DIMS(dla_tensor_dim(x[0], 1), 1), "zeros");
}

static dla_status chan_forward(dla_layer_io *io)
{
    const int64_t along = 2;
    dla_tensor *mean = dla_mean(io->x[0], 1, &along);
    io->new_state[0] = dla_add(dla_affine(io->state[0], 0.5, 0), dla_affine(mean, 0.5, 0));
    io->y = dla_sub(io->x[0], io->state[0]);
    return dla_tensor_status(io->y);
}

/* The last rank without observations passes the network's own State, as
 * dla_spmd_combine_state allows ("net's own State will do"): unformatted,
 * where the others' forward made a "CB" row. Every rank failed, "rank 1
 * packed tensors of other sizes ... into this reduction": the combination
 * compared the rows' labels. */
static void state_of_an_empty_worker(void)
{
    static const dla_layer_type chan = {.type = "chanMean", .initialize = chan_init,
                                        .predict = avg_predict, .forward = chan_forward};
    dla_layer_type_register(&chan);
    enum { C = 3, N = 5 };
    double x[C * N];
    for (int e = 0; e < C * N; e++)
        x[e] = 0.25 * e - 1.0;
    dla_layer *layers[] = {dla_feature_input_layer(C, NULL), dla_custom_layer("chanMean", NULL, NULL),
                           dla_fc_layer(2, NULL)};
    dla_net *net = dla_net_create(3, layers);
    if (!net || dla_net_cast(net, DLA_F64) != DLA_OK || dla_spmd_broadcast_net(net, 0) != DLA_OK)
        die("empty worker: network");
    const int with = size > 1 ? size - 1 : 1; /* the workers with observations */
    int64_t shares[64], first = 0;
    if (size > 64 || dla_spmd_shares(N, with, shares) != DLA_OK)
        die("empty worker: shares");
    const int64_t count = rank < with ? shares[rank] : 0;
    for (int r = 0; r < rank && r < with; r++)
        first += shares[r];
    dla_scope_begin();
    dla_tensor *all = dla_tensor_from_host(x, DLA_F64, "CB", DLA_DIMS(C, N));
    dla_tensor *y, *whole[1], *part[1], *comb[1];
    if (dla_net_forward(net, 1, &all, 1, &y, whole, NULL) != DLA_OK)
        die("empty worker: forward");
    if (count) {
        dla_tensor *mine = dla_slice(all, 2, first, 1, first + count);
        if (dla_net_forward(net, 1, &mine, 1, &y, part, NULL) != DLA_OK)
            die("empty worker: forward of a share");
    } else {
        part[0] = dla_table_value(dla_net_state(net), 0);
    }
    dla_status st = dla_spmd_combine_state(net, 1, part, count, N, comb);
    char detail[1200] = "";
    double worst = 0;
    if (st != DLA_OK)
        snprintf(detail, sizeof detail, "status %d: %s", st, dla_last_error());
    for (int64_t c = 0; st == DLA_OK && c < C; c++)
        worst = tu_worse(worst, fabs(dla_tensor_item(comb[0], c) - dla_tensor_item(whole[0], c)));
    if (st == DLA_OK)
        snprintf(detail, sizeof detail, "largest difference %.3g (limit 1e-12)", worst);
    check(st == DLA_OK && worst <= 1e-12,
          "a custom layer's \"CB\" state with the last worker passing the network's own", detail);
    /* Passing a row labelled as the others' (a trainnet worker with an
     * empty share passes the state of its forward on the batch's first
     * observation, which weighs 0), it gets the others' labels back:
     * every rank holds the same network. */
    if (!count)
        part[0] = dla_zeros(DLA_F64, "CB", DLA_DIMS(C, 1));
    st = dla_spmd_combine_state(net, 1, part, count, N, comb);
    snprintf(detail, sizeof detail, "status %d, format \"%s\"", st,
             st == DLA_OK ? dla_tensor_format(comb[0]) : dla_last_error());
    check(st == DLA_OK && !strcmp(dla_tensor_format(comb[0]), "CB"),
          "  and passing a \"CB\" row, the combined row is \"CB\" on every rank", detail);
    dla_scope_end();
    dla_net_free(net);
}

/* The hidden (and cell) states of recurrent layers are a column per
 * observation of the worker's own share: each worker keeps its own, as
 * the whole batch's state is the workers' columns side by side. With one
 * observation a worker (a global mini-batch of as many observations as
 * workers, or a smaller last one), every worker's H x 1 state had the
 * dims of the network's own row and was combined: each got the
 * share-weighted average of all the workers' states, the next chunk of a
 * SequenceLength started from it, and the ranks' states were not the
 * whole batch's. A GRU and an LSTM after it (three rows). */
static void recurrent_state_stays_each_workers(void)
{
    enum { C = 2, T = 5, H = 3 };
    const int n = size; /* one observation a worker */
    double *x = malloc(sizeof *x * (size_t)(C * n * T));
    if (!x)
        die("recurrent state: memory");
    lcg = 7;
    for (int e = 0; e < C * n * T; e++)
        x[e] = 2.0 * uniform() - 1.0;
    dla_rng_seed(3);
    dla_layer *layers[] = {dla_gru_layer(H, &(dla_gru_layer_options){.name = "g"}),
                           dla_lstm_layer(H, &(dla_lstm_layer_options){.name = "l"})};
    dla_net *net = dla_net_create(2, layers);
    dla_scope_begin();
    dla_tensor *all = dla_tensor_from_host(x, DLA_F64, "CBT", DLA_DIMS(C, n, T));
    if (!net || dla_net_init(net, 1, &all) != DLA_OK || dla_net_cast(net, DLA_F64) != DLA_OK ||
        dla_spmd_broadcast_net(net, 0) != DLA_OK)
        die("recurrent state: network");
    if (dla_net_state_count(net) != 3)
        die("recurrent state: rows");
    dla_tensor *mine = dla_slice(all, 2, rank, 1, rank + 1);
    dla_tensor *y, *whole[3], *part[3], *comb[3];
    if (dla_net_forward(net, 1, &all, 1, &y, whole, NULL) != DLA_OK ||
        dla_net_forward(net, 1, &mine, 1, &y, part, NULL) != DLA_OK)
        die("recurrent state: forward");
    dla_status st = dla_spmd_combine_state_seq(net, 3, part, 1, n, T, comb);
    static const char *const rows[] = {"the GRU's hidden state", "the LSTM's hidden state",
                                       "the LSTM's cell state"};
    for (int k = 0; k < 3; k++) {
        double worst = st == DLA_OK ? 0 : INFINITY;
        for (int64_t u = 0; st == DLA_OK && u < H; u++)
            worst = tu_worse(worst, fabs(dla_tensor_item(comb[k], u) -
                                         dla_tensor_item(whole[k], u + H * rank)));
        char what[128], detail[128];
        snprintf(what, sizeof what, "%s with one observation a worker is the worker's own column",
                 rows[k]);
        snprintf(detail, sizeof detail, "largest difference %.3g (limit 1e-12)", worst);
        check(worst <= 1e-12 && st == DLA_OK && dla_tensor_dim(comb[k], 2) == 1, what, detail);
    }
    dla_scope_end();
    dla_net_free(net);
    free(x);
}

/* State combined against one forward over the whole batch, where it was
 * wrong: batch normalization of sequences (the unbiased variance counted
 * the network's initial length, 1, not the batch's 7 steps: 4% off with 2
 * workers), and a custom layer's state (each worker kept its own: the
 * ranks ended with different networks). */
static void mode_state(void)
{
    static const dla_layer_type avg = {.type = "avgState", .initialize = avg_init,
                                       .predict = avg_predict, .forward = avg_forward};
    dla_layer_type_register(&avg);
    enum { C = 3, T = 7 };
    static float seq[C * GLOBAL * T];
    lcg = 99;
    for (int e = 0; e < C * GLOBAL * T; e++) /* a trend along the batch, as in mode_bn */
        seq[e] = (float)(1.0 + 0.05 * ((e / C) % GLOBAL) + 2.0 * (uniform() - 0.5));
    dla_rng_seed(6);
    dla_layer *layers[] = {dla_custom_layer("avgState", NULL, NULL), dla_fc_layer(4, NULL),
                           dla_batchnorm_layer(NULL), dla_fc_layer(2, NULL)};
    dla_net *net = dla_net_create(4, layers);
    dla_scope_begin();
    dla_tensor *all = dla_cast(dla_tensor_from_host(seq, DLA_F32, "CBT", DLA_DIMS(C, GLOBAL, T)),
                               DLA_F64);
    /* Initialized on one step of one sequence, as a sequence input layer
     * of MinLength 1 would: the layers' T is 1 until a batch comes. */
    dla_tensor *ex = dla_slice(dla_slice(all, 2, 0, 1, 1), 3, 0, 1, 1);
    if (!net || dla_net_init(net, 1, &ex) != DLA_OK || dla_net_cast(net, DLA_F64) != DLA_OK ||
        dla_spmd_broadcast_net(net, 0) != DLA_OK)
        die("state network");
    int ns = dla_net_state_count(net);
    if (ns != 3)
        die("state rows");
    int64_t shares[64], first = 0;
    if (size > 64 || dla_spmd_shares(GLOBAL, size, shares) != DLA_OK)
        die("shares");
    for (int r = 0; r < rank; r++)
        first += shares[r];
    dla_tensor *mine = shares[rank] ? dla_slice(all, 2, first, 1, first + shares[rank])
                                    : dla_slice(all, 2, 0, 1, 1);
    dla_tensor *y, *whole[3], *part[3], *comb[3];
    if (dla_net_forward(net, 1, &all, 1, &y, whole, NULL) != DLA_OK ||
        dla_net_forward(net, 1, &mine, 1, &y, part, NULL) != DLA_OK)
        die("state forward");
    if (dla_spmd_combine_state_seq(net, ns, part, shares[rank], GLOBAL, T, comb) != DLA_OK)
        die("dla_spmd_combine_state_seq");
    static const char *const rows[] = {"the custom layer's state", "BN mean", "BN variance"};
    for (int k = 0; k < 3; k++) {
        double worst = 0;
        for (int64_t c = 0; c < dla_tensor_numel(whole[k]); c++) {
            double want = dla_tensor_item(whole[k], c), got = dla_tensor_item(comb[k], c);
            worst = tu_worse(worst, fabs(got - want) / fmax(fabs(want), 1e-30));
        }
        char detail[128];
        snprintf(detail, sizeof detail, "relative error %.3g (limit 1e-9)", worst);
        check(worst <= 1e-9, rows[k], detail);
    }
    dla_scope_end();
    dla_net_free(net);
    state_of_an_empty_worker();
    recurrent_state_stays_each_workers();
}

/* ------------------------------------------------------------- trainnet */

static dla_net *cnn(void)
{
    dla_rng_seed(11);
    dla_layer *layers[] = {
        dla_image_input_layer(6, 6, 1, NULL),
        dla_conv2d_layer(3, 3, 4, NULL), dla_batchnorm_layer(NULL), dla_relu_layer(NULL),
        dla_fc_layer(3, NULL), dla_softmax_layer(NULL)};
    return dla_net_create(6, layers);
}

static int run_trainnet(dla_net *net, const char *dir, int epochs, dla_net **trained)
{
    enum { N = 23 };
    static float img[36 * N];
    static int32_t lab[N];
    lcg = 99;
    for (int j = 0; j < N; j++) {
        lab[j] = (int32_t)(uniform() * 3);
        for (int e = 0; e < 36; e++)
            img[36 * j + e] = (float)((e % 3 == lab[j] ? 1.0 : 0.0) + 0.3 * uniform());
    }
    dla_scope_begin();
    dla_train_data data = {
        .predictors = dla_tensor_from_host(img, DLA_F32, "SSCB", DLA_DIMS(6, 6, 1, N)),
        .targets = dla_tensor_from_host(lab, DLA_I32, "", DLA_DIMS(1, N))};
    /* 23 observations, a global mini-batch of 5 shared 3 + 2, 2 + 2 + 1,
     * 2 + 1 + 1 + 1, the last (3 observations) 2 + 1, 1 + 1 + 1 and
     * 1 + 1 + 1 + 0 (the fourth worker without a share). */
    dla_training_options o = {.max_epochs = epochs, .mini_batch_size = 5, .initial_learn_rate = 0.05,
                              .execution_environment = "parallel", .verbose_frequency = 1,
                              .metrics = "accuracy", .shuffle = "every-epoch",
                              .checkpoint_path = dir, .output = stdout};
    dla_training_info *info = NULL;
    dla_status st = dla_trainnet(&data, net, &(dla_train_loss){.name = "crossentropy"}, &o, trained,
                                 &info);
    dla_scope_end();
    if (st != DLA_OK)
        die("dla_trainnet");
    int iterations = (int)info->iterations;
    dla_training_info_free(info);
    return iterations;
}

static void mode_trainnet(const char *dir, int epochs)
{
    dla_net *net = cnn(), *trained = NULL;
    int it = run_trainnet(net, dir, epochs, &trained);
    char detail[64];
    snprintf(detail, sizeof detail, "%d iterations", it);
    check(it > 0, "trainnet in parallel ends on every rank", detail);
    check(same_everywhere(digest(trained)), "trainnet: the same network on every rank", "");
    dla_net_free(trained);
    dla_net_free(net);
}

static void mode_resume(const char *dir)
{
    char best[4096] = "";
    long best_it = -1;
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d))) {
        long it;
        if (sscanf(e->d_name, "net_checkpoint__%ld__", &it) == 1 && it > best_it) {
            best_it = it;
            snprintf(best, sizeof best, "%s/%s", dir, e->d_name);
        }
    }
    if (d)
        closedir(d);
    if (best_it < 0) {
        fprintf(stderr, "rank %d: no checkpoint in %s\n", rank, dir);
        exit(1);
    }
    dla_net *net = NULL, *trained = NULL;
    if (dla_net_load(best, &net) != DLA_OK)
        die("dla_net_load");
    int it = run_trainnet(net, dir, 1, &trained);
    char detail[64];
    snprintf(detail, sizeof detail, "%d iterations", it);
    check(it > 0, "resumed from a checkpoint with another number of workers", detail);
    check(same_everywhere(digest(trained)), "resumed: the same network on every rank", "");
    dla_net_free(trained);
    dla_net_free(net);
}

/* ------------------------------------------------------------- overlap */

static int fail_rank = -1, fail_at = 0, loss_calls;

static dla_status ce_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    if (rank == fail_rank && ++loss_calls == fail_at)
        return dla_set_error(DLA_ERR_STATE, "parallel_train_check: this rank's loss fails");
    out[0] = dla_crossentropy(in[0], in[1], NULL);
    return dla_tensor_status(out[0]);
}

/* trainnet "parallel" from a copy of init, with DLACCEL_OVERLAP=overlap;
 * rank 0's output (the Worker lines) into text. loss: 0 built in, 1 a
 * function, 2 that function accelerated. */
static dla_status overlap_run(dla_net *init, const char *overlap, int loss, dla_net **trained,
                              char *text, size_t size)
{
    enum { N = 41 };
    static float img[36 * N];
    static int32_t lab[N];
    lcg = 4242;
    for (int j = 0; j < N; j++) {
        lab[j] = (int32_t)(uniform() * 3);
        for (int e = 0; e < 36; e++)
            img[36 * j + e] = (float)((e % 3 == lab[j] ? 1.0 : 0.0) + 0.3 * uniform());
    }
    setenv("DLACCEL_OVERLAP", overlap, 1);
    dla_net *net = dla_net_copy(init);
    dla_scope_begin();
    dla_train_data data = {
        .predictors = dla_tensor_from_host(img, DLA_F32, "SSCB", DLA_DIMS(6, 6, 1, N)),
        .targets = dla_tensor_from_host(lab, DLA_I32, "", DLA_DIMS(1, N))};
    FILE *out = fmemopen(text, size, "w");
    dla_training_options o = {.max_epochs = 2, .mini_batch_size = 7, .initial_learn_rate = 0.05,
                              .execution_environment = "parallel", .verbose_frequency = 100,
                              .shuffle = "every-epoch", .output = out};
    dla_accel *af = loss == 2 ? dla_accelerate(ce_loss, NULL) : NULL;
    dla_train_loss l = loss == 0 ? (dla_train_loss){.name = "crossentropy"}
                       : loss == 1 ? (dla_train_loss){.fn = ce_loss}
                                   : (dla_train_loss){.accel = af};
    dla_training_info *info = NULL;
    dla_status st = dla_trainnet(&data, net, &l, &o, trained, &info);
    static char why[1024];
    snprintf(why, sizeof why, "%s", st != DLA_OK ? dla_last_error() : "");
    dla_training_info_free(info);
    dla_accel_free(af);
    fclose(out);
    text[size - 1] = '\0';
    dla_scope_end();
    dla_net_free(net);
    if (st != DLA_OK)
        dla_set_error(st, "%s", why);
    return st;
}

static void learnables(dla_net *net, double *w, int64_t *n)
{
    host_weights(net, w, n);
}

/* The buckets started during the backward, from the Worker line of rank 0
 * ("... reductions overlapped (24 of 30 buckets started during the
 * backward) ..."); -1 when the line says the reductions were not
 * overlapped. */
static long started_during(const char *text)
{
    const char *p = strstr(text, "Worker 0:");
    const char *q = p ? strstr(p, "reductions overlapped (") : NULL;
    return q ? strtol(q + strlen("reductions overlapped ("), NULL, 10) : -1;
}

static void mode_overlap(void)
{
    dla_net *init = cnn();
    dla_scope_begin();
    dla_tensor *ex = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(6, 6, 1, 1));
    if (dla_net_init(init, 1, &ex) != DLA_OK || dla_spmd_broadcast_net(init, 0) != DLA_OK)
        die("overlap network");
    dla_scope_end();
    static char text0[1 << 16], text1[1 << 16];
    static double w0[4096], w1[4096];
    int64_t n0 = 0, n1 = 0;
    for (int loss = 0; loss < 3; loss++) {
        dla_net *blocking = NULL, *overlapped = NULL;
        if (overlap_run(init, "0", loss, &blocking, text0, sizeof text0) != DLA_OK ||
            overlap_run(init, "1", loss, &overlapped, text1, sizeof text1) != DLA_OK)
            die("trainnet");
        learnables(blocking, w0, &n0);
        learnables(overlapped, w1, &n1);
        double worst = 0;
        int64_t differ = 0;
        for (int64_t i = 0; i < n0 && i < n1; i++) {
            worst = tu_worse(worst, fabs(w1[i] - w0[i]) / fmax(1.0, fabs(w0[i])));
            differ += memcmp(&w0[i], &w1[i], sizeof w0[i]) != 0;
        }
        unsigned long long d0 = digest(blocking), d1 = digest(overlapped);
        static const char *const losses[] = {"built-in loss", "loss function",
                                             "accelerated loss function"};
        char what[160], detail[160];
        snprintf(what, sizeof what, "overlapped reductions against blocking ones (%s)", losses[loss]);
        snprintf(detail, sizeof detail, "%lld of %lld weights differ, by %.3g relative at most%s",
                 (long long)differ, (long long)n0, worst,
                 size <= 2 ? " (the same bits required)" : " (limit 1e-5)");
        check(n0 == n1 && n0 > 0 && (size <= 2 ? d0 == d1 : worst <= 1e-5), what, detail);
        snprintf(what, sizeof what, "overlapped: the same network on every rank (%s)", losses[loss]);
        check(same_everywhere(d1), what, "");
        if (rank == 0 && dla_spmd_overlaps()) {
            long early = started_during(text1);
            snprintf(what, sizeof what, "buckets started during the backward pass (%s)",
                     losses[loss]);
            snprintf(detail, sizeof detail, "%ld", early);
            check(early > 0 && started_during(text0) == -1, what, detail);
        }
        dla_net_free(blocking);
        dla_net_free(overlapped);
    }
    /* One rank's loss fails at its third call: every rank ends, with an
     * error, instead of the others waiting in their reductions. */
    fail_rank = size - 1;
    fail_at = 3;
    dla_net *none = NULL;
    dla_status st = overlap_run(init, "1", 1, &none, text1, sizeof text1);
    char detail[1200];
    snprintf(detail, sizeof detail, "status %d: %s", st, dla_last_error());
    check(st != DLA_OK && strstr(dla_last_error(), rank == fail_rank ? "this rank's loss fails"
                                                                     : "failed"),
          "a rank's failure during an overlapped step ends training on every rank", detail);
    dla_net_free(none);
    fail_rank = -1;
    dla_net_free(init);
}

/* -------------------------------------------------------------- refused */

/* After a call that one rank refused: every rank failed, the others with
 * a message that carries the refusing rank's reason (they did not wait
 * for it until the collective timeout, nor meet its next collective), and
 * the world still works: a barrier passes. */
static void refused_verdict(const char *what, dla_status st, const char *reason)
{
    char detail[1200];
    snprintf(detail, sizeof detail, "status %d: %s", st, dla_last_error());
    int named = st != DLA_OK && st != DLA_ERR_STATE && strstr(dla_last_error(), reason) != NULL;
    check(named, what, detail);
    st = dla_spmd_barrier();
    snprintf(detail, sizeof detail, "status %d: %s", st, st ? dla_last_error() : "");
    check(st == DLA_OK, "the next collective after it", detail);
}

/* The line the small regressions fit: x[j] = (0.1 j, 1 - 0.2 j), t[j] =
 * 0.5 j, for j < n; and their network, seeded alike (fc of 2 to 1). */
static void line_data(int n, float *x, float *t)
{
    for (int j = 0; j < n; j++) {
        x[2 * j] = (float)(0.1 * j);
        x[2 * j + 1] = (float)(1 - 0.2 * j);
        t[j] = (float)(0.5 * j);
    }
}

static dla_net *line_net(const char *what)
{
    dla_rng_seed(2);
    dla_layer *layers[] = {dla_feature_input_layer(2, NULL), dla_fc_layer(1, NULL)};
    dla_net *net = dla_net_create(2, layers);
    if (!net)
        die(what);
    return net;
}

/* trainnet "parallel" on 12 observations, the last rank passing lr, mbs,
 * n observations and epochs of its own where asked (last). */
static dla_status differ_train(int last, double lr, int64_t mbs, int n, int epochs)
{
    enum { N = 12 };
    float x[2 * N], t[N];
    line_data(N, x, t);
    dla_net *net = line_net("differ: the network"), *trained = NULL;
    dla_scope_begin();
    const int obs = last ? n : 10;
    dla_train_data data = {.predictors = dla_tensor_from_host(x, DLA_F32, "CB", DLA_DIMS(2, obs)),
                           .targets = dla_tensor_from_host(t, DLA_F32, "CB", DLA_DIMS(1, obs))};
    dla_training_options o = {.max_epochs = last ? epochs : 2, .mini_batch_size = last ? mbs : 4,
                              .initial_learn_rate = last ? lr : 0.01, .shuffle = "never",
                              .execution_environment = "parallel", .verbose = -1};
    dla_status st = dla_trainnet(&data, net, &(dla_train_loss){.name = "mse"}, &o, &trained, NULL);
    dla_scope_end();
    dla_net_free(trained);
    dla_net_free(net);
    return st;
}

/* The line data read in order, of a count not given, whose read of
 * observation fail_at fails (-1: none). */
typedef struct line_reader {
    float x[2 * 10], t[10];
    int at, fail_at;
} line_reader;

static dla_status line_read(void *ctx, int n, dla_tensor **out)
{
    (void)n;
    line_reader *r = ctx;
    const int i = r->at++;
    if (i == r->fail_at)
        return dla_set_error(DLA_ERR_IO, "observation %d unreadable on this rank", i);
    out[0] = dla_tensor_from_host(r->x + 2 * i, DLA_F32, "", DLA_DIMS(2, 1));
    out[1] = dla_tensor_from_host(r->t + i, DLA_F32, "", DLA_DIMS(1, 1));
    return DLA_OK;
}

static int line_hasdata(void *ctx) { return ((line_reader *)ctx)->at < 10; }
static void line_reset(void *ctx) { ((line_reader *)ctx)->at = 0; }

/* trainnet "parallel" of the line's network whose weights have another
 * learn-rate factor (l2 0) or L2 factor (l2 1) on the last rank. */
static dla_status factor_train(int last, int l2)
{
    enum { N = 10 };
    float x[2 * N], t[N];
    line_data(N, x, t);
    dla_net *net = line_net("factor: the network"), *trained = NULL;
    dla_scope_begin();
    dla_tensor *example = dla_zeros(DLA_F32, "CB", DLA_DIMS(2, 1));
    if (dla_net_init(net, 1, &example) != DLA_OK)
        die("factor: init");
    const char *fc = dla_table_layer(dla_net_learnables(net), 0);
    if (last && (l2 ? dla_net_set_l2_factor(net, fc, "Weights", 50)
                    : dla_net_set_learn_rate_factor(net, fc, "Weights", 0)) != DLA_OK)
        die("factor: the factor");
    dla_train_data data = {.predictors = dla_tensor_from_host(x, DLA_F32, "CB", DLA_DIMS(2, N)),
                           .targets = dla_tensor_from_host(t, DLA_F32, "CB", DLA_DIMS(1, N))};
    dla_training_options o = {.max_epochs = 2, .mini_batch_size = 4, .shuffle = "never",
                              .execution_environment = "parallel", .verbose = -1,
                              .l2_regularization = 0.01};
    dla_status st = dla_trainnet(&data, net, &(dla_train_loss){.name = "mse"}, &o, &trained, NULL);
    dla_scope_end();
    dla_net_free(trained);
    dla_net_free(net);
    return st;
}

/* A LearnRateSchedule function that answers otherwise on the last rank
 * from iteration 3 (ctx: the answer there, a rate or -1, refused). */
static double rank_rate(void *ctx, double initial, int epoch, int iteration)
{
    (void)epoch;
    return rank == size - 1 && iteration >= 3 ? *(const double *)ctx : initial;
}

static dla_status schedule_train(double there)
{
    enum { N = 10 };
    float x[2 * N], t[N];
    line_data(N, x, t);
    dla_net *net = line_net("schedule: the network"), *trained = NULL;
    dla_scope_begin();
    dla_train_data data = {.predictors = dla_tensor_from_host(x, DLA_F32, "CB", DLA_DIMS(2, N)),
                           .targets = dla_tensor_from_host(t, DLA_F32, "CB", DLA_DIMS(1, N))};
    dla_training_options o = {.max_epochs = 2, .mini_batch_size = 4, .shuffle = "never",
                              .execution_environment = "parallel", .verbose = -1,
                              .initial_learn_rate = 0.01,
                              .learn_rate_schedule = {.method = "custom", .fn = rank_rate,
                                                      .fn_ctx = &there}};
    dla_status st = dla_trainnet(&data, net, &(dla_train_loss){.name = "mse"}, &o, &trained, NULL);
    dla_scope_end();
    dla_net_free(trained);
    dla_net_free(net);
    return st;
}

/* trainnet "parallel" whose ValidationData, read in order and counted by
 * reading it through, fails on the last rank only (fail_at): every rank
 * fails naming it (that rank returned at once, the others went on into
 * set-up's collectives). */
static dla_status count_fails_on_one_rank(int last)
{
    enum { N = 12 };
    float x[2 * N], t[N];
    line_data(N, x, t);
    line_reader r = {.fail_at = last ? 6 : -1};
    memcpy(r.x, x, sizeof r.x);
    memcpy(r.t, t, sizeof r.t);
    dla_datastore *vds;
    if (dla_custom_datastore_create(
            &(dla_custom_datastore){.num_outputs = 2, .num_observations = -1, .read = line_read,
                                    .hasdata = line_hasdata, .reset = line_reset, .ctx = &r},
            &vds) != DLA_OK)
        die("count: datastore");
    dla_net *net = line_net("count: the network"), *trained = NULL;
    dla_scope_begin();
    dla_train_data data = {.predictors = dla_tensor_from_host(x, DLA_F32, "CB", DLA_DIMS(2, 10)),
                           .targets = dla_tensor_from_host(t, DLA_F32, "CB", DLA_DIMS(1, 10))},
                   val = {.datastore = vds};
    dla_training_options o = {.max_epochs = 2, .mini_batch_size = 4, .shuffle = "never",
                              .execution_environment = "parallel", .verbose = -1,
                              .validation_data = &val};
    dla_status st = dla_trainnet(&data, net, &(dla_train_loss){.name = "mse"}, &o, &trained, NULL);
    dla_scope_end();
    dla_net_free(trained);
    dla_net_free(net);
    dla_datastore_free(vds);
    return st;
}

static void mode_refused(void)
{
    if (size < 2)
        die("refused: needs 2 ranks or more");
    dla_net *net = mlp();
    int nl = dla_net_learnable_count(net);
    dla_tensor **lv = dla_table_values(dla_net_learnables(net)), *out[8];
    const int last = rank == size - 1 && size > 1;
    dla_scope_begin();
    /* A weight that is not a share (a 0 / 0 of an empty part). */
    dla_status st = dla_spmd_combine(nl, lv, last ? NAN : 0.5, out);
    refused_verdict("dla_spmd_combine with one rank's weight NaN", st, "weight nan");
    /* A gradient that failed on one rank. */
    dla_tensor *x[8];
    for (int i = 0; i < nl; i++)
        x[i] = lv[i];
    if (last)
        x[1] = dla_error_tensor(DLA_ERR_DEVICE, "this rank's gradient failed");
    st = dla_spmd_combine(nl, x, 0.5, out);
    refused_verdict("dla_spmd_combine with one rank's gradient an error tensor", st,
                    "this rank's gradient failed");
    /* Two tensors of other sizes in another order on one rank: the
     * bucket they make has the same size on every rank, which was all the
     * reduction compared, and each rank's gradients were summed into the
     * others' other tensor in silence. */
    dla_tensor *swapped[2] = {last ? lv[1] : lv[0], last ? lv[0] : lv[1]};
    if (dla_tensor_numel(lv[0]) == dla_tensor_numel(lv[1]))
        die("refused: the first two learnables have one size");
    st = dla_spmd_combine(2, swapped, 0.5, out);
    refused_verdict("dla_spmd_combine with one rank's tensors in another order", st,
                    "in another order than rank 0 into this reduction");
    /* Fewer tensors on one rank: with none it made no reduction and
     * returned DLA_OK while the others waited in their first bucket; with
     * one fewer (each tensor its own bucket) it left the others in their
     * last bucket alone. */
    st = dla_spmd_combine(last ? 0 : nl, lv, 0.5, out);
    refused_verdict("dla_spmd_combine with no tensors on one rank", st,
                    "passed another number of tensors to the call");
    setenv("DLACCEL_BUCKET_MIB", "0.000001", 1);
    st = dla_spmd_combine(last ? nl - 1 : nl, lv, 0.5, out);
    unsetenv("DLACCEL_BUCKET_MIB");
    refused_verdict("dla_spmd_combine with one tensor fewer on one rank", st,
                    "passed another number of tensors to the call");
    /* A count past the global batch on one rank (the others count 0, the
     * network's own State their rows). */
    dla_layer *layers[] = {dla_fc_layer(6, NULL), dla_batchnorm_layer(NULL),
                           dla_fc_layer(CLASSES, NULL)};
    dla_net *bn = dla_net_create(3, layers);
    dla_tensor *ex = dla_zeros(DLA_F32, "CB", DLA_DIMS(FEATURES, 2));
    if (!bn || dla_net_init(bn, 1, &ex) != DLA_OK)
        die("refused: network");
    int ns = dla_net_state_count(bn);
    dla_tensor **sv = dla_table_values(dla_net_state(bn)), *comb[4];
    st = dla_spmd_combine_state(bn, ns, sv, last ? GLOBAL + 1 : 0, GLOBAL, comb);
    refused_verdict("dla_spmd_combine_state with one rank's count past the global batch", st,
                    "count 38 of a global mini-batch of 37");
    /* Counts that do not make the global batch (each worker its nominal
     * share of a smaller batch): the means were weighted by shares
     * summing to less than one, every running mean shrunk, DLA_OK. */
    st = dla_spmd_combine_state(bn, ns, sv, 1, GLOBAL, comb);
    refused_verdict("dla_spmd_combine_state with counts that add up to less than the global batch",
                    st, "not the global mini-batch of 37");
    /* Another global batch on one rank, its count within it. */
    int64_t gshares[64];
    if (size > 64 || dla_spmd_shares(GLOBAL, size, gshares) != DLA_OK)
        die("refused: shares");
    st = dla_spmd_combine_state(bn, ns, sv, gshares[rank], last ? GLOBAL + 1 : GLOBAL, comb);
    refused_verdict("dla_spmd_combine_state with one rank's global batch its own", st,
                    "the workers passed different global mini-batches");
    /* A network not initialized on one rank. */
    dla_layer *fresh_layers[] = {dla_fc_layer(6, NULL), dla_fc_layer(CLASSES, NULL)};
    dla_net *fresh = dla_net_create(2, fresh_layers);
    if (!fresh)
        die("refused: network");
    st = dla_spmd_broadcast_net(last ? fresh : net, 0);
    refused_verdict("dla_spmd_broadcast_net of a network one rank did not initialize", st,
                    "argument net is not initialized");
    /* Learnables alike, State on all but one rank (a layer normalization
     * where the others have a batch normalization): its empty State
     * table is met too. */
    dla_layer *ln_layers[] = {dla_fc_layer(6, NULL), dla_layernorm_layer(NULL),
                              dla_fc_layer(CLASSES, NULL)};
    dla_net *ln = dla_net_create(3, ln_layers);
    if (!ln || dla_net_init(ln, 1, &ex) != DLA_OK)
        die("refused: network");
    st = dla_spmd_broadcast_net(last ? ln : bn, 0);
    refused_verdict("dla_spmd_broadcast_net of networks whose State differs on one rank", st,
                    "passed 0 tensor(s) where rank 0 passed 2");
    dla_net_free(fresh);
    dla_net_free(ln);
    dla_net_free(bn);
    dla_scope_end();
    dla_net_free(net);
    /* trainnet called otherwise on one rank: each rank trained on its own
     * terms with DLA_OK (another learning rate: another network on each;
     * another mini-batch size or data: shares of no one's mini-batch), or,
     * with another MaxEpochs, every rank failed with collectives out of
     * step and the next one hung until the give-up broke the world. */
    st = differ_train(last, 0.02, 4, 10, 2);
    refused_verdict("trainnet \"parallel\" with one rank's InitialLearnRate its own", st,
                    "InitialLearnRate 0.02 where rank 0 has 0.01");
    st = differ_train(last, 0.01, 8, 10, 2);
    refused_verdict("trainnet \"parallel\" with one rank's MiniBatchSize its own", st,
                    "MiniBatchSize 8 where rank 0 has 4");
    st = differ_train(last, 0.01, 4, 12, 2);
    refused_verdict("trainnet \"parallel\" with one rank's data its own", st,
                    "the number of training observations 12 where rank 0 has 10");
    st = differ_train(last, 0.01, 4, 10, 3);
    refused_verdict("trainnet \"parallel\" with one rank's MaxEpochs its own", st,
                    "MaxEpochs 3 where rank 0 has 2");
    /* Agreed as the options are: the others name the rank that failed
     * (its message stays there), so refused_verdict's test of the reason
     * carried does not apply. */
    char failed[64], detail[1200];
    snprintf(failed, sizeof failed, "rank %d failed", size - 1);
    st = count_fails_on_one_rank(last);
    snprintf(detail, sizeof detail, "status %d: %s", st, dla_last_error());
    check(st != DLA_OK &&
              strstr(dla_last_error(), last ? "observation 6 unreadable on this rank" : failed),
          "trainnet \"parallel\" whose ValidationData fails to be counted on one rank", detail);
    st = dla_spmd_barrier();
    snprintf(detail, sizeof detail, "status %d: %s", st, st ? dla_last_error() : "");
    check(st == DLA_OK, "the next collective after it", detail);
    /* DLACCEL_OVERLAP=0 on one rank: its steps make other collectives. */
    if (dla_spmd_overlaps()) {
        if (last)
            setenv("DLACCEL_OVERLAP", "0", 1);
        st = differ_train(last, 0.01, 4, 10, 2);
        if (last)
            unsetenv("DLACCEL_OVERLAP");
        refused_verdict("trainnet \"parallel\" with DLACCEL_OVERLAP=0 on one rank", st,
                        "overlapped reductions (DLACCEL_OVERLAP) 0 where rank 0 has 1");
    }
    /* A network whose factors differ on one rank: rank 0's learnables
     * are broadcast, but each rank updated with its own factors and
     * returned another network, with DLA_OK. */
    st = factor_train(last, 0);
    refused_verdict("trainnet \"parallel\" with a learn-rate factor of one rank's own", st,
                    "another learn-rate factor of a learnable");
    st = factor_train(last, 1);
    refused_verdict("trainnet \"parallel\" with an L2 factor of one rank's own", st,
                    "another L2 factor of a learnable");
    /* A schedule function whose rate is the last rank's own from
     * iteration 3: each rank updated with its own rate and returned
     * another network, with DLA_OK; and its refusal on that rank alone
     * (a negative rate) left the ranks' collectives out of step, the
     * others waiting until the give-up. Both step paths. */
    for (int ov = 0; ov < 2; ov++) {
        if (!ov)
            setenv("DLACCEL_OVERLAP", "0", 1);
        st = schedule_train(0.02);
        refused_verdict(ov ? "trainnet \"parallel\" with a schedule function of one rank's own "
                             "rate (overlapped reductions)"
                           : "trainnet \"parallel\" with a schedule function of one rank's own "
                             "rate (DLACCEL_OVERLAP=0)",
                        st, "LearnRateSchedule gave the learning rate 0.02 where rank 0's gave 0.01");
        st = schedule_train(-1);
        snprintf(detail, sizeof detail, "status %d: %s", st, dla_last_error());
        check(st != DLA_OK &&
                  strstr(dla_last_error(), last ? "the schedule function gave -1" : failed),
              ov ? "trainnet \"parallel\" whose schedule function refuses on one rank "
                   "(overlapped reductions)"
                 : "trainnet \"parallel\" whose schedule function refuses on one rank "
                   "(DLACCEL_OVERLAP=0)",
              detail);
        st = dla_spmd_barrier();
        snprintf(detail, sizeof detail, "status %d: %s", st, st ? dla_last_error() : "");
        check(st == DLA_OK, "  the next collective after it", detail);
        unsetenv("DLACCEL_OVERLAP");
    }
    st = differ_train(last, 0.01, 4, 10, 2);
    snprintf(detail, sizeof detail, "status %d: %s", st, st ? dla_last_error() : "");
    check(st == DLA_OK, "  and then trainnet called alike trains", detail);
}

/* The device each rank trains on under "parallel", one line a rank (the
 * script reads them). */
static void mode_device(void)
{
    dla_device *d = NULL;
    if (dla_training_device("parallel", &d) != DLA_OK) {
        printf("rank %d: parallel: %s\n", rank, dla_last_error());
        failures++;
        return;
    }
    printf("rank %d: parallel on %s\n", rank, dla_device_name(d));
}

/* trainnet on 23 observations (images, or sequences of 3 to 9 steps),
 * 3 epochs of mini-batches of mbs, validation and accuracy, with
 * ExecutionEnvironment env. With bn (BatchNormalizationStatistics), a
 * batch normalization layer and no learning: each worker normalizes with
 * its own share's statistics in training (as MATLAB's workers do, and
 * unlike one process), so only the state is compared, on a network that
 * does not change (a learning rate of 1e-20: 0 is the default). */
static dla_status global_train(const char *env, int seq, int64_t mbs, const char *partial,
                               const char *bn, dla_net **trained, dla_training_info **info)
{
    enum { N = 23, V = 7 };
    dla_rng_seed(5);
    dla_net *net;
    if (seq) {
        dla_layer *layers[] = {dla_sequence_input_layer(2, NULL),
                               dla_lstm_layer(4, &(dla_lstm_layer_options){.output_mode = "last"}),
                               dla_batchnorm_layer(NULL), dla_fc_layer(3, NULL),
                               dla_softmax_layer(NULL)};
        if (!bn)
            dla_layer_free(layers[2]);
        net = dla_net_create(bn ? 5 : 4, bn ? layers : (dla_layer *[]){layers[0], layers[1],
                                                                      layers[3], layers[4]});
    } else {
        dla_layer *layers[] = {dla_image_input_layer(6, 6, 1, NULL), dla_conv2d_layer(3, 3, 4, NULL),
                               dla_batchnorm_layer(NULL), dla_relu_layer(NULL), dla_fc_layer(3, NULL),
                               dla_softmax_layer(NULL)};
        if (!bn)
            dla_layer_free(layers[2]);
        net = dla_net_create(bn ? 6 : 5, bn ? layers : (dla_layer *[]){layers[0], layers[1],
                                                                      layers[3], layers[4],
                                                                      layers[5]});
    }
    if (!net)
        die("global: the network");
    static float img[36 * (N + V)];
    static int32_t lab[N + V];
    dla_seqlist *seqs = dla_seqlist_create(2), *vseqs = dla_seqlist_create(2);
    for (int j = 0; j < N + V; j++) {
        lab[j] = (j * 5 + j / 3) % 3;
        for (int e = 0; e < 36; e++)
            img[36 * j + e] = (float)((e % 3 == lab[j] ? 1.0 : 0.0) + 0.05 * ((j * 7 + e) % 11));
        float x[2 * 9];
        const int len = 3 + (j * 5) % 7;
        for (int k = 0; k < 2 * len; k++)
            x[k] = (float)(0.3 * lab[j] + 0.1 * ((k * 3 + j) % 5) - 0.2);
        if (dla_seqlist_append(j < N ? seqs : vseqs, x, len) != DLA_OK)
            die("global: the sequences");
    }
    dla_scope_begin();
    dla_train_data data = {.targets = dla_tensor_from_host(lab, DLA_I32, "", DLA_DIMS(1, N))};
    dla_train_data val = {.targets = dla_tensor_from_host(lab + N, DLA_I32, "", DLA_DIMS(1, V))};
    if (seq) {
        data.sequences = seqs;
        val.sequences = vseqs;
    } else {
        data.predictors = dla_tensor_from_host(img, DLA_F32, "SSCB", DLA_DIMS(6, 6, 1, N));
        val.predictors = dla_tensor_from_host(img + 36 * N, DLA_F32, "SSCB", DLA_DIMS(6, 6, 1, V));
    }
    dla_training_options o = {.max_epochs = 3, .mini_batch_size = mbs,
                              .initial_learn_rate = bn ? 1e-20 : 0.05,
                              .execution_environment = env, .verbose = -1,
                              .shuffle = "every-epoch", .partial_mini_batch = partial,
                              .metrics = "accuracy", .validation_data = &val,
                              .validation_frequency = 4, .shuffle_seed = 7,
                              .batch_normalization_statistics = bn};
    dla_status st = dla_trainnet(&data, net, &(dla_train_loss){.name = "crossentropy"}, &o,
                                 trained, info);
    dla_scope_end();
    dla_seqlist_free(seqs);
    dla_seqlist_free(vseqs);
    dla_net_free(net);
    return st;
}

/* The largest |a - b| / (1 + |b|) over n. */
static double worst(const double *a, const double *b, int64_t n)
{
    double w = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(a[i] - b[i]) / (1 + fabs(b[i]));
        w = d > w || isnan(d) ? d : w;
    }
    return w;
}

static void mode_global(void)
{
    static const struct {
        int seq;
        int64_t mbs;
        const char *partial, *bn;
    } cases[] = {{0, 5, "return", NULL},         {0, 5, "discard", NULL},
                 {0, 2, "return", NULL},         {1, 5, "return", NULL},
                 {1, 3, "return", NULL},         {0, 5, "return", "population"},
                 {0, 3, "discard", "moving"},    {1, 5, "return", "population"},
                 {1, 3, "return", "moving"}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        dla_net *na = NULL, *np = NULL;
        dla_training_info *ia = NULL, *ip = NULL;
        const char *bn = cases[c].bn;
        if (global_train("auto", cases[c].seq, cases[c].mbs, cases[c].partial, bn, &na, &ia) !=
            DLA_OK)
            die("global: auto");
        if (global_train("parallel", cases[c].seq, cases[c].mbs, cases[c].partial, bn, &np, &ip) !=
            DLA_OK)
            die("global: parallel");
        char what[200], detail[256];
        snprintf(what, sizeof what, "%s, mini-batch %lld, PartialMiniBatch \"%s\"%s%s%s: "
                 "\"parallel\" trains on \"auto\"'s mini-batches", cases[c].seq ? "sequences"
                 : "images", (long long)cases[c].mbs, cases[c].partial, bn ? ", batch norm \"" : "",
                 bn ? bn : "", bn ? "\"" : "");
        double wl = worst(ip->training_loss, ia->training_loss, ia->iterations);
        double wa = worst(ip->training_accuracy, ia->training_accuracy, ia->iterations);
        double wv = ip->validations == ia->validations
                        ? worst(ip->validation_loss, ia->validation_loss, ia->validations)
                        : INFINITY;
        double ww = 0;
        for (int k = 0; k < 2; k++) {
            dla_table *ta = k ? dla_net_state(na) : dla_net_learnables(na);
            dla_table *tp = k ? dla_net_state(np) : dla_net_learnables(np);
            for (int i = 0; i < dla_table_count(ta); i++) {
                dla_tensor *a = dla_table_value(ta, i), *b = dla_table_value(tp, i);
                int64_t n = dla_tensor_numel(a);
                double *x = malloc(sizeof *x * (size_t)n), *y = malloc(sizeof *y * (size_t)n);
                dla_scope_begin();
                if (!x || !y || dla_tensor_numel(b) != n ||
                    dla_tensor_to_host(dla_cast(a, DLA_F64), x, sizeof *x * (size_t)n) != DLA_OK ||
                    dla_tensor_to_host(dla_cast(b, DLA_F64), y, sizeof *y * (size_t)n) != DLA_OK)
                    die("global: the weights");
                dla_scope_end();
                double w = worst(y, x, n);
                ww = w > ww ? w : ww;
                free(x);
                free(y);
            }
        }
        snprintf(detail, sizeof detail, "%lld and %lld iterations; loss within %.1e, accuracy "
                 "%.1e, validation loss %.1e, learnables and state %.1e",
                 (long long)ip->iterations, (long long)ia->iterations, wl, wa, wv, ww);
        /* With batch normalization the workers' losses are their own
         * shares' (normalized by their own statistics): only the state. */
        check(ip->iterations == ia->iterations && ww < (bn ? 1e-5 : 1e-3) &&
                  (bn || (wl < 1e-4 && wa < 1e-9 && wv < 1e-4)), what, detail);
        check(same_everywhere(digest(np)), "  the same network on every rank", "");
        dla_training_info_free(ia);
        dla_training_info_free(ip);
        dla_net_free(na);
        dla_net_free(np);
    }
}

/* Sequence-to-sequence training on sequences of very different lengths
 * (1 to 12 steps), padded per mini-batch: each worker's share holds
 * another number of valid steps, and its loss and metrics are means over
 * its own. Loss "crossentropy" (one-hot targets, accuracy) or "mse"
 * (three responses, RMSE), with validation. */
static dla_status seq2seq_train(const char *env, int mse, int64_t mbs, int seqt,
                                dla_net **trained, dla_training_info **info)
{
    enum { N = 13, V = 7, T = 12, C = 3 };
    /* The targets are one C x N x T array, every mini-batch (unshuffled,
     * of 3, 4 or 5) holding a sequence of 12 steps (the even ones), the
     * others 1 to 5; or (seqt 1) target_sequences, one per observation
     * (class numbers for "crossentropy"), of 1 to 12 steps in an order
     * where most mini-batches lack one of 12; or (seqt 2) those lengths
     * with the targets as the array (a batch takes its first steps). */
    static int len[N + V];
    for (int j = 0; j < N + V; j++) {
        const int b = j < N ? j : j - N;
        len[j] = seqt ? 1 + (b * 5 + 2) % 12 : b % 2 ? 1 + (b * 3) % 5 : T;
    }
    dla_rng_seed(9);
    dla_layer *layers[] = {dla_sequence_input_layer(2, NULL), dla_lstm_layer(5, NULL),
                           dla_fc_layer(C, NULL), dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(mse ? 3 : 4, layers);
    if (mse)
        dla_layer_free(layers[3]);
    if (!net)
        die("seq2seq: the network");
    /* Targets C x B x T "CBT" of each set; steps past a sequence's end
     * hold values the mask must leave out. */
    static float tv[C * N * T], vv[C * V * T];
    dla_seqlist *seqs = dla_seqlist_create(2), *vseqs = dla_seqlist_create(2);
    dla_seqlist *tseqs = dla_seqlist_create(mse ? C : 1), *vtseqs = dla_seqlist_create(mse ? C : 1);
    for (int j = 0; j < N + V; j++) {
        float x[2 * T];
        const int n = j < N ? N : V, b = j < N ? j : j - N;
        float *t = j < N ? tv : vv;
        for (int k = 0; k < T; k++) {
            const int cls = (j + k / 2) % C;
            if (k < len[j]) {
                x[2 * k] = (float)(0.5 * cls + 0.1 * ((j + 3 * k) % 4) - 0.3);
                x[2 * k + 1] = (float)(0.2 * ((j * k) % 5) - 0.4);
            }
            for (int c = 0; c < C; c++)
                t[c + C * (b + n * k)] =
                    k < len[j] ? (mse ? (float)(0.3 * c - 0.2 * cls + 0.05 * k) : c == cls)
                               : 7.0f;
        }
        if (dla_seqlist_append(j < N ? seqs : vseqs, x, len[j]) != DLA_OK)
            die("seq2seq: the sequences");
        float ts[C * T];
        for (int k = 0; k < len[j]; k++)
            for (int c = 0; c < (mse ? C : 1); c++)
                ts[c + (mse ? C : 1) * k] = mse ? t[c + C * (b + n * k)] : (float)((j + k / 2) % C);
        if (dla_seqlist_append(j < N ? tseqs : vtseqs, ts, len[j]) != DLA_OK)
            die("seq2seq: the target sequences");
    }
    dla_scope_begin();
    dla_train_data data = {.sequences = seqs}, val = {.sequences = vseqs};
    if (seqt == 1) {
        data.target_sequences = tseqs;
        val.target_sequences = vtseqs;
    } else {
        data.targets = dla_tensor_from_host(tv, DLA_F32, "CBT", DLA_DIMS(C, N, T));
        val.targets = dla_tensor_from_host(vv, DLA_F32, "CBT", DLA_DIMS(C, V, T));
    }
    dla_training_options o = {.max_epochs = 4, .mini_batch_size = mbs, .initial_learn_rate = 0.05,
                              .execution_environment = env, .verbose = -1,
                              .shuffle = "never",
                              .metrics = mse ? "rmse" : "accuracy", .validation_data = &val,
                              .validation_frequency = 3};
    dla_status st = dla_trainnet(&data, net,
                                 &(dla_train_loss){.name = mse ? "mse" : "crossentropy"}, &o,
                                 trained, info);
    dla_scope_end();
    dla_seqlist_free(seqs);
    dla_seqlist_free(vseqs);
    dla_seqlist_free(tseqs);
    dla_seqlist_free(vtseqs);
    dla_net_free(net);
    return st;
}

/* The largest worst() over the learnables (state: the State) of two
 * networks. */
static double worst_values(dla_net *a, dla_net *b, int state)
{
    double ww = 0;
    dla_table *ta = state ? dla_net_state(a) : dla_net_learnables(a);
    dla_table *tb = state ? dla_net_state(b) : dla_net_learnables(b);
    for (int i = 0; i < dla_table_count(ta); i++) {
        dla_tensor *x = dla_table_value(ta, i), *y = dla_table_value(tb, i);
        const int64_t n = dla_tensor_numel(x);
        double *hx = malloc(sizeof *hx * (size_t)n), *hy = malloc(sizeof *hy * (size_t)n);
        dla_scope_begin();
        if (!hx || !hy || dla_tensor_numel(y) != n ||
            dla_tensor_to_host(dla_cast(x, DLA_F64), hx, sizeof *hx * (size_t)n) != DLA_OK ||
            dla_tensor_to_host(dla_cast(y, DLA_F64), hy, sizeof *hy * (size_t)n) != DLA_OK)
            die("seq2seq: the weights");
        dla_scope_end();
        double w = worst(hy, hx, n);
        ww = w > ww ? w : ww;
        free(hx);
        free(hy);
    }
    return ww;
}

static void mode_seq2seq(void)
{
    static const struct {
        int mse;
        int64_t mbs;
        const char *overlap;
        int seqt;
    } cases[] = {{0, 4, "1", 0}, {0, 5, "0", 0}, {1, 4, "0", 0}, {1, 5, "1", 0}, {0, 3, "1", 0},
                 {0, 4, "1", 1}, {1, 5, "0", 1}, {1, 4, "1", 2}, {0, 5, "0", 2}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        dla_net *na = NULL, *np = NULL;
        dla_training_info *ia = NULL, *ip = NULL;
        if (seq2seq_train("auto", cases[c].mse, cases[c].mbs, cases[c].seqt, &na, &ia) != DLA_OK)
            die("seq2seq: auto");
        setenv("DLACCEL_OVERLAP", cases[c].overlap, 1);
        if (seq2seq_train("parallel", cases[c].mse, cases[c].mbs, cases[c].seqt, &np, &ip) != DLA_OK)
            die("seq2seq: parallel");
        unsetenv("DLACCEL_OVERLAP");
        const double *ma = cases[c].mse ? ia->training_rmse : ia->training_accuracy;
        const double *mp = cases[c].mse ? ip->training_rmse : ip->training_accuracy;
        const double *va = cases[c].mse ? ia->validation_rmse : ia->validation_accuracy;
        const double *vp = cases[c].mse ? ip->validation_rmse : ip->validation_accuracy;
        const int same_n = ip->iterations == ia->iterations && ip->validations == ia->validations;
        double wl = same_n ? worst(ip->training_loss, ia->training_loss, ia->iterations) : INFINITY;
        double wm = same_n ? worst(mp, ma, ia->iterations) : INFINITY;
        double wv = same_n ? worst(ip->validation_loss, ia->validation_loss, ia->validations)
                           : INFINITY;
        double wvm = same_n ? worst(vp, va, ia->validations) : INFINITY;
        double ww = worst_values(na, np, 0);
        char what[200], detail[256];
        snprintf(what, sizeof what, "sequence-to-sequence \"%s\", sequences of 1 to 12 steps, "
                 "mini-batch %lld (overlap %s)%s: \"parallel\" gives \"auto\"'s figures",
                 cases[c].mse ? "mse" : "crossentropy", (long long)cases[c].mbs, cases[c].overlap,
                 cases[c].seqt == 1   ? ", target_sequences"
                 : cases[c].seqt == 2 ? ", batches without the longest"
                                      : "");
        snprintf(detail, sizeof detail, "%lld and %lld iterations; loss within %.1e, %s %.1e, "
                 "validation loss %.1e and %s %.1e, learnables %.1e",
                 (long long)ip->iterations, (long long)ia->iterations, wl,
                 cases[c].mse ? "RMSE" : "accuracy", wm, wv, cases[c].mse ? "RMSE" : "accuracy",
                 wvm, ww);
        check(same_n && wl < 1e-6 && wm < 1e-6 && wv < 1e-6 && wvm < 1e-6 && ww < 1e-6, what,
              detail);
        check(same_everywhere(digest(np)), "  the same network on every rank", "");
        dla_training_info_free(ia);
        dla_training_info_free(ip);
        dla_net_free(na);
        dla_net_free(np);
    }
}

/* Sequences of 2 to 11 steps read through a custom datastore (C x 1 x T
 * each, with its class) against the same sequence list, both "parallel":
 * each worker pads its share to the length of the whole batch, as a
 * list's shares are, so the two train alike, bit for bit. */
static dla_seqlist *dsseq_list, *dsseq_steps;
static int32_t dsseq_labels[19];
static int dsseq_per_step; /* the targets are class numbers per step (int32 1 x 1 x T) */

static dla_status dsseq_read_at(void *ctx, int64_t i, int n, dla_tensor **out)
{
    (void)ctx, (void)n;
    const int64_t len = dla_seqlist_length(dsseq_list, i);
    out[0] = dla_tensor_from_host(dla_seqlist_data(dsseq_list, i), DLA_F32, "",
                                  DLA_DIMS(2, 1, len));
    out[1] = dsseq_per_step
                 ? dla_cast(dla_tensor_from_host(dla_seqlist_data(dsseq_steps, i), DLA_F32, "",
                                                 DLA_DIMS(1, 1, len)),
                            DLA_I32)
                 : dla_tensor_from_host(&dsseq_labels[i], DLA_I32, "", DLA_DIMS(1, 1));
    return DLA_OK;
}

static void mode_dsseq(void)
{
    enum { N = 19 };
    dsseq_list = dla_seqlist_create(2);
    dsseq_steps = dla_seqlist_create(1);
    for (int j = 0; j < N; j++) {
        dsseq_labels[j] = (j * 5 + j / 3) % 3;
        float x[2 * 11], c[11];
        const int len = 2 + (j * 7) % 10;
        for (int k = 0; k < 2 * len; k++)
            x[k] = (float)(0.3 * dsseq_labels[j] + 0.1 * ((k * 3 + j) % 5) - 0.2);
        for (int k = 0; k < len; k++)
            c[k] = (float)((dsseq_labels[j] + k / 3) % 3);
        if (dla_seqlist_append(dsseq_list, x, len) != DLA_OK ||
            dla_seqlist_append(dsseq_steps, c, len) != DLA_OK)
            die("dsseq: the sequences");
    }
    dla_datastore *ds;
    if (dla_custom_datastore_create(&(dla_custom_datastore){.num_outputs = 2,
                                                            .num_observations = N,
                                                            .read_at = dsseq_read_at},
                                    &ds) != DLA_OK)
        die("dsseq: the datastore");
    static const char *const directions[2] = {"right", "left"};
    for (int run = 0; run < 3; run++) {
        /* Runs 0, 1: a class per observation, padded right and left; 2: a
         * class per step, padded left. */
        const int d = run > 0;
        dsseq_per_step = run == 2;
        unsigned long long h[2];
        double loss[2] = {0, 0};
        for (int from_ds = 0; from_ds < 2; from_ds++) {
            dla_rng_seed(5);
            dla_layer *layers[] = {
                dla_sequence_input_layer(2, NULL),
                dla_lstm_layer(4, &(dla_lstm_layer_options){.output_mode =
                                                                  dsseq_per_step ? NULL : "last"}),
                dla_fc_layer(3, NULL), dla_softmax_layer(NULL)};
            dla_net *net = dla_net_create(4, layers), *trained = NULL;
            dla_training_info *info = NULL;
            if (!net)
                die("dsseq: the network");
            dla_scope_begin();
            dla_train_data data = {.datastore = ds};
            if (!from_ds && dsseq_per_step)
                data = (dla_train_data){.sequences = dsseq_list, .target_sequences = dsseq_steps};
            else if (!from_ds)
                data = (dla_train_data){
                    .sequences = dsseq_list,
                    .targets = dla_tensor_from_host(dsseq_labels, DLA_I32, "", DLA_DIMS(1, N))};
            dla_training_options o = {.max_epochs = 2, .mini_batch_size = 5,
                                      .execution_environment = "parallel", .verbose = -1,
                                      .shuffle = "every-epoch", .shuffle_seed = 3,
                                      .sequence_padding_direction = directions[d]};
            if (dla_trainnet(&data, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                             &info) != DLA_OK)
                die("dsseq: trainnet");
            dla_scope_end();
            h[from_ds] = digest(trained);
            loss[from_ds] = info->training_loss[info->iterations - 1];
            dla_training_info_free(info);
            dla_net_free(trained);
            dla_net_free(net);
        }
        char what[160], detail[160];
        snprintf(what, sizeof what, "sequences of 2 to 11 steps through a datastore, a class "
                 "%s, padding \"%s\": \"parallel\" trains as over the sequence list",
                 dsseq_per_step ? "per step" : "each", directions[d]);
        snprintf(detail, sizeof detail, "last losses %.9g and %.9g", loss[1], loss[0]);
        check(h[0] == h[1], what, detail);
    }
    dla_datastore_free(ds);
    dla_seqlist_free(dsseq_list);
    dla_seqlist_free(dsseq_steps);
}

/* A NaN target in one worker's share: the loss is NaN and training stops
 * at the first iteration, as in one process, whose RMSE of that batch is
 * NaN too; on every rank, not only on the rank whose share held it. */
static dla_status nan_train(const char *env, dla_training_info **info)
{
    enum { N = 8 };
    float x[2 * N], t[N];
    line_data(N, x, t);
    t[0] = NAN;
    dla_net *net = line_net("nan: the network"), *trained = NULL;
    dla_scope_begin();
    dla_train_data data = {.predictors = dla_tensor_from_host(x, DLA_F32, "CB", DLA_DIMS(2, N)),
                           .targets = dla_tensor_from_host(t, DLA_F32, "CB", DLA_DIMS(1, N))};
    dla_training_options o = {.max_epochs = 1, .mini_batch_size = 4, .shuffle = "never",
                              .execution_environment = env, .verbose = -1, .metrics = "rmse"};
    dla_status st = dla_trainnet(&data, net, &(dla_train_loss){.name = "mse"}, &o, &trained, info);
    dla_scope_end();
    dla_net_free(trained);
    dla_net_free(net);
    return st;
}

/* An OutputFcn that asks to stop at iteration 2 on the last rank only
 * (a rank's own clock, say). */
static int stop_on_last_rank(void *ctx, const dla_training_state *s)
{
    (void)ctx;
    return rank == size - 1 && s->iteration == 2;
}

static dla_status stop_train(dla_training_info **info)
{
    enum { N = 8 };
    float x[2 * N], t[N];
    line_data(N, x, t);
    dla_net *net = line_net("stop: the network"), *trained = NULL;
    dla_scope_begin();
    dla_train_data data = {.predictors = dla_tensor_from_host(x, DLA_F32, "CB", DLA_DIMS(2, N)),
                           .targets = dla_tensor_from_host(t, DLA_F32, "CB", DLA_DIMS(1, N))};
    dla_training_options o = {.max_epochs = 3, .mini_batch_size = 4, .shuffle = "never",
                              .execution_environment = "parallel", .verbose = -1,
                              .output_fn = stop_on_last_rank};
    dla_status st = dla_trainnet(&data, net, &(dla_train_loss){.name = "mse"}, &o, &trained, info);
    dla_scope_end();
    dla_net_free(trained);
    dla_net_free(net);
    return st;
}

/* The stop's table row: 10 observations, 5 of them validated every 4
 * iterations, a row for every iteration; "auto" stops at iteration 3 by
 * its OutputFcn (ctx set: on every rank), "parallel" by the last rank's.
 * The table's rows (rank 0's, times left out) go into rows. */
static int stop_at_3(void *ctx, const dla_training_state *s)
{
    return (ctx || rank == size - 1) && s->iteration == 3;
}

static void stop_rows(const char *env, char *rows, size_t cap)
{
    enum { N = 10, V = 5 };
    float x[2 * (N + V)], t[N + V];
    line_data(N + V, x, t);
    dla_net *net = line_net("stop rows: the network"), *trained = NULL;
    FILE *f = tmpfile();
    if (!f)
        die("stop rows: tmpfile");
    dla_training_info *info = NULL;
    dla_scope_begin();
    dla_train_data data = {.predictors = dla_tensor_from_host(x, DLA_F32, "CB", DLA_DIMS(2, N)),
                           .targets = dla_tensor_from_host(t, DLA_F32, "CB", DLA_DIMS(1, N))};
    dla_train_data val = {
        .predictors = dla_tensor_from_host(x + 2 * N, DLA_F32, "CB", DLA_DIMS(2, V)),
        .targets = dla_tensor_from_host(t + N, DLA_F32, "CB", DLA_DIMS(1, V))};
    const int par = !strcmp(env, "parallel");
    dla_training_options o = {.max_epochs = 3, .mini_batch_size = 4, .shuffle = "never",
                              .execution_environment = env, .verbose = 1,
                              .verbose_frequency = 1, .output = f, .validation_data = &val,
                              .validation_frequency = 4, .initial_learn_rate = 0.01,
                              .output_fn = stop_at_3, .output_ctx = par ? NULL : f};
    if (dla_trainnet(&data, net, &(dla_train_loss){.name = "mse"}, &o, &trained, &info) != DLA_OK)
        die("stop rows: trainnet");
    dla_scope_end();
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    /* The rows, each without its Time Elapsed column (the third). */
    rewind(f);
    char line[512];
    size_t at = 0;
    rows[0] = 0;
    while (fgets(line, sizeof line, f)) {
        int bars = 0;
        if (line[0] != '|' || line[1] == '=' || !strchr("0123456789", line[strspn(line, "| ")]))
            continue;
        for (const char *c = line; *c && at + 1 < cap; c++) {
            bars += *c == '|';
            if (bars != 3 || *c == '|')
                rows[at++] = *c;
        }
        rows[at] = 0;
    }
    fclose(f);
}

static void mode_nan(void)
{
    /* Rank 0 printed the stop's row when its own OutputFcn had not asked
     * (the stop was another rank's), without the final validation's
     * figures that one process's table shows there. */
    static char rows_auto[4096], rows_par[4096];
    stop_rows("auto", rows_auto, sizeof rows_auto);
    stop_rows("parallel", rows_par, sizeof rows_par);
    if (rank == 0) {
        static char detail[8300];
        const int same = !strcmp(rows_auto, rows_par) && strlen(rows_auto) > 100;
        snprintf(detail, sizeof detail, "%s%s%s%s", same ? "" : "\n\"parallel\":\n", same ? "" : rows_par,
                 same ? "" : "\"auto\":\n", same ? "" : rows_auto);
        check(same, "the last rank's OutputFcn stop: rank 0's table is one process's (the stop's "
              "row with the final validation)", detail);
    }

    /* One rank's OutputFcn stops every rank (they agree at the end of the
     * iteration); the ranks that did not ask returned an empty stop
     * reason (and rank 0 printed "Training finished: ."). */
    dla_training_info *is = NULL;
    dla_status ss = stop_train(&is);
    if (!is)
        die("stop: no training info");
    char why[512];
    snprintf(why, sizeof why, "status %d, %lld iterations, \"%s\"", (int)ss,
             (long long)is->iterations, is->stop_reason);
    check(ss == DLA_OK && is->iterations == 2 && !strcmp(is->stop_reason, "Stopped by OutputFcn"),
          "the last rank's OutputFcn stops every rank, each saying why", why);
    dla_training_info_free(is);

    dla_training_info *ia = NULL, *ip = NULL;
    dla_status sa = nan_train("auto", &ia), sp = nan_train("parallel", &ip);
    if (!ia || !ip)
        die("nan: no training info");
    char detail[512];
    snprintf(detail, sizeof detail, "status %d and %d, %lld and %lld iterations, RMSE %g and %g, "
             "\"%s\"", (int)sp, (int)sa, (long long)ip->iterations, (long long)ia->iterations,
             ip->iterations ? ip->training_rmse[0] : 0.0,
             ia->iterations ? ia->training_rmse[0] : 0.0, ip->stop_reason);
    check(sa == DLA_ERR_STATE && sp == sa && ia->iterations == 1 && ip->iterations == 1 &&
              isnan(ia->training_rmse[0]) && isnan(ip->training_rmse[0]) &&
              !strcmp(ip->stop_reason, ia->stop_reason),
          "a NaN target in one share: \"parallel\" stops as \"auto\", the batch's RMSE NaN",
          detail);
    dla_training_info_free(ia);
    dla_training_info_free(ip);
}

/* Dropout (and spatial dropout) in training: each worker's masks are the
 * rows one process draws for its observations, and the stream moves on
 * alike, so "parallel" trains as "auto" (the same learnables). */
static dla_status dropout_train(const char *env, int spatial, int bn, int64_t mbs,
                                dla_net **trained, dla_training_info **info)
{
    enum { N = 13, F = 6 };
    static float x[F * N];
    static int32_t lab[N];
    for (int j = 0; j < N; j++) {
        lab[j] = j % 3;
        for (int c = 0; c < F; c++)
            x[F * j + c] = (float)((c % 3 == lab[j]) + 0.1 * ((j * 5 + c) % 7));
    }
    dla_rng_seed(11);
    /* With a batch normalization after the dropout, no learning (each
     * worker normalizes with its share's statistics in training): its
     * population statistics are compared. */
    dla_layer *layers[] = {dla_feature_input_layer(F, NULL), dla_fc_layer(10, NULL),
                           spatial == 2 ? dla_self_attention_layer(
                                              2, 4, &(dla_self_attention_layer_options){
                                                        .dropout_probability = 0.5})
                           : spatial    ? dla_spatial_dropout_layer(0.4, NULL)
                                        : dla_dropout_layer(0.5, NULL),
                           dla_batchnorm_layer(NULL), dla_fc_layer(3, NULL),
                           dla_softmax_layer(NULL)};
    if (!bn)
        dla_layer_free(layers[3]);
    dla_net *net = dla_net_create(bn ? 6 : 5, bn ? layers : (dla_layer *[]){layers[0], layers[1],
                                                                          layers[2], layers[4],
                                                                          layers[5]});
    if (!net)
        die("dropout: the network");
    dla_scope_begin();
    dla_train_data data = {.predictors = dla_tensor_from_host(x, DLA_F32, "CB", DLA_DIMS(F, N)),
                           .targets = dla_tensor_from_host(lab, DLA_I32, "", DLA_DIMS(1, N))};
    dla_training_options o = {.max_epochs = 3, .mini_batch_size = mbs,
                              .initial_learn_rate = bn ? 1e-20 : 0.1,
                              .execution_environment = env, .verbose = -1,
                              .shuffle = "every-epoch", .shuffle_seed = 4, .metrics = "accuracy",
                              .batch_normalization_statistics = bn ? "population" : NULL};
    dla_status st = dla_trainnet(&data, net, &(dla_train_loss){.name = "crossentropy"}, &o,
                                 trained, info);
    dla_scope_end();
    dla_net_free(net);
    return st;
}

static void mode_dropout(void)
{
    static const struct {
        int spatial, bn;
        int64_t mbs;
    } cases[] = {{0, 0, 5}, {0, 0, 4}, {1, 0, 5}, {2, 0, 5}, {0, 1, 5}, {0, 1, 4}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        dla_net *na = NULL, *np = NULL;
        dla_training_info *ia = NULL, *ip = NULL;
        const int bn = cases[c].bn;
        uint64_t seed, counter_a, counter_p;
        if (dropout_train("auto", cases[c].spatial, bn, cases[c].mbs, &na, &ia) != DLA_OK)
            die("dropout: auto");
        dla_rng_get(&seed, &counter_a);
        if (dropout_train("parallel", cases[c].spatial, bn, cases[c].mbs, &np, &ip) != DLA_OK)
            die("dropout: parallel");
        dla_rng_get(&seed, &counter_p);
        const int same_n = ip->iterations == ia->iterations;
        double wl = same_n ? worst(ip->training_loss, ia->training_loss, ia->iterations) : INFINITY;
        double ww = worst_values(na, np, bn);
        char what[200], detail[256];
        snprintf(what, sizeof what, "%s, mini-batch %lld%s: \"parallel\" drops what \"auto\" drops",
                 cases[c].spatial == 2 ? "self-attention's dropout of its weights"
                 : cases[c].spatial    ? "spatial dropout"
                                       : "dropout",
                 (long long)cases[c].mbs,
                 bn ? ", then a batch normalization's population statistics" : "");
        snprintf(detail, sizeof detail, "%lld and %lld iterations; loss within %.1e, %s %.1e; "
                 "the stream at %llu and %llu", (long long)ip->iterations,
                 (long long)ia->iterations, wl, bn ? "state" : "learnables", ww,
                 (unsigned long long)counter_p, (unsigned long long)counter_a);
        /* With batch normalization the losses are the shares' own. The
         * stream ends where one process's does, on every rank (a worker
         * without a share in the population pass's last batch drew
         * nothing there). */
        check(same_n && (bn || wl < 1e-6) && ww < 1e-6 && counter_p == counter_a, what, detail);
        check(same_everywhere(digest(np)), "  the same network on every rank", "");
        dla_training_info_free(ia);
        dla_training_info_free(ip);
        dla_net_free(na);
        dla_net_free(np);
    }
}

/* trainnet "parallel" on an image datastore (DIR) one of whose files is
 * corrupt: only the worker whose share holds it reads it, and every
 * worker must fail with an error (that worker naming the file, the others
 * naming it as failed), none left waiting. */
static void mode_badfile(const char *dir)
{
    dla_imds *ds = NULL;
    if (dla_imds_create(dir, NULL, &ds) != DLA_OK)
        die("badfile: dla_imds_create");
    dla_rng_seed(3);
    /* No input normalization: its statistics would read every file on
     * every worker. */
    dla_layer *layers[] = {dla_image_input_layer(28, 28, 1, &(dla_image_input_options){
                                                            .normalization = "none"}),
                           dla_fc_layer(2, NULL), dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(3, layers), *trained = NULL;
    for (int overlap = 0; overlap < 2; overlap++) {
        setenv("DLACCEL_OVERLAP", overlap ? "1" : "0", 1);
        dla_training_options o = {.max_epochs = 2, .mini_batch_size = 4, .verbose = -1,
                                  .plots = "none", .execution_environment = "parallel"};
        dla_status st = dla_trainnet(&(dla_train_data){.images = ds}, net,
                                     &(dla_train_loss){.name = "crossentropy"}, &o, &trained, NULL);
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        const int named = strstr(msg, "bad.png") != NULL, other = strstr(msg, "failed") != NULL;
        char what[128];
        snprintf(what, sizeof what, "a corrupt file in one worker's share (%s): every worker fails",
                 overlap ? "overlapped" : "blocking");
        check(st != DLA_OK && (named || other), what, msg);
        dla_net_free(trained);
        trained = NULL;
        /* The world is still in step: a barrier passes. */
        check(dla_spmd_barrier() == DLA_OK, "  the workers meet again after it", "");
    }
    dla_net_free(net);
    dla_imds_free(ds);
}

/* trainnet "parallel" against "auto" on an augmented datastore over DIR
 * (copies of one image: only the transforms tell them apart): each image
 * must get the transform it gets in one process, so the losses agree.
 * Every kind of draw is made, the place of a random 24x24 crop of the
 * 28x28 images too, so that a worker skips each of the others' draws. */
static void mode_augment(const char *dir)
{
    dla_imds *ds = NULL, *aug = NULL;
    const int64_t size2[2] = {24, 24};
    if (dla_imds_create(dir, NULL, &ds) != DLA_OK ||
        dla_augimds_create_opts(size2, ds,
                                &(dla_image_augmenter){.rand_x_reflection = 1,
                                                       .rand_x_translation = {-3, 3},
                                                       .rand_rotation = {-20, 20},
                                                       .rand_y_scale = {0.9, 1.1},
                                                       .rand_x_shear = {-10, 10}},
                                9, &(dla_augimds_options){.output_size_mode = "randcrop"},
                                &aug) != DLA_OK)
        die("augment: the datastore");
    double *loss[2] = {NULL, NULL};
    int64_t its[2] = {0, 0};
    for (int par = 0; par < 2; par++) {
        dla_rng_seed(3);
        dla_layer *layers[] = {dla_image_input_layer(24, 24, 1, &(dla_image_input_options){
                                                                .normalization = "none"}),
                               dla_fc_layer(2, NULL), dla_softmax_layer(NULL)};
        dla_net *net = dla_net_create(3, layers), *trained = NULL;
        dla_training_info *info = NULL;
        dla_training_options o = {.max_epochs = 2, .mini_batch_size = 5, .verbose = -1,
                                  .plots = "none", .partial_mini_batch = "return",
                                  .shuffle = "every-epoch", .initial_learn_rate = 0.01,
                                  .execution_environment = par ? "parallel" : "auto"};
        if (dla_trainnet(&(dla_train_data){.images = aug}, net,
                         &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info) != DLA_OK)
            die("augment: trainnet");
        its[par] = info->iterations;
        loss[par] = malloc(sizeof *loss[par] * (size_t)info->iterations);
        memcpy(loss[par], info->training_loss, sizeof *loss[par] * (size_t)info->iterations);
        dla_training_info_free(info);
        dla_net_free(trained);
        dla_net_free(net);
    }
    double w = its[0] == its[1] ? worst(loss[1], loss[0], its[0]) : INFINITY;
    char detail[128];
    snprintf(detail, sizeof detail, "%lld and %lld iterations, the loss within %.1e",
             (long long)its[1], (long long)its[0], w);
    check(w < 1e-5, "an augmented datastore: each image transformed as in one process", detail);
    free(loss[0]);
    free(loss[1]);
    dla_imds_free(aug);
    dla_imds_free(ds);
}

/* --------------------------------------------------------------- combos */

/* Mode combos: trainnet "parallel" against "auto" with features rarely
 * combined with it. 29 observations of 5 features in 3 classes (11 more
 * to validate), or sequences of 2 to 11 steps of 2 channels. */
enum { CB_N = 29, CB_V = 11, CB_F = 5, CB_C = 3 };
static float cb_x[CB_F * (CB_N + CB_V)];
static int32_t cb_lab[CB_N + CB_V];
static dla_seqlist *cb_seqs, *cb_vseqs;

static void combos_data(void)
{
    unsigned s = 7;
    cb_seqs = dla_seqlist_create(2);
    cb_vseqs = dla_seqlist_create(2);
    for (int j = 0; j < CB_N + CB_V; j++) {
        cb_lab[j] = (j * 7 + j / 4) % CB_C;
        for (int f = 0; f < CB_F; f++) {
            s = s * 1103515245u + 12345u;
            cb_x[CB_F * j + f] = (float)((f % CB_C == cb_lab[j]) + ((s >> 16) % 1000) / 1000.0 - 0.5);
        }
        float x[2 * 11];
        const int len = 2 + (j * 5) % 10;
        for (int k = 0; k < 2 * len; k++)
            x[k] = (float)(0.4 * cb_lab[j] + 0.1 * ((k * 3 + j) % 5) - 0.3);
        if (dla_seqlist_append(j < CB_N ? cb_seqs : cb_vseqs, x, len) != DLA_OK)
            die("combos: the sequences");
    }
}

/* kind 0: an MLP; 1: an LSTM encoder whose hidden and cell states feed
 * a decoder's state inputs (HasStateOutputs, HasStateInputs); 2: an MLP
 * with a custom layer of state (a running mean per channel) in double. */
static dla_net *combos_net(int kind)
{
    static const dla_layer_type chan = {.type = "chanMean", .initialize = chan_init,
                                        .predict = avg_predict, .forward = chan_forward};
    dla_rng_seed(11);
    if (kind == 1) {
        dla_layer *l[] = {
            dla_sequence_input_layer(2, NULL),
            dla_lstm_layer(4, &(dla_lstm_layer_options){.name = "enc", .has_state_outputs = 1}),
            dla_lstm_layer(4, &(dla_lstm_layer_options){.name = "dec", .has_state_inputs = 1,
                                                        .output_mode = "last"}),
            dla_fc_layer(CB_C, NULL), dla_softmax_layer(NULL)};
        dla_net *net = dla_net_create(5, l);
        if (!net || dla_net_connect(net, "enc/hidden", "dec/hidden") != DLA_OK ||
            dla_net_connect(net, "enc/cell", "dec/cell") != DLA_OK)
            die("combos: the encoder-decoder");
        return net;
    }
    dla_layer_type_register(&chan);
    dla_layer *l[] = {dla_feature_input_layer(CB_F, NULL), dla_custom_layer("chanMean", NULL, NULL),
                      dla_fc_layer(8, NULL), dla_relu_layer(NULL), dla_fc_layer(CB_C, NULL),
                      dla_softmax_layer(NULL)};
    dla_net *net = kind ? dla_net_create(6, l)
                        : dla_net_create(5, (dla_layer *[]){l[0], l[2], l[3], l[4], l[5]});
    if (!kind)
        dla_layer_free(l[1]);
    if (!net)
        die("combos: the network");
    if (kind == 2) {
        dla_scope_begin();
        dla_tensor *example = dla_zeros(DLA_F32, "CB", DLA_DIMS(CB_F, 1));
        if (dla_net_init(net, 1, &example) != DLA_OK || dla_net_cast(net, DLA_F64) != DLA_OK)
            die("combos: the double network");
        dla_scope_end();
    }
    return net;
}

static void combos_train(int kind, dla_training_options o, int val, const char *env,
                         dla_net **trained, dla_training_info **info)
{
    dla_net *net = combos_net(kind);
    dla_scope_begin();
    dla_train_data d = {.targets = dla_tensor_from_host(cb_lab, DLA_I32, "", DLA_DIMS(1, CB_N))};
    dla_train_data v = {.targets = dla_tensor_from_host(cb_lab + CB_N, DLA_I32, "",
                                                        DLA_DIMS(1, CB_V))};
    if (kind == 1) {
        d.sequences = cb_seqs;
        v.sequences = cb_vseqs;
    } else {
        d.predictors = dla_tensor_from_host(cb_x, DLA_F32, "CB", DLA_DIMS(CB_F, CB_N));
        v.predictors = dla_tensor_from_host(cb_x + CB_F * CB_N, DLA_F32, "CB",
                                            DLA_DIMS(CB_F, CB_V));
    }
    o.execution_environment = env;
    o.verbose = -1;
    o.metrics = "accuracy";
    o.validation_data = val ? &v : NULL;
    if (dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, trained, info) !=
        DLA_OK)
        die("combos: trainnet");
    dla_scope_end();
    dla_net_free(net);
}

static void mode_combos(void)
{
    combos_data();
    static const dla_learn_rate_schedule drop = {.method = "piecewise", .drop_period = 1,
                                                 .drop_factor = 0.5};
    const struct {
        const char *what;
        int kind, val;
        dla_training_options o;
    } cases[] = {
        {"a piecewise schedule, L2 and global-l2norm clipping", 0, 0,
         {.max_epochs = 4, .mini_batch_size = 7, .initial_learn_rate = 0.1,
          .learn_rate_schedule = {.method = "piecewise", .drop_period = 1, .drop_factor = 0.5},
          .l2_regularization = 0.01, .gradient_threshold = 0.05,
          .gradient_threshold_method = "global-l2norm", .shuffle = "every-epoch"}},
        {"adam, l2norm clipping, a warm-up then a drop", 0, 1,
         {.solver = "adam", .max_epochs = 3, .mini_batch_size = 6, .initial_learn_rate = 0.01,
          .learn_rate_schedule = {.method = "warmup", .period = 3, .next = &drop},
          .gradient_threshold = 0.02, .gradient_threshold_method = "l2norm",
          .validation_frequency = 2}},
        {"OutputNetwork \"best-validation\", ValidationPatience", 0, 1,
         {.max_epochs = 30, .mini_batch_size = 8, .initial_learn_rate = 0.5,
          .validation_frequency = 1, .validation_patience = 2,
          .output_network = "best-validation"}},
        {"MiniBatchSize 1 (workers without a share)", 0, 1,
         {.max_epochs = 1, .mini_batch_size = 1, .initial_learn_rate = 0.05,
          .validation_frequency = 10}},
        {"an encoder's states into a decoder's, padded sequences, best validation", 1, 1,
         {.max_epochs = 3, .mini_batch_size = 5, .initial_learn_rate = 0.05,
          .validation_frequency = 3, .output_network = "best-validation",
          .sequence_padding_direction = "left", .gradient_threshold = 0.1,
          .gradient_threshold_method = "global-l2norm"}},
        {"an encoder-decoder, MiniBatchSize 2", 1, 0,
         {.max_epochs = 1, .mini_batch_size = 2, .initial_learn_rate = 0.05}},
        {"a custom layer's state, double, MiniBatchSize 3", 2, 1,
         {.max_epochs = 2, .mini_batch_size = 3, .initial_learn_rate = 0.05,
          .validation_frequency = 4, .l2_regularization = 0.01}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        dla_net *na = NULL, *np = NULL;
        dla_training_info *ia = NULL, *ip = NULL;
        combos_train(cases[c].kind, cases[c].o, cases[c].val, "auto", &na, &ia);
        combos_train(cases[c].kind, cases[c].o, cases[c].val, "parallel", &np, &ip);
        const int same_its = ia->iterations == ip->iterations && ia->validations == ip->validations;
        const double wl = same_its ? worst(ip->training_loss, ia->training_loss, ia->iterations)
                                   : INFINITY;
        const double wr = same_its ? worst(ip->learn_rate, ia->learn_rate, ia->iterations) : INFINITY;
        const double wv = same_its ? worst(ip->validation_loss, ia->validation_loss, ia->validations)
                                   : INFINITY;
        const double ww = worst_values(np, na, 0), ws = worst_values(np, na, 1);
        char detail[512];
        snprintf(detail, sizeof detail, "%lld and %lld iterations, output network of iteration "
                 "%lld and %lld; loss within %.1e, learning rate %.1e, validation loss %.1e, "
                 "learnables %.1e, state %.1e", (long long)ip->iterations,
                 (long long)ia->iterations, (long long)ip->output_network_iteration,
                 (long long)ia->output_network_iteration, wl, wr, wv, ww, ws);
        check(same_its && ip->output_network_iteration == ia->output_network_iteration &&
                  !strcmp(ip->stop_reason, ia->stop_reason) && wl < 1e-6 && wr == 0 &&
                  wv < 1e-6 && ww < 1e-5 && ws < 1e-5,
              cases[c].what, detail);
        check(same_everywhere(digest(np)), "  the same network on every rank", "");
        dla_training_info_free(ia);
        dla_training_info_free(ip);
        dla_net_free(na);
        dla_net_free(np);
    }
    dla_seqlist_free(cb_seqs);
    dla_seqlist_free(cb_vseqs);
}

/* Observation i of mode halved: a 2 x 1 x L sequence (L of 4 to 14
 * steps) and class numbers at every other step (what a stride-2
 * convolution over T gives): 1 x 1 x L/2. */
static dla_status halved_read_at(void *ctx, int64_t i, int n, dla_tensor **out)
{
    (void)ctx, (void)n;
    const int64_t len = 2 * (2 + (i * 5) % 6);
    float x[2 * 14];
    int32_t c[7];
    for (int64_t k = 0; k < 2 * len; k++)
        x[k] = (float)((k * 7 + i) % 5) - 2;
    for (int64_t k = 0; k < len / 2; k++)
        c[k] = (int32_t)((k + i) % 3);
    out[0] = dla_tensor_from_host(x, DLA_F32, "", DLA_DIMS(2, 1, len));
    out[1] = dla_tensor_from_host(c, DLA_I32, "", DLA_DIMS(1, 1, len / 2));
    return DLA_OK;
}

/* An output of half its input's steps, class numbers per step: the
 * accuracy is a mean over the steps that hold a class, which the
 * workers' shares hold unevenly. */
static void mode_halved(void)
{
    dla_datastore *ds;
    if (dla_custom_datastore_create(&(dla_custom_datastore){.num_outputs = 2,
                                                            .num_observations = 12,
                                                            .read_at = halved_read_at},
                                    &ds) != DLA_OK)
        die("halved: the datastore");
    dla_training_info *info[2];
    for (int par = 0; par < 2; par++) {
        dla_rng_seed(3);
        dla_layer *l[] = {dla_sequence_input_layer(2, &(dla_sequence_input_options){.min_length = 2}),
                          dla_conv1d_layer(2, 4, &(dla_conv_layer_options){.stride = {2}}),
                          dla_relu_layer(NULL), dla_fc_layer(3, NULL), dla_softmax_layer(NULL)};
        dla_net *net = dla_net_create(5, l), *trained = NULL;
        dla_training_options o = {.verbose = -1, .max_epochs = 2, .mini_batch_size = 4,
                                  .shuffle = "never", .metrics = "accuracy",
                                  .initial_learn_rate = 0.01,
                                  .execution_environment = par ? "parallel" : "auto"};
        if (!net || dla_trainnet(&(dla_train_data){.datastore = ds}, net,
                                 &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                 &info[par]) != DLA_OK)
            die("halved: trainnet");
        dla_net_free(trained);
        dla_net_free(net);
    }
    double wl = info[0]->iterations == info[1]->iterations
                    ? worst(info[1]->training_loss, info[0]->training_loss, info[0]->iterations)
                    : INFINITY;
    double wa = info[0]->iterations == info[1]->iterations
                    ? worst(info[1]->training_accuracy, info[0]->training_accuracy,
                            info[0]->iterations)
                    : INFINITY;
    char detail[256];
    snprintf(detail, sizeof detail, "%lld and %lld iterations, loss within %.1e, accuracy %.1e "
             "(first %.4f and %.4f)", (long long)info[1]->iterations,
             (long long)info[0]->iterations, wl, wa, info[1]->training_accuracy[0],
             info[0]->training_accuracy[0]);
    check(wl < 1e-6 && wa < 1e-9, "class numbers at every other step: \"parallel\"'s loss and "
          "accuracy (over the steps that hold a class) are \"auto\"'s", detail);
    dla_training_info_free(info[0]);
    dla_training_info_free(info[1]);
    dla_datastore_free(ds);
}

int main(int argc, char **argv)
{
    rank = dla_spmd_rank();
    size = dla_spmd_size();
    const char *mode = argc > 1 ? argv[1] : "";
    if (!strcmp(mode, "steps"))
        mode_steps();
    else if (!strcmp(mode, "bn"))
        mode_bn();
    else if (!strcmp(mode, "state"))
        mode_state();
    else if (!strcmp(mode, "trainnet") && argc > 2)
        mode_trainnet(argv[2], argc > 3 ? atoi(argv[3]) : 2);
    else if (!strcmp(mode, "resume") && argc > 2)
        mode_resume(argv[2]);
    else if (!strcmp(mode, "overlap"))
        mode_overlap();
    else if (!strcmp(mode, "device"))
        mode_device();
    else if (!strcmp(mode, "global"))
        mode_global();
    else if (!strcmp(mode, "seq2seq"))
        mode_seq2seq();
    else if (!strcmp(mode, "nan"))
        mode_nan();
    else if (!strcmp(mode, "dsseq"))
        mode_dsseq();
    else if (!strcmp(mode, "dropout"))
        mode_dropout();
    else if (!strcmp(mode, "badfile") && argc > 2)
        mode_badfile(argv[2]);
    else if (!strcmp(mode, "augment") && argc > 2)
        mode_augment(argv[2]);
    else if (!strcmp(mode, "refused"))
        mode_refused();
    else if (!strcmp(mode, "halved"))
        mode_halved();
    else if (!strcmp(mode, "combos"))
        mode_combos();
    else {
        fprintf(stderr, "usage: parallel_train_check steps | bn | state | trainnet DIR [EPOCHS] | "
                        "resume DIR | overlap | device | refused | global | seq2seq | dsseq | nan | "
                        "dropout | halved | combos | "
                        "badfile DIR | "
                        "augment DIR\n");
        return 2;
    }
    fflush(stdout);
    /* Every rank's verdict: the job fails when any rank failed. */
    bool all_ok = false;
    if (dla_spmd_all(failures == 0, &all_ok) != DLA_OK)
        die("dla_spmd_all");
    return all_ok ? 0 : 1;
}
