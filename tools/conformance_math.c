/*
 * conformance_math.c - the suite's cases for reduce and gemm.
 *
 * Sums (sum, mean, GEMM) are compared within 4 (n + 4) eps M, M being the
 * same reduction or product over absolute values, which the oracle
 * computes on |inputs|: every order of summation, in the dtype or wider,
 * stays inside it. max and min, and the positions they report, are exact
 * (ties keep the first position, a NaN wins). NaN and infinities come
 * now and then: a sum holding an infinity is that infinity or NaN,
 * exactly.
 */
#include "tools/conformance.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const reduce_names[] = {
#define NAME(name, str) str,
    DLA_REDUCE_LIST(NAME)
#undef NAME
};

void cf_case_reduce(cf_case *c)
{
    const int t = cf_float_dtype(c, DLA_KERNEL_REDUCE);
    if (t < 0 || !CF_TABLE(c, CF_DUT)->reduce) {
        c->skipped = 1;
        return;
    }
    const dla_reduce_op op = (dla_reduce_op)cf_int(c, 0, DLA_REDUCE_COUNT - 1);
    const int extreme = op == DLA_REDUCE_MAX || op == DLA_REDUCE_MIN;
    int nd;
    int64_t xd[DLA_MAX_DIMS], yd[DLA_MAX_DIMS];
    cf_dims(c, &nd, xd, 5, 9, extreme ? 0 : 3);
    if (nd == 0)
        nd = 1, xd[0] = cf_int(c, 1, 9);
    if (c->index == 0)
        nd = 2, xd[0] = 1000, xd[1] = 300;
    else if (c->index == 1)
        nd = 1, xd[0] = 200000;
    for (int d = 0; d < nd; d++)
        yd[d] = cf_chance(c, 50) ? 1 : xd[d];
    if (c->index == 1)
        yd[0] = 1;
    const int want_index = extreme && cf_chance(c, 60);
    /* Few distinct values make ties; a NaN now and then must win. */
    const int ties = extreme && cf_chance(c, 50);
    dla_view y, x, ix;
    memset(&ix, 0, sizeof ix);
    cf_buf *by = cf_buf_new(c, (dla_dtype)t, cf_view(c, &y, (dla_dtype)t, nd, yd, 0), -9, 9, 0);
    cf_buf *bx = by ? cf_buf_new(c, (dla_dtype)t, cf_view(c, &x, (dla_dtype)t, nd, xd, 0),
                                 ties ? -3 : -1, ties ? 3 : 1, 0)
                    : NULL;
    cf_buf *bi = NULL;
    if (bx && want_index)
        bi = cf_buf_new(c, DLA_I32, cf_view(c, &ix, DLA_I32, nd, yd, 0), -5, 5, 0);
    if (!bx || (want_index && !bi))
        return;
    if (ties)
        for (int64_t i = 0; i < bx->n; i++)
            cf_buf_set(bx, i, round(cf_buf_get(bx, i)));
    /* A NaN or an infinity now and then: a sum with an infinity among
     * finite terms is that infinity (a compensated float sum must not
     * make it NaN), one with both infinities NaN. */
    static const double special[] = {NAN, INFINITY, -INFINITY};
    const int64_t nx = cf_numel(nd, xd);
    for (int k = 0; k < 2; k++)
        if (nx > 0 && cf_chance(c, extreme ? 20 : 40))
            cf_buf_set(bx, cf_view_at(&x, cf_int(c, 0, nx - 1)), special[cf_int(c, 0, 2)]);
    if (!cf_buf_upload(c, bx))
        return;
    char s1[96], s2[96], v0[128], v1[128];
    cf_describe(c, "reduce %s %s x %s -> y %s y%s x%s%s", reduce_names[op],
                dla_dtype_name((dla_dtype)t), cf_dims_str(s1, sizeof s1, nd, xd),
                cf_dims_str(s2, sizeof s2, nd, yd), cf_view_str(v0, sizeof v0, &y),
                cf_view_str(v1, sizeof v1, &x), want_index ? " with index" : "");
    dla_reduce_args a = {.struct_size = sizeof a, .op = op, .y = y, .x = x, .index = ix};
    for (int k = 0; k < 2; k++) {
        a.y.mem = by->mem[k], a.x.mem = bx->mem[k];
        a.index.mem = want_index ? bi->mem[k] : NULL;
        cf_record(c, k, cf_call(c, k, DLA_KERNEL_REDUCE, &a, 0));
    }
    if (!cf_agree(c))
        return;
    if (extreme) {
        if (cf_compare(c, by, &y, CF_EXACT) && want_index)
            cf_compare(c, bi, &ix, CF_EXACT);
        return;
    }
    /* The magnitude: the same reduction over |x| on the oracle. */
    int64_t nred = 1;
    for (int d = 0; d < nd; d++)
        nred *= yd[d] == xd[d] ? 1 : xd[d];
    cf_buf *ay = cf_buf_abs(c, by), *ax = ay ? cf_buf_abs(c, bx) : NULL;
    if (!ax)
        return;
    a.y.mem = ay->mem[CF_ORACLE], a.x.mem = ax->mem[CF_ORACLE];
    if (CF_TABLE(c, CF_ORACLE)->reduce(CF_CTX(c, CF_ORACLE), &a) != DLA_OK) {
        cf_fail(c, "the oracle's magnitude run: %s", dla_last_error());
        return;
    }
    double *mag = cf_oracle_values(c, ay);
    if (mag)
        cf_compare(c, by, &y, (cf_tol){0, mag, (double)nred});
    free(mag);
}

