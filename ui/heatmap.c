#include "heatmap.h"

#include <math.h>

#include "textfmt.h"

/* Columns per sub-row for a square cell: a character is about twice as
 * tall as it is wide, so with two sub-rows per character one column is
 * square; with one, two columns are. */
static int aspect(int sub)
{
    return sub == 2 ? 1 : 2;
}

static void update_visible(hm_geom *g)
{
    if (g->shared > 0) {
        g->q0 = 0;
        g->vis_q = g->n_q;
        g->k0 = tf_scroll_follow(g->k0, g->k0, g->cols / g->cw, g->n_k);
        g->vis_k = g->n_k - g->k0 < g->cols / g->cw ? g->n_k - g->k0 : g->cols / g->cw;
        return;
    }
    int sr = g->rows * g->sub;
    g->q0 = tf_scroll_follow(g->q0, g->q0, sr / g->ch, g->n_q);
    g->k0 = tf_scroll_follow(g->k0, g->k0, g->cols / g->cw, g->n_k);
    g->vis_q = g->n_q - g->q0 < sr / g->ch ? g->n_q - g->q0 : sr / g->ch;
    g->vis_k = g->n_k - g->k0 < g->cols / g->cw ? g->n_k - g->k0 : g->cols / g->cw;
    if (g->vis_q < 0)
        g->vis_q = 0;
    if (g->vis_k < 0)
        g->vis_k = 0;
}

void hm_fit(hm_geom *g, int n_q, int n_k, int rows, int cols, int sub, int max_zoom)
{
    g->n_q = n_q;
    g->n_k = n_k;
    g->rows = rows > 0 ? rows : 0;
    g->cols = cols > 0 ? cols : 0;
    g->sub = sub;
    g->shared = 0;
    int a = aspect(sub);
    int ch = n_q > 0 ? g->rows * sub / n_q : 1, cw = n_k > 0 ? g->cols / n_k : 1;
    ch = ch < 1 ? 1 : ch > max_zoom ? max_zoom : ch;
    cw = cw < 1 ? 1 : cw > max_zoom * a ? max_zoom * a : cw;
    /* As large as the area allows, but no more than twice as wide as tall
     * or the reverse: a cell stays a cell, and the heatmap fills its pane. */
    if (cw > 2 * ch * a)
        cw = 2 * ch * a;
    if (ch * a > 2 * cw)
        ch = 2 * cw / a > 1 ? 2 * cw / a : 1;
    /* Whole character rows per query (or two queries to a row): labels sit
     * on character rows, and 3 half-rows per token would put them 1 and 2
     * rows apart in turn. */
    if (ch > sub && ch % sub)
        ch -= ch % sub;
    g->ch = ch;
    g->cw = cw;
    update_visible(g);
}

void hm_fill_rows(hm_geom *g)
{
    if (g->sub != 2 || g->ch != 1 || g->n_q <= g->rows || 2 * g->n_q > 3 * g->rows)
        return;
    g->shared = g->n_q - g->rows;
    g->ch = 2;
    update_visible(g);
}

int hm_rows_used(const hm_geom *g)
{
    if (g->shared > 0)
        return g->n_q - g->shared;
    int sr = g->vis_q * g->ch;
    return (sr + g->sub - 1) / g->sub;
}

void hm_follow(hm_geom *g, int q, int k)
{
    if (g->ch < 1 || g->cw < 1)
        return;
    if (g->shared == 0)
        g->q0 = tf_scroll_follow(g->q0, q, g->rows * g->sub / g->ch, g->n_q);
    g->k0 = tf_scroll_follow(g->k0, k, g->cols / g->cw, g->n_k);
    update_visible(g);
}

int hm_query_at(const hm_geom *g, int subrow)
{
    if (g->shared > 0) {
        int q = subrow < 2 * g->shared ? subrow : g->shared + subrow / 2;
        return subrow < 0 || q >= g->n_q ? -1 : q;
    }
    if (subrow < 0 || g->ch < 1 || subrow / g->ch >= g->vis_q)
        return -1;
    return g->q0 + subrow / g->ch;
}

int hm_key_at(const hm_geom *g, int col)
{
    if (col < 0 || g->cw < 1 || col / g->cw >= g->vis_k)
        return -1;
    return g->k0 + col / g->cw;
}

int hm_query_subrow(const hm_geom *g, int q)
{
    if (g->shared > 0)
        return q < 0 || q >= g->n_q ? -1 : q < 2 * g->shared ? q : 2 * q - 2 * g->shared;
    return q < g->q0 || q >= g->q0 + g->vis_q ? -1 : (q - g->q0) * g->ch;
}

int hm_key_col(const hm_geom *g, int k)
{
    return k < g->k0 || k >= g->k0 + g->vis_k ? -1 : (k - g->k0) * g->cw;
}

int hm_query_height(const hm_geom *g, int q)
{
    return g->shared > 0 && q < 2 * g->shared ? 1 : g->ch;
}

