/* help: the key overlay `?` shows over the panes; any key closes it. */
#include <string.h>

#include "textfmt.h"
#include "tui.h"

static const char *const lines[] = {
    "Keys",
    "  Up/Down  k/j     layer              Left/Right  h/l   head",
    "  , .  [ ]         previous / next token (the query row)",
    "  H J K L          move the heatmap cursor (Shift+arrows too)",
    "  PgUp/PgDn        scroll the focused pane",
    "  Tab / Shift-Tab  next / previous pane (Tokens: Left/Right pick",
    "                   the token; LayerNorm: Left/Right pick the norm)",
    "  g                grid of every head    Enter  back to one head",
    "  N                norm: ln1, ln2, final    c  colormap",
    "  s  step one op   n  next block   f  finish   b  back one op",
    "  Space            generate one token",
    "  e                export the heatmap shown as attn-L<l>[-H<h>].png",
    "  mouse            click a token, a cell or a head to select it",
    "",
    "Commands",
    "  : or /           type a command (Enter runs it, Esc returns to",
    "                   the view, Tab completes, Up recalls history)",
    "  help, help CMD   every command, with an example",
    "  gen N            generate N tokens; set delay MS paces them",
    "  Ctrl-C           stop a running command; clear the command line",
    "  q, Ctrl-D, quit  leave",
    "",
    "Press any key to close.",
};

#define N_LINES ((int)(sizeof lines / sizeof lines[0]))

void help_draw(tui *u)
{
    int width = 70, height = N_LINES + 2;
    if (width > u->lay.cols)
        width = u->lay.cols;
    if (height > u->lay.rows)
        height = u->lay.rows;
    WINDOW *w = newwin(height, width, (u->lay.rows - height) / 2, (u->lay.cols - width) / 2);
    if (!w)
        return;
    werase(w);
    term_role(&u->t, w, R_BORDER_FOCUS);
    draw_box(u, w);
    term_role(&u->t, w, R_TITLE_FOCUS);
    mvwaddstr(w, 0, 2, " attnscope ");
    for (int i = 0; i < N_LINES && i < height - 2; i++) {
        bool heading = lines[i][0] != ' ' && lines[i][0];
        term_role(&u->t, w, heading ? R_TITLE : R_NORMAL);
        put_text(u, w, 1 + i, 2, lines[i], width - 4);
    }
    wnoutrefresh(w);
    delwin(w);
}
