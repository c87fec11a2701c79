/*
 * neural_ode.c - a neural ODE learns a dynamical system from its
 * trajectory (MATLAB's "Dynamical System Modeling Using Neural ODE", with
 * its sizes and settings).
 *
 * The system is x' = A x with A = [-0.1 -1; 1 -0.1], a spiral into the
 * origin; its trajectory from x0 = [2; 0] over t in [0, 15], sampled at
 * 2000 times, is the training data (made here by dla_ode45 at relative
 * tolerance 1e-7, as the page makes it with ode45). The model is
 * x' = W2 tanh(W1 x + b1) + b2 with 20 hidden units: each iteration draws
 * 200 starting points of the trajectory, solves the model from them over
 * the next 40 sample times with dla_ode45, and fits those 40 states with
 * an L1 loss, through Adam (learning rate 0.002) for 1200 iterations.
 *
 * Then it solves both systems from four other starting points over the
 * whole 15 s and prints the mean absolute error of each prediction.
 *
 *     build/examples/neural_ode [--iterations N] [--accelerate] [--adjoint]
 *
 * --adjoint takes the gradients by the adjoint method (GradientMode
 * "adjoint") instead of through the solver's operations: the tape keeps
 * one node for the solve, and the gradient solves the adjoint system
 * backwards in time.
 *
 * --accelerate runs the loss through dla_accelerate. Its trace is
 * data-dependent (the solver reads its error norms on the host to choose
 * its steps), so every replay repeats the steps of the recorded call, with
 * their sizes, instead of choosing its own: a fixed-step solve on the
 * recorded grid, which trains as well here but is not the eager result.
 * The example prints the time per iteration and what the solver did.
 *
 * Exits 1 when the mean error of the predictions is above 0.2.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "example_args.h"
#include <dlaccel.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_clock.h"

enum {
    SAMPLES = 2000,  /* numTimeSteps */
    HORIZON = 40,    /* neuralOdeTimesteps: the times each observation fits */
    BATCH = 200,     /* miniBatchSize */
    HIDDEN = 20,     /* hiddenSize */
    NPARAMS = 4,     /* W1, b1, W2, b2 */
};
static const double T_END = 15;

/* x' = A x, the system the data come from. */
static dla_tensor *true_model(double t, dla_tensor *x, int n, dla_tensor *const *theta, void *ctx)
{
    (void)t, (void)n, (void)ctx;
    return dla_mtimes(theta[0], x);
}

/* The neural ODE's right-hand side (the page's odeModel). */
static dla_tensor *ode_model(double t, dla_tensor *x, int n, dla_tensor *const *p, void *ctx)
{
    (void)t, (void)n, (void)ctx;
    return dla_fullyconnect(dla_tanh(dla_fullyconnect(x, p[0], p[1])), p[2], p[3]);
}

/* The sample times, t_k = k * 15 / 1999. */
static double sample_time(int k) { return T_END * k / (SAMPLES - 1); }

/* y' = fn(t, y, theta) solved from x0 (2 values) at the sample times
 * 1..n-1 into xs[2 * (n - 1)], column k - 1 the state at t_k. */
static dla_status solve(dla_ode_function fn, int ntheta, dla_tensor *const *theta, double rtol,
                        const float *x0, int n, float *xs)
{
    double *ts = malloc(sizeof(double) * (size_t)n);
    if (!ts)
        return DLA_ERR_OUT_OF_MEMORY;
    for (int k = 0; k < n; k++)
        ts[k] = sample_time(k);
    dla_scope_begin();
    dla_tensor *y0 = dla_tensor_from_host(x0, DLA_F32, "CB", DLA_DIMS(2, 1));
    dla_ode_options o = {.relative_tolerance = rtol};
    dla_tensor *y = dla_ode45(fn, NULL, n, ts, y0, ntheta, theta, &o);
    dla_status st = dla_tensor_to_host(y, xs, sizeof(float) * 2 * (size_t)(n - 1));
    dla_scope_end();
    free(ts);
    return st;
}

/* The true system from x0, at relative tolerance 1e-7 (the page's). */
static dla_status true_trajectory(const float *x0, int n, float *xs)
{
    static const float a[4] = {-0.1f, 1, -1, -0.1f}; /* column-major A */
    dla_scope_begin();
    dla_tensor *A = dla_tensor_from_host(a, DLA_F32, "", DLA_DIMS(2, 2));
    dla_status st = solve(true_model, 1, &A, 1e-7, x0, n, xs);
    dla_scope_end();
    return st;
}

