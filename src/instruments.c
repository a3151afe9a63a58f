#include "attnscope/instruments.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/kernels.h"
#include "attnscope/program.h"
#include "attnscope/sampler.h"
#include "attnscope/weight.h"

void as_lens_logits(const as_program *p, const float *resid, float *logits)
{
    as_lens_logits_rows(p, &resid, 1, logits);
}

/* The head's ops before its final norm (an encoder's dense layer and
 * GELU, as the interpreter runs them) on n rows of width d, into x
 * (n x d: the dense layer is d to d). */
static void head_before_norm(const as_program *p, const float *const *resid, int n, int d, float *x, float *tmp)
{
    for (int i = 0; i < n; i++)
        memcpy(x + (size_t)i * d, resid[i], (size_t)d * sizeof *x);
    for (int o = p->head_first; o >= 0 && o < p->final_norm - 1; o++) {
        const as_op *op = &p->ops[o];
        if (op->kind == AS_OP_LINEAR)
            as_linear(x, n, &op->w, op->b, tmp);
        else if (op->kind == AS_OP_GELU && op->gelu == AS_GELU_ERF)
            as_gelu_erf(x, tmp, (long)n * d);
        else if (op->kind == AS_OP_GELU)
            as_gelu_tanh(x, tmp, (long)n * d);
        else
            continue;
        memcpy(x, tmp, (size_t)n * (size_t)d * sizeof *x);
    }
}

int as_lens_logits_rows(const as_program *p, const float *const *resid, int n, float *logits)
{
    const as_op *norm = &p->ops[p->final_norm], *unembed = &p->ops[p->unembed];
    int d = norm->n_in, V = unembed->n_out;
    bool rms = norm->norm == AS_NORM_RMS;
    bool head = p->head_first >= 0;
    float *x = malloc((size_t)n * (size_t)d * (head ? 3 : 1) * sizeof *x);
    if (!x) {
        memset(logits, 0, (size_t)n * (size_t)V * sizeof *logits);
        return AS_ERR;
    }
    float *h = x + (size_t)n * d; /* the head's rows before its norm, when it has ops there */
    if (head)
        head_before_norm(p, resid, n, d, h, h + (size_t)n * d);
    for (int i = 0; i < n; i++) {
        const float *in = head ? h + (size_t)i * d : resid[i];
        as_norm_stat st;
        as_norm_measure(in, d, norm->eps, rms, &st);
        as_norm_apply(in, d, &st, rms, norm->nw, norm->b, x + (size_t)i * d);
    }
    /* Several rows: one matrix product, one pass over the unembedding. */
    as_linear(x, n, &unembed->w, unembed->b, logits);
    if (unembed->softcap > 0)
        as_softcap(logits, logits, (long)n * V, unembed->softcap);
    free(x);
    return AS_OK;
}

/* ---- direct logit attribution ---- */

typedef struct dla_ctx {
    const as_op *norm;  /* the final norm */
    const float *u;     /* W_U[token] */
    double mean_w;      /* mean of u * w, for LayerNorm's centring */
    float scale;
    bool rms;
} dla_ctx;

/* A component c's share: Σ u_i w_i (c_i - mean(c)) / scale; the centring
 * term vanishes for RMSNorm. */
static double share(const dla_ctx *c, const float *v)
{
    int d = c->norm->n_in;
    const float *w = c->norm->nw;
    double dot = 0, mean = 0;
    for (int i = 0; i < d; i++) {
        dot += (double)c->u[i] * w[i] * v[i];
        mean += v[i];
    }
    if (!c->rms)
        dot -= c->mean_w * d * (mean / d);
    return dot / c->scale;
}

static int add_term(as_dla *out, const char *name, int layer, int head, double value)
{
    as_dla_term *t = realloc(out->terms, (size_t)(out->n_terms + 1) * sizeof *t);
    if (!t)
        return AS_ERR;
    out->terms = t;
    t += out->n_terms++;
    snprintf(t->name, sizeof t->name, "%s", name);
    t->layer = layer;
    t->head = head;
    t->value = value;
    return AS_OK;
}

