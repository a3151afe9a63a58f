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

static bool has(unsigned present, pane_id p)
{
    return (present & LAYOUT_PANE(p)) != 0;
}

/* The right-hand (or lower) stack: probabilities, lens, norms, log; when
 * shorter, the lens takes the probabilities' place only when `shown`;
 * when short, the one pane `shown`. A pane not present leaves its rows
 * to the log, which is always there. */
static void stack_side(layout *l, rect area, pane_id shown, unsigned present)
{
    if (area.h < 20) {
        l->shared = true;
        l->r[shown] = area;
        return;
    }
    if (PANE_IS_WIDE(shown)) { /* a concept view over the log */
        int log = clamp(area.h / 5, 5, 8);
        l->r[shown] = (rect){area.y, area.x, area.h - log, area.w};
        l->r[P_LOG] = (rect){area.y + area.h - log, area.x, log, area.w};
        return;
    }
    int want[P_COUNT] = {0};
    if (area.h >= 32) {
        want[P_PROBS] = clamp(area.h / 4, 7, 12);
        want[P_LENS] = clamp(area.h / 4, 6, 12);
        want[P_NORMS] = clamp(area.h * 3 / 10, 8, 18);
    } else {
        /* One slot for the probabilities or the lens. */
        pane_id first = shown == P_LENS && has(present, P_LENS) ? P_LENS
                        : has(present, P_PROBS)                 ? P_PROBS
                                                                : P_LENS;
        want[first] = clamp(area.h * 3 / 10, 7, 14);
        want[P_NORMS] = clamp(area.h * 4 / 10, 8, 20);
    }
    int y = area.y;
    for (int p = P_PROBS; p < P_LOG; p++)
        if (want[p] > 0 && has(present, (pane_id)p)) {
            l->r[p] = (rect){y, area.x, want[p], area.w};
            y += want[p];
        }
    l->r[P_LOG] = (rect){y, area.x, area.y + area.h - y, area.w};
}

/* The side pane a shared slot shows: `shown` if present, else the first
 * that is. */
static pane_id side_shown(pane_id shown, unsigned present)
{
    if (PANE_IS_SIDE(shown) && has(present, shown))
        return shown;
    for (int p = P_PROBS; p <= P_LOG; p++)
        if (has(present, (pane_id)p))
            return (pane_id)p;
    return P_LOG;
}

/* Rows of the token strip, by the screen's height. */
static int strip_rows(int rows)
{
    return rows >= 40 ? 3 : rows >= 28 ? 2 : 1;
}

/* Below this, a heatmap over a side slot leaves the heatmap no rows. */
#define SINGLE_BODY 12

bool layout_single(int rows)
{
    return rows - 2 - (strip_rows(rows) + 2) < SINGLE_BODY;
}

void layout_compute(layout *l, int rows, int cols, pane_id shown)
{
    layout_compute_for(l, rows, cols, shown, LAYOUT_ALL & ~LAYOUT_PANE(P_IMAGE) & ~LAYOUT_PANE(P_ROUTE) & ~LAYOUT_WIDE);
}

void layout_compute_for(layout *l, int rows, int cols, pane_id shown, unsigned present)
{
    memset(l, 0, sizeof *l);
    l->rows = rows;
    l->cols = cols;
    if (rows < LAYOUT_MIN_H || cols < LAYOUT_MIN_W) {
        l->too_small = true;
        return;
    }
    present |= LAYOUT_PANE(P_LOG);
    if (has(present, P_IMAGE))
        present &= ~LAYOUT_PANE(P_ROUTE); /* no model has both */
    bool attn_alone = shown == P_ATTN, route_alone = shown == P_ROUTE && has(present, P_ROUTE);
    shown = l->shown = side_shown(shown, present);
    l->r[P_CMD] = (rect){rows - 1, 0, 1, cols};
    l->r[P_STATUS] = (rect){rows - 2, 0, 1, cols};
    /* Token strip: a box around 1-3 rows of token pieces. */
    int strip = strip_rows(rows);
    l->r[P_TOKENS] = (rect){0, 0, strip + 2, cols};
    int top = strip + 2, body = rows - 2 - top;
    if (body < SINGLE_BODY) {
        l->single = l->shared = true;
        l->r[route_alone ? P_ROUTE : attn_alone ? P_ATTN : shown] = (rect){top, 0, body, cols};
        return;
    }
    if (cols >= 100) {
        int side = PANE_IS_WIDE(shown) ? clamp(cols * 3 / 5, 44, 80) : clamp(cols * 2 / 5, 44, 76), left = cols - side;
        l->r[P_ATTN] = (rect){top, 0, body, left};
        if (has(present, P_IMAGE)) {
            /* as wide as a square image of the body's height (two pixels a row), at most half */
            int iw = clamp(2 * (body - 3) + 2, 12, left / 2);
            l->r[P_ATTN].w = left - iw;
            l->r[P_IMAGE] = (rect){top, left - iw, body, iw};
        }
        if (has(present, P_ROUTE)) {
            int rw = clamp(left * 2 / 5, 32, left), half = left / 2;
            rw = rw > half ? half : rw;
            l->r[P_ATTN].w = left - rw;
            l->r[P_ROUTE] = (rect){top, left - rw, body, rw};
        }
        stack_side(l, (rect){top, cols - side, body, side}, shown, present);
        return;
    }
    int lower = PANE_IS_WIDE(shown) ? clamp(body * 3 / 5, 5, body - 5) : clamp(body * 2 / 5, 5, 12);
    l->r[P_ATTN] = (rect){top, 0, body - lower, cols};
    if (has(present, P_IMAGE)) {
        /* a projector's 80 columns: the image beside the heatmap all the same, smaller */
        int iw = clamp(2 * (body - lower - 3) + 2, 12, cols / 2);
        l->r[P_ATTN].w = cols - iw;
        l->r[P_IMAGE] = (rect){top, cols - iw, body - lower, iw};
    }
    if (has(present, P_ROUTE)) {
        int rw = clamp(cols * 2 / 5, 32, cols), half = cols / 2;
        rw = rw > half ? half : rw;
        l->r[P_ATTN].w = cols - rw;
        l->r[P_ROUTE] = (rect){top, cols - rw, body - lower, rw};
    }
    l->shared = true;
    l->r[shown] = (rect){top + body - lower, 0, lower, cols};
}
