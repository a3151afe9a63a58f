/* tokenizer: what every tokenizer algorithm shares, following llama.cpp
 * (llama_vocab::impl::load, tokenizer_st_partition, tokenize,
 * token_to_piece) so ids agree with it. Owns the vocabulary (texts,
 * scores, types, look-up), reading it from a GGUF file's tokenizer.ggml.*
 * keys with llama.cpp's defaults, the table of algorithms chosen by
 * tokenizer.ggml.model, special tokens (which are control, cutting them
 * out of the text, BOS and EOS), decoding to bytes, the model card's
 * tokenizer lines, and the public API. The algorithms are tok_bpe.c
 * ("gpt2": byte-level BPE, split by tok_pre.c's pre-tokenizers),
 * tok_spm.c ("llama": SentencePiece BPE), tok_wpm.c ("bert": WordPiece),
 * tok_ugm.c ("t5": SentencePiece Unigram) and tok_none.c ("none").
 *
 * Storage: every token's text is copied into one arena. Two open-addressing
 * hash tables map a text to its id:
 *   - `all`:   every non-empty token, the first id winning on duplicates
 *              (as_tokenizer_find, the <0xNN> byte-token look-up);
 *   - `plain`: only the tokens plain text may turn into (normal tokens; for
 *              gpt2 also byte-typed ones). Control, unknown, unused and
 *              user-defined tokens, and llama's <0xNN> byte tokens, are left
 *              out, so the text "<s>" or "<0x41>" never becomes them and
 *              decode(encode(x)) gives x back.
 *
 * Text goes through three stages, as in llama.cpp:
 *   1. partition (here): special tokens are cut out of the raw text,
 *      longest first, leftmost occurrence first -- user-defined ones
 *      (type 4) always, control and unknown ones when asked to parse
 *      special tokens (AS_TOK_PARSE_SPECIAL), with the whitespace next to
 *      those marked lstrip/rstrip dropped;
 *   2. the algorithm encodes each remaining fragment (its encode hook);
 *   3. symbols that are not tokens fall back to byte tokens: llama's
 *      <0xNN>, then unk (as_tok_push_byte); gpt2's byte-alphabet tokens,
 *      a byte without one left out as llama.cpp leaves it out.
 *
 * Where attnscope differs from llama.cpp, on purpose: invalid UTF-8 keeps
 * its bytes (llama.cpp encodes U+FFFD for each; t5 does as llama.cpp, whose
 * Unigram normalizer makes the U+FFFD itself); a gpt2 file without
 * bos_token_id has no BOS (llama.cpp falls back to id 11); `all` keeps the
 * first of duplicated texts (llama.cpp's map the last); every FIM-looking
 * token is made control (llama.cpp, the first of each kind it meets, and
 * none where the file names one by id); and byte-level text never turns
 * into a control or user-defined token by merging (llama.cpp looks merged
 * text up among all tokens). None of llama.cpp's test vocabularies meets
 * the last three.
 *
 * Nothing here is global or mutable outside a tokenizer or one call's
 * scratch space, so tokenizers may be used from several threads at once. */
#include "tokenizer_internal.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Longest text encode accepts: keeps every symbol index and byte offset
 * (llama text grows by up to 3x when spaces become '▁') inside int32. */
#define MAX_TEXT_BYTES ((size_t)1 << 29)
/* A file without a vocabulary names its size (vocab_size): each id gets a
 * name, so a hostile size must not cost gigabytes. */
#define MAX_NONE_TOKENS (1 << 21)

int as_tok_oom(as_error *err)
{
    return as_error_set(err, "tokenizer: out of memory");
}

/* ---------------------------------------------------------------- the algorithms */

/* One per tokenizer.ggml.model value, each in its own file. */
static const as_tok_algo *const ALGOS[] = {&as_tok_bpe, &as_tok_spm, &as_tok_wpm, &as_tok_ugm, &as_tok_none};
#define N_ALGOS (sizeof ALGOS / sizeof ALGOS[0])

static const as_tok_algo *algo_of_kind(as_tok_kind kind)
{
    for (size_t i = 0; i < N_ALGOS; i++)
        if (ALGOS[i]->kind == kind)
            return ALGOS[i];
    return NULL;
}

static const as_tok_algo *algo_named(const char *gguf_model)
{
    if (strcmp(gguf_model, "no_vocab") == 0) /* llama.cpp's other name for "none" */
        gguf_model = "none";
    for (size_t i = 0; i < N_ALGOS; i++)
        if (strcmp(ALGOS[i]->gguf_model, gguf_model) == 0)
            return ALGOS[i];
    return NULL;
}

/* "'gpt2' or 'llama'": the names the table knows, for the error. */
static void algo_names(char *buf, size_t cap)
{
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < N_ALGOS && k < cap; i++) {
        const char *sep = i == 0 ? "" : i + 1 == N_ALGOS ? " or " : ", ";
        int m = snprintf(buf + k, cap - k, "%s'%s'", sep, ALGOS[i]->gguf_model);
        k += m > 0 ? (size_t)m : 0;
    }
}

/* ---------------------------------------------------------------- UTF-8 */

/* Length of the well-formed UTF-8 character at s (Unicode table 3-7: no
 * overlongs, surrogates or code points past U+10FFFF), or 0 if the byte at
 * s does not start one. */
size_t as_tok_utf8_char(const uint8_t *s, size_t n, uint32_t *cp)
{
    uint8_t c = s[0], lo = 0x80, hi = 0xBF;
    size_t k;
    uint32_t v;
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    if (c >= 0xC2 && c <= 0xDF) {
        k = 2, v = c & 0x1Fu;
    } else if (c >= 0xE0 && c <= 0xEF) {
        k = 3, v = c & 0x0Fu;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        k = 4, v = c & 0x07u;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (n < k)
        return 0;
    for (size_t i = 1; i < k; i++) {
        if (s[i] < lo || s[i] > hi)
            return 0;
        lo = 0x80, hi = 0xBF;
        v = (v << 6) | (s[i] & 0x3Fu);
    }
    *cp = v;
    return k;
}

/* "<0xNN>" (either case of hex digit) -> the byte. */
static bool parse_byte_token(const char *s, size_t n, uint8_t *b)
{
    if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>')
        return false;
    unsigned v = 0;
    for (int i = 3; i < 5; i++) {
        char c = s[i];
        unsigned d = (c >= '0' && c <= '9')   ? (unsigned)(c - '0')
                     : (c >= 'A' && c <= 'F') ? (unsigned)(c - 'A' + 10)
                     : (c >= 'a' && c <= 'f') ? (unsigned)(c - 'a' + 10)
                                              : 16u;
        if (d > 15)
            return false;
        v = v * 16 + d;
    }
    *b = (uint8_t)v;
    return true;
}

/* ---------------------------------------------------------------- hash tables */

/* FNV-1a, fed a byte at a time so that a caller can hash every prefix of
 * a text in one pass (tok_wpm.c); a text's hash is the state after its
 * last byte, mixed. */
uint64_t as_tok_hash_step(uint64_t state, uint8_t byte)
{
    return (state ^ byte) * 1099511628211ull;
}

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = AS_TOK_HASH_START;
    for (size_t i = 0; i < n; i++)
        h = as_tok_hash_step(h, (uint8_t)s[i]);
    return h ^ (h >> 31);
}

size_t as_tok_table_cap(size_t n)
{
    size_t cap = 16;
    while (cap < 2 * n)
        cap <<= 1;
    return cap;
}

static bool strmap_init(strmap *m, size_t n)
{
    size_t cap = as_tok_table_cap(n);
    m->slot = calloc(cap, sizeof *m->slot);
    m->mask = cap - 1;
    return m->slot != NULL;
}

static bool same_text(const as_tokenizer *t, int32_t id, const char *s, size_t n)
{
    return t->len[id] == n && memcmp(t->arena + t->off[id], s, n) == 0;
}

int32_t as_tok_lookup(const as_tokenizer *t, const strmap *m, const char *s, size_t n)
{
    uint64_t h = hash_bytes(s, n);
    return as_tok_lookup_hashed(t, m, s, n, h);
}

int32_t as_tok_lookup_hashed(const as_tokenizer *t, const strmap *m, const char *s, size_t n, uint64_t h)
{
    for (size_t i = (size_t)h & m->mask;; i = (i + 1) & m->mask) {
        if (!m->slot[i])
            return -1;
        int32_t id = (int32_t)(m->slot[i] - 1);
        if (same_text(t, id, s, n))
            return id;
    }
}

