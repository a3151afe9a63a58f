/* tokenizer: text <-> token ids for the GGUF tokenizer kinds, as llama.cpp
 * tokenizes (llama_tokenize gives the same ids for valid UTF-8).
 * "gpt2": byte-level BPE (GPT-2's byte-to-unicode map, the pre-tokenizer
 * tokenizer.ggml.pre names -- GPT-2's, Llama 3's, Qwen 2's, DeepSeek's,
 * ... -- merges ranked by order). "llama": SentencePiece-style BPE (pieces
 * with scores, '▁' for spaces, a leading space, <0xNN> byte fallback).
 * "bert": WordPiece as llama.cpp's WPM (BERT's normalizer: lower case,
 * accents stripped, punctuation and CJK split; the longest piece first;
 * [UNK] for a word no pieces spell; [CLS] ... [SEP] added).
 * "none": a file without a vocabulary, run from token ids. Special tokens
 * (control, user-defined) are cut out of the text as llama.cpp does.
 * Decoding gives back the exact bytes (bert: the normalized words, spaced
 * and tidied as llama.cpp's detokenizer does). Owns the vocabulary. */
#ifndef ATTNSCOPE_TOKENIZER_H
#define ATTNSCOPE_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attnscope/engine.h"
#include "attnscope/error.h"
#include "attnscope/gguf.h"

typedef enum as_tok_kind { AS_TOK_GPT2, AS_TOK_LLAMA, AS_TOK_NONE, AS_TOK_BERT, AS_TOK_T5 } as_tok_kind;

typedef struct as_tokenizer as_tokenizer;

typedef struct as_tokenizer_spec {
    as_tok_kind kind;
    const char *const *tokens; /* n_tokens vocabulary strings (as stored in GGUF); none: ignored */
    const uint64_t *token_lens;/* may be NULL: then strlen */
    size_t n_tokens;
    const float *scores;       /* llama: n_tokens scores; may be NULL for gpt2 */
    const int32_t *token_types;/* may be NULL; GGUF token types (1 normal, 2 unknown, 3 control, 6 byte...) */
    const char *const *merges; /* gpt2: "a b" strings, rank = index */
    size_t n_merges;
    int32_t bos_id, eos_id, unk_id; /* -1 when absent */
    bool add_bos;
    bool add_space_prefix;     /* llama: prepend '▁' (default true) */
    /* Added at the end. */
    bool add_eos;
    /* gpt2: the pre-tokenizer, a tokenizer.ggml.pre value ("llama-bpe",
     * "qwen2", ...); NULL: GPT-2's split ("gpt-2"). An unknown value runs
     * GPT-2's split and sets as_tokenizer_warning. */
    const char *pre;
    /* bert only (other kinds ignore them): the separator, padding and mask
     * tokens (-1 when absent; bos_id is [CLS]); and the normalizer's
     * switches, in the negative so that a zeroed spec lower-cases and
     * strips accents as llama.cpp does by default. */
    int32_t sep_id, pad_id, mask_id;
    bool keep_case, keep_accents;
    /* bert only: the tokenizers library's normalisation instead of
     * llama.cpp's (GGUF key tokenizer.attnscope.normalizer, ours, from a
     * tokenizer.json; keep_case/keep_accents then ignored): its steps in
     * order, space-separated, among "clean" (BertNormalizer's clean_text),
     * "cjk" (handle_chinese_chars), "strip-mn" (BertNormalizer's accent
     * stripping: full NFD, then Mn removed), "nfd", "lower" (full lower
     * case, char by char as Rust's to_lowercase), "strip-marks" (the
     * StripAccents normalizer: every \p{M} removed). NULL: llama.cpp's.
     * max_word_chars: a word of more code points is [UNK] (the library's
     * max_input_chars_per_word, key tokenizer.attnscope.max_word_chars);
     * 0: no limit, as llama.cpp. */
    const char *normalizer;
    uint32_t max_word_chars;
    /* t5 only (SentencePiece Unigram): the precompiled charsmap as the
     * file stores it (NULL/0: none), and the normalizer's
     * remove_extra_whitespaces (add_space_prefix above is its dummy
     * prefix). */
    const uint8_t *charsmap;
    size_t charsmap_len;
    bool remove_extra_whitespaces;
    /* Any kind but none: raw text is put in Unicode NFC before the
     * algorithm sees it (after special tokens are cut out), as the
     * tokenizers library's NFC normalizer does (Qwen's tokenizer.json);
     * GGUF key tokenizer.attnscope.nfc, ours: llama.cpp does not. */
    bool nfc;
    /* A sentence pair's template (GGUF key tokenizer.attnscope.pair, ours,
     * from a tokenizer.json's post-processor): "ID:T" a token id, "$A:T" /
     * "$B:T" the texts, T the type id, space-separated. NULL: BERT's
     * [CLS] $A [SEP] $B:1 [SEP]:1. */
    const char *pair;
} as_tokenizer_spec;

