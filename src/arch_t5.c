/* arch_t5: T5 as llama.cpp reads it (src/models/t5-enc.cpp, t5-dec.cpp;
 * llama-model.cpp's tensors and keys): arch `t5`, an encoder-decoder, and
 * `t5encoder`, its encoder alone (an embeddings model). On the machinery
 * of the original Transformer (two streams, cross-attention, source and
 * start token), with what T5 does otherwise:
 *
 *   - pre-norm RMSNorm (T5's: no mean, no bias) before each sublayer, a
 *     final RMSNorm per stack (enc.output_norm, dec.output_norm);
 *   - no position embeddings and no embedding scale: a relative position
 *     bias added to the scores (attn.hook_position_bias), its table
 *     [bucket][head] each layer's attn_rel_b or else the first layer's
 *     (the files carry only the first's), bidirectional buckets in the
 *     encoder, causal ones in the decoder; cross-attention has none;
 *   - scores not scaled (no 1/sqrt(d_head));
 *   - gated GELU (tanh form, ffn_gate present: Flan-T5) or ReLU (T5) MLP,
 *     no biases;
 *   - the unembedding is output.weight, else token_embd.weight as it is:
 *     llama.cpp does not scale the tied case by d_model^-0.5 as Hugging
 *     Face's T5 does, and attnscope follows llama.cpp (the same argmax,
 *     logits d_model^0.5 times larger).
 *
 * Hooks as TransformerLens's HookedEncoderDecoder (T5Block): encoder.L.*,
 * decoder.L.attn.*, decoder.L.cross_attn.*, hook_resid_mid_cross, ln1 before
 * self-attention, ln2 before cross-attention (the encoder: before the
 * MLP), ln3 before the decoder's MLP, encoder_final_ln, decoder_final_ln. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/arch.h"
#include "attnscope/model.h"
#include "program_build.h"
#include "attnscope/tokenizer.h"
#include "tensor_names.h"

/* llama.cpp's: "TODO move to hparams if a T5 variant appears that uses a
 * different value" (every T5 config has relative_attention_max_distance 128). */
#define T5_MAX_DISTANCE 128

typedef struct attn_w {
    as_weight q, k, v, o;
} attn_w;

typedef struct ffn_w {
    as_weight gate, up, down; /* gate.data NULL: ReLU */
} ffn_w;

typedef struct layer_w {
    const float *attn_norm, *cross_norm, *ffn_norm;
    as_weight rel;      /* attn_rel_b [buckets][heads], or data NULL: the first layer's */
    attn_w attn, cross; /* cross: the decoder's */
    ffn_w ffn;
} layer_w;

typedef struct weights {
    int n_enc, n_dec;   /* n_dec 0: t5encoder */
    int buckets;
    int32_t start;
    as_weight tok_embd, output;
    const float *enc_norm, *dec_norm;
    layer_w *enc, *dec;
} weights;

static int read_u32(const as_gguf *g, const char *arch, const char *suffix, int lo, int hi, int *out,
                    bool optional, as_error *err)
{
    char key[96];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    uint32_t v = (uint32_t)*out;
    if (!optional && !as_gguf_find(g, key))
        return as_error_set(err, "%s: %s is missing (llama.cpp needs it too)", g->path, key);
    if (as_gguf_get_u32_opt(g, key, &v, err))
        return AS_ERR;
    if ((int64_t)v < lo || (int64_t)v > hi)
        return as_error_set(err, "%s: %s = %u is out of range (%d..%d)", g->path, key, v, lo, hi);
    *out = (int)v;
    return AS_OK;
}

static int config(as_config *c, const as_gguf *g, const char *arch, bool decoder, as_error *err)
{
    int buckets = 0;
    if (as_config_read_common(c, g, arch, "attention.layer_norm_rms_epsilon", err) ||
        as_config_read_head_size(c, g, arch, err) ||
        read_u32(g, arch, "attention.relative_buckets_count", 4, 1 << 16, &buckets, false, err))
        return AS_ERR;
    if (c->n_head_kv != c->n_head)
        return as_error_set(err, "%s: %s.attention.head_count_kv = %d: T5's heads each have their own keys and values "
                            "(head_count %d)", g->path, arch, c->n_head_kv, c->n_head);
    if (!decoder)
        return AS_OK;
    int n_dec = c->n_layer;
    if (read_u32(g, arch, "decoder_block_count", 1, 1 << 16, &n_dec, true, err))
        return AS_ERR;
    if (n_dec > c->n_layer)
        c->n_layer = n_dec; /* a layer number names a block of either stack */
    return AS_OK;
}

