/*
 * test_alloc_fail.c - the allocation-failure driver: refuse the Nth host
 * allocation, for every N (or a spread of them), across small workflows
 * that together touch every path that allocates: tensors, a network made
 * and initialized, dla_feval with gradients, optimizer updates,
 * accelerated calls (record, planning replay, planned replay), trainnet
 * iterations (trainnet's "lbfgs" too), dla_lbfgsupdate, network save,
 * load and copy, trace save, load and replay.
 * Each run must end either in DLA_ERR_OUT_OF_MEMORY (never a crash, never
 * another status such as a format or shape error) or in DLA_OK with the
 * same answer as a run that was refused nothing, and leave exactly the
 * blocks it found (SQLite's malloc-failure loop).
 *
 * Settings (tests/alloc_fail.sh sets them; make check uses the defaults):
 *   DLA_ALLOCFAIL_RUNS    refusals per workflow, spread evenly over its
 *                         allocations (default 120); 0: every N, in turn.
 *   DLA_ALLOCFAIL_ONLY    run only the workflow of this name;
 *   DLA_ALLOCFAIL_FROM    from its Nth allocation on (the script's restart
 *                         past a crash).
 *   DLA_ALLOCFAIL_PROGRESS  a file that holds "name N" of the run under way
 *                         and the counts before it (what the script reads
 *                         after a crash).
 * "test_alloc_fail --list" prints the workflows' names.
 * Every workflow prints one summary line: runs, recovered runs (DLA_OK
 * with the right answer), leaks, wrong statuses.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "allocfail.h"

static char dir[256];

static const char *path_of(const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}


/* ------------------------------------------------------------ workflows */

/* A workflow that touches every tensor path that allocates: format
 * reordering on upload, random numbers, broadcasting, views, a reshape
 * that must copy, GEMM with a transposed view, reductions, casts, a device
 * move, scopes. */
static dla_status tensors_scoped(double *digest)
{
    static const float data[24] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                   13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24};
    float out[64];
    dla_status st;
    if (dla_scope_begin() != DLA_OK)
        return DLA_ERR_STATE;
    dla_rng_seed(3);
    dla_tensor *x = dla_tensor_from_host(data, DLA_F32, "CSB", DLA_DIMS(2, 3, 4)); /* -> SCB */
    dla_tensor *r = dla_rand(DLA_F32, "SCB", DLA_DIMS(3, 2, 4));
    dla_tensor *y = dla_add(x, r);
    dla_tensor *s = dla_slice(y, 3, 1, 2, DLA_END);
    dla_tensor *p = dla_permute(dla_reshape(s, "", DLA_DIMS(6, 2)), DLA_DIMS(2, 1));
    dla_tensor *q = dla_reshape(p, "", DLA_DIMS(3, 4));            /* copies */
    dla_tensor *m = dla_mtimes(p, dla_ones(DLA_F32, "", DLA_DIMS(6, 5)));
    dla_tensor *z = dla_sum(dla_exp(dla_mul(m, m)), DLA_DIMS(2));
    dla_tensor *w = dla_cast(dla_max(q, DLA_DIMS(1)), DLA_F64);
    dla_tensor *moved = dla_tensor_to_device(z, dla_device_at(0));
    st = dla_tensor_to_host(moved, out, sizeof out);
    if (st == DLA_OK)
        st = digest_of(w, digest);
    dla_scope_end();
    return st;
}

/* The same without a scope: every handle released by hand, error or not. */
static dla_status tensors_unscoped(double *digest)
{
    double buf[16];
    dla_rng_seed(4);
    dla_tensor *a = dla_randn(DLA_F64, "CB", DLA_DIMS(4, 4));
    dla_tensor *m = dla_abs(a);
    dla_tensor *b = dla_sqrt(m);
    dla_tensor *c = dla_slice(b, 2, 0, 2, DLA_END);
    dla_tensor *d = dla_contiguous(c);
    dla_status st = dla_tensor_to_host(d, buf, sizeof buf);
    for (int i = 0; st == DLA_OK && i < 8; i++)
        *digest += buf[i];
    dla_tensor_release(d);
    dla_tensor_release(c);
    dla_tensor_release(b);
    dla_tensor_release(m);
    dla_tensor_release(a);
    return st;
}

/* A small CNN with constant initializers (the workflows test the handling
 * of refused memory, not the random number generator). */
