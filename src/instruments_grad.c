/* instruments_grad: the backward pass over the op list (backward.h).
 * Each op kind the backward pass covers has a vector-Jacobian product
 * below (vjp_*), reading the forward values from the capture: the op's
 * inputs where its derivative needs them (a norm's input, a GELU's input,
 * q and k for the scores, the pattern and v for the mix), its output where
 * that is simpler (softmax, sigmoid, a soft-capped linear). Rotary angles
 * and norm means are recomputed. Gradients are float32 arrays; every sum
 * over a row, a head or the keys is accumulated in float64. */
#include "attnscope/backward.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cblas.h>

#include "attnscope/capture.h"
#include "attnscope/kernels.h"
#include "attnscope/pool.h"

typedef struct bw {
    const as_interp *it;
    const as_program *p;
    const as_capture *cap;
    as_grads *g;
    bool oom;
} bw;

static int n_of(const as_grads *g, int stream)
{
    return g->n_pos[stream];
}

size_t as_grads_count(const as_grads *g, int hook)
{
    const as_hook *h = &g->prog->hooks[hook];
    if (h->is_attn) {
        const as_attn *a = &g->prog->attn[h->attn];
        return (size_t)h->width * (size_t)n_of(g, a->q_stream) * (size_t)n_of(g, a->kv_stream);
    }
    return (size_t)n_of(g, h->stream) * (size_t)h->width;
}

/* The gradient of hook h, allocated (zeros) on first use. */
static float *grad_of(bw *b, int h)
{
    if (!b->g->g[h])
        b->g->g[h] = calloc(as_grads_count(b->g, h) ? as_grads_count(b->g, h) : 1, sizeof(float));
    b->oom = b->oom || !b->g->g[h];
    return b->g->g[h];
}

static const float *fwd(const bw *b, int h, int pos)
{
    return as_capture_row(b->cap, h, pos);
}

/* The keys [k0, k1) query i of a site sees. */
static void visible(const as_attn *a, int i, int nk, int *k0, int *k1)
{
    *k0 = 0, *k1 = nk;
    if (a->mask == AS_MASK_CAUSAL || a->mask == AS_MASK_WINDOW) {
        *k1 = i + 1 < nk ? i + 1 : nk;
        if (a->mask == AS_MASK_WINDOW && i - a->window + 1 > 0)
            *k0 = i - a->window + 1;
    }
}

/* ---------------------------------------------------------------- what an op needs */

/* Whether the backward pass covers op (and why not, in why). */
static bool covered(const as_op *op, const char **why)
{
    *why = NULL;
    switch (op->kind) {
    case AS_OP_EMBED: case AS_OP_POS_EMBED: case AS_OP_TYPE_EMBED: case AS_OP_SIN_POS:
    case AS_OP_PATCH_EMBED: case AS_OP_REL_BIAS:
    case AS_OP_ADD: case AS_OP_COPY: case AS_OP_NORM_SCALE: case AS_OP_NORM_APPLY: case AS_OP_LINEAR:
    case AS_OP_ROPE: case AS_OP_SCORES: case AS_OP_SOFTMAX: case AS_OP_MIX: case AS_OP_GELU:
    case AS_OP_SWIGLU: case AS_OP_GEGLU: case AS_OP_RELU: case AS_OP_SIGMOID: case AS_OP_GATED_ADD:
    case AS_OP_HEAD_OUT: case AS_OP_HEAD_SUM:
    case AS_OP_ROUTE: case AS_OP_TOPK: case AS_OP_GATES: case AS_OP_EXPERT_LINEAR: case AS_OP_EXPERT_SUM:
    case AS_OP_SLICE: case AS_OP_CONCAT: case AS_OP_HEAD_LINEAR:
        return true;
    case AS_OP_POOL:
        if (op->pool_l2 || op->pool == AS_POOL_MAX || op->pool == AS_POOL_RANK) {
            *why = op->pool_l2 ? "an L2-normalized pooling" : "this pooling";
            return false;
        }
        return true;
    default:
        return false;
    }
}

/* The forward values op's VJP reads (hooks; -1 ends the list). */
static void reads(const as_program *p, const as_op *op, int out[4])
{
    out[0] = out[1] = out[2] = out[3] = -1;
    switch (op->kind) {
    case AS_OP_NORM_SCALE: out[0] = op->in[0]; out[1] = op->out; break;
    case AS_OP_NORM_APPLY: out[0] = op->in[0]; out[1] = op->in[1]; break;
    case AS_OP_LINEAR: if (op->softcap > 0) out[0] = op->out; break;
    case AS_OP_SCORES: {
        const as_attn *a = &p->attn[op->attn];
        out[0] = op->in[0], out[1] = op->in[1];
        if (a->softcap > 0)
            out[2] = op->out, out[3] = a->bias;
        break;
    }
    case AS_OP_SOFTMAX: case AS_OP_SIGMOID: out[0] = op->out; break;
    case AS_OP_MIX: out[0] = op->in[0]; out[1] = op->in[1]; break;
    case AS_OP_GELU: case AS_OP_RELU: out[0] = op->in[0]; break;
    case AS_OP_SWIGLU: case AS_OP_GEGLU: out[0] = op->in[0]; out[1] = op->in[1]; break;
    case AS_OP_GATED_ADD: out[0] = op->in[1]; out[1] = op->in[2]; break;
    case AS_OP_ROUTE: out[0] = op->out; break;
    case AS_OP_GATES: out[0] = op->in[0]; out[1] = op->in[1]; break;
    case AS_OP_EXPERT_LINEAR: out[0] = op->in[1]; break;
    case AS_OP_EXPERT_SUM: out[0] = op->in[0]; out[1] = op->in[1]; break;
    default: break;
    }
}

/* Whether op's input j carries a gradient: not the chosen experts'
 * indices (a discrete choice: the gradient flows through the chosen
 * gates' weights and the chosen experts, not through which were chosen),
 * nor anything top-k reads. */
