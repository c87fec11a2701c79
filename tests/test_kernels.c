/*
 * test_kernels.c - the cpu plugin's kernels against naive loops.
 *
 * The cpu plugin is the oracle every other plugin is checked against by
 * `dlaccel check-plugin` (tools/conformance*.c, tests/conformance.sh);
 * this suite checks the oracle itself. Its kernels run against naive
 * reference loops written here, on seeded random shapes: strided
 * views with offsets, gaps and permuted layouts, broadcasting through
 * stride 0, every unary and binary op, every reduction with and without its
 * index, GEMM with each transpose pair and batch strides of 0, casts
 * between all dtypes, and fills. The whole output buffer is compared, so a
 * kernel that writes outside its view fails too.
 *
 * ABI 1.1 adds where (with broadcast conditions and scalar operands), the
 * comparisons (logical z, ties and NaN), the new unary ops, max and average
 * pooling forward and backward (overlapping windows, padding, strided
 * views, ties and NaN in max windows), and gather / scatter_add (repeated
 * positions, operands missing their trailing dim of 1). The cpu plugin's
 * own table negotiation is checked on a private copy of the library, and
 * its block cache giving an idle block's pages back on a miss and emptying
 * itself when the host refuses a block.
 *
 * The refusals tested here (mismatched shapes, a ternary's non-logical
 * cond, views past their memory) are the cpu plugin's own defensive
 * checks: the core never sends such calls, and plugin.h does not ask
 * other plugins for them. Byte copies between host and device are
 * check-plugin's memory case. The expected semantics are the cpu plugin's, the oracle of the project:
 * max/min ignore one NaN operand, reductions let NaN win and keep the first
 * position on ties, casts truncate, saturate and send NaN to 0.
 */
#define _POSIX_C_SOURCE 200809L /* mkstemp, fdopen, posix_memalign */
#include <dlaccel.h>

#include <dlaccel/device_table.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <malloc.h> /* malloc_usable_size: the test allocator's byte count */
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SEED 20240611u
#define MAX_DEVICES 32

static dla_device *devices[MAX_DEVICES];
static int n_devices;

/* What the running case is, for failure messages. */
static char what[512];

/* ----------------------------------------------------------- randomness */

static uint64_t rng_state = SEED;

static uint64_t rnd(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* An integer in lo..hi. */
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

/* ----------------------------------------------------------- elements */

static size_t dsize(dla_dtype t)
{
    static const size_t sizes[] = {4, 8, 4, 1, 1};
    return sizes[t];
}

static const char *dname(dla_dtype t)
{
    static const char *const names[] = {"single", "double", "int32", "uint8", "logical"};
    return names[t];
}

static double get(dla_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case DLA_F32: return ((const float *)p)[i];
    case DLA_F64: return ((const double *)p)[i];
    case DLA_I32: return ((const int32_t *)p)[i];
    default: return ((const uint8_t *)p)[i];
    }
}

/* Stores v, which the caller made representable in t. */
static void put(dla_dtype t, void *p, int64_t i, double v)
{
    switch (t) {
    case DLA_F32: ((float *)p)[i] = (float)v; break;
    case DLA_F64: ((double *)p)[i] = v; break;
    case DLA_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    default: ((uint8_t *)p)[i] = (uint8_t)v; break;
    }
}

/* v converted to t as the ABI says: truncation toward zero, saturation,
 * NaN to 0, bool as v != 0. */
static double convert(dla_dtype t, double v)
{
    switch (t) {
    case DLA_F32: return (float)v;
    case DLA_F64: return v;
    case DLA_I32:
        return isnan(v)             ? 0
               : v >= 2147483647.0  ? 2147483647.0
               : v <= -2147483648.0 ? -2147483648.0
                                    : trunc(v);
    case DLA_U8: return isnan(v) || v <= 0 ? 0 : v >= 255 ? 255 : trunc(v);
    default: return v != 0;
    }
}

/* ------------------------------------------------------------- devices */

static int supports(dla_device *dev, dla_kernel kernel, dla_dtype dtype, const void *member)
{
    if (member == NULL)
        return 0;
    return dla_device_table(dev)->supports == NULL ||
           dla_device_table(dev)->supports(dla_device_context(dev), kernel, dtype);
}

/* A device buffer of n elements with its host image. */
typedef struct dbuf {
    dla_device *dev;
    dla_dtype dtype;
    int64_t n;
    unsigned char *host;
    dla_mem mem;
} dbuf;

static size_t dbuf_bytes(const dbuf *b)
{
    return (size_t)(b->n > 0 ? b->n : 1) * dsize(b->dtype);
}

static void dbuf_init(dbuf *b, dla_device *dev, dla_dtype t, int64_t n)
{
    b->dev = dev, b->dtype = t, b->n = n > 0 ? n : 1;
    b->host = calloc(1, dbuf_bytes(b));
    assert_non_null(b->host);
    dla_status s =
        dla_device_table(dev)->mem_alloc(dla_device_context(dev), dbuf_bytes(b), &b->mem);
    if (s != DLA_OK)
        fail_msg("%s: mem_alloc of %zu bytes: %s", dla_device_name(dev), dbuf_bytes(b),
                 dla_last_error());
}

static void dbuf_upload(dbuf *b)
{
    dla_status s = dla_device_table(b->dev)->copy_to_device(dla_device_context(b->dev), b->mem, 0,
                                                            b->host, dbuf_bytes(b));
    if (s != DLA_OK)
        fail_msg("%s: copy_to_device: %s", dla_device_name(b->dev), dla_last_error());
}

/* The device's contents (malloc'd), after the queued work. */
static void *dbuf_download(const dbuf *b)
{
    void *out = malloc(dbuf_bytes(b));
    assert_non_null(out);
    if (dla_device_table(b->dev)->sync != NULL)
        assert_int_equal(dla_device_table(b->dev)->sync(dla_device_context(b->dev)), DLA_OK);
    dla_status s = dla_device_table(b->dev)->copy_to_host(dla_device_context(b->dev), out, b->mem,
                                                          0, dbuf_bytes(b));
    if (s != DLA_OK)
        fail_msg("%s: copy_to_host: %s", dla_device_name(b->dev), dla_last_error());
    return out;
}

static void dbuf_free(dbuf *b)
{
    dla_device_table(b->dev)->mem_free(dla_device_context(b->dev), b->mem);
    free(b->host);
}

/* Random contents in lo..hi (floats), integers in lo..hi, bools 0/1; a
 * percentage of exact zeros. */
static void dbuf_random(dbuf *b, double lo, double hi, int zero_percent)
{
    for (int64_t i = 0; i < b->n; i++) {
        double v;
        if (b->dtype == DLA_F32 || b->dtype == DLA_F64)
            v = rnd_unif(lo, hi);
        else if (b->dtype == DLA_BOOL)
            v = (double)rnd_int(0, 1);
        else
            v = (double)rnd_int((int64_t)lo, (int64_t)hi);
        put(b->dtype, b->host, i, chance(zero_percent) ? 0 : v);
    }
}

/* --------------------------------------------------------------- views */

static int64_t numel(int ndims, const int64_t *dims)
{
    int64_t n = 1;
    for (int d = 0; d < ndims; d++)
        n *= dims[d];
    return n;
}

static const char *dims_str(char *buf, size_t size, int ndims, const int64_t *dims)
{
    size_t used = 0;
    snprintf(buf, size, ndims ? "" : "scalar");
    for (int d = 0; d < ndims && used < size; d++)
        used += (size_t)snprintf(buf + used, size - used, d ? "x%lld" : "%lld", (long long)dims[d]);
    return buf;
}

static void rand_dims(int *ndims, int64_t *dims, int max_ndims, int64_t max_dim, int zero_percent)
{
    *ndims = (int)rnd_int(0, max_ndims);
    for (int d = 0; d < *ndims; d++)
        dims[d] = chance(zero_percent) ? 0 : chance(25) ? 1 : rnd_int(1, max_dim);
}

/* A view of dims laid out in a random dim order with gaps and an offset;
 * with broadcast, some dims get stride 0. Returns the elements the buffer
 * needs. Without broadcast the view never repeats an element. */
static int64_t make_view(dla_view *v, dla_dtype t, int ndims, const int64_t *dims, int broadcast)
{
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    v->dtype = t;
    v->ndims = ndims;
    int order[DLA_MAX_DIMS];
    for (int d = 0; d < ndims; d++)
        order[d] = d;
    for (int d = ndims - 1; d > 0; d--) {
        int j = (int)rnd_int(0, d), tmp = order[d];
        order[d] = order[j], order[j] = tmp;
    }
    int64_t s = chance(20) ? 2 : 1;
    for (int k = 0; k < ndims; k++) {
        int d = order[k];
        v->dims[d] = dims[d];
        if (broadcast && chance(30)) {
            v->strides[d] = 0;
            continue;
        }
        v->strides[d] = s;
        s = s * dims[d] + (chance(30) ? rnd_int(1, 3) : 0);
        if (s == 0)
            s = 1;
    }
    v->offset = chance(50) ? rnd_int(1, 7) : 0;
    int64_t extent = v->offset + 1;
    if (numel(ndims, dims) > 0)
        for (int d = 0; d < ndims; d++)
            extent += (dims[d] - 1) * v->strides[d];
    return extent;
}

/* A dense column-major view. */
static int64_t dense_view(dla_view *v, dla_dtype t, int ndims, const int64_t *dims)
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
    return s;
}

static void unravel(int64_t lin, int ndims, const int64_t *dims, int64_t *idx)
{
    for (int d = 0; d < ndims; d++) {
        idx[d] = lin % dims[d];
        lin /= dims[d];
    }
}

static int64_t at(const dla_view *v, const int64_t *idx)
{
    int64_t off = v->offset;
    for (int d = 0; d < v->ndims; d++)
        off += idx[d] * v->strides[d];
    return off;
}

/* ----------------------------------------------------------- comparing */

static int close_enough(double got, double want, double abs_tol, double rel_tol)
{
    if (isnan(want) || isnan(got))
        return isnan(want) && isnan(got);
    if (isinf(want) || isinf(got))
        return got == want;
    return fabs(got - want) <= abs_tol + rel_tol * fabs(want);
}

/* Compares n elements of got with want; tol[i] (or abs_tol) bounds each. */
static void expect_buffer(dla_dtype t, const void *got, const void *want, int64_t n, double abs_tol,
                          double rel_tol, const double *tol)
{
    for (int64_t i = 0; i < n; i++) {
        double g = get(t, got, i), w = get(t, want, i);
        if (!close_enough(g, w, tol ? tol[i] : abs_tol, rel_tol))
            fail_msg("%s: element %lld is %.9g, expected %.9g", what, (long long)i, g, w);
    }
}

static void expect_ok(dla_status s)
{
    if (s != DLA_OK)
        fail_msg("%s: status %d: %s", what, (int)s, dla_last_error());
}

static double rel_tol_of(dla_dtype t)
{
    return t == DLA_F32 ? 2e-5 : 1e-12;
}

/* ----------------------------------------------------------- the setup */

static int group_setup(void **state)
{
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

static void have_devices(void)
{
    if (n_devices < 1)
        fail_msg("no device loaded: %s", dla_last_error());
    for (int i = 0; i < n_devices; i++)
        assert_non_null(devices[i]);
}

/* ================================================================ tests */

static void every_device_describes_itself_and_has_the_required_members(void **state)
{
    have_devices();
    int have_cpu = 0;
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        const dla_plugin *t = dla_device_table(dev);
        assert_true(strlen(dla_device_description(dev)) > 0);
        assert_true(strlen(dla_device_type(dev)) > 0);
        assert_non_null(t->mem_alloc);
        assert_non_null(t->mem_free);
        assert_non_null(t->copy_to_device);
        assert_non_null(t->copy_to_host);
        have_cpu |= strcmp(dla_device_plugin(dev), "cpu") == 0;
    }
    assert_true(have_cpu);
}

static void fill_sets_every_element_of_a_strided_view_and_nothing_else(void **state)
{
    have_devices();
    static const double values[] = {3.75, -2.5, 0.0, 1.0, 300.7, -1e10};
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        for (dla_dtype t = 0; t < DLA_DTYPE_COUNT; t++) {
            if (!supports(dev, DLA_KERNEL_FILL, t, dla_device_table(dev)->fill))
                continue;
            for (int c = 0; c < 40; c++) {
                int nd;
                int64_t dims[DLA_MAX_DIMS];
                rand_dims(&nd, dims, 4, 9, 3);
                dla_view y;
                dbuf b;
                dbuf_init(&b, dev, t, make_view(&y, t, nd, dims, 0));
                dbuf_random(&b, -100, 100, 10);
                dbuf_upload(&b);
                y.mem = b.mem;
                double value = values[c % 6];
                char ds[64];
                snprintf(what, sizeof what, "%s fill %s %g dims %s case %d", dla_device_name(dev),
                         dname(t), value, dims_str(ds, sizeof ds, nd, dims), c);
                expect_ok(dla_device_table(dev)->fill(dla_device_context(dev), &y, value));
                int64_t idx[DLA_MAX_DIMS];
                for (int64_t k = 0; k < numel(nd, dims); k++) {
                    unravel(k, nd, dims, idx);
                    put(t, b.host, at(&y, idx), convert(t, value));
                }
                void *got = dbuf_download(&b);
                expect_buffer(t, got, b.host, b.n, 0, 0, NULL);
                free(got);
                dbuf_free(&b);
            }
        }
    }
}

static void strided_copy_copies_views_of_any_layout_in_every_dtype(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        for (dla_dtype t = 0; t < DLA_DTYPE_COUNT; t++) {
            if (!supports(dev, DLA_KERNEL_STRIDED_COPY, t, dla_device_table(dev)->strided_copy))
                continue;
            for (int c = 0; c < 60; c++) {
                int nd;
                int64_t dims[DLA_MAX_DIMS];
                rand_dims(&nd, dims, 5, 8, 3);
                if (c == 0) /* large and dense: the parallel, flat path */
                    nd = 2, dims[0] = 300, dims[1] = 700;
                dla_view y, x;
                dbuf by, bx;
                dbuf_init(&by, dev, t,
                          c == 0 ? dense_view(&y, t, nd, dims) : make_view(&y, t, nd, dims, 0));
                dbuf_init(&bx, dev, t,
                          c == 0 ? dense_view(&x, t, nd, dims) : make_view(&x, t, nd, dims, 1));
                dbuf_random(&by, -50, 50, 0);
                dbuf_random(&bx, -50, 50, 0);
                dbuf_upload(&by);
                dbuf_upload(&bx);
                y.mem = by.mem, x.mem = bx.mem;
                char ds[64];
                snprintf(what, sizeof what, "%s strided_copy %s dims %s case %d",
                         dla_device_name(dev), dname(t), dims_str(ds, sizeof ds, nd, dims), c);
                expect_ok(dla_device_table(dev)->strided_copy(dla_device_context(dev), &y, &x));
                int64_t idx[DLA_MAX_DIMS];
                for (int64_t k = 0; k < numel(nd, dims); k++) {
                    unravel(k, nd, dims, idx);
                    put(t, by.host, at(&y, idx), get(t, bx.host, at(&x, idx)));
                }
                void *got = dbuf_download(&by);
                expect_buffer(t, got, by.host, by.n, 0, 0, NULL);
                free(got);
                dbuf_free(&by);
                dbuf_free(&bx);
            }
        }
    }
}

