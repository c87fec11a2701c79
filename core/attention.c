/*
 * attention.c - dla_attention, MATLAB's attention(queries, keys, values,
 * numHeads): multi-head scaled dot-product attention.
 *
 * Built from differentiable ops (reshape, permute, pagemtimes, softmax),
 * so its gradients, its second derivatives and its replays are theirs.
 * Each input is brought to C x L x B (channels, sequence, observations),
 * its channels split into heads as dk x L x heads x B pages; one page
 * product gives every head's scores, the softmax runs over the keys as a
 * "C" dim, and a second page product weighs the values.
 */
#include "core/attention.h"
#include "core/alloc.h"
#include "core/error.h"
#include "core/tensor.h"

#include <dlaccel/nnops.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Where a formatted tensor keeps its channels, sequence and observations. */
typedef struct layout {
    int c, seq, b;   /* 1-based dims, 0 when absent */
    int64_t C, L, B; /* their sizes (1 when absent) */
} layout;

static int read_layout(const char *op, const char *arg, dla_tensor *t, layout *l,
                       dla_tensor **err)
{
    const char *f = dla_tensor_format(t);
    char db[DLA__DIMS_BUF];
    *err = NULL;
    l->c = dla_tensor_find_dim(t, 'C');
    l->b = dla_tensor_find_dim(t, 'B');
    const int s = dla_tensor_find_dim(t, 'S'), tt = dla_tensor_find_dim(t, 'T');
    int ns = 0;
    for (const char *p = f; *p; p++)
        ns += *p == 'S';
    if (!f[0] || !l->c || ns > 1 || (s && tt) || strchr(f, 'U')) {
        *err = dla__error(DLA_ERR_FORMAT,
                          "%s: argument %s (%s \"%s\"): it needs a \"C\" dim, at most one "
                          "sequence dim (\"S\" or \"T\") and optionally \"B\"",
                          op, arg, dla__tensor_dims_str(t, db, sizeof db), f);
        return 0;
    }
    l->seq = s ? s : tt;
    l->C = dla_tensor_dim(t, l->c);
    l->L = l->seq ? dla_tensor_dim(t, l->seq) : 1;
    l->B = l->b ? dla_tensor_dim(t, l->b) : 1;
    return 1;
}

/* The dims of a formatted t, one per label (trailing ones included). */
static int labeled_dims(dla_tensor *t, int64_t *dims)
{
    const int nd = (int)strlen(dla_tensor_format(t));
    for (int d = 0; d < nd; d++)
        dims[d] = dla_tensor_dim(t, d + 1);
    return nd;
}

/* t as an unformatted C x L x B tensor (a copy where the dims move). */
static dla_tensor *to_clb(dla_tensor *t, const layout *l)
{
    int64_t dims[DLA_MAX_DIMS + 2];
    const int nd = labeled_dims(t, dims);
    /* Absent dims become trailing singletons, so that one permute places
     * all three. */
    int n = nd, seq = l->seq, b = l->b;
    if (!seq)
        dims[n] = 1, seq = ++n;
    if (!b)
        dims[n] = 1, b = ++n;
    dla_tensor *u = dla_reshape(t, "", n, dims);
    if (l->c == 1 && seq == 2 && b == 3 && n == 3)
        return u;
    int64_t order[DLA_MAX_DIMS + 2] = {l->c, seq, b};
    for (int d = 1, k = 3; d <= n; d++)
        if (d != l->c && d != seq && d != b)
            order[k++] = d; /* none here: every dim is C, sequence or B */
    return dla_reshape(dla_permute(u, n, order), "", 3,
                       (const int64_t[]){l->C, l->L, l->B});
}

/* C x L x B as heads: (C/h) x L x h x B pages. */
static dla_tensor *to_heads(dla_tensor *t, int64_t heads)
{
    const int64_t C = dla_tensor_dim(t, 1), L = dla_tensor_dim(t, 2), B = dla_tensor_dim(t, 3);
    dla_tensor *r = dla_reshape(t, "", 4, (const int64_t[]){C / heads, heads, L, B});
    return dla_permute(r, 4, (const int64_t[]){1, 3, 2, 4});
}

/* The result, (dv) x Lq x h x B pages, back in the queries' layout and
 * format with dv * h channels. */
