/* DeepSeek-V2/V3's multi-head latent attention (MLA), as llama.cpp runs
 * general.architecture "deepseek2" (src/models/deepseek2.cpp): q straight
 * from the stream (attn_q) or through a low-rank latent (attn_q_a, its
 * RMSNorm attn_q_a_norm, attn_q_b); attn_kv_a_mqa gives the compressed
 * key-value latent (attention.kv_lora_rank) and one rotary key shared by
 * every head (rope.dimension_count); the latent's RMSNorm (attn_kv_a_norm),
 * then attn_kv_b expands it into each head's keys without rotary (the
 * "nope" part) and its values. Each head's q and k are [nope, rope]: the
 * rope part rotated (pairs), the keys' rope part the shared one. Head
 * sizes attention.key_length (nope + rope) and value_length differ;
 * scores scaled by 1/sqrt(key_length).
 *
 * The first leading_dense_block_count layers have a SwiGLU MLP; the others
 * route among expert_count experts (ffn_gate_inp, the 3-D ffn_*_exps):
 * softmax or sigmoid weights (expert_gating_func 1 or 2; absent: softmax),
 * a selection bias exp_probs_b added for choosing only, group-limited
 * choice (expert_group_count, expert_group_used_count), the chosen weights
 * normalised (expert_weights_norm) and scaled (expert_weights_scale), and
 * expert_shared_count shared experts as one SwiGLU of that many times
 * expert_feed_forward_length (ffn_*_shexp), added without a gate.
 *
 * Files of newer converters split attn_kv_b into attn_k_b and attn_v_b
 * (attention.key_length_mla and value_length_mla then give the heads'
 * sizes, key_length and value_length the one key-value head's): they run
 * as llama.cpp runs them, the KV cache holding the normed latent and the
 * rotated shared key (hook_k / hook_rot_k [1, kv_lora + rope], hook_v
 * [1, kv_lora]); the legacy layout caches the expanded keys and values.
 *
 * YaRN as llama.cpp applies it for deepseek2: the rotary part's angles
 * scaled, cos and sin not, and the scores times mscale² (mscale = 1 +
 * rope.scaling.yarn_log_multiplier · ln(factor)); linear scaling and a
 * rope.scaling.attn_factor other than 1 are refused by name. */
#include "attnscope/model.h"
#include "program_build.h"
#include "tensor_names.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

typedef struct ds2_layer {
    const float *attn_norm_w;
    as_weight wq, wq_a, wq_b;     /* wq, or wq_a and wq_b */
    const float *q_a_norm_w;
    as_weight wkv_latent, wk_pe;  /* the rows of attn_kv_a_mqa: latent's, then the rotary key's */
    const float *kv_a_norm_w;
    as_weight wkv_b;              /* [n_head · (nope + d_v)][kv_lora] (legacy) */
    as_weight wk_b, wv_b;         /* absorbed: per head [kv_lora][nope] and [d_v][kv_lora], stacked */
    as_weight wo;                 /* [d_model][n_head · d_v] */
    const float *ffn_norm_w;
    as_weight w_gate, w_up, w_down;  /* a dense layer's MLP */
    as_weight router, gate_exps, up_exps, down_exps; /* a routed layer's */
    const float *exp_probs_b;        /* the selection bias [n_expert], or NULL */
    as_weight sh_gate, sh_up, sh_down; /* its shared experts, one SwiGLU of n_shared · d_expert */
} ds2_layer;

typedef struct ds2_weights {
    int q_lora, kv_lora, d_v, nope;
    bool absorbed;              /* attn_k_b / attn_v_b (attention.key_length_mla given) */
    int n_dense;                /* leading dense layers; the rest routed */
    as_moe_spec moe;
    int d_expert, n_shared;
    float kq_scale;             /* mscale² / sqrt(key_length): mscale = 1 + yarn_log_multiplier · ln(factor) */
    as_weight tok_embd, output;
    const float *out_norm_w;
    ds2_layer layers[];
} ds2_weights;

