#include "repl.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <readline/history.h>
#include <readline/readline.h>

/* Readline's completion callbacks take no context pointer, so the session
 * they complete against is kept here for the REPL's lifetime. */
static as_session *completing;

static char *history_path(void)
{
    const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
    char dir[1024];
    if (state && *state)
        snprintf(dir, sizeof dir, "%s/attnscope", state);
    else if (home && *home)
        snprintf(dir, sizeof dir, "%s/.local/state/attnscope", home);
    else
        return NULL;
    /* mkdir -p, one component at a time. */
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            mkdir(dir, 0755);
            *p = '/';
        }
    mkdir(dir, 0755);
    char *path = malloc(strlen(dir) + 16);
    if (path)
        sprintf(path, "%s/history", dir);
    return path;
}

static char *complete_word(const char *text, int state)
{
    static int index, phase;
    if (!state)
        index = 0, phase = 0;
    size_t len = strlen(text);
    if (phase == 0) {
        for (const as_command_info *cmd; (cmd = as_command_at(index));) {
            index++;
            if (!strncmp(cmd->name, text, len))
                return strdup(cmd->name);
        }
        phase = 1, index = 0;
    }
    while (index < completing->prog->n_hooks) {
        const char *name = completing->prog->hooks[index++].name;
        if (!strncmp(name, text, len))
            return strdup(name);
    }
    return NULL;
}

static char **complete(const char *text, int start, int end)
{
    (void)end;
    /* After dump HOOK, complete file names (readline's default). */
    if (start > 0 && !strncmp(rl_line_buffer, "dump ", 5) && strchr(rl_line_buffer + 5, ' ') &&
        strchr(rl_line_buffer + 5, ' ') < rl_line_buffer + start)
        return NULL;
    rl_attempted_completion_over = 1;
    return rl_completion_matches(text, complete_word);
}

int as_repl(as_session *s, volatile sig_atomic_t *interrupted)
{
    completing = s;
    rl_readline_name = "attnscope";
    rl_attempted_completion_function = complete;
    rl_completer_word_break_characters = " \t;\"'";
    char *hist = history_path();
    if (hist)
        read_history(hist);
    printf("attnscope — %s (%s, %d layers, %d heads). Type help.\n", s->model->cfg.name,
           as_arch_name(s->model->cfg.arch), s->model->cfg.n_layer, s->model->cfg.n_head);
    while (!s->quit) {
        *interrupted = 0;
        char *line = readline("attnscope> ");
        if (!line) {
            printf("\n");
            break;
        }
        if (*line) {
            add_history(line);
            if (hist)
                append_history(1, hist);
        }
        int n;
        char **cmds = as_split_commands(line, &n);
        for (int i = 0; cmds && i < n && !s->quit && !*interrupted; i++) {
            as_error err = {{0}};
            if (as_session_exec(s, cmds[i], &err)) {
                fprintf(stderr, "error: %s\n", err.msg);
                break;
            }
        }
        as_free_commands(cmds, n);
        fflush(stdout);
        free(line);
    }
    free(hist);
    return 0;
}
