/* Phi-3: the Llama block with q, k and v fused in one matrix (attn_qkv)
 * and gate and up fused in another (ffn_up: gate's rows, then up's),
 * NEOX rotary, and LongRoPE's two sets of frequency factors
 * (rope_factors_long/short, the long ones when the context exceeds
 * rope.scaling.original_context_length, cos and sin scaled by
 * rope.scaling.attn_factor). Tensors as llama.cpp names them for
 * general.architecture "phi3". Like llama.cpp, attnscope runs its
 * attention without the sliding window some files declare (llama.cpp
 * says their conversion writes it wrongly); the block is arch_decoder.c's. */
#include "arch_decoder.h"

#include <math.h>

static int read_config(as_config *c, const as_gguf *g, as_error *err)
{
    return as_dec_read_config(c, g, "phi3", err);
}

static int load(as_model *m, as_error *err)
{
    as_dec_facts f = {.tensors = AS_DEC_FUSED_UP | AS_DEC_ROPE_LONG, .rope = m->cfg.rope,
                      .attn_scale = 1.0f / sqrtf((float)m->cfg.d_head)};
    f.rope.mode = AS_ROPE_HALVES;
    f.rope_window = f.rope; /* load gives both the factors it chose */
    return as_dec_load(m, &f, err);
}

const as_arch as_arch_phi3 = {
    .gguf_name = "phi3",
    .block_prefix = "blk.",
    .read_config = read_config,
    .load = load,
    .build = as_dec_build,
};
