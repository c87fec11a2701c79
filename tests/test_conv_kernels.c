/*
 * test_conv_kernels.c - the cpu plugin's convolution kernels
 * (conv_forward, conv_backward_data, conv_backward_filter) against naive
 * loops written here; other plugins are checked against the cpu plugin
 * by dlaccel check-plugin (tests/conformance.sh).
 *
 * Random cases cover 1-3 spatial dims, stride, dilation, asymmetric and
 * negative padding (cropping), groups up to channel-wise, bias, empty
 * batches and outputs, float and double, dense views and views with
 * permuted layouts, gaps and offsets. Each output buffer is compared whole
 * (elements outside the view must keep their old values), and the
 * backward kernels must overwrite what was there. On the cpu plugin every
 * case runs three times: with the algorithm the plugin picks (Winograd,
 * direct AVX-512 or direct AVX2 where they apply, for double direct
 * AVX2), with DLACCEL_CPU_CONV=direct and with DLACCEL_CPU_CONV=im2col;
 * and the direct kernels of each dtype are checked to have run where the
 * CPU has them.
 *
 * The plugin is driven only through its table, as in test_kernels.c.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */
#include <dlaccel.h>

#include <dlaccel/device_table.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEVICES 32

static dla_device *devices[MAX_DEVICES];
static int n_devices;
static char what[512];
/* FNV-1a of the bits each direction of the last run_case wrote: tells
 * the cpu plugin's algorithms apart. */
static uint64_t out_bits[3];
/* Set while a case may take the cpu plugin's Winograd path: its rounding
 * error is bounded by the magnitudes of a whole tile, not of the element's
 * own terms (an output whose terms cancel or vanish gets the tile's
 * rounding), so the tolerance adds the largest magnitude of the output. */
static int normwise;

/* ---------------------------------------------------------- randomness */

static uint64_t rng_state = 20240612u;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}
static int64_t rnd_int(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}
static double rnd_unif(double lo, double hi)
{
    return lo + (hi - lo) * ((double)(rnd() >> 11) / 9007199254740992.0);
}
static int chance(int percent)
{
    return rnd_int(0, 99) < percent;
}

/* ------------------------------------------------------------- buffers */

static size_t dsize(dla_dtype t)
{
    return t == DLA_F64 ? 8 : 4;
}
static double get(dla_dtype t, const void *p, int64_t i)
{
    return t == DLA_F64 ? ((const double *)p)[i] : ((const float *)p)[i];
}
static void put(dla_dtype t, void *p, int64_t i, double v)
{
    if (t == DLA_F64)
        ((double *)p)[i] = v;
    else
        ((float *)p)[i] = (float)v;
}

/* What dbuf_init's values in -1..1 are multiplied by. */
static double value_scale = 1.0;

/* A device buffer of n elements with its host image. */
typedef struct dbuf {
    dla_device *dev;
    dla_dtype dtype;
    int64_t n;
    unsigned char *host;
    dla_mem mem;
} dbuf;

static void dbuf_init(dbuf *b, dla_device *dev, dla_dtype t, int64_t n)
{
    b->dev = dev, b->dtype = t, b->n = n > 0 ? n : 1;
    b->host = calloc((size_t)b->n, dsize(t));
    assert_non_null(b->host);
    for (int64_t i = 0; i < b->n; i++)
        put(t, b->host, i, value_scale * rnd_unif(-1, 1));
    if (dla_device_table(dev)->mem_alloc(dla_device_context(dev), (size_t)b->n * dsize(t),
                                         &b->mem) != DLA_OK)
        fail_msg("%s: mem_alloc: %s", dla_device_name(dev), dla_last_error());
    if (dla_device_table(dev)->copy_to_device(dla_device_context(dev), b->mem, 0, b->host,
                                              (size_t)b->n * dsize(t)) != DLA_OK)
        fail_msg("%s: copy_to_device: %s", dla_device_name(dev), dla_last_error());
}

static void *dbuf_download(const dbuf *b)
{
    void *out = malloc((size_t)b->n * dsize(b->dtype));
    assert_non_null(out);
    if (dla_device_table(b->dev)->sync)
        assert_int_equal(dla_device_table(b->dev)->sync(dla_device_context(b->dev)), DLA_OK);
    if (dla_device_table(b->dev)->copy_to_host(dla_device_context(b->dev), out, b->mem, 0,
                                               (size_t)b->n * dsize(b->dtype)) != DLA_OK)
        fail_msg("%s: copy_to_host: %s", dla_device_name(b->dev), dla_last_error());
    return out;
}

static void dbuf_free(dbuf *b)
{
    dla_device_table(b->dev)->mem_free(dla_device_context(b->dev), b->mem);
    free(b->host);
}

/* A view of dims: dense, or (strided) in a random dim order with gaps and
 * an offset. Returns the elements its buffer needs. */
