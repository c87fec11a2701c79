/*
 * dlaccel/plugin.h - the device plugin ABI.
 *
 * This is the only header a plugin author includes. A plugin is a shared
 * object that exports one symbol, dlaccel_plugin_init, and is found through a
 * JSON manifest (docs/plugins.md). It never links against libdlaccel: the
 * core hands it a host table (logging, errors, allocation) at load time.
 *
 * Stability rules (as SQLite's sqlite3_vfs):
 * - every table and argument struct starts with struct_size;
 * - members are only ever appended, each block marked with the ABI minor
 *   version that added it;
 * - the host calls a member only when it lies within the plugin's
 *   struct_size, and a plugin reads an argument member only when it lies
 *   within that argument's struct_size;
 * - optional members may be NULL; the default is written beside each.
 *
 * Execution model: each opened device has one in-order queue. Kernels and
 * copies are enqueued and may complete asynchronously, but each starts only
 * after the previous one finished (the cpu fallback relies on it); sync()
 * waits for all of them. copy_to_host() is the exception: it returns when
 * the host memory holds the data. The host may call members from several
 * threads at once (each thread its own tensors); a plugin serializes what
 * it shares. A plugin never prints, exits or aborts: it returns a status and
 * describes the failure through host->error(), starting the message with
 * the plugin's name ("cuda conv_forward: ...").
 *
 * Versions: a plugin answers, in init, the minor it implements, written as
 * a number in its source (not DLA_PLUGIN_ABI_MINOR, which grows when the
 * plugin is rebuilt against a newer header without growing the plugin).
 * Op values (unary, binary) are appended in later minors, and the host
 * passes a value only to a plugin that answered the minor that added it
 * (older ones get that op on the cpu plugin), so a plugin meets no op it
 * does not know. Each kernel (its DLA_KERNEL_LIST row names the minor that
 * added it) and each member of ABI 1.3 and later is used only with a
 * plugin that answered that minor or a later one, whatever its
 * struct_size; a plugin fills no member newer than the minor it answers.
 * A manifest's abi_version is the major.minor the plugin answers; only the
 * major is checked before loading, and init's answer decides.
 *
 * What the host sends: output views never have stride 0; GEMM's C never
 * overlaps A or B; each member says which views may alias (exactly: same
 * mem, offset, dims and strides) and the others never overlap an output,
 * while inputs may overlap each other (x .* x passes one view twice).
 * Kernels may be called on empty views (numel 0) and must then do nothing.
 * Arguments always have the shapes and dtypes this header describes: a
 * plugin need not check them beyond the errors a member names (a position
 * outside its dim, an index with SUM), though it may refuse what it cannot
 * take with DLA_ERR_INVALID_ARGUMENT.
 *
 * Views are general (slices, permutations, broadcasts: a CBT input of a
 * 1-d convolution arrives with x strides 6,1,3). Any kernel member that
 * takes views, except strided_copy, may answer DLA_ERR_UNSUPPORTED (with
 * host->error, before writing anything) for a call in which some view is
 * not dense (strides[0] == 1 and strides[d] == strides[d-1] * dims[d-1];
 * any offset): the host then copies those views into dense buffers on the
 * same device, calls once more, and copies the written ones back. A
 * decline of that second call, of a call whose views were all dense, of
 * strided_copy (how the host makes views dense) or of gemm fails the
 * user's op.
 *
 * Device memory is an opaque dla_mem handle that the core never
 * dereferences. Kernel arguments address it as (handle, element offset,
 * strides); all offsets and strides are counted in elements, dims are
 * column-major (dim 0 varies fastest), and a stride may be 0 (broadcast) but
 * not negative. Views passed to one kernel have the same dtype unless the
 * member says otherwise.
 */
#ifndef DLACCEL_PLUGIN_H
#define DLACCEL_PLUGIN_H

