/* llama2.c checkpoints and tokenizers: a small random checkpoint written
 * here in run.c's layout runs to the same logits as (a) run.c's own forward
 * pass, transcribed below, and (b) the same weights exported as GGUF by the
 * engine's writer and loaded back; broken files get errors that name the
 * file, the offset and the field. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnscope/file.h"
#include "attnscope/llama2c.h"
#include "helpers.h"

typedef struct cfg {
    int dim, hidden, layers, heads, kv_heads, vocab, seq_len; /* vocab < 0: separate classifier */
} cfg;

static const cfg small = {64, 96, 2, 4, 2, 300, 32};

static float frand(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((*s >> 40) / (double)(1ull << 24)) - 0.5f;
}

/* Floats after the header, in run.c's order, for config c. */
static size_t n_floats(const cfg *c)
{
    size_t d = (size_t)c->dim, f = (size_t)c->hidden, L = (size_t)c->layers, V = (size_t)abs(c->vocab);
    size_t hs = d / (size_t)c->heads, kv = (size_t)c->kv_heads * hs;
    return V * d + L * (2 * d + 2 * d * d + 2 * kv * d + 3 * f * d) + d + (size_t)c->seq_len * hs +
           (c->vocab < 0 ? V * d : 0);
}

static float *make_weights(const cfg *c, uint64_t seed)
{
    size_t n = n_floats(c);
    float *w = malloc(n * sizeof *w);
    for (size_t i = 0; i < n; i++)
        w[i] = frand(&seed) * 0.4f;
    return w;
}

static void write_file(const char *path, const void *a, size_t na, const void *b, size_t nb)
{
    FILE *f = fopen(path, "wb");
    cr_assert(f, "cannot write %s", path);
    cr_assert_eq(fwrite(a, 1, na, f), na);
    if (nb)
        cr_assert_eq(fwrite(b, 1, nb, f), nb);
    fclose(f);
}

static void write_checkpoint(const char *path, const cfg *c, const float *w)
{
    int32_t hdr[7] = {c->dim, c->hidden, c->layers, c->heads, c->kv_heads, c->vocab, c->seq_len};
    write_file(path, hdr, sizeof hdr, w, n_floats(c) * sizeof *w);
}

/* <unk>, BOS, EOS, 256 byte tokens, then ' ', letters, and a few merges. */
static void write_tokenizer(const char *path, int n)
{
    static const char *const extra[] = {"th", "he", "the", " the", " t", "at", " c", " cat", "ca", " a", "an"};
    FILE *f = fopen(path, "wb");
    int32_t max_len = 16;
    fwrite(&max_len, 4, 1, f);
    for (int i = 0; i < n; i++) {
        char buf[32];
        if (i == 0)
            snprintf(buf, sizeof buf, "<unk>");
        else if (i < 3)
            snprintf(buf, sizeof buf, i == 1 ? "\n<s>\n" : "\n</s>\n");
        else if (i < 259)
            snprintf(buf, sizeof buf, "<0x%02X>", i - 3);
        else if (i == 259)
            snprintf(buf, sizeof buf, " ");
        else if (i < 286)
            snprintf(buf, sizeof buf, "%c", 'a' + i - 260);
        else if (i - 286 < (int)(sizeof extra / sizeof *extra))
            snprintf(buf, sizeof buf, "%s", extra[i - 286]);
        else
            snprintf(buf, sizeof buf, "zq%d", i);
        float score = i >= 286 ? -(float)(i - 286) : -1000.0f;
        int32_t len = (int32_t)strlen(buf);
        fwrite(&score, 4, 1, f);
        fwrite(&len, 4, 1, f);
        fwrite(buf, 1, (size_t)len, f);
    }
    fclose(f);
}

/* ---- run.c's forward pass, transcribed (one token at a time) ---- */

typedef struct ref {
    cfg c;
    const float *emb, *rms_att, *wq, *wk, *wv, *wo, *rms_ffn, *w1, *w2, *w3, *rms_final, *wcls;
    float *kc, *vc;
} ref;

static void ref_init(ref *r, const cfg *c, const float *w)
{
    size_t d = (size_t)c->dim, f = (size_t)c->hidden, L = (size_t)c->layers, V = (size_t)abs(c->vocab);
    size_t kv = (size_t)c->kv_heads * (d / (size_t)c->heads);
    r->c = *c;
    r->emb = w, w += V * d;
    r->rms_att = w, w += L * d;
    r->wq = w, w += L * d * d;
    r->wk = w, w += L * kv * d;
    r->wv = w, w += L * kv * d;
    r->wo = w, w += L * d * d;
    r->rms_ffn = w, w += L * d;
    r->w1 = w, w += L * f * d;
    r->w2 = w, w += L * d * f;
    r->w3 = w, w += L * f * d;
    r->rms_final = w, w += d;
    w += (size_t)c->seq_len * (d / (size_t)c->heads);
    r->wcls = c->vocab < 0 ? w : r->emb;
    r->kc = calloc(L * (size_t)c->seq_len * kv, sizeof(float));
    r->vc = calloc(L * (size_t)c->seq_len * kv, sizeof(float));
}

