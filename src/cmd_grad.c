/* cmd_grad: the metric (`metric`: a logit difference, a token's logit,
 * probability or log-probability at a position) and the commands that
 * differentiate it through the backward pass (backward.h): `grad HOOK`
 * (d metric / d hook at every position) and `saliency` (gradient × input
 * on the token embeddings, or integrated gradients from a zero baseline). */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/backward.h"
#include "session_internal.h"

static const char *const kind_word[] = {[AS_METRIC_DIFF] = "diff", [AS_METRIC_LOGPROB] = "logprob",
                                        [AS_METRIC_PROB] = "prob", [AS_METRIC_LOGIT] = "logit"};

/* The position the metric reads: its own, or where the logits are read. */
static int metric_pos(const as_session *s)
{
    if (s->metric_pos >= 0)
        return s->metric_pos;
    return s->prog->logits_pos >= 0 ? s->prog->logits_pos : s->it->out->n_tokens - 1;
}

void as_cmd_metric_describe(const as_session *s, char *buf, size_t cap)
{
    char a[64], b[64], at[48];
    as_cmd_label(s, s->metric[0], 0, a, sizeof a);
    as_cmd_label(s, s->metric[1], 0, b, sizeof b);
    if (s->metric_pos >= 0)
        snprintf(at, sizeof at, "position %d", s->metric_pos);
    else
        snprintf(at, sizeof at, "%s", s->prog->logits_pos >= 0 ? "CLS (where the classes are read)" : "the last position");
    switch (s->metric_kind) {
    case AS_METRIC_DIFF: snprintf(buf, cap, "logit[%s] - logit[%s] at %s", a, b, at); break;
    case AS_METRIC_LOGPROB: snprintf(buf, cap, "log p(%s) at %s", a, at); break;
    case AS_METRIC_PROB: snprintf(buf, cap, "p(%s) at %s", a, at); break;
    case AS_METRIC_LOGIT: snprintf(buf, cap, "logit[%s] at %s", a, at); break;
    }
}

/* log Σ exp(l) in float64. */
static double log_sum_exp(const float *l, int V)
{
    double mx = l[0], sum = 0;
    for (int j = 1; j < V; j++)
        mx = l[j] > mx ? l[j] : mx;
    for (int j = 0; j < V; j++)
        sum += exp(l[j] - mx);
    return mx + log(sum);
}

double as_cmd_metric_of(const as_session *s, const float *l)
{
    int V = s->model->cfg.n_vocab;
    switch (s->metric_kind) {
    case AS_METRIC_DIFF: return (double)l[s->metric[0]] - l[s->metric[1]];
    case AS_METRIC_LOGIT: return l[s->metric[0]];
    case AS_METRIC_LOGPROB: return l[s->metric[0]] - log_sum_exp(l, V);
    case AS_METRIC_PROB: return exp(l[s->metric[0]] - log_sum_exp(l, V));
    }
    return NAN;
}

/* d metric / d logits of one row. */
static void metric_seed(const as_session *s, const float *l, float *d)
{
    int V = s->model->cfg.n_vocab, t = s->metric[0];
    memset(d, 0, (size_t)V * sizeof *d);
    if (s->metric_kind == AS_METRIC_DIFF) {
        d[s->metric[0]] += 1;
        d[s->metric[1]] -= 1;
        return;
    }
    if (s->metric_kind == AS_METRIC_LOGIT) {
        d[t] = 1;
        return;
    }
    double lse = log_sum_exp(l, V), pt = exp(l[t] - lse);
    /* log p_t: δ_tj - p_j;  p_t: p_t (δ_tj - p_j) */
    double f = s->metric_kind == AS_METRIC_PROB ? pt : 1.0;
    for (int j = 0; j < V; j++)
        d[j] = (float)(-f * exp(l[j] - lse));
    d[t] = (float)(f * (1 - pt));
}

int as_cmd_metric_final(const as_session *s, const char *who, as_error *err)
{
    if (!s->has_metric)
        return as_error_set(err, "%s needs a metric: `metric TOKEN_A TOKEN_B` (or `metric logprob TOKEN`) first", who);
    int fin = s->prog->logits_pos >= 0 ? s->prog->logits_pos : s->it->out->n_tokens - 1;
    if (s->metric_pos >= 0 && s->metric_pos != fin)
        return as_error_set(err, "%s reads the logits at position %d only, and the metric is at position %d "
                            "(`metric ...` without a position reads it there)", who, fin, s->metric_pos);
    return AS_OK;
}

