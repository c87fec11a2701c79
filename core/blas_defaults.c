/*
 * blas_defaults.c - which of its kernels OpenBLAS runs, chosen before it
 * is loaded.
 *
 * Why: OpenBLAS built for every x86 CPU (DYNAMIC_ARCH: Debian's, and most
 * distributions') picks its kernels once, when it is loaded, from the
 * CPU's family and model number. A CPU newer than the OpenBLAS release has
 * a model number it does not know, and it falls back to its Prescott
 * kernels (SSE3) without a word: on an Intel Xeon of family 6, model 207,
 * with AVX-512, Debian 12's OpenBLAS 0.3.21 ran sgemm of 1024 at 61
 * GFLOP/s, against 272 with its SkylakeX kernels. What the kernels need is
 * the instruction set, which the CPU reports whatever its model, so the
 * library reads it and sets OPENBLAS_CORETYPE (which OpenBLAS reads when
 * it is loaded) just before it loads its first plugin, as it sets
 * GOMP_SPINCOUNT (omp_defaults.c): the cpu plugin links OpenBLAS, the
 * library does not. It does so only when
 *   - the user did not set OPENBLAS_CORETYPE (theirs wins);
 *   - DLACCEL_OPENBLAS_CORE is not "off";
 *   - the CPU has AVX-512 (F, CD, BW, DQ and VL, enabled by the OS:
 *     SkylakeX) or AVX2 and FMA (Haswell); on any other CPU OpenBLAS
 *     chooses;
 *   - OpenBLAS is not loaded yet (a program that links it loaded it before
 *     main; it can ask dla_openblas_coretype() and run itself again with
 *     the variable set, as dlaccel-bench does).
 * Those two are the single- and double-precision GEMM kernels OpenBLAS
 * runs on every CPU of that instruction set that it knows by name:
 * Cooperlake and SapphireRapids add bfloat16 kernels, which dlaccel does
 * not call. docs/environment.md gives the figures.
 */
#define _GNU_SOURCE /* RTLD_NOLOAD, secure_getenv */
#include "core/blas_defaults.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/log.h"
#include "core/openblas_core.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static const char *outcome = "not yet decided (no plugin loaded)";
static char outcome_buf[200];

/* The names OpenBLAS goes by: the usual one, Fedora's OpenMP and pthreads
 * builds, and the 64-bit-integer build. */
static const char *const sonames[] = {"libopenblas.so.0", "libopenblaso.so.0",
                                      "libopenblasp.so.0", "libopenblas64_.so.0"};

/* Whether something in the process loaded OpenBLAS already. */
static int openblas_loaded(void)
{
    for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++) {
        void *h = dlopen(sonames[i], RTLD_LAZY | RTLD_NOLOAD);
        if (h) {
            dlclose(h);
            return 1;
        }
    }
    return 0;
}

/* "off" turns the choice off; the default ("auto", or unset) chooses. */
static int turned_off(int warn)
{
    static atomic_int warned;
    return dla__openblas_core_off(&warned, warn ? dla__log : NULL);
}

static void choose(void)
{
    if (dla__openblas_core_user_set()) {
        snprintf(outcome_buf, sizeof outcome_buf, "the user's (OPENBLAS_CORETYPE=%s)",
                 getenv("OPENBLAS_CORETYPE"));
        outcome = outcome_buf;
        return;
    }
    if (turned_off(1)) {
        outcome = "OpenBLAS's own detection (DLACCEL_OPENBLAS_CORE=off)";
        return;
    }
    const char *core = dla__openblas_core_for_cpu();
    if (!core) {
        outcome = "OpenBLAS's own detection (the CPU has neither AVX-512 nor AVX2 with FMA)";
        return;
    }
    if (openblas_loaded()) {
        outcome = "OpenBLAS's own detection: it was loaded before dlaccel's first plugin (the "
                  "program links OpenBLAS); set OPENBLAS_CORETYPE yourself";
        dla__log(DLA_LOG_INFO, "OpenBLAS kernels: %s", outcome);
        return;
    }
    /* Before any plugin loads OpenBLAS; overwrite 0: only set when unset. */
    if (setenv("OPENBLAS_CORETYPE", core, 0) != 0) {
        outcome = "OpenBLAS's own detection (setting OPENBLAS_CORETYPE failed)";
        return;
    }
    snprintf(outcome_buf, sizeof outcome_buf, "dlaccel's (OPENBLAS_CORETYPE=%s, from the CPU's %s)",
             core, dla__openblas_core_isa(core));
    outcome = outcome_buf;
    dla__log(DLA_LOG_DEBUG, "OpenBLAS kernels: %s", outcome);
}

void dla__blas_defaults(void)
{
    pthread_once(&once, choose);
}

DLA_API const char *dla_openblas_coretype(void)
{
    return dla__openblas_core_user_set() || turned_off(0) ? NULL : dla__openblas_core_for_cpu();
}

DLA_API const char *dla_openblas_core(void)
{
    return outcome;
}
