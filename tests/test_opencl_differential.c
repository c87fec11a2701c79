/*
 * test_opencl_differential.c - the opencl plugin against the cpu plugin
 * through the public API, on random cases: shapes with dims of 0, 1,
 * primes, work-group multiples and their neighbours and runs past 2^16
 * elements; views (permutes, slices with steps, up to 8 dims) and implicit
 * expansion (broadcasts, stride 0 in the kernels); every dtype an op takes;
 * data with ties, NaN and Inf. Each op runs on both devices with the same
 * inputs and the results are compared: exactly for data movement, casts,
 * comparisons, max/min, gather and pooling's max; within a few float
 * roundings (scaled by the terms summed) for arithmetic. Errors must agree
 * too: an op one device refuses the other refuses with the same status.
 *
 * Where `dlaccel check-plugin` calls each kernel with random views, this
 * goes through the ops a user calls (elementwise, activations, casts,
 * reductions, pagemtimes, dla_index and its gradient (scatter_add),
 * convolutions and their three gradients, transposed convolution, max and
 * average pooling and their gradients, softmax, moves between devices,
 * and dla_accelerate replays, interpreted the first time and compiled
 * when they recur), so the core's dense retries, its splitting and its
 * fused programs are in the comparison as well.
 *
 * DLA_TEST_SEED picks another stream of cases (default 1) and
 * DLA_TEST_CASES the cases per test (default 40). A failure prints the
 * case (op, shapes, dtype, contiguity) and the first differing element.
 * tests/opencl_differential.sh runs it with the build tree's opencl
 * manifest on the path; without an OpenCL device every test is skipped.
 */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static dla_device *ocl, *cpu;
static uint64_t rs;
static int fails, cases_per_test;
static const char *curop;

static int group_setup(void **state)
{
    (void)state;
    cpu = dla_device_get("cpu");
    ocl = dla_device_get("opencl");
    const char *c = getenv("DLA_TEST_CASES");
    cases_per_test = c && atoi(c) > 0 ? atoi(c) : 40;
    return 0;
}

/* Each test its own stream, so one runs alone as it runs in the suite. */
static void begin(uint64_t salt)
{
    assert_non_null(cpu);
    if (!ocl) {
        print_message("no OpenCL device: %s\n", dla_last_error());
        skip();
    }
    const char *s = getenv("DLA_TEST_SEED");
    rs = (s ? strtoull(s, NULL, 10) : 1) * 0x9E3779B97F4A7C15ull + salt * 0xD1B54A32D192ED03ull;
    if (rs == 0)
        rs = 1;
    fails = 0;
}

static uint64_t rnd(void)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return rs;
}

static int64_t ri(int64_t lo, int64_t hi)
{
    return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

static double rf(void)
{
    return (double)(rnd() >> 11) / 9007199254740992.0;
}

static int64_t pick_dim(void)
{
    static const int64_t sp[] = {0,   1,   2,   3,   5,   7,   13,  31,   32,   33,  63,
                                 64,  65,  127, 128, 129, 255, 256, 257, 1023, 1024, 1025};
    if (ri(0, 9) < 6)
        return ri(1, 6);
    return sp[ri(0, sizeof sp / sizeof *sp - 1)];
}

/* ndims and dims of at most maxel elements: mostly small, sometimes a
 * long vector past 2^16 elements, sometimes 5 to 8 short dims. */
static int rnd_shape(int64_t *dims, int maxnd, int64_t maxel)
{
    int nd;
    for (;;) {
        nd = (int)ri(1, maxnd);
        int64_t n = 1;
        for (int i = 0; i < nd; i++)
            n *= dims[i] = pick_dim();
        if (n <= maxel)
            break;
    }
    if (ri(0, 15) == 0) {
        nd = 1;
        dims[0] = ri(65530, 140000);
    } else if (maxnd >= 3 && ri(0, 3) == 0) {
        nd = (int)ri(5, 8);
        for (int i = 0; i < nd; i++)
            dims[i] = ri(1, 4);
    }
    return nd;
}

/* n random elements of dt: small integers (ties), spread values, and with
 * special, NaN and +-Inf. */
static void *gen(dla_dtype dt, int64_t n, int special)
{
    unsigned char *p = malloc((size_t)n * dla_dtype_size(dt) + 1);
    assert_non_null(p);
    for (int64_t i = 0; i < n; i++) {
        const int k = (int)ri(0, 19);
        double v;
        if (special && k == 0)
            v = NAN;
        else if (special && k == 1)
            v = (rnd() & 1) ? INFINITY : -INFINITY;
        else if (k < 6)
            v = (double)ri(-3, 3);
        else
            v = (rf() * 2 - 1) * 4;
        switch (dt) {
        case DLA_F32: ((float *)p)[i] = (float)v; break;
        case DLA_F64: ((double *)p)[i] = v; break;
        case DLA_I32:
            ((int32_t *)p)[i] = (int32_t)ri(-1000, 1000) * ((rnd() & 7) ? 1 : 1000000);
            break;
        case DLA_U8: p[i] = (uint8_t)rnd(); break;
        default: p[i] = (uint8_t)(rnd() & 1); break;
        }
    }
    return p;
}

/* One operand or result on each device. */
typedef struct pair {
    dla_tensor *c, *o;
} pair;

static pair make(dla_dtype dt, const char *format, int nd, const int64_t *dims, int special)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= dims[i];
    void *h = gen(dt, n, special);
    dla_device_set_current(cpu);
    pair p;
    p.c = dla_tensor_from_host(h, dt, format, nd, dims);
    free(h);
    p.o = dla_tensor_to_device(p.c, ocl);
    assert_int_equal(dla_tensor_status(p.o), DLA_OK);
    return p;
}

