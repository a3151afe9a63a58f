/* GPT-2 as a program: learned positions, pre-LN LayerNorm with bias, fused
 * QKV with bias, GELU (tanh form) MLP, final LayerNorm, tied or separate
 * unembedding. One block reads top to bottom like the paper's figure. */
#include "attnscope/program.h"

/* Returns the block's resid_post hook. */
static int block(as_program *p, int l, int pre)
{
    const as_config *c = &p->model->cfg;
    const as_layer *W = &p->model->layers[l];
    int d = c->d_model, H = c->n_head, dh = c->d_head, f = c->d_ff;

    int n1 = as_program_add_norm(p, AS_HK_LN1_SCALE, l, pre, W->attn_norm_w, W->attn_norm_b, false, "ln1");
    /* ln1 · W_QKV: [pos, d] → three [pos, heads, d_head] slices of the fused matrix. */
    int q = as_program_add_linear(p, AS_HK_Q, l, AS_CLASS_HEADS, n1, W->wq, W->bq, d, 2, H, dh,
                                  "q = ln1 · W_Q + b_Q");
    int k = as_program_add_linear(p, AS_HK_K, l, AS_CLASS_ESSENTIAL, n1, W->wk, W->bk, d, 2, H, dh,
                                  "k = ln1 · W_K + b_K");
    int v = as_program_add_linear(p, AS_HK_V, l, AS_CLASS_ESSENTIAL, n1, W->wv, W->bv, d, 2, H, dh,
                                  "v = ln1 · W_V + b_V");
    int z = as_program_add_attention(p, l, q, k, v, "scores = q · kᵀ / sqrt(d_head), causal");
    int ao = as_program_add_linear(p, AS_HK_ATTN_OUT, l, AS_CLASS_RESID, z, W->wo, W->bo, d, 1, d, 0,
                                   "attn_out = z · W_O + b_O");
    int mid = as_program_add_sum(p, AS_HK_RESID_MID, l, pre, ao, "resid_mid = resid_pre + attn_out");

    int n2 = as_program_add_norm(p, AS_HK_LN2_SCALE, l, mid, W->ffn_norm_w, W->ffn_norm_b, false, "ln2");
    int mp = as_program_add_linear(p, AS_HK_MLP_PRE, l, AS_CLASS_MLP, n2, W->w_up, W->b_up, d, 1, f, 0,
                                   "mlp pre = ln2 · W_in + b_in");
    int post = as_program_add_hook(p, AS_HK_MLP_POST, l, AS_CLASS_MLP, 1, f, 0);
    as_program_add_op(p, AS_OP_GELU, l, post, mp, -1, "mlp post = gelu(pre)");
    int mo = as_program_add_linear(p, AS_HK_MLP_OUT, l, AS_CLASS_RESID, post, W->w_down, W->b_down, f, 1,
                                   d, 0, "mlp_out = post · W_out + b_out");
    return as_program_add_sum(p, AS_HK_RESID_POST, l, mid, mo, "resid_post = resid_mid + mlp_out");
}

int as_arch_gpt2_build(as_program *p, as_error *err)
{
    int d = p->model->cfg.d_model;
    int e = as_program_add_hook(p, AS_HK_EMBED, -1, AS_CLASS_RESID, 1, d, 0);
    as_program_add_op(p, AS_OP_EMBED, -1, e, -1, -1, "embed = W_E[token]");
    int pe = as_program_add_hook(p, AS_HK_POS_EMBED, -1, AS_CLASS_RESID, 1, d, 0);
    as_program_add_op(p, AS_OP_POS_EMBED, -1, pe, -1, -1, "pos_embed = W_pos[position]");

    int resid = e;
    for (int l = 0; l < p->model->cfg.n_layer; l++) {
        int pre = as_program_add_hook(p, AS_HK_RESID_PRE, l, AS_CLASS_RESID, 1, d, 0);
        /* TransformerLens's blocks.0.hook_resid_pre is embed + pos_embed. */
        if (l == 0)
            as_program_add_op(p, AS_OP_ADD, l, pre, e, pe, "resid_pre = embed + pos_embed");
        else
            as_program_add_op(p, AS_OP_COPY, l, pre, resid, -1, "resid_pre = previous resid_post");
        resid = block(p, l, pre);
    }
    as_program_add_unembed(p, resid, false);
    (void)err;
    return AS_OK;
}