static int64_t make_view(dla_view *v, dla_dtype t, int nd, const int64_t *dims, int strided)
{
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    v->dtype = t;
    v->ndims = nd;
    int order[DLA_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        order[d] = d;
    if (strided)
        for (int d = nd - 1; d > 0; d--) {
            int j = (int)rnd_int(0, d), tmp = order[d];
            order[d] = order[j], order[j] = tmp;
        }
    int64_t s = strided && chance(20) ? 2 : 1;
    for (int k = 0; k < nd; k++) {
        int d = order[k];
        v->dims[d] = dims[d];
        v->strides[d] = s;
        s = s * (dims[d] > 0 ? dims[d] : 1) + (strided && chance(30) ? rnd_int(1, 3) : 0);
    }
    v->offset = strided || chance(30) ? rnd_int(0, 5) : 0;
    int64_t extent = v->offset + 1, n = 1;
    for (int d = 0; d < nd; d++) {
        extent += (dims[d] - 1) * v->strides[d];
        n *= dims[d];
    }
    return n > 0 ? extent + rnd_int(0, 3) : 1;
}

static int64_t at(const dla_view *v, const int64_t *idx)
{
    int64_t off = v->offset;
    for (int d = 0; d < v->ndims; d++)
        off += idx[d] * v->strides[d];
    return off;
}

/* ------------------------------------------------------------- a case */

typedef struct conv_case {
    dla_dtype dtype;
    int nsp, bias, strided;
    int64_t B, C, F, G;
    int64_t in[3], out[3], fs[3], st[3], dl[3], pb[3];
    /* The magnitude of x, w and y (dY) values; 0: 1. */
    double scale[3];
    /* Elements of x, w and y (dY) made +Inf, -Inf, NaN in turn. */
    int poison[3];
    /* Those elements at the ends of the rows (index 0 or the last of the
     * first spatial dim, often of the others too), where the direct
     * kernels' discarded columns read. */
    int poison_edges;
    /* Directions to run (bit d: forward, backward data, filter); 0: all. */
    int dirs;
} conv_case;

static void describe(const dla_device *dev, const char *kernel, const conv_case *c)
{
    int n = snprintf(
        what, sizeof what, "%s %s %s nsp=%d B=%lld C=%lld F=%lld G=%lld bias=%d strided=%d",
        dla_device_name(dev), kernel, c->dtype == DLA_F64 ? "double" : "single", c->nsp,
        (long long)c->B, (long long)c->C, (long long)c->F, (long long)c->G, c->bias, c->strided);
    for (int i = 0; i < c->nsp && n > 0 && (size_t)n < sizeof what; i++)
        n += snprintf(what + n, sizeof what - (size_t)n,
                      " | in %lld out %lld fs %lld st %lld dl %lld pb %lld", (long long)c->in[i],
                      (long long)c->out[i], (long long)c->fs[i], (long long)c->st[i],
                      (long long)c->dl[i], (long long)c->pb[i]);
    const char *env = getenv("DLACCEL_CPU_CONV");
    if (env && n > 0 && (size_t)n < sizeof what)
        snprintf(what + n, sizeof what - (size_t)n, " [DLACCEL_CPU_CONV=%s]", env);
}

/* The index tuple of x/y (spatial..., channel, batch) and w (taps...,
 * c, f, g) in the views' dim order. */
static void sp_idx(int nsp, const int64_t *s, int64_t ch, int64_t b, int64_t *idx)
{
    for (int i = 0; i < nsp; i++)
        idx[i] = s[i];
    idx[nsp] = ch, idx[nsp + 1] = b;
}

/* conv_forward_fused or conv_backward_data_fused (ABI 1.9: bwd) on the
 * case whose pass result R the device has just written (conv, the whole
 * buffer by of a's y forward, x backward): with the epilogue relu(R .* s
 * + r) (s per channel, r laid out as R: a residual, a relu's mask),
 * written over R itself or (every other call) into a buffer of its own
 * laid out as R, the result must be that arithmetic on conv, rounded as
 * the elementwise kernels round it, on every element of the view, and the
 * rest of the buffer as it was: the kernel's promise is the bits of the
 * pass and then the program. Values come from a counter, not the case
 * stream, so the other tests draw what they drew before. */
static void check_epilogue(dla_device *dev, const dla_conv_args *a, int bwd, const dbuf *by,
                           const void *conv)
{
    const dla_plugin *tb = dla_device_table(dev);
    void *ctx = dla_device_context(dev);
    const dla_dtype t = a->dtype;
    const dla_kernel kernel =
        bwd ? DLA_KERNEL_CONV_BACKWARD_DATA_FUSED : DLA_KERNEL_CONV_FORWARD_FUSED;
    dla_status (*fn)(void *, const dla_conv_fused_args *) =
        bwd ? tb->conv_backward_data_fused : tb->conv_forward_fused;
    const dla_view *res = bwd ? &a->x : &a->y;
    if (!fn || res->ndims != a->nspatial + 2 || (tb->supports && !tb->supports(ctx, kernel, t)))
        return;
    static int calls;
    const int in_place = calls++ % 2 == 0;
    const int n = a->nspatial;
    const int64_t F = bwd ? a->in_channels : a->out_channels, ny = by->n;
    /* s: F values; r and a separate y: buffers of y's size, its layout. */
    unsigned char *sv = malloc((size_t)F * dsize(t)), *rv = malloc((size_t)ny * dsize(t));
    unsigned char *zv = malloc((size_t)ny * dsize(t));
    assert_true(sv && rv && zv);
    for (int64_t f = 0; f < F; f++)
        put(t, sv, f, (double)((f * 7 + calls) % 11) / 4.0 - 1.25);
    for (int64_t i = 0; i < ny; i++) {
        put(t, rv, i, (double)((i * 13 + calls) % 17) / 8.0 - 1.0);
        put(t, zv, i, 77.0 + (double)(i % 5));
    }
    dla_mem ms, mr, mz;
    assert_int_equal(tb->mem_alloc(ctx, (size_t)F * dsize(t), &ms), DLA_OK);
    assert_int_equal(tb->mem_alloc(ctx, (size_t)ny * dsize(t), &mr), DLA_OK);
    assert_int_equal(tb->mem_alloc(ctx, (size_t)ny * dsize(t), &mz), DLA_OK);
    assert_int_equal(tb->copy_to_device(ctx, ms, 0, sv, (size_t)F * dsize(t)), DLA_OK);
    assert_int_equal(tb->copy_to_device(ctx, mr, 0, rv, (size_t)ny * dsize(t)), DLA_OK);
    assert_int_equal(tb->copy_to_device(ctx, mz, 0, zv, (size_t)ny * dsize(t)), DLA_OK);
    dla_conv_fused_args f = {.struct_size = sizeof f, .conv = *a, .conv_input = 0};
    dla_fused_args *e = &f.epilogue;
    e->struct_size = sizeof *e;
    e->dtype = t;
    e->ninputs = 3;
    e->inputs[0] = *res;
    e->inputs[1] = *res;
    e->inputs[1].mem = ms;
    e->inputs[1].offset = 0;
    for (int d = 0; d < n + 2; d++)
        e->inputs[1].strides[d] = d == n ? 1 : 0;
    e->inputs[2] = *res;
    e->inputs[2].mem = mr;
    e->insns[0] = (dla_fused_insn){DLA_FUSED_BINARY, DLA_BINARY_MUL, {-1, -2, 0}, 0, 0};
    e->insns[1] = (dla_fused_insn){DLA_FUSED_BINARY, DLA_BINARY_ADD, {0, -3, 0}, 0, 0};
    e->insns[2] = (dla_fused_insn){DLA_FUSED_UNARY, DLA_UNARY_RELU, {1, 0, 0}, 0, 0};
    e->ninsns = 3;
    e->y = *res;
    if (!in_place)
        e->y.mem = mz;
    const char *name = bwd ? "conv_backward_data_fused" : "conv_forward_fused";
    const dla_status st = fn(ctx, &f);
    if (st != DLA_OK)
        fail_msg("%s: %s (%s): status %d: %s", what, name, in_place ? "in place" : "its own y",
                 (int)st, dla_last_error());
    dbuf out = *by;
    out.mem = in_place ? by->mem : mz;
    void *got = dbuf_download(&out);
    /* In the view: the arithmetic on conv, each step rounded to the dtype;
     * outside it: conv's buffer (in place) or the separate buffer's start. */
    unsigned char *want = malloc((size_t)ny * dsize(t));
    assert_non_null(want);
    memcpy(want, in_place ? conv : (const void *)zv, (size_t)ny * dsize(t));
    int64_t vn = 1;
    for (int d = 0; d < n + 2; d++)
        vn *= res->dims[d];
    for (int64_t l = 0; l < vn; l++) {
        int64_t r = l, id[DLA_MAX_DIMS];
        for (int d = 0; d < n + 2; d++)
            id[d] = r % res->dims[d], r /= res->dims[d];
        const int64_t i = at(res, id), ch = id[n];
        if (t == DLA_F64) {
            const double v = ((const double *)conv)[i] * ((const double *)sv)[ch] +
                             ((const double *)rv)[i];
            ((double *)want)[i] = v > 0 ? v : 0;
        } else {
            const float p = ((const float *)conv)[i] * ((const float *)sv)[ch];
            const float v = p + ((const float *)rv)[i];
            ((float *)want)[i] = v > 0 ? v : 0;
        }
    }
    for (int64_t i = 0; i < ny; i++)
        if (memcmp((const char *)got + i * (int64_t)dsize(t), want + i * (int64_t)dsize(t),
                   dsize(t)))
            fail_msg("%s: %s (%s): element %lld is %.9g, the pass and then the program give "
                     "%.9g",
                     what, name, in_place ? "in place" : "its own y", (long long)i, get(t, got, i),
                     get(t, want, i));
    free(got), free(want), free(sv), free(rv), free(zv);
    tb->mem_free(ctx, ms), tb->mem_free(ctx, mr), tb->mem_free(ctx, mz);
}

/* n elements of the view v of b at random places made +Inf, -Inf, NaN in
 * turn, on the host and the device. */
static void poison_view(dbuf *b, const dla_view *v, int n, int edges_of)
{
    static const double vals[3] = {INFINITY, -INFINITY, NAN};
    for (int k = 0; k < n; k++) {
        int64_t id[DLA_MAX_DIMS];
        for (int d = 0; d < v->ndims; d++)
            id[d] = d < edges_of && (d == 0 || chance(50)) ? (chance(50) ? 0 : v->dims[d] - 1)
                                                           : rnd_int(0, v->dims[d] - 1);
        put(b->dtype, b->host, at(v, id), vals[k % 3]);
    }
    if (n > 0 &&
        dla_device_table(b->dev)->copy_to_device(dla_device_context(b->dev), b->mem, 0, b->host,
                                                 (size_t)b->n * dsize(b->dtype)) != DLA_OK)
        fail_msg("%s: copy_to_device: %s", dla_device_name(b->dev), dla_last_error());
}

/* Runs one case of every direction on dev and compares with the loops. */
static void run_case(dla_device *dev, const conv_case *c)
{
    const dla_dtype t = c->dtype;
    const int n = c->nsp;
    const int64_t Cg = c->C / c->G, Fg = c->F / c->G;
    int64_t xd[5], wd[6], yd[5];
    for (int i = 0; i < n; i++)
        xd[i] = c->in[i], wd[i] = c->fs[i], yd[i] = c->out[i];
    xd[n] = c->C, xd[n + 1] = c->B;
    wd[n] = Cg, wd[n + 1] = Fg, wd[n + 2] = c->G;
    yd[n] = c->F, yd[n + 1] = c->B;

    dla_conv_args a = {.struct_size = sizeof a, .dtype = t, .nspatial = n, .batch = c->B,
                       .in_channels = c->C, .out_channels = c->F, .groups = c->G};
    for (int i = 0; i < n; i++) {
        a.in_size[i] = c->in[i], a.out_size[i] = c->out[i], a.filter_size[i] = c->fs[i];
        a.stride[i] = c->st[i], a.dilation[i] = c->dl[i], a.pad_begin[i] = c->pb[i];
    }
    dbuf bx, bw, by, bb;
    value_scale = c->scale[0] ? c->scale[0] : 1.0;
    dbuf_init(&bx, dev, t, make_view(&a.x, t, n + 2, xd, c->strided));
    value_scale = c->scale[1] ? c->scale[1] : 1.0;
    dbuf_init(&bw, dev, t, make_view(&a.w, t, n + 3, wd, c->strided));
    value_scale = c->scale[2] ? c->scale[2] : 1.0;
    dbuf_init(&by, dev, t, make_view(&a.y, t, n + 2, yd, c->strided));
    value_scale = 1.0;
    const int edges_of = c->poison_edges ? n : 0;
    poison_view(&bx, &a.x, c->poison[0], edges_of);
    poison_view(&bw, &a.w, c->poison[1], 0);
    poison_view(&by, &a.y, c->poison[2], edges_of);
    const int64_t bd[2] = {1, c->F};
    dbuf_init(&bb, dev, t, make_view(&a.bias, t, 2, bd, c->strided));
    a.x.mem = bx.mem, a.w.mem = bw.mem, a.y.mem = by.mem, a.bias.mem = c->bias ? bb.mem : NULL;

    /* References: y (forward, from x, w, bias), dx (from y as dY, w),
     * dw (from x, y as dY); mag* bound the rounding of each element. */
    double *ry = calloc((size_t)by.n, sizeof(double)), *my = calloc((size_t)by.n, sizeof(double));
    double *rx = calloc((size_t)bx.n, sizeof(double)), *mx = calloc((size_t)bx.n, sizeof(double));
    double *rw = calloc((size_t)bw.n, sizeof(double)), *mw = calloc((size_t)bw.n, sizeof(double));
    assert_true(ry && my && rx && mx && rw && mw);
    int64_t terms_y = 1, terms_x = 1, terms_w = 1;
    int64_t o[3] = {0, 0, 0}, k[3] = {0, 0, 0}, ip[3], idx[6];
    const int64_t opx = (n > 0 ? c->out[0] : 1) * (n > 1 ? c->out[1] : 1) * (n > 2 ? c->out[2] : 1);
    const int64_t ntaps = (n > 0 ? c->fs[0] : 1) * (n > 1 ? c->fs[1] : 1) * (n > 2 ? c->fs[2] : 1);
    terms_y = Cg * ntaps + 1, terms_x = Fg * ntaps, terms_w = c->B * opx;
    for (int64_t b = 0; b < c->B; b++)
        for (int64_t f = 0; f < c->F; f++) {
            const int64_t g = f / Fg, fl = f % Fg;
            for (int64_t op = 0; op < opx; op++) {
                int64_t r = op;
                for (int i = 0; i < n; i++)
                    o[i] = r % c->out[i], r /= c->out[i];
                sp_idx(n, o, f, b, idx);
                const int64_t yo = at(&a.y, idx);
                const double dy = get(t, by.host, yo);
                if (c->bias) {
                    const int64_t bi[2] = {0, f};
                    const double bv = get(t, bb.host, at(&a.bias, bi));
                    ry[yo] += bv, my[yo] += fabs(bv);
                }
                for (int64_t cl = 0; cl < Cg; cl++)
                    for (int64_t tp = 0; tp < ntaps; tp++) {
                        int64_t rr = tp, inside = 1;
                        for (int i = 0; i < n; i++) {
                            k[i] = rr % c->fs[i], rr /= c->fs[i];
                            ip[i] = o[i] * c->st[i] - c->pb[i] + k[i] * c->dl[i];
                            inside &= ip[i] >= 0 && ip[i] < c->in[i];
                        }
                        if (!inside)
                            continue;
                        int64_t widx[6];
                        for (int i = 0; i < n; i++)
                            widx[i] = k[i];
                        widx[n] = cl, widx[n + 1] = fl, widx[n + 2] = g;
                        const int64_t wo = at(&a.w, widx);
                        sp_idx(n, ip, g * Cg + cl, b, idx);
                        const int64_t xo = at(&a.x, idx);
                        const double wv = get(t, bw.host, wo), xv = get(t, bx.host, xo);
                        ry[yo] += wv * xv, my[yo] += fabs(wv * xv);
                        rx[xo] += wv * dy, mx[xo] += fabs(wv * dy);
                        rw[wo] += xv * dy, mw[wo] += fabs(xv * dy);
                    }
            }
        }

    static const char *const names[] = {"conv_forward", "conv_backward_data",
                                        "conv_backward_filter"};
    dla_status (*const fns[3])(void *, const dla_conv_args *) = {
        dla_device_table(dev)->conv_forward, dla_device_table(dev)->conv_backward_data,
        dla_device_table(dev)->conv_backward_filter};
    static const dla_kernel kernels[3] = {DLA_KERNEL_CONV_FORWARD, DLA_KERNEL_CONV_BACKWARD_DATA,
                                          DLA_KERNEL_CONV_BACKWARD_FILTER};
    dbuf *outs[3] = {&by, &bx, &bw};
    double *refs[3] = {ry, rx, rw}, *mags[3] = {my, mx, mw};
    const int64_t terms[3] = {terms_y, terms_x, terms_w};
    const dla_view *views[3] = {&a.y, &a.x, &a.w};
    for (int d = 0; d < 3; d++) {
        if (c->dirs && !(c->dirs >> d & 1))
            continue;
        if (!fns[d] || (dla_device_table(dev)->supports &&
                        !dla_device_table(dev)->supports(dla_device_context(dev), kernels[d], t)))
            continue;
        describe(dev, names[d], c);
        /* The written output starts as garbage: kernels must overwrite. */
        dbuf *ob = outs[d];
        unsigned char *saved = malloc((size_t)ob->n * dsize(t));
        assert_non_null(saved);
        memcpy(saved, ob->host, (size_t)ob->n * dsize(t));
        void *junk = malloc((size_t)ob->n * dsize(t));
        assert_non_null(junk);
        for (int64_t i = 0; i < ob->n; i++)
            put(t, junk, i, rnd_unif(-50, 50));
        assert_int_equal(dla_device_table(dev)->copy_to_device(dla_device_context(dev), ob->mem, 0,
                                                               junk, (size_t)ob->n * dsize(t)),
                         DLA_OK);
        dla_status s = fns[d](dla_device_context(dev), &a);
        if (s == DLA_ERR_UNSUPPORTED && c->strided) {
            /* The ABI lets a plugin decline strided views. */
            assert_int_equal(dla_device_table(dev)->copy_to_device(dla_device_context(dev), ob->mem,
                                                                   0, saved,
                                                                   (size_t)ob->n * dsize(t)),
                             DLA_OK);
            free(saved);
            free(junk);
            continue;
        }
        if (s != DLA_OK)
            fail_msg("%s: status %d: %s", what, (int)s, dla_last_error());
        void *got = dbuf_download(ob);
        /* Positions the view covers: the reference; the rest: the junk. */
        unsigned char *covered = calloc((size_t)ob->n, 1);
        assert_non_null(covered);
        int64_t vn = 1;
        for (int i = 0; i < views[d]->ndims; i++)
            vn *= views[d]->dims[i];
        for (int64_t l = 0; l < vn; l++) {
            int64_t r = l, id[DLA_MAX_DIMS];
            for (int i = 0; i < views[d]->ndims; i++)
                id[i] = r % views[d]->dims[i], r /= views[d]->dims[i];
            covered[at(views[d], id)] = 1;
        }
        const double eps = t == DLA_F64 ? 2.3e-16 : 1.2e-7;
        double big = 0;
        for (int64_t i = 0; normwise && i < ob->n; i++)
            if (covered[i] && mags[d][i] > big && isfinite(mags[d][i]))
                big = mags[d][i];
        for (int64_t i = 0; i < ob->n; i++) {
            const double g = get(t, got, i);
            const double want = covered[i] ? refs[d][i] : get(t, junk, i);
            const double tol =
                covered[i] ? 4.0 * (double)(terms[d] + 4) * eps * (mags[d][i] + big) + 1e-300 : 0;
            /* Inf and NaN inputs: the same Inf, or NaN, where the sums
             * meet them; elsewhere the finite sums. */
            if (isnan(want) ? !isnan(g) : isinf(want) ? g != want : !(fabs(g - want) <= tol))
                fail_msg("%s: element %lld is %.9g, expected %.9g (%s)", what, (long long)i, g,
                         want, covered[i] ? "in the view" : "outside the view: must not change");
        }
        uint64_t h = 1469598103934665603ull;
        for (size_t i = 0; i < (size_t)ob->n * dsize(t); i++)
            h = (h ^ ((const unsigned char *)got)[i]) * 1099511628211ull;
        out_bits[d] = h;
        if (d < 2)
            check_epilogue(dev, &a, d == 1, ob, got);
        free(covered);
        free(got);
        /* Restore the operand for the directions that read it. */
        assert_int_equal(dla_device_table(dev)->copy_to_device(dla_device_context(dev), ob->mem, 0,
                                                               saved, (size_t)ob->n * dsize(t)),
                         DLA_OK);
        free(saved);
        free(junk);
    }
    free(ry), free(my), free(rx), free(mx), free(rw), free(mw);
    dbuf_free(&bx), dbuf_free(&bw), dbuf_free(&by), dbuf_free(&bb);
}

/* A random case; out_size follows from a random pad_end (possibly
 * negative) and is kept >= 1 unless empty is asked for. */
static void random_case(conv_case *c, dla_dtype t, int stride1)
{
    memset(c, 0, sizeof *c);
    c->dtype = t;
    c->nsp = (int)rnd_int(1, 3);
    const int kind = (int)rnd_int(0, 9);
    c->G = kind < 5 ? 1 : kind < 8 ? rnd_int(2, 3) : 0;
    const int64_t Cg = c->G ? rnd_int(1, 4) : 1;
    const int64_t Fg = chance(20) ? rnd_int(7, 15) : rnd_int(1, 6);
    if (c->G == 0) /* channel-wise: one channel per group, a few filters each */
        c->G = rnd_int(2, 5);
    c->C = Cg * c->G, c->F = Fg * c->G;
    c->B = chance(5) ? 0 : rnd_int(1, 3);
    c->bias = chance(50);
    const int64_t maxin = c->nsp == 3 ? 7 : c->nsp == 2 ? 12 : 40;
    for (int i = 0; i < c->nsp; i++) {
        c->fs[i] = rnd_int(1, c->nsp == 3 ? 3 : 5);
        c->dl[i] = chance(70) ? 1 : rnd_int(2, 3);
        c->st[i] = stride1 || chance(60) ? 1 : rnd_int(2, 3);
        const int64_t span = c->dl[i] * (c->fs[i] - 1) + 1;
        c->in[i] = rnd_int(1, maxin);
        c->pb[i] = chance(15) ? -rnd_int(1, 2) : rnd_int(0, span);
        const int64_t pe = chance(15) ? -rnd_int(0, 2) : rnd_int(0, span);
        int64_t num = c->in[i] + c->pb[i] + pe - span;
        c->out[i] = num >= 0 ? num / c->st[i] + 1 : 0;
        if (c->out[i] == 0 && !chance(10))
            c->out[i] = rnd_int(1, 3);
    }
}

/* ----------------------------------------------------------------- setup */

static int group_setup(void **state)
{
    (void)state;
    /* The cpu plugin only: it is the oracle, checked here against naive
     * loops; every other plugin is checked against it by dlaccel
     * check-plugin (tests/conformance.sh). */
    n_devices = 0;
    for (int i = 0; i < dla_device_count() && n_devices < MAX_DEVICES; i++) {
        dla_device *d = dla_device_at(i);
        if (d && strcmp(dla_device_plugin(d), "cpu") == 0)
            devices[n_devices++] = d;
    }
    return 0;
}

/* The cpu plugin's conditions for Winograd (conv_winograd.c), but for
 * the thread count. */
static int winograd_may_apply(const conv_case *c)
{
    return c->dtype == DLA_F32 && c->nsp == 2 && c->fs[0] == 3 && c->fs[1] == 3 &&
           c->dl[0] == 1 && c->dl[1] == 1 && c->st[0] == 1 && c->st[1] == 1 &&
           c->C / (c->G ? c->G : 1) >= 8 && c->F / (c->G ? c->G : 1) >= 8;
}

/* Runs c on every device; on the cpu plugin also with the direct kernels
 * and with im2col forced. */
static void on_every_device(const conv_case *c)
{
    if (n_devices < 1)
        fail_msg("no device loaded: %s", dla_last_error());
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        if (!dla_device_table(dev)->conv_forward && !dla_device_table(dev)->conv_backward_data &&
            !dla_device_table(dev)->conv_backward_filter)
            continue;
        unsetenv("DLACCEL_CPU_CONV");
        normwise = strcmp(dla_device_plugin(dev), "cpu") == 0 && winograd_may_apply(c);
        run_case(dev, c);
        normwise = 0;
        if (strcmp(dla_device_plugin(dev), "cpu") == 0) {
            setenv("DLACCEL_CPU_CONV", "direct", 1);
            run_case(dev, c);
            setenv("DLACCEL_CPU_CONV", "im2col", 1);
            run_case(dev, c);
            unsetenv("DLACCEL_CPU_CONV");
        }
    }
}

