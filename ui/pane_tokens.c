/* pane_tokens: the context as a strip of token pieces. Chips alternate
 * shades so that token boundaries show even inside a word; prompt tokens
 * are grey, generated ones amber; the selected query is in the accent
 * colour; the tokens that chose the routing pane's selected expert are
 * red and underlined. A sentence pair (BERT's segments, token types 0
 * and 1): segment B's chips underlined, the title giving its positions
 * and the legend A and B. The strip wraps and scrolls to keep the
 * selection in sight. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "textfmt.h"
#include "tui.h"

/* The pane's state: where the last draw put each chip, for scrolling and clicks. */
typedef struct tokens_state {
    int tok_first_row;
    int tok_first;       /* one row (80x24): the first chip shown, -1 when the strip wraps */
    int tok_rows, *tok_row, *tok_col, tok_n, tok_cap;
} tokens_state;

static tokens_state *state(const tui *u)
{
    return u->pane_state[P_TOKENS];
}

/* Whether a pane marks the token at pos (the routing pane's selected expert's). */
static bool marked(const tui *u, int pos)
{
    for (int p = 0; p < P_COUNT; p++)
        if (u->panes[p]->marks && u->panes[p]->marks(u, pos))
            return true;
    return false;
}

/* An encoder-decoder's strip shows the source first, then an arrow, then
 * the decoder's tokens: chip i of the strip is the source's position i,
 * and the decoder's position i - (n_source + 1) after it. */
static int n_source(const tui *u)
{
    int src = as_view_source_stream(u->s);
    return src >= 0 && as_view_stream_tokens(u->s, src) > 0 ? as_view_stream_tokens(u->s, src) + 1 : 0;
}

static role chip_role(const tui *u, int i)
{
    int ns = n_source(u);
    bool on_source = u->v.site == AS_PICK_SOURCE; /* the encoder's heatmap selects a source position */
    if (i < ns)
        return i == ns - 1 ? R_DIM : on_source && i == u->v.src_query ? R_TOK_SEL : i % 2 ? R_TOK_PROMPT_B : R_TOK_PROMPT_A;
    i -= ns;
    if (i == u->v.query && !on_source)
        return R_TOK_SEL;
    if (i >= as_view_n_prompt(u->s))
        return i % 2 ? R_TOK_GEN_B : R_TOK_GEN_A;
    return i % 2 ? R_TOK_PROMPT_B : R_TOK_PROMPT_A;
}

static bool ensure_positions(tui *u, int n)
{
    if (n <= state(u)->tok_cap)
        return true;
    int *r = realloc(state(u)->tok_row, (size_t)n * sizeof *r);
    if (r)
        state(u)->tok_row = r;
    int *c = realloc(state(u)->tok_col, (size_t)n * sizeof *c);
    if (c)
        state(u)->tok_col = c;
    if (!r || !c)
        return false;
    state(u)->tok_cap = n;
    return true;
}

/* A sentence pair's segment B: the first and last positions of type 1
 * (false where every token is of type 0). */
static bool segment_b(const tui *u, int *first, int *last)
{
    *first = *last = -1;
    for (int i = 0; i < as_view_n_tokens(u->s); i++)
        if (as_view_token_type(u->s, i) != 0) {
            if (*first < 0)
                *first = i;
            *last = i;
        }
    return *first >= 0;
}

/* The legend in the top border: what the two chip colours mean (a
 * pair's: the segments, B underlined). */
static void legend(tui *u, WINDOW *w, const char *title)
{
    int b0, b1;
    bool pair = !as_view_pixels(u->s) && segment_b(u, &b0, &b1);
    int cols = getmaxx(w), x = cols - (pair ? 27 : 24);
    if (x < tf_width(title, u->t.utf8) + 6)
        return;
    if (pair) {
        term_role(&u->t, w, R_TOK_PROMPT_A);
        mvwaddstr(w, 0, x, " A: type 0 ");
        term_role(&u->t, w, R_NORMAL);
        waddstr(w, " ");
        term_role_attr(&u->t, w, R_TOK_PROMPT_A, A_UNDERLINE);
        waddstr(w, " B: type 1 ");
        term_role(&u->t, w, R_NORMAL);
        return;
    }
    term_role(&u->t, w, R_TOK_PROMPT_A);
    mvwaddstr(w, 0, x, " prompt ");
    term_role(&u->t, w, R_NORMAL);
    waddstr(w, " ");
    term_role(&u->t, w, R_TOK_GEN_A);
    waddstr(w, " generated ");
}

