/* figure: the figures a paper needs — attention heatmaps (one head, the
 * heads of a layer, or layers × heads), bertviz's head view (tokens in two
 * columns joined by lines as opaque as the weight), norm statistics across
 * tokens, the next-token distribution and its trace over generated tokens —
 * built from plain data (matrices, labels, captions), never from a session,
 * so tests can hand-build them. A builder lays a figure out once, for a
 * given width and text size, as a list of drawing primitives; one Cairo
 * code path draws that list on an image surface (written as PNG through
 * libpng, with pHYs and provenance text chunks), an SVG surface or a PDF
 * surface. Text is DejaVu Sans through cairo-ft, loaded from its file (no
 * fontconfig lookup) and held by an as_fig_ctx: no global state. */
#ifndef ATTNSCOPE_FIGURE_H
#define ATTNSCOPE_FIGURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attnscope/colormap.h"
#include "attnscope/error.h"
#include "attnscope/kernels.h"

#define AS_FIG_DPI 200          /* default raster resolution */
#define AS_FIG_LOG_MIN 1e-4     /* the low end of a log colour scale */
#define AS_FIG_WIDTH_PT 237.6f  /* default width: one column of a two-column paper, 3.3 in */
#define AS_FIG_FONT_PT 8.0f     /* default body text */
#define AS_FIG_MIN_FONT_PT 6.0f /* derived sizes (ticks, labels, notes) never go below this */

typedef struct as_fig_ctx as_fig_ctx;
typedef struct as_figure as_figure;

typedef enum as_fig_format { AS_FIG_PNG, AS_FIG_SVG, AS_FIG_PDF } as_fig_format;

typedef struct as_fig_style {
    as_cmap cmap;
    int dpi;         /* PNG pixels per inch; everything is laid out in points */
    bool log_scale;  /* heatmaps: log colour scale; charts: log value axis */
    float width_pt;  /* the figure's width */
    float height_pt; /* its height, or 0: as tall as its content needs */
    float font_pt;   /* body text (axis names, headers); the title is a point
                      * larger, ticks, labels and notes a point smaller (never
                      * below AS_FIG_MIN_FONT_PT unless the body is) */
} as_fig_style;

/* viridis, AS_FIG_DPI, linear, AS_FIG_WIDTH_PT wide, AS_FIG_FONT_PT text. */
void as_fig_style_default(as_fig_style *st);

/* What a figure says beside its data, kept apart so that a reader never
 * takes the model's name for a label: the title names what is shown
 * ("Layer 0 · head 3"), the grey subtitle where it comes from (model,
 * prompt), the notes under the figure what was cropped, hidden or
 * normalised, and the metric and values a table is built on. */
typedef struct as_fig_caption {
    const char *title;
    const char *subtitle;     /* may be NULL */
    const char *const *notes; /* [n_notes], each wrapped to the width */
    int n_notes;
} as_fig_caption;

/* Opens font_path, or when NULL the first DejaVu Sans found in the usual
 * places; when none loads, Cairo's "sans-serif" (through fontconfig) is
 * used instead, so this fails only for lack of memory. The context must
 * outlive the figures built with it. */
int as_fig_ctx_new(as_fig_ctx **out, const char *font_path, as_error *err);
void as_fig_ctx_free(as_fig_ctx *c);
/* True when text is drawn from the DejaVu Sans file (false: fallback). */
bool as_fig_ctx_has_font(const as_fig_ctx *c);
/* The font file in use, or a sentence naming the fallback. */
const char *as_fig_ctx_font_name(const as_fig_ctx *c);
/* Ink width and height (points) of UTF-8 text at size_pt: what tests
 * measure to tell marks apart. */
void as_fig_ctx_ink(as_fig_ctx *c, const char *s, float size_pt, float *w, float *h);

/* .png, .svg or .pdf (any case) from the file name. */
int as_fig_format_of(const char *path, as_fig_format *fmt, as_error *err);

/* A length option's value: a number followed by in, cm, mm or pt, in
 * points ("3.3in" -> 237.6). what names the option in the message. */
int as_fig_parse_length(const char *v, const char *what, float *pt, as_error *err);

