/*
 * slice_layer.c - the custom layer of a MATLAB Answers question (issue 3):
 * a batch of 3 x 10 feature maps is reshaped so the three maps of each
 * observation lie along a dim of their own, and two channel-wise separable
 * convolutions of slice differences are added up:
 *
 *     Z  = reshape(X, [h w c 3 N/3]);
 *     Z2 = dlconv(Z(:,:,:,2,:) - Z(:,:,:,1,:), KiMinus, bias(1), Padding="same")
 *          + Z(:,:,:,2,:)
 *          + dlconv(Z(:,:,:,2,:) - Z(:,:,:,3,:), KiPlus, bias(2), Padding="same");
 *
 * In MATLAB the backward of this layer spent 68% of the training step in
 * the indexing backward (an accumarray scattering every element of dZ).
 * Here reshape and slices are views, and their backward adds each slice's
 * gradient into one buffer for X with a strided add: each element of dX
 * is written once.
 *
 * The program runs the layer forward and backward (dla_feval with
 * dla_gradient of sum(out .* G) with respect to X, the two filters and the
 * biases), times both, times the same function accelerated with
 * dla_accelerate, and checks the gradients against finite differences in
 * double precision on a small copy of the layer.
 *
 *     slice_layer [--small] [--full]
 *
 * Default size 64x64x16x30 (../shared/peers/slice_backward.py's);
 * --full: the question's 256x256x64x30 (X is 480 MiB, about 3 GiB in all);
 * --small (or DLA_EXAMPLE_SMALL=1): 16x16x4x6, for `make check`.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "example_args.h"
#include <dlaccel.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples/example_clock.h"

typedef struct layer_size {
    int64_t h, w, c, b; /* X is h x w x c x b, b = 3 x observations */
} layer_size;

/* The layer's forward: in = X, KiMinus, KiPlus, bias (2 x 1). */
static dla_tensor *layer_forward(const layer_size *s, dla_tensor *const *in)
{
    int64_t obs = s->b / 3;
    dla_tensor *z = dla_reshape(in[0], "", DLA_DIMS(s->h, s->w, s->c, 3, obs));
    dla_tensor *zk[3];
    for (int k = 0; k < 3; k++) /* squeeze(Z(:,:,:,k,:)) labelled "SSCB": views */
        zk[k] = dla_reshape(dla_slice(z, 4, k, 1, k + 1), "SSCB", DLA_DIMS(s->h, s->w, s->c, obs));
    dla_conv_options same = {.padding_mode = "same"};
    dla_tensor *b1 = dla_slice(in[3], 1, 0, 1, 1), *b2 = dla_slice(in[3], 1, 1, 1, 2);
    dla_tensor *out = dla_add(dla_conv(dla_sub(zk[1], zk[0]), in[1], NULL, &same), b1);
    out = dla_add(out, zk[1]);
    return dla_add(out, dla_add(dla_conv(dla_sub(zk[1], zk[2]), in[2], NULL, &same), b2));
}

/* loss = sum(out .* G); gradients with respect to X, KiMinus, KiPlus, bias.
 * in = X, KiMinus, KiPlus, bias, G. ctx: the size. */
static dla_status layer_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin;
    out[0] = dla_sum(dla_mul(layer_forward(ctx, in), in[4]), 0, NULL);
    if (nout == 1)
        return dla_tensor_status(out[0]);
    return dla_gradient(out[0], 4, in, out + 1);
}

/* The forward alone inside dla_feval, for its time. */
static dla_status layer_only(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    out[0] = layer_forward(ctx, in);
    return dla_tensor_status(out[0]);
}

/* X, the filters (3x3 x 1 channel per group x 1 filter per group x c
 * groups: channel-wise separable), the biases and G, in dtype. */
static void make_inputs(const layer_size *s, dla_dtype dtype, dla_tensor **in)
{
    dla_rng_seed(7);
    in[0] = dla_keep(dla_cast(dla_randn(DLA_F32, "SSCB", DLA_DIMS(s->h, s->w, s->c, s->b)), dtype));
    in[1] = dla_keep(dla_cast(dla_affine(dla_randn(DLA_F32, "", DLA_DIMS(3, 3, 1, 1, s->c)), 0.1, 0), dtype));
    in[2] = dla_keep(dla_cast(dla_affine(dla_randn(DLA_F32, "", DLA_DIMS(3, 3, 1, 1, s->c)), 0.1, 0), dtype));
    in[3] = dla_keep(dla_cast(dla_tensor_from_host((float[]){0.1f, -0.2f}, DLA_F32, "", DLA_DIMS(2, 1)), dtype));
    in[4] = dla_keep(dla_cast(dla_randn(DLA_F32, "SSCB", DLA_DIMS(s->h, s->w, s->c, s->b / 3)), dtype));
}

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

/* The gradients against central differences at a few elements of each
 * input, in double; returns the largest relative error. */
