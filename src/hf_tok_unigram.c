/* hf_tok_unigram: a Unigram tokenizer.json (T5, ALBERT style) as GGUF's
 * "t5" tokenizer, as llama.cpp's converter writes it from the
 * SentencePiece model the tokenizer.json was made from: model.vocab's
 * [piece, score] pairs in id order, the Precompiled normalizer's charsmap
 * (base64 in the file, bytes in GGUF), remove_extra_whitespaces where the
 * normalizer collapses runs of spaces (Replace " {2,}", as transformers'
 * SpmConverter writes it), the space prefix from Metaspace. */
#include "hf_internal.h"

#include <stdlib.h>
#include <string.h>

static int b64(int c)
{
    return c >= 'A' && c <= 'Z' ? c - 'A' : c >= 'a' && c <= 'z' ? c - 'a' + 26 : c >= '0' && c <= '9' ? c - '0' + 52
         : c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Standard base64 (padding optional); NULL with *n = 0 when malformed. */
static uint8_t *b64_decode(as_hf *h, const char *s, size_t len, size_t *n)
{
    while (len && s[len - 1] == '=')
        len--;
    *n = 0;
    if (len % 4 == 1)
        return NULL;
    uint8_t *out = as_hf_keep(h, len / 4 * 3 + 3);
    if (!out)
        return NULL;
    uint32_t acc = 0;
    int bits = 0;
    for (size_t i = 0; i < len; i++) {
        int v = b64((unsigned char)s[i]);
        if (v < 0)
            return NULL;
        acc = acc << 6 | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[(*n)++] = (uint8_t)(acc >> bits);
        }
    }
    return out;
}

static bool kv_bytes(as_hf *h, const char *key, const uint8_t *data, uint64_t n)
{
    as_gguf_kv *kv = as_gguf_view_kv(h->g, key, AS_GGUF_ARRAY);
    if (!kv)
        return false;
    kv->arr_type = AS_GGUF_UINT8;
    kv->arr_len = n;
    kv->arr_data = (void *)data;
    return true;
}

/* The normalizer's members: Precompiled (its charsmap), Strip (right),
 * Replace " {2,}" (extra spaces removed); another is refused by name. */
static int unigram_normalizer(tok_read *r, const json_t *nz, const uint8_t **map, size_t *map_len, bool *collapse,
                              as_error *err)
{
    *map = NULL, *map_len = 0, *collapse = false;
    if (!nz || json_is_null(nz))
        return AS_OK;
    const json_t *list = as_hf_is_type(nz, "Sequence") ? json_object_get(nz, "normalizers") : NULL;
    size_t n = list ? json_array_size(list) : 1;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = list ? json_array_get(list, i) : nz;
        const json_t *pat = json_object_get(json_object_get(e, "pattern"), "Regex");
        if (as_hf_is_type(e, "Precompiled")) {
            const json_t *b = json_object_get(e, "precompiled_charsmap");
            if (json_is_null(b) || (json_is_string(b) && !json_string_length(b)))
                continue;
            if (!json_is_string(b) ||
                !(*map = b64_decode(r->h, json_string_value(b), json_string_length(b), map_len)) || !*map_len)
                return as_error_set(err, "%s: normalizer Precompiled: precompiled_charsmap is not base64", r->path);
        } else if (as_hf_is_type(e, "Strip")) {
            if (json_is_true(json_object_get(e, "strip_left")))
                return as_error_set(err, "%s: normalizer Strip with strip_left is not read yet", r->path);
        } else if (as_hf_is_type(e, "Replace") && json_is_string(pat) && !strcmp(json_string_value(pat), " {2,}")) {
            *collapse = true;
        } else {
            const json_t *ty = json_object_get(e, "type");
            return as_error_set(err, "%s: a Unigram model's normalizer '%.30s' is not read yet (Precompiled, Strip, "
                                "Replace \" {2,}\" are)", r->path, json_is_string(ty) ? json_string_value(ty) : "?");
        }
    }
    return AS_OK;
}

