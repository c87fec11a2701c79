/*
 * test_plan_differential.c - planned replays of random functions against
 * eager runs of the same functions, over what test_plan's 6x6 graphs leave
 * out: values of three dims, reductions along any set of dims broadcast
 * back, permuted and sliced views of intermediates read by later ops,
 * results that are inputs, views of intermediates or one value twice, two
 * shapes of input sharing one accelerated function (two traces in its
 * cache, alternating), and every call's results kept by the caller until
 * the round ends, then checked again: a replay must not write over a
 * result an earlier call handed out. A replay's results are eager's bits
 * (docs/accelerate.md), and their dims are eager's.
 *
 * tests/plan_variants.sh runs this suite under each DLACCEL_PLAN value.
 */
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#define DF_INPUTS 3
#define DF_OPS 18
#define DF_OUTPUTS 4
#define DF_KINDS 28
/* Calls per round: two shapes alternating, so each shape's trace records
 * once, plans on its second call and runs its plan on the other five (a
 * device serving plan_replay, graphwrap, records the third run, checks the
 * fourth and replays from the fifth). */
#define DF_CALLS 14
#define DF_MAXOUT (1 + DF_INPUTS + DF_OUTPUTS)

typedef struct df_graph {
    dla_dtype dt;
    int kind[DF_OPS];
    int a[DF_OPS], b[DF_OPS];
    int p[DF_OPS]; /* a parameter: a set of dims (bits), a dim, a split */
    double alpha[DF_OPS];
    int out_kind[DF_OUTPUTS]; /* 0 a value, 1 an input, 2 a slice of a value,
                                 3 a permuted value, 4 the previous output */
    int out[DF_OUTPUTS];
} df_graph;

/* The n x n constant (n <= 8) that kind 17 multiplies by (from the right). */
static dla_tensor *df_weight(dla_dtype dt, int64_t n)
{
    double w[64];
    for (int i = 0; i < n * n; i++)
        w[i] = (double)((i * 5) % 7 - 3) * 0.25;
    return dla_cast(dla_tensor_from_host(w, DLA_F64, "", DLA_DIMS(n, n)), dt);
}

static const int64_t swap12[3] = {2, 1, 3}, rot[3] = {3, 1, 2}, unrot[3] = {2, 3, 1};

