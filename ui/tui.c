/* tui: the full-screen view's main loop. Waits for a key (or a resize, a
 * click, Ctrl-C), lets the handlers change the view, and redraws only the
 * panes whose bits they returned. Commands run as in the REPL, with their
 * output captured into the log pane; during `gen` the session calls back
 * after every token, and the view redraws and waits `set delay` ms,
 * still answering keys, so a class can watch each token's attention. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "textfmt.h"
#include "tui.h"

/* ---- windows ---- */

static void drop_windows(tui *u)
{
    for (int p = 0; p < P_COUNT; p++)
        if (u->win[p]) {
            delwin(u->win[p]);
            u->win[p] = NULL;
        }
}

static void relayout(tui *u)
{
    int rows, cols;
    getmaxyx(stdscr, rows, cols);
    /* The pane looked at: the focused one, or the one Esc returns to. */
    pane_id at = u->focus == P_CMD ? u->last_pane : u->focus;
    if (PANE_IS_SIDE(at))
        u->shared = at;
    u->present = panes_present(u);
    layout_compute_for(&u->lay, rows, cols, layout_single(rows) && !PANE_IS_SIDE(at) ? (at == P_ROUTE ? P_ROUTE : P_ATTN) : u->shared,
                       u->present);
    u->shared = u->lay.shown;
    drop_windows(u);
    /* stdscr lies under the panes: refreshed once here, then untouched,
     * so reading keys from it never paints over them. */
    werase(stdscr);
    wnoutrefresh(stdscr);
    for (int p = 0; p < P_COUNT && !u->lay.too_small; p++) {
        rect r = u->lay.r[p];
        if (r.h <= 0 || r.w <= 0)
            continue;
        u->win[p] = newwin(r.h, r.w, r.y, r.x);
        if (u->win[p])
            leaveok(u->win[p], !pane_classes[p]->cursor);
    }
    u->dirty |= RD_PANES;
}

static void centred(tui *u, int y, const char *s)
{
    int w = tf_width(s, u->t.utf8), x = (u->lay.cols - w) / 2;
    if (y >= 0 && y < u->lay.rows)
        put_text(u, stdscr, y, x > 0 ? x : 0, s, u->lay.cols);
}

static void draw_too_small(tui *u)
{
    char need[48], have[48];
    snprintf(need, sizeof need, "need %dx%d", LAYOUT_MIN_W, LAYOUT_MIN_H);
    snprintf(have, sizeof have, "have %dx%d", u->lay.cols, u->lay.rows);
    werase(stdscr);
    int y = u->lay.rows / 2 - 1;
    term_role_attr(&u->t, stdscr, R_WARN, A_BOLD);
    centred(u, y, "terminal too small");
    term_role(&u->t, stdscr, R_NORMAL);
    centred(u, y + 1, need);
    centred(u, y + 2, have);
    curs_set(0);
    wnoutrefresh(stdscr);
}

void tui_redraw(tui *u)
{
    if (u->dirty & RD_LAYOUT)
        relayout(u);
    if (u->lay.too_small) {
        draw_too_small(u);
        doupdate();
        u->dirty = 0;
        return;
    }
    unsigned dirty = u->dirty;
    u->dirty = 0;
    for (int p = 0; p < P_COUNT; p++)
        if ((dirty & RD(p)) && u->win[p] && !pane_classes[p]->cursor)
            pane_classes[p]->draw(u);
    if (u->lesson && (dirty & (RD_PANES | RD_LESSON)))
        tour_draw(u);
    if (u->popup && (dirty & (RD_PANES | RD_POPUP)))
        popup_draw(u);
    if (u->help && (dirty & (RD_PANES | RD_HELP)))
        help_draw(u);
    /* The command line goes last: the terminal's cursor is left where
     * the last refreshed window put it. */
    for (int p = 0; p < P_COUNT && !u->help; p++)
        if (u->win[p] && pane_classes[p]->cursor && ((dirty & RD(p)) || (int)u->focus == p))
            pane_classes[p]->draw(u);
    doupdate();
}

/* ---- command output ---- */

static void capture_begin(tui *u)
{
    u->cap_out_buf = u->cap_warn_buf = NULL;
    u->cap_out_len = u->cap_warn_len = u->cap_out_seen = u->cap_warn_seen = 0;
    u->cap_out = open_memstream(&u->cap_out_buf, &u->cap_out_len);
    u->cap_warn = open_memstream(&u->cap_warn_buf, &u->cap_warn_len);
    if (u->cap_out)
        u->s->out = u->cap_out;
    if (u->cap_warn)
        u->s->warn = u->cap_warn;
}

