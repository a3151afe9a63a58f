/* Figures: heatmaps (one head, every head of a layer, a grid of layers
 * and heads, instrument tables, a router's weights with its chosen
 * experts marked) and attention laid over an image's patches. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure_internal.h"

/* ============================================================= heatmap */

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

/* The panel grid for n_mats panels when the caller left it to the width:
 * as many a row as keep a panel wider than its title, rows balanced. */
static void heat_auto_grid(lay *L, const as_fig_heat *h, float avail, heat_geom *g)
{
    float head_w = as_lay_max_label_w(L, h->mat_titles, h->n_mats, avail) + PT(L, 4);
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
    g->rl_w = g->row_labels ? as_lay_max_label_w(L, h->row_labels, R, lab_max) : 0;
    g->left = PT(L, MARGIN_PT) + (h->row_axis && g->row_labels ? lineh(L, L->body) + PT(L, 2) : 0) +
              (g->row_labels ? g->rl_w + tick : 0);
    if (h->grid_row_names) {
        g->left += as_lay_max_label_w(L, h->grid_row_names, h->grid_rows, lab_max) + PT(L, 3);
        g->left += h->grid_row_axis ? lineh(L, L->body) + PT(L, 1) : 0;
    }
    g->right = 0;
    if (!g->horiz_cbar) {
        g->right = PT(L, 6) + as_lay_cbar_extent(L, cb);
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
    g->cl_w = g->col_labels ? as_lay_max_label_w(L, h->col_labels, C, lab_max) : 0;
    g->ptitle = h->mat_titles ? sm + PT(L, 1) : 0;
    g->gap_y = (int)lrintf((single ? 0 : PT(L, 4)) + g->ptitle);
    g->top = as_lay_title_height(L, cap) + (h->grid_col_axis ? lineh(L, L->body) : 0) +
             (h->grid_col_names ? sm + PT(L, 1) : 0);
    for (int pass = 0; pass < 2; pass++) {
        g->cl_upright = g->col_labels && g->cl_w + PT(L, 1.5f) > (float)cell;
        float below = (g->col_labels ? tick + (g->cl_upright ? g->cl_w : sm) : 0) +
                      (h->col_axis && g->col_labels ? PT(L, 2) + lineh(L, L->body) : 0) +
                      (g->horiz_cbar ? PT(L, 8) + as_lay_cbar_extent(L, cb) : 0);
        if (masks && g->horiz_cbar)
            below += sm;
        g->below = below;
        if (L->H <= 0 || pass)
            break;
        float room = L->H - g->top - g->ptitle - below - as_lay_notes_height(L, cap) - PT(L, MARGIN_PT) -
                     (float)((g->GR - 1) * g->gap_y);
        float by_h = room / (float)(g->GR * R);
        by_h = single ? floorf(by_h) : by_h;
        if (by_h >= cell)
            break;
        cell = by_h;
    }
    g->cell = cell < 0 ? 0 : cell;
    g->stride = as_lay_label_stride(L, g->cell);
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
    as_lay_cbar_ticks(L, cb);
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
        return as_lay_too_small(L, "a pixel per cell at this dpi (a larger width=, or fewer tokens with tokens=FROM:TO)", err);
    return AS_OK;
}

static void heat_panel_labels(lay *L, const as_fig_heat *h, const heat_geom *g, labels *rl, labels *cl, int px, int py,
                              bool left, bool below)
{
    float tick = PT(L, TICK_LEN_PT), pad = PT(L, TICK_PAD_PT), lw = PT(L, FRAME_PT), cell = g->cell;
    int cs = g->cl_upright ? g->stride : 1;
    for (int r = 0; left && rl->s && r < h->rows; r += rl->stride) {
        float cy = (float)py + ((float)r + 0.5f) * cell;
        as_lay_line(L, (float)px - tick, cy, (float)px, cy, INK, lw);
        as_lay_text_vc(L, (float)px - tick - pad, cy, L->small, AL_END, INK, rl->s[r]);
    }
    for (int k = 0; below && cl->s && k < h->cols; k += cs) {
        float cx = (float)px + ((float)k + 0.5f) * cell, by = (float)py + (float)h->rows * cell;
        as_lay_line(L, cx, by, cx, by + tick, INK, lw);
        if (g->cl_upright)
            as_lay_text_up(L, cx, by + tick + pad, L->small, AL_END, INK, cl->s[k]);
        else
            as_lay_text(L, cx, by + tick + pad + caph(L, L->small), L->small, false, AL_MIDDLE, INK, cl->s[k]);
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
    as_lay_rect(L, (float)px - lw / 2, (float)py - lw / 2, pw + lw, ph + lw, NULL, INK, lw);
    prim *p = as_fig_add(L->f, PR_CELLS);
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
        as_fig_heat_rgb(L->st, s, h->mats[m].v[i], mk, p->rgb + (size_t)i * 3);
    }
    /* Marked cells: a white dot ringed in black, drawn over the cells. */
    static const uint8_t white[3] = {255, 255, 255};
    for (int i = 0; h->mats[m].marked && i < R * C; i++)
        if (h->mats[m].marked[i]) {
            float cx = (float)px + ((float)(i % C) + 0.5f) * g->cell, cy = (float)py + ((float)(i / C) + 0.5f) * g->cell;
            float r = fminf(g->cell * 0.22f, PT(L, 3));
            as_lay_mark(L, cx, cy, r, INK, 1);
            as_lay_mark(L, cx, cy, r * 0.6f, white, 1);
        }
    /* Cell texts: as large as the labels where they fit, never below 4 pt. */
    for (int i = 0; h->mats[m].text && i < R * C; i++) {
        const char *t = h->mats[m].text[i];
        if (!t || !*t)
            continue;
        float size = fminf(L->small, g->cell * 0.45f / PT(L, 1));
        if (size < 4)
            break;
        char buf[64];
        as_fig_elide(L->c, t, PT(L, size), g->cell * 0.92f, buf, sizeof buf);
        const uint8_t *c3 = p->rgb + (size_t)i * 3;
        static const uint8_t white_ink[3] = {255, 255, 255};
        bool dark = 0.299 * c3[0] + 0.587 * c3[1] + 0.114 * c3[2] < 128;
        float cx = (float)px + ((float)(i % C) + 0.5f) * g->cell, cy = (float)py + ((float)(i / C) + 0.5f) * g->cell;
        as_lay_text_vc(L, cx, cy, size, AL_MIDDLE, dark ? white_ink : INK, buf);
    }
    if (h->mat_titles) {
        char buf[256];
        as_fig_elide(L->c, h->mat_titles[m], PT(L, L->small), pw + (float)g->gap_x, buf, sizeof buf);
        as_lay_text(L, (float)px + pw / 2, (float)py - PT(L, 2), L->small, false, AL_MIDDLE, INK, buf);
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
        as_lay_text_up(L, x - PT(L, 2) - lineh(L, L->body) / 2, mid, L->body, AL_MIDDLE, INK, name);
        x -= PT(L, 2) + lineh(L, L->body);
    }
    x -= PT(L, 3);
    int px, py;
    for (int r = 0; h->grid_row_names && r < g->GR; r++) {
        panel_at(h, g, gx0, gy0, r, 0, &px, &py);
        as_lay_text_vc(L, x, (float)py + ph / 2, L->small, AL_END, INK, h->grid_row_names[r]);
    }
    for (int c = 0; h->grid_col_names && c < g->GC; c++) {
        panel_at(h, g, gx0, gy0, 0, c, &px, &py);
        as_lay_text(L, (float)px + pw / 2, (float)gy0 - PT(L, 2), L->small, false, AL_MIDDLE, INK, h->grid_col_names[c]);
    }
    if (h->grid_col_axis)
        as_lay_text(L, (float)gx0 + grid_w / 2, (float)gy0 - sm - PT(L, 3), L->body, false, AL_MIDDLE, INK,
             h->grid_col_axis);
    if (h->grid_row_axis) {
        float names_w = as_lay_max_label_w(L, h->grid_row_names, g->GR, L->W);
        as_lay_text_up(L, x - names_w - PT(L, 1) - lineh(L, L->body) / 2, mid, L->body, AL_MIDDLE, INK, h->grid_row_axis);
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
        as_lay_cbar_ticks(L, cb);
        y = cb->y + as_lay_cbar_extent(L, cb);
        lx = cb->x, ly = y + sm / 2;
    } else {
        cb->x = (float)gx0 + grid_w + PT(L, 6), cb->y = (float)gy0 + g->ptitle, cb->len = grid_h - g->ptitle;
        as_lay_cbar_ticks(L, cb);
        lx = cb->x, ly = cb->y + cb->len + PT(L, 8);
    }
    as_lay_draw_cbar(L, cb);
    uint8_t mrgb[3];
    as_masked_rgb(L->st->cmap, mrgb);
    if (masked)
        lx = as_lay_legend_swatch(L, lx, ly, mrgb, masked_label ? masked_label : "masked");
    if (nan)
        as_lay_legend_swatch(L, cb->horiz ? lx : cb->x, cb->horiz || !masked ? ly : ly + sm, NANC, inf ? "NaN or Inf" : "NaN");
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
    if (as_lay_begin(&L, out, ctx, st, cap, err))
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
    if ((g.row_labels && as_lay_labels_make(&L, &rl, h->row_labels, h->rows, L.small, g.stride, lab_max)) ||
        (g.col_labels && as_lay_labels_make(&L, &cl, h->col_labels, h->cols, L.small, g.cl_upright ? g.stride : 1, lab_max))) {
        as_lay_labels_free(&rl), as_lay_labels_free(&cl);
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
        as_lay_text(&L, (float)gx0 + (float)grid_w / 2, cl_bottom - PT(&L, 2), L.body, false, AL_MIDDLE, INK, h->col_axis);
    }
    cl_bottom = heat_cbar(&L, &cb, &g, gx0, gy0, grid_w, grid_h, cl_bottom, any_masked, any_nan, any_inf,
                          h->masked_label);
    char note0[256];
    int n_notes;
    const char **notes = heat_notes(h, &g, cap, note0, sizeof note0, &n_notes);
    as_fig_caption c2 = {cap ? cap->title : NULL, cap ? cap->subtitle : NULL, notes, notes ? n_notes : 0};
    float H = as_lay_draw_notes(&L, &c2, cl_bottom) + PT(&L, MARGIN_PT);
    as_lay_draw_title(&L, cap);
    free(notes);
    as_lay_labels_free(&rl), as_lay_labels_free(&cl);
    if (!notes)
        L.f->oom = true;
    return as_lay_end(&L, H, out, err);
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
    if (as_lay_begin(&L, out, ctx, st, cap, err))
        return AS_ERR;
    scale s = {0, ov->vmax, false};
    cbar cb = {.s = &s, .label = ov->cbar_label};
    float top = as_lay_title_height(&L, cap), gap = PT(&L, 6), margin = PT(&L, MARGIN_PT);
    float ptitle = ov->map_titles ? lineh(&L, L.small) + PT(&L, 2) : 0;
    /* Panels a row: as many as keep a panel at least 1 in wide; then the
     * cell size (whole pixels) that fills the width beside the bar. */
    cb.len = PT(&L, 72);
    as_lay_cbar_ticks(&L, &cb);
    float right = PT(&L, 6) + as_lay_cbar_extent(&L, &cb), avail = L.W - 2 * margin - right;
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
        return as_lay_too_small(&L, "the image panels", err);
    float pw = cell * (float)ov->size, grid_w = (float)per_row * pw + (float)(per_row - 1) * gap;
    float x0 = roundf(margin + (avail - grid_w) / 2), lw = PT(&L, FRAME_PT);
    float y = top;
    uint8_t line_rgb[3] = {0xFF, 0xFF, 0xFF};
    for (int m = 0; m < ov->n_maps; m++) {
        int r = m / per_row, c = m % per_row;
        float px = x0 + (float)c * (pw + gap), py = roundf(top + (float)r * (pw + ptitle + gap) + ptitle);
        px = roundf(px);
        as_lay_rect(&L, px - lw / 2, py - lw / 2, pw + lw, pw + lw, NULL, INK, lw);
        prim *p = as_fig_add(L.f, PR_CELLS);
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
                as_colormap(st->cmap, isnan(v) ? 0 : (float)as_fig_scale_t(&s, v < 0 ? 0 : v > ov->vmax ? ov->vmax : v), hc);
                for (int k = 0; k < 3; k++)
                    p->rgb[i * 3 + (size_t)k] =
                        (uint8_t)lrintf((1 - ov->alpha) * (float)ov->rgb[i * 3 + (size_t)k] + ov->alpha * (float)hc[k]);
            }
        /* the patch grid, thin and translucent over the image */
        for (int g = 1; g < ov->grid; g++) {
            float o = (float)(g * P) * cell;
            as_lay_polyline_a(&L, (float[]){px + o, py, px + o, py + pw}, 2, line_rgb, lw * 0.6f, 0.35f);
            as_lay_polyline_a(&L, (float[]){px, py + o, px + pw, py + o}, 2, line_rgb, lw * 0.6f, 0.35f);
        }
        if (ov->marked >= 0 && ov->marked < ov->grid * ov->grid) {
            float mx = px + (float)(ov->marked % ov->grid * P) * cell, my = py + (float)(ov->marked / ov->grid * P) * cell;
            as_lay_rect(&L, mx, my, (float)P * cell, (float)P * cell, NULL, HILITE, 2 * lw);
        }
        if (ov->map_titles) {
            char buf[256];
            as_fig_elide(L.c, ov->map_titles[m], PT(&L, L.small), pw + gap, buf, sizeof buf);
            as_lay_text(&L, px + pw / 2, py - PT(&L, 2), L.small, false, AL_MIDDLE, INK, buf);
        }
        y = py + pw;
    }
    /* the bar beside the first row of panels, as tall as a panel */
    cb.x = x0 + grid_w + PT(&L, 6), cb.y = roundf(top + ptitle), cb.len = pw;
    as_lay_cbar_ticks(&L, &cb);
    as_lay_draw_cbar(&L, &cb);
    float H = as_lay_draw_notes(&L, cap, y + PT(&L, 4)) + margin;
    as_lay_draw_title(&L, cap);
    return as_lay_end(&L, H, out, err);
}