/* The same random view on both: a permute and a slice with a step, each
 * half the time (twice for a view of a view). */
static pair view(pair p)
{
    const int nd = dla_tensor_ndims(p.c);
    if (nd >= 2 && ri(0, 1)) {
        int64_t ord[DLA_MAX_DIMS];
        for (int i = 0; i < nd; i++)
            ord[i] = i + 1;
        for (int i = nd - 1; i > 0; i--) {
            const int j = (int)ri(0, i);
            const int64_t t = ord[i];
            ord[i] = ord[j], ord[j] = t;
        }
        p.c = dla_permute(p.c, nd, ord);
        p.o = dla_permute(p.o, nd, ord);
    }
    if (nd >= 1 && ri(0, 1)) {
        const int d = (int)ri(1, nd);
        const int64_t n = dla_tensor_dim(p.c, d);
        if (n > 1) {
            const int64_t start = ri(1, n - 1), step = ri(1, 3), stop = ri(start, n);
            p.c = dla_slice(p.c, d, start, step, stop);
            p.o = dla_slice(p.o, d, start, step, stop);
        }
    }
    return p;
}

static double eps(dla_dtype dt)
{
    return dt == DLA_F32 ? 1.2e-7 : dt == DLA_F64 ? 2.3e-16 : 0;
}

static void describe(char *buf, size_t size, dla_tensor *t)
{
    char d[160];
    dla_tensor_describe(t, d, sizeof d);
    snprintf(buf, size, "%.160s%s", d, dla_tensor_is_contiguous(t) ? "" : " (a view)");
}

static void failed(const char *what, const char *detail)
{
    fails++;
    if (fails <= 20)
        print_message("%s: %s: %s\n", curop, what, detail);
}

/* Results r of op curop on both devices agree: status, shape, format,
 * dtype, device and every element within tol relative (NaN with NaN, Inf
 * exactly), relative to the element and 1, or with by_max, to the element
 * and the largest finite magnitude of the result (for long sums whose
 * terms cancel: convolutions). */
static void compare_as(pair r, double tol, int by_max, const char *desc)
{
    char m[800];
    const dla_status sc = dla_tensor_status(r.c), so = dla_tensor_status(r.o);
    if (sc != so) {
        snprintf(m, sizeof m, "%.300s: status %d on cpu (%.150s), %d on opencl (%.150s)", desc,
                 sc, dla_tensor_error(r.c), so, dla_tensor_error(r.o));
        failed("status", m);
        return;
    }
    if (sc != DLA_OK)
        return;
    int64_t dc[DLA_MAX_DIMS], dq[DLA_MAX_DIMS];
    const int nc = dla_tensor_dims(r.c, dc), nq = dla_tensor_dims(r.o, dq);
    if (nc != nq || memcmp(dc, dq, (size_t)nc * sizeof *dc) != 0 ||
        dla_tensor_dtype(r.c) != dla_tensor_dtype(r.o) ||
        strcmp(dla_tensor_format(r.c), dla_tensor_format(r.o)) != 0 ||
        dla_tensor_device(r.o) != ocl) {
        char a[200], b[200];
        describe(a, sizeof a, r.c);
        describe(b, sizeof b, r.o);
        snprintf(m, sizeof m, "%.300s: %s on cpu, %s on opencl", desc, a, b);
        failed("result", m);
        return;
    }
    const int64_t n = dla_tensor_numel(r.c);
    const dla_dtype dt = dla_tensor_dtype(r.c);
    const size_t es = dla_dtype_size(dt);
    unsigned char *a = malloc((size_t)n * es + 1), *b = malloc((size_t)n * es + 1);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(dla_tensor_to_host(r.c, a, (size_t)n * es), DLA_OK);
    assert_int_equal(dla_tensor_to_host(r.o, b, (size_t)n * es), DLA_OK);
    double scale = 1;
    for (int64_t i = 0; by_max && i < n; i++) {
        const double x = dt == DLA_F32 ? ((float *)a)[i] : ((double *)a)[i];
        if (isfinite(x) && fabs(x) > scale)
            scale = fabs(x);
    }
    for (int64_t i = 0; i < n; i++) {
        double x, y;
        switch (dt) {
        case DLA_F32: x = ((float *)a)[i], y = ((float *)b)[i]; break;
        case DLA_F64: x = ((double *)a)[i], y = ((double *)b)[i]; break;
        case DLA_I32: x = ((int32_t *)a)[i], y = ((int32_t *)b)[i]; break;
        default: x = a[i], y = b[i]; break;
        }
        int same;
        if (isnan(x) || isnan(y))
            same = isnan(x) && isnan(y);
        else if (isinf(x) || isinf(y))
            same = x == y;
        else
            same = fabs(x - y) <= tol * (scale + fabs(x));
        if (!same) {
            snprintf(m, sizeof m, "%.400s: element %lld of %lld is %.17g on cpu, %.17g on opencl",
                     desc, (long long)i, (long long)n, x, y);
            failed("value", m);
            break;
        }
    }
    free(a);
    free(b);
}

