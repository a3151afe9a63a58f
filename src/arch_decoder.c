/* arch_decoder: the tensors and the block the Llama family of decoders
 * share (see arch_decoder.h). A block reads top to bottom as the
 * architectures' papers draw it; each variant's differences are facts
 * (which tensors, which norms, which activation, which mask), never a
 * question of its name. */
#include "arch_decoder.h"
#include "tensor_names.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N(name) (snprintf(n, sizeof n, name, l), n)

/* q, k and v: fused (attn_qkv: q's rows, then k's, then v's) or separate,
 * with their biases when the variant has them. */
static int load_qkv(as_model *m, as_dec_layer *L, int l, unsigned t, as_error *err)
{
    const as_config *c = &m->cfg;
    uint64_t d = (uint64_t)c->d_model, q = (uint64_t)c->n_head * (uint64_t)c->d_head;
    uint64_t kv = (uint64_t)c->n_head_kv * (uint64_t)c->d_head;
    char n[96];
    as_weight qkv;
    const float *b = NULL;
    if (as_model_matrix(m, N(AS_TN_ATTN_QKV ".weight"), d, q + 2 * kv, true, &qkv, err))
        return AS_ERR;
    if (qkv.data) {
        L->wq = as_weight_rows(&qkv, 0, (int)q);
        L->wk = as_weight_rows(&qkv, (int)q, (int)kv);
        L->wv = as_weight_rows(&qkv, (int)(q + kv), (int)kv);
        if ((t & AS_DEC_QKV_BIAS) && as_model_vector(m, N(AS_TN_ATTN_QKV ".bias"), q + 2 * kv, true, &b, err))
            return AS_ERR;
        if (b) {
            L->bq = b, L->bk = b + q, L->bv = b + q + kv;
            return AS_OK;
        }
    } else if (as_model_matrix(m, N(AS_TN_ATTN_Q ".weight"), d, q, false, &L->wq, err)) {
        return AS_ERR;
    } else if (as_model_matrix(m, N(AS_TN_ATTN_K ".weight"), d, kv, false, &L->wk, err) ||
               as_model_matrix(m, N(AS_TN_ATTN_V ".weight"), d, kv, false, &L->wv, err)) {
        /* Their width comes from three hyperparameters: say which. */
        char first[sizeof err->msg];
        snprintf(first, sizeof first, "%s", err->msg);
        return as_error_set(err, "%s (%llu = head_count_kv %d x head size %d, the head size being "
                            "embedding_length %d / head_count %d)", first, (unsigned long long)kv,
                            c->n_head_kv, c->d_head, c->d_model, c->n_head);
    }
    if (!(t & AS_DEC_QKV_BIAS))
        return AS_OK;
    return as_model_vector(m, N(AS_TN_ATTN_Q ".bias"), q, true, &L->bq, err) ||
           as_model_vector(m, N(AS_TN_ATTN_K ".bias"), kv, true, &L->bk, err) ||
           as_model_vector(m, N(AS_TN_ATTN_V ".bias"), kv, true, &L->bv, err);
}

/* The MLP: gate, up and down, gate and up fused in one matrix in some. */
static int load_ffn(as_model *m, as_dec_layer *L, int l, unsigned t, as_error *err)
{
    uint64_t d = (uint64_t)m->cfg.d_model, f = (uint64_t)m->cfg.d_ff;
    char n[96];
    if (t & AS_DEC_FUSED_UP) {
        as_weight up;
        if (as_model_matrix(m, N(AS_TN_FFN_UP ".weight"), d, 2 * f, false, &up, err))
            return AS_ERR;
        L->w_gate = as_weight_rows(&up, 0, (int)f);
        L->w_up = as_weight_rows(&up, (int)f, (int)f);
    } else if (as_model_matrix(m, N(AS_TN_FFN_GATE ".weight"), d, f, false, &L->w_gate, err) ||
               as_model_matrix(m, N(AS_TN_FFN_UP ".weight"), d, f, false, &L->w_up, err)) {
        return AS_ERR;
    }
    if (as_model_matrix(m, N(AS_TN_FFN_DOWN ".weight"), f, d, false, &L->w_down, err))
        return AS_ERR;
    if (!(t & AS_DEC_FFN_BIAS))
        return AS_OK;
    return as_model_vector(m, N(AS_TN_FFN_GATE ".bias"), f, true, &L->b_gate, err) ||
           as_model_vector(m, N(AS_TN_FFN_UP ".bias"), f, true, &L->b_up, err) ||
           as_model_vector(m, N(AS_TN_FFN_DOWN ".bias"), d, true, &L->b_down, err);
}