/* Keeps the first id of a duplicated text. */
static void strmap_put(const as_tokenizer *t, strmap *m, int32_t id)
{
    const char *s = t->arena + t->off[id];
    size_t n = t->len[id];
    size_t i = (size_t)hash_bytes(s, n) & m->mask;
    for (; m->slot[i]; i = (i + 1) & m->mask)
        if (same_text(t, (int32_t)(m->slot[i] - 1), s, n))
            return;
    m->slot[i] = (uint32_t)id + 1;
}

/* ---------------------------------------------------------------- building */

static int check_id(const char *what, int32_t id, size_t n, as_error *err)
{
    if (id >= 0 && (size_t)id >= n)
        return as_error_set(err, "tokenizer: %s %d is out of range (vocabulary has %zu tokens)",
                            what, id, n);
    return AS_OK;
}

static int check_spec(const as_tokenizer_spec *sp, const as_tok_algo **algo, as_error *err)
{
    if (!sp)
        return as_error_set(err, "tokenizer: no spec given");
    if (!(*algo = algo_of_kind(sp->kind)))
        return as_error_set(err, "tokenizer: unknown kind %d", (int)sp->kind);
    if (sp->n_tokens == 0 || (!sp->tokens && sp->kind != AS_TOK_NONE))
        return as_error_set(err, "tokenizer: the vocabulary is empty");
    if (sp->n_tokens >= (size_t)INT32_MAX)
        return as_error_set(err, "tokenizer: %zu tokens is more than ids can number", sp->n_tokens);
    if (sp->kind == AS_TOK_NONE && sp->n_tokens > MAX_NONE_TOKENS)
        return as_error_set(err, "tokenizer: %zu token ids without a vocabulary is more than attnscope "
                                 "believes (at most %d; the largest vocabularies have about 260000)",
                            sp->n_tokens, MAX_NONE_TOKENS);
    if (sp->n_merges && !sp->merges)
        return as_error_set(err, "tokenizer: %zu merges announced but none given", sp->n_merges);
    if (check_id("bos_id", sp->bos_id, sp->n_tokens, err) ||
        check_id("eos_id", sp->eos_id, sp->n_tokens, err) ||
        check_id("unk_id", sp->unk_id, sp->n_tokens, err))
        return AS_ERR;
    return AS_OK;
}

/* No vocabulary: id i is named "#i". */
static int name_ids(as_tokenizer *t, as_error *err)
{
    size_t total = 0;
    for (size_t i = 0; i < t->n; i++)
        total += (size_t)snprintf(NULL, 0, "#%zu", i) + 1;
    if (!(t->arena = malloc(total)))
        return as_tok_oom(err);
    for (size_t i = 0, pos = 0; i < t->n; i++) {
        int k = snprintf(t->arena + pos, total - pos, "#%zu", i);
        t->off[i] = pos;
        t->len[i] = (uint32_t)k;
        pos += (size_t)k + 1;
    }
    return AS_OK;
}

static int copy_tokens(as_tokenizer *t, const as_tokenizer_spec *sp, as_error *err)
{
    if (!sp->tokens)
        return name_ids(t, err);
    size_t total = 0;
    for (size_t i = 0; i < t->n; i++) {
        if (!sp->tokens[i])
            return as_error_set(err, "tokenizer: token %zu is NULL", i);
        uint64_t l = sp->token_lens ? sp->token_lens[i] : strlen(sp->tokens[i]);
        if (l >= UINT32_MAX || l + 1 > SIZE_MAX - total)
            return as_error_set(err, "tokenizer: token %zu is too long (%llu bytes)", i,
                                (unsigned long long)l);
        t->len[i] = (uint32_t)l;
        total += (size_t)l + 1;
    }
    if (!(t->arena = malloc(total)))
        return as_tok_oom(err);
    for (size_t i = 0, pos = 0; i < t->n; i++) {
        t->off[i] = pos;
        memcpy(t->arena + pos, sp->tokens[i], t->len[i]);
        t->arena[pos + t->len[i]] = '\0';
        pos += (size_t)t->len[i] + 1;
    }
    return AS_OK;
}

/* Without a token_type array: ids named unk are unknown, <0xNN> are byte
 * tokens where the algorithm falls back to them (llama), the rest normal
 * (BOS/EOS are made control afterwards). */
static uint8_t guess_type(const as_tokenizer *t, size_t i)
{
    uint8_t b;
    if ((int32_t)i == t->unk)
        return TT_UNKNOWN;
    if (t->algo->byte_fallback && parse_byte_token(t->arena + t->off[i], t->len[i], &b))
        return TT_BYTE;
    return TT_NORMAL;
}

static bool text_is(const as_tokenizer *t, size_t i, const char *s)
{
    return same_text(t, (int32_t)i, s, strlen(s));
}

static bool text_in(const as_tokenizer *t, size_t i, const char *const *list)
{
    for (; *list; list++)
        if (text_is(t, i, *list))
            return true;
    return false;
}

/* llama.cpp's loader makes tokens that look like the end of a turn, a
 * fill-in-the-middle marker or the end of generation control tokens
 * whatever the file says (its lists, by text), and gpt-oss's channel
 * markers user-defined. It makes only the first FIM marker of each kind
 * it meets (in hash order) control; here every one is. */
static void llama_cpp_types(as_tokenizer *t)
{
    static const char *const control[] = {
        /* end of generation (special_eog_ids), which holds the EOT and EOM lists */
        "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
        "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
        "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
        "<｜end▁of▁sentence｜>", "[e~[",
        /* fill in the middle: prefix, suffix, middle, pad, repo, file separator */
        "<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>",
        "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>",
        "<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>",
        "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>",
        "<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>",
        "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>",
        "<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]",
        "<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", "<|file_sep|>", NULL,
    };
    static const char *const user[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL};
    int32_t ret = -1, call = -1, end = -1, flush = -1, calls = -1, tool = -1, s_end = -1;
    for (size_t i = 0; i < t->n; i++) {
        if (text_in(t, i, control) && t->type[i] != TT_CONTROL)
            t->type[i] = TT_CONTROL;
        if (text_in(t, i, user))
            t->type[i] = TT_USER;
        ret = text_is(t, i, "<|return|>") ? (int32_t)i : ret;
        call = text_is(t, i, "<|call|>") ? (int32_t)i : call;
        calls = text_is(t, i, "<|calls|>") ? (int32_t)i : calls;
        flush = text_is(t, i, "<|flush|>") ? (int32_t)i : flush;
        end = text_is(t, i, "<|end|>") ? (int32_t)i : end;
        tool = text_is(t, i, "<|tool_response>") ? (int32_t)i : tool;
        s_end = text_is(t, i, "</s>") ? (int32_t)i : s_end;
    }
    /* o200k_harmony and solar-open: <|end|> is not an end of generation */
    if (end >= 0 && ((ret >= 0 && call >= 0) || (calls >= 0 && flush >= 0)))
        t->type[end] = TT_USER;
    /* gemma4 and paddleocr: </s> is not one either */
    if (tool >= 0 && s_end >= 0)
        t->type[s_end] = TT_NORMAL;
}

static void set_scores_types(as_tokenizer *t, const as_tokenizer_spec *sp)
{
    for (size_t i = 0; i < t->n; i++) {
        float s = sp->scores ? sp->scores[i] : 0.0f;
        t->score[i] = isnan(s) ? -INFINITY : s; /* NaN would break the heap order */
        int32_t ty = sp->token_types ? sp->token_types[i] : guess_type(t, i);
        t->type[i] = (ty >= TT_NORMAL && ty <= TT_BYTE) ? (uint8_t)ty : TT_NORMAL;
        if (t->algo->kind == AS_TOK_NONE)
            t->type[i] = TT_CONTROL; /* "#17" stands for no bytes */
    }
    /* Without token types (a llama2.c tokenizer), BOS and EOS are control:
     * the header promises they decode to nothing. With types, the file's
     * word stands, as in llama.cpp. */
    if (!sp->token_types && t->bos >= 0)
        t->type[t->bos] = TT_CONTROL;
    if (!sp->token_types && t->eos >= 0)
        t->type[t->eos] = TT_CONTROL;
    if (t->algo->kind != AS_TOK_NONE)
        llama_cpp_types(t);
}

static bool from_plain_text(const as_tokenizer *t, size_t i)
{
    return t->type[i] == TT_NORMAL || (!t->algo->byte_fallback && t->type[i] == TT_BYTE);
}

