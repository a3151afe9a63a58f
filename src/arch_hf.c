/* arch_hf: what each Hugging Face model_type becomes in a GGUF view (see
 * hf.h): config.json's keys as llama.cpp's "{arch}.*" keys, and HF's tensor
 * names as llama.cpp's, with the layout conversions llama.cpp's
 * convert_hf_to_gguf.py makes (GPT-2's Conv1D weights transposed, Llama's
 * q/k rows from rotate-half order to adjacent pairs). Like arch_llama2c.c
 * it names the architectures' tensors; nothing else outside arch_*.c does. */
#include "hf_internal.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define BIG (1LL << 24)

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

/* One tensor: HF name (printf'd with the layer), GGUF name, conversion,
 * HF shape from config.json's numbers and how to say it. */
typedef struct rule {
    const char *hf, *gguf;
    as_hf_xform x;
    int heads;          /* for AS_HF_PAIRS */
    uint32_t n_dims;
    uint64_t d0, d1;
    const char *what;
    bool optional;
} rule;

static int add_rules(as_hf *h, const rule *r, size_t n, int layer, as_error *err)
{
    for (size_t i = 0; i < n; i++) {
        char hf[160], gg[160];
        snprintf(hf, sizeof hf, r[i].hf, layer);
        snprintf(gg, sizeof gg, r[i].gguf, layer);
        uint64_t want[2] = {r[i].d0, r[i].d1};
        if (as_hf_add(h, hf, gg, r[i].x, r[i].heads, r[i].n_dims, want, r[i].what, r[i].optional, NULL, err))
            return AS_ERR;
    }
    return AS_OK;
}

/* The same rules for each of n_layer blocks. */
static int add_layer_rules(as_hf *h, const rule *r, size_t n, int n_layer, as_error *err)
{
    for (int l = 0; l < n_layer; l++)
        if (add_rules(h, r, n, l, err))
            return AS_ERR;
    return AS_OK;
}

