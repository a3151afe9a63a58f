/* Tests for what tokenizer.ggml.pre and llama.cpp's loader decide: the
 * pre-tokenizers' splits (worked out by hand from llama.cpp's patterns and
 * its hand-written splitters, in the comments), ignore_merges, BOS/EOS
 * defaults, special tokens read from the text (parse_special) with
 * phi-3's rstrip, files without a vocabulary ("none"), unknown
 * pre-tokenizers, and the model card's tokenizer lines. The comparison
 * with llama.cpp's own ids is tests/test_tok_llama.c. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/gguf.h"
#include "attnscope/tokenizer.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------ */
/* helpers: a byte-level vocabulary (GPT-2's 256 symbols) plus extras */

typedef struct vocab {
    char *tok[400];
    int32_t type[400];
    size_t n;
    const char *merges[16];
    size_t nm;
} vocab;

static int32_t vadd(vocab *v, const char *s, int32_t type)
{
    cr_assert_lt(v->n, N_OF(v->tok));
    v->tok[v->n] = strdup(s);
    v->type[v->n] = type;
    return (int32_t)v->n++;
}

static void vfree(vocab *v)
{
    for (size_t i = 0; i < v->n; i++)
        free(v->tok[i]);
}

/* GPT-2's bytes_to_unicode(): printable Latin-1 as itself, the other 68
 * bytes as U+0100... in byte order (written here again, not shared). */
static void add_alphabet(vocab *v)
{
    unsigned next = 256;
    for (int pass = 0; pass < 2; pass++)
        for (int b = 0; b < 256; b++) {
            bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
            if (printable != (pass == 0))
                continue;
            unsigned cp = pass == 0 ? (unsigned)b : next++;
            char s[4] = {0};
            if (cp < 0x80)
                s[0] = (char)cp;
            else
                s[0] = (char)(0xC0 | (cp >> 6)), s[1] = (char)(0x80 | (cp & 0x3F));
            vadd(v, s, 1);
        }
}

static as_tokenizer *make_pre(const vocab *v, const char *pre)
{
    as_tokenizer_spec sp = {
        .kind = AS_TOK_GPT2, .tokens = (const char *const *)v->tok, .n_tokens = v->n,
        .token_types = v->type, .merges = v->merges, .n_merges = v->nm,
        .bos_id = -1, .eos_id = -1, .unk_id = -1, .pre = pre,
    };
    as_tokenizer *t = NULL;
    as_error err = {{0}};
    cr_assert_eq(as_tokenizer_new(&t, &sp, &err), AS_OK, "%s: %s", pre, err.msg);
    return t;
}

static void expect_split(const as_tokenizer *t, const char *text, const char *const *want, size_t n)
{
    size_t *ends = NULL, n_ends = 0, start = 0;
    as_error err = {{0}};
    cr_assert_eq(as_tokenizer_pretokens(t, text, strlen(text), &ends, &n_ends, &err), AS_OK, "%s", err.msg);
    for (size_t i = 0; i < n && i < n_ends; i++) {
        size_t len = ends[i] - start;
        cr_assert(len == strlen(want[i]) && memcmp(text + start, want[i], len) == 0,
                  "%s: '%s': piece %zu is '%.*s', want '%s'", as_tokenizer_pre(t), text, i, (int)len,
                  text + start, want[i]);
        start = ends[i];
    }
    cr_assert_eq(n_ends, n, "%s: '%s': %zu pieces, want %zu", as_tokenizer_pre(t), text, n_ends, n);
    free(ends);
}

#define EXPECT_SPLIT(t, text, ...)                                                       \
    expect_split(t, text, (const char *const[]){__VA_ARGS__},                           \
                 sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))

