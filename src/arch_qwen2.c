/* Qwen 2: the Llama block with biases on q, k and v, rotary positions on
 * the two halves of each head (llama.cpp's NEOX mode) and an optional
 * bias on the unembedding. Tensors as llama.cpp names them for
 * general.architecture "qwen2"; the block is arch_decoder.c's. */
#include "arch_decoder.h"

#include <math.h>

static int read_config(as_config *c, const as_gguf *g, as_error *err)
{
    return as_dec_read_config(c, g, "qwen2", err);
}

static int load(as_model *m, as_error *err)
{
    as_dec_facts f = {.tensors = AS_DEC_QKV_BIAS | AS_DEC_OUTPUT_BIAS, .rope = m->cfg.rope,
                      .attn_scale = 1.0f / sqrtf((float)m->cfg.d_head)};
    f.rope.mode = AS_ROPE_HALVES;
    f.rope_window = f.rope;
    return as_dec_load(m, &f, err);
}

const as_arch as_arch_qwen2 = {
    .gguf_name = "qwen2",
    .block_prefix = "blk.",
    .read_config = read_config,
    .load = load,
    .build = as_dec_build,
};
