/*
 * test_generic_datastore.c - MATLAB's generic datastores: arrayDatastore,
 * fileDatastore with a read function, transform, combine and custom
 * datastores (indexed and read in order); reads, ReadSize, readall,
 * subset, shuffle, partition; the mini-batch queue over each (shuffled,
 * partitioned, in the background); trainnet, testnet and
 * minibatchpredict over a datastore of the predictors, or of the
 * predictors and the targets (as over the tensors, bit for bit); and the
 * errors: shapes that differ across observations, lengths that differ in
 * a combine, callbacks that fail halfway, misuse of handles, targets that
 * do not fit the network (from the first observation, per mini-batch).
 */
#define _POSIX_C_SOURCE 200809L
#include "testutil.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <stdatomic.h>

#include "tu_assert.h"

#define assert_ok(call)                                                                            \
    do {                                                                                           \
        dla_status st_ = (call);                                                                   \
        if (st_ != DLA_OK)                                                                         \
            fail_msg("%s: %s: %s", #call, dla_status_str(st_), dla_last_error());                 \
    } while (0)

/* The last error has this status and mentions every one of the texts. */
static void expect_error(dla_status got, dla_status want, ...)
{
    if (got != want)
        fail_msg("status %s, wanted %s: %s", dla_status_str(got), dla_status_str(want),
                 dla_last_error());
    va_list ap;
    va_start(ap, want);
    for (const char *t; (t = va_arg(ap, const char *));)
        if (!strstr(dla_last_error(), t)) {
            va_end(ap);
            fail_msg("message \"%s\" lacks \"%s\"", dla_last_error(), t);
        }
    va_end(ap);
}

/* t's elements as doubles (n of them), and its dims as a string. */
static void values(dla_tensor *t, double *v, int64_t n)
{
    assert_int_equal(dla_tensor_status(t), DLA_OK);
    assert_int_equal(dla_tensor_numel(t), n);
    dla_scope_begin();
    dla_tensor *d = dla_cast(t, DLA_F64);
    assert_ok(dla_tensor_to_host(d, v, (size_t)n * sizeof *v));
    dla_scope_end();
}

static const char *dims_of(dla_tensor *t)
{
    static char buf[128];
    int64_t d[DLA_MAX_DIMS];
    int nd = dla_tensor_dims(t, d);
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < nd; i++)
        at += (size_t)snprintf(buf + at, sizeof buf - at, "%s%lld", i ? "x" : "", (long long)d[i]);
    return buf;
}

/* A 3 x n single array: column k holds k, 100 + k, 200 + k. */
static dla_tensor *columns(int64_t n, const char *format)
{
    float *v = malloc((size_t)(3 * n) * sizeof *v);
    for (int64_t k = 0; k < n; k++)
        for (int r = 0; r < 3; r++)
            v[3 * k + r] = (float)(100 * r + k);
    dla_tensor *t = dla_tensor_from_host(v, DLA_F32, format, DLA_DIMS(3, n));
    free(v);
    return t;
}

/* ------------------------------------------------------------ array */

static void test_array_reads_read_size_observations_along_the_last_dim(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_datastore *ds;
    assert_ok(dla_array_datastore(columns(10, ""), &(dla_array_datastore_options){.read_size = 4},
                                  &ds));
    assert_int_equal(dla_datastore_num_outputs(ds), 1);
    assert_int_equal(dla_datastore_num_observations(ds), 10);
    assert_true(dla_datastore_is_indexed(ds));
    const int64_t sizes[] = {4, 4, 2};
    int64_t first = 0;
    for (int r = 0; r < 3; r++) {
        assert_true(dla_datastore_hasdata(ds));
        dla_tensor *x;
        assert_ok(dla_datastore_read(ds, 1, &x));
        assert_int_equal(dla_tensor_dim(x, 1), 3);
        assert_int_equal(dla_tensor_dim(x, 2), sizes[r]);
        double v[12];
        values(x, v, 3 * sizes[r]);
        for (int64_t k = 0; k < sizes[r]; k++)
            tu_assert_near(v[3 * k + 1], 100.0 + (double)(first + k), 0);
        first += sizes[r];
    }
    assert_false(dla_datastore_hasdata(ds));
    dla_tensor *x;
    expect_error(dla_datastore_read(ds, 1, &x), DLA_ERR_STATE, "dla_datastore_read",
                 "dla_datastore_reset", NULL);
    assert_null(x);
    /* readall: everything, whatever the position; reset starts again. */
    assert_ok(dla_datastore_readall(ds, 1, &x));
    assert_string_equal(dims_of(x), "3x10");
    dla_datastore_reset(ds);
    assert_true(dla_datastore_hasdata(ds));
    assert_ok(dla_datastore_set_read_size(ds, 1));
    assert_ok(dla_datastore_read(ds, 1, &x));
    assert_string_equal(dims_of(x), "3x1");
    dla_datastore_free(ds);
    dla_scope_end();
}

static void test_array_iteration_dimension_and_formats(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_datastore *ds;
    /* Rows: MATLAB's default IterationDimension 1. */
    assert_ok(dla_array_datastore(columns(5, ""),
                                  &(dla_array_datastore_options){.iteration_dimension = 1,
                                                                 .read_size = 2},
                                  &ds));
    assert_int_equal(dla_datastore_num_observations(ds), 3);
    dla_tensor *x;
    assert_ok(dla_datastore_read(ds, 1, &x));
    assert_string_equal(dims_of(x), "2x5");
    double v[10];
    values(x, v, 10);
    tu_assert_near(v[1], 100, 0); /* row 2, column 1 */
    dla_datastore_free(ds);
    /* A formatted array: along B, the format kept. */
    assert_ok(dla_array_datastore(columns(5, "CB"), NULL, &ds));
    assert_ok(dla_datastore_readall(ds, 1, &x));
    assert_string_equal(dla_tensor_format(x), "CB");
    assert_string_equal(dims_of(x), "3x5");
    dla_datastore_free(ds);
    expect_error(dla_array_datastore(columns(5, "CB"),
                                     &(dla_array_datastore_options){.iteration_dimension = 1}, &ds),
                 DLA_ERR_INVALID_ARGUMENT, "dla_array_datastore", "iteration_dimension 1", "\"CB\"",
                 NULL);
    assert_null(ds);
    expect_error(dla_array_datastore(columns(5, ""),
                                     &(dla_array_datastore_options){.iteration_dimension = 3}, &ds),
                 DLA_ERR_INVALID_ARGUMENT, "iteration_dimension 3 outside 1..2", NULL);
    expect_error(dla_array_datastore(NULL, NULL, &ds), DLA_ERR_INVALID_ARGUMENT, "data is NULL",
                 NULL);
    dla_scope_end();
}

static void test_subset_shuffle_and_partition(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_datastore *ds, *sub, *sh, *sh2, *part[3];
    assert_ok(dla_array_datastore(columns(10, ""), NULL, &ds));
    assert_ok(dla_datastore_subset(ds, 3, (int64_t[]){7, 2, 7}, &sub));
    dla_tensor *x;
    assert_ok(dla_datastore_readall(sub, 1, &x));
    double v[30];
    values(x, v, 9);
    tu_assert_near(v[0], 7, 0);
    tu_assert_near(v[3], 2, 0);
    tu_assert_near(v[6], 7, 0);
    /* A shuffle is a permutation, the same for the same seed. */
    assert_ok(dla_datastore_shuffle(ds, 5, &sh));
    assert_ok(dla_datastore_shuffle(ds, 5, &sh2));
    double w[30];
    assert_ok(dla_datastore_readall(sh, 1, &x));
    values(x, v, 30);
    assert_ok(dla_datastore_readall(sh2, 1, &x));
    values(x, w, 30);
    int seen[10] = {0}, moved = 0;
    for (int k = 0; k < 10; k++) {
        tu_assert_near(v[3 * k], w[3 * k], 0);
        seen[(int)v[3 * k]]++;
        moved += (int)v[3 * k] != k;
    }
    for (int k = 0; k < 10; k++)
        assert_int_equal(seen[k], 1);
    assert_true(moved > 0);
    /* Parts of 4, 3, 3 that cover every observation once, of the shuffled
     * order (a subset of a subset). */
    int64_t total = 0;
    for (int p = 0; p < 3; p++) {
        assert_ok(dla_datastore_partition(sh, 3, p, &part[p]));
        assert_int_equal(dla_datastore_num_observations(part[p]), p == 0 ? 4 : 3);
        assert_ok(dla_datastore_readall(part[p], 1, &x));
        values(x, w, 3 * dla_datastore_num_observations(part[p]));
        for (int64_t k = 0; k < dla_datastore_num_observations(part[p]); k++)
            tu_assert_near(w[3 * k], v[3 * (total + k)], 0);
        total += dla_datastore_num_observations(part[p]);
    }
    assert_int_equal(total, 10);
    dla_datastore *bad;
    expect_error(dla_datastore_partition(ds, 3, 3, &bad), DLA_ERR_INVALID_ARGUMENT,
                 "dla_datastore_partition", "index", NULL);
    expect_error(dla_datastore_subset(ds, 1, (int64_t[]){10}, &bad), DLA_ERR_INVALID_ARGUMENT,
                 "idx[0]: 10, outside 0..9", NULL);
    dla_datastore_free(ds); /* the subsets hold it */
    dla_clear_error();
    dla_datastore_free(ds); /* the caller's handle is gone: refused, logged */
    assert_int_equal(dla_last_status(), DLA_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(dla_last_error(), "freed already"));
    assert_ok(dla_datastore_readall(sub, 1, &x));
    for (int p = 0; p < 3; p++)
        dla_datastore_free(part[p]);
    dla_datastore_free(sub);
    dla_datastore_free(sh);
    dla_datastore_free(sh2);
    dla_scope_end();
}

/* ------------------------------------------------------------- files */

static char root[128];