static dla_net *small_net(void)
{
    dla_layer *l[] = {
        dla_image_input_layer(4, 4, 1, &(dla_image_input_options){.normalization = "zscore"}),
        dla_conv2d_layer(3, 3, 2, &(dla_conv_layer_options){.padding_mode = "same",
                                                           .weights_initializer = "ones"}),
        dla_batchnorm_layer(NULL),
        dla_relu_layer(NULL),
        dla_fc_layer(3, &(dla_fc_layer_options){.weights_initializer = "ones"}),
        dla_softmax_layer(NULL),
    };
    return dla_net_create(6, l);
}

/* Network: made, initialized, summarized, copied, predicted with. */
static dla_status network(double *digest)
{
    dla_net *net = small_net();
    if (!net)
        return dla_last_status();
    dla_scope_begin();
    dla_tensor *x = dla_full(0.5, DLA_F32, "SSCB", DLA_DIMS(4, 4, 1, 2)), *y = NULL;
    dla_status st = dla_net_init(net, 1, &x);
    char buf[2048];
    if (st == DLA_OK && dla_net_summary(net, buf, sizeof buf) <= 0)
        st = dla_last_status() != DLA_OK ? dla_last_status() : DLA_ERR_STATE;
    dla_net *copy = st == DLA_OK ? dla_net_copy(net) : NULL;
    if (st == DLA_OK && !copy)
        st = dla_last_status();
    if (st == DLA_OK)
        st = dla_net_predict(copy, 1, &x, 1, &y, NULL);
    if (st == DLA_OK)
        st = digest_of(y, digest);
    dla_scope_end();
    dla_net_free(copy);
    dla_net_free(net);
    return st;
}

static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_net *net = ctx;
    dla_tensor *y;
    dla_status st = dla_net_forward(net, 1, in, 1, &y, out + 7, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_crossentropy(y, in[1], NULL);
    return dla_net_gradient(net, out[0], out + 1);
}

/* dla_feval with the network's gradients, its state, and two updates of
 * each optimizer. */
static dla_status gradient_and_update(double *digest)
{
    dla_net *net = small_net();
    if (!net)
        return dla_last_status();
    dla_tensor *vel[6] = {0}, *avg[6] = {0}, *sq[6] = {0};
    dla_scope_begin();
    dla_tensor *x = dla_full(0.5, DLA_F32, "SSCB", DLA_DIMS(4, 4, 1, 2));
    dla_tensor *t = dla_full(0.25, DLA_F32, "CB", DLA_DIMS(3, 2)), *out[1 + 6 + 2];
    dla_status st = dla_net_init(net, 1, &x);
    if (st == DLA_OK)
        st = dla_feval(model_loss, net, 2, (dla_tensor *[]){x, t}, 9, out);
    if (st == DLA_OK)
        st = dla_net_set_state(net, 2, out + 7);
    dla_tensor **params = st == DLA_OK ? dla_table_values(dla_net_learnables(net)) : NULL;
    for (int it = 1; st == DLA_OK && it <= 2; it++) {
        st = dla_sgdmupdate(6, params, out + 1, vel, 0.1, 0.9);
        if (st == DLA_OK)
            st = dla_adamupdate(6, params, out + 1, avg, sq, it, 0.01, 0.9, 0.999, 1e-8);
    }
    if (st == DLA_OK)
        st = digest_of(out[0], digest);
    for (int i = 0; st == DLA_OK && i < 6; i++)
        st = digest_of(params[i], digest);
    dla_scope_end();
    dla_optim_free(6, vel);
    dla_optim_free(6, avg);
    dla_optim_free(6, sq);
    dla_net_free(net);
    return st;
}

static dla_status accel_fn(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *h = dla_relu(dla_add(dla_mtimes(in[1], in[0]), dla_sin(in[0])));
    dla_tensor *l = dla_sum(dla_mul(h, dla_exp(dla_neg(h))), 0, NULL);
    out[0] = l;
    return dla_gradient(l, 2, in, out + 1);
}

/* An accelerated function: recorded on the first call, planned on the
 * second (the planning replay), run from its plan on the third; then its
 * trace replayed directly. */
