/* program: one forward pass described as a flat list of ops. An
 * architecture file (arch_gpt2.c, arch_llama.c) builds it; it runs nothing.
 * Each op reads earlier hook points and fills exactly one hook point, named
 * as in TransformerLens. The same list serves any span of positions: the
 * interpreter supplies the span when it executes. */
#ifndef ATTNSCOPE_PROGRAM_H
#define ATTNSCOPE_PROGRAM_H

#include <stdbool.h>

#include "attnscope/error.h"
#include "attnscope/model.h"

/* What a hook point holds; views and exports switch on it. */
typedef enum as_hook_kind {
    AS_HK_EMBED, AS_HK_POS_EMBED, AS_HK_RESID_PRE,
    AS_HK_LN1_SCALE, AS_HK_LN1_NORMALIZED,
    AS_HK_Q, AS_HK_K, AS_HK_V, AS_HK_ROT_Q, AS_HK_ROT_K,
    AS_HK_ATTN_SCORES, AS_HK_PATTERN, AS_HK_Z, AS_HK_ATTN_OUT, AS_HK_RESID_MID,
    AS_HK_LN2_SCALE, AS_HK_LN2_NORMALIZED,
    AS_HK_MLP_PRE, AS_HK_MLP_PRE_LINEAR, AS_HK_MLP_POST, AS_HK_MLP_OUT, AS_HK_RESID_POST,
    AS_HK_LNF_SCALE, AS_HK_LNF_NORMALIZED, AS_HK_LOGITS,
    AS_HK_COUNT
} as_hook_kind;

/* Capture priority: under a memory budget the highest class is dropped
 * first (full residual-stream copies before patterns and statistics). */
typedef enum as_hook_class {
    AS_CLASS_ESSENTIAL = 0, /* norm scales (with their statistics), the KV cache */
    AS_CLASS_PATTERN = 1,
    AS_CLASS_SCORES = 2,
    AS_CLASS_LOGITS = 3,
    AS_CLASS_HEADS = 4,     /* q, k, v, z */
    AS_CLASS_MLP = 5,
    AS_CLASS_RESID = 6,     /* residual-stream-sized copies */
} as_hook_class;

typedef struct as_hook {
    char name[64];
    as_hook_kind kind;
    int layer;           /* -1 outside the blocks */
    int n_dims;          /* dims after the position (attention: see is_attn) */
    int dims[2];
    int width;           /* floats per position (attention: heads) */
    bool is_attn;        /* [head, query_pos, key_pos], causal rows */
    bool in_kv_cache;    /* keys/values attention reads back: always stored */
    as_hook_class klass;
} as_hook;

typedef enum as_op_kind {
    AS_OP_EMBED,      /* out = tok_embd[token]                          */
    AS_OP_POS_EMBED,  /* out = pos_embd[pos]                            */
    AS_OP_ADD,        /* out = in0 + in1                                */
    AS_OP_COPY,       /* out = in0                                      */
    AS_OP_NORM_SCALE, /* out = sqrt(var(in0) + eps), statistics kept    */
    AS_OP_NORM_APPLY, /* out = norm(in0) using scale in1, weight, bias  */
    AS_OP_LINEAR,     /* out = in0 · Wᵀ + b                             */
    AS_OP_ROPE,       /* out = rotary(in0)                              */
    AS_OP_SCORES,     /* out = q(in0) · k(in1)ᵀ / sqrt(d_head), causal  */
    AS_OP_SOFTMAX,    /* out = softmax(in0) per row                     */
    AS_OP_MIX,        /* out = pattern(in0) · v(in1)                    */
    AS_OP_GELU,       /* out = gelu_tanh(in0)                           */
    AS_OP_SWIGLU,     /* out = silu(in0) * in1                          */
} as_op_kind;

typedef struct as_op {
    as_op_kind kind;
    int layer;            /* -1 outside the blocks */
    int out;              /* hook index filled */
    int in[2];            /* hook indices read, -1 if unused */
    const float *w, *b;   /* LINEAR: w[n_out][n_in]; NORM_APPLY: w[d], b[d] */
    int n_in, n_out;
    bool rms;             /* NORM_*: RMSNorm rather than LayerNorm */
    bool last_row_only;   /* LINEAR to logits: when not captured, only the last position is needed */
    char text[64];        /* what the op computes, for `where` and the status line */
} as_op;

typedef struct as_program {
    const as_model *model;
    as_hook *hooks;
    int n_hooks;
    as_op *ops;
    int n_ops;
} as_program;

/* Builds the program for the model's architecture. */
int as_program_build(as_program **out, const as_model *m, as_error *err);
void as_program_free(as_program *p);
/* Hook index by exact name, or -1. */
int as_program_find_hook(const as_program *p, const char *name);
/* Shell-style match with '*' (any run of characters, dots included). */
bool as_hook_name_match(const char *pattern, const char *name);
/* The hook of a kind in a layer (layer -1 for non-block hooks), or -1. */
int as_program_hook(const as_program *p, as_hook_kind kind, int layer);

/* Architecture builders (used by as_program_build). */
int as_arch_gpt2_build(as_program *p, as_error *err);
int as_arch_llama_build(as_program *p, as_error *err);

/* Helpers for architecture files. */
int as_program_add_hook(as_program *p, as_hook_kind kind, int layer, as_hook_class klass,
                        int n_dims, int d0, int d1);
as_op *as_program_add_op(as_program *p, as_op_kind kind, int layer, int out, int in0, int in1,
                         const char *text);
/* A norm as two ops (scale, then normalized output); returns the output hook.
 * scale_kind's successor in the enum is the normalized kind. */
int as_program_add_norm(as_program *p, as_hook_kind scale_kind, int layer, int in, const float *w,
                        const float *b, bool rms, const char *name);
/* A hook filled by in · Wᵀ + b, shaped [d0] or [d0, d1] per position. */
int as_program_add_linear(as_program *p, as_hook_kind kind, int layer, as_hook_class klass, int in,
                          const float *w, const float *b, int n_in, int n_dims, int d0, int d1,
                          const char *text);
/* Causal attention from q, k, v hooks: scores, pattern, z; returns z. */
int as_program_add_attention(as_program *p, int layer, int q, int k, int v, const char *scores_text);
/* A residual-stream sum a + b filling a hook of `kind`. */
int as_program_add_sum(as_program *p, as_hook_kind kind, int layer, int a, int b, const char *text);
/* The final norm and the unembedding; returns the logits hook. */
int as_program_add_unembed(as_program *p, int resid, bool rms);

#endif
