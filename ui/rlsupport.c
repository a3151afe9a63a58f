#include "rlsupport.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <readline/history.h>
#include <readline/readline.h>

#include "usage.h"
#include "view.h"

/* Readline's completion callbacks take no context pointer, so the session
 * they complete against, and the candidates of the completion under way,
 * live here for the program's lifetime. */
static as_session *completing;
static char **cands;
static int n_cands, cap_cands;

char *rls_history_path(void)
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

void rls_history_load(const char *path)
{
    if (path)
        read_history(path);
    using_history(); /* Up starts from the newest line */
}

void rls_history_add(const char *path, const char *line)
{
    if (!line || !*line)
        return;
    HIST_ENTRY *last = history_length > 0 ? history_get(history_base + history_length - 1) : NULL;
    if (last && !strcmp(last->line, line))
        return; /* a repeated command is kept once */
    add_history(line);
    using_history();
    if (path && append_history(1, path) != 0)
        write_history(path); /* the file did not exist yet */
}

/* ---- the readline side ---- */

static void add_cand(const char *c, const char *text)
{
    if (strncmp(c, text, strlen(text)))
        return;
    for (int i = 0; i < n_cands; i++)
        if (!strcmp(cands[i], c))
            return;
    if (n_cands == cap_cands) {
        int cap = cap_cands ? cap_cands * 2 : 64;
        char **grown = realloc(cands, (size_t)cap * sizeof *grown);
        if (!grown)
            return;
        cands = grown;
        cap_cands = cap;
    }
    cands[n_cands] = strdup(c);
    if (cands[n_cands])
        n_cands++;
}

static char *next_cand(const char *text, int state)
{
    static int index;
    (void)text;
    if (!state)
        index = 0;
    return index < n_cands ? strdup(cands[index++]) : NULL;
}

static void clear_cands(void)
{
    for (int i = 0; i < n_cands; i++)
        free(cands[i]);
    n_cands = 0;
}

static void add_commands(const char *text)
{
    const as_command_info *info;
    for (int i = 0; (info = usage_command_at(i)); i++)
        add_cand(info->name, text);
}

/* Splits the current command (after the last ';') before `start` into words. */
static int words_before(int start, char **words, int max)
{
    int begin = 0, n = 0;
    for (int i = 0; i < start; i++)
        if (rl_line_buffer[i] == ';')
            begin = i + 1;
    char *seg = strndup(rl_line_buffer + begin, (size_t)(start - begin));
    if (!seg)
        return 0;
    for (char *w = strtok(seg, " \t"); w && n < max; w = strtok(NULL, " \t"))
        words[n++] = strdup(w);
    free(seg);
    return n;
}

static char **complete(const char *text, int start, int end)
{
    (void)end;
    char *words[32], lits[32][32];
    int nw = words_before(start, words, 32), nl = 0;
    int kind = usage_arg_kind(nw ? words[0] : "", words, nw, lits, 32, &nl);
    clear_cands();
    if (kind & USAGE_COMMAND)
        add_commands(text);
    for (int i = 0; i < nl; i++)
        add_cand(lits[i], text);
    for (int h = 0; (kind & USAGE_HOOK) && h < as_view_n_hooks(completing); h++)
        add_cand(as_view_hook_name(completing, h), text);
    for (int i = 0; i < nw; i++)
        free(words[i]);
    /* A file argument, or one the usage line does not describe (such as
     * a figure's file after a variable number of words): readline's own
     * file-name completion. */
    if (((kind & USAGE_FILE) || kind == USAGE_NONE) && n_cands == 0)
        return NULL;
    rl_attempted_completion_over = 1;
    return n_cands ? rl_completion_matches(text, next_cand) : NULL;
}

void rls_setup(as_session *s)
{
    completing = s;
    rl_readline_name = "attnscope";
    rl_attempted_completion_function = complete;
    rl_completer_word_break_characters = " \t;\"'";
}
