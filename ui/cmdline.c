/* cmdline: GNU readline inside the view, through readline's callback
 * interface: the main loop hands it keys one at a time (so the panes keep
 * updating while you type), readline edits the line, and this file draws
 * it. Nothing of readline's reaches the terminal directly: its output
 * stream is /dev/null, completion lists go to the log pane. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "rlsupport.h"
#include "textfmt.h"
#include "tui.h"

#define PROMPT "attnscope> "
#define QUEUE 64

/* Readline's hooks (getc, redisplay, line handler, match display) take no
 * context pointer, so the view they serve and the bytes waiting for
 * readline are kept here while the view runs. */
static struct {
    tui *u;
    unsigned char q[QUEUE];
    int head, n;
    char *line;      /* a finished line, for the main loop to run */
    bool eof;        /* Ctrl-D on an empty line */
    char *hist;
    FILE *null;
} cl;

static int cl_getc(FILE *f)
{
    (void)f;
    if (cl.n == 0)
        return 0; /* not reached: readline reads only what was queued */
    unsigned char c = cl.q[cl.head];
    cl.head = (cl.head + 1) % QUEUE;
    cl.n--;
    return c;
}

static int cl_available(void)
{
    return cl.n > 0;
}

static void cl_redisplay(void)
{
    if (cl.u)
        cl.u->dirty |= RD(P_CMD);
}

/* The terminal belongs to curses: readline must not change its modes. */
static void cl_prep(int meta)
{
    (void)meta;
}

static void cl_deprep(void)
{
}

static void cl_on_line(char *line)
{
    if (!line)
        cl.eof = true;
    else
        cl.line = line;
}

/* Completion candidates, listed in the log pane rather than on stdout. */
static void cl_matches(char **matches, int n, int max_len)
{
    (void)max_len;
    tui *u = cl.u;
    int width = u->lay.r[P_LOG].w > 4 ? u->lay.r[P_LOG].w - 2 : 60, used = 0, shown = 0;
    char line[1024] = "";
    for (int i = 1; i <= n && shown < 400; i++, shown++) {
        int w = tf_width(matches[i], u->t.utf8) + 2;
        if (used && (used + w > width || used + w >= (int)sizeof line - 64)) {
            log_addf(&u->log, LOG_HINT, "%s", line);
            line[0] = '\0';
            used = 0;
        }
        strncat(line, matches[i], sizeof line - strlen(line) - 3);
        strcat(line, "  ");
        used += w;
    }
    if (used)
        log_addf(&u->log, LOG_HINT, "%s", line);
    if (shown < n)
        log_addf(&u->log, LOG_HINT, "... and %d more", n - shown);
    u->log_scroll = 0;
    u->dirty |= panes_showing(u, SHOWS_LOG);
}

void cmdline_init(tui *u)
{
    cl.u = u;
    cl.hist = rls_history_path();
    cl.null = fopen("/dev/null", "w");
    rls_setup(u->s);
    rl_catch_signals = 0;
    rl_catch_sigwinch = 0;
    rl_change_environment = 0; /* LINES/COLUMNS in the environment would pin curses' size */
    rl_getc_function = cl_getc;
    rl_input_available_hook = cl_available;
    rl_redisplay_function = cl_redisplay;
    rl_prep_term_function = cl_prep;
    rl_deprep_term_function = cl_deprep;
    rl_completion_display_matches_hook = cl_matches;
    rl_outstream = cl.null;
    rls_history_load(cl.hist);
    rl_callback_handler_install(PROMPT, cl_on_line);
    rl_variable_bind("bell-style", "none");
    /* Bytes above 127 are text (UTF-8, Latin-1 or raw), never Meta keys. */
    rl_variable_bind("input-meta", "on");
    rl_variable_bind("convert-meta", "off");
    rl_variable_bind("output-meta", "on");
}