static int build_maps(as_tokenizer *t, as_error *err)
{
    if (!strmap_init(&t->all, t->n) || !strmap_init(&t->plain, t->n))
        return as_tok_oom(err);
    for (size_t i = 0; i < t->n; i++) {
        if (t->len[i] == 0)
            continue; /* an empty token can never be looked up */
        strmap_put(t, &t->all, (int32_t)i);
        if (!from_plain_text(t, i))
            continue;
        strmap_put(t, &t->plain, (int32_t)i);
        if (t->len[i] > t->max_plain_len)
            t->max_plain_len = t->len[i];
        const uint8_t *s = (const uint8_t *)t->arena + t->off[i];
        for (size_t j = 1; j < t->len[i]; j++) {
            unsigned pair = (unsigned)s[j - 1] << 8 | s[j];
            t->pair_seen[pair >> 6] |= 1ull << (pair & 63);
        }
    }
    return AS_OK;
}

static void find_byte_tokens(as_tokenizer *t)
{
    for (int b = 0; b < 256; b++)
        t->byte_tok[b] = t->algo->byte_token(t, (uint8_t)b);
}

typedef struct lenid {
    uint32_t len;
    int32_t id;
} lenid;

static int cmp_lenid(const void *pa, const void *pb)
{
    const lenid *a = pa, *b = pb;
    if (a->len != b->len)
        return a->len > b->len ? -1 : 1;
    return (a->id > b->id) - (a->id < b->id);
}

static bool is_special(const as_tokenizer *t, size_t i)
{
    uint8_t ty = t->type[i];
    return (ty == TT_USER || ty == TT_CONTROL || ty == TT_UNKNOWN) && t->len[i] > 0;
}

/* llama.cpp's cache_special_tokens: control, user-defined and unknown
 * tokens, cut out of the text longest first (its sort is not stable;
 * equal lengths go here by id). */
static int collect_special_tokens(as_tokenizer *t, as_error *err)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += is_special(t, i);
    if (n == 0 || t->algo->kind == AS_TOK_NONE)
        return AS_OK;
    lenid *v = malloc(n * sizeof *v);
    if (!v || !(t->special = malloc(n * sizeof *t->special))) {
        free(v);
        return as_tok_oom(err);
    }
    for (size_t i = 0, k = 0; i < t->n; i++)
        if (is_special(t, i))
            v[k++] = (lenid){t->len[i], (int32_t)i};
    qsort(v, n, sizeof *v, cmp_lenid);
    for (size_t i = 0; i < n; i++)
        t->special[i] = v[i].id;
    t->n_special = n;
    free(v);
    return AS_OK;
}

/* gpt2: the pre-tokenizer spec->pre names; an unknown name runs GPT-2's
 * split, with a warning (llama.cpp refuses the file). */
static int choose_pre(as_tokenizer *t, const as_tokenizer_spec *sp, as_error *err)
{
    if (t->algo->kind != AS_TOK_GPT2)
        return AS_OK;
    const char *name = sp->pre ? sp->pre : "gpt-2";
    snprintf(t->pre_name, sizeof t->pre_name, "%s", name);
    t->pre = name[0] ? as_tok_pre_find(name) : as_tok_pre_type("default");
    if (!t->pre) {
        t->pre = as_tok_pre_type("gpt2");
        snprintf(t->warning, sizeof t->warning,
                 "pre-tokenizer '%.60s' is unknown to attnscope: text is split as GPT-2 splits it, "
                 "so ids may differ from llama.cpp's (which refuses this file)",
                 name);
    }
    t->ignore_merges = t->pre->ignore_merges;
    return as_tok_pre_compile(t, err);
}

/* spec.pair: "ID:T", "$A:T", "$B:T" items, space-separated, each text once. */
static int parse_pair(as_tokenizer *t, const char *s, as_error *err)
{
    if (!s)
        return AS_OK;
    size_t cap = strlen(s) / 2 + 1, n = 0;
    bool a = false, b = false;
    if (!(t->pair_item = malloc(cap * sizeof *t->pair_item)) || !(t->pair_type = malloc(cap * sizeof *t->pair_type)))
        return as_tok_oom(err);
    for (const char *p = s; *p;) {
        while (*p == ' ')
            p++;
        if (!*p)
            break;
        long item, ty;
        char *end;
        if (p[0] == '$' && (p[1] == 'A' || p[1] == 'B')) {
            item = p[1] == 'A' ? -1 : -2;
            if ((item == -1 && a) || (item == -2 && b))
                return as_error_set(err, "tokenizer.attnscope.pair '%.60s': $%c twice", s, p[1]);
            a |= item == -1, b |= item == -2;
            end = (char *)p + 2;
        } else {
            item = strtol(p, &end, 10);
            if (end == p || item < 0 || (size_t)item >= t->n)
                return as_error_set(err, "tokenizer.attnscope.pair '%.60s': '%.12s' is no token id", s, p);
        }
        if (*end != ':' || (ty = strtol(end + 1, &end, 10), ty < 0 || ty > 1023) || (*end && *end != ' ') || n >= cap)
            return as_error_set(err, "tokenizer.attnscope.pair '%.60s': expected ID:TYPE or $A:TYPE items", s);
        t->pair_item[n] = (int32_t)item, t->pair_type[n++] = (int32_t)ty;
        p = end;
    }
    if (!a || !b)
        return as_error_set(err, "tokenizer.attnscope.pair '%.60s': needs $A and $B", s);
    t->n_pair = n;
    return AS_OK;
}

static int build(as_tokenizer *t, const as_tok_algo *algo, const as_tokenizer_spec *sp,
                 as_error *err)
{
    t->algo = algo;
    t->n = sp->n_tokens;
    t->bos = sp->bos_id < 0 ? -1 : sp->bos_id;
    t->eos = sp->eos_id < 0 ? -1 : sp->eos_id;
    t->unk = sp->unk_id < 0 ? -1 : sp->unk_id;
    t->sep = t->pad = t->mask = -1; /* bert's build sets them */
    t->add_bos = sp->add_bos;
    t->add_eos = sp->add_eos;
    t->add_space_prefix = algo->space_prefix && sp->add_space_prefix;
    t->nfc = sp->nfc && algo->kind != AS_TOK_NONE;
    t->off = malloc(t->n * sizeof *t->off);
    t->len = malloc(t->n * sizeof *t->len);
    t->score = malloc(t->n * sizeof *t->score);
    t->type = malloc(t->n);
    if (!t->off || !t->len || !t->score || !t->type)
        return as_tok_oom(err);
    if (copy_tokens(t, sp, err))
        return AS_ERR;
    set_scores_types(t, sp);
    if (build_maps(t, err))
        return AS_ERR;
    find_byte_tokens(t);
    if (algo->build && algo->build(t, sp, err))
        return AS_ERR;
    if (choose_pre(t, sp, err) || parse_pair(t, sp->pair, err))
        return AS_ERR;
    return collect_special_tokens(t, err);
}

int as_tokenizer_new(as_tokenizer **out, const as_tokenizer_spec *spec, as_error *err)
{
    if (!out)
        return as_error_set(err, "tokenizer: no output pointer given");
    *out = NULL;
    const as_tok_algo *algo = NULL;
    if (check_spec(spec, &algo, err))
        return AS_ERR;
    as_tokenizer *t = calloc(1, sizeof *t);
    if (!t)
        return as_tok_oom(err);
    if (build(t, algo, spec, err)) {
        as_tokenizer_free(t);
        return AS_ERR;
    }
    *out = t;
    return AS_OK;
}

int as_tokenizer_labels(as_tokenizer **out, const char *const *names, const uint64_t *lens, size_t n,
                        as_error *err)
{
    as_tokenizer_spec sp = {.kind = AS_TOK_NONE, .tokens = names, .token_lens = lens, .n_tokens = n,
                            .bos_id = -1, .eos_id = -1, .unk_id = -1};
    return as_tokenizer_new(out, &sp, err);
}

void as_tokenizer_free(as_tokenizer *t)
{
    if (!t)
        return;
    free(t->arena);
    free(t->off);
    free(t->len);
    free(t->score);
    free(t->type);
    free(t->all.slot);
    free(t->plain.slot);
    free(t->merges.key);
    free(t->merges.rank);
    free(t->merges.result);
    free(t->special);
    free(t->strip);
    free(t->lens_desc);
    free(t->pair_item);
    free(t->pair_type);
    as_tok_pre_free(t);
    as_tok_ugm_free(t->ugm);
    free(t);
}

/* ---------------------------------------------------------------- GGUF */

static const char *gguf_name(const as_gguf *g)
{
    return g->path ? g->path : "gguf";
}

/* An array key: must hold strings (want_str) or numbers, and at least n
 * entries when n > 0 (llama.cpp reads tokens' scores/types by index). */
