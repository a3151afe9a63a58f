/* heatmap: the geometry and glyphs of an attention heatmap as a grid of
 * character cells, with no terminal. A query is `ch` sub-rows high and a
 * key `cw` columns wide; with half blocks a character holds two sub-rows
 * (foreground the upper, background the lower), otherwise one. Scrolling
 * keeps the cursor visible when the context outgrows the pane. The grid
 * mode arranges every head of a layer as small multiples. Unit-tested. */
#ifndef ATTNSCOPE_UI_HEATMAP_H
#define ATTNSCOPE_UI_HEATMAP_H

#include <stdbool.h>

typedef struct hm_geom {
    int n_q, n_k;     /* matrix size: queries (rows) by keys (columns) */
    int rows, cols;   /* character cells of the area */
    int sub;          /* sub-rows per character row: 2 with half blocks, else 1 */
    int ch, cw;       /* sub-rows per query, columns per key */
    int q0, k0;       /* first visible query and key (kept across fits) */
    int vis_q, vis_k; /* how many are visible */
    int shared;       /* hm_fill_rows: the first `shared` character rows hold
                         two queries each (a sub-row each), the rest one
                         (two sub-rows); 0: every query is ch sub-rows */
} hm_geom;

/* Sizes cells as large as fits (at most max_zoom sub-rows; square on
 * screen when room allows, never more than 2:1 either way), down to one
 * sub-row by one column, keeping g->q0/k0 where still valid. */
void hm_fit(hm_geom *g, int n_q, int n_k, int rows, int cols, int sub, int max_zoom);
/* With half blocks, when a query a sub-row leaves a third or more of the
 * rows empty (n_q > rows, n_q <= 1.5 rows): every query a character row of
 * its own (square cells, each labelled) but for the first 2(n_q - rows),
 * two to a row, so the map fills the area and nothing scrolls. */
void hm_fill_rows(hm_geom *g);
/* Character rows the visible queries take from the area's top. */
int hm_rows_used(const hm_geom *g);
/* Scrolls as little as needed for (q, k) to be visible. */
void hm_follow(hm_geom *g, int q, int k);
/* The query at a sub-row / the key at a column of the area, or -1. */
int hm_query_at(const hm_geom *g, int subrow);
int hm_key_at(const hm_geom *g, int col);
/* The first sub-row of query q / first column of key k, or -1 if hidden. */
int hm_query_subrow(const hm_geom *g, int q);
int hm_key_col(const hm_geom *g, int k);
/* Sub-rows query q takes (ch, or 1 in a shared row). */
int hm_query_height(const hm_geom *g, int q);

/* Key labels above a map whose keys are cw columns wide, the widest
 * piece `widest` columns (`typical` the width nine pieces in ten fit),
 * `spare` character rows free above the map: 1 (pieces across, one row,
 * whole when cw > widest), n >= 2 (pieces staggered over n rows, key k's
 * on row k % n from its column, n*cw - 1 columns each: every piece whole
 * where the spare rows allow, else the typical piece, else cut; keys
 * two columns wide or more), or 0 (the keys' numbers: no room for pieces
 * worth reading). */
int hm_key_rows(int cw, int widest, int typical, int spare);
/* The query labels' width: `least` (what the map left them), grown by
 * the columns the map leaves unused right of it, up to `widest`. */
int hm_label_cols(int least, int widest, int area, int map);

typedef enum hm_state { HM_NONE, HM_VALUE, HM_MASKED, HM_PENDING } hm_state;
typedef struct hm_sample {
    hm_state state;
    float v;          /* HM_VALUE: on the colour scale, 0..1 */
} hm_sample;

typedef hm_sample (*hm_sample_fn)(void *ctx, int q, int k);
/* Samples every sub-row and column of the area: out has rows*sub*cols. */
void hm_fill(const hm_geom *g, hm_sample_fn fn, void *ctx, hm_sample *out);

/* How cells are drawn: half blocks in colour (UTF-8), background colour
 * only (ASCII with colour), shading characters (UTF-8, no colour), ASCII
 * shading (neither). */
typedef enum hm_style { HM_HALF, HM_BLOCK, HM_SHADE, HM_ASCII } hm_style;
int hm_sub_for(hm_style st);

/* Colour slots: 0..levels-1 the colour scale, then these. */
#define HM_SLOT_DEFAULT (-1)
#define HM_SLOT_MASKED(levels) (levels)
#define HM_SLOT_PENDING(levels) ((levels) + 1)
#define HM_N_SLOTS(levels) ((levels) + 2)

typedef struct hm_glyph {
    const char *text; /* one character cell */
    int fg, bg;       /* colour slots (HM_SLOT_DEFAULT: the terminal's) */
} hm_glyph;

int hm_slot(hm_sample s, int levels);
hm_glyph hm_glyph_at(hm_style st, hm_sample top, hm_sample bot, int levels);

/* Small multiples: tx by ty tiles, each a title row above a heatmap of
 * tile_rows-1 rows by tile_cols columns, one blank column between tiles. */
typedef struct hm_grid {
    int n_tiles, tx, ty, tile_rows, tile_cols;
} hm_grid;

hm_grid hm_grid_arrange(int n_tiles, int n, int rows, int cols, int sub);
/* Top-left cell of tile i, and the tile at (y, x) or -1. */
void hm_grid_origin(const hm_grid *gr, int i, int *y, int *x);
int hm_grid_tile_at(const hm_grid *gr, int y, int x);

#endif
