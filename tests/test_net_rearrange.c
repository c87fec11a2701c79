/*
 * test_net_rearrange.c - the layers that move elements without arithmetic:
 * depthToSpace2dLayer ("dcr" and "crd"), spaceToDepthLayer and
 * crop2dLayer and crop3dLayer (its "in" and "ref" ports, centre and custom windows);
 * a resize layer's "ref" port in a network's gradients; a port whose
 * option is off named with the option.
 * Values against index formulas written out as host loops, the refusals
 * and their messages, and gradients (first and second) of a network
 * using all three against finite differences, accelerated and not.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include "testutil.h"
#include "tu_assert.h"

#include <dlaccel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"

/* x(i) = i + 1 over dims of "SSCB": every element tells where it was. */
static dla_tensor *counting(const int64_t dims[4])
{
    const int64_t n = dims[0] * dims[1] * dims[2] * dims[3];
    double *h = malloc(sizeof *h * (size_t)n);
    assert_non_null(h);
    for (int64_t i = 0; i < n; i++)
        h[i] = (double)(i + 1);
    dla_tensor *t = dla_tensor_from_host(h, DLA_F64, "SSCB", 4, dims);
    free(h);
    return t;
}

static dla_net *alone(dla_layer *l, dla_tensor *x)
{
    dla_net *net = dla_net_create(1, &l);
    assert_non_null(net);
    if (dla_net_init(net, 1, &x) != DLA_OK)
        fail_msg("init: %s", dla_last_error());
    return net;
}

static dla_tensor *predict(dla_net *net, dla_tensor *x)
{
    dla_tensor *y = NULL;
    if (dla_net_predict(net, 1, &x, 1, &y, NULL) != DLA_OK)
        fail_msg("predict: %s", dla_last_error());
    return y;
}

/* Element (h, w, c, n) of a column-major H x W x C x N array. */
static double at(dla_tensor *t, int64_t h, int64_t w, int64_t c, int64_t n)
{
    const int64_t H = dla_tensor_dim(t, 1), W = dla_tensor_dim(t, 2), C = dla_tensor_dim(t, 3);
    return dla_tensor_item(t, h + H * (w + W * (c + C * n)));
}

/* y(h*bh + i, w*bw + j, c, n) = x(h, w, k, n) with k from the mode. */
static void expect_depth_to_space(dla_tensor *x, dla_tensor *y, int64_t bh, int64_t bw,
                                  int crd)
{
    const int64_t H = dla_tensor_dim(x, 1), W = dla_tensor_dim(x, 2), N = dla_tensor_dim(x, 4);
    const int64_t C = dla_tensor_dim(x, 3) / (bh * bw);
    assert_string_equal(dla_tensor_format(y), "SSCB");
    assert_int_equal(dla_tensor_dim(y, 1), H * bh);
    assert_int_equal(dla_tensor_dim(y, 2), W * bw);
    assert_int_equal(dla_tensor_dim(y, 3), C);
    assert_int_equal(dla_tensor_dim(y, 4), N);
    for (int64_t n = 0; n < N; n++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t h = 0; h < H; h++)
                for (int64_t w = 0; w < W; w++)
                    for (int64_t i = 0; i < bh; i++)
                        for (int64_t j = 0; j < bw; j++) {
                            const int64_t k = crd ? (c * bh + i) * bw + j : (i * bw + j) * C + c;
                            const double want = at(x, h, w, k, n);
                            const double got = at(y, h * bh + i, w * bw + j, c, n);
                            if (got != want)
                                fail_msg("%s: y(%lld, %lld, %lld, %lld) is %g; x's channel %lld "
                                         "holds %g", crd ? "crd" : "dcr",
                                         (long long)(h * bh + i), (long long)(w * bw + j),
                                         (long long)c, (long long)n, got, (long long)k, want);
                        }
}

static void depth_to_space_moves_channels_into_blocks_in_both_orders(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = counting((int64_t[]){2, 3, 12, 2});
    for (int crd = 0; crd < 2; crd++) {
        dla_net *net = alone(dla_depth_to_space2d_layer((int64_t[]){2, 3},
                                 &(dla_depth_to_space2d_layer_options){
                                     .mode = crd ? "crd" : NULL}), x);
        expect_depth_to_space(x, predict(net, x), 2, 3, crd);
        char summary[4096];
        dla_net_summary(net, summary, sizeof summary);
        if (!strstr(summary, crd ? "depth to space with block size [2 3], mode \"crd\""
                                 : "depth to space with block size [2 3], mode \"dcr\""))
            fail_msg("%s", summary);
        dla_net_free(net);
    }
    /* A scalar block size is square. */
    x = counting((int64_t[]){3, 2, 8, 1});
    dla_net *net = alone(dla_depth_to_space2d_layer((int64_t[]){2, 0}, NULL), x);
    expect_depth_to_space(x, predict(net, x), 2, 2, 0);
    dla_net_free(net);
    dla_scope_end();
}

