/* Internal to the tokenizer: what tokenizer.c (special tokens, encode,
 * decode, the public API), tok_vocab.c (building the vocabulary),
 * tok_gguf.c (GGUF reading, the model card) and tok_common.c (what all
 * share) share with the algorithm files (tok_bpe.c, tok_spm.c, tok_wpm.c,
 * tok_ugm.c, tok_none.c), the pre-tokenizers (tok_pre.c) and their regex
 * engine (tok_regex.c). Not part of the public API. The layers:
 * tok_common.c <- the algorithms, pre-tokenizers, regex, NFC <- tok_vocab.c
 * <- tok_gguf.c; tokenizer.c above tok_common.c and tok_nfc.c.
 *
 * An algorithm file exports one as_tok_algo descriptor, listed in the
 * table in tok_vocab.c under its tokenizer.ggml.model name. */
#ifndef ATTNSCOPE_TOKENIZER_INTERNAL_H
#define ATTNSCOPE_TOKENIZER_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "attnscope/tokenizer.h"

/* GGUF token types. */
enum { TT_NORMAL = 1, TT_UNKNOWN = 2, TT_CONTROL = 3, TT_USER = 4, TT_UNUSED = 5, TT_BYTE = 6 };

typedef struct strmap {
    uint32_t *slot; /* id + 1; 0 = empty */
    size_t mask;
} strmap;

typedef struct mergemap {
    uint64_t *key; /* (left + 1) << 32 | (right + 1); 0 = empty */
    int32_t *rank;
    int32_t *result;
    size_t mask;
} mergemap;

typedef struct as_tok_algo as_tok_algo;
typedef struct as_tok_regex as_tok_regex;
typedef struct as_tok_ugm_data as_tok_ugm_data; /* tok_ugm.c */

/* A pre-tokenizer: one of llama.cpp's LLAMA_VOCAB_PRE_TYPE_s (tok_pre.c). */
#define AS_TOK_PRE_NAMES 16
typedef struct as_tok_pre {
    const char *type;                      /* llama.cpp's type, lower case ("llama3") */
    const char *names[AS_TOK_PRE_NAMES];   /* the tokenizer.ggml.pre values that choose it */
    const char *const *regex;              /* llama.cpp's patterns, NULL-terminated */
    bool ignore_merges;                    /* a pre-token that is a token is not merged */
    bool add_bos;                          /* llama.cpp's add_bos default for it */
} as_tok_pre;

typedef struct as_tok_rx { /* one pattern of the pre-tokenizer, compiled */
    as_tok_regex *re;      /* NULL: a hand-written splitter runs instead */
    bool collapsed;        /* over collapsed text (else over code points) */
} as_tok_rx;

/* Per-token flags: llama.cpp's lstrip/rstrip attributes (whitespace next
 * to a special token is dropped from the text around it). */
enum { STRIP_LEFT = 1, STRIP_RIGHT = 2 };