/* A vocabulary of names without text: ids 0..n-1 labelled by the names
 * (a classifier's classes), read from no text (as "none"). */
int as_tokenizer_labels(as_tokenizer **out, const char *const *names, const uint64_t *lens, size_t n,
                        as_error *err);
/* Builds a tokenizer from an explicit spec (tests build small vocabularies). */
int as_tokenizer_new(as_tokenizer **out, const as_tokenizer_spec *spec, as_error *err);
/* From tokenizer.ggml.* keys of a GGUF file, with llama.cpp's defaults:
 * a missing tokenizer.ggml.pre is its "default" split; add_bos_token is
 * on for "llama" and for the Llama 3, tekken and chameleon splits;
 * add_eos_token off; control-looking tokens (<|im_end|>, <|eot_id|>...)
 * made control, and phi-3's rstrip, as llama.cpp's loader does. "none"
 * takes its size from the architecture's vocab_size key. "bert": BOS
 * ([CLS]) from bos_token_id, else 101; separator_token_id ("seperator",
 * GGUF's spelling), else 102; unknown 100, padding 0, mask 103 (each
 * dropped when outside the vocabulary); tokenizer.ggml.normalizer.lowercase
 * (default on) and .strip_accents (default: as lowercase). */
int as_tokenizer_from_gguf(as_tokenizer **out, const as_gguf *g, as_error *err);
void as_tokenizer_free(as_tokenizer *t);

as_tok_kind as_tokenizer_kind(const as_tokenizer *t);
/* Offset of the first byte of text[0..n) that does not start a
 * well-formed UTF-8 character, or -1 when it is all well-formed. */
long as_tokenizer_first_invalid_utf8(const char *text, size_t n);
size_t as_tokenizer_vocab_size(const as_tokenizer *t);
int32_t as_tokenizer_bos(const as_tokenizer *t); /* -1 if none */
int32_t as_tokenizer_eos(const as_tokenizer *t);
bool as_tokenizer_add_bos(const as_tokenizer *t);
/* True when AS_TOK_ADD_SPECIAL appends an EOS (add_eos_token). */
bool as_tokenizer_add_eos(const as_tokenizer *t);
/* bert's separator, mask and padding tokens (as_tokenizer_sep, _mask,
 * _pad): engine.h. */

/* The tokenizer.ggml.pre value whose pre-tokenizer splits by exactly these
 * n regexes, in this order (a tokenizer.json's Sequence of Split
 * pre-tokenizers: DeepSeek-V3's three), or NULL when none does. */
const char *as_tokenizer_pre_for_splits(const char *const *regexes, size_t n);
/* The pre-tokenizer in use, as llama.cpp names its type ("llama3",
 * "gpt2", "default"...); NULL for a kind without one (llama, none). */
const char *as_tokenizer_pre(const as_tokenizer *t);
/* Whether a pre-token that is a token stays whole (llama.cpp's
 * ignore_merges: Llama 3, tekken...). */
bool as_tokenizer_ignore_merges(const as_tokenizer *t);
/* What the user should be told before trusting the ids (an unknown
 * pre-tokenizer run with GPT-2's split), or "" when nothing. */
const char *as_tokenizer_warning(const as_tokenizer *t);