static void cast_converts_between_every_pair_of_dtypes(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        for (dla_dtype from = 0; from < DLA_DTYPE_COUNT; from++)
            for (dla_dtype to = 0; to < DLA_DTYPE_COUNT; to++) {
                if (!supports(dev, DLA_KERNEL_CAST, to, dla_device_table(dev)->cast) ||
                    !supports(dev, DLA_KERNEL_CAST, from, dla_device_table(dev)->cast))
                    continue;
                for (int c = 0; c < 12; c++) {
                    int nd;
                    int64_t dims[DLA_MAX_DIMS];
                    rand_dims(&nd, dims, 4, 8, 3);
                    dla_view y, x;
                    dbuf by, bx;
                    dbuf_init(&by, dev, to, make_view(&y, to, nd, dims, 0));
                    dbuf_init(&bx, dev, from, make_view(&x, from, nd, dims, 1));
                    dbuf_random(&by, 0, 100, 0);
                    /* Mostly in the target's range, fractions and negatives
                     * included; a few out of range to see saturation. */
                    double hi = to == DLA_U8 ? 255.9 : 1e6, lo = to == DLA_U8 ? -3 : -1e6;
                    if (c % 4 == 3)
                        lo = -1e12, hi = 1e12;
                    if (from == DLA_I32 && c % 4 == 3)
                        lo = -2147483647.0, hi = 2147483647.0;
                    if (from == DLA_U8)
                        lo = 0, hi = 255;
                    dbuf_random(&bx, lo, hi, 20);
                    if ((from == DLA_F32 || from == DLA_F64) && c % 4 == 2)
                        put(from, bx.host, rnd_int(0, bx.n - 1), NAN);
                    dbuf_upload(&by);
                    dbuf_upload(&bx);
                    y.mem = by.mem, x.mem = bx.mem;
                    char ds[64];
                    snprintf(what, sizeof what, "%s cast %s -> %s dims %s case %d",
                             dla_device_name(dev), dname(from), dname(to),
                             dims_str(ds, sizeof ds, nd, dims), c);
                    expect_ok(dla_device_table(dev)->cast(dla_device_context(dev), &y, &x));
                    int64_t idx[DLA_MAX_DIMS];
                    for (int64_t k = 0; k < numel(nd, dims); k++) {
                        unravel(k, nd, dims, idx);
                        put(to, by.host, at(&y, idx), convert(to, get(from, bx.host, at(&x, idx))));
                    }
                    void *got = dbuf_download(&by);
                    expect_buffer(to, got, by.host, by.n, 0, 0, NULL);
                    free(got);
                    dbuf_free(&by);
                    dbuf_free(&bx);
                }
            }
    }
}

/* plugin.h: fill converts as cast does, so NaN is 0 in int32 and uint8 and
 * 1 in bool (value != 0, C's conversion; the header once said 0), on
 * every device with the kernels, and both agree. */
static void fill_and_cast_send_nan_to_0_in_integers_and_1_in_bool(void **state)
{
    have_devices();
    static const dla_dtype to[] = {DLA_I32, DLA_U8, DLA_BOOL};
    static const double want[] = {0, 0, 1};
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        for (int k = 0; k < 3; k++) {
            const dla_dtype t = to[k];
            const int64_t dims[] = {3};
            dla_view y;
            dbuf b;
            if (supports(dev, DLA_KERNEL_FILL, t, dla_device_table(dev)->fill)) {
                for (int sign = 0; sign < 2; sign++) {
                    dbuf_init(&b, dev, t, dense_view(&y, t, 1, dims));
                    y.mem = b.mem;
                    snprintf(what, sizeof what, "%s fill %s with %sNaN", dla_device_name(dev), dname(t),
                             sign ? "-" : "");
                    expect_ok(dla_device_table(dev)->fill(dla_device_context(dev), &y, sign ? -NAN : NAN));
                    unsigned char *got = dbuf_download(&b);
                    for (int64_t e = 0; e < 3; e++)
                        if (get(t, got, e) != want[k])
                            fail_msg("%s: element %lld is %g, expected %g", what, (long long)e,
                                     get(t, got, e), want[k]);
                    free(got);
                    dbuf_free(&b);
                }
            }
            if (!supports(dev, DLA_KERNEL_CAST, t, dla_device_table(dev)->cast) ||
                !supports(dev, DLA_KERNEL_CAST, DLA_F32, dla_device_table(dev)->cast))
                continue;
            dla_view x;
            dbuf bx;
            dbuf_init(&b, dev, t, dense_view(&y, t, 1, dims));
            dbuf_init(&bx, dev, DLA_F32, dense_view(&x, DLA_F32, 1, dims));
            put(DLA_F32, bx.host, 0, NAN);
            put(DLA_F32, bx.host, 1, -NAN);
            put(DLA_F32, bx.host, 2, NAN);
            dbuf_upload(&b);
            dbuf_upload(&bx);
            y.mem = b.mem, x.mem = bx.mem;
            snprintf(what, sizeof what, "%s cast single NaN -> %s", dla_device_name(dev), dname(t));
            expect_ok(dla_device_table(dev)->cast(dla_device_context(dev), &y, &x));
            unsigned char *got = dbuf_download(&b);
            for (int64_t e = 0; e < 3; e++)
                if (get(t, got, e) != want[k])
                    fail_msg("%s: element %lld is %g, expected %g", what, (long long)e,
                             get(t, got, e), want[k]);
            free(got);
            dbuf_free(&b);
            dbuf_free(&bx);
        }
    }
}

/* plugin.h: alpha is rounded to the dtype before use, so a single
 * leaky_relu is (float)alpha * x rounded once, exactly, and a single step
 * compares x with (float)alpha. The values are ones where computing with
 * the double alpha gives other bits: -1.2857143f * 0.1 rounds to
 * -0.128571421 with the double and to -0.128571436 with 0.1f; step's x is
 * 0.1f itself, above the double 0.1 but not above 0.1f. */
static void single_unary_ops_round_alpha_to_float_first(void **state)
{
    have_devices();
    static const float xs[] = {-1.2857142686843872f, 0.1f, -3.0f, 2.5f};
    const float al = (float)0.1;
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        if (!supports(dev, DLA_KERNEL_UNARY, DLA_F32, dla_device_table(dev)->unary) || dla_device_abi_minor(dev) < 1)
            continue;
        for (int which = 0; which < 2; which++) {
            const int64_t dims[] = {4};
            dla_unary_args a = {.struct_size = sizeof a,
                                .op = which ? DLA_UNARY_STEP : DLA_UNARY_LEAKY_RELU,
                                .alpha = 0.1};
            dbuf by, bx;
            dbuf_init(&by, dev, DLA_F32, dense_view(&a.y, DLA_F32, 1, dims));
            dbuf_init(&bx, dev, DLA_F32, dense_view(&a.x, DLA_F32, 1, dims));
            memcpy(bx.host, xs, sizeof xs);
            dbuf_upload(&by);
            dbuf_upload(&bx);
            a.y.mem = by.mem, a.x.mem = bx.mem;
            snprintf(what, sizeof what, "%s unary %s single alpha 0.1", dla_device_name(dev),
                     which ? "step" : "leaky_relu");
            expect_ok(dla_device_table(dev)->unary(dla_device_context(dev), &a));
            float got[4];
            void *raw = dbuf_download(&by);
            memcpy(got, raw, sizeof got);
            free(raw);
            for (int e = 0; e < 4; e++) {
                const float x = xs[e];
                const float p = al * x; /* one float product, one rounding */
                const float w = which ? (x > al ? 1.0f : 0.0f) : (x > 0 ? x : p);
                if (memcmp(&got[e], &w, sizeof w) != 0)
                    fail_msg("%s: element %d (x %.9g) is %.9g, expected %.9g", what, e, x,
                             got[e], w);
            }
            dbuf_free(&by);
            dbuf_free(&bx);
        }
    }
}

static void memory_copies_honour_byte_offsets_in_both_directions(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        const dla_plugin *t = dla_device_table(dev);
        snprintf(what, sizeof what, "%s memory copies", dla_device_name(dev));
        enum { N = 3 << 19 }; /* 1.5 MiB: large enough to be split */
        unsigned char *src = malloc(N), *back = malloc(N);
        assert_non_null(src);
        assert_non_null(back);
        for (int k = 0; k < N; k++)
            src[k] = (unsigned char)rnd();
        dla_mem a, b;
        expect_ok(t->mem_alloc(dla_device_context(dev), N, &a));
        expect_ok(t->mem_alloc(dla_device_context(dev), N, &b));
        expect_ok(t->copy_to_device(dla_device_context(dev), a, 0, src, N));
        /* Overwrite 100 bytes at byte 13 with the tail of src. */
        expect_ok(t->copy_to_device(dla_device_context(dev), a, 13, src + N - 100, 100));
        memcpy(src + 13, src + N - 100, 100);
        expect_ok(t->copy_to_host(dla_device_context(dev), back, a, 0, N));
        assert_memory_equal(back, src, N);
        expect_ok(t->copy_to_host(dla_device_context(dev), back, a, 7, 1000));
        assert_memory_equal(back, src + 7, 1000);
        if (t->copy_on_device != NULL) {
            expect_ok(t->copy_to_device(dla_device_context(dev), b, 0, src, N));
            expect_ok(
                t->copy_on_device(dla_device_context(dev), b, 5, a, 1 << 19, N - (1 << 19) - 5));
            memmove(src + 5, src + (1 << 19), N - (1 << 19) - 5);
            expect_ok(t->copy_to_host(dla_device_context(dev), back, b, 0, N));
            assert_memory_equal(back, src, N);
        }
        t->mem_free(dla_device_context(dev), a);
        t->mem_free(dla_device_context(dev), b);
        free(src);
        free(back);
    }
}

/* ---------------------------------------------------------- elementwise */

static const char *const unary_names[] = {
    "neg",  "exp",  "log",        "sqrt", "abs",  "sin",  "cos",        "tanh",  "sigmoid", "relu",
    "affine", "erf", "sign", "pows", "leaky_relu", "elu", "step", "reciprocal", "square"};
_Static_assert(sizeof unary_names / sizeof unary_names[0] == DLA_UNARY_COUNT, "unary names");

static double unary_ref(dla_unary_op op, double x, double alpha, double beta)
{
    switch (op) {
    case DLA_UNARY_NEG: return -x;
    case DLA_UNARY_EXP: return exp(x);
    case DLA_UNARY_LOG: return log(x);
    case DLA_UNARY_SQRT: return sqrt(x);
    case DLA_UNARY_ABS: return fabs(x);
    case DLA_UNARY_SIN: return sin(x);
    case DLA_UNARY_COS: return cos(x);
    case DLA_UNARY_TANH: return tanh(x);
    case DLA_UNARY_SIGMOID: return 1 / (1 + exp(-x));
    case DLA_UNARY_RELU: return x > 0 ? x : 0;
    case DLA_UNARY_AFFINE: return x * alpha + beta;
    case DLA_UNARY_ERF: return erf(x);
    case DLA_UNARY_SIGN: return isnan(x) ? x : x > 0 ? 1 : x < 0 ? -1 : 0;
    case DLA_UNARY_POWS: return pow(x, alpha);
    case DLA_UNARY_LEAKY_RELU: return x > 0 ? x : alpha * x;
    case DLA_UNARY_ELU: return x > 0 ? x : alpha * (exp(x) - 1);
    case DLA_UNARY_STEP: return x > alpha ? 1 : 0;
    case DLA_UNARY_RECIPROCAL: return 1 / x;
    default: return x * x;
    }
}

static void unary_ops_match_reference_on_strided_and_in_place_views(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        for (dla_dtype t = DLA_F32; t <= DLA_F64; t++) {
            if (!supports(dev, DLA_KERNEL_UNARY, t, dla_device_table(dev)->unary))
                continue;
            for (dla_unary_op op = 0; op < DLA_UNARY_COUNT; op++)
                for (int c = 0; c < 14; c++) {
                    int nd;
                    int64_t dims[DLA_MAX_DIMS];
                    rand_dims(&nd, dims, 4, 9, 3);
                    if (c == 0) /* large and dense */
                        nd = 1, dims[0] = 70000;
                    const int in_place = c % 5 == 4;
                    dla_unary_args a = {.struct_size = sizeof a, .op = op};
                    a.alpha = rnd_unif(-2, 2), a.beta = rnd_unif(-1, 1);
                    dbuf by, bx;
                    dbuf_init(&by, dev, t,
                              c == 0 ? dense_view(&a.y, t, nd, dims)
                                     : make_view(&a.y, t, nd, dims, 0));
                    if (!in_place)
                        dbuf_init(&bx, dev, t,
                                  c == 0 ? dense_view(&a.x, t, nd, dims)
                                         : make_view(&a.x, t, nd, dims, 1));
                    dbuf *src = in_place ? &by : &bx;
                    const int positive =
                        op == DLA_UNARY_LOG || op == DLA_UNARY_SQRT || op == DLA_UNARY_POWS;
                    /* Integer powers of negative numbers; step thresholds
                     * that some elements equal exactly. */
                    if (op == DLA_UNARY_POWS && c % 3 == 1)
                        a.alpha = (double)rnd_int(-2, 3);
                    if (op == DLA_UNARY_STEP && c % 3 == 1)
                        a.alpha = 0;
                    dbuf_random(&by, -3, 3, 5);
                    if (!in_place)
                        dbuf_random(&bx, positive ? 0.05 : -3, 3, positive ? 0 : 5);
                    else if (positive)
                        dbuf_random(&by, 0.05, 3, 0);
                    if (op == DLA_UNARY_POWS && c % 3 == 1) /* any sign for whole powers */
                        dbuf_random(in_place ? &by : &bx, -3, 3, 10);
                    if (c % 4 == 3) /* NaN goes through as each op says */
                        put(t, src->host, rnd_int(0, src->n - 1), NAN);
                    if (in_place)
                        a.x = a.y;
                    dbuf_upload(&by);
                    if (!in_place)
                        dbuf_upload(&bx);
                    a.y.mem = by.mem, a.x.mem = src->mem;
                    char ds[64];
                    snprintf(what, sizeof what, "%s unary %s %s dims %s%s case %d",
                             dla_device_name(dev), unary_names[op], dname(t),
                             dims_str(ds, sizeof ds, nd, dims), in_place ? " in place" : "", c);
                    expect_ok(dla_device_table(dev)->unary(dla_device_context(dev), &a));
                    /* Both reference inputs are read before any output. */
                    unsigned char *orig = malloc(dbuf_bytes(src));
                    memcpy(orig, src->host, dbuf_bytes(src));
                    const double al = t == DLA_F32 ? (float)a.alpha : a.alpha;
                    const double be = t == DLA_F32 ? (float)a.beta : a.beta;
                    int64_t idx[DLA_MAX_DIMS];
                    for (int64_t k = 0; k < numel(nd, dims); k++) {
                        unravel(k, nd, dims, idx);
                        double x = get(t, orig, at(&a.x, idx));
                        put(t, by.host, at(&a.y, idx), unary_ref(op, x, al, be));
                    }
                    void *got = dbuf_download(&by);
                    expect_buffer(t, got, by.host, by.n, t == DLA_F32 ? 1e-6 : 1e-14, rel_tol_of(t),
                                  NULL);
                    free(got);
                    free(orig);
                    dbuf_free(&by);
                    if (!in_place)
                        dbuf_free(&bx);
                }
        }
    }
}

static const char *const binary_names[] = {"add", "sub", "mul", "div", "max", "min", "pow",
                                           "eq",  "ne",  "lt",  "le",  "gt",  "ge"};
_Static_assert(sizeof binary_names / sizeof binary_names[0] == DLA_BINARY_COUNT, "binary names");

static int is_comparison(dla_binary_op op)
{
    return op >= DLA_BINARY_EQ;
}

static double binary_ref(dla_binary_op op, double a, double b)
{
    switch (op) {
    case DLA_BINARY_ADD: return a + b;
    case DLA_BINARY_SUB: return a - b;
    case DLA_BINARY_MUL: return a * b;
    case DLA_BINARY_DIV: return a / b;
    case DLA_BINARY_MAX: return isnan(b) ? a : isnan(a) ? b : a > b ? a : b;
    case DLA_BINARY_MIN: return isnan(b) ? a : isnan(a) ? b : a < b ? a : b;
    case DLA_BINARY_POW: return pow(a, b);
    /* NaN is unordered: every comparison with it is false but "not equal". */
    case DLA_BINARY_EQ: return !isnan(a) && !isnan(b) && a == b;
    case DLA_BINARY_NE: return isnan(a) || isnan(b) || a != b;
    case DLA_BINARY_LT: return !isnan(a) && !isnan(b) && a < b;
    case DLA_BINARY_LE: return !isnan(a) && !isnan(b) && a <= b;
    case DLA_BINARY_GT: return !isnan(a) && !isnan(b) && a > b;
    default: return !isnan(a) && !isnan(b) && a >= b;
    }
}

