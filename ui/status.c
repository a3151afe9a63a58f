/* status: one line saying where things stand (the model, the layer and op
 * the interpreter stands at, the context length, the capture's memory)
 * and the keys that matter for the focused pane (its class's, else the
 * view's). */
#include <string.h>

#include "textfmt.h"
#include "tui.h"

static void where(const tui *u, char *out, size_t cap)
{
    const as_interp *it = u->s->it;
    const as_op *op = as_interp_current(it);
    if (u->busy)
        snprintf(out, cap, "running %s", u->running);
    else if (it->out->n_tokens == 0)
        snprintf(out, cap, u->s->prog->streams[u->s->prog->out_stream].input == AS_INPUT_PIXELS ? "no image"
                                                                                               : "no context");
    else if (it->in_pass && op && op->layer >= 0)
        snprintf(out, cap, "layer %d  op %d/%d %s", op->layer, it->pc + 1, u->s->prog->n_ops, op->text);
    else if (it->in_pass && op)
        snprintf(out, cap, "op %d/%d %s", it->pc + 1, u->s->prog->n_ops, op->text);
    else if (it->out->n_done < it->out->n_tokens)
        snprintf(out, cap, "ready to run positions %d-%d", it->out->n_done, it->out->n_tokens - 1);
    else if (u->s->prog->logits_pos >= 0 && as_interp_logits(it))
        snprintf(out, cap, "pass done, classes ready");
    else if (!u->s->prog->streams[u->s->prog->out_stream].causal)
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
    double mb = (double)s->cap->used / (1 << 20);
    snprintf(left, sizeof left, " %s %s %s %s ctx %d/%d %s capture %.*f MB%s ", s->model->cfg.name,
             tf_glyph(G_SEP, u->t.utf8), pos, tf_glyph(G_SEP, u->t.utf8), s->it->out->n_tokens, s->it->n_ctx,
             tf_glyph(G_SEP, u->t.utf8), mb < 10 ? 1 : 0, mb, s->cap->dropped_from >= 0 ? " (some dropped)" : "");
    term_role(&u->t, w, R_STATUS);
    werase(w);
    mvwprintw(w, 0, 0, "%*s", cols, "");
    int used = put_text(u, w, 0, 0, left, cols);
    /* The keys, right-aligned, if they fit; else the two that lead to the rest. */
    const pane_class *focus = u->panes[u->focus];
    bool encoder = !s->prog->streams[s->prog->out_stream].causal;
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
