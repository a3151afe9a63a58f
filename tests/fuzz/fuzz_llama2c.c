/* Fuzz target: llama2.c checkpoints and tokenizer files (src/arch_llama2c.c),
 * the other model format users bring. The reader maps files, so each
 * input is written to the scratch directory (tmpfs) first.
 * The first byte picks a mode:
 *   0  the rest is a checkpoint: as_llama2c_open, the model card, every
 *      tensor row dequantized;
 *   1  bytes 1-2 give a vocabulary size, the rest is a tokenizer file:
 *      as_llama2c_tokenizer, then encode and decode;
 *   2  bytes 1-4 give the checkpoint's length, then the checkpoint, then
 *      its tokenizer: as_llama2c_load and a short session.
 * Properties: no crash, leak or undefined behaviour; a refused file gets a
 * message naming it; tensors of an accepted checkpoint lie in the file. */
#include "fuzz.h"

#include <string.h>

#include "attnscope/llama2c.h"
#include "attnscope/session.h"

static char ckpt[256], tokf[256];

static void put_file(const char *path, const uint8_t *data, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(data, 1, n, f) != n) || fclose(f)) {
        perror(path);
        abort();
    }
}

static void checkpoint(void)
{
    as_gguf *g;
    as_error err;
    if (as_llama2c_open(&g, ckpt, &err)) {
        FUZZ_CHECK(strstr(err.msg, ckpt) != NULL, "message does not name the file: %s", err.msg);
        return;
    }
    as_gguf_print_info(g, fuzz_devnull());
    size_t budget = (size_t)1 << 20;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        FUZZ_CHECK(t->data >= g->map && t->n_bytes <= g->size && (size_t)(t->data - g->map) <= g->size - t->n_bytes,
                   "tensor %s outside the file", t->name);
        if (t->ne[0] > budget)
            continue;
        float *row = malloc(t->ne[0] * sizeof *row);
        for (uint64_t r = 0; r < as_tensor_rows(t) && budget >= t->ne[0]; r++, budget -= t->ne[0])
            FUZZ_CHECK(as_tensor_row_f32(t, r, row, &err) == AS_OK, "%s: %s", t->name, err.msg);
        free(row);
    }
    as_gguf_close(g);
}

static void tokenizer(int n_vocab)
{
    as_tokenizer *t;
    as_error err;
    if (as_llama2c_tokenizer(&t, tokf, n_vocab, &err)) {
        FUZZ_CHECK(strstr(err.msg, tokf) != NULL, "message does not name the file: %s", err.msg);
        return;
    }
    FUZZ_CHECK(as_tokenizer_vocab_size(t) == (size_t)n_vocab, "vocabulary size");
    static const char text[] = "Once upon a time, \xC3\xA9 <s>\n";
    int32_t *ids;
    size_t n, len;
    char *out;
    if (as_tokenizer_encode(t, text, sizeof text - 1, true, &ids, &n, &err) == AS_OK) {
        FUZZ_CHECK(as_tokenizer_decode(t, ids, n, &out, &len, &err) == AS_OK, "decode: %s", err.msg);
        free(out);
        free(ids);
    }
    as_tokenizer_free(t);
}

static void pair(void)
{
    as_model *m;
    as_session *s;
    as_error err;
    if (as_llama2c_load(&m, ckpt, tokf, &err)) {
        FUZZ_CHECK(strstr(err.msg, ckpt) || strstr(err.msg, tokf), "message names neither file: %s", err.msg);
        return;
    }
    const as_config *c = &m->cfg;
    if (c->n_ctx > 4096 || (uint64_t)c->n_ctx * (uint64_t)c->n_layer * (uint64_t)c->d_model > (1u << 24)) {
        as_model_free(m); /* see fuzz_model.c: the session reserves memory per position */
        return;
    }
    if (as_session_from_model(&s, m, 1, fuzz_devnull(), fuzz_devnull(), &err)) {
        as_model_free(m);
        return;
    }
    static const char *const cmds[] = {"prompt Once upon", "finish", "top 3", "gen 3", "back 4", "tokens"};
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        as_session_exec(s, cmds[i], &err);
    as_session_free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ckpt[0]) {
        snprintf(ckpt, sizeof ckpt, "%s/model.bin", fuzz_scratch_dir());
        snprintf(tokf, sizeof tokf, "%s/tokenizer.bin", fuzz_scratch_dir());
    }
    if (size < 1)
        return 0;
    switch (data[0] % 3) {
    case 0:
        put_file(ckpt, data + 1, size - 1);
        checkpoint();
        break;
    case 1:
        if (size < 3)
            return 0;
        put_file(tokf, data + 3, size - 3);
        tokenizer(1 + (int)((data[1] | data[2] << 8) % 4096));
        break;
    default: {
        if (size < 5)
            return 0;
        size_t n = (size_t)(data[1] | data[2] << 8 | data[3] << 16 | (uint32_t)data[4] << 24);
        n = n < size - 5 ? n : size - 5;
        put_file(ckpt, data + 5, n);
        put_file(tokf, data + 5 + n, size - 5 - n);
        pair();
        break;
    }
    }
    return 0;
}
