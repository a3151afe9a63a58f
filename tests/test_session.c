/* The session's own plumbing (src/session.c) where no model is needed:
 * splitting a command line, out of memory included. */
#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/session.h"

/* strndup for the whole test program, made to fail once at its
 * fail_at-th call while a test counts (0: never). */
static int strndup_calls, strndup_fail_at;

char *strndup(const char *s, size_t n)
{
    if (strndup_fail_at && ++strndup_calls == strndup_fail_at)
        return NULL;
    size_t len = strnlen(s, n);
    char *d = malloc(len + 1);
    if (d) {
        memcpy(d, s, len);
        d[len] = '\0';
    }
    return d;
}

Test(session, split_commands_out_of_memory_gives_no_commands_rather_than_a_null_one)
{
    int n = -1;
    char **c = as_split_commands(" prompt a; finish ;top 3 ", &n);
    cr_assert(c && n == 3 && !strcmp(c[0], "prompt a") && !strcmp(c[1], "finish") && !strcmp(c[2], "top 3"));
    as_free_commands(c, n);
    strndup_calls = 0, strndup_fail_at = 2; /* the second command's copy fails */
    c = as_split_commands("prompt a; finish; top 3", &n);
    strndup_fail_at = 0;
    cr_assert_eq(strndup_calls, 2, "stops at the failed copy");
    cr_assert_null(c, "a list holding a NULL command was returned");
    cr_assert_eq(n, 0);
}
