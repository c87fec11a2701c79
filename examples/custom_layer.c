/*
 * custom_layer.c - the MATLAB Answers page's custom layer (issue 18) as a
 * dlaccel layer type (examples/slice_diff_layer.h), in a small network
 * trained with trainnet: MATLAB's
 *
 *     layers = [sliceDiffConvLayer(NumTimeSteps=3)
 *               convolution2dLayer(3, 2, Padding="same")];
 *     net = trainnet(X, T, dlnetwork(layers, Initialize=false), "mse", options);
 *
 * X holds observations of three frames each, "SSCBT" h x w x c x N x 3
 * (the page's 256x256x64x30 batch is 10 observations of 3 frames); the
 * targets T ("SSCB" h x w x 2 x N) come from a teacher network of the same
 * architecture, so the loss can fall to zero. The program prints the
 * summary, trains, saves and loads the network (predictions equal),
 * compares accelerated and eager predict, and checks the layer's
 * gradients against finite differences in double.
 *
 *     custom_layer [--small] [--full]
 *     custom_layer --bench custom|free [--double] [--full] [--reps N]
 *
 * Default 32x32x8 frames, 48 observations; --small (or
 * DLA_EXAMPLE_SMALL=1): 12x12x4, 24 observations, for `make check`;
 * --full: the page's 256x256x64 frames, 10 observations (one mini-batch of
 * the page's 30 frames; X is 480 MiB in single).
 *
 * --bench times forward + backward (dla_feval of sum(Z .* G) with the
 * gradients of X and the three learnables) on the page's layout, "SSCB"
 * h x w x c x 30 (64x64x16 frames; --full 256x256x64), as a custom layer
 * in a one-layer network ("custom", the network's own acceleration on) or
 * as the free function of examples/slice_layer.c ("free", eager), in
 * single or --double, and prints the median time and the peak RSS of the
 * process: run each mode in a process of its own to compare memory.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime, mkdtemp */
#include "example_args.h"
#include "slice_diff_layer.h"

#include <dlaccel.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "examples/example_clock.h"

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int fail(const char *what)
{
    fprintf(stderr, "custom_layer: %s: %s\n", what, dla_last_error());
    return 1;
}

/* [sliceDiffConv, conv 3x3 x 2 'same'], uninitialized (trainnet does it
 * from the data) or initialized with example. */
static dla_net *make_net(dla_tensor *example)
{
    dla_layer *l[] = {
        dla_custom_layer(SLICE_DIFF_TYPE, (double[]){3}, &(dla_layer_options){.name = "slicediff"}),
        dla_conv2d_layer(3, 3, 2, &(dla_conv_layer_options){.padding_mode = "same", .name = "conv"}),
    };
    dla_net *net = dla_net_create(2, l);
    if (net && example && dla_net_init(net, 1, &example) != DLA_OK) {
        dla_net_free(net);
        return NULL;
    }
    return net;
}

static double max_abs_diff(dla_tensor *a, dla_tensor *b)
{
    dla_scope_begin();
    double d = dla_tensor_item(dla_max(dla_abs(dla_sub(a, b)), 0, NULL), 0);
    dla_scope_end();
    return d;
}

/* ------------------------------------------------------- gradient check */

typedef struct grad_ctx {
    dla_net *net;
    dla_tensor *g;
} grad_ctx;

/* loss = sum(predict(net, X) .* G); the gradients of the learnables. */
static dla_status grad_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin;
    grad_ctx *c = ctx;
    dla_tensor *y;
    dla_net_forward_options o = {.learnables = in + 1};
    dla_status st = dla_net_forward(c->net, 1, in, 1, &y, NULL, &o);
    if (st != DLA_OK)
        return st;
    out[0] = dla_sum(dla_mul(y, c->g), 0, NULL);
    return nout == 1 ? dla_tensor_status(out[0]) : dla_gradient(out[0], nout - 1, in, out + 1);
}

/* The gradients of X and every learnable against central differences at
 * a few elements of each, in double; the largest relative error. */