static void compare(pair r, double tol, const char *desc)
{
    compare_as(r, tol, 0, desc);
}

static const dla_dtype dtypes[] = {DLA_F32, DLA_F64, DLA_I32, DLA_U8, DLA_BOOL};

/* ------------------------------------------------------------- the ops */

typedef dla_tensor *(*unary_fn)(dla_tensor *);
static dla_tensor *gelu_tanh(dla_tensor *x) { return dla_gelu(x, "tanh"); }
static dla_tensor *gelu_erf(dla_tensor *x) { return dla_gelu(x, NULL); }
static dla_tensor *elu(dla_tensor *x) { return dla_elu(x, 1.5); }

static void elementwise_and_casts_agree(void **state)
{
    (void)state;
    static const struct {
        const char *name;
        unary_fn f;
    } un[] = {
        {"dla_neg", dla_neg},         {"dla_exp", dla_exp},         {"dla_log", dla_log},
        {"dla_sqrt", dla_sqrt},       {"dla_abs", dla_abs},         {"dla_sin", dla_sin},
        {"dla_cos", dla_cos},         {"dla_tanh", dla_tanh},       {"dla_sigmoid", dla_sigmoid},
        {"dla_relu", dla_relu},       {"dla_square", dla_square},   {"dla_sign", dla_sign},
        {"dla_erf", dla_erf},         {"dla_gelu tanh", gelu_tanh}, {"dla_gelu", gelu_erf},
        {"dla_elu", elu},             {"dla_contiguous", dla_contiguous},
    };
    begin(1);
    for (int it = 0; it < cases_per_test; it++) {
        dla_scope_begin();
        int64_t dims[DLA_MAX_DIMS];
        const int nd = rnd_shape(dims, 4, 300000);
        const dla_dtype dt = ri(0, 2) ? dtypes[ri(0, 1)] : dtypes[ri(0, 4)];
        const pair x = view(make(dt, "", nd, dims, 1));
        char d[400];
        describe(d, sizeof d, x.c);
        const int k = (int)ri(0, sizeof un / sizeof *un - 1);
        curop = un[k].name;
        /* PoCL's functions are within a few ulp of glibc's; the composite
         * activations round a few more times. */
        compare((pair){un[k].f(x.c), un[k].f(x.o)}, un[k].f == dla_contiguous ? 0 : 64 * eps(dt),
                d);
        const double p = rf() * 4 - 2;
        curop = "dla_pows";
        compare((pair){dla_pows(x.c, p), dla_pows(x.o, p)}, 64 * eps(dt), d);
        curop = "dla_affine";
        compare((pair){dla_affine(x.c, p, 0.5), dla_affine(x.o, p, 0.5)}, 4 * eps(dt), d);
        curop = "dla_leakyrelu";
        compare((pair){dla_leakyrelu(x.c, p), dla_leakyrelu(x.o, p)}, 4 * eps(dt), d);
        const dla_dtype to = dtypes[ri(0, 4)];
        char cd[480];
        snprintf(cd, sizeof cd, "%s to %s", d, dla_dtype_name(to));
        curop = "dla_cast";
        compare((pair){dla_cast(x.c, to), dla_cast(x.o, to)}, 0, cd);
        dla_scope_end();
    }
    assert_int_equal(fails, 0);
}