static int need(const as_capture *cap, as_hook_kind kind, int layer, int pos, int *h, as_error *err)
{
    *h = as_program_hook(cap->prog, kind, layer);
    if (*h < 0)
        return AS_OK; /* this architecture has no such hook */
    if (!as_capture_has(cap, *h) || cap->filled[*h] <= pos)
        return as_error_set(err, "direct logit attribution needs %s at position %d, which is not captured",
                            cap->prog->hooks[*h].name, pos);
    return AS_OK;
}

static int dla_layer(const dla_ctx *c, const as_capture *cap, int l, int pos, float *tmp, as_dla *out,
                     as_error *err)
{
    int hz, hm;
    char name[48];
    if (need(cap, AS_HK_Z, l, pos, &hz, err) || need(cap, AS_HK_MLP_OUT, l, pos, &hm, err))
        return AS_ERR;
    const as_hook *zh = &cap->prog->hooks[hz];
    int ha = as_program_hook(cap->prog, AS_HK_ATTN_OUT, l);
    const as_op *o = as_program_producer(cap->prog, ha), *bias_op = o;
    if (o && o->kind == AS_OP_HEAD_SUM) /* built with attn.hook_result: HEAD_OUT holds W_O, HEAD_SUM the bias */
        o = as_program_producer(cap->prog, o->in[0]);
    if (!o || (o->kind != AS_OP_LINEAR && o->kind != AS_OP_HEAD_OUT) || o->in[0] != hz) {
        /* A norm between z · W_O and the residual stream (Gemma): the
         * heads' shares are not additive, the attention's total is. */
        if (need(cap, AS_HK_ATTN_OUT, l, pos, &ha, err))
            return AS_ERR;
        snprintf(name, sizeof name, "L%d.attn", l);
        if (add_term(out, name, l, -1, share(c, as_capture_row(cap, ha, pos))))
            return as_error_set(err, "out of memory");
        snprintf(name, sizeof name, "L%d.mlp", l);
        if (add_term(out, name, l, -1, share(c, as_capture_row(cap, hm, pos))))
            return as_error_set(err, "out of memory");
        return AS_OK;
    }
    int d = o->n_out, H = zh->dims[0], dh = zh->dims[1];
    const float *z = as_capture_row(cap, hz, pos);
    float *wrow = tmp + (size_t)H * d;
    /* head h's output: W_O[:, h·dh:(h+1)·dh] · z_h, for every head as W_O's
     * rows are decoded one by one */
    for (int j = 0; j < d; j++) {
        as_weight_row(&o->w, j, wrow);
        for (int h = 0; h < H; h++) {
            double acc = 0;
            for (int i = 0; i < dh; i++)
                acc += (double)wrow[h * dh + i] * z[h * dh + i];
            tmp[(size_t)h * d + j] = (float)acc;
        }
    }
    for (int h = 0; h < H; h++) {
        snprintf(name, sizeof name, "L%d.H%d", l, h);
        if (add_term(out, name, l, h, share(c, tmp + (size_t)h * d)))
            return as_error_set(err, "out of memory");
    }
    if (bias_op->b) {
        snprintf(name, sizeof name, "L%d.attn_bias", l);
        if (add_term(out, name, l, -1, share(c, bias_op->b)))
            return as_error_set(err, "out of memory");
    }
    snprintf(name, sizeof name, "L%d.mlp", l);
    if (add_term(out, name, l, -1, share(c, as_capture_row(cap, hm, pos))))
        return as_error_set(err, "out of memory");
    return AS_OK;
}

