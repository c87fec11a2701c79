/*
 * workloads_slice.c - the slicing backward of issue 3 (a MATLAB Answers
 * complaint: 68% of a custom layer's backward went to an accumarray in the
 * indexing backward).
 *
 * X (64x64x16x30 "SSCB") is reshaped to 64x64x16x3x10, its three slices
 * along dim 4 are taken (views), and
 *     out = conv(Z1 - Z0, wA) + Z1 + conv(Z1 - Z2, wB)
 * with channel-wise separable 3x3 convolutions, padding "same"; the loss is
 * sum(out .* G) for a fixed G, as ../shared/peers/slice_backward.py does
 * with out.backward(G) (PyTorch 1.13: backward 11.15 ms; the traffic floor
 * of dX, reading three slice gradients and writing dX once, is 0.59 ms).
 *
 * Workloads (each table line is the whole dla_feval call):
 *   slice_forward  the forward, recorded inside dla_feval, no gradient
 *   slice_step     forward + gradients of X, wA, wB
 *   slice_leaves   forward + gradients of the three slices, wA, wB: the
 *                  same work without the slicing backward
 *   slice_forward_f64, slice_step_f64
 *                  the first two in double, as the MATLAB layer runs;
 *                  each prints its median against that of the same
 *                  workload in single when that ran before it in the
 *                  process (`--workload slice_step` runs both; issue 19:
 *                  double at most 2.5x single). They run one after the
 *                  other, not call by call: interleaved, the two working
 *                  sets (a dozen large blocks each, of different sizes)
 *                  would both have to fit the cpu plugin's cache of freed
 *                  blocks, or every call pays fresh pages, double most
 *                  (measured when that cache held 16 blocks under a fixed
 *                  cap: the double step at about 4x its own time alone).
 * Each prints to stderr, when it is torn down, what the table cannot show:
 * the median forward and backward times measured inside the step, the
 * median page faults of a call (what fresh memory costs: a block the cpu
 * plugin's cache of freed blocks did not hold is faulted in page by page),
 * and the
 * high-water mark of resident memory over one step (from a fresh process
 * state, so it counts every buffer the step makes). slice_leaves then
 * prints the slicing backward's cost (backward of slice_step minus that of
 * slice_leaves, at the medians and at the minima, which a busy shared
 * machine disturbs least) against the floor: one copy of X's bytes at the
 * host's memcpy speed, measured there and then. The peak memory counts
 * every buffer of the first step only when no big workload ran before it
 * in the process (the cpu plugin keeps freed large blocks for reuse): run
 * one workload at a time for that figure.
 *
 * DLACCEL_BENCH_SLICE_FULL=1 runs the same workloads at the full size of
 * the complaint, 256x256x64x30 (X is 480 MiB; about 3 GiB in all).
 */
#define _GNU_SOURCE /* secure_getenv */
#include "bench/timer.h"
#include "bench/workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

enum { SAMPLES = 4096 };

typedef struct slice_state {
    int64_t h, w, c, b; /* X is h x w x c x b, b = 3 x observations */
    dla_tensor *x, *wa, *wb, *g;
    int mode; /* 0 forward only, 1 gradient of X, 2 gradient of the slices */
    dla_dtype dt;
    double fwd[SAMPLES], bwd[SAMPLES], all[SAMPLES], faults[SAMPLES];
    int n;
    double peak_mib;
} slice_state;

static int full_size(void)
{
    const char *v = secure_getenv("DLACCEL_BENCH_SLICE_FULL");
    return v && *v && strcmp(v, "0") != 0;
}

/* The layer, as the MATLAB custom layer writes it; in[0..3] = X, wA, wB, G.
 * z[0..2] receive the three slices as the convolutions see them. */
static dla_tensor *layer(const slice_state *s, dla_tensor *const *in, dla_tensor **z)
{
    int64_t obs = s->b / 3;
    dla_tensor *zz = dla_reshape(in[0], "", DLA_DIMS(s->h, s->w, s->c, 3, obs));
    for (int t = 0; t < 3; t++)
        z[t] = dla_reshape(dla_slice(zz, 4, t, 1, t + 1), "SSCB", DLA_DIMS(s->h, s->w, s->c, obs));
    dla_conv_options same = {.padding_mode = "same"};
    dla_tensor *out = dla_conv(dla_sub(z[1], z[0]), in[1], NULL, &same);
    out = dla_add(out, z[1]);
    return dla_add(out, dla_conv(dla_sub(z[1], z[2]), in[2], NULL, &same));
}

/* Page faults this process took so far (first touches of fresh pages: a
 * block the cpu plugin's cache did not hold faults in every page). */
static double minor_faults(void)
{
    struct rusage ru;
    return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_minflt : 0;
}