/* One binary case: z = op(a, b) with the given layouts; alias 1 makes z
 * and a one view (not for comparisons, whose z is logical); bcast_b 1
 * repeats a row of b down dim 0, 2 a column of b along dim 1. Comparisons
 * get small whole numbers, so ties are common, and a few NaNs. */
static void binary_case(dla_device *dev, dla_dtype t, dla_binary_op op, int nd, const int64_t *dims,
                        int dense, int alias, int bcast_b, int c)
{
    const int cmp = is_comparison(op);
    const dla_dtype zt = cmp ? DLA_BOOL : t;
    alias &= !cmp;
    dla_binary_args args = {.struct_size = sizeof args, .op = op};
    dbuf bz, ba, bb;
    dbuf_init(&bz, dev, zt,
              dense ? dense_view(&args.z, zt, nd, dims) : make_view(&args.z, zt, nd, dims, 0));
    if (!alias)
        dbuf_init(&ba, dev, t,
                  dense ? dense_view(&args.a, t, nd, dims) : make_view(&args.a, t, nd, dims, 1));
    int64_t nb;
    if (bcast_b == 1) { /* b is one row, repeated down dim 0 */
        nb = dense_view(&args.b, t, nd, dims);
        args.b.strides[0] = 0;
        for (int d = 1; d < nd; d++)
            args.b.strides[d] = d == 1 ? 1 : args.b.strides[d - 1] * dims[d - 1];
    } else if (bcast_b == 2) { /* b is one column, repeated along dim 1 */
        nb = dense_view(&args.b, t, nd, dims);
        args.b.strides[1] = 0;
    } else {
        nb = dense ? dense_view(&args.b, t, nd, dims) : make_view(&args.b, t, nd, dims, 1);
    }
    dbuf_init(&bb, dev, t, nb);
    dbuf *pa = alias ? &bz : &ba;
    const int pos_a = op == DLA_BINARY_POW;
    dbuf_random(&bz, pos_a ? 0.1 : -3, 3, 0);
    if (!alias)
        dbuf_random(&ba, pos_a ? 0.1 : -3, 3, 0);
    dbuf_random(&bb, -3, 3, 0);
    if (op == DLA_BINARY_DIV) /* away from 0 */
        for (int64_t k = 0; k < bb.n; k++)
            put(t, bb.host, k, get(t, bb.host, k) + (get(t, bb.host, k) < 0 ? -0.5 : 0.5));
    if (cmp) {
        for (int64_t k = 0; k < pa->n; k++)
            put(t, pa->host, k, round(get(t, pa->host, k)));
        for (int64_t k = 0; k < bb.n; k++)
            put(t, bb.host, k, round(get(t, bb.host, k)));
    }
    if ((op == DLA_BINARY_MAX || op == DLA_BINARY_MIN || cmp) && c % 3 == 1) {
        put(t, pa->host, rnd_int(0, pa->n - 1), NAN);
        put(t, bb.host, rnd_int(0, bb.n - 1), NAN);
    }
    if (alias)
        args.a = args.z;
    dbuf_upload(&bz);
    if (!alias)
        dbuf_upload(&ba);
    dbuf_upload(&bb);
    args.z.mem = bz.mem, args.a.mem = pa->mem, args.b.mem = bb.mem;
    char ds[64];
    snprintf(what, sizeof what, "%s binary %s %s dims %s%s%s%s case %d", dla_device_name(dev),
             binary_names[op], dname(t), dims_str(ds, sizeof ds, nd, dims), dense ? " dense" : "",
             alias ? " z=a" : "",
             bcast_b == 1   ? " b row-broadcast"
             : bcast_b == 2 ? " b column-broadcast"
                            : "",
             c);
    expect_ok(dla_device_table(dev)->binary(dla_device_context(dev), &args));
    unsigned char *orig_a = malloc(dbuf_bytes(pa));
    memcpy(orig_a, pa->host, dbuf_bytes(pa));
    int64_t idx[DLA_MAX_DIMS];
    for (int64_t k = 0; k < numel(nd, dims); k++) {
        unravel(k, nd, dims, idx);
        double a = get(t, orig_a, at(&args.a, idx)), b = get(t, bb.host, at(&args.b, idx));
        put(zt, bz.host, at(&args.z, idx), binary_ref(op, a, b));
    }
    void *got = dbuf_download(&bz);
    expect_buffer(zt, got, bz.host, bz.n, t == DLA_F32 ? 1e-6 : 1e-14, rel_tol_of(t), NULL);
    free(got);
    free(orig_a);
    dbuf_free(&bz);
    if (!alias)
        dbuf_free(&ba);
    dbuf_free(&bb);
}

static void binary_ops_match_reference_with_broadcasting_and_strides(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        for (dla_dtype t = DLA_F32; t <= DLA_F64; t++) {
            if (!supports(dev, DLA_KERNEL_BINARY, t, dla_device_table(dev)->binary))
                continue;
            for (dla_binary_op op = 0; op < DLA_BINARY_COUNT; op++)
                for (int c = 0; c < 24; c++) {
                    int nd;
                    int64_t dims[DLA_MAX_DIMS];
                    rand_dims(&nd, dims, 5, 7, 3);
                    binary_case(dev, t, op, nd, dims, c % 8 == 0, c % 6 == 5, 0, c);
                }
        }
    }
}

static void binary_ops_on_large_operands_take_the_fast_paths_correctly(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        for (dla_dtype t = DLA_F32; t <= DLA_F64; t++) {
            if (!supports(dev, DLA_KERNEL_BINARY, t, dla_device_table(dev)->binary))
                continue;
            const int64_t flat[] = {100003};
            const int64_t grid[] = {513, 257};
            const int64_t tall[] = {3, 70001}, wide[] = {70001, 3};
            binary_case(dev, t, DLA_BINARY_ADD, 1, flat, 1, 0, 0, 0);
            binary_case(dev, t, DLA_BINARY_MUL, 1, flat, 1, 1, 0, 1);
            binary_case(dev, t, DLA_BINARY_ADD, 2, grid, 1, 0, 1, 2);
            binary_case(dev, t, DLA_BINARY_SUB, 2, grid, 0, 0, 0, 3);
            binary_case(dev, t, DLA_BINARY_ADD, 2, tall, 1, 0, 1, 4);
            binary_case(dev, t, DLA_BINARY_DIV, 2, wide, 1, 0, 2, 5);
            binary_case(dev, t, DLA_BINARY_EQ, 1, flat, 1, 0, 0, 6);
            binary_case(dev, t, DLA_BINARY_LT, 2, grid, 1, 0, 1, 7);
            binary_case(dev, t, DLA_BINARY_GE, 2, tall, 1, 0, 1, 8);
            binary_case(dev, t, DLA_BINARY_NE, 2, wide, 1, 0, 2, 9);
            binary_case(dev, t, DLA_BINARY_LE, 2, grid, 0, 0, 0, 10);
        }
    }
}

/* ----------------------------------------------------------- reductions */

static const char *const reduce_names[] = {"sum", "mean", "max", "min"};
_Static_assert(sizeof reduce_names / sizeof reduce_names[0] == DLA_REDUCE_COUNT, "reduce names");

/* One reduction of x (dims xd) to y (dims yd); values: 0 uniform, 1 small
 * integers (ties), 2 small integers with NaNs, 3 rising along memory for
 * max and falling for min (the winner comes last). */
static void reduce_case(dla_device *dev, dla_dtype t, dla_reduce_op op, int nd, const int64_t *xd,
                        const int64_t *yd, int dense, int want_index, int values, int c)
{
    dla_reduce_args args = {.struct_size = sizeof args, .op = op};
    dbuf bx, by, bi;
    dbuf_init(&bx, dev, t,
              dense ? dense_view(&args.x, t, nd, xd) : make_view(&args.x, t, nd, xd, 1));
    dbuf_init(&by, dev, t,
              dense ? dense_view(&args.y, t, nd, yd) : make_view(&args.y, t, nd, yd, 0));
    dbuf_random(&by, -9, 9, 0);
    if (values == 0) {
        dbuf_random(&bx, -2, 2, 0);
    } else if (values == 3) {
        for (int64_t k = 0; k < bx.n; k++)
            put(t, bx.host, k, (op == DLA_REDUCE_MIN ? -1.0 : 1.0) * (double)k / (double)bx.n);
    } else {
        for (int64_t k = 0; k < bx.n; k++)
            put(t, bx.host, k, (double)rnd_int(-3, 3));
        if (values == 2)
            for (int64_t k = 0; k < bx.n; k++)
                if (chance(3))
                    put(t, bx.host, k, NAN);
    }
    dbuf_upload(&bx);
    dbuf_upload(&by);
    args.x.mem = bx.mem, args.y.mem = by.mem;
    if (want_index) {
        dbuf_init(&bi, dev, DLA_I32, make_view(&args.index, DLA_I32, nd, yd, 0));
        dbuf_random(&bi, -5, -1, 0);
        dbuf_upload(&bi);
        args.index.mem = bi.mem;
    }
    char dx[64], dy[64];
    snprintf(what, sizeof what, "%s reduce %s %s x %s -> y %s%s%s case %d", dla_device_name(dev),
             reduce_names[op], dname(t), dims_str(dx, sizeof dx, nd, xd),
             dims_str(dy, sizeof dy, nd, yd), want_index ? " with index" : "",
             values == 2   ? " with NaN"
             : values == 1 ? " with ties"
             : values == 3 ? " winner last"
                           : "",
             c);
    expect_ok(dla_device_table(dev)->reduce(dla_device_context(dev), &args));

    /* Reference: walk x in column-major order, which visits each output's
     * reduced block in increasing position. */
    const int64_t ny = numel(nd, yd), nx = numel(nd, xd);
    double *acc = calloc((size_t)(ny > 0 ? ny : 1), sizeof *acc);
    double *mag = calloc((size_t)(ny > 0 ? ny : 1), sizeof *mag);
    int64_t *pos = malloc((size_t)(ny > 0 ? ny : 1) * sizeof *pos);
    for (int64_t k = 0; k < ny; k++)
        pos[k] = -1;
    int64_t nred = 1;
    for (int d = 0; d < nd; d++)
        if (yd[d] != xd[d])
            nred *= xd[d];
    int64_t idx[DLA_MAX_DIMS], yidx[DLA_MAX_DIMS];
    for (int64_t k = 0; k < nx; k++) {
        unravel(k, nd, xd, idx);
        int64_t yl = 0, ys = 1, p = 0, ps = 1;
        for (int d = 0; d < nd; d++) {
            yidx[d] = yd[d] == xd[d] ? idx[d] : 0;
            yl += yidx[d] * ys;
            ys *= yd[d];
            if (yd[d] != xd[d])
                p += idx[d] * ps, ps *= xd[d];
        }
        const double v = get(t, bx.host, at(&args.x, idx));
        if (op == DLA_REDUCE_SUM || op == DLA_REDUCE_MEAN) {
            acc[yl] += v;
            mag[yl] += fabs(v);
        } else if (pos[yl] < 0 ||
                   (!isnan(acc[yl]) &&
                    (isnan(v) || (op == DLA_REDUCE_MAX ? v > acc[yl] : v < acc[yl])))) {
            acc[yl] = v;
            pos[yl] = p;
        }
    }
    double *tol = calloc((size_t)by.n, sizeof *tol);
    unsigned char *want_idx = want_index ? malloc(dbuf_bytes(&bi)) : NULL;
    if (want_index)
        memcpy(want_idx, bi.host, dbuf_bytes(&bi));
    for (int64_t k = 0; k < ny; k++) {
        unravel(k, nd, yd, yidx);
        double v = acc[k], m = mag[k];
        if (op == DLA_REDUCE_MEAN)
            v /= (double)nred, m /= (double)nred;
        const int64_t o = at(&args.y, yidx);
        put(t, by.host, o, v);
        tol[o] = (t == DLA_F32 ? 1e-5 : 1e-12) * m;
        if (want_index)
            put(DLA_I32, want_idx, at(&args.index, yidx), (double)pos[k]);
    }
    void *got = dbuf_download(&by);
    expect_buffer(t, got, by.host, by.n, 0, t == DLA_F32 ? 1e-6 : 1e-14, tol);
    free(got);
    if (want_index) {
        char *w = what + strlen(what);
        snprintf(w, sizeof what - (size_t)(w - what), " (index)");
        got = dbuf_download(&bi);
        expect_buffer(DLA_I32, got, want_idx, bi.n, 0, 0, NULL);
        free(got);
        free(want_idx);
        dbuf_free(&bi);
    }
    free(tol);
    free(acc);
    free(mag);
    free(pos);
    dbuf_free(&bx);
    dbuf_free(&by);
}

static void reductions_match_reference_over_random_dims(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        for (dla_dtype t = DLA_F32; t <= DLA_F64; t++) {
            if (!supports(dev, DLA_KERNEL_REDUCE, t, dla_device_table(dev)->reduce))
                continue;
            for (dla_reduce_op op = 0; op < DLA_REDUCE_COUNT; op++)
                for (int c = 0; c < 40; c++) {
                    const int extreme = op == DLA_REDUCE_MAX || op == DLA_REDUCE_MIN;
                    int nd;
                    int64_t xd[DLA_MAX_DIMS], yd[DLA_MAX_DIMS];
                    rand_dims(&nd, xd, 4, 14, extreme ? 0 : 3);
                    for (int d = 0; d < nd; d++)
                        yd[d] = chance(50) ? 1 : xd[d];
                    reduce_case(dev, t, op, nd, xd, yd, c % 7 == 0, extreme && c % 2 == 0,
                                extreme ? c % 3 : 0, c);
                }
        }
    }
}

static void reductions_of_large_tensors_use_every_layout_correctly(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        for (dla_dtype t = DLA_F32; t <= DLA_F64; t++) {
            if (!supports(dev, DLA_KERNEL_REDUCE, t, dla_device_table(dev)->reduce))
                continue;
            const int64_t full_x[] = {1 << 20}, full_y[] = {1};
            const int64_t mat_x[] = {1024, 300}, rows_y[] = {1, 300}, cols_y[] = {1024, 1};
            const int64_t few_x[] = {3, 200000}, few_y[] = {3, 1};
            const int64_t mid_x[] = {40, 50, 60}, mid_y[] = {1, 50, 1};
            for (dla_reduce_op op = 0; op < DLA_REDUCE_COUNT; op++) {
                const int ex = op == DLA_REDUCE_MAX || op == DLA_REDUCE_MIN;
                reduce_case(dev, t, op, 1, full_x, full_y, 1, ex, ex ? 1 : 0, 0);
                reduce_case(dev, t, op, 2, mat_x, rows_y, 1, ex, ex ? 1 : 0, 1);
                reduce_case(dev, t, op, 2, mat_x, cols_y, 1, ex, ex ? 1 : 0, 2);
                reduce_case(dev, t, op, 2, few_x, few_y, 1, ex, ex ? 1 : 0, 3);
                reduce_case(dev, t, op, 3, mid_x, mid_y, 0, ex, ex ? 2 : 0, 4);
                if (ex) {
                    reduce_case(dev, t, op, 1, full_x, full_y, 1, 1, 2, 5);
                    reduce_case(dev, t, op, 1, full_x, full_y, 1, 1, 3, 6);
                    reduce_case(dev, t, op, 2, few_x, few_y, 1, 1, 3, 7);
                }
            }
        }
    }
}

