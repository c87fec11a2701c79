/*
 * ops_onehot.c - onehotencode and onehotdecode.
 *
 * Both stay on the device. Encoding compares the labels with the list of
 * class values laid along the feature dim (one broadcast comparison, then a
 * cast); decoding is a max reduction with index along the feature dim, and
 * when class values are given, a gather from their list. The class list
 * travels as an input tensor, not through the attributes, so a recorded
 * node replays from (attrs, inputs) alone.
 *
 * Encoding checks the labels first: a label that is none of the classes
 * is an error, not a column of zeros that trains towards nothing. The
 * check reads the labels to the host (4 bytes a label), so it is made
 * where labels enter a program, eagerly; while dla_accelerate records, it
 * is skipped, since a host read there would freeze the trace to that
 * call's values (the trace would be data-dependent).
 */
#include "core/alloc.h"
#include "core/error.h"
#include "core/launch.h"
#include "core/op.h"
#include "core/ops.h"
#include "core/tape.h"
#include "core/tensor.h"
#include "core/trace.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int is_float(dla_dtype d) { return d == DLA_F32 || d == DLA_F64; }

/* The feature dim (0-based) that opts asks for, or -1 with the failure. */
static int feature_dim_of(const char *op, const dla_tensor *t, const dla_onehot_options *o)
{
    int fd = o->feature_dim;
    char buf[DLA__DIMS_BUF];
    if (fd == 0) {
        const char *c = strchr(t->format, 'C');
        return c ? (int)(c - t->format) : 0;
    }
    if (fd < 1 || fd > DLA_MAX_DIMS) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: option feature_dim: %d is outside 1..%d", op, fd,
                  DLA_MAX_DIMS);
        return -1;
    }
    if (t->format[0] && fd > t->ndims) {
        dla__fail(DLA_ERR_INVALID_ARGUMENT,
                  "%s: option feature_dim: %d is past the labels of %s \"%s\"", op, fd,
                  dla__tensor_dims_str(t, buf, sizeof buf), t->format);
        return -1;
    }
    return fd - 1;
}

/* The class values as a double tensor of k elements along dim fd, on dev. */
static dla_tensor *class_list(const char *op, dla_device *dev, const int32_t *classes, int64_t k,
                              int fd)
{
    int64_t dims[DLA_MAX_DIMS];
    for (int d = 0; d < fd; d++)
        dims[d] = 1;
    dims[fd] = k;
    dla_tensor *t = dla__tensor_alloc(op, dev, DLA_F64, "", fd + 1, dims);
    double *v = dla__malloc(sizeof(double) * (size_t)k);
    if (!t || !v) {
        if (t && !v)
            dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot hold %lld class values", op, (long long)k);
        dla_tensor_release(t);
        dla__free(v);
        return dla__return(dla__error_tensor());
    }
    for (int64_t i = 0; i < k; i++)
        v[i] = classes ? (double)classes[i] : (double)i;
    dla_status st = dla__k_upload(dev, t->storage->mem, 0, v, sizeof(double) * (size_t)k);
    dla__free(v);
    if (st != DLA_OK) {
        dla__error_prefix(op);
        dla_tensor_release(t);
        return dla__return(dla__error_tensor());
    }
    return dla__return(t);
}

/* ----------------------------------------------------------------- encode */

/* Label i of the host copy raw (dtype d) as a double. */
static double label_at(const void *raw, dla_dtype d, int64_t i)
{
    switch (d) {
    case DLA_F32: return ((const float *)raw)[i];
    case DLA_F64: return ((const double *)raw)[i];
    case DLA_I32: return ((const int32_t *)raw)[i];
    default: return ((const unsigned char *)raw)[i];
    }
}

/* The position of v among the classes (0..k-1 when classes is NULL), or
 * -1 when it is none of them. */
static int64_t class_index(double v, const int32_t *classes, int64_t k)
{
    if (!classes)
        return v >= 0 && v < (double)k && v == floor(v) ? (int64_t)v : -1;
    for (int64_t i = 0; i < k; i++)
        if (v == (double)classes[i])
            return i;
    return -1;
}

