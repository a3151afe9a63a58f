#include "attnscope/interp.h"

#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/kernels.h"
#include "attnscope/pool.h"

int as_interp_new(as_interp **out, const as_program *p, as_capture *cap, as_error *err)
{
    *out = NULL;
    as_interp *it = calloc(1, sizeof *it);
    if (!it)
        return as_error_set(err, "out of memory");
    it->prog = p;
    it->model = p->model;
    it->cap = cap;
    it->n_ctx = p->model->cfg.n_ctx;
    it->tokens = calloc((size_t)it->n_ctx, sizeof *it->tokens);
    it->pass_starts = calloc((size_t)it->n_ctx, sizeof *it->pass_starts);
    it->brk = calloc((size_t)p->n_hooks, sizeof *it->brk);
    it->span = calloc((size_t)p->n_hooks, sizeof *it->span);
    if (!it->tokens || !it->pass_starts || !it->brk || !it->span) {
        as_interp_free(it);
        return as_error_set(err, "out of memory");
    }
    *out = it;
    return AS_OK;
}

void as_interp_free(as_interp *it)
{
    if (!it)
        return;
    for (int k = 0; k < AS_HK_COUNT; k++)
        free(it->scratch[k]);
    free(it->tmp);
    free(it->rope);
    as_pool_free(it->pool);
    as_interp_clear_rules(it, true);
    as_interp_clear_rules(it, false);
    free(it->rules);
    free(it->span);
    free(it->brk);
    free(it->pass_starts);
    free(it->tokens);
    free(it);
}

void as_interp_reset(as_interp *it)
{
    memset(it->cap->filled, 0, (size_t)it->prog->n_hooks * sizeof *it->cap->filled);
    it->n_done = 0;
    it->in_pass = false;
    it->n_passes = 0;
    it->pc = 0;
    it->nonfinite.found = false;
}

int as_interp_set_tokens(as_interp *it, const int32_t *ids, int n, as_error *err)
{
    if (n > it->n_ctx)
        return as_error_set(err, "the prompt has %d tokens but %s's context holds %d", n,
                            it->model->cfg.name, it->n_ctx);
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= it->model->cfg.n_vocab)
            return as_error_set(err, "token id %d at position %d is outside the vocabulary (0..%d)",
                                ids[i], i, it->model->cfg.n_vocab - 1);
    as_interp_reset(it);
    memcpy(it->tokens, ids, (size_t)n * sizeof *ids);
    it->n_tokens = it->n_prompt = n;
    return AS_OK;
}

int as_interp_append(as_interp *it, int32_t id, as_error *err)
{
    if (it->n_tokens >= it->n_ctx)
        return as_error_set(err, "the context is full (%d tokens)", it->n_ctx);
    if (id < 0 || id >= it->model->cfg.n_vocab)
        return as_error_set(err, "token id %d is outside the vocabulary (0..%d)", id,
                            it->model->cfg.n_vocab - 1);
    it->tokens[it->n_tokens++] = id;
    return AS_OK;
}

static int ensure(float **buf, size_t *cap, size_t n, as_error *err)
{
    if (n <= *cap)
        return AS_OK;
    float *b = realloc(*buf, n * sizeof **buf);
    if (!b)
        return as_error_set(err, "out of memory (%zu floats of working memory)", n);
    *buf = b;
    *cap = n;
    return AS_OK;
}

/* Points every hook at the rows of the span [p0, p0+n): its capture
 * storage when kept, else the working buffer of its kind. */
static int setup_span(as_interp *it, as_error *err)
{
    const as_program *p = it->prog;
    for (int h = 0; h < p->n_hooks; h++) {
        const as_hook *hk = &p->hooks[h];
        if (as_capture_has(it->cap, h)) {
            it->span[h] = hk->is_attn ? it->cap->store[h]
                                      : it->cap->store[h] + (size_t)it->p0 * (size_t)hk->width;
            continue;
        }
        size_t need = hk->is_attn ? (size_t)hk->width * (size_t)it->n * (size_t)(it->p0 + it->n)
                                  : (size_t)hk->width * (size_t)it->n;
        if (ensure(&it->scratch[hk->kind], &it->scratch_cap[hk->kind], need, err))
            return AS_ERR;
        it->span[h] = it->scratch[hk->kind];
    }
    if (ensure(&it->rope, &it->rope_cap, 2 * (size_t)it->n * (size_t)it->model->cfg.rope_dim, err))
        return AS_ERR;
    /* One (n, keys) matrix per task of a span's attention ops (span_tasks). */
    return ensure(&it->tmp, &it->tmp_cap,
                  (size_t)as_pool_size(it->pool) * (size_t)it->n * (size_t)(it->p0 + it->n), err);
}