static void binary_ops_with_implicit_expansion_agree(void **state)
{
    (void)state;
    typedef dla_tensor *(*binary_fn)(dla_tensor *, dla_tensor *);
    static const struct {
        const char *name;
        binary_fn f;
        int exact;
    } bin[] = {
        {"dla_add", dla_add, 0}, {"dla_sub", dla_sub, 0},   {"dla_mul", dla_mul, 0},
        {"dla_div", dla_div, 0}, {"dla_max2", dla_max2, 1}, {"dla_min2", dla_min2, 1},
        {"dla_pow", dla_pow, 0}, {"dla_eq", dla_eq, 1},     {"dla_ne", dla_ne, 1},
        {"dla_lt", dla_lt, 1},   {"dla_le", dla_le, 1},     {"dla_gt", dla_gt, 1},
        {"dla_ge", dla_ge, 1},
    };
    begin(2);
    for (int it = 0; it < cases_per_test; it++) {
        dla_scope_begin();
        int64_t dims[DLA_MAX_DIMS], db[DLA_MAX_DIMS];
        const int k = (int)ri(0, sizeof bin / sizeof *bin - 1);
        dla_dtype ta = dtypes[ri(0, 1)], tb = ta;
        if (bin[k].exact && ri(0, 1))
            ta = dtypes[ri(0, 4)], tb = dtypes[ri(0, 4)]; /* comparisons take any pair */
        const int nd0 = rnd_shape(dims, 4, 300000);
        pair a = view(make(ta, "", nd0, dims, 1));
        const int nd = dla_tensor_dims(a.c, dims);
        for (int i = 0; i < nd; i++)
            db[i] = ri(0, 2) ? dims[i] : 1;
        pair b = make(tb, "", nd, db, 1);
        if (ri(0, 3) == 0) {
            const pair t = a;
            a = b, b = t;
        }
        char d[800], da[300], dbs[300];
        describe(da, sizeof da, a.c);
        describe(dbs, sizeof dbs, b.c);
        snprintf(d, sizeof d, "a %s, b %s", da, dbs);
        curop = bin[k].name;
        compare((pair){bin[k].f(a.c, b.c), bin[k].f(a.o, b.o)},
                bin[k].exact ? 0 : (bin[k].f == dla_pow ? 64 : 4) * eps(ta), d);
        if (ta == tb && ta <= DLA_F64) {
            const pair cond = make(DLA_BOOL, "", nd, db, 0);
            curop = "dla_where";
            compare((pair){dla_where(cond.c, a.c, b.c), dla_where(cond.o, a.o, b.o)}, 0, d);
        }
        dla_scope_end();
    }
    assert_int_equal(fails, 0);
}

static void reductions_with_ties_and_nan_agree(void **state)
{
    (void)state;
    begin(3);
    for (int it = 0; it < cases_per_test; it++) {
        dla_scope_begin();
        int64_t dims[DLA_MAX_DIMS], rd[DLA_MAX_DIMS];
        const int nd0 = rnd_shape(dims, 4, 400000);
        const dla_dtype dt = dtypes[ri(0, 1)];
        const pair x = view(make(dt, "", nd0, dims, (int)ri(0, 1)));
        const int nd = dla_tensor_ndims(x.c), nr = (int)ri(0, nd);
        for (int i = 0; i < nr; i++)
            rd[i] = ri(1, nd + 1); /* repeats, and a dim past x's */
        char d[500], dx[300];
        describe(dx, sizeof dx, x.c);
        int at = snprintf(d, sizeof d, "%s over", dx);
        for (int i = 0; i < nr; i++)
            at += snprintf(d + at, sizeof d - (size_t)at, " %lld", (long long)rd[i]);
        if (nr == 0)
            snprintf(d + at, sizeof d - (size_t)at, " all");
        const double tol = eps(dt) * (16 + 4 * sqrt((double)dla_tensor_numel(x.c)));
        curop = "dla_sum";
        compare((pair){dla_sum(x.c, nr, rd), dla_sum(x.o, nr, rd)}, tol, d);
        curop = "dla_mean";
        compare((pair){dla_mean(x.c, nr, rd), dla_mean(x.o, nr, rd)}, tol, d);
        curop = "dla_max";
        compare((pair){dla_max(x.c, nr, rd), dla_max(x.o, nr, rd)}, 0, d);
        curop = "dla_min";
        compare((pair){dla_min(x.c, nr, rd), dla_min(x.o, nr, rd)}, 0, d);
        dla_scope_end();
    }
    assert_int_equal(fails, 0);
}

