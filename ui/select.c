/* select: the changes of the view's selection that the panes' handlers
 * and the view's keys share (the focus, the selected token, the norm),
 * and which panes to redraw when something they show changes. Below the
 * panes: it reaches them only through the table the view holds
 * (u->panes), so no pane depends on the table's file. */
#include "tui.h"

unsigned panes_showing(const tui *u, unsigned what)
{
    unsigned bits = 0;
    for (int p = 0; p < P_COUNT; p++)
        if (u->panes[p]->shows & what)
            bits |= RD(p);
    return bits;
}

unsigned tui_focus(tui *u, pane_id p)
{
    unsigned bits = RD(u->focus) | RD(p) | panes_showing(u, SHOWS_FOCUS);
    if (p != P_CMD)
        u->last_pane = p;
    u->focus = p;
    if (PANE_IS_SIDE(p) && u->lay.r[p].h <= 0 && p != u->shared) {
        u->shared = p; /* the slot it shares now shows this pane */
        bits |= RD_LAYOUT;
    } else if (p != P_CMD && u->lay.r[p].h <= 0) {
        bits |= RD_LAYOUT; /* one pane at a time: the heatmap comes back */
    }
    return bits;
}

unsigned tui_select_query(tui *u, int q)
{
    int n = as_view_n_tokens(u->s), old = u->v.query;
    if (u->v.site == AS_PICK_SOURCE) { /* the encoder's heatmap: a source position */
        int src = as_view_source_stream(u->s), ns = src >= 0 ? as_view_stream_tokens(u->s, src) : 0, was = u->v.src_query;
        u->v.src_query = q < 0 ? 0 : q >= ns ? ns - 1 : q;
        view_clamp(&u->v, u->s);
        return was == u->v.src_query ? 0 : panes_showing(u, SHOWS_QUERY);
    }
    if (n == 0)
        return 0;
    u->v.query = q < 0 ? 0 : q >= n ? n - 1 : q;
    /* following: a decoder's newest token; an encoder's first [MASK] (view_clamp) */
    u->v.follow = u->v.query == n - 1 && as_view_causal(u->s);
    view_clamp(&u->v, u->s);
    return old == u->v.query ? 0 : panes_showing(u, SHOWS_QUERY);
}

unsigned tui_cycle_norm(tui *u, int d)
{
    u->v.norm = view_norm_step(as_view_program(u->s), u->v.layer, u->v.norm, d);
    return panes_showing(u, SHOWS_NORM);
}
