/*
 * test_plan.c - the replay planner behind dla_accelerate: a planned replay
 * gives eager's results bit for bit (the MLP, a conv/batchnorm/relu chain
 * with gradients, random numbers drawn inside), on the cpu plugin and on
 * testmem (memory the host cannot address, every kernel through the cpu
 * fallback); the memory plan takes no more than the intermediates it
 * replaces; the fused kernel runs; outputs outlive the next replay; and
 * where the planner must step aside (other input layouts, a recording
 * around the call, several threads at once) the results are still right.
 *
 * The plan is seen through dla_trace_print's "memory plan" section, whose
 * numbers the tests read back.
 */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <dlaccel/device_table.h>

#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

/* ------------------------------------------------------------- helpers */

/* Every byte of a and b's values equal (any devices). */
static void assert_same_bits(dla_tensor *a, dla_tensor *b)
{
    assert_int_equal(dla_tensor_status(a), DLA_OK);
    assert_int_equal(dla_tensor_status(b), DLA_OK);
    assert_int_equal(dla_tensor_dtype(a), dla_tensor_dtype(b));
    int64_t n = dla_tensor_numel(a);
    assert_int_equal(dla_tensor_numel(b), n);
    size_t bytes = (size_t)n * dla_dtype_size(dla_tensor_dtype(a));
    unsigned char *x = malloc(bytes + 1), *y = malloc(bytes + 1);
    assert_int_equal(dla_tensor_to_host(a, x, bytes), DLA_OK);
    assert_int_equal(dla_tensor_to_host(b, y, bytes), DLA_OK);
    assert_memory_equal(x, y, bytes);
    free(x);
    free(y);
}

/* What dla_trace_print says about the plan on device dev. */
typedef struct plan_info {
    int found;
    size_t arena, inter;
    int ninter, launches, nfused, fused_from, invoked;
    long runs, fused_launches;
    int nmulti;       /* fused launches that keep several results */
    int nepilogue;    /* fused launches run as a convolution's epilogue */
    int step_lines;   /* "    step N: ..." lines under the plan */
    int add_relu;     /* a step "fused [add relu]" is listed */
    int fills;        /* steps that are fills */
    int reduces;      /* steps that are reduces */
    int gemms;        /* steps that are GEMMs */
    int casts;        /* steps that are casts */
    int in_place;     /* steps listed "(in place)" */
    int fixed;        /* buffers of constants filled once, when the plan was made */
    long device_runs; /* runs the device made itself (plan_replay), -1: none offered */
    char why[512];
} plan_info;

static char *trace_text(dla_trace *t)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(dla_trace_print(t, f), DLA_OK);
    fclose(f);
    return text;
}

static plan_info plan_of(dla_trace *t, const char *dev)
{
    plan_info pi;
    memset(&pi, 0, sizeof pi);
    char *text = trace_text(t), key[128];
    snprintf(key, sizeof key, "memory plan on %s: ", dev);
    const char *m = strstr(text, key);
    if (m) {
        m += strlen(key);
        const char *f = strstr(m, "moved to the device once (");
        if (sscanf(m, "arena %zu bytes for %d intermediates of %zu bytes", &pi.arena, &pi.ninter,
                   &pi.inter) == 3 &&
            f && sscanf(f, "moved to the device once (%*u bytes); %d buffers of constants filled "
                        "once", &pi.fixed) == 1)
            pi.found = 1;
        else
            snprintf(pi.why, sizeof pi.why, "%.*s", (int)strcspn(m, "\n"), m);
    }
    snprintf(key, sizeof key, "plan runs on %s offered whole to the device (plan_replay): ", dev);
    const char *d = strstr(text, key);
    if (!d || sscanf(d + strlen(key), "%ld run by the device itself", &pi.device_runs) != 1)
        pi.device_runs = -1;
    snprintf(key, sizeof key, "plan steps on %s: ", dev);
    const char *s = strstr(text, key);
    if (s)
        sscanf(s + strlen(key), "%d launches (%d fused, from %d), %d ops run as themselves, %*d "
               "dead ops left out; %ld runs, %ld fused launches; %d fused launches keep "
               "several results; %d run as a convolution's epilogue", &pi.launches, &pi.nfused,
               &pi.fused_from, &pi.invoked, &pi.runs, &pi.fused_launches, &pi.nmulti,
               &pi.nepilogue);
    for (const char *l = s ? strstr(s, "\n    step ") : NULL; l; l = strstr(l + 1, "\n    step "))
        pi.step_lines++;
    pi.add_relu = s && strstr(s, ": fused [add relu] -> ") != NULL;
    for (const char *l = s ? strstr(s, ": fill ") : NULL; l; l = strstr(l + 1, ": fill "))
        pi.fills++;
    for (const char *l = s ? strstr(s, ": reduce") : NULL; l; l = strstr(l + 1, ": reduce"))
        pi.reduces++;
    /* " (in place)" ends a step's line, or comes before its profiled time. */
    for (const char *l = s ? strstr(s, " (in place)") : NULL; l; l = strstr(l + 1, " (in place)"))
        pi.in_place += l[11] == '\n' || l[11] == ' ';
    for (const char *l = s ? strstr(s, ": gemm") : NULL; l; l = strstr(l + 1, ": gemm"))
        pi.gemms++;
    for (const char *l = s ? strstr(s, ": cast") : NULL; l; l = strstr(l + 1, ": cast"))
        pi.casts++;
    free(text);
    return pi;
}

static plan_info accel_plan(dla_accel *af, const char *dev)
{
    dla_trace *t = dla_accel_trace(af, 0);
    assert_non_null(t);
    plan_info pi = plan_of(t, dev);
    dla_trace_release(t);
    return pi;
}

/* One call of fn through af and one eagerly (dla_feval): each of the nout
 * results the same bits. grad: fn takes gradients (dla_accel_feval, not
 * dla_accel_call). */
static void results_match_eager_ctx(dla_accel *af, dla_function fn, void *ctx, int grad, int nin,
                                    dla_tensor *const *in, int nout)
{
    dla_tensor *got[16], *want[16];
    assert_true(nout <= 16);
    const dla_status st = grad ? dla_accel_feval(af, ctx, nin, in, nout, got)
                               : dla_accel_call(af, ctx, nin, in, nout, got);
    if (st != DLA_OK)
        fail_msg("%s", dla_last_error());
    assert_int_equal(dla_feval(fn, ctx, nin, in, nout, want), DLA_OK);
    for (int i = 0; i < nout; i++)
        assert_same_bits(got[i], want[i]);
}

static void results_match_eager(dla_accel *af, dla_function fn, int grad, int nin,
                                dla_tensor *const *in, int nout)
{
    results_match_eager_ctx(af, fn, NULL, grad, nin, in, nout);
}

static void call_matches_eager(dla_accel *af, dla_function fn, int nin, dla_tensor *const *in,
                               int nout)
{
    results_match_eager(af, fn, 0, nin, in, nout);
}

/* ----------------------------------------------------------- functions */

/* The tiny MLP 4-8-1 of the bench: loss and its 4 gradients. */
static dla_status mlp_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *h = dla_relu(dla_add(dla_mtimes(in[0], in[4]), in[1]));
    dla_tensor *y = dla_add(dla_mtimes(in[2], h), in[3]);
    dla_tensor *loss = dla_sum(dla_square(dla_sub(y, in[5])), 0, NULL);
    out[0] = loss;
    return dla_gradient(loss, 4, in, out + 1);
}

static void mlp_inputs(dla_tensor **in, dla_dtype t)
{
    in[0] = dla_randn(t, "", DLA_DIMS(8, 4));
    in[1] = dla_randn(t, "", DLA_DIMS(8, 1));
    in[2] = dla_randn(t, "", DLA_DIMS(1, 8));
    in[3] = dla_randn(t, "", DLA_DIMS(1, 1));
    in[4] = dla_rand(t, "", DLA_DIMS(4, 1));
    in[5] = dla_ones(t, "", DLA_DIMS(1, 1));
}

/* conv 3x3 (2 -> 4 channels, padding 1) -> batchnorm (training) -> relu ->
 * sum of squares; gradients of the filter, bias, offset and scale, and the
 * new running statistics. in: w, b, offset, scale, x, mean, var. */
static dla_status cnn_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    const dla_conv_options pad1 = {.padding = {{1, 1}, {1, 1}}};
    dla_tensor *y = dla_conv(in[4], in[0], in[1], &pad1), *z, *m, *v;
    dla_batchnorm_train(y, in[2], in[3], in[5], in[6], NULL, &z, &m, &v);
    dla_tensor *r = dla_relu(z);
    dla_tensor *loss = dla_sum(dla_mul(r, r), 0, NULL);
    out[0] = loss;
    out[5] = m;
    out[6] = v;
    return dla_gradient(loss, 4, in, out + 1);
}

static void cnn_inputs(dla_tensor **in)
{
    in[0] = dla_randn(DLA_F32, "", DLA_DIMS(3, 3, 2, 4));
    in[1] = dla_randn(DLA_F32, "", DLA_DIMS(4, 1));
    in[2] = dla_zeros(DLA_F32, "", DLA_DIMS(4, 1));
    in[3] = dla_ones(DLA_F32, "", DLA_DIMS(4, 1));
    in[4] = dla_randn(DLA_F32, "SSCB", DLA_DIMS(6, 5, 2, 3));
    in[5] = dla_zeros(DLA_F32, "", DLA_DIMS(4, 1));
    in[6] = dla_ones(DLA_F32, "", DLA_DIMS(4, 1));
}

/* softmax over 4 classes, then cross-entropy with class weights (its
 * clamp is a comparison and a where; softmax works in place). */
static dla_status weighted_ce(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *y = dla_softmax(in[0]);
    out[0] = dla_crossentropy(y, in[1], &(dla_crossentropy_options){.weights = in[2]});
    return dla_gradient(out[0], 1, in, out + 1);
}

/* weighted_ce's targets, in[1]: one-hot over 4 classes of a batch of n
 * (class b % 4), and its class weights, in[2]; in[0] is left to the
 * caller. */
static void weighted_ce_targets(dla_tensor **in, int64_t n)
{
    float *t = calloc((size_t)(4 * n), sizeof *t);
    assert_non_null(t);
    for (int64_t b = 0; b < n; b++)
        t[b * 4 + b % 4] = 1.0f;
    in[0] = NULL;
    in[1] = dla_tensor_from_host(t, DLA_F32, "CB", DLA_DIMS(4, n));
    in[2] = dla_tensor_from_host((const float[]){0.1f, 0.2f, 0.3f, 0.4f}, DLA_F32, "",
                                 DLA_DIMS(4, 1));
    free(t);
}

/* Random numbers inside: dropout on a product, and noise like it. */
static dla_status noisy_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *h = dla_dropout(dla_mul(in[0], in[1]), 0.5);
    h = dla_add(h, dla_affine(dla_randn_like(h), 0.01, 0.0));
    dla_tensor *loss = dla_sum(dla_square(h), 0, NULL);
    out[0] = loss;
    return dla_gradient(loss, 1, in, out + 1);
}

/* --------------------------------------------------------------- tests */

static void planned_mlp_replays_equal_eager_bit_for_bit_and_run_fused_chains(void **state)
{
    dla_scope_begin();
    dla_rng_seed(11);
    dla_tensor *in[6];
    mlp_inputs(in, DLA_F32);
    dla_accel *af = dla_accelerate(mlp_loss, NULL);
    for (int call = 0; call < 6; call++) {
        /* Call 1 records, call 2 makes the plan, the rest run it. */
        dla_tensor *got[5], *want[5];
        in[0] = dla_affine(in[0], 0.9, 0.05);
        in[4] = dla_add(in[4], dla_rand_like(in[4]));
        assert_int_equal(dla_accel_feval(af, NULL, 6, in, 5, got), DLA_OK);
        assert_int_equal(dla_feval(mlp_loss, NULL, 6, in, 5, want), DLA_OK);
        for (int i = 0; i < 5; i++)
            assert_same_bits(got[i], want[i]);
    }
    plan_info pi = accel_plan(af, "cpu:0");
    assert_true(pi.found);
    assert_int_equal(pi.runs, 4);
    assert_true(pi.nfused >= 2);
    assert_true(pi.fused_from > pi.nfused);
    /* Every run launched every fused kernel: the planner's chains, and
     * relu's backward mask, which is a fused launch of its own. */
    assert_int_equal(pi.fused_launches % pi.runs, 0);
    assert_true(pi.fused_launches / pi.runs >= pi.nfused + 1);
    assert_true(pi.arena > 0 && pi.arena <= pi.inter);
    /* The print lists every step, the first layer's add and relu as one
     * program. */
    assert_int_equal(pi.step_lines, pi.launches + pi.invoked);
    assert_true(pi.add_relu);
    /* The gradient's seed of ones (a fill, expanded by a copy) became an
     * affine of what it multiplied: neither is launched. */
    assert_int_equal(pi.fills, 0);
    assert_true(pi.launches <= 10);
    dla_scope_end();
    dla_accel_free(af);
}

