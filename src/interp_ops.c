/* interp_ops: what each op kind computes over the current span (the
 * program's ops but attention's three, which are attention.c's): rotary,
 * norms, linear maps, pooling, patch embedding, relative position bias, a
 * routed MLP's routing, choice, gates and experts, and the rest in
 * as_interp_exec's switch. interp.c's loop runs them one op at a time. */
#include "attnscope/interp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/kernels.h"
#include "attnscope/pool.h"
#include "interp_internal.h"

static bool same_rope(const as_rope_spec *a, const as_rope_spec *b)
{
    return a->dim == b->dim && a->base == b->base && a->freq_scale == b->freq_scale &&
           a->ext_factor == b->ext_factor && a->attn_factor == b->attn_factor && a->beta_fast == b->beta_fast &&
           a->beta_slow == b->beta_slow && a->n_ctx_orig == b->n_ctx_orig && a->freqs == b->freqs;
}

/* Rotary angles depend on the position only: computed once per pass and
 * rotary setting (in the buffer setup_span sized), not once per layer and
 * per q and k. Layers with another base (a sliding window's) recompute. */
static void op_rope(as_interp *it, const as_op *op)
{
    const as_hook *out = &it->prog->hooks[op->out];
    const as_stream_state *st = span_of(it, op->out);
    const as_rope_spec *r = &op->rope;
    if (it->rope_stream != out->stream || !same_rope(r, &it->rope_spec)) {
        for (int i = 0; i < st->n; i++)
            as_rope_angles_spec(it->rope + 2 * (size_t)i * (size_t)r->dim, r, st->p0 + i);
        it->rope_stream = out->stream;
        it->rope_spec = *r;
    }
    for (int i = 0; i < st->n; i++) {
        const float *cs = it->rope + 2 * (size_t)i * (size_t)r->dim;
        if (r->offset > 0) { /* the rotated dims after the others, in each head */
            const float *x = span_row(it, op->in[0], i);
            float *y = span_row(it, op->out, i);
            int dh = out->dims[1];
            memcpy(y, x, (size_t)out->width * sizeof(float));
            for (int h = 0; h < out->dims[0]; h++) {
                size_t o = (size_t)h * (size_t)dh + (size_t)r->offset;
                if (r->mode == AS_ROPE_HALVES)
                    as_rope_apply_halves(x + o, y + o, 1, r->dim, r->dim, cs);
                else
                    as_rope_apply(x + o, y + o, 1, r->dim, r->dim, cs);
            }
            continue;
        }
        if (r->mode == AS_ROPE_HALVES)
            as_rope_apply_halves(span_row(it, op->in[0], i), span_row(it, op->out, i), out->dims[0], out->dims[1], r->dim, cs);
        else
            as_rope_apply(span_row(it, op->in[0], i), span_row(it, op->out, i), out->dims[0], out->dims[1], r->dim, cs);
    }
}

/* A norm's row holds one group of n_in values (a residual stream) or one
 * per head (q and k norms); each group has its own scale and statistics. */
static void op_norm(as_interp *it, const as_op *op)
{
    const as_stream_state *st = span_of(it, op->out);
    bool rms = op->norm == AS_NORM_RMS;
    int s = op->kind == AS_OP_NORM_SCALE ? op->out : op->in[1], G = it->prog->hooks[s].width;
    for (int i = 0; i < st->n; i++) {
        const float *x = span_row(it, op->in[0], i);
        float *scale = span_row(it, s, i);
        as_norm_stat *stats = &it->cap->stats[s][(size_t)(st->p0 + i) * (size_t)G];
        for (int g = 0; g < G; g++) {
            const float *xg = x + (size_t)g * (size_t)op->n_in;
            if (op->kind == AS_OP_NORM_SCALE) {
                as_norm_measure(xg, op->n_in, op->eps, rms, &stats[g]);
                scale[g] = stats[g].scale;
            } else {
                /* Use the scale hook's value, so an intervention on it takes effect. */
                as_norm_stat ns = stats[g];
                ns.scale = scale[g];
                as_norm_apply(xg, op->n_in, &ns, rms, op->nw, op->b, span_row(it, op->out, i) + (size_t)g * (size_t)op->n_in);
            }
        }
    }
}

