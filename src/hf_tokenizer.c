/* hf_tokenizer: a Hugging Face tokenizer.json as llama.cpp's tokenizer
 * keys in the view (byte-level BPE, SentencePiece-style BPE, WordPiece;
 * Unigram in hf_tok_unigram.c), its pair template and special tokens. */
#include "hf_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnscope/tokenizer.h"

/* ---------------------------------------------------------------- tokenizer.json */

/* Split regexes of tokenizer.json pre-tokenizers, as the tokenizers
 * library's files write them, and the tokenizer.ggml.pre llama.cpp's
 * converter gives the same split. */
static const struct {
    const char *regex, *pre;
} SPLITS[] = {
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
     "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     "llama-bpe"},
    {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
     "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
     "qwen2"},
};

/* Only U+2581 ('▁'), at least once. */
static bool all_spaces(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s += 3)
        if (strncmp(s, "\xE2\x96\x81", 3))
            return false;
    return true;
}

/* An added token past config.json's vocab_size (Gemma 3's
 * <image_soft_token>, id 262144 of an embedding of 262144 rows) has no
 * row: left out, as llama.cpp's converter leaves it out. */
static bool past_embedding(tok_read *r, const json_t *id)
{
    long long want;
    as_error ignored;
    return !as_hf_cfg_int(r->h, "vocab_size", false, r->h->vocab_default, 0, 1 << 24, &want, &ignored) && want > 0 &&
           json_integer_value(id) >= want;
}

/* Every id 0..n-1 from model.vocab and added_tokens, each once. A
 * non-special added token is user-defined (cut out of the raw text), but
 * one made of '▁' only that model.vocab holds is normal: it is what a run
 * of spaces becomes after a SentencePiece-style normalizer (Gemma 3's
 * "▁▁"...), and the tokenizers library's BPE reaches it by merging
 * (a '▁' typed literally in the text is the one difference: the library
 * would cut it out first). */
static int tok_table(tok_read *r, as_error *err)
{
    long long max = -1;
    const char *k;
    json_t *v;
    size_t i;
    json_object_foreach(r->vocab, k, v) {
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= (1 << 24))
            return as_error_set(err, "%s: model.vocab: token '%.40s' has no id in 0..%d", r->path, k, (1 << 24) - 1);
        if (json_integer_value(v) > max)
            max = json_integer_value(v);
    }
    json_array_foreach(r->added, i, v) {
        json_t *id = json_object_get(v, "id"), *c = json_object_get(v, "content");
        if (!json_is_integer(id) || json_integer_value(id) < 0 || json_integer_value(id) >= (1 << 24) ||
            !json_is_string(c))
            return as_error_set(err, "%s: added_tokens[%zu] needs an id in 0..%d and a content", r->path, i,
                                (1 << 24) - 1);
        if (past_embedding(r, id) && !json_object_get(r->vocab, json_string_value(c)))
            continue;
        if (json_integer_value(id) > max)
            max = json_integer_value(id);
    }
    if (max < 0)
        return as_error_set(err, "%s: the vocabulary is empty", r->path);
    r->n = (size_t)max + 1;
    r->tokens = calloc(r->n, sizeof *r->tokens);
    r->lens = calloc(r->n, sizeof *r->lens);
    r->types = calloc(r->n, sizeof *r->types);
    if (!r->tokens || !r->lens || !r->types)
        return as_error_set(err, "%s: out of memory", r->path);
    json_object_foreach(r->vocab, k, v) {
        size_t id = (size_t)json_integer_value(v);
        if (r->tokens[id])
            return as_error_set(err, "%s: id %zu is given to two tokens", r->path, id);
        if (!(r->tokens[id] = strdup(k)))
            return as_error_set(err, "%s: out of memory", r->path);
        r->lens[id] = strlen(k);
        r->types[id] = 1; /* normal */
    }
    json_array_foreach(r->added, i, v) {
        size_t id = (size_t)json_integer_value(json_object_get(v, "id"));
        json_t *c = json_object_get(v, "content");
        const char *s = json_string_value(c);
        if (id >= r->n)
            continue; /* past the embedding */
        if (r->tokens[id] && strcmp(r->tokens[id], s))
            return as_error_set(err, "%s: added_tokens[%zu]: id %zu is '%.40s' in model.vocab", r->path, i, id,
                                r->tokens[id]);
        if (!r->tokens[id] && !(r->tokens[id] = strdup(s)))
            return as_error_set(err, "%s: out of memory", r->path);
        r->lens[id] = json_string_length(c);
        bool special = json_is_true(json_object_get(v, "special"));
        bool spaces = !special && json_object_get(r->vocab, s) && all_spaces(s);
        r->types[id] = special ? 3 : spaces ? 1 : 4; /* control : normal : user-defined */
    }
    for (size_t id = 0; id < r->n; id++)
        if (!r->tokens[id])
            return as_error_set(err, "%s: id %zu has no token (ids must run 0..%zu without a gap)", r->path, id,
                                r->n - 1);
    return AS_OK;
}

