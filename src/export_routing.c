/* `export routing` and `export experts`: a routed MLP's layer. The
 * router's weights per token with the experts it chose, and each expert's
 * load; the tokens each expert takes most often. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_internal.h"

/* export routing|experts LAYER FILE [key=value ...]: the layer, its
 * chosen-experts hook and the op that chooses them (the routing hooks of
 * a layer come together), the format and options; a dense layer refused. */
static int routed_figure_args(cmd_ctx *c, const char *kind, int *layer, int *hi, const as_op **op, export_fig *fig)
{
    as_session *s = c->s;
    if (c->argc < 4)
        return as_error_set(c->err, "usage: export %s LAYER FILE.png|FILE.svg|FILE.pdf [key=value ...]", kind);
    if (as_export_parse_layer(s, c->argv[2], layer, c->err))
        return AS_ERR;
    *hi = as_program_hook_in(s->prog, AS_HK_EXPERT_INDICES, *layer, s->prog->out_stream);
    *op = *hi >= 0 ? as_program_producer(s->prog, *hi) : NULL;
    if (!*op)
        return as_error_set(c->err, "layer %d of %s has no experts (its MLP is dense)", *layer, s->model->cfg.name);
    return as_export_begin(fig, c, c->argv[3], 4, OPT_FIG);
}

/* A routed layer's figure over the context's n tokens, written with its
 * layer in the provenance ("routing layer 3"). */
static int finish_layer(export_fig *fig, export_draw draw, const void *data, int n, const char *kind, int layer)
{
    char what[64];
    as_export_meta(fig, "Layer", "%d", layer);
    snprintf(what, sizeof what, "%s layer %d", kind, layer);
    return as_export_write(fig, draw, data, 0, n, what);
}

/* export routing LAYER FILE: tokens × experts, the router's weights
 * (hook_expert_weights) with the k chosen (hook_expert_indices) dotted,
 * and under them a row of each expert's load (the share of the tokens
 * that chose it), on the same 0–1 scale. */
int as_export_routing(cmd_ctx *c)
{
    as_session *s = c->s;
    export_fig fig;
    int layer, hi;
    const as_op *op;
    if (routed_figure_args(c, "routing", &layer, &hi, &op, &fig))
        return AS_ERR;
    int hw = as_program_hook_in(s->prog, AS_HK_EXPERT_WEIGHTS, layer, s->prog->out_stream);
    int n = as_cmd_hook_positions(s, hi, c->err), nw = n < 0 ? -1 : as_cmd_hook_positions(s, hw, c->err);
    if (n < 0 || nw < 0)
        return AS_ERR;
    if (nw < n)
        n = nw;
    int E = op->n_expert, R = n + 1, ne, np;
    float *v = malloc((size_t)R * (size_t)E * sizeof *v);
    unsigned char *mk = calloc((size_t)R * (size_t)E, 1);
    char **rows = as_export_position_labels(s, 0, n, false), **cols = calloc((size_t)E, sizeof *cols);
    char **all_rows = rows ? realloc(rows, (size_t)R * sizeof *rows) : NULL;
    int rc = AS_ERR;
    if (all_rows)
        rows = all_rows, rows[n] = strdup("load");
    if (!v || !mk || !all_rows || !rows[n] || !cols) {
        as_error_set(c->err, "out of memory");
        goto out;
    }
    for (int e = 0; e < E; e++)
        if (!(cols[e] = malloc(16)) || snprintf(cols[e], 16, "%d", e) < 0) {
            as_error_set(c->err, "out of memory");
            goto out;
        }
    for (int p = 0; p < n; p++) {
        memcpy(v + (size_t)p * (size_t)E, as_capture_row(s->cap, hw, p), (size_t)E * sizeof *v);
        const float *ix = as_capture_row(s->cap, hi, p);
        for (int j = 0; j < op->k; j++)
            if ((int)ix[j] >= 0 && (int)ix[j] < E)
                mk[(size_t)p * (size_t)E + (size_t)ix[j]] = 1;
    }
    if (as_cmd_expert_load(s, layer, v + (size_t)n * (size_t)E, &ne, &np, c->err))
        goto out;
    as_fig_matrix mat = {v, NULL, mk, NULL};
    as_fig_heat h = {R, E, (const char *const *)rows, (const char *const *)cols, "token", "expert",
                     "router weight; load", 1, &mat, NULL, 1, 1, NULL, NULL, NULL, NULL, 0, 0, NULL};
    /* A few experts across the width would make cells the size of a
     * column's quarter: unless a height is given, the figure is as tall
     * as rows of about 13 pt need (the cells then fit the height). */
    if (fig.o.st.height_pt <= 0)
        fig.o.st.height_pt = fminf(2880, 170 + 13 * (float)R);
    as_export_title(&fig, "Layer %d routing: %d of %d experts per token", layer, op->k, E);
    as_export_note(&fig, "Cells: the router's weight of each expert for each token; dots: the %d it chose.", op->k);
    /* op is the choice (TOPK): a selection bias or group limit lets it pass over a larger weight */
    if (op->b || op->n_group > 1)
        as_export_note(&fig, "The choice is made on the weights%s%s, so a dot may sit on a darker cell than one "
                     "left out.", op->b ? " plus a per-expert selection bias (which balances the load)" : "",
                     op->n_group > 1 ? " within the best groups of experts" : "");
    char loads[512];
    size_t lo = 0;
    for (int e = 0; e < E && lo < sizeof loads - 16; e++)
        lo += (size_t)snprintf(loads + lo, sizeof loads - lo, "%s%d %.0f%%", e ? ", " : "", e,
                               100.0 * v[(size_t)n * (size_t)E + (size_t)e]);
    as_export_note(&fig, "Bottom row, load: the share of the %d tokens that chose each expert (%s).", n, loads);
    rc = finish_layer(&fig, EXPORT_HEATMAP, &h, n, "routing", layer);
out:
    as_export_free_labels(rows, rows && rows == all_rows ? R : n);
    as_export_free_labels(cols, E);
    free(v);
    free(mk);
    return rc;
}

