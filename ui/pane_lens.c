/* pane_lens: the logit lens at the selected token. The residual stream
 * after the embeddings and after every layer, read through the final norm
 * and the unembedding as if the model stopped there: per layer, the top
 * tokens with their probabilities, and the rank and probability of the
 * token finally chosen (the one generated after the selected token, else
 * the model's own top token there). The same numbers as `lens POS`; the
 * selected layer's row is highlighted. Computed once per (pass, token) and
 * kept, since a large vocabulary makes each layer's row a big product.
 *
 * A redraw's bound (the one the zoomed-out cells have, u->cell_budget_ms,
 * from the redraw's start):
 * the layers are unembedded LENS_CHUNK at a time, the last layer first
 * (it names the final top token), until the bound is spent; the rows not
 * yet made are drawn "computing", never as a guess, and the view goes on
 * with them while no key waits (u->lens_late), as with the cells. */
#include <stdlib.h>
#include <string.h>

#include "textfmt.h"
#include "tui.h"

#define LENS_TOP 3
#define LENS_CHUNK 4 /* layers per product: one pass over the unembedding serves them */

struct lens_cache {
    unsigned long key[2];  /* the interpreter's generation, the selected token */
    int rows;              /* layers + 1 */
    int done;              /* rows made, from the last: rows - done .. rows - 1 */
    int chosen;            /* the token finally chosen */
    bool generated;        /* chosen was generated after the selected token */
    int top[257][LENS_TOP];
    float p[257][LENS_TOP];
    float chosen_p[257];
    int chosen_rank[257];
};

static const float *resid_at(const tui *u, int layer, int q)
{
    const as_session *s = u->s;
    int h = layer < 0 ? as_program_hook(as_view_program(s), AS_HK_RESID_PRE, 0)
                      : as_program_hook(as_view_program(s), as_view_lens_kind(s), layer);
    if (h < 0 || !as_capture_has(as_view_capture(s), h) || as_view_filled(s, h) <= q)
        return NULL;
    return as_capture_row(as_view_capture(s), h, q);
}

/* The rows [first, first + n) of the cache from their logits. */
static void fill_rows(tui *u, struct lens_cache *cache, int first, int n, const float *all)
{
    int V = as_view_n_vocab(u->s);
    for (int row = first + n - 1; row >= first; row--) { /* the last layer first: it names the final top token */
        const float *logits = all + (size_t)(row - first) * V;
        as_probs(logits, V, u->probs);
        as_top_indices(logits, V, LENS_TOP, cache->top[row]);
        for (int k = 0; k < LENS_TOP; k++)
            cache->p[row][k] = u->probs[cache->top[row][k]];
        if (cache->chosen < 0)
            cache->chosen = cache->top[row][0];
        int rank = 1;
        for (int v = 0; v < V; v++)
            rank += logits[v] > logits[cache->chosen];
        cache->chosen_rank[row] = rank;
        cache->chosen_p[row] = u->probs[cache->chosen];
    }
}

/* Makes the cache's rows for token q, as many as the redraw's bound
 * allows (all of them when there is none); false when the residual
 * stream is not there (not computed yet, or dropped by the capture budget). */
static bool compute(tui *u, int q)
{
    struct lens_cache *cache = u->pane_state[P_LENS];
    const as_session *s = u->s;
    int L = as_view_n_layer(s), V = as_view_n_vocab(s);
    /* the interpreter's gen changes with every value computed: nothing cached outlives what it was made from */
    unsigned long key[2] = {as_view_gen(s), (unsigned long)q};
    bool same = cache->rows && !memcmp(key, cache->key, sizeof key);
    if (same && cache->done == cache->rows)
        return true;
    if (L + 1 > 257 || !vocab_scratch(u))
        return false;
    const float *rows[257];
    for (int l = -1; l < L; l++)
        if (!(rows[l + 1] = resid_at(u, l, q)))
            return false;
    if (!same) {
        cache->rows = L + 1;
        cache->done = 0;
        cache->generated = q + 1 < as_view_n_tokens(s) && q + 1 >= as_view_n_prompt(s);
        cache->chosen = cache->generated ? as_view_token(s, q + 1) : -1;
        memcpy(cache->key, key, sizeof key);
    }
    float *all = malloc((size_t)LENS_CHUNK * (size_t)V * sizeof *all);
    /* the redraw's bound, what the attention cells before it left of it */
    double deadline = u->redraw_t0_ms + u->cell_budget_ms;
    while (all && cache->done < cache->rows) {
        int n = cache->rows - cache->done < LENS_CHUNK ? cache->rows - cache->done : LENS_CHUNK;
        int first = cache->rows - cache->done - n;
        if (as_lens_logits_rows(as_view_program(s), rows + first, n, all))
            break;
        fill_rows(u, cache, first, n, all);
        cache->done += n;
        if (u->cell_budget_ms >= 0 && (double)tui_now_ns() / 1e6 >= deadline) /* a chunk at least, every redraw */
            break;
    }
    free(all);
    if (!cache->done) { /* out of memory: nothing to show */
        cache->rows = 0;
        return false;
    }
    return true;
}

static void piece_of(const tui *u, int id, char *out, size_t cap, int width)
{
    char piece[96];
    piece_label(u, id, piece, sizeof piece);
    tf_fit(piece, width, u->t.utf8, out, cap);
}

/* One layer's row: label, top-1 piece, its bar and probability, the
 * other top tokens as room allows, and the chosen token's rank at the right. */
