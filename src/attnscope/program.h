/* program: one forward pass described as a flat list of ops. An
 * architecture file (arch_*.c) builds it with the builder of
 * src/program_build.h, private to the engine; it runs nothing. Each op
 * reads earlier hook points and fills exactly one hook point, named as in
 * TransformerLens. The same list serves any span of positions: the
 * interpreter supplies the span when it executes.
 *
 * Everything a reader needs is a fact on the program, never a question to
 * the architecture: a hook's stream, site and dtype; a norm's kind,
 * epsilon and width; an attention site's heads, head sizes, scale, mask,
 * bias and soft-cap. */
#ifndef ATTNSCOPE_PROGRAM_H
#define ATTNSCOPE_PROGRAM_H

#include <stdbool.h>

#include "attnscope/engine.h"
#include "attnscope/error.h"
#include "attnscope/image.h"
#include "attnscope/kernels.h"
#include "attnscope/model.h"
#include "attnscope/weight.h"

/* What a hook holds (as_hook_kind), the attention site a view shows
 * (as_site_pick) and a pixel stream's patches (as_patch_spec): types.h;
 * finding hooks, sites and ops (as_program_hook, ...): engine.h. */

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

/* Where in a block a hook sits. */
typedef enum as_site {
    AS_SITE_NONE,        /* the residual stream, embeddings, the output */
    AS_SITE_SELF_ATTN,
    AS_SITE_CROSS_ATTN,
    AS_SITE_MLP,         /* a dense MLP */
    AS_SITE_SHARED_EXPERT,
    AS_SITE_ROUTED_EXPERT,
} as_site;

typedef enum as_dtype { AS_DT_F32, AS_DT_I32 } as_dtype;

typedef enum as_norm_kind { AS_NORM_LAYER, AS_NORM_RMS } as_norm_kind;

/* How keys are hidden from a query. */
typedef enum as_mask {
    AS_MASK_CAUSAL,  /* keys up to the query's position */
    AS_MASK_NONE,    /* every key (bidirectional, cross-attention) */
    AS_MASK_WINDOW,  /* causal, and only the last `window` keys */
} as_mask;

/* How an embedding model reduces its last hidden states to one vector
 * (GGUF's {arch}.pooling_type, llama.cpp's values; MAX and MEAN_SQRT_LEN
 * are ours, sentence-transformers' pooling_mode_max_tokens and
 * pooling_mode_mean_sqrt_len_tokens, read from {arch}.attnscope.pooling). */
typedef enum as_pooling {
    AS_POOL_NONE = 0, AS_POOL_MEAN = 1, AS_POOL_CLS = 2, AS_POOL_LAST = 3, AS_POOL_RANK = 4,
    AS_POOL_MAX = 5, AS_POOL_MEAN_SQRT_LEN = 6,
} as_pooling;

/* What feeds a stream. */
typedef enum as_input { AS_INPUT_TOKENS, AS_INPUT_PIXELS } as_input;

#define AS_MAX_STREAMS 4

/* A sequence of positions the program computes over: "tokens" for a
 * decoder or an encoder; "encoder" and "decoder" for an encoder-decoder;
 * later "patches". A causal stream is
 * extended position by position (its keys are cached); any other is
 * recomputed from position 0 whenever its input changes. */
typedef struct as_stream {
    char name[16];
    as_input input;
    int n_ctx;
    bool causal;
    as_patch_spec patch;  /* pixels: the image and its patches (position 0 is [CLS], 1 + r*grid + c the patch at row r, column c) */
    as_image_spec image;  /* pixels: how an image file becomes the input (channels, size, resize, mean, std) */
} as_stream;

typedef struct as_hook {
    char name[64];       /* composed by the architecture: blocks.3.attn.hook_pattern */
    as_hook_kind kind;
    int layer;           /* -1 outside the blocks */
    int stream;          /* index into the program's streams */
    as_site site;
    as_dtype dtype;
    int n_dims;          /* dims after the position (attention: see attn) */
    int dims[2];
    int width;           /* values per position (attention: heads) */
    bool is_attn;        /* [head, query_pos, key_pos] rows of an attention site */
    int attn;            /* is_attn: index into the program's attention sites; else -1 */
    bool in_kv_cache;    /* keys/values attention reads back: always stored */
    as_hook_class klass;
} as_hook;

