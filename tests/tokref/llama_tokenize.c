/* llama.cpp's tokenizer as a program, the reference tests/test_tok_llama.c
 * compares attnscope's tokenizer with: llama_tokenize() from libllama (the
 * prebuilt library of the npm package @node-llama-cpp/linux-x64), on a
 * vocabulary loaded with vocab_only. Built by tests/tokref/fetch.sh.
 *
 *   llama-tokenize MODEL.gguf < RECORDS
 *
 * RECORDS: each text as a line "ADD_SPECIAL PARSE_SPECIAL BYTES" (0 or 1,
 * 0 or 1, the byte count), then the bytes, then a newline. Prints one
 * line per text: the ids, separated by spaces (an empty line for none).
 * Exit status 1 when the model does not load, 2 on bad usage or input. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llama.h"

static void quiet(enum ggml_log_level level, const char *text, void *ud)
{
    (void)ud;
    if (level == GGML_LOG_LEVEL_ERROR || getenv("LLAMA_TOKENIZE_LOG"))
        fputs(text, stderr);
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return fprintf(stderr, "usage: llama-tokenize MODEL < RECORDS\n"), 2;
    llama_log_set(quiet, NULL);
    llama_backend_init();
    struct llama_model_params mp = llama_model_default_params();
    mp.vocab_only = true;
    struct llama_model *model = llama_model_load_from_file(argv[1], mp);
    if (!model)
        return fprintf(stderr, "llama-tokenize: cannot load %s\n", argv[1]), 1;
    const struct llama_vocab *vocab = llama_model_get_vocab(model);
    size_t cap = 1 << 16, tcap = 1 << 16;
    char *text = malloc(cap);
    llama_token *ids = malloc(tcap * sizeof *ids);
    long len;
    int rc = 0, add_special, parse_special;
    while (text && ids && scanf("%d %d %ld", &add_special, &parse_special, &len) == 3) {
        if (len < 0 || len > (1L << 30) || getchar() != '\n') {
            rc = 2;
            break;
        }
        if ((size_t)len + 1 > cap) {
            char *p = realloc(text, (size_t)len + 1);
            if (!p) {
                rc = 2;
                break;
            }
            text = p, cap = (size_t)len + 1;
        }
        if (fread(text, 1, (size_t)len, stdin) != (size_t)len || getchar() != '\n') {
            rc = 2;
            break;
        }
        int32_t n = llama_tokenize(vocab, text, (int32_t)len, ids, (int32_t)tcap, add_special != 0, parse_special != 0);
        if (n < 0) {
            llama_token *p = realloc(ids, (size_t)-n * sizeof *ids);
            if (!p) {
                rc = 2;
                break;
            }
            ids = p, tcap = (size_t)-n;
            n = llama_tokenize(vocab, text, (int32_t)len, ids, (int32_t)tcap, add_special != 0, parse_special != 0);
        }
        for (int32_t i = 0; i < n; i++)
            printf(i ? " %d" : "%d", ids[i]);
        putchar('\n');
    }
    if (rc)
        fprintf(stderr, "llama-tokenize: malformed input record\n");
    free(text);
    free(ids);
    llama_model_free(model);
    llama_backend_free();
    return rc;
}
