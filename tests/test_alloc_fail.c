/*
 * test_alloc_fail.c - refuse the Nth host allocation, for every N, across a
 * tensor workflow: each run must end in an error status (never a crash) and
 * leave exactly the blocks it found (SQLite's malloc-failure loop).
 */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

/* A workflow that touches every path that allocates: format reordering on
 * upload, random numbers, broadcasting, views, a reshape that must copy,
 * GEMM with a transposed view, reductions, casts, a device move, scopes. */
static dla_status scoped_workflow(void)
{
    static const float data[24] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12,
                                   13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24};
    float out[64];
    dla_status st;
    if (dla_scope_begin() != DLA_OK)
        return DLA_ERR_STATE;
    dla_rng_seed(3);
    dla_tensor *x = dla_tensor_from_host(data, DLA_F32, "CSB", DLA_DIMS(2, 3, 4)); /* -> SCB */
    dla_tensor *r = dla_rand(DLA_F32, "SCB", DLA_DIMS(3, 2, 4));
    dla_tensor *y = dla_add(x, r);
    dla_tensor *s = dla_slice(y, 3, 1, 2, DLA_END);
    dla_tensor *p = dla_permute(dla_reshape(s, "", DLA_DIMS(6, 2)), DLA_DIMS(2, 1));
    dla_tensor *q = dla_reshape(p, "", DLA_DIMS(3, 4));            /* copies */
    dla_tensor *m = dla_mtimes(p, dla_ones(DLA_F32, "", DLA_DIMS(6, 5)));
    dla_tensor *z = dla_sum(dla_exp(dla_mul(m, m)), DLA_DIMS(2));
    dla_tensor *w = dla_cast(dla_max(q, DLA_DIMS(1)), DLA_F64);
    dla_tensor *moved = dla_tensor_to_device(z, dla_device_at(0));
    st = dla_tensor_to_host(moved, out, sizeof out);
    if (st == DLA_OK)
        st = dla_tensor_status(w);
    dla_scope_end();
    return st;
}

/* The same without a scope: every handle released by hand, error or not. */
static dla_status unscoped_workflow(void)
{
    double buf[16];
    dla_tensor *a = dla_randn(DLA_F64, "CB", DLA_DIMS(4, 4));
    dla_tensor *m = dla_abs(a);
    dla_tensor *b = dla_sqrt(m);
    dla_tensor *c = dla_slice(b, 2, 0, 2, DLA_END);
    dla_tensor *d = dla_contiguous(c);
    dla_status st = dla_tensor_to_host(d, buf, sizeof buf);
    dla_tensor_release(d);
    dla_tensor_release(c);
    dla_tensor_release(b);
    dla_tensor_release(m);
    dla_tensor_release(a);
    return st;
}

static void fail_every_allocation_in_turn(dla_status (*workflow)(void))
{
    assert_int_equal(workflow(), DLA_OK); /* loads plugins: those stay */
    long baseline = tu_live;
    long n;
    for (n = 1;; n++) {
        tu_calls = 0;
        tu_fail_at = n;
        dla_status st = workflow();
        tu_fail_at = 0;
        if (tu_live != baseline)
            fail_msg("refusing allocation %ld: %ld blocks leaked", n, tu_live - baseline);
        if (tu_calls < n) { /* nothing was refused: the whole workflow ran */
            assert_int_equal(st, DLA_OK);
            break;
        }
        if (st == DLA_OK)
            fail_msg("refusing allocation %ld of %ld went unnoticed", n, tu_calls);
    }
    print_message("# %ld allocations refused one at a time\n", n - 1);
    assert_true(n > 10); /* the workflow does allocate */
}

static void test_scoped_workflow_survives_every_failed_allocation(void **state)
{
    fail_every_allocation_in_turn(scoped_workflow);
}

static void test_unscoped_workflow_survives_every_failed_allocation(void **state)
{
    fail_every_allocation_in_turn(unscoped_workflow);
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scoped_workflow_survives_every_failed_allocation),
        cmocka_unit_test(test_unscoped_workflow_survives_every_failed_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
