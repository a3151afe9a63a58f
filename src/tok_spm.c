/* tok_spm: GGUF's "llama" tokenizer, SentencePiece-style BPE as llama.cpp's
 * llm_tokenizer_spm_session. Owns the '▁' handling (' ' becomes '▁', one
 * '▁' goes in front of a text that starts with raw text when
 * add_space_prefix, decode turns '▁' back into ' '), merging by score (the
 * adjacent pair whose concatenation is the highest-scored token first,
 * leftmost on ties), and byte fallback: a symbol that is not a token
 * becomes its bytes' <0xNN> tokens.
 *
 * A fragment (tokenizer.c has cut out special tokens) is not split
 * further: it is merged in runs that no token can span (see pair_seen). */
#include "tokenizer_internal.h"

#include <string.h>

static const char SPM_SPACE[] = "\xE2\x96\x81"; /* U+2581 '▁' */

/* As llama.cpp's byte_to_token: <0xNN> first, then the byte itself. */
static int32_t spm_byte_token(const as_tokenizer *t, uint8_t b)
{
    static const char hex[] = "0123456789ABCDEF";
    char buf[8];
    memcpy(buf, "<0x", 3);
    buf[3] = hex[b >> 4], buf[4] = hex[b & 15], buf[5] = '>';
    int32_t id = as_tok_lookup(t, &t->all, buf, 6);
    if (id < 0) {
        buf[0] = (char)b;
        id = as_tok_lookup(t, &t->plain, buf, 1);
    }
    return id;
}

typedef struct ssym { /* llama symbol: a span of the escaped text */
    uint32_t start, len; /* len 0: merged into its left neighbour */
    int32_t prev, next;
} ssym;

DEFINE_RESERVE(reserve_ssym, ssym)
DEFINE_RESERVE(reserve_char, char)

/* ' ' -> '▁', with one '▁' in front when prefix (llama.cpp's
 * llama_escape_whitespace after adding the space prefix). */
static bool spm_escape(const char *s, size_t n, bool prefix, work *w, size_t *elen)
{
    size_t spaces = prefix;
    for (size_t i = 0; i < n; i++)
        spaces += s[i] == ' ';
    size_t need = n + prefix + 2 * spaces;
    if (!reserve_char(&w->esc, &w->capesc, need ? need : 1))
        return false;
    char *o = w->esc;
    if (prefix)
        memcpy(o, SPM_SPACE, 3), o += 3;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == ' ')
            memcpy(o, SPM_SPACE, 3), o += 3;
        else
            *o++ = s[i];
    }
    *elen = (size_t)(o - w->esc);
    return true;
}

/* One symbol per UTF-8 character; each byte of an invalid sequence is a
 * symbol of its own (so it can only end up as its byte token). */
static bool spm_symbols(work *w, size_t elen, size_t *nsym)
{
    if (!reserve_ssym(&w->ss, &w->capss, elen))
        return false;
    const uint8_t *e = (const uint8_t *)w->esc;
    size_t k = 0;
    for (size_t i = 0; i < elen; k++) {
        uint32_t cp;
        size_t c = as_tok_utf8_char(e + i, elen - i, &cp);
        if (!c)
            c = 1;
        w->ss[k] = (ssym){(uint32_t)i, (uint32_t)c, (int32_t)k - 1, i + c < elen ? (int32_t)k + 1 : -1};
        i += c;
    }
    *nsym = k;
    return true;
}

static int spm_pair(const as_tokenizer *t, work *w, int32_t l, int32_t r)
{
    if (l < 0 || r < 0)
        return AS_OK;
    size_t size = (size_t)w->ss[l].len + w->ss[r].len;
    if (size > t->max_plain_len)
        return AS_OK;
    int32_t id = as_tok_lookup(t, &t->plain, w->esc + w->ss[l].start, size);
    if (id < 0)
        return AS_OK;
    hent e = {-(double)t->score[id], l, r, (int32_t)size, 0, 0};
    return as_tok_heap_push(w, e) ? AS_OK : AS_ERR;
}

/* Repeatedly merges the adjacent pair whose concatenation is the
 * highest-scored token, leftmost on ties -- llm_tokenizer_spm_session. A
 * candidate is stale when a side has been merged away or has grown. */