static bool differentiable_in(const as_op *op, int j)
{
    if (op->in[j] < 0 || op->kind == AS_OP_TOPK)
        return false;
    return !(j == 1 && (op->kind == AS_OP_GATES || op->kind == AS_OP_EXPERT_LINEAR));
}

static int check(const as_interp *it, int seed, bool *need, as_error *err)
{
    const as_program *p = it->prog;
    if (it->in_pass)
        return as_error_set(err, "the pass is under way (op %d of %d): gradients need it finished (`finish` or `continue`)",
                            it->pc, p->n_ops);
    if (as_interp_stale(it))
        return as_error_set(err, "the computed state predates the interventions in effect: run it again first");
    for (int s = 0; s < p->n_streams; s++)
        if (it->st[s].n_done != it->st[s].n_tokens)
            return as_error_set(err, "the %s stream has %d of its %d positions computed: run the prompt to the end first",
                                p->streams[s].name, it->st[s].n_done, it->st[s].n_tokens);
    if (it->out->n_tokens == 0)
        return as_error_set(err, "nothing computed yet: give a prompt and run it first");
    memset(need, 0, (size_t)p->n_hooks * sizeof *need);
    need[seed] = true;
    for (int o = p->n_ops - 1; o >= 0; o--) {
        const as_op *op = &p->ops[o];
        if (!need[op->out])
            continue;
        const char *why;
        if (!covered(op, &why))
            return as_error_set(err, "the backward pass has no vector-Jacobian product for %s (op %d, %s \"%s\"), "
                                "which %s's gradient from %s passes through: no gradient rather than a wrong one",
                                why ? why : as_op_kind_name(op->kind), o, as_op_kind_name(op->kind), op->text,
                                it->model->cfg.name, p->hooks[seed].name);
        int r[4];
        reads(p, op, r);
        for (int j = 0; j < 4; j++)
            if (r[j] >= 0 && (!as_capture_has(it->cap, r[j]) || it->cap->filled[r[j]] < it->st[p->hooks[r[j]].stream].n_tokens))
                return as_error_set(err, "the backward pass reads %s (for op %d, %s), which the capture budget dropped: "
                                    "a larger budget (--capture-mb N) keeps it", p->hooks[r[j]].name, o,
                                    as_op_kind_name(op->kind));
        for (int j = 0; j < 3; j++)
            if (differentiable_in(op, j))
                need[op->in[j]] = true;
        if (op->kind == AS_OP_SCORES && p->attn[op->attn].bias >= 0)
            need[p->attn[op->attn].bias] = true;
    }
    return AS_OK;
}

bool as_backward_captured(const as_interp *it, int seed)
{
    const as_program *p = it->prog;
    bool *need = calloc((size_t)p->n_hooks, sizeof *need), ok = true;
    if (!need)
        return false;
    need[seed] = true;
    for (int o = p->n_ops - 1; o >= 0 && ok; o--) {
        const as_op *op = &p->ops[o];
        if (!need[op->out])
            continue;
        int r[4];
        reads(p, op, r);
        for (int j = 0; j < 4; j++)
            if (r[j] >= 0 && (!as_capture_has(it->cap, r[j]) || it->cap->filled[r[j]] < it->st[p->hooks[r[j]].stream].n_tokens))
                ok = false;
        for (int j = 0; j < 3; j++)
            if (differentiable_in(op, j))
                need[op->in[j]] = true;
        if (op->kind == AS_OP_SCORES && p->attn[op->attn].bias >= 0)
            need[p->attn[op->attn].bias] = true;
    }
    free(need);
    return ok;
}

int as_backward_check(const as_interp *it, int seed, as_error *err)
{
    bool *need = calloc((size_t)it->prog->n_hooks, sizeof *need);
    if (!need)
        return as_error_set(err, "out of memory");
    int rc = check(it, seed, need, err);
    free(need);
    return rc;
}

/* ---------------------------------------------------------------- the VJPs */

static void add_into(float *dst, const float *src, size_t n)
{
    for (size_t j = 0; j < n; j++)
        dst[j] += src[j];
}

/* LINEAR's VJP in blocks of output features (vjp_linear): a wave of
 * LIN_WAVE blocks at a time, each a task of the pool with a slot of its
 * own (its rows decoded to float64, its dgemm's result). */
#define LIN_BLOCK 256
#define LIN_WAVE 8

typedef struct lin_job {
    const as_weight *w;
    int no, ni, m, k0;
    double *dy;     /* [m][no] the nonzero dy rows */
    double *panels; /* [LIN_WAVE][LIN_BLOCK][ni] */
    double *part;   /* [LIN_WAVE][m][ni]: block k0 + t's dy · W */
    float *row;     /* [LIN_WAVE][ni] a decoded row */
} lin_job;

static void lin_task(void *ctx, int t)
{
    const lin_job *j = ctx;
    int r0 = (j->k0 + t) * LIN_BLOCK, kb = j->no - r0 < LIN_BLOCK ? j->no - r0 : LIN_BLOCK, ni = j->ni;
    double *panel = j->panels + (size_t)t * LIN_BLOCK * ni;
    float *row = j->row + (size_t)t * ni;
    for (int r = 0; r < kb; r++) {
        as_weight_row(j->w, r0 + r, row);
        for (int c = 0; c < ni; c++)
            panel[(size_t)r * ni + c] = row[c];
    }
    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, j->m, ni, kb, 1.0, j->dy + r0, j->no, panel, ni, 0.0,
                j->part + (size_t)t * j->m * ni, ni);
}