/* The model from x0, at the default tolerances. */
static dla_status predict(dla_tensor *const *p, const float *x0, int n, float *xs)
{
    return solve(ode_model, NPARAMS, p, 0, x0, n, xs);
}

/* The page's modelLoss: in = {W1, b1, W2, b2, x0 (2 x 200 "CB"), targets
 * (2 x 200 x 40 "CBT")}; out = {loss, the four gradients}. The times are
 * the first HORIZON + 1 sample times: the system does not depend on t.
 * ctx: the solver's options (its statistics, the gradient mode). */
static dla_status model_loss(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    double ts[HORIZON + 1];
    for (int k = 0; k <= HORIZON; k++)
        ts[k] = sample_time(k);
    const dla_ode_options o = *(const dla_ode_options *)ctx;
    dla_tensor *x = dla_ode45(ode_model, NULL, HORIZON + 1, ts, in[4], NPARAMS, in, &o);
    out[0] = dla_l1loss(x, in[5],
                        &(dla_regression_loss_options){.normalization_factor = "all-elements"});
    return dla_gradient(out[0], NPARAMS, in, out + 1);
}

/* Glorot-uniform weights (MATLAB's initializeGlorot), +1. */
static dla_tensor *glorot(int64_t out, int64_t in)
{
    const double a = sqrt(6.0 / (double)(out + in));
    dla_scope_begin();
    dla_tensor *w =
        dla_tensor_retain(dla_affine(dla_rand(DLA_F32, "", DLA_DIMS(out, in)), 2.0 * a, -a));
    dla_scope_end();
    return w;
}

static unsigned long long rng = 0x2545f4914f6cdd1dull;
static int draw(int n)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (int)((rng >> 33) % (unsigned long long)n);
}

/* A mini-batch: BATCH distinct starting samples s (the page's randperm)
 * of the trajectory xt (2 x SAMPLES, column k at t_k), x0 = xt(:, s) and
 * the targets xt(:, s + 1..s + HORIZON). */
static void mini_batch(const float *xt, float *x0, float *targets)
{
    int taken[SAMPLES - HORIZON] = {0};
    for (int b = 0; b < BATCH; b++) {
        int s;
        do
            s = draw(SAMPLES - HORIZON);
        while (taken[s]);
        taken[s] = 1;
        memcpy(x0 + 2 * b, xt + 2 * s, 2 * sizeof(float));
        for (int k = 0; k < HORIZON; k++)
            memcpy(targets + 2 * (b + BATCH * k), xt + 2 * (s + 1 + k), 2 * sizeof(float));
    }
}

static int fail(const char *what)
{
    fprintf(stderr, "neural_ode: %s: %s\n", what, dla_last_error());
    return 1;
}

