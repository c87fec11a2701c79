/*
 * data_waveform.c - synthetic waveform sequences for sequence
 * classification, like MATLAB's WaveformData.
 *
 * The generator makes the same draws, in the same order and with the same
 * double arithmetic, as make_data of shared/peers/waveform_seq.py (the
 * PyTorch reference of the waveform example), from the numpy-compatible
 * host stream, so a C run and the reference train on the same sequences.
 * Per sequence: class (choice with the proportions), length (integers),
 * frequency (uniform); per channel: phase, amplitude (uniform), noise
 * (normal, one per step).
 */
#include "nn/data_rng.h"
#include "nn/data_util.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

static const char OP[] = "dla_waveform_generate";

static const char *const class_names[DLA_WAVEFORM_CLASSES] = {"sawtooth", "sine", "square",
                                                              "triangle"};

DLA_API const char *dla_waveform_class_name(int label)
{
    return label >= 0 && label < DLA_WAVEFORM_CLASSES ? class_names[label] : "unknown";
}

/* The wave of class c at phase u in [0, 1), written as numpy evaluates it. */
static double wave(int c, double u)
{
    const double two_pi = 2 * 3.141592653589793;
    switch (c) {
    case 0:
        return 2 * u - 1;
    case 1:
        return sin(two_pi * u);
    case 2:
        return u < 0.5 ? 1.0 : -1.0;
    default:
        return 1 - 4 * fabs(u - 0.5);
    }
}

static dla_status check(int64_t n, const dla_waveform_options *o, const double *p)
{
    if (n < 1)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument n: %lld < 1", OP,
                              (long long)n);
    if (o->num_channels < 1 || o->min_length < 1 || o->max_length < o->min_length ||
        o->max_length > (1 << 24))
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument opts: %lld channels, lengths %lld..%lld; channels >= "
                              "1 and 1 <= min_length <= max_length <= 2^24",
                              OP, (long long)o->num_channels, (long long)o->min_length,
                              (long long)o->max_length);
    /* The byte sizes of the labels (n x 4) and of one sequence (C x
     * max_length x 4) must not wrap: they did, to a few bytes, and the
     * first sequence was written past them. The queue and trainnet take at
     * most 2^31-1 observations anyway. */
    if (n > INT32_MAX)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument n: %lld sequences; at most 2^31-1", OP, (long long)n);
    if (o->num_channels > (INT64_MAX / 4) / o->max_length)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument opts: %lld channels of up to %lld steps is too large "
                              "to hold", OP, (long long)o->num_channels, (long long)o->max_length);
    if (!(o->min_frequency <= o->max_frequency) || !(o->min_amplitude <= o->max_amplitude) ||
        !isfinite(o->min_frequency) || !isfinite(o->max_frequency) ||
        !isfinite(o->min_amplitude) || !isfinite(o->max_amplitude) || !isfinite(o->noise) ||
        /* a width that overflows draws inf or NaN (lo + (hi - lo) u) */
        !isfinite(o->max_frequency - o->min_frequency) ||
        !isfinite(o->max_amplitude - o->min_amplitude))
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument opts: frequency %g..%g, amplitude %g..%g, noise %g; "
                              "finite, with min <= max and a finite max - min",
                              OP, o->min_frequency, o->max_frequency, o->min_amplitude,
                              o->max_amplitude, o->noise);
    double total = 0;
    for (int c = 0; c < DLA_WAVEFORM_CLASSES; c++) {
        if (!(p[c] >= 0) || !isfinite(p[c]))
            return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                                  "%s: argument opts: class_proportions[%d] = %g; proportions are "
                                  "finite and >= 0",
                                  OP, c, p[c]);
        total += p[c];
    }
    if (!(total > 0))
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument opts: class_proportions are all 0", OP);
    /* The draw compares cumulative sums over the total: an infinite total
     * made every class but the last 0 / inf (1e308 four times drew class 3
     * only). */
    if (!isfinite(total))
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument opts: class_proportions add up to more than the "
                              "largest double; scale them down", OP);
    return DLA_OK;
}

DLA_API dla_status dla_waveform_generate(int64_t n, uint64_t seed, const dla_waveform_options *opts,
                                         dla_seqlist **sequences, dla_tensor **labels)
{
    if (sequences)
        *sequences = NULL;
    if (labels)
        *labels = NULL;
    if (!sequences)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument sequences is NULL", OP);
    dla_waveform_options o = opts ? *opts : (dla_waveform_options){0};
    if (!o.num_channels)
        o.num_channels = 3;
    if (!o.min_length && !o.max_length) {
        o.min_length = 100;
        o.max_length = 150;
    }
    if (o.min_frequency == 0 && o.max_frequency == 0) {
        o.min_frequency = 0.02;
        o.max_frequency = 0.10;
    }
    if (o.min_amplitude == 0 && o.max_amplitude == 0) {
        o.min_amplitude = 0.5;
        o.max_amplitude = 1.5;
    }
    if (o.noise == 0)
        o.noise = 0.15;
    const double equal[DLA_WAVEFORM_CLASSES] = {1, 1, 1, 1};
    const double *p = o.class_proportions ? o.class_proportions : equal;
    dla_status st = check(n, &o, p);
    if (st != DLA_OK)
        return st;

    const int64_t C = o.num_channels;
    dla_seqlist *s = dla_seqlist_create(C);
    float *x = dla__data_malloc((size_t)(C * o.max_length) * sizeof *x);
    int32_t *y = dla__data_malloc((size_t)n * sizeof *y);
    if (!s || !x || !y) {
        dla_seqlist_free(s);
        dla__data_free(x);
        dla__data_free(y);
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory for %lld sequences", OP,
                              (long long)n);
    }
    dla__data_rng r;
    dla__data_rng_seed(&r, seed);
    for (int64_t i = 0; i < n && st == DLA_OK; i++) {
        int c = dla__data_rng_choice(&r, DLA_WAVEFORM_CLASSES, p);
        int64_t L = dla__data_rng_integers(&r, o.min_length, o.max_length + 1);
        double f = dla__data_rng_uniform(&r, o.min_frequency, o.max_frequency);
        for (int64_t ch = 0; ch < C; ch++) {
            double phase = dla__data_rng_uniform(&r, 0, 1);
            double a = dla__data_rng_uniform(&r, o.min_amplitude, o.max_amplitude);
            for (int64_t t = 0; t < L; t++) {
                double u = fmod(f * (double)t + phase, 1.0);
                double v = a * wave(c, u);
                if (o.noise > 0)
                    v = v + (0.0 + o.noise * dla__data_rng_normal(&r));
                x[ch + C * t] = (float)v;
            }
        }
        y[i] = c;
        st = dla_seqlist_append(s, x, L);
    }
    dla__data_free(x);
    if (st == DLA_OK && labels) {
        *labels = dla__data_from_host(NULL, y, DLA_I32, "CB", DLA_DIMS(1, n));
        st = dla_tensor_status(*labels);
        if (st != DLA_OK) {
            st = dla__data_fail(st, "%s: %s", OP, dla_tensor_error(*labels));
            dla_tensor_release(*labels);
            *labels = NULL;
        } else {
            st = dla__data_deliver_all(1, labels, OP);
        }
    }
    dla__data_free(y);
    if (st != DLA_OK) {
        dla_seqlist_free(s);
        return st;
    }
    *sequences = s;
    return DLA_OK;
}
