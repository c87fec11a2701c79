/*
 * quickstart.c - the first thing a new user runs: which devices dlaccel
 * found, then a matrix product on the default device, checked and timed.
 *
 * The README's main job is now tools/quickstart.sh (examples/cnn_fmnist);
 * this stays as the smallest check that a device computes (the OpenCL
 * tests run it). Everything in it is public API; it reads as the user's
 * own code would.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlaccel.h>

#include <math.h>
#include <stdio.h>
#include <time.h>

#include "example_args.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    const int rc = example_plain_args(argc, argv, "", 0);
    if (rc >= 0)
        return rc;
    printf("dlaccel %s\n", dla_version_string());
    int ndev = dla_device_count();
    for (int i = 0; i < ndev; i++) {
        dla_device *d = dla_device_at(i);
        printf("  device %-10s %-6s %s\n", dla_device_name(d), dla_device_type(d),
               dla_device_description(d));
    }
    dla_device *dev = dla_device_default();
    if (!dev) {
        fprintf(stderr, "no device: %s\n", dla_last_error());
        return 1;
    }
    printf("default device: %s\n\n", dla_device_name(dev));

    const int64_t n = 1024;
    const int steps = 10;
    dla_rng_seed(42);
    double best = INFINITY;
    for (int step = 1; step <= steps; step++) {
        dla_scope_begin();
        /* A is all ones, so every entry of column j of C = A*B is the sum of
         * column j of B: a check that needs no second implementation. */
        dla_tensor *a = dla_ones(DLA_F32, "", DLA_DIMS(n, n));
        dla_tensor *b = dla_rand(DLA_F32, "", DLA_DIMS(n, n));
        double t0 = now_ms();
        dla_tensor *c = dla_mtimes(a, b);
        dla_device_sync(dev);
        double ms = now_ms() - t0;
        dla_tensor *err = dla_max(dla_abs(dla_sub(c, dla_sum(b, DLA_DIMS(1)))), 0, NULL);
        if (dla_tensor_status(err) != DLA_OK) {
            fprintf(stderr, "step %d failed: %s\n", step, dla_tensor_error(err));
            dla_scope_end();
            return 1;
        }
        double e = dla_tensor_item(err, 0);
        best = ms < best ? ms : best;
        printf("step %2d/%d  C = A*B (%lldx%lld single) on %s: %7.2f ms  %6.1f GFLOP/s  "
               "max error %.2g\n",
               step, steps, (long long)n, (long long)n, dla_device_name(dev), ms,
               2.0 * n * n * n / ms / 1e6, e);
        dla_scope_end();
        if (!(e < 1e-2)) {
            fprintf(stderr, "result is wrong: max error %g\n", e);
            return 1;
        }
    }
    printf("\nbest: %.2f ms = %.1f GFLOP/s. Next: dlaccel devices, dlaccel-bench.\n", best,
           2.0 * n * n * n / best / 1e6);
    return 0;
}