/* An attention site: the facts its three ops (scores, softmax, mix) and
 * every reader of its pattern use. Self-attention, cross-attention and
 * latent attention are the same site with other facts. */
typedef struct as_attn {
    int layer;
    as_site site;        /* AS_SITE_SELF_ATTN or AS_SITE_CROSS_ATTN */
    int q, k, v;         /* hooks read: q [pos, n_head, d_qk]; k [pos, n_head_kv, d_qk]; v [pos, n_head_kv, d_v] */
    int q_stream, kv_stream;
    int n_head, n_head_kv;
    int d_qk, d_v;
    float scale;         /* scores = q · k * scale */
    as_mask mask;
    int window;          /* AS_MASK_WINDOW: keys per query */
    int bias;            /* hook added to the scores ([head, n_q, n_k] like them), or -1 */
    float softcap;       /* > 0: scores = softcap * tanh(scores / softcap) */
    int scores, pattern, z; /* hooks it fills */
    int plain_kv;        /* > 0: values a position a plain multi-head cache of its heads would hold
                          * (MLA's n_head · (d_qk + d_v)), against the latent and the shared rotary
                          * key MLA caches (`info`, `view mla`: as_view_site_cache); 0: not said */
} as_attn;

typedef enum as_op_kind {
    AS_OP_EMBED,      /* out = W[token] (· scale when set)              */
    AS_OP_POS_EMBED,  /* out = W[pos]                                   */
    AS_OP_ADD,        /* out = in0 + in1 (+ in2 when set)               */
    AS_OP_COPY,       /* out = in0                                      */
    AS_OP_NORM_SCALE, /* out = sqrt(var(in0) + eps), statistics kept    */
    AS_OP_NORM_APPLY, /* out = norm(in0) using scale in1, weight, bias  */
    AS_OP_LINEAR,     /* out = in0 · Wᵀ + b (soft-capped when set)      */
    AS_OP_ROPE,       /* out = rotary(in0), as op->rope says            */
    AS_OP_SCORES,     /* out = q(in0) · k(in1)ᵀ · scale, masked         */
    AS_OP_SOFTMAX,    /* out = softmax(in0) per row                     */
    AS_OP_MIX,        /* out = pattern(in0) · v(in1)                    */
    AS_OP_GELU,       /* out = gelu_tanh(in0)                           */
    AS_OP_SWIGLU,     /* out = silu(in0) * in1                          */
    AS_OP_GEGLU,      /* out = gelu_tanh(in0) * in1                     */
    AS_OP_TYPE_EMBED, /* out = W[token type]                            */
    AS_OP_POOL,       /* every row = pool(in0 over the span), as op->pool says */
    AS_OP_RELU,       /* out = max(in0, 0)                              */
    AS_OP_SIN_POS,    /* out = the paper's sinusoids of the position:
                       * [2i] = sin(pos / base^(2i/n_out)), [2i+1] = cos(the same), base op->scale */
    AS_OP_PATCH_EMBED,/* row 0 = cls; row 1 + i = W · patch i of the image + b */
    AS_OP_REL_BIAS,   /* out[head][q][k] = W[bucket(k - q)][head], as op->rel says (T5) */
    /* a routed MLP (op->n_expert experts, op->k chosen per position) */
    AS_OP_ROUTE,      /* out = softmax(in0) over the experts (router weights) */
    AS_OP_TOPK,       /* out = the k experts of largest in0 (+ op->b, for choosing only, when set),
                       * largest first (ties: the lower index), within the best groups when op->n_group > 1 */
    AS_OP_GATES,      /* out[j] = in0[in1[j]], divided by their sum when op->renorm, times op->scale when not 0 */
    AS_OP_EXPERT_LINEAR, /* out[j] = expert in1[j]'s rows of W · (in0, or in0's slot j when it has k slots) */
    AS_OP_EXPERT_SUM, /* out = Σ_j in1[j] · in0[slot j] (the gated sum of the experts' outputs) */
    AS_OP_SIGMOID,    /* out = 1 / (1 + exp(-in0)) */
    AS_OP_GATED_ADD,  /* out = in0 + in[2][0] · in1 (a shared expert's output under its gate) */
    AS_OP_SLICE,      /* each of out's dims[0] groups = columns [col0, col0 + dims[1]) of in0's group */
    AS_OP_CONCAT,     /* each of out's groups = in0's group, then in1's (in1's one group, when it has one, to all) */
    AS_OP_HEAD_LINEAR,/* out's group h = rows [h·n, (h+1)·n) of W · in0's group h from column col0 (n: out's dims[1]) */
    AS_OP_HEAD_OUT,   /* out's group h = W[:, h·dh:(h+1)·dh] · in0's group h (attn.hook_result: each head
                       * through its columns of W_O, n_out = W's rows, dh = in0's dims[1]) */
    AS_OP_HEAD_SUM,   /* out = Σ_h in0's group h (+ b when set): the heads' results summed (hook_attn_out) */
} as_op_kind;