/* Fails unless every label is one of the classes, naming the first that
 * is not (its 0-based linear index, first dim fastest), the classes and,
 * when the labels look 1-based (all lie in 1..k), that MATLAB numbers
 * categories from 1 where dlaccel numbers classes from 0. A bad label of
 * k alone is not that: labels that hold a 0 too are k + 1 classes in
 * 0..k, and subtracting 1 would make the 0 a -1 (trainnet's check says
 * the same). */
static dla_status check_labels(const char *op, dla_tensor *labels, const int32_t *classes,
                               int64_t k)
{
    int64_t n = dla_tensor_numel(labels);
    size_t es = dla_dtype_size(labels->dtype);
    if (n == 0)
        return DLA_OK;
    void *raw = dla__malloc(es * (size_t)n);
    if (!raw)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot read %lld labels to check them", op,
                         (long long)n);
    dla_status st = dla_tensor_to_host(labels, raw, es * (size_t)n);
    if (st != DLA_OK) {
        dla__free(raw);
        dla__error_prefix(op);
        return st;
    }
    int64_t bad = -1;
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) {
        double v = label_at(raw, labels->dtype, i);
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        if (bad < 0 && class_index(v, classes, k) < 0)
            bad = i;
    }
    double v = bad >= 0 ? label_at(raw, labels->dtype, bad) : 0;
    dla__free(raw);
    if (bad < 0)
        return DLA_OK;
    char dims[DLA__DIMS_BUF], range[64];
    dla__tensor_dims_str(labels, dims, sizeof dims);
    if (classes)
        snprintf(range, sizeof range, "one of the %lld values of option classes", (long long)k);
    else
        snprintf(range, sizeof range, "a class number in 0..%lld", (long long)(k - 1));
    int one_based = !classes && lo >= 1 && hi <= (double)k;
    return dla__fail(DLA_ERR_INVALID_ARGUMENT,
                     "%s: argument labels (%s %s): labels[%lld] is %.17g, which is not %s "
                     "(num_classes %lld)%s",
                     op, dims, dla_dtype_name(labels->dtype), (long long)bad, v, range,
                     (long long)k,
                     one_based ? "; the labels look 1-based: MATLAB numbers categories from 1, "
                                 "dlaccel numbers classes from 0 (subtract 1)"
                               : "");
}

typedef struct encode_attrs {
    dla_dtype dtype;
} encode_attrs;

/* in[0] labels, in[1] the class list along the feature dim. */
static dla_status encode_forward(const void *attrs, dla_tensor *const *in, int nin, dla_tensor **out,
                                 dla_tensor **saved)
{
    (void)nin;
    (void)saved;
    const encode_attrs *a = attrs;
    dla__recording_pause();
    dla_scope_begin();
    dla_tensor *r = dla_tensor_retain(dla_cast(dla_eq(in[0], in[1]), a->dtype));
    dla_scope_end();
    dla__recording_resume();
    if (r->status != DLA_OK) {
        dla_status st = r->status;
        dla_tensor_release(r);
        return st;
    }
    out[0] = r;
    return DLA_OK;
}

/* The result's dtype (the option; forward casts to it) must be one. */
static dla_status encode_dtype_check(dla_dtype dt)
{
    if ((unsigned)dt >= DLA_DTYPE_COUNT)
        return dla__fail(DLA_ERR_DTYPE, "dla_onehotencode: option dtype: %d is no dtype", (int)dt);
    return DLA_OK;
}

/* forward casts the comparison of the labels with the class list to the
 * dtype: their broadcast, of that dtype. */
static dla_status encode_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    (void)nin;
    dla_dtype dt = ((const encode_attrs *)attrs)->dtype;
    if (encode_dtype_check(dt) != DLA_OK)
        return dla_last_status();
    dla_tensor labels, list;
    dla__tensor_of_shape(&in[0], &labels);
    dla__tensor_of_shape(&in[1], &list);
    static const char *const names[] = {"labels", "classes"};
    out[0] = (dla__vshape){.dtype = dt};
    return dla__broadcast("dla_onehotencode", 2, (dla_tensor *[]){&labels, &list}, names,
                          &out[0].ndims, out[0].dims, out[0].format);
}

