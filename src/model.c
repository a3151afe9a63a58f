#include "attnscope/model.h"

#include "attnscope/file.h"
#include "attnscope/kernels.h"
#include "attnscope/hf.h"
#include "attnscope/llama2c.h"
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

static void read_name(as_config *c, const as_gguf *g)
{
    const char *name = NULL;
    as_error ignore;
    if (as_gguf_find(g, "general.name") && as_gguf_get_str(g, "general.name", &name, &ignore) == AS_OK)
        snprintf(c->name, sizeof c->name, "%s", name);
    else {
        const char *base = strrchr(g->path, '/');
        snprintf(c->name, sizeof c->name, "%s", base ? base + 1 : g->path);
        char *dot = strrchr(c->name, '.');
        if (dot)
            *dot = '\0';
    }
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

/* Tensors of blocks past block_count mean the count is wrong (a half-done
 * conversion): running fewer layers than were trained would mislead. */
static int check_blocks(const as_model *m, as_error *err)
{
    const as_gguf *g = m->gguf;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        int l = as_model_tensor_block(m, g->tensors[i].name);
        if (l >= m->cfg.n_layer)
            return as_error_set(err, "%s: %s.block_count is %d but the file has tensors for block %d (%s)",
                                g->path, m->arch->gguf_name, m->cfg.n_layer, l, g->tensors[i].name);
    }
    return AS_OK;
}

/* Empty and duplicated vocabulary strings are legal (the first id wins a
 * look-up; an empty token decodes to nothing) but often mean a broken
 * conversion, so they are counted in the warnings. Strings are compared as
 * C strings, which is what a look-up sees. */
static void note_vocabulary(as_model *m)
{
    int empty = 0, dup = 0, first_empty = -1, first_dup = -1;
    for (int id = 0; id < m->cfg.n_vocab; id++) {
        const char *p = as_tokenizer_piece(m->tok, id);
        if (!p || !p[0]) {
            empty++;
            first_empty = first_empty < 0 ? id : first_empty;
            continue;
        }
        int32_t first = as_tokenizer_find(m->tok, p);
        if (first >= 0 && first != id) {
            dup++;
            first_dup = first_dup < 0 ? id : first_dup;
        }
    }
    size_t used = strlen(m->warnings);
    if (empty && used + 1 < sizeof m->warnings)
        used += (size_t)snprintf(m->warnings + used, sizeof m->warnings - used,
                                 "%svocabulary: %d empty tokens (first id %d)", used ? "; " : "", empty, first_empty);
    if (dup && used + 1 < sizeof m->warnings)
        snprintf(m->warnings + used, sizeof m->warnings - used,
                 "%svocabulary: %d tokens repeat an earlier token's text (first id %d; look-ups give the earlier id)",
                 used ? "; " : "", dup, first_dup);
}

/* A block type's values are non-finite exactly where a block's scale is
 * (quant.h), so its scales alone are read: 2 bytes a block rather than
 * decoding every value. Returns the count of non-finite values and names
 * the first corrupt block in where[]. */
static uint64_t scan_blocks(const as_gguf_tensor *t, char *where, size_t cap)
{
    const as_ggml_traits *tr = as_ggml_traits_of(t->type);
    as_block_scan s;
    as_ggml_scan_blocks(t->type, t->data, t->n_elements / tr->block_elems, &s);
    if (!s.bad)
        return 0;
    uint64_t per_row = t->ne[0] / tr->block_elems, col = s.first_bad % per_row * tr->block_elems;
    snprintf(where, cap, "; %llu %s block%s with a NaN or Inf scale, the first block %llu: row %llu, columns "
             "%llu..%llu, scale %g", (unsigned long long)s.bad, tr->name, s.bad == 1 ? "" : "s",
             (unsigned long long)s.first_bad, (unsigned long long)(s.first_bad / per_row),
             (unsigned long long)col, (unsigned long long)(col + tr->block_elems - 1), (double)s.first_bad_scale);
    return s.bad * tr->block_elems;
}

/* 16-bit floats are NaN or Inf when their exponent bits are all set: an
 * integer test on the stored bits, no decoding. */
static uint64_t count_nonfinite16(const uint8_t *p, uint64_t n, uint16_t exp_mask)
{
    uint64_t bad = 0;
    for (uint64_t k = 0; k < n; k++)
        bad += ((p[2 * k] | p[2 * k + 1] << 8) & exp_mask) == exp_mask;
    return bad;
}

/* Names tensors that hold NaN or Inf, and a block type's first corrupt
 * block: a broken conversion should load (so it can be inspected) but say
 * so at once. */
