/* A GGUF file's tokenizer: its tokenizer.ggml.* keys read into a spec
 * with llama.cpp's defaults (as llama_vocab::impl::load reads them), the
 * per-model quirks chosen by the file's names, and the model card's
 * tokenizer lines. */
#include "tokenizer_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/gguf.h"

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
    if ((*algo = as_tok_algo_named(model)))
        return AS_OK;
    char names[128];
    as_tok_algo_names(names, sizeof names);
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
 * pre-tokenizer or architecture: the one table of the tokenizer's quirks
 * by name. Each row: where to look, a text it contains (the name is
 * matched lower-cased), and what it turns on. */
enum { IN_NAME, IN_PRE, IN_ARCH };
enum {
    QUIRK_MASK_LSTRIP = 1,      /* <mask> drops the whitespace before it (jina-v2 and its kin) */
    QUIRK_SPECIAL_RSTRIP = 2,   /* every special token and </s> drops the whitespace after it, but <unk>, <s>
                                 * and <|endoftext|> (phi-3) */
    QUIRK_BERT_MASK_LSTRIP = 4, /* [MASK] drops the whitespace before it (modern-bert) */
};
static const struct {
    int in;              /* IN_*: general.name, tokenizer.ggml.pre, general.architecture */
    const char *text;
    unsigned quirks;     /* QUIRK_* */
} QUIRKS[] = {
    {IN_NAME, "phi-3", QUIRK_SPECIAL_RSTRIP},
    {IN_NAME, "phi3", QUIRK_SPECIAL_RSTRIP},
    {IN_PRE, "jina-v2-de", QUIRK_MASK_LSTRIP},
    {IN_PRE, "jina-v2-es", QUIRK_MASK_LSTRIP},
    {IN_PRE, "jina-v2-code", QUIRK_MASK_LSTRIP},
    {IN_ARCH, "nomic-bert-moe", QUIRK_MASK_LSTRIP},
    {IN_ARCH, "jina-bert-v3", QUIRK_MASK_LSTRIP},
    {IN_NAME, "modern-bert", QUIRK_BERT_MASK_LSTRIP},
};

/* The quirks the file's name, pre-tokenizer and architecture choose. */
static unsigned quirks_of(const char *name, const char *pre, const char *arch)
{
    unsigned q = 0;
    for (size_t i = 0; i < sizeof QUIRKS / sizeof QUIRKS[0]; i++) {
        const char *text = QUIRKS[i].text;
        bool hit = QUIRKS[i].in == IN_NAME  ? contains_lower(name, text)
                   : QUIRKS[i].in == IN_PRE ? strstr(pre, text) != NULL
                                            : arch && strstr(arch, text);
        if (hit)
            q |= QUIRKS[i].quirks;
    }
    return q;
}

/* The quirks applied: at most one of them, the first of <mask>'s,
 * phi-3's, [MASK]'s that the file has. */
static int gguf_strip(as_tokenizer *t, const as_gguf *g, as_error *err)
{
    const char *name, *arch;
    if (gguf_str_opt(g, "general.name", &name, err) || gguf_str_opt(g, "general.architecture", &arch, err))
        return AS_ERR;
    unsigned q = quirks_of(name, t->pre_name, arch);
    if (!q)
        return AS_OK;
    if (!(t->strip = calloc(t->n, 1)))
        return as_tok_oom(err);
    if (q & QUIRK_MASK_LSTRIP)
        set_strip(t, "<mask>", STRIP_LEFT, true);
    else if (q & QUIRK_SPECIAL_RSTRIP) {
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
    const as_tok_algo *algo = model ? as_tok_algo_named(model) : NULL;
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
