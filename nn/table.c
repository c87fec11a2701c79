/*
 * table.c - the Learnables, State and gradients tables: rows of (layer,
 * parameter, value) with the learn-rate and L2 factors trainnet applies.
 * A table owns one reference to each value.
 */
#include "nn/nn.h"

#include "core/handle.h" /* the handle checks (docs/checks.md) */

#include <math.h>
#include <stdio.h>
#include <string.h>

int dla__table_add(dla_table *t, const char *layer, const char *param, dla_tensor *value,
                   double lr_factor, double l2_factor)
{
    if (t->count == t->cap) {
        int cap = t->cap ? 2 * t->cap : 8;
        char **l = dla__nn_realloc(t->layer, (size_t)cap * sizeof *l);
        if (l)
            t->layer = l;
        char **p = dla__nn_realloc(t->param, (size_t)cap * sizeof *p);
        if (p)
            t->param = p;
        dla_tensor **v = dla__nn_realloc(t->values, (size_t)cap * sizeof *v);
        if (v)
            t->values = v;
        double *a = dla__nn_realloc(t->lr_factor, (size_t)cap * sizeof *a);
        if (a)
            t->lr_factor = a;
        double *b = dla__nn_realloc(t->l2_factor, (size_t)cap * sizeof *b);
        if (b)
            t->l2_factor = b;
        if (!l || !p || !v || !a || !b) {
            dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "table: cannot grow to %d rows", cap);
            return -1;
        }
        t->cap = cap;
    }
    char *ln = dla__nn_strdup(layer), *pn = dla__nn_strdup(param);
    if (!ln || !pn) {
        dla__nn_free(ln);
        dla__nn_free(pn);
        dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "table: cannot add a row");
        return -1;
    }
    int i = t->count++;
    t->layer[i] = ln;
    t->param[i] = pn;
    t->values[i] = dla_tensor_retain(value);
    t->lr_factor[i] = lr_factor;
    t->l2_factor[i] = l2_factor;
    return i;
}

void dla__table_clear(dla_table *t)
{
    for (int i = 0; i < t->count; i++) {
        dla__nn_free(t->layer[i]);
        dla__nn_free(t->param[i]);
        dla_tensor_release(t->values[i]);
    }
    dla__nn_free(t->layer);
    dla__nn_free(t->param);
    dla__nn_free(t->values);
    dla__nn_free(t->lr_factor);
    dla__nn_free(t->l2_factor);
    int owned = t->owned_by_net;
    uint32_t magic = t->magic;
    memset(t, 0, sizeof *t);
    t->owned_by_net = owned;
    t->magic = magic;
}

void dla__table_drop_layer(dla_table *t, const char *layer)
{
    int kept = 0;
    for (int i = 0; i < t->count; i++) {
        if (!strcmp(t->layer[i], layer)) {
            dla__nn_free(t->layer[i]);
            dla__nn_free(t->param[i]);
            dla_tensor_release(t->values[i]);
            continue;
        }
        t->layer[kept] = t->layer[i];
        t->param[kept] = t->param[i];
        t->values[kept] = t->values[i];
        t->lr_factor[kept] = t->lr_factor[i];
        t->l2_factor[kept] = t->l2_factor[i];
        kept++;
    }
    t->count = kept;
}

dla_status dla__table_copy(dla_table *dst, const dla_table *src)
{
    for (int i = 0; i < src->count; i++)
        if (dla__table_add(dst, src->layer[i], src->param[i], src->values[i], src->lr_factor[i],
                           src->l2_factor[i]) < 0)
            return DLA_ERR_OUT_OF_MEMORY;
    return DLA_OK;
}

/* Nonzero when t is a live table; else logs why for op. */
static int table_live(const dla_table *t, const char *op)
{
    if (t->magic == DLA__HANDLE_TABLE)
        return 1;
    dla__misuse(DLA_ERR_INVALID_ARGUMENT, "%s: %p is %s", op, (const void *)t,
                t->magic == DLA__HANDLE_DEAD ? "a table freed already (freed twice, or used "
                "after dla_table_free or after its network was freed)" : "not a table handle");
    return 0;
}

/* NULL answers as an empty table (as before); a dead one also logs. */
#define LIVE(t, op) ((t) && table_live((t), (op)))

DLA_API int dla_table_count(const dla_table *t)
{
    return LIVE(t, "dla_table_count") ? t->count : 0;
}

DLA_API const char *dla_table_layer(const dla_table *t, int i)
{
    return LIVE(t, "dla_table_layer") && i >= 0 && i < t->count ? t->layer[i] : NULL;
}

DLA_API const char *dla_table_parameter(const dla_table *t, int i)
{
    return LIVE(t, "dla_table_parameter") && i >= 0 && i < t->count ? t->param[i] : NULL;
}

