/* tokenizer: text <-> token ids for the two GGUF tokenizer kinds.
 * "gpt2": byte-level BPE (GPT-2's byte-to-unicode map, its pre-tokenizer
 * split, merges ranked by order). "llama": SentencePiece-style BPE (pieces
 * with scores, '▁' for spaces, a leading space, <0xNN> byte fallback).
 * Decoding gives back the exact bytes. Owns the vocabulary. */
#ifndef ATTNSCOPE_TOKENIZER_H
#define ATTNSCOPE_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attnscope/error.h"
#include "attnscope/gguf.h"

typedef enum as_tok_kind { AS_TOK_GPT2, AS_TOK_LLAMA } as_tok_kind;

typedef struct as_tokenizer as_tokenizer;

typedef struct as_tokenizer_spec {
    as_tok_kind kind;
    const char *const *tokens; /* n_tokens vocabulary strings (as stored in GGUF) */
    const uint64_t *token_lens;/* may be NULL: then strlen */
    size_t n_tokens;
    const float *scores;       /* llama: n_tokens scores; may be NULL for gpt2 */
    const int32_t *token_types;/* may be NULL; GGUF token types (1 normal, 2 unknown, 3 control, 6 byte...) */
    const char *const *merges; /* gpt2: "a b" strings, rank = index */
    size_t n_merges;
    int32_t bos_id, eos_id, unk_id; /* -1 when absent */
    bool add_bos;
    bool add_space_prefix;     /* llama: prepend '▁' (default true) */
} as_tokenizer_spec;

/* Builds a tokenizer from an explicit spec (tests build small vocabularies). */
int as_tokenizer_new(as_tokenizer **out, const as_tokenizer_spec *spec, as_error *err);
/* From tokenizer.ggml.* keys of a GGUF file. */
int as_tokenizer_from_gguf(as_tokenizer **out, const as_gguf *g, as_error *err);
void as_tokenizer_free(as_tokenizer *t);

as_tok_kind as_tokenizer_kind(const as_tokenizer *t);
size_t as_tokenizer_vocab_size(const as_tokenizer *t);
int32_t as_tokenizer_bos(const as_tokenizer *t); /* -1 if none */
int32_t as_tokenizer_eos(const as_tokenizer *t);
bool as_tokenizer_add_bos(const as_tokenizer *t);

/* Encodes len bytes of text (need not be NUL-terminated, may hold invalid
 * UTF-8: invalid bytes are encoded as their own bytes). Prepends BOS when
 * add_bos is true and the tokenizer has one. *ids is malloc'd. */
int as_tokenizer_encode(const as_tokenizer *t, const char *text, size_t len, bool add_bos,
                        int32_t **ids, size_t *n_ids, as_error *err);
/* The pieces encode merges independently, as end byte offsets into text
 * (*ends malloc'd, ascending, the last == len): user-defined tokens cut out
 * first, then for gpt2 GPT-2's pre-tokenizer split (a llama fragment stays
 * whole). For showing word boundaries, and for testing the split. */
int as_tokenizer_pretokens(const as_tokenizer *t, const char *text, size_t len,
                           size_t **ends, size_t *n_ends, as_error *err);
/* Decodes to the exact bytes (malloc'd, NUL-terminated for convenience;
 * *len excludes the NUL). Control tokens (BOS/EOS) decode to nothing.
 * Out-of-range ids are an error. */
int as_tokenizer_decode(const as_tokenizer *t, const int32_t *ids, size_t n_ids,
                        char **out, size_t *len, as_error *err);
/* The stored vocabulary string of a token (e.g. "Ġthe", "▁the", "<0x0A>"). NULL if out of range. */
const char *as_tokenizer_piece(const as_tokenizer *t, int32_t id);
/* The bytes a single token stands for (byte tokens give their byte; BOS/EOS
 * give ""). Writes at most cap-1 bytes plus NUL; returns the byte count. */
size_t as_tokenizer_token_bytes(const as_tokenizer *t, int32_t id, char *buf, size_t cap);
/* Looks a token up by its stored string; -1 if absent. */
int32_t as_tokenizer_find(const as_tokenizer *t, const char *piece);

#endif