static int read_config_t5(as_config *c, const as_gguf *g, as_error *err)
{
    return config(c, g, "t5", true, err);
}

static int read_config_t5encoder(as_config *c, const as_gguf *g, as_error *err)
{
    return config(c, g, "t5encoder", false, err);
}

#define N(fmt) (snprintf(n, sizeof n, fmt, stack, l), n)

static int load_attn(as_model *m, const char *stack, int l, const char *what, attn_w *a, as_error *err)
{
    const as_config *c = &m->cfg;
    uint64_t d = (uint64_t)c->d_model, q = (uint64_t)c->n_head * (uint64_t)c->d_head,
             kv = (uint64_t)c->n_head_kv * (uint64_t)c->d_head;
    char n[96];
    as_weight *w[4] = {&a->q, &a->k, &a->v, &a->o};
    static const char *const which[4] = {"q", "k", "v", "o"};
    uint64_t cols[4] = {d, d, d, q}, rows[4] = {q, kv, kv, d};
    for (int i = 0; i < 4; i++) {
        snprintf(n, sizeof n, AS_TN_ED_ATTN_SITE ".weight", stack, l, what, which[i]);
        if (as_model_matrix(m, n, cols[i], rows[i], false, w[i], err))
            return AS_ERR;
    }
    return AS_OK;
}

static int load_layer(as_model *m, const char *stack, int l, bool dec, int buckets, layer_w *L, as_error *err)
{
    const as_config *c = &m->cfg;
    uint64_t d = (uint64_t)c->d_model, f = (uint64_t)c->d_ff;
    char n[96];
    if (as_model_vector(m, N(AS_TN_ED_ATTN_NORM ".weight"), d, false, &L->attn_norm, err) ||
        as_model_matrix(m, N(AS_TN_ED_ATTN_REL_B ".weight"), (uint64_t)c->n_head, (uint64_t)buckets, l > 0, &L->rel,
                        err) ||
        load_attn(m, stack, l, "attn", &L->attn, err) ||
        as_model_vector(m, N(AS_TN_ED_FFN_NORM ".weight"), d, false, &L->ffn_norm, err) ||
        as_model_matrix(m, N(AS_TN_ED_FFN_GATE ".weight"), d, f, true, &L->ffn.gate, err) ||
        as_model_matrix(m, N(AS_TN_ED_FFN_UP ".weight"), d, f, false, &L->ffn.up, err) ||
        as_model_matrix(m, N(AS_TN_ED_FFN_DOWN ".weight"), f, d, false, &L->ffn.down, err))
        return AS_ERR;
    if (!dec)
        return AS_OK;
    /* cross_attn_rel_b: llama.cpp loads and never uses it (Hugging Face's
     * T5 has no bias on cross-attention); neither does attnscope */
    as_weight unused;
    return as_model_vector(m, N(AS_TN_ED_CROSS_ATTN_NORM ".weight"), d, false, &L->cross_norm, err) ||
           load_attn(m, stack, l, "cross_attn", &L->cross, err) ||
           as_model_matrix(m, N(AS_TN_ED_CROSS_ATTN_REL_B ".weight"), (uint64_t)c->n_head, (uint64_t)buckets, true,
                           &unused, err);
}

#undef N

/* The decoder's first token: decoder_start_token_id, else the
 * vocabulary's BOS (as llama.cpp's examples fall back), else none. */
static int read_start(as_model *m, weights *W, as_error *err)
{
    uint32_t v = UINT32_MAX;
    if (as_gguf_get_u32_opt(m->gguf, "t5.decoder_start_token_id", &v, err))
        return AS_ERR;
    if (v == UINT32_MAX) {
        W->start = m->tok ? as_tokenizer_bos(m->tok) : -1;
        return AS_OK;
    }
    if (v >= (uint32_t)m->cfg.n_vocab)
        return as_error_set(err, "%s: t5.decoder_start_token_id = %u is outside the vocabulary (0..%d)", m->path, v,
                            m->cfg.n_vocab - 1);
    W->start = (int32_t)v;
    return AS_OK;
}

