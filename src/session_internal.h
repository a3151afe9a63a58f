/* Internal to the command set: what command files (session.c and the
 * modules that add commands) share. Not part of the public API. The
 * layers: the helpers (cmd_parse.c, cmd_common.c) <- the command files
 * (cmd_*.c) <- session.c's table. */
#ifndef ATTNSCOPE_SESSION_INTERNAL_H
#define ATTNSCOPE_SESSION_INTERNAL_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "attnscope/capture.h"
#include "attnscope/interp.h"
#include "attnscope/model.h"
#include "attnscope/npy.h"
#include "attnscope/program.h"
#include "attnscope/sampler.h"
#include "attnscope/session.h"

/* A session (session.h): opaque outside the engine. */
struct as_session {
    as_model *model;
    as_program *prog;
    as_capture *cap;
    as_interp *it;
    as_sampler sampler;
    size_t capture_mb;
    int ctx;           /* `set ctx N` / --ctx: the context a user works in (0: the model's window) */
    unsigned prog_opts; /* `set attn-result`, `set in-hooks`: the optional hooks built (AS_PROG_*) */
    float *probs;      /* vocab-sized scratch */
    int *order;
    FILE *out;         /* results */
    FILE *warn;        /* warnings that do not fail a command (NaN found, capture drops) */
    bool quit;         /* `quit` was run */
    volatile sig_atomic_t *interrupt;
    as_pass_fn on_pass;
    void *on_pass_ctx;
    int32_t metric[2];  /* `metric A B`: the logit difference patching and compare report;
                         * the other kinds: metric[0] is the token */
    bool has_metric;
    int metric_kind;    /* as_metric_kind */
    int metric_pos;     /* the position it reads, or -1: where the logits are read (the last) */
    float *saliency;    /* the last `saliency` per position of the output stream, for the view's token strip */
    int saliency_n;
    unsigned long saliency_gen; /* the state (it->gen) it was computed on: another state shows none */
    struct as_grad_cache { /* the view's gradient page (as_view_grad_page): per position of its hook */
        float *norm, *dot;
        int n, hook, kind, pos;
        int32_t tok[2];
        double value;
        unsigned long gen;
        bool valid;     /* false: computed for no state (and after `load`) */
    } gpage;
    char image[256];    /* the file name (no folder) `image` last read, for captions; "" when none */
    char saved_run[512]; /* a saved run reopened (--open): its file; "" for a live session */
    int saved_dtype;    /* the dtype its hooks were saved in (cmd_save.c: 0 f32, 1 f16, 2 bf16) */
    int save_dtype;     /* what `save run` writes by default (--capture-dtype) */
    char sampled[128];  /* how `gen` chose the context's generated tokens ("temperature 0.7, top-k 40"), for
                         * figures; "" when none */
};

/* What `metric` measures (cmd_grad.c). */
typedef enum as_metric_kind { AS_METRIC_DIFF, AS_METRIC_LOGPROB, AS_METRIC_PROB, AS_METRIC_LOGIT } as_metric_kind;

typedef struct cmd_ctx {
    as_session *s;
    char **argv;
    int argc;
    const char *rest; /* the line after the command word, as typed */
    as_error *err;
} cmd_ctx;

typedef struct command {
    as_command_info info;
    int (*fn)(cmd_ctx *c);
    /* Reads nothing computed (sets input, rules or settings, lists what
     * is there, or runs the interpreter, which recomputes a stale pass
     * itself); the others see the pass recomputed first when the
     * interventions changed since it ran. */
    bool keeps_state;
    int args; /* ARGS(n): at most n arguments; 0: no fixed most */
} command;
#define ARGS(n) ((n) + 1)

/* cmd_parse.c: numbers in a range; the text argument of `prompt`/`tokenize`
 * (one quoted word, else the rest of the line as typed; malloc'd). */
int as_cmd_parse_long(const char *str, long lo, long hi, const char *what, long *out, as_error *err);
int as_cmd_parse_float(const char *str, double lo, double hi, const char *what, double *out, as_error *err);
char *as_cmd_text_arg(const char *rest, as_error *err);

/* Builds the program again with the optional hooks `opts` (AS_PROG_*), keeping the
 * model, the context's inputs and the context cap; refused while rules (ablations, patches,
 * steering, watches) name the old program's hooks. Breakpoints are dropped. Nothing is
 * computed: the caller runs the context again. */
