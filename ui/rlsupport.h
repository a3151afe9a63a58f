/* rlsupport: GNU readline set-up shared by the plain REPL and the view's
 * command line: the name `~/.inputrc` tests with `$if attnscope`, the
 * history file kept across sessions, and Tab completion of commands, hook
 * names, settings and file paths (read off each command's usage line, so
 * commands added to the engine complete without changes here). */
#ifndef ATTNSCOPE_UI_RLSUPPORT_H
#define ATTNSCOPE_UI_RLSUPPORT_H

#include "attnscope/session.h"

/* Sets rl_readline_name, completion and the word breaks for session s.
 * Call before readline initializes (it reads ~/.inputrc then). */
void rls_setup(as_session *s);
/* $XDG_STATE_HOME/attnscope/history (default ~/.local/state/...),
 * creating the directory; malloc'd, NULL if there is no home. */
char *rls_history_path(void);
void rls_history_load(const char *path);
/* Adds a non-empty line to the history and appends it to the file. */
void rls_history_add(const char *path, const char *line);

#endif