int as_interp_linear_block(const as_op *op)
{
    const char *test = getenv("AS_TEST_LINEAR_BLOCK"); /* the tests' fixtures are far below the bound */
    if (test && atoi(test) > 0)
        return atoi(test);
    size_t row = (size_t)op->n_out * sizeof(float), rows = AS_LINEAR_BLOCK_BYTES / (row ? row : 1);
    return rows < AS_CAPFILE_DROP_ROWS ? AS_CAPFILE_DROP_ROWS : rows > (size_t)1 << 30 ? 1 << 30 : (int)rows;
}

void as_interp_linear_rows(as_interp *it, const as_op *op, int r0, int r1)
{
    if (r1 - r0 == 1)
        as_matvec(it->pool, span_row(it, op->in[0], r0), &op->w, op->b, span_row(it, op->out, r0));
    else
        as_linear_pool(it->pool, span_row(it, op->in[0], r0), r1 - r0, &op->w, op->b, span_row(it, op->out, r0));
    if (op->softcap > 0)
        as_softcap(span_row(it, op->out, r0), span_row(it, op->out, r0), (long)(r1 - r0) * op->n_out, op->softcap);
}

/* A span's rows in blocks of as_interp_linear_block (the block a prompt's
 * logits are computed in whatever the capture, so a capture file, which
 * drops each block's pages as it goes (interp.c's run_op), gives the bits
 * a capture in RAM gives). */
static void op_linear(as_interp *it, const as_op *op)
{
    int n = span_of(it, op->out)->n, b = as_interp_linear_block(op);
    if (n == 1 || (op->last_row_only && !as_capture_stored(it->cap, op->out))) {
        as_interp_linear_rows(it, op, n - 1, n);
        return;
    }
    for (int r0 = 0; r0 < n; r0 += b)
        as_interp_linear_rows(it, op, r0, r0 + b < n ? r0 + b : n);
}

/* The pooled vector of a stream recomputed from position 0 (its span is
 * all of it), written to every row of the span. */
static void op_pool(as_interp *it, const as_op *op)
{
    const as_stream_state *st = span_of(it, op->out);
    int d = op->n_out, n = st->n;
    float *first = span_row(it, op->out, 0);
    if (op->pool == AS_POOL_MEAN || op->pool == AS_POOL_MEAN_SQRT_LEN) {
        for (int j = 0; j < d; j++) {
            double sum = 0;
            for (int i = 0; i < n; i++)
                sum += span_row(it, op->in[0], i)[j];
            first[j] = (float)(op->pool == AS_POOL_MEAN ? sum / n : sum / sqrt((double)n));
        }
    } else if (op->pool == AS_POOL_MAX) {
        for (int j = 0; j < d; j++) {
            float mx = span_row(it, op->in[0], 0)[j];
            for (int i = 1; i < n; i++)
                mx = fmaxf(mx, span_row(it, op->in[0], i)[j]);
            first[j] = mx;
        }
    } else {
        memcpy(first, span_row(it, op->in[0], op->pool == AS_POOL_LAST ? n - 1 : 0), (size_t)d * sizeof *first);
    }
    if (op->pool_l2) {
        double ss = 0;
        for (int j = 0; j < d; j++)
            ss += (double)first[j] * first[j];
        double norm = fmax(sqrt(ss), 1e-12);
        for (int j = 0; j < d; j++)
            first[j] = (float)(first[j] / norm);
    }
    for (int i = 1; i < n; i++)
        memcpy(span_row(it, op->out, i), first, (size_t)d * sizeof *first);
}

/* Row 0 ([CLS]) is the class embedding; row 1 + r*grid + c the linear
 * map of the patch at grid row r, column c, flattened [channel][y][x]
 * as a Conv2d kernel is: out = W · patch + b, for the span's patches at once. */
