/* arch_hf: what each Hugging Face model_type becomes in a GGUF view (see
 * hf.h): config.json's keys as llama.cpp's "{arch}.*" keys, and HF's tensor
 * names as llama.cpp's, with the layout conversions llama.cpp's
 * convert_hf_to_gguf.py makes (GPT-2's Conv1D weights transposed, Llama's
 * q/k rows from rotate-half order to adjacent pairs). Like arch_llama2c.c
 * it names the architectures' tensors; nothing else outside arch_*.c does.
 * Here the decoders (GPT-2, Llama, Mistral, Qwen, Gemma) and the table of
 * families; src/arch_hf_encoders.c the families with an encoder. */
#include "hf_internal.h"
#include "tensor_names.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define BIG (1LL << 24)

/* ---------------------------------------------------------------- GPT-2 */

static int gpt2_map(as_hf *h, as_error *err)
{
    long long d, L, H, ctx, V, ff;
    double eps;
    if (as_hf_cfg_int(h, "n_embd", true, 0, 1, BIG, &d, err) ||
        as_hf_cfg_int(h, "n_layer", true, 0, 1, 4096, &L, err) ||
        as_hf_cfg_int(h, "n_head", true, 0, 1, 4096, &H, err) ||
        as_hf_cfg_int(h, "vocab_size", true, 0, 1, BIG, &V, err) ||
        as_hf_cfg_int(h, "n_ctx", false, 1024, 1, BIG, &ctx, err) ||
        as_hf_cfg_int(h, "n_positions", false, ctx, 1, BIG, &ctx, err) ||
        as_hf_cfg_int(h, "n_inner", false, 4 * d, 1, BIG, &ff, err) ||
        as_hf_cfg_num(h, "layer_norm_epsilon", false, 1e-5, 0, 1, &eps, err))
        return AS_ERR;
    json_t *act = json_object_get(h->config, "activation_function");
    if (act && !(json_is_string(act) && (!strcmp(json_string_value(act), "gelu_new") ||
                                         !strcmp(json_string_value(act), "gelu_pytorch_tanh"))))
        return as_error_set(err, "%s: activation_function '%.30s' is not read (gelu_new, gelu_pytorch_tanh: "
                            "GPT-2's tanh GELU)", h->config_path, json_is_string(act) ? json_string_value(act) : "?");
    if (d % H)
        return as_error_set(err, "%s: n_embd %lld is not a multiple of n_head %lld", h->config_path, d, H);
    bool scaled = true, by_layer = false, upcast = false;
    if (as_hf_cfg_bool(h, "scale_attn_weights", true, &scaled, err) ||
        as_hf_cfg_bool(h, "scale_attn_by_inverse_layer_idx", false, &by_layer, err) ||
        as_hf_cfg_bool(h, "reorder_and_upcast_attn", false, &upcast, err))
        return AS_ERR;
    if (!scaled || by_layer)
        return as_error_set(err, "%s: scale_attn_weights false or scale_attn_by_inverse_layer_idx true is not read "
                            "(arch gpt2 scales scores by 1/sqrt(d_head))", h->config_path);
    if (!as_hf_kv_u32(h, "gpt2.context_length", (uint32_t)ctx) ||
        !as_hf_kv_u32(h, "gpt2.embedding_length", (uint32_t)d) || !as_hf_kv_u32(h, "gpt2.block_count", (uint32_t)L) ||
        !as_hf_kv_u32(h, "gpt2.feed_forward_length", (uint32_t)ff) ||
        !as_hf_kv_u32(h, "gpt2.attention.head_count", (uint32_t)H) ||
        !as_hf_kv_f32(h, "gpt2.attention.layer_norm_epsilon", (float)eps))
        return as_hf_oom(h, err);
    h->alt_prefix = "transformer."; /* GPT2LMHeadModel's names */
    uint64_t D = (uint64_t)d, F = (uint64_t)ff;
    const as_hf_rule top[] = {
        {"wte.weight", AS_TN_TOKEN_EMBD ".weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D, "[vocab_size, n_embd]", false},
        {"wpe.weight", AS_TN_POS_EMBD ".weight", AS_HF_AS_IS, 0, 2, (uint64_t)ctx, D, "[n_positions, n_embd]", false},
        {"ln_f.weight", AS_TN_OUTPUT_NORM ".weight", AS_HF_AS_IS, 0, 1, D, 0, "[n_embd]", false},
        {"ln_f.bias", AS_TN_OUTPUT_NORM ".bias", AS_HF_AS_IS, 0, 1, D, 0, "[n_embd]", false},
        {"lm_head.weight", AS_TN_OUTPUT ".weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D, "[vocab_size, n_embd]", true},
    };
    /* Conv1D weights are [in, out]: transposed into llama.cpp's [out rows of in]. */
    const as_hf_rule blk[] = {
        {"h.%d.ln_1.weight", AS_TN_ATTN_NORM ".weight", AS_HF_AS_IS, 0, 1, D, 0, "[n_embd]", false},
        {"h.%d.ln_1.bias", AS_TN_ATTN_NORM ".bias", AS_HF_AS_IS, 0, 1, D, 0, "[n_embd]", false},
        {"h.%d.attn.c_attn.weight", AS_TN_ATTN_QKV ".weight", AS_HF_TRANSPOSE, 0, 2, D, 3 * D, "[n_embd, 3 x n_embd]",
         false},
        {"h.%d.attn.c_attn.bias", AS_TN_ATTN_QKV ".bias", AS_HF_AS_IS, 0, 1, 3 * D, 0, "[3 x n_embd]", false},
        {"h.%d.attn.c_proj.weight", AS_TN_ATTN_OUT ".weight", AS_HF_TRANSPOSE, 0, 2, D, D, "[n_embd, n_embd]",
         false},
        {"h.%d.attn.c_proj.bias", AS_TN_ATTN_OUT ".bias", AS_HF_AS_IS, 0, 1, D, 0, "[n_embd]", false},
        {"h.%d.ln_2.weight", AS_TN_FFN_NORM ".weight", AS_HF_AS_IS, 0, 1, D, 0, "[n_embd]", false},
        {"h.%d.ln_2.bias", AS_TN_FFN_NORM ".bias", AS_HF_AS_IS, 0, 1, D, 0, "[n_embd]", false},
        {"h.%d.mlp.c_fc.weight", AS_TN_FFN_UP ".weight", AS_HF_TRANSPOSE, 0, 2, D, F, "[n_embd, n_inner]", false},
        {"h.%d.mlp.c_fc.bias", AS_TN_FFN_UP ".bias", AS_HF_AS_IS, 0, 1, F, 0, "[n_inner]", false},
        {"h.%d.mlp.c_proj.weight", AS_TN_FFN_DOWN ".weight", AS_HF_TRANSPOSE, 0, 2, F, D, "[n_inner, n_embd]", false},
        {"h.%d.mlp.c_proj.bias", AS_TN_FFN_DOWN ".bias", AS_HF_AS_IS, 0, 1, D, 0, "[n_embd]", false},
    };
    if (as_hf_add_rules(h, top, sizeof top / sizeof top[0], 0, err))
        return AS_ERR;
    return as_hf_add_layer_rules(h, blk, sizeof blk / sizeof blk[0], (int)L, err);
}

/* The causal-mask buffers older GPT-2 checkpoints carry. */
static bool gpt2_ignored(const char *name)
{
    return as_hf_ends_with(name, ".attn.bias") || as_hf_ends_with(name, ".attn.masked_bias");
}

/* ---------------------------------------------------------------- Llama, Mistral, Qwen 2 and 3 */

/* Llama 3's per-frequency divisors, as convert_hf_to_gguf.py computes them
 * into rope_freqs.weight from rope_scaling. */
static void llama3_freqs(float *out, int half, double base, double factor, double low, double high, double orig)
{
    double low_wl = orig / low, high_wl = orig / high;
    for (int i = 0; i < half; i++) {
        double freq = 1.0 / pow(base, (2.0 * i) / (2.0 * half)), wl = 2 * M_PI / freq;
        if (wl < high_wl)
            out[i] = 1.0f;
        else if (wl > low_wl)
            out[i] = (float)factor;
        else {
            double smooth = (orig / wl - low) / (high - low);
            out[i] = (float)(1.0 / ((1 - smooth) / factor + smooth));
        }
    }
}

/* transformers 5 writes rope_theta and rope_scaling's keys together as
 * rope_parameters, per layer type where the types differ (Gemma 3:
 * full_attention, sliding_attention): the object for layer_type, NULL when
 * the file has none. */
static const json_t *rope_params(as_hf *h, const char *layer_type)
{
    const json_t *rp = as_hf_cfg_obj(h, "rope_parameters");
    const json_t *typed = json_object_get(rp, layer_type);
    return json_is_object(typed) ? typed : json_is_object(rp) && !json_object_get(rp, "full_attention") ? rp : NULL;
}

/* rope_theta, or rope_parameters' for layer_type (key: for messages) */
static int rope_base(as_hf *h, const char *key, const char *layer_type, double def, double *out, as_error *err)
{
    const json_t *rp = rope_params(h, layer_type), *b = json_object_get(rp, "rope_theta");
    if (as_hf_cfg_obj(h, key) || !b)
        return as_hf_cfg_num(h, key, false, def, 1.0000001, 1e30, out, err);
    if (!json_is_number(b) || !(json_number_value(b) > 1.0000001 && json_number_value(b) < 1e30))
        return as_error_set(err, "%s: rope_parameters (%s): rope_theta must be a number above 1", h->config_path,
                            layer_type);
    *out = json_number_value(b);
    return AS_OK;
}

static int rope_scaling(as_hf *h, const char *arch, int dh, double base, as_error *err)
{
    char ty_key[96], f_key[96], o_key[96];
    snprintf(ty_key, sizeof ty_key, "%s.rope.scaling.type", arch);
    snprintf(f_key, sizeof f_key, "%s.rope.scaling.factor", arch);
    snprintf(o_key, sizeof o_key, "%s.rope.scaling.original_context_length", arch);
    const json_t *rs = as_hf_cfg_obj(h, "rope_scaling");
    if (!rs)
        rs = rope_params(h, "full_attention");
    if (!rs)
        return AS_OK;
    json_t *ty = json_object_get(rs, "rope_type");
    if (!ty)
        ty = json_object_get(rs, "type");
    const char *type = json_string_value(ty);
    json_t *f = json_object_get(rs, "factor");
    double factor = json_is_number(f) ? json_number_value(f) : 0;
    if (!type)
        return as_error_set(err, "%s: rope_scaling needs a rope_type", h->config_path);
    if (!strcmp(type, "default"))
        return AS_OK;
    if (!(factor > 0 && factor < 1e6))
        return as_error_set(err, "%s: rope_scaling.factor must be a positive number", h->config_path);
    if (!strcmp(type, "linear"))
        return as_hf_kv_str(h, ty_key, "linear") &&
                       as_hf_kv_f32(h, f_key, (float)factor)
                   ? AS_OK
                   : as_hf_oom(h, err);
    json_t *o = json_object_get(rs, "original_max_position_embeddings");
    long long orig = json_is_integer(o) ? json_integer_value(o) : 0;
    if (!strcmp(type, "yarn")) {
        if (orig <= 0 || orig > BIG)
            return as_error_set(err, "%s: rope_scaling (yarn) needs original_max_position_embeddings", h->config_path);
        return as_hf_kv_str(h, ty_key, "yarn") &&
                       as_hf_kv_f32(h, f_key, (float)factor) &&
                       as_hf_kv_u32(h, o_key, (uint32_t)orig)
                   ? AS_OK
                   : as_hf_oom(h, err);
    }
    if (!strcmp(type, "llama3")) {
        json_t *lo = json_object_get(rs, "low_freq_factor"), *hi = json_object_get(rs, "high_freq_factor");
        double low = json_is_number(lo) ? json_number_value(lo) : 1.0, high = json_is_number(hi) ? json_number_value(hi) : 4.0;
        if (orig <= 0 || orig > BIG || !(low > 0 && high > low))
            return as_error_set(err, "%s: rope_scaling (llama3) needs original_max_position_embeddings and "
                                "0 < low_freq_factor < high_freq_factor", h->config_path);
        float freqs[4096];
        if (dh / 2 > 4096)
            return as_error_set(err, "%s: head_dim %d is too large", h->config_path, dh);
        llama3_freqs(freqs, dh / 2, base, factor, low, high, (double)orig);
        return as_hf_add_f32(h, AS_TN_ROPE_FREQS ".weight", freqs, (uint64_t)(dh / 2), err);
    }
    return as_error_set(err, "%s: rope_scaling type '%.20s' is not read (default, linear, yarn, llama3)",
                        h->config_path, type);
}

/* What tells the Llama-family files apart in HF's layout. */
typedef struct dec_opts {
    const char *arch;   /* llama.cpp's architecture, the keys' prefix */
    bool pairs;         /* rotary on adjacent pairs in llama.cpp: q/k rows permuted */
    bool qkv_bias;      /* q_proj, k_proj, v_proj have biases (Qwen 2) */
    bool qk_norm;       /* q_norm, k_norm per head (Qwen 3) */
} dec_opts;

static int dec_map(as_hf *h, const dec_opts *o, as_error *err)
{
    long long d, L, H, Hk, ff, V, ctx, dh, window = 0;
    double eps, base;
    bool tied, abias, mbias;
    if (as_hf_cfg_int(h, "hidden_size", true, 0, 1, BIG, &d, err) ||
        as_hf_cfg_int(h, "num_hidden_layers", true, 0, 1, 4096, &L, err) ||
        as_hf_cfg_int(h, "num_attention_heads", true, 0, 1, 4096, &H, err) ||
        as_hf_cfg_int(h, "num_key_value_heads", false, H, 1, H, &Hk, err) ||
        as_hf_cfg_int(h, "intermediate_size", true, 0, 1, BIG, &ff, err) ||
        as_hf_cfg_int(h, "vocab_size", true, 0, 1, BIG, &V, err) ||
        as_hf_cfg_int(h, "max_position_embeddings", false, 2048, 1, BIG, &ctx, err) ||
        as_hf_cfg_int(h, "head_dim", false, d / H, 2, 65536, &dh, err) ||
        as_hf_cfg_num(h, "rms_norm_eps", false, 1e-6, 0, 1, &eps, err) ||
        rope_base(h, "rope_theta", "full_attention", 10000.0, &base, err) ||
        as_hf_cfg_bool(h, "tie_word_embeddings", false, &tied, err) ||
        as_hf_cfg_bool(h, "attention_bias", false, &abias, err) || as_hf_cfg_bool(h, "mlp_bias", false, &mbias, err))
        return AS_ERR;
    json_t *act = json_object_get(h->config, "hidden_act");
    if (act && !(json_is_string(act) && !strcmp(json_string_value(act), "silu")))
        return as_error_set(err, "%s: hidden_act '%.30s' is not read (silu)", h->config_path,
                            json_is_string(act) ? json_string_value(act) : "?");
    if ((abias && !o->qkv_bias) || mbias)
        return as_error_set(err, "%s: attention_bias / mlp_bias true is not read yet", h->config_path);
    /* Mistral's window (Qwen's only when use_sliding_window is true) */
    bool use_window = true;
    long long mwl = L;
    if (as_hf_cfg_bool(h, "use_sliding_window", !o->qkv_bias && !o->qk_norm, &use_window, err) ||
        (use_window && as_hf_cfg_int(h, "sliding_window", false, 0, 0, BIG, &window, err)))
        return AS_ERR;
    /* Qwen windows only the layers from max_window_layers on (transformers' layer_types); the arch windows all */
    if (use_window && window > 0 && (o->qkv_bias || o->qk_norm) &&
        as_hf_cfg_int(h, "max_window_layers", false, 28, 0, BIG, &mwl, err))
        return AS_ERR;
    if (use_window && window > 0 && (o->qkv_bias || o->qk_norm) && mwl >= L)
        window = 0;
    else if (use_window && window > 0 && (o->qkv_bias || o->qk_norm) && mwl > 0)
        return as_error_set(err, "%s: use_sliding_window true with max_window_layers %lld (a window on layers %lld "
                            "and later only) is not read (%s windows every layer or none)", h->config_path, mwl, mwl,
                            o->arch);
    if (H % Hk || dh % 2)
        return as_error_set(err, "%s: num_attention_heads %lld must be a multiple of num_key_value_heads %lld, "
                            "head_dim %lld even", h->config_path, H, Hk, dh);
    char k[14][96];
    static const char *const suffix[14] = {
        "context_length", "embedding_length", "block_count", "feed_forward_length", "attention.head_count",
        "attention.head_count_kv", "attention.layer_norm_rms_epsilon", "rope.freq_base", "rope.dimension_count",
        "vocab_size", "attention.key_length", "attention.value_length", "attention.sliding_window", ""};
    for (int i = 0; i < 14; i++)
        snprintf(k[i], sizeof k[i], "%s.%s", o->arch, suffix[i]);
    if (!as_hf_kv_u32(h, k[0], (uint32_t)ctx) || !as_hf_kv_u32(h, k[1], (uint32_t)d) ||
        !as_hf_kv_u32(h, k[2], (uint32_t)L) || !as_hf_kv_u32(h, k[3], (uint32_t)ff) ||
        !as_hf_kv_u32(h, k[4], (uint32_t)H) || !as_hf_kv_u32(h, k[5], (uint32_t)Hk) ||
        !as_hf_kv_f32(h, k[6], (float)eps) || !as_hf_kv_f32(h, k[7], (float)base) ||
        !as_hf_kv_u32(h, k[8], (uint32_t)dh) || !as_hf_kv_u32(h, k[9], (uint32_t)V) ||
        (dh * H != d && (!as_hf_kv_u32(h, k[10], (uint32_t)dh) || !as_hf_kv_u32(h, k[11], (uint32_t)dh))) ||
        (window > 0 && !as_hf_kv_u32(h, k[12], (uint32_t)window)))
        return as_hf_oom(h, err);
    if (rope_scaling(h, o->arch, (int)dh, base, err))
        return AS_ERR;
    uint64_t D = (uint64_t)d, F = (uint64_t)ff, Q = (uint64_t)(H * dh), K = (uint64_t)(Hk * dh), DH = (uint64_t)dh;
    as_hf_xform qk = o->pairs ? AS_HF_PAIRS : AS_HF_AS_IS;
    const as_hf_rule top[] = {
        {"model.embed_tokens.weight", AS_TN_TOKEN_EMBD ".weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D,
         "[vocab_size, hidden_size]", false},
        {"model.norm.weight", AS_TN_OUTPUT_NORM ".weight", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]", false},
        {"lm_head.weight", AS_TN_OUTPUT ".weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D, "[vocab_size, hidden_size]", tied},
    };
    const as_hf_rule blk[] = {
        {"model.layers.%d.input_layernorm.weight", AS_TN_ATTN_NORM ".weight", AS_HF_AS_IS, 0, 1, D, 0,
         "[hidden_size]", false},
        {"model.layers.%d.self_attn.q_proj.weight", AS_TN_ATTN_Q ".weight", qk, (int)H, 2, Q, D,
         "[num_attention_heads x head_dim, hidden_size]", false},
        {"model.layers.%d.self_attn.k_proj.weight", AS_TN_ATTN_K ".weight", qk, (int)Hk, 2, K, D,
         "[num_key_value_heads x head_dim, hidden_size]", false},
        {"model.layers.%d.self_attn.v_proj.weight", AS_TN_ATTN_V ".weight", AS_HF_AS_IS, 0, 2, K, D,
         "[num_key_value_heads x head_dim, hidden_size]", false},
        {"model.layers.%d.self_attn.o_proj.weight", AS_TN_ATTN_OUT ".weight", AS_HF_AS_IS, 0, 2, D, Q,
         "[hidden_size, num_attention_heads x head_dim]", false},
        {"model.layers.%d.post_attention_layernorm.weight", AS_TN_FFN_NORM ".weight", AS_HF_AS_IS, 0, 1, D, 0,
         "[hidden_size]", false},
        {"model.layers.%d.mlp.gate_proj.weight", AS_TN_FFN_GATE ".weight", AS_HF_AS_IS, 0, 2, F, D,
         "[intermediate_size, hidden_size]", false},
        {"model.layers.%d.mlp.up_proj.weight", AS_TN_FFN_UP ".weight", AS_HF_AS_IS, 0, 2, F, D,
         "[intermediate_size, hidden_size]", false},
        {"model.layers.%d.mlp.down_proj.weight", AS_TN_FFN_DOWN ".weight", AS_HF_AS_IS, 0, 2, D, F,
         "[hidden_size, intermediate_size]", false},
    };
    const as_hf_rule bias[] = {
        {"model.layers.%d.self_attn.q_proj.bias", AS_TN_ATTN_Q ".bias", AS_HF_AS_IS, 0, 1, Q, 0,
         "[num_attention_heads x head_dim]", false},
        {"model.layers.%d.self_attn.k_proj.bias", AS_TN_ATTN_K ".bias", AS_HF_AS_IS, 0, 1, K, 0,
         "[num_key_value_heads x head_dim]", false},
        {"model.layers.%d.self_attn.v_proj.bias", AS_TN_ATTN_V ".bias", AS_HF_AS_IS, 0, 1, K, 0,
         "[num_key_value_heads x head_dim]", false},
    };
    const as_hf_rule qk_norm[] = {
        {"model.layers.%d.self_attn.q_norm.weight", AS_TN_ATTN_Q_NORM ".weight", AS_HF_AS_IS, 0, 1, DH, 0,
         "[head_dim]", false},
        {"model.layers.%d.self_attn.k_norm.weight", AS_TN_ATTN_K_NORM ".weight", AS_HF_AS_IS, 0, 1, DH, 0,
         "[head_dim]", false},
    };
    if (as_hf_add_rules(h, top, sizeof top / sizeof top[0], 0, err))
        return AS_ERR;
    for (int l = 0; l < (int)L; l++)
        if (as_hf_add_rules(h, blk, sizeof blk / sizeof blk[0], l, err) ||
            (o->qkv_bias && as_hf_add_rules(h, bias, sizeof bias / sizeof bias[0], l, err)) ||
            (o->qk_norm && as_hf_add_rules(h, qk_norm, sizeof qk_norm / sizeof qk_norm[0], l, err)))
            return AS_ERR;
    return AS_OK;
}

/* llama.cpp rotates Llama's and Mistral's pairs, Qwen's halves (NEOX). */
static int llama_map(as_hf *h, as_error *err)
{
    static const dec_opts o = {"llama", true, false, false};
    return dec_map(h, &o, err);
}

static int qwen2_map(as_hf *h, as_error *err)
{
    static const dec_opts o = {"qwen2", false, true, false};
    return dec_map(h, &o, err);
}

static int qwen3_map(as_hf *h, as_error *err)
{
    static const dec_opts o = {"qwen3", false, false, true};
    return dec_map(h, &o, err);
}

static bool llama_ignored(const char *name)
{
    return as_hf_ends_with(name, ".rotary_emb.inv_freq");
}

/* ---------------------------------------------------------------- Gemma 2 and 3 */

/* Gemma 1's, Gemma 2's and Gemma 3's text models: every norm stored as w for 1 + w;
 * NEOX rotary (HF's own order); windowed layers but every n-th (Gemma 2:
 * every other, from layer 0); the embeddings scaled by sqrt(hidden_size)
 * (the archs' own). Gemma 3: q/k norms, the windowed layers' own rotary
 * base, rope_scaling on the full layers, no soft-capping. Gemma 2: scores
 * and logits soft-capped (attn_logit_softcapping, final_logit_softcapping;
 * Gemma2Config's 50 and 30 when absent, none is not read), one rotary base,
 * no rope_scaling. Gemma 1: Gemma 2's without post-norms, caps or window. */
static int gemma_map(as_hf *h, int version, as_error *err)
{
    const char *arch = version == 1 ? "gemma" : version == 2 ? "gemma2" : "gemma3";
    char key[96];
#define GKEY(k) (snprintf(key, sizeof key, "%s.%s", arch, k), key)
    long long d, L, H, Hk, ff, V, ctx, dh, window, pattern;
    double eps, base, base_local, qscale;
    bool tied, bidir;
    /* Gemma 3: Gemma3TextConfig's defaults, which gemma-3-4b-it and larger leave their text_config to */
    bool req = version < 3;
    if (as_hf_cfg_int(h, "hidden_size", req, 2304, 1, BIG, &d, err) ||
        as_hf_cfg_int(h, "num_hidden_layers", req, 26, 1, 4096, &L, err) ||
        as_hf_cfg_int(h, "num_attention_heads", req, 8, 1, 4096, &H, err) ||
        as_hf_cfg_int(h, "num_key_value_heads", false, req ? H : 4, 1, H, &Hk, err) ||
        as_hf_cfg_int(h, "intermediate_size", req, 9216, 1, BIG, &ff, err) ||
        as_hf_cfg_int(h, "vocab_size", req, 262208, 1, BIG, &V, err) ||
        as_hf_cfg_int(h, "max_position_embeddings", false, 131072, 1, BIG, &ctx, err) ||
        as_hf_cfg_int(h, "head_dim", false, 256, 2, 65536, &dh, err) ||
        as_hf_cfg_int(h, "sliding_window", false, 4096, 1, BIG, &window, err) ||
        as_hf_cfg_int(h, "sliding_window_pattern", false, version == 2 ? 2 : 6, 1, 4096, &pattern, err) ||
        as_hf_cfg_num(h, "rms_norm_eps", false, 1e-6, 0, 1, &eps, err) ||
        rope_base(h, "rope_theta", "full_attention", version < 3 ? 10000.0 : 1000000.0, &base, err) ||
        rope_base(h, "rope_local_base_freq", "sliding_attention", version < 3 ? base : 10000.0, &base_local, err) ||
        as_hf_cfg_num(h, "query_pre_attn_scalar", false, version < 3 ? (double)dh : 256.0, 0, 1e30, &qscale, err) ||
        as_hf_cfg_bool(h, "tie_word_embeddings", true, &tied, err) ||
        as_hf_cfg_bool(h, "use_bidirectional_attention", false, &bidir, err))
        return AS_ERR;
    h->vocab_default = version < 3 ? 0 : 262208;
    if (bidir)
        return as_error_set(err, "%s: use_bidirectional_attention true (an embedding model's unmasked attention) is "
                            "not read for %s (its arch is causal)", h->config_path, arch);
    /* null or absent: transformers runs gelu_pytorch_tanh (Gemma 1's files have hidden_act "gelu" beside it) */
    json_t *act = json_object_get(h->config, "hidden_activation");
    if (act && !json_is_null(act) && !(json_is_string(act) && !strcmp(json_string_value(act), "gelu_pytorch_tanh")))
        return as_error_set(err, "%s: hidden_activation '%.30s' is not read (gelu_pytorch_tanh)", h->config_path,
                            json_is_string(act) ? json_string_value(act) : "?");
    /* arch gemma2 scales by 1/sqrt(hidden_size / heads) for the 46-layer 27B, as llama.cpp does */
    bool big = version == 2 && L == 46;
    double want = big ? (double)(d / H) : (double)dh;
    if (qscale != want)
        return as_error_set(err, "%s: query_pre_attn_scalar %g other than %s %g is not read yet", h->config_path,
                            qscale, big ? "hidden_size / num_attention_heads" : "head_dim", want);
    static const char *const caps[] = {"attn_logit_softcapping", "final_logit_softcapping"};
    double cap[2] = {50.0, 30.0};
    for (int i = 0; i < 2; i++) {
        const json_t *c = json_object_get(h->config, caps[i]);
        if (version != 2 && as_hf_cfg_obj(h, caps[i]))
            return as_error_set(err, "%s: %s is not read for %s (Gemma %d has none)", h->config_path, caps[i], arch,
                                version);
        if (version == 2 && c && json_is_null(c))
            return as_error_set(err, "%s: %s null (no cap) is not read for gemma2 (its arch always caps)",
                                h->config_path, caps[i]);
        if (version == 2 && as_hf_cfg_num(h, caps[i], false, cap[i], 1e-6, 1e30, &cap[i], err))
            return AS_ERR;
    }
    const char *full_type = json_string_value(json_object_get(rope_params(h, "full_attention"), "rope_type"));
    const char *local_type = json_string_value(json_object_get(rope_params(h, "sliding_attention"), "rope_type"));
    if (version < 3 && (as_hf_cfg_obj(h, "rope_scaling") || (full_type && strcmp(full_type, "default"))))
        return as_error_set(err, "%s: rope_scaling is not read for %s", h->config_path, arch);
    if (local_type && strcmp(local_type, "default") && rope_params(h, "sliding_attention") != rope_params(h, "full_attention"))
        return as_error_set(err, "%s: rope_parameters.sliding_attention.rope_type '%.20s' is not read (%s scales only "
                            "the full layers' rotary)", h->config_path, local_type, arch);
    /* transformers' newer files list each layer's kind: one full layer in every n */
    const json_t *types = as_hf_cfg_obj(h, "layer_types");
    if (types) {
        size_t n = json_array_size(types), first = n;
        for (size_t i = 0; i < n && first == n; i++)
            if (json_is_string(json_array_get(types, i)) &&
                !strcmp(json_string_value(json_array_get(types, i)), "full_attention"))
                first = i;
        pattern = (long long)first + 1;
        for (size_t i = 0; i < n; i++) {
            const char *k = json_string_value(json_array_get(types, i));
            bool full = k && !strcmp(k, "full_attention");
            if (!k || full != ((long long)(i + 1) % pattern == 0))
                return as_error_set(err, "%s: layer_types: layer %zu breaks the pattern of one full_attention layer "
                                    "in %lld", h->config_path, i, pattern);
        }
    }
    if (H % Hk || dh % 2)
        return as_error_set(err, "%s: num_attention_heads %lld must be a multiple of num_key_value_heads %lld, "
                            "head_dim %lld even", h->config_path, H, Hk, dh);
    if (!as_hf_kv_u32(h, GKEY("context_length"), (uint32_t)ctx) ||
        !as_hf_kv_u32(h, GKEY("embedding_length"), (uint32_t)d) ||
        !as_hf_kv_u32(h, GKEY("block_count"), (uint32_t)L) ||
        !as_hf_kv_u32(h, GKEY("feed_forward_length"), (uint32_t)ff) ||
        !as_hf_kv_u32(h, GKEY("attention.head_count"), (uint32_t)H) ||
        !as_hf_kv_u32(h, GKEY("attention.head_count_kv"), (uint32_t)Hk) ||
        !as_hf_kv_u32(h, GKEY("rope.dimension_count"), (uint32_t)dh) ||
        !as_hf_kv_u32(h, GKEY("vocab_size"), (uint32_t)V) ||
        !as_hf_kv_u32(h, GKEY("attention.key_length"), (uint32_t)dh) ||
        !as_hf_kv_u32(h, GKEY("attention.value_length"), (uint32_t)dh) ||
        !as_hf_kv_f32(h, GKEY("attention.layer_norm_rms_epsilon"), (float)eps) ||
        !as_hf_kv_f32(h, GKEY("rope.freq_base"), (float)base) ||
        (version > 1 && !(as_hf_kv_u32(h, GKEY("attention.sliding_window"), (uint32_t)window) &&
                          as_hf_kv_u32(h, GKEY("attention.sliding_window_pattern"), (uint32_t)pattern) &&
                          as_hf_kv_f32(h, GKEY("rope.freq_base_swa"), (float)base_local))) ||
        (version == 2 && !(as_hf_kv_f32(h, GKEY("attn_logit_softcapping"), (float)cap[0]) &&
                           as_hf_kv_f32(h, GKEY("final_logit_softcapping"), (float)cap[1]))))
        return as_hf_oom(h, err);
    /* rope_scaling (linear) applies to the full layers, as arch gemma3 applies it */
    if (rope_scaling(h, arch, (int)dh, base, err))
        return AS_ERR;
    uint64_t D = (uint64_t)d, F = (uint64_t)ff, Q = (uint64_t)(H * dh), K = (uint64_t)(Hk * dh), DH = (uint64_t)dh;
    const as_hf_rule top[] = {
        {"model.embed_tokens.weight", AS_TN_TOKEN_EMBD ".weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D,
         "[vocab_size, hidden_size]", false},
        {"model.norm.weight", AS_TN_OUTPUT_NORM ".weight", AS_HF_PLUS_ONE, 0, 1, D, 0, "[hidden_size]", false},
        {"lm_head.weight", AS_TN_OUTPUT ".weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D, "[vocab_size, hidden_size]", tied},
    };
    const as_hf_rule blk[] = {
        {"model.layers.%d.input_layernorm.weight", AS_TN_ATTN_NORM ".weight", AS_HF_PLUS_ONE, 0, 1, D, 0,
         "[hidden_size]", false},
        {"model.layers.%d.self_attn.q_proj.weight", AS_TN_ATTN_Q ".weight", AS_HF_AS_IS, 0, 2, Q, D,
         "[num_attention_heads x head_dim, hidden_size]", false},
        {"model.layers.%d.self_attn.k_proj.weight", AS_TN_ATTN_K ".weight", AS_HF_AS_IS, 0, 2, K, D,
         "[num_key_value_heads x head_dim, hidden_size]", false},
        {"model.layers.%d.self_attn.v_proj.weight", AS_TN_ATTN_V ".weight", AS_HF_AS_IS, 0, 2, K, D,
         "[num_key_value_heads x head_dim, hidden_size]", false},
        {"model.layers.%d.self_attn.o_proj.weight", AS_TN_ATTN_OUT ".weight", AS_HF_AS_IS, 0, 2, D, Q,
         "[hidden_size, num_attention_heads x head_dim]", false},
        {"model.layers.%d.post_attention_layernorm.weight", AS_TN_ATTN_POST_NORM ".weight", AS_HF_PLUS_ONE, 0, 1,
         D, 0, "[hidden_size]", false},
        {"model.layers.%d.pre_feedforward_layernorm.weight", AS_TN_FFN_NORM ".weight", AS_HF_PLUS_ONE, 0, 1, D, 0,
         "[hidden_size]", false},
        {"model.layers.%d.post_feedforward_layernorm.weight", AS_TN_FFN_POST_NORM ".weight", AS_HF_PLUS_ONE, 0, 1, D,
         0, "[hidden_size]", false},
        {"model.layers.%d.mlp.gate_proj.weight", AS_TN_FFN_GATE ".weight", AS_HF_AS_IS, 0, 2, F, D,
         "[intermediate_size, hidden_size]", false},
        {"model.layers.%d.mlp.up_proj.weight", AS_TN_FFN_UP ".weight", AS_HF_AS_IS, 0, 2, F, D,
         "[intermediate_size, hidden_size]", false},
        {"model.layers.%d.mlp.down_proj.weight", AS_TN_FFN_DOWN ".weight", AS_HF_AS_IS, 0, 2, D, F,
         "[hidden_size, intermediate_size]", false},
    };
    /* Gemma 1: a norm before attention and one before the MLP (post_attention_layernorm, as Llama names it) */
    const as_hf_rule blk1[] = {
        blk[0], blk[1], blk[2], blk[3], blk[4],
        {"model.layers.%d.post_attention_layernorm.weight", AS_TN_FFN_NORM ".weight", AS_HF_PLUS_ONE, 0, 1, D, 0,
         "[hidden_size]", false},
        blk[8], blk[9], blk[10],
    };
    const as_hf_rule qk[] = {
        {"model.layers.%d.self_attn.q_norm.weight", AS_TN_ATTN_Q_NORM ".weight", AS_HF_PLUS_ONE, 0, 1, DH, 0,
         "[head_dim]", false},
        {"model.layers.%d.self_attn.k_norm.weight", AS_TN_ATTN_K_NORM ".weight", AS_HF_PLUS_ONE, 0, 1, DH, 0,
         "[head_dim]", false},
    };
#undef GKEY
    if (as_hf_add_rules(h, top, sizeof top / sizeof top[0], 0, err) ||
        (version == 1 ? as_hf_add_layer_rules(h, blk1, sizeof blk1 / sizeof blk1[0], (int)L, err)
                      : as_hf_add_layer_rules(h, blk, sizeof blk / sizeof blk[0], (int)L, err)))
        return AS_ERR;
    return version == 3 ? as_hf_add_layer_rules(h, qk, 2, (int)L, err) : AS_OK;
}

static int gemma1_map(as_hf *h, as_error *err) { return gemma_map(h, 1, err); }
static int gemma2_map(as_hf *h, as_error *err) { return gemma_map(h, 2, err); }
static int gemma3_map(as_hf *h, as_error *err) { return gemma_map(h, 3, err); }

/* ---------------------------------------------------------------- the table */

static const as_hf_family FAMILIES[] = {
    {"gpt2", "gpt2", gpt2_map, gpt2_ignored, false},
    {"llama", "llama", llama_map, llama_ignored, false},
    {"mistral", "llama", llama_map, llama_ignored, false}, /* as llama.cpp converts it */
    {"qwen2", "qwen2", qwen2_map, llama_ignored, false},
    {"qwen3", "qwen3", qwen3_map, llama_ignored, false},
    {"bert", "bert", as_hf_bert_map, as_hf_bert_ignored, false},
    {"gemma", "gemma", gemma1_map, llama_ignored, false},
    {"gemma2", "gemma2", gemma2_map, llama_ignored, false},
    {"gemma3_text", "gemma3", gemma3_map, llama_ignored, false},
    {"t5", "t5", as_hf_t5_map, as_hf_t5_ignored, false},
    {"vit", "vit", as_hf_vit_map, as_hf_vit_ignored, true},
};

/* ---------------------------------------------------------------- multimodal wrappers */

/* Gemma3ForConditionalGeneration's SigLIP tower and projector, as the hub's
 * files name them and as transformers >= 4.52 saves them. */
static bool gemma3_other(const char *name)
{
    return !strncmp(name, "vision_tower.", 13) || !strncmp(name, "multi_modal_projector.", 22) ||
           !strncmp(name, "model.vision_tower.", 19) || !strncmp(name, "model.multi_modal_projector.", 28);
}

static const as_hf_wrapper WRAPPERS[] = {
    {"gemma3", "gemma3_text", "language_model.", "model.language_model.", gemma3_other,
     "Hugging Face directory: config.json's text_config, safetensors, tokenizer.json: the language model of a "
     "Gemma 3 with vision (its vision tower is not read)"},
};

const as_hf_wrapper *as_hf_wrapper_find(const char *model_type)
{
    for (size_t i = 0; model_type && i < sizeof WRAPPERS / sizeof WRAPPERS[0]; i++)
        if (!strcmp(WRAPPERS[i].model_type, model_type))
            return &WRAPPERS[i];
    return NULL;
}

const as_hf_family *as_hf_family_find(const char *model_type)
{
    for (size_t i = 0; i < sizeof FAMILIES / sizeof FAMILIES[0]; i++)
        if (!strcmp(FAMILIES[i].model_type, model_type))
            return &FAMILIES[i];
    return NULL;
}

const char *as_hf_family_names(void)
{
    return "gpt2, llama, mistral, qwen2, qwen3, gemma, gemma2, gemma3_text, gemma3 (its language model), bert, t5, "
           "vit";
}
