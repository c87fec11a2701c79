/*
 * data_fmnist.c - Fashion-MNIST from Debian's dataset-fashion-mnist files
 * as MATLAB lays images out: height x width x channel x batch.
 *
 * The IDX files are row-major (image, row, column); a column-major tensor
 * with height first needs each image transposed, which is done in place
 * (the images are square) so that loading the 47 MB training set never
 * holds more than the file's bytes and the tensor.
 */
#define _POSIX_C_SOURCE 200809L
#include "nn/data_util.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const char OP[] = "dla_fashion_mnist_load";

static const char *const class_names[DLA_FASHION_MNIST_CLASSES] = {
    "T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
    "Sandal",      "Shirt",   "Sneaker",  "Bag",   "Ankle boot",
};

DLA_API const char *dla_fashion_mnist_class_name(int label)
{
    return label >= 0 && label < DLA_FASHION_MNIST_CLASSES ? class_names[label] : "unknown";
}

/* dir/name.gz, or dir/name when only the uncompressed file is there. The
 * .gz name is kept when neither exists, for the error message. */
static void file_path(char *buf, size_t size, const char *dir, const char *name)
{
    snprintf(buf, size, "%s/%s", dir, name);
    if (access(buf, F_OK) == 0)
        return;
    char plain[4096];
    snprintf(plain, sizeof plain, "%s", buf);
    plain[strlen(plain) - 3] = '\0'; /* drop ".gz" */
    if (access(plain, F_OK) == 0)
        snprintf(buf, size, "%s", plain);
}

/* dla_idx_read under this function's name, with a hint for a missing file. */
static dla_status read_file(const char *path, dla_idx *idx)
{
    dla_status st = dla_idx_read(path, idx);
    if (st == DLA_OK)
        return st;
    char msg[1024];
    const char *m = dla_last_error();
    size_t skip = strlen("dla_idx_read: ");
    snprintf(msg, sizeof msg, "%s", strncmp(m, "dla_idx_read: ", skip) == 0 ? m + skip : m);
    int missing = access(path, F_OK) != 0;
    return dla__data_fail(st, "%s: %s%s", OP, msg,
                          missing ? " (install the dataset-fashion-mnist package, or pass the "
                                    "folder that holds the files)"
                                  : "");
}

static dla_status check_images(const char *path, const dla_idx *im)
{
    int64_t pix;
    /* Rows times columns must fit: a file of no images may announce
     * 2^32 - 1 of each (no pixel to back them), and the product
     * overflowed (undefined behaviour) before the tensor was made. */
    if (im->type == DLA_IDX_U8 && im->ndims == 3 && im->dims[1] == im->dims[2] &&
        __builtin_mul_overflow(im->dims[1], im->dims[2], &pix))
        return dla__data_fail(DLA_ERR_FORMAT,
                              "%s: %s: holds %lld images of %lldx%lld pixels, more pixels an "
                              "image than can be counted",
                              OP, path, (long long)im->dims[0], (long long)im->dims[1],
                              (long long)im->dims[2]);
    if (im->type != DLA_IDX_U8 || im->ndims != 3 || im->dims[1] != im->dims[2]) {
        char b[DLA__DATA_DIMS_BUF];
        return dla__data_fail(DLA_ERR_FORMAT,
                              "%s: %s: holds %s %s; Fashion-MNIST images are ubyte N x rows x "
                              "columns with as many rows as columns (idx3-ubyte)",
                              OP, path, dla_idx_type_name(im->type),
                              dla__data_dims_str(b, im->ndims, im->dims));
    }
    return DLA_OK;
}

static dla_status check_labels(const char *path, const dla_idx *lb)
{
    if (lb->type != DLA_IDX_U8 || lb->ndims != 1) {
        char b[DLA__DATA_DIMS_BUF];
        return dla__data_fail(DLA_ERR_FORMAT,
                              "%s: %s: holds %s %s; Fashion-MNIST labels are ubyte N (idx1-ubyte)",
                              OP, path, dla_idx_type_name(lb->type),
                              dla__data_dims_str(b, lb->ndims, lb->dims));
    }
    const unsigned char *v = lb->data;
    for (int64_t i = 0; i < lb->numel; i++)
        if (v[i] >= DLA_FASHION_MNIST_CLASSES)
            return dla__data_fail(DLA_ERR_FORMAT,
                                  "%s: %s: label %d at position %lld is outside 0..%d", OP, path,
                                  v[i], (long long)i, DLA_FASHION_MNIST_CLASSES - 1);
    return DLA_OK;
}

static dla_tensor *make_images(dla_idx *im, int64_t n, dla_dtype dtype)
{
    const int64_t side = im->dims[1], pix = side * side;
    unsigned char *u8 = im->data;
    for (int64_t k = 0; k < n; k++) {
        unsigned char *p = u8 + k * pix;
        for (int64_t r = 0; r < side; r++)
            for (int64_t c = r + 1; c < side; c++) {
                unsigned char t = p[r * side + c];
                p[r * side + c] = p[c * side + r];
                p[c * side + r] = t;
            }
    }
    const int64_t dims[4] = {side, side, 1, n};
    if (dtype == DLA_U8)
        return dla__data_from_host(NULL, u8, DLA_U8, "SSCB", 4, dims);
    size_t esize = dla_dtype_size(dtype);
    void *buf = dla__data_malloc((size_t)(n * pix) * esize);
    if (!buf) {
        dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot hold %lld images as %s", OP,
                       (long long)n, dla_dtype_name(dtype));
        return NULL;
    }
    if (dtype == DLA_F32) {
        float *f = buf;
        for (int64_t i = 0; i < n * pix; i++)
            f[i] = (float)u8[i] / 255.0f;
    } else {
        double *d = buf;
        for (int64_t i = 0; i < n * pix; i++)
            d[i] = (double)u8[i] / 255.0;
    }
    dla_tensor *t = dla__data_from_host(NULL, buf, dtype, "SSCB", 4, dims);
    dla__data_free(buf);
    return t;
}

