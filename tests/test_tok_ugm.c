/* The "t5" tokenizer (SentencePiece Unigram, src/tok_ugm.c) on its own:
 *
 *   - SentencePiece itself: fixtures/t5-ugm.gguf's ids on 1,200 strings
 *     equal those python3-sentencepiece gives with the .model it was made
 *     from (fixtures/t5-ugm.spm.txt, written by models/recipes/t5_vocab.py
 *     spm-ids; strings where SentencePiece and llama.cpp agree), exact;
 *   - Viterbi and <unk> on a vocabulary small enough to work by hand;
 *   - a charsmap built by hand (one entry, "A" -> "x"), then broken in each
 *     way a hostile file could: refused by name at load;
 *   - a T5 (tiny-t5 with its vocabulary read as "t5") taking its source
 *     through it.
 *
 * The comparison with llama.cpp itself (4,200 strings, every setting of
 * the space switches) is in test_tok_llama.c. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnscope/gguf.h"
#include "attnscope/tokenizer.h"
#include "helpers.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

static as_tokenizer *load_file(const char *path)
{
    as_gguf *g = NULL;
    as_tokenizer *t = NULL;
    as_error err = {{0}};
    cr_assert_eq(as_gguf_open(&g, path, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_tokenizer_from_gguf(&t, g, &err), AS_OK, "%s", err.msg);
    as_gguf_close(g);
    return t;
}

static size_t parse_ids(const char *s, int32_t *out, size_t cap)
{
    size_t n = 0;
    for (char *end; *s && n < cap; s = end) {
        long v = strtol(s, &end, 10);
        if (end == s)
            break;
        out[n++] = (int32_t)v;
    }
    return n;
}

Test(tok_ugm, sentencepiece_ids)
{
    as_tokenizer *t = load_file("fixtures/t5-ugm.gguf");
    cr_assert_eq(as_tokenizer_kind(t), AS_TOK_T5);
    FILE *f = fopen("fixtures/t5-ugm.spm.txt", "r");
    cr_assert(f, "fixtures/t5-ugm.spm.txt is missing");
    static char line[1 << 16], text[1 << 15];
    int32_t want[4096];
    size_t total = 0, same = 0;
    while (fgets(line, sizeof line, f)) {
        char *tab = strchr(line, '\t');
        cr_assert(tab, "line %zu has no tab", total + 1);
        size_t n = 0;
        for (char *h = line; h + 1 < tab; h += 2) {
            unsigned b;
            cr_assert_eq(sscanf(h, "%2x", &b), 1);
            text[n++] = (char)b;
        }
        size_t nw = parse_ids(tab + 1, want, N_OF(want));
        int32_t *ids;
        size_t ni;
        as_error err = {{0}};
        cr_assert_eq(as_tokenizer_tokenize(t, text, n, 0, &ids, &ni, &err), AS_OK, "%s", err.msg);
        bool ok = ni == nw && memcmp(ids, want, ni * sizeof *ids) == 0;
        if (!ok && total - same < 5)
            fprintf(stderr, "sentencepiece differs on line %zu ('%.*s')\n", total + 1, (int)n, text);
        same += ok;
        total++;
        free(ids);
    }
    fclose(f);
    as_tokenizer_free(t);
    fprintf(stderr, "t5-ugm against sentencepiece: %zu/%zu strings identical\n", same, total);
    cr_assert_eq(total, 1200, "the fixture should hold 1200 strings");
    cr_assert_eq(same, total, "%zu of %zu strings differ from sentencepiece", total - same, total);
}

/* What T5 adds and how decode reads it back: EOS (</s>, id 1) appended
 * and no BOS; the text comes back normalized (NFKC, spaces collapsed),
 * without the '▁' each fragment of raw text starts with (after a
 * user-defined token too, so that piece's text comes back as it was). */
