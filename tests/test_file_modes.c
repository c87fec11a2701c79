/*
 * test_file_modes.c - saved networks and traces get the permission bits
 * any program's new file gets (0666 less the umask), and a save over an
 * existing file keeps that file's bits (networks were saved 0600 through
 * mkstemp, and a re-save turned a 0644 file into 0600; traces replaced a
 * file's mode with the umask's default). A path that is not a file (a
 * FIFO here; /dev/null for a user) is written in place: the temporary file
 * renamed over it replaced the node itself (a chart saved to /dev/null
 * turned the machine's /dev/null into a regular file).
 */
#define _GNU_SOURCE
#include "testutil.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
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

static dla_status save_chart(const char *path)
{
    dla_progress *p = dla_progress_create(&(dla_progress_options){.total = 2, .title = "fifo"});
    assert_non_null(p);
    dla_progress_record(p, "TrainingLoss", 1, 2.0);
    dla_progress_record(p, "TrainingLoss", 2, 1.0);
    dla_status st = dla_progress_write_chart(p, path);
    dla_progress_finish(p, NULL);
    dla_progress_free(p);
    return st;
}

/* Reads the FIFO until its writer closes it (or 10 s pass). */
typedef struct reader {
    int fd;
    size_t bytes;
} reader;

static void *drain(void *arg)
{
    reader *r = arg;
    char buf[4096];
    for (int waited = 0; waited < 100;) {
        struct pollfd pfd = {.fd = r->fd, .events = POLLIN};
        int n = poll(&pfd, 1, 100);
        if (n == 0) {
            waited++;
            continue;
        }
        ssize_t got = read(r->fd, buf, sizeof buf);
        if (got > 0)
            r->bytes += (size_t)got;
        else if (got == 0 && (r->bytes > 0 || (pfd.revents & POLLHUP)))
            break; /* the writer came and went */
        else if (got == 0)
            waited++, poll(NULL, 0, 100);
    }
    return NULL;
}

static void check_fifo(dla_status (*save)(const char *), const char *name)
{
    const char *path = path_of(name);
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0);
    /* A reader first, so the writer's open does not wait. */
    reader r = {.fd = open(path, O_RDONLY | O_NONBLOCK)};
    assert_true(r.fd >= 0);
    pthread_t th;
    assert_int_equal(pthread_create(&th, NULL, drain, &r), 0);
    assert_int_equal(save(path), DLA_OK);
    pthread_join(th, NULL);
    close(r.fd);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISFIFO(st.st_mode)); /* still the FIFO, not a file put in its place */
    assert_true(r.bytes > 0);          /* and what was saved went through it */
    unlink(path);
}

static void test_a_network_saved_to_a_fifo_goes_through_it(void **state)
{
    (void)state;
    check_fifo(save_net, "net.fifo");
}

static void test_a_trace_saved_to_a_fifo_goes_through_it(void **state)
{
    (void)state;
    check_fifo(save_trace, "trace.fifo");
}

static void test_a_chart_written_to_a_fifo_goes_through_it(void **state)
{
    (void)state;
    check_fifo(save_chart, "chart.fifo");
}

int main(void)
{
    snprintf(dir, sizeof dir, "%s/dla-modes-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        return 1;
    const struct CMUnitTest tests[] = {
        TU_TEST(test_a_saved_network_has_the_umask_mode_or_keeps_the_old_one),
        TU_TEST(test_a_saved_trace_has_the_umask_mode_or_keeps_the_old_one),
        TU_TEST(test_a_network_saved_to_a_fifo_goes_through_it),
        TU_TEST(test_a_trace_saved_to_a_fifo_goes_through_it),
        TU_TEST(test_a_chart_written_to_a_fifo_goes_through_it),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    rmdir(dir);
    return rc;
}
