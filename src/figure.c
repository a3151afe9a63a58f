#include "attnscope/figure.h"

#include <cairo-ft.h>
#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>
#include <ft2build.h>
#include FT_FREETYPE_H
#include FT_TRUETYPE_TABLES_H
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "attnscope/file.h"

#ifndef AS_VERSION
#define AS_VERSION "unknown"
#endif

/* ================================================================ fonts */

struct as_fig_ctx {
    cairo_font_face_t *face; /* DejaVu Sans from its file, or the toy fallback */
    bool from_file;
    float cap_em;            /* cap height per em */
    cairo_surface_t *probe;  /* a 1x1 surface to measure text on */
    cairo_t *m;
    char name[512];
};

/* Where distributions put DejaVu Sans. */
static const char *const font_paths[] = {
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",   /* Debian, Ubuntu */
    "/usr/share/fonts/TTF/DejaVuSans.ttf",               /* Arch */
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf", /* Fedora */
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/local/share/fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/DejaVuSans.ttf",
};

/* A FreeType face and its library, owned by the Cairo font face: Cairo
 * keeps font faces in caches past our last reference, so it frees them. */
typedef struct ft_owner {
    FT_Library lib;
    FT_Face face;
} ft_owner;

static const cairo_user_data_key_t ft_key;

static void ft_owner_free(void *p)
{
    ft_owner *o = p;
    FT_Done_Face(o->face);
    FT_Done_FreeType(o->lib);
    free(o);
}

static bool try_face(as_fig_ctx *c, const char *path)
{
    ft_owner *o = calloc(1, sizeof *o);
    if (!o || FT_Init_FreeType(&o->lib)) {
        free(o);
        return false;
    }
    if (FT_New_Face(o->lib, path, 0, &o->face)) {
        FT_Done_FreeType(o->lib);
        free(o);
        return false;
    }
    const TT_OS2 *os2 = FT_Get_Sfnt_Table(o->face, FT_SFNT_OS2);
    float cap = os2 && os2->version >= 2 && os2->sCapHeight > 0
                    ? (float)os2->sCapHeight / (float)o->face->units_per_EM : 0.72f;
    if (!FT_IS_SCALABLE(o->face) || FT_Select_Charmap(o->face, FT_ENCODING_UNICODE)) {
        ft_owner_free(o);
        return false;
    }
    cairo_font_face_t *ff = cairo_ft_font_face_create_for_ft_face(o->face, 0);
    if (cairo_font_face_set_user_data(ff, &ft_key, o, ft_owner_free)) {
        cairo_font_face_destroy(ff);
        ft_owner_free(o);
        return false;
    }
    c->face = ff;
    c->cap_em = cap;
    c->from_file = true;
    snprintf(c->name, sizeof c->name, "%s", path);
    return true;
}

/* Text is laid out with unhinted metrics, so measuring here and drawing
 * at any resolution agree. */
static void set_font_options(cairo_t *cr)
{
    cairo_font_options_t *fo = cairo_font_options_create();
    cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
    cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
    cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY);
    cairo_set_font_options(cr, fo);
    cairo_font_options_destroy(fo);
}

int as_fig_ctx_new(as_fig_ctx **out, const char *font_path, as_error *err)
{
    as_fig_ctx *c = calloc(1, sizeof *c);
    *out = NULL;
    if (!c)
        return as_error_set(err, "out of memory");
    bool found = font_path && try_face(c, font_path);
    for (size_t i = 0; !font_path && !found && i < sizeof font_paths / sizeof *font_paths; i++)
        found = try_face(c, font_paths[i]);
    if (!found) {
        c->face = cairo_toy_font_face_create("sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
        c->cap_em = 0.72f;
        snprintf(c->name, sizeof c->name, "sans-serif through fontconfig (no DejaVu Sans file%s%s)",
                 font_path ? " at " : "", font_path ? font_path : "");
    }
    c->probe = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
    c->m = cairo_create(c->probe);
    if (cairo_status(c->m) || cairo_font_face_status(c->face)) {
        as_fig_ctx_free(c);
        return as_error_set(err, "Cairo could not start (out of memory?)");
    }
    cairo_set_font_face(c->m, c->face);
    set_font_options(c->m);
    *out = c;
    return AS_OK;
}

void as_fig_ctx_free(as_fig_ctx *c)
{
    if (!c)
        return;
    cairo_destroy(c->m);
    cairo_surface_destroy(c->probe);
    cairo_font_face_destroy(c->face);
    free(c);
}

bool as_fig_ctx_has_font(const as_fig_ctx *c) { return c->from_file; }
const char *as_fig_ctx_font_name(const as_fig_ctx *c) { return c->name; }

static float text_width(as_fig_ctx *c, const char *s, float px)
{
    cairo_text_extents_t e;
    cairo_set_font_size(c->m, px);
    cairo_text_extents(c->m, s, &e);
    return (float)e.x_advance;
}

void as_fig_ctx_ink(as_fig_ctx *c, const char *s, float size_pt, float *w, float *h)
{
    cairo_text_extents_t e;
    cairo_set_font_size(c->m, size_pt);
    cairo_text_extents(c->m, s, &e);
    *w = (float)e.width;
    *h = (float)e.height;
}

static float cap_height(const as_fig_ctx *c, float px) { return c->cap_em * px; }

/* Distance between the baselines of stacked lines. */
static float line_height(const as_fig_ctx *c, float px) { return (void)c, 1.2f * px; }

/* ================================================================ text */

/* Next code point of UTF-8 text; an invalid byte reads as U+FFFD. */
static uint32_t utf8_next(const char **pp)
{
    const unsigned char *p = (const unsigned char *)*pp;
    uint32_t c = p[0];
    int n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 && c >= 0xC2 ? 1 : (c & 0xF0) == 0xE0 ? 2
          : (c & 0xF8) == 0xF0 && c <= 0xF4 ? 3 : -1;
    if (n < 0) {
        *pp += 1;
        return 0xFFFD;
    }
    c &= n == 0 ? 0x7F : n == 1 ? 0x1F : n == 2 ? 0x0F : 0x07;
    for (int i = 1; i <= n; i++) {
        if ((p[i] & 0xC0) != 0x80) {
            *pp += 1;
            return 0xFFFD;
        }
        c = c << 6 | (p[i] & 0x3F);
    }
    *pp += n + 1;
    return c;
}

static size_t put_utf8(char *out, size_t o, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (o + n + 1 > cap)
        return o;
    memcpy(out + o, s, n);
    return o + n;
}

/* Length of the valid UTF-8 sequence at p (complete within avail,
 * shortest form, no surrogates), or 0. */
static size_t utf8_seq_len(const unsigned char *p, size_t avail)
{
    unsigned char b = p[0];
    size_t n;
    uint32_t cp, min;
    if (b < 0x80)
        return 1;
    if ((b & 0xE0) == 0xC0)
        n = 2, cp = b & 0x1F, min = 0x80;
    else if ((b & 0xF0) == 0xE0)
        n = 3, cp = b & 0x0F, min = 0x800;
    else if ((b & 0xF8) == 0xF0)
        n = 4, cp = b & 0x07, min = 0x10000;
    else
        return 0;
    if (n > avail)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    return cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ? 0 : n;
}

/* A malloc'd copy of s with every invalid UTF-8 byte replaced by U+FFFD,
 * so Cairo draws it, SVG stays well-formed and PNG iTXt valid whatever a
 * title holds. */
static char *utf8_clean(const char *s)
{
    size_t len = strlen(s), o = 0;
    char *out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq_len((const unsigned char *)s + i, len - i);
        if (n) {
            memcpy(out + o, s + i, n);
            o += n, i += n;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3, i++;
        }
    }
    out[o] = '\0';
    return out;
}

void as_fig_visible_text(const char *bytes, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    if (cap == 0)
        return;
    for (size_t i = 0; i < len;) {
        unsigned char b = (unsigned char)bytes[i];
        const char *p = bytes + i;
        char tmp[8];
        if (b == ' ')
            o = put_utf8(out, o, cap, "\xE2\x90\xA3"), i++;
        else if (b == '\n')
            o = put_utf8(out, o, cap, "\xE2\x86\xB5"), i++;
        else if (b == '\t')
            o = put_utf8(out, o, cap, "\xE2\x87\xA5"), i++;
        else if (b < 0x20 || b == 0x7F) {
            snprintf(tmp, sizeof tmp, "\\x%02X", b);
            o = put_utf8(out, o, cap, tmp), i++;
        } else {
            /* Only a complete sequence within len counts as a character. */
            char seq[5] = {0};
            size_t n = utf8_seq_len((const unsigned char *)p, len - i);
            if (n) {
                memcpy(seq, p, n);
                o = put_utf8(out, o, cap, seq);
                i += n;
            } else {
                snprintf(tmp, sizeof tmp, "\\x%02X", b);
                o = put_utf8(out, o, cap, tmp), i++;
            }
        }
    }
    out[o] = '\0';
}

/* Copies s into out, cut with an ellipsis so it is at most maxw px wide. */
static void elide(as_fig_ctx *c, const char *s, float px, float maxw, char *out, size_t cap)
{
    snprintf(out, cap, "%s", s);
    if (text_width(c, out, px) <= maxw)
        return;
    const char *p = s;
    size_t keep = 0;
    char buf[1024];
    while (*p) {
        utf8_next(&p);
        size_t n = (size_t)(p - s);
        if (n + 4 >= sizeof buf || n + 4 >= cap)
            break;
        memcpy(buf, s, n);
        strcpy(buf + n, "\xE2\x80\xA6");
        if (text_width(c, buf, px) > maxw)
            break;
        keep = n;
    }
    memcpy(out, s, keep);
    strcpy(out + keep, "\xE2\x80\xA6");
}

/* ========================================================= display list */

typedef enum prim_kind { PR_RECT, PR_CELLS, PR_LINE, PR_MARK, PR_TEXT, PR_GRAD } prim_kind;
enum { AL_START, AL_MIDDLE, AL_END };

/* One drawing primitive, in PNG pixels (y down); vector surfaces scale
 * them to points. */
typedef struct prim {
    prim_kind kind;
    float x, y, w, h;       /* RECT, CELLS, GRAD: the box; MARK: centre in x, y */
    uint8_t fill[3], stroke[3];
    bool filled, stroked;
    float lw;               /* stroke width */
    float alpha;            /* fill (RECT, MARK) or stroke (LINE) opacity */
    int rows, cols, mat;    /* CELLS: rows × cols cells of w × h whole pixels, of matrix mat */
    uint8_t *rgb;           /* CELLS: rows*cols*3 */
    float *pts;             /* LINE: n_pts (x, y) pairs */
    int n_pts;
    float r;                /* MARK: radius */
    char *text;             /* TEXT: anchored at (x, y) on the baseline */
    float size;             /* TEXT: px */
    bool rot;               /* TEXT: turned 90° counter-clockwise (reads upwards) */
    int align;              /* TEXT: AL_* along the reading direction */
    bool horiz;             /* GRAD: low end at the left (else at the bottom) */
    as_cmap cmap;           /* GRAD */
} prim;

struct as_figure {
    as_fig_ctx *ctx;
    int w, h, dpi;
    prim *p;
    int n, cap;
    char **meta;            /* key, value, key, value, ... */
    int n_meta;
    char *title;
    float min_font_pt;
    bool oom;
};

static const uint8_t INK[3] = {0x26, 0x26, 0x26}, GREYTXT[3] = {0x59, 0x59, 0x59},
                     GRIDC[3] = {0xE6, 0xE6, 0xE6}, WHITE[3] = {255, 255, 255},
                     NANC[3] = {0xFF, 0x00, 0xFF};
/* matplotlib's tab10, then two more, for series and heads */
static const uint8_t SERIES[12][3] = {
    {0x1F, 0x77, 0xB4}, {0xFF, 0x7F, 0x0E}, {0x2C, 0xA0, 0x2C}, {0xD6, 0x27, 0x28},
    {0x94, 0x67, 0xBD}, {0x8C, 0x56, 0x4B}, {0xE3, 0x77, 0xC2}, {0x7F, 0x7F, 0x7F},
    {0xBC, 0xBD, 0x22}, {0x17, 0xBE, 0xCF}, {0x00, 0x00, 0x80}, {0x80, 0x80, 0x00}};
