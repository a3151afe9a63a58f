/* Random-weight models for the benchmark, in llama2.c's format (with a
 * synthetic 32000-token tokenizer and the GGUF export of the same weights)
 * and as a GPT-2 124M-shaped GGUF. Deterministic: the same seed gives the
 * same files, so runs on different days time the same model. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "attnscope/gguf.h"
#include "attnscope/llama2c.h"
#include "bench.h"

int64_t bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [-a, a). */
static void fill(float *x, size_t n, float a, uint64_t *s)
{
    for (size_t i = 0; i < n; i++)
        x[i] = a * ((float)(rng_next(s) >> 40) * 0x1.0p-23f - 1.0f);
}

static bool exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && st.st_size > 0;
}

/* ---------------------------------------------------------------- llama2.c */

/* Token ids: 0 <unk>, 1 BOS, 2 EOS, 3..258 bytes, 259..353 printable ASCII,
 * then three- and four-letter pieces. No two-character piece exists, so
 * run.c's encoder merges nothing and a prompt of n letters is n tokens. */
#define L_ASCII 259
#define L_SPECIAL_ROWS 259 /* rows kept small so greedy decoding never stops on them */

static void llama_piece(int i, char *buf, size_t cap)
{
    if (i == 0)
        snprintf(buf, cap, "<unk>");
    else if (i < 3)
        snprintf(buf, cap, i == 1 ? "\n<s>\n" : "\n</s>\n");
    else if (i < L_ASCII)
        snprintf(buf, cap, "<0x%02X>", i - 3);
    else if (i < L_ASCII + 95)
        snprintf(buf, cap, "%c", ' ' + i - L_ASCII);
    else {
        int k = i - (L_ASCII + 95), len = k < 26 * 26 * 26 ? 3 : 4;
        if (len == 4)
            k -= 26 * 26 * 26;
        for (int j = len - 1; j >= 0; j--, k /= 26)
            buf[j] = (char)('a' + k % 26);
        buf[len] = '\0';
    }
}

static int write_tokenizer(const char *path, int n)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return fprintf(stderr, "bench: cannot write %s: %s\n", path, strerror(errno)), -1;
    int32_t max_len = 8;
    fwrite(&max_len, 4, 1, f);
    for (int i = 0; i < n; i++) {
        char buf[16];
        llama_piece(i, buf, sizeof buf);
        float score = -(float)i;
        int32_t len = (int32_t)strlen(buf);
        fwrite(&score, 4, 1, f);
        fwrite(&len, 4, 1, f);
        fwrite(buf, 1, (size_t)len, f);
    }
    return fclose(f) ? -1 : 0;
}

/* Writes n floats drawn from [-a, a) in chunks (the big arrays are 100 MB). */
static void put_random(FILE *f, size_t n, float a, uint64_t *s)
{
    float buf[4096];
    while (n) {
        size_t k = n < 4096 ? n : 4096;
        fill(buf, k, a, s);
        fwrite(buf, sizeof *buf, k, f);
        n -= k;
    }
}

static void put_norm(FILE *f, size_t n, uint64_t *s)
{
    float buf[4096];
    for (size_t done = 0; done < n; done += 1024) {
        size_t k = n - done < 1024 ? n - done : 1024;
        fill(buf, k, 0.1f, s);
        for (size_t i = 0; i < k; i++)
            buf[i] += 1.0f;
        fwrite(buf, sizeof *buf, k, f);
    }
}

static void put_embedding(FILE *f, const bench_llama_shape *m, uint64_t *s)
{
    float *row = malloc((size_t)m->dim * sizeof *row);
    for (int v = 0; v < m->vocab; v++) {
        fill(row, (size_t)m->dim, v < L_SPECIAL_ROWS ? 0.01f : 1.0f, s);
        fwrite(row, sizeof *row, (size_t)m->dim, f);
    }
    free(row);
}

static int write_checkpoint(const char *path, const bench_llama_shape *m)
{
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        return fprintf(stderr, "bench: cannot write %s: %s\n", tmp, strerror(errno)), -1;
    size_t d = (size_t)m->dim, h = (size_t)m->hidden, L = (size_t)m->layers;
    size_t kv = d / (size_t)m->heads * (size_t)m->kv_heads; /* grouped-query attention's k and v width */
    int32_t hdr[7] = {m->dim, m->hidden, m->layers, m->heads, m->kv_heads, m->vocab, m->seq_len};
    uint64_t s = 20240101u + (uint64_t)m->dim;
    float a = sqrtf(3.0f / (float)d), a2 = sqrtf(3.0f / (float)h); /* unit-variance outputs */
    fwrite(hdr, sizeof hdr, 1, f);
    put_embedding(f, m, &s);
    put_norm(f, L * d, &s);                 /* rms_att */
    put_random(f, L * d * d, a, &s);        /* wq */
    put_random(f, 2 * L * kv * d, a, &s);   /* wk, wv */
    put_random(f, L * d * d, a, &s);        /* wo */
    put_norm(f, L * d, &s);                 /* rms_ffn */
    put_random(f, L * h * d, a, &s);        /* w1 */
    put_random(f, L * d * h, a2, &s);       /* w2 */
    put_random(f, L * h * d, a, &s);        /* w3 */
    put_norm(f, d, &s);                     /* rms_final */
    put_random(f, (size_t)m->seq_len * (d / (size_t)m->heads), 1.0f, &s); /* freq_cis (unused) */
    if (fclose(f) || rename(tmp, path))
        return fprintf(stderr, "bench: cannot write %s: %s\n", path, strerror(errno)), -1;
    return 0;
}