int as_hf_tok_unigram(tok_read *r, as_error *err)
{
    as_hf *h = r->h;
    if (!json_is_array(r->vocab) || !json_array_size(r->vocab) || (r->added && !json_is_array(r->added)))
        return as_error_set(err, "%s: a Unigram model.vocab must be a non-empty array of [piece, score] and "
                            "added_tokens an array", r->path);
    size_t n = json_array_size(r->vocab);
    if (n >= (1 << 24))
        return as_error_set(err, "%s: model.vocab holds %zu pieces (at most %d)", r->path, n, (1 << 24) - 1);
    r->n = n;
    r->tokens = calloc(n, sizeof *r->tokens);
    r->lens = calloc(n, sizeof *r->lens);
    r->types = calloc(n, sizeof *r->types);
    float *scores = calloc(n, sizeof *scores);
    int rc = AS_OK;
    if (!r->tokens || !r->lens || !r->types || !scores)
        rc = as_error_set(err, "%s: out of memory", r->path);
    for (size_t i = 0; i < n && rc == AS_OK; i++) {
        const json_t *e = json_array_get(r->vocab, i), *p = json_array_get(e, 0), *sc = json_array_get(e, 1);
        if (json_array_size(e) != 2 || !json_is_string(p) || !json_is_number(sc))
            rc = as_error_set(err, "%s: model.vocab[%zu]: expected [piece, score]", r->path, i);
        else if (!(r->tokens[i] = strndup(json_string_value(p), json_string_length(p))))
            rc = as_error_set(err, "%s: out of memory", r->path);
        else
            r->lens[i] = json_string_length(p), r->types[i] = 1, scores[i] = (float)json_number_value(sc);
    }
    size_t i;
    json_t *a;
    json_array_foreach(r->added, i, a) {
        if (rc != AS_OK)
            break;
        json_t *id = json_object_get(a, "id"), *c = json_object_get(a, "content");
        if (!json_is_integer(id) || !json_is_string(c))
            rc = as_error_set(err, "%s: added_tokens[%zu] needs an id and a content", r->path, i);
        else if (json_integer_value(id) < 0 || (size_t)json_integer_value(id) >= n)
            rc = as_error_set(err, "%s: added_tokens[%zu]: id %lld is outside model.vocab (0..%zu)", r->path, i,
                              (long long)json_integer_value(id), n - 1);
        else if (strcmp(r->tokens[json_integer_value(id)], json_string_value(c)))
            rc = as_error_set(err, "%s: added_tokens[%zu]: id %lld is '%.40s' in model.vocab", r->path, i,
                              (long long)json_integer_value(id), r->tokens[json_integer_value(id)]);
        else
            r->types[json_integer_value(id)] = json_is_true(json_object_get(a, "special")) ? 3 : 4;
    }
    long long unk = -1;
    json_t *u = json_object_get(r->model, "unk_id");
    if (rc == AS_OK && u && !json_is_null(u)) {
        if (!json_is_integer(u) || json_integer_value(u) < 0 || (size_t)json_integer_value(u) >= n)
            rc = as_error_set(err, "%s: model.unk_id must be an id in 0..%zu", r->path, n - 1);
        else
            unk = json_integer_value(u), r->types[unk] = 2;
    }
    if (rc == AS_OK && json_is_true(json_object_get(r->model, "byte_fallback")))
        rc = as_error_set(err, "%s: a Unigram model with byte_fallback is not read yet", r->path);
    const json_t *pre = json_object_get(r->root, "pre_tokenizer");
    const json_t *ms = as_hf_find_type(pre, "pretokenizers", "Metaspace");
    if (rc == AS_OK && pre && !json_is_null(pre) &&
        !(ms && (as_hf_is_type(pre, "Metaspace") ||
                 (json_array_size(json_object_get(pre, "pretokenizers")) == 2 &&
                  as_hf_is_type(json_array_get(json_object_get(pre, "pretokenizers"), 0), "WhitespaceSplit")))))
        rc = as_error_set(err, "%s: a Unigram model's pre_tokenizer must be Metaspace (or WhitespaceSplit then "
                          "Metaspace)", r->path);
    const json_t *rep = ms ? json_object_get(ms, "replacement") : NULL;
    if (rc == AS_OK && rep && !(json_is_string(rep) && !strcmp(json_string_value(rep), "\xE2\x96\x81")))
        rc = as_error_set(err, "%s: Metaspace's replacement must be '\xE2\x96\x81' (U+2581)", r->path);
    const json_t *scheme = ms ? json_object_get(ms, "prepend_scheme") : NULL;
    const json_t *aps = ms ? json_object_get(ms, "add_prefix_space") : NULL;
    bool prefix = ms && !(json_is_string(scheme) && !strcmp(json_string_value(scheme), "never")) &&
                  !json_is_false(aps);
    const uint8_t *map = NULL;
    size_t map_len = 0;
    bool collapse = false;
    if (rc == AS_OK)
        rc = unigram_normalizer(r, json_object_get(r->root, "normalizer"), &map, &map_len, &collapse, err);
    /* WhitespaceSplit before Metaspace drops every run of spaces */
    collapse |= ms && !as_hf_is_type(pre, "Metaspace");
    size_t n0 = r->n;
    if (rc == AS_OK)
        rc = as_hf_tok_pad(r, err);
    if (rc == AS_OK && r->n > n0) {
        float *s2 = realloc(scores, r->n * sizeof *s2);
        if (!s2)
            rc = as_error_set(err, "%s: out of memory", r->path);
        else
            for (scores = s2; n0 < r->n; n0++)
                scores[n0] = -1000.0f; /* as llama.cpp's converter scores its padding */
    }
    bool add_bos, add_eos;
    long long bos = -1, eos = -1, pad = as_hf_token_id(r, "<pad>");
    as_hf_tok_template(r, &add_bos, &add_eos, &bos, &eos);
    bool ok = rc == AS_OK && as_hf_kv_str(h, "tokenizer.ggml.model", "t5") &&
              as_hf_kv_arr4(h, "tokenizer.ggml.scores", AS_GGUF_FLOAT32, scores, r->n) &&
              as_hf_kv_arr4(h, "tokenizer.ggml.token_type", AS_GGUF_INT32, r->types, r->n) &&
              as_hf_kv_bool(h, "tokenizer.ggml.add_space_prefix", prefix) &&
              as_hf_kv_bool(h, "tokenizer.ggml.remove_extra_whitespaces", collapse) &&
              (!map || kv_bytes(h, "tokenizer.ggml.precompiled_charsmap", map, map_len)) &&
              (unk < 0 || as_hf_kv_u32(h, "tokenizer.ggml.unknown_token_id", (uint32_t)unk)) &&
              (pad < 0 || as_hf_kv_u32(h, "tokenizer.ggml.padding_token_id", (uint32_t)pad)) &&
              (bos < 0 || as_hf_kv_u32(h, "tokenizer.ggml.bos_token_id", (uint32_t)bos)) &&
              (eos < 0 || as_hf_kv_u32(h, "tokenizer.ggml.eos_token_id", (uint32_t)eos)) &&
              as_hf_kv_bool(h, "tokenizer.ggml.add_bos_token", add_bos) &&
              as_hf_kv_bool(h, "tokenizer.ggml.add_eos_token", add_eos) &&
              as_hf_kv_take_strs(h, "tokenizer.ggml.tokens", r->tokens, r->lens, r->n);
    if (rc == AS_OK && ok)
        r->tokens = NULL, r->lens = NULL;
    if (rc == AS_OK && !ok)
        rc = as_error_set(err, "%s: out of memory", r->path);
    free(scores);
    return rc;
}
