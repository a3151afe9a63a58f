/* Fuzz target: a GGUF file all the way to a running model -- the reader,
 * the configuration checks (hyperparameters against tensor shapes), the
 * tokenizer from metadata, the non-finite weight scan, and then a session:
 * a prompt, a full pass, a few generated tokens, statistics and `back`.
 * Seeds are small valid gpt2 and llama models (tests/fuzz/make_corpus.c)
 * and the broken variants of them the semantic checks must refuse.
 * Properties: no crash, leak or undefined behaviour; a refused model gets a
 * message naming the file; an accepted one runs; no message, warning or
 * command output carries a terminal control byte from the file. */
#include "fuzz.h"

#include <string.h>

#include "attnscope/model.h"
#include "attnscope/session.h"

#define NAME "fuzz.gguf"

/* A file may claim any context length up to the loader's limit (2^24). The
 * capture grows with the positions in use, whatever the window says; the
 * interpreter's token arrays (8 bytes a position) and pass list (32) follow
 * the window, so a pass is run up to 2^20 of it (40 MB reserved, within
 * libFuzzer's malloc limit). The loader's refusals are exercised whatever
 * the size. */
#define MAX_RUN_CTX (1 << 20)

static void run_session(as_model *m)
{
    as_session *s;
    as_error err;
    const as_config *c = &m->cfg;
    if (c->n_ctx > MAX_RUN_CTX || (uint64_t)c->n_vocab * (uint64_t)c->d_model > (1u << 22)) {
        as_model_free(m);
        return;
    }
    char *text = NULL;
    size_t len = 0, at;
    FILE *out = open_memstream(&text, &len);
    if (as_session_from_model(&s, m, 1, out, out, &err) != AS_OK) {
        as_model_free(m);
        fclose(out);
        free(text);
        return;
    }
    /* everything that prints strings from the file: pieces, tensor names, metadata */
    static const char *const cmds[] = {
        "prompt \"Hi, the cat\xC3\xA9!\"", "prompt-ids 0 1", "step 3", "back 2", "finish", "top 3",
        "stats unembed.hook_out", "norms 0", "norms final", "gen 3", "back 5", "where", "tokens",
        "weights", "info", "tokenize \"a b\"",
    };
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        memset(&err, 0, sizeof err);
        if (as_session_exec(s, cmds[i], &err))
            FUZZ_CHECK(fuzz_terminal_safe(err.msg, strlen(err.msg), &at), "'%s': control byte in message at %zu: %s",
                       cmds[i], at, err.msg);
    }
    as_session_free(s);
    fclose(out);
    FUZZ_CHECK(fuzz_terminal_safe(text, len, &at), "control byte in the output at %zu: %.*s", at,
               (int)(len - at < 80 ? len - at : 80), text + at);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    as_gguf *g;
    as_model *m;
    as_error err;
    memset(&err, 0, sizeof err);
    /* A copy, 4-byte aligned as a memory map is, so F32 weights are used in place. */
    uint8_t *buf = malloc(size ? size : 1);
    memcpy(buf, data, size);
    if (as_gguf_parse(&g, buf, size, NAME, &err) != AS_OK) {
        free(buf);
        return 0;
    }
    size_t at;
    if (as_model_from_gguf(&m, g, &err) != AS_OK) {
        FUZZ_CHECK(m == NULL, "failure left a model");
        FUZZ_CHECK(strstr(err.msg, NAME) != NULL, "message does not name the file: %s", err.msg);
        FUZZ_CHECK(fuzz_terminal_safe(err.msg, strlen(err.msg), &at), "control byte in the message at %zu: %s", at,
                   err.msg);
        as_gguf_close(g);
        free(buf);
        return 0;
    }
    const as_config *c = &m->cfg;
    /* a head's width is d_model / heads unless the file says otherwise (Gemma's key_length) */
    FUZZ_CHECK(c->n_head > 0 && c->n_head_kv > 0 && c->n_head % c->n_head_kv == 0 && c->d_head > 0,
               "inconsistent heads: d_model %d, heads %d/%d, d_head %d", c->d_model, c->n_head, c->n_head_kv,
               c->d_head);
    FUZZ_CHECK(c->rope_dim >= 0 && c->rope_dim % 2 == 0, "rope_dim %d", c->rope_dim);
    FUZZ_CHECK((size_t)c->n_vocab == as_tokenizer_vocab_size(m->tok), "vocab");
    FUZZ_CHECK(fuzz_terminal_safe(m->warnings, strlen(m->warnings), &at), "control byte in the warnings at %zu: %s",
               at, m->warnings);
    run_session(m);
    free(buf);
    return 0;
}
