/*
 * test_conv.c - dla_conv and dla_transpconv: forward values against a
 * hand-computed case and naive loops written here, result dims and
 * formats (MATLAB's output sizes, "same" padding and cropping, "CBT"
 * sequences, unformatted x with data_format), float64 finite-difference
 * gradients for every option (stride, dilation, padding numbers and
 * "same", groups and channel-wise, bias or none, 1-D, 2-D, 3-D, transposed),
 * and the error messages.
 */
#include <dlaccel.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "tests/testutil.h"
#include "tests/gradcheck.h"
#include "tests/tu_assert.h"

#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------ helpers */

/* A float64 tensor of uniform values in [-1, 1). */
static dla_tensor *rnd(const char *fmt, int nd, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < nd; i++)
        n *= dims[i];
    double *h = malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        h[i] = 2 * tu_unit() - 1;
    dla_tensor *t = dla_tensor_from_host(h, DLA_F64, fmt, nd, dims);
    free(h);
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    return t;
}

static double *host(dla_tensor *t)
{
    int64_t n = dla_tensor_numel(t);
    double *h = malloc(sizeof(double) * (size_t)(n ? n : 1));
    if (dla_tensor_to_host(t, h, sizeof(double) * (size_t)n) != DLA_OK)
        fail_msg("reading a tensor: %s", dla_last_error());
    return h;
}

/* One convolution problem in canonical layouts: x in[0..2] x C x B,
 * w fs[0..2] x C/G x F/G x G (dla_conv) or fs x F/G x C/G x G
 * (dla_transpconv, C then being the input's channels). */
typedef struct prob {
    int nsp, transposed, bias;
    int64_t B, C, F, G;
    int64_t in[3], fs[3], st[3], dl[3], p0[3], p1[3];
    int same;
} prob;

static const char *const fmts[] = {"", "SCB", "SSCB", "SSSCB"};

/* The output size of spatial dim i, as MATLAB defines it. */
static int64_t out_size(const prob *p, int i, int64_t *pb)
{
    const int64_t span = p->dl[i] * (p->fs[i] - 1) + 1, in = p->in[i], s = p->st[i];
    int64_t a = p->p0[i], b = p->p1[i];
    if (!p->transposed) {
        if (p->same) {
            int64_t total = ((in + s - 1) / s - 1) * s + span - in;
            a = total > 0 ? total / 2 : 0, b = total > 0 ? total - a : 0;
        }
        *pb = a;
        return (in + a + b - span) / s + 1;
    }
    if (p->same) {
        int64_t total = span - s;
        a = total > 0 ? total / 2 : 0, b = total - a;
    }
    *pb = a;
    return (in - 1) * s + span - a - b;
}

/* y = conv(x, w) + bias (or the transposed convolution), by naive loops
 * over canonical dense host arrays; fills odims. */
static double *naive(const prob *p, const double *x, const double *w, const double *bias,
                     int64_t *odims)
{
    int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, fs[3] = {1, 1, 1}, st[3] = {1, 1, 1},
            dl[3] = {1, 1, 1}, pb[3] = {0, 0, 0};
    for (int i = 0; i < p->nsp; i++) {
        in[i] = p->in[i], fs[i] = p->fs[i], st[i] = p->st[i], dl[i] = p->dl[i];
        out[i] = out_size(p, i, &pb[i]);
        odims[i] = out[i];
    }
    const int64_t Fout = p->F, Cg = p->C / p->G, Fg = p->F / p->G;
    odims[p->nsp] = Fout, odims[p->nsp + 1] = p->B;
    const int64_t ipx = in[0] * in[1] * in[2], opx = out[0] * out[1] * out[2];
    const int64_t ntaps = fs[0] * fs[1] * fs[2];
    double *y = calloc((size_t)(opx * Fout * p->B + 1), sizeof(double));
    for (int64_t b = 0; b < p->B; b++)
        for (int64_t g = 0; g < p->G; g++)
            for (int64_t fo = 0; fo < Fg; fo++)
                for (int64_t ci = 0; ci < Cg; ci++)
                    for (int64_t t = 0; t < ntaps; t++) {
                        const int64_t k[3] = {t % fs[0], (t / fs[0]) % fs[1], t / (fs[0] * fs[1])};
                        /* dla_conv: w[k, ci, fo, g]; dla_transpconv: w[k, fo, ci, g]. */
                        const double wv = p->transposed
                                              ? w[t + ntaps * (fo + Fg * (ci + Cg * g))]
                                              : w[t + ntaps * (ci + Cg * (fo + Fg * g))];
                        /* Walk the positions of the smaller ("y") side. */
                        const int64_t *walk = p->transposed ? in : out;
                        for (int64_t o2 = 0; o2 < walk[2]; o2++)
                            for (int64_t o1 = 0; o1 < walk[1]; o1++)
                                for (int64_t o0 = 0; o0 < walk[0]; o0++) {
                                    const int64_t o[3] = {o0, o1, o2};
                                    int64_t j[3], inside = 1;
                                    const int64_t *lim = p->transposed ? out : in;
                                    for (int d = 0; d < 3; d++) {
                                        j[d] = o[d] * st[d] - pb[d] + k[d] * dl[d];
                                        inside &= j[d] >= 0 && j[d] < lim[d];
                                    }
                                    if (!inside)
                                        continue;
                                    if (!p->transposed) {
                                        const double xv = x[j[0] + in[0] * (j[1] + in[1] * j[2]) +
                                                            ipx * (g * Cg + ci + p->C * b)];
                                        y[o0 + out[0] * (o1 + out[1] * o2) +
                                          opx * (g * Fg + fo + Fout * b)] += wv * xv;
                                    } else {
                                        const double xv = x[o0 + in[0] * (o1 + in[1] * o2) +
                                                            ipx * (g * Cg + ci + p->C * b)];
                                        y[j[0] + out[0] * (j[1] + out[1] * j[2]) +
                                          opx * (g * Fg + fo + Fout * b)] += wv * xv;
                                    }
                                }
                    }
    if (bias)
        for (int64_t b = 0; b < p->B; b++)
            for (int64_t f = 0; f < Fout; f++)
                for (int64_t i = 0; i < opx; i++)
                    y[i + opx * (f + Fout * b)] += bias[f];
    return y;
}

