/* Llama: RMSNorm, rotary positions on q and k (llama.cpp's "NORM" mode
 * for this architecture: adjacent pairs), grouped-query attention (kv
 * heads shared by n_head / n_head_kv query heads), SwiGLU MLP, final
 * RMSNorm, separate or tied unembedding. Tensors as llama.cpp names them
 * for general.architecture "llama" (llama2.c checkpoints are read into
 * the same names, see arch_llama2c.c). */
#include "attnscope/model.h"
#include "attnscope/program.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct layer {
    const float *attn_norm_w;
    as_weight wq, wk, wv, wo;
    const float *ffn_norm_w;
    as_weight w_gate, w_up, w_down;
} layer;

typedef struct weights {
    as_weight tok_embd;         /* [vocab][d_model] */
    const float *out_norm_w;
    as_weight output;           /* [vocab][d_model]; tok_embd when tied */
    layer layers[];
} weights;

static int read_config(as_config *c, const as_gguf *g, as_error *err)
{
    if (as_config_read_common(c, g, "llama", "attention.layer_norm_rms_epsilon", err))
        return AS_ERR;
    return as_config_read_rope(c, g, "llama", err);
}

static int load_layer(as_model *m, layer *L, int l, as_error *err)
{
    const as_config *c = &m->cfg;
    uint64_t d = (uint64_t)c->d_model, f = (uint64_t)c->d_ff;
    uint64_t kv = (uint64_t)c->n_head_kv * (uint64_t)c->d_head;
    char n[96];
#define N(suffix) (snprintf(n, sizeof n, "blk.%d.%s", l, suffix), n)
    if (as_model_vector(m, N("attn_norm.weight"), d, false, &L->attn_norm_w, err) ||
        as_model_matrix(m, N("attn_q.weight"), d, d, false, &L->wq, err))
        return AS_ERR;
    /* Their width comes from three hyperparameters: say which. */
    if (as_model_matrix(m, N("attn_k.weight"), d, kv, false, &L->wk, err) ||
        as_model_matrix(m, N("attn_v.weight"), d, kv, false, &L->wv, err)) {
        char first[sizeof err->msg];
        snprintf(first, sizeof first, "%s", err->msg);
        return as_error_set(err, "%s (%llu = head_count_kv %d x head size %d, the head size being "
                            "embedding_length %d / head_count %d)", first, (unsigned long long)kv,
                            c->n_head_kv, c->d_head, c->d_model, c->n_head);
    }
    if (as_model_matrix(m, N("attn_output.weight"), d, d, false, &L->wo, err) ||
        as_model_vector(m, N("ffn_norm.weight"), d, false, &L->ffn_norm_w, err) ||
        as_model_matrix(m, N("ffn_gate.weight"), d, f, false, &L->w_gate, err) ||
        as_model_matrix(m, N("ffn_up.weight"), d, f, false, &L->w_up, err) ||
        as_model_matrix(m, N("ffn_down.weight"), f, d, false, &L->w_down, err))
        return AS_ERR;
#undef N
    return AS_OK;
}

static int load(as_model *m, as_error *err)
{
    const as_config *c = &m->cfg;
    uint64_t d = (uint64_t)c->d_model, v = (uint64_t)c->n_vocab;
    if (as_model_check_vocab(m, "token_embd.weight", err))
        return AS_ERR;
    weights *W = calloc(1, sizeof *W + (size_t)c->n_layer * sizeof W->layers[0]);
    if (!W)
        return as_error_set(err, "%s: out of memory", m->path);
    m->weights = W;
    if (as_model_matrix(m, "token_embd.weight", d, v, false, &W->tok_embd, err) ||
        as_model_vector(m, "output_norm.weight", d, false, &W->out_norm_w, err) ||
        as_model_matrix(m, "output.weight", d, v, true, &W->output, err))
        return AS_ERR;
    if (!W->output.data)
        W->output = W->tok_embd; /* tied */
    for (int l = 0; l < c->n_layer; l++)
        if (load_layer(m, &W->layers[l], l, err))
            return AS_ERR;
    return AS_OK;
}

