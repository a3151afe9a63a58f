/* hf_view: the GGUF view of a Hugging Face directory as it is built: its
 * JSON files, config.json's values, the view's metadata and tensors (found
 * by HF name, checked, converted where the layout differs). What
 * src/arch_hf.c's families and the readers (safetensors.c,
 * hf_tokenizer.c, hf.c) build with. */
#include "hf_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/file.h"

/* A buffer freed with the view (NULL: out of memory). */
void *as_hf_keep(as_hf *h, size_t bytes)
{
    void **b = realloc(h->bufs, (h->n_bufs + 1) * sizeof *b);
    if (!b)
        return NULL;
    h->bufs = b;
    void *p = calloc(1, bytes ? bytes : 1);
    if (p)
        h->bufs[h->n_bufs++] = p;
    return p;
}

/* ---------------------------------------------------------------- JSON files */

json_t *as_hf_read_json(as_hf *h, const char *path, as_error *err)
{
    struct stat st;
    FILE *f = as_file_fopen_read(path, &st, err); /* a FIFO or a device is refused, never waited on */
    if (!f)
        return NULL;
    json_error_t je;
    json_t *j = json_loadf(f, JSON_REJECT_DUPLICATES, &je);
    fclose(f);
    if (!j)
        as_error_set(err, "%s: line %d, column %d: %s", path, je.line, je.column, je.text);
    else if (as_gguf_hold(h->g, &st, path, err))
        j = (json_decref(j), NULL);
    return j;
}

json_t *as_hf_load_json(as_hf *h, const char *path, as_error *err)
{
    json_t *j = as_hf_read_json(h, path, err);
    if (!j)
        return NULL;
    if (!json_is_object(j)) {
        json_decref(j);
        as_error_set(err, "%s: not a JSON object", path);
        return NULL;
    }
    return j;
}

/* ---------------------------------------------------------------- config.json */

int as_hf_cfg_int(as_hf *h, const char *key, bool required, long long def, long long lo, long long hi,
                  long long *out, as_error *err)
{
    json_t *v = json_object_get(h->config, key);
    if (!v || json_is_null(v)) {
        if (required)
            return as_error_set(err, "%s: key '%s' is missing (model_type %s needs it)", h->config_path, key,
                                h->model_type);
        *out = def;
        return AS_OK;
    }
    if (!json_is_integer(v))
        return as_error_set(err, "%s: key '%s' must be an integer", h->config_path, key);
    long long x = json_integer_value(v);
    if (x < lo || x > hi)
        return as_error_set(err, "%s: key '%s' = %lld is out of range (%lld..%lld)", h->config_path, key, x, lo,
                            hi);
    *out = x;
    return AS_OK;
}

int as_hf_cfg_num(as_hf *h, const char *key, bool required, double def, double lo, double hi, double *out,
                  as_error *err)
{
    json_t *v = json_object_get(h->config, key);
    if (!v || json_is_null(v)) {
        if (required)
            return as_error_set(err, "%s: key '%s' is missing (model_type %s needs it)", h->config_path, key,
                                h->model_type);
        *out = def;
        return AS_OK;
    }
    if (!json_is_number(v))
        return as_error_set(err, "%s: key '%s' must be a number", h->config_path, key);
    double x = json_number_value(v);
    if (!(x >= lo && x <= hi))
        return as_error_set(err, "%s: key '%s' = %g is out of range (%g..%g)", h->config_path, key, x, lo, hi);
    *out = x;
    return AS_OK;
}

int as_hf_cfg_bool(as_hf *h, const char *key, bool def, bool *out, as_error *err)
{
    json_t *v = json_object_get(h->config, key);
    if (!v || json_is_null(v)) {
        *out = def;
        return AS_OK;
    }
    if (!json_is_boolean(v))
        return as_error_set(err, "%s: key '%s' must be true or false", h->config_path, key);
    *out = json_is_true(v);
    return AS_OK;
}

const json_t *as_hf_cfg_obj(as_hf *h, const char *key)
{
    json_t *v = json_object_get(h->config, key);
    return v && !json_is_null(v) ? v : NULL;
}

/* ---------------------------------------------------------------- the view's metadata */

bool as_hf_kv_u32(as_hf *h, const char *key, uint32_t v) { return as_gguf_view_u32(h->g, key, v); }
bool as_hf_kv_f32(as_hf *h, const char *key, float v) { return as_gguf_view_f32(h->g, key, v); }
bool as_hf_kv_bool(as_hf *h, const char *key, bool v) { return as_gguf_view_bool(h->g, key, v); }
bool as_hf_kv_str(as_hf *h, const char *key, const char *s) { return as_gguf_view_str(h->g, key, s); }

