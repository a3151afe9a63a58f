/* image: decoding PNG / PGM / PPM and preparing a model's input (image.h). */
#include "attnscope/image.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void as_image_free(as_image *img)
{
    if (!img)
        return;
    free(img->data);
    img->data = NULL;
}

static int check_size(const char *path, unsigned long w, unsigned long h, as_error *err)
{
    if (w == 0 || h == 0)
        return as_error_set(err, "%s: the image is empty (%lu x %lu pixels)", path, w, h);
    if (w > AS_IMAGE_MAX_PIXELS || h > AS_IMAGE_MAX_PIXELS || w * h > AS_IMAGE_MAX_PIXELS)
        return as_error_set(err, "%s: %lu x %lu pixels is larger than attnscope reads (at most %d pixels)", path, w,
                            h, AS_IMAGE_MAX_PIXELS);
    return AS_OK;
}

/* ---------------------------------------------------------------- PNG */

typedef struct png_in {
    const char *path;
    as_error *err;
    jmp_buf jmp;
} png_in;

static void on_png_error(png_structp png, png_const_charp msg)
{
    png_in *in = png_get_error_ptr(png);
    as_error_set(in->err, "%s: truncated or corrupt PNG (libpng: %s)", in->path, msg);
    longjmp(in->jmp, 1);
}

static void on_png_warning(png_structp png, png_const_charp msg)
{
    (void)png, (void)msg; /* e.g. an unknown chunk: the pixels are still right */
}

/* Everything libpng can store becomes 8- or 16-bit grey or RGB: palettes
 * expanded, low bit depths scaled to 8, alpha (and tRNS) dropped. */