int as_cmd_rebuild(as_session *s, unsigned opts, as_error *err);
/* The path of the capture's file (malloc'd), or NULL: RAM. Taken before
 * an old capture (and with it its file) is freed, then given to
 * as_session_carry_capture_file, which makes the new capture's file there
 * (a failure is a warning: the capture stays in RAM) and frees it. */
char *as_session_capture_file(const as_session *s);
void as_session_carry_capture_file(as_session *s, char *file);
/* The helpers below are cmd_common.c's unless a file is named. */
/* A token's stored piece, escaped for display (the raw vocabulary string:
 * `dump all`'s index.json). */
void as_cmd_piece(const as_session *s, int32_t id, char *buf, size_t cap);
/* A token as text output shows it, the way the view does: its text with
 * spaces as '·', newlines and tabs as arrows, control bytes and broken
 * UTF-8 as \xNN; control tokens (no text) by their vocabulary string.
 * Cut to `width` columns (0: no limit) with a trailing '…' when cut. */
void as_cmd_label(const as_session *s, int32_t id, int width, char *out, size_t cap);
int as_cmd_require_tokens(as_session *s, as_error *err);
/* Text -> ids as `prompt` reads it (llama_tokenize with add_special, and
 * parse_special unless raw); warns of bytes the vocabulary drops. */
int as_cmd_encode(as_session *s, const char *text, bool raw, int32_t **ids, size_t *n, as_error *err);
/* Warns of what the user should know before trusting a text's ids. */
void as_cmd_warn_tokens(as_session *s, const char *text);
/* True once Ctrl-C was pressed during this command: long loops check it
 * and stop with "interrupted". */
bool as_cmd_interrupted(const as_session *s);
/* Hook index by exact name, or AS_ERR with a message. */
int as_cmd_find_hook(as_session *s, const char *name, as_error *err);
/* Positions of a hook that hold values, or AS_ERR saying why there are none. */
int as_cmd_hook_positions(as_session *s, int h, as_error *err);
/* cmd_inspect.c: a hook's shape at n_pos positions, "[4, 768]". */
void as_cmd_format_shape(const as_session *s, int h, int n_pos, char *buf, size_t cap);
/* Runs the interpreter and reports a non-finite value if one appeared. */
int as_cmd_run(as_session *s, as_run_mode mode, long count, as_stop *stop, as_error *err);
/* cmd_run.c: what a run says where it stopped. */
void as_cmd_print_stop(as_session *s, as_stop stop, int last_pc);

/* export_table.c: layer × column tables of an instrument as a heatmap figure (PNG, SVG or
 * PDF by the path's extension), one panel per table side by side; options
 * dpi=, title=, width=, height= and font= from argv[opt_first] on. Signed tables go on the
 * diverging map centred on 0 (±max|value|, at least ±1), scores on the
 * sequential map over 0–1. Columns are context positions (labelled with
 * their tokens), heads, or the labels given. */
typedef struct as_table_fig {
    const float *v;       /* n_mats × [rows][cols] */
    int rows, cols, n_mats;
    const char *const *mat_titles; /* [n_mats] or NULL */
    bool by_position;     /* columns are positions 0..cols-1 */
    const char *const *col_labels; /* [cols], else heads (or positions) numbered */
    const char *col_axis; /* NULL: "position" or "head" */
    bool diverging;
    const char *title;    /* default title */
    const char *cbar_label;
    const char *what;     /* for the "wrote" line */
    const char *const *notes; /* [n_notes] under the figure: the metric, the values it is built on */
    int n_notes;
    const unsigned char *masked; /* n_mats × [rows][cols], nonzero: no value there (grey), or NULL */
    const char *masked_label;     /* what such a cell is, in the legend ("dense layer"); NULL: "masked" */
    const char *const *row_labels; /* [rows], else layers numbered */
    const char *row_axis;          /* NULL: "layer" */
    const char *const *cell_text;  /* n_mats × [rows][cols] written in the cells, or NULL */
    float vmax;           /* > 0: a sequential scale over [0, vmax] (a distance), not 0-1 */
} as_table_fig;
/* cmd_lens.c: the logit lens's table: the top token and its probability
 * per layer (row 0: the embeddings) and computed position, [rows][n]
 * each (malloc'd). */