/* Sums and a mean over dims of one element (a batch of one's loss), and a
 * sum that adds three: in[0] 3x1 times in[1]. */
static dla_status one_element_sums(void *ctx, int nin, dla_tensor *const *in, int nout,
                                   dla_tensor **out)
{
    dla_tensor *p = dla_mul(in[0], in[1]);
    out[0] = dla_sum(p, 1, (const int64_t[]){2});
    out[1] = dla_mean(dla_square(p), 1, (const int64_t[]){2});
    out[2] = dla_sum(dla_sum(p, 1, (const int64_t[]){1}), 0, NULL);
    out[3] = dla_sum(p, 1, (const int64_t[]){1});
    return dla_tensor_status(out[3]);
}

static void a_sum_of_one_element_each_joins_its_chain_with_the_bits_of_eager(void **state)
{
    dla_scope_begin();
    dla_accel *af = dla_accelerate(one_element_sums, NULL);
    /* -0 (whose sum is +0 in every plugin's reduce, and in x * 1 + 0), a
     * NaN, infinities and ordinary values, in float and double. */
    const float xf[3] = {-0.0f, NAN, 1.5f}, wf[3] = {1.0f, 2.0f, -3.25f};
    const float xg[3] = {INFINITY, -0.0f, 0.1f}, wg[3] = {-1.0f, 1.0f, 3.0f};
    for (int call = 0; call < 5; call++) {
        const int second = call % 2;
        dla_tensor *in[2] = {dla_tensor_from_host(second ? xg : xf, DLA_F32, "", DLA_DIMS(3, 1)),
                             dla_tensor_from_host(second ? wg : wf, DLA_F32, "", DLA_DIMS(3, 1))};
        call_matches_eager(af, one_element_sums, 2, in, 4);
    }
    /* The sum and the mean over one element each are elementwise, in the
     * chain with the multiply; the sums of three keep their reduces; the
     * sum of one sum is an affine launch of its own (its input comes from
     * a reduce). */
    plan_info pi = accel_plan(af, "cpu:0");
    assert_true(pi.found);
    assert_true(pi.runs >= 2);
    assert_int_equal(pi.reduces, 2);
    assert_int_equal(pi.launches, 4);
    assert_int_equal(pi.nfused, 1);
    assert_int_equal(pi.fused_from, 4);
    dla_scope_end();
    dla_accel_free(af);
}

/* Outer products (inner dim 1) with each transpose, and one product of
 * inner dim 2 that stays a GEMM: in[0] 3x1, in[1] 1x3, in[2] 1x4, in[3]
 * 4x1, in[4] 3x2, in[5] 2x4; rows 2 of in[6] 2x3 and in[7] 2x4 are
 * operands whose rows lie 2 apart (a leading dim of 2). */
static dla_status outer_products(void *ctx, int nin, dla_tensor *const *in, int nout,
                                 dla_tensor **out)
{
    out[0] = dla_mtimes(in[0], in[2]);
    out[1] = dla_pagemtimes(in[1], "transpose", in[2], "none");
    out[2] = dla_pagemtimes(in[0], "none", in[3], "transpose");
    out[3] = dla_pagemtimes(in[1], "transpose", in[3], "transpose");
    out[4] = dla_mtimes(in[4], in[5]);
    /* An outer product read by an elementwise step joins its chain. */
    out[5] = dla_relu(dla_add(dla_mtimes(in[0], in[2]), out[4]));
    out[6] = dla_pagemtimes(dla_slice(in[6], 1, 1, 1, 2), "transpose",
                            dla_slice(in[7], 1, 1, 1, 2), "none");
    return dla_tensor_status(out[6]);
}

static dla_tensor *host_tensor(const double *v, dla_dtype t, int64_t rows, int64_t cols)
{
    float f[8];
    for (int i = 0; i < rows * cols; i++)
        f[i] = (float)v[i];
    return dla_tensor_from_host(t == DLA_F32 ? (const void *)f : (const void *)v, t, "",
                                DLA_DIMS(rows, cols));
}

static void outer_products_run_elementwise_with_the_bits_of_the_gemm(void **state)
{
    const dla_dtype types[2] = {DLA_F32, DLA_F64};
    for (int ti = 0; ti < 2; ti++) {
        const dla_dtype t = types[ti];
        dla_scope_begin();
        dla_accel *af = dla_accelerate(outer_products, NULL);
        /* Zero products of either sign (-0 * 1.5, 0 * -4, -0 * -4): the
         * GEMM's sum starts at +0, so each is +0; NaN and infinities;
         * 0 * inf is NaN. */
        const double a[2][3] = {{-0.0, 1.5, -2.0}, {0.0, NAN, 0.1}};
        const double b[2][4] = {{-4.0, 0.0, INFINITY, 3.0}, {-0.0, -1.0, 2.5, -INFINITY}};
        const double c[6] = {1, -2, 0.5, 3, -1, 0.25}, d[8] = {1, 2, 3, 4, -1, -2, -3, -4};
        for (int call = 0; call < 5; call++) {
            const int v = call % 2;
            dla_tensor *in[8] = {host_tensor(a[v], t, 3, 1), host_tensor(a[v], t, 1, 3),
                                 host_tensor(b[v], t, 1, 4), host_tensor(b[v], t, 4, 1),
                                 host_tensor(c, t, 3, 2),    host_tensor(d, t, 2, 4),
                                 host_tensor(c, t, 2, 3),    host_tensor(d, t, 2, 4)};
            call_matches_eager(af, outer_products, 8, in, 7);
        }
        /* The four outer products, side by side, are one fused launch
         * keeping four results; the other two are one more, with the add
         * and the relu; the product of inner dim 2 stays a GEMM. */
        plan_info pi = accel_plan(af, "cpu:0");
        assert_true(pi.found);
        assert_int_equal(pi.gemms, 1);
        assert_int_equal(pi.launches, 3);
        assert_int_equal(pi.nfused, 2);
        dla_scope_end();
        dla_accel_free(af);
    }
}

/* Constants made inside the function (dla_full, and dla_ones scaled,
 * which the trace keeps as constants: neither is a launch) taken each way
 * an add, a subtract or a multiply can take one: x + c, x - c, c - x and
 * x * c, with c 2.5, +0 and -0 (in[1] picks: 0, 1 or 2). */
static dla_status with_constants(void *ctx, int nin, dla_tensor *const *in, int nout,
                              dla_tensor **out)
{
    const double cs[3] = {2.5, 0.0, -0.0};
    const double c = cs[(int)dla_tensor_item(in[1], 0)];
    dla_tensor *f = dla_full(c, DLA_F32, "", DLA_DIMS(7, 1));
    dla_tensor *g = dla_affine(dla_ones(DLA_F32, "", DLA_DIMS(7, 1)), c, 0.0);
    out[0] = dla_add(in[0], f);
    out[1] = dla_sub(in[0], f);
    out[2] = dla_sub(g, in[0]);
    out[3] = dla_mul(in[0], g);
    return dla_tensor_status(out[3]);
}

static void constants_of_one_value_join_the_chain_with_the_bits_of_eager(void **state)
{
    dla_scope_begin();
    const float x[7] = {-0.0f, 0.0f, NAN, INFINITY, -INFINITY, 1e-40f, 3.0f};
    for (int which = 0; which < 3; which++) {
        /* in[1] is read on the host while recording (a value the trace
         * bakes), so each c gets an accelerated function of its own. */
        dla_accel *af = dla_accelerate(with_constants, NULL);
        dla_tensor *in[2] = {dla_tensor_from_host(x, DLA_F32, "", DLA_DIMS(7, 1)),
                             dla_full((double)which, DLA_F32, "", DLA_DIMS(1, 1))};
        for (int call = 0; call < 4; call++) {
            call_matches_eager(af, with_constants, 2, in, 4);
        }
        /* The scaling of the ones and the four results are one fused
         * launch, the two constants its inputs. */
        plan_info pi = accel_plan(af, "cpu:0");
        assert_true(pi.found);
        assert_int_equal(pi.launches, 1);
        assert_int_equal(pi.nfused, 1);
        assert_int_equal(pi.fused_from, 5);
        dla_accel_free(af);
    }
    dla_scope_end();
}

/* cast(a <= b) .* c, and min(a, b) and its gradients (cast(a <= b) +
 * cast(b ~= b), times the gradient): a comparison and its cast to float. */
static dla_status masked(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_mul(dla_cast(dla_le(in[0], in[1]), DLA_F32), in[2]);
    dla_tensor *loss = dla_sum(dla_mul(dla_min2(in[0], in[1]), in[2]), 0, NULL);
    return dla_gradient(loss, 2, in, out + 1);
}

/* Before: a comparison's cast to float was a launch of its own (fused
 * programs do not hold casts), after the comparison's own launch; a
 * comparison's register already holds 1 or 0 in the program's dtype, so
 * the cast is that register, and the three are one program. */
static void a_comparison_cast_to_float_is_its_register_in_the_chain(void **state)
{
    (void)state;
    dla_scope_begin();
    const float a[8] = {1, -0.0f, NAN, INFINITY, 2, 3, -INFINITY, 5};
    const float b[8] = {1, 0.0f, 1, INFINITY, NAN, -3, 4, NAN};
    const float c[8] = {2, 3, 4, 5, 6, 7, 8, 9};
    dla_tensor *in[3] = {dla_tensor_from_host(a, DLA_F32, "", DLA_DIMS(8, 1)),
                         dla_tensor_from_host(b, DLA_F32, "", DLA_DIMS(8, 1)),
                         dla_tensor_from_host(c, DLA_F32, "", DLA_DIMS(8, 1))};
    dla_accel *af = dla_accelerate(masked, NULL);
    for (int call = 0; call < 4; call++)
        results_match_eager(af, masked, 1, 3, in, 3);
    plan_info pi = accel_plan(af, "cpu:0");
    assert_true(pi.found);
    /* No cast runs as a launch of its own. */
    assert_int_equal(pi.casts, 0);
    assert_true(pi.nfused >= 2);
    dla_scope_end();
    dla_accel_free(af);
}

static void a_planned_conv_batchnorm_relu_chain_equals_eager_with_its_gradients(void **state)
{
    dla_scope_begin();
    dla_rng_seed(12);
    dla_tensor *in[7];
    cnn_inputs(in);
    dla_accel *af = dla_accelerate(cnn_loss, NULL);
    for (int call = 0; call < 4; call++) {
        dla_tensor *got[7], *want[7];
        in[4] = dla_randn(DLA_F32, "SSCB", DLA_DIMS(6, 5, 2, 3));
        assert_int_equal(dla_accel_feval(af, NULL, 7, in, 7, got), DLA_OK);
        assert_int_equal(dla_feval(cnn_loss, NULL, 7, in, 7, want), DLA_OK);
        for (int i = 0; i < 7; i++)
            assert_same_bits(got[i], want[i]);
        /* The running statistics go round, as a training loop's would. */
        in[5] = got[5];
        in[6] = got[6];
    }
    plan_info pi = accel_plan(af, "cpu:0");
    assert_true(pi.found);
    assert_int_equal(pi.runs, 2);
    assert_true(pi.arena <= pi.inter);
    assert_true(pi.ninter > 10);
    /* The batch normalization's per-channel arithmetic, several of whose
     * results later steps read, runs as fused launches keeping them. */
    if (dla_device_runs_natively(dla_device_get("cpu:0"), DLA_KERNEL_FUSED_MULTI, DLA_F32))
        assert_true(pi.nmulti >= 2);
    assert_int_equal(pi.step_lines, pi.launches + pi.invoked);
    dla_scope_end();
    dla_accel_free(af);
}