static void softmax_over_channels_agrees(void **state)
{
    (void)state;
    static const char *const formats[] = {"CB", "SSCB", "CBT", "SCB", "C"};
    begin(4);
    for (int it = 0; it < cases_per_test; it++) {
        dla_scope_begin();
        const char *f = formats[ri(0, 4)];
        const int nd = (int)strlen(f);
        int64_t dims[DLA_MAX_DIMS], n;
        do {
            n = 1;
            for (int i = 0; i < nd; i++)
                n *= dims[i] = pick_dim() % 300;
        } while (n > 300000);
        if (ri(0, 4) == 0) { /* one long channel dim */
            for (int i = 0; i < nd; i++)
                dims[i] = 1;
            dims[strchr(f, 'C') - f] = ri(60000, 140000);
        }
        const dla_dtype dt = dtypes[ri(0, 1)];
        const pair x = make(dt, f, nd, dims, (int)ri(0, 1));
        const pair y = {dla_affine(x.c, 40, 0), dla_affine(x.o, 40, 0)}; /* large logits */
        char d[300];
        describe(d, sizeof d, x.c);
        curop = "dla_softmax";
        compare((pair){dla_softmax(y.c), dla_softmax(y.o)}, 64 * eps(dt), d);
        curop = "dla_logsoftmax";
        compare((pair){dla_logsoftmax(y.c), dla_logsoftmax(y.o)}, 64 * eps(dt), d);
        dla_scope_end();
    }
    assert_int_equal(fails, 0);
}

static void pagemtimes_with_transposes_and_views_agrees(void **state)
{
    (void)state;
    static const char *const tr[] = {"none", "transpose"};
    begin(5);
    for (int it = 0; it < cases_per_test; it++) {
        dla_scope_begin();
        const int64_t m = pick_dim() % 200, k = pick_dim() % 200, n = pick_dim() % 200;
        int ta = (int)ri(0, 1);
        const int tb = (int)ri(0, 1);
        int64_t pa = ri(1, 3), pb = ri(0, 1) ? pa : 1;
        if (ri(0, 1)) {
            const int64_t t = pa;
            pa = pb, pb = t;
        }
        const dla_dtype dt = dtypes[ri(0, 1)];
        const int64_t da[3] = {ta ? k : m, ta ? m : k, pa}, db[3] = {tb ? n : k, tb ? k : n, pb};
        pair a = make(dt, "", 3, da, 0), b = make(dt, "", 3, db, 0);
        if (ri(0, 2) == 0) { /* a transposed view, multiplied as the other transpose */
            const int64_t o[3] = {2, 1, 3};
            a.c = dla_permute(a.c, 3, o);
            a.o = dla_permute(a.o, 3, o);
            ta = !ta;
        }
        if (ri(0, 1)) { /* rows or columns of a that are not k, by a step */
            const int dm = ta ? 2 : 1;
            const int64_t len = dla_tensor_dim(a.c, dm), step = ri(1, 3);
            a.c = dla_slice(a.c, dm, 0, step, len);
            a.o = dla_slice(a.o, dm, 0, step, len);
        }
        if (ri(0, 1)) {
            const int dn = tb ? 1 : 2;
            const int64_t len = dla_tensor_dim(b.c, dn), start = len > 1 ? 1 : 0;
            const int64_t step = ri(1, 3);
            b.c = dla_slice(b.c, dn, start, step, len);
            b.o = dla_slice(b.o, dn, start, step, len);
        }
        char d[700], sa[300], sb[300];
        describe(sa, sizeof sa, a.c);
        describe(sb, sizeof sb, b.c);
        snprintf(d, sizeof d, "a %s (%s), b %s (%s)", sa, tr[ta], sb, tr[tb]);
        curop = "dla_pagemtimes";
        compare((pair){dla_pagemtimes(a.c, tr[ta], b.c, tr[tb]),
                       dla_pagemtimes(a.o, tr[ta], b.o, tr[tb])},
                eps(dt) * (16 + 4 * (double)k), d);
        dla_scope_end();
    }
    assert_int_equal(fails, 0);
}

/* The gradient of sum(w .* x(:, index, :)) with respect to x: scatter_add. */
typedef struct index_ctx {
    int dim;
    dla_tensor *index, *w;
} index_ctx;

static dla_status index_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    const index_ctx *c = ctx;
    dla_tensor *loss = dla_sum(dla_mul(dla_index(in[0], c->dim, c->index), c->w), 0, NULL);
    return dla_gradient(loss, 1, in, out);
}

