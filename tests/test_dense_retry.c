/*
 * test_dense_retry.c - the core's dense retry (core/launch_dense.c) on the
 * denseonly test plugin (tests/plugins/cpuwrap.c), which declines every
 * kernel call with a view that is not dense, as plugin.h allows. Each op
 * below sends such a view (a CBT input of a 1-d convolution arrives with
 * x strides 6,1,3; a permuted operand; a permuted gather source; a replay
 * of dla_accelerate, one with a convolution's epilogue that the device
 * declines whole) and must give the cpu plugin's answer, bit for bit (the
 * wrapped kernels are the cpu plugin's own).
 */
#define _GNU_SOURCE /* setenv */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dlaccel.h>
#include <dlaccel/accel.h>
#include <dlaccel/conv.h>
#include <dlaccel/device_table.h>
#include <dlaccel/loss.h>

#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static dla_device *dense_dev, *cpu_dev;

static int setup(void **state)
{
    (void)state;
    const char *b = getenv("DLA_TEST_BUILDDIR"), *old = getenv("DLACCEL_PLUGIN_PATH");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/cpuwrap.d/denseonly%s%s", b ? b : ".",
             old && *old ? ":" : "", old ? old : "");
    setenv("DLACCEL_PLUGIN_PATH", path, 1);
    dense_dev = dla_device_get("denseonly");
    cpu_dev = dla_device_get("cpu");
    if (!dense_dev || !cpu_dev)
        fprintf(stderr, "# no denseonly or cpu device: %s\n", dla_last_error());
    return dense_dev && cpu_dev ? 0 : -1;
}

/* The values of t (double) into v[n]; the count. */
static int64_t values(dla_tensor *t, double *v, int64_t n)
{
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    dla_tensor *d = dla_cast(t, DLA_F64);
    assert_int_equal(dla_tensor_status(d), DLA_OK);
    const int64_t got = dla_tensor_numel(d);
    assert_true(got <= n);
    assert_int_equal(dla_tensor_to_host(d, v, (size_t)got * sizeof *v), DLA_OK);
    dla_tensor_release(d);
    return got;
}

/* f(dev) on both devices gives the same values. */
static void same_on_both(dla_tensor *(*f)(void))
{
    double a[256], b[256];
    dla_device_set_current(cpu_dev);
    dla_tensor *want = f();
    dla_device_set_current(dense_dev);
    dla_tensor *got = f();
    if (dla_tensor_status(got) != DLA_OK)
        fail_msg("on denseonly: %s", dla_last_error());
    assert_ptr_equal(dla_tensor_device(got), dense_dev);
    const int64_t n = values(want, a, 256);
    assert_int_equal(values(got, b, 256), n);
    assert_true(n > 0);
    for (int64_t i = 0; i < n; i++)
        assert_true(a[i] == b[i]);
    dla_tensor_release(want);
    dla_tensor_release(got);
    dla_device_set_current(NULL);
}

static dla_tensor *seq(dla_dtype t, const char *format, int nd, const int64_t *dims)
{
    double v[256];
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= dims[d];
    for (int64_t i = 0; i < n; i++)
        v[i] = (double)((i * 7) % 11) - 4.5;
    dla_tensor *f = dla_tensor_from_host(v, DLA_F64, format, nd, dims);
    dla_tensor *c = dla_cast(f, t);
    dla_tensor_release(f);
    return c;
}

/* A 1-d convolution of a "CBT" input: the kernel's x view is T x C x B
 * over C x B x T memory. */
static dla_tensor *conv_cbt(void)
{
    dla_tensor *x = seq(DLA_F32, "CBT", 3, (const int64_t[]){3, 2, 5});
    dla_tensor *w = seq(DLA_F32, "", 3, (const int64_t[]){2, 3, 4});
    dla_tensor *y = dla_conv(x, w, NULL, NULL);
    dla_tensor_release(x);
    dla_tensor_release(w);
    return y;
}

