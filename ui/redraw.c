/* redraw: the view's windows, made for the layout of the terminal's
 * size, and the drawing of the panes whose redraw bits are set, then of
 * the overlays (a lesson's step, a command's output, the keys) over them. */
#include "textfmt.h"
#include "tui.h"

void drop_windows(tui *u)
{
    for (int p = 0; p < P_COUNT; p++)
        if (u->win[p]) {
            delwin(u->win[p]);
            u->win[p] = NULL;
        }
}

static void relayout(tui *u)
{
    int rows, cols;
    getmaxyx(stdscr, rows, cols);
    /* The pane looked at: the focused one, or the one Esc returns to. */
    pane_id at = u->focus == P_CMD ? u->last_pane : u->focus;
    if (PANE_IS_SIDE(at))
        u->shared = at;
    u->present = panes_present(u);
    layout_compute_for(&u->lay, rows, cols, layout_single(rows) && !PANE_IS_SIDE(at) ? (at == P_ROUTE ? P_ROUTE : P_ATTN) : u->shared,
                       u->present);
    u->shared = u->lay.shown;
    drop_windows(u);
    /* stdscr lies under the panes: refreshed once here, then untouched,
     * so reading keys from it never paints over them. */
    werase(stdscr);
    wnoutrefresh(stdscr);
    for (int p = 0; p < P_COUNT && !u->lay.too_small; p++) {
        rect r = u->lay.r[p];
        if (r.h <= 0 || r.w <= 0)
            continue;
        u->win[p] = newwin(r.h, r.w, r.y, r.x);
        if (u->win[p])
            leaveok(u->win[p], !pane_classes[p]->cursor);
    }
    u->dirty |= RD_PANES;
}

static void centred(tui *u, int y, const char *s)
{
    int w = tf_width(s, u->t.utf8), x = (u->lay.cols - w) / 2;
    if (y >= 0 && y < u->lay.rows)
        put_text(u, stdscr, y, x > 0 ? x : 0, s, u->lay.cols);
}

static void draw_too_small(tui *u)
{
    char need[48], have[48];
    snprintf(need, sizeof need, "need %dx%d", LAYOUT_MIN_W, LAYOUT_MIN_H);
    snprintf(have, sizeof have, "have %dx%d", u->lay.cols, u->lay.rows);
    werase(stdscr);
    int y = u->lay.rows / 2 - 1;
    term_role_attr(&u->t, stdscr, R_WARN, A_BOLD);
    centred(u, y, "terminal too small");
    term_role(&u->t, stdscr, R_NORMAL);
    centred(u, y + 1, need);
    centred(u, y + 2, have);
    curs_set(0);
    wnoutrefresh(stdscr);
}

void tui_redraw(tui *u)
{
    if (u->dirty & RD_LAYOUT)
        relayout(u);
    if (u->lay.too_small) {
        draw_too_small(u);
        doupdate();
        u->dirty = 0;
        return;
    }
    unsigned dirty = u->dirty | tour_moved(u);
    u->dirty = 0;
    for (int p = 0; p < P_COUNT; p++)
        if ((dirty & RD(p)) && u->win[p] && !pane_classes[p]->cursor)
            pane_classes[p]->draw(u);
    if (u->lesson && (dirty & (RD_PANES | RD_LESSON)))
        tour_draw(u);
    if (u->popup && (dirty & (RD_PANES | RD_POPUP)))
        popup_draw(u);
    if (u->help && (dirty & (RD_PANES | RD_HELP)))
        help_draw(u);
    /* The command line goes last: the terminal's cursor is left where
     * the last refreshed window put it. */
    for (int p = 0; p < P_COUNT && !u->help; p++)
        if (u->win[p] && pane_classes[p]->cursor && ((dirty & RD(p)) || (int)u->focus == p))
            pane_classes[p]->draw(u);
    doupdate();
}
