/*
 * data_seq.c - lists of variable-length sequences and MATLAB's padding and
 * truncation rules, which turn a selection of them into one "CBT" array
 * and a mask of the steps that hold data.
 *
 * A list keeps all values in one growing array with an offset per
 * sequence: appending thousands of short sequences costs a few
 * reallocations, not one allocation each.
 */
#include "nn/data_seq.h"

#include "core/handle.h" /* the handle checks (docs/checks.md) */
#include "nn/data_util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct dla_seqlist {
    uint32_t magic; /* DLA__HANDLE_SEQLIST; DEAD once freed (docs/checks.md) */
    int64_t channels;
    int64_t count, count_cap;
    int64_t *offset;   /* count + 1 entries, in values */
    float *values;
    int64_t values_cap;
};

DLA_API dla_seqlist *dla_seqlist_create(int64_t channels)
{
    if (channels < 1) {
        dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "dla_seqlist_create: argument channels: %lld < 1",
                       (long long)channels);
        return NULL;
    }
    dla_seqlist *s = dla__data_calloc(1, sizeof *s);
    int64_t *off = dla__data_calloc(1, sizeof *off);
    if (!s || !off) {
        dla__data_free(s);
        dla__data_free(off);
        dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "dla_seqlist_create: out of memory");
        return NULL;
    }
    s->magic = DLA__HANDLE_SEQLIST;
    s->channels = channels;
    s->offset = off;
    s->count_cap = 0;
    return s;
}

/* Nonzero when s is a live list; else logs why for op. */
static int seq_live(const dla_seqlist *s, const char *op)
{
    if (s->magic == DLA__HANDLE_SEQLIST)
        return 1;
    dla__misuse(DLA_ERR_INVALID_ARGUMENT, "%s: %p is %s", op, (const void *)s,
                s->magic == DLA__HANDLE_DEAD ? "a sequence list freed already (freed twice, or "
                "used after dla_seqlist_free)" : "not a sequence list handle");
    return 0;
}

/* NULL answers as an empty list (as before); a dead one also logs. */
#define LIVE(s, op) ((s) && seq_live((s), (op)))

DLA_API void dla_seqlist_free(dla_seqlist *s)
{
    if (!LIVE(s, "dla_seqlist_free"))
        return;
    dla__data_free(s->offset);
    dla__data_free(s->values);
    s->magic = DLA__HANDLE_DEAD; /* parked, not freed: a stale pointer reads "dead" */
    s->count = 0;
    s->offset = NULL;
    s->values = NULL;
    dla__quarantine(DLA__RING_OBJECTS, s);
}

/* Room for one more sequence of nvalues values. */
static dla_status reserve(dla_seqlist *s, int64_t nvalues, const char *op)
{
    if (s->count + 1 >= s->count_cap) {
        int64_t cap = s->count_cap ? 2 * s->count_cap : 64;
        int64_t *off = dla__data_realloc(s->offset, (size_t)(cap + 1) * sizeof *off);
        if (!off)
            return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot hold %lld sequences", op,
                                  (long long)(s->count + 1));
        s->offset = off;
        s->count_cap = cap;
    }
    int64_t need = s->offset[s->count] + nvalues;
    if (need > s->values_cap) {
        int64_t cap = s->values_cap ? s->values_cap : 4096;
        while (cap < need)
            cap *= 2;
        float *v = dla__data_realloc(s->values, (size_t)cap * sizeof *v);
        if (!v)
            return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot hold %lld values", op,
                                  (long long)need);
        s->values = v;
        s->values_cap = cap;
    }
    return DLA_OK;
}

DLA_API dla_status dla_seqlist_append(dla_seqlist *s, const float *data, int64_t length)
{
    static const char op[] = "dla_seqlist_append";
    if (!s)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument s is NULL", op);
    if (!seq_live(s, op))
        return DLA_ERR_INVALID_ARGUMENT;
    if (length < 0 || (length > 0 && !data))
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s", op,
                              length < 0 ? "length is negative" : "data is NULL");
    if (length > (INT64_MAX / 4) / s->channels)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument length: %lld is too long",
                              op, (long long)length);
    int64_t nv = length * s->channels;
    /* data may lie in the list's own values (a sequence appended again,
     * dla_seqlist_data's pointer): reserve may move them, so such a source
     * is kept as an offset and found again after (it read freed memory). */
    uintptr_t at = (uintptr_t)data, lo = (uintptr_t)s->values;
    int inside = s->values && at >= lo && at < lo + (uintptr_t)s->values_cap * sizeof(float);
    size_t from = inside ? (size_t)(at - lo) / sizeof(float) : 0;
    dla_status st = reserve(s, nv, op);
    if (st != DLA_OK)
        return st;
    if (inside)
        data = s->values + from;
    if (nv)
        memmove(s->values + s->offset[s->count], data, (size_t)nv * sizeof(float));
    s->offset[s->count + 1] = s->offset[s->count] + nv;
    s->count++;
    return DLA_OK;
}

