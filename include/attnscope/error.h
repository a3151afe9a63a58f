/* error: the one error record every fallible engine function fills.
 * A function returns AS_OK (0) or AS_ERR (-1); on AS_ERR the message says
 * what went wrong and where (file, byte offset or field, what was expected).
 * The engine never prints and never exits: the front decides what to show. */
#ifndef ATTNSCOPE_ERROR_H
#define ATTNSCOPE_ERROR_H

#include <stdarg.h>

#define AS_OK 0
#define AS_ERR (-1)

typedef struct as_error {
    char msg[1024];
} as_error;

/* Sets the message (printf-style); returns AS_ERR so callers can
 * `return as_error_set(err, ...)`. err may be NULL. */
int as_error_set(as_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
int as_error_vset(as_error *err, const char *fmt, va_list ap);
/* Prepends "prefix: " to an existing message (adds context on the way up). */
int as_error_prefix(as_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void as_error_clear(as_error *err);
/* Replaces, in place, every byte of s a terminal would obey or that is not
 * well-formed UTF-8 (C0 controls, DEL, C1 controls) with '?'. Messages are
 * defanged by as_error_set; other text quoting a file's strings (warnings)
 * calls it before it is shown. */
void as_defang(char *s);

#endif
