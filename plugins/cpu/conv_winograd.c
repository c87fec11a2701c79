/*
 * conv_winograd.c - 3x3 float32 convolutions, forward, backward data and
 * backward filter, by Winograd's minimal filtering F(2x2, 3x3) with
 * AVX-512 (the backward filter at the end of the file).
 *
 * Why: the direct kernels (conv_avx512.c) already run the 3x3 layers of
 * the digit CNN near the FMA peak, so only fewer multiplications can make
 * them faster. F(2x2, 3x3) computes a 2x2 block of outputs from a 4x4
 * block of inputs with 16 products per pair of channels instead of 36:
 *
 *     Y = A^T [ (G g G^T) .* (B^T d B) ] A        (Lavin and Gray, 2016)
 *
 * with the transforms below (adds and halvings only). Summed over the
 * input channels, the 16 elementwise products become 16 small GEMMs,
 * tiles x in-channels times in-channels x out-channels, run on the direct
 * forward's register-blocked micro-kernel with a single tap. The
 * transforms cost adds per tile and channel, so the path is taken only
 * with 8 or more channels in and out (docs/convolution.md has the
 * figures). Its rounding differs from the direct sum's by a few units of
 * the last place, within the conformance suite's bound.
 *
 * The layout. Tile (ty, tx) covers output rows 2ty, 2ty+1 and columns
 * 2tx, 2tx+1 (dim 0 is the column) and reads the padded input P[2ty+i]
 * [2tx+j], i, j < 4. Each padded input channel is split into four
 * polyphase planes, plane (R&1)*2 + (C&1) holding P[R][C] at
 * (R>>1)*L + (C>>1), with L = Tx + 1. Then tile p = ty*L + tx finds its
 * element (i, j) at p + (i>>1)*L + (j>>1) of plane (i&1)*2 + (j&1): one
 * offset for every tile, so 16 tiles are one vector load per element.
 * The column tx = Tx is not a tile: the transforms walk the plane in
 * vectors of 16 indices and compress the real tiles' lanes into a run
 * (tiles end to end, several small images' or a chunk of a large one's),
 * on which the 16 GEMMs run; the products are expanded back along the
 * same walk into four output planes, which are interleaved into rows.
 */
#include "plugins/cpu/conv_avx512.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <cblas.h>
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

/* Fewer channels than this and the transforms (per output about 8 adds
 * per input channel and 6 per output channel, against 5 multiply-adds
 * saved per pair of channels) take most of the gain: a count, not a
 * measurement; the digit CNN's 20 channels are what was measured. */
#define MIN_CHANNELS 8
/* Images go over the team, one a thread: with fewer the threads idle,
 * where the direct path shares images out. The choice follows the batch
 * alone, not the team (it used to be "at least as many images as
 * threads"): the two round differently, and the cpu device gives the same
 * bits with any thread count. */
#define MIN_IMAGES 8

typedef struct geom {
    int64_t Tx, Ty;  /* tiles along dims 0 and 1 */
    int64_t L;       /* plane row length, Tx + 1 */
    int64_t nf;      /* filters per register block (the forward) */
    int64_t pl;      /* floats per input plane */
    int64_t yl;      /* floats per output plane */
    int64_t tl;      /* floats per row buffer */
} geom;

static int64_t up16(int64_t n)
{
    return (n + 15) / 16 * 16;
}

/* The tiles of out0 x out1 outputs and the planes' lengths. The tile
 * walks below read whole vectors of plane indices, up to (Ty - 1) * L +
 * up16(Tx) a row at a time, or up to the tiles' count rounded up across
 * the plane, at offsets up to L + 1, and store whole vectors of outputs
 * at the same indices (the unpacking reads no further); the packing
 * writes planes up to the last row's vector tail. */
static void geom_init(geom *g, int64_t out0, int64_t out1)
{
    g->Tx = (out0 + 1) / 2, g->Ty = (out1 + 1) / 2;
    g->L = g->Tx + 1;
    const int64_t row_vecs = (g->L + 15) / 16;
    const int64_t by_rows_end = (g->Ty - 1) * g->L + up16(g->Tx),
                  by_plane_end = up16((g->Ty - 1) * g->L + g->Tx);
    const int64_t end = by_rows_end > by_plane_end ? by_rows_end : by_plane_end;
    const int64_t written = g->Ty * g->L + 16 * row_vecs, read = end + g->L + 1;
    g->pl = up16(written > read ? written : read);
    g->yl = up16(end);
    g->tl = 32 * row_vecs;
}

/* Floats of the padded rows of nch channels (pack_planes). */
static int64_t padded_floats(const geom *g, int64_t nch)
{
    return nch * 2 * (g->Ty + 1) * g->tl;
}

/* ---------------------------------------------------------------- range
 *
 * Winograd adds inputs before it multiplies, so inputs near FLT_MAX
 * overflow its transforms where the direct sums do not (two neighbours of
 * 3e38 in x made Inf, then Inf - Inf = NaN, in outputs whose direct sums
 * were 1e32), and an Inf or NaN spreads over its whole tile (0 times it is
 * NaN), where the direct sums put it only in the outputs whose windows
 * hold it. So each image's inputs are checked as they are packed (their
 * largest magnitude, magnitude_bits) against a bound that keeps every
 * intermediate finite, and the images past it get their outputs from
 * direct sums (direct_image, in place of unpack_image) before their
 * epilogue: checking the outputs afterwards and redoing them would not
 * do, as an epilogue may write over the convolution's input. The filters
 * are checked once a call, and filters past their bound leave the call to
 * the direct kernels.
 *
 * The bounds, from the transform matrices' largest row sums of absolute
 * values: B^T's is 2, so |B^T d| <= 2 X and |V| <= 4 X (X: the image's
 * largest magnitude); G's is 1.5, so |U| <= 2.25 W; a product sum over nci
 * channels |M| <= 9 nci X W; A^T's is 3, so the output transform's
 * intermediates and results are at most 3 and 9 |M|, 81 nci X W. Each
 * bound is held to FLT_MAX / 2: the roundings of a chain of a few dozen
 * operations add far less than a factor of 2 to the exact bound. A
 * network's activations and gradients are dozens of orders of magnitude
 * below, so only such inputs pay for the direct sums.
 *
 * The backward filter needs no bound: it has no epilogue and writes only
 * dW, so it checks its sums dU instead (an overflow anywhere leaves Inf
 * or NaN in them) and leaves the call to the direct kernels where one is
 * not finite; its packing (x and dY both) then takes no magnitudes,
 * which cost 2% of ResNet-20's 16-channel layer. */