static const uint8_t HILITE[3] = {0xD6, 0x27, 0x28};

static prim *add(as_figure *f, prim_kind kind)
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
    m[f->n_meta * 2] = utf8_clean(key);
    m[f->n_meta * 2 + 1] = utf8_clean(value ? value : "");
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

/* ============================================================== layout */

/* What a builder carries: the figure, the font, points-to-pixels, the
 * size asked for and the text sizes derived from the style. */
typedef struct lay {
    as_figure *f;
    as_fig_ctx *c;
    const as_fig_style *st;
    float P;               /* pixels per point */
    float W, H;            /* px; H 0: as tall as needed */
    float title, body, small; /* text sizes, pt */
} lay;

static float PT(const lay *L, float pt) { return pt * L->P; }

#define MARGIN_PT 6.0f
#define TICK_LEN_PT 2.5f
#define TICK_PAD_PT 1.5f
#define FRAME_PT 0.6f
#define CBAR_PT 6.0f

static int lay_begin(lay *L, as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                     as_error *err)
{
    *out = NULL;
    if (st->dpi < 10 || st->dpi > 2400)
        return as_error_set(err, "dpi must be from 10 to 2400, not %d", st->dpi);
    if (!(st->width_pt >= 36 && st->width_pt <= 2880) || !(st->height_pt == 0 || (st->height_pt >= 36 && st->height_pt <= 2880)))
        return as_error_set(err, "the figure's width and height must be from 0.5 to 40 in (36 to 2880 pt), not "
                                 "%g x %g pt", (double)st->width_pt, (double)st->height_pt);
    if (!(st->font_pt >= 4 && st->font_pt <= 36))
        return as_error_set(err, "font must be from 4 to 36 pt, not %g", (double)st->font_pt);
    as_figure *f = calloc(1, sizeof *f);
    if (!f || !(f->title = utf8_clean(cap && cap->title ? cap->title : ""))) {
        free(f);
        return as_error_set(err, "out of memory");
    }
    f->ctx = ctx;
    f->dpi = st->dpi;
    L->f = f;
    L->c = ctx;
    L->st = st;
    L->P = (float)st->dpi / 72.0f;
    L->W = roundf(PT(L, st->width_pt));
    L->H = roundf(PT(L, st->height_pt));
    L->body = st->font_pt;
    L->title = st->font_pt + 1;
    L->small = fmaxf(st->font_pt - 1, fminf(st->font_pt, AS_FIG_MIN_FONT_PT));
    return AS_OK;
}

/* Sets the canvas size and hands the figure over. */
static int lay_end(lay *L, float h, as_figure **out, as_error *err)
{
    as_figure *f = L->f;
    f->w = (int)L->W;
    f->h = (int)ceilf(L->H > 0 ? L->H : h);
    if (f->oom) {
        as_figure_free(f);
        return as_error_set(err, "out of memory laying out the figure");
    }
    if ((double)f->w * f->h > 64e6) {
        int w0 = f->w, h0 = f->h;
        as_figure_free(f);
        return as_error_set(err, "the figure would be %dx%d pixels: lower dpi= or show fewer tokens", w0, h0);
    }
    *out = f;
    return AS_OK;
}

/* A layout that cannot fit the size asked for: say which and what for. */
static int too_small(lay *L, const char *what, as_error *err)
{
    const as_fig_style *st = L->st;
    as_figure_free(L->f);
    L->f = NULL;
    if (st->height_pt > 0)
        return as_error_set(err, "width=%.2fin height=%.2fin is too small for %s", (double)st->width_pt / 72,
                            (double)st->height_pt / 72, what);
    return as_error_set(err, "width=%.2fin is too narrow for %s", (double)st->width_pt / 72, what);
}

static void rect(lay *L, float x, float y, float w, float h, const uint8_t *fill, const uint8_t *stroke, float lw)
{
    prim *p = add(L->f, PR_RECT);
    if (!p)
        return;
    p->x = x, p->y = y, p->w = w, p->h = h;
    if (fill)
        memcpy(p->fill, fill, 3), p->filled = true;
    if (stroke)
        memcpy(p->stroke, stroke, 3), p->stroked = true;
    p->lw = lw;
}

static void polyline_a(lay *L, const float *pts, int n, const uint8_t *rgb, float lw, float alpha)
{
    if (n < 2)
        return;
    prim *p = add(L->f, PR_LINE);
    if (!p)
        return;
    if (!(p->pts = malloc((size_t)n * 2 * sizeof *p->pts))) {
        L->f->oom = true;
        return;
    }
    memcpy(p->pts, pts, (size_t)n * 2 * sizeof *pts);
    p->n_pts = n;
    memcpy(p->stroke, rgb, 3);
    p->lw = lw;
    p->alpha = alpha;
}

static void polyline(lay *L, const float *pts, int n, const uint8_t *rgb, float lw)
{
    polyline_a(L, pts, n, rgb, lw, 1);
}

static void line(lay *L, float x0, float y0, float x1, float y1, const uint8_t *rgb, float lw)
{
    float pts[4] = {x0, y0, x1, y1};
    polyline(L, pts, 2, rgb, lw);
}

static void mark(lay *L, float x, float y, float r, const uint8_t *rgb, float alpha)
{
    prim *p = add(L->f, PR_MARK);
    if (!p)
        return;
    p->x = x, p->y = y, p->r = r, p->alpha = alpha;
    memcpy(p->fill, rgb, 3);
    p->filled = true;
}

/* Text anchored on its baseline at (x, y). */
static void text(lay *L, float x, float y, float size_pt, bool rot, int align, const uint8_t *rgb, const char *s)
{
    if (!s || !*s)
        return;
    prim *p = add(L->f, PR_TEXT);
    if (!p)
        return;
    if (!(p->text = utf8_clean(s))) {
        L->f->oom = true;
        return;
    }
    p->x = x, p->y = y, p->size = PT(L, size_pt), p->rot = rot, p->align = align;
    memcpy(p->fill, rgb, 3);
    if (L->f->min_font_pt == 0 || size_pt < L->f->min_font_pt)
        L->f->min_font_pt = size_pt;
}

static float tw(lay *L, const char *s, float size_pt) { return text_width(L->c, s, PT(L, size_pt)); }
static float caph(lay *L, float size_pt) { return cap_height(L->c, PT(L, size_pt)); }
static float lineh(lay *L, float size_pt) { return line_height(L->c, PT(L, size_pt)); }

/* Horizontal text centred vertically (by cap height) on cy. */
static void text_vc(lay *L, float x, float cy, float size_pt, int align, const uint8_t *rgb, const char *s)
{
    text(L, x, cy + caph(L, size_pt) / 2, size_pt, false, align, rgb, s);
}

/* Upward text whose glyphs are centred horizontally on cx. */
static void text_up(lay *L, float cx, float y, float size_pt, int align, const uint8_t *rgb, const char *s)
{
    text(L, cx + caph(L, size_pt) / 2, y, size_pt, true, align, rgb, s);
}

/* ---- axis scales and ticks ---- */

typedef struct scale {
    double lo, hi;
    bool log;
} scale;

/* Position of v within the scale, 0 at lo and 1 at hi (clamped). */
static double scale_t(const scale *s, double v)
{
    double t;
    if (s->log)
        t = (log10(v > 0 ? v : s->lo) - log10(s->lo)) / (log10(s->hi) - log10(s->lo));
    else
        t = (v - s->lo) / (s->hi - s->lo);
    return isnan(t) ? 0 : t < 0 ? 0 : t > 1 ? 1 : t;
}

static double nice_step(double range, int target)
{
    double raw = range / target, mag = pow(10, floor(log10(raw))), n = raw / mag;
    return (n < 1.5 ? 1 : n < 3 ? 2 : n < 7 ? 5 : 10) * mag;
}

/* A linear scale over [lo, hi] padded by 5% (matplotlib's margins). */
static scale scale_linear(double lo, double hi, bool pad)
{
    scale s = {lo, hi, false};
    if (!(isfinite(lo) && isfinite(hi)) || lo > hi)
        s.lo = 0, s.hi = 1;
    if (s.hi - s.lo < 1e-12) {
        double d = fabs(s.lo) > 1e-9 ? fabs(s.lo) * 0.1 : 1;
        s.lo -= d, s.hi += d;
    }
    if (pad) {
        double m = (s.hi - s.lo) * 0.05;
        s.lo -= m, s.hi += m;
    }
    return s;
}

/* A log scale over whole decades covering the positive values in [lo, hi]. */
static scale scale_log(double lo, double hi)
{
    scale s = {1e-4, 1, true};
    if (hi > 0 && isfinite(hi))
        s.hi = pow(10, ceil(log10(hi) - 1e-9));
    if (lo > 0 && isfinite(lo))
        s.lo = pow(10, floor(log10(lo) + 1e-9));
    if (s.lo >= s.hi)
        s.lo = s.hi / 10;
    return s;
}

#define MAX_TICKS 32

/* Tick values and their labels. */
typedef struct ticks {
    int n;
    double v[MAX_TICKS];
    char label[MAX_TICKS][24];
} ticks;

static void fmt_decade(int e, char *buf, size_t cap)
{
    static const char *const sup[] = {"\xE2\x81\xB0", "\xC2\xB9", "\xC2\xB2", "\xC2\xB3", "\xE2\x81\xB4",
                                      "\xE2\x81\xB5", "\xE2\x81\xB6", "\xE2\x81\xB7", "\xE2\x81\xB8",
                                      "\xE2\x81\xB9"};
    if (e >= -2 && e <= 2) {
        snprintf(buf, cap, "%g", pow(10, e));
        return;
    }
    size_t o = (size_t)snprintf(buf, cap, "10%s", e < 0 ? "\xE2\x81\xBB" : "");
    char digits[16];
    snprintf(digits, sizeof digits, "%d", abs(e));
    for (char *d = digits; *d && o + 4 < cap; d++)
        o = put_utf8(buf, o, cap, sup[*d - '0']);
    buf[o] = '\0';
}

static void make_ticks(const scale *s, int target, ticks *t)
{
    t->n = 0;
    target = target < 1 ? 1 : target;
    if (s->log) {
        int e0 = (int)lrint(log10(s->lo)), e1 = (int)lrint(log10(s->hi));
        int every = (e1 - e0 + target - 1) / target;
        every = every < 1 ? 1 : every;
        for (int e = e1; e >= e0 && t->n < MAX_TICKS; e -= every) {
            t->v[t->n] = pow(10, e);
            fmt_decade(e, t->label[t->n], sizeof t->label[0]);
            t->n++;
        }
        return;
    }
    double step = nice_step(s->hi - s->lo, target);
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    bool sci = step >= 1e5 || step < 1e-4;
    for (double v = ceil(s->lo / step - 1e-9) * step; v <= s->hi + step * 1e-9 && t->n < MAX_TICKS; v += step) {
        double r = fabs(v) < step * 1e-6 ? 0 : v;
        t->v[t->n] = r;
        if (sci)
            snprintf(t->label[t->n], sizeof t->label[0], "%.3g", r);
        else
            snprintf(t->label[t->n], sizeof t->label[0], "%.*f", dec, r);
        /* a minus sign, as typeset, rather than a hyphen */
        if (t->label[t->n][0] == '-') {
            char tmp[24];
            snprintf(tmp, sizeof tmp, "\xE2\x88\x92%s", t->label[t->n] + 1);
            snprintf(t->label[t->n], sizeof t->label[0], "%s", tmp);
        }
        t->n++;
    }
}

static float ticks_width(lay *L, const ticks *t, float size_pt)
{
    float w = 0;
    for (int i = 0; i < t->n; i++)
        w = fmaxf(w, tw(L, t->label[i], size_pt));
    return w;
}