/* A routed MLP: the router and the experts' stacked matrices, in place. */
static int load_experts(as_model *m, const as_dec_facts *F, as_dec_layer *L, int l, as_error *err)
{
    uint64_t d = (uint64_t)m->cfg.d_model, f = (uint64_t)F->d_expert, E = (uint64_t)F->n_expert;
    char n[96];
    uint64_t fs = (uint64_t)F->d_shared;
    if (as_model_matrix(m, N(AS_TN_FFN_GATE_INP ".weight"), d, E, false, &L->router, err) ||
        as_model_expert_matrix(m, N(AS_TN_FFN_GATE_EXPS ".weight"), d, f, E, false, &L->gate_exps, err) ||
        as_model_expert_matrix(m, N(AS_TN_FFN_UP_EXPS ".weight"), d, f, E, false, &L->up_exps, err) ||
        as_model_expert_matrix(m, N(AS_TN_FFN_DOWN_EXPS ".weight"), f, d, E, false, &L->down_exps, err))
        return AS_ERR;
    if (!(F->tensors & AS_DEC_SHARED_EXPERT))
        return AS_OK;
    return as_model_matrix(m, N(AS_TN_FFN_GATE_INP_SHEXP ".weight"), d, 1, false, &L->shexp_gate_inp, err) ||
           as_model_matrix(m, N(AS_TN_FFN_GATE_SHEXP ".weight"), d, fs, false, &L->shexp_gate, err) ||
           as_model_matrix(m, N(AS_TN_FFN_UP_SHEXP ".weight"), d, fs, false, &L->shexp_up, err) ||
           as_model_matrix(m, N(AS_TN_FFN_DOWN_SHEXP ".weight"), fs, d, false, &L->shexp_down, err);
}

static int load_layer(as_model *m, as_dec_layer *L, int l, unsigned t, as_error *err)
{
    const as_config *c = &m->cfg;
    uint64_t d = (uint64_t)c->d_model, q = (uint64_t)c->n_head * (uint64_t)c->d_head, dh = (uint64_t)c->d_head;
    char n[96];
    if (as_model_vector(m, N(AS_TN_ATTN_NORM ".weight"), d, false, &L->attn_norm_w, err) || load_qkv(m, L, l, t, err) ||
        as_model_matrix(m, N(AS_TN_ATTN_OUT ".weight"), q, d, false, &L->wo, err) ||
        ((t & AS_DEC_O_BIAS) && as_model_vector(m, N(AS_TN_ATTN_OUT ".bias"), d, true, &L->bo, err)))
        return AS_ERR;
    if ((t & AS_DEC_QK_NORM) && (as_model_vector(m, N(AS_TN_ATTN_Q_NORM ".weight"), dh, false, &L->q_norm_w, err) ||
                                 as_model_vector(m, N(AS_TN_ATTN_K_NORM ".weight"), dh, false, &L->k_norm_w, err)))
        return AS_ERR;
    if ((t & AS_DEC_POST_NORMS) &&
        (as_model_vector(m, N(AS_TN_ATTN_POST_NORM ".weight"), d, false, &L->attn_post_norm_w, err) ||
         as_model_vector(m, N(AS_TN_FFN_POST_NORM ".weight"), d, false, &L->ffn_post_norm_w, err)))
        return AS_ERR;
    const as_dec_facts *F = &((const as_dec_weights *)m->weights)->facts;
    return as_model_vector(m, N(AS_TN_FFN_NORM ".weight"), d, false, &L->ffn_norm_w, err) ||
           (F->n_expert > 0 ? load_experts(m, F, L, l, err) : load_ffn(m, L, l, t, err));
}

#undef N

/* Rotary factors: llama 3's one set, or Phi-3's long and short sets, of
 * which llama.cpp takes the long one when the context exceeds the
 * trained one (attnscope's context is the file's). They divide every
 * layer's frequencies, sliding-window layers' too (as llama.cpp's
 * per-layer rope_freqs): both rotations of the facts get them. */
