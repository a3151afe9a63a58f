/* model: a loaded Transformer — its hyperparameters, its architecture's
 * descriptor (arch.h) and weights, and its tokenizer. The weights are
 * views into the memory-mapped file in their stored type (weight.h): a
 * model's memory is its file. Only small vectors (norm weights, biases)
 * stored in another type than F32 are converted, once. Which tensors an
 * architecture has, and what they are called, only its file knows; the
 * helpers here find, check and keep a tensor by the name it gives. */
#ifndef ATTNSCOPE_MODEL_H
#define ATTNSCOPE_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attnscope/arch.h"
#include "attnscope/engine.h"
#include "attnscope/error.h"
#include "attnscope/gguf.h"
#include "attnscope/kernels.h"
#include "attnscope/tokenizer.h"
#include "attnscope/weight.h"

/* Hyperparameters every architecture reads (an architecture that has no
 * use for one leaves it as the common reader set it). */
typedef struct as_config {
    char name[128];      /* general.name, else the file's base name */
    int n_vocab;
    int n_ctx;
    int d_model;
    int n_layer;
    int n_head;
    int n_head_kv;
    int d_head;          /* embedding_length / head_count, or attention.key_length */
    int d_ff;
    int rope_dim;        /* dimensions rotated per head (the head size unless the file says) */
    float eps;
    float rope_base;
    as_rope_spec rope;   /* rope_dim, rope_base and the file's rotary scaling (as_config_read_rope) */
} as_config;

typedef struct as_model {
    as_config cfg;
    const as_arch *arch;
    char *path;
    as_gguf *gguf;              /* a llama2.c checkpoint gets a GGUF view (llama2c.h) */
    as_tokenizer *tok;
    void *weights;              /* the architecture's own weight struct (one block) */
    float **owned;              /* vectors converted to float32, freed with the model */
    size_t n_owned;
    size_t weight_bytes;        /* bytes of the weights in use, as stored */
    char warnings[1024];        /* e.g. tensors holding NaN/Inf; empty if none */
    bool *used;                 /* per tensor of the file: found by the architecture's load */
    bool survey;                /* as_model_check: a missing or misshapen tensor is listed, not fatal */
    char *problems;             /* survey: one line per missing or misshapen tensor (it stops after 64) */
    size_t problems_len;
    long n_problems;
} as_model;

/* Loading a model by path (as_model_load, as_model_load_with), freeing it,
 * its architecture's name and `--info`'s check (as_model_print_check):
 * engine.h. */

/* Builds a model from an already-parsed GGUF (takes ownership of g on success). */
int as_model_from_gguf(as_model **out, as_gguf *g, as_error *err);
/* The same with a tokenizer built elsewhere (NULL: from g's metadata);
 * ownership of both is taken on success only. */
int as_model_from_gguf_tok(as_model **out, as_gguf *g, as_tokenizer *tok, as_error *err);

/* ---- for architecture files ---- */

/* The hyperparameters all decoders share, from "{arch}.*" keys:
 * context_length, embedding_length, block_count, feed_forward_length,
 * attention.head_count(_kv), and the epsilon under eps_key (e.g.
 * "attention.layer_norm_epsilon"; default 1e-5). Each is range-checked and
 * a wrong one named. */
int as_config_read_common(as_config *c, const as_gguf *g, const char *arch, const char *eps_key, as_error *err);
/* The head size from attention.key_length (and value_length, which must
 * equal it), when the file gives it instead of embedding_length / heads. */
int as_config_read_head_size(as_config *c, const as_gguf *g, const char *arch, as_error *err);
/* Rotary hyperparameters: rope.freq_base (default 10000),
 * rope.dimension_count (default the head size; even, at most it), and the
 * scaling as llama.cpp reads it: rope.scaling.type (linear when absent,
 * none, yarn, longrope), .factor, .attn_factor, .original_context_length;
 * all into c->rope (pairs mode: the architecture sets its own). */
int as_config_read_rope(as_config *c, const as_gguf *g, const char *arch, as_error *err);
/* A matrix of cols x rows (ggml ne = [cols, rows]) as a weight view.
 * Missing: an error naming the tensor, or, if optional, out->data NULL. */
int as_model_matrix(as_model *m, const char *name, uint64_t cols, uint64_t rows, bool optional,
                    as_weight *out, as_error *err);
/* A 3-D tensor of n_expert matrices of cols x rows (ggml ne = [cols,
 * rows, n_expert], llama.cpp's ffn_*_exps) as one weight view of
 * n_expert * rows rows: expert e's matrix is rows [e * rows, (e + 1) *
 * rows) (as_weight_rows). Missing: as as_model_matrix. */
int as_model_expert_matrix(as_model *m, const char *name, uint64_t cols, uint64_t rows, uint64_t n_expert,
                           bool optional, as_weight *out, as_error *err);
/* A 4-D convolution kernel stored as PyTorch's Conv2d weight [out, in,
 * kh, kw] (ggml ne = [kw, kh, in, out], llama.cpp's v.patch_embd.weight)
 * viewed as a matrix of `out` rows of in * kh * kw columns (each row the
 * kernel of one output channel, flattened [in][y][x]): a patch embedding
 * is then one matrix product per patch. */
int as_model_conv_matrix(as_model *m, const char *name, uint64_t kw, uint64_t kh, uint64_t in, uint64_t out,
                         as_weight *w, as_error *err);
/* A vector of n floats (in place when F32, else converted once).
 * Missing: an error, or, if optional, *out NULL. */
int as_model_vector(as_model *m, const char *name, uint64_t n, bool optional, const float **out,
                    as_error *err);
/* Refuses a token embedding (the tensor `name`, if present) whose rows are
 * not the vocabulary's tokens, before anything else is read. */
int as_model_check_vocab(const as_model *m, const char *name, as_error *err);
/* The block a tensor name belongs to ("{block_prefix}N."), or -1. */
int as_model_tensor_block(const as_model *m, const char *name);

#endif