/* model.merges as "a b" strings (files write them as such or as [a, b]). */
static int tok_merges(tok_read *r, char ***out, uint64_t **lens, size_t *n, as_error *err)
{
    json_t *m = json_object_get(r->model, "merges");
    *n = json_array_size(m);
    *out = calloc(*n ? *n : 1, sizeof **out);
    *lens = calloc(*n ? *n : 1, sizeof **lens);
    if (!*out || !*lens)
        return as_error_set(err, "%s: out of memory", r->path);
    size_t i;
    json_t *e;
    json_array_foreach(m, i, e) {
        char *s = NULL;
        if (json_is_string(e)) {
            s = strdup(json_string_value(e));
        } else if (json_is_array(e) && json_array_size(e) == 2 && json_is_string(json_array_get(e, 0)) &&
                   json_is_string(json_array_get(e, 1))) {
            const char *a = json_string_value(json_array_get(e, 0)), *b = json_string_value(json_array_get(e, 1));
            if ((s = malloc(strlen(a) + strlen(b) + 2)))
                sprintf(s, "%s %s", a, b);
        } else {
            return as_error_set(err, "%s: model.merges[%zu] is neither \"a b\" nor [a, b]", r->path, i);
        }
        if (!s)
            return as_error_set(err, "%s: out of memory", r->path);
        (*out)[i] = s;
        (*lens)[i] = strlen(s);
    }
    return AS_OK;
}

/* Byte-level BPE: GPT-2's regex (ByteLevel's own) or a Split this file knows. */
static int tok_byte_level(tok_read *r, const json_t *pre, const char **pre_name, as_error *err)
{
    const json_t *bl = as_hf_find_type(pre, "pretokenizers", "ByteLevel");
    json_t *use = json_object_get(bl, "use_regex");
    if (as_hf_is_type(pre, "ByteLevel")) {
        if (use && !json_is_true(use))
            return as_error_set(err, "%s: pre_tokenizer: ByteLevel without its regex (use_regex false) is not "
                                "read yet", r->path);
        *pre_name = "gpt-2";
        return AS_OK;
    }
    const json_t *l = json_object_get(pre, "pretokenizers");
    const json_t *split = json_array_size(l) == 2 ? json_array_get(l, 0) : NULL;
    /* StarCoder's: each digit on its own, then GPT-2's regex (llama.cpp's "starcoder": \p{N}, then GPT-2's) */
    if (as_hf_is_type(split, "Digits") && json_array_get(l, 1) == bl) {
        if (!json_is_true(json_object_get(split, "individual_digits")))
            return as_error_set(err, "%s: pre_tokenizer: Digits without individual_digits (runs of digits kept "
                                "together) is not read yet", r->path);
        if (use && !json_is_true(use))
            return as_error_set(err, "%s: pre_tokenizer: Digits then ByteLevel without its regex is not read yet",
                                r->path);
        *pre_name = "starcoder";
        return AS_OK;
    }
    /* Several Splits (each match its own piece), then ByteLevel without its
     * regex: a pre-tokenizer llama.cpp knows by those regexes (DeepSeek-V3's) */
    size_t n_split = json_array_size(l) > 2 ? json_array_size(l) - 1 : 0;
    if (n_split > 0 && n_split <= 8 && json_array_get(l, n_split) == bl && use && !json_is_true(use)) {
        const char *rx[8];
        size_t k = 0;
        for (; k < n_split; k++) {
            const json_t *sp = json_array_get(l, k);
            const json_t *p = json_object_get(json_object_get(sp, "pattern"), "Regex");
            const char *behavior = json_string_value(json_object_get(sp, "behavior"));
            if (!as_hf_is_type(sp, "Split") || !json_is_string(p) || !behavior || strcmp(behavior, "Isolated") ||
                json_is_true(json_object_get(sp, "invert")))
                break;
            rx[k] = json_string_value(p);
        }
        const char *name = k == n_split ? as_tokenizer_pre_for_splits(rx, n_split) : NULL;
        if (!name)
            return as_error_set(err, "%s: pre_tokenizer: a Sequence of %zu Splits then ByteLevel that is no "
                                "pre-tokenizer attnscope knows (each Split isolated, by a regex of llama.cpp's)",
                                r->path, n_split);
        *pre_name = name;
        return AS_OK;
    }
    const json_t *pat =
        as_hf_is_type(split, "Split") ? json_object_get(json_object_get(split, "pattern"), "Regex") : NULL;
    if (!json_is_string(pat) || json_is_true(use) || json_array_get(l, 1) != bl)
        return as_error_set(err, "%s: pre_tokenizer: only ByteLevel, a Split regex then ByteLevel, or Digits then "
                            "ByteLevel, is read yet",
                            r->path);
    for (size_t i = 0; i < sizeof SPLITS / sizeof SPLITS[0]; i++)
        if (!strcmp(json_string_value(pat), SPLITS[i].regex)) {
            *pre_name = SPLITS[i].pre;
            return AS_OK;
        }
    return as_error_set(err, "%s: pre_tokenizer: the Split regex '%.120s' is not one attnscope knows (GPT-2's, "
                        "Llama 3's, Qwen 2's)", r->path, json_string_value(pat));
}

