/* arch_decoder: what the decoders of the Llama family share (llama,
 * qwen2, qwen2moe, qwen3, gemma2, gemma3, phi3): their tensors as llama.cpp names
 * them, loaded into one weight struct, and one block described from
 * facts. Each architecture's own file (arch_NAME.c) reads its keys, says
 * which tensors its files hold and which facts its blocks have; nothing
 * here asks which architecture it is. Private to src/arch_*.c. */
#ifndef ATTNSCOPE_ARCH_DECODER_H
#define ATTNSCOPE_ARCH_DECODER_H

#include <stdbool.h>

#include "attnscope/model.h"
#include "program_build.h"

/* Which tensors a variant's files hold beyond attn_norm, attn_q/k/v (or
 * the fused attn_qkv), attn_output, ffn_norm, ffn_gate/up/down. */
enum {
    AS_DEC_QKV_BIAS = 1 << 0,    /* optional biases of q, k, v (fused or separate) */
    AS_DEC_O_BIAS = 1 << 1,      /* optional attn_output.bias */
    AS_DEC_FFN_BIAS = 1 << 2,    /* optional ffn_gate/up/down biases */
    AS_DEC_QK_NORM = 1 << 3,     /* attn_q_norm, attn_k_norm: per-head RMSNorm [d_head] */
    AS_DEC_POST_NORMS = 1 << 4,  /* post_attention_norm, post_ffw_norm */
    AS_DEC_FUSED_UP = 1 << 5,    /* ffn_up holds gate's rows then up's [2·d_ff]; no ffn_gate */
    AS_DEC_OUTPUT_BIAS = 1 << 6, /* optional output.bias */
    AS_DEC_TIED = 1 << 7,        /* the unembedding is always token_embd (output.weight unused) */
    AS_DEC_ROPE_FREQS = 1 << 8,  /* optional rope_freqs.weight [rope_dim/2]: llama 3's factors */
    AS_DEC_ROPE_LONG = 1 << 9,   /* optional rope_factors_long/short.weight (Phi-3's LongRoPE) */
    AS_DEC_SHARED_EXPERT = 1 << 10, /* beside the routed experts: ffn_gate_inp_shexp [d_model] and
                                     * ffn_gate/up/down_shexp, a shared expert of d_shared (Qwen-MoE) */
};

/* How a variant's blocks compute, beyond the Llama block (pre-norm
 * RMSNorm, rotary q and k, causal grouped-query attention, SwiGLU). */
typedef struct as_dec_facts {
    unsigned tensors;         /* AS_DEC_* */
    as_rope_spec rope;        /* full-attention layers */
    as_rope_spec rope_window; /* sliding-window layers (their own base, Gemma); the file's rotary
                               * factors, when it has them, are put in both by as_dec_load */
    float embed_scale;        /* embeddings times it (Gemma: sqrt(d_model)); 0: none */
    bool gelu;                /* the gate's activation: gelu_tanh (GEGLU) instead of silu */
    float attn_scale;         /* scores = q·k · attn_scale */
    float attn_softcap;       /* > 0: scores soft-capped (Gemma 2) */
    float final_softcap;      /* > 0: logits soft-capped */
    int window;               /* keys a sliding-window layer's query sees (0: no layer windowed) */
    /* Which layers are windowed (as_dec_read_window): the file's per-layer
     * bools (sliding_window_pattern as an array, in the model's GGUF view),
     * or else every layer but every window_period-th (0: every layer). */
    const as_gguf_kv *window_layers;
    uint32_t window_period;
    /* A routed MLP (Mixtral) in every layer when n_expert > 0: the
     * router ffn_gate_inp, the experts' ffn_gate/up/down_exps; n_expert_used
     * chosen per token, their weights renormalised when expert_renorm. */
    int n_expert, n_expert_used, d_expert;
    bool expert_renorm;
    int d_shared;             /* AS_DEC_SHARED_EXPERT: the shared expert's width */
} as_dec_facts;

typedef struct as_dec_layer {
    const float *attn_norm_w;
    as_weight wq, wk, wv, wo;   /* slices of attn_qkv when the file fuses them */
    const float *bq, *bk, *bv, *bo;
    const float *q_norm_w, *k_norm_w;
    const float *attn_post_norm_w;
    const float *ffn_norm_w;
    as_weight w_gate, w_up, w_down; /* gate and up: slices of ffn_up when fused */
    const float *b_gate, *b_up, *b_down;
    const float *ffn_post_norm_w;
    bool windowed;              /* a sliding-window layer */
    as_weight router;           /* routed MLP: ffn_gate_inp [n_expert][d_model] */
    as_weight gate_exps, up_exps, down_exps; /* n_expert stacked matrices each */
    as_weight shexp_gate_inp, shexp_gate, shexp_up, shexp_down; /* the shared expert and its gate's row */
} as_dec_layer;

typedef struct as_dec_weights {
    as_dec_facts facts;
    as_weight tok_embd;         /* [vocab][d_model] */
    const float *out_norm_w;
    as_weight output;           /* [vocab][d_model]; tok_embd when tied */
    const float *output_b;
    const float *rope_freqs;    /* the rotary factors in use, or NULL */
    as_dec_layer layers[];
} as_dec_weights;

/* The hyperparameters the family reads alike from "{arch}.*": the common
 * ones with the RMSNorm epsilon, the head size (attention.key_length) and
 * the rotary ones with their scaling. */
int as_dec_read_config(as_config *c, const as_gguf *g, const char *arch, as_error *err);
/* Loads the tensors facts->tensors says into a new m->weights (which
 * keeps the facts for as_dec_build). */
int as_dec_load(as_model *m, const as_dec_facts *facts, as_error *err);
/* The program of one forward pass over m->weights. */
int as_dec_build(as_program *p, as_error *err);

/* Keys some variants have, read as llama.cpp reads them. */
/* attention.sliding_window (default: def) and which layers use it:
 * sliding_window_pattern as a per-layer array of bools, or a period n
 * (layer l is windowed unless l % n == n - 1; default: period), into f
 * (before as_dec_load, which gives each layer its part). */
int as_dec_read_window(const as_model *m, const char *arch, int def, int period, as_dec_facts *f, as_error *err);
/* {arch}.expert_count (absent or 0: dense MLPs), expert_used_count and
 * expert_feed_forward_length (default: feed_forward_length) into f, each
 * range-checked and named when wrong; m->cfg must be read. */
int as_dec_read_experts(const as_model *m, const char *arch, as_dec_facts *f, as_error *err);
/* A float key "{arch}.{suffix}" into *out when present, checked positive. */
int as_dec_read_positive(const as_model *m, const char *arch, const char *suffix, float *out, as_error *err);

#endif
