/* Internal to the figures: what the driver (figure.c: the display list,
 * drawing it with Cairo, the PNG, SVG and PDF files), the fonts and text
 * (figure_text.c), the layout helpers every builder uses (figure_layout.c)
 * and the builders, one file per kind of figure (figure_heatmap.c,
 * figure_headview.c, figure_chart.c), share. Not part of the figures' API
 * to the rest of the engine (src/attnscope/figure.h).
 *
 * A builder lays its figure out once, for a width and text size, as a
 * list of primitives in PNG pixels (as_fig_add through the as_lay_*
 * helpers); figure.c draws that list onto whichever surface is asked for. */
#ifndef ATTNSCOPE_FIGURE_INTERNAL_H
#define ATTNSCOPE_FIGURE_INTERNAL_H

#include <cairo.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attnscope/figure.h"

/* ---- fonts and text (figure_text.c) ---- */

struct as_fig_ctx {
    cairo_font_face_t *face; /* DejaVu Sans from its file, or the toy fallback */
    bool from_file;
    float cap_em;            /* cap height per em */
    cairo_surface_t *probe;  /* a 1x1 surface to measure text on */
    cairo_t *m;
    char name[512];
};

/* Text is laid out with unhinted metrics (as_fig_set_font_options on
 * every context that measures or draws), so measuring and drawing agree. */
void as_fig_set_font_options(cairo_t *cr);
float as_fig_text_width(as_fig_ctx *c, const char *s, float px);
float as_fig_cap_height(const as_fig_ctx *c, float px);
/* Distance between the baselines of stacked lines. */
float as_fig_line_height(const as_fig_ctx *c, float px);
/* Next code point of UTF-8 text; an invalid byte reads as U+FFFD. */
uint32_t as_fig_utf8_next(const char **pp);
/* Appends s at out[o] when it fits within cap (with its NUL); the new o. */
size_t as_fig_put_utf8(char *out, size_t o, size_t cap, const char *s);
/* A malloc'd copy of s with every invalid UTF-8 byte replaced by U+FFFD. */
char *as_fig_utf8_clean(const char *s);
/* Copies s into out, cut with an ellipsis so it is at most maxw px wide. */
void as_fig_elide(as_fig_ctx *c, const char *s, float px, float maxw, char *out, size_t cap);

/* ---- the display list (figure.c) ---- */

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

/* A new primitive at the end of f's list (NULL, and f->oom set, when
 * out of memory). */
prim *as_fig_add(as_figure *f, prim_kind kind);

/* ---- layout (figure_layout.c) ---- */

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

static inline float PT(const lay *L, float pt) { return pt * L->P; }

#define MARGIN_PT 6.0f
#define TICK_LEN_PT 2.5f
#define TICK_PAD_PT 1.5f
#define FRAME_PT 0.6f
#define CBAR_PT 6.0f

static inline float tw(lay *L, const char *s, float size_pt) { return as_fig_text_width(L->c, s, PT(L, size_pt)); }
static inline float caph(lay *L, float size_pt) { return as_fig_cap_height(L->c, PT(L, size_pt)); }
static inline float lineh(lay *L, float size_pt) { return as_fig_line_height(L->c, PT(L, size_pt)); }

/* Starts a figure laid out for st (checked) with cap's title; as_lay_end
 * sets its height (h, unless st gives one) and hands it over;
 * as_lay_too_small frees it and says the size asked for cannot hold what. */
int as_lay_begin(lay *L, as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                 as_error *err);
int as_lay_end(lay *L, float h, as_figure **out, as_error *err);
int as_lay_too_small(lay *L, const char *what, as_error *err);

/* Primitives, in px. */
void as_lay_rect(lay *L, float x, float y, float w, float h, const uint8_t *fill, const uint8_t *stroke, float lw);
void as_lay_polyline_a(lay *L, const float *pts, int n, const uint8_t *rgb, float lw, float alpha);
void as_lay_polyline(lay *L, const float *pts, int n, const uint8_t *rgb, float lw);
void as_lay_line(lay *L, float x0, float y0, float x1, float y1, const uint8_t *rgb, float lw);
void as_lay_mark(lay *L, float x, float y, float r, const uint8_t *rgb, float alpha);
/* Text anchored on its baseline at (x, y); _vc centred vertically on cy,
 * _up reading upwards with its glyphs centred on cx. */
void as_lay_text(lay *L, float x, float y, float size_pt, bool rot, int align, const uint8_t *rgb, const char *s);
void as_lay_text_vc(lay *L, float x, float cy, float size_pt, int align, const uint8_t *rgb, const char *s);
void as_lay_text_up(lay *L, float cx, float y, float size_pt, int align, const uint8_t *rgb, const char *s);

/* Axis scales and ticks. */
typedef struct scale {
    double lo, hi;
    bool log;
} scale;

#define MAX_TICKS 32

/* Tick values and their labels. */
typedef struct ticks {
    int n;
    double v[MAX_TICKS];
    char label[MAX_TICKS][24];
} ticks;

/* Position of v within the scale, 0 at lo and 1 at hi (clamped). */
double as_fig_scale_t(const scale *s, double v);
double as_fig_nice_step(double range, int target);
/* A linear scale over [lo, hi] padded by 5% (matplotlib's margins). */
scale as_fig_scale_linear(double lo, double hi, bool pad);
/* A log scale over whole decades covering the positive values in [lo, hi]. */
scale as_fig_scale_log(double lo, double hi);
void as_fig_make_ticks(const scale *s, int target, ticks *t);
float as_lay_ticks_width(lay *L, const ticks *t, float size_pt);
/* A value's colour on st's map over s (masked, and non-finite, apart). */
void as_fig_heat_rgb(const as_fig_style *st, const scale *s, float v, bool masked, uint8_t *rgb);

/* Captions: the title block at the top, the notes under the figure. */
float as_lay_title_height(lay *L, const as_fig_caption *cap);
void as_lay_draw_title(lay *L, const as_fig_caption *cap);
float as_lay_notes_height(lay *L, const as_fig_caption *cap);
/* The notes from y down; returns the y below them. */
float as_lay_draw_notes(lay *L, const as_fig_caption *cap, float y);

/* Colour bars and legends. */
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
void as_lay_cbar_ticks(lay *L, cbar *cb);
/* The room a vertical bar takes beside the plot, or a horizontal one under it. */
float as_lay_cbar_extent(lay *L, const cbar *cb);
void as_lay_draw_cbar(lay *L, const cbar *cb);
/* A small filled square and its name; returns the x after it. */
float as_lay_legend_swatch(lay *L, float x, float cy, const uint8_t *rgb, const char *name);

/* Labels along an axis. */
/* Token labels elided to maxw; a NULL entry where it is not drawn. */
typedef struct labels {
    char **s;
    int n;
    float size_pt, maxw; /* font size; widest label drawn (px) */
    int stride;
} labels;

void as_lay_labels_free(labels *lb);
int as_lay_labels_make(lay *L, labels *lb, const char *const *src, int n, float size_pt, int stride, float maxw_px);
/* Every k-th label, so that labels pitch px apart are a line apart. */
int as_lay_label_stride(lay *L, float pitch);
/* The widest of n labels once elided to maxw px (small text). */
float as_lay_max_label_w(lay *L, const char *const *src, int n, float maxw);

#endif
