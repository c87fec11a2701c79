/*
 * train_seqtarget.c - sequence-to-sequence targets given as one sequence
 * per observation (dla_train_data.target_sequences, MATLAB's cell array
 * of response or categorical sequences), checked once before training.
 *
 * The queue pads them with the predictors, observation by observation,
 * so a mismatch here (a count, a length) would otherwise surface as a
 * shape error in some mini-batch's loss, or not at all: a target one step
 * short padded to its batch's longest lines up with nothing. Class
 * numbers are read here once, as dla__train_check_classes reads int32
 * targets, so the per-batch one-hot encoding needs no check of its own
 * (an out-of-range number would one-hot as a column of zeros, a step that
 * silently weighs nothing).
 */
#include <dlaccel.h>

#include "nn/nn.h"
#include "nn/train_impl.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

int dla__train_seq_targets_are_classes(const dla_seqlist *t, int64_t k)
{
    return dla_seqlist_channels(t) == 1 && k > 1;
}

/* The first value of sequence i that is not a whole number in 0..k-1:
 * its step, or -1; *lo, *hi the smallest and largest values seen. */
static int64_t first_bad_class(const dla_seqlist *t, int64_t i, int64_t k, float *lo, float *hi)
{
    const float *v = dla_seqlist_data(t, i);
    int64_t len = dla_seqlist_length(t, i);
    for (int64_t s = 0; s < len; s++) {
        *lo = v[s] < *lo ? v[s] : *lo;
        *hi = v[s] > *hi ? v[s] : *hi;
        if (!(v[s] >= 0 && v[s] < (float)k && v[s] == floorf(v[s])))
            return s;
    }
    return -1;
}

dla_status dla__train_check_target_sequences(const char *fn, const char *what, const dla_seqlist *x,
                                             const dla_seqlist *t, const char *out_format,
                                             int64_t k)
{
    const int64_t n = dla_seqlist_count(x), nt = dla_seqlist_count(t), c = dla_seqlist_channels(t);
    if (nt != n)
        return dla_set_error(DLA_ERR_SHAPE,
                             "%s: %s: target_sequences holds %lld sequences for %lld predictor "
                             "sequences: one target sequence per observation", fn, what,
                             (long long)nt, (long long)n);
    if (!strchr(out_format, 'T') || !strchr(out_format, 'C'))
        return dla_set_error(DLA_ERR_SHAPE,
                             "%s: %s: target_sequences are sequence-to-sequence targets but the "
                             "network's output (\"%s\") is not a sequence with channels: end it "
                             "with a sequence (OutputMode \"sequence\"), or give one target per "
                             "observation in targets", fn, what, out_format);
    const int classes = dla__train_seq_targets_are_classes(t, k);
    if (!classes && c != k)
        return dla_set_error(DLA_ERR_SHAPE,
                             "%s: %s: target_sequences have %lld channels where the network's "
                             "output (\"%s\") has %lld: give %lld responses per step, or one "
                             "class number (0..%lld) per step", fn, what, (long long)c, out_format,
                             (long long)k, (long long)k, (long long)(k - 1));
    for (int64_t i = 0; i < n; i++) {
        int64_t lx = dla_seqlist_length(x, i), lt = dla_seqlist_length(t, i);
        if (lx != lt)
            return dla_set_error(DLA_ERR_SHAPE,
                                 "%s: %s: target_sequences[%lld] has %lld time steps, its "
                                 "predictor sequence %lld: sequence-to-sequence targets need one "
                                 "per step", fn, what, (long long)i, (long long)lt, (long long)lx);
    }
    if (!classes)
        return DLA_OK;
    float lo = INFINITY, hi = -INFINITY;
    int64_t bad_i = -1, bad_s = -1;
    for (int64_t i = 0; i < n; i++) {
        int64_t s = first_bad_class(t, i, k, &lo, &hi);
        if (s >= 0 && bad_i < 0) {
            bad_i = i;
            bad_s = s;
        }
    }
    if (bad_i < 0)
        return DLA_OK;
    /* All whole numbers in 1..K: MATLAB's numbering (as int32 targets). */
    int one_based = lo >= 1 && hi <= (float)k;
    for (int64_t i = 0; one_based && i < n; i++) {
        const float *v = dla_seqlist_data(t, i);
        for (int64_t s = 0; s < dla_seqlist_length(t, i); s++)
            one_based &= v[s] == floorf(v[s]);
    }
    return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                         "%s: %s: target_sequences[%lld] step %lld is %g, which is not a class "
                         "number in 0..%lld (the network's output has %lld class%s)%s", fn, what,
                         (long long)bad_i, (long long)bad_s,
                         (double)dla_seqlist_data(t, bad_i)[bad_s], (long long)(k - 1),
                         (long long)k, k == 1 ? "" : "es",
                         one_based ? "; the class numbers look 1-based: MATLAB numbers categories "
                                     "from 1, dlaccel numbers classes from 0 (subtract 1)"
                                   : "");
}