static dla_status accelerated(double *digest)
{
    dla_accel *af = dla_accelerate(accel_fn, &(dla_accel_options){.name = "modelLoss"});
    if (!af)
        return dla_last_status();
    dla_scope_begin();
    dla_rng_seed(8);
    dla_tensor *in[2] = {dla_randn(DLA_F32, "", DLA_DIMS(4, 3)), dla_randn(DLA_F32, "", DLA_DIMS(4, 4))};
    dla_tensor *out[3];
    dla_status st = dla_tensor_status(in[1]);
    for (int call = 0; st == DLA_OK && call < 3; call++) {
        st = dla_accel_feval(af, NULL, 2, in, 3, out);
        for (int i = 0; st == DLA_OK && i < 3; i++)
            st = digest_of(out[i], digest);
    }
    dla_trace *tr = st == DLA_OK ? dla_accel_trace(af, 0) : NULL;
    if (st == DLA_OK && tr) {
        st = dla_trace_replay(tr, 2, in, 3, out);
        for (int i = 0; st == DLA_OK && i < 3; i++)
            st = digest_of(out[i], digest);
    }
    dla_trace_release(tr);
    dla_scope_end();
    dla_accel_free(af);
    return st;
}

/* A trace saved, loaded and replayed (and a load of the file alone). */
static dla_status trace_file(double *digest)
{
    dla_accel *af = dla_accelerate(accel_fn, NULL);
    if (!af)
        return dla_last_status();
    dla_scope_begin();
    dla_rng_seed(9);
    dla_tensor *in[2] = {dla_randn(DLA_F32, "", DLA_DIMS(4, 3)), dla_randn(DLA_F32, "", DLA_DIMS(4, 4))};
    dla_tensor *out[3];
    /* A call whose recording was refused memory runs fn itself (and
     * says OK): the next call records. Only one allocation is refused. */
    dla_status st = DLA_OK;
    for (int call = 0; st == DLA_OK && call < 2 && !dla_accel_occupancy(af); call++)
        st = dla_accel_feval(af, NULL, 2, in, 3, out);
    dla_trace *tr = st == DLA_OK ? dla_accel_trace(af, 0) : NULL, *back = NULL;
    if (st == DLA_OK && !tr)
        st = dla_last_status() != DLA_OK ? dla_last_status() : DLA_ERR_STATE;
    if (st == DLA_OK)
        st = dla_trace_save(tr, path_of("w.dlt"));
    if (st == DLA_OK)
        st = dla_trace_load(path_of("w.dlt"), &back);
    if (st == DLA_OK)
        st = dla_trace_replay(back, 2, in, 3, out);
    for (int i = 0; st == DLA_OK && i < 3; i++)
        st = digest_of(out[i], digest);
    dla_trace_release(back);
    dla_trace_release(tr);
    dla_scope_end();
    dla_accel_free(af);
    return st;
}

/* A network saved (over a saved file) and loaded back, then used. */
static dla_status net_file(double *digest)
{
    dla_net *net = small_net(), *back = NULL;
    if (!net)
        return dla_last_status();
    dla_scope_begin();
    dla_tensor *x = dla_full(0.5, DLA_F32, "SSCB", DLA_DIMS(4, 4, 1, 2)), *y = NULL;
    dla_status st = dla_net_init(net, 1, &x);
    if (st == DLA_OK)
        st = dla_net_save(net, path_of("n.safetensors"));
    if (st == DLA_OK)
        st = dla_net_load(path_of("n.safetensors"), &back);
    if (st == DLA_OK)
        st = dla_net_predict(back, 1, &x, 1, &y, NULL);
    if (st == DLA_OK)
        st = digest_of(y, digest);
    dla_scope_end();
    dla_net_free(back);
    dla_net_free(net);
    return st;
}

/* Loading alone, from a file written once (the file's reading paths
 * without the save's allocations in front of them). */
static dla_status net_load(double *digest)
{
    dla_net *back = NULL;
    dla_status st = dla_net_load(path_of("fixed.safetensors"), &back);
    for (int i = 0; st == DLA_OK && i < dla_net_learnable_count(back); i++)
        st = digest_of(dla_table_value(dla_net_learnables(back), i), digest);
    dla_net_free(back);
    return st;
}

/* The network a workflow works on without counting its making: made and
 * initialized once, outside the loop's count, into *net (the workflow's
 * static), and freed by the cleanup call (digest NULL). DLA_OK with *net
 * set to work on, or NULL after the cleanup; else the making's status. */
static dla_status held_small_net(dla_net **net, const double *digest)
{
    if (!*net) {
        *net = small_net();
        dla_scope_begin();
        dla_tensor *x = dla_full(0.5, DLA_F32, "SSCB", DLA_DIMS(4, 4, 1, 2));
        dla_status st = *net ? dla_net_init(*net, 1, &x) : DLA_ERR_OUT_OF_MEMORY;
        dla_scope_end();
        if (st != DLA_OK)
            return st;
    }
    if (!digest) {
        dla_net_free(*net);
        *net = NULL;
    }
    return DLA_OK;
}