static const char *at_root(const char *name)
{
    static char buf[4][256];
    static int k;
    k = (k + 1) % 4;
    snprintf(buf[k], sizeof buf[k], "%s/%s", root, name);
    return buf[k];
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* Folder "labels": one number a file, 0.txt .. 5.txt (with a subfolder),
 * and files the extension leaves out. */
static int setup_files(void **state)
{
    (void)state;
    snprintf(root, sizeof root, "/tmp/dla_gds_%d", (int)getpid());
    mkdir(root, 0700);
    mkdir(at_root("labels"), 0700);
    mkdir(at_root("labels/sub"), 0700);
    char name[64], text[16];
    for (int k = 0; k < 6; k++) {
        snprintf(name, sizeof name, k < 4 ? "labels/%d.txt" : "labels/sub/%d.TXT", k);
        snprintf(text, sizeof text, "%d\n", 10 * k);
        write_text(at_root(name), text);
    }
    write_text(at_root("labels/notes.md"), "not data\n");
    write_text(at_root("labels/.hidden.txt"), "1\n");
    write_text(at_root("odd.txt"), "7\n");
    write_text(at_root("bad.txt"), "oops\n");
    return 0;
}

static int teardown_files(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", root);
    return system(cmd) == 0 ? 0 : -1;
}

typedef struct read_ctx {
    int wide;      /* the value as 1 x 1 x 2 instead of 1 x 1 */
    int calls;
} read_ctx;

/* ReadFcn: the number in the file as a 1 x 1 "CB" single (with ctx->wide,
 * the file named "odd.txt" as 2 x 1, a shape the others do not have). */
static dla_status read_number(void *ctx, const char *path, int n, dla_tensor **out)
{
    read_ctx *c = ctx;
    if (c)
        __atomic_fetch_add(&c->calls, 1, __ATOMIC_RELAXED);
    FILE *f = fopen(path, "r");
    if (!f)
        return DLA_ERR_IO;
    float v;
    int ok = fscanf(f, "%f", &v) == 1;
    fclose(f);
    if (!ok) {
        dla_error_tensor(DLA_ERR_FORMAT, "no number in %s", path);
        return DLA_ERR_FORMAT;
    }
    const int odd = c && c->wide && strstr(path, "odd.txt");
    out[0] = dla_tensor_from_host((float[]){v, v}, DLA_F32, "CB", DLA_DIMS(odd ? 2 : 1, 1));
    if (n > 1)
        out[1] = dla_tensor_from_host((int32_t[]){(int32_t)v}, DLA_I32, "", DLA_DIMS(1));
    return DLA_OK;
}

static void test_file_datastore_reads_one_file_a_read_in_path_order(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_datastore *ds;
    read_ctx c = {0};
    assert_ok(dla_file_datastore(1, (const char *[]){at_root("labels")},
                                 (const char *[]){".txt", NULL}, 2, read_number, &c, &ds));
    assert_int_equal(dla_datastore_num_observations(ds), 6);
    assert_int_equal(c.calls, 0); /* files are read when asked for */
    /* Path order: labels/0.txt .. 3.txt, then labels/sub/4.TXT, 5.TXT. */
    assert_non_null(strstr(dla_file_datastore_path(ds, 4), "labels/sub/4.TXT"));
    assert_null(dla_file_datastore_path(ds, 6));
    for (int k = 0; k < 6; k++) {
        dla_tensor *o[2];
        assert_ok(dla_datastore_read(ds, 2, o));
        assert_string_equal(dims_of(o[0]), "1x1");
        assert_string_equal(dla_tensor_format(o[0]), "CB");
        double v;
        values(o[0], &v, 1);
        tu_assert_near(v, 10.0 * k, 0);
        assert_int_equal(dla_tensor_dtype(o[1]), DLA_I32);
    }
    assert_false(dla_datastore_hasdata(ds));
    /* readall joins them along B (the "CB" outputs), and along dim 2 the
     * unformatted 1-element vectors (the dim after their last). */
    dla_tensor *all[2];
    assert_ok(dla_datastore_readall(ds, 2, all));
    assert_string_equal(dims_of(all[0]), "1x6");
    assert_string_equal(dla_tensor_format(all[0]), "CB");
    assert_string_equal(dims_of(all[1]), "1x6");
    /* A shuffled file datastore names its files in its order. */
    dla_datastore *sh;
    assert_ok(dla_datastore_shuffle(ds, 1, &sh));
    assert_ok(dla_datastore_read(sh, 2, all));
    double v;
    values(all[0], &v, 1);
    char want[16];
    snprintf(want, sizeof want, "%d.", (int)v / 10);
    assert_non_null(strstr(dla_file_datastore_path(sh, 0), want));
    dla_datastore_free(sh);
    dla_datastore_free(ds);
    /* Files listed one by one, any extension; all files of a folder. */
    assert_ok(dla_file_datastore(2, (const char *[]){at_root("odd.txt"), at_root("labels")}, NULL,
                                 1, read_number, NULL, &ds));
    assert_int_equal(dla_datastore_num_observations(ds), 8); /* notes.md too, not .hidden */
    assert_non_null(strstr(dla_file_datastore_path(ds, 0), "odd.txt"));
    dla_datastore_free(ds);
    expect_error(dla_file_datastore(1, (const char *[]){at_root("labels")},
                                    (const char *[]){".csv", NULL}, 1, read_number, NULL, &ds),
                 DLA_ERR_INVALID_ARGUMENT, "dla_file_datastore", "no file", NULL);
    assert_null(ds);
    expect_error(dla_file_datastore(1, (const char *[]){at_root("missing")}, NULL, 1, read_number,
                                    NULL, &ds),
                 DLA_ERR_IO, "locations[0]", "missing", NULL);
    expect_error(dla_file_datastore(1, (const char *[]){at_root("labels")}, NULL, 0, read_number,
                                    NULL, &ds),
                 DLA_ERR_INVALID_ARGUMENT, "noutputs", NULL);
    dla_scope_end();
}

/* A link to nothing in a folder, named as no wanted file, is left out as
 * the other unwanted files are (it failed the whole datastore: "cannot
 * read .../README: No such file or directory"); one with a wanted name
 * is still an error naming it. */
static void test_a_stale_link_of_another_name_is_left_out(void **state)
{
    (void)state;
    mkdir(at_root("stale"), 0700);
    write_text(at_root("stale/1.txt"), "10\n");
    assert_int_equal(symlink("/nonexistent/dla_gone", at_root("stale/README")), 0);
    dla_datastore *ds;
    /* Said on stderr, not silent (a folder's link to a disk not mounted
     * lost its files in silence). */
    char said[4096] = "";
    fflush(stderr);
    int saved = dup(2);
    FILE *cap = tmpfile();
    assert_non_null(cap);
    dup2(fileno(cap), 2);
    dla_status st = dla_file_datastore(1, (const char *[]){at_root("stale")},
                                       (const char *[]){".txt", NULL}, 1, read_number, NULL, &ds);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(cap);
    said[fread(said, 1, sizeof said - 1, cap)] = '\0';
    fclose(cap);
    assert_ok(st);
    /* (Unless DLACCEL_LOG hides warnings.) */
    const char *lv = getenv("DLACCEL_LOG");
    if ((!lv || !strcmp(lv, "warn") || !strcmp(lv, "info") || !strcmp(lv, "debug")) &&
        (!strstr(said, "leaving out") || !strstr(said, "stale/README")))
        fail_msg("stderr \"%s\" does not name the link left out", said);
    assert_int_equal(dla_datastore_num_observations(ds), 1);
    dla_datastore_free(ds);
    /* Every file wanted (no extensions): the link is one of them. */
    expect_error(dla_file_datastore(1, (const char *[]){at_root("stale")}, NULL, 1, read_number,
                                    NULL, &ds),
                 DLA_ERR_IO, "dla_file_datastore", "stale/README", NULL);
    assert_null(ds);
}

/* ---------------------------------------------------- transform, combine */

static dla_status twice_and_sum(void *ctx, int nin, dla_tensor *const *in, int nout,
                                dla_tensor **out)
{
    (void)ctx;
    assert_int_equal(nin, 1);
    out[0] = dla_affine(in[0], 2.0, 0.0);
    if (nout > 1)
        out[1] = dla_sum(in[0], 1, (int64_t[]){1});
    return DLA_OK;
}

static void test_transform_applies_the_function_per_observation(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_datastore *ds, *t1, *t2;
    assert_ok(dla_array_datastore(columns(6, ""), &(dla_array_datastore_options){.read_size = 4},
                                  &ds));
    assert_ok(dla_transform(ds, 0, twice_and_sum, NULL, &t1));
    assert_ok(dla_transform(ds, 2, twice_and_sum, NULL, &t2));
    dla_datastore_free(ds);
    assert_int_equal(dla_datastore_num_outputs(t2), 2);
    assert_true(dla_datastore_is_indexed(t1));
    dla_tensor *x, *o[2];
    assert_ok(dla_datastore_set_read_size(t1, 4));
    assert_ok(dla_datastore_read(t1, 1, &x));
    /* As many outputs: joined as the array's slices are, along dim 2. */
    assert_string_equal(dims_of(x), "3x4");
    double v[12];
    values(x, v, 12);
    tu_assert_near(v[3 * 3 + 2], 2.0 * 203, 0);
    /* Other outputs: joined by the general rule, after their last dim
     * (as MATLAB's minibatchqueue joins a transform's cells). */
    assert_ok(dla_datastore_readall(t2, 2, o));
    assert_string_equal(dims_of(o[0]), "3x1x6");
    assert_string_equal(dims_of(o[1]), "1x1x6");
    values(o[1], v, 6);
    tu_assert_near(v[5], 5.0 + 105 + 205, 0);
    dla_datastore_free(t1);
    dla_datastore_free(t2);
    dla_scope_end();
}

static void test_combine_reads_in_step_and_refuses_other_lengths(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_datastore *xs, *fs, *both, *bad;
    assert_ok(dla_array_datastore(columns(6, "CB"), NULL, &xs));
    assert_ok(dla_file_datastore(1, (const char *[]){at_root("labels")},
                                 (const char *[]){".txt", NULL}, 1, read_number, NULL, &fs));
    assert_ok(dla_combine(2, (dla_datastore *[]){xs, fs}, &both));
    assert_int_equal(dla_datastore_num_outputs(both), 2);
    assert_int_equal(dla_datastore_num_observations(both), 6);
    dla_tensor *o[2];
    assert_ok(dla_datastore_set_read_size(both, 4));
    assert_ok(dla_datastore_read(both, 2, o));
    assert_string_equal(dims_of(o[0]), "3x4");
    assert_string_equal(dims_of(o[1]), "1x4");
    double v[4];
    values(o[1], v, 4);
    tu_assert_near(v[3], 30, 0);
    dla_datastore *x7;
    assert_ok(dla_array_datastore(columns(7, ""), NULL, &x7));
    expect_error(dla_combine(2, (dla_datastore *[]){xs, x7}, &bad), DLA_ERR_SHAPE, "dla_combine",
                 "ds[1]: 7 observations", "ds[0] has 6", NULL);
    assert_null(bad);
    expect_error(dla_combine(2, (dla_datastore *[]){xs, NULL}, &bad), DLA_ERR_INVALID_ARGUMENT,
                 "ds[1] is NULL", NULL);
    dla_datastore_free(x7);
    dla_datastore_free(xs);
    dla_datastore_free(fs);
    dla_datastore_free(both);
    dla_scope_end();
}

/* ------------------------------------------------------------ custom */

typedef struct counter {
    int64_t n, at;   /* observations; the next one read in order */
    int fail_at;     /* the read of this observation fails (-1: none) */
    int fail_to;     /* above fail_at: the reads up to this one fail too */
    int freed;
} counter;

static dla_status counter_make(counter *c, int64_t i, dla_tensor **out)
{
    if (i == c->fail_at || (c->fail_at >= 0 && i > c->fail_at && i <= c->fail_to)) {
        dla_error_tensor(DLA_ERR_IO, "sensor %lld unreadable", (long long)i);
        return DLA_ERR_IO;
    }
    out[0] = dla_tensor_from_host((float[]){(float)i, (float)-i}, DLA_F32, "", DLA_DIMS(2));
    return DLA_OK;
}

static dla_status counter_read_at(void *ctx, int64_t i, int n, dla_tensor **out)
{
    (void)n;
    return counter_make(ctx, i, out);
}

static dla_status counter_read(void *ctx, int n, dla_tensor **out)
{
    (void)n;
    counter *c = ctx;
    return counter_make(c, c->at++, out);
}

static int counter_hasdata(void *ctx)
{
    counter *c = ctx;
    return c->at < c->n;
}

static void counter_reset(void *ctx) { ((counter *)ctx)->at = 0; }
static void counter_free(void *ctx) { ((counter *)ctx)->freed++; }

static dla_datastore *counter_ds(counter *c, int indexed, int known)
{
    dla_custom_datastore def = {
        .num_outputs = 1,
        .num_observations = known ? c->n : -1,
        .ctx = c,
        .free = counter_free,
    };
    if (indexed)
        def.read_at = counter_read_at;
    else
        def.read = counter_read, def.hasdata = counter_hasdata, def.reset = counter_reset;
    dla_datastore *ds;
    assert_ok(dla_custom_datastore_create(&def, &ds));
    return ds;
}

static void test_custom_datastores_indexed_and_in_order(void **state)
{
    (void)state;
    dla_scope_begin();
    counter a = {.n = 5, .fail_at = -1}, b = {.n = 5, .fail_at = -1};
    dla_datastore *ia = counter_ds(&a, 1, 1), *ib = counter_ds(&b, 0, 0);
    assert_true(dla_datastore_is_indexed(ia));
    assert_false(dla_datastore_is_indexed(ib));
    assert_int_equal(dla_datastore_num_observations(ib), -1);
    dla_tensor *x, *y;
    assert_ok(dla_datastore_set_read_size(ib, 2));
    assert_ok(dla_datastore_read(ib, 1, &x));
    assert_string_equal(dims_of(x), "2x2"); /* 2-vectors joined along dim 2 */
    assert_ok(dla_datastore_readall(ia, 1, &x));
    assert_ok(dla_datastore_readall(ib, 1, &y));
    assert_string_equal(dims_of(y), "2x5");
    double v[10], w[10];
    values(x, v, 10);
    values(y, w, 10);
    for (int k = 0; k < 10; k++)
        tu_assert_near(v[k], w[k], 0);
    /* Read in order: neither shuffled, subset nor partitioned. */
    dla_datastore *bad;
    expect_error(dla_datastore_shuffle(ib, 1, &bad), DLA_ERR_STATE, "dla_datastore_shuffle",
                 "read in order", NULL);
    expect_error(dla_datastore_partition(ib, 2, 0, &bad), DLA_ERR_STATE, "partition", NULL);
    /* A transform and a combine of one read in order are read in order. */
    dla_datastore *t, *both;
    assert_ok(dla_transform(ib, 0, twice_and_sum, NULL, &t));
    assert_false(dla_datastore_is_indexed(t));
    assert_ok(dla_combine(2, (dla_datastore *[]){ia, t}, &both));
    assert_false(dla_datastore_is_indexed(both));
    assert_int_equal(dla_datastore_num_observations(both), -1);
    expect_error(dla_combine(2, (dla_datastore *[]){t, t}, &bad), DLA_ERR_INVALID_ARGUMENT,
                 "ds[0] and ds[1]", "read twice a step", NULL);
    dla_tensor *o[2];
    assert_ok(dla_datastore_readall(both, 2, o));
    values(o[1], w, 10);
    tu_assert_near(w[8], 8, 0);
    tu_assert_near(w[9], -8, 0);
    dla_datastore_free(t);
    dla_datastore_free(both);
    assert_int_equal(b.freed, 0);
    dla_datastore_free(ib);
    assert_int_equal(b.freed, 1); /* the callbacks' free, once, with the last holder */
    dla_datastore_free(ia);
    assert_int_equal(a.freed, 1);
    /* Definitions that cannot work. */
    expect_error(dla_custom_datastore_create(&(dla_custom_datastore){.num_outputs = 1,
                                                                      .num_observations = 3},
                                             &bad),
                 DLA_ERR_INVALID_ARGUMENT, "neither read_at nor", NULL);
    expect_error(dla_custom_datastore_create(&(dla_custom_datastore){.num_outputs = 1,
                                                                      .num_observations = -1,
                                                                      .read_at = counter_read_at},
                                             &bad),
                 DLA_ERR_INVALID_ARGUMENT, "read_at needs num_observations", NULL);
    dla_scope_end();
}

/* ------------------------------------------------------------ errors */

static void test_shapes_that_differ_across_observations_are_refused(void **state)
{
    (void)state;
    dla_scope_begin();
    read_ctx c = {.wide = 1};
    dla_datastore *ds;
    assert_ok(dla_file_datastore(2, (const char *[]){at_root("labels/0.txt"), at_root("odd.txt")},
                                 NULL, 1, read_number, &c, &ds));
    assert_ok(dla_datastore_set_read_size(ds, 2));
    dla_tensor *x;
    expect_error(dla_datastore_read(ds, 1, &x), DLA_ERR_SHAPE, "dla_datastore_read", "output 1",
                 "observation 1", "2x1", "observation 0's is 1x1", NULL);
    assert_null(x);
    /* A failed read of an indexed datastore leaves its position. */
    assert_ok(dla_datastore_set_read_size(ds, 1));
    assert_ok(dla_datastore_read(ds, 1, &x));
    assert_string_equal(dims_of(x), "1x1");
    /* So does a queue. */
    dla_mbq *q;
    assert_ok(dla_mbq_create(1, (dla_mbq_input[]){{.datastore = ds}},
                             &(dla_mbq_options){.mini_batch_size = 2}, &q));
    dla_tensor *b;
    expect_error(dla_mbq_next(q, 1, &b), DLA_ERR_SHAPE, "dla_mbq_next", "2x1", NULL);
    dla_mbq_free(q);
    dla_datastore_free(ds);
    dla_scope_end();
}

static void test_a_callback_failing_halfway_names_itself(void **state)
{
    (void)state;
    dla_scope_begin();
    for (int background = 0; background <= 1; background++) {
        for (int indexed = 0; indexed <= 1; indexed++) {
            counter c = {.n = 8, .fail_at = 5};
            dla_datastore *ds = counter_ds(&c, indexed, 1);
            dla_mbq *q;
            assert_ok(dla_mbq_create(1, (dla_mbq_input[]){{.datastore = ds}},
                                     &(dla_mbq_options){.mini_batch_size = 3,
                                                        .dispatch_in_background = background},
                                     &q));
            dla_datastore_free(ds);
            dla_tensor *b;
            assert_ok(dla_mbq_next(q, 1, &b));
            assert_string_equal(dims_of(b), "2x3");
            expect_error(dla_mbq_next(q, 1, &b), DLA_ERR_IO, "dla_mbq_next",
                         indexed ? "read_at(5)" : "read of observation 5",
                         "sensor 5 unreadable", NULL);
            assert_null(b);
            /* The last batch is still there, and a new pass reads again. */
            assert_ok(dla_mbq_next(q, 1, &b));
            assert_string_equal(dims_of(b), "2x2");
            dla_mbq_reset(q);
            assert_ok(dla_mbq_next(q, 1, &b));
            double v[6];
            values(b, v, 6);
            tu_assert_near(v[4], 2, 0);
            dla_mbq_free(q);
            assert_int_equal(c.freed, 1);
        }
    }
    /* A file read function's failure, through a transform. */
    dla_datastore *ds, *t;
    assert_ok(dla_file_datastore(2, (const char *[]){at_root("odd.txt"), at_root("bad.txt")}, NULL,
                                 1, read_number, NULL, &ds));
    assert_ok(dla_transform(ds, 0, twice_and_sum, NULL, &t));
    dla_tensor *x;
    assert_ok(dla_datastore_read(t, 1, &x));
    expect_error(dla_datastore_read(t, 1, &x), DLA_ERR_FORMAT, "dla_datastore_read",
                 "read_fn on", "bad.txt", "no number in", NULL);
    dla_datastore_free(t);
    dla_datastore_free(ds);
    dla_scope_end();
}

static dla_status leaves_null(void *ctx, int nin, dla_tensor *const *in, int nout,
                              dla_tensor **out)
{
    (void)ctx, (void)nin, (void)in, (void)nout, (void)out;
    return DLA_OK;
}

static void test_misuse_is_refused(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_datastore *ds, *t, *bad;
    assert_ok(dla_array_datastore(columns(4, ""), NULL, &ds));
    dla_tensor *o[2];
    expect_error(dla_datastore_read(ds, 2, o), DLA_ERR_INVALID_ARGUMENT,
                 "argument n: 2, but the arrayDatastore has 1 output", NULL);
    assert_ok(dla_transform(ds, 0, leaves_null, NULL, &t));
    expect_error(dla_datastore_read(t, 1, o), DLA_ERR_INVALID_ARGUMENT,
                 "transform function on observation 0", "output 1 left NULL", NULL);
    dla_datastore_free(t);
    dla_datastore_free(ds);
    /* Freed: refused, not read. */
    expect_error(dla_transform(ds, 0, twice_and_sum, NULL, &bad), DLA_ERR_INVALID_ARGUMENT,
                 "freed already", NULL);
    assert_int_equal(dla_datastore_num_outputs(ds), 0);
    /* A queue learns a count it is not given by reading the datastore
     * through (it refused), and reads it from its start. */
    counter c = {.n = 3, .fail_at = -1};
    dla_datastore *u = counter_ds(&c, 0, 0);
    dla_mbq *q;
    assert_ok(dla_mbq_create(1, (dla_mbq_input[]){{.datastore = u}}, NULL, &q));
    assert_int_equal(dla_mbq_num_observations(q), 3);
    assert_int_equal(dla_datastore_num_observations(u), 3);
    dla_tensor *first;
    assert_ok(dla_mbq_next(q, 1, &first));
    assert_int_equal(dla_tensor_dim(first, 2), 3);
    dla_mbq_free(q);
    dla_datastore_free(u);
    dla_scope_end();
}

/* ------------------------------------------------------------ queues */

/* The label file k holds 10 k: a queue of combine(array, files) pairs
 * column k (k, 100 + k, 200 + k) with label 10 k in every batch. */
static void check_pairs(dla_tensor *x, dla_tensor *y, int64_t *seen)
{
    int64_t n = dla_tensor_dim(x, 2);
    assert_int_equal(dla_tensor_dim(y, 2), n);
    double v[3 * 6], w[6];
    values(x, v, 3 * n);
    values(y, w, n);
    for (int64_t k = 0; k < n; k++) {
        tu_assert_near(w[k], 10 * v[3 * k], 0);
        tu_assert_near(v[3 * k + 2], 200 + v[3 * k], 0);
        seen[(int)v[3 * k]]++;
    }
}

static void test_queue_over_combined_array_and_files(void **state)
{
    (void)state;
    for (int background = 0; background <= 1; background++) {
        dla_scope_begin();
        dla_datastore *xs, *fs, *both;
        assert_ok(dla_array_datastore(columns(6, ""), NULL, &xs));
        assert_ok(dla_file_datastore(1, (const char *[]){at_root("labels")},
                                     (const char *[]){".txt", NULL}, 1, read_number, NULL, &fs));
        assert_ok(dla_combine(2, (dla_datastore *[]){xs, fs}, &both));
        dla_datastore_free(xs);
        dla_datastore_free(fs);
        dla_mbq *q;
        assert_ok(dla_mbq_create(1,
                                 (dla_mbq_input[]){{.datastore = both,
                                                    .formats = (const char *[]){"CB", NULL},
                                                    .casts = (const char *[]){NULL, "double"}}},
                                 &(dla_mbq_options){.mini_batch_size = 4, .seed = 3,
                                                    .dispatch_in_background = background},
                                 &q));
        dla_datastore_free(both); /* the queue holds it */
        assert_int_equal(dla_mbq_num_outputs(q), 2);
        assert_int_equal(dla_mbq_num_observations(q), 6);
        for (int epoch = 0; epoch < 3; epoch++) {
            if (epoch)
                dla_mbq_shuffle(q);
            int64_t seen[6] = {0};
            int batches = 0;
            while (dla_mbq_hasdata(q)) {
                dla_tensor *b[2];
                assert_ok(dla_mbq_next(q, 2, b));
                assert_string_equal(dla_tensor_format(b[0]), "CB");
                assert_int_equal(dla_tensor_dtype(b[1]), DLA_F64);
                check_pairs(b[0], b[1], seen);
                batches++;
            }
            assert_int_equal(batches, 2);
            for (int k = 0; k < 6; k++)
                assert_int_equal(seen[k], 1);
        }
        /* Partitions cover every observation once, shuffled too. */
        int64_t seen[6] = {0};
        for (int p = 0; p < 2; p++) {
            dla_mbq *part;
            assert_ok(dla_mbq_partition(q, 2, p, &part));
            dla_mbq_shuffle(part);
            while (dla_mbq_hasdata(part)) {
                dla_tensor *b[2];
                assert_ok(dla_mbq_next(part, 2, b));
                check_pairs(b[0], b[1], seen);
            }
            dla_mbq_free(part);
        }
        for (int k = 0; k < 6; k++)
            assert_int_equal(seen[k], 1);
        dla_mbq_free(q);
        dla_scope_end();
    }
}

static void test_queue_over_a_datastore_read_in_order(void **state)
{
    (void)state;
    for (int background = 0; background <= 1; background++) {
        dla_scope_begin();
        counter c = {.n = 7, .fail_at = -1};
        dla_datastore *ds = counter_ds(&c, 0, 1);
        dla_tensor *labels = columns(7, "CB");
        dla_mbq *q, *part;
        assert_ok(dla_mbq_create(2, (dla_mbq_input[]){{.datastore = ds, .format = "CB"},
                                                      {.tensor = labels}},
                                 &(dla_mbq_options){.mini_batch_size = 3,
                                                    .dispatch_in_background = background},
                                 &q));
        for (int pass = 0; pass < 2; pass++) {
            int64_t k = 0;
            while (dla_mbq_hasdata(q)) {
                dla_tensor *b[2];
                assert_ok(dla_mbq_next(q, 2, b));
                assert_string_equal(dla_tensor_format(b[0]), "CB");
                int64_t n = dla_tensor_dim(b[0], 2);
                double v[6], w[9];
                values(b[0], v, 2 * n);
                values(b[1], w, 3 * n);
                for (int64_t j = 0; j < n; j++) {
                    tu_assert_near(v[2 * j], (double)(k + j), 0);
                    tu_assert_near(w[3 * j], (double)(k + j), 0);
                }
                k += n;
                if (pass == 1 && k == 3) {
                    assert_ok(dla_mbq_set_mini_batch_size(q, 2)); /* starts again */
                    k = 0;
                }
            }
            assert_int_equal(k, 7);
            /* Shuffling it is an error that keeps the order. */
            dla_mbq_shuffle(q);
            assert_int_equal(dla_last_status(), DLA_ERR_STATE);
            assert_non_null(strstr(dla_last_error(), "read in order"));
            dla_mbq_reset(q);
        }
        expect_error(dla_mbq_partition(q, 2, 0, &part), DLA_ERR_STATE, "dla_mbq_partition",
                     "read in order", NULL);
        dla_mbq_free(q);
        dla_datastore_free(ds);
        assert_int_equal(c.freed, 1);
        dla_scope_end();
    }
}

/* Two readers of one position, read side by side: a combine, or a queue's
 * inputs, over a datastore read in order and a transform of it (or itself
 * twice, or an indexed one twice inside a combine read in order) read it
 * twice a step, each taking the other's observations: observation i of
 * one was paired with i + 1 of the other without a word. */
static void test_one_position_read_twice_side_by_side_is_refused(void **state)
{
    (void)state;
    dla_scope_begin();
    counter c = {.n = 6, .fail_at = -1}, a = {.n = 6, .fail_at = -1};
    dla_datastore *ds = counter_ds(&c, 0, 1), *ia = counter_ds(&a, 1, 1), *t, *t2, *bad;
    assert_ok(dla_transform(ds, 0, twice_and_sum, NULL, &t));
    assert_ok(dla_transform(t, 0, twice_and_sum, NULL, &t2));
    expect_error(dla_combine(2, (dla_datastore *[]){ds, t}, &bad), DLA_ERR_INVALID_ARGUMENT,
                 "dla_combine", "ds[0] and ds[1]", "read twice a step", NULL);
    expect_error(dla_combine(3, (dla_datastore *[]){ia, t2, ds}, &bad), DLA_ERR_INVALID_ARGUMENT,
                 "ds[1] and ds[2]", NULL);
    /* An indexed one read by its position inside a combine read in order. */
    expect_error(dla_combine(3, (dla_datastore *[]){ia, ds, ia}, &bad), DLA_ERR_INVALID_ARGUMENT,
                 "ds[0] and ds[2]", NULL);
    dla_mbq *q;
    const dla_mbq_options o = {.mini_batch_size = 3};
    expect_error(dla_mbq_create(2, (dla_mbq_input[]){{.datastore = ds}, {.datastore = t}}, &o, &q),
                 DLA_ERR_INVALID_ARGUMENT, "inputs[1].datastore", "the other's observations",
                 NULL);
    expect_error(dla_mbq_create(2, (dla_mbq_input[]){{.datastore = t2}, {.datastore = t2}}, &o, &q),
                 DLA_ERR_INVALID_ARGUMENT, "inputs[1].datastore", NULL);
    /* What reads apart still works: an indexed one beside its transform in
     * a queue (each read by number), a combine of one read in order with
     * an indexed one, and a transform of both outputs. */
    dla_datastore *ta, *both;
    assert_ok(dla_transform(ia, 0, twice_and_sum, NULL, &ta));
    assert_ok(dla_mbq_create(3, (dla_mbq_input[]){{.datastore = ia}, {.datastore = ta},
                                                  {.datastore = ds}},
                             &o, &q));
    dla_tensor *b[3];
    assert_ok(dla_mbq_next(q, 3, b));
    double v[6], w[6];
    values(b[0], v, 6);
    values(b[2], w, 6);
    for (int k = 0; k < 6; k++)
        tu_assert_near(v[k], w[k], 0);
    dla_mbq_free(q);
    assert_ok(dla_combine(2, (dla_datastore *[]){ia, ds}, &both));
    dla_datastore_free(both);
    dla_datastore_free(ta);
    dla_datastore_free(t2);
    dla_datastore_free(t);
    dla_datastore_free(ia);
    dla_datastore_free(ds);
    dla_scope_end();
}

/* A combination read in order whose input fails an observation: every
 * input moves past it, so the next read pairs them again. One input that
 * failed stopped the read of the later ones (a step behind from then on:
 * observation i of one beside i - 1 of another), and an indexed input
 * that failed read the same observation again beside the others' next. */
static void test_a_failed_read_keeps_a_combination_in_step(void **state)
{
    (void)state;
    dla_scope_begin();
    for (int which = 0; which < 3; which++) {
        counter a = {.n = 6, .fail_at = -1}, b = {.n = 6, .fail_at = -1};
        /* 0: the first (read in order) fails; 1: the second; 2: the
         * second, indexed, fails. */
        (which == 0 ? &a : &b)->fail_at = 2;
        dla_datastore *da = counter_ds(&a, 0, 1), *db = counter_ds(&b, which == 2, 1), *c;
        assert_ok(dla_combine(2, (dla_datastore *[]){da, db}, &c));
        int64_t got = 0;
        for (int r = 0; r < 6; r++) {
            dla_tensor *o[2];
            dla_status st = dla_datastore_read(c, 2, o);
            if (r == 2) {
                expect_error(st, DLA_ERR_IO, "unreadable", NULL);
                continue;
            }
            assert_ok(st);
            double v[2], w[2];
            values(o[0], v, 2);
            values(o[1], w, 2);
            tu_assert_near(v[0], (double)r, 0);
            tu_assert_near(w[0], (double)r, 0);
            got++;
        }
        assert_int_equal(got, 5);
        assert_false(dla_datastore_hasdata(c));
        dla_datastore_free(c);
        dla_datastore_free(da);
        dla_datastore_free(db);
    }
    dla_scope_end();
}

/* A batch of a queue over a datastore read in order that fails at two
 * observations: the next batch skips the rest of it, a failure there
 * included, and reads its own. Stopping at that failure failed the next
 * batch with an observation outside it, and every later batch of the pass
 * (read again from the start, through the first failure). */
static void test_a_queue_skips_past_a_failed_batch_read_in_order(void **state)
{
    (void)state;
    for (int background = 0; background <= 1; background++) {
        dla_scope_begin();
        counter c = {.n = 12, .fail_at = 3, .fail_to = 4};
        dla_datastore *ds = counter_ds(&c, 0, 1);
        dla_mbq *q;
        assert_ok(dla_mbq_create(1, (dla_mbq_input[]){{.datastore = ds}},
                                 &(dla_mbq_options){.mini_batch_size = 3,
                                                    .dispatch_in_background = background},
                                 &q));
        for (int pass = 0; pass < 2; pass++) {
            for (int64_t k = 0; k < 12; k += 3) {
                assert_true(dla_mbq_hasdata(q));
                dla_tensor *b;
                dla_status st = dla_mbq_next(q, 1, &b);
                if (k == 3) {
                    expect_error(st, DLA_ERR_IO, "sensor 3 unreadable", NULL);
                    continue;
                }
                assert_ok(st);
                double v[6];
                values(b, v, 6);
                for (int j = 0; j < 3; j++)
                    tu_assert_near(v[2 * j], (double)(k + j), 0);
            }
            assert_false(dla_mbq_hasdata(q));
            dla_mbq_reset(q);
        }
        dla_mbq_free(q);
        dla_datastore_free(ds);
        dla_scope_end();
    }
}

static void test_queue_format_puts_the_observation_dim(void **state)
{
    (void)state;
    dla_scope_begin();
    /* 2 x 2 observations (a custom datastore's), as "SSCB" batches: the
     * format's B is dim 4, where they are joined. */
    dla_datastore *ds;
    assert_ok(dla_array_datastore(dla_rand(DLA_F32, "", DLA_DIMS(2, 2, 5)),
                                  &(dla_array_datastore_options){.iteration_dimension = 3}, &ds));
    dla_datastore *t;
    assert_ok(dla_transform(ds, 0, twice_and_sum, NULL, &t));
    dla_mbq *q;
    assert_ok(dla_mbq_create(1, (dla_mbq_input[]){{.datastore = ds, .format = "SSCB"}},
                             &(dla_mbq_options){.mini_batch_size = 5}, &q));
    dla_tensor *b;
    assert_ok(dla_mbq_next(q, 1, &b));
    assert_string_equal(dims_of(b), "2x2x1x5");
    assert_string_equal(dla_tensor_format(b), "SSCB");
    dla_mbq_free(q);
    expect_error(dla_mbq_create(1, (dla_mbq_input[]){{.datastore = ds, .format = "SXB"}}, NULL, &q),
                 DLA_ERR_FORMAT, "inputs[0]", "\"SXB\"", NULL);
    /* Labels out of canonical order, or twice, are refused when the queue
     * is made, as a tensor input's are (a relabeling cannot reorder: "BC"
     * failed every batch instead). */
    expect_error(dla_mbq_create(1, (dla_mbq_input[]){{.datastore = ds, .format = "SSBC"}}, NULL,
                                &q),
                 DLA_ERR_FORMAT, "inputs[0]", "\"SSBC\" of output 1", "canonical order", NULL);
    expect_error(dla_mbq_create(1, (dla_mbq_input[]){{.datastore = ds,
                                                       .formats = (const char *[]){"CBB"}}},
                                NULL, &q),
                 DLA_ERR_FORMAT, "\"CBB\" of output 1", NULL);
    expect_error(dla_mbq_create(1, (dla_mbq_input[]){{.datastore = ds, .tensor = b}}, NULL, &q),
                 DLA_ERR_INVALID_ARGUMENT, "exactly one", NULL);
    /* Outputs past what a queue holds: two datastores of 16, and one more
     * (the batches' arrays hold 32). */
    dla_datastore *wide;
    dla_datastore *many[16];
    for (int k = 0; k < 16; k++)
        many[k] = ds;
    assert_ok(dla_combine(16, many, &wide));
    expect_error(dla_mbq_create(3, (dla_mbq_input[]){{.datastore = wide}, {.datastore = wide},
                                                     {.tensor = b}},
                                NULL, &q),
                 DLA_ERR_INVALID_ARGUMENT, "inputs[2]", "more than 32 outputs", NULL);
    assert_null(q);
    dla_datastore_free(wide);
    dla_datastore_free(t);
    dla_datastore_free(ds);
    dla_scope_end();
}

/* ----------------------------------------------------------- trainnet */

static dla_status identity(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = in[0];
    return DLA_OK;
}

/* 4 classes of 2 features, 96 observations: 2 x 96 "CB" and 1 x 96 int32. */
static void four_classes(dla_tensor **x, dla_tensor **t)
{
    float xs[192];
    int32_t ts[96];
    tu_state = 0x5eed;
    for (int j = 0; j < 96; j++) {
        ts[j] = (int32_t)tu_int(0, 3);
        xs[2 * j] = (float)((ts[j] & 1 ? 2.0 : -2.0) + tu_unit() - 0.5);
        xs[2 * j + 1] = (float)((ts[j] & 2 ? 2.0 : -2.0) + tu_unit() - 0.5);
    }
    *x = dla_tensor_from_host(xs, DLA_F32, "CB", DLA_DIMS(2, 96));
    *t = dla_tensor_from_host(ts, DLA_I32, "", DLA_DIMS(1, 96));
}

/* normalized: a featureInput layer with "zscore" (statistics read from
 * the data); else no input layer (initialized from the first observation). */
static dla_net *classifier(int normalized)
{
    dla_rng_seed(11);
    dla_layer *l[] = {dla_feature_input_layer(2, &(dla_feature_input_options){
                          .normalization = "zscore"}),
                      dla_fc_layer(8, NULL), dla_relu_layer(NULL), dla_fc_layer(4, NULL),
                      dla_softmax_layer(NULL)};
    dla_net *net = normalized ? dla_net_create(5, l) : dla_net_create(4, l + 1);
    if (!normalized)
        dla_layer_free(l[0]);
    assert_non_null(net);
    return net;
}

static void test_trainnet_over_a_datastore_trains_as_over_the_array(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x, *t;
    four_classes(&x, &t);
    dla_datastore *ds = NULL;
    for (int normalized = 0; normalized <= 1; normalized++) {
        /* Behind a transform, formatted for the network initialized from
         * its first observation, else unformatted: the queue labels the
         * batches with the input's format and joins them along its B. */
        dla_datastore *a;
        dla_datastore_free(ds);
        assert_ok(dla_array_datastore(normalized ? dla_reshape(x, "", DLA_DIMS(2, 96)) : x, NULL,
                                      &a));
        assert_ok(dla_transform(a, 0, identity, NULL, &ds));
        dla_datastore_free(a);
        dla_net *net = classifier(normalized), *from_x, *from_ds;
        dla_training_options o = {.verbose = -1, .solver = "sgdm", .max_epochs = 3,
                                  .mini_batch_size = 32, .shuffle = "every-epoch"};
        dla_train_data vx = {.predictors = x, .targets = t}, vds = {.datastore = ds, .targets = t};
        dla_training_info *ix, *ids;
        o.validation_data = &vx;
        dla_rng_seed(5); /* the same initial weights for both */
        assert_ok(dla_trainnet(&(dla_train_data){.predictors = x, .targets = t}, net,
                               &(dla_train_loss){.name = "crossentropy"}, &o, &from_x, &ix));
        o.validation_data = &vds;
        dla_rng_seed(5);
        assert_ok(dla_trainnet(&(dla_train_data){.datastore = ds, .targets = t}, net,
                               &(dla_train_loss){.name = "crossentropy"}, &o, &from_ds, &ids));
        assert_int_equal(ix->iterations, ids->iterations);
        assert_int_equal(ix->iterations, 9);
        for (int64_t i = 0; i < ix->iterations; i++)
            tu_assert_near(ids->training_loss[i], ix->training_loss[i], 0);
        tu_assert_near(ids->final_validation_loss, ix->final_validation_loss, 0);
        /* minibatchpredict over it too. */
        dla_tensor *px, *pds;
        assert_ok(dla_minibatchpredict(from_x, &vx, &(dla_predict_options){.mini_batch_size = 40},
                                       &px));
        assert_ok(dla_minibatchpredict(from_x, &(dla_train_data){.datastore = ds},
                                       &(dla_predict_options){.mini_batch_size = 40}, &pds));
        assert_true(tu_same_bits(px, pds));
        dla_training_info_free(ix);
        dla_training_info_free(ids);
        dla_net_free(from_x);
        dla_net_free(from_ds);
        dla_net_free(net);
    }
    /* What it does not take, said. */
    dla_net *net = classifier(1), *trained;
    dla_training_options o = {.verbose = -1, .max_epochs = 1};
    dla_datastore *xs, *two;
    assert_ok(dla_array_datastore(x, NULL, &xs));
    assert_ok(dla_combine(2, (dla_datastore *[]){xs, xs}, &two));
    expect_error(dla_trainnet(&(dla_train_data){.datastore = two, .targets = t}, net,
                              &(dla_train_loss){.name = "crossentropy"}, &o, &trained, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "2 outputs and targets are given too",
                 "predictors alone", NULL);
    counter c = {.n = 96, .fail_at = -1};
    dla_datastore *in_order = counter_ds(&c, 0, 1);
    expect_error(dla_trainnet(&(dla_train_data){.datastore = in_order, .targets = t}, net,
                              &(dla_train_loss){.name = "crossentropy"}, &o, &trained, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "read in order", NULL);
    expect_error(dla_trainnet(&(dla_train_data){.datastore = xs, .predictors = x, .targets = t},
                              net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "exactly one of predictors, sequences, images and "
                 "datastore", NULL);
    dla_datastore_free(in_order);
    dla_datastore_free(two);
    dla_datastore_free(xs);
    dla_datastore_free(ds);
    dla_net_free(net);
    dla_scope_end();
}

static void assert_same_learnables(dla_net *a, dla_net *b);

/* The four classes read in order: observation `at` of x (2 x 96) and t. */
typedef struct class_reader {
    float x[192];
    int32_t t[96];
    int64_t at;
    int64_t n;       /* observations it has, up to 96 */
    int64_t fail_at; /* the read of this observation fails; -1 none */
} class_reader;

static dla_status class_read(void *ctx, int n, dla_tensor **out)
{
    (void)n;
    class_reader *r = ctx;
    if (r->at == r->fail_at) {
        r->at++;
        return dla_set_error(DLA_ERR_IO, "unreadable record");
    }
    out[0] = dla_tensor_from_host(r->x + 2 * r->at, DLA_F32, "", DLA_DIMS(2, 1));
    out[1] = dla_tensor_from_host(r->t + r->at, DLA_I32, "", DLA_DIMS(1, 1));
    r->at++;
    return DLA_OK;
}

static int class_hasdata(void *ctx) { return ((class_reader *)ctx)->at < ((class_reader *)ctx)->n; }
static void class_reset(void *ctx) { ((class_reader *)ctx)->at = 0; }

static dla_datastore *class_ds(class_reader *r, dla_tensor *x, dla_tensor *t, int known)
{
    assert_ok(dla_tensor_to_host(x, r->x, sizeof r->x));
    assert_ok(dla_tensor_to_host(t, r->t, sizeof r->t));
    r->at = 0;
    r->n = 96;
    r->fail_at = -1;
    dla_datastore *ds;
    assert_ok(dla_custom_datastore_create(
        &(dla_custom_datastore){.num_outputs = 2, .num_observations = known ? 96 : -1,
                                .read = class_read, .hasdata = class_hasdata,
                                .reset = class_reset, .ctx = r},
        &ds));
    return ds;
}

static dla_status pass_both(void *ctx, int nin, dla_tensor *const *in, int nout,
                            dla_tensor **out);

/* MATLAB trains on a datastore that is neither shuffleable nor
 * partitionable in its order (Shuffle "never"): as on the arrays. */
static void test_trainnet_over_a_datastore_read_in_order(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x, *t;
    four_classes(&x, &t);
    class_reader rt, rv;
    dla_datastore *train = class_ds(&rt, x, t, 1), *val = class_ds(&rv, x, t, 1);
    dla_net *net = classifier(1), *from_x, *from_ds;
    dla_training_options o = {.verbose = -1, .solver = "adam", .max_epochs = 3,
                              .mini_batch_size = 20, .shuffle = "never",
                              .validation_frequency = 4, .dispatch_in_background = 1};
    dla_train_data tx = {.predictors = x, .targets = t}, tds = {.datastore = train},
                   vds = {.datastore = val};
    dla_training_info *ix, *ids;
    o.validation_data = &tx;
    dla_rng_seed(5);
    assert_ok(dla_trainnet(&tx, net, &(dla_train_loss){.name = "crossentropy"}, &o, &from_x,
                           &ix));
    o.validation_data = &vds;
    dla_rng_seed(5);
    assert_ok(dla_trainnet(&tds, net, &(dla_train_loss){.name = "crossentropy"}, &o, &from_ds,
                           &ids));
    assert_int_equal(ids->iterations, ix->iterations);
    assert_int_equal(ix->iterations, 12); /* the partial batch discarded */
    for (int64_t i = 0; i < ix->iterations; i++)
        tu_assert_near(ids->training_loss[i], ix->training_loss[i], 0);
    assert_int_equal(ids->validations, ix->validations);
    for (int64_t i = 0; i < ix->validations; i++)
        tu_assert_near(ids->validation_loss[i], ix->validation_loss[i], 0);
    assert_same_learnables(from_x, from_ds);
    double mx, mds;
    assert_ok(dla_testnet(from_x, &tx, "accuracy", NULL, &mx));
    assert_ok(dla_testnet(from_x, &tds, "accuracy", NULL, &mds));
    tu_assert_near(mds, mx, 0);
    dla_tensor *px, *pds;
    assert_ok(dla_minibatchpredict(from_x, &tx, NULL, &px));
    assert_ok(dla_minibatchpredict(from_x, &tds, NULL, &pds));
    assert_true(tu_same_bits(px, pds));
    dla_training_info_free(ix);
    dla_training_info_free(ids);
    dla_net_free(from_x);
    dla_net_free(from_ds);

    /* What it cannot do, said. */
    dla_net *trained;
    dla_training_options bad = o;
    bad.shuffle = "once";
    expect_error(dla_trainnet(&tds, net, &(dla_train_loss){.name = "crossentropy"}, &bad,
                              &trained, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "read in order, so it cannot be shuffled",
                 "Shuffle \"never\" (it is \"once\")", NULL);
    bad = o;
    bad.execution_environment = "parallel";
    expect_error(dla_trainnet(&tds, net, &(dla_train_loss){.name = "crossentropy"}, &bad,
                              &trained, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "cannot be shared out among workers", NULL);
    bad = o;
    bad.validation_data = &tds;
    expect_error(dla_trainnet(&tds, net, &(dla_train_loss){.name = "crossentropy"}, &bad,
                              &trained, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "ValidationData reads, in order", NULL);
    dla_datastore_free(train);
    dla_datastore_free(val);
    dla_net_free(net);
    dla_scope_end();
}

/* MATLAB reads a datastore that does not know its number of observations
 * until hasdata is false; trainnet, testnet and minibatchpredict read it
 * through for its count, afresh each call (it refused: "number of
 * observations is not known"). */
static void test_trainnet_over_a_datastore_of_unknown_count(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x, *t;
    four_classes(&x, &t);
    class_reader rk, ru;
    dla_datastore *known = class_ds(&rk, x, t, 1), *unknown = class_ds(&ru, x, t, 0);
    assert_int_equal(dla_datastore_num_observations(unknown), -1);
    dla_net *net = classifier(1), *from_known, *from_unknown;
    dla_training_options o = {.verbose = -1, .solver = "adam", .max_epochs = 2,
                              .mini_batch_size = 20, .shuffle = "never",
                              .dispatch_in_background = 1};
    dla_train_data tk = {.datastore = known}, tu = {.datastore = unknown};
    dla_training_info *ik, *iu;
    dla_rng_seed(3);
    assert_ok(dla_trainnet(&tk, net, &(dla_train_loss){.name = "crossentropy"}, &o, &from_known,
                           &ik));
    dla_rng_seed(3);
    assert_ok(dla_trainnet(&tu, net, &(dla_train_loss){.name = "crossentropy"}, &o,
                           &from_unknown, &iu));
    assert_int_equal(dla_datastore_num_observations(unknown), 96);
    assert_int_equal(iu->iterations, 8);
    assert_int_equal(iu->iterations, ik->iterations);
    for (int64_t i = 0; i < ik->iterations; i++)
        tu_assert_near(iu->training_loss[i], ik->training_loss[i], 0);
    assert_same_learnables(from_known, from_unknown);
    double mk, mu;
    assert_ok(dla_testnet(from_known, &tk, "accuracy", NULL, &mk));
    assert_ok(dla_testnet(from_known, &tu, "accuracy", NULL, &mu));
    tu_assert_near(mu, mk, 0);
    /* Fewer observations now: counted again, not read past its end. */
    ru.n = 50;
    dla_tensor *p;
    assert_ok(dla_minibatchpredict(from_known, &tu, NULL, &p));
    assert_int_equal(dla_tensor_dim(p, 2), 50);
    assert_int_equal(dla_datastore_num_observations(unknown), 50);
    /* What is made of it after that count takes it as learned, not given:
     * counted afresh as the datastore is (a transform kept 50 and read 50
     * of 60 without a word), and no count for a combination to refuse
     * another's by (it refused 50 beside a datastore of 96, which it
     * takes before the count was learned, reading while both have data). */
    dla_datastore *tr, *both;
    assert_ok(dla_transform(unknown, 0, pass_both, NULL, &tr));
    ru.n = 60;
    assert_ok(dla_minibatchpredict(from_known, &(dla_train_data){.datastore = tr}, NULL, &p));
    assert_int_equal(dla_tensor_dim(p, 2), 60);
    assert_ok(dla_combine(2, (dla_datastore *[]){unknown, known}, &both));
    dla_mbq *cq;
    assert_ok(dla_mbq_create(1, (dla_mbq_input[]){{.datastore = both}},
                             &(dla_mbq_options){.mini_batch_size = 32}, &cq));
    assert_int_equal(dla_mbq_num_observations(cq), 60);
    dla_mbq_free(cq);
    dla_datastore_free(both);
    dla_datastore_free(tr);
    /* A queue made by hand counts it when it does not know it. */
    class_reader rq;
    dla_datastore *fresh = class_ds(&rq, x, t, 0);
    rq.n = 7;
    dla_mbq *q;
    assert_ok(dla_mbq_create(1, (dla_mbq_input[]){{.datastore = fresh}},
                             &(dla_mbq_options){.mini_batch_size = 4}, &q));
    assert_int_equal(dla_mbq_num_observations(q), 7);
    assert_int_equal(dla_mbq_num_batches(q), 2);
    dla_mbq_free(q);
    /* The next queue counts it again: it has grown (the count learned
     * before was kept, and the two observations added never read). */
    rq.n = 9;
    assert_ok(dla_mbq_create(1, (dla_mbq_input[]){{.datastore = fresh}},
                             &(dla_mbq_options){.mini_batch_size = 4}, &q));
    assert_int_equal(dla_mbq_num_observations(q), 9);
    dla_mbq_free(q);
    dla_datastore_free(fresh);
    /* A read that fails while counting stops the call, naming where. */
    ru.n = 96;
    ru.fail_at = 41;
    dla_net *trained = NULL;
    expect_error(dla_trainnet(&tu, net, &(dla_train_loss){.name = "crossentropy"}, &o, &trained,
                              NULL),
                 DLA_ERR_IO, "unreadable record", "to count its observations, at observation 41",
                 NULL);
    assert_null(trained);
    dla_training_info_free(ik);
    dla_training_info_free(iu);
    dla_net_free(from_known);
    dla_net_free(from_unknown);
    dla_datastore_free(known);
    dla_datastore_free(unknown);
    dla_net_free(net);
    dla_scope_end();
}

/* Counting a datastore whose hasdata does not end soon says so as the
 * reads pile up (it waited unseen): at 10^6 reads, naming the remedy. */
static void test_a_long_count_is_said(void **state)
{
    (void)state;
    counter c = {.n = 1000001, .fail_at = -1};
    dla_datastore *ds = counter_ds(&c, 0, 0);
    fflush(stderr);
    FILE *log = tmpfile();
    assert_non_null(log);
    const int saved = dup(2);
    assert_true(saved >= 0 && dup2(fileno(log), 2) >= 0);
    dla_mbq *q = NULL;
    dla_status st = dla_mbq_create(1, (dla_mbq_input[]){{.datastore = ds}}, NULL, &q);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char text[2048];
    rewind(log);
    const size_t got = fread(text, 1, sizeof text - 1, log);
    text[got] = '\0';
    fclose(log);
    assert_int_equal(st, DLA_OK);
    assert_int_equal(dla_mbq_num_observations(q), 1000001);
    if (!strstr(text, "1000000 observations of the custom datastore read so far to count them") ||
        !strstr(text, "give it num_observations"))
        fail_msg("the log: %s", text);
    dla_mbq_free(q);
    dla_datastore_free(ds);
}

/* Both networks' learnables, bit for bit. */
static void assert_same_learnables(dla_net *a, dla_net *b)
{
    dla_table *la = dla_net_learnables(a), *lb = dla_net_learnables(b);
    assert_int_equal(dla_table_count(la), dla_table_count(lb));
    for (int i = 0; i < dla_table_count(la); i++)
        assert_true(tu_same_bits(dla_table_values(la)[i], dla_table_values(lb)[i]));
}

/* combine(arrayDatastore(X), arrayDatastore(T)) trained on as X and T: the
 * same losses, metrics, validation and learnables, bit for bit. */
static void train_both_ways(dla_net *net, dla_tensor *x, dla_tensor *t, const char *loss,
                            const char *metrics, int64_t iterations)
{
    dla_datastore *xs, *ts, *both;
    assert_ok(dla_array_datastore(x, NULL, &xs));
    assert_ok(dla_array_datastore(t, NULL, &ts));
    assert_ok(dla_combine(2, (dla_datastore *[]){xs, ts}, &both));
    dla_datastore_free(xs);
    dla_datastore_free(ts);
    dla_train_data tensors = {.predictors = x, .targets = t}, ds = {.datastore = both};
    dla_training_options o = {.verbose = -1, .solver = "adam", .max_epochs = 3,
                              .mini_batch_size = 32, .shuffle = "every-epoch",
                              .metrics = metrics, .validation_frequency = 2};
    dla_net *from_t, *from_ds;
    dla_training_info *it, *ids;
    o.validation_data = &tensors;
    dla_rng_seed(5);
    assert_ok(dla_trainnet(&tensors, net, &(dla_train_loss){.name = loss}, &o, &from_t, &it));
    o.validation_data = &ds;
    dla_rng_seed(5);
    assert_ok(dla_trainnet(&ds, net, &(dla_train_loss){.name = loss}, &o, &from_ds, &ids));
    assert_int_equal(it->iterations, iterations);
    assert_int_equal(ids->iterations, iterations);
    for (int64_t i = 0; i < it->iterations; i++) {
        tu_assert_near(ids->training_loss[i], it->training_loss[i], 0);
        if (!strcmp(metrics, "accuracy"))
            tu_assert_near(ids->training_accuracy[i], it->training_accuracy[i], 0);
        else
            tu_assert_near(ids->training_rmse[i], it->training_rmse[i], 0);
    }
    assert_int_equal(ids->validations, it->validations);
    assert_true(it->validations >= 2);
    for (int64_t i = 0; i < it->validations; i++)
        tu_assert_near(ids->validation_loss[i], it->validation_loss[i], 0);
    tu_assert_near(ids->final_validation_loss, it->final_validation_loss, 0);
    assert_same_learnables(from_t, from_ds);
    /* Tensors trained on, the datastore validated on. */
    dla_net *mixed;
    dla_training_info *im;
    dla_rng_seed(5);
    assert_ok(dla_trainnet(&tensors, net, &(dla_train_loss){.name = loss}, &o, &mixed, &im));
    assert_int_equal(im->validations, it->validations);
    for (int64_t i = 0; i < it->validations; i++)
        tu_assert_near(im->validation_loss[i], it->validation_loss[i], 0);
    assert_same_learnables(from_t, mixed);
    dla_training_info_free(im);
    dla_net_free(mixed);
    /* testnet and minibatchpredict over it, as over the tensors. */
    char names[64];
    snprintf(names, sizeof names, "%s,%s", loss, metrics);
    double vt[2], vds[2];
    assert_ok(dla_testnet(from_t, &tensors, names, &(dla_predict_options){.mini_batch_size = 40},
                          vt));
    assert_ok(dla_testnet(from_t, &ds, names, &(dla_predict_options){.mini_batch_size = 40}, vds));
    tu_assert_near(vds[0], vt[0], 0);
    tu_assert_near(vds[1], vt[1], 0);
    dla_scope_begin();
    dla_tensor *pt, *pds;
    assert_ok(dla_minibatchpredict(from_t, &tensors, &(dla_predict_options){.mini_batch_size = 40},
                                   &pt));
    assert_ok(dla_minibatchpredict(from_t, &ds, &(dla_predict_options){.mini_batch_size = 40},
                                   &pds));
    assert_true(tu_same_bits(pt, pds));
    dla_scope_end();
    dla_training_info_free(it);
    dla_training_info_free(ids);
    dla_net_free(from_t);
    dla_net_free(from_ds);
    dla_datastore_free(both);
}

static dla_status pass_both(void *ctx, int nin, dla_tensor *const *in, int nout, dla_tensor **out)
{
    (void)ctx, (void)nin, (void)nout;
    out[0] = in[0];
    out[1] = in[1];
    return DLA_OK;
}

/* L-BFGS (the whole data one batch) over a transform that returns both
 * outputs, as over the tensors. */
static void lbfgs_both_ways(dla_tensor *x, dla_tensor *t)
{
    dla_datastore *xs, *ts, *both, *tr;
    assert_ok(dla_array_datastore(x, NULL, &xs));
    assert_ok(dla_array_datastore(t, NULL, &ts));
    assert_ok(dla_combine(2, (dla_datastore *[]){xs, ts}, &both));
    assert_ok(dla_transform(both, 2, pass_both, NULL, &tr));
    dla_datastore_free(xs);
    dla_datastore_free(ts);
    dla_datastore_free(both);
    dla_net *net = classifier(1), *from_t, *from_ds;
    dla_training_options o = {.verbose = -1, .solver = "lbfgs", .max_iterations = 4};
    dla_training_info *it, *ids;
    dla_rng_seed(5);
    assert_ok(dla_trainnet(&(dla_train_data){.predictors = x, .targets = t}, net,
                           &(dla_train_loss){.name = "crossentropy"}, &o, &from_t, &it));
    dla_rng_seed(5);
    assert_ok(dla_trainnet(&(dla_train_data){.datastore = tr}, net,
                           &(dla_train_loss){.name = "crossentropy"}, &o, &from_ds, &ids));
    assert_int_equal(ids->iterations, it->iterations);
    assert_true(it->iterations >= 1);
    for (int64_t i = 0; i < it->iterations; i++)
        tu_assert_near(ids->training_loss[i], it->training_loss[i], 0);
    assert_same_learnables(from_t, from_ds);
    dla_training_info_free(it);
    dla_training_info_free(ids);
    dla_net_free(from_t);
    dla_net_free(from_ds);
    dla_net_free(net);
    dla_datastore_free(tr);
}

/* Images through a batch normalization layer (its statistics a pass over
 * the data after training), ExecutionEnvironment "parallel" in a world of
 * one (the queue shared out among workers). */
static void parallel_images_both_ways(void)
{
    enum { N = 30 };
    float img[36 * N];
    int32_t lab[N];
    for (int j = 0; j < N; j++) {
        lab[j] = j % 3;
        for (int e = 0; e < 36; e++)
            img[36 * j + e] = (float)((e % 3 == lab[j] ? 1.0 : 0.0) + 0.01 * ((j * 7 + e) % 11));
    }
    dla_tensor *x = dla_tensor_from_host(img, DLA_F32, "SSCB", DLA_DIMS(6, 6, 1, N));
    dla_tensor *t = dla_tensor_from_host(lab, DLA_I32, "", DLA_DIMS(1, N));
    dla_datastore *xs, *ts, *both;
    assert_ok(dla_array_datastore(x, NULL, &xs));
    assert_ok(dla_array_datastore(t, NULL, &ts));
    assert_ok(dla_combine(2, (dla_datastore *[]){xs, ts}, &both));
    dla_datastore_free(xs);
    dla_datastore_free(ts);
    dla_rng_seed(2);
    dla_layer *layers[] = {dla_image_input_layer(6, 6, 1, NULL), dla_conv2d_layer(3, 3, 4, NULL),
                           dla_batchnorm_layer(NULL), dla_relu_layer(NULL), dla_fc_layer(3, NULL),
                           dla_softmax_layer(NULL)};
    dla_net *net = dla_net_create(6, layers), *from_t, *from_ds;
    assert_non_null(net);
    dla_training_options o = {.max_epochs = 2, .mini_batch_size = 6, .initial_learn_rate = 0.05,
                              .execution_environment = "parallel", .verbose = -1,
                              .shuffle = "every-epoch"};
    dla_training_info *it, *ids;
    dla_rng_seed(5);
    assert_ok(dla_trainnet(&(dla_train_data){.predictors = x, .targets = t}, net,
                           &(dla_train_loss){.name = "crossentropy"}, &o, &from_t, &it));
    dla_rng_seed(5);
    assert_ok(dla_trainnet(&(dla_train_data){.datastore = both}, net,
                           &(dla_train_loss){.name = "crossentropy"}, &o, &from_ds, &ids));
    assert_int_equal(ids->iterations, it->iterations);
    assert_int_equal(it->iterations, 10);
    for (int64_t i = 0; i < it->iterations; i++)
        tu_assert_near(ids->training_loss[i], it->training_loss[i], 0);
    assert_same_learnables(from_t, from_ds);
    /* The batch normalization statistics of the pass over the data too. */
    dla_table *st = dla_net_state(from_t), *sd = dla_net_state(from_ds);
    assert_int_equal(dla_table_count(st), dla_table_count(sd));
    for (int i = 0; i < dla_table_count(st); i++)
        assert_true(tu_same_bits(dla_table_value(st, i), dla_table_value(sd, i)));
    dla_training_info_free(it);
    dla_training_info_free(ids);
    dla_net_free(from_t);
    dla_net_free(from_ds);
    dla_net_free(net);
    dla_datastore_free(both);
}

static void test_trainnet_takes_the_targets_from_the_datastore(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x, *t;
    four_classes(&x, &t);
    /* Class numbers: int32, one per observation; with a normalizing input
     * layer (statistics read from the datastore) and without one (the
     * network initialized from its first observation). */
    for (int normalized = 0; normalized <= 1; normalized++) {
        dla_net *net = classifier(normalized);
        train_both_ways(net, x, t, "crossentropy", "accuracy", 9);
        dla_net_free(net);
    }
    lbfgs_both_ways(x, t);
    parallel_images_both_ways();
    /* Responses: 3 x 96 unformatted, labeled as the network's output. */
    float r[3 * 96];
    for (int j = 0; j < 96; j++)
        for (int c = 0; c < 3; c++)
            r[3 * j + c] = (float)(0.5 * c + 0.25 * j / 96.0);
    dla_tensor *resp = dla_tensor_from_host(r, DLA_F32, "", DLA_DIMS(3, 96));
    dla_rng_seed(11);
    dla_layer *l[] = {dla_feature_input_layer(2, NULL), dla_fc_layer(8, NULL),
                      dla_relu_layer(NULL), dla_fc_layer(3, NULL)};
    dla_net *reg = dla_net_create(4, l);
    assert_non_null(reg);
    train_both_ways(reg, x, resp, "mse", "rmse", 9);
    dla_net_free(reg);
    dla_scope_end();
}

static void test_trainnet_refuses_datastore_targets_that_do_not_fit(void **state)
{
    (void)state;
    dla_scope_begin();
    dla_tensor *x, *t;
    four_classes(&x, &t);
    dla_net *net = classifier(1), *trained = NULL;
    dla_training_options o = {.verbose = -1, .max_epochs = 1, .mini_batch_size = 32};
    const dla_train_loss ce = {.name = "crossentropy"};
    dla_datastore *xs, *ts, *both, *three, *wrong, *bad, *resp_ds;
    assert_ok(dla_array_datastore(x, NULL, &xs));
    assert_ok(dla_array_datastore(t, NULL, &ts));
    assert_ok(dla_combine(2, (dla_datastore *[]){xs, ts}, &both));
    /* Responses of 2 channels for a network of 4 classes: refused from the
     * first observation, before training. */
    assert_ok(dla_array_datastore(dla_cast(x, DLA_F32), NULL, &resp_ds));
    assert_ok(dla_combine(2, (dla_datastore *[]){xs, resp_ds}, &wrong));
    expect_error(dla_trainnet(&(dla_train_data){.datastore = wrong}, net, &ce, &o, &trained, NULL),
                 DLA_ERR_SHAPE, "dla_trainnet", "observation 0", "2 classes along C", NULL);
    assert_null(trained);
    /* A class number out of range in observation 50: the second mini-batch
     * (no shuffling), its 19th target, named. */
    int32_t tv[96];
    assert_ok(dla_tensor_to_host(t, tv, sizeof tv));
    tv[50] = 7;
    dla_datastore *tbad;
    assert_ok(dla_array_datastore(dla_tensor_from_host(tv, DLA_I32, "", DLA_DIMS(1, 96)), NULL,
                                  &tbad));
    assert_ok(dla_combine(2, (dla_datastore *[]){xs, tbad}, &bad));
    o.shuffle = "never";
    expect_error(dla_trainnet(&(dla_train_data){.datastore = bad}, net, &ce, &o, &trained, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "dla_trainnet: epoch 1: data: the datastore's "
                 "mini-batch 2: targets[18] is 7", NULL);
    /* Training had started: the network as the first batch left it. */
    assert_non_null(trained);
    dla_net_free(trained);
    trained = NULL;
    /* And in the validation data: named as such. */
    o.validation_data = &(dla_train_data){.datastore = bad};
    expect_error(dla_trainnet(&(dla_train_data){.datastore = both}, net, &ce, &o, &trained, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "validation at iteration 1: ValidationData: the "
                 "datastore's mini-batch 2: targets[18] is 7", NULL);
    dla_net_free(trained); /* the first validation comes after training started */
    trained = NULL;
    /* Validation targets of another kind than the training ones. */
    o.validation_data = &(dla_train_data){.datastore = wrong};
    expect_error(dla_trainnet(&(dla_train_data){.datastore = both}, net, &ce, &o, &trained, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "ValidationData", "responses where the training data's "
                 "are class numbers", NULL);
    o.validation_data = NULL;
    /* testnet checks the same. */
    double v;
    expect_error(dla_testnet(net, &(dla_train_data){.datastore = wrong}, "accuracy", NULL, &v),
                 DLA_ERR_SHAPE, "dla_testnet: data: the datastore's observation 0", NULL);
    /* and every batch: testnet over the validation data above. */
    expect_error(dla_testnet(net, &(dla_train_data){.datastore = bad}, "accuracy", NULL, &v),
                 DLA_ERR_INVALID_ARGUMENT, "dla_testnet: data: the datastore's mini-batch 1: "
                 "targets[50] is 7", NULL);
    /* Three outputs for a network of one input and one output; two with
     * targets given as well. */
    assert_ok(dla_combine(3, (dla_datastore *[]){xs, ts, ts}, &three));
    expect_error(dla_trainnet(&(dla_train_data){.datastore = three}, net, &ce, &o, &trained, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "3 outputs", "one input and one output", NULL);
    expect_error(dla_trainnet(&(dla_train_data){.datastore = both, .targets = t}, net, &ce, &o,
                              &trained, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "2 outputs and targets are given too", NULL);
    expect_error(dla_minibatchpredict(net, &(dla_train_data){.datastore = three}, NULL,
                                      &(dla_tensor *){NULL}),
                 DLA_ERR_INVALID_ARGUMENT, "3 outputs", NULL);
    /* One output and no targets. */
    expect_error(dla_trainnet(&(dla_train_data){.datastore = xs}, net, &ce, &o, &trained, NULL),
                 DLA_ERR_INVALID_ARGUMENT, "targets is NULL", "second output", NULL);
    dla_datastore_free(xs);
    dla_datastore_free(ts);
    dla_datastore_free(both);
    dla_datastore_free(three);
    dla_datastore_free(wrong);
    dla_datastore_free(tbad);
    dla_datastore_free(bad);
    dla_datastore_free(resp_ds);
    dla_net_free(net);
    dla_scope_end();
}

/* ------------------------------------------------ refused allocations */

/* combine(array, transform(files)) through a queue, shuffled, and a
 * subset read: the first failure's status. */
static dla_status pipeline_once(void *ctx)
{
    (void)ctx;
    dla_scope_begin();
    dla_datastore *xs = NULL, *fs = NULL, *ts = NULL, *both = NULL, *sub = NULL;
    dla_mbq *q = NULL;
    dla_status st = dla_array_datastore(columns(6, "CB"), NULL, &xs);
    if (st == DLA_OK)
        st = dla_file_datastore(1, (const char *[]){at_root("labels")},
                                (const char *[]){".txt", NULL}, 1, read_number, NULL, &fs);
    if (st == DLA_OK)
        st = dla_transform(fs, 0, twice_and_sum, NULL, &ts);
    if (st == DLA_OK)
        st = dla_combine(2, (dla_datastore *[]){xs, ts}, &both);
    if (st == DLA_OK)
        st = dla_mbq_create(1, (dla_mbq_input[]){{.datastore = both}},
                            &(dla_mbq_options){.mini_batch_size = 4}, &q);
    for (int pass = 0; pass < 2 && st == DLA_OK; pass++) {
        dla_mbq_shuffle(q);
        while (st == DLA_OK && dla_mbq_hasdata(q)) {
            dla_tensor *b[2];
            st = dla_mbq_next(q, 2, b);
        }
    }
    if (st == DLA_OK)
        st = dla_datastore_subset(both, 2, (int64_t[]){5, 1}, &sub);
    if (st == DLA_OK) {
        dla_tensor *o[2];
        st = dla_datastore_readall(sub, 2, o);
    }
    dla_mbq_free(q);
    dla_datastore_free(sub);
    dla_datastore_free(both);
    dla_datastore_free(ts);
    dla_datastore_free(fs);
    dla_datastore_free(xs);
    dla_scope_end();
    return st;
}

static void test_every_refused_allocation_fails_cleanly(void **state)
{
    (void)state;
    char why[1024];
    const int refused = tu_refuse_each(pipeline_once, NULL, why, sizeof why);
    if (refused < 0)
        fail_msg("%s", why);
    fprintf(stderr, "# %d refused allocations failed cleanly\n", refused);
    assert_true(refused > 10);
}

/* A read that ends one scope more than it began, or leaves one open: an
 * error naming the read and what it did. The extra end closed the scope
 * the datastore opened around the read (releasing what it read) and then
 * the caller's, whose tensors were released under it; a scope left open
 * piled up, one more each read. */
static int unpaired_mode;

static dla_status unpaired_read_at(void *ctx, int64_t i, int n, dla_tensor **out)
{
    (void)ctx, (void)n;
    if (unpaired_mode > 0)
        dla_scope_begin();
    out[0] = dla_full((double)i, DLA_F32, "", DLA_DIMS(1, 1));
    if (unpaired_mode < 0)
        dla_scope_end();
    return DLA_OK;
}

static void test_a_read_with_unpaired_scopes_is_an_error_naming_it(void **state)
{
    (void)state;
    dla_custom_datastore def = {.num_outputs = 1, .num_observations = 3,
                                .read_at = unpaired_read_at};
    dla_datastore *ds;
    assert_ok(dla_custom_datastore_create(&def, &ds));
    for (int mode = -1; mode <= 1; mode += 2) {
        unpaired_mode = mode;
        dla_scope_begin();
        dla_tensor *mine = dla_full(7.0, DLA_F32, "", DLA_DIMS(1, 1));
        const int depth = dla_scope_depth();
        dla_tensor *out = NULL;
        dla_datastore_reset(ds);
        assert_int_equal(dla_datastore_read(ds, 1, &out), DLA_ERR_STATE);
        assert_non_null(strstr(dla_last_error(), "read_at(0)"));
        assert_non_null(strstr(dla_last_error(), mode < 0 ? "called dla_scope_end 1 more time "
                                                           "than dla_scope_begin"
                                                         : "left 1 scope open"));
        assert_int_equal(dla_scope_depth(), depth);
        /* The caller's tensor lives on, and the next good read works. */
        tu_assert_near(dla_tensor_item(mine, 0), 7.0, 0);
        unpaired_mode = 0;
        assert_ok(dla_datastore_read(ds, 1, &out));
        tu_assert_near(dla_tensor_item(out, 0), 0.0, 0);
        dla_scope_end();
    }
    dla_datastore_free(ds);
}

int main(void)
{
    dla_set_allocator(tu_atomic_alloc, NULL);
    const struct CMUnitTest tests[] = {
        TU_TEST(test_array_reads_read_size_observations_along_the_last_dim),
        TU_TEST(test_a_read_with_unpaired_scopes_is_an_error_naming_it),
        TU_TEST(test_array_iteration_dimension_and_formats),
        TU_TEST(test_subset_shuffle_and_partition),
        TU_TEST(test_file_datastore_reads_one_file_a_read_in_path_order),
        TU_TEST(test_a_stale_link_of_another_name_is_left_out),
        TU_TEST(test_transform_applies_the_function_per_observation),
        TU_TEST(test_combine_reads_in_step_and_refuses_other_lengths),
        TU_TEST(test_custom_datastores_indexed_and_in_order),
        TU_TEST(test_shapes_that_differ_across_observations_are_refused),
        TU_TEST(test_a_callback_failing_halfway_names_itself),
        TU_TEST(test_misuse_is_refused),
        TU_TEST(test_queue_over_combined_array_and_files),
        TU_TEST(test_queue_over_a_datastore_read_in_order),
        TU_TEST(test_one_position_read_twice_side_by_side_is_refused),
        TU_TEST(test_a_failed_read_keeps_a_combination_in_step),
        TU_TEST(test_a_queue_skips_past_a_failed_batch_read_in_order),
        TU_TEST(test_queue_format_puts_the_observation_dim),
        TU_TEST(test_trainnet_over_a_datastore_trains_as_over_the_array),
        TU_TEST(test_trainnet_over_a_datastore_read_in_order),
        TU_TEST(test_trainnet_over_a_datastore_of_unknown_count),
        TU_TEST(test_a_long_count_is_said),
        TU_TEST(test_trainnet_takes_the_targets_from_the_datastore),
        TU_TEST(test_trainnet_refuses_datastore_targets_that_do_not_fit),
        TU_TEST(test_every_refused_allocation_fails_cleanly),
    };
    return cmocka_run_group_tests(tests, setup_files, teardown_files);
}
