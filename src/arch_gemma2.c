/* Gemma 2: embeddings times sqrt(d_model); RMSNorm before and after
 * attention and the MLP (post_attention_norm, post_ffw_norm; the file
 * stores Gemma's 1 + w); GEGLU MLP; attention scores soft-capped
 * (attn_logit_softcapping, 50 by default) and the logits too
 * (final_logit_softcapping, 30); sliding-window attention on every other
 * layer (attention.sliding_window, 4096 by default; the pattern from
 * sliding_window_pattern, period 2 by default), those layers' rotary base
 * from rope.freq_base_swa; NEOX rotary; the unembedding is always the
 * token embedding. Facts as llama.cpp reads them for general.architecture
 * "gemma2", the attention scale included (1/sqrt(d_model/heads) for the
 * 46-layer 27B, as Google's reference code has it, 1/sqrt(head size)
 * otherwise). The block is arch_decoder.c's. */
#include "arch_decoder.h"

#include <math.h>

static int read_config(as_config *c, const as_gguf *g, as_error *err)
{
    return as_dec_read_config(c, g, "gemma2", err);
}

static int load(as_model *m, as_error *err)
{
    const as_config *c = &m->cfg;
    as_dec_facts f = {.tensors = AS_DEC_QKV_BIAS | AS_DEC_POST_NORMS | AS_DEC_TIED, .rope = c->rope,
                      .embed_scale = sqrtf((float)c->d_model), .gelu = true, .attn_softcap = 50.0f,
                      .final_softcap = 30.0f};
    f.attn_scale = 1.0f / sqrtf(c->n_layer == 46 ? (float)(c->d_model / c->n_head) : (float)c->d_head);
    f.rope.mode = AS_ROPE_HALVES;
    f.rope_window = f.rope;
    if (as_dec_read_positive(m, "gemma2", "rope.freq_base_swa", &f.rope_window.base, err) ||
        as_dec_read_positive(m, "gemma2", "attn_logit_softcapping", &f.attn_softcap, err) ||
        as_dec_read_positive(m, "gemma2", "final_logit_softcapping", &f.final_softcap, err) ||
        as_dec_read_window(m, "gemma2", 4096, 2, &f, err))
        return AS_ERR;
    return as_dec_load(m, &f, err);
}

const as_arch as_arch_gemma2 = {
    .gguf_name = "gemma2",
    .block_prefix = "blk.",
    .read_config = read_config,
    .load = load,
    .build = as_dec_build,
};
