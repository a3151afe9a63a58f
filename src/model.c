#include "attnscope/model.h"

#include "attnscope/kernels.h"
#include "attnscope/quant.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *as_model_arch_name(const as_model *m)
{
    return m->arch->gguf_name;
}

/* Reads a required positive integer hyperparameter "{arch}.{suffix}". */
static int get_dim(const as_gguf *g, const char *arch, const char *suffix, int *out, as_error *err)
{
    char key[128];
    uint64_t v;
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (as_gguf_get_u64(g, key, &v, err))
        return AS_ERR;
    /* Refuse absurd sizes before anything is allocated from them. */
    if (v == 0 || v > (1u << 24))
        return as_error_set(err, "%s: %s = %llu is out of range (1..%u)", g->path, key,
                            (unsigned long long)v, 1u << 24);
    *out = (int)v;
    return AS_OK;
}

int as_config_read_common(as_config *c, const as_gguf *g, const char *arch, const char *eps_key, as_error *err)
{
    if (get_dim(g, arch, "context_length", &c->n_ctx, err) ||
        get_dim(g, arch, "embedding_length", &c->d_model, err) ||
        get_dim(g, arch, "block_count", &c->n_layer, err) ||
        get_dim(g, arch, "feed_forward_length", &c->d_ff, err) ||
        get_dim(g, arch, "attention.head_count", &c->n_head, err))
        return AS_ERR;
    char key[128];
    c->n_head_kv = c->n_head;
    snprintf(key, sizeof key, "%s.attention.head_count_kv", arch);
    if (as_gguf_find(g, key) && get_dim(g, arch, "attention.head_count_kv", &c->n_head_kv, err))
        return AS_ERR;
    snprintf(key, sizeof key, "%s.attention.key_length", arch);
    if (c->d_model % c->n_head && !as_gguf_find(g, key))
        return as_error_set(err, "%s: embedding_length %d is not a multiple of head_count %d",
                            g->path, c->d_model, c->n_head);
    if (c->n_head % c->n_head_kv)
        return as_error_set(err, "%s: head_count %d is not a multiple of head_count_kv %d",
                            g->path, c->n_head, c->n_head_kv);
    c->d_head = c->d_model / c->n_head;
    c->eps = 1e-5f;
    snprintf(key, sizeof key, "%s.%s", arch, eps_key);
    if (as_gguf_get_f32_opt(g, key, &c->eps, err))
        return AS_ERR;
    /* A negative or NaN epsilon makes every norm NaN: refuse it here, by name. */
    if (!(c->eps >= 0.0f && c->eps < 1.0f))
        return as_error_set(err, "%s: %s = %g must be a finite number from 0 to 1", g->path, key, c->eps);
    c->rope_base = 10000.0f;
    c->rope_dim = c->d_head;
    c->rope = as_rope_plain(c->rope_dim, c->rope_base);
    return AS_OK;
}

int as_config_read_head_size(as_config *c, const as_gguf *g, const char *arch, as_error *err)
{
    char key[128], vkey[128];
    uint32_t k = 0, v = 0;
    snprintf(key, sizeof key, "%s.attention.key_length", arch);
    snprintf(vkey, sizeof vkey, "%s.attention.value_length", arch);
    if (as_gguf_get_u32_opt(g, key, &k, err) || as_gguf_get_u32_opt(g, vkey, &v, err))
        return AS_ERR;
    if (!k && !v)
        return AS_OK;
    if (k == 0 || k > 65536 || k % 2)
        return as_error_set(err, "%s: %s = %u must be an even head size from 2 to 65536", g->path, key, k);
    if (v && v != k)
        return as_error_set(err, "%s: %s = %u differs from %s = %u (attnscope runs these models with one head size)",
                            g->path, vkey, v, key, k);
    c->d_head = (int)k;
    c->rope_dim = c->d_head;
    c->rope = as_rope_plain(c->rope_dim, c->rope_base);
    return AS_OK;
}

/* The scaling llama.cpp applies for the file's keys (llama_context's
 * defaults: YaRN's beta 32 and 1, its magnitude folded as ggml expects). */