static dla_status df_fn(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    const df_graph *g = ctx;
    dla_tensor *v[DF_INPUTS + DF_OPS];
    for (int i = 0; i < DF_INPUTS; i++)
        v[i] = in[i];
    int64_t d[3];
    dla_tensor_dims(in[0], d);
    for (int k = 0; k < DF_OPS; k++) {
        dla_tensor *a = v[g->a[k]], *b = v[g->b[k]], *r;
        int64_t dims[3];
        int nd = 0;
        for (int i = 0; i < 3; i++)
            if (g->p[k] >> i & 1)
                dims[nd++] = i + 1;
        if (!nd)
            dims[nd++] = 1 + g->p[k] % 3;
        const int dim = 1 + g->p[k] % 3;
        const int64_t split = 1 + (int64_t)g->p[k] % (d[dim - 1] > 1 ? d[dim - 1] - 1 : 1);
        switch (g->kind[k]) {
        case 0: r = dla_add(a, b); break;
        case 1: r = dla_sub(a, b); break;
        case 2: r = dla_mul(a, b); break;
        case 3: r = dla_div(a, dla_affine(dla_abs(b), 1.0, 1.0)); break;
        case 4: r = dla_max2(a, b); break;
        case 5: r = dla_exp(dla_affine(a, 0.25, 0.0)); break;
        case 6: r = dla_tanh(a); break;
        case 7: r = dla_relu(a); break;
        case 8: r = dla_affine(dla_square(a), 0.5, -0.25); break;
        case 9: r = dla_sqrt(dla_abs(a)); break;
        case 10: r = dla_add(a, dla_sum(b, nd, dims)); break;
        case 11: r = dla_mul(a, dla_mean(b, nd, dims)); break;
        case 12: r = dla_sub(a, dla_max(b, nd, dims)); break;
        case 13: r = dla_add(dla_min(a, nd, dims), b); break;
        case 14: /* elementwise on two permuted views, permuted back */
            r = dla_permute(dla_add(dla_permute(a, 3, swap12), dla_permute(b, 3, swap12)), 3,
                            swap12);
            break;
        case 15: /* a view of a view of an intermediate */
            r = dla_permute(dla_mul(dla_permute(a, 3, rot), dla_permute(b, 3, rot)), 3, unrot);
            break;
        case 16: /* two pieces side by side along dim */
            r = dla_cat(dim, 2,
                        (dla_tensor *[]){dla_slice(a, dim, 0, 1, split),
                                         dla_slice(b, dim, split, 1, d[dim - 1])});
            break;
        case 17: /* a product through other dims: [d1*d2, d3] x [d3, d3] */
            r = dla_reshape(dla_mtimes(dla_reshape(a, "", 2, (const int64_t[]){d[0] * d[1], d[2]}),
                                       df_weight(g->dt, d[2])),
                            "", 3, d);
            break;
        case 18: r = dla_add(a, a); break;
        case 19: r = dla_affine(a, g->alpha[k], 0.5); break;
        case 20: r = dla_where(dla_gt(a, b), a, dla_neg(b)); break;
        case 21: /* the same elements through other dims, summed, broadcast */
            r = dla_add(b, dla_reshape(dla_sum(dla_reshape(a, "", 2,
                                                           (const int64_t[]){d[0], d[1] * d[2]}),
                                               1, (const int64_t[]){2}),
                                       "", 3, (const int64_t[]){d[0], 1, 1}));
            break;
        case 22: /* every other element along dim, repeated back */
            r = dla_mul(b, dla_sum(dla_slice(a, dim, 0, 2, d[dim - 1]), 1,
                                   (const int64_t[]){dim}));
            break;
        case 23: /* a value and its own transpose: one buffer through two views */
            r = dla_sub(dla_exp(dla_affine(a, 0.125, 0.0)), dla_permute(a, 3, swap12));
            break;
        case 24: { /* rows gathered with repeats along dim 1: scatter_add in the gradient */
            int32_t idx[64];
            for (int64_t i = 0; i < d[0]; i++)
                idx[i] = (int32_t)((i * 3 + g->p[k]) % d[0]);
            r = dla_add(b, dla_index(a, 1, dla_tensor_from_host(idx, DLA_I32, "",
                                                                DLA_DIMS(1, d[0]))));
            break;
        }
        case 25: /* through the other float type and back */
            r = dla_cast(dla_pows(dla_affine(dla_abs(dla_cast(a, g->dt == DLA_F32 ? DLA_F64
                                                                                : DLA_F32)),
                                             1.0, 1.0),
                                  1.5),
                         g->dt);
            break;
        case 26: /* padded, and a window of it back to the value's dims */
            r = dla_slice(dla_pad(a, 1, (const int64_t[]){1}, (const int64_t[]){2}, g->alpha[k]),
                          1, 2, 1, d[0] + 2);
            break;
        default: /* a scalar times a value */
            r = dla_mul(dla_sum(a, 0, NULL), dla_affine(b, 1.0 / 64.0, 0.0));
            break;
        }
        v[DF_INPUTS + k] = r;
    }
    for (int i = 0; i < nout && i < DF_OUTPUTS; i++) {
        dla_tensor *x = v[g->out[i]];
        switch (g->out_kind[i]) {
        case 1: out[i] = in[g->out[i] % nin]; break;
        case 2: out[i] = dla_slice(x, 2, 1, 1, 3); break;
        case 3: out[i] = dla_permute(x, 3, rot); break;
        case 4: out[i] = i ? out[i - 1] : x; break;
        case 5: /* a constant made inside, or a view of one */
            out[i] = dla_slice(dla_full(0.5 + i, g->dt, "", 3, d), 3, 0, 1, 1);
            break;
        case 6: out[i] = dla_gt(x, in[0]); break; /* logical */
        case 7: out[i] = dla_cast(x, g->dt == DLA_F32 ? DLA_F64 : DLA_F32); break;
        default: out[i] = x; break;
        }
    }
    return dla_tensor_status(out[nout - 1]);
}

