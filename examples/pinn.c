/*
 * pinn.c - a physics-informed network: second derivatives of a model with
 * respect to its input, inside an accelerated loss (MATLAB's "Solve
 * Partial Differential Equations Using Deep Learning", as a Poisson
 * problem on the line or the square):
 *
 *     laplacian(u) = -D pi^2 prod_d sin(pi x_d) on (0, 1)^D,  u = 0 on the boundary,
 *
 * whose solution is prod_d sin(pi x_d) (D = 1: u'' = -pi^2 sin(pi x),
 * u(0) = u(1) = 0). A tanh MLP u(x) is trained so that its Laplacian,
 * taken by automatic differentiation (dla_laplacian), matches the
 * right-hand side at random collocation points each iteration, and it is
 * 0 at boundary points (the loss, modelLoss, is in pinn_model.h). The
 * loss is dla_accelerate'd: the first call records the forward, the
 * recorded derivative sweeps and the gradient of the loss as one trace,
 * and every later call replays it. Prints the loss as it trains, the
 * largest error against the solution on a grid, the accelerated and eager
 * times per iteration, and checks that a replay gives the eager call's
 * bits.
 *
 * With --lbfgs it trains as MATLAB's PINN examples do with lbfgsupdate:
 * one fixed set of collocation points (a full batch: the line search
 * needs the same loss at every length it tries), dla_lbfgsupdate with the
 * same accelerated loss as its loss function, until the line search fails
 * or the gradient vanishes, and prints the iterations, the loss
 * evaluations, the error and the time.
 *
 *     build/examples/pinn [--iterations N] [--dims D] [--lbfgs]     (D = 1 or 2)
 *
 * (On the cube, D = 3, this small network at 64 points an iteration
 * stayed 0.08-0.11 off after 3000-6000 iterations: not offered.)
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include "example_args.h"
#include <dlaccel.h>
#include <dlaccel/nnops.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "example_clock.h"
#include "pinn_model.h"

#define HIDDEN PINN_HIDDEN
#define POINTS PINN_POINTS
#define NPARAMS PINN_NPARAMS

static const double PI = 3.14159265358979323846;

/* The problem's dimension (--dims). */
static int D = 1;

/* --lbfgs: the fixed collocation points, more than an Adam step's 64
 * since they are all the interior L-BFGS ever sees. */
#define LBFGS_POINTS 256

/* The solution, prod_d sin(pi x_d). */
static double solution(const float *x)
{
    double u = 1;
    for (int d = 0; d < D; d++)
        u *= sin(PI * x[d]);
    return u;
}

/* Collocation points, uniform on (0, 1)^D from a fixed host generator,
 * and the right-hand side at them. */
static unsigned long long rng = 0x9e3779b97f4a7c15ull;
static double uniform(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(rng >> 11) + 0.5) / 9007199254740992.0;
}

/* n of them, n <= LBFGS_POINTS. */
static void collocation_n(int n, dla_tensor **x, dla_tensor **f)
{
    float xs[2 * LBFGS_POINTS], fs[LBFGS_POINTS];
    for (int i = 0; i < n; i++) {
        for (int d = 0; d < D; d++)
            xs[D * i + d] = (float)uniform();
        fs[i] = (float)(-D * PI * PI * solution(xs + D * i));
    }
    *x = dla_tensor_from_host(xs, DLA_F32, "CB", DLA_DIMS(D, n));
    *f = dla_tensor_from_host(fs, DLA_F32, "CB", DLA_DIMS(1, n));
}

static void collocation(dla_tensor **x, dla_tensor **f) { collocation_n(POINTS, x, f); }

/* Boundary points: both ends (D = 1), or 16 points on each of the
 * square's 4 sides, drawn once. */
static dla_tensor *boundary_points(void)
{
    if (D == 1)
        return dla_tensor_from_host((const float[]){0, 1}, DLA_F32, "CB", DLA_DIMS(1, 2));
    enum { PER_FACE = 16 };
    float xs[2 * 4 * PER_FACE];
    int n = 0;
    for (int face = 0; face < 2 * D; face++)
        for (int i = 0; i < PER_FACE; i++, n++)
            for (int d = 0; d < D; d++)
                xs[D * n + d] = d == face / 2 ? (float)(face % 2) : (float)uniform();
    return dla_tensor_from_host(xs, DLA_F32, "CB", DLA_DIMS(D, n));
}