static void in_place_chains_comparisons_and_wheres_fuse_and_keep_eager_bits(void **state)
{
    dla_scope_begin();
    dla_rng_seed(18);
    dla_tensor *in[3];
    weighted_ce_targets(in, 64);
    dla_accel *af = dla_accelerate(weighted_ce, NULL);
    for (int call = 0; call < 4; call++) {
        /* Large logits saturate the softmax: the clamp of log(0) is taken. */
        in[0] = dla_affine(dla_randn(DLA_F32, "CB", DLA_DIMS(4, 64)), call == 3 ? 200.0 : 2.0, 0.0);
        results_match_eager(af, weighted_ce, 1, 3, in, 2);
    }
    plan_info pi = accel_plan(af, "cpu:0");
    assert_true(pi.found);
    assert_int_equal(pi.runs, 2);
    assert_true(pi.nfused >= 3);
    assert_true(pi.fused_from >= 2 * pi.nfused + 2);
    /* The clamp at the least normal float is a fill inside the trace that
     * the comparison and the where after it only read: it ran once, when
     * the plan was made, into a place of the arena that later steps'
     * intermediates do not take (the second run read it again). */
    assert_int_equal(pi.fixed, 1);
    assert_int_equal(pi.fills, 0);
    dla_scope_end();
    dla_accel_free(af);
}

/* Fills that something writes after them run on every run: the zeros
 * that dla_index's gradient adds into, and the padding around dla_pad's
 * copy. */
static dla_status fills_read_and_written(void *ctx, int nin, dla_tensor *const *in, int nout,
                                         dla_tensor **out)
{
    out[0] = dla_sum(dla_mul(dla_index(in[0], 2, in[1]), in[2]), 0, NULL);
    out[1] = dla_pad(in[0], 2, (const int64_t[]){1, 0}, (const int64_t[]){0, 2}, -0.5);
    return dla_gradient(out[0], 1, in, out + 2);
}

static void fills_written_after_run_every_time(void **state)
{
    dla_scope_begin();
    dla_rng_seed(23);
    dla_accel *af = dla_accelerate(fills_read_and_written, NULL);
    const int32_t pos[5] = {2, 0, 2, 1, 2};
    dla_tensor *idx = dla_tensor_from_host(pos, DLA_I32, "", DLA_DIMS(1, 5));
    for (int call = 0; call < 5; call++) {
        dla_tensor *x = dla_randn(DLA_F64, "", DLA_DIMS(3, 3)), *w = dla_randn(DLA_F64, "", DLA_DIMS(3, 5));
        results_match_eager(af, fills_read_and_written, 1, 3, (dla_tensor *[]){x, idx, w}, 3);
    }
    plan_info pi = accel_plan(af, "cpu:0");
    assert_true(pi.found);
    assert_int_equal(pi.runs, 3);
    assert_int_equal(pi.fixed, 0);
    assert_int_equal(pi.fills, 2);
    dla_accel_free(af);
    dla_scope_end();
}

/* A loss of slices of x along ctx's dim (1 or 2) of 8, as an LSTM's gates
 * are slices of its product: each slice's gradient is added into a buffer
 * of zeros. ctx: {dim, layout}: layout 0 four slices of 2 that cover x, 1
 * two that overlap (0-3 and 2-5), 2 two that leave 4-7 alone, 3 two of
 * every other one (0, 2, 4 and 1, 3, 5; 6 and 7 left alone). */
static dla_status gate_slices(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    const int *c = ctx, dim = c[0], layout = c[1];
    dla_tensor *x = in[0], *p[4];
    int np = 2;
    if (layout == 0) {
        np = 4;
        for (int k = 0; k < 4; k++)
            p[k] = dla_slice(x, dim, 2 * k, 1, 2 * k + 2);
    } else if (layout == 1) {
        p[0] = dla_slice(x, dim, 0, 1, 4);
        p[1] = dla_slice(x, dim, 2, 1, 6);
    } else if (layout == 2) {
        p[0] = dla_slice(x, dim, 0, 1, 2);
        p[1] = dla_slice(x, dim, 2, 1, 4);
    } else {
        p[0] = dla_slice(x, dim, 0, 2, 6);
        p[1] = dla_slice(x, dim, 1, 2, 6);
    }
    dla_tensor *h = dla_mul(dla_sigmoid(p[0]), dla_tanh(p[1]));
    if (np == 4)
        h = dla_add(dla_mul(dla_sigmoid(p[2]), h), dla_square(p[3]));
    out[0] = dla_sum(dla_mul(h, in[1]), 0, NULL);
    return dla_gradient(out[0], 1, in, out + 1);
}

/* The buffer of zeros is filled on every run only while something reads
 * its zeros: four slices that cover it each write their part (their adds
 * of zeros folded), and the fill goes; overlapping slices, or slices that
 * leave some of it, keep the fill. With the bits of eager either way. */
static void a_fill_that_slices_cover_goes_and_the_rest_keep_theirs(void **state)
{
    (void)state;
    static const int cases[][3] = {
        /* dim, layout, fills expected */
        {1, 0, 0}, {2, 0, 0}, {1, 1, 1}, {2, 1, 1}, {1, 2, 1}, {2, 2, 1}, {1, 3, 1}, {2, 3, 1},
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++)
        for (int dt = 0; dt < 2; dt++) {
            dla_scope_begin();
            dla_rng_seed(31 + (unsigned)k);
            const dla_dtype t = dt ? DLA_F64 : DLA_F32;
            const int ctx[2] = {cases[k][0], cases[k][1]};
            const int64_t rows = ctx[0] == 1 ? 8 : 5, cols = ctx[0] == 1 ? 5 : 8;
            const int64_t part = ctx[1] == 1 ? 4 : ctx[1] == 3 ? 3 : 2;
            const int64_t prow = ctx[0] == 1 ? part : rows, pcol = ctx[0] == 2 ? part : cols;
            dla_accel *af = dla_accelerate(gate_slices, NULL);
            for (int call = 0; call < 5; call++) {
                dla_tensor *x = dla_randn(t, "", DLA_DIMS(rows, cols));
                dla_tensor *w = dla_randn(t, "", DLA_DIMS(prow, pcol));
                results_match_eager_ctx(af, gate_slices, (void *)ctx, 1, 2,
                                        (dla_tensor *[]){x, w}, 2);
            }
            plan_info pi = accel_plan(af, "cpu:0");
            if (!pi.found)
                fail_msg("dim %d layout %d: no plan: %s", ctx[0], ctx[1], pi.why);
            assert_int_equal(pi.runs, 3);
            if (pi.fills != cases[k][2])
                fail_msg("dim %d layout %d %s: %d fills, want %d", ctx[0], ctx[1],
                         dt ? "double" : "single", pi.fills, cases[k][2]);
            dla_accel_free(af);
            dla_scope_end();
        }
}

/* Slices drawn at random (ctx: a slice_set): each slice's gradient is
 * added into the zeros of x's, as partial_fills follows. */
/* xorshift64: the draws of random_slices_gradients_plan_to_eager_bits. */
static uint64_t next_rand(unsigned long long *r)
{
    *r ^= *r << 13;
    *r ^= *r >> 7;
    *r ^= *r << 17;
    return *r;
}

typedef struct slice_set {
    int n;
    int dim[4];
    int64_t start[4], step[4], stop[4];
} slice_set;

static dla_status random_slices_loss(void *ctx, int nin, dla_tensor *const *in, int nout,
                                     dla_tensor **out)
{
    (void)nin, (void)nout;
    const slice_set *s = ctx;
    dla_tensor *loss = NULL;
    for (int k = 0; k < s->n; k++) {
        dla_tensor *p = dla_slice(in[0], s->dim[k], s->start[k], s->step[k], s->stop[k]);
        dla_tensor *term = dla_sum(k % 2 ? dla_tanh(p) : dla_square(p), 0, NULL);
        loss = loss ? dla_add(loss, term) : term;
    }
    out[0] = loss;
    return dla_gradient(loss, 1, in, out + 1);
}

/* Random slices (along either dim, any start, step and stop, apart,
 * overlapping, covering x or not) replay with the bits of eager, whether
 * the fill of their gradient stays or goes. */
static void random_slices_gradients_plan_to_eager_bits(void **state)
{
    (void)state;
    unsigned long long r = 0x5eed5eedULL;
    int gone = 0, kept = 0;
    for (int round = 0; round < 60; round++) {
        dla_scope_begin();
        dla_rng_seed(100 + (unsigned)round);
        const int64_t dims[2] = {1 + (int64_t)(next_rand(&r) % 9), 1 + (int64_t)(next_rand(&r) % 7)};
        slice_set s = {.n = 1 + (int)(next_rand(&r) % 4)};
        for (int k = 0; k < s.n; k++) {
            s.dim[k] = 1 + (int)(next_rand(&r) % 2);
            const int64_t len = dims[s.dim[k] - 1];
            s.start[k] = (int64_t)(next_rand(&r) % (uint64_t)len);
            s.step[k] = 1 + (int64_t)(next_rand(&r) % 3);
            s.stop[k] = s.start[k] + 1 + (int64_t)(next_rand(&r) % (uint64_t)(len - s.start[k]));
        }
        /* Every other round, slices that tile dim 1 in equal parts. */
        if (round % 2 && dims[0] % 2 == 0) {
            s.n = 2;
            for (int k = 0; k < 2; k++) {
                s.dim[k] = 1;
                s.start[k] = k * dims[0] / 2;
                s.step[k] = 1;
                s.stop[k] = (k + 1) * dims[0] / 2;
            }
        }
        dla_accel *af = dla_accelerate(random_slices_loss, NULL);
        for (int call = 0; call < 5; call++) {
            dla_tensor *x = dla_randn(DLA_F32, "", DLA_DIMS(dims[0], dims[1]));
            results_match_eager_ctx(af, random_slices_loss, &s, 1, 1, (dla_tensor *[]){x}, 2);
        }
        plan_info pi = accel_plan(af, "cpu:0");
        if (pi.found) {
            gone += pi.fills == 0;
            kept += pi.fills > 0;
        }
        dla_accel_free(af);
        dla_scope_end();
    }
    /* Both ways were taken. */
    assert_true(gone > 0);
    assert_true(kept > 0);
}

/* A convolution with a bias and what reads its result (ctx: which): 0
 * inference's batchnorm and a relu, 1 a relu, 2 a relu and the result
 * itself (an output), 3 a comparison. in: cnn_inputs' but in[5], in[6]
 * are the running statistics. */
static dla_status conv_then(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    const int which = *(const int *)ctx;
    const dla_conv_options pad1 = {.padding = {{1, 1}, {1, 1}}};
    dla_tensor *y = dla_conv(in[4], in[0], in[1], &pad1);
    if (which == 0)
        out[0] = dla_relu(dla_batchnorm(y, in[2], in[3], in[5], in[6], NULL));
    else if (which == 3)
        out[0] = dla_gt(y, dla_zeros(dla_tensor_dtype(y), "", DLA_DIMS(1, 1)));
    else
        out[0] = dla_relu(y);
    if (which == 2)
        out[1] = y;
    return dla_tensor_status(out[0]);
}

static int plan_lists(dla_accel *af, const char *text)
{
    dla_trace *t = dla_accel_trace(af, 0);
    assert_non_null(t);
    char *all = trace_text(t);
    const char *steps = strstr(all, "plan steps on cpu:0: ");
    const int found = steps && strstr(steps, text) != NULL;
    free(all);
    dla_trace_release(t);
    return found;
}

/* Inference through three convolutions of a ResNet stage, each the cpu
 * plugin's other path: 3 -> 16 channels (the direct kernels), 16 -> 16
 * 3x3 at batch 9 (Winograd, runs of several images) with the first's
 * result as a residual, and 16 -> 16 with stride 2 (im2col). After each a
 * batch normalization with given statistics (a scale and a shift per
 * channel) and a relu. */
static dla_status stage_inference(void *ctx, int nin, dla_tensor *const *in, int nout,
                                  dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    const dla_conv_options pad1 = {.padding = {{1, 1}, {1, 1}}};
    const dla_conv_options down = {.stride = {2, 2}, .padding = {{1, 1}, {1, 1}}};
    dla_tensor *a = dla_relu(
        dla_batchnorm(dla_conv(in[0], in[1], in[2], &pad1), in[3], in[4], in[5], in[6], NULL));
    dla_tensor *b = dla_relu(dla_add(
        dla_batchnorm(dla_conv(a, in[7], in[8], &pad1), in[3], in[4], in[5], in[6], NULL), a));
    out[0] = dla_relu(
        dla_batchnorm(dla_conv(b, in[9], in[10], &down), in[3], in[4], in[5], in[6], NULL));
    return dla_tensor_status(out[0]);
}

