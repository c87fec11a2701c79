/*
 * omp_defaults.h - the OpenMP runtime's wait policy, set before it loads
 * (omp_defaults.c says why), and OpenMP calls that work whether or not the
 * runtime is loaded (libdlaccel does not link it; the cpu plugin does).
 */
#ifndef DLA_CORE_OMP_DEFAULTS_H
#define DLA_CORE_OMP_DEFAULTS_H

/* Once per process, before the first plugin is loaded: sets GOMP_SPINCOUNT
 * when neither it nor OMP_WAIT_POLICY is set and libgomp is not loaded. */
void dla__omp_defaults(void);
/* omp_set_num_threads(n) for the calling thread when libgomp is loaded;
 * nothing otherwise. */
void dla__omp_set_num_threads(int n);

#endif
