/* tok_bpe: GGUF's "gpt2" tokenizer, byte-level BPE as llama.cpp's
 * llm_tokenizer_bpe_session. Owns GPT-2's byte-to-unicode alphabet (a
 * byte's token is its alphabet character's; decode undoes the map), GPT-2's
 * pre-tokenizer split (hand-written over code points, with the character
 * classes of unicode_tables.h), and the merges: "A B" strings kept as
 * (left id, right id) -> (rank, result id), so a merge step is one
 * integer-pair look-up and symbols are token ids. The lowest rank merges
 * first, leftmost on ties.
 *
 * A fragment of raw text (tokenizer.c has cut out special tokens) is
 * split into pre-tokens by the vocabulary's pre-tokenizer (tok_pre.c, as
 * tokenizer.ggml.pre chooses), and each is merged on its own; merges never
 * cross a pre-token boundary. With ignore_merges (Llama 3, tekken...) a
 * pre-token that is itself a token is that token, unmerged, as in
 * llm_tokenizer_bpe_session. */
#include "tokenizer_internal.h"

#include <string.h>

/* ---------------------------------------------------------------- the byte alphabet */

/* GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves,
 * the other 68 bytes take U+0100.. in byte order. */
static uint32_t byte_to_cp(uint8_t b)
{
    if ((b >= 33 && b <= 126) || (b >= 161 && b <= 172) || b >= 174)
        return b;
    if (b <= 32)
        return 256u + b;
    if (b <= 160)
        return 256u + 33u + (b - 127u);
    return 256u + 67u; /* 173, the soft hyphen */
}

static int cp_to_byte(uint32_t cp)
{
    if (cp < 256)
        return byte_to_cp((uint8_t)cp) == cp ? (int)cp : -1;
    if (cp <= 288)
        return (int)(cp - 256);
    if (cp <= 322)
        return (int)(cp - 289 + 127);
    return cp == 323 ? 173 : -1;
}

