/* tok_wpm: GGUF's "bert" tokenizer, WordPiece as llama.cpp's
 * llm_tokenizer_wpm_session (llama.cpp as in node-llama-cpp 3.22.1,
 * commit de3ff81). Owns BERT's normalizer and the greedy longest match.
 *
 * The vocabulary is stored as llama.cpp's converter stores BERT's
 * (convert_hf_to_gguf.py, BertModel.set_vocab): a piece that starts a word
 * gets '▁' in front ("the" -> "▁the"), a continuation loses its "##"
 * ("##ing" -> "ing"), control tokens ([CLS], [SEP], [MASK], [PAD], [UNK])
 * stay as they are. So a word is matched as '▁' + word, and the one table
 * of texts serves both kinds of piece.
 *
 * A fragment of text (tokenizer.c has cut out special tokens) becomes
 * words, one code point at a time:
 *   - with strip_accents, the code point is replaced by the first code
 *     point of its canonical decomposition ("é" -> "e": llama.cpp's NFD
 *     keeps only that), and marks (\p{M}) are dropped;
 *   - whitespace ends a word; NUL, U+FFFD, control and format characters
 *     (\p{C}) and bytes that are not UTF-8 are dropped (llama.cpp reads
 *     each bad byte as U+FFFD);
 *   - with lowercase, it is lower-cased (the simple, one code point
 *     mapping);
 *   - punctuation (\p{P}), ASCII symbols and CJK ideographs are words of
 *     their own; anything else, unassigned code points included, joins the
 *     word.
 * Each word is then matched greedily from its start: the longest token
 * that is a prefix of what is left, then again from its end; if some
 * position has no token, the whole word is [UNK]. llama.cpp puts no limit
 * on a word's length (Hugging Face's BERT makes a word over 100 characters
 * [UNK]; llama.cpp does not, and neither does this file outside the
 * library's normalisation below).
 *
 * A tokenizer from a Hugging Face directory normalises as the tokenizers
 * library does instead (tokenizer.attnscope.normalizer, ours: its
 * BertNormalizer or NFD/Lowercase/StripAccents steps, lib_step below):
 * the whole fragment goes through each step in turn -- clean_text (NUL,
 * U+FFFD, \p{C} but tab, LF, CR dropped; White_Space made ' '), spaces
 * around CJK ideographs, full canonical NFD (recursive, Hangul syllables
 * by formula, marks in canonical order) with Mn dropped when accents are
 * stripped, lower case as Rust's char::to_lowercase (full: U+0130 ->
 * "i\u0307") -- then BertPreTokenizer splits at White_Space and around
 * punctuation (\p{P}, ASCII symbols); a word longer than
 * max_input_chars_per_word code points is [UNK].
 *
 * Where this differs from llama.cpp, on purpose: an overlong or surrogate
 * UTF-8 sequence, or one past U+10FFFF, is invalid bytes here (dropped);
 * llama.cpp's decoder reads overlong forms as the code point they spell
 * (and throws past U+10FFFF). A word with no pieces in a vocabulary
 * without an unknown token is an error here; llama.cpp emits id -1. */
#include "tokenizer_internal.h"

#include <string.h>

#include "unicode_norm.h"
#include "unicode_tables.h"
#include "unicode_wpm.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static const char WORD_START[] = "\xE2\x96\x81"; /* U+2581 '▁' */
enum { WORD_START_LEN = 3 };

DEFINE_RESERVE(reserve_char, char)
DEFINE_RESERVE(reserve_u32len, uint32_t)
DEFINE_RESERVE(reserve_u64, uint64_t)
DEFINE_RESERVE(reserve_cp, as_tok_cp)

/* ---------------------------------------------------------------- normalizer data */

