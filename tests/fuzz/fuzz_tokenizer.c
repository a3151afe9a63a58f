/* Fuzz target: the tokenizers on arbitrary bytes.
 * The first byte picks a mode:
 *   0  gpt2 (tiny-gpt2's vocabulary, all 256 byte symbols): encode, then
 *      decode must give the exact bytes back; pretoken ends ascend to len;
 *   1  llama (tiny-llama's, all 256 byte tokens): the same round trip, for
 *      text without a literal U+2581 (which llama reads as a space);
 *      with bit 3 set (8, 9, ...), modes 0 and 1 run bert instead (a
 *      WordPiece vocabulary built here, every ASCII letter and digit as a
 *      word start and a continuation): ids inside the vocabulary,
 *      pretoken ends ascending to len, and encoding the decoded text
 *      gives the same ids again when no word was [UNK] (bit 2: special
 *      tokens added and parsed); bit 5 as well (40, 41, ...): the same
 *      vocabulary normalised as the tokenizers library does
 *      (tokenizer.attnscope.normalizer: BertNormalizer's steps, words
 *      over 100 characters [UNK]);
 *      with bit 4 set (16, 17, ...) and not bit 3, t5 instead
 *      (fixtures/t5-ugm.gguf: SentencePiece Unigram with an NFKC
 *      charsmap): ids inside the vocabulary, EOS last when added, decode
 *      succeeds, pretoken ends ascending to len;
 *   2  decode of arbitrary int32 ids with all four, and the one-token views;
 *   3  a vocabulary built from the input (empty and duplicate tokens,
 *      arbitrary types, scores, special ids and merges; gpt2, llama,
 *      bert or t5, whose precompiled charsmap is the input's text bytes),
 *      then encode and decode with it: building refuses or succeeds,
 *      encoding gives ids inside the vocabulary, decoding them succeeds.
 * Properties: the above, and no crash, leak or undefined behaviour. */
#include "fuzz.h"

#include <string.h>

#include "attnscope/gguf.h"
#include "attnscope/tokenizer.h"

static as_tokenizer *load(const char *fixture)
{
    as_gguf *g;
    as_tokenizer *t;
    as_error err;
    if (as_gguf_open(&g, fuzz_fixture(fixture), &err) || as_tokenizer_from_gguf(&t, g, &err)) {
        fprintf(stderr, "fuzz: %s\n", err.msg);
        abort();
    }
    as_gguf_close(g);
    return t;
}

static as_tokenizer *tok[5];

/* A WordPiece vocabulary as llama.cpp's converter stores BERT's: control
 * tokens, then word starts ("▁a") and continuations ("a") for every ASCII
 * letter and digit, punctuation, a few longer pieces. Every text is
 * already normalized, so decoding and encoding again is stable. */
static as_tokenizer *make_bert(const char *normalizer)
{
    static char store[200][8];
    const char *tokens[200];
    size_t n = 0;
    static const char *const fixed[] = {"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "\xE2\x96\x81the",
                                        "\xE2\x96\x81un", "able", "ing", "\xE2\x96\x81\xE4\xB8\xAD"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        tokens[n++] = fixed[i];
    static const char alnum[] = "abcdefghijklmnopqrstuvwxyz0123456789.,'!?";
    for (size_t i = 0; alnum[i]; i++) {
        snprintf(store[n], sizeof store[n], "\xE2\x96\x81%c", alnum[i]);
        tokens[n] = store[n], n++;
        if (i < 36) {
            snprintf(store[n], sizeof store[n], "%c", alnum[i]);
            tokens[n] = store[n], n++;
        }
    }
    as_tokenizer_spec sp = {.kind = AS_TOK_BERT, .tokens = tokens, .n_tokens = n, .bos_id = 2,
                            .eos_id = -1, .unk_id = 1, .sep_id = 3, .pad_id = 0, .mask_id = 4,
                            .normalizer = normalizer, .max_word_chars = normalizer ? 100 : 0};
    as_tokenizer *t;
    as_error err;
    if (as_tokenizer_new(&t, &sp, &err)) {
        fprintf(stderr, "fuzz: %s\n", err.msg);
        abort();
    }
    return t;
}

static void cleanup(void)
{
    for (size_t i = 0; i < 5; i++)
        as_tokenizer_free(tok[i]);
}

static bool contains(const uint8_t *s, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++)
        if (!memcmp(s + i, needle, m))
            return true;
    return false;
}