static int read_u32(const as_gguf *g, const char *suffix, uint32_t *v, uint32_t lo, uint32_t hi, as_error *err)
{
    char key[128];
    snprintf(key, sizeof key, "deepseek2.%s", suffix);
    if (as_gguf_get_u32_opt(g, key, v, err))
        return AS_ERR;
    if (*v < lo || *v > hi)
        return as_error_set(err, "%s: %s = %u is out of range (%u..%u)", g->path, key, *v, lo, hi);
    return AS_OK;
}

static int read_config(as_config *c, const as_gguf *g, as_error *err)
{
    if (as_config_read_common(c, g, "deepseek2", "attention.layer_norm_rms_epsilon", err))
        return AS_ERR;
    uint32_t k = 0;
    if (!as_gguf_find(g, "deepseek2.attention.key_length"))
        return as_error_set(err, "%s: deepseek2.attention.key_length is missing (the head size of q and k: "
                            "their part without rotary plus the rotary part)", g->path);
    if (read_u32(g, "attention.key_length", &k, 2, 65536, err))
        return AS_ERR;
    /* the absorbed layout: key_length is the one key-value head's (latent + rope), key_length_mla the
     * heads' own (nope + rope), which is what attnscope's head size means */
    if (as_gguf_find(g, "deepseek2.attention.key_length_mla") &&
        read_u32(g, "attention.key_length_mla", &k, 2, 65536, err))
        return AS_ERR;
    c->d_head = (int)k;
    if (as_config_read_rope(c, g, "deepseek2", err))
        return AS_ERR;
    as_rope_spec *r = &c->rope;
    if (r->freq_scale == 1.0f && r->attn_factor == 1.0f)
        return AS_OK;
    if (r->ext_factor == 0.0f)
        return as_error_set(err, "%s: deepseek2 with linear rotary scaling is not supported (YaRN is)", g->path);
    if (r->attn_factor != 1.0f)
        return as_error_set(err, "%s: deepseek2.rope.scaling.attn_factor = %g: only 1 is supported with YaRN",
                            g->path, r->attn_factor);
    /* llama.cpp's deepseek2 graph: cos and sin unscaled (YaRN's own magnitude cancelled), the attention
     * scale carrying its mscale instead (see the load) */
    r->attn_factor = 1.0f / (1.0f + 0.1f * logf(1.0f / r->freq_scale));
    return AS_OK;
}

#define N(name) (snprintf(n, sizeof n, name, l), n)

