/* The original encoder-decoder Transformer ("Attention Is All You Need"),
 * as PyTorch's nn.Transformer computes it with norm_first=False:
 * embeddings times sqrt(d_model) plus sinusoidal positions, Post-LN blocks
 * (LayerNorm after each residual add), ReLU MLPs, the final encoder and
 * decoder norms nn.Transformer has, and an output projection. GGUF
 * general.architecture "transformer"; tensors named in llama.cpp's T5
 * style (enc.blk.N.*, dec.blk.N.cross_attn_*), with biases (README's GGUF
 * section lists them). Hooks as TransformerLens's HookedEncoderDecoder
 * names them (encoder.L.*, decoder.L.cross_attn.*, ln3, encoder_final_ln,
 * decoder_final_ln).
 *
 * Two streams: "encoder" (the source, not causal: recomputed whenever it
 * changes) and "decoder" (causal, extended with its KV cache). A decoder
 * block's cross-attention reads keys and values projected from the
 * encoder's output: those hooks belong to the encoder stream, so they are
 * computed once per source and kept while the decoder generates. */
#include "attnscope/model.h"
#include "program_build.h"
#include "tensor_names.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct norm_w {
    const float *w, *b;
} norm_w;

typedef struct attn_w {
    as_weight q, k, v, o;
    const float *bq, *bk, *bv, *bo;
} attn_w;

typedef struct ffn_w {
    as_weight up, down;
    const float *b_up, *b_down;
} ffn_w;

/* nn.TransformerEncoderLayer: norm1 after attention, norm2 after the MLP. */
typedef struct enc_layer {
    attn_w attn;
    norm_w ln1;
    ffn_w ffn;
    norm_w ln2;
} enc_layer;

/* nn.TransformerDecoderLayer: norm1, norm2 (after cross-attention), norm3. */
typedef struct dec_layer {
    attn_w attn;
    norm_w ln1;
    attn_w cross;
    norm_w ln2;
    ffn_w ffn;
    norm_w ln3;
} dec_layer;

typedef struct weights {
    int n_enc, n_dec;           /* blocks of each stack */
    int32_t start;              /* decoder start token, or -1 */
    as_weight src_embd;         /* token_embd: [vocab][d_model] */
    as_weight tgt_embd;         /* dec.token_embd, or token_embd (shared) */
    as_weight output;           /* output.weight, or the target embedding (tied) */
    const float *output_b;      /* or NULL */
    norm_w enc_norm, dec_norm;
    enc_layer *enc;
    dec_layer *dec;
} weights;

#define ARCH "transformer"

static int read_u32_dim(const as_gguf *g, const char *key, int lo, int hi, int *out, as_error *err)
{
    uint32_t v = (uint32_t)*out;
    if (as_gguf_get_u32_opt(g, key, &v, err))
        return AS_ERR;
    if ((int64_t)v < lo || (int64_t)v > hi)
        return as_error_set(err, "%s: %s = %u is out of range (%d..%d)", g->path, key, v, lo, hi);
    *out = (int)v;
    return AS_OK;
}

/* block_count is the encoder's; decoder_block_count (llama.cpp's key for
 * T5) the decoder's, the same when absent. n_layer is the larger, so a
 * layer number names a block of either stack. */
static int read_config(as_config *c, const as_gguf *g, as_error *err)
{
    if (as_config_read_common(c, g, ARCH, "attention.layer_norm_epsilon", err))
        return AS_ERR;
    if (c->n_head_kv != c->n_head)
        return as_error_set(err, "%s: " ARCH ".attention.head_count_kv = %d: the original Transformer's heads each "
                            "have their own keys and values (head_count %d)", g->path, c->n_head_kv, c->n_head);
    if (c->d_model % 2)
        return as_error_set(err, "%s: " ARCH ".embedding_length = %d: sinusoidal positions need an even width",
                            g->path, c->d_model);
    int n_dec = c->n_layer;
    if (read_u32_dim(g, ARCH ".decoder_block_count", 1, 1 << 16, &n_dec, err))
        return AS_ERR;
    if (n_dec > c->n_layer)
        c->n_layer = n_dec;
    return AS_OK;
}

#define N(fmt) (snprintf(n, sizeof n, fmt, prefix, l), n)