static void vjp_linear(bw *b, const as_op *op, const float *dy)
{
    const as_hook *ho = &b->p->hooks[op->out];
    int n = n_of(b->g, ho->stream), no = op->n_out, ni = op->n_in;
    float *dyc = NULL;
    if (op->softcap > 0) { /* out = cap · tanh(z / cap): dz = dy · (1 - (out / cap)²) */
        dyc = malloc((size_t)n * (size_t)no * sizeof *dyc);
        if (!dyc) {
            b->oom = true;
            return;
        }
        for (int i = 0; i < n; i++) {
            const float *y = fwd(b, op->out, i);
            for (int r = 0; r < no; r++) {
                double t = y[r] / op->softcap;
                dyc[(size_t)i * no + r] = (float)(dy[(size_t)i * no + r] * (1 - t * t));
            }
        }
        dy = dyc;
    }
    /* dx = dy · W over the positions with a nonzero dy row, in float64:
     * per block of LIN_BLOCK output features a dgemm, the blocks' results
     * summed in block order (the same values whatever the thread count). */
    lin_job j = {.w = &op->w, .no = no, .ni = ni};
    int *rows = malloc((size_t)(n > 0 ? n : 1) * sizeof *rows), n_blocks = (no + LIN_BLOCK - 1) / LIN_BLOCK;
    for (int i = 0; rows && i < n; i++)
        for (int r = 0; r < no; r++)
            if (dy[(size_t)i * no + r] != 0) {
                rows[j.m++] = i;
                break;
            }
    size_t m1 = (size_t)(j.m > 0 ? j.m : 1);
    j.dy = malloc(m1 * (size_t)no * sizeof *j.dy);
    j.panels = malloc((size_t)LIN_WAVE * LIN_BLOCK * (size_t)ni * sizeof *j.panels);
    j.part = malloc((size_t)LIN_WAVE * m1 * (size_t)ni * sizeof *j.part);
    j.row = malloc((size_t)LIN_WAVE * (size_t)ni * sizeof *j.row);
    double *acc = calloc(m1 * (size_t)ni, sizeof *acc);
    b->oom = b->oom || !rows || !j.dy || !j.panels || !j.part || !j.row || !acc;
    if (!b->oom) {
        for (int t = 0; t < j.m; t++)
            for (int r = 0; r < no; r++)
                j.dy[(size_t)t * no + r] = dy[(size_t)rows[t] * no + r];
        for (j.k0 = 0; j.m > 0 && j.k0 < n_blocks; j.k0 += LIN_WAVE) {
            int tasks = n_blocks - j.k0 < LIN_WAVE ? n_blocks - j.k0 : LIN_WAVE;
            as_pool_run(b->it->pool, lin_task, &j, tasks);
            for (int t = 0; t < tasks; t++) {
                const double *pt = j.part + (size_t)t * j.m * ni;
                for (size_t e = 0; e < (size_t)j.m * ni; e++)
                    acc[e] += pt[e];
            }
        }
        float *dx = grad_of(b, op->in[0]);
        int wx = b->p->hooks[op->in[0]].width;
        for (int t = 0; t < j.m && dx; t++)
            for (int c = 0; c < ni; c++)
                dx[(size_t)rows[t] * wx + c] += (float)acc[(size_t)t * ni + c];
    }
    free(acc), free(rows);
    free(j.dy), free(j.panels), free(j.part), free(j.row);
    free(dyc);
}

/* HEAD_OUT: result_h = W[:, h] · z_h, so dz_h = W[:, h]ᵀ · dresult_h (W's rows decoded one by one,
 * sums in double). HEAD_SUM: every head's result gets the sum's gradient. */
static void vjp_head_out(bw *b, const as_op *op, const float *dy)
{
    const as_hook *z = &b->p->hooks[op->in[0]];
    int n = n_of(b->g, z->stream), H = z->dims[0], dh = z->dims[1], d = op->n_out, wz = z->width;
    double *acc = calloc((size_t)n * (size_t)wz, sizeof *acc);
    float *row = malloc((size_t)op->n_in * sizeof *row), *dz = grad_of(b, op->in[0]);
    b->oom = b->oom || !acc || !row;
    if (acc && row && dz) {
        for (int r = 0; r < d; r++) {
            as_weight_row(&op->w, r, row);
            for (int i = 0; i < n; i++)
                for (int h = 0; h < H; h++) {
                    double g = dy[((size_t)i * H + h) * d + r];
                    double *a = acc + (size_t)i * wz + (size_t)h * dh;
                    for (int c = 0; c < dh && g != 0; c++)
                        a[c] += g * row[h * dh + c];
                }
        }
        for (size_t j = 0; j < (size_t)n * wz; j++)
            dz[j] += (float)acc[j];
    }
    free(row);
    free(acc);
}

static void vjp_head_sum(bw *b, const as_op *op, const float *dy)
{
    const as_hook *x = &b->p->hooks[op->in[0]];
    int n = n_of(b->g, x->stream), H = x->dims[0], d = op->n_out;
    float *dx = grad_of(b, op->in[0]);
    for (int i = 0; i < n && dx; i++)
        for (int h = 0; h < H; h++)
            add_into(dx + ((size_t)i * H + h) * d, dy + (size_t)i * d, (size_t)d);
}

/* NORM_APPLY: y = (x - mean) / s · w + b (LayerNorm) or x / s · w (RMS),
 * s the scale hook's value, per group of n_in values. */
static void vjp_norm_apply(bw *b, const as_op *op, const float *dy)
{
    const as_hook *hx = &b->p->hooks[op->in[0]];
    int n = n_of(b->g, hx->stream), d = op->n_in, G = b->p->hooks[op->in[1]].width;
    bool ln = op->norm == AS_NORM_LAYER;
    float *dx = grad_of(b, op->in[0]), *ds = grad_of(b, op->in[1]);
    if (!dx || !ds)
        return;
    for (int i = 0; i < n; i++) {
        const float *x = fwd(b, op->in[0], i), *s = fwd(b, op->in[1], i);
        for (int g = 0; g < G; g++) {
            const float *xg = x + (size_t)g * d, *dyg = dy + (size_t)i * hx->width + (size_t)g * d;
            float *dxg = dx + (size_t)i * hx->width + (size_t)g * d;
            double mean = 0, mdw = 0, sdx = 0;
            if (ln) {
                for (int j = 0; j < d; j++)
                    mean += xg[j];
                mean /= d;
            }
            for (int j = 0; j < d; j++) {
                double dw = dyg[j] * (op->nw ? op->nw[j] : 1.0f);
                mdw += dw;
                sdx += dw * (xg[j] - mean);
            }
            mdw /= d;
            double sc = s[g];
            for (int j = 0; j < d; j++) {
                double dw = dyg[j] * (op->nw ? op->nw[j] : 1.0f);
                dxg[j] += (float)((ln ? dw - mdw : dw) / sc);
            }
            ds[(size_t)i * G + g] += (float)(-sdx / (sc * sc));
        }
    }
}