int main(int argc, char **argv)
{
    int iterations = 1200, accelerate = 0, adjoint = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iterations") && i + 1 < argc) {
            if (!example_int32("neural_ode", "--iterations", argv[++i], 1, 100000000, &iterations))
                return 2;
        } else if (!strcmp(argv[i], "--accelerate")) {
            accelerate = 1;
        } else if (!strcmp(argv[i], "--adjoint")) {
            adjoint = 1;
        } else
            return example_usage(argv[0], "[--iterations N] [--accelerate] [--adjoint]", argv[i]);
    }
    dla_device *dev = dla_device_current();
    printf("device: %s (%s)\n", dev ? dla_device_name(dev) : "none",
           dev ? dla_device_description(dev) : dla_last_error());

    /* The training data: the trajectory from [2; 0], 2000 samples. */
    static float xt[2 * SAMPLES], x0[2 * BATCH], targets[2 * BATCH * HORIZON];
    xt[0] = 2, xt[1] = 0;
    double t0 = now();
    if (true_trajectory(xt, SAMPLES, xt + 2) != DLA_OK)
        return fail("the training trajectory");
    printf("training data: x' = A x from [2; 0] at %d times in [0, %g] (%.3f s)\n", SAMPLES,
           T_END, now() - t0);

    dla_rng_seed(0);
    dla_tensor *p[NPARAMS] = {glorot(HIDDEN, 2), dla_zeros(DLA_F32, "", DLA_DIMS(HIDDEN, 1)),
                              glorot(2, HIDDEN), dla_zeros(DLA_F32, "", DLA_DIMS(2, 1))};
    dla_tensor *avg[NPARAMS] = {0}, *avg_sq[NPARAMS] = {0};
    dla_accel *af =
        accelerate ? dla_accelerate(model_loss, &(dla_accel_options){.name = "modelLoss"}) : NULL;
    dla_ode_stats stats = {0};
    dla_ode_options solver = {.stats = &stats, .gradient_mode = adjoint ? "adjoint" : "direct"};
    if (accelerate && !af)
        return fail("dla_accelerate");

    printf("training %d iterations, mini-batches of %d states fitted over the next %d times, "
           "gradients %s%s\n",
           iterations, BATCH, HORIZON, solver.gradient_mode, accelerate ? ", accelerated" : "");
    double loss = NAN, first_call = 0;
    t0 = now();
    for (int it = 1; it <= iterations; it++) {
        const double ti = now();
        dla_scope_begin();
        mini_batch(xt, x0, targets);
        dla_tensor *in[NPARAMS + 2], *out[1 + NPARAMS];
        memcpy(in, p, sizeof p);
        in[NPARAMS] = dla_tensor_from_host(x0, DLA_F32, "CB", DLA_DIMS(2, BATCH));
        in[NPARAMS + 1] = dla_tensor_from_host(targets, DLA_F32, "CBT", DLA_DIMS(2, BATCH, HORIZON));
        dla_status st = af ? dla_accel_feval(af, &solver, NPARAMS + 2, in, 1 + NPARAMS, out)
                           : dla_feval(model_loss, &solver, NPARAMS + 2, in, 1 + NPARAMS, out);
        if (st == DLA_OK)
            st = dla_adamupdate(NPARAMS, p, out + 1, avg, avg_sq, it, 0.002, 0.9, 0.999, 1e-8);
        if (st == DLA_OK)
            loss = dla_tensor_item(out[0], 0);
        dla_scope_end();
        if (st != DLA_OK)
            return fail("an iteration");
        if (it == 1)
            first_call = now() - ti;
        if (it == 1 || it % 50 == 0 || it == iterations)
            printf("iteration %4d: loss %.5f  (%.1f s)\n", it, loss, now() - t0);
    }
    const double per_it = iterations > 1 ? (now() - t0 - first_call) / (iterations - 1) : first_call;
    printf("time per iteration: %.2f ms (the first, %s: %.2f ms); peak memory %.0f MiB\n",
           per_it * 1e3, accelerate ? "recording the trace" : "eager", first_call * 1e3,
           peak_rss_mib());
    printf("the solver, %s: %lld steps over the %d times, %lld rejected, %lld evaluations\n",
           !af        ? "in the last iteration's forward solve"
           : !adjoint ? "in the recorded call (every replay repeats its steps)"
                      : "in the recorded call (each replay's forward solve chooses its own)",
           (long long)stats.steps, HORIZON, (long long)stats.failed, (long long)stats.evaluations);
    if (af) {
        char buf[512];
        dla_accel_describe(af, buf, sizeof buf);
        printf("%s\n", buf);
    }

    /* The page's four test starts, over the whole horizon. */
    static const float starts[4][2] = {{1.41421356f, 1.41421356f}, {-1, -1.5f}, {0, 2}, {-2, 0}};
    static float want[2 * (SAMPLES - 1)], got[2 * (SAMPLES - 1)];
    double worst = 0;
    for (int s = 0; s < 4; s++) {
        if (true_trajectory(starts[s], SAMPLES, want) != DLA_OK ||
            predict(p, starts[s], SAMPLES, got) != DLA_OK)
            return fail("a prediction");
        double sum = 0;
        for (int i = 0; i < 2 * (SAMPLES - 1); i++)
            sum += fabs(got[i] - want[i]);
        const double mae = sum / (2 * (SAMPLES - 1));
        worst = fmax(worst, mae);
        printf("prediction from [%g; %g] over [0, %g]: mean absolute error %.4f\n", starts[s][0],
               starts[s][1], T_END, mae);
    }
    for (int i = 0; i < NPARAMS; i++)
        dla_tensor_release(p[i]), dla_tensor_release(avg[i]), dla_tensor_release(avg_sq[i]);
    dla_accel_free(af);
    return worst <= 0.2 ? 0 : 1;
}