static void index_and_its_gradient_agree(void **state)
{
    (void)state;
    begin(6);
    for (int it = 0; it < cases_per_test; it++) {
        dla_scope_begin();
        int64_t dims[DLA_MAX_DIMS];
        const int nd0 = rnd_shape(dims, 4, 200000);
        const int grad = (int)ri(0, 1);
        const dla_dtype dt = grad ? dtypes[ri(0, 1)] : dtypes[ri(0, 4)];
        const pair x = grad ? make(dt, "", nd0, dims, 0) : view(make(dt, "", nd0, dims, 1));
        const int xnd = dla_tensor_ndims(x.c);
        const int dim = (int)ri(1, xnd < DLA_MAX_DIMS ? xnd + 1 : DLA_MAX_DIMS);
        const int64_t len = dla_tensor_dim(x.c, dim);
        const int64_t ni = len ? ri(0, 40) : 0;
        int32_t *ix = malloc((size_t)(ni + 1) * sizeof *ix);
        assert_non_null(ix);
        for (int64_t i = 0; i < ni; i++) /* repeats, and runs on the first few */
            ix[i] = (int32_t)ri(0, ri(0, 1) ? len - 1 : (len < 3 ? len - 1 : 2));
        dla_device_set_current(cpu);
        pair index;
        index.c = dla_tensor_from_host(ix, DLA_I32, "", 2, (int64_t[]){ni, 1});
        index.o = dla_tensor_to_device(index.c, ocl);
        free(ix);
        char d[400], dx[300];
        describe(dx, sizeof dx, x.c);
        snprintf(d, sizeof d, "x %s, dim %d, %lld positions", dx, dim, (long long)ni);
        curop = "dla_index";
        compare((pair){dla_index(x.c, dim, index.c), dla_index(x.o, dim, index.o)}, 0, d);
        if (grad) {
            int64_t yd[DLA_MAX_DIMS];
            int ndy = dla_tensor_dims(x.c, yd);
            for (; ndy < dim; ndy++)
                yd[ndy] = 1;
            yd[dim - 1] = ni;
            const pair w = make(dt, "", ndy, yd, 0);
            index_ctx cc = {dim, index.c, w.c}, co = {dim, index.o, w.o};
            pair g = {NULL, NULL};
            dla_feval(index_loss, &cc, 1, &x.c, 1, &g.c);
            dla_feval(index_loss, &co, 1, &x.o, 1, &g.o);
            curop = "dla_index's gradient (scatter_add)";
            compare(g, eps(dt) * 64, d);
        }
        dla_scope_end();
    }
    assert_int_equal(fails, 0);
}

/* A random convolution layer: x "S..CB", weights with groups, stride,
 * dilation and padding. */
typedef struct conv_case {
    int ns;
    int64_t xd[5], wd[6];
    dla_conv_options o;
} conv_case;

static void conv_draw(conv_case *c, int maxns)
{
    memset(c, 0, sizeof *c);
    c->ns = (int)ri(1, maxns);
    const int64_t G = ri(1, 3), Cg = ri(1, 3), Fg = ri(1, 3), B = ri(1, 3);
    for (int i = 0; i < c->ns; i++) {
        const int64_t f = ri(1, 4);
        c->o.stride[i] = ri(1, 3);
        c->o.dilation[i] = ri(1, 2);
        c->o.padding[0][i] = ri(0, 2);
        c->o.padding[1][i] = ri(0, 2);
        const int64_t span = c->o.dilation[i] * (f - 1) + 1;
        c->xd[i] = ri(span > 3 ? span : 1, span + 9 - 2 * c->ns);
        c->wd[i] = f;
    }
    c->xd[c->ns] = Cg * G, c->xd[c->ns + 1] = B;
    c->wd[c->ns] = Cg, c->wd[c->ns + 1] = Fg, c->wd[c->ns + 2] = G;
}

static void conv_describe(char *d, size_t size, const conv_case *c, dla_tensor *x)
{
    char dx[200];
    describe(dx, sizeof dx, x);
    int at = snprintf(d, size, "x %s, weights", dx);
    for (int i = 0; i < c->ns + 3; i++)
        at += snprintf(d + at, size - (size_t)at, "%s%lld", i ? "x" : " ", (long long)c->wd[i]);
    for (int i = 0; i < c->ns; i++)
        at += snprintf(d + at, size - (size_t)at, ", dim %d: stride %lld dilation %lld pad %lld %lld",
                       i + 1, (long long)c->o.stride[i], (long long)c->o.dilation[i],
                       (long long)c->o.padding[0][i], (long long)c->o.padding[1][i]);
}

static const char *const spatial_formats[] = {"", "SCB", "SSCB", "SSSCB"};

static dla_status conv_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    const conv_case *c = ctx;
    dla_tensor *y = dla_conv(in[0], in[1], in[2], &c->o);
    dla_tensor *loss = dla_sum(dla_mul(y, dla_sin(y)), 0, NULL);
    return dla_gradient(loss, 3, in, out);
}