static uint32_t lower(uint32_t cp)
{
    size_t lo = 0, hi = N_OF(as_uni_lower);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (as_uni_lower[mid][0] < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < N_OF(as_uni_lower) && as_uni_lower[lo][0] == cp ? as_uni_lower[lo][1] : cp;
}

static uint32_t nfd_first(uint32_t cp)
{
    size_t lo = 0, hi = N_OF(as_uni_nfd);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (as_uni_nfd[mid][1] < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < N_OF(as_uni_nfd) && as_uni_nfd[lo][0] <= cp ? as_uni_nfd[lo][2] : cp;
}

/* BERT's CJK ideograph blocks, as llama.cpp lists them: its Extension E/F
 * range starts at U+2B920, not U+2B820, following Hugging Face's Rust
 * code, so U+2B820..U+2B91F join words. */
static bool cjk(uint32_t cp)
{
    static const uint32_t r[][2] = {
        {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xF900, 0xFAFF},   {0x20000, 0x2A6DF},
        {0x2A700, 0x2B73F}, {0x2B740, 0x2B81F}, {0x2B920, 0x2CEAF}, {0x2F800, 0x2FA1F},
    };
    for (size_t i = 0; i < N_OF(r); i++)
        if (cp >= r[i][0] && cp <= r[i][1])
            return true;
    return false;
}

static size_t put_utf8(uint32_t cp, char *o)
{
    if (cp < 0x80)
        return o[0] = (char)cp, 1;
    if (cp < 0x800)
        return o[0] = (char)(0xC0 | (cp >> 6)), o[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000)
        return o[0] = (char)(0xE0 | (cp >> 12)), o[1] = (char)(0x80 | ((cp >> 6) & 0x3F)),
               o[2] = (char)(0x80 | (cp & 0x3F)), 3;
    return o[0] = (char)(0xF0 | (cp >> 18)), o[1] = (char)(0x80 | ((cp >> 12) & 0x3F)),
           o[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), o[3] = (char)(0x80 | (cp & 0x3F)), 4;
}

/* ---------------------------------------------------------------- the library's normalisation */

/* The steps, as tokenizer.attnscope.normalizer names them. */
enum { WPM_CLEAN = 1, WPM_CJK, WPM_STRIP_MN, WPM_NFD, WPM_LOWER, WPM_STRIP_MARKS, WPM_N_STEPS };
static const char *const STEP_NAME[WPM_N_STEPS] = {"", "clean", "cjk", "strip-mn", "nfd", "lower", "strip-marks"};
/* at most this many code points out of one in */
static const unsigned STEP_GROWTH[WPM_N_STEPS] = {1, 1, 3, 4, 4, 2, 1};

static bool nonspacing_mark(uint32_t cp)
{
    return as_tok_in_ranges(as_uni_mn, N_OF(as_uni_mn), cp);
}

/* Rust's char::to_lowercase: the simple mapping but where the full one
 * has two code points. */
static size_t lower_full(uint32_t cp, uint32_t out[2])
{
    for (size_t i = 0; i < N_OF(as_uni_lower2); i++)
        if (as_uni_lower2[i][0] == cp)
            return out[0] = as_uni_lower2[i][1], out[1] = as_uni_lower2[i][2], 2;
    return out[0] = lower(cp), 1;
}

/* Canonical ordering: each run of marks (class > 0) sorted by class, stably. */
static void canonical_order(as_tok_cp *d, size_t k)
{
    for (size_t i = 1; i < k; i++) {
        int ci = as_tok_ccc(d[i].cp);
        if (!ci)
            continue;
        as_tok_cp x = d[i];
        size_t j = i;
        while (j > 0 && as_tok_ccc(d[j - 1].cp) > ci)
            d[j] = d[j - 1], j--;
        d[j] = x;
    }
}

/* One step over in[0, n) into out (room for STEP_GROWTH[step] * n); each
 * code point out keeps the byte offset of the one it came from. */
static size_t lib_step(int step, const as_tok_cp *in, size_t n, as_tok_cp *out)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t cp = in[i].cp, d[4];
        size_t m = 1;
        d[0] = cp;
        switch (step) {
        case WPM_CLEAN:
            if (cp == 0 || cp == 0xFFFD ||
                (as_tok_uni_class(cp) == AS_UC_CONTROL && cp != '\t' && cp != '\n' && cp != '\r'))
                m = 0;
            else if (as_tok_uni_space(cp))
                d[0] = ' ';
            break;
        case WPM_CJK:
            if (cjk(cp))
                d[0] = ' ', d[1] = cp, d[2] = ' ', m = 3;
            break;
        case WPM_NFD:
        case WPM_STRIP_MN:
            m = as_tok_nfd_cp(cp, d);
            break;
        case WPM_LOWER:
            m = lower_full(cp, d);
            break;
        case WPM_STRIP_MARKS:
            m = as_tok_uni_class(cp) == AS_UC_MARK ? 0 : 1;
            break;
        }
        for (size_t j = 0; j < m; j++)
            out[k++] = (as_tok_cp){.cp = d[j], .off = in[i].off};
    }
    if (step == WPM_NFD || step == WPM_STRIP_MN)
        canonical_order(out, k);
    if (step == WPM_STRIP_MN) { /* after the ordering, as the library filters its NFD */
        size_t w = 0;
        for (size_t i = 0; i < k; i++)
            if (!nonspacing_mark(out[i].cp))
                out[w++] = out[i];
        k = w;
    }
    return k;
}

