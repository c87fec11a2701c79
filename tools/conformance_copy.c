/*
 * conformance_copy.c - the suite's cases for the members that move data:
 * the memory members (copies at byte offsets in both directions and on
 * the device), fill, strided_copy and cast. All are exact: the same bits
 * as the oracle, with saturation and NaN rules of the header for fills
 * and casts.
 */
#include "tools/conformance.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void cf_case_memory(cf_case *c)
{
    /* The first case also asks for more bytes than any device has: a
     * plugin that adds a header to the size must not wrap it into a small
     * block that then claims SIZE_MAX bytes (copies would run past it). */
    if (c->index == 0) {
        const dla_plugin *dut = CF_TABLE(c, CF_DUT);
        dla_mem huge = NULL;
        const dla_status st = dut->mem_alloc(CF_CTX(c, CF_DUT), SIZE_MAX, &huge);
        dla_clear_error();
        if (st == DLA_OK)
            dut->mem_free(CF_CTX(c, CF_DUT), huge);
        if (st != DLA_ERR_OUT_OF_MEMORY) {
            cf_fail(c, "mem_alloc of SIZE_MAX bytes answered %s, not DLA_ERR_OUT_OF_MEMORY",
                    dla_status_str(st));
            return;
        }
    }
    const int64_t n = cf_chance(c, 20) ? cf_int(c, 1 << 16, 1 << 20) : cf_int(c, 1, 4096);
    cf_buf *b = cf_buf_new(c, DLA_U8, n, 0, 255, 0);
    cf_buf *src = b ? cf_buf_new(c, DLA_U8, n, 0, 255, 0) : NULL;
    if (!src)
        return;
    const int64_t off = cf_int(c, 0, n - 1), len = cf_int(c, 0, n - off);
    cf_describe(c, "buffer %lld bytes, copy_to_device of %lld at byte %lld", (long long)n,
                (long long)len, (long long)off);
    unsigned char *part = malloc((size_t)(len > 0 ? len : 1));
    if (!part) {
        cf_fail(c, "out of host memory");
        return;
    }
    for (int64_t i = 0; i < len; i++)
        part[i] = (unsigned char)cf_int(c, 0, 255);
    for (int k = 0; k < 2; k++)
        cf_record(c, k, CF_TABLE(c, k)->copy_to_device(CF_CTX(c, k), b->mem[k], (size_t)off, part,
                                                      (size_t)len));
    /* The source may be reused at once: scribbling on it changes nothing. */
    memset(part, 0xA5, (size_t)(len > 0 ? len : 1));
    free(part);
    if (!cf_agree(c) || !cf_compare(c, b, NULL, CF_EXACT))
        return;
    /* The memory kept for reuse given back (ABI 1.7), as
     * dla_device_release_cached does it (after a sync): a freed block goes,
     * the live buffers keep their bytes. */
    const dla_plugin *dut = CF_TABLE(c, CF_DUT);
    if (dut->mem_trim && cf_chance(c, 25)) {
        void *ctx = CF_CTX(c, CF_DUT);
        dla_mem scratch = NULL;
        size_t released = 0;
        cf_describe(c, "; mem_trim after a free of %lld bytes", (long long)n);
        dla_status st = dut->mem_alloc(ctx, (size_t)n, &scratch);
        if (st == DLA_OK) {
            dut->mem_free(ctx, scratch);
            st = dut->sync ? dut->sync(ctx) : DLA_OK;
        }
        if (st == DLA_OK)
            st = dut->mem_trim(ctx, &released);
        if (st != DLA_OK) {
            cf_fail(c, "mem_trim: %s", dla_status_str(st));
            return;
        }
        if (!cf_compare(c, b, NULL, CF_EXACT))
            return;
    }
    /* Device to device, when the device under test has it. */
    if (CF_TABLE(c, CF_DUT)->copy_on_device) {
        const int64_t so = cf_int(c, 0, n - 1), dst = cf_int(c, 0, n - 1);
        const int64_t m = cf_int(c, 0, n - (so > dst ? so : dst));
        cf_describe(c, "; copy_on_device of %lld from byte %lld to %lld", (long long)m,
                    (long long)so, (long long)dst);
        for (int k = 0; k < 2; k++)
            cf_record(c, k, CF_TABLE(c, k)->copy_on_device(CF_CTX(c, k), b->mem[k], (size_t)dst,
                                                          src->mem[k], (size_t)so, (size_t)m));
        if (!cf_agree(c) || !cf_compare(c, b, NULL, CF_EXACT))
            return;
    }
    /* A part back to the host, right after the work that wrote it. */
    const int64_t ro = cf_int(c, 0, n - 1), rl = cf_int(c, 1, n - ro);
    cf_describe(c, "; copy_to_host of %lld from byte %lld", (long long)rl, (long long)ro);
    unsigned char *got = malloc((size_t)rl), *want = malloc((size_t)rl);
    if (got && want) {
        cf_record(c, CF_DUT, CF_TABLE(c, CF_DUT)->copy_to_host(CF_CTX(c, CF_DUT), got,
                                                               b->mem[CF_DUT], (size_t)ro,
                                                               (size_t)rl));
        cf_record(c, CF_ORACLE, CF_TABLE(c, CF_ORACLE)->copy_to_host(
                                    CF_CTX(c, CF_ORACLE), want, b->mem[CF_ORACLE], (size_t)ro,
                                    (size_t)rl));
        if (cf_agree(c) && memcmp(got, want, (size_t)rl) != 0)
            cf_fail(c, "the bytes read back differ from the oracle's");
    } else {
        cf_fail(c, "out of host memory");
    }
    free(got);
    free(want);
}