struct as_tokenizer {
    const as_tok_algo *algo;
    size_t n;
    char *arena;     /* token texts, each followed by a NUL */
    size_t *off;     /* token i's text starts at arena + off[i] */
    uint32_t *len;
    float *score;
    uint8_t *type;   /* TT_*; unknown values were read as TT_NORMAL */
    strmap all, plain;
    size_t max_plain_len;
    /* Bit (x << 8 | y) is set when bytes x, y stand side by side in some
     * plain token. Where a symbol boundary's pair is not set, no merge can
     * ever cross it, so llama text is merged in independent runs: the same
     * result as one pass, with short heaps instead of one as long as the
     * text. bert: the pairs of every token, so that no piece is looked for
     * across a pair no token holds (tok_wpm.c). */
    uint64_t pair_seen[1024];
    int32_t bos, eos, unk;
    bool add_bos, add_eos, add_space_prefix, ignore_merges;
    bool nfc; /* raw fragments put in NFC first (tokenizer.attnscope.nfc) */
    /* the pair template: n_pair items, each a token id or -1 ($A) / -2
     * ($B), with its type id (none: BERT's) */
    int32_t *pair_item, *pair_type;
    size_t n_pair;
    /* bert: [SEP] (appended with [CLS] in front when special tokens are
     * added), [PAD], [MASK] (-1 when absent); the normalizer's switches;
     * the distinct lengths of the non-empty tokens, longest first (the
     * only lengths a greedy longest match needs to try). */
    int32_t sep, pad, mask;
    bool add_sep, lowercase, strip_accents;
    /* bert: the tokenizers library's normalisation steps (WPM_* in
     * tok_wpm.c, tokenizer.attnscope.normalizer), in order; none:
     * llama.cpp's (lowercase, strip_accents above). max_word_chars: a
     * longer word is [UNK] (0: no limit). */
    uint8_t norm_step[8];
    size_t n_norm_step;
    bool lib_norm;
    uint32_t max_word_chars;
    uint32_t *lens_desc;
    size_t n_lens;
    /* gpt2: the token of each byte's alphabet character; llama: the byte
     * fallback token (<0xNN>, else a one-byte token); -1 if none. */
    int32_t byte_tok[256];
    mergemap merges; /* gpt2 only (tok_bpe.c builds it) */
    /* Tokens cut out of the text before the algorithm sees it, longest
     * first (llama.cpp's cache_special_tokens): user-defined ones always,
     * control and unknown ones when special tokens are parsed. */
    int32_t *special;
    size_t n_special;
    uint8_t *strip;  /* STRIP_* per token; NULL: none */
    const as_tok_pre *pre; /* gpt2: the pre-tokenizer */
    as_tok_rx *rx;   /* its patterns, compiled */
    size_t n_rx;
    as_tok_ugm_data *ugm; /* t5: the tries and the charsmap (tok_ugm.c) */
    char pre_name[64];   /* tokenizer.ggml.pre as the file gives it ("" if absent) */
    char warning[256];   /* what the user should know before trusting the ids; "" */
};

/* ---------------------------------------------------------------- encode scratch */

#define DEFINE_RESERVE(name, T)                                              \
    static bool name(T **arr, size_t *cap, size_t need)                      \
    {                                                                        \
        if (need <= *cap)                                                    \
            return true;                                                     \
        size_t c = *cap ? *cap : 16;                                         \
        while (c < need) {                                                   \
            if (c > SIZE_MAX / 2 / sizeof(T))                                \
                return false;                                                \
            c *= 2;                                                          \
        }                                                                    \
        T *p = realloc(*arr, c * sizeof(T));                                 \
        if (!p)                                                              \
            return false;                                                    \
        *arr = p;                                                            \
        *cap = c;                                                            \
        return true;                                                         \
    }

typedef struct hent { /* a candidate merge; smaller key first, then leftmost */
    double key;       /* gpt2: rank; llama: -score */
    int32_t left, right;
    int32_t a, b, c;  /* gpt2: left id, right id, result id; llama: a = merged size */
} hent;

typedef struct frag { /* a special token (id >= 0) or raw text (id -1) */
    size_t off, len;
    int32_t id;
} frag;

/* A code point of the text being pre-tokenized (tok_pre.c). */
typedef struct as_tok_cp {
    uint32_t cp, off; /* code point (past U+10FFFF: an invalid byte), byte offset */
    uint8_t cls;      /* AS_UC_* (unicode_tables.h) */
    bool ws;          /* White_Space */
} as_tok_cp;

typedef struct as_tok_rxframe { /* an alternative the regex engine may come back to */
    int32_t pc;
    size_t pos;
} as_tok_rxframe;

typedef struct as_tok_rxstack {
    as_tok_rxframe *f;
    size_t n, cap;
} as_tok_rxstack;

/* One call's scratch. The symbol arrays are each algorithm's own (their
 * types are defined in its file); they live here so one call frees all. */