/* The tensors of p: x, w, bias (NULL without). For dla_transpconv, C is
 * x's channel count and F the output's. */
static void make(const prob *p, dla_tensor **x, dla_tensor **w, dla_tensor **b)
{
    int64_t xd[5], wd[6];
    const int n = p->nsp;
    for (int i = 0; i < n; i++)
        xd[i] = p->in[i], wd[i] = p->fs[i];
    xd[n] = p->C, xd[n + 1] = p->B;
    wd[n] = p->transposed ? p->F / p->G : p->C / p->G;
    wd[n + 1] = p->transposed ? p->C / p->G : p->F / p->G;
    wd[n + 2] = p->G;
    *x = rnd(fmts[n], n + 2, xd);
    *w = rnd("", n + 3, wd);
    *b = p->bias ? rnd("", 2, (int64_t[]){p->F, 1}) : NULL;
}

static dla_conv_options options_of(const prob *p)
{
    dla_conv_options o;
    memset(&o, 0, sizeof o);
    for (int i = 0; i < p->nsp; i++) {
        o.stride[i] = p->st[i], o.dilation[i] = p->dl[i];
        o.padding[0][i] = p->p0[i], o.padding[1][i] = p->p1[i];
    }
    o.padding_mode = p->same ? "same" : NULL;
    return o;
}

static dla_tensor *run(const prob *p, dla_tensor *x, dla_tensor *w, dla_tensor *b)
{
    dla_conv_options o = options_of(p);
    return p->transposed ? dla_transpconv(x, w, b, &o) : dla_conv(x, w, b, &o);
}

static char what[400];

static void describe(const prob *p)
{
    int n = snprintf(what, sizeof what, "%s nsp=%d B=%lld C=%lld F=%lld G=%lld bias=%d same=%d",
                     p->transposed ? "dla_transpconv" : "dla_conv", p->nsp, (long long)p->B,
                     (long long)p->C, (long long)p->F, (long long)p->G, p->bias, p->same);
    for (int i = 0; i < p->nsp && n > 0 && (size_t)n < sizeof what; i++)
        n += snprintf(what + n, sizeof what - (size_t)n, " | in %lld fs %lld st %lld dl %lld pad %lld/%lld",
                      (long long)p->in[i], (long long)p->fs[i], (long long)p->st[i],
                      (long long)p->dl[i], (long long)p->p0[i], (long long)p->p1[i]);
}

/* Compares the op's result for p with the naive loops. */
static void check_forward(const prob *p)
{
    describe(p);
    dla_scope_begin();
    dla_tensor *x, *w, *b;
    make(p, &x, &w, &b);
    dla_tensor *y = run(p, x, w, b);
    if (dla_tensor_status(y) != DLA_OK)
        fail_msg("%s: %s", what, dla_tensor_error(y));
    double *xh = host(x), *wh = host(w), *bh = b ? host(b) : NULL;
    int64_t od[5];
    double *ref = naive(p, xh, wh, bh, od);
    assert_string_equal(dla_tensor_format(y), fmts[p->nsp]);
    for (int i = 0; i < p->nsp + 2; i++)
        if (dla_tensor_dim(y, i + 1) != od[i])
            fail_msg("%s: dim %d is %lld, expected %lld", what, i + 1,
                     (long long)dla_tensor_dim(y, i + 1), (long long)od[i]);
    double *yh = host(y);
    for (int64_t i = 0; i < dla_tensor_numel(y); i++)
        if (!(fabs(yh[i] - ref[i]) <= 1e-12 * (1 + fabs(ref[i]))))
            fail_msg("%s: element %lld is %.15g, expected %.15g", what, (long long)i, yh[i],
                     ref[i]);
    free(xh), free(wh), free(bh), free(ref), free(yh);
    dla_scope_end();
}

