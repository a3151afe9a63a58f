/* interp: the step-through interpreter. Executes a program with a program
 * counter over a span of new positions per stream (a causal stream: the
 * whole prompt at once, then one position per generated token, reusing
 * the KV cache; any other stream: all of it again whenever its input
 * changes), writes every op's output into the capture, and stops at
 * breakpoints. Ops of a stream with nothing new in a pass are passed over. `back` restores an
 * earlier op by resetting the counter (or, where hooks were not captured,
 * by replaying the pass from its start: ops are deterministic, so the
 * state is bit-identical). */
#ifndef ATTNSCOPE_INTERP_H
#define ATTNSCOPE_INTERP_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "attnscope/capture.h"
#include "attnscope/engine.h"
#include "attnscope/error.h"
#include "attnscope/program.h"

typedef enum as_stop {
    AS_STOP_COUNT,     /* ran the number of ops asked */
    AS_STOP_WATCH,     /* a watch's condition held (see as_interp.watch_hit) */
    AS_STOP_BLOCK_END, /* `next`: the block is done */
    AS_STOP_PASS_END,  /* the pass reached the logits */
    AS_STOP_BREAK,     /* a breakpoint's hook was just filled */
    AS_STOP_INTERRUPT, /* the interrupt flag was raised */
    AS_STOP_IDLE,      /* nothing to run: every token is processed */
} as_stop;

typedef enum as_run_mode { AS_RUN_STEP, AS_RUN_NEXT, AS_RUN_FINISH, AS_RUN_CONTINUE } as_run_mode;

/* Where a NaN or Inf first appeared in the current pass. */
typedef struct as_nonfinite {
    bool found;
    int hook;
    int pos;    /* query position for attention hooks */
    int index;  /* flat index within the position's row (attention: head * (q+1) + key) */
    float value;
} as_nonfinite;

/* A rule on a hook point, applied or checked by the interpreter right
 * after the op that fills it; architectures never know about rules. */
typedef enum as_rule_kind {
    AS_RULE_ZERO,  /* set the hook (or one head of it) to zero */
    AS_RULE_SET,   /* set it to `values`: a mean (one row, every position) or a patch (per position) */
    AS_RULE_WATCH, /* stop when `cond` holds */
    /* a routed MLP's experts (`head` names the expert): */
    AS_RULE_EXPERT_ZERO, /* on experts.hook_out: the slots where the expert was chosen are zeroed (routing kept) */
    AS_RULE_ROUTE_OFF,   /* on hook_expert_indices: chosen again without it (and any other routed off) */
    AS_RULE_ADD,   /* add `values` (one row) to the hook at every position, or at `pos` (a steering vector) */
} as_rule_kind;

typedef enum as_watch_cond {
    AS_WATCH_MAX_GT, AS_WATCH_MIN_LT, AS_WATCH_ABSMAX_GT, AS_WATCH_MEAN_GT, AS_WATCH_MEAN_LT,
    AS_WATCH_NONFINITE,
} as_watch_cond;

typedef struct as_rule {
    as_rule_kind kind;
    int hook;
    int head;          /* -1: the whole row; else the head's slice of a [head, d_head] hook */
    int pos;           /* -1: every position; else only this one */
    float *values;     /* SET, ADD: owned copy; per_position ? [n_pos][len] : [len] */
    bool per_position;
    int n_pos;         /* per_position: the stream's tokens when the rule was added (past them: zeros) */
    as_watch_cond cond;
    float threshold;
    char label[96];    /* as the user typed it, for listings */
} as_rule;

typedef struct as_watch_hit {
    int rule;          /* index into rules */
    int hook, pos, index;
    float value;
} as_watch_hit;

/* One stream's input and progress. */
typedef struct as_stream_state {
    int n_ctx;
    int32_t *tokens;   /* token ids (token streams) */
    int32_t *types;    /* their token types (BERT's segments A and B): 0 unless set */
    float *pixels;     /* pixel streams: the prepared image [channels][size][size] */
    int n_tokens;
    int n_prompt;      /* tokens that came from the prompt (the rest were generated) */
    int n_done;        /* positions whose pass is complete */
    int p0, n;         /* the current pass's span (n == 0: nothing new in it) */
} as_stream_state;

