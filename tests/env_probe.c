/*
 * env_probe.c - runs a little of everything the DLACCEL_* tuning variables
 * steer: an accelerated function replayed (a plan: DLACCEL_PLAN), with a
 * convolution (DLACCEL_CPU_CONV), a matrix product (DLACCEL_OPENCL_GEMM)
 * an elementwise chain (DLACCEL_OPENCL_FUSED) and a layer normalization,
 * whose statistics are one summed pass (DLACCEL_OPENCL_FUSED_REDUCE), on
 * the default device (it prints how many of its convolutions add their
 * own bias: none, unless DLACCEL_PLAN=conv-bias-in; and how many run the
 * fused launch after them as their epilogue: one, where the device has
 * conv_forward_fused, unless DLACCEL_PLAN=no-epilogue); and a parameter
 * update whose plan keeps two results from one fused launch where the
 * device has fused_multi, unless DLACCEL_PLAN=single-result (it prints
 * how many such launches); how many of its replays were timed step by
 * step (DLACCEL_PLAN_PROFILE; -1: none); a combine of gradients
 * (DLACCEL_BUCKET_MIB); a small trainnet (DLACCEL_OVERLAP); and
 * what the OpenMP runtime and OpenBLAS were
 * given (env_probe_openblas links OpenBLAS itself). tests/tool_env.sh
 * runs it with values set and reads what the library says on stderr.
 * Prints "probe: ok" and exits 0 when every call succeeded.
 */
#define _POSIX_C_SOURCE 200809L /* open_memstream */
#include <dlaccel.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef PROBE_LINKS_OPENBLAS
#include <cblas.h>
#endif

static dla_status body(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *y = dla_conv(in[0], in[1], in[6], NULL);
    dla_tensor *z = dla_relu(dla_affine(dla_mul(y, y), 2.0, 1.0));
    z = dla_layernorm(z, in[4], in[5], NULL);
    dla_tensor *m = dla_exp(dla_affine(dla_mtimes(in[2], in[3]), 0.01, 0.0));
    out[0] = dla_add(dla_sum(z, 0, NULL), dla_sum(m, 0, NULL));
    return dla_tensor_status(out[0]);
}

/* v = 0.9 v - 0.01 g, p = p + v: both outputs. in: p, v, g. */
static dla_status update(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[1] = dla_sub(dla_affine(in[1], 0.9, 0.0), dla_affine(in[2], 0.01, 0.0));
    out[0] = dla_add(in[0], out[1]);
    return dla_tensor_status(out[0]);
}

/* af's printed trace (free it); NULL when it cannot be had. */
static char *trace_text(dla_accel *af)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return NULL;
    dla_accel_print_trace(af, 0, f);
    fclose(f);
    return text;
}

/* The number printed just before phrase in af's printed trace (the plan's
 * summary line); -1 when the print has no such line. */
static int count_before(dla_accel *af, const char *phrase)
{
    char *text = trace_text(af);
    int n = -1;
    const char *s = text ? strstr(text, phrase) : NULL;
    if (s) {
        while (s > text && s[-1] >= '0' && s[-1] <= '9')
            s--;
        n = atoi(s);
    }
    free(text);
    return n;
}

/* The number of fused launches keeping several results in af's plan. */
static int kept_several(dla_accel *af)
{
    return count_before(af, " fused launches keep several results");
}

/* exp between two products: the exp reads the first product for the
 * last time, so its result may take that memory (DLACCEL_PLAN=no-in-place
 * says no). */
static dla_status exp_between(void *ctx, int nin, dla_tensor *const *in, int nout,
                              dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_mtimes(in[2], dla_exp(dla_mtimes(in[0], in[1])));
    return dla_tensor_status(out[0]);
}

/* "arena A bytes for N intermediates of B bytes" of af's plan; "none"
 * when the print has no plan. */
