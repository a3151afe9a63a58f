/* Tiny GGUF models for the fuzz seeds and the reliability tests (see
 * tiny_models.h). Weights are a fixed pseudo-random sequence, so the same
 * spec always gives the same bytes. */
#include "tiny_models.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void tiny_put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void tiny_put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void tiny_default(tiny_spec *sp, bool llama)
{
    memset(sp, 0, sizeof *sp);
    sp->llama = llama;
    sp->version = 3;
    sp->d_model = 8;
    sp->n_layer = 1;
    sp->n_head = 2;
    sp->n_head_kv = llama ? 1 : 2;
    sp->d_ff = 16;
    sp->n_ctx = 8;
    sp->rope_dim = llama ? 4 : 0;
    sp->wtype = AS_GGML_F32;
    sp->tensor_layers = -1;
}

/* ---- vocabularies ---- */

/* gpt2: byte symbols for a-z, space (as 'Ġ') and '.', a few merges, and
 * <|endoftext|> last. */
static void gpt2_vocab(as_gguf_writer *w)
{
    const char *toks[64];
    char letters[26][2];
    int n = 0;
    for (int i = 0; i < 26; i++) {
        letters[i][0] = (char)('a' + i), letters[i][1] = '\0';
        toks[n++] = letters[i];
    }
    toks[n++] = "\xC4\xA0"; /* Ġ: the space byte */
    toks[n++] = ".";
    toks[n++] = "th";
    toks[n++] = "the";
    toks[n++] = "\xC4\xA0the";
    toks[n++] = "at";
    toks[n++] = "<|endoftext|>";
    static const char *const merges[] = {"t h", "th e", "\xC4\xA0 the", "a t"};
    int32_t types[64];
    for (int i = 0; i < n; i++)
        types[i] = i == n - 1 ? 3 : 1;
    as_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    as_gguf_writer_set_str(w, "tokenizer.ggml.pre", "gpt-2");
    as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, (uint64_t)n);
    as_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", AS_GGUF_INT32, types, (uint64_t)n);
    as_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", merges, 4);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)(n - 1));
    as_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)(n - 1));
}

/* llama: <unk> <s> </s>, optionally the 256 byte tokens, then pieces. */
static void llama_vocab(as_gguf_writer *w, bool byte_tokens)
{
    static const char *const pieces[] = {
        "\xE2\x96\x81", "e", "t", "a", "h", "c", "s", "o", "n", "i", "\xE2\x96\x81" "t", "th",
        "\xE2\x96\x81" "th", "\xE2\x96\x81" "the", "at", "\xE2\x96\x81" "c", "\xE2\x96\x81" "cat", "\xE2\x96\x81" "a",
    };
    enum { NP = sizeof pieces / sizeof pieces[0] };
    const char *toks[3 + 256 + NP];
    char bytes[256][7];
    float scores[3 + 256 + NP];
    int32_t types[3 + 256 + NP];
    int n = 0;
    toks[n] = "<unk>", scores[n] = 0, types[n++] = 2;
    toks[n] = "<s>", scores[n] = 0, types[n++] = 3;
    toks[n] = "</s>", scores[n] = 0, types[n++] = 3;
    for (int b = 0; byte_tokens && b < 256; b++) {
        snprintf(bytes[b], sizeof bytes[b], "<0x%02X>", b);
        toks[n] = bytes[b], scores[n] = 0, types[n++] = 6;
    }
    for (int i = 0; i < NP; i++)
        toks[n] = pieces[i], scores[n] = -(float)i, types[n++] = 1;
    as_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
    as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, (uint64_t)n);
    as_gguf_writer_set_arr(w, "tokenizer.ggml.scores", AS_GGUF_FLOAT32, scores, (uint64_t)n);
    as_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", AS_GGUF_INT32, types, (uint64_t)n);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0);
}

static uint64_t vocab_size(const tiny_spec *sp)
{
    return sp->llama ? 3 + (sp->byte_tokens ? 256 : 0) + 18 : 33;
}

/* ---- tensors ---- */

