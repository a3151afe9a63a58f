/* frame: what every pane shares: its box and title (the focused pane's in
 * the accent colour), a centred message for an empty pane, text cut to a
 * width, and token pieces with their whitespace made visible. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "textfmt.h"
#include "tui.h"

int put_text(tui *u, WINDOW *w, int y, int x, const char *s, int width)
{
    char buf[1024];
    if (width <= 0)
        return 0;
    int used = tf_fit(s, width, u->t.utf8, buf, sizeof buf);
    mvwaddstr(w, y, x, buf);
    return used;
}

void draw_box(const tui *u, WINDOW *w)
{
    /* Outside UTF-8, plain ASCII rather than the terminal's line-drawing
     * set, which not every terminal (or capture) shows. */
    if (u->t.utf8)
        box(w, 0, 0);
    else
        wborder(w, '|', '|', '-', '-', '+', '+', '+', '+');
}

WINDOW *overlay_box(const tui *u, int h, int w, int y, int x)
{
    WINDOW *win = newwin(h, w, y, x);
    if (!win)
        return NULL;
    werase(win);
    term_role(&u->t, win, R_BORDER_FOCUS);
    draw_box(u, win);
    term_role(&u->t, win, R_TITLE_FOCUS);
    return win;
}

void pane_frame(tui *u, pane_id p, const char *title, const char *note)
{
    WINDOW *w = u->win[p];
    werase(w);
    term_role(&u->t, w, u->focus == p ? R_BORDER_FOCUS : R_BORDER);
    draw_box(u, w);
    pane_frame_top(u, p, title, note);
}

void pane_frame_top(tui *u, pane_id p, const char *title, const char *note)
{
    WINDOW *w = u->win[p];
    bool focus = u->focus == p;
    int cols = getmaxx(w);
    if (cols > 2) { /* the top border again under a new title */
        term_role(&u->t, w, focus ? R_BORDER_FOCUS : R_BORDER);
        mvwhline(w, 0, 1, u->t.utf8 ? ACS_HLINE : '-', cols - 2);
    }
    int used = 0;
    if (title) {
        term_role(&u->t, w, focus ? R_TITLE_FOCUS : R_TITLE);
        mvwaddstr(w, 0, 1, " ");
        used = put_text(u, w, 0, 2, title, cols - 6) + 3;
        waddstr(w, " ");
    }
    if (note && *note) {
        int nw = tf_width(note, u->t.utf8);
        if (used + nw + 6 < cols) {
            term_role(&u->t, w, R_DIM);
            mvwaddstr(w, 0, cols - nw - 4, " ");
            put_text(u, w, 0, cols - nw - 3, note, nw);
            waddstr(w, " ");
        }
    }
    term_role(&u->t, w, R_NORMAL);
}

void pane_message(tui *u, pane_id p, const char *msg)
{
    WINDOW *w = u->win[p];
    int rows = getmaxy(w) - 2, cols = getmaxx(w) - 4, starts[16];
    if (rows < 1 || cols < 1)
        return;
    int n = tf_wrap(msg, cols, u->t.utf8, starts, 16);
    if (n > 16)
        n = 16;
    int y0 = 1 + (rows - n) / 2;
    term_role(&u->t, w, R_HINT);
    for (int i = 0; i < n && y0 + i <= rows; i++) {
        int end = i + 1 < n ? starts[i + 1] : (int)strlen(msg);
        char line[512];
        while (end > starts[i] && msg[end - 1] == ' ')
            end--;
        snprintf(line, sizeof line, "%.*s", end - starts[i], msg + starts[i]);
        put_text(u, w, y0 + i, 2, line, cols);
    }
    term_role(&u->t, w, R_NORMAL);
}

void token_label(const tui *u, int pos, char *out, size_t cap)
{
    stream_label(u, as_view_out_stream(u->s), pos, out, cap);
}

void stream_label(const tui *u, int stream, int pos, char *out, size_t cap)
{
    /* Through the stream: a token's piece, or the position's name (CLS, r3c5). */
    as_position at;
    as_interp_position(as_view_interp(u->s), stream, pos, &at);
    if (at.token < 0)
        snprintf(out, cap, "%s", at.name);
    else
        piece_label(u, at.token, out, cap);
}

void piece_label(const tui *u, int32_t id, char *out, size_t cap)
{
    const as_tokenizer *tok = as_view_tokenizer(u->s);
    char bytes[256];
    size_t n = as_tokenizer_token_bytes(tok, id, bytes, sizeof bytes);
    if (n == 0) {
        /* BOS/EOS stand for no text: show their stored name. */
        const char *piece = as_tokenizer_piece(tok, id);
        snprintf(out, cap, "%s", piece ? piece : "?");
        return;
    }
    tf_piece_visible(bytes, n, u->t.utf8, out, cap);
}

bool vocab_scratch(tui *u)
{
    int n = as_view_n_vocab(u->s);
    if (!u->probs)
        u->probs = malloc((size_t)n * sizeof *u->probs);
    if (!u->order)
        u->order = malloc((size_t)n * sizeof *u->order);
    return u->probs && u->order;
}

void put_text_in(tui *u, WINDOW *w, int y, int x, const char *s, int width, int look, int attr)
{
    term_role_attr(&u->t, w, look, attr);
    put_text(u, w, y, x, s, width);
    term_role(&u->t, w, R_NORMAL);
}

long long tui_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}
