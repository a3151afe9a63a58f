/* repl: the plain line-oriented REPL on GNU readline: history across
 * sessions, Tab completion, Ctrl-C clears the line at the prompt and
 * interrupts a running command between ops; Ctrl-D or `quit` leaves. */
#ifndef ATTNSCOPE_UI_REPL_H
#define ATTNSCOPE_UI_REPL_H

#include <signal.h>

#include "attnscope/view_api.h"

int as_repl(as_session *s, volatile sig_atomic_t *interrupted);

#endif
