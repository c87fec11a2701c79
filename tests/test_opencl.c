/*
 * test_opencl.c - the opencl plugin at the user's level: a trace recorded
 * on the cpu plugin replays on an OpenCL device with the same results
 * within tolerance, and the reverse; on the OpenCL device itself a planned
 * replay (its elementwise chains fused, run interpreted at first and
 * compiled once they come back) gives eager's bits, also where one fused
 * launch keeps several results (fused_multi), and so does each fused
 * program on every run, interpreted or compiled, and each result of a
 * fused_multi program (ABI 1.8: earlier registers stored too, in place of
 * inputs or not) the bits of fused cut at its register; random numbers drawn
 * inside a planned replay (dropout masks, rand_like slots) are drawn on
 * the device, with the cpu plugin's bits; a fused program summed over
 * some dims (fused_reduce, in parts) agrees with the cpu plugin's and
 * gives the same bits interpreted and compiled, and so does its pair form
 * (a second register into y2), whose y2 is checked as y is; a network
 * step (conv,
 * batchnorm, relu, maxpool, fully connected, softmax, cross-entropy, with
 * gradients) agrees with the cpu plugin's; scatter_add refuses an index of
 * more than INT32_MAX positions by name; reductions that keep a dim of 0
 * give empty results.
 *
 * tests/opencl.mk runs it with the build tree's opencl manifest on the
 * path; without an OpenCL device every test is skipped, and says why.
 */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <dlaccel/device_table.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "tu_assert.h"

static dla_device *ocl, *cpu;

static int group_setup(void **state)
{
    cpu = dla_device_get("cpu");
    ocl = dla_device_get("opencl");
    return 0;
}

static void need_devices(void)
{
    assert_non_null(cpu);
    if (!ocl) {
        print_message("no OpenCL device: %s\n", dla_last_error());
        skip();
    }
}

/* ----------------------------------------------------------- functions */

/* The MLP 4-8-1 of the bench: loss and its 4 gradients. */
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

/* A digit classifier's step: conv 3x3 (1 -> 4, padding 1) -> batchnorm
 * (training) -> relu -> maxpool 2 -> fully connected (10) -> softmax ->
 * cross-entropy; the loss, the gradients of the five parameters and the
 * new running statistics. in: w, b, offset, scale, fcw, fcb, x, targets,
 * mean, var. */
static dla_status cnn_step(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    const dla_conv_options pad1 = {.padding = {{1, 1}, {1, 1}}};
    dla_tensor *y = dla_conv(in[6], in[0], in[1], &pad1), *z, *m, *v;
    dla_batchnorm_train(y, in[2], in[3], in[8], in[9], NULL, &z, &m, &v);
    dla_tensor *p = dla_maxpool(dla_relu(z), DLA_DIMS(2), &(dla_pool_options){.stride = {2, 2}});
    dla_tensor *s = dla_softmax(dla_fullyconnect(p, in[4], in[5]));
    dla_tensor *loss = dla_crossentropy(s, in[7], NULL);
    out[0] = loss;
    out[6] = m;
    out[7] = v;
    return dla_gradient(loss, 5, (dla_tensor *[]){in[0], in[1], in[2], in[3], in[4]}, out + 1);
}

static void cnn_inputs(dla_tensor **in)
{
    in[0] = dla_affine(dla_randn(DLA_F32, "", DLA_DIMS(3, 3, 1, 4)), 0.3, 0);
    in[1] = dla_zeros(DLA_F32, "", DLA_DIMS(4, 1));
    in[2] = dla_zeros(DLA_F32, "", DLA_DIMS(4, 1));
    in[3] = dla_ones(DLA_F32, "", DLA_DIMS(4, 1));
    in[4] = dla_affine(dla_randn(DLA_F32, "", DLA_DIMS(10, 8 * 8 * 4)), 0.05, 0);
    in[5] = dla_zeros(DLA_F32, "", DLA_DIMS(10, 1));
    in[6] = dla_rand(DLA_F32, "SSCB", DLA_DIMS(16, 16, 1, 6));
    float targets[10 * 6] = {0};
    const int labels[6] = {1, 7, 3, 0, 9, 3};
    for (int b = 0; b < 6; b++)
        targets[b * 10 + labels[b]] = 1;
    in[7] = dla_tensor_from_host(targets, DLA_F32, "CB", DLA_DIMS(10, 6));
    in[8] = dla_zeros(DLA_F32, "", DLA_DIMS(4, 1));
    in[9] = dla_ones(DLA_F32, "", DLA_DIMS(4, 1));
}

/* --------------------------------------------------------------- checks */

/* got and want, on any devices, agree element by element within tol
 * relative to 1 + |want|. */
static void assert_close(dla_tensor *got, dla_tensor *want, double tol, const char *what)
{
    assert_int_equal(dla_tensor_status(got), DLA_OK);
    assert_int_equal(dla_tensor_status(want), DLA_OK);
    const int64_t n = dla_tensor_numel(want);
    assert_int_equal(dla_tensor_numel(got), n);
    for (int64_t i = 0; i < n; i++) {
        const double g = dla_tensor_item(got, i), w = dla_tensor_item(want, i);
        if (!tu_close(g, w, tol))
            fail_msg("%s: element %lld is %.9g on %s, %.9g on %s", what, (long long)i, g,
                     dla_device_name(dla_tensor_device(got)), w,
                     dla_device_name(dla_tensor_device(want)));
    }
}

static void assert_same_bits(dla_tensor *a, dla_tensor *b)
{
    assert_int_equal(dla_tensor_status(a), DLA_OK);
    assert_int_equal(dla_tensor_status(b), DLA_OK);
    const int64_t n = dla_tensor_numel(a);
    assert_int_equal(dla_tensor_numel(b), n);
    const size_t bytes = (size_t)n * dla_dtype_size(dla_tensor_dtype(a));
    unsigned char *x = malloc(bytes + 1), *y = malloc(bytes + 1);
    assert_int_equal(dla_tensor_to_host(a, x, bytes), DLA_OK);
    assert_int_equal(dla_tensor_to_host(b, y, bytes), DLA_OK);
    assert_memory_equal(x, y, bytes);
    free(x);
    free(y);
}

/* "plan steps on DEV: N launches (F fused, ...; R runs, L fused launches;
 * M fused launches keep several results" */
static void plan_of(dla_accel *af, const char *dev, int *fused, long *fused_launches, int *invoked,
                    int *multi)
{
    dla_trace *t = dla_accel_trace(af, 0);
    assert_non_null(t);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_int_equal(dla_trace_print(t, f), DLA_OK);
    fclose(f);
    dla_trace_release(t);
    char key[128];
    snprintf(key, sizeof key, "plan steps on %s: ", dev);
    const char *s = strstr(text, key);
    int launches = 0, from = 0;
    long runs = 0;
    *fused = 0, *fused_launches = 0, *invoked = 0, *multi = 0;
    if (!s || sscanf(s + strlen(key), "%d launches (%d fused, from %d), %d ops run as themselves, "
                     "%*d dead ops left out; %ld runs, %ld fused launches; %d fused launches "
                     "keep several results",
                     &launches, fused, &from, invoked, &runs, fused_launches, multi) != 7)
        fail_msg("no plan on %s in the trace's text:\n%s", dev, text);
    free(text);
}

/* One call of af (fn accelerated) on in: every output on the opencl
 * device, with the bits of fn called eagerly. */