/* SentencePiece-style BPE: a token's score is minus the rank of the first
 * merge that makes it (0 for the rest), so llama.cpp's SPM merging (the
 * highest-scoring pair first) follows the merges' order. */
static int tok_scores(tok_read *r, char **merges, size_t n_merges, float **scores, as_error *err)
{
    *scores = calloc(r->n, sizeof **scores);
    bool *set = calloc(r->n, sizeof *set);
    if (!*scores || !set) {
        free(set);
        return as_error_set(err, "%s: out of memory", r->path);
    }
    for (size_t i = 0; i < n_merges; i++) {
        char *sp = strchr(merges[i], ' ');
        if (!sp) {
            free(set);
            return as_error_set(err, "%s: model.merges[%zu] has no space", r->path, i);
        }
        size_t a = (size_t)(sp - merges[i]), len = strlen(merges[i]) - 1;
        char *joined = malloc(len + 1);
        if (!joined) {
            free(set);
            return as_error_set(err, "%s: out of memory", r->path);
        }
        memcpy(joined, merges[i], a);
        memcpy(joined + a, sp + 1, len - a + 1);
        json_t *id = json_object_get(r->vocab, joined);
        free(joined);
        if (json_is_integer(id) && !set[json_integer_value(id)]) {
            set[json_integer_value(id)] = true;
            (*scores)[json_integer_value(id)] = -(float)i;
        }
    }
    free(set);
    return AS_OK;
}

static bool normalizer_prepends(const json_t *nz)
{
    const json_t *p = as_hf_find_type(nz, "normalizers", "Prepend");
    return p && json_is_string(json_object_get(p, "prepend"));
}

static bool is_string_pattern(const json_t *o, const char *s)
{
    const json_t *p = json_object_get(json_object_get(o, "pattern"), "String");
    return json_is_string(p) && !strcmp(json_string_value(p), s);
}

/* A SentencePiece-style BPE's normalizer: Prepend("▁") (Llama 2's) and
 * Replace(" " -> "▁") (Llama 2's, Gemma 3's), alone or in a Sequence --
 * what llama.cpp's SPM tokenizer does with add_space_prefix and its own
 * escaping of spaces. Another member is refused by name. *replaces: spaces
 * become '▁' here (else only a Metaspace pre-tokenizer would make them). */
static int spm_normalizer(tok_read *r, const json_t *nz, bool *replaces, as_error *err)
{
    *replaces = false;
    if (!nz || json_is_null(nz))
        return AS_OK;
    const json_t *list = as_hf_is_type(nz, "Sequence") ? json_object_get(nz, "normalizers") : NULL;
    size_t n = list ? json_array_size(list) : 1;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = list ? json_array_get(list, i) : nz, *c = json_object_get(e, "content"),
                     *pp = json_object_get(e, "prepend");
        if (as_hf_is_type(e, "Prepend") && json_is_string(pp) && !strcmp(json_string_value(pp), "\xE2\x96\x81"))
            continue;
        if (as_hf_is_type(e, "Replace") && is_string_pattern(e, " ") && json_is_string(c) &&
            !strcmp(json_string_value(c), "\xE2\x96\x81")) {
            *replaces = true;
            continue;
        }
        const json_t *ty = json_object_get(e, "type");
        return as_error_set(err, "%s: a SentencePiece-style BPE's normalizer '%.30s' is not read yet (Prepend "
                            "\"\xE2\x96\x81\" and Replace \" \" -> \"\xE2\x96\x81\" are)", r->path,
                            json_is_string(ty) ? json_string_value(ty) : "?");
    }
    return AS_OK;
}

