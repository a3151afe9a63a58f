/* pane_route: a routed MLP (mixture of experts) in the selected layer:
 * the context's tokens (rows) by the experts (columns), each cell the
 * router's weight (hook_expert_weights) on the heatmap's colour scale,
 * the k experts it chose (hook_expert_indices) marked; a shared expert,
 * where the layer has one, apart on the right (`sh`) with its gate, or
 * full and marked where it is ungated (DeepSeek's: every token takes it
 * whole); under them
 * each expert's load, the share of the tokens that chose it. Left/Right
 * (or a click on a column) select an expert, whose tokens the token
 * strip marks. Only where the program has routed MLPs: the hooks say
 * where, no architecture is named here. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "textfmt.h"
#include "tui.h"

/* The pane's state: the selected expert, what it scrolled to. */
typedef struct route_state {
    int route_expert;     /* the routing pane's selected expert (-1: none); the strip marks its tokens */
    int route_first;      /* the routing pane's first token row shown */
    int route_e0;         /* its first expert column shown */
} route_state;

static route_state *state(const tui *u)
{
    return u->pane_state[P_ROUTE];
}

typedef struct route_src {
    int hw, hi, hs;  /* weights, indices, the shared expert's gate (-1: none, or ungated) */
    bool shared;     /* the layer has a shared expert (gated or not) */
    int n_expert, k;
    int n;           /* positions holding values */
} route_src;

static int hook(const tui *u, as_hook_kind kind, int layer)
{
    return as_program_hook_in(as_view_program(u->s), kind, layer, as_view_out_stream(u->s));
}

static bool applies(const tui *u)
{
    for (int l = 0; l < as_view_n_layer(u->s); l++)
        if (hook(u, AS_HK_EXPERT_INDICES, l) >= 0)
            return true;
    return false;
}

/* The selected layer's routing, false where it has none (a dense MLP). */
static bool source(const tui *u, route_src *r)
{
    memset(r, 0, sizeof *r);
    int L = u->v.layer;
    r->hw = hook(u, AS_HK_EXPERT_WEIGHTS, L);
    r->hi = hook(u, AS_HK_EXPERT_INDICES, L);
    r->hs = hook(u, AS_HK_SHARED_GATE, L);
    r->shared = r->hs >= 0 || hook(u, AS_HK_SHARED_OUT, L) >= 0;
    const as_op *op = r->hi >= 0 ? as_program_producer(as_view_program(u->s), r->hi) : NULL;
    if (r->hw < 0 || !op)
        return false;
    r->n_expert = as_view_op_experts(op);
    r->k = as_view_op_k(op);
    const as_capture *c = as_view_capture(u->s);
    if (as_capture_has(c, r->hw) && as_capture_has(c, r->hi)) {
        r->n = as_view_filled(u->s, r->hw) < as_view_filled(u->s, r->hi) ? as_view_filled(u->s, r->hw) : as_view_filled(u->s, r->hi);
        if (r->n > as_view_n_tokens(u->s))
            r->n = as_view_n_tokens(u->s);
    }
    if (r->hs >= 0 && !(as_capture_has(c, r->hs) && as_view_filled(u->s, r->hs) >= r->n))
        r->hs = -1;
    return true;
}

static bool chose(const tui *u, const route_src *r, int pos, int e)
{
    const float *ix = as_capture_row(as_view_capture(u->s), r->hi, pos);
    for (int j = 0; j < r->k; j++)
        if ((int)ix[j] == e)
            return true;
    return false;
}

/* Whether the token at pos chose the routing pane's selected expert in
 * the selected layer (false when none is selected). */
static bool route_marks(const tui *u, int pos)
{
    route_src r;
    if (state(u)->route_expert < 0 || !source(u, &r) || pos < 0 || pos >= r.n || state(u)->route_expert >= r.n_expert)
        return false;
    return chose(u, &r, pos, state(u)->route_expert);
}

/* Where things go inside the box: a token label, then the experts' cells
 * of cw columns each, then the shared expert's 3 after a gap. */
typedef struct route_geom {
    int lw, cw, x0, xs;  /* label width, cell width, first cell's column, the shared column's (-1: none) */
    int e0, ve;          /* first expert shown, how many fit (more experts than columns: the
                          * selected one kept in sight) */
    int first, vis;      /* first token row shown, how many fit */
} route_geom;

