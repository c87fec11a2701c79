/*
 * blas_defaults.h - which kernels OpenBLAS runs, set before it loads
 * (blas_defaults.c says why).
 */
#ifndef DLA_CORE_BLAS_DEFAULTS_H
#define DLA_CORE_BLAS_DEFAULTS_H

/* Once per process, before the first plugin is loaded: sets
 * OPENBLAS_CORETYPE from the CPU's instruction set when the user did not
 * set it and OpenBLAS is not loaded. */
void dla__blas_defaults(void);

#endif
