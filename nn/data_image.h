/*
 * data_image.h - what the image datastore's files share: decoding one PNG
 * or JPEG file into 8- or 16-bit pixels (data_image_decode.c), and the batch
 * reader the mini-batch queue calls (data_image.c).
 *
 * The decoder runs on the datastore's reading threads, so it never touches
 * the thread's dla_last_error(): a failure is a status and a message in the
 * caller's buffer, naming the file.
 */
#ifndef DLA_NN_DATA_IMAGE_H
#define DLA_NN_DATA_IMAGE_H

#include <dlaccel.h>

#include "nn/data_rng.h"
#include <stddef.h>
#include <stdint.h>

/* A decoded image: h rows of w pixels of c channels (1 gray, 3 RGB),
 * row-major and interleaved as the files hold them (sample (y*w + x)*c + k),
 * each sample depth bytes: 1, or 2 for a 16-bit PNG (least significant
 * byte first; dla__image_sample reads either). */
typedef struct dla__image {
    int h, w, c, depth;
    uint8_t *px; /* dla__data_malloc'd; dla__image_free */
} dla__image;

/* Sample i of im in the file's own units: the byte, or the 16-bit value.
 * dla__image_unit is what one 8-bit step is in those units (1 or 257):
 * a sample s is s / (255 * unit) in [0, 1], one division, so that a
 * 16-bit v reads as v / 65535 exactly, as MATLAB's im2double and
 * im2single of the uint16 image (through the 8-bit units, v / 257 / 255,
 * a quarter of the 65536 values came out a unit in the last place off
 * in double). */
static inline double dla__image_sample(const dla__image *im, size_t i)
{
    if (im->depth == 1)
        return im->px[i];
    return (double)(im->px[2 * i] | (unsigned)im->px[2 * i + 1] << 8);
}

static inline double dla__image_unit(const dla__image *im) { return im->depth == 1 ? 1.0 : 257.0; }

/* The largest image the decoder takes (pixels times channels), so that a
 * forged header cannot ask for gigabytes. */
#define DLA__IMAGE_MAX_BYTES ((size_t)1 << 28)

/* Decodes path (PNG or JPEG, told apart by their signatures, not the file
 * name) into *img. Alpha is dropped (tRNS transparency too), palettes
 * expanded to RGB, 16-bit samples kept (depth 2), gray below 8 bits widened. On failure *img is zeroed
 * and err holds "<path>: <why>": DLA_ERR_IO (cannot open or read it),
 * DLA_ERR_FORMAT (neither PNG nor JPEG, an unsupported colour space, an
 * image over DLA__IMAGE_MAX_BYTES, a JPEG of more than 1000 scans, each of
 * which walks the whole image, or a corrupt or truncated file, with the
 * decoder's own message: libjpeg's warnings, such as a premature end of the
 * data, count as errors, as it would otherwise fill the rest with gray,
 * except the two that leave every pixel decoded: stray bytes before the
 * end-of-image marker and a JFIF version other than 1.x),
 * DLA_ERR_OUT_OF_MEMORY. */
dla_status dla__image_decode(const char *path, dla__image *img, char *err, size_t errlen);
void dla__image_free(dla__image *img);

/* The files of a datastore and of every datastore made from it (subsets,
 * partitions, splits, augmented views): shared, reference counted, never
 * changed once made, except for the skipped flags. */
typedef struct dla__imds_catalog {
    int refs;                 /* atomic */
    int64_t nfiles;
    char **paths;             /* sorted */
    int32_t *labels;          /* class numbers; NULL with label_source "none" */
    int nclasses;
    char **classes;           /* sorted names */
    unsigned char *skipped;   /* atomic flags: corrupt files warned about */
    int h, w, c;              /* the first readable file's size */
    int64_t size_from;        /* that file */
} dla__imds_catalog;

/* Walks folder (recursing unless told not to) into a new catalog with one
 * reference; labels from folder names when labels is set. The size is not
 * set here. */
dla_status dla__imds_scan(const char *folder, int recurse, int labels, dla__imds_catalog **out,
                          const char *op);
void dla__imds_catalog_release(dla__imds_catalog *c);

/* The augmentation of an augmented datastore, with its stream and the lock
 * that its readers (dla_imds_read and the like, on any thread) draw under.
 * A mini-batch queue draws from a stream of its own instead, seeded from
 * seed (data_mbq.c), so that what it draws never depends on timing. */
