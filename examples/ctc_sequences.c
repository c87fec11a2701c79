/*
 * ctc_sequences.c - a recurrent network learns label sequences that are
 * not aligned with its input steps, through MATLAB's ctc loss:
 *
 *     Y = forward(net, X);                               % softmax, "CBT"
 *     loss = ctc(Y, targets, YMask, targetsMask);
 *     gradients = dlgradient(loss, net.Learnables);
 *
 * The data is made here. Each observation's label sequence is 1 to 3
 * labels from 1..3 (repeats allowed); its input holds each label as a
 * one-hot pulse of 1 or 2 steps with a step of silence (channel 0) after
 * it and maybe one before, plus noise, and is padded with zeros to the
 * mini-batch's 12 steps (YMask marks its own steps, targetsMask its
 * labels). Nothing says at which steps the labels are: the loss sums over
 * every alignment. Class 0 of the output is CTC's blank.
 *
 * sequenceInputLayer(4) - lstmLayer(32) - fullyConnectedLayer(4) -
 * softmaxLayer, Adam, the model loss accelerated with the network as its
 * ctx. After training, greedy decoding (the likeliest class per step,
 * repeats merged, blanks dropped) of a fresh batch is compared with its
 * label sequences. Exits 1 unless more than 90% come out exactly.
 *
 *     build/examples/ctc_sequences [iterations]   (default 300)
 */
#include "example_args.h"
#include <dlaccel.h>
#include <stdio.h>
#include <stdlib.h>

#define BATCH 32
#define STEPS 12
#define LABELS 3
#define CLASSES (LABELS + 1) /* the blank first */

static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_net *net = ctx;
    dla_tensor *y;
    dla_status st = dla_net_forward(net, 1, &in[0], 1, &y, NULL, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_ctc(y, in[1], in[2], in[3], NULL);
    return dla_net_gradient(net, out[0], out + 1);
}

/* The example's own stream, so every run sees the same data. */
static unsigned long seed = 7;
static double uniform(void)
{
    seed = seed * 6364136223846793005ul + 1442695040888963407ul;
    return (double)(seed >> 11) / 9007199254740992.0;
}

/* A mini-batch: x (CLASSES x BATCH x STEPS, "CBT"), targets and their mask
 * (BATCH x LABELS), YMask (BATCH x STEPS); labels[b * LABELS + k] and
 * count[b] on the host for the check. */
typedef struct batch {
    dla_tensor *x, *targets, *y_mask, *targets_mask;
    int labels[BATCH * LABELS], count[BATCH];
} batch;

static void make_batch(batch *m)
{
    static float x[CLASSES * BATCH * STEPS], ym[BATCH * STEPS], tg[BATCH * LABELS],
        tm[BATCH * LABELS];
    for (int i = 0; i < CLASSES * BATCH * STEPS; i++)
        x[i] = 0;
    for (int b = 0; b < BATCH; b++) {
        const int n = 1 + (int)(uniform() * LABELS);
        int t = uniform() < 0.5 ? 0 : 1; /* maybe a step of silence first */
        for (int s = 0; s < t; s++)
            x[0 + CLASSES * (b + BATCH * s)] = 1;
        for (int k = 0; k < LABELS; k++) {
            const int label = 1 + (int)(uniform() * LABELS);
            m->labels[b * LABELS + k] = label;
            tg[b + BATCH * k] = k < n ? (float)label : 0;
            tm[b + BATCH * k] = k < n;
            if (k >= n)
                continue;
            const int len = uniform() < 0.5 ? 1 : 2;
            for (int s = 0; s < len; s++, t++)
                x[label + CLASSES * (b + BATCH * t)] = 1;
            x[0 + CLASSES * (b + BATCH * t++)] = 1; /* silence after each label */
        }
        m->count[b] = n;
        for (int s = 0; s < STEPS; s++) {
            ym[b + BATCH * s] = s < t;
            if (s < t)
                for (int c = 0; c < CLASSES; c++)
                    x[c + CLASSES * (b + BATCH * s)] += (float)(0.2 * (uniform() - 0.5));
        }
    }
    m->x = dla_tensor_from_host(x, DLA_F32, "CBT", DLA_DIMS(CLASSES, BATCH, STEPS));
    m->targets = dla_tensor_from_host(tg, DLA_F32, "", DLA_DIMS(BATCH, LABELS));
    m->targets_mask = dla_tensor_from_host(tm, DLA_F32, "", DLA_DIMS(BATCH, LABELS));
    m->y_mask = dla_tensor_from_host(ym, DLA_F32, "", DLA_DIMS(BATCH, STEPS));
}

