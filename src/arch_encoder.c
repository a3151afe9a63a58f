/* arch_encoder: the tensors and the Post-LN block the BERT family shares
 * (see arch_encoder.h). A block reads top to bottom as llama.cpp's
 * src/models/bert.cpp computes it and as TransformerLens's BertBlock hooks
 * it: attention over every position, add, ln1; MLP, add, ln2. */
#include "arch_encoder.h"
#include "tensor_names.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N(name) (snprintf(n, sizeof n, name, l), n)

int as_enc_read_config(as_config *c, const as_gguf *g, const char *arch, as_error *err)
{
    char key[128];
    bool causal = false;
    if (as_config_read_common(c, g, arch, "attention.layer_norm_epsilon", err))
        return AS_ERR;
    snprintf(key, sizeof key, "%s.attention.causal", arch);
    if (as_gguf_get_bool_opt(g, key, &causal, err))
        return AS_ERR;
    if (causal)
        return as_error_set(err, "%s: %s is true, but attnscope runs %s as a bidirectional encoder "
                            "(llama.cpp's bert graph has no causal mask either)", g->path, key, arch);
    return AS_OK;
}

/* q, k and v: fused (attn_qkv: q's rows, then k's, then v's) or
 * separate, each with its bias when the file has one. */
static int load_qkv(as_model *m, as_enc_layer *L, int l, as_error *err)
{
    int d = m->cfg.d_model;
    uint64_t D = (uint64_t)d;
    char n[96];
    as_weight qkv;
    const float *b = NULL;
    if (as_model_matrix(m, N(AS_TN_ATTN_QKV ".weight"), D, 3 * D, true, &qkv, err))
        return AS_ERR;
    if (qkv.data) {
        L->wq = as_weight_rows(&qkv, 0, d);
        L->wk = as_weight_rows(&qkv, d, d);
        L->wv = as_weight_rows(&qkv, 2 * d, d);
        if (as_model_vector(m, N(AS_TN_ATTN_QKV ".bias"), 3 * D, true, &b, err))
            return AS_ERR;
        if (b)
            L->bq = b, L->bk = b + d, L->bv = b + 2 * d;
        return AS_OK;
    }
    return as_model_matrix(m, N(AS_TN_ATTN_Q ".weight"), D, D, false, &L->wq, err) ||
           as_model_matrix(m, N(AS_TN_ATTN_K ".weight"), D, D, false, &L->wk, err) ||
           as_model_matrix(m, N(AS_TN_ATTN_V ".weight"), D, D, false, &L->wv, err) ||
           as_model_vector(m, N(AS_TN_ATTN_Q ".bias"), D, true, &L->bq, err) ||
           as_model_vector(m, N(AS_TN_ATTN_K ".bias"), D, true, &L->bk, err) ||
           as_model_vector(m, N(AS_TN_ATTN_V ".bias"), D, true, &L->bv, err);
}

static int load_layer(as_model *m, as_enc_layer *L, int l, unsigned t, as_error *err)
{
    uint64_t d = (uint64_t)m->cfg.d_model, f = (uint64_t)m->cfg.d_ff;
    char n[96];
    if (load_qkv(m, L, l, err) || as_model_matrix(m, N(AS_TN_ATTN_OUT ".weight"), d, d, false, &L->wo, err) ||
        as_model_vector(m, N(AS_TN_ATTN_OUT ".bias"), d, true, &L->bo, err) ||
        as_model_vector(m, N(AS_TN_ATTN_OUT_NORM ".weight"), d, false, &L->attn_norm_w, err) ||
        as_model_vector(m, N(AS_TN_ATTN_OUT_NORM ".bias"), d, false, &L->attn_norm_b, err) ||
        as_model_matrix(m, N(AS_TN_FFN_UP ".weight"), d, f, false, &L->w_up, err) ||
        as_model_matrix(m, N(AS_TN_FFN_DOWN ".weight"), f, d, false, &L->w_down, err) ||
        as_model_vector(m, N(AS_TN_LAYER_OUT_NORM ".weight"), d, false, &L->out_norm_w, err) ||
        as_model_vector(m, N(AS_TN_LAYER_OUT_NORM ".bias"), d, false, &L->out_norm_b, err))
        return AS_ERR;
    /* llama.cpp's gated (nomic-bert) MLP takes no biases, even where a file has them */
    if (t & AS_ENC_GATED)
        return as_model_matrix(m, N(AS_TN_FFN_GATE ".weight"), d, f, false, &L->w_gate, err);
    return as_model_vector(m, N(AS_TN_FFN_UP ".bias"), f, true, &L->b_up, err) ||
           as_model_vector(m, N(AS_TN_FFN_DOWN ".bias"), d, true, &L->b_down, err);
}

