/* pane_positions: a concept view (being built on this branch: the helper
 * replaces this file). */
#include "tui.h"

static void draw(tui *u)
{
    pane_frame(u, P_POS, "Positions", NULL);
    pane_message(u, P_POS, "not built yet");
    wnoutrefresh(u->win[P_POS]);
}

const pane_class pane_positions = {
    .name = "Positions",
    .shows = SHOWS_LAYER | SHOWS_QUERY | SHOWS_DATA,
    .focusable = true,
    .draw = draw,
};