static void reduce_max_keeps_the_first_of_ties_and_lets_nan_win(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        if (!supports(dev, DLA_KERNEL_REDUCE, DLA_F32, dla_device_table(dev)->reduce))
            continue;
        /* x = [1 5 5 NaN 2 NaN] (6x1) -> max: NaN at 3; [1 5 5 2] -> 5 at 1. */
        const float with_nan[] = {1, 5, 5, NAN, 2, NAN}, ties[] = {1, 5, 5, 2, -7, 5};
        const float *cases[] = {with_nan, ties};
        const int32_t want_pos[] = {3, 1};
        for (int c = 0; c < 2; c++) {
            dla_reduce_args args = {.struct_size = sizeof args, .op = DLA_REDUCE_MAX};
            const int64_t xd[] = {6}, yd[] = {1};
            dbuf bx, by, bi;
            dbuf_init(&bx, dev, DLA_F32, dense_view(&args.x, DLA_F32, 1, xd));
            dbuf_init(&by, dev, DLA_F32, dense_view(&args.y, DLA_F32, 1, yd));
            dbuf_init(&bi, dev, DLA_I32, dense_view(&args.index, DLA_I32, 1, yd));
            memcpy(bx.host, cases[c], sizeof with_nan);
            dbuf_upload(&bx);
            args.x.mem = bx.mem, args.y.mem = by.mem, args.index.mem = bi.mem;
            snprintf(what, sizeof what, "%s reduce max of 6 with %s", dla_device_name(dev),
                     c ? "ties" : "NaN");
            expect_ok(dla_device_table(dev)->reduce(dla_device_context(dev), &args));
            float *y = dbuf_download(&by);
            int32_t *pos = dbuf_download(&bi);
            if (c == 0)
                assert_true(isnan(y[0]));
            else
                assert_true(y[0] == 5.0f);
            assert_int_equal(pos[0], want_pos[c]);
            free(y);
            free(pos);
            dbuf_free(&bx);
            dbuf_free(&by);
            dbuf_free(&bi);
        }
    }
}

/* The cpu plugin's sum of a run of n (stride s) in the order its kernels
 * keep: one by one from 0 in double (seq), or sum.c's 16 partial sums over
 * whole blocks of 16, added in order, then the rest. */
static double sum_in_order(dla_dtype t, const void *x, int64_t o, int64_t s, int64_t n, int seq)
{
    double total = 0;
    const int64_t whole = seq ? 0 : n / 16 * 16;
    if (whole > 0)
        for (int64_t k = 0; k < 16; k++) {
            double part = 0;
            for (int64_t b = 0; b < whole; b += 16)
                part += get(t, x, o + (b + k) * s);
            total += part;
        }
    for (int64_t j = whole; j < n; j++)
        total += get(t, x, o + j * s);
    return total;
}

/* Whether a max (min) in the cpu plugin's order gives bits: the first of
 * ties, a NaN once seen. */
static double extreme_in_order(dla_dtype t, const void *x, int64_t o, int64_t s, int64_t n,
                               int is_max)
{
    double b = get(t, x, o);
    for (int64_t j = 1; j < n; j++) {
        const double v = get(t, x, o + j * s);
        if ((is_max ? v > b : v < b) || (isnan(v) && !isnan(b)))
            b = v;
    }
    return b;
}

/* The cpu plugin's reductions of short runs side by side
 * (plugins/cpu/reduce_lanes.c): a softmax's max and sum over the keys
 * (n x w, reduced along dim 1, outputs n apart), a layer normalization's
 * sums over 32 channels (runs of 32 or more: sum.c's order), and lanes
 * along a contiguous kept dim (w x n reduced along dim 2). Each must give
 * the bits of the order the generic loops keep: every output checked
 * exactly, in single and double, with ragged blocks of 16 and 256
 * outputs, signed zeros and NaN. */
static void cpu_reductions_of_short_runs_keep_the_bits_of_their_order(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        if (strcmp(dla_device_plugin(dev), "cpu") != 0)
            continue;
        const int64_t ns[] = {1, 2, 7, 16, 24, 31, 32, 33, 47, 100, 1024};
        const int64_t ws[] = {1, 15, 16, 17, 300, 3072};
        for (dla_dtype t = DLA_F32; t <= DLA_F64; t++)
            for (int c = 0; c < 40; c++) {
                const int64_t n = ns[rnd_int(0, 10)], w = ws[rnd_int(0, 5)];
                const int along_runs = c % 2 == 0; /* x n x w reduced along dim 1 */
                const dla_reduce_op op = (dla_reduce_op)(c / 2 % 4);
                if (n * w > 400000)
                    continue;
                dla_reduce_args args = {.struct_size = sizeof args, .op = op};
                const int64_t xd[2] = {along_runs ? n : w, along_runs ? w : n};
                const int64_t yd[2] = {along_runs ? 1 : w, along_runs ? w : 1};
                dbuf bx, by;
                dbuf_init(&bx, dev, t, dense_view(&args.x, t, 2, xd));
                dbuf_init(&by, dev, t, dense_view(&args.y, t, 2, yd));
                dbuf_random(&bx, -2, 2, 5);
                for (int64_t k = 0; k < bx.n; k++) {
                    if (chance(3))
                        put(t, bx.host, k, -0.0);
                    if ((op == DLA_REDUCE_MAX || op == DLA_REDUCE_MIN) && chance(1))
                        put(t, bx.host, k, NAN);
                }
                dbuf_upload(&bx);
                args.x.mem = bx.mem, args.y.mem = by.mem;
                snprintf(what, sizeof what, "%s reduce %s op %d of %lld x %lld along dim %d",
                         dla_device_name(dev), dname(t), (int)op, (long long)xd[0],
                         (long long)xd[1], along_runs ? 1 : 2);
                expect_ok(dla_device_table(dev)->reduce(dla_device_context(dev), &args));
                void *y = dbuf_download(&by);
                /* reduce.c takes runs of 32 or more one output a time
                 * (sums: sum.c's order), shorter ones and lanes along a
                 * contiguous dim position by position. */
                const int seq = !along_runs || n < 32;
                const int64_t so = along_runs ? n : 1, sj = along_runs ? 1 : w;
                for (int64_t o = 0; o < w; o++) {
                    double want;
                    if (op == DLA_REDUCE_MAX || op == DLA_REDUCE_MIN)
                        want = extreme_in_order(t, bx.host, o * so, sj, n, op == DLA_REDUCE_MAX);
                    else
                        want = sum_in_order(t, bx.host, o * so, sj, n, seq);
                    if (op == DLA_REDUCE_MEAN)
                        want /= (double)n;
                    want = t == DLA_F32 ? (double)(float)want : want;
                    const double got = get(t, y, o);
                    /* Runs of 32 or more take their max by blocks, whose
                     * +0 and -0 may tie either way. */
                    const int zeros_either = !seq && got == 0 && want == 0;
                    if (!(isnan(got) && isnan(want)) && !zeros_either &&
                        (got != want || signbit(got) != signbit(want)))
                        fail_msg("%s: output %lld is %.17g, expected %.17g", what, (long long)o,
                                 got, want);
                }
                free(y);
                dbuf_free(&bx);
                dbuf_free(&by);
            }
    }
}

/* ----------------------------------------------------------------- gemm */

typedef struct gemm_shape {
    int64_t m, n, k, batch;
    int ta, tb;
    int a_shared, b_shared; /* batch_stride 0 */
    double alpha, beta;
} gemm_shape;

static void gemm_case(dla_device *dev, dla_dtype t, const gemm_shape *s, int c)
{
    dla_gemm_args g = {.struct_size = sizeof g, .dtype = t, .trans_a = s->ta, .trans_b = s->tb};
    g.m = s->m, g.n = s->n, g.k = s->k, g.batch = s->batch, g.alpha = s->alpha, g.beta = s->beta;
    const int64_t ar = s->ta ? s->k : s->m, ac = s->ta ? s->m : s->k;
    const int64_t br = s->tb ? s->n : s->k, bc = s->tb ? s->k : s->n;
    g.a.ld = (ar > 1 ? ar : 1) + (chance(40) ? rnd_int(1, 3) : 0);
    g.b.ld = (br > 1 ? br : 1) + (chance(40) ? rnd_int(1, 3) : 0);
    g.c.ld = (s->m > 1 ? s->m : 1) + (chance(40) ? rnd_int(1, 3) : 0);
    g.a.offset = rnd_int(0, 3), g.b.offset = rnd_int(0, 3), g.c.offset = rnd_int(0, 3);
    g.a.batch_stride = s->a_shared ? 0 : g.a.ld * ac + rnd_int(0, 2);
    g.b.batch_stride = s->b_shared ? 0 : g.b.ld * bc + rnd_int(0, 2);
    g.c.batch_stride = g.c.ld * s->n + rnd_int(0, 2);
    const int64_t na = g.a.offset + g.a.batch_stride * (s->batch - 1) + g.a.ld * ac;
    const int64_t nb = g.b.offset + g.b.batch_stride * (s->batch - 1) + g.b.ld * bc;
    /* Eight columns more than C's, which must keep their values: a kernel
     * that writes whole blocks of 8 columns past n writes there. */
    const int64_t nc = g.c.offset + g.c.batch_stride * (s->batch - 1) + g.c.ld * (s->n + 8);
    dbuf ba, bb, bc_;
    dbuf_init(&ba, dev, t, na);
    dbuf_init(&bb, dev, t, nb);
    dbuf_init(&bc_, dev, t, nc);
    dbuf_random(&ba, -1, 1, 0);
    dbuf_random(&bb, -1, 1, 0);
    dbuf_random(&bc_, -1, 1, 0);
    if (s->beta == 0) /* C must not be read */
        for (int64_t k = 0; k < bc_.n; k++)
            put(t, bc_.host, k, NAN);
    dbuf_upload(&ba);
    dbuf_upload(&bb);
    dbuf_upload(&bc_);
    g.a.mem = ba.mem, g.b.mem = bb.mem, g.c.mem = bc_.mem;
    snprintf(what, sizeof what,
             "%s gemm %s m=%lld n=%lld k=%lld batch=%lld trans=%d%d shared=%d%d alpha=%g beta=%g "
             "case %d",
             dla_device_name(dev), dname(t), (long long)s->m, (long long)s->n, (long long)s->k,
             (long long)s->batch, s->ta, s->tb, s->a_shared, s->b_shared, s->alpha, s->beta, c);
    expect_ok(dla_device_table(dev)->gemm(dla_device_context(dev), &g));

    double *tol = calloc((size_t)bc_.n, sizeof *tol);
    const double eps = t == DLA_F32 ? 1.2e-7 : 2.3e-16;
    const double alpha = t == DLA_F32 ? (float)s->alpha : s->alpha;
    const double beta = t == DLA_F32 ? (float)s->beta : s->beta;
    for (int64_t p = 0; p < s->batch; p++) {
        const int64_t a0 = g.a.offset + p * g.a.batch_stride,
                      b0 = g.b.offset + p * g.b.batch_stride;
        const int64_t c0 = g.c.offset + p * g.c.batch_stride;
        for (int64_t j = 0; j < s->n; j++)
            for (int64_t r = 0; r < s->m; r++) {
                double sum = 0, mag = 0;
                for (int64_t l = 0; l < s->k; l++) {
                    double av = get(t, ba.host, a0 + (s->ta ? l + r * g.a.ld : r + l * g.a.ld));
                    double bv = get(t, bb.host, b0 + (s->tb ? j + l * g.b.ld : l + j * g.b.ld));
                    sum += av * bv;
                    mag += fabs(av * bv);
                }
                const int64_t o = c0 + r + j * g.c.ld;
                const double old = get(t, bc_.host, o);
                const double cv = beta == 0 ? 0 : beta * old;
                put(t, bc_.host, o, alpha * sum + cv);
                tol[o] = 4 * (double)(s->k + 2) * eps * (fabs(alpha) * mag + fabs(cv)) + 1e-300;
            }
    }
    void *got = dbuf_download(&bc_);
    expect_buffer(t, got, bc_.host, bc_.n, 0, 0, tol);
    free(got);
    free(tol);
    dbuf_free(&ba);
    dbuf_free(&bb);
    dbuf_free(&bc_);
}

static void gemm_matches_reference_for_every_transpose_and_batch_layout(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        for (dla_dtype t = DLA_F32; t <= DLA_F64; t++) {
            if (!supports(dev, DLA_KERNEL_GEMM, t, dla_device_table(dev)->gemm))
                continue;
            for (int c = 0; c < 64; c++) {
                gemm_shape s;
                s.ta = c & 1, s.tb = (c >> 1) & 1;
                s.m = chance(5) ? 0 : rnd_int(1, 24);
                s.n = chance(5) ? 0 : rnd_int(1, 24);
                s.k = chance(5) ? 0 : rnd_int(1, 24);
                s.batch = chance(40) ? 1 : rnd_int(2, 5);
                s.a_shared = s.batch > 1 && chance(30);
                s.b_shared = s.batch > 1 && !s.a_shared && chance(30);
                s.alpha = chance(10) ? 0 : rnd_unif(-1.5, 1.5);
                s.beta = c % 3 == 0 ? 0 : c % 3 == 1 ? 1 : rnd_unif(-1, 1);
                gemm_case(dev, t, &s, c);
            }
            /* Pages big enough for the threaded library path, and many small
             * pages for the batch-parallel one. */
            const gemm_shape big = {192, 160, 96, 2, 0, 1, 0, 0, 1.0, 0.5};
            const gemm_shape many = {16, 12, 20, 33, 1, 0, 0, 1, -0.75, 0};
            const gemm_shape square = {130, 130, 130, 1, 1, 1, 0, 0, 1.0, 0};
            gemm_case(dev, t, &big, 100);
            gemm_case(dev, t, &many, 101);
            gemm_case(dev, t, &square, 102);
            /* Big enough for the cpu plugin to cut C both ways (2 x 2 tiles
             * of uneven halves: plugins/cpu/gemm_tiles.c), both transposes
             * each way, two pages. */
            const gemm_shape tiled[2] = {{1100, 1030, 40, 1, 0, 0, 0, 0, 1.0, 0.5},
                                         {1030, 1100, 24, 2, 1, 1, 0, 0, -0.5, 0}};
            gemm_case(dev, t, &tiled[0], 103);
            gemm_case(dev, t, &tiled[1], 104);
            /* Thin products (the cpu plugin's own kernels: m or k <= 16):
             * a fully connected layer's forward, weight and data
             * gradients, then random thin shapes with every transpose,
             * ragged edges and alpha, beta. */
            const gemm_shape fc[3] = {{10, 128, 2304, 1, 0, 0, 0, 0, 1.0, 1.0},
                                      {10, 2304, 128, 1, 0, 1, 0, 0, 1.0, 0},
                                      {2304, 128, 10, 1, 1, 0, 0, 0, 1.0, 0}};
            for (int f = 0; f < 3; f++)
                gemm_case(dev, t, &fc[f], 110 + f);
            for (int c = 0; c < 24; c++) {
                gemm_shape s = {0};
                s.ta = c & 1, s.tb = (c >> 1) & 1, s.batch = 1;
                const int64_t thin = rnd_int(1, 16), wide = rnd_int(1000, 2500),
                              other = rnd_int(40, 140);
                if (c & 4)
                    s.m = thin, s.k = wide, s.n = other;
                else if (c & 8)
                    s.m = thin, s.n = wide, s.k = other;
                else
                    s.k = thin, s.m = wide, s.n = other;
                s.alpha = rnd_unif(-1.5, 1.5);
                s.beta = c % 3 == 0 ? 0 : c % 3 == 1 ? 1 : rnd_unif(-1, 1);
                gemm_case(dev, t, &s, 120 + c);
            }
            /* Products the cpu plugin runs by its AVX-512 tiles on such a
             * CPU (plugins/cpu/gemm_direct.c: A not transposed, at most
             * 1 MiB): an LSTM step's, 48 rows by many columns (the threads
             * share the columns), rows past a whole 48 and 16, columns
             * past a whole 8, B either way, alpha and beta; then random
             * ones. */
            const gemm_shape direct[6] = {{512, 64, 132, 1, 0, 0, 0, 0, 1.0, 0},
                                          {48, 4099, 64, 1, 0, 0, 0, 0, 1.0, 0},
                                          {47, 13, 700, 1, 0, 1, 0, 0, -0.5, 1.0},
                                          {1000, 3, 200, 1, 0, 0, 0, 0, 1.0, 0.25},
                                          {17, 1000, 33, 1, 0, 1, 0, 0, 2.0, 0},
                                          {130, 9, 2000, 1, 0, 0, 0, 0, 0.75, -1.0}};
            for (int f = 0; f < 6; f++)
                gemm_case(dev, t, &direct[f], 150 + f);
            for (int c = 0; c < 24; c++) {
                gemm_shape s = {0};
                s.tb = c & 1, s.batch = 1;
                s.m = rnd_int(17, 200), s.n = rnd_int(1, 40), s.k = rnd_int(60, 300);
                s.alpha = rnd_unif(-1.5, 1.5);
                s.beta = c % 3 == 0 ? 0 : c % 3 == 1 ? 1 : rnd_unif(-1, 1);
                gemm_case(dev, t, &s, 160 + c);
            }
            /* Batches of small pages (the cpu plugin's AVX-512 tiles for
             * each page, over the threads when C's pages are apart): an
             * attention's 4 heads x 32 observations of 24 x 24 scores
             * (K' Q, k = 8), weighted values (V P, m = 8) and their
             * gradients (B transposed), then random pages with every
             * transpose, A or B shared, ragged rows and columns; then
             * single products with a small A transposed (W' dY, packed
             * once; one of 5,000 floats stays with OpenBLAS). */
            const gemm_shape paged[6] = {{24, 24, 8, 128, 1, 0, 0, 0, 0.35, 0},
                                         {8, 24, 24, 128, 0, 0, 0, 0, 1.0, 0},
                                         {8, 24, 24, 128, 0, 1, 0, 0, 1.0, 1.0},
                                         {24, 24, 8, 128, 1, 1, 0, 0, -1.0, 0.5},
                                         {33, 5, 40, 60, 1, 0, 1, 0, 1.0, 0},
                                         {50, 17, 90, 30, 0, 1, 0, 1, 0.5, -0.25}};
            for (int f = 0; f < 6; f++)
                gemm_case(dev, t, &paged[f], 190 + f);
            for (int c = 0; c < 24; c++) {
                gemm_shape s = {0};
                s.ta = c & 1, s.tb = (c >> 1) & 1;
                s.m = rnd_int(1, 40), s.n = rnd_int(1, 40), s.k = rnd_int(1, 40);
                s.batch = rnd_int(2, 80);
                s.a_shared = chance(20);
                s.b_shared = !s.a_shared && chance(20);
                s.alpha = rnd_unif(-1.5, 1.5);
                s.beta = c % 3 == 0 ? 0 : c % 3 == 1 ? 1 : rnd_unif(-1, 1);
                gemm_case(dev, t, &s, 200 + c);
            }
            const gemm_shape packed[4] = {{32, 768, 32, 1, 1, 0, 0, 0, 1.0, 0},
                                          {64, 200, 64, 1, 1, 1, 0, 0, -0.5, 1.0},
                                          {17, 301, 33, 1, 1, 0, 0, 0, 1.0, 0.25},
                                          {50, 100, 100, 1, 1, 0, 0, 0, 1.0, 0}};
            for (int f = 0; f < 4; f++)
                gemm_case(dev, t, &packed[f], 230 + f);
        }
    }
}