int as_cmd_metric(cmd_ctx *c)
{
    as_session *s = c->s;
    const char *usage = "usage: metric TOKEN_A TOKEN_B | metric logprob|prob|logit TOKEN [POS] (tokens as ids or "
                        "pieces; a token whose text is one of those words, quoted)";
    if (c->argc < 2)
        return as_error_set(c->err, "%s", usage);
    /* a keyword, unless typed in quotes (then it is a token's text) */
    const char *r = c->rest ? c->rest : "";
    while (isspace((unsigned char)*r))
        r++;
    bool quoted = *r == '"' || *r == '\'';
    int kind = AS_METRIC_DIFF;
    for (int k = AS_METRIC_LOGPROB; k <= AS_METRIC_LOGIT && !quoted; k++)
        if (!strcmp(c->argv[1], kind_word[k]))
            kind = k;
    int32_t t[2] = {0, 0};
    long pos = -1;
    if (kind == AS_METRIC_DIFF) {
        if (c->argc != 3)
            return as_error_set(c->err, "%s", usage);
        if (as_cmd_parse_token(s, c->argv[1], &t[0], c->err) || as_cmd_parse_token(s, c->argv[2], &t[1], c->err))
            return AS_ERR;
    } else {
        if (c->argc != 3 && c->argc != 4)
            return as_error_set(c->err, "%s", usage);
        if (as_cmd_parse_token(s, c->argv[2], &t[0], c->err))
            return AS_ERR;
        if (c->argc == 4 && as_cmd_parse_long(c->argv[3], 0, s->it->n_ctx - 1, "metric position", &pos, c->err))
            return AS_ERR;
    }
    s->metric[0] = t[0], s->metric[1] = t[1];
    s->metric_kind = kind;
    s->metric_pos = (int)pos;
    s->has_metric = true;
    char d[200];
    as_cmd_metric_describe(s, d, sizeof d);
    fprintf(s->out, "metric: %s\n", d);
    return AS_OK;
}

/* ---------------------------------------------------------------- the backward pass of the metric */

typedef struct grad_job {
    as_grads g;
    double value;    /* the metric */
    bool done;
    const as_capture *cap; /* where the forward values were read: the session's, or the recomputation's */
    as_side_run side;      /* the recomputation, when the session's capture lacked them */
} grad_job;

static void job_free(grad_job *j)
{
    as_grads_free(&j->g);
    as_cmd_side_run_free(&j->side);
    memset(&j->side, 0, sizeof j->side);
}

/* The pass again, with the default budget and the same input and
 * interventions, when the capture lacks what the backward pass reads
 * (a small --capture-mb). A program of one token stream only: another
 * stream's input (a source, an image) is not carried over. */
static int recompute(as_session *s, grad_job *j, as_error *err)
{
    const as_program *p = s->prog;
    const as_interp *it = s->it;
    as_stop stop;
    if (p->n_streams != 1 || p->streams[0].input != AS_INPUT_TOKENS)
        return AS_OK; /* the check then says which value is missing */
    size_t budget = as_capture_default_mb() << 20;
    if (as_capture_new(&j->side.cap, p, budget, err) || as_interp_new(&j->side.it, p, j->side.cap, err))
        return AS_ERR;
    as_interp *r = j->side.it;
    r->interrupt = it->interrupt;
    const as_stream_state *st = &it->st[0];
    if (as_interp_set_tokens(r, st->tokens, st->n_tokens, err))
        return AS_ERR;
    bool typed = false;
    for (int i = 0; i < st->n_tokens; i++)
        typed = typed || st->types[i] != 0;
    if (typed && as_interp_set_types(r, 0, st->types, st->n_tokens, err))
        return AS_ERR;
    for (int k = 0; k < it->n_rules && !it->rules_off; k++)
        if (it->rules[k].kind != AS_RULE_WATCH &&
            as_interp_add_rule(r, &it->rules[k], (size_t)as_rule_len(it, &it->rules[k]), err))
            return AS_ERR;
    if (as_interp_run(r, AS_RUN_FINISH, 0, &stop, err))
        return AS_ERR;
    return stop == AS_STOP_INTERRUPT ? as_error_set(err, "interrupted") : AS_OK;
}