static int gguf_array(const as_gguf *g, const char *key, bool want_str, uint64_t n,
                      const as_gguf_kv **out, as_error *err)
{
    const as_gguf_kv *kv = as_gguf_find(g, key);
    *out = kv;
    if (!kv)
        return AS_OK;
    bool ok = kv->type == AS_GGUF_ARRAY &&
              (want_str ? kv->arr_type == AS_GGUF_STRING
                        : kv->arr_type != AS_GGUF_STRING && kv->arr_type != AS_GGUF_BOOL &&
                              kv->arr_type != AS_GGUF_ARRAY);
    if (!ok)
        return as_error_set(err, "%s: key '%s': expected an array of %s, found %s%s%s", gguf_name(g),
                            key, want_str ? "strings" : "numbers", as_gguf_type_name(kv->type),
                            kv->type == AS_GGUF_ARRAY ? " of " : "",
                            kv->type == AS_GGUF_ARRAY ? as_gguf_type_name(kv->arr_type) : "");
    if (n && kv->arr_len < n)
        return as_error_set(err,
                            "%s: key '%s' has %llu entries but tokenizer.ggml.tokens has %llu",
                            gguf_name(g), key, (unsigned long long)kv->arr_len,
                            (unsigned long long)n);
    return AS_OK;
}

/* As llama.cpp: a default outside the vocabulary is dropped, and an id in
 * the file outside the vocabulary is ignored (the default stays). */
static int gguf_special(const as_gguf *g, const char *key, int32_t def, size_t n, int32_t *out,
                        as_error *err)
{
    uint32_t v = UINT32_MAX;
    if (as_gguf_get_u32_opt(g, key, &v, err))
        return AS_ERR;
    if (def >= 0 && (size_t)def >= n)
        def = -1;
    *out = (size_t)v < n ? (int32_t)v : def;
    return AS_OK;
}

typedef struct gguf_vocab {
    const as_gguf_kv *tokens, *scores, *types, *merges;
} gguf_vocab;

static int gguf_algo(const as_gguf *g, const as_tok_algo **algo, as_error *err)
{
    const char *model;
    if (as_gguf_get_str(g, "tokenizer.ggml.model", &model, err))
        return AS_ERR;
    if ((*algo = algo_named(model)))
        return AS_OK;
    char names[128];
    algo_names(names, sizeof names);
    return as_error_set(err,
                        "%s: key 'tokenizer.ggml.model': tokenizer '%s' is not supported "
                        "(expected %s)",
                        gguf_name(g), model, names);
}

static int gguf_arrays(const as_gguf *g, const as_tok_algo *algo, gguf_vocab *v, as_error *err)
{
    if (gguf_array(g, "tokenizer.ggml.tokens", true, 0, &v->tokens, err))
        return AS_ERR;
    if (!v->tokens)
        return as_error_set(err, "%s: key 'tokenizer.ggml.tokens' is missing", gguf_name(g));
    uint64_t n = v->tokens->arr_len;
    if (n == 0)
        return as_error_set(err, "%s: key 'tokenizer.ggml.tokens' is an empty array", gguf_name(g));
    if (n >= (uint64_t)INT32_MAX)
        return as_error_set(err, "%s: key 'tokenizer.ggml.tokens' has %llu entries, too many",
                            gguf_name(g), (unsigned long long)n);
    if (gguf_array(g, "tokenizer.ggml.scores", false, n, &v->scores, err) ||
        gguf_array(g, "tokenizer.ggml.token_type", false, n, &v->types, err) ||
        gguf_array(g, "tokenizer.ggml.merges", true, 0, &v->merges, err))
        return AS_ERR;
    if (algo->needs_merges && !v->merges)
        return as_error_set(err, "%s: key 'tokenizer.ggml.merges' is missing (needed by a %s tokenizer)",
                            gguf_name(g), algo->gguf_model);
    return AS_OK;
}

/* An optional string key: NULL when absent, an error when not a string. */
static int gguf_str_opt(const as_gguf *g, const char *key, const char **out, as_error *err)
{
    const as_gguf_kv *kv = as_gguf_find(g, key);
    *out = NULL;
    if (kv && kv->type != AS_GGUF_STRING)
        return as_error_set(err, "%s: key '%s': expected a string, found %s", gguf_name(g), key,
                            as_gguf_type_name(kv->type));
    *out = kv ? kv->str : NULL;
    return AS_OK;
}

/* tokenizer.ggml.pre ("" when absent: llama.cpp's "default") and, from
 * the pre-tokenizer it names, the BOS default. */
static int gguf_pre(const as_gguf *g, const as_tok_algo *algo, as_tokenizer_spec *sp, as_error *err)
{
    const char *pre;
    if (gguf_str_opt(g, "tokenizer.ggml.pre", &pre, err))
        return AS_ERR;
    sp->add_bos = algo->add_bos;
    sp->add_eos = algo->add_eos;
    if (algo->kind != AS_TOK_GPT2)
        return AS_OK;
    sp->pre = pre ? pre : "";
    const as_tok_pre *p = sp->pre[0] ? as_tok_pre_find(sp->pre) : NULL;
    if (p && p->add_bos)
        sp->add_bos = true;
    return AS_OK;
}

static int gguf_flags(const as_gguf *g, const as_tok_algo *algo, as_tokenizer_spec *sp, as_error *err)
{
    sp->add_space_prefix = algo->space_prefix;
    if (gguf_special(g, "tokenizer.ggml.bos_token_id", algo->bos, sp->n_tokens, &sp->bos_id, err) ||
        gguf_special(g, "tokenizer.ggml.eos_token_id", algo->eos, sp->n_tokens, &sp->eos_id, err) ||
        gguf_special(g, "tokenizer.ggml.unknown_token_id", algo->unk, sp->n_tokens, &sp->unk_id, err) ||
        as_gguf_get_bool_opt(g, "tokenizer.ggml.add_bos_token", &sp->add_bos, err) ||
        as_gguf_get_bool_opt(g, "tokenizer.ggml.add_eos_token", &sp->add_eos, err) ||
        as_gguf_get_bool_opt(g, "tokenizer.ggml.add_space_prefix", &sp->add_space_prefix, err) ||
        as_gguf_get_bool_opt(g, "tokenizer.attnscope.nfc", &sp->nfc, err) ||
        gguf_str_opt(g, "tokenizer.attnscope.pair", &sp->pair, err))
        return AS_ERR;
    return AS_OK;
}

/* t5: the precompiled charsmap (an array of bytes, as llama.cpp reads
 * it: uint8 or int8) and remove_extra_whitespaces (off when absent). */
static int gguf_t5(const as_gguf *g, as_tokenizer_spec *sp, as_error *err)
{
    if (sp->kind != AS_TOK_T5)
        return AS_OK;
    if (as_gguf_get_bool_opt(g, "tokenizer.ggml.remove_extra_whitespaces", &sp->remove_extra_whitespaces, err))
        return AS_ERR;
    const as_gguf_kv *kv = as_gguf_find(g, "tokenizer.ggml.precompiled_charsmap");
    if (!kv)
        return AS_OK;
    if (kv->type != AS_GGUF_ARRAY || (kv->arr_type != AS_GGUF_UINT8 && kv->arr_type != AS_GGUF_INT8))
        return as_error_set(err, "%s: key 'tokenizer.ggml.precompiled_charsmap': expected an array of uint8, "
                                 "found %s%s%s", gguf_name(g), as_gguf_type_name(kv->type),
                            kv->type == AS_GGUF_ARRAY ? " of " : "",
                            kv->type == AS_GGUF_ARRAY ? as_gguf_type_name(kv->arr_type) : "");
    sp->charsmap = kv->arr_data ? kv->arr_data : (const uint8_t *)""; /* empty: refused as too short */
    sp->charsmap_len = (size_t)kv->arr_len;
    return AS_OK;
}

/* bert: [SEP], [PAD] and [MASK] with llama.cpp's WPM defaults (BERT's own
 * ids), and its normalizer keys: lower-casing on unless the file says
 * otherwise, accent stripping as lower-casing unless the file says; or
 * ours, the tokenizers library's steps and word limit. */