static void replay_is_eager_on_opencl(dla_accel *af, dla_function fn, int nin, dla_tensor **in,
                                      int nout)
{
    dla_tensor *got[8], *want[8];
    assert_true(nout <= 8);
    assert_int_equal(dla_accel_feval(af, NULL, nin, in, nout, got), DLA_OK);
    assert_int_equal(dla_feval(fn, NULL, nin, in, nout, want), DLA_OK);
    for (int i = 0; i < nout; i++) {
        assert_ptr_equal(dla_tensor_device(got[i]), ocl);
        assert_same_bits(got[i], want[i]);
    }
}

/* Records fn on `from` (inputs made there), replays its trace on `to`
 * with the inputs moved, and compares with the recording's outputs. */
static void record_and_replay(dla_device *from, dla_device *to, dla_function fn, int nin,
                              dla_tensor **in, int nout, double tol, const char *what)
{
    dla_accel *af = dla_accelerate(fn, NULL);
    dla_tensor *ref[16], *got[16], *moved[16];
    assert_int_equal(dla_accel_feval(af, NULL, nin, in, nout, ref), DLA_OK);
    dla_trace *t = dla_accel_trace(af, 0);
    assert_non_null(t);
    for (int i = 0; i < nin; i++)
        moved[i] = dla_tensor_to_device(in[i], to);
    assert_int_equal(dla_trace_replay(t, nin, moved, nout, got), DLA_OK);
    for (int i = 0; i < nout; i++) {
        char name[160];
        snprintf(name, sizeof name, "%s output %d, recorded on %s", what, i,
                 dla_device_name(from));
        assert_ptr_equal(dla_tensor_device(got[i]), to);
        assert_close(got[i], ref[i], tol, name);
    }
    dla_trace_release(t);
    dla_accel_free(af);
}

/* ================================================================ tests */

static void a_trace_recorded_on_cpu_replays_on_opencl_within_tolerance(void **state)
{
    need_devices();
    dla_scope_begin();
    dla_device_set_current(cpu);
    dla_rng_seed(21);
    dla_tensor *in[10];
    mlp_inputs(in, DLA_F64);
    record_and_replay(cpu, ocl, mlp_loss, 6, in, 5, 1e-12, "mlp double");
    mlp_inputs(in, DLA_F32);
    record_and_replay(cpu, ocl, mlp_loss, 6, in, 5, 1e-5, "mlp single");
    cnn_inputs(in);
    record_and_replay(cpu, ocl, cnn_step, 10, in, 8, 1e-4, "cnn step");
    dla_device_set_current(NULL);
    dla_scope_end();
}

static void a_trace_recorded_on_opencl_replays_on_cpu_within_tolerance(void **state)
{
    need_devices();
    dla_scope_begin();
    dla_device_set_current(ocl);
    dla_rng_seed(22);
    dla_tensor *in[10];
    mlp_inputs(in, DLA_F64);
    record_and_replay(ocl, cpu, mlp_loss, 6, in, 5, 1e-12, "mlp double");
    cnn_inputs(in);
    record_and_replay(ocl, cpu, cnn_step, 10, in, 8, 1e-4, "cnn step");
    dla_device_set_current(NULL);
    dla_scope_end();
}

static void planned_replays_on_opencl_give_eager_bits_and_run_fused_programs(void **state)
{
    need_devices();
    dla_scope_begin();
    dla_device_set_current(ocl);
    dla_rng_seed(23);
    dla_tensor *in[6];
    mlp_inputs(in, DLA_F32);
    dla_accel *af = dla_accelerate(mlp_loss, NULL);
    for (int call = 0; call < 6; call++) {
        /* Call 1 records, call 2 plans; the fused programs run
         * interpreted, then compiled from their second run on. */
        in[0] = dla_affine(in[0], 0.9, 0.05);
        in[4] = dla_add(in[4], dla_rand_like(in[4]));
        replay_is_eager_on_opencl(af, mlp_loss, 6, in, 5);
    }
    int fused, invoked, multi;
    long fused_launches;
    plan_of(af, dla_device_name(ocl), &fused, &fused_launches, &invoked, &multi);
    assert_true(fused >= 1);
    assert_true(fused_launches >= 4 * fused);
    dla_accel_free(af);
    dla_device_set_current(NULL);
    dla_scope_end();
}

/* A momentum step, v = 0.9 v - 0.01 g and p + v, and a product a = p .* g
 * with tanh(a + exp(v)) after it: outputs p + v, v, a and the tanh, so
 * the chains' intermediate results are read after them (fused_multi
 * launches, ABI 1.8). in: p, v, g. */
static dla_status kept_results(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[1] = dla_sub(dla_affine(in[1], 0.9, 0.0), dla_affine(in[2], 0.01, 0.0));
    out[0] = dla_add(in[0], out[1]);
    out[2] = dla_mul(in[0], in[2]);
    out[3] = dla_tanh(dla_add(out[2], dla_exp(in[1])));
    return dla_tensor_status(out[3]);
}

static void planned_replays_on_opencl_keep_several_results_per_launch_with_eager_bits(void **state)
{
    need_devices();
    dla_scope_begin();
    dla_device_set_current(ocl);
    dla_rng_seed(25);
    for (int f64 = 0; f64 < 2; f64++) {
        const dla_dtype t = f64 ? DLA_F64 : DLA_F32;
        if (!dla_device_runs_natively(ocl, DLA_KERNEL_FUSED_MULTI, t))
            continue;
        dla_tensor *in[3];
        for (int i = 0; i < 3; i++)
            in[i] = dla_randn(t, "", DLA_DIMS(50, 7));
        dla_accel *af = dla_accelerate(kept_results, NULL);
        for (int call = 0; call < 6; call++) {
            /* Call 1 records, call 2 plans; the programs run interpreted,
             * then compiled from their second run on. */
            in[2] = dla_affine(in[2], 0.9, 0.05);
            replay_is_eager_on_opencl(af, kept_results, 3, in, 4);
        }
        int fused, invoked, multi;
        long fused_launches;
        plan_of(af, dla_device_name(ocl), &fused, &fused_launches, &invoked, &multi);
        /* One launch keeps several results, none with DLACCEL_PLAN=single-result. */
        const char *mode = getenv("DLACCEL_PLAN");
        if (mode && strcmp(mode, "single-result") == 0)
            assert_int_equal(multi, 0);
        else
            assert_true(multi >= 1);
        assert_true(fused_launches >= 4 * fused);
        dla_accel_free(af);
    }
    dla_device_set_current(NULL);
    dla_scope_end();
}

/* Random numbers inside a traced function: a dropout mask, normal noise in
 * single and uniform noise in double (the outputs themselves, so they can
 * be compared with the cpu plugin's bit for bit), and a loss over them. */
static dla_status noisy(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    out[0] = dla_dropout(in[0], 0.3);
    out[1] = dla_randn_like(in[0]);
    out[2] = dla_rand_like(in[1]);
    out[3] = dla_sum(dla_square(dla_add(out[0], dla_affine(out[1], 0.01, 0))), 0, NULL);
    return DLA_OK;
}