/* Its pre-tokenizer: none, Metaspace, or (Gemma 3's) a Split at the
 * string " " after a normalizer that has made every space '▁' -- a split
 * that finds nothing to split at, whatever its behavior. */
static int spm_pre_tokenizer(tok_read *r, const json_t *pre, bool replaces, as_error *err)
{
    if (!pre || json_is_null(pre) || as_hf_is_type(pre, "Metaspace"))
        return replaces || as_hf_is_type(pre, "Metaspace")
                   ? AS_OK
                   : as_error_set(err, "%s: a SentencePiece-style BPE whose spaces stay spaces (neither a Replace "
                                  "\" \" -> \"\xE2\x96\x81\" normalizer nor Metaspace) is not read yet", r->path);
    if (as_hf_is_type(pre, "Split") && is_string_pattern(pre, " ") && !json_is_true(json_object_get(pre, "invert")) &&
        replaces)
        return AS_OK;
    return as_error_set(err, "%s: a SentencePiece-style BPE with a pre_tokenizer other than Metaspace (or a Split "
                        "at \" \" after spaces became \"\xE2\x96\x81\") is not read yet", r->path);
}

/* A special token's id from BertProcessing's ["[CLS]", 101], else the text's. */
static long long bert_special(tok_read *r, const json_t *pair, const char *text)
{
    json_t *id = json_array_get(pair, 1);
    if (json_is_integer(id) && json_integer_value(id) >= 0 && (size_t)json_integer_value(id) < r->n)
        return json_integer_value(id);
    return as_hf_token_id(r, text);
}

/* A WordPiece model's normalizer as the library's steps (tok_wpm.c,
 * tokenizer.attnscope.normalizer): BertNormalizer's (clean_text,
 * handle_chinese_chars, accents stripped -- strip_accents, or lowercase
 * when null -- and lowercase, in the library's order), or a Sequence of
 * NFD, Lowercase and StripAccents; and llama.cpp's two switches. */
static int wpm_steps(tok_read *r, const json_t *nz, char steps[64], bool *lower, bool *strip, as_error *err)
{
    steps[0] = '\0';
    *lower = *strip = false;
    if (!nz || json_is_null(nz))
        return AS_OK;
    if (as_hf_is_type(nz, "BertNormalizer")) {
        json_t *lc = json_object_get(nz, "lowercase"), *sa = json_object_get(nz, "strip_accents");
        json_t *ct = json_object_get(nz, "clean_text"), *cj = json_object_get(nz, "handle_chinese_chars");
        *lower = !lc || json_is_true(lc);
        *strip = sa && !json_is_null(sa) ? json_is_true(sa) : *lower;
        snprintf(steps, 64, "%s%s%s%s", !ct || json_is_true(ct) ? "clean " : "", !cj || json_is_true(cj) ? "cjk " : "",
                 *strip ? "strip-mn " : "", *lower ? "lower " : "");
    } else if (as_hf_is_type(nz, "Sequence")) {
        const json_t *list = json_object_get(nz, "normalizers");
        size_t i, n = json_array_size(list);
        if (n > 8)
            return as_error_set(err, "%s: a WordPiece model's Sequence normalizer of %zu members (8 at most) is not "
                                "read yet", r->path, n);
        for (i = 0; i < n; i++) {
            const json_t *m = json_array_get(list, i);
            const char *name = as_hf_is_type(m, "NFD") ? "nfd " : as_hf_is_type(m, "Lowercase") ? "lower "
                             : as_hf_is_type(m, "StripAccents") ? "strip-marks " : NULL;
            if (!name) {
                const char *ty = json_string_value(json_object_get(m, "type"));
                return as_error_set(err, "%s: a WordPiece model's normalizer '%.30s' is not read yet (BertNormalizer, "
                                    "or a Sequence of NFD, Lowercase, StripAccents)", r->path, ty ? ty : "?");
            }
            *lower |= as_hf_is_type(m, "Lowercase");
            *strip |= as_hf_is_type(m, "StripAccents");
            strcat(steps, name);
        }
    } else {
        const char *ty = json_string_value(json_object_get(nz, "type"));
        return as_error_set(err, "%s: a WordPiece model's normalizer '%.30s' is not read yet (BertNormalizer, or a "
                            "Sequence of NFD, Lowercase, StripAccents)", r->path, ty ? ty : "?");
    }
    size_t len = strlen(steps);
    if (len)
        steps[len - 1] = '\0'; /* the last space */
    return AS_OK;
}

