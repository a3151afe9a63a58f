/* pane_log: what commands print, newest at the bottom, wrapped to the
 * pane; the command line's echo, warnings and errors each in their role.
 * A table (a run of output lines with tab-separated cells: `lens table`,
 * `heads`...) is drawn aligned, one screen row per row, cut at the
 * border rather than wrapped, Left/Right scrolling it sideways when
 * focused. PgUp/PgDn (or Up/Down, when focused) scroll back. */
#include <stdlib.h>
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

/* The pane's state: how far tables are scrolled sideways (columns). */
typedef struct log_state {
    int hscroll;
    bool cut;  /* the last draw cut a table at the border */
} log_state;

static log_state *state(const tui *u)
{
    return u->pane_state[P_LOG];
}

static bool table_row(const log_line *l)
{
    return l && l->kind == LOG_OUT && l->cells;
}

/* Table rows first..last, aligned (textfmt's tf_table_*), scrolled by
 * the pane's hscroll, cut at width; bottom row last. Returns the row
 * above what was drawn. */
static int draw_table(tui *u, WINDOW *w, int first, int last, int bottom, int width, int *skip)
{
    int widths[TF_TABLE_COLS] = {0};
    for (int i = first; i <= last; i++)
        tf_table_widths(log_get(&u->log, i)->cells, u->t.utf8, widths, TF_TABLE_COLS);
    term_role(&u->t, w, R_NORMAL);
    for (int i = last; i >= first && bottom >= 1; i--) {
        if (*skip > 0) {
            (*skip)--;
            continue;
        }
        char row[2048];
        tf_table_format(log_get(&u->log, i)->cells, widths, TF_TABLE_COLS, u->t.utf8, row, sizeof row);
        /* sideways, the first column (the rows' names) stays */
        char shown[2048];
        const char *rest = tf_skip_cols(row, widths[0] + 2, u->t.utf8);
        snprintf(shown, sizeof shown, "%.*s%s", (int)(rest - row), row,
                 state(u)->hscroll > 0 ? tf_skip_cols(rest, state(u)->hscroll, u->t.utf8) : rest);
        if (tf_width(shown, u->t.utf8) > width)
            state(u)->cut = true;
        put_text(u, w, bottom--, 2, shown, width);
    }
    return bottom;
}

static void draw(tui *u)
{
    WINDOW *w = u->win[P_LOG];
    int rows = getmaxy(w) - 2, width = getmaxx(w) - 4;
    char note[64] = "";
    int skip = u->log_scroll, bottom = rows;
    bool had_cut = state(u)->cut;
    state(u)->cut = false;
    if (u->log_scroll > 0)
        snprintf(note, sizeof note, "scrolled %d up, PgDn", u->log_scroll);
    else if (had_cut || state(u)->hscroll > 0)
        snprintf(note, sizeof note, "table: 6, then Left/Right");
    pane_frame(u, P_LOG, "Output", note);
    for (int i = u->log.count - 1; i >= 0 && bottom >= 1; i--) {
        if (table_row(log_get(&u->log, i))) {
            int first = i;
            while (first > 0 && table_row(log_get(&u->log, first - 1)))
                first--;
            bottom = draw_table(u, w, first, i, bottom, width, &skip);
            i = first;
        } else {
            bottom = draw_wrapped(u, w, log_get(&u->log, i), bottom, width, &skip);
        }
    }
    if (state(u)->cut != had_cut)
        u->dirty |= RD(P_LOG); /* the note follows what this draw cut */
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
    case KEY_LEFT: case KEY_RIGHT: { /* tables sideways, 8 columns a key */
        int h = state(u)->hscroll + (ch == KEY_RIGHT ? 8 : -8);
        state(u)->hscroll = h < 0 ? 0 : h;
        return RD(P_LOG);
    }
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

static void *init(void)
{
    return calloc(1, sizeof(log_state));
}

const pane_class pane_log = {
    .name = "Output",
    .shows = SHOWS_LOG,
    .focusable = true,
    .keys = "Up/Down PgUp/PgDn scroll  Left/Right table  Tab pane  : command  ? keys  q quit",
    .draw = draw,
    .key = key,
    .mouse = mouse,
    .init = init,
    .free = free,
};
