/* view_api: what a front (ui/) reads of a session, by what it shows: the
 * model's size and name, the program's facts a pane asks (streams, hooks,
 * sites, ops), where the interpreter stands, the context's tokens, and the
 * capture's values. A front reads the engine only through these (and the
 * functions that take the engine's objects as opaque pointers, engine.h:
 * as_program_hook, as_program_attn, as_attn_visible, ...), never the
 * structs' fields, so the engine may change its structs without touching
 * a view. Values only: nothing here changes what is computed. */
#ifndef ATTNSCOPE_VIEW_API_H
#define ATTNSCOPE_VIEW_API_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attnscope/session.h"
#include "attnscope/types.h"

/* The session: its streams for results and warnings, `quit`, the call
 * after each pass of `gen`, Ctrl-C's flag, the context (--ctx). */
FILE *as_view_out(const as_session *s);
FILE *as_view_warn(const as_session *s);
void as_view_set_out(as_session *s, FILE *out);
void as_view_set_warn(as_session *s, FILE *warn);
bool as_view_quit(const as_session *s);
void as_view_on_pass(as_session *s, as_pass_fn fn, void *ctx);
void as_view_set_interrupt(as_session *s, volatile sig_atomic_t *flag);
/* Caps the context at n positions (0: the model's window), as `set ctx`. */
int as_view_set_ctx(as_session *s, int n, as_error *err);
float as_view_temp(const as_session *s);

/* The model: its identity (changes with `load`), name, size, notes. */
const as_model *as_view_model(const as_session *s);
const char *as_view_model_name(const as_session *s);
int as_view_n_layer(const as_session *s);
int as_view_n_head(const as_session *s);
int as_view_n_vocab(const as_session *s);
int as_view_d_model(const as_session *s);
int as_view_model_ctx(const as_session *s);
const char *as_view_model_warnings(const as_session *s);
const as_tokenizer *as_view_tokenizer(const as_session *s);

/* The program: the stream a decoder writes (an encoder-decoder's target),
 * the source stream (-1: none), what the output stream reads and whether
 * it is causal, where the classes are (-1: logits at every position),
 * the logit lens's hook kind, hooks' names, the op count. */
const as_program *as_view_program(const as_session *s);
int as_view_out_stream(const as_session *s);
int as_view_source_stream(const as_session *s);
bool as_view_pixels(const as_session *s);
bool as_view_causal(const as_session *s);
int as_view_logits_pos(const as_session *s);
as_hook_kind as_view_lens_kind(const as_session *s);
bool as_view_no_lens(const as_session *s);
int as_view_n_hooks(const as_session *s);
const char *as_view_hook_name(const as_session *s, int hook);
int as_view_n_ops(const as_session *s);
/* The image a pixel stream reads: its patches and normalisation. */
const as_patch_spec *as_view_patch(const as_session *s, int stream);
const as_image_spec *as_view_image(const as_session *s, int stream);

/* An attention site (as_program_attn): heads, the streams of its queries
 * and keys, its keys' hook, whether it masks keys. */
int as_view_site_heads(const as_attn *a);
int as_view_site_q_stream(const as_attn *a);
int as_view_site_kv_stream(const as_attn *a);
int as_view_site_key_hook(const as_attn *a);
bool as_view_site_masks(const as_attn *a);
/* What the arithmetic of a site's scores needs (`view math`): the hooks
 * it reads and fills (q, k, v read; scores, pattern, z filled; bias added
 * to the scores, -1: none), its heads (query head h reads key/value head
 * h / (n_head / n_head_kv)), widths, scale, soft-cap (0: none), and its
 * mask: causal or not, and a sliding window's keys per query (0: none). */
typedef struct as_site_math {
    int q, k, v, scores, pattern, z, bias;
    int n_head, n_head_kv, d_qk, d_v;
    float scale, softcap;
    bool causal;
    int window;
} as_site_math;
void as_view_site_math(const as_attn *a, as_site_math *out);
/* An op (as_interp_current, as_program_producer): its layer (-1: none),
 * its text, whether it is an RMSNorm, a routed MLP's experts and k. */
