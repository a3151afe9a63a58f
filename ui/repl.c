#include "repl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "lesson.h"
#include "rlsupport.h"
#include "view.h"

#define PROMPT "attnscope> "

/* Readline's line handler takes no context pointer: the REPL's state is
 * kept here while as_repl runs. */
static struct repl_state {
    as_session *s;
    view v;
    char *hist;
    volatile sig_atomic_t *interrupted;
    bool eof;
} repl;

/* Set by the SIGWINCH handler (which takes no context), read by the loop. */
static volatile sig_atomic_t resized;

static void on_winch(int sig)
{
    (void)sig;
    resized = 1;
}

static void run_commands(const char *line)
{
    int n;
    char **cmds = as_split_commands(line, &n);
    *repl.interrupted = 0;
    for (int i = 0; cmds && i < n && !as_view_quit(repl.s) && !*repl.interrupted; i++) {
        as_error err = {{0}};
        if (view_exec(&repl.v, repl.s, cmds[i], NULL, &err)) {
            fflush(stdout);
            fprintf(stderr, "error: %s\n", err.msg);
            break;
        }
    }
    as_free_commands(cmds, n);
    fflush(stdout);
}

/* Runs step i's commands, printing each; the first failure stops it. */
static int run_step(view *v, as_session *s, const lesson *l, int i, as_error *err)
{
    for (int k = 0; k < l->steps[i].n_cmds; k++) {
        printf("attnscope> %s\n", l->steps[i].cmds[k]);
        fflush(stdout);
        if (view_exec(v, s, l->steps[i].cmds[k], NULL, err))
            return AS_ERR;
    }
    return AS_OK;
}

/* What the teacher typed at a step's pause: 'n' on, 'b' back, 'q' ends.
 * Readline hands the terminal back in its usual mode while a line's
 * commands run, so a plain line read works here. */
static int lesson_pause(int i, int n)
{
    char line[64];
    printf("-- step %d of %d: Enter goes on, b Enter back, q Enter ends -- ", i + 1, n);
    fflush(stdout);
    if (!fgets(line, sizeof line, stdin) || *repl.interrupted) {
        clearerr(stdin); /* Ctrl-D ends the lesson, not the REPL */
        printf("\n");
        return 'q';
    }
    return line[0] == 'b' || line[0] == 'q' ? line[0] : 'n';
}

/* `lesson NAME` in the REPL: a step's sentences, its commands and their
 * output, then a pause; back replays the lesson up to the step before. */
static int repl_lesson(void *ctx, lesson *l, as_error *err)
{
    (void)ctx;
    view *v = &repl.v;
    int rc = view_lesson_model(repl.s, l, err);
    v->in_lesson = true;
    for (int i = 0; rc == AS_OK && i < l->n_steps;) {
        printf("\n== %s (%d/%d) ==\n%s\n\n", l->title, i + 1, l->n_steps, l->steps[i].text);
        if ((rc = run_step(v, repl.s, l, i, err)) || i + 1 == l->n_steps)
            break;
        int c = lesson_pause(i, l->n_steps);
        if (c == 'q')
            break;
        if (c == 'n') {
            i++;
            continue;
        }
        i = i > 0 ? i - 1 : 0; /* back: the lesson replayed quietly to the step before */
        FILE *out = as_view_out(repl.s), *null = fopen("/dev/null", "w");
        as_view_set_out(repl.s, null ? null : out);
        rc = view_lesson_model(repl.s, l, err);
        for (int k = 0; rc == AS_OK && k < i; k++)
            for (int c2 = 0; rc == AS_OK && c2 < l->steps[k].n_cmds; c2++)
                rc = view_exec(v, repl.s, l->steps[k].cmds[c2], NULL, err);
        as_view_set_out(repl.s, out);
        if (null)
            fclose(null);
    }
    v->in_lesson = false;
    lesson_free(l);
    free(l);
    return rc;
}

/* Called by readline with a finished line (NULL at Ctrl-D). */
static void on_line(char *line)
{
    if (!line) {
        repl.eof = true;
        printf("\n");
        rl_callback_handler_remove(); /* no fresh prompt after Ctrl-D */
        return;
    }
    rls_history_add(repl.hist, line);
    run_commands(line);
    free(line);
    if (as_view_quit(repl.s))
        rl_callback_handler_remove(); /* no fresh prompt after `quit` */
}

/* Ctrl-C at the prompt: drop the line being typed, as a shell does. */
static void drop_line(void)
{
    *repl.interrupted = 0;
    rl_free_line_state();
    rl_callback_sigcleanup();
    rl_replace_line("", 0);
    rl_point = rl_end = 0;
    printf("^C\n");
    rl_on_new_line();
    rl_redisplay();
}

static void wait_input(void)
{
    fd_set fds;
    FD_ZERO(&fds);
    FD_SET(STDIN_FILENO, &fds);
    if (select(STDIN_FILENO + 1, &fds, NULL, NULL, NULL) > 0) {
        rl_callback_read_char();
        return;
    }
    if (errno != EINTR)
        repl.eof = true;
    else if (*repl.interrupted)
        drop_line();
    if (resized) {
        resized = 0;
        rl_resize_terminal();
    }
}

int as_repl(as_session *s, volatile sig_atomic_t *interrupted)
{
    repl.s = s;
    repl.interrupted = interrupted;
    view_init(&repl.v);
    repl.v.lesson = repl_lesson;
    repl.hist = rls_history_path();
    rls_setup(s);
    /* SIGINT is ours (it interrupts the interpreter); readline must not
     * install handlers of its own around each character. */
    rl_catch_signals = 0;
    rl_catch_sigwinch = 0;
    struct sigaction sa = {0};
    sa.sa_handler = on_winch;
    sigaction(SIGWINCH, &sa, NULL);
    rls_history_load(repl.hist);
    printf("attnscope — %s (%s, %d layers, %d heads). Type help; Ctrl-D leaves.\n", as_view_model_name(s),
           as_model_arch_name(as_view_model(s)), as_view_n_layer(s), as_view_n_head(s));
    rl_callback_handler_install(PROMPT, on_line);
    while (!as_view_quit(s) && !repl.eof)
        wait_input();
    rl_callback_handler_remove(); /* restores the terminal; harmless twice */
    free(repl.hist);
    return 0;
}
