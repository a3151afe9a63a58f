/* Commands for the instruments: logit lens, ablation and compare,
 * activation patching, direct logit attribution, head detectors, watches,
 * weight statistics and model diffs. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/instruments.h"
#include "attnscope/kernels.h"
#include "attnscope/npy.h"
#include "session_internal.h"

/* ---- logit lens ---- */

static int lens_resid(as_session *s, int layer, int pos, const float **out, as_error *err)
{
    int h = layer < 0 ? as_program_hook(s->prog, AS_HK_RESID_PRE, 0)
                      : as_program_hook(s->prog, AS_HK_RESID_POST, layer);
    int n = as_cmd_hook_positions(s, h, err);
    if (n < 0)
        return AS_ERR;
    if (pos >= n)
        return as_error_set(err, "%s has no value at position %d yet", s->prog->hooks[h].name, pos);
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
        as_cmd_piece(s, final, piece, sizeof piece);
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
            as_cmd_piece(s, top[k], piece, sizeof piece);
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

static int lens_table(cmd_ctx *c, const char *npy_path)
{
    as_session *s = c->s;
    int V = s->model->cfg.n_vocab, n = s->it->out->n_done, L = s->model->cfg.n_layer;
    float *logits = malloc((size_t)LENS_CHUNK * (size_t)V * sizeof *logits);
    int32_t *ids = malloc((size_t)(L + 1) * (size_t)(n > 0 ? n : 1) * sizeof *ids);
    if (!logits || !ids) {
        free(logits);
        free(ids);
        return as_error_set(c->err, "out of memory");
    }
    /* Each layer's positions, LENS_CHUNK at a time: one pass over the
     * unembedding per chunk rather than per position. */
    int rc = AS_OK;
    for (int l = -1; rc == AS_OK && l < L; l++)
        for (int p0 = 0; rc == AS_OK && p0 < n; p0 += LENS_CHUNK) {
            int m = n - p0 < LENS_CHUNK ? n - p0 : LENS_CHUNK;
            const float *rows[LENS_CHUNK];
            for (int i = 0; rc == AS_OK && i < m; i++)
                rc = lens_resid(s, l, p0 + i, &rows[i], c->err);
            if (rc == AS_OK && as_lens_logits_rows(s->prog, rows, m, logits))
                rc = as_error_set(c->err, "out of memory");
            for (int i = 0; rc == AS_OK && i < m; i++) {
                int top;
                as_top_indices(logits + (size_t)i * V, V, 1, &top);
                ids[(size_t)(l + 1) * (size_t)n + (size_t)(p0 + i)] = top;
            }
        }
    if (rc == AS_OK) {
        fprintf(s->out, "top token per layer (rows) and position (columns)\nlayer");
        for (int p = 0; p < n; p++)
            fprintf(s->out, "\t%d", p);
        fprintf(s->out, "\n");
        for (int l = -1; l < L; l++) {
            fprintf(s->out, l < 0 ? "embed" : "%d", l);
            for (int p = 0; p < n; p++) {
                char piece[64];
                as_cmd_piece(s, ids[(size_t)(l + 1) * (size_t)n + (size_t)p], piece, 12);
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
    free(logits);
    return rc;
}

int as_cmd_lens(cmd_ctx *c)
{
    if (as_cmd_require_tokens(c->s, c->err))
        return AS_ERR;
    as_out_arg o = as_cmd_output_arg(c, 1);
    if (o.argc > 2 || (o.path && (!o.npy || o.at + 1 < c->argc)))
        return as_error_set(c->err, "usage: lens [POS] [FILE.npy]  or  lens table [FILE.npy]");
    if (o.argc > 1 && !strcmp(c->argv[1], "table"))
        return lens_table(c, o.path);
    int pos = c->s->it->out->n_done - 1;
    if (o.argc > 1 && as_cmd_parse_pos(c->s, c->argv[1], &pos, c->err))
        return AS_ERR;
    if (pos < 0)
        return as_error_set(c->err, "no position is computed yet (`finish` runs the pass)");
    return lens_at(c, pos, o.path);
}

/* ---- ablation, patching, compare ---- */

int as_cmd_ablate(cmd_ctx *c)
{
    as_session *s = c->s;
    const as_config *cfg = &s->model->cfg;
    long l, h;
    char label[96];
    if (c->argc == 3 && !strcmp(c->argv[1], "mlp")) {
        if (as_cmd_parse_long(c->argv[2], 0, cfg->n_layer - 1, "the layer", &l, c->err))
            return AS_ERR;
        snprintf(label, sizeof label, "ablate mlp %ld", l);
        if (as_cmd_add_rule(s, AS_RULE_ZERO, as_program_hook(s->prog, AS_HK_MLP_OUT, (int)l), -1, -1, NULL, false,
                            label, c->err))
            return AS_ERR;
    } else {
        char *dot = c->argc == 3 ? strchr(c->argv[1], '.') : NULL;
        if (!dot || (strcmp(c->argv[2], "zero") && strcmp(c->argv[2], "mean")))
            return as_error_set(c->err, "usage: ablate LAYER.HEAD zero|mean  or  ablate mlp LAYER");
        *dot = '\0';
        if (as_cmd_parse_long(c->argv[1], 0, cfg->n_layer - 1, "the layer", &l, c->err) ||
            as_cmd_parse_long(dot + 1, 0, cfg->n_head - 1, "the head", &h, c->err))
            return AS_ERR;
        int hz = as_program_hook(s->prog, AS_HK_Z, (int)l);
        bool mean = !strcmp(c->argv[2], "mean");
        snprintf(label, sizeof label, "ablate %ld.%ld %s", l, h, c->argv[2]);
        float *avg = NULL;
        if (mean) {
            /* The mean over the context's positions, as captured now (before any ablation of it). */
            int n = as_cmd_hook_positions(s, hz, c->err);
            if (n < 0)
                return as_error_prefix(c->err, "mean ablation needs the head's values (run the pass first)");
            int dh = cfg->d_head;
            avg = calloc((size_t)dh, sizeof *avg);
            for (int p = 0; avg && p < n; p++)
                for (int i = 0; i < dh; i++)
                    avg[i] += as_capture_row(s->cap, hz, p)[h * dh + i] / (float)n;
        }
        int rc = as_cmd_add_rule(s, mean ? AS_RULE_SET : AS_RULE_ZERO, hz, (int)h, -1, avg, false, label, c->err);
        free(avg);
        if (rc)
            return AS_ERR;
    }
    fprintf(s->out, "%s: applies from the next pass (`compare` reruns with and without)\n", label);
    return AS_OK;
}

int as_cmd_unablate(cmd_ctx *c)
{
    int n = as_interp_clear_rules(c->s->it, false);
    fprintf(c->s->out, "removed %d ablation%s and patch%s (rerun with `compare` or `finish` after a new prompt)\n",
            n, n == 1 ? "" : "s", n == 1 ? "" : "es");
    return AS_OK;
}

int as_cmd_ablations(cmd_ctx *c) { return as_cmd_list_rules(c, false); }

static double kl_div(const float *p, const float *q, int n)
{
    double kl = 0;
    for (int i = 0; i < n; i++)
        if (p[i] > 0)
            kl += p[i] * (log(p[i]) - log(q[i] > 1e-30f ? q[i] : 1e-30f));
    return kl;
}

static void print_top(as_session *s, const char *title, const float *logits, const float *probs)
{
    int top[5];
    int m = as_top_indices(logits, s->model->cfg.n_vocab, 5, top);
    fprintf(s->out, "%s:", title);
    for (int k = 0; k < m; k++) {
        char piece[64];
        as_cmd_piece(s, top[k], piece, sizeof piece);
        fprintf(s->out, "  %s %.4f", piece, probs[top[k]]);
    }
    fprintf(s->out, "\n");
}

/* Clean run (rules off) against the run with rules; leaves the latter captured. */
static int compare_runs(as_session *s, as_error *err)
{
    int V = s->model->cfg.n_vocab;
    float *clean = malloc((size_t)V * sizeof *clean), *pc = malloc((size_t)V * sizeof *pc),
          *pa = malloc((size_t)V * sizeof *pa);
    int rc = clean && pc && pa ? AS_OK : as_error_set(err, "out of memory");
    if (rc == AS_OK)
        rc = as_cmd_rerun(s, true, err);
    const float *logits = rc == AS_OK ? as_cmd_final_logits(s, err) : NULL;
    if (logits) {
        memcpy(clean, logits, (size_t)V * sizeof *clean);
        rc = as_cmd_rerun(s, false, err);
        logits = rc == AS_OK ? as_cmd_final_logits(s, err) : NULL;
    }
    if (!logits) {
        rc = AS_ERR;
    } else {
        as_probs(clean, V, pc);
        as_probs(logits, V, pa);
        fprintf(s->out, "at position %d, with %d rule%s: KL(clean || changed) = %.6f nats\n", s->it->out->n_tokens - 1,
                s->it->n_rules, s->it->n_rules == 1 ? "" : "s", kl_div(pc, pa, V));
        print_top(s, "clean  ", clean, pc);
        print_top(s, "changed", logits, pa);
        if (s->has_metric) {
            double a = clean[s->metric[0]] - clean[s->metric[1]], b = logits[s->metric[0]] - logits[s->metric[1]];
            fprintf(s->out, "logit difference (metric): clean %.4f, changed %.4f, change %+.4f\n", a, b, b - a);
        }
    }
    free(clean);
    free(pc);
    free(pa);
    return rc;
}

int as_cmd_compare(cmd_ctx *c)
{
    if (as_cmd_require_tokens(c->s, c->err))
        return AS_ERR;
    if (c->argc == 3) {
        if (as_cmd_parse_token(c->s, c->argv[1], &c->s->metric[0], c->err) ||
            as_cmd_parse_token(c->s, c->argv[2], &c->s->metric[1], c->err))
            return AS_ERR;
        c->s->has_metric = true;
    }
    return compare_runs(c->s, c->err);
}

int as_cmd_metric(cmd_ctx *c)
{
    if (c->argc != 3)
        return as_error_set(c->err, "usage: metric TOKEN_A TOKEN_B (ids or vocabulary pieces)");
    if (as_cmd_parse_token(c->s, c->argv[1], &c->s->metric[0], c->err) ||
        as_cmd_parse_token(c->s, c->argv[2], &c->s->metric[1], c->err))
        return AS_ERR;
    c->s->has_metric = true;
    char a[64], b[64];
    as_cmd_piece(c->s, c->s->metric[0], a, sizeof a);
    as_cmd_piece(c->s, c->s->metric[1], b, sizeof b);
    fprintf(c->s->out, "metric: logit[%s] - logit[%s] at the last position\n", a, b);
    return AS_OK;
}

/* Runs OTHER (same token count as the context) and returns its capture. */
static int run_other(as_session *s, const char *text, as_side_run *r, as_error *err)
{
    memset(r, 0, sizeof *r);
    int32_t *ids = NULL;
    size_t n = 0;
    if (as_tokenizer_encode(s->model->tok, text, strlen(text), as_tokenizer_add_bos(s->model->tok), &ids, &n, err))
        return AS_ERR;
    int rc = AS_OK;
    if ((int)n != s->it->out->n_tokens)
        rc = as_error_set(err, "the other prompt is %zu tokens but the context is %d; patching needs the same count",
                          n, s->it->out->n_tokens);
    else
        rc = as_cmd_side_run_new(s, ids, (int)n, s->capture_mb << 20, r, err);
    free(ids);
    return rc;
}

static int patch_values(as_session *s, const as_side_run *r, int hook, float **vals, as_error *err)
{
    const as_hook *h = &s->prog->hooks[hook];
    if (h->is_attn)
        return as_error_set(err, "%s: patching attention patterns is not supported (patch hook_z or the residual stream)",
                            h->name);
    if (!as_capture_has(r->cap, hook))
        return as_error_set(err, "%s is not captured (raise --capture-mb)", h->name);
    *vals = calloc((size_t)s->it->n_ctx * (size_t)h->width, sizeof **vals);
    if (!*vals)
        return as_error_set(err, "out of memory");
    memcpy(*vals, as_capture_row(r->cap, hook, 0), (size_t)s->it->out->n_tokens * (size_t)h->width * sizeof **vals);
    return AS_OK;
}

static int metric_now(as_session *s, double *out, as_error *err)
{
    const float *l = as_cmd_final_logits(s, err);
    if (!l)
        return AS_ERR;
    *out = (double)l[s->metric[0]] - l[s->metric[1]];
    return AS_OK;
}

static const struct {
    const char *name;
    as_hook_kind kind;
} sweep_kinds[] = {{"resid_pre", AS_HK_RESID_PRE}, {"attn_out", AS_HK_ATTN_OUT}, {"mlp_out", AS_HK_MLP_OUT},
                   {"heads", AS_HK_Z}};

static const char *what_name(as_hook_kind kind)
{
    for (size_t k = 0; k < sizeof sweep_kinds / sizeof *sweep_kinds; k++)
        if (sweep_kinds[k].kind == kind)
            return sweep_kinds[k].name;
    return "?";
}

/* One patched run per (layer, position) — or (layer, head) — each
 * measuring the metric; writes the table to out and optionally a .npy. */
static int patch_sweep(cmd_ctx *c, as_hook_kind kind, const char *text, const char *out_path)
{
    const char *out_kind = out_path ? as_cmd_output_kind(out_path) : NULL;
    if (out_path && !out_kind)
        return as_error_set(c->err, "patch sweep writes FILE.npy, FILE.png or FILE.svg, not '%s'", out_path);
    if (out_kind && !strcmp(out_kind, "npy") && c->argc > 6)
        return as_error_set(c->err, "patch sweep: options such as '%s' are for a figure (.png/.svg)", c->argv[6]);
    as_session *s = c->s;
    const as_config *cfg = &s->model->cfg;
    if (!s->has_metric)
        return as_error_set(c->err, "patch sweep needs a metric: `metric TOKEN_A TOKEN_B` first");
    as_side_run other;
    if (run_other(s, text, &other, c->err)) {
        as_cmd_side_run_free(&other);
        return AS_ERR;
    }
    bool heads = kind == AS_HK_Z;
    int cols = heads ? cfg->n_head : s->it->out->n_tokens;
    float *table = calloc((size_t)cfg->n_layer * (size_t)cols, sizeof *table), *vals = NULL;
    double clean = 0, corrupt = 0;
    int rc = table ? as_cmd_rerun(s, true, c->err) : as_error_set(c->err, "out of memory");
    if (rc == AS_OK)
        rc = metric_now(s, &clean, c->err);
    const float *ol = as_interp_logits(other.it);
    corrupt = ol ? (double)ol[s->metric[0]] - ol[s->metric[1]] : NAN;
    int saved = s->it->n_rules;
    for (int l = 0; rc == AS_OK && l < cfg->n_layer; l++) {
        int hook = as_program_hook(s->prog, kind, l);
        free(vals);
        vals = NULL;
        if ((rc = patch_values(s, &other, hook, &vals, c->err)))
            break;
        for (int j = 0; rc == AS_OK && j < cols; j++) {
            double m;
            /* A per-position patch: this hook's values from the other run. */
            as_rule probe = {.kind = AS_RULE_SET, .hook = hook, .head = heads ? j : -1, .pos = heads ? -1 : j};
            int len = as_rule_len(s->it, &probe), w = s->prog->hooks[hook].width;
            float *pv = calloc((size_t)s->it->n_ctx * (size_t)len, sizeof *pv);
            for (int p = 0; pv && p < s->it->out->n_tokens; p++)
                memcpy(pv + (size_t)p * len, vals + (size_t)p * w + (heads ? j * len : 0), (size_t)len * 4);
            rc = pv ? as_cmd_add_rule(s, AS_RULE_SET, hook, probe.head, probe.pos, pv, true, "sweep", c->err)
                    : as_error_set(c->err, "out of memory");
            free(pv);
            if (rc)
                break;
            rc = as_cmd_rerun(s, false, c->err);
            if (rc == AS_OK && (rc = metric_now(s, &m, c->err)) == AS_OK)
                table[(size_t)l * cols + j] = (float)m;
            as_interp_truncate_rules(s->it, saved);
        }
    }
    free(vals);
    as_cmd_side_run_free(&other);
    if (rc == AS_OK)
        rc = as_cmd_rerun(s, false, c->err);
    if (rc == AS_OK) {
        const char *what = what_name(kind);
        fprintf(s->out, "patching %s from the other prompt, by layer and %s; metric clean %.4f, other %.4f\nlayer",
                what, heads ? "head" : "position", clean, corrupt);
        for (int j = 0; j < cols; j++)
            fprintf(s->out, heads ? "\tH%d" : "\t%d", j);
        fprintf(s->out, "\n");
        for (int l = 0; l < cfg->n_layer; l++) {
            fprintf(s->out, "%d", l);
            for (int j = 0; j < cols; j++)
                fprintf(s->out, "\t%.4f", table[(size_t)l * cols + j]);
            fprintf(s->out, "\n");
        }
        if (out_kind && !strcmp(out_kind, "npy")) {
            size_t shape[2] = {(size_t)cfg->n_layer, (size_t)cols};
            rc = as_npy_write(out_path, AS_NPY_F32, table, shape, 2, c->err);
            if (rc == AS_OK)
                fprintf(s->out, "wrote %s: [%d, %d] float32\n", out_path, cfg->n_layer, cols);
        } else if (out_kind) {
            /* The figure shows the normalised effect: 0 where patching left
             * the metric as it was, 1 where it moved it all the way to the
             * other prompt's (the raw metric when the two prompts agree). */
            double span = corrupt - clean;
            bool norm = isfinite(span) && fabs(span) > 1e-6;
            for (size_t i = 0; i < (size_t)cfg->n_layer * (size_t)cols; i++)
                table[i] = norm ? (float)((table[i] - clean) / span) : table[i];
            char title[128], desc[96];
            snprintf(title, sizeof title, "Patching %s from the other prompt", what);
            snprintf(desc, sizeof desc, "patch sweep %s, %d layers x %d %s", what, cfg->n_layer, cols,
                     heads ? "heads" : "positions");
            as_table_fig t = {.v = table, .rows = cfg->n_layer, .cols = cols, .n_mats = 1, .by_position = !heads,
                              .diverging = true, .title = title,
                              .cbar_label = norm ? "share of the metric's change" : "metric", .what = desc};
            rc = as_cmd_export_table(c, out_path, 6, &t);
        }
    }
    free(table);
    return rc;
}

int as_cmd_patch(cmd_ctx *c)
{
    as_session *s = c->s;
    if (as_cmd_require_tokens(s, c->err))
        return AS_ERR;
    if (c->argc >= 5 && !strcmp(c->argv[1], "sweep") && !strcmp(c->argv[3], "from")) {
        for (size_t k = 0; k < sizeof sweep_kinds / sizeof *sweep_kinds; k++)
            if (!strcmp(c->argv[2], sweep_kinds[k].name))
                return patch_sweep(c, sweep_kinds[k].kind, c->argv[4], c->argc > 5 ? c->argv[5] : NULL);
        return as_error_set(c->err, "patch sweep takes resid_pre, attn_out, mlp_out or heads, not '%s'", c->argv[2]);
    }
    if (c->argc < 4 || strcmp(c->argv[2], "from"))
        return as_error_set(c->err, "usage: patch HOOK from \"OTHER PROMPT\" [pos=N]  or  patch sweep "
                                    "resid_pre|attn_out|mlp_out|heads from \"OTHER PROMPT\" [FILE.npy|FILE.png|FILE.svg]");
    int hook = as_cmd_find_hook(s, c->argv[1], c->err), pos = -1;
    if (hook < 0)
        return AS_ERR;
    if (c->argc > 4 && (strncmp(c->argv[4], "pos=", 4) || as_cmd_parse_pos(s, c->argv[4] + 4, &pos, c->err)))
        return pos < 0 && strncmp(c->argv[4], "pos=", 4) ? as_error_set(c->err, "expected pos=N, not '%s'", c->argv[4])
                                                         : AS_ERR;
    as_side_run other;
    float *vals = NULL;
    int rc = run_other(s, c->argv[3], &other, c->err);
    if (rc == AS_OK)
        rc = patch_values(s, &other, hook, &vals, c->err);
    as_cmd_side_run_free(&other);
    char label[96];
    snprintf(label, sizeof label, "patch %s from other prompt%s%.*s", c->argv[1], pos >= 0 ? " at " : "",
             pos >= 0 ? 12 : 0, c->argc > 4 ? c->argv[4] : "");
    if (rc == AS_OK)
        rc = as_cmd_add_rule(s, AS_RULE_SET, hook, -1, pos, vals, true, label, c->err);
    free(vals);
    return rc == AS_OK ? compare_runs(s, c->err) : AS_ERR;
}

/* ---- direct logit attribution ---- */

static int by_magnitude(const void *a, const void *b)
{
    double x = fabs(((const as_dla_term *)a)->value), y = fabs(((const as_dla_term *)b)->value);
    return (x < y) - (x > y);
}

int as_cmd_dla(cmd_ctx *c)
{
    as_session *s = c->s;
    int32_t tok;
    int pos = s->it->out->n_done - 1;
    as_out_arg o = as_cmd_output_arg(c, 2);
    if (o.argc < 2 || o.argc > 3 || (o.npy && o.at + 1 < c->argc))
        return as_error_set(c->err, "usage: dla TOKEN [POS] [FILE.npy|FILE.png|FILE.svg [dpi=N title=...]]");
    if (as_cmd_parse_token(s, c->argv[1], &tok, c->err) ||
        (o.argc == 3 && as_cmd_parse_pos(s, c->argv[2], &pos, c->err)))
        return AS_ERR;
    if (pos < 0)
        return as_error_set(c->err, "no position is computed yet (`finish` runs the pass)");
    as_dla d;
    if (as_dla_compute(s->cap, s->it->out->tokens, pos, tok, &d, c->err))
        return AS_ERR;
    double sum = d.constant;
    for (int i = 0; i < d.n_terms; i++)
        sum += d.terms[i].value;
    int rc = AS_OK;
    char piece[64];
    as_cmd_piece(s, tok, piece, sizeof piece);
    if (o.path) {
        /* [n_layer + 1, n_head + 2]: layer l's heads, then its attention
         * output bias and its MLP; the last row holds the embeddings and
         * the final norm's bias. The whole array sums to the logit. */
        const as_config *cfg = &s->model->cfg;
        int W = cfg->n_head + 2;
        float *t = calloc((size_t)(cfg->n_layer + 1) * (size_t)W, sizeof *t);
        if (!t) {
            as_dla_free(&d);
            return as_error_set(c->err, "out of memory");
        }
        for (int i = 0; i < d.n_terms; i++) {
            const as_dla_term *e = &d.terms[i];
            int col = e->head >= 0 ? e->head : strstr(e->name, "mlp") ? W - 1 : W - 2;
            t[e->layer < 0 ? (size_t)cfg->n_layer * W : (size_t)e->layer * W + (size_t)col] += (float)e->value;
        }
        t[(size_t)cfg->n_layer * W + 1] = (float)d.constant;
        size_t shape[2] = {(size_t)cfg->n_layer + 1, (size_t)W};
        if (o.npy) {
            rc = as_cmd_write_npy(s, o.path, AS_NPY_F32, t, shape, 2,
                                  "rows: layers then [embeddings, final norm bias]; columns: heads, attention bias, MLP",
                           c->err);
        } else {
            /* The figure: the layers' rows (heads, attention bias, MLP). */
            char(*names)[16] = calloc((size_t)W, sizeof *names), title[160], desc[96];
            const char **labels = calloc((size_t)W, sizeof *labels);
            for (int j = 0; names && labels && j < W; j++) {
                snprintf(names[j], sizeof names[j], j < cfg->n_head ? "H%d" : j == cfg->n_head ? "bias" : "MLP", j);
                labels[j] = names[j];
            }
            char label[64];
            as_cmd_token_label(s, tok, label, sizeof label);
            snprintf(title, sizeof title, "Direct logit attribution of %s at position %d", label, pos);
            snprintf(desc, sizeof desc, "direct logit attribution, %d layers x %d heads + bias + MLP", cfg->n_layer,
                     cfg->n_head);
            as_table_fig fig = {.v = t, .rows = cfg->n_layer, .cols = W, .n_mats = 1, .col_labels = labels,
                                .col_axis = "component", .diverging = true, .title = title,
                                .cbar_label = "contribution to the logit", .what = desc};
            rc = names && labels ? as_cmd_export_table(c, o.path, o.at + 1, &fig)
                                 : as_error_set(c->err, "out of memory");
            free(names);
            free(labels);
        }
        free(t);
    }
    qsort(d.terms, (size_t)d.n_terms, sizeof *d.terms, by_magnitude);
    fprintf(s->out, "direct logit attribution of %s (id %d) at position %d\ncomponent\tcontribution\n", piece, tok, pos);
    for (int i = 0; i < d.n_terms; i++)
        fprintf(s->out, "%s\t%+.4f\n", d.terms[i].name, d.terms[i].value);
    fprintf(s->out, "final norm bias\t%+.4f\nsum\t%+.4f\nlogit\t%+.4f\n", d.constant, sum, d.logit);
    as_dla_free(&d);
    return rc;
}

/* ---- head detectors ---- */

/* The first id past a SentencePiece vocabulary's byte-fallback tokens
 * (<0x00>..<0xFF>), which no text uses as a word; 0 where there are none
 * or the vocabulary is too small to spare them. */
static int32_t past_byte_tokens(const as_tokenizer *tok, int n_vocab)
{
    int32_t lo = 0;
    for (int32_t id = 0; n_vocab > 300 && id < 300; id++) {
        const char *p = as_tokenizer_piece(tok, id);
        unsigned byte;
        char end;
        if (p && sscanf(p, "<0x%2X%c", &byte, &end) == 2 && end == '>')
            lo = id + 1;
    }
    return lo;
}

int as_cmd_heads(cmd_ctx *c)
{
    as_session *s = c->s;
    const as_config *cfg = &s->model->cfg;
    double threshold = 0.4;
    bool context = false;
    as_out_arg o = as_cmd_output_arg(c, 1);
    if (o.npy && o.at + 1 < c->argc)
        return as_error_set(c->err, "heads: options such as '%s' are for a figure (.png/.svg)", c->argv[o.at + 1]);
    for (int i = 1; i < o.argc; i++) {
        if (!strcmp(c->argv[i], "context"))
            context = true;
        else if (!strncmp(c->argv[i], "threshold=", 10)) {
            if (as_cmd_parse_float(c->argv[i] + 10, 0, 1, "threshold", &threshold, c->err))
                return AS_ERR;
        } else
            return as_error_set(c->err, "usage: heads [context] [threshold=X] [FILE.npy|FILE.png|FILE.svg]");
    }
    const as_capture *cap = s->cap;
    const int32_t *tokens = s->it->out->tokens;
    int n = s->it->out->n_done;
    as_side_run probe = {0};
    int32_t *ids = NULL;
    if (!context) {
        /* BOS + R + R: R distinct random ordinary tokens, the same for every model of this vocabulary. */
        int len = cfg->n_ctx >= 65 ? 32 : (cfg->n_ctx - 1) / 2;
        int32_t bos = as_tokenizer_bos(s->model->tok), lo = past_byte_tokens(s->model->tok, cfg->n_vocab);
        int32_t hi = cfg->n_vocab - (as_tokenizer_eos(s->model->tok) == cfg->n_vocab - 1 ? 1 : 0);
        ids = malloc((size_t)(2 * len + 1) * sizeof *ids);
        if (!ids)
            return as_error_set(c->err, "out of memory");
        n = as_induction_probe(ids, bos, len, lo, hi, 1234);
        size_t patterns = 0;
        for (int h = 0; h < s->prog->n_hooks; h++)
            if (s->prog->hooks[h].kind == AS_HK_PATTERN)
                patterns += as_capture_hook_bytes(s->prog, h);
        if (as_cmd_side_run_new(s, ids, n, patterns, &probe, c->err)) {
            as_cmd_side_run_free(&probe);
            free(ids);
            return AS_ERR;
        }
        cap = probe.cap;
        tokens = ids;
    } else if (n < 2) {
        return as_error_set(c->err, "heads context needs a computed context of at least 2 tokens");
    }
    size_t per = (size_t)cfg->n_layer * (size_t)cfg->n_head;
    float *scores = o.path ? malloc(AS_SCORE_COUNT * per * sizeof *scores) : NULL;
    if (o.path && !scores) {
        as_cmd_side_run_free(&probe);
        free(ids);
        return as_error_set(c->err, "out of memory");
    }
    fprintf(s->out, "head scores on %s (%d tokens); * marks scores >= %.2f\n",
            context ? "the current context" : "a repeated random-token probe", n, threshold);
    for (int k = 0; k < AS_SCORE_COUNT; k++) {
        fprintf(s->out, "%s\nlayer", as_head_score_name((as_head_score)k));
        for (int h = 0; h < cfg->n_head; h++)
            fprintf(s->out, "\tH%d", h);
        fprintf(s->out, "\n");
        for (int l = 0; l < cfg->n_layer; l++) {
            int hook = as_program_hook(s->prog, AS_HK_PATTERN, l);
            fprintf(s->out, "%d", l);
            for (int h = 0; h < cfg->n_head; h++) {
                double v = as_capture_has(cap, hook) ? as_head_score_of(cap, hook, h, tokens, n, (as_head_score)k) : NAN;
                if (scores)
                    scores[(size_t)k * per + (size_t)l * (size_t)cfg->n_head + (size_t)h] = (float)v;
                fprintf(s->out, "\t%.3f%s", v, v >= threshold ? "*" : "");
            }
            fprintf(s->out, "\n");
        }
    }
    as_cmd_side_run_free(&probe);
    free(ids);
    int rc = AS_OK;
    if (scores) {
        size_t shape[3] = {AS_SCORE_COUNT, (size_t)cfg->n_layer, (size_t)cfg->n_head};
        char what[128];
        snprintf(what, sizeof what, "scores [%s, %s, %s, %s] x layer x head", as_head_score_name(0),
                 as_head_score_name(1), as_head_score_name(2), as_head_score_name(3));
        if (o.npy) {
            rc = as_cmd_write_npy(s, o.path, AS_NPY_F32, scores, shape, 3, what, c->err);
        } else {
            const char *names[AS_SCORE_COUNT];
            for (int k = 0; k < AS_SCORE_COUNT; k++)
                names[k] = as_head_score_name((as_head_score)k);
            char title[128], desc[96];
            snprintf(title, sizeof title, "Head scores on %s", context ? "the context" : "a repeated random-token probe");
            snprintf(desc, sizeof desc, "head scores, %d scores x %d layers x %d heads", AS_SCORE_COUNT, cfg->n_layer,
                     cfg->n_head);
            as_table_fig fig = {.v = scores, .rows = cfg->n_layer, .cols = cfg->n_head, .n_mats = AS_SCORE_COUNT,
                                .mat_titles = names, .title = title, .cbar_label = "score", .what = desc};
            rc = as_cmd_export_table(c, o.path, o.at + 1, &fig);
        }
        free(scores);
    }
    return rc;
}

/* ---- watches ---- */

/* "HOOK nan" or "HOOK max|min|absmax|mean >|< VALUE". */
static int parse_watch(cmd_ctx *c, as_watch_cond *cond, double *thr)
{
    static const struct {
        const char *word, *op;
        as_watch_cond cond;
    } forms[] = {{"max", ">", AS_WATCH_MAX_GT}, {"min", "<", AS_WATCH_MIN_LT}, {"absmax", ">", AS_WATCH_ABSMAX_GT},
                 {"mean", ">", AS_WATCH_MEAN_GT}, {"mean", "<", AS_WATCH_MEAN_LT}};
    *thr = 0;
    if (c->argc == 3 && (!strcmp(c->argv[2], "nan") || !strcmp(c->argv[2], "inf") || !strcmp(c->argv[2], "nonfinite"))) {
        *cond = AS_WATCH_NONFINITE;
        return AS_OK;
    }
    for (size_t k = 0; c->argc == 5 && k < sizeof forms / sizeof *forms; k++) {
        if (strcmp(c->argv[2], forms[k].word) || strcmp(c->argv[3], forms[k].op))
            continue;
        *cond = forms[k].cond;
        return as_cmd_parse_float(c->argv[4], -1e30, 1e30, "the threshold", thr, c->err);
    }
    return as_error_set(c->err, "usage: watch HOOK nan | watch HOOK max|absmax|mean > X | watch HOOK min|mean < X");
}

int as_cmd_watch(cmd_ctx *c)
{
    as_session *s = c->s;
    as_watch_cond cond;
    double thr;
    if (c->argc < 3 || parse_watch(c, &cond, &thr))
        return c->argc < 3 ? parse_watch(c, &cond, &thr) : AS_ERR;
    char label[96];
    size_t o = 0;
    for (int i = 1; i < c->argc && o < sizeof label; i++)
        o += (size_t)snprintf(label + o, sizeof label - o, "%s%s", i > 1 ? " " : "", c->argv[i]);
    int matched = 0;
    for (int h = 0; h < s->prog->n_hooks; h++) {
        if (!as_hook_name_match(c->argv[1], s->prog->hooks[h].name))
            continue;
        as_rule r = {.kind = AS_RULE_WATCH, .hook = h, .head = -1, .pos = -1, .cond = cond, .threshold = (float)thr};
        snprintf(r.label, sizeof r.label, "%s", label);
        if (as_interp_add_rule(s->it, &r, 0, c->err))
            return AS_ERR;
        matched++;
    }
    if (!matched)
        return as_error_set(c->err, "no hook point matches '%s' (`hooks` lists them)", c->argv[1]);
    fprintf(s->out, "watching %d hook point%s: %s (stops continue and gen)\n", matched, matched == 1 ? "" : "s", label);
    return AS_OK;
}

int as_cmd_unwatch(cmd_ctx *c)
{
    int n = as_interp_clear_rules(c->s->it, true);
    fprintf(c->s->out, "removed %d watch%s\n", n, n == 1 ? "" : "es");
    return AS_OK;
}

int as_cmd_watches(cmd_ctx *c) { return as_cmd_list_rules(c, true); }

/* ---- weights ---- */

/* A tensor name from the file, escaped: a hostile name must not drive the terminal. */
static const char *shown_name(const char *name, char *buf, size_t cap)
{
    as_format_piece(name, strlen(name), buf, cap);
    return buf;
}

static void print_weight_line(as_session *s, const as_gguf_tensor *t, const as_weight_stats *st)
{
    char nm[256];
    fprintf(s->out, "%s\t%s\t%.4g\t%.4g\t%.4g\t%.4g\t%.4g\t%llu\t%llu\t%.4f\n", shown_name(t->name, nm, sizeof nm),
            as_ggml_type_name(t->type),
            st->min, st->max, st->mean, st->std, st->norm, (unsigned long long)st->nan, (unsigned long long)st->inf,
            st->n ? (double)st->zeros / (double)st->n : 0.0);
}

static void print_histogram(as_session *s, const as_weight_stats *st)
{
    uint64_t most = 1;
    for (int b = 0; b < AS_HIST_BINS; b++)
        most = st->hist[b] > most ? st->hist[b] : most;
    double w = (st->max - st->min) / AS_HIST_BINS;
    for (int b = 0; b < AS_HIST_BINS; b++) {
        int bar = (int)(40.0 * (double)st->hist[b] / (double)most + 0.5);
        fprintf(s->out, "  [%+10.4g, %+10.4g) %10llu ", st->min + b * w, st->min + (b + 1) * w,
                (unsigned long long)st->hist[b]);
        for (int k = 0; k < bar; k++)
            fputs("#", s->out);
        fputs("\n", s->out);
    }
}

int as_cmd_weights(cmd_ctx *c)
{
    as_session *s = c->s;
    const as_gguf *g = s->model->gguf;
    const char *pattern = c->argc > 1 ? c->argv[1] : "*";
    if (!g)
        return as_error_set(c->err, "weights reads GGUF files; this model was not loaded from one");
    int matched = 0;
    const as_gguf_tensor *only = NULL;
    as_weight_stats last;
    char nm[256];
    fprintf(s->out, "tensor\ttype\tmin\tmax\tmean\tstd\tnorm\tnan\tinf\tzeros\n");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        if (!as_hook_name_match(pattern, t->name))
            continue;
        if (!as_ggml_type_supported(t->type)) {
            fprintf(s->out, "%s\t%s\t(cannot read this type yet)\n", shown_name(t->name, nm, sizeof nm),
                    as_ggml_type_name(t->type));
            continue;
        }
        if (as_weight_stats_of(t, &last, c->err))
            return AS_ERR;
        print_weight_line(s, t, &last);
        only = t;
        matched++;
    }
    if (!matched)
        return as_error_set(c->err, "no tensor matches '%s' (`info` lists them)", pattern);
    if (matched == 1) {
        fprintf(s->out, "histogram of %s:\n", shown_name(only->name, nm, sizeof nm));
        print_histogram(s, &last);
    }
    return AS_OK;
}

static int layer_of(const char *name)
{
    return strncmp(name, "blk.", 4) ? -1 : atoi(name + 4);
}

int as_cmd_diff(cmd_ctx *c)
{
    as_session *s = c->s;
    const as_gguf *a = s->model->gguf;
    if (c->argc != 2)
        return as_error_set(c->err, "usage: diff OTHER.gguf");
    if (!a)
        return as_error_set(c->err, "diff compares GGUF files; this model was not loaded from one");
    as_gguf *b;
    if (as_gguf_open(&b, c->argv[1], c->err))
        return AS_ERR;
    int L = s->model->cfg.n_layer, differ = 0, rc = AS_OK;
    char nm[256];
    double *d2 = calloc((size_t)L + 1, sizeof *d2), *a2 = calloc((size_t)L + 1, sizeof *a2);
    fprintf(s->out, "tensor\trelative difference\t|a-b|\t|a|\n");
    for (uint64_t i = 0; d2 && a2 && rc == AS_OK && i < a->n_tensors; i++) {
        const as_gguf_tensor *ta = &a->tensors[i], *tb = as_gguf_tensor_find(b, ta->name);
        double rel, dn, na;
        if (!tb) {
            fprintf(s->out, "%s\tonly in %s\n", shown_name(ta->name, nm, sizeof nm), a->path);
            differ++;
            continue;
        }
        if (!as_ggml_type_supported(ta->type) || !as_ggml_type_supported(tb->type))
            continue;
        if ((rc = as_weight_diff(ta, tb, &rel, &dn, &na, c->err)))
            break;
        int l = layer_of(ta->name);
        d2[l < 0 || l >= L ? L : l] += dn * dn;
        a2[l < 0 || l >= L ? L : l] += na * na;
        if (dn > 0) {
            fprintf(s->out, "%s\t%.3e\t%.4g\t%.4g\n", shown_name(ta->name, nm, sizeof nm), rel, dn, na);
            differ++;
        }
    }
    for (uint64_t i = 0; rc == AS_OK && i < b->n_tensors; i++)
        if (!as_gguf_tensor_find(a, b->tensors[i].name)) {
            fprintf(s->out, "%s\tonly in %s\n", shown_name(b->tensors[i].name, nm, sizeof nm), b->path);
            differ++;
        }
    if (rc == AS_OK && d2 && a2) {
        fprintf(s->out, "%d tensor%s differ\nper layer\trelative difference\n", differ, differ == 1 ? "" : "s");
        for (int l = 0; l <= L; l++) {
            if (l < L)
                fprintf(s->out, "%d", l);
            fprintf(s->out, "%s\t%.3e\n", l < L ? "" : "other", a2[l] > 0 ? sqrt(d2[l] / a2[l]) : 0.0);
        }
    }
    free(d2);
    free(a2);
    as_gguf_close(b);
    return rc;
}