static void convolutions_and_their_gradients_agree(void **state)
{
    (void)state;
    begin(7);
    for (int it = 0; it < cases_per_test; it++) {
        dla_scope_begin();
        conv_case c;
        conv_draw(&c, 3);
        const dla_dtype dt = dtypes[ri(0, 1)];
        const pair x = make(dt, spatial_formats[c.ns], c.ns + 2, c.xd, 0);
        const pair w = make(dt, "", c.ns + 3, c.wd, 0);
        const int64_t nf = c.wd[c.ns + 1] * c.wd[c.ns + 2];
        const pair bias = make(dt, "", 1, &nf, 0);
        char d[700];
        conv_describe(d, sizeof d, &c, x.c);
        /* Sums of up to a few thousand terms that cancel: within a few
         * hundred roundings of the result's largest element. */
        const double tol = eps(dt) * 1024;
        curop = "dla_conv";
        const pair y = {dla_conv(x.c, w.c, bias.c, &c.o), dla_conv(x.o, w.o, bias.o, &c.o)};
        compare_as(y, tol, 1, d);
        if (dla_tensor_status(y.c) == DLA_OK) {
            /* The same weights read as a transposed bank from y's channels back to x's. */
            dla_conv_options t = c.o;
            memset(t.padding, 0, sizeof t.padding);
            curop = "dla_transpconv";
            compare_as((pair){dla_transpconv(y.c, w.c, NULL, &t),
                              dla_transpconv(y.o, w.o, NULL, &t)},
                       tol, 1, d);
        }
        if (c.ns <= 2) {
            dla_tensor *gc[3] = {NULL, NULL, NULL}, *go[3] = {NULL, NULL, NULL};
            dla_feval(conv_loss, &c, 3, (dla_tensor *[]){x.c, w.c, bias.c}, 3, gc);
            dla_feval(conv_loss, &c, 3, (dla_tensor *[]){x.o, w.o, bias.o}, 3, go);
            static const char *const names[] = {"dla_conv's gradient in x",
                                                "dla_conv's gradient in the weights",
                                                "dla_conv's gradient in the bias"};
            for (int i = 0; i < 3; i++) {
                curop = names[i];
                compare_as((pair){gc[i], go[i]}, tol, 1, d);
            }
        }
        dla_scope_end();
    }
    assert_int_equal(fails, 0);
}

typedef struct pool_case {
    int max, np;
    int64_t size[3];
    dla_pool_options o;
} pool_case;

static dla_status pool_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    const pool_case *c = ctx;
    dla_tensor *y = c->max ? dla_maxpool(in[0], c->np, c->size, &c->o)
                           : dla_avgpool(in[0], c->np, c->size, &c->o);
    out[0] = y;
    return dla_gradient(dla_sum(dla_mul(y, dla_cos(y)), 0, NULL), 1, in, out + 1);
}

static void pooling_and_its_gradient_agree(void **state)
{
    (void)state;
    begin(8);
    for (int it = 0; it < cases_per_test; it++) {
        dla_scope_begin();
        pool_case c;
        memset(&c, 0, sizeof c);
        c.max = (int)ri(0, 1);
        c.np = (int)ri(1, 3);
        int64_t xd[5];
        for (int i = 0; i < c.np; i++) {
            c.size[i] = ri(1, 3);
            c.o.stride[i] = ri(1, 3);
            c.o.padding[0][i] = ri(0, c.size[i] - 1);
            c.o.padding[1][i] = ri(0, c.size[i] - 1);
            xd[i] = ri(c.size[i], c.size[i] + 8 - 2 * c.np);
        }
        if (!c.max && ri(0, 1))
            c.o.padding_value = "mean";
        xd[c.np] = ri(1, 4), xd[c.np + 1] = ri(1, 3);
        const dla_dtype dt = dtypes[ri(0, 1)];
        const int special = (int)ri(0, 1);
        const pair x = make(dt, spatial_formats[c.np], c.np + 2, xd, special);
        dla_tensor *rc[2] = {NULL, NULL}, *ro[2] = {NULL, NULL};
        dla_feval(pool_loss, &c, 1, &x.c, 2, rc);
        dla_feval(pool_loss, &c, 1, &x.o, 2, ro);
        char d[500], dx[200];
        describe(dx, sizeof dx, x.c);
        snprintf(d, sizeof d, "%s pool %lldx%lldx%lld of x %s, stride %lld, padding %lld %lld%s",
                 c.max ? "max" : "average", (long long)c.size[0],
                 (long long)(c.np > 1 ? c.size[1] : 1), (long long)(c.np > 2 ? c.size[2] : 1), dx,
                 (long long)c.o.stride[0], (long long)c.o.padding[0][0],
                 (long long)c.o.padding[1][0], c.o.padding_value ? ", mean padding" : "");
        curop = c.max ? "dla_maxpool" : "dla_avgpool";
        compare((pair){rc[0], ro[0]}, c.max ? 0 : 16 * eps(dt), d);
        curop = c.max ? "dla_maxpool's gradient" : "dla_avgpool's gradient";
        compare((pair){rc[1], ro[1]}, 64 * eps(dt), d);
        dla_scope_end();
    }
    assert_int_equal(fails, 0);
}

