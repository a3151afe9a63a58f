/* Activation patching: `patch HOOK from "OTHER"` (one hook's values from
 * a run of another prompt, then compared) and `patch sweep` (one patched
 * run per layer and position or head, measuring the metric; as .npy or a
 * figure). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/npy.h"
#include "session_internal.h"

/* Runs OTHER (same token count as the context) and returns its capture. */
static int run_other(as_session *s, const char *text, as_side_run *r, as_error *err)
{
    memset(r, 0, sizeof *r);
    int32_t *ids = NULL;
    size_t n = 0;
    if (s->prog->source_stream >= 0)
        return as_error_set(err, "patching runs the other prompt as a context of its own; on an encoder-decoder "
                            "that run would need a source too, which patch does not take yet");
    /* read as `prompt` reads it: an encoder's [CLS] ... [SEP], a [MASK] as the token */
    if (as_cmd_encode(s, text, false, &ids, &n, err))
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

/* Rows of a per-position rule's values: the tokens of the hook's stream
 * (what the interpreter copies) and of the output stream (what is filled). */
static int rule_rows(const as_session *s, int hook)
{
    int a = s->it->st[s->prog->hooks[hook].stream].n_tokens, b = s->it->out->n_tokens;
    return (a > b ? a : b) + 1;
}

static int patch_values(as_session *s, const as_side_run *r, int hook, float **vals, as_error *err)
{
    const as_hook *h = &s->prog->hooks[hook];
    if (h->is_attn)
        return as_error_set(err, "%s: patching attention patterns is not supported (patch hook_z or the residual stream)",
                            h->name);
    if (!as_capture_has(r->cap, hook))
        return as_error_set(err, "%s is not captured in the side run: %s", h->name,
                            r->cap->dropped[0] ? r->cap->dropped : "it was dropped");
    *vals = calloc((size_t)rule_rows(s, hook) * (size_t)h->width, sizeof **vals);
    if (!*vals)
        return as_error_set(err, "out of memory");
    memcpy(*vals, as_capture_row(r->cap, hook, 0), (size_t)s->it->out->n_tokens * (size_t)h->width * sizeof **vals);
    return AS_OK;
}

static int metric_reader(as_session *s, void *ctx, as_error *err)
{
    const float *l = as_cmd_final_logits(s, err);
    if (!l)
        return AS_ERR;
    *(double *)ctx = as_cmd_metric_of(s, l);
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

/* A sweep's table (layers × positions, or × heads) printed, or written as
 * .npy or a figure: patch sweep's (the patched metric per cell) and
 * attribute's (its estimated change, the cell's attribution). */
typedef struct sweep_report {
    as_hook_kind kind;
    const char *text;   /* the other prompt */
    float *table;       /* [n_layer][cols]; a figure normalises it in place */
    double clean, corrupt;
    bool attribution;   /* cells are changes of the metric (attribute), not patched metrics */
    const char *out_path;
    int opt_first;      /* the figure's first option in argv */
} sweep_report;

static int report_table(cmd_ctx *c, sweep_report *r)
{
    as_session *s = c->s;
    const as_config *cfg = &s->model->cfg;
    bool heads = r->kind == AS_HK_Z;
    int cols = heads ? cfg->n_head : s->it->out->n_tokens, rc = AS_OK;
    const char *out_kind = r->out_path ? as_cmd_output_kind(r->out_path) : NULL, *what = what_name(r->kind);
    float *table = r->table;
    double clean = r->clean, corrupt = r->corrupt;
    if (r->attribution)
        fprintf(s->out, "attribution patching of %s from the other prompt ((other - clean) . gradient), by layer and "
                "%s; metric clean %.4f, other %.4f\nlayer", what, heads ? "head" : "position", clean, corrupt);
    else
        fprintf(s->out, "patching %s from the other prompt, by layer and %s; metric clean %.4f, other %.4f\nlayer",
                what, heads ? "head" : "position", clean, corrupt);
    for (int j = 0; j < cols; j++)
        fprintf(s->out, heads ? "\tH%d" : "\t%d", j);
    fprintf(s->out, "\n");
    for (int l = 0; l < cfg->n_layer; l++) {
        fprintf(s->out, "%d", l);
        for (int j = 0; j < cols; j++)
            fprintf(s->out, r->attribution ? "\t%+.4f" : "\t%.4f", table[(size_t)l * cols + j]);
        fprintf(s->out, "\n");
    }
    if (out_kind && !strcmp(out_kind, "npy")) {
        size_t shape[2] = {(size_t)cfg->n_layer, (size_t)cols};
        rc = as_npy_write(r->out_path, AS_NPY_F32, table, shape, 2, c->err);
        if (rc == AS_OK)
            fprintf(s->out, "wrote %s: [%d, %d] float32\n", r->out_path, cfg->n_layer, cols);
    } else if (out_kind) {
        /* The figure shows the normalised effect: 0 where patching left
         * the metric as it was, 1 where it moved it all the way to the
         * other prompt's (the raw metric, or attribution, when the two
         * prompts agree). Attribution's cells are already changes. */
        double span = corrupt - clean, base = r->attribution ? 0 : clean;
        bool norm = isfinite(span) && fabs(span) > 1e-6;
        for (size_t i = 0; i < (size_t)cfg->n_layer * (size_t)cols; i++)
            table[i] = norm ? (float)((table[i] - base) / span) : table[i];
        char title[128], desc[96], notes[3][1024], ta[64], tb[64];
        if (r->attribution)
            snprintf(title, sizeof title, "Attribution patching of %s", what);
        else
            snprintf(title, sizeof title, "Patching %s from the other prompt", what);
        snprintf(desc, sizeof desc, "%s %s, %d layers x %d %s", r->attribution ? "attribute" : "patch sweep", what,
                 cfg->n_layer, cols, heads ? "heads" : "positions");
        as_cmd_token_label(s, s->metric[0], ta, sizeof ta);
        as_cmd_token_label(s, s->metric[1], tb, sizeof tb);
        if (s->metric_kind == AS_METRIC_DIFF)
            snprintf(notes[0], sizeof notes[0], "Metric: logit(%s) \xE2\x88\x92 logit(%s) at the last position: %.3f "
                     "on this prompt (clean), %.3f on the other (corrupted).", ta, tb, clean, corrupt);
        else
            snprintf(notes[0], sizeof notes[0], "Metric: %s(%s) at the last position: %.3f on this prompt (clean), "
                     "%.3f on the other (corrupted).", s->metric_kind == AS_METRIC_LOGPROB ? "log p"
                     : s->metric_kind == AS_METRIC_PROB ? "p" : "logit", ta, clean, corrupt);
        if (r->attribution)
            snprintf(notes[1], sizeof notes[1], norm ? "Colour: the first-order estimate (corrupted \xE2\x88\x92 clean "
                     "activation) \xC2\xB7 d metric / d activation, over (corrupted \xE2\x88\x92 clean metric): 1 "
                     "predicts patching moves the metric all the way to the other prompt's."
                     : "Colour: (corrupted \xE2\x88\x92 clean activation) \xC2\xB7 d metric / d activation (the two "
                       "prompts' metrics agree, so there is no change to share).");
        else
            snprintf(notes[1], sizeof notes[1], norm ? "Colour: (patched \xE2\x88\x92 clean) / (corrupted \xE2\x88\x92 "
                     "clean): 0 leaves the metric as it was, 1 moves it all the way to the other prompt's."
                     : "Colour: the patched metric itself (the two prompts' metrics agree, so there is no change to "
                       "share).");
        snprintf(notes[2], sizeof notes[2], "Other prompt: \xE2\x80\x9C%.960s\xE2\x80\x9D", r->text);
        const char *note_ptrs[3] = {notes[0], notes[1], notes[2]};
        as_table_fig t = {.v = table, .rows = cfg->n_layer, .cols = cols, .n_mats = 1, .by_position = !heads,
                          .diverging = true, .title = title,
                          .cbar_label = norm ? "share of the metric's change"
                                        : r->attribution ? "attribution" : "metric",
                          .what = desc, .notes = note_ptrs, .n_notes = 3};
        rc = as_cmd_export_table(c, r->out_path, r->opt_first, &t);
    }
    return rc;
}

/* One patched run per (layer, position) — or (layer, head) — each
 * measuring the metric; writes the table to out and optionally a .npy. */
static int patch_sweep(cmd_ctx *c, as_hook_kind kind, const char *text, const char *out_path)
{
    const char *out_kind = out_path ? as_cmd_output_kind(out_path) : NULL;
    if (out_path && !out_kind)
        return as_error_set(c->err, "patch sweep writes FILE.npy, FILE.png, FILE.svg or FILE.pdf, not '%s'", out_path);
    if (out_kind && !strcmp(out_kind, "npy") && c->argc > 6)
        return as_error_set(c->err, "patch sweep: options such as '%s' are for a figure (.png/.svg/.pdf)", c->argv[6]);
    if (out_kind && strcmp(out_kind, "npy") && as_cmd_export_table_check(c, out_path, 6))
        return AS_ERR;
    as_session *s = c->s;
    const as_config *cfg = &s->model->cfg;
    if (as_cmd_metric_final(s, "patch sweep", c->err))
        return AS_ERR;
    as_side_run other;
    if (run_other(s, text, &other, c->err)) {
        as_cmd_side_run_free(&other);
        return AS_ERR;
    }
    bool heads = kind == AS_HK_Z;
    int cols = heads ? cfg->n_head : s->it->out->n_tokens;
    float *table = calloc((size_t)cfg->n_layer * (size_t)cols, sizeof *table), *vals = NULL;
    double clean = 0, corrupt = 0;
    int rc = table ? as_cmd_rerun(s, true, metric_reader, &clean, c->err) : as_error_set(c->err, "out of memory");
    const float *ol = as_interp_logits(other.it);
    corrupt = ol ? as_cmd_metric_of(s, ol) : NAN;
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
            float *pv = calloc((size_t)rule_rows(s, hook) * (size_t)len, sizeof *pv);
            for (int p = 0; pv && p < s->it->out->n_tokens; p++)
                memcpy(pv + (size_t)p * len, vals + (size_t)p * w + (heads ? j * len : 0), (size_t)len * 4);
            rc = pv ? as_cmd_add_rule(s, AS_RULE_SET, hook, probe.head, probe.pos, pv, true, "sweep", c->err)
                    : as_error_set(c->err, "out of memory");
            free(pv);
            if (rc)
                break;
            rc = as_cmd_rerun(s, false, metric_reader, &m, c->err);
            if (rc == AS_OK)
                table[(size_t)l * cols + j] = (float)m;
            as_interp_truncate_rules(s->it, saved);
        }
    }
    free(vals);
    as_cmd_side_run_free(&other);
    if (rc == AS_OK)
        rc = as_cmd_rerun(s, false, NULL, NULL, c->err);
    if (rc == AS_OK) {
        sweep_report rep = {.kind = kind, .text = text, .table = table, .clean = clean, .corrupt = corrupt,
                            .out_path = out_path, .opt_first = 6};
        rc = report_table(c, &rep);
    }
    free(table);
    return rc;
}