static void space_to_depth_is_the_inverse_of_dcr(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = counting((int64_t[]){4, 9, 2, 2});
    dla_net *net = alone(dla_space_to_depth_layer((int64_t[]){2, 3}, NULL), x);
    dla_tensor *y = predict(net, x);
    assert_int_equal(dla_tensor_dim(y, 1), 2);
    assert_int_equal(dla_tensor_dim(y, 2), 3);
    assert_int_equal(dla_tensor_dim(y, 3), 12);
    /* Depth to space of y in "dcr" gives x back, so y's channels are in
     * "dcr"'s order: checked element by element there. */
    expect_depth_to_space(y, x, 2, 3, 0);
    dla_net *back = alone(dla_depth_to_space2d_layer((int64_t[]){2, 3}, NULL), y);
    assert_true(tu_same_bits(predict(back, y), x));
    dla_net_free(back);
    dla_net_free(net);
    dla_scope_end();
}

/* MATLAB's spaceToDepthForward drops the rows and columns past the last
 * whole block: 5 x 7 by 2 x 3 is the first 4 x 6, as 2 x 2 x 6C. */
static void space_to_depth_drops_what_is_past_the_last_block(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = counting((int64_t[]){5, 7, 2, 2});
    dla_net *net = alone(dla_space_to_depth_layer((int64_t[]){2, 3}, NULL), x);
    dla_tensor *y = predict(net, x);
    assert_int_equal(dla_tensor_dim(y, 1), 2);
    assert_int_equal(dla_tensor_dim(y, 2), 2);
    assert_int_equal(dla_tensor_dim(y, 3), 12);
    dla_tensor *whole = dla_slice(dla_slice(x, 1, 0, 1, 4), 2, 0, 1, 6);
    expect_depth_to_space(y, dla_contiguous(whole), 2, 3, 0);
    dla_net_free(net);
    dla_scope_end();
}

static void expect_refused(dla_layer *l, dla_tensor *x, dla_status want, const char *msg)
{
    dla_net *net = dla_net_create(1, &l);
    if (!net) {
        assert_int_equal(dla_last_status(), want);
    } else {
        assert_int_equal(dla_net_init(net, 1, &x), want);
        dla_net_free(net);
    }
    if (!strstr(dla_last_error(), msg))
        fail_msg("wanted \"%s\" in: %s", msg, dla_last_error());
}

static void bad_blocks_modes_and_inputs_are_refused_by_name(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = counting((int64_t[]){4, 6, 6, 1});
    expect_refused(dla_depth_to_space2d_layer((int64_t[]){0, 2}, &(
                       dla_depth_to_space2d_layer_options){.name = "d"}),
                   x, DLA_ERR_INVALID_ARGUMENT,
                   "depthToSpace2d 'd': BlockSize [0 2] must be whole numbers from 1");
    expect_refused(dla_depth_to_space2d_layer(NULL, NULL), x, DLA_ERR_INVALID_ARGUMENT,
                   "BlockSize [0 0]");
    expect_refused(dla_depth_to_space2d_layer((int64_t[]){2, 2}, &(
                       dla_depth_to_space2d_layer_options){.mode = "DCR"}),
                   x, DLA_ERR_INVALID_ARGUMENT, "Mode \"DCR\"; use \"dcr\" or \"crd\"");
    expect_refused(dla_depth_to_space2d_layer((int64_t[]){2, 2}, NULL), x, DLA_ERR_SHAPE,
                   "the input's 6 channels are not a multiple of the 2 x 2 block (4)");
    expect_refused(dla_space_to_depth_layer((int64_t[]){5, 3}, NULL), x, DLA_ERR_SHAPE,
                   "spaceToDepth: the input's 4 x 6 is smaller than the 5 x 3 block");
    expect_refused(dla_space_to_depth_layer((int64_t[]){-1, 1}, &(dla_layer_options){
                       .name = "s"}), x, DLA_ERR_INVALID_ARGUMENT,
                   "spaceToDepth 's': BlockSize [-1 1]");
    dla_tensor *seq = dla_zeros(DLA_F64, "CBT", DLA_DIMS(4, 2, 3));
    expect_refused(dla_space_to_depth_layer((int64_t[]){1, 1}, NULL), seq, DLA_ERR_FORMAT,
                   "the input is \"CBT\"; spaceToDepth needs two \"S\" dims and a \"C\" dim");
    /* A later call of other sizes is refused, not reshaped at random. */
    dla_net *net = alone(dla_depth_to_space2d_layer((int64_t[]){2, 2}, NULL),
                         counting((int64_t[]){2, 2, 8, 1}));
    dla_tensor *y = NULL;
    assert_int_equal(dla_net_predict(net, 1, &x, 1, &y, NULL), DLA_ERR_SHAPE);
    if (!strstr(dla_last_error(), "6 channels are not a multiple"))
        fail_msg("%s", dla_last_error());
    dla_net_free(net);
    /* Empty inputs whose dims times the block's pass int64: refused, not
     * given a wrapped (0) output dim. */
    const int64_t big = (int64_t)1 << 45, block = (int64_t)1 << 20;
    expect_refused(dla_depth_to_space2d_layer((int64_t[]){block, block}, NULL),
                   dla_zeros(DLA_F32, "SSCB", DLA_DIMS(big, big, 0, 1)), DLA_ERR_SHAPE,
                   "depthToSpace2d: the input's 35184372088832 x 35184372088832 in 1048576 x "
                   "1048576 blocks gives more rows or columns than an int64 counts");
    expect_refused(dla_space_to_depth_layer((int64_t[]){block, block}, NULL),
                   dla_zeros(DLA_F32, "SSCB", DLA_DIMS(block, block, big, 0)), DLA_ERR_SHAPE,
                   "spaceToDepth: the input's 35184372088832 channels times the 1048576 x "
                   "1048576 block are more than an int64 counts");
    dla_scope_end();
}