static double gradient_check(void)
{
    dla_scope_begin();
    dla_rng_seed(11);
    dla_tensor *x = dla_randn(DLA_F64, "SSCBT", DLA_DIMS(6, 5, 3, 2, 3));
    dla_net *net = make_net(dla_slice(x, 4, 0, 1, 1));
    double worst = INFINITY;
    if (!net)
        goto done;
    int nl = dla_net_learnable_count(net);
    dla_tensor *in[8], *out[9];
    in[0] = x;
    /* The learnables moved off their start, so that every term is non-zero
     * (the bias starts at zeros). */
    for (int i = 0; i < nl; i++) {
        dla_tensor *v = dla_table_value(dla_net_learnables(net), i);
        int64_t dims[DLA_MAX_DIMS];
        int nd = dla_tensor_dims(v, dims);
        in[1 + i] = dla_add(v, dla_affine(dla_randn(DLA_F64, "", nd, dims), 0.1, 0));
    }
    grad_ctx c = {net, dla_randn(DLA_F64, "SSCB", DLA_DIMS(6, 5, 2, 2))};
    if (dla_feval(grad_loss, &c, 1 + nl, in, 2 + nl, out) != DLA_OK)
        goto done;
    worst = 0;
    for (int k = 0; k < 1 + nl; k++) {
        int64_t n = dla_tensor_numel(in[k]), dims[DLA_MAX_DIMS];
        int nd = dla_tensor_dims(in[k], dims);
        double *v = malloc(sizeof *v * (size_t)n);
        dla_tensor_to_host(in[k], v, sizeof *v * (size_t)n);
        for (int probe = 0; probe < 8; probe++) {
            int64_t i = (probe * 7919 + k * 31) % n;
            double f[2], h = 1e-6, keep = v[i];
            for (int side = 0; side < 2; side++) {
                v[i] = keep + (side ? h : -h);
                dla_tensor *moved[8];
                memcpy(moved, in, sizeof moved);
                moved[k] = dla_tensor_from_host(v, DLA_F64, dla_tensor_format(in[k]), nd, dims);
                dla_tensor *l;
                dla_feval(grad_loss, &c, 1 + nl, moved, 1, &l);
                f[side] = dla_tensor_item(l, 0);
            }
            v[i] = keep;
            double fd = (f[1] - f[0]) / (2 * h), g = dla_tensor_item(out[1 + k], i);
            double err = fabs(fd - g) / (1e-6 + fabs(fd) + fabs(g));
            worst = err > worst ? err : worst;
        }
        free(v);
    }
done:
    dla_net_free(net);
    dla_scope_end();
    return worst;
}

/* ------------------------------------------------------------ the bench */

typedef struct bench_ctx {
    dla_net *net; /* custom: the network; free: NULL */
    int64_t steps;
} bench_ctx;

/* in = X, G, KiMinus, KiPlus, Bias; out = loss, dX, dKiMinus, dKiPlus, dBias. */
static dla_status bench_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    bench_ctx *b = ctx;
    dla_tensor *y;
    if (b->net) {
        dla_status st = dla_net_forward(b->net, 1, in, 1, &y, NULL,
                                        &(dla_net_forward_options){.learnables = in + 2});
        if (st != DLA_OK)
            return st;
    } else {
        dla_tensor *z[3];
        dla_status st = slice_diff_frames(in[0], b->steps, z);
        if (st != DLA_OK)
            return st;
        y = slice_diff_compute(z, in + 2);
    }
    out[0] = dla_sum(dla_mul(y, in[1]), 0, NULL);
    dla_tensor *wrt[4] = {in[0], in[2], in[3], in[4]};
    return dla_gradient(out[0], 4, wrt, out + 1);
}

