/* Writes the seed corpus of the fuzz targets (make fuzz-corpus):
 *   model/      tiny valid gpt2 and llama models in every weight type, and
 *               the semantically broken ones the loader must refuse or warn
 *               about (hyperparameters against shapes, NaN weights, a
 *               context of 2^31, a vocabulary with empty and duplicate
 *               tokens, layers missing or extra, unreadable types);
 *   gguf/       a few of those, a file with every metadata type, and
 *               hand-made malformed headers (a 10^12-element tensor, an
 *               array of 2^32 strings, bad magic, version, counts, offsets);
 *   tokenizer/  texts for the tokenizers, id lists, hostile vocabularies;
 *   session/    command lines covering every command;
 *   npy/        shapes and names for the .npy writer;
 *   llama2c/    llama2.c checkpoints and tokenizer files, alone and paired;
 *   hf/         Hugging Face directories' files (the byte 0 says which):
 *               small and broken safetensors headers, the fixtures'
 *               config.json and tokenizer.json, a shard index;
 *   run/        saved runs (`save run`) of tiny models: gpt2 and llama in
 *               f32, f16 and bf16, full, partial and no capture, after
 *               `gen`, and the fixtures' BERT, ViT and T5; a truncated one.
 * Deterministic: the same source gives the same bytes. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attnscope/gguf.h"
#include "attnscope/kernels.h"
#include "attnscope/model.h"
#include "attnscope/session.h"
#include "tiny_models.c"

static const char *root;
static int written;

static void put(const char *target, const char *name, const void *data, size_t n)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, target);
    mkdir(path, 0755);
    snprintf(path, sizeof path, "%s/%s/%s", root, target, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n || fclose(f)) {
        fprintf(stderr, "make_corpus: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    written++;
}

static void put_writer(const char *target, const char *name, as_gguf_writer *w)
{
    uint8_t *buf;
    size_t n;
    if (tiny_serialize(w, &buf, &n)) {
        fprintf(stderr, "make_corpus: %s/%s failed\n", target, name);
        exit(1);
    }
    put(target, name, buf, n);
    free(buf);
}

/* ---- models ---- */

static void model(const char *name, const tiny_spec *sp, bool also_gguf)
{
    put_writer("model", name, tiny_writer(sp));
    if (also_gguf)
        put_writer("gguf", name, tiny_writer(sp));
}

static void models(void)
{
    tiny_spec g, l, s;
    tiny_default(&g, false);
    tiny_default(&l, true);
    model("gpt2-f32.gguf", &g, true);
    model("llama-f32.gguf", &l, true);
    s = g, s.wtype = AS_GGML_F16, s.version = 2;
    model("gpt2-f16-v2.gguf", &s, false);
    s = g, s.wtype = AS_GGML_BF16, s.n_layer = 2;
    model("gpt2-bf16-2layers.gguf", &s, false);
    s = g, s.wtype = AS_GGML_Q8_0, s.d_model = 32, s.d_ff = 32, s.n_head = 4;
    model("gpt2-q8_0.gguf", &s, true);
    s = l, s.wtype = AS_GGML_F16, s.byte_tokens = true;
    model("llama-f16-bytes.gguf", &s, false);
    s = l, s.wtype = AS_GGML_Q8_0, s.d_model = 32, s.d_ff = 32, s.n_head = 4, s.n_head_kv = 2, s.rope_dim = 8;
    model("llama-q8_0-gqa.gguf", &s, false);
    s = l, s.rope_dim = 0;
    model("llama-rope-default.gguf", &s, false);

    /* weights a broken conversion leaves: load with a warning */
    s = g, s.poison_tensor = "blk.0.attn_qkv.weight", s.poison_value = NAN;
    model("gpt2-nan-weight.gguf", &s, false);
    s = l, s.poison_tensor = "blk.0.ffn_up.weight", s.poison_value = INFINITY;
    model("llama-inf-weight.gguf", &s, false);

    /* hyperparameters that contradict the tensors: refused */
    as_gguf_writer *w;
    w = tiny_writer(&g), as_gguf_writer_set_u32(w, "gpt2.attention.head_count", 3);
    put_writer("model", "gpt2-heads-not-divisor.gguf", w);
    w = tiny_writer(&l), as_gguf_writer_set_u32(w, "llama.attention.head_count_kv", 3);
    put_writer("model", "llama-kv-heads-not-divisor.gguf", w);
    w = tiny_writer(&l), as_gguf_writer_set_u32(w, "llama.attention.head_count_kv", 2);
    put_writer("model", "llama-kv-heads-vs-attn_k.gguf", w);
    s = l, s.rope_dim = 0; /* the default rope width follows the head size */
    w = tiny_writer(&s), as_gguf_writer_set_u32(w, "llama.attention.head_count", 4);
    put_writer("model", "llama-heads-vs-attn_k.gguf", w);
    w = tiny_writer(&l), as_gguf_writer_set_u32(w, "llama.rope.dimension_count", 3);
    put_writer("model", "llama-rope-odd.gguf", w);
    w = tiny_writer(&l), as_gguf_writer_set_u32(w, "llama.rope.dimension_count", 16);
    put_writer("model", "llama-rope-past-head.gguf", w);
    w = tiny_writer(&l), as_gguf_writer_set_f32(w, "llama.rope.freq_base", -1.0f);
    put_writer("model", "llama-rope-base-negative.gguf", w);
    w = tiny_writer(&l), as_gguf_writer_set_f32(w, "llama.attention.layer_norm_rms_epsilon", NAN);
    put_writer("model", "llama-eps-nan.gguf", w);
    w = tiny_writer(&g), as_gguf_writer_set_f32(w, "gpt2.attention.layer_norm_epsilon", -1.0f);
    put_writer("model", "gpt2-eps-negative.gguf", w);
    w = tiny_writer(&g), as_gguf_writer_set_u32(w, "gpt2.embedding_length", 16);
    put_writer("model", "gpt2-width-vs-shapes.gguf", w);
    w = tiny_writer(&g), as_gguf_writer_set_u32(w, "gpt2.context_length", 16);
    put_writer("model", "gpt2-ctx-vs-position_embd.gguf", w);
    w = tiny_writer(&g), as_gguf_writer_set_u32(w, "gpt2.context_length", 0x80000000u);
    put_writer("model", "gpt2-ctx-2p31.gguf", w);
    w = tiny_writer(&l), as_gguf_writer_set_u64(w, "llama.context_length", 1ull << 31);
    put_writer("model", "llama-ctx-2p31.gguf", w);
    w = tiny_writer(&g), as_gguf_writer_set_u32(w, "gpt2.feed_forward_length", 32);
    put_writer("model", "gpt2-ffn-vs-shapes.gguf", w);
    s = g, s.n_layer = 2, s.tensor_layers = 1;
    model("gpt2-layer-missing.gguf", &s, false);
    s = g, s.n_layer = 1, s.tensor_layers = 2;
    model("gpt2-layer-extra.gguf", &s, false);
    s = l, s.n_layer = 1, s.tensor_layers = 3;
    model("llama-layers-extra.gguf", &s, false);
    s = g, s.wtype = AS_GGML_I8;
    model("gpt2-i8-unreadable.gguf", &s, false);
    w = tiny_writer(&g), as_gguf_writer_set_str(w, "general.architecture", "mamba");
    put_writer("model", "arch-unknown.gguf", w);
    w = tiny_writer(&g), as_gguf_writer_set_str(w, "tokenizer.ggml.model", "rwkv");
    put_writer("model", "tokenizer-unknown.gguf", w);
    /* SentencePiece Unigram over gpt2's byte symbols, without a charsmap */
    w = tiny_writer(&g), as_gguf_writer_set_str(w, "tokenizer.ggml.model", "t5");
    put_writer("model", "tokenizer-t5-on-gpt2.gguf", w);
    /* a WordPiece tokenizer over gpt2's byte symbols: most words [UNK] */
    w = tiny_writer(&g), as_gguf_writer_set_str(w, "tokenizer.ggml.model", "bert");
    as_gguf_writer_set_u32(w, "tokenizer.ggml.mask_token_id", 40);
    put_writer("model", "tokenizer-bert-on-gpt2.gguf", w);

    /* strings from the file that reach the terminal: must arrive escaped */
    w = tiny_writer(&g), as_gguf_writer_set_str(w, "general.architecture", "gpt2\x1b[2J\x1b[31m");
    put_writer("model", "arch-escape-sequence.gguf", w);
    w = tiny_writer(&g), as_gguf_writer_set_str(w, "tokenizer.ggml.model", "\x1b]0;title\x07\xc2\x9b");
    put_writer("model", "tokenizer-escape-sequence.gguf", w);
    {
        float bad[4] = {1.0f, NAN, 2.0f, INFINITY};
        uint64_t ne[1] = {4};
        as_error e;
        w = tiny_writer(&g);
        as_gguf_writer_add_tensor(w, "evil\x1b[2J\x1b[31m", AS_GGML_F32, 1, ne, bad, &e);
        put_writer("model", "gpt2-tensor-name-escape-nan.gguf", w);
    }

    /* vocabularies: token_embd rows against the token list; empty and
     * duplicate tokens (same count, so the model loads) */
    const char *toks[40];
    char one[33][2];
    for (int i = 0; i < 33; i++)
        one[i][0] = (char)('a' + i % 26), one[i][1] = '\0', toks[i] = one[i];
    toks[34 - 1] = "extra";
    int32_t types[34];
    for (int i = 0; i < 34; i++)
        types[i] = 1;
    w = tiny_writer(&g), as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 34);
    as_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", AS_GGUF_INT32, types, 34);
    put_writer("model", "gpt2-vocab-vs-token_embd.gguf", w);
    toks[3] = "", toks[7] = "", toks[32] = "<|endoftext|>";
    w = tiny_writer(&g), as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 33);
    put_writer("model", "gpt2-vocab-empty-and-duplicates.gguf", w);
    for (int i = 0; i < 21; i++)
        toks[i] = i % 3 ? "\xE2\x96\x81" : "";
    w = tiny_writer(&l), as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", toks, 21);
    put_writer("model", "llama-vocab-all-empty-or-same.gguf", w);
}

