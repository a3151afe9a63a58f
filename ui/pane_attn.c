/* pane_attn: the selected layer and head's attention pattern as a heatmap
 * (two rows per character with half blocks), token labels on both axes,
 * the value under the cursor and a colour legend; or, in grid mode, every
 * head of the layer as small multiples on the same 0-1 scale. Rows not
 * computed yet (mid-pass) are drawn dark; masked cells in the colormap's
 * masked colour, so they never read as zero. */
#include <stdlib.h>
#include <string.h>

#include "textfmt.h"
#include "tui.h"

/* The pane's state: what the last draw laid out, for scrolling and mouse hits. */
typedef struct attn_state {
    hm_geom geom;
    hm_grid grid;
    int heat_y, heat_x;  /* the heat area's origin inside the attention window */
} attn_state;

static attn_state *state(const tui *u)
{
    return u->pane_state[P_ATTN];
}

typedef struct attn_src {
    const as_capture *cap;
    const as_program *prog;
    int hook, head, filled;
    int q_stream, k_stream; /* whose positions label the rows and the columns */
    int n_q, n_k;
} attn_src;

static hm_sample sample(void *ctx, int q, int k)
{
    const attn_src *a = ctx;
    hm_sample s = {HM_MASKED, 0};
    const as_attn *site = as_program_attn(a->prog, a->hook);
    if (site ? !as_attn_visible(site, q, k) : k > q) /* a sliding window hides early keys too */
        return s;
    if (q >= a->filled) {
        s.state = HM_PENDING;
        return s;
    }
    s.state = HM_VALUE;
    s.v = as_capture_attn(a->cap, a->hook, a->head, q, k);
    return s;
}

/* The whole map in fewer cells: vq rows by vk columns, each cell the
 * largest weight of its block of queries and keys (blocks as even as
 * they come: 26 queries in 24 rows are 22 rows of one and 2 of two;
 * masked only where the whole block is, not yet computed where no weight
 * of it is), so a strong key (the first token's column) still shows when
 * the map is shrunk to fit a tile. */
typedef struct attn_block {
    attn_src *src;
    int vq, vk;   /* the cells: at most the queries and keys */
    int shown, late; /* the samples drawn that are not masked; of which left for later (progress) */
} attn_block;

/* The cell of v holding item x of n. */
static int block_of(int x, int n, int v)
{
    return n > 0 ? (int)(((long)(x + 1) * v - 1) / n) : 0;
}

/* The most items a cell holds. */
static int block_most(int n, int v)
{
    return v > 0 ? (n + v - 1) / v : 1;
}

/* A cell's state from the engine's answer, counted for the progress:
 * a cell left for later (AS_BLOCK_LATER, the redraw's time bound spent)
 * is drawn pending, never as a value. */
static hm_state cell_state(int st, int *shown, int *late)
{
    if (st == AS_BLOCK_MASKED)
        return HM_MASKED;
    ++*shown;
    if (st == AS_BLOCK_LATER)
        ++*late;
    return st == AS_BLOCK_VALUE ? HM_VALUE : HM_PENDING;
}

static hm_sample block_sample(void *ctx, int q, int k)
{
    attn_block *b = ctx;
    const attn_src *a = b->src;
    hm_sample s = {HM_MASKED, 0};
    float v = 0;
    /* the engine's cells, kept between draws (as_capture_attn_cells): a
     * long context's every row is read once, not once a tile column */
    int st = as_capture_attn_cells(a->cap, a->hook, a->head, a->filled, a->n_q, a->n_k, 0, b->vq, b->vk, q, k, false,
                                   &v);
    s.state = cell_state(st, &b->shown, &b->late);
    s.v = v;
    return s;
}

/* The single view zoomed out (view zoom, keys - +): cell (i, j) the
 * queries [i z, i z + z) by keys [j z, j z + z), blocks from position 0,
 * the engine's max or mean of the weights they see (as_capture_attn_block's
 * cells, kept between draws by as_capture_attn_cells, which the batch
 * command `zoom` prints). */
typedef struct attn_zoom {
    const attn_src *src;
    int z;
    bool mean;
    int shown, late; /* as attn_block's */
} attn_zoom;

static int mini(int a, int b)
{
    return a < b ? a : b;
}

