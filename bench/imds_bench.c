/*
 * imds_bench.c - figures for the image datastore (bench/datastore.sh runs
 * it): how fast a folder of PNG files is read and decoded, and how much
 * memory a pass of a mini-batch queue over it takes against the same pass
 * over the IDX files in memory.
 *
 *     imds-bench decode DIR THREADS REPS   images/s of reading DIR whole, per rep
 *     imds-bench queue DIR|--idx           one pass of a queue (128 per batch,
 *                                          background dispatch, cast to single):
 *                                          seconds and peak RSS (VmHWM)
 */
#define _POSIX_C_SOURCE 200809L
#include <dlaccel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "examples/example_clock.h"

static int fail(const char *what)
{
    fprintf(stderr, "imds-bench: %s: %s\n", what, dla_last_error());
    return 1;
}

static int decode(const char *dir, int threads, int reps)
{
    dla_imds *ds;
    if (dla_imds_create(dir, &(dla_imds_options){.dtype = DLA_U8, .read_size = 256,
                                                  .read_threads = threads},
                        &ds) != DLA_OK)
        return fail(dir);
    for (int r = 0; r < reps; r++) {
        dla_imds_reset(ds);
        double t0 = now();
        while (dla_imds_hasdata(ds)) {
            dla_scope_begin();
            dla_tensor *x;
            if (dla_imds_read(ds, &x, NULL) != DLA_OK)
                return fail("read");
            dla_scope_end();
        }
        double s = now() - t0;
        printf("decode threads=%d files=%lld seconds=%.3f images_per_s=%.0f\n", threads,
               (long long)dla_imds_num_files(ds), s, (double)dla_imds_num_files(ds) / s);
        fflush(stdout);
    }
    dla_imds_free(ds);
    return 0;
}

static int queue(const char *dir)
{
    dla_tensor *x = NULL, *t = NULL;
    dla_imds *ds = NULL;
    int idx = !strcmp(dir, "--idx");
    if (idx) {
        if (dla_fashion_mnist_load(NULL, "train", &(dla_fashion_mnist_options){.dtype = DLA_U8},
                                   &x, &t) != DLA_OK)
            return fail("IDX");
    } else {
        if (dla_imds_create(dir, &(dla_imds_options){.dtype = DLA_U8}, &ds) != DLA_OK)
            return fail(dir);
        t = dla_imds_labels(ds);
    }
    dla_mbq *q;
    if (dla_mbq_create(2, (dla_mbq_input[]){{.tensor = x, .images = ds, .cast = "single"},
                                            {.tensor = t}},
                       &(dla_mbq_options){.mini_batch_size = 128, .dispatch_in_background = 1,
                                          .seed = 0},
                       &q) != DLA_OK)
        return fail("queue");
    dla_mbq_shuffle(q);
    double t0 = now();
    int64_t n = 0;
    while (dla_mbq_hasdata(q)) {
        dla_scope_begin();
        dla_tensor *b[2];
        if (dla_mbq_next(q, 2, b) != DLA_OK)
            return fail("next");
        n += dla_tensor_dim(b[0], 4);
        dla_scope_end();
    }
    printf("queue source=%s images=%lld seconds=%.2f peak_rss_mib=%.1f\n", idx ? "idx" : "folder",
           (long long)n, now() - t0, peak_rss_mib());
    dla_mbq_free(q);
    dla_tensor_release(x);
    dla_tensor_release(t);
    dla_imds_free(ds);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 5 && !strcmp(argv[1], "decode"))
        return decode(argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc == 3 && !strcmp(argv[1], "queue"))
        return queue(argv[2]);
    fprintf(stderr, "usage: imds-bench decode DIR THREADS REPS | queue DIR|--idx\n");
    return 2;
}