static int spm_merge(const as_tokenizer *t, work *w, size_t a, size_t b)
{
    w->nheap = 0;
    for (size_t i = a + 1; i < b; i++)
        if (spm_pair(t, w, (int32_t)i - 1, (int32_t)i))
            return AS_ERR;
    while (w->nheap) {
        hent e = as_tok_heap_pop(w);
        ssym *l = &w->ss[e.left], *r = &w->ss[e.right];
        if (!l->len || !r->len || l->next != e.right || (size_t)l->len + r->len != (size_t)e.a)
            continue;
        l->len += r->len;
        r->len = 0;
        l->next = r->next;
        if (r->next >= 0)
            w->ss[r->next].prev = e.left;
        if (spm_pair(t, w, l->prev, e.left) || spm_pair(t, w, e.left, l->next))
            return AS_ERR;
    }
    return AS_OK;
}

/* A symbol that is a token becomes it; otherwise each of its bytes
 * becomes its byte token (llama.cpp's resegment; its rev_merge branch
 * never fires, as merged symbols are always tokens). */
static int spm_emit(const as_tokenizer *t, work *w, size_t a, as_error *err)
{
    for (int32_t i = (int32_t)a; i >= 0; i = w->ss[i].next) {
        const char *s = w->esc + w->ss[i].start;
        int32_t id = as_tok_lookup(t, &t->plain, s, w->ss[i].len);
        if (id >= 0) {
            if (as_tok_push_id(w, id, err))
                return AS_ERR;
            continue;
        }
        for (uint32_t k = 0; k < w->ss[i].len; k++)
            if (as_tok_push_byte(t, (uint8_t)s[k], w, err))
                return AS_ERR;
    }
    return AS_OK;
}

/* Can a token span the boundary before symbol k? (see pair_seen) */
static bool spm_crossable(const as_tokenizer *t, const work *w, size_t k)
{
    uint32_t at = w->ss[k].start;
    unsigned pair = (unsigned)(uint8_t)w->esc[at - 1] << 8 | (uint8_t)w->esc[at];
    return (t->pair_seen[pair >> 6] >> (pair & 63)) & 1;
}

static int spm_fragment(const as_tokenizer *t, const char *s, size_t n, bool prefix, work *w,
                        as_error *err)
{
    size_t elen, nsym;
    if (!spm_escape(s, n, prefix, w, &elen) || !spm_symbols(w, elen, &nsym))
        return as_tok_oom(err);
    for (size_t a = 0, b; a < nsym; a = b) {
        for (b = a + 1; b < nsym && spm_crossable(t, w, b); b++)
            ;
        w->ss[a].prev = -1; /* the run [a, b) is merged on its own */
        w->ss[b - 1].next = -1;
        if (spm_merge(t, w, a, b))
            return as_tok_oom(err);
        if (spm_emit(t, w, a, err))
            return AS_ERR;
    }
    return AS_OK;
}

static int spm_encode(const as_tokenizer *t, const char *s, size_t n, size_t base, work *w,
                      as_error *err)
{
    if (w->ends_only)
        return as_tok_push_end(w, base + n, err);
    /* As llama.cpp: every fragment of raw text gets the prefix, the first
     * and each after a special token (decode takes them off again). */
    return spm_fragment(t, s, n, t->add_space_prefix, w, err);
}

size_t as_tok_unescape_spaces(const char *s, size_t n, char *dst)
{
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        if (n - i >= 3 && memcmp(s + i, SPM_SPACE, 3) == 0)
            dst[k++] = ' ', i += 3;
        else
            dst[k++] = s[i++];
    }
    return k;
}

const as_tok_algo as_tok_spm = {
    .gguf_model = "llama",
    .kind = AS_TOK_LLAMA,
    .bos = 1,
    .eos = 2,
    .unk = 0,
    .add_bos = true,
    .space_prefix = true,
    .needs_merges = false,
    .byte_fallback = true,
    .byte_token_name = "<0xNN> token",
    .byte_token = spm_byte_token,
    .encode = spm_encode,
    .decode = as_tok_unescape_spaces,
};