static int load_norm(as_model *m, const char *name, norm_w *out, as_error *err)
{
    uint64_t d = (uint64_t)m->cfg.d_model;
    char n[96];
    snprintf(n, sizeof n, "%s.weight", name);
    if (as_model_vector(m, n, d, false, &out->w, err))
        return AS_ERR;
    snprintf(n, sizeof n, "%s.bias", name);
    return as_model_vector(m, n, d, false, &out->b, err);
}

/* {prefix}.blk.L.{what}_q/k/v/o, each with an optional bias. */
static int load_attn(as_model *m, const char *prefix, int l, const char *what, attn_w *a, as_error *err)
{
    uint64_t d = (uint64_t)m->cfg.d_model;
    char n[96];
    as_weight *w[4] = {&a->q, &a->k, &a->v, &a->o};
    const float **b[4] = {&a->bq, &a->bk, &a->bv, &a->bo};
    static const char *const which[4] = {"q", "k", "v", "o"};
    for (int i = 0; i < 4; i++) {
        snprintf(n, sizeof n, AS_TN_ED_ATTN_SITE ".weight", prefix, l, what, which[i]);
        if (as_model_matrix(m, n, d, d, false, w[i], err))
            return AS_ERR;
        snprintf(n, sizeof n, AS_TN_ED_ATTN_SITE ".bias", prefix, l, what, which[i]);
        if (as_model_vector(m, n, d, true, b[i], err))
            return AS_ERR;
    }
    return AS_OK;
}

static int load_ffn(as_model *m, const char *prefix, int l, ffn_w *f, as_error *err)
{
    uint64_t d = (uint64_t)m->cfg.d_model, ff = (uint64_t)m->cfg.d_ff;
    char n[96];
    return as_model_matrix(m, N(AS_TN_ED_FFN_UP ".weight"), d, ff, false, &f->up, err) ||
           as_model_vector(m, N(AS_TN_ED_FFN_UP ".bias"), ff, true, &f->b_up, err) ||
           as_model_matrix(m, N(AS_TN_ED_FFN_DOWN ".weight"), ff, d, false, &f->down, err) ||
           as_model_vector(m, N(AS_TN_ED_FFN_DOWN ".bias"), d, true, &f->b_down, err);
}

static int load_enc_layer(as_model *m, enc_layer *L, int l, as_error *err)
{
    const char *prefix = "enc";
    char n[96];
    return load_attn(m, prefix, l, "attn", &L->attn, err) || load_norm(m, N(AS_TN_ED_ATTN_NORM), &L->ln1, err) ||
           load_ffn(m, prefix, l, &L->ffn, err) || load_norm(m, N(AS_TN_ED_FFN_NORM), &L->ln2, err);
}

static int load_dec_layer(as_model *m, dec_layer *L, int l, as_error *err)
{
    const char *prefix = "dec";
    char n[96];
    return load_attn(m, prefix, l, "attn", &L->attn, err) || load_norm(m, N(AS_TN_ED_ATTN_NORM), &L->ln1, err) ||
           load_attn(m, prefix, l, "cross_attn", &L->cross, err) ||
           load_norm(m, N(AS_TN_ED_CROSS_ATTN_NORM), &L->ln2, err) || load_ffn(m, prefix, l, &L->ffn, err) ||
           load_norm(m, N(AS_TN_ED_FFN_NORM), &L->ln3, err);
}

#undef N

/* The decoder's first token: decoder_start_token_id (llama.cpp's key for
 * T5), else the vocabulary's BOS, else none (a prompt must give it). */
static int read_start(as_model *m, weights *W, as_error *err)
{
    uint32_t v = UINT32_MAX;
    if (as_gguf_get_u32_opt(m->gguf, ARCH ".decoder_start_token_id", &v, err))
        return AS_ERR;
    if (v == UINT32_MAX) {
        W->start = m->tok ? as_tokenizer_bos(m->tok) : -1;
        return AS_OK;
    }
    if (v >= (uint32_t)m->cfg.n_vocab)
        return as_error_set(err, "%s: " ARCH ".decoder_start_token_id = %u is outside the vocabulary (0..%d)",
                            m->path, v, m->cfg.n_vocab - 1);
    W->start = (int32_t)v;
    return AS_OK;
}

