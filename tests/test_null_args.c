/*
 * test_null_args.c - a NULL where a public function takes a tensor is an
 * error tensor whose message names the function and the argument
 * ("dla_add: argument b is NULL"), never a crash and never an internal
 * op's name ("binary: input 2", which these said before) or no name at
 * all ("tensor argument is NULL").
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"

#include <dlaccel.h>
#include <string.h>

static void expect(dla_tensor *r, const char *call, const char *want)
{
    if (dla_tensor_status(r) != DLA_ERR_INVALID_ARGUMENT)
        fail_msg("%s: status %s, want invalid argument", call,
                 dla_status_str(dla_tensor_status(r)));
    if (strcmp(dla_tensor_error(r), want) != 0)
        fail_msg("%s: message \"%s\", want \"%s\"", call, dla_tensor_error(r), want);
    if (strcmp(dla_last_error(), want) != 0)
        fail_msg("%s: dla_last_error \"%s\", want \"%s\"", call, dla_last_error(), want);
}

#define EXPECT(call, want) expect((call), #call, want)

static void test_a_null_tensor_argument_names_the_function_and_the_argument(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F32, "SSCB", DLA_DIMS(4, 4, 2, 2));
    dla_tensor *v = dla_ones(DLA_F32, "", DLA_DIMS(2));
    dla_tensor *w = dla_ones(DLA_F32, "", DLA_DIMS(2, 2, 2, 3));
    const int64_t two[2] = {2, 2};
    /* elementwise, reductions, products */
    EXPECT(dla_add(NULL, x), "dla_add: argument a is NULL");
    EXPECT(dla_mul(x, NULL), "dla_mul: argument b is NULL");
    EXPECT(dla_max2(x, NULL), "dla_max2: argument b is NULL");
    EXPECT(dla_exp(NULL), "dla_exp: argument x is NULL");
    EXPECT(dla_affine(NULL, 2, 1), "dla_affine: argument x is NULL");
    EXPECT(dla_sum(NULL, 0, NULL), "dla_sum: argument x is NULL");
    EXPECT(dla_mean(NULL, 0, NULL), "dla_mean: argument x is NULL");
    EXPECT(dla_mtimes(NULL, v), "dla_mtimes: argument a is NULL");
    EXPECT(dla_pagemtimes(v, "none", NULL, "none"), "dla_pagemtimes: argument b is NULL");
    EXPECT(dla_gt(x, NULL), "dla_gt: argument b is NULL");
    EXPECT(dla_where(NULL, x, x), "dla_where: argument cond is NULL");
    /* views, shapes, transfers */
    EXPECT(dla_reshape(NULL, "", 1, (const int64_t[]){4}), "dla_reshape: argument t is NULL");
    EXPECT(dla_permute(NULL, 2, (const int64_t[]){2, 1}), "dla_permute: argument t is NULL");
    EXPECT(dla_slice(NULL, 1, 0, 1, 1), "dla_slice: argument t is NULL");
    EXPECT(dla_cat(2, 2, (dla_tensor *[]){x, NULL}), "dla_cat: argument tensors[1] is NULL");
    EXPECT(dla_pad(NULL, 1, NULL, NULL, 0), "dla_pad: argument x is NULL");
    EXPECT(dla_index(x, 1, NULL), "dla_index: argument index is NULL");
    EXPECT(dla_cast(NULL, DLA_F64), "dla_cast: argument t is NULL");
    EXPECT(dla_contiguous(NULL), "dla_contiguous: argument t is NULL");
    /* deep-learning ops */
    EXPECT(dla_conv(x, NULL, NULL, NULL), "dla_conv: argument weights is NULL");
    EXPECT(dla_transpconv(NULL, w, NULL, NULL), "dla_transpconv: argument x is NULL");
    EXPECT(dla_fullyconnect(x, NULL, NULL), "dla_fullyconnect: argument weights is NULL");
    EXPECT(dla_relu(NULL), "dla_relu: argument x is NULL");
    EXPECT(dla_leakyrelu(NULL, 0.1), "dla_leakyrelu: argument x is NULL");
    EXPECT(dla_gelu(NULL, NULL), "dla_gelu: argument x is NULL");
    EXPECT(dla_softmax(NULL), "dla_softmax: argument x is NULL");
    EXPECT(dla_layernorm(x, NULL, v, NULL), "dla_layernorm: argument offset is NULL");
    EXPECT(dla_groupnorm(x, 1, v, NULL, NULL), "dla_groupnorm: argument scale is NULL");
    EXPECT(dla_batchnorm(x, v, v, NULL, v, NULL), "dla_batchnorm: argument mean is NULL");
    EXPECT(dla_maxpool(NULL, 2, two, NULL), "dla_maxpool: argument x is NULL");
    EXPECT(dla_avgpool(NULL, 2, two, NULL), "dla_avgpool: argument x is NULL");
    EXPECT(dla_dropout(NULL, 0.5), "dla_dropout: argument x is NULL");
    /* losses and encodings */
    EXPECT(dla_crossentropy(NULL, x, NULL), "dla_crossentropy: argument y is NULL");
    EXPECT(dla_mse(x, NULL, NULL), "dla_mse: argument targets is NULL");
    EXPECT(dla_l1loss(x, NULL, NULL), "dla_l1loss: argument targets is NULL");
    EXPECT(dla_onehotencode(NULL, 3, NULL), "dla_onehotencode: argument labels is NULL");
    EXPECT(dla_onehotdecode(NULL, NULL), "dla_onehotdecode: argument scores is NULL");
    dla_scope_end();
}

/* A NULL array beside a count that asks for entries is named as the
 * array. These read as a bad count before: "dla_zeros: argument ndims: 2
 * is outside 0..8", "dla_maxpool: argument pool_size: 1 entries; give 1
 * to 3", "dla_cat: argument n: 2 tensors; at least 1 is needed". */
static void test_a_null_array_with_a_count_names_the_array(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F32, "SSCB", DLA_DIMS(4, 4, 2, 2));
    EXPECT(dla_zeros(DLA_F32, "", 2, NULL), "dla_zeros: argument dims is NULL, for ndims 2");
    EXPECT(dla_tensor_from_host((const float[]){1}, DLA_F32, "", 1, NULL),
           "dla_tensor_from_host: argument dims is NULL, for ndims 1");
    EXPECT(dla_reshape(x, "", 2, NULL), "dla_reshape: argument dims is NULL, for ndims 2");
    EXPECT(dla_permute(x, 4, NULL), "dla_permute: argument order is NULL, for ndims 4");
    EXPECT(dla_sum(x, 2, NULL), "dla_sum: argument dims is NULL, for ndims 2");
    EXPECT(dla_maxpool(x, 1, NULL, NULL), "dla_maxpool: argument pool_size is NULL, for npool 1");
    EXPECT(dla_avgpool(x, 2, NULL, NULL), "dla_avgpool: argument pool_size is NULL, for npool 2");
    EXPECT(dla_cat(1, 2, NULL), "dla_cat: argument tensors is NULL, for n 2");
    /* No entries asked for: NULL is no array, as before. */
    assert_int_equal(dla_tensor_status(dla_zeros(DLA_F32, "", 0, NULL)), DLA_OK);
    assert_int_equal(dla_tensor_status(dla_sum(x, 0, NULL)), DLA_OK);
    dla_scope_end();
}

int main(void)
{
    dla_set_allocator(tu_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(test_a_null_tensor_argument_names_the_function_and_the_argument),
        TU_TEST(test_a_null_array_with_a_count_names_the_array),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
