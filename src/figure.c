/* Figures: the driver. A builder (figure_heatmap.c, figure_headview.c,
 * figure_chart.c) lays a figure out once as a display list of primitives
 * in PNG pixels; this file keeps that list and the figure's metadata, and
 * draws it, once, with Cairo onto whichever surface is asked for: PNG
 * (written with libpng), SVG or PDF. Also the format of a file name, lengths
 * and the default style. */
#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "attnscope/file.h"
#include "figure_internal.h"

#ifndef AS_VERSION
#define AS_VERSION "unknown"
#endif

/* ========================================================= display list */

prim *as_fig_add(as_figure *f, prim_kind kind)
{
    if (f->oom)
        return NULL;
    if (f->n == f->cap) {
        int cap = f->cap ? f->cap * 2 : 256;
        prim *p = realloc(f->p, (size_t)cap * sizeof *p);
        if (!p) {
            f->oom = true;
            return NULL;
        }
        f->p = p;
        f->cap = cap;
    }
    prim *p = &f->p[f->n++];
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->alpha = 1;
    return p;
}

static void free_prim(prim *p)
{
    free(p->rgb);
    free(p->pts);
    free(p->text);
}

void as_figure_free(as_figure *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->n; i++)
        free_prim(&f->p[i]);
    for (int i = 0; i < f->n_meta * 2; i++)
        free(f->meta[i]);
    free(f->meta);
    free(f->p);
    free(f->title);
    free(f);
}

void as_figure_size(const as_figure *f, int *w, int *h)
{
    *w = f->w;
    *h = f->h;
}

void as_figure_size_pt(const as_figure *f, float *w, float *h)
{
    *w = (float)f->w * 72.0f / (float)f->dpi;
    *h = (float)f->h * 72.0f / (float)f->dpi;
}

float as_figure_min_font_pt(const as_figure *f) { return f->min_font_pt; }

int as_figure_add_meta(as_figure *f, const char *key, const char *value, as_error *err)
{
    char **m = realloc(f->meta, (size_t)(f->n_meta + 1) * 2 * sizeof *m);
    if (!m)
        return as_error_set(err, "out of memory");
    f->meta = m;
    m[f->n_meta * 2] = as_fig_utf8_clean(key);
    m[f->n_meta * 2 + 1] = as_fig_utf8_clean(value ? value : "");
    if (!m[f->n_meta * 2] || !m[f->n_meta * 2 + 1]) {
        free(m[f->n_meta * 2]);
        free(m[f->n_meta * 2 + 1]);
        return as_error_set(err, "out of memory");
    }
    f->n_meta++;
    return AS_OK;
}

int as_figure_cell_rect(const as_figure *f, int mat, int row, int col, int rect[4])
{
    for (int i = 0; i < f->n; i++) {
        const prim *p = &f->p[i];
        if (p->kind != PR_CELLS || p->mat != mat || row < 0 || col < 0 || row >= p->rows || col >= p->cols)
            continue;
        /* The pixels whose centres fall in the cell: what nearest-neighbour
         * sampling gives them (draw_cells). */
        int x0 = (int)floorf(p->x + (float)col * p->w - 0.5f) + 1, x1 = (int)floorf(p->x + (float)(col + 1) * p->w - 0.5f) + 1;
        int y0 = (int)floorf(p->y + (float)row * p->h - 0.5f) + 1, y1 = (int)floorf(p->y + (float)(row + 1) * p->h - 0.5f) + 1;
        rect[0] = x0, rect[1] = y0, rect[2] = x1 - x0, rect[3] = y1 - y0;
        return AS_OK;
    }
    return AS_ERR;
}

int as_figure_cbar_rect(const as_figure *f, float rect[4])
{
    for (int i = 0; i < f->n; i++)
        if (f->p[i].kind == PR_GRAD) {
            rect[0] = f->p[i].x, rect[1] = f->p[i].y, rect[2] = f->p[i].w, rect[3] = f->p[i].h;
            return AS_OK;
        }
    return AS_ERR;
}

/* ============================================================== drawing */

/* Every figure is drawn here, once, whatever the surface: the display
 * list in PNG pixels, which a vector surface scales to points. */

static void source(cairo_t *cr, const uint8_t *c, double alpha)
{
    cairo_set_source_rgba(cr, c[0] / 255.0, c[1] / 255.0, c[2] / 255.0, alpha);
}