static int block(as_program *p, int l, int pre)
{
    const as_config *c = &p->model->cfg;
    const layer *W = &((const weights *)p->model->weights)->layers[l];
    int d = c->d_model, H = c->n_head, Hk = c->n_head_kv, dh = c->d_head, f = c->d_ff;

    int n1 = as_program_add_norm(p, AS_HK_LN1_SCALE, l, pre, W->attn_norm_w, NULL, AS_NORM_RMS, c->eps, "ln1");
    int q = as_program_add_linear(p, AS_HK_Q, l, AS_CLASS_HEADS, n1, &W->wq, NULL, 2, H, dh, "q = ln1 · W_Q");
    int k = as_program_add_linear(p, AS_HK_K, l, AS_CLASS_HEADS, n1, &W->wk, NULL, 2, Hk, dh, "k = ln1 · W_K");
    int v = as_program_add_linear(p, AS_HK_V, l, AS_CLASS_ESSENTIAL, n1, &W->wv, NULL, 2, Hk, dh,
                                  "v = ln1 · W_V");
    as_rope_spec rope = as_rope_plain(c->rope_dim, c->rope_base);
    int rq = as_program_add_rope(p, AS_HK_ROT_Q, l, AS_CLASS_HEADS, q, &rope, "rot_q = rotate(q, position)");
    int rk = as_program_add_rope(p, AS_HK_ROT_K, l, AS_CLASS_ESSENTIAL, k, &rope, "rot_k = rotate(k, position)");
    as_attn site = {.layer = l, .q = rq, .k = rk, .v = v, .n_head = H, .n_head_kv = Hk, .d_qk = dh, .d_v = dh,
                    .scale = 1.0f / sqrtf((float)dh), .mask = AS_MASK_CAUSAL, .bias = -1};
    int z = as_program_add_attention(p, &site, "scores = rot_q · rot_kᵀ / sqrt(d_head), causal");
    int ao = as_program_add_linear(p, AS_HK_ATTN_OUT, l, AS_CLASS_RESID, z, &W->wo, NULL, 1, d, 0,
                                   "attn_out = z · W_O");
    int mid = as_program_add_sum(p, AS_HK_RESID_MID, l, pre, ao, "resid_mid = resid_pre + attn_out");

    int n2 = as_program_add_norm(p, AS_HK_LN2_SCALE, l, mid, W->ffn_norm_w, NULL, AS_NORM_RMS, c->eps, "ln2");
    int gate = as_program_add_linear(p, AS_HK_MLP_PRE, l, AS_CLASS_MLP, n2, &W->w_gate, NULL, 1, f, 0,
                                     "mlp pre = ln2 · W_gate");
    int up = as_program_add_linear(p, AS_HK_MLP_PRE_LINEAR, l, AS_CLASS_MLP, n2, &W->w_up, NULL, 1, f, 0,
                                   "mlp pre_linear = ln2 · W_in");
    int post = as_program_add_hook(p, AS_HK_MLP_POST, l, AS_CLASS_MLP, 1, f, 0);
    as_program_add_op(p, AS_OP_SWIGLU, l, post, gate, up, "mlp post = silu(pre) * pre_linear");
    int mo = as_program_add_linear(p, AS_HK_MLP_OUT, l, AS_CLASS_RESID, post, &W->w_down, NULL, 1, d, 0,
                                   "mlp_out = post · W_out");
    return as_program_add_sum(p, AS_HK_RESID_POST, l, mid, mo, "resid_post = resid_mid + mlp_out");
}

static int build(as_program *p, as_error *err)
{
    const as_config *c = &p->model->cfg;
    const weights *W = p->model->weights;
    int d = c->d_model;
    as_program_add_stream(p, "tokens", AS_INPUT_TOKENS, c->n_ctx, true);
    int e = as_program_add_hook(p, AS_HK_EMBED, -1, AS_CLASS_RESID, 1, d, 0);
    as_program_add_op(p, AS_OP_EMBED, -1, e, -1, -1, "embed = W_E[token]")->w = W->tok_embd;
    int resid = e;
    for (int l = 0; l < c->n_layer; l++) {
        as_program_scope(p, l);
        int pre = as_program_add_hook(p, AS_HK_RESID_PRE, l, AS_CLASS_RESID, 1, d, 0);
        as_program_add_op(p, AS_OP_COPY, l, pre, resid, -1,
                          l ? "resid_pre = previous resid_post" : "resid_pre = embed");
        resid = block(p, l, pre);
    }
    as_program_scope(p, -1);
    as_program_add_unembed(p, resid, W->out_norm_w, NULL, AS_NORM_RMS, c->eps, &W->output, NULL, 0);
    (void)err;
    return AS_OK;
}

const as_arch as_arch_llama = {"llama", "blk.", read_config, load, build};
