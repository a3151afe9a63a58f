/* arch_hf_encoders: the Hugging Face families with an encoder (BERT and
 * its sentence-transformers modules, T5, ViT with its preprocessor and
 * labels): what their config.json and tensors become in a GGUF view, as
 * src/arch_hf.c does for the decoders (the table of families is there). */
#include "hf_internal.h"
#include "tensor_names.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#define BIG (1LL << 24)

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

int as_hf_bert_map(as_hf *h, as_error *err)
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
        return as_hf_oom(h, err);
    /* our key, only where the model is not what llama.cpp runs (a tanh BERT converts as llama.cpp's converter
     * writes it) */
    if (erf && !as_hf_kv_str(h, "bert.attnscope.gelu", "erf"))
        return as_hf_oom(h, err);
    if (erf)
        snprintf(h->llama_note, sizeof h->llama_note,
                 "llama.cpp ignores bert.attnscope.gelu and runs the tanh GELU where this model has the exact erf "
                 "one (hidden_act 'gelu'): each GELU output differs by up to 4.7e-4, so its figures will differ "
                 "from attnscope's and transformers'");
    /* our keys: pooling llama.cpp has no value for, and sentence-transformers' Normalize (llama.cpp's
     * embedding tools normalize on request) */
    if ((ours && !as_hf_kv_str(h, "bert.attnscope.pooling", ours)) ||
        (normalize && !as_hf_kv_bool(h, "bert.attnscope.normalize", true)))
        return as_hf_oom(h, err);
    if (ours) {
        size_t used = strlen(h->llama_note);
        snprintf(h->llama_note + used, sizeof h->llama_note - used,
                 "%sllama.cpp ignores bert.attnscope.pooling (%s): it pools nothing here", used ? "; " : "", ours);
    }
    h->alt_prefix = "bert."; /* BertForMaskedLM's names; BertModel's have none */
    uint64_t D = (uint64_t)d, F = (uint64_t)ff;
    const as_hf_rule top[] = {
        {"embeddings.word_embeddings.weight", AS_TN_TOKEN_EMBD ".weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D,
         "[vocab_size, hidden_size]", false},
        {"embeddings.position_embeddings.weight", AS_TN_POS_EMBD ".weight", AS_HF_AS_IS, 0, 2, (uint64_t)ctx, D,
         "[max_position_embeddings, hidden_size]", false},
        {"embeddings.token_type_embeddings.weight", AS_TN_TOKEN_TYPES ".weight", AS_HF_AS_IS, 0, 2, (uint64_t)types, D,
         "[type_vocab_size, hidden_size]", false},
        {"embeddings.LayerNorm.weight", AS_TN_TOKEN_EMBD_NORM ".weight", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]", false},
        {"embeddings.LayerNorm.bias", AS_TN_TOKEN_EMBD_NORM ".bias", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]", false},
    };
    /* BertForMaskedLM's head: our mlm.* (its decoder is tied to the embeddings unless stored) */
    const as_hf_rule mlm[] = {
        {"cls.predictions.transform.dense.weight", AS_TN_MLM_DENSE ".weight", AS_HF_AS_IS, 0, 2, D, D,
         "[hidden_size, hidden_size]", false},
        {"cls.predictions.transform.dense.bias", AS_TN_MLM_DENSE ".bias", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]", false},
        {"cls.predictions.transform.LayerNorm.weight", AS_TN_MLM_NORM ".weight", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]",
         false},
        {"cls.predictions.transform.LayerNorm.bias", AS_TN_MLM_NORM ".bias", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]", false},
        {"cls.predictions.bias", AS_TN_MLM_OUTPUT ".bias", AS_HF_AS_IS, 0, 1, (uint64_t)V, 0, "[vocab_size]", false},
        {"cls.predictions.decoder.weight", AS_TN_MLM_OUTPUT ".weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D,
         "[vocab_size, hidden_size]", true},
    };
    const as_hf_rule blk[] = {
        {"encoder.layer.%d.attention.self.query.weight", AS_TN_ATTN_Q ".weight", AS_HF_AS_IS, 0, 2, D, D,
         "[hidden_size, hidden_size]", false},
        {"encoder.layer.%d.attention.self.query.bias", AS_TN_ATTN_Q ".bias", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]",
         false},
        {"encoder.layer.%d.attention.self.key.weight", AS_TN_ATTN_K ".weight", AS_HF_AS_IS, 0, 2, D, D,
         "[hidden_size, hidden_size]", false},
        {"encoder.layer.%d.attention.self.key.bias", AS_TN_ATTN_K ".bias", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]",
         false},
        {"encoder.layer.%d.attention.self.value.weight", AS_TN_ATTN_V ".weight", AS_HF_AS_IS, 0, 2, D, D,
         "[hidden_size, hidden_size]", false},
        {"encoder.layer.%d.attention.self.value.bias", AS_TN_ATTN_V ".bias", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]",
         false},
        {"encoder.layer.%d.attention.output.dense.weight", AS_TN_ATTN_OUT ".weight", AS_HF_AS_IS, 0, 2, D, D,
         "[hidden_size, hidden_size]", false},
        {"encoder.layer.%d.attention.output.dense.bias", AS_TN_ATTN_OUT ".bias", AS_HF_AS_IS, 0, 1, D, 0,
         "[hidden_size]", false},
        {"encoder.layer.%d.attention.output.LayerNorm.weight", AS_TN_ATTN_OUT_NORM ".weight", AS_HF_AS_IS, 0, 1, D,
         0, "[hidden_size]", false},
        {"encoder.layer.%d.attention.output.LayerNorm.bias", AS_TN_ATTN_OUT_NORM ".bias", AS_HF_AS_IS, 0, 1, D, 0,
         "[hidden_size]", false},
        {"encoder.layer.%d.intermediate.dense.weight", AS_TN_FFN_UP ".weight", AS_HF_AS_IS, 0, 2, F, D,
         "[intermediate_size, hidden_size]", false},
        {"encoder.layer.%d.intermediate.dense.bias", AS_TN_FFN_UP ".bias", AS_HF_AS_IS, 0, 1, F, 0,
         "[intermediate_size]", false},
        {"encoder.layer.%d.output.dense.weight", AS_TN_FFN_DOWN ".weight", AS_HF_AS_IS, 0, 2, D, F,
         "[hidden_size, intermediate_size]", false},
        {"encoder.layer.%d.output.dense.bias", AS_TN_FFN_DOWN ".bias", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]",
         false},
        {"encoder.layer.%d.output.LayerNorm.weight", AS_TN_LAYER_OUT_NORM ".weight", AS_HF_AS_IS, 0, 1, D, 0,
         "[hidden_size]", false},
        {"encoder.layer.%d.output.LayerNorm.bias", AS_TN_LAYER_OUT_NORM ".bias", AS_HF_AS_IS, 0, 1, D, 0,
         "[hidden_size]", false},
    };
    if (as_hf_add_rules(h, top, sizeof top / sizeof top[0], 0, err))
        return AS_ERR;
    if (as_hf_find(h, mlm[0].hf) && as_hf_add_rules(h, mlm, sizeof mlm / sizeof mlm[0], 0, err))
        return AS_ERR;
    return as_hf_add_layer_rules(h, blk, sizeof blk / sizeof blk[0], (int)L, err);
}