static void expect_ids(const as_tokenizer *t, const char *text, unsigned flags, const int32_t *want,
                       size_t n)
{
    int32_t *ids = NULL;
    size_t n_ids = 0;
    as_error err = {{0}};
    cr_assert_eq(as_tokenizer_tokenize(t, text, strlen(text), flags, &ids, &n_ids, &err), AS_OK, "%s",
                 err.msg);
    cr_assert_eq(n_ids, n, "'%s' (flags %u): %zu ids, want %zu", text, flags, n_ids, n);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(ids[i], want[i], "'%s' (flags %u): id %zu is %d, want %d", text, flags, i, ids[i], want[i]);
    free(ids);
}

#define EXPECT_IDS(t, text, flags, ...)                                                  \
    expect_ids(t, text, flags, (const int32_t[]){__VA_ARGS__},                          \
               sizeof((const int32_t[]){__VA_ARGS__}) / sizeof(int32_t))

static int32_t id_of(const as_tokenizer *t, const char *piece)
{
    int32_t id = as_tokenizer_find(t, piece);
    cr_assert_geq(id, 0, "no token '%s'", piece);
    return id;
}

/* ------------------------------------------------------------------ */
/* the splits */

Test(tok_pre, llama3_digits_in_threes_and_newlines)
{
    vocab v = {0};
    add_alphabet(&v);
    as_tokenizer *t = make_pre(&v, "llama-bpe");
    cr_assert_str_eq(as_tokenizer_pre(t), "llama3");
    /* \p{N}{1,3}: the 3333 is 333|3, not GPT-2's one piece */
    EXPECT_SPLIT(t, "3333", "333", "3");
    EXPECT_SPLIT(t, "1234567", "123", "456", "7");
    /* [^\r\n\p{L}\p{N}]?\p{L}+ takes the space (or any one symbol) before a word */
    EXPECT_SPLIT(t, "Hello world", "Hello", " world");
    EXPECT_SPLIT(t, "a,b", "a", ",b");
    /* contractions in any case: (?i:'s|'t|'re|'ve|'m|'ll|'d) */
    EXPECT_SPLIT(t, "I'LL we'Ve", "I", "'LL", " we", "'Ve");
    /* \s*[\r\n]+ ends at the last newline of a whitespace run */
    EXPECT_SPLIT(t, "  \n\nx", "  \n\n", "x");
    /* ?[^\s\p{L}\p{N}]+[\r\n]*: punctuation keeps the newlines after it */
    EXPECT_SPLIT(t, "...\n\nok", "...\n\n", "ok");
    /* \s+(?!\S): the last space goes with the next word */
    EXPECT_SPLIT(t, "a   b", "a", "  ", " b");
    as_tokenizer_free(t);
    vfree(&v);
}

Test(tok_pre, qwen2_and_tekken_single_digits)
{
    vocab v = {0};
    add_alphabet(&v);
    as_tokenizer *t = make_pre(&v, "qwen2");
    EXPECT_SPLIT(t, "3333 x", "3", "3", "3", "3", " x");
    as_tokenizer_free(t);
    t = make_pre(&v, "tekken");
    EXPECT_SPLIT(t, "42", "4", "2");
    /* upper-case runs then lower-case runs: HelloWorld is two words */
    EXPECT_SPLIT(t, "HelloWorld", "Hello", "World");
    as_tokenizer_free(t);
    vfree(&v);
}

Test(tok_pre, gpt4o_cases_as_llama_cpp_collapses_them)
{
    vocab v = {0};
    add_alphabet(&v);
    as_tokenizer *t = make_pre(&v, "gpt-4o");
    EXPECT_SPLIT(t, "HelloWorld", "Hello", "World");
    EXPECT_SPLIT(t, "don't 12345", "don't", " ", "123", "45");
    /* llama.cpp matches this pattern over collapsed text, where every
     * non-ASCII letter is one byte that is "not a-z" and "not A-Z" alike:
     * É counts as both cases, so ÉcoleÉcole stays one piece (tiktoken
     * would split it); ÉcoleEcole splits at the ASCII E */
    EXPECT_SPLIT(t, "ÉcoleÉcole", "ÉcoleÉcole");
    EXPECT_SPLIT(t, "ÉcoleEcole", "École", "Ecole");
    as_tokenizer_free(t);
    vfree(&v);
}