static int load_layer(as_model *m, ds2_weights *W, int l, as_error *err)
{
    const as_config *c = &m->cfg;
    ds2_layer *L = &W->layers[l];
    uint64_t d = (uint64_t)c->d_model, H = (uint64_t)c->n_head, dk = (uint64_t)c->d_head;
    uint64_t r = (uint64_t)c->rope_dim, kl = (uint64_t)W->kv_lora, dv = (uint64_t)W->d_v;
    char n[96];
    as_weight kva;
    if (as_model_vector(m, N(AS_TN_ATTN_NORM ".weight"), d, false, &L->attn_norm_w, err))
        return AS_ERR;
    if (W->q_lora) {
        if (as_model_matrix(m, N(AS_TN_ATTN_Q_A ".weight"), d, (uint64_t)W->q_lora, false, &L->wq_a, err) ||
            as_model_vector(m, N(AS_TN_ATTN_Q_A_NORM ".weight"), (uint64_t)W->q_lora, false, &L->q_a_norm_w, err) ||
            as_model_matrix(m, N(AS_TN_ATTN_Q_B ".weight"), (uint64_t)W->q_lora, H * dk, false, &L->wq_b, err))
            return AS_ERR;
    } else if (as_model_matrix(m, N(AS_TN_ATTN_Q ".weight"), d, H * dk, false, &L->wq, err)) {
        return AS_ERR;
    }
    if (as_model_matrix(m, N(AS_TN_ATTN_KV_A_MQA ".weight"), d, kl + r, false, &kva, err) ||
        as_model_vector(m, N(AS_TN_ATTN_KV_A_NORM ".weight"), kl, false, &L->kv_a_norm_w, err))
        return AS_ERR;
    L->wkv_latent = as_weight_rows(&kva, 0, (int)kl);
    L->wk_pe = as_weight_rows(&kva, (int)kl, (int)r);
    if (W->absorbed ? as_model_expert_matrix(m, N(AS_TN_ATTN_K_B ".weight"), dk - r, kl, H, false, &L->wk_b, err) ||
                          as_model_expert_matrix(m, N(AS_TN_ATTN_V_B ".weight"), kl, dv, H, false, &L->wv_b, err)
                    : as_model_matrix(m, N(AS_TN_ATTN_KV_B ".weight"), kl, H * (dk - r + dv), false, &L->wkv_b, err))
        return AS_ERR;
    if (as_model_matrix(m, N(AS_TN_ATTN_OUT ".weight"), H * dv, d, false, &L->wo, err) ||
        as_model_vector(m, N(AS_TN_FFN_NORM ".weight"), d, false, &L->ffn_norm_w, err))
        return AS_ERR;
    if (l >= W->n_dense) {
        uint64_t E = (uint64_t)W->moe.n_expert, f = (uint64_t)W->d_expert, fs = f * (uint64_t)W->n_shared;
        if (as_model_matrix(m, N(AS_TN_FFN_GATE_INP ".weight"), d, E, false, &L->router, err) ||
            as_model_vector(m, N(AS_TN_FFN_EXP_PROBS_B ".bias"), E, true, &L->exp_probs_b, err) ||
            as_model_expert_matrix(m, N(AS_TN_FFN_GATE_EXPS ".weight"), d, f, E, false, &L->gate_exps, err) ||
            as_model_expert_matrix(m, N(AS_TN_FFN_UP_EXPS ".weight"), d, f, E, false, &L->up_exps, err) ||
            as_model_expert_matrix(m, N(AS_TN_FFN_DOWN_EXPS ".weight"), f, d, E, false, &L->down_exps, err))
            return AS_ERR;
        if (W->n_shared == 0)
            return AS_OK;
        return as_model_matrix(m, N(AS_TN_FFN_GATE_SHEXP ".weight"), d, fs, false, &L->sh_gate, err) ||
               as_model_matrix(m, N(AS_TN_FFN_UP_SHEXP ".weight"), d, fs, false, &L->sh_up, err) ||
               as_model_matrix(m, N(AS_TN_FFN_DOWN_SHEXP ".weight"), fs, d, false, &L->sh_down, err);
    }
    if (as_model_matrix(m, N(AS_TN_FFN_GATE ".weight"), d, (uint64_t)c->d_ff, false, &L->w_gate, err) ||
        as_model_matrix(m, N(AS_TN_FFN_UP ".weight"), d, (uint64_t)c->d_ff, false, &L->w_up, err) ||
        as_model_matrix(m, N(AS_TN_FFN_DOWN ".weight"), (uint64_t)c->d_ff, d, false, &L->w_down, err))
        return AS_ERR;
    return AS_OK;
}

#undef N