static void planned_replays_on_opencl_draw_on_the_device_with_the_cpu_plugins_bits(void **state)
{
    need_devices();
    dla_scope_begin();
    dla_device_set_current(ocl);
    dla_rng_seed(25);
    dla_tensor *in[2] = {dla_randn(DLA_F32, "", DLA_DIMS(37, 11)),
                         dla_rand(DLA_F64, "", DLA_DIMS(5, 3, 7))};
    dla_tensor *on_cpu[2] = {dla_tensor_to_device(in[0], cpu), dla_tensor_to_device(in[1], cpu)};
    dla_accel *af = dla_accelerate(noisy, NULL);
    for (int call = 0; call < 5; call++) {
        /* Call 1 records, call 2 plans, the rest run the plan. */
        dla_tensor *got[4], *want[4], *ref[4];
        const uint64_t seed = 1000 + (uint64_t)call * 7919;
        dla_rng_set(seed, (uint64_t)call << 31);
        assert_int_equal(dla_accel_feval(af, NULL, 2, in, 4, got), DLA_OK);
        uint64_t s1, after;
        dla_rng_get(&s1, &after);
        dla_rng_set(seed, (uint64_t)call << 31);
        assert_int_equal(dla_feval(noisy, NULL, 2, in, 4, want), DLA_OK);
        uint64_t eager_after;
        dla_rng_get(&s1, &eager_after);
        assert_true(after == eager_after); /* the stream moved on by the same blocks */
        dla_device_set_current(cpu);
        dla_rng_set(seed, (uint64_t)call << 31);
        assert_int_equal(dla_feval(noisy, NULL, 2, on_cpu, 4, ref), DLA_OK);
        dla_device_set_current(ocl);
        for (int i = 0; i < 4; i++) {
            assert_ptr_equal(dla_tensor_device(got[i]), ocl);
            assert_same_bits(got[i], want[i]);
        }
        for (int i = 0; i < 3; i++)
            assert_same_bits(got[i], ref[i]);
    }
    int fused, invoked, multi;
    long fused_launches;
    plan_of(af, dla_device_name(ocl), &fused, &fused_launches, &invoked, &multi);
    assert_int_equal(invoked, 0); /* every draw a launch of the plan */
    dla_accel_free(af);
    dla_device_set_current(NULL);
    dla_scope_end();
}

static void a_network_step_on_opencl_agrees_with_the_cpu_plugin(void **state)
{
    need_devices();
    dla_scope_begin();
    dla_rng_seed(24);
    dla_tensor *in[10], *moved[10], *want[8], *got[8];
    dla_device_set_current(cpu);
    cnn_inputs(in);
    assert_int_equal(dla_feval(cnn_step, NULL, 10, in, 8, want), DLA_OK);
    for (int i = 0; i < 10; i++)
        moved[i] = dla_tensor_to_device(in[i], ocl);
    dla_device_set_current(ocl);
    assert_int_equal(dla_feval(cnn_step, NULL, 10, moved, 8, got), DLA_OK);
    for (int i = 0; i < 8; i++) {
        char name[64];
        snprintf(name, sizeof name, "cnn step output %d", i);
        assert_ptr_equal(dla_tensor_device(got[i]), ocl);
        assert_close(got[i], want[i], 1e-4, name);
    }
    dla_device_set_current(NULL);
    dla_scope_end();
}

/* d/dx sum(tanh(x)), with tanh(x) itself. */
static dla_status tanh_grad(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    out[0] = dla_tanh(in[0]);
    return dla_gradient(dla_sum(out[0], 0, NULL), 1, in, out + 1);
}

/* Past |x| of about 9 (single) or 19 (double) tanh rounds to +-1, and
 * tanh(+-Inf) is +-1 (OpenCL's edge cases, as C's). PoCL's single tanh
 * stops at 0.99999994, Inf included, which left tanh's derivative
 * 1 - tanh^2 at 1.2e-7 on saturated units where the cpu plugin's is 0. */
static void tanh_saturates_at_one_as_on_the_cpu_plugin(void **state)
{
    need_devices();
    const double x[] = {9.5, 20.0, 88.8, 1e30, INFINITY, -INFINITY, -25.0, -9.5, 0.5, NAN};
    const int n = (int)(sizeof x / sizeof *x);
    for (int t = 0; t < 2; t++) {
        const dla_dtype dt = t ? DLA_F64 : DLA_F32;
        dla_scope_begin();
        dla_device_set_current(ocl);
        dla_tensor *xd = dla_cast(dla_tensor_from_host(x, DLA_F64, "", DLA_DIMS(n)), dt), *out[2];
        assert_int_equal(dla_feval(tanh_grad, NULL, 1, &xd, 2, out), DLA_OK);
        for (int i = 0; i < n; i++) {
            const double y = dla_tensor_item(out[0], i), g = dla_tensor_item(out[1], i);
            const int saturated = fabs(x[i]) > (t ? 19.5 : 9.1);
            if (isnan(x[i])) {
                assert_true(isnan(y) && isnan(g));
            } else if (saturated) {
                if (y != (x[i] > 0 ? 1.0 : -1.0) || g != 0.0)
                    fail_msg("%s tanh(%g) on opencl: %.9g, derivative %g; want %g and 0",
                             dla_dtype_name(dt), x[i], y, g, x[i] > 0 ? 1.0 : -1.0);
            } else {
                tu_assert_near(y, tanh(x[i]), 1e-6);
                tu_assert_near(g, 1.0 - tanh(x[i]) * tanh(x[i]), 1e-6);
            }
        }
        dla_device_set_current(NULL);
        dla_scope_end();
    }
}

/* The plugin's own GEMM (DLACCEL_OPENCL_GEMM=own) where products
 * overflow: each is added with fma, as the cpu plugin's BLAS adds it, so
 * a product overflowing after the sum is +Inf leaves it +Inf. Until
 * 2026-11-29 the product rounded to -Inf first and [1e30 1e30] *
 * [1e30; -1e30] was NaN on opencl, +Inf on the cpu plugin and CLBlast. */
static void own_gemm_overflows_as_the_cpu_plugin(void **state)
{
    need_devices();
    setenv("DLACCEL_OPENCL_GEMM", "own", 1);
    for (int t = 0; t < 2; t++) {
        const dla_dtype dt = t ? DLA_F64 : DLA_F32;
        const double big = t ? 1e200 : 1e30;
        /* Column-major 2x3 and 3x2: C(1,1) is big^2 - big^2 + 1 (+Inf
         * added with fma, NaN without), the others overflow one way. */
        const double a[] = {big, -big, big, big, 1, 2};
        const double b[] = {big, -big, 1, big, 1, 3};
        double got[4], want[4];
        dla_scope_begin();
        for (int d = 0; d < 2; d++) {
            dla_device_set_current(d ? cpu : ocl);
            dla_tensor *A = dla_cast(dla_tensor_from_host(a, DLA_F64, "", DLA_DIMS(2, 3)), dt);
            dla_tensor *B = dla_cast(dla_tensor_from_host(b, DLA_F64, "", DLA_DIMS(3, 2)), dt);
            dla_tensor *C = dla_cast(dla_mtimes(A, B), DLA_F64);
            assert_int_equal(dla_tensor_to_host(C, d ? want : got, sizeof got), DLA_OK);
        }
        dla_device_set_current(NULL);
        dla_scope_end();
        for (int i = 0; i < 4; i++) {
            const int same = isnan(want[i]) ? isnan(got[i])
                             : isinf(want[i]) ? got[i] == want[i]
                                              : fabs(got[i] - want[i]) <= 1e-6 * fabs(want[i]);
            if (!same)
                fail_msg("%s C[%d] on opencl's own GEMM: %g; the cpu plugin's %g",
                         dla_dtype_name(dt), i, got[i], want[i]);
        }
        assert_true(isinf(want[0]) && want[0] > 0); /* the case is the one meant */
    }
    unsetenv("DLACCEL_OPENCL_GEMM");
}

