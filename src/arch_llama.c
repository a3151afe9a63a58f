/* Llama: RMSNorm, rotary positions on q and k (llama.cpp's "NORM" mode
 * for this architecture: adjacent pairs), grouped-query attention (kv
 * heads shared by n_head / n_head_kv query heads), SwiGLU MLP, final
 * RMSNorm, separate or tied unembedding. Tensors as llama.cpp names them
 * for general.architecture "llama" (llama2.c checkpoints are read into
 * the same names, see arch_llama2c.c), with what llama.cpp also accepts:
 * a fused attn_qkv, optional biases, llama 3's rotary factors
 * (rope_freqs) and the rotary scalings (linear, YaRN). Mistral's files are
 * this architecture; a file that gives attention.sliding_window has every
 * layer's attention windowed (Mistral 7B v0.1), which llama.cpp ignores.
 * Mixtral's files are this architecture too: llama.expert_count experts
 * in every layer's MLP, llama.expert_used_count chosen per token by a
 * softmax router, their weights renormalised.
 * The block is arch_decoder.c's. */
#include "arch_decoder.h"

#include <math.h>

static int read_config(as_config *c, const as_gguf *g, as_error *err)
{
    return as_dec_read_config(c, g, "llama", err);
}

static int load(as_model *m, as_error *err)
{
    as_dec_facts f = {.tensors = AS_DEC_QKV_BIAS | AS_DEC_O_BIAS | AS_DEC_FFN_BIAS | AS_DEC_ROPE_FREQS,
                      .rope = m->cfg.rope, .attn_scale = 1.0f / sqrtf((float)m->cfg.d_head)};
    f.rope_window = f.rope;
    /* Mixtral: llama with experts, their chosen weights renormalised
     * (llama.cpp's build_moe_ffn with norm_w for this architecture) */
    f.expert_renorm = true;
    if (as_dec_read_experts(m, "llama", &f, err) || as_dec_read_window(m, "llama", 0, 0, &f, err))
        return AS_ERR;
    return as_dec_load(m, &f, err);
}

const as_arch as_arch_llama = {
    .gguf_name = "llama",
    .block_prefix = "blk.",
    .read_config = read_config,
    .load = load,
    .build = as_dec_build,
};