int as_view_op_layer(const as_op *op);
const char *as_view_op_text(const as_op *op);
bool as_view_op_rms(const as_op *op);
int as_view_op_experts(const as_op *op);
int as_view_op_k(const as_op *op);

/* The interpreter: the output stream's tokens (n, of which from the
 * prompt, whose pass is done, the ids), another stream's count and
 * pixels, the context, where a pass stands (next op), and `gen`, which
 * changes whenever a computed value may have (caches key on it). */
const as_interp *as_view_interp(const as_session *s);
int as_view_n_tokens(const as_session *s);
int as_view_n_prompt(const as_session *s);
int as_view_n_done(const as_session *s);
int32_t as_view_token(const as_session *s, int pos);
/* The token type (BERT's segment: 0 for A, 1 for B) at pos: 0 unless set. */
int32_t as_view_token_type(const as_session *s, int pos);
int as_view_stream_tokens(const as_session *s, int stream);
const float *as_view_stream_pixels(const as_session *s, int stream);
int as_view_n_ctx(const as_session *s);
bool as_view_in_pass(const as_session *s);
int as_view_pc(const as_session *s);
unsigned long as_view_gen(const as_session *s);
/* The last `saliency` of the token at pos as a share of the largest |value|
 * (-1..1), if it was computed on the state shown; else false. */
bool as_view_saliency(const as_session *s, int pos, float *share);
/* The view's gradient page (key G): d metric / d hook by the backward pass
 * over the state computed now, per position of the hook's stream: norm[i]
 * = |d metric / d hook| at position i, dot[i] = (d metric / d hook) . hook
 * (gradient x input: its sign says whether the position's value raises or
 * lowers the metric to first order), the metric's value and its words.
 * Kept until the state, the metric or the hook changes. AS_ERR with one
 * line saying why not: no metric set, the pass not finished, no gradient
 * for this model (the op kind without a VJP). The arrays are the
 * session's, valid until the next call. */
typedef struct as_grad_page {
    int n;
    const float *norm, *dot;
    double value;
    char metric[200];
} as_grad_page;
int as_view_grad_page(as_session *s, int hook, as_grad_page *out, as_error *err);
/* The hook a norm reads (the residual stream entering it) from the hook
 * of its scale; -1: none. */
int as_view_norm_input(const as_session *s, int scale_hook);

/* The capture: positions a hook holds, whether it is kept, the budget
 * that keeps everything (MB), bytes in use, whether something was dropped
 * and the note saying what. */
const as_capture *as_view_capture(const as_session *s);
int as_view_filled(const as_session *s, int hook);
size_t as_view_keep_mb(const as_session *s);
size_t as_view_capture_used(const as_session *s);
bool as_view_dropped_some(const as_session *s);
const char *as_view_dropped_note(const as_session *s);
/* A saved run reopened (--open): its file, else ""; the model file it was run on. */
const char *as_view_saved_run(const as_session *s);
const char *as_view_model_path(const as_session *s);

/* ---- view mla (issue #33): a site's KV cache, values a position ----
 * What a latent-attention (MLA) site caches against a plain multi-head
 * and a grouped-query cache of the same heads, from the program's hooks:
 * the latent (hook_kv_latent's width) and the rotary key shared by every
 * head (hook_k_pe's); the heads' key width (without and with rotary) and
 * value width (hook_z's per head); and what the interpreter itself keeps
 * (its k and v hooks' widths). latent is 0 where the site is not MLA.
 * `info` and `view mla` both read it. */
typedef struct as_site_cache {
    int layer, latent, rope;   /* latent, rope: MLA's cached widths (0: not MLA) */
    int latent_hook, rope_hook, kv_hook, k_nope_hook; /* -1 where the program has none */
    int n_head, d_k, d_v;      /* the heads': a plain cache holds n_head · (d_k + d_v) */
    int plain;                 /* n_head · (d_k + d_v) */
    int gqa_kv;                /* the grouped-query comparison's kv heads (4 query heads a group, as
                                * Llama 3's; 2 where the heads do not divide so), 0: none; the
                                * multi-query one (1 kv head) holds d_k + d_v */
    int held;                  /* what attnscope caches: its k and v hooks' widths */
    bool absorbed;             /* k holds the latent itself (llama.cpp's absorbed form) */
} as_site_cache;
void as_view_site_cache(const as_session *s, const as_attn *a, as_site_cache *out);