void bench_tokenizer_path(const char *dir, const bench_llama_shape *s, char *buf, size_t cap)
{
    /* The 32000-token file keeps its old name, so existing bench folders stay valid. */
    if (s->vocab == 32000)
        snprintf(buf, cap, "%s/tokenizer.bin", dir);
    else
        snprintf(buf, cap, "%s/tokenizer-%d.bin", dir, s->vocab);
}

int bench_make_llama(const char *dir, const bench_llama_shape *m)
{
    char bin[1024], tok[1024], gguf[1024];
    snprintf(bin, sizeof bin, "%s/%s.bin", dir, m->name);
    bench_tokenizer_path(dir, m, tok, sizeof tok);
    snprintf(gguf, sizeof gguf, "%s/%s.gguf", dir, m->name);
    if (!exists(tok) && write_tokenizer(tok, m->vocab))
        return -1;
    if (!exists(bin)) {
        fprintf(stderr, "bench: writing %s\n", bin);
        if (write_checkpoint(bin, m))
            return -1;
    }
    if (!exists(gguf)) {
        as_error err = {{0}};
        fprintf(stderr, "bench: writing %s\n", gguf);
        if (as_llama2c_to_gguf(bin, tok, gguf, &err))
            return fprintf(stderr, "bench: %s\n", err.msg), -1;
    }
    return 0;
}

void bench_llama_prompt(int32_t *ids, char *text, int cap)
{
    ids[0] = 1;
    ids[1] = L_ASCII; /* ' ': run.c's dummy prefix */
    for (int i = 0; i < BENCH_PROMPT - 2; i++) {
        char c = (char)('a' + i % 26);
        ids[i + 2] = L_ASCII + (c - ' ');
        if (i < cap - 1)
            text[i] = c;
    }
    text[BENCH_PROMPT - 2 < cap - 1 ? BENCH_PROMPT - 2 : cap - 1] = '\0';
}

/* ---------------------------------------------------------------- GPT-2 */

enum { G_VOCAB = 50257, G_D = 768, G_LAYERS = 12, G_HEADS = 12, G_CTX = 1024, G_FF = 3072 };

/* GPT-2's byte-to-unicode map: printable bytes stand for themselves. */
static int byte_cp(int b)
{
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255))
        return b;
    int n = 0;
    for (int x = 0; x < b; x++)
        n += !((x >= 33 && x <= 126) || (x >= 161 && x <= 172) || (x >= 174 && x <= 255));
    return 256 + n;
}

static char *utf8(int cp)
{
    char *s = malloc(4);
    if (cp < 0x80)
        s[0] = (char)cp, s[1] = 0;
    else
        s[0] = (char)(0xC0 | cp >> 6), s[1] = (char)(0x80 | (cp & 63)), s[2] = 0;
    return s;
}

/* 256 byte tokens, then letter n-grams built by merges ("ab" = "a b",
 * "abc" = "ab c", ...), and <|endoftext|> last: a valid byte-level BPE. */
static void gpt2_vocab(char **tok, char **merges, int32_t *types)
{
    int n = 0, m = 0;
    for (int b = 0; b < 256; b++)
        types[n] = 1, tok[n++] = utf8(byte_cp(b));
    for (int len = 2; n < G_VOCAB - 1; len++) {
        int count = 1;
        for (int j = 0; j < len; j++)
            count *= 26;
        for (int k = 0; k < count && n < G_VOCAB - 1; k++) {
            char s[8], left[8];
            for (int j = len - 1, r = k; j >= 0; j--, r /= 26)
                s[j] = (char)('a' + r % 26);
            s[len] = 0;
            memcpy(left, s, (size_t)len - 1);
            left[len - 1] = 0;
            merges[m] = malloc(16);
            snprintf(merges[m++], 16, "%s %c", left, s[len - 1]);
            types[n] = 1, tok[n++] = strdup(s);
        }
    }
    types[n] = 3, tok[n++] = strdup("<|endoftext|>");
}

/* Token ids of the two-letter tokens: 256 + 26a + b. */
void bench_gpt2_prompt(int32_t *ids)
{
    for (int i = 0; i < BENCH_PROMPT; i++)
        ids[i] = 256 + (i * 7) % 676;
}

int32_t bench_gpt2_start(void)
{
    return 'a'; /* byte tokens come first, in byte order */
}