DLA_API dla_tensor *dla_table_value(const dla_table *t, int i)
{
    return LIVE(t, "dla_table_value") && i >= 0 && i < t->count ? t->values[i] : NULL;
}

DLA_API dla_tensor **dla_table_values(dla_table *t)
{
    return LIVE(t, "dla_table_values") ? t->values : NULL;
}

DLA_API int dla_table_find(const dla_table *t, const char *layer, const char *parameter)
{
    if (!LIVE(t, "dla_table_find") || !layer || !parameter)
        return -1;
    for (int i = 0; i < t->count; i++)
        if (!strcmp(t->layer[i], layer) && !strcmp(t->param[i], parameter))
            return i;
    return -1;
}

/* Same dims (trailing singletons aside) and dtype as the old value. */
static dla_status check_like(const char *fn, const dla_tensor *old, const dla_tensor *v,
                             const char *layer, const char *param)
{
    if (!v || dla_tensor_status(v) != DLA_OK)
        return dla__nn_fail(v ? dla_tensor_status(v) : DLA_ERR_INVALID_ARGUMENT,
                            "%s: %s/%s: the value is %s", fn, layer, param,
                            v ? dla_tensor_error(v) : "NULL");
    if (!old)
        return DLA_OK;
    if (dla_tensor_dtype(old) != dla_tensor_dtype(v))
        return dla__nn_fail(DLA_ERR_DTYPE, "%s: %s/%s: the value is %s, the parameter %s", fn,
                            layer, param, dla_dtype_name(dla_tensor_dtype(v)),
                            dla_dtype_name(dla_tensor_dtype(old)));
    int n = dla_tensor_ndims(old) > dla_tensor_ndims(v) ? dla_tensor_ndims(old) : dla_tensor_ndims(v);
    for (int d = 1; d <= n; d++)
        if (dla_tensor_dim(old, d) != dla_tensor_dim(v, d)) {
            int64_t a[DLA_MAX_DIMS], b[DLA_MAX_DIMS];
            char sa[96], sb[96];
            dla__dims_text(dla_tensor_dims(old, a), a, sa, sizeof sa);
            dla__dims_text(dla_tensor_dims(v, b), b, sb, sizeof sb);
            return dla__nn_fail(DLA_ERR_SHAPE, "%s: %s/%s: the value is %s, the parameter %s", fn,
                                layer, param, sb, sa);
        }
    return DLA_OK;
}

dla_status dla__table_check(const char *fn, const dla_table *t, int i, const dla_tensor *v)
{
    return check_like(fn, t->values[i], v, t->layer[i], t->param[i]);
}

/* A value on another device than the one it replaces was taken, and the
 * network's next call failed inside an op ("layer 'fc' (Fully Connected):
 * dla_fc: arguments x and weights are on cpu:0 and testmem:0"). Refused,
 * not copied: the table holds the caller's tensor itself (retained), as
 * dla_net_forward refuses inputs on another device. */
dla_status dla__table_check_device(const char *fn, const dla_table *t, int i, const dla_tensor *v)
{
    const dla_tensor *old = t->values[i];
    if (!old || !v || dla_tensor_status(old) != DLA_OK || dla_tensor_status(v) != DLA_OK ||
        dla_tensor_device(old) == dla_tensor_device(v))
        return DLA_OK;
    return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT,
                        "%s: %s/%s: the value is on %s but the network is on %s: move the value "
                        "(dla_tensor_to_device) or the network (dla_net_to_device)",
                        fn, t->layer[i], t->param[i], dla_device_name(dla_tensor_device(v)),
                        dla_device_name(dla_tensor_device(old)));
}

DLA_API dla_status dla_table_set_value(dla_table *t, int i, dla_tensor *v)
{
    if (t && !table_live(t, "dla_table_set_value"))
        return DLA_ERR_INVALID_ARGUMENT; /* logged by table_live */
    if (!t || i < 0 || i >= t->count)
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_table_set_value: argument i: %d is "
                            "outside 0..%d", i, t ? t->count - 1 : -1);
    dla_status st = dla__table_check("dla_table_set_value", t, i, v);
    if (st == DLA_OK)
        st = dla__table_check_device("dla_table_set_value", t, i, v);
    if (st != DLA_OK)
        return st;
    dla_tensor_retain(v);
    dla_tensor_release(t->values[i]);
    t->values[i] = v;
    return DLA_OK;
}

DLA_API double dla_table_learn_rate_factor(const dla_table *t, int i)
{
    return LIVE(t, "dla_table_learn_rate_factor") && i >= 0 && i < t->count ? t->lr_factor[i] : 0;
}

DLA_API double dla_table_l2_factor(const dla_table *t, int i)
{
    return LIVE(t, "dla_table_l2_factor") && i >= 0 && i < t->count ? t->l2_factor[i] : 0;
}