static void draw_layer(tui *u, WINDOW *w, int y, int row, int cols)
{
    const struct lens_cache *cache = u->pane_state[P_LENS];
    char label[16], piece[96], pct[16], bar[256], rank[32];
    bool sel = row - 1 == u->v.layer;
    snprintf(label, sizeof label, row ? "L%d" : "emb", row - 1);
    term_role_attr(&u->t, w, sel ? R_LABEL_SEL : R_LABEL, sel ? A_BOLD : A_NORMAL);
    mvwprintw(w, y, 2, "%-4s", label);
    if (row < cache->rows - cache->done) { /* not made yet: no number drawn */
        term_role(&u->t, w, R_DIM);
        put_text(u, w, y, 7, "computing", cols - 7);
        term_role(&u->t, w, R_NORMAL);
        return;
    }
    int right = 13; /* "#rank  p%" of the chosen token */
    int x = 7, room = cols - x - right;
    for (int k = 0; k < LENS_TOP && room >= 16; k++) {
        int id = cache->top[row][k];
        float p = cache->p[row][k];
        int pw = k == 0 ? 10 : 8;
        piece_of(u, id, piece, sizeof piece, pw);
        snprintf(pct, sizeof pct, p >= 0.0995f ? "%4.0f%%" : "%4.1f%%", (double)p * 100);
        term_role_attr(&u->t, w, id == cache->chosen ? R_BAR_MARK : R_NORMAL,
                       k == 0 ? A_BOLD : A_NORMAL);
        put_text(u, w, y, x, piece, pw);
        x += pw + 1;
        term_role(&u->t, w, R_DIM);
        mvwaddstr(w, y, x, pct);
        x += 6;
        room = cols - x - right;
        if (k == 0 && room >= 22) {
            /* The top token's probability as a short bar. */
            int bw = room >= 40 ? 8 : 4;
            tf_bar(p, bw, u->t.utf8, bar, sizeof bar);
            term_role(&u->t, w, id == cache->chosen ? R_BAR_MARK : R_BAR);
            mvwaddstr(w, y, x, bar);
            x += bw + 1;
        }
        x += 1;
        room = cols - x - right;
    }
    snprintf(rank, sizeof rank, "#%-4d%5.1f%%", cache->chosen_rank[row], (double)cache->chosen_p[row] * 100);
    term_role_attr(&u->t, w, cache->chosen_rank[row] == 1 ? R_BAR_MARK : R_DIM,
                   cache->chosen_rank[row] == 1 ? A_BOLD : A_NORMAL);
    mvwaddstr(w, y, cols - right + 1, rank);
    term_role(&u->t, w, R_NORMAL);
}

static void draw(tui *u)
{
    WINDOW *w = u->win[P_LENS];
    int q = u->v.query;
    char title[160], piece[96], chosen[64];
    if (as_view_n_tokens(u->s) == 0) {
        pane_frame(u, P_LENS, "Logit lens", NULL);
        pane_message(u, P_LENS, "No context yet.");
        wnoutrefresh(w);
        return;
    }
    token_label(u, q, piece, sizeof piece);
    snprintf(title, sizeof title, "Logit lens at %d %s", q, piece);
    bool made = compute(u, q);
    const struct lens_cache *cache = u->pane_state[P_LENS];
    u->lens_late = made && cache->done < cache->rows;
    if (!made) {
        pane_frame(u, P_LENS, title, NULL);
        int rp = as_program_hook(as_view_program(u->s), as_view_lens_kind(u->s), 0);
        char dropped[160];
        snprintf(dropped, sizeof dropped, "The capture budget dropped the residual stream: --capture-mb %zu keeps it "
                 "at these positions (info).", as_view_keep_mb(u->s));
        const char *why = as_view_n_layer(u->s) + 1 > 257 ? "Too many layers for this pane: the `lens` command shows them."
                          : rp >= 0 && !as_capture_has(as_view_capture(u->s), rp) ? dropped
                          : !u->probs || !u->order ? "Out of memory for the lens."
                                                   : "Not computed yet:  f  finishes the pass.";
        pane_message(u, P_LENS, why);
        wnoutrefresh(w);
        return;
    }
    piece_of(u, cache->chosen, chosen, sizeof chosen, 10);
    char note[96];
    if (u->lens_late)
        snprintf(note, sizeof note, "computing %d%%", 100 * cache->done / cache->rows);
    else
        snprintf(note, sizeof note, "%s %s", cache->generated ? "rank of generated" : "rank of final top", chosen);
    pane_frame(u, P_LENS, title, note);
    int rows = getmaxy(w) - 2, cols = getmaxx(w) - 2;
    /* More layers than rows: keep the last ones (where the answer forms)
     * and the selected layer in view. */
    int first = cache->rows > rows ? cache->rows - rows : 0;
    if (u->v.layer + 1 < first)
        first = u->v.layer + 1;
    for (int i = 0; i < rows && first + i < cache->rows; i++)
        draw_layer(u, w, 1 + i, first + i, cols);
    wnoutrefresh(w);
}

/* The cache, empty (the state: `load` makes it another model's). */
static void *init(void)
{
    return calloc(1, sizeof(struct lens_cache));
}

static void reset(void *state)
{
    memset(state, 0, sizeof(struct lens_cache));
}

/* Where there is a residual stream after each layer to read through the
 * final norm and the unembedding. */
static bool applies(const tui *u)
{
    const as_program *p = as_view_program(u->s);
    return as_program_hook(p, as_view_lens_kind(u->s), 0) >= 0 && as_program_hook(p, AS_HK_LOGITS, -1) >= 0 &&
           !as_view_no_lens(u->s);
}

const pane_class pane_lens = {
    .name = "Logit lens",
    .shows = SHOWS_LAYER | SHOWS_QUERY | SHOWS_DATA,
    .focusable = true,
    .applies = applies,
    .draw = draw,
    .init = init,
    .reset = reset,
    .free = free,
};
