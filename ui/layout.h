/* layout: where each pane of the full-screen view goes for a terminal
 * size, with no terminal. Wide screens put the attention heatmap on the
 * left, the largest pane, with probabilities, the logit lens, norm
 * statistics and the output log stacked on the right (when the stack is
 * short, the lens shares the probabilities' slot); small ones stack the
 * heatmap over one shared slot whose pane Tab chooses; the shortest (under
 * 17 rows) show one pane below the token strip, the heatmap or the side
 * pane that has the focus. Below a minimum size there is only a notice.
 * A vision model's image pane, where present, takes the right half of the
 * heatmap's area on wide screens (at least 100 columns and SINGLE_BODY
 * rows of body), and has no place on smaller ones.
 * A model with routed MLPs has the routing pane beside the heatmap (its
 * rows the same tokens), two fifths of the heatmap's area wide, at least
 * 32 columns, but never more than half; on a single-pane screen it shows alone
 * when it has the focus, like a side pane.
 * The concept views (P_MATH to P_MLA: the attention arithmetic,
 * positions, the MLP, the residual stream, MLA) have a place only when one is the side
 * pane shown: on a wide screen it takes the stack (wider: three fifths
 * of the screen, at most 80 columns) over the log, on a small one the shared slot (taller: three
 * fifths of the body), on a single-pane screen the whole body.
 * Unit-tested. */
#ifndef ATTNSCOPE_UI_LAYOUT_H
#define ATTNSCOPE_UI_LAYOUT_H

#include <stdbool.h>

typedef struct rect {
    int y, x, h, w;
} rect;

typedef enum pane_id {
    P_ATTN, P_TOKENS, P_PROBS, P_LENS, P_NORMS, P_LOG, /* the panes Tab visits, in order */
    P_ROUTE,                                   /* a routed MLP's experts (only where the program has them) */
    P_MATH,                                    /* attention worked out (`view math`): a side pane shown on request */
    P_POS,                                     /* the position signal (`view positions`): likewise */
    P_MLP,                                     /* the MLP's activation and neurons (`view mlp`): likewise */
    P_RESID,                                   /* the residual stream and the norms' place (`view residual`) */
    P_MLA,                                     /* MLA's latent and its cache (`view mla`) */
    P_IMAGE,                                   /* a vision model's input (only where the program reads pixels) */
    P_CMD,                                     /* the command line */
    P_STATUS,
    P_COUNT
} pane_id;

/* The concept views: side panes shown only on request, wider or taller
 * than the others (the attention arithmetic, positions, MLP, residual
 * stream, MLA). */
#define PANE_IS_WIDE(p) ((p) >= P_MATH && (p) <= P_MLA)
/* The side panes: those that may share a slot. */
#define PANE_IS_SIDE(p) (((p) >= P_PROBS && (p) <= P_LOG) || PANE_IS_WIDE(p))
/* Every concept view's bit (LAYOUT_PANE). */
#define LAYOUT_WIDE ((LAYOUT_PANE(P_MLA + 1) - 1) & ~(LAYOUT_PANE(P_MATH) - 1))

#define LAYOUT_MIN_W 40
#define LAYOUT_MIN_H 12

typedef struct layout {
    int rows, cols;
    bool too_small;
    bool shared;     /* the side panes share one slot */
    bool single;     /* one pane below the strip: the heatmap, or `shown` */
    pane_id shown;   /* the side pane a shared slot holds */
    rect r[P_COUNT]; /* h == 0: not shown */
} layout;

#define LAYOUT_PANE(p) (1u << (p))
#define LAYOUT_ALL ((1u << P_COUNT) - 1)

/* Whether a screen of this many rows shows one pane at a time. */
bool layout_single(int rows);
/* `shown` says which side pane a shared slot holds when there is no room
 * for all of them (on a single-pane screen, P_ATTN: the heatmap). `present` has bit LAYOUT_PANE(p) set for each pane
 * that applies to the program: a side pane without it gets no place (its
 * room goes to the log); the others are always laid out. */
void layout_compute_for(layout *l, int rows, int cols, pane_id shown, unsigned present);
/* Every pane of a model that reads tokens present (no image pane, no
 * routing pane). */
void layout_compute(layout *l, int rows, int cols, pane_id shown);
bool rect_contains(rect r, int y, int x);
/* The visible pane at (y, x), or P_COUNT. */
pane_id layout_pane_at(const layout *l, int y, int x);

#endif
