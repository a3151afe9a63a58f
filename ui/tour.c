/* tour: a lesson given in the full-screen view. Each step runs its
 * commands and shows its sentences in a box placed where it hides least:
 * over the Output pane on a wide screen; on a small one at the bottom, or
 * at the top when the step shows the pane of the bottom slot. Space goes
 * on, Backspace goes back (the lesson replayed from its start to the step
 * before, so the screen is as it was), Esc or q ends it (q quits only once
 * no lesson runs); every other key works as ever, so a teacher can look
 * around and carry on. When it ends, the grid and the focus are as they
 * were before it (a step's `view grid on` or `view norms` does not stay). */
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
    u->v.grid = u->lesson_grid;
    if (u->lesson_focus != u->focus && u->lesson_focus < P_COUNT && (u->present & RD(u->lesson_focus)))
        u->dirty |= tui_focus(u, u->lesson_focus);
    lesson_free(u->lesson);
    free(u->lesson);
    u->lesson = NULL;
    u->lesson_pending = false;
    u->lesson_box = (rect){0, 0, 0, 0};
    u->dirty |= RD_PANES;
}

/* Runs step i's commands; the first error stays in the box. */
static void run_step(tui *u, int i)
{
    const lesson_step *st = &u->lesson->steps[i];
    u->v.in_lesson = true;
    for (int k = 0; k < st->n_cmds; k++)
        if (tour_run_line(u, st->cmds[k], RUN_LESSON)) {
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
    u->lesson_grid = u->v.grid;
    u->lesson_focus = u->focus == P_CMD ? u->last_pane : u->focus;
    u->focus = u->last_pane = P_ATTN; /* Space and Backspace are the lesson's */
    u->dirty |= RD_LAYOUT;
    show_step(u, 0);
}

int tour_run_line(tui *u, const char *line, run_from how)
{
    int rc = tui_run_line(u, line, how);
    if (u->lesson_pending)
        tour_begin(u);
    return rc;
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
    u->v.norm = view_norm_step(as_view_program(u->s), 0, NK_COUNT - 1, 1);
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
            char name[64];
            snprintf(name, sizeof name, "%s", u->lesson->name);
            tour_end(u);
            tui_say(u, LOG_HINT, "end of lesson %s", name);
            return RD_PANES;
        }
        show_step(u, u->lesson_step + 1);
        return RD_PANES | RD_LESSON;
    }
    if (!keycode && (ch == KEY_ESC || ch == 'q' || ch == ('d' & 0x1f))) {
        /* q and Ctrl-D end the lesson first, and say that a second one quits */
        char name[64];
        snprintf(name, sizeof name, "%s", u->lesson->name);
        int at = u->lesson_step + 1, n = u->lesson->n_steps;
        tour_end(u);
        tui_say(u, LOG_HINT, "lesson %s ended at step %d of %d%s", name, at, n,
                ch == KEY_ESC ? "" : ch == 'q' ? " (q again quits)" : " (Ctrl-D again quits)");
        return RD_PANES;
    }
    return RD_IGNORED;
}
