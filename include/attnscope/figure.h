/* figure: the figures a paper needs — attention heatmaps (one head, the
 * heads of a layer, or layers × heads), norm statistics across tokens, the
 * next-token distribution and its trace over generated tokens — built from
 * plain data (matrices, labels, titles), never from a session, so tests
 * can hand-build them. A builder lays a figure out once as a list of
 * drawing primitives in device pixels; two backends draw that list: an RGB
 * raster written as PNG through libpng (pHYs and text chunks set), and SVG
 * with vector shapes and real text. Text goes through FreeType with DejaVu
 * Sans, anti-aliased; when no font file can be loaded a built-in bitmap
 * font keeps export working. The font lives in an as_fig_ctx: no global
 * state. */
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

typedef struct as_fig_ctx as_fig_ctx;
typedef struct as_figure as_figure;

typedef enum as_fig_format { AS_FIG_PNG, AS_FIG_SVG } as_fig_format;

typedef struct as_fig_style {
    as_cmap cmap;
    int dpi;        /* raster pixels per inch; sizes are laid out in points */
    bool log_scale; /* heatmaps: log colour scale; charts: log value axis */
} as_fig_style;

/* viridis, AS_FIG_DPI, linear. */
void as_fig_style_default(as_fig_style *st);

/* Opens font_path, or when NULL the first DejaVu Sans found in the usual
 * places; when none loads, the built-in bitmap font is used instead (so
 * this fails only for lack of memory). The context must outlive the
 * figures built with it. */
int as_fig_ctx_new(as_fig_ctx **out, const char *font_path, as_error *err);
void as_fig_ctx_free(as_fig_ctx *c);
/* True when text is drawn from an outline font (false: bitmap fallback). */
bool as_fig_ctx_has_font(const as_fig_ctx *c);
/* The font file in use, or "built-in bitmap font". */
const char *as_fig_ctx_font_name(const as_fig_ctx *c);

/* .png or .svg (any case) from the file name. */
int as_fig_format_of(const char *path, as_fig_format *fmt, as_error *err);

/* Token bytes as a label: valid UTF-8 kept, spaces shown as '·', newline
 * as '↵', tab as '⇥', other control bytes and invalid UTF-8 as \xNN. */
void as_fig_visible_text(const char *bytes, size_t len, char *out, size_t cap);

/* ---- attention heatmaps ---- */

typedef struct as_fig_matrix {
    const float *v;              /* [rows][cols] */
    const unsigned char *masked; /* [rows][cols], nonzero: causally hidden; may be NULL */
} as_fig_matrix;

/* n_mats matrices of the same shape laid out in grid_rows × grid_cols
 * panels (row-major), on one colour scale: 0–1 (or AS_FIG_LOG_MIN–1 on a
 * log scale) so heads compare, or [vmin, vmax] when given. One matrix is the single-head figure. Token
 * labels go on the outer panels when cells are large enough to read them;
 * otherwise only headers are drawn. */
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
    const char *const *grid_col_names;   /* [grid_cols] headers on top ("Head 5"), or NULL */
    float vmin, vmax;                    /* linear colour scale when vmax > vmin (signed
                                          * tables); both 0: attention's 0-1 */
} as_fig_heat;

int as_fig_heatmap(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const char *title,
                   const as_fig_heat *h, as_error *err);

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

int as_fig_norm_chart(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const char *title,
                      const as_fig_norms *nm, as_error *err);

/* ---- next-token probabilities ---- */

/* Top-k horizontal bars, rank 1 at the top. */
typedef struct as_fig_probs {
    int k;
    const char *const *labels; /* [k] */
    const float *p;            /* [k], descending */
    const char *subtitle;      /* e.g. the end of the context; may be NULL */
} as_fig_probs;

int as_fig_prob_bars(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const char *title,
                     const as_fig_probs *pr, as_error *err);

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

int as_fig_prob_trace(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const char *title,
                      const as_fig_trace *tr, as_error *err);

/* ---- the figure ---- */

void as_figure_free(as_figure *f);
void as_figure_size(const as_figure *f, int *w, int *h);
/* Provenance written into PNG text chunks and SVG metadata (copied). */
int as_figure_add_meta(as_figure *f, const char *key, const char *value, as_error *err);
/* Pixel rectangle {x, y, w, h} of a heatmap cell; AS_ERR if there is none. */
int as_figure_cell_rect(const as_figure *f, int mat, int row, int col, int rect[4]);
/* The raster: w*h*3 bytes of RGB, malloc'd. */
int as_figure_raster(const as_figure *f, uint8_t **rgb, as_error *err);
/* PNG or SVG through a temporary file renamed into place. */
int as_figure_write(const as_figure *f, const char *path, as_fig_format fmt, as_error *err);

#endif
