/* pane_probs: the next-token distribution after the selected token (from
 * the captured logits, or the interpreter's last ones): the top tokens
 * with probability bars in eighth blocks, and the token that actually
 * came next marked: generated, or from the prompt. Probabilities are the
 * softmax of the logits at the sampler's temperature (`set temp`), so the
 * bars are the odds `gen` draws from; at temperature 0 (greedy, which
 * takes the top token) at temperature 1, as `top` prints them.
 * Where the output stream is not causal (an encoder's masked-LM head),
 * the predictions at the selected token itself, at temperature 1 (nothing
 * is sampled from them), the token there marked. A classifier (a ViT):
 * its classes at the position the program reads them ([CLS]), whatever
 * token is selected. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "textfmt.h"
#include "tui.h"

/* Logits after position q, or NULL if not computed (or not captured). */
static const float *logits_at(const tui *u, int q)
{
    const as_session *s = u->s;
    if (as_view_logits_pos(s) >= 0)
        return as_interp_logits(as_view_interp(s));
    int h = as_program_hook(as_view_program(s), AS_HK_LOGITS, -1);
    if (h >= 0 && as_capture_has(as_view_capture(s), h) && as_view_filled(s, h) > q)
        return as_capture_row(as_view_capture(s), h, q);
    return q == as_view_n_done(s) - 1 ? as_interp_logits(as_view_interp(s)) : NULL;
}

/* The temperature the pane's probabilities are at: the sampler's, or 1
 * when it is greedy. */
static bool encoder(const tui *u)
{
    return !as_view_causal(u->s);
}

/* An encoder's predictions are not sampled: temperature 1. */
static float pane_temp(const tui *u)
{
    float t = as_view_temp(u->s);
    return t > 0 && !encoder(u) ? t : 1.0f;
}

/* Softmax of logits / temp into probs: the sampler's own (a NaN logit
 * gets 0, as `top` and `gen` give it). */
static void probs_at(const tui *u, const float *logits, int n, float *probs)
{
    as_probs_temp(logits, n, pane_temp(u), probs);
}

static int rank_of(const tui *u, int id)
{
    int n = as_view_n_vocab(u->s), r = 1;
    for (int i = 0; i < n; i++)
        r += u->probs[i] > u->probs[id];
    return r;
}

static void draw_row(tui *u, WINDOW *w, int y, int rank, int id, int next, const char *mark, int cols)
{
    char piece[96], cut[96], bar[512], pct[16];
    piece_label(u, id, piece, sizeof piece);
    tf_fit(piece, 12, u->t.utf8, cut, sizeof cut);
    double p = u->probs[id];
    snprintf(pct, sizeof pct, p >= 0.0995 ? "%5.1f%%" : "%5.2f%%", p * 100);
    /* The bar from column 26 to the border, less the room of the mark
     * (" ◀ generated") after it: the mark never runs into the border. */
    int barw = cols + 2 - 26 - (2 + (int)strlen(mark));
    term_role(&u->t, w, id == next ? R_BAR_MARK : R_DIM);
    if (rank < 1000)
        mvwprintw(w, y, 1, "%3d ", rank);
    else
        mvwaddstr(w, y, 1, "1k+ "); /* a rank past the top, in the room of three digits */
    term_role_attr(&u->t, w, R_NORMAL, id == next ? A_BOLD : A_NORMAL);
    put_text(u, w, y, 5, cut, 12);
    term_role(&u->t, w, R_NORMAL);
    mvwaddstr(w, y, 18, pct);
    tf_bar(p, barw > 0 ? barw : 0, u->t.utf8, bar, sizeof bar);
    term_role(&u->t, w, id == next ? R_BAR_MARK : R_BAR);
    mvwaddstr(w, y, 25, " ");
    waddstr(w, bar);
    if (id == next) {
        term_role_attr(&u->t, w, R_BAR_MARK, A_BOLD);
        waddstr(w, " ");
        waddstr(w, tf_glyph(G_MARK, u->t.utf8));
        waddstr(w, mark);
    }
    term_role(&u->t, w, R_NORMAL);
}

/* When the selected token was generated: its probability and rank in the
 * distribution before it (shown under the list, as the list itself
 * already looks one token ahead). "Generated", not "sampled": greedy
 * decoding draws nothing. Returns 1 if a line was drawn. */