/* --------------------------------------------------------------- where */

/* Layouts of a where case. W_SCALAR_* make that operand one element
 * broadcast everywhere (where(mask, x, 0)); W_BCAST lets every operand but
 * z repeat along random dims; W_ALIAS makes z and a one view. */
enum {
    W_DENSE = 1,
    W_BCAST = 2,
    W_SCALAR_A = 4,
    W_SCALAR_B = 8,
    W_SCALAR_COND = 16,
    W_ALIAS = 32,
};

/* Makes v (dims of z) one element at a small offset; returns the extent. */
static int64_t scalar_view(dla_view *v, dla_dtype t, int nd, const int64_t *dims)
{
    dense_view(v, t, nd, dims);
    for (int d = 0; d < nd; d++)
        v->strides[d] = 0;
    v->offset = rnd_int(0, 3);
    return v->offset + 1;
}

static void where_case(dla_device *dev, dla_dtype t, int nd, const int64_t *dims, int how, int c)
{
    const int dense = how & W_DENSE, bcast = (how & W_BCAST) != 0, alias = how & W_ALIAS;
    const int scalar_a = how & W_SCALAR_A, scalar_b = how & W_SCALAR_B;
    dla_ternary_args args = {.struct_size = sizeof args, .op = DLA_TERNARY_WHERE};
    dbuf bz, bc, ba, bb;
    dbuf_init(&bz, dev, t,
              dense ? dense_view(&args.z, t, nd, dims) : make_view(&args.z, t, nd, dims, 0));
    dbuf_init(&bc, dev, DLA_BOOL,
              how & W_SCALAR_COND ? scalar_view(&args.cond, DLA_BOOL, nd, dims)
              : dense             ? dense_view(&args.cond, DLA_BOOL, nd, dims)
                                  : make_view(&args.cond, DLA_BOOL, nd, dims, bcast));
    dla_view *ops[2] = {&args.a, &args.b};
    dbuf *bufs[2] = {&ba, &bb};
    const int scalar[2] = {scalar_a, scalar_b};
    for (int k = alias ? 1 : 0; k < 2; k++) {
        int64_t n;
        if (scalar[k])
            n = scalar_view(ops[k], t, nd, dims);
        else
            n = dense ? dense_view(ops[k], t, nd, dims) : make_view(ops[k], t, nd, dims, bcast);
        dbuf_init(bufs[k], dev, t, n);
        dbuf_random(bufs[k], -5, 5, 5);
    }
    dbuf_random(&bz, -5, 5, 0);
    dbuf_random(&bc, 0, 1, 0);
    if (c % 4 == 1) /* NaN in an operand is just a value to pick */
        put(t, bb.host, rnd_int(0, bb.n - 1), NAN);
    if (alias)
        args.a = args.z, bufs[0] = &bz;
    dbuf_upload(&bz);
    dbuf_upload(&bc);
    if (!alias)
        dbuf_upload(&ba);
    dbuf_upload(&bb);
    args.z.mem = bz.mem, args.cond.mem = bc.mem, args.a.mem = bufs[0]->mem, args.b.mem = bb.mem;
    char ds[64];
    snprintf(what, sizeof what, "%s where %s dims %s%s%s%s%s%s%s case %d", dla_device_name(dev),
             dname(t), dims_str(ds, sizeof ds, nd, dims), dense ? " dense" : "",
             bcast ? " broadcast" : "", how & W_SCALAR_COND ? " scalar cond" : "",
             scalar_a ? " scalar a" : "", scalar_b ? " scalar b" : "", alias ? " z=a" : "", c);
    expect_ok(dla_device_table(dev)->ternary(dla_device_context(dev), &args));
    unsigned char *orig_a = malloc(dbuf_bytes(bufs[0]));
    memcpy(orig_a, bufs[0]->host, dbuf_bytes(bufs[0]));
    int64_t idx[DLA_MAX_DIMS];
    for (int64_t k = 0; k < numel(nd, dims); k++) {
        unravel(k, nd, dims, idx);
        const int pick_a = get(DLA_BOOL, bc.host, at(&args.cond, idx)) != 0;
        const double v =
            pick_a ? get(t, orig_a, at(&args.a, idx)) : get(t, bb.host, at(&args.b, idx));
        put(t, bz.host, at(&args.z, idx), v);
    }
    void *got = dbuf_download(&bz);
    expect_buffer(t, got, bz.host, bz.n, 0, 0, NULL);
    free(got);
    free(orig_a);
    dbuf_free(&bz);
    dbuf_free(&bc);
    if (!alias)
        dbuf_free(&ba);
    dbuf_free(&bb);
}

static void where_picks_a_or_b_by_a_broadcast_logical_condition(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        for (dla_dtype t = DLA_F32; t <= DLA_F64; t++) {
            if (!supports(dev, DLA_KERNEL_TERNARY, t, dla_device_table(dev)->ternary))
                continue;
            for (int c = 0; c < 80; c++) {
                int nd;
                int64_t dims[DLA_MAX_DIMS];
                rand_dims(&nd, dims, 5, 7, 3);
                int how = (c % 10 == 0 ? W_DENSE : 0) | (c % 2 ? W_BCAST : 0) |
                          (c % 7 == 3 ? W_SCALAR_A : 0) | (c % 5 == 2 ? W_SCALAR_B : 0) |
                          (c % 11 == 6 ? W_SCALAR_COND : 0) | (c % 9 == 4 ? W_ALIAS : 0);
                if (how & W_ALIAS)
                    how &= ~W_SCALAR_A;
                where_case(dev, t, nd, dims, how, c);
            }
            /* Large: the flat path, the blends with one scalar operand,
             * a condition repeated down rows, and a scalar condition. */
            const int64_t flat[] = {100003}, grid[] = {513, 257};
            where_case(dev, t, 1, flat, W_DENSE, 100);
            where_case(dev, t, 1, flat, W_DENSE | W_ALIAS, 101);
            where_case(dev, t, 1, flat, W_SCALAR_B, 102);
            where_case(dev, t, 1, flat, W_SCALAR_A, 103);
            where_case(dev, t, 2, grid, W_BCAST, 104);
            where_case(dev, t, 2, grid, W_SCALAR_A | W_SCALAR_B, 105);
            where_case(dev, t, 2, grid, W_SCALAR_COND, 106);
            where_case(dev, t, 2, grid, W_SCALAR_COND | W_SCALAR_A, 107);
        }
    }
}

/* ------------------------------------------------------------- pooling */

/* A pooling problem in the ABI's terms, with pad_end kept for the record. */
typedef struct pool_shape {
    int n;
    int64_t in[3], out[3], win[3], stride[3], pad[3], pad_end[3];
    int64_t channels, batch;
} pool_shape;

/* out_size as the host computes it (the header's formula, dilation 1). */
static void pool_out_sizes(pool_shape *p)
{
    for (int d = 0; d < p->n; d++)
        p->out[d] = (p->in[d] + p->pad[d] + p->pad_end[d] - p->win[d]) / p->stride[d] + 1;
}

/* Random geometry: windows of 1..4 (often overlapping: stride < window),
 * padding on each side below the window, so every window meets x. */
static void rand_pool_shape(pool_shape *p, int64_t max_in)
{
    memset(p, 0, sizeof *p);
    p->n = (int)rnd_int(1, 3);
    for (int d = 0; d < p->n; d++) {
        p->win[d] = rnd_int(1, 4);
        p->stride[d] = rnd_int(1, 3);
        p->pad[d] = chance(50) ? rnd_int(0, p->win[d] - 1) : 0;
        p->pad_end[d] = chance(50) ? rnd_int(0, p->win[d] - 1) : 0;
        p->in[d] = rnd_int(1, max_in);
        if (p->in[d] + p->pad[d] + p->pad_end[d] < p->win[d])
            p->in[d] = p->win[d];
    }
    p->channels = rnd_int(1, 3);
    p->batch = rnd_int(1, 3);
    pool_out_sizes(p);
}

/* The view dims of x (sizes in) or y (sizes out): spatial, channels,
 * batch; a batch of 1 is sometimes left off, as MATLAB drops it. */
static int pool_dims(const pool_shape *p, const int64_t *sizes, int64_t *dims, int drop_batch)
{
    for (int d = 0; d < p->n; d++)
        dims[d] = sizes[d];
    dims[p->n] = p->channels;
    dims[p->n + 1] = p->batch;
    return p->n + 2 - (drop_batch && p->batch == 1);
}

static int64_t pool_view(dla_view *v, dla_dtype t, int nd, const int64_t *dims, int dense)
{
    return dense ? dense_view(v, t, nd, dims) : make_view(v, t, nd, dims, 0);
}

/* idx[] of view element (spatial s, channel c, image b). */
static void pool_idx(const pool_shape *p, const int64_t *s, int64_t c, int64_t b, int64_t *idx)
{
    for (int d = 0; d < p->n; d++)
        idx[d] = s[d];
    idx[p->n] = c;
    idx[p->n + 1] = b;
}

/* The forward pass by definition: y and (max) the index of each window,
 * NaN winning, ties keeping the first position. */
static void pool_forward_ref(const pool_shape *p, dla_pool_mode mode, int exclude, dla_dtype t,
                             const dla_view *xv, const void *xh, const dla_view *yv, void *yh,
                             const dla_view *iv, void *ih)
{
    int64_t o[3] = {0}, in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, win[3] = {1, 1, 1};
    for (int d = 0; d < p->n; d++)
        in[d] = p->in[d], out[d] = p->out[d], win[d] = p->win[d];
    int64_t idx[DLA_MAX_DIMS];
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t c = 0; c < p->channels; c++)
            for (o[2] = 0; o[2] < out[2]; o[2]++)
                for (o[1] = 0; o[1] < out[1]; o[1]++)
                    for (o[0] = 0; o[0] < out[0]; o[0]++) {
                        double best = 0, sum = 0;
                        int64_t pos = -1, count = 0, k[3], i[3] = {0};
                        for (k[2] = 0; k[2] < win[2]; k[2]++)
                            for (k[1] = 0; k[1] < win[1]; k[1]++)
                                for (k[0] = 0; k[0] < win[0]; k[0]++) {
                                    int inside = 1;
                                    for (int d = 0; d < p->n; d++) {
                                        i[d] = o[d] * p->stride[d] - p->pad[d] + k[d];
                                        inside &= i[d] >= 0 && i[d] < in[d];
                                    }
                                    if (!inside)
                                        continue;
                                    pool_idx(p, i, c, b, idx);
                                    const double v = get(t, xh, at(xv, idx));
                                    count++;
                                    sum += v;
                                    if (pos < 0 || v > best || (isnan(v) && !isnan(best))) {
                                        best = v;
                                        pos = i[0] + in[0] * (i[1] + in[1] * i[2]);
                                    }
                                }
                        pool_idx(p, o, c, b, idx);
                        if (mode == DLA_POOL_MAX) {
                            put(t, yh, at(yv, idx), best);
                            if (ih)
                                put(DLA_I32, ih, at(iv, idx), (double)pos);
                        } else {
                            double full = (double)(win[0] * win[1] * win[2]);
                            put(t, yh, at(yv, idx), sum / (exclude ? (double)count : full));
                        }
                    }
}

/* The backward pass by the header's words: each window's gradient goes to
 * its maximum (through the index) or spreads evenly over it; overlapping
 * windows add. x's elements end up with dL/dx (sums in acc, then put). */
