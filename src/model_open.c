/* Loading a model from a path: which reader it needs (a Hugging Face
 * directory, a llama2.c checkpoint, a GGUF file), above them all. */
#include "attnscope/model.h"

#include "attnscope/file.h"
#include "attnscope/hf.h"
#include "attnscope/llama2c.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* GGUF files start with their magic; anything else is read as a llama2.c
 * checkpoint (which has none), unless its name says GGUF. What cannot be
 * read as a regular file (a FIFO, a device: never waited on) goes to the
 * GGUF reader, whose error says so. */
static bool is_gguf(const char *path)
{
    unsigned char magic[4] = {0};
    FILE *f = as_file_fopen_read(path, NULL, NULL);
    size_t got = f ? fread(magic, 1, sizeof magic, f) : 0;
    if (f)
        fclose(f);
    size_t n = strlen(path);
    if (n >= 5 && !strcmp(path + n - 5, ".gguf"))
        return true;
    return !f || got < 4 || !memcmp(magic, "GGUF", 4);
}

int as_model_load(as_model **out, const char *path, as_error *err)
{
    return as_model_load_with(out, path, NULL, err);
}

int as_model_load_with(as_model **out, const char *path, const char *tokenizer, as_error *err)
{
    as_gguf *g;
    *out = NULL;
    if (as_hf_is_dir(path)) {
        if (tokenizer)
            return as_error_set(err, "%s: a Hugging Face directory carries its own tokenizer (tokenizer.json; "
                                "--tokenizer %s is for llama2.c checkpoints)", path, tokenizer);
        return as_hf_load(out, path, err);
    }
    if (!is_gguf(path))
        return as_llama2c_load(out, path, tokenizer, err);
    if (tokenizer)
        return as_error_set(err, "%s: a GGUF file carries its own tokenizer (--tokenizer %s is for "
                            "llama2.c checkpoints)", path, tokenizer);
    if (as_gguf_open(&g, path, err))
        return AS_ERR;
    if (as_model_from_gguf(out, g, err)) {
        as_gguf_close(g);
        return AS_ERR;
    }
    return AS_OK;
}