Test(tok_pre, deepseek_splits)
{
    vocab v = {0};
    add_alphabet(&v);
    /* deepseek-coder: [\r\n], \s?\p{L}+, \s?\p{P}+, [一-龥ࠀ-一가-퟿]+, \p{N} */
    as_tokenizer *t = make_pre(&v, "deepseek-coder");
    EXPECT_SPLIT(t, "abc123", "abc", "1", "2", "3");
    EXPECT_SPLIT(t, "a\nb", "a", "\n", "b");
    as_tokenizer_free(t);
    /* deepseek-v3: \p{N}{1,3}, then [一-龥぀-ゟ゠-ヿ]+ cuts Han and kana out */
    t = make_pre(&v, "deepseek-v3");
    EXPECT_SPLIT(t, "12345", "123", "45");
    EXPECT_SPLIT(t, "日本語abc", "日本語", "abc");
    as_tokenizer_free(t);
    /* deepseek-llm: \s+$ keeps trailing whitespace whole */
    t = make_pre(&v, "deepseek-llm");
    EXPECT_SPLIT(t, "ab  ", "ab", "  ");
    as_tokenizer_free(t);
    vfree(&v);
}

Test(tok_pre, default_falcon_starcoder)
{
    vocab v = {0};
    add_alphabet(&v);
    /* llama.cpp's "default" (no tokenizer.ggml.pre): punctuation runs, GPT-2's
     * split, \p{N}+, then [0-9][0-9][0-9] */
    as_tokenizer *t = make_pre(&v, "default");
    EXPECT_SPLIT(t, "12345 abc", "123", "45", " abc");
    EXPECT_SPLIT(t, "a+=b", "a", "+=", "b");
    as_tokenizer_free(t);
    t = make_pre(&v, "falcon");
    EXPECT_SPLIT(t, "1234", "123", "4");
    as_tokenizer_free(t);
    /* starcoder, refact, command-r, smollm: every digit alone first */
    static const char *const digits_alone[] = {"starcoder", "refact", "command-r", "smollm"};
    for (size_t i = 0; i < N_OF(digits_alone); i++) {
        t = make_pre(&v, digits_alone[i]);
        EXPECT_SPLIT(t, "x 123", "x", " ", "1", "2", "3");
        as_tokenizer_free(t);
    }
    /* mpt and gpt-2: GPT-2's split, digits together */
    t = make_pre(&v, "mpt");
    EXPECT_SPLIT(t, "x 123", "x", " 123");
    as_tokenizer_free(t);
    vfree(&v);
}

/* Every tokenizer.ggml.pre value llama.cpp knows (llama-vocab.cpp),
 * typed here from its source: each builds (its patterns compile) with no
 * warning -- except the ones it special-cases in code of its own or that
 * are not byte-level BPE, which attnscope does not have. */