/* The metric and its gradient at every hook, over the computed state. */
static int grad_now(as_session *s, void *ctx, as_error *err)
{
    grad_job *j = ctx;
    const as_program *p = s->prog;
    job_free(j);
    if (p->unembed < 0) /* an embedding model: no unembedding op to read (ops[-1] before this check) */
        return as_error_set(err, "%s gives no logits over its vocabulary to differentiate", s->model->cfg.name);
    int seed = p->ops[p->unembed].out, pos = metric_pos(s), n = s->it->out->n_tokens, V = s->model->cfg.n_vocab;
    const as_interp *it = s->it;
    if (!as_backward_captured(it, seed)) {
        if (recompute(s, j, err))
            return AS_ERR;
        if (j->side.it)
            it = j->side.it;
    }
    j->cap = it->cap;
    if (pos >= n)
        return as_error_set(err, "the metric is at position %d, but the context has %d tokens", pos, n);
    if (p->hooks[seed].stream != p->out_stream || p->hooks[seed].width != V)
        return as_error_set(err, "%s gives no logits over its vocabulary to differentiate", s->model->cfg.name);
    const float *l = NULL;
    if (as_capture_has(it->cap, seed) && it->cap->filled[seed] > pos)
        l = as_capture_row(it->cap, seed, pos);
    else if (pos == (p->logits_pos >= 0 ? p->logits_pos : n - 1))
        l = as_interp_logits(it);
    if (!l)
        return as_error_set(err, "the logits at position %d are not captured (a larger budget, --capture-mb N, keeps "
                            "them)", pos);
    if (as_backward_check(it, seed, err))
        return AS_ERR;
    float *sg = calloc((size_t)n * (size_t)V, sizeof *sg);
    if (!sg)
        return as_error_set(err, "out of memory");
    metric_seed(s, l, sg + (size_t)pos * V);
    j->value = as_cmd_metric_of(s, l);
    int rc = as_backward(it, seed, sg, &j->g, err);
    free(sg);
    j->done = rc == AS_OK;
    return rc;
}

static bool state_complete(const as_session *s)
{
    const as_interp *it = s->it;
    if (it->in_pass || as_interp_stale(it) || it->out->n_tokens == 0)
        return false;
    for (int st = 0; st < s->prog->n_streams; st++)
        if (it->st[st].n_done != it->st[st].n_tokens)
            return false;
    return true;
}

/* The metric's gradient over the current input: at once when the pass is
 * complete, else after running it. */
static int run_grad(as_session *s, grad_job *j, as_error *err)
{
    memset(j, 0, sizeof *j);
    if (!s->has_metric)
        return as_error_set(err, "no metric: set one first (`metric logprob TOKEN`, `metric TOKEN_A TOKEN_B`)");
    if (state_complete(s))
        return grad_now(s, j, err);
    return as_cmd_rerun(s, false, grad_now, j, err);
}

/* Copies the gradients (and forward values) of the requested hooks out of a finished job. */
static int copy_hooks(const as_session *s, const grad_job *j, as_grad_req *q, as_error *err)
{
    for (int k = 0; k < q->n; k++) {
        int h = q->hooks[k];
        const as_hook *hk = &s->prog->hooks[h];
        int n = j->g.n_pos[hk->stream];
        size_t count = (size_t)n * (size_t)hk->width;
        if (hk->is_attn)
            return as_error_set(err, "%s: an attention hook's gradient is not a row per position", hk->name);
        q->grads[k] = calloc(count ? count : 1, sizeof **q->grads);
        if (!q->grads[k])
            return as_error_set(err, "out of memory");
        if (j->g.g[h])
            memcpy(q->grads[k], j->g.g[h], count * sizeof **q->grads);
        if (q->acts) {
            if (!as_capture_has(j->cap, h) || j->cap->filled[h] < n)
                return as_error_set(err, "%s is not captured (a larger budget, --capture-mb N, keeps it)", hk->name);
            q->acts[k] = malloc((count ? count : 1) * sizeof **q->acts);
            if (!q->acts[k])
                return as_error_set(err, "out of memory");
            memcpy(q->acts[k], as_capture_row(j->cap, h, 0), count * sizeof **q->acts);
        }
        q->n_pos = n;
    }
    q->value = j->value;
    return AS_OK;
}