/* ---------------------------------------------------------------- matching a word */

/* How many bytes from s[i] a token could cover: no more than the longest
 * token, and never across a byte pair no token holds (pair_seen). */
static size_t reach(const as_tokenizer *t, const char *s, size_t i, size_t len)
{
    size_t lim = t->n_lens && t->lens_desc[0] < len - i ? i + t->lens_desc[0] : len, end = i + 1;
    for (; end < lim; end++) {
        unsigned pair = (unsigned)(uint8_t)s[end - 1] << 8 | (uint8_t)s[end];
        if (!((t->pair_seen[pair >> 6] >> (pair & 63)) & 1))
            break;
    }
    return end - i;
}

/* The longest token that is a prefix of s[i, len), as llama.cpp tries
 * them (longest first); *n its length. Every prefix is hashed in one pass,
 * so a position costs its reach, not the sum of the token lengths. */
static int32_t longest_piece(const as_tokenizer *t, work *w, size_t i, size_t len, size_t *n)
{
    const char *s = w->esc + i;
    size_t e = reach(t, w->esc, i, len);
    uint64_t h = AS_TOK_HASH_START;
    for (size_t k = 1; k <= e; k++) {
        h = as_tok_hash_step(h, (uint8_t)s[k - 1]);
        w->hash[k] = h ^ (h >> 31);
    }
    for (size_t k = 0; k < t->n_lens; k++) {
        size_t piece = t->lens_desc[k];
        int32_t id = piece <= e ? as_tok_lookup_hashed(t, &t->all, s, piece, w->hash[piece]) : -1;
        if (id >= 0)
            return *n = piece, id;
    }
    return -1;
}

/* '▁' + word in w->esc[0, len): its pieces, longest first from the left;
 * all of them are taken back for [UNK] if some position has none. */
static int match_word(const as_tokenizer *t, work *w, size_t len, size_t at, as_error *err)
{
    size_t first = w->nids, piece = 0, chars = 0;
    if (!reserve_u64(&w->hash, &w->caphash, len + 1))
        return as_tok_oom(err);
    for (size_t i = WORD_START_LEN; t->max_word_chars && i < len; i++)
        chars += ((uint8_t)w->esc[i] & 0xC0) != 0x80;
    for (size_t i = 0; chars <= t->max_word_chars && i < len; i += piece) {
        int32_t id = longest_piece(t, w, i, len, &piece);
        if (id < 0) {
            w->nids = first;
            break;
        }
        if (as_tok_push_id(w, id, err))
            return AS_ERR;
    }
    if (w->nids > first)
        return AS_OK;
    if (t->unk < 0)
        return as_error_set(err, "tokenizer: the word '%.*s' (byte %zu of the text) has no pieces in this "
                                 "vocabulary, which has no unknown token ([UNK]) to stand for it",
                            (int)(len - WORD_START_LEN < 40 ? len - WORD_START_LEN : 40), w->esc + WORD_START_LEN,
                            at);
    return as_tok_push_id(w, t->unk, err);
}