/* Each convolution and the fused launch after it (bias, scale and shift,
 * residual, relu) become one conv_forward_fused launch where the device
 * has the kernel, with the bits of eager; DLACCEL_PLAN=no-epilogue
 * (tests/tool_env.sh) keeps them two launches. In single and double. */
static void a_convolution_runs_the_fused_launch_after_it_as_its_epilogue(void **state)
{
    (void)state;
    const char *mode = getenv("DLACCEL_PLAN");
    const int off = mode && strcmp(mode, "no-epilogue") == 0;
    for (int c = 0; c < 2; c++) {
        const dla_dtype dt = c ? DLA_F64 : DLA_F32;
        dla_scope_begin();
        dla_rng_seed(40 + c);
        dla_tensor *in[11] = {
            NULL,
            dla_randn(dt, "", DLA_DIMS(3, 3, 3, 16)),
            dla_randn(dt, "", DLA_DIMS(16, 1)),
            dla_randn(dt, "", DLA_DIMS(16, 1)),
            dla_randn(dt, "", DLA_DIMS(16, 1)),
            dla_randn(dt, "", DLA_DIMS(16, 1)),
            dla_rand(dt, "", DLA_DIMS(16, 1)),
            dla_randn(dt, "", DLA_DIMS(3, 3, 16, 16)),
            dla_randn(dt, "", DLA_DIMS(16, 1)),
            dla_randn(dt, "", DLA_DIMS(3, 3, 16, 16)),
            dla_randn(dt, "", DLA_DIMS(16, 1)),
        };
        dla_accel *af = dla_accelerate(stage_inference, NULL);
        for (int call = 0; call < 4; call++) {
            in[0] = dla_randn(dt, "SSCB", DLA_DIMS(10, 9, 3, 9));
            results_match_eager(af, stage_inference, 0, 11, in, 1);
        }
        plan_info pi = accel_plan(af, "cpu:0");
        assert_true(pi.found);
        assert_int_equal(pi.runs, 2);
        const int native = dla_device_runs_natively(dla_device_get("cpu:0"),
                                                    DLA_KERNEL_CONV_FORWARD_FUSED, dt);
        const int want = off || !native ? 0 : 3;
        assert_int_equal(pi.nepilogue, want);
        assert_int_equal(plan_lists(af, "conv_forward, then fused [add mul add add relu]") +
                             plan_lists(af, "conv_forward + bias, then fused"),
                         want > 0);
        assert_int_equal(pi.step_lines, pi.launches + pi.invoked);
        dla_accel_free(af);
        dla_scope_end();
    }
}

/* Two 3x3 convolutions of 16 channels at batch 9 (Winograd on the cpu
 * plugin), each with a relu, and the loss's gradient with respect to x
 * alone (the weights frozen: what an adversarial example or a saliency
 * map takes). in: x, w1, b1, w2, b2. */
static dla_status input_saliency(void *ctx, int nin, dla_tensor *const *in, int nout,
                                 dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    const dla_conv_options pad1 = {.padding = {{1, 1}, {1, 1}}};
    dla_tensor *a = dla_relu(dla_conv(in[0], in[1], in[2], &pad1));
    dla_tensor *b = dla_relu(dla_conv(a, in[3], in[4], &pad1));
    out[0] = dla_sum(dla_square(b), 0, NULL);
    return dla_gradient(out[0], 1, in, out + 1);
}

/* The gradient with respect to the input: the relu's backward mask right
 * after an input gradient runs as that conv_backward_data's epilogue
 * (conv_backward_data_fused) where the device has the kernel, with the
 * bits of eager; DLACCEL_PLAN=no-epilogue (tests/tool_env.sh) keeps them
 * two launches. */
static void an_input_gradient_runs_the_relu_mask_as_its_epilogue(void **state)
{
    (void)state;
    const char *mode = getenv("DLACCEL_PLAN");
    const int off = mode && strcmp(mode, "no-epilogue") == 0;
    dla_scope_begin();
    dla_rng_seed(44);
    dla_tensor *in[5] = {
        NULL,
        dla_randn(DLA_F32, "", DLA_DIMS(3, 3, 16, 16)),
        dla_randn(DLA_F32, "", DLA_DIMS(16, 1)),
        dla_randn(DLA_F32, "", DLA_DIMS(3, 3, 16, 16)),
        dla_randn(DLA_F32, "", DLA_DIMS(16, 1)),
    };
    dla_accel *af = dla_accelerate(input_saliency, NULL);
    for (int call = 0; call < 4; call++) {
        in[0] = dla_randn(DLA_F32, "SSCB", DLA_DIMS(10, 9, 16, 9));
        results_match_eager(af, input_saliency, 1, 5, in, 2);
    }
    plan_info pi = accel_plan(af, "cpu:0");
    assert_true(pi.found);
    assert_int_equal(pi.runs, 2);
    const int native = dla_device_runs_natively(dla_device_get("cpu:0"),
                                                DLA_KERNEL_CONV_BACKWARD_DATA_FUSED, DLA_F32);
    assert_int_equal(plan_lists(af, "conv_backward_data, then fused"), !off && native);
    assert_int_equal(pi.step_lines, pi.launches + pi.invoked);
    dla_accel_free(af);
    dla_scope_end();
}

/* A = W x (256 KiB), then exp(A) elementwise, then a product of that:
 * the exp reads A for the last time, through the view it writes, so its
 * result may take A's memory. ctx 1: A is also multiplied afterwards, so
 * it stays alive beside the exp's result. */
static dla_status exp_between_products(void *ctx, int nin, dla_tensor *const *in, int nout,
                                       dla_tensor **out)
{
    const int keep = ctx && *(const int *)ctx;
    dla_tensor *a = dla_mtimes(in[0], in[1]);
    out[0] = dla_mtimes(in[2], dla_exp(a));
    if (keep)
        out[1] = dla_mtimes(in[2], a);
    return dla_tensor_status(out[0]);
}

static void an_elementwise_result_takes_the_memory_of_an_input_it_reads_last(void **state)
{
    (void)state;
    /* DLACCEL_PLAN=no-in-place (tests/tool_env.sh) gives each result its
     * own memory; the rest of this test is the default's. */
    const char *mode = getenv("DLACCEL_PLAN");
    const int in_place = !mode || strcmp(mode, "no-in-place") != 0;
    const size_t a_bytes = 64 * 1024 * sizeof(float);
    for (int keep = 0; keep < 2; keep++) {
        dla_scope_begin();
        dla_rng_seed(70 + keep);
        dla_tensor *in[3] = {dla_rand(DLA_F32, "", DLA_DIMS(64, 32)),
                             dla_rand(DLA_F32, "", DLA_DIMS(32, 1024)),
                             dla_rand(DLA_F32, "", DLA_DIMS(4, 64))};
        dla_accel *af = dla_accelerate(exp_between_products, NULL);
        const int nout = keep ? 2 : 1;
        for (int call = 0; call < 4; call++) {
            in[1] = dla_affine(in[1], 0.5, 0.25);
            results_match_eager_ctx(af, exp_between_products, &keep, 0, 3, in, nout);
        }
        plan_info pi = accel_plan(af, "cpu:0");
        assert_true(pi.found);
        assert_int_equal(pi.runs, 2);
        /* The two intermediates, A and exp(A), of 256 KiB each: in one
         * place when the exp writes over A, two when A is read again (or
         * in-place results are off). */
        assert_int_equal(pi.inter, 2 * a_bytes);
        if (in_place && !keep)
            assert_int_equal(pi.arena, a_bytes);
        else
            assert_int_equal(pi.arena, 2 * a_bytes);
        /* The listing marks the exp's step. */
        assert_int_equal(pi.in_place, in_place && !keep);
        dla_accel_free(af);
        dla_scope_end();
    }
}

static void a_convolutions_bias_joins_the_chain_that_alone_reads_its_result(void **state)
{
    /* DLACCEL_PLAN=conv-bias-in (tests/tool_env.sh) keeps every bias in
     * its convolution; the rest of this test is the default's. */
    const char *mode = getenv("DLACCEL_PLAN");
    const int moved = !mode || strcmp(mode, "conv-bias-in") != 0;
    /* Cases 4 and 5 are 0 and 1 in double, 5 with one bias value for
     * every channel (a view of stride 0). */
    for (int c = 0; c < 6; c++) {
        int which = c < 4 ? c : c - 4;
        const dla_dtype dt = c < 4 ? DLA_F32 : DLA_F64;
        dla_scope_begin();
        dla_rng_seed(30 + c);
        dla_tensor *in[7] = {
            dla_randn(dt, "", DLA_DIMS(3, 3, 2, 4)),
            c == 5 ? dla_randn(dt, "", DLA_DIMS(1, 1)) : dla_randn(dt, "", DLA_DIMS(4, 1)),
            dla_randn(dt, "", DLA_DIMS(4, 1)),
            dla_ones(dt, "", DLA_DIMS(4, 1)),
            NULL,
            dla_randn(dt, "", DLA_DIMS(4, 1)),
            dla_rand(dt, "", DLA_DIMS(4, 1)),
        };
        dla_accel *af = dla_accelerate(conv_then, NULL);
        const int nout = which == 2 ? 2 : 1;
        for (int call = 0; call < 4; call++) {
            in[4] = dla_randn(dt, "SSCB", DLA_DIMS(6, 5, 2, 3));
            results_match_eager_ctx(af, conv_then, &which, 1, 7, in, nout);
        }
        plan_info pi = accel_plan(af, "cpu:0");
        assert_true(pi.found);
        assert_int_equal(pi.runs, 2);
        /* 0 and 1: the bias moved into the chain (its first instruction);
         * 2: the result is also an output, 3: the comparison cannot end a
         * chain, so the bias stays in the convolution and no add is
         * launched. */
        const int split = moved && which < 2;
        assert_int_equal(plan_lists(af, "conv_forward + bias"), !split);
        assert_int_equal(plan_lists(af, which == 0 ? "fused [add mul add relu]" : "fused [add relu]"),
                         split);
        assert_false(plan_lists(af, "binary add"));
        if (!split && which == 0)
            assert_true(plan_lists(af, "fused [mul add relu]"));
        /* The batchnorm's scale and shift, made of inputs alone, come
         * first (hoist_input_only), before the convolution. */
        if (which == 0)
            assert_true(plan_lists(af, "step   0: fused"));
        dla_scope_end();
        dla_accel_free(af);
    }
}

/* One SGDM step on two parameters of different shapes: v = 0.9 v - 0.01 g,
 * p = p + v, the new velocity and the new value both outputs. in: p0, p1,
 * v0, v1, g0, g1; out: p0, p1, v0, v1. */
static dla_status sgdm(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    for (int i = 0; i < 2; i++) {
        dla_tensor *v = dla_sub(dla_affine(in[2 + i], 0.9, 0.0), dla_affine(in[4 + i], 0.01, 0.0));
        out[i] = dla_add(in[i], v);
        out[2 + i] = v;
    }
    return DLA_OK;
}

static void a_parameter_update_is_one_launch_that_keeps_both_results(void **state)
{
    dla_device *dev = dla_device_get("cpu:0");
    if (!dla_device_runs_natively(dev, DLA_KERNEL_FUSED_MULTI, DLA_F32))
        skip();
    dla_scope_begin();
    dla_rng_seed(21);
    dla_tensor *in[6] = {dla_randn(DLA_F32, "", DLA_DIMS(20, 1)),
                         dla_randn(DLA_F32, "", DLA_DIMS(3, 3, 2, 4)),
                         dla_randn(DLA_F32, "", DLA_DIMS(20, 1)),
                         dla_randn(DLA_F32, "", DLA_DIMS(3, 3, 2, 4))};
    dla_accel *af = dla_accelerate(sgdm, NULL);
    for (int call = 0; call < 5; call++) {
        in[4] = dla_randn(DLA_F32, "", DLA_DIMS(20, 1));
        in[5] = dla_randn(DLA_F32, "", DLA_DIMS(3, 3, 2, 4));
        dla_tensor *got[4], *want[4];
        assert_int_equal(dla_accel_call(af, NULL, 6, in, 4, got), DLA_OK);
        assert_int_equal(dla_feval(sgdm, NULL, 6, in, 4, want), DLA_OK);
        for (int i = 0; i < 4; i++)
            assert_same_bits(got[i], want[i]);
        for (int i = 0; i < 4; i++)
            in[i] = got[i];
    }
    /* Per parameter affine, affine, sub, add: one fused_multi launch
     * writing the sum (p) and keeping the difference (v). */
    plan_info pi = accel_plan(af, "cpu:0");
    assert_true(pi.found);
    assert_int_equal(pi.runs, 3);
    assert_int_equal(pi.launches, 2);
    assert_int_equal(pi.nfused, 2);
    assert_int_equal(pi.fused_from, 8);
    assert_int_equal(pi.nmulti, 2);
    dla_scope_end();
    dla_accel_free(af);
}