/* The gradient of rows picked from a table: scatter_add of the picked
 * rows' gradients into the table's. ctx: the index. */
static dla_status pick_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    dla_tensor *picked = dla_index(in[0], 1, ctx);
    out[0] = dla_sum(dla_mul(picked, in[1]), 0, NULL);
    return dla_gradient(out[0], 1, in, out + 1);
}

static void scatter_add_into_a_long_table_agrees_with_the_cpu_plugin(void **state)
{
    /* 40 positions, repeated, into 100,000 rows: grouped by a sort of
     * the positions, not a count array of the table's length (400 kB
     * here, 400 MB for 10^8 rows); and 40 into 64 rows, counted. Each
     * target adds its positions in index order, as the cpu plugin does:
     * the same bits. */
    need_devices();
    for (int shape = 0; shape < 2; shape++) {
        const int64_t rows = shape ? 64 : 100000;
        int32_t pos[40];
        for (int i = 0; i < 40; i++)
            pos[i] = (int32_t)((i * 7919 + (i % 3 ? 0 : 13)) % (i < 20 ? 5 : rows));
        dla_scope_begin();
        dla_device_set_current(cpu);
        dla_tensor *idx = dla_tensor_from_host(pos, DLA_I32, "", DLA_DIMS(40));
        dla_tensor *in[2] = {dla_randn(DLA_F32, "", DLA_DIMS(rows, 3)),
                             dla_randn(DLA_F32, "", DLA_DIMS(40, 3))};
        dla_tensor *want[2], *got[2];
        assert_int_equal(dla_feval(pick_loss, idx, 2, in, 2, want), DLA_OK);
        dla_tensor *moved[2] = {dla_tensor_to_device(in[0], ocl), dla_tensor_to_device(in[1], ocl)};
        dla_device_set_current(ocl);
        dla_tensor *oidx = dla_tensor_to_device(idx, ocl);
        assert_int_equal(dla_feval(pick_loss, oidx, 2, moved, 2, got), DLA_OK);
        assert_ptr_equal(dla_tensor_device(got[1]), ocl);
        float *a = malloc((size_t)rows * 3 * sizeof *a), *b = malloc((size_t)rows * 3 * sizeof *b);
        assert_int_equal(dla_tensor_to_host(want[1], a, (size_t)rows * 3 * sizeof *a), DLA_OK);
        assert_int_equal(dla_tensor_to_host(got[1], b, (size_t)rows * 3 * sizeof *b), DLA_OK);
        assert_memory_equal(a, b, (size_t)rows * 3 * sizeof *a);
        free(a), free(b);
        dla_device_set_current(NULL);
        dla_scope_end();
    }
}

/* Host memory, with any request of 1 GiB or more refused: a call that
 * would copy a huge index to the host fails at once instead of paging in
 * gigabytes. */
static void *no_gigabytes(void *user, void *ptr, size_t size)
{
    (void)user;
    if (size >= ((size_t)1 << 30))
        return NULL;
    if (size == 0) {
        free(ptr);
        return NULL;
    }
    return realloc(ptr, size);
}

/* scatter_add's groups hold positions along the index as int32: an index
 * of 2^31 positions went on to a host copy of 8 GiB and, had that been
 * had, positions that wrapped negative (the kernel reading before x). It
 * is refused by name before anything is copied, as the cuda plugin does.
 * Index and x are one element each through stride 0: no memory needed. */
/* Reductions that keep a dim of 0 (an empty batch) have no outputs: the
 * plugin's plan divided its work-items by their count before looking (a
 * SIGFPE on a GPU's driver; PoCL's own SIGFPE handler skipped the division,
 * so plain programs went on, but under cmocka's handler this test died). */
static void reductions_with_no_outputs_give_empty_results(void **state)
{
    (void)state;
    need_devices();
    dla_device_set_current(ocl);
    dla_scope_begin();
    dla_tensor *xs[] = {dla_zeros(DLA_F32, "", DLA_DIMS(1024, 0)),
                        dla_zeros(DLA_F64, "", DLA_DIMS(1025, 0, 5)),
                        dla_permute(dla_zeros(DLA_F32, "", DLA_DIMS(5, 0, 1025)), 3,
                                    (const int64_t[]){3, 2, 1})};
    const int64_t over[2][2] = {{1, 0}, {1, 3}};
    for (int i = 0; i < 3; i++) {
        const int n = i == 0 ? 1 : 2;
        dla_tensor *r[] = {dla_sum(xs[i], n, over[i > 0]), dla_mean(xs[i], n, over[i > 0]),
                           dla_max(xs[i], n, over[i > 0]), dla_min(xs[i], n, over[i > 0])};
        for (int k = 0; k < 4; k++) {
            assert_int_equal(dla_tensor_status(r[k]), DLA_OK);
            assert_int_equal(dla_tensor_numel(r[k]), 0);
            assert_int_equal(dla_tensor_dim(r[k], 1), 1);
            assert_int_equal(dla_tensor_dim(r[k], 2), 0);
        }
    }
    dla_scope_end();
    dla_device_set_current(NULL);
}

static void scatter_add_refuses_an_index_longer_than_int32(void **state)
{
    need_devices();
    const dla_plugin *t = dla_device_table(ocl);
    void *ctx = dla_device_context(ocl);
    dla_mem im, xm, ym;
    assert_int_equal(t->mem_alloc(ctx, sizeof(int32_t), &im), DLA_OK);
    assert_int_equal(t->mem_alloc(ctx, sizeof(float), &xm), DLA_OK);
    assert_int_equal(t->mem_alloc(ctx, sizeof(float), &ym), DLA_OK);
    const int32_t zero = 0;
    const float one = 1, five = 5;
    assert_int_equal(t->copy_to_device(ctx, im, 0, &zero, sizeof zero), DLA_OK);
    assert_int_equal(t->copy_to_device(ctx, xm, 0, &one, sizeof one), DLA_OK);
    assert_int_equal(t->copy_to_device(ctx, ym, 0, &five, sizeof five), DLA_OK);
    const int64_t len = (int64_t)INT32_MAX + 1;
    dla_index_args a = {.struct_size = sizeof a, .dim = 0};
    a.y = (dla_view){.struct_size = sizeof(dla_view), .mem = ym, .dtype = DLA_F32, .ndims = 1,
                     .dims = {1}, .strides = {1}};
    a.x = (dla_view){.struct_size = sizeof(dla_view), .mem = xm, .dtype = DLA_F32, .ndims = 1,
                     .dims = {len}, .strides = {0}};
    a.index = (dla_view){.struct_size = sizeof(dla_view), .mem = im, .dtype = DLA_I32,
                         .ndims = 1, .dims = {len}, .strides = {0}};
    dla_set_allocator(no_gigabytes, NULL);
    dla_clear_error();
    dla_status st = t->scatter_add(ctx, &a);
    char said[512];
    snprintf(said, sizeof said, "%s", dla_last_error());
    dla_set_allocator(NULL, NULL);
    if (st != DLA_ERR_INVALID_ARGUMENT || !strstr(said, "scatter_add") ||
        !strstr(said, "argument index: 2147483648 positions exceed int32"))
        fail_msg("scatter_add of 2^31 positions: status %d, \"%s\"", (int)st, said);
    /* y untouched; the same call one position shorter still works. */
    float y;
    assert_int_equal(t->copy_to_host(ctx, &y, ym, 0, sizeof y), DLA_OK);
    assert_true(y == 5);
    a.x.dims[0] = a.index.dims[0] = 3;
    assert_int_equal(t->scatter_add(ctx, &a), DLA_OK);
    assert_int_equal(t->copy_to_host(ctx, &y, ym, 0, sizeof y), DLA_OK);
    assert_true(y == 8);
    t->mem_free(ctx, im);
    t->mem_free(ctx, xm);
    t->mem_free(ctx, ym);
}