void cmdline_close(void)
{
    rl_callback_handler_remove();
    /* Readline's own terminal handling back, for the plain REPL (which
     * runs when the view cannot start). */
    rl_getc_function = rl_getc;
    rl_input_available_hook = NULL;
    rl_redisplay_function = rl_redisplay;
    rl_prep_term_function = rl_prep_terminal;
    rl_deprep_term_function = rl_deprep_terminal;
    rl_completion_display_matches_hook = NULL;
    rl_outstream = stdout;
    free(cl.line);
    free(cl.hist);
    if (cl.null)
        fclose(cl.null);
    memset(&cl, 0, sizeof cl);
}

static void push(const char *bytes, size_t n)
{
    for (size_t i = 0; i < n && cl.n < QUEUE; i++) {
        cl.q[(cl.head + cl.n) % QUEUE] = (unsigned char)bytes[i];
        cl.n++;
    }
}

/* Curses decodes special keys; readline wants the bytes a terminal sends. */
static const char *key_sequence(int key)
{
    switch (key) {
    case KEY_LEFT: return "\033[D";
    case KEY_RIGHT: return "\033[C";
    case KEY_UP: return "\033[A";
    case KEY_DOWN: return "\033[B";
    case KEY_HOME: return "\033[H";
    case KEY_END: return "\033[F";
    case KEY_DC: return "\033[3~";
    case KEY_BACKSPACE: return "\177";
    case KEY_ENTER: return "\r";
    default: return NULL;
    }
}

static void feed(tui *u, int ch, bool keycode)
{
    cl.u = u;
    if (keycode) {
        const char *seq = key_sequence(ch);
        if (seq)
            push(seq, strlen(seq));
    } else if (ch < 0x100) {
        char c = (char)ch; /* keys come as the terminal's bytes (read_key) */
        push(&c, 1);
    } else {
        char mb[MB_LEN_MAX];
        mbstate_t st;
        memset(&st, 0, sizeof st);
        size_t n = wcrtomb(mb, (wchar_t)ch, &st);
        if (n != (size_t)-1)
            push(mb, n);
    }
    while (cl.n > 0 && !cl.line && !cl.eof)
        rl_callback_read_char();
    cl.n = 0;
    if (cl.line)
        rls_history_add(cl.hist, cl.line);
    u->dirty |= RD(P_CMD);
}

void cmdline_clear(tui *u)
{
    rl_free_line_state();
    rl_callback_sigcleanup();
    rl_replace_line("", 0);
    rl_point = rl_end = 0;
    rl_on_new_line();
    u->dirty |= RD(P_CMD);
}

bool cmdline_empty(void)
{
    return rl_end == 0;
}

char *cmdline_take_line(void)
{
    char *line = cl.line;
    cl.line = NULL;
    return line;
}

bool cmdline_eof(void)
{
    bool e = cl.eof;
    cl.eof = false;
    return e;
}

/* Byte offset into the line from which the cursor fits in `avail` columns. */
static int scroll_offset(const char *line, int point, int avail, bool utf8)
{
    int off = 0;
    char *head = strndup(line, (size_t)point);
    if (!head)
        return 0;
    while (off < point && tf_width(head + off, utf8) >= avail) {
        off++;
        while (off < point && ((unsigned char)line[off] & 0xC0) == 0x80)
            off++; /* a whole character at a time */
    }
    free(head);
    return off;
}

/* A key's command output, where the Output pane is hidden: its first
 * line (an error, if there is one), and how many more there are. */
static bool draw_echo(tui *u, WINDOW *w, int cols)
{
    const log_line *first = log_get_added(&u->log, u->echo_from), *l;
    if (u->busy || !first)
        return false;
    for (long n = u->echo_from; (l = log_get_added(&u->log, n)); n++)
        if (l->kind == LOG_ERROR) {
            first = l;
            break;
        }
    long more = u->log.total - u->echo_from - 1;
    char line[1024];
    if (more > 0)
        snprintf(line, sizeof line, "%s   (+%ld line%s: 6 shows Output)", first->text, more, more == 1 ? "" : "s");
    else
        snprintf(line, sizeof line, "%s", first->text);
    term_role(&u->t, w, first->kind == LOG_ERROR ? R_ERROR : first->kind == LOG_WARN ? R_WARN : R_NORMAL);
    put_text(u, w, 0, 0, line, cols);
    return true;
}

