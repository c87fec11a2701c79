/*
 * resize.c - dla_resize, MATLAB's dlresize: resizes the spatial ("S") dims
 * of a formatted tensor by nearest-neighbour or linear interpolation.
 *
 * Resizing is separable, so each S dim is done on its own, one after the
 * other: the output positions along that dim are mapped back to input
 * coordinates on the host (the sizes are known here, the values are not
 * needed), and the data moves with dla_index gathers - one for "nearest",
 * two weighted and added for "linear". Built from differentiable ops, its
 * gradients, higher derivatives and replays are theirs, and it runs on
 * every device that gathers. The index and weight tensors are made on the
 * host each call; a trace keeps them as constants (x's sizes are in its
 * key, and nothing else decides them).
 */
#include "core/alloc.h"
#include "core/error.h"
#include "core/registry.h"
#include "core/tensor.h"

#include <dlaccel/nnops.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char op[] = "dla_resize";

/* Far beyond any image, and every output count fits an int32 index (the
 * positions themselves may lie past 2^31: gather_at). */
#define MAX_OUT ((int64_t)1 << 30)
/* resize_dim's host tables per output position: lo, hi, rel and w. */
#define TABLE_BYTES ((int)(2 * sizeof(int64_t) + sizeof(int32_t) + sizeof(double)))

/* How many leading entries of v[DLA_MAX_DIMS] are given: up to the last
 * nonzero one (NaN counts as given). */
static int given(const double *v)
{
    int n = 0;
    for (int i = 0; i < DLA_MAX_DIMS; i++)
        if (v[i] != 0)
            n = i + 1;
    return n;
}

/* MATLAB's round: halves away from zero. */
static double round_half_away(double v) { return v < 0 ? -floor(-v + 0.5) : floor(v + 0.5); }

enum method { NEAREST, LINEAR };
enum transform { HALF_PIXEL, ASYMMETRIC };
enum rounding { ROUND, FLOOR, ONNX10 };

typedef struct plan {
    int method, transform, rounding;
} plan;

static int pick(const char *s, const char *const *names, int n, int *out)
{
    if (!s || !*s) {
        *out = 0;
        return 1;
    }
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i])) {
            *out = i;
            return 1;
        }
    return 0;
}

/* The input coordinate of output position i along a dim resized by s. */
static double source_coord(const plan *p, int64_t i, double s)
{
    return p->transform == HALF_PIXEL ? ((double)i + 0.5) / s - 0.5 : (double)i / s;
}

static int64_t clamp(int64_t v, int64_t lo, int64_t hi) { return v < lo ? lo : v > hi ? hi : v; }

/* The input position nearest output position i, as the rounding mode
 * says, kept inside the input. */
static int64_t nearest(const plan *p, double x, double s, int64_t in)
{
    double r;
    if (p->rounding == ROUND)
        r = round_half_away(x);
    else if (p->rounding == FLOOR)
        r = floor(x);
    else /* ONNX opset 10: down when enlarging, up when shrinking */
        r = s < 1 ? ceil(x) : floor(x);
    return clamp((int64_t)r, 0, in - 1);
}

/* A tensor made from host data on dev (the index and weights must be on
 * x's device for the gathers and products). */
static dla_tensor *on_device(const void *host, dla_dtype dtype, const char *fmt, int nd,
                             const int64_t *dims, dla_device *dev)
{
    dla_device *keep = dla_device_current();
    dla_device_set_current(dev);
    dla_tensor *t = dla_tensor_from_host(host, dtype, fmt, nd, dims);
    dla_device_set_current(keep);
    return t;
}

/* dla_index of y along dim d (1-based) at the positions pos[0..n-1].
 * dla_index takes int32 positions, and a dim past 2^31 elements (a long
 * 1-D signal) has positions beyond them: those go in runs whose positions
 * lie within INT32_MAX of the run's smallest, each a gather from a slice
 * of y starting there, joined along d. A dim within int32 (every image) is
 * one gather from y itself, as before. */
