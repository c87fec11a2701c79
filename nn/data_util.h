/*
 * data_util.h - what the data files share: host memory through the
 * library's allocation hook, the thread's error message, and small helpers
 * for tensors made from host data on a chosen device.
 */
#ifndef DLA_NN_DATA_UTIL_H
#define DLA_NN_DATA_UTIL_H

#include <dlaccel.h>
#include <stddef.h>

/* Host memory through dla_set_allocator's hook (size 0 still allocates). */
void *dla__data_malloc(size_t size);
void *dla__data_calloc(size_t count, size_t size);
/* Keeps ptr on failure. */
void *dla__data_realloc(void *ptr, size_t size);
void dla__data_free(void *ptr);

/* Sets the calling thread's dla_last_error() and returns status. */
dla_status dla__data_fail(dla_status status, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* "3x100" for error messages; buf of DLA__DATA_DIMS_BUF bytes. */
#define DLA__DATA_DIMS_BUF 160
const char *dla__data_dims_str(char *buf, int ndims, const int64_t *dims);

/* Tensors the data code holds are plain +1 references that no scope owns,
 * whatever scopes the calling thread has open (so that a half-made result
 * can be dropped on failure, and the dispatch thread's batches can cross
 * threads). Hold one made by ops with
 *     dla_scope_begin(); t = dla__data_hold(ops...); dla_scope_end();
 * and hand it to the caller with dla__data_deliver. */
dla_tensor *dla__data_hold(dla_tensor *t); /* dla_tensor_retain, named for its job */
/* Gives a held t to the calling code by dlaccel.h's rules (the innermost
 * open scope owns it, if any). Consumes t; NULL stays NULL. Fails only
 * when the open scope cannot grow: t is then dropped and the result is
 * the library's static out-of-memory tensor (releasing it does nothing),
 * with the thread's error set. */
dla_tensor *dla__data_deliver(dla_tensor *t);
/* Delivers the held ts[0..n-1] (NULL entries stay NULL). When one cannot be
 * handed over, all of ts become NULL (those handed over belong to the open
 * scope, which will release them) and the error, naming op, is returned. */
dla_status dla__data_deliver_all(int n, dla_tensor **ts, const char *op);

/* dla_tensor_from_host on dev (NULL: the current device), held, leaving
 * the calling thread's current device as it was. */
dla_tensor *dla__data_from_host(dla_device *dev, const void *data, dla_dtype dtype,
                                const char *format, int ndims, const int64_t *dims);

/* The dtype named by MATLAB's class name ("single"); -1 when none is. */
int dla__data_dtype_by_name(const char *name);

/* The folder walkers' pieces (image and file datastores): "dir/name" in
 * a dla__data_malloc'd string (NULL when out of memory), and the order
 * their paths are sorted in, byte order of char * elements (qsort). */
char *dla__data_path_join(const char *dir, const char *name);
int dla__data_path_cmp(const void *a, const void *b);

#endif