/* The routed layers' keys, as llama.cpp reads them for deepseek2. */
static int read_moe(const as_model *m, as_moe_spec *s, uint32_t *d_expert, uint32_t *n_shared, as_error *err)
{
    const as_gguf *g = m->gguf;
    static const char *const need[] = {"expert_count", "expert_used_count", "expert_feed_forward_length"};
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++) {
        char key[128];
        snprintf(key, sizeof key, "deepseek2.%s", need[i]);
        if (!as_gguf_find(g, key))
            return as_error_set(err, "%s: %s is missing (leading_dense_block_count < block_count: the later "
                                "layers route among experts)", m->path, key);
    }
    uint32_t E = 0, k = 0, gating = 0, groups = 0, groups_used = 0;
    bool norm = false;
    float scale = 1.0f;
    if (read_u32(g, "expert_count", &E, 1, AS_MAX_EXPERTS, err) ||
        read_u32(g, "expert_used_count", &k, 1, E, err) ||
        read_u32(g, "expert_feed_forward_length", d_expert, 1, 1u << 20, err) ||
        read_u32(g, "expert_shared_count", n_shared, 0, 64, err) ||
        read_u32(g, "expert_gating_func", &gating, 0, 2, err) ||
        read_u32(g, "expert_group_count", &groups, 0, E, err) ||
        read_u32(g, "expert_group_used_count", &groups_used, 0, groups, err) ||
        as_gguf_get_bool_opt(g, "deepseek2.expert_weights_norm", &norm, err) ||
        as_gguf_get_f32_opt(g, "deepseek2.expert_weights_scale", &scale, err))
        return AS_ERR;
    if (!(scale >= 0 && scale < 1e6f))
        return as_error_set(err, "%s: deepseek2.expert_weights_scale = %g is out of range (0..1e6)", m->path, scale);
    if (groups > 1 && (E % groups || E / groups < 2 || groups_used < 1 || k > groups_used * (E / groups)))
        return as_error_set(err, "%s: deepseek2.expert_group_count = %u and expert_group_used_count = %u do not fit "
                            "%u experts, %u chosen (groups of at least 2 that divide them, enough used to choose "
                            "from)", m->path, groups, groups_used, E, k);
    /* llama.cpp: no gating function (0) is softmax, DeepSeek-V2's */
    *s = (as_moe_spec){.n_expert = (int)E, .k = (int)k, .renorm = norm, .sigmoid = gating == 2,
                       .n_group = groups > 1 ? (int)groups : 0, .group_used = groups > 1 ? (int)groups_used : 0,
                       .scale = scale};
    return AS_OK;
}

static int load(as_model *m, as_error *err)
{
    const as_config *c = &m->cfg;
    const as_gguf *g = m->gguf;
    uint32_t q_lora = 0, kv_lora = 0, dv = (uint32_t)c->d_head, dense = (uint32_t)c->n_layer;
    bool absorbed = as_gguf_find(g, "deepseek2.attention.key_length_mla") != NULL;
    if (!as_gguf_find(g, "deepseek2.attention.kv_lora_rank"))
        return as_error_set(err, "%s: deepseek2.attention.kv_lora_rank is missing (the width of the compressed "
                            "key-value latent)", m->path);
    if (read_u32(g, "attention.q_lora_rank", &q_lora, 0, 1u << 20, err) ||
        read_u32(g, "attention.kv_lora_rank", &kv_lora, 1, 1u << 20, err) ||
        read_u32(g, absorbed ? "attention.value_length_mla" : "attention.value_length", &dv, 1, 65536, err) ||
        read_u32(g, "leading_dense_block_count", &dense, 0, (uint32_t)c->n_layer, err))
        return AS_ERR;
    if (c->rope_dim >= c->d_head)
        return as_error_set(err, "%s: deepseek2.rope.dimension_count = %d leaves no part without rotary in "
                            "attention.key_length = %d", m->path, c->rope_dim, c->d_head);
    as_moe_spec moe = {0};
    uint32_t d_expert = 0, n_shared = 0;
    if (dense < (uint32_t)c->n_layer && read_moe(m, &moe, &d_expert, &n_shared, err))
        return AS_ERR;
    if (as_model_check_vocab(m, AS_TN_TOKEN_EMBD ".weight", err))
        return AS_ERR;
    ds2_weights *W = calloc(1, sizeof *W + (size_t)c->n_layer * sizeof W->layers[0]);
    if (!W)
        return as_error_set(err, "%s: out of memory", m->path);
    m->weights = W;
    W->n_dense = (int)dense, W->moe = moe, W->d_expert = (int)d_expert, W->n_shared = (int)n_shared;
    W->q_lora = (int)q_lora, W->kv_lora = (int)kv_lora, W->d_v = (int)dv, W->nope = c->d_head - c->rope_dim;
    W->absorbed = absorbed;
    float log_mul = 0;
    if (as_gguf_get_f32_opt(g, "deepseek2.rope.scaling.yarn_log_multiplier", &log_mul, err))
        return AS_ERR;
    if (!(log_mul >= 0 && log_mul < 100))
        return as_error_set(err, "%s: deepseek2.rope.scaling.yarn_log_multiplier = %g is out of range (0..100)",
                            m->path, log_mul);
    float mscale = c->rope.ext_factor > 0 ? 1.0f + log_mul * logf(1.0f / c->rope.freq_scale) : 1.0f;
    W->kq_scale = mscale * mscale / sqrtf((float)c->d_head);
    uint64_t d = (uint64_t)c->d_model, v = (uint64_t)c->n_vocab;
    if (as_model_matrix(m, AS_TN_TOKEN_EMBD ".weight", d, v, false, &W->tok_embd, err) ||
        as_model_vector(m, AS_TN_OUTPUT_NORM ".weight", d, false, &W->out_norm_w, err) ||
        as_model_matrix(m, AS_TN_OUTPUT ".weight", d, v, true, &W->output, err))
        return AS_ERR;
    if (!W->output.data)
        W->output = W->tok_embd; /* tied */
    for (int l = 0; l < c->n_layer; l++)
        if (load_layer(m, W, l, err))
            return AS_ERR;
    return AS_OK;
}

