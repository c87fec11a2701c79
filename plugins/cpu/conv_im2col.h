/*
 * conv_im2col.h - convolution by im2col and GEMM, for one element type.
 *
 * conv.c includes this once per dtype with CT (the C type), CSFX (a name
 * suffix) and CGEMM (dla__cpu_gemm_tiled_f32 or _f64, cblas_?gemm's
 * arguments without the order) defined. It handles every
 * option of the ABI (1-3 spatial dims, stride, dilation, any padding,
 * groups, bias, strided views), so it is the oracle path and the one for
 * double precision and strided convolutions (but for the forward pass
 * with AVX-512, dilation 1: the direct kernels' phase planes).
 *
 * Per image and group, a chunk of output rows (runs along spatial dim 0)
 * is unfolded into col, a pc x K column-major matrix (K = taps x C/G, the
 * order of MATLAB's filter layout, so a group's weights are already the
 * K x F/G matrix). Then
 *   forward:         Y   (pc x F/G) = col * W
 *   backward data:   dcol (pc x K)  = dY * W',  folded back into dx
 *   backward filter: dW  (K x F/G) += col' * dY
 * Images go over the OpenMP team, one GEMM per thread at a time (OpenBLAS
 * stays single-threaded inside a parallel region); a batch smaller than
 * the team runs on one thread and shares each GEMM out in its tiles
 * (gemm_tiles.c). The backward filter's batch goes in parts with a dW sum
 * each (dla__conv_batch_parts), so the bits do not depend on the team.
 */

#define CONV_CAT2(a, b) a##b
#define CONV_CAT(a, b) CONV_CAT2(a, b)
#define CONV_FN(name) CONV_CAT(name, CSFX)

/* Valid outputs o (0 <= o < n_out) of a spatial dim whose input index
 * o * st + start falls inside 0..n_in-1: the range [*lo, *hi). */
#ifndef DLA__CONV_VALID_RANGE
#define DLA__CONV_VALID_RANGE
static inline int64_t conv_ceil_div(int64_t a, int64_t b) /* b > 0 */
{
    return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}
static inline int64_t conv_floor_div(int64_t a, int64_t b) /* b > 0 */
{
    return a >= 0 ? a / b : -((-a + b - 1) / b);
}
static inline void conv_valid_range(int64_t n_out, int64_t n_in, int64_t st, int64_t start,
                                    int64_t *lo, int64_t *hi)
{
    int64_t l = conv_ceil_div(-start, st), h = conv_floor_div(n_in - 1 - start, st) + 1;
    *lo = l < 0 ? 0 : l > n_out ? n_out : l;
    *hi = h < *lo ? *lo : h > n_out ? n_out : h;
}
#endif

/* col[q + k * pc] for the rows r0..r0+nr-1 (r = o1 + o2 * out1) of image b,
 * group g; pc = nr * out0. */
static void CONV_FN(im2col_)(const dla__cpu_conv *p, int64_t b, int64_t g, int64_t r0, int64_t nr,
                             CT *col)
{
    const int64_t pc = nr * p->g.out[0];
    const CT *xg = (const CT *)p->x + b * p->g.xb + g * p->g.Cg * p->g.xc;
    for (int64_t c = 0; c < p->g.Cg; c++)
        for (int64_t t = 0; t < p->g.ntaps; t++) {
            const int64_t t0 = t % p->g.fs[0], t1 = (t / p->g.fs[0]) % p->g.fs[1],
                          t2 = t / (p->g.fs[0] * p->g.fs[1]);
            CT *dst = col + (c * p->g.ntaps + t) * pc;
            int64_t lo, hi;
            conv_valid_range(p->g.out[0], p->g.in[0], p->g.st[0], t0 * p->g.dl[0] - p->g.pb[0], &lo,
                             &hi);
            for (int64_t r = r0; r < r0 + nr; r++, dst += p->g.out[0]) {
                const int64_t o1 = r % p->g.out[1], o2 = r / p->g.out[1];
                const int64_t i1 = o1 * p->g.st[1] - p->g.pb[1] + t1 * p->g.dl[1];
                const int64_t i2 = o2 * p->g.st[2] - p->g.pb[2] + t2 * p->g.dl[2];
                if (i1 < 0 || i1 >= p->g.in[1] || i2 < 0 || i2 >= p->g.in[2] || lo >= hi) {
                    for (int64_t o = 0; o < p->g.out[0]; o++)
                        dst[o] = 0;
                    continue;
                }
                const CT *src = xg + c * p->g.xc + i1 * p->g.xs[1] + i2 * p->g.xs[2] +
                                (t0 * p->g.dl[0] - p->g.pb[0]) * p->g.xs[0];
                for (int64_t o = 0; o < lo; o++)
                    dst[o] = 0;
                const int64_t step = p->g.st[0] * p->g.xs[0];
                /* A dense row with stride 1 (most layers) is one copy;
                 * the general loop's variable step keeps the compiler
                 * from vectorizing it (20% of a ResNet-20 step). */
                if (step == 1)
                    memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof(CT));
#ifdef CONV_EVERY_OTHER
                else if (step == 2)
                    CONV_EVERY_OTHER(dst + lo, src + 2 * lo, hi - lo);
#endif
                else
                    for (int64_t o = lo; o < hi; o++)
                        dst[o] = src[o * step];
                for (int64_t o = hi; o < p->g.out[0]; o++)
                    dst[o] = 0;
            }
        }
}

