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

/* Why a pane is not there for this model (its key and `view PANE` say it). */
const char *pane_why_absent(pane_id p)
{
    switch (p) {
    case P_PROBS: case P_LENS: return "ends in no logits";
    case P_NORMS: return "has no norms";
    case P_ROUTE: return "has no routed experts";
    case P_IMAGE: return "reads no image";
    case P_MATH: return "has no attention site to work out";
    case P_POS: return "has no position signal to draw";
    case P_MLP: return "has no MLP to draw";
    case P_RESID: return "has no residual stream to draw";
    case P_MLA: return "has no latent attention (MLA)";
    default: return "has none";
    }
}
