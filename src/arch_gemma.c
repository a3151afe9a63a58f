/* Gemma (the first): embeddings times sqrt(d_model); RMSNorm before
 * attention and the MLP only (the file stores Gemma's 1 + w); GEGLU MLP
 * (the tanh GELU); NEOX rotary; multi-head or multi-query attention,
 * scaled by 1/sqrt(head size); the unembedding is always the token
 * embedding. Facts as llama.cpp reads them for general.architecture
 * "gemma": Gemma 2's block without its post-norms, soft-caps and window.
 * The block is arch_decoder.c's. */
#include "arch_decoder.h"

#include <math.h>

static int read_config(as_config *c, const as_gguf *g, as_error *err)
{
    return as_dec_read_config(c, g, "gemma", err);
}

static int load(as_model *m, as_error *err)
{
    const as_config *c = &m->cfg;
    as_dec_facts f = {.tensors = AS_DEC_TIED, .rope = c->rope, .embed_scale = sqrtf((float)c->d_model),
                      .gelu = true, .attn_scale = 1.0f / sqrtf((float)c->d_head)};
    f.rope.mode = AS_ROPE_HALVES;
    f.rope_window = f.rope;
    return as_dec_load(m, &f, err);
}

const as_arch as_arch_gemma = {
    .gguf_name = "gemma",
    .block_prefix = "blk.",
    .read_config = read_config,
    .load = load,
    .build = as_dec_build,
};
