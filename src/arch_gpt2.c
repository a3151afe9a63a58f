/* GPT-2: learned positions, pre-LN LayerNorm with bias, fused QKV with
 * bias, GELU (tanh form) MLP, final LayerNorm, tied or separate
 * unembedding. Tensors as llama.cpp names them for general.architecture
 * "gpt2". One block reads top to bottom like the paper's figure. */
#include "attnscope/model.h"
#include "program_build.h"
#include "tensor_names.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct layer {
    const float *attn_norm_w, *attn_norm_b;
    as_weight wq, wk, wv;       /* slices of the fused attn_qkv */
    const float *bq, *bk, *bv;
    as_weight wo;
    const float *bo;
    const float *ffn_norm_w, *ffn_norm_b;
    as_weight w_up, w_down;
    const float *b_up, *b_down;
} layer;

typedef struct weights {
    as_weight tok_embd;         /* [vocab][d_model] */
    as_weight pos_embd;         /* [n_ctx][d_model] */
    const float *out_norm_w, *out_norm_b;
    as_weight output;           /* [vocab][d_model]; tok_embd when tied */
    layer layers[];
} weights;

static int read_config(as_config *c, const as_gguf *g, as_error *err)
{
    return as_config_read_common(c, g, "gpt2", "attention.layer_norm_epsilon", err);
}

static int load_layer(as_model *m, layer *L, int l, as_error *err)
{
    uint64_t d = (uint64_t)m->cfg.d_model, f = (uint64_t)m->cfg.d_ff;
    char n[96];
    as_weight qkv;
    const float *qkv_b;
#define N(name) (snprintf(n, sizeof n, name, l), n)
    if (as_model_vector(m, N(AS_TN_ATTN_NORM ".weight"), d, false, &L->attn_norm_w, err) ||
        as_model_vector(m, N(AS_TN_ATTN_NORM ".bias"), d, false, &L->attn_norm_b, err) ||
        as_model_matrix(m, N(AS_TN_ATTN_OUT ".weight"), d, d, false, &L->wo, err) ||
        as_model_vector(m, N(AS_TN_ATTN_OUT ".bias"), d, true, &L->bo, err) ||
        as_model_vector(m, N(AS_TN_FFN_NORM ".weight"), d, false, &L->ffn_norm_w, err) ||
        as_model_vector(m, N(AS_TN_FFN_NORM ".bias"), d, false, &L->ffn_norm_b, err) ||
        as_model_matrix(m, N(AS_TN_FFN_UP ".weight"), d, f, false, &L->w_up, err) ||
        as_model_vector(m, N(AS_TN_FFN_UP ".bias"), f, true, &L->b_up, err) ||
        as_model_matrix(m, N(AS_TN_FFN_DOWN ".weight"), f, d, false, &L->w_down, err) ||
        as_model_vector(m, N(AS_TN_FFN_DOWN ".bias"), d, true, &L->b_down, err) ||
        as_model_matrix(m, N(AS_TN_ATTN_QKV ".weight"), d, 3 * d, false, &qkv, err) ||
        as_model_vector(m, N(AS_TN_ATTN_QKV ".bias"), 3 * d, true, &qkv_b, err))
        return AS_ERR;
#undef N
    /* The fused matrix holds Q's rows, then K's, then V's. */
    L->wq = as_weight_rows(&qkv, 0, (int)d);
    L->wk = as_weight_rows(&qkv, (int)d, (int)d);
    L->wv = as_weight_rows(&qkv, 2 * (int)d, (int)d);
    if (qkv_b) {
        L->bq = qkv_b;
        L->bk = qkv_b + d;
        L->bv = qkv_b + 2 * d;
    }
    return AS_OK;
}

static int load(as_model *m, as_error *err)
{
    const as_config *c = &m->cfg;
    uint64_t d = (uint64_t)c->d_model, v = (uint64_t)c->n_vocab;
    if (as_model_check_vocab(m, AS_TN_TOKEN_EMBD ".weight", err))
        return AS_ERR;
    weights *W = calloc(1, sizeof *W + (size_t)c->n_layer * sizeof W->layers[0]);
    if (!W)
        return as_error_set(err, "%s: out of memory", m->path);
    m->weights = W;
    if (as_model_matrix(m, AS_TN_TOKEN_EMBD ".weight", d, v, false, &W->tok_embd, err) ||
        as_model_matrix(m, AS_TN_POS_EMBD ".weight", d, (uint64_t)c->n_ctx, false, &W->pos_embd, err) ||
        as_model_vector(m, AS_TN_OUTPUT_NORM ".weight", d, false, &W->out_norm_w, err) ||
        as_model_vector(m, AS_TN_OUTPUT_NORM ".bias", d, false, &W->out_norm_b, err) ||
        as_model_matrix(m, AS_TN_OUTPUT ".weight", d, v, true, &W->output, err))
        return AS_ERR;
    if (!W->output.data)
        W->output = W->tok_embd; /* tied */
    for (int l = 0; l < c->n_layer; l++)
        if (load_layer(m, &W->layers[l], l, err))
            return AS_ERR;
    return AS_OK;
}

