/* tour_box: a lesson's step on screen, its sentences wrapped in a box
 * placed clear of the pane the step is about (tour_place.c says where).
 * The lesson's title is in the top border (inside the box, wrapped, when
 * the border is too short for it), the keys and the step's number in the
 * bottom border, so every row between is the step's text. */
#include <stdlib.h>
#include <string.h>

#include "lesson.h"
#include "textfmt.h"
#include "tour_place.h"
#include "tui.h"

#define MAX_LINES 64

/* The rows text takes wrapped at width (each "\n" starts a paragraph). */
static int text_rows(const tui *u, const char *text, int width)
{
    int rows = 0, starts[MAX_LINES];
    for (const char *p = text; *p;) {
        size_t len = strcspn(p, "\n");
        char *para = strndup(p, len);
        int k = para ? tf_wrap(para, width, u->t.utf8, starts, MAX_LINES) : 1;
        rows += k < 1 ? 1 : k;
        free(para);
        p += len + (p[len] == '\n');
    }
    return rows;
}

/* Whether the title fits the top border of a box w wide (" title " after
 * one line character, one before the corner). */
static bool title_in_border(const tui *u, int w)
{
    return tf_width(u->lesson->title, u->t.utf8) + 4 <= w;
}

static int box_need(int w, void *ctx)
{
    const tui *u = ctx;
    const lesson_step *st = &u->lesson->steps[u->lesson_step];
    int rows = text_rows(u, st->text, w - 4) + (u->lesson_error[0] ? 1 : 0);
    if (!title_in_border(u, w))
        rows += text_rows(u, u->lesson->title, w - 4);
    return rows + 2;
}

/* The box's place for the step shown, clear of the pane looked at. */
static rect box_rect(const tui *u)
{
    pane_id at = u->focus == P_CMD ? u->last_pane : u->focus;
    return tour_place(&u->lay, at, box_need, (void *)u);
}

unsigned tour_moved(tui *u)
{
    if (!u->lesson || u->lay.too_small)
        return 0;
    rect r = box_rect(u);
    rect was = u->lesson_box;
    return r.y == was.y && r.x == was.x && r.h == was.h && r.w == was.w ? 0 : RD_PANES;
}

/* Draws text's paragraphs wrapped to width from row y, at most up to row
 * last; the last row shown ends in … when text is left over. Returns the
 * row after. */
static int draw_text(tui *u, WINDOW *w, int y, int last, const char *text, int width)
{
    int starts[MAX_LINES];
    for (const char *p = text; *p && y <= last;) {
        size_t len = strcspn(p, "\n");
        char *para = strndup(p, len);
        int k = para ? tf_wrap(para, width, u->t.utf8, starts, MAX_LINES) : 0;
        for (int i = 0; para && i < k && i < MAX_LINES && y <= last; i++) {
            int end = i + 1 < k ? starts[i + 1] : (int)len;
            while (end > starts[i] && para[end - 1] == ' ')
                end--;
            char seg[512];
            snprintf(seg, sizeof seg, "%.*s", end - starts[i], para + starts[i]);
            if (y == last && (i + 1 < k || p[len]))
                snprintf(seg + strlen(seg) - (strlen(seg) > 3 ? 3 : 0), 8, "%s", u->t.utf8 ? "…" : "...");
            put_text(u, w, y++, 2, seg, width);
        }
        free(para);
        p += len + (p[len] == '\n');
    }
    return y;
}

/* The bottom border: the keys, the longest wording that fits, and the
 * step's number at the right. */
static void draw_keys(tui *u, WINDOW *w, int h, int width)
{
    static const char *const next[] = {" Space next  Backspace back  Esc ends ", " Space next  Bksp back  Esc ends ",
                                       " Space  Bksp  Esc "};
    static const char *const last[] = {" Space or Esc ends the lesson  Backspace back ", " Space or Esc ends  Bksp back ",
                                       " Space/Esc end  Bksp "};
    bool is_last = u->lesson_step + 1 >= u->lesson->n_steps;
    const char *const *keys = is_last ? last : next;
    char count[32];
    snprintf(count, sizeof count, " %d/%d ", u->lesson_step + 1, u->lesson->n_steps);
    int cw = (int)strlen(count), k = 0;
    while (k < 2 && (int)strlen(keys[k]) + cw + 4 > width)
        k++;
    term_role(&u->t, w, R_TITLE_FOCUS);
    put_text(u, w, h - 1, width - cw - 1, count, cw);
    term_role(&u->t, w, R_DIM);
    put_text(u, w, h - 1, 2, keys[k], width - cw - 4);
}

void tour_draw(tui *u)
{
    if (!u->lesson || u->lay.too_small)
        return;
    const lesson_step *st = &u->lesson->steps[u->lesson_step];
    rect r = box_rect(u);
    u->lesson_box = r;
    if (r.h < 4 || r.w < 20)
        return;
    WINDOW *w = overlay_box(u, r.h, r.w, r.y, r.x);
    if (!w)
        return;
    int y = 1, last = r.h - 2 - (u->lesson_error[0] ? 1 : 0);
    char title[160];
    snprintf(title, sizeof title, " %s ", u->lesson->title);
    if (title_in_border(u, r.w)) {
        put_text(u, w, 0, 1, title, r.w - 2);
    } else {
        term_role_attr(&u->t, w, R_TITLE_FOCUS, A_BOLD);
        y = draw_text(u, w, y, last, u->lesson->title, r.w - 4);
    }
    term_role(&u->t, w, R_NORMAL);
    draw_text(u, w, y, last, st->text, r.w - 4);
    if (u->lesson_error[0]) {
        term_role(&u->t, w, R_ERROR);
        put_text(u, w, r.h - 2, 2, u->lesson_error, r.w - 4);
    }
    draw_keys(u, w, r.h, r.w);
    term_role(&u->t, w, R_NORMAL);
    wnoutrefresh(w);
    delwin(w);
}