int hm_key_rows(int cw, int widest, int typical, int spare)
{
    if (cw < 1)
        return 0;
    if (cw > widest)
        return 1;
    if (cw < 2)
        return 0; /* one column a key: a staircase of pieces a column apart reads as none */
    int need = (widest + 1 + cw - 1) / cw, have = spare + 1;
    if (need <= have)
        return need;
    /* not every piece whole: as few rows as the typical piece needs
     * (single letters with one <|endoftext|> stay on one row) */
    int need_typical = (typical + 1 + cw - 1) / cw;
    if (need_typical <= have)
        return need_typical;
    /* cut pieces: worth it while three letters and the ellipsis show */
    if (have >= 2 && have * cw - 1 >= 4)
        return have;
    return cw >= 6 ? 1 : 0;
}

int hm_label_cols(int least, int widest, int area, int map)
{
    int spare = area - least - map;
    if (spare <= 0 || widest <= least)
        return least;
    return least + (spare < widest - least ? spare : widest - least);
}

void hm_fill(const hm_geom *g, hm_sample_fn fn, void *ctx, hm_sample *out)
{
    for (int r = 0; r < g->rows * g->sub; r++) {
        int q = hm_query_at(g, r);
        for (int c = 0; c < g->cols; c++) {
            int k = hm_key_at(g, c);
            hm_sample none = {HM_NONE, 0};
            out[r * g->cols + c] = q < 0 || k < 0 ? none : fn(ctx, q, k);
        }
    }
}

int hm_sub_for(hm_style st)
{
    return st == HM_HALF ? 2 : 1;
}

int hm_slot(hm_sample s, int levels)
{
    switch (s.state) {
    case HM_VALUE: {
        float t = s.v > 0 ? (s.v < 1 ? s.v : 1) : 0; /* NaN lands on 0 */
        return (int)lrintf(t * (float)(levels - 1));
    }
    case HM_MASKED: return HM_SLOT_MASKED(levels);
    case HM_PENDING: return HM_SLOT_PENDING(levels);
    default: return HM_SLOT_DEFAULT;
    }
}

static hm_glyph shade(hm_sample s, bool utf8)
{
    static const char *const uni[5] = {" ", "░", "▒", "▓", "█"};
    static const char *const ascii[5] = {" ", ".", ":", "+", "#"};
    hm_glyph g = {" ", HM_SLOT_DEFAULT, HM_SLOT_DEFAULT};
    if (s.state == HM_MASKED)
        g.text = tf_glyph(G_MASKED, utf8);
    else if (s.state == HM_PENDING) /* never blank: blank is a weight of 0 */
        g.text = tf_glyph(G_PENDING, utf8);
    else if (s.state == HM_VALUE)
        g.text = (utf8 ? uni : ascii)[hm_slot(s, 5)];
    return g;
}

hm_glyph hm_glyph_at(hm_style st, hm_sample top, hm_sample bot, int levels)
{
    hm_glyph g = {" ", HM_SLOT_DEFAULT, HM_SLOT_DEFAULT};
    if (st == HM_SHADE || st == HM_ASCII)
        return shade(top, st == HM_SHADE);
    if (st == HM_BLOCK) {
        g.bg = hm_slot(top, levels);
        return g;
    }
    if (top.state == HM_NONE && bot.state == HM_NONE)
        return g;
    /* The upper half block drawn in the upper sample's colour over the
     * lower's; an absent upper sample keeps the pane's background. */
    g.text = top.state == HM_NONE ? " " : tf_glyph(G_HALF_TOP, true);
    g.fg = hm_slot(top, levels);
    g.bg = hm_slot(bot, levels);
    return g;
}

hm_grid hm_grid_arrange(int n_tiles, int n, int rows, int cols, int sub)
{
    hm_grid best = {n_tiles, 1, n_tiles, 0, 0};
    double best_s = -1;
    if (n < 1)
        n = 1;
    for (int tx = 1; tx <= n_tiles; tx++) {
        int ty = (n_tiles + tx - 1) / tx;
        int tr = rows / ty, tc = (cols - (tx - 1)) / tx;
        if (tr < 2 || tc < 1)
            continue;
        /* The cell edge in square units, unrounded, so ties resolve
         * toward the arrangement that shows more. */
        double s = (double)(tr - 1) * sub / n, w = (double)tc / (n * aspect(sub));
        if (w < s)
            s = w;
        if (s > best_s + 1e-9) {
            best_s = s;
            best = (hm_grid){n_tiles, tx, ty, tr, tc};
        }
    }
    return best;
}

void hm_grid_origin(const hm_grid *gr, int i, int *y, int *x)
{
    *y = (i / gr->tx) * gr->tile_rows;
    *x = (i % gr->tx) * (gr->tile_cols + 1);
}

int hm_grid_tile_at(const hm_grid *gr, int y, int x)
{
    if (y < 0 || x < 0 || gr->tile_rows < 1 || gr->tile_cols < 1)
        return -1;
    int ty = y / gr->tile_rows, tx = x / (gr->tile_cols + 1);
    if (tx >= gr->tx || x % (gr->tile_cols + 1) >= gr->tile_cols)
        return -1;
    int i = ty * gr->tx + tx;
    return i < gr->n_tiles ? i : -1;
}
