/* pane_log: what commands print, newest at the bottom, wrapped to the
 * pane; the command line's echo, warnings and errors each in their role.
 * PgUp/PgDn (or arrows, when focused) scroll back. */
#include <string.h>

#include "textfmt.h"
#include "tui.h"

static role kind_role(log_kind k)
{
    switch (k) {
    case LOG_ECHO: return R_ECHO;
    case LOG_WARN: return R_WARN;
    case LOG_ERROR: return R_ERROR;
    case LOG_HINT: return R_HINT;
    default: return R_NORMAL;
    }
}

/* Draws line `text` wrapped, bottom segment at row `bottom`; segments
 * above row 1 are skipped. `skip` segments from the bottom are hidden
 * (scrolling) and consumed. Returns the row above what was drawn. */
static int draw_wrapped(tui *u, WINDOW *w, const log_line *l, int bottom, int width, int *skip)
{
    int starts[256];
    int n = tf_wrap(l->text, width, u->t.utf8, starts, 256);
    if (n > 256)
        n = 256;
    term_role(&u->t, w, kind_role(l->kind));
    for (int i = n - 1; i >= 0 && bottom >= 1; i--) {
        if (*skip > 0) {
            (*skip)--;
            continue;
        }
        int end = i + 1 < n ? starts[i + 1] : (int)strlen(l->text);
        char seg[1024];
        while (end > starts[i] && l->text[end - 1] == ' ')
            end--;
        snprintf(seg, sizeof seg, "%.*s", end - starts[i], l->text + starts[i]);
        put_text(u, w, bottom--, 2, seg, width);
    }
    return bottom;
}

static void draw(tui *u)
{
    WINDOW *w = u->win[P_LOG];
    int rows = getmaxy(w) - 2, width = getmaxx(w) - 4;
    char note[48] = "";
    if (u->log_scroll > 0)
        snprintf(note, sizeof note, "scrolled %d up, PgDn", u->log_scroll);
    pane_frame(u, P_LOG, "Output", note);
    int skip = u->log_scroll, bottom = rows;
    for (int i = u->log.count - 1; i >= 0 && bottom >= 1; i--)
        bottom = draw_wrapped(u, w, log_get(&u->log, i), bottom, width, &skip);
    if (skip > 0 && u->log_scroll > 0) {
        /* Scrolled past the oldest line: pull back next time. */
        u->log_scroll -= skip;
        u->dirty |= RD(P_LOG);
    }
    term_role(&u->t, w, R_NORMAL);
    wnoutrefresh(w);
}

unsigned pane_log_scroll(tui *u, int d)
{
    u->log_scroll += d;
    if (u->log_scroll < 0)
        u->log_scroll = 0;
    return RD(P_LOG);
}

/* Focused: Up/Down scroll a line, PgUp/PgDn a pane's height. */
static unsigned key(tui *u, int ch, bool keycode)
{
    int page = u->lay.r[P_LOG].h > 3 ? u->lay.r[P_LOG].h - 3 : 1;
    if (!keycode)
        return RD_IGNORED;
    switch (ch) {
    case KEY_UP: return pane_log_scroll(u, 1);
    case KEY_DOWN: return pane_log_scroll(u, -1);
    case KEY_PPAGE: return pane_log_scroll(u, page);
    case KEY_NPAGE: return pane_log_scroll(u, -page);
    default: return RD_IGNORED;
    }
}

static unsigned mouse(tui *u, int y, int x, mmask_t buttons)
{
    if (buttons & BUTTON4_PRESSED)
        return pane_log_scroll(u, 3);
    if (buttons & BUTTON5_PRESSED)
        return pane_log_scroll(u, -3);
    return RD_IGNORED;
}

const pane_class pane_log = {
    .name = "Output",
    .shows = SHOWS_LOG,
    .focusable = true,
    .keys = "Up/Down PgUp/PgDn scroll  Tab pane  : command  ? keys  q quit",
    .draw = draw,
    .key = key,
    .mouse = mouse,
};