static void draw_idle(tui *u, WINDOW *w, int cols)
{
    if (u->echo_from >= 0 && draw_echo(u, w, cols))
        return;
    term_role(&u->t, w, R_DIM);
    const char *hint = u->busy ? u->running
                       : as_view_n_tokens(u->s) == 0
                           ? "press : and type a command, e.g.  prompt It is a truth universally acknowledged"
                           : "press : to type a command   ? keys   q quit";
    put_text(u, w, 0, 0, hint, cols);
}

static void draw(tui *u)
{
    WINDOW *w = u->win[P_CMD];
    int cols = getmaxx(w);
    werase(w);
    if (u->busy || (u->focus != P_CMD && cmdline_empty())) {
        draw_idle(u, w, cols);
        curs_set(0);
        wnoutrefresh(w);
        return;
    }
    const char *prompt = rl_display_prompt ? rl_display_prompt : PROMPT;
    term_role(&u->t, w, u->focus == P_CMD ? R_PROMPT : R_DIM);
    int pw = put_text(u, w, 0, 0, prompt, cols / 2);
    int avail = cols - pw - 1;
    int off = scroll_offset(rl_line_buffer, rl_point, avail, u->t.utf8);
    term_role(&u->t, w, u->focus == P_CMD ? R_NORMAL : R_DIM);
    put_text(u, w, 0, pw, rl_line_buffer + off, avail);
    char *head = strndup(rl_line_buffer + off, (size_t)(rl_point - off));
    int cx = pw + (head ? tf_width(head, u->t.utf8) : 0);
    free(head);
    wmove(w, 0, cx < cols ? cx : cols - 1);
    curs_set(u->focus == P_CMD ? 1 : 0);
    wnoutrefresh(w);
}

/* Focused, every key is the command line's: typed into readline, but Esc
 * (or Enter on an empty line) returns to the pane it came from, PgUp/PgDn
 * scroll the log, F1 shows the keys. */
static unsigned key(tui *u, int ch, bool keycode)
{
    if (!keycode && ch == KEY_ESC)
        return tui_focus(u, u->last_pane); /* Ctrl-C, not Esc, stops a command */
    if (u->busy)
        return 0; /* typing waits for the running command */
    bool enter = keycode ? ch == KEY_ENTER : ch == '\r' || ch == '\n';
    if (enter && cmdline_empty())
        return tui_focus(u, u->last_pane);
    if (keycode && (ch == KEY_PPAGE || ch == KEY_NPAGE))
        return pane_log_scroll(u, ch == KEY_PPAGE ? 5 : -5);
    /* The key that opens the command line, typed when it is open already
     * (the view starts there): no command begins with it. */
    if (!keycode && (ch == ':' || ch == '/') && cmdline_empty())
        return RD(P_CMD);
    /* No command begins with '?' either: on an empty line it is the keys,
     * as the welcome says. */
    if ((keycode && ch == KEY_F(1)) || (!keycode && ch == '?' && cmdline_empty())) {
        u->help = true;
        u->help_top = 0;
        return RD_HELP;
    }
    feed(u, ch, keycode);
    return RD(P_CMD);
}

const pane_class pane_cmdline = {
    .name = "command line",
    .shows = SHOWS_FOCUS | SHOWS_DATA | SHOWS_BUSY, /* the idle hint differs with no context */
    .focusable = true,
    .cursor = true,
    .keys = "Enter run  Tab complete  Up history  Esc back to the view",
    .keys_short = "Esc back to the view",
    .draw = draw,
    .key = key,
};
