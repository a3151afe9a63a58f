/* tour_box: a lesson's step on screen, its sentences in a box placed
 * where it hides least (tour.c says where, at the top). */
#include <stdlib.h>
#include <string.h>

#include "lesson.h"
#include "textfmt.h"
#include "tui.h"

/* The rows the step's text takes at this width. */
static int text_rows(const tui *u, const char *text, int width)
{
    int rows = 0, starts[64];
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        char *para = strndup(p, len);
        int k = para ? tf_wrap(para, width, u->t.utf8, starts, 64) : 1;
        rows += k < 1 ? 1 : k;
        free(para);
        p += len + (p[len] == '\n');
    }
    return rows;
}

/* Where the box goes: see the top of the file. */
static rect box_place(const tui *u, int want)
{
    const layout *l = &u->lay;
    if (!l->shared && l->r[P_LOG].h >= 6)
        return l->r[P_LOG];
    pane_id at = u->focus == P_CMD ? u->last_pane : u->focus;
    int top = l->r[P_TOKENS].h, bottom = l->rows - 2, max = (bottom - top) * 3 / 5;
    int h = want < max ? want : max;
    bool side_shown = PANE_IS_SIDE(at) && l->r[at].h > 0 && l->r[at].y > top;
    return (rect){side_shown ? top : bottom - h, 0, h, l->cols};
}

static void draw_text(tui *u, WINDOW *w, const char *text, int width, int rows)
{
    int y = 1, starts[64];
    term_role(&u->t, w, R_NORMAL);
    for (const char *p = text; *p && y <= rows;) {
        size_t len = strcspn(p, "\n");
        char *para = strndup(p, len);
        int k = para ? tf_wrap(para, width, u->t.utf8, starts, 64) : 0;
        for (int i = 0; para && i < k && i < 64 && y <= rows; i++) {
            int end = i + 1 < k ? starts[i + 1] : (int)len;
            while (end > starts[i] && para[end - 1] == ' ')
                end--;
            char seg[512];
            snprintf(seg, sizeof seg, "%.*s", end - starts[i], para + starts[i]);
            if (y == rows && (i + 1 < k || p[len]))
                snprintf(seg + strlen(seg) - (strlen(seg) > 3 ? 3 : 0), 8, "%s", u->t.utf8 ? "…" : "...");
            put_text(u, w, y++, 2, seg, width);
        }
        free(para);
        p += len + (p[len] == '\n');
    }
}

void tour_draw(tui *u)
{
    if (!u->lesson || u->lay.too_small)
        return;
    const lesson_step *st = &u->lesson->steps[u->lesson_step];
    int cols = u->lay.r[P_LOG].h >= 6 && !u->lay.shared ? u->lay.r[P_LOG].w : u->lay.cols;
    int width = cols - 4, err_rows = u->lesson_error[0] ? 1 : 0;
    rect r = box_place(u, text_rows(u, st->text, width) + err_rows + 3);
    if (r.h < 4 || r.w < 20)
        return;
    WINDOW *w = overlay_box(u, r.h, r.w, r.y, r.x);
    if (!w)
        return;
    char title[160], count[32];
    snprintf(count, sizeof count, " %d/%d ", u->lesson_step + 1, u->lesson->n_steps);
    snprintf(title, sizeof title, " %s ", u->lesson->title);
    put_text(u, w, 0, 1, title, r.w - (int)strlen(count) - 4);
    put_text(u, w, 0, r.w - (int)strlen(count) - 1, count, (int)strlen(count));
    int text_h = r.h - 3 - err_rows;
    draw_text(u, w, st->text, r.w - 4, text_h);
    if (err_rows) {
        term_role(&u->t, w, R_ERROR);
        put_text(u, w, r.h - 3, 2, u->lesson_error, r.w - 4);
    }
    term_role(&u->t, w, R_DIM);
    bool last = u->lesson_step + 1 >= u->lesson->n_steps;
    put_text(u, w, r.h - 2, 2,
             last ? "Space or Esc ends the lesson   Backspace back" : "Space next   Backspace back   Esc ends",
             r.w - 4);
    term_role(&u->t, w, R_NORMAL);
    wnoutrefresh(w);
    delwin(w);
}