static void test_conv_cbt(void **state)
{
    (void)state;
    same_on_both(conv_cbt);
}

static dla_tensor *add_permuted(void)
{
    dla_tensor *a = seq(DLA_F64, "", 2, (const int64_t[]){3, 4});
    dla_tensor *b = seq(DLA_F64, "", 2, (const int64_t[]){4, 3});
    dla_tensor *p = dla_permute(a, 2, (const int64_t[]){2, 1});
    dla_tensor *z = dla_add(p, b);
    dla_tensor_release(a);
    dla_tensor_release(b);
    dla_tensor_release(p);
    return z;
}

/* The lines the wrapper appended to path for calls of kernel. */
/* Makes the file path (a mkstemp template) and has denseonly log its
 * declines there (CPUWRAP_DECLINES). */
static void log_declines(char *path)
{
    const int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    setenv("CPUWRAP_DECLINES", path, 1);
}

static int declines_of(const char *path, const char *kernel)
{
    FILE *f = fopen(path, "r");
    int n = 0;
    char line[256];
    while (f && fgets(line, sizeof line, f))
        n += strncmp(line, kernel, strlen(kernel)) == 0;
    if (f)
        fclose(f);
    return n;
}

/* A dense SSCB input and a dense 3x3x2x4 filter: the views the core gives
 * the three convolution kernels are dense (the filter's view has a group
 * dim of one past the tensor's dims), so a dense-only device such as
 * cuDNN's runs them as they are; the CBT input of test_conv_cbt is
 * declined, which shows the log sees declines. */
static dla_tensor *conv_sscb_step(void)
{
    dla_tensor *x = seq(DLA_F32, "SSCB", 4, (const int64_t[]){5, 4, 2, 3});
    dla_tensor *w = seq(DLA_F32, "", 4, (const int64_t[]){3, 3, 2, 4});
    dla_tensor *b = seq(DLA_F32, "", 1, (const int64_t[]){4});
    dla_tensor *in[2] = {x, w}, *g[2] = {NULL, NULL};
    dla_tensor *y = dla_conv(x, w, b, NULL);
    dla_tensor *loss = dla_sum(dla_mul(y, y), 0, NULL);
    dla_status st = dla_gradient(loss, 2, in, g);
    dla_tensor *all = st == DLA_OK ? dla_add(dla_sum(g[0], 0, NULL), dla_sum(g[1], 0, NULL)) : NULL;
    dla_tensor_release(x);
    dla_tensor_release(w);
    dla_tensor_release(b);
    return all ? all : loss;
}

static void test_dense_conv_views_reach_the_device_dense(void **state)
{
    (void)state;
    char path[] = "/tmp/dla_declines_XXXXXX";
    log_declines(path);
    dla_scope_begin();
    same_on_both(conv_sscb_step);
    dla_scope_end();
    const int dense = declines_of(path, "conv_");
    same_on_both(conv_cbt);
    const int cbt = declines_of(path, "conv_") - dense;
    unsetenv("CPUWRAP_DECLINES");
    unlink(path);
    assert_int_equal(dense, 0);
    assert_true(cbt > 0);
}

static void test_binary_permuted(void **state)
{
    (void)state;
    same_on_both(add_permuted);
}

static dla_tensor *gather_permuted(void)
{
    dla_tensor *a = seq(DLA_F32, "", 2, (const int64_t[]){3, 4});
    dla_tensor *p = dla_permute(a, 2, (const int64_t[]){2, 1});
    const int32_t at[] = {2, 0, 2, 1};
    dla_tensor *idx = dla_tensor_from_host(at, DLA_I32, "", 2, (const int64_t[]){1, 4});
    dla_tensor *z = dla_index(p, 2, idx);
    dla_tensor_release(a);
    dla_tensor_release(p);
    dla_tensor_release(idx);
    return z;
}

static void test_gather_permuted(void **state)
{
    (void)state;
    same_on_both(gather_permuted);
}