static int bench(const char *mode, int full, dla_dtype dtype, int reps)
{
    int custom = !strcmp(mode, "custom");
    if (!custom && strcmp(mode, "free")) {
        fprintf(stderr, "custom_layer: --bench takes custom or free\n");
        return 2;
    }
    int64_t h = full ? 256 : 64, w = h, c = full ? 64 : 16, b = 30;
    dla_scope_begin();
    dla_rng_seed(7);
    /* Generated in single (as slice_layer does) and cast. */
    dla_tensor *x = dla_keep(dla_cast(dla_randn(DLA_F32, "SSCB", DLA_DIMS(h, w, c, b)), dtype));
    dla_tensor *g = dla_keep(dla_cast(dla_randn(DLA_F32, "SSCB", DLA_DIMS(h, w, c, b / 3)), dtype));
    /* The same learnables either way: the network's initial ones. */
    dla_layer *l = dla_custom_layer(SLICE_DIFF_TYPE, (double[]){3}, NULL);
    dla_net *net = dla_net_create(1, &l);
    dla_tensor *ex = dla_slice(x, 4, 0, 1, 3);
    if (!net || dla_net_init(net, 1, &ex) != DLA_OK)
        return fail("the network");
    dla_tensor **lv = dla_table_values(dla_net_learnables(net));
    dla_tensor *bias = dla_keep(dla_cast(dla_tensor_from_host((float[]){0.1f, -0.2f}, DLA_F32, "",
                                                              DLA_DIMS(2, 1)), dtype));
    dla_tensor *in[5] = {x, g, lv[0], lv[1], bias};
    dla_scope_end();
    bench_ctx ctx = {custom ? net : NULL, 3};
    double t[64];
    if (reps > 63)
        reps = 63;
    printf("%s layer, %s, X %lldx%lldx%lldx%lld SSCB (frames along B), on %s\n",
           custom ? "custom" : "free-function", dtype == DLA_F64 ? "double" : "single",
           (long long)h, (long long)w, (long long)c, (long long)b,
           dla_device_name(dla_device_current()));
    for (int r = 0; r < reps + 1; r++) {
        dla_scope_begin();
        dla_tensor *out[5];
        double t0 = now();
        dla_status st = dla_feval(bench_loss, &ctx, 5, in, 5, out);
        if (st == DLA_OK)
            st = dla_device_sync(dla_device_current());
        double t1 = now();
        if (st != DLA_OK)
            return fail("forward + backward");
        if (r)
            t[r - 1] = (t1 - t0) * 1e3;
        else
            printf("loss %.6g, |dX| sum %.6g (first run %.1f ms)\n", dla_tensor_item(out[0], 0),
                   dla_tensor_item(dla_sum(dla_abs(out[1]), 0, NULL), 0), (t1 - t0) * 1e3);
        dla_scope_end();
    }
    printf("forward + backward: %.1f ms (median of %d after a first run)\n", median(t, reps), reps);
    if (custom)
        printf("the network's HitRate: %.1f%%\n", dla_accel_hit_rate(dla_net_accelerator(net)));
    printf("peak RSS: %.0f MiB\n", peak_rss_mib());
    dla_tensor_release(x);
    dla_tensor_release(g);
    dla_tensor_release(bias);
    dla_net_free(net);
    return 0;
}

/* ------------------------------------------------------------- training */

