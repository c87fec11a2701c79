/*
 * dlaccel.h - deep learning in C, recorded once and replayed on any device.
 *
 * This is the only header a dlaccel user includes. It is also the contract:
 * every function is documented where it is declared, with who owns what and
 * which errors it returns. Anything not declared here is private.
 *
 * A first program
 * ---------------
 *     #include <dlaccel.h>
 *
 *     dla_scope_begin();                         // temporaries die at end
 *     dla_rng_seed(42);
 *     dla_tensor *x = dla_rand(DLA_F32, "CB", DLA_DIMS(4, 8));
 *     dla_tensor *w = dla_randn(DLA_F32, "", DLA_DIMS(3, 4));
 *     dla_tensor *y = dla_mtimes(w, x);          // 3x8 on the default device
 *     dla_tensor *s = dla_sum(dla_exp(y), DLA_DIMS(1));
 *     if (dla_tensor_status(s) != DLA_OK)        // errors are sticky: one check
 *         fprintf(stderr, "%s\n", dla_last_error());
 *     float host[8];
 *     dla_tensor_to_host(s, host, sizeof host);
 *     dla_scope_end();
 *
 * Conventions
 * -----------
 * - Dims follow MATLAB: the first dim varies fastest (column-major). A tensor
 *   may carry MATLAB format labels ("SSCB", "CB", "CBT"...): S spatial,
 *   C channel, B batch, T time, U unspecified, kept in the canonical order
 *   S..., C, B, T, U. "" means unformatted.
 * - Ownership: a returned tensor is a +1 reference owned by the caller, unless
 *   a scope is open, in which case the innermost scope owns it and releases it
 *   when it closes (dla_keep() takes it out). Parameters are borrowed.
 *   dla_tensor_release(NULL) does nothing.
 * - Sticky errors: an op never returns NULL. An op that fails returns an
 *   error tensor carrying the status and the message; an op given an error
 *   tensor returns that error unchanged. Check dla_tensor_status() once, at
 *   the end. dla_last_error() holds the newest message of this thread.
 * - Indices and dims arguments are 1-based where they name a dimension (as in
 *   MATLAB: dim 1 is the fastest), 0-based where they index elements.
 */
#ifndef DLACCEL_H
#define DLACCEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(DLA_BUILDING_LIBRARY)
#define DLA_API __attribute__((visibility("default")))
#else
#define DLA_API
#endif

/* ---------------------------------------------------------------- version */

#define DLA_VERSION_MAJOR 0
#define DLA_VERSION_MINOR 1
#define DLA_VERSION_PATCH 0

/* The library's version as "major.minor.patch"; a static string. */
DLA_API const char *dla_version_string(void);
/* The library's version as numbers; any pointer may be NULL. */
DLA_API void dla_version(int *major, int *minor, int *patch);

/* ----------------------------------------------------------------- status */

/* One list for the codes and their strings; append only (values are ABI). */
#define DLA_STATUS_LIST(X)                                                     \
    X(DLA_OK, "ok")                                                            \
    X(DLA_ERR_INVALID_ARGUMENT, "invalid argument")                            \
    X(DLA_ERR_SHAPE, "shape mismatch")                                         \
    X(DLA_ERR_FORMAT, "invalid format")                                        \
    X(DLA_ERR_DTYPE, "unsupported data type")                                  \
    X(DLA_ERR_OUT_OF_MEMORY, "out of memory")                                  \
    X(DLA_ERR_DEVICE, "device error")                                          \
    X(DLA_ERR_NO_DEVICE, "no device available")                                \
    X(DLA_ERR_PLUGIN, "plugin error")                                          \
    X(DLA_ERR_UNSUPPORTED, "operation not supported")                          \
    X(DLA_ERR_STATE, "invalid state")                                          \
    X(DLA_ERR_IO, "input/output error")

typedef enum dla_status {
#define DLA__STATUS_ENUM(name, str) name,
    DLA_STATUS_LIST(DLA__STATUS_ENUM)
#undef DLA__STATUS_ENUM
    DLA_STATUS_COUNT
} dla_status;