/* MLA: returns z [head, d_v]. */
static int attention(as_program *p, int l, int x)
{
    const as_config *c = &p->model->cfg;
    const ds2_weights *W = p->model->weights;
    const ds2_layer *L = &W->layers[l];
    int H = c->n_head, dk = c->d_head, r = c->rope_dim, nope = W->nope, dv = W->d_v;
    int q;
    if (W->q_lora) {
        int ql = as_program_add_linear(p, AS_HK_Q_LATENT, l, AS_CLASS_HEADS, x, &L->wq_a, NULL, 1, W->q_lora, 0,
                                       "q_latent = ln1 · W_QA");
        int qn = as_program_add_norm(p, AS_HK_Q_A_NORM_SCALE, l, ql, L->q_a_norm_w, NULL, AS_NORM_RMS, c->eps,
                                     "q_a_norm");
        q = as_program_add_linear(p, AS_HK_Q, l, AS_CLASS_HEADS, qn, &L->wq_b, NULL, 2, H, dk,
                                  "q = q_a_norm · W_QB");
    } else {
        q = as_program_add_linear(p, AS_HK_Q, l, AS_CLASS_HEADS, x, &L->wq, NULL, 2, H, dk, "q = ln1 · W_Q");
    }
    int kvl = as_program_add_linear(p, AS_HK_KV_LATENT, l, AS_CLASS_HEADS, x, &L->wkv_latent, NULL, 1, W->kv_lora,
                                    0, "kv_latent = ln1 · W_KVA[latent]");
    int kpe = as_program_add_linear(p, AS_HK_K_PE, l, AS_CLASS_HEADS, x, &L->wk_pe, NULL, 2, 1, r,
                                    "k_pe = ln1 · W_KVA[rope]");
    int kvn = as_program_add_norm(p, AS_HK_KV_A_NORM_SCALE, l, kvl, L->kv_a_norm_w, NULL, AS_NORM_RMS, c->eps,
                                  "kv_a_norm");
    as_rope_spec rope = c->rope;
    if (W->absorbed) {
        /* llama.cpp's MLA: q's part without rotary taken into the latent's space per head (attn_k_b), one
         * key-value head [latent, rotated k_pe] and the latent as its value, the mix per head turned into
         * d_v by attn_v_b: the same scores and z as the expanded form, the cache holding the latent */
        rope.offset = nope;
        int rq = as_program_add_rope(p, AS_HK_ROT_Q, l, AS_CLASS_HEADS, q, &rope, "rot_q = rotate(q[:, nope:])");
        int qa = as_program_add_head_linear(p, AS_HK_Q_ABSORBED, l, AS_CLASS_HEADS, rq, H, &L->wk_b, W->kv_lora, 0,
                                            "q_absorbed = W_KB[head] · q[:, :nope]");
        int qpe = as_program_add_slice(p, AS_HK_Q_PE, l, AS_CLASS_HEADS, rq, H, nope, r, "rot_q_pe = rot_q[:, nope:]");
        int qm = as_program_add_concat(p, AS_HK_Q_MQA, l, AS_CLASS_HEADS, qa, qpe, "q_mqa = [q_absorbed, rot_q_pe]");
        int k = as_program_add_concat(p, AS_HK_K, l, AS_CLASS_HEADS, kvn, kpe, "k = [kv_a_norm, k_pe]");
        rope.offset = W->kv_lora;
        int rk = as_program_add_rope(p, AS_HK_ROT_K, l, AS_CLASS_ESSENTIAL, k, &rope, "rot_k = rotate(k[latent:])");
        int v = as_program_add_slice(p, AS_HK_V, l, AS_CLASS_ESSENTIAL, kvn, 1, 0, W->kv_lora, "v = kv_a_norm");
        as_attn site = {.layer = l, .q = qm, .k = rk, .v = v, .n_head = H, .n_head_kv = 1,
                        .d_qk = W->kv_lora + r, .d_v = W->kv_lora, .scale = W->kq_scale,
                        .mask = AS_MASK_CAUSAL, .bias = -1, .plain_kv = H * (dk + dv)};
        int zl = as_program_add_attention(p, &site, "scores = q_mqa · rot_kᵀ · mscale² / sqrt(nope + rope), causal");
        if (p->failed)
            return zl;
        as_program_set_kind(p, zl, AS_HK_Z_LATENT);
        return as_program_add_head_linear(p, AS_HK_Z, l, AS_CLASS_HEADS, zl, H, &L->wv_b, dv, 0,
                                          "z = W_VB[head] · z_latent");
    }
    int kv = as_program_add_linear(p, AS_HK_KV, l, AS_CLASS_HEADS, kvn, &L->wkv_b, NULL, 2, H, nope + dv,
                                   "kv = kv_a_norm · W_KVB");
    int kn = as_program_add_slice(p, AS_HK_K_NOPE, l, AS_CLASS_HEADS, kv, H, 0, nope, "k_nope = kv[:, :nope]");
    int v = as_program_add_slice(p, AS_HK_V, l, AS_CLASS_ESSENTIAL, kv, H, nope, dv, "v = kv[:, nope:]");
    int k = as_program_add_concat(p, AS_HK_K, l, AS_CLASS_HEADS, kn, kpe, "k = [k_nope, k_pe] per head");
    rope.offset = nope;
    int rq = as_program_add_rope(p, AS_HK_ROT_Q, l, AS_CLASS_HEADS, q, &rope, "rot_q = rotate(q[:, nope:])");
    int rk = as_program_add_rope(p, AS_HK_ROT_K, l, AS_CLASS_ESSENTIAL, k, &rope, "rot_k = rotate(k[:, nope:])");
    as_attn site = {.layer = l, .q = rq, .k = rk, .v = v, .n_head = H, .n_head_kv = H, .d_qk = dk, .d_v = dv,
                    .scale = W->kq_scale, .mask = AS_MASK_CAUSAL, .bias = -1, .plain_kv = H * (dk + dv)};
    return as_program_add_attention(p, &site, "scores = rot_q · rot_kᵀ · mscale² / sqrt(d_qk), causal");
}