static int load(as_model *m, as_error *err)
{
    const as_config *c = &m->cfg;
    uint64_t d = (uint64_t)c->d_model, V = (uint64_t)c->n_vocab;
    int n_enc = 0, n_dec = 0;
    if (as_model_check_vocab(m, AS_TN_TOKEN_EMBD ".weight", err) ||
        read_u32_dim(m->gguf, ARCH ".block_count", 1, 1 << 16, &n_enc, err))
        return AS_ERR;
    n_dec = n_enc;
    if (read_u32_dim(m->gguf, ARCH ".decoder_block_count", 1, 1 << 16, &n_dec, err))
        return AS_ERR;
    weights *W = calloc(1, sizeof *W + (size_t)n_enc * sizeof *W->enc + (size_t)n_dec * sizeof *W->dec);
    if (!W)
        return as_error_set(err, "%s: out of memory", m->path);
    m->weights = W;
    W->n_enc = n_enc, W->n_dec = n_dec;
    W->enc = (enc_layer *)(W + 1);
    W->dec = (dec_layer *)(W->enc + n_enc);
    if (as_model_matrix(m, AS_TN_TOKEN_EMBD ".weight", d, V, false, &W->src_embd, err) ||
        as_model_matrix(m, AS_TN_DEC_TOKEN_EMBD ".weight", d, V, true, &W->tgt_embd, err) ||
        as_model_matrix(m, AS_TN_OUTPUT ".weight", d, V, true, &W->output, err) ||
        as_model_vector(m, AS_TN_OUTPUT ".bias", V, true, &W->output_b, err) ||
        load_norm(m, AS_TN_ENC_OUTPUT_NORM, &W->enc_norm, err) ||
        load_norm(m, AS_TN_DEC_OUTPUT_NORM, &W->dec_norm, err) || read_start(m, W, err))
        return AS_ERR;
    if (!W->tgt_embd.data)
        W->tgt_embd = W->src_embd; /* one embedding for both languages */
    if (!W->output.data)
        W->output = W->tgt_embd; /* tied to the target embedding */
    for (int l = 0; l < n_enc; l++)
        if (load_enc_layer(m, &W->enc[l], l, err))
            return AS_ERR;
    for (int l = 0; l < n_dec; l++)
        if (load_dec_layer(m, &W->dec[l], l, err))
            return AS_ERR;
    return AS_OK;
}

/* ---------------------------------------------------------------- the program */

/* embed = W_E[token] · sqrt(d_model) and pos_embed = the paper's
 * sinusoids (PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos),
 * named under the stack ("encoder.hook_embed"); block 0's resid_pre sums
 * them. The sinusoids are computed for the positions of each pass, so no
 * table of the context's size is held (a small file may name a huge one). */
static void embeddings(as_program *p, const char *stack, const as_weight *emb, int *e, int *pe)
{
    int d = p->model->cfg.d_model;
    as_program_scope_name(p, stack);
    *e = as_program_add_hook(p, AS_HK_EMBED, -1, AS_CLASS_RESID, 1, d, 0);
    as_op *op = as_program_add_op(p, AS_OP_EMBED, -1, *e, -1, -1, "embed = W_E[token] · sqrt(d_model)");
    op->w = *emb;
    op->scale = sqrtf((float)d);
    *pe = as_program_add_hook(p, AS_HK_POS_EMBED, -1, AS_CLASS_RESID, 1, d, 0);
    op = as_program_add_op(p, AS_OP_SIN_POS, -1, *pe, -1, -1, "pos_embed = sinusoid(position)");
    op->scale = 10000.0f;
    op->n_out = d;
}

/* Block l's resid_pre: embed + pos_embed for block 0, else a copy of the
 * previous block's last norm. */
static int resid_pre(as_program *p, const char *stack, int l, int prev, int e, int pe)
{
    char scope[32];
    snprintf(scope, sizeof scope, "%s.%d", stack, l);
    as_program_scope_name(p, scope);
    int pre = as_program_add_hook(p, AS_HK_RESID_PRE, l, AS_CLASS_RESID, 1, p->model->cfg.d_model, 0);
    if (l == 0)
        as_program_add_op(p, AS_OP_ADD, l, pre, e, pe, "resid_pre = embed + pos_embed");
    else
        as_program_add_op(p, AS_OP_COPY, l, pre, prev, -1, "resid_pre = previous block's last norm");
    return pre;
}

