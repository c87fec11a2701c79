/*
 * train_check.c - what trainnet checks before its first iteration, so that
 * a mistake fails at once instead of after an epoch, or never:
 *
 *   - the folders it will write in (the chart's, CheckpointPath) exist and
 *     are writable, and the checkpoints' paths fit in 4095 bytes, so a typo
 *     does not cost the training done before the first write;
 *   - class numbers lie in 0..K-1, K the network output's channels (an
 *     out-of-range label one-hot encodes as a column of zeros, whose loss
 *     is 0: training "succeeds" at 100% accuracy on nothing);
 *   - one-hot (or response) targets have the network output's channel
 *     count.
 *
 * The label check reads the targets once per data set (4 bytes an
 * observation), not per mini-batch: the queue only reorders what was
 * checked, so trainnet's per-batch one-hot encoding needs no check of its
 * own.
 */
#define _POSIX_C_SOURCE 200809L /* access */
#include <dlaccel.h>

#include "nn/nn.h"
#include "nn/train_impl.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ paths */

/* Fails unless folder exists, is a folder and takes new files. option and
 * given say where the path came from, in the user's words. */
static dla_status check_folder(const char *option, const char *given, const char *folder)
{
    struct stat sb;
    char where[8300];
    if (!strcmp(given, folder))
        snprintf(where, sizeof where, "%s", folder);
    else
        snprintf(where, sizeof where, "%s (the folder of %s)", folder, given);
    if (stat(folder, &sb) != 0)
        return dla_set_error(DLA_ERR_IO, "dla_trainnet: %s: %s: %s (checked before training)",
                             option, where, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return dla_set_error(DLA_ERR_IO, "dla_trainnet: %s: %s is not a folder", option, where);
    if (access(folder, W_OK | X_OK) != 0)
        return dla_set_error(DLA_ERR_IO,
                             "dla_trainnet: %s: cannot write in %s: %s (checked before training)",
                             option, where, strerror(errno));
    return DLA_OK;
}

dla_status dla__train_check_paths(const dla_training_options *o)
{
    dla_status st;
    /* The longest name a checkpoint gets in the folder: "/net_checkpoint__"
     * (17), the iteration (up to 19 digits), "__", the time stamp (20) and
     * ".safetensors" (12). A longer folder failed at the first checkpoint,
     * an epoch or more into training. */
    const size_t name_max = 17 + 19 + 2 + 20 + 12;
    if (o->checkpoint_path && strlen(o->checkpoint_path) + name_max > 4095)
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_trainnet: CheckpointPath: %.100s... "
                             "is %zu bytes; with a checkpoint's file name (up to %zu more) the "
                             "paths would pass 4095", o->checkpoint_path,
                             strlen(o->checkpoint_path), name_max);
    if (o->checkpoint_path &&
        (st = check_folder("CheckpointPath", o->checkpoint_path, o->checkpoint_path)) != DLA_OK)
        return st;
    if (o->plots && !strcmp(o->plots, "training-progress") && o->plots_path) {
        const char *p = o->plots_path;
        /* "" passed the check below (its folder is "."), and the first
         * chart, after the first epoch, failed: "argument path is NULL or
         * empty". */
        if (!*p)
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                 "dla_trainnet: Plots: plots_path is \"\"; give the chart's file "
                                 "name, or NULL for training-progress.svg");
        struct stat sb;
        if (stat(p, &sb) == 0 && S_ISDIR(sb.st_mode))
            return dla_set_error(DLA_ERR_IO,
                                 "dla_trainnet: Plots: the chart's path %s is a folder; give a file "
                                 "name (%s/training-progress.svg)", p, p);
        char folder[4096];
        if (!dla__nn_folder_of(p, folder, sizeof folder))
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_trainnet: Plots: the chart's "
                                 "path %.100s... is longer than 4095 bytes", p);
        if ((st = check_folder("Plots", p, folder)) != DLA_OK)
            return st;
    }
    return DLA_OK;
}

/* ------------------------------------------------------------- predictors */