static int add(as_gguf_writer *w, const char *name, int n_dims, uint64_t ne0, uint64_t ne1, float a,
               float base, uint64_t *s)
{
    uint64_t ne[2] = {ne0, ne1};
    size_t n = (size_t)ne0 * (n_dims > 1 ? (size_t)ne1 : 1);
    float *x = malloc(n * sizeof *x);
    as_error err = {{0}};
    fill(x, n, a, s);
    for (size_t i = 0; i < n; i++)
        x[i] += base;
    if (!strcmp(name, "token_embd.weight")) /* <|endoftext|> must not end greedy decoding */
        for (size_t i = (size_t)(G_VOCAB - 1) * G_D; i < n; i++)
            x[i] *= 0.01f;
    int rc = as_gguf_writer_add_tensor(w, name, AS_GGML_F32, (uint32_t)n_dims, ne, x, &err);
    free(x);
    if (rc)
        fprintf(stderr, "bench: %s\n", err.msg);
    return rc;
}

static int gpt2_tensors(as_gguf_writer *w, uint64_t *s)
{
    const float a = sqrtf(3.0f) * 0.02f; /* GPT-2's init: std 0.02 */
    static const struct { const char *suffix; int dims; uint64_t ne0, ne1; float amp, base; } blk[] = {
        {"attn_norm.weight", 1, G_D, 0, 0.1f, 1.0f},  {"attn_norm.bias", 1, G_D, 0, 0.02f, 0},
        {"attn_qkv.weight", 2, G_D, 3 * G_D, 0, 0},   {"attn_qkv.bias", 1, 3 * G_D, 0, 0.02f, 0},
        {"attn_output.weight", 2, G_D, G_D, 0, 0},    {"attn_output.bias", 1, G_D, 0, 0.02f, 0},
        {"ffn_norm.weight", 1, G_D, 0, 0.1f, 1.0f},   {"ffn_norm.bias", 1, G_D, 0, 0.02f, 0},
        {"ffn_up.weight", 2, G_D, G_FF, 0, 0},        {"ffn_up.bias", 1, G_FF, 0, 0.02f, 0},
        {"ffn_down.weight", 2, G_FF, G_D, 0, 0},      {"ffn_down.bias", 1, G_D, 0, 0.02f, 0},
    };
    if (add(w, "token_embd.weight", 2, G_D, G_VOCAB, a, 0, s) ||
        add(w, "position_embd.weight", 2, G_D, G_CTX, a / 2, 0, s))
        return -1;
    for (int l = 0; l < G_LAYERS; l++)
        for (size_t k = 0; k < sizeof blk / sizeof *blk; k++) {
            char n[64];
            snprintf(n, sizeof n, "blk.%d.%s", l, blk[k].suffix);
            /* matrices (amp 0 in the table) get GPT-2's init */
            if (add(w, n, blk[k].dims, blk[k].ne0, blk[k].ne1, blk[k].amp ? blk[k].amp : a, blk[k].base, s))
                return -1;
        }
    return add(w, "output_norm.weight", 1, G_D, 0, 0.1f, 1.0f, s) ||
           add(w, "output_norm.bias", 1, G_D, 0, 0.02f, 0, s);
}

static void gpt2_metadata(as_gguf_writer *w, char **tok, char **merges, int32_t *types)
{
    as_gguf_writer_set_str(w, "general.architecture", "gpt2");
    as_gguf_writer_set_str(w, "general.name", "bench-gpt2-124M");
    as_gguf_writer_set_u32(w, "general.file_type", 0);
    as_gguf_writer_set_u32(w, "gpt2.context_length", G_CTX);
    as_gguf_writer_set_u32(w, "gpt2.embedding_length", G_D);
    as_gguf_writer_set_u32(w, "gpt2.feed_forward_length", G_FF);
    as_gguf_writer_set_u32(w, "gpt2.block_count", G_LAYERS);
    as_gguf_writer_set_u32(w, "gpt2.attention.head_count", G_HEADS);
    as_gguf_writer_set_f32(w, "gpt2.attention.layer_norm_epsilon", 1e-5f);
    as_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    as_gguf_writer_set_str(w, "tokenizer.ggml.pre", "gpt-2");
    as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)tok, G_VOCAB);
    as_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", AS_GGUF_INT32, types, G_VOCAB);
    as_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", (const char *const *)merges, G_VOCAB - 257);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", G_VOCAB - 1);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", G_VOCAB - 1);
}

int bench_make_gpt2(const char *dir, const char *name)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s.gguf", dir, name);
    if (exists(path))
        return 0;
    fprintf(stderr, "bench: writing %s\n", path);
    char **tok = calloc(G_VOCAB, sizeof *tok), **merges = calloc(G_VOCAB, sizeof *merges);
    int32_t *types = calloc(G_VOCAB, sizeof *types);
    uint64_t s = 124;
    as_error err = {{0}};
    gpt2_vocab(tok, merges, types);
    as_gguf_writer *w = as_gguf_writer_new(3);
    gpt2_metadata(w, tok, merges, types);
    int rc = gpt2_tensors(w, &s);
    if (!rc && (rc = as_gguf_writer_write(w, path, &err)))
        fprintf(stderr, "bench: %s\n", err.msg);
    as_gguf_writer_free(w);
    for (int i = 0; i < G_VOCAB; i++)
        free(tok[i]), free(merges[i]);
    free(tok);
    free(merges);
    free(types);
    return rc ? -1 : 0;
}
