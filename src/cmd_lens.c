/* The logit lens: `lens [POS]` (each layer's residual stream read through
 * the final norm and unembedding at one position) and `lens table` (the
 * top token per layer and position), optionally as .npy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/instruments.h"
#include "session_internal.h"

static int lens_resid(as_session *s, int layer, int pos, const float **out, as_error *err)
{
    int h = layer < 0 ? as_program_hook(s->prog, AS_HK_RESID_PRE, 0)
                      : as_program_hook(s->prog, s->prog->lens_kind, layer);
    int n = as_cmd_hook_positions(s, h, err);
    if (n < 0)
        return AS_ERR;
    if (pos >= n)
        return as_error_set(err, "%s has no value at position %d yet", s->prog->hooks[h].name, pos);
    /* a non-finite residual ranks nothing: said, not a made-up top token */
    if (as_cmd_check_finite(s, s->cap, h, pos, pos + 1, "lens: no ranking", err))
        return AS_ERR;
    *out = as_capture_row(s->cap, h, pos);
    return AS_OK;
}

static int lens_at(cmd_ctx *c, int pos, const char *npy_path)
{
    as_session *s = c->s;
    int V = s->model->cfg.n_vocab, top[3], L = s->model->cfg.n_layer;
    float *logits = malloc((size_t)V * sizeof *logits), *probs = malloc((size_t)V * sizeof *probs);
    float *all = npy_path ? malloc((size_t)(L + 1) * (size_t)V * sizeof *all) : NULL;
    int rc = logits && probs && (all || !npy_path) ? AS_OK : as_error_set(c->err, "out of memory");
    const float *last;
    if (rc == AS_OK)
        rc = lens_resid(s, s->model->cfg.n_layer - 1, pos, &last, c->err);
    int32_t final = -1;
    if (rc == AS_OK) {
        as_lens_logits(s->prog, last, logits);
        as_top_indices(logits, V, 1, top);
        final = top[0];
        char piece[64];
        as_cmd_label(s, final, 0, piece, sizeof piece);
        fprintf(s->out, "logit lens at position %d; the model's final top token: %s (id %d)\n", pos, piece, final);
        fprintf(s->out, "layer\ttop-1\tprob\ttop-2\tprob\ttop-3\tprob\tfinal rank\tfinal prob\n");
    }
    for (int l = -1; rc == AS_OK && l < s->model->cfg.n_layer; l++) {
        const float *resid;
        if ((rc = lens_resid(s, l, pos, &resid, c->err)))
            break;
        as_lens_logits(s->prog, resid, logits);
        if (all)
            memcpy(all + (size_t)(l + 1) * (size_t)V, logits, (size_t)V * sizeof *logits);
        as_probs(logits, V, probs);
        as_top_indices(logits, V, 3, top);
        int rank = 1;
        for (int v = 0; v < V; v++)
            rank += logits[v] > logits[final];
        fprintf(s->out, l < 0 ? "embed" : "%d", l);
        for (int k = 0; k < 3; k++) {
            char piece[64];
            as_cmd_label(s, top[k], 0, piece, sizeof piece);
            fprintf(s->out, "\t%s\t%.4f", piece, probs[top[k]]);
        }
        fprintf(s->out, "\t%d\t%.4f\n", rank, probs[final]);
    }
    if (rc == AS_OK && all) {
        size_t shape[2] = {(size_t)L + 1, (size_t)V};
        char what[96];
        snprintf(what, sizeof what, "lens logits at position %d (row 0: embeddings, row l+1: after layer l)", pos);
        rc = as_cmd_write_npy(s, npy_path, AS_NPY_F32, all, shape, 2, what, c->err);
    }
    free(all);
    free(logits);
    free(probs);
    return rc;
}

#define LENS_CHUNK 64 /* positions per matrix product in `lens table` */

int as_cmd_lens_grid(as_session *s, int32_t **ids_out, float **probs_out, int *rows, int *n_out, as_error *err)
{
    int V = s->model->cfg.n_vocab, n = s->it->out->n_done, L = s->model->cfg.n_layer;
    float *logits = malloc((size_t)LENS_CHUNK * (size_t)V * sizeof *logits);
    int32_t *ids = malloc((size_t)(L + 1) * (size_t)(n > 0 ? n : 1) * sizeof *ids);
    float *probs = malloc((size_t)(L + 1) * (size_t)(n > 0 ? n : 1) * sizeof *probs);
    if (!logits || !ids || !probs) {
        free(logits), free(ids), free(probs);
        return as_error_set(err, "out of memory");
    }
    /* Each layer's positions, LENS_CHUNK at a time: one pass over the
     * unembedding per chunk rather than per position. */
    int rc = AS_OK;
    for (int l = -1; rc == AS_OK && l < L; l++)
        for (int p0 = 0; rc == AS_OK && p0 < n; p0 += LENS_CHUNK) {
            int m = n - p0 < LENS_CHUNK ? n - p0 : LENS_CHUNK;
            const float *rows_in[LENS_CHUNK];
            for (int i = 0; rc == AS_OK && i < m; i++)
                rc = lens_resid(s, l, p0 + i, &rows_in[i], err);
            if (rc == AS_OK && as_lens_logits_rows(s->prog, rows_in, m, logits))
                rc = as_error_set(err, "out of memory");
            for (int i = 0; rc == AS_OK && i < m; i++) {
                const float *lg = logits + (size_t)i * V;
                int top;
                as_top_indices(lg, V, 1, &top);
                double z = 0;
                for (int v = 0; v < V; v++)
                    z += exp((double)lg[v] - lg[top]);
                size_t at = (size_t)(l + 1) * (size_t)n + (size_t)(p0 + i);
                ids[at] = top;
                probs[at] = (float)(1.0 / z);
            }
        }
    free(logits);
    if (rc != AS_OK) {
        free(ids), free(probs);
        return AS_ERR;
    }
    *ids_out = ids, *probs_out = probs, *rows = L + 1, *n_out = n;
    return AS_OK;
}