static hm_sample zoom_sample(void *ctx, int i, int j)
{
    attn_zoom *zm = ctx;
    const attn_src *a = zm->src;
    hm_sample s = {HM_MASKED, 0};
    float v = 0;
    int st = as_capture_attn_cells(a->cap, a->hook, a->head, a->filled, a->n_q, a->n_k, zm->z, 0, 0, i, j, zm->mean, &v);
    s.state = cell_state(st, &zm->shown, &zm->late);
    s.v = v;
    return s;
}

/* The cursor on the cell of query q and key k (in the geometry's cells). */
static void draw_cursor(tui *u, WINDOW *w, int y0, int x0, const hm_geom *g, const hm_sample *s, int q, int k)
{
    int qs = hm_query_subrow(g, q), kc = hm_key_col(g, k);
    if (qs < 0 || kc < 0)
        return;
    int sr = qs + (hm_query_height(g, q) - 1) / 2, col = kc + (g->cw - 1) / 2;
    if (u->t.style == HM_SHADE || u->t.style == HM_ASCII) {
        term_role(&u->t, w, R_LABEL_SEL);
    } else {
        int bg = hm_slot(s[sr * g->cols + col], u->t.levels);
        term_heat(&u->t, w, term_contrast_slot(&u->t, bg), bg);
    }
    mvwaddstr(w, y0 + sr / g->sub, x0 + col, tf_glyph(G_CURSOR, u->t.utf8));
}

/* The cells of one map; the cursor on (cq, ck) unless cq < 0. */
static void draw_cells(tui *u, WINDOW *w, int y0, int x0, const hm_geom *g, hm_sample_fn fn, void *ctx, int cq, int ck)
{
    size_t n = (size_t)g->rows * (size_t)g->sub * (size_t)g->cols;
    hm_sample *s = malloc(n ? n * sizeof *s : 1);
    if (!s)
        return;
    hm_fill(g, fn, ctx, s);
    for (int r = 0; r < g->rows; r++)
        for (int c = 0; c < g->cols; c++) {
            const hm_sample *top = &s[(r * g->sub) * g->cols + c];
            const hm_sample *bot = g->sub == 2 ? top + g->cols : top;
            if (top->state == HM_NONE && bot->state == HM_NONE)
                continue;
            hm_glyph gl = hm_glyph_at(u->t.style, *top, *bot, u->t.levels);
            term_heat(&u->t, w, gl.fg, gl.bg);
            mvwaddstr(w, y0 + r, x0 + c, gl.text);
        }
    if (cq >= 0)
        draw_cursor(u, w, y0, x0, g, s, cq, ck);
    free(s);
    term_role(&u->t, w, R_NORMAL);
}

/* "12 ·truth": position and piece, for the axis labels. */
static void axis_label(const tui *u, int stream, int pos, char *out, size_t cap)
{
    char piece[96];
    stream_label(u, stream, pos, piece, sizeof piece);
    snprintf(out, cap, "%d %s", pos, piece);
}

static int cmp_int(const void *a, const void *b)
{
    return *(const int *)a - *(const int *)b;
}

/* The widest of a stream's labels: "pos piece" (with_pos) or the piece;
 * *typical the width nine in ten fit. */
static int widest_label(const tui *u, int stream, int n, bool with_pos, int *typical)
{
    int widest = 1, *w = malloc((size_t)(n > 0 ? n : 1) * sizeof *w);
    for (int i = 0; i < n; i++) {
        char l[128];
        if (with_pos)
            axis_label(u, stream, i, l, sizeof l);
        else
            stream_label(u, stream, i, l, sizeof l);
        int lw = tf_width(l, u->t.utf8);
        widest = lw > widest ? lw : widest;
        if (w)
            w[i] = lw;
    }
    if (typical) {
        *typical = widest;
        if (w && n > 0) {
            qsort(w, (size_t)n, sizeof *w, cmp_int);
            *typical = w[(9 * n + 9) / 10 - 1]; /* at most one in ten wider */
        }
    }
    free(w);
    return widest;
}

/* One label per character row: a query's middle row; the selected query
 * wins when two share a row (a filled map's shared rows name both). */