/* export experts LAYER FILE: one column per routed expert, the tokens
 * it took most often over the context (hook_expert_indices), each with a
 * bar for its share of that expert's choices. */
#define EXPERT_FIG_ROWS 8
int as_export_experts(cmd_ctx *c)
{
    as_session *s = c->s;
    export_fig fig;
    int layer, hi;
    const as_op *op;
    if (routed_figure_args(c, "experts", &layer, &hi, &op, &fig))
        return AS_ERR;
    int n = as_cmd_hook_positions(s, hi, c->err);
    int hw = as_program_hook_in(s->prog, AS_HK_EXPERT_WEIGHTS, layer, s->prog->out_stream);
    if (n < 0)
        return AS_ERR;
    /* experts chosen from non-finite weights are no choice */
    if (hw >= 0 && as_capture_has(s->cap, hw) && s->cap->filled[hw] >= n &&
        as_cmd_check_finite(s, s->cap, hw, 0, n, "export experts: no figure", c->err))
        return AS_ERR;
    int E = op->n_expert, R = EXPERT_FIG_ROWS, rows = 0;
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    int *cnt = malloc((size_t)n * sizeof *cnt);
    as_fig_expert_col *cols = calloc((size_t)E, sizeof *cols);
    char **labels = calloc((size_t)E * (size_t)R, sizeof *labels), **titles = calloc((size_t)E, sizeof *titles);
    float *share = calloc((size_t)E * (size_t)R, sizeof *share), full = 0;
    int *counts = calloc((size_t)E * (size_t)R, sizeof *counts);
    int rc = AS_ERR;
    if (!ids || !cnt || !cols || !labels || !titles || !share || !counts) {
        as_error_set(c->err, "out of memory");
        goto out;
    }
    for (int e = 0; e < E; e++) {
        int chosen, nd = as_cmd_expert_tokens(s, hi, e, n, R, ids, cnt, &chosen);
        int shown = nd < R ? nd : R;
        for (int t = 0; t < shown; t++) {
            int32_t bi = ids[t];
            int bc = cnt[t];
            char piece[48];
            as_cmd_label(s, bi, 12, piece, sizeof piece);
            if (!(labels[e * R + t] = malloc(64))) {
                as_error_set(c->err, "out of memory");
                goto out;
            }
            snprintf(labels[e * R + t], 64, "%s", piece);
            counts[e * R + t] = bc;
            share[e * R + t] = (float)bc / (float)chosen;
            full = fmaxf(full, share[e * R + t]);
        }
        if (!(titles[e] = malloc(32))) {
            as_error_set(c->err, "out of memory");
            goto out;
        }
        snprintf(titles[e], 32, "%d: %.0f%%", e, n ? 100.0 * chosen / n : 0.0);
        cols[e] = (as_fig_expert_col){titles[e], shown, (const char *const *)labels + e * R, counts + e * R,
                                      share + e * R};
        rows = shown > rows ? shown : rows;
    }
    as_fig_experts ex = {E, rows > 0 ? rows : 1, full > 0 ? full : 1, cols};
    as_export_title(&fig, "Layer %d: the tokens each expert takes most often", layer);
    as_export_note(&fig, "Columns: the %d routed experts, each headed by its load (the share of the %d tokens that "
                 "chose it; %d chosen per token).", E, n, op->k);
    as_export_note(&fig, "Lines: a token and how many times the expert took it, the most frequent first (at most %d); "
                 "bars: that count's share of the expert's choices (a column's width is %.0f%%).", R, 100.0 * ex.full);
    rc = finish_layer(&fig, EXPORT_EXPERTS, &ex, n, "experts", layer);
out:
    if (labels)
        as_export_free_labels(labels, E * R);
    if (titles)
        as_export_free_labels(titles, E);
    free(cols);
    free(share);
    free(counts);
    free(ids);
    free(cnt);
    return rc;
}
