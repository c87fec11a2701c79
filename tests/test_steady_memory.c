/*
 * test_steady_memory.c - the same step many times, as a training run of
 * hours does, holds a steady count of live host blocks: nothing of a step
 * stays behind once the step is over (the leak checks at exit cannot see a
 * cache or a list that grows with the steps and is freed at the end).
 *
 * Every step runs a few times first (traces recorded, plugins loaded, the
 * quarantine of released handles filled), then many more; the count of
 * blocks live through the library's allocation hook must not rise by more
 * than a small slack over them (background threads hold a batch or two
 * made ahead, which varies), while a leak of one block a step would rise
 * by hundreds. Covered: a custom training loop (dla_feval, dla_gradient,
 * optimizers' state), dla_accel_feval (hits, misses with new shapes,
 * eviction from a small cache, CheckMode "tolerance"), forward and predict
 * with and without outputs, an LSTM's state carried by dla_net_set_state,
 * failing ops and calls (error tensors, messages), mini-batch queues with
 * background dispatch reset every epoch, trainnet over many epochs with
 * validation and an OutputFcn, dla_ode45, and threads that run ops and
 * end. Measured on 2026-11-29: every one of these is flat to the block.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include <pthread.h>

/* Warm-up steps, then steps measured; a leak of a block per step would
 * rise by STEPS, far above SLACK. */
#define WARM 20
#define STEPS 400
#define SLACK 16

static long live(void) { return atomic_load(&tu_atomic_live); }

/* Runs step WARM times, then STEPS times, and fails naming what when the
 * live blocks rose by more than SLACK over the STEPS. */
static void steady(const char *what, void (*step)(long), long warm, long steps)
{
    for (long i = 0; i < warm; i++)
        step(i);
    const long before = live();
    for (long i = warm; i < warm + steps; i++)
        step(i);
    const long after = live();
    if (after - before > SLACK)
        fail_msg("%s: %ld blocks live after %ld more steps, %ld before (%+.2f a step)", what,
                 after, steps, before, (double)(after - before) / (double)steps);
}

/* ---------------------------------------------------------- the model */

static dla_net *net;
static int nl;
static dla_tensor *xb, *tb, *vel[8], *avg[8], *avgsq[8], *rms[8];

static dla_status net_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_net *n = ctx;
    dla_tensor *y;
    dla_status st = dla_net_forward(n, 1, &in[0], 1, &y, NULL, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_crossentropy(y, in[1], NULL);
    return dla_net_gradient(n, out[0], out + 1);
}

static int setup(void **state)
{
    (void)state;
    dla_rng_seed(3);
    dla_layer *layers[] = {dla_feature_input_layer(2, NULL), dla_fc_layer(8, NULL),
                           dla_relu_layer(NULL),
                           dla_fc_layer(3, &(dla_fc_layer_options){.name = "fc2"}),
                           dla_softmax_layer(NULL)};
    net = dla_net_create(5, layers);
    if (!net || dla_net_init(net, 0, NULL) != DLA_OK)
        return -1;
    nl = dla_net_learnable_count(net);
    xb = dla_randn(DLA_F32, "CB", DLA_DIMS(2, 16));
    dla_tensor *r = dla_randn(DLA_F32, "CB", DLA_DIMS(3, 16));
    tb = dla_softmax(r);
    dla_tensor_release(r);
    return nl <= 8 && dla_tensor_status(tb) == DLA_OK ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    dla_optim_free(nl, vel);
    dla_optim_free(nl, avg);
    dla_optim_free(nl, avgsq);
    dla_optim_free(nl, rms);
    dla_tensor_release(xb);
    dla_tensor_release(tb);
    dla_net_free(net);
    return 0;
}

/* ------------------------------------------------ custom training loops */

