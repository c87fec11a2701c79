/*
 * conformance.h - the plugin conformance suite behind `dlaccel
 * check-plugin`: every kernel of the plugin ABI on random shapes, dtypes,
 * strides, broadcasts and options, run on the device under test and on
 * the cpu plugin (the oracle) with the same inputs, and the outputs
 * compared within stated tolerances.
 *
 * A case is one call of one kernel. It draws everything from its own
 * random stream, seeded by (seed, kernel, case number), so one failing
 * case reruns alone: the failure line says how. Both devices are driven
 * only through their plugin tables (mem_alloc, copy_to_device, the
 * kernel, copy_to_host), so device memory the host cannot address is
 * tested like any other, and the whole output buffer is compared: an
 * element outside the output view must come back as it went in.
 *
 * Calls go through cf_call, which takes a decline (DLA_ERR_UNSUPPORTED) as
 * the core takes it: a call with a non-dense view is made again with dense
 * copies (core/kernel_views.h says which views a kernel has and writes),
 * and a decline the core would not rescue (of dense views, of the retry,
 * of strided_copy or gemm) fails the case. Dtypes (and random's two
 * distributions) take turns by case number, so every one both devices run
 * is covered; the kernel's line says what ran and what was skipped, why.
 * The one refusal the core leaves to a kernel, an index outside its target
 * (dla_index), is a case of its own; other refusals are not asked of
 * plugins (the core never sends such calls).
 *
 * Tolerances (cf_tol), per element, with eps the dtype's machine epsilon
 * and ulp(v) = eps * max(|v|, smallest normal):
 *   exact      copies, casts, fills, comparisons, where, max/min, gather,
 *              the index outputs, and the elementwise ops IEEE rounds
 *              correctly (add, sub, mul, neg, abs, relu, square, ...);
 *   k ulps     the functions OpenCL and CUDA let be approximate: div,
 *              sqrt and reciprocal 3, exp, log and expm1 4, sin, cos and
 *              sigmoid 5, tanh 6, erf and pow 16 (of the oracle's result);
 *   sums       4 (n + 4) eps M, where n is the number of terms and M the
 *              same sum over the absolute values (computed by the oracle
 *              on |inputs|): any order of summation stays inside it;
 *   random     exact: the stream is defined to the bit (plugin.h).
 * NaN must meet NaN (any sign and payload), an infinity the same one.
 */
#ifndef DLA_TOOLS_CONFORMANCE_H
#define DLA_TOOLS_CONFORMANCE_H

#include <dlaccel.h>
#include <dlaccel/device_table.h>
#include <dlaccel/plugin.h>

#include <stdint.h>
#include <stdio.h>

/* The two devices of a case: the one under test and the oracle. */
enum { CF_DUT = 0, CF_ORACLE = 1 };

/* A device as the suite drives it: the library's handle, and the plugin
 * table and context its kernels are called through (<dlaccel/device_table.h>). */
typedef struct cf_device {
    dla_device *handle;
    const dla_plugin *table;
    void *ctx;
    int abi_minor; /* the minor its plugin answered */
} cf_device;

/* The table, context and minor of d. */
cf_device cf_device_of(dla_device *d);

typedef struct cf_suite {
    cf_device *dev[2];
    uint64_t seed;
    int cases;           /* cases per kernel */
    int only_case;       /* -1: all */
    const char *manifest; /* for the rerun line */
    FILE *out;           /* failure lines */
    int tap;             /* lines start with "# " */
    int max_reports;     /* failure lines per kernel */
} cf_suite;

/* A buffer on both devices with the host image both started from. */
typedef struct cf_buf {
    dla_dtype dtype;
    int64_t n; /* elements */
    unsigned char *host;
    dla_mem mem[2];
} cf_buf;

#define CF_MAX_BUFS 16

typedef struct cf_case {
    const cf_suite *suite;
    const char *kernel;
    int index;
    uint64_t rng;
    char what[640]; /* the call, for the failure line */
    cf_buf bufs[CF_MAX_BUFS];
    int nbufs;
    dla_status st[2]; /* the calls' statuses (cf_record) */
    char msg[320];    /* the device under test's message */
    int failed;       /* this case failed (reported) */
    int skipped;      /* nothing the device supports was drawn */
    int dtype;        /* the dtype the case ran (-1: none said) */
    int variant;      /* random: 1 for normal, else 0 */
    int retried;      /* the device declined and the dense retry ran */
    int refused;      /* both devices refused the call with one status */
} cf_case;

/* ------------------------------------------------------------ randomness */

uint64_t cf_rnd(cf_case *c);
int64_t cf_int(cf_case *c, int64_t lo, int64_t hi); /* lo..hi */
double cf_unif(cf_case *c, double lo, double hi);
int cf_chance(cf_case *c, int percent);

/* ------------------------------------------------------------- devices */

/* Nonzero when both devices run kernel natively for dtype: the member is
 * in the table and supports() agrees. */
int cf_both_support(const cf_case *c, dla_kernel kernel, dla_dtype dtype);
/* A float dtype both support for kernel, or -1: single and double take
 * turns by case number, so each gets half the cases. Sets c->dtype. */
int cf_float_dtype(cf_case *c, dla_kernel kernel);
/* Any dtype both support for kernel, in turns by case number, or -1. Sets
 * c->dtype. */
int cf_any_dtype(cf_case *c, dla_kernel kernel);