DLA_API dla_status dla_seqlist_append_tensor(dla_seqlist *s, dla_tensor *x)
{
    static const char op[] = "dla_seqlist_append_tensor";
    if (!s || !x)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", op,
                              s ? "x" : "s");
    if (!seq_live(s, op))
        return DLA_ERR_INVALID_ARGUMENT;
    if (dla_tensor_status(x) != DLA_OK)
        return dla__data_fail(dla_tensor_status(x), "%s: argument x: %s", op,
                              dla_tensor_error(x));
    const char *fmt = dla_tensor_format(x);
    int64_t dims[DLA_MAX_DIMS];
    int nd = dla_tensor_dims(x, dims);
    char b[DLA__DATA_DIMS_BUF];
    if (!(strcmp(fmt, "CT") == 0 || (fmt[0] == '\0' && nd <= 2)) ||
        dla_tensor_dim(x, 1) != s->channels)
        return dla__data_fail(DLA_ERR_SHAPE,
                              "%s: argument x: %s \"%s\"; a sequence of this list is %lld x T, "
                              "formatted \"CT\" or unformatted",
                              op, dla__data_dims_str(b, nd, dims), fmt, (long long)s->channels);
    int64_t length = dla_tensor_dim(x, 2);
    if (length > (INT64_MAX / 4) / s->channels)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument x: too long", op);
    dla_status st = reserve(s, length * s->channels, op);
    if (st != DLA_OK)
        return st;
    dla_scope_begin();
    dla_tensor *f = dla_tensor_dtype(x) == DLA_F32 ? x : dla_cast(x, DLA_F32);
    st = dla_tensor_to_host(f, s->values + s->offset[s->count],
                            (size_t)(length * s->channels) * sizeof(float));
    if (st != DLA_OK)
        st = dla__data_fail(st, "%s: %s", op, dla_last_error());
    dla_scope_end();
    if (st != DLA_OK)
        return st;
    s->offset[s->count + 1] = s->offset[s->count] + length * s->channels;
    s->count++;
    return DLA_OK;
}

DLA_API int64_t dla_seqlist_count(const dla_seqlist *s)
{
    return LIVE(s, "dla_seqlist_count") ? s->count : 0;
}

DLA_API int64_t dla_seqlist_channels(const dla_seqlist *s)
{
    return LIVE(s, "dla_seqlist_channels") ? s->channels : 0;
}

DLA_API int64_t dla_seqlist_length(const dla_seqlist *s, int64_t i)
{
    if (!LIVE(s, "dla_seqlist_length") || i < 0 || i >= s->count)
        return -1;
    return (s->offset[i + 1] - s->offset[i]) / s->channels;
}

DLA_API const float *dla_seqlist_data(const dla_seqlist *s, int64_t i)
{
    if (!LIVE(s, "dla_seqlist_data") || i < 0 || i >= s->count)
        return NULL;
    return s->values + s->offset[i];
}

/* ----------------------------------------------------------------- padding */

dla_status dla__seq_parse(const dla_sequence_options *opts, dla__seq_rule *rule, const char *op)
{
    const dla_sequence_options o = opts ? *opts : (dla_sequence_options){0};
    memset(rule, 0, sizeof *rule);
    rule->padding_value = o.padding_value;
    if (!o.length || !o.length[0] || strcmp(o.length, "longest") == 0) {
        rule->mode = DLA__SEQ_LONGEST;
    } else if (strcmp(o.length, "shortest") == 0) {
        rule->mode = DLA__SEQ_SHORTEST;
    } else {
        char *end;
        errno = 0;
        long long v = strtoll(o.length, &end, 10);
        if (errno || *end || end == o.length || v < 1 || o.length[0] == '+' || o.length[0] == ' ')
            return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                                  "%s: sequence length \"%s\": \"longest\", \"shortest\" or a "
                                  "positive whole number",
                                  op, o.length);
        rule->mode = DLA__SEQ_FIXED;
        rule->fixed = v;
    }
    if (!o.padding_direction || !o.padding_direction[0] ||
        strcmp(o.padding_direction, "right") == 0)
        rule->left = 0;
    else if (strcmp(o.padding_direction, "left") == 0)
        rule->left = 1;
    else
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: sequence padding direction \"%s\": \"right\" or \"left\"", op,
                              o.padding_direction);
    return DLA_OK;
}