/* What attnscope does not run: the pooler's dense layer and the
 * next-sentence head (its pooling is the one 1_Pooling names), the
 * position-id buffer, and the decoder's bias when stored twice. */
bool as_hf_bert_ignored(const char *name)
{
    return strstr(name, "pooler.dense.") || !strncmp(name, "cls.seq_relationship.", 21) ||
           as_hf_ends_with(name, "embeddings.position_ids") || !strcmp(name, "cls.predictions.decoder.bias");
}

/* ---------------------------------------------------------------- T5 */

/* T5ForConditionalGeneration (T5Config's keys) as llama.cpp's converter
 * names it: shared -> token_embd, encoder.block.N.layer.0 (self-attention)
 * and .1 (MLP) -> enc.blk.N.*, decoder.block.N.layer.0 / .1 (EncDecAttention)
 * / .2 -> dec.blk.N.*, the relative bias tables of block 0 -> attn_rel_b
 * ([buckets, heads] as HF stores them is GGUF's ne [heads, buckets]),
 * wi / wi_0 / wi_1 / wo -> ffn_up / ffn_gate / ffn_up / ffn_down. */
int as_hf_t5_map(as_hf *h, as_error *err)
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
        return as_hf_oom(h, err);
    uint64_t D = (uint64_t)d, Q = (uint64_t)(H * dkv), F = (uint64_t)ff, B = (uint64_t)buckets, NH = (uint64_t)H;
    const as_hf_rule top[] = {
        {"shared.weight", AS_TN_TOKEN_EMBD ".weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D, "[vocab_size, d_model]", false},
        {"lm_head.weight", AS_TN_OUTPUT ".weight", AS_HF_AS_IS, 0, 2, (uint64_t)V, D, "[vocab_size, d_model]", false},
        {"encoder.final_layer_norm.weight", AS_TN_ENC_OUTPUT_NORM ".weight", AS_HF_AS_IS, 0, 1, D, 0, "[d_model]", false},
        {"decoder.final_layer_norm.weight", AS_TN_DEC_OUTPUT_NORM ".weight", AS_HF_AS_IS, 0, 1, D, 0, "[d_model]", false},
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
    const as_hf_rule enc[] = {ATT("enc", "encoder", "0", "SelfAttention", "attn"), FFN("enc", "encoder", "1")};
    const as_hf_rule dec[] = {ATT("dec", "decoder", "0", "SelfAttention", "attn"),
                        ATT("dec", "decoder", "1", "EncDecAttention", "cross_attn"), FFN("dec", "decoder", "2")};
#undef ATT
#undef FFN
    if (!gated && as_hf_find(h, "encoder.block.0.layer.1.DenseReluDense.wi_1.weight"))
        return as_error_set(err, "%s: feed_forward_proj is 'relu' but the checkpoint has wi_1 (a gated MLP)",
                            h->config_path);
    if (as_hf_add_rules(h, top, sizeof top / sizeof top[0], 0, err) ||
        as_hf_add_layer_rules(h, enc, sizeof enc / sizeof enc[0] - (gated ? 0 : 1), (int)L, err))
        return AS_ERR;
    return as_hf_add_layer_rules(h, dec, sizeof dec / sizeof dec[0] - (gated ? 0 : 1), (int)Ld, err);
}

/* The embedding's tied copies in each stack (T5Model stores them). */
bool as_hf_t5_ignored(const char *name)
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
            return as_hf_oom(h, err);
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
        return as_hf_oom(h, err);
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
        return as_hf_oom(h, err);
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
        rc = as_hf_oom(h, err);
    free(names);
    free(nums);
    *n_out = (long long)n;
    return rc;
}

