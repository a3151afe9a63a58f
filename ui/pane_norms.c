/* pane_norms: what the selected norm (ln1, ln2 or the final one) saw at
 * every token: mean, std (LayerNorm) or RMS (RMSNorm), the scale it
 * divided by, min, max and the largest-magnitude input dimensions, those
 * far outside the rest flagged. Below, a sparkline of the residual
 * stream's norm through the layers at the selected token. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "textfmt.h"
#include "tui.h"

/* A dimension this many scales from the mean is an outlier: a Gaussian
 * over a few thousand dimensions rarely passes 5. */
#define OUTLIER_SCALES 6.0f

/* The pane's state: its first row shown. */
typedef struct norms_state {
    int norm_first;
} norms_state;

static norms_state *state(const tui *u)
{
    return u->pane_state[P_NORMS];
}

static int norm_hook(const tui *u, norm_kind k)
{
    return view_norm_hook(as_view_program(u->s), u->v.layer, k);
}

/* Whether the norm shown is an RMSNorm: a fact of the op that fills it. */
static bool is_rms(const tui *u)
{
    int h = norm_hook(u, u->v.norm);
    const as_op *op = h < 0 ? NULL : as_program_producer(as_view_program(u->s), h);
    return op && as_view_op_rms(op);
}

/* The residual stream's L2 norm at a norm's input, from its statistics:
 * LayerNorm keeps the variance (mean square = var + mean²), RMSNorm the
 * mean square itself. */
static float resid_norm(const tui *u, const as_norm_stat *st)
{
    double ms = is_rms(u) ? st->var : (double)st->var + (double)st->mean * st->mean;
    return (float)sqrt(ms * as_view_d_model(u->s));
}

/* Columns shown for a width: 1 the core, 2 with min and max, 3 with the
 * largest input dimension, 4 with the two largest. */
static int columns_for(int cols)
{
    return cols >= 72 ? 4 : cols >= 60 ? 3 : cols >= 46 ? 2 : 1;
}

static void header(tui *u, WINDOW *w, int level, int cols)
{
    char line[160];
    snprintf(line, sizeof line, "%3s %-8s %7s %6s %6s%s%s", "pos", "token", "mean", is_rms(u) ? "rms" : "std",
             "scale", level >= 2 ? " %7s %7s" : "", level >= 3 ? "  top dims" : "");
    char full[200];
    snprintf(full, sizeof full, line, "min", "max");
    term_role_attr(&u->t, w, R_DIM, A_UNDERLINE);
    put_text(u, w, 1, 2, full, cols);
}

static void outliers(tui *u, WINDOW *w, const as_norm_stat *st, int level, int right)
{
    for (int k = 0; k < level - 2 && k < AS_NORM_TOP && st->top_dim[k] >= 0; k++) {
        char cell[32], v[16];
        bool big = fabsf(st->top_val[k] - st->mean) > OUTLIER_SCALES * st->scale;
        tf_num(st->top_val[k], 5, v, sizeof v);
        snprintf(cell, sizeof cell, " %d:%s", st->top_dim[k], v);
        term_role(&u->t, w, big ? R_OUTLIER : R_DIM);
        int x = getcurx(w);
        put_text(u, w, getcury(w), x, cell, right - x);
    }
}

static void num(char *line, size_t cap, double v, int width)
{
    char b[24];
    tf_num(v, width, b, sizeof b);
    size_t o = strlen(line);
    snprintf(line + o, cap - o, " %*s", width, b);
}

static void row(tui *u, WINDOW *w, int y, int pos, const as_norm_stat *st, int level, int cols)
{
    char piece[96], cut[96], line[160];
    token_label(u, pos, piece, sizeof piece);
    tf_fit(piece, 8, u->t.utf8, cut, sizeof cut);
    int pad = 8 - tf_width(cut, u->t.utf8);
    snprintf(line, sizeof line, "%3d %s%*s", pos, cut, pad > 0 ? pad : 0, "");
    num(line, sizeof line, st->mean, 7);
    num(line, sizeof line, sqrt((double)st->var), 6);
    num(line, sizeof line, st->scale, 6);
    if (level >= 2) {
        num(line, sizeof line, st->min, 7);
        num(line, sizeof line, st->max, 7);
    }
    term_role(&u->t, w, pos == u->v.query ? R_LABEL_SEL : R_NORMAL);
    put_text(u, w, y, 2, line, cols);
    if (level >= 3)
        outliers(u, w, st, level, cols + 2);
    term_role(&u->t, w, R_NORMAL);
}