Test(tok_ugm, special_tokens_and_decode)
{
    as_tokenizer *t = load_file("fixtures/t5-ugm.gguf");
    cr_assert(as_tokenizer_add_eos(t));
    cr_assert(!as_tokenizer_add_bos(t));
    cr_assert_eq(as_tokenizer_eos(t), 1);
    const char *in[] = {"Hello  world", "  ＡＢＣ  Haus\taufgabe\n", "Straße", "a<extra_id_0>b"};
    const char *out[] = {"Hello world", "ABC Haus aufgabe", "Straße", "a<extra_id_0>b"};
    for (size_t i = 0; i < N_OF(in); i++) {
        int32_t *ids, *plain;
        size_t n, np;
        char *back;
        size_t nb;
        as_error err = {{0}};
        cr_assert_eq(as_tokenizer_tokenize(t, in[i], strlen(in[i]), AS_TOK_ADD_SPECIAL, &ids, &n, &err), AS_OK);
        cr_assert_eq(as_tokenizer_tokenize(t, in[i], strlen(in[i]), 0, &plain, &np, &err), AS_OK);
        cr_assert_eq(n, np + 1);
        cr_assert_eq(ids[n - 1], 1, "EOS last");
        cr_assert_eq(memcmp(ids, plain, np * sizeof *ids), 0);
        cr_assert_eq(as_tokenizer_decode(t, ids, n, &back, &nb, &err), AS_OK, "%s", err.msg);
        cr_assert_str_eq(back, out[i], "decode(encode('%s'))", in[i]);
        free(ids), free(plain), free(back);
    }
    as_tokenizer_free(t);
}

/* ------------------------------------------------------------------ */
/* by hand */

enum { T_PAD, T_EOS, T_UNK, T_SP, T_SPA, T_SPAB, T_A, T_B, T_X, T_SPX, N_HAND };

static const char *const HAND[N_HAND] = {"<pad>", "</s>", "<unk>", "\xE2\x96\x81", "\xE2\x96\x81" "a",
                                         "\xE2\x96\x81" "ab", "a", "b", "x", "\xE2\x96\x81" "x"};
static const float HAND_SCORE[N_HAND] = {0, 0, 0, -0.5f, -1, -5, -3, -1, -2, -2};
static const int32_t HAND_TYPE[N_HAND] = {3, 3, 2, 1, 1, 1, 1, 1, 1, 1};

static as_tokenizer *hand(const uint8_t *charsmap, size_t n, as_error *err)
{
    as_tokenizer_spec sp = {.kind = AS_TOK_T5, .tokens = HAND, .n_tokens = N_HAND, .scores = HAND_SCORE,
                            .token_types = HAND_TYPE, .bos_id = -1, .eos_id = T_EOS, .unk_id = T_UNK,
                            .add_eos = true, .add_space_prefix = true, .charsmap = charsmap,
                            .charsmap_len = n};
    as_tokenizer *t = NULL;
    return as_tokenizer_new(&t, &sp, err) == AS_OK ? t : NULL;
}