/* Glorot-uniform weights (MATLAB's default for fullyconnect), +1. */
static dla_tensor *glorot(int64_t out, int64_t in)
{
    const double a = sqrt(6.0 / (double)(out + in));
    dla_scope_begin();
    dla_tensor *w = dla_tensor_retain(dla_affine(dla_rand(DLA_F32, "", DLA_DIMS(out, in)),
                                                 2.0 * a, -a));
    dla_scope_end();
    return w;
}

/* The largest |u(x) - solution(x)| over a grid of [0, 1]^D: 101 points
 * (D = 1), 21 x 21. */
static double max_error(dla_tensor *const *p)
{
    const int side = D == 1 ? 101 : 21;
    int n = 1;
    for (int d = 0; d < D; d++)
        n *= side;
    float *xs = malloc(sizeof(float) * (size_t)(D * n)), *us = malloc(sizeof(float) * (size_t)n);
    if (!xs || !us) {
        free(xs);
        free(us);
        return NAN;
    }
    for (int i = 0; i < n; i++)
        for (int d = 0, r = i; d < D; d++, r /= side)
            xs[D * i + d] = (float)(r % side) / (float)(side - 1);
    dla_scope_begin();
    dla_tensor *u = pinn_model(p, dla_tensor_from_host(xs, DLA_F32, "CB", DLA_DIMS(D, n)));
    dla_status st = dla_tensor_to_host(u, us, sizeof(float) * (size_t)n);
    dla_scope_end();
    double worst = st == DLA_OK ? 0 : NAN;
    /* Not fmax: it would drop a NaN prediction and report a small error. */
    for (int i = 0; st == DLA_OK && i < n && !isnan(worst); i++) {
        double err = fabs(us[i] - solution(xs + D * i));
        if (!(err <= worst))
            worst = err;
    }
    free(xs);
    free(us);
    return worst;
}

static int fail(const char *what)
{
    fprintf(stderr, "pinn: %s: %s\n", what, dla_last_error());
    return 1;
}

/* One Adam step at learning rate lr of the loss, accelerated or eager;
 * the loss in *loss. */
typedef struct trainer {
    dla_accel *af;
    dla_tensor *p[NPARAMS], *avg[NPARAMS], *avg_sq[NPARAMS], *x0;
    int iteration;
    dla_tensor *x, *f; /* --lbfgs: the fixed collocation points */
} trainer;

static dla_status step(trainer *t, int accelerated, double lr, double *loss)
{
    dla_scope_begin();
    dla_tensor *x, *f, *out[1 + NPARAMS];
    collocation(&x, &f);
    dla_tensor *in[NPARAMS + 3];
    memcpy(in, t->p, sizeof t->p);
    in[NPARAMS] = x, in[NPARAMS + 1] = f, in[NPARAMS + 2] = t->x0;
    dla_status st = accelerated ? dla_accel_feval(t->af, NULL, NPARAMS + 3, in, 1 + NPARAMS, out)
                                : dla_feval(pinn_loss, NULL, NPARAMS + 3, in, 1 + NPARAMS, out);
    if (st == DLA_OK)
        st = dla_adamupdate(NPARAMS, t->p, out + 1, t->avg, t->avg_sq, ++t->iteration, lr,
                            DLA_ADAM_GRAD_DECAY, DLA_ADAM_SQ_GRAD_DECAY, DLA_ADAM_EPSILON);
    if (st == DLA_OK)
        *loss = dla_tensor_item(out[0], 0);
    dla_scope_end();
    return st;
}

/* dla_lbfgsupdate's loss function: the accelerated modelLoss at the point
 * it tries (p) on the fixed points; out[0] the loss, out[1..] the
 * gradients, as dla_accel_feval gives them. */
static dla_status lbfgs_loss(void *ctx, int n, dla_tensor *const *p, int nout, dla_tensor **out)
{
    const trainer *t = ctx;
    dla_tensor *in[NPARAMS + 3];
    memcpy(in, p, sizeof *in * (size_t)n);
    in[NPARAMS] = t->x, in[NPARAMS + 1] = t->f, in[NPARAMS + 2] = t->x0;
    return dla_accel_feval(t->af, NULL, NPARAMS + 3, in, nout, out);
}

