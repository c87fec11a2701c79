/*
 * openblas_core.h - which of OpenBLAS's kernel sets fits this CPU's
 * instruction set, and whether a set is below it.
 *
 * Header-only: the core sets OPENBLAS_CORETYPE from it before the cpu
 * plugin loads OpenBLAS (core/blas_defaults.c), and the cpu plugin (which
 * does not link the core) checks with it the kernels OpenBLAS did load.
 * The includer defines _GNU_SOURCE before its first include (env_choice.h).
 */
#ifndef DLA_CORE_OPENBLAS_CORE_H
#define DLA_CORE_OPENBLAS_CORE_H

#include <stddef.h>
#include <strings.h>

#include "core/env_choice.h"

/* Whether the user named OpenBLAS's kernels (OPENBLAS_CORETYPE). */
static inline int dla__openblas_core_user_set(void)
{
    const char *core = getenv("OPENBLAS_CORETYPE");
    return core && *core;
}

/* Whether DLACCEL_OPENBLAS_CORE=off leaves the kernels to OpenBLAS ("auto"
 * or unset: dlaccel chooses); another value is named once through log
 * (NULL: not). */
static inline int dla__openblas_core_off(atomic_int *warned, dla__env_log_fn log)
{
    static const char *const values[] = {"auto", "off", NULL};
    return dla__env_choice("DLACCEL_OPENBLAS_CORE", values, warned, log) == 1;
}

/* "SkylakeX" for AVX-512 (F, CD, BW, DQ and VL), "Haswell" for AVX2 with
 * FMA, NULL for any other CPU. __builtin_cpu_supports counts a feature
 * only when the OS saves its registers (XGETBV), as OpenBLAS's own check
 * does. */
static inline const char *dla__openblas_core_for_cpu(void)
{
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return "Haswell";
#endif
    return NULL;
}

/* The instruction set of a kernel set dla__openblas_core_for_cpu names,
 * for messages. */
static inline const char *dla__openblas_core_isa(const char *fit)
{
    return !strcasecmp(fit, "SkylakeX") ? "AVX-512" : "AVX2 and FMA";
}

/* Whether OpenBLAS's kernel set named core (openblas_get_corename) is
 * below what the CPU runs (fit: dla__openblas_core_for_cpu): a set
 * written for an older x86 instruction set. Names it does not list (a
 * newer OpenBLAS's) count as fitting. */
static inline int dla__openblas_core_below(const char *core, const char *fit)
{
    static const char *const pre_avx2[] = {
        "Prescott", "Katmai",   "Coppermine", "Northwood", "Banias",    "Core2",
        "Penryn",   "Dunnington", "Nehalem",  "Sandybridge", "Atom",    "Nano",
        "Athlon",   "Opteron",  "Opteron_SSE3", "Barcelona", "Bobcat",  "Bulldozer",
        "Piledriver", "Steamroller", "Excavator"};
    if (!core || !fit)
        return 0;
    for (size_t i = 0; i < sizeof pre_avx2 / sizeof pre_avx2[0]; i++)
        if (!strcasecmp(core, pre_avx2[i]))
            return 1;
    /* AVX2 kernels on a CPU with AVX-512. */
    return !strcasecmp(fit, "SkylakeX") && (!strcasecmp(core, "Haswell") || !strcasecmp(core, "Zen"));
}

#endif