Test(tok_pre, every_llama_cpp_name)
{
    static const char *const known[] = {
        "default", "minicpm5", "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral",
        "midm-2.0", "lfm2", "jina-v5-nano", "deepseek-llm", "deepseek-coder", "deepseek-v3", "spark2_5",
        "youtu", "falcon", "mpt", "starcoder", "gpt-2", "phi-2", "jina-es", "jina-de", "gigachat",
        "jina-v2-es", "jina-v2-de", "a.x-4.0", "mellum", "modern-bert", "jais-2", "jina-v1-en",
        "jina-v2-code", "roberta-bpe", "refact", "command-r", "qwen2", "deepseek-r1-qwen", "kormo",
        "f2llmv2", "qwen35", "stablelm2", "olmo", "dbrx", "smaug-bpe", "poro-chat", "glm4", "chatglm-bpe",
        "viking", "jais", "tekken", "smollm", "codeshell", "bloom", "gpt3-finnish", "exaone", "exaone4",
        "exaone-moe", "chameleon", "minerva-7b", "megrez", "gpt-4o", "llama4", "kanana2", "talkie",
        "granite-embed-multi-97m", "trillion", "granite-docling", "bailingmoe", "bailingmoe2", "llada-moe",
        "seed-coder", "hunyuan", "hunyuan-dense", "hy_v4", "joyai-llm", "ufakzeka", "grok-2", "laguna",
        "minimax-m2", "solar-open", "mellum2",
    };
    static const char *const not_here[] = {"kimi-k2", "afmoe", "tiny_aya", "cohere2moe", "superbpe",
                                           "gemma4", "sarvam-moe", "whitespace", "granite-embed-multi-311m"};
    vocab v = {0};
    add_alphabet(&v);
    for (size_t i = 0; i < N_OF(known); i++) {
        as_tokenizer *t = make_pre(&v, known[i]);
        cr_assert_str_eq(as_tokenizer_warning(t), "", "%s: %s", known[i], as_tokenizer_warning(t));
        EXPECT_SPLIT(t, "ok", "ok");
        as_tokenizer_free(t);
    }
    for (size_t i = 0; i < N_OF(not_here); i++) {
        as_tokenizer *t = make_pre(&v, not_here[i]);
        cr_assert(strstr(as_tokenizer_warning(t), not_here[i]), "%s: no warning", not_here[i]);
        cr_assert_str_eq(as_tokenizer_pre(t), "gpt2", "runs GPT-2's split");
        as_tokenizer_free(t);
    }
    vfree(&v);
}

Test(tok_pre, unknown_name_warns_and_splits_as_gpt2)
{
    vocab v = {0};
    add_alphabet(&v);
    as_tokenizer *t = make_pre(&v, "no-such-pre");
    cr_assert(strstr(as_tokenizer_warning(t), "'no-such-pre' is unknown"), "%s", as_tokenizer_warning(t));
    cr_assert(strstr(as_tokenizer_warning(t), "llama.cpp"), "%s", as_tokenizer_warning(t));
    EXPECT_SPLIT(t, "3333 don't", "3333", " don", "'t");
    as_tokenizer_free(t);
    t = make_pre(&v, NULL); /* a spec without a name: GPT-2's split, quietly */
    cr_assert_str_eq(as_tokenizer_pre(t), "gpt2");
    cr_assert_str_eq(as_tokenizer_warning(t), "");
    as_tokenizer_free(t);
    vfree(&v);
}

Test(tok_pre, long_texts_stay_linear, .timeout = 60)
{
    /* the regex engine backtracks on the heap: a megabyte of one letter
     * or one space must neither overflow the stack nor take long */
    vocab v = {0};
    add_alphabet(&v);
    size_t n = 1 << 20;
    char *text = malloc(n);
    static const char *const pres[] = {"gpt-4o", "deepseek-v3", "deepseek-llm", "tekken", "default"};
    for (size_t k = 0; k < N_OF(pres); k++) {
        as_tokenizer *t = make_pre(&v, pres[k]);
        for (int fill = 0; fill < 2; fill++) {
            memset(text, fill ? ' ' : 'a', n);
            size_t *ends = NULL, n_ends = 0;
            as_error err = {{0}};
            cr_assert_eq(as_tokenizer_pretokens(t, text, n, &ends, &n_ends, &err), AS_OK, "%s", err.msg);
            cr_assert_eq(ends[n_ends - 1], n);
            free(ends);
        }
        as_tokenizer_free(t);
    }
    free(text);
    vfree(&v);
}

/* ------------------------------------------------------------------ */
/* ignore_merges */