int as_cmd_lens_grid(as_session *s, int32_t **ids, float **probs, int *rows, int *n, as_error *err);
/* export lens FILE [options]: that table as a figure, the top token written in each cell. */
int as_export_lens(cmd_ctx *c);
int as_cmd_export_table(cmd_ctx *c, const char *path, int opt_first, const as_table_fig *t);
int as_cmd_export_table_check(cmd_ctx *c, const char *path, int opt_first); /* its format and options */
/* cmd_output.c: a token as figures label it: its text with spaces as '·' and control
 * bytes escaped (control tokens by their vocabulary string). */
void as_cmd_token_label(const as_session *s, int32_t id, char *out, size_t cap);
/* .npy, .png or .svg by the path's extension (any case); NULL: none of them. */
const char *as_cmd_output_kind(const char *path);

/* What the instruments share (cmd_common.c). */
/* Runs the current context again from scratch (rules applied unless
 * rules_off), leaving the capture showing that run, and calls read (may be
 * NULL) on it while the rules it ran under are in effect: a clean run's
 * values are read there (afterwards they are stale, and recomputed under
 * the rules when next read). Ctrl-C: AS_ERR "interrupted". */
typedef int (*as_cmd_reader)(as_session *s, void *ctx, as_error *err);
int as_cmd_rerun(as_session *s, bool rules_off, as_cmd_reader read, void *ctx, as_error *err);
/* A separate run of other tokens (same program), for probes and patching. */
typedef struct as_side_run {
    as_capture *cap;
    as_interp *it;
} as_side_run;
/* Runs ids to the logits with a capture of budget bytes. Free r even on failure. */
int as_cmd_side_run_new(as_session *s, const int32_t *ids, int n, size_t budget, as_side_run *r, as_error *err);
void as_cmd_side_run_free(as_side_run *r);
/* A token given as an id or as text that encodes to exactly one token. */
int as_cmd_parse_token(as_session *s, const char *arg, int32_t *out, as_error *err);
/* A position as text output labels it (a token, or a name: CLS, r3c5). */
void as_cmd_position_label(const as_session *s, int pos, char *out, size_t cap);
/* The same for a position of any stream (an encoder-decoder's source). */
void as_cmd_stream_label(const as_session *s, int stream, int pos, char *out, size_t cap);
/* cmd_image.c: `image`, a classifier's `top`, `rollout`. */
int as_cmd_image(cmd_ctx *c);
int as_cmd_top_classes(cmd_ctx *c, long k);
int as_cmd_rollout(cmd_ctx *c);
/* export_overlay.c: export overlay LAYER HEAD|mean|rollout|all FILE [options] (argv as typed). */
int as_cmd_export_overlay(cmd_ctx *c);
/* A position of the context: its number, or its name (CLS, r3c5) where
 * the stream names positions. */
int as_cmd_parse_pos(as_session *s, const char *arg, int *pos, as_error *err);
/* AS_OK where the logit lens (or DLA) applies to the program, else
 * AS_ERR saying why. */
int as_cmd_lens_applies(const as_session *s, bool dla, as_error *err);
/* The logits of the finished pass, or NULL with a message. */
const float *as_cmd_final_logits(as_session *s, as_error *err);
/* The logits at position pos of the finished pass (captured, or the last
 * position's), or NULL saying why (cmd_fill.c). */
const float *as_cmd_logits_at(as_session *s, int pos, as_error *err);
/* AS_OK when the n_vocab logits at pos are finite; else AS_ERR counting
 * them and naming the pass's first non-finite value. */
int as_cmd_nonfinite_logits(as_session *s, const float *logits, int pos, as_error *err);
/* Non-finite values (cmd_common.c). Where value `index` of a hook's row
 * at `pos` is, by the hook's shape: "position 3, head 1, dim 2" (heads,
 * or a routed MLP's slots), "position 3, index 5" (one vector), "head 1,
 * query 3, key 0" (attention; index as as_nonfinite's). */
void as_cmd_value_at(const as_program *prog, const as_capture *cap, int hook, int pos, int index, char *buf,
                     size_t n);
/* lead + "HOOK [where] = nan" of the pass's first non-finite value, or "". */
void as_cmd_first_nonfinite(const as_session *s, const char *lead, char *buf, size_t n);
/* AS_OK when a hook's values at positions [a, b) of cap are finite (an
 * attention row: the keys its query sees); else AS_ERR, "WHAT: HOOK
 * holds nan at [where]; the first non-finite value of the pass is ...". */