#undef N

/* The masked-LM head, when the file has one (mlm.dense.weight): all of
 * it then, but the output matrix, tied to the token embeddings unless
 * mlm.output.weight is there. */
static int load_mlm(as_model *m, as_enc_weights *W, as_error *err)
{
    uint64_t d = (uint64_t)m->cfg.d_model, v = (uint64_t)m->cfg.n_vocab;
    as_enc_mlm *h = &W->mlm;
    if (as_model_matrix(m, AS_TN_MLM_DENSE ".weight", d, d, true, &h->dense, err))
        return AS_ERR;
    if (!h->dense.data)
        return AS_OK;
    W->has_mlm = true;
    if (as_model_vector(m, AS_TN_MLM_DENSE ".bias", d, false, &h->dense_b, err) ||
        as_model_vector(m, AS_TN_MLM_NORM ".weight", d, false, &h->norm_w, err) ||
        as_model_vector(m, AS_TN_MLM_NORM ".bias", d, false, &h->norm_b, err) ||
        as_model_matrix(m, AS_TN_MLM_OUTPUT ".weight", d, v, true, &h->out, err) ||
        as_model_vector(m, AS_TN_MLM_OUTPUT ".bias", v, false, &h->out_b, err))
        return AS_ERR;
    if (!h->out.data)
        h->out = W->tok_embd; /* tied */
    return AS_OK;
}

/* token_types.weight has tokenizer.ggml.token_type_count rows (llama.cpp
 * reads that key; without it, the tensor's own rows). */
static int load_types(as_model *m, as_enc_weights *W, as_error *err)
{
    const as_gguf_tensor *t = as_gguf_tensor_find(m->gguf, AS_TN_TOKEN_TYPES ".weight");
    uint32_t types = t ? (uint32_t)t->ne[1] : 0;
    if (as_gguf_get_u32_opt(m->gguf, "tokenizer.ggml.token_type_count", &types, err))
        return AS_ERR;
    if (!t)
        return AS_OK;
    if (types == 0 || types > 1024)
        return as_error_set(err, "%s: tokenizer.ggml.token_type_count = %u: expected 1..1024 token types",
                            m->path, types);
    return as_model_matrix(m, AS_TN_TOKEN_TYPES ".weight", (uint64_t)m->cfg.d_model, types, false, &W->type_embd, err);
}

static int read_pooling(as_model *m, as_enc_weights *W, as_error *err)
{
    char key[128];
    uint32_t v = AS_POOL_NONE;
    snprintf(key, sizeof key, "%s.pooling_type", m->arch->gguf_name);
    if (as_gguf_get_u32_opt(m->gguf, key, &v, err))
        return AS_ERR;
    if (v > AS_POOL_RANK)
        return as_error_set(err, "%s: %s = %u: expected 0 (none), 1 (mean), 2 (cls), 3 (last) or 4 (rank)",
                            m->path, key, v);
    W->pooling = (as_pooling)v;
    /* ours (a sentence-transformers directory's 1_Pooling and 2_Normalize): llama.cpp pools none of these */
    const char *how;
    snprintf(key, sizeof key, "%s.attnscope.pooling", m->arch->gguf_name);
    if (as_gguf_find(m->gguf, key)) {
        if (as_gguf_get_str(m->gguf, key, &how, err))
            return AS_ERR;
        if (!strcmp(how, "max"))
            W->pooling = AS_POOL_MAX;
        else if (!strcmp(how, "mean_sqrt_len"))
            W->pooling = AS_POOL_MEAN_SQRT_LEN;
        else
            return as_error_set(err, "%s: %s = '%.30s': expected 'max' or 'mean_sqrt_len'", m->path, key, how);
    }
    snprintf(key, sizeof key, "%s.attnscope.normalize", m->arch->gguf_name);
    return as_gguf_get_bool_opt(m->gguf, key, &W->pool_l2, err);
}

/* Our key, not llama.cpp's: which GELU the model was trained with (a
 * Hugging Face directory's hidden_act). llama.cpp ignores it and runs tanh. */
