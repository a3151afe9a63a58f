/* redraw: the view's windows, made for the layout of the terminal's
 * size, and the drawing of the panes whose redraw bits are set, then of
 * the overlays (a lesson's step, a command's output, the keys) over them;
 * and the view's own timing of each key's redraw (ATTNSCOPE_KEY_TIMES). */

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

/* ---- the view's own timing ---- */

/* A key as one word: "j", "^L", "KEY_NPAGE", "0x20" for Space. */
static void key_word(int ch, bool keycode, char *out, size_t cap)
{
    const char *name = keycode ? keyname(ch) : NULL;
    if (name)
        snprintf(out, cap, "%s", name);
    else if (!keycode && ch > 32 && ch < 127)
        snprintf(out, cap, "%c", ch);
    else if (!keycode && ch >= 0 && ch < 32)
        snprintf(out, cap, "^%c", ch + 64);
    else
        snprintf(out, cap, "0x%x", (unsigned)ch);
}

/* One line a key: the key, the milliseconds from reading it to the end of
 * the screen update after it, and what the view then showed (the focused
 * pane, the screen's size, layer, head, zoom, the selected query and key). */
static void key_timed(tui *u)
{
    if (!u->key_times || !u->key_t0_ns)
        return;
    double ms = (double)(tui_now_ns() - u->key_t0_ns) / 1e6;
    u->key_t0_ns = 0;
    char key[32];
    key_word(u->key_ch, u->key_code, key, sizeof key);
    fprintf(u->key_times, "%s %.3f pane=%s size=%dx%d layer=%d head=%d zoom=%d%s%s query=%d key=%d\n", key, ms,
            u->panes[u->focus]->name, u->lay.cols, u->lay.rows, u->v.layer, u->v.head, u->v.zoom,
            u->v.zoom > 1 ? (u->v.zoom_mean ? "mean" : "max") : "", u->v.grid ? " grid" : "", view_row(&u->v),
            u->v.key);
    fflush(u->key_times);
}

void tui_key_read(tui *u, int ch, bool keycode)
{
    if (!u->key_times)
        return;
    u->key_t0_ns = tui_now_ns();
    u->key_ch = ch;
    u->key_code = keycode;
}

void tui_redraw(tui *u)
{
    if (u->dirty & RD_LAYOUT)
        relayout(u);
    if (u->lay.too_small) {
        u->cells_late = 0; /* no heatmap drawn: nothing to go on with */
        u->lens_late = false;
        draw_too_small(u);
        doupdate();
        u->dirty = 0;
        key_timed(u);
        return;
    }
    unsigned dirty = u->dirty | tour_moved(u);
    u->dirty = 0;
    u->redraw_t0_ms = (double)tui_now_ns() / 1e6;
    /* the zoomed-out cells' bound for this redraw only: a command's `zoom`
     * or export, run between redraws, reads them whole */
    const as_capture *cap = as_view_capture(u->s);
    if (cap)
        as_capture_cells_budget(cap, u->cell_budget_ms);
    if (dirty & RD(P_LENS)) /* its draw says again, when it has a window */
        u->lens_late = false;
    for (int p = 0; p < P_COUNT; p++)
        if ((dirty & RD(p)) && u->win[p] && !pane_classes[p]->cursor)
            pane_classes[p]->draw(u);
    if (cap) {
        if (dirty & RD(P_ATTN)) /* a pane not shown (no window) leaves nothing to go on with */
            u->cells_late = u->win[P_ATTN] ? as_capture_cells_late(cap) : 0;
        as_capture_cells_budget(cap, -1);
    } else {
        u->cells_late = 0;
    }
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
    key_timed(u);
}
