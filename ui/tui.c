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

/* `view dump FILE`: the screen as it stands once the commands before
 * this one have run (the panes redrawn as when nothing runs: no
 * "running" line), then read back from curses' picture of it. */
/* The screen as it stands once the commands before a dump have run. */
static void settle_for_dump(tui *u)
{
    capture_drain(u);
    u->busy = false;
    u->dirty |= tui_after_command(u);
    /* the dump is the whole screen, as an export is: no zoomed-out cell left for later */
    double bound = u->cell_budget_ms;
    u->cell_budget_ms = -1;
    tui_redraw(u);
    u->cell_budget_ms = bound;
    u->busy = true;
}

static int dump_view(void *ctx, const char *path, as_error *err)
{
    tui *u = ctx;
    settle_for_dump(u);
    int rc = screen_dump(u, path, err);
    if (rc == AS_OK)
        fprintf(as_view_out(u->s), "wrote %s (the %dx%d screen as text)\n", path, u->lay.cols, u->lay.rows);
    return rc;
}

/* `view dump-layout FILE`: where the panes and a lesson's box are, as
 * drawn for the screen `view dump` would write. */
static int dump_layout(void *ctx, const char *path, as_error *err)
{
    tui *u = ctx;
    settle_for_dump(u);
    int rc = layout_dump(u, path, err);
    if (rc == AS_OK)
        fprintf(as_view_out(u->s), "wrote %s (where the panes are)\n", path);
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
    u->dirty |= panes_showing(u, SHOWS_LOG);
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
        tour_run_line(u, line, RUN_TYPED);
        free(line);
    }
    if (cmdline_eof())
        u->quit = true;
}