/* The pool follows the thread setting (as_set_threads), read at each pass
 * so `set threads` takes effect without the interpreter being told. */
static void setup_pool(as_interp *it)
{
    int want = as_get_threads();
    if (want < 1)
        want = 1;
    if (as_pool_size(it->pool) == want && (it->pool || want == 1))
        return;
    as_pool_free(it->pool);
    it->pool = NULL;
    as_error ignore;
    if (want > 1 && as_pool_new(&it->pool, want, &ignore))
        it->pool = NULL; /* no threads: the same results, computed on this one */
}

static int enter_pass(as_interp *it, int p0, int n, as_error *err)
{
    it->p0 = p0;
    it->n = n;
    it->pc = 0;
    it->in_pass = true;
    it->rope_ready = false;
    it->ready_until = 0;
    it->nonfinite.found = false;
    setup_pool(it);
    as_capture_prepare(it->cap, p0 + n);
    return setup_span(it, err);
}

static float *row(const as_interp *it, int h, int i)
{
    return it->span[h] + (size_t)i * (size_t)it->prog->hooks[h].width;
}

/* Span row i, head `head` of an attention hook: p0 + i + 1 keys. */
static float *attn_row(const as_interp *it, int h, int head, int i)
{
    if (as_capture_has(it->cap, h))
        return it->span[h] + as_capture_attn_offset(it->cap, head, it->p0 + i);
    return it->span[h] + ((size_t)head * (size_t)it->n + (size_t)i) * (size_t)(it->p0 + it->n);
}

/* A KV-cache hook's row at an absolute position. */
static const float *kv_row(const as_interp *it, int h, int pos)
{
    return as_capture_row(it->cap, h, pos);
}

/* One position's scores for keys [t0, t1) and every head, straight over
 * the KV cache (no copies). Key-major: each cached row is read whole and
 * the rows in order, a stream the hardware prefetches (head-major reads
 * every row in strides, and the weights streamed between tokens have
 * evicted the cache from L2). */
static void scores_keys(as_interp *it, const as_op *op, int t0, int t1)
{
    const as_config *c = &it->model->cfg;
    int H = c->n_head, group = H / c->n_head_kv, dh = c->d_head;
    float alpha = 1.0f / sqrtf((float)dh);
    const float *q = row(it, op->in[0], 0);
    for (int t = t0; t < t1; t++) {
        const float *k = kv_row(it, op->in[1], t);
        for (int h = 0; h < H; h++)
            attn_row(it, op->out, h, 0)[t] = as_dot(k + (h / group) * dh, q + h * dh, dh) * alpha;
    }
}

#define KEYS_PER_TASK 64

/* An attention op of a one-position pass, shared among the pool's threads. */
typedef struct attn_job {
    as_interp *it;
    const as_op *op;
} attn_job;

static void scores_task(void *ctx, int t)
{
    const attn_job *j = ctx;
    int keys = j->it->p0 + 1, t0 = t * KEYS_PER_TASK;
    scores_keys(j->it, j->op, t0, t0 + KEYS_PER_TASK < keys ? t0 + KEYS_PER_TASK : keys);
}

#define HEADS_PER_TASK 2

/* One position's z for heads [h0, h1): pattern · v over the KV cache,
 * reading each cached row's slice for these heads whole, row after row. */
static void mix_task(void *ctx, int task)
{
    const attn_job *j = ctx;
    as_interp *it = j->it;
    const as_config *c = &it->model->cfg;
    int h0 = task * HEADS_PER_TASK, h1 = h0 + HEADS_PER_TASK < c->n_head ? h0 + HEADS_PER_TASK : c->n_head;
    const float *p[HEADS_PER_TASK];
    for (int h = h0; h < h1; h++)
        p[h - h0] = attn_row(it, j->op->in[0], h, 0);
    as_mix_heads(p, h1 - h0, it->p0 + 1, kv_row(it, j->op->in[1], 0), (size_t)(c->n_head_kv * c->d_head),
                 c->n_head / c->n_head_kv, h0, row(it, j->op->out, 0) + h0 * c->d_head, c->d_head);
}