Test(tok_pre, ignore_merges_keeps_a_whole_word)
{
    vocab v = {0};
    add_alphabet(&v);
    int32_t bc = vadd(&v, "bc", 1), abc = vadd(&v, "abc", 1);
    v.merges[v.nm++] = "b c"; /* no merge makes "abc" */
    as_tokenizer *t = make_pre(&v, "gpt-2");
    int32_t a = id_of(t, "a");
    cr_assert_not(as_tokenizer_ignore_merges(t));
    EXPECT_IDS(t, "abc", 0, a, bc);
    as_tokenizer_free(t);
    /* Llama 3: the pre-token "abc" is a token, so it is that token */
    t = make_pre(&v, "llama-bpe");
    cr_assert(as_tokenizer_ignore_merges(t));
    EXPECT_IDS(t, "abc", 0, abc);
    EXPECT_IDS(t, "xabc", 0, id_of(t, "x"), id_of(t, "a"), bc); /* "xabc" is no token: merged */
    as_tokenizer_free(t);
    vfree(&v);
}

/* ------------------------------------------------------------------ */
/* from GGUF: BOS/EOS defaults, special tokens, phi-3, none */

typedef struct gguf_mem {
    uint8_t *buf;
    size_t size;
    as_gguf *g;
} gguf_mem;

static as_gguf_writer *bpe_writer(const vocab *v, const char *pre)
{
    as_gguf_writer *w = as_gguf_writer_new(3);
    as_gguf_writer_set_str(w, "general.architecture", "llama");
    as_gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2");
    if (pre)
        as_gguf_writer_set_str(w, "tokenizer.ggml.pre", pre);
    as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v->tok, v->n);
    as_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", AS_GGUF_INT32, v->type, v->n);
    as_gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", v->merges, v->nm);
    return w;
}

static as_tokenizer *load(as_gguf_writer *w, gguf_mem *m)
{
    as_error err = {{0}};
    as_tokenizer *t = NULL;
    cr_assert_eq(as_gguf_writer_to_memory(w, &m->buf, &m->size, &err), AS_OK, "%s", err.msg);
    as_gguf_writer_free(w);
    cr_assert_eq(as_gguf_parse(&m->g, m->buf, m->size, "mem.gguf", &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_tokenizer_from_gguf(&t, m->g, &err), AS_OK, "%s", err.msg);
    return t;
}

static void unload(gguf_mem *m, as_tokenizer *t)
{
    as_tokenizer_free(t);
    as_gguf_close(m->g);
    free(m->buf);
}

/* The alphabet, then BOS/EOS-like control tokens. */
static void chat_vocab(vocab *v, int32_t *bot, int32_t *eot, int32_t *im_start)
{
    add_alphabet(v);
    *bot = vadd(v, "<|begin_of_text|>", 3);
    *eot = vadd(v, "<|end_of_text|>", 3);
    *im_start = vadd(v, "<|im_start|>", 1); /* typed normal: llama.cpp leaves it so */
}

Test(tok_pre, bos_and_eos_defaults_as_llama_cpp)
{
    vocab v = {0};
    int32_t bot, eot, ims;
    chat_vocab(&v, &bot, &eot, &ims);
    static const struct {
        const char *pre;
        int add_bos_key; /* -1: absent */
        int add_eos_key;
        bool bos, eos;
    } cases[] = {
        {"llama-bpe", -1, -1, true, false}, /* llama3: BOS by default */
        {"tekken", -1, -1, true, false},
        {"gpt-2", -1, -1, false, false},    /* other BPE: none */
        {"qwen2", -1, -1, false, false},
        {"llama-bpe", 0, -1, false, false}, /* the file's add_bos_token wins */
        {"gpt-2", 1, 1, true, true},
        {NULL, -1, -1, false, false},       /* no pre: llama.cpp's "default" */
    };
    for (size_t i = 0; i < N_OF(cases); i++) {
        as_gguf_writer *w = bpe_writer(&v, cases[i].pre);
        as_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bot);
        as_gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", (uint32_t)eot);
        if (cases[i].add_bos_key >= 0)
            as_gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", cases[i].add_bos_key);
        if (cases[i].add_eos_key >= 0)
            as_gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", cases[i].add_eos_key);
        gguf_mem m = {0};
        as_tokenizer *t = load(w, &m);
        cr_assert_eq(as_tokenizer_add_bos(t), cases[i].bos, "case %zu", i);
        cr_assert_eq(as_tokenizer_add_eos(t), cases[i].eos, "case %zu", i);
        if (!cases[i].pre)
            cr_assert_str_eq(as_tokenizer_pre(t), "default");
        int32_t x = id_of(t, "x");
        if (cases[i].bos && cases[i].eos)
            EXPECT_IDS(t, "x", AS_TOK_ADD_SPECIAL, bot, x, eot);
        else if (cases[i].bos)
            EXPECT_IDS(t, "x", AS_TOK_ADD_SPECIAL, bot, x);
        else
            EXPECT_IDS(t, "x", AS_TOK_ADD_SPECIAL, x);
        EXPECT_IDS(t, "x", 0, x); /* without the flag, never */
        unload(&m, t);
    }
    vfree(&v);
}