/* WordPiece (BERT): pieces stored as llama.cpp's converter stores them (a
 * word's first piece with '▁' in front, a continuation without its '##',
 * [BRACKETED] specials as they are), BertNormalizer's options, [CLS] and
 * [SEP] from the post-processor. */
static int tok_wordpiece(tok_read *r, as_error *err)
{
    as_hf *h = r->h;
    const json_t *pre = json_object_get(r->root, "pre_tokenizer"), *nz = json_object_get(r->root, "normalizer");
    json_t *prefix = json_object_get(r->model, "continuing_subword_prefix");
    if (!as_hf_is_type(pre, "BertPreTokenizer"))
        return as_error_set(err, "%s: a WordPiece model with a pre_tokenizer other than BertPreTokenizer is not read "
                            "yet", r->path);
    if (prefix && !(json_is_string(prefix) && !strcmp(json_string_value(prefix), "##")))
        return as_error_set(err, "%s: continuing_subword_prefix other than '##' is not read yet", r->path);
    char steps[64];
    bool lower, strip;
    if (wpm_steps(r, nz, steps, &lower, &strip, err))
        return AS_ERR;
    json_t *mx = json_object_get(r->model, "max_input_chars_per_word");
    if (mx && !json_is_null(mx) && !(json_is_integer(mx) && json_integer_value(mx) >= 0 &&
                                     json_integer_value(mx) <= UINT32_MAX))
        return as_error_set(err, "%s: model.max_input_chars_per_word: expected a count", r->path);
    uint32_t max_chars = json_is_integer(mx) ? (uint32_t)json_integer_value(mx) : 100; /* the library's default */
    for (size_t i = 0; i < r->n; i++) {
        const char *t = r->tokens[i];
        size_t len = r->lens[i];
        char *c = NULL;
        if (len >= 2 && t[0] == '[' && t[len - 1] == ']')
            continue;
        if (len >= 2 && !strncmp(t, "##", 2))
            c = strndup(t + 2, len - 2);
        else if ((c = malloc(len + 4)))
            memcpy(c, "\xe2\x96\x81", 3), memcpy(c + 3, t, len), c[len + 3] = '\0';
        if (!c)
            return as_error_set(err, "%s: out of memory", r->path);
        free(r->tokens[i]);
        r->tokens[i] = c;
        r->lens[i] = strlen(c);
    }
    long long cls = as_hf_token_id(r, "[CLS]"), sep = as_hf_token_id(r, "[SEP]"), unk = -1;
    const json_t *pp = json_object_get(r->root, "post_processor");
    if (as_hf_is_type(pp, "BertProcessing")) {
        cls = bert_special(r, json_object_get(pp, "cls"), "[CLS]");
        sep = bert_special(r, json_object_get(pp, "sep"), "[SEP]");
    } else {
        bool add_bos, add_eos;
        as_hf_tok_template(r, &add_bos, &add_eos, &cls, &sep);
    }
    json_t *u = json_object_get(r->model, "unk_token");
    unk = json_is_string(u) ? as_hf_token_id(r, json_string_value(u)) : -1;
    long long pad = as_hf_token_id(r, "[PAD]"), mask = as_hf_token_id(r, "[MASK]");
    bool ok = as_hf_kv_take_strs(h, "tokenizer.ggml.tokens", r->tokens, r->lens, r->n);
    r->tokens = NULL, r->lens = NULL; /* as_hf_kv_take_strs took them, whatever happened */
    ok = ok && as_hf_kv_str(h, "tokenizer.ggml.model", "bert") &&
              as_hf_kv_arr4(h, "tokenizer.ggml.token_type", AS_GGUF_INT32, r->types, r->n) &&
              (cls < 0 || (as_hf_kv_u32(h, "tokenizer.ggml.bos_token_id", (uint32_t)cls) &&
                           as_hf_kv_u32(h, "tokenizer.ggml.cls_token_id", (uint32_t)cls))) &&
              (sep < 0 || as_hf_kv_u32(h, "tokenizer.ggml.seperator_token_id", (uint32_t)sep)) &&
              (unk < 0 || as_hf_kv_u32(h, "tokenizer.ggml.unknown_token_id", (uint32_t)unk)) &&
              (pad < 0 || as_hf_kv_u32(h, "tokenizer.ggml.padding_token_id", (uint32_t)pad)) &&
              (mask < 0 || as_hf_kv_u32(h, "tokenizer.ggml.mask_token_id", (uint32_t)mask)) &&
              as_hf_kv_bool(h, "tokenizer.ggml.normalizer.lowercase", lower) &&
              as_hf_kv_bool(h, "tokenizer.ggml.normalizer.strip_accents", strip) &&
              as_hf_kv_str(h, "tokenizer.attnscope.normalizer", steps) &&
              as_hf_kv_u32(h, "tokenizer.attnscope.max_word_chars", max_chars);
    if (ok) {
        size_t used = strlen(h->llama_note);
        snprintf(h->llama_note + used, sizeof h->llama_note - used,
                 "%sllama.cpp ignores tokenizer.attnscope.normalizer: its WordPiece keeps a character's first "
                 "decomposed code point only (a Hangul syllable's first jamo) and words over %u characters, so such "
                 "text gets other ids there than here and in the tokenizers library", used ? "; " : "", max_chars);
    }
    return ok ? AS_OK : as_error_set(err, "%s: out of memory", r->path);
}