/* NORM_SCALE: s = sqrt(mean((x - mean)²) + eps), or sqrt(mean(x²) + eps). */
static void vjp_norm_scale(bw *b, const as_op *op, const float *dy)
{
    const as_hook *hx = &b->p->hooks[op->in[0]];
    int n = n_of(b->g, hx->stream), d = op->n_in, G = b->p->hooks[op->out].width;
    bool ln = op->norm == AS_NORM_LAYER;
    float *dx = grad_of(b, op->in[0]);
    if (!dx)
        return;
    for (int i = 0; i < n; i++) {
        const float *x = fwd(b, op->in[0], i), *s = fwd(b, op->out, i);
        for (int g = 0; g < G; g++) {
            const float *xg = x + (size_t)g * d;
            double mean = 0, k = dy[(size_t)i * G + g] / ((double)d * s[g]);
            if (ln) {
                for (int j = 0; j < d; j++)
                    mean += xg[j];
                mean /= d;
            }
            for (int j = 0; j < d; j++)
                dx[(size_t)i * hx->width + (size_t)g * d + j] += (float)(k * (xg[j] - mean));
        }
    }
}

/* The rotation's transpose: the same rotation with the sines negated. */
static void vjp_rope(bw *b, const as_op *op, const float *dy)
{
    const as_hook *out = &b->p->hooks[op->out];
    const as_rope_spec *r = &op->rope;
    int n = n_of(b->g, out->stream), H = out->dims[0], dh = out->dims[1];
    float *cs = malloc(2 * (size_t)r->dim * sizeof *cs), *t = malloc((size_t)out->width * sizeof *t);
    float *dx = grad_of(b, op->in[0]);
    b->oom = b->oom || !cs || !t;
    if (cs && t && dx)
        for (int i = 0; i < n; i++) {
            as_rope_angles_spec(cs, r, i);
            for (int j = r->dim; j < 2 * r->dim; j++)
                cs[j] = -cs[j];
            const float *g = dy + (size_t)i * out->width;
            if (r->offset > 0) {
                memcpy(t, g, (size_t)out->width * sizeof *t);
                for (int h = 0; h < H; h++) {
                    size_t o = (size_t)h * dh + (size_t)r->offset;
                    if (r->mode == AS_ROPE_HALVES)
                        as_rope_apply_halves(g + o, t + o, 1, r->dim, r->dim, cs);
                    else
                        as_rope_apply(g + o, t + o, 1, r->dim, r->dim, cs);
                }
            } else if (r->mode == AS_ROPE_HALVES) {
                as_rope_apply_halves(g, t, H, dh, r->dim, cs);
            } else {
                as_rope_apply(g, t, H, dh, r->dim, cs);
            }
            add_into(dx + (size_t)i * out->width, t, (size_t)out->width);
        }
    free(t);
    free(cs);
}

/* Rows [0, n) of hook h at column c0, width w, as a float64 matrix [n][w]. */
static void rows_f64(const bw *b, int h, int n, int c0, int w, double *out)
{
    for (int i = 0; i < n; i++) {
        const float *x = fwd(b, h, i) + c0;
        for (int c = 0; c < w; c++)
            out[(size_t)i * w + c] = x[c];
    }
}

/* scores[h][i][k] = scale · q_i,h · k_k,h' (then soft-capped, biased, masked).
 * Per head: G = d scores (visible keys, through the soft-cap) · scale, then
 * dq_h = G · k_h' and dk_h' += Gᵀ · q_h as float64 matrix products. */
static void vjp_scores(bw *b, const as_op *op, const float *dy)
{
    const as_attn *a = &b->p->attn[op->attn];
    int H = a->n_head, Hk = a->n_head_kv, grp = H / Hk, d = a->d_qk;
    int nq = n_of(b->g, a->q_stream), nk = n_of(b->g, a->kv_stream);
    float *dq = grad_of(b, op->in[0]), *dk = grad_of(b, op->in[1]);
    float *dbias = a->bias >= 0 ? grad_of(b, a->bias) : NULL;
    double *acck = calloc((size_t)nk * (size_t)Hk * d, sizeof *acck);
    double *G = malloc((size_t)nq * (size_t)nk * sizeof *G), *Q = malloc((size_t)nq * (size_t)d * sizeof *Q);
    double *K = malloc((size_t)nk * (size_t)d * sizeof *K), *DQ = malloc((size_t)nq * (size_t)d * sizeof *DQ);
    if (!dq || !dk || !acck || !G || !Q || !K || !DQ || (a->bias >= 0 && !dbias)) {
        b->oom = true;
        free(acck), free(G), free(Q), free(K), free(DQ);
        return;
    }
    for (int h = 0; h < H; h++) {
        int hk = h / grp;
        for (int i = 0; i < nq; i++) {
            const float *row = dy + ((size_t)h * nq + i) * nk;
            double *gr = G + (size_t)i * nk;
            int k0, k1;
            visible(a, i, nk, &k0, &k1);
            memset(gr, 0, (size_t)nk * sizeof *gr);
            for (int k = k0; k < k1; k++) {
                double g = row[k];
                if (dbias)
                    dbias[((size_t)h * nq + i) * nk + k] += row[k];
                if (a->softcap > 0) {
                    double sc = as_capture_attn(b->cap, op->out, h, i, k);
                    double bias = a->bias >= 0 ? as_capture_attn(b->cap, a->bias, h, i, k) : 0;
                    double t = (sc - bias) / a->softcap;
                    g *= 1 - t * t;
                }
                gr[k] = g * a->scale;
            }
        }
        rows_f64(b, op->in[0], nq, h * d, d, Q);
        rows_f64(b, op->in[1], nk, hk * d, d, K);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, nq, d, nk, 1.0, G, nk, K, d, 0.0, DQ, d);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, d, nq, 1.0, G, nk, Q, d, 1.0, acck + (size_t)hk * d,
                    Hk * d);
        for (int i = 0; i < nq; i++) {
            float *dqr = dq + (size_t)i * H * d + (size_t)h * d;
            for (int c = 0; c < d; c++)
                dqr[c] += (float)DQ[(size_t)i * d + c];
        }
    }
    int wk = b->p->hooks[op->in[1]].width;
    for (int k = 0; k < nk; k++)
        for (int c = 0; c < Hk * d; c++)
            dk[(size_t)k * wk + c] += (float)acck[(size_t)k * Hk * d + c];
    free(acck), free(G), free(Q), free(K), free(DQ);
}