static dla_tensor *make_labels(const dla_idx *lb, int64_t n, int onehot, dla_dtype dtype)
{
    const unsigned char *v = lb->data;
    if (!onehot) {
        int32_t *l = dla__data_malloc((size_t)n * sizeof *l);
        if (!l) {
            dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot hold %lld labels", OP, (long long)n);
            return NULL;
        }
        for (int64_t i = 0; i < n; i++)
            l[i] = v[i];
        dla_tensor *t = dla__data_from_host(NULL, l, DLA_I32, "CB", DLA_DIMS(1, n));
        dla__data_free(l);
        return t;
    }
    if (dtype == DLA_U8)
        dtype = DLA_F32;
    size_t esize = dla_dtype_size(dtype);
    void *buf = dla__data_calloc((size_t)(n * DLA_FASHION_MNIST_CLASSES), esize);
    if (!buf) {
        dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot hold %lld one-hot labels", OP,
                       (long long)n);
        return NULL;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t at = v[i] + DLA_FASHION_MNIST_CLASSES * i;
        if (dtype == DLA_F32)
            ((float *)buf)[at] = 1.0f;
        else
            ((double *)buf)[at] = 1.0;
    }
    dla_tensor *t =
        dla__data_from_host(NULL, buf, dtype, "CB", DLA_DIMS(DLA_FASHION_MNIST_CLASSES, n));
    dla__data_free(buf);
    return t;
}

/* Takes held t's status into the thread's error (a failed creation names
 * itself) and drops it on failure. */
static dla_status settle(dla_tensor **t)
{
    if (!*t)
        return dla_last_status();
    dla_status st = dla_tensor_status(*t);
    if (st != DLA_OK) {
        dla__data_fail(st, "%s: %s", OP, dla_tensor_error(*t));
        dla_tensor_release(*t);
        *t = NULL;
    }
    return st;
}

DLA_API dla_status dla_fashion_mnist_load(const char *dir, const char *split,
                                          const dla_fashion_mnist_options *opts,
                                          dla_tensor **images, dla_tensor **labels)
{
    if (images)
        *images = NULL;
    if (labels)
        *labels = NULL;
    const dla_fashion_mnist_options o = opts ? *opts : (dla_fashion_mnist_options){0};
    const char *prefix = NULL;
    if (split && strcmp(split, "train") == 0)
        prefix = "train";
    else if (split && strcmp(split, "test") == 0)
        prefix = "t10k";
    else
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument split: \"%s\"; \"train\" or \"test\"", OP,
                              split ? split : "(null)");
    if (o.dtype != DLA_F32 && o.dtype != DLA_F64 && o.dtype != DLA_U8)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT,
                              "%s: argument opts: dtype %s; single, double or uint8", OP,
                              dla_dtype_name(o.dtype));
    if (o.count < 0)
        return dla__data_fail(DLA_ERR_INVALID_ARGUMENT, "%s: argument opts: count %lld < 0", OP,
                              (long long)o.count);
    if (!dir)
        dir = DLA_FASHION_MNIST_DIR;
    char ipath[4096], lpath[4096], name[64];
    snprintf(name, sizeof name, "%s-images-idx3-ubyte.gz", prefix);
    file_path(ipath, sizeof ipath, dir, name);
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte.gz", prefix);
    file_path(lpath, sizeof lpath, dir, name);

    dla_idx im = {0}, lb = {0};
    dla_status st = DLA_OK;
    if (labels || images) /* the labels are read even for images alone, to check the count */
        st = read_file(lpath, &lb);
    if (st == DLA_OK)
        st = check_labels(lpath, &lb);
    if (st == DLA_OK && images) {
        st = read_file(ipath, &im);
        if (st == DLA_OK)
            st = check_images(ipath, &im);
        if (st == DLA_OK && im.dims[0] != lb.dims[0])
            st = dla__data_fail(DLA_ERR_FORMAT,
                                "%s: %s holds %lld images but %s holds %lld labels", OP, ipath,
                                (long long)im.dims[0], lpath, (long long)lb.dims[0]);
    }
    int64_t n = lb.numel;
    if (o.count && o.count < n)
        n = o.count;
    if (st == DLA_OK && images) {
        *images = make_images(&im, n, o.dtype);
        st = settle(images);
    }
    dla_idx_free(&im);
    if (st == DLA_OK && labels) {
        *labels = make_labels(&lb, n, o.onehot, o.dtype);
        st = settle(labels);
    }
    dla_idx_free(&lb);
    if (st != DLA_OK && images && *images) {
        dla_tensor_release(*images);
        *images = NULL;
    }
    if (st != DLA_OK)
        return st;
    dla_tensor *out[2] = {images ? *images : NULL, labels ? *labels : NULL};
    st = dla__data_deliver_all(2, out, OP);
    if (images)
        *images = out[0];
    if (labels)
        *labels = out[1];
    return st;
}