static void draw_query_labels(tui *u, WINDOW *w, int lw, const attn_src *src, int z)
{
    const hm_geom *g = &state(u)->geom;
    int *rowq = malloc((size_t)(g->rows > 0 ? g->rows : 1) * sizeof *rowq);
    if (!rowq)
        return;
    for (int r = 0; r < g->rows; r++)
        rowq[r] = -1;
    for (int q = g->q0; q < g->q0 + g->vis_q; q++) {
        int row = (hm_query_subrow(g, q) + (hm_query_height(g, q) - 1) / 2) / g->sub;
        if (row < g->rows && (rowq[row] < 0 || q == view_row(&u->v) / z))
            rowq[row] = q;
    }
    for (int r = 0; r < g->rows; r++) {
        if (rowq[r] < 0)
            continue;
        char l[256];
        int q = rowq[r];
        if (z > 1) {
            /* the row's queries: "64-127" (two blocks where a row holds two), the selected one's highlighted */
            int last = q;
            while (last + 1 < g->q0 + g->vis_q && hm_query_subrow(g, last + 1) / g->sub == r)
                last++;
            int first = q;
            while (first - 1 >= g->q0 && hm_query_subrow(g, first - 1) / g->sub == r)
                first--;
            int lo = first * z, hi = mini((last + 1) * z, src->n_q) - 1;
            snprintf(l, sizeof l, lo < hi ? "%d-%d" : "%d", lo, hi);
            int sel = view_row(&u->v) / z;
            term_role(&u->t, w, sel >= first && sel <= last ? R_LABEL_SEL : R_LABEL);
            put_text(u, w, state(u)->heat_y + r, 2, l, lw - 2);
            continue;
        }
        axis_label(u, src->q_stream, q, l, sizeof l);
        if (g->shared > 0 && q != view_row(&u->v) && hm_query_height(g, q) < g->ch && q + 1 < g->n_q &&
            hm_query_subrow(g, q + 1) / g->sub == r) {
            /* a row the filled map gives two queries: both named, "0-1 <s>·It" */
            char a[96], b[96];
            stream_label(u, src->q_stream, q, a, sizeof a);
            stream_label(u, src->q_stream, q + 1, b, sizeof b);
            snprintf(l, sizeof l, "%d-%d %s%s", q, q + 1, a, b);
        }
        term_role(&u->t, w, q == view_row(&u->v) ? R_LABEL_SEL : R_LABEL);
        put_text(u, w, state(u)->heat_y + r, 2, l, lw - 2);
    }
    free(rowq);
    term_role(&u->t, w, R_NORMAL);
}

/* The step between numbered keys: every key when its number fits in its
 * columns, else every 2nd, 5th, 10th... */
static int tick_step(const hm_geom *g, int z)
{
    char widest[16];
    int len = snprintf(widest, sizeof widest, "%d", (g->k0 + g->vis_k - 1) * z);
    static const int steps[] = {1, 2, 5, 10, 20, 50, 100, 200, 500, 1000};
    for (int i = 0; i < (int)(sizeof steps / sizeof steps[0]); i++)
        if (steps[i] * g->cw >= len + 1)
            return steps[i];
    return 1000;
}

/* Key labels: the keys' pieces across when each fits its columns;
 * staggered over `rows` rows (key k's on row k % rows, from its first
 * column) when rows above the map are free; else the keys' positions,
 * numbered, whose pieces the query labels at the left give (a
 * self-attention's keys are its queries), the selected key's in the line
 * below the heatmap. Pieces written downwards, a letter a row, ran
 * together into fake words. */
static void draw_key_labels(tui *u, WINDOW *w, const attn_src *src, int rows, int z)
{
    const hm_geom *g = &state(u)->geom;
    int step = tick_step(g, z), next_free = 0, right = g->vis_k * g->cw, sel = u->v.key / z;
    int room = getmaxx(w) - 1 - state(u)->heat_x; /* to the border: a piece may pass the map's right edge */
    if (state(u)->heat_x >= 7) {
        term_role(&u->t, w, R_DIM);
        mvwaddstr(w, 1, 2, "key");
    }
    for (int k = g->k0; k < g->k0 + g->vis_k; k++) {
        int x = hm_key_col(g, k), y = 1;
        char text[96];
        int width;
        if (rows >= 1) {
            stream_label(u, src->k_stream, k, text, sizeof text);
            width = rows * g->cw - 1;
            y = 1 + k % rows;
            if (width > room - x)
                width = room - x;
            if (width < 1)
                continue;
        } else {
            if (k % step != 0 && k != sel)
                continue;
            snprintf(text, sizeof text, "%d", k * z); /* zoomed: the block's first key */
            width = tf_width(text, u->t.utf8);
            if (x < next_free || x + width > right)
                continue;
            next_free = x + width + 1;
        }
        term_role(&u->t, w, k == sel ? R_LABEL_SEL : R_DIM);
        put_text(u, w, y, state(u)->heat_x + x, text, width);
    }
    term_role(&u->t, w, R_NORMAL);
}