/* Saving alone, every allocation of it refused in turn (net_file samples
 * them), then the file loaded: a save that says DLA_OK wrote a file that
 * loads. A refused growth of the buffer Jansson's json_dumps wrote the
 * factors text into dropped a key's bytes (Jansson does not check that
 * append), and the save went on: the file said "':' expected after an
 * object key" at every load. */
static dla_status net_save(double *digest)
{
    static dla_net *net;
    dla_status held = held_small_net(&net, digest);
    if (held != DLA_OK || !digest)
        return held;
    dla_status st = dla_net_save(net, path_of("s.safetensors"));
    if (st != DLA_OK)
        return st;
    /* The file is read with nothing refused, and uncounted: what the
     * save wrote. */
    long at = tu_fail_at, calls = tu_calls;
    tu_fail_at = 0;
    dla_net *back = NULL;
    st = dla_net_load(path_of("s.safetensors"), &back);
    for (int i = 0; st == DLA_OK && i < dla_net_learnable_count(back); i++)
        st = digest_of(dla_table_value(dla_net_learnables(back), i), digest);
    dla_net_free(back);
    tu_fail_at = at;
    tu_calls = calls;
    return st;
}

/* trainnet: four iterations of a small classifier with the accuracy
 * metric, validation, L2 regularization and gradient clipping, with sgdm
 * and with adam; then three of lbfgs over the whole batch. */
static dla_status trainnet(double *digest)
{
    static const char *solvers[] = {"sgdm", "adam", "lbfgs"};
    dla_status st = DLA_OK;
    for (int s = 0; s < 3 && st == DLA_OK; s++) {
        dla_rng_seed(7);
        dla_layer *l[] = {dla_fc_layer(4, NULL), dla_relu_layer(NULL), dla_fc_layer(2, NULL),
                          dla_softmax_layer(NULL)};
        dla_net *net = dla_net_create(4, l), *trained = NULL;
        if (!net)
            return dla_last_status();
        dla_scope_begin();
        float xs[3 * 16];
        int32_t ts[16];
        for (int i = 0; i < 16; i++) {
            for (int c = 0; c < 3; c++)
                xs[3 * i + c] = (float)((i * 7 + c * 3) % 5) - 2.0f;
            ts[i] = xs[3 * i] > 0;
        }
        dla_tensor *x = dla_tensor_from_host(xs, DLA_F32, "CB", DLA_DIMS(3, 16));
        dla_tensor *t = dla_tensor_from_host(ts, DLA_I32, "", DLA_DIMS(16, 1));
        dla_train_data d = {.predictors = x, .targets = t};
        dla_training_options o = {.solver = solvers[s], .verbose = -1, .max_epochs = 2,
                                  .mini_batch_size = 8, .shuffle = "never",
                                  .metrics = "accuracy", .validation_data = &d,
                                  .validation_frequency = 2, .gradient_threshold = 1.0};
        if (s == 2) /* full batch: 3 iterations, and none of the mini-batch options */
            o = (dla_training_options){.solver = "lbfgs", .verbose = -1, .max_iterations = 3,
                                       .metrics = "accuracy", .validation_data = &d,
                                       .validation_frequency = 2};
        dla_training_info *info = NULL;
        st = dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained, &info);
        for (int64_t i = 0; st == DLA_OK && i < info->iterations; i++)
            *digest += info->training_loss[i] + info->training_accuracy[i];
        if (st == DLA_OK)
            *digest += info->final_validation_loss + info->final_validation_accuracy;
        dla_training_info_free(info);
        dla_scope_end();
        dla_net_free(trained);
        dla_net_free(net);
    }
    return st;
}

/* L-BFGS: three dla_lbfgsupdate iterations of the small network (the
 * state's lists, each update's working block, the pairs, the line
 * search's points), the state read and freed. */
typedef struct lbfgs_job {
    dla_net *net;
    dla_tensor *x, *t;
} lbfgs_job;

static dla_status lbfgs_loss(void *ctx, int n, dla_tensor *const *p, int nout, dla_tensor **out)
{
    (void)n, (void)p;
    const lbfgs_job *j = ctx;
    dla_tensor *all[1 + 6 + 2]; /* model_loss also gives the new state */
    dla_status st = dla_feval(model_loss, j->net, 2, (dla_tensor *[]){j->x, j->t}, 9, all);
    memcpy(out, all, sizeof *out * (size_t)nout);
    return st;
}