/* input (H x W x 2) -> pool -> crop/ref; input -> crop/in. */
static dla_net *crop_net(int64_t h, int64_t w, dla_layer *crop)
{
    dla_layer *l[] = {
        dla_image_input_layer(h, w, 2, &(dla_image_input_options){.normalization = "none",
                                                                   .name = "in"}),
        dla_maxpool2d_layer(2, 2, &(dla_pool_layer_options){.stride = {2, 2}, .name = "pool"}),
    };
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    assert_int_equal(dla_net_add_layers(net, 1, &crop), DLA_OK);
    if (dla_net_connect(net, "in", "crop/in") != DLA_OK ||
        dla_net_connect(net, "pool", "crop/ref") != DLA_OK)
        fail_msg("connect: %s", dla_last_error());
    return net;
}

/* y is x(r0 .. r0+rows-1, c0 .. c0+cols-1, :, :). */
static void expect_window(dla_tensor *x, dla_tensor *y, int64_t r0, int64_t c0, int64_t rows,
                          int64_t cols)
{
    assert_string_equal(dla_tensor_format(y), "SSCB");
    assert_int_equal(dla_tensor_dim(y, 1), rows);
    assert_int_equal(dla_tensor_dim(y, 2), cols);
    for (int64_t n = 0; n < dla_tensor_dim(x, 4); n++)
        for (int64_t c = 0; c < dla_tensor_dim(x, 3); c++)
            for (int64_t i = 0; i < rows; i++)
                for (int64_t j = 0; j < cols; j++)
                    if (at(y, i, j, c, n) != at(x, r0 + i, c0 + j, c, n))
                        fail_msg("y(%lld, %lld) is %g; x(%lld, %lld) is %g", (long long)i,
                                 (long long)j, at(y, i, j, c, n), (long long)(r0 + i),
                                 (long long)(c0 + j), at(x, r0 + i, c0 + j, c, n));
}

static void crop_takes_the_reference_size_at_the_centre_or_a_location(void **state)
{
    (void)state;
    dla_scope_begin();
    /* 8 x 7 pooled to 4 x 3: the centre rows 4 - 2 = 2.., columns 3 - 1 = 2... */
    dla_tensor *x = counting((int64_t[]){8, 7, 2, 2});
    dla_net *net = crop_net(8, 7, dla_crop2d_layer(&(dla_crop2d_layer_options){.name = "crop"}));
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    expect_window(x, predict(net, x), 2, 2, 4, 3);
    char summary[4096];
    dla_net_summary(net, summary, sizeof summary);
    if (!strstr(summary, "center crop"))
        fail_msg("%s", summary);
    dla_net_free(net);
    /* 7 x 6 pooled to 3 x 3: rows 3 - 1 = 2.., columns 3 - 1 = 2.. (one
     * more column before the window than after: 6 is even). */
    x = counting((int64_t[]){7, 6, 2, 1});
    net = crop_net(7, 6, dla_crop2d_layer(&(dla_crop2d_layer_options){.name = "crop"}));
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    expect_window(x, predict(net, x), 2, 2, 3, 3);
    dla_net_free(net);
    /* Location [x y] = [4 2]: column 4, row 2 (1-based). */
    x = counting((int64_t[]){8, 7, 2, 2});
    net = crop_net(8, 7, dla_crop2d_layer(&(dla_crop2d_layer_options){.name = "crop",
                                                                      .location = {4, 2}}));
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_OK);
    expect_window(x, predict(net, x), 1, 3, 4, 3);
    dla_net_summary(net, summary, sizeof summary);
    if (!strstr(summary, "crop at [4 2]"))
        fail_msg("%s", summary);
    dla_net_free(net);
    dla_scope_end();
}