/* A panel of cells as an image, each cell a block of k × k pixels (k
 * the cell's whole pixels), painted without interpolation: every pixel
 * of a PNG takes exactly one cell's colour (the colormap's own), and SVG
 * and PDF embed one image instead of thousands of rectangles that viewers
 * draw with hairline seams between them. */
static cairo_status_t draw_cells(cairo_t *cr, const prim *p)
{
    int k = p->w >= 1 ? (int)floorf(p->w) : 1, W = p->cols * k, H = p->rows * k;
    cairo_surface_t *img = cairo_image_surface_create(CAIRO_FORMAT_RGB24, W, H);
    cairo_status_t st = cairo_surface_status(img);
    if (st) {
        cairo_surface_destroy(img);
        return st;
    }
    cairo_surface_flush(img);
    unsigned char *d = cairo_image_surface_get_data(img);
    int stride = cairo_image_surface_get_stride(img);
    for (int y = 0; y < H; y++) {
        uint32_t *row = (uint32_t *)(void *)(d + (size_t)y * (size_t)stride);
        for (int x = 0; x < W; x++) {
            const uint8_t *c = p->rgb + ((size_t)(y / k) * (size_t)p->cols + (size_t)(x / k)) * 3;
            row[x] = 0xFF000000u | (uint32_t)c[0] << 16 | (uint32_t)c[1] << 8 | c[2];
        }
    }
    cairo_surface_mark_dirty(img);
    cairo_pattern_t *pat = cairo_pattern_create_for_surface(img);
    cairo_matrix_t m;
    cairo_matrix_init_scale(&m, k / p->w, k / p->h);
    cairo_matrix_translate(&m, -p->x, -p->y);
    cairo_pattern_set_matrix(pat, &m);
    cairo_pattern_set_filter(pat, CAIRO_FILTER_NEAREST);
    cairo_save(cr);
    cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE);
    cairo_set_source(cr, pat);
    cairo_rectangle(cr, p->x, p->y, p->w * (float)p->cols, p->h * (float)p->rows);
    cairo_fill(cr);
    cairo_restore(cr);
    cairo_pattern_destroy(pat);
    cairo_surface_destroy(img);
    return CAIRO_STATUS_SUCCESS;
}

static void draw_grad(cairo_t *cr, const prim *p)
{
    cairo_pattern_t *g = p->horiz ? cairo_pattern_create_linear(p->x, 0, p->x + p->w, 0)
                                  : cairo_pattern_create_linear(0, p->y + p->h, 0, p->y);
    for (int s = 0; s <= 32; s++) {
        uint8_t rgb[3];
        as_colormap(p->cmap, (float)s / 32.0f, rgb);
        cairo_pattern_add_color_stop_rgb(g, s / 32.0, rgb[0] / 255.0, rgb[1] / 255.0, rgb[2] / 255.0);
    }
    cairo_rectangle(cr, p->x, p->y, p->w, p->h);
    cairo_set_source(cr, g);
    cairo_fill(cr);
    cairo_pattern_destroy(g);
}

static void draw_rect(cairo_t *cr, const prim *p)
{
    cairo_rectangle(cr, p->x, p->y, p->w, p->h);
    if (p->filled) {
        source(cr, p->fill, p->alpha);
        cairo_fill_preserve(cr);
    }
    if (p->stroked) {
        source(cr, p->stroke, 1);
        cairo_set_line_width(cr, p->lw);
        cairo_stroke_preserve(cr);
    }
    cairo_new_path(cr);
}

/* A polyline, broken where data put a point at NaN or infinity. */
static void draw_line(cairo_t *cr, const prim *p)
{
    bool open = false;
    for (int i = 0; i < p->n_pts; i++) {
        float x = p->pts[2 * i], y = p->pts[2 * i + 1];
        if (!isfinite(x) || !isfinite(y) || fabsf(x) > 1e7f || fabsf(y) > 1e7f) {
            open = false;
            continue;
        }
        if (open)
            cairo_line_to(cr, x, y);
        else
            cairo_move_to(cr, x, y);
        open = true;
    }
    source(cr, p->stroke, p->alpha);
    cairo_set_line_width(cr, p->lw);
    cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND);
    cairo_stroke(cr);
}