/* Returns the block's resid_post hook. */
static int block(as_program *p, int l, int pre)
{
    const as_config *c = &p->model->cfg;
    const layer *W = &((const weights *)p->model->weights)->layers[l];
    int H = c->n_head, dh = c->d_head, f = c->d_ff;
    float eps = c->eps;

    int n1 = as_program_add_norm(p, AS_HK_LN1_SCALE, l, pre, W->attn_norm_w, W->attn_norm_b, AS_NORM_LAYER, eps,
                                 "ln1");
    /* ln1 · W_QKV: [pos, d] → three [pos, heads, d_head] slices of the fused matrix. */
    int q = as_program_add_linear(p, AS_HK_Q, l, AS_CLASS_HEADS, n1, &W->wq, W->bq, 2, H, dh,
                                  "q = ln1 · W_Q + b_Q");
    int k = as_program_add_linear(p, AS_HK_K, l, AS_CLASS_ESSENTIAL, n1, &W->wk, W->bk, 2, H, dh,
                                  "k = ln1 · W_K + b_K");
    int v = as_program_add_linear(p, AS_HK_V, l, AS_CLASS_ESSENTIAL, n1, &W->wv, W->bv, 2, H, dh,
                                  "v = ln1 · W_V + b_V");
    as_attn site = {.layer = l, .q = q, .k = k, .v = v, .n_head = H, .n_head_kv = H, .d_qk = dh, .d_v = dh,
                    .scale = 1.0f / sqrtf((float)dh), .mask = AS_MASK_CAUSAL, .bias = -1};
    int z = as_program_add_attention(p, &site, "scores = q · kᵀ / sqrt(d_head), causal");
    int ao = as_program_add_linear(p, AS_HK_ATTN_OUT, l, AS_CLASS_RESID, z, &W->wo, W->bo, 1, c->d_model, 0,
                                   "attn_out = z · W_O + b_O");
    int mid = as_program_add_sum(p, AS_HK_RESID_MID, l, pre, ao, "resid_mid = resid_pre + attn_out");

    int n2 = as_program_add_norm(p, AS_HK_LN2_SCALE, l, mid, W->ffn_norm_w, W->ffn_norm_b, AS_NORM_LAYER, eps,
                                 "ln2");
    int mp = as_program_add_linear(p, AS_HK_MLP_PRE, l, AS_CLASS_MLP, n2, &W->w_up, W->b_up, 1, f, 0,
                                   "mlp pre = ln2 · W_in + b_in");
    int post = as_program_add_hook(p, AS_HK_MLP_POST, l, AS_CLASS_MLP, 1, f, 0);
    as_program_add_op(p, AS_OP_GELU, l, post, mp, -1, "mlp post = gelu(pre)");
    int mo = as_program_add_linear(p, AS_HK_MLP_OUT, l, AS_CLASS_RESID, post, &W->w_down, W->b_down, 1,
                                   c->d_model, 0, "mlp_out = post · W_out + b_out");
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
    int pe = as_program_add_hook(p, AS_HK_POS_EMBED, -1, AS_CLASS_RESID, 1, d, 0);
    as_program_add_op(p, AS_OP_POS_EMBED, -1, pe, -1, -1, "pos_embed = W_pos[position]")->w = W->pos_embd;

    int resid = e;
    for (int l = 0; l < c->n_layer; l++) {
        as_program_scope(p, l);
        int pre = as_program_add_hook(p, AS_HK_RESID_PRE, l, AS_CLASS_RESID, 1, d, 0);
        /* TransformerLens's blocks.0.hook_resid_pre is embed + pos_embed. */
        if (l == 0)
            as_program_add_op(p, AS_OP_ADD, l, pre, e, pe, "resid_pre = embed + pos_embed");
        else
            as_program_add_op(p, AS_OP_COPY, l, pre, resid, -1, "resid_pre = previous resid_post");
        resid = block(p, l, pre);
    }
    as_program_scope(p, -1);
    as_program_add_unembed(p, resid, W->out_norm_w, W->out_norm_b, AS_NORM_LAYER, c->eps, &W->output, NULL, 0);
    (void)err;
    return AS_OK;
}

const as_arch as_arch_gpt2 = {
    .gguf_name = "gpt2",
    .block_prefix = "blk.",
    .read_config = read_config,
    .load = load,
    .build = build,
};