/* Token bytes as a label: valid UTF-8 kept, spaces shown as '␣' (an open
 * box, which at tick size cannot be taken for '.' as '·' could), newline
 * as '↵', tab as '⇥', other control bytes and invalid UTF-8 as \xNN. */
void as_fig_visible_text(const char *bytes, size_t len, char *out, size_t cap);

/* ---- attention heatmaps ---- */

typedef struct as_fig_matrix {
    const float *v;              /* [rows][cols] */
    const unsigned char *masked; /* [rows][cols], nonzero: causally hidden; may be NULL */
    const unsigned char *marked; /* [rows][cols], nonzero: a dot on the cell (a router's chosen
                                  * experts: white ringed in black, seen on any colormap); may be NULL */
    const char *const *text;     /* [rows][cols] written in each cell (the logit lens's top tokens),
                                  * shortened to the cell, white on dark cells; may be NULL */
} as_fig_matrix;

/* n_mats matrices of the same shape laid out in grid_rows × grid_cols
 * panels (row-major; grid_cols 0: as many a row as the width allows), on
 * one colour scale: 0–1 (or AS_FIG_LOG_MIN–1 on a log scale) so heads
 * compare, or [vmin, vmax] when given. One matrix is the single-head
 * figure. Cells fill the width; token labels go on the outer panels,
 * every k-th when cells are smaller than the text, turned upright only
 * when they are wider than a column; otherwise only headers are drawn. The
 * colour bar is as tall as the panels, or lies under them when they are
 * too short for it. */
typedef struct as_fig_heat {
    int rows, cols;                      /* cells of each matrix */
    const char *const *row_labels;       /* [rows] display text, or NULL */
    const char *const *col_labels;       /* [cols] */
    const char *row_axis, *col_axis;     /* "query position", "key position" */
    const char *cbar_label;              /* "attention weight" */
    int n_mats;
    const as_fig_matrix *mats;
    const char *const *mat_titles;       /* [n_mats] header above each panel, or NULL */
    int grid_rows, grid_cols;
    const char *const *grid_row_names;   /* [grid_rows] headers at the left ("Layer 3"), or NULL */
    const char *const *grid_col_names;   /* [grid_cols] headers on top ("5"), or NULL */
    const char *grid_row_axis, *grid_col_axis; /* what the headers number: "layer", "head" */
    float vmin, vmax;                    /* linear colour scale when vmax > vmin (signed
                                          * tables); both 0: attention's 0-1 */
    const char *masked_label;            /* the legend's name for masked cells; NULL: "masked" */
} as_fig_heat;

int as_fig_heatmap(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                   const as_fig_heat *h, as_error *err);

/* ---- attention over an image (a vision transformer) ---- */

/* The input image with a map over its patches laid on it: each panel is
 * the image (size x size pixels, RGB) blended with the colour of its
 * patch's value (alpha: the colour's share), the patch grid in thin
 * lines, a marked patch (the query's, when it is one) outlined; one
 * colour bar on [0, vmax] for every panel. n_maps panels side by side,
 * wrapping (a layer's heads), each with its title. */
typedef struct as_fig_overlay {
    int size;                        /* image side, pixels */
    const uint8_t *rgb;              /* [size][size][3] */
    int grid;                        /* patches a side; size is a multiple of it */
    int n_maps;
    const float *const *maps;        /* [n_maps] each [grid][grid] */
    const char *const *map_titles;   /* [n_maps], or NULL */
    float vmax;                      /* top of the colour scale (> 0) */
    float alpha;                     /* 0..1 */
    int marked;                      /* patch index outlined, or -1 */
    const char *cbar_label;
} as_fig_overlay;

int as_fig_overlay_view(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                        const as_fig_overlay *ov, as_error *err);

/* ---- bertviz's head view ---- */

/* Tokens in two columns, queries at the left and keys at the right, a
 * line from query q to key k as opaque as the weight; several heads are
 * overlaid, each in its own colour, named in a legend. */
typedef struct as_fig_lines {
    int n;                        /* tokens */
    const char *const *labels;    /* [n] */
    int n_heads;
    const float *const *weights;  /* [n_heads] each [n][n], row q's weights over keys (0: not drawn) */
    const char *const *head_names; /* [n_heads] legend entries, or NULL for one head */
} as_fig_lines;

#define AS_FIG_LINES_MAX 256 /* tokens a head view draws at most */

