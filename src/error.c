#include "attnscope/error.h"

#include <stdio.h>
#include <string.h>

/* Length of the well-formed UTF-8 sequence at u (not C1), or 0. */
static size_t utf8_ok(const unsigned char *u)
{
    size_t k = u[0] >= 0xc2 && u[0] <= 0xdf ? 2 : u[0] >= 0xe0 && u[0] <= 0xef ? 3 : u[0] >= 0xf0 && u[0] <= 0xf4 ? 4 : 0;
    unsigned char lo = u[0] == 0xe0 ? 0xa0 : u[0] == 0xf0 ? 0x90 : 0x80;
    unsigned char hi = u[0] == 0xed ? 0x9f : u[0] == 0xf4 ? 0x8f : 0xbf;
    if (u[0] == 0xc2)
        lo = 0xa0; /* U+0080..U+009F are the C1 controls */
    for (size_t i = 1; i < k; i++, lo = 0x80, hi = 0xbf)
        if (u[i] < lo || u[i] > hi)
            return 0;
    return k;
}

/* Messages quote names and strings from files; a hostile file must not
 * drive the terminal they are printed on. Control bytes (C0, DEL, C1) and
 * bytes that are not well-formed UTF-8 become '?'; other text is kept. */
void as_defang(char *s)
{
    for (unsigned char *u = (unsigned char *)s; *u;) {
        size_t k = *u >= 0x80 ? utf8_ok(u) : 1;
        if (k == 0 || *u < 0x20 || *u == 0x7f) {
            *u++ = '?';
            continue;
        }
        u += k;
    }
}

int as_error_vset(as_error *err, const char *fmt, va_list ap)
{
    if (err) {
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        as_defang(err->msg);
    }
    return AS_ERR;
}

int as_error_set(as_error *err, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    as_error_vset(err, fmt, ap);
    va_end(ap);
    return AS_ERR;
}

int as_error_prefix(as_error *err, const char *fmt, ...)
{
    if (!err)
        return AS_ERR;
    char prefix[512], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    /* Truncation keeps the start of the message, which names the place. */
    if (snprintf(err->msg, sizeof err->msg, "%s: %s", prefix, old) >= (int)sizeof err->msg)
        err->msg[sizeof err->msg - 1] = '\0';
    as_defang(err->msg);
    return AS_ERR;
}

void as_error_clear(as_error *err)
{
    if (err)
        err->msg[0] = '\0';
}