static void moves_between_devices_keep_every_bit(void **state)
{
    (void)state;
    begin(9);
    for (int it = 0; it < cases_per_test; it++) {
        dla_scope_begin();
        int64_t dims[DLA_MAX_DIMS];
        const int nd = rnd_shape(dims, 4, 300000);
        const pair x = view(view(make(dtypes[ri(0, 4)], "", nd, dims, 1)));
        char d[300];
        describe(d, sizeof d, x.c);
        curop = "dla_tensor_to_device of an opencl view to cpu and back";
        compare((pair){x.c, dla_tensor_to_device(dla_tensor_to_device(x.o, cpu), ocl)}, 0, d);
        curop = "dla_tensor_to_device of a cpu view to opencl";
        compare((pair){x.c, dla_tensor_to_device(x.c, ocl)}, 0, d);
        curop = "dla_tensor_to_device of an opencl view to opencl";
        compare((pair){x.c, dla_tensor_to_device(x.o, ocl)}, 0, d);
        const int64_t n = dla_tensor_numel(x.c);
        if (n > 0) {
            const int64_t i = ri(0, n - 1);
            const double a = dla_tensor_item(x.c, i), b = dla_tensor_item(x.o, i);
            if (!(a == b || (isnan(a) && isnan(b)))) {
                char m[400];
                snprintf(m, sizeof m, "%s: element %lld is %g on cpu, %g on opencl", d,
                         (long long)i, a, b);
                curop = "dla_tensor_item";
                failed("value", m);
            }
        }
        dla_scope_end();
    }
    assert_int_equal(fails, 0);
}

/* An elementwise chain ending in one of four reductions: a replay fuses
 * it (fused, fused_reduce, fused_multi), interpreted on the first runs
 * and compiled once it recurs. */
static int program_kind;

static dla_status program(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *a = in[0], *b = in[1];
    dla_tensor *t = dla_add(dla_mul(a, b), dla_tanh(a));
    t = dla_div(t, dla_affine(dla_abs(b), 1, 1));
    t = dla_max2(t, dla_sigmoid(dla_neg(b)));
    switch (program_kind) {
    case 0: out[0] = t; break;
    case 1: out[0] = dla_sum(t, 1, (int64_t[]){1}); break;
    case 2: out[0] = dla_mean(dla_exp(dla_sin(t)), 1, (int64_t[]){2}); break;
    default: out[0] = dla_sum(dla_square(t), 0, NULL); break;
    }
    return DLA_OK;
}

static void accelerated_replays_agree_interpreted_and_compiled(void **state)
{
    (void)state;
    begin(10);
    for (int it = 0; it < cases_per_test; it++) {
        dla_scope_begin();
        int64_t dims[DLA_MAX_DIMS], db[DLA_MAX_DIMS];
        const int nd0 = rnd_shape(dims, 3, 200000);
        const dla_dtype dt = dtypes[ri(0, 1)];
        program_kind = (int)ri(0, 3);
        const pair a = view(make(dt, "", nd0, dims, 0));
        const int nd = dla_tensor_dims(a.c, dims);
        for (int i = 0; i < nd; i++)
            db[i] = ri(0, 2) ? dims[i] : 1;
        const pair b = make(dt, "", nd, db, 0);
        dla_accel *fc = dla_accelerate(program, NULL), *fo = dla_accelerate(program, NULL);
        assert_non_null(fc);
        assert_non_null(fo);
        char d[500], da[300];
        describe(da, sizeof da, a.c);
        for (int run = 0; run < 4; run++) {
            pair r = {NULL, NULL};
            dla_accel_call(fc, NULL, 2, (dla_tensor *[]){a.c, b.c}, 1, &r.c);
            dla_accel_call(fo, NULL, 2, (dla_tensor *[]){a.o, b.o}, 1, &r.o);
            snprintf(d, sizeof d, "program %d, a %s, run %d", program_kind, da, run + 1);
            curop = "dla_accel_call";
            compare(r, eps(dt) * (64 + 4 * sqrt((double)dla_tensor_numel(a.c))), d);
        }
        dla_accel_free(fc);
        dla_accel_free(fo);
        dla_scope_end();
    }
    assert_int_equal(fails, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(elementwise_and_casts_agree),
        TU_TEST(binary_ops_with_implicit_expansion_agree),
        TU_TEST(reductions_with_ties_and_nan_agree),
        TU_TEST(softmax_over_channels_agrees),
        TU_TEST(pagemtimes_with_transposes_and_views_agrees),
        TU_TEST(index_and_its_gradient_agree),
        TU_TEST(convolutions_and_their_gradients_agree),
        TU_TEST(pooling_and_its_gradient_agree),
        TU_TEST(moves_between_devices_keep_every_bit),
        TU_TEST(accelerated_replays_agree_interpreted_and_compiled),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
