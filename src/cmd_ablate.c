/* Ablation and its measure: `ablate` (zero or mean a head, zero an MLP),
 * `unablate`, `ablations`, `metric` (a logit difference) and `compare`
 * (a clean run against the run with the rules; `patch` reports through
 * it too). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"

/* An encoder-decoder's decoder may have fewer blocks than the layer count
 * (the deeper stack's). */
static int no_block(const as_session *s, long l, as_error *err)
{
    return as_error_set(err, "the %s stream has no block %ld (an encoder-decoder's stacks may differ in depth)",
                        s->prog->streams[s->prog->out_stream].name, l);
}

/* "L.E" naming an expert of a routed MLP: its layer, expert and the hook
 * of `kind` in that layer the rule goes on. */
static int parse_expert(as_session *s, const char *arg, as_hook_kind kind, long *l, long *e, int *hook, as_error *err)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%s", arg);
    char *dot = strchr(buf, '.');
    if (!dot)
        return as_error_set(err, "'%s' is not LAYER.EXPERT (e.g. 1.3)", arg);
    *dot = '\0';
    if (as_cmd_parse_long(buf, 0, s->model->cfg.n_layer - 1, "the layer", l, err))
        return AS_ERR;
    *hook = as_program_hook_in(s->prog, kind, (int)*l, s->prog->out_stream);
    const as_op *op = *hook >= 0 ? as_program_producer(s->prog, *hook) : NULL;
    if (!op)
        return as_error_set(err, "layer %ld of %s has no experts (its MLP is dense): `ablate mlp %ld` ablates it", *l,
                            s->model->cfg.name, *l);
    return as_cmd_parse_long(dot + 1, 0, op->n_expert - 1, "the expert", e, err);
}

/* route L.E off: the router of layer L may not choose expert E. */
int as_cmd_route(cmd_ctx *c)
{
    as_session *s = c->s;
    long l, e;
    int h;
    if (c->argc != 3 || strcmp(c->argv[2], "off"))
        return as_error_set(c->err, "usage: route LAYER.EXPERT off  (`unablate` routes every expert again)");
    if (parse_expert(s, c->argv[1], AS_HK_EXPERT_INDICES, &l, &e, &h, c->err))
        return AS_ERR;
    const as_op *op = as_program_producer(s->prog, h);
    int off = 1;
    for (int k = 0; k < s->it->n_rules; k++) {
        const as_rule *r = &s->it->rules[k];
        if (r->kind == AS_RULE_ROUTE_OFF && r->hook == h) {
            if (r->head == (int)e)
                return as_error_set(c->err, "expert %ld.%ld is routed off already", l, e);
            off++;
        }
    }
    if (op->n_expert - off < op->k)
        return as_error_set(c->err, "routing off %d of layer %ld's %d experts leaves fewer than the %d each token uses",
                            off, l, op->n_expert, op->k);
    char label[96];
    snprintf(label, sizeof label, "route %ld.%ld off", l, e);
    if (as_cmd_add_rule(s, AS_RULE_ROUTE_OFF, h, (int)e, -1, NULL, false, label, c->err))
        return AS_ERR;
    fprintf(s->out, "%s: in effect from now on (what is read next is computed with it; `compare` runs with and without)\n", label);
    return AS_OK;
}

struct head_mean {
    int hook, head;
    float *avg; /* [d_head], malloc'd */
};

static int head_mean(as_session *s, void *ctx, as_error *err)
{
    struct head_mean *m = ctx;
    int n = as_cmd_hook_positions(s, m->hook, err);
    if (n < 0)
        return AS_ERR;
    int dh = s->model->cfg.d_head;
    if (!(m->avg = calloc((size_t)dh, sizeof *m->avg)))
        return as_error_set(err, "out of memory");
    for (int p = 0; p < n; p++)
        for (int i = 0; i < dh; i++)
            m->avg[i] += as_capture_row(s->cap, m->hook, p)[m->head * dh + i] / (float)n;
    return AS_OK;
}

/* An ablation of what one already ablates would silently stack on it (a
 * mean over values the first zeroed): refused, naming the first. */
