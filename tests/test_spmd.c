/*
 * test_spmd.c - the collectives, run by tests/spmd.sh under mpirun with
 * 1 to 4 ranks (and once without mpirun: a world of one).
 *
 *     test_spmd CASE[,CASE...]
 *
 * Every rank runs each CASE and prints "rank R: ok CASE" when every check held,
 * or "rank R: FAIL CASE: why" lines and exits 1; the script counts the ok
 * lines. Cases: world, allreduce, broadcast, allgather, flags, queue, args,
 * mismatch, async and async_mismatch (dla_allreduce_start: results, requests in
 * flight among blocking collectives, and the named errors; with
 * DLA_TEST_ABI10=1 the communicator is the ABI 1.0 build of the plugin,
 * which has no non-blocking reductions: the same results, each request
 * done at start), single (no mpirun), and the faults: hang (the last rank never
 * comes) and kill (the last rank dies), where the others must end with the
 * error naming it, and stall (the last rank stops inside a transfer).
 */
#define _GNU_SOURCE
#include <dlaccel.h>

#include <math.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int rank_, size_, failures;
static const char *case_;

#define CHECK(cond, ...)                                                       \
    do {                                                                       \
        if (!(cond)) {                                                         \
            printf("rank %d: FAIL %s: %s:%d: %s: ", rank_, case_, __FILE__,    \
                   __LINE__, #cond);                                           \
            printf(__VA_ARGS__);                                               \
            printf(" (last error: %s)\n", dla_last_error());                   \
            failures++;                                                        \
        }                                                                      \
    } while (0)

static dla_tensor *vec(dla_dtype dtype, int64_t n, double (*f)(int rank, int64_t i))
{
    double *v = malloc((size_t)(n ? n : 1) * sizeof *v);
    float *vf = malloc((size_t)(n ? n : 1) * sizeof *vf);
    int32_t *vi = malloc((size_t)(n ? n : 1) * sizeof *vi);
    for (int64_t i = 0; i < n; i++) {
        v[i] = f(rank_, i);
        vf[i] = (float)v[i];
        vi[i] = (int32_t)v[i];
    }
    const void *data = dtype == DLA_F64 ? (const void *)v : dtype == DLA_F32 ? (const void *)vf
                                                                               : (const void *)vi;
    dla_tensor *t = dla_tensor_from_host(data, dtype, "", 1, &n);
    free(v);
    free(vf);
    free(vi);
    return t;
}

static double f_mix(int r, int64_t i) { return (double)((r + 1) * 3 + (i % 7) - 2 * (r % 2)); }

/* ------------------------------------------------------------ cases */

static void case_world(void)
{
    const char *env = getenv("OMPI_COMM_WORLD_SIZE");
    int expect = env ? atoi(env) : 1;
    CHECK(size_ == expect, "size %d, mpirun started %d", size_, expect);
    CHECK(rank_ >= 0 && rank_ < size_, "rank %d", rank_);
    CHECK(!strcmp(dla_spmd_backend(), env ? "mpi" : "single"), "backend %s", dla_spmd_backend());
    CHECK(dla_spmd_local_rank() >= 0 && dla_spmd_local_rank() < dla_spmd_local_size(),
          "local %d of %d", dla_spmd_local_rank(), dla_spmd_local_size());
    /* One machine: every rank is local. */
    CHECK(dla_spmd_local_size() == size_, "local size %d", dla_spmd_local_size());
    /* The ranks are distinct: gathered, they are 0..size-1. */
    int32_t me = rank_;
    int64_t one = 1;
    dla_tensor *x = dla_tensor_from_host(&me, DLA_I32, "", 1, &one), *all = NULL;
    CHECK(dla_allgather(x, &all) == DLA_OK, "allgather");
    CHECK(all && dla_tensor_numel(all) == size_, "numel");
    for (int r = 0; all && r < size_; r++)
        CHECK(dla_tensor_item(all, r) == r, "rank %d gathered %g", r, dla_tensor_item(all, r));
    CHECK(dla_spmd_barrier() == DLA_OK, "barrier");
    dla_tensor_release(x);
    dla_tensor_release(all);
}

static void check_reduced(dla_tensor *t, dla_reduce_op op, const char *what)
{
    int64_t n = dla_tensor_numel(t);
    for (int64_t i = 0; i < n; i++) {
        double want = op == DLA_REDUCE_MAX ? -INFINITY : op == DLA_REDUCE_MIN ? INFINITY : 0;
        for (int r = 0; r < size_; r++) {
            double v = f_mix(r, i);
            want = op == DLA_REDUCE_MAX ? fmax(want, v) : op == DLA_REDUCE_MIN ? fmin(want, v)
                                                                              : want + v;
        }
        if (op == DLA_REDUCE_MEAN)
            want /= size_;
        double got = dla_tensor_item(t, i);
        if (!(fabs(got - want) <= 1e-5 * fmax(1, fabs(want)))) {
            CHECK(0, "%s element %lld: %g, expected %g", what, (long long)i, got, want);
            return;
        }
    }
}

static void case_allreduce(void)
{
    static const dla_dtype dtypes[] = {DLA_F32, DLA_F64, DLA_I32};
    static const dla_reduce_op ops[] = {DLA_REDUCE_SUM, DLA_REDUCE_MAX, DLA_REDUCE_MIN};
    for (int d = 0; d < 3; d++)
        for (int o = 0; o < 3; o++) {
            dla_tensor *t = vec(dtypes[d], 1000, f_mix);
            CHECK(dla_allreduce(1, &t, ops[o]) == DLA_OK, "allreduce");
            char what[64];
            snprintf(what, sizeof what, "%s %d", dla_dtype_name(dtypes[d]), (int)ops[o]);
            check_reduced(t, ops[o], what);
            dla_tensor_release(t);
        }
    /* Several tensors of several dtypes in one call, a mean, and a view
     * (every other element) that goes through the stage and back. */
    dla_tensor *a = vec(DLA_F32, 37, f_mix), *b = vec(DLA_F64, 5, f_mix),
               *c = vec(DLA_F32, 4096 + 3, f_mix), *base = vec(DLA_F32, 20, f_mix);
    dla_tensor *view = dla_slice(base, 1, 0, 2, 20);
    dla_tensor *set[] = {a, b, c, view};
    CHECK(dla_allreduce(4, set, DLA_REDUCE_SUM) == DLA_OK, "allreduce of 4");
    check_reduced(a, DLA_REDUCE_SUM, "a");
    check_reduced(b, DLA_REDUCE_SUM, "b");
    check_reduced(c, DLA_REDUCE_SUM, "c");
    for (int64_t i = 0; i < 20; i++) {
        double want = 0;
        for (int r = 0; r < size_; r++)
            want += f_mix(r, i);
        double got = dla_tensor_item(base, i);
        /* Even elements were in the view and are reduced; odd ones stay. */
        if (i % 2 == 0)
            CHECK(got == want, "view element %lld: %g, expected %g", (long long)i, got, want);
        else
            CHECK(got == f_mix(rank_, i), "element %lld outside the view changed: %g",
                  (long long)i, got);
    }
    dla_tensor *m = vec(DLA_F64, 11, f_mix);
    CHECK(dla_allreduce(1, &m, DLA_REDUCE_MEAN) == DLA_OK, "mean");
    check_reduced(m, DLA_REDUCE_MEAN, "mean");
    /* No tensors at all is a collective that does nothing. */
    CHECK(dla_allreduce(0, NULL, DLA_REDUCE_SUM) == DLA_OK, "n = 0");
    /* Integer sums saturate, as MATLAB's gplus of int32 and uint8 does:
     * summed in the dtype on the wire, they wrapped (2147483647 +
     * 2147483647 gave -2, 200 + 200 gave 144) with DLA_OK. The sum is the
     * whole sum's, saturated once (INT32_MAX twice and INT32_MIN once is
     * INT32_MAX - 1, not INT32_MAX + INT32_MIN); blocking and not. */
    for (int async = 0; async < 2; async++) {
        int32_t iv[4] = {INT32_MAX - rank_, INT32_MIN + rank_,
                         (rank_ % 2 ? -1 : 1) * 2000000000, rank_ == 2 ? INT32_MIN : INT32_MAX};
        uint8_t uv[2] = {200, 7};
        dla_tensor *it = dla_tensor_from_host(iv, DLA_I32, "", DLA_DIMS(4));
        dla_tensor *ut = dla_tensor_from_host(uv, DLA_U8, "", DLA_DIMS(2));
        dla_tensor *pair[] = {it, ut};
        dla_status st;
        if (async) {
            dla_spmd_request *req = NULL;
            st = dla_allreduce_start(2, pair, DLA_REDUCE_SUM, &req);
            if (st == DLA_OK)
                st = dla_spmd_wait(req);
        } else {
            st = dla_allreduce(2, pair, DLA_REDUCE_SUM);
        }
        CHECK(st == DLA_OK, "integer sums (%s): %s", async ? "start" : "blocking", dla_last_error());
        int32_t gi[4];
        uint8_t gu[2];
        CHECK(dla_tensor_to_host(it, gi, sizeof gi) == DLA_OK &&
                  dla_tensor_to_host(ut, gu, sizeof gu) == DLA_OK, "integer sums read");
        for (int i = 0; i < 6; i++) {
            double want = 0;
            for (int r = 0; r < size_; r++) {
                const int32_t rv[4] = {INT32_MAX - r, INT32_MIN + r, (r % 2 ? -1 : 1) * 2000000000,
                                       r == 2 ? INT32_MIN : INT32_MAX};
                want += i < 4 ? (double)rv[i] : i == 4 ? 200.0 : 7.0;
            }
            const double lo = i < 4 ? (double)INT32_MIN : 0, hi = i < 4 ? (double)INT32_MAX : 255;
            want = want < lo ? lo : want > hi ? hi : want;
            const double got = i < 4 ? (double)gi[i] : (double)gu[i - 4];
            CHECK(got == want, "%s sum %d (%s): %.0f, expected %.0f (saturated)",
                  i < 4 ? "int32" : "uint8", i < 4 ? i : i - 4, async ? "start" : "blocking", got,
                  want);
        }
        dla_tensor_release(it);
        dla_tensor_release(ut);
    }
    dla_tensor_release(a);
    dla_tensor_release(b);
    dla_tensor_release(c);
    dla_tensor_release(view);
    dla_tensor_release(base);
    dla_tensor_release(m);
}

static void case_broadcast(void)
{
    int root = size_ - 1;
    dla_tensor *a = vec(DLA_F32, 1000, f_mix), *b = vec(DLA_I32, 3, f_mix);
    dla_tensor *base = vec(DLA_F64, 10, f_mix);
    dla_tensor *view = dla_slice(base, 1, 1, 3, 10);
    dla_tensor *set[] = {a, b, view};
    CHECK(dla_broadcast(3, set, root) == DLA_OK, "broadcast");
    for (int64_t i = 0; i < 1000; i++)
        if (dla_tensor_item(a, i) != (float)f_mix(root, i)) {
            CHECK(0, "a[%lld] = %g, root has %g", (long long)i, dla_tensor_item(a, i),
                  f_mix(root, i));
            break;
        }
    for (int64_t i = 0; i < 3; i++)
        CHECK(dla_tensor_item(b, i) == f_mix(root, i), "b[%lld]", (long long)i);
    for (int64_t i = 0; i < 10; i++) {
        double want = (i % 3 == 1) ? f_mix(root, i) : f_mix(rank_, i);
        CHECK(dla_tensor_item(base, i) == want, "base[%lld] = %g, expected %g", (long long)i,
              dla_tensor_item(base, i), want);
    }
    dla_tensor_release(a);
    dla_tensor_release(b);
    dla_tensor_release(view);
    dla_tensor_release(base);
}

/* Ranks that lay the same tensors out otherwise: a is dense on even
 * ranks and every other element of a buffer on odd ones (staged there),
 * b dense everywhere. Each collective must pair a with a and b with b
 * (it paired the staged a with another rank's b: every rank got sums of
 * the wrong tensors, with DLA_OK). */
static double f_b(int r, int64_t i) { return 100.0 + f_mix(r, i); }

static void a_and_b(int strided, dla_tensor **a, dla_tensor **b, dla_tensor **base)
{
    *base = vec(DLA_F32, 8, f_mix);
    *a = strided ? dla_slice(*base, 1, 0, 2, 8) : vec(DLA_F32, 4, f_mix);
    *b = vec(DLA_F32, 4, f_b);
}

static void case_layouts(void)
{
    const int odd = rank_ % 2;
    for (int how = 0; how < 3; how++) { /* blocking, non-blocking, broadcast */
        dla_tensor *a, *b, *base;
        a_and_b(odd, &a, &b, &base);
        /* a's values: f_mix of its own elements 0..3, wherever they lie. */
        for (int64_t i = 0; i < 4; i++)
            CHECK(dla_tensor_item(a, i) == (float)f_mix(rank_, odd ? 2 * i : i), "a set");
        dla_tensor *ab[] = {a, b};
        const int root = size_ - 1;
        if (how == 0) {
            CHECK(dla_allreduce(2, ab, DLA_REDUCE_SUM) == DLA_OK, "allreduce");
        } else if (how == 1) {
            dla_spmd_request *r = NULL;
            CHECK(dla_allreduce_start(2, ab, DLA_REDUCE_SUM, &r) == DLA_OK && r, "start");
            CHECK(dla_spmd_wait(r) == DLA_OK, "wait");
        } else {
            CHECK(dla_broadcast(2, ab, root) == DLA_OK, "broadcast");
        }
        for (int64_t i = 0; i < 4; i++) {
            double wa = 0, wb = 0;
            for (int r = 0; r < size_; r++) {
                wa += f_mix(r, r % 2 ? 2 * i : i);
                wb += f_b(r, i);
            }
            if (how == 2) {
                wa = f_mix(root, root % 2 ? 2 * i : i);
                wb = f_b(root, i);
            }
            CHECK(dla_tensor_item(a, i) == (float)wa, "%s a[%lld] = %g, expected %g",
                  how == 0 ? "allreduce" : how == 1 ? "async" : "broadcast", (long long)i,
                  dla_tensor_item(a, i), wa);
            CHECK(dla_tensor_item(b, i) == (float)wb, "%s b[%lld] = %g, expected %g",
                  how == 0 ? "allreduce" : how == 1 ? "async" : "broadcast", (long long)i,
                  dla_tensor_item(b, i), wb);
        }
        dla_tensor_release(a);
        dla_tensor_release(b);
        dla_tensor_release(base);
    }
}

/* An accelerated function whose results include a constant it made (c,
 * and a view of it): each call's results are the caller's own. Summing
 * one in place across the ranks must change neither the next call's
 * results nor the trace (a replay handed out the trace's constant itself,
 * so every later call returned c and x + c summed over the ranks). */
static dla_status const_results(void *ctx, int nin, dla_tensor *const *in, int nout,
                                dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    const float h[4] = {1, 2, 3, 4};
    dla_tensor *c = dla_tensor_from_host(h, DLA_F32, "", 1, (int64_t[]){4});
    out[0] = dla_add(in[0], c);
    out[1] = c;
    out[2] = dla_reshape(c, "", 2, (int64_t[]){2, 2});
    return DLA_OK;
}

static void case_accel_result(void)
{
    dla_tensor *x = vec(DLA_F32, 4, f_mix);
    dla_accel *af = dla_accelerate(const_results, NULL);
    for (int call = 0; call < 4; call++) {
        dla_tensor *out[3];
        CHECK(dla_accel_call(af, NULL, 1, &x, 3, out) == DLA_OK, "call %d", call);
        for (int64_t i = 0; i < 4; i++) {
            CHECK(dla_tensor_item(out[0], i) == (float)(f_mix(rank_, i) + (double)(i + 1)),
                  "call %d: x + c [%lld] = %g", call, (long long)i, dla_tensor_item(out[0], i));
            CHECK(dla_tensor_item(out[1], i) == (float)(i + 1) &&
                      dla_tensor_item(out[2], i) == (float)(i + 1),
                  "call %d: c [%lld] = %g, its view %g, expected %lld", call, (long long)i,
                  dla_tensor_item(out[1], i), dla_tensor_item(out[2], i), (long long)(i + 1));
        }
        /* c, or its view on even calls (whether the two share memory is
         * the function's business, as eagerly). */
        dla_tensor **sum = &out[1 + call % 2];
        CHECK(dla_allreduce(1, sum, DLA_REDUCE_SUM) == DLA_OK, "allreduce");
        for (int64_t i = 0; i < 4; i++)
            CHECK(dla_tensor_item(*sum, i) == (float)(size_ * (i + 1)),
                  "call %d: summed c [%lld] = %g", call, (long long)i, dla_tensor_item(*sum, i));
        for (int k = 0; k < 3; k++)
            dla_tensor_release(out[k]);
    }
    CHECK(dla_accel_hit_rate(af) == 75.0, "hit rate %g, expected 75", dla_accel_hit_rate(af));
    dla_accel_free(af);
    dla_tensor_release(x);
}

/* Dense tensors only: on a device with collectives of its own, the
 * broadcast goes there (tests/spmd_device.sh). */
static void case_bcast_dense(void)
{
    int root = size_ - 1;
    dla_tensor *a = vec(DLA_F32, 1000, f_mix), *b = vec(DLA_I32, 3, f_mix);
    dla_tensor *set[] = {a, b};
    CHECK(dla_broadcast(2, set, root) == DLA_OK, "broadcast");
    for (int64_t i = 0; i < 1000; i++)
        if (dla_tensor_item(a, i) != (float)f_mix(root, i)) {
            CHECK(0, "a[%lld] = %g, root has %g", (long long)i, dla_tensor_item(a, i),
                  f_mix(root, i));
            break;
        }
    for (int64_t i = 0; i < 3; i++)
        CHECK(dla_tensor_item(b, i) == f_mix(root, i), "b[%lld]", (long long)i);
    dla_tensor_release(a);
    dla_tensor_release(b);
}

static void case_allgather(void)
{
    float v[6];
    for (int i = 0; i < 6; i++)
        v[i] = (float)(rank_ * 100 + i);
    int64_t dims[2] = {2, 3};
    dla_tensor *x = dla_tensor_from_host(v, DLA_F32, "", 2, dims), *out = NULL;
    CHECK(dla_allgather(x, &out) == DLA_OK, "allgather");
    CHECK(out && dla_tensor_dim(out, 1) == 2 &&
              dla_tensor_dim(out, 2) == 3 && dla_tensor_dim(out, 3) == size_,
          "dims of the result");
    for (int r = 0; out && r < size_; r++)
        for (int i = 0; i < 6; i++)
            CHECK(dla_tensor_item(out, r * 6 + i) == r * 100 + i, "out[%d]", r * 6 + i);
    dla_tensor_release(x);
    dla_tensor_release(out);
    /* 4000 bytes a rank: several parts where the plugin moves 1 KiB a
     * call (tests/spmd.sh), each of which must land in its rank's slot. */
    dla_tensor *big = vec(DLA_F32, 1000, f_mix), *all = NULL;
    CHECK(dla_allgather(big, &all) == DLA_OK, "allgather of 1000");
    int wrong = 0;
    for (int r = 0; all && r < size_; r++)
        for (int64_t i = 0; i < 1000; i++)
            wrong += dla_tensor_item(all, r * 1000 + i) != (float)f_mix(r, i);
    CHECK(all && !wrong, "allgather of 1000: %d elements differ", wrong);
    dla_tensor_release(big);
    dla_tensor_release(all);
}

static void case_flags(void)
{
    bool r = false;
    CHECK(dla_spmd_all(true, &r) == DLA_OK && r, "all(true)");
    CHECK(dla_spmd_all(rank_ != size_ - 1, &r) == DLA_OK && !r, "all(false on the last)");
    CHECK(dla_spmd_any(rank_ == size_ - 1, &r) == DLA_OK && r, "any(true on the last)");
    CHECK(dla_spmd_any(false, &r) == DLA_OK && !r, "any(false)");
}

static void case_queue(void)
{
    dla_dataqueue *q = NULL;
    CHECK(dla_dataqueue_create(&q) == DLA_OK, "create");
    enum { PER_RANK = 5 };
    for (int i = 0; i < PER_RANK; i++) {
        char msg[64];
        int len = snprintf(msg, sizeof msg, "%d:%d", rank_, i);
        CHECK(dla_dataqueue_send(q, msg, (size_t)len + 1) == DLA_OK, "send %d", i);
    }
    if (rank_ == 0) {
        int next[64] = {0}, got = 0;
        for (int spins = 0; got < size_ * PER_RANK && spins < 200000; spins++) {
            char buf[64];
            int from = -1;
            size_t n = 0;
            int st = dla_dataqueue_poll(q, buf, sizeof buf, &from, &n);
            CHECK(st >= 0, "poll");
            if (st <= 0) {
                usleep(50);
                continue;
            }
            int r = -1, i = -1;
            CHECK(sscanf(buf, "%d:%d", &r, &i) == 2 && r == from, "message '%s' from %d", buf,
                  from);
            /* One sender's messages arrive in its order. */
            CHECK(r >= 0 && r < 64 && i == next[r], "message %d:%d out of order", r, i);
            if (r >= 0 && r < 64)
                next[r]++;
            got++;
        }
        CHECK(got == size_ * PER_RANK, "%d messages of %d", got, size_ * PER_RANK);
    } else {
        char buf[8];
        int from;
        size_t n;
        CHECK(dla_dataqueue_poll(q, buf, sizeof buf, &from, &n) == 0, "a worker polls nothing");
    }
    /* Messages not polled are taken by free: none is left in flight. The
     * barrier first: a worker done with its five would otherwise send
     * "late" while rank 0 still polls for the others' (seen at 4 ranks). */
    CHECK(dla_spmd_barrier() == DLA_OK, "barrier before the late send");
    CHECK(dla_dataqueue_send(q, "late", 5) == DLA_OK, "late send");
    dla_dataqueue_free(q);
    CHECK(dla_spmd_barrier() == DLA_OK, "barrier after free");
}

/* One rank's own bad arguments fail every rank, naming it. */
static void case_args(void)
{
    int bad = size_ - 1;
    dla_tensor *t = vec(DLA_F32, 10, f_mix), *i32 = vec(DLA_I32, 4, f_mix);
    dla_tensor *set[] = {t};
    dla_tensor *null_set[] = {NULL};
    char want[32];
    snprintf(want, sizeof want, "rank %d", bad);

    dla_status st = dla_allreduce(1, rank_ == bad ? null_set : set, DLA_REDUCE_SUM);
    CHECK(st == DLA_ERR_INVALID_ARGUMENT, "NULL tensor on rank %d: status %d", bad, st);
    CHECK(size_ == 1 || strstr(dla_last_error(), want), "message names %s", want);
    CHECK(strstr(dla_last_error(), "t[0]"), "message names t[0]");

    st = dla_allreduce(1, &i32, DLA_REDUCE_MEAN);
    CHECK(st == DLA_ERR_DTYPE, "mean of int32: status %d", st);
    st = dla_allreduce(1, set, (dla_reduce_op)17);
    CHECK(st == DLA_ERR_INVALID_ARGUMENT, "op 17: status %d", st);
    st = dla_broadcast(1, set, size_);
    CHECK(st == DLA_ERR_INVALID_ARGUMENT && strstr(dla_last_error(), "root"), "root %d", size_);
    dla_tensor *twice[] = {t, t};
    st = dla_allreduce(2, twice, DLA_REDUCE_SUM);
    CHECK(st == DLA_ERR_INVALID_ARGUMENT && strstr(dla_last_error(), "share memory"),
          "the same tensor twice");
    dla_tensor *err = dla_error_tensor(DLA_ERR_SHAPE, "made to fail");
    dla_tensor *eset[] = {err};
    st = dla_allreduce(1, rank_ == bad ? eset : set, DLA_REDUCE_SUM);
    CHECK(st == DLA_ERR_SHAPE && strstr(dla_last_error(), "made to fail"), "error tensor");
    bool r;
    CHECK(dla_spmd_all(true, NULL) == DLA_ERR_INVALID_ARGUMENT &&
              strstr(dla_last_error(), "dla_spmd_all: argument all: NULL"),
          "all with NULL: %s", dla_last_error());
    CHECK(dla_spmd_any(true, NULL) == DLA_ERR_INVALID_ARGUMENT &&
              strstr(dla_last_error(), "dla_spmd_any: argument any: NULL"),
          "any with NULL: %s", dla_last_error());
    /* After all that the world still agrees: a plain reduction works. */
    CHECK(dla_allreduce(1, set, DLA_REDUCE_SUM) == DLA_OK, "allreduce after the errors");
    check_reduced(t, DLA_REDUCE_SUM, "after errors");
    CHECK(dla_spmd_all(true, &r) == DLA_OK && r, "all after the errors");
    dla_tensor_release(err);
    dla_tensor_release(t);
    dla_tensor_release(i32);
}

/* Ranks that pass different things: every rank gets the named error. */
static void case_mismatch(void)
{
    int odd = size_ - 1;
    char want[32];
    snprintf(want, sizeof want, "rank %d", odd);
    /* 1001 floats where the others pass 1000 (MPI itself says nothing). */
    dla_tensor *t = vec(DLA_F32, rank_ == odd ? 1001 : 1000, f_mix);
    dla_tensor *u = vec(rank_ == odd ? DLA_F64 : DLA_F32, 8, f_mix);
    dla_status st = dla_allreduce(1, &t, DLA_REDUCE_SUM);
    CHECK(st == DLA_ERR_INVALID_ARGUMENT, "1001 against 1000: status %d", st);
    CHECK(strstr(dla_last_error(), want) && strstr(dla_last_error(), "tensor 0") &&
              strstr(dla_last_error(), "single 1001") && strstr(dla_last_error(), "single 1000"),
          "message: %s", dla_last_error());
    CHECK(dla_tensor_item(t, 0) == (float)f_mix(rank_, 0), "the data were left alone");
    dla_tensor *set[] = {u, t};
    st = dla_allreduce(2, set, DLA_REDUCE_SUM);
    CHECK(st == DLA_ERR_INVALID_ARGUMENT && strstr(dla_last_error(), "tensor 0") &&
              strstr(dla_last_error(), "double 8"),
          "dtype differs: %s", dla_last_error());
    st = dla_allreduce(rank_ == odd ? 1 : 2, set, DLA_REDUCE_SUM);
    CHECK(st == DLA_ERR_INVALID_ARGUMENT && strstr(dla_last_error(), "passed 1 tensor"),
          "count differs: %s", dla_last_error());
    st = dla_allreduce(1, &u, rank_ == odd ? DLA_REDUCE_MAX : DLA_REDUCE_SUM);
    CHECK(st == DLA_ERR_INVALID_ARGUMENT && strstr(dla_last_error(), "asked for max"),
          "op differs: %s", dla_last_error());
    /* Different collectives at the same point. */
    if (rank_ == odd)
        st = dla_broadcast(1, &u, 0);
    else
        st = dla_allreduce(1, &u, DLA_REDUCE_SUM);
    CHECK(st == DLA_ERR_INVALID_ARGUMENT && strstr(dla_last_error(), "dla_broadcast") &&
              strstr(dla_last_error(), "dla_allreduce"),
          "collective differs: %s", dla_last_error());
    /* The same sizes under other labels ("CB" here, "SB" there; a
     * formatted tensor against an unformatted one) are other data: they
     * were summed and gathered element by element, DLA_OK. */
    static const float vals[6] = {1, 2, 3, 4, 5, 6};
    dla_tensor *f = dla_tensor_from_host(vals, DLA_F32, rank_ == odd ? "SB" : "CB", DLA_DIMS(3, 2));
    st = dla_allreduce(1, &f, DLA_REDUCE_SUM);
    CHECK(st == DLA_ERR_INVALID_ARGUMENT && strstr(dla_last_error(), want) &&
              strstr(dla_last_error(), "(format SB)") && strstr(dla_last_error(), "(format CB)"),
          "format differs: status %d: %s", st, dla_last_error());
    CHECK(dla_tensor_item(f, 0) == 1.0f, "the data were left alone");
    dla_tensor *fg = NULL;
    st = dla_allgather(f, &fg);
    CHECK(st == DLA_ERR_INVALID_ARGUMENT && !fg && strstr(dla_last_error(), "(format SB)"),
          "allgather, format differs: status %d: %s", st, dla_last_error());
    dla_tensor *uf = dla_tensor_from_host(vals, DLA_F32, rank_ == odd ? "" : "CB", DLA_DIMS(3, 2));
    st = dla_allreduce(1, &uf, DLA_REDUCE_SUM);
    CHECK(st == DLA_ERR_INVALID_ARGUMENT && strstr(dla_last_error(), "(unformatted)"),
          "formatted against unformatted: status %d: %s", st, dla_last_error());
    /* A broadcast copies root's values into each rank's own tensor: labels
     * aside. And a trailing singleton's label is not compared, as its size
     * is not: "CB" of 3x1 is "C" of 3. */
    CHECK(dla_broadcast(1, &f, 0) == DLA_OK, "broadcast across formats: %s", dla_last_error());
    dla_tensor *one = rank_ == odd ? dla_tensor_from_host(vals, DLA_F32, "C", DLA_DIMS(3))
                                   : dla_tensor_from_host(vals, DLA_F32, "CB", DLA_DIMS(3, 1));
    CHECK(dla_allreduce(1, &one, DLA_REDUCE_SUM) == DLA_OK &&
              dla_tensor_item(one, 0) == (float)size_,
          "\"CB\" of 3x1 with \"C\" of 3: %s", dla_last_error());
    dla_tensor_release(f);
    dla_tensor_release(uf);
    dla_tensor_release(one);
    bool r;
    CHECK(dla_spmd_all(true, &r) == DLA_OK && r, "the world still agrees afterwards");
    dla_tensor_release(t);
    dla_tensor_release(u);
}

/* dla_allreduce_start: several requests in flight at once, blocking
 * collectives started among them, ended by test loops, by waits out of
 * order, and with one rank late; the results those of dla_allreduce. */
static void case_async(void)
{
    const char *abi10 = getenv("DLA_TEST_ABI10");
    int want_overlap = size_ > 1 && !(abi10 && !strcmp(abi10, "1"));
    CHECK(dla_spmd_overlaps() == want_overlap, "dla_spmd_overlaps() %d, expected %d",
          dla_spmd_overlaps(), want_overlap);
    dla_tensor *a = vec(DLA_F32, 1000, f_mix), *b = vec(DLA_F64, 37, f_mix),
               *c = vec(DLA_I32, 4096 + 3, f_mix), *m = vec(DLA_F64, 11, f_mix),
               *base = vec(DLA_F32, 20, f_mix), *big = vec(DLA_F32, 1 << 20, f_mix);
    dla_tensor *view = dla_slice(base, 1, 0, 2, 20);
    dla_tensor *ab[] = {a, b};
    dla_spmd_request *r1 = NULL, *r2 = NULL, *r3 = NULL, *r4 = NULL, *r5 = NULL;
    CHECK(dla_allreduce_start(2, ab, DLA_REDUCE_SUM, &r1) == DLA_OK && r1, "start 1");
    /* A blocking collective while r1 is in flight. */
    bool all = false;
    CHECK(dla_spmd_all(true, &all) == DLA_OK && all, "all among requests");
    CHECK(dla_allreduce_start(1, &c, DLA_REDUCE_MAX, &r2) == DLA_OK && r2, "start 2");
    CHECK(dla_allreduce_start(1, &m, DLA_REDUCE_MEAN, &r3) == DLA_OK && r3, "start 3");
    CHECK(dla_allreduce_start(1, &view, DLA_REDUCE_SUM, &r4) == DLA_OK && r4, "start 4");
    CHECK(dla_allreduce_start(1, &big, DLA_REDUCE_SUM, &r5) == DLA_OK && r5, "start 5");
    dla_tensor *g = vec(DLA_F32, 5, f_mix), *gathered = NULL;
    CHECK(dla_allgather(g, &gathered) == DLA_OK, "allgather among requests");
    /* Rank 0 late to the next test: the others wait for it. */
    if (rank_ == 0)
        usleep(50000);
    /* The last started waited first; then test loops; then the rest. */
    CHECK(dla_spmd_wait(r5) == DLA_OK, "wait 5");
    bool done = false;
    dla_status st = DLA_OK;
    for (int i = 0; i < 1000000 && !done && st == DLA_OK; i++) {
        st = dla_spmd_test(r2, &done);
        dla_spmd_progress();
    }
    CHECK(st == DLA_OK && done, "test 2: status %d, done %d", st, done);
    CHECK(dla_spmd_wait(r1) == DLA_OK, "wait 1");
    CHECK(dla_spmd_wait(r4) == DLA_OK, "wait 4");
    CHECK(dla_spmd_wait(r3) == DLA_OK, "wait 3");
    check_reduced(a, DLA_REDUCE_SUM, "async a");
    check_reduced(b, DLA_REDUCE_SUM, "async b");
    check_reduced(c, DLA_REDUCE_MAX, "async c");
    check_reduced(m, DLA_REDUCE_MEAN, "async mean");
    double want5 = 0;
    for (int r = 0; r < size_; r++)
        want5 += f_mix(r, 12345);
    CHECK(dla_tensor_item(big, 12345) == want5, "async big: %g, expected %g",
          dla_tensor_item(big, 12345), want5);
    for (int64_t i = 0; i < 20; i++) {
        double want = 0;
        for (int r = 0; r < size_; r++)
            want += f_mix(r, i);
        double got = dla_tensor_item(base, i);
        if (i % 2 == 0)
            CHECK(got == want, "async view element %lld: %g, expected %g", (long long)i, got, want);
        else
            CHECK(got == f_mix(rank_, i), "element %lld outside the view changed", (long long)i);
    }
    /* The same sums as the blocking reduction, to the bit. */
    dla_tensor *x = vec(DLA_F32, 3000, f_mix), *y = vec(DLA_F32, 3000, f_mix);
    dla_spmd_request *rx = NULL;
    CHECK(dla_allreduce_start(1, &x, DLA_REDUCE_SUM, &rx) == DLA_OK, "start x");
    CHECK(dla_spmd_wait(rx) == DLA_OK, "wait x");
    CHECK(dla_allreduce(1, &y, DLA_REDUCE_SUM) == DLA_OK, "blocking y");
    int differ = 0;
    for (int64_t i = 0; i < 3000; i++)
        differ += dla_tensor_item(x, i) != dla_tensor_item(y, i);
    CHECK(!differ, "%d elements differ from dla_allreduce's", differ);
    /* No tensors: a collective that does nothing. */
    dla_spmd_request *r0 = NULL;
    CHECK(dla_allreduce_start(0, NULL, DLA_REDUCE_SUM, &r0) == DLA_OK && dla_spmd_wait(r0) == DLA_OK,
          "n = 0");
    CHECK(dla_allreduce_start(1, &a, DLA_REDUCE_SUM, NULL) == DLA_ERR_INVALID_ARGUMENT,
          "req NULL");
    dla_tensor *ts[] = {a, b, c, m, base, big, view, g, gathered, x, y};
    for (size_t i = 0; i < sizeof ts / sizeof ts[0]; i++)
        dla_tensor_release(ts[i]);
}

/* Mismatched arguments of dla_allreduce_start: the named error from the
 * wait on every rank, nothing reduced, and the world goes on. */
static void case_async_mismatch(void)
{
    int odd = size_ - 1;
    char want[64];
    snprintf(want, sizeof want, "rank %d", odd);
    dla_tensor *t = vec(DLA_F32, rank_ == odd ? 1001 : 1000, f_mix);
    dla_tensor *u = vec(rank_ == odd ? DLA_F64 : DLA_F32, 8, f_mix);
    dla_spmd_request *r = NULL;
    CHECK(dla_allreduce_start(1, &t, DLA_REDUCE_SUM, &r) == DLA_OK && r, "start");
    dla_status st = dla_spmd_wait(r);
    CHECK(st == DLA_ERR_INVALID_ARGUMENT && strstr(dla_last_error(), want) &&
              strstr(dla_last_error(), "tensor 0") && strstr(dla_last_error(), "single 1001") &&
              strstr(dla_last_error(), "single 1000"),
          "1001 against 1000: status %d: %s", st, dla_last_error());
    CHECK(dla_tensor_item(t, 0) == (float)f_mix(rank_, 0), "the data were left alone");
    /* Two in flight: the first disagrees on the dtype, the second is fine. */
    dla_tensor *v = vec(DLA_F32, 16, f_mix);
    dla_spmd_request *r1 = NULL, *r2 = NULL;
    CHECK(dla_allreduce_start(1, &u, DLA_REDUCE_SUM, &r1) == DLA_OK, "start u");
    CHECK(dla_allreduce_start(1, &v, DLA_REDUCE_SUM, &r2) == DLA_OK, "start v");
    CHECK(dla_spmd_wait(r2) == DLA_OK, "the good one after a bad one");
    st = dla_spmd_wait(r1);
    CHECK(st == DLA_ERR_INVALID_ARGUMENT && strstr(dla_last_error(), "double 8") &&
              strstr(dla_last_error(), want),
          "dtype differs: %s", dla_last_error());
    check_reduced(v, DLA_REDUCE_SUM, "v");
    /* The same sizes under other labels. */
    static const float vals[6] = {1, 2, 3, 4, 5, 6};
    dla_tensor *f = dla_tensor_from_host(vals, DLA_F32, rank_ == odd ? "SB" : "CB", DLA_DIMS(3, 2));
    CHECK(dla_allreduce_start(1, &f, DLA_REDUCE_SUM, &r) == DLA_OK && r, "start f");
    st = dla_spmd_wait(r);
    CHECK(st == DLA_ERR_INVALID_ARGUMENT && strstr(dla_last_error(), want) &&
              strstr(dla_last_error(), "(format SB)") && strstr(dla_last_error(), "(format CB)"),
          "format differs: status %d: %s", st, dla_last_error());
    dla_tensor_release(f);
    /* One rank's own arguments refused: every rank fails, naming it. */
    dla_tensor *none = NULL;
    CHECK(dla_allreduce_start(1, rank_ == odd ? &none : &t, DLA_REDUCE_SUM, &r) == DLA_OK && r,
          "start with NULL on one rank");
    st = dla_spmd_wait(r);
    char refused[64];
    snprintf(refused, sizeof refused, "rank %d refused its arguments", odd);
    if (rank_ == odd || size_ > 1)
        CHECK(st != DLA_OK && strstr(dla_last_error(), size_ > 1 ? refused : "NULL"),
              "refused: status %d: %s", st, dla_last_error());
    /* A non-blocking reduction where another rank calls the blocking one. */
    if (dla_spmd_overlaps()) {
        dla_tensor *w = vec(DLA_F32, 8, f_mix);
        if (rank_ == odd)
            st = dla_allreduce(1, &w, DLA_REDUCE_SUM);
        else if ((st = dla_allreduce_start(1, &w, DLA_REDUCE_SUM, &r)) == DLA_OK)
            st = dla_spmd_wait(r);
        CHECK(st == DLA_ERR_INVALID_ARGUMENT && strstr(dla_last_error(), "dla_allreduce_start") &&
                  strstr(dla_last_error(), "called dla_allreduce "),
              "collective differs: %s", dla_last_error());
        dla_tensor_release(w);
    }
    bool r_all;
    CHECK(dla_spmd_all(true, &r_all) == DLA_OK && r_all, "the world still agrees afterwards");
    dla_tensor_release(t);
    dla_tensor_release(u);
    dla_tensor_release(v);
}

/* A world of one, without mpirun: collectives return their input, and MPI
 * was never loaded. */
static void case_single(void)
{
    CHECK(size_ == 1 && rank_ == 0 && !strcmp(dla_spmd_backend(), "single"), "world of one");
    case_allreduce();
    case_broadcast();
    case_allgather();
    case_flags();
    case_queue();
    case_async();
    FILE *maps = fopen("/proc/self/maps", "r");
    char line[512];
    int mpi = 0;
    while (maps && fgets(line, sizeof line, maps))
        mpi |= strstr(line, "libmpi") != NULL || strstr(line, "libdlaccel-mpi") != NULL;
    if (maps)
        fclose(maps);
    CHECK(!mpi, "MPI is mapped into a world of one");
}

/* The last rank never comes to the collective (hang: it sleeps; kill: it
 * dies); the others must end with an error naming it. */
static void case_fault(int kill_it);
static void case_hang(void) { case_fault(0); }
static void case_kill(void) { case_fault(1); }

static void case_fault(int kill_it)
{
    dla_tensor *t = vec(DLA_F32, 100, f_mix);
    CHECK(dla_allreduce(1, &t, DLA_REDUCE_SUM) == DLA_OK, "first allreduce");
    if (rank_ == size_ - 1) {
        fflush(stdout);
        if (kill_it)
            raise(SIGKILL);
        sleep(60);
        dla_tensor_release(t);
        return;
    }
    dla_status st = dla_allreduce(1, &t, DLA_REDUCE_SUM);
    char want[64];
    snprintf(want, sizeof want, "rank %d (no answer", size_ - 1);
    CHECK(st == DLA_ERR_STATE && strstr(dla_last_error(), want), "status %d: %s", st,
          dla_last_error());
    printf("rank %d: error: %s\n", rank_, dla_last_error());
    /* Broken now: the next collective fails at once. */
    st = dla_spmd_barrier();
    CHECK(st == DLA_ERR_STATE && strstr(dla_last_error(), "broken"), "after: %s",
          dla_last_error());
    dla_tensor_release(t);
}

/* The last rank never starts a non-blocking reduction the others started:
 * their waits give up with the error naming it, as a blocking one's. */
static void case_async_hang(void)
{
    dla_tensor *t = vec(DLA_F32, 100, f_mix);
    if (rank_ == size_ - 1) {
        fflush(stdout);
        sleep(60);
        dla_tensor_release(t);
        return;
    }
    dla_spmd_request *r = NULL;
    CHECK(dla_allreduce_start(1, &t, DLA_REDUCE_SUM, &r) == DLA_OK && r, "start");
    dla_status st = dla_spmd_wait(r);
    char want[64];
    snprintf(want, sizeof want, "rank %d (no answer", size_ - 1);
    CHECK(st == DLA_ERR_STATE && strstr(dla_last_error(), want), "status %d: %s", st,
          dla_last_error());
    printf("rank %d: error: %s\n", rank_, dla_last_error());
    CHECK(dla_spmd_barrier() == DLA_ERR_STATE && strstr(dla_last_error(), "broken"), "after: %s",
          dla_last_error());
    dla_tensor_release(t);
}

/* The last rank is stopped inside the transfer of the second reduction
 * (tests/plugins/spmd_stall.c, preloaded): the others are blocked in it
 * too, and the watchdog must end them with the error. They never return
 * from the call. */
static void case_stall(void)
{
    dla_tensor *t = vec(DLA_F32, 1000, f_mix);
    CHECK(dla_allreduce(1, &t, DLA_REDUCE_SUM) == DLA_OK, "first allreduce");
    fflush(stdout);
    dla_status st = dla_allreduce(1, &t, DLA_REDUCE_SUM);
    CHECK(0, "returned (status %d) from a transfer that a stopped rank never joined", st);
    dla_tensor_release(t);
}

static int run_case(const char *name)
{
    static const struct {
        const char *name;
        void (*fn)(void);
    } cases[] = {
        {"world", case_world},         {"allreduce", case_allreduce}, {"broadcast", case_broadcast},
        {"allgather", case_allgather}, {"flags", case_flags},         {"queue", case_queue},
        {"args", case_args},           {"mismatch", case_mismatch},   {"single", case_single},
        {"hang", case_hang},           {"kill", case_kill},           {"stall", case_stall},
        {"async", case_async},         {"async_mismatch", case_async_mismatch},
        {"async_hang", case_async_hang}, {"bcast_dense", case_bcast_dense},
        {"layouts", case_layouts},     {"accel_result", case_accel_result},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (strcmp(name, cases[i].name))
            continue;
        case_ = name;
        failures = 0;
        cases[i].fn();
        if (failures == 0)
            printf("rank %d: ok %s\n", rank_, name);
        fflush(stdout);
        return failures;
    }
    fprintf(stderr, "test_spmd: unknown case %s\n", name);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_spmd CASE[,CASE...]\n");
        return 2;
    }
    rank_ = dla_spmd_rank();
    size_ = dla_spmd_size();
    int failed = 0;
    char *list = strdup(argv[1]);
    for (char *save = NULL, *c = strtok_r(list, ",", &save); c; c = strtok_r(NULL, ",", &save))
        failed += run_case(c) != 0;
    free(list);
    return failed ? 1 : 0;
}