/* How many observations greedy decoding of y (CLASSES x BATCH x STEPS)
 * gets exactly right. */
static int decoded_right(const float *y, const float *ym, const batch *m)
{
    int right = 0;
    for (int b = 0; b < BATCH; b++) {
        int out[STEPS], n = 0, prev = 0;
        for (int s = 0; s < STEPS && ym[b + BATCH * s] != 0; s++) {
            int best = 0;
            for (int c = 1; c < CLASSES; c++)
                if (y[c + CLASSES * (b + BATCH * s)] > y[best + CLASSES * (b + BATCH * s)])
                    best = c;
            if (best != 0 && best != prev)
                out[n++] = best;
            prev = best;
        }
        int same = n == m->count[b];
        for (int k = 0; same && k < n; k++)
            same = out[k] == m->labels[b * LABELS + k];
        right += same;
    }
    return right;
}

static int fail(const char *what)
{
    fprintf(stderr, "ctc_sequences: %s: %s\n", what, dla_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    int iterations = 300;
    const int rc = example_iterations_arg(argc, argv, "ctc_sequences", &iterations);
    if (rc >= 0)
        return rc;
    dla_rng_seed(1);
    dla_layer *layers[] = {dla_sequence_input_layer(CLASSES, NULL), dla_lstm_layer(32, NULL),
                           dla_fc_layer(CLASSES, NULL), dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(4, layers);
    if (!net || dla_net_init(net, 0, NULL) != DLA_OK)
        return fail("network");
    const int nl = dla_net_learnable_count(net);
    dla_tensor *avg[8] = {0}, *avg_sq[8] = {0}, *out[1 + 8];
    dla_accel *accfun = dla_accelerate(model_loss, &(dla_accel_options){
                                                       .name = "modelLoss", .ctx_kind = dla_net_accel_kind()});
    if (!accfun || nl > 8)
        return fail("dla_accelerate");
    double loss = 0;
    for (int iteration = 1; iteration <= iterations; iteration++) {
        dla_scope_begin();
        batch m;
        make_batch(&m);
        if (dla_accel_feval(accfun, net, 4, (dla_tensor *[]){m.x, m.targets, m.y_mask,
                                                             m.targets_mask}, 1 + nl, out) != DLA_OK)
            return fail("dla_accel_feval");
        loss = dla_tensor_item(out[0], 0);
        if (dla_adamupdate(nl, dla_table_values(dla_net_learnables(net)), out + 1, avg, avg_sq,
                           iteration, 0.01, 0.9, 0.999, 1e-8) != DLA_OK)
            return fail("dla_adamupdate");
        dla_scope_end();
        if (iteration % 50 == 0 || iteration == iterations)
            printf("iteration %3d: ctc loss %.4f\n", iteration, loss);
    }
    printf("HitRate %.1f%%\n", dla_accel_hit_rate(accfun));

    /* A fresh batch, decoded greedily. */
    dla_scope_begin();
    batch m;
    make_batch(&m);
    dla_tensor *y;
    static float ys[CLASSES * BATCH * STEPS], ym[BATCH * STEPS];
    if (dla_net_predict(net, 1, &m.x, 1, &y, NULL) != DLA_OK ||
        dla_tensor_to_host(dla_cast(y, DLA_F32), ys, sizeof ys) != DLA_OK ||
        dla_tensor_to_host(m.y_mask, ym, sizeof ym) != DLA_OK)
        return fail("predict");
    const int right = decoded_right(ys, ym, &m);
    printf("decoded %d of %d label sequences exactly (%.1f%%)\n", right, BATCH,
           100.0 * right / BATCH);
    dla_scope_end();
    dla_accel_free(accfun);
    dla_optim_free(nl, avg);
    dla_optim_free(nl, avg_sq);
    dla_net_free(net);
    return right > 0.9 * BATCH ? 0 : 1;
}