/* "L.H": digits, one dot, digits. */
static bool is_layer_head(const char *a)
{
    const char *d = a;
    while (*d >= '0' && *d <= '9')
        d++;
    if (d == a || *d != '.' || !d[1])
        return false;
    for (d++; *d; d++)
        if (*d < '0' || *d > '9')
            return false;
    return strlen(a) < 32;
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
        return as_error_set(c->err, "usage: patch HOOK|LAYER.HEAD from \"OTHER PROMPT\" [pos=N]  or  patch sweep "
                                    "resid_pre|attn_out|mlp_out|heads from \"OTHER PROMPT\" [FILE.npy|FILE.png|FILE.svg|FILE.pdf]");
    /* L.H: one head's slice of hook_z (the context's own heads: an encoder-decoder's decoder) */
    long hl = -1, hh = -1;
    int hook, pos = -1;
    char lh[32];
    if (is_layer_head(c->argv[1])) {
        snprintf(lh, sizeof lh, "%s", c->argv[1]);
        *strchr(lh, '.') = '\0';
        if (as_cmd_parse_long(lh, 0, s->model->cfg.n_layer - 1, "the layer", &hl, c->err) ||
            as_cmd_parse_long(strchr(c->argv[1], '.') + 1, 0, s->model->cfg.n_head - 1, "the head", &hh, c->err))
            return AS_ERR;
        hook = as_program_hook_in(s->prog, AS_HK_Z, (int)hl, s->prog->out_stream);
        if (hook < 0)
            return as_error_set(c->err, "the %s stream has no block %ld", s->prog->streams[s->prog->out_stream].name, hl);
        if (s->prog->hooks[hook].n_dims != 2 || hh >= s->prog->hooks[hook].dims[0])
            return as_error_set(c->err, "layer %ld's hook_z has no head %ld", hl, hh);
    } else if ((hook = as_cmd_find_hook(s, c->argv[1], c->err)) < 0) {
        return AS_ERR;
    }
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
    if (rc == AS_OK && hh >= 0) { /* the head's slice of each position's values */
        as_rule probe = {.kind = AS_RULE_SET, .hook = hook, .head = (int)hh, .pos = pos};
        int len = as_rule_len(s->it, &probe), w = s->prog->hooks[hook].width, rows = rule_rows(s, hook);
        for (int p = 0; p < rows; p++)
            memmove(vals + (size_t)p * len, vals + (size_t)p * w + (size_t)hh * len, (size_t)len * sizeof *vals);
    }
    if (rc == AS_OK)
        rc = as_cmd_add_rule(s, AS_RULE_SET, hook, (int)hh, pos, vals, true, label, c->err);
    free(vals);
    return rc == AS_OK ? as_cmd_compare_runs(s, c->err) : AS_ERR;
}

