/* attnscope's logits against llama.cpp's, through llama.cpp's C API, on
 * the fixture models (tests/fixtures/NAME.gguf with NAME/tokens.npy):
 * every position of the fixture's prompt, one batch, K/V cache in F32 and
 * flash attention off so that llama.cpp computes in float32 as attnscope
 * does. Built and run by tests/llama_compare.sh (`make llama-compare`,
 * part of `make test`).
 *
 *   llama-compare LIBDIR TOL FIXTURE... (FIXTURE = tests/fixtures/tiny-qwen2)
 *
 * A position passes when max_i |a_i - b_i| <= TOL · max_i |b_i| (b:
 * llama.cpp's logits, a: attnscope's). Prints one line per fixture; exits
 * 1 if any fails.
 *
 * An encoder (bert, nomic-bert: attnscope's output stream is not causal)
 * is compared in llama.cpp's embeddings mode instead: its per-token
 * outputs (pooling none, llama_get_embeddings_ith: the last block's
 * layer_output_norm) against attnscope's blocks.{L-1}.ln2.hook_normalized,
 * and the pooled vector of the file's pooling (llama_get_embeddings_seq,
 * not normalized by the library) against pooler.hook_out, both by the same
 * rule. llama.cpp refuses tensors it does not know, so it reads a copy
 * without our masked-LM head (mlm.*). llama.cpp adds token type 0 to every
 * position (src/models/bert.cpp): the ids are compared with types 0.
 *
 * An encoder's per-token output is its encoder_final_ln.hook_normalized
 * when it has one (t5encoder: the final norm after the last block), else
 * the last block's ln2 output (the BERT family's Post-LN).
 *
 * An encoder-decoder (a source.npy beside tokens.npy: the encoder's ids)
 * runs as llama.cpp's T5 examples run it: llama_encode over the source,
 * then llama_decode over the decoder's ids (from its start token). Its
 * encoder output (llama_encode in embeddings mode, pooling none, against
 * encoder_final_ln.hook_normalized) and the decoder's logits at every
 * position are held to the same rule. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnscope/capture.h"
#include "attnscope/gguf.h"
#include "attnscope/session.h"
#include "../../src/session_internal.h" /* the session's fields, which the comparison reads */
#include "ggml-backend.h"
#include "llama.h"

#define MAX_TOKENS 64

static void quiet(enum ggml_log_level level, const char *text, void *ud)
{
    (void)ud;
    if (level == GGML_LOG_LEVEL_ERROR || getenv("LLAMA_COMPARE_LOG"))
        fputs(text, stderr);
}

/* The ids of a fixture's tokens.npy (or another file of it: source.npy),
 * int32, one dimension; -1 if there is none. */
static int read_ids_file(const char *dir, const char *file, int32_t *ids, int cap)
{
    char path[512], buf[4096];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t got = fread(buf, 1, sizeof buf, f);
    fclose(f);
    if (got < 10 || memcmp(buf, "\x93NUMPY", 6))
        return -1;
    size_t header = buf[6] == 1 ? 10 + (unsigned char)buf[8] + 256u * (unsigned char)buf[9]
                                : 12 + (unsigned char)buf[8] + 256u * (unsigned char)buf[9];
    int n = (int)((got - header) / 4);
    if (n > cap || !memmem(buf, header, "<i4", 3))
        return -1;
    memcpy(ids, buf + header, (size_t)n * 4);
    return n;
}

static int read_ids(const char *dir, int32_t *ids, int cap)
{
    return read_ids_file(dir, "tokens.npy", ids, cap);
}

/* llama.cpp's logits at every position: [n][V]. */
/* One sequence of n tokens at positions 0..n-1, an output asked at each. */
static struct llama_batch batch_of(const int32_t *ids, int n)
{
    struct llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = ids[i];
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    b.n_tokens = n;
    return b;
}

static float *llama_logits(const char *gguf, const int32_t *ids, int n, int *V)
{
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(gguf, mp);
    if (!model)
        return NULL;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = cp.n_batch = cp.n_ubatch = (uint32_t)n;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf = 1;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    float *out = NULL;
    if (ctx) {
        *V = llama_vocab_n_tokens(llama_model_get_vocab(model));
        struct llama_batch b = batch_of(ids, n);
        if (llama_decode(ctx, b) == 0 && (out = malloc((size_t)n * (size_t)*V * sizeof *out)))
            for (int i = 0; i < n; i++)
                memcpy(out + (size_t)i * (size_t)*V, llama_get_logits_ith(ctx, i), (size_t)*V * sizeof *out);
        llama_batch_free(b);
        llama_free(ctx);
    }
    llama_model_free(model);
    return out;
}