static int read_rope_scaling(as_config *c, const as_gguf *g, const char *arch, as_error *err)
{
    char key[128];
    const char *type = "linear";
    float factor = 0, attn = 1.0f;
    uint32_t orig = (uint32_t)c->n_ctx;
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    if (as_gguf_find(g, key) && as_gguf_get_str(g, key, &type, err))
        return AS_ERR;
    bool yarn = !strcmp(type, "yarn"), none = !strcmp(type, "none");
    if (!yarn && !none && strcmp(type, "linear") && strcmp(type, "longrope"))
        return as_error_set(err, "%s: %s = '%.40s' is not a rotary scaling attnscope knows "
                            "(none, linear, yarn, longrope)", g->path, key, type);
    snprintf(key, sizeof key, "%s.rope.scaling.factor", arch);
    if (as_gguf_get_f32_opt(g, key, &factor, err))
        return AS_ERR;
    if (factor == 0) {
        snprintf(key, sizeof key, "%s.rope.scale_linear", arch);
        if (as_gguf_get_f32_opt(g, key, &factor, err))
            return AS_ERR;
    }
    if (!(factor == 0 || (factor > 0 && factor < 1e6f)))
        return as_error_set(err, "%s: %s = %g must be a positive number", g->path, key, factor);
    snprintf(key, sizeof key, "%s.rope.scaling.attn_factor", arch);
    if (as_gguf_get_f32_opt(g, key, &attn, err))
        return AS_ERR;
    if (!(attn > 0 && attn < 1e6f))
        return as_error_set(err, "%s: %s = %g must be a positive number", g->path, key, attn);
    snprintf(key, sizeof key, "%s.rope.scaling.original_context_length", arch);
    if (as_gguf_get_u32_opt(g, key, &orig, err))
        return AS_ERR;
    if (orig == 0 || orig > (1u << 24))
        return as_error_set(err, "%s: %s = %u is out of range (1..%u)", g->path, key, orig, 1u << 24);
    as_rope_spec *r = &c->rope;
    *r = as_rope_plain(c->rope_dim, c->rope_base);
    r->freq_scale = none || factor == 0 ? 1.0f : 1.0f / factor;
    r->n_ctx_orig = (int)orig;
    if (yarn) {
        float f = 1.0f / r->freq_scale;
        r->ext_factor = 1.0f;
        r->attn_factor = (f <= 1.0f ? 1.0f : 0.1f * logf(f) + 1.0f) * (1.0f / (1.0f + 0.1f * logf(f)));
    }
    r->attn_factor *= attn;
    return AS_OK;
}

int as_config_read_rope(as_config *c, const as_gguf *g, const char *arch, as_error *err)
{
    char key[128];
    uint32_t rd = (uint32_t)c->d_head;
    snprintf(key, sizeof key, "%s.rope.freq_base", arch);
    if (as_gguf_get_f32_opt(g, key, &c->rope_base, err))
        return AS_ERR;
    if (!(c->rope_base > 1.0f && c->rope_base <= 1e30f))
        return as_error_set(err, "%s: %s = %g must be a finite number above 1", g->path, key, c->rope_base);
    snprintf(key, sizeof key, "%s.rope.dimension_count", arch);
    if (as_gguf_get_u32_opt(g, key, &rd, err))
        return AS_ERR;
    if (rd == 0 || rd > (uint32_t)c->d_head || rd % 2)
        return as_error_set(err, "%s: %s = %u must be even and at most the head size %d "
                            "(embedding_length %d / head_count %d)",
                            g->path, key, rd, c->d_head, c->d_model, c->n_head);
    c->rope_dim = (int)rd;
    return read_rope_scaling(c, g, arch, err);
}

/* In a survey (as_model_check) a missing or misshapen tensor is noted and
 * loading goes on, so every one is named; otherwise it stops the load. */
/* Problems a survey lists before it stops: a file claiming millions of
 * blocks without their tensors would otherwise be surveyed block by block
 * for minutes (found by fuzz_gguf). */
enum { SURVEY_LINES = 64 };