/* Random elementwise graphs over 6x6 values: runs of launches of one shape
 * whose results are read again later (by the chain, transposed, through
 * other dims, broadcast after a sum, as outputs), batchnorm's own program
 * and convolutions with a bias, which the planner merges into fused and
 * fused_multi launches; gathers, whose gradients add into zeros, pads
 * (copies into a fill), softmaxes updated in place, overlapping pools
 * whose gradients add, casts, training batch and group normalizations,
 * other functions and a loss. Each op picks its operands among all
 * earlier values. */
#define RG_INPUTS 3
#define RG_OPS 24
#define RG_OUTPUTS 3
/* Calls per graph: one records, one plans, and the plan runs the other
 * five, so that a device serving plan_replay as the cuda plugin does runs
 * one itself (graphwrap records the third run, checks the fourth against
 * the recording and replays it from the fifth). */
#define RG_CALLS 7
typedef struct rand_graph {
    dla_dtype dt;      /* of the inputs and every value */
    int kind[RG_OPS];  /* 0..25 */
    int a[RG_OPS], b[RG_OPS];
    double alpha[RG_OPS];
    int out[RG_OUTPUTS];
} rand_graph;

/* n floats as a constant of dtype dt (converted on the host). */
static dla_tensor *rg_const(const float *v, int n, dla_dtype dt, int ndims, const int64_t *dims)
{
    double d[36];
    for (int i = 0; i < n && i < 36; i++)
        d[i] = v[i];
    return dla_tensor_from_host(dt == DLA_F64 ? (const void *)d : (const void *)v, dt, "", ndims,
                                dims);
}

static dla_status rand_graph_fn(void *ctx, int nin, dla_tensor *const *in, int nout,
                                dla_tensor **out)
{
    const rand_graph *g = ctx;
    dla_tensor *v[RG_INPUTS + RG_OPS];
    for (int i = 0; i < RG_INPUTS; i++)
        v[i] = in[i];
    for (int k = 0; k < RG_OPS; k++) {
        dla_tensor *a = v[g->a[k]], *b = v[g->b[k]], *r;
        switch (g->kind[k]) {
        case 0: r = dla_add(a, b); break;
        case 1: r = dla_sub(a, b); break;
        case 2: r = dla_mul(a, b); break;
        case 3: r = dla_affine(a, g->alpha[k], 0.25); break;
        case 4: r = dla_relu(a); break;
        case 5: r = dla_square(a); break;
        case 6: r = dla_add(a, dla_sum(b, 0, NULL)); break; /* a broadcast read */
        case 7: r = dla_where(dla_gt(a, b), a, b); break;
        case 8: r = dla_sub(a, dla_permute(b, 2, (const int64_t[]){2, 1})); break;
        case 10: {
            /* A program an op launches itself (batchnorm's x .* s + t over
             * 6 channels of 6, its scale and shift made of constants),
             * which joins the chain that made x. */
            static const float mean[6] = {0.1f, -0.2f, 0.3f, 0.0f, 0.5f, -1.0f};
            static const float var[6] = {1.0f, 0.5f, 2.0f, 0.25f, 1.5f, 3.0f};
            dla_tensor *m = rg_const(mean, 6, g->dt, DLA_DIMS(6, 1));
            dla_tensor *s2 = rg_const(var, 6, g->dt, DLA_DIMS(6, 1));
            r = dla_reshape(dla_batchnorm(dla_reshape(a, "CB", 2, (const int64_t[]){6, 6}), m, s2,
                                          m, s2, NULL),
                            "", 2, (const int64_t[]){6, 6});
            break;
        }
        case 11: {
            /* A convolution with a bias (1x1, 6 channels in and out over
             * 3x2 positions: a's columns as channels), whose bias moves
             * into the chain after it when that alone reads it. */
            static float wv[36], bv[6];
            for (int i = 0; i < 36; i++)
                wv[i] = (float)((i * 7) % 11 - 5) * 0.125f;
            for (int i = 0; i < 6; i++)
                bv[i] = (float)(i - 2) * 0.375f;
            dla_tensor *w = rg_const(wv, 36, g->dt, DLA_DIMS(1, 1, 6, 6));
            dla_tensor *bias = rg_const(bv, 6, g->dt, DLA_DIMS(6, 1));
            dla_tensor *x = dla_reshape(a, "SSCB", 4, (const int64_t[]){3, 2, 6, 1});
            r = dla_reshape(dla_conv(x, w, bias, NULL), "", 2, (const int64_t[]){6, 6});
            break;
        }
        case 12: {
            /* An outer product (a GEMM of inner dim 1, fused by the
             * planner) of a column of a and a row of b, views into them
             * (b's row 6 elements apart); or, transposed, of a row of a
             * and a column of b. */
            const int64_t c = ((int64_t)(g->alpha[k] * 2.0) + 4) % 6; /* alpha: -2..2 */
            r = g->alpha[k] >= 0.0
                    ? dla_mtimes(dla_slice(a, 2, c, 1, c + 1), dla_slice(b, 1, c, 1, c + 1))
                    : dla_pagemtimes(dla_slice(a, 1, c, 1, c + 1), "transpose",
                                     dla_slice(b, 2, c, 1, c + 1), "transpose");
            break;
        }
        case 13: /* a GEMM of inner dim 6, b transposed or not */
            r = g->alpha[k] >= 0.0 ? dla_mtimes(a, b)
                                   : dla_pagemtimes(a, "none", b, "transpose");
            break;
        case 14: /* a row's sum, broadcast back: a reduce inside a chain */
            r = dla_sub(a, dla_affine(dla_sum(b, 1, (const int64_t[]){2}), 1.0 / 6.0, 0.0));
            break;
        case 15: /* a column's max, broadcast back */
            r = dla_sub(dla_max(a, 1, (const int64_t[]){1}), b);
            break;
        case 16: /* halves of two values side by side */
            r = dla_cat(2, 2, (dla_tensor *[]){dla_slice(a, 2, 0, 1, 3), dla_slice(b, 2, 3, 1, 6)});
            break;
        case 17: { /* columns gathered with repeats: the gradient adds into zeros */
            static const int32_t cols[6] = {5, 0, 5, 2, 2, 1};
            r = dla_index(a, 2, dla_tensor_from_host(cols, DLA_I32, "", DLA_DIMS(1, 6)));
            break;
        }
        case 19: /* a softmax over 6 channels of 6 (updated in place), or its log */
            r = dla_reshape(g->alpha[k] >= 0.0
                                ? dla_softmax(dla_reshape(a, "CB", 2, (const int64_t[]){6, 6}))
                                : dla_logsoftmax(dla_reshape(a, "CB", 2, (const int64_t[]){6, 6})),
                            "", 2, (const int64_t[]){6, 6});
            break;
        case 20: { /* overlapping 3x3 windows, "same": max or mean, whose gradients add */
            dla_tensor *x = dla_reshape(a, "SSCB", 4, (const int64_t[]){6, 6, 1, 1});
            const dla_pool_options same = {.padding_mode = "same"};
            x = g->alpha[k] >= 0.0 ? dla_maxpool(x, 2, (const int64_t[]){3, 3}, &same)
                                   : dla_avgpool(x, 2, (const int64_t[]){3, 3}, &same);
            r = dla_reshape(x, "", 2, (const int64_t[]){6, 6});
            break;
        }
        case 21: /* through the other float type and back: casts */
            r = dla_cast(dla_affine(dla_cast(a, g->dt == DLA_F32 ? DLA_F64 : DLA_F32),
                                    g->alpha[k], 1.0 / 3.0),
                         g->dt);
            break;
        case 22: { /* training batchnorm over 6 channels of 6, and its new running mean */
            static const float off[6] = {0.5f, -0.25f, 0.0f, 1.0f, -1.5f, 0.125f};
            static const float sc[6] = {1.0f, 2.0f, 0.5f, -1.0f, 1.25f, 0.75f};
            dla_tensor *o = rg_const(off, 6, g->dt, DLA_DIMS(6, 1));
            dla_tensor *f = rg_const(sc, 6, g->dt, DLA_DIMS(6, 1));
            dla_tensor *y = NULL, *nm = NULL;
            dla_batchnorm_train(dla_reshape(a, "CB", 2, (const int64_t[]){6, 6}), o, f, o, f,
                                NULL, &y, &nm, NULL);
            r = dla_add(dla_reshape(y, "", 2, (const int64_t[]){6, 6}),
                        dla_reshape(nm, "", 2, (const int64_t[]){6, 1}));
            break;
        }
        case 23: /* a group normalization: 2 groups of 3 channels per observation */
            r = dla_reshape(dla_groupnorm(dla_reshape(a, "CB", 2, (const int64_t[]){6, 6}), 2,
                                          dla_zeros(g->dt, "", DLA_DIMS(6, 1)),
                                          dla_ones(g->dt, "", DLA_DIMS(6, 1)), NULL),
                            "", 2, (const int64_t[]){6, 6});
            break;
        case 24: /* functions other than the arithmetic ones */
            r = g->alpha[k] >= 0.0 ? dla_mul(dla_sigmoid(a), dla_tanh(b))
                                   : dla_gelu(dla_leakyrelu(a, 0.125), NULL);
            break;
        case 25: /* a loss, scaling a */
            r = dla_mul(a, dla_mse(a, b, &(dla_regression_loss_options){.data_format = "CB"}));
            break;
        case 18: /* padded, and a window of it: a fill, then a copy into it */
            r = dla_slice(dla_slice(dla_pad(a, 2, (const int64_t[]){1, 0},
                                            (const int64_t[]){0, 1}, g->alpha[k]),
                                    1, 0, 1, 6),
                          2, 1, 1, 7);
            break;
        default: /* the same elements through other dims */
            r = dla_reshape(dla_mul(dla_reshape(a, "", 2, (const int64_t[]){36, 1}),
                                    dla_reshape(b, "", 2, (const int64_t[]){36, 1})),
                            "", 2, (const int64_t[]){6, 6});
            break;
        }
        v[RG_INPUTS + k] = r;
    }
    for (int i = 0; i < nout; i++)
        out[i] = v[g->out[i]];
    return dla_tensor_status(out[nout - 1]);
}

/* The random graph's outputs and inputs squared and summed (the loss),
 * and its gradients with respect to the inputs: out[0] the loss, out[1..]
 * the gradients. */
static dla_status rand_graph_loss(void *ctx, int nin, dla_tensor *const *in, dla_tensor **loss)
{
    dla_tensor *v[RG_OUTPUTS];
    dla_status st = rand_graph_fn(ctx, nin, in, RG_OUTPUTS, v);
    if (st != DLA_OK)
        return st;
    /* Each input's own square too, so that every input reaches the loss. */
    *loss = NULL;
    for (int i = 0; i < RG_OUTPUTS + nin; i++) {
        dla_tensor *s = dla_sum(dla_square(i < RG_OUTPUTS ? v[i] : in[i - RG_OUTPUTS]), 0, NULL);
        *loss = *loss ? dla_add(*loss, s) : s;
    }
    return DLA_OK;
}

static dla_status rand_graph_grad_fn(void *ctx, int nin, dla_tensor *const *in, int nout,
                                     dla_tensor **out)
{
    dla_status st = rand_graph_loss(ctx, nin, in, &out[0]);
    return st != DLA_OK ? st : dla_gradient(out[0], nin, in, out + 1);
}