static void eager_sgdm_step(long i)
{
    (void)i;
    dla_scope_begin();
    dla_tensor *o[9];
    assert_int_equal(dla_feval(net_loss, net, 2, (dla_tensor *[]){xb, tb}, 1 + nl, o), DLA_OK);
    assert_int_equal(dla_sgdmupdate(nl, dla_table_values(dla_net_learnables(net)), o + 1, vel,
                                    0.01, 0.9),
                     DLA_OK);
    dla_scope_end();
}

static void eager_adam_step(long i)
{
    dla_scope_begin();
    dla_tensor *o[9];
    assert_int_equal(dla_feval(net_loss, net, 2, (dla_tensor *[]){xb, tb}, 1 + nl, o), DLA_OK);
    assert_int_equal(dla_adamupdate(nl, dla_table_values(dla_net_learnables(net)), o + 1, avg,
                                    avgsq, (int)i + 1, 0.001, 0.9, 0.999, 1e-8),
                     DLA_OK);
    dla_scope_end();
}

static void a_custom_training_loop_holds_steady(void **state)
{
    (void)state;
    steady("dla_feval + sgdmupdate", eager_sgdm_step, WARM, STEPS);
    steady("dla_feval + adamupdate", eager_adam_step, WARM, STEPS);
}

/* ------------------------------------------------ accelerated functions */

static dla_accel *af;

static void accel_hit_step(long i)
{
    (void)i;
    dla_scope_begin();
    dla_tensor *o[9];
    assert_int_equal(dla_accel_feval(af, net, 2, (dla_tensor *[]){xb, tb}, 1 + nl, o), DLA_OK);
    assert_int_equal(dla_rmspropupdate(nl, dla_table_values(dla_net_learnables(net)), o + 1,
                                       rms, 0.001, 0.9, 1e-8),
                     DLA_OK);
    dla_scope_end();
}

/* Seven batch sizes in turn through a cache of three: every call misses,
 * records and evicts. */
static void accel_evict_step(long i)
{
    dla_scope_begin();
    const int64_t b = 1 + i % 7;
    dla_tensor *x = dla_randn(DLA_F32, "CB", DLA_DIMS(2, b));
    dla_tensor *t = dla_softmax(dla_randn(DLA_F32, "CB", DLA_DIMS(3, b)));
    dla_tensor *o[9];
    assert_int_equal(dla_accel_feval(af, net, 2, (dla_tensor *[]){x, t}, 1 + nl, o), DLA_OK);
    dla_scope_end();
}

static void accelerated_functions_hold_steady(void **state)
{
    (void)state;
    af = dla_accelerate(net_loss, &(dla_accel_options){.name = "modelLoss",
                                                        .ctx_kind = dla_net_accel_kind()});
    assert_non_null(af);
    steady("dla_accel_feval hits", accel_hit_step, WARM, STEPS);
    assert_int_equal(dla_accel_set_check_mode(af, "tolerance"), DLA_OK);
    steady("dla_accel_feval hits with CheckMode tolerance", accel_hit_step, WARM, STEPS);
    assert_int_equal(dla_accel_set_check_mode(af, "none"), DLA_OK);
    assert_int_equal(dla_accel_set_cache_size(af, 3), DLA_OK);
    steady("dla_accel_feval misses evicting from CacheSize 3", accel_evict_step, WARM, STEPS);
    assert_int_equal(dla_accel_occupancy(af), 3);
    dla_accel_free(af);
    af = NULL;
}

/* ------------------------------------------------------ forward, predict */

static const char *const fc2[] = {"fc2"};

static void forward_step(long i)
{
    dla_scope_begin();
    dla_tensor *y;
    const dla_net_forward_options *o =
        i % 2 ? &(dla_net_forward_options){.outputs = fc2} : NULL;
    assert_int_equal(dla_net_forward(net, 1, &xb, 1, &y, NULL, o), DLA_OK);
    assert_int_equal(dla_net_predict(net, 1, &xb, 1, &y, o), DLA_OK);
    dla_scope_end();
    /* Without a scope: the caller releases. */
    assert_int_equal(dla_net_predict(net, 1, &xb, 1, &y, o), DLA_OK);
    dla_tensor_release(y);
}