/* The type of a "model" object written without one (files of the
 * tokenizers library before it wrote "type": bert-base-uncased's, GPT-2's),
 * as the library's untagged deserializer infers it: the first of BPE,
 * WordPiece, WordLevel, Unigram whose fields the object has (BPE: vocab
 * and merges; WordPiece: vocab, unk_token, continuing_subword_prefix and
 * max_input_chars_per_word; WordLevel: vocab and unk_token; Unigram: vocab
 * as [piece, score] pairs). NULL: none of them. */
const char *as_hf_model_type(const json_t *model)
{
    json_t *type = json_object_get(model, "type"), *vocab = json_object_get(model, "vocab");
    if (json_is_string(type))
        return json_string_value(type);
    if (!json_is_object(model) || type)
        return NULL;
    if (json_is_object(vocab) && json_is_array(json_object_get(model, "merges")))
        return "BPE";
    bool unk = json_is_string(json_object_get(model, "unk_token"));
    if (json_is_object(vocab) && unk && json_object_get(model, "continuing_subword_prefix") &&
        json_object_get(model, "max_input_chars_per_word"))
        return "WordPiece";
    if (json_is_object(vocab) && unk)
        return "WordLevel";
    if (json_is_array(vocab))
        return "Unigram";
    return NULL;
}