static dla_tensor *gather_at(dla_tensor *y, int d, const int64_t *pos, int64_t n, int32_t *rel)
{
    dla_device *dev = dla_tensor_device(y);
    if (dla_tensor_dim(y, d) - 1 <= INT32_MAX) {
        for (int64_t i = 0; i < n; i++)
            rel[i] = (int32_t)pos[i];
        return dla_index(y, d, on_device(rel, DLA_I32, "", 1, (const int64_t[]){n}, dev));
    }
    dla_tensor *parts[64];
    int nparts = 0;
    for (int64_t i0 = 0; i0 < n;) {
        int64_t lo = pos[i0], hi = pos[i0], i1 = i0 + 1;
        for (; i1 < n; i1++) {
            const int64_t l = pos[i1] < lo ? pos[i1] : lo, h = pos[i1] > hi ? pos[i1] : hi;
            if (h - l > INT32_MAX)
                break;
            lo = l, hi = h;
        }
        if (nparts == (int)(sizeof parts / sizeof *parts)) {
            /* The positions are monotone, so a run ends only after 2^31
             * elements of y: 64 runs would take a dim of 2^37. Join what
             * there is and go on. */
            parts[0] = dla_cat(d, nparts, parts);
            nparts = 1;
        }
        for (int64_t i = i0; i < i1; i++)
            rel[i] = (int32_t)(pos[i] - lo);
        parts[nparts++] = dla_index(dla_slice(y, d, lo, 1, hi + 1), d,
                                    on_device(rel + i0, DLA_I32, "", 1,
                                              (const int64_t[]){i1 - i0}, dev));
        i0 = i1;
    }
    return nparts == 1 ? parts[0] : dla_cat(d, nparts, parts);
}

/* y resized along its dim d (1-based) from in to out elements, scale s. */
static dla_tensor *resize_dim(dla_tensor *y, int d, int64_t in, int64_t out, double s,
                              const plan *p)
{
    int64_t *lo = dla__malloc(sizeof *lo * (size_t)out), *hi = dla__malloc(sizeof *hi * (size_t)out);
    int32_t *rel = dla__malloc(sizeof *rel * (size_t)out);
    double *w = dla__malloc(sizeof *w * (size_t)out);
    if (!lo || !hi || !rel || !w) {
        dla__free(lo), dla__free(hi), dla__free(rel), dla__free(w);
        return dla__error(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory for %lld positions", op,
                          (long long)out);
    }
    int identity = out == in, weighted = 0;
    for (int64_t i = 0; i < out; i++) {
        const double x = source_coord(p, i, s);
        if (p->method == NEAREST) {
            lo[i] = hi[i] = nearest(p, x, s, in);
            w[i] = 0;
        } else {
            /* Linear: the coordinate is kept inside the input, so the
             * edges repeat the outermost element. */
            const double c = x < 0 ? 0 : x > (double)(in - 1) ? (double)(in - 1) : x;
            const int64_t l = clamp((int64_t)floor(c), 0, in - 1);
            lo[i] = l;
            hi[i] = l + 1 < in ? l + 1 : l;
            w[i] = c - (double)l;
        }
        identity &= lo[i] == i && w[i] == 0;
        weighted |= w[i] != 0;
    }
    dla_tensor *r = y;
    if (!identity) {
        dla_device *dev = dla_tensor_device(y);
        dla_tensor *a = gather_at(y, d, lo, out, rel);
        if (!weighted) {
            r = a;
        } else {
            /* (1 - w) a + w b, w along dim d and 1 elsewhere. */
            const char *fmt = dla_tensor_format(y);
            const int nd = (int)strlen(fmt);
            int64_t wd[DLA_MAX_DIMS];
            for (int k = 0; k < nd; k++)
                wd[k] = k == d - 1 ? out : 1;
            const dla_dtype dt = dla_tensor_dtype(y);
            dla_tensor *wt = dla_cast(on_device(w, DLA_F64, fmt, nd, wd, dev), dt);
            dla_tensor *b = gather_at(y, d, hi, out, rel);
            r = dla_add(dla_mul(dla_affine(wt, -1.0, 1.0), a), dla_mul(wt, b));
        }
    }
    dla__free(lo), dla__free(hi), dla__free(rel), dla__free(w);
    return r;
}