dla_status dla__train_check_predictors(const char *fn, const char *what, dla_tensor *x,
                                       const char *in_format, int in_nd, const int64_t *in_dims)
{
    const char *xf = dla_tensor_format(x);
    const int nd = dla_tensor_ndims(x);
    const char *b = strchr(in_format, 'B');
    if (!b)
        return DLA_OK;
    /* Unformatted, the observations are the last dim: an input whose B is
     * not its last ("CBT") cannot read them so (the queue refused it
     * later, and the targets' check first spoke of class counts, counting
     * the time steps as the observations). */
    if (!*xf && (int)(b - in_format) + 1 != nd) {
        char desc[256];
        dla_tensor_describe(x, desc, sizeof desc);
        return dla_set_error(DLA_ERR_SHAPE,
                             "%s: %s: predictors (%s) are unformatted, so their observations "
                             "are read along their last dim (%d), but the network's input takes "
                             "\"%s\" data, its observations at dim %d: give the predictors that "
                             "format, with its %d dims",
                             fn, what, desc, nd, in_format, (int)(b - in_format) + 1, in_nd);
    }
    /* Unformatted: read in the input's format, dim by dim; another number
     * of dims is left to the forward's own message. */
    if (!*xf && nd != in_nd)
        return DLA_OK;
    for (int i = 0; i < in_nd; i++) {
        const char label = in_format[i];
        if (label == 'B' || label == 'T' || label == 'U')
            continue;
        int d = 0;
        if (*xf) {
            /* The k-th dim of this label, as the input's k-th. */
            int k = 0;
            for (int j = 0; j < i; j++)
                k += in_format[j] == label;
            for (int j = 0; j < nd && !d; j++)
                if (xf[j] == label && k-- == 0)
                    d = j + 1;
            if (!d)
                continue;
        } else {
            d = i + 1;
        }
        if (dla_tensor_dim(x, d) == in_dims[i])
            continue;
        char desc[256];
        dla_tensor_describe(x, desc, sizeof desc);
        /* The input's dims, its observation dim shown as N. */
        char shown[96];
        int m = 0;
        for (int j = 0; j < in_nd && m >= 0 && (size_t)m < sizeof shown; j++)
            m += in_format[j] == 'B'
                     ? snprintf(shown + m, sizeof shown - (size_t)m, j ? "xN" : "N")
                     : snprintf(shown + m, sizeof shown - (size_t)m, j ? "x%lld" : "%lld",
                                (long long)in_dims[j]);
        return dla_set_error(DLA_ERR_SHAPE,
                             "%s: %s: predictors (%s%s) have %lld along dim %d (\"%c\") where "
                             "the network's input takes %lld (%s \"%s\" data)%s",
                             fn, what, desc, *xf ? "" : ", unformatted: read as the input's format",
                             (long long)dla_tensor_dim(x, d), d, label, (long long)in_dims[i],
                             shown, in_format,
                             *xf ? ""
                                 : "; observations lie along the last dim: MATLAB's "
                                   "N-by-numFeatures array is its transpose here (or give the "
                                   "predictors a format)");
    }
    return DLA_OK;
}

/* ----------------------------------------------------------------- labels */

dla_status dla__train_check_classes(const char *what, dla_tensor *targets, int64_t k)
{
    int64_t n = dla_tensor_numel(targets);
    if (n == 0 || dla_tensor_dtype(targets) != DLA_I32)
        return DLA_OK;
    int32_t *v = dla_malloc(sizeof *v * (size_t)n);
    if (!v)
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY,
                             "dla_trainnet: %s: cannot read the %lld class numbers to check them",
                             what, (long long)n);
    dla_status st = dla_tensor_to_host(targets, v, sizeof *v * (size_t)n);
    if (st != DLA_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        dla_free(v);
        return dla_set_error(st, "dla_trainnet: %s: targets: %s", what, msg);
    }
    int64_t bad = -1;
    int32_t lo = v[0], hi = v[0];
    for (int64_t i = 0; i < n; i++) {
        lo = v[i] < lo ? v[i] : lo;
        hi = v[i] > hi ? v[i] : hi;
        if (bad < 0 && (v[i] < 0 || v[i] >= k))
            bad = i;
    }
    int32_t b = bad >= 0 ? v[bad] : 0;
    dla_free(v);
    if (bad < 0)
        return DLA_OK;
    /* All in 1..K: MATLAB's numbering. A bad value of K alone said so too,
     * of labels that hold a 0 as well (K + 1 classes in 0..K, not 1-based)
     * and sent the user to subtract 1 from them. */
    int one_based = lo >= 1 && hi <= k;
    /* One output channel has one class, 0: int32 targets for it are
     * binary labels (a sigmoid output) or whole-number responses, which
     * the message took for class numbers out of range. */
    const char *hint = k == 1 ? "; int32 targets, one per observation, are class numbers, and a "
                                "network output of one channel has one class: give 0/1 labels of "
                                "binary classification (a sigmoid output, \"binary-crossentropy\") "
                                "or responses as single or double"
                       : one_based ? "; the class numbers look 1-based: MATLAB numbers categories "
                                     "from 1, dlaccel numbers classes from 0 (subtract 1)"
                                   : "";
    return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                         "dla_trainnet: %s: targets[%lld] is %d, which is not a class number in "
                         "0..%lld (the network's output has %lld class%s)%s",
                         what, (long long)bad, (int)b, (long long)(k - 1), (long long)k,
                         k == 1 ? "" : "es", hint);
}