static dla_dtype g_dt(void *ctx) { return ((const df_graph *)ctx)->dt; }

/* The outputs' and the inputs' squares summed, and its gradients. */
static dla_status df_grad_fn(void *ctx, int nin, dla_tensor *const *in, int nout,
                             dla_tensor **out)
{
    dla_tensor *v[DF_OUTPUTS], *loss = NULL;
    dla_status st = df_fn(ctx, nin, in, DF_OUTPUTS, v);
    if (st != DLA_OK)
        return st;
    for (int i = 0; i < DF_OUTPUTS + nin; i++) {
        dla_tensor *x = i < DF_OUTPUTS ? v[i] : in[i - DF_OUTPUTS];
        if (dla_tensor_dtype(x) == DLA_BOOL)
            continue; /* a comparison's result: not differentiable */
        dla_tensor *s = dla_sum(dla_square(dla_cast(x, g_dt(ctx))), 0, NULL);
        loss = loss ? dla_add(loss, s) : s;
    }
    out[0] = loss;
    /* The forward's results too, beside the gradients. */
    for (int i = 0; i < DF_OUTPUTS; i++)
        out[1 + nin + i] = v[i];
    return dla_gradient(loss, nin, in, out + 1);
}

/* Same dtype, dims and bytes; on failure names the round, call and output. */
static void df_check(dla_tensor *got, dla_tensor *want, int round, int call, int i,
                     const char *when)
{
    if (dla_tensor_status(got) != DLA_OK || dla_tensor_status(want) != DLA_OK)
        fail_msg("round %d call %d output %d (%s): not a tensor", round, call, i, when);
    int64_t dg[DLA_MAX_DIMS], dw[DLA_MAX_DIMS];
    const int ng = dla_tensor_dims(got, dg), nw = dla_tensor_dims(want, dw);
    if (ng != nw || memcmp(dg, dw, sizeof(int64_t) * (size_t)ng))
        fail_msg("round %d call %d output %d (%s): dims differ", round, call, i, when);
    if (!tu_same_bits(got, want)) {
        double x[256], y[256];
        const int64_t n = dla_tensor_numel(got) < 256 ? dla_tensor_numel(got) : 256;
        dla_tensor_to_host(dla_cast(got, DLA_F64), x, sizeof(double) * (size_t)n);
        dla_tensor_to_host(dla_cast(want, DLA_F64), y, sizeof(double) * (size_t)n);
        int64_t j = 0;
        while (j < n - 1 && !memcmp(&x[j], &y[j], sizeof(double)))
            j++;
        fail_msg("round %d call %d output %d (%s): element %lld is %.17g, eager %.17g", round,
                 call, i, when, (long long)j, x[j], y[j]);
    }
}

static dla_tensor *df_input(dla_dtype dt, const int64_t *d, int layout)
{
    if (layout) /* a permuted view of a dense tensor */
        return dla_permute(dla_randn(dt, "", 3, (const int64_t[]){d[1], d[0], d[2]}), 3,
                           (const int64_t[]){2, 1, 3});
    return dla_randn(dt, "", 3, d);
}

/* One random function, DF_CALLS calls of it through af alternating two
 * input shapes, each against eager; every call's results kept and checked
 * once more after the last call. grad: through dla_accel_feval with the
 * gradients. */