/* T5's relative position buckets (llama.cpp's llama_relative_position_bucket):
 * half of `buckets` for keys before the query and half for keys after it
 * when bidirectional (an encoder), all of them for keys before it when not
 * (a causal decoder); in each half, distances below half of it have a
 * bucket each, the rest share logarithmically spaced buckets up to
 * max_distance, beyond which all fall in the last. */
typedef struct as_rel_spec {
    int buckets;
    int max_distance;
    bool bidirectional;
} as_rel_spec;
/* The bucket of key position k seen from query position q. */
int as_rel_bucket(const as_rel_spec *r, int q, int k);

/* Which GELU an op computes: the tanh form (GPT-2, llama.cpp's
 * ggml_gelu) or the exact one with erf (PyTorch's nn.GELU(), torchvision). */
typedef enum as_gelu { AS_GELU_TANH = 0, AS_GELU_ERF } as_gelu;

/* The most experts a routed MLP has. */
#define AS_MAX_EXPERTS 512 /* llama.cpp's LLAMA_MAX_EXPERTS */

typedef struct as_op {
    as_op_kind kind;
    int layer;            /* -1 outside the blocks */
    int out;              /* hook index filled */
    int in[3];            /* hook indices read, -1 if unused (in[2]: ADD's third term) */
    as_weight w;          /* LINEAR, EMBED, POS_EMBED: the matrix, as stored */
    const float *nw;      /* NORM_APPLY: the norm's weight [n_in] */
    const float *b;       /* LINEAR: bias [n_out]; NORM_APPLY: bias [n_in]; or NULL */
    int n_in, n_out;
    as_norm_kind norm;    /* NORM_*: LayerNorm or RMSNorm, over each group of n_in
                           * values of a row (one group, or one per head: the
                           * scale hook holds width / n_in values per position) */
    float eps;            /* NORM_* */
    int attn;             /* SCORES, SOFTMAX, MIX: index into attention sites; else -1 */
    as_rope_spec rope;    /* ROPE: pairs or halves, base, scalings */
    float scale;          /* EMBED: rows multiplied by it (Gemma: sqrt(d_model)); 0: none; SIN_POS: the base */
    float softcap;        /* LINEAR: > 0: out = softcap · tanh(out / softcap) (final logits) */
    bool last_row_only;   /* LINEAR to logits: when not captured, only the last position is needed */
    as_pooling pool;      /* POOL: mean, first (CLS), last row, max, or sum / sqrt(rows) */
    bool pool_l2;         /* POOL: then divided by its L2 norm (sentence-transformers' Normalize) */
    as_gelu gelu;         /* GELU, GEGLU: tanh or erf */
    as_patch_spec patch;  /* PATCH_EMBED: the image's geometry */
    const float *cls;     /* PATCH_EMBED: the [CLS] row (position 0) */
    as_rel_spec rel;      /* REL_BIAS: the buckets (w: the table, [bucket][head]) */
    int n_expert, k;      /* routed ops: experts, and experts chosen per position;
                           * EXPERT_LINEAR: w stacks the experts' matrices of n_out rows each */
    bool renorm;          /* GATES: the chosen weights divided by their sum (Mixtral) */
    int col0;             /* SLICE: the first column taken of each group */
    int n_group, group_used; /* TOPK: > 1 groups of experts, of which only the group_used of largest
                              * score (the sum of a group's two largest) are chosen from (DeepSeek-V3) */
    char text[64];        /* what the op computes, for `where` and the status line */
} as_op;

