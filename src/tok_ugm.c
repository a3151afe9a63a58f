/* tok_ugm: GGUF's "t5" tokenizer, SentencePiece Unigram as llama.cpp's
 * llm_tokenizer_ugm (T5, Flan-T5, mT5...). Written from the algorithm:
 *
 *   1. normalize the fragment, prefix by prefix: a prefix that is a path
 *      in the trie of user-defined tokens' texts (as deep as it goes) is
 *      kept as it is; else the longest prefix the precompiled charsmap
 *      holds becomes its replacement string; else a well-formed (by
 *      llama.cpp's lenient reading) UTF-8 character is kept, and a byte
 *      that does not start one becomes U+FFFD;
 *   2. spaces in what comes out become '▁' (U+2581): with
 *      remove_extra_whitespaces, runs of them collapse to one '▁' in front
 *      of each run of other bytes (so the text starts with one and loses
 *      its trailing ones); else every space is one '▁', and with
 *      add_space_prefix one more goes in front of the first run of other
 *      bytes;
 *   3. Viterbi over the unigram scores, one code point at a time: every
 *      token (normal, user-defined -- scored 0 -- or unused) that starts
 *      there is a candidate; a code point no token covers alone is <unk>,
 *      scored the lowest normal token's score minus 10; the best path is
 *      read back from the end, consecutive <unk>s made one.
 *
 * The charsmap is a blob: a little-endian uint32 byte count B, B bytes of
 * a XOR-compressed double array (darts-clone's units: BASE in bits 10-30,
 * shifted by 8 when bit 9 is set; LEAF in bit 8; LCHECK in bits 0-7, bit
 * 31 marking a unit that holds a value), then NUL-terminated replacement
 * strings the values are offsets into. It is checked whole at load: every
 * node reachable from the root has all its child slots inside the array,
 * every leaf's value inside the strings and terminated there, no path
 * leads back to a node on it (a cycle), and no key is longer than 256
 * bytes. llama.cpp checks the bounds as it tokenizes, and throws in the
 * middle of a text; here a file that fails any of it is refused by name
 * at load, and encoding never looks out of bounds. */
#include "tokenizer_internal.h"

#include <float.h>
#include <stdio.h>
#include <string.h>

static const char UGM_SPACE[] = "\xE2\x96\x81"; /* U+2581 '▁' */

/* A byte trie: node 0 is the root; edges in one open-addressed table
 * keyed by (node, byte). value: a token id, or -1. */
typedef struct ugm_trie {
    uint64_t *key;  /* (node << 8 | byte) + 1; 0 = empty */
    int32_t *child;
    size_t mask;
    int32_t *value;
    size_t n_nodes;
} ugm_trie;

struct as_tok_ugm_data {
    ugm_trie tokens; /* normal, user-defined and unused tokens' texts */
    ugm_trie user;   /* user-defined tokens' texts */
    uint32_t *xcda;  /* the double array, host order */
    size_t n_xcda;
    char *repl;      /* the replacement strings */
    size_t n_repl;
    float unk_score;
    bool prefix, merge_spaces;
};

static uint64_t edge_hash(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return k;
}

static int32_t trie_child(const ugm_trie *tr, int32_t node, uint8_t c)
{
    uint64_t k = ((uint64_t)node << 8 | c) + 1;
    for (size_t i = edge_hash(k) & tr->mask;; i = (i + 1) & tr->mask) {
        if (tr->key[i] == k)
            return tr->child[i];
        if (tr->key[i] == 0)
            return -1;
    }
}

/* Room for max_nodes nodes (1 + the total length of the texts). */
static bool trie_init(ugm_trie *tr, size_t max_nodes)
{
    size_t cap = as_tok_table_cap(max_nodes);
    tr->key = calloc(cap, sizeof *tr->key);
    tr->child = malloc(cap * sizeof *tr->child);
    tr->value = malloc(max_nodes * sizeof *tr->value);
    tr->mask = cap - 1;
    tr->n_nodes = 1;
    if (!tr->key || !tr->child || !tr->value)
        return false;
    tr->value[0] = -1;
    return true;
}

