/*
 * recordings.h - the sensor recordings the datastore examples write as CSV
 * files and read back: a noisy oscillation whose frequency tells its class
 * (slow, medium, fast), with an offset and a gain of its own, one file
 * per recording, the classes kept apart as a labelling tool gives them.
 */
#ifndef DLA_EXAMPLES_RECORDINGS_H
#define DLA_EXAMPLES_RECORDINGS_H

#include "example_cli.h"

#include <dlaccel.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#define RECORDING_CLASSES 3
/* Frequencies are in cycles per this many readings, whatever a
 * recording's length, so that a class is a rate, not a count. */
#define RECORDING_PERIOD 32
static const char *const recording_class_names[RECORDING_CLASSES] = {"slow", "medium", "fast"};

/* Writes count recordings as dir/rec00000.csv ... of min_len..max_len
 * readings each (no length drawn when they are equal: the stream of
 * fixed-length recordings is as it was) and their classes into labels.
 * Returns 0, or 1 after a message. */
static inline int recordings_write(const char *dir, int64_t count, uint64_t *s, int32_t *labels,
                                   int min_len, int max_len)
{
    static const double cycles[RECORDING_CLASSES][2] = {{1.0, 2.5}, {2.5, 4.0}, {4.0, 6.0}};
    for (int64_t i = 0; i < count; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rec%05lld.csv", dir, (long long)i);
        FILE *f = fopen(path, "w");
        if (!f) {
            perror(path);
            return 1;
        }
        const int k = (int)(example_next(s) % RECORDING_CLASSES);
        const double freq = example_uniform(s, cycles[k][0], cycles[k][1]);
        const double phase = example_uniform(s, 0, 6.3);
        const double offset = example_uniform(s, -5, 5), gain = example_uniform(s, 0.5, 3);
        const int len = min_len == max_len
                            ? min_len
                            : min_len + (int)(example_next(s) % (uint64_t)(max_len - min_len + 1));
        for (int t = 0; t < len; t++)
            fprintf(f, "%s%.6f", t ? "," : "",
                    offset + gain * (sin(6.283185307179586 * freq * t / RECORDING_PERIOD + phase) +
                                     example_uniform(s, -1.0, 1.0)));
        fprintf(f, "\n");
        labels[i] = k;
        if (fclose(f)) {
            perror(path);
            return 1;
        }
    }
    return 0;
}

/* The readings of the file at path into v[0..max-1], *got of them; 0, or
 * 1 when the file cannot be opened. */
static inline int recordings_read(const char *path, float *v, int max, int *got)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return 1;
    *got = 0;
    while (*got < max && fscanf(f, *got ? " ,%f" : "%f", &v[*got]) == 1)
        (*got)++;
    fclose(f);
    return 0;
}

/* transform's function: a recording less its mean, over its standard
 * deviation, along the dim *ctx (an int64_t: 1 for a READINGS x 1 "CB"
 * recording, 3 for a 1 x 1 x T sequence), so that the network sees the
 * oscillation, not the sensor's offset and gain. */
static inline dla_status recordings_normalize(void *ctx, int nin, dla_tensor *const *in, int nout,
                                              dla_tensor **out)
{
    (void)nin, (void)nout;
    const int64_t *dim = ctx;
    dla_tensor *centred = dla_sub(in[0], dla_mean(in[0], 1, dim));
    dla_tensor *sd = dla_sqrt(dla_mean(dla_mul(centred, centred), 1, dim));
    out[0] = dla_div(centred, dla_affine(sd, 1, 1e-6));
    return dla_tensor_status(out[0]);
}

/* Removes the recordings and their folder. */
static inline void recordings_remove(const char *dir, int64_t count)
{
    for (int64_t i = 0; i < count; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/rec%05lld.csv", dir, (long long)i);
        unlink(path);
    }
    rmdir(dir);
}

#endif