void cf_case_fill(cf_case *c)
{
    const int t = cf_any_dtype(c, DLA_KERNEL_FILL);
    if (t < 0) {
        c->skipped = 1;
        return;
    }
    static const double values[] = {3.75, -2.5, 0.0, -0.0, 1.0, 300.7, -1e10, 1e10, 255.5, NAN,
                                    INFINITY, 2147483647.5, -2147483648.5, 1e-300};
    const double value = cf_chance(c, 50) ? values[cf_int(c, 0, 13)] : cf_unif(c, -1e3, 1e3);
    int nd;
    int64_t dims[DLA_MAX_DIMS];
    cf_dims(c, &nd, dims, 5, 9, 3);
    if (c->index == 0)
        nd = 2, dims[0] = 513, dims[1] = 300;
    dla_view y;
    cf_buf *b = cf_buf_new(c, (dla_dtype)t, cf_view(c, &y, (dla_dtype)t, nd, dims, 0), -100, 100, 0);
    if (!b)
        return;
    char ds[96], vs[128];
    cf_describe(c, "fill %s value %.17g dims %s y%s", dla_dtype_name((dla_dtype)t), value,
                cf_dims_str(ds, sizeof ds, nd, dims), cf_view_str(vs, sizeof vs, &y));
    for (int k = 0; k < 2; k++) {
        y.mem = b->mem[k];
        cf_record(c, k, cf_call(c, k, DLA_KERNEL_FILL, (dla_view[2]){y, y}, value));
    }
    if (cf_agree(c))
        cf_compare(c, b, &y, CF_EXACT);
}

