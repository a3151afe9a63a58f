/* run: a command line run from the view (typed, by a key, or by a
 * lesson's step), as in the REPL, its output captured into the log; then
 * what changed for the panes (a new model, the selection kept inside the
 * context, a pane `view PANE` asked for). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tui.h"

static void capture_begin(tui *u)
{
    u->cap_out_buf = u->cap_warn_buf = NULL;
    u->cap_out_len = u->cap_warn_len = u->cap_out_seen = u->cap_warn_seen = 0;
    u->cap_out = open_memstream(&u->cap_out_buf, &u->cap_out_len);
    u->cap_warn = open_memstream(&u->cap_warn_buf, &u->cap_warn_len);
    if (u->cap_out)
        as_view_set_out(u->s, u->cap_out);
    if (u->cap_warn)
        as_view_set_warn(u->s, u->cap_warn);
}

/* Moves what the running command printed so far into the log. */
void capture_drain(tui *u)
{
    if (u->cap_out && fflush(u->cap_out) == 0 && u->cap_out_len > u->cap_out_seen) {
        log_add(&u->log, LOG_OUT, u->cap_out_buf + u->cap_out_seen, u->cap_out_len - u->cap_out_seen);
        u->cap_out_seen = u->cap_out_len;
        u->dirty |= panes_showing(u, SHOWS_LOG);
    }
    if (u->cap_warn && fflush(u->cap_warn) == 0 && u->cap_warn_len > u->cap_warn_seen) {
        log_add(&u->log, LOG_WARN, u->cap_warn_buf + u->cap_warn_seen, u->cap_warn_len - u->cap_warn_seen);
        u->cap_warn_seen = u->cap_warn_len;
        u->dirty |= panes_showing(u, SHOWS_LOG);
    }
}

static void capture_end(tui *u, FILE *null)
{
    capture_drain(u);
    log_flush(&u->log);
    as_view_set_out(u->s, null);
    as_view_set_warn(u->s, null);
    if (u->cap_out)
        fclose(u->cap_out);
    if (u->cap_warn)
        fclose(u->cap_warn);
    free(u->cap_out_buf);
    free(u->cap_warn_buf);
    u->cap_out = u->cap_warn = NULL;
    u->cap_out_buf = u->cap_warn_buf = NULL;
}

/* `view PANE`: shows the pane (a small screen's shared slot takes it)
 * and makes it the one Esc returns to; from the panes it takes the focus. */
static unsigned show_pane(tui *u, int req)
{
    pane_id p = (pane_id)req;
    if (!(u->present & RD(p))) {
        log_addf(&u->log, LOG_HINT, "view %s: %s %s: no %s pane", view_pane_name(req), as_view_model_name(u->s),
                 pane_why_absent(p), pane_classes[p]->name);
        return panes_showing(u, SHOWS_LOG);
    }
    if (u->focus != P_CMD)
        return tui_focus(u, p);
    u->last_pane = p;
    if (PANE_IS_SIDE(p))
        u->shared = p;
    return u->lay.r[p].h <= 0 ? RD_LAYOUT : 0;
}

/* After `load`: the vocabulary-sized scratch, the panes' states (the
 * lens rows, the routing pane's expert) and the panes that apply belong
 * to the old model. */
static unsigned new_model(tui *u)
{
    free(u->probs);
    free(u->order);
    u->probs = NULL;
    u->order = NULL;
    for (int p = 0; p < P_COUNT; p++)
        if (u->panes[p]->reset)
            u->panes[p]->reset(u->pane_state[p]);
    u->model = as_view_model(u->s);
    u->prog = as_view_program(u->s);
    u->v.layer = u->v.head = 0;
    u->v.follow = true;
    u->v.norm = view_norm_step(as_view_program(u->s), 0, NK_COUNT - 1, 1);
    return RD_LAYOUT;
}

unsigned tui_after_command(tui *u)
{
    unsigned bits = panes_showing(u, SHOWS_DATA | SHOWS_LOG | SHOWS_BUSY);
    if (as_view_model(u->s) != u->model || as_view_program(u->s) != u->prog)
        bits |= new_model(u);
    view_clamp(&u->v, u->s);
    if (u->v.pane_req >= 0)
        bits |= show_pane(u, u->v.pane_req);
    u->v.pane_req = -1;
    return bits;
}

static int run_one(tui *u, const char *cmd)
{
    as_error err = {{0}};
    bool changed = false;
    capture_begin(u);
    snprintf(u->running, sizeof u->running, "%s   (Ctrl-C stops it)", cmd);
    u->busy = true;
    u->dirty |= panes_showing(u, SHOWS_BUSY);
    tui_redraw(u);
    int rc = view_exec(&u->v, u->s, cmd, &changed, &err);
    /* The panes draw what the pass computed: after a change of the
     * interventions it is computed again before they do (the batch and
     * the REPL leave it to the next command that reads it). */
    as_error e2 = {{0}};
    if (as_interp_stale(as_view_interp(u->s)) && as_session_refresh(u->s, &e2)) {
        if (rc)
            log_addf(&u->log, LOG_ERROR, "error: %s", err.msg);
        err = e2;
        rc = AS_ERR;
    }
    u->busy = false;
    capture_end(u, u->null_out);
    if (rc)
        log_addf(&u->log, LOG_ERROR, "error: %s", err.msg);
    if (changed && u->v.cmap != u->t.cmap)
        term_set_cmap(&u->t, u->v.cmap);
    return rc;
}

bool tui_log_visible(const tui *u)
{
    return !u->lay.too_small && u->lay.r[P_LOG].h > 2;
}

void tui_say(tui *u, log_kind kind, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    log_addf(&u->log, kind, "%s", line);
    u->dirty |= panes_showing(u, SHOWS_LOG);
    if (!tui_log_visible(u)) {
        u->echo_from = u->log.total - 1;
        u->dirty |= RD(P_CMD);
    }
}

/* Whether a command is `view dump`: a dump keeps the screen as the
 * commands before it left it, so its own "wrote" line opens no overlay. */
static bool is_dump(const char *cmd)
{
    return !strncmp(cmd, "view", 4) && strstr(cmd, "dump") != NULL;
}

/* Where the log is hidden, the output of the line just run goes to the
 * overlay or the one-line echo. */
static void show_output(tui *u, long from, run_from how, bool dump_last)
{
    if (tui_log_visible(u) || u->log.total <= from || how == RUN_LESSON)
        return;
    if (how == RUN_KEY) {
        u->echo_from = from;
        u->dirty |= RD(P_CMD);
    } else if (!dump_last) {
        u->popup = true;
        u->popup_from = from;
        u->dirty |= RD_POPUP;
    }
}

int tui_run_line(tui *u, const char *line, run_from how)
{
    int rc = 0;
    int n;
    char **cmds = as_split_commands(line, &n);
    log_addf(&u->log, LOG_ECHO, "%s %s", u->t.utf8 ? "›" : ">", line);
    long from = u->log.total;
    bool dump_last = n > 0 && is_dump(cmds[n - 1]);
    u->log_scroll = 0;
    u->popup = false;
    u->echo_from = -1;
    *u->interrupted = 0;
    for (int i = 0; cmds && i < n && !as_view_quit(u->s) && !*u->interrupted && !rc; i++)
        rc = run_one(u, cmds[i]);
    as_free_commands(cmds, n);
    *u->interrupted = 0;
    u->dirty |= tui_after_command(u);
    show_output(u, from, how, dump_last);
    return rc;
}