static route_geom geometry(tui *u, const route_src *r, int rows, int cols)
{
    route_geom g;
    g.lw = cols >= 44 ? 12 : cols >= 28 ? 8 : 6;
    int sw = r->shared ? 4 : 0;
    int avail = cols - 1 - g.lw - sw;
    g.cw = avail / (r->n_expert > 0 ? r->n_expert : 1);
    g.cw = g.cw > 4 ? 4 : g.cw < 1 ? 1 : g.cw;
    g.ve = avail / g.cw;
    g.ve = g.ve > r->n_expert ? r->n_expert : g.ve < 0 ? 0 : g.ve;
    int e0 = state(u)->route_e0, sel = state(u)->route_expert;
    if (sel >= 0 && sel < e0)
        e0 = sel;
    if (sel >= 0 && g.ve > 0 && sel >= e0 + g.ve)
        e0 = sel - g.ve + 1;
    if (e0 > r->n_expert - g.ve)
        e0 = r->n_expert - g.ve;
    g.e0 = state(u)->route_e0 = e0 < 0 ? 0 : e0;
    g.x0 = 1 + g.lw + 1;
    g.xs = r->shared ? g.x0 + g.cw * g.ve + 1 : -1;
    g.vis = rows - 2 > 0 ? rows - 2 : 0; /* the header row and the load row */
    int first = state(u)->route_first, q = u->v.query;
    if (q < first)
        first = q;
    if (g.vis > 0 && q >= first + g.vis)
        first = q - g.vis + 1;
    if (first > r->n - g.vis)
        first = r->n - g.vis;
    g.first = state(u)->route_first = first < 0 ? 0 : first;
    return g;
}

/* cw columns of one value's colour; a chosen cell carries a mark in its
 * middle, in black or white, whichever reads over the colour. */
static void cell(tui *u, WINDOW *w, int y, int x, int cw, float v, bool mark)
{
    hm_style st = u->t.style == HM_HALF ? HM_BLOCK : u->t.style;
    hm_sample s = {HM_VALUE, v < 0 ? 0 : v > 1 ? 1 : v};
    hm_glyph gl = hm_glyph_at(st, s, s, u->t.levels);
    term_heat(&u->t, w, gl.fg, gl.bg);
    for (int i = 0; i < cw; i++)
        mvwaddstr(w, y, x + i, gl.text);
    if (!mark)
        return;
    if (st == HM_SHADE || st == HM_ASCII)
        term_role(&u->t, w, R_LABEL_SEL);
    else
        term_heat(&u->t, w, term_contrast_slot(&u->t, gl.bg), gl.bg);
    mvwaddstr(w, y, x + (cw - 1) / 2, u->t.utf8 ? "\u25cf" : "*");
}

static void draw(tui *u)
{
    WINDOW *w = u->win[P_ROUTE];
    route_src r;
    char title[96], note[64];
    if (!source(u, &r)) {
        snprintf(title, sizeof title, "Routing  layer %d", u->v.layer);
        pane_frame(u, P_ROUTE, title, NULL);
        pane_message(u, P_ROUTE, "This layer's MLP is dense: no router. Up/Down: another layer.");
        wnoutrefresh(w);
        return;
    }
    if (state(u)->route_expert >= r.n_expert)
        state(u)->route_expert = -1;
    snprintf(title, sizeof title, getmaxx(w) >= 40 ? "Routing  layer %d" : "Routing L%d", u->v.layer);
    snprintf(note, sizeof note, "top %d of %d", r.k, r.n_expert);
    float *load = calloc((size_t)r.n_expert, sizeof *load);
    if (load && r.n > 0) {
        for (int p = 0; p < r.n; p++)
            for (int e = 0; e < r.n_expert; e++)
                load[e] += chose(u, &r, p, e) ? 1.0f / (float)r.n : 0;
        if (state(u)->route_expert >= 0)
            snprintf(note, sizeof note, "expert %d: %d", state(u)->route_expert,
                     (int)lroundf(load[state(u)->route_expert] * (float)r.n));
    }
    pane_frame(u, P_ROUTE, title, note);
    if (!load || r.n == 0) {
        pane_message(u, P_ROUTE, r.n == 0 && as_view_n_tokens(u->s) == 0
                                     ? "No context yet: prompt TEXT"
                                     : "Not computed yet: n, f or Space run the pass");
        free(load);
        wnoutrefresh(w);
        return;
    }
    int rows = getmaxy(w) - 2, cols = getmaxx(w) - 2;
    route_geom g = geometry(u, &r, rows, cols);
    /* the header: the experts' numbers (as many as fit), the shared one's */
    term_role_attr(&u->t, w, R_DIM, A_UNDERLINE);
    put_text(u, w, 1, 1, "token", g.lw);
    for (int e = g.e0; e < g.e0 + g.ve; e++) {
        char num[16];
        snprintf(num, sizeof num, "%d", e);
        int len = (int)strlen(num);
        if (len > g.cw && e != state(u)->route_expert && e % ((len + g.cw) / g.cw) != 0)
            continue; /* narrow cells: every few experts numbered */
        term_role(&u->t, w, e == state(u)->route_expert ? R_LABEL_SEL : R_DIM);
        int x = g.x0 + (e - g.e0) * g.cw;
        put_text(u, w, 1, x, num, cols + 1 - x);
    }
    if (g.xs >= 0 && g.xs + 2 <= cols) {
        term_role(&u->t, w, R_DIM);
        put_text(u, w, 1, g.xs, "sh", cols + 1 - g.xs);
    }
    /* the tokens */
    for (int i = 0; i < g.vis && g.first + i < r.n; i++) {
        int p = g.first + i, y = 2 + i;
        char piece[96], label[128];
        token_label(u, p, piece, sizeof piece);
        snprintf(label, sizeof label, "%d %s", p, piece);
        term_role(&u->t, w, p == u->v.query ? R_LABEL_SEL : route_marks(u, p) ? R_OUTLIER : R_NORMAL);
        put_text(u, w, y, 1, label, g.lw);
        const float *wt = as_capture_row(as_view_capture(u->s), r.hw, p);
        for (int e = g.e0; e < g.e0 + g.ve; e++)
            cell(u, w, y, g.x0 + (e - g.e0) * g.cw, g.cw, wt[e], chose(u, &r, p, e));
        if (g.xs >= 0 && g.xs + 3 <= cols + 1) /* its gate; ungated, every token takes it whole */
            cell(u, w, y, g.xs, 3, r.hs >= 0 ? as_capture_row(as_view_capture(u->s), r.hs, p)[0] : 1.0f, r.hs < 0);
        term_role(&u->t, w, R_NORMAL);
    }
    /* the load, under the last token: percent where cells are wide
     * enough, else its colour */
    int shown = r.n - g.first < g.vis ? r.n - g.first : g.vis, y = 2 + shown;
    term_role(&u->t, w, R_DIM);
    put_text(u, w, y, 1, g.cw >= 3 ? "load %" : "load", g.lw);
    for (int e = g.e0; e < g.e0 + g.ve; e++) {
        int x = g.x0 + (e - g.e0) * g.cw;
        if (g.cw >= 3) {
            char pct[16];
            snprintf(pct, sizeof pct, "%*d", g.cw, (int)lroundf(100 * load[e]));
            term_role(&u->t, w, e == state(u)->route_expert ? R_LABEL_SEL : R_NORMAL);
            put_text(u, w, y, x, pct, g.cw);
        } else {
            cell(u, w, y, x, g.cw, load[e], false);
        }
    }
    term_role(&u->t, w, R_NORMAL);
    free(load);
    wnoutrefresh(w);
}