int as_dla_compute(const as_capture *cap, const int32_t *tokens, int pos, int32_t token, as_dla *out,
                   as_error *err)
{
    const as_program *p = cap->prog;
    const as_op *norm = &p->ops[p->final_norm], *unembed = &p->ops[p->unembed];
    int d = norm->n_in, he, hp, hs;
    memset(out, 0, sizeof *out);
    (void)tokens;
    /* the token embedding, or a ViT's patch embedding ([CLS] at position 0) */
    as_hook_kind ek = as_program_hook(p, AS_HK_EMBED, -1) >= 0 ? AS_HK_EMBED : AS_HK_PATCH_EMBED;
    if (need(cap, ek, -1, pos, &he, err) || need(cap, AS_HK_POS_EMBED, -1, pos, &hp, err) ||
        need(cap, AS_HK_LNF_SCALE, -1, pos, &hs, err))
        return AS_ERR;
    if (he < 0 || hs < 0)
        return as_error_set(err, "direct logit attribution needs the embeddings and the final norm's scale, "
                                 "which this program has no hooks for");
    /* Room for W_U's row, then each head's output and one row of W_O. */
    size_t widest = (size_t)d * 2;
    for (int a = 0; a < p->n_attn; a++)
        if ((size_t)(p->attn[a].n_head + 1) * (size_t)d > widest)
            widest = (size_t)(p->attn[a].n_head + 1) * (size_t)d;
    float *u = malloc(((size_t)d + widest) * sizeof *u);
    if (!u)
        return as_error_set(err, "out of memory");
    float *tmp = u + d;
    as_weight_row(&unembed->w, token, u);
    dla_ctx c = {norm, u, 0, as_capture_row(cap, hs, pos)[0], norm->norm == AS_NORM_RMS};
    for (int i = 0; i < d; i++)
        c.mean_w += (double)c.u[i] * norm->nw[i] / d;
    int rc = add_term(out, ek == AS_HK_EMBED ? "embed" : "patch_embed", -1, -1, share(&c, as_capture_row(cap, he, pos)));
    if (rc == AS_OK && hp >= 0)
        rc = add_term(out, "pos_embed", -1, -1, share(&c, as_capture_row(cap, hp, pos)));
    if (rc)
        as_error_set(err, "out of memory");
    for (int l = 0; rc == AS_OK && l < p->model->cfg.n_layer; l++)
        rc = dla_layer(&c, cap, l, pos, tmp, out, err);
    for (int i = 0; rc == AS_OK && norm->b && i < d; i++)
        out->constant += (double)c.u[i] * norm->b[i];
    free(u);
    if (rc) {
        as_dla_free(out);
        return AS_ERR;
    }
    int hl = as_program_hook(cap->prog, AS_HK_LOGITS, -1);
    out->logit = as_capture_has(cap, hl) && cap->filled[hl] > pos ? as_capture_row(cap, hl, pos)[token] : NAN;
    /* The terms add up to the logit before a soft-cap (Gemma 2): undo it. */
    if (unembed->softcap > 0 && isfinite(out->logit))
        out->logit = unembed->softcap * atanh(fmin(fmax(out->logit / unembed->softcap, -1 + 1e-7), 1 - 1e-7));
    return AS_OK;
}

void as_dla_free(as_dla *d)
{
    free(d->terms);
    memset(d, 0, sizeof *d);
}

/* ---- head detectors ---- */

const char *as_head_score_name(as_head_score s)
{
    static const char *const names[] = {"previous-token", "first-token", "duplicate-token", "induction",
                                        "next-token"};
    return s < AS_SCORE_COUNT ? names[s] : "?";
}

double as_head_score_of(const as_capture *cap, int hook, int head, const int32_t *tokens, int n,
                        as_head_score kind)
{
    double total = 0;
    int count = 0;
    for (int q = 0; kind == AS_SCORE_NEXT_TOKEN && q + 1 < n; q++) {
        int k0, k1;
        as_capture_attn_visible(cap, hook, q, &k0, &k1);
        if (q + 1 < k1) {
            total += as_capture_attn_row(cap, hook, head, q, NULL)[q + 1];
            count++;
        }
    }
    for (int q = 1; kind != AS_SCORE_NEXT_TOKEN && q < n; q++) {
        const float *p = as_capture_attn_row(cap, hook, head, q, NULL);
        double mass = 0;
        bool counted = false;
        if (kind == AS_SCORE_PREV_TOKEN || kind == AS_SCORE_FIRST_TOKEN) {
            mass = p[kind == AS_SCORE_PREV_TOKEN ? q - 1 : 0];
            counted = true;
        }
        for (int k = 0; (kind == AS_SCORE_DUPLICATE || kind == AS_SCORE_INDUCTION) && k < q; k++) {
            if (tokens[k] != tokens[q])
                continue;
            if (kind == AS_SCORE_DUPLICATE) {
                mass += p[k];
                counted = true;
            } else if (k + 1 < q) {
                mass += p[k + 1];
                counted = true;
            }
        }
        if (counted) {
            total += mass;
            count++;
        }
    }
    return count ? total / count : NAN;
}