static int load_rope_factors(as_model *m, as_dec_weights *W, as_error *err)
{
    unsigned t = W->facts.tensors;
    uint64_t half = (uint64_t)W->facts.rope.dim / 2;
    const float *lng = NULL, *shrt = NULL;
    if ((t & AS_DEC_ROPE_FREQS) && as_model_vector(m, AS_TN_ROPE_FREQS ".weight", half, true, &W->rope_freqs, err))
        return AS_ERR;
    if ((t & AS_DEC_ROPE_LONG) && (as_model_vector(m, AS_TN_ROPE_FACTORS_LONG ".weight", half, true, &lng, err) ||
                                   as_model_vector(m, AS_TN_ROPE_FACTORS_SHORT ".weight", half, true, &shrt, err)))
        return AS_ERR;
    if (!W->rope_freqs)
        W->rope_freqs = m->cfg.n_ctx > W->facts.rope.n_ctx_orig && W->facts.rope.n_ctx_orig ? lng : shrt;
    W->facts.rope.freqs = W->facts.rope_window.freqs = W->rope_freqs;
    return AS_OK;
}

/* Whether layer l attends through the sliding window, as
 * as_dec_read_window read the file's keys. */
static bool windowed(const as_dec_facts *f, int l)
{
    if (f->window_layers)
        return f->window > 0 && as_gguf_arr_i64(f->window_layers, (uint64_t)l) != 0;
    /* llama.cpp's set_swa_pattern: a period of 0 windows every layer */
    uint32_t n = f->window_period;
    return f->window > 0 && (n == 0 || (uint32_t)l % n < n - 1);
}

int as_dec_read_config(as_config *c, const as_gguf *g, const char *arch, as_error *err)
{
    if (as_config_read_common(c, g, arch, "attention.layer_norm_rms_epsilon", err) ||
        as_config_read_head_size(c, g, arch, err))
        return AS_ERR;
    return as_config_read_rope(c, g, arch, err);
}

int as_dec_load(as_model *m, const as_dec_facts *facts, as_error *err)
{
    const as_config *c = &m->cfg;
    uint64_t d = (uint64_t)c->d_model, v = (uint64_t)c->n_vocab;
    unsigned t = facts->tensors;
    if (as_model_check_vocab(m, AS_TN_TOKEN_EMBD ".weight", err))
        return AS_ERR;
    as_dec_weights *W = calloc(1, sizeof *W + (size_t)c->n_layer * sizeof W->layers[0]);
    if (!W)
        return as_error_set(err, "%s: out of memory", m->path);
    m->weights = W;
    W->facts = *facts;
    if (as_model_matrix(m, AS_TN_TOKEN_EMBD ".weight", d, v, false, &W->tok_embd, err) ||
        as_model_vector(m, AS_TN_OUTPUT_NORM ".weight", d, false, &W->out_norm_w, err) ||
        (!(t & AS_DEC_TIED) && as_model_matrix(m, AS_TN_OUTPUT ".weight", d, v, true, &W->output, err)) ||
        ((t & AS_DEC_OUTPUT_BIAS) && as_model_vector(m, AS_TN_OUTPUT ".bias", v, true, &W->output_b, err)) ||
        load_rope_factors(m, W, err))
        return AS_ERR;
    if (!W->output.data)
        W->output = W->tok_embd; /* tied */
    for (int l = 0; l < c->n_layer; l++) {
        if (load_layer(m, &W->layers[l], l, t, err))
            return AS_ERR;
        W->layers[l].windowed = windowed(facts, l);
    }
    return AS_OK;
}