/* An array of n strings; takes strs and lens (malloc'd) whatever happens. */
bool as_hf_kv_take_strs(as_hf *h, const char *key, char **strs, uint64_t *lens, uint64_t n)
{
    as_gguf_kv *kv = as_gguf_view_kv(h->g, key, AS_GGUF_ARRAY);
    if (!kv) {
        for (uint64_t i = 0; strs && i < n; i++)
            free(strs[i]);
        free(strs);
        free(lens);
        return false;
    }
    kv->arr_type = AS_GGUF_STRING;
    kv->arr_len = n;
    kv->strs = strs;
    kv->str_lens = lens;
    return true;
}

/* An array of n float32 or int32 (4 bytes each) in a buffer the view keeps. */
bool as_hf_kv_arr4(as_hf *h, const char *key, as_gguf_type type, const void *data, uint64_t n)
{
    void *copy = as_hf_keep(h, (size_t)n * 4);
    as_gguf_kv *kv = copy ? as_gguf_view_kv(h->g, key, AS_GGUF_ARRAY) : NULL;
    if (!kv)
        return false;
    memcpy(copy, data, (size_t)n * 4);
    kv->arr_type = type;
    kv->arr_len = n;
    kv->arr_data = copy;
    return true;
}

bool as_hf_kv_f32s(as_hf *h, const char *key, const float *v, uint64_t n)
{
    return as_hf_kv_arr4(h, key, AS_GGUF_FLOAT32, v, n);
}

bool as_hf_kv_strs(as_hf *h, const char *key, const char *const *s, uint64_t n)
{
    char **c = calloc(n ? n : 1, sizeof *c);
    uint64_t *l = calloc(n ? n : 1, sizeof *l);
    bool ok = c && l;
    for (uint64_t i = 0; ok && i < n; i++)
        ok = (c[i] = strdup(s[i])) != NULL, l[i] = ok ? strlen(s[i]) : 0;
    if (!ok) {
        for (uint64_t i = 0; c && i < n; i++)
            free(c[i]);
        free(c), free(l);
        return false;
    }
    return as_hf_kv_take_strs(h, key, c, l, n);
}

void as_hf_shape_str(const uint64_t *shape, uint32_t n, char *buf, size_t cap)
{
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (uint32_t i = 0; i < n && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%llu", i ? ", " : "", (unsigned long long)shape[i]);
    if (o < cap)
        snprintf(buf + o, cap - o, "]");
}

/* ---------------------------------------------------------------- tensors of the view */

static as_hf_tensor *find_as_is(as_hf *h, const char *hf_name)
{
    json_t *i = json_object_get(h->names, hf_name);
    char name[512];
    if (!i && h->alt_prefix && (size_t)snprintf(name, sizeof name, "%s%s", h->alt_prefix, hf_name) < sizeof name)
        i = json_object_get(h->names, name);
    if (!i && h->model_prefix && !strncmp(hf_name, "model.", 6) &&
        (size_t)snprintf(name, sizeof name, "%s%s", h->model_prefix, hf_name + 6) < sizeof name)
        i = json_object_get(h->names, name);
    return i ? &h->t[json_integer_value(i)] : NULL;
}

/* transformers' _fix_state_dict_key_on_load renames a LayerNorm's
 * TensorFlow-era "gamma" and "beta" to "weight" and "bias" (its older
 * _load_state_dict_into_model did so for any key holding them): the same
 * names are read here, as the suffixes of the name asked for. */
as_hf_tensor *as_hf_find(as_hf *h, const char *hf_name)
{
    as_hf_tensor *t = find_as_is(h, hf_name);
    size_t n = strlen(hf_name);
    const char *legacy = n > 7 && !strcmp(hf_name + n - 7, ".weight") ? "gamma"
                         : n > 5 && !strcmp(hf_name + n - 5, ".bias") ? "beta" : NULL;
    char name[512];
    if (t || !legacy || n + 1 >= sizeof name)
        return t;
    size_t stem = n - (legacy[0] == 'g' ? 6 : 4);
    snprintf(name, sizeof name, "%.*s%s", (int)stem, hf_name, legacy);
    return find_as_is(h, name);
}

bool as_hf_known_buffer(const char *name)
{
    static const char *const suffixes[] = {"position_ids", ".rotary_emb.inv_freq", ".attn.masked_bias"};
    size_t n = strlen(name);
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        size_t k = strlen(suffixes[i]);
        if (n >= k && !strcmp(name + n - k, suffixes[i]) && (n == k || name[n - k - 1] == '.' || suffixes[i][0] == '.'))
            return true;
    }
    return false;
}

/* The file's tensor nearest a missing name: sharing the most of its
 * prefix, at least all of its module (everything before its last '.'),
 * one no rule took before the others. NULL when none shares the module. */
