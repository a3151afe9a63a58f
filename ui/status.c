/* status: one line saying where things stand (the model, the layer and op
 * the interpreter stands at, the context length, the capture's memory)
 * and the keys that matter for the focused pane (its class's, else the
 * view's). */
#include <string.h>

#include "textfmt.h"
#include "tui.h"

static void where(const tui *u, char *out, size_t cap)
{
    const as_interp *it = as_view_interp(u->s);
    const as_op *op = as_interp_current(it);
    if (u->busy)
        snprintf(out, cap, "running %s", u->running);
    else if (as_view_n_tokens(u->s) == 0)
        snprintf(out, cap, as_view_pixels(u->s) ? "no image"
                                                                                               : "no context");
    else if (as_view_in_pass(u->s) && op && as_view_op_layer(op) >= 0)
        snprintf(out, cap, "layer %d  op %d/%d %s", as_view_op_layer(op), as_view_pc(u->s) + 1, as_view_n_ops(u->s), as_view_op_text(op));
    else if (as_view_in_pass(u->s) && op)
        snprintf(out, cap, "op %d/%d %s", as_view_pc(u->s) + 1, as_view_n_ops(u->s), as_view_op_text(op));
    else if (as_view_n_done(u->s) < as_view_n_tokens(u->s))
        snprintf(out, cap, "ready to run positions %d-%d", as_view_n_done(u->s), as_view_n_tokens(u->s) - 1);
    else if (as_view_logits_pos(u->s) >= 0 && as_interp_logits(it))
        snprintf(out, cap, "pass done, classes ready");
    else if (!as_view_causal(u->s))
        /* an encoder: predictions at every position, or only hidden states */
        snprintf(out, cap, as_interp_logits(it) ? "pass done, predictions ready" : "pass done");
    else
        snprintf(out, cap, "pass done, logits ready");
}

#define VIEW_KEYS "? keys  : command  arrows layer/head  Tab pane  g grid  s step  n next  Space gen  q quit"
#define VIEW_KEYS_SHORT "? keys  q quit"
/* An encoder does not generate: no Space. */
#define VIEW_KEYS_ENCODER "? keys  : command  arrows layer/head  Tab pane  g grid  s step  n next  q quit"

static void draw(tui *u)
{
    WINDOW *w = u->win[P_STATUS];
    int cols = getmaxx(w);
    const as_session *s = u->s;
    char pos[160], left[512];
    where(u, pos, sizeof pos);
    /* what the capture holds at the positions in use (it grows with them) */
    double mb = (double)as_view_capture_used(s) / (1 << 20);
    snprintf(left, sizeof left, " %s %s %s %s ctx %d/%d %s capture %.*f MB%s ", as_view_model_name(s),
             tf_glyph(G_SEP, u->t.utf8), pos, tf_glyph(G_SEP, u->t.utf8), as_view_n_tokens(s), as_view_n_ctx(s),
             tf_glyph(G_SEP, u->t.utf8), mb < 10 ? 1 : 0, mb, as_view_dropped_some(s) ? " (some dropped)" : "");
    term_role(&u->t, w, R_STATUS);
    werase(w);
    mvwprintw(w, 0, 0, "%*s", cols, "");
    int used = put_text(u, w, 0, 0, left, cols);
    /* The keys, right-aligned, if they fit; else the two that lead to the rest. */
    const pane_class *focus = u->panes[u->focus];
    bool encoder = !as_view_causal(s);
    const char *keys = focus->keys ? focus->keys : encoder ? VIEW_KEYS_ENCODER : VIEW_KEYS;
    if (used + (int)strlen(keys) + 2 > cols)
        keys = focus->keys_short ? focus->keys_short : VIEW_KEYS_SHORT;
    int kw = (int)strlen(keys);
    if (used + kw + 2 <= cols) {
        term_role(&u->t, w, R_STATUS_KEY);
        put_text(u, w, 0, cols - kw - 1, keys, kw);
    }
    term_role(&u->t, w, R_NORMAL);
    wnoutrefresh(w);
}

const pane_class pane_status = {
    .name = "status",
    .shows = SHOWS_LAYER | SHOWS_HEAD | SHOWS_DATA | SHOWS_FOCUS | SHOWS_BUSY,
    .draw = draw,
};