int as_fig_lines_view(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                      const as_fig_lines *ln, as_error *err);

/* ---- norm statistics across tokens ---- */

typedef struct as_fig_norm_series {
    const char *name;         /* legend: "ln1 (attention input)" */
    const as_norm_stat *stat; /* [n] */
} as_fig_norm_series;

/* Panels sharing the token axis: mean, std (or RMS), max |x|, and the
 * largest-magnitude input dimensions, with the dimensions that recur
 * across tokens named at the right. */
typedef struct as_fig_norms {
    int n;                        /* tokens */
    const char *const *labels;    /* [n] */
    bool rms;                     /* RMSNorm: the spread is the RMS */
    int d_model;
    int n_series;                 /* 1 or 2 */
    as_fig_norm_series series[2];
} as_fig_norms;

int as_fig_norm_chart(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                      const as_fig_norms *nm, as_error *err);

/* ---- next-token probabilities ---- */

/* Top-k horizontal bars, rank 1 at the top. */
typedef struct as_fig_probs {
    int k;
    const char *const *labels; /* [k] */
    const float *p;            /* [k], descending */
} as_fig_probs;

int as_fig_prob_bars(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                     const as_fig_probs *pr, as_error *err);

/* ---- what a routed layer's experts take ---- */

/* One column per expert, headed by its title ("3: 14%"): the tokens it
 * took most often, the most frequent first, each a line (the token, cut
 * to fit, and its count at the right) over a bar for its share of the
 * expert's choices, 0 at the column's left edge to `full` at its right
 * (the same scale in every column). An expert that took nothing shows
 * "none". */
typedef struct as_fig_expert_col {
    const char *title;
    int n;                      /* tokens listed, at most the figure's rows */
    const char *const *labels;  /* [n] the tokens' text */
    const int *count;           /* [n] times taken */
    const float *share;         /* [n] 0–full */
} as_fig_expert_col;

typedef struct as_fig_experts {
    int n_expert, rows;         /* columns; lines a column has room for */
    float full;                 /* the share a bar across the column stands for, > 0 */
    const as_fig_expert_col *cols;
} as_fig_experts;

int as_fig_expert_tokens(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                         const as_fig_experts *ex, as_error *err);

/* For each generated token: its probability when it was sampled and the
 * top-k alternatives, as a line chart above a table of the candidates. */
typedef struct as_fig_trace {
    int steps, k;
    const int *positions;           /* [steps] context position of each generated token */
    const char *const *chosen;      /* [steps] labels of the tokens produced */
    const float *chosen_p;          /* [steps] */
    const int *chosen_rank;         /* [steps] 1-based rank of the chosen token */
    const char *const *alt_labels;  /* [steps][k] */
    const float *alt_p;             /* [steps][k], descending per step */
} as_fig_trace;

int as_fig_prob_trace(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                      const as_fig_trace *tr, as_error *err);

/* ---- the figure ---- */

void as_figure_free(as_figure *f);
/* Size in PNG pixels at the style's dpi. */
void as_figure_size(const as_figure *f, int *w, int *h);
/* Size in points (what SVG and PDF are). */
void as_figure_size_pt(const as_figure *f, float *w, float *h);
/* The smallest text the figure draws, in points (0: no text). */
float as_figure_min_font_pt(const as_figure *f);
/* Provenance written into PNG text chunks, SVG <title>/<desc> and PDF
 * metadata (copied). */
int as_figure_add_meta(as_figure *f, const char *key, const char *value, as_error *err);
/* Pixel rectangle {x, y, w, h} of a heatmap cell; AS_ERR if there is none. */
int as_figure_cell_rect(const as_figure *f, int mat, int row, int col, int rect[4]);
/* Pixel box {x, y, w, h} of the colour bar; AS_ERR if there is none. */
int as_figure_cbar_rect(const as_figure *f, float rect[4]);
/* The PNG's pixels, drawn by Cairo: w*h*3 bytes of RGB, malloc'd. */
int as_figure_raster(const as_figure *f, uint8_t **rgb, as_error *err);
/* PNG, SVG or PDF through a temporary file renamed into place. */
int as_figure_write(const as_figure *f, const char *path, as_fig_format fmt, as_error *err);

#endif