static const as_hf_tensor *nearest(as_hf *h, const char *hf_name)
{
    const as_hf_tensor *best = NULL;
    size_t best_len = 0;
    const char *dot = strrchr(hf_name, '.');
    size_t module = dot ? (size_t)(dot - hf_name) + 1 : 0;
    for (int pass = 0; pass < 2; pass++) {
        const char *prefix = pass ? h->alt_prefix : "";
        size_t pl = prefix ? strlen(prefix) : 0;
        if (!prefix)
            continue;
        for (size_t i = 0; i < h->n; i++) {
            const char *t = h->t[i].name;
            if (strncmp(t, prefix, pl))
                continue;
            t += pl;
            size_t k = 0;
            while (t[k] && t[k] == hf_name[k])
                k++;
            bool better = k > best_len || (k == best_len && best && best->used && !h->t[i].used);
            if (k >= module && module && better)
                best = &h->t[i], best_len = k;
        }
    }
    return best;
}

static as_gguf_tensor *view_tensor(as_hf *h, const char *gguf_name, as_error *err)
{
    as_gguf *g = h->g;
    if (g->n_tensors >= h->tensor_cap) {
        uint64_t cap = h->tensor_cap ? 2 * h->tensor_cap : 64;
        as_gguf_tensor *t = realloc(g->tensors, (size_t)cap * sizeof *t);
        if (!t) {
            as_error_set(err, "%s: out of memory", h->dir);
            return NULL;
        }
        g->tensors = t, h->tensor_cap = cap;
    }
    as_gguf_tensor *t = &g->tensors[g->n_tensors];
    memset(t, 0, sizeof *t);
    if (!(t->name = strdup(gguf_name))) {
        as_error_set(err, "%s: out of memory", h->dir);
        return NULL;
    }
    g->n_tensors++;
    return t;
}

/* [a, b] (row-major, esize-byte elements) into [b, a]. */
static void transpose(uint8_t *out, const uint8_t *in, uint64_t a, uint64_t b, size_t es)
{
    for (uint64_t i = 0; i < a; i++)
        for (uint64_t j = 0; j < b; j++)
            memcpy(out + (j * a + i) * es, in + (i * b + j) * es, es);
}

/* Rows of each head from HF's order (the first half of the rotated pairs,
 * then the second) to llama.cpp's (x0, y0, x1, y1, ...): llama.cpp's
 * convert_hf_to_gguf.py permute(), reshape(heads, 2, dh/2, cols) with the
 * two middle axes swapped. */
static void pairs(uint8_t *out, const uint8_t *in, uint64_t heads, uint64_t dh, size_t row_bytes)
{
    for (uint64_t hd = 0; hd < heads; hd++)
        for (uint64_t i = 0; i < dh / 2; i++)
            for (uint64_t p = 0; p < 2; p++)
                memcpy(out + (hd * dh + 2 * i + p) * row_bytes, in + (hd * dh + p * (dh / 2) + i) * row_bytes,
                       row_bytes);
}