/* The colour scale from 0 to 1 and, where the site masks keys, the
 * masked colour, right-aligned. */
static void draw_legend(tui *u, WINDOW *w, int y, int right, bool masks)
{
    int x = right - 26;
    if (x < 1)
        return;
    term_role(&u->t, w, R_DIM);
    mvwaddstr(w, y, x, "0 ");
    for (int i = 0; i < 10; i++) {
        hm_sample s = {HM_VALUE, (float)i / 9.0f};
        hm_glyph g = hm_glyph_at(u->t.style == HM_HALF ? HM_BLOCK : u->t.style, s, s, u->t.levels);
        term_heat(&u->t, w, g.fg, g.bg);
        waddstr(w, g.text);
    }
    term_role(&u->t, w, R_DIM);
    waddstr(w, " 1  ");
    if (!masks)
        return;
    hm_sample m = {HM_MASKED, 0};
    hm_glyph g = hm_glyph_at(u->t.style == HM_HALF ? HM_BLOCK : u->t.style, m, m, u->t.levels);
    term_heat(&u->t, w, g.fg, g.bg);
    waddstr(w, g.text);
    waddstr(w, g.text);
    term_role(&u->t, w, R_DIM);
    waddstr(w, " masked");
}

static void draw_info(tui *u, WINDOW *w, const attn_src *src)
{
    int y = getmaxy(w) - 2, cols = getmaxx(w) - 2;
    char q[96], k[96], value[32], line[520];
    int qp = view_row(&u->v), kp = u->v.key;
    stream_label(u, src->q_stream, qp, q, sizeof q);
    stream_label(u, src->k_stream, kp, k, sizeof k);
    if (qp >= src->filled)
        snprintf(value, sizeof value, "not computed yet");
    else
        snprintf(value, sizeof value, "%.3f", (double)as_capture_attn(src->cap, src->hook, src->head, qp, kp));
    /* The value first: a narrow pane cuts the pieces, never the number. */
    snprintf(line, sizeof line, "%s  query %d %s %s key %d %s", value, qp, q, tf_glyph(G_ARROW, u->t.utf8), kp, k);
    int z = u->v.grid ? 1 : u->v.zoom;
    if (z > 1) {
        /* zoomed: the cursor's cell first (its block and what it shows), then the token's own weight */
        attn_zoom zm = {src, z, u->v.zoom_mean, 0, 0};
        hm_sample c = zoom_sample(&zm, qp / z, kp / z);
        char cell[32];
        if (c.state == HM_VALUE)
            snprintf(cell, sizeof cell, "%.3f", (double)c.v);
        else
            snprintf(cell, sizeof cell, "%s", zm.late ? "computing" : c.state == HM_PENDING ? "not computed yet" : "masked");
        char rest[sizeof line], pre[128];
        memcpy(rest, line, sizeof rest);
        snprintf(pre, sizeof pre, "%s %s q %d-%d %s k %d-%d  ", cell, u->v.zoom_mean ? "mean" : "max", qp / z * z,
                 mini(qp / z * z + z, src->n_q) - 1, u->t.utf8 ? "×" : "x", kp / z * z,
                 mini(kp / z * z + z, src->n_k) - 1);
        snprintf(line, sizeof line, "%s%.380s", pre, rest);
    }
    bool legend = cols >= 70;
    term_role_attr(&u->t, w, R_NORMAL, A_BOLD);
    put_text(u, w, y, 2, line, legend ? cols - 30 : cols - 2);
    if (legend) {
        const as_attn *site = as_program_attn(src->prog, src->hook);
        draw_legend(u, w, y, cols, !site || as_view_site_masks(site));
    }
}

/* One head's map: the cells first (as large as the area allows with
 * short labels, the rows filled), then the labels take what the cells
 * leave: the query labels the columns right of the map, the key labels
 * the rows free above it. */