/* ---------------------------------------------------------------- attribution patching */

static const struct {
    const char *name;
    as_hook_kind kind;
} attr_kinds[] = {{"heads", AS_HK_Z}, {"resid", AS_HK_RESID_PRE}, {"mlp", AS_HK_MLP_OUT}, {"attn", AS_HK_ATTN_OUT}};

/* Attribution patching (Nanda 2023): the first-order estimate of each
 * cell of `patch sweep`, from one run of each prompt and one backward
 * pass on the clean one: (other − clean activation) · d metric / d
 * activation, summed over the cell (a position's row; a head's slice of
 * hook_z at every position: the O projection is linear, so that is the
 * head's attribution through its output too). */
int as_cmd_attribute(cmd_ctx *c)
{
    as_session *s = c->s;
    const char *usage = "usage: attribute heads|resid|mlp|attn from \"OTHER PROMPT\" "
                        "[FILE.npy|FILE.png|FILE.svg|FILE.pdf] [figure options]";
    if (c->argc < 4 || strcmp(c->argv[2], "from"))
        return as_error_set(c->err, "%s", usage);
    int ki = -1;
    for (size_t k = 0; k < sizeof attr_kinds / sizeof *attr_kinds; k++)
        if (!strcmp(c->argv[1], attr_kinds[k].name))
            ki = (int)k;
    if (ki < 0)
        return as_error_set(c->err, "attribute takes heads, resid, mlp or attn, not '%s'", c->argv[1]);
    const char *out_path = c->argc > 4 ? c->argv[4] : NULL;
    const char *out_kind = out_path ? as_cmd_output_kind(out_path) : NULL;
    if (out_path && !out_kind)
        return as_error_set(c->err, "attribute writes FILE.npy, FILE.png, FILE.svg or FILE.pdf, not '%s'", out_path);
    if (out_kind && !strcmp(out_kind, "npy") && c->argc > 5)
        return as_error_set(c->err, "attribute: options such as '%s' are for a figure (.png/.svg/.pdf)", c->argv[5]);
    if (out_kind && strcmp(out_kind, "npy") && as_cmd_export_table_check(c, out_path, 5))
        return AS_ERR;
    if (as_cmd_require_tokens(s, c->err) || as_cmd_metric_final(s, "attribute", c->err))
        return AS_ERR;
    as_hook_kind kind = attr_kinds[ki].kind;
    const as_config *cfg = &s->model->cfg;
    int L = cfg->n_layer, n = s->it->out->n_tokens;
    bool heads = kind == AS_HK_Z;
    int cols = heads ? cfg->n_head : n;
    int *hooks = calloc((size_t)L, sizeof *hooks);
    float **grads = calloc((size_t)L, sizeof *grads), **acts = calloc((size_t)L, sizeof *acts);
    float **other_v = calloc((size_t)L, sizeof *other_v), *table = calloc((size_t)L * (size_t)cols, sizeof *table);
    int rc = hooks && grads && acts && other_v && table ? AS_OK : as_error_set(c->err, "out of memory");
    for (int l = 0; rc == AS_OK && l < L; l++) {
        hooks[l] = as_program_hook(s->prog, kind, l);
        if (hooks[l] < 0)
            rc = as_error_set(c->err, "%s has no %s in layer %d to attribute to", cfg->name, what_name(kind), l);
        else if (heads && s->prog->hooks[hooks[l]].width != cfg->n_head * (s->prog->hooks[hooks[l]].width / cfg->n_head))
            rc = as_error_set(c->err, "%s: its width is not a slice per head", s->prog->hooks[hooks[l]].name);
    }
    as_side_run other;
    memset(&other, 0, sizeof other);
    double corrupt = NAN;
    if (rc == AS_OK)
        rc = run_other(s, c->argv[3], &other, c->err);
    for (int l = 0; rc == AS_OK && l < L; l++)
        rc = patch_values(s, &other, hooks[l], &other_v[l], c->err);
    if (rc == AS_OK) {
        const float *ol = as_interp_logits(other.it);
        corrupt = ol ? as_cmd_metric_of(s, ol) : NAN;
    }
    as_cmd_side_run_free(&other);
    /* the clean run as patch sweep's (interventions off), and its gradient */
    as_grad_req q = {.hooks = hooks, .n = L, .grads = grads, .acts = acts};
    if (rc == AS_OK) {
        rc = as_cmd_rerun(s, true, as_cmd_grad_reader, &q, c->err);
        if (s->it->n_rules) { /* the state under the interventions again */
            int rc2 = as_cmd_rerun(s, false, NULL, NULL, rc ? NULL : c->err);
            rc = rc ? rc : rc2;
        }
    }
    if (rc == AS_OK && q.n_pos != n)
        rc = as_error_set(c->err, "the gradient covers %d positions, the context %d", q.n_pos, n);
    for (int l = 0; rc == AS_OK && l < L; l++) {
        int w = s->prog->hooks[hooks[l]].width, dh = heads ? w / cfg->n_head : w;
        for (int j = 0; j < cols; j++) {
            /* a position's row, or a head's slice at every position */
            double sum = 0;
            for (int p = heads ? 0 : j; p < (heads ? n : j + 1); p++) {
                size_t o = (size_t)p * w + (heads ? (size_t)j * dh : 0);
                for (int k = 0; k < dh; k++)
                    sum += ((double)other_v[l][o + k] - acts[l][o + k]) * grads[l][o + k];
            }
            table[(size_t)l * cols + j] = (float)sum;
        }
    }
    if (rc == AS_OK) {
        sweep_report rep = {.kind = kind, .text = c->argv[3], .table = table, .clean = q.value, .corrupt = corrupt,
                            .attribution = true, .out_path = out_path, .opt_first = 5};
        rc = report_table(c, &rep);
    }
    for (int l = 0; l < L && grads && acts && other_v; l++)
        free(grads[l]), free(acts[l]), free(other_v[l]);
    free(hooks), free(grads), free(acts), free(other_v), free(table);
    return rc;
}