static dla_net *lstm;
static dla_tensor *step_in;

static void lstm_state_step(long i)
{
    dla_scope_begin();
    dla_tensor *y, *st[2];
    if (i % 2)
        assert_int_equal(dla_net_predict_state(lstm, 1, &step_in, 1, &y, st, NULL), DLA_OK);
    else
        assert_int_equal(dla_net_forward(lstm, 1, &step_in, 1, &y, st, NULL), DLA_OK);
    assert_int_equal(dla_net_set_state(lstm, 2, st), DLA_OK);
    if (i % 50 == 49)
        assert_int_equal(dla_net_reset_state(lstm), DLA_OK);
    dla_scope_end();
}

static void forward_predict_and_carried_state_hold_steady(void **state)
{
    (void)state;
    steady("dla_net_forward / predict, with and without outputs", forward_step, WARM, STEPS);
    dla_layer *layers[] = {dla_sequence_input_layer(3, NULL), dla_lstm_layer(5, NULL),
                           dla_fc_layer(2, NULL)};
    lstm = dla_net_create(3, layers);
    assert_non_null(lstm);
    assert_int_equal(dla_net_init(lstm, 0, NULL), DLA_OK);
    assert_int_equal(dla_net_state_count(lstm), 2);
    step_in = dla_randn(DLA_F32, "CBT", DLA_DIMS(3, 1, 1));
    steady("an LSTM's state carried by dla_net_set_state", lstm_state_step, WARM, STEPS);
    dla_tensor_release(step_in);
    dla_net_free(lstm);
}

/* ----------------------------------------------------------- error paths */

static dla_tensor *e3x4, *e5x6;

static void failing_step(long i)
{
    dla_scope_begin();
    dla_tensor *c = dla_add(e3x4, e5x6);
    assert_int_not_equal(dla_tensor_status(dla_exp(c)), DLA_OK);
    dla_tensor *o[9];
    assert_int_not_equal(dla_feval(net_loss, net, 2, (dla_tensor *[]){e3x4, tb}, 1 + nl, o),
                         DLA_OK);
    assert_int_not_equal(dla_accel_feval(af, net, 2, (dla_tensor *[]){e3x4, tb}, 1 + nl, o),
                         DLA_OK);
    dla_tensor *y;
    assert_int_not_equal(dla_net_predict(net, 1, &e5x6, 1, &y, NULL), DLA_OK);
    dla_scope_end();
    dla_tensor *d = dla_add(e3x4, e5x6), *e = dla_exp(d);
    dla_tensor_release(d);
    dla_tensor_release(e);
    dla_set_error(DLA_ERR_STATE, "a user's error, step %ld", i);
}

static void failing_calls_hold_steady(void **state)
{
    (void)state;
    e3x4 = dla_ones(DLA_F32, "", DLA_DIMS(3, 4));
    e5x6 = dla_ones(DLA_F32, "", DLA_DIMS(5, 6));
    af = dla_accelerate(net_loss, &(dla_accel_options){.ctx_kind = dla_net_accel_kind()});
    assert_non_null(af);
    steady("failing ops, dla_feval, dla_accel_feval and predict", failing_step, WARM, STEPS);
    dla_accel_free(af);
    af = NULL;
    dla_tensor_release(e3x4);
    dla_tensor_release(e5x6);
}

/* --------------------------------------------------------------- data */

static dla_mbq *queue;
static int queue_outputs;

static void epoch_step(long i)
{
    (void)i;
    dla_mbq_shuffle(queue);
    while (dla_mbq_hasdata(queue)) {
        dla_scope_begin();
        dla_tensor *o[2];
        assert_int_equal(dla_mbq_next(queue, queue_outputs, o), DLA_OK);
        dla_scope_end();
    }
}