static void single_view(tui *u, WINDOW *w, attn_src *src, int *shown, int *late)
{
    int rows = getmaxy(w) - 2, cols = getmaxx(w) - 2, sub = hm_sub_for(u->t.style);
    int wk_typical, wq = widest_label(u, src->q_stream, src->n_q, true, NULL);
    int wk = widest_label(u, src->k_stream, src->n_k, false, &wk_typical);
    int cap = cols / 5 < 12 ? cols / 5 : 12; /* the heatmap matters more than long labels */
    wq = wq < 4 ? 4 : wq;
    int least = (wq < cap ? wq : cap) + 2; /* a column each side */
    hm_geom *g = &state(u)->geom;
    int z = u->v.zoom > 1 ? u->v.zoom : 1;
    if (z > 1) {
        /* zoomed out: cells of z x z tokens, the queries labelled by their blocks */
        char l[32];
        wq = snprintf(l, sizeof l, "%d-%d", src->n_q - 1, src->n_q - 1);
        least = (wq < cap ? wq : cap) + 2;
        hm_fit(g, (src->n_q + z - 1) / z, (src->n_k + z - 1) / z, rows - 2, cols - least, sub, 16);
        hm_fill_rows(g);
        hm_follow(g, view_row(&u->v) / z, u->v.key / z);
        int lw = hm_label_cols(least, wq + 2, cols, g->vis_k * g->cw);
        state(u)->heat_y = 2;
        state(u)->heat_x = 1 + lw;
        attn_zoom zm = {src, z, u->v.zoom_mean, 0, 0};
        draw_cells(u, w, state(u)->heat_y, state(u)->heat_x, g, zoom_sample, &zm, view_row(&u->v) / z, u->v.key / z);
        *shown = zm.shown, *late = zm.late;
        draw_query_labels(u, w, lw, src, z);
        draw_key_labels(u, w, src, 0, z);
        return;
    }
    hm_fit(g, src->n_q, src->n_k, rows - 2, cols - least, sub, 16);
    hm_fill_rows(g);
    hm_follow(g, view_row(&u->v), u->v.key);
    int lw = hm_label_cols(least, wq + 2, cols, g->vis_k * g->cw);
    int key_rows = hm_key_rows(g->cw, wk, wk_typical, rows - 2 - hm_rows_used(g));
    state(u)->heat_y = 1 + (key_rows > 1 ? key_rows : 1);
    state(u)->heat_x = 1 + lw;
    draw_cells(u, w, state(u)->heat_y, state(u)->heat_x, g, sample, src, view_row(&u->v), u->v.key);
    draw_query_labels(u, w, lw, src, 1);
    draw_key_labels(u, w, src, key_rows, 1);
}

/* The grid's tiles, and how many queries and keys share a cell so that
 * each head's whole map fits its tile: every key shows, the first
 * token's column among them, rather than a window of them. */
static attn_block grid_layout(tui *u, attn_src *src)
{
    WINDOW *w = u->win[P_ATTN];
    int rows = getmaxy(w) - 2, cols = getmaxx(w) - 2, sub = hm_sub_for(u->t.style);
    int heads = as_view_site_heads(as_program_attn(as_view_program(u->s), src->hook));
    state(u)->grid = hm_grid_arrange(heads, src->n_q > src->n_k ? src->n_q : src->n_k, rows - 1, cols, sub);
    int tr = (state(u)->grid.tile_rows - 1) * sub, tc = state(u)->grid.tile_cols;
    attn_block b = {src, src->n_q, src->n_k, 0, 0};
    if (tr > 0 && src->n_q > tr)
        b.vq = tr;
    if (tc > 0 && src->n_k > tc)
        b.vk = tc;
    return b;
}

/* Every head's whole map, each in a tile, blocks of queries and keys to a
 * cell where they do not fit (block_sample; the title says so). */