/* A random problem: each option drawn on its own. */
static void random_prob(prob *p, int transposed)
{
    memset(p, 0, sizeof *p);
    p->transposed = transposed;
    p->nsp = (int)tu_int(1, 3);
    const int kind = (int)tu_int(0, 5);
    p->G = kind < 3 ? 1 : tu_int(2, 3);
    const int64_t cg = kind == 5 ? 1 : tu_int(1, 3), fg = kind == 5 ? 1 : tu_int(1, 3);
    p->C = cg * p->G, p->F = fg * p->G;
    p->B = tu_int(1, 2);
    p->bias = (int)tu_int(0, 1);
    p->same = tu_int(0, 3) == 0;
    for (int i = 0; i < p->nsp; i++) {
        p->fs[i] = tu_int(1, p->nsp == 3 ? 2 : 3);
        p->st[i] = tu_int(1, 3) == 1 ? tu_int(2, 3) : 1;
        p->dl[i] = tu_int(1, 3) == 1 ? 2 : 1;
        const int64_t span = p->dl[i] * (p->fs[i] - 1) + 1;
        p->in[i] = tu_int(p->nsp == 3 ? 2 : 3, p->nsp == 3 ? 4 : 7) + (transposed ? 0 : span);
        if (!p->same) {
            p->p0[i] = tu_int(0, transposed ? span / 2 : span - 1);
            p->p1[i] = tu_int(0, transposed ? span / 2 : span - 1);
        }
    }
}

/* --------------------------------------------------------- gradients */

static const prob *gc_prob;

static dla_tensor *gc_apply(void *ctx, dla_tensor *const *in)
{
    (void)ctx;
    return run(gc_prob, in[0], in[1], gc_prob->bias ? in[2] : NULL);
}

static void check_gradients(const prob *p)
{
    describe(p);
    dla_scope_begin();
    dla_tensor *x, *w, *b;
    make(p, &x, &w, &b);
    gc_prob = p;
    const int all[3] = {1, 1, 1};
    gc_check(gc_apply, NULL, p->bias ? 3 : 2, (dla_tensor *[]){x, w, b}, all, 1e-6);
    gc_check2(gc_apply, NULL, p->bias ? 3 : 2, (dla_tensor *[]){x, w, b}, all, 1e-6);
    dla_scope_end();
}

/* ================================================================ tests */

static void a_one_d_convolution_matches_the_hand_computed_values(void **state)
{
    (void)state;
    dla_scope_begin();
    /* x = 1 2 3 4 5 (one channel, one observation), w = [1 0 -1], bias 0.5:
     * y(i) = x(i) - x(i+2) + 0.5 = -1.5 -1.5 -1.5 */
    dla_tensor *x = dla_tensor_from_host((double[]){1, 2, 3, 4, 5}, DLA_F64, "SCB", DLA_DIMS(5, 1, 1));
    dla_tensor *w = dla_tensor_from_host((double[]){1, 0, -1}, DLA_F64, "", DLA_DIMS(3, 1, 1));
    dla_tensor *b = dla_full(0.5, DLA_F64, "", DLA_DIMS(1, 1));
    dla_tensor *y = dla_conv(x, w, b, NULL);
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_int_equal(dla_tensor_dim(y, 1), 3);
    for (int i = 0; i < 3; i++)
        tu_assert_near(dla_tensor_item(y, i), -1.5, 1e-15);
    /* Stride 2, padding 1 on both sides: windows over 0 1 2 3 4 5 0 at
     * 0, 2, 4: 0 - 2, 2 - 4, 4 - 0. */
    y = dla_conv(x, w, NULL,
                 &(dla_conv_options){.stride = {2}, .padding = {{1}, {1}}});
    assert_int_equal(dla_tensor_dim(y, 1), 3);
    tu_assert_near(dla_tensor_item(y, 0), -2, 1e-15);
    tu_assert_near(dla_tensor_item(y, 1), -2, 1e-15);
    tu_assert_near(dla_tensor_item(y, 2), 4, 1e-15);
    dla_scope_end();
}

static void a_transposed_convolution_spreads_each_input_over_the_filter(void **state)
{
    (void)state;
    dla_scope_begin();
    /* x = 1 2 with stride 2 and w = [1 10 100]: output length
     * (2-1)*2 + 3 = 5: 1 10 (100+2) 20 200. */
    dla_tensor *x = dla_tensor_from_host((double[]){1, 2}, DLA_F64, "SCB", DLA_DIMS(2, 1, 1));
    dla_tensor *w = dla_tensor_from_host((double[]){1, 10, 100}, DLA_F64, "", DLA_DIMS(3, 1, 1));
    dla_tensor *y = dla_transpconv(x, w, NULL, &(dla_conv_options){.stride = {2}});
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_int_equal(dla_tensor_dim(y, 1), 5);
    const double want[5] = {1, 10, 102, 20, 200};
    for (int i = 0; i < 5; i++)
        tu_assert_near(dla_tensor_item(y, i), want[i], 1e-13);
    /* Cropping "same" keeps in * stride = 4 elements, the odd one cropped
     * at the end: 1 10 102 20. */
    y = dla_transpconv(x, w, NULL, &(dla_conv_options){.stride = {2}, .padding_mode = "same"});
    assert_int_equal(dla_tensor_dim(y, 1), 4);
    for (int i = 0; i < 4; i++)
        tu_assert_near(dla_tensor_item(y, i), want[i], 1e-13);
    dla_scope_end();
}