static int read_gelu(as_model *m, as_enc_weights *W, as_error *err)
{
    char key[128];
    const char *v;
    snprintf(key, sizeof key, "%s.attnscope.gelu", m->arch->gguf_name);
    if (!as_gguf_find(m->gguf, key))
        return AS_OK;
    if (as_gguf_get_str(m->gguf, key, &v, err))
        return AS_ERR;
    if (!strcmp(v, "erf"))
        W->facts.gelu = AS_GELU_ERF;
    else if (!strcmp(v, "tanh"))
        W->facts.gelu = AS_GELU_TANH;
    else
        return as_error_set(err, "%s: %s = '%.30s': expected 'tanh' or 'erf'", m->path, key, v);
    return AS_OK;
}

int as_enc_load(as_model *m, const as_enc_facts *facts, as_error *err)
{
    const as_config *c = &m->cfg;
    uint64_t d = (uint64_t)c->d_model, v = (uint64_t)c->n_vocab;
    if (as_model_check_vocab(m, AS_TN_TOKEN_EMBD ".weight", err))
        return AS_ERR;
    as_enc_weights *W = calloc(1, sizeof *W + (size_t)c->n_layer * sizeof W->layers[0]);
    if (!W)
        return as_error_set(err, "%s: out of memory", m->path);
    m->weights = W;
    W->facts = *facts;
    if (as_model_matrix(m, AS_TN_TOKEN_EMBD ".weight", d, v, false, &W->tok_embd, err) ||
        (!(facts->tensors & AS_ENC_ROPE) &&
         as_model_matrix(m, AS_TN_POS_EMBD ".weight", d, (uint64_t)c->n_ctx, false, &W->pos_embd, err)) ||
        load_types(m, W, err) || as_model_vector(m, AS_TN_TOKEN_EMBD_NORM ".weight", d, false, &W->embd_norm_w, err) ||
        as_model_vector(m, AS_TN_TOKEN_EMBD_NORM ".bias", d, false, &W->embd_norm_b, err) || read_pooling(m, W, err) ||
        read_gelu(m, W, err))
        return AS_ERR;
    for (int l = 0; l < c->n_layer; l++)
        if (load_layer(m, &W->layers[l], l, facts->tensors, err))
            return AS_ERR;
    return load_mlm(m, W, err);
}

/* ---------------------------------------------------------------- the program */

/* Token, position and token-type embeddings, summed and normalized
 * (TransformerLens's BertEmbed); returns embed.ln.hook_normalized. */
static int embeddings(as_program *p)
{
    const as_config *c = &p->model->cfg;
    const as_enc_weights *W = p->model->weights;
    int d = c->d_model, pe = -1, te = -1;
    as_program_scope_name(p, "embed");
    int e = as_program_add_hook(p, AS_HK_EMBED, -1, AS_CLASS_RESID, 1, d, 0);
    as_program_add_op(p, AS_OP_EMBED, -1, e, -1, -1, "embed = W_E[token]")->w = W->tok_embd;
    if (W->pos_embd.data) {
        pe = as_program_add_hook(p, AS_HK_POS_EMBED, -1, AS_CLASS_RESID, 1, d, 0);
        as_program_add_op(p, AS_OP_POS_EMBED, -1, pe, -1, -1, "pos_embed = W_pos[position]")->w = W->pos_embd;
    }
    if (W->type_embd.data) {
        te = as_program_add_hook(p, AS_HK_TYPE_EMBED, -1, AS_CLASS_RESID, 1, d, 0);
        as_program_add_op(p, AS_OP_TYPE_EMBED, -1, te, -1, -1, "token_type_embed = W_type[token type]")->w =
            W->type_embd;
    }
    int sum = e;
    if (pe >= 0 || te >= 0)
        sum = as_program_add_sum3(p, AS_HK_EMBED_SUM, -1, e, pe >= 0 ? pe : te, pe >= 0 ? te : -1,
                                  pe >= 0 && te >= 0 ? "sum = embed + pos_embed + token_type_embed"
                                  : pe >= 0          ? "sum = embed + pos_embed"
                                                     : "sum = embed + token_type_embed");
    return as_program_add_norm(p, AS_HK_EMBED_LN_SCALE, -1, sum, W->embd_norm_w, W->embd_norm_b, AS_NORM_LAYER,
                               c->eps, "embed.ln");
}