/* As llama.cpp's naive_trie: a text given twice keeps the last id. */
static void trie_insert(ugm_trie *tr, const char *s, size_t n, int32_t id)
{
    int32_t node = 0;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        int32_t next = trie_child(tr, node, c);
        if (next < 0) {
            uint64_t k = ((uint64_t)node << 8 | c) + 1;
            size_t j = edge_hash(k) & tr->mask;
            while (tr->key[j])
                j = (j + 1) & tr->mask;
            next = (int32_t)tr->n_nodes++;
            tr->key[j] = k;
            tr->child[j] = next;
            tr->value[next] = -1;
        }
        node = next;
    }
    tr->value[node] = id;
}

static void trie_free(ugm_trie *tr)
{
    free(tr->key);
    free(tr->child);
    free(tr->value);
}

void as_tok_ugm_free(as_tok_ugm_data *u)
{
    if (!u)
        return;
    trie_free(&u->tokens);
    trie_free(&u->user);
    free(u->xcda);
    free(u->repl);
    free(u);
}

/* ---------------------------------------------------------------- the charsmap */

static uint32_t xcda_base(const as_tok_ugm_data *u, size_t i)
{
    uint32_t x = u->xcda[i];
    return (x >> 10) << ((x & (1u << 9)) >> 6);
}

static uint32_t xcda_lcheck(const as_tok_ugm_data *u, size_t i) { return u->xcda[i] & ((1u << 31) | 0xff); }
static bool xcda_leaf(const as_tok_ugm_data *u, size_t i) { return (u->xcda[i] >> 8) & 1; }
static uint32_t xcda_value(const as_tok_ugm_data *u, size_t i) { return u->xcda[i] & ((1u << 31) - 1); }

#define CHARSMAP "key 'tokenizer.ggml.precompiled_charsmap'"

/* The leaf below unit v: its value must name a terminated replacement. */
static int check_leaf(const as_tok_ugm_data *u, size_t v, size_t o, as_error *err)
{
    if (o >= u->n_xcda)
        return as_error_set(err, CHARSMAP ": node %zu's value is at unit %zu, past the trie's end (%zu units)",
                            v, o, u->n_xcda);
    uint32_t off = xcda_value(u, o);
    if (off >= u->n_repl)
        return as_error_set(err, CHARSMAP ": node %zu's replacement starts at byte %u, past the end of the "
                                 "replacement strings (%zu bytes)", v, off, u->n_repl);
    if (!memchr(u->repl + off, '\0', u->n_repl - off))
        return as_error_set(err, CHARSMAP ": node %zu's replacement (at byte %u) runs past the end of the "
                                 "strings unterminated", v, off);
    return AS_OK;
}

/* The longest key a charsmap may hold, in bytes: each position of a text
 * walks the trie as deep as the text matches, so a hostile chain of keys
 * would cost time as text length x key length. SentencePiece's rules map
 * a few characters (nmt_nfkc's longest key is 10 bytes). */
#define MAX_KEY_BYTES 256

/* Depth-first over every node reachable from the root (nodes may be
 * shared: darts-clone merges common suffixes), refusing what could make
 * a walk leave the arrays, a cycle, and keys longer than MAX_KEY_BYTES
 * (each node's height: the longest path below it). */