static int survey_note(as_model *m, as_error *err)
{
    if (!m->survey)
        return AS_ERR;
    if (m->n_problems++ >= SURVEY_LINES)
        return as_error_set(err, "the check stops after %d missing or misshapen tensors", SURVEY_LINES);
    size_t had = m->problems_len, add = strlen(err->msg) + 2;
    char *p = realloc(m->problems, had + add);
    if (!p)
        return AS_ERR;
    snprintf(p + had, add, "%s\n", err->msg);
    m->problems = p;
    m->problems_len = had + add - 1;
    return AS_OK;
}

/* The tensor `name` with its shape checked against ne (ne1 == 0 for a
 * vector); NULL if absent. */
static int find_tensor(as_model *m, const char *name, uint64_t ne0, uint64_t ne1, bool optional,
                       const as_gguf_tensor **out, as_error *err)
{
    const as_gguf *g = m->gguf;
    const as_gguf_tensor *t = as_gguf_tensor_find(g, name);
    *out = NULL;
    if (t && m->used)
        m->used[t - g->tensors] = true;
    if (!t) {
        if (optional)
            return AS_OK;
        as_error_set(err, "%s: tensor '%s' is missing (a %s model needs it)", g->path, name, m->arch->gguf_name);
        return survey_note(m, err);
    }
    uint32_t want_dims = ne1 ? 2 : 1;
    bool ok = t->ne[0] == ne0 && (ne1 ? t->ne[1] == ne1 : 1) && t->ne[2] == 1 && t->ne[3] == 1 &&
              (t->n_dims == want_dims || (want_dims == 2 && t->n_dims == 1 && ne1 == 1));
    if (!ok) {
        char want[64];
        if (ne1)
            snprintf(want, sizeof want, "[%llu, %llu]", (unsigned long long)ne0, (unsigned long long)ne1);
        else
            snprintf(want, sizeof want, "[%llu]", (unsigned long long)ne0);
        as_error_set(err,
                     "%s: offset %llu: tensor '%s' has shape [%llu, %llu, %llu, %llu] but the "
                     "configuration needs %s",
                     g->path, (unsigned long long)t->info_offset, name, (unsigned long long)t->ne[0],
                     (unsigned long long)t->ne[1], (unsigned long long)t->ne[2], (unsigned long long)t->ne[3], want);
        return survey_note(m, err);
    }
    *out = t;
    return AS_OK;
}

int as_model_matrix(as_model *m, const char *name, uint64_t cols, uint64_t rows, bool optional,
                    as_weight *out, as_error *err)
{
    const as_gguf_tensor *t;
    memset(out, 0, sizeof *out);
    if (find_tensor(m, name, cols, rows, optional, &t, err))
        return AS_ERR;
    if (!t)
        return AS_OK;
    if (as_weight_from_tensor(out, t, err))
        return AS_ERR;
    m->weight_bytes += as_weight_bytes(out);
    return AS_OK;
}

int as_model_expert_matrix(as_model *m, const char *name, uint64_t cols, uint64_t rows, uint64_t n_expert,
                           bool optional, as_weight *out, as_error *err)
{
    const as_gguf *g = m->gguf;
    const as_gguf_tensor *t = as_gguf_tensor_find(g, name);
    memset(out, 0, sizeof *out);
    if (t && m->used)
        m->used[t - g->tensors] = true;
    if (!t) {
        if (optional)
            return AS_OK;
        as_error_set(err, "%s: tensor '%s' is missing (a %s model needs it)", g->path, name, m->arch->gguf_name);
        return survey_note(m, err);
    }
    if (t->ne[0] != cols || t->ne[1] != rows || t->ne[2] != n_expert || t->ne[3] != 1) {
        as_error_set(err,
                     "%s: offset %llu: tensor '%s' has shape [%llu, %llu, %llu, %llu] but the configuration "
                     "needs [%llu, %llu, %llu] (a matrix per expert: columns, rows, experts)",
                     g->path, (unsigned long long)t->info_offset, name, (unsigned long long)t->ne[0],
                     (unsigned long long)t->ne[1], (unsigned long long)t->ne[2], (unsigned long long)t->ne[3],
                     (unsigned long long)cols, (unsigned long long)rows, (unsigned long long)n_expert);
        return survey_note(m, err);
    }
    if (as_weight_from_tensor(out, t, err))
        return AS_ERR;
    m->weight_bytes += as_weight_bytes(out);
    return AS_OK;
}