/* q from xq's stream; k, v from xkv's (the encoder's output for
 * cross-attention: their hooks are the encoder stream's). Returns
 * the attention's output after W_O. */
static int attention(as_program *p, int l, const attn_w *W, int xq, int xkv, as_mask mask, as_hook_kind out_kind,
                     int q_stream, int kv_stream)
{
    const as_config *c = &p->model->cfg;
    int H = c->n_head, dh = c->d_head, d = c->d_model;
    bool cross = p->cur_site == AS_SITE_CROSS_ATTN;
    p->cur_stream = q_stream;
    int q = as_program_add_linear(p, AS_HK_Q, l, AS_CLASS_HEADS, xq, &W->q, W->bq, 2, H, dh,
                                  cross ? "q = ln1 · W_Q + b_Q" : "q = resid_pre · W_Q + b_Q");
    p->cur_stream = kv_stream;
    /* the keys and values the site reads back are always kept */
    int k = as_program_add_linear(p, AS_HK_K, l, AS_CLASS_ESSENTIAL, xkv, &W->k, W->bk, 2, H, dh,
                                  cross ? "k = encoder output · W_K + b_K" : "k = resid_pre · W_K + b_K");
    int v = as_program_add_linear(p, AS_HK_V, l, AS_CLASS_ESSENTIAL, xkv, &W->v, W->bv, 2, H, dh,
                                  cross ? "v = encoder output · W_V + b_V" : "v = resid_pre · W_V + b_V");
    p->cur_stream = q_stream;
    as_attn site = {.layer = l, .q = q, .k = k, .v = v, .n_head = H, .n_head_kv = H, .d_qk = dh, .d_v = dh,
                    .scale = 1.0f / sqrtf((float)dh), .mask = mask, .bias = -1};
    int z = as_program_add_attention(p, &site, cross ? "scores = q · kᵀ / sqrt(d_head), every source position"
                                     : mask == AS_MASK_CAUSAL ? "scores = q · kᵀ / sqrt(d_head), causal"
                                                              : "scores = q · kᵀ / sqrt(d_head), no mask");
    p->cur_site = AS_SITE_NONE;
    return as_program_add_linear(p, out_kind, l, AS_CLASS_RESID, z, &W->o, W->bo, 1, d, 0,
                                 cross ? "cross_attn_out = z · W_O + b_O" : "attn_out = z · W_O + b_O");
}

/* ReLU MLP over x; returns mlp_out. */
static int mlp(as_program *p, int l, const ffn_w *W, int x, const char *in_name)
{
    const as_config *c = &p->model->cfg;
    char text[64];
    snprintf(text, sizeof text, "mlp pre = %s · W_in + b_in", in_name);
    int pre = as_program_add_linear(p, AS_HK_MLP_PRE, l, AS_CLASS_MLP, x, &W->up, W->b_up, 1, c->d_ff, 0, text);
    int post = as_program_add_hook(p, AS_HK_MLP_POST, l, AS_CLASS_MLP, 1, c->d_ff, 0);
    as_program_add_op(p, AS_OP_RELU, l, post, pre, -1, "mlp post = relu(pre)");
    return as_program_add_linear(p, AS_HK_MLP_OUT, l, AS_CLASS_RESID, post, &W->down, W->b_down, 1, c->d_model, 0,
                                 "mlp_out = post · W_out + b_out");
}

/* x = ln1(x + attn(x)); x = ln2(x + mlp(x)). Returns ln2's output. */
static int enc_block(as_program *p, int l, int pre, int enc)
{
    const enc_layer *W = &((const weights *)p->model->weights)->enc[l];
    float eps = p->model->cfg.eps;
    p->cur_site = AS_SITE_SELF_ATTN;
    int ao = attention(p, l, &W->attn, pre, pre, AS_MASK_NONE, AS_HK_ATTN_OUT, enc, enc);
    int mid = as_program_add_sum(p, AS_HK_RESID_MID, l, pre, ao, "resid_mid = resid_pre + attn_out");
    int n1 = as_program_add_norm(p, AS_HK_LN1_SCALE, l, mid, W->ln1.w, W->ln1.b, AS_NORM_LAYER, eps, "ln1");
    int mo = mlp(p, l, &W->ffn, n1, "ln1");
    int post = as_program_add_sum(p, AS_HK_RESID_POST, l, n1, mo, "resid_post = ln1 + mlp_out");
    return as_program_add_norm(p, AS_HK_LN2_SCALE, l, post, W->ln2.w, W->ln2.b, AS_NORM_LAYER, eps, "ln2");
}