/* ---- captions ---- */

/* Copies src into dst, cut at cap - 1 bytes. */
static void copy_cut(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    n = n < cap ? n : cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Greedy word wrap of s into lines at most maxw px wide; calls draw for
 * each (or only counts them when draw is NULL). A word wider than a line
 * is elided. Returns the number of lines. */
static int wrap(lay *L, const char *s, float size_pt, float maxw, void (*draw)(lay *, const char *, int, void *),
                void *arg)
{
    char cur[1024] = "", word[512], trial[1600];
    int lines = 0;
    const char *p = s;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n == 0)
            break;
        copy_cut(word, n + 1 < sizeof word ? n + 1 : sizeof word, p);
        p += n;
        snprintf(trial, sizeof trial, "%s%s%s", cur, *cur ? " " : "", word);
        if (*cur && tw(L, trial, size_pt) > maxw) {
            if (draw)
                draw(L, cur, lines, arg);
            lines++;
            copy_cut(trial, sizeof trial, word);
        }
        if (tw(L, trial, size_pt) > maxw) {
            char cut[1600];
            elide(L->c, trial, PT(L, size_pt), maxw, cut, sizeof cut);
            copy_cut(trial, sizeof trial, cut);
        }
        copy_cut(cur, sizeof cur, trial);
    }
    if (*cur) {
        if (draw)
            draw(L, cur, lines, arg);
        lines++;
    }
    return lines;
}

typedef struct note_at {
    float x, y;
} note_at;

static void draw_note_line(lay *L, const char *s, int i, void *arg)
{
    const note_at *at = arg;
    text(L, at->x, at->y + (float)i * lineh(L, L->small) + caph(L, L->small), L->small, false, AL_START, GREYTXT, s);
}

/* Height of the notes under a figure. */
static float notes_height(lay *L, const as_fig_caption *cap)
{
    int lines = 0;
    for (int i = 0; cap && i < cap->n_notes; i++)
        lines += wrap(L, cap->notes[i], L->small, L->W - 2 * PT(L, MARGIN_PT), NULL, NULL);
    return lines ? PT(L, 4) + (float)lines * lineh(L, L->small) : 0;
}

/* The notes from y down; returns the y below them. */
static float draw_notes(lay *L, const as_fig_caption *cap, float y)
{
    note_at at = {PT(L, MARGIN_PT), y + PT(L, 4)};
    int lines = 0;
    for (int i = 0; cap && i < cap->n_notes; i++) {
        at.y = y + PT(L, 4) + (float)lines * lineh(L, L->small);
        lines += wrap(L, cap->notes[i], L->small, L->W - 2 * PT(L, MARGIN_PT), draw_note_line, &at);
    }
    return lines ? y + PT(L, 4) + (float)lines * lineh(L, L->small) : y;
}

/* Height the title block takes (the same sums as draw_title). */
static float title_height(lay *L, const as_fig_caption *cap)
{
    float y = PT(L, MARGIN_PT);
    if (cap && cap->title && *cap->title)
        y += caph(L, L->title) + PT(L, 4);
    if (cap && cap->subtitle && *cap->subtitle)
        y += lineh(L, L->small);
    return y + PT(L, 4);
}

/* Title and the grey subtitle, centred, each cut to the width. */
static void draw_title(lay *L, const as_fig_caption *cap)
{
    float y = PT(L, MARGIN_PT), maxw = L->W - 2 * PT(L, MARGIN_PT);
    char buf[1024];
    if (cap && cap->title && *cap->title) {
        y += caph(L, L->title);
        elide(L->c, cap->title, PT(L, L->title), maxw, buf, sizeof buf);
        text(L, L->W / 2, y, L->title, false, AL_MIDDLE, INK, buf);
        y += PT(L, 4);
    }
    if (cap && cap->subtitle && *cap->subtitle) {
        elide(L->c, cap->subtitle, PT(L, L->small), maxw, buf, sizeof buf);
        text(L, L->W / 2, y + caph(L, L->small), L->small, false, AL_MIDDLE, GREYTXT, buf);
    }
}

/* ---- colour bars ---- */

/* A colour bar over scale s: vertical beside a plot (low end at the
 * bottom) or horizontal under it (low end at the left). */
typedef struct cbar {
    float x, y, len; /* top-left corner; length along the scale */
    bool horiz;
    const scale *s;
    const char *label;
    ticks t;
} cbar;

/* Ticks that fit a bar len px long. */
static void cbar_ticks(lay *L, cbar *cb)
{
    int target = (int)(cb->len / PT(L, cb->horiz ? 36 : 22));
    make_ticks(cb->s, target < 1 ? 1 : target > 5 ? 5 : target, &cb->t);
}

/* The room a vertical bar takes beside the plot, or a horizontal one under it. */
static float cbar_extent(lay *L, const cbar *cb)
{
    float ticklen = PT(L, TICK_LEN_PT + TICK_PAD_PT);
    if (cb->horiz)
        return PT(L, CBAR_PT) + ticklen + lineh(L, L->small) + (cb->label ? lineh(L, L->small) : 0);
    return PT(L, CBAR_PT) + ticklen + ticks_width(L, &cb->t, L->small) +
           (cb->label ? PT(L, 3) + lineh(L, L->small) : 0);
}

static void draw_cbar(lay *L, const cbar *cb)
{
    float bw = PT(L, CBAR_PT), lw = PT(L, FRAME_PT), tl = PT(L, TICK_LEN_PT), tp = PT(L, TICK_PAD_PT);
    prim *g = add(L->f, PR_GRAD);
    if (g) {
        g->x = cb->x, g->y = cb->y, g->w = cb->horiz ? cb->len : bw, g->h = cb->horiz ? bw : cb->len;
        g->cmap = L->st->cmap, g->horiz = cb->horiz;
        rect(L, g->x, g->y, g->w, g->h, NULL, INK, lw);
    }
    for (int i = 0; i < cb->t.n; i++) {
        float t = (float)scale_t(cb->s, cb->t.v[i]);
        if (cb->horiz) {
            float x = cb->x + t * cb->len, y = cb->y + bw;
            line(L, x, y, x, y + tl, INK, lw);
            text(L, x, y + tl + tp + caph(L, L->small), L->small, false, AL_MIDDLE, INK, cb->t.label[i]);
        } else {
            float y = cb->y + (1 - t) * cb->len, x = cb->x + bw;
            line(L, x, y, x + tl, y, INK, lw);
            text_vc(L, x + tl + tp, y, L->small, AL_START, INK, cb->t.label[i]);
        }
    }
    if (!cb->label)
        return;
    if (cb->horiz)
        text(L, cb->x + cb->len / 2, cb->y + bw + tl + tp + lineh(L, L->small) + caph(L, L->small), L->small, false,
             AL_MIDDLE, INK, cb->label);
    else
        text_up(L, cb->x + bw + tl + tp + ticks_width(L, &cb->t, L->small) + PT(L, 3) + lineh(L, L->small) / 2,
                cb->y + cb->len / 2, L->small, AL_MIDDLE, INK, cb->label);
}

/* A small filled square and its name; returns the x after it. */
static float legend_swatch(lay *L, float x, float cy, const uint8_t *rgb, const char *name)
{
    float sz = PT(L, 6);
    rect(L, x, cy - sz / 2, sz, sz, rgb, INK, PT(L, 0.4f));
    text_vc(L, x + sz + PT(L, 2), cy, L->small, AL_START, INK, name);
    return x + sz + PT(L, 2) + tw(L, name, L->small) + PT(L, 6);
}

/* Token labels elided to maxw; a NULL entry where it is not drawn. */
typedef struct labels {
    char **s;
    int n;
    float size_pt, maxw; /* font size; widest label drawn (px) */
    int stride;
} labels;

static void labels_free(labels *lb)
{
    for (int i = 0; lb->s && i < lb->n; i++)
        free(lb->s[i]);
    free(lb->s);
    lb->s = NULL;
}

static int labels_make(lay *L, labels *lb, const char *const *src, int n, float size_pt, int stride, float maxw_px)
{
    memset(lb, 0, sizeof *lb);
    if (!src || stride < 1)
        return AS_OK;
    lb->s = calloc((size_t)n, sizeof *lb->s);
    if (!lb->s)
        return AS_ERR;
    lb->n = n;
    lb->size_pt = size_pt;
    lb->stride = stride;
    for (int i = 0; i < n; i += stride) {
        char buf[512];
        elide(L->c, src[i] ? src[i] : "", PT(L, size_pt), maxw_px, buf, sizeof buf);
        if (!(lb->s[i] = strdup(buf)))
            return AS_ERR;
        lb->maxw = fmaxf(lb->maxw, tw(L, buf, size_pt));
    }
    return AS_OK;
}

/* Every k-th label, so that labels pitch px apart are a line apart. */
static int label_stride(lay *L, float pitch)
{
    int s = (int)ceilf(lineh(L, L->small) * 0.95f / fmaxf(pitch, 0.01f));
    return s < 1 ? 1 : s;
}

/* ============================================================= heatmap */

static void heat_rgb(const as_fig_style *st, const scale *s, float v, bool masked, uint8_t *rgb)
{
    if (masked)
        as_masked_rgb(st->cmap, rgb);
    else if (!isfinite(v)) /* an infinity is no colour of the scale either */
        memcpy(rgb, NANC, 3);
    else
        as_colormap(st->cmap, (float)scale_t(s, v), rgb);
}

/* Where a heatmap's parts go, for a choice of what is shown. */
typedef struct heat_geom {
    bool row_labels, col_labels, horiz_cbar; /* the choices */
    int GR, GC, gap_x, gap_y;                /* panels and the gaps between them (px) */
    float cell;                              /* px: whole pixels for a single head */
    float rl_w, cl_w;                        /* widest row / column label (px) */
    bool cl_upright;                         /* column labels turned to read upwards */
    int stride;                              /* every stride-th label */
    float left, top, ptitle;                 /* room left of and above the panels; a panel's title */
    float below;                             /* room under the panels, down to the notes */
    float right;                             /* room right of the panels (a vertical bar) */
} heat_geom;

static float max_label_w(lay *L, const char *const *src, int n, float maxw)
{
    float w = 0;
    char buf[512];
    for (int i = 0; src && i < n; i++) {
        elide(L->c, src[i] ? src[i] : "", PT(L, L->small), maxw, buf, sizeof buf);
        w = fmaxf(w, tw(L, buf, L->small));
    }
    return w;
}

/* The panel grid for n_mats panels when the caller left it to the width:
 * as many a row as keep a panel wider than its title, rows balanced. */
static void heat_auto_grid(lay *L, const as_fig_heat *h, float avail, heat_geom *g)
{
    float head_w = max_label_w(L, h->mat_titles, h->n_mats, avail) + PT(L, 4);
    int GC = h->n_mats < 8 ? h->n_mats : 8;
    for (; GC > 1; GC--) {
        float cell = (avail - (float)(GC - 1) * (float)g->gap_x) / (float)(GC * h->cols);
        if (cell * (float)h->cols >= head_w)
            break;
    }
    g->GR = (h->n_mats + GC - 1) / GC;
    g->GC = (h->n_mats + g->GR - 1) / g->GR;
}

/* Fits the panels into the width (and the height, when given) for the
 * choices in g; returns the cell size (0: none fits). A single head's
 * cells are whole pixels, so its PNG is a grid of exact colours; a grid's
 * cells may be fractional (each pixel still takes one cell's colour). */