static void vjp_softmax(bw *b, const as_op *op, const float *dy)
{
    const as_attn *a = &b->p->attn[op->attn];
    int H = a->n_head, nq = n_of(b->g, a->q_stream), nk = n_of(b->g, a->kv_stream);
    float *dx = grad_of(b, op->in[0]);
    if (!dx)
        return;
    for (int h = 0; h < H; h++)
        for (int i = 0; i < nq; i++) {
            int k0, k1;
            visible(a, i, nk, &k0, &k1);
            size_t o = ((size_t)h * nq + i) * nk;
            double dot = 0;
            for (int k = k0; k < k1; k++)
                dot += (double)as_capture_attn(b->cap, op->out, h, i, k) * dy[o + k];
            for (int k = k0; k < k1; k++)
                dx[o + k] += (float)(as_capture_attn(b->cap, op->out, h, i, k) * (dy[o + k] - dot));
        }
}

/* z_i,h = Σ_k pattern[h][i][k] · v_k,h'. Per head, as float64 matrix
 * products: d pattern_h = dz_h · v_h'ᵀ over every key (hidden ones too: z
 * is linear in the whole row, as TransformerLens's (and PyTorch's)
 * gradient at hook_pattern is; the softmax's VJP passes on only the
 * visible keys'), dv_h' += pattern_hᵀ · dz_h. */
static void vjp_mix(bw *b, const as_op *op, const float *dy)
{
    const as_attn *a = &b->p->attn[op->attn];
    int H = a->n_head, Hk = a->n_head_kv, grp = H / Hk, dv = a->d_v;
    int nq = n_of(b->g, a->q_stream), nk = n_of(b->g, a->kv_stream);
    int wz = b->p->hooks[op->out].width;
    int wv = b->p->hooks[op->in[1]].width;
    float *dp = grad_of(b, op->in[0]), *dvv = grad_of(b, op->in[1]);
    double *accv = calloc((size_t)nk * (size_t)Hk * dv, sizeof *accv);
    double *P = malloc((size_t)nq * (size_t)nk * sizeof *P), *DP = malloc((size_t)nq * (size_t)nk * sizeof *DP);
    double *DZ = malloc((size_t)nq * (size_t)dv * sizeof *DZ), *V = malloc((size_t)nk * (size_t)dv * sizeof *V);
    if (!dp || !dvv || !accv || !P || !DP || !DZ || !V) {
        b->oom = true;
        free(accv), free(P), free(DP), free(DZ), free(V);
        return;
    }
    for (int h = 0; h < H; h++) {
        int hv = h / grp;
        for (int i = 0; i < nq; i++) {
            for (int c = 0; c < dv; c++)
                DZ[(size_t)i * dv + c] = dy[(size_t)i * wz + (size_t)h * dv + c];
            for (int k = 0; k < nk; k++)
                P[(size_t)i * nk + k] = as_capture_attn(b->cap, op->in[0], h, i, k);
        }
        rows_f64(b, op->in[1], nk, hv * dv, dv, V);
        cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, nq, nk, dv, 1.0, DZ, dv, V, dv, 0.0, DP, nk);
        cblas_dgemm(CblasRowMajor, CblasTrans, CblasNoTrans, nk, dv, nq, 1.0, P, nk, DZ, dv, 1.0,
                    accv + (size_t)hv * dv, Hk * dv);
        float *dph = dp + (size_t)h * nq * nk;
        for (size_t e = 0; e < (size_t)nq * nk; e++)
            dph[e] += (float)DP[e];
    }
    for (int k = 0; k < nk; k++)
        for (int c = 0; c < Hk * dv; c++)
            dvv[(size_t)k * wv + c] += (float)accv[(size_t)k * Hk * dv + c];
    free(accv), free(P), free(DP), free(DZ), free(V);
}

static double gelu_tanh_d(double x)
{
    const double c = 0.7978845608028654, k = 0.044715;
    double t = tanh(c * (x + k * x * x * x));
    return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * c * (1 + 3 * k * x * x);
}

static double gelu_tanh_v(double x)
{
    return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
}

static double gelu_erf_d(double x)
{
    return 0.5 * (1 + erf(x * 0.7071067811865476)) + x * exp(-0.5 * x * x) * 0.3989422804014327;
}

/* Element-wise ops: their gradient row by row. */
static void vjp_elementwise(bw *b, const as_op *op, const float *dy)
{
    const as_hook *out = &b->p->hooks[op->out];
    int n = n_of(b->g, out->stream), w = out->width;
    float *d0 = grad_of(b, op->in[0]);
    float *d1 = (op->kind == AS_OP_SWIGLU || op->kind == AS_OP_GEGLU) ? grad_of(b, op->in[1]) : NULL;
    if (!d0)
        return;
    for (int i = 0; i < n; i++) {
        const float *x = (op->kind == AS_OP_SIGMOID) ? fwd(b, op->out, i) : fwd(b, op->in[0], i);
        const float *u = d1 ? fwd(b, op->in[1], i) : NULL;
        const float *g = dy + (size_t)i * w;
        float *dx = d0 + (size_t)i * w;
        for (int j = 0; j < w; j++) {
            double xj = x[j];
            switch (op->kind) {
            case AS_OP_GELU:
                dx[j] += (float)(g[j] * (op->gelu == AS_GELU_ERF ? gelu_erf_d(xj) : gelu_tanh_d(xj)));
                break;
            case AS_OP_RELU:
                dx[j] += xj > 0 ? g[j] : 0.0f;
                break;
            case AS_OP_SIGMOID: /* x is the output */
                dx[j] += (float)(g[j] * xj * (1 - xj));
                break;
            case AS_OP_SWIGLU: {
                double sg = 1 / (1 + exp(-xj));
                dx[j] += (float)(g[j] * u[j] * sg * (1 + xj * (1 - sg)));
                d1[(size_t)i * w + j] += (float)(g[j] * xj * sg);
                break;
            }
            case AS_OP_GEGLU: /* the forward's as_geglu is the tanh form */
                dx[j] += (float)(g[j] * u[j] * gelu_tanh_d(xj));
                d1[(size_t)i * w + j] += (float)(g[j] * gelu_tanh_v(xj));
                break;
            default:
                break;
            }
        }
    }
}