/* ---- hand-made GGUF headers ---- */

typedef struct bytes {
    uint8_t b[4096];
    size_t n;
} bytes;

static void u32(bytes *o, uint32_t v) { tiny_put_u32(o->b + o->n, v), o->n += 4; }
static void u64(bytes *o, uint64_t v) { tiny_put_u64(o->b + o->n, v), o->n += 8; }
static void str(bytes *o, const char *s)
{
    u64(o, strlen(s));
    memcpy(o->b + o->n, s, strlen(s));
    o->n += strlen(s);
}
static void header(bytes *o, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    o->n = 0;
    u32(o, AS_GGUF_MAGIC), u32(o, version), u64(o, n_tensors), u64(o, n_kv);
}
static void pad(bytes *o, size_t align, size_t extra)
{
    while (o->n % align)
        o->b[o->n++] = 0;
    memset(o->b + o->n, 0x3c, extra); /* data: float 0.0117 in every F32 */
    o->n += extra;
}

static void malformed(void)
{
    bytes o;
    /* a tensor claiming 10^12 elements (4 TB) in a 128-byte file */
    header(&o, 3, 1, 0);
    str(&o, "big"), u32(&o, 2), u64(&o, 1000000), u64(&o, 1000000), u32(&o, AS_GGML_F32), u64(&o, 0);
    pad(&o, 32, 64);
    put("gguf", "tensor-1e12-elements.gguf", o.b, o.n);
    /* an array of 2^32 strings: a vocabulary of 2^32 tokens */
    header(&o, 3, 0, 1);
    str(&o, "tokenizer.ggml.tokens"), u32(&o, AS_GGUF_ARRAY), u32(&o, AS_GGUF_STRING), u64(&o, 1ull << 32);
    str(&o, "a"), str(&o, "b");
    put("gguf", "vocab-2p32.gguf", o.b, o.n);
    /* a uint64 context length of 2^31 with nothing else */
    header(&o, 3, 0, 2);
    str(&o, "general.architecture"), u32(&o, AS_GGUF_STRING), str(&o, "llama");
    str(&o, "llama.context_length"), u32(&o, AS_GGUF_UINT64), u64(&o, 1ull << 31);
    put("gguf", "ctx-2p31-only.gguf", o.b, o.n);
    /* counts far past the file */
    header(&o, 3, 1ull << 40, 0);
    put("gguf", "tensor-count-2p40.gguf", o.b, o.n);
    header(&o, 3, 0, UINT64_MAX);
    put("gguf", "kv-count-max.gguf", o.b, o.n);
    header(&o, 3, 0, 1);
    str(&o, "k"), u32(&o, AS_GGUF_STRING), u64(&o, UINT64_MAX - 3);
    put("gguf", "string-length-max.gguf", o.b, o.n);
    header(&o, 3, 0, 1);
    str(&o, "k"), u32(&o, AS_GGUF_ARRAY), u32(&o, AS_GGUF_FLOAT64), u64(&o, 1ull << 61);
    put("gguf", "array-bytes-overflow.gguf", o.b, o.n);
    header(&o, 3, 0, 1);
    str(&o, "k"), u32(&o, AS_GGUF_ARRAY), u32(&o, AS_GGUF_ARRAY), u64(&o, 1);
    put("gguf", "nested-array.gguf", o.b, o.n);
    /* header fields */
    header(&o, 1, 0, 0);
    put("gguf", "version-1.gguf", o.b, o.n);
    header(&o, 0x03000000u, 0, 0);
    put("gguf", "version-big-endian.gguf", o.b, o.n);
    header(&o, 3, 0, 0);
    o.b[0] = 'F';
    put("gguf", "bad-magic.gguf", o.b, o.n);
    header(&o, 3, 0, 0);
    put("gguf", "empty-model.gguf", o.b, o.n);
    put("gguf", "truncated-header.gguf", o.b, 13);
    /* tensor records */
    header(&o, 3, 1, 0);
    str(&o, "t"), u32(&o, 5), u64(&o, 1), u64(&o, 1), u64(&o, 1), u64(&o, 1), u64(&o, 1), u32(&o, 0), u64(&o, 0);
    put("gguf", "tensor-5-dims.gguf", o.b, o.n);
    header(&o, 3, 1, 0);
    str(&o, "t"), u32(&o, 1), u64(&o, 0), u32(&o, AS_GGML_F32), u64(&o, 0);
    pad(&o, 32, 32);
    put("gguf", "tensor-ne-0.gguf", o.b, o.n);
    header(&o, 3, 1, 0);
    str(&o, "t"), u32(&o, 1), u64(&o, 8), u32(&o, AS_GGML_F32), u64(&o, 4);
    pad(&o, 32, 64);
    put("gguf", "tensor-offset-misaligned.gguf", o.b, o.n);
    header(&o, 3, 1, 0);
    str(&o, "t"), u32(&o, 1), u64(&o, 8), u32(&o, 99), u64(&o, 0);
    pad(&o, 32, 64);
    put("gguf", "tensor-type-99.gguf", o.b, o.n);
    header(&o, 3, 1, 0);
    str(&o, "t"), u32(&o, 1), u64(&o, 33), u32(&o, AS_GGML_Q8_0), u64(&o, 0);
    pad(&o, 32, 64);
    put("gguf", "tensor-q8-partial-block.gguf", o.b, o.n);
    header(&o, 3, 2, 0);
    str(&o, "t"), u32(&o, 1), u64(&o, 8), u32(&o, AS_GGML_F32), u64(&o, 0);
    str(&o, "t"), u32(&o, 1), u64(&o, 8), u32(&o, AS_GGML_F32), u64(&o, 32);
    pad(&o, 32, 64);
    put("gguf", "tensor-name-duplicate.gguf", o.b, o.n);
    header(&o, 3, 2, 0); /* two tensors over the same bytes: allowed, as llama.cpp does */
    str(&o, "a"), u32(&o, 1), u64(&o, 8), u32(&o, AS_GGML_F32), u64(&o, 0);
    str(&o, "b"), u32(&o, 2), u64(&o, 4), u64(&o, 2), u32(&o, AS_GGML_F16), u64(&o, 0);
    pad(&o, 32, 32);
    put("gguf", "tensors-overlapping.gguf", o.b, o.n);
    header(&o, 3, 0, 2);
    str(&o, "k"), u32(&o, AS_GGUF_UINT8), o.b[o.n++] = 1;
    str(&o, "k"), u32(&o, AS_GGUF_UINT8), o.b[o.n++] = 2;
    put("gguf", "key-duplicate.gguf", o.b, o.n);
    header(&o, 3, 1, 1);
    str(&o, "general.alignment"), u32(&o, AS_GGUF_UINT32), u32(&o, 48);
    str(&o, "t"), u32(&o, 1), u64(&o, 8), u32(&o, AS_GGML_F32), u64(&o, 0);
    pad(&o, 64, 64);
    put("gguf", "alignment-not-power-of-2.gguf", o.b, o.n);
}