static int tok_read_all(tok_read *r, as_error *err)
{
    as_hf *h = r->h;
    const char *type = as_hf_model_type(r->model);
    if (!json_is_object(r->model))
        return as_error_set(err, "%s: 'model' must be an object", r->path);
    if (!type)
        return as_error_set(err, "%s: 'model' has no 'type' (or one that is not a string) and is none the "
                            "tokenizers library infers (BPE: vocab and merges; WordPiece: vocab, unk_token, "
                            "continuing_subword_prefix, max_input_chars_per_word; WordLevel: vocab, unk_token; "
                            "Unigram: vocab as [piece, score] pairs)", r->path);
    bool wordpiece = !strcmp(type, "WordPiece");
    if (!strcmp(type, "Unigram"))
        return as_hf_tok_unigram(r, err);
    if (strcmp(type, "BPE") && !wordpiece)
        return as_error_set(err, "%s: model type '%.20s' is not read (BPE, byte-level and SentencePiece-style, "
                            "WordPiece and Unigram are)", r->path, type);
    if (!json_is_object(r->vocab) || (r->added && !json_is_array(r->added)))
        return as_error_set(err, "%s: model.vocab must be an object and added_tokens an array", r->path);
    if (tok_table(r, err) || as_hf_tok_pad(r, err))
        return AS_ERR;
    if (wordpiece)
        return tok_wordpiece(r, err);
    char **merges = NULL;
    uint64_t *mlens = NULL;
    size_t n_merges = 0;
    if (tok_merges(r, &merges, &mlens, &n_merges, err)) {
        for (size_t i = 0; merges && i < n_merges; i++)
            free(merges[i]);
        free(merges), free(mlens);
        return AS_ERR;
    }
    const json_t *pre = json_object_get(r->root, "pre_tokenizer");
    const json_t *nz = json_object_get(r->root, "normalizer");
    bool byte_level = as_hf_find_type(pre, "pretokenizers", "ByteLevel") != NULL;
    bool add_bos, add_eos;
    long long bos = -1, eos = -1, unk = -1;
    as_hf_tok_template(r, &add_bos, &add_eos, &bos, &eos);
    long long cfg_id;
    as_error ignored;
    if (bos < 0 && !as_hf_cfg_int(h, "bos_token_id", false, -1, 0, (long long)r->n - 1, &cfg_id, &ignored))
        bos = cfg_id;
    if (eos < 0 && !as_hf_cfg_int(h, "eos_token_id", false, -1, 0, (long long)r->n - 1, &cfg_id, &ignored))
        eos = cfg_id;
    int rc = AS_OK;
    float *scores = NULL;
    const char *pre_name = NULL;
    if (byte_level) {
        /* an empty Sequence (DeepSeek-V3's) normalizes nothing */
        bool empty = as_hf_is_type(nz, "Sequence") && json_array_size(json_object_get(nz, "normalizers")) == 0;
        if (nz && !json_is_null(nz) && !as_hf_is_type(nz, "NFC") && !empty)
            rc = as_error_set(err, "%s: a byte-level BPE with a normalizer (other than NFC) is not read yet", r->path);
        else
            rc = tok_byte_level(r, pre, &pre_name, err);
    } else if (json_is_true(json_object_get(r->model, "byte_fallback")) || normalizer_prepends(nz) ||
               as_hf_find_type(nz, "normalizers", "Replace")) {
        json_t *u = json_object_get(r->model, "unk_token");
        unk = json_is_string(u) ? as_hf_token_id(r, json_string_value(u)) : -1;
        for (size_t i = 0; i < r->n; i++) {
            const char *t = r->tokens[i];
            if ((long long)i == unk)
                r->types[i] = 2;
            else if (r->types[i] == 1 && r->lens[i] == 6 && !strncmp(t, "<0x", 3) && t[5] == '>')
                r->types[i] = 6; /* byte */
        }
        bool replaces;
        rc = spm_normalizer(r, nz, &replaces, err);
        if (rc == AS_OK)
            rc = spm_pre_tokenizer(r, pre, replaces, err);
        if (rc == AS_OK)
            rc = tok_scores(r, merges, n_merges, &scores, err);
    } else {
        rc = as_error_set(err, "%s: a BPE that is neither byte-level (a ByteLevel pre-tokenizer) nor "
                          "SentencePiece-style (byte_fallback, a Prepend normalizer) is not read yet", r->path);
    }
    bool ok = rc == AS_OK;
    if (ok && byte_level) {
        ok = as_hf_kv_take_strs(h, "tokenizer.ggml.merges", merges, mlens, n_merges); /* takes them in any case */
        merges = NULL, mlens = NULL;
        ok = ok && as_hf_kv_str(h, "tokenizer.ggml.model", "gpt2") && as_hf_kv_str(h, "tokenizer.ggml.pre", pre_name);
        /* NFC, as the library applies it; our key, which llama.cpp does not read (convert says so) */
        if (ok && as_hf_is_type(nz, "NFC")) {
            ok = as_hf_kv_bool(h, "tokenizer.attnscope.nfc", true);
            size_t used = strlen(h->llama_note);
            snprintf(h->llama_note + used, sizeof h->llama_note - used,
                     "%sllama.cpp ignores tokenizer.attnscope.nfc: its %s tokenizer does not normalise, so text not "
                     "in Unicode NFC gets other ids there than here and in the tokenizers library", used ? "; " : "",
                     pre_name);
        }
    } else if (ok) {
        bool prefix = normalizer_prepends(nz) || as_hf_is_type(pre, "Metaspace");
        ok = as_hf_kv_str(h, "tokenizer.ggml.model", "llama") &&
             as_hf_kv_arr4(h, "tokenizer.ggml.scores", AS_GGUF_FLOAT32, scores, r->n) &&
             as_hf_kv_bool(h, "tokenizer.ggml.add_space_prefix", prefix) &&
             (unk < 0 || as_hf_kv_u32(h, "tokenizer.ggml.unknown_token_id", (uint32_t)unk));
    }
    if (ok) {
        ok = as_hf_kv_arr4(h, "tokenizer.ggml.token_type", AS_GGUF_INT32, r->types, r->n) &&
             (bos < 0 || as_hf_kv_u32(h, "tokenizer.ggml.bos_token_id", (uint32_t)bos)) &&
             (eos < 0 || as_hf_kv_u32(h, "tokenizer.ggml.eos_token_id", (uint32_t)eos)) &&
             as_hf_kv_bool(h, "tokenizer.ggml.add_bos_token", add_bos) &&
             as_hf_kv_bool(h, "tokenizer.ggml.add_eos_token", add_eos) &&
             as_hf_kv_take_strs(h, "tokenizer.ggml.tokens", r->tokens, r->lens, r->n);
        if (ok)
            r->tokens = NULL, r->lens = NULL;
        if (!ok)
            rc = as_error_set(err, "%s: out of memory", r->path);
    }
    for (size_t i = 0; merges && i < n_merges; i++)
        free(merges[i]);
    free(merges), free(mlens), free(scores);
    return rc;
}

