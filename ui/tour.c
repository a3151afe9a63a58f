/* tour: a lesson given in the full-screen view. Each step runs its
 * commands and shows its sentences in a box placed where it hides least:
 * over the Output pane on a wide screen; on a small one at the bottom, or
 * at the top when the step shows the pane of the bottom slot. Space goes
 * on, Backspace goes back (the lesson replayed from its start to the step
 * before, so the screen is as it was), Esc or q ends it; every other key
 * works as ever, so a teacher can look around and carry on. */
#include <stdlib.h>
#include <string.h>

#include "lesson.h"
#include "textfmt.h"
#include "tui.h"

int tour_take(void *ctx, lesson *l, as_error *err)
{
    (void)err;
    tui *u = ctx;
    tour_end(u);
    u->lesson = l;
    u->lesson_pending = true; /* its commands wait for the command line running `lesson` to end */
    return AS_OK;
}

void tour_end(tui *u)
{
    if (!u->lesson)
        return;
    lesson_free(u->lesson);
    free(u->lesson);
    u->lesson = NULL;
    u->lesson_pending = false;
    u->dirty |= RD_PANES;
}

/* Runs step i's commands; the first error stays in the box. */
static void run_step(tui *u, int i)
{
    const lesson_step *st = &u->lesson->steps[i];
    u->v.in_lesson = true;
    for (int k = 0; k < st->n_cmds; k++)
        if (tui_run_line(u, st->cmds[k], RUN_LESSON)) {
            const log_line *l = log_get(&u->log, u->log.count - 1);
            snprintf(u->lesson_error, sizeof u->lesson_error, "%s (step %d: %s)", l ? l->text : "error", i + 1,
                     st->cmds[k]);
            break;
        }
    u->v.in_lesson = false;
}

static void show_step(tui *u, int i)
{
    u->lesson_step = i;
    u->lesson_error[0] = '\0';
    run_step(u, i);
    u->dirty |= RD_PANES | RD_LESSON;
}

void tour_begin(tui *u)
{
    as_error err = {{0}};
    u->lesson_pending = false;
    log_addf(&u->log, LOG_HINT, "lesson %s: %s (%d steps): Space goes on, Backspace back, Esc ends",
             u->lesson->name, u->lesson->title, u->lesson->n_steps);
    if (view_lesson_model(u->s, u->lesson, &err)) {
        log_addf(&u->log, LOG_ERROR, "error: %s", err.msg);
        tour_end(u);
        return;
    }
    u->dirty |= tui_after_command(u);
    u->focus = u->last_pane = P_ATTN; /* Space and Backspace are the lesson's */
    u->dirty |= RD_LAYOUT;
    show_step(u, 0);
}

/* Back one step: the view as a lesson starts, then every step before. */
static unsigned step_back(tui *u)
{
    if (u->lesson_step == 0)
        return 0;
    int to = u->lesson_step - 1;
    as_error err = {{0}};
    if (view_lesson_model(u->s, u->lesson, &err)) /* a later step may have loaded another */
        log_addf(&u->log, LOG_ERROR, "error: %s", err.msg);
    u->dirty |= tui_after_command(u);
    u->v.layer = u->v.head = 0;
    u->v.grid = false;
    u->v.follow = true;
    u->last_pane = P_ATTN;
    u->focus = P_ATTN;
    u->v.norm = view_norm_step(u->s->prog, 0, NK_COUNT - 1, 1);
    for (int i = 0; i < to; i++)
        run_step(u, i);
    show_step(u, to);
    return RD_LAYOUT | RD_PANES;
}

unsigned tour_key(tui *u, int ch, bool keycode)
{
    if (u->busy)
        return RD_IGNORED;
    bool back = keycode ? ch == KEY_BACKSPACE : ch == 127 || ch == 8;
    if (back)
        return step_back(u);
    if (!keycode && ch == ' ') {
        if (u->lesson_step + 1 >= u->lesson->n_steps) {
            log_addf(&u->log, LOG_HINT, "end of lesson %s", u->lesson->name);
            tour_end(u);
            return RD_PANES;
        }
        show_step(u, u->lesson_step + 1);
        return RD_PANES | RD_LESSON;
    }
    if (!keycode && (ch == KEY_ESC || ch == 'q')) {
        log_addf(&u->log, LOG_HINT, "lesson %s ended at step %d of %d", u->lesson->name, u->lesson_step + 1,
                 u->lesson->n_steps);
        tour_end(u);
        return RD_PANES;
    }
    return RD_IGNORED;
}

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
    WINDOW *w = newwin(r.h, r.w, r.y, r.x);
    if (!w)
        return;
    werase(w);
    term_role(&u->t, w, R_BORDER_FOCUS);
    draw_box(u, w);
    char title[160], count[32];
    snprintf(count, sizeof count, " %d/%d ", u->lesson_step + 1, u->lesson->n_steps);
    snprintf(title, sizeof title, " %s ", u->lesson->title);
    term_role(&u->t, w, R_TITLE_FOCUS);
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
