/*
 * test_nnops.h - helpers shared by the nn op suites (test_nnops_*.c):
 * tensors from host doubles and back, random inputs, and the checks each
 * suite repeats (values against a host reference, error messages).
 *
 * Include after <cmocka.h>, testutil.h and gradcheck.h.
 */
#ifndef DLA_TEST_NNOPS_H
#define DLA_TEST_NNOPS_H

#include <dlaccel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A float64 tensor from host values (column-major). */
TU_UNUSED static dla_tensor *nn_from(const double *v, const char *fmt, int nd, const int64_t *dims)
{
    return dla_tensor_from_host(v, DLA_F64, fmt, nd, dims);
}

/* n values in [-2, 2) from the test's own generator; caller frees. */
TU_UNUSED static double *nn_values(int64_t n)
{
    double *p = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        p[i] = tu_unit() * 4.0 - 2.0;
    return p;
}

/* A random float64 tensor, kept out of any scope (the caller releases). */
TU_UNUSED static dla_tensor *nn_rand(const char *fmt, int nd, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= dims[i];
    double *v = nn_values(n);
    dla_tensor *t = dla_keep(nn_from(v, fmt, nd, dims));
    free(v);
    return t;
}

/* Like nn_rand with values in [0.5, 4.5): variances, divisors. */
TU_UNUSED static dla_tensor *nn_rand_pos(const char *fmt, int nd, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= dims[i];
    double *v = nn_values(n);
    for (int64_t i = 0; i < n; i++)
        v[i] += 2.5;
    dla_tensor *t = dla_keep(nn_from(v, fmt, nd, dims));
    free(v);
    return t;
}

/* The elements as doubles; caller frees. Fails the test on an error tensor. */
TU_UNUSED static double *nn_fetch(dla_tensor *t)
{
    if (dla_tensor_status(t) != DLA_OK)
        fail_msg("expected a tensor, got the error: %s", dla_tensor_error(t));
    int64_t n = dla_tensor_numel(t);
    double *out = malloc(sizeof(double) * (size_t)(n ? n : 1));
    dla_scope_begin();
    dla_tensor *d = dla_cast(t, DLA_F64);
    assert_int_equal(dla_tensor_to_host(d, out, sizeof(double) * (size_t)n), DLA_OK);
    dla_scope_end();
    return out;
}

/* t has dims (and format) as given and values within tol of want. */
TU_UNUSED static void nn_expect(dla_tensor *t, const char *fmt, int nd, const int64_t *dims,
                                const double *want, double tol)
{
    double *got = nn_fetch(t);
    assert_int_equal(dla_tensor_ndims(t), nd);
    for (int i = 0; i < nd; i++)
        assert_int_equal(dla_tensor_dim(t, i + 1), dims[i]);
    if (fmt)
        assert_string_equal(dla_tensor_format(t), fmt);
    int64_t n = dla_tensor_numel(t);
    for (int64_t i = 0; i < n; i++)
        if (!tu_close(got[i], want[i], tol))
            fail_msg("element %lld: got %.15g, want %.15g", (long long)i, got[i], want[i]);
    free(got);
}

/* t is an error tensor with status st whose message contains text. */
TU_UNUSED static void nn_expect_error(dla_tensor *t, dla_status st, const char *text)
{
    if (dla_tensor_status(t) != st)
        fail_msg("expected status %s, got %s (%s)", dla_status_str(st),
                 dla_status_str(dla_tensor_status(t)), dla_tensor_error(t));
    if (!strstr(dla_tensor_error(t), text))
        fail_msg("the message \"%s\" does not contain \"%s\"", dla_tensor_error(t), text);
}

#endif