/* dx of image b, group g, += the folded dcol of rows r0..r0+nr-1. */
static void CONV_FN(col2im_)(const dla__cpu_conv *p, int64_t b, int64_t g, int64_t r0, int64_t nr,
                             const CT *col, CT *dx_base)
{
    const int64_t pc = nr * p->g.out[0];
    CT *xg = dx_base + b * p->g.xb + g * p->g.Cg * p->g.xc;
    for (int64_t c = 0; c < p->g.Cg; c++)
        for (int64_t t = 0; t < p->g.ntaps; t++) {
            const int64_t t0 = t % p->g.fs[0], t1 = (t / p->g.fs[0]) % p->g.fs[1],
                          t2 = t / (p->g.fs[0] * p->g.fs[1]);
            const CT *src = col + (c * p->g.ntaps + t) * pc;
            int64_t lo, hi;
            conv_valid_range(p->g.out[0], p->g.in[0], p->g.st[0], t0 * p->g.dl[0] - p->g.pb[0], &lo,
                             &hi);
            for (int64_t r = r0; r < r0 + nr; r++, src += p->g.out[0]) {
                const int64_t o1 = r % p->g.out[1], o2 = r / p->g.out[1];
                const int64_t i1 = o1 * p->g.st[1] - p->g.pb[1] + t1 * p->g.dl[1];
                const int64_t i2 = o2 * p->g.st[2] - p->g.pb[2] + t2 * p->g.dl[2];
                if (i1 < 0 || i1 >= p->g.in[1] || i2 < 0 || i2 >= p->g.in[2])
                    continue;
                CT *dst = xg + c * p->g.xc + i1 * p->g.xs[1] + i2 * p->g.xs[2] +
                          (t0 * p->g.dl[0] - p->g.pb[0]) * p->g.xs[0];
                const int64_t step = p->g.st[0] * p->g.xs[0];
                if (step == 1) /* as in im2col: a loop the compiler vectorizes */
                    for (int64_t o = lo; o < hi; o++)
                        dst[o] += src[o];
                else
                    for (int64_t o = lo; o < hi; o++)
                        dst[o * step] += src[o];
            }
        }
}

/* Rows r0..r0+nr-1 of filters g*Fg.. of y (image b) <-> tmp (pc x Fg). */
static void CONV_FN(y_rows_)(const dla__cpu_conv *p, int64_t b, int64_t g, int64_t r0, int64_t nr,
                             CT *tmp, int to_y)
{
    const int64_t pc = nr * p->g.out[0];
    CT *yg = (CT *)p->y + b * p->g.yb + g * p->g.Fg * p->g.yf;
    for (int64_t f = 0; f < p->g.Fg; f++)
        for (int64_t r = r0; r < r0 + nr; r++) {
            const int64_t o1 = r % p->g.out[1], o2 = r / p->g.out[1];
            CT *row = yg + f * p->g.yf + o1 * p->g.ys[1] + o2 * p->g.ys[2];
            CT *t = tmp + f * pc + (r - r0) * p->g.out[0];
            if (to_y) {
                const CT bias = p->bias ? ((const CT *)p->bias)[(g * p->g.Fg + f) * p->g.bs] : 0;
                for (int64_t o = 0; o < p->g.out[0]; o++)
                    row[o * p->g.ys[0]] = t[o] + bias;
            } else {
                for (int64_t o = 0; o < p->g.out[0]; o++)
                    t[o] = row[o * p->g.ys[0]];
            }
        }
}

/* Zeroes dx of image b (every channel and position). */
static void CONV_FN(zero_image_)(const dla__cpu_conv *p, int64_t b)
{
    CT *xb = (CT *)p->x + b * p->g.xb;
    for (int64_t c = 0; c < p->g.C; c++)
        for (int64_t i2 = 0; i2 < p->g.in[2]; i2++)
            for (int64_t i1 = 0; i1 < p->g.in[1]; i1++) {
                CT *row = xb + c * p->g.xc + i1 * p->g.xs[1] + i2 * p->g.xs[2];
                for (int64_t i0 = 0; i0 < p->g.in[0]; i0++)
                    row[i0 * p->g.xs[0]] = 0;
            }
}

