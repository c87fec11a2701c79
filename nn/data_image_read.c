/*
 * data_image_read.c - reading a datastore's images into one host buffer:
 * the files decoded on up to read_threads threads, each image converted
 * (or, for an augmented datastore, transformed and resized) straight into
 * its slot of the batch, H x W x C column-major as MATLAB's arrays.
 *
 * What the result is does not depend on the thread count: the random
 * transforms are drawn before the threads start, in the order of the
 * images, and the error reported is the one of the first failing image in
 * that order.
 */
#include "core/log.h"
#include "nn/data_image.h"
#include "nn/data_util.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* One image's transform, drawn per image. */
typedef struct xform {
    int flip_x, flip_y;
    double angle, tx, ty;        /* degrees, pixels */
    double scale_x, scale_y;     /* factors: the width's and the height's */
    double shear_x, shear_y;     /* degrees */
    double crop_y, crop_x;       /* randcrop: uniforms in [0, 1) placing the crop */
} xform;

typedef struct job {
    dla_imds *ds;
    const int64_t *obs;
    int64_t count;
    int h, w, c;                 /* the output size */
    size_t esize;
    unsigned char *buf;
    const xform *xf;             /* NULL: no augmentation */
    unsigned char *bad;          /* per image: 1 skipped as corrupt */
    int64_t next;                /* atomic: the next image to take */
    pthread_mutex_t lock;
    int64_t first_bad;           /* the lowest failing image, count if none */
    dla_status status;
    char message[1024];
} job;

void dla__imds_out_size(const dla_imds *ds, int *h, int *w, int *c)
{
    const dla__imds_augment *a = ds->augment;
    *h = a ? a->out_h : ds->cat->h;
    *w = a ? a->out_w : ds->cat->w;
    *c = !a || a->color == DLA__COLOR_NONE ? ds->cat->c : a->color == DLA__COLOR_GRAY2RGB ? 3 : 1;
}

/* Writes v, in the file's units (unit: dla__image_unit), as the
 * datastore's dtype: v / (255 unit) in [0, 1], or round(v / unit) bytes. */
static void put(const job *jb, unsigned char *dst, size_t i, double v, double unit)
{
    if (jb->ds->dtype == DLA_U8) {
        double r = floor(v / unit + 0.5);
        dst[i] = (unsigned char)(r < 0 ? 0 : r > 255 ? 255 : r);
    } else if (jb->ds->dtype == DLA_F64) {
        ((double *)dst)[i] = v / (255.0 * unit);
    } else {
        ((float *)dst)[i] = (float)(v / (255.0 * unit));
    }
}

/* The image as it is: transposed from row-major interleaved to H x W x C,
 * a loop per dtype (a branch per pixel was a tenth of the decode time). */
static void copy_plain(const job *jb, const dla__image *im, unsigned char *dst)
{
    size_t h = (size_t)im->h, w = (size_t)im->w, c = (size_t)im->c, hw = h * w;
    const unsigned char *px = im->px;
    if (im->depth != 1) {
        /* 16-bit samples: through put(), as the warp's (rare enough not
         * to want loops of their own). */
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w; x++)
                for (size_t k = 0; k < c; k++)
                    put(jb, dst, y + h * x + hw * k, dla__image_sample(im, (y * w + x) * c + k),
                        257.0);
    } else if (jb->ds->dtype == DLA_U8) {
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w; x++)
                for (size_t k = 0; k < c; k++)
                    dst[y + h * x + hw * k] = px[(y * w + x) * c + k];
    } else if (jb->ds->dtype == DLA_F64) {
        double *d = (double *)dst;
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w; x++)
                for (size_t k = 0; k < c; k++)
                    d[y + h * x + hw * k] = px[(y * w + x) * c + k] / 255.0;
    } else {
        float *d = (float *)dst, scale[256];
        for (int v = 0; v < 256; v++)
            scale[v] = (float)(v / 255.0); /* as put() rounds it (unit 1) */
        for (size_t y = 0; y < h; y++)
            for (size_t x = 0; x < w; x++)
                for (size_t k = 0; k < c; k++)
                    d[y + h * x + hw * k] = scale[px[(y * w + x) * c + k]];
    }
}