/* every metadata type, strings with NUL and control bytes, tensors of
 * every readable type and some unreadable ones, alignment 64 */
static void zoo(void)
{
    as_gguf_writer *w = as_gguf_writer_new(3);
    uint8_t u8 = 200;
    int64_t i64 = -5;
    double f64 = 0.25;
    as_gguf_writer_set_u32(w, "general.alignment", 64);
    as_gguf_writer_set_scalar(w, "a.u8", AS_GGUF_UINT8, &u8);
    as_gguf_writer_set_scalar(w, "a.i8", AS_GGUF_INT8, &u8);
    as_gguf_writer_set_scalar(w, "a.i64", AS_GGUF_INT64, &i64);
    as_gguf_writer_set_scalar(w, "a.f64", AS_GGUF_FLOAT64, &f64);
    as_gguf_writer_set_i32(w, "a.i32", -7);
    as_gguf_writer_set_u64(w, "a.u64", 1ull << 40);
    as_gguf_writer_set_f32(w, "a.f32", NAN);
    as_gguf_writer_set_bool(w, "a.bool", true);
    as_gguf_writer_set_str(w, "a.str", "esc\x1b[31m red \xC3\xA9 \xFF");
    int16_t arr16[3] = {-1, 2, 3};
    float arrf[3] = {1.0f, INFINITY, -0.0f};
    as_gguf_writer_set_arr(w, "a.arr_i16", AS_GGUF_INT16, arr16, 3);
    as_gguf_writer_set_arr(w, "a.arr_f32", AS_GGUF_FLOAT32, arrf, 3);
    as_gguf_writer_set_arr(w, "a.arr_empty", AS_GGUF_UINT8, arr16, 0);
    const char *strs[] = {"", "x", "\xE2\x96\x81y"};
    as_gguf_writer_set_arr_str(w, "a.arr_str", strs, 3);
    float x[64];
    for (int i = 0; i < 64; i++)
        x[i] = (float)i / 7.0f - 3.0f;
    uint16_t h[64];
    uint8_t q[2 * 34];
    as_error err;
    uint64_t ne[2] = {32, 2};
    as_gguf_writer_add_tensor(w, "f32", AS_GGML_F32, 2, ne, x, &err);
    for (int i = 0; i < 64; i++)
        h[i] = as_f32_to_f16(x[i]);
    as_gguf_writer_add_tensor(w, "f16", AS_GGML_F16, 2, ne, h, &err);
    for (int i = 0; i < 64; i++)
        h[i] = as_f32_to_bf16(x[i]);
    as_gguf_writer_add_tensor(w, "bf16", AS_GGML_BF16, 2, ne, h, &err);
    as_quantize_q8_0(x, 64, q);
    as_gguf_writer_add_tensor(w, "q8_0", AS_GGML_Q8_0, 2, ne, q, &err);
    as_gguf_writer_add_tensor(w, "q4_0", AS_GGML_Q4_0, 1, ne, q, &err); /* 18 bytes: unreadable type */
    as_gguf_writer_add_tensor(w, "i8", AS_GGML_I8, 1, ne, q, &err);
    uint64_t ne4[4] = {2, 2, 2, 2};
    as_gguf_writer_add_tensor(w, "4d", AS_GGML_F32, 4, ne4, x, &err);
    put_writer("gguf", "zoo-every-type.gguf", w);
}