/* ================================================================ tests */

static void the_cpu_plugin_has_all_three_conv_kernels_for_float_and_double(void **state)
{
    (void)state;
    dla_device *cpu = dla_device_get("cpu");
    assert_non_null(cpu);
    assert_non_null(dla_device_table(cpu)->conv_forward);
    assert_non_null(dla_device_table(cpu)->conv_backward_data);
    assert_non_null(dla_device_table(cpu)->conv_backward_filter);
    for (dla_dtype t = DLA_F32; t <= DLA_F64; t++) {
        assert_true(
            dla_device_table(cpu)->supports(dla_device_context(cpu), DLA_KERNEL_CONV_FORWARD, t));
        assert_true(dla_device_table(cpu)->supports(dla_device_context(cpu),
                                                    DLA_KERNEL_CONV_BACKWARD_DATA, t));
        assert_true(dla_device_table(cpu)->supports(dla_device_context(cpu),
                                                    DLA_KERNEL_CONV_BACKWARD_FILTER, t));
    }
    assert_false(
        dla_device_table(cpu)->supports(dla_device_context(cpu), DLA_KERNEL_CONV_FORWARD, DLA_I32));
}

static void random_convolutions_match_naive_loops_in_every_direction(void **state)
{
    (void)state;
    for (int i = 0; i < 160; i++) {
        conv_case c;
        random_case(&c, i % 2 ? DLA_F64 : DLA_F32, 0);
        c.strided = 0;
        on_every_device(&c);
    }
}