static void scan_nonfinite(as_model *m)
{
    const as_gguf *g = m->gguf;
    size_t used = strlen(m->warnings), first = used; /* after the warnings before it */
    int found = 0;
    float *row = NULL;
    size_t row_cap = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        char where[160] = "";
        if (!as_ggml_type_supported(t->type) || t->ne[0] == 0)
            continue;
        if (t->ne[0] > row_cap) {
            free(row);
            row_cap = t->ne[0];
            row = malloc(row_cap * sizeof *row);
            if (!row)
                return;
        }
        uint64_t bad = 0, rows = as_tensor_rows(t);
        /* F32 in place: one vectorized pass over the map finds nothing in
         * the common case (this runs on every load, over every weight). */
        if (t->type == AS_GGML_F32 && (uintptr_t)t->data % sizeof(float) == 0) {
            const float *f = (const float *)t->data;
            if (as_all_finite(f, (long)t->n_elements))
                continue;
            rows = 0;
            for (uint64_t k = 0; k < t->n_elements; k++)
                bad += !isfinite(f[k]);
        } else if (as_ggml_has_scales(t->type)) {
            bad = scan_blocks(t, where, sizeof where);
            rows = 0;
        } else if (t->type == AS_GGML_F16 || t->type == AS_GGML_BF16) {
            bad = count_nonfinite16(t->data, t->n_elements, t->type == AS_GGML_F16 ? 0x7c00 : 0x7f80);
            rows = 0;
        }
        for (uint64_t r = 0; r < rows; r++) {
            if (as_tensor_row_f32(t, r, row, NULL))
                break;
            for (uint64_t k = 0; k < t->ne[0]; k++)
                bad += !isfinite(row[k]);
        }
        if (bad && used + 1 < sizeof m->warnings) {
            used += (size_t)snprintf(m->warnings + used, sizeof m->warnings - used, "%s%s (%llu%s)",
                                     found++ ? ", " : first ? "; tensors holding NaN or Inf: "
                                                             : "tensors holding NaN or Inf: ", t->name,
                                     (unsigned long long)bad, where);
            if (used >= sizeof m->warnings)
                used = sizeof m->warnings - 1;
        }
    }
    free(row);
}

/* Tensors the file has and the architecture did not ask for: a broken
 * conversion (a misspelt name, a layer too many) or a variant attnscope
 * does not run whole. Listed, not refused: the model may still be worth
 * inspecting. Writes at most cap bytes of ", "-separated names to out;
 * returns how many there are. */
static int unused_tensors(const as_model *m, char *out, size_t cap)
{
    int n = 0;
    size_t used = 0;
    out[0] = '\0';
    for (uint64_t i = 0; i < m->gguf->n_tensors; i++) {
        if (m->used[i])
            continue;
        if (used + 1 < cap)
            used += (size_t)snprintf(out + used, cap - used, "%s%s", n ? ", " : "", m->gguf->tensors[i].name);
        n++;
    }
    if (used >= cap && cap > 4)
        memcpy(out + cap - 4, "...", 4);
    return n;
}

static void note_unused(as_model *m)
{
    char names[600];
    int n = unused_tensors(m, names, sizeof names);
    size_t used = strlen(m->warnings);
    if (n && used + 1 < sizeof m->warnings)
        snprintf(m->warnings + used, sizeof m->warnings - used, "%s%d tensor%s the %s architecture does not use: %s",
                 used ? "; " : "", n, n == 1 ? "" : "s", m->arch->gguf_name, names);
}

static int find_arch(as_model *m, as_error *err)
{
    const char *arch;
    char names[256];
    if (as_gguf_get_str(m->gguf, "general.architecture", &arch, err))
        return AS_ERR;
    m->arch = as_arch_find(arch);
    if (m->arch)
        return AS_OK;
    as_arch_names(names, sizeof names);
    return as_error_set(err, "%s: architecture '%s' is not supported (attnscope runs %s)", m->gguf->path, arch,
                        names);
}

int as_model_from_gguf(as_model **out, as_gguf *g, as_error *err)
{
    return as_model_from_gguf_tok(out, g, NULL, err);
}

int as_model_from_gguf_tok(as_model **out, as_gguf *g, as_tokenizer *tok, as_error *err)
{
    *out = NULL;
    as_model *m = calloc(1, sizeof *m);
    if (!m)
        return as_error_set(err, "%s: out of memory", g->path);
    m->gguf = g;
    m->tok = tok;
    m->path = strdup(g->path);
    if (!m->path || find_arch(m, err) || m->arch->read_config(&m->cfg, g, err))
        goto fail;
    read_name(&m->cfg, g);
    if (!tok && (m->arch->vocabulary ? m->arch->vocabulary(&m->tok, g, err) : as_tokenizer_from_gguf(&m->tok, g, err)))
        goto fail;
    m->cfg.n_vocab = (int)as_tokenizer_vocab_size(m->tok);
    m->used = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *m->used);
    if (!m->used) {
        as_error_set(err, "%s: out of memory", g->path);
        goto fail;
    }
    if (m->arch->load(m, err) || check_blocks(m, err))
        goto fail;
    if (g->view_note && g->view_note[0])
        snprintf(m->warnings, sizeof m->warnings, "%s", g->view_note);
    note_unused(m);
    scan_nonfinite(m);
    note_vocabulary(m);
    as_defang(m->warnings); /* they quote tensor names from the file */
    *out = m;
    return AS_OK;