const char *as_head_score_undefined(const int32_t *tokens, int n, as_head_score kind)
{
    if (n < 2)
        return "fewer than 2 tokens";
    if (kind != AS_SCORE_DUPLICATE && kind != AS_SCORE_INDUCTION)
        return NULL;
    bool repeats = false;
    for (int q = 1; q < n; q++)
        for (int k = 0; k < q; k++)
            if (tokens[k] == tokens[q]) {
                if (kind == AS_SCORE_DUPLICATE || k + 1 < q)
                    return NULL;
                repeats = true;
            }
    return repeats ? "no token repeats with another token between (induction reads the key after the earlier "
                     "occurrence)"
                   : "no token repeats";
}

const char *as_head_stat_name(as_head_stat s)
{
    static const char *const names[] = {"sink-mass", "distance", "entropy"};
    return s < AS_STAT_COUNT ? names[s] : "?";
}

double as_head_stat_of(const as_capture *cap, int hook, int head, int n, as_head_stat kind)
{
    double total = 0;
    int count = 0;
    for (int q = kind == AS_STAT_SINK ? AS_SINK_KEYS : 1; q < n; q++) {
        int k0, k1;
        as_capture_attn_visible(cap, hook, q, &k0, &k1);
        if (k1 > n)
            k1 = n;
        const float *p = as_capture_attn_row(cap, hook, head, q, NULL);
        double v = 0;
        for (int k = k0; k < k1; k++) {
            double w = p[k];
            if (kind == AS_STAT_SINK)
                v += k < AS_SINK_KEYS ? w : 0;
            else if (kind == AS_STAT_DISTANCE)
                v += w * (q >= k ? q - k : k - q);
            else if (w > 0)
                v -= w * log(w);
        }
        total += v;
        count++;
    }
    return count ? total / count : NAN;
}

double as_retrieval_score(const as_capture *cap, int hook, int head, const int32_t *tokens, int n, int p, int m,
                          int *n_counted)
{
    int copies = 0, count = 0;
    for (int q = p + m - 1; q + 1 < n; q++) {
        int32_t w = tokens[q + 1];
        bool in_needle = false;
        for (int j = p; j < p + m && !in_needle; j++)
            in_needle = tokens[j] == w;
        if (!in_needle)
            continue;
        int k0, k1;
        as_capture_attn_visible(cap, hook, q, &k0, &k1);
        const float *row = as_capture_attn_row(cap, hook, head, q, NULL);
        int top = k0;
        for (int k = k0 + 1; k < k1; k++)
            if (row[k] > row[top])
                top = k;
        count++;
        copies += top >= p && top < p + m && tokens[top] == w;
    }
    if (n_counted)
        *n_counted = count;
    return count ? (double)copies / count : NAN;
}

int as_induction_probe(int32_t *out, int32_t bos, int len, int32_t lo, int32_t hi, uint64_t seed)
{
    int n = 0;
    uint64_t state = seed;
    if (bos >= 0)
        out[n++] = bos;
    for (int i = 0; i < len; i++) {
        /* Distinct tokens within R, so "the earlier occurrence" is unique. */
        int32_t t;
        bool fresh;
        do {
            t = lo + (int32_t)(as_rng_next(&state) % (uint64_t)(hi - lo));
            fresh = true;
            for (int j = bos >= 0; j < n; j++)
                fresh &= out[j] != t;
        } while (!fresh && hi - lo > len);
        out[n++] = t;
    }
    for (int i = 0; i < len; i++)
        out[n + i] = out[n - len + i];
    return n + len;
}

/* ---- weights ---- */

typedef int (*row_fn)(void *ctx, const float *a, const float *b, uint64_t n);

/* Calls fn on each row of t (and of u, when given) dequantized. */
static int for_rows(const as_gguf_tensor *t, const as_gguf_tensor *u, row_fn fn, void *ctx, as_error *err)
{
    uint64_t cols = t->ne[0], rows = as_tensor_rows(t);
    float *a = malloc(cols * sizeof *a), *b = u ? malloc(cols * sizeof *b) : NULL;
    int rc = !a || (u && !b) ? as_error_set(err, "out of memory") : AS_OK;
    for (uint64_t r = 0; rc == AS_OK && r < rows; r++) {
        rc = as_tensor_row_f32(t, r, a, err);
        if (rc == AS_OK && u)
            rc = as_tensor_row_f32(u, r, b, err);
        if (rc == AS_OK)
            rc = fn(ctx, a, b, cols);
    }
    free(a);
    free(b);
    return rc;
}