/* Every position attends to every position (no mask). Returns z. */
static int attention(as_program *p, int l, int x)
{
    const as_config *c = &p->model->cfg;
    const as_enc_weights *EW = p->model->weights;
    const as_enc_layer *W = &EW->layers[l];
    int H = c->n_head, dh = c->d_head;
    int q = as_program_add_linear(p, AS_HK_Q, l, AS_CLASS_HEADS, x, &W->wq, W->bq, 2, H, dh,
                                  W->bq ? "q = resid_pre · W_Q + b_Q" : "q = resid_pre · W_Q");
    bool rope = EW->facts.tensors & AS_ENC_ROPE;
    /* the keys the site reads back are always kept (the capture's KV cache) */
    int k = as_program_add_linear(p, AS_HK_K, l, rope ? AS_CLASS_HEADS : AS_CLASS_ESSENTIAL, x, &W->wk, W->bk, 2, H,
                                  dh, W->bk ? "k = resid_pre · W_K + b_K" : "k = resid_pre · W_K");
    int v = as_program_add_linear(p, AS_HK_V, l, AS_CLASS_ESSENTIAL, x, &W->wv, W->bv, 2, H, dh,
                                  W->bv ? "v = resid_pre · W_V + b_V" : "v = resid_pre · W_V");
    if (rope) {
        q = as_program_add_rope(p, AS_HK_ROT_Q, l, AS_CLASS_HEADS, q, &EW->facts.rope, "rot_q = rotate(q, position)");
        k = as_program_add_rope(p, AS_HK_ROT_K, l, AS_CLASS_ESSENTIAL, k, &EW->facts.rope,
                                "rot_k = rotate(k, position)");
    }
    as_attn site = {.layer = l, .q = q, .k = k, .v = v, .n_head = H, .n_head_kv = H, .d_qk = dh, .d_v = dh,
                    .scale = 1.0f / sqrtf((float)dh), .mask = AS_MASK_NONE, .bias = -1};
    return as_program_add_attention(p, &site, rope ? "scores = rot_q · rot_kᵀ / sqrt(d_head), no mask"
                                                   : "scores = q · kᵀ / sqrt(d_head), no mask");
}

/* GELU(up), or SwiGLU(gate, up) in the gated variant; returns mlp post. */
static int mlp(as_program *p, int l, int x)
{
    const as_config *c = &p->model->cfg;
    const as_enc_layer *W = &((const as_enc_weights *)p->model->weights)->layers[l];
    int f = c->d_ff, post;
    if (W->w_gate.data) {
        int gate = as_program_add_linear(p, AS_HK_MLP_PRE, l, AS_CLASS_MLP, x, &W->w_gate, NULL, 1, f, 0,
                                         "mlp pre = ln1 · W_gate");
        int up = as_program_add_linear(p, AS_HK_MLP_PRE_LINEAR, l, AS_CLASS_MLP, x, &W->w_up, NULL, 1, f, 0,
                                       "mlp pre_linear = ln1 · W_in");
        post = as_program_add_hook(p, AS_HK_MLP_POST, l, AS_CLASS_MLP, 1, f, 0);
        as_program_add_op(p, AS_OP_SWIGLU, l, post, gate, up, "mlp post = silu(pre) * pre_linear");
        return post;
    }
    int pre = as_program_add_linear(p, AS_HK_MLP_PRE, l, AS_CLASS_MLP, x, &W->w_up, W->b_up, 1, f, 0,
                                    W->b_up ? "mlp pre = ln1 · W_in + b_in" : "mlp pre = ln1 · W_in");
    post = as_program_add_hook(p, AS_HK_MLP_POST, l, AS_CLASS_MLP, 1, f, 0);
    as_gelu g = ((const as_enc_weights *)p->model->weights)->facts.gelu;
    as_program_add_op(p, AS_OP_GELU, l, post, pre, -1,
                      g == AS_GELU_ERF ? "mlp post = gelu_erf(pre)" : "mlp post = gelu(pre)")->gelu = g;
    return post;
}

/* Post-LN: the norms come after each residual add, and the normalized
 * sums are the stream the next sublayer reads. Returns ln2's output. */
