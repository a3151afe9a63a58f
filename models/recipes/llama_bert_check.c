/* llama.cpp's view of austen-bert, for export_bert.py's checks: its
 * WordPiece ids and its per-token output vectors (embeddings mode, no
 * pooling), through the C API of the npm package's libllama.
 *
 *   llama-bert-check LIBDIR MODEL.gguf < LINES
 *
 * Each input line is one text (UTF-8, no newline inside). For each, prints
 *   ids: I I I ...            llama_tokenize with add_special (CLS ... SEP)
 *   vec: F F F ...            one line per token: the last layer's output
 * Exit status 1 when the model or a text cannot be run, 2 on bad usage. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ggml-backend.h"
#include "llama.h"

#define MAX_TOKENS 128

static void quiet(enum ggml_log_level level, const char *text, void *ud)
{
    (void)ud;
    if (level == GGML_LOG_LEVEL_ERROR || getenv("LLAMA_CHECK_LOG"))
        fputs(text, stderr);
}

static int run(struct llama_context *ctx, const struct llama_vocab *vocab, const char *text, int d)
{
    llama_token ids[MAX_TOKENS];
    int n = llama_tokenize(vocab, text, (int32_t)strlen(text), ids, MAX_TOKENS, true, false);
    if (n <= 0)
        return fprintf(stderr, "cannot tokenize (or over %d tokens): %s\n", MAX_TOKENS, text), 1;
    printf("ids:");
    for (int i = 0; i < n; i++)
        printf(" %d", ids[i]);
    putchar('\n');
    struct llama_batch b = llama_batch_init(n, 0, 1);
    for (int i = 0; i < n; i++) {
        b.token[i] = ids[i];
        b.pos[i] = i;
        b.n_seq_id[i] = 1;
        b.seq_id[i][0] = 0;
        b.logits[i] = 1;
    }
    b.n_tokens = n;
    int rc = llama_encode(ctx, b);
    for (int i = 0; !rc && i < n; i++) {
        const float *v = llama_get_embeddings_ith(ctx, i);
        if (!v) {
            rc = 1;
            break;
        }
        printf("vec:");
        for (int j = 0; j < d; j++)
            printf(" %.9g", v[j]);
        putchar('\n');
    }
    llama_batch_free(b);
    llama_memory_clear(llama_get_memory(ctx), true);
    return rc != 0;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return fprintf(stderr, "usage: llama-bert-check LIBDIR MODEL < LINES\n"), 2;
    llama_log_set(quiet, NULL);
    ggml_backend_load_all_from_path(argv[1]);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.n_gpu_layers = 0;
    struct llama_model *model = llama_model_load_from_file(argv[2], mp);
    if (!model)
        return fprintf(stderr, "cannot load %s (LLAMA_CHECK_LOG=1 shows why)\n", argv[2]), 1;
    struct llama_context_params cp = llama_context_default_params();
    cp.n_ctx = cp.n_batch = cp.n_ubatch = MAX_TOKENS;
    cp.n_threads = cp.n_threads_batch = 1;
    cp.embeddings = true;
    cp.pooling_type = LLAMA_POOLING_TYPE_NONE;
    cp.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_DISABLED;
    cp.no_perf = 1;
    struct llama_context *ctx = llama_init_from_model(model, cp);
    if (!ctx)
        return fprintf(stderr, "cannot make a context for %s\n", argv[2]), 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    int d = llama_model_n_embd(model), rc = 0;
    static char line[1 << 16];
    while (!rc && fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = 0;
        rc = run(ctx, vocab, line, d);
    }
    llama_free(ctx);
    llama_model_free(model);
    llama_backend_free();
    return rc;
}