int as_cmd_grad_reader(as_session *s, void *ctx, as_error *err)
{
    grad_job j;
    memset(&j, 0, sizeof j);
    int rc = grad_now(s, &j, err);
    if (rc == AS_OK)
        rc = copy_hooks(s, &j, ctx, err);
    job_free(&j);
    return rc;
}

int as_cmd_grad_hooks(as_session *s, const int *hooks, int n, float **grads, float **acts, int *n_pos, double *value,
                      as_error *err)
{
    as_grad_req q = {.hooks = hooks, .n = n, .grads = grads, .acts = acts};
    grad_job j;
    int rc = run_grad(s, &j, err);
    if (rc == AS_OK)
        rc = copy_hooks(s, &j, &q, err);
    job_free(&j);
    *n_pos = q.n_pos, *value = q.value;
    return rc;
}

int as_cmd_grad(cmd_ctx *c)
{
    as_session *s = c->s;
    if (c->argc < 2 || c->argc > 3)
        return as_error_set(c->err, "usage: grad HOOK [FILE.npy]");
    if (as_cmd_require_tokens(s, c->err))
        return AS_ERR;
    int h = as_cmd_find_hook(s, c->argv[1], c->err);
    if (h < 0)
        return AS_ERR;
    const char *path = c->argc == 3 ? c->argv[2] : NULL;
    if (path && (strlen(path) < 4 || strcasecmp(path + strlen(path) - 4, ".npy")))
        return as_error_set(c->err, "grad writes a .npy array, not '%s'", path);
    grad_job j;
    if (run_grad(s, &j, c->err)) {
        job_free(&j);
        return AS_ERR;
    }
    const as_hook *hk = &s->prog->hooks[h];
    size_t count = as_grads_count(&j.g, h);
    float *g = calloc(count ? count : 1, sizeof *g);
    int rc = g ? AS_OK : as_error_set(c->err, "out of memory");
    if (g && j.g.g[h])
        memcpy(g, j.g.g[h], count * sizeof *g);
    char d[200];
    as_cmd_metric_describe(s, d, sizeof d);
    int n = j.g.n_pos[hk->stream];
    if (rc == AS_OK && path) {
        size_t shape[4];
        int nd = 0;
        if (hk->is_attn) {
            const as_attn *a = &s->prog->attn[hk->attn];
            shape[0] = (size_t)hk->width, shape[1] = (size_t)j.g.n_pos[a->q_stream],
            shape[2] = (size_t)j.g.n_pos[a->kv_stream], nd = 3;
        } else {
            shape[nd++] = (size_t)n;
            for (int k = 0; k < hk->n_dims; k++)
                shape[nd++] = (size_t)hk->dims[k];
        }
        char what[300];
        snprintf(what, sizeof what, "d(%s) / d %s", d, hk->name);
        rc = as_cmd_write_npy(s, path, AS_NPY_F32, g, shape, nd, what, c->err);
    } else if (rc == AS_OK) {
        fprintf(s->out, "d(%s) / d %s   (metric %.6g)\n", d, hk->name, j.value);
        if (!j.g.g[h])
            fprintf(s->out, "no gradient reaches %s: the metric does not depend on it, or only through a discrete "
                    "choice (the experts a router picks)\n", hk->name);
        int rows = hk->is_attn ? j.g.n_pos[s->prog->attn[hk->attn].q_stream] : n;
        if (j.g.g[h])
            fprintf(s->out, "pos  token           |grad|        largest entries (index: value)\n");
        for (int i = 0; i < rows && j.g.g[h]; i++) {
            /* a position's values: its row, or for attention every head's row of query i */
            int w = hk->width, nk = 0, H = 1;
            if (hk->is_attn) {
                const as_attn *a = &s->prog->attn[hk->attn];
                nk = j.g.n_pos[a->kv_stream], H = hk->width, w = nk;
            }
            double ss = 0;
            int top[3] = {-1, -1, -1};
            float tv[3] = {0, 0, 0};
            for (int hd = 0; hd < H; hd++)
                for (int k = 0; k < w; k++) {
                    float v = hk->is_attn ? g[((size_t)hd * rows + i) * nk + k] : g[(size_t)i * w + k];
                    ss += (double)v * v;
                    int idx = hd * w + k;
                    for (int t = 0; t < 3; t++)
                        if (top[t] < 0 || fabsf(v) > fabsf(tv[t])) {
                            for (int u = 2; u > t; u--)
                                top[u] = top[u - 1], tv[u] = tv[u - 1];
                            top[t] = idx, tv[t] = v;
                            break;
                        }
                }
            char lab[48];
            as_cmd_stream_label(s, hk->stream, i, lab, sizeof lab);
            fprintf(s->out, "%3d  %-14s  %12.6g ", i, lab, sqrt(ss));
            for (int t = 0; t < 3 && top[t] >= 0; t++) {
                if (hk->is_attn)
                    fprintf(s->out, "  h%d k%d: %+.4g", top[t] / w, top[t] % w, tv[t]);
                else
                    fprintf(s->out, "  %d: %+.4g", top[t], tv[t]);
            }
            fputc('\n', s->out);
        }
    }
    free(g);
    job_free(&j);
    return rc;
}

