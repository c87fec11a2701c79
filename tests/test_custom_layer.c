/*
 * test_custom_layer.c - layer types of the user's own (issue 18): the
 * registry, layers of a registered type in sequences and graphs, the
 * summary, forward and predict (accelerated and eager, equal), gradients
 * against finite differences (the MATLAB Answers page's layer, in both of
 * its input layouts), a backward of the type's own, state, trainnet, save
 * and load with properties, loading a network whose type is not
 * registered, and errors that name the layer.
 */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"
#include "gradcheck.h"
#include "tu_assert.h"
#include "../examples/slice_diff_layer.h"

#include <dlaccel.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

static const char *path(const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

/* -------------------------------------------------------- the test types */

/* scale: y = x .* Scale (a learnable scalar), with or without a backward
 * of its own. backward_calls counts the own backward's calls; the
 * "scaleWrong" type's backward doubles the true gradients, so a test can
 * tell whose gradient dla_gradient took. */
static int backward_calls;

static dla_status scale_init(const dla_layer *l, dla_layer_init *init, int nx, dla_tensor *const *x)
{
    (void)l, (void)nx, (void)x;
    return dla_layer_add_value(init, "Scale", 0,
                               dla_affine(dla_ones(dla_layer_init_dtype(init), "", DLA_DIMS(1, 1)),
                                          0.0, 1.5));
}

static dla_status scale_predict(dla_layer_io *io)
{
    io->y = dla_mul(io->x[0], io->learnables[0]);
    return dla_tensor_status(io->y);
}

static dla_status scale_backward_k(const dla_layer_io *io, dla_tensor *dy, dla_tensor **dx,
                                   dla_tensor **dl, double k)
{
    backward_calls++;
    dx[0] = dla_affine(dla_mul(dy, io->learnables[0]), k, 0);
    dl[0] = dla_reshape(dla_affine(dla_sum(dla_mul(dy, io->x[0]), 0, NULL), k, 0), "",
                        DLA_DIMS(1, 1));
    return DLA_OK;
}

static dla_status scale_backward(const dla_layer_io *io, dla_tensor *dy, dla_tensor **dx,
                                 dla_tensor **dl)
{
    return scale_backward_k(io, dy, dx, dl, 1);
}

static dla_status scale_backward_wrong(const dla_layer_io *io, dla_tensor *dy, dla_tensor **dx,
                                       dla_tensor **dl)
{
    return scale_backward_k(io, dy, dx, dl, 2);
}

static const dla_layer_type scale_auto = {
    .type = "scaleAuto", .initialize = scale_init, .predict = scale_predict,
};
static const dla_layer_type scale_own = {
    .type = "scaleOwn", .initialize = scale_init, .predict = scale_predict,
    .backward = scale_backward,
};
static const dla_layer_type scale_wrong = {
    .type = "scaleWrong", .initialize = scale_init, .predict = scale_predict,
    .backward = scale_backward_wrong,
};

/* scaleNull: y = x .* Scale, whose own backward gives Scale a zero
 * gradient as NULL (dla_layer_type.backward), and the input one too
 * when its property StopInput is nonzero. */
static const dla_layer_property scale_null_props[] = {{"StopInput", 0}};

static dla_status scale_null_backward(const dla_layer_io *io, dla_tensor *dy, dla_tensor **dx,
                                      dla_tensor **dl)
{
    dx[0] = io->properties[0] ? NULL : dla_mul(dy, io->learnables[0]);
    dl[0] = NULL;
    return DLA_OK;
}

static const dla_layer_type scale_null = {
    .type = "scaleNull", .nproperties = 1, .properties = scale_null_props,
    .initialize = scale_init, .predict = scale_predict, .backward = scale_null_backward,
};

/* weightedSum: two inputs, y = Alpha .* x1 + x2 (a learnable per channel
 * of x1's "C" dim, shaped like batch normalization's 1x1xC). */
static dla_status wsum_init(const dla_layer *l, dla_layer_init *init, int nx, dla_tensor *const *x)
{
    (void)l;
    if (nx != 2)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "expected 2 inputs, got %d", nx);
    return dla_layer_add_learnable(init, "Alpha", DLA_DIMS(1, 1, dla_tensor_dim(x[0], 3)),
                                   "ones", 0, 0);
}

static dla_status wsum_predict(dla_layer_io *io)
{
    io->y = dla_add(dla_mul(io->x[0], io->learnables[0]), io->x[1]);
    return dla_tensor_status(io->y);
}

static const dla_layer_type wsum_type = {
    .type = "weightedSum", .description = "Weighted Sum", .num_inputs = 2,
    .initialize = wsum_init, .predict = wsum_predict,
};

/* runningMean: state Mean (1x1), forward returns the batch mean blended
 * in with its Momentum property; predict subtracts the stored mean. Its
 * forward is training-only behaviour: it also scales by Gain. */
static const dla_layer_property rmean_props[] = {{"Momentum", 0.5}, {"Gain", 1}};

static dla_status rmean_init(const dla_layer *l, dla_layer_init *init, int nx, dla_tensor *const *x)
{
    (void)l, (void)nx, (void)x;
    return dla_layer_add_state(init, "Mean", DLA_DIMS(1, 1), "zeros");
}

static dla_status rmean_predict(dla_layer_io *io)
{
    io->y = dla_sub(io->x[0], io->state[0]);
    return dla_tensor_status(io->y);
}

static dla_status rmean_forward(dla_layer_io *io)
{
    double m = io->properties[0];
    dla_tensor *mean = dla_reshape(dla_mean(io->x[0], 0, NULL), "", DLA_DIMS(1, 1));
    io->new_state[0] = dla_add(dla_affine(io->state[0], 1 - m, 0), dla_affine(mean, m, 0));
    io->y = dla_affine(dla_sub(io->x[0], io->state[0]), io->properties[1], 0);
    return dla_tensor_status(io->y);
}

static const dla_layer_type rmean_type = {
    .type = "runningMean", .nproperties = 2, .properties = rmean_props,
    .initialize = rmean_init, .predict = rmean_predict, .forward = rmean_forward,
};

/* The same with a backward of its own (dX = Gain .* dY in training, dY in
 * predict), and a variant without forward, whose state passes through a
 * training run untouched. */
static dla_status rmean_backward(const dla_layer_io *io, dla_tensor *dy, dla_tensor **dx,
                                 dla_tensor **dl)
{
    (void)dl;
    backward_calls++;
    dx[0] = io->training ? dla_affine(dy, io->properties[1], 0) : dy;
    return DLA_OK;
}

/* A forward whose new state is an error tensor (dims that do not fit). */
static dla_status bad_state_forward(dla_layer_io *io)
{
    io->new_state[0] = dla_add(dla_zeros(DLA_F32, "", DLA_DIMS(2, 3)),
                               dla_zeros(DLA_F32, "", DLA_DIMS(3, 5)));
    io->y = dla_affine(io->x[0], 1, 0);
    return DLA_OK;
}

static const dla_layer_type bad_state_type = {
    .type = "badState", .initialize = rmean_init, .predict = rmean_predict,
    .forward = bad_state_forward,
};

static const dla_layer_type rmean_own_type = {
    .type = "runningMeanOwn", .nproperties = 2, .properties = rmean_props,
    .initialize = rmean_init, .predict = rmean_predict, .forward = rmean_forward,
    .backward = rmean_backward,
};

static const dla_layer_type rmean_predict_only_type = {
    .type = "runningMeanPredict", .nproperties = 2, .properties = rmean_props,
    .initialize = rmean_init, .predict = rmean_predict, .backward = rmean_backward,
};

/* chScale: y = x .* Alpha, Alpha 1x1xC; its backward's dAlpha is what
 * dla_sum over dims 1, 2 and 4 gives, 1x1xCx1: trailing ones aside, the
 * learnable's dims (dla_gradient refused it as 1x1xCx1 for 1x1xC). */
static dla_status ch_init(const dla_layer *l, dla_layer_init *init, int nx, dla_tensor *const *x)
{
    (void)l, (void)nx;
    return dla_layer_add_learnable(init, "Alpha", DLA_DIMS(1, 1, dla_tensor_dim(x[0], 3)), "ones",
                                   0, 0);
}

static dla_status ch_predict(dla_layer_io *io)
{
    io->y = dla_mul(io->x[0], io->learnables[0]);
    return dla_tensor_status(io->y);
}

static dla_status ch_backward(const dla_layer_io *io, dla_tensor *dy, dla_tensor **dx,
                              dla_tensor **dl)
{
    dx[0] = dla_mul(dy, io->learnables[0]);
    dl[0] = dla_sum(dla_mul(dy, io->x[0]), DLA_DIMS(1, 2, 4));
    return DLA_OK;
}

static const dla_layer_type ch_scale_type = {
    .type = "chScale", .initialize = ch_init, .predict = ch_predict, .backward = ch_backward};

/* fans: its initialize tries fans and an initializer that do not fit,
 * keeping what each call said, then declares a good learnable. */
static dla_status fans_said[4];
static char fans_msg[4][300];

static dla_status fans_init(const dla_layer *l, dla_layer_init *init, int nx, dla_tensor *const *x)
{
    (void)l, (void)nx, (void)x;
    const double bad[3][2] = {{-2, 0}, {NAN, 1}, {3, INFINITY}};
    for (int k = 0; k < 3; k++) {
        fans_said[k] = dla_layer_add_learnable(init, "W", DLA_DIMS(2, 1), k ? "glorot" : "he",
                                               bad[k][0], bad[k][1]);
        snprintf(fans_msg[k], sizeof fans_msg[k], "%s", dla_last_error());
    }
    fans_said[3] = dla_layer_add_learnable(init, "W", DLA_DIMS(2, 2, 2), "orthogonal", 0, 0);
    snprintf(fans_msg[3], sizeof fans_msg[3], "%s", dla_last_error());
    return dla_layer_add_learnable(init, "W", DLA_DIMS(2, 1), "glorot", 0, 0);
}