Test(tok_pre, special_tokens_read_from_text_when_asked)
{
    vocab v = {0};
    int32_t bot, eot, ims;
    chat_vocab(&v, &bot, &eot, &ims);
    gguf_mem m = {0};
    as_tokenizer *t = load(bpe_writer(&v, "gpt-2"), &m);
    int32_t lt = id_of(t, "<"), x = id_of(t, "x");
    /* parsed: the control token. <|im_start|> is typed normal here, and it
     * is on none of llama.cpp's lists of control-looking texts (ends of
     * turns, FIM markers), so it stays text */
    EXPECT_IDS(t, "<|begin_of_text|>x", AS_TOK_PARSE_SPECIAL, bot, x);
    int32_t *ids;
    size_t n;
    as_error err = {{0}};
    cr_assert_eq(as_tokenizer_tokenize(t, "<|begin_of_text|>x", 18, 0, &ids, &n, &err), AS_OK);
    cr_assert_eq(ids[0], lt, "not parsed: plain text");
    cr_assert_gt(n, 2);
    free(ids);
    cr_assert_eq(as_tokenizer_tokenize(t, "<|im_start|>", 12, AS_TOK_PARSE_SPECIAL, &ids, &n, &err), AS_OK);
    cr_assert_eq(ids[0], lt, "a normal token's text is text");
    free(ids);
    /* as_tokenizer_encode never parses them */
    cr_assert_eq(as_tokenizer_encode(t, "<|end_of_text|>", 15, false, &ids, &n, &err), AS_OK);
    cr_assert_eq(ids[0], lt);
    free(ids);
    unload(&m, t);
    vfree(&v);
}

Test(tok_pre, control_looking_tokens_become_control)
{
    /* llama.cpp's loader makes <|im_end|>, <|eot_id|>, <|endoftext|> ...
     * control whatever the file says; then they decode to nothing and a
     * parsed prompt cuts them out */
    vocab v = {0};
    add_alphabet(&v);
    int32_t im_end = vadd(&v, "<|im_end|>", 1), fim = vadd(&v, "<fim_prefix>", 1);
    gguf_mem m = {0};
    as_tokenizer *t = load(bpe_writer(&v, "qwen2"), &m);
    char buf[32];
    cr_assert_eq(as_tokenizer_token_bytes(t, im_end, buf, sizeof buf), 0, "control: no bytes");
    cr_assert_eq(as_tokenizer_token_bytes(t, fim, buf, sizeof buf), 0);
    EXPECT_IDS(t, "a<|im_end|>", AS_TOK_PARSE_SPECIAL, id_of(t, "a"), im_end);
    unload(&m, t);
    vfree(&v);
}

