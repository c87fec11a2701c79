/*
 * spmd_combine.c - MATLAB's aggregateGradients: gplus(weight * x) over the
 * ranks, for many tensors at once, reduced in buckets.
 *
 * Why buckets: one allreduce per gradient costs a round of messages per
 * learnable (the digit CNN has 8, a ResNet hundreds), most of them a few
 * hundred bytes, where latency is everything; one allreduce of everything
 * holds a second copy of all gradients. Buckets of a few MiB make few
 * messages of a size MPI moves at full bandwidth. The tensors go into
 * buckets in the order given, which every rank gives alike, so the
 * buckets (and the bits of the sums) are the same on every rank.
 */
#define _POSIX_C_SOURCE 200809L
#include <dlaccel.h>

#include <stdio.h>

#include "core/log.h"
#include "core/spmd_check.h"
#include "nn/spmd_impl.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DEFAULT_BUCKET_MIB 4.0

static double clock_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Seconds spent inside allreduce by dla_spmd_combine on this thread, for
 * the benchmark's overlap figure. */
static _Thread_local double reduce_seconds;

double dla__spmd_reduce_seconds(void)
{
    return reduce_seconds;
}

size_t dla__spmd_bucket_bytes(void)
{
    static atomic_int warned;
    const char *s = getenv("DLACCEL_BUCKET_MIB");
    if (s && *s) {
        char *end;
        double mib = strtod(s, &end);
        /* At least one element per bucket anyway. */
        if (end != s && *end == '\0' && mib > 0 && mib < 1e6)
            return (size_t)(mib * 1048576.0) ? (size_t)(mib * 1048576.0) : 1;
        /* Any other value is named once and the default holds ("8M" left
         * the default in place without a word). */
        if (!atomic_exchange(&warned, 1))
            dla__log(DLA_LOG_WARN,
                     "DLACCEL_BUCKET_MIB=%.64s is not a number of MiB above 0 (below 1e6); "
                     "ignored, the default applies (%g)",
                     s, DEFAULT_BUCKET_MIB);
    }
    return (size_t)(DEFAULT_BUCKET_MIB * 1048576.0);
}

dla_tensor *dla__spmd_bucket_fill(int count, dla_tensor *const *x, double weight, int64_t whole)
{
    dla_tensor **flat = dla_malloc(sizeof *flat * (size_t)count);
    if (!flat) {
        dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_spmd_combine: out of memory");
        return NULL;
    }
    for (int i = 0; i < count; i++) {
        dla_tensor *v = dla_reshape(x[i], "", DLA_DIMS(dla_tensor_numel(x[i])));
        /* Weight 0: zeros, whatever x holds (NaN times 0 is NaN). */
        flat[i] = weight == 0.0  ? dla_zeros(dla_tensor_dtype(x[i]), "", DLA_DIMS(dla_tensor_numel(x[i])))
                  : weight == 1.0 ? v
                                  : dla_affine(v, weight, 0.0);
    }
    /* dla_cat always copies: the allreduce, in place, never writes the
     * caller's tensors. */
    dla_tensor *bucket = dla_cat(1, count, flat);
    dla_free(flat);
    /* What went in, for the reduction's agreement check: the bucket's
     * record alone is its total size. */
    dla__spmd_note_layout(count, x, whole);
    return bucket;
}

dla_status dla__spmd_bucket_unpack(dla_tensor *bucket, int count, dla_tensor *const *x,
                                   dla_tensor **out)
{
    int64_t off = 0;
    for (int i = 0; i < count; i++) {
        int64_t dims[DLA_MAX_DIMS], k = dla_tensor_numel(x[i]);
        int nd = dla_tensor_dims(x[i], dims);
        out[i] = dla_reshape(dla_slice(bucket, 1, off, 1, off + k), dla_tensor_format(x[i]), nd, dims);
        off += k;
        dla_status st = dla_tensor_status(out[i]);
        if (st != DLA_OK)
            return st;
    }
    return DLA_OK;
}

int dla__spmd_bucket_count(int n, dla_tensor *const *x, int first, size_t cap)
{
    dla_dtype dt = dla_tensor_dtype(x[first]);
    size_t bytes = (size_t)dla_tensor_numel(x[first]) * dla_dtype_size(dt);
    int count = 1;
    while (first + count < n && dla_tensor_dtype(x[first + count]) == dt) {
        size_t more = (size_t)dla_tensor_numel(x[first + count]) * dla_dtype_size(dt);
        if (bytes + more > cap)
            break;
        bytes += more;
        count++;
    }
    return count;
}

/* This rank failed with st (the last error says why) where the others
 * reduce (root < 0) or broadcast from root: it takes part in that
 * collective with an error tensor carrying its reason, so that the
 * argument check fails on every rank, naming it. Returning at once left
 * the others waiting in the collective until DLACCEL_COLLECTIVE_FAIL_AFTER
 * broke the world, or, when this rank called another collective next,
 * meeting that one out of step ("rank 1 called dla_spmd_barrier as its
 * collective #1 where rank 0 called dla_allreduce"), every later
 * collective then one apart. */