/* attnscope's logits at every position, from one pass over the prompt. */
static float *attnscope_logits(const char *gguf, const int32_t *ids, int n, int V, char *msg, size_t cap)
{
    as_session *s;
    as_error err = {{0}};
    FILE *null = fopen("/dev/null", "w");
    char cmd[1024];
    size_t o = (size_t)snprintf(cmd, sizeof cmd, "prompt-ids");
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(cmd + o, sizeof cmd - o, " %d", ids[i]);
    if (!null || as_session_new(&s, gguf, 256, null, null, &err) || as_session_exec(s, cmd, &err) ||
        as_session_exec(s, "finish", &err)) {
        snprintf(msg, cap, "%.400s", err.msg);
        if (null)
            fclose(null);
        return NULL;
    }
    int h = as_program_hook(s->prog, AS_HK_LOGITS, -1);
    float *out = malloc((size_t)n * (size_t)V * sizeof *out);
    if (out && s->model->cfg.n_vocab == V && as_capture_has(s->cap, h))
        for (int i = 0; i < n; i++)
            memcpy(out + (size_t)i * (size_t)V, as_capture_row(s->cap, h, i), (size_t)V * sizeof *out);
    else
        snprintf(msg, cap, "no logits (vocabulary %d vs %d)", s->model->cfg.n_vocab, V), free(out), out = NULL;
    as_session_free(s);
    fclose(null);
    return out;
}

/* worst max|a-b| / max|b| over n rows of width w; *at: its row. */
static double worst_rel(const float *a, const float *b, int n, int w, int *at)
{
    double worst = 0;
    for (int i = 0; i < n; i++) {
        double mx = 0, d = 0;
        for (int j = 0; j < w; j++) {
            mx = fmax(mx, fabs(b[(size_t)i * w + j]));
            d = fmax(d, fabs((double)a[(size_t)i * w + j] - b[(size_t)i * w + j]));
        }
        if (d / (mx > 0 ? mx : 1) > worst)
            worst = d / (mx > 0 ? mx : 1), *at = i;
    }
    return worst;
}

/* A copy of a GGUF without the tensors named prefix* (llama.cpp refuses
 * tensors it does not know). */
static int copy_without(const char *src, const char *dst, const char *prefix, char *msg, size_t cap)
{
    as_gguf *g;
    as_error err = {{0}};
    if (as_gguf_open(&g, src, &err))
        return snprintf(msg, cap, "%.400s", err.msg), -1;
    as_gguf_writer *w = as_gguf_writer_new(3);
    for (uint64_t i = 0; i < g->n_kv; i++)
        as_gguf_writer_copy_kv(w, &g->kvs[i]);
    int rc = 0;
    for (uint64_t i = 0; i < g->n_tensors && rc == 0; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        if (strncmp(t->name, prefix, strlen(prefix)))
            rc = as_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err);
    }
    if (rc == 0)
        rc = as_gguf_writer_write(w, dst, &err);
    if (rc)
        snprintf(msg, cap, "%.400s", err.msg);
    as_gguf_writer_free(w);
    as_gguf_close(g);
    return rc ? -1 : 0;
}

/* llama.cpp's embeddings: per token ([n][d], pooling none) or pooled ([d]). */
static float *llama_embeddings(const char *gguf, const int32_t *ids, int n, bool pooled, int *d)
{
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(gguf, mp);
    if (!model)
        return NULL;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = cp.n_batch = cp.n_ubatch = (uint32_t)n;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.embeddings = true;
    cp.pooling_type = pooled ? LLAMA_POOLING_TYPE_UNSPECIFIED : LLAMA_POOLING_TYPE_NONE;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf = 1;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    float *out = NULL;
    if (ctx) {
        *d = llama_model_n_embd(model);
        struct llama_batch b = batch_of(ids, n);
        size_t rows = pooled ? 1 : (size_t)n;
        /* an encoder-only model with llama.cpp's encoder graph (t5encoder)
         * runs through llama_encode, as llama.cpp's embedding example runs it
         * (llama_decode would give it a causal KV cache) */
        bool encode = llama_model_has_encoder(model) && !llama_model_has_decoder(model);
        if ((encode ? llama_encode(ctx, b) : llama_decode(ctx, b)) == 0 &&
            (out = malloc(rows * (size_t)*d * sizeof *out))) {
            for (size_t i = 0; i < rows; i++) {
                const float *e = pooled ? llama_get_embeddings_seq(ctx, 0) : llama_get_embeddings_ith(ctx, (int)i);
                if (!e) {
                    free(out), out = NULL;
                    break;
                }
                memcpy(out + i * (size_t)*d, e, (size_t)*d * sizeof *out);
            }
        }
        llama_batch_free(b);
        llama_free(ctx);
    }
    llama_model_free(model);
    return out;
}