int as_dec_read_experts(const as_model *m, const char *arch, as_dec_facts *f, as_error *err)
{
    char key[128], used_key[128];
    uint32_t n = 0, used = 0, ff = (uint32_t)m->cfg.d_ff;
    snprintf(key, sizeof key, "%s.expert_count", arch);
    if (as_gguf_get_u32_opt(m->gguf, key, &n, err))
        return AS_ERR;
    f->n_expert = f->n_expert_used = 0;
    if (n == 0)
        return AS_OK;
    if (n > 512) /* llama.cpp's LLAMA_MAX_EXPERTS */
        return as_error_set(err, "%s: %s = %u is out of range (0..512)", m->path, key, n);
    snprintf(used_key, sizeof used_key, "%s.expert_used_count", arch);
    if (!as_gguf_find(m->gguf, used_key))
        return as_error_set(err, "%s: %s is missing (%s = %u: how many experts a token uses)", m->path, used_key,
                            key, n);
    if (as_gguf_get_u32(m->gguf, used_key, &used, err))
        return AS_ERR;
    if (used < 1 || used > n)
        return as_error_set(err, "%s: %s = %u is out of range (1..%s = %u)", m->path, used_key, used, key, n);
    snprintf(key, sizeof key, "%s.expert_feed_forward_length", arch);
    if (as_gguf_get_u32_opt(m->gguf, key, &ff, err))
        return AS_ERR;
    if (ff < 1 || ff > (1u << 20))
        return as_error_set(err, "%s: %s = %u is out of range (1..%u)", m->path, key, ff, 1u << 20);
    f->n_expert = (int)n, f->n_expert_used = (int)used, f->d_expert = (int)ff;
    return AS_OK;
}

int as_dec_read_positive(const as_model *m, const char *arch, const char *suffix, float *out, as_error *err)
{
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (!as_gguf_find(m->gguf, key))
        return AS_OK;
    if (as_gguf_get_f32(m->gguf, key, out, err))
        return AS_ERR;
    if (!(*out > 0 && *out < 1e30f))
        return as_error_set(err, "%s: %s = %g must be a positive number", m->path, key, *out);
    return AS_OK;
}

int as_dec_read_window(const as_model *m, const char *arch, int def, int period, as_dec_facts *f, as_error *err)
{
    char key[128];
    uint32_t window = (uint32_t)def, n = (uint32_t)period;
    snprintf(key, sizeof key, "%s.attention.sliding_window", arch);
    if (as_gguf_get_u32_opt(m->gguf, key, &window, err))
        return AS_ERR;
    if (window > (1u << 24))
        return as_error_set(err, "%s: %s = %u is out of range (0..%u)", m->path, key, window, 1u << 24);
    f->window = (int)window;
    snprintf(key, sizeof key, "%s.attention.sliding_window_pattern", arch);
    const as_gguf_kv *kv = as_gguf_find(m->gguf, key);
    if (kv && kv->type == AS_GGUF_ARRAY) {
        if (kv->arr_len != (uint64_t)m->cfg.n_layer || kv->arr_type == AS_GGUF_STRING)
            return as_error_set(err, "%s: %s must be %d booleans, one a layer", m->path, key, m->cfg.n_layer);
        f->window_layers = kv;
        return AS_OK;
    }
    if (kv && as_gguf_get_u32(m->gguf, key, &n, err))
        return AS_ERR;
    f->window_layers = NULL, f->window_period = n;
    return AS_OK;
}

/* ---------------------------------------------------------------- the block */

/* A norm after a sublayer (Gemma): the sublayer's result, its norm, and
 * the normalized value as the sublayer's output hook (TransformerLens's
 * hook_attn_out / hook_mlp_out hold what is added to the residual). */
static int post_norm(as_program *p, int l, int result, const float *w, as_hook_kind scale_kind, as_hook_kind out_kind,
                     const char *name, const char *text)
{
    const as_config *c = &p->model->cfg;
    int n = as_program_add_norm(p, scale_kind, l, result, w, NULL, AS_NORM_RMS, c->eps, name);
    int out = as_program_add_hook(p, out_kind, l, AS_CLASS_RESID, 1, c->d_model, 0);
    as_program_add_op(p, AS_OP_COPY, l, out, n, -1, text);
    return out;
}