static double gradient_check(void)
{
    layer_size s = {6, 5, 3, 6};
    dla_tensor *in[5], *out[5];
    dla_scope_begin();
    make_inputs(&s, DLA_F64, in);
    double worst = 0;
    if (dla_feval(layer_loss, &s, 5, in, 5, out) != DLA_OK) {
        worst = INFINITY;
        goto done;
    }
    for (int k = 0; k < 4; k++) {
        int64_t n = dla_tensor_numel(in[k]);
        double *v = malloc(sizeof *v * (size_t)n);
        dla_tensor_to_host(in[k], v, sizeof *v * (size_t)n);
        int64_t dims[DLA_MAX_DIMS];
        int nd = dla_tensor_dims(in[k], dims);
        for (int probe = 0; probe < 8; probe++) {
            int64_t i = (probe * 7919 + k * 31) % n;
            double f[2], h = 1e-6, keep = v[i];
            for (int side = 0; side < 2; side++) {
                v[i] = keep + (side ? h : -h);
                dla_tensor *moved[5] = {in[0], in[1], in[2], in[3], in[4]};
                moved[k] = dla_tensor_from_host(v, DLA_F64, dla_tensor_format(in[k]), nd, dims);
                dla_tensor *l;
                dla_feval(layer_loss, &s, 5, moved, 1, &l);
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
    dla_scope_end();
    for (int i = 0; i < 5; i++)
        dla_tensor_release(in[i]);
    return worst;
}

int main(int argc, char **argv)
{
    const char *env = getenv("DLA_EXAMPLE_SMALL");
    int small = env && *env && strcmp(env, "0"), full = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--small"))
            small = 1;
        else if (!strcmp(argv[i], "--full"))
            full = 1;
        else
            return example_usage(argv[0], "[--small] [--full]", argv[i]);
    }
    layer_size s = full ? (layer_size){256, 256, 64, 30}
                   : small ? (layer_size){16, 16, 4, 6}
                           : (layer_size){64, 64, 16, 30};
    int reps = full ? 5 : small ? 5 : 20;
    dla_tensor *in[5];
    dla_scope_begin();
    make_inputs(&s, DLA_F32, in);
    dla_scope_end();
    if (dla_tensor_status(in[4]) != DLA_OK) {
        fprintf(stderr, "slice_layer: %s\n", dla_last_error());
        return 1;
    }
    printf("custom layer on %s: X %lldx%lldx%lldx%lld SSCB -> Z %lldx%lldx%lldx3x%lld (a view) -> "
           "out %lldx%lldx%lldx%lld SSCB\n", dla_device_name(dla_device_current()),
           (long long)s.h, (long long)s.w, (long long)s.c, (long long)s.b, (long long)s.h,
           (long long)s.w, (long long)s.c, (long long)s.b / 3, (long long)s.h, (long long)s.w,
           (long long)s.c, (long long)s.b / 3);

    /* Forward alone, then forward and backward, eager. */
    double tf[64], ts[64], ta[64];
    dla_tensor *out[5];
    for (int r = 0; r < reps + 1; r++) {
        dla_scope_begin();
        double t0 = now();
        dla_status st = dla_feval(layer_only, &s, 5, in, 1, out);
        if (st == DLA_OK)
            st = dla_device_sync(dla_device_current());
        double t1 = now();
        if (st == DLA_OK)
            st = dla_feval(layer_loss, &s, 5, in, 5, out);
        if (st == DLA_OK)
            st = dla_device_sync(dla_device_current());
        double t2 = now();
        if (st != DLA_OK) {
            fprintf(stderr, "slice_layer: %s\n", dla_last_error());
            return 1;
        }
        if (r) { /* the first is a warm-up */
            tf[r - 1] = (t1 - t0) * 1e3;
            ts[r - 1] = (t2 - t1) * 1e3;
        }
        if (r == reps) {
            char d[4][128];
            for (int k = 0; k < 4; k++)
                dla_tensor_describe(out[1 + k], d[k], sizeof d[k]);
            printf("gradients: dX %s, dKiMinus %s, dKiPlus %s, dbias %s\n", d[0], d[1], d[2], d[3]);
            printf("loss %.6g\n", dla_tensor_item(out[0], 0));
        }
        dla_scope_end();
    }
    double fwd = median(tf, reps), step = median(ts, reps);
    printf("eager: forward %.3f ms, forward + backward %.3f ms (backward %.3f ms), medians of %d\n",
           fwd, step, step - fwd, reps);

    /* The same function accelerated: recorded once, replayed. */
    dla_accel *acc = dla_accelerate(layer_loss, &(dla_accel_options){.name = "sliceLayerLoss"});
    for (int r = 0; r < reps + 1; r++) {
        dla_scope_begin();
        double t0 = now();
        dla_status st = dla_accel_feval(acc, &s, 5, in, 5, out);
        if (st == DLA_OK)
            st = dla_device_sync(dla_device_current());
        if (st != DLA_OK) {
            fprintf(stderr, "slice_layer: %s\n", dla_last_error());
            return 1;
        }
        if (r)
            ta[r - 1] = (now() - t0) * 1e3;
        dla_scope_end();
    }
    printf("accelerated: forward + backward %.3f ms (median of %d), HitRate %.1f%%, Occupancy %g\n",
           median(ta, reps), reps, dla_accel_hit_rate(acc), dla_accel_occupancy_percent(acc));
    dla_accel_free(acc);
    if (!small && !full)
        printf("PyTorch 1.13 at this size: forward 2.27 ms, backward 11.15 ms with plain "
               "indexing\n");

    double err = gradient_check();
    printf("gradient check (double, 6x5x3x6, 8 elements of each input against central "
           "differences): largest relative error %.2e: %s\n", err, err < 1e-6 ? "ok" : "FAILED");
    for (int i = 0; i < 5; i++)
        dla_tensor_release(in[i]);
    return err < 1e-6 ? 0 : 1;
}
