/* Gemma 3: Gemma 2's block (embeddings times sqrt(d_model), norms before
 * and after attention and MLP, GEGLU, NEOX rotary) with an RMSNorm over
 * each head of q and k before the rotary and without the score soft-cap;
 * the logits soft-capped only when the file says (final_logit_softcapping);
 * when it gives attention.sliding_window, five layers in six windowed
 * (sliding_window_pattern) with their own rotary base (rope.freq_base_swa,
 * 1e4 by default) and no rotary scaling, the others with the file's base
 * and scaling. The unembedding is output.weight or the token embedding.
 * Facts as llama.cpp reads them for general.architecture "gemma3", the
 * attention scale included (1/sqrt(d_model/heads) for the 62-layer 27B,
 * 1/sqrt(head size) otherwise). The block is arch_decoder.c's. */
#include "arch_decoder.h"

#include <math.h>

static int read_config(as_config *c, const as_gguf *g, as_error *err)
{
    return as_dec_read_config(c, g, "gemma3", err);
}

static int load(as_model *m, as_error *err)
{
    const as_config *c = &m->cfg;
    as_dec_facts f = {.tensors = AS_DEC_QKV_BIAS | AS_DEC_QK_NORM | AS_DEC_POST_NORMS, .rope = c->rope,
                      .embed_scale = sqrtf((float)c->d_model), .gelu = true};
    f.attn_scale = 1.0f / sqrtf(c->n_layer == 62 ? (float)(c->d_model / c->n_head) : (float)c->d_head);
    f.rope.mode = AS_ROPE_HALVES;
    f.rope_window = as_rope_plain(c->rope_dim, 10000.0f);
    f.rope_window.mode = AS_ROPE_HALVES;
    if (as_dec_read_positive(m, "gemma3", "rope.freq_base_swa", &f.rope_window.base, err) ||
        as_dec_read_positive(m, "gemma3", "final_logit_softcapping", &f.final_softcap, err) ||
        as_dec_read_window(m, "gemma3", 0, 6, &f, err))
        return AS_ERR;
    return as_dec_load(m, &f, err);
}

const as_arch as_arch_gemma3 = {
    .gguf_name = "gemma3",
    .block_prefix = "blk.",
    .read_config = read_config,
    .load = load,
    .build = as_dec_build,
};