static void stride_one_cases_take_the_direct_path_and_match(void **state)
{
    (void)state;
    /* Float and double: strides 1 with dilation, padding and cropping,
     * groups and channel-wise, 1-3 spatial dims. */
    for (int i = 0; i < 240; i++) {
        conv_case c;
        random_case(&c, i % 2 ? DLA_F64 : DLA_F32, 1);
        c.strided = 0;
        on_every_device(&c);
    }
}

/* Nonzero where the cpu plugin has direct kernels of dtype t for this
 * CPU (plugins/cpu/conv.c): float with AVX-512F or with AVX2 and FMA,
 * double with AVX2 and FMA. */
static int cpu_has_direct_kernels(dla_dtype t)
{
#if defined(__x86_64__) && defined(__GNUC__)
    __builtin_cpu_init();
    const int avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return t == DLA_F64 ? avx2 : __builtin_cpu_supports("avx512f") || avx2;
#else
    (void)t;
    return 0;
#endif
}

/* Nonzero where dtype t's direct kernels are the AVX2 ones, which leave
 * the backward filter of 1x1 filters to im2col (plugins/cpu/conv.c). */
static int cpu_direct_is_avx2(dla_dtype t)
{
#if defined(__x86_64__) && defined(__GNUC__)
    return cpu_has_direct_kernels(t) && (t == DLA_F64 || !__builtin_cpu_supports("avx512f"));
#else
    (void)t;
    return 0;
#endif
}

/* out_bits of c run with DLACCEL_CPU_CONV set to env (NULL: unset), on
 * the data of rng state `replay`. */
static void bits_with(dla_device *cpu, const conv_case *c, const char *env, uint64_t replay,
                      uint64_t *bits)
{
    rng_state = replay;
    if (env)
        setenv("DLACCEL_CPU_CONV", env, 1);
    else
        unsetenv("DLACCEL_CPU_CONV");
    run_case(cpu, c);
    unsetenv("DLACCEL_CPU_CONV");
    memcpy(bits, out_bits, sizeof out_bits);
}

/* DLACCEL_CPU_CONV=direct against im2col, bit for bit, on the same data
 * of dtype t: the direct kernels add the terms in another order (backward
 * filter in per-lane partial sums), so their bits differ in most cases
 * where they ran; a CPU without them takes im2col both ways. Enough
 * channels and taps that every output has many terms. */
static void direct_kernels_run_where_the_cpu_has_them(dla_dtype t)
{
    dla_device *cpu = dla_device_get("cpu");
    assert_non_null(cpu);
    const int direct = cpu_has_direct_kernels(t);
    int differ[3] = {0, 0, 0};
    const int cases = 40;
    for (int i = 0; i < cases; i++) {
        conv_case c;
        random_case(&c, t, 1);
        c.G = 1, c.C = rnd_int(4, 9), c.F = rnd_int(4, 13), c.B = rnd_int(1, 9);
        for (int d = 0; d < c.nsp; d++) {
            c.fs[d] = rnd_int(2, 3), c.dl[d] = 1, c.pb[d] = rnd_int(0, 1);
            c.in[d] = rnd_int(4, c.nsp == 3 ? 7 : 12);
            c.out[d] = c.in[d] + 2 * c.pb[d] - c.fs[d] + 1;
        }
        uint64_t picked[3], im2col[3];
        const uint64_t replay = rng_state; /* the same data and junk twice */
        bits_with(cpu, &c, "direct", replay, picked);
        bits_with(cpu, &c, "im2col", replay, im2col);
        for (int d = 0; d < 3; d++)
            differ[d] += picked[d] != im2col[d];
    }
    if (!direct) {
        assert_int_equal(differ[0] + differ[1] + differ[2], 0);
        return;
    }
    /* Forward: OpenBLAS's dgemm, and its AVX-512 (SkylakeX) sgemm, add
     * im2col's K = (channel, tap) terms in the direct kernels' own order,
     * one FMA chain per output, so the bits differ only where its kernels
     * split the sum (double: 18 of 40 cases on an AMD EPYC; single with
     * the SkylakeX kernels: 11 of 40 on an Intel Xeon, against 20 and
     * more with the AVX2 ones). Any difference shows the direct forward
     * ran; backward data runs the same pass code, and differs in nearly
     * every case. */
    const int fwd_least = 1;
    if (differ[0] < fwd_least || differ[1] < cases / 2 || differ[2] < cases / 2)
        fail_msg("%s: DLACCEL_CPU_CONV=direct gave im2col's bits in forward (%d of %d cases "
                 "differ), backward data (%d) or backward filter (%d): the direct kernels "
                 "did not run",
                 t == DLA_F64 ? "double" : "single", differ[0], cases, differ[1], differ[2]);
}

/* A random depthwise case (one channel and one filter a group) with a
 * stride above 1 along some dim: plugins/cpu/conv_depthwise.c's calls. */
static void strided_depthwise_case(conv_case *c, dla_dtype t)
{
    random_case(c, t, 0);
    c->nsp = (int)rnd_int(1, 2);
    c->C = c->F = c->G = rnd_int(1, 6);
    c->B = chance(8) ? 0 : rnd_int(1, 4); /* no images: zero gradients */
    for (int i = 0; i < 3; i++) {
        if (i >= c->nsp) {
            c->in[i] = c->out[i] = c->fs[i] = c->st[i] = c->dl[i] = 1, c->pb[i] = 0;
            continue;
        }
        c->st[i] = i == 0 || chance(50) ? rnd_int(2, 3) : 1;
        c->fs[i] = rnd_int(1, 4);
        c->dl[i] = chance(70) ? 1 : 2;
        const int64_t span = c->dl[i] * (c->fs[i] - 1) + 1;
        c->in[i] = rnd_int(span > 2 ? span : 2, c->nsp == 2 ? 20 : 40);
        c->pb[i] = chance(15) ? -1 : rnd_int(0, span - 1);
        const int64_t pe = chance(15) ? -1 : rnd_int(0, span - 1);
        const int64_t num = c->in[i] + c->pb[i] + pe - span;
        c->out[i] = num >= 0 ? num / c->st[i] + 1 : 1;
        if (chance(4))
            c->out[i] = 0; /* no outputs along this dim */
    }
}

/* Strided depthwise calls, float and double, any padding (cropping too),
 * dilation, strided views: the naive loops' values on every device, and
 * on the cpu plugin other bits than im2col's in some cases (its own path
 * ran: it adds the bias first, then the taps with fused multiply-adds). */
static void strided_depthwise_cases_take_their_own_path_and_match(void **state)
{
    (void)state;
    for (int i = 0; i < 120; i++) {
        conv_case c;
        strided_depthwise_case(&c, i % 2 ? DLA_F64 : DLA_F32);
        c.strided = chance(30);
        on_every_device(&c);
    }
    dla_device *cpu = dla_device_get("cpu");
    assert_non_null(cpu);
    int differ[3] = {0, 0, 0};
    for (int i = 0; i < 30; i++) {
        conv_case c;
        strided_depthwise_case(&c, DLA_F32);
        c.B = 3, c.bias = 1;
        for (int d = 0; d < c.nsp; d++)
            c.fs[d] = 3, c.dl[d] = 1, c.pb[d] = 1, c.in[d] = 12 + 2 * d,
            c.out[d] = (c.in[d] + 2 - 3) / c.st[d] + 1;
        uint64_t own[3], im2col[3];
        const uint64_t replay = rng_state;
        bits_with(cpu, &c, NULL, replay, own);
        bits_with(cpu, &c, "im2col", replay, im2col);
        for (int d = 0; d < 3; d++)
            differ[d] += own[d] != im2col[d];
    }
    if (!differ[0] || !differ[1] || !differ[2])
        fail_msg("strided depthwise calls gave im2col's bits in every case of some direction "
                 "(forward %d, backward data %d, filter %d of 30 differ): their own path did "
                 "not run", differ[0], differ[1], differ[2]);
}

/* A strided depthwise call over three spatial dims whose third is one
 * element with padding before it and a stride past the padding: its one
 * output along that dim reads only padding, so y is the bias and the
 * gradients of x and w are zero. The depthwise path, which convolves
 * planes of two dims, gave the convolution of the plane there (dla_conv
 * of a 6x3x1 volume, padding [1 1] along dim 3, stride 3: values off by
 * up to 0.8); such calls are im2col's now. */
static void a_depthwise_third_dim_of_padding_alone_reads_zeros(void **state)
{
    (void)state;
    for (int i = 0; i < 24; i++) {
        conv_case c;
        strided_depthwise_case(&c, i % 2 ? DLA_F64 : DLA_F32);
        c.nsp = 3, c.B = rnd_int(1, 3), c.bias = 1;
        c.in[2] = c.fs[2] = c.out[2] = c.dl[2] = 1;
        c.st[2] = rnd_int(2, 3), c.pb[2] = rnd_int(1, c.st[2] - 1);
        for (int d = 0; d < 2; d++)
            if (c.out[d] == 0)
                c.out[d] = 1;
        on_every_device(&c);
    }
}

static void stride_one_cases_run_the_direct_kernels_where_the_cpu_has_them(void **state)
{
    (void)state;
    direct_kernels_run_where_the_cpu_has_them(DLA_F32);
    direct_kernels_run_where_the_cpu_has_them(DLA_F64);
}

/* conv.c's measured rule: on the AVX2 path (float without AVX-512, and
 * double) the backward filter of 1x1 filters is left to im2col;
 * DLACCEL_CPU_CONV=direct still runs it. */
