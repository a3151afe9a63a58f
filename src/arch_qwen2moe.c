/* Qwen-MoE (Qwen1.5-MoE, Qwen2-57B-A14B): Qwen 2's attention (biases on
 * q, k and v, rotary on the halves of each head) and in every block a
 * routed MLP beside a shared expert, as llama.cpp runs
 * general.architecture "qwen2moe": a softmax router over
 * qwen2moe.expert_count experts, the expert_used_count largest weights
 * used as they are (not renormalised), each expert of
 * expert_feed_forward_length (default feed_forward_length /
 * expert_used_count), and a shared SwiGLU expert of
 * expert_shared_feed_forward_length (default feed_forward_length) under
 * a sigmoid gate of its own (ffn_gate_inp_shexp). The block is
 * arch_decoder.c's. */
#include "arch_decoder.h"

#include <math.h>
#include <stdio.h>

static int read_config(as_config *c, const as_gguf *g, as_error *err)
{
    return as_dec_read_config(c, g, "qwen2moe", err);
}

static int load(as_model *m, as_error *err)
{
    as_dec_facts f = {.tensors = AS_DEC_QKV_BIAS | AS_DEC_SHARED_EXPERT, .rope = m->cfg.rope,
                      .attn_scale = 1.0f / sqrtf((float)m->cfg.d_head)};
    f.rope.mode = AS_ROPE_HALVES;
    f.rope_window = f.rope;
    if (as_dec_read_experts(m, "qwen2moe", &f, err))
        return AS_ERR;
    if (f.n_expert == 0)
        return as_error_set(err, "%s: qwen2moe.expert_count is missing or 0 (a qwen2moe model routes every MLP "
                            "among its experts)", m->path);
    if (!as_gguf_find(m->gguf, "qwen2moe.expert_feed_forward_length")) {
        f.d_expert = m->cfg.d_ff / f.n_expert_used; /* llama.cpp's default */
        if (f.d_expert < 1)
            return as_error_set(err, "%s: feed_forward_length %d / expert_used_count %d leaves the experts no width "
                                "(give qwen2moe.expert_feed_forward_length)", m->path, m->cfg.d_ff, f.n_expert_used);
    }
    uint32_t fs = (uint32_t)m->cfg.d_ff;
    if (as_gguf_get_u32_opt(m->gguf, "qwen2moe.expert_shared_feed_forward_length", &fs, err))
        return AS_ERR;
    if (fs < 1 || fs > (1u << 20))
        return as_error_set(err, "%s: qwen2moe.expert_shared_feed_forward_length = %u is out of range (1..%u)",
                            m->path, fs, 1u << 20);
    f.d_shared = (int)fs;
    return as_dec_load(m, &f, err);
}

const as_arch as_arch_qwen2moe = {
    .gguf_name = "qwen2moe",
    .block_prefix = "blk.",
    .read_config = read_config,
    .load = load,
    .build = as_dec_build,
};