/* A static string describing the code ("shape mismatch"); "unknown status"
 * for a value outside the list. */
DLA_API const char *dla_status_str(dla_status status);

/* The newest error message of the calling thread, naming the op, the
 * argument and the shapes ("dla_add: argument b: dims 3x4 cannot broadcast
 * against 5x4"). "" when no error happened since dla_clear_error(). The
 * string stays valid until the thread's next failing call. */
DLA_API const char *dla_last_error(void);
/* The status that goes with dla_last_error(); DLA_OK when none. */
DLA_API dla_status dla_last_status(void);
/* Forgets the calling thread's last error. */
DLA_API void dla_clear_error(void);
/* For code built on dlaccel (layers, data loaders): records status and the
 * formatted message as the thread's last error, as the library's own
 * functions do, and returns status. */
DLA_API dla_status dla_set_error(dla_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ------------------------------------------------------------- allocation */

/* Every host allocation of the library (and of Jansson, and of the plugins'
 * host-side bookkeeping) goes through this function, as in Lua: size 0 frees
 * ptr and returns NULL; otherwise it behaves like realloc(ptr, size). Return
 * NULL to refuse; the library then fails the call with
 * DLA_ERR_OUT_OF_MEMORY and leaks nothing. */
typedef void *(*dla_alloc_fn)(void *user, void *ptr, size_t size);

/* Installs fn (NULL restores the default, realloc/free). Call it before any
 * other dlaccel call, or between workloads with no live tensors: memory is
 * always freed through the function that allocated it. The blocks of the
 * last released handles are kept for a while to catch stale handles
 * (docs/checks.md); a user's fn is given a fixed number of them at once
 * (about a thousand small blocks), so its count of live blocks stays steady. */
DLA_API void dla_set_allocator(dla_alloc_fn fn, void *user);

/* Host memory through the installed hook, for code built on dlaccel that
 * wants its allocations counted and failable like the library's own.
 * dla_malloc(0) returns a valid block; dla_realloc keeps ptr on failure;
 * dla_free(NULL) does nothing. */
DLA_API void *dla_malloc(size_t size);
DLA_API void *dla_realloc(void *ptr, size_t size);
DLA_API void dla_free(void *ptr);

/* ------------------------------------------------------------------ dtypes */

/* Values are ABI and never reused; room is left for half types. */
#define DLA_DTYPE_LIST(X)                                                      \
    X(DLA_F32, "single", 4)                                                    \
    X(DLA_F64, "double", 8)                                                    \
    X(DLA_I32, "int32", 4)                                                     \
    X(DLA_U8, "uint8", 1)                                                      \
    X(DLA_BOOL, "logical", 1)

typedef enum dla_dtype {
#define DLA__DTYPE_ENUM(name, str, size) name,
    DLA_DTYPE_LIST(DLA__DTYPE_ENUM)
#undef DLA__DTYPE_ENUM
    DLA_DTYPE_COUNT
} dla_dtype;

/* MATLAB's class name of the dtype ("single"); "unknown" when out of range. */
DLA_API const char *dla_dtype_name(dla_dtype dtype);
/* Bytes per element; 0 when out of range. */
DLA_API size_t dla_dtype_size(dla_dtype dtype);

/* ----------------------------------------------------------------- devices */

/* The most dims a tensor may have. */
#define DLA_MAX_DIMS 8

typedef struct dla_device dla_device;

/* The default device: the first entry of DLACCEL_DEVICE that loads and has a
 * device, or, when it is unset, the device of the highest-priority plugin
 * that loads. NULL when none can be had (dla_last_error() says why: each
 * entry tried and its reason). Devices live until the process ends. */
DLA_API dla_device *dla_device_default(void);

/* The device named "plugin:index" or "plugin" (its first device), loading the
 * plugin if needed. NULL with DLA_ERR_NO_DEVICE and the reason otherwise. */
DLA_API dla_device *dla_device_get(const char *name);

/* All devices of all plugins that load (loads every plugin). */
DLA_API int dla_device_count(void);
/* The i-th device in plugin discovery order; NULL when out of range. */
DLA_API dla_device *dla_device_at(int i);

/* "cpu:0". */
DLA_API const char *dla_device_name(const dla_device *dev);
/* The device's own description ("AMD EPYC 9R14, 2 threads"). */
DLA_API const char *dla_device_description(const dla_device *dev);
/* The plugin's name ("cpu"). */
DLA_API const char *dla_device_plugin(const dla_device *dev);
/* The device type from the plugin ("cpu", "gpu", "test"). */
DLA_API const char *dla_device_type(const dla_device *dev);
/* Bytes of device memory; 0 when the plugin does not say. */
DLA_API uint64_t dla_device_memory(const dla_device *dev);

/* The device new tensors of this thread are created on; the default device
 * until dla_device_set_current() is called. NULL when no device is had. */
DLA_API dla_device *dla_device_current(void);
/* Makes dev the calling thread's current device (NULL: back to default). */
DLA_API void dla_device_set_current(dla_device *dev);
/* Waits until all queued work on dev is done. */
DLA_API dla_status dla_device_sync(dla_device *dev);
/* Gives back to the system the memory dev keeps for reuse: the blocks of
 * freed tensors that its plugin holds in a cache or pool (the cpu plugin's
 * cache of large blocks, the cuda plugin's pool), as torch.cuda.empty_cache
 * does. Live tensors and the arenas of accelerated functions' replay plans
 * are untouched. dev NULL: every device opened so far. *released (may be
 * NULL): the bytes given back. Waits for dev's queued work first. A plugin
 * that keeps nothing gives 0. The cpu plugin also gives back on its own the
 * pages of blocks unused for DLACCEL_CPU_CACHE_IDLE seconds
 * (docs/environment.md). */
DLA_API dla_status dla_device_release_cached(dla_device *dev, size_t *released);

/* How the OpenMP runtime's idle threads wait (docs/environment.md): before
 * loading its first plugin the library sets GOMP_SPINCOUNT to a short spin
 * (spinning threads lose their cores on a busy machine), unless the user set
 * OMP_WAIT_POLICY or GOMP_SPINCOUNT, DLACCEL_OMP_SPIN is "off", or the
 * program loaded the runtime itself (it links OpenMP or OpenBLAS), when it
 * cannot. dla_openmp_spin_count() is the count the library would set
 * ("1000", or DLACCEL_OMP_SPIN's), NULL when it sets none: a program that
 * links OpenMP can set it itself and re-execute. dla_openmp_wait() says
 * what was decided (a static string). */
DLA_API const char *dla_openmp_spin_count(void);
DLA_API const char *dla_openmp_wait(void);

/* Which kernels OpenBLAS (the cpu plugin's GEMM) runs (docs/environment.md):
 * OpenBLAS picks them from the CPU's model number when it is loaded, and
 * falls back to SSE3 kernels on a model newer than its release. Before
 * loading its first plugin the library sets OPENBLAS_CORETYPE from the
 * CPU's instruction set ("SkylakeX" for AVX-512, "Haswell" for AVX2 with
 * FMA), unless the user set OPENBLAS_CORETYPE, DLACCEL_OPENBLAS_CORE is
 * "off", or the program loaded OpenBLAS itself, when it cannot.
 * dla_openblas_coretype() is the value the library would set, NULL when it
 * sets none: a program that links OpenBLAS can set it itself and
 * re-execute. dla_openblas_core() says what was decided (a static
 * string). */
DLA_API const char *dla_openblas_coretype(void);
DLA_API const char *dla_openblas_core(void);

/* ----------------------------------------------------------------- tensors */

typedef struct dla_tensor dla_tensor;

/* Expands to the (ndims, dims) argument pair: DLA_DIMS(28, 28, 1, 128). */
#define DLA_DIMS(...)                                                          \
    (int)(sizeof((const int64_t[]){__VA_ARGS__}) / sizeof(int64_t)),          \
        (const int64_t[]) { __VA_ARGS__ }

/* Tensor creation. All create on the calling thread's current device.
 * format: MATLAB labels or "" / NULL for unformatted. It must have one label
 * per dim; dims past the given ones count as 1, so "SSCB" with dims 28x28
 * means 28x28x1x1 (MATLAB's trailing singletons). A format out of canonical
 * order ("CSSB") reorders the data into canonical order, as dlarray does.
 * Errors: DLA_ERR_FORMAT (bad labels), DLA_ERR_INVALID_ARGUMENT (ndims out of
 * 0..DLA_MAX_DIMS, negative dim), DLA_ERR_OUT_OF_MEMORY, DLA_ERR_NO_DEVICE. */

/* Copies numel elements of dtype from host memory in column-major order
 * (logical: any nonzero byte is true, stored as 1). */
DLA_API dla_tensor *dla_tensor_from_host(const void *data, dla_dtype dtype, const char *format,
                                         int ndims, const int64_t *dims);
DLA_API dla_tensor *dla_zeros(dla_dtype dtype, const char *format, int ndims, const int64_t *dims);
DLA_API dla_tensor *dla_ones(dla_dtype dtype, const char *format, int ndims, const int64_t *dims);
/* value is converted as dla_cast converts a double: to int32 and uint8
 * truncated toward zero and saturated, NaN to 0 (MATLAB's int32(2.7) is 3,
 * dlaccel's 2); to logical value != 0, so NaN gives true (MATLAB's
 * logical(NaN) is an error). */
DLA_API dla_tensor *dla_full(double value, dla_dtype dtype, const char *format, int ndims,
                             const int64_t *dims);
/* Uniform in [0, 1) and standard normal, from the thread's Philox4x32-10
 * stream (dla_rng_seed). Float dtypes only. */
DLA_API dla_tensor *dla_rand(dla_dtype dtype, const char *format, int ndims, const int64_t *dims);
DLA_API dla_tensor *dla_randn(dla_dtype dtype, const char *format, int ndims, const int64_t *dims);

/* Adds a reference; returns t. NULL-safe. */
DLA_API dla_tensor *dla_tensor_retain(dla_tensor *t);
/* Drops a reference; the storage is freed with the last view on it. Never
 * call it on a handle a scope owns unless you dla_keep() it first: such a
 * release, and a release of a tensor already released, is refused and
 * logged (DLA_ERR_INVALID_ARGUMENT as the last error; docs/checks.md). A
 * released tensor given to an op reads as an error tensor saying so. */
DLA_API void dla_tensor_release(dla_tensor *t);

/* Queries. On an error tensor: status is the error, ndims 0, numel 0. */
DLA_API dla_status dla_tensor_status(const dla_tensor *t);
/* For code built on dlaccel: an error tensor carrying status and the
 * formatted message (also the thread's last error), owned like any op
 * result: by the innermost scope, or the caller. */
DLA_API dla_tensor *dla_error_tensor(dla_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The message of an error tensor; "" for a good one. */
DLA_API const char *dla_tensor_error(const dla_tensor *t);
DLA_API dla_dtype dla_tensor_dtype(const dla_tensor *t);
DLA_API int dla_tensor_ndims(const dla_tensor *t);
/* Size of dim (1-based); 1 past ndims, as in MATLAB's size(X, d). */
DLA_API int64_t dla_tensor_dim(const dla_tensor *t, int dim);
/* Copies ndims dims into dims (DLA_MAX_DIMS room); returns ndims. dims
 * may be NULL: the count alone. */
DLA_API int dla_tensor_dims(const dla_tensor *t, int64_t *dims);
DLA_API int64_t dla_tensor_numel(const dla_tensor *t);
/* The labels, "" when unformatted; valid as long as t. */
DLA_API const char *dla_tensor_format(const dla_tensor *t);
/* The 1-based dim carrying label ('C', 'B', 'T'); the first for 'S'; 0 if none. */
DLA_API int dla_tensor_find_dim(const dla_tensor *t, char label);
DLA_API dla_device *dla_tensor_device(const dla_tensor *t);
/* 1 when the elements lie densely in column-major order. */
DLA_API int dla_tensor_is_contiguous(const dla_tensor *t);
/* Writes "28x28x1x128 single SSCB on cpu:0" into buf (snprintf rules). */
DLA_API int dla_tensor_describe(const dla_tensor *t, char *buf, size_t size);

/* Copies the elements to host memory, column-major, dense. bytes must be at
 * least numel * dtype size, and dst not NULL unless t is empty
 * (DLA_ERR_INVALID_ARGUMENT otherwise). Waits for the device. Returns the
 * tensor's status if it is an error tensor. */
DLA_API dla_status dla_tensor_to_host(const dla_tensor *t, void *dst, size_t bytes);
/* Reads one element (0-based linear index, column-major) as a double. For
 * tests and printing, not for loops: each call is a device round trip.
 * NaN when there is no such element, with the reason as the last error
 * (DLA_ERR_INVALID_ARGUMENT for an index outside 0..numel-1, any index of
 * an empty tensor; an error tensor's own status and message). */
DLA_API double dla_tensor_item(const dla_tensor *t, int64_t index);

/* A dense copy of t on dev (NULL: current device), same dtype and format.
 * Works between any two devices, through the host when neither can reach
 * the other. */
DLA_API dla_tensor *dla_tensor_to_device(dla_tensor *t, dla_device *dev);
/* A dense copy on the same device (a new tensor on t's memory when t is
 * already dense: values never change in place). */
DLA_API dla_tensor *dla_contiguous(dla_tensor *t);
/* A copy converted to dtype (float to int rounds toward zero, as C does,
 * saturates, and sends NaN to 0; MATLAB's int32() rounds half away from
 * zero instead). */
DLA_API dla_tensor *dla_cast(dla_tensor *t, dla_dtype dtype);

/* Views share storage with t and never copy, except dla_reshape of a tensor
 * whose strides do not allow it (it copies then). */

/* New dims with the same numel (one may be -1: inferred; DLA_ERR_SHAPE when
 * the other dims' product does not divide numel). format labels the
 * result ("" unformatted); MATLAB's reshape of a formatted array. */
DLA_API dla_tensor *dla_reshape(dla_tensor *t, const char *format, int ndims,
                                const int64_t *dims);
/* Reorders dims: order is a permutation of 1..ndims (MATLAB permute), with
 * ndims at least t's dims, not counting an unformatted t's trailing
 * singletons (a 3x4x1 takes the order [2 1], as MATLAB's 3x4 does). The
 * labels of a formatted tensor move with their dims; an order that breaks the
 * canonical label order (putting C before S) is DLA_ERR_FORMAT. */
DLA_API dla_tensor *dla_permute(dla_tensor *t, int ndims, const int64_t *order);
/* Drops dims of size 1 (and their labels). An unformatted matrix is left
 * as it is, as MATLAB's squeeze leaves it: with at most two dims before its
 * trailing singletons, a 1 x N row stays 1 x N (a 1 x 1 x N gives N, an
 * N x 1 column). A formatted tensor loses every dim of size 1. */
DLA_API dla_tensor *dla_squeeze(dla_tensor *t);
/* Elements start, start+step, ... < stop along dim (1-based). start and
 * stop are 0-based element indices, stop exclusive and clamped to the dim
 * (DLA_END: to the end); step >= 1. An empty range gives a dim of size 0.
 * A dim past an unformatted t's (up to DLA_MAX_DIMS) is of size 1, as in
 * MATLAB (X(:, :, 1) of a matrix); the result has dim dims. */
#define DLA_END INT64_MAX
DLA_API dla_tensor *dla_slice(dla_tensor *t, int dim, int64_t start, int64_t step, int64_t stop);

/* ------------------------------------------------------------------ scopes */

/* Opens a scope on the calling thread: tensors returned by dlaccel calls
 * until the matching dla_scope_end() belong to it and are released then.
 * Scopes nest up to 64 deep; opening one never allocates. Deeper nesting
 * returns DLA_ERR_STATE (dla_scope_end() must still be called; it is then
 * harmless). */
DLA_API dla_status dla_scope_begin(void);
/* Releases what the innermost scope owns and closes it. With no scope open
 * it does nothing but log the error (DLA_ERR_STATE as the last error).
 * Code of yours that dlaccel calls (a model function given to dla_feval or
 * dla_accelerate, a custom layer's callbacks, a datastore's read or
 * transform function, a mini_batch_fcn, an OutputFcn) runs in a scope
 * dlaccel opened: a dla_scope_end there with no begin of its own is
 * refused the same way (that scope stays open), and the call that ran the
 * callback fails with DLA_ERR_STATE naming it, as it does when the
 * callback leaves a scope of its own open (closed then). */
DLA_API void dla_scope_end(void);
/* Takes t out of the innermost scope: its reference moves to the enclosing
 * scope, or to the caller when there is none. Returns t. Error tensors may
 * be kept too, so a caller can read their status after the scope. */
DLA_API dla_tensor *dla_keep(dla_tensor *t);
/* The other direction, for functions that make tensors with +1 references
 * and hand them out as the library's ops do: gives the caller's reference
 * to the innermost scope when one is open (else it stays the caller's).
 * Returns t; when the scope cannot take it (out of memory) t is released
 * and an out-of-memory error tensor is returned. NULL-safe. */
DLA_API dla_tensor *dla_scope_adopt(dla_tensor *t);
/* How many scopes are open on the calling thread (refused ones beyond the
 * 64 included): 0 outside any. A function that must leave them balanced
 * can compare it before and after; a test harness closes what a failed
 * test left open (tests/testutil.h, tu_teardown). */
DLA_API int dla_scope_depth(void);

/* -------------------------------------------------------------- randomness */

/* Seeds the calling thread's Philox4x32-10 stream and resets its counter.
 * Same seed, same numbers, on every device. The default seed is 0. */
DLA_API void dla_rng_seed(uint64_t seed);
/* The stream's position, to save and restore it (MATLAB's rng state). */
DLA_API void dla_rng_get(uint64_t *seed, uint64_t *counter);
DLA_API void dla_rng_set(uint64_t seed, uint64_t counter);

/* --------------------------------------------------------------------- ops */

/* Elementwise, with MATLAB's implicit expansion: each dim of a and b is equal
 * or 1. Float dtypes; a and b must have the same dtype and device. The result
 * is dense; its format is the operands' (they must agree when both have one),
 * and dims of 1 past its labels are trailing singletons, dropped. */
DLA_API dla_tensor *dla_add(dla_tensor *a, dla_tensor *b);
DLA_API dla_tensor *dla_sub(dla_tensor *a, dla_tensor *b);
DLA_API dla_tensor *dla_mul(dla_tensor *a, dla_tensor *b);  /* .* */
DLA_API dla_tensor *dla_div(dla_tensor *a, dla_tensor *b);  /* ./ */
DLA_API dla_tensor *dla_max2(dla_tensor *a, dla_tensor *b); /* max(a, b) */
DLA_API dla_tensor *dla_min2(dla_tensor *a, dla_tensor *b);
DLA_API dla_tensor *dla_pow(dla_tensor *a, dla_tensor *b);  /* .^ */

DLA_API dla_tensor *dla_neg(dla_tensor *x);
DLA_API dla_tensor *dla_exp(dla_tensor *x);
DLA_API dla_tensor *dla_log(dla_tensor *x);
DLA_API dla_tensor *dla_sqrt(dla_tensor *x);
DLA_API dla_tensor *dla_abs(dla_tensor *x);
DLA_API dla_tensor *dla_sin(dla_tensor *x);
DLA_API dla_tensor *dla_cos(dla_tensor *x);
DLA_API dla_tensor *dla_tanh(dla_tensor *x);
DLA_API dla_tensor *dla_sigmoid(dla_tensor *x);
DLA_API dla_tensor *dla_relu(dla_tensor *x);
DLA_API dla_tensor *dla_square(dla_tensor *x);
/* -1, 0 or 1 (NaN stays NaN). */
DLA_API dla_tensor *dla_sign(dla_tensor *x);
DLA_API dla_tensor *dla_erf(dla_tensor *x);
/* x .^ p for a scalar p. */
DLA_API dla_tensor *dla_pows(dla_tensor *x, double p);
/* x * scale + shift, one kernel. */
DLA_API dla_tensor *dla_affine(dla_tensor *x, double scale, double shift);

/* Reductions over the listed dims (1-based; ndims 0 means all dims). The
 * reduced dims stay with size 1, as in MATLAB, and keep their labels. */
DLA_API dla_tensor *dla_sum(dla_tensor *x, int ndims, const int64_t *dims);
DLA_API dla_tensor *dla_mean(dla_tensor *x, int ndims, const int64_t *dims);
/* max and min: a NaN among the reduced elements makes the result NaN
 * (MATLAB's max skips NaN by default; dla_max2 of two tensors does). The
 * gradient is shared evenly among the elements that attain the result
 * (two tied maxima get half each; the others get 0, even where the
 * result's gradient is infinite), and is NaN throughout a slice whose
 * result is NaN. Over a dim of no elements the result has size 0 there,
 * as MATLAB's: the max of a 0x3 along dim 1 is 0x3 (its sum is 1x3
 * zeros, its mean 1x3 NaN). */
DLA_API dla_tensor *dla_max(dla_tensor *x, int ndims, const int64_t *dims);
DLA_API dla_tensor *dla_min(dla_tensor *x, int ndims, const int64_t *dims);

/* Matrix product of 2-D a (MxK) and b (KxN; trailing dims of 1 allowed, as
 * MATLAB's): MxN, unformatted. */
DLA_API dla_tensor *dla_mtimes(dla_tensor *a, dla_tensor *b);
/* Page-wise products over dims 3.. (MATLAB pagemtimes), with transposes
 * ("none" / "transpose") and implicit expansion of the page dims. */
DLA_API dla_tensor *dla_pagemtimes(dla_tensor *a, const char *transa, dla_tensor *b,
                                   const char *transb);

/* ------------------------------------- plugins and discovery (introspection) */

/* What `dlaccel devices` shows, for tools and for a program that wants to
 * explain why it runs where it runs. Discovery (reading the manifests) runs
 * on first use of any of these or of the device functions; a plugin's
 * library is loaded only when one of its devices is needed, so before
 * dla_device_count() (which loads them all) a manifest may still be FOUND.
 * Strings returned here live until the process ends. */

/* What became of a manifest found during discovery. Append only. */
#define DLA_MANIFEST_STATE_LIST(X)                                             \
    X(DLA_MANIFEST_FOUND, "found")         /* read; library not loaded yet */  \
    X(DLA_MANIFEST_LOADED, "loaded")       /* library loaded, devices listed */\
    X(DLA_MANIFEST_FAILED, "failed")       /* library, ABI, init or devices */ \
    X(DLA_MANIFEST_DISABLED, "disabled")   /* in DLACCEL_PLUGINS_DISABLE */    \
    X(DLA_MANIFEST_DUPLICATE, "duplicate") /* same file again, or name taken */\
    X(DLA_MANIFEST_INVALID, "invalid")     /* bad JSON or a bad field */

typedef enum dla_manifest_state {
#define DLA__MANIFEST_STATE_ENUM(name, str) name,
    DLA_MANIFEST_STATE_LIST(DLA__MANIFEST_STATE_ENUM)
#undef DLA__MANIFEST_STATE_ENUM
    DLA_MANIFEST_STATE_COUNT
} dla_manifest_state;

/* "loaded"; "unknown" when out of range. */
DLA_API const char *dla_manifest_state_name(dla_manifest_state state);

/* A folder of the plugin search path: the DLACCEL_PLUGIN_PATH entries in
 * order, then the installed folder. Fields are only ever appended. */
typedef struct dla_manifest_folder_info {
    size_t struct_size;    /* the caller sets sizeof(dla_manifest_folder_info) */
    const char *path;      /* as given */
    const char *origin;    /* "DLACCEL_PLUGIN_PATH" or "installed" */
    int manifest_count;    /* *.json files in it; -1 when it could not be read */
    const char *error;     /* why it could not be read ("No such file or
                            * directory"); "" when it was read */
} dla_manifest_folder_info;

/* Number of folders searched (runs discovery). */
DLA_API int dla_manifest_folder_count(void);
/* Fills the members of *info that lie within info->struct_size for folder i
 * (0-based). DLA_ERR_INVALID_ARGUMENT when i is out of range or info is
 * NULL; DLA_ERR_OUT_OF_MEMORY when discovery could not run. */
DLA_API dla_status dla_manifest_folder_get(int i, dla_manifest_folder_info *info);

/* A manifest found during discovery, in discovery order (folders in search
 * order, files by name). Fields are only ever appended; a field the
 * manifest could not supply is "" (strings), 0 (numbers), -1 (answers). */
typedef struct dla_manifest_info {
    size_t struct_size;        /* the caller sets sizeof(dla_manifest_info) */
    const char *path;          /* the manifest file as found */
    int folder;                /* index for dla_manifest_folder_get() */
    const char *plugin;        /* plugin.name */
    const char *library;       /* plugin.library_path, resolved */
    const char *abi_declared;  /* plugin.abi_version as written ("1.0") */
    int priority;              /* plugin.priority (higher wins) */
    int device_type_count;
    const char *const *device_types; /* plugin.device_types */
    const char *description;   /* plugin.description */
    dla_manifest_state state;
    /* Why it is not FOUND or LOADED: the field and what is wrong, the
     * library and dlerror(), the plugin's init message, ...; "" otherwise. */
    const char *reason;
    int abi_major, abi_minor;  /* the ABI the plugin answered; -1 until loaded */
    int device_count;          /* devices it offers; -1 until loaded */
} dla_manifest_info;

/* Number of manifests found (runs discovery, loads nothing). */
DLA_API int dla_manifest_count(void);
/* Fills the members of *info within info->struct_size for manifest i.
 * DLA_ERR_INVALID_ARGUMENT when i is out of range or info is NULL;
 * DLA_ERR_OUT_OF_MEMORY when discovery could not run. */
DLA_API dla_status dla_manifest_get(int i, dla_manifest_info *info);

/* Why the default device is the default: "DLACCEL_DEVICE entry 'cpu'",
 * "highest priority (100)", with the entries or plugins passed over and
 * why. When there is no default device, the error dla_device_default()
 * reports. Resolves the default device if that has not happened yet. */
DLA_API const char *dla_device_default_reason(void);

/* More of what the plugin says about a device (dla_plugin_device_info):
 * parallel units, 0 when unknown; 1 when device memory is host memory;
 * free-form "key=value; ..." properties, "" when none. */
DLA_API int dla_device_compute_units(const dla_device *dev);
DLA_API int dla_device_host_addressable(const dla_device *dev);
DLA_API const char *dla_device_properties(const dla_device *dev);

#ifdef __cplusplus
}
#endif

/* The op families, one header each; a user still includes only this one. */
#include <dlaccel/autodiff.h> /* dla_feval, dla_gradient */
#include <dlaccel/ode.h>      /* dla_ode45: neural ODEs */
#include <dlaccel/conv.h>     /* dla_conv, dla_transpconv */
#include <dlaccel/nnops.h>    /* activations, normalization, pooling, dropout, fullyconnect */
#include <dlaccel/loss.h>     /* losses, one-hot, concatenation, padding, indexing */
#include <dlaccel/accel.h>    /* dla_accelerate: the trace cache */
#include <dlaccel/data.h>     /* IDX files, mini-batch queue, sequences, waveforms */
#include <dlaccel/net.h>      /* dla_net (dlnetwork), layers, tables, save/load */
#include <dlaccel/optim.h>    /* sgdmupdate, adamupdate, rmspropupdate, dlupdate, clipping */
#include <dlaccel/train.h>    /* trainnet, trainingOptions, the training progress display */
#include <dlaccel/parallel.h> /* spmd world: rank, size, allreduce, broadcast, DataQueue */

#endif /* DLACCEL_H */
