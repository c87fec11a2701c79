/*
 * gemm.cl - batched column-major GEMM, C = alpha op(A) op(B) + beta C, one
 * kernel per transpose pair and float type.
 *
 * Work-item (g0, g1, p) computes a GEMM_WM x GEMM_WN block of page p:
 * rows g0, g0 + G0, g0 + 2 G0, ... (G0 the global size along 0) and the
 * GEMM_WN columns from g1 * GEMM_WN. Interleaving rows makes neighbouring
 * work-items read neighbouring elements of A and write neighbouring
 * elements of C (vector loads on PoCL, coalesced ones on a GPU), while
 * each B element a work-item loads serves GEMM_WM rows. Sums are kept in
 * T, as BLAS keeps them. Docs/plugins.md (the opencl section) has the
 * measurements against CLBlast behind this kernel.
 *
 * Each product is added with fma where the device has it in hardware (as the
 * cpu plugin's OpenBLAS kernels and CLBlast do): a product that
 * overflows after the sum is already infinite then leaves it infinite
 * (fma rounds once, Inf + -1e60 is Inf), where a separate multiply made
 * it -Inf and the sum NaN (until 2026-11-29: [1e30 1e30] * [1e30; -1e30]
 * in single was NaN here, +Inf on the cpu plugin and CLBlast).
 *
 * ab == 0 (k == 0 or alpha == 0) skips A and B, which may then be unbound
 * (NaN or Inf in them must not reach C); beta == 0 writes C without
 * reading it.
 */
#define GEMM_WM 4
#define GEMM_WN 8

/* acc + a b, fused where the device has fma in hardware (plugin.c's
 * DLA_FMA_F32/F64; one without would emulate it, slowly). */
#if defined(DLA_FMA_F32) || defined(FP_FAST_FMAF)
#define GEMM_MADD_float(a, b, acc) fma(a, b, acc)
#else
#define GEMM_MADD_float(a, b, acc) ((acc) + (a) * (b))
#endif
#if defined(DLA_FMA_F64) || defined(FP_FAST_FMA)
#define GEMM_MADD_double(a, b, acc) fma(a, b, acc)
#else
#define GEMM_MADD_double(a, b, acc) ((acc) + (a) * (b))
#endif

#define DEF_GEMM(name, TA, TB, T)                                              \
    __kernel void gemm_##name##_##T(long m, long n, long k, int ab, T alpha,   \
                                    T beta, __global const T *A, long aoff,    \
                                    long lda, long abs_, __global const T *B,  \
                                    long boff, long ldb, long bbs,             \
                                    __global T *C, long coff, long ldc,        \
                                    long cbs)                                  \
    {                                                                          \
        const long g0 = get_global_size(0);                                    \
        const long i0 = get_global_id(0), j0 = get_global_id(1) * GEMM_WN;     \
        const long p = get_global_id(2);                                       \
        if (i0 >= m || j0 >= n)                                                \
            return;                                                            \
        T acc[GEMM_WM][GEMM_WN];                                               \
        for (int a = 0; a < GEMM_WM; a++)                                      \
            for (int b = 0; b < GEMM_WN; b++)                                  \
                acc[a][b] = 0;                                                 \
        if (ab) {                                                              \
            A += aoff + p * abs_;                                              \
            B += boff + p * bbs;                                               \
            long ia[GEMM_WM], jb[GEMM_WN];                                     \
            for (int a = 0; a < GEMM_WM; a++)                                  \
                ia[a] = min(i0 + a * g0, m - 1);                               \
            for (int b = 0; b < GEMM_WN; b++)                                  \
                jb[b] = min(j0 + b, n - 1);                                    \
            for (long l = 0; l < k; l++) {                                     \
                T av[GEMM_WM], bv[GEMM_WN];                                    \
                for (int a = 0; a < GEMM_WM; a++)                              \
                    av[a] = TA ? A[l + ia[a] * lda] : A[ia[a] + l * lda];      \
                for (int b = 0; b < GEMM_WN; b++)                              \
                    bv[b] = TB ? B[jb[b] + l * ldb] : B[l + jb[b] * ldb];      \
                for (int a = 0; a < GEMM_WM; a++)                              \
                    for (int b = 0; b < GEMM_WN; b++)                          \
                        acc[a][b] = GEMM_MADD_##T(av[a], bv[b], acc[a][b]);    \
            }                                                                  \
        }                                                                      \
        C += coff + p * cbs;                                                   \
        for (int a = 0; a < GEMM_WM; a++)                                      \
            for (int b = 0; b < GEMM_WN; b++) {                                \
                const long i = i0 + a * g0, j = j0 + b;                        \
                if (i < m && j < n) {                                          \
                    const T v = ab ? alpha * acc[a][b] : 0;                    \
                    C[i + j * ldc] = beta == 0 ? v : v + beta * C[i + j * ldc]; \
                }                                                              \
            }                                                                  \
    }

#define DEF_GEMMS(T)                                                           \
    DEF_GEMM(nn, 0, 0, T)                                                      \
    DEF_GEMM(tn, 1, 0, T)                                                      \
    DEF_GEMM(nt, 0, 1, T)                                                      \
    DEF_GEMM(tt, 1, 1, T)
DEF_GEMMS(float)
#ifdef DLA_FP64
DEF_GEMMS(double)
#endif
