/* tokenizer: what every tokenizer algorithm shares, following llama.cpp
 * (tokenizer_st_partition, token_to_piece) so ids agree with it. Owns the
 * vocabulary (texts, scores, types, look-up), reading it from a GGUF
 * file's tokenizer.ggml.* keys, the table of algorithms chosen by
 * tokenizer.ggml.model, special tokens, cutting user-defined tokens out of
 * the text, decoding to bytes, and the public API. The algorithms are
 * tok_bpe.c ("gpt2": byte-level BPE) and tok_spm.c ("llama":
 * SentencePiece BPE).
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
 *   1. partition (here): user-defined tokens (type 4) are cut out of the
 *      raw text, longest first, leftmost occurrence first;
 *   2. the algorithm encodes each remaining fragment (its encode hook);
 *   3. symbols that are not tokens fall back to byte tokens, then to unk
 *      (as_tok_push_byte).
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

int as_tok_oom(as_error *err)
{
    return as_error_set(err, "tokenizer: out of memory");
}

/* ---------------------------------------------------------------- the algorithms */

/* One per tokenizer.ggml.model value, each in its own file. */
static const as_tok_algo *const ALGOS[] = {&as_tok_bpe, &as_tok_spm};
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

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 1099511628211ull;
    }
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
    for (size_t i = (size_t)hash_bytes(s, n) & m->mask;; i = (i + 1) & m->mask) {
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
    if (sp->n_tokens == 0 || !sp->tokens)
        return as_error_set(err, "tokenizer: the vocabulary is empty");
    if (sp->n_tokens >= (size_t)INT32_MAX)
        return as_error_set(err, "tokenizer: %zu tokens is more than ids can number", sp->n_tokens);
    if (sp->n_merges && !sp->merges)
        return as_error_set(err, "tokenizer: %zu merges announced but none given", sp->n_merges);
    if (check_id("bos_id", sp->bos_id, sp->n_tokens, err) ||
        check_id("eos_id", sp->eos_id, sp->n_tokens, err) ||
        check_id("unk_id", sp->unk_id, sp->n_tokens, err))
        return AS_ERR;
    return AS_OK;
}