#include <dlaccel.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI this header describes. A plugin answers the version it
 * implements, as numbers of its own (#define MYPLUGIN_ABI_MINOR 4), not
 * these macros: rebuilt against a newer header, a plugin that answered
 * DLA_PLUGIN_ABI_MINOR would claim op values it has never heard of, and an
 * op it does not know fails the user's op instead of falling back. The
 * major must equal the host's; the minor may be lower than the host's
 * (the host then holds back what is newer: see the top of this file) or
 * higher (the host ignores what it does not know). */
#define DLA_PLUGIN_ABI_MAJOR 1
#define DLA_PLUGIN_ABI_MINOR 9

#define DLA_PLUGIN_EXPORT __attribute__((visibility("default")))

/* An opaque handle to device memory, owned by the plugin. */
typedef struct dla_mem_s *dla_mem;

/* Log levels for host->log. */
typedef enum dla_log_level {
    DLA_LOG_ERROR = 1,
    DLA_LOG_WARN = 2,
    DLA_LOG_INFO = 3,
    DLA_LOG_DEBUG = 4
} dla_log_level;

/* ------------------------------------------------------------ host table */

/* What the core gives a plugin at init. Valid until the process ends. */
typedef struct dla_plugin_host {
    size_t struct_size;
    /* The highest ABI the host speaks. */
    uint32_t abi_major;
    uint32_t abi_minor;
    /* Writes a line to the dlaccel log (shown at DLACCEL_LOG >= level),
     * prefixed with the plugin's name. */
    void (*log)(dla_log_level level, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
    /* Records the message of a failure for the calling thread and returns
     * status, so a plugin writes: return host->error(DLA_ERR_DEVICE, ...). */
    dla_status (*error)(dla_status status, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));
    /* Host memory for the plugin's bookkeeping and host-resident buffers,
     * through the user's allocation hook. align is a power of two (0: the
     * default of malloc). NULL when refused: report DLA_ERR_OUT_OF_MEMORY. */
    void *(*alloc)(size_t size, size_t align);
    /* Frees what alloc returned; NULL does nothing. */
    void (*free)(void *ptr);
    /* ---- fields above are ABI 1.0 ---- */
} dla_plugin_host;

/* ------------------------------------------------------------- devices */

typedef struct dla_plugin_device_info {
    size_t struct_size;
    /* Human-readable device name ("AMD EPYC 9R14"). */
    char description[128];
    /* "cpu", "gpu", "accelerator", "test". */
    char type[16];
    /* Bytes of memory the device can allocate; 0 when unknown. */
    uint64_t memory_bytes;
    /* Parallel units (cores, SMs, compute units); 0 when unknown. */
    int32_t compute_units;
    /* 1 when a dla_mem handle is a host pointer the host may read. The core
     * never relies on it; tools show it. */
    int32_t host_addressable;
    /* Free-form "key=value; key=value" properties for `dlaccel devices`. */
    char properties[256];
    /* ---- fields above are ABI 1.0 ---- */
} dla_plugin_device_info;

/* ------------------------------------------------------ kernel arguments */

/* The closed set of kernels; supports() is asked per (kernel, dtype).
 * One row per kernel, X(id, name, member, minor): its dla_kernel value, its
 * name in logs and tools, the dla_plugin member that runs it, and the ABI
 * minor that added it (the host uses it only with a plugin that answered
 * that minor or later). The core's dispatch, the registry, the conformance
 * suite and the kernel table of docs/plugins.md are all read from these
 * rows; a macro given to the list may end in "..." to take only the
 * columns it needs. */
#define DLA_KERNEL_LIST(X)                                                     \
    X(DLA_KERNEL_FILL, "fill", fill, 0)                                        \
    X(DLA_KERNEL_STRIDED_COPY, "strided_copy", strided_copy, 0)                \
    X(DLA_KERNEL_UNARY, "unary", unary, 0)                                     \
    X(DLA_KERNEL_BINARY, "binary", binary, 0)                                  \
    X(DLA_KERNEL_REDUCE, "reduce", reduce, 0)                                  \
    X(DLA_KERNEL_GEMM, "gemm", gemm, 0)                                        \
    X(DLA_KERNEL_CAST, "cast", cast, 0)                                        \
    /* ---- kernels above are ABI 1.0 ---- */                                  \
    X(DLA_KERNEL_TERNARY, "ternary", ternary, 1)                               \
    X(DLA_KERNEL_CONV_FORWARD, "conv_forward", conv_forward, 1)                \
    X(DLA_KERNEL_CONV_BACKWARD_DATA, "conv_backward_data", conv_backward_data, 1) \
    X(DLA_KERNEL_CONV_BACKWARD_FILTER, "conv_backward_filter", conv_backward_filter, 1) \
    X(DLA_KERNEL_POOL_FORWARD, "pool_forward", pool_forward, 1)                \
    X(DLA_KERNEL_POOL_BACKWARD, "pool_backward", pool_backward, 1)             \
    X(DLA_KERNEL_GATHER, "gather", gather, 1)                                  \
    X(DLA_KERNEL_SCATTER_ADD, "scatter_add", scatter_add, 1)                   \
    /* ---- kernels above are ABI 1.1 ---- */                                  \
    X(DLA_KERNEL_FUSED, "fused", fused, 2)                                     \
    /* ---- kernels above are ABI 1.2 ---- */                                  \
    X(DLA_KERNEL_FUSED_REDUCE, "fused_reduce", fused_reduce, 3)                \
    X(DLA_KERNEL_RANDOM_UNIFORM, "random_uniform", random, 3)                  \
    X(DLA_KERNEL_RANDOM_NORMAL, "random_normal", random, 3)                    \
    /* ---- kernels above are ABI 1.3 ---- */                                  \
    X(DLA_KERNEL_FUSED_REDUCE_PAIR, "fused_reduce_pair", fused_reduce, 4)   \
    /* ---- kernels above are ABI 1.4 ---- */                                  \
    X(DLA_KERNEL_FUSED_MULTI, "fused_multi", fused_multi, 8)                   \
    /* ---- kernels above are ABI 1.8 ---- */                                  \
    X(DLA_KERNEL_CONV_FORWARD_FUSED, "conv_forward_fused", conv_forward_fused, 9) \
    X(DLA_KERNEL_CONV_BACKWARD_DATA_FUSED, "conv_backward_data_fused",          \
      conv_backward_data_fused, 9)

typedef enum dla_kernel {
#define DLA__KERNEL_ENUM(name, ...) name,
    DLA_KERNEL_LIST(DLA__KERNEL_ENUM)
#undef DLA__KERNEL_ENUM
    DLA_KERNEL_COUNT
} dla_kernel;

/* A strided view of device memory. */
typedef struct dla_view {
    size_t struct_size;
    dla_mem mem;
    dla_dtype dtype;
    int32_t ndims;                 /* 0..DLA_MAX_DIMS; 0 is a scalar */
    int64_t offset;                /* elements from the start of mem */
    int64_t dims[DLA_MAX_DIMS];    /* dim 0 fastest */
    int64_t strides[DLA_MAX_DIMS]; /* elements; >= 0 */
    /* ---- fields above are ABI 1.0 ---- */
} dla_view;

/* y = f(x), elementwise; alpha/beta are per-op parameters (see list).
 * Precision: alpha and beta are first rounded to the dtype (a single kernel
 * computes with (float)alpha), each op is evaluated in the dtype and its
 * result rounded once: so neg, abs, relu, sign, step, square and
 * leaky_relu ((float)alpha * x in single, one rounding) are exact, affine
 * may round once (an fma) or twice, and the library functions (exp, log,
 * sin, ...) are within a few ulps (docs/plugins.md §9 gives the bounds
 * check-plugin holds a plugin to). supports() is asked with x's dtype. */
#define DLA_UNARY_LIST(X)                                                      \
    X(DLA_UNARY_NEG, "neg")         /* -x */                                   \
    X(DLA_UNARY_EXP, "exp")                                                    \
    X(DLA_UNARY_LOG, "log")                                                    \
    X(DLA_UNARY_SQRT, "sqrt")                                                  \
    X(DLA_UNARY_ABS, "abs")                                                    \
    X(DLA_UNARY_SIN, "sin")                                                    \
    X(DLA_UNARY_COS, "cos")                                                    \
    X(DLA_UNARY_TANH, "tanh")                                                  \
    X(DLA_UNARY_SIGMOID, "sigmoid") /* 1 / (1 + exp(-x)) */                    \
    X(DLA_UNARY_RELU, "relu")       /* max(x, 0); relu(NaN) = 0 */                            \
    X(DLA_UNARY_AFFINE, "affine")   /* x * alpha + beta */                     \
    /* ---- ops above are ABI 1.0 ---- */                                      \
    X(DLA_UNARY_ERF, "erf")                                                    \
    X(DLA_UNARY_SIGN, "sign")       /* -1, 0, 1; NaN stays NaN */              \
    X(DLA_UNARY_POWS, "pows")       /* x ^ alpha */                            \
    X(DLA_UNARY_LEAKY_RELU, "leaky_relu") /* x > 0 ? x : alpha * x */          \
    X(DLA_UNARY_ELU, "elu")         /* x > 0 ? x : alpha * (exp(x) - 1) */     \
    X(DLA_UNARY_STEP, "step")       /* x > alpha ? 1 : 0 */                    \
    X(DLA_UNARY_RECIPROCAL, "reciprocal") /* 1 / x */                          \
    X(DLA_UNARY_SQUARE, "square")   /* x * x */

typedef enum dla_unary_op {
#define DLA__UNARY_ENUM(name, str) name,
    DLA_UNARY_LIST(DLA__UNARY_ENUM)
#undef DLA__UNARY_ENUM
    DLA_UNARY_COUNT
} dla_unary_op;

typedef struct dla_unary_args {
    size_t struct_size;
    dla_unary_op op;
    double alpha;
    double beta;
    dla_view y; /* same dims and dtype as x; may alias x exactly (in place) */
    dla_view x;
    /* ---- fields above are ABI 1.0 ---- */
} dla_unary_args;

/* z = f(a, b), elementwise. a and b have z's ndims and dims; broadcasting is
 * expressed by stride 0 on the expanded dims. MAX and MIN ignore a NaN
 * operand when the other is a number (MATLAB's max(a, b)). a and b share a
 * float dtype, and so does z except for the comparisons, which write z as
 * DLA_BOOL; supports() is asked with a's dtype (single or double, never
 * DLA_BOOL), so a plugin that answers yes for single takes the single
 * comparisons too. */
#define DLA_BINARY_LIST(X)                                                     \
    X(DLA_BINARY_ADD, "add")                                                   \
    X(DLA_BINARY_SUB, "sub")                                                   \
    X(DLA_BINARY_MUL, "mul")                                                   \
    X(DLA_BINARY_DIV, "div")                                                   \
    X(DLA_BINARY_MAX, "max")                                                   \
    X(DLA_BINARY_MIN, "min")                                                   \
    X(DLA_BINARY_POW, "pow")                                                   \
    /* ---- ops above are ABI 1.0; comparisons write z as DLA_BOOL (0/1) ---- */\
    X(DLA_BINARY_EQ, "eq")                                                     \
    X(DLA_BINARY_NE, "ne")                                                     \
    X(DLA_BINARY_LT, "lt")                                                     \
    X(DLA_BINARY_LE, "le")                                                     \
    X(DLA_BINARY_GT, "gt")                                                     \
    X(DLA_BINARY_GE, "ge")

typedef enum dla_binary_op {
#define DLA__BINARY_ENUM(name, str) name,
    DLA_BINARY_LIST(DLA__BINARY_ENUM)
#undef DLA__BINARY_ENUM
    DLA_BINARY_COUNT
} dla_binary_op;

typedef struct dla_binary_args {
    size_t struct_size;
    dla_binary_op op;
    dla_view z; /* may alias a or b exactly (never with a comparison: z is DLA_BOOL) */
    dla_view a;
    dla_view b;
    /* ---- fields above are ABI 1.0 ---- */
} dla_binary_args;

/* y = reduce(x) over the dims where y's dim is 1 and x's is not; y has x's
 * ndims. MAX and MIN optionally write, in index, the 0-based position of the
 * chosen element within the reduced sub-block (column-major over the reduced
 * dims; the first one on ties; NaN wins). An index with SUM or MEAN is
 * DLA_ERR_INVALID_ARGUMENT. An empty reduced block gives 0 (SUM), NaN (MEAN)
 * and DLA_ERR_SHAPE (MAX, MIN). y and index overlap neither x nor each
 * other. supports() is asked with x's dtype (float). */
/* DLA_REDUCE_LIST and dla_reduce_op (SUM, MEAN, MAX, MIN, COUNT) are
 * defined once, in dlaccel/parallel.h (through dlaccel.h), as the
 * collectives take the same ops. */

typedef struct dla_reduce_args {
    size_t struct_size;
    dla_reduce_op op;
    dla_view y;
    dla_view x;
    /* Optional (index.mem == NULL: not wanted); DLA_I32, y's dims. */
    dla_view index;
    /* ---- fields above are ABI 1.0 ---- */
} dla_reduce_args;

/* C[p] = alpha * op(A[p]) * op(B[p]) + beta * C[p] for p in 0..batch-1,
 * column-major, op() transposing when trans_* is nonzero. op(A) is m x k,
 * op(B) is k x n, C is m x n. Page p of X starts at X.offset + p * X.batch_stride
 * (0 broadcasts one page). lda >= rows of A as stored. beta == 0 means C is
 * written without being read (NaN in C does not propagate). */
typedef struct dla_gemm_operand {
    dla_mem mem;
    int64_t offset;
    int64_t ld;
    int64_t batch_stride;
} dla_gemm_operand;

typedef struct dla_gemm_args {
    size_t struct_size;
    dla_dtype dtype;
    int32_t trans_a;
    int32_t trans_b;
    int64_t m, n, k;
    int64_t batch;
    double alpha;
    double beta;
    dla_gemm_operand a, b, c;
    /* ---- fields above are ABI 1.0 ---- */
} dla_gemm_args;

/* ---------------------------------------------------- ABI 1.1 arguments */

/* z = cond ? a : b elementwise (WHERE). cond is DLA_BOOL; a, b and z share a
 * float dtype; all have z's dims (stride 0 broadcasts). z overlaps none of
 * cond, a and b. supports() is asked with z's dtype (the float one, never
 * cond's DLA_BOOL). */
#define DLA_TERNARY_LIST(X) X(DLA_TERNARY_WHERE, "where")

typedef enum dla_ternary_op {
#define DLA__TERNARY_ENUM(name, str) name,
    DLA_TERNARY_LIST(DLA__TERNARY_ENUM)
#undef DLA__TERNARY_ENUM
    DLA_TERNARY_COUNT
} dla_ternary_op;

typedef struct dla_ternary_args {
    size_t struct_size;
    dla_ternary_op op;
    dla_view z;
    dla_view cond;
    dla_view a;
    dla_view b;
    /* ---- fields above are ABI 1.1 ---- */
} dla_ternary_args;

/* N-d convolution (cross-correlation, as MATLAB's dlconv), nspatial 1..3.
 * Layouts are MATLAB's, column-major:
 *   x: in_size[0..n-1] x C x B                     (C = in_channels)
 *   w: filter_size[0..n-1] x C/G x F/G x G         (F = out_channels, G groups)
 *   y: out_size[0..n-1] x F x B
 * Output channel f of group g = f / (F/G) reads input channels
 * g*(C/G) .. (g+1)*(C/G)-1. Along each spatial dim i:
 *   y[o] = sum_k w[k] * x[o*stride - pad_begin + k*dilation]  (outside x: 0)
 * and out_size = floor((in + pad_begin + pad_end - dilation*(fs-1) - 1) /
 * stride) + 1 (the host computes it; pad_end is implied).
 * conv_forward:         y = conv(x, w) + bias (bias: F elements; mem NULL: none)
 * conv_backward_data:   x = dL/dx from y = dL/dy and w (x is written, not added to)
 * conv_backward_filter: w = dL/dw from x and y = dL/dy (w is written)
 * Views may have any strides: a CBT input arrives permuted (x strides
 * 6,1,3 for 3 channels, batch 2 and 5 time steps). A plugin may answer
 * DLA_ERR_UNSUPPORTED for non-dense ones and the host calls again with
 * dense copies (see the top of this file). The view written overlaps none
 * of the others. supports() is asked with dtype (float). */
typedef struct dla_conv_args {
    size_t struct_size;
    dla_dtype dtype;
    int32_t nspatial;
    int64_t batch;
    int64_t in_channels;
    int64_t out_channels;
    int64_t groups;
    int64_t in_size[3];
    int64_t out_size[3];
    int64_t filter_size[3];
    int64_t stride[3];
    int64_t dilation[3];
    int64_t pad_begin[3];
    dla_view x;
    dla_view w;
    dla_view y;
    dla_view bias;
    /* ---- fields above are ABI 1.1 ---- */
} dla_conv_args;

/* Pooling over nspatial (1..3) spatial dims of x (in_size... x channels x
 * batch, channels and batch may be any count). Windows are placed as in
 * conv with dilation 1; MAX ignores padding, AVG divides by the full window
 * (padding counts as zeros, MATLAB's default) unless avg_exclude_pad.
 * pool_forward writes y and, for MAX with index.mem != NULL, the 0-based
 * linear position within x's spatial block (int32) of each maximum (first
 * on ties). pool_backward writes x = dL/dx from y = dL/dy (and index for
 * MAX, required there); overlapping windows add. The views written (y and
 * index, or x) overlap none of the views read. supports() is asked with
 * dtype (float). */
#define DLA_POOL_LIST(X)                                                       \
    X(DLA_POOL_MAX, "max")                                                     \
    X(DLA_POOL_AVG, "avg")

typedef enum dla_pool_mode {
#define DLA__POOL_ENUM(name, str) name,
    DLA_POOL_LIST(DLA__POOL_ENUM)
#undef DLA__POOL_ENUM
    DLA_POOL_COUNT
} dla_pool_mode;

typedef struct dla_pool_args {
    size_t struct_size;
    dla_pool_mode mode;
    dla_dtype dtype;
    int32_t nspatial;
    int32_t avg_exclude_pad;
    int64_t channels;
    int64_t batch;
    int64_t in_size[3];
    int64_t out_size[3];
    int64_t window[3];
    int64_t stride[3];
    int64_t pad_begin[3];
    dla_view x;
    dla_view y;
    dla_view index;
    /* ---- fields above are ABI 1.1 ---- */
} dla_pool_args;

/* Along dim (0-based), with index a DLA_I32 view of 0-based positions:
 *   gather:      y[.., i, ..]  = x[.., index[i], ..]     (y's dim = len(index))
 *   scatter_add: y[.., index[i], ..] += x[.., i, ..]     (x's dim = len(index);
 *                repeated positions add up, in order of i; y is not cleared
 *                first)
 * index[i] is the i-th element of the index view in column-major order over
 * its dims, and len(index) its element count: the view may be shaped 1xN
 * or Nx1 as well as N, and have any strides (positions two elements apart,
 * an offset), so read it through its dims and strides. x and y are equal
 * in every dim but dim; either may have fewer ndims than the other (and
 * than dim + 1), a dim past a view's ndims counting as 1: a gather from x
 * 1x3 into y 1x3x2 along dim 2 is sent with x.ndims 2. An index outside
 * the target dim is DLA_ERR_INVALID_ARGUMENT. x and y share a dtype (any
 * for gather, a float one for scatter_add), and supports() is asked with
 * it, never with the index's. y overlaps neither x nor index. */
typedef struct dla_index_args {
    size_t struct_size;
    int32_t dim;
    dla_view y;
    dla_view x;
    dla_view index;
    /* ---- fields above are ABI 1.1 ---- */
} dla_index_args;

/* ---------------------------------------------------- ABI 1.2 arguments */

/* A fused elementwise program: several elementwise steps (unary, binary,
 * where) over views of one shape in one pass, so intermediates never reach
 * memory. The planner of dla_accelerate makes them from chains of such
 * launches whose intermediate results feed only the next step.
 *
 * The program is a list of instructions over registers, one register per
 * instruction. For every element position p of y (column-major over y's
 * dims), in order:
 *
 *     r[j] = op_j(operand_j0(p), operand_j1(p), operand_j2(p))  for j = 0 .. ninsns-1
 *     y[p] = r[ninsns - 1]
 *
 * An operand is src = k >= 0, register r[k] of an earlier instruction
 * (k < j), or src = -1 - i, input i at p. Kinds:
 *   DLA_FUSED_UNARY   op is a dla_unary_op on src[0], with alpha and beta as
 *                     dla_unary_args's;
 *   DLA_FUSED_BINARY  op is a dla_binary_op, a = src[0], b = src[1]; a
 *                     comparison's register holds 1 or 0 (its logical
 *                     result converted to dtype);
 *   DLA_FUSED_WHERE   src[0] ? src[1] : src[2], the condition true where it
 *                     is nonzero (as the ternary kernel's where).
 * Registers hold dtype, and every result is rounded to dtype as the
 * one-op kernel rounds it: a program gives the same bits as its
 * instructions launched one by one (that is how the host checks it).
 * Instructions use only op values of the ABI minor the plugin answered.
 *
 * Inputs have y's ndims, dims and dtype (float); stride 0 broadcasts. y may
 * alias an input exactly (same memory, offset and strides) and overlaps no
 * input otherwise. A plugin evaluates the program however it likes (in
 * blocks of elements with the program interpreted per block, as the cpu
 * plugin does, or compiled once per program). */
#define DLA_FUSED_MAX_INPUTS 8
#define DLA_FUSED_MAX_INSNS 8

typedef enum dla_fused_kind {
    DLA_FUSED_UNARY,
    DLA_FUSED_BINARY,
    DLA_FUSED_WHERE
} dla_fused_kind;

typedef struct dla_fused_insn {
    int32_t kind;       /* dla_fused_kind */
    int32_t op;         /* a dla_unary_op or dla_binary_op; unused by WHERE */
    int32_t src[3];     /* k >= 0: register k (< this instruction's index); -1 - i: input i */
    double alpha, beta; /* unary parameters */
} dla_fused_insn;

typedef struct dla_fused_args {
    size_t struct_size;
    dla_dtype dtype;  /* DLA_F32 or DLA_F64: y, every input and every register */
    int32_t ninputs;  /* 0 .. DLA_FUSED_MAX_INPUTS */
    int32_t ninsns;   /* 1 .. DLA_FUSED_MAX_INSNS */
    dla_view y;
    dla_view inputs[DLA_FUSED_MAX_INPUTS];
    dla_fused_insn insns[DLA_FUSED_MAX_INSNS];
    /* ---- fields above are ABI 1.2 ---- */
} dla_fused_args;

/* ---------------------------------------------------- ABI 1.3 arguments */

/* A fused program summed (or averaged) over some dims, in one pass: the
 * program's values never reach memory. Batchnorm's variance, sum((x - m)^2)
 * per channel, and its backward's sum(dy .* x) are such reductions; the
 * planner makes one from a chain of elementwise launches whose result only
 * a SUM or MEAN reduce reads.
 *
 * program is a dla_fused_args whose y gives the space the program runs
 * over: its ndims and dims only (program.y.mem, offset and strides are not
 * read, and nothing is written there). The inputs have those dims, as in
 * the fused kernel. y has program.y's ndims; each of its dims equals the
 * space's or is 1, and the 1s are summed over:
 *
 *     y[q] = sum over the positions p of the space that map to q of r(p)
 *
 * with r(p) the program's last register at p (rounded to dtype as the fused
 * kernel rounds it); MEAN divides by the count summed. The summation order
 * is the plugin's: a result is within the reduce kernel's accuracy of the
 * program written out and then reduced, not always the same bits. An empty
 * sum gives 0 (SUM) and NaN (MEAN). y overlaps no input. */
typedef struct dla_fused_reduce_args {
    size_t struct_size;
    dla_reduce_op op; /* DLA_REDUCE_SUM or DLA_REDUCE_MEAN */
    dla_fused_args program;
    dla_view y;
    /* ---- fields above are ABI 1.3 ---- */
    /* A second sum from the same pass (ABI 1.4; the host sets y2.mem only
     * where supports() says yes to DLA_KERNEL_FUSED_REDUCE_PAIR, which
     * calls the fused_reduce member): y2, of y's dims and dtype, gets
     *
     *     y2[q] = sum over the positions p that map to q of register reg2 at p
     *
     * (MEAN: divided by the same count), 0 <= reg2 < program.ninsns. One
     * pass reads the inputs once for both sums: batchnorm's sum(x - s) and
     * sum((x - s)^2), its backward's sum(g) and sum(g .* x). y2 overlaps
     * neither y nor any input. y2.mem NULL (and a struct_size that ends
     * before y2): the 1.3 kernel. */
    int32_t reg2;
    dla_view y2;
    /* ---- fields above are ABI 1.4 ---- */
} dla_fused_reduce_args;
/* Random numbers of the library's one stream, Philox4x32-10 (Salmon et
 * al., 2011), as dla_rand and dla_randn draw them: the same (seed,
 * counter) give the same bits on every device. Block b of the stream is
 * Philox4x32-10 of the counter words (counter + b as 64 bits, low word
 * first, then 0, 0) under the key (seed's low word, its high word); it
 * gives four 32-bit words w0..w3. Element i of y, in column-major order
 * over y's dims (not its memory order), is:
 *
 *   uniform, single: block i / 4, word i % 4: (w >> 8) * 2^-24
 *   uniform, double: block i / 2, words 2(i % 2), 2(i % 2) + 1 (hi, lo):
 *                    ((hi >> 5) * 2^26 + (lo >> 6)) * 2^-53
 *   normal (both):   block i / 2 gives the pair (z0, z1), element i takes
 *                    z0 when i is even, z1 when odd, rounded to y's dtype
 *                    once; u1 = 1 - u53(w0, w1), u2 = u53(w2, w3) as the
 *                    double uniform above, r = sqrt(-2 ln u1),
 *                    (z0, z1) = r (cos 2 pi u2, sin 2 pi u2)
 *
 * with ln, cos and sin not the device's library functions but the
 * polynomials of the reference implementation, <dlaccel/plugin_philox.h>
 * (installed with this header; valid C and OpenCL C, so a plugin includes
 * it or feeds its text to its device compiler), evaluated in double with
 * every operation rounded once (no contraction into fma): that is what
 * makes the bits reproducible. The kernel ids split by distribution
 * so supports() can answer each: normals need double arithmetic even for
 * single results. The host advances its stream past the blocks a draw
 * used. */
typedef enum dla_random_dist {
    DLA_RANDOM_UNIFORM, /* [0, 1) */
    DLA_RANDOM_NORMAL   /* mean 0, standard deviation 1 */
} dla_random_dist;

typedef struct dla_random_args {
    size_t struct_size;
    int32_t dist;     /* dla_random_dist */
    uint64_t seed;    /* the key */
    uint64_t counter; /* the block of element 0 */
    dla_view y;       /* DLA_F32 or DLA_F64; any strides */
    /* ---- fields above are ABI 1.3 ---- */
} dla_random_args;

/* ---------------------------------------------------- ABI 1.8 arguments */

/* A fused program with several results: y gets the last register, as in
 * the fused kernel, and extra[k] gets register extra_reg[k], at every
 * position p of y's space:
 *
 *     r[j] = op_j(...)                 for j = 0 .. program.ninsns-1
 *     program.y[p] = r[ninsns - 1]
 *     extra[k][p] = r[extra_reg[k]]    for k = 0 .. nextra-1
 *
 * So a batch normalization's per-channel arithmetic (the inverse standard
 * deviation, the scale and the shift it applies, the running statistics)
 * or an optimizer's update of one parameter (the new velocity and the new
 * value) is one launch, though each of those results is read later. The
 * planner of dla_accelerate makes them from chains of elementwise launches
 * of one shape whose intermediate results are also read after the chain.
 *
 * program is as the fused kernel's argument (registers rounded to dtype
 * as there, so the results are the bits of the steps launched one by
 * one). Each extra[k] has y's ndims, dims and dtype, 0 <= extra_reg[k] <
 * ninsns - 1, and overlaps neither y nor another extra; y and each extra
 * may alias an input exactly (same memory, offset and strides: a batch
 * normalization updates its statistics in place), and overlap no input
 * otherwise, so a plugin reads a position's inputs before it writes that
 * position's results. */
#define DLA_FUSED_MAX_EXTRA 7

typedef struct dla_fused_multi_args {
    size_t struct_size;
    dla_fused_args program;
    int32_t nextra; /* 1 .. DLA_FUSED_MAX_EXTRA */
    int32_t extra_reg[DLA_FUSED_MAX_EXTRA];
    dla_view extra[DLA_FUSED_MAX_EXTRA];
    /* ---- fields above are ABI 1.8 ---- */
} dla_fused_multi_args;

/* ---------------------------------------------------- ABI 1.9 arguments */

/* A convolution pass whose result goes at once through a fused
 * elementwise program, its epilogue. The result R is conv.y for
 * conv_forward_fused and conv.x (the input gradient) for
 * conv_backward_data_fused:
 *
 *     R          = the pass on conv          (as conv_forward, or
 *                                             conv_backward_data)
 *     epilogue.y = the program of epilogue   (as fused)
 *
 * where epilogue.inputs[conv_input] is R's very view (same mem, offset,
 * dims and strides), so the program reads the pass's result there. The
 * planner of dla_accelerate makes them from a convolution launch and the
 * fused launch right after it that reads its result: in inference a bias,
 * a batch normalization's scale and shift, a residual's addition, a relu;
 * in a gradient with respect to a network's input the relu's backward
 * mask on each input gradient. A plugin may run the program over
 * each image as soon as the pass has written it, while it is still in
 * cache, instead of in a pass of its own over memory; the results must be
 * the bits of the two launches one after the other.
 *
 * conv is as the pass's argument, with R of nspatial + 2 dims. The
 * epilogue is as fused's argument, with y and every input of R's ndims and
 * dims, so image b of each of its views is its slice b along the last
 * dim. epilogue.y may alias R or an epilogue input exactly (the first: R
 * holds the program's result after the call) and overlaps none of the
 * views the pass reads (conv.x, conv.w, conv.bias forward; conv.y, conv.w
 * backward); R overlaps no epilogue input but those that are its very
 * view. The program may read what the pass reads. supports() is asked
 * with dtype (float). */
typedef struct dla_conv_fused_args {
    size_t struct_size;
    dla_conv_args conv;
    dla_fused_args epilogue;
    int32_t conv_input; /* 0 .. epilogue.ninputs - 1 */
    /* ---- fields above are ABI 1.9 ---- */
} dla_conv_fused_args;

/* ---------------------------------------------------------- plugin table */

/* The memory of one input or result of a planned replay's run (ABI 1.5
 * plan_replay): the run reads (an input) or writes (a result buffer) only
 * bytes [first, end) of mem; no two of a run's mems share a mem. */
typedef struct dla_plan_mem {
    dla_mem mem;
    size_t first, end;
    int32_t written; /* 1: a result buffer the run writes; 0: an input it only reads */
} dla_plan_mem;

/* The table a plugin fills in dlaccel_plugin_init. All members take the
 * device context that device_open returned (void *dev). */
typedef struct dla_plugin {
    size_t struct_size;
    /* The ABI the plugin implements (major must equal the host's): its own
     * numbers, not DLA_PLUGIN_ABI_MINOR (see there). */
    uint32_t abi_major;
    uint32_t abi_minor;

    /* -- devices -- */
    /* Number of devices this plugin offers now; 0 is valid (the core then
     * logs "no device" and skips the plugin), and so is anything up to
     * 1024 (more, or less than 0, is a failure: the plugin is skipped).
     * Required. */
    dla_status (*device_count)(int *count);
    /* Describes device index (0-based) into info (whose struct_size the host
     * sets). Required. */
    dla_status (*device_info)(int index, dla_plugin_device_info *info);
    /* Opens device index; *dev is the context passed to every member below.
     * Required. */
    dla_status (*device_open)(int index, void **dev);
    /* Closes a device after sync; no call on dev follows. NULL: nothing. */
    void (*device_close)(void *dev);
    /* Last call before the library is unloaded. NULL: nothing. */
    void (*shutdown)(void);

    /* -- memory -- */
    /* Allocates bytes (> 0) of device memory, suitably aligned for every
     * dtype (64 bytes on the cpu plugin). Required. DLA_ERR_OUT_OF_MEMORY
     * when the device cannot. */
    dla_status (*mem_alloc)(void *dev, size_t bytes, dla_mem *out);
    /* Frees after pending work on mem completes. Required. */
    void (*mem_free)(void *dev, dla_mem mem);
    /* Copies bytes from host src to mem + offset_bytes. src may be reused as
     * soon as this returns. Required. */
    dla_status (*copy_to_device)(void *dev, dla_mem dst, size_t offset_bytes, const void *src,
                                 size_t bytes);
    /* Copies bytes from mem + offset_bytes to host dst; returns when dst
     * holds them (waits for queued work). Required. */
    dla_status (*copy_to_host)(void *dev, void *dst, dla_mem src, size_t offset_bytes,
                               size_t bytes);
    /* Device-to-device copy within this device. Ranges do not overlap.
     * NULL: the host goes through copy_to_host/copy_to_device. */
    dla_status (*copy_on_device)(void *dev, dla_mem dst, size_t dst_offset_bytes, dla_mem src,
                                 size_t src_offset_bytes, size_t bytes);
    /* Waits for all queued work. NULL: the device is synchronous. */
    dla_status (*sync)(void *dev);

    /* -- kernels -- */
    /* Nonzero when the kernel runs natively for dtype. NULL: every non-NULL
     * kernel member supports every dtype. Kernels not supported (or NULL)
     * run on the cpu plugin with copies; the log says so once. Which
     * operand's dtype is asked is written at each kernel's arguments (the
     * data's, never an index's or a comparison's DLA_BOOL). */
    int (*supports)(void *dev, dla_kernel kernel, dla_dtype dtype);
    /* Sets every element of y to value converted to y's dtype, as cast
     * converts: to int32 and uint8 truncating toward zero and saturating
     * (-2.5 -> 0 in uint8, 1e10 -> INT32_MAX), NaN becoming 0; to bool
     * value != 0, so NaN gives 1 (C's conversion to bool; the kernel has no
     * way to refuse it as MATLAB's logical(NaN) does). NULL: the host
     * fills on the cpu plugin and copies. */
    dla_status (*fill)(void *dev, const dla_view *y, double value);
    /* y = x elementwise between two views of equal dims and dtype; they do
     * not overlap. The one kernel that may not decline a non-dense view:
     * it is how the host makes views dense. NULL: through the cpu plugin. */
    dla_status (*strided_copy)(void *dev, const dla_view *y, const dla_view *x);
    dla_status (*unary)(void *dev, const dla_unary_args *args);   /* NULL: cpu */
    dla_status (*binary)(void *dev, const dla_binary_args *args); /* NULL: cpu */
    dla_status (*reduce)(void *dev, const dla_reduce_args *args); /* NULL: cpu */
    dla_status (*gemm)(void *dev, const dla_gemm_args *args);     /* NULL: cpu */
    /* y = (dtype of y) x, equal dims, the two dtypes may differ; float to
     * integer truncates toward zero and saturates, NaN becomes 0, to bool
     * is x != 0 (NaN gives 1, as fill). y and x do not overlap. supports()
     * is asked for both dtypes. NULL: cpu. */
    dla_status (*cast)(void *dev, const dla_view *y, const dla_view *x);
    /* ---- fields above are ABI 1.0 ---- */
    /* Each of these NULL: the kernel runs on the cpu plugin with copies. */
    dla_status (*ternary)(void *dev, const dla_ternary_args *args);
    dla_status (*conv_forward)(void *dev, const dla_conv_args *args);
    dla_status (*conv_backward_data)(void *dev, const dla_conv_args *args);
    dla_status (*conv_backward_filter)(void *dev, const dla_conv_args *args);
    dla_status (*pool_forward)(void *dev, const dla_pool_args *args);
    dla_status (*pool_backward)(void *dev, const dla_pool_args *args);
    dla_status (*gather)(void *dev, const dla_index_args *args);
    dla_status (*scatter_add)(void *dev, const dla_index_args *args);
    /* ---- fields above are ABI 1.1 ---- */
    /* Runs a fused elementwise program (see dla_fused_args). NULL: the host
     * never fuses for this device and launches the steps one by one; there
     * is no cpu fallback for it (fusing pays only where it is native). */
    dla_status (*fused)(void *dev, const dla_fused_args *args);
    /* ---- fields above are ABI 1.2 ---- */
    /* Sums a fused program over some dims (see dla_fused_reduce_args). NULL:
     * as fused, the host writes the program out and reduces it, and there is
     * no cpu fallback. */
    dla_status (*fused_reduce)(void *dev, const dla_fused_reduce_args *args);
    /* Fills y from the Philox stream (see dla_random_args); supports() is
     * asked with DLA_KERNEL_RANDOM_UNIFORM or _NORMAL. NULL (or supports()
     * saying no): the host draws the numbers itself and copies them with
     * copy_to_device, as before 1.3. */
    dla_status (*random)(void *dev, const dla_random_args *args);
    /* A planned replay of dla_accelerate begins on the calling thread:
     * every member this thread calls on dev until plan_end (nlaunches
     * kernel launches, in order, and the copies of ops that run as
     * themselves) is one sequence the plugin may enqueue without waiting
     * in between. Members keep their contracts (copy_to_host still returns
     * the data; a member that fails returns its error at once, and the
     * host then calls plan_end and stops). NULL: nothing. */
    dla_status (*plan_begin)(void *dev, int32_t nlaunches);
    /* The replay's last launch was made (or one failed): wait until the
     * sequence has completed, so that a launch that fails while running is
     * the replay's error, named in the message. Memory freed during the
     * sequence stays valid until then (mem_free's rule). Called once after
     * each plan_begin that returned DLA_OK. NULL: nothing.
     * A device whose members all run in the order they were called (one
     * queue, as mem_free, copy_to_host and sync already assume) may
     * instead return once the sequence is enqueued, as its launches
     * outside a plan return: a launch that then fails while running is the
     * error of a later member that waits (copy_to_host, sync), whose
     * message should say so. The host relies on no completion here. */
    dla_status (*plan_end)(void *dev);
    /* ---- fields above are ABI 1.3 ---- */
    /* Called instead of plan_begin where the host can promise more: the replay
     * about to begin is a run of its plan `plan` (an id the host never gives
     * another plan in the process), and makes the calls of every earlier run
     * of that plan, with the same arguments, except for the memory of the
     * run's inputs and results, mems[0 .. nmems-1] (see dla_plan_mem): where
     * an earlier run's view lay b bytes past that run's mems[i].first, in its
     * mems[i].mem, this run's lies b bytes past this run's mems[i].first, in
     * this run's mems[i].mem (first may differ from run to run, in whole
     * elements of the views there; the regions' sizes and written do not).
     * Everything else the calls touch (intermediates, constants) is the plan's
     * own and stays where it is. So the plugin may run the replay itself, as
     * it ran an earlier one: a CUDA graph captured then, over memory of its
     * own into which it copies the regions the run reads and from which it
     * copies the regions it writes. It then sets *ran to 1, and the host makes
     * none of the calls and calls plan_end. With *ran 0 a plan has begun as
     * plan_begin begins one: the host makes the calls and then calls plan_end.
     * The host calls it only for plans without random numbers and without ops
     * that run as themselves, whose inputs' memory is in no other input's or
     * constant's storage. A run that fails (a member's error, or the host's
     * own between two calls, which the plugin never hears of) may have stopped
     * part way: the plan's later runs come under a new id, so that nothing the
     * plugin kept of that run is ever asked for again. An error: as from
     * plan_begin, no plan has begun (plan_end is not called) and the replay
     * fails. NULL: plan_begin. */
    dla_status (*plan_replay)(void *dev, uint64_t plan, int32_t nlaunches, int32_t nmems,
                              const dla_plan_mem *mems, int32_t *ran);
    /* ---- fields above are ABI 1.5 ---- */

    /* -- collectives among processes on the device's own transport --
     * (ABI 1.6; NCCL on the cuda plugin.) The spmd world of
     * dlaccel/parallel.h uses them for the tensors of a collective that are
     * all on one device of this plugin, on every rank (docs/parallel.md,
     * "Devices"); otherwise, or when any member is NULL, the core copies
     * the tensors to the host and reduces them over the communicator
     * plugin. The core keeps the ranks in step: every rank calls the same
     * members in the same order, with the same counts, dtypes and roots
     * (the core has checked that they agree before it calls). */
    /* Whether the transport can run here (its library loaded): DLA_OK, or
     * an error saying why not ("cuda: NCCL: libnccl.so.2 not found").
     * Never waits; called once per device. */
    dla_status (*coll_probe)(void *dev);
    /* Writes the id of a new group into id (at most cap bytes; *bytes:
     * how many). Called on one rank, which the core then sends to every
     * other. */
    dla_status (*coll_id)(void *dev, void *id, size_t cap, size_t *bytes);
    /* Joins, as rank, the group of nranks processes that id names; every
     * member calls it with the same id (collective). It need not wait:
     * the join is complete once coll_test says so, and the group is used
     * only after. *group is passed to the members below. */
    dla_status (*coll_join)(void *dev, const void *id, size_t bytes, int32_t nranks, int32_t rank,
                            void **group);
    /* The operations, in place on device memory, enqueued in call order
     * after the work already queued on dev (so they see the results of
     * earlier kernels) and before later work. *ticket (nonzero) names the
     * operation to coll_test. count elements of dtype (DLA_F32, DLA_F64,
     * DLA_I32, DLA_U8, DLA_BOOL) at mem + offset_bytes reduced with op:
     * SUM, MAX, MIN (on DLA_BOOL: or, and), or MEAN (floats only: the sum
     * divided by nranks). */
    dla_status (*coll_allreduce)(void *dev, void *group, dla_mem mem, size_t offset_bytes,
                                 size_t count, dla_dtype dtype, dla_reduce_op op,
                                 uint64_t *ticket);
    /* bytes at root's mem + offset_bytes into every other rank's. */
    dla_status (*coll_broadcast)(void *dev, void *group, dla_mem mem, size_t offset_bytes,
                                 size_t bytes, int32_t root, uint64_t *ticket);
    /* bytes of each rank's send into recv at rank * bytes (recv holds
     * nranks * bytes; the two do not overlap). */
    dla_status (*coll_allgather)(void *dev, void *group, dla_mem send, size_t send_offset,
                                 size_t bytes, dla_mem recv, size_t recv_offset, uint64_t *ticket);
    /* *done = 1 once the operation ticket (0: the join) and every one
     * before it have completed, 0 before. Never waits. An error (a peer
     * gone, the transport's failure) leaves the group unusable: the core
     * then calls coll_leave with abort 1. */
    dla_status (*coll_test)(void *dev, void *group, uint64_t ticket, int *done);
    /* Leaves the group and frees it: after the operations complete, or,
     * with abort, at once (their results are then undefined). */
    void (*coll_leave)(void *dev, void *group, int32_t abort);
    /* ---- fields above are ABI 1.6 ---- */

    /* -- memory kept for reuse -- (ABI 1.7) */
    /* Gives back to the system the memory the plugin keeps for reuse on dev
     * (freed blocks in its pool or cache) and sets *released to the bytes
     * given back. Memory of live dla_mems, and what a plan's replay holds,
     * is untouched; later allocations work as before (they may be slower
     * while the pool fills again). dla_device_release_cached calls it.
     * NULL: the plugin keeps nothing for reuse. */
    dla_status (*mem_trim)(void *dev, size_t *released);
    /* ---- fields above are ABI 1.7 ---- */
    /* Runs a fused program that also writes some of its earlier registers
     * (see dla_fused_multi_args). NULL: the host fuses for this device only
     * chains whose intermediate results nothing else reads. */
    dla_status (*fused_multi)(void *dev, const dla_fused_multi_args *args);
    /* ---- fields above are ABI 1.8 ---- */

    /* Run a convolution pass and its epilogue (see dla_conv_fused_args).
     * NULL: the host runs the pass (conv_forward or conv_backward_data) and
     * fused one after the other, and a plan keeps them two launches. A
     * decline (DLA_ERR_UNSUPPORTED, before writing anything) does the same
     * for that call. */
    dla_status (*conv_forward_fused)(void *dev, const dla_conv_fused_args *args);
    dla_status (*conv_backward_data_fused)(void *dev, const dla_conv_fused_args *args);
    /* ---- fields above are ABI 1.9 ---- */
} dla_plugin;

/* The one symbol a plugin exports. host->abi_* is the host's highest ABI;
 * table->struct_size is the host's sizeof(dla_plugin) and the rest of the
 * table is zeroed. The plugin fills the members it has that lie within
 * table->struct_size, sets table->abi_* to the version it implements (its
 * own numbers, not the DLA_PLUGIN_ABI_* macros) and table->struct_size to
 * min(host's, its own sizeof). Return DLA_OK, or an error with
 * host->error() (the plugin is then skipped and logged). */
typedef dla_status (*dla_plugin_init_fn)(const dla_plugin_host *host, dla_plugin *table);
#define DLA_PLUGIN_INIT_SYMBOL "dlaccel_plugin_init"

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_PLUGIN_H */