int as_cmd_check_finite(as_session *s, const as_capture *cap, int hook, int a, int b, const char *what,
                        as_error *err);
/* The same message for one value found non-finite (index as above). */
int as_cmd_refuse_at(as_session *s, const as_capture *cap, int hook, int pos, int index, float value,
                     const char *what, as_error *err);
/* Writes an instrument's array and says so; the shape goes in the message. */
/* A hook's captured values (as_capture_copy's floats) made what its .npy
 * holds: an int32 hook's (the experts chosen) converted in place; returns
 * the array's dtype. */
as_npy_dtype as_cmd_hook_npy(const as_session *s, int hook, float *data, size_t count);
int as_cmd_write_npy(as_session *s, const char *path, as_npy_dtype dt, const void *data, const size_t *shape,
                     int ndim, const char *what, as_error *err);
/* An instrument's output file among its arguments: the first from `first`
 * on named .npy, .png or .svg. The arguments after it are a figure's
 * options (a .npy takes none). */
typedef struct as_out_arg {
    int at;           /* its index, or -1 */
    int argc;         /* the arguments before it (all of them when none) */
    const char *path; /* NULL when none */
    bool npy;
} as_out_arg;
as_out_arg as_cmd_output_arg(const cmd_ctx *c, int first);
/* An ablation or patch (values copied, as as_interp_add_rule does). */
int as_cmd_add_rule(as_session *s, as_rule_kind kind, int hook, int head, int pos, const float *values,
                    bool per_position, const char *label, as_error *err);
/* Lists the watches, or the ablations and patches. */
int as_cmd_list_rules(cmd_ctx *c, bool watches);

/* Instruments, one file each: cmd_lens.c, cmd_ablate.c, cmd_patch.c,
 * cmd_dla.c, cmd_heads.c, cmd_watch.c, cmd_weights.c. */
int as_cmd_lens(cmd_ctx *c);
int as_cmd_ablate(cmd_ctx *c);
int as_cmd_route(cmd_ctx *c);
int as_cmd_unablate(cmd_ctx *c);
int as_cmd_ablations(cmd_ctx *c);
int as_cmd_compare(cmd_ctx *c);
int as_cmd_metric(cmd_ctx *c);
/* cmd_grad.c: the metric of a row of logits, in words, and whether an
 * instrument reading only the final logits (patch sweep, compare) can use
 * it (AS_ERR: none set, or it is at another position, with who's name). */
double as_cmd_metric_of(const as_session *s, const float *logits);
void as_cmd_metric_describe(const as_session *s, char *buf, size_t cap);
int as_cmd_metric_final(const as_session *s, const char *who, as_error *err);
int as_cmd_grad(cmd_ctx *c);
int as_cmd_saliency(cmd_ctx *c);
/* The metric's gradient over the context as computed now (run first when
 * the pass is not complete): for each of hooks[0..n) (not attention
 * hooks), d metric / d hook into grads[k] and, when acts is not NULL, the
 * forward values into acts[k] (malloc'd [positions][width] each; a zero
 * gradient where none reaches), the positions into *n_pos, the metric into
 * *value. Free the arrays even on failure. */
int as_cmd_grad_hooks(as_session *s, const int *hooks, int n, float **grads, float **acts, int *n_pos, double *value,
                      as_error *err);
/* The same over the state computed now (complete), for an as_cmd_rerun
 * reader: ctx is an as_grad_req. */
typedef struct as_grad_req {
    const int *hooks;
    int n;
    float **grads, **acts;
    int n_pos;
    double value;
} as_grad_req;
int as_cmd_grad_reader(as_session *s, void *ctx, as_error *err);
/* cmd_patch.c: `attribute heads|resid|mlp|attn from "OTHER" [FILE...]`. */
int as_cmd_attribute(cmd_ctx *c);
/* Clean run (rules off) against the run with rules; leaves the latter
 * captured (cmd_ablate.c: `compare`, and `patch` after adding its rule). */
int as_cmd_compare_runs(as_session *s, as_error *err);
int as_cmd_patch(cmd_ctx *c);
int as_cmd_dla(cmd_ctx *c);
int as_cmd_heads(cmd_ctx *c);
int as_cmd_retrieval(cmd_ctx *c);
int as_cmd_zoom(cmd_ctx *c);
int as_cmd_export_distance(cmd_ctx *c);
/* cmd_experts.c: `experts [LAYER]`, `export load FILE`. */
int as_cmd_experts(cmd_ctx *c);
int as_cmd_export_load(cmd_ctx *c);
/* The load of one routed layer: load[e] = the share of the n_pos
 * positions whose router chose expert e (n_expert entries; AS_ERR on a
 * dense layer); the tokens expert e took. */