/* Program prog of 0..5 into a's eight instructions: every kind of step,
 * unary and binary ops spread over their lists, sources from the
 * registers below and the three inputs. */
static void eight_steps(dla_fused_args *a, int prog)
{
    for (int j = 0; j < 8; j++) {
        dla_fused_insn *s = &a->insns[j];
        s->kind = (prog + j) % 3 == 2 ? DLA_FUSED_WHERE : (prog + j) % 3;
        s->op = s->kind == DLA_FUSED_UNARY    ? (prog * 5 + j * 3) % DLA_UNARY_COUNT
                : s->kind == DLA_FUSED_BINARY ? (prog * 7 + j) % DLA_BINARY_COUNT
                                              : 0;
        s->alpha = 0.5 + prog * 0.1, s->beta = -0.25;
        for (int k = 0; k < 3; k++)
            s->src[k] = j > k ? j - 1 - k : -1 - (j + k + prog) % 3;
    }
}

/* Programs over every kind of step: each runs three times through the
 * plugin table, interpreted the first time and compiled from the second
 * (DLACCEL_OPENCL_FUSED unset), and must give the same bits each time. */
static void a_fused_program_gives_the_same_bits_interpreted_and_compiled(void **state)
{
    need_devices();
    const int64_t n = 1000;
    dla_mem in[3], y;
    const dla_plugin *t = dla_device_table(ocl);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(t->mem_alloc(dla_device_context(ocl), n * sizeof(float), &in[i]), DLA_OK);
        float host[1000];
        for (int64_t e = 0; e < n; e++)
            host[e] = (float)(tu_unit() * 6 - 3);
        host[7] = NAN, host[8] = -0.0f, host[9] = 1.0f / 0.0f;
        assert_int_equal(t->copy_to_device(dla_device_context(ocl), in[i], 0, host, sizeof host),
                         DLA_OK);
    }
    assert_int_equal(t->mem_alloc(dla_device_context(ocl), n * sizeof(float), &y), DLA_OK);
    dla_fused_args a = {.struct_size = sizeof a, .dtype = DLA_F32, .ninputs = 3};
    for (int i = 0; i < 3; i++) {
        a.inputs[i] = (dla_view){.struct_size = sizeof(dla_view), .mem = in[i], .dtype = DLA_F32,
                                 .ndims = 2, .dims = {100, 10}, .strides = {1, 100}};
        if (i == 2) /* one value per column: a broadcast input */
            a.inputs[i].strides[0] = 0;
    }
    a.y = a.inputs[0];
    a.y.mem = y;
    a.y.strides[0] = 1;
    for (int prog = 0; prog < 6; prog++) {
        a.ninsns = 8;
        eight_steps(&a, prog);
        float runs[3][1000];
        for (int r = 0; r < 3; r++) {
            assert_int_equal(t->fused(dla_device_context(ocl), &a), DLA_OK);
            assert_int_equal(
                t->copy_to_host(dla_device_context(ocl), runs[r], y, 0, sizeof runs[r]), DLA_OK);
        }
        assert_memory_equal(runs[0], runs[1], sizeof runs[0]);
        assert_memory_equal(runs[0], runs[2], sizeof runs[0]);
    }
    for (int i = 0; i < 3; i++)
        t->mem_free(dla_device_context(ocl), in[i]);
    t->mem_free(dla_device_context(ocl), y);
}

/* fused_multi (ABI 1.8): programs over every kind of step storing one to
 * all seven earlier registers, in single and double, some with y and
 * extra[0] in place of inputs 1 and 0 (the very same views), extra[1]
 * laid out across. Each runs three times through the plugin table
 * (interpreted the first time, compiled from the second), the inputs
 * uploaded afresh each time, and each result must have the bits of plain
 * fused over the program cut at its register, from the same inputs. */
static void a_fused_multi_program_stores_its_registers_interpreted_and_compiled(void **state)
{
    need_devices();
    enum { N = 1000 };
    const dla_plugin *t = dla_device_table(ocl);
    void *ctx = dla_device_context(ocl);
    for (int f64 = 0; f64 < 2; f64++) {
        const dla_dtype dt = f64 ? DLA_F64 : DLA_F32;
        if (!dla_device_runs_natively(ocl, DLA_KERNEL_FUSED_MULTI, dt))
            continue;
        const size_t es = f64 ? sizeof(double) : sizeof(float), bytes = N * es;
        static unsigned char host[3][N * sizeof(double)], ref[8][N * sizeof(double)],
            got[N * sizeof(double)];
        dla_mem in[3], y, x[DLA_FUSED_MAX_EXTRA], r;
        for (int i = 0; i < 3; i++) {
            assert_int_equal(t->mem_alloc(ctx, bytes, &in[i]), DLA_OK);
            for (int e = 0; e < N; e++) {
                double v = tu_unit() * 6 - 3;
                if (e == 7)
                    v = NAN;
                else if (e == 8)
                    v = -0.0;
                else if (e == 9)
                    v = 1.0 / 0.0;
                if (f64)
                    memcpy(host[i] + e * es, &v, es);
                else
                    ((float *)(void *)host[i])[e] = (float)v;
            }
        }
        assert_int_equal(t->mem_alloc(ctx, bytes, &y), DLA_OK);
        assert_int_equal(t->mem_alloc(ctx, bytes, &r), DLA_OK);
        for (int k = 0; k < DLA_FUSED_MAX_EXTRA; k++)
            assert_int_equal(t->mem_alloc(ctx, bytes, &x[k]), DLA_OK);
        const dla_view dense = {.struct_size = sizeof(dla_view), .dtype = dt, .ndims = 2,
                                .dims = {100, 10}, .strides = {1, 100}};
        for (int prog = 0; prog < 6; prog++) {
            dla_fused_multi_args m;
            memset(&m, 0, sizeof m);
            m.struct_size = sizeof m;
            dla_fused_args *a = &m.program;
            a->struct_size = sizeof *a, a->dtype = dt, a->ninputs = 3, a->ninsns = 8;
            for (int i = 0; i < 3; i++) {
                a->inputs[i] = dense;
                a->inputs[i].mem = in[i];
            }
            a->inputs[2].strides[0] = 0; /* one value per column: a broadcast input */
            eight_steps(a, prog);
            /* All seven registers below the last, or one to three of them. */
            m.nextra = prog % 2 ? DLA_FUSED_MAX_EXTRA : 1 + prog % 3;
            const int inplace = prog >= 3;
            for (int k = 0; k < m.nextra; k++) {
                m.extra_reg[k] = (k * 3 + prog) % 7; /* distinct: 3 is prime to 7 */
                m.extra[k] = dense;
                m.extra[k].mem = x[k];
            }
            m.extra[1].strides[0] = 10, m.extra[1].strides[1] = 1; /* across */
            a->y = dense;
            a->y.mem = y;
            if (inplace) {
                a->y = a->inputs[1];
                m.extra[0] = a->inputs[0];
            }
            /* The references: plain fused cut at each result's register. */
            for (int i = 0; i < 3; i++)
                assert_int_equal(t->copy_to_device(ctx, in[i], 0, host[i], bytes), DLA_OK);
            for (int k = 0; k <= m.nextra; k++) {
                dla_fused_args cut = *a;
                cut.ninsns = k < m.nextra ? m.extra_reg[k] + 1 : a->ninsns;
                cut.y = k < m.nextra ? m.extra[k] : a->y;
                cut.y.mem = r;
                assert_int_equal(t->fused(ctx, &cut), DLA_OK);
                assert_int_equal(t->copy_to_host(ctx, ref[k], r, 0, bytes), DLA_OK);
            }
            for (int run = 0; run < 3; run++) {
                for (int i = 0; i < 3; i++)
                    assert_int_equal(t->copy_to_device(ctx, in[i], 0, host[i], bytes), DLA_OK);
                assert_int_equal(t->fused_multi(ctx, &m), DLA_OK);
                for (int k = 0; k <= m.nextra; k++) {
                    const dla_view *v = k < m.nextra ? &m.extra[k] : &a->y;
                    assert_int_equal(t->copy_to_host(ctx, got, v->mem, 0, bytes), DLA_OK);
                    if (memcmp(got, ref[k], bytes) != 0) {
                        char name[24] = "y";
                        if (k < m.nextra)
                            snprintf(name, sizeof name, "extra[%d]", k);
                        fail_msg("%s program %d, run %d%s: %s (register %d) differs from fused "
                                 "cut there",
                                 f64 ? "double" : "single", prog, run, inplace ? " (in place)" : "",
                                 name, k < m.nextra ? (int)m.extra_reg[k] : 7);
                    }
                }
            }
        }
        for (int i = 0; i < 3; i++)
            t->mem_free(ctx, in[i]);
        for (int k = 0; k < DLA_FUSED_MAX_EXTRA; k++)
            t->mem_free(ctx, x[k]);
        t->mem_free(ctx, y);
        t->mem_free(ctx, r);
    }
}