static const dla_layer_type fans_type = {.type = "fans", .initialize = fans_init,
                                         .predict = ch_predict};

/* counter: state Count (1x1); predict adds it to X and counts the call
 * in its new state (MATLAB's [Z, state] = predict(layer, X)); the same
 * with a backward of its own (the custom op path). */
static dla_status counter_init(const dla_layer *l, dla_layer_init *init, int nx,
                               dla_tensor *const *x)
{
    (void)l, (void)nx, (void)x;
    return dla_layer_add_state(init, "Count", DLA_DIMS(1, 1), "zeros");
}

static dla_status counter_predict(dla_layer_io *io)
{
    io->new_state[0] = dla_affine(io->state[0], 1, 1);
    io->y = dla_add(io->x[0], io->state[0]);
    return dla_tensor_status(io->y);
}

static dla_status counter_backward(const dla_layer_io *io, dla_tensor *dy, dla_tensor **dx,
                                   dla_tensor **dl)
{
    (void)io, (void)dl;
    dx[0] = dy;
    return DLA_OK;
}

/* callCount: y = x, counting its calls in calls_made. */
static int calls_made;

static dla_status call_count_predict(dla_layer_io *io)
{
    calls_made++;
    io->y = dla_affine(io->x[0], 1, 0);
    return dla_tensor_status(io->y);
}

static const dla_layer_type call_count_type = {.type = "callCount", .predict = call_count_predict};

static const dla_layer_type counter_type = {
    .type = "counter", .initialize = counter_init, .predict = counter_predict,
};

static const dla_layer_type counter_own_type = {
    .type = "counterOwn", .initialize = counter_init, .predict = counter_predict,
    .backward = counter_backward,
};

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s/dla-custom-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return -1;
    const dla_layer_type *types[] = {&slice_diff_type, &scale_auto, &scale_own, &scale_wrong,
                                     &scale_null,
                                     &wsum_type, &rmean_type, &rmean_own_type,
                                     &rmean_predict_only_type, &bad_state_type, &ch_scale_type,
                                     &fans_type, &counter_type, &counter_own_type,
                                     &call_count_type};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (dla_layer_type_register(types[i]) != DLA_OK)
            return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* ----------------------------------------------------------- helpers */

static double max_abs_diff(dla_tensor *a, dla_tensor *b)
{
    dla_tensor *d = dla_max(dla_abs(dla_sub(dla_cast(a, DLA_F64), dla_cast(b, DLA_F64))), 0, NULL);
    assert_int_equal(dla_tensor_status(d), DLA_OK);
    return dla_tensor_item(d, 0);
}

/* [sliceDiffConv, conv 3x3 2 filters] on frames of c channels. */
static dla_net *slice_net(int64_t c, dla_tensor *example, double steps)
{
    dla_layer *l[] = {
        dla_custom_layer(SLICE_DIFF_TYPE, (double[]){steps}, &(dla_layer_options){.name = "sd"}),
        dla_conv2d_layer(3, 3, 2, &(dla_conv_layer_options){.padding_mode = "same"}),
    };
    (void)c;
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    if (dla_net_init(net, 1, &example) != DLA_OK)
        fail_msg("%s", dla_last_error());
    return net;
}

static void check_gradients(dla_net *net, dla_tensor *x);
static unsigned char *slurp(const char *p, long *size);

/* f (size bytes, a trace file) written to p with the END section's
 * CRC-32C of the bytes before it made right again (docs/trace-format.md),
 * so that the load gets past the checksum to what was changed. */
static void write_checksummed(unsigned char *f, long size, const char *p)
{
    uint32_t crc = 0xFFFFFFFFu;
    for (long i = 0; i < size - 8; i++) {
        crc ^= f[i];
        for (int k = 0; k < 8; k++)
            crc = crc & 1 ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
    }
    crc ^= 0xFFFFFFFFu;
    memcpy(f + size - 8, &crc, 4);
    FILE *o = fopen(p, "wb");
    assert_non_null(o);
    assert_int_equal(fwrite(f, 1, (size_t)size, o), (size_t)size);
    fclose(o);
}

/* ------------------------------------------------------------- tests */

/* Outputs asked for by name run the layers they read, not the whole
 * network (every layer ran: an early activation cost a full pass, and a
 * later layer's failure failed it), in predict and in forward. */
static void outputs_by_name_run_only_the_layers_they_need(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *l[] = {dla_feature_input_layer(2, &(dla_feature_input_options){.name = "in"}),
                      dla_fc_layer(3, &(dla_fc_layer_options){.name = "fc"}),
                      dla_custom_layer("callCount", NULL, &(dla_layer_options){.name = "cc"}),
                      dla_fc_layer(2, &(dla_fc_layer_options){.name = "out"})};
    dla_net *net = dla_net_create(4, l);
    assert_non_null(net);
    dla_tensor *x = dla_ones(DLA_F32, "CB", DLA_DIMS(2, 5));
    assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
    dla_net_set_accelerate(net, 0);
    const dla_net_forward_options early = {.outputs = (const char *const[]){"fc"}},
                                  late = {.outputs = (const char *const[]){"cc"}};
    dla_tensor *y, *z;
    int before = calls_made;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, &early), DLA_OK);
    assert_int_equal(dla_net_forward(net, 1, &x, 1, &y, NULL, &early), DLA_OK);
    assert_int_equal(calls_made, before);
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &z, &late), DLA_OK);
    assert_int_equal(calls_made, before + 1);
    assert_true(max_abs_diff(y, z) == 0); /* cc passes fc's activation on */
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &z, NULL), DLA_OK);
    assert_int_equal(calls_made, before + 2);
    /* MATLAB's "layer/out" names a layer's one output too. */
    dla_tensor *w;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &w,
                                     &(dla_net_forward_options){
                                         .outputs = (const char *const[]){"fc/out"}}),
                     DLA_OK);
    assert_true(max_abs_diff(w, y) == 0);
    assert_int_equal(calls_made, before + 2);
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &w,
                                     &(dla_net_forward_options){
                                         .outputs = (const char *const[]){"fc/in"}}),
                     DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_last_error(), "no output is named 'fc/in': layer 'fc' (Fully Connected) has "
                                  "one output, named 'fc'"))
        fail_msg("%s", dla_last_error());
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &w,
                                     &(dla_net_forward_options){
                                         .outputs = (const char *const[]){"nope/out"}}),
                     DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "no layer is named 'nope/out'"));
    dla_net_free(net);
    dla_scope_end();
}

/* With the new state an output (forward), a layer with state after the
 * output asked for still runs: its state is the whole network's. */
static void outputs_by_name_in_forward_keep_the_state_of_later_layers(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *l[] = {dla_feature_input_layer(2, &(dla_feature_input_options){.name = "in"}),
                      dla_fc_layer(3, &(dla_fc_layer_options){.name = "fc"}),
                      dla_batchnorm_layer(NULL),
                      dla_fc_layer(2, &(dla_fc_layer_options){.name = "out"})};
    dla_net *net = dla_net_create(4, l);
    assert_non_null(net);
    dla_rng_seed(2);
    dla_tensor *x = dla_randn(DLA_F32, "CB", DLA_DIMS(2, 5));
    assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
    assert_int_equal(dla_net_state_count(net), 2);
    for (int acc = 0; acc < 2; acc++) {
        dla_net_set_accelerate(net, acc);
        const dla_net_forward_options early = {.outputs = (const char *const[]){"fc"}};
        dla_tensor *y, *part[2], *whole[2];
        assert_int_equal(dla_net_forward(net, 1, &x, 1, &y, part, &early), DLA_OK);
        assert_int_equal(dla_net_forward(net, 1, &x, 1, &y, whole, NULL), DLA_OK);
        for (int i = 0; i < 2; i++) {
            assert_true(max_abs_diff(part[i], whole[i]) == 0);
            /* moved from its initial value (mean 0, variance 1) */
            assert_true(max_abs_diff(part[i], dla_table_values(dla_net_state(net))[i]) > 0);
        }
    }
    dla_net_free(net);
    dla_scope_end();
}

static void registering_checks_the_definition(void **state)
{
    (void)state;
    assert_true(dla_layer_type_registered(SLICE_DIFF_TYPE));
    assert_false(dla_layer_type_registered("noSuchType"));
    /* The same definition again is fine, from a copy too. */
    dla_layer_type copy = slice_diff_type;
    assert_int_equal(dla_layer_type_register(&copy), DLA_OK);
    /* Another definition under a taken name is not. */
    copy.predict = scale_predict;
    assert_int_equal(dla_layer_type_register(&copy), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "\"sliceDiffConv\" is registered already"));
    dla_layer_type builtin = {.type = "convolution2d", .predict = scale_predict};
    assert_int_equal(dla_layer_type_register(&builtin), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "built-in"));
    dla_layer_type bad = {.type = "has space", .predict = scale_predict};
    assert_int_equal(dla_layer_type_register(&bad), DLA_ERR_INVALID_ARGUMENT);
    dla_layer_type nopredict = {.type = "noPredict"};
    assert_int_equal(dla_layer_type_register(&nopredict), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "no predict"));
    dla_layer_property twice[] = {{"A", 1}, {"A", 2}};
    dla_layer_type dup = {.type = "dupProps", .predict = scale_predict, .nproperties = 2,
                          .properties = twice};
    assert_int_equal(dla_layer_type_register(&dup), DLA_ERR_INVALID_ARGUMENT);
    assert_false(dla_layer_type_registered("dupProps"));
    assert_int_equal(dla_layer_type_register(NULL), DLA_ERR_INVALID_ARGUMENT);
    /* A default name is a layer name's start: with a '/' its layers could
     * not be connected ("no layer is named 'a'" for "a/b_1"). */
    dla_layer_type slash = {.type = "slashName", .default_name = "a/b", .predict = scale_predict};
    assert_int_equal(dla_layer_type_register(&slash), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "default name \"a/b\""));
    /* The longest type name, numbered: "_1" did not fit the 64 bytes the
     * name was made in, every number was cut off, and naming the second
     * unnamed layer of the type never ended. */
    char longest[64];
    memset(longest, 'k', 63);
    longest[63] = '\0';
    dla_layer_type lt = {.type = longest, .predict = scale_predict};
    assert_int_equal(dla_layer_type_register(&lt), DLA_OK);
    dla_layer *two[] = {dla_custom_layer(longest, NULL, NULL), dla_custom_layer(longest, NULL, NULL)};
    dla_net *net = dla_net_create(2, two);
    if (!net)
        fail_msg("%s", dla_last_error());
    char want[80];
    snprintf(want, sizeof want, "%s_2", longest);
    assert_string_equal(dla_net_layer_name(net, 1), want);
    dla_net_free(net);
}