static void crop_ports_and_windows_that_do_not_fit_are_refused(void **state)
{
    (void)state;
    dla_scope_begin();
    /* The ports are "in" and "ref". */
    dla_layer *l[] = {dla_image_input_layer(4, 4, 1, &(dla_image_input_options){
                          .normalization = "none", .name = "in"}),
                      dla_crop2d_layer(&(dla_crop2d_layer_options){.name = "crop"})};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    assert_int_equal(dla_net_connect(net, "in", "crop/mask"), DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_last_error(), "layer 'crop' has inputs \"in\" and \"ref\""))
        fail_msg("%s", dla_last_error());
    /* The chain fed "crop/in"; "crop/ref" unconnected is a network input. */
    assert_int_equal(dla_net_input_count(net), 2);
    assert_string_equal(dla_net_input_name(net, 1), "crop/ref");
    dla_net_free(net);
    /* Location [6 1] puts a 4 x 3 window's last column at 8 of 7. */
    net = crop_net(8, 7, dla_crop2d_layer(&(dla_crop2d_layer_options){.name = "crop",
                                                                      .location = {6, 1}}));
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_ERR_SHAPE);
    if (!strstr(dla_last_error(), "a 4 x 3 window at Location [6 1] (column, row) does not fit "
                                  "in the input's 8 x 7"))
        fail_msg("%s", dla_last_error());
    dla_net_free(net);
    /* A reference larger than the input. */
    dla_layer *big[] = {dla_image_input_layer(3, 3, 1, &(dla_image_input_options){
                            .normalization = "none", .name = "small"}),
                        dla_crop2d_layer(&(dla_crop2d_layer_options){.name = "crop"}),
                        dla_image_input_layer(4, 3, 1, &(dla_image_input_options){
                            .normalization = "none", .name = "large"})};
    net = dla_net_create(2, big);
    assert_non_null(net);
    assert_int_equal(dla_net_add_layers(net, 1, big + 2), DLA_OK);
    assert_int_equal(dla_net_connect(net, "large", "crop/ref"), DLA_OK);
    assert_int_equal(dla_net_init(net, 0, NULL), DLA_ERR_SHAPE);
    if (!strstr(dla_last_error(), "the reference's 4 x 3 does not fit in the input's 3 x 3"))
        fail_msg("%s", dla_last_error());
    dla_net_free(net);
    /* Options refused when made. */
    dla_layer *bad = dla_crop2d_layer(&(dla_crop2d_layer_options){.location = {1.5, 2}});
    assert_int_equal(dla_layer_status(bad), DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_layer_error(bad), "Location [1.5 2] must be whole numbers from 1"))
        fail_msg("%s", dla_layer_error(bad));
    dla_layer_free(bad);
    bad = dla_crop2d_layer(&(dla_crop2d_layer_options){.mode = "centercrop",
                                                       .location = {1, 2}, .name = "c"});
    if (!strstr(dla_layer_error(bad), "crop2d 'c': Location [1 2] with Mode \"centercrop\""))
        fail_msg("%s", dla_layer_error(bad));
    dla_layer_free(bad);
    bad = dla_crop2d_layer(&(dla_crop2d_layer_options){.mode = "custom", .name = "c"});
    if (!strstr(dla_layer_error(bad), "crop2d 'c': Location [0 0] must be whole numbers"))
        fail_msg("%s", dla_layer_error(bad));
    dla_layer_free(bad);
    dla_scope_end();
}

/* crop3dLayer alone: both its inputs are network inputs ("crop/in",
 * "crop/ref"); Location [x y z] is column, row, depth; the centre rule
 * is crop2d's along all three. */