/* Moves what the running command printed so far into the log. */
static void capture_drain(tui *u)
{
    if (u->cap_out && fflush(u->cap_out) == 0 && u->cap_out_len > u->cap_out_seen) {
        log_add(&u->log, LOG_OUT, u->cap_out_buf + u->cap_out_seen, u->cap_out_len - u->cap_out_seen);
        u->cap_out_seen = u->cap_out_len;
        u->dirty |= panes_showing(SHOWS_LOG);
    }
    if (u->cap_warn && fflush(u->cap_warn) == 0 && u->cap_warn_len > u->cap_warn_seen) {
        log_add(&u->log, LOG_WARN, u->cap_warn_buf + u->cap_warn_seen, u->cap_warn_len - u->cap_warn_seen);
        u->cap_warn_seen = u->cap_warn_len;
        u->dirty |= panes_showing(SHOWS_LOG);
    }
}

static void capture_end(tui *u, FILE *null)
{
    capture_drain(u);
    log_flush(&u->log);
    u->s->out = u->s->warn = null;
    if (u->cap_out)
        fclose(u->cap_out);
    if (u->cap_warn)
        fclose(u->cap_warn);
    free(u->cap_out_buf);
    free(u->cap_warn_buf);
    u->cap_out = u->cap_warn = NULL;
    u->cap_out_buf = u->cap_warn_buf = NULL;
}

/* ---- running commands ---- */

/* `view PANE`: shows the pane (a small screen's shared slot takes it)
 * and makes it the one Esc returns to; from the panes it takes the focus. */
static unsigned show_pane(tui *u, int req)
{
    pane_id p = (pane_id)req;
    if (!(u->present & RD(p))) {
        log_addf(&u->log, LOG_HINT, "the %s pane does not apply to this model", view_pane_name(req));
        return panes_showing(SHOWS_LOG);
    }
    if (u->focus != P_CMD)
        return tui_focus(u, p);
    u->last_pane = p;
    if (PANE_IS_SIDE(p))
        u->shared = p;
    return u->lay.r[p].h <= 0 ? RD_LAYOUT : 0;
}

/* After `load`: the vocabulary-sized scratch, the lens rows and the
 * panes that apply belong to the old model. */
static unsigned new_model(tui *u)
{
    free(u->probs);
    free(u->order);
    free(u->lens);
    u->probs = NULL;
    u->order = NULL;
    u->lens = NULL;
    u->model = u->s->model;
    u->v.layer = u->v.head = 0;
    u->v.follow = true;
    u->route_expert = -1;
    u->route_first = u->route_e0 = 0;
    u->v.norm = view_norm_step(u->s->prog, 0, NK_COUNT - 1, 1);
    return RD_LAYOUT;
}