static void errors_name_the_layer(void **state)
{
    (void)state;
    dla_scope_begin();
    /* A property its validate refuses. */
    dla_layer *bad = dla_custom_layer(SLICE_DIFF_TYPE, (double[]){2.5},
                                      &(dla_layer_options){.name = "frames"});
    assert_non_null(bad);
    assert_int_equal(dla_layer_status(bad), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_layer_error(bad), "sliceDiffConv 'frames'"));
    assert_non_null(strstr(dla_layer_error(bad), "NumTimeSteps 2.5"));
    /* A network given it fails with that message. */
    assert_null(dla_net_create(1, &bad));
    assert_non_null(strstr(dla_last_error(), "frames"));
    /* Not a finite number. */
    dla_layer *inf = dla_custom_layer("runningMean", (double[]){INFINITY, 1}, NULL);
    assert_int_equal(dla_layer_status(inf), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_layer_error(inf), "Momentum"));
    dla_layer_free(inf);
    /* An unregistered type. */
    dla_layer *none = dla_custom_layer("noSuchType", NULL, NULL);
    assert_int_equal(dla_layer_status(none), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_layer_error(none), "\"noSuchType\" is not registered"));
    dla_layer_free(none);
    /* A size the layer cannot take, at initialization: one image of the
     * page's layout is not a multiple of 3 frames. */
    dla_layer *l[] = {
        dla_image_input_layer(8, 8, 2, &(dla_image_input_options){.normalization = "none"}),
        dla_custom_layer(SLICE_DIFF_TYPE, NULL, &(dla_layer_options){.name = "sd7"}),
    };
    assert_null(dla_net_create(2, l));
    assert_non_null(strstr(dla_last_error(), "layer 'sd7' (Slice Difference Convolution)"));
    assert_non_null(strstr(dla_last_error(), "not a multiple of NumTimeSteps 3"));
    /* A new state that is an error tensor fails the layer's forward. */
    dla_layer *bs = dla_custom_layer("badState", NULL, &(dla_layer_options){.name = "bs"});
    dla_net *bsnet = dla_net_create(1, &bs);
    dla_tensor *cb = dla_zeros(DLA_F32, "CB", DLA_DIMS(2, 2)), *bsy, *bss;
    assert_int_equal(dla_net_init(bsnet, 1, &cb), DLA_OK);
    for (int accel = 0; accel < 2; accel++) {
        dla_net_set_accelerate(bsnet, accel);
        assert_int_not_equal(dla_net_forward(bsnet, 1, &cb, 1, &bsy, &bss, NULL), DLA_OK);
        assert_non_null(strstr(dla_last_error(), "dla_net_forward: layer 'bs' (badState): new state 1"));
    }
    dla_net_free(bsnet);
    /* At run time, with a batch the layer refuses. */
    dla_tensor *ex = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(5, 4, 2, 3));
    dla_net *net = slice_net(2, ex, 3);
    dla_tensor *y, *x = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(5, 4, 2, 4));
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_ERR_SHAPE);
    assert_non_null(strstr(dla_last_error(), "dla_net_predict: layer 'sd'"));
    dla_net_free(net);
    dla_scope_end();
}

/* A fan that is negative, NaN or infinite is refused naming it (it made
 * the "he" and glorot weights NaN or inf in silence), and "orthogonal"
 * of three dims says what it takes (it was "unknown here"); the layer's
 * good learnable then stands alone. */
static void bad_fans_and_an_orthogonal_of_three_dims_are_refused(void **state)
{
    (void)state;
    dla_layer *l[] = {dla_feature_input_layer(2, NULL), dla_custom_layer("fans", NULL, NULL)};
    dla_net *net = dla_net_create(2, l);
    if (!net)
        fail_msg("%s", dla_last_error());
    for (int k = 0; k < 4; k++)
        assert_int_equal(fans_said[k], DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(fans_msg[0], "parameter W: fan_in -2 and fan_out 0 must be finite and "
                                        ">= 0 (0: from the dims)"));
    assert_non_null(strstr(fans_msg[1], "fan_in nan and fan_out 1"));
    assert_non_null(strstr(fans_msg[2], "fan_in 3 and fan_out inf"));
    assert_non_null(strstr(fans_msg[3], "initializer \"orthogonal\" takes two dims (3 dims)"));
    const dla_table *t = dla_net_learnables(net);
    assert_int_equal(dla_table_count(t), 1);
    float w[2];
    assert_int_equal(dla_tensor_to_host(dla_table_value(t, 0), w, sizeof w), DLA_OK);
    assert_true(isfinite(w[0]) && isfinite(w[1]));
    dla_net_free(net);
}

static void a_sequence_with_a_custom_layer_runs_and_has_its_learnables(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(1);
    dla_tensor *x = dla_randn(DLA_F32, "SSCBT", DLA_DIMS(6, 5, 3, 4, 3));
    dla_net *net = slice_net(3, dla_slice(x, 4, 0, 1, 1), 3);
    assert_string_equal(dla_net_layer_type(net, 0), SLICE_DIFF_TYPE);
    dla_table *lt = dla_net_learnables(net);
    assert_int_equal(dla_table_count(lt), 5);
    assert_string_equal(dla_table_layer(lt, 0), "sd");
    assert_string_equal(dla_table_parameter(lt, 0), "KiMinus");
    assert_string_equal(dla_table_parameter(lt, 2), "Bias");
    assert_int_equal(dla_tensor_dim(dla_table_value(lt, 0), 5), 3); /* deferred: c channels */
    assert_true(dla_table_l2_factor(lt, 0) == 1 && dla_table_learn_rate_factor(lt, 0) == 1);
    dla_tensor *y, *yf;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
    assert_string_equal(dla_tensor_format(y), "SSCB");
    assert_int_equal(dla_tensor_dim(y, 3), 2);
    assert_int_equal(dla_tensor_dim(y, 4), 4);
    assert_int_equal(dla_net_forward(net, 1, &x, 1, &yf, NULL, NULL), DLA_OK);
    assert_true(max_abs_diff(y, yf) == 0);
    /* The layer alone against its formula, from the page's layout too:
     * the T frames of each observation next to each other along B. */
    dla_tensor *plain = dla_reshape(x, "", DLA_DIMS(6, 5, 3, 4, 3));
    dla_tensor *page = dla_reshape(dla_contiguous(dla_permute(plain, DLA_DIMS(1, 2, 3, 5, 4))),
                                   "SSCB", DLA_DIMS(6, 5, 3, 12));
    dla_tensor *z[3], *p[3];
    for (int k = 0; k < 3; k++) {
        z[k] = dla_reshape(dla_slice(x, 5, k, 1, k + 1), "SSCB", DLA_DIMS(6, 5, 3, 4));
        p[k] = dla_table_value(lt, k);
    }
    dla_tensor *want = slice_diff_compute(z, p), *got, *got2;
    const char *const sd[] = {"sd"};
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &got, &(dla_net_forward_options){.outputs = sd}),
                     DLA_OK);
    assert_true(max_abs_diff(got, want) < 1e-6);
    dla_net *pnet = slice_net(3, dla_slice(page, 4, 0, 1, 3), 3);
    assert_int_equal(dla_net_set_learnables(pnet, 5, dla_table_values(lt)), DLA_OK);
    assert_int_equal(dla_net_predict(pnet, 1, &page, 1, &got2,
                                     &(dla_net_forward_options){.outputs = sd}), DLA_OK);
    assert_true(max_abs_diff(got2, want) < 1e-6);
    dla_net_free(pnet);
    dla_net_free(net);
    dla_scope_end();
}

static void a_graph_with_a_two_input_custom_layer(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(2);
    dla_layer *l[] = {
        dla_image_input_layer(5, 5, 2, &(dla_image_input_options){.normalization = "none",
                                                                  .name = "in"}),
        dla_conv2d_layer(3, 3, 2, &(dla_conv_layer_options){.padding_mode = "same", .name = "c1"}),
        dla_custom_layer("weightedSum", NULL, &(dla_layer_options){.name = "ws"}),
    };
    dla_net *net = dla_net_create(3, l);
    assert_non_null(net);
    assert_false(dla_net_initialized(net)); /* ws/in2 is free */
    /* c1 went to ws/in1 in sequence; the skip connection takes in2. */
    assert_int_equal(dla_net_connect(net, "in", "ws/in2"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    dla_tensor *x = dla_randn(DLA_F32, "SSCB", DLA_DIMS(5, 5, 2, 3)), *y, *c1;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
    const char *const o[] = {"c1"};
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &c1, &(dla_net_forward_options){.outputs = o}),
                     DLA_OK);
    assert_true(max_abs_diff(y, dla_add(c1, x)) < 1e-6); /* Alpha starts at ones */
    assert_string_equal(dla_net_layer_type(net, 2), "weightedSum");
    char buf[4096];
    dla_net_summary(net, buf, sizeof buf);
    assert_non_null(strstr(buf, "Weighted Sum"));
    assert_non_null(strstr(buf, "ws/in2"));
    /* Gradients through both branches and the custom layer's Alpha. */
    check_gradients(net, dla_cast(x, DLA_F64));
    dla_net_free(net);
    dla_scope_end();
}