static void reset_mid_epoch_step(long i)
{
    (void)i;
    dla_mbq_reset(queue);
    dla_scope_begin();
    dla_tensor *o[2];
    assert_int_equal(dla_mbq_next(queue, queue_outputs, o), DLA_OK);
    dla_scope_end();
}

static dla_status double_it(void *ctx, int n, dla_tensor **outputs)
{
    (void)ctx, (void)n;
    outputs[0] = dla_add(outputs[0], outputs[0]);
    return DLA_OK;
}

static void minibatch_queues_hold_steady_over_epochs(void **state)
{
    (void)state;
    dla_tensor *x = dla_randn(DLA_F32, "CB", DLA_DIMS(2, 40));
    dla_tensor *t = dla_randn(DLA_F32, "CB", DLA_DIMS(1, 40));
    for (int bg = 0; bg < 2; bg++) {
        const dla_mbq_options o = {.mini_batch_size = 7, .dispatch_in_background = bg,
                                   .seed = 5, .mini_batch_fcn = double_it};
        queue_outputs = 2;
        assert_int_equal(dla_mbq_create(2, (dla_mbq_input[]){{.tensor = x}, {.tensor = t}}, &o,
                                        &queue),
                         DLA_OK);
        steady(bg ? "mini-batch queue epochs, background" : "mini-batch queue epochs",
               epoch_step, WARM, STEPS / 4);
        steady(bg ? "mini-batch queue reset mid-epoch, background"
                  : "mini-batch queue reset mid-epoch",
               reset_mid_epoch_step, WARM, STEPS);
        dla_mbq_free(queue);
    }
    /* A combined datastore, read by observation on the dispatch thread. */
    dla_datastore *dx, *dt, *both;
    assert_int_equal(dla_array_datastore(x, NULL, &dx), DLA_OK);
    assert_int_equal(dla_array_datastore(t, NULL, &dt), DLA_OK);
    assert_int_equal(dla_combine(2, (dla_datastore *[]){dx, dt}, &both), DLA_OK);
    const dla_mbq_options o = {.mini_batch_size = 7, .dispatch_in_background = 1, .seed = 5};
    assert_int_equal(dla_mbq_create(1, (dla_mbq_input[]){{.datastore = both}}, &o, &queue),
                     DLA_OK);
    steady("mini-batch queue over a datastore, background", epoch_step, WARM, STEPS / 4);
    dla_mbq_free(queue);
    dla_datastore_free(both);
    dla_datastore_free(dx);
    dla_datastore_free(dt);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

/* ------------------------------------------------------------ trainnet */

/* The training history (and the chart's points) grow with the
 * iterations by design, as MATLAB's TrainingHistory does: in a few
 * arrays that grow in place, so their count of blocks stays. */
#define EPOCHS 200
static long at_iteration[2];

static int watch(void *ctx, const dla_training_state *s)
{
    (void)ctx;
    if (strcmp(s->stage, "iteration") == 0 && s->iteration == WARM)
        at_iteration[0] = live();
    if (strcmp(s->stage, "iteration") == 0 && s->iteration == 2 * EPOCHS)
        at_iteration[1] = live();
    return 0;
}

static void trainnet_holds_steady_over_many_epochs(void **state)
{
    (void)state;
    dla_tensor *x = dla_randn(DLA_F32, "CB", DLA_DIMS(2, 8));
    const int32_t classes[8] = {0, 1, 2, 0, 1, 2, 0, 1};
    dla_tensor *t = dla_tensor_from_host(classes, DLA_I32, "", DLA_DIMS(8));
    dla_train_data d = {.predictors = x, .targets = t};
    FILE *sink = fopen("/dev/null", "w");
    assert_non_null(sink);
    /* Two iterations an epoch: an epoch's own work (shuffle, chart, the
     * progress line) comes every other iteration. */
    dla_training_options o = {.solver = "adam", .max_epochs = EPOCHS, .mini_batch_size = 4,
                              .shuffle = "every-epoch", .validation_data = &d,
                              .validation_frequency = 3, .metrics = "accuracy",
                              .output_network = "best-validation", .verbose = 1,
                              .output = sink, .output_fn = watch, .dispatch_in_background = 1};
    dla_net *trained = NULL;
    dla_training_info *info = NULL;
    assert_int_equal(dla_trainnet(&d, net, &(dla_train_loss){.name = "crossentropy"}, &o,
                                  &trained, &info),
                     DLA_OK);
    assert_int_equal(info->iterations, 2 * EPOCHS);
    if (at_iteration[1] - at_iteration[0] > SLACK)
        fail_msg("trainnet: %ld blocks live at iteration %d, %ld at iteration %d", at_iteration[1],
                 2 * EPOCHS, at_iteration[0], WARM);
    dla_training_info_free(info);
    dla_net_free(trained);
    fclose(sink);
    dla_tensor_release(x);
    dla_tensor_release(t);
}

/* ------------------------------------------------------------ dla_ode45 */

static dla_tensor *ode_a, *ode_y0;

static dla_tensor *spiral(double t, dla_tensor *y, int ntheta, dla_tensor *const *theta,
                          void *ctx)
{
    (void)t, (void)ntheta, (void)ctx;
    return dla_mtimes(theta[0], y);
}

static dla_status ode_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    const char *mode = ctx;
    dla_tensor *y = dla_ode45(spiral, NULL, 3, (double[]){0, 0.5, 1}, in[1], 1, &in[0],
                              &(dla_ode_options){.gradient_mode = mode});
    out[0] = dla_sum(dla_square(y), 0, NULL);
    return dla_gradient(out[0], 1, &in[0], &out[1]);
}