typedef struct stats_acc {
    as_weight_stats *st;
    double sum, sq;
    int pass;
} stats_acc;

static int stats_row(void *ctx, const float *x, const float *unused, uint64_t n)
{
    stats_acc *acc = ctx;
    as_weight_stats *st = acc->st;
    (void)unused;
    for (uint64_t i = 0; i < n; i++) {
        if (acc->pass == 1) {
            double w = (st->max - st->min) / AS_HIST_BINS;
            if (isfinite(x[i])) {
                int bin = w > 0 ? (int)((x[i] - st->min) / w) : 0;
                st->hist[bin >= AS_HIST_BINS ? AS_HIST_BINS - 1 : bin]++;
            }
            continue;
        }
        st->n++;
        if (isnan(x[i]) || isinf(x[i])) {
            st->nan += isnan(x[i]) != 0;
            st->inf += isinf(x[i]) != 0; /* glibc's isinf is -1 for -Inf */
            continue;
        }
        st->zeros += x[i] == 0.0f;
        if (st->n - st->nan - st->inf == 1 || x[i] < st->min)
            st->min = x[i];
        if (st->n - st->nan - st->inf == 1 || x[i] > st->max)
            st->max = x[i];
        acc->sum += x[i];
        acc->sq += (double)x[i] * x[i];
    }
    return AS_OK;
}

int as_weight_stats_of(const as_gguf_tensor *t, as_weight_stats *st, as_error *err)
{
    memset(st, 0, sizeof *st);
    stats_acc acc = {st, 0, 0, 0};
    if (for_rows(t, NULL, stats_row, &acc, err))
        return AS_ERR;
    uint64_t finite = st->n - st->nan - st->inf;
    st->mean = finite ? acc.sum / (double)finite : 0;
    double var = finite ? acc.sq / (double)finite - st->mean * st->mean : 0;
    st->std = sqrt(var > 0 ? var : 0);
    st->norm = sqrt(acc.sq);
    acc.pass = 1; /* a second pass fills the histogram now that the range is known */
    if (for_rows(t, NULL, stats_row, &acc, err))
        return AS_ERR;
    const as_ggml_traits *tr = as_ggml_traits_of(t->type); /* known: the rows were decoded */
    as_ggml_scan_blocks(t->type, t->data, t->n_elements / tr->block_elems, &st->scales);
    return AS_OK;
}

typedef struct diff_acc {
    as_weight_delta *d;
    double d2, a2;
    uint64_t row;
} diff_acc;

static void note_nonfinite(as_weight_nonfinite *nf, float v, float other, uint64_t at)
{
    if (isnan(v))
        nf->nan++;
    else
        nf->inf++;
    if (nf->first == UINT64_MAX)
        nf->first = at, nf->value = v, nf->other = other;
}

/* NaN and NaN (whatever their payloads), or Inf and Inf of one sign */
static bool same_nonfinite(float x, float y)
{
    return (isnan(x) && isnan(y)) || (isinf(x) && x == y);
}

static int diff_row(void *ctx, const float *a, const float *b, uint64_t n)
{
    diff_acc *acc = ctx;
    as_weight_delta *d = acc->d;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t at = acc->row * n + i;
        bool fa = isfinite(a[i]), fb = isfinite(b[i]);
        if (fa)
            acc->a2 += (double)a[i] * a[i];
        if (fa && fb) {
            double x = (double)a[i] - b[i];
            acc->d2 += x * x;
            d->changed += x != 0;
            if (fabs(x) > d->max_abs)
                d->max_abs = fabs(x), d->max_at = at, d->max_a = a[i], d->max_b = b[i];
            continue;
        }
        if (!fa)
            note_nonfinite(&d->nf[0], a[i], b[i], at);
        if (!fb)
            note_nonfinite(&d->nf[1], b[i], a[i], at);
        if (!same_nonfinite(a[i], b[i]) && d->mismatch++ == 0)
            d->first_mismatch = at;
    }
    acc->row++;
    return AS_OK;
}