int as_model_conv_matrix(as_model *m, const char *name, uint64_t kw, uint64_t kh, uint64_t in, uint64_t out,
                         as_weight *w, as_error *err)
{
    const as_gguf *g = m->gguf;
    const as_gguf_tensor *t = as_gguf_tensor_find(g, name);
    memset(w, 0, sizeof *w);
    if (t && m->used)
        m->used[t - g->tensors] = true;
    if (!t) {
        as_error_set(err, "%s: tensor '%s' is missing (a %s model needs it)", g->path, name, m->arch->gguf_name);
        return survey_note(m, err);
    }
    if (t->ne[0] != kw || t->ne[1] != kh || t->ne[2] != in || t->ne[3] != out) {
        as_error_set(err,
                     "%s: offset %llu: tensor '%s' has shape [%llu, %llu, %llu, %llu] but the configuration "
                     "needs [%llu, %llu, %llu, %llu] (a convolution kernel: width, height, in, out channels)",
                     g->path, (unsigned long long)t->info_offset, name, (unsigned long long)t->ne[0],
                     (unsigned long long)t->ne[1], (unsigned long long)t->ne[2], (unsigned long long)t->ne[3],
                     (unsigned long long)kw, (unsigned long long)kh, (unsigned long long)in,
                     (unsigned long long)out);
        return survey_note(m, err);
    }
    if (as_weight_from_tensor(w, t, err))
        return AS_ERR;
    /* Rows of one output channel are contiguous: in * kh * kw values. */
    w->cols = (int)(kw * kh * in);
    w->rows = (int)out;
    w->row_bytes = (size_t)as_ggml_nbytes(t->type, (int64_t)w->cols);
    m->weight_bytes += as_weight_bytes(w);
    return AS_OK;
}

int as_model_vector(as_model *m, const char *name, uint64_t n, bool optional, const float **out, as_error *err)
{
    const as_gguf_tensor *t;
    *out = NULL;
    if (find_tensor(m, name, n, 0, optional, &t, err))
        return AS_ERR;
    if (!t)
        return AS_OK;
    m->weight_bytes += t->n_bytes;
    if (t->type == AS_GGML_F32 && ((uintptr_t)t->data % sizeof(float)) == 0) {
        *out = (const float *)t->data;
        return AS_OK;
    }
    float *buf = malloc(t->n_elements * sizeof(float));
    float **owned = realloc(m->owned, (m->n_owned + 1) * sizeof *owned);
    if (!buf || !owned) {
        free(buf);
        if (owned)
            m->owned = owned;
        return as_error_set(err, "%s: out of memory for tensor '%s'", m->gguf->path, name);
    }
    m->owned = owned;
    m->owned[m->n_owned++] = buf;
    if (as_tensor_to_f32(t, buf, err))
        return AS_ERR;
    *out = buf;
    return AS_OK;
}

int as_model_check_vocab(const as_model *m, const char *name, as_error *err)
{
    const as_gguf_tensor *emb = as_gguf_tensor_find(m->gguf, name);
    if (emb && emb->ne[1] != (uint64_t)m->cfg.n_vocab)
        return as_error_set(err, "%s: %s has %llu rows but the vocabulary has %d tokens", m->gguf->path, name,
                            (unsigned long long)emb->ne[1], m->cfg.n_vocab);
    return AS_OK;
}

int as_model_tensor_block(const as_model *m, const char *name)
{
    size_t n = strlen(m->arch->block_prefix);
    unsigned long l;
    int used = 0;
    if (strncmp(name, m->arch->block_prefix, n) || sscanf(name + n, "%lu.%n", &l, &used) != 1 || used == 0 ||
        l > INT_MAX)
        return -1;
    return (int)l;
}

void as_model_free(as_model *m)
{
    if (!m)
        return;
    free(m->used);
    free(m->problems);
    for (size_t i = 0; i < m->n_owned; i++)
        free(m->owned[i]);
    free(m->owned);
    free(m->weights);
    as_tokenizer_free(m->tok);
    as_gguf_close(m->gguf);
    free(m->path);
    free(m);
}
