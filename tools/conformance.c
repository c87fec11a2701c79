/*
 * conformance.c - the machinery of the conformance suite (conformance.h):
 * a case's random stream, buffers mirrored on the device under test and
 * the oracle, random views, the comparison within tolerances and the
 * failure line that reruns the case.
 */
#include "tools/conformance.h"

#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ randomness */

uint64_t cf_rnd(cf_case *c)
{
    uint64_t z = (c->rng += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

int64_t cf_int(cf_case *c, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(cf_rnd(c) % (uint64_t)(hi - lo + 1));
}

double cf_unif(cf_case *c, double lo, double hi)
{
    return lo + (hi - lo) * ((double)(cf_rnd(c) >> 11) / 9007199254740992.0);
}

int cf_chance(cf_case *c, int percent)
{
    return cf_int(c, 0, 99) < percent;
}

/* ------------------------------------------------------------- devices */

cf_device cf_device_of(dla_device *d)
{
    return (cf_device){d, dla_device_table(d), dla_device_context(d), dla_device_abi_minor(d)};
}

/* As the core decides (the kernel's row of DLA_KERNEL_LIST: its member is
 * there, the plugin answered its minor, and supports() does not say no). */
static int supported(const cf_device *dev, dla_kernel kernel, dla_dtype dtype)
{
    return dla_device_runs_natively(dev->handle, kernel, dtype);
}

int cf_both_support(const cf_case *c, dla_kernel kernel, dla_dtype dtype)
{
    return supported(c->suite->dev[CF_DUT], kernel, dtype) &&
           supported(c->suite->dev[CF_ORACLE], kernel, dtype);
}

/* The dtypes of mask both devices support for kernel, the case's turn. */
static int dtype_turn(cf_case *c, dla_kernel kernel, unsigned mask)
{
    int ok[DLA_DTYPE_COUNT], n = 0;
    for (int t = 0; t < DLA_DTYPE_COUNT; t++)
        n += ok[t] = (mask >> t & 1) && cf_both_support(c, kernel, (dla_dtype)t);
    c->dtype = -1;
    for (int t = 0, turn = n ? c->index % n : -1; t < DLA_DTYPE_COUNT; t++)
        if (ok[t] && turn-- == 0)
            c->dtype = t;
    return c->dtype;
}

int cf_float_dtype(cf_case *c, dla_kernel kernel)
{
    return dtype_turn(c, kernel, 1u << DLA_F32 | 1u << DLA_F64);
}

int cf_any_dtype(cf_case *c, dla_kernel kernel)
{
    return dtype_turn(c, kernel, ~0u);
}

/* ------------------------------------------------------------- buffers */

void cf_buf_set(cf_buf *b, int64_t i, double v)
{
    switch (b->dtype) {
    case DLA_F32: ((float *)b->host)[i] = (float)v; break;
    case DLA_F64: ((double *)b->host)[i] = v; break;
    case DLA_I32: ((int32_t *)b->host)[i] = (int32_t)v; break;
    default: b->host[i] = (unsigned char)v; break;
    }
}

static double get(dla_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case DLA_F32: return ((const float *)p)[i];
    case DLA_F64: return ((const double *)p)[i];
    case DLA_I32: return ((const int32_t *)p)[i];
    default: return ((const unsigned char *)p)[i];
    }
}

double cf_buf_get(const cf_buf *b, int64_t i)
{
    return get(b->dtype, b->host, i);
}

static size_t buf_bytes(const cf_buf *b)
{
    return (size_t)b->n * dla_dtype_size(b->dtype);
}

int cf_buf_upload(cf_case *c, cf_buf *b)
{
    for (int k = 0; k < 2; k++) {
        if (!b->mem[k])
            continue;
        const cf_device *dev = c->suite->dev[k];
        dla_status s = dev->table->copy_to_device(dev->ctx, b->mem[k], 0, b->host, buf_bytes(b));
        if (s != DLA_OK) {
            cf_fail(c, "%s copy_to_device of %zu bytes: %s", dla_device_name(dev->handle), buf_bytes(b),
                    dla_last_error());
            return 0;
        }
    }
    return 1;
}

static cf_buf *buf_alloc(cf_case *c, dla_dtype t, int64_t n, int oracle_only)
{
    if (c->nbufs == CF_MAX_BUFS) {
        cf_fail(c, "the suite's case uses more than %d buffers", CF_MAX_BUFS);
        return NULL;
    }
    cf_buf *b = &c->bufs[c->nbufs];
    memset(b, 0, sizeof *b);
    b->dtype = t;
    b->n = n > 0 ? n : 1;
    b->host = calloc((size_t)b->n, dla_dtype_size(t));
    if (!b->host) {
        cf_fail(c, "out of host memory for %lld elements", (long long)b->n);
        return NULL;
    }
    c->nbufs++;
    for (int k = oracle_only ? CF_ORACLE : CF_DUT; k < 2; k++) {
        const cf_device *dev = c->suite->dev[k];
        dla_status s = dev->table->mem_alloc(dev->ctx, buf_bytes(b), &b->mem[k]);
        if (s != DLA_OK) {
            b->mem[k] = NULL;
            cf_fail(c, "%s mem_alloc of %zu bytes: %s", dla_device_name(dev->handle), buf_bytes(b),
                    dla_last_error());
            return NULL;
        }
    }
    return b;
}

cf_buf *cf_buf_new(cf_case *c, dla_dtype t, int64_t n, double lo, double hi, int zero_percent)
{
    cf_buf *b = buf_alloc(c, t, n, 0);
    if (!b)
        return NULL;
    for (int64_t i = 0; i < b->n; i++) {
        double v;
        if (t == DLA_F32 || t == DLA_F64)
            v = cf_unif(c, lo, hi);
        else if (t == DLA_BOOL)
            v = (double)cf_int(c, 0, 1);
        else
            v = (double)cf_int(c, (int64_t)lo, (int64_t)hi);
        cf_buf_set(b, i, cf_chance(c, zero_percent) ? 0 : v);
    }
    return cf_buf_upload(c, b) ? b : NULL;
}

cf_buf *cf_buf_abs(cf_case *c, const cf_buf *src)
{
    cf_buf *b = buf_alloc(c, src->dtype, src->n, 1);
    if (!b)
        return NULL;
    for (int64_t i = 0; i < b->n; i++)
        cf_buf_set(b, i, fabs(cf_buf_get(src, i)));
    return cf_buf_upload(c, b) ? b : NULL;
}

static void *download(cf_case *c, int k, const cf_buf *b)
{
    const cf_device *dev = c->suite->dev[k];
    void *out = malloc(buf_bytes(b));
    if (!out) {
        cf_fail(c, "out of host memory");
        return NULL;
    }
    dla_status s = dev->table->sync ? dev->table->sync(dev->ctx) : DLA_OK;
    if (s == DLA_OK)
        s = dev->table->copy_to_host(dev->ctx, out, b->mem[k], 0, buf_bytes(b));
    if (s != DLA_OK) {
        cf_fail(c, "%s copy_to_host of %zu bytes: %s", dla_device_name(dev->handle), buf_bytes(b),
                dla_last_error());
        free(out);
        return NULL;
    }
    return out;
}

int cf_buf_download(cf_case *c, const cf_buf *b, void **got, void **want)
{
    *got = download(c, CF_DUT, b);
    *want = *got ? download(c, CF_ORACLE, b) : NULL;
    if (!*want) {
        free(*got);
        *got = NULL;
        return 0;
    }
    return 1;
}

double *cf_oracle_values(cf_case *c, const cf_buf *b)
{
    void *raw = download(c, CF_ORACLE, b);
    double *v = raw ? malloc((size_t)b->n * sizeof *v) : NULL;
    if (raw && !v)
        cf_fail(c, "out of host memory");
    for (int64_t i = 0; v && i < b->n; i++)
        v[i] = get(b->dtype, raw, i);
    free(raw);
    return v;
}

void cf_case_end(cf_case *c)
{
    for (int i = 0; i < c->nbufs; i++) {
        cf_buf *b = &c->bufs[i];
        for (int k = 0; k < 2; k++)
            if (b->mem[k]) {
                const cf_device *dev = c->suite->dev[k];
                dev->table->mem_free(dev->ctx, b->mem[k]);
            }
        free(b->host);
    }
    c->nbufs = 0;
}

/* ---------------------------------------------------------------- views */

int64_t cf_numel(int ndims, const int64_t *dims)
{
    int64_t n = 1;
    for (int d = 0; d < ndims; d++)
        n *= dims[d];
    return n;
}

int64_t cf_view_at(const dla_view *v, int64_t l)
{
    int64_t at = v->offset;
    for (int d = 0; d < v->ndims; d++) {
        at += (l % v->dims[d]) * v->strides[d];
        l /= v->dims[d];
    }
    return at;
}

void cf_dims(cf_case *c, int *ndims, int64_t *dims, int max_ndims, int64_t max_dim,
             int zero_percent)
{
    *ndims = (int)cf_int(c, 0, max_ndims);
    for (int d = 0; d < *ndims; d++)
        dims[d] = cf_chance(c, zero_percent) ? 0 : cf_chance(c, 25) ? 1 : cf_int(c, 1, max_dim);
}

int64_t cf_view(cf_case *c, dla_view *v, dla_dtype t, int ndims, const int64_t *dims,
                int broadcast)
{
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    v->dtype = t;
    v->ndims = ndims;
    int order[DLA_MAX_DIMS];
    for (int d = 0; d < ndims; d++)
        order[d] = d;
    for (int d = ndims - 1; d > 0; d--) {
        const int j = (int)cf_int(c, 0, d), tmp = order[d];
        order[d] = order[j], order[j] = tmp;
    }
    /* Mostly dense (the common case), else permuted with gaps. */
    const int plain = cf_chance(c, 40);
    int64_t s = !plain && cf_chance(c, 20) ? 2 : 1;
    for (int k = 0; k < ndims; k++) {
        const int d = plain ? k : order[k];
        v->dims[d] = dims[d];
        if (broadcast && cf_chance(c, 30)) {
            v->strides[d] = 0;
            continue;
        }
        v->strides[d] = s;
        s = s * dims[d] + (!plain && cf_chance(c, 30) ? cf_int(c, 1, 3) : 0);
        if (s == 0)
            s = 1;
    }
    v->offset = cf_chance(c, 50) ? cf_int(c, 1, 7) : 0;
    int64_t extent = v->offset + 1;
    if (cf_numel(ndims, dims) > 0)
        for (int d = 0; d < ndims; d++)
            extent += (dims[d] - 1) * v->strides[d];
    return extent;
}

int64_t cf_dense(dla_view *v, dla_dtype t, int ndims, const int64_t *dims)
{
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    v->dtype = t;
    v->ndims = ndims;
    int64_t s = 1;
    for (int d = 0; d < ndims; d++) {
        v->dims[d] = dims[d];
        v->strides[d] = s;
        s *= dims[d];
    }
    return s > 0 ? s : 1;
}

const char *cf_dims_str(char *buf, size_t size, int ndims, const int64_t *dims)
{
    size_t used = 0;
    snprintf(buf, size, ndims ? "" : "scalar");
    for (int d = 0; d < ndims && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? "x%lld" : "%lld", (long long)dims[d]);
    return buf;
}

const char *cf_view_str(char *buf, size_t size, const dla_view *v)
{
    size_t used = (size_t)snprintf(buf, size, "[off %lld st ", (long long)v->offset);
    for (int d = 0; d < v->ndims && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? ",%lld" : "%lld",
                                 (long long)v->strides[d]);
    if (used < size)
        snprintf(buf + used, size - used, "%s]", v->ndims ? "" : "-");
    return buf;
}

/* ----------------------------------------------------------- comparing */

void cf_describe(cf_case *c, const char *fmt, ...)
{
    const size_t used = strlen(c->what);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->what + used, sizeof c->what - used, fmt, ap);
    va_end(ap);
}