/* Channel k of pixel p (its number in the image) of im, after the
 * colour preprocessing: rgb2gray as MATLAB's, gray2rgb the one channel
 * for each; an image that is already what is asked for as it is.
 * MATLAB's rgb2gray weighs R, G and B by the first row of the inverse of
 * the NTSC matrix [1 .956 .621; 1 -.272 -.647; 1 -1.106 1.703] (0.2989,
 * 0.5870 and 0.1140 to four places, which sum to 0.9999 and read white as
 * 254.97) and, the image being uint8 or uint16 as read, rounds to its
 * class; augmentedImageDatastore does that before the transforms. So the
 * sum is rounded here in the file's own units (dla__image_sample's). */
static double sample(const dla__image *im, int color, size_t p, int k)
{
    size_t at = p * (size_t)im->c;
    if (color == DLA__COLOR_RGB2GRAY && im->c == 3) {
        double v = 0.298936021293775 * dla__image_sample(im, at) +
                   0.587043074451121 * dla__image_sample(im, at + 1) +
                   0.114020904255103 * dla__image_sample(im, at + 2);
        return floor(v + 0.5);
    }
    if (color == DLA__COLOR_GRAY2RGB && im->c == 1)
        return dla__image_sample(im, at);
    return dla__image_sample(im, at + (size_t)k);
}

/* v, or the whole number it is within rounding of: exact quarter turns
 * and whole shifts land on pixel centres, where cos(90 degrees) = 6e-17
 * left a weight of 1e-16 on a neighbour that may be the fill. */
static double snap(double v)
{
    double r = nearbyint(v);
    return fabs(v - r) < 1e-9 ? r : v;
}

/* Output pixel (yo, xo) comes from a point of the transformed image: the
 * resize undone ("resize"), or the crop's offset added (the crops); then
 * from the point of the input image found by undoing the transform about
 * the input's centre; bilinear between the four pixels around it, the
 * fill value for those outside the image.
 * The resize's point is first clamped to the input's pixel centres, as
 * MATLAB's imresize replicates the edge: when upsizing, the outer output
 * pixels map up to half an input pixel beyond the first and last centres,
 * and the fill there darkened the border of an image that no transform
 * moved (constant 200, 4x4 to 8x8, gave 150 on the edges). So the fill is
 * only for points the random transform moves out of the image. */