static dla_status slice_fn(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin;
    (void)nout;
    slice_state *s = ctx;
    double f0 = minor_faults();
    double t0 = bench_now();
    dla_tensor *z[3];
    dla_tensor *loss = dla_sum(dla_mul(layer(s, in, z), in[3]), 0, NULL);
    out[0] = loss;
    dla_status st = dla_tensor_status(loss);
    if (st == DLA_OK)
        st = dla_device_sync(dla_tensor_device(loss));
    double t1 = bench_now();
    if (st == DLA_OK && s->mode == 1)
        st = dla_gradient(loss, 3, in, out + 1);
    else if (st == DLA_OK && s->mode == 2)
        st = dla_gradient(loss, 5, (dla_tensor *[]){z[0], z[1], z[2], in[1], in[2]}, out + 1);
    if (st == DLA_OK && s->mode)
        st = dla_device_sync(dla_tensor_device(loss));
    double t2 = bench_now();
    if (s->n < SAMPLES) {
        s->fwd[s->n] = (t1 - t0) * 1e3;
        s->bwd[s->n] = (t2 - t1) * 1e3;
        s->all[s->n] = (t2 - t0) * 1e3;
        s->faults[s->n] = minor_faults() - f0;
        s->n++;
    }
    return st;
}

static dla_status slice_run(void *state)
{
    slice_state *s = state;
    dla_tensor *out[6];
    int nout = s->mode == 0 ? 1 : s->mode == 1 ? 4 : 6;
    dla_scope_begin();
    /* The results belong to the scope: released at its end. */
    dla_status st = dla_feval(slice_fn, s, 4, (dla_tensor *[]){s->x, s->wa, s->wb, s->g}, nout, out);
    dla_scope_end();
    return st;
}

/* Resident and high-water-mark memory of this process, MiB. */
static void rss_mib(double *rss, double *hwm)
{
    *rss = *hwm = 0;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        long kb;
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            *rss = kb / 1024.0;
        else if (sscanf(line, "VmHWM: %ld kB", &kb) == 1)
            *hwm = kb / 1024.0;
    }
    fclose(f);
}

/* Starts a new high-water mark at the current resident size. */
static int reset_hwm(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return 0;
    int ok = fputs("5", f) >= 0;
    return fclose(f) == 0 && ok;
}

static void slice_teardown(void *state);

static dla_status slice_setup(const bench_workload *wl, void **state)
{
    slice_state *s = calloc(1, sizeof *s);
    if (!s)
        return DLA_ERR_OUT_OF_MEMORY;
    *state = s;
    int full = full_size();
    s->h = s->w = full ? 256 : 64;
    s->c = full ? 64 : 16;
    s->b = 30;
    /* size: the mode, plus 10 for double */
    s->mode = (int)(wl->size % 10);
    s->dt = wl->size >= 10 ? DLA_F64 : DLA_F32;
    dla_rng_seed(7);
    dla_scope_begin();
    s->x = dla_keep(dla_randn(s->dt, "SSCB", DLA_DIMS(s->h, s->w, s->c, s->b)));
    /* channel-wise separable: 3x3 x 1 channel per group x 1 filter x c groups */
    s->wa = dla_keep(dla_affine(dla_randn(s->dt, "", DLA_DIMS(3, 3, 1, 1, s->c)), 0.1, 0));
    s->wb = dla_keep(dla_affine(dla_randn(s->dt, "", DLA_DIMS(3, 3, 1, 1, s->c)), 0.1, 0));
    s->g = dla_keep(dla_randn(s->dt, "SSCB", DLA_DIMS(s->h, s->w, s->c, s->b / 3)));
    dla_scope_end();
    dla_status st = dla_tensor_status(s->g);
    if (st == DLA_OK)
        st = dla_device_sync(dla_tensor_device(s->g));
    /* The memory of one step, from the first step: it allocates every
     * buffer it uses (a later step reuses the cpu plugin's cached blocks,
     * and so would a step after another big workload in this process: run
     * the workload alone for an exact figure). */
    double rss0, rss1, hwm;
    rss_mib(&rss0, &hwm);
    int reset = reset_hwm();
    if (st == DLA_OK)
        st = slice_run(s);
    rss_mib(&rss1, &hwm);
    s->peak_mib = reset ? hwm - rss0 : -1;
    s->n = 0;
    if (st != DLA_OK) {
        slice_teardown(s);
        *state = NULL;
    }
    return st;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    if (n == 0)
        return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The floor of dX: one copy of X's bytes (read the slice gradients, write
 * dX), at the host's memcpy speed, median of 9. */
static double floor_ms(size_t bytes)
{
    char *src = malloc(bytes), *dst = malloc(bytes);
    if (!src || !dst) {
        free(src);
        free(dst);
        return 0;
    }
    memset(src, 1, bytes);
    memset(dst, 0, bytes);
    double t[9];
    for (int r = 0; r < 10; r++) {
        double t0 = bench_now();
        memcpy(dst, src, bytes);
        double dt = (bench_now() - t0) * 1e3;
        if (r)
            t[r - 1] = dt;
    }
    free(src);
    free(dst);
    return median(t, 9);
}