static void roundtrip(const as_tokenizer *t, const uint8_t *s, size_t n, bool bos)
{
    int32_t *ids;
    size_t n_ids, len, *ends, n_ends;
    char *out;
    as_error err;
    FUZZ_CHECK(as_tokenizer_encode(t, (const char *)s, n, bos, &ids, &n_ids, &err) == AS_OK, "encode: %s", err.msg);
    for (size_t i = 0; i < n_ids; i++)
        FUZZ_CHECK(ids[i] >= 0 && (size_t)ids[i] < as_tokenizer_vocab_size(t), "id %d", ids[i]);
    FUZZ_CHECK(as_tokenizer_decode(t, ids, n_ids, &out, &len, &err) == AS_OK, "decode: %s", err.msg);
    FUZZ_CHECK(len == n && memcmp(out, s, n) == 0, "round trip of %zu bytes gave %zu bytes", n, len);
    FUZZ_CHECK(out[len] == '\0', "decode output not NUL-terminated");
    free(out);
    free(ids);
    FUZZ_CHECK(as_tokenizer_pretokens(t, (const char *)s, n, &ends, &n_ends, &err) == AS_OK, "pretokens: %s",
               err.msg);
    for (size_t i = 0; i < n_ends; i++)
        FUZZ_CHECK(ends[i] <= n && (i == 0 || ends[i] > ends[i - 1]), "pretoken end %zu = %zu", i, ends[i]);
    FUZZ_CHECK(n == 0 || (n_ends > 0 && ends[n_ends - 1] == n), "last pretoken end is not the length");
    free(ends);
}

static bool has(const int32_t *ids, size_t n, int32_t id)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id)
            return true;
    return false;
}

/* bert: ids in range, word ends ascending to the length, and (no [UNK],
 * no literal U+2581) the decoded text encodes to the same ids. */
static void bert_props(const as_tokenizer *t, const uint8_t *s, size_t n, bool special)
{
    unsigned flags = special ? AS_TOK_ADD_SPECIAL | AS_TOK_PARSE_SPECIAL : 0;
    int32_t *ids, *again;
    size_t n_ids, n_again, len, *ends, n_ends;
    char *out;
    as_error err;
    FUZZ_CHECK(as_tokenizer_tokenize(t, (const char *)s, n, flags, &ids, &n_ids, &err) == AS_OK, "encode: %s",
               err.msg);
    for (size_t i = 0; i < n_ids; i++)
        FUZZ_CHECK(ids[i] >= 0 && (size_t)ids[i] < as_tokenizer_vocab_size(t), "id %d", ids[i]);
    FUZZ_CHECK(as_tokenizer_decode(t, ids, n_ids, &out, &len, &err) == AS_OK, "decode: %s", err.msg);
    if (!special && !has(ids, n_ids, 1) && !contains(s, n, "\xE2\x96\x81")) {
        FUZZ_CHECK(as_tokenizer_tokenize(t, out, len, 0, &again, &n_again, &err) == AS_OK, "encode: %s", err.msg);
        FUZZ_CHECK(n_again == n_ids && memcmp(again, ids, n_ids * sizeof *ids) == 0,
                   "decode then encode gave %zu ids for %zu", n_again, n_ids);
        free(again);
    }
    free(out);
    free(ids);
    FUZZ_CHECK(as_tokenizer_pretokens(t, (const char *)s, n, &ends, &n_ends, &err) == AS_OK, "pretokens: %s",
               err.msg);
    for (size_t i = 0; i < n_ends; i++)
        FUZZ_CHECK(ends[i] <= n && (i == 0 || ends[i] > ends[i - 1]), "pretoken end %zu = %zu", i, ends[i]);
    FUZZ_CHECK(n == 0 || (n_ends > 0 && ends[n_ends - 1] == n), "last pretoken end is not the length");
    free(ends);
}

/* t5: ids in range, EOS last when added, decode succeeds, pretoken ends
 * ascending to the length. */
