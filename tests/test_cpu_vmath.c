/*
 * test_cpu_vmath.c - the cpu plugin's exp, log, tanh, sigmoid and erf
 * (plugins/cpu/vmath.c: glibc's vector functions where the CPU has
 * AVX-512 or AVX2).
 *
 * - Against the scalar math library: within 4 units in the last place
 *   (libmvec's documented bound) on a sweep of ordinary values, equal on
 *   the special ones (NaN, the infinities, signed zeros, overflow and
 *   underflow), single and double. With DLACCEL_CPU_VMATH=off
 *   (tests/cpu_vmath_off.sh) the kernels are the scalar functions and must
 *   give their bits exactly.
 * - An element's bits do not depend on where it sits: a run starting at
 *   each offset 0..16 (so every lane and every partial last vector), a
 *   strided view, a fused program beside the one-op kernel, and 1, 2 and
 *   3 threads all give the bits of the whole dense run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <dlaccel.h>

#include "testutil.h"

enum { OP_EXP, OP_LOG, OP_TANH, OP_SIGMOID, OP_ERF, NOPS };
static const char *const names[NOPS] = {"exp", "log", "tanh", "sigmoid", "erf"};

static dla_tensor *apply(int op, dla_tensor *x)
{
    switch (op) {
    case OP_EXP: return dla_exp(x);
    case OP_LOG: return dla_log(x);
    case OP_TANH: return dla_tanh(x);
    case OP_SIGMOID: return dla_sigmoid(x);
    default: return dla_erf(x);
    }
}

static double scalar(int op, double x, int single)
{
    if (single) {
        float f = (float)x;
        switch (op) {
        case OP_EXP: return expf(f);
        case OP_LOG: return logf(f);
        case OP_TANH: return tanhf(f);
        case OP_SIGMOID: return 1 / (1 + expf(-f));
        default: return erff(f);
        }
    }
    switch (op) {
    case OP_EXP: return exp(x);
    case OP_LOG: return log(x);
    case OP_TANH: return tanh(x);
    case OP_SIGMOID: return 1 / (1 + exp(-x));
    default: return erf(x);
    }
}

/* Units in the last place between two finite values of one type. */
static int64_t ulps(double a, double b, int single)
{
    if (single) {
        float fa = (float)a, fb = (float)b;
        int32_t ia, ib;
        memcpy(&ia, &fa, 4);
        memcpy(&ib, &fb, 4);
        ia = ia < 0 ? INT32_MIN - ia : ia;
        ib = ib < 0 ? INT32_MIN - ib : ib;
        return llabs((int64_t)ia - ib);
    }
    int64_t ia, ib;
    memcpy(&ia, &a, 8);
    memcpy(&ib, &b, 8);
    ia = ia < 0 ? INT64_MIN - ia : ia;
    ib = ib < 0 ? INT64_MIN - ib : ib;
    return ia > ib ? ia - ib : ib - ia;
}

#define NSPECIAL 16
static const double specials[NSPECIAL] = {
    0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 88.7, 89.0, -103.0, -104.0, 710.0, -746.0,
    1e-30, -1e-30, 20.0};

/* n operands: the specials, then a sweep over the op's useful range. */
static double *operands(int op, int n)
{
    double *v = malloc(sizeof *v * (size_t)n);
    assert_non_null(v);
    for (int i = 0; i < n; i++) {
        if (i < NSPECIAL) {
            v[i] = specials[i];
            continue;
        }
        double u = (double)(i - NSPECIAL) / (double)(n - NSPECIAL); /* [0, 1) */
        v[i] = op == OP_LOG ? exp(-60 + 120 * u) : -40 + 80 * u + 1e-3 * sin(7.0 * i);
    }
    return v;
}

static dla_tensor *vec(const double *v, int n, int single)
{
    dla_tensor *t = dla_tensor_from_host(v, DLA_F64, "", DLA_DIMS(n, 1));
    return single ? dla_cast(t, DLA_F32) : t;
}

static void to_double(dla_tensor *t, double *out)
{
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    assert_int_equal(dla_tensor_to_host(dla_cast(t, DLA_F64), out,
                                        sizeof *out * (size_t)dla_tensor_numel(t)),
                     DLA_OK);
}