void cf_case_strided_copy(cf_case *c)
{
    const int t = cf_any_dtype(c, DLA_KERNEL_STRIDED_COPY);
    if (t < 0) {
        c->skipped = 1;
        return;
    }
    int nd;
    int64_t dims[DLA_MAX_DIMS];
    cf_dims(c, &nd, dims, 6, 8, 3);
    if (c->index == 0)
        nd = 2, dims[0] = 300, dims[1] = 700;
    dla_view y, x;
    cf_buf *by = cf_buf_new(c, (dla_dtype)t, cf_view(c, &y, (dla_dtype)t, nd, dims, 0), -50, 50, 0);
    cf_buf *bx = by ? cf_buf_new(c, (dla_dtype)t, cf_view(c, &x, (dla_dtype)t, nd, dims, 1), -50,
                                 50, 0)
                    : NULL;
    if (!bx)
        return;
    char ds[96], vy[128], vx[128];
    cf_describe(c, "strided_copy %s dims %s y%s x%s", dla_dtype_name((dla_dtype)t),
                cf_dims_str(ds, sizeof ds, nd, dims), cf_view_str(vy, sizeof vy, &y),
                cf_view_str(vx, sizeof vx, &x));
    for (int k = 0; k < 2; k++) {
        y.mem = by->mem[k], x.mem = bx->mem[k];
        cf_record(c, k, cf_call(c, k, DLA_KERNEL_STRIDED_COPY, (dla_view[2]){y, x}, 0));
    }
    if (cf_agree(c))
        cf_compare(c, by, &y, CF_EXACT);
}

void cf_case_cast(cf_case *c)
{
    int pairs[DLA_DTYPE_COUNT * DLA_DTYPE_COUNT][2], n = 0;
    for (int f = 0; f < DLA_DTYPE_COUNT; f++)
        for (int t = 0; t < DLA_DTYPE_COUNT; t++)
            if (cf_both_support(c, DLA_KERNEL_CAST, (dla_dtype)f) &&
                cf_both_support(c, DLA_KERNEL_CAST, (dla_dtype)t))
                pairs[n][0] = f, pairs[n][1] = t, n++;
    if (n == 0) {
        c->skipped = 1;
        return;
    }
    /* Every pair in turn (25 cases: each once). */
    const int p = c->index % n;
    c->dtype = pairs[p][0];
    const dla_dtype from = (dla_dtype)pairs[p][0], to = (dla_dtype)pairs[p][1];
    int nd;
    int64_t dims[DLA_MAX_DIMS];
    cf_dims(c, &nd, dims, 5, 8, 3);
    /* Mostly in the target's range with fractions and negatives; some far
     * out of it for the saturation, NaN and infinities for the rules. */
    double lo = -1e6, hi = 1e6;
    if (to == DLA_U8)
        lo = -3, hi = 258.9;
    if (cf_chance(c, 25))
        lo = -1e12, hi = 1e12;
    if (from == DLA_I32)
        lo = cf_chance(c, 30) ? -2147483647.0 : -300, hi = cf_chance(c, 30) ? 2147483647.0 : 300;
    if (from == DLA_U8)
        lo = 0, hi = 255;
    dla_view y, x;
    cf_buf *by = cf_buf_new(c, to, cf_view(c, &y, to, nd, dims, 0), 0, 100, 0);
    cf_buf *bx = by ? cf_buf_new(c, from, cf_view(c, &x, from, nd, dims, 1), lo, hi, 15) : NULL;
    if (!bx)
        return;
    if (from == DLA_F32 || from == DLA_F64)
        for (int s = 0; s < 3; s++)
            if (cf_chance(c, 30))
                cf_buf_set(bx, cf_int(c, 0, bx->n - 1), s == 0 ? NAN : s == 1 ? INFINITY : -INFINITY);
    if (!cf_buf_upload(c, bx))
        return;
    char ds[96], vy[128], vx[128];
    cf_describe(c, "cast %s -> %s dims %s y%s x%s", dla_dtype_name(from), dla_dtype_name(to),
                cf_dims_str(ds, sizeof ds, nd, dims), cf_view_str(vy, sizeof vy, &y),
                cf_view_str(vx, sizeof vx, &x));
    for (int k = 0; k < 2; k++) {
        y.mem = by->mem[k], x.mem = bx->mem[k];
        cf_record(c, k, cf_call(c, k, DLA_KERNEL_CAST, (dla_view[2]){y, x}, 0));
    }
    if (cf_agree(c))
        cf_compare(c, by, &y, CF_EXACT);
}
