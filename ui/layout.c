#include "layout.h"

#include <string.h>

static int clamp(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

bool rect_contains(rect r, int y, int x)
{
    return r.h > 0 && r.w > 0 && y >= r.y && y < r.y + r.h && x >= r.x && x < r.x + r.w;
}

pane_id layout_pane_at(const layout *l, int y, int x)
{
    for (int p = 0; p < P_COUNT; p++)
        if (rect_contains(l->r[p], y, x))
            return (pane_id)p;
    return P_COUNT;
}

/* The right-hand (or lower) stack: probabilities, lens, norms, log; when
 * shorter, the lens takes the probabilities' place only when `shown`;
 * when short, the one pane `shown`. */
static void stack_side(layout *l, rect area, pane_id shown)
{
    if (area.h < 20) {
        l->shared = true;
        l->r[shown] = area;
        return;
    }
    if (area.h >= 32) {
        int probs = clamp(area.h / 4, 7, 12), lens = clamp(area.h / 4, 6, 12);
        int norms = clamp(area.h * 3 / 10, 8, 18);
        l->r[P_PROBS] = (rect){area.y, area.x, probs, area.w};
        l->r[P_LENS] = (rect){area.y + probs, area.x, lens, area.w};
        l->r[P_NORMS] = (rect){area.y + probs + lens, area.x, norms, area.w};
        l->r[P_LOG] = (rect){area.y + probs + lens + norms, area.x, area.h - probs - lens - norms, area.w};
        return;
    }
    int probs = clamp(area.h * 3 / 10, 7, 14);
    int norms = clamp(area.h * 4 / 10, 8, 20);
    l->r[shown == P_LENS ? P_LENS : P_PROBS] = (rect){area.y, area.x, probs, area.w};
    l->r[P_NORMS] = (rect){area.y + probs, area.x, norms, area.w};
    l->r[P_LOG] = (rect){area.y + probs + norms, area.x, area.h - probs - norms, area.w};
}

void layout_compute(layout *l, int rows, int cols, pane_id shown)
{
    memset(l, 0, sizeof *l);
    l->rows = rows;
    l->cols = cols;
    if (rows < LAYOUT_MIN_H || cols < LAYOUT_MIN_W) {
        l->too_small = true;
        return;
    }
    if (!PANE_IS_SIDE(shown))
        shown = P_PROBS;
    l->r[P_CMD] = (rect){rows - 1, 0, 1, cols};
    l->r[P_STATUS] = (rect){rows - 2, 0, 1, cols};
    /* Token strip: a box around 1-3 rows of token pieces. */
    int strip = rows >= 40 ? 3 : rows >= 28 ? 2 : 1;
    l->r[P_TOKENS] = (rect){0, 0, strip + 2, cols};
    int top = strip + 2, body = rows - 2 - top;
    if (cols >= 100) {
        int side = clamp(cols * 2 / 5, 44, 76);
        l->r[P_ATTN] = (rect){top, 0, body, cols - side};
        stack_side(l, (rect){top, cols - side, body, side}, shown);
        return;
    }
    int lower = clamp(body * 2 / 5, 5, 12);
    l->r[P_ATTN] = (rect){top, 0, body - lower, cols};
    l->shared = true;
    l->r[shown] = (rect){top + body - lower, 0, lower, cols};
}