static float heat_fit(lay *L, const as_fig_heat *h, const cbar *cb, const as_fig_caption *cap, bool masks, heat_geom *g)
{
    int R = h->rows, C = h->cols;
    float tick = PT(L, TICK_LEN_PT + TICK_PAD_PT), sm = lineh(L, L->small);
    bool single = h->n_mats == 1;
    float lab_max = (single ? 0.22f : 0.15f) * L->W;
    g->gap_x = single ? 0 : (int)lrintf(PT(L, 4));
    g->rl_w = g->row_labels ? max_label_w(L, h->row_labels, R, lab_max) : 0;
    g->left = PT(L, MARGIN_PT) + (h->row_axis && g->row_labels ? lineh(L, L->body) + PT(L, 2) : 0) +
              (g->row_labels ? g->rl_w + tick : 0);
    if (h->grid_row_names) {
        g->left += max_label_w(L, h->grid_row_names, h->grid_rows, lab_max) + PT(L, 3);
        g->left += h->grid_row_axis ? lineh(L, L->body) + PT(L, 1) : 0;
    }
    g->right = 0;
    if (!g->horiz_cbar) {
        g->right = PT(L, 6) + cbar_extent(L, cb);
        if (masks)
            g->right = fmaxf(g->right, PT(L, 6 + 6 + 2 + 6) +
                                           tw(L, h->masked_label ? h->masked_label : "masked", L->small));
    }
    float avail = L->W - g->left - g->right - PT(L, MARGIN_PT);
    if (h->grid_cols > 0)
        g->GR = h->grid_rows, g->GC = h->grid_cols;
    else
        heat_auto_grid(L, h, avail, g);
    float cell = (avail - (float)((g->GC - 1) * g->gap_x)) / (float)(g->GC * C);
    cell = single ? floorf(cell) : cell;

    /* Column labels read across when they fit a column, else upwards. */
    g->cl_w = g->col_labels ? max_label_w(L, h->col_labels, C, lab_max) : 0;
    g->ptitle = h->mat_titles ? sm + PT(L, 1) : 0;
    g->gap_y = (int)lrintf((single ? 0 : PT(L, 4)) + g->ptitle);
    g->top = title_height(L, cap) + (h->grid_col_axis ? lineh(L, L->body) : 0) +
             (h->grid_col_names ? sm + PT(L, 1) : 0);
    for (int pass = 0; pass < 2; pass++) {
        g->cl_upright = g->col_labels && g->cl_w + PT(L, 1.5f) > (float)cell;
        float below = (g->col_labels ? tick + (g->cl_upright ? g->cl_w : sm) : 0) +
                      (h->col_axis && g->col_labels ? PT(L, 2) + lineh(L, L->body) : 0) +
                      (g->horiz_cbar ? PT(L, 8) + cbar_extent(L, cb) : 0);
        if (masks && g->horiz_cbar)
            below += sm;
        g->below = below;
        if (L->H <= 0 || pass)
            break;
        float room = L->H - g->top - g->ptitle - below - notes_height(L, cap) - PT(L, MARGIN_PT) -
                     (float)((g->GR - 1) * g->gap_y);
        float by_h = room / (float)(g->GR * R);
        by_h = single ? floorf(by_h) : by_h;
        if (by_h >= cell)
            break;
        cell = by_h;
    }
    g->cell = cell < 0 ? 0 : cell;
    g->stride = label_stride(L, g->cell);
    return g->cell;
}

/* Chooses what a heatmap shows: labels while they fit (a grid only when
 * every token gets one), the colour bar beside the panels unless they are
 * shorter than it needs. */
static int heat_layout(lay *L, const as_fig_heat *h, cbar *cb, const as_fig_caption *cap, bool masks, heat_geom *g,
                       as_error *err)
{
    bool single = h->n_mats == 1;
    memset(g, 0, sizeof *g);
    g->row_labels = h->row_labels != NULL;
    g->col_labels = h->col_labels != NULL;
    cb->horiz = false;
    cb->len = PT(L, 100);
    cbar_ticks(L, cb);
    for (int tries = 0; tries < 4; tries++) {
        float cell = heat_fit(L, h, cb, cap, masks, g);
        if (!single && (g->row_labels || g->col_labels) && g->stride > 1) {
            g->row_labels = g->col_labels = false;
            continue;
        }
        float grid_h = (float)(g->GR * h->rows) * cell + (float)((g->GR - 1) * g->gap_y);
        float need = fmaxf(PT(L, 40), cb->label ? tw(L, cb->label, L->small) + PT(L, 4) : 0);
        if (!cb->horiz && grid_h < need) {
            cb->horiz = g->horiz_cbar = true;
            continue;
        }
        break;
    }
    if (g->cell < 1)
        return too_small(L, "a pixel per cell at this dpi (a larger width=, or fewer tokens with tokens=FROM:TO)", err);
    return AS_OK;
}

static void heat_panel_labels(lay *L, const as_fig_heat *h, const heat_geom *g, labels *rl, labels *cl, int px, int py,
                              bool left, bool below)
{
    float tick = PT(L, TICK_LEN_PT), pad = PT(L, TICK_PAD_PT), lw = PT(L, FRAME_PT), cell = g->cell;
    int cs = g->cl_upright ? g->stride : 1;
    for (int r = 0; left && rl->s && r < h->rows; r += rl->stride) {
        float cy = (float)py + ((float)r + 0.5f) * cell;
        line(L, (float)px - tick, cy, (float)px, cy, INK, lw);
        text_vc(L, (float)px - tick - pad, cy, L->small, AL_END, INK, rl->s[r]);
    }
    for (int k = 0; below && cl->s && k < h->cols; k += cs) {
        float cx = (float)px + ((float)k + 0.5f) * cell, by = (float)py + (float)h->rows * cell;
        line(L, cx, by, cx, by + tick, INK, lw);
        if (g->cl_upright)
            text_up(L, cx, by + tick + pad, L->small, AL_END, INK, cl->s[k]);
        else
            text(L, cx, by + tick + pad + caph(L, L->small), L->small, false, AL_MIDDLE, INK, cl->s[k]);
    }
}

/* One panel: its cells, frame and title. */
static bool heat_panel(lay *L, const as_fig_heat *h, const scale *s, const heat_geom *g, int m, int px, int py)
{
    int R = h->rows, C = h->cols;
    bool masked = false;
    /* The frame first: the cells, drawn over it, keep their colours where
     * its anti-aliased edge would have tinted them. */
    float lw = PT(L, FRAME_PT), pw = (float)C * g->cell, ph = (float)R * g->cell;
    rect(L, (float)px - lw / 2, (float)py - lw / 2, pw + lw, ph + lw, NULL, INK, lw);
    prim *p = add(L->f, PR_CELLS);
    if (!p)
        return false;
    p->x = (float)px, p->y = (float)py, p->w = p->h = g->cell;
    p->rows = R, p->cols = C, p->mat = m;
    if (!(p->rgb = malloc((size_t)R * (size_t)C * 3))) {
        L->f->oom = true;
        return false;
    }
    for (int i = 0; i < R * C; i++) {
        bool mk = h->mats[m].masked && h->mats[m].masked[i];
        masked |= mk;
        heat_rgb(L->st, s, h->mats[m].v[i], mk, p->rgb + (size_t)i * 3);
    }
    /* Marked cells: a white dot ringed in black, drawn over the cells. */
    static const uint8_t white[3] = {255, 255, 255};
    for (int i = 0; h->mats[m].marked && i < R * C; i++)
        if (h->mats[m].marked[i]) {
            float cx = (float)px + ((float)(i % C) + 0.5f) * g->cell, cy = (float)py + ((float)(i / C) + 0.5f) * g->cell;
            float r = fminf(g->cell * 0.22f, PT(L, 3));
            mark(L, cx, cy, r, INK, 1);
            mark(L, cx, cy, r * 0.6f, white, 1);
        }
    if (h->mat_titles) {
        char buf[256];
        elide(L->c, h->mat_titles[m], PT(L, L->small), pw + (float)g->gap_x, buf, sizeof buf);
        text(L, (float)px + pw / 2, (float)py - PT(L, 2), L->small, false, AL_MIDDLE, INK, buf);
    }
    return masked;
}

/* The top-left corner of panel (gr, gc), on whole pixels. */
static void panel_at(const as_fig_heat *h, const heat_geom *g, int gx0, int gy0, int gr, int gc, int *px, int *py)
{
    *px = gx0 + (int)lrintf((float)gc * ((float)h->cols * g->cell + (float)g->gap_x));
    *py = gy0 + (int)g->ptitle + (int)lrintf((float)gr * ((float)h->rows * g->cell + (float)g->gap_y));
}

/* Left of the panels, from the right: row labels, the row axis name,
 * the panel rows' names, what they number. */
static void heat_headers(lay *L, const as_fig_heat *h, const heat_geom *g, int gx0, int gy0, float grid_w,
                         float grid_h)
{
    float pw = (float)h->cols * g->cell, ph = (float)h->rows * g->cell, sm = lineh(L, L->small);
    float x = (float)gx0 - (g->row_labels ? g->rl_w + PT(L, TICK_LEN_PT + TICK_PAD_PT) : 0);
    float mid = (float)gy0 + g->ptitle + grid_h / 2;
    if (h->row_axis && g->row_labels) {
        /* A short plot (an alignment: few target rows) has no room for a
         * long name along it: drop its parenthesis, then all but its
         * first word, rather than run into the title. */
        char name[96];
        snprintf(name, sizeof name, "%s", h->row_axis);
        char *cut = strstr(name, " (");
        if (tw(L, name, L->body) > grid_h && cut)
            *cut = '\0';
        cut = strchr(name, ' ');
        if (tw(L, name, L->body) > grid_h && cut)
            *cut = '\0';
        text_up(L, x - PT(L, 2) - lineh(L, L->body) / 2, mid, L->body, AL_MIDDLE, INK, name);
        x -= PT(L, 2) + lineh(L, L->body);
    }
    x -= PT(L, 3);
    int px, py;
    for (int r = 0; h->grid_row_names && r < g->GR; r++) {
        panel_at(h, g, gx0, gy0, r, 0, &px, &py);
        text_vc(L, x, (float)py + ph / 2, L->small, AL_END, INK, h->grid_row_names[r]);
    }
    for (int c = 0; h->grid_col_names && c < g->GC; c++) {
        panel_at(h, g, gx0, gy0, 0, c, &px, &py);
        text(L, (float)px + pw / 2, (float)gy0 - PT(L, 2), L->small, false, AL_MIDDLE, INK, h->grid_col_names[c]);
    }
    if (h->grid_col_axis)
        text(L, (float)gx0 + grid_w / 2, (float)gy0 - sm - PT(L, 3), L->body, false, AL_MIDDLE, INK,
             h->grid_col_axis);
    if (h->grid_row_axis) {
        float names_w = max_label_w(L, h->grid_row_names, g->GR, L->W);
        text_up(L, x - names_w - PT(L, 1) - lineh(L, L->body) / 2, mid, L->body, AL_MIDDLE, INK, h->grid_row_axis);
    }
}

/* The notes of a heatmap: the caller's, and what its cells are when the
 * axis names went with the labels. */
static const char **heat_notes(const as_fig_heat *h, const heat_geom *g, const as_fig_caption *cap, char *buf,
                               size_t cap_buf, int *n)
{
    const char **notes = calloc((size_t)(cap ? cap->n_notes : 0) + 1, sizeof *notes);
    *n = 0;
    if (!notes)
        return NULL;
    if (!g->row_labels && !g->col_labels && h->row_axis && h->col_axis) {
        snprintf(buf, cap_buf, "In each panel: rows are the %s, columns the %s.", h->row_axis, h->col_axis);
        notes[(*n)++] = buf;
    }
    for (int i = 0; cap && i < cap->n_notes; i++)
        notes[(*n)++] = cap->notes[i];
    return notes;
}

/* The colour bar beside the panels (or under them, from y down) and the
 * masked and NaN swatches; returns the y below everything drawn. */