static void the_summary_shows_the_type_learnables_and_description(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_net *net = slice_net(3, dla_zeros(DLA_F32, "SSCBT", DLA_DIMS(6, 5, 3, 1, 3)), 3);
    char buf[4096];
    int n = dla_net_summary(net, buf, sizeof buf);
    assert_true(n > 0 && n < (int)sizeof buf);
    assert_non_null(strstr(buf, "Slice Difference Convolution"));
    assert_non_null(strstr(buf, "KiMinus 3x3x1x1x3"));
    assert_non_null(strstr(buf, "frames 2-1 and 2-3 of 3 through channel-wise separable"));
    dla_net_free(net);
    /* Without describe: the properties. */
    dla_layer *l = dla_custom_layer("runningMean", (double[]){0.25, 2}, NULL);
    net = dla_net_create(1, &l);
    assert_int_equal(dla_net_init(net, 1, (dla_tensor *[]){dla_zeros(DLA_F32, "CB", DLA_DIMS(3, 2))}),
                     DLA_OK);
    dla_net_summary(net, buf, sizeof buf);
    assert_non_null(strstr(buf, "runningMean with Momentum 0.25, Gain 2"));
    assert_string_equal(dla_net_layer_name(net, 0), "runningMean");
    dla_net_free(net);
    dla_scope_end();
}

static void accelerated_predict_and_forward_equal_eager(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(4);
    dla_tensor *x = dla_randn(DLA_F32, "SSCBT", DLA_DIMS(7, 6, 4, 5, 3));
    dla_net *net = slice_net(4, dla_slice(x, 4, 0, 1, 1), 3);
    dla_tensor *eager, *eager_f, *acc[3], *acc_f;
    dla_net_set_accelerate(net, 0);
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &eager, NULL), DLA_OK);
    assert_int_equal(dla_net_forward(net, 1, &x, 1, &eager_f, NULL, NULL), DLA_OK);
    dla_net_set_accelerate(net, 1);
    for (int i = 0; i < 3; i++)
        assert_int_equal(dla_net_predict(net, 1, &x, 1, &acc[i], NULL), DLA_OK);
    assert_int_equal(dla_net_forward(net, 1, &x, 1, &acc_f, NULL, NULL), DLA_OK);
    assert_true(dla_accel_hit_rate(dla_net_accelerator(net)) > 0);
    for (int i = 0; i < 3; i++)
        assert_true(max_abs_diff(acc[i], eager) <= 1e-6);
    assert_true(max_abs_diff(acc_f, eager_f) <= 1e-6);
    dla_net_free(net);
    dla_scope_end();
}

/* dla_net_predict_state hands back what predict set as the new state,
 * eager and replayed, with and without a backward of the layer's own;
 * dla_net_predict and the network's own state are left alone. */
static void predict_state_gives_the_state_predict_set(void **state)
{
    (void)state;
    dla_scope_begin();
    const char *types[] = {"counter", "counterOwn"};
    for (int t = 0; t < 2; t++)
        for (int accel = 0; accel < 2; accel++) {
            dla_layer *l = dla_custom_layer(types[t], NULL, &(dla_layer_options){.name = "n"});
            dla_net *net = dla_net_create(1, &l);
            dla_tensor *x = dla_ones(DLA_F32, "CB", DLA_DIMS(2, 3)), *y, *st[1];
            assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
            dla_net_set_accelerate(net, accel);
            for (int call = 0; call < 3; call++) {
                assert_int_equal(dla_net_predict_state(net, 1, &x, 1, &y, st, NULL), DLA_OK);
                assert_true(dla_tensor_item(st[0], 0) == call + 1);
                assert_true(dla_tensor_item(y, 5) == 1 + call);
                assert_int_equal(dla_net_set_state(net, 1, st), DLA_OK);
            }
            assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
            assert_true(dla_tensor_item(y, 0) == 4);
            assert_true(dla_tensor_item(dla_net_get(net, "n", "Count"), 0) == 3);
            dla_net_free(net);
        }
    dla_scope_end();
}

/* ------------------------------------------------------- gradients */

/* MATLAB's modelLoss(net, X, T): loss and the learnables' gradients. */
static dla_status net_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_net *net = ctx;
    dla_tensor *y;
    dla_status st = dla_net_forward(net, 1, in, 1, &y, NULL, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_sum(dla_mul(y, in[1]), 0, NULL);
    return dla_net_gradient(net, out[0], out + 1);
}

/* A model loss accelerated with the network as its ctx (dla_net_accel_kind)
 * gives the eager gradients, and replays after an update of the custom
 * layer's learnables with the new values. */
static void a_model_loss_accelerated_with_the_network_as_ctx(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(9);
    dla_tensor *x = dla_randn(DLA_F64, "SSCBT", DLA_DIMS(5, 4, 2, 3, 3));
    dla_tensor *r = dla_randn(DLA_F64, "SSCB", DLA_DIMS(5, 4, 2, 3));
    dla_net *net = slice_net(2, dla_slice(x, 4, 0, 1, 1), 3);
    int nl = dla_net_learnable_count(net);
    dla_accel *af = dla_accelerate(net_loss, &(dla_accel_options){.name = "modelLoss",
                                                                   .ctx_kind = dla_net_accel_kind()});
    assert_non_null(af);
    for (int step = 0; step < 3; step++) {
        dla_tensor *a[8], *e[8];
        assert_int_equal(dla_accel_feval(af, net, 2, (dla_tensor *[]){x, r}, 1 + nl, a), DLA_OK);
        assert_int_equal(dla_feval(net_loss, net, 2, (dla_tensor *[]){x, r}, 1 + nl, e), DLA_OK);
        for (int i = 0; i < 1 + nl; i++)
            assert_true(max_abs_diff(a[i], e[i]) <= 1e-9 * (1 + max_abs_diff(e[i], dla_zeros(DLA_F64, "", DLA_DIMS(1)))));
        /* An update: the next call must compute with it. */
        dla_tensor **v = dla_table_values(dla_net_learnables(net));
        dla_tensor *moved = dla_keep(dla_affine(v[0], 1.5, 0.01));
        dla_tensor_release(v[0]);
        v[0] = moved;
    }
    assert_true(dla_accel_hit_rate(af) > 0);
    dla_accel_free(af);
    dla_net_free(net);
    dla_scope_end();
}

typedef gc_net net_ctx;

static dla_tensor *run_input(void *c, dla_tensor *const *in)
{
    net_ctx *n = c;
    dla_tensor *y;
    dla_net_forward(n->net, 1, in, 1, &y, NULL, NULL);
    return y;
}

static void check_gradients(dla_net *net, dla_tensor *x)
{
    assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
    int nl = dla_net_learnable_count(net);
    int check[GC_MAX_IN] = {1, 1, 1, 1, 1, 1, 1, 1};
    net_ctx c = {net, x, 1};
    for (int accel = 1; accel >= 0; accel--) {
        dla_net_set_accelerate(net, accel);
        gc_check(gc_run_net, &c, nl, dla_table_values(dla_net_learnables(net)), check, 1e-5);
        gc_check(run_input, &c, 1, &x, check, 1e-5);
        /* Second derivatives: the type's own backward (or the ops of its
         * forward) recorded and differentiated again. */
        gc_check2(gc_run_net, &c, nl, dla_table_values(dla_net_learnables(net)), check, 1e-5);
        gc_check2(run_input, &c, 1, &x, check, 1e-5);
    }
    dla_net_set_accelerate(net, 1);
}

static void the_page_layer_has_the_gradients_of_finite_differences(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(5);
    /* "SSCBT": frames as their own dim. */
    dla_tensor *x = dla_randn(DLA_F64, "SSCBT", DLA_DIMS(6, 5, 3, 2, 3));
    dla_net *net = slice_net(3, dla_slice(x, 4, 0, 1, 1), 3);
    assert_int_equal(dla_table_set_value(dla_net_learnables(net), 2,
                                         dla_tensor_from_host((double[]){0.1, -0.2}, DLA_F64, "",
                                                              DLA_DIMS(2, 1))), DLA_OK);
    check_gradients(net, x);
    dla_net_free(net);
    /* The page's layout: the frames of each observation along B, and four
     * of them (the layer reads the first three). */
    dla_tensor *page = dla_randn(DLA_F64, "SSCB", DLA_DIMS(5, 6, 2, 8));
    net = slice_net(2, page, 4);
    check_gradients(net, page);
    dla_net_free(net);
    dla_scope_end();
}

static dla_status scale_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_net *net = ctx;
    dla_tensor *y;
    dla_status st = dla_net_forward(net, 1, in, 1, &y, NULL, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_sum(dla_mul(y, in[1]), 0, NULL);
    st = dla_gradient(out[0], 1, in, out + 1);
    if (st == DLA_OK)
        st = dla_net_gradient(net, out[0], out + 2);
    return st;
}

/* d/dx and d/dScale of sum(Scale * x .* r) through a network of one layer
 * of type, its acceleration on or off. */
static void scale_gradients(const char *type, int accel, dla_tensor *x, dla_tensor *r, double *gx0,
                            double *gs)
{
    dla_layer *l = dla_custom_layer(type, NULL, NULL);
    dla_net *net = dla_net_create(1, &l);
    assert_non_null(net);
    assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
    dla_net_set_accelerate(net, accel);
    dla_tensor *out[3];
    for (int rep = 0; rep < 2; rep++) /* the second replays the trace */
        assert_int_equal(dla_feval(scale_loss, net, 2, (dla_tensor *[]){x, r}, 3, out), DLA_OK);
    *gx0 = dla_tensor_item(out[1], 0);
    *gs = dla_tensor_item(out[2], 0);
    dla_net_free(net);
}