static int check_trie(const as_tok_ugm_data *u, as_error *err)
{
    size_t n = u->n_xcda;
    if (n == 0)
        return AS_OK;
    uint8_t *state = calloc(n, 1); /* 0 new, 1 on the path, 2 done */
    uint32_t *height = calloc(n, sizeof *height);
    struct frame { size_t unit; unsigned c; } *st = malloc(n * sizeof *st);
    if (!state || !height || !st) {
        free(state), free(height), free(st);
        return as_tok_oom(err);
    }
    int rc = AS_OK;
    size_t depth = 1;
    st[0] = (struct frame){0, 1};
    state[0] = 1;
    while (depth && rc == AS_OK) {
        struct frame *f = &st[depth - 1];
        size_t o = f->unit ^ xcda_base(u, f->unit);
        if (f->c == 1 && (o | 0xff) >= n) {
            rc = as_error_set(err, CHARSMAP ": node %zu's children would lie at units %zu..%zu, past the trie's "
                                   "end (%zu units)", f->unit, o & ~(size_t)0xff, o | 0xff, n);
            break;
        }
        if (f->c > 255) {
            state[f->unit] = 2;
            if (depth >= 2 && height[st[depth - 2].unit] < height[f->unit] + 1)
                height[st[depth - 2].unit] = height[f->unit] + 1;
            depth--;
            continue;
        }
        unsigned c = f->c++;
        size_t v = o ^ c;
        if (xcda_lcheck(u, v) != c)
            continue;
        if (state[v] == 1) {
            rc = as_error_set(err, CHARSMAP ": the trie has a cycle (node %zu leads back to node %zu)", f->unit, v);
            break;
        }
        if (state[v] == 2) {
            if (height[f->unit] < height[v] + 1)
                height[f->unit] = height[v] + 1;
            continue;
        }
        if (xcda_leaf(u, v) && (rc = check_leaf(u, v, v ^ xcda_base(u, v), err)) != AS_OK)
            break;
        state[v] = 1;
        st[depth++] = (struct frame){v, 1};
    }
    if (rc == AS_OK && height[0] > MAX_KEY_BYTES)
        rc = as_error_set(err, CHARSMAP ": a key of %u bytes, longer than the %d attnscope reads (SentencePiece's "
                               "rules map a few characters)", height[0], MAX_KEY_BYTES);
    free(state);
    free(height);
    free(st);
    return rc;
}

static int load_charsmap(as_tok_ugm_data *u, const as_tokenizer_spec *sp, as_error *err)
{
    size_t n = sp->charsmap_len;
    const uint8_t *b = sp->charsmap;
    if (!b)
        return AS_OK; /* no normalization but the spaces' */
    if (n < 4)
        return as_error_set(err, CHARSMAP " is %zu bytes, too short for its 4-byte header", n);
    uint32_t blob = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
    if ((uint64_t)blob + 4 >= n)
        return as_error_set(err, CHARSMAP ": its header announces a trie of %u bytes, but only %zu follow "
                                 "(and the replacement strings must come after it)", blob, n - 4);
    u->n_xcda = blob / 4;
    u->n_repl = n - 4 - blob;
    u->xcda = malloc((u->n_xcda ? u->n_xcda : 1) * sizeof *u->xcda);
    u->repl = malloc(u->n_repl);
    if (!u->xcda || !u->repl)
        return as_tok_oom(err);
    for (size_t i = 0; i < u->n_xcda; i++) {
        const uint8_t *p = b + 4 + 4 * i;
        u->xcda[i] = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    }
    memcpy(u->repl, b + 4 + blob, u->n_repl);
    return check_trie(u, err);
}

/* ---------------------------------------------------------------- build */

static bool in_matcher(uint8_t type) { return type == TT_NORMAL || type == TT_USER || type == TT_UNUSED; }

static int ugm_build(as_tokenizer *t, const as_tokenizer_spec *sp, as_error *err)
{
    as_tok_ugm_data *u = calloc(1, sizeof *u);
    if (!u)
        return as_tok_oom(err);
    t->ugm = u;
    u->prefix = sp->add_space_prefix;
    u->merge_spaces = sp->remove_extra_whitespaces;
    /* decode drops the '▁' every fragment then starts with */
    t->add_space_prefix = sp->add_space_prefix || sp->remove_extra_whitespaces;
    size_t all = 1, user = 1;
    float min_score = FLT_MAX;
    for (size_t i = 0; i < t->n; i++) {
        if (in_matcher(t->type[i]))
            all += t->len[i];
        if (t->type[i] == TT_USER)
            user += t->len[i];
        if (t->type[i] == TT_NORMAL && t->score[i] < min_score)
            min_score = t->score[i];
    }
    u->unk_score = min_score - 10.0f;
    if (all > (size_t)INT32_MAX)
        return as_error_set(err, "tokenizer: the tokens' texts total %zu bytes, more than a trie of int32 nodes holds",
                            all);
    if (!trie_init(&u->tokens, all) || !trie_init(&u->user, user))
        return as_tok_oom(err);
    for (size_t i = 0; i < t->n; i++) {
        const char *s = t->arena + t->off[i];
        if (in_matcher(t->type[i]))
            trie_insert(&u->tokens, s, t->len[i], (int32_t)i);
        if (t->type[i] == TT_USER)
            trie_insert(&u->user, s, t->len[i], 0);
    }
    return load_charsmap(u, sp, err);
}