/* The post-processor's pair template (TemplateProcessing's "pair"; in a
 * Sequence too) as our key tokenizer.attnscope.pair: "ID:T" for a special
 * token's id (each of its ids), "$A:T" / "$B:T" for the sequences, T the
 * type id, space-separated. BertProcessing's pair is the default the
 * tokenizer builds without the key (RobertaProcessing is not read: no
 * family here has it). A broken template is refused by name. */
static int tok_pair(tok_read *r, as_error *err)
{
    const json_t *tp = as_hf_find_type(json_object_get(r->root, "post_processor"), "processors", "TemplateProcessing");
    const json_t *pair = tp ? json_object_get(tp, "pair") : NULL;
    if (!json_is_array(pair) || !json_array_size(pair))
        return AS_OK;
    const json_t *specials = json_object_get(tp, "special_tokens");
    char buf[512];
    size_t len = 0, i;
    json_t *e;
    bool a = false, b = false;
    json_array_foreach(pair, i, e) {
        const json_t *st = json_object_get(e, "SpecialToken"), *sq = json_object_get(e, "Sequence");
        const json_t *item = st ? st : sq, *ty = json_object_get(item, "type_id"), *id = json_object_get(item, "id");
        if (!json_is_object(item) || !json_is_string(id) || !json_is_integer(ty) || json_integer_value(ty) < 0 ||
            json_integer_value(ty) > 1023)
            return as_error_set(err, "%s: post_processor: pair[%zu] is neither a SpecialToken nor a Sequence with "
                                "an id and a type_id in 0..1023", r->path, i);
        int t = (int)json_integer_value(ty);
        if (sq) {
            const char *which = json_string_value(id);
            if (strcmp(which, "A") && strcmp(which, "B"))
                return as_error_set(err, "%s: post_processor: pair[%zu] names sequence '%.8s' (A or B)", r->path, i,
                                    which);
            a |= which[0] == 'A', b |= which[0] == 'B';
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s$%s:%d", len ? " " : "", which, t);
        } else {
            const json_t *ids = json_object_get(json_object_get(specials, json_string_value(id)), "ids");
            size_t k;
            json_t *v;
            if (!json_array_size(ids))
                return as_error_set(err, "%s: post_processor: pair[%zu]: special token '%.40s' has no ids in "
                                    "special_tokens", r->path, i, json_string_value(id));
            json_array_foreach(ids, k, v) {
                if (!json_is_integer(v) || json_integer_value(v) < 0 || (size_t)json_integer_value(v) >= r->n)
                    return as_error_set(err, "%s: post_processor: special token '%.40s' has an id outside the "
                                        "vocabulary", r->path, json_string_value(id));
                len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%lld:%d", len ? " " : "",
                                        (long long)json_integer_value(v), t);
            }
        }
        if (len >= sizeof buf - 1)
            return as_error_set(err, "%s: post_processor: the pair template is too long", r->path);
    }
    if (!a || !b)
        return as_error_set(err, "%s: post_processor: the pair template needs $A and $B", r->path);
    return as_hf_kv_str(r->h, "tokenizer.attnscope.pair", buf) ? AS_OK
                                                               : as_error_set(err, "%s: out of memory", r->path);
}

int as_hf_read_tokenizer(as_hf *h, as_error *err)
{
    tok_read r = {.h = h};
    snprintf(r.path, sizeof r.path, "%s/tokenizer.json", h->dir);
    if (access(r.path, F_OK) != 0)
        return as_error_set(err, "%s: missing (attnscope reads the vocabulary from it)", r.path);
    if (!(r.root = as_hf_load_json(h, r.path, err)))
        return AS_ERR;
    r.model = json_object_get(r.root, "model");
    r.vocab = json_object_get(r.model, "vocab");
    r.added = json_object_get(r.root, "added_tokens");
    int rc = tok_read_all(&r, err);
    if (rc == AS_OK)
        rc = tok_pair(&r, err);
    for (size_t i = 0; r.tokens && i < r.n; i++)
        free(r.tokens[i]);
    free(r.tokens), free(r.lens), free(r.types);
    json_decref(r.root);
    return rc;
}