static int block(as_program *p, int l, int pre)
{
    const as_config *c = &p->model->cfg;
    const ds2_weights *W = p->model->weights;
    const ds2_layer *L = &W->layers[l];
    int d = c->d_model, f = c->d_ff;
    int n1 = as_program_add_norm(p, AS_HK_LN1_SCALE, l, pre, L->attn_norm_w, NULL, AS_NORM_RMS, c->eps, "ln1");
    int z = attention(p, l, n1);
    int ao = as_program_add_linear(p, AS_HK_ATTN_OUT, l, AS_CLASS_RESID, z, &L->wo, NULL, 1, d, 0,
                                   "attn_out = z · W_O");
    int mid = as_program_add_sum(p, AS_HK_RESID_MID, l, pre, ao, "resid_mid = resid_pre + attn_out");
    int n2 = as_program_add_norm(p, AS_HK_LN2_SCALE, l, mid, L->ffn_norm_w, NULL, AS_NORM_RMS, c->eps, "ln2");
    if (l >= W->n_dense) {
        as_moe_spec spec = W->moe;
        spec.bias = L->exp_probs_b;
        bool shared = W->n_shared > 0;
        int r = as_program_add_moe_spec(p, shared ? AS_HK_ROUTED_OUT : AS_HK_MLP_OUT, l, n2, &L->router,
                                        &L->gate_exps, &L->up_exps, &L->down_exps, &spec);
        if (shared)
            r = as_program_add_shared_mlp(p, AS_HK_MLP_OUT, l, n2, r, &L->sh_gate, &L->sh_up, &L->sh_down);
        return as_program_add_sum(p, AS_HK_RESID_POST, l, mid, r, "resid_post = resid_mid + mlp_out");
    }
    int gate = as_program_add_linear(p, AS_HK_MLP_PRE, l, AS_CLASS_MLP, n2, &L->w_gate, NULL, 1, f, 0,
                                     "mlp pre = ln2 · W_gate");
    int up = as_program_add_linear(p, AS_HK_MLP_PRE_LINEAR, l, AS_CLASS_MLP, n2, &L->w_up, NULL, 1, f, 0,
                                   "mlp pre_linear = ln2 · W_in");
    int hp = as_program_add_hook(p, AS_HK_MLP_POST, l, AS_CLASS_MLP, 1, f, 0);
    as_program_add_op(p, AS_OP_SWIGLU, l, hp, gate, up, "mlp post = silu(pre) * pre_linear");
    int mo = as_program_add_linear(p, AS_HK_MLP_OUT, l, AS_CLASS_RESID, hp, &L->w_down, NULL, 1, d, 0,
                                   "mlp_out = post · W_out");
    return as_program_add_sum(p, AS_HK_RESID_POST, l, mid, mo, "resid_post = resid_mid + mlp_out");
}

