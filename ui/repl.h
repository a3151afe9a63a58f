/* repl: the plain line-oriented REPL on GNU readline (history across
 * sessions, completion of commands and hook names). */
#ifndef ATTNSCOPE_UI_REPL_H
#define ATTNSCOPE_UI_REPL_H

#include <signal.h>

#include "attnscope/session.h"

int as_repl(as_session *s, volatile sig_atomic_t *interrupted);

#endif