/* sum(permute(x) .* y): traced once, then replayed through its plan, whose
 * kept launches the device declines again on every replay. */
static dla_status model(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    dla_tensor *p = dla_permute(in[0], 2, (const int64_t[]){2, 1});
    dla_tensor *m = dla_mul(p, in[1]);
    out[0] = dla_sum(m, 0, NULL);
    return dla_tensor_status(out[0]);
}

static dla_tensor *replayed(void)
{
    dla_accel *af = dla_accelerate(model, NULL);
    dla_tensor *x = seq(DLA_F64, "", 2, (const int64_t[]){3, 4});
    dla_tensor *y = seq(DLA_F64, "", 2, (const int64_t[]){4, 3});
    dla_tensor *out = NULL;
    for (int i = 0; i < 3; i++) {
        dla_tensor_release(out);
        out = NULL;
        dla_status s = dla_accel_call(af, NULL, 2, (dla_tensor *[]){x, y}, 1, &out);
        if (s != DLA_OK)
            break;
    }
    dla_tensor_release(x);
    dla_tensor_release(y);
    dla_accel_free(af);
    return out;
}

static void test_accelerated_replay(void **state)
{
    (void)state;
    same_on_both(replayed);
}

/* relu(conv(x, w) + b), replayed: its plan runs the convolution with the
 * bias and relu as its epilogue (conv_forward_fused), which denseonly
 * declines for the bias's broadcast view; the core then runs the two
 * launches (core/launch.c), each retried dense on its own. */
static dla_status conv_relu(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_relu(dla_conv(in[0], in[1], in[2], NULL));
    return dla_tensor_status(out[0]);
}

static int epilogue_listed;

static dla_tensor *conv_relu_replayed(void)
{
    dla_accel *af = dla_accelerate(conv_relu, NULL);
    dla_tensor *x = seq(DLA_F32, "SSCB", 4, (const int64_t[]){6, 5, 2, 3});
    dla_tensor *w = seq(DLA_F32, "", 4, (const int64_t[]){3, 3, 2, 4});
    dla_tensor *b = seq(DLA_F32, "", 2, (const int64_t[]){4, 1});
    dla_tensor *out = NULL;
    for (int i = 0; i < 3; i++) {
        dla_tensor_release(out);
        out = NULL;
        if (dla_accel_call(af, NULL, 3, (dla_tensor *[]){x, w, b}, 1, &out) != DLA_OK)
            break;
    }
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    dla_accel_print_trace(af, 0, f);
    fclose(f);
    epilogue_listed += text && strstr(text, "conv_forward, then fused") != NULL;
    free(text);
    dla_tensor_release(x);
    dla_tensor_release(w);
    dla_tensor_release(b);
    dla_accel_free(af);
    return out;
}

static void test_a_declined_epilogue_runs_as_two_launches(void **state)
{
    (void)state;
    char path[] = "/tmp/dla_declines_XXXXXX";
    log_declines(path);
    epilogue_listed = 0;
    same_on_both(conv_relu_replayed);
    const int declined = declines_of(path, "conv_forward_fused");
    unsetenv("CPUWRAP_DECLINES");
    unlink(path);
    /* Both plans ran the convolution with its epilogue, where the plugins
     * have the kernel (the cpu plugin's, which denseonly wraps), and
     * denseonly declined it on each of the plan's runs. */
    if (dla_device_runs_natively(cpu_dev, DLA_KERNEL_CONV_FORWARD_FUSED, DLA_F32)) {
        assert_int_equal(epilogue_listed, 2);
        assert_true(declined > 0);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        TU_TEST(test_conv_cbt),
        TU_TEST(test_dense_conv_views_reach_the_device_dense),
        TU_TEST(test_binary_permuted),
        TU_TEST(test_gather_permuted),
        TU_TEST(test_accelerated_replay),
        TU_TEST(test_a_declined_epilogue_runs_as_two_launches),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
