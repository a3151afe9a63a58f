#include "repl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <unistd.h>

#include <readline/history.h>
#include <readline/readline.h>

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
    for (int i = 0; cmds && i < n && !repl.s->quit && !*repl.interrupted; i++) {
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
    if (repl.s->quit)
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
    printf("attnscope — %s (%s, %d layers, %d heads). Type help; Ctrl-D leaves.\n", s->model->cfg.name,
           as_model_arch_name(s->model), s->model->cfg.n_layer, s->model->cfg.n_head);
    rl_callback_handler_install(PROMPT, on_line);
    while (!s->quit && !repl.eof)
        wait_input();
    rl_callback_handler_remove(); /* restores the terminal; harmless twice */
    free(repl.hist);
    return 0;
}