static void draw_mark(cairo_t *cr, const prim *p)
{
    if (!isfinite(p->x) || !isfinite(p->y) || !isfinite(p->r) || fabsf(p->x) > 1e7f || fabsf(p->y) > 1e7f)
        return;
    cairo_new_path(cr);
    cairo_arc(cr, p->x, p->y, p->r, 0, 2 * M_PI);
    source(cr, p->fill, p->alpha);
    cairo_fill(cr);
}

static void draw_text(cairo_t *cr, const prim *p)
{
    cairo_text_extents_t e;
    cairo_set_font_size(cr, p->size);
    cairo_text_extents(cr, p->text, &e);
    double u0 = p->align == AL_START ? 0 : p->align == AL_MIDDLE ? -e.x_advance / 2 : -e.x_advance;
    cairo_save(cr);
    cairo_translate(cr, p->x, p->y);
    if (p->rot)
        cairo_rotate(cr, -M_PI / 2);
    cairo_move_to(cr, u0, 0);
    source(cr, p->fill, 1);
    cairo_show_text(cr, p->text);
    cairo_restore(cr);
}

static cairo_status_t render(const as_figure *f, cairo_t *cr)
{
    cairo_set_font_face(cr, f->ctx->face);
    as_fig_set_font_options(cr);
    cairo_set_source_rgb(cr, 1, 1, 1);
    cairo_paint(cr);
    for (int i = 0; i < f->n && !cairo_status(cr); i++) {
        const prim *p = &f->p[i];
        switch (p->kind) {
        case PR_RECT: draw_rect(cr, p); break;
        case PR_CELLS: {
            cairo_status_t st = draw_cells(cr, p);
            if (st)
                return st;
            break;
        }
        case PR_GRAD: draw_grad(cr, p); break;
        case PR_LINE: draw_line(cr, p); break;
        case PR_MARK: draw_mark(cr, p); break;
        case PR_TEXT: draw_text(cr, p); break;
        }
    }
    return cairo_status(cr);
}

int as_figure_raster(const as_figure *f, uint8_t **rgb, as_error *err)
{
    *rgb = NULL;
    cairo_surface_t *s = cairo_image_surface_create(CAIRO_FORMAT_RGB24, f->w, f->h);
    cairo_t *cr = cairo_create(s);
    cairo_status_t st = render(f, cr);
    cairo_destroy(cr);
    cairo_surface_flush(s);
    uint8_t *out = st ? NULL : malloc((size_t)f->w * (size_t)f->h * 3);
    if (st || !out) {
        cairo_surface_destroy(s);
        return as_error_set(err, "drawing a %dx%d figure: %s", f->w, f->h,
                            st ? cairo_status_to_string(st) : "out of memory");
    }
    const unsigned char *d = cairo_image_surface_get_data(s);
    int stride = cairo_image_surface_get_stride(s);
    for (int y = 0; y < f->h; y++) {
        const uint32_t *row = (const uint32_t *)(const void *)(d + (size_t)y * (size_t)stride);
        for (int x = 0; x < f->w; x++) {
            uint8_t *o = out + ((size_t)y * (size_t)f->w + (size_t)x) * 3;
            o[0] = (uint8_t)(row[x] >> 16), o[1] = (uint8_t)(row[x] >> 8), o[2] = (uint8_t)row[x];
        }
    }
    cairo_surface_destroy(s);
    *rgb = out;
    return AS_OK;
}

/* ================================================================= PNG */

typedef struct png_out {
    FILE *f;
    char msg[256];
    jmp_buf jmp;
} png_out;

static void png_on_error(png_structp png, png_const_charp msg)
{
    png_out *o = png_get_error_ptr(png);
    snprintf(o->msg, sizeof o->msg, "%s", msg);
    longjmp(o->jmp, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png, (void)msg;
}

static bool is_ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80 || ((unsigned char)*s < 0x20 && *s != '\n'))
            return false;
    return true;
}

/* Writes the figure's RGB pixels as PNG with its provenance in text
 * chunks and its resolution in pHYs (what Cairo's own PNG writer leaves
 * out). */