static int build(as_program *p, as_error *err)
{
    const as_config *c = &p->model->cfg;
    const ds2_weights *W = p->model->weights;
    as_program_add_stream(p, "tokens", AS_INPUT_TOKENS, c->n_ctx, true);
    int e = as_program_add_hook(p, AS_HK_EMBED, -1, AS_CLASS_RESID, 1, c->d_model, 0);
    as_op *op = as_program_add_op(p, AS_OP_EMBED, -1, e, -1, -1, "embed = W_E[token]");
    op->w = W->tok_embd;
    int resid = e;
    for (int l = 0; l < c->n_layer; l++) {
        as_program_scope(p, l);
        int pre = as_program_add_hook(p, AS_HK_RESID_PRE, l, AS_CLASS_RESID, 1, c->d_model, 0);
        as_program_add_op(p, AS_OP_COPY, l, pre, resid, -1, l ? "resid_pre = previous resid_post" : "resid_pre = embed");
        resid = block(p, l, pre);
    }
    as_program_scope(p, -1);
    as_program_add_unembed(p, resid, W->out_norm_w, NULL, AS_NORM_RMS, c->eps, &W->output, NULL, 0);
    (void)err;
    return AS_OK;
}

const as_arch as_arch_deepseek2 = {
    .gguf_name = "deepseek2",
    .block_prefix = "blk.",
    .read_config = read_config,
    .load = load,
    .build = build,
};