static int oom(as_hf *h, as_error *err)
{
    return as_error_set(err, "%s: out of memory", h->dir);
}

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
        return oom(h, err);
    h->alt_prefix = "transformer."; /* GPT2LMHeadModel's names */
    uint64_t D = (uint64_t)d, F = (uint64_t)ff;
    const rule top[] = {
        {"wte.weight", "token_embd.weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D, "[vocab_size, n_embd]", false},
        {"wpe.weight", "position_embd.weight", AS_HF_AS_IS, 0, 2, (uint64_t)ctx, D, "[n_positions, n_embd]", false},
        {"ln_f.weight", "output_norm.weight", AS_HF_AS_IS, 0, 1, D, 0, "[n_embd]", false},
        {"ln_f.bias", "output_norm.bias", AS_HF_AS_IS, 0, 1, D, 0, "[n_embd]", false},
        {"lm_head.weight", "output.weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D, "[vocab_size, n_embd]", true},
    };
    /* Conv1D weights are [in, out]: transposed into llama.cpp's [out rows of in]. */
    const rule blk[] = {
        {"h.%d.ln_1.weight", "blk.%d.attn_norm.weight", AS_HF_AS_IS, 0, 1, D, 0, "[n_embd]", false},
        {"h.%d.ln_1.bias", "blk.%d.attn_norm.bias", AS_HF_AS_IS, 0, 1, D, 0, "[n_embd]", false},
        {"h.%d.attn.c_attn.weight", "blk.%d.attn_qkv.weight", AS_HF_TRANSPOSE, 0, 2, D, 3 * D, "[n_embd, 3 x n_embd]",
         false},
        {"h.%d.attn.c_attn.bias", "blk.%d.attn_qkv.bias", AS_HF_AS_IS, 0, 1, 3 * D, 0, "[3 x n_embd]", false},
        {"h.%d.attn.c_proj.weight", "blk.%d.attn_output.weight", AS_HF_TRANSPOSE, 0, 2, D, D, "[n_embd, n_embd]",
         false},
        {"h.%d.attn.c_proj.bias", "blk.%d.attn_output.bias", AS_HF_AS_IS, 0, 1, D, 0, "[n_embd]", false},
        {"h.%d.ln_2.weight", "blk.%d.ffn_norm.weight", AS_HF_AS_IS, 0, 1, D, 0, "[n_embd]", false},
        {"h.%d.ln_2.bias", "blk.%d.ffn_norm.bias", AS_HF_AS_IS, 0, 1, D, 0, "[n_embd]", false},
        {"h.%d.mlp.c_fc.weight", "blk.%d.ffn_up.weight", AS_HF_TRANSPOSE, 0, 2, D, F, "[n_embd, n_inner]", false},
        {"h.%d.mlp.c_fc.bias", "blk.%d.ffn_up.bias", AS_HF_AS_IS, 0, 1, F, 0, "[n_inner]", false},
        {"h.%d.mlp.c_proj.weight", "blk.%d.ffn_down.weight", AS_HF_TRANSPOSE, 0, 2, F, D, "[n_inner, n_embd]", false},
        {"h.%d.mlp.c_proj.bias", "blk.%d.ffn_down.bias", AS_HF_AS_IS, 0, 1, D, 0, "[n_embd]", false},
    };
    if (add_rules(h, top, sizeof top / sizeof top[0], 0, err))
        return AS_ERR;
    return add_layer_rules(h, blk, sizeof blk / sizeof blk[0], (int)L, err);
}

/* The causal-mask buffers older GPT-2 checkpoints carry. */
static bool gpt2_ignored(const char *name)
{
    return ends_with(name, ".attn.bias") || ends_with(name, ".attn.masked_bias");
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
                   : oom(h, err);
    json_t *o = json_object_get(rs, "original_max_position_embeddings");
    long long orig = json_is_integer(o) ? json_integer_value(o) : 0;
    if (!strcmp(type, "yarn")) {
        if (orig <= 0 || orig > BIG)
            return as_error_set(err, "%s: rope_scaling (yarn) needs original_max_position_embeddings", h->config_path);
        return as_hf_kv_str(h, ty_key, "yarn") &&
                       as_hf_kv_f32(h, f_key, (float)factor) &&
                       as_hf_kv_u32(h, o_key, (uint32_t)orig)
                   ? AS_OK
                   : oom(h, err);
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
        return as_hf_add_f32(h, "rope_freqs.weight", freqs, (uint64_t)(dh / 2), err);
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
        return oom(h, err);
    if (rope_scaling(h, o->arch, (int)dh, base, err))
        return AS_ERR;
    uint64_t D = (uint64_t)d, F = (uint64_t)ff, Q = (uint64_t)(H * dh), K = (uint64_t)(Hk * dh), DH = (uint64_t)dh;
    as_hf_xform qk = o->pairs ? AS_HF_PAIRS : AS_HF_AS_IS;
    const rule top[] = {
        {"model.embed_tokens.weight", "token_embd.weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D,
         "[vocab_size, hidden_size]", false},
        {"model.norm.weight", "output_norm.weight", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]", false},
        {"lm_head.weight", "output.weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D, "[vocab_size, hidden_size]", tied},
    };
    const rule blk[] = {
        {"model.layers.%d.input_layernorm.weight", "blk.%d.attn_norm.weight", AS_HF_AS_IS, 0, 1, D, 0,
         "[hidden_size]", false},
        {"model.layers.%d.self_attn.q_proj.weight", "blk.%d.attn_q.weight", qk, (int)H, 2, Q, D,
         "[num_attention_heads x head_dim, hidden_size]", false},
        {"model.layers.%d.self_attn.k_proj.weight", "blk.%d.attn_k.weight", qk, (int)Hk, 2, K, D,
         "[num_key_value_heads x head_dim, hidden_size]", false},
        {"model.layers.%d.self_attn.v_proj.weight", "blk.%d.attn_v.weight", AS_HF_AS_IS, 0, 2, K, D,
         "[num_key_value_heads x head_dim, hidden_size]", false},
        {"model.layers.%d.self_attn.o_proj.weight", "blk.%d.attn_output.weight", AS_HF_AS_IS, 0, 2, D, Q,
         "[hidden_size, num_attention_heads x head_dim]", false},
        {"model.layers.%d.post_attention_layernorm.weight", "blk.%d.ffn_norm.weight", AS_HF_AS_IS, 0, 1, D, 0,
         "[hidden_size]", false},
        {"model.layers.%d.mlp.gate_proj.weight", "blk.%d.ffn_gate.weight", AS_HF_AS_IS, 0, 2, F, D,
         "[intermediate_size, hidden_size]", false},
        {"model.layers.%d.mlp.up_proj.weight", "blk.%d.ffn_up.weight", AS_HF_AS_IS, 0, 2, F, D,
         "[intermediate_size, hidden_size]", false},
        {"model.layers.%d.mlp.down_proj.weight", "blk.%d.ffn_down.weight", AS_HF_AS_IS, 0, 2, D, F,
         "[hidden_size, intermediate_size]", false},
    };
    const rule bias[] = {
        {"model.layers.%d.self_attn.q_proj.bias", "blk.%d.attn_q.bias", AS_HF_AS_IS, 0, 1, Q, 0,
         "[num_attention_heads x head_dim]", false},
        {"model.layers.%d.self_attn.k_proj.bias", "blk.%d.attn_k.bias", AS_HF_AS_IS, 0, 1, K, 0,
         "[num_key_value_heads x head_dim]", false},
        {"model.layers.%d.self_attn.v_proj.bias", "blk.%d.attn_v.bias", AS_HF_AS_IS, 0, 1, K, 0,
         "[num_key_value_heads x head_dim]", false},
    };
    const rule qk_norm[] = {
        {"model.layers.%d.self_attn.q_norm.weight", "blk.%d.attn_q_norm.weight", AS_HF_AS_IS, 0, 1, DH, 0,
         "[head_dim]", false},
        {"model.layers.%d.self_attn.k_norm.weight", "blk.%d.attn_k_norm.weight", AS_HF_AS_IS, 0, 1, DH, 0,
         "[head_dim]", false},
    };
    if (add_rules(h, top, sizeof top / sizeof top[0], 0, err))
        return AS_ERR;
    for (int l = 0; l < (int)L; l++)
        if (add_rules(h, blk, sizeof blk / sizeof blk[0], l, err) ||
            (o->qkv_bias && add_rules(h, bias, sizeof bias / sizeof bias[0], l, err)) ||
            (o->qk_norm && add_rules(h, qk_norm, sizeof qk_norm / sizeof qk_norm[0], l, err)))
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
    return ends_with(name, ".rotary_emb.inv_freq");
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
        return oom(h, err);
    /* rope_scaling (linear) applies to the full layers, as arch gemma3 applies it */
    if (rope_scaling(h, arch, (int)dh, base, err))
        return AS_ERR;
    uint64_t D = (uint64_t)d, F = (uint64_t)ff, Q = (uint64_t)(H * dh), K = (uint64_t)(Hk * dh), DH = (uint64_t)dh;
    const rule top[] = {
        {"model.embed_tokens.weight", "token_embd.weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D,
         "[vocab_size, hidden_size]", false},
        {"model.norm.weight", "output_norm.weight", AS_HF_PLUS_ONE, 0, 1, D, 0, "[hidden_size]", false},
        {"lm_head.weight", "output.weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D, "[vocab_size, hidden_size]", tied},
    };
    const rule blk[] = {
        {"model.layers.%d.input_layernorm.weight", "blk.%d.attn_norm.weight", AS_HF_PLUS_ONE, 0, 1, D, 0,
         "[hidden_size]", false},
        {"model.layers.%d.self_attn.q_proj.weight", "blk.%d.attn_q.weight", AS_HF_AS_IS, 0, 2, Q, D,
         "[num_attention_heads x head_dim, hidden_size]", false},
        {"model.layers.%d.self_attn.k_proj.weight", "blk.%d.attn_k.weight", AS_HF_AS_IS, 0, 2, K, D,
         "[num_key_value_heads x head_dim, hidden_size]", false},
        {"model.layers.%d.self_attn.v_proj.weight", "blk.%d.attn_v.weight", AS_HF_AS_IS, 0, 2, K, D,
         "[num_key_value_heads x head_dim, hidden_size]", false},
        {"model.layers.%d.self_attn.o_proj.weight", "blk.%d.attn_output.weight", AS_HF_AS_IS, 0, 2, D, Q,
         "[hidden_size, num_attention_heads x head_dim]", false},
        {"model.layers.%d.post_attention_layernorm.weight", "blk.%d.post_attention_norm.weight", AS_HF_PLUS_ONE, 0, 1,
         D, 0, "[hidden_size]", false},
        {"model.layers.%d.pre_feedforward_layernorm.weight", "blk.%d.ffn_norm.weight", AS_HF_PLUS_ONE, 0, 1, D, 0,
         "[hidden_size]", false},
        {"model.layers.%d.post_feedforward_layernorm.weight", "blk.%d.post_ffw_norm.weight", AS_HF_PLUS_ONE, 0, 1, D,
         0, "[hidden_size]", false},
        {"model.layers.%d.mlp.gate_proj.weight", "blk.%d.ffn_gate.weight", AS_HF_AS_IS, 0, 2, F, D,
         "[intermediate_size, hidden_size]", false},
        {"model.layers.%d.mlp.up_proj.weight", "blk.%d.ffn_up.weight", AS_HF_AS_IS, 0, 2, F, D,
         "[intermediate_size, hidden_size]", false},
        {"model.layers.%d.mlp.down_proj.weight", "blk.%d.ffn_down.weight", AS_HF_AS_IS, 0, 2, D, F,
         "[hidden_size, intermediate_size]", false},
    };
    /* Gemma 1: a norm before attention and one before the MLP (post_attention_layernorm, as Llama names it) */
    const rule blk1[] = {
        blk[0], blk[1], blk[2], blk[3], blk[4],
        {"model.layers.%d.post_attention_layernorm.weight", "blk.%d.ffn_norm.weight", AS_HF_PLUS_ONE, 0, 1, D, 0,
         "[hidden_size]", false},
        blk[8], blk[9], blk[10],
    };
    const rule qk[] = {
        {"model.layers.%d.self_attn.q_norm.weight", "blk.%d.attn_q_norm.weight", AS_HF_PLUS_ONE, 0, 1, DH, 0,
         "[head_dim]", false},
        {"model.layers.%d.self_attn.k_norm.weight", "blk.%d.attn_k_norm.weight", AS_HF_PLUS_ONE, 0, 1, DH, 0,
         "[head_dim]", false},
    };
#undef GKEY
    if (add_rules(h, top, sizeof top / sizeof top[0], 0, err) ||
        (version == 1 ? add_layer_rules(h, blk1, sizeof blk1 / sizeof blk1[0], (int)L, err)
                      : add_layer_rules(h, blk, sizeof blk / sizeof blk[0], (int)L, err)))
        return AS_ERR;
    return version == 3 ? add_layer_rules(h, qk, 2, (int)L, err) : AS_OK;
}

static int gemma1_map(as_hf *h, as_error *err) { return gemma_map(h, 1, err); }
static int gemma2_map(as_hf *h, as_error *err) { return gemma_map(h, 2, err); }
static int gemma3_map(as_hf *h, as_error *err) { return gemma_map(h, 3, err); }

/* ---------------------------------------------------------------- BERT */

/* A sentence-transformers Pooling module's config.json: one mode, as
 * sentence-transformers pools (mean and mean_sqrt_len over every token of
 * the one sequence: its attention mask is all ones), mean, CLS and
 * last-token as llama.cpp's pooling_type values, max and mean_sqrt_len in
 * our key (*ours). Several modes (sentence-transformers concatenates them)
 * or a weighted mean are refused by name. */
static int pooling_config(as_hf *h, const char *path, uint32_t *pooling, const char **ours, as_error *err)
{
    json_t *j = as_hf_load_json(h, path, err);
    if (!j)
        return AS_ERR;
    static const struct {
        const char *key;
        uint32_t v;
        const char *ours;
    } modes[] = {{"pooling_mode_mean_tokens", 1, NULL},         {"pooling_mode_cls_token", 2, NULL},
                 {"pooling_mode_lasttoken", 3, NULL},           {"pooling_mode_max_tokens", 0, "max"},
                 {"pooling_mode_mean_sqrt_len_tokens", 0, "mean_sqrt_len"},
                 {"pooling_mode_weightedmean_tokens", 0, "weightedmean"}};
    const char *first = NULL;
    int rc = AS_OK;
    for (size_t i = 0; i < sizeof modes / sizeof modes[0] && rc == AS_OK; i++) {
        if (!json_is_true(json_object_get(j, modes[i].key)))
            continue;
        if (first)
            rc = as_error_set(err, "%s: %s and %s are both true (sentence-transformers concatenates the pooled "
                              "vectors; attnscope pools one way)", path, first, modes[i].key);
        else if (modes[i].ours && !strcmp(modes[i].ours, "weightedmean"))
            rc = as_error_set(err, "%s: %s is not run (mean, cls, lasttoken, max, mean_sqrt_len are)", path,
                              modes[i].key);
        first = modes[i].key;
        *pooling = modes[i].v;
        *ours = modes[i].ours;
    }
    json_decref(j);
    (void)h;
    return rc;
}

/* sentence-transformers' modules.json: the Transformer at the directory's
 * top, then a Pooling module (its config.json) and optionally Normalize.
 * Without modules.json: 1_Pooling/config.json when there, as llama.cpp's
 * converter reads it (absent: no pooling). Another module (Dense, ...) is
 * refused by name: its output would not be the one sentence-transformers
 * gives. */
static int bert_pooling(as_hf *h, uint32_t *pooling, const char **ours, bool *normalize, as_error *err)
{
    char path[4200];
    *pooling = 0, *ours = NULL, *normalize = false;
    snprintf(path, sizeof path, "%s/modules.json", h->dir);
    if (access(path, F_OK) != 0) {
        snprintf(path, sizeof path, "%s/1_Pooling/config.json", h->dir);
        if (access(path, F_OK) != 0)
            return AS_OK;
        return pooling_config(h, path, pooling, ours, err);
    }
    json_t *mods = as_hf_read_json(h, path, err);
    if (!mods)
        return AS_ERR;
    if (!json_is_array(mods)) {
        json_decref(mods);
        return as_error_set(err, "%s: not a JSON array of modules", path);
    }
    size_t i;
    json_t *m;
    int rc = AS_OK;
    json_array_foreach(mods, i, m) {
        const char *type = json_string_value(json_object_get(m, "type")),
                   *sub = json_string_value(json_object_get(m, "path"));
        const char *dot = type ? strrchr(type, '.') : NULL, *name = dot ? dot + 1 : type;
        if (!name || !sub || strlen(sub) > 200 || strstr(sub, "..")) {
            rc = as_error_set(err, "%s: module %zu needs a type and a path inside the directory", path, i);
        } else if (!strcmp(name, "Transformer")) {
            if (i != 0 || sub[0])
                rc = as_error_set(err, "%s: module %zu: the Transformer at '%s' (attnscope reads it from the "
                                  "directory's top, module 0)", path, i, sub);
        } else if (!strcmp(name, "Pooling")) {
            char cfg[4200];
            snprintf(cfg, sizeof cfg, "%s/%s/config.json", h->dir, sub);
            rc = pooling_config(h, cfg, pooling, ours, err);
        } else if (!strcmp(name, "Normalize")) {
            *normalize = true;
        } else {
            rc = as_error_set(err, "%s: module %zu (%.80s) is not run (Transformer, Pooling, Normalize are): the "
                              "embedding would not be sentence-transformers'", path, i, type);
        }
        if (rc)
            break;
    }
    json_decref(mods);
    return rc;
}

static int bert_map(as_hf *h, as_error *err)
{
    long long d, L, H, ff, V, ctx, types;
    double eps;
    uint32_t pooling;
    const char *ours;
    bool normalize;
    if (as_hf_cfg_int(h, "hidden_size", true, 0, 1, BIG, &d, err) ||
        as_hf_cfg_int(h, "num_hidden_layers", true, 0, 1, 4096, &L, err) ||
        as_hf_cfg_int(h, "num_attention_heads", true, 0, 1, 4096, &H, err) ||
        as_hf_cfg_int(h, "intermediate_size", true, 0, 1, BIG, &ff, err) ||
        as_hf_cfg_int(h, "vocab_size", true, 0, 1, BIG, &V, err) ||
        as_hf_cfg_int(h, "max_position_embeddings", false, 512, 1, BIG, &ctx, err) ||
        as_hf_cfg_int(h, "type_vocab_size", false, 2, 1, 1024, &types, err) ||
        as_hf_cfg_num(h, "layer_norm_eps", false, 1e-12, 0, 1, &eps, err) ||
        bert_pooling(h, &pooling, &ours, &normalize, err))
        return AS_ERR;
    /* BertConfig's default and most checkpoints': "gelu", the exact erf form (transformers' GELUActivation);
     * "gelu_new" and "gelu_pytorch_tanh" are the tanh form llama.cpp runs for every bert */
    json_t *act = json_object_get(h->config, "hidden_act");
    if (act && !json_is_string(act))
        return as_error_set(err, "%s: hidden_act: expected a string ('gelu', 'gelu_new' or 'gelu_pytorch_tanh')",
                            h->config_path);
    const char *a = act ? json_string_value(act) : "gelu";
    bool erf = !strcmp(a, "gelu");
    if (!erf && strcmp(a, "gelu_new") && strcmp(a, "gelu_pytorch_tanh"))
        return as_error_set(err, "%s: hidden_act '%.30s' is not read (gelu: the exact erf GELU; gelu_new, "
                            "gelu_pytorch_tanh: the tanh GELU)", h->config_path, a);
    json_t *pe = json_object_get(h->config, "position_embedding_type");
    if (pe && !(json_is_string(pe) && !strcmp(json_string_value(pe), "absolute")))
        return as_error_set(err, "%s: position_embedding_type must be 'absolute'", h->config_path);
    if (d % H)
        return as_error_set(err, "%s: hidden_size %lld is not a multiple of num_attention_heads %lld", h->config_path,
                            d, H);
    if (!as_hf_kv_u32(h, "bert.context_length", (uint32_t)ctx) ||
        !as_hf_kv_u32(h, "bert.embedding_length", (uint32_t)d) || !as_hf_kv_u32(h, "bert.block_count", (uint32_t)L) ||
        !as_hf_kv_u32(h, "bert.feed_forward_length", (uint32_t)ff) ||
        !as_hf_kv_u32(h, "bert.attention.head_count", (uint32_t)H) ||
        !as_hf_kv_u32(h, "bert.pooling_type", pooling) || !as_hf_kv_u32(h, "bert.vocab_size", (uint32_t)V) ||
        !as_hf_kv_f32(h, "bert.attention.layer_norm_epsilon", (float)eps) ||
        !as_hf_kv_bool(h, "bert.attention.causal", false) ||
        !as_hf_kv_u32(h, "tokenizer.ggml.token_type_count", (uint32_t)types))
        return oom(h, err);
    /* our key, only where the model is not what llama.cpp runs (a tanh BERT converts as llama.cpp's converter
     * writes it) */
    if (erf && !as_hf_kv_str(h, "bert.attnscope.gelu", "erf"))
        return oom(h, err);
    if (erf)
        snprintf(h->llama_note, sizeof h->llama_note,
                 "llama.cpp ignores bert.attnscope.gelu and runs the tanh GELU where this model has the exact erf "
                 "one (hidden_act 'gelu'): each GELU output differs by up to 4.7e-4, so its figures will differ "
                 "from attnscope's and transformers'");
    /* our keys: pooling llama.cpp has no value for, and sentence-transformers' Normalize (llama.cpp's
     * embedding tools normalize on request) */
    if ((ours && !as_hf_kv_str(h, "bert.attnscope.pooling", ours)) ||
        (normalize && !as_hf_kv_bool(h, "bert.attnscope.normalize", true)))
        return oom(h, err);
    if (ours) {
        size_t used = strlen(h->llama_note);
        snprintf(h->llama_note + used, sizeof h->llama_note - used,
                 "%sllama.cpp ignores bert.attnscope.pooling (%s): it pools nothing here", used ? "; " : "", ours);
    }
    h->alt_prefix = "bert."; /* BertForMaskedLM's names; BertModel's have none */
    uint64_t D = (uint64_t)d, F = (uint64_t)ff;
    const rule top[] = {
        {"embeddings.word_embeddings.weight", "token_embd.weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D,
         "[vocab_size, hidden_size]", false},
        {"embeddings.position_embeddings.weight", "position_embd.weight", AS_HF_AS_IS, 0, 2, (uint64_t)ctx, D,
         "[max_position_embeddings, hidden_size]", false},
        {"embeddings.token_type_embeddings.weight", "token_types.weight", AS_HF_AS_IS, 0, 2, (uint64_t)types, D,
         "[type_vocab_size, hidden_size]", false},
        {"embeddings.LayerNorm.weight", "token_embd_norm.weight", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]", false},
        {"embeddings.LayerNorm.bias", "token_embd_norm.bias", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]", false},
    };
    /* BertForMaskedLM's head: our mlm.* (its decoder is tied to the embeddings unless stored) */
    const rule mlm[] = {
        {"cls.predictions.transform.dense.weight", "mlm.dense.weight", AS_HF_AS_IS, 0, 2, D, D,
         "[hidden_size, hidden_size]", false},
        {"cls.predictions.transform.dense.bias", "mlm.dense.bias", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]", false},
        {"cls.predictions.transform.LayerNorm.weight", "mlm.norm.weight", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]",
         false},
        {"cls.predictions.transform.LayerNorm.bias", "mlm.norm.bias", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]", false},
        {"cls.predictions.bias", "mlm.output.bias", AS_HF_AS_IS, 0, 1, (uint64_t)V, 0, "[vocab_size]", false},
        {"cls.predictions.decoder.weight", "mlm.output.weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D,
         "[vocab_size, hidden_size]", true},
    };
    const rule blk[] = {
        {"encoder.layer.%d.attention.self.query.weight", "blk.%d.attn_q.weight", AS_HF_AS_IS, 0, 2, D, D,
         "[hidden_size, hidden_size]", false},
        {"encoder.layer.%d.attention.self.query.bias", "blk.%d.attn_q.bias", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]",
         false},
        {"encoder.layer.%d.attention.self.key.weight", "blk.%d.attn_k.weight", AS_HF_AS_IS, 0, 2, D, D,
         "[hidden_size, hidden_size]", false},
        {"encoder.layer.%d.attention.self.key.bias", "blk.%d.attn_k.bias", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]",
         false},
        {"encoder.layer.%d.attention.self.value.weight", "blk.%d.attn_v.weight", AS_HF_AS_IS, 0, 2, D, D,
         "[hidden_size, hidden_size]", false},
        {"encoder.layer.%d.attention.self.value.bias", "blk.%d.attn_v.bias", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]",
         false},
        {"encoder.layer.%d.attention.output.dense.weight", "blk.%d.attn_output.weight", AS_HF_AS_IS, 0, 2, D, D,
         "[hidden_size, hidden_size]", false},
        {"encoder.layer.%d.attention.output.dense.bias", "blk.%d.attn_output.bias", AS_HF_AS_IS, 0, 1, D, 0,
         "[hidden_size]", false},
        {"encoder.layer.%d.attention.output.LayerNorm.weight", "blk.%d.attn_output_norm.weight", AS_HF_AS_IS, 0, 1, D,
         0, "[hidden_size]", false},
        {"encoder.layer.%d.attention.output.LayerNorm.bias", "blk.%d.attn_output_norm.bias", AS_HF_AS_IS, 0, 1, D, 0,
         "[hidden_size]", false},
        {"encoder.layer.%d.intermediate.dense.weight", "blk.%d.ffn_up.weight", AS_HF_AS_IS, 0, 2, F, D,
         "[intermediate_size, hidden_size]", false},
        {"encoder.layer.%d.intermediate.dense.bias", "blk.%d.ffn_up.bias", AS_HF_AS_IS, 0, 1, F, 0,
         "[intermediate_size]", false},
        {"encoder.layer.%d.output.dense.weight", "blk.%d.ffn_down.weight", AS_HF_AS_IS, 0, 2, D, F,
         "[hidden_size, intermediate_size]", false},
        {"encoder.layer.%d.output.dense.bias", "blk.%d.ffn_down.bias", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]",
         false},
        {"encoder.layer.%d.output.LayerNorm.weight", "blk.%d.layer_output_norm.weight", AS_HF_AS_IS, 0, 1, D, 0,
         "[hidden_size]", false},
        {"encoder.layer.%d.output.LayerNorm.bias", "blk.%d.layer_output_norm.bias", AS_HF_AS_IS, 0, 1, D, 0,
         "[hidden_size]", false},
    };
    if (add_rules(h, top, sizeof top / sizeof top[0], 0, err))
        return AS_ERR;
    if (as_hf_find(h, mlm[0].hf) && add_rules(h, mlm, sizeof mlm / sizeof mlm[0], 0, err))
        return AS_ERR;
    return add_layer_rules(h, blk, sizeof blk / sizeof blk[0], (int)L, err);
}