static float heat_cbar(lay *L, cbar *cb, const heat_geom *g, int gx0, int gy0, float grid_w, float grid_h, float y,
                       bool masked, bool nan, bool inf, const char *masked_label)
{
    float lx, ly, sm = lineh(L, L->small);
    if (cb->horiz) {
        cb->len = fminf(grid_w, PT(L, 140));
        cb->x = (float)gx0 + (grid_w - cb->len) / 2, cb->y = y + PT(L, 8);
        cbar_ticks(L, cb);
        y = cb->y + cbar_extent(L, cb);
        lx = cb->x, ly = y + sm / 2;
    } else {
        cb->x = (float)gx0 + grid_w + PT(L, 6), cb->y = (float)gy0 + g->ptitle, cb->len = grid_h - g->ptitle;
        cbar_ticks(L, cb);
        lx = cb->x, ly = cb->y + cb->len + PT(L, 8);
    }
    draw_cbar(L, cb);
    uint8_t mrgb[3];
    as_masked_rgb(L->st->cmap, mrgb);
    if (masked)
        lx = legend_swatch(L, lx, ly, mrgb, masked_label ? masked_label : "masked");
    if (nan)
        legend_swatch(L, cb->horiz ? lx : cb->x, cb->horiz || !masked ? ly : ly + sm, NANC, inf ? "NaN or Inf" : "NaN");
    if (masked || nan)
        y = fmaxf(y, ly + sm * (cb->horiz || !(masked && nan) ? 0.5f : 1.5f));
    return y;
}

int as_fig_heatmap(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                   const as_fig_heat *h, as_error *err)
{
    lay L;
    if (h->rows < 1 || h->cols < 1 || h->n_mats < 1 || h->grid_rows < 0 || h->grid_cols < 0 ||
        (h->grid_cols > 0 && h->grid_rows * h->grid_cols < h->n_mats))
        return as_error_set(err, "heatmap: nothing to draw (%d x %d cells, %d matrices in %d x %d panels)", h->rows,
                            h->cols, h->n_mats, h->grid_rows, h->grid_cols);
    if (lay_begin(&L, out, ctx, st, cap, err))
        return AS_ERR;
    /* The colour scale: fixed, so heads compare. */
    scale s = h->vmax > h->vmin ? (scale){h->vmin, h->vmax, false}
              : st->log_scale   ? (scale){AS_FIG_LOG_MIN, 1, true}
                                : (scale){0, 1, false};
    bool any_masked = false, any_nan = false, any_inf = false;
    for (int m = 0; m < h->n_mats; m++)
        for (int i = 0; i < h->rows * h->cols; i++) {
            bool mk = h->mats[m].masked && h->mats[m].masked[i];
            any_masked |= mk;
            any_nan |= !mk && !isfinite(h->mats[m].v[i]);
            any_inf |= !mk && isinf(h->mats[m].v[i]);
        }
    cbar cb = {.s = &s, .label = h->cbar_label};
    heat_geom g;
    if (heat_layout(&L, h, &cb, cap, any_masked || any_nan, &g, err))
        return AS_ERR;
    labels rl = {0}, cl = {0};
    float lab_max = (h->n_mats == 1 ? 0.22f : 0.15f) * L.W;
    if ((g.row_labels && labels_make(&L, &rl, h->row_labels, h->rows, L.small, g.stride, lab_max)) ||
        (g.col_labels && labels_make(&L, &cl, h->col_labels, h->cols, L.small, g.cl_upright ? g.stride : 1, lab_max))) {
        labels_free(&rl), labels_free(&cl);
        as_figure_free(L.f);
        return as_error_set(err, "out of memory");
    }
    float pw = (float)h->cols * g.cell, ph = (float)h->rows * g.cell;
    float grid_w = (float)g.GC * pw + (float)((g.GC - 1) * g.gap_x), grid_h = (float)g.GR * ph + (float)((g.GR - 1) * g.gap_y);
    int gx0 = (int)ceilf(g.left), gy0 = (int)ceilf(g.top);
    /* What the width leaves over (a height-bound grid) is shared left and right. */
    float spare = L.W - g.left - grid_w - g.right - PT(&L, MARGIN_PT);
    gx0 += spare > 0 ? (int)(spare / 2) : 0;
    for (int m = 0; m < h->n_mats; m++) {
        int gr = m / g.GC, gc = m % g.GC;
        int px, py;
        panel_at(h, &g, gx0, gy0, gr, gc, &px, &py);
        heat_panel(&L, h, &s, &g, m, px, py);
        heat_panel_labels(&L, h, &g, &rl, &cl, px, py, gc == 0, m + g.GC >= h->n_mats);
    }
    heat_headers(&L, h, &g, gx0, gy0, grid_w, grid_h);
    float bottom = (float)(gy0 + (int)g.ptitle) + grid_h, tick = PT(&L, TICK_LEN_PT + TICK_PAD_PT);
    float cl_bottom = bottom + (g.col_labels ? tick + (g.cl_upright ? g.cl_w : lineh(&L, L.small)) : 0);
    if (h->col_axis && g.col_labels) {
        cl_bottom += PT(&L, 2) + lineh(&L, L.body);
        text(&L, (float)gx0 + (float)grid_w / 2, cl_bottom - PT(&L, 2), L.body, false, AL_MIDDLE, INK, h->col_axis);
    }
    cl_bottom = heat_cbar(&L, &cb, &g, gx0, gy0, grid_w, grid_h, cl_bottom, any_masked, any_nan, any_inf,
                          h->masked_label);
    char note0[256];
    int n_notes;
    const char **notes = heat_notes(h, &g, cap, note0, sizeof note0, &n_notes);
    as_fig_caption c2 = {cap ? cap->title : NULL, cap ? cap->subtitle : NULL, notes, notes ? n_notes : 0};
    float H = draw_notes(&L, &c2, cl_bottom) + PT(&L, MARGIN_PT);
    draw_title(&L, cap);
    free(notes);
    labels_free(&rl), labels_free(&cl);
    if (!notes)
        L.f->oom = true;
    return lay_end(&L, H, out, err);
}

/* ================================================ attention over an image */

int as_fig_overlay_view(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                        const as_fig_overlay *ov, as_error *err)
{
    lay L;
    if (ov->size < 1 || ov->grid < 1 || ov->size % ov->grid || ov->n_maps < 1 || !(ov->vmax > 0) ||
        !(ov->alpha >= 0 && ov->alpha <= 1))
        return as_error_set(err, "overlay: nothing to draw (a %d-pixel image, %d patches a side, %d maps, scale "
                                 "0-%g)", ov->size, ov->grid, ov->n_maps, (double)ov->vmax);
    if (lay_begin(&L, out, ctx, st, cap, err))
        return AS_ERR;
    scale s = {0, ov->vmax, false};
    cbar cb = {.s = &s, .label = ov->cbar_label};
    float top = title_height(&L, cap), gap = PT(&L, 6), margin = PT(&L, MARGIN_PT);
    float ptitle = ov->map_titles ? lineh(&L, L.small) + PT(&L, 2) : 0;
    /* Panels a row: as many as keep a panel at least 1 in wide; then the
     * cell size (whole pixels) that fills the width beside the bar. */
    cb.len = PT(&L, 72);
    cbar_ticks(&L, &cb);
    float right = PT(&L, 6) + cbar_extent(&L, &cb), avail = L.W - 2 * margin - right;
    int per_row = (int)((avail + gap) / (PT(&L, 72) + gap));
    per_row = per_row < 1 ? 1 : per_row > ov->n_maps ? ov->n_maps : per_row;
    int rows = (ov->n_maps + per_row - 1) / per_row;
    float panel = (avail - (float)(per_row - 1) * gap) / (float)per_row;
    float cell = floorf(panel / (float)ov->size);
    if (L.H > 0) {
        float hmax = (L.H - top - margin - (float)rows * ptitle - (float)(rows - 1) * gap) / (float)rows;
        cell = fminf(cell, floorf(hmax / (float)ov->size));
    }
    if (cell < 1)
        return too_small(&L, "the image panels", err);
    float pw = cell * (float)ov->size, grid_w = (float)per_row * pw + (float)(per_row - 1) * gap;
    float x0 = roundf(margin + (avail - grid_w) / 2), lw = PT(&L, FRAME_PT);
    float y = top;
    uint8_t line_rgb[3] = {0xFF, 0xFF, 0xFF};
    for (int m = 0; m < ov->n_maps; m++) {
        int r = m / per_row, c = m % per_row;
        float px = x0 + (float)c * (pw + gap), py = roundf(top + (float)r * (pw + ptitle + gap) + ptitle);
        px = roundf(px);
        rect(&L, px - lw / 2, py - lw / 2, pw + lw, pw + lw, NULL, INK, lw);
        prim *p = add(L.f, PR_CELLS);
        if (!p)
            break;
        p->x = px, p->y = py, p->w = p->h = cell;
        p->rows = p->cols = ov->size, p->mat = m;
        if (!(p->rgb = malloc((size_t)ov->size * (size_t)ov->size * 3))) {
            L.f->oom = true;
            break;
        }
        int P = ov->size / ov->grid;
        for (int iy = 0; iy < ov->size; iy++)
            for (int ix = 0; ix < ov->size; ix++) {
                size_t i = (size_t)iy * (size_t)ov->size + (size_t)ix;
                uint8_t hc[3];
                float v = ov->maps[m][(iy / P) * ov->grid + ix / P];
                as_colormap(st->cmap, isnan(v) ? 0 : (float)scale_t(&s, v < 0 ? 0 : v > ov->vmax ? ov->vmax : v), hc);
                for (int k = 0; k < 3; k++)
                    p->rgb[i * 3 + (size_t)k] =
                        (uint8_t)lrintf((1 - ov->alpha) * (float)ov->rgb[i * 3 + (size_t)k] + ov->alpha * (float)hc[k]);
            }
        /* the patch grid, thin and translucent over the image */
        for (int g = 1; g < ov->grid; g++) {
            float o = (float)(g * P) * cell;
            polyline_a(&L, (float[]){px + o, py, px + o, py + pw}, 2, line_rgb, lw * 0.6f, 0.35f);
            polyline_a(&L, (float[]){px, py + o, px + pw, py + o}, 2, line_rgb, lw * 0.6f, 0.35f);
        }
        if (ov->marked >= 0 && ov->marked < ov->grid * ov->grid) {
            float mx = px + (float)(ov->marked % ov->grid * P) * cell, my = py + (float)(ov->marked / ov->grid * P) * cell;
            rect(&L, mx, my, (float)P * cell, (float)P * cell, NULL, HILITE, 2 * lw);
        }
        if (ov->map_titles) {
            char buf[256];
            elide(L.c, ov->map_titles[m], PT(&L, L.small), pw + gap, buf, sizeof buf);
            text(&L, px + pw / 2, py - PT(&L, 2), L.small, false, AL_MIDDLE, INK, buf);
        }
        y = py + pw;
    }
    /* the bar beside the first row of panels, as tall as a panel */
    cb.x = x0 + grid_w + PT(&L, 6), cb.y = roundf(top + ptitle), cb.len = pw;
    cbar_ticks(&L, &cb);
    draw_cbar(&L, &cb);
    float H = draw_notes(&L, cap, y + PT(&L, 4)) + margin;
    draw_title(&L, cap);
    return lay_end(&L, H, out, err);
}

/* ====================================================== the head view */

/* Head i of n: the series colours, then hues a golden angle apart. */
static void head_colour(int i, uint8_t rgb[3])
{
    if (i < 12) {
        memcpy(rgb, SERIES[i], 3);
        return;
    }
    float h = fmodf((float)i * 137.508f, 360.0f) / 60.0f, s = 0.65f, v = 0.8f;
    float c = v * s, x = c * (1 - fabsf(fmodf(h, 2) - 1)), m = v - c;
    float r = 0, g = 0, b = 0;
    switch ((int)h) {
    case 0: r = c, g = x; break;
    case 1: r = x, g = c; break;
    case 2: g = c, b = x; break;
    case 3: g = x, b = c; break;
    case 4: r = x, b = c; break;
    default: r = c, b = x; break;
    }
    rgb[0] = (uint8_t)lrintf((r + m) * 255), rgb[1] = (uint8_t)lrintf((g + m) * 255), rgb[2] = (uint8_t)lrintf((b + m) * 255);
}

/* The legend of heads: a short line in each head's colour and its name,
 * wrapped to the width. Returns its height; draws when draw. */
