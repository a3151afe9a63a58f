/* Fuzz target: Hugging Face directories (src/hf.c, src/arch_hf.c). The
 * reader maps files, so each input becomes one file of a directory in the
 * scratch directory whose other files come from the fixture
 * tests/fixtures/hf/tiny-gpt2 (or tiny-llama-bf16 for a tokenizer.json).
 * The first byte picks which file the rest is:
 *   0  model.safetensors (beside the fixture's config.json, tokenizer.json);
 *   1  config.json (beside the fixture's safetensors and tokenizer.json);
 *   2  tokenizer.json (beside tiny-llama-bf16's config and safetensors);
 *   3  model.safetensors.index.json, with the fixture's file present as
 *      model-00001-of-00001.safetensors.
 * An accepted directory is loaded as a model and run a little.
 * Properties: no crash, leak or undefined behaviour; a refused directory
 * gets a message naming a file or the directory, free of terminal control
 * bytes; every tensor of an accepted view decodes row by row. */
#include "fuzz.h"

#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnscope/hf.h"
#include "attnscope/session.h"

static char dir[256];

static void put_file(const char *name, const uint8_t *data, size_t n)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f)) {
        perror(path);
        abort();
    }
}

static void put_fixture(const char *fixture, const char *name, const char *as)
{
    char rel[256];
    size_t n;
    snprintf(rel, sizeof rel, "hf/%s/%s", fixture, name);
    uint8_t *b = fuzz_read_file(fuzz_fixture(rel), &n);
    put_file(as ? as : name, b, n);
    free(b);
}

static void clear_dir(void)
{
    static const char *const files[] = {"model.safetensors", "config.json", "tokenizer.json",
                                        "model.safetensors.index.json", "model-00001-of-00001.safetensors"};
    char path[512];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
}

static void check_view(void)
{
    as_gguf *g;
    as_error err;
    if (as_hf_open(&g, dir, &err)) {
        size_t where;
        FUZZ_CHECK(strstr(err.msg, dir) != NULL, "message does not name the directory or a file: %s", err.msg);
        FUZZ_CHECK(fuzz_terminal_safe(err.msg, strlen(err.msg), &where), "control byte at %zu: %s", where, err.msg);
        return;
    }
    as_gguf_print_info(g, fuzz_devnull());
    size_t budget = (size_t)1 << 20;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        FUZZ_CHECK(t->data != NULL, "tensor %s has no data", t->name);
        if (t->ne[0] > budget)
            continue;
        float *row = malloc(t->ne[0] * sizeof *row + 1);
        for (uint64_t r = 0; r < as_tensor_rows(t) && budget >= t->ne[0]; r++, budget -= t->ne[0])
            FUZZ_CHECK(as_tensor_row_f32(t, r, row, &err) == AS_OK, "%s: %s", t->name, err.msg);
        free(row);
    }
    as_gguf_close(g);

    as_model *m;
    as_session *s;
    if (as_hf_load(&m, dir, &err))
        return;
    const as_config *c = &m->cfg;
    if (c->n_ctx > 4096 || (uint64_t)c->n_ctx * (uint64_t)c->n_layer * (uint64_t)c->d_model > (1u << 24)) {
        as_model_free(m); /* see fuzz_model.c: the session reserves memory per position */
        return;
    }
    if (as_session_from_model(&s, m, 1, fuzz_devnull(), fuzz_devnull(), &err)) {
        as_model_free(m);
        return;
    }
    static const char *const cmds[] = {"prompt the cat sat", "finish", "top 3", "gen 2", "tokens"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        as_session_exec(s, cmds[i], &err);
    as_session_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dir[0]) {
        snprintf(dir, sizeof dir, "%s/hf-model", fuzz_scratch_dir());
        mkdir(dir, 0700);
    }
    if (size < 1)
        return 0;
    clear_dir();
    switch (data[0] % 4) {
    case 0:
        put_fixture("tiny-gpt2", "config.json", NULL);
        put_fixture("tiny-gpt2", "tokenizer.json", NULL);
        put_file("model.safetensors", data + 1, size - 1);
        break;
    case 1:
        put_fixture("tiny-gpt2", "model.safetensors", NULL);
        put_fixture("tiny-gpt2", "tokenizer.json", NULL);
        put_file("config.json", data + 1, size - 1);
        break;
    case 2:
        put_fixture("tiny-llama-bf16", "config.json", NULL);
        put_fixture("tiny-llama-bf16", "model.safetensors", NULL);
        put_file("tokenizer.json", data + 1, size - 1);
        break;
    default:
        put_fixture("tiny-gpt2", "config.json", NULL);
        put_fixture("tiny-gpt2", "tokenizer.json", NULL);
        put_fixture("tiny-gpt2", "model.safetensors", "model-00001-of-00001.safetensors");
        put_file("model.safetensors.index.json", data + 1, size - 1);
        break;
    }
    check_view();
    return 0;
}
