/* interp: the step-through interpreter (interp.h). The attention ops are
 * in attention.c. */
#include "attnscope/interp.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/kernels.h"
#include "attnscope/pool.h"
#include "interp_internal.h"

int as_interp_new(as_interp **out, const as_program *p, as_capture *cap, as_error *err)
{
    *out = NULL;
    as_interp *it = calloc(1, sizeof *it);
    if (!it)
        return as_error_set(err, "out of memory");
    it->prog = p;
    it->model = p->model;
    it->cap = cap;
    it->out = &it->st[p->out_stream];
    it->n_ctx = it->out->n_ctx = p->streams[p->out_stream].n_ctx;
    it->rope_stream = -1;
    bool ok = true;
    for (int s = 0; s < p->n_streams; s++) {
        it->st[s].n_ctx = p->streams[s].n_ctx;
        it->st[s].tokens = calloc((size_t)it->st[s].n_ctx, sizeof *it->st[s].tokens);
        it->st[s].types = calloc((size_t)it->st[s].n_ctx, sizeof *it->st[s].types);
        ok = ok && it->st[s].tokens && it->st[s].types;
        if (p->streams[s].input == AS_INPUT_PIXELS) {
            const as_patch_spec *ps = &p->streams[s].patch;
            it->st[s].pixels = calloc((size_t)ps->channels * (size_t)ps->size * (size_t)ps->size + 1, sizeof(float));
            ok = ok && it->st[s].pixels;
        }
        /* A causal stream's passes are at most its positions; any other's
         * at most one per input it is given. */
        it->cap_passes += it->st[s].n_ctx + 1;
    }
    it->passes = calloc((size_t)it->cap_passes, sizeof *it->passes);
    it->brk = calloc((size_t)p->n_hooks, sizeof *it->brk);
    it->span = calloc((size_t)p->n_hooks, sizeof *it->span);
    if (!ok || !it->passes || !it->brk || !it->span) {
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
    for (int s = 0; s < AS_MAX_STREAMS; s++) {
        for (int k = 0; k < AS_HK_COUNT; k++)
            free(it->scratch[s][k]);
        free(it->st[s].tokens);
        free(it->st[s].types);
        free(it->st[s].pixels);
    }
    free(it->tmp);
    free(it->rope);
    as_pool_free(it->pool);
    as_interp_clear_rules(it, true);
    as_interp_clear_rules(it, false);
    free(it->rules);
    free(it->span);
    free(it->brk);
    free(it->passes);
    free(it);
}

/* Streams from s on start over: nothing of them is computed. Earlier
 * streams computed under other rules start over too: what stays must be
 * fresh. */
static void reset_from(as_interp *it, int s)
{
    const as_program *p = it->prog;
    if (as_interp_stale(it))
        s = 0;
    it->gen++;
    for (int h = 0; h < p->n_hooks; h++)
        if (p->hooks[h].stream >= s)
            it->cap->filled[h] = 0;
    for (int t = s; t < p->n_streams; t++)
        it->st[t].n_done = 0;
    it->in_pass = false;
    it->n_passes = 0;
    it->pc = 0;
    it->nonfinite.found = false;
}

void as_interp_reset(as_interp *it)
{
    reset_from(it, 0);
}

static int check_ids(const as_interp *it, const int32_t *ids, int n, int first, as_error *err)
{
    for (int i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= it->model->cfg.n_vocab)
            return as_error_set(err, "token id %d at position %d is outside the vocabulary (0..%d)",
                                ids[i], first + i, it->model->cfg.n_vocab - 1);
    return AS_OK;
}

int as_interp_set_input(as_interp *it, int stream, const int32_t *ids, int n, as_error *err)
{
    as_stream_state *st = &it->st[stream];
    if (it->prog->streams[stream].input == AS_INPUT_PIXELS)
        return as_error_set(err, "%s reads an image, not token ids: give it one with `image FILE`",
                            it->model->cfg.name);
    if (n > st->n_ctx && st->n_ctx < it->prog->streams[stream].n_ctx)
        return as_error_set(err, "the prompt has %d tokens but the context is set to %d (set ctx %d or more; %s's "
                            "window is %d)", n, st->n_ctx, n, it->model->cfg.name, it->prog->streams[stream].n_ctx);
    if (n > st->n_ctx && stream == it->prog->out_stream)
        return as_error_set(err, "the prompt has %d tokens but %s's context holds %d", n,
                            it->model->cfg.name, st->n_ctx);
    if (n > st->n_ctx)
        return as_error_set(err, "the %s input has %d tokens but %s's %s context holds %d",
                            it->prog->streams[stream].name, n, it->model->cfg.name, it->prog->streams[stream].name,
                            st->n_ctx);
    if (check_ids(it, ids, n, 0, err))
        return AS_ERR;
    reset_from(it, stream);
    memcpy(st->tokens, ids, (size_t)n * sizeof *ids);
    /* Types past the tokens stay 0, so only the old tokens' are cleared
     * (a context of 2^24 keeps its untouched pages unmapped). */
    memset(st->types, 0, (size_t)st->n_tokens * sizeof *st->types);
    st->n_tokens = st->n_prompt = n;
    return AS_OK;
}

/* Stream s's context under a cap of n (only token streams are capped). */
static int capped_ctx(const as_stream *st, int n)
{
    return st->input != AS_INPUT_TOKENS || n <= 0 || n > st->n_ctx ? st->n_ctx : n;
}

int as_interp_set_ctx(as_interp *it, int n, as_error *err)
{
    const as_program *p = it->prog;
    for (int s = 0; s < p->n_streams; s++)
        if (it->st[s].n_tokens > capped_ctx(&p->streams[s], n))
            return as_error_set(err, "the %s holds %d tokens: a context of %d would cut them (a shorter prompt first)",
                                s == p->out_stream ? "context" : p->streams[s].name, it->st[s].n_tokens,
                                capped_ctx(&p->streams[s], n));
    for (int s = 0; s < p->n_streams; s++)
        it->st[s].n_ctx = capped_ctx(&p->streams[s], n);
    it->n_ctx = it->out->n_ctx;
    return AS_OK;
}

int as_interp_set_pixels(as_interp *it, int stream, const float *pixels, int n, as_error *err)
{
    const as_stream *s = &it->prog->streams[stream];
    const as_patch_spec *ps = &s->patch;
    int want = ps->channels * ps->size * ps->size;
    if (s->input != AS_INPUT_PIXELS)
        return as_error_set(err, "%s reads token ids, not an image", it->model->cfg.name);
    if (n != want)
        return as_error_set(err, "an image of %d values for %s, which reads %d (%d x %d x %d)", n,
                            it->model->cfg.name, want, ps->channels, ps->size, ps->size);
    as_stream_state *st = &it->st[stream];
    reset_from(it, stream);
    memcpy(st->pixels, pixels, (size_t)n * sizeof *pixels);
    st->n_tokens = st->n_prompt = st->n_ctx;
    return AS_OK;
}

/* Rows of the program's token-type embedding, or 0 when it has none. */
static int n_types(const as_program *p)
{
    for (int o = 0; o < p->n_ops; o++)
        if (p->ops[o].kind == AS_OP_TYPE_EMBED)
            return p->ops[o].w.rows;
    return 0;
}

int as_interp_set_types(as_interp *it, int stream, const int32_t *types, int n, as_error *err)
{
    as_stream_state *st = &it->st[stream];
    int nt = n_types(it->prog);
    if (n != st->n_tokens)
        return as_error_set(err, "%d token types for %d tokens", n, st->n_tokens);
    for (int i = 0; i < n; i++) {
        if (types[i] == 0)
            continue;
        if (nt == 0)
            return as_error_set(err, "%s has no token-type embedding: every token is of type 0 (position %d is "
                                "given type %d)", it->model->cfg.name, i, types[i]);
        if (types[i] < 0 || types[i] >= nt)
            return as_error_set(err, "token type %d at position %d is outside the model's %d types (0..%d)",
                                types[i], i, nt, nt - 1);
    }
    reset_from(it, stream);
    memcpy(st->types, types, (size_t)n * sizeof *types);
    return AS_OK;
}

int as_interp_set_tokens(as_interp *it, const int32_t *ids, int n, as_error *err)
{
    return as_interp_set_input(it, it->prog->out_stream, ids, n, err);
}

int as_interp_append(as_interp *it, int32_t id, as_error *err)
{
    as_stream_state *st = it->out;
    if (st->n_tokens >= st->n_ctx)
        return as_error_set(err, "the context is full (%d tokens)", st->n_ctx);
    if (id < 0 || id >= it->model->cfg.n_vocab)
        return as_error_set(err, "token id %d is outside the vocabulary (0..%d)", id,
                            it->model->cfg.n_vocab - 1);
    /* A stream that is not causal sees its new token from every position:
     * it starts over. */
    if (!it->prog->streams[it->prog->out_stream].causal)
        reset_from(it, it->prog->out_stream);
    st->tokens[st->n_tokens++] = id;
    return AS_OK;
}

void as_interp_position(const as_interp *it, int stream, int pos, as_position *out)
{
    out->token = -1;
    out->name[0] = '\0';
    const as_stream *s = &it->prog->streams[stream];
    if (s->input == AS_INPUT_TOKENS)
        out->token = it->st[stream].tokens[pos];
    else if (pos == 0)
        snprintf(out->name, sizeof out->name, "CLS");
    else if (s->patch.grid > 0)
        snprintf(out->name, sizeof out->name, "r%dc%d", (pos - 1) / s->patch.grid, (pos - 1) % s->patch.grid);
    else
        snprintf(out->name, sizeof out->name, "%d", pos);
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

/* Floats of a hook's span rows (an attention hook's: every key of its site). */
static size_t span_floats(const as_interp *it, const as_hook *hk)
{
    size_t need = (size_t)hk->width * (size_t)it->st[hk->stream].n;
    return hk->is_attn ? need * (size_t)attn_keys(it, &it->prog->attn[hk->attn]) : need;
}

/* Points every hook at the rows of its stream's span: its capture storage
 * when kept, else the working buffer of its kind and stream. Hooks sharing
 * a buffer may need different sizes (a decoder's self- and cross-attention
 * scores), so every buffer is grown before any hook points into it: a
 * later growth would move it from under an earlier hook. */
static int setup_span(as_interp *it, as_error *err)
{
    const as_program *p = it->prog;
    size_t rope = 0, tmp = 0, patches = 0;
    for (int h = 0; h < p->n_hooks; h++) {
        const as_hook *hk = &p->hooks[h];
        if (!as_capture_has(it->cap, h) &&
            ensure(&it->scratch[hk->stream][hk->kind], &it->scratch_cap[hk->stream][hk->kind], span_floats(it, hk),
                   err))
            return AS_ERR;
    }
    for (int h = 0; h < p->n_hooks; h++) {
        const as_hook *hk = &p->hooks[h];
        const as_stream_state *st = &it->st[hk->stream];
        if (as_capture_has(it->cap, h))
            it->span[h] = hk->is_attn ? it->cap->store[h] : it->cap->store[h] + (size_t)st->p0 * (size_t)hk->width;
        else
            it->span[h] = it->scratch[hk->stream][hk->kind];
    }
    for (int o = 0; o < p->n_ops; o++) {
        const as_op *op = &p->ops[o];
        size_t n = (size_t)span_of(it, op->out)->n;
        if (op->kind == AS_OP_ROPE && 2 * n * (size_t)op->rope.dim > rope)
            rope = 2 * n * (size_t)op->rope.dim;
        if (op->kind == AS_OP_SCORES && as_attn_tmp_floats(it, &p->attn[op->attn]) > tmp)
            tmp = as_attn_tmp_floats(it, &p->attn[op->attn]);
        if (op->kind == AS_OP_PATCH_EMBED && n * (size_t)op->n_in > patches)
            patches = n * (size_t)op->n_in;
        if (op->kind == AS_OP_REL_BIAS && (size_t)op->n_in * (size_t)op->n_out > patches)
            patches = (size_t)op->n_in * (size_t)op->n_out; /* the bias table, decoded */
        /* an expert's gathered rows and their products */
        if (op->kind == AS_OP_EXPERT_LINEAR && n * (size_t)(op->n_in + op->n_out) > patches)
            patches = n * (size_t)(op->n_in + op->n_out);
    }
    if (ensure(&it->rope, &it->rope_cap, rope, err))
        return AS_ERR;
    /* One (n_q, keys) matrix per task of a span's attention ops; or the
     * span's flattened patches; or a relative position bias's table. */
    tmp *= (size_t)as_pool_size(it->pool);
    return ensure(&it->tmp, &it->tmp_cap, tmp > patches ? tmp : patches, err);
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

static int enter_pass(as_interp *it, const as_pass *ps, as_error *err)
{
    int end[AS_MAX_STREAMS];
    for (int s = 0; s < it->prog->n_streams; s++) {
        it->st[s].p0 = ps->p0[s];
        it->st[s].n = ps->n[s];
        end[s] = ps->p0[s] + ps->n[s];
    }
    it->pc = 0;
    it->in_pass = true;
    it->rope_stream = -1;
    it->ready_until = 0;
    it->nonfinite.found = false;
    setup_pool(it);
    if (as_capture_prepare(it->cap, end, err))
        return AS_ERR;
    return setup_span(it, err);
}

float *as_interp_attn_row(const as_interp *it, int h, int head, int i)
{
    const as_stream_state *st = span_of(it, h);
    if (as_capture_has(it->cap, h))
        return it->span[h] + as_capture_attn_offset(it->cap, h, head, st->p0 + i);
    const as_attn *a = &it->prog->attn[it->prog->hooks[h].attn];
    return it->span[h] + ((size_t)head * (size_t)st->n + (size_t)i) * (size_t)attn_keys(it, a);
}

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

static void op_linear(as_interp *it, const as_op *op)
{
    int n = span_of(it, op->out)->n, first = 0;
    if (n == 1 || (op->last_row_only && !as_capture_has(it->cap, op->out))) {
        first = n - 1;
        as_matvec(it->pool, span_row(it, op->in[0], n - 1), &op->w, op->b, span_row(it, op->out, n - 1));
    } else {
        as_linear_pool(it->pool, span_row(it, op->in[0], 0), n, &op->w, op->b, span_row(it, op->out, 0));
    }
    if (op->softcap > 0)
        as_softcap(span_row(it, op->out, first), span_row(it, op->out, first), (long)(n - first) * op->n_out, op->softcap);
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
static int expert_of(float v, int n_expert)
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
static void choose_experts(const as_op *op, const float *w, const bool *off, float *out)
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
        choose_experts(op, span_row(it, op->in[0], i), NULL, span_row(it, op->out, i));
}

static void op_gates(as_interp *it, const as_op *op)
{
    const as_stream_state *st = span_of(it, op->out);
    for (int i = 0; i < st->n; i++) {
        const float *w = span_row(it, op->in[0], i), *ix = span_row(it, op->in[1], i);
        float *g = span_row(it, op->out, i);
        float sum = 0;
        for (int j = 0; j < op->k; j++) {
            int e = expert_of(ix[j], op->n_expert);
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
            int e = expert_of(ix[j], op->n_expert);
            bool again = false;
            for (int t = 0; t < j && !again; t++)
                again = expert_of(ix[t], op->n_expert) == e;
            if (e < 0 || again)
                memset(span_row(it, op->out, i) + (size_t)j * no, 0, no * sizeof(float));
        }
    }
    for (int e = 0; e < op->n_expert; e++) {
        int m = 0;
        for (int i = 0; i < st->n; i++) {
            const float *ix = span_row(it, op->in[1], i), *x = span_row(it, op->in[0], i);
            for (int j = 0; j < op->k; j++)
                if (expert_of(ix[j], op->n_expert) == e) {
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
                if (expert_of(ix[j], op->n_expert) == e) {
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

static void exec(as_interp *it, const as_op *op)
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
        for (int i = 0; i < st->n; i++) {
            float *y = span_row(it, op->out, i);
            for (int j = 0; j + 1 < op->n_out; j += 2) {
                double a = (st->p0 + i) * pow((double)op->scale, -(double)j / op->n_out);
                y[j] = (float)sin(a);
                y[j + 1] = (float)cos(a);
            }
        }
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
    const as_stream_state *st = &it->st[hk->stream];
    if (it->nonfinite.found)
        return;
    int first = op->last_row_only && !as_capture_has(it->cap, op->out) ? st->n - 1 : 0;
    for (int i = first; i < st->n; i++) {
        int q = st->p0 + i;
        if (!hk->is_attn) {
            if (scan(it, op->out, q, span_row(it, op->out, i), hk->width, 0))
                return;
            continue;
        }
        const as_attn *a = &it->prog->attn[hk->attn];
        int len = attn_row_len(it, a, i);
        for (int head = 0; head < hk->width; head++) {
            const float *x = as_interp_attn_row(it, op->out, head, i);
            /* A window's hidden keys hold -inf by design: scan what is seen. */
            int k0 = a->mask == AS_MASK_WINDOW && q - a->window + 1 > 0 ? q - a->window + 1 : 0;
            if (scan(it, op->out, q, x + k0, len - k0, head * len + k0))
                return;
        }
    }
}

int as_rule_len(const as_interp *it, const as_rule *r)
{
    const as_hook *h = &it->prog->hooks[r->hook];
    return r->head >= 0 ? h->dims[1] : h->width;
}

/* The expert rules act on a routed MLP's slots, whichever position chose
 * the expert: its slots of experts.hook_out zeroed (read against the
 * indices the producing op read), or the top k chosen again from the
 * weights without every expert routed off at this hook. */
static void apply_expert_rule(as_interp *it, const as_rule *r)
{
    const as_op *op = as_program_producer(it->prog, r->hook);
    const as_stream_state *st = span_of(it, r->hook);
    if (!op)
        return;
    int E = op->n_expert, k = op->k;
    for (int i = 0; i < st->n; i++) {
        if (r->pos >= 0 && r->pos != st->p0 + i)
            continue;
        float *y = span_row(it, r->hook, i);
        if (r->kind == AS_RULE_EXPERT_ZERO) {
            const float *ix = span_row(it, op->in[1], i);
            for (int j = 0; j < k; j++)
                if (expert_of(ix[j], E) == r->head)
                    memset(y + (size_t)j * (size_t)op->n_out, 0, (size_t)op->n_out * sizeof *y);
            continue;
        }
        bool off[AS_MAX_EXPERTS] = {false};
        for (int q = 0; q < it->n_rules; q++)
            if (it->rules[q].kind == AS_RULE_ROUTE_OFF && it->rules[q].hook == r->hook && it->rules[q].head >= 0 &&
                it->rules[q].head < E)
                off[it->rules[q].head] = true;
        /* -1 when too few are left: the slot contributes nothing */
        choose_experts(op, span_row(it, op->in[0], i), off, y);
    }
}

static void apply_rule(as_interp *it, const as_rule *r)
{
    if (r->kind == AS_RULE_EXPERT_ZERO || r->kind == AS_RULE_ROUTE_OFF) {
        apply_expert_rule(it, r);
        return;
    }
    int len = as_rule_len(it, r), off = r->head >= 0 ? r->head * len : 0;
    const as_stream_state *st = span_of(it, r->hook);
    for (int i = 0; i < st->n; i++) {
        int pos = st->p0 + i;
        if (r->pos >= 0 && r->pos != pos)
            continue;
        float *dst = span_row(it, r->hook, i) + off;
        if (r->kind == AS_RULE_ZERO)
            memset(dst, 0, (size_t)len * sizeof *dst);
        else if (r->per_position && pos >= r->n_pos) /* past the positions the values came from */
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

/* Checks a watch over the span's rows (attention: each head's row). */
static bool check_watch(as_interp *it, int k)
{
    const as_rule *r = &it->rules[k];
    const as_hook *h = &it->prog->hooks[r->hook];
    const as_stream_state *st = &it->st[h->stream];
    for (int i = 0; i < st->n; i++) {
        int q = st->p0 + i, at;
        float val;
        for (int head = 0; head < (h->is_attn ? h->width : 1); head++) {
            const float *x = h->is_attn ? as_interp_attn_row(it, r->hook, head, i) : span_row(it, r->hook, i);
            int len = h->is_attn ? attn_row_len(it, &it->prog->attn[h->attn], i) : h->width;
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

/* Something computed: a pass run or under way, or a stream's positions done. */
static bool has_state(const as_interp *it)
{
    if (it->n_passes > 0 || it->in_pass)
        return true;
    for (int s = 0; s < it->prog->n_streams; s++)
        if (it->st[s].n_done > 0)
            return true;
    return false;
}

static bool changes_values(const as_rule *r)
{
    return r->kind != AS_RULE_WATCH;
}

bool as_interp_stale(const as_interp *it)
{
    return has_state(it) && (it->state_gen != it->rules_gen || it->state_off != it->rules_off);
}

bool as_interp_state_clean(const as_interp *it)
{
    if (as_interp_stale(it))
        return false;
    for (int k = 0; k < it->n_rules && !it->state_off; k++)
        if (changes_values(&it->rules[k]))
            return false;
    return true;
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
        if (r->per_position)
            dst->n_pos = it->st[it->prog->hooks[r->hook].stream].n_tokens;
        size_t n = len * (r->per_position ? (size_t)dst->n_pos : 1);
        dst->values = malloc(n * sizeof *dst->values);
        if (!dst->values)
            return as_error_set(err, "out of memory");
        memcpy(dst->values, r->values, n * sizeof *dst->values);
    }
    it->n_rules++;
    if (changes_values(dst))
        it->rules_gen++;
    return AS_OK;
}

void as_interp_rules_off(as_interp *it, bool off)
{
    it->rules_off = off;
}

void as_interp_truncate_rules(as_interp *it, int n)
{
    while (it->n_rules > n) {
        as_rule *r = &it->rules[--it->n_rules];
        if (changes_values(r))
            it->rules_gen++;
        free(r->values);
    }
}

int as_interp_clear_rules(as_interp *it, bool watches)
{
    int kept = 0, removed = 0;
    for (int k = 0; k < it->n_rules; k++) {
        if ((it->rules[k].kind == AS_RULE_WATCH) == watches) {
            if (changes_values(&it->rules[k]))
                it->rules_gen++;
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
    if (op->kind != AS_OP_LINEAR || span_of(it, op->out)->n != 1 || it->pc < it->ready_until)
        return;
    for (; k < AS_MATVEC_MAX && k < budget && it->pc + k < p->n_ops; k++) {
        const as_op *o = &p->ops[it->pc + k];
        if (o->kind != AS_OP_LINEAR || o->in[0] != op->in[0])
            break;
        s[k] = (as_matvec_spec){span_row(it, o->in[0], 0), &o->w, o->b, span_row(it, o->out, 0)};
    }
    if (k < 2)
        return;
    as_matvec_many(it->pool, s, k);
    it->ready_until = it->pc + k;
}

/* The pass is over: every stream's span is done. */
static void end_pass(as_interp *it)
{
    it->in_pass = false;
    for (int s = 0; s < it->prog->n_streams; s++)
        it->st[s].n_done = it->st[s].p0 + it->st[s].n;
}

/* Ops of a stream with nothing new in this pass are passed over (an
 * encoder already run while the decoder generates). */
static void skip_idle(as_interp *it)
{
    while (it->pc < it->prog->n_ops && span_of(it, it->prog->ops[it->pc].out)->n == 0)
        it->pc++;
    if (it->pc == it->prog->n_ops)
        end_pass(it);
}

static bool run_op(as_interp *it)
{
    const as_op *op = &it->prog->ops[it->pc];
    const as_stream_state *st = span_of(it, op->out);
    if (it->pc >= it->ready_until)
        exec(it, op);
    bool fired = apply_rules(it, op->out);
    it->gen++;
    check_finite(it, op);
    if (as_capture_has(it->cap, op->out))
        it->cap->filled[op->out] = st->p0 + st->n;
    it->pc++;
    skip_idle(it);
    return fired;
}

/* This pass's spans: a causal stream's new positions (at most `chunk` of
 * them when chunk > 0), all of any other stream whose input changed;
 * false when no stream has anything new. */
static bool next_spans(const as_interp *it, as_pass *ps, int chunk)
{
    bool any = false;
    for (int s = 0; s < it->prog->n_streams; s++) {
        const as_stream_state *st = &it->st[s];
        bool pending = st->n_done < st->n_tokens, causal = it->prog->streams[s].causal;
        ps->p0[s] = causal || !pending ? st->n_done : 0;
        ps->n[s] = pending ? st->n_tokens - ps->p0[s] : 0;
        if (causal && chunk > 0 && ps->n[s] > chunk)
            ps->n[s] = chunk;
        any |= pending;
    }
    return any;
}

static int begin_pass(as_interp *it, const as_pass *ps, as_error *err)
{
    if (!has_state(it)) {
        it->state_gen = it->rules_gen;
        it->state_off = it->rules_off;
    }
    if (enter_pass(it, ps, err))
        return AS_ERR;
    it->passes[it->n_passes++] = *ps;
    skip_idle(it);
    return AS_OK;
}

/* A stream read through cross-attention (an encoder's output) must have
 * its input before a stream that reads it is computed. */
static int check_kv_streams(const as_interp *it, const as_pass *ps, as_error *err)
{
    const as_program *p = it->prog;
    for (int a = 0; a < p->n_attn; a++) {
        const as_attn *s = &p->attn[a];
        if (s->kv_stream != s->q_stream && ps->n[s->q_stream] > 0 && it->st[s->kv_stream].n_tokens == 0)
            return as_error_set(err, "the %s stream has no input yet, and the %s stream reads it through "
                                "cross-attention", p->streams[s->kv_stream].name, p->streams[s->q_stream].name);
    }
    return AS_OK;
}

/* Begins a pass over the pending positions, if any (*started says). A
 * run to the end with nothing captured takes them AS_PROMPT_CHUNK at a time. */
static int start_pass(as_interp *it, as_run_mode mode, bool *started, as_error *err)
{
    as_pass ps;
    bool to_end = mode == AS_RUN_FINISH || mode == AS_RUN_CONTINUE;
    *started = false;
    if (!next_spans(it, &ps, to_end && it->cap->budget == 0 ? AS_PROMPT_CHUNK : 0))
        return AS_OK;
    if (check_kv_streams(it, &ps, err))
        return AS_ERR;
    if (it->n_passes == it->cap_passes)
        return as_error_set(err, "too many passes over this input (%d)", it->n_passes);
    if (begin_pass(it, &ps, err))
        return AS_ERR;
    *started = true;
    return AS_OK;
}

int as_interp_refresh(as_interp *it, int *positions, as_error *err)
{
    const as_program *p = it->prog;
    if (positions)
        *positions = 0;
    if (!as_interp_stale(it))
        return AS_OK;
    /* The point reached: a pass under way (its spans and op), or the
     * positions done. */
    bool mid = it->in_pass;
    int pc = it->pc;
    as_pass target = mid ? it->passes[it->n_passes - 1] : (as_pass){{0}, {0}};
    int done[AS_MAX_STREAMS], n_tokens[AS_MAX_STREAMS];
    for (int s = 0; s < p->n_streams; s++) {
        done[s] = mid ? target.p0[s] : it->st[s].n_done;
        n_tokens[s] = it->st[s].n_tokens;
    }
    reset_from(it, 0);
    /* Up to the positions done, as one run to the end would (the later
     * tokens are hidden meanwhile, and kept). */
    for (int s = 0; s < p->n_streams; s++)
        it->st[s].n_tokens = done[s];
    as_stop stop;
    int rc = as_interp_run(it, AS_RUN_FINISH, 0, &stop, err);
    for (int s = 0; s < p->n_streams; s++)
        it->st[s].n_tokens = n_tokens[s];
    if (rc || stop == AS_STOP_INTERRUPT)
        return rc;
    if (mid) {
        if (it->n_passes == it->cap_passes)
            return as_error_set(err, "too many passes over this input (%d)", it->n_passes);
        if (begin_pass(it, &target, err))
            return AS_ERR;
        while (it->in_pass && it->pc < pc) {
            if (it->interrupt && *it->interrupt)
                return AS_OK;
            run_op(it);
        }
    }
    if (positions)
        *positions = done[p->out_stream] + (mid ? target.n[p->out_stream] : 0);
    return AS_OK;
}

int as_interp_run(as_interp *it, as_run_mode mode, long count, as_stop *stop, as_error *err)
{
    *stop = AS_STOP_IDLE;
    /* Never go on from values computed under other rules. */
    if (as_interp_stale(it) && as_interp_refresh(it, NULL, err))
        return AS_ERR;
    if (!it->in_pass) {
        bool started;
        if (start_pass(it, mode, &started, err))
            return AS_ERR;
        if (!started)
            return AS_OK;
        if (!it->in_pass) {
            *stop = AS_STOP_PASS_END;
            return AS_OK;
        }
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
            /* a chunk of a longer prompt: on to the next, as one run (a
             * pass that took every new position leaves none pending) */
            bool started = false;
            if (it->cap->budget == 0 && (mode == AS_RUN_FINISH || mode == AS_RUN_CONTINUE) &&
                start_pass(it, mode, &started, err))
                return AS_ERR;
            if (started && it->in_pass)
                continue;
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
    it->gen++;
    as_pass ps = it->passes[j];
    it->n_passes = j + 1;
    for (int s = 0; s < p->n_streams; s++)
        it->st[s].n_done = ps.p0[s];
    if (enter_pass(it, &ps, err))
        return AS_ERR;
    bool replay = false;
    for (int o = 0; o < p->n_ops; o++) {
        int h = p->ops[o].out, p0 = ps.p0[p->hooks[h].stream];
        if (o < pc)
            replay |= !as_capture_has(it->cap, h);
        else if (it->cap->filled[h] > p0)
            it->cap->filled[h] = p0;
    }
    for (int h = 0; h < p->n_hooks; h++) {
        int s = p->hooks[h].stream;
        if (it->cap->filled[h] > ps.p0[s] + ps.n[s])
            it->cap->filled[h] = ps.p0[s] + ps.n[s];
    }
    /* Ops are deterministic and only write their own hook (and this span's
     * KV rows), so replaying from the pass start gives the same state. */
    skip_idle(it);
    if (replay)
        while (it->pc < pc && it->in_pass)
            run_op(it);
    it->pc = pc;
    it->in_pass = pc < p->n_ops;
    if (!it->in_pass)
        end_pass(it);
    return AS_OK;
}

int as_interp_back(as_interp *it, long n, as_error *err)
{
    long per = it->prog->n_ops;
    if (n <= 0)
        return AS_OK;
    if (as_interp_stale(it) && as_interp_refresh(it, NULL, err))
        return AS_ERR;
    if (it->n_passes == 0)
        return as_error_set(err, "nothing to go back to: no op has run yet");
    long now = it->in_pass ? (it->n_passes - 1) * per + it->pc : it->n_passes * per;
    long t = now - n < 0 ? 0 : now - n;
    return restore(it, (int)(t / per), (int)(t % per), err);
}

const float *as_interp_logits(const as_interp *it)
{
    if (it->prog->unembed < 0)
        return NULL;
    int h = it->prog->ops[it->prog->unembed].out;
    const as_stream_state *st = it->out;
    if (it->in_pass || st->n_done == 0 || st->n_done != st->n_tokens || it->n_passes == 0 || as_interp_stale(it))
        return NULL;
    int pos = it->prog->logits_pos >= 0 ? it->prog->logits_pos : st->n_done - 1;
    if (as_capture_has(it->cap, h))
        return as_capture_row(it->cap, h, pos);
    return span_row(it, h, pos - st->p0);
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
