/*
 * testutil.h - small helpers shared by the cmocka suites: a counting
 * allocator (leak checks and the Nth-allocation failure), a seeded host RNG
 * for shapes, and float comparison.
 */
#ifndef DLA_TESTUTIL_H
#define DLA_TESTUTIL_H

#include <dlaccel.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Not every suite uses every helper. */
#define TU_UNUSED __attribute__((unused))

/* A device other than the current one (the device suites add the testmem
 * plugin beside whichever they run on); NULL when there is none. */
TU_UNUSED static dla_device *tu_other_device(void)
{
    for (int i = 0; i < dla_device_count(); i++)
        if (dla_device_at(i) != dla_device_current())
            return dla_device_at(i);
    return NULL;
}

/* The testmem device, a second device when a suite's main adds the build's
 * test plugins after the cpu; NULL without it (the test then skips). */
TU_UNUSED static dla_device *tu_testmem_device(void)
{
    for (int i = 0; i < dla_device_count(); i++)
        if (!strcmp(dla_device_plugin(dla_device_at(i)), "testmem"))
            return dla_device_at(i);
    return NULL;
}

/* Live blocks, their highest count since a test last set tu_peak (to
 * tu_live, say), and the allocation that should fail (0: none). */
TU_UNUSED static long tu_live;
TU_UNUSED static long tu_peak;
TU_UNUSED static long tu_calls;
TU_UNUSED static long tu_fail_at;

TU_UNUSED static void *tu_alloc(void *user, void *ptr, size_t size)
{
    (void)user;
    if (size == 0) {
        if (ptr)
            tu_live--;
        free(ptr);
        return NULL;
    }
    tu_calls++;
    if (tu_fail_at && tu_calls == tu_fail_at)
        return NULL;
    void *p = realloc(ptr, size);
    if (p && !ptr && ++tu_live > tu_peak)
        tu_peak = tu_live;
    return p;
}

/* The same with atomic counts, for suites whose calls allocate on several
 * threads (a queue's dispatch thread, a datastore read on a kernel's);
 * tu_atomic_refuse is the call to refuse (0: none). */
TU_UNUSED static atomic_long tu_atomic_live, tu_atomic_calls, tu_atomic_refuse;

TU_UNUSED static void *tu_atomic_alloc(void *user, void *ptr, size_t size)
{
    (void)user;
    if (size == 0) {
        if (ptr)
            atomic_fetch_sub(&tu_atomic_live, 1);
        free(ptr);
        return NULL;
    }
    const long call = atomic_fetch_add(&tu_atomic_calls, 1) + 1;
    const long refuse = atomic_load(&tu_atomic_refuse);
    if (refuse && call == refuse)
        return NULL;
    void *p = realloc(ptr, size);
    if (p && !ptr)
        atomic_fetch_add(&tu_atomic_live, 1);
    return p;
}

/* Runs once(ctx) (the caller has installed tu_atomic_alloc), twice as it is (devices
 * loaded, caches warm), then with each of its allocations refused in turn
 * until a run makes fewer: every refused run must leave no block behind,
 * and one that fails must say why. Returns how many runs failed, or -1
 * with why[] saying what went wrong. */
TU_UNUSED static int tu_refuse_each(dla_status (*once)(void *), void *ctx, char *why,
                                    size_t why_size)
{
    int refused = 0;
    dla_status st = once(ctx);
    if (st == DLA_OK)
        st = once(ctx);
    if (st != DLA_OK) {
        snprintf(why, why_size, "a run with nothing refused failed: %s", dla_last_error());
        refused = -1;
    }
    const long live = atomic_load(&tu_atomic_live);
    for (long n = 1; refused >= 0 && n < 100000; n++) {
        atomic_store(&tu_atomic_calls, 0);
        atomic_store(&tu_atomic_refuse, n);
        st = once(ctx);
        const long calls = atomic_load(&tu_atomic_calls);
        atomic_store(&tu_atomic_refuse, 0);
        if (atomic_load(&tu_atomic_live) != live) {
            snprintf(why, why_size, "allocation %ld refused: %ld blocks live, %ld before (%s)", n,
                     atomic_load(&tu_atomic_live), live, dla_last_error());
            refused = -1;
        } else if (calls < n) { /* every allocation was granted */
            if (st != DLA_OK) {
                snprintf(why, why_size, "a run with nothing refused failed: %s",
                         dla_last_error());
                refused = -1;
            }
            break;
        } else if (st != DLA_OK) { /* else a refusal the library recovers from (a cache) */
            refused++;
            if (!dla_last_error()[0]) {
                snprintf(why, why_size, "allocation %ld refused: failed without a message", n);
                refused = -1;
            }
        }
    }
    return refused;
}