/* ---------------------------------------------------------------- normalize */

typedef struct nbuf {
    char *s;
    size_t n, cap;
    bool non_ws, prepended;
} nbuf;

DEFINE_RESERVE(reserve_char, char)

static bool put_bytes(nbuf *b, const char *s, size_t n)
{
    if (!reserve_char(&b->s, &b->cap, b->n + n + 1))
        return false;
    memcpy(b->s + b->n, s, n);
    b->n += n;
    return true;
}

/* One normalized piece through the space rules (step 2 above). */
static bool put_normalized(const as_tok_ugm_data *u, nbuf *b, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != ' ') {
            if (!b->non_ws) {
                b->non_ws = true;
                if ((u->prefix && !b->prepended) || u->merge_spaces) {
                    if (!put_bytes(b, UGM_SPACE, 3))
                        return false;
                    b->prepended = true;
                }
            }
            if (!put_bytes(b, s + i, 1))
                return false;
        } else {
            b->non_ws = false;
            if (!u->merge_spaces && !put_bytes(b, UGM_SPACE, 3))
                return false;
        }
    }
    return true;
}

/* The longest path from the root the text's prefix follows. */
static size_t user_prefix(const ugm_trie *tr, const uint8_t *s, size_t n)
{
    int32_t node = 0;
    size_t k = 0;
    while (k < n && (node = trie_child(tr, node, s[k])) >= 0)
        k++;
    return k;
}

/* The longest prefix of s[0, n) the charsmap maps: its length, and the
 * replacement's offset in *off. 0 if none. */
static size_t charsmap_prefix(const as_tok_ugm_data *u, const uint8_t *s, size_t n, size_t *off)
{
    if (u->n_xcda == 0)
        return 0;
    size_t best = 0, node = xcda_base(u, 0); /* the root's children's block */
    for (size_t i = 0; i < n && s[i]; i++) {
        size_t v = node ^ s[i];
        if (v >= u->n_xcda || xcda_lcheck(u, v) != s[i])
            break;
        bool leaf = xcda_leaf(u, v);
        node = v ^ xcda_base(u, v);
        if (leaf) {
            if (node >= u->n_xcda)
                break; /* refused at load; kept out of bounds all the same */
            best = i + 1;
            *off = xcda_value(u, node);
        }
    }
    return best;
}

/* llama.cpp's unicode_cpt_from_utf8: the length of the character at s, by
 * the lead byte and the continuation bytes' top bits only (overlong forms
 * and surrogates pass); 0 where it throws. */
static size_t lenient_utf8(const uint8_t *s, size_t n)
{
    uint8_t b = s[0];
    size_t k;
    if (!(b & 0x80))
        return 1;
    if (!(b & 0x40))
        return 0;
    k = !(b & 0x20) ? 2 : !(b & 0x10) ? 3 : !(b & 0x08) ? 4 : 0;
    if (k == 0 || k > n)
        return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return k;
}

static int normalize(const as_tokenizer *t, const char *text, size_t n, nbuf *b, as_error *err)
{
    const as_tok_ugm_data *u = t->ugm;
    const uint8_t *s = (const uint8_t *)text;
    for (size_t i = 0; i < n;) {
        size_t k = user_prefix(&u->user, s + i, n - i), off = 0;
        bool ok;
        if (k) {
            ok = put_normalized(u, b, text + i, k);
        } else if ((k = charsmap_prefix(u, s + i, n - i, &off))) {
            const char *r = u->repl + off; /* terminated inside: checked at load */
            ok = put_normalized(u, b, r, strlen(r));
        } else if ((k = lenient_utf8(s + i, n - i))) {
            ok = put_normalized(u, b, text + i, k);
        } else {
            ok = put_normalized(u, b, "\xEF\xBF\xBD", 3);
            k = 1;
        }
        if (!ok)
            return as_tok_oom(err);
        i += k;
    }
    return AS_OK;
}