/* Second derivatives: rand_graph_grad_fn's loss L and its gradients G_i
 * taken with enable_higher_derivatives, then L + sum_i sum(G_i .^ 2) (a
 * gradient penalty) and its gradients: out[0] the penalized loss,
 * out[1..] its gradients, through the recorded sweep's ops (the
 * accumulations of dla_add, unview, the norms' recomputed statistics). */
static dla_status rand_graph_grad2_fn(void *ctx, int nin, dla_tensor *const *in, int nout,
                                      dla_tensor **out)
{
    dla_tensor *g[RG_INPUTS], *loss;
    dla_status st = rand_graph_loss(ctx, nin, in, &loss);
    if (st != DLA_OK)
        return st;
    st = dla_gradient_opts(loss, nin, in, g,
                           &(dla_gradient_options){.enable_higher_derivatives = 1});
    if (st != DLA_OK)
        return st;
    for (int i = 0; i < nin; i++)
        loss = dla_add(loss, dla_sum(dla_square(g[i]), 0, NULL));
    out[0] = loss;
    return dla_gradient(loss, nin, in, out + 1);
}

/* A 6x6 input of the random graphs, laid out as layout says: 0 dense, 1
 * a transposed view, 2 columns 1..6 of a 6x8 (at an offset), 3 rows 1..6
 * of an 8x6 (a column stride of 8). Every call of a graph passes its
 * inputs laid out alike, so the plan serves them all. */
static dla_tensor *rg_input(dla_dtype dt, int layout)
{
    switch (layout) {
    case 1: return dla_permute(dla_randn(dt, "", DLA_DIMS(6, 6)), 2, (const int64_t[]){2, 1});
    case 2: return dla_slice(dla_randn(dt, "", DLA_DIMS(6, 8)), 2, 1, 1, 7);
    case 3: return dla_slice(dla_randn(dt, "", DLA_DIMS(8, 6)), 1, 1, 1, 7);
    default: return dla_affine(dla_randn(dt, "", DLA_DIMS(6, 6)), 0.5, 0.0);
    }
}

/* A random graph drawn from the xorshift state *r, and RG_CALLS calls of it
 * (grad 1: of its loss and gradients; 2: of rand_graph_grad2_fn's second
 * derivatives) through af and eagerly, with new
 * inputs in between (half the graphs take some as views: rg_input): each
 * replay's results are eager's bits. Counts the
 * outer products (kind 12) and the GEMMs of inner dim 6 (kind 13) drawn;
 * then the trace saved and loaded, replayed once more. Returns the plan on
 * the default device. */