int as_hf_add(as_hf *h, const char *hf_name, const char *gguf_name, as_hf_xform x, int heads, uint32_t n_dims,
              const uint64_t *want, const char *what, bool optional, bool *found, as_error *err)
{
    /* Ctrl-C: converting a large checkpoint's tensors takes seconds */
    if (as_file_interrupted())
        return as_error_set(err, "%s: interrupted while reading the tensors (at '%s'): not loaded", h->dir, hf_name);
    as_hf_tensor *t = as_hf_find(h, hf_name);
    if (found)
        *found = t != NULL;
    if (!t) {
        if (optional)
            return AS_OK;
        const as_hf_tensor *near = nearest(h, hf_name);
        return as_error_set(err, "%s: tensor '%s' is missing (model_type %s needs it%s)%s%.200s%s",
                            h->n_files == 1 ? h->files[0].path : h->dir, hf_name, h->model_type,
                            h->n_files == 1 ? "" : "; no shard holds it", near ? " (the file has " : "",
                            near ? near->name : "", near ? ")" : "");
    }
    if (!t->readable)
        return as_error_set(err, "%s: tensor '%s': dtype %s is not read (F32, F16, BF16 are)", t->file, t->name,
                            t->dtype);
    const char *last = strrchr(t->name, '.');
    if (last && (!strcmp(last, ".gamma") || !strcmp(last, ".beta")) && !h->n_legacy++)
        snprintf(h->legacy_example, sizeof h->legacy_example, "%.100s as %.50s", t->name, hf_name);
    char got[96], exp[96];
    as_hf_shape_str(t->shape, t->n_dims, got, sizeof got);
    as_hf_shape_str(want, n_dims, exp, sizeof exp);
    if (t->n_dims != n_dims || memcmp(t->shape, want, n_dims * sizeof *want))
        return as_error_set(err, "%s: tensor '%s' has shape %s, config.json says %s %s", t->file, t->name, got, exp,
                            what);
    as_gguf_tensor *v = view_tensor(h, gguf_name, err);
    if (!v)
        return AS_ERR;
    t->used = true;
    v->n_dims = t->n_dims;
    for (uint32_t i = 0; i < 4; i++)
        v->ne[i] = i < t->n_dims ? t->shape[t->n_dims - 1 - i] : 1;
    v->type = t->type;
    v->n_elements = t->n_elements;
    v->n_bytes = t->n_bytes;
    v->offset = t->offset;
    v->path = t->file;
    v->data = t->data;
    if (x == AS_HF_AS_IS)
        return AS_OK;
    if (x == AS_HF_SQUEEZE) {
        while (v->n_dims > 1 && v->ne[v->n_dims - 1] == 1)
            v->n_dims--;
        return AS_OK;
    }
    if (x == AS_HF_PLUS_ONE) {
        float *f = as_hf_keep(h, (size_t)t->n_elements * sizeof *f);
        if (!f)
            return as_error_set(err, "%s: tensor '%s': out of memory for its converted copy", t->file, t->name);
        if (as_tensor_to_f32(v, f, err))
            return AS_ERR;
        for (uint64_t i = 0; i < t->n_elements; i++)
            f[i] += 1.0f;
        v->type = AS_GGML_F32;
        v->n_bytes = t->n_elements * sizeof *f;
        v->data = (const uint8_t *)f;
        return AS_OK;
    }
    uint8_t *copy = as_hf_keep(h, (size_t)t->n_bytes);
    if (!copy)
        return as_error_set(err, "%s: tensor '%s': out of memory for its converted copy", t->file, t->name);
    if (x == AS_HF_TRANSPOSE) {
        if (t->n_dims != 2)
            return as_error_set(err, "%s: tensor '%s': only a matrix can be transposed", t->file, t->name);
        transpose(copy, t->data, t->shape[0], t->shape[1], t->esize);
        v->ne[0] = t->shape[0], v->ne[1] = t->shape[1];
    } else {
        uint64_t rows = t->shape[0], dh = heads > 0 ? rows / (uint64_t)heads : 0;
        if (heads <= 0 || rows % (uint64_t)heads || dh % 2)
            return as_error_set(err, "%s: tensor '%s': %llu rows are not %d heads of an even size", t->file, t->name,
                                (unsigned long long)rows, heads);
        pairs(copy, t->data, (uint64_t)heads, dh, (size_t)(t->n_bytes / rows));
    }
    v->data = copy;
    return AS_OK;
}

int as_hf_add_f32(as_hf *h, const char *gguf_name, const float *vals, uint64_t n, as_error *err)
{
    float *copy = as_hf_keep(h, (size_t)n * sizeof *copy);
    as_gguf_tensor *v = copy ? view_tensor(h, gguf_name, err) : NULL;
    if (!v)
        return copy ? AS_ERR : as_error_set(err, "%s: out of memory", h->dir);
    memcpy(copy, vals, (size_t)n * sizeof *copy);
    v->n_dims = 1;
    v->ne[0] = n, v->ne[1] = v->ne[2] = v->ne[3] = 1;
    v->type = AS_GGML_F32;
    v->n_elements = n;
    v->n_bytes = n * sizeof *copy;
    v->path = h->config_path;
    v->data = (const uint8_t *)copy;
    return AS_OK;
}

/* ---------------------------------------------------------------- tensors by rule */

bool as_hf_ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && !strcmp(s + n - k, suffix);
}

int as_hf_add_rules(as_hf *h, const as_hf_rule *r, size_t n, int layer, as_error *err)
{
    for (size_t i = 0; i < n; i++) {
        char hf[160], gg[160];
        snprintf(hf, sizeof hf, r[i].hf, layer);
        snprintf(gg, sizeof gg, r[i].gguf, layer);
        uint64_t want[2] = {r[i].d0, r[i].d1};
        if (as_hf_add(h, hf, gg, r[i].x, r[i].heads, r[i].n_dims, want, r[i].what, r[i].optional, NULL, err))
            return AS_ERR;
    }
    return AS_OK;
}

/* The same rules for each of n_layer blocks. */
int as_hf_add_layer_rules(as_hf *h, const as_hf_rule *r, size_t n, int n_layer, as_error *err)
{
    for (int l = 0; l < n_layer; l++)
        if (as_hf_add_rules(h, r, n, l, err))
            return AS_ERR;
    return AS_OK;
}

int as_hf_oom(as_hf *h, as_error *err)
{
    return as_error_set(err, "%s: out of memory", h->dir);
}