DLA_API dla_tensor *dla_resize(dla_tensor *x, const dla_resize_options *opts)
{
    if (!x || x->status != DLA_OK)
        return dla__pass_arg(op, "x", x);
    static const dla_resize_options none;
    const dla_resize_options *o = opts ? opts : &none;
    const char *fmt = dla_tensor_format(x);
    char xb[DLA__DIMS_BUF];
    dla__tensor_dims_str(x, xb, sizeof xb);
    int sdim[DLA_MAX_DIMS], ns = 0;
    for (int k = 0; fmt[k]; k++)
        if (fmt[k] == 'S')
            sdim[ns++] = k + 1;
    if (!ns)
        return dla__error(DLA_ERR_FORMAT, "%s: argument x (%s \"%s\"): it needs a format with "
                          "spatial (\"S\") dims, the dims it resizes", op, xb, fmt);

    static const char *const methods[] = {"nearest", "linear"};
    static const char *const transforms[] = {"half-pixel", "asymmetric"};
    static const char *const roundings[] = {"round", "floor", "onnx-10"};
    plan p;
    if (!pick(o->method, methods, 2, &p.method))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: method \"%s\"; use \"nearest\" or "
                          "\"linear\"", op, o->method);
    /* Linear mixes neighbours with fractional weights, which an integer
     * or logical x cannot hold: the failure came from an op inside
     * ("dla_affine: argument x: int32"), and only when some weight was
     * fractional. */
    if (p.method == LINEAR && x->dtype != DLA_F32 && x->dtype != DLA_F64)
        return dla__error(DLA_ERR_DTYPE, "%s: argument x (%s %s): method \"linear\" mixes "
                          "elements with fractional weights and needs single or double; cast "
                          "x, or use \"nearest\"", op, xb, dla_dtype_name(x->dtype));
    if (!pick(o->geometric_transform_mode, transforms, 2, &p.transform))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: geometric transform mode \"%s\"; use "
                          "\"half-pixel\" or \"asymmetric\"", op, o->geometric_transform_mode);
    if (!pick(o->nearest_rounding_mode, roundings, 3, &p.rounding))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: nearest rounding mode \"%s\"; use "
                          "\"round\", \"floor\" or \"onnx-10\"", op, o->nearest_rounding_mode);

    const int nscale = given(o->scale), nsize = given(o->output_size);
    if ((nscale > 0) == (nsize > 0))
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: give exactly one of opts->scale and "
                          "opts->output_size (%s given)", op, nscale ? "both" : "neither");
    if (nscale && nscale != 1 && nscale != ns)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: opts->scale has %d entries; x (%s \"%s\") "
                          "has %d spatial dims: give 1 or %d", op, nscale, xb, fmt, ns, ns);
    if (nsize && nsize != ns)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: opts->output_size has %d entr%s; x (%s "
                          "\"%s\") has %d spatial dim%s: give one size each", op, nsize,
                          nsize == 1 ? "y" : "ies", xb, fmt, ns, ns == 1 ? "" : "s");

    int64_t in[DLA_MAX_DIMS], out[DLA_MAX_DIMS];
    double s[DLA_MAX_DIMS];
    for (int k = 0; k < ns; k++) {
        in[k] = dla_tensor_dim(x, sdim[k]);
        if (in[k] < 1)
            return dla__error(DLA_ERR_SHAPE, "%s: argument x (%s \"%s\"): spatial dim %d is "
                              "empty; there is nothing to resize", op, xb, fmt, sdim[k]);
    }
    if (nscale) {
        for (int k = 0; k < ns; k++) {
            s[k] = o->scale[nscale == 1 ? 0 : k];
            if (!(s[k] > 0) || !isfinite(s[k]))
                return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: opts->scale[%d] is %g; scales "
                                  "must be positive and finite", op, nscale == 1 ? 0 : k, s[k]);
            const double n = floor((double)in[k] * s[k]);
            if (n < 1 || n > (double)MAX_OUT)
                return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: scale %g makes spatial dim %d "
                                  "of x (%s \"%s\") %.0f elements; it must be 1 to %lld", op,
                                  s[k], sdim[k], xb, fmt, n, (long long)MAX_OUT);
            out[k] = (int64_t)n;
        }
    } else {
        /* Whole positive sizes; NaN entries keep the aspect ratio of the
         * first given one, as MATLAB's dlresize and resize2dLayer do: the
         * given dim's factor r = given/given_in resizes them too, to
         * floor(r * in) elements (imresize rounds up instead; dlresize's
         * sizes round down, as with a Scale). */
        int first = -1;
        for (int k = 0; k < ns; k++) {
            const double v = o->output_size[k];
            if (isnan(v))
                continue;
            if (!(v >= 1) || v > (double)MAX_OUT || v != floor(v))
                return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: opts->output_size[%d] is %g; "
                                  "sizes must be whole numbers from 1 to %lld (or NaN to keep "
                                  "the aspect ratio)", op, k, v, (long long)MAX_OUT);
            out[k] = (int64_t)v;
            if (first < 0)
                first = k;
        }
        if (first < 0)
            return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: opts->output_size is all NaN; "
                              "give at least one size", op);
        const double keep = (double)out[first] / (double)in[first];
        for (int k = 0; k < ns; k++) {
            if (isnan(o->output_size[k])) {
                const double n = floor(keep * (double)in[k]);
                if (n < 1 || n > (double)MAX_OUT)
                    return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: keeping the aspect ratio "
                                      "(factor %g) makes spatial dim %d of x (%s \"%s\") %.0f "
                                      "elements; it must be 1 to %lld", op, keep, sdim[k], xb,
                                      fmt, n, (long long)MAX_OUT);
                out[k] = (int64_t)n;
                s[k] = keep;
            } else {
                s[k] = (double)out[k] / (double)in[k];
            }
        }
    }

    /* The whole output counted before any dim is resized: OutputSize up
     * to 2^30 along three dims is 2^90 elements, found out only after the
     * first dim's host tables (28 bytes a position: 28 GiB at 2^30) and
     * its gather had been allocated, or the process killed for memory. */
    int64_t odims[DLA_MAX_DIMS], numel;
    const int nd = (int)strlen(fmt);
    for (int k = 0; k < nd; k++)
        odims[k] = dla_tensor_dim(x, k + 1);
    for (int k = 0; k < ns; k++)
        odims[sdim[k] - 1] = out[k];
    if (dla__numel_checked(op, nd, odims, x->dtype, &numel) != DLA_OK)
        return dla__return(dla__error_tensor());
    /* And against the memory it needs: an output larger than x's device
     * holds (2^30 x 2^30 from 1x1, 4 EiB in single, a count int64 holds)
     * was found out only when it was allocated, after each dim's host
     * tables, 28 bytes a position (28 GiB at 2^30, written through, the
     * process killed for memory before the refusal came). The tables of a
     * dim must fit in the host's memory too (a 2^32-element dim in single
     * is 16 GiB of output and 112 GiB of tables). */
    const uint64_t bytes = (uint64_t)numel * dla_dtype_size(x->dtype);
    const uint64_t mem = dla_device_memory(dla_tensor_device(x));
    if (mem > 0 && bytes > mem) {
        char ob[DLA__DIMS_BUF];
        return dla__error(DLA_ERR_OUT_OF_MEMORY, "%s: the output (%s %s) would be %.4g GiB, "
                          "more than the %.4g GiB of device %s; x is %s", op,
                          dla__dims_str(ob, sizeof ob, nd, odims), dla_dtype_name(x->dtype),
                          (double)bytes / 1073741824.0, (double)mem / 1073741824.0,
                          dla_device_name(dla_tensor_device(x)), xb);
    }
    dla_device *host = dla__device_cpu();
    const uint64_t host_mem = host ? dla_device_memory(host) : 0;
    for (int k = 0; k < ns && host_mem > 0; k++) {
        const uint64_t table = (uint64_t)out[k] * TABLE_BYTES;
        if (table > host_mem)
            return dla__error(DLA_ERR_OUT_OF_MEMORY, "%s: resizing spatial dim %d of x (%s \"%s\") "
                              "to %lld elements needs %.4g GiB of host tables (%d bytes a "
                              "position), more than the host's %.4g GiB", op, sdim[k], xb, fmt,
                              (long long)out[k], (double)table / 1073741824.0, TABLE_BYTES,
                              (double)host_mem / 1073741824.0);
    }

    dla_scope_begin();
    dla_tensor *y = x;
    for (int k = 0; k < ns && dla_tensor_status(y) == DLA_OK; k++)
        y = resize_dim(y, sdim[k], in[k], out[k], s[k], &p);
    dla_tensor *r = y;
    if (y == x) {
        /* Unchanged along every dim: a view, a new handle as every op
         * returns. */
        r = dla_reshape(x, fmt, nd, odims);
    }
    r = dla_tensor_retain(r);
    dla_scope_end();
    return dla__return(r);
}