static int load(as_model *m, bool decoder, as_error *err)
{
    const as_config *c = &m->cfg;
    const char *arch = decoder ? "t5" : "t5encoder";
    uint64_t d = (uint64_t)c->d_model, V = (uint64_t)c->n_vocab;
    int n_enc = 0, n_dec = 0, buckets = 0;
    if (as_model_check_vocab(m, AS_TN_TOKEN_EMBD ".weight", err) ||
        read_u32(m->gguf, arch, "block_count", 1, 1 << 16, &n_enc, false, err) ||
        read_u32(m->gguf, arch, "attention.relative_buckets_count", 4, 1 << 16, &buckets, false, err))
        return AS_ERR;
    n_dec = decoder ? n_enc : 0;
    if (decoder && read_u32(m->gguf, arch, "decoder_block_count", 1, 1 << 16, &n_dec, true, err))
        return AS_ERR;
    weights *W = calloc(1, sizeof *W + (size_t)(n_enc + n_dec) * sizeof(layer_w));
    if (!W)
        return as_error_set(err, "%s: out of memory", m->path);
    m->weights = W;
    W->n_enc = n_enc, W->n_dec = n_dec, W->buckets = buckets, W->start = -1;
    W->enc = (layer_w *)(W + 1);
    W->dec = W->enc + n_enc;
    if (as_model_matrix(m, AS_TN_TOKEN_EMBD ".weight", d, V, false, &W->tok_embd, err) ||
        as_model_vector(m, AS_TN_ENC_OUTPUT_NORM ".weight", d, false, &W->enc_norm, err))
        return AS_ERR;
    for (int l = 0; l < n_enc; l++)
        if (load_layer(m, "enc", l, false, buckets, &W->enc[l], err))
            return AS_ERR;
    if (!decoder) {
        /* t5encoder: llama.cpp loads output.weight when present and its
         * graph never reads it; attnscope neither */
        as_weight unused;
        return as_model_matrix(m, AS_TN_OUTPUT ".weight", d, V, true, &unused, err);
    }
    if (as_model_vector(m, AS_TN_DEC_OUTPUT_NORM ".weight", d, false, &W->dec_norm, err) ||
        as_model_matrix(m, AS_TN_OUTPUT ".weight", d, V, true, &W->output, err) || read_start(m, W, err))
        return AS_ERR;
    if (!W->output.data)
        W->output = W->tok_embd; /* tied, unscaled, as llama.cpp computes it */
    for (int l = 0; l < n_dec; l++)
        if (load_layer(m, "dec", l, true, buckets, &W->dec[l], err))
            return AS_ERR;
    return AS_OK;
}

static int load_t5(as_model *m, as_error *err)
{
    return load(m, true, err);
}

static int load_t5encoder(as_model *m, as_error *err)
{
    return load(m, false, err);
}

/* ---------------------------------------------------------------- the program */

/* q from xq's stream, k and v from xkv's (the encoder's output for
 * cross-attention); scores q·kᵀ unscaled, plus the relative position bias
 * when `rel` is given. Returns the output after W_O. */
static int attention(as_program *p, int l, const attn_w *W, int xq, int xkv, as_mask mask, const as_weight *rel,
                     const as_rel_spec *spec, as_hook_kind out_kind, int q_stream, int kv_stream)
{
    const as_config *c = &p->model->cfg;
    int H = c->n_head, Hk = c->n_head_kv, dh = c->d_head;
    bool cross = p->cur_site == AS_SITE_CROSS_ATTN;
    p->cur_stream = q_stream;
    int q = as_program_add_linear(p, AS_HK_Q, l, AS_CLASS_HEADS, xq, &W->q, NULL, 2, H, dh,
                                  cross ? "q = ln2 · W_Q" : "q = ln1 · W_Q");
    p->cur_stream = kv_stream;
    int k = as_program_add_linear(p, AS_HK_K, l, AS_CLASS_ESSENTIAL, xkv, &W->k, NULL, 2, Hk, dh,
                                  cross ? "k = encoder output · W_K" : "k = ln1 · W_K");
    int v = as_program_add_linear(p, AS_HK_V, l, AS_CLASS_ESSENTIAL, xkv, &W->v, NULL, 2, Hk, dh,
                                  cross ? "v = encoder output · W_V" : "v = ln1 · W_V");
    p->cur_stream = q_stream;
    int bias = -1;
    if (rel)
        bias = as_program_add_rel_bias(p, l, H, rel, spec,
                                       spec->bidirectional ? "position_bias = table[bucket(k - q)], both ways"
                                                           : "position_bias = table[bucket(q - k)], causal");
    as_attn site = {.layer = l, .q = q, .k = k, .v = v, .n_head = H, .n_head_kv = Hk, .d_qk = dh, .d_v = dh,
                    .scale = 1.0f, .mask = mask, .bias = bias};
    int z = as_program_add_attention(p, &site, cross ? "scores = q · kᵀ (unscaled), every source position"
                                               : mask == AS_MASK_CAUSAL ? "scores = q · kᵀ + position_bias, causal"
                                                                        : "scores = q · kᵀ + position_bias, no mask");
    p->cur_site = AS_SITE_NONE;
    return as_program_add_linear(p, out_kind, l, AS_CLASS_RESID, z, &W->o, NULL, 1, c->d_model, 0,
                                 cross ? "cross_attn_out = z · W_O" : "attn_out = z · W_O");
}