static int png_encode(png_out *o, const as_figure *f, const uint8_t *rgb, as_error *err)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, o, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    png_text *volatile texts = NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return as_error_set(err, "out of memory starting libpng");
    }
    if (setjmp(o->jmp)) {
        png_destroy_write_struct(&png, &info);
        free(texts);
        return as_error_set(err, "PNG: %s", o->msg);
    }
    png_init_io(png, o->f);
    png_set_IHDR(png, info, (png_uint_32)f->w, (png_uint_32)f->h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_uint_32 ppm = (png_uint_32)lrint(f->dpi / 0.0254);
    png_set_pHYs(png, info, ppm, ppm, PNG_RESOLUTION_METER);
    int n = f->n_meta + 2;
    texts = calloc((size_t)n, sizeof *texts);
    if (!texts)
        png_error(png, "out of memory");
    char software[64];
    snprintf(software, sizeof software, "attnscope %s", AS_VERSION);
    const char *kv[2][2] = {{"Title", f->title}, {"Software", software}};
    for (int i = 0; i < n; i++) {
        const char *key = i < 2 ? kv[i][0] : f->meta[(i - 2) * 2];
        const char *val = i < 2 ? kv[i][1] : f->meta[(i - 2) * 2 + 1];
        texts[i].key = (png_charp)key;
        texts[i].text = (png_charp)val;
        /* tEXt is Latin-1: anything else goes in an iTXt chunk as UTF-8. */
        texts[i].compression = is_ascii(val) ? PNG_TEXT_COMPRESSION_NONE : PNG_ITXT_COMPRESSION_NONE;
    }
    png_set_text(png, info, texts, n);
    png_write_info(png, info);
    for (int y = 0; y < f->h; y++)
        png_write_row(png, (png_const_bytep)(rgb + (size_t)y * (size_t)f->w * 3));
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    free(texts);
    return AS_OK;
}

/* ========================================================= SVG and PDF */

/* Cairo's output stream into the temporary file. An SVG gets the
 * provenance as <title> and <desc> right after its opening <svg> tag
 * (Cairo has no call for it). */
typedef struct vec_out {
    FILE *f;
    const as_figure *fig;
    int state;   /* SVG: 0 looking for "<svg", 1 for its '>', 2 past it */
    int matched; /* bytes of "<svg" matched so far */
} vec_out;

static void xml_text(FILE *o, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", o); break;
        case '<': fputs("&lt;", o); break;
        case '>': fputs("&gt;", o); break;
        case '"': fputs("&quot;", o); break;
        case '\n': fputs("&#10;", o); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t')
                fputc(*s, o);
        }
    }
}

static void svg_meta(vec_out *o)
{
    fputs("\n<title>", o->f);
    xml_text(o->f, o->fig->title);
    fprintf(o->f, "</title>\n<desc>Software: attnscope %s", AS_VERSION);
    for (int i = 0; i < o->fig->n_meta; i++) {
        fputs("&#10;", o->f);
        xml_text(o->f, o->fig->meta[2 * i]);
        fputs(": ", o->f);
        xml_text(o->f, o->fig->meta[2 * i + 1]);
    }
    fputs("</desc>", o->f);
}

static cairo_status_t vec_write(void *closure, const unsigned char *data, unsigned int len)
{
    vec_out *o = closure;
    unsigned int i = 0;
    while (o->state < 2 && i < len) {
        unsigned char c = data[i++];
        if (o->state == 0) {
            o->matched = c == (unsigned char)"<svg"[o->matched] ? o->matched + 1 : c == '<';
            o->state = o->matched == 4;
        } else if (c == '>') {
            fwrite(data, 1, i, o->f);
            svg_meta(o);
            data += i, len -= i, i = 0;
            o->state = 2;
        }
    }
    if (len && fwrite(data, 1, len, o->f) != len)
        return CAIRO_STATUS_WRITE_ERROR;
    return ferror(o->f) ? CAIRO_STATUS_WRITE_ERROR : CAIRO_STATUS_SUCCESS;
}

/* The provenance as one line of PDF metadata. */
static char *meta_line(const as_figure *f)
{
    size_t n = 1;
    for (int i = 0; i < f->n_meta * 2; i++)
        n += strlen(f->meta[i]) + 4;
    char *s = malloc(n), *p = s;
    for (int i = 0; s && i < f->n_meta; i++)
        p += sprintf(p, "%s%s: %s", i ? "; " : "", f->meta[2 * i], f->meta[2 * i + 1]);
    if (s)
        *p = '\0';
    return s;
}