static void a_backward_of_its_own_is_used_when_given(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(6);
    dla_tensor *x = dla_randn(DLA_F64, "CB", DLA_DIMS(3, 4)), *r = dla_randn(DLA_F64, "CB", DLA_DIMS(3, 4));
    double want_x0 = 1.5 * dla_tensor_item(r, 0);
    double want_s = dla_tensor_item(dla_sum(dla_mul(x, r), 0, NULL), 0);
    for (int accel = 0; accel < 2; accel++) {
        double gx, gs;
        scale_gradients("scaleAuto", accel, x, r, &gx, &gs);
        assert_true(tu_close(gx, want_x0, 1e-12) && tu_close(gs, want_s, 1e-12));
        backward_calls = 0;
        scale_gradients("scaleOwn", accel, x, r, &gx, &gs);
        assert_true(backward_calls >= 1);
        assert_true(tu_close(gx, want_x0, 1e-12) && tu_close(gs, want_s, 1e-12));
        /* The own backward's answer, not the ops': twice the truth. */
        backward_calls = 0;
        scale_gradients("scaleWrong", accel, x, r, &gx, &gs);
        assert_true(backward_calls >= 1);
        assert_true(tu_close(gx, 2 * want_x0, 1e-12) && tu_close(gs, 2 * want_s, 1e-12));
    }
    /* And against finite differences, with a layer before it. */
    dla_layer *l[] = {
        dla_fc_layer(3, NULL),
        dla_custom_layer("scaleOwn", NULL, NULL),
    };
    dla_net *net = dla_net_create(0, NULL);
    assert_int_equal(dla_net_add_layers(net, 2, l), DLA_OK);
    assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
    check_gradients(net, x);
    dla_net_free(net);
    /* A learnable's gradient with a trailing one its dims do not have. */
    dla_tensor *img = dla_randn(DLA_F64, "SSCB", DLA_DIMS(3, 3, 2, 2));
    dla_layer *cl[] = {dla_custom_layer("chScale", NULL, NULL), dla_fc_layer(2, NULL)};
    net = dla_net_create(0, NULL);
    assert_int_equal(dla_net_add_layers(net, 2, cl), DLA_OK);
    assert_int_equal(dla_net_init(net, 1, &img), DLA_OK);
    check_gradients(net, img);
    dla_net_free(net);
    dla_scope_end();
}

static void forward_updates_the_state_predict_reads_it(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *l = dla_custom_layer("runningMean", (double[]){0.5, 3}, &(dla_layer_options){.name = "rm"});
    dla_net *net = dla_net_create(1, &l);
    dla_tensor *x = dla_tensor_from_host((float[]){1, 2, 3, 6}, DLA_F32, "CB", DLA_DIMS(2, 2));
    assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
    assert_int_equal(dla_net_state_count(net), 1);
    assert_string_equal(dla_table_parameter(dla_net_state(net), 0), "Mean");
    dla_tensor *y, *st;
    assert_int_equal(dla_net_forward(net, 1, &x, 1, &y, &st, NULL), DLA_OK);
    assert_true(dla_tensor_item(st, 0) == 1.5); /* 0.5 * 0 + 0.5 * mean 3 */
    assert_true(dla_tensor_item(y, 3) == 18);   /* forward: Gain 3 x (6 - 0) */
    assert_int_equal(dla_net_set_state(net, 1, &st), DLA_OK);
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
    assert_true(dla_tensor_item(y, 3) == 4.5); /* predict: 6 - 1.5 */
    dla_net_free(net);
    dla_scope_end();
}

typedef struct rm_ctx {
    dla_net *net;
    int training;
} rm_ctx;

/* loss = sum(Y .* R); out = loss, dX, new state (training). */
static dla_status rm_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    rm_ctx *c = ctx;
    dla_tensor *y;
    dla_status st = c->training ? dla_net_forward(c->net, 1, in, 1, &y, out + 2, NULL)
                                : dla_net_predict(c->net, 1, in, 1, &y, NULL);
    if (st != DLA_OK)
        return st;
    if (!c->training)
        out[2] = dla_zeros(DLA_F32, "", DLA_DIMS(1, 1));
    out[0] = dla_sum(dla_mul(y, in[1]), 0, NULL);
    return dla_gradient(out[0], 1, in, out + 1);
}

static void state_with_a_backward_of_its_own(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_tensor_from_host((float[]){1, 2, 3, 6}, DLA_F32, "CB", DLA_DIMS(2, 2));
    dla_tensor *r = dla_tensor_from_host((float[]){1, -1, 2, 0.5f}, DLA_F32, "CB", DLA_DIMS(2, 2));
    for (int accel = 0; accel < 2; accel++) {
        dla_layer *l = dla_custom_layer("runningMeanOwn", (double[]){0.5, 3}, NULL);
        dla_net *net = dla_net_create(1, &l);
        assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
        dla_net_set_accelerate(net, accel);
        for (int training = 0; training < 2; training++) {
            rm_ctx c = {net, training};
            dla_tensor *out[3];
            backward_calls = 0;
            for (int rep = 0; rep < 2; rep++)
                assert_int_equal(dla_feval(rm_loss, &c, 2, (dla_tensor *[]){x, r}, 3, out), DLA_OK);
            assert_true(backward_calls >= 1);
            assert_true(dla_tensor_item(out[1], 2) == (training ? 6 : 2));
            if (training)
                assert_true(dla_tensor_item(out[2], 0) == 1.5);
        }
        dla_net_free(net);
        /* Without forward: training runs predict, the state passes through. */
        l = dla_custom_layer("runningMeanPredict", NULL, NULL);
        net = dla_net_create(1, &l);
        assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
        dla_net_set_accelerate(net, accel);
        dla_tensor *st = dla_tensor_from_host((float[]){0.25f}, DLA_F32, "", DLA_DIMS(1, 1));
        assert_int_equal(dla_net_set_state(net, 1, &st), DLA_OK);
        rm_ctx c = {net, 1};
        dla_tensor *out[3];
        for (int rep = 0; rep < 2; rep++)
            assert_int_equal(dla_feval(rm_loss, &c, 2, (dla_tensor *[]){x, r}, 3, out), DLA_OK);
        assert_true(dla_tensor_item(out[2], 0) == 0.25f);
        assert_true(dla_tensor_item(out[1], 2) == 2);
        dla_net_free(net);
    }
    dla_scope_end();
}

/* A trace with a layer of its own backward (one op) saved to a file and
 * loaded names the type, found again in the registry. */
static void a_trace_file_names_the_custom_type(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_tensor_from_host((float[]){1, 2, 3, 6}, DLA_F32, "CB", DLA_DIMS(2, 2));
    dla_layer *l = dla_custom_layer("runningMeanOwn", (double[]){0.5, 3}, NULL);
    dla_net *net = dla_net_create(1, &l);
    assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
    dla_tensor *st = dla_tensor_from_host((float[]){0.5f}, DLA_F32, "", DLA_DIMS(1, 1)), *y;
    assert_int_equal(dla_net_set_state(net, 1, &st), DLA_OK);
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
    dla_trace *t = dla_accel_trace(dla_net_accelerator(net), 0);
    assert_non_null(t);
    assert_int_equal(dla_trace_save(t, path("rm.trace")), DLA_OK);
    dla_trace_release(t);
    dla_trace *back;
    if (dla_trace_load(path("rm.trace"), &back) != DLA_OK)
        fail_msg("%s", dla_last_error());
    dla_tensor *out;
    assert_int_equal(dla_trace_replay(back, 2, (dla_tensor *[]){x, st}, 1, &out), DLA_OK);
    assert_true(dla_tensor_item(out, 3) == 5.5); /* predict: 6 - 0.5 */
    dla_trace_release(back);
    /* The file's name of the type, altered to one nobody registered. */
    long size;
    unsigned char *f = slurp(path("rm.trace"), &size);
    int replaced = 0;
    long at = -1;
    for (long i = 0; i + 14 <= size; i++)
        if (!memcmp(f + i, "runningMeanOwn", 14)) {
            memcpy(f + i, "runningMeanXyz", 14);
            replaced++;
            at = i;
        }
    assert_int_equal(replaced, 1);
    write_checksummed(f, size, path("gone.trace"));
    assert_int_equal(dla_trace_load(path("gone.trace"), &back), DLA_ERR_UNSUPPORTED);
    assert_non_null(strstr(dla_last_error(), "\"runningMeanXyz\" is not registered"));
    memcpy(f + at, "runningMeanOwn", 14);
    /* After the name and its zero: the training flag, the counts of
     * inputs, learnables and state (int32 each), then the properties
     * (double). A flag that is none, or a property the layer could not
     * have (NaN), is refused by the load. */
    const long rest = at + 15;
    const int32_t flag = 7;
    memcpy(f + rest, &flag, 4);
    write_checksummed(f, size, path("flag.trace"));
    assert_int_equal(dla_trace_load(path("flag.trace"), &back), DLA_ERR_IO);
    assert_non_null(strstr(dla_last_error(), "attributes training 7"));
    memset(f + rest, 0, 4);
    const double nan = NAN;
    memcpy(f + rest + 16, &nan, 8);
    write_checksummed(f, size, path("nan.trace"));
    assert_int_equal(dla_trace_load(path("nan.trace"), &back), DLA_ERR_IO);
    assert_non_null(strstr(dla_last_error(), "property Momentum is nan"));
    free(f);
    dla_net_free(net);
    dla_scope_end();
}

/* ------------------------------------------------------- save, load */