/* A span's attention ops share their heads among as many tasks as the
 * pool has threads; task t uses slice t of tmp, so tasks never share one. */
static int span_tasks(const as_interp *it)
{
    int T = as_pool_size(it->pool), H = it->model->cfg.n_head;
    return T < H ? T : H;
}

/* Scores of a span for task t's heads: one sgemm per head. Uncaptured
 * scores are dense [head][n][keys] rows: sgemm writes them in place (the
 * masked part is computed and never read). Captured ones are triangles,
 * so their causal part is copied in from the task's tmp. */
static void span_scores_task(void *ctx, int t)
{
    const attn_job *j = ctx;
    as_interp *it = j->it;
    const as_op *op = j->op;
    const as_config *c = &it->model->cfg;
    int H = c->n_head, Hk = c->n_head_kv, dh = c->d_head, keys = it->p0 + it->n, T = span_tasks(it);
    bool dense = !as_capture_has(it->cap, op->out);
    float alpha = 1.0f / sqrtf((float)dh);
    float *tmp = it->tmp + (size_t)t * (size_t)it->n * (size_t)keys;
    for (int h = H * t / T; h < H * (t + 1) / T; h++) {
        const float *q = row(it, op->in[0], 0) + h * dh;
        const float *k = kv_row(it, op->in[1], 0) + (h / (H / Hk)) * dh;
        float *dst = dense ? attn_row(it, op->out, h, 0) : tmp;
        /* (n, dh) · (keys, dh)ᵀ → (n, keys) */
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, it->n, keys, dh, alpha, q, H * dh, k,
                    Hk * dh, 0.0f, dst, keys);
        for (int i = 0; !dense && i < it->n; i++)
            memcpy(attn_row(it, op->out, h, i), tmp + (size_t)i * keys, (size_t)(it->p0 + i + 1) * sizeof(float));
    }
}

static void op_scores(as_interp *it, const as_op *op)
{
    const as_config *c = &it->model->cfg;
    int H = c->n_head, dh = c->d_head, keys = it->p0 + it->n;
    attn_job j = {it, op};
    if (it->n == 1) {
        bool big = (long)keys * dh * H >= 8192;
        as_pool_run(big ? it->pool : NULL, scores_task, &j, (keys + KEYS_PER_TASK - 1) / KEYS_PER_TASK);
        return;
    }
    as_pool_run(it->pool, span_scores_task, &j, span_tasks(it));
}

/* A span's pattern as a dense (n, keys) matrix, zeros above the diagonal:
 * uncaptured patterns are stored so (op_softmax zeroes their tails),
 * captured triangles are gathered into tmp. */
static const float *dense_pattern(as_interp *it, int hook, int h, float *tmp)
{
    int keys = it->p0 + it->n;
    if (!as_capture_has(it->cap, hook))
        return attn_row(it, hook, h, 0);
    for (int i = 0; i < it->n; i++) {
        float *dst = tmp + (size_t)i * keys;
        int len = it->p0 + i + 1;
        memcpy(dst, attn_row(it, hook, h, i), (size_t)len * sizeof *dst);
        memset(dst + len, 0, (size_t)(keys - len) * sizeof *dst);
    }
    return tmp;
}

/* z of a span for task t's heads: pattern · v, one sgemm per head. */
static void span_mix_task(void *ctx, int t)
{
    const attn_job *j = ctx;
    as_interp *it = j->it;
    const as_config *c = &it->model->cfg;
    int H = c->n_head, Hk = c->n_head_kv, dh = c->d_head, keys = it->p0 + it->n, T = span_tasks(it);
    float *tmp = it->tmp + (size_t)t * (size_t)it->n * (size_t)keys;
    for (int h = H * t / T; h < H * (t + 1) / T; h++) {
        const float *v = kv_row(it, j->op->in[1], 0) + (h / (H / Hk)) * dh;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, it->n, dh, keys, 1.0f,
                    dense_pattern(it, j->op->in[0], h, tmp), keys, v, Hk * dh, 0.0f,
                    row(it, j->op->out, 0) + h * dh, H * dh);
    }
}

