/*
 * test_trace_bytes.c - a saved trace is a function of what was recorded,
 * not of the stack the recording ran on: op attributes were copied byte
 * for byte with their padding (4 uninitialized bytes per unary op), so the
 * same function recorded twice saved different files. The attribute
 * structs are zeroed whole before they are filled. The function below
 * uses every op whose attributes have padding (unary, slice, reshape,
 * permute, pad, expand, index's scatter, the normalizations) forward and
 * backward; tests/valgrind_trace_bytes.sh runs this under valgrind, which
 * names any uninitialised byte written to the file.
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <dlaccel/loss.h>
#include <dlaccel/nnops.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[256];

static const char *path_of(const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

/* Fills the stack below the caller with byte b: the frames the next
 * recording's ops take their attribute structs from. */
static __attribute__((noinline)) void dirty_stack(unsigned char b)
{
    volatile unsigned char junk[256 * 1024];
    for (size_t i = 0; i < sizeof junk; i++)
        junk[i] = b;
    (void)junk[b];
}

static dla_status padded_ops(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)nin, (void)nout;
    /* Each op's attributes are filled in frames this junk lay in before. */
    unsigned char junk = ctx ? *(const unsigned char *)ctx : 0;
    dla_tensor *x = in[0], *c = in[1];
    dirty_stack(junk);
    dla_tensor *y = dla_layernorm(x, c, c, NULL);
    dirty_stack(junk);
    y = dla_add(y, dla_batchnorm(x, c, c, dla_abs(c), dla_exp(c), NULL));
    y = dla_add(y, dla_groupnorm(x, 2, c, c, NULL));
    dirty_stack(junk);
    y = dla_sin(y);                                                     /* unary */
    dirty_stack(junk);
    y = dla_elu(y, 0.5);
    dirty_stack(junk);
    y = dla_slice(y, 1, 0, 1, 3);                                       /* slice */
    dirty_stack(junk);
    y = dla_permute(y, DLA_DIMS(2, 1, 3, 4));                           /* permute */
    dirty_stack(junk);
    y = dla_reshape(y, "", DLA_DIMS(-1));                               /* reshape */
    dirty_stack(junk);
    y = dla_pad(y, 1, (int64_t[]){1}, (int64_t[]){2}, 0.25);           /* pad */
    static const int32_t idx[4] = {3, 0, 5, 3};
    y = dla_index(y, 1, dla_tensor_from_host(idx, DLA_I32, "", DLA_DIMS(4)));
    y = dla_mul(y, dla_sum(c, 0, NULL));                                /* expand */
    out[0] = dla_sum(y, 0, NULL);
    return dla_gradient(out[0], 2, in, out + 1);
}

/* Records the function with the stack dirtied by junk, and saves it. */
static void record_and_save(const char *path, unsigned char junk)
{
    dla_accel *af = dla_accelerate(padded_ops, NULL);
    assert_non_null(af);
    dla_scope_begin();
    dla_rng_seed(5);
    dla_tensor *in[2] = {dla_randn(DLA_F32, "SSCB", DLA_DIMS(3, 2, 4, 2)),
                         dla_rand(DLA_F32, "", DLA_DIMS(4))};
    dla_tensor *out[3];
    assert_int_equal(dla_accel_feval(af, &junk, 2, in, 3, out), DLA_OK);
    dla_trace *t = dla_accel_trace(af, 0);
    assert_non_null(t);
    assert_int_equal(dla_trace_save(t, path), DLA_OK);
    dla_trace_release(t);
    dla_scope_end();
    dla_accel_free(af);
}

static unsigned char *read_all(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *p = malloc((size_t)size + 1);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, (size_t)size, f), (size_t)size);
    fclose(f);
    *n = (size_t)size;
    return p;
}

/* The bytes of two saves that may differ by design: INFO's
 * record_seconds (how long the recording took, at byte 80: the 32-byte
 * header, INFO's 16-byte section head, 8 u32 counts) and the END
 * section's checksum (the last 24 bytes); docs/trace-format.md. */
static void mask_timing(unsigned char *p, size_t n)
{
    assert_true(n > 128 && !memcmp(p + 32, "INFO", 4));
    memset(p + 80, 0, 8);
    memset(p + n - 24, 0, 24);
}

static void test_the_same_function_recorded_twice_saves_the_same_bytes(void **state)
{
    (void)state;
    record_and_save(path_of("warm.dlt"), 0); /* plugins and caches first */
    record_and_save(path_of("a.dlt"), 0x00);
    record_and_save(path_of("b.dlt"), 0xA5);
    size_t na, nb;
    unsigned char *a = read_all(path_of("a.dlt"), &na), *b = read_all(path_of("b.dlt"), &nb);
    assert_int_equal(na, nb);
    mask_timing(a, na);
    mask_timing(b, nb);
    size_t diff = 0, first = 0;
    for (size_t i = 0; i < na; i++)
        if (a[i] != b[i] && !diff++)
            first = i;
    if (diff)
        fail_msg("the two files differ in %zu of their %zu bytes, the first at byte %zu", diff, na,
                 first);
    free(a);
    free(b);
}

static void test_saving_one_trace_twice_gives_the_same_bytes(void **state)
{
    (void)state;
    dla_accel *af = dla_accelerate(padded_ops, NULL);
    assert_non_null(af);
    dla_scope_begin();
    dla_rng_seed(6);
    dla_tensor *in[2] = {dla_randn(DLA_F32, "SSCB", DLA_DIMS(3, 2, 4, 2)),
                         dla_rand(DLA_F32, "", DLA_DIMS(4))};
    dla_tensor *out[3];
    assert_int_equal(dla_accel_feval(af, NULL, 2, in, 3, out), DLA_OK);
    dla_trace *t = dla_accel_trace(af, 0);
    assert_non_null(t);
    assert_int_equal(dla_trace_save(t, path_of("c.dlt")), DLA_OK);
    dirty_stack(0x5A);
    assert_int_equal(dla_trace_save(t, path_of("d.dlt")), DLA_OK);
    dla_trace_release(t);
    dla_scope_end();
    dla_accel_free(af);
    size_t nc, nd;
    unsigned char *c = read_all(path_of("c.dlt"), &nc), *d = read_all(path_of("d.dlt"), &nd);
    assert_int_equal(nc, nd);
    assert_memory_equal(c, d, nc);
    free(c);
    free(d);
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s/dla-tbytes-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        TU_TEST(test_the_same_function_recorded_twice_saves_the_same_bytes),
        TU_TEST(test_saving_one_trace_twice_gives_the_same_bytes),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    const char *names[] = {"warm.dlt", "a.dlt", "b.dlt", "c.dlt", "d.dlt"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(path_of(names[i]));
    rmdir(dir);
    return rc;
}