int as_cmd_expert_load(as_session *s, int layer, float *load, int *n_expert, int *n_pos, as_error *err);
int as_cmd_expert_tokens(const as_session *s, int h, int e, int n, int top, int32_t *ids, int *cnt, int *chosen);
int as_cmd_watch(cmd_ctx *c);
int as_cmd_unwatch(cmd_ctx *c);
int as_cmd_watches(cmd_ctx *c);
int as_cmd_weights(cmd_ctx *c);
/* cmd_circuit.c: `weight`, `circuit`; cmd_steer.c: `steer`. */
int as_cmd_weight(cmd_ctx *c);
int as_cmd_circuit(cmd_ctx *c);
int as_cmd_steer(cmd_ctx *c);
int as_cmd_diff(cmd_ctx *c);
/* The output stream is not causal (an encoder, a vision transformer). */
bool as_cmd_is_encoder(const as_session *s);
/* cmd_fill.c: the encoder's commands. */
int as_cmd_fill(cmd_ctx *c);
int as_cmd_embed(cmd_ctx *c);
int as_cmd_similarity(cmd_ctx *c);
int as_cmd_token_types(cmd_ctx *c);
/* prompt "A" "B": argv[1] and argv[2] are the segments. */
int as_cmd_prompt_pair(cmd_ctx *c, bool raw);
/* top [K] [POS] where the output stream is not causal (k parsed). */
int as_cmd_top_encoder(cmd_ctx *c, long k);
/* cmd_export.c: figures; cmd_dump.c: `dump all DIR` (called by `dump`). */
int as_cmd_export(cmd_ctx *c);
/* cmd_save.c: `save run FILE [dtype=]`; on a saved run, AS_ERR for a
 * command that needs the weights; reading a run in two steps around the
 * session session.c makes (as_session_open_run): its model (metadata, zero
 * weights) and budget, then the session's state and capture. */
int as_cmd_save(cmd_ctx *c);
int as_cmd_saved_refuse(const as_session *s, int argc, char **argv, as_error *err);
typedef struct as_run_reader as_run_reader;
int as_run_begin(as_run_reader **out, const char *path, as_model **model, size_t *capture_mb, as_error *err);
int as_run_finish(as_run_reader *rr, as_session *s, as_error *err);
void as_run_reader_free(as_run_reader *rr);
/* cmd_common.c: a saved run's hook dtypes by name (-1: none such) and number (0 f32, 1 f16, 2 bf16). */
int as_run_dtype_parse(const char *s);
const char *as_run_dtype_name(int dt);
int as_cmd_dump_all(cmd_ctx *c);

/* The command groups: cmd_context.c (the input), cmd_run.c (running the
 * interpreter, the sampler), cmd_inspect.c (reading what a pass computed). */
int as_cmd_prompt(cmd_ctx *c);
int as_cmd_prompt_raw(cmd_ctx *c);
int as_cmd_prompt_ids(cmd_ctx *c);
int as_cmd_source(cmd_ctx *c);
int as_cmd_source_ids(cmd_ctx *c);
int as_cmd_tokenize(cmd_ctx *c);
int as_cmd_tokenize_raw(cmd_ctx *c);
int as_cmd_tokens(cmd_ctx *c);
int as_cmd_step(cmd_ctx *c);
int as_cmd_next(cmd_ctx *c);
int as_cmd_finish(cmd_ctx *c);
int as_cmd_continue(cmd_ctx *c);
int as_cmd_where(cmd_ctx *c);
int as_cmd_back(cmd_ctx *c);
int as_cmd_break_on(cmd_ctx *c);
int as_cmd_unbreak(cmd_ctx *c);
int as_cmd_gen(cmd_ctx *c);
int as_cmd_set(cmd_ctx *c);
int as_cmd_top(cmd_ctx *c);
int as_cmd_hooks(cmd_ctx *c);
int as_cmd_stats(cmd_ctx *c);
int as_cmd_norms(cmd_ctx *c);
int as_cmd_dump(cmd_ctx *c);
int as_cmd_info(cmd_ctx *c);

#endif