static void op_patch_embed(as_interp *it, const as_op *op)
{
    const as_stream_state *st = span_of(it, op->out);
    const as_patch_spec *ps = &op->patch;
    int first = st->p0 == 0 ? 1 : 0, P = ps->patch, S = ps->size;
    if (st->p0 == 0 && st->n > 0)
        memcpy(span_row(it, op->out, 0), op->cls, (size_t)op->n_out * sizeof(float));
    int n = st->n - first;
    if (n <= 0)
        return;
    for (int i = 0; i < n; i++) {
        int k = st->p0 + first + i - 1, r = k / ps->grid, c = k % ps->grid;
        float *dst = it->tmp + (size_t)i * (size_t)op->n_in;
        for (int ch = 0; ch < ps->channels; ch++)
            for (int y = 0; y < P; y++)
                memcpy(dst + ((size_t)ch * (size_t)P + (size_t)y) * (size_t)P,
                       st->pixels + ((size_t)ch * (size_t)S + (size_t)(r * P + y)) * (size_t)S + (size_t)(c * P),
                       (size_t)P * sizeof *dst);
    }
    as_linear_pool(it->pool, it->tmp, n, &op->w, op->b, span_row(it, op->out, first));
}

/* T5's relative position bias: the table ([bucket][head], as stored)
 * decoded once into tmp, then each visible key's bucket looked up. */
static void op_rel_bias(as_interp *it, const as_op *op)
{
    const as_stream_state *st = span_of(it, op->out);
    const as_attn *a = &it->prog->attn[it->prog->hooks[op->out].attn];
    int H = op->n_out;
    for (int b = 0; b < op->n_in; b++)
        as_weight_row(&op->w, b, it->tmp + (size_t)b * (size_t)H);
    for (int i = 0; i < st->n; i++) {
        int q = st->p0 + i, len = attn_row_len(it, a, i);
        for (int k = 0; k < len; k++) {
            const float *t = it->tmp + (size_t)as_rel_bucket(&op->rel, q, k) * (size_t)H;
            for (int h = 0; h < H; h++)
                as_interp_attn_row(it, op->out, h, i)[k] = t[h];
        }
    }
}

/* ---- a routed MLP (mixture of experts). Indices are stored as floats
 * (exact to 2^24) in the capture like every hook; the hook's dtype says
 * int32, which exports write. */

/* The expert a slot names, or -1 when the value is none (an intervention
 * may write anything into the indices: such a slot contributes nothing). */
int as_interp_expert_of(float v, int n_expert)
{
    if (!(v >= 0.0f && v < (float)n_expert))
        return -1;
    return (int)v;
}

static void op_route(as_interp *it, const as_op *op)
{
    const as_stream_state *st = span_of(it, op->out);
    int E = op->n_expert;
    for (int i = 0; i < st->n; i++) {
        const float *x = span_row(it, op->in[0], i);
        float *y = span_row(it, op->out, i), mx = x[0];
        for (int e = 1; e < E; e++)
            mx = x[e] > mx ? x[e] : mx;
        double sum = 0;
        for (int e = 0; e < E; e++) {
            y[e] = expf(x[e] - mx);
            sum += y[e];
        }
        for (int e = 0; e < E; e++)
            y[e] = (float)(y[e] / sum);
    }
}

/* The k largest weights (plus the op's bias, for choosing only), largest
 * first; of equal ones the lower index first (a strict comparison keeps
 * the earlier one). With groups, only experts of the group_used groups
 * of largest score (the sum of a group's two largest; of equal scores the
 * lower group) are chosen from. Experts `off` marks are not chosen (nor
 * counted in a group's score); a slot with none left gets -1. */
void as_interp_choose_experts(const as_op *op, const float *w, const bool *off, float *out)
{
    int E = op->n_expert, G = op->n_group > 1 ? op->n_group : 1, per = E / G;
    float sel[AS_MAX_EXPERTS];
    bool allowed[AS_MAX_EXPERTS];
    for (int e = 0; e < E; e++) {
        sel[e] = op->b ? w[e] + op->b[e] : w[e];
        allowed[e] = !(off && off[e]);
    }
    if (G > 1) {
        float score[AS_MAX_EXPERTS];
        bool group_in[AS_MAX_EXPERTS] = {false};
        for (int g = 0; g < G; g++) {
            int a = -1, b = -1;
            for (int e = g * per; e < (g + 1) * per; e++) {
                if (!allowed[e])
                    continue;
                if (a < 0 || sel[e] > sel[a])
                    b = a, a = e;
                else if (b < 0 || sel[e] > sel[b])
                    b = e;
            }
            score[g] = a < 0 ? -INFINITY : b < 0 ? sel[a] : sel[a] + sel[b];
        }
        for (int j = 0; j < op->group_used; j++) {
            int best = -1;
            for (int g = 0; g < G; g++)
                if (!group_in[g] && (best < 0 || score[g] > score[best]))
                    best = g;
            group_in[best] = true;
        }
        for (int e = 0; e < E; e++)
            allowed[e] = allowed[e] && group_in[e / per];
    }
    for (int j = 0; j < op->k; j++) {
        int best = -1;
        for (int e = 0; e < E; e++)
            if (allowed[e] && (best < 0 || sel[e] > sel[best]))
                best = e;
        if (best >= 0)
            allowed[best] = false;
        out[j] = (float)best;
    }
}

