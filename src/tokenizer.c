/* tokenizer: what every tokenizer algorithm shares, following llama.cpp
 * (llama_vocab::impl::load, tokenizer_st_partition, tokenize,
 * token_to_piece) so ids agree with it. This file: the public API's
 * accessors, cutting special tokens out of the text, encoding (BOS and
 * EOS, sentence pairs) and decoding to bytes. The vocabulary (texts,
 * scores, types, look-up) is built in tok_vocab.c, with the table of
 * algorithms chosen by tokenizer.ggml.model and which tokens are control;
 * tok_gguf.c reads it from a GGUF file's tokenizer.ggml.* keys with
 * llama.cpp's defaults and writes the model card's tokenizer lines;
 * tok_common.c holds what all of them share. The algorithms are tok_bpe.c
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

#include <stdlib.h>
#include <string.h>

/* Longest text encode accepts: keeps every symbol index and byte offset
 * (llama text grows by up to 3x when spaces become '▁') inside int32. */
#define MAX_TEXT_BYTES ((size_t)1 << 29)

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
        if (as_tok_parse_byte_token(s, n, &b)) {
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