/* q, k (normed per head when the variant does), rotated; v. Returns z. */
static int attention(as_program *p, int l, int x)
{
    const as_config *c = &p->model->cfg;
    const as_dec_weights *DW = p->model->weights;
    const as_dec_facts *F = &DW->facts;
    const as_dec_layer *W = &DW->layers[l];
    int H = c->n_head, Hk = c->n_head_kv, dh = c->d_head;
    int q = as_program_add_linear(p, AS_HK_Q, l, AS_CLASS_HEADS, x, &W->wq, W->bq, 2, H, dh,
                                  W->bq ? "q = ln1 · W_Q + b_Q" : "q = ln1 · W_Q");
    int k = as_program_add_linear(p, AS_HK_K, l, AS_CLASS_HEADS, x, &W->wk, W->bk, 2, Hk, dh,
                                  W->bk ? "k = ln1 · W_K + b_K" : "k = ln1 · W_K");
    int v = as_program_add_linear(p, AS_HK_V, l, AS_CLASS_ESSENTIAL, x, &W->wv, W->bv, 2, Hk, dh,
                                  W->bv ? "v = ln1 · W_V + b_V" : "v = ln1 · W_V");
    if (W->q_norm_w) {
        q = as_program_add_head_norm(p, AS_HK_Q_NORM_SCALE, l, q, W->q_norm_w, AS_NORM_RMS, c->eps, "q_norm");
        k = as_program_add_head_norm(p, AS_HK_K_NORM_SCALE, l, k, W->k_norm_w, AS_NORM_RMS, c->eps, "k_norm");
    }
    const as_rope_spec *rope = W->windowed ? &F->rope_window : &F->rope;
    int rq = as_program_add_rope(p, AS_HK_ROT_Q, l, AS_CLASS_HEADS, q, rope,
                                 W->q_norm_w ? "rot_q = rotate(q_norm, position)" : "rot_q = rotate(q, position)");
    int rk = as_program_add_rope(p, AS_HK_ROT_K, l, AS_CLASS_ESSENTIAL, k, rope,
                                 W->k_norm_w ? "rot_k = rotate(k_norm, position)" : "rot_k = rotate(k, position)");
    as_attn site = {.layer = l, .q = rq, .k = rk, .v = v, .n_head = H, .n_head_kv = Hk, .d_qk = dh, .d_v = dh,
                    .scale = F->attn_scale, .mask = W->windowed ? AS_MASK_WINDOW : AS_MASK_CAUSAL,
                    .window = W->windowed ? F->window : 0, .bias = -1, .softcap = F->attn_softcap};
    char text[96];
    const char *scale = F->attn_scale == 1.0f / sqrtf((float)dh) ? "/ sqrt(d_head)" : "· scale";
    if (F->attn_softcap > 0)
        snprintf(text, sizeof text, "scores = cap·tanh(rot_q · rot_kᵀ %s / cap), %s", scale,
                 W->windowed ? "window" : "causal");
    else
        snprintf(text, sizeof text, "scores = rot_q · rot_kᵀ %s, %s", scale, W->windowed ? "window" : "causal");
    return as_program_add_attention(p, &site, text);
}