/* ---- the other targets ---- */

static void text(const char *target, const char *name, uint8_t mode, const char *s, size_t n)
{
    uint8_t buf[1024];
    buf[0] = mode;
    memcpy(buf + 1, s, n);
    put(target, name, buf, n + 1);
}

#define TEXT(name, mode, lit) text("tokenizer", name, mode, lit, sizeof(lit) - 1)

static void tokenizer_seeds(void)
{
    TEXT("gpt2-ascii", 0, "the cat sat on the mat, the dog ate!");
    TEXT("gpt2-bos-contractions", 4, "I'll don't we've 's 'S  123 4567 hello\tworld\n\n  end");
    TEXT("gpt2-unicode", 0, "caf\xC3\xA9 \xE4\xB8\xAD\xE6\x96\x87 \xF0\x9F\x98\x80 \xE2\x96\x81 <|endoftext|>");
    TEXT("gpt2-invalid-utf8", 0, "\xFF\xFE\xC3 \xE2\x82 \xED\xA0\x80 \xF4\x90\x80\x80 \xC0\xAF\x80");
    TEXT("llama-ascii", 1, "the cat sat on a mat, hi");
    TEXT("llama-spaces", 5, "   leading and  double  spaces \n trailing ");
    TEXT("llama-specials", 1, "<s></s><unk><0x41> \xC3\xA9!");
    TEXT("llama-invalid-utf8", 1, "\xFF\x80\xC3\x28 \xF0\x28\x8C\xBC");
    TEXT("bert-words", 8, "The Cat's un-affable, CAF\xC3\x89! \xE4\xB8\xAD\xE6\x96\x87 a\xCC\x81" "b [MASK] x\ty");
    TEXT("bert-specials", 12, "[CLS] the [MASK] sat. [SEP] a [SEP][PAD][mask] [UNK");
    /* bit 5: the tokenizers library's normalisation (Hangul, İ, marks out of order, NEL, NUL, astral CJK) */
    TEXT("bert-lib-words", 40, "\xED\x95\x9C\xEA\xB5\xAD\xEC\x96\xB4 \xC4\xB0 CAF\xC3\x89 a\xCC\x82\xCC\xA3 ca\xC2\x85"
                               "fe \xF0\xA0\x80\x80x \xE4\xB8\xAD\x00z \xCE\xA3\xCE\xA3 \xFF");
    TEXT("bert-invalid-utf8", 9, "\xFF\x80" "ab\xC3\x28 \xED\xA0\x80 \xE2\x82 \xF4\x90\x80\x80" "c \xC0\xAF\x01\x00z");
    TEXT("decode-ids", 2, "\x00\x00\x00\x00\x01\x00\x00\x00\x14\x01\x00\x00\xff\xff\xff\xff\x10\x00\x00\x80");
    /* hostile vocabularies: kind, flags, bos, eos, unk, tokens split by 0x01, NUL, text */
    TEXT("vocab-gpt2-dups-empty", 3, "\x00\x07\x02\x02\xff" "a\x01" "b\x01\x01" "ab\x01" "a\x01\x01" "ab" "\x00" "abab ba");
    TEXT("vocab-llama-bytes", 3, "\x01\x3f\x01\x02\x00" "<unk>\x01<s>\x01</s>\x01<0x61>\x01\xE2\x96\x81\x01" "a\x01\xE2\x96\x81" "a" "\x00" "a a\xC3\xA9");
    TEXT("vocab-one-empty", 3, "\x00\x00\xff\xff\xff" "\x00" "text");
    TEXT("vocab-bert", 3, "\x02\x04\x02\x03\x01" "[PAD]\x01[UNK]\x01[CLS]\x01[SEP]\x01\xE2\x96\x81" "a\x01" "a\x01\x01\xE2\x96\x81" "ab" "\x00" "Ab aab [SEP] \xC3\xA1\xC3\x84 b");
    TEXT("vocab-user-tokens", 3, "\x01\x05\x00\x00\x00" "<a>\x01<a>\x01<ab>\x01x\x01" "\x00" "x<a><ab>x<a");
    /* t5 (SentencePiece Unigram, fixtures/t5-ugm.gguf): byte 0 with bit 4 set */
    text("tokenizer", "t5-mixed", 16, "\x20\x20\xef\xbc\xa1\xef\xbc\xa2\xef\xbc\xa3\x20\x20\x48\x61\x75\x73\x09\x61\x75\x66\x67\x61\x62\x65\x20"
        "\x3c\x65\x78\x74\x72\x61\x5f\x69\x64\x5f\x30\x3e\x5b\x5b\x73\x65\x20\xc3\x28\x20\xf0\x9f\x98\x20\xe2\x96"
        "\x81\x78\x00\x79", 56);
    text("tokenizer", "t5-specials", 20, "\x3c\x2f\x73\x3e\x3c\x70\x61\x64\x3e\x20\xef\xbd\xb6\xef\xbe\x80\xef\xbd\xb6\xef\xbe\x85\x20\xef\xac\x81"
        "\x6e\x65\x20\x3c\x75\x6e\x6b\x3e\x0a\x0d\x0a\x20\x65\x6e\x64", 41);
    /* a t5 vocabulary from the input: tokens, then a small precompiled charsmap
     * (a double-array trie of one entry and its replacement) as the text */
    put("tokenizer", "vocab-t5-charsmap", (const uint8_t *)
        "\x03\x04\x46\xff\x01\x02\x3c\x70\x61\x64\x3e\x01\x3c\x2f\x73\x3e\x01\x3c\x75\x6e\x6b\x3e\x01\xe2\x96\x81"
        "\x01\x78\x01\xe2\x96\x81\x78\x01\x41\x00\x00\x0c\x00\x00\x00\x00\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x41\x05"
        "\x0d\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
        "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x78\x00", 3114);
}