/* *r: the sum (op 0) or mean (op 1) of (x - m)^2 over dims 1 and 2 of
 * the dense n0 x n1 x n2 space at x, m the element m_at of x for every
 * output (stride 0 along the summed dims), into the n0 outputs at y. */
static void centered_square_sum(dla_fused_reduce_args *r, dla_dtype t, int op, dla_mem x,
                                int64_t m_at, dla_mem y, int64_t n0, int64_t n1, int64_t n2)
{
    memset(r, 0, sizeof *r);
    r->struct_size = sizeof *r;
    r->op = op ? DLA_REDUCE_MEAN : DLA_REDUCE_SUM;
    dla_fused_args *p = &r->program;
    p->struct_size = sizeof *p;
    p->dtype = t;
    p->ninputs = 2;
    p->ninsns = 2;
    p->inputs[0] = (dla_view){.struct_size = sizeof(dla_view), .mem = x, .dtype = t, .ndims = 3,
                              .dims = {n0, n1, n2}, .strides = {1, n0, n0 * n1}};
    p->inputs[1] = p->inputs[0];
    p->inputs[1].offset = m_at;
    p->inputs[1].strides[1] = p->inputs[1].strides[2] = 0;
    p->insns[0] = (dla_fused_insn){.kind = DLA_FUSED_BINARY, .op = DLA_BINARY_SUB, .src = {-1, -2}};
    p->insns[1] = (dla_fused_insn){.kind = DLA_FUSED_UNARY, .op = DLA_UNARY_SQUARE, .src = {0}};
    p->y = p->inputs[0];
    r->y = (dla_view){.struct_size = sizeof(dla_view), .mem = y, .dtype = t, .ndims = 3,
                      .dims = {n0, 1, 1}, .strides = {1, n0, n0}};
}

/* (x - m)^2 summed over dims 1 and 2 of a 2 x 3000 x 400 space, m one value
 * per output (stride 0 along the summed dims), in both of the plugin's
 * layouts (DLACCEL_OPENCL_FUSED_REDUCE): rows of 3000 positions (stride 2)
 * summed in runs by single work-items, or across lanes in chunks of a
 * work-group; two outputs are too few for a device, so each output's sum
 * is dealt to parts merged by a second kernel. Three runs each of sum and
 * mean, in single and double: interpreted the first time and compiled
 * from the second, all the same bits (the same plan, the same values),
 * and within 1e-6 of the cpu plugin's one pass (both accumulate in
 * double). */
static void a_fused_program_sums_as_the_cpu_plugin_interpreted_and_compiled(void **state)
{
    need_devices();
    enum { N0 = 2, N1 = 3000, N2 = 400, N = N0 * N1 * N2 };
    double *host = test_malloc(N * sizeof *host);
    for (int64_t e = 0; e < N; e++)
        host[e] = tu_unit() * 6 - 3;
    const dla_device *dev[2] = {ocl, cpu};
    for (int kind = 0; kind < 4; kind++) {
        const int layout = kind / 2, f64 = kind % 2;
        setenv("DLACCEL_OPENCL_FUSED_REDUCE", layout ? "lanes" : "runs", 1);
        const dla_dtype t = f64 ? DLA_F64 : DLA_F32;
        if (!dla_device_table(ocl)->supports(dla_device_context(ocl), DLA_KERNEL_FUSED_REDUCE, t))
            continue;
        const size_t es = f64 ? sizeof(double) : sizeof(float);
        float *single = test_malloc(N * sizeof *single);
        for (int64_t e = 0; e < N; e++)
            single[e] = (float)host[e];
        const void *data = f64 ? (const void *)host : (const void *)single;
        for (int op = 0; op < 2; op++) {
            double got[2][3][N0];
            for (int di = 0; di < 2; di++) {
                const dla_plugin *tb = dla_device_table(dev[di]);
                void *ctx = dla_device_context(dev[di]);
                dla_mem x, y;
                assert_int_equal(tb->mem_alloc(ctx, N * es, &x), DLA_OK);
                assert_int_equal(tb->mem_alloc(ctx, N0 * es, &y), DLA_OK);
                assert_int_equal(tb->copy_to_device(ctx, x, 0, data, N * es), DLA_OK);
                dla_fused_reduce_args r;
                centered_square_sum(&r, t, op, x, 17, y, N0, N1, N2);
                for (int run = 0; run < (di ? 1 : 3); run++) {
                    assert_int_equal(tb->fused_reduce(ctx, &r), DLA_OK);
                    char out[N0 * sizeof(double)];
                    assert_int_equal(tb->copy_to_host(ctx, out, y, 0, N0 * es), DLA_OK);
                    for (int o = 0; o < N0; o++)
                        got[di][run][o] = f64 ? ((double *)out)[o] : ((float *)out)[o];
                }
                tb->mem_free(ctx, x);
                tb->mem_free(ctx, y);
            }
            assert_memory_equal(got[0][0], got[0][1], sizeof got[0][0]);
            assert_memory_equal(got[0][0], got[0][2], sizeof got[0][0]);
            for (int o = 0; o < N0; o++) {
                const double want = got[1][0][o];
                assert_true(want > 0);
                if (!(fabs(got[0][0][o] - want) <= 1e-6 * want))
                    fail_msg("%s %s in %s, output %d: opencl %.17g, cpu %.17g",
                             f64 ? "double" : "single", op ? "mean" : "sum",
                             layout ? "lanes" : "runs", o, got[0][0][o], want);
            }
        }
        test_free(single);
    }
    unsetenv("DLACCEL_OPENCL_FUSED_REDUCE");
    test_free(host);
}

