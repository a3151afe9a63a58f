/* attention: the three ops of an attention site (program.h's as_attn),
 * for any site: self- or cross-attention, causal, windowed or unmasked,
 * grouped heads, d_qk != d_v, a scale of the architecture's choice, an
 * additive bias and a soft-cap. Shapes, for one pass over a span of n_q
 * query positions of the query stream and the keys so far of the
 * key/value stream:
 *
 *   q        is (n_q, H, d_qk)      the span's rows
 *   k        is (keys, Hkv, d_qk)   the KV cache: k's captured rows
 *   v        is (keys, Hkv, d_v)
 *   scores   is (H, n_q, row)       row = keys 0..pos (causal), all keys (none)
 *   pattern  is (H, n_q, row)
 *   z        is (n_q, H, d_v)
 *
 * Query head h reads key/value head h / (H / Hkv). One query position
 * (decoding) works straight over the KV cache, key-major, its keys or
 * heads shared among the pool's threads; a span's scores are computed row
 * by row by as_attn_score_row (attention_row.c, which the patterns computed
 * on demand run too) and its mix is one sgemm per head, its heads shared
 * among the threads. */
#include <cblas.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/attention_row.h"
#include "attnscope/kernels.h"
#include "attnscope/pool.h"
#include "interp_internal.h"

float *as_interp_attn_row(const as_interp *it, int h, int head, int i)
{
    const as_stream_state *st = span_of(it, h);
    if (as_capture_stored(it->cap, h))
        return it->span[h] + as_capture_attn_offset(it->cap, h, head, st->p0 + i);
    const as_attn *a = &it->prog->attn[it->prog->hooks[h].attn];
    return it->span[h] + ((size_t)head * (size_t)st->n + (size_t)i) * (size_t)attn_keys(it, a);
}

static const as_attn *site(const as_interp *it, const as_op *op)
{
    return &it->prog->attn[op->attn];
}

static const float *kv_row(const as_interp *it, int h, int pos)
{
    return as_capture_row(it->cap, h, pos);
}

/* What a plain causal or unmasked site does not need (soft-cap, bias, the
 * window's hidden keys) on one head's span row i of `len` keys. */
static void finish_row(const as_interp *it, const as_attn *a, int head, int i, float *row, int len)
{
    const float *bias = a->bias >= 0 ? as_interp_attn_row(it, a->bias, head, i) : NULL;
    as_attn_finish_scores(a, it->st[a->q_stream].p0 + i, bias, row, len);
}

/* ---------------------------------------------------------------- one position */

typedef struct attn_job {
    as_interp *it;
    const as_op *op;
} attn_job;

#define KEYS_PER_TASK 64

/* One position's scores for keys [t0, t1) and every head, straight over
 * the KV cache (no copies). Key-major: each cached row is read whole and
 * the rows in order, a stream the hardware prefetches (head-major reads
 * every row in strides, and the weights streamed between tokens have
 * evicted the cache from L2). */
static void scores_keys(as_interp *it, const as_op *op, int t0, int t1)
{
    const as_attn *a = site(it, op);
    int H = a->n_head, group = H / a->n_head_kv, d = a->d_qk;
    const float *q = span_row(it, op->in[0], 0);
    /* each element as as_attn_score_row computes it, so a pattern computed
     * on demand from the captured q and k is this one bit for bit */
    for (int t = t0; t < t1; t++) {
        const float *k = kv_row(it, op->in[1], t);
        for (int h = 0; h < H; h++)
            as_interp_attn_row(it, op->out, h, 0)[t] = as_dot(k + (h / group) * d, q + h * d, d) * a->scale;
    }
}

static void scores_task(void *ctx, int t)
{
    const attn_job *j = ctx;
    int keys = attn_row_len(j->it, site(j->it, j->op), 0), t0 = t * KEYS_PER_TASK;
    scores_keys(j->it, j->op, t0, t0 + KEYS_PER_TASK < keys ? t0 + KEYS_PER_TASK : keys);
}

#define HEADS_PER_TASK 2

/* One position's z for heads [h0, h1): pattern · v over the KV cache,
 * reading each cached row's slice for these heads whole, row after row. */
static void mix_task(void *ctx, int task)
{
    const attn_job *j = ctx;
    as_interp *it = j->it;
    const as_attn *a = site(it, j->op);
    int H = a->n_head, h0 = task * HEADS_PER_TASK, h1 = h0 + HEADS_PER_TASK < H ? h0 + HEADS_PER_TASK : H;
    const float *p[HEADS_PER_TASK];
    for (int h = h0; h < h1; h++)
        p[h - h0] = as_interp_attn_row(it, j->op->in[0], h, 0);
    as_mix_heads(p, h1 - h0, attn_row_len(it, a, 0), kv_row(it, j->op->in[1], 0), (size_t)(a->n_head_kv * a->d_v),
                 H / a->n_head_kv, h0, span_row(it, j->op->out, 0) + h0 * a->d_v, a->d_v);
}