/* From slice_step, for slice_leaves. */
static double step_backward_ms = -1, step_backward_min_ms = -1;
/* The median of forward + backward of slice_forward and slice_step (by
 * mode), for their double versions; -1 until they ran. */
static double single_ms[2] = {-1, -1};

static void slice_teardown(void *state)
{
    slice_state *s = state;
    if (!s)
        return;
    if (s->n > 0) {
        double fmin = s->fwd[0], bmin = s->bwd[0];
        for (int i = 1; i < s->n; i++) {
            fmin = s->fwd[i] < fmin ? s->fwd[i] : fmin;
            bmin = s->bwd[i] < bmin ? s->bwd[i] : bmin;
        }
        double f = median(s->fwd, s->n), b = median(s->bwd, s->n), fb = median(s->all, s->n);
        double pf = median(s->faults, s->n);
        static const char *const what[] = {"forward only", "gradients of X, wA, wB",
                                           "gradients of the slices, wA, wB"};
        fprintf(stderr,
                "slice %lldx%lldx%lldx%lld %s (%s): forward %.3f ms (min %.3f), backward %.3f ms "
                "(min %.3f), medians of %d; page faults %.0f a call (%.1f MiB of 4 KiB pages); peak "
                "memory +%.1f MiB over the inputs\n",
                (long long)s->h, (long long)s->w, (long long)s->c, (long long)s->b,
                s->dt == DLA_F64 ? "double" : "single", what[s->mode], f, fmin, b, bmin, s->n, pf,
                pf * 4096 / 1048576.0, s->peak_mib);
        if (s->mode < 2 && s->dt == DLA_F32)
            single_ms[s->mode] = fb;
        if (s->mode < 2 && s->dt == DLA_F64 && single_ms[s->mode] > 0)
            fprintf(stderr,
                    "slice %lldx%lldx%lldx%lld (%s): double %.3f ms against single %.3f ms = "
                    "%.2fx (target <= 2.5x)\n",
                    (long long)s->h, (long long)s->w, (long long)s->c, (long long)s->b,
                    what[s->mode], fb, single_ms[s->mode], fb / single_ms[s->mode]);
        /* slice_leaves is held against slice_step (single) only. */
        if (s->mode == 1 && s->dt == DLA_F32) {
            step_backward_ms = b;
            step_backward_min_ms = bmin;
        }
        if (s->mode == 2 && step_backward_ms >= 0) {
            size_t bytes = (size_t)(s->h * s->w * s->c * s->b) * sizeof(float); /* single */
            double fl = floor_ms(bytes), cost = step_backward_ms - b;
            double cost_min = step_backward_min_ms - bmin;
            fprintf(stderr,
                    "slice %lldx%lldx%lldx%lld: the slicing backward (step minus leaves) costs "
                    "%.3f ms at the medians, %.3f ms at the minima; floor %.3f ms (memcpy of X's "
                    "%.1f MiB) = %.2fx / %.2fx the floor (target <= 2x)\n",
                    (long long)s->h, (long long)s->w, (long long)s->c, (long long)s->b, cost,
                    cost_min, fl, bytes / 1048576.0, fl > 0 ? cost / fl : 0,
                    fl > 0 ? cost_min / fl : 0);
        }
    }
    dla_tensor *all[] = {s->x, s->wa, s->wb, s->g};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        dla_tensor_release(all[i]);
    free(s);
}

/* work: the two 3x3 depthwise convolutions forward, 2 x 2 x 9 flops per
 * output element at 64x64x16x10; the step about triples it. A rate for the
 * line only (at the full size it reads 64 times too low). */
const bench_workload bench_slice_workloads[] = {
    {.name = "slice_forward", .unit = BENCH_FLOPS, .work = 36.0 * 64 * 64 * 16 * 10, .size = 0,
     .setup = slice_setup, .run = slice_run, .teardown = slice_teardown,
     .label = "slicing layer forward"},
    {.name = "slice_step", .unit = BENCH_FLOPS, .work = 3 * 36.0 * 64 * 64 * 16 * 10, .size = 1,
     .setup = slice_setup, .run = slice_run, .teardown = slice_teardown,
     .label = "slicing layer forward+backward"},
    {.name = "slice_leaves", .unit = BENCH_FLOPS, .work = 3 * 36.0 * 64 * 64 * 16 * 10, .size = 2,
     .setup = slice_setup, .run = slice_run, .teardown = slice_teardown,
     .label = "slicing layer, gradients of the slices"},
    {.name = "slice_forward_f64", .unit = BENCH_FLOPS, .work = 36.0 * 64 * 64 * 16 * 10,
     .size = 10, .setup = slice_setup, .run = slice_run, .teardown = slice_teardown,
     .label = "slicing layer forward in double"},
    {.name = "slice_step_f64", .unit = BENCH_FLOPS, .work = 3 * 36.0 * 64 * 64 * 16 * 10,
     .size = 11, .setup = slice_setup, .run = slice_run, .teardown = slice_teardown,
     .label = "slicing layer forward+backward in double"},
    {0},
};