static void convolutions_match_naive_loops_for_every_option(void **state)
{
    (void)state;
    for (int i = 0; i < 60; i++) {
        prob p;
        random_prob(&p, 0);
        check_forward(&p);
    }
}

static void transposed_convolutions_match_naive_loops_for_every_option(void **state)
{
    (void)state;
    for (int i = 0; i < 40; i++) {
        prob p;
        random_prob(&p, 1);
        check_forward(&p);
    }
}

static void the_digit_cnn_shapes_give_matlab_sizes_and_keep_the_format(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(28, 28, 1, 128));
    dla_tensor *w1 = dla_zeros(DLA_F32, "", DLA_DIMS(5, 5, 1, 20));
    dla_tensor *b1 = dla_zeros(DLA_F32, "", DLA_DIMS(20, 1));
    dla_tensor *y = dla_conv(x, w1, b1, NULL);
    char buf[128];
    dla_tensor_describe(y, buf, sizeof buf);
    assert_non_null(strstr(buf, "24x24x20x128 single SSCB"));
    dla_tensor *w2 = dla_zeros(DLA_F32, "", DLA_DIMS(3, 3, 20, 20));
    y = dla_conv(y, w2, NULL, &(dla_conv_options){.padding = {{1, 1}, {1, 1}}});
    dla_tensor_describe(y, buf, sizeof buf);
    assert_non_null(strstr(buf, "24x24x20x128 single SSCB"));
    /* "same" with stride 2: ceil(24 / 2) = 12; 5 wide with stride 3: 8. */
    y = dla_conv(y, w2, NULL, &(dla_conv_options){.stride = {2, 3}, .padding_mode = "same"});
    assert_int_equal(dla_tensor_dim(y, 1), 12);
    assert_int_equal(dla_tensor_dim(y, 2), 8);
    dla_scope_end();
}

static void a_cbt_sequence_is_convolved_along_time(void **state)
{
    (void)state;
    dla_scope_begin();
    /* 3 channels, 2 observations, 9 steps; against the same data as "SCB". */
    dla_tensor *x = rnd("CBT", DLA_DIMS(3, 2, 9));
    dla_tensor *w = rnd("", DLA_DIMS(4, 3, 5));
    dla_tensor *y = dla_conv(x, w, NULL, &(dla_conv_options){.dilation = {2}});
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_string_equal(dla_tensor_format(y), "CBT");
    assert_int_equal(dla_tensor_dim(y, 1), 5);
    assert_int_equal(dla_tensor_dim(y, 3), 3);
    /* Labels cannot move out of canonical order: permute unformatted. */
    dla_tensor *xs = dla_contiguous(dla_permute(dla_reshape(x, "", DLA_DIMS(3, 2, 9)),
                                                DLA_DIMS(3, 1, 2)));
    xs = dla_reshape(xs, "SCB", DLA_DIMS(9, 3, 2));
    dla_tensor *ys = dla_conv(xs, w, NULL, &(dla_conv_options){.dilation = {2}});
    ys = dla_reshape(ys, "", DLA_DIMS(3, 5, 2));
    double *a = host(dla_contiguous(dla_permute(ys, DLA_DIMS(2, 3, 1)))), *b = host(y);
    for (int i = 0; i < 5 * 2 * 3; i++)
        tu_assert_near(a[i], b[i], 1e-13);
    free(a), free(b);
    dla_scope_end();
}

static void an_unformatted_x_takes_its_labels_from_data_format(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = rnd("", DLA_DIMS(6, 5, 2, 3));
    dla_tensor *w = rnd("", DLA_DIMS(3, 2, 2, 4));
    dla_tensor *y = dla_conv(x, w, NULL, &(dla_conv_options){.data_format = "SSCB"});
    assert_int_equal(dla_tensor_status(y), DLA_OK);
    assert_string_equal(dla_tensor_format(y), "");
    assert_int_equal(dla_tensor_dim(y, 1), 4);
    assert_int_equal(dla_tensor_dim(y, 2), 4);
    assert_int_equal(dla_tensor_dim(y, 3), 4);
    dla_tensor *xf = dla_reshape(x, "SSCB", DLA_DIMS(6, 5, 2, 3));
    double *a = host(y), *b = host(dla_conv(xf, w, NULL, NULL));
    for (int i = 0; i < 4 * 4 * 4 * 3; i++)
        tu_assert_near(a[i], b[i], 1e-13);
    free(a), free(b);
    dla_scope_end();
}