/* Gated GELU (gelu_tanh(x·W_gate) * x·W_up) or ReLU, then W_down. */
static int mlp(as_program *p, int l, const ffn_w *W, int x, const char *in_name)
{
    const as_config *c = &p->model->cfg;
    char text[64];
    int post = -1;
    snprintf(text, sizeof text, W->gate.data ? "mlp pre = %s · W_gate" : "mlp pre = %s · W_in", in_name);
    int pre = as_program_add_linear(p, AS_HK_MLP_PRE, l, AS_CLASS_MLP, x, W->gate.data ? &W->gate : &W->up, NULL, 1,
                                    c->d_ff, 0, text);
    if (W->gate.data) {
        snprintf(text, sizeof text, "mlp pre_linear = %s · W_in", in_name);
        int lin = as_program_add_linear(p, AS_HK_MLP_PRE_LINEAR, l, AS_CLASS_MLP, x, &W->up, NULL, 1, c->d_ff, 0,
                                        text);
        post = as_program_add_hook(p, AS_HK_MLP_POST, l, AS_CLASS_MLP, 1, c->d_ff, 0);
        as_program_add_op(p, AS_OP_GEGLU, l, post, pre, lin, "mlp post = gelu(pre) * pre_linear")->gelu =
            AS_GELU_TANH;
    } else {
        post = as_program_add_hook(p, AS_HK_MLP_POST, l, AS_CLASS_MLP, 1, c->d_ff, 0);
        as_program_add_op(p, AS_OP_RELU, l, post, pre, -1, "mlp post = relu(pre)");
    }
    return as_program_add_linear(p, AS_HK_MLP_OUT, l, AS_CLASS_RESID, post, &W->down, NULL, 1, c->d_model, 0,
                                 "mlp_out = post · W_out");
}

/* Block l's resid_pre: the embeddings for block 0, else the previous
 * block's resid_post. */
static int resid_pre(as_program *p, const char *stack, int l, int prev)
{
    char scope[32];
    snprintf(scope, sizeof scope, "%s.%d", stack, l);
    as_program_scope_name(p, scope);
    int pre = as_program_add_hook(p, AS_HK_RESID_PRE, l, AS_CLASS_RESID, 1, p->model->cfg.d_model, 0);
    as_program_add_op(p, AS_OP_COPY, l, pre, prev, -1, l == 0 ? "resid_pre = embed" : "resid_pre = previous resid_post");
    return pre;
}

static const as_weight *rel_table(const layer_w *layers, int l)
{
    return layers[l].rel.data ? &layers[l].rel : &layers[0].rel;
}

/* x += attn(ln1(x)); x += mlp(ln2(x)). Returns resid_post. */
static int enc_block(as_program *p, int l, int pre, int enc, const as_rel_spec *spec)
{
    const weights *Wt = p->model->weights;
    const layer_w *W = &Wt->enc[l];
    float eps = p->model->cfg.eps;
    int n1 = as_program_add_norm(p, AS_HK_LN1_SCALE, l, pre, W->attn_norm, NULL, AS_NORM_RMS, eps, "ln1");
    p->cur_site = AS_SITE_SELF_ATTN;
    int ao = attention(p, l, &W->attn, n1, n1, AS_MASK_NONE, rel_table(Wt->enc, l), spec, AS_HK_ATTN_OUT, enc, enc);
    int mid = as_program_add_sum(p, AS_HK_RESID_MID, l, pre, ao, "resid_mid = resid_pre + attn_out");
    int n2 = as_program_add_norm(p, AS_HK_LN2_SCALE, l, mid, W->ffn_norm, NULL, AS_NORM_RMS, eps, "ln2");
    int mo = mlp(p, l, &W->ffn, n2, "ln2");
    return as_program_add_sum(p, AS_HK_RESID_POST, l, mid, mo, "resid_post = resid_mid + mlp_out");
}

/* x += causal attn(ln1(x)); x += cross_attn(ln2(x), encoder output);
 * x += mlp(ln3(x)). Returns resid_post. */
