/*
 * conv_vec.h - the direct convolution's vector kernels, written once over
 * a vector width: the row copy, the forward and backward-filter register
 * blocks, and two helpers of the backward-filter sums.
 *
 * Not a normal header: the includer first includes conv_direct.h (the
 * element type FT) and defines TGT (the target attribute), VBITS (the
 * vector width in bits: 256 or 512) and VF_REG (the asm constraint of a
 * vector register), as conv_avx512.h and conv_avx2.c do; from these come
 * VL (elements per vector), vf (the vector type) and the VF_ intrinsics.
 * Everything here is static.
 */
#include <stdint.h>

#define VEC_CAT_(a, b, c) a##b##c
#define VEC_CAT(a, b, c) VEC_CAT_(a, b, c)
#define VL (VBITS / FT_BITS)
#define vf VEC_CAT(__m, VBITS, FT_VSFX)
/* An intrinsic of this element type on 128, 256 or VBITS-bit vectors:
 * V256(add) is _mm256_add_ps for float, _mm256_add_pd for double. */
#define V128(op) VEC_CAT(_mm_, op, FT_SFX)
#define V256(op) VEC_CAT(_mm256_, op, FT_SFX)
#if VBITS == 512
#define VF(op) VEC_CAT(_mm512_, op, FT_SFX)
#else
#define VF(op) V256(op)
#endif
#define VF_LOAD VF(load)
#define VF_LOADU VF(loadu)
#define VF_STORE VF(store)
#define VF_STOREU VF(storeu)
#define VF_SET1 VF(set1)
#define VF_ZERO VF(setzero)
#define VF_ADD VF(add)
#define VF_FMA VF(fmadd)

/* The largest register blocks any includer instantiates: forward PV x
 * NF, backward filter NT x BNF. */
#define VEC_MAX_PV 4
#define VEC_MAX_NF 12
#define VEC_MAX_NT 4
#define VEC_MAX_BNF 6

/* d[0..n-1] = s[0..n-1] + b: whole vectors, then a 256-bit and a 128-bit
 * half, then single elements. Rows are short (24 in the digit CNN), so a
 * library loop would cost as much as the convolution's own stores; and
 * the tail takes no masked loads or stores, which some AVX-512 CPUs
 * (AMD's) run many times slower than plain ones (measured: the packing
 * took twice as long with a masked tail). */
INLINE TGT void row_copy(FT *d, const FT *s, int64_t n, FT b)
{
    const vf vb = VF_SET1(b);
    int64_t i = 0;
    for (; i + VL <= n; i += VL)
        VF_STOREU(d + i, VF_ADD(VF_LOADU(s + i), vb));
#if VBITS > 256
    if (i + 256 / FT_BITS <= n) {
        V256(storeu)(d + i, V256(add)(V256(loadu)(s + i), V256(set1)(b)));
        i += 256 / FT_BITS;
    }
#endif
    if (i + 128 / FT_BITS <= n) {
        V128(storeu)(d + i, V128(add)(V128(loadu)(s + i), V128(set1)(b)));
        i += 128 / FT_BITS;
    }
    for (; i < n; i++)
        d[i] = s[i] + b;
}

/* The forward register block (dla__cpu_conv_fwd_fn): PV vectors of
 * outputs x NF filters. */
INLINE TGT void fwd_block(const FT *xb, int64_t cs, int64_t cg, const int64_t *toff, int64_t nt,
                          const FT *wp, FT *yb, int64_t ys, const int PV, const int NF)
{
    vf acc[VEC_MAX_PV][VEC_MAX_NF];
#pragma GCC unroll 4
    for (int i = 0; i < PV; i++)
#pragma GCC unroll 12
        for (int f = 0; f < NF; f++)
            acc[i][f] = VF_ZERO();
    for (int64_t c = 0; c < cg; c++) {
        const FT *xc = xb + c * cs;
        for (int64_t t = 0; t < nt; t++, wp += NF) {
            const FT *xt = xc + toff[t];
            vf xv[VEC_MAX_PV];
#pragma GCC unroll 4
            for (int i = 0; i < PV; i++)
                xv[i] = VF_LOADU(xt + VL * i);
#pragma GCC unroll 12
            for (int f = 0; f < NF; f++) {
                const vf wv = VF_SET1(wp[f]);
#pragma GCC unroll 4
                for (int i = 0; i < PV; i++)
                    acc[i][f] = VF_FMA(xv[i], wv, acc[i][f]);
            }
        }
    }
#pragma GCC unroll 4
    for (int i = 0; i < PV; i++)
#pragma GCC unroll 12
        for (int f = 0; f < NF; f++)
            VF_STORE(yb + f * ys + VL * i, acc[i][f]);
}

/* The backward-filter register block (dla__cpu_conv_bwf_fn): NT taps x
 * NF filters. */
INLINE TGT void bwf_block(const FT *xc, const int64_t *toff, const FT *dy, int64_t ds,
                          int64_t nvec, FT *acc, int64_t af, const int NT, const int NF)
{
    vf a[VEC_MAX_NT][VEC_MAX_BNF];
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
#pragma GCC unroll 6
        for (int f = 0; f < NF; f++)
            a[t][f] = VF_LOAD(acc + (f * af + t) * VL);
    const FT *x[VEC_MAX_NT];
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
        x[t] = xc + toff[t];
    for (int64_t v = 0; v < nvec * VL; v += VL) {
        vf xv[VEC_MAX_NT];
#pragma GCC unroll 4
        for (int t = 0; t < NT; t++)
            xv[t] = VF_LOADU(x[t] + v);
#pragma GCC unroll 6
        for (int f = 0; f < NF; f++) {
            vf d = VF_LOAD(dy + f * ds + v);
            /* One load per vector of dY: otherwise the compiler folds it
             * into each FMA, and the loads, not the FMAs, set the pace. */
            __asm__("" : VF_REG(d));
#pragma GCC unroll 4
            for (int t = 0; t < NT; t++)
                a[t][f] = VF_FMA(xv[t], d, a[t][f]);
        }
    }
#pragma GCC unroll 4
    for (int t = 0; t < NT; t++)
#pragma GCC unroll 6
        for (int f = 0; f < NF; f++)
            VF_STORE(acc + (f * af + t) * VL, a[t][f]);
}

/* Named instances of the blocks, for the includer's tables. */
#define VEC_FWD(PV, NF)                                                                            \
    static TGT void fwd_##PV##_##NF(const FT *xb, int64_t cs, int64_t cg, const int64_t *toff,  \
                                    int64_t nt, const FT *wp, FT *yb, int64_t ys)            \
    {                                                                                              \
        fwd_block(xb, cs, cg, toff, nt, wp, yb, ys, PV, NF);                                       \
    }
#define VEC_BWF(NT, NF)                                                                            \
    static TGT void bwf_##NT##_##NF(const FT *xc, const int64_t *toff, const FT *dy,         \
                                    int64_t ds, int64_t nvec, FT *acc, int64_t af)              \
    {                                                                                              \
        bwf_block(xc, toff, dy, ds, nvec, acc, af, NT, NF);                                        \
    }