Test(tok_pre, phi3_rstrip_and_user_defined_tokens)
{
    /* a llama vocabulary named like phi-3: llama.cpp drops the whitespace
     * after its special tokens (not after <s>), and, as after every special
     * token, puts the '▁' prefix before the text that follows */
    vocab v = {0};
    vadd(&v, "<unk>", 2);
    int32_t bos = vadd(&v, "<s>", 3);
    vadd(&v, "</s>", 3);
    int32_t user = vadd(&v, "<|user|>", 3);
    int32_t tag = vadd(&v, "<tag>", 4);
    int32_t sp = vadd(&v, "▁", 1), hi = vadd(&v, "▁hi", 1), sph = vadd(&v, "▁h", 1);
    vadd(&v, "h", 1);
    vadd(&v, "i", 1);
    float scores[16] = {0};
    scores[hi] = 1, scores[sph] = 0.5f; /* ▁ h i: ▁h first, then ▁hi */
    as_gguf_writer *w = as_gguf_writer_new(3);
    as_gguf_writer_set_str(w, "general.architecture", "phi3");
    as_gguf_writer_set_str(w, "general.name", "Phi-3 mini");
    as_gguf_writer_set_str(w, "tokenizer.ggml.model", "llama");
    as_gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)v.tok, v.n);
    as_gguf_writer_set_arr(w, "tokenizer.ggml.token_type", AS_GGUF_INT32, v.type, v.n);
    as_gguf_writer_set_arr(w, "tokenizer.ggml.scores", AS_GGUF_FLOAT32, scores, v.n);
    as_gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", (uint32_t)bos);
    gguf_mem m = {0};
    as_tokenizer *t = load(w, &m);
    /* rstrip: "  hi" after <|user|> loses its spaces, then gets the prefix */
    EXPECT_IDS(t, "<|user|>  hi", AS_TOK_ADD_SPECIAL | AS_TOK_PARSE_SPECIAL, bos, user, hi);
    /* <s> is not rstrip: " hi" keeps its space, plus the prefix: ▁▁hi */
    EXPECT_IDS(t, "<s> hi", AS_TOK_PARSE_SPECIAL, bos, sp, hi);
    /* a user-defined token is cut out even unparsed, with its rstrip */
    EXPECT_IDS(t, "hi<tag>  hi", 0, hi, tag, hi);
    unload(&m, t);
    vfree(&v);
}

