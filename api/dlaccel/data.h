/*
 * dlaccel/data.h - included by dlaccel.h; do not include it directly.
 *
 * The data pipeline: IDX files (Fashion-MNIST), lists of variable-length
 * sequences with MATLAB's padding rules, a mini-batch queue (MATLAB's
 * minibatchqueue) with shuffling, partitions and background dispatch, and
 * the synthetic waveforms of MATLAB's sequence examples.
 *
 *     dla_tensor *x, *t;                      // 28x28x1x60000 SSCB, 1x60000 CB
 *     if (dla_fashion_mnist_load(NULL, "train", NULL, &x, &t) != DLA_OK)
 *         fprintf(stderr, "%s\n", dla_last_error());
 *     dla_mbq *mbq;
 *     dla_mbq_create(2, (dla_mbq_input[]){{.tensor = x}, {.tensor = t}},
 *                    &(dla_mbq_options){.mini_batch_size = 128,
 *                                       .dispatch_in_background = 1}, &mbq);
 *     for (int epoch = 0; epoch < 3; epoch++) {
 *         dla_mbq_shuffle(mbq);
 *         while (dla_mbq_hasdata(mbq)) {
 *             dla_scope_begin();
 *             dla_tensor *b[2];
 *             dla_mbq_next(mbq, 2, b);         // the next batch is made meanwhile
 *             ... dla_feval(model_loss, net, 2, b, ...) ...
 *             dla_scope_end();
 *         }
 *     }
 *     dla_mbq_free(mbq);
 *
 * Host randomness: shuffling and the synthetic data draw from a host stream
 * of their own, not from the tensors' Philox stream (dla_rng_seed does not
 * touch it). It is numpy's np.random.default_rng(seed), draw for draw, so a
 * pipeline written with numpy (the PyTorch references) can be reproduced:
 * a queue's k-th dla_mbq_shuffle gives the order of the k-th
 * default_rng(seed).permutation(n), bit for bit; gaussian draws agree with
 * numpy's to about 1e-15, below what single precision keeps.
 *
 * Tensors returned here follow dlaccel.h's rules: a +1 reference owned by
 * the caller, or by the innermost open scope. Functions that return a
 * status set dla_last_error() on failure, naming the function, the
 * argument or the file, and what is wrong.
 */
/* Before the guard: included first, this header still comes in dlaccel.h's
 * order, after the declarations it uses. */
#include <dlaccel.h>
#ifndef DLACCEL_DATA_H
#define DLACCEL_DATA_H

