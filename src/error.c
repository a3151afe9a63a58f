#include "attnscope/error.h"

#include <stdio.h>
#include <string.h>

int as_error_vset(as_error *err, const char *fmt, va_list ap)
{
    if (err)
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
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
    return AS_ERR;
}

void as_error_clear(as_error *err)
{
    if (err)
        err->msg[0] = '\0';
}
