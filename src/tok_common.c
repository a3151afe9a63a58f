/* What every file of the tokenizer shares (tokenizer_internal.h): the
 * out-of-memory error, UTF-8 and <0xNN> byte tokens, the vocabulary's
 * hash tables (a token's text -> its id), and one call's scratch (the
 * ids or ends it pushes, the merge heap, the byte fallback). The
 * algorithm files, the pre-tokenizers and the building of a tokenizer all
 * sit above it. */
#include "tokenizer_internal.h"

#include <string.h>

int as_tok_oom(as_error *err)
{
    return as_error_set(err, "tokenizer: out of memory");
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

long as_tokenizer_first_invalid_utf8(const char *text, size_t n)
{
    uint32_t cp;
    for (size_t i = 0; i < n;) {
        size_t k = as_tok_utf8_char((const uint8_t *)text + i, n - i, &cp);
        if (k == 0)
            return (long)i;
        i += k;
    }
    return -1;
}

/* "<0xNN>" (either case of hex digit) -> the byte. */
bool as_tok_parse_byte_token(const char *s, size_t n, uint8_t *b)
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

bool as_tok_strmap_init(strmap *m, size_t n)
{
    size_t cap = as_tok_table_cap(n);
    m->slot = calloc(cap, sizeof *m->slot);
    m->mask = cap - 1;
    return m->slot != NULL;
}

bool as_tok_same_text(const as_tokenizer *t, int32_t id, const char *s, size_t n)
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
        if (as_tok_same_text(t, id, s, n))
            return id;
    }
}

/* Keeps the first id of a duplicated text. */
void as_tok_strmap_put(const as_tokenizer *t, strmap *m, int32_t id)
{
    const char *s = t->arena + t->off[id];
    size_t n = t->len[id];
    size_t i = (size_t)hash_bytes(s, n) & m->mask;
    for (; m->slot[i]; i = (i + 1) & m->mask)
        if (as_tok_same_text(t, (int32_t)(m->slot[i] - 1), s, n))
            return;
    m->slot[i] = (uint32_t)id + 1;
}

/* ---------------------------------------------------------------- encode scratch */

DEFINE_RESERVE(reserve_hent, hent)
DEFINE_RESERVE(reserve_i32, int32_t)
DEFINE_RESERVE(reserve_size, size_t)

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
