/* image: decoding PNG / JPEG / PGM / PPM and preparing a model's input (image.h). */
#include "attnscope/image.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <jpeglib.h>
#include <jerror.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/file.h"

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
    *out = (as_image){(int)w, (int)h, ch, bits == 16 ? 65535 : 255, data, 0};
    return AS_OK;
}

/* ---------------------------------------------------------------- JPEG */

typedef struct jpeg_in {
    struct jpeg_error_mgr mgr; /* first: libjpeg hands back this pointer */
    const char *path;
    as_error *err;
    jmp_buf jmp;
} jpeg_in;

/* libjpeg's default error_exit ends the process: ours jumps back instead. */
static void on_jpeg_error(j_common_ptr cinfo)
{
    jpeg_in *in = (jpeg_in *)cinfo->err;
    char msg[JMSG_LENGTH_MAX];
    in->mgr.format_message(cinfo, msg);
    as_error_set(in->err, "%s: truncated or corrupt JPEG (libjpeg: %s)", in->path, msg);
    longjmp(in->jmp, 1);
}

/* Warnings (level -1): a premature end of the data is a truncated file,
 * which libjpeg would fill with grey; PIL refuses it too. Others (extra
 * bytes before a marker) leave the pixels right and are let pass. */
static void on_jpeg_message(j_common_ptr cinfo, int level)
{
    if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF)
        on_jpeg_error(cinfo);
}