static void op_mix(as_interp *it, const as_op *op)
{
    const as_config *c = &it->model->cfg;
    int H = c->n_head, dh = c->d_head, keys = it->p0 + it->n;
    attn_job j = {it, op};
    if (it->n == 1) {
        bool big = (long)keys * dh * H >= 8192;
        as_pool_run(big ? it->pool : NULL, mix_task, &j, (H + HEADS_PER_TASK - 1) / HEADS_PER_TASK);
        return;
    }
    as_pool_run(it->pool, span_mix_task, &j, span_tasks(it));
}

static void op_softmax(as_interp *it, const as_op *op)
{
    int keys = it->p0 + it->n;
    bool dense = it->n > 1 && !as_capture_has(it->cap, op->out);
    for (int h = 0; h < it->prog->hooks[op->out].width; h++)
        for (int i = 0; i < it->n; i++) {
            int len = it->p0 + i + 1;
            float *y = attn_row(it, op->out, h, i);
            as_softmax(attn_row(it, op->in[0], h, i), y, len);
            if (dense)
                memset(y + len, 0, (size_t)(keys - len) * sizeof *y);
        }
}

/* Rotary angles depend on the position only: computed once per pass (in
 * the buffer setup_span sized), not once per layer and per q and k. */
static void op_rope(as_interp *it, const as_op *op)
{
    const as_config *c = &it->model->cfg;
    const as_hook *out = &it->prog->hooks[op->out];
    for (int i = 0; !it->rope_ready && i < it->n; i++)
        as_rope_angles(it->rope + 2 * (size_t)i * (size_t)c->rope_dim, c->rope_dim, it->p0 + i, c->rope_base);
    it->rope_ready = true;
    for (int i = 0; i < it->n; i++)
        as_rope_apply(row(it, op->in[0], i), row(it, op->out, i), out->dims[0], out->dims[1], c->rope_dim,
                      it->rope + 2 * (size_t)i * (size_t)c->rope_dim);
}

static void op_norm(as_interp *it, const as_op *op)
{
    int d = it->model->cfg.d_model;
    for (int i = 0; i < it->n; i++) {
        if (op->kind == AS_OP_NORM_SCALE) {
            as_norm_stat *st = &it->cap->stats[op->out][it->p0 + i];
            as_norm_measure(row(it, op->in[0], i), d, it->model->cfg.eps, op->rms, st);
            row(it, op->out, i)[0] = st->scale;
        } else {
            /* Use the scale hook's value, so an intervention on it takes effect. */
            as_norm_stat st = it->cap->stats[op->in[1]][it->p0 + i];
            st.scale = row(it, op->in[1], i)[0];
            as_norm_apply(row(it, op->in[0], i), d, &st, op->rms, op->w, op->b, row(it, op->out, i));
        }
    }
}

static void op_linear(as_interp *it, const as_op *op)
{
    if (it->n == 1 || (op->last_row_only && !as_capture_has(it->cap, op->out))) {
        int i = it->n - 1;
        as_matvec(it->pool, row(it, op->in[0], i), op->n_in, op->w, op->n_out, op->b, row(it, op->out, i));
        return;
    }
    as_linear_pool(it->pool, row(it, op->in[0], 0), it->n, op->n_in, op->w, op->n_out, op->b,
                   row(it, op->out, 0));
}

