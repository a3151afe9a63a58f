/* model: a loaded Transformer — its configuration, its weights as float32,
 * and its tokenizer. Reads the configuration from llama.cpp's metadata keys
 * and checks every tensor's shape against it. F32 weights are used in place
 * from the memory map; F16, BF16 and Q8_0 weights are dequantized once. */
#ifndef ATTNSCOPE_MODEL_H
#define ATTNSCOPE_MODEL_H

#include <stdbool.h>
#include <stddef.h>

#include "attnscope/error.h"
#include "attnscope/gguf.h"
#include "attnscope/tokenizer.h"

typedef enum as_arch { AS_ARCH_GPT2, AS_ARCH_LLAMA } as_arch;

typedef struct as_config {
    as_arch arch;
    char name[128];      /* general.name, else the file's base name */
    int n_vocab;
    int n_ctx;
    int d_model;
    int n_layer;
    int n_head;
    int n_head_kv;
    int d_head;
    int d_ff;
    int rope_dim;        /* llama: dimensions rotated per head */
    float eps;
    float rope_base;
} as_config;

/* Per-layer weights. A linear layer's matrix is [out][in] row-major (ggml's
 * ne = [in, out]), so y = x · Wᵀ. Absent biases are NULL. */
typedef struct as_layer {
    const float *attn_norm_w, *attn_norm_b;
    const float *wq, *wk, *wv;  /* gpt2: slices of the fused attn_qkv */
    const float *bq, *bk, *bv;
    const float *wo, *bo;
    const float *ffn_norm_w, *ffn_norm_b;
    const float *w_gate;        /* llama only */
    const float *w_up, *b_up;
    const float *w_down, *b_down;
} as_layer;

typedef struct as_model {
    as_config cfg;
    char *path;
    as_gguf *gguf;              /* a llama2.c checkpoint gets a GGUF view (llama2c.h) */
    as_tokenizer *tok;
    const float *tok_embd;      /* [vocab][d_model] */
    const float *pos_embd;      /* gpt2: [n_ctx][d_model] */
    const float *out_norm_w, *out_norm_b;
    const float *output;        /* [vocab][d_model]; == tok_embd when tied */
    bool tied;
    as_layer *layers;
    float **owned;              /* dequantized copies we must free */
    size_t n_owned;
    size_t weight_bytes;        /* float32 bytes of all weights in use */
    char warnings[1024];        /* e.g. tensors holding NaN/Inf; empty if none */
} as_model;

/* Loads a GGUF file or a llama2.c checkpoint (told apart by GGUF's magic);
 * a checkpoint's tokenizer is looked for as tokenizer.bin (see llama2c.h). */
int as_model_load(as_model **out, const char *path, as_error *err);
/* The same with a llama2.c tokenizer file given (NULL: look for it). */
int as_model_load_with(as_model **out, const char *path, const char *tokenizer, as_error *err);
/* Builds a model from an already-parsed GGUF (takes ownership of g on success). */
int as_model_from_gguf(as_model **out, as_gguf *g, as_error *err);
/* The same with a tokenizer built elsewhere (NULL: from g's metadata);
 * ownership of both is taken on success only. */
int as_model_from_gguf_tok(as_model **out, as_gguf *g, as_tokenizer *tok, as_error *err);
void as_model_free(as_model *m);
const char *as_arch_name(as_arch a);

#endif