/* One observation, its B dim left off x (MATLAB's trailing singleton):
 * the gradient has x's dims. It had data_format's four and failed. */
static dla_tensor *conv_sscb(void *ctx, dla_tensor *const *in)
{
    dla_conv_options o = {.data_format = "SSCB"};
    return ctx ? dla_transpconv(in[0], in[1], NULL, &o) : dla_conv(in[0], in[1], NULL, &o);
}

static void a_data_format_longer_than_x_gives_gradients_of_xs_dims(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = rnd("", DLA_DIMS(5, 4, 3));
    gc_check(conv_sscb, NULL, 2, (dla_tensor *[]){x, rnd("", DLA_DIMS(2, 2, 3, 2))},
             (int[]){1, 1}, 1e-6);
    gc_check2(conv_sscb, NULL, 2, (dla_tensor *[]){x, rnd("", DLA_DIMS(2, 2, 3, 2))},
              (int[]){1, 1}, 1e-6);
    gc_check(conv_sscb, "transposed", 2, (dla_tensor *[]){x, rnd("", DLA_DIMS(2, 2, 2, 3))},
             (int[]){1, 1}, 1e-6);
    gc_check2(conv_sscb, "transposed", 2, (dla_tensor *[]){x, rnd("", DLA_DIMS(2, 2, 2, 3))},
              (int[]){1, 1}, 1e-6);
    /* And shorter than x by dims of 1, trailing singletons (it was refused:
     * "data_format "SSCB" has 4 labels"); a dim past them that is not 1
     * still is, saying so. */
    dla_tensor *x5 = rnd("", DLA_DIMS(5, 4, 3, 2, 1));
    gc_check(conv_sscb, NULL, 2, (dla_tensor *[]){x5, rnd("", DLA_DIMS(2, 2, 3, 2))},
             (int[]){1, 1}, 1e-6);
    tu_expect_error(dla_conv(rnd("", DLA_DIMS(5, 4, 3, 2, 2)), rnd("", DLA_DIMS(2, 2, 3, 2)), NULL,
                             &(dla_conv_options){.data_format = "SSCB"}),
                    DLA_ERR_FORMAT,
                    "dla_conv: argument x (5x4x3x2x2 unformatted): data_format \"SSCB\" has 4 "
                    "labels for its 5 dims (dims past the labels must be 1)");
    dla_scope_end();
}

/* A bias of F values in two dims, dense and as a permuted view, is the
 * column-major vector of them (the kernel read one stride of it: a dense
 * 2x5 was refused, a permuted one added its values in storage order). */
static void a_bias_in_several_dims_is_read_in_column_major_order(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = rnd("SSCB", DLA_DIMS(6, 5, 2, 3)), *w = rnd("", DLA_DIMS(3, 3, 2, 10));
    dla_tensor *b = rnd("", DLA_DIMS(2, 5));
    dla_tensor *vec = dla_reshape(dla_contiguous(b), "", DLA_DIMS(10));
    dla_tensor *perm = dla_permute(dla_contiguous(dla_permute(b, DLA_DIMS(2, 1))), DLA_DIMS(2, 1));
    double *want = host(dla_conv(x, w, vec, NULL));
    for (int k = 0; k < 2; k++) {
        dla_tensor *y = dla_conv(x, w, k ? perm : b, NULL);
        assert_int_equal(dla_tensor_status(y), DLA_OK);
        double *got = host(y);
        for (int i = 0; i < 4 * 3 * 10 * 3; i++)
            tu_assert_near(got[i], want[i], 1e-13);
        free(got);
    }
    free(want);
    dla_scope_end();
}

static void single_precision_agrees_with_double_on_the_fast_path(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = rnd("SSCB", DLA_DIMS(12, 10, 4, 5));
    dla_tensor *w = rnd("", DLA_DIMS(3, 3, 4, 6));
    dla_tensor *b = rnd("", DLA_DIMS(6, 1));
    const dla_conv_options o = {.padding = {{1, 1}, {1, 1}}};
    double *d = host(dla_conv(x, w, b, &o));
    dla_tensor *ys = dla_conv(dla_cast(x, DLA_F32), dla_cast(w, DLA_F32), dla_cast(b, DLA_F32), &o);
    double *s = host(dla_cast(ys, DLA_F64));
    for (int i = 0; i < 12 * 10 * 6 * 5; i++)
        tu_assert_near(s[i], d[i], 1e-4);
    free(d), free(s);
    dla_scope_end();
}

