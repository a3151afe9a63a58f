/* llama.cpp's side of the benchmark: times prompt processing and greedy
 * decoding through llama.cpp's C API on the same GGUF file attnscope reads.
 * Built only when BENCH_LLAMA_LIB (the libllama/libggml shared libraries)
 * and BENCH_LLAMA_INC (a llama.cpp source tree of the same release, for
 * llama.h) are given; see tests/bench/RESULTS.md.
 *
 *   llama-peer LIBDIR MODEL.gguf decode|prompt THREADS N_CTX ID,ID,...
 *
 * prints the same "key value" lines as attnscope's worker. And
 *
 *   llama-peer LIBDIR IN.gguf quantize FTYPE OUT.gguf
 *
 * writes IN quantized by llama.cpp's own quantizer (FTYPE: llama_ftype's
 * number, e.g. 2 Q4_0, 15 Q4_K_M, 18 Q6_K), the files the bench times. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ggml-backend.h"
#include "llama.h"

#define N_GEN 256

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Errors only, unless LLAMA_PEER_LOG is set (e.g. to see which CPU
 * backend variant llama.cpp picked). */
static void log_errors_only(enum ggml_log_level level, const char *text, void *ud)
{
    (void)ud;
    if (level == GGML_LOG_LEVEL_ERROR || getenv("LLAMA_PEER_LOG"))
        fputs(text, stderr);
}

static int argmax(const float *x, int n)
{
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

static int parse_ids(const char *s, llama_token *ids, int cap)
{
    int n = 0;
    for (char *end; *s && n < cap; s = *end ? end + 1 : end)
        ids[n++] = (llama_token)strtol(s, &end, 10);
    return n;
}

/* Decodes ids[0..n) as one batch; returns the greedy next token or -1. */
static int step(struct llama_context *ctx, llama_token *ids, int n, int n_vocab)
{
    if (llama_decode(ctx, llama_batch_get_one(ids, n)))
        return -1;
    return argmax(llama_get_logits_ith(ctx, -1), n_vocab);
}

static int run(struct llama_context *ctx, int n_vocab, int decode, llama_token *ids, int n)
{
    long long t0 = now_ns();
    llama_token tok = step(ctx, ids, n, n_vocab);
    long long t1 = now_ns();
    if (tok < 0)
        return fprintf(stderr, "llama-peer: llama_decode failed\n"), 1;
    if (!decode) {
        printf("first_ns %lld\nprompt_tps %.3f\nids %d\n", t1, n / ((t1 - t0) * 1e-9), tok);
        return 0;
    }
    llama_token out[N_GEN];
    out[0] = tok;
    for (int i = 1; i < N_GEN + 1; i++) {
        llama_token next = step(ctx, &tok, 1, n_vocab);
        if (next < 0)
            return fprintf(stderr, "llama-peer: llama_decode failed at token %d\n", i), 1;
        if (i < N_GEN)
            out[i] = next;
        tok = next;
    }
    long long t2 = now_ns();
    printf("decode_tps %.3f\nids", N_GEN / ((t2 - t1) * 1e-9));
    for (int i = 0; i < N_GEN; i++)
        printf(" %d", out[i]);
    printf("\n");
    return 0;
}

static int quantize(char **argv)
{
    llama_backend_init();
    llama_model_quantize_params qp = llama_model_quantize_default_params();
    qp.ftype = (enum llama_ftype)atoi(argv[4]);
    qp.nthread = 2;
    uint32_t rc = llama_model_quantize(argv[2], argv[5], &qp);
    llama_backend_free();
    if (rc)
        return fprintf(stderr, "llama-peer: quantizing %s failed (%u)\n", argv[2], rc), 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 6 && !strcmp(argv[3], "quantize")) {
        llama_log_set(log_errors_only, NULL);
        ggml_backend_load_all_from_path(argv[1]);
        return quantize(argv);
    }
    if (argc != 7)
        return fprintf(stderr, "usage: llama-peer LIBDIR MODEL decode|prompt THREADS N_CTX IDS\n"), 2;
    static llama_token ids[4096];
    int n = parse_ids(argv[6], ids, 4096), threads = atoi(argv[4]);
    llama_log_set(log_errors_only, NULL);
    ggml_backend_load_all_from_path(argv[1]);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(argv[2], mp);
    if (!model)
        return fprintf(stderr, "llama-peer: cannot load %s\n", argv[2]), 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = (uint32_t)atoi(argv[5]);
    cp.n_batch = cp.n_ubatch = 512;
    cp.n_threads = cp.n_threads_batch = threads;
    cp.no_perf = 1;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx)
        return fprintf(stderr, "llama-peer: cannot make a context\n"), 1;
    int rc = run(ctx, llama_vocab_n_tokens(llama_model_get_vocab(model)), !strcmp(argv[3], "decode"), ids, n);
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return rc;
}