/* ---------------------------------------------------------------- saliency */

/* The hook of the input embeddings: the token embedding's (TransformerLens's
 * hook_embed), or -1. */
static int embed_hook(const as_program *p)
{
    for (int o = 0; o < p->n_ops; o++)
        if (p->ops[o].kind == AS_OP_EMBED && p->hooks[p->ops[o].out].stream == p->out_stream)
            return p->ops[o].out;
    return -1;
}

int as_cmd_saliency(cmd_ctx *c)
{
    as_session *s = c->s;
    long steps = 0;
    const char *path = NULL;
    for (int a = 1; a < c->argc; a++) {
        if (!strncmp(c->argv[a], "ig=", 3)) {
            if (as_cmd_parse_long(c->argv[a] + 3, 1, 1000, "ig steps", &steps, c->err))
                return AS_ERR;
        } else if (!path && strlen(c->argv[a]) >= 4 && !strcasecmp(c->argv[a] + strlen(c->argv[a]) - 4, ".npy")) {
            path = c->argv[a];
        } else {
            return as_error_set(c->err, "saliency: '%s' is neither ig=STEPS nor a FILE.npy (usage: saliency [ig=STEPS] "
                                "[FILE.npy])", c->argv[a]);
        }
    }
    if (as_cmd_require_tokens(s, c->err))
        return AS_ERR;
    int he = embed_hook(s->prog);
    if (he < 0)
        return as_error_set(c->err, "%s has no token embedding on its output stream to attribute to",
                            s->model->cfg.name);
    grad_job j;
    if (run_grad(s, &j, c->err)) {
        job_free(&j);
        return AS_ERR;
    }
    int n = j.g.n_pos[s->prog->out_stream], w = s->prog->hooks[he].width;
    double full = j.value, base = NAN;
    float *x = malloc((size_t)n * w * sizeof *x);
    double *sal = calloc((size_t)n, sizeof *sal), *gsum = calloc((size_t)n * w, sizeof *gsum);
    int rc = x && sal && gsum ? AS_OK : as_error_set(c->err, "out of memory");
    if (rc == AS_OK && !as_capture_has(j.cap, he))
        rc = as_error_set(c->err, "%s is not captured (a larger budget, --capture-mb N, keeps it)",
                          s->prog->hooks[he].name);
    if (rc == AS_OK) {
        memcpy(x, as_capture_row(j.cap, he, 0), (size_t)n * w * sizeof *x);
        if (steps == 0)
            for (size_t k = 0; k < (size_t)n * w; k++)
                gsum[k] = j.g.g[he] ? j.g.g[he][k] : 0;
    }
    job_free(&j);
    /* Integrated gradients: the embeddings scaled by (k + 1/2) / STEPS
     * (the midpoint rule), each through a SET rule on hook_embed, the
     * gradients averaged; the baseline (all zeros) run for completeness. */
    int n_rules = s->it->n_rules;
    for (long k = 0; rc == AS_OK && k <= steps && steps > 0; k++) {
        double alpha = k < steps ? (k + 0.5) / (double)steps : 0.0;
        float *v = malloc((size_t)n * w * sizeof *v);
        if (!v) {
            rc = as_error_set(c->err, "out of memory");
            break;
        }
        for (size_t t = 0; t < (size_t)n * w; t++)
            v[t] = (float)(alpha * x[t]);
        as_rule r = {.kind = AS_RULE_SET, .hook = he, .head = -1, .pos = -1, .values = v, .per_position = true,
                     .n_pos = n};
        snprintf(r.label, sizeof r.label, "saliency: %s x %.4f", s->prog->hooks[he].name, alpha);
        rc = as_interp_add_rule(s->it, &r, (size_t)w, c->err);
        free(v);
        if (rc == AS_OK)
            rc = as_cmd_rerun(s, false, grad_now, &j, c->err);
        else
            memset(&j, 0, sizeof j);
        as_interp_truncate_rules(s->it, n_rules);
        if (rc == AS_OK && k < steps && j.g.g[he])
            for (size_t t = 0; t < (size_t)n * w; t++)
                gsum[t] += j.g.g[he][t] / (double)steps;
        if (rc == AS_OK && k == steps)
            base = j.value;
        job_free(&j);
        if (rc == AS_OK && as_cmd_interrupted(s))
            rc = as_error_set(c->err, "interrupted");
    }
    if (steps > 0)
        as_cmd_rerun(s, false, NULL, NULL, NULL); /* the state as it was, without the trial rules */
    if (rc == AS_OK) {
        double total = 0;
        for (int i = 0; i < n; i++) {
            for (int k = 0; k < w; k++)
                sal[i] += gsum[(size_t)i * w + k] * x[(size_t)i * w + k];
            total += sal[i];
        }
        char d[200];
        as_cmd_metric_describe(s, d, sizeof d);
        float *keep = malloc((size_t)n * sizeof *keep); /* for the view's token strip */
        if (keep) {
            for (int i = 0; i < n; i++)
                keep[i] = (float)sal[i];
            free(s->saliency);
            s->saliency = keep, s->saliency_n = n, s->saliency_gen = s->it->gen;
        }
        if (path) {
            float *f = malloc((size_t)n * sizeof *f);
            size_t shape[1] = {(size_t)n};
            for (int i = 0; f && i < n; i++)
                f[i] = (float)sal[i];
            char what[300];
            snprintf(what, sizeof what, "%s of %s per token", steps ? "integrated gradients" : "gradient x input", d);
            rc = f ? as_cmd_write_npy(s, path, AS_NPY_F32, f, shape, 1, what, c->err) : as_error_set(c->err, "out of memory");
            free(f);
        } else {
            if (steps)
                fprintf(s->out, "integrated gradients (%ld steps, zero baseline on %s) of %s\n", steps,
                        s->prog->hooks[he].name, d);
            else
                fprintf(s->out, "gradient x input on %s, of %s\n", s->prog->hooks[he].name, d);
            fprintf(s->out, "pos  token             saliency\n");
            for (int i = 0; i < n; i++) {
                char lab[48];
                as_cmd_position_label(s, i, lab, sizeof lab);
                fprintf(s->out, "%3d  %-14s  %+10.5f\n", i, lab, sal[i]);
            }
            fprintf(s->out, "sum %+.6f; metric %.6f", total, full);
            if (steps)
                fprintf(s->out, ", at the baseline %.6f, difference %+.6f", base, full - base);
            fputc('\n', s->out);
            if (steps && fabs(total - (full - base)) > 0.05 * fabs(full - base))
                fprintf(s->out, "the sum misses the metric's change by %.0f%%: take more steps (a norm that jumps near "
                        "the zero input, as RMSNorm does without position embeddings, needs many)\n",
                        100 * fabs(total - (full - base)) / fmax(fabs(full - base), 1e-30));
        }
    }
    free(x);
    free(sal);
    free(gsum);
    return rc;
}