static void save_and_load_keep_the_type_and_its_properties(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(7);
    dla_tensor *x = dla_randn(DLA_F32, "SSCBT", DLA_DIMS(6, 5, 3, 2, 4));
    dla_net *net = slice_net(3, dla_slice(x, 4, 0, 1, 1), 4);
    assert_int_equal(dla_net_save(net, path("custom.safetensors")), DLA_OK);
    dla_net *back;
    if (dla_net_load(path("custom.safetensors"), &back) != DLA_OK)
        fail_msg("%s", dla_last_error());
    assert_string_equal(dla_net_layer_type(back, 0), SLICE_DIFF_TYPE);
    assert_string_equal(dla_net_layer_name(back, 0), "sd");
    dla_tensor *a, *b;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &a, NULL), DLA_OK);
    assert_int_equal(dla_net_predict(back, 1, &x, 1, &b, NULL), DLA_OK);
    assert_true(max_abs_diff(a, b) == 0);
    char s1[4096], s2[4096];
    dla_net_summary(net, s1, sizeof s1);
    dla_net_summary(back, s2, sizeof s2);
    assert_string_equal(s1, s2);
    assert_non_null(strstr(s2, "of 4 through")); /* the property came back */
    dla_net_free(back);
    dla_net_free(net);
    /* State and two properties. */
    dla_layer *l = dla_custom_layer("runningMean", (double[]){0.125, -2}, &(dla_layer_options){.name = "rm"});
    net = dla_net_create(1, &l);
    dla_tensor *cx = dla_tensor_from_host((float[]){1, 2, 3, 6}, DLA_F32, "CB", DLA_DIMS(2, 2)), *st;
    assert_int_equal(dla_net_init(net, 1, &cx), DLA_OK);
    assert_int_equal(dla_net_forward(net, 1, &cx, 1, &a, &st, NULL), DLA_OK);
    assert_int_equal(dla_net_set_state(net, 1, &st), DLA_OK);
    assert_int_equal(dla_net_save(net, path("state.safetensors")), DLA_OK);
    assert_int_equal(dla_net_load(path("state.safetensors"), &back), DLA_OK);
    assert_true(dla_tensor_item(dla_net_get(back, "rm", "Mean"), 0) == 0.375);
    assert_int_equal(dla_net_forward(back, 1, &cx, 1, &b, NULL, NULL), DLA_OK);
    assert_true(dla_tensor_item(b, 3) == -2 * (6 - 0.375)); /* Gain -2 came back */
    dla_net_free(back);
    dla_net_free(net);
    dla_scope_end();
}

static unsigned char *slurp(const char *p, long *size)
{
    FILE *f = fopen(p, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)*size + 1);
    assert_int_equal(fread(b, 1, (size_t)*size, f), (size_t)*size);
    fclose(f);
    b[*size] = 0; /* strstr stops at the end */
    return b;
}

static void loading_an_unregistered_type_is_an_error_naming_it(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_layer *l = dla_custom_layer("scaleAuto", NULL, &(dla_layer_options){.name = "myscale"});
    dla_net *net = dla_net_create(1, &l);
    assert_int_equal(dla_net_init(net, 1, (dla_tensor *[]){dla_zeros(DLA_F32, "CB", DLA_DIMS(3, 2))}),
                     DLA_OK);
    assert_int_equal(dla_net_save(net, path("scale.safetensors")), DLA_OK);
    dla_net_free(net);
    /* The same file with a type nobody registered (same length: the
     * offsets stay right). */
    long size;
    unsigned char *f = slurp(path("scale.safetensors"), &size);
    int replaced = 0;
    for (long i = 0; i + 9 <= size; i++)
        if (!memcmp(f + i, "scaleAuto", 9)) {
            memcpy(f + i, "scaleGone", 9);
            replaced++;
        }
    assert_true(replaced >= 1);
    /* An edited file fails its checksum (format 1.2): made one of 1.1,
     * which has none, the checksum blanked to JSON spaces. */
    assert_true(tu_net_file_as_version_1_1(f));
    FILE *o = fopen(path("gone.safetensors"), "wb");
    assert_non_null(o);
    assert_int_equal(fwrite(f, 1, (size_t)size, o), (size_t)size);
    fclose(o);
    free(f);
    dla_net *back = (dla_net *)&back;
    assert_int_equal(dla_net_load(path("gone.safetensors"), &back), DLA_ERR_UNSUPPORTED);
    assert_null(back);
    assert_non_null(strstr(dla_last_error(), "layer 'myscale' has type \"scaleGone\""));
    assert_non_null(strstr(dla_last_error(), "dla_layer_type_register"));
    dla_scope_end();
}

/* ------------------------------------------------------- trainnet */

static void trainnet_trains_a_network_with_a_custom_layer(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(8);
    int64_t n = 24;
    dla_tensor *x = dla_randn(DLA_F32, "SSCBT", DLA_DIMS(6, 6, 2, n, 3));
    /* Targets from a teacher of the same architecture. */
    dla_net *teacher = slice_net(2, dla_slice(x, 4, 0, 1, 1), 3);
    dla_tensor *t;
    assert_int_equal(dla_net_predict(teacher, 1, &x, 1, &t, NULL), DLA_OK);
    dla_net_free(teacher);
    dla_layer *l[] = {
        dla_custom_layer(SLICE_DIFF_TYPE, NULL, NULL),
        dla_conv2d_layer(3, 3, 2, &(dla_conv_layer_options){.padding_mode = "same"}),
    };
    dla_net *net = dla_net_create(2, l); /* initialized by trainnet from the data */
    assert_non_null(net);
    dla_training_options o = {.solver = "adam", .max_epochs = 8, .mini_batch_size = 6,
                              .initial_learn_rate = 0.02, .verbose = -1};
    dla_net *trained;
    dla_training_info *info;
    if (dla_trainnet(&(dla_train_data){.predictors = x, .targets = t}, net,
                     &(dla_train_loss){.name = "mse"}, &o, &trained, &info) != DLA_OK)
        fail_msg("%s", dla_last_error());
    int64_t it = info->iterations;
    assert_int_equal(it, 8 * 4);
    assert_true(info->training_loss[it - 1] < 0.5 * info->training_loss[0]);
    /* The custom layer's learnables were trained: its bias left zero. */
    assert_true(max_abs_diff(dla_net_get(trained, "slicediff", "Bias"),
                             dla_zeros(DLA_F32, "", DLA_DIMS(1))) > 0);
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    /* A custom layer taking the input with a state named "Mean": not an
     * input layer to normalize (trainnet took it for one and failed). */
    dla_tensor *xs = dla_randn(DLA_F32, "CB", DLA_DIMS(3, 12));
    dla_tensor *ts = dla_randn(DLA_F32, "CB", DLA_DIMS(2, 12));
    dla_layer *ml[] = {dla_custom_layer("runningMean", NULL, &(dla_layer_options){.name = "rm"}),
                       dla_fc_layer(2, NULL)};
    net = dla_net_create(2, ml);
    assert_non_null(net);
    o = (dla_training_options){.max_epochs = 2, .mini_batch_size = 6, .verbose = -1};
    if (dla_trainnet(&(dla_train_data){.predictors = xs, .targets = ts}, net,
                     &(dla_train_loss){.name = "mse"}, &o, &trained, &info) != DLA_OK)
        fail_msg("%s", dla_last_error());
    assert_true(dla_tensor_item(dla_net_get(trained, "rm", "Mean"), 0) != 0.0); /* it ran */
    dla_training_info_free(info);
    dla_net_free(trained);
    dla_net_free(net);
    dla_scope_end();
}

/* trainnet asks for no gradient of a layer whose learn-rate factors are
 * all 0 (transfer learning's frozen layers): the backward stops at the
 * earliest layer that learns, as MATLAB's trainer does, where it ran
 * down to the first layer every iteration, frozen or not ("freezing saves
 * nothing"). A frozen layer after one that learns still runs its backward
 * (the gradient passes through it), and the learning rows train as
 * before. Eager and accelerated. */
static void a_frozen_first_layer_runs_no_backward_in_trainnet(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(10);
    dla_tensor *x = dla_randn(DLA_F32, "CB", DLA_DIMS(3, 8)), *r = dla_randn(DLA_F32, "CB", DLA_DIMS(2, 8));
    for (int accel = 0; accel < 2; accel++)
        for (int first = 0; first < 2; first++) {
            /* first: s (frozen) before fc_1 (learning); else after it. */
            dla_layer *s = dla_custom_layer("scaleOwn", NULL, &(dla_layer_options){.name = "s"});
            dla_layer *l[3] = {first ? s : dla_fc_layer(3, NULL), first ? dla_fc_layer(3, NULL) : s,
                               dla_fc_layer(2, NULL)};
            dla_net *net = dla_net_create(3, l), *trained;
            assert_non_null(net);
            dla_net_set_accelerate(net, accel);
            assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
            assert_int_equal(dla_net_set_learn_rate_factor(net, "s", NULL, 0), DLA_OK);
            dla_training_options o = {.max_epochs = 2, .mini_batch_size = 4, .verbose = -1};
            backward_calls = 0;
            if (dla_trainnet(&(dla_train_data){.predictors = x, .targets = r}, net,
                             &(dla_train_loss){.name = "mse"}, &o, &trained, NULL) != DLA_OK)
                fail_msg("accel %d, first %d: %s", accel, first, dla_last_error());
            if ((backward_calls == 0) != first)
                fail_msg("accel %d, first %d: the frozen layer's backward ran %d times", accel,
                         first, backward_calls);
            /* Rows: s Scale, fc_1 Weights, Bias, fc_2 Weights, Bias (s
             * second: fc_1's first). Only s stays. */
            dla_table *a = dla_net_learnables(net), *b = dla_net_learnables(trained);
            for (int i = 0; i < 5; i++) {
                const double m = max_abs_diff(dla_table_value(a, i), dla_table_value(b, i));
                if ((m == 0) != !strcmp(dla_table_layer(a, i), "s"))
                    fail_msg("accel %d, first %d, row %d: moved by %g", accel, first, i, m);
            }
            dla_net_free(trained);
            dla_net_free(net);
        }
    dla_scope_end();
}