static int block(as_program *p, int l, int pre)
{
    const as_config *c = &p->model->cfg;
    const as_enc_layer *W = &((const as_enc_weights *)p->model->weights)->layers[l];
    int d = c->d_model;
    int z = attention(p, l, pre);
    int ao = as_program_add_linear(p, AS_HK_ATTN_OUT, l, AS_CLASS_RESID, z, &W->wo, W->bo, 1, d, 0,
                                   W->bo ? "attn_out = z · W_O + b_O" : "attn_out = z · W_O");
    int mid = as_program_add_sum(p, AS_HK_RESID_MID, l, pre, ao, "resid_mid = resid_pre + attn_out");
    int n1 = as_program_add_norm(p, AS_HK_LN1_SCALE, l, mid, W->attn_norm_w, W->attn_norm_b, AS_NORM_LAYER, c->eps,
                                 "ln1");
    int post = mlp(p, l, n1);
    int mo = as_program_add_linear(p, AS_HK_MLP_OUT, l, AS_CLASS_RESID, post, &W->w_down, W->b_down, 1, d, 0,
                                   W->b_down ? "mlp_out = post · W_out + b_out" : "mlp_out = post · W_out");
    int rp = as_program_add_sum(p, AS_HK_RESID_POST, l, n1, mo, "resid_post = ln1 + mlp_out");
    return as_program_add_norm(p, AS_HK_LN2_SCALE, l, rp, W->out_norm_w, W->out_norm_b, AS_NORM_LAYER, c->eps, "ln2");
}

/* The masked-LM head: dense, GELU, LayerNorm (the program's final norm),
 * then the unembedding with its bias. */
static void mlm_head(as_program *p, int x)
{
    const as_config *c = &p->model->cfg;
    const as_enc_mlm *h = &((const as_enc_weights *)p->model->weights)->mlm;
    int d = c->d_model;
    as_program_scope_name(p, "mlm_head");
    int pre = as_program_add_linear(p, AS_HK_HEAD_PRE, -1, AS_CLASS_RESID, x, &h->dense, h->dense_b, 1, d, 0,
                                    "mlm pre = hidden · W_dense + b_dense");
    /* the logit lens reads each layer's output through the whole head */
    p->head_first = p->n_ops - 1;
    p->lens_kind = AS_HK_LN2_NORMALIZED;
    int post = as_program_add_hook(p, AS_HK_HEAD_POST, -1, AS_CLASS_RESID, 1, d, 0);
    as_gelu g = ((const as_enc_weights *)p->model->weights)->facts.gelu;
    as_program_add_op(p, AS_OP_GELU, -1, post, pre, -1,
                      g == AS_GELU_ERF ? "mlm post = gelu_erf(pre)" : "mlm post = gelu(pre)")->gelu = g;
    as_program_scope_name(p, NULL);
    as_program_add_unembed(p, post, h->norm_w, h->norm_b, AS_NORM_LAYER, c->eps, &h->out, h->out_b, 0);
    /* TransformerLens's name for the head's norm; its kind stays the final norm's */
    as_program_rename(p, p->ops[p->final_norm].in[1], "mlm_head.ln.hook_scale");
    as_program_rename(p, p->ops[p->final_norm].out, "mlm_head.ln.hook_normalized");
    /* Every position's predictions are read (fill), not only the last one's. */
    p->ops[p->unembed].last_row_only = false;
}

int as_enc_build(as_program *p, as_error *err)
{
    const as_config *c = &p->model->cfg;
    const as_enc_weights *W = p->model->weights;
    int d = c->d_model;
    as_program_add_stream(p, "tokens", AS_INPUT_TOKENS, c->n_ctx, false);
    int resid = embeddings(p);
    for (int l = 0; l < c->n_layer; l++) {
        as_program_scope(p, l);
        int pre = as_program_add_hook(p, AS_HK_RESID_PRE, l, AS_CLASS_RESID, 1, d, 0);
        as_program_add_op(p, AS_OP_COPY, l, pre, resid, -1,
                          l ? "resid_pre = previous ln2" : "resid_pre = embed.ln");
        resid = block(p, l, pre);
    }
    as_program_scope(p, -1);
    if (W->pooling == AS_POOL_MEAN || W->pooling == AS_POOL_CLS || W->pooling == AS_POOL_LAST ||
        W->pooling == AS_POOL_MAX || W->pooling == AS_POOL_MEAN_SQRT_LEN)
        as_program_add_pool_l2(p, resid, W->pooling, W->pool_l2);
    if (W->has_mlm)
        mlm_head(p, resid);
    p->no_dla = "this encoder normalizes after each residual add (Post-LN), so its residual stream is no sum of "
                "the components' outputs, and its output head is dense, GELU and LayerNorm before the unembedding";
    (void)err;
    return AS_OK;
}