static void ode_step(long i)
{
    dla_scope_begin();
    dla_tensor *o[2];
    assert_int_equal(dla_feval(ode_loss, (void *)(i % 2 ? "adjoint" : "direct"), 2,
                               (dla_tensor *[]){ode_a, ode_y0}, 2, o),
                     DLA_OK);
    dla_scope_end();
}

static void ode45_holds_steady(void **state)
{
    (void)state;
    ode_a = dla_tensor_from_host((float[]){-0.1f, -1, 1, -0.1f}, DLA_F32, "", DLA_DIMS(2, 2));
    ode_y0 = dla_tensor_from_host((float[]){1, 0}, DLA_F32, "", DLA_DIMS(2, 1));
    steady("dla_ode45 with its gradient, direct and adjoint", ode_step, WARM, STEPS / 4);
    dla_tensor_release(ode_a);
    dla_tensor_release(ode_y0);
}

/* ------------------------------------------------------------- threads */

static void *thread_body(void *arg)
{
    (void)arg;
    dla_scope_begin();
    dla_tensor *y = dla_sum(dla_exp(dla_add(xb, xb)), 0, NULL);
    (void)dla_tensor_item(y, 0);
    dla_scope_end();
    return NULL;
}

static void thread_step(long i)
{
    (void)i;
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, thread_body, NULL), 0);
    assert_int_equal(pthread_join(th, NULL), 0);
}

static void threads_that_run_ops_and_end_hold_steady(void **state)
{
    (void)state;
    steady("a thread per step that runs ops and ends", thread_step, WARM, STEPS / 2);
}

int main(void)
{
    dla_set_allocator(tu_atomic_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(a_custom_training_loop_holds_steady),
        TU_TEST(accelerated_functions_hold_steady),
        TU_TEST(forward_predict_and_carried_state_hold_steady),
        TU_TEST(failing_calls_hold_steady),
        TU_TEST(minibatch_queues_hold_steady_over_epochs),
        TU_TEST(trainnet_holds_steady_over_many_epochs),
        TU_TEST(ode45_holds_steady),
        TU_TEST(threads_that_run_ops_and_end_hold_steady),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