static void op_topk(as_interp *it, const as_op *op)
{
    const as_stream_state *st = span_of(it, op->out);
    for (int i = 0; i < st->n; i++)
        as_interp_choose_experts(op, span_row(it, op->in[0], i), NULL, span_row(it, op->out, i));
}

static void op_gates(as_interp *it, const as_op *op)
{
    const as_stream_state *st = span_of(it, op->out);
    for (int i = 0; i < st->n; i++) {
        const float *w = span_row(it, op->in[0], i), *ix = span_row(it, op->in[1], i);
        float *g = span_row(it, op->out, i);
        float sum = 0;
        for (int j = 0; j < op->k; j++) {
            int e = as_interp_expert_of(ix[j], op->n_expert);
            g[j] = e < 0 ? 0.0f : w[e];
            sum += g[j];
        }
        if (op->renorm && sum != 0)
            for (int j = 0; j < op->k; j++)
                g[j] /= sum;
        if (op->scale != 0)
            for (int j = 0; j < op->k; j++)
                g[j] *= op->scale;
    }
}

/* Each slot's expert's rows of the stacked matrix times the input (one
 * row for every slot, or each slot's own). Expert by expert: the rows of
 * the positions that chose it gathered into one product (a position
 * chooses an expert at most once), so a prompt reads each expert's
 * matrix once, not once per position. */
static void op_expert_linear(as_interp *it, const as_op *op)
{
    const as_stream_state *st = span_of(it, op->out);
    bool per_slot = it->prog->hooks[op->in[0]].width != op->n_in;
    size_t ni = (size_t)op->n_in, no = (size_t)op->n_out;
    float *xs = it->tmp, *ys = it->tmp + (size_t)st->n * ni;
    /* A slot naming no expert, or one an earlier slot names (only an
     * intervention writes such indices), gives nothing. */
    for (int i = 0; i < st->n; i++) {
        const float *ix = span_row(it, op->in[1], i);
        for (int j = 0; j < op->k; j++) {
            int e = as_interp_expert_of(ix[j], op->n_expert);
            bool again = false;
            for (int t = 0; t < j && !again; t++)
                again = as_interp_expert_of(ix[t], op->n_expert) == e;
            if (e < 0 || again)
                memset(span_row(it, op->out, i) + (size_t)j * no, 0, no * sizeof(float));
        }
    }
    for (int e = 0; e < op->n_expert; e++) {
        int m = 0;
        for (int i = 0; i < st->n; i++) {
            const float *ix = span_row(it, op->in[1], i), *x = span_row(it, op->in[0], i);
            for (int j = 0; j < op->k; j++)
                if (as_interp_expert_of(ix[j], op->n_expert) == e) {
                    memcpy(xs + (size_t)m++ * ni, per_slot ? x + (size_t)j * ni : x, ni * sizeof(float));
                    break;
                }
        }
        if (m == 0)
            continue;
        as_weight w = as_weight_rows(&op->w, e * op->n_out, op->n_out);
        as_linear_pool(it->pool, xs, m, &w, NULL, ys);
        m = 0;
        for (int i = 0; i < st->n; i++) {
            const float *ix = span_row(it, op->in[1], i);
            for (int j = 0; j < op->k; j++)
                if (as_interp_expert_of(ix[j], op->n_expert) == e) {
                    memcpy(span_row(it, op->out, i) + (size_t)j * no, ys + (size_t)m++ * no, no * sizeof(float));
                    break;
                }
        }
    }
}

static void op_expert_sum(as_interp *it, const as_op *op)
{
    const as_stream_state *st = span_of(it, op->out);
    int d = op->n_out;
    for (int i = 0; i < st->n; i++) {
        const float *x = span_row(it, op->in[0], i), *g = span_row(it, op->in[1], i);
        float *y = span_row(it, op->out, i);
        for (int c = 0; c < d; c++)
            y[c] = g[0] * x[c];
        for (int j = 1; j < op->k; j++)
            for (int c = 0; c < d; c++)
                y[c] += g[j] * x[(size_t)j * (size_t)d + (size_t)c];
    }
}