void cf_fail(cf_case *c, const char *fmt, ...)
{
    const cf_suite *s = c->suite;
    c->failed = 1;
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    fprintf(s->out,
            "%sFAIL %s %s case %d (seed %llu): %s: %s; rerun: dlaccel check-plugin --kernel %s "
            "--case %d --seed %llu %s\n",
            s->tap ? "# " : "", dla_device_name(s->dev[CF_DUT]->handle), c->kernel, c->index,
            (unsigned long long)s->seed, c->what[0] ? c->what : "(no call yet)", why, c->kernel,
            c->index, (unsigned long long)s->seed, s->manifest);
}

void cf_record(cf_case *c, int k, dla_status s)
{
    c->st[k] = s;
    if (k == CF_DUT)
        snprintf(c->msg, sizeof c->msg, "%s", s == DLA_OK ? "" : dla_last_error());
}

int cf_agree(cf_case *c)
{
    if (c->failed)
        return 0; /* reported already (a decline the core would not rescue) */
    if (c->st[CF_DUT] == c->st[CF_ORACLE]) {
        c->refused = c->st[CF_DUT] != DLA_OK;
        return c->st[CF_DUT] == DLA_OK;
    }
    if (c->st[CF_DUT] == DLA_OK)
        cf_fail(c, "status ok, the oracle's %s (%s)", dla_status_str(c->st[CF_ORACLE]),
                dla_last_error());
    else
        cf_fail(c, "status %s (%s), the oracle's %s", dla_status_str(c->st[CF_DUT]),
                c->msg[0] ? c->msg : "no message", dla_status_str(c->st[CF_ORACLE]));
    return 0;
}