int64_t dla__seq_steps(const dla_seqlist *s, int64_t n, const int64_t *idx,
                       const dla__seq_rule *rule)
{
    if (rule->mode == DLA__SEQ_FIXED)
        return rule->fixed;
    int64_t t = dla_seqlist_length(s, idx ? idx[0] : 0);
    for (int64_t b = 1; b < n; b++) {
        int64_t l = dla_seqlist_length(s, idx ? idx[b] : b);
        if (rule->mode == DLA__SEQ_LONGEST ? l > t : l < t)
            t = l;
    }
    return t;
}

dla_status dla__seq_pad(const dla_seqlist *s, int64_t n, const int64_t *idx,
                        const dla__seq_rule *rule, dla_device *dev, const char *op,
                        dla_tensor **x, dla_tensor **mask)
{
    *x = NULL;
    if (mask)
        *mask = NULL;
    const int64_t C = s->channels, T = dla__seq_steps(s, n, idx, rule);
    if (T > INT64_MAX / 4 / C / n)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: %lld x %lld x %lld is too large", op,
                              (long long)C, (long long)n, (long long)T);
    float *buf = dla__data_malloc((size_t)(C * n * T) * sizeof *buf);
    unsigned char *m = mask ? dla__data_calloc((size_t)(n * T), 1) : NULL;
    if (!buf || (mask && !m)) {
        dla__data_free(buf);
        dla__data_free(m);
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot hold a %lld x %lld x %lld batch",
                              op, (long long)C, (long long)n, (long long)T);
    }
    const float pad = (float)rule->padding_value;
    for (int64_t i = 0; i < C * n * T; i++)
        buf[i] = pad;
    for (int64_t b = 0; b < n; b++) {
        int64_t k = idx ? idx[b] : b;
        const float *v = dla_seqlist_data(s, k);
        int64_t L = dla_seqlist_length(s, k), keep = L < T ? L : T;
        /* Right: steps 0..keep-1 at 0..keep-1. Left: the last keep steps at
         * the end, so that sequences end together. */
        int64_t src0 = rule->left ? L - keep : 0, dst0 = rule->left ? T - keep : 0;
        for (int64_t t = 0; t < keep; t++) {
            memcpy(buf + C * (b + n * (dst0 + t)), v + C * (src0 + t), (size_t)C * sizeof *buf);
            if (m)
                m[b + n * (dst0 + t)] = 1;
        }
    }
    *x = dla__data_from_host(dev, buf, DLA_F32, "CBT", DLA_DIMS(C, n, T));
    dla__data_free(buf);
    dla_status st = dla_tensor_status(*x);
    if (st == DLA_OK && m) {
        *mask = dla__data_from_host(dev, m, DLA_BOOL, "CBT", DLA_DIMS(1, n, T));
        st = dla_tensor_status(*mask);
    }
    dla__data_free(m);
    if (st != DLA_OK) {
        st = dla__data_fail(st, "%s: %s",
                            op, dla_tensor_error(dla_tensor_status(*x) ? *x : *mask));
        dla_tensor_release(*x);
        *x = NULL;
        if (mask) {
            dla_tensor_release(*mask);
            *mask = NULL;
        }
    }
    return st;
}

DLA_API dla_status dla_padsequences(const dla_seqlist *seqs, int64_t n, const int64_t *indices,
                                    const dla_sequence_options *opts, dla_tensor **x,
                                    dla_tensor **mask)
{
    static const char op[] = "dla_padsequences";
    if (x)
        *x = NULL;
    if (mask)
        *mask = NULL;
    if (!seqs || !x)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument %s is NULL", op,
                              seqs ? "x" : "seqs");
    if (!seq_live(seqs, op))
        return DLA_ERR_INVALID_ARGUMENT;
    if (n < 1 || (!indices && n > seqs->count))
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument n: %lld; 1..%lld sequences can be taken", op,
                              (long long)n, (long long)seqs->count);
    for (int64_t i = 0; indices && i < n; i++)
        if (indices[i] < 0 || indices[i] >= seqs->count)
            return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                                  "%s: argument indices: indices[%lld] = %lld is outside 0..%lld",
                                  op, (long long)i, (long long)indices[i],
                                  (long long)seqs->count - 1);
    dla__seq_rule rule;
    dla_status st = dla__seq_parse(opts, &rule, op);
    if (st != DLA_OK)
        return st;
    st = dla__seq_pad(seqs, n, indices, &rule, NULL, op, x, mask);
    if (st != DLA_OK)
        return st;
    dla_tensor *out[2] = {*x, mask ? *mask : NULL};
    st = dla__data_deliver_all(2, out, op);
    *x = out[0];
    if (mask)
        *mask = out[1];
    return st;
}
