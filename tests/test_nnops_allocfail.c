/*
 * test_nnops_allocfail.c - refuse the Nth host allocation, for every N,
 * across a model loss that runs every nn op forward and backward: each run
 * must end in DLA_ERR_OUT_OF_MEMORY or in DLA_OK with the right answer
 * (never a crash, never another status) and leave exactly the blocks it
 * found. The loop is the allocation-failure driver's (allocfail.h).
 */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>

#include <cmocka.h>

#include "allocfail.h"

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

static dla_status nn_ops(double *digest)
{
    if (dla_scope_begin() != DLA_OK)
        return DLA_ERR_STATE;
    dla_rng_seed(11);
    dla_tensor *in[3] = {dla_randn(DLA_F32, "SSCB", DLA_DIMS(4, 4, 4, 2)),
                         dla_rand(DLA_F32, "", DLA_DIMS(4)),
                         dla_randn(DLA_F32, "", DLA_DIMS(3, 16))};
    dla_tensor *out[4];
    dla_status st = dla_feval(every_op, NULL, 3, in, 4, out);
    for (int i = 0; st == DLA_OK && i < 4; i++)
        if (dla_tensor_numel(out[i]) <= 256)
            st = digest_of(out[i], digest);
    dla_scope_end();
    return st;
}

static void test_every_nn_op_survives_each_failed_allocation(void **state)
{
    (void)state;
    static const workflow w = {"nn_ops", nn_ops, 1};
    fail_every_allocation_in_turn(&w);
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(test_every_nn_op_survives_each_failed_allocation),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