static void crop3d_takes_the_reference_volume(void **state)
{
    (void)state;
    dla_scope_begin();
    const int64_t dims[5] = {5, 6, 7, 2, 2};
    const int64_t n = 5 * 6 * 7 * 2 * 2;
    double *h = malloc(sizeof *h * (size_t)n);
    assert_non_null(h);
    for (int64_t i = 0; i < n; i++)
        h[i] = (double)i;
    dla_tensor *x = dla_tensor_from_host(h, DLA_F64, "SSSCB", 5, dims);
    free(h);
    dla_tensor *ref = dla_zeros(DLA_F32, "SSSCB", DLA_DIMS(2, 3, 4, 1, 1));
    const double locs[2][3] = {{0, 0, 0}, {4, 3, 2}};
    /* 0-based first row, column, depth: the centre's 5/2 - 2/2 = 1,
     * 6/2 - 3/2 = 2, 7/2 - 4/2 = 1; Location [4 3 2]: row 2, column 3,
     * depth 1. */
    const int64_t first[2][3] = {{1, 2, 1}, {2, 3, 1}};
    for (int k = 0; k < 2; k++) {
        dla_layer *l = dla_crop3d_layer(&(dla_crop3d_layer_options){
            .name = "crop", .location = {locs[k][0], locs[k][1], locs[k][2]}});
        dla_net *net = dla_net_create(1, &l);
        assert_non_null(net);
        assert_string_equal(dla_net_input_name(net, 0), "crop/in");
        assert_string_equal(dla_net_input_name(net, 1), "crop/ref");
        dla_tensor *in[2] = {x, ref}, *y = NULL;
        if (dla_net_init(net, 2, in) != DLA_OK ||
            dla_net_predict(net, 2, in, 1, &y, NULL) != DLA_OK)
            fail_msg("%s", dla_last_error());
        assert_string_equal(dla_tensor_format(y), "SSSCB");
        assert_int_equal(dla_tensor_numel(y), 2 * 3 * 4 * 2 * 2);
        for (int64_t e = 0; e < dla_tensor_numel(y); e++) {
            const int64_t r = e % 2, c = e / 2 % 3, d = e / 6 % 4, rest = e / 24;
            const int64_t src = (first[k][0] + r) +
                                5 * ((first[k][1] + c) + 6 * ((first[k][2] + d) + 7 * rest));
            if (dla_tensor_item(y, e) != (double)src)
                fail_msg("location %d: y[%lld] is %g, want x[%lld]", k, (long long)e,
                         dla_tensor_item(y, e), (long long)src);
        }
        dla_net_free(net);
    }
    /* [4 3 5] ends the 4-deep window at depth 8 of 7. */
    dla_layer *l = dla_crop3d_layer(&(dla_crop3d_layer_options){.location = {4, 3, 5}});
    dla_net *net = dla_net_create(1, &l);
    assert_int_equal(dla_net_init(net, 2, (dla_tensor *[]){x, ref}), DLA_ERR_SHAPE);
    if (!strstr(dla_last_error(), "crop3d: a 2 x 3 x 4 window at Location [4 3 5] (column, row, "
                                  "depth) does not fit in the input's 5 x 6 x 7"))
        fail_msg("%s", dla_last_error());
    dla_net_free(net);
    dla_layer *bad = dla_crop3d_layer(&(dla_crop3d_layer_options){.location = {1, 2, 0.5}});
    if (!strstr(dla_layer_error(bad), "crop3d: Location [1 2 0.5] must be whole numbers"))
        fail_msg("%s", dla_layer_error(bad));
    dla_layer_free(bad);
    l = dla_crop3d_layer(NULL);
    net = dla_net_create(1, &l);
    dla_tensor *flat = dla_zeros(DLA_F64, "SSCB", DLA_DIMS(4, 4, 1, 1));
    assert_int_equal(dla_net_init(net, 2, (dla_tensor *[]){flat, flat}), DLA_ERR_FORMAT);
    if (!strstr(dla_last_error(), "crop3dLayer needs three \"S\" dims"))
        fail_msg("%s", dla_last_error());
    dla_net_free(net);
    dla_scope_end();
}

/* A port whose option is off ("rs/ref" of a resize layer without
 * EnableReferenceInput, "attn/mask", "lstm/hidden") names the option; it
 * said "layer 'rs' has inputs in1..in1". */