typedef struct work {
    hent *heap;
    size_t nheap, capheap;
    struct bsym *bs;    /* tok_bpe.c */
    size_t capbs;
    struct ssym *ss;    /* tok_spm.c */
    size_t capss;
    as_tok_cp *cps;     /* tok_pre.c: the fragment's code points */
    size_t capcps;
    size_t *pieces, *pieces2; /* tok_pre.c: pre-token ends, as code point indices */
    size_t npieces, cappieces, npieces2, cappieces2;
    uint32_t *sym_c, *sym_w;  /* tok_pre.c: collapsed / wide symbols */
    size_t capsym_c, capsym_w;
    as_tok_rxstack rxs;       /* tok_regex.c */
    char *esc;          /* tok_spm.c; tok_bpe.c: a pre-token in the byte alphabet */
    size_t capesc;
    frag *fr, *fr2;
    size_t nfr, capfr, capfr2;
    int32_t *ids;     /* the output */
    size_t nids, capids;
    bool ends_only;   /* as_tokenizer_pretokens: record piece ends instead */
    size_t *ends;
    size_t nends, capends;
    bool prev_special; /* the fragment before this one was a special token */
    uint64_t *hash;    /* tok_wpm.c: the hashes of a word's prefixes */
    size_t caphash;
} work;

/* ---------------------------------------------------------------- algorithms */

struct as_tok_algo {
    const char *gguf_model;  /* tokenizer.ggml.model */
    as_tok_kind kind;
    /* llama.cpp's defaults when the file does not say */
    int32_t bos, eos, unk;   /* -1: none */
    bool add_bos;
    bool add_eos;
    bool space_prefix;       /* add_space_prefix applies (on by default) */
    bool needs_merges;       /* tokenizer.ggml.merges must be present */
    /* Byte tokens are <0xNN> stand-ins for bytes no piece covers: plain
     * text never spells them, and an untyped <0xNN> is taken for one. */
    bool byte_fallback;
    const char *byte_token_name; /* what stands for a byte, for errors */
    /* What the algorithm builds beyond the vocabulary; NULL: nothing. */
    int (*build)(as_tokenizer *t, const as_tokenizer_spec *sp, as_error *err);
    /* The token byte b falls back to, or -1 (fills t->byte_tok). */
    int32_t (*byte_token)(const as_tokenizer *t, uint8_t b);
    /* Encodes one raw-text fragment s[0, n), which starts at byte base of
     * the text: pushes its ids, or when w->ends_only the end offsets (in
     * the whole text) of the pieces it merges independently. */
    int (*encode)(const as_tokenizer *t, const char *s, size_t n, size_t base, work *w,
                  as_error *err);
    /* A normal token's text -> its bytes in dst (never more than n). */
    size_t (*decode)(const char *s, size_t n, char *dst);
    /* Decode drops the space a word-start piece begins with at the start
     * of the text and after a control token (as for add_space_prefix). */
    bool word_space;
    /* What decode does last to the whole text (it only ever shortens it):
     * NULL, or llama.cpp's clean_spaces. Returns the new length. */
    size_t (*tidy)(char *s, size_t n);
};

extern const as_tok_algo as_tok_bpe;  /* "gpt2": tok_bpe.c */
extern const as_tok_algo as_tok_spm;  /* "llama": tok_spm.c */
extern const as_tok_algo as_tok_none; /* "none": tok_none.c */
extern const as_tok_algo as_tok_wpm;  /* "bert": tok_wpm.c */
extern const as_tok_algo as_tok_ugm;  /* "t5": tok_ugm.c */
void as_tok_ugm_free(as_tok_ugm_data *u);

/* '▁' (U+2581) -> ' ' in s[0, n), into dst; returns the length (tok_spm.c). */
size_t as_tok_unescape_spaces(const char *s, size_t n, char *dst);

/* ---------------------------------------------------------------- pre-tokenizers (tok_pre.c) */

/* The pre-tokenizer tokenizer.ggml.pre value name chooses; NULL if none. */
const as_tok_pre *as_tok_pre_find(const char *name);
/* By llama.cpp's type name ("gpt2", "default"); NULL if none. */
const as_tok_pre *as_tok_pre_type(const char *type);
/* Compiles t->pre's patterns into t->rx; as_tok_pre_free frees them. */
int as_tok_pre_compile(as_tokenizer *t, as_error *err);
void as_tok_pre_free(as_tokenizer *t);
/* The class (AS_UC_*) and White_Space of any code point (past U+10FFFF:
 * U+FFFD's class, not a space). */