/* Calls kernel on device k with args (its argument struct; fill,
 * strided_copy and cast take dla_view[2], y then x, and fill value), the
 * views already holding device k's memory. On the device under test a
 * DLA_ERR_UNSUPPORTED is taken as the core takes it (conformance_call.c):
 * a call with a non-dense view is made again with dense copies; a
 * decline the core would not rescue fails the case. */
dla_status cf_call(cf_case *c, int k, dla_kernel kernel, const void *args, double fill_value);

#define CF_TABLE(c, k) ((c)->suite->dev[k]->table)
#define CF_CTX(c, k) ((c)->suite->dev[k]->ctx)

/* ------------------------------------------------------------- buffers */

/* A buffer of n elements (at least 1) on both devices, filled with random
 * values in lo..hi (integers in that range, logicals 0/1, a percentage of
 * exact zeros) and uploaded to both. NULL when a device refused (the case
 * is then failed and reported). */
cf_buf *cf_buf_new(cf_case *c, dla_dtype t, int64_t n, double lo, double hi, int zero_percent);
/* Sets element i of the host image (then call cf_buf_upload). */
void cf_buf_set(cf_buf *b, int64_t i, double v);
double cf_buf_get(const cf_buf *b, int64_t i);
int cf_buf_upload(cf_case *c, cf_buf *b);
/* Both devices' contents after their queued work (malloc'd; NULL on a
 * failure, reported). */
int cf_buf_download(cf_case *c, const cf_buf *b, void **got, void **want);

/* ---------------------------------------------------------------- views */

/* A view of dims over a buffer to be made: random dim order, gaps, an
 * offset, and with broadcast some dims of stride 0. Returns the elements
 * its buffer needs. */
int64_t cf_view(cf_case *c, dla_view *v, dla_dtype t, int ndims, const int64_t *dims,
                int broadcast);
/* The buffer position of element l (column-major) of v. */
int64_t cf_view_at(const dla_view *v, int64_t l);
/* A dense column-major view; returns its elements. */
int64_t cf_dense(dla_view *v, dla_dtype t, int ndims, const int64_t *dims);
/* Random dims: ndims in 0..max_ndims, each 1..max_dim (some 1, a few 0). */
void cf_dims(cf_case *c, int *ndims, int64_t *dims, int max_ndims, int64_t max_dim,
             int zero_percent);
int64_t cf_numel(int ndims, const int64_t *dims);
/* "3x4" into buf. */
const char *cf_dims_str(char *buf, size_t size, int ndims, const int64_t *dims);
/* "[off 2 st 1,3]" into buf. */
const char *cf_view_str(char *buf, size_t size, const dla_view *v);

/* ----------------------------------------------------------- comparing */

typedef struct cf_tol {
    double ulps;       /* of the oracle's value */
    const double *mag; /* per element of the buffer: M_i (NULL: none) */
    double terms;      /* n of the sum bound 4 (n + 4) eps M_i */
} cf_tol;

#define CF_EXACT ((cf_tol){0, NULL, 0})

/* Appends to the case's description (printf). */
void cf_describe(cf_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Compares b on the two devices: elements inside view (NULL: all) within
 * tol, the rest exactly. Returns 0 and reports the first difference. */
int cf_compare(cf_case *c, const cf_buf *b, const dla_view *view, cf_tol tol);
/* Records the status of a call on device k (and, for the device under
 * test, its message). */
void cf_record(cf_case *c, int k, dla_status s);
/* The two recorded calls must agree: both succeed, or both refuse with
 * the same status. Returns nonzero when both succeeded; a disagreement
 * fails the case. */
int cf_agree(cf_case *c);
/* Reports a failure of the case (printf). */
void cf_fail(cf_case *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A buffer on the oracle only, holding |b|'s host image: for the
 * magnitude runs behind the sum tolerances. */
cf_buf *cf_buf_abs(cf_case *c, const cf_buf *b);
/* The oracle's contents of b as doubles (malloc'd; NULL on a failure). */
double *cf_oracle_values(cf_case *c, const cf_buf *b);

/* ---------------------------------------------------------------- cases */

typedef void (*cf_case_fn)(cf_case *c);

typedef struct cf_kernel {
    const char *name;
    dla_kernel kernel; /* DLA_KERNEL_COUNT: memory members */
    cf_case_fn run;
} cf_kernel;

/* The kernels in ABI order (conformance_*.c). */
extern const cf_kernel cf_kernels[];
extern const int cf_kernel_count;

void cf_case_memory(cf_case *c);
void cf_case_fill(cf_case *c);
void cf_case_strided_copy(cf_case *c);
void cf_case_cast(cf_case *c);
void cf_case_unary(cf_case *c);
void cf_case_binary(cf_case *c);
void cf_case_ternary(cf_case *c);
void cf_case_reduce(cf_case *c);
void cf_case_gemm(cf_case *c);
void cf_case_fused(cf_case *c);
void cf_case_fused_reduce(cf_case *c);
void cf_case_fused_reduce_pair(cf_case *c);
void cf_case_conv_forward(cf_case *c);
void cf_case_conv_backward_data(cf_case *c);
void cf_case_conv_backward_filter(cf_case *c);
void cf_case_pool_forward(cf_case *c);
void cf_case_pool_backward(cf_case *c);
void cf_case_gather(cf_case *c);
void cf_case_scatter_add(cf_case *c);
void cf_case_random(cf_case *c);
void cf_case_fused_multi(cf_case *c);
void cf_case_conv_forward_fused(cf_case *c);
void cf_case_conv_backward_data_fused(cf_case *c);

/* Frees the case's buffers on both devices. */
void cf_case_end(cf_case *c);

#endif
