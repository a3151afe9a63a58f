/* usage: what each argument of a command can be, read off the command's
 * usage line ("dump HOOK FILE.npy", "set temp X | topk K", "norms
 * LAYER|final"): a literal word, a hook name, a file, a command name.
 * Completion uses it, so commands added to the engine complete without
 * changes here. No readline; unit-tested. */
#include "usage.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "view.h"


static bool is_literal(const char *w)
{
    bool lower = false;
    for (const char *p = w; *p; p++) {
        if (isupper((unsigned char)*p) || *p == '=' || *p == '"' || *p == '\'')
            return false;
        lower |= islower((unsigned char)*p) != 0;
    }
    return lower;
}

static bool ends_with(const char *w, const char *suffix)
{
    size_t a = strlen(w), b = strlen(suffix);
    return a >= b && !strcmp(w + a - b, suffix);
}

static bool is_file(const char *w)
{
    static const char *const exts[] = {".npy", ".gguf", ".png", ".svg", ".txt", ".json", ".csv", ".bin"};
    if (strstr(w, "FILE") || strstr(w, "PATH") || strstr(w, "DIR"))
        return true;
    for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
        if (ends_with(w, exts[i]))
            return true;
    return false;
}

/* The kinds of one usage word ("HOOK", "LAYER|final", "[FILE.npy]"). */
static int word_kind(const char *usage_word, char lits[][32], int max, int *n)
{
    char buf[128];
    int kind = 0;
    snprintf(buf, sizeof buf, "%s", usage_word);
    for (char *piece = strtok(buf, "|[]"); piece; piece = strtok(NULL, "|[]")) {
        if (!*piece || !strcmp(piece, "..."))
            continue;
        if (strstr(piece, "HOOK"))
            kind |= USAGE_HOOK;
        else if (is_file(piece))
            kind |= USAGE_FILE;
        else if (strstr(piece, "COMMAND") || !strcmp(piece, "CMD"))
            kind |= USAGE_COMMAND;
        else if (is_literal(piece) && *n < max) {
            snprintf(lits[(*n)++], 32, "%s", piece);
            kind |= USAGE_LITERAL;
        }
    }
    return kind;
}

/* Whether a typed word fits a usage word (placeholders fit anything). */
static bool word_fits(const char *usage_word, const char *typed)
{
    char lits[16][32];
    int n = 0, kind = word_kind(usage_word, lits, 16, &n);
    if (kind != USAGE_LITERAL)
        return true;
    for (int i = 0; i < n; i++)
        if (!strcmp(lits[i], typed))
            return true;
    return false;
}

static int alternative_kind(const char *cmd, char *alt, char **prev, int argi, char lits[][32], int max, int *n)
{
    char *words[32];
    int nw = 0;
    for (char *w = strtok(alt, " "); w && nw < 32; w = strtok(NULL, " "))
        words[nw++] = w;
    int first = nw > 0 && !strcmp(words[0], cmd) ? 1 : 0;
    if (first + argi - 1 >= nw)
        return 0;
    for (int j = 1; j < argi; j++)
        if (!word_fits(words[first + j - 1], prev[j]))
            return 0;
    char copy[128];
    snprintf(copy, sizeof copy, "%s", words[first + argi - 1]);
    return word_kind(copy, lits, max, n);
}

static int line_kind(const as_command_info *info, char **prev, int argi, char lits[][32], int max, int *n)
{
    char usage[512];
    int kind = 0;
    snprintf(usage, sizeof usage, "%s", info->usage);
    /* Alternatives are separated by " | "; a bare '|' joins choices. */
    for (char *alt = usage; alt;) {
        char *bar = strstr(alt, " | ");
        if (bar)
            *bar = '\0';
        char one[512];
        snprintf(one, sizeof one, "%s", alt);
        /* strtok inside would clobber the outer scan: work on a copy. */
        kind |= alternative_kind(info->name, one, prev, argi, lits, max, n);
        alt = bar ? bar + 3 : NULL;
    }
    return kind;
}

/* The session's commands, then the view's; NULL past the end. */
const as_command_info *usage_command_at(int i)
{
    int n_session = 0, n_view;
    const as_command_info *extra = view_commands(&n_view);
    while (as_command_at(n_session))
        n_session++;
    if (i < n_session)
        return as_command_at(i);
    return i - n_session < n_view ? &extra[i - n_session] : NULL;
}

int usage_arg_kind(const char *cmd, char **prev, int argi, char literals[][32], int max_literals, int *n_literals)
{
    int kind = 0;
    *n_literals = 0;
    if (argi == 0)
        return USAGE_COMMAND;
    const as_command_info *info;
    for (int i = 0; (info = usage_command_at(i)); i++)
        if (!strcmp(info->name, cmd))
            kind |= line_kind(info, prev, argi, literals, max_literals, n_literals);
    if (!strcmp(cmd, "hooks") && argi == 1)
        kind |= USAGE_HOOK;
    return kind;
}

