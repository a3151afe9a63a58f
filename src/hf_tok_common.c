/* hf_tok_common: what the readers of tokenizer.json's models
 * (hf_tokenizer.c, hf_tok_unigram.c) share: the tokenizers library's
 * "type" tags, a token's id, the padding up to config.json's vocab_size
 * and the single-sequence template's special tokens. */
#include "hf_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool as_hf_is_type(const json_t *o, const char *type)
{
    return json_is_object(o) && json_is_string(json_object_get(o, "type")) &&
           !strcmp(json_string_value(json_object_get(o, "type")), type);
}

/* o itself or, in a Sequence, its member of that type. */
const json_t *as_hf_find_type(const json_t *o, const char *list_key, const char *type)
{
    if (as_hf_is_type(o, type))
        return o;
    if (as_hf_is_type(o, "Sequence")) {
        const json_t *l = json_object_get(o, list_key);
        size_t i;
        json_t *e;
        json_array_foreach(l, i, e) if (as_hf_is_type(e, type)) return e;
    }
    return NULL;
}

long long as_hf_token_id(tok_read *r, const char *content)
{
    json_t *v = json_object_get(r->vocab, content);
    if (json_is_integer(v))
        return json_integer_value(v);
    size_t i;
    json_t *a;
    json_array_foreach(r->added, i, a) {
        json_t *c = json_object_get(a, "content");
        if (json_is_string(c) && !strcmp(json_string_value(c), content))
            return json_integer_value(json_object_get(a, "id"));
    }
    return -1;
}

/* Up to config.json's vocab_size (an embedding padded past the
 * tokenizer's vocabulary): "[PADn]" tokens of type unused, as llama.cpp's
 * converter adds them. */
int as_hf_tok_pad(tok_read *r, as_error *err)
{
    long long want;
    as_error ignored;
    if (as_hf_cfg_int(r->h, "vocab_size", false, r->h->vocab_default, 0, 1 << 24, &want, &ignored) ||
        want <= (long long)r->n)
        return AS_OK;
    size_t n = (size_t)want;
    char **t = realloc(r->tokens, n * sizeof *t);
    if (t)
        r->tokens = t;
    uint64_t *l = t ? realloc(r->lens, n * sizeof *l) : NULL;
    if (l)
        r->lens = l;
    int32_t *ty = l ? realloc(r->types, n * sizeof *ty) : NULL;
    if (!ty)
        return as_error_set(err, "%s: out of memory", r->path);
    r->types = ty;
    for (size_t i = r->n; i < n; i++) {
        char buf[32];
        snprintf(buf, sizeof buf, "[PAD%zu]", i);
        if (!(r->tokens[i] = strdup(buf))) {
            r->n = i;
            return as_error_set(err, "%s: out of memory", r->path);
        }
        r->lens[i] = strlen(buf);
        r->types[i] = 5; /* unused */
        r->n = i + 1;
    }
    return AS_OK;
}

/* add_bos / add_eos from the post-processor's single-sequence template. */
void as_hf_tok_template(tok_read *r, bool *add_bos, bool *add_eos, long long *bos, long long *eos)
{
    const json_t *tp = as_hf_find_type(json_object_get(r->root, "post_processor"), "processors", "TemplateProcessing");
    json_t *single = tp ? json_object_get(tp, "single") : NULL;
    size_t n = json_array_size(single);
    *add_bos = *add_eos = false;
    for (size_t i = 0; i < n; i++) {
        json_t *st = json_object_get(json_array_get(single, i), "SpecialToken");
        json_t *id = st ? json_object_get(st, "id") : NULL;
        if (!json_is_string(id))
            continue;
        long long t = as_hf_token_id(r, json_string_value(id));
        if (t < 0)
            continue;
        if (i == 0)
            *add_bos = true, *bos = t;
        else if (i == n - 1)
            *add_eos = true, *eos = t;
    }
}