/* The spans of one pass, for `back` across passes. */
typedef struct as_pass {
    int p0[AS_MAX_STREAMS], n[AS_MAX_STREAMS];
} as_pass;

typedef struct as_interp {
    const as_program *prog;
    const as_model *model;
    as_capture *cap;
    as_stream_state st[AS_MAX_STREAMS];
    as_stream_state *out; /* the output stream's (st[prog->out_stream]) */
    int n_ctx;         /* the output stream's context */
    bool in_pass;
    int pc;            /* next op; n_ops once the pass is finished */
    as_pass *passes;   /* every pass so far */
    int n_passes, cap_passes;
    bool *brk;         /* per hook: stop after it is filled */
    as_nonfinite nonfinite;
    as_rule *rules;
    int n_rules;
    bool rules_off;    /* run clean (e.g. the baseline of `compare`) */
    as_watch_hit watch_hit;
    volatile sig_atomic_t *interrupt; /* set by the front (Ctrl-C); may be NULL */
    /* Working memory for hooks not captured: one buffer per hook kind and
     * stream, shared across layers (a layer never reads another layer's
     * same kind). */
    float *scratch[AS_MAX_STREAMS][AS_HK_COUNT];
    size_t scratch_cap[AS_MAX_STREAMS][AS_HK_COUNT];
    float **span;      /* per hook: row 0 of the current span (NULL: a fused site's scores and pattern) */
    bool *fused;       /* per attention site: fused in this pass (AS_ATTN_WORK_BYTES) */
    float *tmp;        /* attention work area */
    size_t tmp_cap;
    struct as_pool *pool; /* threads for one-position work, sized by as_get_threads() */
    float *rope;       /* rotary cos/sin of the span's positions (2·rope_dim floats each) */
    size_t rope_cap;
    int rope_stream;   /* the stream and rotary spec whose angles rope holds; -1: none */
    as_rope_spec rope_spec;
    int ready_until;   /* ops [pc, ready_until) have their outputs computed already */
    /* Generations: what was computed under which rules. rules_gen changes
     * with every intervention added or removed (watches change no value);
     * state_gen and state_off are the rules the computed state (every pass
     * since the last reset) ran under. A state whose rules differ is stale:
     * as_interp_run and as_interp_back recompute it before going on, and
     * as_interp_logits refuses it. gen changes whenever a computed value
     * may have: caches of derived results key on it. */
    unsigned long rules_gen, state_gen, gen;
    bool state_off;
    /* The activations' arithmetic the computed state ran under
     * (as_set_activations): another setting makes it stale too. */
    bool state_native;
    /* The patterns setting it ran under (as_set_patterns): another one
     * makes it stale, so the capture decides anew how to keep them. */
    int state_patterns;
} as_interp;

/* With nothing captured (a budget of 0), a run to the end (FINISH,
 * CONTINUE) takes a long prompt's positions this many at a time, pass
 * after pass, as decoding would: the working buffers then scale with the
 * chunk, not with the prompt (a 256-token prompt on a 2048-wide model:
 * ~75 MB -> ~19 MB). The values are the KV-cached continuation's, which
 * the tests hold equal to one pass. Stepping (STEP, NEXT) and any capture
 * keep the whole prompt in one pass. */
#define AS_PROMPT_CHUNK 64

/* A span's attention site whose scores and patterns have no storage in the
 * capture (computed on demand, or dropped) and no rule reading them is
 * "fused" when their rows for the whole span (heads x n x keys floats,
 * twice, plus the threads' work rows) would pass this many bytes: its
 * scores and softmax ops compute nothing, and its mix computes each head's
 * rows a block of AS_ATTN_BLOCK at a time (the scores, the softmax, then
 * the block's share of z), so the working memory grows as threads x block
 * x keys, linearly with the prompt. The values are the unfused pass's bit
 * for bit: the same row function, and the mix's sgemm in the same blocks
 * either way. AS_TEST_ATTN_FUSED=1 in the environment fuses every site that
 * can be (for the tests, whose fixtures are far below the bound). */