static void rmsnorm(float *o, const float *x, const float *w, int n)
{
    float ss = 0;
    for (int j = 0; j < n; j++)
        ss += x[j] * x[j];
    ss = 1.0f / sqrtf(ss / n + 1e-5f);
    for (int j = 0; j < n; j++)
        o[j] = w[j] * (ss * x[j]);
}

static void matmul(float *o, const float *x, const float *w, int n, int d)
{
    for (int i = 0; i < d; i++) {
        double v = 0;
        for (int j = 0; j < n; j++)
            v += (double)w[(size_t)i * n + j] * x[j];
        o[i] = (float)v;
    }
}

static void ref_attention(const ref *r, int l, int pos, const float *q, float *out)
{
    int d = r->c.dim, hs = d / r->c.heads, kv = r->c.kv_heads * hs, mul = r->c.heads / r->c.kv_heads;
    size_t loff = (size_t)l * r->c.seq_len * kv;
    float att[64];
    for (int h = 0; h < r->c.heads; h++) {
        float mx = -INFINITY, sum = 0;
        for (int t = 0; t <= pos; t++) {
            const float *k = r->kc + loff + (size_t)t * kv + (h / mul) * hs;
            float s = 0;
            for (int i = 0; i < hs; i++)
                s += q[h * hs + i] * k[i];
            att[t] = s / sqrtf((float)hs);
            mx = fmaxf(mx, att[t]);
        }
        for (int t = 0; t <= pos; t++)
            sum += att[t] = expf(att[t] - mx);
        for (int i = 0; i < hs; i++) {
            float v = 0;
            for (int t = 0; t <= pos; t++)
                v += att[t] / sum * r->vc[loff + (size_t)t * kv + (h / mul) * hs + i];
            out[h * hs + i] = v;
        }
    }
}

static void ref_rope(float *v, int n, int hs, int pos)
{
    for (int i = 0; i < n; i += 2) {
        float freq = 1.0f / powf(10000.0f, (float)(i % hs) / (float)hs);
        float c = cosf(pos * freq), s = sinf(pos * freq), a = v[i], b = v[i + 1];
        v[i] = a * c - b * s;
        v[i + 1] = a * s + b * c;
    }
}

static void ref_forward(ref *r, int token, int pos, float *logits)
{
    int d = r->c.dim, f = r->c.hidden, hs = d / r->c.heads, kv = r->c.kv_heads * hs;
    float x[256], xb[256], q[256], att[256], hb[512], hb2[512];
    memcpy(x, r->emb + (size_t)token * d, (size_t)d * 4);
    for (int l = 0; l < r->c.layers; l++) {
        size_t loff = (size_t)l * r->c.seq_len * kv;
        float *k = r->kc + loff + (size_t)pos * kv, *v = r->vc + loff + (size_t)pos * kv;
        rmsnorm(xb, x, r->rms_att + (size_t)l * d, d);
        matmul(q, xb, r->wq + (size_t)l * d * d, d, d);
        matmul(k, xb, r->wk + (size_t)l * kv * d, d, kv);
        matmul(v, xb, r->wv + (size_t)l * kv * d, d, kv);
        ref_rope(q, d, hs, pos);
        ref_rope(k, kv, hs, pos);
        ref_attention(r, l, pos, q, att);
        matmul(xb, att, r->wo + (size_t)l * d * d, d, d);
        for (int i = 0; i < d; i++)
            x[i] += xb[i];
        rmsnorm(xb, x, r->rms_ffn + (size_t)l * d, d);
        matmul(hb, xb, r->w1 + (size_t)l * f * d, d, f);
        matmul(hb2, xb, r->w3 + (size_t)l * f * d, d, f);
        for (int i = 0; i < f; i++)
            hb[i] = hb[i] / (1.0f + expf(-hb[i])) * hb2[i];
        matmul(xb, hb, r->w2 + (size_t)l * d * f, f, d);
        for (int i = 0; i < d; i++)
            x[i] += xb[i];
    }
    rmsnorm(x, x, r->rms_final, d);
    matmul(logits, x, r->wcls, d, abs(r->c.vocab));
}

/* ---- tests ---- */

typedef struct files {
    char dir[64], bin[96], tok[96], gguf[96];
} files;