static int ablated_already(const as_session *s, int hook, int head, const char *label, as_error *err)
{
    for (int k = 0; k < s->it->n_rules; k++) {
        const as_rule *r = &s->it->rules[k];
        bool ablation = r->kind == AS_RULE_ZERO || r->kind == AS_RULE_EXPERT_ZERO ||
                        (r->kind == AS_RULE_SET && !r->per_position && r->pos < 0);
        if (ablation && r->hook == hook && r->head == head)
            return as_error_set(err, "%s: '%s' ablates it already (`ablations` lists the rules, `unablate` removes "
                                "them)", label, r->label);
    }
    return AS_OK;
}

/* The mean of head `head`'s hook_z (hook) over every position of every prompt in `path` (one a
 * line; blank lines skipped), each prompt run clean on its own, the positions pooled: one [d_head]
 * vector, as `ablate L.H mean` takes over the context's positions. */
static int head_mean_over(as_session *s, const char *path, int hook, int head, float **avg, int *n_prompts,
                          long *n_pos, as_error *err)
{
    *avg = NULL;
    FILE *f = fopen(path, "r");
    if (!f)
        return as_error_set(err, "cannot read the prompts file '%s': %s", path, strerror(errno));
    const as_hook *h = &s->prog->hooks[hook];
    int dh = h->dims[1];
    double *sum = calloc((size_t)dh, sizeof *sum);
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    int rc = sum ? AS_OK : as_error_set(err, "out of memory");
    long lineno = 0;
    *n_prompts = 0, *n_pos = 0;
    while (rc == AS_OK && (len = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
            line[--len] = '\0';
        bool blank = true;
        for (ssize_t i = 0; i < len && blank; i++)
            blank = line[i] == ' ' || line[i] == '\t';
        if (blank)
            continue;
        int32_t *ids = NULL;
        size_t n = 0;
        as_side_run r;
        memset(&r, 0, sizeof r);
        rc = as_cmd_encode(s, line, false, &ids, &n, err);
        if (rc == AS_OK && n == 0)
            rc = as_error_set(err, "line %ld gives no tokens", lineno);
        if (rc == AS_OK)
            rc = as_cmd_side_run_new(s, ids, (int)n, s->capture_mb << 20, &r, err);
        if (rc == AS_OK && !as_capture_has(r.cap, hook))
            rc = as_error_set(err, "%s is not captured in the run of line %ld: %s", h->name, lineno,
                              r.cap->dropped[0] ? r.cap->dropped : "it was dropped");
        for (int p = 0; rc == AS_OK && p < (int)n; p++) {
            const float *z = as_capture_row(r.cap, hook, p) + (size_t)head * dh;
            for (int i = 0; i < dh; i++)
                sum[i] += z[i];
        }
        if (rc == AS_OK)
            (*n_prompts)++, *n_pos += (long)n;
        else
            as_error_prefix(err, "%s line %ld", path, lineno);
        as_cmd_side_run_free(&r);
        free(ids);
    }
    if (rc == AS_OK && ferror(f))
        rc = as_error_set(err, "cannot read the prompts file '%s': %s", path, strerror(errno));
    if (rc == AS_OK && *n_prompts == 0)
        rc = as_error_set(err, "the prompts file '%s' holds no prompt (one a line)", path);
    if (rc == AS_OK && !(*avg = malloc((size_t)dh * sizeof **avg)))
        rc = as_error_set(err, "out of memory");
    for (int i = 0; rc == AS_OK && i < dh; i++)
        (*avg)[i] = (float)(sum[i] / (double)*n_pos);
    free(line);
    free(sum);
    fclose(f);
    return rc;
}

int as_cmd_ablate(cmd_ctx *c)
{
    as_session *s = c->s;
    const as_config *cfg = &s->model->cfg;
    long l, h;
    char label[96];
    if (c->argc == 3 && !strcmp(c->argv[1], "expert")) {
        long e;
        int hk;
        if (parse_expert(s, c->argv[2], AS_HK_EXPERTS_OUT, &l, &e, &hk, c->err))
            return AS_ERR;
        snprintf(label, sizeof label, "ablate expert %ld.%ld", l, e);
        if (ablated_already(s, hk, (int)e, label, c->err) ||
            as_cmd_add_rule(s, AS_RULE_EXPERT_ZERO, hk, (int)e, -1, NULL, false, label, c->err))
            return AS_ERR;
    } else if (c->argc == 3 && !strcmp(c->argv[1], "mlp")) {
        if (as_cmd_parse_long(c->argv[2], 0, cfg->n_layer - 1, "the layer", &l, c->err))
            return AS_ERR;
        snprintf(label, sizeof label, "ablate mlp %ld", l);
        int hm = as_program_hook_in(s->prog, AS_HK_MLP_OUT, (int)l, s->prog->out_stream);
        if (hm < 0)
            return no_block(s, l, c->err);
        if (ablated_already(s, hm, -1, label, c->err) ||
            as_cmd_add_rule(s, AS_RULE_ZERO, hm, -1, -1, NULL, false, label, c->err))
            return AS_ERR;
    } else {
        bool over = c->argc == 5 && !strcmp(c->argv[2], "mean") && !strcmp(c->argv[3], "over");
        char *dot = c->argc == 3 || over ? strchr(c->argv[1], '.') : NULL;
        if (!dot || (strcmp(c->argv[2], "zero") && strcmp(c->argv[2], "mean")))
            return as_error_set(c->err, "usage: ablate LAYER.HEAD zero|mean  or  ablate LAYER.HEAD mean over FILE  or  "
                                "ablate mlp LAYER  or  ablate expert LAYER.EXPERT");
        *dot = '\0';
        if (as_cmd_parse_long(c->argv[1], 0, cfg->n_layer - 1, "the layer", &l, c->err) ||
            as_cmd_parse_long(dot + 1, 0, cfg->n_head - 1, "the head", &h, c->err))
            return AS_ERR;
        /* the context's own heads: an encoder-decoder's decoder self-attention */
        int hz = as_program_hook_in(s->prog, AS_HK_Z, (int)l, s->prog->out_stream);
        if (hz < 0)
            return no_block(s, l, c->err);
        bool mean = !strcmp(c->argv[2], "mean");
        if (over) {
            const char *base = strrchr(c->argv[4], '/');
            snprintf(label, sizeof label, "ablate %ld.%ld mean over %.40s", l, h, base ? base + 1 : c->argv[4]);
        } else {
            snprintf(label, sizeof label, "ablate %ld.%ld %s", l, h, c->argv[2]);
        }
        if (ablated_already(s, hz, (int)h, label, c->err))
            return AS_ERR;
        float *avg = NULL;
        if (over) {
            int np = 0;
            long npos = 0;
            if (s->prog->source_stream >= 0)
                return as_error_set(c->err, "%s: the prompts would each need a source too on %s, an encoder-decoder",
                                    label, s->model->cfg.name);
            if (head_mean_over(s, c->argv[4], hz, (int)h, &avg, &np, &npos, c->err))
                return as_error_prefix(c->err, "%s", label);
            fprintf(s->out, "mean of head %ld.%ld's hook_z over %d prompt%s (%ld positions) of %s\n", l, h, np,
                    np == 1 ? "" : "s", npos, c->argv[4]);
        } else if (mean) {
            /* The head's mean over the context's positions in the clean
             * run (no intervention): the one captured, if it is that run,
             * else a clean run made for it. */
            struct head_mean m = {hz, (int)h, NULL};
            if (as_cmd_require_tokens(s, c->err))
                return AS_ERR;
            int rc = as_interp_state_clean(s->it) && as_interp_logits(s->it) ? head_mean(s, &m, c->err)
                                                                            : as_cmd_rerun(s, true, head_mean, &m, c->err);
            if (rc)
                return as_error_prefix(c->err, "mean ablation needs the head's values in the clean run");
            avg = m.avg;
        }
        int rc = as_cmd_add_rule(s, mean ? AS_RULE_SET : AS_RULE_ZERO, hz, (int)h, -1, avg, false, label, c->err);
        free(avg);
        if (rc)
            return AS_ERR;
    }
    fprintf(s->out, "%s: in effect from now on (what is read next is computed with it; `compare` runs with and without)\n", label);
    return AS_OK;
}

int as_cmd_unablate(cmd_ctx *c)
{
    int n = as_interp_clear_rules(c->s->it, false);
    fprintf(c->s->out, "removed %d intervention%s (ablations, patches, routes off): what is read next is computed "
            "without %s\n", n, n == 1 ? "" : "s", n == 1 ? "it" : "them");
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
        as_cmd_label(s, top[k], 0, piece, sizeof piece);
        fprintf(s->out, "  %s %.4f", piece, probs[top[k]]);
    }
    fprintf(s->out, "\n");
}