static int copy_tokens(as_tokenizer *t, const as_tokenizer_spec *sp, as_error *err)
{
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

static void set_scores_types(as_tokenizer *t, const as_tokenizer_spec *sp)
{
    for (size_t i = 0; i < t->n; i++) {
        float s = sp->scores ? sp->scores[i] : 0.0f;
        t->score[i] = isnan(s) ? -INFINITY : s; /* NaN would break the heap order */
        int32_t ty = sp->token_types ? sp->token_types[i] : guess_type(t, i);
        t->type[i] = (ty >= TT_NORMAL && ty <= TT_BYTE) ? (uint8_t)ty : TT_NORMAL;
    }
    /* The header promises BOS/EOS decode to nothing, whatever the file says. */
    if (t->bos >= 0)
        t->type[t->bos] = TT_CONTROL;
    if (t->eos >= 0)
        t->type[t->eos] = TT_CONTROL;
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

/* llama.cpp cuts user-defined tokens out of the text longest first (its
 * sort is not stable; equal lengths go here by id). */
static int collect_user_tokens(as_tokenizer *t, as_error *err)
{
    size_t n = 0;
    for (size_t i = 0; i < t->n; i++)
        n += t->type[i] == TT_USER && t->len[i] > 0;
    if (n == 0)
        return AS_OK;
    lenid *v = malloc(n * sizeof *v);
    if (!v || !(t->user = malloc(n * sizeof *t->user))) {
        free(v);
        return as_tok_oom(err);
    }
    for (size_t i = 0, k = 0; i < t->n; i++)
        if (t->type[i] == TT_USER && t->len[i] > 0)
            v[k++] = (lenid){t->len[i], (int32_t)i};
    qsort(v, n, sizeof *v, cmp_lenid);
    for (size_t i = 0; i < n; i++)
        t->user[i] = v[i].id;
    t->n_user = n;
    free(v);
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
    t->add_bos = sp->add_bos;
    t->add_space_prefix = algo->space_prefix && sp->add_space_prefix;
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
    return collect_user_tokens(t, err);
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
    free(t->user);
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

static int gguf_flags(const as_gguf *g, const as_tok_algo *algo, as_tokenizer_spec *sp, as_error *err)
{
    sp->add_bos = algo->add_bos;
    sp->add_space_prefix = algo->space_prefix;
    if (gguf_special(g, "tokenizer.ggml.bos_token_id", algo->bos, sp->n_tokens, &sp->bos_id, err) ||
        gguf_special(g, "tokenizer.ggml.eos_token_id", algo->eos, sp->n_tokens, &sp->eos_id, err) ||
        gguf_special(g, "tokenizer.ggml.unknown_token_id", algo->unk, sp->n_tokens, &sp->unk_id, err) ||
        as_gguf_get_bool_opt(g, "tokenizer.ggml.add_bos_token", &sp->add_bos, err) ||
        as_gguf_get_bool_opt(g, "tokenizer.ggml.add_space_prefix", &sp->add_space_prefix, err))
        return AS_ERR;
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
    if (gguf_algo(g, &algo, err) || gguf_arrays(g, algo, &v, err))
        return AS_ERR;
    sp.kind = algo->kind;
    sp.tokens = (const char *const *)v.tokens->strs;
    sp.token_lens = v.tokens->str_lens;
    sp.n_tokens = (size_t)v.tokens->arr_len;
    if (v.merges) {
        sp.merges = (const char *const *)v.merges->strs;
        sp.n_merges = (size_t)v.merges->arr_len;
    }
    if (gguf_flags(g, algo, &sp, err))
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
    return rc;
}

/* ---------------------------------------------------------------- accessors */

as_tok_kind as_tokenizer_kind(const as_tokenizer *t) { return t->algo->kind; }
size_t as_tokenizer_vocab_size(const as_tokenizer *t) { return t->n; }
int32_t as_tokenizer_bos(const as_tokenizer *t) { return t->bos; }
int32_t as_tokenizer_eos(const as_tokenizer *t) { return t->eos; }

/* True when encode should be asked for a BOS and there is one to add. */
bool as_tokenizer_add_bos(const as_tokenizer *t) { return t->add_bos && t->bos >= 0; }

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
    free(w->esc);
    free(w->fr);
    free(w->fr2);
    free(w->ids);
    free(w->ends);
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

/* Cuts every occurrence of user token u out of the raw fragments (fr ->
 * fr2, then swapped), as one pass of llama.cpp's tokenizer_st_partition. */
static bool cut_user_token(const as_tokenizer *t, int32_t u, const char *text, work *w)
{
    const char *tu = t->arena + t->off[u];
    size_t lu = t->len[u], n2 = 0;
    for (size_t i = 0; i < w->nfr; i++) {
        frag f = w->fr[i];
        size_t pos = f.off, end = f.off + f.len;
        const char *p;
        while (f.id < 0 && (p = find_bytes(text + pos, end - pos, tu, lu))) {
            size_t at = (size_t)(p - text);
            if (at > pos && !add_frag(&w->fr2, &n2, &w->capfr2, (frag){pos, at - pos, -1}))
                return false;
            if (!add_frag(&w->fr2, &n2, &w->capfr2, (frag){at, lu, u}))
                return false;
            pos = at + lu;
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

static int partition(const as_tokenizer *t, const char *text, size_t len, work *w, as_error *err)
{
    w->nfr = 0;
    if (len && !add_frag(&w->fr, &w->nfr, &w->capfr, (frag){0, len, -1}))
        return as_tok_oom(err);
    for (size_t k = 0; k < t->n_user && w->nfr; k++) {
        int32_t u = t->user[k];
        /* a cheap whole-text test first: most user tokens never occur */
        if (!find_bytes(text, len, t->arena + t->off[u], t->len[u]))
            continue;
        if (!cut_user_token(t, u, text, w))
            return as_tok_oom(err);
    }
    return AS_OK;
}

/* ---------------------------------------------------------------- encode */

static int encode_fragment(const as_tokenizer *t, const char *text, const frag *f, work *w,
                           as_error *err)
{
    if (f->id >= 0)
        return w->ends_only ? as_tok_push_end(w, f->off + f->len, err) : as_tok_push_id(w, f->id, err);
    return t->algo->encode(t, text + f->off, f->len, f->off, w, err);
}

static int run(const as_tokenizer *t, const char *text, size_t len, work *w, as_error *err)
{
    if (len > MAX_TEXT_BYTES)
        return as_error_set(err, "tokenizer: text of %zu bytes is too long (limit %zu)", len,
                            MAX_TEXT_BYTES);
    if (partition(t, text, len, w, err))
        return AS_ERR;
    for (size_t i = 0; i < w->nfr; i++)
        if (encode_fragment(t, text, &w->fr[i], w, err))
            return AS_ERR;
    return AS_OK;
}

int as_tokenizer_encode(const as_tokenizer *t, const char *text, size_t len, bool add_bos,
                        int32_t **ids, size_t *n_ids, as_error *err)
{
    if (!t || !ids || !n_ids || (!text && len))
        return as_error_set(err, "tokenizer: encode called with a NULL argument");
    *ids = NULL;
    *n_ids = 0;
    work w = {0};
    int rc = AS_OK;
    if (add_bos && t->bos >= 0)
        rc = as_tok_push_id(&w, t->bos, err);
    if (rc == AS_OK)
        rc = run(t, text ? text : "", len, &w, err);
    if (rc == AS_OK && !w.ids && !reserve_i32(&w.ids, &w.capids, 1))
        rc = as_tok_oom(err); /* callers get a pointer to free even for no ids */
    if (rc == AS_OK) {
        *ids = w.ids, *n_ids = w.nids;
        w.ids = NULL;
    }
    work_free(&w);
    return rc;
}

int as_tokenizer_pretokens(const as_tokenizer *t, const char *text, size_t len, size_t **ends,
                           size_t *n_ends, as_error *err)
{
    if (!t || !ends || !n_ends || (!text && len))
        return as_error_set(err, "tokenizer: pretokens called with a NULL argument");
    *ends = NULL;
    *n_ends = 0;
    work w = {.ends_only = true};
    int rc = run(t, text ? text : "", len, &w, err);
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

/* Which leading space decode removes (add_space_prefix only, which only
 * tok_spm.c's algorithm knows): its encode puts one '▁' in front of a text
 * that starts with raw text, and then the first token with any bytes is a
 * normal token starting with '▁'. So the rule is: skip tokens that decode
 * to nothing (BOS...); if the first token that gives bytes is a normal
 * token whose bytes start with ' ', drop that one space. A text that
 * starts with a user-defined token got no prefix, and its first token is
 * user-defined, so nothing is dropped. With this, decode(encode(x)) == x
 * for every x, empty and leading-space texts included (a literal U+2581 in
 * x excepted: it is read as a space, as in llama.cpp and SentencePiece).
 * llama.cpp instead strips the first token only, and not at all after a
 * BOS unless asked to remove specials. */
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
    bool strip = t->add_space_prefix;
    for (size_t i = 0; i < n_ids; i++) {
        size_t k = token_decode(t, ids[i], buf + pos);
        if (strip && k) {
            k = strip_prefix(t, ids[i], buf + pos, k);
            strip = false;
        }
        pos += k;
    }
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