static void vjp_gated_add(bw *b, const as_op *op, const float *dy)
{
    const as_hook *out = &b->p->hooks[op->out];
    int n = n_of(b->g, out->stream), w = out->width;
    float *d0 = grad_of(b, op->in[0]), *d1 = grad_of(b, op->in[1]), *d2 = grad_of(b, op->in[2]);
    if (!d0 || !d1 || !d2)
        return;
    int w2 = b->p->hooks[op->in[2]].width;
    for (int i = 0; i < n; i++) {
        const float *x1 = fwd(b, op->in[1], i);
        double gate = fwd(b, op->in[2], i)[0], s = 0;
        for (int c = 0; c < w; c++) {
            double g = dy[(size_t)i * w + c];
            d0[(size_t)i * w + c] += (float)g;
            d1[(size_t)i * w + c] += (float)(gate * g);
            s += g * x1[c];
        }
        d2[(size_t)i * w2] += (float)s;
    }
}

/* Every row of the output is the pooled vector: its gradient is the sum
 * of the rows' gradients, spread back over the rows pooled. */
static void vjp_pool(bw *b, const as_op *op, const float *dy)
{
    const as_hook *out = &b->p->hooks[op->out];
    int n = n_of(b->g, out->stream), d = op->n_out, wx = b->p->hooks[op->in[0]].width;
    float *dx = grad_of(b, op->in[0]);
    double *sum = calloc((size_t)d, sizeof *sum);
    b->oom = b->oom || !sum;
    if (dx && sum) {
        for (int i = 0; i < n; i++)
            for (int j = 0; j < d; j++)
                sum[j] += dy[(size_t)i * d + j];
        for (int i = 0; i < n; i++) {
            double f = op->pool == AS_POOL_MEAN ? 1.0 / n : op->pool == AS_POOL_MEAN_SQRT_LEN ? 1.0 / sqrt((double)n)
                     : (op->pool == AS_POOL_LAST ? i == n - 1 : i == 0) ? 1.0 : 0.0;
            for (int j = 0; j < d && f != 0; j++)
                dx[(size_t)i * wx + j] += (float)(sum[j] * f);
        }
    }
    free(sum);
}

/* ---------------------------------------------------------------- routed experts, MLA's reshapes */

/* The expert a slot's index names, or -1 (as the interpreter reads it). */
static int expert_of(float v, int n_expert)
{
    return v >= 0.0f && v < (float)n_expert ? (int)v : -1;
}

/* Whether slot j of a row of indices computes (an expert, not named by an
 * earlier slot): the forward zeroes the others. */
static int slot_expert(const float *ix, int j, int n_expert)
{
    int e = expert_of(ix[j], n_expert);
    for (int t = 0; t < j && e >= 0; t++)
        if (expert_of(ix[t], n_expert) == e)
            return -1;
    return e;
}

/* ROUTE: the router's softmax over the experts (y the captured output). */
static void vjp_route(bw *b, const as_op *op, const float *dy)
{
    int n = n_of(b->g, b->p->hooks[op->out].stream), E = op->n_expert;
    float *dx = grad_of(b, op->in[0]);
    if (!dx)
        return;
    for (int i = 0; i < n; i++) {
        const float *y = fwd(b, op->out, i), *g = dy + (size_t)i * E;
        double dot = 0;
        for (int e = 0; e < E; e++)
            dot += (double)y[e] * g[e];
        for (int e = 0; e < E; e++)
            dx[(size_t)i * E + e] += (float)(y[e] * (g[e] - dot));
    }
}

/* GATES: g_j = w[e_j] (/ Σ_l w[e_l] when renormalised) (· scale): the
 * gradient goes to the chosen experts' weights only. */
static void vjp_gates(bw *b, const as_op *op, const float *dy)
{
    int n = n_of(b->g, b->p->hooks[op->out].stream), E = op->n_expert, k = op->k;
    float *dw = grad_of(b, op->in[0]);
    if (!dw)
        return;
    for (int i = 0; i < n; i++) {
        const float *w = fwd(b, op->in[0], i), *ix = fwd(b, op->in[1], i);
        double sum = 0, dot = 0, sc = op->scale != 0 ? op->scale : 1.0;
        for (int j = 0; j < k; j++) {
            int e = expert_of(ix[j], E);
            double wj = e < 0 ? 0.0 : w[e];
            sum += wj;
            dot += sc * dy[(size_t)i * k + j] * wj;
        }
        /* the forward's sum is float32; its rounding is far below the tolerance */
        bool renorm = op->renorm && (float)sum != 0;
        for (int j = 0; j < k; j++) {
            int e = expert_of(ix[j], E);
            if (e < 0)
                continue;
            double g = sc * dy[(size_t)i * k + j];
            dw[(size_t)i * E + e] += (float)(renorm ? g / sum - dot / (sum * sum) : g);
        }
    }
}

/* EXPERT_LINEAR: out[j] = W_{e_j} · x (or x's slot j): dx += W_{e_j}ᵀ dy[j],
 * expert by expert (each of its rows read once). */