Test(tok_pre, none_has_ids_but_no_text)
{
    as_gguf_writer *w = as_gguf_writer_new(3);
    as_gguf_writer_set_str(w, "general.architecture", "llama");
    as_gguf_writer_set_str(w, "tokenizer.ggml.model", "none");
    as_gguf_writer_set_u32(w, "llama.vocab_size", 12);
    gguf_mem m = {0};
    as_tokenizer *t = load(w, &m);
    cr_assert_eq(as_tokenizer_kind(t), AS_TOK_NONE);
    cr_assert_eq(as_tokenizer_vocab_size(t), 12);
    cr_assert_str_eq(as_tokenizer_piece(t, 0), "#0");
    cr_assert_str_eq(as_tokenizer_piece(t, 11), "#11");
    cr_assert_null(as_tokenizer_piece(t, 12));
    cr_assert_eq(as_tokenizer_find(t, "#7"), 7);
    cr_assert_eq(as_tokenizer_bos(t), -1);
    char buf[8];
    cr_assert_eq(as_tokenizer_token_bytes(t, 3, buf, sizeof buf), 0, "an id stands for no bytes");
    int32_t *ids = NULL, three[] = {3, 1, 4};
    size_t n, len;
    char *out;
    as_error err = {{0}};
    cr_assert_eq(as_tokenizer_tokenize(t, "hi", 2, AS_TOK_ADD_SPECIAL, &ids, &n, &err), AS_ERR);
    cr_assert(strstr(err.msg, "no vocabulary") && strstr(err.msg, "prompt-ids"), "%s", err.msg);
    cr_assert_eq(as_tokenizer_encode(t, "", 0, true, &ids, &n, &err), AS_ERR, "even empty text");
    cr_assert_eq(as_tokenizer_decode(t, three, 3, &out, &len, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(len, 0);
    free(out);
    unload(&m, t);
}

Test(tok_pre, none_needs_its_size)
{
    as_gguf_writer *w = as_gguf_writer_new(3);
    as_gguf_writer_set_str(w, "general.architecture", "qwen2");
    as_gguf_writer_set_str(w, "tokenizer.ggml.model", "no_vocab");
    gguf_mem m = {0};
    as_error err = {{0}};
    as_tokenizer *t = NULL;
    cr_assert_eq(as_gguf_writer_to_memory(w, &m.buf, &m.size, &err), AS_OK);
    as_gguf_writer_free(w);
    cr_assert_eq(as_gguf_parse(&m.g, m.buf, m.size, "mem.gguf", &err), AS_OK);
    cr_assert_eq(as_tokenizer_from_gguf(&t, m.g, &err), AS_ERR);
    cr_assert(strstr(err.msg, "mem.gguf") && strstr(err.msg, "'qwen2.vocab_size' is missing"), "%s", err.msg);
    unload(&m, NULL);
    /* and a size past any vocabulary is refused by name, not allocated */
    w = as_gguf_writer_new(3);
    as_gguf_writer_set_str(w, "general.architecture", "llama");
    as_gguf_writer_set_str(w, "tokenizer.ggml.model", "none");
    as_gguf_writer_set_u32(w, "llama.vocab_size", 4000000000u);
    memset(&m, 0, sizeof m);
    cr_assert_eq(as_gguf_writer_to_memory(w, &m.buf, &m.size, &err), AS_OK);
    as_gguf_writer_free(w);
    cr_assert_eq(as_gguf_parse(&m.g, m.buf, m.size, "mem.gguf", &err), AS_OK);
    cr_assert_eq(as_tokenizer_from_gguf(&t, m.g, &err), AS_ERR);
    cr_assert(strstr(err.msg, "llama.vocab_size"), "%s", err.msg);
    unload(&m, NULL);
}

/* ------------------------------------------------------------------ */
/* the model card */

static char *card(as_gguf_writer *w)
{
    gguf_mem m = {0};
    as_error err = {{0}};
    cr_assert_eq(as_gguf_writer_to_memory(w, &m.buf, &m.size, &err), AS_OK);
    as_gguf_writer_free(w);
    cr_assert_eq(as_gguf_parse(&m.g, m.buf, m.size, "mem.gguf", &err), AS_OK);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    as_tokenizer_print_card(m.g, f);
    fclose(f);
    unload(&m, NULL);
    return text;
}

Test(tok_pre, model_card_lines)
{
    vocab v = {0};
    add_alphabet(&v);
    char *c = card(bpe_writer(&v, "llama-bpe"));
    cr_assert(strstr(c, "pre-tokenizer llama-bpe: llama.cpp's llama3 split") && strstr(c, "ignore_merges") &&
              strstr(c, "BOS added, EOS not added"), "%s", c);
    free(c);
    c = card(bpe_writer(&v, "foo\x1b[31m"));
    cr_assert(strstr(c, "foo?[31m: unknown to attnscope") && strstr(c, "GPT-2"), "escaped and said: %s", c);
    free(c);
    c = card(bpe_writer(&v, NULL));
    cr_assert(strstr(c, "(not set): llama.cpp's \"default\" split"), "%s", c);
    free(c);
    as_gguf_writer *w = as_gguf_writer_new(3);
    as_gguf_writer_set_str(w, "tokenizer.ggml.model", "none");
    c = card(w);
    cr_assert(strstr(c, "no vocabulary") && strstr(c, "prompt-ids"), "%s", c);
    free(c);
    vfree(&v);
}
