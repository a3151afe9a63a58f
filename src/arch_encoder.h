/* arch_encoder: what the bidirectional encoders of the BERT family share
 * (bert, nomic-bert): their tensors as llama.cpp names them, our
 * masked-LM head, and one Post-LN block described from facts (LayerNorm
 * after each residual add, no attention mask). Each architecture's own
 * file says which tensors its files hold; nothing here asks which
 * architecture it is. Private to src/arch_*.c. */
#ifndef ATTNSCOPE_ARCH_ENCODER_H
#define ATTNSCOPE_ARCH_ENCODER_H

#include <stdbool.h>

#include "attnscope/model.h"
#include "program_build.h"

/* How a variant differs from BERT (learned positions, GELU MLP with
 * biases). */
enum {
    AS_ENC_GATED = 1 << 0, /* ffn_gate, ffn_up, ffn_down: SwiGLU, no MLP biases (nomic-bert) */
    AS_ENC_ROPE = 1 << 1,  /* NEOX rotary on q and k; no position_embd (nomic-bert) */
};

typedef struct as_enc_facts {
    unsigned tensors;      /* AS_ENC_* */
    as_rope_spec rope;     /* AS_ENC_ROPE */
    as_gelu gelu;          /* the MLP's and the masked-LM head's GELU: tanh (llama.cpp's) unless the file's
                              {arch}.attnscope.gelu says "erf" (a Hugging Face config's hidden_act "gelu") */
} as_enc_facts;

typedef struct as_enc_layer {
    as_weight wq, wk, wv, wo;   /* slices of attn_qkv when the file fuses them */
    const float *bq, *bk, *bv, *bo;
    const float *attn_norm_w, *attn_norm_b;  /* attn_output_norm: after the attention residual */
    as_weight w_gate, w_up, w_down;
    const float *b_up, *b_down;
    const float *out_norm_w, *out_norm_b;    /* layer_output_norm: after the MLP residual */
} as_enc_layer;

/* The masked-LM head (HF's cls.predictions; not a llama.cpp tensor):
 * dense d→d, GELU, LayerNorm, then the token embeddings (tied) or
 * mlm.output.weight, plus mlm.output.bias. */
typedef struct as_enc_mlm {
    as_weight dense;
    const float *dense_b, *norm_w, *norm_b;
    as_weight out;
    const float *out_b;
} as_enc_mlm;

typedef struct as_enc_weights {
    as_enc_facts facts;
    as_pooling pooling;         /* {arch}.pooling_type, or ours ({arch}.attnscope.pooling) */
    bool pool_l2;               /* {arch}.attnscope.normalize: the pooled vector L2-normalized */
    as_weight tok_embd;         /* [vocab][d_model] */
    as_weight type_embd;        /* [types][d_model], or data NULL */
    as_weight pos_embd;         /* [n_ctx][d_model], or data NULL (rotary) */
    const float *embd_norm_w, *embd_norm_b;
    bool has_mlm;
    as_enc_mlm mlm;
    as_enc_layer layers[];
} as_enc_weights;

/* The hyperparameters the family reads alike: the common ones with the
 * LayerNorm epsilon (attention.layer_norm_epsilon); refuses a file that
 * says attention.causal = true. */
int as_enc_read_config(as_config *c, const as_gguf *g, const char *arch, as_error *err);
/* Loads the tensors facts->tensors says, the MLM head if the file has
 * one, the pooling type and the GELU ({arch}.attnscope.gelu: "tanh" or
 * "erf"; absent: tanh, as llama.cpp computes every bert), into a new
 * m->weights. */
int as_enc_load(as_model *m, const as_enc_facts *facts, as_error *err);
/* The program of one forward pass over m->weights. */
int as_enc_build(as_program *p, as_error *err);

#endif