static size_t utf8_put(uint32_t cp, char *out)
{
    if (cp < 0x80) {
        out[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (char)(0xC0 | (cp >> 6));
        out[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        out[0] = (char)(0xE0 | (cp >> 12));
        out[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    out[0] = (char)(0xF0 | (cp >> 18));
    out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static int32_t bpe_byte_token(const as_tokenizer *t, uint8_t b)
{
    char buf[8];
    size_t n = utf8_put(byte_to_cp(b), buf);
    return as_tok_lookup(t, &t->plain, buf, n);
}

/* ---------------------------------------------------------------- merges */

static uint64_t merge_key(int32_t l, int32_t r)
{
    return ((uint64_t)(uint32_t)(l + 1) << 32) | (uint32_t)(r + 1);
}

static size_t merge_slot(const mergemap *m, uint64_t key)
{
    size_t i = (size_t)((key * 0x9E3779B97F4A7C15ull) >> 32) & m->mask;
    while (m->key[i] && m->key[i] != key)
        i = (i + 1) & m->mask;
    return i;
}

static void merge_put(mergemap *m, int32_t l, int32_t r, int32_t rank, int32_t res)
{
    uint64_t key = merge_key(l, r);
    size_t i = merge_slot(m, key);
    if (m->key[i])
        return; /* a repeated merge keeps its first (lowest) rank */
    m->key[i] = key;
    m->rank[i] = rank;
    m->result[i] = res;
}

/* One "A B" merge. Like llama.cpp, the parts split at the first space after
 * the first byte, and a merge without one is ignored. A merge whose parts or
 * result are not plain tokens is ignored too: its result could never be
 * output as a token, and valid GGUF files have none. */
static int add_merge(as_tokenizer *t, const char *s, int32_t rank, char **buf, size_t *cap)
{
    size_t len = strlen(s);
    const char *sp = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL;
    if (!sp)
        return AS_OK;
    size_t nl = (size_t)(sp - s), nr = len - nl - 1;
    int32_t l = as_tok_lookup(t, &t->plain, s, nl);
    int32_t r = as_tok_lookup(t, &t->plain, sp + 1, nr);
    if (l < 0 || r < 0)
        return AS_OK;
    if (nl + nr > *cap) {
        char *p = realloc(*buf, nl + nr);
        if (!p)
            return AS_ERR;
        *buf = p, *cap = nl + nr;
    }
    memcpy(*buf, s, nl);
    memcpy(*buf + nl, sp + 1, nr);
    int32_t res = as_tok_lookup(t, &t->plain, *buf, nl + nr);
    if (res >= 0)
        merge_put(&t->merges, l, r, rank, res);
    return AS_OK;
}

static int bpe_build(as_tokenizer *t, const as_tokenizer_spec *sp, as_error *err)
{
    const char *const *merges = sp->merges;
    size_t n = sp->n_merges;
    if (n >= (size_t)INT32_MAX)
        return as_error_set(err, "tokenizer: %zu merges is more than ranks can number", n);
    size_t cap = as_tok_table_cap(n);
    mergemap *m = &t->merges;
    m->key = calloc(cap, sizeof *m->key);
    m->rank = malloc(cap * sizeof *m->rank);
    m->result = malloc(cap * sizeof *m->result);
    m->mask = cap - 1;
    if (!m->key || !m->rank || !m->result)
        return as_tok_oom(err);
    char *buf = NULL;
    size_t bufcap = 0;
    int rc = AS_OK;
    for (size_t i = 0; i < n && rc == AS_OK; i++) {
        if (!merges[i])
            rc = as_error_set(err, "tokenizer: merge %zu is NULL", i);
        else if (add_merge(t, merges[i], (int32_t)i, &buf, &bufcap))
            rc = as_tok_oom(err);
    }
    free(buf);
    return rc;
}

/* ---------------------------------------------------------------- merging one pre-token */

typedef struct bsym { /* gpt2 symbol: a token id (-1: its byte has none) */
    int32_t id, prev, next;
    uint8_t byte, alive;
} bsym;

DEFINE_RESERVE(reserve_bsym, bsym)

static int bpe_pair(const as_tokenizer *t, work *w, int32_t l, int32_t r)
{
    if (l < 0 || r < 0 || w->bs[l].id < 0 || w->bs[r].id < 0)
        return AS_OK;
    const mergemap *m = &t->merges;
    size_t i = merge_slot(m, merge_key(w->bs[l].id, w->bs[r].id));
    if (!m->key[i])
        return AS_OK;
    hent e = {m->rank[i], l, r, w->bs[l].id, w->bs[r].id, m->result[i]};
    return as_tok_heap_push(w, e) ? AS_OK : AS_ERR;
}

/* Byte-level BPE over one pre-token: one symbol per byte (its alphabet
 * character's token), then the lowest-ranked merge present, leftmost on
 * ties, until none applies -- as llm_tokenizer_bpe_session. A popped
 * candidate is stale if either side has changed since it was pushed. */
static int bpe_merge(const as_tokenizer *t, work *w, size_t n)
{
    w->nheap = 0;
    for (size_t i = 1; i < n; i++)
        if (bpe_pair(t, w, (int32_t)i - 1, (int32_t)i))
            return AS_ERR;
    while (w->nheap) {
        hent e = as_tok_heap_pop(w);
        bsym *l = &w->bs[e.left], *r = &w->bs[e.right];
        if (!l->alive || !r->alive || l->next != e.right || l->id != e.a || r->id != e.b)
            continue;
        l->id = e.c;
        l->next = r->next;
        r->alive = 0;
        if (r->next >= 0)
            w->bs[r->next].prev = e.left;
        if (bpe_pair(t, w, l->prev, e.left) || bpe_pair(t, w, e.left, l->next))
            return AS_ERR;
    }
    return AS_OK;
}

static int bpe_word(const as_tokenizer *t, const uint8_t *s, size_t n, work *w, as_error *err)
{
    if (!reserve_bsym(&w->bs, &w->capbs, n))
        return as_tok_oom(err);
    for (size_t i = 0; i < n; i++)
        w->bs[i] = (bsym){t->byte_tok[s[i]], (int32_t)i - 1, i + 1 < n ? (int32_t)i + 1 : -1, s[i], 1};
    if (n > 1 && bpe_merge(t, w, n))
        return as_tok_oom(err);
    /* A byte whose alphabet character is no token (falcon has none for
     * 0x03, starcoder for 0xF1) is left out, as llama.cpp leaves it out:
     * its BPE neither errs nor uses an unknown token. */
    for (int32_t i = 0; i >= 0; i = w->bs[i].next)
        if (w->bs[i].id >= 0 && as_tok_push_id(w, w->bs[i].id, err))
            return AS_ERR;
    return AS_OK;
}

/* ---------------------------------------------------------------- encode, decode */

DEFINE_RESERVE(reserve_char, char)

/* ignore_merges: the token whose text is the pre-token s[0, n) in the byte
 * alphabet, or -1. Any token counts, as llama.cpp's text_to_token. */
static int32_t whole_token(const as_tokenizer *t, const uint8_t *s, size_t n, work *w)
{
    if (!reserve_char(&w->esc, &w->capesc, 2 * n + 1))
        return -2;
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += utf8_put(byte_to_cp(s[i]), w->esc + k);
    return as_tok_lookup(t, &t->all, w->esc, k);
}

static int bpe_piece(const as_tokenizer *t, const uint8_t *s, size_t n, work *w, as_error *err)
{
    if (t->ignore_merges) {
        int32_t id = whole_token(t, s, n, w);
        if (id == -2)
            return as_tok_oom(err);
        if (id >= 0)
            return as_tok_push_id(w, id, err);
    }
    return bpe_word(t, s, n, w, err);
}

/* base: the fragment's offset in the whole text, for piece ends. */
static int gpt2_fragment(const as_tokenizer *t, const char *s, size_t n, size_t base, work *w,
                         as_error *err)
{
    size_t m;
    if (as_tok_decode_cps(s, n, w, &m, err) || as_tok_pre_split(t, w, m, err))
        return AS_ERR;
    for (size_t i = 0, pos = 0; i < w->npieces; i++) {
        size_t end = w->pieces[i];
        size_t a = w->cps[pos].off, b = w->cps[end].off;
        int rc = w->ends_only ? as_tok_push_end(w, base + b, err)
                              : bpe_piece(t, (const uint8_t *)s + a, b - a, w, err);
        if (rc)
            return AS_ERR;
        pos = end;
    }
    return AS_OK;
}

static size_t unmap_gpt2(const char *s, size_t n, char *dst)
{
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t c = as_tok_utf8_char((const uint8_t *)s + i, n - i, &cp);
        int b = c ? cp_to_byte(cp) : -1;
        if (b >= 0) {
            dst[k++] = (char)b;
            i += c;
            continue;
        }
        /* not in the alphabet (only in odd vocabularies): copy it as is */
        size_t len = c ? c : 1;
        memcpy(dst + k, s + i, len);
        k += len, i += len;
    }
    return k;
}

const as_tok_algo as_tok_bpe = {
    .gguf_model = "gpt2",
    .kind = AS_TOK_GPT2,
    .bos = -1,
    .eos = -1,
    .unk = -1,
    .add_bos = false,
    .space_prefix = false,
    .needs_merges = true,
    .byte_fallback = false,
    .byte_token_name = "byte-alphabet character",
    .build = bpe_build,
    .byte_token = bpe_byte_token,
    .encode = gpt2_fragment,
    .decode = unmap_gpt2,
};