typedef struct builder {
    as_gguf_writer *w;
    const tiny_spec *sp;
    uint64_t seed;
    bool ok;
} builder;

static float next_weight(builder *b, float scale)
{
    b->seed = b->seed * 6364136223846793005ull + 1442695040888963407ull;
    return scale * ((float)(b->seed >> 40) / (float)(1u << 24) - 0.5f);
}

/* ne = [ne0, ne1] (ne1 0: a vector); vectors and norms stay F32. */
static void tensor(builder *b, const char *name, uint64_t ne0, uint64_t ne1, float scale, float base)
{
    uint64_t n = ne0 * (ne1 ? ne1 : 1), ne[2] = {ne0, ne1};
    float *x = malloc(n * sizeof *x);
    for (uint64_t i = 0; i < n; i++)
        x[i] = base + next_weight(b, scale);
    uint64_t at = b->sp->poison_at > 0 ? (uint64_t)b->sp->poison_at : 3;
    if (b->sp->poison_tensor && !strcmp(name, b->sp->poison_tensor) && n > at)
        x[at] = b->sp->poison_value;
    as_ggml_type type = ne1 ? b->sp->wtype : AS_GGML_F32;
    void *data = x;
    uint8_t *q = NULL;
    uint16_t *h = NULL;
    if (type == AS_GGML_F16 || type == AS_GGML_BF16) {
        h = malloc(n * sizeof *h);
        for (uint64_t i = 0; i < n; i++)
            h[i] = type == AS_GGML_F16 ? as_f32_to_f16(x[i]) : as_f32_to_bf16(x[i]);
        data = h;
    } else if (type == AS_GGML_Q8_0) {
        q = malloc(n / 32 * 34 + 34);
        as_quantize_q8_0(x, n, q);
        data = q;
    } else if (type != AS_GGML_F32) { /* types that cannot be dequantized: raw bytes */
        uint64_t bytes = as_ggml_nbytes(type, n);
        q = calloc(1, bytes ? bytes : 1);
        data = q;
    }
    as_error err;
    if (as_gguf_writer_add_tensor(b->w, name, type, ne1 ? 2 : 1, ne, data, &err)) {
        fprintf(stderr, "tiny model: %s: %s\n", name, err.msg);
        b->ok = false;
    }
    free(x), free(h), free(q);
}

static void layer_gpt2(builder *b, int l, uint64_t d, uint64_t f)
{
    char n[64];
#define T(suffix, a, c, s, base) snprintf(n, sizeof n, "blk.%d.%s", l, suffix), tensor(b, n, a, c, s, base)
    T("attn_norm.weight", d, 0, 0.2f, 1.0f);
    T("attn_norm.bias", d, 0, 0.2f, 0.0f);
    T("attn_qkv.weight", d, 3 * d, 1.0f, 0.0f);
    T("attn_qkv.bias", 3 * d, 0, 0.2f, 0.0f);
    T("attn_output.weight", d, d, 0.6f, 0.0f);
    T("attn_output.bias", d, 0, 0.2f, 0.0f);
    T("ffn_norm.weight", d, 0, 0.2f, 1.0f);
    T("ffn_norm.bias", d, 0, 0.2f, 0.0f);
    T("ffn_up.weight", d, f, 0.6f, 0.0f);
    T("ffn_up.bias", f, 0, 0.2f, 0.0f);
    T("ffn_down.weight", f, d, 0.4f, 0.0f);
    T("ffn_down.bias", d, 0, 0.2f, 0.0f);
#undef T
}

static void layer_llama(builder *b, int l, uint64_t d, uint64_t kv, uint64_t f)
{
    char n[64];
#define T(suffix, a, c, s, base) snprintf(n, sizeof n, "blk.%d.%s", l, suffix), tensor(b, n, a, c, s, base)
    T("attn_norm.weight", d, 0, 0.2f, 1.0f);
    T("attn_q.weight", d, d, 1.0f, 0.0f);
    T("attn_k.weight", d, kv, 1.0f, 0.0f);
    T("attn_v.weight", d, kv, 0.6f, 0.0f);
    T("attn_output.weight", d, d, 0.6f, 0.0f);
    T("ffn_norm.weight", d, 0, 0.2f, 1.0f);
    T("ffn_gate.weight", d, f, 0.6f, 0.0f);
    T("ffn_up.weight", d, f, 0.6f, 0.0f);
    T("ffn_down.weight", f, d, 0.4f, 0.0f);
#undef T
}