static int read_png(FILE *f, const char *path, as_image *out, as_error *err)
{
    png_in in = {.path = path, .err = err};
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &in, on_png_error, on_png_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    uint8_t *volatile row = NULL;
    uint16_t *volatile data = NULL;
    png_bytep *volatile rows = NULL;
    if (!info) {
        png_destroy_read_struct(&png, NULL, NULL);
        return as_error_set(err, "%s: out of memory", path);
    }
    if (setjmp(in.jmp)) {
        free(rows);
        free(row);
        free(data);
        png_destroy_read_struct(&png, &info, NULL);
        return AS_ERR;
    }
    png_init_io(png, f);
    png_set_user_limits(png, AS_IMAGE_MAX_PIXELS, AS_IMAGE_MAX_PIXELS);
    png_read_info(png, info);
    png_uint_32 w = png_get_image_width(png, info), h = png_get_image_height(png, info);
    int depth = png_get_bit_depth(png, info), type = png_get_color_type(png, info);
    if (check_size(path, w, h, err))
        png_error(png, "image too large"); /* the message already says why; jumps out */
    if (type == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if (type == PNG_COLOR_TYPE_GRAY && depth < 8)
        png_set_expand_gray_1_2_4_to_8(png);
    if (type & PNG_COLOR_MASK_ALPHA)
        png_set_strip_alpha(png);
    if (depth == 16)
        png_set_swap(png); /* PNG stores 16-bit samples big-endian; read them as host order below */
    png_set_interlace_handling(png);
    png_read_update_info(png, info);
    int ch = png_get_channels(png, info), bits = png_get_bit_depth(png, info);
    size_t rowbytes = png_get_rowbytes(png, info);
    if ((ch != 1 && ch != 3) || (bits != 8 && bits != 16))
        png_error(png, "unexpected layout after expansion");
    row = malloc(rowbytes * h);
    data = malloc((size_t)w * h * (size_t)ch * sizeof *data);
    rows = row ? malloc(h * sizeof *rows) : NULL;
    if (!row || !data || !rows) {
        as_error_set(err, "%s: out of memory for %lu x %lu pixels", path, (unsigned long)w, (unsigned long)h);
        longjmp(in.jmp, 1);
    }
    for (png_uint_32 y = 0; y < h; y++)
        rows[y] = row + (size_t)y * rowbytes;
    png_read_image(png, rows);
    for (png_uint_32 y = 0; y < h; y++) {
        const uint8_t *r = row + (size_t)y * rowbytes;
        uint16_t *d = data + (size_t)y * w * (size_t)ch;
        for (size_t i = 0; i < (size_t)w * (size_t)ch; i++) {
            if (bits == 16) {
                uint16_t v;
                memcpy(&v, r + 2 * i, 2);
                d[i] = v;
            } else {
                d[i] = r[i];
            }
        }
    }
    png_read_end(png, NULL);
    free(rows);
    free(row);
    png_destroy_read_struct(&png, &info, NULL);
    *out = (as_image){(int)w, (int)h, ch, bits == 16 ? 65535 : 255, data};
    return AS_OK;
}

/* ---------------------------------------------------------------- PGM / PPM */

/* The next header number of a netpbm file, skipping blanks and # comments. */
static int pnm_number(FILE *f, const char *path, const char *what, unsigned long *out, as_error *err)
{
    int c;
    for (;;) {
        c = getc(f);
        if (c == '#') {
            while (c != '\n' && c != EOF)
                c = getc(f);
        } else if (!isspace(c)) {
            break;
        }
    }
    if (c == EOF)
        return as_error_set(err, "%s: truncated PGM/PPM header (no %s)", path, what);
    if (!isdigit(c))
        return as_error_set(err, "%s: PGM/PPM header: %s is not a number (byte '%c', offset %ld)", path, what,
                            isprint(c) ? c : '?', ftell(f) - 1);
    unsigned long v = 0;
    while (c != EOF && isdigit(c)) {
        if (v > 100000000UL)
            return as_error_set(err, "%s: PGM/PPM header: %s is too large", path, what);
        v = v * 10 + (unsigned long)(c - '0');
        c = getc(f);
    }
    if (c != EOF && !isspace(c))
        return as_error_set(err, "%s: PGM/PPM header: %s is followed by '%c', not a blank", path, what,
                            isprint(c) ? c : '?');
    *out = v;
    return AS_OK;
}

static int read_pnm(FILE *f, const char *path, int kind, as_image *out, as_error *err)
{
    unsigned long w, h, maxval;
    bool plain = kind == '2' || kind == '3';
    int ch = kind == '2' || kind == '5' ? 1 : 3;
    if (pnm_number(f, path, "the width", &w, err) || pnm_number(f, path, "the height", &h, err) ||
        pnm_number(f, path, "the maximum value", &maxval, err) || check_size(path, w, h, err))
        return AS_ERR;
    if (maxval == 0 || maxval > 65535)
        return as_error_set(err, "%s: PGM/PPM maximum value %lu is outside 1..65535", path, maxval);
    size_t n = (size_t)w * h * (size_t)ch;
    uint16_t *data = malloc(n * sizeof *data);
    if (!data)
        return as_error_set(err, "%s: out of memory for %lu x %lu pixels", path, w, h);
    for (size_t i = 0; i < n; i++) {
        unsigned long v;
        if (plain) {
            if (pnm_number(f, path, "a sample", &v, err)) {
                free(data);
                return as_error_prefix(err, "sample %zu of %zu", i, n);
            }
        } else {
            int a = getc(f), b = maxval > 255 && a != EOF ? getc(f) : 0;
            if (a == EOF || b == EOF) {
                free(data);
                return as_error_set(err, "%s: truncated PGM/PPM: %zu of %zu samples", path, i, n);
            }
            v = maxval > 255 ? ((unsigned long)a << 8 | (unsigned long)b) : (unsigned long)a;
        }
        if (v > maxval) {
            free(data);
            return as_error_set(err, "%s: PGM/PPM sample %zu is %lu, above the maximum value %lu", path, i, v,
                                maxval);
        }
        data[i] = (uint16_t)v;
    }
    *out = (as_image){(int)w, (int)h, ch, (int)maxval, data};
    return AS_OK;
}

int as_image_load(as_image *out, const char *path, as_error *err)
{
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f)
        return as_error_set(err, "cannot open image %s: %s", path, strerror(errno));
    unsigned char sig[8] = {0};
    size_t got = fread(sig, 1, sizeof sig, f);
    int rc;
    if (got == 8 && png_sig_cmp(sig, 0, 8) == 0) {
        rewind(f); /* libpng reads the signature itself */
        rc = read_png(f, path, out, err);
    } else if (got >= 2 && sig[0] == 'P' && strchr("2356", sig[1]) && sig[1]) {
        fseek(f, 2, SEEK_SET);
        rc = read_pnm(f, path, sig[1], out, err);
    } else if (got == 0) {
        rc = as_error_set(err, "%s: the file is empty, not an image", path);
    } else if (got >= 4 && png_sig_cmp(sig, 0, got) == 0) {
        rc = as_error_set(err, "%s: truncated PNG (%zu bytes, not even its signature)", path, got);
    } else {
        rc = as_error_set(err, "%s: not an image attnscope reads (expected PNG, PGM or PPM; the file starts "
                               "with bytes %02x %02x %02x %02x)",
                          path, sig[0], sig[1], sig[2], sig[3]);
    }
    fclose(f);
    return rc;
}

