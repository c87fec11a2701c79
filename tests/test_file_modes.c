/*
 * test_file_modes.c - saved networks and traces get the permission bits
 * any program's new file gets (0666 less the umask), and a save over an
 * existing file keeps that file's bits (networks were saved 0600 through
 * mkstemp, and a re-save turned a 0644 file into 0600; traces replaced a
 * file's mode with the umask's default).
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

static char dir[256];

static const char *path_of(const char *name)
{
    static char buf[512];
    snprintf(buf, sizeof buf, "%s/%s", dir, name);
    return buf;
}

static unsigned mode_of(const char *path)
{
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    return (unsigned)(st.st_mode & 07777);
}

static dla_status save_net(const char *path)
{
    dla_layer *l[] = {dla_fc_layer(2, NULL), dla_relu_layer(NULL)};
    dla_net *net = dla_net_create(2, l);
    assert_non_null(net);
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F32, "CB", DLA_DIMS(3, 1));
    assert_int_equal(dla_net_init(net, 1, &x), DLA_OK);
    dla_status st = dla_net_save(net, path);
    dla_scope_end();
    dla_net_free(net);
    return st;
}

static dla_status twice(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = dla_mul(in[0], in[0]);
    return dla_tensor_status(out[0]);
}

static dla_status save_trace(const char *path)
{
    dla_accel *af = dla_accelerate(twice, NULL);
    assert_non_null(af);
    dla_scope_begin();
    dla_tensor *x = dla_ones(DLA_F32, "", DLA_DIMS(3)), *y;
    assert_int_equal(dla_accel_call(af, NULL, 1, &x, 1, &y), DLA_OK);
    dla_trace *t = dla_accel_trace(af, 0);
    assert_non_null(t);
    dla_status st = dla_trace_save(t, path);
    dla_trace_release(t);
    dla_scope_end();
    dla_accel_free(af);
    return st;
}

static void check_modes(dla_status (*save)(const char *), const char *name)
{
    const char *path = path_of(name);
    unlink(path);
    mode_t old = umask(022);
    assert_int_equal(save(path), DLA_OK);
    assert_int_equal(mode_of(path), 0644); /* a new file: 0666 less the umask */
    unlink(path);
    umask(027);
    assert_int_equal(save(path), DLA_OK);
    assert_int_equal(mode_of(path), 0640);
    /* A file replaced keeps its bits, whatever the umask. */
    assert_int_equal(chmod(path, 0604), 0);
    umask(077);
    assert_int_equal(save(path), DLA_OK);
    assert_int_equal(mode_of(path), 0604);
    assert_int_equal(chmod(path, 0600), 0);
    umask(0);
    assert_int_equal(save(path), DLA_OK);
    assert_int_equal(mode_of(path), 0600);
    umask(old);
    unlink(path);
}

static void test_a_saved_network_has_the_umask_mode_or_keeps_the_old_one(void **state)
{
    (void)state;
    check_modes(save_net, "net.safetensors");
}

static void test_a_saved_trace_has_the_umask_mode_or_keeps_the_old_one(void **state)
{
    (void)state;
    check_modes(save_trace, "trace.dlt");
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s/dla-modes-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_saved_network_has_the_umask_mode_or_keeps_the_old_one),
        cmocka_unit_test(test_a_saved_trace_has_the_umask_mode_or_keeps_the_old_one),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(dir);
    return rc;
}