/* HEAD_OUT: each head's z through its columns of W (W_O), W's rows decoded
 * one by one, each dot accumulated in double. */
static void op_head_out(as_interp *it, const as_op *op)
{
    const as_stream_state *st = span_of(it, op->out);
    const as_hook *z = &it->prog->hooks[op->in[0]];
    int H = z->dims[0], dh = z->dims[1], d = op->n_out;
    float *row = malloc((size_t)op->n_in * sizeof *row);
    if (!row) { /* no memory for one row: NaN, which the first-NaN check then names */
        for (int i = 0; i < st->n; i++)
            for (int j = 0; j < H * d; j++)
                span_row(it, op->out, i)[j] = NAN;
        return;
    }
    for (int r = 0; r < d; r++) {
        as_weight_row(&op->w, r, row);
        for (int i = 0; i < st->n; i++) {
            const float *x = span_row(it, op->in[0], i);
            float *y = span_row(it, op->out, i);
            for (int h = 0; h < H; h++) {
                double acc = 0;
                for (int c = 0; c < dh; c++)
                    acc += (double)row[h * dh + c] * x[h * dh + c];
                y[(size_t)h * d + r] = (float)acc;
            }
        }
    }
    free(row);
}

/* HEAD_SUM: the heads' results summed (in double, head 0 first), then the bias. */
static void op_head_sum(as_interp *it, const as_op *op)
{
    const as_stream_state *st = span_of(it, op->out);
    int d = op->n_out, H = it->prog->hooks[op->in[0]].dims[0];
    for (int i = 0; i < st->n; i++) {
        const float *x = span_row(it, op->in[0], i);
        float *y = span_row(it, op->out, i);
        for (int c = 0; c < d; c++) {
            double acc = 0;
            for (int h = 0; h < H; h++)
                acc += x[(size_t)h * d + c];
            y[c] = (float)(acc + (op->b ? op->b[c] : 0));
        }
    }
}