static void vjp_expert_linear(bw *b, const as_op *op, const float *dy)
{
    int n = n_of(b->g, b->p->hooks[op->out].stream), k = op->k, ni = op->n_in, no = op->n_out;
    int wx = b->p->hooks[op->in[0]].width;
    bool per_slot = wx != ni;
    float *dx = grad_of(b, op->in[0]), *row = malloc((size_t)ni * sizeof *row);
    double *acc = calloc((size_t)n * (size_t)wx, sizeof *acc);
    int *slot = malloc((size_t)n * sizeof *slot);
    if (!dx || !row || !acc || !slot) {
        b->oom = true;
        free(row), free(acc), free(slot);
        return;
    }
    for (int e = 0; e < op->n_expert; e++) {
        int m = 0;
        for (int i = 0; i < n; i++) {
            const float *ix = fwd(b, op->in[1], i);
            slot[i] = -1;
            for (int j = 0; j < k && slot[i] < 0; j++)
                if (slot_expert(ix, j, op->n_expert) == e)
                    slot[i] = j, m++;
        }
        if (m == 0)
            continue;
        for (int r = 0; r < no; r++) {
            bool loaded = false;
            for (int i = 0; i < n; i++) {
                if (slot[i] < 0)
                    continue;
                double d = dy[((size_t)i * k + slot[i]) * no + r];
                if (d == 0)
                    continue;
                if (!loaded)
                    as_weight_row(&op->w, e * no + r, row), loaded = true;
                double *a = acc + (size_t)i * wx + (per_slot ? (size_t)slot[i] * ni : 0);
                for (int c = 0; c < ni; c++)
                    a[c] += d * row[c];
            }
        }
    }
    for (size_t j = 0; j < (size_t)n * wx; j++)
        dx[j] += (float)acc[j];
    free(slot);
    free(acc);
    free(row);
}

/* EXPERT_SUM: y = Σ_j g_j · x_j. */
static void vjp_expert_sum(bw *b, const as_op *op, const float *dy)
{
    int n = n_of(b->g, b->p->hooks[op->out].stream), k = op->k, d = op->n_out;
    float *dx = grad_of(b, op->in[0]), *dg = grad_of(b, op->in[1]);
    if (!dx || !dg)
        return;
    for (int i = 0; i < n; i++) {
        const float *x = fwd(b, op->in[0], i), *g = fwd(b, op->in[1], i), *gy = dy + (size_t)i * d;
        for (int j = 0; j < k; j++) {
            double s = 0;
            float *dxj = dx + ((size_t)i * k + j) * d;
            for (int c = 0; c < d; c++) {
                dxj[c] += g[j] * gy[c];
                s += (double)gy[c] * x[(size_t)j * d + c];
            }
            dg[(size_t)i * k + j] += (float)s;
        }
    }
}

/* SLICE: the columns taken get their gradient back, the others none. */
static void vjp_slice(bw *b, const as_op *op, const float *dy)
{
    const as_hook *out = &b->p->hooks[op->out];
    int n = n_of(b->g, out->stream), G = out->dims[0], w = out->dims[1], wx = b->p->hooks[op->in[0]].width;
    float *dx = grad_of(b, op->in[0]);
    for (int i = 0; i < n && dx; i++)
        for (int g = 0; g < G; g++)
            add_into(dx + (size_t)i * wx + (size_t)g * (wx / G) + op->col0, dy + (size_t)i * out->width + (size_t)g * w,
                     (size_t)w);
}

/* CONCAT: each group splits back; a one-group second input (MLA's shared
 * rotary key, copied to every head) sums its copies' gradients. */
static void vjp_concat(bw *b, const as_op *op, const float *dy)
{
    const as_hook *out = &b->p->hooks[op->out], *ha = &b->p->hooks[op->in[0]], *hb = &b->p->hooks[op->in[1]];
    int n = n_of(b->g, out->stream), G = out->dims[0], wa = ha->width / G;
    int Gb = hb->n_dims > 1 ? hb->dims[0] : 1, wb = hb->width / Gb;
    float *da = grad_of(b, op->in[0]), *db = grad_of(b, op->in[1]);
    if (!da || !db)
        return;
    for (int i = 0; i < n; i++)
        for (int g = 0; g < G; g++) {
            const float *y = dy + (size_t)i * out->width + (size_t)g * (wa + wb);
            add_into(da + (size_t)i * ha->width + (size_t)g * wa, y, (size_t)wa);
            add_into(db + (size_t)i * hb->width + (size_t)(Gb > 1 ? g : 0) * wb, y + wa, (size_t)wb);
        }
}

/* HEAD_LINEAR: out's group h = W_h · in's group h from column col0. */
static void vjp_head_linear(bw *b, const as_op *op, const float *dy)
{
    const as_hook *out = &b->p->hooks[op->out];
    int n = n_of(b->g, out->stream), G = out->dims[0], no = out->dims[1], ni = op->n_in;
    int wx = b->p->hooks[op->in[0]].width;
    float *dx = grad_of(b, op->in[0]), *row = malloc((size_t)ni * sizeof *row);
    double *acc = calloc((size_t)n * (size_t)ni, sizeof *acc);
    if (!dx || !row || !acc) {
        b->oom = true;
        free(row), free(acc);
        return;
    }
    for (int g = 0; g < G; g++) {
        memset(acc, 0, (size_t)n * (size_t)ni * sizeof *acc);
        for (int r = 0; r < no; r++) {
            as_weight_row(&op->w, g * no + r, row);
            for (int i = 0; i < n; i++) {
                double d = dy[(size_t)i * out->width + (size_t)g * no + r];
                double *a = acc + (size_t)i * ni;
                for (int c = 0; c < ni && d != 0; c++)
                    a[c] += d * row[c];
            }
        }
        for (int i = 0; i < n; i++) {
            float *dxg = dx + (size_t)i * wx + (size_t)g * (wx / G) + op->col0;
            for (int c = 0; c < ni; c++)
                dxg[c] += (float)acc[(size_t)i * ni + c];
        }
    }
    free(acc);
    free(row);
}

