/* session: the command set shared by batch mode, the REPL and the
 * full-screen view. Owns a loaded model with its program, capture,
 * interpreter and sampler, parses one command line at a time, runs it, and
 * writes results as text to `out` (a view of the capture, like any other).
 * Errors come back in as_error; nothing here knows about terminals. */
#ifndef ATTNSCOPE_SESSION_H
#define ATTNSCOPE_SESSION_H

#include <stdio.h>

#include "attnscope/error.h"
#include "attnscope/types.h"

/* The session is opaque to a front (types.h): it reads one through
 * view_api.h. Its struct is the engine's (src/session_internal.h). */

/* Called by `gen` after each pass it completes (one per generated token),
 * so a view can redraw while tokens are produced. */
typedef void (*as_pass_fn)(void *ctx, as_session *s);

typedef struct as_command_info {
    const char *name;
    const char *usage;
    const char *help;
    const char *example;
} as_command_info;

int as_session_new(as_session **out, const char *model_path, size_t capture_mb, FILE *out_stream,
                   FILE *warn_stream, as_error *err);
/* Takes ownership of an already loaded model. */
int as_session_from_model(as_session **out, as_model *m, size_t capture_mb, FILE *out_stream,
                          FILE *warn_stream, as_error *err);
void as_session_free(as_session *s);
/* `attnscope --open RUN`: a run `save run` wrote, reopened without the
 * model's weights (its metadata rebuilds the program; commands that
 * compute are refused, naming the model). */
int as_session_open_run(as_session **out, const char *path, FILE *out_stream, FILE *warn_stream, as_error *err);
/* --capture-file PATH: the capture's storage moved to a memory-mapped file
 * (NULL: back to RAM); --capture-dtype f32|f16|bf16: what `save run`
 * writes by default (AS_ERR naming the value). */
int as_session_set_capture_file(as_session *s, const char *path, as_error *err);
int as_session_set_save_dtype(as_session *s, const char *dtype, as_error *err);
/* `load`: another model in place of the session's, swapped in only once
 * it has loaded whole (program, capture and interpreter made), so a file
 * that fails leaves the session as it was. The context starts empty;
 * sampler settings, streams and callbacks stay. */
int as_session_load(as_session *s, const char *path, as_error *err);
/* --attn-result, --in-hooks: builds the program again with TransformerLens's optional hooks
 * (attn.hook_result; hook_attn_in and hook_mlp_in), as `set attn-result on` does, before any
 * context is given. */
int as_session_optional_hooks(as_session *s, int attn_result, int in_hooks, as_error *err);

/* Runs one command line (one command; see as_split_commands for ';'). */
int as_session_exec(as_session *s, const char *line, as_error *err);
/* Where the interventions changed since the pass ran, computes it again
 * under them up to the point it had reached (and says so on the warning
 * stream); nothing otherwise. The commands that read results do this
 * themselves; a front calls it before drawing what the pass computed. */
int as_session_refresh(as_session *s, as_error *err);
/* Splits "CMD; CMD; ..." at semicolons outside quotes. Returns a malloc'd
 * array of malloc'd strings (trimmed, empty ones dropped); *n is the count.
 * NULL (and *n 0) when out of memory. */
char **as_split_commands(const char *line, int *n);
void as_free_commands(char **cmds, int n);
/* Splits a command into words: whitespace-separated, "double" or 'single'
 * quoted with C escapes (\n \t \\ \" \xNN) inside double quotes. */
int as_split_words(const char *line, char ***words, int *n, as_error *err);

/* The i-th command of the set (for help and completion); NULL past the end. */
const as_command_info *as_command_at(int i);
/* Writes a token's bytes for display: escapes control bytes and invalid
 * UTF-8 as \n, \t, \xNN; makes no other change. */
void as_format_piece(const char *bytes, size_t len, char *out, size_t cap);

#endif