static int copy_logits(as_session *s, void *dst, as_error *err)
{
    const float *logits = as_cmd_final_logits(s, err);
    if (!logits)
        return AS_ERR;
    memcpy(dst, logits, (size_t)s->model->cfg.n_vocab * sizeof *logits);
    return AS_OK;
}

/* Clean run (rules off) against the run with rules; leaves the latter captured. */
int as_cmd_compare_runs(as_session *s, as_error *err)
{
    int V = s->model->cfg.n_vocab;
    float *clean = malloc((size_t)V * sizeof *clean), *pc = malloc((size_t)V * sizeof *pc),
          *pa = malloc((size_t)V * sizeof *pa);
    int rc = clean && pc && pa ? AS_OK : as_error_set(err, "out of memory");
    if (rc == AS_OK)
        rc = as_cmd_rerun(s, true, copy_logits, clean, err);
    if (rc == AS_OK)
        rc = as_cmd_rerun(s, false, NULL, NULL, err);
    const float *logits = rc == AS_OK ? as_cmd_final_logits(s, err) : NULL;
    /* non-finite logits give no KL and no ranking: said, with where the pass first went wrong */
    int pos = s->prog->logits_pos >= 0 ? s->prog->logits_pos : s->it->out->n_tokens - 1;
    const char *bad = !logits ? NULL
                      : as_cmd_nonfinite_logits(s, clean, pos, err) ? "the clean"
                      : as_cmd_nonfinite_logits(s, logits, pos, err) ? "the changed" : NULL;
    if (bad) {
        as_error_prefix(err, "compare: %s run", bad);
        logits = NULL;
    }
    if (!logits) {
        rc = AS_ERR;
    } else {
        as_probs(clean, V, pc);
        as_probs(logits, V, pa);
        /* where the logits are read: the last position, or a classifier's CLS (named) */
        char at[48] = "";
        if (s->prog->logits_pos >= 0) {
            char name[32];
            as_cmd_position_label(s, s->prog->logits_pos, name, sizeof name);
            snprintf(at, sizeof at, " (%s)", name);
        }
        fprintf(s->out, "at position %d%s, with %d rule%s: KL(clean || changed) = %.6f nats\n",
                s->prog->logits_pos >= 0 ? s->prog->logits_pos : s->it->out->n_tokens - 1, at, s->it->n_rules, s->it->n_rules == 1 ? "" : "s", kl_div(pc, pa, V));
        print_top(s, "clean  ", clean, pc);
        print_top(s, "changed", logits, pa);
        if (s->has_metric && as_cmd_metric_final(s, "compare", NULL) == AS_OK) {
            double a = as_cmd_metric_of(s, clean), b = as_cmd_metric_of(s, logits);
            char d[200];
            as_cmd_metric_describe(s, d, sizeof d);
            if (s->metric_kind == AS_METRIC_DIFF) /* the line as it always was */
                fprintf(s->out, "logit difference (metric): clean %.4f, changed %.4f, change %+.4f\n", a, b, b - a);
            else
                fprintf(s->out, "metric (%s): clean %.6g, changed %.6g, change %+.6g\n", d, a, b, b - a);
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
        c->s->metric_kind = AS_METRIC_DIFF;
        c->s->metric_pos = -1;
    }
    return as_cmd_compare_runs(c->s, c->err);
}