dla_status dla__spmd_take_part_failed(dla_status st, int root)
{
    if (dla_spmd_size() == 1)
        return st;
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", dla_last_error());
    dla_scope_begin();
    dla_tensor *e = dla_error_tensor(st, "%s", msg);
    if (root < 0)
        dla_allreduce(1, &e, DLA_REDUCE_SUM);
    else
        dla_broadcast(1, &e, root);
    dla_scope_end();
    return dla_set_error(st, "%s", msg);
}

/* Reduces x[first..first+count-1] (one dtype) as one bucket into out.
 * *alone: the failure is this rank's own, after the reduction, which
 * every rank made (the others go on to the next bucket). */
static dla_status reduce_bucket(int count, dla_tensor *const *x, double weight, int n,
                                dla_tensor **out, int *alone)
{
    *alone = 0;
    dla_tensor *bucket = dla__spmd_bucket_fill(count, x, weight, n);
    dla_status st = bucket ? dla_tensor_status(bucket) : dla_last_status();
    if (st != DLA_OK)
        return dla__spmd_take_part_failed(st, -1);
    double t0 = clock_now();
    st = dla_allreduce(1, &bucket, DLA_REDUCE_SUM);
    reduce_seconds += clock_now() - t0;
    if (st != DLA_OK)
        return st;
    st = dla__spmd_bucket_unpack(bucket, count, x, out);
    *alone = st != DLA_OK;
    return st;
}

/* This rank's own arguments, before any reduction. */
static dla_status check_args(int n, dla_tensor *const *x, double weight, dla_tensor **out)
{
    if (n < 0 || (n > 0 && (!x || !out)))
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "dla_spmd_combine: n %d, x %s, out %s", n, x ? "set" : "NULL",
                             out ? "set" : "NULL");
    if (!(weight >= 0 && weight <= 1))
        return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                             "dla_spmd_combine: weight %g is not a share in [0, 1]", weight);
    for (int i = 0; i < n; i++) {
        if (!x[i])
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT, "dla_spmd_combine: x[%d] is NULL", i);
        if (dla_tensor_status(x[i]) != DLA_OK)
            return dla_set_error(dla_tensor_status(x[i]), "dla_spmd_combine: x[%d]: %s", i,
                                 dla_tensor_error(x[i]));
        dla_dtype dt = dla_tensor_dtype(x[i]);
        if (dt != DLA_F32 && dt != DLA_F64)
            return dla_set_error(DLA_ERR_INVALID_ARGUMENT,
                                 "dla_spmd_combine: x[%d] is not a floating-point tensor", i);
    }
    return DLA_OK;
}

DLA_API dla_status dla_spmd_combine(int n, dla_tensor *const *x, double weight, dla_tensor **out)
{
    /* A refusal takes part in the first bucket's reduction, which the
     * others are in (dla__spmd_take_part_failed). */
    dla_status st = check_args(n, x, weight, out);
    if (st != DLA_OK)
        return dla__spmd_take_part_failed(st, -1);
    /* The inputs stay readable while out (which may be x) is filled. */
    dla_tensor **in = dla_malloc(sizeof *in * (size_t)(n ? n : 1));
    if (!in)
        return dla__spmd_take_part_failed(
            dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_spmd_combine: out of memory"), -1);
    memcpy(in, x, sizeof *in * (size_t)n);
    /* The results as they are made, NULL until then; handed to out at the
     * end. The work runs in a scope of its own, from which only the
     * results are kept: the flattened inputs, the buckets and the slices
     * the results view stayed with a caller that had no scope open. */
    dla_tensor **res = dla_malloc(sizeof *res * (size_t)(n ? n : 1));
    if (!res) {
        dla_free(in);
        return dla__spmd_take_part_failed(
            dla_set_error(DLA_ERR_OUT_OF_MEMORY, "dla_spmd_combine: out of memory"), -1);
    }
    memset(res, 0, sizeof *res * (size_t)(n ? n : 1));
    dla_scope_begin();
    size_t cap = dla__spmd_bucket_bytes();
    int alone = 0;
    if (n == 0) {
        /* No bucket, but one reduction all the same (of nothing, noting
         * n): a rank that passed no tensor where the others passed some
         * returned at once, and they waited in their first bucket. */
        dla_scope_begin();
        dla_tensor *none = dla_zeros(DLA_F32, "", DLA_DIMS(0));
        dla__spmd_note_layout(0, NULL, 0);
        st = dla_allreduce(1, &none, DLA_REDUCE_SUM);
        dla_scope_end();
        if (st != DLA_OK) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", dla_last_error());
            dla_set_error(st, "dla_spmd_combine: no tensors (n = 0): %s", msg);
        }
    }
    for (int first = 0; first < n;) {
        int count = dla__spmd_bucket_count(n, in, first, cap);
        if (alone) {
            /* The others are in this bucket's reduction: one more, with
             * the failure, and every rank stops there. */
            dla__spmd_take_part_failed(st, -1);
            break;
        }
        st = reduce_bucket(count, in + first, weight, n, res + first, &alone);
        if (st != DLA_OK) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", dla_last_error());
            dla_set_error(st, "dla_spmd_combine: the bucket of x[%d..%d]: %s", first,
                          first + count - 1, msg);
            if (!alone)
                break;
        }
        first += count;
    }
    for (int i = 0; i < n; i++)
        if (res[i])
            out[i] = dla_keep(res[i]);
    dla_scope_end();
    dla_free(res);
    dla_free(in);
    return st;
}