/* attnscope's last hidden states and pooled vector, against llama.cpp's. */
static int compare_encoder(const char *gguf, as_session *s, const int32_t *ids, int n, double tol)
{
    char copy[] = "/tmp/attnscope-llama-compare-XXXXXX.gguf", msg[512] = "";
    int fd = mkstemps(copy, 5), d = 0, at = 0, failed = 0;
    if (fd < 0)
        return printf("FAIL %s: cannot make a temporary copy\n", gguf), 1;
    close(fd);
    if (copy_without(gguf, copy, "mlm.", msg, sizeof msg))
        return unlink(copy), printf("FAIL %s: copy without mlm.*: %s\n", gguf, msg), 1;
    int last = as_program_hook(s->prog, AS_HK_ENC_LNF_NORMALIZED, -1);
    if (last < 0)
        last = as_program_hook(s->prog, AS_HK_LN2_NORMALIZED, s->model->cfg.n_layer - 1);
    float *b = llama_embeddings(copy, ids, n, false, &d);
    if (!b || d != s->model->cfg.d_model || !as_capture_has(s->cap, last)) {
        printf("FAIL %s: llama.cpp cannot run it in embeddings mode (LLAMA_COMPARE_LOG=1 shows why)\n", gguf);
        failed = 1;
    } else {
        double w = worst_rel(as_capture_row(s->cap, last, 0), b, n, d, &at);
        failed |= !(w <= tol);
        printf("%s %s: %d positions x %d per-token outputs (%s), worst max|a-b| / max|b| = %.2e at position %d "
               "(limit %.0e)\n", w <= tol ? "ok  " : "FAIL", gguf, n, d, s->prog->hooks[last].name, w, at, tol);
    }
    free(b);
    if (!failed && s->prog->pooled >= 0) {
        b = llama_embeddings(copy, ids, n, true, &d);
        double w = b ? worst_rel(as_capture_row(s->cap, s->prog->pooled, n - 1), b, 1, d, &at) : INFINITY;
        failed |= !(w <= tol);
        printf("%s %s: the pooled vector (pooling_type %d), max|a-b| / max|b| = %.2e (limit %.0e)\n",
               w <= tol ? "ok  " : "FAIL", gguf, (int)s->prog->pooling, w, tol);
        free(b);
    }
    unlink(copy);
    return failed;
}

/* Opens the fixture in attnscope, runs its ids; NULL on failure. */
static as_session *attnscope_run(const char *gguf, const int32_t *ids, int n, FILE *null, char *msg, size_t cap)
{
    as_session *s;
    as_error err = {{0}};
    char cmd[1024];
    size_t o = (size_t)snprintf(cmd, sizeof cmd, "prompt-ids");
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(cmd + o, sizeof cmd - o, " %d", ids[i]);
    if (as_session_new(&s, gguf, 256, null, null, &err))
        return snprintf(msg, cap, "%.400s", err.msg), NULL;
    if (as_session_exec(s, cmd, &err) || as_session_exec(s, "finish", &err)) {
        snprintf(msg, cap, "%.400s", err.msg);
        as_session_free(s);
        return NULL;
    }
    return s;
}

static bool is_encoder(const char *gguf, const int32_t *ids, int n)
{
    char msg[512];
    FILE *null = fopen("/dev/null", "w");
    as_session *s = null ? attnscope_run(gguf, ids, n, null, msg, sizeof msg) : NULL;
    bool enc = s && !s->prog->streams[s->prog->out_stream].causal;
    as_session_free(s);
    if (null)
        fclose(null);
    return enc;
}