/* ---------------------------------------------------------------- Viterbi */

typedef struct best {
    double score;
    size_t from;
    int32_t id;
} best;

DEFINE_RESERVE(reserve_best, best)

/* llama.cpp's unicode_len_utf8: by the lead byte's top four bits. */
static size_t lead_len(uint8_t c)
{
    static const uint8_t len[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
    return len[c >> 4];
}

static int viterbi(const as_tokenizer *t, const uint8_t *s, size_t n, best **res, size_t *cap, work *w,
                   as_error *err)
{
    const as_tok_ugm_data *u = t->ugm;
    if (!reserve_best(res, cap, n + 1))
        return as_tok_oom(err);
    best *r = *res;
    for (size_t i = 0; i <= n; i++)
        r[i] = (best){-DBL_MAX, 0, t->unk};
    r[0].score = 0;
    for (size_t at = 0; at < n;) {
        size_t cp = lead_len(s[at]);
        if (cp > n - at)
            cp = n - at;
        bool whole = false;
        double here = r[at].score;
        int32_t node = 0;
        for (size_t end = at + 1; end <= n; end++) {
            if ((node = trie_child(&u->tokens, node, s[end - 1])) < 0)
                break;
            int32_t id = u->tokens.value[node];
            if (id < 0)
                continue;
            whole |= end - at == cp;
            double sc = here + (t->type[id] == TT_USER ? 0.0 : (double)t->score[id]);
            if (sc > r[end].score)
                r[end] = (best){sc, at, id};
        }
        if (!whole) {
            double sc = here + (double)u->unk_score;
            if (sc > r[at + cp].score)
                r[at + cp] = (best){sc, at, t->unk};
        }
        at += cp;
    }
    /* back from the end, runs of <unk> made one; pushed reversed */
    size_t first = w->nids;
    bool prev_unk = false;
    for (size_t at = n;;) {
        const best *b = &r[at];
        bool is_unk = b->id == t->unk;
        if (!(prev_unk && is_unk)) {
            if (b->id < 0)
                return as_error_set(err, "tokenizer: the text needs the unknown token, and the vocabulary has "
                                         "none (tokenizer.ggml.unknown_token_id)");
            if (as_tok_push_id(w, b->id, err))
                return AS_ERR;
        }
        if (b->from == 0)
            break;
        prev_unk = is_unk;
        at = b->from;
    }
    for (size_t i = first, j = w->nids - 1; i < j; i++, j--) {
        int32_t x = w->ids[i];
        w->ids[i] = w->ids[j];
        w->ids[j] = x;
    }
    return AS_OK;
}

static int ugm_encode(const as_tokenizer *t, const char *s, size_t n, size_t base, work *w, as_error *err)
{
    if (w->ends_only)
        return as_tok_push_end(w, base + n, err);
    nbuf b = {0};
    best *res = NULL;
    size_t cap = 0;
    int rc = normalize(t, s, n, &b, err);
    if (rc == AS_OK && b.n)
        rc = viterbi(t, (const uint8_t *)b.s, b.n, &res, &cap, w, err);
    free(b.s);
    free(res);
    return rc;
}

/* Unigram has no byte fallback: a code point no token covers is <unk>. */
static int32_t ugm_byte_token(const as_tokenizer *t, uint8_t b)
{
    (void)t, (void)b;
    return -1;
}

const as_tok_algo as_tok_ugm = {
    .gguf_model = "t5",
    .kind = AS_TOK_T5,
    .bos = -1,
    .eos = 1,
    .unk = 2,
    .add_bos = false,
    .add_eos = true,
    .space_prefix = false, /* llama.cpp reads add_space_prefix, off when absent */
    .needs_merges = false,
    .byte_fallback = false,
    .byte_token_name = "byte token",
    .build = ugm_build,
    .byte_token = ugm_byte_token,
    .encode = ugm_encode,
    .decode = as_tok_unescape_spaces,
};