static void one_by_one_backward_filter_rule(dla_dtype t)
{
    dla_device *cpu = dla_device_get("cpu");
    assert_non_null(cpu);
    conv_case c = {.dtype = t, .nsp = 2, .bias = 1, .B = 9, .C = 16, .F = 12, .G = 1,
                   .in = {14, 11, 1}, .out = {14, 11, 1}, .fs = {1, 1, 1}, .st = {1, 1, 1},
                   .dl = {1, 1, 1}, .pb = {0, 0, 0}};
    on_every_device(&c);
    uint64_t picked[3], direct[3], im2col[3];
    const uint64_t replay = rng_state;
    bits_with(cpu, &c, NULL, replay, picked);
    bits_with(cpu, &c, "direct", replay, direct);
    bits_with(cpu, &c, "im2col", replay, im2col);
    if (!cpu_has_direct_kernels(t)) {
        assert_true(picked[2] == im2col[2] && direct[2] == im2col[2]);
        return;
    }
    assert_true(direct[2] != im2col[2]); /* the direct kernels ran when asked */
    if (cpu_direct_is_avx2(t)) {
        if (picked[2] != im2col[2])
            fail_msg("AVX2, %s: a 1x1 backward filter did not take im2col by default",
                     t == DLA_F64 ? "double" : "single");
        assert_true(picked[0] == direct[0]); /* forward: still direct */
        return;
    }
    assert_true(picked[2] == direct[2]); /* AVX-512: direct throughout */
}

static void one_by_one_backward_filter_takes_im2col_with_avx2_unless_direct_is_asked(void **state)
{
    (void)state;
    one_by_one_backward_filter_rule(DLA_F32);
    one_by_one_backward_filter_rule(DLA_F64);
}

static void strided_views_with_gaps_and_offsets_are_read_and_written_in_place(void **state)
{
    (void)state;
    for (int i = 0; i < 60; i++) {
        conv_case c;
        random_case(&c, i % 3 == 0 ? DLA_F64 : DLA_F32, i % 2);
        c.strided = 1;
        on_every_device(&c);
    }
}

/* A 2-D 3x3 float case with dilation 1 and 8-14 channels in and out per
 * group: what the cpu plugin's Winograd path takes when the batch has at
 * least 8 images (conv_winograd.c's MIN_IMAGES; fewer go the direct way).
 * Sizes from 1 (one odd tile) to 30 (rows of tiles longer than a vector),
 * padding from cropping to past the filter, so backward data's own
 * padding (2 - pad) covers the same range. */
static void winograd_case(conv_case *c, int64_t bmin, int64_t bmax)
{
    memset(c, 0, sizeof *c);
    c->dtype = DLA_F32;
    c->nsp = 2;
    c->G = chance(25) ? 2 : 1;
    c->C = rnd_int(8, 12) * c->G, c->F = rnd_int(8, 14) * c->G;
    c->B = rnd_int(bmin, bmax);
    c->bias = chance(50);
    c->strided = chance(40);
    for (int i = 0; i < 2; i++) {
        c->fs[i] = 3, c->st[i] = 1, c->dl[i] = 1;
        c->in[i] = chance(20) ? rnd_int(1, 3) : rnd_int(4, 30);
        c->pb[i] = rnd_int(-1, 3);
        const int64_t pe = rnd_int(-1, 3), num = c->in[i] + c->pb[i] + pe - 3;
        c->out[i] = num >= 0 ? num + 1 : rnd_int(1, 2);
    }
    c->in[2] = c->out[2] = c->fs[2] = c->st[2] = c->dl[2] = 1;
}

/* Random stride-1 cases of every filter size, dilation, padding and
 * group count at batches of 30-70: the direct backward filter sums such
 * batches in parts, its small images stacked in runs of uneven length
 * (the random cases above have 1-3 images), in float and double. Against
 * the reference loops, the cpu plugin every way. */
static void stride_one_cases_of_large_batches_match(void **state)
{
    (void)state;
    for (int i = 0; i < 16; i++) {
        conv_case c;
        random_case(&c, i % 2 ? DLA_F64 : DLA_F32, 1);
        c.B = rnd_int(30, 70);
        on_every_device(&c);
    }
}

/* Batches of 17-40 small images, whose backward filter stacks several
 * images into one run, in runs and parts of the batch of uneven sizes:
 * the direct kernels' stacked planes (conv_direct_body.h, bwf_stacking;
 * a run shorter than the one before used to add the stale image after
 * it) and Winograd's stacked tiles (conv_winograd.c). Against the
 * reference loops on every device, and on the cpu plugin every way. */
static void three_by_three_filter_gradients_of_stacked_small_images_match(void **state)
{
    (void)state;
    for (int i = 0; i < 8; i++) {
        conv_case c;
        winograd_case(&c, 17, 40);
        for (int d = 0; d < 2; d++) {
            c.in[d] = rnd_int(3, 10);
            c.pb[d] = rnd_int(0, 1);
            c.out[d] = c.in[d] + 2 * c.pb[d] - 2;
        }
        on_every_device(&c);
    }
}

/* 3x3 layers whose outputs have 256 tiles of 2x2 or more (32x32 and
 * up), which the cpu plugin's Winograd forward and backward data take in
 * chunks of an image's tiles rather than in runs of whole images: tile
 * rows of whole vectors (64 wide; 32 in same_padded_rows_... below), rows
 * walked across the plane (odd widths), chunks that end inside a vector,
 * groups, views. */
static void three_by_three_cases_of_large_images_match(void **state)
{
    (void)state;
    static const int64_t outs[][2] = {{33, 40}, {64, 17}, {45, 50}, {20, 70}};
    for (int i = 0; i < 4; i++) {
        conv_case c;
        winograd_case(&c, 8, 9);
        for (int d = 0; d < 2; d++) {
            c.pb[d] = rnd_int(0, 2);
            c.out[d] = outs[i][d];
            c.in[d] = c.out[d] + 2 - 2 * c.pb[d] + rnd_int(0, 1);
        }
        on_every_device(&c);
    }
}

/* Stride-2 layers with rows of 17 to 40 outputs: im2col copies such rows
 * with a vector loop where the CPU has AVX-512 (whole vectors of 16 and a
 * tail), reading up to the row's last needed element and no further. 3x3
 * and 1x1 filters, padding on either side, dense and strided views, float
 * and double (one element at a time). */
static void stride_two_rows_of_many_outputs_match(void **state)
{
    (void)state;
    for (int i = 0; i < 8; i++) {
        const int64_t f = i % 4 < 2 ? 3 : 1, pad = f == 3 ? i % 2 : 0;
        const int64_t in0 = rnd_int(33, 80), in1 = rnd_int(2, 5);
        conv_case c = {.dtype = i < 6 ? DLA_F32 : DLA_F64, .nsp = 2, .bias = i % 2, .B = 2,
                       .C = rnd_int(1, 3), .F = rnd_int(1, 4), .G = 1, .strided = i % 3 == 0,
                       .in = {in0, in1, 1}, .fs = {f, f, 1}, .st = {2, 2, 1}, .dl = {1, 1, 1},
                       .pb = {pad, pad, 0}};
        for (int d = 0; d < 2; d++)
            c.out[d] = (c.in[d] + 2 * pad - f) / 2 + 1;
        c.out[2] = 1;
        on_every_device(&c);
    }
}

/* A random strided case with dilation 1: a stride of 2 or 3 along some
 * dim, filters of 1-5 (fewer taps than the stride too), padding and
 * cropping, groups, 1-3 spatial dims; the cpu plugin's forward takes its
 * phase planes (conv_direct_body.h, pack_phased) where it has AVX-512. */
static void strided_forward_case(conv_case *c, dla_dtype t)
{
    random_case(c, t, 0);
    c->B = rnd_int(1, 4);
    for (int i = 0; i < 3; i++) {
        if (i >= c->nsp) {
            c->in[i] = c->out[i] = c->fs[i] = c->st[i] = c->dl[i] = 1, c->pb[i] = 0;
            continue;
        }
        c->st[i] = i == 0 || chance(60) ? rnd_int(2, 3) : 1;
        c->fs[i] = rnd_int(1, c->nsp == 3 ? 3 : 5);
        c->dl[i] = 1;
        c->in[i] = rnd_int(c->fs[i], c->nsp == 3 ? 8 : c->nsp == 2 ? 20 : 60);
        c->pb[i] = chance(15) ? -rnd_int(1, 2) : rnd_int(0, c->fs[i]);
        const int64_t pe = chance(15) ? -rnd_int(0, 2) : rnd_int(0, c->fs[i]);
        const int64_t num = c->in[i] + c->pb[i] + pe - c->fs[i];
        c->out[i] = num >= 0 ? num / c->st[i] + 1 : rnd_int(1, 2);
    }
}

/* Strided forward passes, float and double: the naive loops' values on
 * every device (the cpu plugin all three ways, epilogues included), and
 * ResNet-20's downsampling shapes (3x3 and 1x1, stride 2, 16 -> 32
 * channels) with one image (its strips over the team) and several. With
 * AVX-512 the cpu plugin's pick gives other bits than im2col's in some
 * float cases: its phase planes ran. */
static void strided_forward_cases_take_phase_planes_and_match(void **state)
{
    (void)state;
    for (int i = 0; i < 160; i++) {
        conv_case c;
        strided_forward_case(&c, i % 2 ? DLA_F64 : DLA_F32);
        c.strided = chance(30);
        c.dirs = 1;
        on_every_device(&c);
    }
    for (int i = 0; i < 4; i++) {
        const int64_t f = i % 2 ? 1 : 3, pad = f == 3;
        conv_case c = {.dtype = DLA_F32, .nsp = 2, .bias = 1, .B = i < 2 ? 1 : 3, .C = 16,
                       .F = 32, .G = 1, .strided = i == 3, .in = {16, 16, 1}, .fs = {f, f, 1},
                       .st = {2, 2, 1}, .dl = {1, 1, 1}, .pb = {pad, pad, 0}, .dirs = 1};
        for (int d = 0; d < 2; d++)
            c.out[d] = (c.in[d] + 2 * pad - f) / 2 + 1;
        c.out[2] = 1;
        on_every_device(&c);
    }
    dla_device *cpu = dla_device_get("cpu");
    assert_non_null(cpu);
    int differ = 0;
    const int cases = 30;
    for (int i = 0; i < cases; i++) {
        conv_case c;
        strided_forward_case(&c, DLA_F32);
        c.G = 1, c.C = rnd_int(4, 9), c.F = rnd_int(4, 13), c.strided = 0, c.dirs = 1;
        uint64_t picked[3], im2col[3];
        const uint64_t replay = rng_state;
        bits_with(cpu, &c, NULL, replay, picked);
        bits_with(cpu, &c, "im2col", replay, im2col);
        differ += picked[0] != im2col[0];
    }
    const int phases = strstr(dla_device_properties(cpu), "simd=avx512f") != NULL;
    if (phases ? differ == 0 : differ != 0)
        fail_msg("strided forward passes: %d of %d cases differ from im2col's bits; expected %s",
                 differ, cases, phases ? "some (the phase planes ran)" : "none (no AVX-512)");
}