static unsigned exif_u16(const uint8_t *p, bool le) { return le ? p[0] | p[1] << 8 : p[0] << 8 | p[1]; }
static uint32_t exif_u32(const uint8_t *p, bool le)
{
    return le ? (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24
              : (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* The Orientation tag (0x0112) of an APP1 "Exif\0\0" segment's IFD0, 1..8;
 * 1 when absent, out of range or the segment is malformed (as PIL ignores
 * what it cannot read). Every offset is checked against the segment. */
int as_exif_orientation(const uint8_t *d, size_t n)
{
    if (n < 14 || memcmp(d, "Exif\0\0", 6))
        return 1;
    const uint8_t *t = d + 6;
    size_t tn = n - 6;
    bool le;
    if (!memcmp(t, "II*\0", 4))
        le = true;
    else if (!memcmp(t, "MM\0*", 4))
        le = false;
    else
        return 1;
    uint32_t ifd = exif_u32(t + 4, le);
    if (ifd > tn || tn - ifd < 2)
        return 1;
    unsigned count = exif_u16(t + ifd, le);
    for (unsigned i = 0; i < count; i++) {
        size_t e = (size_t)ifd + 2 + (size_t)i * 12;
        if (e + 12 > tn)
            return 1;
        if (exif_u16(t + e, le) != 0x0112)
            continue;
        unsigned type = exif_u16(t + e + 2, le);
        uint32_t cnt = exif_u32(t + e + 4, le);
        if (type != 3 || cnt < 1) /* SHORT */
            return 1;
        unsigned v = exif_u16(t + e + 8, le);
        return v >= 1 && v <= 8 ? (int)v : 1;
    }
    return 1;
}

/* out = the image turned as EXIF orientation o asks (PIL's exif_transpose:
 * 2 mirror, 3 rotate 180, 4 flip, 5 transpose, 6 rotate 90 clockwise,
 * 7 transverse, 8 rotate 90 counter-clockwise). */
static int orient(as_image *img, int o, as_error *err)
{
    if (o <= 1 || o > 8)
        return AS_OK;
    int w = img->width, h = img->height, ch = img->channels;
    bool swap = o >= 5;
    int ow = swap ? h : w, oh = swap ? w : h;
    uint16_t *d = malloc((size_t)w * (size_t)h * (size_t)ch * sizeof *d);
    if (!d)
        return as_error_set(err, "out of memory turning a %d x %d image", w, h);
    for (int y = 0; y < oh; y++) {
        for (int x = 0; x < ow; x++) {
            int sx, sy;
            switch (o) {
            case 2: sx = w - 1 - x, sy = y; break;
            case 3: sx = w - 1 - x, sy = h - 1 - y; break;
            case 4: sx = x, sy = h - 1 - y; break;
            case 5: sx = y, sy = x; break;
            case 6: sx = y, sy = h - 1 - x; break;
            case 7: sx = w - 1 - y, sy = h - 1 - x; break;
            default: sx = w - 1 - y, sy = x; break; /* 8 */
            }
            memcpy(d + ((size_t)y * (size_t)ow + (size_t)x) * (size_t)ch,
                   img->data + ((size_t)sy * (size_t)w + (size_t)sx) * (size_t)ch, (size_t)ch * sizeof *d);
        }
    }
    free(img->data);
    img->data = d;
    img->width = ow;
    img->height = oh;
    return AS_OK;
}

/* MULDIV255 of PIL's Convert.c: a * b / 255, rounded as PIL rounds. */
static int muldiv255(int a, int b)
{
    int t = a * b + 128;
    return ((t >> 8) + t) >> 8;
}

/* Grey stays grey, YCbCr and RGB become RGB; CMYK and YCCK are read as
 * libjpeg's CMYK, Adobe's inverted values, made RGB as PIL's
 * convert("RGB") of its "CMYK;I" does. */
static int read_jpeg(FILE *f, const char *path, as_image *out, int *orientation, as_error *err)
{
    struct jpeg_decompress_struct cinfo;
    jpeg_in in = {.path = path, .err = err};
    uint8_t *volatile row = NULL;
    uint16_t *volatile data = NULL;
    cinfo.err = jpeg_std_error(&in.mgr);
    in.mgr.error_exit = on_jpeg_error;
    in.mgr.emit_message = on_jpeg_message;
    if (setjmp(in.jmp)) {
        jpeg_destroy_decompress(&cinfo);
        free(row);
        free(data);
        return AS_ERR;
    }
    jpeg_create_decompress(&cinfo);
    jpeg_stdio_src(&cinfo, f);
    jpeg_save_markers(&cinfo, JPEG_APP0 + 1, 0xffff);
    jpeg_read_header(&cinfo, TRUE);
    if (check_size(path, cinfo.image_width, cinfo.image_height, err))
        longjmp(in.jmp, 1);
    int o = 1;
    for (jpeg_saved_marker_ptr m = cinfo.marker_list; m; m = m->next)
        if (m->marker == JPEG_APP0 + 1 && (o = as_exif_orientation(m->data, m->data_length)) != 1)
            break;
    bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
    if (cinfo.jpeg_color_space == JCS_GRAYSCALE)
        cinfo.out_color_space = JCS_GRAYSCALE;
    else if (cmyk)
        cinfo.out_color_space = JCS_CMYK;
    else if (cinfo.num_components == 3)
        cinfo.out_color_space = JCS_RGB;
    else {
        as_error_set(err, "%s: a JPEG of %d components in colour space %d: attnscope reads grey, YCbCr/RGB and "
                     "CMYK/YCCK JPEGs", path, cinfo.num_components, (int)cinfo.jpeg_color_space);
        longjmp(in.jmp, 1);
    }
    jpeg_start_decompress(&cinfo);
    int w = (int)cinfo.output_width, h = (int)cinfo.output_height, inch = cinfo.output_components;
    int ch = cmyk ? 3 : inch;
    row = malloc((size_t)w * (size_t)inch);
    data = malloc((size_t)w * (size_t)h * (size_t)ch * sizeof *data);
    if (!row || !data) {
        as_error_set(err, "%s: out of memory for %d x %d pixels", path, w, h);
        longjmp(in.jmp, 1);
    }
    while (cinfo.output_scanline < cinfo.output_height) {
        JSAMPROW r = row;
        int y = (int)cinfo.output_scanline;
        jpeg_read_scanlines(&cinfo, &r, 1);
        uint16_t *d = data + (size_t)y * (size_t)w * (size_t)ch;
        for (int x = 0; x < w; x++) {
            const uint8_t *p = row + (size_t)x * (size_t)inch;
            if (cmyk) {
                int nk = p[3]; /* 255 - K, K being 255 - the stored (inverted) value */
                for (int c = 0; c < 3; c++) {
                    int v = nk - muldiv255(255 - p[c], nk);
                    d[x * 3 + c] = (uint16_t)(v < 0 ? 0 : v > 255 ? 255 : v);
                }
            } else {
                for (int c = 0; c < ch; c++)
                    d[x * ch + c] = p[c];
            }
        }
    }
    jpeg_finish_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    free(row);
    *out = (as_image){w, h, ch, 255, data, 0};
    *orientation = o;
    if (orient(out, o, err)) {
        as_image_free(out);
        return AS_ERR;
    }
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
    *out = (as_image){(int)w, (int)h, ch, (int)maxval, data, 1};
    return AS_OK;
}

int as_image_load(as_image *out, const char *path, as_error *err)
{
    int o;
    return as_image_load_ex(out, path, &o, err);
}

int as_image_load_ex(as_image *out, const char *path, int *orientation, as_error *err)
{
    memset(out, 0, sizeof *out);
    *orientation = 1;
    FILE *f = as_file_fopen_read(path, NULL, err); /* a FIFO or a device is refused, never waited on */
    if (!f && errno)
        return as_error_set(err, "cannot open image %s: %s", path, strerror(errno));
    if (!f)
        return AS_ERR;
    unsigned char sig[8] = {0};
    size_t got = fread(sig, 1, sizeof sig, f);
    int rc;
    if (got == 8 && png_sig_cmp(sig, 0, 8) == 0) {
        rewind(f); /* libpng reads the signature itself */
        rc = read_png(f, path, out, err);
    } else if (got >= 3 && sig[0] == 0xff && sig[1] == 0xd8 && sig[2] == 0xff) {
        rewind(f);
        rc = read_jpeg(f, path, out, orientation, err);
    } else if (got >= 2 && sig[0] == 'P' && strchr("2356", sig[1]) && sig[1]) {
        fseek(f, 2, SEEK_SET);
        rc = read_pnm(f, path, sig[1], out, err);
    } else if (got == 0) {
        rc = as_error_set(err, "%s: the file is empty, not an image", path);
    } else if (got < 3 && got >= 2 && sig[0] == 0xff && sig[1] == 0xd8) {
        rc = as_error_set(err, "%s: truncated JPEG (%zu bytes)", path, got);
    } else if (got >= 4 && png_sig_cmp(sig, 0, got) == 0) {
        rc = as_error_set(err, "%s: truncated PNG (%zu bytes, not even its signature)", path, got);
    } else {
        rc = as_error_set(err, "%s: not an image attnscope reads (expected PNG, JPEG, PGM or PPM; the file starts "
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

static int prepare_pil(const as_image *img, const as_image_spec *spec, float *out, as_error *err);

int as_image_prepare(const as_image *img, const as_image_spec *spec, float *out, as_error *err)
{
    if (spec->pil.on)
        return prepare_pil(img, spec, out, err);
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

/* ---------------------------------------------------------------- PIL's resize */

/* PIL's filters (libImaging/Resample.c) and their support at scale 1. */
static double pil_box(double x) { return x > -0.5 && x <= 0.5 ? 1.0 : 0.0; }
static double pil_bilinear(double x)
{
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}
static double pil_hamming(double x)
{
    x = fabs(x);
    if (x == 0.0)
        return 1.0;
    if (x >= 1.0)
        return 0.0;
    x = x * M_PI;
    return sin(x) / x * (0.54f + 0.46f * cos(x)); /* PIL's float constants, as it writes them */
}
static double pil_bicubic(double x)
{
    const double a = -0.5;
    x = fabs(x);
    if (x < 1.0)
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0)
        return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}
static double pil_sinc(double x)
{
    if (x == 0.0)
        return 1.0;
    x = x * M_PI;
    return sin(x) / x;
}
static double pil_lanczos(double x) { return -3.0 <= x && x < 3.0 ? pil_sinc(x) * pil_sinc(x / 3) : 0.0; }

const char *as_pil_filter_name(int filter)
{
    static const char *names[] = {"nearest", "lanczos", "bilinear", "bicubic", "box", "hamming"};
    return filter >= 0 && filter <= 5 ? names[filter] : "?";
}

#define PIL_BITS 22 /* PRECISION_BITS: 32 - 8 - 2 */

/* precompute_coeffs + normalize_coeffs_8bpc: for each output index its
 * first input, count, and fixed-point weights (ksize per output). */
static int pil_coeffs(int in_size, int out_size, int filter, int **bounds_out, int32_t **kk_out)
{
    double (*fn)(double) = filter == AS_PIL_BOX       ? pil_box
                           : filter == AS_PIL_BILINEAR ? pil_bilinear
                           : filter == AS_PIL_HAMMING  ? pil_hamming
                           : filter == AS_PIL_BICUBIC  ? pil_bicubic
                                                       : pil_lanczos;
    double support0 = filter == AS_PIL_BOX ? 0.5 : filter == AS_PIL_BICUBIC ? 2.0 : filter == AS_PIL_LANCZOS ? 3.0 : 1.0;
    double scale = (double)((float)in_size - 0.0f) / out_size, filterscale = scale < 1.0 ? 1.0 : scale;
    double support = support0 * filterscale;
    int ksize = (int)ceil(support) * 2 + 1;
    double *k = malloc((size_t)ksize * sizeof *k);
    int32_t *kk = calloc((size_t)out_size * (size_t)ksize, sizeof *kk);
    int *bounds = malloc((size_t)out_size * 2 * sizeof *bounds);
    if (!k || !kk || !bounds) {
        free(k), free(kk), free(bounds);
        return 0;
    }
    for (int xx = 0; xx < out_size; xx++) {
        double center = (xx + 0.5) * scale, ww = 0.0, ss = 1.0 / filterscale;
        int xmin = (int)(center - support + 0.5), xmax = (int)(center + support + 0.5);
        if (xmin < 0)
            xmin = 0;
        if (xmax > in_size)
            xmax = in_size;
        xmax -= xmin;
        for (int x = 0; x < xmax; x++) {
            k[x] = fn((x + xmin - center + 0.5) * ss);
            ww += k[x];
        }
        for (int x = 0; x < xmax; x++) {
            double v = ww != 0.0 ? k[x] / ww : k[x];
            kk[(size_t)xx * (size_t)ksize + (size_t)x] =
                v < 0 ? (int32_t)(-0.5 + v * (1 << PIL_BITS)) : (int32_t)(0.5 + v * (1 << PIL_BITS));
        }
        bounds[2 * xx] = xmin;
        bounds[2 * xx + 1] = xmax;
    }
    free(k);
    *bounds_out = bounds;
    *kk_out = kk;
    return ksize;
}

static uint8_t pil_clip8(int32_t v)
{
    v >>= PIL_BITS; /* an arithmetic shift, as PIL's table lookup indexes */
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

/* ImagingScaleAffine: nearest, the source index stepped in doubles. */
static void pil_nearest(const uint8_t *in, int w, int h, int ch, uint8_t *out, int ow, int oh)
{
    double ax = (double)w / ow, ay = (double)h / oh, yo = ay * 0.5;
    int *xs = malloc((size_t)ow * sizeof *xs);
    double xo = ax * 0.5;
    for (int x = 0; x < ow; x++, xo += ax)
        xs[x] = (int)xo < w ? (int)xo : w - 1;
    for (int y = 0; y < oh; y++, yo += ay) {
        int sy = (int)yo < h ? (int)yo : h - 1;
        for (int x = 0; x < ow; x++)
            memcpy(out + ((size_t)y * (size_t)ow + (size_t)x) * (size_t)ch,
                   in + ((size_t)sy * (size_t)w + (size_t)xs[x]) * (size_t)ch, (size_t)ch);
    }
    free(xs);
}

int as_pil_resize(const uint8_t *in, int w, int h, int ch, uint8_t *out, int ow, int oh, int filter, as_error *err)
{
    if (filter < 0 || filter > 5)
        return as_error_set(err, "resample filter %d is not one of PIL's (0 nearest, 1 lanczos, 2 bilinear, "
                            "3 bicubic, 4 box, 5 hamming)", filter);
    if (w == ow && h == oh) {
        memcpy(out, in, (size_t)w * (size_t)h * (size_t)ch);
        return AS_OK;
    }
    if (filter == AS_PIL_NEAREST) {
        pil_nearest(in, w, h, ch, out, ow, oh);
        return AS_OK;
    }
    int *bx = NULL, *by = NULL;
    int32_t *kx = NULL, *ky = NULL;
    int kxs = pil_coeffs(w, ow, filter, &bx, &kx), kys = kxs ? pil_coeffs(h, oh, filter, &by, &ky) : 0;
    /* The horizontal pass over the rows the vertical one reads, then the vertical. */
    int y0 = kys ? by[0] : 0, y1 = kys ? by[2 * (oh - 1)] + by[2 * (oh - 1) + 1] : 0;
    bool horiz = ow != w, vert = oh != h;
    uint8_t *tmp = kys && horiz ? malloc((size_t)ow * (size_t)(y1 - y0) * (size_t)ch) : NULL;
    if (!kys || (horiz && !tmp)) {
        free(bx), free(by), free(kx), free(ky), free(tmp);
        return as_error_set(err, "out of memory resizing %d x %d to %d x %d", w, h, ow, oh);
    }
    const uint8_t *src = in;
    int src_w = w, off = 0;
    if (horiz) {
        uint8_t *dst = vert ? tmp : out;
        int r0 = vert ? y0 : 0, r1 = vert ? y1 : h;
        for (int y = r0; y < r1; y++) {
            const uint8_t *r = in + (size_t)y * (size_t)w * (size_t)ch;
            uint8_t *o = dst + (size_t)(y - r0) * (size_t)ow * (size_t)ch;
            for (int xx = 0; xx < ow; xx++) {
                const int32_t *k = kx + (size_t)xx * (size_t)kxs;
                int xmin = bx[2 * xx], xmax = bx[2 * xx + 1];
                for (int c = 0; c < ch; c++) {
                    int32_t ss = 1 << (PIL_BITS - 1);
                    for (int x = 0; x < xmax; x++)
                        ss += r[(size_t)(x + xmin) * (size_t)ch + (size_t)c] * k[x];
                    o[(size_t)xx * (size_t)ch + (size_t)c] = pil_clip8(ss);
                }
            }
        }
        src = tmp, src_w = ow, off = y0;
    }
    if (vert) {
        for (int yy = 0; yy < oh; yy++) {
            const int32_t *k = ky + (size_t)yy * (size_t)kys;
            int ymin = by[2 * yy] - off, ymax = by[2 * yy + 1];
            for (int x = 0; x < src_w * ch; x++) {
                int32_t ss = 1 << (PIL_BITS - 1);
                for (int y = 0; y < ymax; y++)
                    ss += src[(size_t)(y + ymin) * (size_t)src_w * (size_t)ch + (size_t)x] * k[y];
                out[(size_t)yy * (size_t)ow * (size_t)ch + (size_t)x] = pil_clip8(ss);
            }
        }
    }
    free(bx), free(by), free(kx), free(ky), free(tmp);
    return AS_OK;
}

/* get_resize_output_image_size(default_to_square=False): the shorter edge
 * becomes `shortest_edge`, the longer int(edge * long / short). */
void as_pil_resize_size(const as_pil_spec *pil, int w, int h, int *ow, int *oh)
{
    if (pil->shortest_edge > 0) {
        int s = pil->shortest_edge;
        if (w <= h) {
            *ow = s;
            *oh = (int)((double)((long long)s * h) / w);
        } else {
            *oh = s;
            *ow = (int)((double)((long long)s * w) / h);
        }
    } else if (pil->resize_h > 0) {
        *ow = pil->resize_w;
        *oh = pil->resize_h;
    } else {
        *ow = w;
        *oh = h;
    }
}

uint8_t *as_image_u8(const as_image *img, int channels, as_error *err)
{
    size_t n = (size_t)img->width * (size_t)img->height;
    uint8_t *o = malloc(n * (size_t)channels);
    if (!o) {
        as_error_set(err, "out of memory for a %d x %d image", img->width, img->height);
        return NULL;
    }
    for (size_t i = 0; i < n; i++) {
        unsigned v[3];
        for (int c = 0; c < img->channels; c++) {
            v[c] = img->data[i * (size_t)img->channels + (size_t)c];
            if (img->maxval == 65535 && !img->pnm)
                v[c] >>= 8; /* PIL keeps a 16-bit PNG sample's high byte */
            else if (img->maxval != 255)
                v[c] = (v[c] * 255u + (unsigned)img->maxval / 2) / (unsigned)img->maxval;
        }
        if (channels == 3)
            for (int c = 0; c < 3; c++)
                o[i * 3 + (size_t)c] = (uint8_t)v[img->channels == 1 ? 0 : c];
        else /* PIL's convert("L"): ITU-R 601-2 in 16-bit fixed point, rounded */
            o[i] = (uint8_t)(img->channels == 1 ? v[0] : (v[0] * 19595 + v[1] * 38470 + v[2] * 7471 + 0x8000) >> 16);
    }
    return o;
}

/* transformers' ViTImageProcessor / CLIPImageProcessor: RGB (or PIL's
 * grey for a one-channel model), PIL's resize,
 * center_crop (zeros around an image smaller than the crop), then in
 * float32 x * rescale, (x - mean) / std. */
static int prepare_pil(const as_image *img, const as_image_spec *spec, float *out, as_error *err)
{
    const as_pil_spec *pil = &spec->pil;
    int K = spec->channels;
    int rw, rh;
    as_pil_resize_size(pil, img->width, img->height, &rw, &rh);
    int cw = pil->crop_w > 0 ? pil->crop_w : rw, chh = pil->crop_h > 0 ? pil->crop_h : rh;
    if (cw != spec->size || chh != spec->size)
        return as_error_set(err, "%s: the %d x %d image becomes %d x %d after the preprocessor's resize%s, not the "
                            "model's %d x %d", "preprocessor_config.json", img->width, img->height, cw, chh,
                            pil->crop_w > 0 ? " and crop" : "", spec->size, spec->size);
    if ((long long)rw * rh > AS_IMAGE_MAX_PIXELS)
        return as_error_set(err, "resizing %d x %d to %d x %d is larger than attnscope reads", img->width,
                            img->height, rw, rh);
    uint8_t *rgb = as_image_u8(img, K, err), *res = rgb ? malloc((size_t)rw * (size_t)rh * (size_t)K) : NULL;
    if (!res) {
        free(rgb);
        return as_error_set(err, "out of memory for a %d x %d image", rw, rh);
    }
    int rc = as_pil_resize(rgb, img->width, img->height, K, res, rw, rh, pil->resample, err);
    /* center_crop: top = (h - crop) // 2 (floor), or a zero pad of ceil((crop - h) / 2) */
    int top = rh >= chh ? (rh - chh) / 2 : -((chh - rh + 1) / 2);
    int left = rw >= cw ? (rw - cw) / 2 : -((cw - rw + 1) / 2);
    size_t S = (size_t)spec->size * (size_t)spec->size;
    for (int c = 0; rc == AS_OK && c < K; c++) {
        float mean = spec->mean[c], sd = spec->std[c];
        for (int y = 0; y < chh; y++) {
            for (int x = 0; x < cw; x++) {
                int sy = y + top, sx = x + left;
                float v = sy >= 0 && sy < rh && sx >= 0 && sx < rw ? res[((size_t)sy * (size_t)rw + (size_t)sx) * (size_t)K + (size_t)c]
                                                                     : 0;
                float r = (float)((double)v * (double)pil->rescale);
                out[(size_t)c * S + (size_t)y * (size_t)cw + (size_t)x] = (r - mean) / sd;
            }
        }
    }
    free(rgb);
    free(res);
    return rc;
}