/* Image b in direction dir, with one thread's buffers: unfolded rows mcol,
 * Y or dY rows mtmp, and (backward filter) its dW sum macc. */
static void CONV_FN(image_)(const dla__cpu_conv *p, dla__cpu_conv_dir dir, int64_t b,
                            const CT *wk, int64_t K, int64_t rows, int64_t nr, CT *mcol, CT *mtmp,
                            CT *macc)
{
    if (dir == DLA__CONV_BACKWARD_DATA)
        CONV_FN(zero_image_)(p, b);
    for (int64_t g = 0; g < p->g.G; g++)
        for (int64_t r0 = 0; r0 < rows; r0 += nr) {
            const int64_t n = r0 + nr <= rows ? nr : rows - r0, pc = n * p->g.out[0];
            if (pc == 0)
                continue;
            const CT *wg = wk + g * p->g.Fg * K;
            switch (dir) {
            case DLA__CONV_FORWARD:
                CONV_FN(im2col_)(p, b, g, r0, n, mcol);
                if (K > 0)
                    CGEMM(0, 0, (int)pc, (int)p->g.Fg,
                          (int)K, 1, mcol, (int)pc, wg, (int)K, 0, mtmp, (int)pc);
                else
                    for (int64_t i = 0; i < pc * p->g.Fg; i++)
                        mtmp[i] = 0;
                CONV_FN(y_rows_)(p, b, g, r0, n, mtmp, 1);
                break;
            case DLA__CONV_BACKWARD_DATA:
                if (K == 0)
                    break;
                CONV_FN(y_rows_)(p, b, g, r0, n, mtmp, 0);
                CGEMM(0, 1, (int)pc, (int)K, (int)p->g.Fg,
                      1, mtmp, (int)pc, wg, (int)K, 0, mcol, (int)pc);
                CONV_FN(col2im_)(p, b, g, r0, n, mcol, (CT *)p->x);
                break;
            case DLA__CONV_BACKWARD_FILTER:
                if (K == 0)
                    break;
                CONV_FN(im2col_)(p, b, g, r0, n, mcol);
                CONV_FN(y_rows_)(p, b, g, r0, n, mtmp, 0);
                CGEMM(1, 0, (int)K, (int)p->g.Fg,
                      (int)pc, 1, mcol, (int)pc, mtmp, (int)pc, 1, macc + g * p->g.Fg * K,
                      (int)K);
                break;
            }
        }
}