static void df_round(unsigned long long *r, int round, int grad, dla_dtype dt)
{
#define DF_NEXT(n) (*r ^= *r << 13, *r ^= *r >> 7, *r ^= *r << 17, (int)(*r % (unsigned long long)(n)))
    df_graph g = {.dt = dt};
    for (int k = 0; k < DF_OPS; k++) {
        const int nv = DF_INPUTS + k;
        g.kind[k] = DF_NEXT(DF_KINDS);
        g.a[k] = DF_NEXT(3) ? nv - 1 - DF_NEXT(nv < 3 ? nv : 3) : DF_NEXT(nv);
        g.b[k] = DF_NEXT(nv);
        g.p[k] = DF_NEXT(8);
        g.alpha[k] = (DF_NEXT(9) - 4) * 0.5;
    }
    for (int i = 0; i < DF_OUTPUTS; i++) {
        g.out_kind[i] = DF_NEXT(8);
        g.out[i] = g.out_kind[i] == 1 ? DF_NEXT(DF_INPUTS) : DF_INPUTS + DF_NEXT(DF_OPS);
    }
    int layout[DF_INPUTS];
    for (int i = 0; i < DF_INPUTS; i++)
        layout[i] = DF_NEXT(4) == 0;
#undef DF_NEXT
    static const int64_t shapes[2][3] = {{4, 4, 5}, {24, 24, 3}};
    const dla_function fn = grad ? df_grad_fn : df_fn;
    const int nout = grad ? 1 + DF_INPUTS + DF_OUTPUTS : DF_OUTPUTS;
    dla_accel *af = dla_accelerate(fn, NULL);
    /* Every third round keeps one trace and changes shape every third
     * call: each change evicts the other shape's trace, with its plan and
     * arena, after it recorded, planned and ran its plan once. */
    const int cache = round % 3 == 2 ? 1 : 2;
    assert_int_equal(dla_accel_set_cache_size(af, cache), DLA_OK);
    dla_tensor *got[DF_CALLS][DF_MAXOUT], *want[DF_CALLS][DF_MAXOUT];
    for (int call = 0; call < DF_CALLS; call++) {
        const int64_t *d = shapes[cache == 1 ? call / 3 % 2 : call % 2];
        dla_tensor *in[DF_INPUTS];
        for (int i = 0; i < DF_INPUTS; i++)
            in[i] = df_input(dt, d, layout[i]);
        const dla_status st = grad ? dla_accel_feval(af, &g, DF_INPUTS, in, nout, got[call])
                                   : dla_accel_call(af, &g, DF_INPUTS, in, nout, got[call]);
        if (st != DLA_OK)
            fail_msg("round %d call %d: %s", round, call, dla_last_error());
        assert_int_equal(dla_feval(fn, &g, DF_INPUTS, in, nout, want[call]), DLA_OK);
        for (int i = 0; i < nout; i++)
            df_check(got[call][i], want[call][i], round, call, i, "at once");
    }
    /* Both traces stayed, and all but the first call of each was served
     * by one (12 of 14); or one stayed, and 9 of 14 were. */
    assert_int_equal(dla_accel_occupancy(af), cache);
    assert_true(dla_accel_hit_rate(af) > (cache == 1 ? 60.0 : 80.0));
    /* The results outlive the calls after theirs, and the traces. */
    dla_accel_free(af);
    for (int call = 0; call < DF_CALLS; call++)
        for (int i = 0; i < nout; i++)
            df_check(got[call][i], want[call][i], round, call, i, "after the last call");
}

static void random_shaped_functions_replay_with_eager_bits_and_keep_earlier_results(void **state)
{
    (void)state;
    unsigned long long r = 0x6a09e667f3bcc909ULL;
    dla_rng_seed(41);
    for (int round = 0; round < 120; round++) {
        dla_scope_begin();
        df_round(&r, round, 0, round < 90 ? DLA_F32 : DLA_F64);
        dla_scope_end();
    }
}

static void their_gradients_replay_with_eager_bits_and_keep_earlier_results(void **state)
{
    (void)state;
    unsigned long long r = 0xbb67ae8584caa73bULL;
    dla_rng_seed(43);
    for (int round = 0; round < 80; round++) {
        dla_scope_begin();
        df_round(&r, round, 1, round < 60 ? DLA_F32 : DLA_F64);
        dla_scope_end();
    }
}

int main(void)
{
    const char *filter = getenv("DLA_TEST_FILTER");
    if (filter)
        cmocka_set_test_filter(filter);
    const struct CMUnitTest tests[] = {
        TU_TEST(random_shaped_functions_replay_with_eager_bits_and_keep_earlier_results),
        TU_TEST(their_gradients_replay_with_eager_bits_and_keep_earlier_results),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