/* How as_tokenizer_tokenize reads text: llama_tokenize's two flags. */
enum {
    AS_TOK_ADD_SPECIAL = 1,   /* BOS and EOS where the vocabulary adds them (bert: [CLS] and [SEP]) */
    AS_TOK_PARSE_SPECIAL = 2, /* control tokens' texts (<|im_start|>, <s>) in the text are those tokens */
};

/* Encodes len bytes of text (need not be NUL-terminated, may hold invalid
 * UTF-8: invalid bytes are encoded as their own bytes; bert drops them, as
 * llama.cpp drops the U+FFFD it reads there) as llama_tokenize with the
 * flags (AS_TOK_*): user-defined tokens are always cut out of the text
 * first; control and unknown tokens only with AS_TOK_PARSE_SPECIAL.
 * *ids is malloc'd. */
int as_tokenizer_tokenize(const as_tokenizer *t, const char *text, size_t len, unsigned flags,
                          int32_t **ids, size_t *n_ids, as_error *err);
/* A sentence pair as the tokenizer's pair template makes it (spec.pair:
 * each text without specials, the template's tokens and type ids around
 * them), else as BERT's template [CLS] $A [SEP] $B:1 [SEP]:1 makes it: a
 * with AS_TOK_ADD_SPECIAL, b without, then [SEP] (found by its text);
 * *types 0 for a's part, 1 for the rest; *n_a: the ids up to b's first.
 * flags: AS_TOK_PARSE_SPECIAL or 0. Without a template, a vocabulary
 * without [SEP] is refused. *ids and *types are malloc'd. */
int as_tokenizer_tokenize_pair(const as_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen,
                               unsigned flags, int32_t **ids, int32_t **types, size_t *n_ids, size_t *n_a,
                               as_error *err);
/* s[0, n) in Unicode Normalization Form C (UAX #15; bytes that are not
 * UTF-8 kept as they are). *out is malloc'd and NUL-terminated. */
int as_tokenizer_nfc(const char *s, size_t n, char **out, size_t *out_n, as_error *err);
/* The text as plain text (no control token read from it), with BOS in
 * front when add_bos is true and the tokenizer has one (never an EOS). */
int as_tokenizer_encode(const as_tokenizer *t, const char *text, size_t len, bool add_bos,
                        int32_t **ids, size_t *n_ids, as_error *err);
/* The pieces encode merges independently, as end byte offsets into text
 * (*ends malloc'd, ascending, the last == len): user-defined tokens cut out
 * first, then for gpt2 the pre-tokenizer's split, for bert the words (each
 * piece running to the next word's start; a llama fragment stays whole).
 * For showing word boundaries, and for testing the split. */
int as_tokenizer_pretokens(const as_tokenizer *t, const char *text, size_t len,
                           size_t **ends, size_t *n_ends, as_error *err);
/* Decodes to the exact bytes (malloc'd, NUL-terminated for convenience;
 * *len excludes the NUL). Control tokens (BOS/EOS) decode to nothing.
 * For llama, the space encode puts in front of each text fragment (at the
 * start, after a control or user-defined token) is taken off again.
 * For bert, the first word's space ("▁the" -> " the") is dropped, and so
 * are the spaces llama.cpp's detokenizer tidies away (" ." " ," " 's").
 * Out-of-range ids are an error. */
int as_tokenizer_decode(const as_tokenizer *t, const int32_t *ids, size_t n_ids,
                        char **out, size_t *len, as_error *err);
/* A token's stored string and its bytes (as_tokenizer_piece,
 * as_tokenizer_token_bytes): engine.h. */

/* Looks a token up by its stored string; -1 if absent. */
int32_t as_tokenizer_find(const as_tokenizer *t, const char *piece);

/* The pre-tokenizer lines of `--info`'s model card for a GGUF file, from
 * its keys alone (no vocabulary is built): which split, BOS/EOS added,
 * and what happens to an unknown or missing tokenizer.ggml.pre. Writes
 * nothing for a file without tokenizer.ggml.model. */
void as_tokenizer_print_card(const as_gguf *g, FILE *out);

#endif