static dla_tensor *from_heads(dla_tensor *y, dla_tensor *queries, const layout *q)
{
    const int64_t dv = dla_tensor_dim(y, 1), h = dla_tensor_dim(y, 3);
    dla_tensor *clb = dla_reshape(dla_permute(y, 4, (const int64_t[]){1, 3, 2, 4}), "", 3,
                                  (const int64_t[]){dv * h, q->L, q->B});
    /* The queries' own dims in their order: C, the sequence and B where
     * they are, ones elsewhere (there are none: read_layout allows only
     * these). */
    int64_t dims[DLA_MAX_DIMS];
    const int nd = labeled_dims(queries, dims);
    dims[q->c - 1] = dv * h;
    int64_t order[3];
    /* Permute C x L x B into the queries' relative order of their dims. */
    int pos[3] = {q->c, q->seq ? q->seq : 99, q->b ? q->b : 100};
    for (int i = 0; i < 3; i++) {
        int rank = 0;
        for (int j = 0; j < 3; j++)
            rank += pos[j] < pos[i];
        order[rank] = i + 1;
    }
    dla_tensor *p = dla_permute(clb, 3, order);
    return dla_reshape(p, dla_tensor_format(queries), nd, dims);
}

/* The causal mask (Lk x Lq): seen where query j may see key i (i <= j),
 * hidden after it. As an additive mask for the scores, 0 and a large
 * negative number, so that softmax gives those keys weight 0 exactly; as
 * a mask to multiply, 1 and 0. */
static dla_tensor *causal_mask(dla_dtype dtype, int64_t lk, int64_t lq, dla_device *dev,
                               double seen, double hidden)
{
    const size_t n = (size_t)(lk * lq), es = dtype == DLA_F64 ? 8 : 4;
    unsigned char *host = dla__malloc(n ? n * es : 1);
    if (!host)
        return dla__error(DLA_ERR_OUT_OF_MEMORY, "dla_attention: out of memory for a %lldx%lld "
                          "mask", (long long)lk, (long long)lq);
    for (int64_t j = 0; j < lq; j++)
        for (int64_t i = 0; i < lk; i++) {
            const double v = i <= j ? seen : hidden;
            if (dtype == DLA_F64)
                ((double *)host)[i + lk * j] = v;
            else
                ((float *)host)[i + lk * j] = (float)v;
        }
    dla_device *keep = dla_device_current();
    dla_device_set_current(dev);
    dla_tensor *m = dla_tensor_from_host(host, dtype, "", 2, (const int64_t[]){lk, lq});
    dla_device_set_current(keep);
    dla__free(host);
    return m;
}

DLA_API dla_tensor *dla_attention(dla_tensor *queries, dla_tensor *keys, dla_tensor *values,
                                  int64_t num_heads, const dla_attention_options *opts,
                                  dla_tensor **weights)
{
    return dla__attention_with(queries, keys, values, num_heads, opts, weights, NULL);
}