static void warp(const job *jb, const dla__image *im, const xform *t, unsigned char *dst)
{
    const dla__imds_augment *ag = jb->ds->augment;
    const dla_image_augmenter *g = &ag->aug;
    const double deg = 3.14159265358979323846 / 180.0;
    double sy = (double)im->h / jb->h, sx = (double)im->w / jb->w;
    double cy = (im->h - 1) / 2.0, cx = (im->w - 1) / 2.0;
    /* The transform's linear part, forward, in (x right, y down) about the
     * centre, in MATLAB imageDataAugmenter's order (its affine matrix is
     * rotation * shear * scale * reflection * translation, for row
     * vectors, so the rotation acts first): the rotation, which turns
     * counterclockwise as displayed (imrotate's way; with rows down a
     * point right of the centre goes up: x' = c x + s y, y' = -s x + c y),
     * then both shears at once (x' = x + tan(a) y, y' = y + tan(b) x),
     * the scale, the reflection, and last the translation. The inverse
     * takes the output's points back: the translation and the reflection
     * undone, then the inverse of scale * shear * rotation. */
    double kx = tan(t->shear_x * deg), ky = tan(t->shear_y * deg);
    double ca = cos(t->angle * deg), sa = sin(t->angle * deg);
    double m00 = t->scale_x * (ca - kx * sa), m01 = t->scale_x * (sa + kx * ca);
    double m10 = t->scale_y * (ky * ca - sa), m11 = t->scale_y * (ky * sa + ca);
    /* scale_x scale_y (1 - tan(a) tan(b)): zero when the two shears'
     * tangents multiply to 1 (45 and 45 degrees), which flattens the
     * image onto a line; no output point then comes from one input point,
     * and every one takes the fill value. */
    double det = m00 * m11 - m01 * m10;
    int flat = !(fabs(det) > 1e-12 * fabs(t->scale_x * t->scale_y));
    double i00 = flat ? 0 : m11 / det, i01 = flat ? 0 : -m01 / det;
    double i10 = flat ? 0 : -m10 / det, i11 = flat ? 0 : m00 / det;
    /* Where a crop starts in the transformed image (the same size as the
     * input; read_one refused images smaller than the output). */
    int y0 = 0, x0 = 0;
    if (ag->size_mode == DLA__SIZE_CENTERCROP) {
        y0 = (im->h - jb->h) / 2;
        x0 = (im->w - jb->w) / 2;
    } else if (ag->size_mode == DLA__SIZE_RANDCROP) {
        y0 = (int)(t->crop_y * (im->h - jb->h + 1));
        x0 = (int)(t->crop_x * (im->w - jb->w + 1));
        y0 = y0 > im->h - jb->h ? im->h - jb->h : y0;
        x0 = x0 > im->w - jb->w ? im->w - jb->w : x0;
    }
    /* The fill is given in 8-bit units; the samples are the file's. */
    const double unit = dla__image_unit(im);
    double fill[3];
    for (int k = 0; k < 3; k++)
        fill[k] = (g->fill_per_channel ? g->fill_value[k] : g->fill_value[0]) * unit;
    size_t hw = (size_t)jb->h * (size_t)jb->w;
    for (int xo = 0; xo < jb->w; xo++)
        for (int yo = 0; yo < jb->h; yo++) {
            double rx, ry;
            if (ag->size_mode == DLA__SIZE_RESIZE) {
                rx = (xo + 0.5) * sx - 0.5;
                ry = (yo + 0.5) * sy - 0.5;
                rx = rx < 0 ? 0 : rx > im->w - 1 ? im->w - 1 : rx;
                ry = ry < 0 ? 0 : ry > im->h - 1 ? im->h - 1 : ry;
            } else {
                rx = x0 + xo;
                ry = y0 + yo;
            }
            double dx = rx - cx - t->tx, dy = ry - cy - t->ty;
            if (t->flip_x)
                dx = -dx;
            if (t->flip_y)
                dy = -dy;
            double u = i00 * dx + i01 * dy, v = i10 * dx + i11 * dy;
            /* A flattening transform: outside the image, so the fill. */
            double xi = flat ? -2 : snap(cx + u), yi = flat ? -2 : snap(cy + v);
            double fx0 = floor(xi), fy0 = floor(yi), fx = xi - fx0, fy = yi - fy0;
            for (int k = 0; k < jb->c; k++) {
                double acc = 0;
                for (int j = 0; j < 4; j++) {
                    double px = fx0 + (j & 1), py = fy0 + (j >> 1);
                    double wgt = ((j & 1) ? fx : 1 - fx) * ((j >> 1) ? fy : 1 - fy);
                    if (wgt == 0)
                        continue;
                    if (px < 0 || py < 0 || px >= im->w || py >= im->h)
                        acc += wgt * fill[k];
                    else
                        acc += wgt * sample(im, ag->color,
                                            (size_t)py * (size_t)im->w + (size_t)px, k);
                }
                put(jb, dst, (size_t)yo + (size_t)jb->h * (size_t)xo + hw * (size_t)k, acc, unit);
            }
        }
}

static void record_error(job *jb, int64_t i, dla_status st, const char *msg)
{
    pthread_mutex_lock(&jb->lock);
    if (i < jb->first_bad) {
        jb->first_bad = i;
        jb->status = st;
        snprintf(jb->message, sizeof jb->message, "%s", msg);
    }
    pthread_mutex_unlock(&jb->lock);
}