TU_UNUSED static uint64_t tu_state = 0x9E3779B97F4A7C15ull;
TU_UNUSED static uint64_t tu_next(void)
{
    tu_state ^= tu_state << 13;
    tu_state ^= tu_state >> 7;
    tu_state ^= tu_state << 17;
    return tu_state;
}
/* Uniform integer in [lo, hi]. */
TU_UNUSED static int64_t tu_int(int64_t lo, int64_t hi) { return lo + (int64_t)(tu_next() % (uint64_t)(hi - lo + 1)); }
TU_UNUSED static double tu_unit(void) { return (double)(tu_next() >> 11) / 9007199254740992.0; }

/* The larger of a running worst difference and d, NaN once either is:
 * fmax(worst, NaN) is worst, which would let a NaN result pass. */
TU_UNUSED static double tu_worse(double worst, double d)
{
    if (isnan(worst))
        return worst;
    return isnan(d) || d > worst ? d : worst;
}

TU_UNUSED static int tu_close(double a, double b, double tol)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return fabs(a - b) <= tol * (1.0 + fabs(b));
}

/* Nonzero when a and b have one dtype and element count and the same
 * bytes (read to the host): a replay against its eager call. */
TU_UNUSED static int tu_same_bits(const dla_tensor *a, const dla_tensor *b)
{
    const int64_t n = dla_tensor_numel(a);
    if (dla_tensor_dtype(a) != dla_tensor_dtype(b) || dla_tensor_numel(b) != n)
        return 0;
    const size_t bytes = dla_dtype_size(dla_tensor_dtype(a)) * (size_t)n;
    unsigned char *x = malloc(bytes ? bytes : 1), *y = malloc(bytes ? bytes : 1);
    const int same = x && y && dla_tensor_to_host(a, x, bytes) == DLA_OK &&
                     dla_tensor_to_host(b, y, bytes) == DLA_OK && memcmp(x, y, bytes) == 0;
    free(x);
    free(y);
    return same;
}

/* fn on in[0..nin-1] accelerated (af) and eagerly, nout (<= 16)
 * outputs each: -1 when every output of the replay has eager's bits, the
 * first output that differs, or -2 when a call failed (dla_last_error
 * says why). */
TU_UNUSED static int tu_replay_differs(dla_accel *af, dla_function fn, void *ctx, int nin,
                                       dla_tensor *const *in, int nout)
{
    dla_tensor *acc[16], *eager[16];
    if (nout > 16 || dla_accel_feval(af, ctx, nin, in, nout, acc) != DLA_OK ||
        dla_feval(fn, ctx, nin, in, nout, eager) != DLA_OK)
        return -2;
    for (int i = 0; i < nout; i++)
        if (!tu_same_bits(acc[i], eager[i]))
            return i;
    return -1;
}

/* Each suite's tests run through TU_TEST, so that cmocka calls this after
 * every test, passed or failed. A failed assertion leaves its test by a
 * long jump, with the test's scopes still open; an open scope keeps
 * references that a later test expects released, and that test failed too
 * (test_accel's stale-constant test after any earlier failure). Closing
 * them here keeps one failure to one test. A test that passed and still
 * left a scope open fails here (cmocka reports the teardown). */
TU_UNUSED static int tu_teardown(void **state)
{
    (void)state;
    const int open = dla_scope_depth();
    for (int i = 0; i < open; i++)
        dla_scope_end();
    tu_fail_at = 0;
    /* A test that failed between dla_device_set_current and its reset
     * would leave the next ones on its device. */
    dla_device_set_current(NULL);
    if (open)
        fprintf(stderr, "tu_teardown: the test left %d scope%s open\n", open, open > 1 ? "s" : "");
    return open ? -1 : 0;
}
#define TU_TEST(f) cmocka_unit_test_teardown(f, tu_teardown)

/* Makes a network file's bytes f (its header NUL-terminated) one as a
 * library before format 1.2 wrote it: the checksum entry blanked to
 * spaces (JSON whitespace: the header keeps its length), the version 1.1.
 * A file edited by a test after that is taken unchecked, as old files
 * are; edited without it, it is refused as damaged. Returns 0 when the
 * header lacks either entry. */
TU_UNUSED static int tu_net_file_as_version_1_1(unsigned char *f)
{
    char *v = strstr((char *)f + 8, "\"format_version\":\"1.2\"");
    char *c = strstr((char *)f + 8, "\"checksum\":\"crc32c:");
    if (!v || !c)
        return 0;
    v[strlen("\"format_version\":\"1.")] = '1';
    /* "checksum":"crc32c:xxxxxxxx" and the comma after it. */
    memset(c, ' ', strlen("\"checksum\":\"crc32c:xxxxxxxx\","));
    return 1;
}

#endif
