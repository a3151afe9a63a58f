/* popup: where the Output pane is hidden (a small screen shows one side
 * pane at a time), what a typed command printed, in a box over the bottom
 * of the screen until the next key, so nothing a command says is lost. */
#include <string.h>

#include "textfmt.h"
#include "tui.h"

static role kind_role(log_kind k)
{
    return k == LOG_ERROR ? R_ERROR : k == LOG_WARN ? R_WARN : k == LOG_HINT ? R_HINT : R_NORMAL;
}

/* Visual lines (wrapped to width) of the log lines from `from` on. */
static int count_rows(const tui *u, long from, int width)
{
    int starts[256], rows = 0;
    for (long n = from; n < u->log.total; n++) {
        const log_line *l = log_get_added(&u->log, n);
        int k = l && l->cells && l->kind == LOG_OUT ? 1 : l ? tf_wrap(l->text, width, u->t.utf8, starts, 256) : 0; /* a table row: one */
        rows += k < 1 ? 1 : k > 256 ? 256 : k;
    }
    return rows;
}

/* A table's row (a run of lines with tab-separated cells, from `from` on)
 * aligned and cut at width, as the Output pane draws it. */
static void table_row(tui *u, WINDOW *w, long from, long n, int y, int width)
{
    long a = n, b = n;
    const log_line *l;
    while (a > from && (l = log_get_added(&u->log, a - 1)) && l->cells && l->kind == LOG_OUT)
        a--;
    while ((l = log_get_added(&u->log, b + 1)) && l->cells && l->kind == LOG_OUT)
        b++;
    int widths[TF_TABLE_COLS] = {0};
    for (long i = a; i <= b; i++)
        tf_table_widths(log_get_added(&u->log, i)->cells, u->t.utf8, widths, TF_TABLE_COLS);
    char row[2048];
    tf_table_format(log_get_added(&u->log, n)->cells, widths, TF_TABLE_COLS, u->t.utf8, row, sizeof row);
    term_role(&u->t, w, R_NORMAL);
    put_text(u, w, y, 2, row, width);
}

/* Draws the wrapped lines, skipping the first `skip` visual lines. */
static void draw_lines(tui *u, WINDOW *w, long from, int width, int skip, int y, int last_y)
{
    for (long n = from; n < u->log.total && y <= last_y; n++) {
        const log_line *l = log_get_added(&u->log, n);
        if (!l)
            continue;
        if (l->cells && l->kind == LOG_OUT) {
            if (skip > 0)
                skip--;
            else
                table_row(u, w, from, n, y++, width);
            continue;
        }
        int starts[256], k = tf_wrap(l->text, width, u->t.utf8, starts, 256);
        k = k < 1 ? 1 : k > 256 ? 256 : k;
        term_role(&u->t, w, kind_role(l->kind));
        for (int i = 0; i < k && y <= last_y; i++) {
            if (skip > 0) {
                skip--;
                continue;
            }
            int end = i + 1 < k ? starts[i + 1] : (int)strlen(l->text);
            while (end > starts[i] && l->text[end - 1] == ' ')
                end--;
            char seg[1024];
            snprintf(seg, sizeof seg, "%.*s", end - starts[i], l->text + starts[i]);
            put_text(u, w, y++, 2, seg, width);
        }
    }
}

void popup_draw(tui *u)
{
    int cols = u->lay.cols, width = cols - 4, max_h = (u->lay.rows - 2) / 2;
    if (max_h < 3 || width < 8)
        return;
    int rows = count_rows(u, u->popup_from, width), inner = rows < max_h - 2 ? rows : max_h - 2;
    bool cut = rows > inner;
    int h = inner + 2, y0 = u->lay.rows - 2 - h;
    WINDOW *w = overlay_box(u, h, cols, y0, 0);
    if (!w)
        return;
    mvwaddstr(w, 0, 2, " Output ");
    const char *note = cut ? " the start is cut: 6 opens the Output pane  any key closes " : " any key closes ";
    if ((int)strlen(note) + 12 < cols) {
        term_role(&u->t, w, R_DIM);
        put_text(u, w, 0, cols - tf_width(note, u->t.utf8) - 2, note, cols - 12);
    }
    /* The newest lines, where the command's answer ends. */
    draw_lines(u, w, u->popup_from, width, rows - inner, 1, inner);
    term_role(&u->t, w, R_NORMAL);
    wnoutrefresh(w);
    delwin(w);
}