static void make_files(files *fs, const cfg *c, float **weights)
{
    snprintf(fs->dir, sizeof fs->dir, "/tmp/attnscope-l2c-XXXXXX");
    cr_assert(mkdtemp(fs->dir));
    snprintf(fs->bin, sizeof fs->bin, "%s/model.bin", fs->dir);
    snprintf(fs->tok, sizeof fs->tok, "%s/tokenizer.bin", fs->dir);
    snprintf(fs->gguf, sizeof fs->gguf, "%s/model.gguf", fs->dir);
    float *w = make_weights(c, 1234);
    write_checkpoint(fs->bin, c, w);
    write_tokenizer(fs->tok, abs(c->vocab));
    *weights = w;
}

static void remove_files(files *fs)
{
    unlink(fs->bin);
    unlink(fs->tok);
    unlink(fs->gguf);
    rmdir(fs->dir);
}

static as_session *session_with(const char *model, const char *tok)
{
    as_model *m;
    as_session *s;
    as_error err = {{0}};
    FILE *null = fopen("/dev/null", "w");
    if (as_model_load_with(&m, model, tok, &err))
        cr_assert_fail("cannot load %s: %s", model, err.msg);
    cr_assert_eq(as_session_from_model(&s, m, 64, null, null, &err), AS_OK, "%s", err.msg);
    return s;
}

static const int32_t prompt[] = {1, 288, 270, 266, 259, 290, 5, 262};
#define N_PROMPT (int)(sizeof prompt / sizeof *prompt)

static void matches_run_c_and_gguf(const cfg *c)
{
    files fs;
    float *w;
    make_files(&fs, c, &w);
    as_error err = {{0}};
    cr_assert_eq(as_llama2c_to_gguf(fs.bin, fs.tok, fs.gguf, &err), AS_OK, "%s", err.msg);
    as_session *a = session_with(fs.bin, fs.tok), *b = session_with(fs.gguf, NULL);
    cr_assert_eq(a->model->cfg.n_vocab, abs(c->vocab));
    /* Tied: the unembedding is the embedding matrix itself. */
    const as_program *ap = a->prog;
    bool tied = ap->ops[ap->unembed].w.data == ap->ops[0].w.data;
    cr_assert_eq(ap->ops[0].kind, AS_OP_EMBED);
    cr_assert_eq(tied, c->vocab > 0);
    ref r;
    ref_init(&r, c, w);
    int V = abs(c->vocab);
    float *logits = malloc((size_t)V * sizeof *logits);
    for (int pos = 0; pos < N_PROMPT; pos++)
        ref_forward(&r, prompt[pos], pos, logits);
    run_ok(a, "prompt-ids 1 288 270 266 259 290 5 262; finish");
    run_ok(b, "prompt-ids 1 288 270 266 259 290 5 262; finish");
    const float *la = as_interp_logits(a->it), *lb = as_interp_logits(b->it);
    cr_assert_eq(memcmp(la, lb, (size_t)V * sizeof *la), 0, "the .bin and its GGUF export differ");
    double worst = 0;
    for (int i = 0; i < V; i++)
        worst = fmax(worst, fabs(la[i] - logits[i]));
    cr_assert_leq(worst, 1e-4, "max abs diff from run.c's forward: %g", worst);
    /* Generation agrees too (and exercises the KV cache on both). */
    run_ok(a, "gen 6");
    run_ok(b, "gen 6");
    cr_assert_eq(memcmp(a->it->out->tokens, b->it->out->tokens, (size_t)a->it->out->n_tokens * 4), 0);
    free(logits);
    free(r.kc);
    free(r.vc);
    free(w);
    close_session(a);
    close_session(b);
    remove_files(&fs);
}

Test(llama2c, shared_classifier_matches_run_c_and_its_gguf_export) { matches_run_c_and_gguf(&small); }

Test(llama2c, separate_classifier_matches_run_c_and_its_gguf_export)
{
    cfg c = small;
    c.vocab = -c.vocab;
    c.kv_heads = c.heads; /* and plain multi-head attention */
    matches_run_c_and_gguf(&c);
}

