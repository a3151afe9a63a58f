/* hf: Hugging Face model directories as GGUF views (see hf.h). This file
 * opens the directory — config.json, its family, the weights
 * (safetensors.c), tokenizer.json (hf_tokenizer.c) — and checks that every
 * tensor found a place; hf_view.c builds the view, src/arch_hf.c says, per
 * model_type, which keys and tensors become which of llama.cpp's. */
#include "hf_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnscope/file.h"
#include "attnscope/tokenizer.h"

/* ---------------------------------------------------------------- memory the view owns */

static void hf_release(void *owner)
{
    as_hf *h = owner;
    if (!h)
        return;
    for (size_t i = 0; i < h->n_files; i++) {
        if (h->files[i].map)
            munmap(h->files[i].map, h->files[i].size);
        free(h->files[i].path);
    }
    for (size_t i = 0; i < h->n; i++)
        free(h->t[i].name);
    for (size_t i = 0; i < h->n_bufs; i++)
        free(h->bufs[i]);
    free(h->files);
    free(h->t);
    free(h->bufs);
    json_decref(h->config);
    json_decref(h->root);
    json_decref(h->names);
    free(h->dir);
    free(h);
}

/* ---------------------------------------------------------------- the directory */

bool as_hf_is_dir(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A tensor's name with each run of digits as N (h.N.attn.bias), for the note. */
static void name_pattern(const char *name, char *out, size_t cap)
{
    size_t o = 0;
    for (const char *c = name; *c && o + 2 < cap; c++) {
        if (*c >= '0' && *c <= '9') {
            out[o++] = 'N';
            while (c[1] >= '0' && c[1] <= '9')
                c++;
        } else {
            out[o++] = *c;
        }
    }
    out[o] = 0;
}

/* Tensors no rule took: refused, unless the family knows them (heads it
 * does not run) or they are known buffers; those are named in the view's
 * note, each pattern once with its count and any dtype that is not F32. */
static int check_unused(as_hf *h, const as_hf_family *fam, as_error *err)
{
    char pats[24][96], dtypes[24][12];
    int counts[24], n_pat = 0, more = 0;
    for (size_t i = 0; i < h->n; i++) {
        const as_hf_tensor *t = &h->t[i];
        if (t->used)
            continue;
        if (!(fam->ignored && fam->ignored(t->name)) && !as_hf_known_buffer(t->name))
            return as_error_set(err, "%s: tensor '%s' is not one attnscope maps for model_type %s", t->file, t->name,
                                h->model_type);
        char pat[96];
        name_pattern(t->name, pat, sizeof pat);
        int k = 0;
        while (k < n_pat && strcmp(pats[k], pat))
            k++;
        if (k == n_pat && n_pat == 24) {
            more++;
            continue;
        }
        if (k == n_pat) {
            snprintf(pats[k], sizeof pats[k], "%s", pat);
            snprintf(dtypes[k], sizeof dtypes[k], "%s", strcmp(t->dtype, "F32") ? t->dtype : "");
            counts[k] = 0, n_pat++;
        }
        counts[k]++;
    }
    size_t o = 0;
    if (n_pat)
        o = (size_t)snprintf(h->note, sizeof h->note, "skipped %s buffers and heads attnscope does not run: ",
                             h->model_type);
    for (int k = 0; k < n_pat && o < sizeof h->note; k++) {
        char extra[48] = "";
        if (dtypes[k][0] && counts[k] > 1)
            snprintf(extra, sizeof extra, " (%.10s, %dx)", dtypes[k], counts[k]);
        else if (dtypes[k][0])
            snprintf(extra, sizeof extra, " (%.10s)", dtypes[k]);
        else if (counts[k] > 1)
            snprintf(extra, sizeof extra, " (%dx)", counts[k]);
        o += (size_t)snprintf(h->note + o, sizeof h->note - o, "%s%s%s", k ? ", " : "", pats[k], extra);
    }
    if (more && o < sizeof h->note)
        o += (size_t)snprintf(h->note + o, sizeof h->note - o, " and %d more", more);
    if (h->n_legacy && o < sizeof h->note)
        snprintf(h->note + o, sizeof h->note - o, "%s%d LayerNorm tensors read under their legacy names as "
                 "transformers renames them (gamma -> weight, beta -> bias; e.g. %s)", o ? "; " : "", h->n_legacy,
                 h->legacy_example);
    return AS_OK;
}

/* A multimodal config.json (model_type gemma3): the view is of its
 * language model, read from text_config (messages name it) and from the
 * checkpoint's prefixed names; the other towers are left unread. */
static int unwrap(as_hf *h, as_error *err)
{
    const as_hf_wrapper *w = as_hf_wrapper_find(h->model_type);
    if (!w)
        return AS_OK;
    json_t *text = json_object_get(h->config, "text_config");
    if (!json_is_object(text))
        return as_error_set(err, "%s: model_type '%s' needs a text_config object (its language model's settings)",
                            h->config_path, h->model_type);
    json_t *tt = json_object_get(text, "model_type");
    if (tt && !(json_is_string(tt) && !strcmp(json_string_value(tt), w->text_type)))
        return as_error_set(err, "%s: text_config.model_type '%.40s' is not read for model_type %s (%s)",
                            h->config_path, json_is_string(tt) ? json_string_value(tt) : "?", h->model_type,
                            w->text_type);
    h->root = h->config;
    h->config = json_incref(text);
    h->model_type = w->text_type;
    h->alt_prefix = w->prefix;
    h->model_prefix = w->model_prefix;
    h->g->view_of = w->view_of;
    size_t n = strlen(h->config_path);
    snprintf(h->config_path + n, sizeof h->config_path - n, ", text_config");
    return AS_OK;
}

static int open_dir(as_hf *h, as_error *err)
{
    snprintf(h->config_path, sizeof h->config_path, "%s/config.json", h->dir);
    if (access(h->config_path, F_OK) != 0)
        return as_error_set(err, "%s: not a Hugging Face model directory: config.json is missing", h->dir);
    if (!(h->config = as_hf_load_json(h, h->config_path, err)))
        return AS_ERR;
    json_t *mt = json_object_get(h->config, "model_type");
    if (!json_is_string(mt))
        return as_error_set(err, "%s: key 'model_type' is missing (attnscope reads %s)", h->config_path,
                            as_hf_family_names());
    h->model_type = json_string_value(mt);
    if (unwrap(h, err))
        return AS_ERR;
    const as_hf_family *fam = as_hf_family_find(h->model_type);
    if (!fam)
        return as_error_set(err, "%s: model_type '%.40s' is not one attnscope reads (%s)", h->config_path,
                            h->model_type, as_hf_family_names());
    const char *base = strrchr(h->dir, '/');
    base = base && base[1] ? base + 1 : h->dir;
    if (as_hf_read_weights(h, err))
        return AS_ERR;
    /* a multimodal model's other towers: taken as read, so no rule needs them */
    const as_hf_wrapper *w = h->root ? as_hf_wrapper_find(json_string_value(json_object_get(h->root, "model_type")))
                                     : NULL;
    for (size_t i = 0; w && i < h->n; i++)
        h->t[i].used |= w->other(h->t[i].name);
    if (!as_hf_kv_str(h, "general.architecture", fam->arch) || !as_hf_kv_str(h, "general.name", base))
        return as_error_set(err, "%s: out of memory", h->dir);
    if (fam->no_tokenizer)
        h->g->view_of = "Hugging Face directory: config.json, safetensors, preprocessor_config.json";
    if (fam->map(h, err) || check_unused(h, fam, err) || (!fam->no_tokenizer && as_hf_read_tokenizer(h, err)))
        return AS_ERR;
    for (size_t i = 0; i < h->n_files; i++)
        h->g->size += h->files[i].size;
    h->g->view_note = h->note;
    return AS_OK;
}

int as_hf_open(as_gguf **out, const char *dir, as_error *err)
{
    *out = NULL;
    as_gguf *g = calloc(1, sizeof *g);
    as_hf *h = calloc(1, sizeof *h);
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    if (!g || !h || !(h->dir = strndup(dir, len)) || !(g->path = strdup(h->dir)) || !(h->names = json_object())) {
        free(g ? g->path : NULL);
        free(g);
        hf_release(h);
        return as_error_set(err, "%s: out of memory", dir);
    }
    g->version = 0;
    g->alignment = 1;
    g->view_of = "Hugging Face directory: config.json, safetensors, tokenizer.json";
    g->owner = h;
    g->release = hf_release;
    h->g = g;
    if (open_dir(h, err)) {
        as_gguf_close(g);
        return AS_ERR;
    }
    *out = g;
    return AS_OK;
}

int as_hf_load(as_model **out, const char *dir, as_error *err)
{
    as_gguf *g;
    *out = NULL;
    if (as_hf_open(&g, dir, err))
        return AS_ERR;
    if (as_model_from_gguf(out, g, err)) {
        as_gguf_close(g);
        return AS_ERR;
    }
    return AS_OK;
}

int as_hf_open_any(as_gguf **out, const char *path, as_error *err)
{
    return as_hf_is_dir(path) ? as_hf_open(out, path, err) : as_gguf_open(out, path, err);
}

int as_hf_to_gguf(const char *dir, const char *gguf_path, char *note, size_t note_cap, as_error *err)
{
    as_gguf *g;
    if (note && note_cap)
        note[0] = 0;
    if (as_hf_open(&g, dir, err))
        return AS_ERR;
    if (note && note_cap)
        snprintf(note, note_cap, "%s", ((const as_hf *)g->owner)->llama_note);
    as_gguf_writer *w = as_gguf_writer_new(3);
    if (!w) {
        as_gguf_close(g);
        return as_error_set(err, "%s: out of memory", gguf_path);
    }
    for (uint64_t i = 0; i < g->n_kv; i++)
        as_gguf_writer_copy_kv(w, &g->kvs[i]);
    /* llama.cpp's file type: all F32, mostly F16 or mostly BF16, by the largest tensor's type */
    uint64_t big = 0;
    as_ggml_type type = AS_GGML_F32;
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (g->tensors[i].n_elements > big)
            big = g->tensors[i].n_elements, type = g->tensors[i].type;
    as_gguf_writer_set_u32(w, "general.file_type", type == AS_GGML_F16 ? 1 : type == AS_GGML_BF16 ? 32 : 0);
    int rc = AS_OK;
    for (uint64_t i = 0; i < g->n_tensors && rc == AS_OK; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        /* vectors (norms, biases) as F32, as llama.cpp's converter writes them: its CPU kernels add and
         * multiply no F32 row by a BF16 one (a BF16 checkpoint's norms would stop llama.cpp) */
        if (t->n_dims != 1 || t->type == AS_GGML_F32) {
            rc = as_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, err);
            continue;
        }
        float *f = malloc((size_t)t->n_elements * sizeof *f);
        rc = !f ? as_error_set(err, "%s: out of memory", gguf_path) : as_tensor_to_f32(t, f, err);
        if (rc == AS_OK)
            rc = as_gguf_writer_add_tensor(w, t->name, AS_GGML_F32, 1, t->ne, f, err);
        free(f);
    }
    if (rc == AS_OK)
        rc = as_gguf_writer_write(w, gguf_path, err);
    as_gguf_writer_free(w);
    as_gguf_close(g);
    return rc;
}