/* ViTForImageClassification (ViTConfig's keys) as arch vit's `v.*`
 * tensors: HF's query/key/value/dense are nn.Linear's [out, in] as
 * llama.cpp's are; cls_token [1, 1, d] and position_embeddings
 * [1, 1 + patches, d] lose their leading ones. */
int as_hf_vit_map(as_hf *h, as_error *err)
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
        return as_hf_oom(h, err);
    h->alt_prefix = "vit."; /* ViTForImageClassification's names; ViTModel's have none */
    uint64_t D = (uint64_t)d, F = (uint64_t)ff, grid = (uint64_t)(size / patch), C = (uint64_t)n_class;
    uint64_t cls[3] = {1, 1, D}, pos[3] = {1, 1 + grid * grid, D}, conv[4] = {D, (uint64_t)ch, (uint64_t)patch,
                                                                              (uint64_t)patch};
    if (as_hf_add(h, "embeddings.cls_token", AS_TN_V_CLASS_EMBD, AS_HF_SQUEEZE, 0, 3, cls, "[1, 1, hidden_size]", false,
                  NULL, err) ||
        as_hf_add(h, "embeddings.position_embeddings", AS_TN_V_POS_EMBD ".weight", AS_HF_SQUEEZE, 0, 3, pos,
                  "[1, 1 + (image_size / patch_size)^2, hidden_size]", false, NULL, err) ||
        as_hf_add(h, "embeddings.patch_embeddings.projection.weight", AS_TN_V_PATCH_EMBD ".weight", AS_HF_AS_IS, 0, 4, conv,
                  "[hidden_size, num_channels, patch_size, patch_size]", false, NULL, err))
        return AS_ERR;
    const as_hf_rule top[] = {
        {"embeddings.patch_embeddings.projection.bias", AS_TN_V_PATCH_EMBD ".bias", AS_HF_AS_IS, 0, 1, D, 0,
         "[hidden_size]", false},
        {"layernorm.weight", AS_TN_V_POST_LN ".weight", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]", false},
        {"layernorm.bias", AS_TN_V_POST_LN ".bias", AS_HF_AS_IS, 0, 1, D, 0, "[hidden_size]", false},
        {"classifier.weight", AS_TN_V_HEAD ".weight", AS_HF_AS_IS, 0, 2, C, D, "[len(id2label), hidden_size]", false},
        {"classifier.bias", AS_TN_V_HEAD ".bias", AS_HF_AS_IS, 0, 1, C, 0, "[len(id2label)]", false},
    };