static void matches_the_scalar_functions(void **state)
{
    (void)state;
    const char *v = getenv("DLACCEL_CPU_VMATH");
    const int exact = v && !strcmp(v, "off");
    enum { N = 4096 };
    /* The choice the plugin reports: with libmvec in use, some results
     * must differ from the scalar functions' (else this test would pass
     * whether the vector functions ran or not). */
    const char *props = dla_device_properties(dla_device_current());
    const int vector = strstr(props, "vmath=libmvec") != NULL;
    if (exact && !strstr(props, "vmath=off"))
        fail_msg("DLACCEL_CPU_VMATH=off, but the cpu device says \"%s\"", props);
    int64_t differ = 0;
    dla_scope_begin();
    for (int single = 0; single < 2; single++)
        for (int op = 0; op < NOPS; op++) {
            double *x = operands(op, N), got[N];
            to_double(apply(op, vec(x, N, single)), got);
            for (int i = 0; i < N; i++) {
                double xi = single ? (double)(float)x[i] : x[i];
                double want = scalar(op, xi, single);
                int ok;
                if (isnan(want) || isnan(got[i]))
                    ok = isnan(want) && isnan(got[i]);
                else if (isinf(want) || want == 0 || exact || i < NSPECIAL)
                    ok = want == got[i] && signbit(want) == signbit(got[i]);
                else
                    ok = ulps(want, got[i], single) <= 4;
                if (!ok && i < NSPECIAL && !exact && isfinite(want) && want != 0 &&
                    ulps(want, got[i], single) <= 4)
                    ok = 1; /* an ordinary special (1, 88.7...): the sweep's bound */
                differ += memcmp(&want, &got[i], sizeof want) != 0;
                if (!ok)
                    fail_msg("%s %s(%.17g): %.17g, the scalar function gives %.17g%s",
                             single ? "single" : "double", names[op], xi, got[i], want,
                             exact ? " (DLACCEL_CPU_VMATH=off: must be equal)" : "");
            }
            free(x);
        }
    dla_scope_end();
    if (vector && differ == 0)
        fail_msg("the cpu device says \"%s\", yet every result is the scalar function's", props);
}

/* The bytes of t as doubles. */
static void assert_same_bits(dla_tensor *a, dla_tensor *b, const char *what)
{
    int64_t n = dla_tensor_numel(a);
    assert_int_equal(n, dla_tensor_numel(b));
    size_t es = dla_tensor_dtype(a) == DLA_F64 ? 8 : 4;
    unsigned char *x = malloc(es * (size_t)n + 1), *y = malloc(es * (size_t)n + 1);
    assert_int_equal(dla_tensor_to_host(a, x, es * (size_t)n), DLA_OK);
    assert_int_equal(dla_tensor_to_host(b, y, es * (size_t)n), DLA_OK);
    if (memcmp(x, y, es * (size_t)n))
        fail_msg("%s: the bits differ", what);
    free(x);
    free(y);
}

static void an_elements_bits_do_not_depend_on_where_it_sits(void **state)
{
    (void)state;
    enum { N = 1000 };
    dla_scope_begin();
    for (int single = 0; single < 2; single++)
        for (int op = 0; op < NOPS; op++) {
            double *x = operands(op, N + 64);
            dla_tensor *all = vec(x, N + 64, single), *whole = apply(op, all);
            /* Runs starting at every lane. */
            for (int64_t at = 0; at <= 16; at++) {
                dla_tensor *part = dla_slice(all, 1, at, 1, at + N);
                char what[64];
                snprintf(what, sizeof what, "%s from element %lld", names[op], (long long)at);
                assert_same_bits(apply(op, dla_contiguous(part)),
                                 dla_slice(whole, 1, at, 1, at + N), what);
                assert_same_bits(apply(op, part), dla_slice(whole, 1, at, 1, at + N), what);
            }
            /* Every third element: the strided walk. */
            dla_tensor *third = dla_slice(all, 1, 1, 3, N + 64);
            assert_same_bits(apply(op, third), dla_slice(whole, 1, 1, 3, N + 64), "strided");
            /* Thread counts. */
            int was = omp_get_max_threads();
            double *xb = operands(op, 40 * N);
            dla_tensor *big = vec(xb, 40 * N, single);
            free(xb);
            dla_tensor *ref = NULL;
            for (int nt = 1; nt <= 3; nt++) {
                omp_set_num_threads(nt);
                dla_tensor *r = apply(op, big);
                if (ref)
                    assert_same_bits(r, ref, "thread counts");
                else
                    ref = r;
            }
            omp_set_num_threads(was);
            free(x);
        }
    dla_scope_end();
}

static dla_status program(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    int op = *(const int *)ctx;
    out[0] = dla_affine(apply(op, in[0]), 2, 1);
    out[1] = dla_mul(apply(op, in[0]), in[0]);
    return dla_tensor_status(out[1]);
}

static void a_fused_program_gives_the_one_op_kernels_bits(void **state)
{
    (void)state;
    enum { N = 5000 };
    dla_scope_begin();
    for (int single = 0; single < 2; single++)
        for (int op = 0; op < NOPS; op++) {
            double *x = operands(op, N);
            dla_tensor *t = vec(x, N, single), *eager[2], *replay[2];
            dla_accel *af = dla_accelerate(program, NULL);
            assert_non_null(af);
            assert_int_equal(program(&op, 1, &t, 2, eager), DLA_OK);
            for (int k = 0; k < 3; k++)
                assert_int_equal(dla_accel_call(af, &op, 1, &t, 2, replay), DLA_OK);
            assert_true(dla_accel_hit_rate(af) > 0);
            assert_same_bits(replay[0], eager[0], names[op]);
            assert_same_bits(replay[1], eager[1], names[op]);
            dla_accel_free(af);
            free(x);
        }
    dla_scope_end();
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(matches_the_scalar_functions),
        TU_TEST(an_elements_bits_do_not_depend_on_where_it_sits),
        TU_TEST(a_fused_program_gives_the_one_op_kernels_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