/* Keys typed while a command ran, in the order they came. */
static void replay_ahead(tui *u)
{
    while (u->first_ahead < u->n_ahead && !u->busy && !u->quit && !as_view_quit(u->s)) {
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
    if (!(keycode && (ch == KEY_RESIZE || ch == KEY_MOUSE)))
        tui_key_read(u, (int)ch, keycode);
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
    u->dirty |= panes_showing(u, SHOWS_DATA);
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
    if (saved >= 0) {
        dup2(fileno(*tmp), STDERR_FILENO);
        term_catch_crashes(fileno(*tmp), saved);
    }
    return saved;
}

static void restore_stderr(int saved, FILE *tmp)
{
    if (saved < 0)
        return;
    term_catch_crashes(-1, -1);
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
    const as_session *s = u->s;
    log_addf(&u->log, LOG_HINT, "attnscope %s %s: %s, %d layers, %d heads, context %d", tf_glyph(G_SEP, u->t.utf8),
             as_view_model_name(s), as_model_arch_name(as_view_model(s)), as_view_n_layer(s), as_view_n_head(s),
             as_view_model_ctx(s));
    if (notes && *notes)
        log_add(&u->log, LOG_WARN, notes, strlen(notes));
    log_flush(&u->log);
    /* What the first command is depends on what the model reads (the program says). */
    bool pixels = as_view_pixels(s);
    bool causal = as_view_causal(s);
    if (pixels)
        log_addf(&u->log, LOG_HINT, "Give it an image and Enter:  image FILE.png; finish");
    else if (as_view_source_stream(s) >= 0)
        log_addf(&u->log, LOG_HINT, "Give it a source sentence and Enter:  source TEXT; finish");
    else if (!causal)
        log_addf(&u->log, LOG_HINT, "Type a prompt and Enter:  prompt She was [MASK] happy.; finish");
    else
        log_addf(&u->log, LOG_HINT, "Type a prompt and Enter:  prompt It is a truth universally acknowledged");
    log_addf(&u->log, LOG_HINT, causal ? "Esc then leaves the command line: Space generates a token, s steps one op."
                                       : "Esc then leaves the command line: s steps one op, f finishes the pass.");
    log_addf(&u->log, LOG_HINT, "? shows every key (here too); lesson lists the guided tours.");
}

/* Each pane's own state; false when one is out of memory. */
static bool panes_init(tui *u)
{
    for (int p = 0; p < P_COUNT; p++)
        if (u->panes[p]->init && !(u->pane_state[p] = u->panes[p]->init()))
            return false;
    return true;
}

static void panes_free(tui *u)
{
    for (int p = 0; p < P_COUNT; p++)
        if (u->panes[p]->free)
            u->panes[p]->free(u->pane_state[p]);
}

static void teardown(tui *u)
{
    tour_end(u);
    as_view_on_pass(u->s, NULL, NULL);
    if (u->key_times)
        fclose(u->key_times);
    drop_windows(u);
    term_close(&u->t);
    cmdline_close();
    log_free(&u->log);
    free(u->probs);
    free(u->order);
    panes_free(u);
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
    u.v.dump_layout = dump_layout;
    u.v.dump_ctx = &u;
    u.v.lesson = tour_take;
    log_init(&u.log, 2000);
    u.focus = as_view_n_tokens(s) ? P_ATTN : P_CMD;
    u.last_pane = P_ATTN;
    u.echo_from = -1;
    u.model = as_view_model(s);
    u.prog = as_view_program(s);
    u.shared = P_PROBS;
    u.panes = pane_classes;
    u.cell_budget_ms = 40;
    const char *budget = getenv("AS_TEST_CELL_BUDGET_MS"); /* the tests' bound: 0 a tile of rows a redraw */
    if (budget && *budget)
        u.cell_budget_ms = atof(budget);
    const char *idle = getenv("AS_TEST_CELL_IDLE_MS");
    u.cell_idle_ms = idle && *idle ? atoi(idle) : 0;
    const char *times = getenv("ATTNSCOPE_KEY_TIMES");
    if (times && *times && !(u.key_times = fopen(times, "a")))
        fprintf(stderr, "attnscope: ATTNSCOPE_KEY_TIMES=%s: %s (the keys' redraw times are not written)\n", times,
                strerror(errno));
    if (!panes_init(&u)) {
        if (u.key_times)
            fclose(u.key_times);
        panes_free(&u);
        log_free(&u.log);
        fprintf(stderr, "attnscope: out of memory for the view; starting the plain REPL\n");
        return -1;
    }
    FILE *saved_out = as_view_out(s), *saved_warn = as_view_warn(s), *err_tmp = NULL;
    u.null_out = fopen("/dev/null", "w");
    /* Readline reads the terminal's capabilities when it initializes:
     * before curses, so that curses' own terminal is the current one. */
    cmdline_init(&u);
    char why[256];
    int saved_err = hide_stderr(&err_tmp);
    if (term_open(&u.t, why, sizeof why)) {
        restore_stderr(saved_err, err_tmp);
        cmdline_close();
        if (u.key_times)
            fclose(u.key_times);
        panes_free(&u);
        log_free(&u.log);
        if (u.null_out)
            fclose(u.null_out);
        fprintf(stderr, "attnscope: %s; starting the plain REPL\n", why);
        return -1;
    }
    term_set_cmap(&u.t, u.v.cmap);
    as_view_set_out(s, u.null_out);
    as_view_set_warn(s, u.null_out);
    as_view_on_pass(s, on_pass, &u);
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
    while (!u.quit && !as_view_quit(s)) {
        tui_redraw(&u);
        /* cells and lens rows left for later: made while no key waits, a key served first */
        int wait = 250;
        if (u.cells_late || u.lens_late) {
            u.dirty |= (u.cells_late ? RD(P_ATTN) : 0) | (u.lens_late ? RD(P_LENS) : 0);
            wait = u.cells_going_on ? 0 : u.cell_idle_ms;
            u.cells_going_on = true;
        } else {
            u.cells_going_on = false;
        }
        handle_input(&u, wait);
    }
    teardown(&u);
    restore_stderr(saved_err, err_tmp);
    as_view_set_out(s, saved_out);
    as_view_set_warn(s, saved_warn);
    if (u.null_out)
        fclose(u.null_out);
    return 0;
}