static dla_status CONV_FN(im2col_run_)(const dla__cpu_conv *p, dla__cpu_conv_dir dir)
{
    const dla_plugin_host *h = dla__cpu_host;
    const int64_t K = p->g.ntaps * p->g.Cg, rows = p->g.out[1] * p->g.out[2];
    const int64_t wsize = K * p->g.Fg * p->g.G;
    /* Rows per chunk: col stays near L2 (2^18 elements), at least a row. */
    int64_t nr = rows > 0 && p->g.out[0] > 0 ? ((int64_t)1 << 18) / (K * p->g.out[0]) : 1;
    if (nr < 1)
        nr = 1;
    if (nr > rows)
        nr = rows > 0 ? rows : 1;
    const int64_t pcmax = nr * p->g.out[0];

    /* The weights as dense K x Fg matrices, one per group (MATLAB order). */
    CT *wk = h->alloc((size_t)(wsize > 0 ? wsize : 1) * sizeof(CT), DLA__CPU_ALIGN);
    if (!wk)
        return h->error(DLA_ERR_OUT_OF_MEMORY, "cpu conv: cannot allocate %lld weights",
                        (long long)wsize);
    if (dir != DLA__CONV_BACKWARD_FILTER)
        for (int64_t g = 0; g < p->g.G; g++)
            for (int64_t f = 0; f < p->g.Fg; f++)
                for (int64_t c = 0; c < p->g.Cg; c++)
                    for (int64_t t = 0; t < p->g.ntaps; t++) {
                        const int64_t t0 = t % p->g.fs[0], t1 = (t / p->g.fs[0]) % p->g.fs[1],
                                      t2 = t / (p->g.fs[0] * p->g.fs[1]);
                        wk[(g * p->g.Fg + f) * K + c * p->g.ntaps + t] =
                            ((const CT *)p->w)[g * p->g.wg + f * p->g.wf + c * p->g.wc +
                                               t0 * p->g.ws[0] + t1 * p->g.ws[1] + t2 * p->g.ws[2]];
                    }
    else
        for (int64_t i = 0; i < wsize; i++)
            wk[i] = 0;

    const int filter = dir == DLA__CONV_BACKWARD_FILTER;
    /* Backward filter: the batch in parts (dla__conv_batch_parts), each
     * with its own dW sum, added in order after: the same bits with any
     * number of threads. */
    const int parts =
        filter ? dla__conv_batch_parts(p->g.batch, (wsize > 0 ? wsize : 1) * (int64_t)sizeof(CT))
               : 0;
    int threads = omp_get_max_threads();
    if (threads > p->g.batch)
        threads = p->g.batch > 0 ? (int)p->g.batch : 1;
    if (filter && threads > parts)
        threads = parts;
    if (threads > DLA__CONV_MAX_THREADS)
        threads = DLA__CONV_MAX_THREADS;
    /* Each thread's unfolded rows and its dY or Y rows, and each part's dW
     * sum, carved from one scratch block before the threads start, so a
     * refusal fails the call cleanly. */
    CT *col[DLA__CONV_MAX_THREADS] = {0}, *tmp[DLA__CONV_MAX_THREADS] = {0},
       *acc[DLA__CONV_BATCH_PARTS] = {0};
    const int64_t ncol = DLA__CONV_LINE(pcmax * K > 0 ? pcmax * K : 1, sizeof(CT)),
                  ntmp = DLA__CONV_LINE(pcmax * p->g.Fg > 0 ? pcmax * p->g.Fg : 1, sizeof(CT)),
                  nacc = filter ? DLA__CONV_LINE(wsize > 0 ? wsize : 1, sizeof(CT)) : 0;
    dla_mem mem = NULL;
    CT *scratch = dla__cpu_conv_scratch(
        (size_t)((ncol + ntmp) * threads + nacc * parts) * sizeof(CT), &mem);
    const int failed = !scratch;
    for (int i = 0; i < threads && !failed; i++) {
        col[i] = scratch + i * (ncol + ntmp);
        tmp[i] = col[i] + ncol;
    }
    for (int k = 0; k < parts && !failed; k++) {
        acc[k] = scratch + (ncol + ntmp) * threads + k * nacc;
        for (int64_t j = 0; j < nacc; j++)
            acc[k][j] = 0;
    }
    if (!failed) {
        if (filter) {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
            for (int part = 0; part < parts; part++) {
                const int me = omp_get_thread_num();
                const int64_t b1 = p->g.batch * (part + 1) / parts;
                for (int64_t b = p->g.batch * part / parts; b < b1; b++)
                    CONV_FN(image_)(p, dir, b, wk, K, rows, nr, col[me], tmp[me], acc[part]);
            }
        } else {
#pragma omp parallel for num_threads(threads) schedule(dynamic, 1)
            for (int64_t b = 0; b < p->g.batch; b++) {
                const int me = omp_get_thread_num();
                CONV_FN(image_)(p, dir, b, wk, K, rows, nr, col[me], tmp[me], NULL);
                dla__cpu_conv_epilogue(p->epi, b, 1); /* y forward, dx backward */
            }
        }
        /* The parts' sums in order. */
        for (int k = 0; k < parts; k++)
            for (int64_t j = 0; j < wsize; j++)
                wk[j] += acc[k][j];
    }
    dla__cpu_conv_scratch_free(mem);
    if (failed) {
        h->free(wk);
        return h->error(DLA_ERR_OUT_OF_MEMORY,
                        "cpu conv: cannot allocate the %lld x %lld unfolded input of a thread",
                        (long long)pcmax, (long long)K);
    }
    if (dir == DLA__CONV_BACKWARD_FILTER) {
        /* An empty batch or output still writes dW = 0. */
        for (int64_t g = 0; g < p->g.G; g++)
            for (int64_t f = 0; f < p->g.Fg; f++)
                for (int64_t c = 0; c < p->g.Cg; c++)
                    for (int64_t t = 0; t < p->g.ntaps; t++) {
                        const int64_t t0 = t % p->g.fs[0], t1 = (t / p->g.fs[0]) % p->g.fs[1],
                                      t2 = t / (p->g.fs[0] * p->g.fs[1]);
                        ((CT *)p->w)[g * p->g.wg + f * p->g.wf + c * p->g.wc + t0 * p->g.ws[0] +
                                     t1 * p->g.ws[1] + t2 * p->g.ws[2]] =
                            wk[(g * p->g.Fg + f) * K + c * p->g.ntaps + t];
                    }
    }
    h->free(wk);
    return DLA_OK;
}

#undef CONV_FN
#undef CONV_CAT
#undef CONV_CAT2