#define CMD(name, budget, lit) text("session", name, budget, lit, sizeof(lit) - 1)

static void session_seeds(void)
{
    CMD("prompt-finish-top", 2, "prompt the cat sat; finish; top 5; tokens; where");
    CMD("step-back", 2, "prompt-ids 276 257 262; step 3; back 2; where; step 40; back 100; next; next");
    CMD("break-continue", 1, "break blocks.*.attn.hook_pattern; prompt \"hi \\x41\\n\"; continue; continue; unbreak blocks.*; finish");
    CMD("gen-to-end", 2, "set temp 0.9; set seed 7; set topk 5; set topp 0.9; prompt the; gen 40; tokens");
    CMD("gen-no-capture", 0, "prompt-ids 1 2 3; gen 5; stats unembed.hook_out; dump blocks.0.hook_resid_pre x.npy; top");
    CMD("dump-stats-norms", 2, "prompt the cat; finish; stats hook_embed; norms 0; norms 1; norms final; dump blocks.0.attn.hook_pattern p.npy; hooks blocks.0.*");
    CMD("lens-dla-heads", 2, "prompt the cat sat on the mat; finish; lens; lens table; lens 2; dla \" the\"; dla 257 3; heads; heads context threshold=0.1");
    CMD("instrument-exports", 2, "prompt the cat sat on the mat; finish; lens 3 l.npy; lens table t.npy; dla \" the\" 4 d.npy; dla \" the\" d.png dpi=60; heads h.npy; heads context h.svg title=x; metric 40 41; patch sweep heads from \"the dog sat on the mat\" s.png dpi=50; patch sweep resid_pre from \"the dog sat on the mat\" s.svg");
    CMD("ablate-compare", 2, "prompt the cat; ablate 1.3 zero; ablate 0.1 mean; ablate mlp 0; ablations; compare; metric a b; compare; unablate; ablations");
    CMD("patch", 2, "prompt the cat; patch blocks.0.hook_resid_pre from \"the dog\" pos=1; compare; metric \" cat\" \" dog\"; patch sweep resid_pre from \"the dog\" sweep.npy; patch sweep heads from \"the dog\"");
    CMD("watch", 1, "watch blocks.*.ln1.hook_scale max > 1; watch hook_embed nan; watches; prompt the cat; continue; gen 3; unwatch; watches");
    CMD("weights-diff-info", 2, "weights; weights blk.0.*; weights token_embd.weight; diff other.gguf; info; help; help gen");
    CMD("errors", 2, "prompt; prompt-ids; prompt-ids 999999; step x; set temp -1; set nope 1; top 0; stats; dump x; norms 9; back; gen 0; \"unterminated");
    CMD("quit-early", 2, "prompt a; quit; finish");
    CMD("export", 2, "prompt the cat; gen 3; export attn 0 1 a.png cmap=magma; export grid all g.svg; export norms 0 n.png; "
                     "export norms final n.svg; export probs p.svg top=3; export probs-trace t.png title=\"x\"; dump all d");
    /* the other architectures: byte 0 is budget + 3 x model (fuzz_session.c's order) */
    CMD("bert", 2 + 3 * 1, "prompt \"the [MASK] sat on\" \"the mat\"; finish; fill 3; fill 2 4; top 2; embed e.npy; "
                           "similarity \"a cat\" \"the dog\"; token-types 0 0 1; gen 2; lens; lens table; dla x; "
                           "heads context; export attn 0 1 a.png; export lines 1 all l.svg; dump all d");
    CMD("bert-no-capture", 0 + 3 * 1, "prompt the [MASK]; step 5; back 2; finish; fill; norms 1; stats hook_embed");
    CMD("transformer", 2 + 3 * 2, "source the cat sat on a mat; finish; gen 3; tokens; norms 0; norms 1; "
                                  "export attn 1 2 x.png site=cross; export grid all g.svg site=cross; "
                                  "export attn 0 0 e.png site=encoder; lens; dla x; heads; ablate 0.1 zero; compare; "
                                  "source-ids 1 275; prompt-ids 2 279; finish; dump all d");
    CMD("transformer-errors", 1 + 3 * 2, "gen 2; prompt-ids 2 3; finish; source; source-ids 99999; step 7; back 3; "
                                         "next; finish; image img.png");
    CMD("vit", 2 + 3 * 3, "image img.png; tokens; finish; top 3; rollout; rollout r.npy; rollout r.png; lens r1c1; "
                          "norms 0; export overlay 1 mean o.png; export overlay 0 all o.svg; export attn 0 0 a.png; "
                          "gen 1; prompt hi; heads; ablate 1.2 zero; compare; dump all d");
    CMD("vit-no-image", 0 + 3 * 3, "top; finish; rollout; image nope.png; image other.gguf; step 4; back 1");
    CMD("moe", 2 + 3 * 5, "prompt the cat sat; finish; gen 3; dump blocks.0.mlp.hook_expert_indices i.npy; "
                          "ablate expert 0.1; route 1.2 off; route 1.9 off; ablate expert 7.0; ablations; compare; "
                          "unablate; hooks blocks.1.mlp.*; experts; experts 1; experts 9; export load l.png; "
                          "export routing 1 r.svg; export routing 7 r.png; export experts 1 x.svg; export experts 7 x.png; "
                          "dump all d");
    /* the commands of the interpretability wave */
    CMD("attribute", 2, "prompt the cat sat; metric \" mat\" \" dog\"; attribute heads from \"the dog sat\"; "
                        "attribute resid from \"the dog sat\" a.npy; attribute mlp from \"the dog sat\" a.png; "
                        "attribute attn from \"the dog sat\" a.svg; attribute heads from \"x\"; attribute nope from \"a b c\"");
    CMD("patch-head", 2, "prompt the cat sat; metric 40 41; patch 0.1 from \"the dog sat\" pos=1; compare; "
                         "patch 1.0 from \"the dog sat\"; patch 7.7 from \"the dog sat\"; ablations; unablate; compare");
    CMD("ablate-mean-over", 2, "prompt the cat; ablate 0.1 mean over prompts.txt; compare; ablate 1.0 mean over nope.txt; "
                               "ablate 0.0 mean over other.gguf; ablate 0.1 mean over; ablations");
    CMD("grad-saliency", 2, "prompt the cat sat; metric logprob \" on\"; grad blocks.0.hook_resid_pre; "
                            "grad blocks.0.hook_resid_pre g.npy; saliency; saliency ig=4 s.npy; metric prob 40 2; "
                            "grad hook_embed; grad blocks.1.attn.hook_pattern; saliency ig=0; metric logit 1 99");
    CMD("steer", 2, "prompt-ids 5; metric 40 41; grad blocks.1.hook_resid_post v.npy; prompt the cat; "
                    "steer blocks.1.hook_resid_post v.npy scale=2; finish; steer blocks.0.hook_resid_pre v.npy pos=1; "
                    "ablations; compare; unablate; dump hook_embed w.npy; steer blocks.0.hook_resid_pre w.npy; "
                    "steer blocks.0.hook_resid_pre nope.npy; finish; top 2");
    CMD("circuit-weight", 2, "circuit ov 1.0 top=3; circuit qk 0.1 c.npy; circuit ov 0.0 c.png; circuit qk 9.9; "
                             "circuit ov 1.1 c.svg top=2; weight token_embd.weight; weight blk.0.attn_qkv.weight w.npy; "
                             "weight nope");
    CMD("exports-lens-distance", 2, "prompt the cat sat on the mat; finish; export lens l.png; export distance d.svg; "
                                    "export lens l.pdf title=x; export distance d.png dpi=40; export distance");
    CMD("retrieval-zoom", 2, "prompt the key is 7 and the key is 7; finish; retrieval \"key is 7\"; "
                             "retrieval nope threshold=0.5; heads context; zoom 0 1 2 max; zoom 1 0 1 mean z.npy; "
                             "zoom 0 0 3 max; zoom 9 0 2 max");
    CMD("settings", 2, "set attn-result on; set in-hooks on; prompt the cat; finish; hooks blocks.0.*; "
                       "dump blocks.0.attn.hook_result r.npy; set patterns on-demand; finish; export attn 0 1 a.png; "
                       "set capture-file cap.bin; prompt the dog; finish; top; set capture-file off; set patterns auto; "
                       "set; set attn-result off; set in-hooks maybe");
    CMD("save-run", 2, "prompt the cat; finish; save run r.run; save run r.run dtype=f16; save run r.run dtype=bf16; "
                       "save run r.run dtype=f8; save run; save; set capture-file c.bin; gen 2; save run r2.run");
    /* byte 0: 2 + 3 x 6, the saved run of tiny-gpt2 */
    CMD("saved-run", 2 + 3 * 6, "info; hooks; top 3; tokens; heads context; zoom 0 1 2 max; export attn 0 0 a.png; "
                                "dump all d; export distance d.svg; metric; prompt x; gen 2; grad hook_embed; "
                                "export lens l.png; save run again.run; heads; lens; stats hook_embed; norms 0; set; "
                                "retrieval the; patch 0.1 from \"a b\"; attribute heads from \"a\"");
    CMD("bert-attribute", 2 + 3 * 1, "prompt the [MASK] sat; metric 5 6; attribute heads from \"a [MASK] sat\"; "
                                     "grad hook_embed; saliency; save run b.run; export distance d.svg");
    CMD("t5-save-run", 2 + 3 * 4, "source the cat; prompt-ids 0 1; finish; save run t.run dtype=bf16; "
                                  "heads context; zoom 0 0 1 max; export distance d.svg");
    CMD("t5", 2 + 3 * 4, "source the cat; finish; gen 2; export attn 0 0 t.png site=cross; norms 0; embed; "
                         "stats decoder.0.attn.hook_position_bias; dump all d");
}