static const dla__op encode_op = {.name = "dla_onehotencode", .nin = 2, .nout = 1,
                                  .forward = encode_forward, .infer = encode_infer,
                                  .constant = 1};
DLA__OP_REGISTER(encode_op, sizeof(encode_attrs));

static int cmp_i32(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* Fails when a class value repeats: a label equal to it would be hot at
 * both positions, a column that sums to 2 and decodes to the first.
 * Sorted copy, so a vocabulary of 50,000 classes costs no more than its
 * labels' check. */
static dla_status check_unique_classes(const char *op, const int32_t *classes, int64_t k)
{
    if (!classes || k < 2)
        return DLA_OK;
    int32_t *v = dla__malloc(sizeof *v * (size_t)k);
    if (!v)
        return dla__fail(DLA_ERR_OUT_OF_MEMORY, "%s: no memory to check the %lld classes", op,
                         (long long)k);
    memcpy(v, classes, sizeof *v * (size_t)k);
    qsort(v, (size_t)k, sizeof *v, cmp_i32);
    int64_t dup = -1;
    for (int64_t i = 1; i < k && dup < 0; i++)
        if (v[i] == v[i - 1])
            dup = i;
    int32_t value = dup >= 0 ? v[dup] : 0;
    dla__free(v);
    if (dup < 0)
        return DLA_OK;
    int64_t first = -1, second = -1;
    for (int64_t i = 0; i < k && second < 0; i++)
        if (classes[i] == value) {
            if (first < 0)
                first = i;
            else
                second = i;
        }
    return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: option classes: classes[%lld] and "
                     "classes[%lld] are both %d; each class value must appear once",
                     op, (long long)first, (long long)second, (int)value);
}

DLA_API dla_tensor *dla_onehotencode(dla_tensor *labels, int64_t num_classes,
                                     const dla_onehot_options *opts)
{
    static const char op[] = "dla_onehotencode";
    static const dla_onehot_options none;
    const dla_onehot_options *o = opts ? opts : &none;
    if (!labels || labels->status != DLA_OK)
        return dla__pass_arg(op, "labels", labels);
    char buf[DLA__DIMS_BUF];
    if (num_classes < 1)
        return dla__error(DLA_ERR_INVALID_ARGUMENT, "%s: argument num_classes: %lld; it must be >= 1",
                          op, (long long)num_classes);
    if (encode_dtype_check(o->dtype) != DLA_OK ||
        check_unique_classes(op, o->classes, num_classes) != DLA_OK)
        return dla__return(dla__error_tensor());
    if (o->feature_dim == 0 && labels->format[0] && !strchr(labels->format, 'C'))
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: option feature_dim: 0 means the C dim, but labels (%s \"%s\") have "
                          "none; label one C or give feature_dim",
                          op, dla__tensor_dims_str(labels, buf, sizeof buf), labels->format);
    int fd = feature_dim_of(op, labels, o);
    if (fd < 0)
        return dla__return(dla__error_tensor());
    if (fd < labels->ndims && labels->dims[fd] != 1)
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: argument labels: %s has size %lld along the feature dim %d; it "
                          "must be 1 there, where the %lld classes go",
                          op, dla__tensor_dims_str(labels, buf, sizeof buf),
                          (long long)labels->dims[fd], fd + 1, (long long)num_classes);
    if (!dla__trace_recording() && check_labels(op, labels, o->classes, num_classes) != DLA_OK)
        return dla__return(dla__error_tensor());
    dla_scope_begin();
    dla_tensor *list = class_list(op, labels->storage->device, o->classes, num_classes, fd);
    encode_attrs a = {o->dtype};
    dla_tensor *r = dla_tensor_retain(dla__apply(&encode_op, &a, sizeof a, 2,
                                                 (dla_tensor *[]){labels, list}));
    dla_scope_end();
    return dla__return(r);
}

/* ----------------------------------------------------------------- decode */