static void exec(as_interp *it, const as_op *op)
{
    const as_model *m = it->model;
    const as_hook *out = &it->prog->hooks[op->out];
    int d = m->cfg.d_model;
    long span = (long)it->n * out->width;
    switch (op->kind) {
    case AS_OP_EMBED:
        for (int i = 0; i < it->n; i++)
            memcpy(row(it, op->out, i), m->tok_embd + (size_t)it->tokens[it->p0 + i] * d, (size_t)d * 4);
        break;
    case AS_OP_POS_EMBED:
        memcpy(row(it, op->out, 0), m->pos_embd + (size_t)it->p0 * d, (size_t)span * 4);
        break;
    case AS_OP_ADD:
        as_add(row(it, op->in[0], 0), row(it, op->in[1], 0), row(it, op->out, 0), span);
        break;
    case AS_OP_COPY:
        memcpy(row(it, op->out, 0), row(it, op->in[0], 0), (size_t)span * 4);
        break;
    case AS_OP_NORM_SCALE:
    case AS_OP_NORM_APPLY:
        op_norm(it, op);
        break;
    case AS_OP_LINEAR:
        op_linear(it, op);
        break;
    case AS_OP_ROPE:
        op_rope(it, op);
        break;
    case AS_OP_SCORES:
        op_scores(it, op);
        break;
    case AS_OP_SOFTMAX:
        op_softmax(it, op);
        break;
    case AS_OP_MIX:
        op_mix(it, op);
        break;
    case AS_OP_GELU:
        as_gelu_tanh(row(it, op->in[0], 0), row(it, op->out, 0), (int)span);
        break;
    case AS_OP_SWIGLU:
        as_swiglu(row(it, op->in[0], 0), row(it, op->in[1], 0), row(it, op->out, 0), (int)span);
        break;
    }
}

static bool scan(as_interp *it, int h, int pos, const float *x, int len, int base)
{
    if (as_all_finite(x, len))
        return false;
    for (int j = 0; j < len; j++) {
        if (!isfinite(x[j])) {
            it->nonfinite = (as_nonfinite){true, h, pos, base + j, x[j]};
            return true;
        }
    }
    return false;
}

/* Records where a NaN or Inf first appears in this pass: users debugging a
 * broken conversion need the first hook, not the logits it ruined. */
static void check_finite(as_interp *it, const as_op *op)
{
    const as_hook *hk = &it->prog->hooks[op->out];
    if (it->nonfinite.found)
        return;
    int first = op->last_row_only && !as_capture_has(it->cap, op->out) ? it->n - 1 : 0;
    for (int i = first; i < it->n; i++) {
        int q = it->p0 + i;
        if (!hk->is_attn) {
            if (scan(it, op->out, q, row(it, op->out, i), hk->width, 0))
                return;
            continue;
        }
        for (int head = 0; head < hk->width; head++)
            if (scan(it, op->out, q, attn_row(it, op->out, head, i), q + 1, head * (q + 1)))
                return;
    }
}

int as_rule_len(const as_interp *it, const as_rule *r)
{
    const as_hook *h = &it->prog->hooks[r->hook];
    return r->head >= 0 ? h->dims[1] : h->width;
}

static void apply_rule(as_interp *it, const as_rule *r)
{
    int len = as_rule_len(it, r), off = r->head >= 0 ? r->head * len : 0;
    for (int i = 0; i < it->n; i++) {
        int pos = it->p0 + i;
        if (r->pos >= 0 && r->pos != pos)
            continue;
        float *dst = row(it, r->hook, i) + off;
        if (r->kind == AS_RULE_ZERO)
            memset(dst, 0, (size_t)len * sizeof *dst);
        else
            memcpy(dst, r->values + (r->per_position ? (size_t)pos * (size_t)len : 0), (size_t)len * sizeof *dst);
    }
}

static bool watch_holds(const as_rule *r, const float *x, int len, int *at, float *val)
{
    double sum = 0;
    for (int j = 0; j < len; j++) {
        bool hit = false;
        switch (r->cond) {
        case AS_WATCH_MAX_GT: hit = x[j] > r->threshold; break;
        case AS_WATCH_MIN_LT: hit = x[j] < r->threshold; break;
        case AS_WATCH_ABSMAX_GT: hit = fabsf(x[j]) > r->threshold; break;
        case AS_WATCH_NONFINITE: hit = !isfinite(x[j]); break;
        default: sum += x[j];
        }
        if (hit) {
            *at = j, *val = x[j];
            return true;
        }
    }
    float mean = (float)(sum / (len ? len : 1));
    *at = -1, *val = mean;
    return (r->cond == AS_WATCH_MEAN_GT && mean > r->threshold) ||
           (r->cond == AS_WATCH_MEAN_LT && mean < r->threshold);
}