static plan_info random_graph_round(unsigned long long *r, int grad, dla_dtype dt, int *outer,
                                     int *inner)
{
#define RG_NEXT(n) (*r ^= *r << 13, *r ^= *r >> 7, *r ^= *r << 17, (int)(*r % (unsigned long long)(n)))
    rand_graph g = {.dt = dt};
    for (int k = 0; k < RG_OPS; k++) {
        const int nv = RG_INPUTS + k;
        g.kind[k] = RG_NEXT(26);
        /* Mostly recent values, so runs form; sometimes an old one. */
        g.a[k] = RG_NEXT(4) ? nv - 1 - RG_NEXT(nv < 3 ? nv : 3) : RG_NEXT(nv);
        g.b[k] = RG_NEXT(nv);
        g.alpha[k] = (RG_NEXT(9) - 4) * 0.5;
        *outer += g.kind[k] == 12;
        *inner += g.kind[k] == 13;
    }
    for (int i = 0; i < RG_OUTPUTS; i++)
        g.out[i] = RG_INPUTS + RG_OPS - 1 - RG_NEXT(RG_OPS);
    int layout[RG_INPUTS];
    for (int i = 0; i < RG_INPUTS; i++)
        layout[i] = RG_NEXT(2) ? 0 : 1 + RG_NEXT(3);
#undef RG_NEXT
    dla_tensor *in[RG_INPUTS];
    for (int i = 0; i < RG_INPUTS; i++)
        in[i] = rg_input(dt, layout[i]);
    const dla_function fn = grad == 2 ? rand_graph_grad2_fn
                            : grad    ? rand_graph_grad_fn
                                      : rand_graph_fn;
    const int nout = grad ? 1 + RG_INPUTS : RG_OUTPUTS;
    dla_accel *af = dla_accelerate(fn, NULL);
    for (int call = 0; call < RG_CALLS; call++) {
        dla_tensor *got[1 + RG_INPUTS + RG_OUTPUTS], *want[1 + RG_INPUTS + RG_OUTPUTS];
        const dla_status st = grad ? dla_accel_feval(af, &g, RG_INPUTS, in, nout, got)
                                   : dla_accel_call(af, &g, RG_INPUTS, in, nout, got);
        if (st != DLA_OK)
            fail_msg("call %d: %s", call, dla_last_error());
        assert_int_equal(dla_feval(fn, &g, RG_INPUTS, in, nout, want), DLA_OK);
        for (int i = 0; i < nout; i++)
            assert_same_bits(got[i], want[i]);
        in[call % RG_INPUTS] = rg_input(dt, layout[call % RG_INPUTS]);
    }
    plan_info pi = accel_plan(af, dla_device_name(dla_device_default()));
    /* The trace through a file (every op's attributes written and read
     * back) replays with eager's bits too. */
    dla_trace *t = dla_accel_trace(af, 0), *back = NULL;
    char path[4096];
    snprintf(path, sizeof path, "%s/dla-plan-graph-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(dla_trace_save(t, path), DLA_OK);
    if (dla_trace_load(path, &back) != DLA_OK)
        fail_msg("%s", dla_last_error());
    unlink(path);
    dla_tensor *got[1 + RG_INPUTS + RG_OUTPUTS], *want[1 + RG_INPUTS + RG_OUTPUTS];
    assert_int_equal(dla_trace_replay(back, RG_INPUTS, in, nout, got), DLA_OK);
    assert_int_equal(dla_feval(fn, &g, RG_INPUTS, in, nout, want), DLA_OK);
    for (int i = 0; i < nout; i++)
        assert_same_bits(got[i], want[i]);
    dla_trace_release(back);
    dla_trace_release(t);
    dla_accel_free(af);
    return pi;
}

/* The same graphs' backward passes, planned: each replay's loss and
 * gradients are eager's bits. */
static void random_graphs_gradients_plan_to_eager_bits(void **state)
{
    dla_scope_begin();
    dla_rng_seed(29);
    unsigned long long r = 0x2545f4914f6cdd1dULL;
    int planned = 0, outer = 0, inner = 0;
    long device_runs = 0;
    /* 40 in single precision, then 12 in double. */
    for (int round = 0; round < 52; round++) {
        const plan_info pi = random_graph_round(&r, 1, round < 40 ? DLA_F32 : DLA_F64, &outer, &inner);
        planned += pi.found;
        device_runs += pi.device_runs > 0 ? pi.device_runs : 0;
    }
    assert_int_equal(planned, 52);
    /* plan_on_graphwrap.sh: the device ran runs of each plan itself. */
    if (getenv("DLA_TEST_EXPECT_DEVICE_RUNS"))
        assert_true(device_runs >= 52);
    dla_scope_end();
}

/* Their second derivatives, planned: the recorded sweeps' ops replay with
 * eager's bits too. */
static void random_graphs_second_derivatives_plan_to_eager_bits(void **state)
{
    dla_scope_begin();
    dla_rng_seed(31);
    unsigned long long r = 0x510e527fade682d1ULL;
    int planned = 0, outer = 0, inner = 0;
    /* 16 in single precision, then 8 in double. */
    for (int round = 0; round < 24; round++)
        planned += random_graph_round(&r, 2, round < 16 ? DLA_F32 : DLA_F64, &outer, &inner).found;
    assert_int_equal(planned, 24);
    dla_scope_end();
}

static void random_elementwise_graphs_plan_to_eager_bits(void **state)
{
    dla_scope_begin();
    dla_rng_seed(23);
    unsigned long long r = 0x9e3779b97f4a7c15ULL;
    int multi = 0, fused = 0, outer = 0, inner = 0, gemms = 0;
    long device_runs = 0;
    /* 60 in single precision, then 20 in double. */
    for (int round = 0; round < 80; round++) {
        plan_info pi = random_graph_round(&r, 0, round < 60 ? DLA_F32 : DLA_F64, &outer, &inner);
        assert_true(pi.found);
        assert_int_equal(pi.runs, RG_CALLS - 2);
        multi += pi.nmulti;
        fused += pi.nfused;
        gemms += pi.gemms;
        device_runs += pi.device_runs > 0 ? pi.device_runs : 0;
    }
    if (getenv("DLA_TEST_EXPECT_DEVICE_RUNS"))
        assert_true(device_runs >= 80);
    print_message("random graphs: %d fused launches, %d of them keeping several results; %d "
                  "outer products, %d GEMMs of inner dim 6, %d GEMMs planned\n", fused, multi,
                  outer, inner, gemms);
    /* The outer products are fused; the GEMMs of inner dim 6 stay (those
     * whose results are read: a dead op is left out). */
    assert_true(outer > 50);
    assert_true(inner > 50);
    assert_true(gemms > 0 && gemms <= inner);
    /* The graphs did exercise both kinds of merge, where the device has
     * them (testmem, plan_on_testmem.sh, has neither). */
    if (dla_device_runs_natively(dla_device_default(), DLA_KERNEL_FUSED, DLA_F32))
        assert_true(fused > 60);
    if (dla_device_runs_natively(dla_device_default(), DLA_KERNEL_FUSED_MULTI, DLA_F32))
        assert_true(multi > 30);
    dla_scope_end();
}

static dla_device *testmem(void)
{
    for (int i = 0; i < dla_device_count(); i++)
        if (!strcmp(dla_device_plugin(dla_device_at(i)), "testmem"))
            return dla_device_at(i);
    return NULL;
}

static void random_ops_draw_on_the_device_or_run_as_themselves_and_draw_what_eager_draws(void **state)
{
    dla_scope_begin();
    dla_rng_seed(13);
    dla_tensor *in[2] = {dla_randn(DLA_F64, "", DLA_DIMS(5, 7)), dla_randn(DLA_F64, "", DLA_DIMS(5, 7))};
    dla_accel *af = dla_accelerate(noisy_loss, NULL);
    dla_tensor *prev = NULL;
    for (int call = 0; call < 5; call++) {
        dla_tensor *got[2], *want[2];
        dla_rng_seed(100 + (uint64_t)call);
        assert_int_equal(dla_accel_feval(af, NULL, 2, in, 2, got), DLA_OK);
        dla_rng_seed(100 + (uint64_t)call);
        assert_int_equal(dla_feval(noisy_loss, NULL, 2, in, 2, want), DLA_OK);
        assert_same_bits(got[0], want[0]);
        assert_same_bits(got[1], want[1]);
        /* New numbers on every call. */
        if (prev)
            assert_true(dla_tensor_item(prev, 0) != dla_tensor_item(got[0], 0));
        prev = got[0];
    }
    /* The cpu plugin has the random kernel: dropout's mask and
     * randn_like's noise are launches of the plan, drawn where the
     * stream stands when the run reaches them. */
    plan_info pi = accel_plan(af, "cpu:0");
    assert_true(pi.found);
    assert_int_equal(pi.invoked, 0);
    assert_int_equal(pi.runs, 3);

    /* testmem has none: both ops draw on the host, upload, and so run as
     * themselves; the bits are the same. */
    dla_device *mem = testmem();
    assert_non_null(mem);
    dla_trace *t = dla_accel_trace(af, 0);
    dla_tensor *moved[2] = {dla_tensor_to_device(in[0], mem), dla_tensor_to_device(in[1], mem)};
    for (int call = 0; call < 3; call++) {
        dla_tensor *got[2], *want[2];
        dla_rng_seed(200 + (uint64_t)call);
        assert_int_equal(dla_trace_replay(t, 2, moved, 2, got), DLA_OK);
        dla_rng_seed(200 + (uint64_t)call);
        assert_int_equal(dla_feval(noisy_loss, NULL, 2, in, 2, want), DLA_OK);
        assert_same_bits(got[0], want[0]);
        assert_same_bits(got[1], want[1]);
    }
    char name[64];
    snprintf(name, sizeof name, "%s", dla_device_name(mem));
    pi = plan_of(t, name);
    assert_true(pi.found);
    assert_int_equal(pi.invoked, 2); /* dropout and randn_like */
    assert_int_equal(pi.runs, 2);
    dla_trace_release(t);
    dla_scope_end();
    dla_accel_free(af);
}

/* y = sum((x .* c)^2) with c a constant reached through ctx. */
static dla_status with_constant(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *c = ctx;
    out[0] = dla_sum(dla_square(dla_mul(in[0], c)), 1, (int64_t[]){2});
    return DLA_OK;
}

static void a_trace_plans_and_replays_on_memory_the_host_cannot_address(void **state)
{
    dla_device *mem = testmem();
    assert_non_null(mem); /* main() adds the testmem plugin */
    dla_scope_begin();
    dla_rng_seed(14);
    dla_tensor *in[6], *moved[6];
    mlp_inputs(in, DLA_F64);
    dla_accel *af = dla_accelerate(mlp_loss, NULL);
    dla_tensor *first[5];
    assert_int_equal(dla_accel_feval(af, NULL, 6, in, 5, first), DLA_OK);
    dla_trace *t = dla_accel_trace(af, 0);
    for (int call = 0; call < 4; call++) {
        in[0] = dla_affine(in[0], 1.1, -0.02);
        for (int i = 0; i < 6; i++)
            moved[i] = dla_tensor_to_device(in[i], mem);
        dla_tensor *got[5], *want[5];
        assert_int_equal(dla_trace_replay(t, 6, moved, 5, got), DLA_OK);
        assert_int_equal(dla_feval(mlp_loss, NULL, 6, in, 5, want), DLA_OK);
        for (int i = 0; i < 5; i++) {
            assert_ptr_equal(dla_tensor_device(got[i]), mem);
            assert_same_bits(got[i], want[i]);
        }
    }
    char name[64];
    snprintf(name, sizeof name, "%s", dla_device_name(mem));
    plan_info pi = plan_of(t, name);
    assert_true(pi.found);
    assert_int_equal(pi.runs, 3);
    assert_int_equal(pi.nfused, 0); /* testmem has no fused kernel */
    assert_true(pi.arena <= pi.inter);
    dla_trace_release(t);

    /* A constant recorded on the cpu is moved to testmem once, at plan time. */
    dla_tensor *c = dla_randn(DLA_F64, "", DLA_DIMS(3, 4)), *x = dla_randn(DLA_F64, "", DLA_DIMS(3, 4));
    dla_accel *ac = dla_accelerate(with_constant, NULL);
    dla_tensor *y0, *y1, *want;
    assert_int_equal(dla_accel_call(ac, c, 1, &x, 1, &y0), DLA_OK);
    dla_trace *tc = dla_accel_trace(ac, 0);
    dla_tensor *xm = dla_tensor_to_device(x, mem);
    for (int call = 0; call < 3; call++)
        assert_int_equal(dla_trace_replay(tc, 1, &xm, 1, &y1), DLA_OK);
    assert_int_equal(with_constant(c, 1, &x, 1, &want), DLA_OK);
    assert_same_bits(y1, want);
    char *text = trace_text(tc);
    assert_non_null(strstr(text, "1 constants moved to the device once (96 bytes)"));
    free(text);
    dla_trace_release(tc);
    dla_accel_free(ac);
    dla_scope_end();
    dla_accel_free(af);
}

/* exp on testmem of what the cpu made, brought back. */
static dla_status across(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *y = dla_tensor_to_device(dla_affine(in[0], 2.0, 0.0), testmem());
    out[0] = dla_tensor_to_device(dla_exp(y), dla_tensor_device(in[0]));
    return DLA_OK;
}

static void a_trace_moving_data_between_devices_replays_op_by_op_and_says_why(void **state)
{
    assert_non_null(testmem());
    dla_scope_begin();
    dla_tensor *x = dla_randn(DLA_F64, "", DLA_DIMS(3, 5)), *y, *want;
    dla_accel *af = dla_accelerate(across, NULL);
    for (int call = 0; call < 3; call++) {
        x = dla_affine(x, 0.5, 0.25);
        assert_int_equal(dla_accel_call(af, NULL, 1, &x, 1, &y), DLA_OK);
        assert_int_equal(across(NULL, 1, &x, 1, &want), DLA_OK);
        assert_ptr_equal(dla_tensor_device(y), dla_tensor_device(x));
        assert_same_bits(y, want);
    }
    plan_info pi = accel_plan(af, "cpu:0");
    assert_false(pi.found);
    assert_non_null(strstr(pi.why, "none, replays run op by op"));
    assert_non_null(strstr(pi.why, "another device"));
    dla_scope_end();
    dla_accel_free(af);
}

/* Results that are not plain new values: an input itself, views of an
 * input, a constant made inside, one value returned twice, a view of
 * another result, a transposed copy. */
static dla_status odd_results(void *ctx, int nin, dla_tensor *const *in, int nout,
                              dla_tensor **out)
{
    dla_tensor *y = dla_add(in[0], in[1]);
    out[0] = in[0];
    out[1] = dla_slice(in[1], 2, 1, 2, 5);
    out[2] = dla_permute(in[0], 2, (const int64_t[]){2, 1});
    out[3] = dla_ones(DLA_F32, "", DLA_DIMS(2, 2));
    out[4] = y;
    out[5] = y;
    out[6] = dla_slice(y, 1, 1, 1, 3);
    out[7] = dla_reshape(dla_mul(y, in[1]), "", 2, (const int64_t[]){5, 3});
    return dla_tensor_status(out[7]);
}

static void results_that_are_inputs_views_constants_or_repeats_replay_as_eager(void **state)
{
    dla_scope_begin();
    dla_rng_seed(31);
    dla_accel *af = dla_accelerate(odd_results, NULL);
    dla_tensor *kept[8], *kept_want[8];
    for (int call = 0; call < 6; call++) {
        dla_tensor *in[2] = {dla_randn(DLA_F32, "", DLA_DIMS(3, 5)),
                             dla_randn(DLA_F32, "", DLA_DIMS(3, 5))};
        dla_tensor *got[8], *want[8];
        if (dla_accel_call(af, NULL, 2, in, 8, got) != DLA_OK)
            fail_msg("call %d: %s", call, dla_last_error());
        assert_int_equal(dla_feval(odd_results, NULL, 2, in, 8, want), DLA_OK);
        for (int i = 0; i < 8; i++) {
            assert_same_bits(got[i], want[i]);
            assert_int_equal(dla_tensor_ndims(got[i]), dla_tensor_ndims(want[i]));
            for (int d = 1; d <= dla_tensor_ndims(got[i]); d++)
                assert_int_equal(dla_tensor_dim(got[i], d), dla_tensor_dim(want[i], d));
        }
        /* Call 3's results (the scope holds them) are still its own after
         * two more replays. */
        for (int i = 0; i < 8 && call == 3; i++) {
            kept[i] = got[i];
            kept_want[i] = want[i];
        }
        for (int i = 0; i < 8 && call == 5; i++)
            assert_same_bits(kept[i], kept_want[i]);
    }
    plan_info pi = accel_plan(af, "cpu:0");
    assert_true(pi.found);
    assert_int_equal(pi.runs, 4);
    dla_accel_free(af);
    dla_scope_end();
}

static void outputs_of_one_replay_survive_the_next(void **state)
{
    dla_scope_begin();
    dla_rng_seed(15);
    dla_tensor *in[6];
    mlp_inputs(in, DLA_F32);
    dla_accel *af = dla_accelerate(mlp_loss, NULL);
    dla_tensor *a[5], *b[5];
    for (int call = 0; call < 3; call++)
        assert_int_equal(dla_accel_feval(af, NULL, 6, in, 5, a), DLA_OK);
    float before[32], after[32];
    assert_int_equal(dla_tensor_to_host(a[1], before, sizeof before), DLA_OK);
    in[4] = dla_affine(in[4], -2.0, 1.0);
    assert_int_equal(dla_accel_feval(af, NULL, 6, in, 5, b), DLA_OK);
    assert_int_equal(dla_tensor_to_host(a[1], after, sizeof after), DLA_OK);
    assert_memory_equal(before, after, sizeof before);
    assert_true(dla_tensor_item(a[0], 0) != dla_tensor_item(b[0], 0));
    dla_scope_end();
    dla_accel_free(af);
}

/* An input laid out otherwise (the same dims, other strides) is another
 * key: recording decided from the strides (a reshape's view or copy, and
 * with it how the gradient's pieces add up), so it records its own trace
 * and plan, and each layout's calls equal eager bit for bit. */
static void inputs_laid_out_otherwise_record_their_own_trace_with_the_same_results(void **state)
{
    dla_scope_begin();
    dla_rng_seed(16);
    dla_tensor *in[6], *gappy[6];
    mlp_inputs(in, DLA_F32);
    dla_accel *af = dla_accelerate(mlp_loss, NULL);
    dla_tensor *out[5], *want[5];
    for (int call = 0; call < 3; call++)
        assert_int_equal(dla_accel_feval(af, NULL, 6, in, 5, out), DLA_OK);
    long runs = accel_plan(af, "cpu:0").runs;
    /* The same dims as every other column of a wider tensor: other strides. */
    dla_tensor *wide = dla_randn(DLA_F32, "", DLA_DIMS(8, 8));
    memcpy(gappy, in, sizeof gappy);
    gappy[0] = dla_slice(wide, 2, 0, 2, DLA_END);
    assert_int_equal(dla_tensor_is_contiguous(gappy[0]), 0);
    for (int call = 0; call < 3; call++) {
        assert_int_equal(dla_accel_feval(af, NULL, 6, gappy, 5, out), DLA_OK);
        if (call == 0)
            assert_string_equal(dla_accel_last_miss(af), "input 1 strides [1 8] -> [1 16]");
        else
            assert_string_equal(dla_accel_last_miss(af), "");
        assert_int_equal(dla_feval(mlp_loss, NULL, 6, gappy, 5, want), DLA_OK);
        for (int i = 0; i < 5; i++)
            assert_same_bits(out[i], want[i]);
    }
    assert_int_equal(dla_accel_occupancy(af), 2);
    /* The dense inputs still hit their own trace, through its plan. */
    assert_int_equal(dla_accel_feval(af, NULL, 6, in, 5, out), DLA_OK);
    assert_string_equal(dla_accel_last_miss(af), "");
    assert_int_equal(accel_plan(af, "cpu:0").runs, runs + 1);
    dla_scope_end();
    dla_accel_free(af);
}

static void inputs_sharing_memory_wait_for_a_call_without_to_be_planned(void **state)
{
    dla_scope_begin();
    dla_rng_seed(17);
    dla_tensor *in[6], *out[5], *want[5];
    mlp_inputs(in, DLA_F32);
    /* w1 and b1 as two views of one tensor: dense, and the same dims. */
    dla_tensor *both = dla_randn(DLA_F32, "", DLA_DIMS(8, 5));
    dla_tensor *shared[6] = {dla_slice(both, 2, 0, 1, 4), dla_slice(both, 2, 4, 1, 5), in[2], in[3],
                             in[4], in[5]};
    assert_int_equal(dla_tensor_is_contiguous(shared[0]), 1);
    dla_accel *af = dla_accelerate(mlp_loss, NULL);
    assert_int_equal(dla_accel_feval(af, NULL, 6, in, 5, out), DLA_OK);
    for (int call = 0; call < 2; call++) {
        assert_int_equal(dla_accel_feval(af, NULL, 6, shared, 5, out), DLA_OK);
        assert_int_equal(dla_feval(mlp_loss, NULL, 6, shared, 5, want), DLA_OK);
        for (int i = 0; i < 5; i++)
            assert_same_bits(out[i], want[i]);
    }
    dla_trace *t = dla_accel_trace(af, 0);
    char *text = trace_text(t);
    assert_non_null(strstr(text, "memory plan: none yet"));
    free(text);
    for (int call = 0; call < 3; call++)
        assert_int_equal(dla_accel_feval(af, NULL, 6, in, 5, out), DLA_OK);
    assert_int_equal(plan_of(t, "cpu:0").runs, 2);
    /* Once made, a plan serves inputs that share memory too. */
    assert_int_equal(dla_accel_feval(af, NULL, 6, shared, 5, out), DLA_OK);
    assert_int_equal(dla_feval(mlp_loss, NULL, 6, shared, 5, want), DLA_OK);
    for (int i = 0; i < 5; i++)
        assert_same_bits(out[i], want[i]);
    assert_int_equal(plan_of(t, "cpu:0").runs, 3);
    dla_trace_release(t);
    dla_scope_end();
    dla_accel_free(af);
}

/* A replay inside dla_feval is recorded on its tape: the outer gradient
 * goes through the inner function's ops. */
static dla_accel *inner;

static dla_status outer_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *y;
    dla_status st = dla_accel_call(inner, NULL, 1, in, 1, &y);
    out[0] = dla_sum(dla_mul(y, y), 0, NULL);
    return st != DLA_OK ? st : dla_gradient(out[0], 1, in, out + 1);
}

