/* Tests for the WordPiece ("bert") tokenizer on a small hand-made
 * vocabulary stored as llama.cpp's converter stores BERT's (a word-start
 * piece "▁the", a continuation "##aff" as "aff", control tokens as they
 * are). Every expected id list is worked out by hand in the comments from
 * BERT's rules: normalize (NFD's first code point, marks dropped, lower
 * case), split at whitespace, punctuation, ASCII symbols and CJK, then the
 * longest piece first from each word's start, [UNK] for the whole word
 * when some position has none. llama.cpp's own ids on its bert-bge
 * vocabulary are compared in test_tok_llama.c. */
#include <criterion/criterion.h>

#include <stdlib.h>
#include <string.h>

#include "attnscope/gguf.h"
#include "attnscope/tokenizer.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))
#define END (-99)

enum { PAD, UNK, CLS, SEP, MASK, THE, CAT, UN, AFF, ABLE, COMMA, DOT, CAFE, A, A_CONT, B, ZHONG, BANG, QUOTE, S_CONT, CA };

/* The vocabulary, by the ids above; 3 = control, 1 = normal. */
static const char *const TOKENS[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "▁the", "▁cat", "▁un", "aff", "able", "▁,", "▁.",
    "▁cafe", "▁a", "a", "▁b", "▁中", "▁!", "▁'", "s", "▁ca",
};
static const int32_t TYPES[] = {3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

static as_tokenizer *make_spec(as_tokenizer_spec sp)
{
    as_tokenizer *t = NULL;
    as_error err = {{0}};
    cr_assert_eq(as_tokenizer_new(&t, &sp, &err), AS_OK, "%s", err.msg);
    return t;
}

static as_tokenizer_spec base_spec(void)
{
    return (as_tokenizer_spec){
        .kind = AS_TOK_BERT, .tokens = TOKENS, .n_tokens = N_OF(TOKENS), .token_types = TYPES,
        .bos_id = CLS, .eos_id = -1, .unk_id = UNK, .sep_id = SEP, .pad_id = PAD, .mask_id = MASK,
    };
}

static as_tokenizer *make(void)
{
    return make_spec(base_spec());
}

/* text (len bytes) with flags gives the ids up to END. */
static void expect_n(const as_tokenizer *t, const char *text, size_t len, unsigned flags, const int32_t *want)
{
    int32_t *ids = NULL;
    size_t n = 0, nw = 0;
    as_error err = {{0}};
    cr_assert_eq(as_tokenizer_tokenize(t, text, len, flags, &ids, &n, &err), AS_OK, "'%s': %s", text, err.msg);
    while (want[nw] != END)
        nw++;
    cr_assert_eq(n, nw, "'%s': %zu ids, expected %zu", text, n, nw);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(ids[i], want[i], "'%s': id %zu is %d, expected %d", text, i, ids[i], want[i]);
    free(ids);
}

#define EXPECT(t, text, flags, ...)                                                                          \
    do {                                                                                                     \
        const int32_t want_[] = {__VA_ARGS__, END};                                                          \
        expect_n(t, text, strlen(text), flags, want_);                                                       \
    } while (0)

static void expect_decode(const as_tokenizer *t, const int32_t *ids, size_t n, const char *want)
{
    char *out = NULL;
    size_t len = 0;
    as_error err = {{0}};
    cr_assert_eq(as_tokenizer_decode(t, ids, n, &out, &len, &err), AS_OK, "%s", err.msg);
    cr_assert_str_eq(out, want);
    cr_assert_eq(len, strlen(want));
    free(out);
}

/* ------------------------------------------------------------------ */
/* words and pieces */

Test(tok_wpm, words_and_continuations)
{
    as_tokenizer *t = make();
    cr_assert_eq(as_tokenizer_kind(t), AS_TOK_BERT);
    EXPECT(t, "the cat", 0, THE, CAT);
    /* "▁unaffable": "▁un" is the longest prefix, then "aff", then "able" */
    EXPECT(t, "unaffable", 0, UN, AFF, ABLE);
    /* "▁aa": "▁a" then the continuation "a" */
    EXPECT(t, "aa", 0, A, A_CONT);
    /* whitespace of every kind separates words and is not a token; U+00A0
     * and U+3000 are White_Space too */
    EXPECT(t, "  the\t\n cat\r\n", 0, THE, CAT);
    EXPECT(t, "the\xC2\xA0" "cat\xE3\x80\x80the", 0, THE, CAT, THE);
    as_tokenizer_free(t);
}

Test(tok_wpm, unknown_words)
{
    as_tokenizer *t = make();
    /* "▁dog": no piece starts it */
    EXPECT(t, "the dog", 0, THE, UNK);
    /* "▁unaffablex": ▁un aff able, then "x" has no piece: the whole word is
     * [UNK], the pieces found before are taken back */
    EXPECT(t, "unaffablex cat", 0, UNK, CAT);
    /* greedy, never backtracking: "▁catalog" takes "▁cat" (longer than
     * "▁ca"), then "a", then nothing starts "log": [UNK] */
    EXPECT(t, "catalog", 0, UNK);
    /* "▁cab": "▁ca" then "b" -- no continuation "b" ("▁b" starts words only) */
    EXPECT(t, "cab", 0, UNK);
    as_tokenizer_free(t);
}

Test(tok_wpm, punctuation_and_cjk_split)
{
    as_tokenizer *t = make();
    /* punctuation is a word of its own, glued or not */
    EXPECT(t, "cat,the", 0, CAT, COMMA, THE);
    EXPECT(t, "the cat.", 0, THE, CAT, DOT);
    EXPECT(t, "!!", 0, BANG, BANG);
    /* "'" is punctuation: "cat's" is cat ' s, and "▁s" is not a piece */
    EXPECT(t, "cat's", 0, CAT, QUOTE, UNK);
    /* an ASCII symbol ("$", \p{S} below U+7F) splits too; "▁$" is no piece */
    EXPECT(t, "cat$the", 0, CAT, UNK, THE);
    /* a CJK ideograph is a word of its own */
    EXPECT(t, "a中b", 0, A, ZHONG, B);
    as_tokenizer_free(t);
}

Test(tok_wpm, case_and_accents)
{
    as_tokenizer *t = make();
    EXPECT(t, "The CAT", 0, THE, CAT);
    /* é (U+00E9) -> e (NFD's first code point); É -> E -> e */
    EXPECT(t, "Café CAFÉ", 0, CAFE, CAFE);
    /* a combining acute (U+0301, a mark) is dropped */
    EXPECT(t, "cafe\xCC\x81", 0, CAFE);
    /* "ÀA" -> "aa" */
    EXPECT(t, "\xC3\x80" "A", 0, A, A_CONT);
    as_tokenizer_free(t);

    /* the normalizer's switches: case kept, accents kept */
    as_tokenizer_spec sp = base_spec();
    sp.keep_case = true;
    t = make_spec(sp);
    EXPECT(t, "The the", 0, UNK, THE); /* "▁The" is no piece */
    EXPECT(t, "café", 0, CAFE);         /* accents still stripped */
    as_tokenizer_free(t);
    sp = base_spec();
    sp.keep_accents = true;
    t = make_spec(sp);
    EXPECT(t, "CAFE café cafe\xCC\x81", 0, CAFE, UNK, UNK); /* lower-cased, accents kept */
    as_tokenizer_free(t);
}

Test(tok_wpm, dropped_characters)
{
    as_tokenizer *t = make();
    /* control (U+0001) and format (U+200D ZWJ) characters vanish inside a word */
    EXPECT(t, "th\x01" "e ca\xE2\x80\x8Dt", 0, THE, CAT);
    /* so do NUL and U+FFFD */
    expect_n(t, "c\0at", 4, 0, (const int32_t[]){CAT, END});
    EXPECT(t, "ca\xEF\xBF\xBDt", 0, CAT);
    /* bytes that are not UTF-8 are dropped (llama.cpp reads each as U+FFFD
     * and drops that): a lone continuation, FF, a truncated sequence, a
     * surrogate, an overlong '/' */
    EXPECT(t, "ca\xFFt \x80the\xE2\x82", 0, CAT, THE);
    EXPECT(t, "c\xED\xA0\x80" "at\xC0\xAF", 0, CAT);
    /* nothing but dropped characters and spaces: no ids */
    expect_n(t, "\x80 \x01 \xFF", 5, 0, (const int32_t[]){END});
    as_tokenizer_free(t);
}

/* ------------------------------------------------------------------ */
/* special tokens */

Test(tok_wpm, special_tokens)
{
    as_tokenizer *t = make();
    cr_assert_eq(as_tokenizer_bos(t), CLS);
    cr_assert_eq(as_tokenizer_sep(t), SEP);
    cr_assert_eq(as_tokenizer_mask(t), MASK);
    cr_assert_eq(as_tokenizer_pad(t), PAD);
    cr_assert(as_tokenizer_add_bos(t));
    /* [CLS] ... [SEP] around the text when special tokens are added */
    EXPECT(t, "the cat", AS_TOK_ADD_SPECIAL, CLS, THE, CAT, SEP);
    expect_n(t, "", 0, AS_TOK_ADD_SPECIAL, (const int32_t[]){CLS, SEP, END});
    expect_n(t, "", 0, 0, (const int32_t[]){END});
    /* [MASK] typed in the prompt is the mask token when parsed */
    EXPECT(t, "the [MASK] cat", AS_TOK_PARSE_SPECIAL, THE, MASK, CAT);
    EXPECT(t, "the[MASK]cat", AS_TOK_PARSE_SPECIAL | AS_TOK_ADD_SPECIAL, CLS, THE, MASK, CAT, SEP);
    /* not parsed: "[", "mask", "]" are words, none a piece */
    EXPECT(t, "the [MASK]", 0, THE, UNK, UNK, UNK);
    /* the text must match exactly: "[mask]" is plain text */
    EXPECT(t, "[mask]", AS_TOK_PARSE_SPECIAL, UNK, UNK, UNK);
    /* a second segment as a pair is written: [CLS] A [SEP] B [SEP] */
    EXPECT(t, "the [SEP] cat", AS_TOK_PARSE_SPECIAL | AS_TOK_ADD_SPECIAL, CLS, THE, SEP, CAT, SEP);
    as_tokenizer_free(t);
}

Test(tok_wpm, without_unknown_token)
{
    as_tokenizer_spec sp = base_spec();
    sp.unk_id = -1;
    as_tokenizer *t = make_spec(sp);
    int32_t *ids = NULL;
    size_t n = 0;
    as_error err = {{0}};
    /* a word without pieces cannot be encoded: one message saying where */
    cr_assert_eq(as_tokenizer_tokenize(t, "the dog", 7, 0, &ids, &n, &err), AS_ERR);
    cr_assert(strstr(err.msg, "'dog' (byte 4"), "%s", err.msg);
    cr_assert(strstr(err.msg, "[UNK]"), "%s", err.msg);
    cr_assert_null(ids);
    EXPECT(t, "the cat", 0, THE, CAT);
    as_tokenizer_free(t);
}

Test(tok_wpm, special_ids_checked)
{
    as_tokenizer_spec sp = base_spec();
    sp.sep_id = (int32_t)N_OF(TOKENS);
    as_tokenizer *t = NULL;
    as_error err = {{0}};
    cr_assert_eq(as_tokenizer_new(&t, &sp, &err), AS_ERR);
    cr_assert(strstr(err.msg, "sep_id"), "%s", err.msg);
    cr_assert_null(t);
}

/* Without token types, [SEP], [PAD] and [MASK] are control tokens still:
 * parsed from the text only when asked, and decoded to nothing. */
Test(tok_wpm, untyped_specials_are_control)
{
    as_tokenizer_spec sp = base_spec();
    sp.token_types = NULL;
    as_tokenizer *t = make_spec(sp);
    EXPECT(t, "[MASK]", 0, UNK, UNK, UNK);
    EXPECT(t, "[MASK]", AS_TOK_PARSE_SPECIAL, MASK);
    const int32_t ids[] = {CLS, MASK, SEP, PAD};
    expect_decode(t, ids, N_OF(ids), "");
    as_tokenizer_free(t);
}

/* ------------------------------------------------------------------ */
/* decoding and pieces */

Test(tok_wpm, decode)
{
    as_tokenizer *t = make();
    /* " the" " cat" " ," " the" " .": the first word's space goes, and
     * llama.cpp's tidying joins " ," and " ." to the word before */
    const int32_t a[] = {CLS, THE, CAT, COMMA, THE, DOT, SEP};
    expect_decode(t, a, N_OF(a), "the cat, the.");
    /* continuations join their word */
    const int32_t b[] = {UN, AFF, ABLE, CAT};
    expect_decode(t, b, N_OF(b), "unaffable cat");
    /* " '" + "s": "the 's" tidied to "the's" as llama.cpp does */
    const int32_t c[] = {THE, QUOTE, S_CONT};
    expect_decode(t, c, N_OF(c), "the's");
    /* [UNK] decodes to nothing, like the other control tokens */
    const int32_t d[] = {THE, UNK, CAT};
    expect_decode(t, d, N_OF(d), "the cat");
    /* and a word after a control token keeps its space: only the text's
     * first word loses it */
    const int32_t e[] = {CLS, THE, MASK, CAT, SEP, THE, SEP};
    expect_decode(t, e, N_OF(e), "the cat the");
    expect_decode(t, NULL, 0, "");
    as_tokenizer_free(t);
}

Test(tok_wpm, pieces_show_their_space)
{
    as_tokenizer *t = make();
    char buf[32];
    cr_assert_eq(as_tokenizer_token_bytes(t, THE, buf, sizeof buf), 4);
    cr_assert_str_eq(buf, " the");
    cr_assert_eq(as_tokenizer_token_bytes(t, AFF, buf, sizeof buf), 3);
    cr_assert_str_eq(buf, "aff");
    cr_assert_eq(as_tokenizer_token_bytes(t, MASK, buf, sizeof buf), 0);
    cr_assert_str_eq(as_tokenizer_piece(t, MASK), "[MASK]");
    cr_assert_str_eq(as_tokenizer_piece(t, THE), "▁the");
    cr_assert_eq(as_tokenizer_find(t, "aff"), AFF);
    as_tokenizer_free(t);
}

Test(tok_wpm, pretokens_are_words)
{
    as_tokenizer *t = make();
    size_t *ends = NULL, n = 0;
    as_error err = {{0}};
    /* words "the" (0), "cat" (4), "," (7): each piece runs to the next
     * word's start, the last to the end */
    const char *text = "the cat, ";
    cr_assert_eq(as_tokenizer_pretokens(t, text, strlen(text), &ends, &n, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(n, 3);
    cr_assert_eq(ends[0], 4);
    cr_assert_eq(ends[1], 7);
    cr_assert_eq(ends[2], 9);
    free(ends);
    cr_assert_eq(as_tokenizer_pretokens(t, "  ", 2, &ends, &n, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(n, 1);
    cr_assert_eq(ends[0], 2);
    free(ends);
    as_tokenizer_free(t);
}

/* ------------------------------------------------------------------ */
/* from GGUF keys */

typedef struct gguf_mem {
    uint8_t *buf;
    size_t size;
    as_gguf *g;
} gguf_mem;

/* The vocabulary padded to n tokens with "▁wN" fillers. */
static as_gguf_writer *writer(size_t n, char ***owned)
{
    char **tok = calloc(n, sizeof *tok);
    int32_t *type = calloc(n, sizeof *type);
    for (size_t i = 0; i < n; i++) {
        if (i < N_OF(TOKENS)) {
            tok[i] = strdup(TOKENS[i]);
            type[i] = TYPES[i];
        } else {
            tok[i] = malloc(32); /* "▁" is 3 bytes, then any size_t */
            snprintf(tok[i], 32, "▁w%zu", i);
            type[i] = 1;
        }
    }
    as_gguf_writer *w = as_gguf_writer_new(3);
    as_gguf_writer_set_str(w, "general.architecture", "bert");
    as_gguf_writer_set_str(w, "tokenizer.ggml.model", "bert");
    as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)tok, n);
    as_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", AS_GGUF_INT32, type, n);
    free(type);
    *owned = tok;
    return w;
}

static void free_tokens(char **tok, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(tok[i]);
    free(tok);
}

static as_tokenizer *load(as_gguf_writer *w, gguf_mem *m)
{
    as_error err = {{0}};
    as_tokenizer *t = NULL;
    cr_assert_eq(as_gguf_writer_to_memory(w, &m->buf, &m->size, &err), AS_OK, "%s", err.msg);
    as_gguf_writer_free(w);
    cr_assert_eq(as_gguf_parse(&m->g, m->buf, m->size, "mem.gguf", &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_tokenizer_from_gguf(&t, m->g, &err), AS_OK, "%s", err.msg);
    return t;
}

static void unload(gguf_mem *m, as_tokenizer *t)
{
    as_tokenizer_free(t);
    as_gguf_close(m->g);
    free(m->buf);
}

/* The ids from the keys, as llama.cpp reads them (GGUF's spelling
 * "seperator" included). */
Test(tok_wpm, gguf_keys)
{
    char **tok;
    size_t n = N_OF(TOKENS);
    as_gguf_writer *w = writer(n, &tok);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", CLS);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.seperator_token_id", SEP);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", UNK);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", PAD);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.mask_token_id", MASK);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.cls_token_id", CLS);
    /* what llama.cpp's WPM ignores: it adds [CLS] and [SEP], never an EOS */
    as_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", SEP);
    as_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", false);
    as_gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", true);
    gguf_mem m = {0};
    as_tokenizer *t = load(w, &m);
    cr_assert_eq(as_tokenizer_kind(t), AS_TOK_BERT);
    cr_assert(as_tokenizer_add_bos(t));
    cr_assert(!as_tokenizer_add_eos(t));
    cr_assert_eq(as_tokenizer_mask(t), MASK);
    cr_assert_str_eq(as_tokenizer_warning(t), "");
    EXPECT(t, "The [MASK] Café", AS_TOK_ADD_SPECIAL | AS_TOK_PARSE_SPECIAL, CLS, THE, MASK, CAFE, SEP);
    unload(&m, t);
    free_tokens(tok, n);
}

/* Without keys: llama.cpp's defaults, BERT's ids ([CLS] 101, [SEP] 102,
 * [UNK] 100, [MASK] 103, [PAD] 0); each dropped when past the vocabulary. */
Test(tok_wpm, gguf_defaults)
{
    char **tok;
    size_t n = 110;
    as_gguf_writer *w = writer(n, &tok);
    gguf_mem m = {0};
    as_tokenizer *t = load(w, &m);
    cr_assert_eq(as_tokenizer_bos(t), 101);
    cr_assert_eq(as_tokenizer_sep(t), 102);
    cr_assert_eq(as_tokenizer_mask(t), 103);
    cr_assert_eq(as_tokenizer_pad(t), 0);
    EXPECT(t, "dog the", AS_TOK_ADD_SPECIAL, 101, 100, THE, 102);
    unload(&m, t);
    free_tokens(tok, n);

    n = N_OF(TOKENS); /* 21 tokens: only [PAD] 0 is inside */
    w = writer(n, &tok);
    t = load(w, &m);
    cr_assert_eq(as_tokenizer_bos(t), -1);
    cr_assert_eq(as_tokenizer_sep(t), -1);
    cr_assert_eq(as_tokenizer_mask(t), -1);
    cr_assert_eq(as_tokenizer_pad(t), 0);
    EXPECT(t, "the cat", AS_TOK_ADD_SPECIAL, THE, CAT);
    unload(&m, t);
    free_tokens(tok, n);
}

/* tokenizer.ggml.normalizer.*: lowercase off turns accent stripping off
 * too unless strip_accents says otherwise (llama.cpp's rule). */
Test(tok_wpm, gguf_normalizer)
{
    char **tok;
    size_t n = N_OF(TOKENS);
    as_gguf_writer *w = writer(n, &tok);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", UNK);
    as_gguf_writer_set_bool(w, "tokenizer.ggml.normalizer.lowercase", false);
    gguf_mem m = {0};
    as_tokenizer *t = load(w, &m);
    EXPECT(t, "The cafe café", 0, UNK, CAFE, UNK);
    unload(&m, t);
    free_tokens(tok, n);

    w = writer(n, &tok);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", UNK);
    as_gguf_writer_set_bool(w, "tokenizer.ggml.normalizer.lowercase", false);
    as_gguf_writer_set_bool(w, "tokenizer.ggml.normalizer.strip_accents", true);
    t = load(w, &m);
    EXPECT(t, "The cafe café", 0, UNK, CAFE, CAFE);
    unload(&m, t);
    free_tokens(tok, n);
}

/* cls_token_id is not what llama.cpp reads: a file where it differs from
 * the [CLS] in use says so. */
Test(tok_wpm, gguf_cls_key_warns)
{
    char **tok;
    size_t n = N_OF(TOKENS);
    as_gguf_writer *w = writer(n, &tok);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.cls_token_id", CLS);
    gguf_mem m = {0};
    as_tokenizer *t = load(w, &m);
    cr_assert(strstr(as_tokenizer_warning(t), "cls_token_id is 2"), "%s", as_tokenizer_warning(t));
    cr_assert(strstr(as_tokenizer_warning(t), "no [CLS]"), "%s", as_tokenizer_warning(t));
    unload(&m, t);
    free_tokens(tok, n);
}

Test(tok_wpm, gguf_card)
{
    char **tok;
    size_t n = 110;
    as_gguf_writer *w = writer(n, &tok);
    gguf_mem m = {0};
    as_tokenizer *t = load(w, &m);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    as_tokenizer_print_card(m.g, f);
    fclose(f);
    cr_assert(strstr(text, "lower-cased, accents stripped"), "%s", text);
    cr_assert(strstr(text, "(101) in front"), "%s", text);
    cr_assert(strstr(text, "(102) at the end"), "%s", text);
    free(text);
    unload(&m, t);
    free_tokens(tok, n);
}

/* ------------------------------------------------------------------ */
/* the tokenizers library's normalisation (tokenizer.attnscope.normalizer,
 * a Hugging Face directory's): every expected list worked out by hand from
 * the library's rules (tokenizers/src/normalizers/bert.rs): clean_text,
 * spaces around CJK, NFD then Mn dropped, Rust's char::to_lowercase. */

enum { L_PAD, L_UNK, L_CLS, L_SEP, L_MASK, L_HIEUH, L_A, L_N, L_G, L_U, L_K, L_IEUNG, L_EO, L_CAFE, L_CAFE_ACC,
       L_CAFE_UP, L_I, L_I_DOT, L_A_MARKS, L_ZHONG, L_AA, L_B, L_CAT, L_HAN };

static const char *const LIB_TOKENS[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",
    /* 한 = ᄒ ᅡ ᆫ, 국 = ᄀ ᅮ ᆨ, 어 = ᄋ ᅥ (Hangul syllables by the Unicode formula) */
    "▁\u1112", "\u1161", "\u11AB", "\u1100", "\u116E", "\u11A8", "\u110B", "\u1165",
    "▁cafe", "▁caf\u00E9", "▁Caf\u00E9", "▁i", "▁i\u0307", "▁a\u0323\u0302", "▁中", "▁a", "▁b", "▁cat", "▁한",
};
static const int32_t LIB_TYPES[] = {3, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

static as_tokenizer *make_lib(const char *normalizer, uint32_t max_chars)
{
    return make_spec((as_tokenizer_spec){
        .kind = AS_TOK_BERT, .tokens = LIB_TOKENS, .n_tokens = N_OF(LIB_TOKENS), .token_types = LIB_TYPES,
        .bos_id = L_CLS, .eos_id = -1, .unk_id = L_UNK, .sep_id = L_SEP, .pad_id = L_PAD, .mask_id = L_MASK,
        .normalizer = normalizer, .max_word_chars = max_chars,
    });
}

/* BERT's uncased normaliser decomposes each syllable into its two or three
 * jamo (8 ids, as the library gives); llama.cpp's keeps each syllable's
 * first jamo only (3). */
Test(tok_wpm, lib_hangul_fully_decomposed)
{
    cr_assert_eq(N_OF(LIB_TOKENS), N_OF(LIB_TYPES));
    as_tokenizer *t = make_lib("clean cjk strip-mn lower", 0);
    EXPECT(t, "한국어", 0, L_HIEUH, L_A, L_N, L_G, L_U, L_K, L_IEUNG, L_EO);
    EXPECT(t, "\u1112\u1161\u11AB", 0, L_HIEUH, L_A, L_N); /* typed as jamo: the same */
    as_tokenizer_free(t);
    t = make_spec((as_tokenizer_spec){
        .kind = AS_TOK_BERT, .tokens = LIB_TOKENS, .n_tokens = N_OF(LIB_TOKENS), .token_types = LIB_TYPES,
        .bos_id = L_CLS, .eos_id = -1, .unk_id = L_UNK, .sep_id = L_SEP, .pad_id = L_PAD, .mask_id = L_MASK});
    EXPECT(t, "한국어", 0, L_HIEUH, L_G, L_IEUNG); /* llama.cpp's */
    as_tokenizer_free(t);
    /* cased (no accent stripping, so no NFD): the syllables stay whole */
    t = make_lib("clean cjk", 0);
    EXPECT(t, "한 한국어", 0, L_HAN, L_UNK);
    as_tokenizer_free(t);
}

/* Lower-cased, accents stripped: é, É and e + U+0301 all become e. */
Test(tok_wpm, lib_accents_stripped_with_lowercase)
{
    as_tokenizer *t = make_lib("clean cjk strip-mn lower", 0);
    EXPECT(t, "Café CAFÉ cafe\u0301 cafe", 0, L_CAFE, L_CAFE, L_CAFE, L_CAFE);
    as_tokenizer_free(t);
}

/* Cased (bert-base-cased's lowercase false, strip_accents null): é kept as
 * typed, never composed or decomposed; lower-cased with strip_accents false:
 * É becomes é, still one code point. */
Test(tok_wpm, lib_accents_kept_when_cased)
{
    as_tokenizer *t = make_lib("clean cjk", 0);
    EXPECT(t, "Café café cafe cafe\u0301", 0, L_CAFE_UP, L_CAFE_ACC, L_CAFE, L_UNK);
    as_tokenizer_free(t);
    t = make_lib("clean cjk lower", 0);
    EXPECT(t, "CAFÉ", 0, L_CAFE_ACC);
    as_tokenizer_free(t);
}

/* Rust's char::to_lowercase is the full mapping: İ (U+0130) becomes i and
 * U+0307, which stripping then drops (stripping comes first, removing the
 * U+0307 of İ's decomposition: the same i). */
Test(tok_wpm, lib_full_lower_case)
{
    as_tokenizer *t = make_lib("lower", 0);
    EXPECT(t, "\u0130 I", 0, L_I_DOT, L_I);
    as_tokenizer_free(t);
    t = make_lib("strip-mn lower", 0);
    EXPECT(t, "\u0130", 0, L_I);
    as_tokenizer_free(t);
}

/* NFD decomposes fully (ậ U+1EAD -> ạ U+1EA1 + U+0302 -> a + U+0323 +
 * U+0302) and puts marks in canonical order (U+0323, class 220, before
 * U+0302, class 230, whichever was typed first). */
Test(tok_wpm, lib_nfd_recursive_and_ordered)
{
    as_tokenizer *t = make_lib("nfd", 0);
    EXPECT(t, "\u1EAD a\u0302\u0323 a\u0323\u0302 \u1EA1\u0302", 0, L_A_MARKS, L_A_MARKS, L_A_MARKS, L_A_MARKS);
    as_tokenizer_free(t);
}

/* clean_text drops controls (U+0085 among them: it is a control before it
 * is White_Space) and NUL; handle_chinese_chars spaces CJK ideographs. A
 * Sequence (NFD, Lowercase, StripAccents) has neither: U+0085 is
 * White_Space to the pre-tokenizer, and 中 stays inside its word. */
Test(tok_wpm, lib_clean_text_and_cjk)
{
    as_tokenizer *t = make_lib("clean cjk strip-mn lower", 0);
    EXPECT(t, "ca\xC2\x85" "fe a中b", 0, L_CAFE, L_AA, L_ZHONG, L_B);
    const int32_t want[] = {L_CAFE, END};
    expect_n(t, "ca\0fe", 5, 0, want);
    as_tokenizer_free(t);
    t = make_lib("nfd lower strip-marks", 0);
    EXPECT(t, "ca\xC2\x85" "fe a中b Café", 0, L_UNK, L_UNK, L_UNK, L_CAFE);
    as_tokenizer_free(t);
}

/* max_input_chars_per_word: a word of more code points (after the
 * normaliser: 한 is three jamo) is [UNK]. */
Test(tok_wpm, lib_word_limit)
{
    as_tokenizer *t = make_lib("clean cjk strip-mn lower", 3);
    EXPECT(t, "cat cafe 한 한국", 0, L_CAT, L_UNK, L_HIEUH, L_A, L_N, L_UNK);
    as_tokenizer_free(t);
}

/* An unknown step is refused, naming the key and the step. */
Test(tok_wpm, lib_unknown_step_refused)
{
    as_tokenizer_spec sp = {
        .kind = AS_TOK_BERT, .tokens = LIB_TOKENS, .n_tokens = N_OF(LIB_TOKENS), .token_types = LIB_TYPES,
        .bos_id = L_CLS, .eos_id = -1, .unk_id = L_UNK, .sep_id = L_SEP, .pad_id = L_PAD, .mask_id = L_MASK,
        .normalizer = "clean nfkc lower"};
    as_tokenizer *t = NULL;
    as_error err = {{0}};
    cr_assert_eq(as_tokenizer_new(&t, &sp, &err), AS_ERR);
    cr_assert(strstr(err.msg, "tokenizer.attnscope.normalizer") && strstr(err.msg, "'nfkc'"), "%s", err.msg);
}

/* From GGUF: our key turns the library's normalisation on, and the card
 * says which normalisation is in use. */
Test(tok_wpm, lib_gguf_key_and_card)
{
    for (int lib = 0; lib < 2; lib++) {
        as_gguf_writer *w = as_gguf_writer_new(3);
        as_gguf_writer_set_str(w, "general.architecture", "bert");
        as_gguf_writer_set_str(w, "tokenizer.ggml.model", "bert");
        as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", LIB_TOKENS, N_OF(LIB_TOKENS));
        as_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", AS_GGUF_INT32, LIB_TYPES, N_OF(LIB_TYPES));
        as_gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", L_UNK);
        if (lib) {
            as_gguf_writer_set_str(w, "tokenizer.attnscope.normalizer", "clean cjk strip-mn lower");
            as_gguf_writer_set_u32(w, "tokenizer.attnscope.max_word_chars", 100);
        }
        gguf_mem m = {0};
        as_tokenizer *t = load(w, &m);
        if (lib)
            EXPECT(t, "한국어", 0, L_HIEUH, L_A, L_N, L_G, L_U, L_K, L_IEUNG, L_EO);
        else
            EXPECT(t, "한국어", 0, L_HIEUH, L_G, L_IEUNG);
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        as_tokenizer_print_card(m.g, f);
        fclose(f);
        if (lib)
            cr_assert(strstr(text, "tokenizers library") && strstr(text, "clean cjk strip-mn lower") &&
                      strstr(text, "more than 100 characters"), "%s", text);
        else
            cr_assert(strstr(text, "as llama.cpp does") && !strstr(text, "tokenizers library"), "%s", text);
        free(text);
        unload(&m, t);
    }
}