dla_status dla__train_check_channels(const char *what, dla_tensor *targets, const char *out_format,
                                     int64_t channels, int64_t n)
{
    const char *fmt = *dla_tensor_format(targets) ? dla_tensor_format(targets) : out_format;
    const char *c = strchr(fmt, 'C');
    if (!c || !strchr(out_format, 'C') || channels < 1)
        return DLA_OK;
    int64_t have = dla_tensor_dim(targets, (int)(c - fmt) + 1);
    if (have == channels)
        return DLA_OK;
    char d[256];
    dla_tensor_describe(targets, d, sizeof d);
    const int unformatted = !*dla_tensor_format(targets), flat = dla_tensor_ndims(targets) <= 2;
    /* One value per observation, not int32: class numbers given as double
     * (or uint8, logical) were taken for one response each, and the
     * message spoke of one class only. As a vector of n (MATLAB's column
     * of labels) they were read as n classes of one observation. */
    const int numbers = dla_tensor_dtype(targets) != DLA_I32 &&
                        (have == 1 || (unformatted && flat && n > 1 && channels > 1 &&
                                       dla_tensor_numel(targets) == n));
    /* One row per observation (MATLAB's N-by-R responses, N-by-K scores):
     * unformatted targets are read in the output's layout, "CB", channels
     * down, so the observations were counted as classes: a shape error
     * that said nothing of the layout. */
    const int by_rows = unformatted && flat && !strcmp(out_format, "CB") && n > 0 &&
                        dla_tensor_dim(targets, 1) == n && dla_tensor_dim(targets, 2) == channels;
    /* int32 class numbers are taken as such only one per observation;
     * another count of them was read as responses, as classes along C. */
    const int miscounted = dla_tensor_dtype(targets) == DLA_I32 && unformatted && flat && n > 0 &&
                           channels > 1 && dla_tensor_numel(targets) != n &&
                           (dla_tensor_dim(targets, 1) == 1 || dla_tensor_dim(targets, 2) == 1);
    char rows[320] = "";
    if (by_rows)
        snprintf(rows, sizeof rows, "; they hold one row per observation (%lld-by-%lld, MATLAB's "
                 "layout), but unformatted targets are read as the output's \"CB\", channels "
                 "down and observations across: transpose them (dla_permute) or make them with "
                 "format \"BC\" (dla_tensor_from_host)",
                 (long long)n, (long long)channels);
    else if (miscounted)
        snprintf(rows, sizeof rows, "; as class numbers, int32 targets need one per observation "
                 "(%lld), not %lld", (long long)n, (long long)dla_tensor_numel(targets));
    return dla_set_error(DLA_ERR_SHAPE,
                         "dla_trainnet: %s: targets (%s, read as \"%s\") have %lld class%s along C "
                         "where the network's output (\"%s\") has %lld: the class counts of the "
                         "targets and of the network differ%s%s",
                         what, d, fmt, (long long)have, have == 1 ? "" : "es", out_format,
                         (long long)channels, rows,
                         numbers ? "; if they are class numbers, give them as int32 (0..K-1): "
                                   "other dtypes are responses" : "");
}

dla_status dla__train_check_step_classes(const char *what, dla_tensor *t, dla_tensor *m,
                                         int64_t k)
{
    const int bd = dla_tensor_find_dim(t, 'B'), td = dla_tensor_find_dim(t, 'T');
    const int64_t n = dla_tensor_numel(t);
    if (!bd || !td || (m && dla_tensor_numel(m) != n)) {
        char d[256];
        dla_tensor_describe(t, d, sizeof d);
        return dla_set_error(DLA_ERR_SHAPE,
                             "dla_trainnet: %s: class numbers per step came as %s; 1 x B x T "
                             "\"CBT\" (one channel) was expected",
                             what, d);
    }
    const int64_t nb = dla_tensor_dim(t, bd);
    double *v = dla_malloc(sizeof *v * (size_t)(n ? n : 1));
    unsigned char *valid = m ? dla_malloc((size_t)(n ? n : 1)) : NULL;
    if (!v || (m && !valid)) {
        dla_free(v);
        dla_free(valid);
        return dla_set_error(DLA_ERR_OUT_OF_MEMORY,
                             "dla_trainnet: %s: cannot read the %lld class numbers to check them",
                             what, (long long)n);
    }
    dla_scope_begin();
    dla_status st = dla_tensor_to_host(dla_cast(t, DLA_F64), v, sizeof *v * (size_t)n);
    if (st == DLA_OK && m)
        st = dla_tensor_to_host(dla_cast(m, DLA_U8), valid, (size_t)n);
    dla_scope_end();
    int64_t bad = -1;
    for (int64_t i = 0; st == DLA_OK && i < n && bad < 0; i++)
        if ((valid ? valid[i] : !isnan(v[i])) &&
            !(v[i] >= 0 && v[i] < (double)k && v[i] == floor(v[i])))
            bad = i;
    const double b = bad >= 0 ? v[bad] : 0;
    dla_free(v);
    dla_free(valid);
    if (st != DLA_OK) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", dla_last_error());
        return dla_set_error(st, "dla_trainnet: %s: targets: %s", what, msg);
    }
    if (bad < 0)
        return DLA_OK;
    /* One channel: element b + B s is observation b's step s. */
    return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                         "dla_trainnet: %s: observation %lld of the batch, step %lld: %g is not a "
                         "class number in 0..%lld (the network's output has %lld class%s)",
                         what, (long long)(bad % nb), (long long)(bad / nb), b, (long long)(k - 1),
                         (long long)k, k == 1 ? "" : "es");
}