/* ----------------------------------------------------------------- gemm */

void cf_case_gemm(cf_case *c)
{
    const int t = cf_float_dtype(c, DLA_KERNEL_GEMM);
    if (t < 0 || !CF_TABLE(c, CF_DUT)->gemm) {
        c->skipped = 1;
        return;
    }
    dla_gemm_args g = {.struct_size = sizeof g, .dtype = (dla_dtype)t};
    const int big = c->index < 2 || cf_chance(c, 10);
    g.m = big ? cf_int(c, 60, 200) : cf_int(c, 0, 24);
    g.n = big ? cf_int(c, 60, 200) : cf_int(c, 0, 24);
    g.k = big ? cf_int(c, 60, 300) : cf_int(c, cf_chance(c, 10) ? 0 : 1, 24);
    g.batch = cf_chance(c, 50) ? 1 : cf_int(c, 0, 5);
    g.trans_a = (int32_t)cf_int(c, 0, 1);
    g.trans_b = (int32_t)cf_int(c, 0, 1);
    g.alpha = cf_chance(c, 10) ? 0 : cf_chance(c, 30) ? 1 : cf_unif(c, -2, 2);
    g.beta = cf_chance(c, 40) ? 0 : cf_chance(c, 30) ? 1 : cf_unif(c, -2, 2);
    const int64_t ar = g.trans_a ? g.k : g.m, ac = g.trans_a ? g.m : g.k;
    const int64_t br = g.trans_b ? g.n : g.k, bc = g.trans_b ? g.k : g.n;
    dla_gemm_operand *ops[3] = {&g.a, &g.b, &g.c};
    const int64_t rows[3] = {ar, br, g.m}, cols[3] = {ac, bc, g.n};
    int64_t need[3];
    for (int i = 0; i < 3; i++) {
        dla_gemm_operand *o = ops[i];
        o->ld = (rows[i] > 1 ? rows[i] : 1) + (cf_chance(c, 30) ? cf_int(c, 1, 3) : 0);
        o->offset = cf_chance(c, 40) ? cf_int(c, 1, 9) : 0;
        const int64_t page = o->ld * (cols[i] > 0 ? cols[i] - 1 : 0) + rows[i];
        /* A and B may be one page for every p; C pages are apart, or (with
         * beta) one C the pages add into in turn. */
        if (i < 2 && cf_chance(c, 25))
            o->batch_stride = 0;
        else if (i == 2 && g.beta != 0 && cf_chance(c, 15))
            o->batch_stride = 0;
        else
            o->batch_stride = page + (cf_chance(c, 30) ? cf_int(c, 1, 5) : 0);
        need[i] = o->offset + (g.batch > 0 ? g.batch - 1 : 0) * o->batch_stride + page + 1;
    }
    cf_buf *b[3];
    for (int i = 0; i < 3; i++)
        if (!(b[i] = cf_buf_new(c, (dla_dtype)t, need[i], -1, 1, 5)))
            return;
    /* With beta 0, C's old contents must not reach the result. */
    if (g.beta == 0) {
        for (int64_t i = 0; i < b[2]->n; i++)
            if (cf_chance(c, 10))
                cf_buf_set(b[2], i, NAN);
        if (!cf_buf_upload(c, b[2]))
            return;
    }
    cf_describe(c, "gemm %s m %lld n %lld k %lld batch %lld trans %d%d alpha %.17g beta %.17g "
                   "a(off %lld ld %lld bs %lld) b(off %lld ld %lld bs %lld) c(off %lld ld %lld bs "
                   "%lld)",
                dla_dtype_name((dla_dtype)t), (long long)g.m, (long long)g.n, (long long)g.k,
                (long long)g.batch, (int)g.trans_a, (int)g.trans_b, g.alpha, g.beta,
                (long long)g.a.offset, (long long)g.a.ld, (long long)g.a.batch_stride,
                (long long)g.b.offset, (long long)g.b.ld, (long long)g.b.batch_stride,
                (long long)g.c.offset, (long long)g.c.ld, (long long)g.c.batch_stride);
    for (int k = 0; k < 2; k++) {
        g.a.mem = b[0]->mem[k], g.b.mem = b[1]->mem[k], g.c.mem = b[2]->mem[k];
        cf_record(c, k, cf_call(c, k, DLA_KERNEL_GEMM, &g, 0));
    }
    if (!cf_agree(c))
        return;
    /* The magnitude: |alpha| |A| |B| + |beta| |C| on the oracle; where
     * pages add into one C, every page's terms. */
    cf_buf *m[3];
    for (int i = 0; i < 3; i++)
        if (!(m[i] = cf_buf_abs(c, b[i])))
            return;
    /* A NaN under beta 0 is not read, and must not make M NaN either. */
    for (int64_t i = 0; g.beta == 0 && i < m[2]->n; i++)
        if (isnan(cf_buf_get(m[2], i)))
            cf_buf_set(m[2], i, 0);
    if (g.beta == 0 && !cf_buf_upload(c, m[2]))
        return;
    dla_gemm_args mg = g;
    mg.alpha = fabs(g.alpha), mg.beta = fabs(g.beta);
    mg.a.mem = m[0]->mem[CF_ORACLE], mg.b.mem = m[1]->mem[CF_ORACLE], mg.c.mem = m[2]->mem[CF_ORACLE];
    if (CF_TABLE(c, CF_ORACLE)->gemm(CF_CTX(c, CF_ORACLE), &mg) != DLA_OK) {
        cf_fail(c, "the oracle's magnitude run: %s", dla_last_error());
        return;
    }
    double *mag = cf_oracle_values(c, m[2]);
    if (!mag)
        return;
    /* The elements C's pages cover. */
    dla_view cv;
    memset(&cv, 0, sizeof cv);
    cv.struct_size = sizeof cv;
    cv.dtype = (dla_dtype)t;
    cv.ndims = 3;
    cv.offset = g.c.offset;
    cv.dims[0] = g.m, cv.dims[1] = g.n, cv.dims[2] = g.batch;
    cv.strides[0] = 1, cv.strides[1] = g.c.ld, cv.strides[2] = g.c.batch_stride;
    const double terms = (double)(g.c.batch_stride == 0 && g.batch > 1 ? g.batch : 1) *
                         (double)(g.k + 1);
    cf_compare(c, b[2], &cv, (cf_tol){0, mag, terms});
    free(mag);
}