#define LIN(hf, gg, o, i, w)                                                                                         \
    {"encoder.layer.%d." hf ".weight", AS_TN_V_BLK gg ".weight", AS_HF_AS_IS, 0, 2, o, i, w, false},                \
    {"encoder.layer.%d." hf ".bias", AS_TN_V_BLK gg ".bias", AS_HF_AS_IS, 0, 1, o, 0, "[out]", false}
    const as_hf_rule blk[] = {
        LIN("layernorm_before", "ln1", D, 0, "[hidden_size]"), LIN("layernorm_after", "ln2", D, 0, "[hidden_size]"),
    };
    const as_hf_rule blk2[] = {
        LIN("attention.attention.query", "attn_q", D, D, "[hidden_size, hidden_size]"),
        LIN("attention.attention.key", "attn_k", D, D, "[hidden_size, hidden_size]"),
        LIN("attention.attention.value", "attn_v", D, D, "[hidden_size, hidden_size]"),
        LIN("attention.output.dense", "attn_out", D, D, "[hidden_size, hidden_size]"),
        LIN("intermediate.dense", "ffn_up", F, D, "[intermediate_size, hidden_size]"),
        LIN("output.dense", "ffn_down", D, F, "[hidden_size, intermediate_size]"),
    };
#undef LIN
    if (as_hf_add_rules(h, top, sizeof top / sizeof top[0], 0, err))
        return AS_ERR;
    for (int l = 0; l < (int)L; l++) {
        /* a LayerNorm's weight is a vector: the rule's second dimension is unused */
        as_hf_rule nb[4];
        memcpy(nb, blk, sizeof nb);
        for (int i = 0; i < 4; i++)
            nb[i].n_dims = 1;
        if (as_hf_add_rules(h, nb, 4, l, err) || as_hf_add_rules(h, blk2, sizeof blk2 / sizeof blk2[0], l, err))
            return AS_ERR;
    }
    return AS_OK;
}

/* ViTModel's pooler (ViTForImageClassification reads [CLS] instead). */
bool as_hf_vit_ignored(const char *name)
{
    return strstr(name, "pooler.dense.") != NULL;
}