DLA_API dla_status dla_table_set_factors(dla_table *t, int i, double learn_rate_factor,
                                         double l2_factor)
{
    if (t && !table_live(t, "dla_table_set_factors"))
        return DLA_ERR_INVALID_ARGUMENT; /* logged by table_live */
    /* Finite: an infinite factor only makes NaN weights, and a network
     * file could not hold it. */
    if (!t || i < 0 || i >= t->count || !(learn_rate_factor >= 0) || !(l2_factor >= 0) ||
        !isfinite(learn_rate_factor) || !isfinite(l2_factor))
        return dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_table_set_factors: row %d (of %d), "
                            "factors %g and %g: the row must exist and the factors be finite "
                            "and >= 0", i,
                            t ? t->count : 0, learn_rate_factor, l2_factor);
    t->lr_factor[i] = learn_rate_factor;
    t->l2_factor[i] = l2_factor;
    return DLA_OK;
}

DLA_API dla_table *dla_table_like(const dla_table *layout, dla_tensor *const *values)
{
    if (layout && !table_live(layout, "dla_table_like"))
        return NULL;
    if (!layout || (layout->count && !values)) {
        dla__nn_fail(DLA_ERR_INVALID_ARGUMENT, "dla_table_like: argument %s is NULL",
                     layout ? "values" : "layout");
        return NULL;
    }
    for (int i = 0; i < layout->count; i++)
        if (!values[i] || dla_tensor_status(values[i]) != DLA_OK) {
            dla__nn_fail(values[i] ? dla_tensor_status(values[i]) : DLA_ERR_INVALID_ARGUMENT,
                         "dla_table_like: value %d (%s/%s): %s", i, layout->layer[i],
                         layout->param[i], values[i] ? dla_tensor_error(values[i]) : "NULL");
            return NULL;
        }
    dla_table *t = dla__nn_calloc(1, sizeof *t);
    if (!t) {
        dla__nn_fail(DLA_ERR_OUT_OF_MEMORY, "dla_table_like: cannot allocate the table");
        return NULL;
    }
    t->magic = DLA__HANDLE_TABLE;
    for (int i = 0; i < layout->count; i++)
        if (dla__table_add(t, layout->layer[i], layout->param[i], values[i], layout->lr_factor[i],
                           layout->l2_factor[i]) < 0) {
            dla__table_clear(t);
            dla__nn_free(t);
            return NULL;
        }
    return t;
}

DLA_API void dla_table_free(dla_table *t)
{
    if (!t || !table_live(t, "dla_table_free") || t->owned_by_net)
        return;
    dla__table_clear(t);
    t->magic = DLA__HANDLE_DEAD; /* parked, not freed: a stale pointer reads "dead" */
    dla__quarantine(DLA__RING_OBJECTS, t);
}

DLA_API int dla_table_describe(const dla_table *t, char *buf, size_t size)
{
    if (!t)
        return snprintf(buf, size, "(no table)\n");
    if (!table_live(t, "dla_table_describe"))
        return snprintf(buf, size, "(a freed table)\n");
    int wl = 5, wp = 9;
    for (int i = 0; i < t->count; i++) {
        int a = dla__text_columns(t->layer[i], strlen(t->layer[i]));
        int b = dla__text_columns(t->param[i], strlen(t->param[i]));
        wl = a > wl ? a : wl;
        wp = b > wp ? b : wp;
    }
    size_t at = 0;
    int total = 0;
#define EMIT(...)                                                                                  \
    do {                                                                                           \
        int n_ = snprintf(buf + (at < size ? at : size), at < size ? size - at : 0, __VA_ARGS__);  \
        if (n_ > 0) {                                                                              \
            at += (size_t)n_;                                                                      \
            total += n_;                                                                           \
        }                                                                                          \
    } while (0)
    EMIT("  %dx3 table\n\n    %-*s  %-*s  %s\n", t->count, wl, "Layer", wp, "Parameter", "Value");
    for (int i = 0; i < t->count; i++) {
        char d[96];
        int64_t dims[DLA_MAX_DIMS];
        if (t->values[i])
            dla__dims_text(dla_tensor_dims(t->values[i], dims), dims, d, sizeof d);
        else
            snprintf(d, sizeof d, "[]");
        /* Padded by display columns (%-*s counts bytes: a layer name with
         * an accented letter pushed its row one to the left). */
        int pl = wl - dla__text_columns(t->layer[i], strlen(t->layer[i]));
        int pp = wp - dla__text_columns(t->param[i], strlen(t->param[i]));
        EMIT("    %s%*s  %s%*s  {%s %s}\n", t->layer[i], pl, "", t->param[i], pp, "", d,
             t->values[i] ? dla_dtype_name(dla_tensor_dtype(t->values[i])) : "");
    }
#undef EMIT
    if (size && at >= size)
        buf[size - 1] = '\0';
    return total;
}