static dla_status lbfgs(double *digest)
{
    dla_net *net = small_net();
    if (!net)
        return dla_last_status();
    dla_lbfgs_state *s = dla_lbfgs_state_create(NULL);
    dla_status st = s ? DLA_OK : dla_last_status();
    dla_scope_begin();
    lbfgs_job j = {net, dla_full(0.5, DLA_F32, "SSCB", DLA_DIMS(4, 4, 1, 2)),
                   dla_full(0.25, DLA_F32, "CB", DLA_DIMS(3, 2))};
    if (st == DLA_OK)
        st = dla_net_init(net, 1, &j.x);
    dla_tensor **params = st == DLA_OK ? dla_table_values(dla_net_learnables(net)) : NULL;
    for (int it = 0; st == DLA_OK && it < 3; it++)
        st = dla_lbfgsupdate(6, params, lbfgs_loss, &j, s);
    dla_lbfgs_info in;
    if (st == DLA_OK && (st = dla_lbfgs_state_info(s, &in)) == DLA_OK)
        *digest += in.loss + in.step_norm + in.history_length + (double)in.evaluations;
    for (int i = 0; st == DLA_OK && i < 6; i++)
        st = digest_of(params[i], digest);
    dla_scope_end();
    dla_lbfgs_state_free(s);
    dla_net_free(net);
    return st;
}

/* The regressions below are short enough to refuse every allocation in
 * make check too. */

/* dla_net_copy alone: it freed the layers of an array it had been refused,
 * and an example input refused memory made a format error. */
static dla_status net_copy(double *digest)
{
    static dla_net *net;
    dla_status held = held_small_net(&net, digest);
    if (held != DLA_OK || !digest)
        return held;
    dla_net *c = dla_net_copy(net);
    if (!c)
        return dla_last_status();
    dla_status st = DLA_OK;
    for (int i = 0; st == DLA_OK && i < dla_net_learnable_count(c); i++)
        st = digest_of(dla_table_value(dla_net_learnables(c), i), digest);
    dla_net_free(c);
    return st;
}

/* Input normalization statistics from data: a sum refused memory was
 * reported as data of the wrong size (DLA_ERR_SHAPE). */
static dla_status input_statistics(double *digest)
{
    dla_layer *l[] = {
        dla_image_input_layer(4, 4, 2, &(dla_image_input_options){.name = "in",
                                                                 .normalization = "zscore"}),
        dla_fc_layer(2, &(dla_fc_layer_options){.weights_initializer = "ones"}),
    };
    dla_net *net = dla_net_create(2, l);
    if (!net)
        return dla_last_status();
    dla_scope_begin();
    dla_rng_seed(12);
    dla_tensor *x = dla_rand(DLA_F32, "SSCB", DLA_DIMS(4, 4, 2, 3));
    dla_status st = dla_tensor_status(x);
    if (st == DLA_OK)
        st = dla_net_set_input_statistics(net, "in", 1, &x);
    if (st == DLA_OK)
        st = digest_of(dla_net_get(net, "in", "Mean"), digest);
    if (st == DLA_OK)
        st = digest_of(dla_net_get(net, "in", "StandardDeviation"), digest);
    dla_scope_end();
    dla_net_free(net);
    return st;
}

/* One trainnet iteration: setup returned before clearing the optimizer's
 * state arrays (and teardown freed garbage), and a metric refused memory
 * became a NaN with status OK. */
static dla_status trainnet_step(double *digest)
{
    dla_rng_seed(7);
    dla_layer *l[] = {dla_fc_layer(2, NULL), dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(2, l), *trained = NULL;
    if (!net)
        return dla_last_status();
    dla_scope_begin();
    static const float xs[8] = {1, -1, 2, 0, -1, 1, 0, -2};
    static const int32_t ts[4] = {0, 1, 0, 1};
    dla_tensor *x = dla_tensor_from_host(xs, DLA_F32, "CB", DLA_DIMS(2, 4));
    dla_tensor *t = dla_tensor_from_host(ts, DLA_I32, "", DLA_DIMS(4, 1));
    dla_train_data d = {.predictors = x, .targets = t};
    dla_training_options o = {.solver = "adam", .verbose = -1, .max_epochs = 1,
                              .mini_batch_size = 4, .shuffle = "never", .metrics = "accuracy,rmse"};
    dla_training_info *info = NULL;
    dla_status st = dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                                 &info);
    if (st == DLA_OK)
        *digest += info->training_loss[0] + info->training_accuracy[0] + info->training_rmse[0];
    dla_training_info_free(info);
    dla_scope_end();
    dla_net_free(trained);
    dla_net_free(net);
    return st;
}