/* One fused_reduce on dev: sums program p (over x, m) into y (and with
 * pair into y2 register reg2); copies y's N outputs (and y2's) back as
 * doubles. */
typedef struct pair_run {
    dla_fused_reduce_args r;
    dla_mem y, y2;
    size_t es;
} pair_run;

static void pair_read(const dla_device *dev, const pair_run *pr, int n, double *y, double *y2,
                      double *y2_slots, int nslots)
{
    char out[64 * sizeof(double)];
    assert_true(nslots <= 64 && n <= 64);
    assert_int_equal(dla_device_table(dev)->copy_to_host(dla_device_context(dev), out, pr->y, 0,
                                                         (size_t)n * pr->es),
                     DLA_OK);
    for (int o = 0; o < n; o++)
        y[o] = pr->es == sizeof(double) ? ((double *)out)[o] : ((float *)out)[o];
    if (!y2)
        return;
    assert_int_equal(dla_device_table(dev)->copy_to_host(dla_device_context(dev), out, pr->y2, 0,
                                                         (size_t)nslots * pr->es),
                     DLA_OK);
    for (int k = 0; k < nslots; k++)
        y2_slots[k] = pr->es == sizeof(double) ? ((double *)out)[k] : ((float *)out)[k];
    for (int o = 0; o < n; o++)
        y2[o] = y2_slots[pr->r.y2.offset + o * pr->r.y2.strides[0]];
}

/* The pair (ABI 1.4): (x - m)^2 into y and register 0, x - m, into y2
 * from the same pass, over dims 1 and 2 of a 2 x 1500 x 200 space, in
 * both layouts (each in parts), single and double, sum and mean. y2 is a
 * strided view (offset 5, stride 3) in a buffer whose other elements must
 * stay as they were. The device's first run is interpreted, the next two
 * compiled (DLACCEL_OPENCL_FUSED), all with the same bits; y agrees with
 * the cpu plugin's single sum and y2 with its sum of the program cut
 * after register 0, within 1e-6 of the sums of magnitudes. supports()
 * answers the pair as it answers fused_reduce, and a struct_size that
 * ends before y2 (an ABI 1.3 caller) leaves y2 alone. */
static void a_fused_program_pair_sums_a_second_register_as_the_cpu_plugin(void **state)
{
    need_devices();
    enum { N0 = 2, N1 = 1500, N2 = 200, N = N0 * N1 * N2, SLOTS = 5 + 3 * N0 };
    double *host = test_malloc(N * sizeof *host);
    for (int64_t e = 0; e < N; e++)
        host[e] = tu_unit() * 6 - 2;
    float *single = test_malloc(N * sizeof *single);
    for (int64_t e = 0; e < N; e++)
        single[e] = (float)host[e];
    const double sentinel = 7777;
    for (int kind = 0; kind < 4; kind++) {
        const int layout = kind / 2, f64 = kind % 2;
        const dla_dtype t = f64 ? DLA_F64 : DLA_F32;
        const int single_ok =
            dla_device_table(ocl)->supports(dla_device_context(ocl), DLA_KERNEL_FUSED_REDUCE, t);
        assert_int_equal(dla_device_table(ocl)->supports(dla_device_context(ocl),
                                                         DLA_KERNEL_FUSED_REDUCE_PAIR, t) != 0,
                         single_ok != 0);
        if (!single_ok)
            continue;
        setenv("DLACCEL_OPENCL_FUSED_REDUCE", layout ? "lanes" : "runs", 1);
        const size_t es = f64 ? sizeof(double) : sizeof(float);
        const void *data = f64 ? (const void *)host : (const void *)single;
        char fill[SLOTS * sizeof(double)];
        for (int k = 0; k < SLOTS; k++)
            f64 ? (void)(((double *)fill)[k] = sentinel) : (void)(((float *)fill)[k] = sentinel);
        for (int op = 0; op < 2; op++) {
            /* [device][0: y, 1: y2, 2: |x - m| summed][run][output] */
            double got[2][3][3][N0], slots[SLOTS];
            for (int di = 0; di < 2; di++) {
                const dla_device *dev = di ? cpu : ocl;
                const dla_plugin *tb = dla_device_table(dev);
                dla_mem x;
                pair_run pr = {.es = es};
                assert_int_equal(tb->mem_alloc(dla_device_context(dev), N * es, &x), DLA_OK);
                assert_int_equal(tb->mem_alloc(dla_device_context(dev), N0 * es, &pr.y), DLA_OK);
                assert_int_equal(tb->mem_alloc(dla_device_context(dev), SLOTS * es, &pr.y2),
                                 DLA_OK);
                assert_int_equal(tb->copy_to_device(dla_device_context(dev), x, 0, data, N * es),
                                 DLA_OK);
                assert_int_equal(
                    tb->copy_to_device(dla_device_context(dev), pr.y2, 0, fill, SLOTS * es),
                    DLA_OK);
                dla_fused_reduce_args *r = &pr.r;
                centered_square_sum(r, t, op, x, 11, pr.y, N0, N1, N2);
                dla_fused_args *p = &r->program;
                r->y2 = r->y;
                r->y2.mem = pr.y2;
                r->y2.offset = 5;
                r->y2.strides[0] = 3;
                if (di == 0) {
                    r->reg2 = 0;
                    for (int run = 0; run < 3; run++) {
                        setenv("DLACCEL_OPENCL_FUSED", run ? "compile" : "interpret", 1);
                        assert_int_equal(tb->fused_reduce(dla_device_context(dev), r), DLA_OK);
                        pair_read(dev, &pr, N0, got[0][0][run], got[0][1][run], slots, SLOTS);
                        for (int k = 0; k < SLOTS; k++)
                            if ((k - 5) % 3 != 0 || k < 5)
                                assert_true(slots[k] == sentinel);
                    }
                    unsetenv("DLACCEL_OPENCL_FUSED");
                } else {
                    /* The cpu plugin's single sums: the program, the
                     * program cut after register 0, and |x - m|. */
                    dla_mem y2 = r->y2.mem;
                    r->y2.mem = NULL;
                    assert_int_equal(tb->fused_reduce(dla_device_context(dev), r), DLA_OK);
                    pair_read(dev, &pr, N0, got[1][0][0], NULL, NULL, 0);
                    p->ninsns = 1;
                    assert_int_equal(tb->fused_reduce(dla_device_context(dev), r), DLA_OK);
                    pair_read(dev, &pr, N0, got[1][1][0], NULL, NULL, 0);
                    p->ninsns = 2;
                    p->insns[1].op = DLA_UNARY_ABS;
                    assert_int_equal(tb->fused_reduce(dla_device_context(dev), r), DLA_OK);
                    pair_read(dev, &pr, N0, got[1][2][0], NULL, NULL, 0);
                    r->y2.mem = y2;
                }
                tb->mem_free(dla_device_context(dev), x);
                tb->mem_free(dla_device_context(dev), pr.y);
                tb->mem_free(dla_device_context(dev), pr.y2);
            }
            for (int w = 0; w < 2; w++) {
                assert_memory_equal(got[0][w][0], got[0][w][1], sizeof got[0][w][0]);
                assert_memory_equal(got[0][w][0], got[0][w][2], sizeof got[0][w][0]);
            }
            for (int o = 0; o < N0; o++) {
                const double mag[2] = {got[1][0][0][o], got[1][2][0][o]};
                for (int w = 0; w < 2; w++) {
                    assert_true(mag[w] > 0);
                    if (!(fabs(got[0][w][0][o] - got[1][w][0][o]) <= 1e-6 * mag[w]))
                        fail_msg("%s of the pair, %s %s in %s, output %d: opencl %.17g, cpu "
                                 "%.17g",
                                 w ? "y2" : "y", f64 ? "double" : "single",
                                 op ? "mean" : "sum", layout ? "lanes" : "runs", o,
                                 got[0][w][0][o], got[1][w][0][o]);
                }
            }
        }
    }
    unsetenv("DLACCEL_OPENCL_FUSED_REDUCE");
    test_free(single);
    test_free(host);
}