/* ---------------------------------------------------------------- a span */

/* A span's heads are shared among as many tasks as the pool has threads;
 * task t uses slice t of tmp, so tasks never share one. */
static int span_tasks(const as_interp *it, const as_attn *a)
{
    int T = as_pool_size(it->pool);
    return T < a->n_head ? T : a->n_head;
}

/* A block of rows, dense (AS_ATTN_BLOCK x keys), and one row of scores. */
size_t as_attn_tmp_floats(const as_interp *it, const as_attn *a)
{
    int n = it->st[a->q_stream].n;
    return (size_t)((n < AS_ATTN_BLOCK ? n : AS_ATTN_BLOCK) + 1) * (size_t)attn_keys(it, a);
}

/* The site's scores and pattern hooks (its softmax op's input and output). */
static void site_hooks(const as_program *p, int attn, int *scores, int *pattern)
{
    *scores = *pattern = -1;
    for (int o = 0; o < p->n_ops; o++)
        if (p->ops[o].kind == AS_OP_SOFTMAX && p->ops[o].attn == attn)
            *scores = p->ops[o].in[0], *pattern = p->ops[o].out;
}

static bool has_rule(const as_interp *it, int hook)
{
    for (int k = 0; k < it->n_rules; k++)
        if (it->rules[k].hook == hook)
            return true;
    return false;
}

void as_attn_plan(as_interp *it)
{
    const as_program *p = it->prog;
    const char *force = getenv("AS_TEST_ATTN_FUSED");
    bool forced = force && !strcmp(force, "1");
    for (int a = 0; a < p->n_attn; a++) {
        const as_attn *at = &p->attn[a];
        int n = it->st[at->q_stream].n, sc, pat;
        site_hooks(p, a, &sc, &pat);
        size_t rows = (size_t)(2 * at->n_head + as_pool_size(it->pool)) * (size_t)n * (size_t)attn_keys(it, at);
        it->fused[a] = n > 1 && at->bias < 0 && sc >= 0 && pat >= 0 && !as_capture_stored(it->cap, sc) &&
                       !as_capture_stored(it->cap, pat) && !has_rule(it, sc) && !has_rule(it, pat) &&
                       (forced || rows * sizeof(float) > AS_ATTN_WORK_BYTES);
    }
}

/* Scores of a span for task t's heads: each row by as_attn_score_row (the
 * soft-cap, bias and window included), written where the row lives
 * (captured: the capture's layout; else dense [head][n_q][keys] rows,
 * whose causal tails past the row's keys are never read). The one row
 * function, not an sgemm, so that a pattern computed on demand from the
 * captured q and k equals this one bit for bit. */
static void span_scores_task(void *ctx, int t)
{
    const attn_job *j = ctx;
    as_interp *it = j->it;
    const as_op *op = j->op;
    const as_attn *a = site(it, op);
    int H = a->n_head, Hk = a->n_head_kv, d = a->d_qk, n = it->st[a->q_stream].n, p0 = it->st[a->q_stream].p0;
    int T = span_tasks(it, a);
    size_t k_stride = (size_t)it->prog->hooks[op->in[1]].width;
    for (int h = H * t / T; h < H * (t + 1) / T; h++) {
        const float *k = kv_row(it, op->in[1], 0) + (h / (H / Hk)) * d;
        for (int i = 0; i < n; i++)
            as_attn_score_row(a, span_row(it, op->in[0], i) + h * d, k, k_stride, p0 + i, attn_row_len(it, a, i),
                              a->bias >= 0 ? as_interp_attn_row(it, a->bias, h, i) : NULL,
                              as_interp_attn_row(it, op->out, h, i));
    }
}

void as_attn_scores(as_interp *it, const as_op *op)
{
    const as_attn *a = site(it, op);
    int n = it->st[a->q_stream].n, keys = attn_keys(it, a);
    attn_job j = {it, op};
    if (it->fused[op->attn])
        return; /* the mix computes them, a block at a time */
    if (n == 1) {
        bool big = (long)keys * a->d_qk * a->n_head >= 8192;
        int len = attn_row_len(it, a, 0);
        as_pool_run(big ? it->pool : NULL, scores_task, &j, (len + KEYS_PER_TASK - 1) / KEYS_PER_TASK);
    } else {
        as_pool_run(it->pool, span_scores_task, &j, span_tasks(it, a));
        return; /* as_attn_score_row finished each row */
    }
    if (as_attn_row_plain(a))
        return;
    for (int h = 0; h < a->n_head; h++)
        for (int i = 0; i < n; i++)
            finish_row(it, a, h, i, as_interp_attn_row(it, op->out, h, i), attn_row_len(it, a, i));
}