static int write_vector(const as_figure *f, as_fig_format fmt, FILE *stream, as_error *err)
{
    vec_out o = {stream, f, fmt == AS_FIG_SVG ? 0 : 2, 0};
    float wpt, hpt;
    as_figure_size_pt(f, &wpt, &hpt);
    cairo_surface_t *s = fmt == AS_FIG_SVG ? cairo_svg_surface_create_for_stream(vec_write, &o, wpt, hpt)
                                           : cairo_pdf_surface_create_for_stream(vec_write, &o, wpt, hpt);
    if (fmt == AS_FIG_SVG) {
        cairo_svg_surface_set_document_unit(s, CAIRO_SVG_UNIT_PT);
    } else {
        char creator[64], *subject = meta_line(f);
        snprintf(creator, sizeof creator, "attnscope %s", AS_VERSION);
        cairo_pdf_surface_set_metadata(s, CAIRO_PDF_METADATA_TITLE, f->title);
        cairo_pdf_surface_set_metadata(s, CAIRO_PDF_METADATA_CREATOR, creator);
        if (subject)
            cairo_pdf_surface_set_metadata(s, CAIRO_PDF_METADATA_SUBJECT, subject);
        free(subject);
    }
    cairo_t *cr = cairo_create(s);
    cairo_scale(cr, 72.0 / f->dpi, 72.0 / f->dpi);
    cairo_status_t st = render(f, cr);
    cairo_destroy(cr);
    cairo_surface_finish(s);
    if (!st)
        st = cairo_surface_status(s);
    cairo_surface_destroy(s);
    if (st)
        return as_error_set(err, "writing the %s: %s", fmt == AS_FIG_SVG ? "SVG" : "PDF",
                            st == CAIRO_STATUS_WRITE_ERROR ? "write error (disk full?)" : cairo_status_to_string(st));
    return AS_OK;
}

/* =============================================================== output */

int as_fig_format_of(const char *path, as_fig_format *fmt, as_error *err)
{
    size_t n = strlen(path);
    if (n > 4 && !strcasecmp(path + n - 4, ".png"))
        *fmt = AS_FIG_PNG;
    else if (n > 4 && !strcasecmp(path + n - 4, ".svg"))
        *fmt = AS_FIG_SVG;
    else if (n > 4 && !strcasecmp(path + n - 4, ".pdf"))
        *fmt = AS_FIG_PDF;
    else
        return as_error_set(err, "%s: the file name must end in .png, .svg or .pdf", path);
    return AS_OK;
}

int as_fig_parse_length(const char *v, const char *what, float *pt, as_error *err)
{
    static const struct {
        const char *unit;
        double pt;
    } units[] = {{"in", 72}, {"cm", 72 / 2.54}, {"mm", 7.2 / 2.54}, {"pt", 1}};
    char *end;
    double x = strtod(v, &end);
    for (size_t i = 0; end != v && isfinite(x) && i < sizeof units / sizeof *units; i++) {
        if (strcmp(end, units[i].unit))
            continue;
        double p = x * units[i].pt;
        if (p < 36 - 1e-6 || p > 2880 + 1e-6)
            return as_error_set(err, "%s must be from 0.5in to 40in, not '%s'", what, v);
        *pt = (float)p;
        return AS_OK;
    }
    return as_error_set(err, "%s must be a length such as 3.3in, 8.4cm, 84mm or 240pt, not '%s'", what, v);
}

void as_fig_style_default(as_fig_style *st)
{
    st->cmap = AS_CMAP_VIRIDIS;
    st->dpi = AS_FIG_DPI;
    st->log_scale = false;
    st->width_pt = AS_FIG_WIDTH_PT;
    st->height_pt = 0;
    st->font_pt = AS_FIG_FONT_PT;
}

typedef struct write_job {
    const as_figure *f;
    as_fig_format fmt;
    const uint8_t *rgb;
} write_job;

static int write_fig(void *ctx, void *stream, as_error *err)
{
    write_job *j = ctx;
    if (j->fmt != AS_FIG_PNG)
        return write_vector(j->f, j->fmt, stream, err);
    png_out o = {.f = stream};
    return png_encode(&o, j->f, j->rgb, err);
}

int as_figure_write(const as_figure *f, const char *path, as_fig_format fmt, as_error *err)
{
    write_job j = {f, fmt, NULL};
    uint8_t *rgb = NULL;
    if (fmt == AS_FIG_PNG && as_figure_raster(f, &rgb, err))
        return AS_ERR;
    j.rgb = rgb;
    int rc = as_write_atomic(path, write_fig, &j, err);
    free(rgb);
    return rc;
}