/* Returns the block's resid_post hook. */
static int block(as_program *p, int l, int pre)
{
    const as_config *c = &p->model->cfg;
    const as_dec_weights *DW = p->model->weights;
    const as_dec_layer *W = &DW->layers[l];
    int d = c->d_model, f = c->d_ff;
    bool post = W->attn_post_norm_w != NULL;

    int n1 = as_program_add_norm(p, AS_HK_LN1_SCALE, l, pre, W->attn_norm_w, NULL, AS_NORM_RMS, c->eps, "ln1");
    int z = attention(p, l, n1);
    int ao;
    if (post) {
        int r = as_program_add_linear(p, AS_HK_ATTN_RESULT, l, AS_CLASS_RESID, z, &W->wo, W->bo, 1, d, 0,
                                      "attn.out = z · W_O");
        ao = post_norm(p, l, r, W->attn_post_norm_w, AS_HK_LN1_POST_SCALE, AS_HK_ATTN_OUT, "ln1_post",
                       "attn_out = ln1_post");
    } else {
        ao = as_program_add_linear(p, AS_HK_ATTN_OUT, l, AS_CLASS_RESID, z, &W->wo, W->bo, 1, d, 0,
                                   W->bo ? "attn_out = z · W_O + b_O" : "attn_out = z · W_O");
    }
    int mid = as_program_add_sum(p, AS_HK_RESID_MID, l, pre, ao, "resid_mid = resid_pre + attn_out");

    int n2 = as_program_add_norm(p, AS_HK_LN2_SCALE, l, mid, W->ffn_norm_w, NULL, AS_NORM_RMS, c->eps, "ln2");
    if (DW->facts.n_expert > 0) {
        const as_dec_facts *F = &DW->facts;
        bool shared = F->tensors & AS_DEC_SHARED_EXPERT;
        as_hook_kind kind = post ? AS_HK_MLP_RESULT : AS_HK_MLP_OUT;
        int r = as_program_add_moe(p, shared ? AS_HK_ROUTED_OUT : kind, l, n2, &W->router, &W->gate_exps,
                                   &W->up_exps, &W->down_exps, F->n_expert, F->n_expert_used, F->expert_renorm);
        if (shared)
            r = as_program_add_shared_expert(p, kind, l, n2, r, &W->shexp_gate_inp, &W->shexp_gate, &W->shexp_up,
                                             &W->shexp_down);
        int mo = post ? post_norm(p, l, r, W->ffn_post_norm_w, AS_HK_LN2_POST_SCALE, AS_HK_MLP_OUT, "ln2_post",
                                  "mlp_out = ln2_post")
                      : r;
        return as_program_add_sum(p, AS_HK_RESID_POST, l, mid, mo, "resid_post = resid_mid + mlp_out");
    }
    int gate = as_program_add_linear(p, AS_HK_MLP_PRE, l, AS_CLASS_MLP, n2, &W->w_gate, W->b_gate, 1, f, 0,
                                     "mlp pre = ln2 · W_gate");
    int up = as_program_add_linear(p, AS_HK_MLP_PRE_LINEAR, l, AS_CLASS_MLP, n2, &W->w_up, W->b_up, 1, f, 0,
                                   "mlp pre_linear = ln2 · W_in");
    int hp = as_program_add_hook(p, AS_HK_MLP_POST, l, AS_CLASS_MLP, 1, f, 0);
    if (DW->facts.gelu)
        as_program_add_op(p, AS_OP_GEGLU, l, hp, gate, up, "mlp post = gelu(pre) * pre_linear");
    else
        as_program_add_op(p, AS_OP_SWIGLU, l, hp, gate, up, "mlp post = silu(pre) * pre_linear");
    int mo;
    if (post) {
        int r = as_program_add_linear(p, AS_HK_MLP_RESULT, l, AS_CLASS_RESID, hp, &W->w_down, W->b_down, 1, d, 0,
                                      "mlp.out = post · W_out");
        mo = post_norm(p, l, r, W->ffn_post_norm_w, AS_HK_LN2_POST_SCALE, AS_HK_MLP_OUT, "ln2_post",
                       "mlp_out = ln2_post");
    } else {
        mo = as_program_add_linear(p, AS_HK_MLP_OUT, l, AS_CLASS_RESID, hp, &W->w_down, W->b_down, 1, d, 0,
                                   "mlp_out = post · W_out");
    }
    return as_program_add_sum(p, AS_HK_RESID_POST, l, mid, mo, "resid_post = resid_mid + mlp_out");
}

int as_dec_build(as_program *p, as_error *err)
{
    const as_config *c = &p->model->cfg;
    const as_dec_weights *W = p->model->weights;
    int d = c->d_model;
    as_program_add_stream(p, "tokens", AS_INPUT_TOKENS, c->n_ctx, true);
    int e = as_program_add_hook(p, AS_HK_EMBED, -1, AS_CLASS_RESID, 1, d, 0);
    as_op *op = as_program_add_op(p, AS_OP_EMBED, -1, e, -1, -1,
                                  W->facts.embed_scale ? "embed = W_E[token] · sqrt(d_model)" : "embed = W_E[token]");
    op->w = W->tok_embd;
    op->scale = W->facts.embed_scale;
    int resid = e;
    for (int l = 0; l < c->n_layer; l++) {
        as_program_scope(p, l);
        int pre = as_program_add_hook(p, AS_HK_RESID_PRE, l, AS_CLASS_RESID, 1, d, 0);
        as_program_add_op(p, AS_OP_COPY, l, pre, resid, -1,
                          l ? "resid_pre = previous resid_post" : "resid_pre = embed");
        resid = block(p, l, pre);
    }
    as_program_scope(p, -1);
    as_program_add_unembed(p, resid, W->out_norm_w, NULL, AS_NORM_RMS, c->eps, &W->output, W->output_b,
                           W->facts.final_softcap);
    (void)err;
    return AS_OK;
}
