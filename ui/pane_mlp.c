/* pane_mlp: a concept view (being built on this branch: the helper
 * replaces this file). */
#include "tui.h"

static void draw(tui *u)
{
    pane_frame(u, P_MLP, "MLP", NULL);
    pane_message(u, P_MLP, "not built yet");
    wnoutrefresh(u->win[P_MLP]);
}

const pane_class pane_mlp = {
    .name = "MLP",
    .shows = SHOWS_LAYER | SHOWS_QUERY | SHOWS_DATA,
    .focusable = true,
    .draw = draw,
};