/* ---------------------------------------------------------------- splitting into words */

typedef struct words {
    const as_tokenizer *t;
    work *w;
    size_t len;    /* bytes in w->esc: '▁' + the word so far */
    size_t at;     /* the word's first byte in the whole text */
    bool any;      /* a word was started in this fragment */
} words;

static int end_word(words *s, as_error *err)
{
    if (s->len == WORD_START_LEN)
        return AS_OK;
    size_t len = s->len;
    s->len = WORD_START_LEN;
    return s->w->ends_only ? AS_OK : match_word(s->t, s->w, len, s->at, err);
}

/* Appends code point cp, read at byte at of the text, to the word. */
static int add_to_word(words *s, uint32_t cp, size_t at, as_error *err)
{
    if (s->len == WORD_START_LEN) {
        /* pretokens: a piece runs from one word's start to the next's */
        if (s->w->ends_only && s->any && as_tok_push_end(s->w, at, err))
            return AS_ERR;
        s->any = true;
        s->at = at;
    }
    if (!reserve_char(&s->w->esc, &s->w->capesc, s->len + 4))
        return as_tok_oom(err);
    s->len += put_utf8(cp, s->w->esc + s->len);
    return AS_OK;
}

/* One code point of the fragment, as llama.cpp's preprocess reads it. */
static int wpm_cp(words *s, uint32_t cp, size_t at, as_error *err)
{
    const as_tokenizer *t = s->t;
    if (cp > 0x10FFFF)
        return AS_OK; /* a byte that is not UTF-8: llama.cpp's U+FFFD, dropped */
    if (t->strip_accents)
        cp = nfd_first(cp);
    unsigned cls = as_tok_uni_class(cp);
    if (as_tok_uni_space(cp))
        return end_word(s, err);
    if (cp == 0 || cp == 0xFFFD || cls == AS_UC_CONTROL || (t->strip_accents && cls == AS_UC_MARK))
        return AS_OK;
    uint32_t out = t->lowercase ? lower(cp) : cp;
    if (cls == AS_UC_PUNCT || (cp < 0x7F && cls == AS_UC_SYMBOL) || cjk(cp))
        return end_word(s, err) || add_to_word(s, out, at, err) || end_word(s, err) ? AS_ERR : AS_OK;
    return add_to_word(s, out, at, err);
}

/* One code point of the library's normalised fragment, as its
 * BertPreTokenizer reads it. */
static int lib_cp(words *s, uint32_t cp, size_t at, as_error *err)
{
    if (as_tok_uni_space(cp))
        return end_word(s, err);
    unsigned cls = as_tok_uni_class(cp);
    if (cls == AS_UC_PUNCT || (cp < 0x7F && cls == AS_UC_SYMBOL))
        return end_word(s, err) || add_to_word(s, cp, at, err) || end_word(s, err) ? AS_ERR : AS_OK;
    return add_to_word(s, cp, at, err);
}

/* The fragment's code points w->cps[0, m) through the library's steps,
 * then split into words. Bytes that are not UTF-8 are dropped first (the
 * library never sees them: its input is a string). */
static int lib_encode(const as_tokenizer *t, size_t m, size_t base, words *st, as_error *err)
{
    work *w = st->w;
    as_tok_cp *a = NULL, *b = NULL;
    size_t capa = 0, capb = 0, n = 0;
    int rc = AS_ERR;
    if (!reserve_cp(&a, &capa, m + 1))
        goto oom;
    for (size_t k = 0; k < m; k++)
        if (w->cps[k].cp <= 0x10FFFF)
            a[n++] = w->cps[k];
    for (size_t i = 0; i < t->n_norm_step; i++) {
        int step = t->norm_step[i];
        if (!reserve_cp(&b, &capb, n * STEP_GROWTH[step] + 1))
            goto oom;
        n = lib_step(step, a, n, b);
        as_tok_cp *x = a;
        size_t cx = capa;
        a = b, capa = capb, b = x, capb = cx;
    }
    rc = AS_OK;
    for (size_t k = 0; k < n && rc == AS_OK; k++)
        rc = lib_cp(st, a[k].cp, base + a[k].off, err);
    free(a);
    free(b);
    return rc;
oom:
    free(a);
    free(b);
    return as_tok_oom(err);
}