dla_tensor *dla__attention_with(dla_tensor *queries, dla_tensor *keys, dla_tensor *values,
                                int64_t num_heads, const dla_attention_options *opts,
                                dla_tensor **weights, dla__attention_drop drop_weights)
{
    static const char op[] = "dla_attention";
    if (weights)
        *weights = NULL;
    dla_tensor *const args[3] = {queries, keys, values};
    static const char *const names[3] = {"queries", "keys", "values"};
    for (int i = 0; i < 3; i++)
        if (!args[i] || args[i]->status != DLA_OK)
            return dla__pass_arg(op, names[i], args[i]);
    /* One float dtype for the three: the products inside failed otherwise,
     * naming their own arguments ("dla_pagemtimes: arguments a (double)
     * and b (single)", a being the keys). */
    const dla_dtype dt = dla_tensor_dtype(queries);
    for (int i = 0; i < 3; i++) {
        const dla_dtype d = dla_tensor_dtype(args[i]);
        if (d != DLA_F32 && d != DLA_F64)
            return dla__error(DLA_ERR_DTYPE, "%s: argument %s: %s; attention needs single or "
                              "double", op, names[i], dla_dtype_name(d));
        if (d != dt)
            return dla__error(DLA_ERR_DTYPE, "%s: argument %s is %s, but queries are %s", op,
                              names[i], dla_dtype_name(d), dla_dtype_name(dt));
    }
    /* One device for the three, and for the mask: the products and sums
     * inside failed otherwise, naming themselves ("dla_pagemtimes:
     * arguments a and b are on cpu:0 and opencl:0"). */
    dla_device *dev = dla_tensor_device(queries);
    for (int i = 1; i < 3; i++)
        if (dla_tensor_device(args[i]) != dev)
            return dla__error(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument %s is on %s, but queries are on %s; move it with "
                              "dla_tensor_to_device",
                              op, names[i], dla_device_name(dla_tensor_device(args[i])),
                              dla_device_name(dev));
    layout l[3];
    dla_tensor *err;
    for (int i = 0; i < 3; i++)
        if (!read_layout(op, names[i], args[i], &l[i], &err))
            return err;
    char qb[DLA__DIMS_BUF], kb[DLA__DIMS_BUF], vb[DLA__DIMS_BUF];
    dla__tensor_dims_str(queries, qb, sizeof qb);
    dla__tensor_dims_str(keys, kb, sizeof kb);
    dla__tensor_dims_str(values, vb, sizeof vb);
    if (num_heads < 1 || l[0].C % num_heads || l[2].C % num_heads)
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: argument num_heads: %lld; it must divide the channels of the "
                          "queries and keys (%lld) and of the values (%lld)",
                          op, (long long)num_heads, (long long)l[0].C, (long long)l[2].C);
    if (l[0].C != l[1].C || l[1].L != l[2].L || l[0].B != l[1].B || l[1].B != l[2].B)
        return dla__error(DLA_ERR_SHAPE,
                          "%s: queries %s, keys %s, values %s: the queries and keys need the "
                          "same channels, the keys and values the same sequence length, and all "
                          "three the same observations",
                          op, qb, kb, vb);
    /* A query facing no keys has weights over nothing: a softmax of no
     * elements, with no mean of the values to give it (as a query the
     * mask lets see no key gets). Say so here, naming the keys, rather
     * than let the softmax inside fail or give 0. With no queries or no
     * observations there is nothing to weigh: an empty result. */
    if (l[1].L == 0 && l[0].L > 0 && l[0].B > 0)
        return dla__error(DLA_ERR_SHAPE,
                          "%s: argument keys (%s \"%s\"): a sequence of no keys, so the "
                          "queries (%s, %lld along the sequence) have nothing to attend to",
                          op, kb, dla_tensor_format(keys), qb, (long long)l[0].L);
    if (strcmp(dla_tensor_format(queries), dla_tensor_format(keys)) ||
        strcmp(dla_tensor_format(keys), dla_tensor_format(values)))
        return dla__error(DLA_ERR_FORMAT, "%s: queries \"%s\", keys \"%s\", values \"%s\": one "
                          "format for the three", op, dla_tensor_format(queries),
                          dla_tensor_format(keys), dla_tensor_format(values));
    const char *mask = opts && opts->attention_mask ? opts->attention_mask : "none";
    if (strcmp(mask, "none") && strcmp(mask, "causal"))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: attention mask \"%s\"; use \"none\" or "
                          "\"causal\"", op, mask);
    int matlab_mask = 0; /* opts->mask per observation along dim 3 */
    if (opts && opts->mask) {
        dla_tensor *m = opts->mask;
        if (m->status != DLA_OK)
            return dla__pass_arg(op, "opts->mask", m);
        if (dla_tensor_device(m) != dev)
            return dla__error(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument opts->mask is on %s, but queries are on %s; move it "
                              "with dla_tensor_to_device",
                              op, dla_device_name(dla_tensor_device(m)), dla_device_name(dev));
        char mb[DLA__DIMS_BUF];
        /* Dims of 1 after Lk x Lq are trailing singletons, as in MATLAB: a
         * 3x3x1 mask for two observations (the 3x3 one, shared) and a
         * 3x3x1x1x1 one were refused. */
        int extra = 0;
        for (int d = 5; d <= dla_tensor_ndims(m); d++)
            extra |= dla_tensor_dim(m, d) != 1;
        /* Per observation along dim 4 (the weights' layout, Lk x Lq x
         * heads x B, shared by the heads) or, as MATLAB's
         * Nk-by-Nq-by-numObservations, along dim 3: that one was refused,
         * so a mask written for MATLAB failed here. */
        const int64_t m3 = dla_tensor_dim(m, 3), mobs = dla_tensor_dim(m, 4);
        matlab_mask = m3 != 1 && m3 == l[0].B && mobs == 1;
        /* A second dim of 1 is the same keys for every query (a padding
         * mask, selfAttentionLayer's HasPaddingMaskInput). */
        const int64_t mq = dla_tensor_dim(m, 2);
        if (dla_tensor_format(m)[0] || extra || dla_tensor_dim(m, 1) != l[1].L ||
            (mq != l[0].L && mq != 1) || (m3 != 1 && !matlab_mask) ||
            (mobs != 1 && mobs != l[0].B))
            return dla__error(DLA_ERR_SHAPE,
                              "%s: argument opts->mask: %s \"%s\"; it must be unformatted "
                              "%lldx%lld (keys x queries; x1: the same keys for every query), "
                              "%lldx%lldx%lld or %lldx%lldx1x%lld (per observation)",
                              op, dla__tensor_dims_str(m, mb, sizeof mb), dla_tensor_format(m),
                              (long long)l[1].L, (long long)l[0].L, (long long)l[1].L,
                              (long long)l[0].L, (long long)l[0].B, (long long)l[1].L,
                              (long long)l[0].L, (long long)l[0].B);
    }
    if (!strcmp(mask, "causal") && l[0].L != l[1].L)
        return dla__error(DLA_ERR_SHAPE, "%s: a causal mask needs as many queries as keys "
                          "(%lld and %lld along the sequence)",
                          op, (long long)l[0].L, (long long)l[1].L);
    if (opts && opts->scale != 0 && !isfinite(opts->scale))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: option scale: %g is not finite", op,
                          opts->scale);
    const double drop = opts ? opts->dropout_probability : 0;
    if (!(drop >= 0 && drop < 1))
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: option dropout_probability: %g; it must be in [0, 1)", op, drop);
    /* Queries and keys of no channels have scores of 0 (sums of nothing),
     * and the default scale 1/sqrt(0) is infinite: the error said "scale
     * inf is not finite" of a scale the caller never gave. */
    if (!(opts && opts->scale != 0) && l[0].C == 0)
        return dla__error(DLA_ERR_SHAPE,
                          "%s: queries %s and keys %s have no channels, so the default scale "
                          "1/sqrt(channels per head) is infinite; give opts->scale",
                          op, qb, kb);
    const double scale = opts && opts->scale != 0
                             ? opts->scale
                             : 1.0 / sqrt((double)(l[0].C / num_heads));

    dla_tensor *q = to_heads(to_clb(queries, &l[0]), num_heads);
    dla_tensor *k = to_heads(to_clb(keys, &l[1]), num_heads);
    dla_tensor *v = to_heads(to_clb(values, &l[2]), num_heads);
    /* scores(i, j, head, b) = scale * key i . query j */
    dla_tensor *s = dla_affine(dla_pagemtimes(k, "transpose", q, "none"), scale, 0.0);
    if (opts && opts->mask) {
        /* The scores where a key may be seen, -1e30 where not: s .* m +
         * (m - 1) 1e30 of the mask as 0/1 in the scores' dtype, the causal
         * mask multiplied in. One offset for every hidden key, and none
         * of the score left there: a query that may see no key then has
         * equal scores, weights 1/Lk and the mean of the values, with no
         * gradient into the queries and keys. Adding the two masks' -1e30
         * each gave -2e30 where both hid a key, so such a query weighed
         * only the keys one of them let through (the mean of those
         * values); and adding s to -1e30 rounds s away in the forward
         * while its backward still sent the softmax's gradient into the
         * queries and keys.
         * The logical cast is mask ~= 0 on the mask's own device; a zero
         * to compare it with was made on the current one, and a mask on
         * another device failed ("dla_ne: arguments a and b are on
         * opencl:0 and cpu:0"). */
        dla_tensor *m = opts->mask;
        if (matlab_mask)
            m = dla_reshape(m, "", 4, (const int64_t[]){dla_tensor_dim(m, 1), dla_tensor_dim(m, 2),
                                                        1, l[0].B});
        m = dla_cast(dla_cast(m, DLA_BOOL), dla_tensor_dtype(queries));
        if (!strcmp(mask, "causal"))
            m = dla_mul(m, causal_mask(dla_tensor_dtype(queries), l[1].L, l[0].L,
                                       dla_tensor_device(queries), 1.0, 0.0));
        s = dla_add(dla_mul(s, m), dla_affine(m, 1e30, -1e30));
    } else if (!strcmp(mask, "causal")) {
        /* Every query sees key 1 at least: the hidden keys' weights are 0
         * exactly, and so is the gradient through them. */
        s = dla_add(s, causal_mask(dla_tensor_dtype(queries), l[1].L, l[0].L,
                                   dla_tensor_device(queries), 0.0, -1e30));
    }
    const int64_t sd[4] = {l[1].L, l[0].L, num_heads, l[0].B};
    dla_tensor *a = dla_reshape(dla_softmax(dla_reshape(s, "CUUU", 4, sd)), "", 4, sd);
    /* MATLAB's DropoutProbability: weights dropped (the rest scaled by
     * 1 / (1 - p)) before they weigh the values; no draw when 0, so that
     * the stream is where it was without the option. */
    if (drop > 0)
        a = drop_weights ? drop_weights(a, drop) : dla_dropout(a, drop);
    dla_tensor *y = from_heads(dla_pagemtimes(v, "none", a, "none"), queries, &l[0]);
    if (weights && dla_tensor_status(y) == DLA_OK)
        *weights = a;
    return y;
}