static void grid_view(tui *u, WINDOW *w, attn_src *src, int *shown, int *late)
{
    int sub = hm_sub_for(u->t.style);
    int heads = as_view_site_heads(as_program_attn(as_view_program(u->s), src->hook));
    attn_block b = grid_layout(u, src);
    hm_geom g = {0};
    hm_fit(&g, b.vq, b.vk, state(u)->grid.tile_rows - 1,
           state(u)->grid.tile_cols, sub, 16);
    state(u)->heat_y = state(u)->heat_x = 1;
    for (int h = 0; h < heads; h++) {
        int ty, tx;
        char title[32];
        hm_grid_origin(&state(u)->grid, h, &ty, &tx);
        snprintf(title, sizeof title, state(u)->grid.tile_cols >= 8 ? "head %d" : "h%d", h);
        term_role(&u->t, w, h == u->v.head ? R_LABEL_SEL : R_TITLE);
        put_text(u, w, 1 + ty, 1 + tx, title, state(u)->grid.tile_cols);
        src->head = h;
        draw_cells(u, w, 2 + ty, 1 + tx, &g, block_sample, &b, h == u->v.head ? block_of(view_row(&u->v), src->n_q, b.vq) : -1,
                   block_of(u->v.key, src->n_k, b.vk));
    }
    src->head = u->v.head;
    *shown = b.shown, *late = b.late;
}

/* The site the view picks (the decoder's self-attention, or an
 * encoder-decoder's cross-attention) in the selected layer: rows are its
 * query stream's positions, columns its key stream's. */
static attn_src source_of(const tui *u)
{
    const as_session *s = u->s;
    int hook = as_program_pattern(as_view_program(s), u->v.layer, u->v.site);
    const as_attn *site = as_program_attn(as_view_program(s), hook);
    attn_src src = {as_view_capture(s), as_view_program(s), hook, u->v.head, hook >= 0 ? as_view_filled(s, hook) : 0, as_view_out_stream(s),
                    as_view_out_stream(s), as_view_n_tokens(s), as_view_n_tokens(s)};
    if (site) {
        src.q_stream = as_view_site_q_stream(site), src.k_stream = as_view_site_kv_stream(site);
        src.n_q = as_view_stream_tokens(s, as_view_site_q_stream(site));
        src.n_k = as_view_site_kv_stream(site) == as_view_site_q_stream(site) ? src.n_q
                                                                              : as_view_filled(s, as_view_site_key_hook(site));
    }
    return src;
}

static void draw(tui *u)
{
    const as_session *s = u->s;
    attn_src src = source_of(u);
    int n = as_view_n_tokens(s), hook = src.hook;
    const char *what = u->v.site == AS_PICK_CROSS ? "Cross-attention" : u->v.site == AS_PICK_SOURCE ? "Encoder attention"
                                                                                           : "Attention";
    char title[160], note[96];
    int o = 0; /* the title's part before what a cell is, where the progress goes */
    if (u->v.grid) {
        o = snprintf(title, sizeof title, "%s  layer %d  all %d heads", what, u->v.layer,
                     hook >= 0 ? as_view_site_heads(as_program_attn(as_view_program(s), hook)) : 0);
        attn_block b = hook >= 0 && src.filled > 0 ? grid_layout(u, &src) : (attn_block){&src, src.n_q, src.n_k, 0, 0};
        int bk = block_most(src.n_k, b.vk), bq = block_most(src.n_q, b.vq);
        /* each cell the max of a block: "max of ≤2 keys×≤3 rows" (rows: queries) */
        const char *le = u->t.utf8 ? "≤" : "<=", *x = u->t.utf8 ? "×" : "x";
        if (bk > 1 && bq > 1)
            snprintf(title + o, sizeof title - (size_t)o, "  max of %s%d keys%s%s%d rows", le, bk, x, le, bq);
        else if (bk > 1 || bq > 1)
            snprintf(title + o, sizeof title - (size_t)o, "  max of %s%d %s a cell", le, bk > 1 ? bk : bq,
                     bk > 1 ? "keys" : "rows");
    }
    else if (u->v.zoom > 1) {
        o = snprintf(title, sizeof title, "%s  layer %d  head %d", what, u->v.layer, u->v.head);
        snprintf(title + o, sizeof title - (size_t)o, "  %s of %d%s%d tokens a cell", u->v.zoom_mean ? "mean" : "max",
                 u->v.zoom, u->t.utf8 ? "×" : "x", u->v.zoom);
    } else
        snprintf(title, sizeof title, "%s  layer %d  head %d", what, u->v.layer, u->v.head);
    snprintf(note, sizeof note, "%s%s", u->v.site == AS_PICK_CROSS ? "target x source  " : u->v.site == AS_PICK_SOURCE ?
             "source x source  " : "", as_cmap_name(u->v.cmap));
    pane_frame(u, P_ATTN, title, note);
    if (n == 0 && as_view_pixels(s))
        pane_message(u, P_ATTN, "No image yet. Type  image FILE  and Enter at the command line, then  finish; "
                                "Esc goes back to the view.");
    else if (hook < 0 && n > 0)
        pane_message(u, P_ATTN, "The decoder has no block of this number (an encoder-decoder's two stacks may "
                                "differ in depth): k/Up goes back.");
    else if (n == 0)
        pane_message(u, P_ATTN, "No context yet. Type  prompt TEXT  and Enter at the command line, then Esc and "
                                "Space to generate a token.  ? shows the keys,  lesson  the guided tours.");
    else if (hook < 0 || !as_capture_has(as_view_capture(s), hook)) {
        char why[160];
        snprintf(why, sizeof why, "Attention patterns are not captured at this budget: --capture-mb %zu keeps them "
                 "at these positions (info).", as_view_keep_mb(s));
        pane_message(u, P_ATTN, why);
    } else if (src.filled == 0)
        pane_message(u, P_ATTN, "Not computed yet:  s  steps one op,  n  runs to the end of the block, "
                                " f  finishes the pass,  Space  generates a token.");
    else {
        int shown = 0, late = 0;
        if (u->v.grid)
            grid_view(u, u->win[P_ATTN], &src, &shown, &late);
        else
            single_view(u, u->win[P_ATTN], &src, &shown, &late);
        /* the late cells' block rows partly made count for their share (the engine's sum over the cells just
         * drawn, the only ones read since the redraw set the bound) */
        double made = late ? as_capture_cells_late_made(src.cap) : 0;
        made = made < 0 ? 0 : made > late ? late : made;
        draw_info(u, u->win[P_ATTN], &src);
        if (late > 0 && o > 0 && o < (int)sizeof title) {
            /* cells left for later (the redraw's time bound): the title says how much is drawn, before what a
             * cell is (a narrow pane cuts that first); the view goes on while no key waits */
            char with[sizeof title + 32];
            snprintf(with, sizeof with, "%.*s  computing %d%%%s", o, title, (int)(100.0 * (shown - late + made) / shown),
                     title + o);
            pane_frame_top(u, P_ATTN, with, note);
        }
    }
    wnoutrefresh(u->win[P_ATTN]);
}