static void pool_backward_ref(const pool_shape *p, dla_pool_mode mode, int exclude, dla_dtype t,
                              const dla_view *xv, void *xh, const dla_view *yv, const void *yh,
                              const dla_view *iv, const void *ih)
{
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, win[3] = {1, 1, 1};
    for (int d = 0; d < p->n; d++)
        in[d] = p->in[d], out[d] = p->out[d], win[d] = p->win[d];
    const int64_t in_px = in[0] * in[1] * in[2];
    double *acc = calloc((size_t)(in_px * p->channels * p->batch) + 1, sizeof *acc);
    assert_non_null(acc);
    int64_t o[3] = {0}, idx[DLA_MAX_DIMS];
    for (int64_t b = 0; b < p->batch; b++)
        for (int64_t c = 0; c < p->channels; c++) {
            double *plane = acc + (b * p->channels + c) * in_px;
            for (o[2] = 0; o[2] < out[2]; o[2]++)
                for (o[1] = 0; o[1] < out[1]; o[1]++)
                    for (o[0] = 0; o[0] < out[0]; o[0]++) {
                        pool_idx(p, o, c, b, idx);
                        const double dy = get(t, yh, at(yv, idx));
                        if (mode == DLA_POOL_MAX) {
                            plane[(int64_t)get(DLA_I32, ih, at(iv, idx))] += dy;
                            continue;
                        }
                        int64_t lo[3] = {0}, hi[3] = {1, 1, 1};
                        for (int d = 0; d < p->n; d++) {
                            lo[d] = o[d] * p->stride[d] - p->pad[d];
                            hi[d] = lo[d] + win[d] < in[d] ? lo[d] + win[d] : in[d];
                            lo[d] = lo[d] > 0 ? lo[d] : 0;
                        }
                        const double div = exclude ? (double)((hi[0] - lo[0]) * (hi[1] - lo[1]) *
                                                              (hi[2] - lo[2]))
                                                   : (double)(win[0] * win[1] * win[2]);
                        for (int64_t i2 = lo[2]; i2 < hi[2]; i2++)
                            for (int64_t i1 = lo[1]; i1 < hi[1]; i1++)
                                for (int64_t i0 = lo[0]; i0 < hi[0]; i0++)
                                    plane[i0 + in[0] * (i1 + in[1] * i2)] += dy / div;
                    }
            int64_t i[3] = {0};
            for (i[2] = 0; i[2] < in[2]; i[2]++)
                for (i[1] = 0; i[1] < in[1]; i[1]++)
                    for (i[0] = 0; i[0] < in[0]; i[0]++) {
                        pool_idx(p, i, c, b, idx);
                        put(t, xh, at(xv, idx), plane[i[0] + in[0] * (i[1] + in[1] * i[2])]);
                    }
        }
    free(acc);
}

static void pool_args_of(dla_pool_args *a, const pool_shape *p, dla_pool_mode mode, dla_dtype t,
                         int exclude)
{
    memset(a, 0, sizeof *a);
    a->struct_size = sizeof *a;
    a->mode = mode;
    a->dtype = t;
    a->nspatial = p->n;
    a->avg_exclude_pad = exclude;
    a->channels = p->channels;
    a->batch = p->batch;
    for (int d = 0; d < p->n; d++) {
        a->in_size[d] = p->in[d], a->out_size[d] = p->out[d], a->window[d] = p->win[d];
        a->stride[d] = p->stride[d], a->pad_begin[d] = p->pad[d];
    }
}

static void pool_describe(const pool_shape *p, const char *dir, dla_pool_mode mode, dla_dtype t,
                          int exclude, int with_index, int dense, dla_device *dev, int c)
{
    char geo[256];
    size_t u = 0;
    for (int d = 0; d < p->n; d++)
        u += (size_t)snprintf(geo + u, sizeof geo - u,
                              "%s[in %lld win %lld str %lld pad %lld/%lld]", d ? " " : "",
                              (long long)p->in[d], (long long)p->win[d], (long long)p->stride[d],
                              (long long)p->pad[d], (long long)p->pad_end[d]);
    snprintf(what, sizeof what, "%s pool_%s %s %s%s%s %s C %lld B %lld%s case %d",
             dla_device_name(dev), dir, mode == DLA_POOL_MAX ? "max" : "avg", dname(t),
             exclude ? " exclude-pad" : "", with_index ? " +index" : "", geo,
             (long long)p->channels, (long long)p->batch, dense ? " dense" : " strided", c);
}

/* One forward case: y (and the index) compared whole with the reference.
 * ties: x holds small whole numbers so windows have equal maxima. */
static void pool_forward_case(dla_device *dev, dla_dtype t, const pool_shape *p, dla_pool_mode mode,
                              int exclude, int with_index, int dense, int ties, int c)
{
    dla_pool_args a;
    pool_args_of(&a, p, mode, t, exclude);
    int64_t xd[5], yd[5];
    const int drop = c % 3 == 2;
    const int xn = pool_dims(p, p->in, xd, drop), yn = pool_dims(p, p->out, yd, drop);
    dbuf bx, by, bi;
    dbuf_init(&bx, dev, t, pool_view(&a.x, t, xn, xd, dense));
    dbuf_init(&by, dev, t, pool_view(&a.y, t, yn, yd, dense));
    dbuf_random(&bx, -3, 3, 0);
    dbuf_random(&by, -9, 9, 0);
    if (ties)
        for (int64_t k = 0; k < bx.n; k++)
            put(t, bx.host, k, round(get(t, bx.host, k)));
    if (c % 5 == 2)
        put(t, bx.host, rnd_int(0, bx.n - 1), NAN);
    dbuf_upload(&bx);
    dbuf_upload(&by);
    a.x.mem = bx.mem, a.y.mem = by.mem;
    if (with_index) {
        dbuf_init(&bi, dev, DLA_I32, pool_view(&a.index, DLA_I32, yn, yd, dense));
        dbuf_random(&bi, -5, 5, 0);
        dbuf_upload(&bi);
        a.index.mem = bi.mem;
    }
    pool_describe(p, "forward", mode, t, exclude, with_index, dense, dev, c);
    expect_ok(dla_device_table(dev)->pool_forward(dla_device_context(dev), &a));
    pool_forward_ref(p, mode, exclude, t, &a.x, bx.host, &a.y, by.host, &a.index,
                     with_index ? bi.host : NULL);
    void *got = dbuf_download(&by);
    expect_buffer(t, got, by.host, by.n, t == DLA_F32 ? 1e-6 : 1e-14, rel_tol_of(t), NULL);
    free(got);
    if (with_index) {
        got = dbuf_download(&bi);
        expect_buffer(DLA_I32, got, bi.host, bi.n, 0, 0, NULL);
        free(got);
        dbuf_free(&bi);
    }
    dbuf_free(&bx);
    dbuf_free(&by);
}

/* One backward case: the index comes from the reference forward of a
 * random x; x's buffer starts with junk that every element must replace. */
static void pool_backward_case(dla_device *dev, dla_dtype t, const pool_shape *p,
                               dla_pool_mode mode, int exclude, int dense, int c)
{
    dla_pool_args a;
    pool_args_of(&a, p, mode, t, exclude);
    int64_t xd[5], yd[5];
    const int drop = c % 3 == 2;
    const int xn = pool_dims(p, p->in, xd, drop), yn = pool_dims(p, p->out, yd, drop);
    dbuf bx, by, bi;
    dbuf_init(&bx, dev, t, pool_view(&a.x, t, xn, xd, dense));
    dbuf_init(&by, dev, t, pool_view(&a.y, t, yn, yd, dense));
    if (mode == DLA_POOL_MAX) {
        dbuf_init(&bi, dev, DLA_I32, pool_view(&a.index, DLA_I32, yn, yd, dense));
        dbuf_random(&bx, -3, 3, 0);
        for (int64_t k = 0; k < bx.n; k++) /* ties too */
            put(t, bx.host, k, round(get(t, bx.host, k)));
        void *scratch = malloc(dbuf_bytes(&by));
        assert_non_null(scratch);
        pool_forward_ref(p, mode, exclude, t, &a.x, bx.host, &a.y, scratch, &a.index, bi.host);
        free(scratch);
        dbuf_upload(&bi);
        a.index.mem = bi.mem;
    }
    dbuf_random(&bx, 50, 60, 0); /* junk */
    dbuf_random(&by, -2, 2, 0);  /* dL/dy */
    dbuf_upload(&bx);
    dbuf_upload(&by);
    a.x.mem = bx.mem, a.y.mem = by.mem;
    pool_describe(p, "backward", mode, t, exclude, mode == DLA_POOL_MAX, dense, dev, c);
    expect_ok(dla_device_table(dev)->pool_backward(dla_device_context(dev), &a));
    pool_backward_ref(p, mode, exclude, t, &a.x, bx.host, &a.y, by.host, &a.index,
                      mode == DLA_POOL_MAX ? bi.host : NULL);
    void *got = dbuf_download(&bx);
    expect_buffer(t, got, bx.host, bx.n, t == DLA_F32 ? 1e-5 : 1e-13, rel_tol_of(t), NULL);
    free(got);
    if (mode == DLA_POOL_MAX)
        dbuf_free(&bi);
    dbuf_free(&bx);
    dbuf_free(&by);
}

static void pool_forward_matches_reference_for_max_and_average_windows(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        for (dla_dtype t = DLA_F32; t <= DLA_F64; t++) {
            if (!supports(dev, DLA_KERNEL_POOL_FORWARD, t, dla_device_table(dev)->pool_forward))
                continue;
            for (int c = 0; c < 90; c++) {
                pool_shape p;
                rand_pool_shape(&p, 7);
                const dla_pool_mode mode = c % 3 == 0 ? DLA_POOL_AVG : DLA_POOL_MAX;
                const int avg = mode == DLA_POOL_AVG;
                pool_forward_case(dev, t, &p, mode, avg && c % 2, !avg && c % 4 != 1, c % 4 == 0,
                                  c % 2 == 1, c);
            }
            /* Large enough for the team: overlapping 3x3 windows, stride 2. */
            pool_shape big = {.n = 2, .in = {67, 45}, .win = {3, 3}, .stride = {2, 2},
                              .pad = {1, 1}, .pad_end = {1, 0}, .channels = 3, .batch = 2};
            pool_out_sizes(&big);
            pool_forward_case(dev, t, &big, DLA_POOL_MAX, 0, 1, 1, 1, 1000);
            pool_forward_case(dev, t, &big, DLA_POOL_AVG, 1, 0, 0, 0, 1001);
            pool_forward_case(dev, t, &big, DLA_POOL_AVG, 0, 0, 1, 0, 1002);
        }
    }
}

static void pool_backward_adds_overlapping_windows_into_every_x_element(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        for (dla_dtype t = DLA_F32; t <= DLA_F64; t++) {
            if (!supports(dev, DLA_KERNEL_POOL_BACKWARD, t, dla_device_table(dev)->pool_backward))
                continue;
            for (int c = 0; c < 90; c++) {
                pool_shape p;
                rand_pool_shape(&p, 7);
                const dla_pool_mode mode = c % 3 == 0 ? DLA_POOL_AVG : DLA_POOL_MAX;
                pool_backward_case(dev, t, &p, mode, mode == DLA_POOL_AVG && c % 2, c % 4 == 0, c);
            }
            /* Windows of 3 at stride 1 overlap threefold along each dim. */
            pool_shape big = {.n = 2, .in = {61, 47}, .win = {3, 3}, .stride = {1, 1},
                              .pad = {1, 1}, .pad_end = {1, 1}, .channels = 2, .batch = 3};
            pool_out_sizes(&big);
            pool_backward_case(dev, t, &big, DLA_POOL_MAX, 0, 1, 1000);
            pool_backward_case(dev, t, &big, DLA_POOL_AVG, 0, 0, 1001);
            pool_backward_case(dev, t, &big, DLA_POOL_AVG, 1, 1, 1002);
            pool_shape cube = {.n = 3, .in = {20, 18, 16}, .win = {2, 3, 2}, .stride = {2, 2, 1},
                               .pad = {0, 1, 1}, .pad_end = {0, 1, 0}, .channels = 2, .batch = 2};
            pool_out_sizes(&cube);
            pool_backward_case(dev, t, &cube, DLA_POOL_MAX, 0, 0, 1003);
            pool_backward_case(dev, t, &cube, DLA_POOL_AVG, 1, 1, 1004);
            /* One large plane: fewer planes than threads. */
            pool_shape plane = {.n = 2, .in = {150, 130}, .win = {3, 3}, .stride = {1, 2},
                                .pad = {1, 1}, .pad_end = {1, 0}, .channels = 1, .batch = 1};
            pool_out_sizes(&plane);
            pool_backward_case(dev, t, &plane, DLA_POOL_MAX, 0, 1, 1005);
            pool_backward_case(dev, t, &plane, DLA_POOL_AVG, 1, 0, 1006);
            pool_backward_case(dev, t, &plane, DLA_POOL_AVG, 0, 1, 1007);
        }
    }
}

/* ----------------------------------------------------- gather, scatter */

/* An index vector of len positions in 0..target-1 (repeats likely when
 * target is small): dense, a 1 x len row, or strided with an offset. */
static void make_index(dla_view *v, dbuf *b, dla_device *dev, int64_t len, int64_t target, int c)
{
    memset(v, 0, sizeof *v);
    v->struct_size = sizeof *v;
    v->dtype = DLA_I32;
    int64_t stride = c % 4 == 3 ? 2 : 1;
    v->offset = c % 4 == 3 ? rnd_int(1, 3) : 0;
    if (c % 4 == 2) {
        v->ndims = 2;
        v->dims[0] = 1, v->dims[1] = len;
        v->strides[0] = 1, v->strides[1] = 1;
    } else {
        v->ndims = 1;
        v->dims[0] = len, v->strides[0] = stride;
    }
    dbuf_init(b, dev, DLA_I32, v->offset + (len > 0 ? (len - 1) * stride + 1 : 1));
    dbuf_random(b, -7, -1, 0); /* what lies between the positions is never read */
    for (int64_t i = 0; i < len; i++)
        put(DLA_I32, b->host, v->offset + i * stride, (double)rnd_int(0, target - 1));
    dbuf_upload(b);
    v->mem = b->mem;
}

static int64_t index_at(const dla_view *v, const void *host, int64_t i)
{
    const int64_t stride = v->ndims == 2 ? v->strides[1] : v->strides[0];
    return (int64_t)get(DLA_I32, host, v->offset + i * stride);
}

/* One gather or scatter_add case along dim of base dims (nd of them) with
 * len positions into a dim of target. The operand whose dim is len or
 * target 1 as its last dim may leave that dim off. */
static void index_case(dla_device *dev, dla_dtype t, int scatter, int nd, const int64_t *base,
                       int dim, int64_t len, int64_t target, int dense, int c)
{
    int64_t yd[DLA_MAX_DIMS], xd[DLA_MAX_DIMS];
    const int n = nd > dim ? nd : dim + 1;
    for (int d = 0; d < n; d++)
        yd[d] = xd[d] = d < nd ? base[d] : 1;
    yd[dim] = scatter ? target : len;
    xd[dim] = scatter ? len : target;
    int yn = n, xn = n;
    if (c % 5 == 1 && dim == n - 1 && yd[dim] == 1)
        yn--;
    if (c % 5 == 2 && dim == n - 1 && xd[dim] == 1)
        xn--;
    dla_index_args a = {.struct_size = sizeof a, .dim = dim};
    dbuf by, bx, bi;
    dbuf_init(&by, dev, t, dense ? dense_view(&a.y, t, yn, yd) : make_view(&a.y, t, yn, yd, 0));
    dbuf_init(&bx, dev, t, dense ? dense_view(&a.x, t, xn, xd) : make_view(&a.x, t, xn, xd, 1));
    dbuf_random(&by, -50, 50, 0);
    dbuf_random(&bx, -50, 50, 0);
    dbuf_upload(&by);
    dbuf_upload(&bx);
    a.y.mem = by.mem, a.x.mem = bx.mem;
    make_index(&a.index, &bi, dev, len, target, c);
    char ys[64], xs[64];
    snprintf(what, sizeof what,
             "%s %s %s y %s x %s dim %d (0-based) %lld positions into %lld%s "
             "case %d",
             dla_device_name(dev), scatter ? "scatter_add" : "gather", dname(t),
             dims_str(ys, sizeof ys, yn, yd), dims_str(xs, sizeof xs, xn, xd), dim, (long long)len,
             (long long)target, dense ? " dense" : "", c);
    expect_ok(scatter ? dla_device_table(dev)->scatter_add(dla_device_context(dev), &a)
                      : dla_device_table(dev)->gather(dla_device_context(dev), &a));
    /* Walk the operand that has len along dim, in column-major order: for
     * one y element of a scatter the positions come in index order. */
    const int64_t *walk = scatter ? xd : yd;
    int64_t idx[DLA_MAX_DIMS], other[DLA_MAX_DIMS];
    for (int64_t k = 0; k < numel(n, walk); k++) {
        unravel(k, n, walk, idx);
        memcpy(other, idx, sizeof other);
        other[dim] = index_at(&a.index, bi.host, idx[dim]);
        if (scatter) /* one rounding per addition, as the kernel adds */
            put(t, by.host, at(&a.y, other),
                get(t, by.host, at(&a.y, other)) + get(t, bx.host, at(&a.x, idx)));
        else
            put(t, by.host, at(&a.y, idx), get(t, bx.host, at(&a.x, other)));
    }
    void *got = dbuf_download(&by);
    expect_buffer(t, got, by.host, by.n, 0, 0, NULL);
    free(got);
    dbuf_free(&by);
    dbuf_free(&bx);
    dbuf_free(&bi);
}

