/* logbuf: the output log of the full-screen view, as lines of text each
 * with a role (command echo, output, warning, error, hint). A bounded
 * ring: the oldest lines go first. No terminal; unit-tested. */
#ifndef ATTNSCOPE_UI_LOGBUF_H
#define ATTNSCOPE_UI_LOGBUF_H

#include <stddef.h>

typedef enum log_kind { LOG_OUT, LOG_ECHO, LOG_WARN, LOG_ERROR, LOG_HINT } log_kind;

typedef struct log_line {
    char *text;       /* tabs expanded to 8-column stops, as a terminal shows them */
    log_kind kind;
    char *cells;      /* a line with tabs as it came (a table's row, its cells tab-separated), else NULL */
} log_line;

typedef struct logbuf {
    log_line *lines;
    int cap, start, count;
    long total;        /* lines ever added: where a command's output began, after the ring turned */
    char *partial;     /* text after the last newline, waiting for the rest */
    log_kind partial_kind;
} logbuf;

void log_init(logbuf *b, int cap);
void log_free(logbuf *b);
/* Appends text, split at newlines; a trailing part without a newline waits
 * for the next call of the same kind (or log_flush). */
void log_add(logbuf *b, log_kind kind, const char *text, size_t len);
void log_addf(logbuf *b, log_kind kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void log_flush(logbuf *b);
/* Line i, 0 the oldest kept. */
const log_line *log_get(const logbuf *b, int i);
/* The line added as number n (counting from 0 over the log's life), or NULL
 * when it is gone or not yet added. */
const log_line *log_get_added(const logbuf *b, long n);

#endif
