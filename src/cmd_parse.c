/* The command language's words: a line cut at ';' into commands and a
 * command into words (quotes and escapes read), the text argument of
 * `prompt` and `tokenize`, numbers in a range, and bytes shown safely
 * (as_format_piece). Nothing here knows a session. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"

char **as_split_commands(const char *line, int *n)
{
    size_t len = strlen(line);
    char **cmds = calloc(len / 2 + 2, sizeof *cmds);
    *n = 0;
    if (!cmds)
        return NULL;
    const char *start = line, *opened = NULL, *literal = NULL;
    char quote = 0;
    for (const char *p = line;; p++) {
        if (!*p && quote) {
            /* A quote never closed is text (dialogue: `prompt "Yes, said
             * he`), so it protects no ';': scan again from just past it. */
            literal = opened;
            quote = 0;
            p = opened;
            continue;
        }
        if (*p && quote) {
            if (*p == '\\' && quote == '"' && p[1])
                p++;
            else if (*p == quote)
                quote = 0;
            continue;
        }
        if ((*p == '"' || *p == '\'') && p != literal) {
            quote = *p;
            opened = p;
            continue;
        }
        if (*p && *p != ';')
            continue;
        const char *a = start, *b = p;
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        if (b > a && !(cmds[(*n)++] = strndup(a, (size_t)(b - a)))) {
            as_free_commands(cmds, *n - 1);
            *n = 0;
            return NULL; /* out of memory: no command rather than a NULL one */
        }
        if (!*p)
            break;
        start = p + 1;
    }
    return cmds;
}

void as_free_commands(char **cmds, int n)
{
    for (int i = 0; i < n; i++)
        free(cmds[i]);
    free(cmds);
}

static int hexval(int c)
{
    return isdigit(c) ? c - '0' : isxdigit(c) ? tolower(c) - 'a' + 10 : -1;
}

/* Reads one word at *pp into out (which has room for strlen(*pp)+1). */
static int read_word(const char **pp, char *out, as_error *err)
{
    const char *p = *pp;
    char quote = 0;
    while (*p && (quote || !isspace((unsigned char)*p))) {
        if (!quote && (*p == '"' || *p == '\'')) {
            quote = *p++;
            continue;
        }
        if (quote && *p == quote) {
            quote = 0;
            p++;
            continue;
        }
        if (quote == '"' && *p == '\\' && p[1]) {
            p++;
            switch (*p) {
            case 'n': *out++ = '\n'; break;
            case 't': *out++ = '\t'; break;
            case 'r': *out++ = '\r'; break;
            case 'x':
                if (hexval((unsigned char)p[1]) >= 0 && hexval((unsigned char)p[2]) >= 0) {
                    *out++ = (char)(hexval((unsigned char)p[1]) * 16 + hexval((unsigned char)p[2]));
                    p += 2;
                } else {
                    *out++ = 'x'; /* not an escape: keep it */
                }
                break;
            default: *out++ = *p;
            }
            p++;
            continue;
        }
        *out++ = *p++;
    }
    *out = '\0';
    if (quote)
        return as_error_set(err, "unterminated %c quote", quote);
    *pp = p;
    return AS_OK;
}

int as_split_words(const char *line, char ***words, int *n, as_error *err)
{
    size_t len = strlen(line);
    char **w = calloc(len / 2 + 2, sizeof *w);
    *n = 0;
    *words = NULL;
    if (!w)
        return as_error_set(err, "out of memory");
    const char *p = line;
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (!*p)
            break;
        char *buf = malloc(len + 1);
        if (!buf || read_word(&p, buf, err)) {
            free(buf);
            as_free_commands(w, *n);
            *n = 0;
            return buf ? AS_ERR : as_error_set(err, "out of memory");
        }
        w[(*n)++] = buf;
    }
    *words = w;
    return AS_OK;
}

/* The text argument of `prompt`/`tokenize`: one quoted word (quotes
 * removed, escapes read), or else the rest of the line taken literally, so
 * `prompt Hello, world` needs no quotes and dialogue that opens with a
 * quote (`prompt "Yes," said he.`) keeps its quotes. */
char *as_cmd_text_arg(const char *rest, as_error *err)
{
    while (isspace((unsigned char)*rest))
        rest++;
    if (*rest == '"' || *rest == '\'') {
        char *buf = malloc(strlen(rest) + 1);
        const char *p = rest;
        as_error ignored;
        if (!buf) {
            as_error_set(err, "out of memory");
            return NULL;
        }
        if (read_word(&p, buf, &ignored) == AS_OK) {
            while (isspace((unsigned char)*p))
                p++;
            if (!*p)
                return buf;
        }
        free(buf);
    }
    return strdup(rest);
}

void as_format_piece(const char *bytes, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    for (size_t i = 0; i < len && o + 5 < cap; i++) {
        unsigned char c = (unsigned char)bytes[i];
        int n = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        bool valid = n > 0 && i + (size_t)n <= len && (n == 1 || c >= 0xC2);
        for (int k = 1; valid && k < n; k++)
            valid = ((unsigned char)bytes[i + (size_t)k] & 0xC0) == 0x80;
        if (valid && c == 0xC2 && (unsigned char)bytes[i + 1] < 0xA0)
            valid = false; /* U+0080..U+009F: C1 controls (0x9B is CSI to some terminals) */
        if (c == '\n')
            o += (size_t)snprintf(out + o, cap - o, "\\n");
        else if (c == '\t')
            o += (size_t)snprintf(out + o, cap - o, "\\t");
        else if (c == '\\')
            o += (size_t)snprintf(out + o, cap - o, "\\\\");
        else if (c < 0x20 || c == 0x7f || !valid)
            o += (size_t)snprintf(out + o, cap - o, "\\x%02X", c);
        else if (o + (size_t)n < cap) {
            memcpy(out + o, bytes + i, (size_t)n);
            o += (size_t)n;
            i += (size_t)n - 1;
        }
    }
    out[o < cap ? o : cap - 1] = '\0';
}

int as_cmd_parse_long(const char *str, long lo, long hi, const char *what, long *out, as_error *err)
{
    char *end;
    errno = 0;
    long v = strtol(str, &end, 10);
    if (errno || end == str || *end || v < lo || v > hi)
        return as_error_set(err, "%s must be a whole number from %ld to %ld, not '%s'", what, lo, hi, str);
    *out = v;
    return AS_OK;
}

int as_cmd_parse_float(const char *str, double lo, double hi, const char *what, double *out, as_error *err)
{
    char *end;
    errno = 0;
    double v = strtod(str, &end);
    if (errno || end == str || *end || !(v >= lo && v <= hi))
        return as_error_set(err, "%s must be a number from %g to %g, not '%s'", what, lo, hi, str);
    *out = v;
    return AS_OK;
}