/* A NULL gradient from a backward of its own is a zero gradient, as
 * dla_layer_type documents: dla_net_gradient gave an error ("the loss
 * does not depend on it") for the layer's learnable, and with the input's
 * NULL for every learnable before it, so trainnet could not train such a
 * network at all. */
static dla_status null_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_tensor *y;
    dla_status st = dla_net_forward(ctx, 1, in, 1, &y, NULL, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_sum(dla_mul(y, in[1]), 0, NULL);
    return dla_net_gradient(ctx, out[0], out + 1);
}

static void a_null_gradient_from_a_backward_is_zeros(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(9);
    dla_tensor *x = dla_randn(DLA_F64, "CB", DLA_DIMS(3, 8)), *r = dla_randn(DLA_F64, "CB", DLA_DIMS(2, 8));
    for (int stop = 0; stop < 2; stop++) {
        const double props[] = {stop};
        dla_layer *l[] = {dla_fc_layer(3, NULL),
                          dla_custom_layer("scaleNull", props, &(dla_layer_options){.name = "s"}),
                          dla_fc_layer(2, NULL)};
        dla_net *net = dla_net_create(3, l), *trained;
        assert_non_null(net);
        assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
        /* Rows: fc_1 Weights, Bias; s Scale; fc_2 Weights, Bias. */
        dla_tensor *g[6];
        if (dla_feval(null_loss, net, 2, (dla_tensor *[]){x, r}, 6, g) != DLA_OK)
            fail_msg("stop %d: %s", stop, dla_last_error());
        for (int i = 0; i < 5; i++) {
            const double m = max_abs_diff(g[1 + i], dla_affine(g[1 + i], 0, 0));
            if ((m == 0) != (i == 2 || (stop && i < 2)))
                fail_msg("stop %d, row %d: max |gradient| %g", stop, i, m);
        }
        /* trainnet trains the rows with a gradient and keeps the others. */
        dla_training_options o = {.max_epochs = 2, .mini_batch_size = 4, .verbose = -1,
                                  .l2_regularization = -1};
        if (dla_trainnet(&(dla_train_data){.predictors = x, .targets = r}, net,
                         &(dla_train_loss){.name = "mse"}, &o, &trained, NULL) != DLA_OK)
            fail_msg("stop %d: %s", stop, dla_last_error());
        dla_table *a = dla_net_learnables(net), *b = dla_net_learnables(trained);
        for (int i = 0; i < 5; i++) {
            const double m = max_abs_diff(dla_table_value(a, i), dla_table_value(b, i));
            if ((m == 0) != (i == 2 || (stop && i < 2)))
                fail_msg("stop %d, row %d: moved by %g", stop, i, m);
        }
        dla_net_free(trained);
        dla_net_free(net);
    }
    dla_scope_end();
}

/* A predict that ends one scope more than it began, or leaves one open:
 * an error naming the layer and what its callback did, at creation
 * (the trial run), in forward and in predict, eager and accelerated.
 * The extra end released the layer's result and then closed the caller's
 * scope (its tensors released under it: "use of a released tensor"); a
 * scope left open piled up, one more a call, in silence. */
static int unpaired_mode, unpaired_on;

static dla_status unpaired_predict(dla_layer_io *io)
{
    if (unpaired_on && unpaired_mode > 0)
        dla_scope_begin();
    io->y = dla_affine(io->x[0], 2, 0);
    if (unpaired_on && unpaired_mode < 0)
        dla_scope_end();
    return DLA_OK;
}

static const dla_layer_type unpaired_type = {.type = "unpairedScopes",
                                             .predict = unpaired_predict};

static dla_status unpaired_init(const dla_layer *l, dla_layer_init *init, int nx,
                                dla_tensor *const *x)
{
    (void)l, (void)init, (void)nx, (void)x;
    if (unpaired_on && unpaired_mode > 0)
        dla_scope_begin();
    if (unpaired_on && unpaired_mode < 0)
        dla_scope_end();
    return DLA_OK;
}

static dla_status plain_twice(dla_layer_io *io)
{
    io->y = dla_affine(io->x[0], 2, 0);
    return DLA_OK;
}

static const dla_layer_type unpaired_init_type = {
    .type = "unpairedInit", .initialize = unpaired_init, .predict = plain_twice};

/* The same in a backward of the type's own: it closed dla_gradient's
 * scope. */
static dla_status unpaired_backward(const dla_layer_io *io, dla_tensor *dy, dla_tensor **dx,
                                    dla_tensor **dl)
{
    (void)io, (void)dl;
    if (unpaired_on && unpaired_mode > 0)
        dla_scope_begin();
    dx[0] = dla_affine(dy, 2, 0);
    if (unpaired_on && unpaired_mode < 0)
        dla_scope_end();
    return DLA_OK;
}

static dla_status twice_predict(dla_layer_io *io)
{
    io->y = dla_affine(io->x[0], 2, 0);
    return DLA_OK;
}

static const dla_layer_type unpaired_backward_type = {
    .type = "unpairedBackward", .predict = twice_predict, .backward = unpaired_backward};

static dla_status unpaired_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_tensor *y;
    dla_status st = dla_net_forward(ctx, 1, in, 1, &y, NULL, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_sum(y, 0, NULL);
    return dla_gradient(out[0], 1, in, out + 1);
}

static void a_callback_with_unpaired_scopes_is_an_error_naming_the_layer(void **state)
{
    (void)state;
    assert_int_equal(dla_layer_type_register(&unpaired_type), DLA_OK);
    assert_int_equal(dla_layer_type_register(&unpaired_backward_type), DLA_OK);
    assert_int_equal(dla_layer_type_register(&unpaired_init_type), DLA_OK);
    for (unpaired_mode = -1; unpaired_mode <= 1; unpaired_mode += 2) {
        const char *what = unpaired_mode < 0 ? "called dla_scope_end 1 more time than "
                                               "dla_scope_begin"
                                             : "left 1 scope open";
        dla_scope_begin();
        const int depth = dla_scope_depth();
        dla_tensor *x = dla_ones(DLA_F32, "CB", DLA_DIMS(2, 3));
        /* At creation: the trial run. */
        unpaired_on = 1;
        dla_layer *l[] = {dla_feature_input_layer(2, NULL),
                          dla_custom_layer("unpairedScopes", NULL,
                                           &(dla_layer_options){.name = "u"})};
        assert_null(dla_net_create(2, l));
        assert_non_null(strstr(dla_last_error(), "layer 'u' (unpairedScopes): its predict"));
        assert_non_null(strstr(dla_last_error(), what));
        assert_int_equal(dla_scope_depth(), depth);
        dla_layer *li[] = {dla_feature_input_layer(2, NULL),
                           dla_custom_layer("unpairedInit", NULL,
                                            &(dla_layer_options){.name = "ui"})};
        assert_null(dla_net_create(2, li));
        assert_non_null(strstr(dla_last_error(), "dla_net_init: layer 'ui' (unpairedInit): its "
                                                 "initialize"));
        assert_non_null(strstr(dla_last_error(), what));
        assert_int_equal(dla_scope_depth(), depth);
        unpaired_on = 0;
        dla_layer *l2[] = {dla_feature_input_layer(2, NULL),
                           dla_custom_layer("unpairedScopes", NULL,
                                            &(dla_layer_options){.name = "u"})};
        dla_net *net = dla_net_create(2, l2);
        assert_non_null(net);
        for (int accel = 0; accel < 2; accel++) {
            dla_net_set_accelerate(net, accel);
            dla_tensor *y = NULL, *s = NULL;
            unpaired_on = 1;
            assert_int_equal(dla_net_forward(net, 1, &x, 1, &y, &s, NULL), DLA_ERR_STATE);
            assert_non_null(strstr(dla_last_error(), "dla_net_forward: layer 'u'"));
            assert_non_null(strstr(dla_last_error(), what));
            assert_int_equal(dla_scope_depth(), depth);
            assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_ERR_STATE);
            assert_non_null(strstr(dla_last_error(), "dla_net_predict: layer 'u'"));
            assert_int_equal(dla_scope_depth(), depth);
            /* The caller's tensor lives on, and the next good call works. */
            unpaired_on = 0;
            assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
            tu_assert_near(dla_tensor_item(y, 5), 2.0, 0);
        }
        dla_net_free(net);
        /* A backward of its own, called by dla_gradient. */
        dla_layer *l3[] = {dla_feature_input_layer(2, NULL),
                           dla_custom_layer("unpairedBackward", NULL,
                                            &(dla_layer_options){.name = "ub"})};
        net = dla_net_create(2, l3);
        assert_non_null(net);
        dla_tensor *o[2];
        unpaired_on = 1;
        assert_int_equal(dla_feval(unpaired_loss, net, 1, &x, 2, o), DLA_ERR_STATE);
        assert_non_null(strstr(dla_last_error(), "unpairedBackward: its backward"));
        assert_non_null(strstr(dla_last_error(), what));
        assert_int_equal(dla_scope_depth(), depth);
        unpaired_on = 0;
        assert_int_equal(dla_feval(unpaired_loss, net, 1, &x, 2, o), DLA_OK);
        tu_assert_near(dla_tensor_item(o[1], 0), 2.0, 0);
        dla_net_free(net);
        dla_scope_end();
    }
}

/* A forward that sets a new state past the layer's (a state its type
 * forgot to declare): an error naming the layer and the index, with or
 * without a backward of its own. It was dropped in silence, the update
 * never made. */
static dla_status extra_state_forward(dla_layer_io *io)
{
    io->y = dla_affine(io->x[0], 1, 0);
    io->new_state[0] = dla_affine(io->state[0], 1, 1);
    io->new_state[1] = dla_affine(io->state[0], 1, 2);
    return DLA_OK;
}

