/*
 * data_image_decode.c - one PNG (libpng) or JPEG (libjpeg-turbo) file into
 * 8-bit pixels (16-bit for a 16-bit PNG), for the image datastore.
 *
 * Both libraries report errors by jumping: libpng longjmps to the jmp_buf
 * of its read struct after calling our error function, libjpeg calls the
 * error manager's error_exit, which must not return. Each decode therefore
 * keeps everything it allocates in a context reached through a pointer
 * (never in locals changed after setjmp, whose values a longjmp leaves
 * indeterminate), and the code after the jump frees what the context
 * holds. Messages go into the caller's buffer, not the thread's error:
 * this runs on the datastore's reading threads.
 */
#include "nn/data_image.h"
#include "nn/data_util.h"

#include <errno.h>
#include <jpeglib.h>
#include <jerror.h> /* the warning codes (JWRN_*) */
#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void dla__image_free(dla__image *img)
{
    if (!img)
        return;
    dla__data_free(img->px);
    memset(img, 0, sizeof *img);
}

typedef struct decode_ctx {
    const char *path;
    char *err;
    size_t errlen;
    dla_status status;     /* what the last fail() said */
    FILE *f;
    uint8_t *px;
    png_bytep *rows;
    jmp_buf jmp;           /* the JPEG path's landing point */
    struct jpeg_error_mgr jerr;
    struct jpeg_progress_mgr progress;
} decode_ctx;

