/* pane_resid: a concept view (being built on this branch: the helper
 * replaces this file). */
#include "tui.h"

static void draw(tui *u)
{
    pane_frame(u, P_RESID, "Residual stream", NULL);
    pane_message(u, P_RESID, "not built yet");
    wnoutrefresh(u->win[P_RESID]);
}

const pane_class pane_resid = {
    .name = "Residual stream",
    .shows = SHOWS_LAYER | SHOWS_QUERY | SHOWS_DATA,
    .focusable = true,
    .draw = draw,
};