/* ‖resid‖ before each layer's ln1 and ln2, then at the final norm. */
static void sparkline(tui *u, WINDOW *w, int y, int cols)
{
    const as_session *s = u->s;
    int L = as_view_n_layer(s), q = u->v.query, m = 0;
    float *v = calloc((size_t)(2 * L + 1), sizeof *v);
    if (!v)
        return;
    for (int i = 0; i < 2 * L + 1; i++) {
        int h = view_norm_hook(as_view_program(s), i / 2, i == 2 * L ? NK_FINAL : i % 2 ? NK_LN2 : NK_LN1);
        if (h < 0 || as_view_filled(s, h) <= q)
            break;
        v[m++] = resid_norm(u, as_capture_norm(as_view_capture(s), h, q));
    }
    char spark[512], line[640];
    tf_spark(v, m, u->t.utf8, spark, sizeof spark);
    term_role(&u->t, w, R_DIM);
    put_text(u, w, y, 2, u->t.utf8 ? "‖resid‖ by layer " : "|resid| by layer ", cols);
    term_role_attr(&u->t, w, R_BAR, A_BOLD);
    waddstr(w, spark);
    if (m > 0)
        snprintf(line, sizeof line, "  %.3g %s %.3g", (double)v[0], tf_glyph(G_ARROW, u->t.utf8), (double)v[m - 1]);
    else
        snprintf(line, sizeof line, "  (pos %d not computed)", q);
    term_role(&u->t, w, R_DIM);
    put_text(u, w, y, getcurx(w), line, cols + 2 - getcurx(w));
    free(v);
    term_role(&u->t, w, R_NORMAL);
}

/* G: the gradient page: d metric / d x per position, x the residual stream
 * the selected norm reads; |grad|, grad . x (its sign: whether the
 * position's value raises the metric, to first order) and a bar of |grad|. */
static void draw_grad(tui *u)
{
    WINDOW *w = u->win[P_NORMS];
    int rows = getmaxy(w) - 2, cols = getmaxx(w) - 4, h = as_view_norm_input(u->s, norm_hook(u, u->v.norm));
    char title[128], line[320];
    snprintf(title, sizeof title, "Gradient  d metric / d %s", h >= 0 ? as_view_hook_name(u->s, h) : "?");
    pane_frame(u, P_NORMS, title, "G: norms");
    as_grad_page g;
    as_error err = {{0}};
    if (as_view_n_tokens(u->s) == 0) {
        pane_message(u, P_NORMS, "No context yet.");
        wnoutrefresh(w);
        return;
    }
    if (h < 0 || as_view_grad_page(u->s, h, &g, &err)) {
        pane_message(u, P_NORMS, h < 0 ? "This norm reads no hook to differentiate." : err.msg);
        wnoutrefresh(w);
        return;
    }
    char v[24];
    tf_num(g.value, 8, v, sizeof v);
    snprintf(line, sizeof line, "%s = %s", g.metric, v);
    term_role(&u->t, w, R_DIM);
    put_text(u, w, 1, 2, line, cols);
    term_role_attr(&u->t, w, R_DIM, A_UNDERLINE);
    snprintf(line, sizeof line, "%3s %-8s %10s %10s", "pos", "token", "|grad|", "grad.x");
    put_text(u, w, 2, 2, line, cols);
    term_role(&u->t, w, R_NORMAL);
    float mx = 0;
    for (int i = 0; i < g.n; i++)
        mx = g.norm[i] > mx ? g.norm[i] : mx;
    int body = rows - 2, sel = u->v.query < g.n ? u->v.query : g.n - 1;
    state(u)->norm_first = tf_scroll_follow(state(u)->norm_first, sel, body, g.n);
    for (int i = 0; i < body && state(u)->norm_first + i < g.n; i++) {
        int pos = state(u)->norm_first + i;
        char piece[96], cut[96], bar[256];
        token_label(u, pos, piece, sizeof piece);
        tf_fit(piece, 8, u->t.utf8, cut, sizeof cut);
        int pad = 8 - tf_width(cut, u->t.utf8);
        snprintf(line, sizeof line, "%3d %s%*s %10.4g %+10.4g ", pos, cut, pad > 0 ? pad : 0, "",
                 (double)g.norm[pos], (double)g.dot[pos]);
        term_role(&u->t, w, pos == u->v.query ? R_LABEL_SEL : R_NORMAL);
        put_text(u, w, 3 + i, 2, line, cols);
        int left = cols + 2 - getcurx(w);
        if (left > 2) {
            tf_bar(mx > 0 ? g.norm[pos] / mx : 0, left > 30 ? 30 : left, u->t.utf8, bar, sizeof bar);
            term_role(&u->t, w, R_BAR);
            put_text(u, w, 3 + i, getcurx(w), bar, left);
        }
        term_role(&u->t, w, R_NORMAL);
    }
    wnoutrefresh(w);
}