static void ugm_props(const as_tokenizer *t, const uint8_t *s, size_t n, bool special)
{
    unsigned flags = special ? AS_TOK_ADD_SPECIAL | AS_TOK_PARSE_SPECIAL : 0;
    int32_t *ids;
    size_t n_ids, len, *ends, n_ends;
    char *out;
    as_error err;
    FUZZ_CHECK(as_tokenizer_tokenize(t, (const char *)s, n, flags, &ids, &n_ids, &err) == AS_OK, "encode: %s",
               err.msg);
    for (size_t i = 0; i < n_ids; i++)
        FUZZ_CHECK(ids[i] >= 0 && (size_t)ids[i] < as_tokenizer_vocab_size(t), "id %d", ids[i]);
    FUZZ_CHECK(!special || (n_ids > 0 && ids[n_ids - 1] == as_tokenizer_eos(t)), "EOS not last");
    FUZZ_CHECK(as_tokenizer_decode(t, ids, n_ids, &out, &len, &err) == AS_OK, "decode: %s", err.msg);
    free(out);
    free(ids);
    FUZZ_CHECK(as_tokenizer_pretokens(t, (const char *)s, n, &ends, &n_ends, &err) == AS_OK, "pretokens: %s",
               err.msg);
    for (size_t i = 0; i < n_ends; i++)
        FUZZ_CHECK(ends[i] <= n && (i == 0 || ends[i] > ends[i - 1]), "pretoken end %zu = %zu", i, ends[i]);
    free(ends);
}

static void decode_ids(const as_tokenizer *t, const uint8_t *s, size_t n)
{
    size_t n_ids = n / 4, vocab = as_tokenizer_vocab_size(t), len;
    int32_t *ids = malloc((n_ids ? n_ids : 1) * sizeof *ids);
    bool in_range = true;
    for (size_t i = 0; i < n_ids; i++) {
        uint32_t u;
        memcpy(&u, s + 4 * i, 4);
        /* mostly in range, sometimes anything */
        ids[i] = (u >> 31) ? (int32_t)u : (int32_t)(u % (vocab + 2));
        in_range &= ids[i] >= 0 && (size_t)ids[i] < vocab;
        char buf[16];
        size_t k = as_tokenizer_token_bytes(t, ids[i], buf, 1 + (u >> 8) % sizeof buf);
        FUZZ_CHECK(k < sizeof buf && buf[k] == '\0', "token_bytes %d", ids[i]);
        FUZZ_CHECK((as_tokenizer_piece(t, ids[i]) != NULL) == (ids[i] >= 0 && (size_t)ids[i] < vocab), "piece");
    }
    char *out = NULL;
    as_error err;
    int rc = as_tokenizer_decode(t, ids, n_ids, &out, &len, &err);
    FUZZ_CHECK((rc == AS_OK) == in_range, "decode %s ids out of range", in_range ? "refused" : "accepted");
    if (rc == AS_OK)
        FUZZ_CHECK(strlen(out) <= len, "length");
    free(out);
    free(ids);
}

/* Input: kind, flags, bos, eos, unk, then tokens separated by 0x01 up to a
 * 0x00 byte, then the text. Types come from each token's length and index. */
