/* nomic-bert (nomic-embed-text) as llama.cpp reads it: BERT's Post-LN
 * encoder with q, k and v fused and without biases, rotary positions on
 * the two halves of each head (NEOX) instead of position embeddings, and
 * a SwiGLU MLP. The block is arch_encoder.c's. */
#include "arch_encoder.h"

static int read_config(as_config *c, const as_gguf *g, as_error *err)
{
    return as_enc_read_config(c, g, "nomic-bert", err) || as_config_read_rope(c, g, "nomic-bert", err);
}

static int load(as_model *m, as_error *err)
{
    as_enc_facts f = {.tensors = AS_ENC_GATED | AS_ENC_ROPE, .rope = m->cfg.rope};
    f.rope.mode = AS_ROPE_HALVES;
    return as_enc_load(m, &f, err);
}

const as_arch as_arch_nomic_bert = {
    .gguf_name = "nomic-bert",
    .block_prefix = "blk.",
    .read_config = read_config,
    .load = load,
    .build = as_enc_build,
};
