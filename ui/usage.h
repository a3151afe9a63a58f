/* usage: the kinds of a command's arguments, read off its usage line. */
#ifndef ATTNSCOPE_UI_USAGE_H
#define ATTNSCOPE_UI_USAGE_H

#include <stdbool.h>

#include "attnscope/session.h"

typedef enum usage_kind {
    USAGE_NONE = 0, USAGE_LITERAL = 1, USAGE_HOOK = 2, USAGE_FILE = 4, USAGE_COMMAND = 8
} usage_kind;

/* The session's commands, then the view's; NULL past the end. */
const as_command_info *usage_command_at(int i);
/* What the argument at position argi (1 = first after the command) of
 * command `cmd` can be: a mask of usage_kind, with the literal words it
 * may be copied to literals. `prev` holds the words typed before it
 * (prev[0] the command), which select among alternatives. */
int usage_arg_kind(const char *cmd, char **prev, int argi, char literals[][32], int max_literals, int *n_literals);

#endif