/* What attnscope does not run: the pooler's dense layer and the
 * next-sentence head (its pooling is the one 1_Pooling names), the
 * position-id buffer, and the decoder's bias when stored twice. */
static bool bert_ignored(const char *name)
{
    return strstr(name, "pooler.dense.") || !strncmp(name, "cls.seq_relationship.", 21) ||
           ends_with(name, "embeddings.position_ids") || !strcmp(name, "cls.predictions.decoder.bias");
}

/* ---------------------------------------------------------------- T5 */

/* T5ForConditionalGeneration (T5Config's keys) as llama.cpp's converter
 * names it: shared -> token_embd, encoder.block.N.layer.0 (self-attention)
 * and .1 (MLP) -> enc.blk.N.*, decoder.block.N.layer.0 / .1 (EncDecAttention)
 * / .2 -> dec.blk.N.*, the relative bias tables of block 0 -> attn_rel_b
 * ([buckets, heads] as HF stores them is GGUF's ne [heads, buckets]),
 * wi / wi_0 / wi_1 / wo -> ffn_up / ffn_gate / ffn_up / ffn_down. */
static int t5_map(as_hf *h, as_error *err)
{
    long long d, dkv, ff, L, Ld, H, V, buckets, maxd, ctx, start;
    double eps;
    if (as_hf_cfg_int(h, "d_model", true, 0, 1, BIG, &d, err) ||
        as_hf_cfg_int(h, "d_kv", true, 0, 1, BIG, &dkv, err) || as_hf_cfg_int(h, "d_ff", true, 0, 1, BIG, &ff, err) ||
        as_hf_cfg_int(h, "num_layers", true, 0, 1, 4096, &L, err) ||
        as_hf_cfg_int(h, "num_decoder_layers", false, L, 1, 4096, &Ld, err) ||
        as_hf_cfg_int(h, "num_heads", true, 0, 1, 4096, &H, err) ||
        as_hf_cfg_int(h, "vocab_size", true, 0, 1, BIG, &V, err) ||
        as_hf_cfg_int(h, "relative_attention_num_buckets", false, 32, 4, 1 << 16, &buckets, err) ||
        as_hf_cfg_int(h, "relative_attention_max_distance", false, 128, 1, BIG, &maxd, err) ||
        as_hf_cfg_int(h, "n_positions", false, 512, 1, BIG, &ctx, err) ||
        as_hf_cfg_int(h, "decoder_start_token_id", false, 0, 0, V - 1, &start, err) ||
        as_hf_cfg_num(h, "layer_norm_epsilon", false, 1e-6, 0, 1, &eps, err))
        return AS_ERR;
    if (maxd != 128)
        return as_error_set(err, "%s: relative_attention_max_distance %lld is not read (llama.cpp's T5, and "
                            "attnscope's, bin distances up to 128)", h->config_path, maxd);
    json_t *proj = json_object_get(h->config, "feed_forward_proj");
    const char *fp = json_is_string(proj) ? json_string_value(proj) : proj ? "?" : "relu";
    bool gated = !strcmp(fp, "gated-gelu");
    if (!gated && strcmp(fp, "relu"))
        return as_error_set(err, "%s: feed_forward_proj '%.30s' is not read (relu: T5's; gated-gelu: Flan-T5's, "
                            "the tanh GELU)", h->config_path, fp);
    bool tied = true;
    if (as_hf_cfg_bool(h, "tie_word_embeddings", true, &tied, err))
        return AS_ERR;
    if (tied)
        return as_error_set(err, "%s: tie_word_embeddings is true (T5Config's default): transformers then scales the "
                            "decoder's output by d_model^-0.5 before the tied unembedding, and llama.cpp (as "
                            "attnscope's t5) does not; not read yet", h->config_path);
    if (Ld > L)
        return as_error_set(err, "%s: num_decoder_layers %lld exceeds num_layers %lld (llama.cpp's T5 cannot "
                            "load a decoder deeper than its encoder)", h->config_path, Ld, L);
    if (!as_hf_kv_u32(h, "t5.context_length", (uint32_t)ctx) || !as_hf_kv_u32(h, "t5.embedding_length", (uint32_t)d) ||
        !as_hf_kv_u32(h, "t5.block_count", (uint32_t)L) || !as_hf_kv_u32(h, "t5.decoder_block_count", (uint32_t)Ld) ||
        !as_hf_kv_u32(h, "t5.feed_forward_length", (uint32_t)ff) ||
        !as_hf_kv_u32(h, "t5.attention.head_count", (uint32_t)H) ||
        !as_hf_kv_u32(h, "t5.attention.key_length", (uint32_t)dkv) ||
        !as_hf_kv_u32(h, "t5.attention.value_length", (uint32_t)dkv) ||
        !as_hf_kv_u32(h, "t5.attention.relative_buckets_count", (uint32_t)buckets) ||
        !as_hf_kv_f32(h, "t5.attention.layer_norm_rms_epsilon", (float)eps) ||
        !as_hf_kv_u32(h, "t5.decoder_start_token_id", (uint32_t)start))
        return oom(h, err);
    uint64_t D = (uint64_t)d, Q = (uint64_t)(H * dkv), F = (uint64_t)ff, B = (uint64_t)buckets, NH = (uint64_t)H;
    const rule top[] = {
        {"shared.weight", "token_embd.weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D, "[vocab_size, d_model]", false},
        {"lm_head.weight", "output.weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D, "[vocab_size, d_model]", false},
        {"encoder.final_layer_norm.weight", "enc.output_norm.weight", AS_HF_AS_IS, 0, 1, D, 0, "[d_model]", false},
        {"decoder.final_layer_norm.weight", "dec.output_norm.weight", AS_HF_AS_IS, 0, 1, D, 0, "[d_model]", false},
        {"encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", "enc.blk.0.attn_rel_b.weight",
         AS_HF_AS_IS, 0, 2, B, NH, "[relative_attention_num_buckets, num_heads]", false},
        {"decoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight", "dec.blk.0.attn_rel_b.weight",
         AS_HF_AS_IS, 0, 2, B, NH, "[relative_attention_num_buckets, num_heads]", false},
    };
#define ATT(stack, hfstack, sub, site, gsite)                                                                        \
    {hfstack ".block.%d.layer." sub "." site ".q.weight", stack ".blk.%d." gsite "_q.weight", AS_HF_AS_IS, 0, 2, Q, \
     D, "[num_heads x d_kv, d_model]", false},                                                                    \
    {hfstack ".block.%d.layer." sub "." site ".k.weight", stack ".blk.%d." gsite "_k.weight", AS_HF_AS_IS, 0, 2, Q, \
     D, "[num_heads x d_kv, d_model]", false},                                                                    \
    {hfstack ".block.%d.layer." sub "." site ".v.weight", stack ".blk.%d." gsite "_v.weight", AS_HF_AS_IS, 0, 2, Q, \
     D, "[num_heads x d_kv, d_model]", false},                                                                    \
    {hfstack ".block.%d.layer." sub "." site ".o.weight", stack ".blk.%d." gsite "_o.weight", AS_HF_AS_IS, 0, 2, D, \
     Q, "[d_model, num_heads x d_kv]", false},                                                                    \
    {hfstack ".block.%d.layer." sub ".layer_norm.weight", stack ".blk.%d." gsite "_norm.weight", AS_HF_AS_IS, 0, 1, \
     D, 0, "[d_model]", false}
#define FFN(stack, hfstack, sub)                                                                                     \
    {hfstack ".block.%d.layer." sub ".layer_norm.weight", stack ".blk.%d.ffn_norm.weight", AS_HF_AS_IS, 0, 1, D, 0, \
     "[d_model]", false},                                                                                         \
    {hfstack ".block.%d.layer." sub ".DenseReluDense.wo.weight", stack ".blk.%d.ffn_down.weight", AS_HF_AS_IS, 0,   \
     2, D, F, "[d_model, d_ff]", false},                                                                          \
    {gated ? hfstack ".block.%d.layer." sub ".DenseReluDense.wi_0.weight"                                          \
           : hfstack ".block.%d.layer." sub ".DenseReluDense.wi.weight",                                           \
     gated ? stack ".blk.%d.ffn_gate.weight" : stack ".blk.%d.ffn_up.weight", AS_HF_AS_IS, 0, 2, F, D,             \
     "[d_ff, d_model]", false},                                                                                   \
    {hfstack ".block.%d.layer." sub ".DenseReluDense.wi_1.weight", stack ".blk.%d.ffn_up.weight", AS_HF_AS_IS, 0, \
     2, F, D, "[d_ff, d_model]", !gated}
    const rule enc[] = {ATT("enc", "encoder", "0", "SelfAttention", "attn"), FFN("enc", "encoder", "1")};
    const rule dec[] = {ATT("dec", "decoder", "0", "SelfAttention", "attn"),
                        ATT("dec", "decoder", "1", "EncDecAttention", "cross_attn"), FFN("dec", "decoder", "2")};
#undef ATT
#undef FFN
    if (!gated && as_hf_find(h, "encoder.block.0.layer.1.DenseReluDense.wi_1.weight"))
        return as_error_set(err, "%s: feed_forward_proj is 'relu' but the checkpoint has wi_1 (a gated MLP)",
                            h->config_path);
    if (add_rules(h, top, sizeof top / sizeof top[0], 0, err) ||
        add_layer_rules(h, enc, sizeof enc / sizeof enc[0] - (gated ? 0 : 1), (int)L, err))
        return AS_ERR;
    return add_layer_rules(h, dec, sizeof dec / sizeof dec[0] - (gated ? 0 : 1), (int)Ld, err);
}

/* The embedding's tied copies in each stack (T5Model stores them). */
static bool t5_ignored(const char *name)
{
    return !strcmp(name, "encoder.embed_tokens.weight") || !strcmp(name, "decoder.embed_tokens.weight");
}

/* ---------------------------------------------------------------- ViT */

/* A size of preprocessor_config.json: an integer (a square, or CLIP's
 * shortest edge), {height, width} or {shortest_edge}. */
static int pp_size(const char *path, const char *key, json_t *v, bool int_is_edge, int *h, int *w, int *edge,
                   as_error *err)
{
    json_t *hh = json_object_get(v, "height"), *ww = json_object_get(v, "width"),
           *se = json_object_get(v, "shortest_edge");
    long long a = -1, b = -1, e = -1;
    if (json_is_integer(v) && int_is_edge)
        e = json_integer_value(v);
    else if (json_is_integer(v))
        a = b = json_integer_value(v);
    else if (json_is_integer(hh) && json_is_integer(ww))
        a = json_integer_value(hh), b = json_integer_value(ww);
    else if (json_is_integer(se) && json_object_size(v) == 1)
        e = json_integer_value(se);
    else
        return as_error_set(err, "%s: %s must be a number, {\"height\": H, \"width\": W} or {\"shortest_edge\": S}",
                            path, key);
    if ((e != -1 && (e < 1 || e > 16384)) || (e == -1 && (a < 1 || a > 16384 || b < 1 || b > 16384)))
        return as_error_set(err, "%s: %s is out of range (1..16384 pixels)", path, key);
    *h = e == -1 ? (int)a : 0, *w = e == -1 ? (int)b : 0, *edge = e == -1 ? 0 : (int)e;
    return AS_OK;
}

/* preprocessor_config.json as transformers' ViTImageProcessor (and
 * ViTFeatureExtractor, DeiT's) or CLIPImageProcessor runs it: PIL's
 * resize (resample in PIL's numbering) to `size`, the centre crop to
 * `crop_size`, rescale, normalise; their defaults where a key is absent
 * (CLIP: shortest edge 224, crop 224, bicubic; ViT: 224 x 224, bilinear,
 * no crop; both rescale by 1/255 and normalise). What comes out must be
 * config.json's image_size square. Absent file: ViTImageProcessor's
 * mean and std (0.5) with the torch preparation of GGUF ViTs. */
static int vit_preprocessor(as_hf *h, long long channels, long long size, as_error *err)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/preprocessor_config.json", h->dir);
    float mean[3] = {0.5f, 0.5f, 0.5f}, stdv[3] = {0.5f, 0.5f, 0.5f};
    if (access(path, F_OK) != 0) {
        if (!as_hf_kv_f32s(h, "clip.vision.image_mean", mean, (uint64_t)channels) ||
            !as_hf_kv_f32s(h, "clip.vision.image_std", stdv, (uint64_t)channels) ||
            !as_hf_kv_str(h, "clip.vision.resize", "bilinear"))
            return oom(h, err);
        return AS_OK;
    }
    json_t *j = as_hf_load_json(h, path, err);
    if (!j)
        return AS_ERR;
    int rc = AS_OK;
    const char *type = json_string_value(json_object_get(j, "image_processor_type"));
    if (!type)
        type = json_string_value(json_object_get(j, "feature_extractor_type"));
    bool clip = type && !strncmp(type, "CLIP", 4);
    if (type && !clip && strncmp(type, "ViT", 3) && strncmp(type, "DeiT", 4))
        rc = as_error_set(err, "%s: image_processor_type %.40s is not read (attnscope runs ViTImageProcessor, "
                          "DeiTImageProcessor and CLIPImageProcessor)", path, type);
    const char *keys[2] = {"image_mean", "image_std"};
    float *dst[2] = {mean, stdv};
    if (clip) {
        const float cm[3] = {0.48145466f, 0.4578275f, 0.40821073f}, cs[3] = {0.26862954f, 0.26130258f, 0.27577711f};
        memcpy(mean, cm, sizeof cm), memcpy(stdv, cs, sizeof cs);
    }
    bool normalize = !json_is_false(json_object_get(j, "do_normalize"));
    for (int k = 0; k < 2 && rc == AS_OK; k++) {
        json_t *a = json_object_get(j, keys[k]);
        if (!normalize) {
            for (int c = 0; c < 3; c++)
                dst[k][c] = k ? 1.0f : 0.0f;
            continue;
        }
        if (!a)
            continue;
        if (!json_is_array(a) || (long long)json_array_size(a) != channels)
            rc = as_error_set(err, "%s: %s must hold %lld numbers (one per channel)", path, keys[k], channels);
        for (long long c = 0; rc == AS_OK && c < channels; c++) {
            json_t *v = json_array_get(a, (size_t)c);
            double x = json_is_number(v) ? json_number_value(v) : NAN;
            if (!isfinite(x) || (k && x <= 0))
                rc = as_error_set(err, "%s: %s[%lld] is not a %s", path, keys[k], c, k ? "positive number" : "number");
            dst[k][c] = (float)x;
        }
    }
    int rh = 0, rw = 0, edge = 0, ch = 0, cw = 0, ce = 0;
    json_t *sz = json_object_get(j, "size"), *r = json_object_get(j, "resample"),
           *rf = json_object_get(j, "rescale_factor"), *cs = json_object_get(j, "crop_size");
    bool do_resize = !json_is_false(json_object_get(j, "do_resize"));
    json_t *dc = json_object_get(j, "do_center_crop");
    bool do_crop = json_is_boolean(dc) ? json_is_true(dc) : clip;
    if (rc == AS_OK && do_resize) {
        if (sz)
            rc = pp_size(path, "size", sz, clip, &rh, &rw, &edge, err);
        else if (clip)
            edge = 224;
        else
            rh = rw = 224;
    }
    if (rc == AS_OK && do_crop) {
        if (cs)
            rc = pp_size(path, "crop_size", cs, false, &ch, &cw, &ce, err);
        else
            ch = cw = 224;
        if (rc == AS_OK && ce)
            rc = as_error_set(err, "%s: crop_size must be a height and width, not a shortest edge", path);
    }
    long long resample = clip ? 3 : 2;
    if (rc == AS_OK && r && !(json_is_integer(r) && (resample = json_integer_value(r)) >= 0 && resample <= 5))
        rc = as_error_set(err, "%s: resample must be one of PIL's filters (0 nearest, 1 lanczos, 2 bilinear, "
                          "3 bicubic, 4 box, 5 hamming)", path);
    double factor = 1.0 / 255;
    if (rc == AS_OK && json_is_false(json_object_get(j, "do_rescale")))
        factor = 1.0;
    else if (rc == AS_OK && rf && !(json_is_number(rf) && (factor = json_number_value(rf)) > 0 && isfinite(factor)))
        rc = as_error_set(err, "%s: rescale_factor must be a positive number", path);
    /* what comes out of resize and crop must be the model's square */
    int oh = do_crop ? ch : rh, ow = do_crop ? cw : rw;
    if (rc == AS_OK && !do_crop && edge)
        rc = as_error_set(err, "%s: a shortest-edge resize without a centre crop gives images of any shape, not "
                          "config.json's %lld x %lld", path, size, size);
    else if (rc == AS_OK && (do_crop || do_resize) && (oh != size || ow != size))
        rc = as_error_set(err, "%s: %s %d x %d is not config.json's image_size %lld", path,
                          do_crop ? "crop_size" : "size", oh, ow, size);
    else if (rc == AS_OK && !do_crop && !do_resize)
        rc = as_error_set(err, "%s: do_resize and do_center_crop are false: images would have to be %lld x %lld "
                          "already; attnscope does not read that", path, size, size);
    json_decref(j);
    if (rc != AS_OK)
        return AS_ERR;
    /* rescale_factor is kept in float32; 1/255 is recognised and used in full */
    if (!as_hf_kv_f32s(h, "clip.vision.image_mean", mean, (uint64_t)channels) ||
        !as_hf_kv_f32s(h, "clip.vision.image_std", stdv, (uint64_t)channels) ||
        !as_hf_kv_str(h, "clip.vision.resize", resample == 0 ? "nearest" : "bilinear") ||
        !as_hf_kv_bool(h, "clip.vision.attnscope.pil", true) ||
        !as_hf_kv_u32(h, "clip.vision.attnscope.resample", (uint32_t)resample) ||
        !as_hf_kv_u32(h, "clip.vision.attnscope.resize_height", (uint32_t)rh) ||
        !as_hf_kv_u32(h, "clip.vision.attnscope.resize_width", (uint32_t)rw) ||
        !as_hf_kv_u32(h, "clip.vision.attnscope.shortest_edge", (uint32_t)edge) ||
        !as_hf_kv_u32(h, "clip.vision.attnscope.crop_height", (uint32_t)ch) ||
        !as_hf_kv_u32(h, "clip.vision.attnscope.crop_width", (uint32_t)cw) ||
        !as_hf_kv_f32(h, "clip.vision.attnscope.rescale_factor", (float)factor))
        return oom(h, err);
    return AS_OK;
}

/* id2label {"0": name, ...}: the class names, every id 0..n-1 once, in any
 * order; a name may be a string or a number (fine-tuned checkpoints often
 * store their dataset's integer labels: "0": 60), shown as written. */
static int vit_classes(as_hf *h, long long *n_out, as_error *err)
{
    json_t *map = json_object_get(h->config, "id2label");
    size_t n = json_object_size(map);
    if (!json_is_object(map) || !n || n > (1u << 20))
        return as_error_set(err, "%s: id2label must name the classifier's classes ({\"0\": name, ...})",
                            h->config_path);
    const char **names = calloc(n, sizeof *names);
    char *nums = calloc(n, 32);
    if (!names || !nums) {
        free(names), free(nums);
        return oom(h, err);
    }
    const char *k;
    json_t *v;
    int rc = AS_OK;
    json_object_foreach(map, k, v) {
        char *end;
        errno = 0;
        long id = strtol(k, &end, 10);
        if (*k == 0 || *end || errno || id < 0 || (size_t)id >= n) {
            rc = as_error_set(err, "%s: id2label: key '%.20s' is not a class id in 0..%zu (%zu classes)",
                              h->config_path, k, n - 1, n);
            break;
        }
        if (names[id]) {
            rc = as_error_set(err, "%s: id2label: class %ld is named twice ('%.20s')", h->config_path, id, k);
            break;
        }
        char *num = nums + (size_t)id * 32;
        if (json_is_string(v))
            names[id] = json_string_value(v);
        else if (json_is_integer(v))
            snprintf(num, 32, "%" JSON_INTEGER_FORMAT, json_integer_value(v)), names[id] = num;
        else if (json_is_real(v))
            snprintf(num, 32, "%.17g", json_real_value(v)), names[id] = num;
        else {
            rc = as_error_set(err, "%s: id2label[\"%.20s\"]: a class name must be a string or a number",
                              h->config_path, k);
            break;
        }
    }
    if (rc == AS_OK && !as_hf_kv_strs(h, "clip.vision.class_names", names, n))
        rc = oom(h, err);
    free(names);
    free(nums);
    *n_out = (long long)n;
    return rc;
}

/* ViTForImageClassification (ViTConfig's keys) as arch vit's `v.*`
 * tensors: HF's query/key/value/dense are nn.Linear's [out, in] as
 * llama.cpp's are; cls_token [1, 1, d] and position_embeddings
 * [1, 1 + patches, d] lose their leading ones. */
static int vit_map(as_hf *h, as_error *err)
{
    long long d, L, H, ff, size, patch, ch, n_class = 0;
    double eps;
    bool qkv_bias;
    if (as_hf_cfg_int(h, "hidden_size", true, 0, 1, BIG, &d, err) ||
        as_hf_cfg_int(h, "num_hidden_layers", true, 0, 1, 1024, &L, err) ||
        as_hf_cfg_int(h, "num_attention_heads", true, 0, 1, 1024, &H, err) ||
        as_hf_cfg_int(h, "intermediate_size", true, 0, 1, BIG, &ff, err) ||
        as_hf_cfg_int(h, "image_size", false, 224, 1, 1 << 14, &size, err) ||
        as_hf_cfg_int(h, "patch_size", false, 16, 1, 1 << 10, &patch, err) ||
        as_hf_cfg_int(h, "num_channels", false, 3, 1, 3, &ch, err) ||
        as_hf_cfg_num(h, "layer_norm_eps", false, 1e-12, 0, 1, &eps, err) ||
        as_hf_cfg_bool(h, "qkv_bias", true, &qkv_bias, err))
        return AS_ERR;
    json_t *act = json_object_get(h->config, "hidden_act");
    if (act && !(json_is_string(act) && !strcmp(json_string_value(act), "gelu")))
        return as_error_set(err, "%s: hidden_act '%.30s' is not read (gelu: the exact erf GELU arch vit runs)",
                            h->config_path, json_is_string(act) ? json_string_value(act) : "?");
    if (!qkv_bias)
        return as_error_set(err, "%s: qkv_bias false is not read (arch vit's q, k, v have biases)", h->config_path);
    if (ch == 2)
        return as_error_set(err, "%s: num_channels 2: attnscope reads grey (1) or RGB (3) images", h->config_path);
    if (size % patch || d % H)
        return as_error_set(err, "%s: image_size %lld must be a multiple of patch_size %lld and hidden_size %lld of "
                            "num_attention_heads %lld", h->config_path, size, patch, d, H);
    if (vit_classes(h, &n_class, err) || vit_preprocessor(h, ch, size, err))
        return AS_ERR;
    if (!as_hf_kv_u32(h, "clip.vision.image_size", (uint32_t)size) ||
        !as_hf_kv_u32(h, "clip.vision.patch_size", (uint32_t)patch) ||
        !as_hf_kv_u32(h, "clip.vision.embedding_length", (uint32_t)d) ||
        !as_hf_kv_u32(h, "clip.vision.feed_forward_length", (uint32_t)ff) ||
        !as_hf_kv_u32(h, "clip.vision.block_count", (uint32_t)L) ||
        !as_hf_kv_u32(h, "clip.vision.attention.head_count", (uint32_t)H) ||
        !as_hf_kv_f32(h, "clip.vision.attention.layer_norm_epsilon", (float)eps) ||
        !as_hf_kv_u32(h, "clip.vision.channels", (uint32_t)ch) || !as_hf_kv_bool(h, "clip.has_vision_encoder", true))
        return oom(h, err);
    h->alt_prefix = "vit."; /* ViTForImageClassification's names; ViTModel's have none */
    uint64_t D = (uint64_t)d, F = (uint64_t)ff, grid = (uint64_t)(size / patch), C = (uint64_t)n_class;
    uint64_t cls[3] = {1, 1, D}, pos[3] = {1, 1 + grid * grid, D}, conv[4] = {D, (uint64_t)ch, (uint64_t)patch,
                                                                              (uint64_t)patch};
    if (as_hf_add(h, "embeddings.cls_token", "v.class_embd", AS_HF_SQUEEZE, 0, 3, cls, "[1, 1, hidden_size]", false,
                  NULL, err) ||
        as_hf_add(h, "embeddings.position_embeddings", "v.position_embd.weight", AS_HF_SQUEEZE, 0, 3, pos,
                  "[1, 1 + (image_size / patch_size)^2, hidden_size]", false, NULL, err) ||
        as_hf_add(h, "embeddings.patch_embeddings.projection.weight", "v.patch_embd.weight", AS_HF_AS_IS, 0, 4, conv,
                  "[hidden_size, num_channels, patch_size, patch_size]", false, NULL, err))
        return AS_ERR;
    const rule top[] = {
        {"embeddings.patch_embeddings.projection.bias", "v.patch_embd.bias", AS_HF_AS_IS, 0, 1, D, 0,
         "[hidden_size]", false},
        {"layernorm.weight", "v.post_ln.weight", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]", false},
        {"layernorm.bias", "v.post_ln.bias", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]", false},
        {"classifier.weight", "v.head.weight", AS_HF_AS_IS, 0, 2, C, D, "[len(id2label), hidden_size]", false},
        {"classifier.bias", "v.head.bias", AS_HF_AS_IS, 0, 1, C, 0, "[len(id2label)]", false},
    };
#define LIN(hf, gg, o, i, w)                                                                                         \
    {"encoder.layer.%d." hf ".weight", "v.blk.%d." gg ".weight", AS_HF_AS_IS, 0, 2, o, i, w, false},                \
    {"encoder.layer.%d." hf ".bias", "v.blk.%d." gg ".bias", AS_HF_AS_IS, 0, 1, o, 0, "[out]", false}
    const rule blk[] = {
        LIN("layernorm_before", "ln1", D, 0, "[hidden_size]"), LIN("layernorm_after", "ln2", D, 0, "[hidden_size]"),
    };
    const rule blk2[] = {
        LIN("attention.attention.query", "attn_q", D, D, "[hidden_size, hidden_size]"),
        LIN("attention.attention.key", "attn_k", D, D, "[hidden_size, hidden_size]"),
        LIN("attention.attention.value", "attn_v", D, D, "[hidden_size, hidden_size]"),
        LIN("attention.output.dense", "attn_out", D, D, "[hidden_size, hidden_size]"),
        LIN("intermediate.dense", "ffn_up", F, D, "[intermediate_size, hidden_size]"),
        LIN("output.dense", "ffn_down", D, F, "[hidden_size, intermediate_size]"),
    };
#undef LIN
    if (add_rules(h, top, sizeof top / sizeof top[0], 0, err))
        return AS_ERR;
    for (int l = 0; l < (int)L; l++) {
        /* a LayerNorm's weight is a vector: the rule's second dimension is unused */
        rule nb[4];
        memcpy(nb, blk, sizeof nb);
        for (int i = 0; i < 4; i++)
            nb[i].n_dims = 1;
        if (add_rules(h, nb, 4, l, err) || add_rules(h, blk2, sizeof blk2 / sizeof blk2[0], l, err))
            return AS_ERR;
    }
    return AS_OK;
}

/* ViTModel's pooler (ViTForImageClassification reads [CLS] instead). */
static bool vit_ignored(const char *name)
{
    return strstr(name, "pooler.dense.") != NULL;
}

/* ---------------------------------------------------------------- the table */

static const as_hf_family FAMILIES[] = {
    {"gpt2", "gpt2", gpt2_map, gpt2_ignored, false},
    {"llama", "llama", llama_map, llama_ignored, false},
    {"mistral", "llama", llama_map, llama_ignored, false}, /* as llama.cpp converts it */
    {"qwen2", "qwen2", qwen2_map, llama_ignored, false},
    {"qwen3", "qwen3", qwen3_map, llama_ignored, false},
    {"bert", "bert", bert_map, bert_ignored, false},
    {"gemma", "gemma", gemma1_map, llama_ignored, false},
    {"gemma2", "gemma2", gemma2_map, llama_ignored, false},
    {"gemma3_text", "gemma3", gemma3_map, llama_ignored, false},
    {"t5", "t5", t5_map, t5_ignored, false},
    {"vit", "vit", vit_map, vit_ignored, true},
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