static void read_one(job *jb, int64_t i)
{
    dla_imds *ds = jb->ds;
    int64_t ci = ds->idx[jb->obs[i]];
    const char *path = ds->cat->paths[ci];
    if (ds->skip_corrupt && __atomic_load_n(&ds->cat->skipped[ci], __ATOMIC_RELAXED)) {
        jb->bad[i] = 1;
        return;
    }
    dla__image im;
    char err[1024];
    dla_status st = dla__image_decode(path, &im, err, sizeof err);
    if (st == DLA_ERR_FORMAT && ds->skip_corrupt) {
        jb->bad[i] = 1;
        if (!__atomic_exchange_n(&ds->cat->skipped[ci], 1, __ATOMIC_RELAXED))
            dla__log(DLA_LOG_WARN, "image datastore: skipping %s", err);
        return;
    }
    if (st != DLA_OK) {
        record_error(jb, i, st, err);
        return;
    }
    const dla__imds_augment *ag = ds->augment;
    /* A colour preprocessing takes gray and RGB alike (the decoder gives
     * no other channel count). */
    const int channels_ok = im.c == jb->c || (ag && ag->color != DLA__COLOR_NONE);
    if (ag && ag->size_mode != DLA__SIZE_RESIZE && (im.h < jb->h || im.w < jb->w)) {
        snprintf(err, sizeof err,
                 "%s: the image is %dx%d (rows x columns), smaller than the output size %dx%d "
                 "that OutputSizeMode \"%s\" crops to (a crop never resizes; \"resize\" "
                 "does)",
                 path, im.h, im.w, jb->h, jb->w,
                 ag->size_mode == DLA__SIZE_CENTERCROP ? "centercrop" : "randcrop");
        record_error(jb, i, DLA_ERR_FORMAT, err);
    } else if (!channels_ok || (!jb->xf && (im.h != jb->h || im.w != jb->w))) {
        snprintf(err, sizeof err,
                 "%s: the image is %dx%dx%d, but the datastore's images are %dx%dx%d (the size "
                 "of %s)%s",
                 path, im.h, im.w, im.c, ds->cat->h, ds->cat->w, ds->cat->c, ds->cat->paths[ds->cat->size_from],
                 !channels_ok ? "; images of one datastore have one channel count (or an "
                                "augmented datastore's ColorPreprocessing makes them one)"
                               : "; an augmented datastore (dla_augimds_create) resizes them");
        record_error(jb, i, DLA_ERR_FORMAT, err);
    } else {
        unsigned char *dst = jb->buf + (size_t)i * (size_t)jb->h * (size_t)jb->w *
                                           (size_t)jb->c * jb->esize;
        if (jb->xf)
            warp(jb, &im, &jb->xf[i], dst);
        else
            copy_plain(jb, &im, dst);
    }
    dla__image_free(&im);
}

static void *worker(void *arg)
{
    job *jb = arg;
    for (;;) {
        int64_t i = __atomic_fetch_add(&jb->next, 1, __ATOMIC_RELAXED);
        if (i >= jb->count)
            break;
        read_one(jb, i);
    }
    return NULL;
}

/* The transforms of count images, drawn in order from rng, or from the
 * augmented datastore's shared stream (under its lock) when rng is NULL. */
static void draw(dla__imds_augment *a, dla__data_rng *rng, int64_t count, xform *xf)
{
    const dla_image_augmenter *g = &a->aug;
    int shared = rng == NULL;
    if (shared) {
        pthread_mutex_lock((pthread_mutex_t *)a->lock);
        rng = &a->rng;
    }
    for (int64_t i = 0; i < count; i++) {
        xform t = {.scale_x = 1, .scale_y = 1};
        if (g->rand_x_reflection)
            t.flip_x = dla__data_rng_double(rng) < 0.5;
        if (g->rand_y_reflection)
            t.flip_y = dla__data_rng_double(rng) < 0.5;
        if (g->rand_rotation[0] != 0 || g->rand_rotation[1] != 0)
            t.angle = dla__data_rng_uniform(rng, g->rand_rotation[0], g->rand_rotation[1]);
        const int one_scale = g->rand_scale[0] != 0 || g->rand_scale[1] != 0;
        if (one_scale)
            t.scale_x = t.scale_y = dla__data_rng_uniform(rng, g->rand_scale[0], g->rand_scale[1]);
        if (g->rand_x_translation[0] != 0 || g->rand_x_translation[1] != 0)
            t.tx = dla__data_rng_uniform(rng, g->rand_x_translation[0], g->rand_x_translation[1]);
        if (g->rand_y_translation[0] != 0 || g->rand_y_translation[1] != 0)
            t.ty = dla__data_rng_uniform(rng, g->rand_y_translation[0], g->rand_y_translation[1]);
        /* Drawn after the ones above, so that their sequences stay what
         * they were before these existed. RandXScale and RandYScale are
         * ignored when RandScale is set, as MATLAB's. */
        if (!one_scale && (g->rand_x_scale[0] != 0 || g->rand_x_scale[1] != 0))
            t.scale_x = dla__data_rng_uniform(rng, g->rand_x_scale[0], g->rand_x_scale[1]);
        if (!one_scale && (g->rand_y_scale[0] != 0 || g->rand_y_scale[1] != 0))
            t.scale_y = dla__data_rng_uniform(rng, g->rand_y_scale[0], g->rand_y_scale[1]);
        if (g->rand_x_shear[0] != 0 || g->rand_x_shear[1] != 0)
            t.shear_x = dla__data_rng_uniform(rng, g->rand_x_shear[0], g->rand_x_shear[1]);
        if (g->rand_y_shear[0] != 0 || g->rand_y_shear[1] != 0)
            t.shear_y = dla__data_rng_uniform(rng, g->rand_y_shear[0], g->rand_y_shear[1]);
        /* The crop's place is drawn before the image's size is known (the
         * draws come before the decoding, in order): a uniform per axis,
         * scaled to the positions that fit when the image is read. */
        if (a->size_mode == DLA__SIZE_RANDCROP) {
            t.crop_y = dla__data_rng_double(rng);
            t.crop_x = dla__data_rng_double(rng);
        }
        xf[i] = t;
    }
    if (shared)
        pthread_mutex_unlock((pthread_mutex_t *)a->lock);
}