static void draw_chips(tui *u, WINDOW *w, int rows, int cols, char (*labels)[96], int n)
{
    int ns = n_source(u);
    for (int i = 0; i < n; i++) {
        int y = state(u)->tok_row[i] - state(u)->tok_first_row;
        if (y < 0 || y >= rows)
            continue;
        role r = chip_role(u, i);
        /* the routing pane's selected expert: the tokens that chose it */
        float sal;
        bool shaded = r != R_TOK_SEL && i >= ns && u->t.style != HM_SHADE && u->t.style != HM_ASCII &&
                      as_view_saliency(u->s, i - ns, &sal);
        if (shaded) { /* `saliency` was run: the chip's background is |share| on the colour scale */
            int bg = hm_slot((hm_sample){.state = HM_VALUE, .v = fabsf(sal)}, u->t.levels);
            term_heat(&u->t, w, term_contrast_slot(&u->t, bg), bg);
            if (sal < 0)
                wattron(w, A_UNDERLINE); /* negative: underlined */
        } else if (r != R_TOK_SEL && i >= ns && marked(u, i - ns))
            term_role_attr(&u->t, w, R_OUTLIER, A_UNDERLINE);
        else if (i >= ns && as_view_token_type(u->s, i - ns) != 0)
            term_role_attr(&u->t, w, r, A_UNDERLINE); /* a pair's segment B */
        else
            term_role(&u->t, w, r);
        put_text(u, w, 1 + y, 2 + state(u)->tok_col[i], labels[i], cols - state(u)->tok_col[i]);
    }
    term_role(&u->t, w, R_NORMAL);
}

static void draw(tui *u)
{
    WINDOW *w = u->win[P_TOKENS];
    int n = as_view_n_tokens(u->s), rows = getmaxy(w) - 2, cols = getmaxx(w) - 4, ns = n_source(u);
    char title[96];
    bool image = as_view_pixels(u->s);
    if (image)
        snprintf(title, sizeof title, "Positions  CLS + %d patches", n > 0 ? n - 1 : 0);
    else if (ns)
        snprintf(title, sizeof title, "Tokens  source %d, target %d prompt + %d generated", ns - 1, as_view_n_prompt(u->s),
                 n - as_view_n_prompt(u->s));
    else
        snprintf(title, sizeof title, "Tokens  %d prompt + %d generated", as_view_n_prompt(u->s), n - as_view_n_prompt(u->s));
    int b0, b1;
    if (!image && !ns && segment_b(u, &b0, &b1)) /* a sentence pair: where B is */
        snprintf(title, sizeof title, "Tokens  %d, a pair: A 0-%d, B %d-%d", n, b0 - 1, b0, b1);
    float sal;
    if (!image && as_view_saliency(u->s, 0, &sal)) /* the chips are shaded */
        snprintf(title + strlen(title), sizeof title - strlen(title), "  shaded by |saliency|, underlined < 0");
    pane_frame(u, P_TOKENS, n ? title : image ? "Positions" : "Tokens", NULL);
    if (!image)
        legend(u, w, n ? title : "Tokens");
    if (n == 0) {
        term_role(&u->t, w, R_HINT);
        put_text(u, w, 1, 2, as_view_pixels(u->s)
                                 ? "No image yet: image FILE at the command line (: opens it)"
                                 : "No context yet: prompt TEXT at the command line (: opens it), or lesson",
                 cols - 2);
        wnoutrefresh(w);
        return;
    }
    n += ns; /* the source's chips and the arrow first */
    char(*labels)[96] = malloc((size_t)n * sizeof *labels);
    int *widths = malloc((size_t)n * sizeof *widths);
    if (!labels || !widths || !ensure_positions(u, n)) {
        free(labels);
        free(widths);
        wnoutrefresh(w);
        return;
    }
    for (int i = 0; i < n; i++) {
        if (i < ns - 1)
            stream_label(u, as_view_source_stream(u->s), i, labels[i], sizeof labels[i]);
        else if (i == ns - 1)
            snprintf(labels[i], sizeof labels[i], " %s ", tf_glyph(G_ARROW, u->t.utf8));
        else
            token_label(u, i - ns, labels[i], sizeof labels[i]);
        widths[i] = tf_width(labels[i], u->t.utf8);
        if (widths[i] == 0)
            widths[i] = 1;
    }
    /* Without colour the chips cannot alternate shades: a gap separates
     * them; so it does between names (CLS, r0c0), which are no text that
     * runs on. */
    bool pixels = as_view_pixels(u->s);
    int gap = u->t.cm == CM_MONO || pixels ? 1 : 0;
    state(u)->tok_rows = tf_strip_layout(widths, n, cols, gap, state(u)->tok_row, state(u)->tok_col);
    state(u)->tok_n = n;
    int sel = u->v.site == AS_PICK_SOURCE && ns ? u->v.src_query : ns + u->v.query;
    if (rows == 1 && state(u)->tok_rows > 1) {
        /* One row (80x24): scrolled by whole chips around the selection,
         * a marker where chips are hidden, rather than wrapped rows
         * shown one at a time (a fragment of the text, a screen a jump). */
        int last, first = state(u)->tok_first < 0 ? 0 : state(u)->tok_first;
        first = tf_strip_window(widths, n, cols, gap, sel, first, cols / 4, &last, state(u)->tok_col);
        state(u)->tok_first = first;
        for (int i = 0; i < n; i++)
            state(u)->tok_row[i] = state(u)->tok_col[i] < 0 ? -1 : 0;
        state(u)->tok_first_row = 0;
        term_role(&u->t, w, R_DIM);
        if (first > 0)
            mvwaddstr(w, 1, 2, tf_glyph(G_ELLIPSIS, u->t.utf8));
        int x = 2 + state(u)->tok_col[last] + widths[last] + gap;
        if (last < n - 1 && x <= cols + 1)
            mvwaddstr(w, 1, x, tf_glyph(G_ELLIPSIS, u->t.utf8));
    } else {
        state(u)->tok_first = -1;
        state(u)->tok_first_row = tf_scroll_follow(state(u)->tok_first_row, state(u)->tok_row[sel], rows, state(u)->tok_rows);
        /* rows scrolled out: a … in the margin before the first row shown
         * and after the last */
        term_role(&u->t, w, R_DIM);
        if (state(u)->tok_first_row > 0)
            mvwaddstr(w, 1, 1, tf_glyph(G_ELLIPSIS, u->t.utf8));
        if (state(u)->tok_first_row + rows < state(u)->tok_rows)
            mvwaddstr(w, rows, cols + 2, tf_glyph(G_ELLIPSIS, u->t.utf8));
    }
    draw_chips(u, w, rows, cols, labels, n);
    free(labels);
    free(widths);
    wnoutrefresh(w);
}