static void expect_ids(as_tokenizer *t, const char *text, const int32_t *want, size_t nw)
{
    int32_t *ids;
    size_t n;
    as_error err = {{0}};
    cr_assert_eq(as_tokenizer_tokenize(t, text, strlen(text), 0, &ids, &n, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(n, nw, "'%s': %zu ids, expected %zu", text, n, nw);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(ids[i], want[i], "'%s': id %zu is %d, expected %d", text, i, ids[i], want[i]);
    free(ids);
}

/* "ab" is "▁ab": ▁ab -5, ▁a + b -2, ▁ + a + b -4.5: the second. "z" is no
 * token: <unk> scores the lowest normal score (-5) less 10, so "az" is
 * ▁a + <unk> (-16; ▁ + a + <unk> is -18.5), and "zz" ▁ + one <unk> (two
 * <unk>s in a row are one). */
Test(tok_ugm, viterbi_by_hand)
{
    as_error err = {{0}};
    as_tokenizer *t = hand(NULL, 0, &err);
    cr_assert(t, "%s", err.msg);
    expect_ids(t, "ab", (int32_t[]){T_SPA, T_B}, 2);
    expect_ids(t, "az", (int32_t[]){T_SPA, T_UNK}, 2);
    expect_ids(t, "zz", (int32_t[]){T_SP, T_UNK}, 2);
    expect_ids(t, "a b", (int32_t[]){T_SPA, T_SP, T_B}, 3);
    expect_ids(t, "", NULL, 0);
    as_tokenizer_free(t);
}

/* A charsmap with one entry, "A" -> "x": the root (unit 0) has its
 * children's block at 256; 'A' is unit 256 ^ 0x41 = 321, a leaf whose
 * value unit is 321 ^ BASE = 512, holding offset 0 of the strings "x\0". */
#define UNITS 768
static size_t charsmap(uint8_t *out, uint32_t root_base, uint32_t a_unit, uint32_t value_unit,
                       const char *strings, size_t ns)
{
    static uint32_t u[UNITS];
    memset(u, 0, sizeof u);
    u[0] = root_base << 10;
    u[321] = a_unit;
    u[512] = value_unit;
    uint32_t blob = UNITS * 4;
    memcpy(out, &blob, 4); /* little-endian hosts only, as the test machine */
    memcpy(out + 4, u, blob);
    memcpy(out + 4 + blob, strings, ns);
    return 4 + blob + ns;
}

static const uint32_t A_LEAF = (321u ^ 512u) << 10 | 1u << 8 | 0x41;
static const uint32_t VALUE0 = 1u << 31;

Test(tok_ugm, charsmap_by_hand)
{
    static uint8_t b[4 + UNITS * 4 + 16];
    size_t n = charsmap(b, 256, A_LEAF, VALUE0, "x", 2);
    as_error err = {{0}};
    as_tokenizer *t = hand(b, n, &err);
    cr_assert(t, "%s", err.msg);
    expect_ids(t, "A", (int32_t[]){T_SPX}, 1);
    expect_ids(t, "xA", (int32_t[]){T_SPX, T_X}, 2);
    expect_ids(t, "B", (int32_t[]){T_SP, T_UNK}, 2); /* not in the map: kept, and no token has it */
    as_tokenizer_free(t);
}

static void expect_refused(const uint8_t *b, size_t n, const char *want)
{
    as_error err = {{0}};
    as_tokenizer *t = hand(b, n, &err);
    cr_assert_null(t, "a charsmap that should be refused (%s) was accepted", want);
    cr_assert(strstr(err.msg, "tokenizer.ggml.precompiled_charsmap"), "'%s' does not name the key", err.msg);
    cr_assert(strstr(err.msg, want), "'%s' lacks '%s'", err.msg, want);
}

Test(tok_ugm, hostile_charsmaps)
{
    static uint8_t b[4 + UNITS * 4 + 16];
    size_t n = charsmap(b, 256, A_LEAF, VALUE0, "x", 2);
    expect_refused(b, 3, "too short");
    expect_refused(b, 0, "too short");
    uint32_t big = UNITS * 4 + 2; /* the strings would start past the end */
    memcpy(b, &big, 4);
    expect_refused(b, n, "announces");
    n = charsmap(b, 1024, A_LEAF, VALUE0, "x", 2); /* the root's children past the end */
    expect_refused(b, n, "past the trie's end");
    n = charsmap(b, 256, (321u ^ 2048u) << 10 | 1u << 8 | 0x41, VALUE0, "x", 2); /* value unit past the end */
    expect_refused(b, n, "past the trie's end");
    n = charsmap(b, 256, A_LEAF, VALUE0 | 7, "x", 2); /* string offset past the strings */
    expect_refused(b, n, "past the end of the replacement strings");
    n = charsmap(b, 256, A_LEAF, VALUE0, "xy", 2); /* no NUL */
    expect_refused(b, n, "unterminated");
    n = charsmap(b, 256, (321u ^ 256u) << 10 | 0x41, VALUE0, "x", 2); /* 'A' leads back to the root's block */
    expect_refused(b, n, "cycle");
}

/* A chain of L nodes spelling "aaa...a" (node k's children in block k + 1):
 * 256 bytes is the longest key read, 257 is refused. */
static size_t chain(uint8_t *out, unsigned L)
{
    size_t units = 256 * ((size_t)L + 2);
    uint32_t *u = calloc(units, sizeof *u);
    u[0] = 256u << 10;
    for (unsigned k = 1; k <= L; k++) {
        uint32_t v = 256u * k ^ 0x61;
        u[v] = (v ^ 256u * (k + 1)) << 10 | 0x61;
    }
    uint32_t blob = (uint32_t)(units * 4);
    memcpy(out, &blob, 4);
    memcpy(out + 4, u, blob);
    memcpy(out + 4 + blob, "x", 2);
    free(u);
    return 4 + blob + 2;
}

Test(tok_ugm, long_keys)
{
    uint8_t *b = malloc(4 + 256 * 259 * 4 + 2);
    as_error err = {{0}};
    as_tokenizer *t = hand(b, chain(b, 256), &err);
    cr_assert(t, "a key of 256 bytes: %s", err.msg);
    as_tokenizer_free(t);
    expect_refused(b, chain(b, 257), "a key of 257 bytes");
    free(b);
}

/* The same through a GGUF: a charsmap of the wrong type is refused by
 * name, with the file's name. */
Test(tok_ugm, charsmap_type)
{
    as_gguf_writer *w = as_gguf_writer_new(3);
    as_gguf_writer_set_str(w, "general.architecture", "t5");
    as_gguf_writer_set_str(w, "tokenizer.ggml.model", "t5");
    as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", HAND, N_HAND);
    as_gguf_writer_set_arr(w, "tokenizer.ggml.scores", AS_GGUF_FLOAT32, HAND_SCORE, N_HAND);
    as_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", AS_GGUF_INT32, HAND_TYPE, N_HAND);
    as_gguf_writer_set_arr(w, "tokenizer.ggml.precompiled_charsmap", AS_GGUF_INT32, HAND_TYPE, N_HAND);
    uint8_t *buf = NULL;
    size_t size = 0;
    as_gguf *g = NULL;
    as_tokenizer *t = NULL;
    as_error err = {{0}};
    cr_assert_eq(as_gguf_writer_to_memory(w, &buf, &size, &err), AS_OK, "%s", err.msg);
    as_gguf_writer_free(w);
    cr_assert_eq(as_gguf_parse(&g, buf, size, "mem.gguf", &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_tokenizer_from_gguf(&t, g, &err), AS_ERR);
    cr_assert_null(t);
    cr_assert(strstr(err.msg, "mem.gguf") && strstr(err.msg, "precompiled_charsmap") &&
                  strstr(err.msg, "expected an array of uint8"),
              "%s", err.msg);
    as_gguf_close(g);
    free(buf);
}

/* ------------------------------------------------------------------ */
/* through a T5 */

/* tiny-t5 with its vocabulary read as T5 reads one ("t5": Unigram, no
 * BOS, EOS added): `source TEXT` gives the encoder the ids the tokenizer
 * gives, </s> last, and the model runs over them. */
Test(tok_ugm, a_t5_reads_its_source_with_unigram)
{
    as_gguf *g;
    as_error err = {{0}};
    cr_assert_eq(as_gguf_open(&g, "fixtures/tiny-t5.gguf", &err), AS_OK, "%s", err.msg);
    as_gguf_writer *w = as_gguf_writer_new(3);
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (strcmp(g->kvs[i].key, "tokenizer.ggml.model") && strcmp(g->kvs[i].key, "tokenizer.ggml.add_bos_token"))
            as_gguf_writer_copy_kv(w, &g->kvs[i]);
    as_gguf_writer_set_str(w, "tokenizer.ggml.model", "t5");
    as_gguf_writer_set_bool(w, "tokenizer.ggml.add_space_prefix", true);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        cr_assert_eq(as_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err), AS_OK);
    }
    char path[] = "/tmp/attnscope-ugm-XXXXXX.gguf";
    close(mkstemps(path, 5));
    cr_assert_eq(as_gguf_writer_write(w, path, &err), AS_OK, "%s", err.msg);
    as_gguf_writer_free(w);
    as_gguf_close(g);

    as_session *s = open_session(path, 64);
    unlink(path);
    const as_tokenizer *t = s->model->tok;
    cr_assert_eq(as_tokenizer_kind(t), AS_TOK_T5);
    const char *text = "the cat sat on the mat";
    int32_t *ids;
    size_t n;
    cr_assert_eq(as_tokenizer_tokenize(t, text, strlen(text), AS_TOK_ADD_SPECIAL | AS_TOK_PARSE_SPECIAL, &ids, &n,
                                       &err), AS_OK, "%s", err.msg);
    cr_assert_gt(n, 2);
    cr_assert_eq(ids[n - 1], as_tokenizer_eos(t), "</s> last");
    cr_assert_neq(ids[0], as_tokenizer_bos(t), "no BOS");
    run_ok(s, "source the cat sat on the mat; finish");
    const as_stream_state *src = &s->it->st[s->prog->source_stream];
    cr_assert_eq((size_t)src->n_tokens, n, "the source has %d tokens, the tokenizer gives %zu", src->n_tokens, n);
    cr_assert_eq(memcmp(src->tokens, ids, n * sizeof *ids), 0, "the source's ids are the tokenizer's");
    char *back;
    size_t nb;
    cr_assert_eq(as_tokenizer_decode(t, src->tokens, (size_t)src->n_tokens, &back, &nb, &err), AS_OK);
    cr_assert_str_eq(back, text);
    free(back);
    free(ids);
    close_session(s);
}