static dla_status fail(decode_ctx *c, dla_status st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static dla_status fail(decode_ctx *c, dla_status st, const char *fmt, ...)
{
    int n = snprintf(c->err, c->errlen, "%s: ", c->path);
    if (n >= 0 && (size_t)n < c->errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(c->err + n, c->errlen - (size_t)n, fmt, ap);
        va_end(ap);
    }
    c->status = st;
    return st;
}

/* An image of h x w x ch samples of depth bytes is refused above the cap
 * (a forged header). */
static dla_status check_size(decode_ctx *c, uint32_t h, uint32_t w, int ch, int depth)
{
    if (!h || !w)
        return fail(c, DLA_ERR_FORMAT, "an image of %ux%u pixels", (unsigned)h, (unsigned)w);
    if ((uint64_t)h * w * (uint64_t)ch * (uint64_t)depth > DLA__IMAGE_MAX_BYTES)
        return fail(c, DLA_ERR_FORMAT, "%ux%u pixels of %d channels of %d bits is more than the "
                    "%zu bytes an image may take", (unsigned)h, (unsigned)w, ch, 8 * depth,
                    DLA__IMAGE_MAX_BYTES);
    return DLA_OK;
}

/* Pixels of h x w x ch samples of depth bytes, refused above the cap. */
static dla_status alloc_pixels(decode_ctx *c, uint32_t h, uint32_t w, int ch, int depth)
{
    dla_status st = check_size(c, h, w, ch, depth);
    if (st != DLA_OK)
        return st;
    c->px = dla__data_malloc((size_t)h * w * (size_t)ch * (size_t)depth);
    if (!c->px)
        return fail(c, DLA_ERR_OUT_OF_MEMORY, "cannot hold %ux%ux%d pixels", (unsigned)h,
                    (unsigned)w, ch);
    return DLA_OK;
}

/* ---------------------------------------------------------------- PNG */

static void png_on_error(png_structp png, png_const_charp msg)
{
    decode_ctx *c = png_get_error_ptr(png);
    fail(c, DLA_ERR_FORMAT, "corrupt or truncated PNG file: %s", msg);
    png_longjmp(png, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg; /* ancillary trouble (a bad text chunk): the pixels are fine */
}

static dla_status decode_png(decode_ctx *c, dla__image *img)
{
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, c, png_on_error,
                                             png_on_warning);
    if (!png)
        return fail(c, DLA_ERR_OUT_OF_MEMORY, "cannot make libpng's read struct");
    png_infop info = png_create_info_struct(png);
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return fail(c, DLA_ERR_OUT_OF_MEMORY, "cannot make libpng's info struct");
    }
    /* The pointers png and info are not changed after this point. */
    if (setjmp(png_jmpbuf(png))) {
        png_destroy_read_struct(&png, &info, NULL);
        return c->status; /* png_on_error wrote the message */
    }
    png_init_io(png, c->f);
    png_set_user_limits(png, 1u << 20, 1u << 20);
    png_read_info(png, info);
    int type = png_get_color_type(png, info);
    /* 16-bit samples are kept (cut to their high byte, a 16-bit scan lost
     * its low 8 bits before it reached a network), least significant byte
     * first whatever the host (PNG stores them most significant first). */
    const int depth = png_get_bit_depth(png, info) == 16 ? 2 : 1;
    if (depth == 2)
        png_set_swap(png);
    if (type == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if (type == PNG_COLOR_TYPE_GRAY && png_get_bit_depth(png, info) < 8)
        png_set_expand_gray_1_2_4_to_8(png);
    /* Whatever the colour type: a palette with a tRNS chunk comes out of
     * png_set_palette_to_rgb with an alpha channel (RGBA), though the
     * type names none, and was refused as 4 channels. Stripping is a
     * no-op for rows without alpha; gray and RGB keep their tRNS key
     * unexpanded (no png_set_tRNS_to_alpha), so they stay 1 and 3. */
    png_set_strip_alpha(png);
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    uint32_t w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    int ch = png_get_channels(png, info);
    dla_status st = ch == 1 || ch == 3
                        ? DLA_OK
                        : fail(c, DLA_ERR_FORMAT, "a PNG image of %d channels after dropping "
                               "alpha; 1 (gray) or 3 (RGB) are read", ch);
    if (st == DLA_OK)
        st = alloc_pixels(c, h, w, ch, depth);
    if (st == DLA_OK && png_get_rowbytes(png, info) != (size_t)w * (size_t)ch * (size_t)depth)
        st = fail(c, DLA_ERR_FORMAT, "unexpected PNG row size");
    if (st == DLA_OK && !(c->rows = dla__data_malloc(sizeof *c->rows * h)))
        st = fail(c, DLA_ERR_OUT_OF_MEMORY, "cannot hold %u row pointers", (unsigned)h);
    if (st != DLA_OK) {
        png_destroy_read_struct(&png, &info, NULL);
        return st;
    }
    for (uint32_t y = 0; y < h; y++)
        c->rows[y] = c->px + (size_t)y * w * (size_t)ch * (size_t)depth;
    png_read_image(png, c->rows);
    /* Up to IEND: a file cut after its last pixel row is still truncated. */
    png_read_end(png, NULL);
    png_destroy_read_struct(&png, &info, NULL);
    *img = (dla__image){.h = (int)h, .w = (int)w, .c = ch, .depth = depth, .px = c->px};
    c->px = NULL;
    return DLA_OK;
}

/* ---------------------------------------------------------------- JPEG */

static void jpeg_on_error(j_common_ptr j)
{
    decode_ctx *c = j->client_data;
    char msg[JMSG_LENGTH_MAX];
    j->err->format_message(j, msg);
    fail(c, DLA_ERR_FORMAT, "corrupt or truncated JPEG file: %s", msg);
    longjmp(c->jmp, 1);
}

/* Warnings (level -1) are mostly the corrupt-data ones: a premature end of
 * the file, bad Huffman codes. libjpeg goes on with gray pixels after them,
 * which would be a silently wrong image, so they end the decode. Two say
 * nothing about the pixels, and refusing them refused files that every
 * other reader (MATLAB's imread, PIL) decodes: bytes between the last
 * scan's data and the end-of-image marker, found only after every pixel
 * was decoded (the "extraneous bytes before marker 0xd9" of many camera
 * and web files), and a JFIF version number other than 1.x. */
static int jpeg_warning_is_harmless(j_common_ptr j)
{
    const struct jpeg_error_mgr *e = j->err;
    return (e->msg_code == JWRN_EXTRANEOUS_DATA && e->msg_parm.i[1] == 0xD9) ||
           e->msg_code == JWRN_JFIF_MAJOR;
}

static void jpeg_on_message(j_common_ptr j, int level)
{
    if (level < 0 && !jpeg_warning_is_harmless(j))
        jpeg_on_error(j);
}

/* A progressive JPEG may repeat a scan (a first scan of a band at bit 0
 * again) without any warning, and each scan walks every block of the
 * image: a 218 KB file of 5000 such scans over 4000x4000 pixels took 21
 * seconds to decode, a 2 MB one minutes, every epoch. Encoders write
 * about 10 scans (libjpeg's progression 6 to 10, mozjpeg's about 20), so
 * more than DLA__JPEG_MAX_SCANS is refused, as libjpeg-turbo advises (a
 * progress monitor that aborts; djpeg -maxscans). libjpeg calls the
 * monitor as it reads the scans, before any pixel is made. */
#define DLA__JPEG_MAX_SCANS 1000

static void jpeg_on_progress(j_common_ptr j)
{
    const struct jpeg_decompress_struct *d = (const struct jpeg_decompress_struct *)j;
    if (d->input_scan_number > DLA__JPEG_MAX_SCANS) {
        decode_ctx *c = j->client_data;
        fail(c, DLA_ERR_FORMAT, "a progressive JPEG of more than %d scans (encoders write about "
             "10; so many only slow the decoding down)", DLA__JPEG_MAX_SCANS);
        longjmp(c->jmp, 1);
    }
}

static dla_status decode_jpeg(decode_ctx *c, dla__image *img)
{
    struct jpeg_decompress_struct j;
    struct jpeg_decompress_struct *jp = &j; /* not changed after setjmp */
    memset(jp, 0, sizeof *jp);
    jp->err = jpeg_std_error(&c->jerr);
    c->jerr.error_exit = jpeg_on_error;
    c->jerr.emit_message = jpeg_on_message;
    jp->client_data = c;
    if (setjmp(c->jmp)) {
        jpeg_destroy_decompress(jp);
        return c->status; /* the message is written */
    }
    jpeg_create_decompress(jp);
    /* After the create, which zeroes every field but err and client_data. */
    c->progress.progress_monitor = jpeg_on_progress;
    jp->progress = &c->progress;
    jpeg_stdio_src(jp, c->f);
    jpeg_read_header(jp, TRUE);
    if (jp->jpeg_color_space == JCS_CMYK || jp->jpeg_color_space == JCS_YCCK) {
        fail(c, DLA_ERR_FORMAT, "a CMYK JPEG image; gray and RGB are read");
        longjmp(c->jmp, 1);
    }
    jp->out_color_space = jp->num_components == 1 ? JCS_GRAYSCALE : JCS_RGB;
    /* Before jpeg_start_decompress: for a progressive file it allocates
     * the whole image's coefficients (twice the pixels' bytes), so a
     * forged header asked for gigabytes there, and failed, if at all, as
     * "Insufficient memory" or a truncated file, not as too large. */
    if (check_size(c, jp->image_height, jp->image_width, jp->num_components == 1 ? 1 : 3, 1) !=
        DLA_OK)
        longjmp(c->jmp, 1);
    jpeg_start_decompress(jp);
    int ch = jp->output_components;
    if (alloc_pixels(c, jp->output_height, jp->output_width, ch, 1) != DLA_OK)
        longjmp(c->jmp, 1);
    size_t stride = (size_t)jp->output_width * (size_t)ch;
    while (jp->output_scanline < jp->output_height) {
        JSAMPROW row = c->px + (size_t)jp->output_scanline * stride;
        jpeg_read_scanlines(jp, &row, 1);
    }
    jpeg_finish_decompress(jp);
    *img = (dla__image){.h = (int)jp->output_height, .w = (int)jp->output_width, .c = ch,
                        .depth = 1, .px = c->px};
    c->px = NULL;
    jpeg_destroy_decompress(jp);
    return DLA_OK;
}

/* ---------------------------------------------------------------- files */

dla_status dla__image_decode(const char *path, dla__image *img, char *err, size_t errlen)
{
    memset(img, 0, sizeof *img);
    decode_ctx *c = dla__data_calloc(1, sizeof *c);
    if (!c) {
        snprintf(err, errlen, "%s: out of memory", path);
        return DLA_ERR_OUT_OF_MEMORY;
    }
    c->path = path;
    c->err = err;
    c->errlen = errlen;
    dla_status st;
    unsigned char sig[8] = {0};
    c->f = fopen(path, "rb");
    if (!c->f) {
        st = fail(c, DLA_ERR_IO, "cannot open: %s", strerror(errno));
    } else {
        size_t got = fread(sig, 1, sizeof sig, c->f);
        rewind(c->f);
        if (got == sizeof sig && !png_sig_cmp(sig, 0, sizeof sig))
            st = decode_png(c, img);
        else if (got >= 3 && sig[0] == 0xFF && sig[1] == 0xD8 && sig[2] == 0xFF)
            st = decode_jpeg(c, img);
        else if (got == 0 && ferror(c->f))
            st = fail(c, DLA_ERR_IO, "cannot read: %s", strerror(errno));
        else
            st = fail(c, DLA_ERR_FORMAT, "not a PNG or JPEG file (%s)",
                      got == 0 ? "it is empty" : "its first bytes are neither signature");
        fclose(c->f);
    }
    dla__data_free(c->px);
    dla__data_free(c->rows);
    dla__data_free(c);
    if (st != DLA_OK)
        memset(img, 0, sizeof *img);
    return st;
}