/* Focused: Left/Right pick the token. */
static unsigned key(tui *u, int ch, bool keycode)
{
    if (keycode && (ch == KEY_LEFT || ch == KEY_RIGHT))
        return tui_select_query(u, view_row(&u->v) + (ch == KEY_LEFT ? -1 : 1));
    return RD_IGNORED;
}

/* A click selects the token under it (the last whose chip starts at or
 * before the column, on that row of the strip). */
static unsigned mouse(tui *u, int y, int x, mmask_t buttons)
{
    if (buttons & (BUTTON4_PRESSED | BUTTON5_PRESSED))
        return RD_IGNORED;
    int row = y - 1 + state(u)->tok_first_row, col = x - 2, hit = -1, ns = n_source(u);
    for (int i = 0; i < state(u)->tok_n && i < ns + as_view_n_tokens(u->s); i++)
        if (state(u)->tok_row[i] == row && state(u)->tok_col[i] <= col)
            hit = i;
    /* a source chip is selected on the encoder's heatmap, a target chip elsewhere */
    if (u->v.site == AS_PICK_SOURCE)
        return hit >= 0 && hit < ns - 1 ? tui_select_query(u, hit) : 0;
    return hit >= ns ? tui_select_query(u, hit - ns) : 0;
}

static void *init(void)
{
    return calloc(1, sizeof(tokens_state));
}

static void free_state(void *state)
{
    tokens_state *st = state;
    if (st) {
        free(st->tok_row);
        free(st->tok_col);
    }
    free(st);
}

const pane_class pane_tokens = {
    .name = "Tokens",
    .shows = SHOWS_QUERY | SHOWS_DATA | SHOWS_LAYER, /* the layer: the routing pane's expert's tokens */
    .focusable = true,
    .keys = "<- -> token  Up/Down layer  Tab pane  : command  ? keys  q quit",
    .draw = draw,
    .key = key,
    .mouse = mouse,
    .init = init,
    .free = free_state,
};