static void a_port_of_an_option_that_is_off_names_the_option(void **state)
{
    (void)state;
    dla_layer *l[] = {
        dla_image_input_layer(4, 4, 1, &(dla_image_input_options){.normalization = "none",
                                                                   .name = "in"}),
        dla_resize2d_layer(&(dla_resize2d_layer_options){.scale = {2}, .name = "rs"}),
        dla_self_attention_layer(1, 4, &(dla_self_attention_layer_options){.name = "attn"}),
        dla_lstm_layer(3, &(dla_lstm_layer_options){.name = "lstm"}),
    };
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    assert_int_equal(dla_net_add_layers(net, 1, l + 2), DLA_OK);
    assert_int_equal(dla_net_add_layers(net, 1, l + 3), DLA_OK);
    static const char *const dest[] = {"rs/ref", "attn/mask", "lstm/hidden"};
    static const char *const want[] = {
        "dla_net_connect: destination \"rs/ref\": layer 'rs' has no input \"ref\": its "
        "EnableReferenceInput is off (its input is \"rs\")",
        "layer 'attn' has no input \"mask\": its HasPaddingMaskInput is off",
        "layer 'lstm' has no input \"hidden\": its HasStateInputs is off"};
    for (int k = 0; k < 3; k++) {
        assert_int_equal(dla_net_connect(net, "in", dest[k]), DLA_ERR_INVALID_ARGUMENT);
        if (!strstr(dla_last_error(), want[k]))
            fail_msg("%s", dla_last_error());
    }
    /* The input itself still connects by "name/in", and other names still
     * list in1..in1. */
    assert_int_equal(dla_net_disconnect(net, "in", "rs/in"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "in", "rs/in"), DLA_OK);
    assert_int_equal(dla_net_connect(net, "in", "rs/other"), DLA_ERR_INVALID_ARGUMENT);
    if (!strstr(dla_last_error(), "layer 'rs' has inputs in1..in1"))
        fail_msg("%s", dla_last_error());
    dla_net_free(net);
}

/* in -> ca -> crop/in (or rs/in) -> fc; in -> cb -> crop/ref: cb reaches
 * the output only through a port whose values are never read. */
static dla_net *sized_by_a_branch(int resize)
{
    dla_layer *l[] = {
        dla_image_input_layer(6, 6, 1, &(dla_image_input_options){.normalization = "none",
                                                                   .name = "in"}),
        dla_conv2d_layer(3, 3, 2, &(dla_conv_layer_options){.padding_mode = "same",
                                                             .name = "ca"}),
        resize ? dla_resize2d_layer(&(dla_resize2d_layer_options){.enable_reference_input = 1,
                                                                   .name = "crop"})
               : dla_crop2d_layer(&(dla_crop2d_layer_options){.name = "crop"}),
        dla_fc_layer(2, NULL),
        dla_softmax_layer(NULL),
        dla_conv2d_layer(3, 3, 2, &(dla_conv_layer_options){.name = "cb"}),
    };
    dla_net *net = dla_net_create(5, l);
    assert_non_null(net);
    assert_int_equal(dla_net_add_layers(net, 1, l + 5), DLA_OK);
    if (dla_net_connect(net, "in", "cb") != DLA_OK ||
        dla_net_connect(net, "cb", "crop/ref") != DLA_OK || dla_net_init(net, 0, NULL) != DLA_OK)
        fail_msg("%s", dla_last_error());
    return net;
}

typedef struct branch_ctx {
    dla_net *net;
    int penalty; /* add sum(cb/Weights .^ 2) to the loss */
} branch_ctx;

/* out = {loss, one gradient per learnable}. */
static dla_status branch_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                              dla_tensor **out)
{
    (void)nin, (void)nout;
    const branch_ctx *b = ctx;
    dla_tensor *y = NULL;
    dla_status st = dla_net_forward(b->net, 1, in, 1, &y, NULL, NULL);
    if (st != DLA_OK)
        return st;
    out[0] = dla_sum(dla_mul(y, y), 0, NULL);
    if (b->penalty) {
        dla_tensor *w = dla_net_get(b->net, "cb", "Weights");
        out[0] = dla_add(out[0], dla_sum(dla_mul(w, w), 0, NULL));
    }
    return dla_net_gradient(b->net, out[0], out + 1);
}

/* Learnables that reach the outputs only through a "ref" input (a branch
 * that only sizes a crop or a resize) have zero gradients, as their
 * values change nothing; dla_net_gradient refused them ("the loss does
 * not depend on learnable 3, cb/Weights"), and trainnet with it. A loss
 * that reads them itself still gets their gradient. */