fail:
    m->gguf = NULL; /* the caller keeps ownership on failure */
    if (tok)
        m->tok = NULL;
    as_model_free(m);
    return AS_ERR;
}

/* GGUF files start with their magic; anything else is read as a llama2.c
 * checkpoint (which has none), unless its name says GGUF. What cannot be
 * read as a regular file (a FIFO, a device: never waited on) goes to the
 * GGUF reader, whose error says so. */
static bool is_gguf(const char *path)
{
    unsigned char magic[4] = {0};
    FILE *f = as_file_fopen_read(path, NULL, NULL);
    size_t got = f ? fread(magic, 1, sizeof magic, f) : 0;
    if (f)
        fclose(f);
    size_t n = strlen(path);
    if (n >= 5 && !strcmp(path + n - 5, ".gguf"))
        return true;
    return !f || got < 4 || !memcmp(magic, "GGUF", 4);
}

int as_model_load(as_model **out, const char *path, as_error *err)
{
    return as_model_load_with(out, path, NULL, err);
}

int as_model_load_with(as_model **out, const char *path, const char *tokenizer, as_error *err)
{
    as_gguf *g;
    *out = NULL;
    if (as_hf_is_dir(path)) {
        if (tokenizer)
            return as_error_set(err, "%s: a Hugging Face directory carries its own tokenizer (tokenizer.json; "
                                "--tokenizer %s is for llama2.c checkpoints)", path, tokenizer);
        return as_hf_load(out, path, err);
    }
    if (!is_gguf(path))
        return as_llama2c_load(out, path, tokenizer, err);
    if (tokenizer)
        return as_error_set(err, "%s: a GGUF file carries its own tokenizer (--tokenizer %s is for "
                            "llama2.c checkpoints)", path, tokenizer);
    if (as_gguf_open(&g, path, err))
        return AS_ERR;
    if (as_model_from_gguf(out, g, err)) {
        as_gguf_close(g);
        return AS_ERR;
    }
    return AS_OK;
}

int as_model_print_check(as_gguf *g, FILE *out, as_error *why)
{
    as_error err = {{0}};
    as_model *m = calloc(1, sizeof *m);
    int rc = AS_ERR;
    if (!m || !(m->used = calloc(g->n_tensors ? g->n_tensors : 1, sizeof *m->used))) {
        free(m);
        fprintf(out, "\ntensors against the architecture\n  not checked: out of memory\n");
        return as_error_set(why, "out of memory");
    }
    m->gguf = g;
    m->survey = true;
    m->path = (char *)g->path;
    fputs("\ntensors against the architecture\n", out);
    if (find_arch(m, &err) || m->arch->read_config(&m->cfg, g, &err)) {
        fprintf(out, "  not checked: %s\n", err.msg);
        goto done;
    }
    /* The vocabulary size the load checks the embedding against (an image model's: its classes). */
    if (m->arch->vocabulary ? m->arch->vocabulary(&m->tok, g, &err) : as_tokenizer_from_gguf(&m->tok, g, &err)) {
        fprintf(out, "  not checked: %s\n", err.msg);
        goto done;
    }
    m->cfg.n_vocab = (int)as_tokenizer_vocab_size(m->tok);
    rc = m->arch->load(m, &err);
    size_t problems = 0;
    for (const char *p = m->problems; p && *p; p = strchr(p, '\n') + 1, problems++)
        fprintf(out, "  MISSING OR WRONG  %.*s\n", (int)(strchr(p, '\n') - p), p);
    if (rc == AS_OK && !problems)
        rc = check_blocks(m, &err);
    if (rc)
        fprintf(out, "  stopped: %s\n", err.msg);
    char names[600];
    int n = unused_tensors(m, names, sizeof names);
    as_defang(names); /* names from the file */
    if (n)
        fprintf(out, "  warning: %d tensor%s the %s architecture does not use: %s\n", n, n == 1 ? "" : "s",
                m->arch->gguf_name, names);
    if (!problems && !rc && !n)
        fprintf(out, "  every tensor %s needs is here, and every tensor here is used\n", m->arch->gguf_name);
    else if (problems)
        fprintf(out, "  the model cannot run until the tensors marked above are right\n");
    if (problems) {
        rc = AS_ERR;
        as_error_set(&err, "%.*s", (int)(strchr(m->problems, '\n') - m->problems), m->problems);
    }
done:
    if (rc && why)
        as_error_set(why, "%s", err.msg[0] ? err.msg : "out of memory");
    m->gguf = NULL, m->path = NULL; /* the caller's */
    as_model_free(m);
    return rc ? AS_ERR : AS_OK;
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