static int sampled_line(tui *u, WINDOW *w, int y, int q, int cols)
{
    const float *prev = q >= 1 && q >= as_view_n_prompt(u->s) ? logits_at(u, q - 1) : NULL;
    if (!prev)
        return 0;
    int n = as_view_n_vocab(u->s), id = as_view_token(u->s, q);
    char piece[96], line[256], pct[16];
    probs_at(u, prev, n, u->probs);
    token_label(u, q, piece, sizeof piece);
    /* As the list prints it: 99.97% as 100.0%, never %g's 1e+02. */
    double p = (double)u->probs[id] * 100;
    snprintf(pct, sizeof pct, p >= 9.95 ? "%.1f" : "%.2g", p);
    const char *lq = u->t.utf8 ? "‘" : "'", *rq = u->t.utf8 ? "’" : "'";
    snprintf(line, sizeof line, "%s%s%s at %d was generated: p %s%% before it, rank %d", lq, piece, rq, q, pct,
             rank_of(u, id));
    if (tf_width(line, u->t.utf8) > cols - 1) /* a narrow pane (120x35): the same, shorter */
        snprintf(line, sizeof line, "generated %s%s%s at %d had p %s%%, rank %d", lq, piece, rq, q, pct, rank_of(u, id));
    term_role(&u->t, w, R_HINT);
    put_text(u, w, y, 2, line, cols - 1);
    term_role(&u->t, w, R_NORMAL);
    return 1;
}

static void draw_list(tui *u, WINDOW *w, const float *logits, int q)
{
    int rows = getmaxy(w) - 2, cols = getmaxx(w) - 3, n = as_view_n_vocab(u->s);
    if (rows > 4 && !encoder(u))
        rows -= sampled_line(u, w, rows, q, cols);
    int next = q + 1 < as_view_n_tokens(u->s) ? as_view_token(u->s, q + 1) : -1;
    const char *mark = q + 1 >= as_view_n_prompt(u->s) ? " generated" : " next";
    if (encoder(u))
        next = as_view_token(u->s, q), mark = " here";
    if (as_view_logits_pos(u->s) >= 0)
        next = -1; /* a classifier's inputs are no classes */
    probs_at(u, logits, n, u->probs);
    int k = as_top_indices(logits, n, rows, u->order);
    bool shown = false;
    for (int i = 0; i < k; i++)
        shown |= u->order[i] == next;
    /* The token that came next, if outside the top, takes the last row. */
    if (next >= 0 && !shown && k == rows && k > 1)
        k--;
    for (int i = 0; i < k; i++)
        draw_row(u, w, 1 + i, i + 1, u->order[i], next, mark, cols);
    if (next >= 0 && !shown)
        draw_row(u, w, 1 + k, rank_of(u, next), next, next, mark, cols);
}

static void draw(tui *u)
{
    WINDOW *w = u->win[P_PROBS];
    int q = u->v.query;
    char title[128], piece[96];
    if (as_view_n_tokens(u->s) == 0) {
        pane_frame(u, P_PROBS, "Next token", NULL);
        pane_message(u, P_PROBS, "No context yet.");
        wnoutrefresh(w);
        return;
    }
    if (as_view_logits_pos(u->s) >= 0)
        q = as_view_logits_pos(u->s);
    token_label(u, q, piece, sizeof piece);
    if (as_view_logits_pos(u->s) >= 0)
        snprintf(title, sizeof title, "Classes at %s", piece);
    else
        snprintf(title, sizeof title, encoder(u) ? "Predictions at %d %s" : "Next token after %d %s", q, piece);
    char note[48];
    if (as_view_temp(u->s) > 0 && !encoder(u))
        snprintf(note, sizeof note, "p at temp %g", (double)as_view_temp(u->s));
    else
        snprintf(note, sizeof note, encoder(u) ? "p at temp 1" : "greedy, p at temp 1");
    pane_frame(u, P_PROBS, title, note);
    const float *logits = logits_at(u, q);
    if (!logits)
        pane_message(u, P_PROBS, encoder(u) ? "No predictions yet:  f  finishes the pass."
                                            : "No logits here yet:  f  finishes the pass,  Space  generates a token.");
    else if (vocab_scratch(u))
        draw_list(u, w, logits, q);
    wnoutrefresh(w);
}

/* Where the program ends in logits over a vocabulary. */
static bool applies(const tui *u)
{
    return as_program_hook(as_view_program(u->s), AS_HK_LOGITS, -1) >= 0;
}

const pane_class pane_probs = {
    .name = "Next token",
    .shows = SHOWS_QUERY | SHOWS_DATA,
    .focusable = true,
    .applies = applies,
    .draw = draw,
};
