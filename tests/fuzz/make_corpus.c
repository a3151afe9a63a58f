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
 *   llama2c/    llama2.c checkpoints and tokenizer files, alone and paired.
 * Deterministic: the same source gives the same bytes. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attnscope/gguf.h"
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
    TEXT("bert-invalid-utf8", 9, "\xFF\x80" "ab\xC3\x28 \xED\xA0\x80 \xE2\x82 \xF4\x90\x80\x80" "c \xC0\xAF\x01\x00z");
    TEXT("decode-ids", 2, "\x00\x00\x00\x00\x01\x00\x00\x00\x14\x01\x00\x00\xff\xff\xff\xff\x10\x00\x00\x80");
    /* hostile vocabularies: kind, flags, bos, eos, unk, tokens split by 0x01, NUL, text */
    TEXT("vocab-gpt2-dups-empty", 3, "\x00\x07\x02\x02\xff" "a\x01" "b\x01\x01" "ab\x01" "a\x01\x01" "ab" "\x00" "abab ba");
    TEXT("vocab-llama-bytes", 3, "\x01\x3f\x01\x02\x00" "<unk>\x01<s>\x01</s>\x01<0x61>\x01\xE2\x96\x81\x01" "a\x01\xE2\x96\x81" "a" "\x00" "a a\xC3\xA9");
    TEXT("vocab-one-empty", 3, "\x00\x00\xff\xff\xff" "\x00" "text");
    TEXT("vocab-bert", 3, "\x02\x04\x02\x03\x01" "[PAD]\x01[UNK]\x01[CLS]\x01[SEP]\x01\xE2\x96\x81" "a\x01" "a\x01\x01\xE2\x96\x81" "ab" "\x00" "Ab aab [SEP] \xC3\xA1\xC3\x84 b");
    TEXT("vocab-user-tokens", 3, "\x01\x05\x00\x00\x00" "<a>\x01<a>\x01<ab>\x01x\x01" "\x00" "x<a><ab>x<a");
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
    printf("make_corpus: %d files in %s\n", written, root);
    return 0;
}