static int gguf_bert(const as_gguf *g, as_tokenizer_spec *sp, as_error *err)
{
    sp->sep_id = sp->pad_id = sp->mask_id = -1;
    if (sp->kind != AS_TOK_BERT)
        return AS_OK;
    bool lower = true, strip;
    if (gguf_special(g, "tokenizer.ggml.seperator_token_id", 102, sp->n_tokens, &sp->sep_id, err) ||
        gguf_special(g, "tokenizer.ggml.padding_token_id", 0, sp->n_tokens, &sp->pad_id, err) ||
        gguf_special(g, "tokenizer.ggml.mask_token_id", 103, sp->n_tokens, &sp->mask_id, err) ||
        as_gguf_get_bool_opt(g, "tokenizer.ggml.normalizer.lowercase", &lower, err))
        return AS_ERR;
    strip = lower;
    if (as_gguf_get_bool_opt(g, "tokenizer.ggml.normalizer.strip_accents", &strip, err) ||
        gguf_str_opt(g, "tokenizer.attnscope.normalizer", &sp->normalizer, err) ||
        as_gguf_get_u32_opt(g, "tokenizer.attnscope.max_word_chars", &sp->max_word_chars, err))
        return AS_ERR;
    sp->keep_case = !lower;
    sp->keep_accents = !strip;
    return AS_OK;
}

/* llama.cpp reads [CLS] from bos_token_id and ignores cls_token_id: say so
 * when a file's cls_token_id names another token. */
static void warn_cls(as_tokenizer *t, const as_gguf *g)
{
    uint32_t cls = UINT32_MAX;
    as_error ignored;
    if (t->algo->kind != AS_TOK_BERT ||
        as_gguf_get_u32_opt(g, "tokenizer.ggml.cls_token_id", &cls, &ignored) || cls == UINT32_MAX ||
        (int64_t)cls == t->bos)
        return;
    if (t->bos < 0)
        snprintf(t->warning, sizeof t->warning,
                 "tokenizer.ggml.cls_token_id is %u, but llama.cpp reads [CLS] from bos_token_id (absent "
                 "here, and its default 101 is past the vocabulary): no [CLS] is added", cls);
    else
        snprintf(t->warning, sizeof t->warning,
                 "tokenizer.ggml.cls_token_id is %u, but llama.cpp reads [CLS] from bos_token_id (else 101): "
                 "token %d is added", cls, (int)t->bos);
}

static bool contains_lower(const char *s, const char *needle)
{
    char buf[256];
    size_t n = 0;
    for (; s && *s && n + 1 < sizeof buf; s++)
        buf[n++] = (char)((*s >= 'A' && *s <= 'Z') ? *s + 32 : *s);
    buf[n] = '\0';
    return strstr(buf, needle) != NULL;
}

static void set_strip(as_tokenizer *t, const char *text, uint8_t bit, bool on)
{
    int32_t id = as_tok_lookup(t, &t->all, text, strlen(text));
    if (id >= 0)
        t->strip[id] = on ? (uint8_t)(t->strip[id] | bit) : (uint8_t)(t->strip[id] & ~bit);
}

/* llama.cpp's per-model token attributes, chosen by the file's name,
 * pre-tokenizer and architecture: phi-3 drops the whitespace after its
 * special tokens (but <unk>, <s> and <|endoftext|>), jina-v2 and
 * modern-bert the whitespace before their mask token. */
static int gguf_strip(as_tokenizer *t, const as_gguf *g, as_error *err)
{
    const char *name, *arch;
    if (gguf_str_opt(g, "general.name", &name, err) || gguf_str_opt(g, "general.architecture", &arch, err))
        return AS_ERR;
    bool phi3 = contains_lower(name, "phi-3") || contains_lower(name, "phi3");
    bool jina = strstr(t->pre_name, "jina-v2-de") || strstr(t->pre_name, "jina-v2-es") ||
                strstr(t->pre_name, "jina-v2-code") || (arch && (strstr(arch, "nomic-bert-moe") ||
                                                                strstr(arch, "jina-bert-v3")));
    bool mbert = contains_lower(name, "modern-bert");
    if (!phi3 && !jina && !mbert)
        return AS_OK;
    if (!(t->strip = calloc(t->n, 1)))
        return as_tok_oom(err);
    if (jina)
        set_strip(t, "<mask>", STRIP_LEFT, true);
    else if (phi3) {
        for (size_t i = 0; i < t->n_special; i++)
            t->strip[t->special[i]] |= STRIP_RIGHT;
        set_strip(t, "</s>", STRIP_RIGHT, true);
        set_strip(t, "<unk>", STRIP_RIGHT, false);
        set_strip(t, "<s>", STRIP_RIGHT, false);
        set_strip(t, "<|endoftext|>", STRIP_RIGHT, false);
    } else {
        set_strip(t, "[MASK]", STRIP_LEFT, true);
    }
    return AS_OK;
}

/* "none": no vocabulary, only a size, which llama.cpp reads from the
 * architecture's vocab_size. */
static int gguf_none(as_tokenizer **out, const as_gguf *g, as_error *err)
{
    const char *arch;
    uint32_t n = 0;
    char key[96];
    if (as_gguf_get_str(g, "general.architecture", &arch, err))
        return AS_ERR;
    snprintf(key, sizeof key, "%.80s.vocab_size", arch);
    if (!as_gguf_find(g, key))
        return as_error_set(err, "%s: tokenizer.ggml.model is 'none' (no vocabulary) and key '%s' is missing: "
                                 "the number of token ids is unknown", gguf_name(g), key);
    if (as_gguf_get_u32(g, key, &n, err))
        return AS_ERR;
    as_tokenizer_spec sp = {.kind = AS_TOK_NONE, .n_tokens = n, .bos_id = -1, .eos_id = -1, .unk_id = -1};
    if (as_tokenizer_new(out, &sp, err)) {
        as_error_prefix(err, "%s: key '%s'", gguf_name(g), key);
        return AS_ERR;
    }
    return AS_OK;
}

/* Scores and types are converted to the spec's float/int32 arrays (the
 * file's may be any numeric type and are unaligned). */
static int gguf_numbers(const gguf_vocab *v, size_t n, float **scores, int32_t **types, as_error *err)
{
    if (v->scores && !(*scores = malloc(n * sizeof **scores)))
        return as_tok_oom(err);
    if (v->types && !(*types = malloc(n * sizeof **types)))
        return as_tok_oom(err);
    for (size_t i = 0; i < n; i++) {
        if (v->scores)
            (*scores)[i] = (float)as_gguf_arr_f64(v->scores, i);
        if (v->types) {
            int64_t ty = as_gguf_arr_i64(v->types, i);
            (*types)[i] = (ty >= INT32_MIN && ty <= INT32_MAX) ? (int32_t)ty : 0;
        }
    }
    return AS_OK;
}

int as_tokenizer_from_gguf(as_tokenizer **out, const as_gguf *g, as_error *err)
{
    if (!out || !g)
        return as_error_set(err, "tokenizer: no output pointer or GGUF given");
    *out = NULL;
    as_tokenizer_spec sp = {0};
    gguf_vocab v = {0};
    const as_tok_algo *algo = NULL;
    if (gguf_algo(g, &algo, err))
        return AS_ERR;
    if (algo->kind == AS_TOK_NONE)
        return gguf_none(out, g, err);
    if (gguf_arrays(g, algo, &v, err))
        return AS_ERR;
    sp.kind = algo->kind;
    sp.tokens = (const char *const *)v.tokens->strs;
    sp.token_lens = v.tokens->str_lens;
    sp.n_tokens = (size_t)v.tokens->arr_len;
    if (v.merges) {
        sp.merges = (const char *const *)v.merges->strs;
        sp.n_merges = (size_t)v.merges->arr_len;
    }
    if (gguf_pre(g, algo, &sp, err) || gguf_flags(g, algo, &sp, err) || gguf_bert(g, &sp, err) ||
        gguf_t5(g, &sp, err))
        return AS_ERR;
    float *scores = NULL;
    int32_t *types = NULL;
    int rc = gguf_numbers(&v, sp.n_tokens, &scores, &types, err);
    if (rc == AS_OK) {
        sp.scores = scores;
        sp.token_types = types;
        if ((rc = as_tokenizer_new(out, &sp, err)) != AS_OK)
            as_error_prefix(err, "%s", gguf_name(g));
    }
    free(scores);
    free(types);
    if (rc == AS_OK && (rc = gguf_strip(*out, g, err)) != AS_OK) {
        as_tokenizer_free(*out);
        *out = NULL;
    }
    if (rc == AS_OK)
        warn_cls(*out, g);
    return rc;
}

/* ---------------------------------------------------------------- accessors */

as_tok_kind as_tokenizer_kind(const as_tokenizer *t) { return t->algo->kind; }
size_t as_tokenizer_vocab_size(const as_tokenizer *t) { return t->n; }
int32_t as_tokenizer_bos(const as_tokenizer *t) { return t->bos; }
int32_t as_tokenizer_eos(const as_tokenizer *t) { return t->eos; }

