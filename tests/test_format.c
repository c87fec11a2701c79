/*
 * test_format.c - MATLAB format labels: what is accepted, the canonical
 * reordering of data, and the messages for what is refused.
 */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>

static void accepts(const char *fmt, int ndims, const int64_t *dims, const char *want)
{
    dla_tensor *t = dla_zeros(DLA_F32, fmt, ndims, dims);
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    assert_string_equal(dla_tensor_format(t), want);
    assert_int_equal(dla_tensor_ndims(t), want[0] ? (int)strlen(want) : ndims);
    dla_tensor_release(t);
}

static void refuses(const char *fmt, int ndims, const int64_t *dims, const char *needle)
{
    dla_tensor *t = dla_zeros(DLA_F32, fmt, ndims, dims);
    assert_int_equal(dla_tensor_status(t), DLA_ERR_FORMAT);
    assert_non_null(strstr(dla_tensor_error(t), needle));
    assert_non_null(strstr(dla_last_error(), needle));
    assert_int_equal(dla_tensor_ndims(t), 0);
    dla_tensor_release(t);
}

static void test_common_formats_are_accepted(void **state)
{
    accepts("SSCB", DLA_DIMS(28, 28, 1, 128), "SSCB");
    accepts("CB", DLA_DIMS(10, 128), "CB");
    accepts("CBT", DLA_DIMS(3, 128, 100), "CBT");
    accepts("SSSCB", DLA_DIMS(8, 8, 8, 2, 4), "SSSCB");
    accepts("U", DLA_DIMS(5), "U");
    accepts("", DLA_DIMS(5, 6), "");
}

static void test_labels_past_the_dims_are_trailing_singletons(void **state)
{
    /* MATLAB: dlarray(rand(28,28), "SSCB") is 28x28x1x1. */
    dla_tensor *t = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(28, 28));
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    assert_int_equal(dla_tensor_ndims(t), 4);
    assert_int_equal(dla_tensor_dim(t, 3), 1);
    assert_int_equal(dla_tensor_dim(t, 4), 1);
    dla_tensor_release(t);
    /* A singleton past the labels is dropped too. */
    accepts("CB", DLA_DIMS(10, 4, 1), "CB");
}

static void test_non_canonical_format_reorders_the_data(void **state)
{
    /* "CB" data given as "BC": a 2x3 (B=2, C=3) matrix becomes 3x2. */
    const float data[6] = {1, 2, 3, 4, 5, 6}; /* column-major 2x3: rows are batch */
    dla_tensor *t = dla_tensor_from_host(data, DLA_F32, "BC", DLA_DIMS(2, 3));
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    assert_string_equal(dla_tensor_format(t), "CB");
    assert_int_equal(dla_tensor_dim(t, 1), 3);
    assert_int_equal(dla_tensor_dim(t, 2), 2);
    float out[6];
    assert_int_equal(dla_tensor_to_host(t, out, sizeof out), DLA_OK);
    /* out(c, b) = data(b, c): the transpose. */
    const float want[6] = {1, 3, 5, 2, 4, 6};
    assert_memory_equal(out, want, sizeof want);
    dla_tensor_release(t);
}

static void test_spatial_dims_keep_their_relative_order(void **state)
{
    float data[2 * 3 * 4];
    for (int i = 0; i < 24; i++)
        data[i] = (float)i;
    /* "SCS": S1=2, C=3, S2=4 -> "SSC" with dims 2x4x3. */
    dla_tensor *t = dla_tensor_from_host(data, DLA_F32, "SCS", DLA_DIMS(2, 3, 4));
    assert_string_equal(dla_tensor_format(t), "SSC");
    assert_int_equal(dla_tensor_dim(t, 1), 2);
    assert_int_equal(dla_tensor_dim(t, 2), 4);
    assert_int_equal(dla_tensor_dim(t, 3), 3);
    float out[24];
    assert_int_equal(dla_tensor_to_host(t, out, sizeof out), DLA_OK);
    for (int s1 = 0; s1 < 2; s1++)
        for (int s2 = 0; s2 < 4; s2++)
            for (int c = 0; c < 3; c++)
                assert_true(out[s1 + 2 * s2 + 8 * c] == data[s1 + 2 * c + 6 * s2]);
    dla_tensor_release(t);
}

static void test_two_batch_labels_are_refused(void **state)
{
    refuses("SSBB", DLA_DIMS(2, 2, 2, 2), "'B' labels");
}

static void test_two_channel_and_time_labels_are_refused(void **state)
{
    refuses("CCB", DLA_DIMS(2, 2, 2), "'C' labels");
    refuses("CTT", DLA_DIMS(2, 2, 2), "'T' labels");
}

static void test_unknown_label_is_refused(void **state)
{
    refuses("SSXB", DLA_DIMS(2, 2, 2, 2), "unknown label 'X'");
    refuses("sscb", DLA_DIMS(2, 2, 2, 2), "unknown label 's'");
}

static void test_too_few_labels_for_the_dims_is_refused(void **state)
{
    refuses("SSC", DLA_DIMS(28, 28, 1, 128), "has 3 labels but the data has 4 dims (28x28x1x128)");
}

static void test_too_many_labels_is_refused(void **state)
{
    refuses("SSSSSSCBT", DLA_DIMS(1), "at most 8");
}

static void test_find_dim_locates_labels(void **state)
{
    dla_tensor *t = dla_zeros(DLA_F32, "SSCBT", DLA_DIMS(4, 4, 3, 2, 5));
    assert_int_equal(dla_tensor_find_dim(t, 'S'), 1);
    assert_int_equal(dla_tensor_find_dim(t, 'C'), 3);
    assert_int_equal(dla_tensor_find_dim(t, 'B'), 4);
    assert_int_equal(dla_tensor_find_dim(t, 'T'), 5);
    assert_int_equal(dla_tensor_find_dim(t, 'U'), 0);
    dla_tensor_release(t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_common_formats_are_accepted),
        TU_TEST(test_labels_past_the_dims_are_trailing_singletons),
        TU_TEST(test_non_canonical_format_reorders_the_data),
        TU_TEST(test_spatial_dims_keep_their_relative_order),
        TU_TEST(test_two_batch_labels_are_refused),
        TU_TEST(test_two_channel_and_time_labels_are_refused),
        TU_TEST(test_unknown_label_is_refused),
        TU_TEST(test_too_few_labels_for_the_dims_is_refused),
        TU_TEST(test_too_many_labels_is_refused),
        TU_TEST(test_find_dim_locates_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