static int encoder_fixture(const char *gguf, const int32_t *ids, int n, double tol)
{
    char msg[512] = "";
    FILE *null = fopen("/dev/null", "w");
    as_session *s = null ? attnscope_run(gguf, ids, n, null, msg, sizeof msg) : NULL;
    int rc = s ? compare_encoder(gguf, s, ids, n, tol) : (printf("FAIL %s: attnscope: %s\n", gguf, msg), 1);
    as_session_free(s);
    if (null)
        fclose(null);
    return rc;
}

/* llama.cpp's T5 pass: llama_encode over src (its output, [S][d], into
 * *enc), then llama_decode over tgt (its logits, [T][V], returned). */
static float *llama_encdec(const char *gguf, const int32_t *src, int S, const int32_t *tgt, int T, float **enc,
                           int *d, int *V, char *msg, size_t cap)
{
    *enc = NULL;
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(gguf, mp);
    if (!model)
        return snprintf(msg, cap, "llama.cpp cannot load it"), NULL;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = cp.n_batch = cp.n_ubatch = (uint32_t)(S > T ? S : T);
    cp.n_threads = cp.n_threads_batch = 1;
    cp.type_k = cp.type_v = GGML_TYPE_F32;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.embeddings = true;
    cp.pooling_type = LLAMA_POOLING_TYPE_NONE;
    cp.no_perf = 1;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    float *out = NULL;
    *d = llama_model_n_embd(model);
    *V = llama_vocab_n_tokens(llama_model_get_vocab(model));
    if (!ctx) {
        snprintf(msg, cap, "llama.cpp cannot make a context");
    } else if (!llama_model_has_encoder(model)) {
        snprintf(msg, cap, "llama.cpp says the model has no encoder");
    } else {
        struct llama_batch b = batch_of(src, S);
        if (llama_encode(ctx, b) != 0) {
            snprintf(msg, cap, "llama_encode failed");
        } else if ((*enc = malloc((size_t)S * (size_t)*d * sizeof **enc))) {
            for (int i = 0; i < S && *enc; i++) {
                const float *e = llama_get_embeddings_ith(ctx, i);
                if (e)
                    memcpy(*enc + (size_t)i * (size_t)*d, e, (size_t)*d * sizeof **enc);
                else
                    free(*enc), *enc = NULL, snprintf(msg, cap, "llama.cpp gives no encoder output at %d", i);
            }
        }
        llama_batch_free(b);
        llama_set_embeddings(ctx, false);
        b = batch_of(tgt, T);
        if (*enc && llama_decode(ctx, b) != 0)
            snprintf(msg, cap, "llama_decode after llama_encode failed");
        else if (*enc && (out = malloc((size_t)T * (size_t)*V * sizeof *out)))
            for (int i = 0; i < T && out; i++) {
                const float *l = llama_get_logits_ith(ctx, i);
                if (l)
                    memcpy(out + (size_t)i * (size_t)*V, l, (size_t)*V * sizeof *out);
                else
                    free(out), out = NULL, snprintf(msg, cap, "llama.cpp gives no logits at %d", i);
            }
        llama_batch_free(b);
    }
    llama_free(ctx);
    llama_model_free(model);
    return out;
}

