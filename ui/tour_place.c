/* tour_place: see tour_place.h. */
#include "tour_place.h"

/* A place the box may take: columns [x, x + w), rows [y0, y1), the box
 * anchored at the bottom of it or at the top. */
typedef struct band {
    int x, w, y0, y1;
    bool at_top;
} band;

#define MIN_H 4
#define MIN_W 20

static int add(band *b, int n, int x, int w, int y0, int y1, bool at_top)
{
    if (y1 - y0 >= MIN_H && w >= MIN_W)
        b[n++] = (band){x, w, y0, y1, at_top};
    return n;
}

/* The bands of columns [x, x + w) between `top` and `bottom` clear of f:
 * below it, then above it; all of it when f is elsewhere. */
static int around(band *b, int n, int x, int w, int top, int bottom, rect f)
{
    bool across = f.h > 0 && f.x < x + w && x < f.x + f.w && f.y < bottom && top < f.y + f.h;
    if (!across)
        return add(b, n, x, w, top, bottom, false);
    n = add(b, n, x, w, f.y + f.h > top ? f.y + f.h : top, bottom, false);
    return add(b, n, x, w, top, f.y < bottom ? f.y : bottom, true);
}

rect tour_place(const layout *l, pane_id avoid, int (*need)(int width, void *ctx), void *ctx)
{
    if (l->too_small)
        return (rect){0, 0, 0, 0};
    int top = l->r[P_TOKENS].h, bottom = l->rows - 2;
    rect f = avoid < P_COUNT ? l->r[avoid] : (rect){0, 0, 0, 0};
    band b[6];
    int n = 0;
    rect side = l->r[l->shown];
    if (!l->single && side.h > 0 && side.x > 0) {
        /* wide: the stack's column, then the heatmap's bottom */
        n = around(b, n, side.x, l->cols - side.x, top, bottom, f);
        rect a = l->r[P_ATTN];
        if (avoid != P_ATTN && a.h > 0)
            n = around(b, n, a.x, a.w, top, bottom, f);
    } else if (!l->single) {
        n = around(b, n, 0, l->cols, top, bottom, f);
    }
    if (n == 0) /* one pane at a time: it cannot stay clear */
        n = add(b, n, 0, l->cols, bottom - (bottom - top) * 3 / 5, bottom, false);
    int best = -1, best_rows = 0;
    for (int i = 0; i < n; i++) {
        int want = need(b[i].w, ctx), room = b[i].y1 - b[i].y0;
        if (want <= room) {
            best = i;
            best_rows = want;
            break;
        }
        if (room > best_rows) {
            best = i;
            best_rows = room;
        }
    }
    if (best < 0)
        return (rect){0, 0, 0, 0};
    band c = b[best];
    int h = best_rows < MIN_H ? MIN_H : best_rows;
    return (rect){c.at_top ? c.y0 : c.y1 - h, c.x, h, c.w};
}