/* out_bits of c with DLACCEL_CPU_CONV_PHASES set to env (NULL: unset),
 * on the data of rng state `replay`. */
static void bits_with_phases(dla_device *cpu, const conv_case *c, const char *env,
                             uint64_t replay, uint64_t *bits)
{
    rng_state = replay;
    if (env)
        setenv("DLACCEL_CPU_CONV_PHASES", env, 1);
    else
        unsetenv("DLACCEL_CPU_CONV_PHASES");
    run_case(cpu, c);
    unsetenv("DLACCEL_CPU_CONV_PHASES");
    memcpy(bits, out_bits, sizeof out_bits);
}

/* Strided backward passes (data and filter), float and double: the naive
 * loops' values on every device (the cpu plugin its own way, with
 * DLACCEL_CPU_CONV=direct and =im2col, and with DLACCEL_CPU_CONV_PHASES=
 * off), strides 2 and 3 with odd sizes, filters with fewer taps than the
 * stride, padding and cropping, groups, 1-3 spatial dims, strided views,
 * the backward-data epilogue; ResNet-20's downsampling shapes at even and
 * odd sizes, one image and several (and with Inf and NaN in dY), and a
 * batch of 40 (the direct backward filter's parts of the batch). With AVX-512 the cpu plugin's
 * pick gives other bits than with DLACCEL_CPU_CONV_PHASES=off in some
 * float cases of each direction: its phases ran (conv_phases.c); in
 * double, and with =off, it gives im2col's bits. */
static void strided_backward_cases_take_phases_and_match(void **state)
{
    (void)state;
    for (int i = 0; i < 200; i++) {
        conv_case c;
        strided_forward_case(&c, i % 2 ? DLA_F64 : DLA_F32);
        c.strided = chance(30);
        c.dirs = 6;
        on_every_device(&c);
        if (i % 4 == 0) {
            setenv("DLACCEL_CPU_CONV_PHASES", "off", 1);
            run_case(devices[0], &c);
            unsetenv("DLACCEL_CPU_CONV_PHASES");
        }
    }
    for (int i = 0; i < 12; i++) {
        const int64_t f = i % 2 ? 1 : 3, pad = f == 3, odd = i / 2 % 2;
        conv_case c = {.dtype = i / 4 % 2 ? DLA_F64 : DLA_F32, .nsp = 2, .bias = 0,
                       .B = i < 4 ? 1 : i < 8 ? 3 : 40, .C = 16, .F = 32, .G = 1,
                       .strided = i == 5, .in = {16 - odd, 16 + odd, 1}, .fs = {f, f, 1},
                       .st = {2, 2, 1}, .dl = {1, 1, 1}, .pb = {pad, pad, 0}, .dirs = 6};
        if (c.B == 40)
            c.C = 8, c.F = 8;
        for (int d = 0; d < 2; d++)
            c.out[d] = (c.in[d] + 2 * pad - f) / 2 + 1;
        c.out[2] = 1;
        on_every_device(&c);
        if (i < 4) {
            /* dY with +Inf, -Inf or NaN: Inf or NaN in the elements of dX
             * whose sums meet them, finite values elsewhere. */
            c.poison[2] = i % 2 ? 1 : 3, c.dirs = 2;
            on_every_device(&c);
        }
    }
    dla_device *cpu = dla_device_get("cpu");
    assert_non_null(cpu);
    /* 5x5 filters with stride 2: phase 0's taps are 3x3, and with 8+
     * images and channels that phase goes to Winograd (both passes), held
     * to its norm-wise tolerance as in the 3x3 tests; then the direct
     * kernels alone and im2col. */
    for (int i = 0; i < 2; i++) {
        conv_case c = {.dtype = DLA_F32, .nsp = 2, .bias = 0, .B = 8, .C = 8, .F = 9, .G = 1,
                       .in = {13 + i, 14, 1}, .fs = {5, 5, 1}, .st = {2, 2, 1},
                       .dl = {1, 1, 1}, .pb = {2, 1 + i, 0}, .dirs = 6};
        for (int d = 0; d < 2; d++)
            c.out[d] = (c.in[d] + 2 * 2 - 5) / 2 + 1;
        c.out[2] = 1;
        normwise = 1;
        run_case(cpu, &c);
        normwise = 0;
        setenv("DLACCEL_CPU_CONV", "direct", 1);
        run_case(cpu, &c);
        setenv("DLACCEL_CPU_CONV", "im2col", 1);
        run_case(cpu, &c);
        unsetenv("DLACCEL_CPU_CONV");
    }
    for (dla_dtype t = DLA_F32; t <= DLA_F64; t++) {
        int differ[3] = {0, 0, 0}, off_differ = 0;
        const int cases = 30;
        for (int i = 0; i < cases; i++) {
            conv_case c;
            strided_forward_case(&c, t);
            c.G = 1, c.C = rnd_int(4, 9), c.F = rnd_int(4, 13), c.strided = 0, c.dirs = 6;
            uint64_t picked[3], off[3], im2col[3];
            const uint64_t replay = rng_state;
            bits_with_phases(cpu, &c, NULL, replay, picked);
            bits_with_phases(cpu, &c, "off", replay, off);
            bits_with(cpu, &c, "im2col", replay, im2col);
            for (int d = 1; d < 3; d++) {
                differ[d] += picked[d] != off[d];
                off_differ += off[d] != im2col[d];
            }
        }
        const int phases =
            t == DLA_F32 && strstr(dla_device_properties(cpu), "simd=avx512f") != NULL;
        if (off_differ != 0 || (phases ? differ[1] == 0 || differ[2] == 0
                                       : differ[1] + differ[2] != 0))
            fail_msg("%s strided backward passes: %d (data) and %d (filter) of %d cases differ "
                     "from DLACCEL_CPU_CONV_PHASES=off's bits, expected %s; =off differs from "
                     "im2col in %d",
                     t == DLA_F64 ? "double" : "single", differ[1], differ[2], cases,
                     phases ? "some of each (the phases ran)" : "none", off_differ);
    }
}

static void three_by_three_cases_match_and_take_another_path_than_direct(void **state)
{
    (void)state;
    dla_device *cpu = dla_device_get("cpu");
    assert_non_null(cpu);
    /* Winograd runs beside the direct AVX-512 kernels only: a CPU with AVX2
     * but not AVX-512 (or valgrind) takes the direct AVX2 kernels both
     * ways, one with neither im2col, with the same bits. The first cases
     * have batches of 8-10 images, the last ones of 2-7, which go the
     * direct way on every CPU (the choice follows the batch alone). */
    const int winograd = strstr(dla_device_properties(cpu), "simd=avx512f") != NULL;
    int differ[3] = {0, 0, 0}, small_differ = 0;
    const int cases = 40, small_cases = 12;
    for (int i = 0; i < cases + small_cases; i++) {
        conv_case c;
        if (i < cases)
            winograd_case(&c, 8, 10);
        else
            winograd_case(&c, 2, 7);
        on_every_device(&c);
        /* The cpu plugin's pick against its direct kernels, bit for bit:
         * all three directions go another way (Winograd). */
        uint64_t picked[3];
        const uint64_t replay = rng_state; /* the same data and junk twice */
        unsetenv("DLACCEL_CPU_CONV");
        normwise = 1;
        run_case(cpu, &c);
        normwise = 0;
        memcpy(picked, out_bits, sizeof picked);
        rng_state = replay;
        setenv("DLACCEL_CPU_CONV", "direct", 1);
        run_case(cpu, &c);
        unsetenv("DLACCEL_CPU_CONV");
        for (int d = 0; d < 3; d++) {
            if (i < cases)
                differ[d] += picked[d] != out_bits[d];
            else
                small_differ += picked[d] != out_bits[d];
        }
    }
    if (small_differ)
        fail_msg("%d results of %d convolutions of fewer than 8 images differ from the direct "
                 "kernels' bits: they should have gone the direct way",
                 small_differ, small_cases);
    if (!winograd) {
        assert_int_equal(differ[0] + differ[1] + differ[2], 0);
        return;
    }
    /* Rounding differs in almost every case; a few tiny ones may agree. */
    if (differ[0] < cases / 2 || differ[1] < cases / 2 || differ[2] < cases / 2)
        fail_msg("the cpu plugin's forward (%d of %d cases), backward data (%d) and backward "
                 "filter (%d) gave the direct kernels' bits: the Winograd path was not taken",
                 differ[0], cases, differ[1], differ[2]);
}

/* c on the cpu plugin with DLACCEL_CPU_WINOGRAD_GEMM set to env (NULL:
 * unset), on the data of rng state `replay`, held to the reference loops
 * (norm-wise where Winograd may run); its results' bits into bits. */
static void bits_with_winograd_gemm(dla_device *cpu, const conv_case *c, const char *env,
                                    uint64_t replay, uint64_t *bits)
{
    rng_state = replay;
    if (env)
        setenv("DLACCEL_CPU_WINOGRAD_GEMM", env, 1);
    else
        unsetenv("DLACCEL_CPU_WINOGRAD_GEMM");
    normwise = c->dtype == DLA_F32;
    run_case(cpu, c);
    normwise = 0;
    unsetenv("DLACCEL_CPU_WINOGRAD_GEMM");
    memcpy(bits, out_bits, sizeof out_bits);
}

/* The Winograd filter gradient's products by the plugin's own AVX-512
 * kernel (conv_winograd_nt.c) and, with DLACCEL_CPU_WINOGRAD_GEMM=
 * openblas, by OpenBLAS: both the reference loops' values, on random
 * 3x3 cases (8-14 channels: blocks of 4 and the edges one by one; runs
 * of tiles that end inside a vector), ResNet-20's three stride-1 shapes
 * at 8 images and odd sizes, and in double (which Winograd never takes:
 * the same bits either way). With AVX-512 the filter gradients' bits
 * differ in most float cases (the own kernel ran); the forward and
 * backward-data passes, which do not use it, keep theirs. */