static int wpm_encode(const as_tokenizer *t, const char *s, size_t n, size_t base, work *w,
                      as_error *err)
{
    size_t m;
    if (as_tok_decode_cps(s, n, w, &m, err))
        return AS_ERR;
    if (!reserve_char(&w->esc, &w->capesc, WORD_START_LEN + 4))
        return as_tok_oom(err);
    memcpy(w->esc, WORD_START, WORD_START_LEN);
    words st = {t, w, WORD_START_LEN, 0, false};
    if (t->lib_norm) {
        if (lib_encode(t, m, base, &st, err))
            return AS_ERR;
    } else {
        for (size_t k = 0; k < m; k++)
            if (wpm_cp(&st, w->cps[k].cp, base + w->cps[k].off, err))
                return AS_ERR;
    }
    if (end_word(&st, err))
        return AS_ERR;
    return w->ends_only ? as_tok_push_end(w, base + n, err) : AS_OK;
}

/* ---------------------------------------------------------------- building */

static int cmp_desc(const void *pa, const void *pb)
{
    uint32_t a = *(const uint32_t *)pa, b = *(const uint32_t *)pb;
    return (a < b) - (a > b);
}

/* The distinct lengths of the non-empty tokens, longest first; and the
 * byte pairs of every token, control ones included (llama.cpp matches
 * pieces among all tokens): tok_vocab.c noted only plain tokens' pairs. */
static int token_lengths(as_tokenizer *t, as_error *err)
{
    size_t cap = 0, n = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (!t->len[i])
            continue;
        const uint8_t *s = (const uint8_t *)t->arena + t->off[i];
        for (size_t j = 1; j < t->len[i]; j++) {
            unsigned pair = (unsigned)s[j - 1] << 8 | s[j];
            t->pair_seen[pair >> 6] |= 1ull << (pair & 63);
        }
        if (!reserve_u32len(&t->lens_desc, &cap, n + 1))
            return as_tok_oom(err);
        t->lens_desc[n++] = t->len[i];
    }
    if (n == 0)
        return AS_OK; /* every token empty: every word is [UNK] */
    qsort(t->lens_desc, n, sizeof *t->lens_desc, cmp_desc);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (k == 0 || t->lens_desc[k - 1] != t->lens_desc[i])
            t->lens_desc[k++] = t->lens_desc[i];
    t->n_lens = k;
    return AS_OK;
}

static int special_id(const char *what, int32_t id, const as_tokenizer *t, int32_t *out, as_error *err)
{
    if (id >= 0 && (size_t)id >= t->n)
        return as_error_set(err, "tokenizer: %s %d is out of range (vocabulary has %zu tokens)", what, id,
                            t->n);
    *out = id < 0 ? -1 : id;
    return AS_OK;
}

/* tokenizer.attnscope.normalizer: the library's steps, space-separated
 * (none at all is the library's normalisation with no normalizer). */
static int parse_steps(as_tokenizer *t, const char *s, as_error *err)
{
    t->lib_norm = true;
    t->n_norm_step = 0;
    for (const char *p = s; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        size_t len = strcspn(p, " ");
        int step = 0;
        for (int k = 1; k < WPM_N_STEPS; k++)
            if (strlen(STEP_NAME[k]) == len && !strncmp(p, STEP_NAME[k], len))
                step = k;
        if (!step)
            return as_error_set(err, "tokenizer.attnscope.normalizer '%.60s': unknown step '%.*s' (known: clean, "
                                     "cjk, strip-mn, nfd, lower, strip-marks)", s, (int)(len < 20 ? len : 20), p);
        if (t->n_norm_step == N_OF(t->norm_step))
            return as_error_set(err, "tokenizer.attnscope.normalizer '%.60s': more than %zu steps", s,
                                N_OF(t->norm_step));
        t->norm_step[t->n_norm_step++] = (uint8_t)step;
        p += len;
    }
    return AS_OK;
}