Test(llama2c, tokenizer_reads_spaces_bytes_and_specials)
{
    files fs;
    float *w;
    make_files(&fs, &small, &w);
    as_session *s = session_with(fs.bin, NULL); /* found beside the checkpoint */
    const as_tokenizer *t = s->model->tok;
    cr_assert_str_eq(as_tokenizer_piece(t, 289), "\xe2\x96\x81the");
    cr_assert_str_eq(as_tokenizer_piece(t, 1), "<s>");
    cr_assert_eq(as_tokenizer_bos(t), 1);
    cr_assert_eq(as_tokenizer_eos(t), 2);
    int32_t *ids;
    size_t n;
    as_error err;
    cr_assert_eq(as_tokenizer_encode(t, "the cat\n", 8, true, &ids, &n, &err), AS_OK, "%s", err.msg);
    /* BOS, "▁the", "▁cat", then the newline as its byte token <0x0A> (id 3 + 10). */
    cr_assert_eq(n, 4);
    cr_assert(ids[0] == 1 && ids[1] == 289 && ids[2] == 293 && ids[3] == 13, "%d %d %d %d", ids[0], ids[1],
              ids[2], ids[3]);
    char *text;
    size_t len;
    cr_assert_eq(as_tokenizer_decode(t, ids, n, &text, &len, &err), AS_OK);
    cr_assert_str_eq(text, "the cat\n"); /* the space prefix goes, as in run.c's decode */
    free(text);
    free(ids);
    run_ok(s, "prompt the cat; finish; top 3; info; weights");
    free(w);
    close_session(s);
    remove_files(&fs);
}

static int write_nothing(void *ctx, void *stream, as_error *err)
{
    (void)ctx, (void)stream, (void)err;
    return AS_OK;
}

/* The checkpoint and its tokenizer.bin are the loaded model's files:
 * no write replaces them while it is loaded (file.h). */
Test(llama2c, the_loaded_checkpoint_and_tokenizer_are_never_written)
{
    files fs;
    float *w;
    make_files(&fs, &small, &w);
    as_session *s = session_with(fs.bin, NULL);
    as_error err = {{0}};
    cr_assert_eq(as_write_atomic(fs.bin, write_nothing, NULL, &err), AS_ERR, "the checkpoint was written");
    cr_assert(strstr(err.msg, "model.bin: a model file in use"), "%s", err.msg);
    cr_assert_eq(as_write_atomic(fs.tok, write_nothing, NULL, &err), AS_ERR, "the tokenizer was written");
    cr_assert(strstr(err.msg, "tokenizer.bin: a model file in use"), "%s", err.msg);
    close_session(s);
    cr_assert_eq(as_write_atomic(fs.tok, write_nothing, NULL, &err), AS_OK, "%s", err.msg);
    free(w);
    remove_files(&fs);
}

static void expect_load_error(const char *bin, const char *tok, const char *want1, const char *want2)
{
    as_model *m;
    as_error err = {{0}};
    cr_assert_neq(as_model_load_with(&m, bin, tok, &err), AS_OK, "loaded a broken file");
    cr_assert(strstr(err.msg, want1) && strstr(err.msg, want2), "message '%s' lacks '%s' or '%s'", err.msg, want1,
              want2);
}

Test(llama2c, broken_files_are_named_with_offset_and_field)
{
    files fs;
    float *w;
    make_files(&fs, &small, &w);
    size_t full = n_floats(&small) * 4;
    int32_t hdr[7] = {small.dim, small.hidden, small.layers, small.heads, small.kv_heads, small.vocab,
                      small.seq_len};
    /* Cut inside wo: the message names the array, where it starts and where the file ends. */
    write_file(fs.bin, hdr, sizeof hdr, w, full / 2);
    expect_load_error(fs.bin, fs.tok, "model.bin: offset 142876: wo needs 32768 bytes", "ends at 162972");
    float *longer = calloc(1, full + 8);
    memcpy(longer, w, full);
    write_file(fs.bin, hdr, sizeof hdr, longer, full + 8);
    free(longer);
    expect_load_error(fs.bin, fs.tok, "8 bytes follow the last array", "offset");
    hdr[3] = 0;
    write_file(fs.bin, hdr, sizeof hdr, w, full);
    expect_load_error(fs.bin, fs.tok, "offset 12: header field n_heads = 0", "out of range");
    hdr[3] = 5;
    write_file(fs.bin, hdr, sizeof hdr, w, full);
    expect_load_error(fs.bin, fs.tok, "dim 64", "n_heads (5)");
    write_file(fs.bin, hdr, 10, NULL, 0);
    expect_load_error(fs.bin, fs.tok, "10 bytes, too short", "header");
    /* The tokenizer: too few tokens, then a missing file. */
    hdr[3] = small.heads;
    write_file(fs.bin, hdr, sizeof hdr, w, full);
    write_tokenizer(fs.tok, 100);
    expect_load_error(fs.bin, fs.tok, "tokenizer.bin: offset ", "token 100 of 300");
    unlink(fs.tok);
    expect_load_error(fs.bin, NULL, "needs its tokenizer", "--tokenizer");
    write_file(fs.gguf, "GGUF", 4, NULL, 0);
    expect_load_error(fs.gguf, fs.tok, "GGUF file carries its own tokenizer", "--tokenizer");
    free(w);
    remove_files(&fs);
}
