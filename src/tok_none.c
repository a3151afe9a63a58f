/* tok_none: GGUF's "none" (and "no_vocab") tokenizer: a file without a
 * vocabulary, as llama.cpp's test models and some converted models are.
 * Owns nothing but the refusal: there is no text to read, so a context is
 * given as token ids (`prompt-ids`). tok_vocab.c gives the ids 0..N-1
 * (N from the architecture's vocab_size key, as llama.cpp reads it) the
 * names "#0".."#N-1", control tokens standing for no bytes, so every view
 * labels a position by its id through the ordinary label code. */
#include "tokenizer_internal.h"

static int32_t none_byte_token(const as_tokenizer *t, uint8_t b)
{
    (void)t, (void)b;
    return -1;
}

static int none_encode(const as_tokenizer *t, const char *s, size_t n, size_t base, work *w,
                       as_error *err)
{
    (void)t, (void)s, (void)n, (void)base, (void)w;
    return as_error_set(err, "tokenizer: this model has no vocabulary (tokenizer.ggml.model is 'none'), "
                             "so it cannot read text: give the context as token ids (prompt-ids ID ...)");
}

static size_t none_decode(const char *s, size_t n, char *dst)
{
    (void)s, (void)n, (void)dst;
    return 0;
}

const as_tok_algo as_tok_none = {
    .gguf_model = "none",
    .kind = AS_TOK_NONE,
    .bos = -1,
    .eos = -1,
    .unk = -1,
    .add_bos = false,
    .space_prefix = false,
    .needs_merges = false,
    .byte_fallback = false,
    .byte_token_name = "token",
    .byte_token = none_byte_token,
    .encode = none_encode,
    .decode = none_decode,
};