/* augmentedImageDatastore's OutputSizeMode and ColorPreprocessing. */
enum { DLA__SIZE_RESIZE, DLA__SIZE_CENTERCROP, DLA__SIZE_RANDCROP };
enum { DLA__COLOR_NONE, DLA__COLOR_GRAY2RGB, DLA__COLOR_RGB2GRAY };

typedef struct dla__imds_augment {
    int refs;                 /* atomic */
    int out_h, out_w;
    int size_mode;            /* DLA__SIZE_* */
    int color;                /* DLA__COLOR_* */
    dla_image_augmenter aug;
    uint64_t seed;
    void *lock;               /* a pthread_mutex_t */
    dla__data_rng rng;
} dla__imds_augment;

struct dla_imds {
    uint32_t magic;           /* DLA__IMDS_MAGIC; DLA__HANDLE_DEAD once freed */
    int refs;                 /* atomic: the user's and the queues' */
    dla__imds_catalog *cat;
    dla__imds_augment *augment; /* NULL: images as read */
    int64_t n;                /* files of this datastore */
    int64_t *idx;             /* their catalog numbers, in the current order */
    int64_t pos, read_size;
    dla_dtype dtype;
    int skip_corrupt, threads, top_only;
    uint64_t seed;
    dla__data_rng rng;
};

#define DLA__IMDS_MAGIC 0x7a3e5010u

/* The images of positions obs[0..count-1] of ds's current order in one
 * host buffer: H x W x C x kept, ds's dtype. An augmented datastore's
 * transforms are drawn, one image after the other, from *aug_rng, which
 * the caller alone uses meanwhile, or, when aug_rng is NULL, from the
 * datastore's shared stream under its lock. labels[] (may be NULL) gets
 * their class numbers, kept[] (may be NULL) the positions 0..count-1 that
 * made it. DLA_OK, or an error with the thread's error set naming op and
 * the file. *buf is freed by the caller with dla__data_free. */
dla_status dla__imds_read_host(dla_imds *ds, const int64_t *obs, int64_t count,
                               dla__data_rng *aug_rng, void **buf, int32_t *labels,
                               int64_t *kept, int64_t *nkept, const char *op);
/* Draws and drops the transforms of count images from *aug_rng, as
 * dla__imds_read_host would draw them (nothing for a datastore without
 * augmentation): a worker's share of a mini-batch (trainnet "parallel")
 * skips the other workers' draws, so that each image gets the transform
 * it gets in one process. */
void dla__imds_augment_skip(dla_imds *ds, dla__data_rng *aug_rng, int64_t count);
/* The H, W, C of ds's images. */
void dla__imds_out_size(const dla_imds *ds, int *h, int *w, int *c);

/* Internal to the mini-batch queue (data_mbq.c). */
/* A +1 reference to ds (datastores are reference counted inside the
 * library so that queues and their partitions can share one). */
dla_imds *dla__imds_retain(dla_imds *ds);
/* A datastore over ds's files in its current order, frozen: later
 * shuffles of ds do not change it. */
dla_imds *dla__imds_snapshot(dla_imds *ds, const char *op);
/* Drops a reference (dla_imds_free drops the user's). */
void dla__imds_release(dla_imds *ds);
/* The images obs[0..count-1] (positions in ds's current order) as one
 * H x W x C x kept "SSCB" tensor on dev, held (data_util.h), the transforms
 * of an augmented datastore drawn from *aug_rng (as dla__imds_read_host).
 * kept[] gets the positions (0..count-1) of the images that made it: all
 * of them, or,
 * with skip_corrupt, those that were not corrupt (each skipped file is
 * warned about once). NULL with the thread's error set on failure. */
dla_tensor *dla__imds_batch(dla_imds *ds, const int64_t *obs, int64_t count,
                            dla__data_rng *aug_rng, dla_device *dev, int64_t *kept,
                            int64_t *nkept, const char *op);
int64_t dla__imds_count(const dla_imds *ds);
/* The first of positions from..from+count-1 of ds's order whose file
 * was skipped as corrupt (skip_corrupt), or NULL: minibatchpredict names
 * the file that a short batch left out. */
const char *dla__imds_first_skipped(const dla_imds *ds, int64_t from, int64_t count);

#endif
