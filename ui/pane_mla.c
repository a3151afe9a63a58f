/* pane_mla: a concept view (being built on this branch: the helper
 * replaces this file). */
#include "tui.h"

static void draw(tui *u)
{
    pane_frame(u, P_MLA, "MLA latent", NULL);
    pane_message(u, P_MLA, "not built yet");
    wnoutrefresh(u->win[P_MLA]);
}

const pane_class pane_mla = {
    .name = "MLA latent",
    .shows = SHOWS_LAYER | SHOWS_QUERY | SHOWS_DATA,
    .focusable = true,
    .draw = draw,
};