void as_attn_softmax(as_interp *it, const as_op *op)
{
    const as_attn *a = site(it, op);
    int n = it->st[a->q_stream].n, keys = attn_keys(it, a);
    bool dense = n > 1 && !as_capture_stored(it->cap, op->out);
    if (it->fused[op->attn])
        return;
    for (int h = 0; h < a->n_head; h++)
        for (int i = 0; i < n; i++) {
            int len = attn_row_len(it, a, i);
            float *y = as_interp_attn_row(it, op->out, h, i);
            as_softmax(as_interp_attn_row(it, op->in[0], h, i), y, len);
            if (dense) /* the mix's sgemm reads whole dense rows */
                memset(y + len, 0, (size_t)(keys - len) * sizeof *y);
        }
}

/* Rows [i0, i0 + m) of a span's pattern for head h as a dense (m, keys)
 * matrix, zeros past each row's keys: uncaptured patterns are stored so
 * (as_attn_softmax zeroes their tails), captured rows are gathered into
 * tmp, and a fused site's are computed there: each row's scores by
 * as_attn_score_row into tmp's last row, then their softmax, as the
 * scores and softmax ops would (the same calls, so the same bits). */
static const float *dense_pattern(as_interp *it, const as_op *mix, int h, int i0, int m, float *tmp)
{
    const as_attn *a = site(it, mix);
    int hook = mix->in[0], keys = attn_keys(it, a);
    if (it->fused[mix->attn]) {
        const as_op *sc = NULL;
        for (int o = 0; o < it->prog->n_ops && !sc; o++)
            if (it->prog->ops[o].kind == AS_OP_SCORES && it->prog->ops[o].attn == mix->attn)
                sc = &it->prog->ops[o];
        int Hk = a->n_head_kv, d = a->d_qk, p0 = it->st[a->q_stream].p0;
        size_t k_stride = (size_t)it->prog->hooks[sc->in[1]].width;
        const float *k = kv_row(it, sc->in[1], 0) + (h / (a->n_head / Hk)) * d;
        int n = it->st[a->q_stream].n;
        float *row = tmp + (size_t)(n < AS_ATTN_BLOCK ? n : AS_ATTN_BLOCK) * keys; /* as_attn_tmp_floats' last */
        for (int i = i0; i < i0 + m; i++) {
            float *dst = tmp + (size_t)(i - i0) * keys;
            int len = attn_row_len(it, a, i);
            as_attn_score_row(a, span_row(it, sc->in[0], i) + h * d, k, k_stride, p0 + i, len, NULL, row);
            as_softmax(row, dst, len);
            memset(dst + len, 0, (size_t)(keys - len) * sizeof *dst);
        }
        return tmp;
    }
    if (!as_capture_stored(it->cap, hook))
        return as_interp_attn_row(it, hook, h, i0);
    for (int i = i0; i < i0 + m; i++) {
        float *dst = tmp + (size_t)(i - i0) * keys;
        int len = attn_row_len(it, a, i);
        memcpy(dst, as_interp_attn_row(it, hook, h, i), (size_t)len * sizeof *dst);
        memset(dst + len, 0, (size_t)(keys - len) * sizeof *dst);
    }
    return tmp;
}

/* z of a span for task t's heads: pattern · v, one sgemm per head and
 * block of AS_ATTN_BLOCK rows (blocks whatever the site's storage: an
 * sgemm's output depends on the shape of its call, so a fused site's
 * blocks give the unfused pass's bits only if that one's calls are the
 * same blocks). */
static void span_mix_task(void *ctx, int t)
{
    const attn_job *j = ctx;
    as_interp *it = j->it;
    const as_attn *a = site(it, j->op);
    int H = a->n_head, Hk = a->n_head_kv, dv = a->d_v, n = it->st[a->q_stream].n;
    int keys = attn_keys(it, a), T = span_tasks(it, a);
    float *tmp = it->tmp + (size_t)t * as_attn_tmp_floats(it, a);
    for (int h = H * t / T; h < H * (t + 1) / T; h++) {
        const float *v = kv_row(it, j->op->in[1], 0) + (h / (H / Hk)) * dv;
        for (int i0 = 0; i0 < n; i0 += AS_ATTN_BLOCK) {
            int m = n - i0 < AS_ATTN_BLOCK ? n - i0 : AS_ATTN_BLOCK;
            /* (m, keys) · (keys, d_v) → (m, d_v), head h's slice of z's rows */
            cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, dv, keys, 1.0f,
                        dense_pattern(it, j->op, h, i0, m, tmp), keys, v, Hk * dv, 0.0f,
                        span_row(it, j->op->out, i0) + h * dv, H * dv);
        }
    }
}

void as_attn_mix(as_interp *it, const as_op *op)
{
    const as_attn *a = site(it, op);
    int n = it->st[a->q_stream].n, keys = attn_keys(it, a);
    attn_job j = {it, op};
    if (n == 1) {
        bool big = (long)keys * a->d_v * a->n_head >= 8192;
        as_pool_run(big ? it->pool : NULL, mix_task, &j, (a->n_head + HEADS_PER_TASK - 1) / HEADS_PER_TASK);
        return;
    }
    as_pool_run(it->pool, span_mix_task, &j, span_tasks(it, a));
}