static void hyperparameters(as_gguf_writer *w, const tiny_spec *sp)
{
    const char *arch = sp->llama ? "llama" : "gpt2";
    char key[96];
#define U32(suffix, v) snprintf(key, sizeof key, "%s.%s", arch, suffix), as_gguf_writer_set_u32(w, key, (uint32_t)(v))
    as_gguf_writer_set_str(w, "general.architecture", arch);
    as_gguf_writer_set_str(w, "general.name", sp->llama ? "tiny llama" : "tiny gpt2");
    U32("context_length", sp->n_ctx);
    U32("embedding_length", sp->d_model);
    U32("block_count", sp->n_layer);
    U32("feed_forward_length", sp->d_ff);
    U32("attention.head_count", sp->n_head);
    snprintf(key, sizeof key, "%s.%s", arch, sp->llama ? "attention.layer_norm_rms_epsilon" : "attention.layer_norm_epsilon");
    as_gguf_writer_set_f32(w, key, 1e-5f);
    if (sp->llama) {
        U32("attention.head_count_kv", sp->n_head_kv);
        if (sp->rope_dim > 0)
            U32("rope.dimension_count", sp->rope_dim);
        snprintf(key, sizeof key, "%s.rope.freq_base", arch);
        as_gguf_writer_set_f32(w, key, 10000.0f);
    }
#undef U32
}

as_gguf_writer *tiny_writer(const tiny_spec *sp)
{
    as_gguf_writer *w = as_gguf_writer_new(sp->version);
    builder b = {w, sp, 0x9E3779B97F4A7C15ull, true};
    uint64_t d = (uint64_t)sp->d_model, f = (uint64_t)sp->d_ff, v = vocab_size(sp);
    uint64_t kv = sp->n_head ? d / (uint64_t)sp->n_head * (uint64_t)sp->n_head_kv : d;
    hyperparameters(w, sp);
    if (sp->llama)
        llama_vocab(w, sp->byte_tokens);
    else
        gpt2_vocab(w);
    tensor(&b, "token_embd.weight", d, v, 1.0f, 0.0f);
    if (!sp->llama)
        tensor(&b, "position_embd.weight", d, (uint64_t)sp->n_ctx, 0.3f, 0.0f);
    tensor(&b, "output_norm.weight", d, 0, 0.2f, 1.0f);
    if (!sp->llama)
        tensor(&b, "output_norm.bias", d, 0, 0.2f, 0.0f);
    else
        tensor(&b, "output.weight", d, v, 1.0f, 0.0f);
    int layers = sp->tensor_layers >= 0 ? sp->tensor_layers : sp->n_layer;
    for (int l = 0; l < layers; l++) {
        if (sp->llama)
            layer_llama(&b, l, d, kv, f);
        else
            layer_gpt2(&b, l, d, f);
    }
    if (!b.ok) {
        as_gguf_writer_free(w);
        return NULL;
    }
    return w;
}

int tiny_serialize(as_gguf_writer *w, uint8_t **buf, size_t *size)
{
    as_error err;
    int rc = w ? as_gguf_writer_to_memory(w, buf, size, &err) : -1;
    if (w && rc)
        fprintf(stderr, "tiny model: %s\n", err.msg);
    as_gguf_writer_free(w);
    return rc;
}

int tiny_save(as_gguf_writer *w, const char *path)
{
    as_error err;
    int rc = w ? as_gguf_writer_write(w, path, &err) : -1;
    if (w && rc)
        fprintf(stderr, "tiny model: %s\n", err.msg);
    as_gguf_writer_free(w);
    return rc;
}