static void a_branch_that_only_sizes_gets_zero_gradients(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(9);
    for (int resize = 0; resize < 2; resize++) {
        dla_net *net = sized_by_a_branch(resize);
        assert_string_equal(dla_net_layer_name(net, 5), "cb");
        const int nl = dla_net_learnable_count(net);
        assert_int_equal(nl, 6);
        dla_tensor *x = dla_randn(DLA_F32, "SSCB", DLA_DIMS(6, 6, 1, 3));
        for (int accel = 0; accel < 2; accel++)
            for (int penalty = 0; penalty < 2; penalty++) {
                dla_net_set_accelerate(net, accel);
                branch_ctx b = {net, penalty};
                dla_tensor *out[7];
                if (dla_feval(branch_loss, &b, 1, &x, 1 + nl, out) != DLA_OK)
                    fail_msg("resize %d, accel %d, penalty %d: %s", resize, accel, penalty,
                             dla_last_error());
                /* ca's and fc's rows: not zero; cb's: zero, or 2 w and 0
                 * with the penalty. */
                dla_table *t = dla_net_learnables(net);
                for (int r = 0; r < nl; r++) {
                    dla_tensor *g = out[1 + r], *v = dla_table_value(t, r);
                    if (strcmp(dla_table_layer(t, r), "cb")) {
                        if (!(dla_tensor_item(dla_max(dla_abs(g), 0, NULL), 0) > 0))
                            fail_msg("resize %d, accel %d, penalty %d: %s/%s's gradient is "
                                     "zero", resize, accel, penalty, dla_table_layer(t, r),
                                     dla_table_parameter(t, r));
                        continue;
                    }
                    const int w = !strcmp(dla_table_parameter(t, r), "Weights");
                    assert_int_equal(dla_tensor_numel(g), dla_tensor_numel(v));
                    for (int64_t e = 0; e < dla_tensor_numel(g); e++)
                        tu_assert_near(dla_tensor_item(g, e),
                                       penalty && w ? 2 * dla_tensor_item(v, e) : 0.0, 1e-6);
                }
            }
        /* trainnet trains it, alone and in parallel (whose gradient
         * hooks the zero rows never reach). */
        int32_t labels[8] = {0, 1, 0, 1, 1, 0, 1, 0};
        dla_train_data data = {
            .predictors = dla_randn(DLA_F32, "SSCB", DLA_DIMS(6, 6, 1, 8)),
            .targets = dla_tensor_from_host(labels, DLA_I32, "CB", DLA_DIMS(1, 8))};
        for (int par = 0; par < 2; par++) {
            dla_net *trained = NULL;
            if (dla_trainnet(&data, net, &(dla_train_loss){.name = "crossentropy"},
                             &(dla_training_options){
                                 .solver = "sgdm", .max_epochs = 1, .mini_batch_size = 4,
                                 .verbose = -1, .execution_environment = par ? "parallel" : NULL},
                             &trained, NULL) != DLA_OK)
                fail_msg("trainnet%s: %s", par ? " in parallel" : "", dla_last_error());
            dla_net_free(trained);
        }
        dla_net_free(net);
    }
    dla_scope_end();
}

/* docs/networks.md's accelerated model loss: the learnables are tensor
 * inputs, and dla_gradient takes their gradients. */
static dla_status recipe_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                              dla_tensor **out)
{
    (void)nin, (void)nout;
    dla_net *net = ctx;
    const int nl = dla_net_learnable_count(net);
    dla_tensor *y = NULL;
    dla_status st = dla_net_forward(net, 1, in, 1, &y, NULL,
                                    &(dla_net_forward_options){.learnables = in + 1});
    if (st != DLA_OK)
        return st;
    out[0] = dla_sum(dla_mul(y, y), 0, NULL);
    return dla_gradient(out[0], nl, in + 1, out + 1);
}

/* That recipe with a branch that only sizes a crop: the branch's
 * learnables get zeros, eagerly and accelerated, as dla_net_gradient
 * gives them; dla_gradient failed ("argument wrt[2] (3x3x1x2 single): the
 * loss does not depend on it") in both. */