/* x = ln1(x + causal self-attention(x)); x = ln2(x + cross-attention(x,
 * encoder output)); x = ln3(x + mlp(x)). Returns ln3's output. */
static int dec_block(as_program *p, int l, int pre, int memory, int enc, int dec)
{
    const dec_layer *W = &((const weights *)p->model->weights)->dec[l];
    float eps = p->model->cfg.eps;
    p->cur_site = AS_SITE_SELF_ATTN;
    int ao = attention(p, l, &W->attn, pre, pre, AS_MASK_CAUSAL, AS_HK_ATTN_OUT, dec, dec);
    int mid = as_program_add_sum(p, AS_HK_RESID_MID, l, pre, ao, "resid_mid = resid_pre + attn_out");
    int n1 = as_program_add_norm(p, AS_HK_LN1_SCALE, l, mid, W->ln1.w, W->ln1.b, AS_NORM_LAYER, eps, "ln1");
    p->cur_site = AS_SITE_CROSS_ATTN;
    int co = attention(p, l, &W->cross, n1, memory, AS_MASK_NONE, AS_HK_CROSS_ATTN_OUT, dec, enc);
    int midc = as_program_add_sum(p, AS_HK_RESID_MID_CROSS, l, n1, co, "resid_mid_cross = ln1 + cross_attn_out");
    int n2 = as_program_add_norm(p, AS_HK_LN2_SCALE, l, midc, W->ln2.w, W->ln2.b, AS_NORM_LAYER, eps, "ln2");
    int mo = mlp(p, l, &W->ffn, n2, "ln2");
    int post = as_program_add_sum(p, AS_HK_RESID_POST, l, n2, mo, "resid_post = ln2 + mlp_out");
    return as_program_add_norm(p, AS_HK_LN3_SCALE, l, post, W->ln3.w, W->ln3.b, AS_NORM_LAYER, eps, "ln3");
}

static int build(as_program *p, as_error *err)
{
    const as_config *c = &p->model->cfg;
    const weights *W = p->model->weights;
    int enc = as_program_add_stream(p, "encoder", AS_INPUT_TOKENS, c->n_ctx, false);
    int dec = as_program_add_stream(p, "decoder", AS_INPUT_TOKENS, c->n_ctx, true);
    p->source_stream = enc;
    p->start_token = W->start;

    int e, pe, x = -1;
    p->cur_stream = enc;
    embeddings(p, "encoder", &W->src_embd, &e, &pe);
    for (int l = 0; l < W->n_enc; l++)
        x = enc_block(p, l, resid_pre(p, "encoder", l, x, e, pe), enc);
    as_program_scope_name(p, NULL);
    int memory = as_program_add_norm(p, AS_HK_ENC_LNF_SCALE, -1, x, W->enc_norm.w, W->enc_norm.b, AS_NORM_LAYER,
                                     c->eps, "encoder_final_ln");

    p->cur_stream = dec;
    embeddings(p, "decoder", &W->tgt_embd, &e, &pe);
    x = -1;
    for (int l = 0; l < W->n_dec; l++)
        x = dec_block(p, l, resid_pre(p, "decoder", l, x, e, pe), memory, enc, dec);
    as_program_scope_name(p, NULL);
    as_program_add_unembed(p, x, W->dec_norm.w, W->dec_norm.b, AS_NORM_LAYER, c->eps, &W->output, W->output_b, 0);
    as_program_rename(p, p->ops[p->final_norm].in[1], "decoder_final_ln.hook_scale");
    as_program_rename(p, p->ops[p->final_norm].out, "decoder_final_ln.hook_normalized");
    p->no_lens = "this encoder-decoder normalizes after each residual add (Post-LN) and has two stacks: the lens "
                 "reads one residual stream through the final norm";
    p->no_dla = "this encoder-decoder normalizes after each residual add (Post-LN), so its residual stream is no "
                "sum of the components' outputs";
    (void)err;
    return AS_OK;
}

const as_arch as_arch_transformer = {
    .gguf_name = ARCH,
    .block_prefix = "enc.blk.",
    .read_config = read_config,
    .load = load,
    .build = build,
};