static const dla_layer_type extra_state_type = {
    .type = "extraState", .nproperties = 2, .properties = rmean_props,
    .initialize = rmean_init, .predict = rmean_predict,
    .forward = extra_state_forward};

static const dla_layer_type extra_state_own_type = {
    .type = "extraStateOwn", .nproperties = 2, .properties = rmean_props,
    .initialize = rmean_init, .predict = rmean_predict,
    .forward = extra_state_forward, .backward = rmean_backward};

static void a_new_state_past_the_layers_is_an_error(void **state)
{
    (void)state;
    assert_int_equal(dla_layer_type_register(&extra_state_type), DLA_OK);
    assert_int_equal(dla_layer_type_register(&extra_state_own_type), DLA_OK);
    const char *types[] = {"extraState", "extraStateOwn"};
    dla_scope_begin();
    dla_tensor *cb = dla_ones(DLA_F32, "CB", DLA_DIMS(2, 2)), *y, *s;
    for (int t = 0; t < 2; t++) {
        dla_layer *l = dla_custom_layer(types[t], NULL, &(dla_layer_options){.name = "es"});
        dla_net *net = dla_net_create(1, &l);
        assert_int_equal(dla_net_init(net, 1, &cb), DLA_OK);
        assert_int_equal(dla_net_state_count(net), 1);
        for (int accel = 0; accel < 2; accel++) {
            dla_net_set_accelerate(net, accel);
            assert_int_equal(dla_net_forward(net, 1, &cb, 1, &y, &s, NULL),
                             DLA_ERR_INVALID_ARGUMENT);
            assert_non_null(strstr(dla_last_error(), "dla_net_forward: layer 'es'"));
            assert_non_null(strstr(dla_last_error(), "its forward set io->new_state[1], but the "
                                                     "layer has 1 state parameter"));
        }
        dla_net_free(net);
    }
    dla_scope_end();
}

/* A layer with a backward of its own runs as one op, and its predict runs
 * inside that op's forward: an accelerated function it calls there
 * recorded a trace without ops (no recorder hears them) and baked its
 * result, so predict gave 0 for x.^2 from the first call on without the
 * network's acceleration, and the first call's squares ever after with it.
 * It runs itself there now. */
static dla_accel *square_af;
static dla_status square_fn(void *ctx, int nin, dla_tensor *const *in, int nout,
                            dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_square(in[0]);
    return DLA_OK;
}
static dla_status accel_square_predict(dla_layer_io *io)
{
    return dla_accel_call(square_af, NULL, 1, io->x, 1, &io->y);
}
static dla_status accel_square_backward(const dla_layer_io *io, dla_tensor *dy, dla_tensor **dx,
                                        dla_tensor **dlearnables)
{
    (void)dlearnables;
    dx[0] = dla_mul(dy, dla_affine(io->x[0], 2.0, 0.0));
    return DLA_OK;
}
static const dla_layer_type accel_square_type = {
    .type = "accelSquare", .predict = accel_square_predict, .backward = accel_square_backward};

static void an_accelerated_function_in_a_predict_with_a_backward_runs_itself(void **state)
{
    (void)state;
    assert_int_equal(dla_layer_type_register(&accel_square_type), DLA_OK);
    for (int accel = 0; accel < 2; accel++) {
        square_af = dla_accelerate(square_fn, NULL);
        dla_layer *l[] = {dla_feature_input_layer(3, &(dla_feature_input_options){
                                                         .normalization = "none"}),
                          dla_custom_layer("accelSquare", NULL, NULL)};
        dla_net *net = dla_net_create(2, l);
        assert_non_null(net);
        assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
        dla_net_set_accelerate(net, accel);
        for (int call = 0; call < 3; call++) {
            dla_scope_begin();
            const float v[3] = {1.0f + (float)call, 2.0f, -3.0f};
            dla_tensor *x = dla_tensor_from_host(v, DLA_F32, "CB", DLA_DIMS(3, 1)), *y;
            assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
            for (int i = 0; i < 3; i++)
                if (dla_tensor_item(y, i) != (double)(v[i] * v[i]))
                    fail_msg("network acceleration %d, call %d, element %d: %g, want %g", accel,
                             call, i, dla_tensor_item(y, i), (double)(v[i] * v[i]));
            dla_scope_end();
        }
        dla_net_free(net);
        dla_accel_free(square_af);
    }
}

/* The same layer in an accelerated network, the function (with a constant
 * of its own) with a trace already (recorded outside): the network's first
 * replay makes its plan, and the layer's call there replayed the
 * function's trace, whose launches are on its constants and its plan's
 * arena, memory the network's plan could not place. The network's plan
 * failed for good ("launches a kernel on memory that is neither an input,
 * a constant nor made by the replay") and every later call replayed it op
 * by op. The function runs itself while the network's plan is made, and
 * the plan holds its launches. */
static dla_status square_with_a_constant(void *ctx, int nin, dla_tensor *const *in, int nout,
                                         dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_add(dla_square(in[0]), dla_zeros(DLA_F32, "CB", DLA_DIMS(3, 1)));
    return DLA_OK;
}

static void a_layer_replaying_an_accelerated_function_keeps_the_networks_plan(void **state)
{
    (void)state;
    dla_layer_type_register(&accel_square_type); /* registered once: a repeat fails */
    square_af = dla_accelerate(square_with_a_constant, NULL);
    dla_layer *l[] = {dla_feature_input_layer(3, &(dla_feature_input_options){
                                                     .normalization = "none"}),
                      dla_custom_layer("accelSquare", NULL, NULL)};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    dla_scope_begin();
    dla_tensor *z = dla_zeros(DLA_F32, "CB", DLA_DIMS(3, 1)), *y;
    assert_int_equal(dla_accel_call(square_af, NULL, 1, &z, 1, &y), DLA_OK); /* its trace */
    for (int call = 0; call < 4; call++) { /* records, makes the plan, runs it */
        const float v[3] = {1.0f + (float)call, 2.0f, -3.0f};
        dla_tensor *x = dla_tensor_from_host(v, DLA_F32, "CB", DLA_DIMS(3, 1));
        assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_OK);
        for (int i = 0; i < 3; i++)
            if (dla_tensor_item(y, i) != (double)(v[i] * v[i]))
                fail_msg("call %d, element %d: %g, want %g", call, i, dla_tensor_item(y, i),
                         (double)(v[i] * v[i]));
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(dla_accel_print_trace(dla_net_accelerator(net), 0, f), DLA_OK);
    fclose(f);
    const int planned = strstr(text, "plan steps on") != NULL;
    if (!planned)
        fprintf(stderr, "%s", text);
    free(text);
    assert_true(planned);
    dla_scope_end();
    dla_net_free(net);
    dla_accel_free(square_af);
}

/* A describe that fills its whole buffer, unterminated (strncpy of a long
 * text): the summary shows it cut to the buffer, one byte short of it for
 * the end; it read on past the buffer (192 bytes and what followed). */
static void fill_describe(const double *props, char *buf, size_t size)
{
    (void)props;
    memset(buf, 'x', size);
}

static const dla_layer_type fill_describe_type = {
    .type = "fillDescribe", .predict = twice_predict, .describe = fill_describe};

static void an_unterminated_description_is_cut_to_its_buffer(void **state)
{
    (void)state;
    assert_int_equal(dla_layer_type_register(&fill_describe_type), DLA_OK);
    dla_layer *l[] = {dla_feature_input_layer(3, NULL),
                      dla_custom_layer("fillDescribe", NULL, NULL)};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    static char text[1 << 14];
    assert_true(dla_net_summary(net, text, sizeof text) > 0);
    /* fill_describe's run of 'x', as long as the summary kept it */
    const char *x = strstr(text, "xxx");
    assert_non_null(x);
    size_t n = strspn(x, "x");
    assert_true(n > 100 && n < 192);
    dla_net_free(net);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(registering_checks_the_definition),
        TU_TEST(outputs_by_name_run_only_the_layers_they_need),
        TU_TEST(outputs_by_name_in_forward_keep_the_state_of_later_layers),
        TU_TEST(errors_name_the_layer),
        TU_TEST(a_callback_with_unpaired_scopes_is_an_error_naming_the_layer),
        TU_TEST(a_new_state_past_the_layers_is_an_error),
        TU_TEST(an_unterminated_description_is_cut_to_its_buffer),
        TU_TEST(bad_fans_and_an_orthogonal_of_three_dims_are_refused),
        TU_TEST(a_sequence_with_a_custom_layer_runs_and_has_its_learnables),
        TU_TEST(a_graph_with_a_two_input_custom_layer),
        TU_TEST(the_summary_shows_the_type_learnables_and_description),
        TU_TEST(accelerated_predict_and_forward_equal_eager),
        TU_TEST(predict_state_gives_the_state_predict_set),
        TU_TEST(a_model_loss_accelerated_with_the_network_as_ctx),
        TU_TEST(the_page_layer_has_the_gradients_of_finite_differences),
        TU_TEST(a_backward_of_its_own_is_used_when_given),
        TU_TEST(forward_updates_the_state_predict_reads_it),
        TU_TEST(state_with_a_backward_of_its_own),
        TU_TEST(a_trace_file_names_the_custom_type),
        TU_TEST(save_and_load_keep_the_type_and_its_properties),
        TU_TEST(loading_an_unregistered_type_is_an_error_naming_it),
        TU_TEST(trainnet_trains_a_network_with_a_custom_layer),
        TU_TEST(a_frozen_first_layer_runs_no_backward_in_trainnet),
        TU_TEST(a_null_gradient_from_a_backward_is_zeros),
        TU_TEST(an_accelerated_function_in_a_predict_with_a_backward_runs_itself),
        TU_TEST(a_layer_replaying_an_accelerated_function_keeps_the_networks_plan),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