static void the_accelerated_recipe_gives_a_sizing_branch_zeros(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(4);
    dla_net *net = sized_by_a_branch(0);
    const int nl = dla_net_learnable_count(net);
    assert_int_equal(nl, 6);
    dla_tensor *in[7] = {dla_randn(DLA_F32, "SSCB", DLA_DIMS(6, 6, 1, 3))};
    dla_table *t = dla_net_learnables(net);
    for (int r = 0; r < nl; r++)
        in[1 + r] = dla_table_value(t, r);
    dla_tensor *want[7], *got[7];
    if (dla_feval(branch_loss, &(branch_ctx){net, 0}, 1, in, 7, want) != DLA_OK)
        fail_msg("dla_net_gradient: %s", dla_last_error());
    dla_accel *af = dla_accelerate(recipe_loss, &(dla_accel_options){.name = "modelLoss",
                                                                     .key = dla_net_key});
    for (int call = 0; call < 3; call++) {
        dla_status st = call ? dla_accel_feval(af, net, 7, in, 7, got)
                             : dla_feval(recipe_loss, net, 7, in, 7, got);
        if (st != DLA_OK)
            fail_msg("call %d: %s", call, dla_last_error());
        for (int r = 0; r <= nl; r++) {
            assert_int_equal(dla_tensor_numel(got[r]), dla_tensor_numel(want[r]));
            for (int64_t e = 0; e < dla_tensor_numel(got[r]); e++)
                tu_assert_near(dla_tensor_item(got[r], e), dla_tensor_item(want[r], e), 1e-5);
        }
    }
    assert_true(dla_accel_hit_rate(af) > 0);
    dla_accel_free(af);
    dla_net_free(net);
    dla_scope_end();
}

/* conv -> crop/in with the pooled input as ref -> depth to space (3 x 6)
 * -> resize to the pooled input's 3 x 3 -> conv -> space to depth -> fc:
 * first and second derivatives of every learnable, replayed and eager. */
static void a_network_of_the_three_differentiates(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_rng_seed(5);
    for (int crd = 0; crd < 2; crd++) {
        dla_layer *l[] = {
            dla_image_input_layer(6, 7, 2, &(dla_image_input_options){.normalization = "none",
                                                                       .name = "in"}),
            dla_conv2d_layer(3, 3, 4, &(dla_conv_layer_options){.padding_mode = "same",
                                                                 .name = "c1"}),
            dla_crop2d_layer(&(dla_crop2d_layer_options){.name = "crop"}),
            dla_depth_to_space2d_layer((int64_t[]){1, 2}, &(dla_depth_to_space2d_layer_options){
                .mode = crd ? "crd" : "dcr"}),
            dla_resize2d_layer(&(dla_resize2d_layer_options){
                .enable_reference_input = 1, .method = "bilinear", .name = "rs"}),
            dla_conv2d_layer(1, 1, 3, &(dla_conv_layer_options){.name = "c2"}),
            dla_tanh_layer(NULL),
            dla_space_to_depth_layer((int64_t[]){3, 1}, NULL),
            dla_fc_layer(2, NULL),
            dla_maxpool2d_layer(2, 2, &(dla_pool_layer_options){.stride = {2, 2}, .name = "pool"}),
        };
        dla_net *net = dla_net_create(9, l);
        assert_non_null(net);
        assert_int_equal(dla_net_add_layers(net, 1, l + 9), DLA_OK);
        if (dla_net_connect(net, "in", "pool") != DLA_OK ||
            dla_net_connect(net, "pool", "crop/ref") != DLA_OK ||
            dla_net_connect(net, "pool", "rs/ref") != DLA_OK ||
            dla_net_init(net, 0, NULL) != DLA_OK)
            fail_msg("%s", dla_last_error());
        assert_int_equal(dla_net_cast(net, DLA_F64), DLA_OK);
        const int nl = dla_net_learnable_count(net);
        dla_tensor **values = dla_table_values(dla_net_learnables(net));
        int check[GC_MAX_IN];
        for (int i = 0; i < nl; i++)
            check[i] = 1;
        gc_net c = {net, dla_randn(DLA_F64, "SSCB", DLA_DIMS(6, 7, 2, 2)), 1};
        for (int accel = 1; accel >= 0; accel--) {
            dla_net_set_accelerate(net, accel);
            gc_check(gc_run_net, &c, nl, values, check, 1e-5);
            gc_check2(gc_run_net, &c, nl, values, check, 1e-5);
        }
        dla_net_free(net);
    }
    dla_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(depth_to_space_moves_channels_into_blocks_in_both_orders),
        TU_TEST(space_to_depth_is_the_inverse_of_dcr),
        TU_TEST(space_to_depth_drops_what_is_past_the_last_block),
        TU_TEST(bad_blocks_modes_and_inputs_are_refused_by_name),
        TU_TEST(crop_takes_the_reference_size_at_the_centre_or_a_location),
        TU_TEST(crop_ports_and_windows_that_do_not_fit_are_refused),
        TU_TEST(crop3d_takes_the_reference_volume),
        TU_TEST(a_network_of_the_three_differentiates),
        TU_TEST(a_port_of_an_option_that_is_off_names_the_option),
        TU_TEST(a_branch_that_only_sizes_gets_zero_gradients),
        TU_TEST(the_accelerated_recipe_gives_a_sizing_branch_zeros),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
