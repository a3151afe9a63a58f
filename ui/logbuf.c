#include "logbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void log_init(logbuf *b, int cap)
{
    memset(b, 0, sizeof *b);
    b->lines = calloc((size_t)cap, sizeof *b->lines);
    b->cap = b->lines ? cap : 0;
}

void log_free(logbuf *b)
{
    for (int i = 0; i < b->count; i++) {
        free(b->lines[(b->start + i) % b->cap].text);
        free(b->lines[(b->start + i) % b->cap].cells);
    }
    free(b->lines);
    free(b->partial);
    memset(b, 0, sizeof *b);
}

/* Tabs become spaces to the next multiple of 8 columns (a UTF-8
 * continuation byte takes no column), as a terminal would show them. */
static char *expand_tabs(char *text)
{
    if (!text || !strchr(text, '\t'))
        return text;
    size_t n = strlen(text), tabs = 0;
    for (size_t i = 0; i < n; i++)
        tabs += text[i] == '\t';
    char *out = malloc(n + tabs * 8 + 1);
    if (!out)
        return text;
    size_t o = 0, col = 0;
    for (size_t i = 0; i < n; i++) {
        if (text[i] == '\t') {
            do
                out[o++] = ' ';
            while (++col % 8);
            continue;
        }
        if (((unsigned char)text[i] & 0xC0) != 0x80)
            col++;
        out[o++] = text[i];
    }
    out[o] = '\0';
    free(text);
    return out;
}

static void push(logbuf *b, log_kind kind, char *text)
{
    char *cells = text && strchr(text, '\t') ? strdup(text) : NULL;
    text = expand_tabs(text);
    if (!text || b->cap == 0) {
        free(text);
        free(cells);
        return;
    }
    if (b->count == b->cap) {
        free(b->lines[b->start].text);
        free(b->lines[b->start].cells);
        b->start = (b->start + 1) % b->cap;
        b->count--;
    }
    b->lines[(b->start + b->count) % b->cap] = (log_line){text, kind, cells};
    b->count++;
    b->total++;
}

/* Joins the waiting partial line with n bytes of s. */
static char *join(logbuf *b, const char *s, size_t n)
{
    size_t pl = b->partial ? strlen(b->partial) : 0;
    char *t = malloc(pl + n + 1);
    if (t) {
        if (pl)
            memcpy(t, b->partial, pl);
        memcpy(t + pl, s, n);
        t[pl + n] = '\0';
    }
    free(b->partial);
    b->partial = NULL;
    return t;
}

void log_flush(logbuf *b)
{
    if (b->partial)
        push(b, b->partial_kind, join(b, "", 0));
}

void log_add(logbuf *b, log_kind kind, const char *text, size_t len)
{
    if (b->partial && b->partial_kind != kind)
        log_flush(b);
    const char *end = text + len;
    while (text < end) {
        const char *nl = memchr(text, '\n', (size_t)(end - text));
        if (!nl) {
            b->partial = join(b, text, (size_t)(end - text));
            b->partial_kind = kind;
            return;
        }
        push(b, kind, join(b, text, (size_t)(nl - text)));
        text = nl + 1;
    }
}

void log_addf(logbuf *b, log_kind kind, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    log_add(b, kind, buf, strlen(buf));
    log_add(b, kind, "\n", 1);
}

const log_line *log_get(const logbuf *b, int i)
{
    return i >= 0 && i < b->count ? &b->lines[(b->start + i) % b->cap] : NULL;
}

const log_line *log_get_added(const logbuf *b, long n)
{
    long first = b->total - b->count;
    return n >= first && n < b->total ? log_get(b, (int)(n - first)) : NULL;
}