/* ---- view positions: how a program's ops put positions in ----
 * The op that fills a stream's hook_pos_embed (a learned table or the
 * sinusoids), a layer's rot_q (rotary) or its attn.hook_position_bias
 * (T5's relative buckets), found with as_program_hook_in and
 * as_program_producer, read here. */
typedef enum as_pos_kind {
    AS_POSK_NONE, AS_POSK_LEARNED, AS_POSK_SINUSOID, AS_POSK_ROTARY, AS_POSK_RELATIVE
} as_pos_kind;
typedef struct as_pos_facts {
    as_pos_kind kind;
    int rows;            /* LEARNED: the table's positions; RELATIVE: its buckets */
    int dims;            /* LEARNED, SINUSOID: values per position; RELATIVE: heads */
    double base;         /* SINUSOID: [2i] = sin(pos / base^(2i/dims)), [2i+1] = cos; ROTARY: theta's base */
    int rot_dim;         /* ROTARY: dims rotated per head (pairs: rot_dim / 2), from dim `offset` */
    int offset, d_head, n_heads;
    bool halves;         /* ROTARY: pairs (i, i + rot_dim/2) (NEOX), else (2i, 2i+1) */
    double freq_scale, ext_factor, attn_factor; /* ROTARY: 1, 0, 1 when unscaled */
    int n_ctx_orig;      /* ROTARY, YaRN: the context trained on */
    bool freqs;          /* ROTARY: per-pair divisors (llama 3's rope_freqs) */
    int max_distance;    /* RELATIVE */
    bool bidirectional;  /* RELATIVE */
} as_pos_facts;
/* The facts of a position op of the session's program; false (kind NONE) for any other op. */
bool as_view_pos_facts(const as_session *s, const as_op *op, as_pos_facts *out);
/* LEARNED: the table's row pos (decoded); SINUSOID: the sinusoids at pos,
 * as the op computes them. out has facts.dims values. */
void as_view_pos_row(const as_op *op, int pos, float *out);
/* ROTARY: the angle (radians) each pair turns by at pos, the model's
 * scalings included; theta has rot_dim / 2 values. */
void as_view_rope_theta(const as_op *op, int pos, double *theta);
/* RELATIVE: the bucket of key k seen from query q, and a bucket's row of
 * the table (out has one value per head). */
int as_view_rel_bucket(const as_op *op, int q, int k);
void as_view_rel_row(const as_op *op, int bucket, float *out);
/* view mlp: an MLP's activation, read off the op that fills its post
 * hook (as_program_producer): the function it applies to its first input
 * (a gated op's gate), whether it multiplies that by its second (the up
 * projection: GEGLU, SwiGLU), and its inputs' hooks (-1: none);
 * AS_ACT_NONE for an op that is no activation. A hook's values per
 * position (a routed MLP's expert hooks: its k slots of a width each). */
typedef enum as_act_kind { AS_ACT_NONE, AS_ACT_GELU_TANH, AS_ACT_GELU_ERF, AS_ACT_RELU, AS_ACT_SILU } as_act_kind;
as_act_kind as_view_op_act(const as_op *op, bool *gated);
/* view residual: the op list read in order, to find where the norms sit
 * on the residual stream (the wiring comes from the ops, never from the
 * architecture's name): an op by index, its role there (an add of two or
 * three hooks, a copy, a norm's output or its scale, an attention site's
 * scores, anything else), the hooks it reads (j = 0..2, -1: none) and
 * fills; a hook's stream, layer and values per position. */
typedef enum as_op_role {
    AS_ROLE_OTHER, AS_ROLE_ADD, AS_ROLE_COPY, AS_ROLE_NORM, AS_ROLE_NORM_SCALE, AS_ROLE_SCORES
} as_op_role;
const as_op *as_view_op(const as_session *s, int i);
as_op_role as_view_op_role(const as_op *op);
int as_view_op_in(const as_op *op, int j);
int as_view_op_out(const as_op *op);
int as_view_hook_stream(const as_session *s, int hook);
int as_view_hook_layer(const as_session *s, int hook);
int as_view_hook_width(const as_session *s, int hook);

#endif