int main(int argc, char **argv)
{
    const char *env = getenv("DLA_EXAMPLE_SMALL");
    int small = env && *env && strcmp(env, "0"), full = 0, reps = 3;
    dla_dtype dtype = DLA_F32;
    const char *bench_mode = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--small"))
            small = 1;
        else if (!strcmp(argv[i], "--full"))
            full = 1;
        else if (!strcmp(argv[i], "--double"))
            dtype = DLA_F64;
        else if (!strcmp(argv[i], "--bench") && i + 1 < argc)
            bench_mode = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
        {
            if (!example_int32("custom_layer", "--reps", argv[++i], 1, 1000000000, &reps))
                return 2;
        } else
            return example_usage(argv[0],
                                 "[--small] [--full] | --bench custom|free [--double] [--full]"
                                 " [--reps N]",
                                 argv[i]);
    }
    /* MATLAB keeps a custom layer's class on its path; here the type is
     * registered once, before any network of it is made or loaded. */
    if (dla_layer_type_register(&slice_diff_type) != DLA_OK)
        return fail("registering the layer type");
    if (bench_mode)
        return bench(bench_mode, full, dtype, reps);

    int64_t h = full ? 256 : small ? 12 : 32, c = full ? 64 : small ? 4 : 8;
    int64_t n = full ? 10 : small ? 24 : 48;
    dla_scope_begin();
    dla_rng_seed(1);
    dla_tensor *x = dla_randn(DLA_F32, "SSCBT", DLA_DIMS(h, h, c, n, 3));
    /* The teacher: the same architecture with other weights. */
    dla_net *teacher = make_net(dla_slice(x, 4, 0, 1, 1));
    dla_tensor *t;
    if (!teacher || dla_net_predict(teacher, 1, &x, 1, &t, NULL) != DLA_OK)
        return fail("the teacher");
    dla_net_free(teacher);

    dla_net *net = make_net(NULL);
    dla_tensor *one = dla_slice(x, 4, 0, 1, 1);
    dla_net *shown = make_net(one);
    if (!net || !shown)
        return fail("the network");
    printf("X: %lldx%lldx%lldx%lldx3 SSCBT (%lld observations of 3 frames), T: %lldx%lldx2x%lld "
           "SSCB\n\n", (long long)h, (long long)h, (long long)c, (long long)n, (long long)n,
           (long long)h, (long long)h, (long long)n);
    dla_net_print(shown, stdout);
    dla_net_free(shown);

    int64_t mb = full ? 10 : small ? 6 : 8;
    int epochs = full ? 2 : small ? 8 : 10;
    dla_training_options o = {.solver = "adam", .max_epochs = epochs, .mini_batch_size = mb,
                              .initial_learn_rate = 0.02, .verbose = 1,
                              .verbose_frequency = full ? 1 : 10};
    dla_net *trained;
    dla_training_info *info;
    printf("\n");
    if (dla_trainnet(&(dla_train_data){.predictors = x, .targets = t}, net,
                     &(dla_train_loss){.name = "mse"}, &o, &trained, &info) != DLA_OK)
        return fail("trainnet");
    int64_t it = info->iterations;
    printf("loss: %.6g at iteration 1, %.6g at iteration %lld\n", info->training_loss[0],
           info->training_loss[it - 1], (long long)it);
    printf("time per iteration: %.1f ms (%lld iterations in %.2f s)\n",
           1e3 * info->time_elapsed[it - 1] / (double)it, (long long)it,
           info->time_elapsed[it - 1]);
    dla_training_info_free(info);

    /* Saved and loaded: the type is found by its registered name. */
    char dir[] = "/tmp/dla-custom-layer-XXXXXX", file[64];
    if (!mkdtemp(dir))
        return fail("a temporary folder");
    snprintf(file, sizeof file, "%s/net.safetensors", dir);
    dla_net *back;
    if (dla_net_save(trained, file) != DLA_OK || dla_net_load(file, &back) != DLA_OK)
        return fail("save and load");
    remove(file);
    rmdir(dir);
    dla_tensor *ya, *yb, *ye;
    if (dla_net_predict(trained, 1, &x, 1, &ya, NULL) != DLA_OK ||
        dla_net_predict(back, 1, &x, 1, &yb, NULL) != DLA_OK)
        return fail("predict");
    printf("save and load: predictions of the loaded network differ by %g\n",
           max_abs_diff(ya, yb));
    /* Accelerated (the default, a replay now) against eager. */
    dla_net_predict(trained, 1, &x, 1, &ya, NULL);
    dla_net_set_accelerate(trained, 0);
    if (dla_net_predict(trained, 1, &x, 1, &ye, NULL) != DLA_OK)
        return fail("eager predict");
    printf("accelerated predict against eager: largest difference %g, HitRate %.1f%%\n",
           max_abs_diff(ya, ye), dla_accel_hit_rate(dla_net_accelerator(trained)));
    printf("peak RSS: %.0f MiB\n", peak_rss_mib());
    dla_net_free(back);
    dla_net_free(trained);
    dla_net_free(net);
    dla_scope_end();

    double err = gradient_check();
    printf("gradient check (double, 6x5x3x2x3 SSCBT, 8 elements of X and of each learnable "
           "against central differences): largest relative error %.2e: %s\n", err,
           err < 1e-6 ? "ok" : "FAILED");
    return err < 1e-6 ? 0 : 1;
}