static void draw(tui *u)
{
    WINDOW *w = u->win[P_NORMS];
    if (u->v.grad_page) {
        draw_grad(u);
        return;
    }
    int rows = getmaxy(w) - 2, cols = getmaxx(w) - 4, h = norm_hook(u, u->v.norm);
    char title[96];
    /* the norm as its hooks name it (blocks.0.ln1, decoder.0.ln3), without .hook_scale */
    const char *name = h >= 0 ? as_view_hook_name(u->s, h) : "", *dot = h >= 0 ? strrchr(name, '.') : NULL;
    if (u->v.norm == NK_FINAL && as_view_source_stream(u->s) < 0)
        snprintf(title, sizeof title, "%s  ln_final", is_rms(u) ? "RMSNorm" : "LayerNorm");
    else if (dot)
        snprintf(title, sizeof title, "%s  %.*s", is_rms(u) ? "RMSNorm" : "LayerNorm", (int)(dot - name), name);
    else
        snprintf(title, sizeof title, "%s  blocks.%d.%s", is_rms(u) ? "RMSNorm" : "LayerNorm", u->v.layer,
                 view_norm_name(u->v.norm));
    /* The note names the norms N steps through, those this program has. */
    char note[96] = "N:";
    for (int k = 0; k < NK_COUNT; k++)
        if (norm_hook(u, (norm_kind)k) >= 0)
            snprintf(note + strlen(note), sizeof note - strlen(note), " %s", view_norm_name((norm_kind)k));
    pane_frame(u, P_NORMS, title, note);
    int n = h >= 0 ? as_view_filled(u->s, h) : 0;
    if (as_view_n_tokens(u->s) == 0 || n == 0) {
        pane_message(u, P_NORMS, as_view_n_tokens(u->s) ? "Not computed yet at this norm." : "No context yet.");
        wnoutrefresh(w);
        return;
    }
    int level = columns_for(cols), body = rows - 2;
    header(u, w, level, cols);
    int sel = u->v.query < n ? u->v.query : n - 1;
    state(u)->norm_first = tf_scroll_follow(state(u)->norm_first, sel, body, n);
    for (int i = 0; i < body && state(u)->norm_first + i < n; i++)
        row(u, w, 2 + i, state(u)->norm_first + i, as_capture_norm(as_view_capture(u->s), h, state(u)->norm_first + i), level, cols);
    sparkline(u, w, rows, cols);
    wnoutrefresh(w);
}

/* Where the program records norm statistics: every LayerNorm and RMSNorm. */
static bool applies(const tui *u)
{
    const as_program *p = as_view_program(u->s);
    return as_program_hook(p, AS_HK_LN1_SCALE, 0) >= 0 || as_program_hook(p, AS_HK_LNF_SCALE, -1) >= 0;
}

/* Focused: Left/Right pick the norm. */
static unsigned key(tui *u, int ch, bool keycode)
{
    if (keycode && (ch == KEY_LEFT || ch == KEY_RIGHT))
        return tui_cycle_norm(u, ch == KEY_LEFT ? -1 : 1);
    return RD_IGNORED;
}

static void *init(void)
{
    return calloc(1, sizeof(norms_state));
}

const pane_class pane_norms = {
    .name = "LayerNorm",
    .shows = SHOWS_LAYER | SHOWS_QUERY | SHOWS_NORM | SHOWS_DATA,
    .focusable = true,
    .applies = applies,
    .draw = draw,
    .key = key,
    .init = init,
    .free = free,
};