/* Checks a watch over the span's rows (attention: each head's causal row). */
static bool check_watch(as_interp *it, int k)
{
    const as_rule *r = &it->rules[k];
    const as_hook *h = &it->prog->hooks[r->hook];
    for (int i = 0; i < it->n; i++) {
        int q = it->p0 + i, at;
        float val;
        for (int head = 0; head < (h->is_attn ? h->width : 1); head++) {
            const float *x = h->is_attn ? attn_row(it, r->hook, head, i) : row(it, r->hook, i);
            int len = h->is_attn ? q + 1 : h->width;
            if (watch_holds(r, x, len, &at, &val)) {
                it->watch_hit = (as_watch_hit){k, r->hook, q, at < 0 ? at : head * len + at, val};
                return true;
            }
        }
    }
    return false;
}

/* Applies interventions on the hook just filled; returns true if a watch fired. */
static bool apply_rules(as_interp *it, int hook)
{
    bool fired = false;
    for (int k = 0; k < it->n_rules && !it->rules_off; k++) {
        const as_rule *r = &it->rules[k];
        if (r->hook != hook)
            continue;
        if (r->kind == AS_RULE_WATCH)
            fired = fired || check_watch(it, k);
        else
            apply_rule(it, r);
    }
    return fired;
}

int as_interp_add_rule(as_interp *it, const as_rule *r, size_t len, as_error *err)
{
    as_rule *rules = realloc(it->rules, (size_t)(it->n_rules + 1) * sizeof *rules);
    if (!rules)
        return as_error_set(err, "out of memory");
    it->rules = rules;
    as_rule *dst = &rules[it->n_rules];
    *dst = *r;
    dst->values = NULL;
    if (r->values) {
        size_t n = len * (r->per_position ? (size_t)it->n_ctx : 1);
        dst->values = malloc(n * sizeof *dst->values);
        if (!dst->values)
            return as_error_set(err, "out of memory");
        memcpy(dst->values, r->values, n * sizeof *dst->values);
    }
    it->n_rules++;
    return AS_OK;
}

int as_interp_clear_rules(as_interp *it, bool watches)
{
    int kept = 0, removed = 0;
    for (int k = 0; k < it->n_rules; k++) {
        if ((it->rules[k].kind == AS_RULE_WATCH) == watches) {
            free(it->rules[k].values);
            removed++;
        } else {
            it->rules[kept++] = it->rules[k];
        }
    }
    it->n_rules = kept;
    return removed;
}

/* In a one-position pass, the linear ops from pc that read the same input
 * (q, k, v; gate, up) run as one job: one hand-off between threads instead
 * of three. Their outputs are computed ahead; run_op then only records
 * each in turn (rules, checks, stops), so stopping between them changes
 * nothing: the inputs are final and the weights fixed, so the values are
 * the ones computing them later would give, bit for bit. */
static void linear_ahead(as_interp *it, long budget)
{
    const as_program *p = it->prog;
    const as_op *op = &p->ops[it->pc];
    as_matvec_spec s[AS_MATVEC_MAX];
    int k = 0;
    if (it->n != 1 || op->kind != AS_OP_LINEAR || it->pc < it->ready_until)
        return;
    for (; k < AS_MATVEC_MAX && k < budget && it->pc + k < p->n_ops; k++) {
        const as_op *o = &p->ops[it->pc + k];
        if (o->kind != AS_OP_LINEAR || o->in[0] != op->in[0])
            break;
        s[k] = (as_matvec_spec){row(it, o->in[0], 0), o->w, o->b, row(it, o->out, 0), o->n_in, o->n_out};
    }
    if (k < 2)
        return;
    as_matvec_many(it->pool, s, k);
    it->ready_until = it->pc + k;
}

static bool run_op(as_interp *it)
{
    const as_op *op = &it->prog->ops[it->pc];
    if (it->pc >= it->ready_until)
        exec(it, op);
    bool fired = apply_rules(it, op->out);
    check_finite(it, op);
    if (as_capture_has(it->cap, op->out))
        it->cap->filled[op->out] = it->p0 + it->n;
    if (++it->pc == it->prog->n_ops) {
        it->in_pass = false;
        it->n_done = it->p0 + it->n;
    }
    return fired;
}

static int begin_pass(as_interp *it, as_error *err)
{
    if (enter_pass(it, it->n_done, it->n_tokens - it->n_done, err))
        return AS_ERR;
    it->pass_starts[it->n_passes++] = it->p0;
    return AS_OK;
}