static void print_arena(dla_accel *af)
{
    char *text = trace_text(af);
    const char *s = text ? strstr(text, "memory plan on cpu:0: ") : NULL;
    if (s)
        s = strstr(s, "arena ");
    printf("probe: %.*s\n", s ? (int)strcspn(s, "(") : 4, s ? s : "none");
    free(text);
}

/* The convolutions of af's plan that run the fused launch after them as
 * their epilogue (conv_forward_fused); -1 when the print has no plan. */
static int epilogues(dla_accel *af)
{
    return count_before(af, " run as a convolution's epilogue");
}

/* The steps of af's plan that are convolutions adding their own bias;
 * -1 when the print has no plan. */
static int own_bias(dla_accel *af)
{
    char *text = trace_text(af);
    const char *s = text ? strstr(text, "plan steps on ") : NULL;
    int n = s ? 0 : -1;
    for (; s && (s = strstr(s, ": conv_forward + bias")); s++)
        n++;
    free(text);
    return n;
}

int main(void)
{
#ifdef PROBE_LINKS_OPENBLAS
    /* A program that uses OpenBLAS itself: loaded (and its kernels
     * chosen) before main. */
    printf("probe: the program's OpenBLAS kernels: %s\n", openblas_get_corename());
#endif
#ifdef _OPENMP
    /* The env_probe_openmp build: a program that uses OpenMP itself, so
     * the runtime is loaded (and has read its settings) before main. */
    printf("probe: this program runs OpenMP with %d threads\n", omp_get_max_threads());
#endif
    dla_rng_seed(1);
    dla_tensor *in[7] = {
        dla_randn(DLA_F32, "SSCB", 4, (const int64_t[]){12, 12, 16, 2}),
        dla_randn(DLA_F32, "", 4, (const int64_t[]){3, 3, 16, 16}),
        dla_randn(DLA_F32, "", 2, (const int64_t[]){64, 64}),
        dla_randn(DLA_F32, "", 2, (const int64_t[]){64, 64}),
        dla_randn(DLA_F32, "", 1, (const int64_t[]){16}),
        dla_randn(DLA_F32, "", 1, (const int64_t[]){16}),
        dla_randn(DLA_F32, "", 1, (const int64_t[]){16}),
    };
    dla_accel *af = dla_accelerate(body, &(dla_accel_options){.name = "probe"});
    int bad = !af;
    for (int i = 0; i < 7 && !bad; i++)
        bad = dla_tensor_status(in[i]) != DLA_OK;
    for (int call = 0; call < 3 && !bad; call++) {
        dla_tensor *out;
        bad = dla_accel_call(af, NULL, 7, in, 1, &out) != DLA_OK;
        if (!bad)
            dla_tensor_release(out);
    }
    if (!bad)
        printf("probe: convolutions adding their own bias: %d\n", own_bias(af));
    if (!bad)
        printf("probe: convolutions running their epilogue: %d\n", epilogues(af));
    if (!bad) /* DLACCEL_PLAN_PROFILE: the plan's one run after it was made, timed */
        printf("probe: plan runs timed step by step: %d\n",
               count_before(af, " runs timed step by step"));
    dla_accel *uf = dla_accelerate(update, &(dla_accel_options){.name = "update"});
    dla_tensor *p[3] = {dla_randn(DLA_F32, "", 1, (const int64_t[]){50}),
                        dla_randn(DLA_F32, "", 1, (const int64_t[]){50}),
                        dla_randn(DLA_F32, "", 1, (const int64_t[]){50})};
    bad = bad || !uf;
    for (int call = 0; call < 3 && !bad; call++) {
        dla_tensor *out[2];
        bad = dla_accel_call(uf, NULL, 3, p, 2, out) != DLA_OK;
        if (!bad)
            dla_tensor_release(out[0]), dla_tensor_release(out[1]);
    }
    if (!bad)
        printf("probe: fused launches keeping several results: %d\n", kept_several(uf));
    dla_accel_free(uf);
    for (int i = 0; i < 3; i++)
        dla_tensor_release(p[i]);
    dla_accel *xf = dla_accelerate(exp_between, &(dla_accel_options){.name = "exp_between"});
    dla_tensor *e[3] = {dla_rand(DLA_F32, "", 2, (const int64_t[]){64, 32}),
                        dla_rand(DLA_F32, "", 2, (const int64_t[]){32, 1024}),
                        dla_rand(DLA_F32, "", 2, (const int64_t[]){4, 64})};
    bad = bad || !xf;
    for (int call = 0; call < 3 && !bad; call++) {
        dla_tensor *out;
        bad = dla_accel_call(xf, NULL, 3, e, 1, &out) != DLA_OK;
        if (!bad)
            dla_tensor_release(out);
    }
    if (!bad)
        print_arena(xf);
    dla_accel_free(xf);
    for (int i = 0; i < 3; i++)
        dla_tensor_release(e[i]);
    /* A block the cpu plugin caches when freed (DLACCEL_CPU_CACHE_IDLE). */
    if (!bad) {
        dla_tensor *big = dla_zeros(DLA_F32, "", 1, (const int64_t[]){1 << 18});
        bad = dla_tensor_status(big) != DLA_OK;
        dla_tensor_release(big);
    }
    /* A gradient combined across the world of one (DLACCEL_BUCKET_MIB). */
    if (!bad) {
        dla_tensor *g = dla_ones(DLA_F32, "", 1, (const int64_t[]){8}), *sum = NULL;
        bad = dla_spmd_combine(1, &g, 1.0, &sum) != DLA_OK;
        dla_tensor_release(sum);
        dla_tensor_release(g);
    }
    /* A small trainnet (DLACCEL_OVERLAP, read at each call). */
    if (!bad) {
        dla_layer *layers[] = {dla_feature_input_layer(2, NULL), dla_fc_layer(2, NULL),
                               dla_softmax_layer(NULL)};
        dla_net *net = dla_net_create(3, layers), *trained = NULL;
        const int32_t classes[8] = {0, 1, 0, 1, 1, 0, 1, 0};
        dla_train_data data = {
            .predictors = dla_randn(DLA_F32, "CB", 2, (const int64_t[]){2, 8}),
            .targets = dla_tensor_from_host(classes, DLA_I32, "CB", 2, (const int64_t[]){1, 8})};
        bad = !net || dla_trainnet(&data, net, &(dla_train_loss){.name = "crossentropy"},
                                   &(dla_training_options){.max_epochs = 1, .mini_batch_size = 4,
                                                           .verbose = -1},
                                   &trained, NULL) != DLA_OK;
        dla_net_free(trained);
        dla_net_free(net);
        dla_tensor_release(data.predictors);
        dla_tensor_release(data.targets);
    }
    if (bad)
        fprintf(stderr, "probe: %s\n", dla_last_error());
    else
        printf("probe: ok\n");
    /* What the OpenMP runtime was given (core/omp_defaults.c), after the
     * cpu plugin loaded it. */
    const char *spin = getenv("GOMP_SPINCOUNT");
    printf("probe: openmp wait: %s\n", dla_openmp_wait());
    printf("probe: GOMP_SPINCOUNT=%s\n", spin ? spin : "(unset)");
    /* Which kernels OpenBLAS was given (core/blas_defaults.c), and took:
     * the cpu device's properties name them. */
    const char *core = getenv("OPENBLAS_CORETYPE");
    dla_device *cpu = dla_device_get("cpu");
    printf("probe: openblas core: %s\n", dla_openblas_core());
    printf("probe: OPENBLAS_CORETYPE=%s\n", core ? core : "(unset)");
    printf("probe: cpu properties: %s\n", cpu ? dla_device_properties(cpu) : "(no cpu device)");
    dla_accel_free(af);
    for (int i = 0; i < 7; i++)
        dla_tensor_release(in[i]);
    return bad;
}