static int is_float(dla_dtype t)
{
    return t == DLA_F32 || t == DLA_F64;
}

/* The allowed difference at element i. */
static double allowed(dla_dtype t, double want, int64_t i, cf_tol tol)
{
    const double eps = t == DLA_F64 ? DBL_EPSILON : FLT_EPSILON;
    const double tiny = t == DLA_F64 ? DBL_MIN : FLT_MIN;
    double a = 0;
    if (tol.ulps > 0)
        a += tol.ulps * eps * fmax(fabs(want), tiny);
    if (tol.mag)
        a += 4.0 * (tol.terms + 4.0) * eps * tol.mag[i];
    /* A device that flushes denormals may differ by them wherever it is
     * not exact. */
    if (a > 0)
        a += 2 * tiny;
    return a;
}

int cf_compare(cf_case *c, const cf_buf *b, const dla_view *view, cf_tol tol)
{
    void *got, *want;
    if (!cf_buf_download(c, b, &got, &want))
        return 0;
    unsigned char *inside = NULL;
    if (view) {
        inside = calloc((size_t)b->n, 1);
        if (!inside) {
            free(got), free(want);
            cf_fail(c, "out of host memory");
            return 0;
        }
        const int64_t n = cf_numel(view->ndims, view->dims);
        for (int64_t l = 0; l < n; l++) {
            int64_t r = l, at = view->offset;
            for (int d = 0; d < view->ndims; d++) {
                at += (r % view->dims[d]) * view->strides[d];
                r /= view->dims[d];
            }
            if (at >= 0 && at < b->n)
                inside[at] = 1;
        }
    }
    int ok = 1;
    for (int64_t i = 0; i < b->n && ok; i++) {
        const double g = get(b->dtype, got, i), w = get(b->dtype, want, i);
        const int in = !inside || inside[i];
        if (!is_float(b->dtype) || !in || (tol.ulps == 0 && !tol.mag)) {
            /* Exact is the sign of a zero too (== takes -0 for +0: a neg
             * written as 0 - x, an abs or relu that kept -0, passed). */
            ok = (g == w && signbit(g) == signbit(w)) || (isnan(g) && isnan(w));
        } else if (isnan(w) || isnan(g)) {
            ok = isnan(w) && isnan(g);
        } else if (isinf(w) || isinf(g)) {
            ok = g == w;
        } else {
            ok = fabs(g - w) <= allowed(b->dtype, w, i, tol);
        }
        if (!ok)
            cf_fail(c, "element %lld (%s the output view) is %.9g, the oracle's %.9g (allowed "
                    "difference %.3g)",
                    (long long)i, in ? "inside" : "outside", g, w,
                    in && is_float(b->dtype) ? allowed(b->dtype, w, i, tol) : 0.0);
    }
    free(inside);
    free(got);
    free(want);
    return ok;
}