/* An encoder-decoder's encoder output and decoder logits against llama.cpp's. */
static int encdec_fixture(const char *gguf, const int32_t *src, int S, const int32_t *tgt, int T,
                          double tol)
{
    char msg[512] = "", cmd[1024];
    int d = 0, V = 0, at = 0, failed = 0;
    float *enc = NULL, *b = llama_encdec(gguf, src, S, tgt, T, &enc, &d, &V, msg, sizeof msg);
    if (!b) {
        free(enc);
        return printf("FAIL %s: %s (LLAMA_COMPARE_LOG=1 shows why)\n", gguf, msg), 1;
    }
    as_session *s = NULL;
    as_error err = {{0}};
    FILE *null = fopen("/dev/null", "w");
    size_t o = (size_t)snprintf(cmd, sizeof cmd, "source-ids");
    for (int i = 0; i < S; i++)
        o += (size_t)snprintf(cmd + o, sizeof cmd - o, " %d", src[i]);
    /* the source, then the decoder's ids, then one pass */
    if (!null || as_session_new(&s, gguf, 256, null, null, &err) || as_session_exec(s, cmd, &err)) {
        printf("FAIL %s: attnscope: %s\n", gguf, err.msg);
        failed = 1;
    }
    if (!failed) {
        o = (size_t)snprintf(cmd, sizeof cmd, "prompt-ids");
        for (int i = 0; i < T; i++)
            o += (size_t)snprintf(cmd + o, sizeof cmd - o, " %d", tgt[i]);
        if (as_session_exec(s, cmd, &err) || as_session_exec(s, "finish", &err)) {
            printf("FAIL %s: attnscope: %s\n", gguf, err.msg);
            failed = 1;
        }
    }
    if (!failed) {
        int eh = as_program_hook(s->prog, AS_HK_ENC_LNF_NORMALIZED, -1), lh = as_program_hook(s->prog, AS_HK_LOGITS, -1);
        if (eh < 0 || lh < 0 || !as_capture_has(s->cap, eh) || !as_capture_has(s->cap, lh) ||
            d != s->model->cfg.d_model || V != s->model->cfg.n_vocab) {
            printf("FAIL %s: attnscope has no encoder output or logits of llama.cpp's sizes\n", gguf);
            failed = 1;
        } else {
            double w = worst_rel(as_capture_row(s->cap, eh, 0), enc, S, d, &at);
            failed |= !(w <= tol);
            printf("%s %s: encoder output, %d source positions x %d (%s), worst max|a-b| / max|b| = %.2e at "
                   "position %d (limit %.0e)\n", w <= tol ? "ok  " : "FAIL", gguf, S, d, s->prog->hooks[eh].name, w,
                   at, tol);
            w = worst_rel(as_capture_row(s->cap, lh, 0), b, T, V, &at);
            failed |= !(w <= tol);
            printf("%s %s: decoder logits after llama_encode, %d positions x %d, worst max|a-b| / max|b| = %.2e at "
                   "position %d (limit %.0e)\n", w <= tol ? "ok  " : "FAIL", gguf, T, V, w, at, tol);
        }
    }
    as_session_free(s);
    if (null)
        fclose(null);
    free(enc);
    free(b);
    return failed;
}

static int compare(const char *dir, double tol)
{
    char gguf[512], msg[1024] = "";
    int32_t ids[MAX_TOKENS];
    int n = read_ids(dir, ids, MAX_TOKENS), V = 0;
    snprintf(gguf, sizeof gguf, "%s.gguf", dir);
    if (n <= 0)
        return printf("FAIL %s: cannot read %s/tokens.npy\n", dir, dir), 1;
    int32_t src[MAX_TOKENS];
    int S = read_ids_file(dir, "source.npy", src, MAX_TOKENS);
    if (S > 0)
        return encdec_fixture(gguf, src, S, ids, n, tol);
    if (is_encoder(gguf, ids, n))
        return encoder_fixture(gguf, ids, n, tol);
    float *b = llama_logits(gguf, ids, n, &V);
    if (!b)
        return printf("FAIL %s: llama.cpp cannot run it (LLAMA_COMPARE_LOG=1 shows why)\n", gguf), 1;
    float *a = attnscope_logits(gguf, ids, n, V, msg, sizeof msg);
    if (!a)
        return free(b), printf("FAIL %s: attnscope: %s\n", gguf, msg), 1;
    double worst = 0;
    int worst_pos = 0;
    for (int i = 0; i < n; i++) {
        double mx = 0, d = 0;
        for (int j = 0; j < V; j++) {
            mx = fmax(mx, fabs(b[(size_t)i * V + j]));
            d = fmax(d, fabs((double)a[(size_t)i * V + j] - b[(size_t)i * V + j]));
        }
        if (d / (mx > 0 ? mx : 1) > worst)
            worst = d / (mx > 0 ? mx : 1), worst_pos = i;
    }
    bool ok = worst <= tol;
    printf("%s %s: %d positions x %d logits, worst max|a-b| / max|b| = %.2e at position %d (limit %.0e)\n",
           ok ? "ok  " : "FAIL", gguf, n, V, worst, worst_pos, tol);
    free(a);
    free(b);
    return !ok;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return fprintf(stderr, "usage: llama-compare LIBDIR TOL FIXTURE...\n"), 2;
    llama_log_set(quiet, NULL);
    ggml_backend_load_all_from_path(argv[1]);
    llama_backend_init();
    double tol = atof(argv[2]);
    int failed = 0;
    for (int i = 3; i < argc; i++)
        failed += compare(argv[i], tol);
    llama_backend_free();
    return failed ? 1 : 0;
}