#define AS_ATTN_WORK_BYTES ((size_t)256 << 20)
#define AS_ATTN_BLOCK 64

/* Bytes of the interpreter's working buffers (for the hooks the capture
 * does not keep, the attention's work area, the rotary angles): what
 * `info` reports as its working memory. */
size_t as_interp_work_bytes(const as_interp *it);

int as_interp_new(as_interp **out, const as_program *p, as_capture *cap, as_error *err);
void as_interp_free(as_interp *it);

/* Replaces a stream's input (no compute); later streams (which may read
 * it) start over too. Refuses more tokens than the stream's context, with
 * a message saying the limit; ids must be in the vocabulary. */
int as_interp_set_input(as_interp *it, int stream, const int32_t *ids, int n, as_error *err);
/* Sets the token types of a stream's tokens (after its input; 0 by
 * default, and again after each as_interp_set_input); refuses a type the
 * model has no embedding for. The stream starts over. */
int as_interp_set_types(as_interp *it, int stream, const int32_t *types, int n, as_error *err);
/* Replaces a pixel stream's image (n floats, [channels][size][size] as
 * the stream's patch spec says, already resized and normalised): every
 * position ([CLS] and the patches) is pending; later streams start over. */
int as_interp_set_pixels(as_interp *it, int stream, const float *pixels, int n, as_error *err);
/* The same for the output stream (a decoder's tokens). */
int as_interp_set_tokens(as_interp *it, const int32_t *ids, int n, as_error *err);
/* Appends a token (a generated one) to the output stream, to be processed
 * by the next pass. */
int as_interp_append(as_interp *it, int32_t id, as_error *err);

/* What stands at a position (as_interp_position), the logits, the next op
 * and whether the state is stale (as_interp_logits, _current, _stale):
 * engine.h. */

/* Runs ops. count is used by AS_RUN_STEP. Starts a pass over the pending
 * positions when none is under way. *stop says why it stopped. */
int as_interp_run(as_interp *it, as_run_mode mode, long count, as_stop *stop, as_error *err);
/* Goes back n ops (across earlier passes if needed). */
int as_interp_back(as_interp *it, long n, as_error *err);

/* Breakpoints by pattern ('*' wildcards); returns how many hooks matched. */
int as_interp_break(as_interp *it, const char *pattern, bool on);
/* Adds a rule (values, if any, are copied: len floats, or len floats per
 * token of the hook's stream when per_position). Watches may use a wildcard pattern: one rule per match. */
int as_interp_add_rule(as_interp *it, const as_rule *r, size_t len, as_error *err);
/* Removes every rule of a kind (watches or interventions); returns the count. */
int as_interp_clear_rules(as_interp *it, bool watches);
/* Length of the slice a rule touches per position. */
int as_rule_len(const as_interp *it, const as_rule *r);
/* Forgets everything computed (every hook's filled count, the passes),
 * keeping the input: the next run computes it again from position 0. */
void as_interp_reset(as_interp *it);
/* Caps every token stream's context at n positions (at most its window;
 * n <= 0: the window). Refused when a stream already holds more tokens. */
int as_interp_set_ctx(as_interp *it, int n, as_error *err);
/* Runs with interventions off (true) or on again (false): the clean
 * baseline of `compare`. */
void as_interp_rules_off(as_interp *it, bool off);
/* Drops the interventions added after the first n (a sweep's trial rule). */
void as_interp_truncate_rules(as_interp *it, int n);
/* True when the computed state ran with no intervention in effect. */
bool as_interp_state_clean(const as_interp *it);
/* Recomputes a stale state under the current rules up to the point it
 * had reached (the same op of the same span), so that nothing computed
 * under other rules is kept; *positions (may be NULL) gets the count of
 * output positions computed again, 0 when nothing was stale. Ctrl-C
 * (the interrupt flag) stops it: the state is then fresh but shorter. */
int as_interp_refresh(as_interp *it, int *positions, as_error *err);

/* A saved run reopened (cmd_save.c): the inputs set, their positions
 * marked computed in one finished pass (the capture sized for them, its
 * values then filled in by the caller) without running an op. */
int as_interp_restore_done(as_interp *it, as_error *err);

#endif