static void gather_copies_indexed_slices_in_every_dtype(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        for (dla_dtype t = 0; t < DLA_DTYPE_COUNT; t++) {
            if (!supports(dev, DLA_KERNEL_GATHER, t, dla_device_table(dev)->gather))
                continue;
            for (int c = 0; c < 60; c++) {
                int nd;
                int64_t dims[DLA_MAX_DIMS];
                rand_dims(&nd, dims, 4, 6, 3);
                const int dim = (int)rnd_int(0, nd);
                index_case(dev, t, 0, nd, dims, dim, rnd_int(0, 6), rnd_int(1, 4), c % 6 == 0, c);
            }
            /* Many small slices (over the team by position), and a few
             * large ones (each over the team). */
            const int64_t wide[] = {300, 1}, tall[] = {40000, 1};
            index_case(dev, t, 0, 2, wide, 1, 400, 37, 1, 1000);
            index_case(dev, t, 0, 2, wide, 1, 400, 37, 0, 1001);
            index_case(dev, t, 0, 2, tall, 1, 5, 3, 1, 1002);
        }
    }
}

static void scatter_add_sums_repeated_positions_without_races(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        for (dla_dtype t = DLA_F32; t <= DLA_F64; t++) {
            if (!supports(dev, DLA_KERNEL_SCATTER_ADD, t, dla_device_table(dev)->scatter_add))
                continue;
            for (int c = 0; c < 60; c++) {
                int nd;
                int64_t dims[DLA_MAX_DIMS];
                rand_dims(&nd, dims, 4, 6, 3);
                const int dim = (int)rnd_int(0, nd);
                index_case(dev, t, 1, nd, dims, dim, rnd_int(0, 8), rnd_int(1, 4), c % 6 == 0, c);
            }
            /* A vector target hit 100000 times (split by position), rows
             * of a grid (split by row), and one long run. */
            const int64_t vec[] = {1}, grid[] = {4, 1, 300}, run[] = {40000};
            index_case(dev, t, 1, 1, vec, 0, 100000, 1000, 1, 1000);
            index_case(dev, t, 1, 3, grid, 1, 100, 10, 1, 1001);
            index_case(dev, t, 1, 3, grid, 1, 100, 3, 0, 1002);
            index_case(dev, t, 1, 1, run, 1, 6, 2, 1, 1003);
        }
    }
}

/* ----------------------------------------------------------- team sizes */

/* The paths a kernel picks by the team's size: pooling's backward by whole
 * planes or by rows of x (planes fewer than threads), the strided walk's
 * rows cut in pieces (rows fewer than four per thread), scatter_add's
 * split by element or by position, GEMM's pages handed out in chunks, the
 * thin products' blocks. The suite's other cases run with the machine's
 * team; these run the large ones with teams of 1, 2, 3 and 5. */
static void large_kernels_match_reference_with_teams_of_1_2_3_and_5(void **state)
{
    static const int teams[] = {1, 2, 3, 5};
    const int saved = omp_get_max_threads();
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        if (strcmp(dla_device_plugin(dev), "cpu") != 0)
            continue;
        for (int k = 0; k < 4; k++) {
            omp_set_num_threads(teams[k]);
            for (dla_dtype t = DLA_F32; t <= DLA_F64; t++) {
                /* Planes 1 to 6 against teams of 1 to 5: each way, and the
                 * change of way at planes == threads. */
                for (int64_t planes = 1; planes <= 6; planes++) {
                    pool_shape p = {.n = 2, .in = {97, 61}, .win = {3, 2}, .stride = {2, 1},
                                    .pad = {1, 0}, .pad_end = {1, 1}, .channels = planes % 3 + 1,
                                    .batch = planes / 3 + 1};
                    if (planes == 6)
                        p.channels = 1, p.batch = 6;
                    pool_out_sizes(&p);
                    const int c = 2000 + 10 * k + (int)planes;
                    pool_backward_case(dev, t, &p, DLA_POOL_MAX, 0, planes & 1, c);
                    pool_backward_case(dev, t, &p, DLA_POOL_AVG, planes & 1, 0, c);
                    pool_forward_case(dev, t, &p, planes & 1 ? DLA_POOL_MAX : DLA_POOL_AVG,
                                      planes & 2, planes & 1, planes & 1, 1, c);
                }
                const int64_t vec[] = {1}, grid[] = {4, 1, 300}, run[] = {40000};
                const int64_t wide[] = {300, 1}, rows[] = {7, 1, 5000};
                index_case(dev, t, 1, 1, vec, 0, 100000, 1000, 1, 3000);
                index_case(dev, t, 1, 3, grid, 1, 100, 10, 0, 3001);
                index_case(dev, t, 1, 1, run, 1, 6, 2, 0, 3002);
                index_case(dev, t, 1, 3, rows, 1, 9, 4, 0, 3003);
                index_case(dev, t, 0, 2, wide, 1, 400, 37, 0, 3004);
                index_case(dev, t, 0, 3, rows, 1, 9, 4, 0, 3005);
                const int64_t tall[] = {3, 70001}, few[] = {17, 2100}, odd[] = {4099, 9};
                binary_case(dev, t, DLA_BINARY_SUB, 2, tall, 0, 0, 1, 3010);
                binary_case(dev, t, DLA_BINARY_MUL, 2, few, 0, 0, 2, 3011);
                binary_case(dev, t, DLA_BINARY_ADD, 2, odd, 0, 1, 0, 3012);
                where_case(dev, t, 2, few, W_BCAST, 3013);
                const int64_t col_x[] = {5, 30011}, col_y[] = {5, 1}, lane_x[] = {300, 130},
                              lane_y[] = {300, 1}, mid_x[] = {9, 4500, 3}, mid_y[] = {1, 4500, 1};
                for (dla_reduce_op op = 0; op < DLA_REDUCE_COUNT; op++) {
                    const int ex = op == DLA_REDUCE_MAX || op == DLA_REDUCE_MIN;
                    reduce_case(dev, t, op, 2, col_x, col_y, 0, ex, ex ? 2 : 0, 3020);
                    reduce_case(dev, t, op, 2, lane_x, lane_y, 0, ex, ex ? 1 : 0, 3021);
                    reduce_case(dev, t, op, 3, mid_x, mid_y, 1, ex, ex ? 3 : 0, 3022);
                }
                const gemm_shape pages = {16, 12, 20, 37, 1, 0, 0, 1, -0.75, 0.5};
                const gemm_shape thin_m = {13, 1030, 70, 1, 0, 1, 0, 0, 1.0, 0};
                const gemm_shape thin_k = {1030, 70, 9, 1, 1, 0, 0, 0, 0.5, 1.0};
                const gemm_shape tiles = {700, 1100, 40, 1, 0, 0, 0, 0, 1.0, 0};
                gemm_case(dev, t, &pages, 3030);
                gemm_case(dev, t, &thin_m, 3031);
                gemm_case(dev, t, &thin_k, 3032);
                gemm_case(dev, t, &tiles, 3033);
            }
        }
    }
    omp_set_num_threads(saved);
}

/* ------------------------------------------------------- bad arguments */

static void new_kernels_reject_bad_arguments_with_a_status_and_a_message(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        snprintf(what, sizeof what, "%s bad arguments to ABI 1.1 kernels", dla_device_name(dev));
        dbuf b, bi;
        dbuf_init(&b, dev, DLA_F32, 256);
        dbuf_init(&bi, dev, DLA_I32, 64);
        const int64_t d34[] = {3, 4}, d4[] = {4};
        if (supports(dev, DLA_KERNEL_GATHER, DLA_F32, dla_device_table(dev)->gather)) {
            dla_index_args a = {.struct_size = sizeof a, .dim = 1};
            dense_view(&a.y, DLA_F32, 2, d34);
            dense_view(&a.x, DLA_F32, 2, d34);
            dense_view(&a.index, DLA_I32, 1, d4);
            a.y.mem = b.mem, a.x.mem = b.mem, a.x.offset = 100, a.index.mem = bi.mem;
            a.y.dims[1] = 4, a.x.dims[1] = 4;
            int32_t bad[4] = {0, 3, 4, 1}; /* 4 is past x's 4 columns */
            expect_ok(dla_device_table(dev)->copy_to_device(dla_device_context(dev), bi.mem, 0, bad,
                                                            sizeof bad));
            dla_clear_error();
            assert_int_equal(dla_device_table(dev)->gather(dla_device_context(dev), &a),
                             DLA_ERR_INVALID_ARGUMENT);
            assert_non_null(strstr(dla_last_error(), "index"));
        }
        if (supports(dev, DLA_KERNEL_SCATTER_ADD, DLA_F32, dla_device_table(dev)->scatter_add)) {
            dla_index_args a = {.struct_size = sizeof a, .dim = 0};
            dense_view(&a.y, DLA_F32, 2, d34);
            dense_view(&a.x, DLA_F32, 2, d34);
            a.x.dims[0] = 4, a.x.strides[1] = 4;
            dense_view(&a.index, DLA_I32, 1, d4);
            a.y.mem = b.mem, a.x.mem = b.mem, a.x.offset = 100, a.index.mem = bi.mem;
            int32_t bad[4] = {0, -1, 2, 2};
            expect_ok(dla_device_table(dev)->copy_to_device(dla_device_context(dev), bi.mem, 0, bad,
                                                            sizeof bad));
            dla_clear_error();
            assert_int_equal(dla_device_table(dev)->scatter_add(dla_device_context(dev), &a),
                             DLA_ERR_INVALID_ARGUMENT);
            assert_non_null(strstr(dla_last_error(), "index"));
        }
        if (supports(dev, DLA_KERNEL_POOL_BACKWARD, DLA_F32,
                     dla_device_table(dev)->pool_backward)) {
            pool_shape p = {.n = 1, .in = {4}, .out = {2}, .win = {2}, .stride = {2},
                            .channels = 3, .batch = 1};
            dla_pool_args a;
            pool_args_of(&a, &p, DLA_POOL_MAX, DLA_F32, 0);
            const int64_t xd[] = {4, 3}, yd[] = {2, 3};
            dense_view(&a.x, DLA_F32, 2, xd);
            dense_view(&a.y, DLA_F32, 2, yd);
            a.x.mem = b.mem, a.y.mem = b.mem, a.y.offset = 100; /* no index */
            dla_clear_error();
            assert_int_not_equal(dla_device_table(dev)->pool_backward(dla_device_context(dev), &a),
                                 DLA_OK);
            assert_true(strlen(dla_last_error()) > 0);
        }
        if (supports(dev, DLA_KERNEL_TERNARY, DLA_F32, dla_device_table(dev)->ternary)) {
            dla_ternary_args a = {.struct_size = sizeof a, .op = DLA_TERNARY_WHERE};
            dense_view(&a.z, DLA_F32, 2, d34);
            dense_view(&a.cond, DLA_F32, 2, d34); /* not logical */
            dense_view(&a.a, DLA_F32, 2, d34);
            dense_view(&a.b, DLA_F32, 2, d34);
            a.z.mem = a.cond.mem = a.a.mem = a.b.mem = b.mem;
            a.z.offset = 100;
            dla_clear_error();
            assert_int_not_equal(dla_device_table(dev)->ternary(dla_device_context(dev), &a),
                                 DLA_OK);
            assert_true(strlen(dla_last_error()) > 0);
        }
        if (supports(dev, DLA_KERNEL_BINARY, DLA_F32, dla_device_table(dev)->binary)) {
            dla_binary_args a = {.struct_size = sizeof a, .op = DLA_BINARY_LT};
            dense_view(&a.z, DLA_F32, 2, d34); /* a comparison writes logical */
            dense_view(&a.a, DLA_F32, 2, d34);
            dense_view(&a.b, DLA_F32, 2, d34);
            a.z.mem = a.a.mem = a.b.mem = b.mem;
            a.z.offset = 100;
            dla_clear_error();
            assert_int_not_equal(dla_device_table(dev)->binary(dla_device_context(dev), &a),
                                 DLA_OK);
            assert_true(strlen(dla_last_error()) > 0);
        }
        dbuf_free(&b);
        dbuf_free(&bi);
    }
}

/* --------------------------------------------------------- negotiation */

static dla_status quiet_error(dla_status status, const char *fmt, ...)
{
    return status;
}
static void *plain_alloc(size_t size, size_t align)
{
    void *p = NULL;
    return posix_memalign(&p, align > sizeof(void *) ? align : sizeof(void *), size) ? NULL : p;
}

/* A private copy of the cpu plugin (its own globals: the loaded one keeps
 * its host table) is initialized by an ABI 1.0 host and by an ABI 1.1 one. */
static void cpu_plugin_fills_only_the_table_members_the_host_has(void **state)
{
    const char *build = getenv("DLA_TEST_BUILDDIR");
    if (build == NULL)
        skip();
    char src[1024], copy[] = "/tmp/dla-cpu-plugin-XXXXXX";
    snprintf(src, sizeof src, "%s/plugins/cpu/.libs/libdlaccel-cpu.so", build);
    FILE *in = fopen(src, "rb");
    if (in == NULL)
        fail_msg("cannot open %s", src);
    int fd = mkstemp(copy);
    assert_true(fd >= 0);
    FILE *out = fdopen(fd, "wb");
    assert_non_null(out);
    char chunk[1 << 16];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, in)) > 0)
        assert_int_equal(fwrite(chunk, 1, got, out), got);
    fclose(in);
    assert_int_equal(fclose(out), 0);
    void *lib = dlopen(copy, RTLD_NOW | RTLD_LOCAL);
    unlink(copy);
    if (lib == NULL)
        fail_msg("dlopen %s: %s", copy, dlerror());
    dla_plugin_init_fn init;
    void *sym = dlsym(lib, DLA_PLUGIN_INIT_SYMBOL);
    assert_non_null(sym);
    memcpy(&init, &sym, sizeof init);

    dla_plugin_host host = {.struct_size = sizeof host, .abi_major = 1, .abi_minor = 0,
                            .error = quiet_error, .alloc = plain_alloc, .free = free};
    /* An ABI 1.0 host: its table ends after cast; the rest is not its. */
    const size_t v10 = offsetof(dla_plugin, ternary);
    dla_plugin table;
    memset(&table, 0xA5, sizeof table);
    memset(&table, 0, v10);
    table.struct_size = v10;
    assert_int_equal(init(&host, &table), DLA_OK);
    assert_int_equal(table.struct_size, v10);
    assert_int_equal(table.abi_major, DLA_PLUGIN_ABI_MAJOR);
    assert_int_equal(table.abi_minor, DLA_PLUGIN_ABI_MINOR);
    assert_non_null(table.cast);
    for (size_t k = v10; k < sizeof table; k++)
        assert_int_equal(((unsigned char *)&table)[k], 0xA5);

    /* An ABI 1.1 host gets the new kernels, and supports() owns up to them. */
    host.abi_minor = 1;
    memset(&table, 0, sizeof table);
    table.struct_size = sizeof table;
    assert_int_equal(init(&host, &table), DLA_OK);
    assert_int_equal(table.struct_size, sizeof table);
    assert_non_null(table.ternary);
    assert_non_null(table.pool_forward);
    assert_non_null(table.pool_backward);
    assert_non_null(table.gather);
    assert_non_null(table.scatter_add);
    void *dev = NULL;
    assert_int_equal(table.device_open(0, &dev), DLA_OK);
    for (dla_kernel k = DLA_KERNEL_TERNARY; k < DLA_KERNEL_COUNT; k++) {
        void (*member)(void);
        /* Each kernel's member, from its row of DLA_KERNEL_LIST. */
#define WHERE(id, name, member, ...) [id] = offsetof(dla_plugin, member),
        static const size_t where[] = {DLA_KERNEL_LIST(WHERE)};
#undef WHERE
        memcpy(&member, (const char *)&table + where[k], sizeof member);
        /* A member is there exactly when supports() claims single for it. */
        assert_int_equal(member != NULL, table.supports(dev, k, DLA_F32) != 0);
    }
    assert_true(table.supports(dev, DLA_KERNEL_GATHER, DLA_BOOL));
    assert_false(table.supports(dev, DLA_KERNEL_SCATTER_ADD, DLA_I32));
    table.device_close(dev);
    table.shutdown();
    dlclose(lib);
}

