/*
 * test_nnops_allocfail.c - refuse the Nth host allocation, for every N,
 * across a model loss that runs every nn op forward and backward: each run
 * must end in an error status (never a crash, never a wrong success) and
 * leave exactly the blocks it found.
 */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

static dla_status every_op(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *x = in[0], *c = in[1], *w = in[2];
    dla_tensor *y, *m, *v;
    dla_batchnorm_train(x, c, c, c, dla_abs(c), NULL, &y, &m, &v);
    y = dla_add(y, dla_batchnorm(x, c, c, m, v, NULL));
    y = dla_gelu(dla_leakyrelu(dla_elu(y, 1.0), 0.1), "tanh");
    y = dla_add(dla_layernorm(y, c, c, NULL), dla_groupnorm(y, 2, c, c, NULL));
    y = dla_add(y, dla_instancenorm(dla_dropout(y, 0.25), c, c, NULL));
    dla_tensor *p = dla_add(dla_maxpool(y, DLA_DIMS(2), &(dla_pool_options){.stride = {2, 2}}),
                            dla_avgpool(y, DLA_DIMS(3), &(dla_pool_options){.padding_mode = "same", .stride = {2, 2}}));
    p = dla_add(p, dla_global_maxpool(p));
    dla_tensor *z = dla_logsoftmax(dla_fullyconnect(dla_softmax(p), w, NULL));
    out[0] = dla_sum(z, 0, NULL);
    return dla_gradient(out[0], 3, in, out + 1);
}

static dla_status workflow(void)
{
    if (dla_scope_begin() != DLA_OK)
        return DLA_ERR_STATE;
    dla_rng_seed(11);
    dla_tensor *in[3] = {dla_randn(DLA_F32, "SSCB", DLA_DIMS(4, 4, 4, 2)),
                         dla_rand(DLA_F32, "", DLA_DIMS(4)),
                         dla_randn(DLA_F32, "", DLA_DIMS(3, 16))};
    dla_tensor *out[4];
    dla_status st = dla_feval(every_op, NULL, 3, in, 4, out);
    float g[128];
    if (st == DLA_OK)
        st = dla_tensor_to_host(out[1], g, sizeof g);
    dla_scope_end();
    return st;
}

static void test_every_nn_op_survives_each_failed_allocation(void **state)
{
    (void)state;
    assert_int_equal(workflow(), DLA_OK); /* loads the plugins: those blocks stay */
    long baseline = tu_live, n;
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
    assert_true(n > 100);
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_nn_op_survives_each_failed_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