static unsigned select_expert(tui *u, int e)
{
    if (e == state(u)->route_expert)
        return 0;
    state(u)->route_expert = e;
    return RD(P_ROUTE) | RD(P_TOKENS);
}

/* Focused: Left/Right pick the expert (from none: the first or last). */
static unsigned key(tui *u, int ch, bool keycode)
{
    route_src r;
    if (!keycode || (ch != KEY_LEFT && ch != KEY_RIGHT) || !source(u, &r))
        return RD_IGNORED;
    int e = state(u)->route_expert, E = r.n_expert;
    e = e < 0 ? (ch == KEY_RIGHT ? 0 : E - 1) : (e + (ch == KEY_RIGHT ? 1 : -1) + E) % E;
    return select_expert(u, e);
}

/* A click on an expert's column selects it (again: none); on a token's
 * label, that token. */
static unsigned mouse(tui *u, int y, int x, mmask_t buttons)
{
    route_src r;
    if ((buttons & (BUTTON4_PRESSED | BUTTON5_PRESSED)) || !source(u, &r) || r.n == 0)
        return RD_IGNORED;
    WINDOW *w = u->win[P_ROUTE];
    route_geom g = geometry(u, &r, getmaxy(w) - 2, getmaxx(w) - 2);
    if (x >= g.x0 && x < g.x0 + g.cw * g.ve) {
        int e = g.e0 + (x - g.x0) / g.cw;
        return select_expert(u, e == state(u)->route_expert ? -1 : e);
    }
    int row = y - 2;
    if (x >= 1 && x < g.x0 && row >= 0 && row < g.vis && g.first + row < r.n)
        return tui_select_query(u, g.first + row);
    return 0;
}

/* No expert selected; the first rows and columns. */
static void reset(void *state)
{
    route_state *st = state;
    st->route_expert = -1;
    st->route_first = st->route_e0 = 0;
}

static void *init(void)
{
    route_state *st = malloc(sizeof *st);
    if (st)
        reset(st);
    return st;
}

const pane_class pane_route = {
    .name = "Routing",
    .shows = SHOWS_LAYER | SHOWS_QUERY | SHOWS_LOOK | SHOWS_DATA,
    .focusable = true,
    .keys = "<- -> expert  Up/Down layer  [ ] token  Tab pane  : command  ? keys",
    .keys_short = "<- -> expert  Up/Down layer  ? keys",
    .applies = applies,
    .draw = draw,
    .key = key,
    .mouse = mouse,
    .marks = route_marks,
    .init = init,
    .reset = reset,
    .free = free,
};