/* --------------------------------------------------------------- errors */

static void kernels_reject_mismatched_shapes_with_a_status_and_a_message(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        snprintf(what, sizeof what, "%s mismatched shapes", dla_device_name(dev));
        dbuf b;
        dbuf_init(&b, dev, DLA_F32, 64);
        const int64_t d34[] = {3, 4}, d35[] = {3, 5}, d24[] = {2, 4};
        if (supports(dev, DLA_KERNEL_BINARY, DLA_F32, dla_device_table(dev)->binary)) {
            dla_binary_args a = {.struct_size = sizeof a, .op = DLA_BINARY_ADD};
            dense_view(&a.z, DLA_F32, 2, d34);
            dense_view(&a.a, DLA_F32, 2, d34);
            dense_view(&a.b, DLA_F32, 2, d35);
            a.z.mem = a.a.mem = a.b.mem = b.mem;
            dla_clear_error();
            assert_int_not_equal(dla_device_table(dev)->binary(dla_device_context(dev), &a),
                                 DLA_OK);
            assert_true(strlen(dla_last_error()) > 0);
        }
        if (supports(dev, DLA_KERNEL_REDUCE, DLA_F32, dla_device_table(dev)->reduce)) {
            dla_reduce_args r = {.struct_size = sizeof r, .op = DLA_REDUCE_SUM};
            dense_view(&r.x, DLA_F32, 2, d34);
            dense_view(&r.y, DLA_F32, 2, d24); /* 2 is neither 3 nor 1 */
            r.x.mem = r.y.mem = b.mem;
            dla_clear_error();
            assert_int_not_equal(dla_device_table(dev)->reduce(dla_device_context(dev), &r),
                                 DLA_OK);
            assert_true(strlen(dla_last_error()) > 0);
        }
        if (supports(dev, DLA_KERNEL_GEMM, DLA_F32, dla_device_table(dev)->gemm)) {
            dla_gemm_args g = {.struct_size = sizeof g,
                               .dtype = DLA_F32,
                               .m = 4,
                               .n = 2,
                               .k = 3,
                               .batch = 1,
                               .alpha = 1};
            g.a = (dla_gemm_operand){b.mem, 0, 2, 0}; /* lda 2 < m 4 */
            g.b = (dla_gemm_operand){b.mem, 0, 3, 0};
            g.c = (dla_gemm_operand){b.mem, 0, 4, 0};
            dla_clear_error();
            assert_int_not_equal(dla_device_table(dev)->gemm(dla_device_context(dev), &g), DLA_OK);
            assert_true(strlen(dla_last_error()) > 0);
        }
        dbuf_free(&b);
    }
}

static void cpu_kernels_reject_views_that_reach_past_their_memory(void **state)
{
    have_devices();
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        if (strcmp(dla_device_plugin(dev), "cpu") != 0)
            continue;
        snprintf(what, sizeof what, "%s views past memory", dla_device_name(dev));
        dbuf b;
        dbuf_init(&b, dev, DLA_F32, 64);
        const int64_t d8x8[] = {8, 8}, d8x9[] = {8, 9};
        dla_binary_args a = {.struct_size = sizeof a, .op = DLA_BINARY_ADD};
        dense_view(&a.z, DLA_F32, 2, d8x8);
        dense_view(&a.a, DLA_F32, 2, d8x8);
        dense_view(&a.b, DLA_F32, 2, d8x8);
        a.z.mem = a.a.mem = a.b.mem = b.mem;
        expect_ok(dla_device_table(dev)->binary(dla_device_context(dev), &a)); /* exactly fits */
        a.b.offset = 1;
        assert_int_equal(dla_device_table(dev)->binary(dla_device_context(dev), &a),
                         DLA_ERR_INVALID_ARGUMENT);
        dense_view(&a.b, DLA_F32, 2, d8x9);
        dense_view(&a.z, DLA_F32, 2, d8x9);
        dense_view(&a.a, DLA_F32, 2, d8x9);
        a.z.mem = a.a.mem = a.b.mem = b.mem;
        assert_int_equal(dla_device_table(dev)->binary(dla_device_context(dev), &a),
                         DLA_ERR_INVALID_ARGUMENT);
        dla_gemm_args g = {.struct_size = sizeof g, .dtype = DLA_F32, .m = 8, .n = 8, .k = 8,
                           .batch = 2, .alpha = 1};
        g.a = (dla_gemm_operand){b.mem, 0, 8, 0};
        g.b = (dla_gemm_operand){b.mem, 0, 8, 0};
        g.c = (dla_gemm_operand){b.mem, 0, 8, 64}; /* the second page is past the end */
        assert_int_equal(dla_device_table(dev)->gemm(dla_device_context(dev), &g),
                         DLA_ERR_INVALID_ARGUMENT);
        float host[4];
        assert_int_equal(dla_device_table(dev)->copy_to_host(dla_device_context(dev), host, b.mem,
                                                             250, sizeof host),
                         DLA_ERR_INVALID_ARGUMENT);
        dbuf_free(&b);
    }
}

/* Resident memory of the process, MiB (VmRSS); -1 when unknown. */
static double resident_mib(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return kb < 0 ? -1.0 : kb / 1024.0;
}

/* The cpu plugin's device, for the cases that watch resident memory
 * (skipped where /proc does not say it); NULL when none is loaded. */
static dla_device *cpu_device_with_rss(void)
{
    have_devices();
    for (int i = 0; i < n_devices; i++)
        if (!strcmp(dla_device_plugin(devices[i]), "cpu")) {
            if (resident_mib() < 0)
                skip();
            return devices[i];
        }
    return NULL;
}

/* A block of bytes, written with value and freed: now cached, resident. */
static dla_mem cached_block(dla_device *dev, size_t bytes, int value)
{
    dla_mem m;
    expect_ok(dla_device_table(dev)->mem_alloc(dla_device_context(dev), bytes, &m));
    memset((void *)m, value, bytes);
    dla_device_table(dev)->mem_free(dla_device_context(dev), m);
    return m;
}

/* A block of bytes taken again (at the address at when it is not NULL),
 * written and read back: usable. Returns it still allocated. */
static dla_mem reused_block(dla_device *dev, size_t bytes, dla_mem at, int value)
{
    dla_mem m;
    expect_ok(dla_device_table(dev)->mem_alloc(dla_device_context(dev), bytes, &m));
    if (at)
        assert_ptr_equal((void *)m, (void *)at);
    memset((void *)m, value, bytes);
    assert_int_equal(((unsigned char *)m)[bytes - 1], value);
    return m;
}

static void cpu_cache_gives_back_idle_pages_on_a_miss(void **state)
{
    const size_t mib = (size_t)1 << 20;
    dla_device *dev = cpu_device_with_rss();
    if (!dev)
        return;
    /* A 64 MiB block, written, then cached by its free: resident. */
    dla_mem a = cached_block(dev, 64 * mib, 1), b;
    const double before = resident_mib();
    /* A 100 MiB request the cache cannot serve: the idle block's pages go
     * back first, so this costs 100 - 64 MiB more, not 100. */
    expect_ok(dla_device_table(dev)->mem_alloc(dla_device_context(dev), 100 * mib, &b));
    memset((void *)b, 2, 100 * mib);
    const double grew = resident_mib() - before;
    if (grew > 68.0)
        fail_msg("resident memory grew by %.1f MiB for a 100 MiB block beside an idle 64 MiB one",
                 grew);
    /* The idle block is still cached at its address, and usable. */
    dla_mem again = reused_block(dev, 64 * mib, a, 3);
    dla_device_table(dev)->mem_free(dla_device_context(dev), again);
    dla_device_table(dev)->mem_free(dla_device_context(dev), b);
}

/* dla_device_release_cached gives the cache's blocks back to the system:
 * resident memory falls by what they held, a second call finds nothing,
 * and the device allocates as before. */
static void cpu_release_cached_gives_the_cache_back(void **state)
{
    const size_t mib = (size_t)1 << 20;
    dla_device *dev = cpu_device_with_rss();
    if (!dev)
        return;
    size_t released = 1;
    expect_ok(dla_device_release_cached(dev, &released)); /* from empty */
    cached_block(dev, 64 * mib, 1);
    const double cached = resident_mib();
    expect_ok(dla_device_release_cached(dev, &released));
    if (released < 64 * mib)
        fail_msg("released %zu bytes with a 64 MiB block cached", released);
    const double fell = cached - resident_mib();
    if (fell < 48.0)
        fail_msg("resident memory fell by %.1f MiB after releasing a cached 64 MiB block", fell);
    expect_ok(dla_device_release_cached(dev, &released));
    assert_int_equal(released, 0);
    /* Every opened device, and no count asked for. */
    expect_ok(dla_device_release_cached(NULL, NULL));
    dla_device_table(dev)->mem_free(dla_device_context(dev), reused_block(dev, 64 * mib, NULL, 2));
}

/* A cached block unused for DLACCEL_CPU_CACHE_IDLE seconds (main sets 1)
 * gives its pages back at the plugin's next allocation, and stays cached,
 * usable, at its address. */
static void cpu_cache_gives_back_blocks_idle_for_the_idle_time(void **state)
{
    const size_t mib = (size_t)1 << 20;
    dla_device *dev = cpu_device_with_rss();
    if (!dev)
        return;
    expect_ok(dla_device_release_cached(dev, NULL));
    dla_mem a = cached_block(dev, 64 * mib, 1);
    const double cached = resident_mib();
    /* 2.2 s: past the idle time and the once-a-second look. */
    struct timespec pause = {2, 200000000};
    while (nanosleep(&pause, &pause) != 0)
        ;
    cached_block(dev, 2 * mib, 0); /* the plugin's next allocation and free */
    const double fell = cached - resident_mib();
    if (fell < 48.0)
        fail_msg("resident memory fell by %.1f MiB after a cached 64 MiB block idled 2.2 s", fell);
    dla_device_table(dev)->mem_free(dla_device_context(dev), reused_block(dev, 64 * mib, a, 3));
}

/* A host allocator that refuses a large request (1 MiB or more) when the
 * large blocks it has handed out would pass big_budget (-1: no budget). */
static long long big_live, big_budget = -1;
static int big_refusals;

static void *budget_alloc(void *user, void *ptr, size_t size)
{
    (void)user;
    const size_t mib = (size_t)1 << 20;
    size_t old = ptr ? malloc_usable_size(ptr) : 0;
    if (size == 0) {
        if (old >= mib)
            big_live -= (long long)old;
        free(ptr);
        return NULL;
    }
    if (!ptr && size >= mib && big_budget >= 0 && big_live + (long long)size > big_budget) {
        big_refusals++;
        return NULL;
    }
    void *p = realloc(ptr, size);
    if (p) {
        size_t now = malloc_usable_size(p);
        big_live += (now >= mib ? (long long)now : 0) - (old >= mib ? (long long)old : 0);
    }
    return p;
}

/* The cache of freed blocks never turns into an out-of-memory: a request
 * the host refuses while the cache holds blocks empties the cache into the
 * host and is asked again. */
static void cpu_cache_empties_itself_when_the_host_refuses(void **state)
{
    have_devices();
    const size_t mib = (size_t)1 << 20;
    for (int i = 0; i < n_devices; i++) {
        dla_device *dev = devices[i];
        if (strcmp(dla_device_plugin(dev), "cpu") != 0)
            continue;
        const dla_plugin *t = dla_device_table(dev);
        void *ctx = dla_device_context(dev);
        dla_set_allocator(budget_alloc, NULL);
        /* Three 5 MiB blocks, cached by their frees. */
        dla_mem a[3], big;
        for (int k = 0; k < 3; k++) {
            expect_ok(t->mem_alloc(ctx, 5 * mib, &a[k]));
            memset((void *)a[k], k, 5 * mib);
        }
        for (int k = 0; k < 3; k++)
            t->mem_free(ctx, a[k]);
        /* Room for 10 MiB more: a 12 MiB block fits only once the cached
         * 15 MiB are given back. */
        big_budget = big_live + (long long)(10 * mib);
        big_refusals = 0;
        expect_ok(t->mem_alloc(ctx, 12 * mib, &big));
        assert_int_equal(big_refusals, 1);
        memset((void *)big, 1, 12 * mib);
        t->mem_free(ctx, big);
        big_budget = -1;
        dla_set_allocator(NULL, NULL);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_device_describes_itself_and_has_the_required_members),
        cmocka_unit_test(memory_copies_honour_byte_offsets_in_both_directions),
        cmocka_unit_test(fill_sets_every_element_of_a_strided_view_and_nothing_else),
        cmocka_unit_test(strided_copy_copies_views_of_any_layout_in_every_dtype),
        cmocka_unit_test(cast_converts_between_every_pair_of_dtypes),
        cmocka_unit_test(fill_and_cast_send_nan_to_0_in_integers_and_1_in_bool),
        cmocka_unit_test(single_unary_ops_round_alpha_to_float_first),
        cmocka_unit_test(unary_ops_match_reference_on_strided_and_in_place_views),
        cmocka_unit_test(binary_ops_match_reference_with_broadcasting_and_strides),
        cmocka_unit_test(binary_ops_on_large_operands_take_the_fast_paths_correctly),
        cmocka_unit_test(where_picks_a_or_b_by_a_broadcast_logical_condition),
        cmocka_unit_test(reductions_match_reference_over_random_dims),
        cmocka_unit_test(reductions_of_large_tensors_use_every_layout_correctly),
        cmocka_unit_test(reduce_max_keeps_the_first_of_ties_and_lets_nan_win),
        cmocka_unit_test(cpu_reductions_of_short_runs_keep_the_bits_of_their_order),
        cmocka_unit_test(gemm_matches_reference_for_every_transpose_and_batch_layout),
        cmocka_unit_test(kernels_reject_mismatched_shapes_with_a_status_and_a_message),
        cmocka_unit_test(cpu_kernels_reject_views_that_reach_past_their_memory),
        cmocka_unit_test(cpu_cache_gives_back_idle_pages_on_a_miss),
        cmocka_unit_test(cpu_cache_empties_itself_when_the_host_refuses),
        cmocka_unit_test(cpu_release_cached_gives_the_cache_back),
        cmocka_unit_test(cpu_cache_gives_back_blocks_idle_for_the_idle_time),
        cmocka_unit_test(pool_forward_matches_reference_for_max_and_average_windows),
        cmocka_unit_test(pool_backward_adds_overlapping_windows_into_every_x_element),
        cmocka_unit_test(gather_copies_indexed_slices_in_every_dtype),
        cmocka_unit_test(scatter_add_sums_repeated_positions_without_races),
        cmocka_unit_test(large_kernels_match_reference_with_teams_of_1_2_3_and_5),
        cmocka_unit_test(new_kernels_reject_bad_arguments_with_a_status_and_a_message),
        cmocka_unit_test(cpu_plugin_fills_only_the_table_members_the_host_has),
    };
    /* Before the cpu plugin's cache reads it: a second of idle time, so the
     * idle-time case waits 2 s, not 11. Other cases lose only pages of
     * blocks cached for a second, which fault in again. */
    setenv("DLACCEL_CPU_CACHE_IDLE", "1", 1);
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