int as_resize_parse(const char *name, as_resize *out, as_error *err)
{
    if (!strcmp(name, "bilinear"))
        *out = AS_RESIZE_BILINEAR;
    else if (!strcmp(name, "nearest"))
        *out = AS_RESIZE_NEAREST;
    else
        return as_error_set(err, "resize mode '%s' is not one attnscope knows (bilinear, nearest)", name);
    return AS_OK;
}

/* ---------------------------------------------------------------- preparing */

/* torch's source index for align_corners=False: (dst + 0.5) * in / out -
 * 0.5, clamped at 0 (upsample_bilinear2d's area_pixel_compute_source_index). */
static void bilinear_axis(int in, int out, int i, int *i0, int *i1, float *l1)
{
    float scale = (float)in / (float)out;
    float src = scale * ((float)i + 0.5f) - 0.5f;
    if (src < 0)
        src = 0;
    *i0 = (int)src;
    *i1 = *i0 < in - 1 ? *i0 + 1 : *i0;
    *l1 = src - (float)*i0;
}

void as_image_resize_plane(const float *in, int w, int h, float *out, int ow, int oh, as_resize mode)
{
    for (int y = 0; y < oh; y++) {
        for (int x = 0; x < ow; x++) {
            if (mode == AS_RESIZE_NEAREST) {
                /* torch's "nearest": floor(dst * in / out), at most in - 1 */
                int sy = (int)floorf((float)y * ((float)h / (float)oh));
                int sx = (int)floorf((float)x * ((float)w / (float)ow));
                out[(size_t)y * (size_t)ow + (size_t)x] = in[(size_t)(sy < h ? sy : h - 1) * (size_t)w +
                                                             (size_t)(sx < w ? sx : w - 1)];
                continue;
            }
            int y0, y1, x0, x1;
            float ly, lx;
            bilinear_axis(h, oh, y, &y0, &y1, &ly);
            bilinear_axis(w, ow, x, &x0, &x1, &lx);
            const float *r0 = in + (size_t)y0 * (size_t)w, *r1 = in + (size_t)y1 * (size_t)w;
            out[(size_t)y * (size_t)ow + (size_t)x] =
                (1 - ly) * ((1 - lx) * r0[x0] + lx * r0[x1]) + ly * ((1 - lx) * r1[x0] + lx * r1[x1]);
        }
    }
}

int as_image_prepare(const as_image *img, const as_image_spec *spec, float *out, as_error *err)
{
    if (spec->channels != 1 && spec->channels != 3)
        return as_error_set(err, "the model wants %d image channels (attnscope reads 1 or 3)", spec->channels);
    size_t n = (size_t)img->width * (size_t)img->height;
    float *plane = malloc(n * sizeof *plane);
    if (!plane)
        return as_error_set(err, "out of memory for a %d x %d image", img->width, img->height);
    float inv = 1.0f / (float)img->maxval;
    size_t S = (size_t)spec->size * (size_t)spec->size;
    for (int c = 0; c < spec->channels; c++) {
        for (size_t i = 0; i < n; i++) {
            const uint16_t *px = img->data + i * (size_t)img->channels;
            float v;
            if (img->channels == spec->channels)
                v = px[c] * inv;
            else if (img->channels == 1)
                v = px[0] * inv; /* grey to RGB: the same value in each channel */
            else /* RGB to grey: torchvision's rgb_to_grayscale weights */
                v = (0.2989f * px[0] + 0.587f * px[1] + 0.114f * px[2]) * inv;
            plane[i] = v;
        }
        float *o = out + (size_t)c * S;
        if (img->width == spec->size && img->height == spec->size)
            memcpy(o, plane, S * sizeof *o);
        else
            as_image_resize_plane(plane, img->width, img->height, o, spec->size, spec->size, spec->resize);
        for (size_t i = 0; i < S; i++)
            o[i] = (o[i] - spec->mean[c]) / spec->std[c];
    }
    free(plane);
    return AS_OK;
}