static float heads_legend(lay *L, const as_fig_lines *ln, float y, bool draw)
{
    if (!ln->head_names || ln->n_heads < 2)
        return 0;
    float x0 = PT(L, MARGIN_PT), x = x0, sw = PT(L, 8), rowh = lineh(L, L->small), cy = y + rowh / 2;
    for (int i = 0; i < ln->n_heads; i++) {
        float w = sw + PT(L, 2) + tw(L, ln->head_names[i], L->small) + PT(L, 6);
        if (x > x0 && x + w > L->W - PT(L, MARGIN_PT))
            x = x0, cy += rowh;
        if (draw) {
            uint8_t rgb[3];
            head_colour(i, rgb);
            line(L, x, cy, x + sw, cy, rgb, PT(L, 1.5f));
            text_vc(L, x + sw + PT(L, 2), cy, L->small, AL_START, INK, ln->head_names[i]);
        }
        x += w;
    }
    return cy + rowh / 2 - y + PT(L, 3);
}

int as_fig_lines_view(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                      const as_fig_lines *ln, as_error *err)
{
    lay L;
    if (ln->n < 1 || ln->n_heads < 1)
        return as_error_set(err, "head view: nothing to draw (%d tokens, %d heads)", ln->n, ln->n_heads);
    /* Past a few hundred tokens the lines are a grey fog (and up to
     * tokens² of them would be kept): a window reads better. */
    if (ln->n > AS_FIG_LINES_MAX)
        return as_error_set(err, "head view: %d tokens is more than the %d it draws (tokens=FROM:TO picks a window)",
                            ln->n, AS_FIG_LINES_MAX);
    if (lay_begin(&L, out, ctx, st, cap, err))
        return AS_ERR;
    int n = ln->n;
    float lab_max = 0.3f * L.W, sm = lineh(&L, L.small), pad = PT(&L, 3);
    float lw_ = max_label_w(&L, ln->labels, n, lab_max);
    float xl = PT(&L, MARGIN_PT) + lw_, xr = L.W - PT(&L, MARGIN_PT) - lw_;
    if (xr - xl < PT(&L, 40))
        return too_small(&L, "the head view of these tokens", err);
    /* On a wide page the columns stay close, as in bertviz: lines much
     * longer than they fall would all look level. */
    float span = fminf(xr - xl, PT(&L, 200));
    xl = roundf((L.W - span) / 2), xr = xl + span;
    float top = title_height(&L, cap);
    float legend_h = heads_legend(&L, ln, top, false);
    float y0 = top + legend_h + sm;
    float pitch = sm * 1.1f;
    if (L.H > 0)
        pitch = (L.H - y0 - notes_height(&L, cap) - PT(&L, MARGIN_PT)) / (float)n;
    if (pitch < PT(&L, 0.5f))
        return too_small(&L, "this many tokens at height= (use tokens= or a larger height)", err);
    labels lb;
    if (labels_make(&L, &lb, ln->labels, n, L.small, label_stride(&L, pitch), lab_max)) {
        labels_free(&lb);
        as_figure_free(L.f);
        return as_error_set(err, "out of memory");
    }
    heads_legend(&L, ln, top, true);
    text(&L, xl, y0 - sm * 0.35f, L.small, false, AL_END, GREYTXT, "query");
    text(&L, xr, y0 - sm * 0.35f, L.small, false, AL_START, GREYTXT, "key");
    float lw = PT(&L, ln->n_heads > 1 ? 0.8f : 1.0f);
    for (int hd = 0; hd < ln->n_heads; hd++) {
        uint8_t rgb[3];
        head_colour(ln->n_heads > 1 ? hd : 0, rgb);
        for (int q = 0; q < n; q++)
            for (int k = 0; k < n; k++) {
                float w = ln->weights[hd][(size_t)q * (size_t)n + (size_t)k];
                /* Below half a percent a line is invisible anyway. */
                if (!(w > 0.005f))
                    continue;
                float pts[4] = {xl + pad, y0 + ((float)q + 0.5f) * pitch, xr - pad, y0 + ((float)k + 0.5f) * pitch};
                polyline_a(&L, pts, 2, rgb, lw, fminf(w, 1));
            }
    }
    for (int i = 0; i < n; i += lb.stride) {
        float cy = y0 + ((float)i + 0.5f) * pitch;
        text_vc(&L, xl, cy, L.small, AL_END, INK, lb.s[i]);
        text_vc(&L, xr, cy, L.small, AL_START, INK, lb.s[i]);
    }
    float H = draw_notes(&L, cap, y0 + (float)n * pitch) + PT(&L, MARGIN_PT);
    draw_title(&L, cap);
    labels_free(&lb);
    return lay_end(&L, H, out, err);
}

/* ======================================================== token charts */

/* A categorical x axis of n tokens with labels, shared by stacked panels. */
typedef struct xaxis {
    float x0, step; /* px: left edge of the plot, width per token */
    bool upright;   /* labels read upwards (they are wider than a step) */
    float depth;    /* px the labels take under the axis */
    labels lb;
} xaxis;

static float xaxis_center(const xaxis *xa, int i) { return xa->x0 + ((float)i + 0.5f) * xa->step; }

static int xaxis_make(lay *L, xaxis *xa, const char *const *src, int n)
{
    float maxw = 0.3f * L->W, widest = max_label_w(L, src, n, maxw);
    xa->upright = widest + PT(L, 2) > xa->step;
    int stride = xa->upright ? label_stride(L, xa->step) : 1;
    if (labels_make(L, &xa->lb, src, n, L->small, stride, maxw))
        return AS_ERR;
    xa->depth = PT(L, TICK_LEN_PT + TICK_PAD_PT) + (xa->upright ? xa->lb.maxw : lineh(L, L->small));
    return AS_OK;
}

/* A panel: a frame, y ticks with light grid lines, values mapped through s. */
typedef struct panel {
    float x, y, w, h;
    scale s;
    ticks t;
} panel;

static float panel_y(const panel *p, double v) { return p->y + (float)(1 - scale_t(&p->s, v)) * p->h; }

static void draw_panel(lay *L, const panel *p, const char *header)
{
    float lw = PT(L, FRAME_PT);
    for (int i = 0; i < p->t.n; i++) {
        float y = panel_y(p, p->t.v[i]);
        if (y < p->y - 0.5f || y > p->y + p->h + 0.5f)
            continue;
        line(L, p->x, y, p->x + p->w, y, GRIDC, PT(L, 0.5f));
        line(L, p->x - PT(L, TICK_LEN_PT), y, p->x, y, INK, lw);
        text_vc(L, p->x - PT(L, TICK_LEN_PT + TICK_PAD_PT), y, L->small, AL_END, INK, p->t.label[i]);
    }
    rect(L, p->x, p->y, p->w, p->h, NULL, INK, lw);
    if (header)
        text(L, p->x, p->y - PT(L, 2.5f), L->small, false, AL_START, INK, header);
}

static void draw_xlabels(lay *L, const xaxis *xa, float y)
{
    float lw = PT(L, FRAME_PT), tl = PT(L, TICK_LEN_PT), tp = PT(L, TICK_PAD_PT);
    for (int i = 0; xa->lb.s && i < xa->lb.n; i += xa->lb.stride) {
        float cx = xaxis_center(xa, i);
        line(L, cx, y, cx, y + tl, INK, lw);
        if (xa->upright)
            text_up(L, cx, y + tl + tp, L->small, AL_END, INK, xa->lb.s[i]);
        else
            text(L, cx, y + tl + tp + caph(L, L->small), L->small, false, AL_MIDDLE, INK, xa->lb.s[i]);
    }
}

/* Series swatches in a row: a line with a marker, then the name. Returns the x after them. */
static float draw_legend(lay *L, float x, float cy, int n, const char *const *names, const uint8_t (*cols)[3])
{
    for (int i = 0; i < n; i++) {
        float sz = PT(L, 10);
        line(L, x, cy, x + sz, cy, cols[i], PT(L, 1.2f));
        mark(L, x + sz / 2, cy, PT(L, 1.8f), cols[i], 1);
        text_vc(L, x + sz + PT(L, 3), cy, L->small, AL_START, INK, names[i]);
        x += sz + PT(L, 3) + tw(L, names[i], L->small) + PT(L, 8);
    }
    return x;
}

/* ============================================================== norms */

static double stat_value(const as_norm_stat *st, int which)
{
    switch (which) {
    case 0: return st->mean;
    case 1: return sqrt(st->var > 0 ? st->var : 0);
    default: return fmax(fabs(st->min), fabs(st->max));
    }
}

/* The input dimensions that are among a token's largest for many tokens:
 * the outliers worth naming. */
#define MAX_NAMED 5
typedef struct outliers {
    int n;
    int dim[MAX_NAMED], count[MAX_NAMED];
    char text[MAX_NAMED][64];
    float vmax; /* largest |x| among all tokens' top dimensions */
} outliers;

static int find_outliers(const as_fig_norms *nm, outliers *o)
{
    int *count = calloc((size_t)nm->d_model, sizeof *count);
    memset(o, 0, sizeof *o);
    if (!count)
        return AS_ERR;
    for (int i = 0; i < nm->n; i++) {
        int dims[AS_NORM_TOP * 2], nd = 0;
        for (int sr = 0; sr < nm->n_series; sr++)
            for (int t = 0; t < AS_NORM_TOP; t++) {
                const as_norm_stat *s0 = &nm->series[sr].stat[i];
                int d = s0->top_dim[t];
                if (d < 0 || d >= nm->d_model)
                    continue;
                if (isfinite(s0->top_val[t]))
                    o->vmax = fmaxf(o->vmax, fabsf(s0->top_val[t]));
                bool dup = false;
                for (int j = 0; j < nd; j++)
                    dup |= dims[j] == d;
                if (!dup)
                    dims[nd++] = d;
            }
        for (int j = 0; j < nd; j++)
            count[dims[j]]++; /* once per token, whichever norm saw it */
    }
    int min_count = nm->n / 4 > 2 ? nm->n / 4 : 2;
    for (int k = 0; k < MAX_NAMED && nm->n > 1; k++) {
        int best = -1;
        for (int d = 0; d < nm->d_model; d++)
            if (count[d] >= min_count && (best < 0 || count[d] > count[best]))
                best = d;
        if (best < 0)
            break;
        o->dim[o->n] = best, o->count[o->n] = count[best];
        snprintf(o->text[o->n], sizeof o->text[0], "dim %d: %d/%d", best, count[best], nm->n);
        o->n++;
        count[best] = 0;
    }
    free(count);
    return AS_OK;
}

/* One statistic of every series: a line (broken at non-finite values) with markers. */
static int draw_stat(lay *L, const xaxis *xa, const panel *p, const as_fig_norms *nm, int which)
{
    float *pts = malloc((size_t)nm->n * 2 * sizeof *pts);
    if (!pts)
        return AS_ERR;
    float mr = fminf(PT(L, 1.6f), xa->step * 0.3f), lw = PT(L, 1.0f);
    for (int sr = 0; sr < nm->n_series; sr++) {
        int m = 0;
        for (int i = 0; i <= nm->n; i++) {
            double v = i < nm->n ? stat_value(&nm->series[sr].stat[i], which) : NAN;
            if (isfinite(v)) {
                pts[2 * m] = xaxis_center(xa, i), pts[2 * m + 1] = panel_y(p, v);
                m++;
                continue;
            }
            polyline(L, pts, m, SERIES[sr], lw);
            for (int j = 0; j < m; j++)
                mark(L, pts[2 * j], pts[2 * j + 1], mr, SERIES[sr], 1);
            m = 0;
        }
    }
    free(pts);
    return AS_OK;
}

/* A marker per (token, top dimension), its area by |x|; the recurring
 * dimensions ruled across and named at the right, spread apart so the
 * names never overlap. */