static void winograd_filter_products_match_with_own_kernel_and_openblas(void **state)
{
    (void)state;
    dla_device *cpu = dla_device_get("cpu");
    assert_non_null(cpu);
    const int winograd = strstr(dla_device_properties(cpu), "simd=avx512f") != NULL;
    int filter_differ = 0, other_differ = 0, f64_differ = 0, f32_cases = 0;
    for (int i = 0; i < 18; i++) {
        conv_case c;
        winograd_case(&c, 8, 10);
        if (i >= 12) {
            /* 32x32x16, 16x16x32 and 8x8x64, then the same one smaller. */
            const int64_t side = 32 >> (i - 12) % 3, ch = 16 << (i - 12) % 3;
            const int64_t odd = i >= 15;
            c.G = 1, c.C = c.F = ch, c.B = 8, c.strided = 0;
            for (int d = 0; d < 2; d++)
                c.in[d] = c.out[d] = side - odd * (d + 1), c.pb[d] = 1;
        }
        if (i % 6 == 5)
            c.dtype = DLA_F64;
        uint64_t own[3], blas[3];
        const uint64_t replay = rng_state;
        bits_with_winograd_gemm(cpu, &c, NULL, replay, own);
        bits_with_winograd_gemm(cpu, &c, "openblas", replay, blas);
        if (c.dtype == DLA_F64) {
            f64_differ += own[0] != blas[0] || own[1] != blas[1] || own[2] != blas[2];
            continue;
        }
        f32_cases++;
        filter_differ += own[2] != blas[2];
        other_differ += own[0] != blas[0] || own[1] != blas[1];
    }
    if (f64_differ || other_differ)
        fail_msg("DLACCEL_CPU_WINOGRAD_GEMM changed %d double cases and %d forward or "
                 "backward-data results: it steers the float filter gradient only",
                 f64_differ, other_differ);
    if (winograd ? filter_differ < f32_cases / 2 : filter_differ != 0)
        fail_msg("%d of %d float filter gradients differ from OpenBLAS's products' bits; "
                 "expected %s",
                 filter_differ, f32_cases, winograd ? "most (the own kernel ran)" : "none");
}

/* 3x3 layers Winograd would take, with inputs near FLT_MAX: x (forward
 * and filter gradient) or dY (input and filter gradient) of magnitudes up
 * to 3e38 against weights and the other operand of 1e-6, so that every
 * direct sum stays finite (1e35 at most). Winograd's transforms add
 * inputs before they multiply (two neighbours of 3e38 make Inf, then Inf
 * - Inf NaN): the cpu plugin gave Inf and NaN there. Also the largest
 * magnitudes that still take Winograd (just under its bound of FLT_MAX /
 * 8 on x, against weights of 1e-30), which must not overflow either, and
 * weights of 1e37 (every image past the bound on x: direct sums). */
static void three_by_three_layers_with_inputs_near_flt_max_stay_finite(void **state)
{
    (void)state;
    for (int i = 0; i < 8; i++) {
        conv_case c;
        winograd_case(&c, 8, 9);
        c.G = 1, c.C = 8, c.F = 9, c.strided = i % 2;
        for (int d = 0; d < 2; d++) {
            c.in[d] = rnd_int(4, 9), c.pb[d] = 1;
            c.out[d] = c.in[d];
        }
        c.scale[0] = i < 2 ? 3e38 : i < 4 ? 1e-6 : i < 6 ? 4.2e37 : 1;
        c.scale[1] = i < 4 ? 1e-6 : i < 6 ? 1e-30 : 1e37;
        c.scale[2] = i < 2 ? 1e-6 : i < 4 ? 3e38 : i < 6 ? 4.2e37 : 1;
        /* x and dY both 4.2e37: their products overflow any dW sum. */
        c.dirs = i >= 4 && i < 6 ? 3 : 0;
        on_every_device(&c);
    }
}

/* The same layers with a few elements of x (forward) or dY (backward
 * data) +Inf, -Inf or NaN: the direct sums give Inf or NaN in the outputs
 * whose windows hold them and finite values elsewhere. Winograd's
 * transforms spread each over its whole 4x4 input tile (0 times Inf, Inf
 * - Inf): the cpu plugin gave NaN in outputs whose sums never meet them,
 * and NaN for an Inf. With the epilogue too (run_case). */
static void three_by_three_layers_with_inf_and_nan_inputs_match_the_direct_sums(void **state)
{
    (void)state;
    for (int i = 0; i < 8; i++) {
        conv_case c;
        winograd_case(&c, 8, 12);
        c.G = 1, c.strided = i % 2;
        for (int d = 0; d < 2; d++) {
            c.in[d] = rnd_int(4, 12), c.pb[d] = 1;
            c.out[d] = c.in[d];
        }
        c.dirs = i < 4 ? 1 : 2;
        c.poison[i < 4 ? 0 : 2] = i % 4 == 3 ? 1 : 3;
        on_every_device(&c);
    }
}

/* Inf and NaN at the ends of x's rows (and of dY's) in every direction,
 * stride 1 and 2, with and without padding and dilation: the outputs whose
 * sums meet them are Inf or NaN, the rest finite. The direct backward
 * filter sums every column of its wide rows, the discarded ones too, whose
 * dY is 0 and whose x reaches the next row's first elements: 0 times Inf
 * made NaN in taps whose true sums never meet that x (dW NaN where im2col
 * and the loops give finite values), also through the strided layers'
 * phases (the depthwise path sums the real outputs only). dY poisoned
 * without padding only: the loops leave out the
 * padded taps, where 0 times Inf is NaN in every kernel. */
static void inf_and_nan_at_the_edges_of_x_and_dy_match_in_every_direction(void **state)
{
    (void)state;
    for (int i = 0; i < 64; i++) {
        const int strided = i / 4 % 2;
        /* 33 images: the direct backward filter's parts of the batch. */
        conv_case c = {.dtype = i % 2 ? DLA_F64 : DLA_F32, .nsp = 1 + i / 2 % 2,
                       .B = i % 7 == 5 ? 33 : 1 + i % 3,
                       .C = rnd_int(2, 5), .F = rnd_int(2, 7), .G = 1, .strided = chance(30)};
        const int pad_x = i / 8 % 2, on_dy = i / 16 % 2, dil = !strided && i / 32;
        /* (i / 32: dilation 2 where the stride is 1) */
        for (int d = 0; d < 3; d++) {
            if (d >= c.nsp) {
                c.in[d] = c.out[d] = c.fs[d] = c.st[d] = c.dl[d] = 1, c.pb[d] = 0;
                continue;
            }
            c.fs[d] = rnd_int(2, 3), c.st[d] = strided ? 2 : 1, c.dl[d] = dil ? 2 : 1;
            c.in[d] = rnd_int(6, c.nsp == 1 ? 40 : 12);
            c.pb[d] = pad_x && !on_dy ? 1 : 0;
            c.out[d] = (c.in[d] + 2 * c.pb[d] - (c.fs[d] - 1) * c.dl[d] - 1) / c.st[d] + 1;
        }
        if (i % 8 >= 6) /* channel-wise: strided, the depthwise path's */
            c.G = c.F = c.C;
        c.poison_edges = 1;
        c.poison[on_dy ? 2 : 0] = 3 + i % 3;
        c.dirs = on_dy ? 6 : 5;
        on_every_device(&c);
    }
}

static void the_digit_cnn_layers_match_at_batches_of_3_and_9(void **state)
{
    (void)state;
    /* conv 5x5x20 without padding, then 3x3x20 with padding 1. Few images
     * and several per thread take different parallel schemes on the cpu
     * plugin (blocks of one image over the team, images over the team). */
    conv_case c1 = {.dtype = DLA_F32, .nsp = 2, .bias = 1, .B = 3, .C = 1, .F = 20, .G = 1,
                    .in = {28, 28, 1}, .out = {24, 24, 1}, .fs = {5, 5, 1}, .st = {1, 1, 1},
                    .dl = {1, 1, 1}, .pb = {0, 0, 0}};
    conv_case c2 = {.dtype = DLA_F32, .nsp = 2, .bias = 1, .B = 3, .C = 20, .F = 20, .G = 1,
                    .in = {24, 24, 1}, .out = {24, 24, 1}, .fs = {3, 3, 1}, .st = {1, 1, 1},
                    .dl = {1, 1, 1}, .pb = {1, 1, 0}};
    on_every_device(&c1);
    on_every_device(&c2);
    c2.B = 9;
    on_every_device(&c2);
}

static void same_padded_rows_of_whole_vectors_match(void **state)
{
    (void)state;
    /* 3x3 "same" layers whose rows are whole vectors of 8 or 16 floats,
     * which the cpu plugin's Winograd path splits straight from the
     * source and writes back without a row buffer: ResNet-20's three
     * stages (32x32x16, 16x16x32, 8x8x64) and a 40-wide row (two vectors
     * and a half), dense and as views with gaps. */
    static const int64_t shapes[][3] = {{32, 16, 16}, {16, 32, 32}, {8, 64, 64}, {40, 8, 12}};
    for (int s = 0; s < 4; s++)
        for (int strided = 0; strided < 2; strided++) {
            const int64_t w = shapes[s][0];
            conv_case c = {.dtype = DLA_F32, .nsp = 2, .bias = strided, .B = 8,
                           .C = shapes[s][1], .F = shapes[s][2], .G = 1, .in = {w, w - 2 * s, 1},
                           .out = {w, w - 2 * s, 1}, .fs = {3, 3, 1}, .st = {1, 1, 1},
                           .dl = {1, 1, 1}, .pb = {1, 1, 0}, .strided = strided};
            on_every_device(&c);
            /* Unpadded ("valid") rows of whole vectors, split the same way
             * with no shift: the input of such a layer (w + 8 wide), or
             * the backward filter's dY (its output, w + 8 wide from
             * w + 10), dense. */
            conv_case v = c;
            v.in[0] = w + (strided ? 10 : 8), v.out[0] = v.in[0] - 2;
            v.pb[0] = 0, v.pb[1] = 0, v.out[1] = v.in[1] - 2;
            v.B = 9, v.strided = 0;
            on_every_device(&v);
        }
}