#ifdef __cplusplus
extern "C" {
#endif

/* -------------------------------------------------------------- IDX files */

/* The element types of the IDX format (LeCun's MNIST files): the code in
 * the third byte of the magic number, the name, the bytes per element. */
#define DLA_IDX_TYPE_LIST(X)                                                   \
    X(DLA_IDX_U8, 0x08, "ubyte", 1)                                            \
    X(DLA_IDX_I8, 0x09, "byte", 1)                                             \
    X(DLA_IDX_I16, 0x0B, "short", 2)                                           \
    X(DLA_IDX_I32, 0x0C, "int", 4)                                             \
    X(DLA_IDX_F32, 0x0D, "float", 4)                                           \
    X(DLA_IDX_F64, 0x0E, "double", 8)

typedef enum dla_idx_type {
#define DLA__IDX_TYPE_ENUM(name, code, str, size) name = code,
    DLA_IDX_TYPE_LIST(DLA__IDX_TYPE_ENUM)
#undef DLA__IDX_TYPE_ENUM
} dla_idx_type;

/* "ubyte"; "unknown" for a code not in the list. */
DLA_API const char *dla_idx_type_name(dla_idx_type type);
/* Bytes per element; 0 for a code not in the list. */
DLA_API size_t dla_idx_type_size(dla_idx_type type);

/* An IDX array in host memory, as the file holds it: dims[0] varies
 * slowest (row-major, so a file of N images of R rows and C columns has
 * dims {N, R, C}), elements in file order and in the host's byte order. */
typedef struct dla_idx {
    dla_idx_type type;
    int ndims;                   /* 1..DLA_MAX_DIMS */
    int64_t dims[DLA_MAX_DIMS];
    int64_t numel;               /* the product of the dims */
    void *data;                  /* numel elements; freed by dla_idx_free */
} dla_idx;

/* Reads an IDX file, gzip-compressed or not (zlib tells them apart), into
 * *out, which the caller releases with dla_idx_free. The file must hold
 * exactly what its header announces. On failure *out is zeroed and the
 * message names the path and the problem:
 *   DLA_ERR_IO: the file cannot be opened (with the system's reason), its
 *     gzip stream is corrupt, or it is truncated (the bytes the header needs
 *     against the bytes there are; a gzip stream cut in its trailer, whose
 *     checksum is then missing; a FIFO no one writes to reads as empty);
 *   DLA_ERR_FORMAT: a bad magic number (the first two bytes are not zero),
 *     an unknown element type, 0 or more than DLA_MAX_DIMS dims, dims whose
 *     product overflows, or bytes left over after the data (the counts in
 *     the header are not the file's);
 *   DLA_ERR_INVALID_ARGUMENT (NULL path or out), DLA_ERR_OUT_OF_MEMORY. */
DLA_API dla_status dla_idx_read(const char *path, dla_idx *out);

/* Writes idx to path (replacing it): gzip-compressed at level 1..9, or
 * plain for level 0. Big-endian as the format requires. The file is
 * written to a temporary file in the same folder and renamed over path
 * once whole (keeping a replaced file's mode), so a failed write leaves
 * the old file as it was (a path that is not a regular file, such as
 * /dev/null, is written in place). Errors:
 * DLA_ERR_INVALID_ARGUMENT (an unknown type, ndims out of 1..DLA_MAX_DIMS,
 * a dim outside 0..2^32-1, numel not the product of the dims, NULL data
 * with numel > 0, level out of 0..9), DLA_ERR_IO (with the system's
 * reason), DLA_ERR_OUT_OF_MEMORY. */
DLA_API dla_status dla_idx_write(const char *path, const dla_idx *idx, int level);

/* Frees idx->data and zeroes *idx. NULL-safe; safe on a zeroed struct. */
DLA_API void dla_idx_free(dla_idx *idx);

/* ------------------------------------------------------------ Fashion-MNIST */

/* Where Debian's dataset-fashion-mnist package puts the files. */
#define DLA_FASHION_MNIST_DIR "/usr/share/datasets/fashion-mnist"
#define DLA_FASHION_MNIST_CLASSES 10

typedef struct dla_fashion_mnist_options {
    /* DLA_F32 (zero, the default) or DLA_F64: pixels scaled to [0, 1] (the
     * byte divided by 255). DLA_U8: the bytes 0..255 as stored, a quarter of
     * the memory; cast and scale per mini-batch (dla_mbq_input.cast and a
     * mini_batch_fcn). The training images take 188 MB in single and, while
     * loading, a host copy as large again; 47 MB in uint8, with no copy
     * beyond the file's bytes. MATLAB's "zerocenter" or "zscore"
     * normalization is the input layer's job, not the loader's. */
    dla_dtype dtype;
    /* Labels as a 10xN "CB" one-hot tensor of dtype (single for DLA_U8)
     * instead of 1xN "CB" int32 class numbers. */
    int onehot;
    /* Only the first count observations; 0: all (60000 train, 10000 test). */
    int64_t count;
} dla_fashion_mnist_options;

/* Loads a split of Fashion-MNIST from dir (NULL: DLA_FASHION_MNIST_DIR):
 * split "train" reads train-images-idx3-ubyte.gz and
 * train-labels-idx1-ubyte.gz, "test" the t10k-* files (an uncompressed file
 * without the .gz is taken when the .gz is absent).
 * *images: 28x28x1xN "SSCB", height first as MATLAB's imageInputLayer
 * expects (row r, column c of image n at r + 28*c + 784*n).
 * *labels: 1xN "CB" int32 class numbers 0..9 (dla_fashion_mnist_class_name),
 * or one-hot (opts->onehot). Either pointer may be NULL to skip that output
 * (without images the images file is not read; the labels file is read
 * for images alone too, to check their count). Both are made on the
 * current device.
 * Errors name the file: those of dla_idx_read (DLA_ERR_IO for a missing
 * file, with a hint to install dataset-fashion-mnist), DLA_ERR_FORMAT for
 * files that are not 3-D ubyte images (square, rows x columns countable
 * in int64) / 1-D ubyte labels, image and label counts that differ, or a
 * label above 9; DLA_ERR_INVALID_ARGUMENT for an
 * unknown split, dtype or a negative count. The outputs are NULL on error. */
DLA_API dla_status dla_fashion_mnist_load(const char *dir, const char *split,
                                          const dla_fashion_mnist_options *opts,
                                          dla_tensor **images, dla_tensor **labels);

/* "T-shirt/top", "Trouser", ... "Ankle boot" for labels 0..9; "unknown"
 * otherwise. */
DLA_API const char *dla_fashion_mnist_class_name(int label);

/* ---------------------------------------------------------------- sequences */

/* A list of sequences of one channel count and any lengths (MATLAB's cell
 * array of C-by-T sequences), held in host memory as single. */
typedef struct dla_seqlist dla_seqlist;

/* An empty list of sequences with channels >= 1 channels. NULL on failure
 * (DLA_ERR_INVALID_ARGUMENT, DLA_ERR_OUT_OF_MEMORY). */
DLA_API dla_seqlist *dla_seqlist_create(int64_t channels);
/* Frees the list and its data. NULL-safe. A list freed already, given
 * here or to the other dla_seqlist_ calls or dla_padsequences, is refused
 * and logged (docs/checks.md). */
DLA_API void dla_seqlist_free(dla_seqlist *s);
/* Appends a copy of data: a C-by-length sequence, column-major (the C
 * values of step 0, then of step 1, ...). length >= 0. Errors:
 * DLA_ERR_INVALID_ARGUMENT, DLA_ERR_OUT_OF_MEMORY. */
DLA_API dla_status dla_seqlist_append(dla_seqlist *s, const float *data, int64_t length);
/* Appends a copy of x, a C-by-T tensor: formatted "CT" or unformatted 2-D
 * (C rows, T columns), of any real dtype (rounded to single, as the list
 * holds its values: a double network trained on the list sees single
 * precision data), on any device. Errors: those of
 * dla_seqlist_append, x's own error, DLA_ERR_SHAPE (not C-by-T with the
 * list's C). */
DLA_API dla_status dla_seqlist_append_tensor(dla_seqlist *s, dla_tensor *x);
/* The number of sequences, the channel count, sequence i's length. */
DLA_API int64_t dla_seqlist_count(const dla_seqlist *s);
DLA_API int64_t dla_seqlist_channels(const dla_seqlist *s);
DLA_API int64_t dla_seqlist_length(const dla_seqlist *s, int64_t i); /* -1 out of range */
/* Sequence i's C x length values (valid until the next append: an append
 * may move them, though it may take its data from them, to copy a
 * sequence of the list); NULL out of range. */
DLA_API const float *dla_seqlist_data(const dla_seqlist *s, int64_t i);

/* How sequences of different lengths become one "CBT" array (MATLAB's
 * SequenceLength, SequencePaddingValue and SequencePaddingDirection of
 * trainingOptions and padsequences). Zeroed fields are MATLAB's defaults. */
typedef struct dla_sequence_options {
    /* "longest" (default): pad every sequence to the longest one;
     * "shortest": truncate every sequence to the shortest one;
     * a positive whole number written out ("100"): pad or truncate every
     * sequence to that many steps. (trainnet also splits long sequences
     * into several mini-batches for a number; that is trainnet's business,
     * here the number is padsequences' Length.) */
    const char *length;
    /* The value of padded steps (default 0). */
    double padding_value;
    /* "right" (default): pad or truncate at the end; "left": at the start,
     * so that the last steps line up. */
    const char *padding_direction;
} dla_sequence_options;

/* MATLAB padsequences: the sequences indices[0..n-1] of seqs (NULL: the
 * first n) as one C x n x T "CBT" single array *x, with T chosen by
 * opts->length, and, when mask is not NULL, *mask: a 1 x n x T "CBT"
 * logical array, 1 at the steps that hold data and 0 at padding (it
 * broadcasts against x in the losses' mask argument). n >= 1. Both are
 * made on the current device. Errors: DLA_ERR_INVALID_ARGUMENT (n < 1, an
 * index out of range, an option value not listed above), the tensors'
 * creation errors. Outputs are NULL on error. */
DLA_API dla_status dla_padsequences(const dla_seqlist *seqs, int64_t n, const int64_t *indices,
                                    const dla_sequence_options *opts, dla_tensor **x,
                                    dla_tensor **mask);

/* --------------------------------------------------------- image datastores */

/* MATLAB imageDatastore over a folder tree of PNG and JPEG files, with
 * labels from the folder names:
 *
 *     // imds = imageDatastore(folder, 'IncludeSubfolders', true,
 *     //                       'LabelSource', 'foldernames');
 *     // [imdsTrain, imdsTest] = splitEachLabel(imds, 0.9, "randomized");
 *     dla_imds *imds, *split[2];
 *     dla_imds_create("data/train", NULL, &imds);
 *     dla_imds_split_each_label(imds, 1, (double[]){0.9}, "randomized", 42, split);
 *     dla_train_data data = {.images = split[0]};   // labels from the folders
 *
 * The files are found when the datastore is made: every regular file whose
 * name ends in .png, .jpg or .jpeg (any case) under the folder, sorted by
 * path (byte order), so the order is the same on every machine. The first
 * file is decoded then to learn the datastore's image size; the others are
 * read only when asked for. Which decoder reads a file is told by its
 * signature, not its name: libpng for PNG, libjpeg-turbo for JPEG.
 *
 * An image is read as H x W x C (H rows first, as MATLAB), C = 1 for gray
 * and 3 for colour (alpha dropped, a tRNS chunk's transparency too,
 * palettes expanded; a 16-bit PNG's samples v read as v / 65535 in single
 * or double, round(v / 257) as DLA_U8). MATLAB's imread composites
 * transparent pixels onto the file's bKGD colour or black, and gives an
 * indexed PNG's indices: docs/data.md. Images of a datastore must all
 * have its size, except through an
 * augmented datastore that resizes or crops them (dla_augimds_create).
 *
 * Labels ("foldernames"): a file's class is the name of the folder that
 * holds it (a top folder given as "." or ".." by its real name); the class list (MATLAB's categories) is the sorted set of those
 * names, and a label is the class's 0-based number in it.
 *
 * Bad input is an error naming the file or folder, never a crash or a
 * silently wrong label (DLA_ERR_IO when a folder or file cannot be read;
 * DLA_ERR_FORMAT for a corrupt or truncated image, a file that is neither
 * PNG nor JPEG, a CMYK JPEG, a progressive JPEG of more than 1000 scans
 * (encoders write about 10; each walks the whole image, so a small forged
 * file held the decoder for minutes), or an image whose size is not the
 * datastore's;
 * DLA_ERR_INVALID_ARGUMENT for an empty folder, a class folder with no
 * image file, or an image right in the top folder where its label would be
 * the top folder's name). With skip_corrupt, corrupt files (not those of
 * another size) are left out of the batches they fall in, with a warning
 * on stderr naming each, once; a read or batch whose files are all corrupt
 * has nothing to give and fails (DLA_ERR_FORMAT naming the first), which
 * ends dla_trainnet: a mini-batch size of a few files over a folder with
 * many corrupt ones can meet such a batch.
 *
 * Thread safety: a datastore may feed several mini-batch queues at once
 * (partitions read on their own threads); the calls below that change it
 * (read, reset, shuffle, set_read_size) must not race one another.
 */
typedef struct dla_imds dla_imds;

typedef struct dla_imds_options {
    /* Only the files right in the folder (MATLAB's default
     * IncludeSubfolders false); 0, the default here: the whole tree, as
     * 'IncludeSubfolders', true. */
    int top_folder_only;
    /* "foldernames" (NULL, the default here) or "none" (no labels: the
     * label outputs are NULL, dla_imds_labels fails). */
    const char *label_source;
    /* ReadSize: images per dla_imds_read; 1 when 0. */
    int64_t read_size;
    /* The images' dtype: DLA_F32 (0, the default) or DLA_F64 as pixel/255
     * in [0, 1], as dla_fashion_mnist_load gives them; DLA_U8: the bytes. */
    dla_dtype dtype;
    /* The stream of dla_imds_shuffle (np.random.default_rng(seed)). */
    uint64_t seed;
    /* Leave corrupt files out with a warning naming each instead of
     * failing the read. */
    int skip_corrupt;
    /* Threads that decode the images of one read or mini-batch: 1 when 0
     * (the mini-batch queue's dispatch thread alone), at most 64. */
    int read_threads;
} dla_imds_options;

/* MATLAB imageDatastore(folder, ...). opts may be NULL. Errors (*out NULL):
 * DLA_ERR_INVALID_ARGUMENT (NULL folder or out, an unknown option value, no
 * image file under folder, an empty class folder, an image in the top
 * folder with "foldernames"), DLA_ERR_IO (the folder or a subfolder cannot
 * be read), the first image's decoding errors, DLA_ERR_OUT_OF_MEMORY. */
DLA_API dla_status dla_imds_create(const char *folder, const dla_imds_options *opts,
                                   dla_imds **out);
/* Frees ds (queues made over it hold a reference of their own, so it may
 * be freed while they run). NULL-safe. */
DLA_API void dla_imds_free(dla_imds *ds);

/* numel(imds.Files); the path and the class number of file i (0-based, in
 * the current order); NULL and -1 out of range (-1 also without labels). */
DLA_API int64_t dla_imds_num_files(const dla_imds *ds);
DLA_API const char *dla_imds_file(const dla_imds *ds, int64_t i);
DLA_API int dla_imds_label(const dla_imds *ds, int64_t i);
/* numel(categories(imds.Labels)) and class k's name (NULL out of range). */
DLA_API int dla_imds_num_categories(const dla_imds *ds);
DLA_API const char *dla_imds_category(const dla_imds *ds, int k);
/* countEachLabel: counts[k] files of class k, k < dla_imds_num_categories. */
DLA_API dla_status dla_imds_count_each_label(const dla_imds *ds, int64_t *counts);
/* The labels of every file in the current order: 1 x N "CB" int32 class
 * numbers on the current device (trainnet's targets). NULL and the error
 * for a datastore without labels. */
DLA_API dla_tensor *dla_imds_labels(const dla_imds *ds);
/* The size images are read at: H, W, C (the output size for an augmented
 * datastore). */
DLA_API void dla_imds_image_size(const dla_imds *ds, int64_t size[3]);
/* Files skipped as corrupt so far (skip_corrupt). */
DLA_API int64_t dla_imds_num_skipped(const dla_imds *ds);

/* MATLAB hasdata, reset, shuffle (in place here; MATLAB returns a
 * shuffled copy: dla_imds_subset makes copies), ReadSize. */
DLA_API int dla_imds_hasdata(const dla_imds *ds);
DLA_API void dla_imds_reset(dla_imds *ds);
DLA_API void dla_imds_shuffle(dla_imds *ds);
DLA_API dla_status dla_imds_set_read_size(dla_imds *ds, int64_t read_size);

/* MATLAB read: the next ReadSize images (fewer at the end) as one
 * H x W x C x n "SSCB" tensor *images, and their 1 x n "CB" int32 labels
 * (labels may be NULL; it is set to NULL without labels). Skipped corrupt
 * files are left out of both. Errors (outputs NULL): DLA_ERR_STATE when
 * no data is left (dla_imds_reset), the files' errors naming each. */
DLA_API dla_status dla_imds_read(dla_imds *ds, dla_tensor **images, dla_tensor **labels);
/* MATLAB readall: every image, in the current order, in one tensor
 * (mind the memory: this is the one call whose size is the dataset's). */
DLA_API dla_status dla_imds_readall(dla_imds *ds, dla_tensor **images, dla_tensor **labels);
/* MATLAB readimage(imds, i) for files idx[0..n-1]: like read, for any
 * files (0-based, in the current order). */
DLA_API dla_status dla_imds_read_files(dla_imds *ds, int64_t n, const int64_t *idx,
                                       dla_tensor **images, dla_tensor **labels);

/* MATLAB subset(imds, indices): a new datastore over files idx[0..n-1] of
 * ds's current order (0-based), with ds's options. */
DLA_API dla_status dla_imds_subset(dla_imds *ds, int64_t n, const int64_t *idx, dla_imds **out);
/* MATLAB partition(imds, n, index) with a 0-based index: part index of n
 * contiguous parts of the current order, sizes differing by at most one
 * (the first parts take the remainder). */
DLA_API dla_status dla_imds_partition(dla_imds *ds, int n, int index, dla_imds **out);
/* MATLAB [ds1, ..., dsN+1] = splitEachLabel(imds, p1, ..., pN [,
 * "randomized"]): per class, the first p1 files (a fraction of the class
 * in (0, 1), or a whole count >= 1) go to out[0], the next p2 to out[1],
 * ..., the rest to out[n]. As MATLAB's, split s ends at the class's
 * count times p1 + ... + ps rounded to the nearest (halves up; whole
 * counts added as they are): 0.7 of 5 files is 4; 0.3, 0.3 of 5 are 2
 * and 1. With mode "randomized" each
 * class's files are drawn at random (np.random.default_rng(seed)), else
 * taken in order; each output keeps ds's order. out has n + 1 entries.
 * Errors: DLA_ERR_INVALID_ARGUMENT (a datastore without labels, n < 1, a p
 * that is neither, fractions adding up to more than 1, counts more than a
 * class has (naming it), an unknown mode). */
DLA_API dla_status dla_imds_split_each_label(dla_imds *ds, int n, const double *p,
                                             const char *mode, uint64_t seed, dla_imds **out);

/* MATLAB imageDataAugmenter: the random transformations of an augmented
 * datastore, drawn per image. Zeroed fields do nothing. Directions are as
 * displayed (row 1 at the top; docs/data.md, "Augmentation"). */
typedef struct dla_image_augmenter {
    int rand_x_reflection;          /* RandXReflection: mirror left-right, p = 0.5 */
    int rand_y_reflection;          /* RandYReflection: mirror top-bottom, p = 0.5 */
    double rand_rotation[2];        /* RandRotation: degrees, uniform in [lo, hi]; a
                                     * positive angle turns the image
                                     * counterclockwise, as imrotate */
    double rand_scale[2];           /* RandScale: uniform in [lo, hi]; {0, 0}: 1 */
    double rand_x_translation[2];   /* RandXTranslation: pixels, uniform in [lo, hi];
                                     * positive moves the image right */
    double rand_y_translation[2];   /* RandYTranslation: pixels; positive moves it down */
    double rand_x_scale[2];         /* RandXScale, RandYScale: the width and the height
                                     * apart, each uniform in [lo, hi]; {0, 0}: 1. As
                                     * MATLAB's, ignored (and not drawn) when
                                     * rand_scale is set */
    double rand_y_scale[2];
    double rand_x_shear[2];         /* RandXShear: degrees in (-90, 90), uniform in
                                     * [lo, hi]; x moves by tan(angle) * y (y down from
                                     * the centre: a positive angle slants the bottom
                                     * to the right) */
    double rand_y_shear[2];         /* RandYShear: y moves by tan(angle) * x (a positive
                                     * angle slants the right side down) */
    /* FillValue: the value of the points the transform brings in from
     * outside the image, in the files' 8-bit units (0..255, as MATLAB's
     * uint8 images take it; 128 is mid gray): fill_value[0] for every
     * channel, or with fill_per_channel fill_value[k] for channel k of a
     * 3-channel output (fill_value[1] or [2] set without it is refused).
     * 0 by default, as MATLAB's. */
    double fill_value[3];
    int fill_per_channel;
} dla_image_augmenter;

/* augmentedImageDatastore's options besides the augmenter. */
typedef struct dla_augimds_options {
    /* OutputSizeMode: "resize" (NULL, the default), "centercrop" or
     * "randcrop". The crops take output_size[0] x output_size[1] pixels of
     * the (transformed) image without resizing it: "centercrop" from its
     * centre (the first row floor((H - h) / 2), 0-based, the same for
     * columns, as MathWorks' augmentedImageDatastore.m), "randcrop" from a
     * place drawn per image, uniformly among all that fit, from the
     * datastore's stream after the transform's draws. An image smaller than the output size is refused
     * (DLA_ERR_FORMAT naming the file and both sizes). */
    const char *output_size_mode;
    /* ColorPreprocessing: "none" (NULL, the default), "gray2rgb" (a gray
     * image's channel replicated to 3; RGB images as they are) or
     * "rgb2gray" (MATLAB's rgb2gray of the file's image: about 0.2989 R +
     * 0.5870 G + 0.1140 B, rounded to the file's 8 or 16 bits; gray
     * images as they are).
     * Either lets one datastore mix gray and RGB files; the output has 3
     * channels or 1. Applied before the transforms. */
    const char *color_preprocessing;
} dla_augimds_options;

/* MATLAB augmentedImageDatastore(outputSize, imds, 'DataAugmentation',
 * aug): reads ds's files, transforms each image by aug (about its centre,
 * in its own pixels, in MATLAB's order: rotation, shear, scale,
 * reflection, translation;
 * pixels that the transform brings in from outside the image are
 * aug->fill_value, 0 by default) and resizes it (or, with
 * dla_augimds_create_opts, crops it) to
 * output_size[0] x output_size[1] (bilinear, replicating the edge as
 * imresize does, so an upsized image keeps its border; MATLAB's
 * augmentedImageDatastore resizes bilinearly too, after the transform,
 * and antialiases when it shrinks, which this does not), so images of any size may be mixed (but
 * not of different channel counts without a colour preprocessing). aug
 * may be NULL (a resize only). The
 * random draws come from a stream of its own (np.random.default_rng(seed)'s,
 * the library's host stream), in the order the images are read. A
 * mini-batch queue over it draws from a stream of the queue's own instead
 * (seeded the same; a partition's from the seed and its index), in the
 * order of the batches the queue hands out, so that its draws never depend
 * on timing (see dispatch_in_background). It shares ds's files and labels and
 * takes its options; ds may be freed after. Errors: DLA_ERR_INVALID_ARGUMENT
 * (ds augmented already, a size below 1, a range with lo > hi or a bound
 * that is not finite, a scale <= 0, a shear angle outside (-90, 90), a fill
 * value that is not finite, fill_value[1] or [2] set without
 * fill_per_channel, fill_per_channel for an output that does not have 3
 * channels). */
DLA_API dla_status dla_augimds_create(const int64_t output_size[2], dla_imds *ds,
                                      const dla_image_augmenter *aug, uint64_t seed,
                                      dla_imds **out);
/* The same with augmentedImageDatastore's OutputSizeMode and
 * ColorPreprocessing (opts may be NULL: dla_augimds_create's defaults).
 * Errors as dla_augimds_create's, and DLA_ERR_INVALID_ARGUMENT for an
 * unknown mode or preprocessing (naming it and the choices). */
DLA_API dla_status dla_augimds_create_opts(const int64_t output_size[2], dla_imds *ds,
                                           const dla_image_augmenter *aug, uint64_t seed,
                                           const dla_augimds_options *opts, dla_imds **out);

/* ---------------------------------------------------------- datastores */

/* MATLAB's generic datastores: arrayDatastore, fileDatastore with a
 * ReadFcn, transform, combine and custom datastores (a matlab.io.Datastore
 * subclass), for data that is not images in a folder. A datastore hands
 * out observations, each one or more tensors (its outputs, at most
 * DLA_DATASTORE_MAX_OUTPUTS); a mini-batch queue takes one as an input
 * ({.datastore = ds}), one queue output per datastore output.
 *
 *     // ds = combine(arrayDatastore(X, 'IterationDimension', 4),
 *     //              transform(fileDatastore(folder, 'ReadFcn', @readLabel), @f));
 *     dla_datastore *xs, *files, *ts, *both;
 *     dla_array_datastore(x, NULL, &xs);                 // x: 28x28x1xN "SSCB"
 *     dla_file_datastore(1, (const char *[]){"labels"}, (const char *[]){".txt", NULL},
 *                        1, read_label, NULL, &files);
 *     dla_transform(files, 0, to_onehot, NULL, &ts);
 *     dla_combine(2, (dla_datastore *[]){xs, ts}, &both);
 *     dla_datastore_free(xs); dla_datastore_free(files); dla_datastore_free(ts);
 *     dla_mbq_create(1, (dla_mbq_input[]){{.datastore = both}}, &opts, &mbq); // 2 outputs
 *
 * trainnet, testnet and ValidationData take such a datastore of
 * {predictors, targets} as it is (MATLAB's trainnet(ds, net, ...)):
 * dla_train_data.datastore with targets NULL (api/dlaccel/train.h);
 * minibatchpredict reads its predictors and leaves the targets.
 *
 * Observations. An observation's outputs are tensors; a read (and a
 * mini-batch) joins several observations along each output's observation
 * dim: an array datastore's iteration dimension, else the output's B dim
 * when it is formatted with one, else the dim after its last (MATLAB's
 * cat(ndims + 1, ...)); a mini-batch queue input's format (MiniBatchFormat)
 * puts it at the format's B dim instead. An observation is 1 along that
 * dim; every observation of an output has one dtype and the same dims
 * (otherwise DLA_ERR_SHAPE, naming the function, the output, the
 * observation and both shapes), but for the steps of a queue's output of
 * sequences (a format with T: see dla_mbq_input), padded per batch. A
 * formatted output without a B label is
 * joined unformatted (give the queue input a format to label it).
 *
 * Two kinds of source. Indexed ones (array, file, custom with read_at,
 * and transforms and combinations of indexed ones) read any observation
 * by its number: they have a known count, and can be shuffled, subset and
 * partitioned; a mini-batch queue shuffles and partitions over them. Ones
 * read in order (a custom datastore with read/hasdata/reset, and what is
 * made of one) can only be read from the start: shuffle, subset and
 * partition fail with DLA_ERR_STATE saying so, and a queue over one hands
 * out its observations in order (dla_mbq_shuffle leaves the order and
 * sets DLA_ERR_STATE; dla_mbq_partition fails). A queue needs the count:
 * without num_observations, each queue made over such a datastore (and
 * each call of trainnet, testnet and minibatchpredict) reads it through
 * once from its start to count it, and resets it; the count stands for
 * the queue's life (its passes read that many).
 *
 * Callbacks (a file datastore's read function, a transform's function, a
 * custom datastore's calls) run inside a scope of the datastore's own, so
 * they need no releases; outputs they leave NULL, error tensors and a
 * status other than DLA_OK fail the read with the callback's message
 * (DLA_ERR_INVALID_ARGUMENT when it gave none), prefixed by the function
 * that read and what it read ("dla_mbq_next: read_fn on \"a/3.txt\": ...").
 * An indexed source's callbacks may be called from several threads at once
 * (queues, their partitions and background dispatch read on their own
 * threads): they must be safe to call so. A read of an indexed datastore
 * that fails leaves its position where it was; one of a datastore read in
 * order has read what it read (the failed observation counted: the
 * callback's position is its own), and the next read goes on after it;
 * a combination read in order reads every input's observation even when
 * one fails, each moving past it (an indexed input too), so that they
 * stay in step.
 *
 * Handles: a datastore holds references to the datastores it is made of,
 * and a queue to its datastore, so each may be freed (once) whenever the
 * caller is done with it. A freed datastore given to any call is refused
 * and logged (docs/checks.md).
 */
typedef struct dla_datastore dla_datastore;

#define DLA_DATASTORE_MAX_OUTPUTS 16

/* Drops the caller's handle; the datastore lives on while a transform,
 * combination or queue made from it does. NULL-safe. */
DLA_API void dla_datastore_free(dla_datastore *ds);
/* The outputs of an observation; 0 for NULL or a freed handle. */
DLA_API int dla_datastore_num_outputs(const dla_datastore *ds);
/* MATLAB numobservations; -1 when the source does not know it (a custom
 * datastore without num_observations, and what is made of one), until a
 * queue or trainnet has read it through for it: then the count learned. */
DLA_API int64_t dla_datastore_num_observations(const dla_datastore *ds);
/* 1 when the datastore reads any observation by its number (shuffle,
 * subset, partition work): MATLAB's isShuffleable and isPartitionable. */
DLA_API int dla_datastore_is_indexed(const dla_datastore *ds);
/* MATLAB hasdata and reset. */
DLA_API int dla_datastore_hasdata(dla_datastore *ds);
DLA_API void dla_datastore_reset(dla_datastore *ds);
/* ReadSize: observations a read joins (>= 1). An array datastore's is its
 * option's; a file datastore reads one file a read, as MATLAB's; 1 for
 * the others. DLA_ERR_INVALID_ARGUMENT for size < 1. */
DLA_API dla_status dla_datastore_set_read_size(dla_datastore *ds, int64_t size);

/* MATLAB read: the next ReadSize observations (fewer at the end), joined,
 * as n outputs (n must be dla_datastore_num_outputs), made on the current
 * device, owned as dlaccel.h says. Errors (outputs all NULL): DLA_ERR_STATE
 * when no data is left (dla_datastore_reset), DLA_ERR_INVALID_ARGUMENT for
 * a wrong n, DLA_ERR_SHAPE for observations of different shapes, a
 * callback's error. */
DLA_API dla_status dla_datastore_read(dla_datastore *ds, int n, dla_tensor **outputs);
/* MATLAB readall: every observation, joined, without moving the position
 * of an indexed datastore (one read in order is reset, read to its end and
 * reset again). Mind the memory: this is the call whose size is the data's. */
DLA_API dla_status dla_datastore_readall(dla_datastore *ds, int n, dla_tensor **outputs);

/* MATLAB shuffle(ds): a new datastore over ds's observations in a random
 * order, np.random.default_rng(seed).permutation(count)'s. */
DLA_API dla_status dla_datastore_shuffle(dla_datastore *ds, uint64_t seed, dla_datastore **out);
/* MATLAB subset(ds, indices), 0-based: a new datastore over observations
 * idx[0..n-1] of ds (n >= 0; repeats allowed). */
DLA_API dla_status dla_datastore_subset(dla_datastore *ds, int64_t n, const int64_t *idx,
                                        dla_datastore **out);
/* MATLAB partition(ds, n, index), 0-based index: part index of n
 * contiguous parts, sizes differing by at most one (the first parts take
 * the remainder). Shuffle, subset and partition fail with DLA_ERR_STATE
 * for a datastore read in order, DLA_ERR_INVALID_ARGUMENT for bad
 * arguments (an index out of range names it and the count). */
DLA_API dla_status dla_datastore_partition(dla_datastore *ds, int n, int index,
                                           dla_datastore **out);

typedef struct dla_array_datastore_options {
    /* IterationDimension, 1-based: the dim observations lie along. 0: the
     * array's B dim when it is formatted (the only one a formatted array
     * takes), else its last dim (MATLAB's default is 1; a C array's
     * observations are usually its last dim). */
    int iteration_dimension;
    /* ReadSize: observations a read joins; 1 when 0. */
    int64_t read_size;
} dla_array_datastore_options;

/* MATLAB arrayDatastore(data): one output, observation i the slice i of
 * data along the iteration dimension (1 along it, the other dims and the
 * format kept; MATLAB's OutputType "same"). data is retained (it must not
 * be changed in place meanwhile). opts may be NULL. Errors:
 * DLA_ERR_INVALID_ARGUMENT (NULL data or out, an error tensor, a scalar,
 * an iteration dimension outside 1..ndims or other than a formatted
 * array's B, a negative read_size). */
DLA_API dla_status dla_array_datastore(dla_tensor *data, const dla_array_datastore_options *opts,
                                       dla_datastore **out);

/* A file datastore's ReadFcn: reads the file at path into outputs[0..n-1]
 * (tensors it makes; they are the observation's outputs). */
typedef dla_status (*dla_file_read_fn)(void *ctx, const char *path, int n,
                                       dla_tensor **outputs);

/* MATLAB fileDatastore(locations, 'ReadFcn', read_fn, 'FileExtensions',
 * extensions, 'IncludeSubfolders', true): one observation per file, read
 * by read_fn(ctx, path, noutputs, outputs) when asked for. locations[0..
 * nlocations-1] are files (taken whatever their extension) and folders
 * (every regular file of the tree whose name ends in one of extensions,
 * any case; hidden names, starting with a dot, left out); extensions is a
 * NULL-terminated list (".csv") or NULL for every file. A folder's files
 * are sorted by path (byte order); locations keep their order. Errors:
 * DLA_ERR_INVALID_ARGUMENT (no location, noutputs outside
 * 1..DLA_DATASTORE_MAX_OUTPUTS, NULL read_fn, no file found, naming the
 * locations), DLA_ERR_IO (a location that cannot be read, with the
 * system's reason), DLA_ERR_OUT_OF_MEMORY. */
DLA_API dla_status dla_file_datastore(int nlocations, const char *const *locations,
                                      const char *const *extensions, int noutputs,
                                      dla_file_read_fn read_fn, void *ctx, dla_datastore **out);
/* The file of observation i of a file datastore (or of the file datastore
 * a subset, shuffle or partition of one was made from, in its order);
 * NULL for another kind or i out of range. Valid while ds is. */
DLA_API const char *dla_file_datastore_path(const dla_datastore *ds, int64_t i);

/* A transform's function: the nin outputs of one observation of the
 * underlying datastore in in[], the nout outputs of the transformed one
 * to set in out[]. */
typedef dla_status (*dla_transform_fn)(void *ctx, int nin, dla_tensor *const *in, int nout,
                                       dla_tensor **out);

/* MATLAB transform(ds, fn): a datastore whose observation i is fn applied
 * to ds's observation i, with noutputs outputs (0: as many as ds has).
 * MATLAB calls fn with what read returns (ReadSize observations at once);
 * here fn sees one observation, so its results join like any other's
 * (with ReadSize 1, a file datastore's, the two agree). With as many
 * outputs as ds, output j is joined as ds's output j is (an array's along
 * its iteration dimension); with another count, by the rule above. Indexed
 * when ds is; one read in order is reset, to be read from its start.
 * Errors: DLA_ERR_INVALID_ARGUMENT (NULL ds, fn or out, a freed ds,
 * noutputs outside 0..DLA_DATASTORE_MAX_OUTPUTS). */
DLA_API dla_status dla_transform(dla_datastore *ds, int noutputs, dla_transform_fn fn, void *ctx,
                                 dla_datastore **out);

/* MATLAB combine(ds[0], ..., ds[n-1]): observation i is the outputs of
 * every ds[k]'s observation i, side by side (ds[0]'s first), read in step.
 * Indexed when all are; otherwise each is reset, to be read in step from
 * its start, and the combination has data while every one has. Its count
 * is known when every one's is. Errors: DLA_ERR_INVALID_ARGUMENT (n < 1, a NULL or
 * freed datastore, more than DLA_DATASTORE_MAX_OUTPUTS outputs in all;
 * read in order, two that read one position: the same datastore twice, or
 * a datastore and a transform of it, which would pair observation i of
 * one with i + 1 of the other; a transform with both outputs reads once),
 * DLA_ERR_SHAPE (two with known, different observation counts, naming
 * both). */
DLA_API dla_status dla_combine(int n, dla_datastore *const *ds, dla_datastore **out);

/* A custom datastore (MATLAB's matlab.io.Datastore subclass, with
 * matlab.io.datastore.Shuffleable and Partitionable when read_at is
 * given). Either read_at (indexed), or read with hasdata and reset (read
 * in order). */
typedef struct dla_custom_datastore {
    int num_outputs;                  /* 1..DLA_DATASTORE_MAX_OUTPUTS */
    /* Observations: >= 0, or -1 when unknown (read in order only: a queue,
     * trainnet, testnet and minibatchpredict read it through once to count
     * it, so it must end). Required with read_at. */
    int64_t num_observations;
    /* Observation i (0..num_observations-1) into out[0..n-1]. */
    dla_status (*read_at)(void *ctx, int64_t i, int n, dla_tensor **out);
    /* The next observation into out[0..n-1]; called only while hasdata
     * answers nonzero. */
    dla_status (*read)(void *ctx, int n, dla_tensor **out);
    int (*hasdata)(void *ctx);
    void (*reset)(void *ctx);
    /* Called once with ctx when the datastore goes (not when its creation
     * fails); may be NULL. */
    void (*free)(void *ctx);
    void *ctx;
} dla_custom_datastore;

/* Makes a custom datastore from def's callbacks (copied). Errors:
 * DLA_ERR_INVALID_ARGUMENT (NULL def or out, num_outputs out of range,
 * neither read_at nor read/hasdata/reset complete, read_at without a
 * count, num_observations below -1). */
DLA_API dla_status dla_custom_datastore_create(const dla_custom_datastore *def,
                                               dla_datastore **out);

/* -------------------------------------------------------- mini-batch queue */

/* MATLAB minibatchqueue over data in memory: it hands out mini-batches of
 * observations in the current order (the sources' order until the first
 * shuffle), one output per input (and one more per sequence input that
 * asks for its mask). */
typedef struct dla_mbq dla_mbq;

/* One source of observations; exactly one of tensor, sequences, images and
 * datastore is set, and every input of a queue has the same number of
 * observations. */
typedef struct dla_mbq_input {
    /* Observations along its B dim (an unformatted tensor: along its last
     * dim). Retained by the queue. Batches are gathered on its device and
     * moved to the queue's device when that differs. */
    dla_tensor *tensor;
    /* Or: one observation per sequence, padded per batch by the queue's
     * sequence options into a C x B x T "CBT" single batch. Borrowed: it
     * must outlive the queue (and its partitions) and not change. */
    const dla_seqlist *sequences;
    /* Or: images of a datastore, one observation per file of its current
     * order when the queue is made (later shuffles of the datastore do not
     * change the queue's data), read and decoded per batch as H x W x C x B
     * "SSCB" (the datastore's dtype, then cast). Its labels are another
     * input: {.tensor = dla_imds_labels(ds)}. When skip_corrupt leaves a
     * file out, the batch leaves that observation out of every output, so
     * images and labels stay paired. At most one datastore input per
     * queue. The queue holds a reference: ds may be freed before it. */
    dla_imds *images;
    /* Or: a generic datastore (arrayDatastore, fileDatastore, transform,
     * combine, custom; see "datastores" above) with a known observation
     * count: each of its outputs is an output of the queue, in order, its
     * observations joined along the observation dim (the format's B dim
     * when a format is given). An indexed datastore is read by observation
     * number, so the queue shuffles and partitions over it (and background
     * dispatch reads ahead); one read in order is reset when the queue is
     * made and read from its start by the queue alone (do not read it
     * meanwhile), in order: shuffling it is an error (DLA_ERR_STATE as the
     * last error, the order kept), and so is partitioning the queue; two
     * inputs read in order must not read one datastore (the same one, or
     * one and a transform of it: refused, they would take each other's
     * observations). The
     * queue holds a reference: ds may be freed before it. format and cast
     * apply to every output of the datastore, formats[k] and casts[k]
     * (arrays of its output count, when given; NULL entries fall back)
     * to output k. An output whose format has a T label ("CBT") is one of
     * sequences: its observations (C x 1 x T_i, any dtype) may differ in
     * their steps alone, and each batch is padded or truncated by the
     * queue's sequence options as dla_padsequences pads a list (the same
     * values; cast first, when a cast is given, so that the padding value
     * is kept as that dtype holds it; a padding value the padded dtype
     * cannot hold exactly, such as 0.5 for int32 or -1 for uint8, is
     * refused, but with length "shortest", which pads nothing); with
     * mask, the 1 x B x T logical mask of the first such output follows
     * it (DLA_ERR_INVALID_ARGUMENT when no format has a T). */
    dla_datastore *datastore;
    const char *const *formats;
    const char *const *casts;
    /* MiniBatchFormat of this output: labels given to the batch (a
     * relabeling with the same dims, e.g. "SSCB" for an unformatted image
     * array), with B on the observation dim. NULL keeps the source's format
     * ("CBT" for sequences, which is the only one they take). */
    const char *format;
    /* OutputCast: "single", "double", "int32", "uint8" or "logical". NULL
     * keeps the source's dtype (MATLAB casts to single by default; C data
     * such as int32 labels usually wants to stay as it is). */
    const char *cast;
    /* Sequences (and a datastore's first output of sequences): the
     * 1 x B x T logical mask of valid steps is the next output, right
     * after the batch (see dla_padsequences). */
    int mask;
} dla_mbq_input;

/* MATLAB's MiniBatchFcn: called with each batch's outputs after casting, it
 * may replace any of them (set outputs[i] to a tensor it made; the old one
 * is released by the queue) and returns DLA_OK or an error, which the
 * batch's dla_mbq_next returns. It runs inside a scope of its own, so it
 * needs no releases, with the queue's device current; with background
 * dispatch it runs on the dispatch thread, so what it shares with the
 * training thread must be safe to share. Its random draws (dla_rand,
 * dla_randn, dropout), and those of the datastores' callbacks, come from a
 * Philox stream of the queue's own, seeded when the queue is made from the
 * creating thread's stream (dla_rng_seed before dla_mbq_create makes them
 * reproducible; a partition's from its parent's and its index), whichever
 * thread makes the batch: the same batches with background dispatch as
 * without, and the caller's stream does not move. */
typedef dla_status (*dla_mbq_fn)(void *ctx, int n, dla_tensor **outputs);

typedef struct dla_mbq_options {
    /* MiniBatchSize: 128 when 0. */
    int64_t mini_batch_size;
    /* PartialMiniBatch: "return" (default) hands out the smaller last batch
     * of a pass; "discard" drops it. */
    const char *partial_mini_batch;
    /* The shuffle stream's seed (np.random.default_rng(seed)). */
    uint64_t seed;
    /* DispatchInBackground: batches are made on a thread of the queue
     * while the caller trains on the previous one. The results are the
     * same batches, in the same order, as without it, augmented images
     * included: the batches made ahead that a reset, shuffle or new batch
     * size drops give their augmentation draws back to the batches that
     * replace them. That thread runs its
     * kernels (and the mini-batch function) with one OpenMP thread, so the
     * training step's team keeps the cores to itself. */
    int dispatch_in_background;
    /* With background dispatch, how many batches are made ahead (2 when 0). */
    int prefetch;
    /* OutputEnvironment: the device batches are made on; NULL: the calling
     * thread's current device when the queue is created. */
    dla_device *device;
    /* For sequence inputs: padding and truncation per batch. */
    dla_sequence_options sequence;
    /* MiniBatchFcn and the ctx it is called with; NULL: none. */
    dla_mbq_fn mini_batch_fcn;
    void *mini_batch_ctx;
} dla_mbq_options;

/* Makes a queue over inputs[0..ninputs-1] (1..16 of them, with at most 32
 * outputs in all, masks and datastores' outputs counted). opts may be
 * NULL. *out is freed with dla_mbq_free. Errors (*out NULL):
 * DLA_ERR_INVALID_ARGUMENT (no input, an input with none or several
 * sources, an error tensor, a negative mini_batch_size or prefetch, an
 * unknown option value or cast, a freed datastore, formats or casts on
 * an input that is not a datastore, two
 * datastores read in order that read one position, a
 * datastore read in order beside an image datastore, more than 32
 * outputs), DLA_ERR_SHAPE (inputs with different
 * observation counts), DLA_ERR_FORMAT (a format that does not fit the
 * output's dims; a datastore output's format: labels other than S, C, B,
 * T, U, no B or labels out of canonical order, checked here, its fit
 * checked per batch), DLA_ERR_NO_DEVICE, DLA_ERR_OUT_OF_MEMORY, DLA_ERR_STATE
 * (the dispatch thread could not start); a read's own error while a
 * datastore of unknown count is read through to count it. */
DLA_API dla_status dla_mbq_create(int ninputs, const dla_mbq_input *inputs,
                                  const dla_mbq_options *opts, dla_mbq **out);

/* Stops the dispatch thread (it finishes the batch it is making and drops
 * what it made ahead), and frees the queue. Batches already handed out stay
 * valid. NULL-safe. */
DLA_API void dla_mbq_free(dla_mbq *q);

/* MATLAB hasdata: 1 while a batch is left in this pass, else 0. */
DLA_API int dla_mbq_hasdata(dla_mbq *q);

/* MATLAB next: the next mini-batch, as n outputs (n must be
 * dla_mbq_num_outputs), made on the queue's device. outputs[i] follow the
 * ownership rules of dlaccel.h (the innermost open scope owns them, if
 * any). Errors (outputs all NULL): DLA_ERR_STATE when no batch is left in
 * the pass (call dla_mbq_reset or dla_mbq_shuffle), DLA_ERR_INVALID_ARGUMENT
 * for a wrong n, and whatever making the batch failed with (the gather, a
 * device copy, the mini_batch_fcn). */
DLA_API dla_status dla_mbq_next(dla_mbq *q, int n, dla_tensor **outputs);

/* MATLAB reset: back to the start of the data, in the current order. */
DLA_API void dla_mbq_reset(dla_mbq *q);
/* MATLAB shuffle: a new random order of this queue's observations, drawn
 * from its stream, and back to the start. */
DLA_API void dla_mbq_shuffle(dla_mbq *q);

/* MATLAB partition(mbq, numParts, indexOfPart), with a 0-based index
 * (MATLAB's minus one): a new queue over part index of n contiguous parts
 * of q's current order, whose sizes differ by at most one (the first
 * parts take the remainder), so that the parts cover every observation
 * exactly once. It has q's options and inputs, and a shuffle stream of its
 * own, seeded from q's seed and index. Shuffling it reorders only its
 * part. Free it with dla_mbq_free (before or after q).
 * Errors: DLA_ERR_INVALID_ARGUMENT (n < 1, index outside 0..n-1), those of
 * dla_mbq_create. */
DLA_API dla_status dla_mbq_partition(dla_mbq *q, int n, int index, dla_mbq **out);

/* Sets MiniBatchSize (size >= 1; MATLAB's ReadSize of a worker's part) and
 * goes back to the start of the data. DLA_ERR_INVALID_ARGUMENT otherwise. */
DLA_API dla_status dla_mbq_set_mini_batch_size(dla_mbq *q, int64_t size);

/* The number of outputs of dla_mbq_next. */
DLA_API int dla_mbq_num_outputs(const dla_mbq *q);
/* The observations of this queue (of its part, for a partition). */
DLA_API int64_t dla_mbq_num_observations(const dla_mbq *q);
/* The batches of one pass (the partial one counted only with "return"). */
DLA_API int64_t dla_mbq_num_batches(const dla_mbq *q);
/* Copies the current order (0-based observation numbers of the inputs, in
 * the order batches take them) into order[0..count-1]; count must be
 * dla_mbq_num_observations. DLA_ERR_INVALID_ARGUMENT otherwise. */
DLA_API dla_status dla_mbq_order(const dla_mbq *q, int64_t *order, int64_t count);

/* ---------------------------------------------------------------- waveforms */

/* The classes of dla_waveform_generate, in this order. */
#define DLA_WAVEFORM_CLASSES 4

typedef struct dla_waveform_options {
    int64_t num_channels;                 /* 3 */
    int64_t min_length, max_length;       /* 100, 150: lengths uniform in [min, max] */
    double min_frequency, max_frequency;  /* 0.02, 0.10 cycles per step */
    double min_amplitude, max_amplitude;  /* 0.5, 1.5 */
    /* Standard deviation of the gaussian noise added to every value: 0.15
     * when 0; a negative value gives clean waves. */
    double noise;
    /* DLA_WAVEFORM_CLASSES weights for drawing each sequence's class, in
     * class order (normalized by their sum); NULL: equal. MATLAB's
     * imbalanced example keeps about 70% of sawtooth, all sine, 50% of square
     * and 30% of triangle waves: {0.7, 1, 0.5, 0.3}. */
    const double *class_proportions;
} dla_waveform_options;

/* Synthetic sequences like MATLAB's WaveformData: n sequences of
 * num_channels channels, one wave class each (sawtooth, sine, square,
 * triangle). Per sequence: the class (drawn with class_proportions), the
 * length, the frequency f in cycles per step; per channel: a phase p
 * uniform in [0, 1) and an amplitude a, then value t is a * wave((f t + p)
 * mod 1) plus noise, with the waves over the phase u in [0, 1):
 * sawtooth 2u - 1, sine sin(2 pi u), square 1 for u < 0.5 else -1,
 * triangle 1 - 4 |u - 0.5|.
 * The draws are those of numpy's default_rng(seed) in the order of
 * shared/peers/waveform_seq.py's make_data, so with its options
 * (class_proportions {0.35, 0.30, 0.20, 0.15}, the rest default)
 * dla_waveform_generate(1000, 0, ...) gives its training set and (200, 1)
 * its held-out set, value for value in single precision.
 * *sequences (a list of C x T sequences, freed with dla_seqlist_free) and
 * *labels (1xN "CB" int32 classes 0..3, on the current device; may be
 * NULL to skip). Errors (outputs NULL): DLA_ERR_INVALID_ARGUMENT (n < 1 or
 * above 2^31-1, a bad range, channels x max_length too large to hold, a
 * negative or all-zero proportion, proportions whose sum is not finite),
 * DLA_ERR_OUT_OF_MEMORY, the
 * tensor's creation errors. */
DLA_API dla_status dla_waveform_generate(int64_t n, uint64_t seed, const dla_waveform_options *opts,
                                         dla_seqlist **sequences, dla_tensor **labels);

/* "sawtooth", "sine", "square", "triangle" for 0..3; "unknown" otherwise. */
DLA_API const char *dla_waveform_class_name(int label);

#ifdef __cplusplus
}
#endif
#endif /* DLACCEL_DATA_H */