/* A click selects the head under it in the grid, or the query and key
 * of the cell under it. */
static unsigned mouse(tui *u, int y, int x, mmask_t buttons)
{
    if (buttons & (BUTTON4_PRESSED | BUTTON5_PRESSED))
        return RD_IGNORED;
    int hy = y - state(u)->heat_y, hx = x - state(u)->heat_x;
    if (as_view_n_tokens(u->s) == 0)
        return 0;
    if (u->v.grid) {
        int h = hm_grid_tile_at(&state(u)->grid, hy, hx);
        if (h < 0)
            return 0;
        u->v.head = h;
        return panes_showing(u, SHOWS_HEAD);
    }
    int z = u->v.zoom > 1 ? u->v.zoom : 1; /* zoomed: a cell's first query and key */
    int q = hm_query_at(&state(u)->geom, hy * state(u)->geom.sub);
    if (q < 0)
        return 0;
    q *= z;
    unsigned bits = tui_select_query(u, q) | RD(P_ATTN);
    int k = hm_key_at(&state(u)->geom, hx);
    k = k >= 0 ? k * z : k;
    const as_attn *site = as_program_attn(as_view_program(u->s), source_of(u).hook);
    if (k >= 0 && (site ? as_attn_visible(site, q, k) : k <= q))
        u->v.key = k;
    return bits;
}

int pane_attn_page(const tui *u)
{
    int h = state(u)->geom.ch > 0 ? state(u)->geom.rows * state(u)->geom.sub / state(u)->geom.ch : 10;
    int z = !u->v.grid && u->v.zoom > 1 ? u->v.zoom : 1; /* zoomed: a page of cells is z times the tokens */
    return (h > 1 ? h - 1 : 1) * z;
}

static void *init(void)
{
    return calloc(1, sizeof(attn_state));
}

const pane_class pane_attn = {
    .name = "Attention",
    .shows = SHOWS_LAYER | SHOWS_HEAD | SHOWS_QUERY | SHOWS_KEY | SHOWS_LOOK | SHOWS_DATA,
    .focusable = true,
    .draw = draw,
    .mouse = mouse,
    .init = init,
    .free = free,
};