/* ---- saved runs ---- */

/* A session over a model file's bytes (named as the run will record it),
 * the commands run, then `save run` into run/NAME. */
static void run_seed(const char *name, const char *model_name, const uint8_t *file, size_t n, size_t budget,
                     const char *cmds, const char *dtype)
{
    as_gguf *g;
    as_model *m;
    as_session *s;
    as_error err;
    char path[1024], line[2048];
    snprintf(path, sizeof path, "%s/run", root);
    mkdir(path, 0755);
    snprintf(line, sizeof line, "%s; save run %s/run/%s dtype=%s", cmds, root, name, dtype);
    FILE *devnull = fopen("/dev/null", "w");
    if (as_gguf_parse(&g, file, n, model_name, &err) || as_model_from_gguf(&m, g, &err) ||
        as_session_from_model(&s, m, budget, devnull, stderr, &err)) {
        fprintf(stderr, "make_corpus: run/%s: %s\n", name, err.msg);
        exit(1);
    }
    int nc;
    char **c = as_split_commands(line, &nc);
    for (int i = 0; i < nc; i++)
        if (as_session_exec(s, c[i], &err)) {
            fprintf(stderr, "make_corpus: run/%s: '%s': %s\n", name, c[i], err.msg);
            exit(1);
        }
    as_free_commands(c, nc);
    as_session_free(s);
    fclose(devnull);
    written++;
}

static void run_tiny(const char *name, const tiny_spec *sp, size_t budget, const char *cmds, const char *dtype)
{
    uint8_t *buf;
    size_t n;
    if (tiny_serialize(tiny_writer(sp), &buf, &n))
        exit(1);
    run_seed(name, sp->llama ? "tiny-llama.gguf" : "tiny-gpt2.gguf", buf, n, budget, cmds, dtype);
    free(buf);
}

static void run_fixture(const char *name, const char *fixture, size_t budget, const char *cmds)
{
    char path[1024];
    snprintf(path, sizeof path, "tests/fixtures/%s", fixture);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "make_corpus: %s: %s\n", path, strerror(errno));
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n)
        exit(1);
    fclose(f);
    run_seed(name, fixture, buf, (size_t)n, budget, cmds, "f16");
    free(buf);
}