void as_interp_exec(as_interp *it, const as_op *op)
{
    const as_hook *out = &it->prog->hooks[op->out];
    const as_stream_state *st = &it->st[out->stream];
    long span = (long)st->n * out->width;
    switch (op->kind) {
    case AS_OP_EMBED:
        for (int i = 0; i < st->n; i++)
            as_weight_row(&op->w, st->tokens[st->p0 + i], span_row(it, op->out, i));
        if (op->scale != 0)
            as_scale(span_row(it, op->out, 0), span, op->scale);
        break;
    case AS_OP_POS_EMBED:
        for (int i = 0; i < st->n; i++)
            as_weight_row(&op->w, st->p0 + i, span_row(it, op->out, i));
        break;
    case AS_OP_SIN_POS: /* computed in double, rounded once: no table, whatever the context */
        for (int i = 0; i < st->n; i++)
            as_sinusoid_row(st->p0 + i, op->n_out, op->scale, span_row(it, op->out, i));
        break;
    case AS_OP_TYPE_EMBED:
        for (int i = 0; i < st->n; i++)
            as_weight_row(&op->w, st->types[st->p0 + i], span_row(it, op->out, i));
        break;
    case AS_OP_POOL:
        op_pool(it, op);
        break;
    case AS_OP_PATCH_EMBED:
        op_patch_embed(it, op);
        break;
    case AS_OP_REL_BIAS:
        op_rel_bias(it, op);
        break;
    case AS_OP_ADD:
        as_add(span_row(it, op->in[0], 0), span_row(it, op->in[1], 0), span_row(it, op->out, 0), span);
        if (op->in[2] >= 0)
            as_add(span_row(it, op->out, 0), span_row(it, op->in[2], 0), span_row(it, op->out, 0), span);
        break;
    case AS_OP_COPY:
        memcpy(span_row(it, op->out, 0), span_row(it, op->in[0], 0), (size_t)span * 4);
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
        as_attn_scores(it, op);
        break;
    case AS_OP_SOFTMAX:
        as_attn_softmax(it, op);
        break;
    case AS_OP_MIX:
        as_attn_mix(it, op);
        break;
    case AS_OP_GELU:
        if (op->gelu == AS_GELU_ERF)
            as_gelu_erf(span_row(it, op->in[0], 0), span_row(it, op->out, 0), span);
        else
            as_gelu_tanh(span_row(it, op->in[0], 0), span_row(it, op->out, 0), span);
        break;
    case AS_OP_RELU: {
        const float *x = span_row(it, op->in[0], 0);
        float *y = span_row(it, op->out, 0);
        for (long j = 0; j < span; j++)
            y[j] = x[j] < 0 ? 0.0f : x[j]; /* a NaN passes through, as PyTorch's relu lets it */
        break;
    }
    case AS_OP_SWIGLU:
        as_swiglu(span_row(it, op->in[0], 0), span_row(it, op->in[1], 0), span_row(it, op->out, 0), span);
        break;
    case AS_OP_GEGLU:
        as_geglu(span_row(it, op->in[0], 0), span_row(it, op->in[1], 0), span_row(it, op->out, 0), span);
        break;
    case AS_OP_ROUTE:
        op_route(it, op);
        break;
    case AS_OP_TOPK:
        op_topk(it, op);
        break;
    case AS_OP_GATES:
        op_gates(it, op);
        break;
    case AS_OP_EXPERT_LINEAR:
        op_expert_linear(it, op);
        break;
    case AS_OP_EXPERT_SUM:
        op_expert_sum(it, op);
        break;
    case AS_OP_SIGMOID: {
        const float *x = span_row(it, op->in[0], 0);
        float *y = span_row(it, op->out, 0);
        for (long j = 0; j < span; j++)
            y[j] = 1.0f / (1.0f + expf(-x[j]));
        break;
    }
    case AS_OP_SLICE: {
        const as_hook *x = &it->prog->hooks[op->in[0]];
        int G = out->dims[0], w = out->dims[1], wx = x->width / G;
        for (int i = 0; i < st->n; i++) {
            const float *a = span_row(it, op->in[0], i);
            float *y = span_row(it, op->out, i);
            for (int g = 0; g < G; g++)
                memcpy(y + (size_t)g * w, a + (size_t)g * wx + op->col0, (size_t)w * sizeof(float));
        }
        break;
    }
    case AS_OP_CONCAT: {
        const as_hook *ha = &it->prog->hooks[op->in[0]], *hb = &it->prog->hooks[op->in[1]];
        int G = out->dims[0], wa = ha->width / G, Gb = hb->n_dims > 1 ? hb->dims[0] : 1, wb = hb->width / Gb;
        for (int i = 0; i < st->n; i++) {
            const float *a = span_row(it, op->in[0], i), *b = span_row(it, op->in[1], i);
            float *y = span_row(it, op->out, i);
            for (int g = 0; g < G; g++) {
                memcpy(y + (size_t)g * (wa + wb), a + (size_t)g * wa, (size_t)wa * sizeof(float));
                memcpy(y + (size_t)g * (wa + wb) + wa, b + (size_t)(Gb > 1 ? g : 0) * wb, (size_t)wb * sizeof(float));
            }
        }
        break;
    }
    case AS_OP_HEAD_LINEAR: {
        int G = out->dims[0], n = out->dims[1], wx = it->prog->hooks[op->in[0]].width / G;
        for (int i = 0; i < st->n; i++) {
            const float *x = span_row(it, op->in[0], i);
            float *y = span_row(it, op->out, i);
            for (int g = 0; g < G; g++)
                for (int r = 0; r < n; r++)
                    y[(size_t)g * n + r] = as_weight_dot(&op->w, g * n + r, x + (size_t)g * wx + op->col0);
        }
        break;
    }
    case AS_OP_HEAD_OUT:
        op_head_out(it, op);
        break;
    case AS_OP_HEAD_SUM:
        op_head_sum(it, op);
        break;
    case AS_OP_GATED_ADD: {
        int d = out->width;
        for (int i = 0; i < st->n; i++) {
            const float *a = span_row(it, op->in[0], i), *b = span_row(it, op->in[1], i);
            float g = span_row(it, op->in[2], i)[0], *y = span_row(it, op->out, i);
            for (int c = 0; c < d; c++)
                y[c] = a[c] + g * b[c];
        }
        break;
    }
    }
}