/* True when encode should be asked for a BOS and there is one to add. */
bool as_tokenizer_add_bos(const as_tokenizer *t) { return t->add_bos && t->bos >= 0; }
bool as_tokenizer_add_eos(const as_tokenizer *t) { return t->add_eos && t->eos >= 0; }
int32_t as_tokenizer_sep(const as_tokenizer *t) { return t->sep; }
int32_t as_tokenizer_mask(const as_tokenizer *t) { return t->mask; }
int32_t as_tokenizer_pad(const as_tokenizer *t) { return t->pad; }
const char *as_tokenizer_pre(const as_tokenizer *t) { return t->pre ? t->pre->type : NULL; }
bool as_tokenizer_ignore_merges(const as_tokenizer *t) { return t->ignore_merges; }
const char *as_tokenizer_warning(const as_tokenizer *t) { return t->warning; }

const char *as_tokenizer_piece(const as_tokenizer *t, int32_t id)
{
    if (!t || id < 0 || (size_t)id >= t->n)
        return NULL;
    return t->arena + t->off[id];
}

int32_t as_tokenizer_find(const as_tokenizer *t, const char *piece)
{
    if (!t || !piece || !*piece)
        return -1;
    return as_tok_lookup(t, &t->all, piece, strlen(piece));
}

/* ---------------------------------------------------------------- encode scratch */

DEFINE_RESERVE(reserve_hent, hent)
DEFINE_RESERVE(reserve_frag, frag)
DEFINE_RESERVE(reserve_i32, int32_t)
DEFINE_RESERVE(reserve_size, size_t)

static void work_free(work *w)
{
    free(w->heap);
    free(w->bs);
    free(w->ss);
    free(w->cps);
    free(w->pieces);
    free(w->pieces2);
    free(w->sym_c);
    free(w->sym_w);
    free(w->rxs.f);
    free(w->esc);
    free(w->fr);
    free(w->fr2);
    free(w->ids);
    free(w->ends);
    free(w->hash);
}

int as_tok_push_id(work *w, int32_t id, as_error *err)
{
    if (!reserve_i32(&w->ids, &w->capids, w->nids + 1))
        return as_tok_oom(err);
    w->ids[w->nids++] = id;
    return AS_OK;
}

int as_tok_push_end(work *w, size_t end, as_error *err)
{
    if (!reserve_size(&w->ends, &w->capends, w->nends + 1))
        return as_tok_oom(err);
    w->ends[w->nends++] = end;
    return AS_OK;
}

static bool hent_before(const hent *x, const hent *y)
{
    return x->key < y->key || (x->key == y->key && x->left < y->left);
}

bool as_tok_heap_push(work *w, hent e)
{
    if (!reserve_hent(&w->heap, &w->capheap, w->nheap + 1))
        return false;
    size_t i = w->nheap++;
    while (i > 0 && hent_before(&e, &w->heap[(i - 1) / 2])) {
        w->heap[i] = w->heap[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    w->heap[i] = e;
    return true;
}

hent as_tok_heap_pop(work *w)
{
    hent top = w->heap[0], last = w->heap[--w->nheap];
    size_t i = 0, n = w->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && hent_before(&w->heap[c + 1], &w->heap[c]))
            c++;
        if (!hent_before(&w->heap[c], &last))
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n)
        w->heap[i] = last;
    return top;
}

/* A byte no symbol covers: its byte token, else unk, else an error. */
int as_tok_push_byte(const as_tokenizer *t, uint8_t b, work *w, as_error *err)
{
    int32_t id = t->byte_tok[b] >= 0 ? t->byte_tok[b] : t->unk;
    if (id < 0)
        return as_error_set(err,
                            "tokenizer: byte 0x%02X has no token (the vocabulary has no %s for it "
                            "and no unknown token)",
                            b, t->algo->byte_token_name);
    return as_tok_push_id(w, id, err);
}

/* ---------------------------------------------------------------- partition */

/* First occurrence of needle in hay, or NULL (portable memmem). */
static const char *find_bytes(const char *hay, size_t n, const char *needle, size_t m)
{
    if (m == 0 || m > n)
        return NULL;
    const char *end = hay + (n - m) + 1;
    for (const char *p = hay; p < end; p++) {
        p = memchr(p, needle[0], (size_t)(end - p));
        if (!p)
            return NULL;
        if (memcmp(p, needle, m) == 0)
            return p;
    }
    return NULL;
}

static bool add_frag(frag **v, size_t *n, size_t *cap, frag f)
{
    if (!reserve_frag(v, cap, *n + 1))
        return false;
    (*v)[(*n)++] = f;
    return true;
}

static bool space_byte(char c)
{
    return c == ' ' || (c >= '\t' && c <= '\r'); /* isspace in the C locale */
}

/* Cuts every occurrence of special token u out of the raw fragments (fr
 * -> fr2, then swapped), as one pass of llama.cpp's
 * tokenizer_st_partition, dropping the whitespace before it (lstrip) or
 * after it (rstrip) where the token is marked so. */
static bool cut_special(const as_tokenizer *t, int32_t u, const char *text, work *w)
{
    const char *tu = t->arena + t->off[u];
    size_t lu = t->len[u], n2 = 0;
    uint8_t strip = t->strip ? t->strip[u] : 0;
    for (size_t i = 0; i < w->nfr; i++) {
        frag f = w->fr[i];
        size_t pos = f.off, end = f.off + f.len;
        const char *p;
        while (f.id < 0 && pos < end && (p = find_bytes(text + pos, end - pos, tu, lu))) {
            size_t at = (size_t)(p - text), left = at;
            if (strip & STRIP_LEFT)
                while (left > pos && space_byte(text[left - 1]))
                    left--;
            if (left > pos && !add_frag(&w->fr2, &n2, &w->capfr2, (frag){pos, left - pos, -1}))
                return false;
            if (!add_frag(&w->fr2, &n2, &w->capfr2, (frag){at, lu, u}))
                return false;
            pos = at + lu;
            if (strip & STRIP_RIGHT)
                while (pos < end && space_byte(text[pos]))
                    pos++;
        }
        frag rest = f.id < 0 ? (frag){pos, end - pos, -1} : f;
        if (rest.len && !add_frag(&w->fr2, &n2, &w->capfr2, rest))
            return false;
    }
    frag *tmp = w->fr;
    size_t tcap = w->capfr;
    w->fr = w->fr2, w->capfr = w->capfr2, w->nfr = n2;
    w->fr2 = tmp, w->capfr2 = tcap;
    return true;
}

static int partition(const as_tokenizer *t, const char *text, size_t len, bool parse_special, work *w,
                     as_error *err)
{
    w->nfr = 0;
    if (len && !add_frag(&w->fr, &w->nfr, &w->capfr, (frag){0, len, -1}))
        return as_tok_oom(err);
    for (size_t k = 0; k < t->n_special && w->nfr; k++) {
        int32_t u = t->special[k];
        if (!parse_special && t->type[u] != TT_USER)
            continue; /* control and unknown tokens only when asked */
        /* a cheap whole-text test first: most special tokens never occur */
        if (!find_bytes(text, len, t->arena + t->off[u], t->len[u]))
            continue;
        if (!cut_special(t, u, text, w))
            return as_tok_oom(err);
    }
    return AS_OK;
}

/* ---------------------------------------------------------------- encode */

/* A raw fragment goes to the algorithm, in NFC first where the
 * tokenizer asks (not for pretokens, whose ends are offsets into the text
 * as given). */
static int encode_fragment(const as_tokenizer *t, const char *text, const frag *f, work *w,
                           as_error *err)
{
    if (f->id >= 0)
        return w->ends_only ? as_tok_push_end(w, f->off + f->len, err) : as_tok_push_id(w, f->id, err);
    if (!t->nfc || w->ends_only)
        return t->algo->encode(t, text + f->off, f->len, f->off, w, err);
    char *norm;
    size_t n;
    if (as_tok_nfc(text + f->off, f->len, &norm, &n, err))
        return AS_ERR;
    int rc = t->algo->encode(t, norm, n, f->off, w, err);
    free(norm);
    return rc;
}

int as_tokenizer_nfc(const char *s, size_t n, char **out, size_t *out_n, as_error *err)
{
    if ((!s && n) || !out || !out_n)
        return as_error_set(err, "tokenizer: nfc called with a NULL argument");
    return as_tok_nfc(s ? s : "", n, out, out_n, err);
}

static int run(const as_tokenizer *t, const char *text, size_t len, bool parse_special, work *w,
               as_error *err)
{
    if (t->algo->kind == AS_TOK_NONE)
        return t->algo->encode(t, text, len, 0, w, err);
    if (len > MAX_TEXT_BYTES)
        return as_error_set(err, "tokenizer: text of %zu bytes is too long (limit %zu)", len,
                            MAX_TEXT_BYTES);
    if (partition(t, text, len, parse_special, w, err))
        return AS_ERR;
    for (size_t i = 0; i < w->nfr; i++)
        if (encode_fragment(t, text, &w->fr[i], w, err))
            return AS_ERR;
    return AS_OK;
}