int as_weight_compare(const as_gguf_tensor *a, const as_gguf_tensor *b, as_weight_delta *d, as_error *err)
{
    memset(d, 0, sizeof *d);
    for (int k = 0; k < 4; k++)
        if (a->ne[k] != b->ne[k])
            return as_error_set(err, "tensor '%s' has different shapes in the two files", a->name);
    d->n = a->n_elements;
    d->nf[0].first = d->nf[1].first = d->first_mismatch = UINT64_MAX;
    diff_acc acc = {d, 0, 0, 0};
    if (for_rows(a, b, diff_row, &acc, err))
        return AS_ERR;
    d->diff_norm = sqrt(acc.d2);
    d->norm_a = sqrt(acc.a2);
    const as_gguf_tensor *t[2] = {a, b};
    for (int k = 0; k < 2; k++) {
        const as_ggml_traits *tr = as_ggml_traits_of(t[k]->type); /* known: the rows were decoded */
        as_ggml_scan_blocks(t[k]->type, t[k]->data, t[k]->n_elements / tr->block_elems, &d->scales[k]);
    }
    return AS_OK;
}

double as_weight_delta_rel(const as_weight_delta *d)
{
    if (d->mismatch)
        return INFINITY;
    if (d->diff_norm == 0)
        return 0;
    return d->norm_a > 0 ? d->diff_norm / d->norm_a : INFINITY;
}

int as_weight_diff(const as_gguf_tensor *a, const as_gguf_tensor *b, double *rel, double *diff_norm,
                   double *norm_a, as_error *err)
{
    as_weight_delta d;
    if (as_weight_compare(a, b, &d, err))
        return AS_ERR;
    *rel = as_weight_delta_rel(&d);
    *diff_norm = d.diff_norm;
    *norm_a = d.norm_a;
    return AS_OK;
}

int as_attn_rollout(const as_capture *cap, int n, float *out, as_error *err)
{
    return as_attn_rollout_layers(cap, n, -1, out, err);
}

int as_attn_rollout_layers(const as_capture *cap, int n, int n_layers, float *out, as_error *err)
{
    const as_program *p = cap->prog;
    size_t nn = (size_t)n * (size_t)n;
    double *r = malloc(nn * sizeof *r), *a = malloc(nn * sizeof *a), *t = malloc(nn * sizeof *t);
    int layers = 0, rc = AS_OK;
    if (!r || !a || !t) {
        rc = as_error_set(err, "out of memory for a %d x %d rollout", n, n);
        goto out;
    }
    for (size_t i = 0; i < nn; i++)
        r[i] = (i / (size_t)n == i % (size_t)n);
    for (int s = 0; s < p->n_attn; s++) {
        const as_attn *site = &p->attn[s];
        if (site->site != AS_SITE_SELF_ATTN || site->mask != AS_MASK_NONE)
            continue;
        if (n_layers >= 0 && layers == n_layers)
            break;
        int h = site->pattern;
        if (!as_capture_has(cap, h) || cap->filled[h] < n) {
            rc = as_error_set(err, "%s is not %s: rollout needs every layer's pattern", p->hooks[h].name,
                              as_capture_has(cap, h) ? "computed yet (`finish` runs the pass)" : "captured");
            goto out;
        }
        for (int q = 0; q < n; q++) {
            double sum = 0;
            for (int k = 0; k < n; k++) {
                double m = 0;
                for (int head = 0; head < site->n_head; head++)
                    m += as_capture_attn(cap, h, head, q, k);
                double v = 0.5 * m / site->n_head + 0.5 * (q == k);
                a[(size_t)q * (size_t)n + (size_t)k] = v;
                sum += v;
            }
            for (int k = 0; k < n; k++)
                a[(size_t)q * (size_t)n + (size_t)k] /= sum;
        }
        /* r = a · r: this layer mixes what the earlier ones produced */
        for (int q = 0; q < n; q++)
            for (int k = 0; k < n; k++) {
                double v = 0;
                for (int j = 0; j < n; j++)
                    v += a[(size_t)q * (size_t)n + (size_t)j] * r[(size_t)j * (size_t)n + (size_t)k];
                t[(size_t)q * (size_t)n + (size_t)k] = v;
            }
        double *sw = r;
        r = t, t = sw;
        layers++;
    }
    if (layers == 0) {
        rc = as_error_set(err, "rollout needs bidirectional self-attention (a ViT's or an encoder's); this model has none");
        goto out;
    }
    for (size_t i = 0; i < nn; i++)
        out[i] = (float)r[i];
out:
    free(r);
    free(a);
    free(t);
    return rc;
}
