/* Llama as a program: RMSNorm, rotary positions on q and k (llama.cpp's
 * "NORM" mode for this architecture: adjacent pairs), grouped-query
 * attention (kv heads shared by n_head / n_head_kv query heads), SwiGLU MLP,
 * final RMSNorm, separate or tied unembedding. */
#include "attnscope/program.h"

static int block(as_program *p, int l, int pre)
{
    const as_config *c = &p->model->cfg;
    const as_layer *W = &p->model->layers[l];
    int d = c->d_model, H = c->n_head, Hk = c->n_head_kv, dh = c->d_head, f = c->d_ff;

    int n1 = as_program_add_norm(p, AS_HK_LN1_SCALE, l, pre, W->attn_norm_w, NULL, true, "ln1");
    int q = as_program_add_linear(p, AS_HK_Q, l, AS_CLASS_HEADS, n1, W->wq, NULL, d, 2, H, dh,
                                  "q = ln1 · W_Q");
    int k = as_program_add_linear(p, AS_HK_K, l, AS_CLASS_HEADS, n1, W->wk, NULL, d, 2, Hk, dh,
                                  "k = ln1 · W_K");
    int v = as_program_add_linear(p, AS_HK_V, l, AS_CLASS_ESSENTIAL, n1, W->wv, NULL, d, 2, Hk, dh,
                                  "v = ln1 · W_V");
    int rq = as_program_add_hook(p, AS_HK_ROT_Q, l, AS_CLASS_HEADS, 2, H, dh);
    as_program_add_op(p, AS_OP_ROPE, l, rq, q, -1, "rot_q = rotate(q, position)");
    int rk = as_program_add_hook(p, AS_HK_ROT_K, l, AS_CLASS_ESSENTIAL, 2, Hk, dh);
    as_program_add_op(p, AS_OP_ROPE, l, rk, k, -1, "rot_k = rotate(k, position)");
    int z = as_program_add_attention(p, l, rq, rk, v, "scores = rot_q · rot_kᵀ / sqrt(d_head), causal");
    int ao = as_program_add_linear(p, AS_HK_ATTN_OUT, l, AS_CLASS_RESID, z, W->wo, NULL, d, 1, d, 0,
                                   "attn_out = z · W_O");
    int mid = as_program_add_sum(p, AS_HK_RESID_MID, l, pre, ao, "resid_mid = resid_pre + attn_out");

    int n2 = as_program_add_norm(p, AS_HK_LN2_SCALE, l, mid, W->ffn_norm_w, NULL, true, "ln2");
    int gate = as_program_add_linear(p, AS_HK_MLP_PRE, l, AS_CLASS_MLP, n2, W->w_gate, NULL, d, 1, f, 0,
                                     "mlp pre = ln2 · W_gate");
    int up = as_program_add_linear(p, AS_HK_MLP_PRE_LINEAR, l, AS_CLASS_MLP, n2, W->w_up, NULL, d, 1, f,
                                   0, "mlp pre_linear = ln2 · W_in");
    int post = as_program_add_hook(p, AS_HK_MLP_POST, l, AS_CLASS_MLP, 1, f, 0);
    as_program_add_op(p, AS_OP_SWIGLU, l, post, gate, up, "mlp post = silu(pre) * pre_linear");
    int mo = as_program_add_linear(p, AS_HK_MLP_OUT, l, AS_CLASS_RESID, post, W->w_down, NULL, f, 1, d,
                                   0, "mlp_out = post · W_out");
    return as_program_add_sum(p, AS_HK_RESID_POST, l, mid, mo, "resid_post = resid_mid + mlp_out");
}

int as_arch_llama_build(as_program *p, as_error *err)
{
    int d = p->model->cfg.d_model;
    int e = as_program_add_hook(p, AS_HK_EMBED, -1, AS_CLASS_RESID, 1, d, 0);
    as_program_add_op(p, AS_OP_EMBED, -1, e, -1, -1, "embed = W_E[token]");
    int resid = e;
    for (int l = 0; l < p->model->cfg.n_layer; l++) {
        int pre = as_program_add_hook(p, AS_HK_RESID_PRE, l, AS_CLASS_RESID, 1, d, 0);
        as_program_add_op(p, AS_OP_COPY, l, pre, resid, -1,
                          l ? "resid_pre = previous resid_post" : "resid_pre = embed");
        resid = block(p, l, pre);
    }
    as_program_add_unembed(p, resid, true);
    (void)err;
    return AS_OK;
}