unsigned tui_after_command(tui *u)
{
    unsigned bits = panes_showing(SHOWS_DATA | SHOWS_LOG | SHOWS_BUSY);
    if (u->s->model != u->model)
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
    u->dirty |= panes_showing(SHOWS_BUSY);
    tui_redraw(u);
    int rc = view_exec(&u->v, u->s, cmd, &changed, &err);
    /* The panes draw what the pass computed: after a change of the
     * interventions it is computed again before they do (the batch and
     * the REPL leave it to the next command that reads it). */
    as_error e2 = {{0}};
    if (as_interp_stale(u->s->it) && as_session_refresh(u->s, &e2)) {
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

/* `view dump FILE`: the screen as it stands once the commands before
 * this one have run (the panes redrawn as when nothing runs: no
 * "running" line), then read back from curses' picture of it. */
static int dump_view(void *ctx, const char *path, as_error *err)
{
    tui *u = ctx;
    capture_drain(u);
    u->busy = false;
    u->dirty |= tui_after_command(u);
    tui_redraw(u);
    u->busy = true;
    int rc = screen_dump(u, path, err);
    if (rc == AS_OK)
        fprintf(u->s->out, "wrote %s (the %dx%d screen as text)\n", path, u->lay.cols, u->lay.rows);
    return rc;
}

bool tui_log_visible(const tui *u)
{
    return !u->lay.too_small && u->lay.r[P_LOG].h > 2;
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
    for (int i = 0; cmds && i < n && !u->s->quit && !*u->interrupted && !rc; i++)
        rc = run_one(u, cmds[i]);
    as_free_commands(cmds, n);
    *u->interrupted = 0;
    u->dirty |= tui_after_command(u);
    show_output(u, from, how, dump_last);
    if (u->lesson_pending)
        tour_begin(u);
    return rc;
}

/* ---- input ---- */

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Ctrl-C with nothing running: clear the command line, or say how to leave. */
static void idle_interrupt(tui *u)
{
    *u->interrupted = 0;
    if (!cmdline_empty()) {
        cmdline_clear(u);
        return;
    }
    log_addf(&u->log, LOG_HINT, "Ctrl-C stops a running command; q, Ctrl-D or quit leaves.");
    u->log_scroll = 0;
    u->dirty |= panes_showing(SHOWS_LOG);
}

/* Keeps a key for after the running command; a paste may bring
 * thousands. Beyond a million the rest is dropped. */
static void keep_ahead(tui *u, int ch, bool keycode)
{
    if (u->n_ahead == u->cap_ahead) {
        int cap = u->cap_ahead ? u->cap_ahead * 2 : 256;
        struct typed_key *grown = cap <= (1 << 20) ? realloc(u->ahead, (size_t)cap * sizeof *grown) : NULL;
        if (!grown)
            return;
        u->ahead = grown;
        u->cap_ahead = cap;
    }
    u->ahead[u->n_ahead++] = (struct typed_key){ch, keycode};
}

static void dispatch(tui *u, int ch, bool keycode)
{
    if (tui_key_waits(u, ch, keycode)) {
        keep_ahead(u, ch, keycode);
        return;
    }
    u->dirty |= tui_key(u, ch, keycode);
    char *line = cmdline_take_line();
    if (line) {
        tui_run_line(u, line, RUN_TYPED);
        free(line);
    }
    if (cmdline_eof())
        u->quit = true;
}

/* Keys typed while a command ran, in the order they came. */
static void replay_ahead(tui *u)
{
    while (u->first_ahead < u->n_ahead && !u->busy && !u->quit && !u->s->quit) {
        struct typed_key k = u->ahead[u->first_ahead++];
        if (u->first_ahead == u->n_ahead)
            u->first_ahead = u->n_ahead = 0; /* all caught up: reuse from the start */
        dispatch(u, k.ch, k.keycode);
    }
}

/* One key: a byte, in every locale. Curses' wide reading drops a byte
 * the locale cannot decode (invalid UTF-8; in the C locale it waits for
 * ever), losing what was typed; readline, which gets the command line's
 * bytes, puts characters together itself and keeps a stray byte as batch
 * mode does. The view's own keys are all ASCII. */
static int read_key(const tui *u, wint_t *ch)
{
    (void)u;
    int c = getch();
    if (c == ERR)
        return ERR;
    *ch = (wint_t)c;
    return c >= KEY_MIN ? KEY_CODE_YES : OK;
}

/* Waits up to timeout_ms (-1: for ever) for one input event and handles it. */
static void handle_input(tui *u, int timeout_ms)
{
    wint_t ch;
    if (!u->busy && u->first_ahead < u->n_ahead) {
        replay_ahead(u);
        return;
    }
    timeout(timeout_ms);
    int r = read_key(u, &ch);
    if (*u->interrupted && !u->busy)
        idle_interrupt(u);
    if (r == ERR)
        return;
    bool keycode = r == KEY_CODE_YES;
    if (keycode && ch == KEY_RESIZE)
        u->dirty |= RD_LAYOUT;
    else if (keycode && ch == KEY_MOUSE)
        u->dirty |= tui_mouse(u);
    else
        dispatch(u, (int)ch, keycode);
}

/* Called by the session after each pass of `gen`: show it, then wait the
 * delay while answering keys (a running command takes no new ones). */
static void on_pass(void *ctx, as_session *s)
{
    tui *u = ctx;
    capture_drain(u);
    view_clamp(&u->v, s);
    u->dirty |= panes_showing(SHOWS_DATA);
    tui_redraw(u);
    long deadline = now_ms() + u->v.delay_ms;
    do {
        long left = deadline - now_ms();
        handle_input(u, left > 0 ? (int)left : 0);
        tui_redraw(u);
    } while (now_ms() < deadline && !*u->interrupted);
}

/* ---- set-up ---- */

/* Anything written to stderr behind curses' back would scar the screen:
 * it goes to a file while the view runs and is replayed on exit. */
static int hide_stderr(FILE **tmp)
{
    fflush(stderr);
    *tmp = tmpfile();
    int saved = *tmp ? dup(STDERR_FILENO) : -1;
    if (saved >= 0)
        dup2(fileno(*tmp), STDERR_FILENO);
    return saved;
}

static void restore_stderr(int saved, FILE *tmp)
{
    if (saved < 0)
        return;
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    char buf[4096];
    size_t n;
    rewind(tmp);
    while ((n = fread(buf, 1, sizeof buf, tmp)) > 0)
        fwrite(buf, 1, n, stderr);
    fclose(tmp);
}

static void welcome(tui *u, const char *notes)
{
    const as_config *c = &u->s->model->cfg;
    log_addf(&u->log, LOG_HINT, "attnscope %s %s: %s, %d layers, %d heads, context %d", tf_glyph(G_SEP, u->t.utf8),
             c->name, as_model_arch_name(u->s->model), c->n_layer, c->n_head, c->n_ctx);
    if (notes && *notes)
        log_add(&u->log, LOG_WARN, notes, strlen(notes));
    log_flush(&u->log);
    /* What the first command is depends on what the model reads (the program says). */
    const as_program *p = u->s->prog;
    bool pixels = p->streams[p->out_stream].input == AS_INPUT_PIXELS;
    bool causal = p->streams[p->out_stream].causal;
    if (pixels)
        log_addf(&u->log, LOG_HINT, "Give it an image and Enter:  image FILE.png; finish");
    else if (p->source_stream >= 0)
        log_addf(&u->log, LOG_HINT, "Give it a source sentence and Enter:  source TEXT; finish");
    else if (!causal)
        log_addf(&u->log, LOG_HINT, "Type a prompt and Enter:  prompt She was [MASK] happy.; finish");
    else
        log_addf(&u->log, LOG_HINT, "Type a prompt and Enter:  prompt It is a truth universally acknowledged");
    log_addf(&u->log, LOG_HINT, causal ? "Esc then leaves the command line: Space generates a token, s steps one op."
                                       : "Esc then leaves the command line: s steps one op, f finishes the pass.");
    log_addf(&u->log, LOG_HINT, "? shows every key (here too); lesson lists the guided tours.");
}

static void teardown(tui *u)
{
    tour_end(u);
    u->s->on_pass = NULL;
    u->s->on_pass_ctx = NULL;
    drop_windows(u);
    term_close(&u->t);
    cmdline_close();
    log_free(&u->log);
    free(u->probs);
    free(u->order);
    free(u->lens);
    free(u->tok_row);
    free(u->tok_col);
    free(u->ahead);
}

int as_tui(as_session *s, volatile sig_atomic_t *interrupted, const char *notes)
{
    tui u;
    memset(&u, 0, sizeof u);
    u.s = s;
    u.interrupted = interrupted;
    view_init(&u.v);
    u.v.dump = dump_view;
    u.v.dump_ctx = &u;
    u.v.lesson = tour_take;
    log_init(&u.log, 2000);
    u.focus = s->it->out->n_tokens ? P_ATTN : P_CMD;
    u.last_pane = P_ATTN;
    u.echo_from = -1;
    u.model = s->model;
    u.shared = P_PROBS;
    u.route_expert = -1;
    FILE *saved_out = s->out, *saved_warn = s->warn, *err_tmp = NULL;
    u.null_out = fopen("/dev/null", "w");
    /* Readline reads the terminal's capabilities when it initializes:
     * before curses, so that curses' own terminal is the current one. */
    cmdline_init(&u);
    char why[256];
    int saved_err = hide_stderr(&err_tmp);
    if (term_open(&u.t, why, sizeof why)) {
        restore_stderr(saved_err, err_tmp);
        cmdline_close();
        log_free(&u.log);
        if (u.null_out)
            fclose(u.null_out);
        fprintf(stderr, "attnscope: %s; starting the plain REPL\n", why);
        return -1;
    }
    term_set_cmap(&u.t, u.v.cmap);
    s->out = s->warn = u.null_out;
    s->on_pass = on_pass;
    s->on_pass_ctx = &u;
    long welcome_from = u.log.total;
    welcome(&u, notes);
    u.dirty = RD_LAYOUT;
    tui_redraw(&u);
    if (!tui_log_visible(&u)) {
        /* a small screen: the welcome over the bottom until the first key */
        u.popup = true;
        u.popup_from = welcome_from;
        u.dirty |= RD_POPUP;
    }
    while (!u.quit && !s->quit) {
        tui_redraw(&u);
        handle_input(&u, 250);
    }
    teardown(&u);
    restore_stderr(saved_err, err_tmp);
    s->out = saved_out;
    s->warn = saved_warn;
    if (u.null_out)
        fclose(u.null_out);
    return 0;
}