/* Without token types, [SEP], [PAD] and [MASK] are control tokens too
 * (tok_vocab.c makes BOS and EOS so): they decode to nothing, and their
 * texts in a prompt are those tokens only when special tokens are parsed. */
static int wpm_build(as_tokenizer *t, const as_tokenizer_spec *sp, as_error *err)
{
    if (special_id("sep_id", sp->sep_id, t, &t->sep, err) ||
        special_id("pad_id", sp->pad_id, t, &t->pad, err) ||
        special_id("mask_id", sp->mask_id, t, &t->mask, err))
        return AS_ERR;
    if (!sp->token_types) {
        int32_t ids[] = {t->sep, t->pad, t->mask};
        for (size_t i = 0; i < N_OF(ids); i++)
            if (ids[i] >= 0)
                t->type[ids[i]] = TT_CONTROL;
    }
    /* llama.cpp's WPM adds [CLS] and [SEP] whenever special tokens are
     * added, whatever add_bos_token says, and never an EOS. */
    t->add_bos = true;
    t->add_sep = true;
    t->add_eos = false;
    t->lowercase = !sp->keep_case;
    t->strip_accents = !sp->keep_accents;
    t->max_word_chars = sp->max_word_chars;
    if (sp->normalizer && parse_steps(t, sp->normalizer, err))
        return AS_ERR;
    return token_lengths(t, err);
}

static int32_t wpm_byte_token(const as_tokenizer *t, uint8_t b)
{
    (void)t, (void)b;
    return -1; /* no byte fallback: a word without pieces is [UNK] */
}

/* ---------------------------------------------------------------- decoding */

/* llama.cpp's clean_spaces, the three passes of its detokenizer for WPM.
 * Each keeps the first byte and rewrites the rest in place. */
static size_t tidy_punct(char *s, size_t n)
{
    size_t k = 1;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (s[i - 1] == ' ' && (c == '?' || c == '!' || c == '.' || c == ','))
            k--; /* " ." -> "." */
        s[k++] = c;
    }
    return k;
}

static size_t tidy_lone_quote(char *s, size_t n)
{
    size_t k = 1;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (c == '\'' && i + 1 < n && s[i - 1] == ' ' && s[i + 1] == ' ') {
            k--;         /* " ' " -> "'": the space before goes, */
            s[++i] = 0;  /* the one after is passed over (and reads as NUL next) */
        }
        s[k++] = c;
    }
    return k;
}

static size_t tidy_contractions(char *s, size_t n)
{
    size_t k = 1;
    for (size_t i = 1; i < n; i++) {
        char c = s[i];
        if (s[i - 1] == ' ' && c == '\'' && i + 1 < n) {
            char a = s[i + 1], b = i + 2 < n ? s[i + 2] : 0;
            if (a == 's' || a == 'm' || (i + 2 < n && b == 'e' && (a == 'r' || a == 'v')))
                k--; /* " 's" " 'm" " 're" " 've"; llama.cpp leaves " 't" " 'd" " 'll" */
        }
        s[k++] = c;
    }
    return k;
}

static size_t wpm_tidy(char *s, size_t n)
{
    if (n == 0)
        return 0;
    n = tidy_punct(s, n);
    n = tidy_lone_quote(s, n);
    return tidy_contractions(s, n);
}

const as_tok_algo as_tok_wpm = {
    .gguf_model = "bert",
    .kind = AS_TOK_BERT,
    .bos = 101, /* [CLS] in BERT's vocabulary */
    .eos = -1,
    .unk = 100,
    .add_bos = true,
    .space_prefix = false,
    .needs_merges = false,
    .byte_fallback = false,
    .byte_token_name = "token",
    .build = wpm_build,
    .byte_token = wpm_byte_token,
    .encode = wpm_encode,
    .decode = as_tok_unescape_spaces,
    .word_space = true,
    .tidy = wpm_tidy,
};