void dla__imds_augment_skip(dla_imds *ds, dla__data_rng *aug_rng, int64_t count)
{
    xform scratch[64];
    while (ds->augment && aug_rng && count > 0) {
        const int64_t n = count < 64 ? count : 64;
        draw(ds->augment, aug_rng, n, scratch);
        count -= n;
    }
}

dla_status dla__imds_read_host(dla_imds *ds, const int64_t *obs, int64_t count,
                               dla__data_rng *aug_rng, void **bufp, int32_t *labels, int64_t *kept, int64_t *nkept, const char *op)
{
    *bufp = NULL;
    *nkept = 0;
    job *jb = dla__data_calloc(1, sizeof *jb);
    if (!jb)
        return dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: out of memory", op);
    jb->ds = ds;
    jb->obs = obs;
    jb->count = count;
    dla__imds_out_size(ds, &jb->h, &jb->w, &jb->c);
    jb->esize = dla_dtype_size(ds->dtype);
    jb->first_bad = count;
    size_t per = (size_t)jb->h * (size_t)jb->w * (size_t)jb->c * jb->esize;
    dla_status st = DLA_OK;
    if (count > 0 && per > SIZE_MAX / (size_t)count)
        st = dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: %lld images do not fit in memory", op,
                            (long long)count);
    xform *xf = NULL;
    if (st == DLA_OK) {
        jb->buf = dla__data_malloc(per * (size_t)(count ? count : 1));
        jb->bad = dla__data_calloc((size_t)(count ? count : 1), 1);
        if (ds->augment)
            jb->xf = xf = dla__data_malloc(sizeof *xf * (size_t)(count ? count : 1));
        if (!jb->buf || !jb->bad || (ds->augment && !xf))
            st = dla__data_fail(DLA_ERR_OUT_OF_MEMORY, "%s: cannot hold %lld images of %zu bytes",
                                op, (long long)count, per);
    }
    if (st == DLA_OK && pthread_mutex_init(&jb->lock, NULL) != 0)
        st = dla__data_fail(DLA_ERR_STATE, "%s: cannot make a lock", op);
    if (st == DLA_OK) {
        if (xf)
            draw(ds->augment, aug_rng, count, xf);
        /* The calling thread reads too; helpers only for what is left. */
        pthread_t helpers[64];
        int nh = 0;
        for (int t = 1; t < ds->threads && t < count && nh < 64; t++)
            if (pthread_create(&helpers[nh], NULL, worker, jb) == 0)
                nh++;
        worker(jb);
        for (int t = 0; t < nh; t++)
            pthread_join(helpers[t], NULL);
        pthread_mutex_destroy(&jb->lock);
        if (jb->first_bad < count)
            st = dla__data_fail(jb->status, "%s: %s", op, jb->message);
    }
    if (st == DLA_OK) {
        /* Close the gaps of the skipped images. */
        int64_t k = 0;
        for (int64_t i = 0; i < count; i++) {
            if (jb->bad[i])
                continue;
            if (k != i)
                memmove(jb->buf + (size_t)k * per, jb->buf + (size_t)i * per, per);
            if (labels)
                labels[k] = ds->cat->labels ? ds->cat->labels[ds->idx[obs[i]]] : -1;
            if (kept)
                kept[k] = i;
            k++;
        }
        if (k == 0 && count > 0)
            st = dla__data_fail(DLA_ERR_FORMAT,
                                "%s: all %lld images to read were corrupt and skipped (the first "
                                "is %s)",
                                op, (long long)count, ds->cat->paths[ds->idx[obs[0]]]);
        *nkept = k;
    }
    dla__data_free(xf);
    dla__data_free(jb->bad);
    if (st == DLA_OK)
        *bufp = jb->buf;
    else
        dla__data_free(jb->buf);
    dla__data_free(jb);
    return st;
}