/* Magnitude bits of the largest float at most b (b >= 0). */
static uint32_t bits_at_most(double b)
{
    float f = b >= (double)FLT_MAX ? FLT_MAX : (float)b;
    if ((double)f > b)
        f = nextafterf(f, 0.0f);
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

#define RANGE_MOST ((double)FLT_MAX / 2)

/* The forward's bound on an image's magnitude bits, for filters of largest
 * magnitude bits wbits (finite: filters_fit): 4 X and 81 nci X W at most
 * RANGE_MOST. */
static uint32_t forward_input_bound(uint32_t wbits, int64_t nci)
{
    const double w = (double)bits_float(wbits);
    double b = RANGE_MOST / 4;
    if (w > 0 && RANGE_MOST / (81.0 * (double)nci * w) < b)
        b = RANGE_MOST / (81.0 * (double)nci * w);
    return bits_at_most(b);
}

/* Whether filters of largest magnitude bits wbits transform finitely:
 * 2.25 W at most RANGE_MOST (no Inf or NaN). */
static int filters_fit(uint32_t wbits)
{
    return wbits < 0x7F800000u && 2.25 * (double)bits_float(wbits) <= RANGE_MOST;
}

/* The largest magnitude bits of n floats from p, 16 at a time. */
static TGT uint32_t magnitude_of_block(const float *p, int64_t n)
{
    __m512i most = _mm512_setzero_si512();
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        most = _mm512_max_epu32(most, _mm512_and_si512(_mm512_loadu_si512(p + i),
                                                       _mm512_set1_epi32(0x7FFFFFFF)));
    uint32_t m = _mm512_reduce_max_epu32(most);
    for (; i < n; i++) {
        uint32_t b;
        memcpy(&b, p + i, sizeof b);
        b &= 0x7FFFFFFFu;
        m = b > m ? b : m;
    }
    return m;
}

/* The largest magnitude bits among the pass's 3x3 taps. Where they fill
 * a block of memory (the usual dense filters, either order of the taps,
 * flipped or not), one vector sweep over it; else tap by tap. A loop of
 * scalar loads over ResNet-20's 64 x 64 x 9 taps cost 0.5-1% of its
 * 8x8 layer's call. */
static TGT uint32_t filter_magnitude(const pass *q, const dla__cpu_conv_taps *k)
{
    int64_t st[5] = {k->s0 < 0 ? -k->s0 : k->s0, k->s1 < 0 ? -k->s1 : k->s1, k->sci, k->sco,
                     k->sg};
    int64_t sz[5] = {3, 3, q->nci, q->nco, q->G};
    /* Sort by stride; dense when each stride is the sizes before it. */
    for (int i = 1; i < 5; i++)
        for (int j = i; j > 0 && st[j] < st[j - 1]; j--) {
            const int64_t a = st[j], b = sz[j];
            st[j] = st[j - 1], sz[j] = sz[j - 1], st[j - 1] = a, sz[j - 1] = b;
        }
    int64_t span = 1;
    int dense = 1;
    for (int i = 0; i < 5; i++) {
        if (sz[i] > 1 && st[i] != span)
            dense = 0;
        span *= sz[i];
    }
    /* The block starts at the smallest offset: the taps' least (w points
     * at the last tap when s0, s1 are negative). */
    const float *base = k->w + (k->s0 < 0 ? 2 * k->s0 : 0) + (k->s1 < 0 ? 2 * k->s1 : 0);
    if (dense && k->sci >= 0 && k->sco >= 0 && k->sg >= 0)
        return magnitude_of_block(base, span);
    uint32_t most = 0;
    for (int64_t grp = 0; grp < q->G; grp++)
        for (int64_t ci = 0; ci < q->nci; ci++)
            for (int64_t co = 0; co < q->nco; co++) {
                const float *w = k->w + grp * k->sg + ci * k->sci + co * k->sco;
                for (int t = 0; t < 9; t++) {
                    uint32_t b;
                    memcpy(&b, &w[t % 3 * k->s0 + t / 3 * k->s1], sizeof b);
                    b &= 0x7FFFFFFFu;
                    most = b > most ? b : most;
                }
            }
    return most;
}

/* The outputs of group grp of image b by the direct sums, in double and
 * rounded once, plus the bias: the images whose inputs are past
 * forward_input_bound. Scalar loops: only inputs near FLT_MAX, Inf or NaN
 * come here. */
static void direct_image(const pass *q, const dla__cpu_conv_taps *k, int64_t b, int64_t grp)
{
    const float *x = q->src + b * q->sb + grp * q->nci * q->sc;
    float *y = q->dst + b * q->db + grp * q->nco * q->dc;
    const float *w = k->w + grp * k->sg;
    for (int64_t co = 0; co < q->nco; co++) {
        const float bias = q->bias ? q->bias[(grp * q->nco + co) * q->bs] : 0.0f;
        for (int64_t o1 = 0; o1 < q->out[1]; o1++)
            for (int64_t o0 = 0; o0 < q->out[0]; o0++) {
                double s = 0;
                for (int64_t ci = 0; ci < q->nci; ci++)
                    for (int64_t t1 = 0; t1 < 3; t1++) {
                        const int64_t r = o1 + t1 - q->pb[1];
                        if (r < 0 || r >= q->in[1])
                            continue;
                        for (int64_t t0 = 0; t0 < 3; t0++) {
                            const int64_t c = o0 + t0 - q->pb[0];
                            if (c < 0 || c >= q->in[0])
                                continue;
                            s += (double)x[ci * q->sc + r * q->ss[1] + c * q->ss[0]] *
                                 (double)w[ci * k->sci + co * k->sco + t0 * k->s0 + t1 * k->s1];
                        }
                    }
                y[co * q->dc + o1 * q->ds[1] + o0 * q->ds[0]] = (float)s + bias;
            }
    }
}

/* ------------------------------------------------------------ filters */

/* U = G g G^T of every filter, in the layout the micro-kernel reads: per
 * group and element pos = i*4 + j, per block of nf filters from f0,
 * [ci][n] at u + (grp * 16 + pos) * nci * nco + f0 * nci. Worked out in
 * double and rounded once. */
static void transform_filters(const pass *q, const dla__cpu_conv_taps *k, int64_t nf, float *u)
{
    const int64_t nci = q->nci, nco = q->nco;
    for (int64_t grp = 0; grp < q->G; grp++)
        for (int64_t ci = 0; ci < nci; ci++)
            for (int64_t co = 0; co < nco; co++) {
                const float *w = k->w + grp * k->sg + ci * k->sci + co * k->sco;
                double t[4][3], uu[4][4];
                for (int k0 = 0; k0 < 3; k0++) {
                    const double g0 = w[k0 * k->s0], g1 = w[k0 * k->s0 + k->s1],
                                 g2 = w[k0 * k->s0 + 2 * k->s1];
                    t[0][k0] = g0, t[1][k0] = (g0 + g1 + g2) / 2;
                    t[2][k0] = (g0 - g1 + g2) / 2, t[3][k0] = g2;
                }
                for (int i = 0; i < 4; i++) {
                    uu[i][0] = t[i][0], uu[i][1] = (t[i][0] + t[i][1] + t[i][2]) / 2;
                    uu[i][2] = (t[i][0] - t[i][1] + t[i][2]) / 2, uu[i][3] = t[i][2];
                }
                const int64_t f0 = co / nf * nf, n = f0 + nf <= nco ? nf : nco - f0;
                for (int pos = 0; pos < 16; pos++)
                    u[(grp * 16 + pos) * nci * nco + f0 * nci + ci * n + (co - f0)] =
                        (float)uu[pos / 4][pos % 4];
            }
}

/* ------------------------------------------------------------- inputs */

/* nch channels of a 2-D image: sizes in[2], strides ss[2] and sc, placed
 * at row and column pb[1], pb[0] of the padded image (negative: cropped). */
typedef struct image_src {
    const float *src;
    int64_t nch, in[2], ss[2], sc, pb[2];
} image_src;

/* Whether pack_planes can split the source rows themselves: dense rows of
 * whole vectors of 8, one column of padding before them ("same" padding)
 * or none (the backward filter's dY), and the whole row inside the padded
 * one. Then each padded vector is two source vectors (shifted by one lane
 * for the padding), in registers, and the first sweep
 * (a row copy stored and loaded again) is not needed: ResNet-20's 32x32,
 * 16x16 and 8x8 layers, the digit CNN's 24x24. */
static int pack_in_one_sweep(const geom *g, const image_src *is)
{
    return is->ss[0] == 1 && (is->pb[0] == 1 || is->pb[0] == 0) && is->in[0] % 8 == 0 &&
           is->in[0] + is->pb[0] <= 2 * g->L;
}

/* Source vector k of a row of n floats (a multiple of 8): whole, its last
 * half zero past the row (a 256-bit load), or zero. */
static TGT __m512i source_vector(const float *sr, int64_t k, int64_t n)
{
    if (16 * k + 16 <= n)
        return _mm512_castps_si512(_mm512_loadu_ps(sr + 16 * k));
    if (16 * k < n)
        return _mm512_castps_si512(_mm512_zextps256_ps512(_mm256_loadu_ps(sr + 16 * k)));
    return _mm512_setzero_si512();
}

/* The magnitudes of x's 16 floats as integers: the bits without the
 * sign, whose order as integers is the magnitudes' order, Inf above every
 * finite value and NaN above Inf. */
static TGT __m512i magnitude_bits(__m512i x)
{
    return _mm512_and_si512(x, _mm512_set1_epi32(0x7FFFFFFF));
}

/* pack_planes for pack_in_one_sweep: padded column p is source column
 * p - pb[0] (pb[0] 1 or 0: the backward filter's dY), zero outside; the
 * planes get what the two sweeps give them. Returns the largest magnitude
 * bits (magnitude_bits) of what it read when `check` (a constant: no
 * cost without), else 0. */
static inline __attribute__((always_inline)) TGT uint32_t
pack_rows_from_source(const geom *g, const image_src *is, float *planes, const int check)
{
    const int64_t pb1 = is->pb[1], rows = 2 * (g->Ty + 1);
    const int64_t r0 = pb1 < 0 ? -pb1 : 0, r1 = rows - pb1 < is->in[1] ? rows - pb1 : is->in[1];
    const int64_t vecs = (g->L + 15) / 16, n = is->in[0];
    const __m512i even =
        _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd =
        _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const __m512i zero = _mm512_setzero_si512();
    __m512i most = zero;
    for (int64_t ci = 0; ci < is->nch; ci++)
        for (int64_t R = 0; R < rows; R++) {
            float *e = planes + (ci * 4 + (R & 1) * 2) * g->pl + (R >> 1) * g->L, *o = e + g->pl;
            const int64_t r = R - pb1;
            if (r < r0 || r >= r1) {
                for (int64_t v = 0; v < vecs; v++) {
                    _mm512_storeu_ps(e + 16 * v, _mm512_setzero_ps());
                    _mm512_storeu_ps(o + 16 * v, _mm512_setzero_ps());
                }
                continue;
            }
            const float *sr = is->src + ci * is->sc + r * is->ss[1];
            /* prev: source vector k - 1 (zero before the row), as the
             * padded vector k is [prev[15], src[16k .. 16k + 14]]. */
            __m512i prev = zero;
            for (int64_t v = 0; v < vecs; v++) {
                const __m512i s0 = source_vector(sr, 2 * v, n);
                const __m512i s1 = source_vector(sr, 2 * v + 1, n);
                /* One max on the chain through `most` a vector. */
                if (check)
                    most = _mm512_max_epu32(
                        most, _mm512_max_epu32(magnitude_bits(s0), magnitude_bits(s1)));
                const __m512 a = is->pb[0] ? _mm512_castsi512_ps(_mm512_alignr_epi32(s0, prev, 15))
                                           : _mm512_castsi512_ps(s0);
                const __m512 b = is->pb[0] ? _mm512_castsi512_ps(_mm512_alignr_epi32(s1, s0, 15))
                                           : _mm512_castsi512_ps(s1);
                prev = s1;
                _mm512_storeu_ps(e + 16 * v, _mm512_permutex2var_ps(a, even, b));
                _mm512_storeu_ps(o + 16 * v, _mm512_permutex2var_ps(a, odd, b));
            }
        }
    return _mm512_reduce_max_epu32(most);
}

/* The channels of an image into planes (4 per channel, pl floats each),
 * in two sweeps: first every padded row into its place in `padded` (rows
 * of tl floats, zero outside what is copied: zeroed once per call), then
 * the rows split into even and odd columns. Splitting a row just written
 * would load what is still in the store buffer at other offsets than it
 * was stored: a stalled store-to-load forward per vector. And the source
 * rows are not read with masked loads, which would spare the first sweep:
 * on this AMD CPU they made the packing twice as slow in the train step.
 * Plane rows are written in order with whole vectors: a row's tail spills
 * into the next row, which is written after it. Returns the largest
 * magnitude bits (magnitude_bits) of the image when `check` (a
 * constant), else 0: taken from the vectors the packing holds in
 * registers anyway, two integer operations a vector, where a pass of its
 * own over x cost 5% of a train step (the range section). */
static inline __attribute__((always_inline)) TGT uint32_t
pack_planes_body(const geom *g, const image_src *is, float *planes, float *padded,
                 const int check)
{
    const int64_t pb0 = is->pb[0], pb1 = is->pb[1], rows = 2 * (g->Ty + 1);
    if (pack_in_one_sweep(g, is))
        return pack_rows_from_source(g, is, planes, check);
    const int64_t lo = pb0 < 0 ? -pb0 : 0;
    const int64_t hi = 2 * g->L - pb0 < is->in[0] ? 2 * g->L - pb0 : is->in[0];
    const int64_t r0 = pb1 < 0 ? -pb1 : 0, r1 = rows - pb1 < is->in[1] ? rows - pb1 : is->in[1];
    if (hi > lo)
        for (int64_t ci = 0; ci < is->nch; ci++)
            for (int64_t r = r0; r < r1; r++) {
                const float *sr = is->src + ci * is->sc + r * is->ss[1];
                float *d = padded + (ci * rows + r + pb1) * g->tl + pb0;
                if (is->ss[0] == 1)
                    row_copy(d + lo, sr + lo, hi - lo, 0.0f);
                else
                    for (int64_t c = lo; c < hi; c++)
                        d[c] = sr[c * is->ss[0]];
            }
    const __m512i even =
        _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd =
        _mm512_set_epi32(31, 29, 27, 25, 23, 21, 19, 17, 15, 13, 11, 9, 7, 5, 3, 1);
    const int64_t vecs = (g->L + 15) / 16;
    __m512i most = _mm512_setzero_si512();
    for (int64_t ci = 0; ci < is->nch; ci++)
        for (int64_t R = 0; R < rows; R++) {
            const float *row = padded + (ci * rows + R) * g->tl;
            float *e = planes + (ci * 4 + (R & 1) * 2) * g->pl + (R >> 1) * g->L, *o = e + g->pl;
            for (int64_t v = 0; v < vecs; v++) {
                const __m512 a = _mm512_load_ps(row + 32 * v);
                const __m512 b = _mm512_load_ps(row + 32 * v + 16);
                if (check)
                    most = _mm512_max_epu32(
                        most, _mm512_max_epu32(magnitude_bits(_mm512_castps_si512(a)),
                                               magnitude_bits(_mm512_castps_si512(b))));
                _mm512_storeu_ps(e + 16 * v, _mm512_permutex2var_ps(a, even, b));
                _mm512_storeu_ps(o + 16 * v, _mm512_permutex2var_ps(a, odd, b));
            }
        }
    return _mm512_reduce_max_epu32(most);
}

/* pack_planes_body with the magnitude (the forward and backward data). */
static TGT uint32_t pack_planes_checked(const geom *g, const image_src *is, float *planes,
                                        float *padded)
{
    return pack_planes_body(g, is, planes, padded, 1);
}

/* pack_planes_body without (the backward filter checks its sums). */
static TGT void pack_planes(const geom *g, const image_src *is, float *planes, float *padded)
{
    pack_planes_body(g, is, planes, padded, 0);
}

/* Element (i, j) of tile p of a channel's planes at p + off[i][j]. */
static void input_offsets(const geom *g, int64_t off[4][4])
{
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            off[i][j] = ((i & 1) * 2 + (j & 1)) * g->pl + (i >> 1) * g->L + (j >> 1);
}

/* B^T d B of the 16 tiles from src: element pos = i*4 + j of each in
 * v[pos]. B^T d a column at a time, then (B^T d) B a row at a time: 16 + 4
 * registers live, no spills. */
static inline __attribute__((always_inline)) TGT void input_tiles(const float *src,
                                                                  const int64_t off[4][4],
                                                                  __m512 v[16])
{
    __m512 r[4][4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; j++) {
        const __m512 d0 = _mm512_loadu_ps(src + off[0][j]), d1 = _mm512_loadu_ps(src + off[1][j]),
                     d2 = _mm512_loadu_ps(src + off[2][j]), d3 = _mm512_loadu_ps(src + off[3][j]);
        r[0][j] = _mm512_sub_ps(d0, d2);
        r[1][j] = _mm512_add_ps(d1, d2);
        r[2][j] = _mm512_sub_ps(d2, d1);
        r[3][j] = _mm512_sub_ps(d1, d3);
    }
#pragma GCC unroll 4
    for (int i = 0; i < 4; i++) {
        v[4 * i] = _mm512_sub_ps(r[i][0], r[i][2]);
        v[4 * i + 1] = _mm512_add_ps(r[i][1], r[i][2]);
        v[4 * i + 2] = _mm512_sub_ps(r[i][2], r[i][1]);
        v[4 * i + 3] = _mm512_sub_ps(r[i][1], r[i][3]);
    }
}


/* How the run transforms walk an image's tiles: vectors of 16 plane
 * indices from src, whose lanes in mask are real tiles (tx < Tx), stored
 * compressed from tile dst of the image. Whole vectors are stored, so
 * the lanes past a vector's real tiles spill into the next ones, written
 * after them; the last vector's into the next image's tiles or the run's
 * slack. Either every tile row is walked on its own (a row of 16 or 32
 * tiles fills whole vectors) or the plane is walked end to end and each
 * vector compressed (rows of 4 or 8 tiles would leave most lanes idle):
 * whichever takes fewer vectors. */
typedef struct tile_walk {
    int64_t n;      /* vectors */
    int64_t tiles;  /* real tiles, Tx * Ty */
    int64_t *src, *dst;
    __mmask16 *mask;
} tile_walk;

static int64_t tile_walk_len(const geom *g)
{
    const int64_t by_rows = g->Ty * ((g->Tx + 15) / 16);
    const int64_t by_plane = ((g->Ty - 1) * g->L + g->Tx + 15) / 16;
    return by_rows < by_plane ? by_rows : by_plane;
}

static int64_t up_to(int64_t n, int64_t m)
{
    return (n + m - 1) / m * m;
}

/* Fills w (arrays of tile_walk_len(g) entries). gran: the forward's
 * tiles a micro-kernel call, for which a walk across the plane whose
 * packing would not shorten the products of an image (the digit CNN's
 * 24x24: 155 tile indices in 10 vectors, 144 tiles, 160 either way)
 * takes every lane, the dropped column's included, as the runs' tiles: no
 * packing and no spreading back, which made such layers 8% slower. 0:
 * always real tiles only (the backward filter, whose sums must not see
 * the dropped column, and images that share a run). */
static void tile_walk_init(const geom *g, tile_walk *w, int64_t gran)
{
    const int64_t by_rows = g->Ty * ((g->Tx + 15) / 16);
    w->n = tile_walk_len(g);
    w->tiles = g->Tx * g->Ty;
    if (w->n != by_rows && gran > 0 && up_to(16 * w->n, gran) <= up_to(w->tiles, gran)) {
        w->tiles = 16 * w->n;
        for (int64_t k = 0; k < w->n; k++)
            w->src[k] = w->dst[k] = 16 * k, w->mask[k] = (__mmask16)0xFFFF;
        return;
    }
    if (w->n == by_rows) {
        int64_t k = 0;
        for (int64_t ty = 0; ty < g->Ty; ty++)
            for (int64_t s = 0; s < g->Tx; s += 16, k++) {
                w->src[k] = ty * g->L + s, w->dst[k] = ty * g->Tx + s;
                const int64_t real = g->Tx - s < 16 ? g->Tx - s : 16;
                w->mask[k] = (__mmask16)((1u << real) - 1);
            }
        return;
    }
    const int64_t ntiles = (g->Ty - 1) * g->L + g->Tx;
    int64_t done = 0;
    for (int64_t k = 0; k < w->n; k++) {
        unsigned m = 0;
        for (int l = 0; l < 16; l++) {
            const int64_t p = 16 * k + l;
            if (p < ntiles && p % g->L < g->Tx)
                m |= 1u << l;
        }
        w->src[k] = 16 * k, w->dst[k] = done, w->mask[k] = (__mmask16)m;
        done += __builtin_popcount(m);
    }
}

/* The walk of g's tiles in one allocation (free w->src), or NULL. */
static int64_t *tile_walk_new(const geom *g, tile_walk *w, int64_t gran)
{
    const int64_t nw = tile_walk_len(g);
    w->src = dla__cpu_host->alloc((size_t)nw * (2 * sizeof(int64_t) + sizeof(__mmask16)), 0);
    if (!w->src)
        return NULL;
    w->dst = w->src + nw;
    w->mask = (__mmask16 *)(w->dst + nw);
    tile_walk_init(g, w, gran);
    return w->src;
}

/* Tiles of the walk before vector k (k = n: all of them). */
static int64_t tile_walk_at(const tile_walk *w, int64_t k)
{
    return k < w->n ? w->dst[k] : w->tiles;
}

/* x's lanes in m, packed to the low lanes (all of them: as it is). */
static TGT __m512 tiles_of(__mmask16 m, __m512 x)
{
    return m == 0xFFFF ? x : _mm512_maskz_compress_ps(m, x);
}

/* Where a run transform writes: element pos of channel ch of an image in
 * row pos * nch + ch of rows rs apart, from tile at. */
typedef struct run_out {
    float *dst;
    int64_t rs, at;
} run_out;

/* V = B^T d B of the tiles of walk vectors k0..k1-1 of one image, every
 * input channel, into a run: the tile at walk position d goes to column
 * at + d of the run's rows. */
static TGT void transform_inputs_run(const geom *g, int64_t nci, const float *planes,
                                     const tile_walk *w, int64_t k0, int64_t k1,
                                     const run_out *ro)
{
    int64_t off[4][4];
    input_offsets(g, off);
    const int64_t vs = nci * ro->rs;
    for (int64_t ci = 0; ci < nci; ci++) {
        const float *pl = planes + ci * 4 * g->pl;
        for (int64_t k = k0; k < k1; k++) {
            __m512 t[16];
            input_tiles(pl + w->src[k], off, t);
            float *o = ro->dst + (ci * ro->rs + ro->at + w->dst[k]);
#pragma GCC unroll 16
            for (int pos = 0; pos < 16; pos++)
                _mm512_storeu_ps(o + pos * vs, tiles_of(w->mask[k], t[pos]));
        }
    }
}

/* ------------------------------------------------------------ outputs */

/* x from the low lanes of p spread to the lanes in m, zero elsewhere. */
static TGT __m512 spread(__mmask16 m, const float *p)
{
    const __m512 x = _mm512_loadu_ps(p);
    return m == 0xFFFF ? x : _mm512_maskz_expand_ps(m, x);
}

/* Y = A^T M A of the tiles of walk vectors k0..k1-1 of one image, from a
 * run (element pos of output channel co in row pos * nco + co, rows rs
 * apart, the tile at walk position d in column at + d), into the image's
 * output planes: (a, b) of channel co at yp + (co * 4 + a * 2 + b) * yl,
 * tile p at p. Whole vectors are stored along the walk: the dropped
 * column gets zeros, and a row's spill into the next is written over
 * after it, as in transform_inputs_run. */
static TGT void transform_outputs_run(const geom *g, int64_t nco, const float *m, int64_t rs,
                                      int64_t at, const tile_walk *w, int64_t k0, int64_t k1,
                                      float *yp)
{
    const int64_t ms = nco * rs; /* between elements pos and pos + 1 */
    for (int64_t co = 0; co < nco; co++)
        for (int64_t k = k0; k < k1; k++) {
            const float *mk = m + (co * rs + at + w->dst[k]);
            const __mmask16 mask = w->mask[k];
            __m512 t[2][4];
#pragma GCC unroll 4
            for (int j = 0; j < 4; j++) {
                const __m512 m0 = spread(mask, mk + j * ms), m1 = spread(mask, mk + (4 + j) * ms),
                             m2 = spread(mask, mk + (8 + j) * ms),
                             m3 = spread(mask, mk + (12 + j) * ms);
                t[0][j] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
                t[1][j] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
            }
            float *y = yp + co * 4 * g->yl + w->src[k];
#pragma GCC unroll 2
            for (int a = 0; a < 2; a++) {
                _mm512_storeu_ps(y + a * 2 * g->yl,
                                 _mm512_add_ps(_mm512_add_ps(t[a][0], t[a][1]), t[a][2]));
                _mm512_storeu_ps(y + (a * 2 + 1) * g->yl,
                                 _mm512_sub_ps(_mm512_sub_ps(t[a][1], t[a][2]), t[a][3]));
            }
        }
}

/* The first min(left, 16) of x at d, left a multiple of 8 (none when it
 * is not positive). */
static TGT void store_row_part(float *d, int64_t left, __m512 x)
{
    if (left >= 16)
        _mm512_storeu_ps(d, x);
    else if (left > 0)
        _mm256_storeu_ps(d, _mm512_castps512_ps256(x));
}

/* The output planes of one image and group into dst (rows interleaved
 * from the planes' (a, 0) and (a, 1) halves through tmp), plus the bias. */
static TGT void unpack_planes(const pass *q, const geom *g, const float *yp, float *dst,
                              const float *bias, float *tmp)
{
    const __m512i lo = _mm512_set_epi32(23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    const __m512i hi =
        _mm512_set_epi32(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8);
    const int64_t vecs = (g->Tx + 15) / 16;
    for (int64_t co = 0; co < q->nco; co++) {
        const float b = bias ? bias[co * q->bs] : 0.0f;
        for (int64_t o1 = 0; o1 < q->out[1]; o1++) {
            const float *e = yp + (co * 4 + (o1 & 1) * 2) * g->yl + (o1 >> 1) * g->L;
            float *d = dst + co * q->dc + o1 * q->ds[1];
            if (q->ds[0] == 1 && q->out[0] % 8 == 0) {
                /* Dense rows of whole vectors of 8: the interleaved
                 * vectors go to the row with the bias, not through tmp. */
                const __m512 vb = _mm512_set1_ps(b);
                for (int64_t v = 0; v < vecs; v++) {
                    const __m512 x0 = _mm512_loadu_ps(e + 16 * v);
                    const __m512 x1 = _mm512_loadu_ps(e + g->yl + 16 * v);
                    store_row_part(d + 32 * v, q->out[0] - 32 * v,
                                   _mm512_add_ps(_mm512_permutex2var_ps(x0, lo, x1), vb));
                    store_row_part(d + 32 * v + 16, q->out[0] - 32 * v - 16,
                                   _mm512_add_ps(_mm512_permutex2var_ps(x0, hi, x1), vb));
                }
                continue;
            }
            for (int64_t v = 0; v < vecs; v++) {
                const __m512 x0 = _mm512_loadu_ps(e + 16 * v);
                const __m512 x1 = _mm512_loadu_ps(e + g->yl + 16 * v);
                _mm512_store_ps(tmp + 32 * v, _mm512_permutex2var_ps(x0, lo, x1));
                _mm512_store_ps(tmp + 32 * v + 16, _mm512_permutex2var_ps(x0, hi, x1));
            }
            if (q->ds[0] == 1)
                row_copy(d, tmp, q->out[0], b);
            else
                for (int64_t o0 = 0; o0 < q->out[0]; o0++)
                    d[o0 * q->ds[0]] = tmp[o0] + b;
        }
    }
}

/* ---------------------------------------------------------------- a pass */

/* Real tiles a run of the forward pass aims at. The images of a run are
 * transformed into it one after another, their real tiles end to end, and
 * its 16 products run over all of them at once; an image with more tiles
 * goes in chunks of about this many. Before runs each image's plane was
 * multiplied whole in blocks, dropped column and rounding included: on
 * ResNet-20's 16x16 images 96 tile slots for 64 tiles, on its 8x8 ones
 * 32 for 16. Each tile's sums are the same terms in the same order either
 * way, so the bits are too. */
#define RUN_TILES 128

/* What a forward (or backward-data) call shares with its tasks. */
typedef struct fwd_call {
    const pass *q;
    const dla__cpu_conv_taps *k;
    uint32_t xlim;  /* forward_input_bound: images past it go direct_image */
    geom g;
    tile_walk walk;
    const float *u; /* the transformed filters */
    int64_t K;      /* images a run, at most */
    int64_t chunk;  /* walk vectors a chunk of an image (all of them when K > 1) */
    int64_t step;   /* tiles the last block's micro-kernel takes a call
                     * (32 or 64; the blocks before it take the same or 32) */
    int64_t rs;     /* floats per row of a run */
    int64_t runs;
} fwd_call;

/* One thread's buffers. */
typedef struct bufs {
    float *padded, *planes, *v, *m, *yp, *tout;
} bufs;

static int64_t bufs_floats(const fwd_call *c)
{
    const pass *q = c->q;
    const geom *g = &c->g;
    return padded_floats(g, q->nci) + q->nci * 4 * g->pl + 16 * (q->nci + q->nco) * c->rs +
           q->nco * 4 * g->yl + g->tl;
}

static void bufs_carve(bufs *b, const fwd_call *c, float *at)
{
    const pass *q = c->q;
    const geom *g = &c->g;
    b->padded = at, at += padded_floats(g, q->nci);
    b->planes = at, at += q->nci * 4 * g->pl;
    b->v = at, at += 16 * q->nci * c->rs;
    b->m = at, at += 16 * q->nco * c->rs;
    b->yp = at, at += q->nco * 4 * g->yl;
    b->tout = at;
}

/* The 16 GEMMs of a run's first nb tiles (a multiple of the step): M[pos]
 * = V[pos] x U[pos], rows rs floats apart. */
static void multiply(const fwd_call *c, const float *u, const float *v, float *m, int64_t nb)
{
    static const int64_t no_offset = 0;
    const pass *q = c->q;
    const int64_t nf = c->g.nf, rs = c->rs;
    for (int pos = 0; pos < 16; pos++)
        for (int64_t f0 = 0; f0 < q->nco; f0 += nf) {
            const int64_t n = f0 + nf <= q->nco ? nf : q->nco - f0;
            const int64_t step = n > 6 ? 32 : 64;
            const float *wp = u + pos * q->nci * q->nco + f0 * q->nci;
            for (int64_t s = 0; s < nb; s += step)
                dla__cpu_conv_fwd_fns[n](v + pos * q->nci * rs + s, rs, q->nci, &no_offset, 1,
                                         wp, m + (pos * q->nco + f0) * rs + s, rs);
        }
}

/* Group grp of image b into planes; whether its inputs are past c's bound
 * (then direct_image writes its outputs in place of unpack_image). */
static int pack_image(const fwd_call *c, int64_t b, int64_t grp, const bufs *t)
{
    const pass *q = c->q;
    const image_src is = {.src = q->src + b * q->sb + grp * q->nci * q->sc,
                          .nch = q->nci,
                          .in = {q->in[0], q->in[1]},
                          .ss = {q->ss[0], q->ss[1]},
                          .sc = q->sc,
                          .pb = {q->pb[0], q->pb[1]}};
    return pack_planes_checked(&c->g, &is, t->planes, t->padded) > c->xlim;
}

/* Group grp of image b from the output planes. */
static void unpack_image(const pass *q, const geom *g, int64_t b, int64_t grp, const bufs *t)
{
    unpack_planes(q, g, t->yp, q->dst + b * q->db + grp * q->nco * q->dc,
                  q->bias ? q->bias + grp * q->nco * q->bs : NULL, t->tout);
}

/* Run r: its images whole, or its one image in chunks. */
static void fwd_run(const fwd_call *c, int64_t r, const bufs *t)
{
    const pass *q = c->q;
    const geom *g = &c->g;
    const tile_walk *w = &c->walk;
    const int64_t b0 = q->B * r / c->runs, n = q->B * (r + 1) / c->runs - b0;
    for (int64_t grp = 0; grp < q->G; grp++) {
        const float *ug = c->u + grp * 16 * q->nci * q->nco;
        if (c->chunk < w->n) {
            const int wide = pack_image(c, b0, grp, t);
            for (int64_t k0 = 0; k0 < w->n; k0 += c->chunk) {
                const int64_t k1 = k0 + c->chunk < w->n ? k0 + c->chunk : w->n;
                const int64_t d0 = w->dst[k0], nt = tile_walk_at(w, k1) - d0;
                transform_inputs_run(g, q->nci, t->planes, w, k0, k1,
                                     &(run_out){t->v, c->rs, -d0});
                multiply(c, ug, t->v, t->m, up_to(nt, c->step));
                transform_outputs_run(g, q->nco, t->m, c->rs, -d0, w, k0, k1, t->yp);
            }
            if (wide)
                direct_image(q, c->k, b0, grp);
            else
                unpack_image(q, g, b0, grp, t);
            continue;
        }
        /* n <= K <= RUN_TILES */
        unsigned char wide[RUN_TILES];
        for (int64_t j = 0; j < n; j++) {
            wide[j] = (unsigned char)pack_image(c, b0 + j, grp, t);
            transform_inputs_run(g, q->nci, t->planes, w, 0, w->n,
                                 &(run_out){t->v, c->rs, j * w->tiles});
        }
        multiply(c, ug, t->v, t->m, up_to(n * w->tiles, c->step));
        for (int64_t j = 0; j < n; j++) {
            transform_outputs_run(g, q->nco, t->m, c->rs, j * w->tiles, w, 0, w->n, t->yp);
            if (wide[j])
                direct_image(q, c->k, b0 + j, grp);
            else
                unpack_image(q, g, b0 + j, grp, t);
        }
    }
    /* Every group of the run's images is written. */
    dla__cpu_conv_epilogue(q->epi, b0, n);
}

/* Runs of K images, or chunks of one, sized for RUN_TILES (a function of
 * the shape: the bits do not depend on it, but the buffers do). */
static void fwd_runs_init(fwd_call *c)
{
    const int64_t T = c->walk.tiles;
    c->K = T >= RUN_TILES ? 1 : RUN_TILES / T;
    c->K = c->K > c->q->B ? c->q->B : c->K;
    int64_t max_tiles = c->K * T;
    c->chunk = c->walk.n;
    if (c->K == 1 && T >= 2 * RUN_TILES) {
        const int64_t chunks = T / RUN_TILES;
        c->chunk = (c->walk.n + chunks - 1) / chunks;
        max_tiles = 16 * c->chunk;
    }
    c->rs = up_to(max_tiles, 64) + 16;
    c->runs = (c->q->B + c->K - 1) / c->K;
}

static int enabled(void)
{
    return dla__cpu_conv_env() != DLA__CONV_DIRECT;
}

dla_status dla__cpu_conv_winograd(const pass *q, const dla__cpu_conv_taps *k)
{
    const dla_plugin_host *h = dla__cpu_host;
    if (q->fs[0] != 3 || q->fs[1] != 3 || q->fs[2] != 1 || q->dl[0] != 1 || q->dl[1] != 1 ||
        q->in[2] != 1 || q->out[2] != 1 || q->pb[2] != 0 || q->out[0] < 1 || q->out[1] < 1 ||
        q->nci < MIN_CHANNELS || q->nco < MIN_CHANNELS || !enabled())
        return DLA_ERR_UNSUPPORTED;
    if (q->B < MIN_IMAGES)
        return DLA_ERR_UNSUPPORTED;
    const uint32_t wbits = filter_magnitude(q, k);
    if (!filters_fit(wbits))
        return DLA_ERR_UNSUPPORTED;
    fwd_call c = {.q = q, .k = k, .xlim = forward_input_bound(wbits, q->nci)};
    c.g.nf = block_of(q->nco, FWD_MAX_NF);
    /* The micro-kernels for 1-6 filters take 4 vectors of tiles, 7-12
     * two; the blocks before the last are as large or one larger. */
    const int64_t last = q->nco - (q->nco - 1) / c.g.nf * c.g.nf;
    c.step = last > 6 ? 32 : 64;
    geom_init(&c.g, q->out[0], q->out[1]);
    /* Lanes of the dropped column may be taken as tiles only where an
     * image fills a run alone: in a run of several images they would take
     * room from the next image's tiles. */
    if (!tile_walk_new(&c.g, &c.walk, c.g.Tx * c.g.Ty >= RUN_TILES ? c.step : 0))
        return h->error(DLA_ERR_OUT_OF_MEMORY, "cpu conv: cannot allocate a tile walk of %lld",
                        (long long)tile_walk_len(&c.g));
    fwd_runs_init(&c);
    const int64_t per = bufs_floats(&c);
    if (per * (int64_t)sizeof(float) > MAX_THREAD_BYTES) {
        h->free(c.walk.src);
        return DLA_ERR_UNSUPPORTED;
    }
    int team = omp_get_max_threads() < MAX_THREADS ? omp_get_max_threads() : MAX_THREADS;
    if (team > c.runs)
        team = (int)c.runs;
    const int64_t nu = q->G * 16 * q->nci * q->nco;
    float *u = h->alloc((size_t)nu * sizeof(float), DLA__CPU_ALIGN);
    dla_mem mem = NULL;
    float *scratch = u ? dla__cpu_conv_scratch((size_t)(per * team) * sizeof(float), &mem) : NULL;
    if (!scratch) {
        h->free(u);
        h->free(c.walk.src);
        return h->error(DLA_ERR_OUT_OF_MEMORY,
                        "cpu conv: cannot allocate the Winograd buffers of %d threads", team);
    }
    transform_filters(q, k, c.g.nf, u);
    c.u = u;
#pragma omp parallel num_threads(team)
    {
        bufs t;
        bufs_carve(&t, &c, scratch + omp_get_thread_num() * per);
        /* Zeros once: the row buffers' margins and the planes' tails,
         * which only the dropped tiles read, stay as they are from image
         * to image. The runs are not cleared: a lane past a run's real
         * tiles only ever reaches lanes that are dropped. */
        memset(t.padded, 0, (size_t)(t.v - t.padded) * sizeof(float));
        memset(t.yp, 0, (size_t)(per - (t.yp - t.padded)) * sizeof(float));
#pragma omp for schedule(dynamic, 1)
        for (int64_t r = 0; r < c.runs; r++)
            fwd_run(&c, r, &t);
    }
    dla__cpu_conv_scratch_free(mem);
    h->free(u);
    h->free(c.walk.src);
    return DLA_OK;
}

/* ------------------------------------------------------ backward filter */

/* dW of the same layers: with U = G g G^T and M = sum over channels of
 * V .* U, the gradient of U is a sum over every tile of every image,
 *
 *     dU[pos][co][ci] = sum over tiles of dM[pos][co] * V[pos][ci],
 *     dM = A dY A^T (4x4 from each 2x2 block of dY),
 *     dW = G^T dU G,
 *
 * 16 products per pair of channels and tile where the direct sum takes 36
 * per four outputs. Tiles of several images are stacked into a run, and
 * each position's sums over a run are one product, dM[pos] (co x tiles)
 * times V[pos]^T (tiles x ci), by OpenBLAS on the calling thread: its
 * register blocking keeps the sums in registers over the run's tiles.
 * (The direct backward filter's micro-kernels did these sums before, in
 * 16-lane partial sums loaded and stored for every call: a part's 64 x 64
 * channels had 4 MiB of them, and ResNet-20's 64-channel layer took 1.15x
 * the time of the products, its 16-channel one 1.06x; docs/convolution.md.)
 * Each part of the batch has sums of its own, added in part order at the
 * end, so the bits follow the shape, never the team. */

/* Tiles a run aims at: the products' inner dim. */
#define FILTER_RUN_TILES 512

/* dM = A dY A^T of one image's tiles, every output channel, into a run,
 * from dY's polyphase planes: element (a, b) of tile p at p of plane
 * a*2 + b. */
static TGT void transform_grads_run(const geom *g, int64_t nco, const float *planes,
                                    const tile_walk *w, const run_out *ro)
{
    const int64_t ms = nco * ro->rs;
    const __m512 zero = _mm512_setzero_ps();
    for (int64_t co = 0; co < nco; co++) {
        const float *pl = planes + co * 4 * g->pl;
        float *mc = ro->dst + co * ro->rs + ro->at;
        for (int64_t k = 0; k < w->n; k++) {
            const float *src = pl + w->src[k];
            const __mmask16 m = w->mask[k];
            __m512 t[4][2];
#pragma GCC unroll 2
            for (int b = 0; b < 2; b++) {
                const __m512 y0 = _mm512_loadu_ps(src + b * g->pl),
                             y1 = _mm512_loadu_ps(src + (2 + b) * g->pl);
                t[0][b] = y0;
                t[1][b] = _mm512_add_ps(y0, y1);
                t[2][b] = _mm512_sub_ps(y0, y1);
                t[3][b] = _mm512_sub_ps(zero, y1);
            }
            float *o = mc + w->dst[k];
#pragma GCC unroll 4
            for (int i = 0; i < 4; i++) {
                float *oi = o + 4 * i * ms;
                _mm512_storeu_ps(oi, tiles_of(m, t[i][0]));
                _mm512_storeu_ps(oi + ms, tiles_of(m, _mm512_add_ps(t[i][0], t[i][1])));
                _mm512_storeu_ps(oi + 2 * ms, tiles_of(m, _mm512_sub_ps(t[i][0], t[i][1])));
                _mm512_storeu_ps(oi + 3 * ms, tiles_of(m, _mm512_sub_ps(zero, t[i][1])));
            }
        }
    }
}

/* The parts of the batch: a power of two up to DLA__CONV_BATCH_PARTS,
 * two at least (one part would have two threads split its positions, each
 * packing and transforming every image), and no more than whole runs of k
 * images fill, so that the products keep their inner dim. A function of
 * the shape alone, as the bits must be. */
static int filter_parts(int64_t batch, int64_t k)
{
    int parts = DLA__CONV_BATCH_PARTS;
    while (parts > 2 && parts * k > batch)
        parts /= 2;
    return parts > batch ? (int)batch : parts;
}

/* What a backward-filter call shares with its tasks. */
typedef struct filter_call {
    const dla__cpu_conv *p;
    geom g;
    int64_t T;      /* real tiles of an image */
    int64_t K;      /* images of a run, at most */
    int64_t rs;     /* floats per row of a run: K * T rounded up to a
                     * vector, and a vector of slack for the last spill */
    int parts, splits;
    float **acc;    /* per part: [grp][pos][co][ci] */
    tile_walk walk;
    int own_nt;     /* the products by dla__cpu_winograd_nt, not OpenBLAS */
} filter_call;

/* One thread's buffers. */
typedef struct filter_bufs {
    float *xpad, *ypad, *xplanes, *yplanes, *v, *m;
} filter_bufs;

static int64_t filter_bufs_floats(const filter_call *c)
{
    const int64_t nci = c->p->g.Cg, nco = c->p->g.Fg;
    return padded_floats(&c->g, nci) + padded_floats(&c->g, nco) + 4 * (nci + nco) * c->g.pl +
           16 * (nci + nco) * c->rs;
}

static void filter_bufs_carve(filter_bufs *b, const filter_call *c, float *at)
{
    const int64_t nci = c->p->g.Cg, nco = c->p->g.Fg;
    b->xpad = at, at += padded_floats(&c->g, nci);
    b->ypad = at, at += padded_floats(&c->g, nco);
    b->xplanes = at, at += 4 * nci * c->g.pl;
    b->yplanes = at, at += 4 * nco * c->g.pl;
    b->v = at, at += 16 * nci * c->rs;
    b->m = at;
}

/* Images b..b+n-1 of group grp into a run: V and dM of their real tiles,
 * image after image. */
static void filter_run_fill(const filter_call *c, int64_t b, int64_t n, int64_t grp,
                            const filter_bufs *t)
{
    const dla__cpu_conv *p = c->p;
    const geom *g = &c->g;
    const int64_t nci = p->g.Cg, nco = p->g.Fg;
    for (int64_t j = 0; j < n; j++) {
        const image_src xs = {.src = (const float *)p->x + (b + j) * p->g.xb +
                                     grp * nci * p->g.xc,
                              .nch = nci,
                              .in = {p->g.in[0], p->g.in[1]},
                              .ss = {p->g.xs[0], p->g.xs[1]},
                              .sc = p->g.xc,
                              .pb = {p->g.pb[0], p->g.pb[1]}};
        pack_planes(g, &xs, t->xplanes, t->xpad);
        transform_inputs_run(g, nci, t->xplanes, &c->walk, 0, c->walk.n,
                             &(run_out){t->v, c->rs, j * c->T});
        /* dY as an unpadded image of the outputs' size: its planes hold
         * each tile's 2x2 block at the tile's index. */
        const image_src ys = {.src = (const float *)p->y + (b + j) * p->g.yb +
                                     grp * nco * p->g.yf,
                              .nch = nco,
                              .in = {p->g.out[0], p->g.out[1]},
                              .ss = {p->g.ys[0], p->g.ys[1]},
                              .sc = p->g.yf,
                              .pb = {0, 0}};
        pack_planes(g, &ys, t->yplanes, t->ypad);
        transform_grads_run(g, nco, t->yplanes, &c->walk, &(run_out){t->m, c->rs, j * c->T});
    }
}

/* Task `task`: part task / splits, positions of split task % splits, all
 * of the part's images in runs of at most K. */
static void filter_task(const filter_call *c, int task, const filter_bufs *t)
{
    const dla__cpu_conv *p = c->p;
    const int64_t nci = p->g.Cg, nco = p->g.Fg, batch = p->g.batch;
    const int part = task / c->splits, split = task % c->splits;
    const int pos0 = 16 * split / c->splits, pos1 = 16 * (split + 1) / c->splits;
    const int64_t b0 = batch * part / c->parts, b1 = batch * (part + 1) / c->parts;
    const int64_t runs = (b1 - b0 + c->K - 1) / c->K;
    for (int64_t r = 0; r < runs; r++) {
        const int64_t b = b0 + (b1 - b0) * r / runs, n = b0 + (b1 - b0) * (r + 1) / runs - b;
        for (int64_t grp = 0; grp < p->g.G; grp++) {
            filter_run_fill(c, b, n, grp, t);
            /* dU[pos] (co x ci) = dM[pos] (co x tiles) V[pos]^T, onto the
             * part's sums after its first run. Inside the team OpenBLAS
             * stays on this thread. */
            float *ag = c->acc[part] + grp * 16 * nco * nci;
            for (int pos = pos0; pos < pos1 && c->own_nt; pos++)
                dla__cpu_winograd_nt(nco, nci, n * c->T, t->m + pos * nco * c->rs, c->rs,
                                     t->v + pos * nci * c->rs, c->rs, r != 0,
                                     ag + pos * nco * nci, nci);
            for (int pos = pos0; pos < pos1 && !c->own_nt; pos++)
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nco, (int)nci,
                            (int)(n * c->T), 1.0f, t->m + pos * nco * c->rs, (int)c->rs,
                            t->v + pos * nci * c->rs, (int)c->rs, r ? 1.0f : 0.0f,
                            ag + pos * nco * nci, (int)nci);
        }
    }
}

/* du[ci * 16 + pos], for the channels ci of output channel co of group
 * grp at position pos: the parts' sums added in part order (each pair's
 * sum the same whoever computes it, and whichever pairs a thread takes). */
static int filter_part_sums(const filter_call *c, int64_t grp, int64_t co, int pos, double *du)
{
    const int64_t nci = c->p->g.Cg, nco = c->p->g.Fg;
    const int64_t at = ((grp * 16 + pos) * nco + co) * nci;
    int inf_or_nan = 0;
    for (int64_t ci = 0; ci < nci; ci++) {
        float v = c->acc[0][at + ci];
        for (int i = 1; i < c->parts; i++)
            v += c->acc[i][at + ci];
        inf_or_nan |= !isfinite(v);
        du[ci * 16 + pos] = v;
    }
    return inf_or_nan;
}

/* dW[k0, k1] = sum over i, j of G[i][k1] G[j][k0] dU[i][j] (i the row,
 * as in transform_filters), in double, for one pair of channels. */
static void filter_out(const dla__cpu_conv *p, int64_t grp, int64_t co, int64_t ci,
                       const double du[16])
{
    double s[4][3];
    for (int i = 0; i < 4; i++) {
        const double *d = du + 4 * i;
        s[i][0] = d[0] + (d[1] + d[2]) / 2;
        s[i][1] = (d[1] - d[2]) / 2;
        s[i][2] = (d[1] + d[2]) / 2 + d[3];
    }
    float *w = (float *)p->w + grp * p->g.wg + co * p->g.wf + ci * p->g.wc;
    for (int k0 = 0; k0 < 3; k0++) {
        const double w0 = s[0][k0] + (s[1][k0] + s[2][k0]) / 2,
                     w1 = (s[1][k0] - s[2][k0]) / 2,
                     w2 = (s[1][k0] + s[2][k0]) / 2 + s[3][k0];
        w[k0 * p->g.ws[0]] = (float)w0;
        w[k0 * p->g.ws[0] + p->g.ws[1]] = (float)w1;
        w[k0 * p->g.ws[0] + 2 * p->g.ws[1]] = (float)w2;
    }
}

dla_status dla__cpu_conv_winograd_filter(const dla__cpu_conv *p)
{
    const dla_plugin_host *h = dla__cpu_host;
    const dla_kit_conv *k = &p->g;
    if (p->dtype != DLA_F32 || k->fs[0] != 3 || k->fs[1] != 3 || k->fs[2] != 1 ||
        k->dl[0] != 1 || k->dl[1] != 1 || k->in[2] != 1 || k->out[2] != 1 || k->pb[2] != 0 ||
        k->out[0] < 1 || k->out[1] < 1 || k->Cg < MIN_CHANNELS || k->Fg < MIN_CHANNELS ||
        k->batch < MIN_IMAGES || !enabled())
        return DLA_ERR_UNSUPPORTED;
    filter_call c = {.p = p, .own_nt = dla__cpu_winograd_nt_on()};
    geom_init(&c.g, k->out[0], k->out[1]);
    c.T = c.g.Tx * c.g.Ty;
    c.K = (FILTER_RUN_TILES + c.T - 1) / c.T;
    c.K = c.K > k->batch ? k->batch : c.K;
    c.rs = up16(c.K * c.T) + 16;
    while (c.K > 1 && filter_bufs_floats(&c) * (int64_t)sizeof(float) > MAX_THREAD_BYTES)
        c.K--, c.rs = up16(c.K * c.T) + 16;
    const int64_t per = DLA__CONV_LINE(filter_bufs_floats(&c), sizeof(float));
    if (per * (int64_t)sizeof(float) > MAX_THREAD_BYTES)
        return DLA_ERR_UNSUPPORTED;
    /* 16 sums per pair of channels a part. The layers the lane sums took
     * (up to 16 x 16 sums a pair in 64 MiB) and no wider: wider ones stay
     * on the direct kernels, as measured then. */
    const int64_t nacc = k->G * 16 * k->Fg * k->Cg;
    if (16 * nacc * (int64_t)sizeof(float) > MAX_THREAD_BYTES)
        return DLA_ERR_UNSUPPORTED;
    c.parts = filter_parts(k->batch, c.K);
    int team = omp_get_max_threads() < MAX_THREADS ? omp_get_max_threads() : MAX_THREADS;
    /* A task a thread at least: splitting a part's positions packs and
     * transforms its images again for each split (and changes no sum). */
    const int want = team;
    c.splits = want > c.parts ? (want + c.parts - 1) / c.parts : 1;
    c.splits = c.splits > 16 ? 16 : c.splits;
    const int tasks = c.parts * c.splits;
    team = team < tasks ? team : tasks;
    float *acc[DLA__CONV_BATCH_PARTS];
    c.acc = acc;
    if (!tile_walk_new(&c.g, &c.walk, 0))
        return h->error(DLA_ERR_OUT_OF_MEMORY, "cpu conv: cannot allocate a tile walk of %lld",
                        (long long)tile_walk_len(&c.g));
    dla_mem mem = NULL;
    float *scratch = dla__cpu_conv_scratch(
        (size_t)(per * team + nacc * c.parts) * sizeof(float), &mem);
    if (!scratch) {
        h->free(c.walk.src);
        return h->error(DLA_ERR_OUT_OF_MEMORY,
                        "cpu conv: cannot allocate the Winograd backward-filter buffers of %d "
                        "threads and the sums of %d parts of the batch",
                        team, c.parts);
    }
    for (int i = 0; i < c.parts; i++)
        acc[i] = scratch + per * team + i * nacc;
    /* Each thread's du: 16 sums per input channel of one output channel. */
    const int64_t du_doubles = DLA__CONV_LINE(16 * k->Cg, sizeof(double));
    double *du_all = h->alloc((size_t)(team * du_doubles) * sizeof(double), 0);
    if (!du_all) {
        dla__cpu_conv_scratch_free(mem);
        h->free(c.walk.src);
        return h->error(DLA_ERR_OUT_OF_MEMORY, "cpu conv: cannot allocate the Winograd "
                        "backward-filter sums of %d threads", team);
    }
    int inf_or_nan = 0;
#pragma omp parallel num_threads(team)
    {
        filter_bufs t;
        filter_bufs_carve(&t, &c, scratch + omp_get_thread_num() * per);
        /* The padded rows' margins and the planes' tails stay zero from
         * image to image; the rest is written before it is read. */
        memset(t.xpad, 0, (size_t)(t.v - t.xpad) * sizeof(float));
#pragma omp for schedule(dynamic, 1)
        for (int task = 0; task < tasks; task++)
            filter_task(&c, task, &t);
        /* The parts' sums into dW, output channel by output channel
         * across the team (one thread took 12% of the 64-channel layer's
         * call over them); position by position, each reads its
         * channels' sums in a row. Whether any is Inf or NaN. */
        double *du = du_all + omp_get_thread_num() * du_doubles;
#pragma omp for schedule(static) reduction(| : inf_or_nan)
        for (int64_t gc = 0; gc < k->G * k->Fg; gc++) {
            const int64_t grp = gc / k->Fg, co = gc % k->Fg;
            for (int pos = 0; pos < 16; pos++)
                inf_or_nan |= filter_part_sums(&c, grp, co, pos, du);
            for (int64_t ci = 0; ci < k->Cg; ci++)
                filter_out(p, grp, co, ci, du + ci * 16);
        }
    }
    h->free(du_all);
    dla__cpu_conv_scratch_free(mem);
    h->free(c.walk.src);
    /* An Inf or NaN among the sums dU: x or dY held Inf or NaN, or values
     * near FLT_MAX overflowed a transform or a sum (an Inf stays Inf or
     * NaN through every later add and product, and every V and dM element
     * meets every channel's in the products, so it reaches the sums).
     * The direct kernels take the call and write dW over ours: there is
     * no epilogue, and x and dY are as they were. */
    return inf_or_nan ? DLA_ERR_UNSUPPORTED : DLA_OK;
}

#else /* not x86-64 with GCC or Clang */

dla_status dla__cpu_conv_winograd(const pass *q, const dla__cpu_conv_taps *k)
{
    (void)q;
    (void)k;
    return DLA_ERR_UNSUPPORTED;
}

dla_status dla__cpu_conv_winograd_filter(const dla__cpu_conv *p)
{
    (void)p;
    return DLA_ERR_UNSUPPORTED;
}

#endif