/* ---------------------------------------------------------------- the pass */

/* The gradient an op passes on: its output's, with the slices the
 * interventions set zeroed (there the output does not depend on the
 * inputs). NULL when no rule acts (use the gradient itself). */
static float *masked(bw *b, int hook, const float *g)
{
    const as_interp *it = b->it;
    const as_hook *h = &b->p->hooks[hook];
    float *m = NULL;
    for (int k = 0; k < it->n_rules && !it->rules_off && !m; k++)
        if (it->rules[k].hook == hook && (it->rules[k].kind == AS_RULE_ZERO || it->rules[k].kind == AS_RULE_SET)) {
            size_t count = as_grads_count(b->g, hook);
            if (!(m = malloc(count * sizeof *m))) {
                b->oom = true;
                return NULL;
            }
            memcpy(m, g, count * sizeof *m);
        }
    if (!m)
        return NULL;
    for (int k = 0; k < it->n_rules && !it->rules_off; k++) {
        const as_rule *r = &it->rules[k];
        if (r->hook != hook || (r->kind != AS_RULE_ZERO && r->kind != AS_RULE_SET))
            continue;
        if (h->is_attn) {
            const as_attn *a = &b->p->attn[h->attn];
            int nq = n_of(b->g, a->q_stream), nk = n_of(b->g, a->kv_stream);
            for (int hd = 0; hd < h->width; hd++)
                for (int i = 0; i < nq; i++)
                    if ((r->head < 0 || r->head == hd) && (r->pos < 0 || r->pos == i))
                        memset(m + ((size_t)hd * nq + i) * nk, 0, (size_t)nk * sizeof *m);
            continue;
        }
        int len = as_rule_len(it, r), off = r->head >= 0 ? r->head * len : 0, n = n_of(b->g, h->stream);
        for (int i = 0; i < n; i++)
            if (r->pos < 0 || r->pos == i)
                memset(m + (size_t)i * h->width + off, 0, (size_t)len * sizeof *m);
    }
    return m;
}

int as_backward(const as_interp *it, int seed, const float *seed_grad, as_grads *out, as_error *err)
{
    const as_program *p = it->prog;
    memset(out, 0, sizeof *out);
    bool *need = calloc((size_t)p->n_hooks, sizeof *need);
    if (!need)
        return as_error_set(err, "out of memory");
    if (check(it, seed, need, err)) {
        free(need);
        return AS_ERR;
    }
    free(need);
    out->prog = p;
    for (int s = 0; s < p->n_streams; s++)
        out->n_pos[s] = it->st[s].n_tokens;
    out->g = calloc((size_t)p->n_hooks, sizeof *out->g);
    if (!out->g)
        return as_error_set(err, "out of memory");
    bw b = {it, p, it->cap, out, false};
    float *g0 = grad_of(&b, seed);
    if (!g0) {
        as_grads_free(out);
        return as_error_set(err, "out of memory");
    }
    memcpy(g0, seed_grad, as_grads_count(out, seed) * sizeof *g0);
    for (int o = p->n_ops - 1; o >= 0; o--) {
        const as_op *op = &p->ops[o];
        if (!out->g[op->out])
            continue;
        float *m = masked(&b, op->out, out->g[op->out]);
        const float *dy = m ? m : out->g[op->out];
        size_t cnt = as_grads_count(out, op->out);
        switch (op->kind) {
        case AS_OP_ADD:
            for (int j = 0; j < 3; j++)
                if (op->in[j] >= 0 && grad_of(&b, op->in[j]))
                    add_into(out->g[op->in[j]], dy, cnt);
            break;
        case AS_OP_COPY:
            if (grad_of(&b, op->in[0]))
                add_into(out->g[op->in[0]], dy, cnt);
            break;
        case AS_OP_NORM_SCALE: vjp_norm_scale(&b, op, dy); break;
        case AS_OP_NORM_APPLY: vjp_norm_apply(&b, op, dy); break;
        case AS_OP_LINEAR: vjp_linear(&b, op, dy); break;
        case AS_OP_ROPE: vjp_rope(&b, op, dy); break;
        case AS_OP_SCORES: vjp_scores(&b, op, dy); break;
        case AS_OP_SOFTMAX: vjp_softmax(&b, op, dy); break;
        case AS_OP_MIX: vjp_mix(&b, op, dy); break;
        case AS_OP_GELU: case AS_OP_RELU: case AS_OP_SIGMOID: case AS_OP_SWIGLU: case AS_OP_GEGLU:
            vjp_elementwise(&b, op, dy);
            break;
        case AS_OP_GATED_ADD: vjp_gated_add(&b, op, dy); break;
        case AS_OP_POOL: vjp_pool(&b, op, dy); break;
        case AS_OP_HEAD_OUT: vjp_head_out(&b, op, dy); break;
        case AS_OP_HEAD_SUM: vjp_head_sum(&b, op, dy); break;
        case AS_OP_ROUTE: vjp_route(&b, op, dy); break;
        case AS_OP_GATES: vjp_gates(&b, op, dy); break;
        case AS_OP_EXPERT_LINEAR: vjp_expert_linear(&b, op, dy); break;
        case AS_OP_EXPERT_SUM: vjp_expert_sum(&b, op, dy); break;
        case AS_OP_SLICE: vjp_slice(&b, op, dy); break;
        case AS_OP_CONCAT: vjp_concat(&b, op, dy); break;
        case AS_OP_HEAD_LINEAR: vjp_head_linear(&b, op, dy); break;
        /* the leaves (embeddings, sinusoids, patches, relative bias) and
         * top-k (its output, the chosen indices, is discrete) */
        default: break;
        }
        free(m);
    }
    if (b.oom) {
        as_grads_free(out);
        return as_error_set(err, "out of memory for the gradients");
    }
    return AS_OK;
}

void as_grads_free(as_grads *g)
{
    if (!g || !g->g)
        return;
    for (int h = 0; h < g->prog->n_hooks; h++)
        free(g->g[h]);
    free(g->g);
    g->g = NULL;
}