static void a_strided_view_of_x_gives_the_result_of_its_dense_copy(void **state)
{
    (void)state;
    dla_scope_begin();
    /* Every other observation of a batch, and the same in single precision
     * (which takes the direct kernels where the CPU has them). */
    dla_tensor *big = rnd("SSCB", DLA_DIMS(9, 7, 3, 6));
    dla_tensor *w = rnd("", DLA_DIMS(3, 2, 3, 4));
    const dla_conv_options o = {.padding = {{1, 0}, {1, 1}}, .dilation = {1, 2}};
    for (int single = 0; single < 2; single++) {
        dla_tensor *x = dla_slice(single ? dla_cast(big, DLA_F32) : big, 4, 1, 2, DLA_END);
        dla_tensor *ww = single ? dla_cast(w, DLA_F32) : w;
        assert_false(dla_tensor_is_contiguous(x));
        dla_tensor *y = dla_cast(dla_conv(x, ww, NULL, &o), DLA_F64);
        assert_int_equal(dla_tensor_numel(y), 9 * 6 * 4 * 3);
        double *a = host(y);
        double *b = host(dla_cast(dla_conv(dla_contiguous(x), ww, NULL, &o), DLA_F64));
        for (int i = 0; i < 9 * 6 * 4 * 3; i++)
            tu_assert_near(a[i], b[i], single ? 1e-5 : 1e-14);
        free(a), free(b);
    }
    dla_scope_end();
}