int as_interp_run(as_interp *it, as_run_mode mode, long count, as_stop *stop, as_error *err)
{
    *stop = AS_STOP_IDLE;
    if (!it->in_pass) {
        if (it->n_done >= it->n_tokens)
            return AS_OK;
        if (begin_pass(it, err))
            return AS_ERR;
    }
    int layer = it->prog->ops[it->pc].layer;
    for (long done = 0;; ) {
        if (it->interrupt && *it->interrupt) {
            *stop = AS_STOP_INTERRUPT;
            return AS_OK;
        }
        const as_op *op = &it->prog->ops[it->pc];
        linear_ahead(it, mode == AS_RUN_STEP ? count - done : AS_MATVEC_MAX);
        bool watched = run_op(it);
        done++;
        if (watched && mode != AS_RUN_FINISH) {
            *stop = AS_STOP_WATCH;
            return AS_OK;
        }
        if (mode != AS_RUN_FINISH && it->brk[op->out]) {
            *stop = AS_STOP_BREAK;
            return AS_OK;
        }
        if (!it->in_pass) {
            *stop = AS_STOP_PASS_END;
            return AS_OK;
        }
        if (mode == AS_RUN_STEP && done >= count) {
            *stop = AS_STOP_COUNT;
            return AS_OK;
        }
        if (mode == AS_RUN_NEXT && it->prog->ops[it->pc].layer != layer) {
            *stop = AS_STOP_BLOCK_END;
            return AS_OK;
        }
    }
}

/* Puts the interpreter at op `pc` of pass `j`, discarding later passes. */
static int restore(as_interp *it, int j, int pc, as_error *err)
{
    const as_program *p = it->prog;
    int p0 = it->pass_starts[j];
    int end = j + 1 < it->n_passes ? it->pass_starts[j + 1] : it->n_tokens;
    it->n_passes = j + 1;
    it->n_done = p0;
    if (enter_pass(it, p0, end - p0, err))
        return AS_ERR;
    bool replay = false;
    for (int o = 0; o < p->n_ops; o++) {
        int h = p->ops[o].out;
        if (o < pc)
            replay |= !as_capture_has(it->cap, h);
        else if (it->cap->filled[h] > p0)
            it->cap->filled[h] = p0;
    }
    for (int h = 0; h < p->n_hooks; h++)
        if (it->cap->filled[h] > end)
            it->cap->filled[h] = end;
    /* Ops are deterministic and only write their own hook (and this span's
     * KV rows), so replaying from the pass start gives the same state. */
    if (replay)
        while (it->pc < pc && it->in_pass)
            run_op(it);
    it->pc = pc;
    it->in_pass = pc < p->n_ops;
    if (!it->in_pass)
        it->n_done = end;
    return AS_OK;
}

int as_interp_back(as_interp *it, long n, as_error *err)
{
    long per = it->prog->n_ops;
    if (n <= 0)
        return AS_OK;
    if (it->n_passes == 0)
        return as_error_set(err, "nothing to go back to: no op has run yet");
    long now = it->in_pass ? (it->n_passes - 1) * per + it->pc : it->n_passes * per;
    long t = now - n < 0 ? 0 : now - n;
    return restore(it, (int)(t / per), (int)(t % per), err);
}

const float *as_interp_logits(const as_interp *it)
{
    int h = it->prog->ops[it->prog->n_ops - 1].out;
    if (it->in_pass || it->n_done == 0 || it->n_done != it->n_tokens || it->n_passes == 0)
        return NULL;
    if (as_capture_has(it->cap, h))
        return as_capture_row(it->cap, h, it->n_done - 1);
    return row(it, h, it->n - 1);
}

const as_op *as_interp_current(const as_interp *it)
{
    return it->in_pass ? &it->prog->ops[it->pc] : NULL;
}

int as_interp_break(as_interp *it, const char *pattern, bool on)
{
    int matched = 0;
    for (int h = 0; h < it->prog->n_hooks; h++) {
        if (as_hook_name_match(pattern, it->prog->hooks[h].name)) {
            it->brk[h] = on;
            matched++;
        }
    }
    return matched;
}