/* -------------------------------------------------------------- the loop */

static const workflow workflows[] = {
    {"tensors_scoped", tensors_scoped, 1},
    {"tensors_unscoped", tensors_unscoped, 1},
    {"network", network, 0},
    {"gradient_and_update", gradient_and_update, 0},
    {"accelerated", accelerated, 1},
    {"trace_file", trace_file, 1},
    {"net_file", net_file, 0},
    {"net_load", net_load, 1},
    {"trainnet", trainnet, 0},
    {"net_copy", net_copy, 1},
    {"input_statistics", input_statistics, 1},
    {"trainnet_step", trainnet_step, 1},
    {"lbfgs", lbfgs, 1},
    {"net_save", net_save, 1},
};

#define WORKFLOW_TEST(i, name)                                                                     \
    static void test_##name##_survives_every_refused_allocation(void **state)                     \
    {                                                                                              \
        (void)state;                                                                               \
        fail_every_allocation_in_turn(&workflows[i]);                                              \
    }
WORKFLOW_TEST(0, tensors_scoped)
WORKFLOW_TEST(1, tensors_unscoped)
WORKFLOW_TEST(2, network)
WORKFLOW_TEST(3, gradient_and_update)
WORKFLOW_TEST(4, accelerated)
WORKFLOW_TEST(5, trace_file)
WORKFLOW_TEST(6, net_file)
WORKFLOW_TEST(7, net_load)
WORKFLOW_TEST(8, trainnet)
WORKFLOW_TEST(9, net_copy)
WORKFLOW_TEST(10, input_statistics)
WORKFLOW_TEST(11, trainnet_step)
WORKFLOW_TEST(12, lbfgs)
WORKFLOW_TEST(13, net_save)

static int write_fixed_network(void)
{
    dla_net *net = small_net();
    dla_scope_begin();
    dla_tensor *x = dla_full(0.5, DLA_F32, "SSCB", DLA_DIMS(4, 4, 1, 2));
    dla_status st = net ? dla_net_init(net, 1, &x) : DLA_ERR_OUT_OF_MEMORY;
    if (st == DLA_OK)
        st = dla_net_save(net, path_of("fixed.safetensors"));
    dla_scope_end();
    dla_net_free(net);
    return st == DLA_OK;
}

static int cleanup(void **state)
{
    (void)state;
    const char *names[] = {"w.dlt", "n.safetensors", "fixed.safetensors", "s.safetensors"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(path_of(names[i]));
    rmdir(dir);
    net_copy(NULL);
    net_save(NULL);
    print_message("# all workflows: %ld runs with a refused allocation, %ld recovered, %ld leaks, "
                  "%ld wrong statuses\n", total_runs, total_recovered, total_leaks, total_wrong);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--list")) {
        for (size_t i = 0; i < sizeof workflows / sizeof workflows[0]; i++)
            printf("%s\n", workflows[i].name);
        return 0;
    }
    dla_set_allocator(tu_alloc, NULL);
    snprintf(dir, sizeof dir, "%s/dla-allocfail-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir) || !write_fixed_network())
        return 1;
    const struct CMUnitTest tests[] = {
        TU_TEST(test_tensors_scoped_survives_every_refused_allocation),
        TU_TEST(test_tensors_unscoped_survives_every_refused_allocation),
        TU_TEST(test_network_survives_every_refused_allocation),
        TU_TEST(test_gradient_and_update_survives_every_refused_allocation),
        TU_TEST(test_accelerated_survives_every_refused_allocation),
        TU_TEST(test_trace_file_survives_every_refused_allocation),
        TU_TEST(test_net_file_survives_every_refused_allocation),
        TU_TEST(test_net_load_survives_every_refused_allocation),
        TU_TEST(test_trainnet_survives_every_refused_allocation),
        TU_TEST(test_net_copy_survives_every_refused_allocation),
        TU_TEST(test_input_statistics_survives_every_refused_allocation),
        TU_TEST(test_trainnet_step_survives_every_refused_allocation),
        TU_TEST(test_lbfgs_survives_every_refused_allocation),
        TU_TEST(test_net_save_survives_every_refused_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, cleanup);
}