static dla_status inner_fn(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    out[0] = dla_tanh(dla_affine(in[0], 3.0, 0.5));
    return DLA_OK;
}

static dla_status outer_eager(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *y;
    inner_fn(NULL, 1, in, 1, &y);
    out[0] = dla_sum(dla_mul(y, y), 0, NULL);
    return dla_gradient(out[0], 1, in, out + 1);
}

static void a_replay_inside_dla_feval_is_recorded_on_its_tape(void **state)
{
    dla_scope_begin();
    inner = dla_accelerate(inner_fn, NULL);
    dla_tensor *x = dla_randn(DLA_F64, "", DLA_DIMS(4, 3)), *y;
    for (int i = 0; i < 3; i++) /* planned outside any recording */
        assert_int_equal(dla_accel_call(inner, NULL, 1, &x, 1, &y), DLA_OK);
    dla_tensor *got[2], *want[2];
    assert_int_equal(dla_feval(outer_loss, NULL, 1, &x, 2, got), DLA_OK);
    assert_int_equal(dla_feval(outer_eager, NULL, 1, &x, 2, want), DLA_OK);
    assert_same_bits(got[0], want[0]);
    assert_same_bits(got[1], want[1]);
    dla_scope_end();
    dla_accel_free(inner);
}

typedef struct worker {
    dla_accel *af;
    int ok;
    uint64_t seed;
} worker;

static void *worker_main(void *p)
{
    worker *w = p;
    dla_scope_begin();
    dla_rng_seed(w->seed);
    dla_tensor *in[6];
    mlp_inputs(in, DLA_F32);
    w->ok = 1;
    for (int i = 0; i < 40 && w->ok; i++) {
        dla_scope_begin();
        in[0] = dla_keep(dla_affine(in[0], 0.99, 0.01));
        dla_tensor *got[5], *want[5];
        w->ok = dla_accel_feval(w->af, NULL, 6, in, 5, got) == DLA_OK &&
                dla_feval(mlp_loss, NULL, 6, in, 5, want) == DLA_OK;
        for (int k = 0; k < 5 && w->ok; k++) {
            float a[32], b[32];
            int64_t n = dla_tensor_numel(want[k]);
            w->ok = dla_tensor_to_host(got[k], a, sizeof(float) * (size_t)n) == DLA_OK &&
                    dla_tensor_to_host(want[k], b, sizeof(float) * (size_t)n) == DLA_OK &&
                    !memcmp(a, b, sizeof(float) * (size_t)n);
        }
        dla_scope_end();
    }
    dla_scope_end();
    return NULL;
}

static void threads_sharing_one_plan_each_get_their_own_results(void **state)
{
    dla_accel *af = dla_accelerate(mlp_loss, NULL);
    pthread_t th[4];
    worker w[4];
    for (int i = 0; i < 4; i++) {
        w[i] = (worker){af, 0, 40 + (uint64_t)i};
        pthread_create(&th[i], NULL, worker_main, &w[i]);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_true(w[i].ok);
    }
    plan_info pi = accel_plan(af, "cpu:0");
    assert_true(pi.found);
    assert_true(pi.runs > 0);
    dla_accel_free(af);
}

/* DLACCEL_PLAN_PROFILE=1 when a plan is made: its replays time each step
 * (waiting for the device after it) and the listing gives each step's
 * mean time and share, and the time by kernel; the results keep the bits
 * of eager, and the device's own whole-plan replay (plan_replay: the
 * graphwrap plugin, tests/plan_profile_on_graphwrap.sh) is left aside.
 * A plan made with the variable unset has no profile. On the default
 * device. */
static void a_profiled_plan_times_each_step_and_keeps_the_bits(void **state)
{
    (void)state;
    const char *dev = dla_device_name(dla_device_current());
    for (int profiled = 1; profiled >= 0; profiled--) {
        if (profiled)
            setenv("DLACCEL_PLAN_PROFILE", "1", 1);
        else
            unsetenv("DLACCEL_PLAN_PROFILE");
        dla_scope_begin();
        dla_rng_seed(50);
        dla_tensor *in[7];
        cnn_inputs(in);
        dla_accel *af = dla_accelerate(cnn_loss, NULL);
        /* The first call records the trace, the second makes the plan. */
        for (int call = 0; call < 2; call++)
            results_match_eager(af, cnn_loss, 1, 7, in, 7);
        dla_trace *t = dla_accel_trace(af, 0);
        char *text = trace_text(t);
        char key[160];
        snprintf(key, sizeof key, "plan profile on %s (DLACCEL_PLAN_PROFILE): no run timed yet",
                 dev);
        assert_int_equal(strstr(text, key) != NULL, profiled);
        free(text);
        /* Five runs: graphwrap records the third and runs the rest itself
         * when not profiled. */
        for (int call = 0; call < 5; call++)
            results_match_eager(af, cnn_loss, 1, 7, in, 7);
        text = trace_text(t);
        plan_info pi = plan_of(t, dev);
        assert_true(pi.found);
        assert_int_equal(pi.runs, 5);
        if (profiled)
            assert_true(pi.device_runs <= 0);
        else if (getenv("DLA_TEST_EXPECT_DEVICE_RUNS"))
            assert_true(pi.device_runs > 0);
        snprintf(key, sizeof key, "plan profile on %s (DLACCEL_PLAN_PROFILE): ", dev);
        const char *prof = strstr(text, key);
        assert_int_equal(prof != NULL, profiled);
        if (profiled) {
            long runs = 0;
            double total = -1, all = -1;
            char u1[3] = "", u2[3] = "";
            assert_int_equal(sscanf(prof + strlen(key), "%ld runs timed step by step, waiting "
                                    "for the device after each step; %lf %2[mus] a run in its "
                                    "steps, %lf %2[mus] in all",
                                    &runs, &total, u1, &all, u2), 5);
            assert_int_equal(runs, 5);
            /* the run in all is its steps and the host's work around them */
            const double steps_ns = total * (strcmp(u1, "us") ? 1e6 : 1e3),
                         all_ns = all * (strcmp(u2, "us") ? 1e6 : 1e3);
            assert_true(steps_ns > 0 && all_ns >= 0.99 * steps_ns);
            /* by kernel: the convolution's passes are there */
            assert_non_null(strstr(prof, "by kernel: "));
            assert_non_null(strstr(prof, " conv_forward "));
            assert_non_null(strstr(prof, " conv_backward_filter "));
        }
        /* Each step line: its time and share when profiled; the shares
         * and the times add up to the run's. */
        double shares = 0, ms = 0;
        int lines = 0;
        for (const char *l = strstr(text, "\n    step "); l; l = strstr(l + 1, "\n    step ")) {
            int step = -1;
            double t_ms = -1, share = -1;
            char unit[3] = "";
            assert_int_equal(sscanf(l, "\n    step %d: ", &step), 1);
            assert_int_equal(step, lines);
            /* The step as always, then " | TIME UNIT SHARE%" when profiled. */
            const char *eol = strchr(l + 1, '\n'), *bar = strstr(l, " | ");
            const int timed = bar && (!eol || bar < eol);
            assert_int_equal(timed, profiled);
            if (profiled) { /* microseconds for a run under 1 ms, else milliseconds */
                assert_int_equal(sscanf(bar, " | %lf %2[mus] %lf%%", &t_ms, unit, &share), 3);
                assert_true(strcmp(unit, "us") == 0 || strcmp(unit, "ms") == 0);
            }
            if (profiled) {
                assert_true(t_ms >= 0 && share >= 0 && share <= 100);
                shares += share;
                ms += t_ms;
            }
            lines++;
        }
        assert_int_equal(lines, pi.launches + pi.invoked);
        if (profiled) {
            assert_true(shares > 99 && shares < 101);
            assert_true(ms > 0);
        }
        free(text);
        dla_trace_release(t);
        dla_accel_free(af);
        dla_scope_end();
    }
}

static void a_trace_without_replays_says_it_has_no_plan_yet(void **state)
{
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F64, "", DLA_DIMS(2, 2)), *y;
    dla_accel *af = dla_accelerate(inner_fn, NULL);
    assert_int_equal(dla_accel_call(af, NULL, 1, &x, 1, &y), DLA_OK);
    dla_trace *t = dla_accel_trace(af, 0);
    char *text = trace_text(t);
    assert_non_null(strstr(text, "memory plan: none yet"));
    free(text);
    dla_trace_release(t);
    dla_scope_end();
    dla_accel_free(af);
}

int main(void)
{
    /* A second device with memory the host cannot address: the testmem
     * plugin of the build tree, after the default path (cpu stays first). */
    const char *build = getenv("DLA_TEST_BUILDDIR"), *path = getenv("DLACCEL_PLUGIN_PATH");
    if (build) {
        char buf[4096];
        snprintf(buf, sizeof buf, "%s%s%s/tests/plugins.d", path ? path : "", path ? ":" : "", build);
        setenv("DLACCEL_PLUGIN_PATH", buf, 1);
    }
    /* tests/plan_on_opencl.sh, plan_on_graphwrap.sh and plan_on_testmem.sh
     * run the random graphs, which plan on the default device
     * (DLACCEL_DEVICE), there. */
    const char *filter = getenv("DLA_TEST_FILTER");
    if (filter)
        cmocka_set_test_filter(filter);
    const struct CMUnitTest tests[] = {
        TU_TEST(a_trace_without_replays_says_it_has_no_plan_yet),
        TU_TEST(planned_mlp_replays_equal_eager_bit_for_bit_and_run_fused_chains),
        TU_TEST(a_sum_of_one_element_each_joins_its_chain_with_the_bits_of_eager),
        TU_TEST(outer_products_run_elementwise_with_the_bits_of_the_gemm),
        TU_TEST(constants_of_one_value_join_the_chain_with_the_bits_of_eager),
        TU_TEST(a_comparison_cast_to_float_is_its_register_in_the_chain),
        TU_TEST(a_planned_conv_batchnorm_relu_chain_equals_eager_with_its_gradients),
        TU_TEST(in_place_chains_comparisons_and_wheres_fuse_and_keep_eager_bits),
        TU_TEST(fills_written_after_run_every_time),
        TU_TEST(a_fill_that_slices_cover_goes_and_the_rest_keep_theirs),
        TU_TEST(random_slices_gradients_plan_to_eager_bits),
        TU_TEST(a_parameter_update_is_one_launch_that_keeps_both_results),
        TU_TEST(a_convolutions_bias_joins_the_chain_that_alone_reads_its_result),
        TU_TEST(a_convolution_runs_the_fused_launch_after_it_as_its_epilogue),
        TU_TEST(an_input_gradient_runs_the_relu_mask_as_its_epilogue),
        TU_TEST(an_elementwise_result_takes_the_memory_of_an_input_it_reads_last),
        TU_TEST(random_elementwise_graphs_plan_to_eager_bits),
        TU_TEST(random_graphs_gradients_plan_to_eager_bits),
        TU_TEST(random_graphs_second_derivatives_plan_to_eager_bits),
        TU_TEST(random_ops_draw_on_the_device_or_run_as_themselves_and_draw_what_eager_draws),
        TU_TEST(a_trace_plans_and_replays_on_memory_the_host_cannot_address),
        TU_TEST(a_trace_moving_data_between_devices_replays_op_by_op_and_says_why),
        TU_TEST(outputs_of_one_replay_survive_the_next),
        TU_TEST(results_that_are_inputs_views_constants_or_repeats_replay_as_eager),
        TU_TEST(inputs_laid_out_otherwise_record_their_own_trace_with_the_same_results),
        TU_TEST(inputs_sharing_memory_wait_for_a_call_without_to_be_planned),
        TU_TEST(a_replay_inside_dla_feval_is_recorded_on_its_tape),
        TU_TEST(threads_sharing_one_plan_each_get_their_own_results),
        TU_TEST(a_profiled_plan_times_each_step_and_keeps_the_bits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