typedef struct decode_attrs {
    int fd;          /* 0-based feature dim */
    int has_classes; /* in[1] is the class list */
} decode_attrs;

static dla_status decode_forward(const void *attrs, dla_tensor *const *in, int nin, dla_tensor **out,
                                 dla_tensor **saved)
{
    (void)nin;
    (void)saved;
    const decode_attrs *a = attrs;
    static const char op[] = "dla_onehotdecode";
    dla_tensor *x = in[0];
    dla_device *dev = x->storage->device;
    int nd = x->ndims > a->fd + 1 ? x->ndims : a->fd + 1;
    int64_t dims[DLA_MAX_DIMS];
    for (int d = 0; d < nd; d++)
        dims[d] = d < x->ndims ? x->dims[d] : 1;
    dims[a->fd] = 1;
    dla_tensor *best = dla__tensor_alloc(op, dev, x->dtype, x->format, nd, dims);
    dla_tensor *idx = dla__tensor_alloc(op, dev, DLA_I32, x->format, nd, dims);
    dla_status st = best && idx ? DLA_OK : dla_last_status();
    /* An empty batch: nothing for the kernels to write. */
    int empty = dla__numel(nd, dims) == 0;
    if (st == DLA_OK && !empty) {
        dla_reduce_args r = {.struct_size = sizeof r, .op = DLA_REDUCE_MAX};
        dla__view_of(best, &r.y);
        dla__view_of(x, &r.x);
        r.x.ndims = nd;
        for (int d = x->ndims; d < nd; d++) {
            r.x.dims[d] = 1;
            r.x.strides[d] = 0;
        }
        dla__view_of(idx, &r.index);
        st = dla__k_reduce(dev, &r);
    }
    dla_tensor_release(best);
    if (st == DLA_OK && a->has_classes && !empty) {
        /* position -> class value: a gather from the list along its dim. */
        dla_tensor *vals = dla__tensor_alloc(op, dev, DLA_F64, "", 1,
                                             (const int64_t[]){dla__numel(nd, dims)});
        st = vals ? DLA_OK : dla_last_status();
        if (st == DLA_OK) {
            dla_index_args g = {.struct_size = sizeof g, .dim = 0};
            dla__view_of(vals, &g.y);
            dla__view_of(in[1], &g.x);
            g.x.ndims = 1;
            g.x.dims[0] = dla_tensor_numel(in[1]);
            g.x.strides[0] = 1;
            dla__view_of(idx, &g.index);
            g.index.ndims = 1;
            g.index.dims[0] = dla_tensor_numel(idx);
            g.index.strides[0] = 1;
            st = dla__k_index(dev, DLA_KERNEL_GATHER, &g);
        }
        if (st == DLA_OK) {
            dla_view iv, vv;
            dla__view_of(idx, &iv);
            dla__view_of(vals, &vv);
            vv.ndims = iv.ndims;
            memcpy(vv.dims, iv.dims, sizeof iv.dims);
            memcpy(vv.strides, iv.strides, sizeof iv.strides);
            st = dla__k_cast(dev, &iv, &vv);
        }
        dla_tensor_release(vals);
    }
    if (st != DLA_OK) {
        dla_tensor_release(idx);
        return st;
    }
    out[0] = idx;
    return DLA_OK;
}

/* Scores decode along their feature dim fd (0-based, a labelled one when
 * they are formatted): single or double, with elements there. Returns the
 * class count, or 0 with the failure. */
static int64_t decode_check(const char *op, const dla_tensor *scores, int fd)
{
    char buf[DLA__DIMS_BUF];
    if (!is_float(scores->dtype)) {
        dla__fail(DLA_ERR_DTYPE, "%s: argument scores: %s; decoding needs single or double", op,
                  dla_dtype_name(scores->dtype));
        return 0;
    }
    int64_t k = fd < scores->ndims ? scores->dims[fd] : 1;
    /* No observations (3x0 scores, an empty batch) decode to no labels, as
     * MATLAB's onehotdecode gives a 1x0 result; no classes to pick from is
     * the one shape with no answer. */
    if (k == 0) {
        dla__fail(DLA_ERR_SHAPE, "%s: argument scores: %s has no classes along feature dim %d "
                  "to decode", op, dla__tensor_dims_str(scores, buf, sizeof buf), fd + 1);
        return 0;
    }
    return k;
}