static void hostile_vocab(const uint8_t *s, size_t n)
{
    if (n < 5)
        return;
    as_tokenizer_spec sp = {0};
    sp.kind = (s[0] & 4) ? AS_TOK_T5 : (s[0] & 2) ? AS_TOK_BERT : (s[0] & 1) ? AS_TOK_LLAMA : AS_TOK_GPT2;
    uint8_t flags = s[1];
    const uint8_t *v = s + 5, *end = s + n;
    const uint8_t *stop = memchr(v, 0, (size_t)(end - v));
    if (!stop)
        stop = end;
    size_t cap = 1;
    for (const uint8_t *p = v; p < stop; p++)
        cap += *p == 1;
    char **tokens = calloc(cap, sizeof *tokens);
    uint64_t *lens = calloc(cap, sizeof *lens);
    float *scores = calloc(cap, sizeof *scores);
    int32_t *types = calloc(cap, sizeof *types);
    char **merges = calloc(cap, sizeof *merges);
    size_t nt = 0;
    for (const uint8_t *p = v; nt < cap;) {
        const uint8_t *q = memchr(p, 1, (size_t)(stop - p));
        if (!q)
            q = stop;
        tokens[nt] = malloc((size_t)(q - p) + 1);
        memcpy(tokens[nt], p, (size_t)(q - p));
        tokens[nt][q - p] = '\0';
        lens[nt] = (uint64_t)(q - p);
        scores[nt] = (flags & 8) ? (float)((q - p) * 3 % 7) - 3.0f : -(float)nt;
        types[nt] = (int32_t)((nt * 7 + lens[nt] + flags) % 8); /* 0 and 7 are not GGUF types */
        nt++;
        p = q + 1;
    }
    size_t nm = 0;
    for (size_t i = 0; i + 1 < nt; i++) { /* "a b" merges of neighbours whose texts have no NUL */
        if (strlen(tokens[i]) != lens[i] || strlen(tokens[i + 1]) != lens[i + 1])
            continue;
        merges[nm] = malloc(lens[i] + lens[i + 1] + 2);
        sprintf(merges[nm++], "%s %s", tokens[i], tokens[i + 1]);
    }
    sp.tokens = (const char *const *)tokens;
    sp.token_lens = (flags & 1) ? lens : NULL;
    sp.n_tokens = nt;
    sp.scores = (flags & 2) ? scores : NULL;
    sp.token_types = (flags & 4) ? types : NULL;
    sp.merges = (const char *const *)merges;
    sp.n_merges = nm;
    sp.bos_id = s[2] == 255 ? -1 : s[2];
    sp.eos_id = s[3] == 255 ? -1 : s[3];
    sp.unk_id = s[4] == 255 ? -1 : s[4];
    sp.add_bos = flags & 16;
    sp.add_space_prefix = flags & 32;
    sp.sep_id = sp.eos_id; /* bert's; the other kinds ignore them */
    sp.pad_id = -1;
    sp.mask_id = sp.bos_id;
    sp.keep_case = flags & 64;
    sp.keep_accents = flags & 128;
    sp.remove_extra_whitespaces = flags & 64; /* t5's */
    if (stop < end) { /* t5: the text is its charsmap too */
        sp.charsmap = stop + 1;
        sp.charsmap_len = (size_t)(end - stop - 1);
    }

    as_tokenizer *t;
    as_error err;
    if (as_tokenizer_new(&t, &sp, &err) == AS_OK) {
        const char *text = stop < end ? (const char *)stop + 1 : "";
        size_t tl = stop < end ? (size_t)(end - stop - 1) : 0;
        int32_t *ids;
        size_t n_ids, len;
        char *out;
        if (as_tokenizer_encode(t, text, tl, sp.add_bos, &ids, &n_ids, &err) == AS_OK) {
            for (size_t i = 0; i < n_ids; i++)
                FUZZ_CHECK(ids[i] >= 0 && (size_t)ids[i] < nt, "id %d of %zu", ids[i], nt);
            FUZZ_CHECK(as_tokenizer_decode(t, ids, n_ids, &out, &len, &err) == AS_OK, "decode: %s", err.msg);
            free(out);
            free(ids);
        }
        for (size_t i = 0; i < nt; i++)
            FUZZ_CHECK(as_tokenizer_find(t, tokens[i]) >= -1, "find");
        as_tokenizer_free(t);
    }
    for (size_t i = 0; i < nt; i++)
        free(tokens[i]);
    for (size_t i = 0; i < nm; i++)
        free(merges[i]);
    free(tokens), free(lens), free(scores), free(types), free(merges);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!tok[0]) {
        tok[0] = load("tiny-gpt2.gguf");
        tok[1] = load("tiny-llama.gguf");
        tok[2] = make_bert(NULL);
        tok[4] = make_bert("clean cjk strip-mn lower");
        tok[3] = load("t5-ugm.gguf");
        atexit(cleanup);
    }
    if (size < 1)
        return 0;
    const uint8_t *s = data + 1;
    size_t n = size - 1;
    if (data[0] % 4 < 2 && (data[0] & 8)) {
        bert_props(tok[data[0] & 32 ? 4 : 2], s, n, data[0] & 4);
        return 0;
    }
    if (data[0] % 4 < 2 && (data[0] & 16)) {
        ugm_props(tok[3], s, n, data[0] & 4);
        return 0;
    }
    switch (data[0] % 4) {
    case 0:
        roundtrip(tok[0], s, n, data[0] & 4);
        break;
    case 1:
        if (!contains(s, n, "\xE2\x96\x81"))
            roundtrip(tok[1], s, n, data[0] & 4);
        else
            roundtrip(tok[0], s, n, false);
        break;
    case 2:
        decode_ids(tok[0], s, n);
        decode_ids(tok[1], s, n);
        decode_ids(tok[2], s, n);
        decode_ids(tok[3], s, n);
        break;
    default:
        hostile_vocab(s, n);
        break;
    }
    return 0;
}
