/* Routed MLPs as text and as a figure: `experts [LAYER]`, each expert's
 * load (the share of the context's tokens whose router chose it) and the
 * tokens it took most often (and a shared expert's gate, where the layer
 * has one); `export load FILE`, the loads of every layer
 * and expert as a heatmap. Both read the captured hook_expert_indices and
 * ask the program which layers route (no architecture here). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"

/* How many tokens each expert's list shows. */
#define EXPERT_TOP 4

/* The largest expert count over the routed layers; 0: none route. */
static int max_experts(const as_session *s)
{
    int most = 0;
    for (int l = 0; l < s->model->cfg.n_layer; l++) {
        int h = as_program_hook_in(s->prog, AS_HK_EXPERT_INDICES, l, s->prog->out_stream);
        const as_op *op = h >= 0 ? as_program_producer(s->prog, h) : NULL;
        if (op && op->n_expert > most)
            most = op->n_expert;
    }
    return most;
}

/* One layer's table: expert, load, times chosen, mean gate, top tokens. */
static int layer_table(as_session *s, int layer, as_error *err)
{
    int h = as_program_hook_in(s->prog, AS_HK_EXPERT_INDICES, layer, s->prog->out_stream);
    int hg = as_program_hook_in(s->prog, AS_HK_EXPERT_GATES, layer, s->prog->out_stream);
    const as_op *op = as_program_producer(s->prog, h);
    float *load = malloc((size_t)op->n_expert * sizeof *load);
    int32_t *ids = malloc((size_t)s->cap->n_ctx * sizeof *ids);
    int *cnt = malloc((size_t)s->cap->n_ctx * sizeof *cnt);
    int E, n, rc = AS_ERR;
    if (!load || !ids || !cnt) {
        as_error_set(err, "out of memory");
        goto out;
    }
    if (as_cmd_expert_load(s, layer, load, &E, &n, err))
        goto out;
    bool gates = hg >= 0 && as_capture_has(s->cap, hg) && s->cap->filled[hg] >= n;
    fprintf(s->out, "layer %d: %d experts, %d chosen per token, over %d tokens\n", layer, E, op->k, n);
    fprintf(s->out, "  %6s %6s %6s %6s  %s\n", "expert", "load", "chosen", "gate", "tokens taken most often");
    for (int e = 0; e < E; e++) {
        double gsum = 0;
        for (int p = 0; gates && p < n; p++)
            for (int j = 0; j < op->k; j++)
                if ((int)as_capture_row(s->cap, h, p)[j] == e)
                    gsum += as_capture_row(s->cap, hg, p)[j];
        int nd = as_cmd_expert_tokens(s, h, e, n, EXPERT_TOP, ids, cnt, NULL);
        int chosen = (int)lroundf(load[e] * (float)n);
        char gate[16] = "-";
        if (gates && chosen > 0)
            snprintf(gate, sizeof gate, "%.3f", gsum / chosen);
        fprintf(s->out, "  %6d %5.1f%% %6d %6s ", e, 100.0 * load[e], chosen, gate);
        for (int t = 0; t < EXPERT_TOP && t < nd; t++) {
            char piece[48];
            as_cmd_label(s, ids[t], 12, piece, sizeof piece);
            fprintf(s->out, " %s×%d", piece, cnt[t]);
        }
        fputc('\n', s->out);
    }
    /* a shared expert every token uses: its gate's mean and range */
    int hs = as_program_hook_in(s->prog, AS_HK_SHARED_GATE, layer, s->prog->out_stream);
    if (hs >= 0 && as_capture_has(s->cap, hs) && s->cap->filled[hs] >= n) {
        double sum = 0, lo = INFINITY, hi = -INFINITY;
        for (int p = 0; p < n; p++) {
            double g = as_capture_row(s->cap, hs, p)[0];
            sum += g;
            lo = g < lo ? g : lo;
            hi = g > hi ? g : hi;
        }
        fprintf(s->out, "  shared expert: every token, gate mean %.3f (%.3f to %.3f)\n", sum / n, lo, hi);
    }
    rc = AS_OK;
out:
    free(load);
    free(ids);
    free(cnt);
    return rc;
}

int as_cmd_experts(cmd_ctx *c)
{
    as_session *s = c->s;
    if (c->argc > 2)
        return as_error_set(c->err, "usage: experts [LAYER]");
    if (max_experts(s) == 0)
        return as_error_set(c->err, "%s has no routed MLPs (no layer has experts)", s->model->cfg.name);
    if (as_cmd_require_tokens(s, c->err))
        return AS_ERR;
    if (c->argc == 2) {
        long l;
        if (as_cmd_parse_long(c->argv[1], 0, s->model->cfg.n_layer - 1, "the layer", &l, c->err))
            return AS_ERR;
        if (as_program_hook_in(s->prog, AS_HK_EXPERT_INDICES, (int)l, s->prog->out_stream) < 0)
            return as_error_set(c->err, "layer %ld of %s has no experts (its MLP is dense)", l, s->model->cfg.name);
        return layer_table(s, (int)l, c->err);
    }
    for (int l = 0; l < s->model->cfg.n_layer; l++)
        if (as_program_hook_in(s->prog, AS_HK_EXPERT_INDICES, l, s->prog->out_stream) >= 0 &&
            layer_table(s, l, c->err))
            return AS_ERR;
    return AS_OK;
}

/* export load FILE: layers × experts, each cell the share of the
 * context's tokens routed to that expert (a dense layer's row blank). */
int as_cmd_export_load(cmd_ctx *c)
{
    as_session *s = c->s;
    if (c->argc < 3)
        return as_error_set(c->err, "usage: export load FILE.png|FILE.svg|FILE.pdf [key=value ...]");
    int E = max_experts(s), L = s->model->cfg.n_layer;
    if (E == 0)
        return as_error_set(c->err, "%s has no routed MLPs (no layer has experts)", s->model->cfg.name);
    if (as_cmd_require_tokens(s, c->err))
        return AS_ERR;
    float *v = calloc((size_t)L * (size_t)E, sizeof *v);
    unsigned char *dense = calloc((size_t)L * (size_t)E, 1);
    if (!v || !dense) {
        free(v);
        free(dense);
        return as_error_set(c->err, "out of memory");
    }
    int n = 0;
    for (int l = 0; l < L; l++) {
        float *r = v + (size_t)l * (size_t)E;
        int ne, np;
        if (as_program_hook_in(s->prog, AS_HK_EXPERT_INDICES, l, s->prog->out_stream) < 0) {
            memset(dense + (size_t)l * (size_t)E, 1, (size_t)E); /* grey, named in the legend */
            continue;
        }
        if (as_cmd_expert_load(s, l, r, &ne, &np, c->err)) {
            free(v);
            free(dense);
            return AS_ERR;
        }
        n = np;
    }
    char note[96];
    snprintf(note, sizeof note, "share of %d tokens routed to each expert", n);
    const char *notes[] = {note};
    as_table_fig t = {.v = v, .rows = L, .cols = E, .n_mats = 1, .col_axis = "expert", .title = "Expert load",
                      .cbar_label = "load (share of tokens)", .what = "expert load", .notes = notes, .n_notes = 1,
                      .masked = dense, .masked_label = "dense layer"};
    int rc = as_cmd_export_table(c, c->argv[2], 3, &t);
    free(v);
    free(dense);
    return rc;
}