static void draw_dims(lay *L, const xaxis *xa, const panel *p, const as_fig_norms *nm, const outliers *o)
{
    for (int i = 0; i < o->n; i++) {
        float y = panel_y(p, o->dim[i]);
        line(L, p->x, y, p->x + p->w, y, (const uint8_t[]){0xBB, 0xBB, 0xBB}, PT(L, 0.5f));
    }
    float rmax = fminf(PT(L, 3.5f), xa->step * 0.45f);
    for (int sr = 0; sr < nm->n_series; sr++)
        for (int i = 0; i < nm->n; i++)
            for (int t = 0; t < AS_NORM_TOP; t++) {
                const as_norm_stat *s0 = &nm->series[sr].stat[i];
                int d = s0->top_dim[t];
                if (d < 0 || d >= nm->d_model)
                    continue;
                float v = fabsf(s0->top_val[t]);
                float r = o->vmax > 0 && isfinite(v) ? rmax * sqrtf(v / o->vmax) : rmax;
                float cx = xaxis_center(xa, i) + (nm->n_series > 1 ? (sr ? 1 : -1) * xa->step * 0.12f : 0);
                mark(L, cx, panel_y(p, d), fmaxf(r, PT(L, 0.6f)), SERIES[sr], 0.75f);
            }
    int order[MAX_NAMED];
    float y[MAX_NAMED], gap = lineh(L, L->small);
    for (int i = 0; i < o->n; i++) {
        int j = i;
        for (; j > 0 && o->dim[order[j - 1]] < o->dim[i]; j--)
            order[j] = order[j - 1];
        order[j] = i; /* top of the panel (highest dimension) first */
    }
    for (int i = 0; i < o->n; i++) {
        y[i] = panel_y(p, o->dim[order[i]]);
        if (i > 0 && y[i] < y[i - 1] + gap)
            y[i] = y[i - 1] + gap;
    }
    for (int i = o->n - 1; i >= 0; i--)
        y[i] = fminf(y[i], p->y + p->h - gap / 2 - (float)(o->n - 1 - i) * gap);
    for (int i = 0; i < o->n; i++)
        text_vc(L, p->x + p->w + PT(L, 4), y[i], L->small, AL_START, INK, o->text[order[i]]);
}

static void norm_scales(lay *L, const as_fig_norms *nm, panel *pn)
{
    for (int k = 0; k < 3; k++) {
        double lo = INFINITY, hi = -INFINITY, minpos = INFINITY;
        for (int sr = 0; sr < nm->n_series; sr++)
            for (int i = 0; i < nm->n; i++) {
                double v = stat_value(&nm->series[sr].stat[i], k);
                if (!isfinite(v))
                    continue;
                lo = fmin(lo, v), hi = fmax(hi, v);
                if (v > 0)
                    minpos = fmin(minpos, v);
            }
        /* The spread and the magnitude are positive: they may go on a log axis. */
        pn[k].s = L->st->log_scale && k > 0 ? scale_log(minpos, hi) : scale_linear(lo, hi, true);
    }
    pn[3].s = scale_linear(-0.5, nm->d_model - 0.5, false);
}

int as_fig_norm_chart(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                      const as_fig_norms *nm, as_error *err)
{
    lay L;
    if (nm->n < 1 || nm->n_series < 1 || nm->n_series > 2 || nm->d_model < 1)
        return as_error_set(err, "norm chart: no tokens to draw");
    if (lay_begin(&L, out, ctx, st, cap, err))
        return AS_ERR;
    int n = nm->n;
    outliers ol;
    if (find_outliers(nm, &ol)) {
        as_figure_free(L.f);
        return as_error_set(err, "out of memory");
    }
    enum { NP = 4 };
    panel pn[NP];
    const char *heads[NP] = {"mean of the input", nm->rms ? "RMS of the input" : "std of the input",
                             "max |x| of the input",
                             "largest input dimensions (marker area \xE2\x88\x9D |x|)"};
    const float share[NP] = {1, 1, 1, 1.5f};
    norm_scales(&L, nm, pn);
    float tickw = 0, named_w = 0, sm = lineh(&L, L.small);
    /* Ticks first (a panel's height sets how many), then the widest sets the left margin. */
    float top = title_height(&L, cap) + sm + PT(&L, 2);
    float unit = L.H > 0 ? 0 : PT(&L, 0.2f * st->width_pt);
    for (int k = 0; k < NP; k++)
        make_ticks(&pn[k].s, unit > 0 ? (int)fmaxf(2, share[k] * unit / PT(&L, 26)) : 3, &pn[k].t);
    for (int k = 0; k < NP; k++)
        tickw = fmaxf(tickw, ticks_width(&L, &pn[k].t, L.small));
    for (int i = 0; i < ol.n; i++)
        named_w = fmaxf(named_w, tw(&L, ol.text[i], L.small) + PT(&L, 6));
    xaxis xa = {0};
    xa.x0 = ceilf(PT(&L, MARGIN_PT) + tickw + PT(&L, TICK_LEN_PT + TICK_PAD_PT));
    float plot_w = L.W - xa.x0 - named_w - PT(&L, MARGIN_PT);
    if (plot_w < PT(&L, 40))
        return too_small(&L, "the norm chart", err);
    xa.step = plot_w / (float)n;
    if (xaxis_make(&L, &xa, nm->labels, n)) {
        labels_free(&xa.lb);
        as_figure_free(L.f);
        return as_error_set(err, "out of memory");
    }
    float headh = sm + PT(&L, 1), gaps = 0;
    for (int k = 0; k < NP; k++)
        gaps += headh + PT(&L, 3);
    float bottom_room = xa.depth + PT(&L, 2) + lineh(&L, L.body) + notes_height(&L, cap) + PT(&L, MARGIN_PT);
    if (L.H > 0)
        unit = (L.H - top - gaps - bottom_room) / (share[0] + share[1] + share[2] + share[3]);
    if (unit < PT(&L, 10)) {
        labels_free(&xa.lb);
        return too_small(&L, "the norm chart's four panels (a larger height=)", err);
    }
    float y = top;
    for (int k = 0; k < NP; k++) {
        y += headh;
        pn[k].x = xa.x0, pn[k].y = roundf(y), pn[k].w = plot_w, pn[k].h = roundf(share[k] * unit);
        y = pn[k].y + pn[k].h + PT(&L, 3);
        if (L.H > 0)
            make_ticks(&pn[k].s, (int)fmaxf(2, pn[k].h / PT(&L, 26)), &pn[k].t);
    }
    const char *names[2] = {nm->series[0].name, nm->n_series > 1 ? nm->series[1].name : NULL};
    draw_legend(&L, xa.x0, top - sm / 2 - PT(&L, 2), nm->n_series, names, SERIES);
    for (int k = 0; k < NP; k++) {
        draw_panel(&L, &pn[k], heads[k]);
        if (k < 3 && draw_stat(&L, &xa, &pn[k], nm, k))
            L.f->oom = true;
    }
    draw_dims(&L, &xa, &pn[3], nm, &ol);
    float xl_y = pn[NP - 1].y + pn[NP - 1].h;
    draw_xlabels(&L, &xa, xl_y);
    float ay = xl_y + xa.depth + PT(&L, 2) + caph(&L, L.body);
    text(&L, xa.x0 + plot_w / 2, ay, L.body, false, AL_MIDDLE, INK, "token");
    float H = draw_notes(&L, cap, ay + PT(&L, 2)) + PT(&L, MARGIN_PT);
    draw_title(&L, cap);
    labels_free(&xa.lb);
    return lay_end(&L, H, out, err);
}

/* ======================================================== probabilities */

static scale prob_scale(const as_fig_style *st, const as_fig_probs *pr)
{
    double pmax = 0, pmin = 1;
    for (int i = 0; i < pr->k; i++)
        if (isfinite(pr->p[i])) {
            pmax = fmax(pmax, pr->p[i]);
            if (pr->p[i] > 0)
                pmin = fmin(pmin, pr->p[i]);
        }
    if (st->log_scale)
        return scale_log(pmin, 1);
    double step = nice_step(pmax > 0 ? pmax : 1, 4);
    scale s = {0, fmin(1, ceil(pmax * 1.12 / step - 1e-9) * step), false};
    if (s.hi <= 0)
        s.hi = 1;
    return s;
}

int as_fig_prob_bars(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                     const as_fig_probs *pr, as_error *err)
{
    lay L;
    if (pr->k < 1)
        return as_error_set(err, "probability chart: no tokens to draw");
    if (lay_begin(&L, out, ctx, st, cap, err))
        return AS_ERR;
    int k = pr->k;
    labels lb;
    if (labels_make(&L, &lb, pr->labels, k, L.small, 1, 0.35f * L.W)) {
        labels_free(&lb);
        as_figure_free(L.f);
        return as_error_set(err, "out of memory");
    }
    panel pn;
    pn.s = prob_scale(st, pr);
    float tl = PT(&L, TICK_LEN_PT), tp = PT(&L, TICK_PAD_PT), sm = lineh(&L, L.small), lw = PT(&L, FRAME_PT);
    float valw = tw(&L, "0.000", L.small) + PT(&L, 3);
    pn.x = ceilf(PT(&L, MARGIN_PT) + lb.maxw + tl + tp);
    pn.w = roundf(L.W - pn.x - valw - PT(&L, MARGIN_PT));
    pn.y = roundf(title_height(&L, cap));
    float below = tl + tp + sm + PT(&L, 2) + lineh(&L, L.body);
    float row = L.H > 0 ? (L.H - pn.y - below - notes_height(&L, cap) - PT(&L, MARGIN_PT)) / (float)k : sm * 1.3f;
    if (pn.w < PT(&L, 30) || row < PT(&L, 1)) {
        labels_free(&lb);
        return too_small(&L, "these bars", err);
    }
    pn.h = row * (float)k;
    make_ticks(&pn.s, (int)fmaxf(2, pn.w / PT(&L, 36)), &pn.t);
    for (int i = 0; i < pn.t.n; i++) {
        float x = pn.x + (float)scale_t(&pn.s, pn.t.v[i]) * pn.w;
        line(&L, x, pn.y, x, pn.y + pn.h, GRIDC, PT(&L, 0.5f));
        line(&L, x, pn.y + pn.h, x, pn.y + pn.h + tl, INK, lw);
        text(&L, x, pn.y + pn.h + tl + tp + caph(&L, L.small), L.small, false, AL_MIDDLE, INK, pn.t.label[i]);
    }
    int stride = label_stride(&L, row);
    for (int i = 0; i < k; i++) {
        float cy = pn.y + ((float)i + 0.5f) * row;
        float len = isfinite(pr->p[i]) ? (float)scale_t(&pn.s, pr->p[i]) * pn.w : 0;
        rect(&L, pn.x, cy - row * 0.36f, len, row * 0.72f, SERIES[0], NULL, 0);
        if (i % stride)
            continue;
        line(&L, pn.x - tl, cy, pn.x, cy, INK, lw);
        text_vc(&L, pn.x - tl - tp, cy, L.small, AL_END, INK, lb.s[i]);
        char v[32];
        snprintf(v, sizeof v, pr->p[i] >= 0.001 ? "%.3f" : "%.0e", pr->p[i]);
        text_vc(&L, pn.x + len + PT(&L, 2), cy, L.small, AL_START, GREYTXT, v);
    }
    rect(&L, pn.x, pn.y, pn.w, pn.h, NULL, INK, lw);
    float axis_y = pn.y + pn.h + tl + tp + sm + PT(&L, 2) + caph(&L, L.body);
    text(&L, pn.x + pn.w / 2, axis_y, L.body, false, AL_MIDDLE, INK, "probability");
    float H = draw_notes(&L, cap, axis_y + PT(&L, 2)) + PT(&L, MARGIN_PT);
    draw_title(&L, cap);
    labels_free(&lb);
    return lay_end(&L, H, out, err);
}

/* The columns of as_fig_expert_tokens: each row a label line and a bar
 * under it; the bars' scale (0–1) spans a column's inner width. */