unsigned as_tok_uni_class(uint32_t cp);
bool as_tok_uni_space(uint32_t cp);
/* Whether cp falls in one of n sorted {first, last} ranges. */
bool as_tok_in_ranges(const uint32_t (*r)[2], size_t n, uint32_t cp);
/* s[0, n) -> w->cps[0, *m), with w->cps[*m].off == n; a byte that does
 * not start well-formed UTF-8 is one code point past U+10FFFF. */
int as_tok_decode_cps(const char *s, size_t n, work *w, size_t *m, as_error *err);
/* Splits w->cps[0, m) into pre-tokens: their ends in w->pieces. */
int as_tok_pre_split(const as_tokenizer *t, work *w, size_t m, as_error *err);

/* ---------------------------------------------------------------- the regex engine (tok_regex.c) */

/* Compiles pattern[0, len): over code points read as UTF-8 when wide
 * (std::wregex), else one symbol per byte (std::regex). NULL and err set
 * if it is not in the supported subset. */
as_tok_regex *as_tok_regex_compile(const char *pattern, size_t len, bool wide, as_error *err);
void as_tok_regex_free(as_tok_regex *re);
/* The leftmost match in sym[from, end), as std::regex_search over that
 * span: 1 and [*ms, *me), 0 if none, -1 when out of memory. */
int as_tok_regex_search(const as_tok_regex *re, const uint32_t *sym, size_t from, size_t end, size_t *ms,
                        size_t *me, as_tok_rxstack *st);

/* ---------------------------------------------------------------- the table of algorithms (tok_vocab.c) */

/* By tokenizer.ggml.model ("no_vocab" is "none"); NULL if none. */
const as_tok_algo *as_tok_algo_named(const char *gguf_model);
/* "'gpt2' or 'llama'": the names the table knows, for the error. */
void as_tok_algo_names(char *buf, size_t cap);

/* ---------------------------------------------------------------- shared helpers (tok_common.c) */

int as_tok_oom(as_error *err);
/* tok_nfc.c: s[0, n) in NFC, malloc'd (as_tokenizer_nfc). */
int as_tok_nfc(const char *s, size_t n, char **out, size_t *out_n, as_error *err);
/* tok_nfc.c: cp's full canonical decomposition (Hangul by formula) in
 * out, its length (1: cp itself); a code point's canonical combining
 * class. */
size_t as_tok_nfd_cp(uint32_t cp, uint32_t out[4]);
int as_tok_ccc(uint32_t cp);
/* Length of the well-formed UTF-8 character at s, or 0 if the byte at s
 * does not start one. */
size_t as_tok_utf8_char(const uint8_t *s, size_t n, uint32_t *cp);
/* "<0xNN>" (either case of hex digit) -> the byte. */
bool as_tok_parse_byte_token(const char *s, size_t n, uint8_t *b);
size_t as_tok_table_cap(size_t n);
/* A table for n tokens (false: out of memory); token id put in it, the
 * first id of a duplicated text kept; whether token id's text is s[0, n). */
bool as_tok_strmap_init(strmap *m, size_t n);
void as_tok_strmap_put(const as_tokenizer *t, strmap *m, int32_t id);
bool as_tok_same_text(const as_tokenizer *t, int32_t id, const char *s, size_t n);
/* The id of the token in map m whose text is s[0, n), or -1. */
int32_t as_tok_lookup(const as_tokenizer *t, const strmap *m, const char *s, size_t n);
/* The same, given the text's hash: the state as_tok_hash_step leaves
 * after its last byte (starting from AS_TOK_HASH_START), h ^ (h >> 31). */
int32_t as_tok_lookup_hashed(const as_tokenizer *t, const strmap *m, const char *s, size_t n, uint64_t h);
#define AS_TOK_HASH_START 1469598103934665603ull
uint64_t as_tok_hash_step(uint64_t state, uint8_t byte);

bool as_tok_heap_push(work *w, hent e);
hent as_tok_heap_pop(work *w);
int as_tok_push_id(work *w, int32_t id, as_error *err);
int as_tok_push_end(work *w, size_t end, as_error *err);
/* A byte no symbol covers: its byte token, else unk, else an error. */
int as_tok_push_byte(const as_tokenizer *t, uint8_t b, work *w, as_error *err);

#endif