/* The optional hooks a program is built with (as_program_build_opts),
 * as TransformerLens's use_attn_result and use_attn_in / use_hook_mlp_in
 * turn them on: off by default, for what they cost. */
enum {
    AS_PROG_ATTN_RESULT = 1, /* attn.hook_result: the output projection as HEAD_OUT then HEAD_SUM */
    AS_PROG_IN_HOOKS = 2,    /* hook_attn_in, hook_mlp_in: copies of the residual stream the
                              * pre-norm blocks' ln1 and ln2 read (one stream only) */
};

typedef struct as_program {
    const as_model *model;
    unsigned opts;        /* AS_PROG_*: the optional hooks asked for */
    as_stream streams[AS_MAX_STREAMS];
    int n_streams;
    int out_stream;       /* the stream whose last position gives the logits (`prompt` feeds it) */
    int source_stream;    /* the stream `source` feeds: an encoder-decoder's encoder, which the
                           * output stream reads through cross-attention; -1: none */
    int start_token;      /* the output stream's first token when no prompt is given (a
                           * decoder start token), or -1 */
    int logits_pos;       /* which of its positions gives them: -1 the last (a decoder's
                           * next token), 0 the first (a ViT's [CLS]) */
    as_hook *hooks;
    int n_hooks, cap_hooks;
    as_op *ops;
    int n_ops, cap_ops;
    as_attn *attn;
    int n_attn, cap_attn;
    int unembed;          /* the op that computes the logits */
    int final_norm;       /* the NORM_APPLY op before it, or -1 */
    int pooled;           /* the hook holding the pooled vector (embedding models), or -1 */
    as_pooling pooling;   /* how it is pooled */
    bool pooled_l2;       /* and whether the pooled vector is L2-normalized */
    /* The logit lens reads each layer's hook of this kind (resid_post; an
     * encoder's ln2 output) through the ops from head_first (-1: the final
     * norm; an encoder: its masked-LM head's dense layer) to the logits. */
    as_hook_kind lens_kind;
    int head_first;
    /* Why the logit lens, or direct logit attribution, does not apply
     * (NULL: it does): DLA needs a residual stream that is the sum of its
     * components, read out by one norm and a linear unembedding. */
    const char *no_lens, *no_dla;
    /* Set by the architecture while it builds: the scope of the hooks it
     * adds next ("blocks.3", "encoder.1", "decoder.2"), their stream and
     * their site (hooks of a cross-attention site are named
     * "cross_attn.*" where a self-attention's are "attn.*"). */
    char scope[32];       /* or a named part: "embed", "mlm_head" */
    int cur_stream;
    as_site cur_site;
    bool failed;          /* out of memory while building, or a builder's mistake */
    char mistake[256];    /* the first mistake: the op and the shapes ("": out of memory) */
    as_op dead_op;        /* where ops go when none can be added (the build then fails) */
} as_program;

/* Builds the program for the model's architecture. */
int as_program_build(as_program **out, const as_model *m, as_error *err);
/* The same with optional hooks (AS_PROG_*). */
int as_program_build_opts(as_program **out, const as_model *m, unsigned opts, as_error *err);
void as_program_free(as_program *p);
/* What an op kind computes, in a word ("linear", "scores"), for messages. */
const char *as_op_kind_name(as_op_kind k);
/* Hook index by exact name, or -1. */
int as_program_find_hook(const as_program *p, const char *name);
/* Shell-style match with '*' (any run of characters, dots included). */
bool as_hook_name_match(const char *pattern, const char *name);

#endif