int as_fig_expert_tokens(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                         const as_fig_experts *ex, as_error *err)
{
    lay L;
    int E = ex->n_expert, R = ex->rows;
    if (E < 1 || R < 1 || !(ex->full > 0))
        return as_error_set(err, "expert figure: no experts to draw");
    if (lay_begin(&L, out, ctx, st, cap, err))
        return AS_ERR;
    float m = PT(&L, MARGIN_PT), gap = PT(&L, 4), lw = PT(&L, FRAME_PT);
    float colw = (L.W - 2 * m - (float)(E - 1) * gap) / (float)E;
    float sm = lineh(&L, L.small), barh = fmaxf(PT(&L, 3), 2), rowh = sm + barh + PT(&L, 2);
    float head = title_height(&L, cap), hb = lineh(&L, L.body);
    if (colw < PT(&L, 24))
        return too_small(&L, "a column per expert", err);
    float top = head + hb + PT(&L, 2);
    for (int e = 0; e < E; e++) {
        const as_fig_expert_col *c = &ex->cols[e];
        float x = m + (float)e * (colw + gap);
        text(&L, x + colw / 2, head + caph(&L, L.body), L.small, false, AL_MIDDLE, INK, c->title);
        line(&L, x, top - PT(&L, 1), x + colw, top - PT(&L, 1), INK, lw);
        if (c->n == 0)
            text_vc(&L, x + colw / 2, top + sm / 2, L.small, AL_MIDDLE, GREYTXT, "none");
        for (int i = 0; i < c->n && i < R; i++) {
            float y = top + (float)i * rowh;
            char lab[64], num[24];
            snprintf(num, sizeof num, "\xc3\x97%d", c->count[i]);
            float nw = tw(&L, num, L.small) + PT(&L, 2);
            /* a token's text is cut to what the column holds beside its count */
            snprintf(lab, sizeof lab, "%s", c->labels[i]);
            for (size_t n = strlen(lab); n > 1 && tw(&L, lab, L.small) > colw - nw; n--) {
                while (n > 1 && ((unsigned char)lab[n - 1] & 0xC0) == 0x80)
                    n--;
                lab[n - 1] = 0;
            }
            text_vc(&L, x, y + sm / 2, L.small, AL_START, INK, lab);
            text_vc(&L, x + colw, y + sm / 2, L.small, AL_END, GREYTXT, num);
            float sh = isfinite(c->share[i]) ? fminf(1, fmaxf(0, c->share[i] / ex->full)) : 0;
            rect(&L, x, roundf(y + sm), roundf(sh * colw), roundf(barh), SERIES[0], NULL, 0);
            line(&L, x, y + sm, x, y + sm + barh, INK, lw);
        }
    }
    float H = draw_notes(&L, cap, top + (float)R * rowh + PT(&L, 2)) + m;
    draw_title(&L, cap);
    return lay_end(&L, H, out, err);
}

/* Black or white, whichever reads better on rgb. */
static const uint8_t *contrast(const uint8_t *rgb)
{
    float lum = 0.2126f * rgb[0] + 0.7152f * rgb[1] + 0.0722f * rgb[2];
    return lum > 140 ? INK : WHITE;
}

/* Where the parts of a probability trace go. */
typedef struct trace_geom {
    float x0, colw, rowh; /* left edge of the columns, column width, table row height */
    float ty;             /* top of the table */
    bool cell_text;       /* cells wide enough to hold a token */
    scale ps;             /* the colour scale of the table */
} trace_geom;

/* The line chart: the chosen token's probability, and the top one's behind it. */
static int draw_trace_chart(lay *L, const as_fig_trace *tr, const trace_geom *g, const panel *pa)
{
    static const uint8_t GREY[3] = {0x99, 0x99, 0x99};
    int S = tr->steps;
    float *pts = malloc((size_t)S * 2 * sizeof *pts);
    if (!pts)
        return AS_ERR;
    draw_panel(L, pa, NULL);
    text_up(L, PT(L, MARGIN_PT) + lineh(L, L->body) / 2, pa->y + pa->h / 2, L->body, AL_MIDDLE, INK, "probability");
    float mr = fminf(PT(L, 1.8f), g->colw * 0.3f);
    for (int top = 1; top >= 0; top--) {
        for (int i = 0; i < S; i++) {
            double v = top ? tr->alt_p[(size_t)i * (size_t)tr->k] : tr->chosen_p[i];
            pts[2 * i] = pa->x + ((float)i + 0.5f) * g->colw, pts[2 * i + 1] = panel_y(pa, v);
        }
        polyline(L, pts, S, top ? GREY : SERIES[0], PT(L, top ? 0.8f : 1.2f));
        for (int i = 0; i < S; i++)
            mark(L, pts[2 * i], pts[2 * i + 1], top ? mr * 0.7f : mr, top ? GREY : SERIES[0], 1);
    }
    free(pts);
    return AS_OK;
}

/* The table: a row per rank, then the chosen token's row; cells coloured
 * by probability, the chosen candidate outlined. */
static void draw_trace_table(lay *L, const as_fig_trace *tr, const trace_geom *g)
{
    int S = tr->steps, K = tr->k;
    float x0 = g->x0, colw = g->colw, rowh = g->rowh, ty = g->ty, lw = PT(L, FRAME_PT), gap = PT(L, 2);
    for (int r = 0; r <= K; r++) {
        float ry = ty + (float)r * rowh + (r == K ? gap : 0);
        char name[16] = "chosen";
        if (r < K)
            snprintf(name, sizeof name, "%d", r + 1);
        text_vc(L, x0 - PT(L, TICK_PAD_PT + 1), ry + rowh / 2, L->small, AL_END, INK, name);
        for (int i = 0; i < S; i++) {
            float cx = x0 + (float)i * colw;
            float p = r < K ? tr->alt_p[(size_t)i * (size_t)K + (size_t)r] : tr->chosen_p[i];
            const char *lab = r < K ? tr->alt_labels[(size_t)i * (size_t)K + (size_t)r] : tr->chosen[i];
            uint8_t rgb[3];
            heat_rgb(L->st, &g->ps, p, false, rgb);
            /* A little over the next cell, so no seam shows between them. */
            rect(L, cx, ry, colw + (i + 1 < S ? 0.6f : 0), rowh + (r + 1 < K ? 0.6f : 0), rgb, NULL, 0);
            if (g->cell_text && lab) {
                char buf[256];
                float fs = L->small;
                elide(L->c, lab, PT(L, fs), colw - PT(L, 1.5f), buf, sizeof buf);
                /* One character and an ellipsis tells nothing: colour only. */
                const char *q = buf;
                utf8_next(&q);
                if (strcmp(q, "\xE2\x80\xA6"))
                    text_vc(L, cx + colw / 2, ry + rowh / 2, fs, AL_MIDDLE, contrast(rgb), buf);
            }
        }
    }
    float plot_w = colw * (float)S, hw = PT(L, 1.2f);
    rect(L, x0, ty, plot_w, rowh * (float)K, NULL, INK, lw);
    rect(L, x0, ty + rowh * (float)K + gap, plot_w, rowh, NULL, INK, lw);
    for (int i = 0; i < S; i++)
        if (tr->chosen_rank[i] >= 1 && tr->chosen_rank[i] <= K)
            rect(L, x0 + (float)i * colw + hw / 2, ty + (float)(tr->chosen_rank[i] - 1) * rowh + hw / 2, colw - hw,
                 rowh - hw, NULL, HILITE, hw);
    /* Under the table, the context position of each generated token. */
    float by = ty + rowh * (float)(K + 1) + gap;
    char widest[16];
    snprintf(widest, sizeof widest, "%d", tr->positions[S - 1]);
    int every = 1;
    while ((float)every * colw < tw(L, widest, L->small) + PT(L, 3))
        every++;
    for (int i = 0; i < S; i += every) {
        char num[16];
        snprintf(num, sizeof num, "%d", tr->positions[i]);
        float cx = x0 + ((float)i + 0.5f) * colw;
        line(L, cx, by, cx, by + PT(L, TICK_LEN_PT), INK, lw);
        text(L, cx, by + PT(L, TICK_LEN_PT + TICK_PAD_PT) + caph(L, L->small), L->small, false, AL_MIDDLE, INK, num);
    }
}

int as_fig_prob_trace(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                      const as_fig_trace *tr, as_error *err)
{
    lay L;
    if (tr->steps < 1 || tr->k < 1)
        return as_error_set(err, "probability trace: no generated tokens to draw");
    if (lay_begin(&L, out, ctx, st, cap, err))
        return AS_ERR;
    static const char *const names[2] = {"chosen token", "most likely token"};
    static const uint8_t cols[2][3] = {{0x1F, 0x77, 0xB4}, {0x99, 0x99, 0x99}};
    int S = tr->steps, K = tr->k;
    float sm = lineh(&L, L.small), tl = PT(&L, TICK_LEN_PT + TICK_PAD_PT);
    trace_geom g;
    g.ps = st->log_scale ? (scale){AS_FIG_LOG_MIN, 1, true} : (scale){0, 1, false};
    g.rowh = roundf(sm * 1.25f);
    panel pa;
    pa.s = st->log_scale ? g.ps : scale_linear(0, 1, true);
    make_ticks(&pa.s, 3, &pa.t);
    float rowlab_w = fmaxf(tw(&L, "chosen", L.small), ticks_width(&L, &pa.t, L.small));
    g.x0 = ceilf(PT(&L, MARGIN_PT) + lineh(&L, L.body) + PT(&L, 2) + rowlab_w + tl);
    float th = g.rowh * (float)(K + 1) + PT(&L, 2);
    cbar cb = {.s = &g.ps, .label = "probability"};
    cb.horiz = th < tw(&L, cb.label, L.small) + PT(&L, 4);
    cb.len = cb.horiz ? PT(&L, 100) : th;
    cbar_ticks(&L, &cb);
    float right = cb.horiz ? 0 : PT(&L, 6) + cbar_extent(&L, &cb);
    float plot_w = L.W - g.x0 - right - PT(&L, MARGIN_PT);
    if (plot_w < PT(&L, 40))
        return too_small(&L, "the probability trace", err);
    g.colw = plot_w / (float)S;
    g.cell_text = g.colw >= PT(&L, 11);

    /* Title, legend, chart, table (with its colour bar), axis name, notes. */
    float legend_y = title_height(&L, cap) + sm / 2;
    float below = tl + sm + PT(&L, 2) + lineh(&L, L.body) + (cb.horiz ? PT(&L, 8) + cbar_extent(&L, &cb) : 0);
    float chart_h = roundf(PT(&L, 0.3f * st->width_pt));
    if (L.H > 0)
        chart_h = L.H - legend_y - sm - PT(&L, 6) - sm - th - below - notes_height(&L, cap) - PT(&L, MARGIN_PT);
    if (chart_h < PT(&L, 20))
        return too_small(&L, "the probability trace (a larger height=)", err);
    pa.x = g.x0, pa.y = roundf(legend_y + sm), pa.w = plot_w, pa.h = chart_h;
    g.ty = roundf(pa.y + pa.h + PT(&L, 6) + sm);
    draw_legend(&L, g.x0, legend_y, 2, names, cols);
    if (draw_trace_chart(&L, tr, &g, &pa))
        L.f->oom = true;
    text(&L, g.x0, g.ty - PT(&L, 2.5f), L.small, false, AL_START, INK, "top candidates at each step (chosen outlined)");
    draw_trace_table(&L, tr, &g);
    float axis_y = g.ty + th + tl + sm + PT(&L, 2) + caph(&L, L.body);
    text(&L, g.x0 + plot_w / 2, axis_y, L.body, false, AL_MIDDLE, INK, "position of the generated token");
    float bottom = axis_y + PT(&L, 2);
    if (cb.horiz) {
        cb.x = g.x0 + (plot_w - cb.len) / 2, cb.y = bottom + PT(&L, 6);
        bottom = cb.y + cbar_extent(&L, &cb);
    } else {
        cb.x = g.x0 + plot_w + PT(&L, 6), cb.y = g.ty;
    }
    draw_cbar(&L, &cb);
    float H = draw_notes(&L, cap, bottom) + PT(&L, MARGIN_PT);
    draw_title(&L, cap);
    return lay_end(&L, H, out, err);
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
    set_font_options(cr);
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