static int lens_table(cmd_ctx *c, const char *npy_path)
{
    as_session *s = c->s;
    int L = s->model->cfg.n_layer, n, R;
    int32_t *ids;
    float *probs;
    if (as_cmd_lens_grid(s, &ids, &probs, &R, &n, c->err))
        return AS_ERR;
    int rc = AS_OK;
    if (rc == AS_OK) {
        fprintf(s->out, "top token per layer (rows) and position (columns)\nlayer");
        for (int p = 0; p < n; p++)
            fprintf(s->out, "\t%d", p);
        fprintf(s->out, "\n");
        for (int l = -1; l < L; l++) {
            fprintf(s->out, l < 0 ? "embed" : "%d", l);
            for (int p = 0; p < n; p++) {
                char piece[64];
                as_cmd_label(s, ids[(size_t)(l + 1) * (size_t)n + (size_t)p], 8, piece, sizeof piece);
                fprintf(s->out, "\t%s", piece);
            }
            fprintf(s->out, "\n");
        }
    }
    if (rc == AS_OK && npy_path) {
        size_t shape[2] = {(size_t)L + 1, (size_t)n};
        rc = as_cmd_write_npy(s, npy_path, AS_NPY_I32, ids, shape, 2,
                              "top token id per layer (row 0: embeddings) and position", c->err);
    }
    free(ids);
    free(probs);
    return rc;
}

int as_cmd_lens(cmd_ctx *c)
{
    if (as_cmd_lens_applies(c->s, false, c->err) || as_cmd_require_tokens(c->s, c->err))
        return AS_ERR;
    as_out_arg o = as_cmd_output_arg(c, 1);
    if (o.argc > 2 || (o.path && (!o.npy || o.at + 1 < c->argc)))
        return as_error_set(c->err, "usage: lens [POS] [FILE.npy]  or  lens table [FILE.npy]");
    if (o.argc > 1 && !strcmp(c->argv[1], "table"))
        return lens_table(c, o.path);
    int pos = c->s->prog->logits_pos >= 0 ? c->s->prog->logits_pos : c->s->it->out->n_done - 1;
    if (o.argc > 1 && as_cmd_parse_pos(c->s, c->argv[1], &pos, c->err))
        return AS_ERR;
    if (pos < 0)
        return as_error_set(c->err, "no position is computed yet (`finish` runs the pass)");
    return lens_at(c, pos, o.path);
}

int as_export_lens(cmd_ctx *c)
{
    as_session *s = c->s;
    const char *usage = "usage: export lens FILE.png|FILE.svg|FILE.pdf [key=value ...]  (`lens table FILE.npy` "
                        "writes the array)";
    const char *kind = c->argc >= 3 ? as_cmd_output_kind(c->argv[2]) : NULL;
    if (!kind || !strcmp(kind, "npy"))
        return as_error_set(c->err, "%s", usage);
    if (as_cmd_lens_applies(s, false, c->err) || as_cmd_require_tokens(s, c->err))
        return AS_ERR;
    if (s->it->out->n_done < s->it->out->n_tokens)
        return as_error_set(c->err, "the pass has not reached every position yet (`finish` runs it)");
    int32_t *ids;
    float *probs;
    int R, n;
    if (as_cmd_lens_grid(s, &ids, &probs, &R, &n, c->err))
        return AS_ERR;
    char **text = calloc((size_t)R * (size_t)n, sizeof *text), **rows = calloc((size_t)R, sizeof *rows);
    int rc = AS_ERR;
    if (!text || !rows)
        goto oom;
    for (int i = 0; i < R * n; i++) {
        char b[128];
        as_cmd_token_label(s, ids[i], b, sizeof b);
        if (!(text[i] = strdup(b)))
            goto oom;
    }
    for (int r = 0; r < R; r++) {
        char b[16];
        snprintf(b, sizeof b, r ? "%d" : "embed", r - 1);
        if (!(rows[r] = strdup(b)))
            goto oom;
    }
    const char *notes[1] = {"each cell: the final norm and the unembedding applied to the residual stream after the "
                            "row's layer at the column's position; the top token written, its probability the colour"};
    as_table_fig t = {.v = probs, .rows = R, .cols = n, .n_mats = 1, .by_position = true,
                      .title = "Logit lens: the top token after each layer", .cbar_label = "probability of the top token",
                      .what = "logit lens", .notes = notes, .n_notes = 1, .row_labels = (const char *const *)rows,
                      .row_axis = "layer", .cell_text = (const char *const *)text};
    rc = as_cmd_export_table(c, c->argv[2], 3, &t);
    goto out;
oom:
    as_error_set(c->err, "out of memory");
out:
    for (int i = 0; text && i < R * n; i++)
        free(text[i]);
    for (int r = 0; rows && r < R; r++)
        free(rows[r]);
    free(text), free(rows), free(ids), free(probs);
    return rc;
}