/* The pair's y2 checked as y is: the message names the argument, and an
 * ABI 1.3 struct_size never reads y2 (an overlapping one is fine). */
static void a_fused_program_pair_with_a_bad_y2_fails_naming_it(void **state)
{
    need_devices();
    const dla_plugin *t = dla_device_table(ocl);
    dla_mem x, y, y2;
    assert_int_equal(t->mem_alloc(dla_device_context(ocl), 64 * sizeof(float), &x), DLA_OK);
    assert_int_equal(t->mem_alloc(dla_device_context(ocl), 4 * sizeof(float), &y), DLA_OK);
    /* y2's memory holds 4 doubles, so the dtype is what is wrong below. */
    assert_int_equal(t->mem_alloc(dla_device_context(ocl), 4 * sizeof(double), &y2), DLA_OK);
    const float ones[64] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                            1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                            1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                            1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    assert_int_equal(t->copy_to_device(dla_device_context(ocl), x, 0, ones, sizeof ones), DLA_OK);
    const float marks[4] = {-5, -5, -5, -5};
    assert_int_equal(t->copy_to_device(dla_device_context(ocl), y2, 0, marks, sizeof marks),
                     DLA_OK);
    dla_fused_reduce_args good = {.struct_size = sizeof good, .op = DLA_REDUCE_SUM, .reg2 = 0};
    dla_fused_args *p = &good.program;
    p->struct_size = sizeof *p;
    p->dtype = DLA_F32;
    p->ninputs = 1;
    p->ninsns = 2;
    p->inputs[0] = (dla_view){.struct_size = sizeof(dla_view), .mem = x, .dtype = DLA_F32,
                              .ndims = 2, .dims = {4, 16}, .strides = {1, 4}};
    p->insns[0] = (dla_fused_insn){.kind = DLA_FUSED_UNARY, .op = DLA_UNARY_AFFINE, .src = {-1},
                                   .alpha = 2, .beta = 0};
    p->insns[1] = (dla_fused_insn){.kind = DLA_FUSED_UNARY, .op = DLA_UNARY_NEG, .src = {0}};
    p->y = p->inputs[0];
    good.y = (dla_view){.struct_size = sizeof(dla_view), .mem = y, .dtype = DLA_F32, .ndims = 2,
                        .dims = {4, 1}, .strides = {1, 4}};
    good.y2 = good.y;
    good.y2.mem = y2;
    static const struct {
        const char *what, *words;
        dla_status want;
    } bad[] = {{"reg2 past the program", "argument reg2", DLA_ERR_INVALID_ARGUMENT},
               {"y2 over y", "argument y2 (dims 4x1): overlaps y", DLA_ERR_INVALID_ARGUMENT},
               {"y2 over the input", "argument y2 (dims 4x1): overlaps program.inputs[0]",
                DLA_ERR_INVALID_ARGUMENT},
               {"y2 of other dims", "argument y2: dims 2x1 differ", DLA_ERR_SHAPE},
               {"y2 of another dtype", "argument y2 (dims 4x1): dtype", DLA_ERR_DTYPE}};
    for (int b = 0; b < 5; b++) {
        dla_fused_reduce_args r = good;
        if (b == 0)
            r.reg2 = 2;
        else if (b == 1)
            r.y2.mem = y;
        else if (b == 2)
            r.y2.mem = x;
        else if (b == 3)
            r.y2.dims[0] = 2;
        else
            r.y2.dtype = DLA_F64;
        dla_clear_error();
        if (t->fused_reduce(dla_device_context(ocl), &r) != bad[b].want ||
            !strstr(dla_last_error(), bad[b].words))
            fail_msg("%s: expected status %d and \"%s\", got \"%s\"", bad[b].what,
                     (int)bad[b].want, bad[b].words, dla_last_error());
    }
    /* An ABI 1.3 caller: its struct ends before reg2, so y2 (here over y)
     * is not read; y is the single sum, y2's buffer as it was. */
    dla_fused_reduce_args old = good;
    old.struct_size = offsetof(dla_fused_reduce_args, reg2);
    old.y2.mem = y;
    assert_int_equal(t->fused_reduce(dla_device_context(ocl), &old), DLA_OK);
    float got[4], left[4];
    assert_int_equal(t->copy_to_host(dla_device_context(ocl), got, y, 0, sizeof got), DLA_OK);
    assert_int_equal(t->copy_to_host(dla_device_context(ocl), left, y2, 0, sizeof left), DLA_OK);
    for (int o = 0; o < 4; o++) {
        assert_true(got[o] == -32);
        assert_true(left[o] == -5);
    }
    /* The good pair: y = sum(-2x) = -32, y2 = sum(2x) = 32. */
    assert_int_equal(t->fused_reduce(dla_device_context(ocl), &good), DLA_OK);
    assert_int_equal(t->copy_to_host(dla_device_context(ocl), left, y2, 0, sizeof left), DLA_OK);
    for (int o = 0; o < 4; o++)
        assert_true(left[o] == 32);
    t->mem_free(dla_device_context(ocl), x);
    t->mem_free(dla_device_context(ocl), y);
    t->mem_free(dla_device_context(ocl), y2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(a_trace_recorded_on_cpu_replays_on_opencl_within_tolerance),
        TU_TEST(a_trace_recorded_on_opencl_replays_on_cpu_within_tolerance),
        TU_TEST(planned_replays_on_opencl_give_eager_bits_and_run_fused_programs),
        TU_TEST(planned_replays_on_opencl_keep_several_results_per_launch_with_eager_bits),
        TU_TEST(planned_replays_on_opencl_draw_on_the_device_with_the_cpu_plugins_bits),
        TU_TEST(a_fused_program_gives_the_same_bits_interpreted_and_compiled),
        TU_TEST(a_fused_multi_program_stores_its_registers_interpreted_and_compiled),
        TU_TEST(a_fused_program_sums_as_the_cpu_plugin_interpreted_and_compiled),
        TU_TEST(a_fused_program_pair_sums_a_second_register_as_the_cpu_plugin),
        TU_TEST(a_fused_program_pair_with_a_bad_y2_fails_naming_it),
        TU_TEST(a_network_step_on_opencl_agrees_with_the_cpu_plugin),
        TU_TEST(tanh_saturates_at_one_as_on_the_cpu_plugin),
        TU_TEST(own_gemm_overflows_as_the_cpu_plugin),
        TU_TEST(scatter_add_into_a_long_table_agrees_with_the_cpu_plugin),
        TU_TEST(scatter_add_refuses_an_index_longer_than_int32),
        TU_TEST(reductions_with_no_outputs_give_empty_results),
    };
    return cmocka_run_group_tests(tests, group_setup, NULL);
}