static void run_seeds(void)
{
    as_set_threads(1);
    tiny_spec g, l, s;
    tiny_default(&g, false);
    tiny_default(&l, true);
    run_tiny("gpt2-f32", &g, 64, "prompt-ids 1 2 3 4; finish; metric 5 6", "f32");
    run_tiny("gpt2-f32-no-capture", &g, 0, "prompt-ids 1 2 3; finish", "f32");
    run_tiny("gpt2-f16-small-budget", &g, 1, "prompt-ids 1 2 3 4 5 6 7; finish", "f16");
    s = g, s.n_layer = 2;
    run_tiny("gpt2-2layers-f16", &s, 64, "prompt-ids 7 8 9 10 11; finish", "f16");
    run_tiny("gpt2-gen-bf16", &g, 64, "set seed 3; set temp 0.8; prompt-ids 1 2; gen 3", "bf16");
    run_tiny("llama-f32-patterns-on-demand", &l, 64, "set patterns on-demand; prompt-ids 1 2 3; finish", "f32");
    s = l, s.n_head_kv = 1;
    run_tiny("llama-gqa-attn-result", &s, 64, "set attn-result on; set in-hooks on; prompt-ids 3 4 5; finish", "f32");
    run_tiny("llama-bf16", &l, 64, "prompt-ids 1 2 3 4 5 6; finish", "bf16");
    run_fixture("bert", "tiny-bert.gguf", 64, "prompt \"a [MASK]\" \"b\"; finish");
    run_fixture("vit", "tiny-vit.gguf", 64, "image tests/fixtures/tiny-vit/image.png; finish");
    run_fixture("t5", "tiny-t5.gguf", 64, "source the cat; prompt-ids 0 1; finish");
    /* a run cut in its hooks' values */
    char path[1024];
    snprintf(path, sizeof path, "%s/run/gpt2-f32", root);
    FILE *f = fopen(path, "rb");
    uint8_t buf[1 << 16];
    size_t n = f ? fread(buf, 1, sizeof buf, f) : 0;
    if (f)
        fclose(f);
    put("run", "gpt2-f32-truncated", buf, n * 3 / 4);
}

static void npy_seed(const char *name, const uint8_t *b, size_t n) { put("npy", name, b, n); }

