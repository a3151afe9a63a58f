/* BERT as llama.cpp reads general.architecture "bert" (bge, all-MiniLM
 * and the like): token, position and token-type embeddings with a
 * LayerNorm, Post-LN blocks with a GELU MLP, no attention mask, pooling as
 * {arch}.pooling_type says; and, where the file has it, our masked-LM
 * head (mlm.*: see arch_encoder.h). The block is arch_encoder.c's. */
#include "arch_encoder.h"

static int read_config(as_config *c, const as_gguf *g, as_error *err)
{
    return as_enc_read_config(c, g, "bert", err);
}

static int load(as_model *m, as_error *err)
{
    as_enc_facts f = {.tensors = 0};
    return as_enc_load(m, &f, err);
}

const as_arch as_arch_bert = {
    .gguf_name = "bert",
    .block_prefix = "blk.",
    .read_config = read_config,
    .load = load,
    .build = as_enc_build,
};