/* --lbfgs: L-BFGS iterations (MATLAB's lbfgsState defaults) until the
 * line search fails (the loss can go no lower in single precision) or the
 * gradient vanishes, at most max; the iterations made in *its. */
static dla_status train_lbfgs(trainer *t, int max, int *its, int64_t *evaluations)
{
    dla_lbfgs_state *s = dla_lbfgs_state_create(NULL);
    if (!s)
        return dla_last_status();
    dla_status st = DLA_OK;
    dla_lbfgs_info in = {0};
    *its = 0;
    for (int it = 1; it <= max && st == DLA_OK; it++) {
        st = dla_lbfgsupdate(NPARAMS, t->p, lbfgs_loss, t, s);
        if (st != DLA_OK)
            break;
        dla_lbfgs_state_info(s, &in);
        *its = it;
        int done = !strcmp(in.line_search_status, "failed") || in.gradients_norm < 1e-7;
        if (it == 1 || it % 100 == 0 || it == max || done)
            printf("iteration %d: loss %.6f, gradient norm %.2e, error %.4f\n", it, in.loss,
                   in.gradients_norm, max_error(t->p));
        if (done) {
            printf("stopped: line search %s, gradient norm %.2e\n", in.line_search_status,
                   in.gradients_norm);
            break;
        }
        if (it == max)
            printf("stopped: at the limit of %d iterations, line search %s, gradient norm %.2e\n",
                   max, in.line_search_status, in.gradients_norm);
    }
    *evaluations = in.evaluations;
    dla_lbfgs_state_free(s);
    return st;
}

/* The loss and gradients of one batch, accelerated (a replay) and eager:
 * the same bits. */