/* BOS (bos), the text, then when end: EOS (add_eos) or, for bert, SEP:
 * as llama.cpp's tokenize. */
static int encode_all(const as_tokenizer *t, const char *text, size_t len, bool bos, bool parse_special,
                      bool end, int32_t **ids, size_t *n_ids, as_error *err)
{
    if (!t || !ids || !n_ids || (!text && len))
        return as_error_set(err, "tokenizer: encode called with a NULL argument");
    *ids = NULL;
    *n_ids = 0;
    work w = {0};
    int rc = AS_OK;
    if (bos && t->bos >= 0)
        rc = as_tok_push_id(&w, t->bos, err);
    if (rc == AS_OK)
        rc = run(t, text ? text : "", len, parse_special, &w, err);
    if (rc == AS_OK && end && t->add_eos && t->eos >= 0)
        rc = as_tok_push_id(&w, t->eos, err);
    if (rc == AS_OK && end && t->add_sep && t->sep >= 0)
        rc = as_tok_push_id(&w, t->sep, err);
    if (rc == AS_OK && !w.ids && !reserve_i32(&w.ids, &w.capids, 1))
        rc = as_tok_oom(err); /* callers get a pointer to free even for no ids */
    if (rc == AS_OK) {
        *ids = w.ids, *n_ids = w.nids;
        w.ids = NULL;
    }
    work_free(&w);
    return rc;
}

int as_tokenizer_encode(const as_tokenizer *t, const char *text, size_t len, bool add_bos,
                        int32_t **ids, size_t *n_ids, as_error *err)
{
    return encode_all(t, text, len, add_bos, false, false, ids, n_ids, err);
}

int as_tokenizer_tokenize(const as_tokenizer *t, const char *text, size_t len, unsigned flags,
                          int32_t **ids, size_t *n_ids, as_error *err)
{
    bool special = flags & AS_TOK_ADD_SPECIAL;
    return encode_all(t, text, len, t && special && t->add_bos, flags & AS_TOK_PARSE_SPECIAL, special, ids,
                      n_ids, err);
}

/* The pair as the tokenizer's template makes it. */
static int template_pair(const as_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen,
                         unsigned parse, int32_t **ids, int32_t **types, size_t *n_ids, size_t *n_a, as_error *err)
{
    int32_t *ia = NULL, *ib = NULL;
    size_t na = 0, nb = 0;
    if (as_tokenizer_tokenize(t, a ? a : "", alen, parse, &ia, &na, err) ||
        as_tokenizer_tokenize(t, b ? b : "", blen, parse, &ib, &nb, err)) {
        free(ia);
        return AS_ERR;
    }
    size_t n = na + nb + t->n_pair, k = 0;
    *ids = malloc(n * sizeof **ids);
    *types = malloc(n * sizeof **types);
    if (!*ids || !*types) {
        free(*ids), free(*types), free(ia), free(ib);
        *ids = *types = NULL;
        return as_tok_oom(err);
    }
    for (size_t i = 0; i < t->n_pair; i++) {
        int32_t it = t->pair_item[i];
        const int32_t *src = it == -1 ? ia : it == -2 ? ib : &t->pair_item[i];
        size_t m = it == -1 ? na : it == -2 ? nb : 1;
        if (it == -2)
            *n_a = k;
        for (size_t j = 0; j < m; j++)
            (*ids)[k] = src[j], (*types)[k++] = t->pair_type[i];
    }
    *n_ids = k;
    free(ia), free(ib);
    return AS_OK;
}

int as_tokenizer_tokenize_pair(const as_tokenizer *t, const char *a, size_t alen, const char *b, size_t blen,
                               unsigned flags, int32_t **ids, int32_t **types, size_t *n_ids, size_t *n_a,
                               as_error *err)
{
    if (!t || !ids || !types || !n_ids || !n_a || (!a && alen) || (!b && blen))
        return as_error_set(err, "tokenizer: tokenize_pair called with a NULL argument");
    *ids = *types = NULL, *n_ids = *n_a = 0;
    if (t->n_pair)
        return template_pair(t, a, alen, b, blen, flags & AS_TOK_PARSE_SPECIAL, ids, types, n_ids, n_a, err);
    int32_t sep = as_tokenizer_find(t, "[SEP]");
    if (sep < 0)
        return as_error_set(err, "a sentence pair needs a [SEP] token to end each segment, and this vocabulary "
                            "has none (one quoted text is a prompt)");
    unsigned parse = flags & AS_TOK_PARSE_SPECIAL;
    int32_t *ia = NULL, *ib = NULL;
    size_t na = 0, nb = 0;
    int rc = as_tokenizer_tokenize(t, a ? a : "", alen, AS_TOK_ADD_SPECIAL | parse, &ia, &na, err) ||
             as_tokenizer_tokenize(t, b ? b : "", blen, parse, &ib, &nb, err);
    size_t n = na + nb + 1;
    if (rc == AS_OK && (!(*ids = malloc(n * sizeof **ids)) || !(*types = malloc(n * sizeof **types)))) {
        free(*ids);
        *ids = NULL;
        rc = as_tok_oom(err);
    }
    if (rc == AS_OK) {
        memcpy(*ids, ia, na * sizeof **ids);
        memcpy(*ids + na, ib, nb * sizeof **ids);
        (*ids)[n - 1] = sep;
        for (size_t i = 0; i < n; i++)
            (*types)[i] = i < na ? 0 : 1;
        *n_ids = n, *n_a = na;
    }
    free(ia), free(ib);
    return rc ? AS_ERR : AS_OK;
}

int as_tokenizer_pretokens(const as_tokenizer *t, const char *text, size_t len, size_t **ends,
                           size_t *n_ends, as_error *err)
{
    if (!t || !ends || !n_ends || (!text && len))
        return as_error_set(err, "tokenizer: pretokens called with a NULL argument");
    *ends = NULL;
    *n_ends = 0;
    work w = {.ends_only = true};
    int rc = run(t, text ? text : "", len, false, &w, err);
    if (rc == AS_OK && !w.ends && !reserve_size(&w.ends, &w.capends, 1))
        rc = as_tok_oom(err);
    if (rc == AS_OK) {
        *ends = w.ends, *n_ends = w.nends;
        w.ends = NULL;
    }
    work_free(&w);
    return rc;
}

/* ---------------------------------------------------------------- decode */

/* Writes the bytes token id stands for to dst, which has room for len[id]
 * bytes (no token decodes to more bytes than its text has), as llama.cpp's
 * token_to_piece with special = false: control, unknown and unused tokens
 * give nothing, user-defined ones their text as is, byte tokens their byte,
 * normal ones their text with the alphabet ('Ġ'...) or '▁' undone. */
static size_t token_decode(const as_tokenizer *t, int32_t id, char *dst)
{
    const char *s = t->arena + t->off[id];
    size_t n = t->len[id];
    uint8_t b;
    switch (t->type[id]) {
    case TT_CONTROL:
    case TT_UNKNOWN:
    case TT_UNUSED:
        return 0;
    case TT_USER:
        memcpy(dst, s, n);
        return n;
    case TT_BYTE:
        if (parse_byte_token(s, n, &b)) {
            dst[0] = (char)b;
            return 1;
        }
        break; /* a "byte" token that is not <0xNN>: read it as normal */
    default:
        break;
    }
    return t->algo->decode(s, n, dst);
}

/* Which leading spaces decode removes. bert: the first word's only (a
 * word-start piece's space separates it from the word before; llama.cpp
 * keeps it). Otherwise add_space_prefix's, which only tok_spm.c's
 * algorithm knows: its encode puts one '▁' in front of every fragment of
 * raw text -- at the start, and after each special token, as llama.cpp
 * does -- and then the fragment's first token with any bytes is a normal
 * token starting with '▁'. So the rule is: at the start and
 * after a control or user-defined token, skip tokens that decode to
 * nothing (BOS...); if the next token that gives bytes is a normal token
 * whose bytes start with ' ', drop that one space. With this,
 * decode(encode(x)) == x for every x, empty and leading-space texts and
 * user-defined tokens included (a literal U+2581 in x excepted: it is read
 * as a space, as in llama.cpp and SentencePiece; and whitespace an rstrip
 * token swallowed). llama.cpp instead strips the first token only, and
 * not at all after a BOS unless asked to remove specials. */
