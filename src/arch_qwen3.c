/* Qwen 3: Qwen 2's block without its biases, with an RMSNorm over each
 * head of q and of k before the rotary (attn_q_norm, attn_k_norm), and a
 * head size of its own (attention.key_length: q is wider than the
 * residual stream). Tensors as llama.cpp names them for
 * general.architecture "qwen3"; the block is arch_decoder.c's. */
#include "arch_decoder.h"

#include <math.h>

static int read_config(as_config *c, const as_gguf *g, as_error *err)
{
    return as_dec_read_config(c, g, "qwen3", err);
}

static int load(as_model *m, as_error *err)
{
    as_dec_facts f = {.tensors = AS_DEC_QKV_BIAS | AS_DEC_QK_NORM, .rope = m->cfg.rope,
                      .attn_scale = 1.0f / sqrtf((float)m->cfg.d_head)};
    f.rope.mode = AS_ROPE_HALVES;
    f.rope_window = f.rope;
    return as_dec_load(m, &f, err);
}

const as_arch as_arch_qwen3 = {
    .gguf_name = "qwen3",
    .block_prefix = "blk.",
    .read_config = read_config,
    .load = load,
    .build = as_dec_build,
};