static void channel_wise_separable_convolution_matches_with_same_padding(void **state)
{
    (void)state;
    /* 16 groups of one channel and one filter, 3x3 "same", as the slicing
     * benchmark's custom layer. */
    conv_case c = {.dtype = DLA_F32, .nsp = 2, .bias = 0, .B = 2, .C = 16, .F = 16, .G = 16,
                   .in = {19, 13, 1}, .out = {19, 13, 1}, .fs = {3, 3, 1}, .st = {1, 1, 1},
                   .dl = {1, 1, 1}, .pb = {1, 1, 0}};
    on_every_device(&c);
    c.dtype = DLA_F64;
    on_every_device(&c);
    /* Double, two filters per channel and dilation 2, with few images and
     * with many (the two parallel schemes of the direct backward filter). */
    c.F = 32, c.dl[0] = c.dl[1] = 2, c.pb[0] = c.pb[1] = 2, c.bias = 1;
    on_every_device(&c);
    c.B = 9;
    on_every_device(&c);
}

static void empty_batches_and_outputs_give_zero_gradients(void **state)
{
    (void)state;
    /* Output smaller than any window: dY is empty, so dX and dW are 0. */
    conv_case c = {.dtype = DLA_F32, .nsp = 2, .bias = 1, .B = 2, .C = 3, .F = 4, .G = 1,
                   .in = {4, 5, 1}, .out = {0, 2, 1}, .fs = {3, 3, 1}, .st = {1, 1, 1},
                   .dl = {1, 1, 1}, .pb = {0, 0, 0}};
    on_every_device(&c);
    c.B = 0, c.out[0] = 2;
    on_every_device(&c);
}

/* A valid 2-D forward call on fresh buffers, for the error tests. */
typedef struct err_call {
    dla_conv_args a;
    dbuf bx, bw, by;
} err_call;

static void err_call_init(err_call *e, dla_device *dev)
{
    memset(e, 0, sizeof *e);
    dla_conv_args *a = &e->a;
    a->struct_size = sizeof *a;
    a->dtype = DLA_F32;
    a->nspatial = 2;
    a->batch = 2, a->in_channels = 4, a->out_channels = 6, a->groups = 2;
    a->in_size[0] = a->in_size[1] = 5;
    a->out_size[0] = a->out_size[1] = 3;
    a->filter_size[0] = a->filter_size[1] = 3;
    a->stride[0] = a->stride[1] = a->dilation[0] = a->dilation[1] = 1;
    const int64_t xd[4] = {5, 5, 4, 2}, wd[5] = {3, 3, 2, 3, 2}, yd[4] = {3, 3, 6, 2};
    dbuf_init(&e->bx, dev, DLA_F32, make_view(&a->x, DLA_F32, 4, xd, 0));
    dbuf_init(&e->bw, dev, DLA_F32, make_view(&a->w, DLA_F32, 5, wd, 0));
    dbuf_init(&e->by, dev, DLA_F32, make_view(&a->y, DLA_F32, 4, yd, 0));
    a->x.mem = e->bx.mem, a->w.mem = e->bw.mem, a->y.mem = e->by.mem;
}

static void err_call_free(err_call *e)
{
    dbuf_free(&e->bx), dbuf_free(&e->bw), dbuf_free(&e->by);
}

static void expect_error(dla_device *dev, const dla_conv_args *a, dla_status want,
                         const char *needle)
{
    dla_clear_error();
    dla_status s = dla_device_table(dev)->conv_forward(dla_device_context(dev), a);
    if (s != want)
        fail_msg("%s: status %d, expected %d (%s)", dla_device_name(dev), (int)s, (int)want,
                 dla_last_error());
    if (!strstr(dla_last_error(), needle))
        fail_msg("%s: message \"%s\" lacks \"%s\"", dla_device_name(dev), dla_last_error(), needle);
}

static void cpu_conv_rejects_bad_arguments_with_a_status_and_a_message(void **state)
{
    (void)state;
    dla_device *dev = dla_device_get("cpu");
    assert_non_null(dev);
    err_call e;
    err_call_init(&e, dev);
    assert_int_equal(dla_device_table(dev)->conv_forward(dla_device_context(dev), &e.a), DLA_OK);

    dla_conv_args a = e.a;
    a.w.dims[2] = 1; /* C/G of 1 against in_channels 4 in 2 groups */
    expect_error(dev, &a, DLA_ERR_SHAPE, "argument w: dims 3x3x1x3x2, expected 3x3x2x3x2");
    a = e.a;
    a.groups = 3;
    expect_error(dev, &a, DLA_ERR_INVALID_ARGUMENT, "multiples of groups");
    a = e.a;
    a.out_size[0] = 4;
    expect_error(dev, &a, DLA_ERR_SHAPE, "argument y: dims 3x3x6x2, expected 4x3x6x2");
    a = e.a;
    a.dtype = DLA_I32;
    expect_error(dev, &a, DLA_ERR_DTYPE, "not single or double");
    a = e.a;
    a.nspatial = 4;
    expect_error(dev, &a, DLA_ERR_INVALID_ARGUMENT, "nspatial: 4 outside 1..3");
    a = e.a;
    a.stride[1] = 0;
    expect_error(dev, &a, DLA_ERR_INVALID_ARGUMENT, "spatial dim 2");
    a = e.a;
    a.x.offset = 1000; /* past the buffer */
    expect_error(dev, &a, DLA_ERR_INVALID_ARGUMENT, "argument x");
    a = e.a;
    a.bias = a.y; /* bias of the wrong size */
    expect_error(dev, &a, DLA_ERR_SHAPE, "argument bias: dims 3x3x6x2, expected a vector of 6");
    a = e.a;
    a.struct_size = offsetof(dla_conv_args, bias);
    expect_error(dev, &a, DLA_ERR_INVALID_ARGUMENT, "struct_size");
    err_call_free(&e);
}

/* The unfolded input of im2col has C/G x taps rows, a dimension and a
 * leading dimension of OpenBLAS's GEMM, which are int; each size is within
 * int32 but their product need not be. 2^30 + 1 channels of a 2-tap
 * filter (2^31 + 2 rows) was cast to a negative int (OpenBLAS refused the
 * call and left Y unwritten; past 2^32 the cast wraps to a small product
 * over the wrong rows), after an 8 GiB copy of the weights. It is refused
 * first now, by name. x and w are one value each here (stride 0), so the
 * call costs nothing. */
static void im2col_refuses_more_unfolded_rows_than_a_gemm_dimension_holds(void **state)
{
    (void)state;
    dla_device *dev = dla_device_get("cpu");
    assert_non_null(dev);
    const int64_t C = ((int64_t)1 << 30) + 1;
    for (dla_dtype t = DLA_F32; t <= DLA_F64; t++) {
        dbuf x, w, y;
        dbuf_init(&x, dev, t, 1);
        dbuf_init(&w, dev, t, 1);
        dbuf_init(&y, dev, t, 1);
        dla_conv_args a = {.struct_size = sizeof a, .dtype = t, .nspatial = 1, .batch = 1,
                           .in_channels = C, .out_channels = 1, .groups = 1, .in_size = {2},
                           .out_size = {1}, .filter_size = {2}, .stride = {1}, .dilation = {1}};
        const dla_view one = {.struct_size = sizeof one, .dtype = t};
        a.x = one, a.x.mem = x.mem, a.x.ndims = 3;
        memcpy(a.x.dims, (int64_t[]){2, C, 1}, 3 * sizeof(int64_t));
        a.w = one, a.w.mem = w.mem, a.w.ndims = 4;
        memcpy(a.w.dims, (int64_t[]){2, C, 1, 1}, 4 * sizeof(int64_t));
        a.y = one, a.y.mem = y.mem, a.y.ndims = 3;
        memcpy(a.y.dims, (int64_t[]){1, 1, 1}, 3 * sizeof(int64_t));
        setenv("DLACCEL_CPU_CONV", "im2col", 1);
        expect_error(dev, &a, DLA_ERR_UNSUPPORTED,
                     "cpu conv_forward: 1073741825 channels per group x 2 filter taps = "
                     "2147483650 rows of the unfolded input, more than the 2147483647 a GEMM "
                     "dimension of OpenBLAS holds");
        unsetenv("DLACCEL_CPU_CONV");
        dbuf_free(&x);
        dbuf_free(&w);
        dbuf_free(&y);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_cpu_plugin_has_all_three_conv_kernels_for_float_and_double),
        cmocka_unit_test(random_convolutions_match_naive_loops_in_every_direction),
        cmocka_unit_test(stride_one_cases_take_the_direct_path_and_match),
        cmocka_unit_test(stride_one_cases_run_the_direct_kernels_where_the_cpu_has_them),
        cmocka_unit_test(one_by_one_backward_filter_takes_im2col_with_avx2_unless_direct_is_asked),
        cmocka_unit_test(strided_views_with_gaps_and_offsets_are_read_and_written_in_place),
        cmocka_unit_test(three_by_three_cases_match_and_take_another_path_than_direct),
        cmocka_unit_test(three_by_three_filter_gradients_of_stacked_small_images_match),
        cmocka_unit_test(winograd_filter_products_match_with_own_kernel_and_openblas),
        cmocka_unit_test(three_by_three_cases_of_large_images_match),
        cmocka_unit_test(stride_two_rows_of_many_outputs_match),
        cmocka_unit_test(strided_forward_cases_take_phase_planes_and_match),
        cmocka_unit_test(strided_backward_cases_take_phases_and_match),
        cmocka_unit_test(stride_one_cases_of_large_batches_match),
        cmocka_unit_test(three_by_three_layers_with_inputs_near_flt_max_stay_finite),
        cmocka_unit_test(three_by_three_layers_with_inf_and_nan_inputs_match_the_direct_sums),
        cmocka_unit_test(inf_and_nan_at_the_edges_of_x_and_dy_match_in_every_direction),
        cmocka_unit_test(the_digit_cnn_layers_match_at_batches_of_3_and_9),
        cmocka_unit_test(same_padded_rows_of_whole_vectors_match),
        cmocka_unit_test(channel_wise_separable_convolution_matches_with_same_padding),
        cmocka_unit_test(strided_depthwise_cases_take_their_own_path_and_match),
        cmocka_unit_test(a_depthwise_third_dim_of_padding_alone_reads_zeros),
        cmocka_unit_test(empty_batches_and_outputs_give_zero_gradients),
        cmocka_unit_test(cpu_conv_rejects_bad_arguments_with_a_status_and_a_message),
        cmocka_unit_test(im2col_refuses_more_unfolded_rows_than_a_gemm_dimension_holds),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