/* decode_forward indexes the result's dims with fd and reads k class
 * values (double, from class_list) when has_classes: dla_onehotdecode's
 * checks on the recorded scores; positions (int32) of scores' shape with
 * 1 along fd. */
static dla_status decode_infer(const void *attrs, int nin, const dla__vshape *in, dla__vshape *out)
{
    static const char op[] = "dla_onehotdecode";
    const decode_attrs *a = attrs;
    if (a->fd < 0 || a->fd >= DLA_MAX_DIMS || (a->has_classes != 0 && a->has_classes != 1))
        return dla__fail(DLA_ERR_INVALID_ARGUMENT, "%s: attributes feature dim %lld, "
                         "has_classes %d", op, (long long)a->fd + 1, a->has_classes);
    dla_tensor scores;
    dla__tensor_of_shape(&in[0], &scores);
    dla_onehot_options o = {.feature_dim = a->fd + 1};
    int64_t k;
    if (feature_dim_of(op, &scores, &o) < 0 || !(k = decode_check(op, &scores, a->fd)))
        return dla_last_status();
    char buf[DLA__DIMS_BUF];
    if (nin > 1 && (in[1].dtype != DLA_F64 || dla__numel(in[1].ndims, in[1].dims) != k))
        return dla__fail(DLA_ERR_SHAPE, "%s: argument classes (%s %s) is not %lld class values "
                         "(double)", op, dla__dims_str(buf, sizeof buf, in[1].ndims, in[1].dims),
                         dla_dtype_name(in[1].dtype), (long long)k);
    out[0] = in[0];
    out[0].dtype = DLA_I32;
    for (int d = in[0].ndims; d <= a->fd; d++)
        out[0].dims[d] = 1;
    if (a->fd + 1 > out[0].ndims)
        out[0].ndims = a->fd + 1;
    out[0].dims[a->fd] = 1;
    return DLA_OK;
}

static int takes_classes_if_given(const void *attrs, int nin)
{
    return nin == (((const decode_attrs *)attrs)->has_classes ? 2 : 1);
}

static const dla__op decode_op = {.name = "dla_onehotdecode", .nin = -1, .nout = 1,
                                  .forward = decode_forward, .takes = takes_classes_if_given,
                                  .infer = decode_infer, .constant = 1};
DLA__OP_REGISTER(decode_op, sizeof(decode_attrs));

DLA_API dla_tensor *dla_onehotdecode(dla_tensor *scores, const dla_onehot_options *opts)
{
    static const char op[] = "dla_onehotdecode";
    static const dla_onehot_options none;
    const dla_onehot_options *o = opts ? opts : &none;
    if (!scores || scores->status != DLA_OK)
        return dla__pass_arg(op, "scores", scores);
    char buf[DLA__DIMS_BUF];
    if (o->feature_dim == 0 && scores->format[0] && !strchr(scores->format, 'C'))
        return dla__error(DLA_ERR_INVALID_ARGUMENT,
                          "%s: option feature_dim: 0 means the C dim, but scores (%s \"%s\") have "
                          "none; label one C or give feature_dim",
                          op, dla__tensor_dims_str(scores, buf, sizeof buf), scores->format);
    int fd = feature_dim_of(op, scores, o);
    int64_t k = fd < 0 ? 0 : decode_check(op, scores, fd);
    if (!k)
        return dla__return(dla__error_tensor());
    decode_attrs a = {fd, o->classes != NULL};
    dla_scope_begin();
    dla_tensor *in[2] = {scores, NULL};
    if (o->classes)
        in[1] = class_list(op, scores->storage->device, o->classes, k, 0);
    dla_tensor *r = dla_tensor_retain(dla__apply(&decode_op, &a, sizeof a, o->classes ? 2 : 1, in));
    dla_scope_end();
    return dla__return(r);
}
