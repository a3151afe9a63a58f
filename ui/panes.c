/* panes: the table of the view's panes, by pane_id. A new pane is a file
 * exporting its pane_class, a line here, an id in layout.h and its place
 * in the layout; the main loop, the redraws, Tab and clicks go through
 * the table. */
#include "tui.h"

const pane_class *const pane_classes[P_COUNT] = {
    [P_ATTN] = &pane_attn,
    [P_TOKENS] = &pane_tokens,
    [P_PROBS] = &pane_probs,
    [P_LENS] = &pane_lens,
    [P_NORMS] = &pane_norms,
    [P_LOG] = &pane_log,
    [P_ROUTE] = &pane_route,
    [P_MATH] = &pane_math,
    [P_POS] = &pane_positions,
    [P_MLP] = &pane_mlp,
    [P_RESID] = &pane_resid,
    [P_MLA] = &pane_mla,
    [P_IMAGE] = &pane_image,
    [P_CMD] = &pane_cmdline,
    [P_STATUS] = &pane_status,
};

unsigned panes_present(const tui *u)
{
    unsigned bits = 0;
    for (int p = 0; p < P_COUNT; p++)
        if (!pane_classes[p]->applies || pane_classes[p]->applies(u))
            bits |= RD(p);
    return bits;
}