static size_t strip_prefix(const as_tokenizer *t, int32_t id, char *dst, size_t k)
{
    if (t->type[id] != TT_NORMAL || k == 0 || dst[0] != ' ')
        return k;
    memmove(dst, dst + 1, k - 1);
    return k - 1;
}

int as_tokenizer_decode(const as_tokenizer *t, const int32_t *ids, size_t n_ids, char **out,
                        size_t *len, as_error *err)
{
    if (!t || !out || !len || (!ids && n_ids))
        return as_error_set(err, "tokenizer: decode called with a NULL argument");
    *out = NULL;
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n_ids; i++) {
        if (ids[i] < 0 || (size_t)ids[i] >= t->n)
            return as_error_set(err, "tokenizer: token id %d at position %zu is out of range "
                                     "(vocabulary has %zu tokens)", ids[i], i, t->n);
        if (t->len[ids[i]] > SIZE_MAX - 1 - total)
            return as_error_set(err, "tokenizer: decoded text too long");
        total += t->len[ids[i]];
    }
    char *buf = malloc(total + 1);
    if (!buf)
        return as_tok_oom(err);
    size_t pos = 0;
    bool strip = t->add_space_prefix || t->algo->word_space;
    for (size_t i = 0; i < n_ids; i++) {
        size_t k = token_decode(t, ids[i], buf + pos);
        uint8_t ty = t->type[ids[i]];
        if (ty == TT_CONTROL || ty == TT_USER) {
            strip |= t->add_space_prefix; /* the next fragment had a prefix */
        } else if (strip && k) {
            k = strip_prefix(t, ids[i], buf + pos, k);
            strip = false;
        }
        pos += k;
    }
    if (t->algo->tidy)
        pos = t->algo->tidy(buf, pos);
    buf[pos] = '\0';
    *out = buf;
    *len = pos;
    return AS_OK;
}

/* Returns the number of bytes written (at most cap - 1); a longer token is
 * cut short. For display: no prefix space is removed. */
size_t as_tokenizer_token_bytes(const as_tokenizer *t, int32_t id, char *buf, size_t cap)
{
    if (!buf || cap == 0)
        return 0;
    buf[0] = '\0';
    if (!t || id < 0 || (size_t)id >= t->n)
        return 0;
    size_t need = t->len[id];
    char *tmp = need < cap ? buf : malloc(need ? need : 1);
    if (!tmp)
        return 0;
    size_t k = token_decode(t, id, tmp);
    if (k > cap - 1)
        k = cap - 1;
    if (tmp != buf) {
        memcpy(buf, tmp, k);
        free(tmp);
    }
    buf[k] = '\0';
    return k;
}

/* ---------------------------------------------------------------- the model card */

/* Text from the file, shown safely: printable ASCII only, cut at 60. */
static void card_text(FILE *out, const char *s)
{
    size_t i = 0;
    for (; s[i] && i < 60; i++)
        fputc(s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?', out);
    if (s[i])
        fputs("...", out);
}

static const char *kv_str(const as_gguf *g, const char *key)
{
    const as_gguf_kv *kv = as_gguf_find(g, key);
    return kv && kv->type == AS_GGUF_STRING ? kv->str : NULL;
}

/* A boolean key's value, def when absent or not a boolean. */
static bool kv_bool(const as_gguf *g, const char *key, bool def)
{
    bool v = def;
    as_error ignored;
    const as_gguf_kv *kv = as_gguf_find(g, key);
    if (kv && kv->type == AS_GGUF_BOOL)
        as_gguf_get_bool_opt(g, key, &v, &ignored);
    return v;
}

static void card_pre(const as_gguf *g, FILE *out, bool *add_bos)
{
    const char *pre = kv_str(g, "tokenizer.ggml.pre");
    const as_tok_pre *p = pre && pre[0] ? as_tok_pre_find(pre) : as_tok_pre_type("default");
    fputs("pre-tokenizer ", out);
    if (!pre || !pre[0]) {
        fputs("(not set): llama.cpp's \"default\" split, as llama.cpp runs such a file (it warns that the "
              "file should be converted again)\n",
              out);
    } else if (!p) {
        card_text(out, pre);
        fputs(": unknown to attnscope, so text is split as GPT-2 splits it, with a warning when a prompt "
              "is read (llama.cpp refuses this file)\n",
              out);
    } else {
        card_text(out, pre);
        fprintf(out, ": llama.cpp's %s split%s\n", p->type,
                p->ignore_merges ? "; a pre-token that is a token stays whole (ignore_merges)" : "");
    }
    *add_bos = p && p->add_bos;
}

/* Token id's text from the file's vocabulary, or "none". */
static void card_token(const as_gguf *g, const char *key, int32_t def, FILE *out)
{
    const as_gguf_kv *v = as_gguf_find(g, "tokenizer.ggml.tokens");
    uint32_t id = def < 0 ? UINT32_MAX : (uint32_t)def, file = UINT32_MAX;
    as_error ignored;
    bool ok = v && v->type == AS_GGUF_ARRAY && v->arr_type == AS_GGUF_STRING;
    as_gguf_get_u32_opt(g, key, &file, &ignored);
    if (ok && file < v->arr_len)
        id = file; /* else the default, as the loader reads it */
    if (!ok || id >= v->arr_len) {
        fputs("none", out);
        return;
    }
    card_text(out, v->strs[id]);
    fprintf(out, " (%u)", id);
}

/* WordPiece: the normalizer llama.cpp runs and the tokens it adds. */
static void card_bert(const as_gguf *g, FILE *out)
{
    bool lower = kv_bool(g, "tokenizer.ggml.normalizer.lowercase", true);
    bool strip = kv_bool(g, "tokenizer.ggml.normalizer.strip_accents", lower);
    const char *lib = kv_str(g, "tokenizer.attnscope.normalizer");
    if (lib) {
        const as_gguf_kv *mx = as_gguf_find(g, "tokenizer.attnscope.max_word_chars");
        fprintf(out, "wordpiece     normalised as the tokenizers library does (steps: %s), not as llama.cpp; "
                     "punctuation split; a word no pieces spell", *lib ? lib : "none");
        if (mx && mx->type == AS_GGUF_UINT32 && mx->v.u64)
            fprintf(out, " or of more than %llu characters", (unsigned long long)mx->v.u64);
        fputs(" is [UNK]\n", out);
    } else {
        fprintf(out, "wordpiece     normalised as llama.cpp does (NFD's first code point): %s, %s; punctuation "
                     "and CJK split; a word no pieces spell is [UNK]\n",
                lower ? "lower-cased" : "case kept", strip ? "accents stripped" : "accents kept");
    }
    fputs("special       ", out);
    card_token(g, "tokenizer.ggml.bos_token_id", 101, out);
    fputs(" in front, ", out);
    card_token(g, "tokenizer.ggml.seperator_token_id", 102, out);
    fputs(" at the end, mask ", out);
    card_token(g, "tokenizer.ggml.mask_token_id", 103, out);
    fputs("; control tokens' texts in a prompt are those tokens (prompt-raw: plain text)\n", out);
}

void as_tokenizer_print_card(const as_gguf *g, FILE *out)
{
    const char *model = kv_str(g, "tokenizer.ggml.model");
    const as_tok_algo *algo = model ? algo_named(model) : NULL;
    if (!algo)
        return;
    if (algo->kind == AS_TOK_NONE) {
        fputs("token ids     no vocabulary: a position shows its id (#17); prompts are given as ids "
              "(prompt-ids)\n",
              out);
        return;
    }
    if (algo->kind == AS_TOK_BERT) {
        card_bert(g, out);
        return;
    }
    bool add_bos = algo->add_bos;
    if (algo->kind == AS_TOK_GPT2)
        card_pre(g, out, &add_bos);
    add_bos = kv_bool(g, "tokenizer.ggml.add_bos_token", add_bos);
    bool add_eos = kv_bool(g, "tokenizer.ggml.add_eos_token", algo->add_eos);
    if (algo->kind == AS_TOK_T5)
        fprintf(out, "unigram       SentencePiece Unigram (Viterbi over the scores), %s charsmap%s%s\n",
                as_gguf_find(g, "tokenizer.ggml.precompiled_charsmap") ? "normalized by its" : "no",
                kv_bool(g, "tokenizer.ggml.remove_extra_whitespaces", false) ? ", extra spaces removed" : "",
                kv_bool(g, "tokenizer.ggml.add_space_prefix", false) ? ", a space in front" : "");
    fprintf(out, "special       BOS %s, EOS %s; control tokens' texts in a prompt are those tokens "
                 "(prompt-raw: plain text)\n",
            add_bos ? "added" : "not added", add_eos ? "added" : "not added");
}