static int replay_matches_eager(trainer *t)
{
    dla_scope_begin();
    dla_tensor *x, *f, *a[1 + NPARAMS], *e[1 + NPARAMS], *in[NPARAMS + 3];
    collocation(&x, &f);
    memcpy(in, t->p, sizeof t->p);
    in[NPARAMS] = x, in[NPARAMS + 1] = f, in[NPARAMS + 2] = t->x0;
    int same = dla_accel_feval(t->af, NULL, NPARAMS + 3, in, 1 + NPARAMS, a) == DLA_OK &&
               dla_feval(pinn_loss, NULL, NPARAMS + 3, in, 1 + NPARAMS, e) == DLA_OK;
    for (int i = 0; same && i < 1 + NPARAMS; i++) {
        const int64_t n = dla_tensor_numel(e[i]);
        float *ha = malloc(sizeof(float) * (size_t)n), *he = malloc(sizeof(float) * (size_t)n);
        same = ha && he && dla_tensor_to_host(a[i], ha, sizeof(float) * (size_t)n) == DLA_OK &&
               dla_tensor_to_host(e[i], he, sizeof(float) * (size_t)n) == DLA_OK &&
               memcmp(ha, he, sizeof(float) * (size_t)n) == 0;
        free(ha);
        free(he);
    }
    dla_scope_end();
    return same;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median time of rounds of n steps, per step, in ms. */
static double time_steps(trainer *t, int accelerated, int n)
{
    double r[5], loss;
    for (int k = 0; k < 5; k++) {
        const double t0 = now();
        for (int i = 0; i < n; i++)
            if (step(t, accelerated, 0.001, &loss) != DLA_OK)
                return NAN;
        r[k] = (now() - t0) * 1e3 / n;
    }
    qsort(r, 5, sizeof *r, cmp_double);
    return r[2];
}

int main(int argc, char **argv)
{
    int iterations = 0, lbfgs = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iterations") && i + 1 < argc) {
            if (!example_int32("pinn", "--iterations", argv[++i], 1, 100000000, &iterations))
                return 2;
        } else if (!strcmp(argv[i], "--dims") && i + 1 < argc) {
            if (!example_int32("pinn", "--dims", argv[++i], 1, 2, &D))
                return 2;
        } else if (!strcmp(argv[i], "--lbfgs")) {
            lbfgs = 1;
        } else
            return example_usage(argv[0], "[--iterations N] [--dims D] [--lbfgs]", argv[i]);
    }
    /* Adam: 3000 steps; L-BFGS: at most 2000 iterations (it stops by
     * itself well before on the line). */
    iterations = iterations ? iterations : lbfgs ? 2000 : 3000;
    dla_device *dev = dla_device_current();
    if (!dev)
        return fail("device");
    printf("device: %s (%s)\n", dla_device_name(dev), dla_device_description(dev));
    if (D == 1)
        printf("u''(x) = -pi^2 sin(pi x) on (0, 1), u(0) = u(1) = 0");
    else
        printf("laplacian(u) = -%d pi^2 prod sin(pi x_d) on (0, 1)^%d, u = 0 on the boundary", D,
               D);
    if (lbfgs)
        printf(": an MLP %d-%d-%d-1 with tanh, %d fixed collocation points, L-BFGS (history 10, "
               "weak Wolfe line search)\n",
               D, HIDDEN, HIDDEN, LBFGS_POINTS);
    else
        printf(": an MLP %d-%d-%d-1 with tanh, %d collocation points an iteration, Adam lr 0.01 "
               "(0.001 for the last third)\n",
               D, HIDDEN, HIDDEN, POINTS);

    dla_rng_seed(7);
    trainer t = {0};
    t.p[0] = glorot(HIDDEN, D), t.p[1] = dla_zeros(DLA_F32, "", DLA_DIMS(HIDDEN, 1));
    t.p[2] = glorot(HIDDEN, HIDDEN), t.p[3] = dla_zeros(DLA_F32, "", DLA_DIMS(HIDDEN, 1));
    t.p[4] = glorot(1, HIDDEN), t.p[5] = dla_zeros(DLA_F32, "", DLA_DIMS(1, 1));
    t.x0 = boundary_points();
    t.af = dla_accelerate(pinn_loss, &(dla_accel_options){.name = "modelLoss"});
    for (int i = 0; i < NPARAMS; i++)
        if (dla_tensor_status(t.p[i]) != DLA_OK)
            return fail("parameters");
    if (!t.af || dla_tensor_status(t.x0) != DLA_OK)
        return fail("setup");

    printf("error before training: %.4f (largest |u(x) - prod sin(pi x_d)| on a grid)\n",
           max_error(t.p));
    const double t0 = now();
    int trained = iterations;
    int64_t evaluations = 0;
    if (lbfgs) {
        collocation_n(LBFGS_POINTS, &t.x, &t.f);
        t.x = dla_keep(t.x), t.f = dla_keep(t.f);
        if (train_lbfgs(&t, iterations, &trained, &evaluations) != DLA_OK)
            return fail("L-BFGS");
    }
    for (int it = 1; !lbfgs && it <= iterations; it++) {
        /* Adam's steps keep the loss jumping about at 0.01: the last
         * third at a tenth of it settles. */
        double loss, lr = it <= iterations - iterations / 3 ? 0.01 : 0.001;
        if (step(&t, 1, lr, &loss) != DLA_OK)
            return fail("training step");
        if (it == 1 || it % 500 == 0 || it == iterations)
            printf("iteration %d: loss %.6f, error %.4f\n", it, loss, max_error(t.p));
    }
    const double elapsed = now() - t0;
    const double err = max_error(t.p);
    printf("trained %d iterations in %.2f s; largest error against the solution: %.4f\n",
           trained, elapsed, err);
    if (lbfgs)
        printf("L-BFGS: %lld loss evaluations (%.2f an iteration), %.3f ms an iteration\n",
               (long long)evaluations, (double)evaluations / trained, elapsed * 1e3 / trained);
    char desc[512];
    dla_accel_describe(t.af, desc, sizeof desc);
    printf("\naccfun =\n\n%s\n", desc);
    printf("replay equals the eager call, bit for bit: %s\n",
           replay_matches_eager(&t) ? "yes" : "NO");
    if (!lbfgs) {
        const double acc = time_steps(&t, 1, 50), eager = time_steps(&t, 0, 50);
        printf("time per iteration (median of 5 rounds of 50): accelerated %.3f ms, eager %.3f ms "
               "(%.1fx)\n",
               acc, eager, eager / acc);
    }
    dla_optim_free(NPARAMS, t.avg);
    dla_optim_free(NPARAMS, t.avg_sq);
    for (int i = 0; i < NPARAMS; i++)
        dla_tensor_release(t.p[i]);
    dla_tensor_release(t.x0);
    dla_tensor_release(t.x);
    dla_tensor_release(t.f);
    dla_accel_free(t.af);
    return err < 0.05 ? 0 : 1;
}