static void gradients_match_finite_differences_for_every_option(void **state)
{
    (void)state;
    /* One case per option, then random mixtures. */
    const prob fixed[] = {
        /* 2-D plain, with bias */
        {.nsp = 2, .bias = 1, .B = 2, .C = 2, .F = 3, .G = 1, .in = {5, 4}, .fs = {3, 2},
         .st = {1, 1}, .dl = {1, 1}},
        /* strides, no bias */
        {.nsp = 2, .B = 1, .C = 2, .F = 2, .G = 1, .in = {7, 6}, .fs = {3, 2}, .st = {2, 3},
         .dl = {1, 1}},
        /* dilation */
        {.nsp = 2, .bias = 1, .B = 1, .C = 1, .F = 2, .G = 1, .in = {7, 6}, .fs = {2, 3},
         .st = {1, 1}, .dl = {3, 2}},
        /* asymmetric padding numbers */
        {.nsp = 2, .bias = 1, .B = 2, .C = 2, .F = 2, .G = 1, .in = {4, 5}, .fs = {3, 3},
         .st = {1, 2}, .dl = {1, 1}, .p0 = {2, 0}, .p1 = {0, 1}},
        /* "same" with stride */
        {.nsp = 2, .bias = 1, .B = 1, .C = 2, .F = 2, .G = 1, .in = {5, 6}, .fs = {3, 2},
         .st = {2, 2}, .dl = {1, 1}, .same = 1},
        /* groups */
        {.nsp = 2, .bias = 1, .B = 2, .C = 4, .F = 6, .G = 2, .in = {4, 4}, .fs = {2, 2},
         .st = {1, 1}, .dl = {1, 1}},
        /* channel-wise separable, "same" */
        {.nsp = 2, .B = 2, .C = 3, .F = 3, .G = 3, .in = {5, 4}, .fs = {3, 3}, .st = {1, 1},
         .dl = {1, 1}, .same = 1},
        /* 1-D */
        {.nsp = 1, .bias = 1, .B = 2, .C = 2, .F = 3, .G = 1, .in = {9}, .fs = {3}, .st = {2},
         .dl = {2}, .p0 = {1}, .p1 = {2}},
        /* 3-D */
        {.nsp = 3, .bias = 1, .B = 1, .C = 2, .F = 2, .G = 1, .in = {4, 3, 4}, .fs = {2, 2, 2},
         .st = {1, 1, 2}, .dl = {1, 1, 1}, .p0 = {1, 0, 0}},
        /* transposed: stride, cropping numbers, bias */
        {.nsp = 2, .transposed = 1, .bias = 1, .B = 2, .C = 2, .F = 3, .G = 1, .in = {3, 4},
         .fs = {3, 2}, .st = {2, 1}, .dl = {1, 1}, .p0 = {1, 0}, .p1 = {0, 1}},
        /* transposed: groups, dilation, "same" cropping */
        {.nsp = 2, .transposed = 1, .B = 1, .C = 4, .F = 2, .G = 2, .in = {3, 3}, .fs = {3, 3},
         .st = {2, 2}, .dl = {1, 2}, .same = 1},
        /* transposed 1-D and 3-D */
        {.nsp = 1, .transposed = 1, .bias = 1, .B = 2, .C = 2, .F = 2, .G = 1, .in = {5},
         .fs = {3}, .st = {3}, .dl = {1}},
        {.nsp = 3, .transposed = 1, .B = 1, .C = 2, .F = 2, .G = 2, .in = {2, 3, 2},
         .fs = {2, 2, 2}, .st = {2, 1, 2}, .dl = {1, 1, 1}},
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        check_gradients(&fixed[i]);
    for (int i = 0; i < 16; i++) {
        prob p;
        random_prob(&p, i % 3 == 2);
        check_gradients(&p);
    }
}

/* Gradient of the loss through two stacked convolutions and a bias: the
 * backward ops of the backward ops (data and filter) are used for x. */
static dla_tensor *two_layers(void *ctx, dla_tensor *const *in)
{
    (void)ctx;
    const dla_conv_options same = {.padding_mode = "same"};
    dla_tensor *h = dla_relu(dla_conv(in[0], in[1], NULL, &same));
    return dla_conv(h, in[2], in[3], &(dla_conv_options){.stride = {2, 2}});
}

static void gradients_flow_through_stacked_convolutions(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = rnd("SSCB", DLA_DIMS(6, 5, 2, 2));
    dla_tensor *w1 = rnd("", DLA_DIMS(3, 3, 2, 3));
    dla_tensor *w2 = rnd("", DLA_DIMS(2, 2, 3, 2));
    dla_tensor *b2 = rnd("", DLA_DIMS(1, 1, 2));
    gc_check(two_layers, NULL, 4, (dla_tensor *[]){x, w1, w2, b2}, (int[]){1, 1, 1, 1}, 1e-6);
    gc_check2(two_layers, NULL, 4, (dla_tensor *[]){x, w1, w2, b2}, (int[]){1, 1, 1, 1}, 1e-6);
    dla_scope_end();
}

static void errors_name_the_op_the_argument_and_the_shapes(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(28, 28, 1, 128));
    dla_tensor *w = dla_zeros(DLA_F32, "", DLA_DIMS(5, 5, 3, 20));
    tu_expect_error(dla_conv(x, w, NULL, NULL), DLA_ERR_SHAPE,
                 "dla_conv: argument weights: 5x5x3x20 expects 3 channels per group x 1 group = "
                 "3 input channels, but x (28x28x1x128 SSCB) has 1");
    dla_tensor *wg = dla_zeros(DLA_F32, "", DLA_DIMS(3, 3, 2, 4, 3));
    dla_tensor *x4 = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(8, 8, 4, 2));
    tu_expect_error(dla_conv(x4, wg, NULL, NULL), DLA_ERR_SHAPE,
                 "expects 2 channels per group x 3 groups = 6 input channels, but x (8x8x4x2 "
                 "SSCB) has 4");
    dla_tensor *w1 = dla_zeros(DLA_F32, "", DLA_DIMS(5, 5, 1, 20));
    tu_expect_error(dla_conv(dla_zeros(DLA_F32, "", DLA_DIMS(28, 28, 1, 2)), w1, NULL, NULL),
                 DLA_ERR_FORMAT, "dla_conv: argument x (28x28x1x2 unformatted): label its dims");
    tu_expect_error(dla_conv(dla_zeros(DLA_F32, "SSCU", DLA_DIMS(28, 28, 1, 2)), w1, NULL, NULL),
                 DLA_ERR_FORMAT, "label 'U'");
    tu_expect_error(dla_conv(x, w1, dla_zeros(DLA_F32, "", DLA_DIMS(19, 1)), NULL), DLA_ERR_SHAPE,
                 "dla_conv: argument bias (19x1): expected 20 elements");
    tu_expect_error(dla_conv(dla_zeros(DLA_F32, "SSCB", DLA_DIMS(4, 4, 1, 1)), w1, NULL, NULL),
                 DLA_ERR_SHAPE, "spatial dim 1: a filter spanning 5 elements does not fit");
    tu_expect_error(dla_conv(x, w1, NULL, &(dla_conv_options){.padding_mode = "full"}),
                 DLA_ERR_INVALID_ARGUMENT, "padding_mode \"full\"");
    tu_expect_error(dla_conv(x, w1, NULL, &(dla_conv_options){.stride = {-1, 1}}),
                 DLA_ERR_INVALID_ARGUMENT, "dla_conv: spatial dim 1");
    tu_expect_error(dla_conv(x, dla_zeros(DLA_F64, "", DLA_DIMS(5, 5, 1, 20)), NULL, NULL),
                 DLA_ERR_DTYPE, "argument weights is double but x is single");
    /* Past 2^31-1 the kernels refuse a size: a stride of 2^31 was refused
     * by the plugin saying it "must be >= 1", and a dilation of 2^63-1
     * wrapped the filter's span to -2^63. Up to 2^31-1 they run. */
    tu_expect_error(dla_conv(x, w1, NULL, &(dla_conv_options){.stride = {1, (int64_t)1 << 31}}),
                 DLA_ERR_INVALID_ARGUMENT,
                 "dla_conv: spatial dim 2: filter 5, stride 2147483648, dilation 1, padding 0 and "
                 "0: filter, stride and dilation must be 1 to 2^31-1 and the padding 0 to 2^31-1");
    tu_expect_error(dla_conv(x, w1, NULL, &(dla_conv_options){.dilation = {INT64_MAX, 1}}),
                 DLA_ERR_INVALID_ARGUMENT, "dilation 9223372036854775807");
    tu_expect_error(dla_conv(x, w1, NULL, &(dla_conv_options){.padding = {{0, 0}, {0, INT64_MAX}}}),
                 DLA_ERR_INVALID_ARGUMENT, "padding 0 and 9223372036854775807");
    tu_expect_error(dla_conv(x, w1, NULL, &(dla_conv_options){.dilation = {INT32_MAX, 1}}),
                 DLA_ERR_SHAPE, "a filter spanning 8589934589 elements does not fit");
    dla_tensor *far = dla_conv(x, w1, NULL, &(dla_conv_options){.stride = {INT32_MAX, INT32_MAX}});
    assert_int_equal(dla_tensor_status(far), DLA_OK);
    assert_int_equal(dla_tensor_dim(far, 1), 1);
    assert_int_equal(dla_tensor_dim(far, 2), 1);
    /* dla_transpconv: weights are filters/G x channels/G. */
    dla_tensor *t = dla_zeros(DLA_F32, "SSCB", DLA_DIMS(7, 7, 16, 2));
    tu_expect_error(dla_transpconv(t, dla_zeros(DLA_F32, "", DLA_DIMS(3, 3, 16, 8)), NULL, NULL),
                 DLA_ERR_SHAPE,
                 "dla_transpconv: argument weights: 3x3x16x8 expects 8 channels per group x 1 "
                 "group = 8 input channels, but x (7x7x16x2 SSCB) has 16");
    /* An x of no channels is named (the kernels refused it: "cpu
     * conv_forward: arguments batch=2 in_channels=0 ... channels must be
     * positive multiples of groups"). */
    tu_expect_error(dla_conv(dla_zeros(DLA_F32, "SSCB", DLA_DIMS(5, 4, 0, 2)),
                             dla_zeros(DLA_F32, "", DLA_DIMS(2, 3, 0, 2)), NULL, NULL),
                 DLA_ERR_SHAPE, "dla_conv: argument x (5x4x0x2 SSCB): no channels (a C dim of 0)");
    tu_expect_error(dla_transpconv(dla_zeros(DLA_F32, "SSCB", DLA_DIMS(5, 4, 0, 2)),
                                   dla_zeros(DLA_F32, "", DLA_DIMS(2, 3, 2, 0)), NULL, NULL),
                 DLA_ERR_SHAPE,
                 "dla_transpconv: argument x (5x4x0x2 SSCB): no channels (a C dim of 0)");
    dla_tensor *w816 = dla_zeros(DLA_F32, "", DLA_DIMS(3, 3, 8, 16));
    tu_expect_error(dla_transpconv(t, w816, NULL,
                                   &(dla_conv_options){.stride = {((int64_t)1 << 62) + 1, 1}}),
                 DLA_ERR_INVALID_ARGUMENT,
                 "dla_transpconv: spatial dim 1: filter 3, stride 4611686018427387905");
    /* 7 inputs at stride 2^30 make more than 2^31-1 outputs. */
    tu_expect_error(dla_transpconv(t, w816, NULL, &(dla_conv_options){.stride = {1, 1 << 30}}),
                 DLA_ERR_SHAPE,
                 "dla_transpconv: spatial dim 2: 7 elements of x (7x7x16x2 SSCB) give 6442450947; "
                 "convolution takes at most 2^31-1 along a dim");
    dla_tensor *ok = dla_transpconv(t, w816, NULL, NULL);
    assert_int_equal(dla_tensor_status(ok), DLA_OK);
    assert_int_equal(dla_tensor_dim(ok, 3), 8);
    assert_int_equal(dla_tensor_dim(ok, 1), 9);
    /* Sticky errors pass through unchanged. */
    dla_tensor *bad = dla_conv(x, w, NULL, NULL);
    tu_expect_error(dla_conv(bad, w1, NULL, NULL), DLA_ERR_SHAPE, "5x5x3x20 expects");
    dla_scope_end();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(a_one_d_convolution_matches_the_hand_computed_values),
        TU_TEST(a_transposed_convolution_spreads_each_input_over_the_filter),
        TU_TEST(convolutions_match_naive_loops_for_every_option),
        TU_TEST(transposed_convolutions_match_naive_loops_for_every_option),
        TU_TEST(the_digit_cnn_shapes_give_matlab_sizes_and_keep_the_format),
        TU_TEST(a_cbt_sequence_is_convolved_along_time),
        TU_TEST(an_unformatted_x_takes_its_labels_from_data_format),
        TU_TEST(a_data_format_longer_than_x_gives_gradients_of_xs_dims),
        TU_TEST(a_bias_in_several_dims_is_read_in_column_major_order),
        TU_TEST(single_precision_agrees_with_double_on_the_fast_path),
        TU_TEST(a_strided_view_of_x_gives_the_result_of_its_dense_copy),
        TU_TEST(gradients_match_finite_differences_for_every_option),
        TU_TEST(gradients_flow_through_stacked_convolutions),
        TU_TEST(errors_name_the_op_the_argument_and_the_shapes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