static void npy_seeds(void)
{
    npy_seed("f4-2d", (const uint8_t *)"\x00\x02\x00\x03\x04x.npy", 9);
    npy_seed("i4-1d", (const uint8_t *)"\x01\x01\x00\x05" "ids.npy", 11);
    npy_seed("f4-scalar", (const uint8_t *)"\x00\x00\x00" "s.npy", 8);
    npy_seed("f4-zero-dim", (const uint8_t *)"\x00\x03\x00\x04\x00\x07" "z.npy", 11);
    npy_seed("wide-overflow", (const uint8_t *)"\x00\x02\x01\xff\xff\xff\xff\xff\xff\xff\x7f\x10\x00\x00\x00\x00\x00\x00\x00" "o.npy", 24);
    npy_seed("bad-dtype", (const uint8_t *)"\x07\x01\x00\x02" "d.npy", 9);
    npy_seed("negative-ndim", (const uint8_t *)"\x00\xfe\x00" "n.npy", 8);
    npy_seed("long-name", (const uint8_t *)"\x00\x01\x00\x01" "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 264);
    npy_seed("dot-name", (const uint8_t *)"\x00\x01\x00\x01..", 6);
    npy_seed("twelve-dims", (const uint8_t *)"\x00\x0c\x00\x01\x01\x02\x01\x01\x01\x01\x01\x01\x01\x01\x02" "m.npy", 20);
}

/* ---- llama2.c checkpoints and tokenizers ---- */

typedef struct blob {
    uint8_t *b;
    size_t n, cap;
} blob;

static void b_put(blob *o, const void *p, size_t n)
{
    if (o->n + n > o->cap) {
        o->cap = (o->n + n) * 2;
        o->b = realloc(o->b, o->cap);
    }
    memcpy(o->b + o->n, p, n);
    o->n += n;
}
static void b_i32(blob *o, int32_t v) { b_put(o, &v, 4); }
static void b_f32(blob *o, float v) { b_put(o, &v, 4); }

/* dim 8, hidden 16, 1 layer, 2 heads, 1 kv head, vocab 8, seq_len 8 */
static void l2c_checkpoint(blob *o, bool shared)
{
    const int32_t d = 8, f = 16, L = 1, H = 2, KV = 1, V = 8, T = 8, hs = d / H;
    int32_t hdr[7] = {d, f, L, H, KV, shared ? V : -V, T};
    for (int i = 0; i < 7; i++)
        b_i32(o, hdr[i]);
    int64_t counts[] = {V * d, L * d, L * d * d, L * KV * hs * d, L * KV * hs * d, L * d * d, L * d,
                        L * f * d, L * d * f, L * f * d, d, T * hs / 2, T * hs / 2, shared ? 0 : V * d};
    int norms[] = {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0};
    uint32_t seed = 12345;
    for (size_t a = 0; a < sizeof counts / sizeof counts[0]; a++)
        for (int64_t i = 0; i < counts[a]; i++) {
            seed = seed * 1664525u + 1013904223u;
            b_f32(o, norms[a] ? 1.0f : ((float)(seed >> 8) / (float)(1u << 24) - 0.5f));
        }
}

static void l2c_tokenizer(blob *o)
{
    static const char *const toks[8] = {"<unk>", "\n<s>\n", "\n</s>\n", " ", "a", "t", " the", "Once"};
    b_i32(o, 6);
    for (int i = 0; i < 8; i++) {
        b_f32(o, -(float)i);
        b_i32(o, (int32_t)strlen(toks[i]));
        b_put(o, toks[i], strlen(toks[i]));
    }
}

static void l2c_seed(const char *name, uint8_t mode, const blob *a, const blob *b, const uint8_t *prefix, size_t np)
{
    blob o = {0};
    b_put(&o, &mode, 1);
    b_put(&o, prefix, np);
    if (a)
        b_put(&o, a->b, a->n);
    if (b)
        b_put(&o, b->b, b->n);
    put("llama2c", name, o.b, o.n);
    free(o.b);
}

static void llama2c_seeds(void)
{
    blob shared = {0}, unshared = {0}, tok = {0};
    l2c_checkpoint(&shared, true);
    l2c_checkpoint(&unshared, false);
    l2c_tokenizer(&tok);
    l2c_seed("ckpt-shared", 0, &shared, NULL, NULL, 0);
    l2c_seed("ckpt-unshared", 0, &unshared, NULL, NULL, 0);
    l2c_seed("tokenizer-8", 1, &tok, NULL, (const uint8_t *)"\x07\x00", 2);
    uint8_t len[4];
    tiny_put_u32(len, (uint32_t)shared.n);
    l2c_seed("pair-shared", 2, &shared, &tok, len, 4);
    tiny_put_u32(len, (uint32_t)unshared.n);
    l2c_seed("pair-unshared", 2, &unshared, &tok, len, 4);
    /* broken: a zero dim, three heads over dim 8, a truncated array, trailing bytes,
     * a negative token length, a tokenizer with fewer tokens than the vocabulary */
    blob bad = {0};
    b_put(&bad, shared.b, shared.n);
    tiny_put_u32(bad.b, 0);
    l2c_seed("ckpt-dim-0", 0, &bad, NULL, NULL, 0);
    tiny_put_u32(bad.b, 8), tiny_put_u32(bad.b + 12, 3);
    l2c_seed("ckpt-heads-3", 0, &bad, NULL, NULL, 0);
    tiny_put_u32(bad.b + 12, 2);
    bad.n -= 7;
    l2c_seed("ckpt-truncated", 0, &bad, NULL, NULL, 0);
    bad.n += 7;
    b_i32(&bad, 0);
    l2c_seed("ckpt-trailing-bytes", 0, &bad, NULL, NULL, 0);
    bad.n = 0;
    b_put(&bad, tok.b, tok.n);
    tiny_put_u32(bad.b + 4 + 4, 0xffffffffu);
    l2c_seed("tokenizer-negative-length", 1, &bad, NULL, (const uint8_t *)"\x07\x00", 2);
    l2c_seed("tokenizer-short", 1, &tok, NULL, (const uint8_t *)"\x0f\x00", 2);
    free(shared.b), free(unshared.b), free(tok.b), free(bad.b);
}

/* ---- Hugging Face directories (fuzz_hf.c) ---- */

static void hf_file_seed(const char *name, uint8_t mode, const char *fixture)
{
    FILE *f = fopen(fixture, "rb");
    static uint8_t buf[1 << 16];
    size_t n = f ? fread(buf + 1, 1, sizeof buf - 1, f) : 0;
    if (!f || n == 0 || n == sizeof buf - 1) {
        fprintf(stderr, "make_corpus: %s: missing or over 64 KB (run from the repository's root)\n", fixture);
        exit(1);
    }
    fclose(f);
    buf[0] = mode;
    put("hf", name, buf, n + 1);
}

/* Mode 0: an 8-byte length, the JSON, then data_bytes bytes of data. */
static void hf_safetensors_seed(const char *name, const char *json, uint64_t claimed, size_t data_bytes)
{
    static uint8_t buf[4096];
    size_t hl = strlen(json);
    memset(buf, ' ', sizeof buf);
    memcpy(buf + 9, json, hl);
    if (claimed == hl) /* padded with spaces to 8 bytes, as HF's writer pads it */
        hl = claimed = (hl + 7) / 8 * 8;
    size_t n = 1 + 8 + hl + data_bytes;
    buf[0] = 0;
    tiny_put_u64(buf + 1, claimed);
    for (size_t i = 0; i < data_bytes; i++)
        buf[9 + hl + i] = (uint8_t)(i * 37);
    put("hf", name, buf, n);
}

static void hf_seeds(void)
{
    static const char two[] = "{\"__metadata__\":{\"format\":\"pt\"},"
                              "\"wte.weight\":{\"dtype\":\"F32\",\"shape\":[2,4],\"data_offsets\":[0,32]},"
                              "\"wpe.weight\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[32,40]}}";
    hf_safetensors_seed("st-two-tensors", two, sizeof two - 1, 40);
    hf_safetensors_seed("st-truncated-data", two, sizeof two - 1, 20);
    hf_safetensors_seed("st-header-past-end", two, sizeof two + 100, 0);
    hf_safetensors_seed("st-header-over-100mb", "{}", (uint64_t)101 << 20, 0);
    static const char overlap[] = "{\"a\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[0,8]},"
                                  "\"b\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[4,12]}}";
    hf_safetensors_seed("st-overlap", overlap, sizeof overlap - 1, 12);
    static const char odd[] = "{\"a\":{\"dtype\":\"I8\",\"shape\":[-1,99999999999999],\"data_offsets\":[0,-8]}}";
    hf_safetensors_seed("st-odd-entries", odd, sizeof odd - 1, 8);
    hf_file_seed("config-gpt2", 1, "tests/fixtures/hf/tiny-gpt2/config.json");
    hf_file_seed("config-llama", 1, "tests/fixtures/hf/tiny-llama/config.json");
    hf_file_seed("tokenizer-spm-bpe", 2, "tests/fixtures/hf/tiny-llama/tokenizer.json");
    hf_file_seed("tokenizer-byte-bpe", 2, "tests/fixtures/hf/tiny-gpt2/tokenizer.json");
    hf_file_seed("tokenizer-wordpiece", 2, "tests/fixtures/hf/tiny-bert/tokenizer.json");
    hf_file_seed("config-bert", 1, "tests/fixtures/hf/tiny-bert/config.json");
    hf_file_seed("config-qwen3", 1, "tests/fixtures/hf/tiny-qwen3/config.json");
    static const char index[] =
        "\x03{\"metadata\":{},\"weight_map\":{\"wte.weight\":\"model-00001-of-00001.safetensors\","
        "\"h.0.ln_1.weight\":\"model-00002-of-00002.safetensors\",\"wpe.weight\":\"../x\"}}";
    put("hf", "index", index, sizeof index - 1);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s CORPUS_DIR\n", argv[0]);
        return 2;
    }
    root = argv[1];
    mkdir(root, 0755);
    models();
    malformed();
    zoo();
    tokenizer_seeds();
    session_seeds();
    npy_seeds();
    llama2c_seeds();
    hf_seeds();
    run_seeds();
    printf("make_corpus: %d files in %s\n", written, root);
    return 0;
}
