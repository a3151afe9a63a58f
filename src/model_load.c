/* A model from a GGUF file or a view of one (Hugging Face directories,
 * llama2.c checkpoints): the architecture's keys, tokenizer and tensors,
 * then the checks and warnings every load makes; and `--check`'s survey. */
#include "attnscope/model.h"

#include "attnscope/file.h"
#include "attnscope/kernels.h"
#include "attnscope/quant.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
static int scan_nonfinite(as_model *m, as_error *err)
{
    const as_gguf *g = m->gguf;
    size_t used = strlen(m->warnings), first = used; /* after the warnings before it */
    int found = 0;
    float *row = NULL;
    size_t row_cap = 0;
    if (g->zero_weights)
        return AS_OK;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        char where[160] = "";
        /* Ctrl-C: a large file's scan takes seconds; the load stops */
        if (as_file_interrupted()) {
            free(row);
            return as_error_set(err, "%s: interrupted while checking the weights for NaN or Inf (at tensor %llu of "
                                "%llu): not loaded", g->path, (unsigned long long)i, (unsigned long long)g->n_tensors);
        }
        if (!as_ggml_type_supported(t->type) || t->ne[0] == 0)
            continue;
        if (t->ne[0] > row_cap) {
            free(row);
            row_cap = t->ne[0];
            row = malloc(row_cap * sizeof *row);
            if (!row)
                return AS_OK; /* the scan is a courtesy: the load goes on */
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
    return AS_OK;
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
    if (scan_nonfinite(m, err))
        goto fail;
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