static int dec_block(as_program *p, int l, int pre, int memory, int enc, int dec, const as_rel_spec *spec)
{
    const weights *Wt = p->model->weights;
    const layer_w *W = &Wt->dec[l];
    float eps = p->model->cfg.eps;
    int n1 = as_program_add_norm(p, AS_HK_LN1_SCALE, l, pre, W->attn_norm, NULL, AS_NORM_RMS, eps, "ln1");
    p->cur_site = AS_SITE_SELF_ATTN;
    int ao = attention(p, l, &W->attn, n1, n1, AS_MASK_CAUSAL, rel_table(Wt->dec, l), spec, AS_HK_ATTN_OUT, dec, dec);
    int mid = as_program_add_sum(p, AS_HK_RESID_MID, l, pre, ao, "resid_mid = resid_pre + attn_out");
    int n2 = as_program_add_norm(p, AS_HK_LN2_SCALE, l, mid, W->cross_norm, NULL, AS_NORM_RMS, eps, "ln2");
    p->cur_site = AS_SITE_CROSS_ATTN;
    int co = attention(p, l, &W->cross, n2, memory, AS_MASK_NONE, NULL, NULL, AS_HK_CROSS_ATTN_OUT, dec, enc);
    int midc = as_program_add_sum(p, AS_HK_RESID_MID_CROSS, l, mid, co, "resid_mid_cross = resid_mid + cross_attn_out");
    int n3 = as_program_add_norm(p, AS_HK_LN3_SCALE, l, midc, W->ffn_norm, NULL, AS_NORM_RMS, eps, "ln3");
    int mo = mlp(p, l, &W->ffn, n3, "ln3");
    return as_program_add_sum(p, AS_HK_RESID_POST, l, midc, mo, "resid_post = resid_mid_cross + mlp_out");
}

/* embed = W_E[token], unscaled, under the stack's name. */
static int embeddings(as_program *p, const char *stack, const as_weight *emb)
{
    as_program_scope_name(p, stack);
    int e = as_program_add_hook(p, AS_HK_EMBED, -1, AS_CLASS_RESID, 1, p->model->cfg.d_model, 0);
    as_program_add_op(p, AS_OP_EMBED, -1, e, -1, -1, "embed = W_E[token]")->w = *emb;
    return e;
}

static int build(as_program *p, as_error *err)
{
    const as_config *c = &p->model->cfg;
    const weights *W = p->model->weights;
    bool decoder = W->n_dec > 0;
    int enc = as_program_add_stream(p, "encoder", AS_INPUT_TOKENS, c->n_ctx, false);
    int dec = decoder ? as_program_add_stream(p, "decoder", AS_INPUT_TOKENS, c->n_ctx, true) : -1;
    as_rel_spec both = {W->buckets, T5_MAX_DISTANCE, true}, causal = {W->buckets, T5_MAX_DISTANCE, false};

    p->cur_stream = enc;
    int x = embeddings(p, "encoder", &W->tok_embd);
    for (int l = 0; l < W->n_enc; l++)
        x = enc_block(p, l, resid_pre(p, "encoder", l, x), enc, &both);
    as_program_scope_name(p, NULL);
    int memory = as_program_add_norm(p, AS_HK_ENC_LNF_SCALE, -1, x, W->enc_norm, NULL, AS_NORM_RMS, c->eps,
                                     "encoder_final_ln");
    /* t5encoder: an embeddings model whose output is the encoder's final
     * norm (llama.cpp's embeddings, pooling none) */
    if (!decoder) {
        p->no_lens = "this T5 encoder has no unembedding: it outputs embeddings";
        p->no_dla = "this T5 encoder has no unembedding: it outputs embeddings";
        (void)err;
        return AS_OK;
    }
    p->source_stream = enc;
    p->start_token = W->start;

    p->cur_stream = dec;
    x = embeddings(p, "decoder", &W->tok_embd);
    for (int l = 0; l < W->n_dec; l++)
        x = dec_block(p, l, resid_pre(p, "decoder", l, x), memory, enc, dec, &causal);
    as_program_scope_name(p, NULL);
    as_program_add_unembed(p, x, W->dec_norm, NULL, AS_NORM_RMS, c->eps, &W->output, NULL, 0);
    as_program_rename(p, p->ops[p->final_norm].in[1], "decoder_final_ln.hook_scale");
    as_program_rename(p, p->ops[p->final_norm].out, "decoder_final_ln.hook_normalized");
    p->no_lens = "this encoder-decoder has two stacks: the lens reads one residual stream through the final norm";
    (void)err;
    return AS_OK;
}

const as_arch as_arch_t5 = {
    .gguf_name = "t5",
    .block_prefix = "enc.blk.",
    .read_config = read_config_t5,
    .load = load_t5,
    .build = build,
};
const as_arch as_arch_t5encoder = {
    .gguf_name = "t5encoder",
    .block_prefix = "enc.blk.",
    .read_config = read_config_t5encoder,
    .load = load_t5encoder,
    .build = build,
};
