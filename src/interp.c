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
    it->fused = calloc((size_t)p->n_attn + 1, sizeof *it->fused);
    if (!ok || !it->passes || !it->brk || !it->span || !it->fused) {
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
    free(it->fused);
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
    as_attn_plan(it);
    for (int h = 0; h < p->n_hooks; h++) {
        const as_hook *hk = &p->hooks[h];
        if (hk->is_attn && it->fused[hk->attn]) /* computed a block of rows at a time by the mix */
            continue;
        if (!as_capture_stored(it->cap, h) &&
            ensure(&it->scratch[hk->stream][hk->kind], &it->scratch_cap[hk->stream][hk->kind], span_floats(it, hk),
                   err))
            return AS_ERR;
    }
    for (int h = 0; h < p->n_hooks; h++) {
        const as_hook *hk = &p->hooks[h];
        const as_stream_state *st = &it->st[hk->stream];
        if (hk->is_attn && it->fused[hk->attn])
            it->span[h] = NULL; /* no rows: nothing may read them (as_attn_plan's conditions) */
        else if (as_capture_stored(it->cap, h))
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
    /* One block of a span's attention rows per task (attention.c); or the
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

/* A prompt's linear op writing to the capture file, with no rule on its
 * output, runs block by block with each block checked and its pages
 * dropped as it is done: its whole output never sits in memory at once
 * (a prompt's logits). With a rule, the rule sees the whole output first. */
static bool run_blocks(as_interp *it, const as_op *op)
{
    const as_stream_state *st = span_of(it, op->out);
    int b = as_interp_linear_block(op);
    if (op->kind != AS_OP_LINEAR || st->n <= b || !as_capture_in_file(it->cap, op->out) ||
        as_interp_has_rules(it, op->out))
        return false;
    for (int r0 = 0; r0 < st->n; r0 += b) {
        int r1 = r0 + b < st->n ? r0 + b : st->n;
        as_interp_linear_rows(it, op, r0, r1);
        as_interp_check_finite_rows(it, op, r0, r1);
        as_capture_rows_done(it->cap, op->out, st->p0 + r0, st->p0 + r1);
    }
    return true;
}

static bool run_op(as_interp *it)
{
    const as_op *op = &it->prog->ops[it->pc];
    const as_stream_state *st = span_of(it, op->out);
    bool checked = it->pc >= it->ready_until && run_blocks(it, op);
    if (it->pc >= it->ready_until && !checked)
        as_interp_exec(it, op);
    bool fired = as_interp_apply_rules(it, op->out);
    it->gen++;
    if (!checked)
        as_interp_check_finite(it, op);
    if (as_capture_has(it->cap, op->out))
        it->cap->filled[op->out] = st->p0 + st->n;
    if (st->n >= AS_CAPFILE_DROP_ROWS) {
        /* its rows, and every row so far of what it read (a KV cache's too) */
        as_capture_rows_done(it->cap, op->out, st->p0, st->p0 + st->n);
        for (int k = 0; k < 3; k++)
            if (op->in[k] >= 0) {
                const as_stream_state *in = span_of(it, op->in[k]);
                as_capture_rows_done(it->cap, op->in[k], 0, in->p0 + in->n);
            }
        if (op->kind == AS_OP_MIX) { /* a fused site's mix reads its q and k too (attention.c) */
            const as_attn *a = &it->prog->attn[op->attn];
            as_capture_rows_done(it->cap, a->q, 0, span_of(it, a->q)->p0 + span_of(it, a->q)->n);
            as_capture_rows_done(it->cap, a->k, 0, span_of(it, a->k)->p0 + span_of(it, a->k)->n);
        }
    }
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
    if (!as_interp_has_state(it)) {
        it->state_gen = it->rules_gen;
        it->state_off = it->rules_off;
        it->state_native = !strcmp(as_get_activations(), "native");
        it->state_patterns = (int)as_get_patterns();
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

size_t as_interp_work_bytes(const as_interp *it)
{
    size_t n = it->tmp_cap + it->rope_cap;
    for (int s = 0; s < AS_MAX_STREAMS; s++)
        for (int k = 0; k < AS_HK_COUNT; k++)
            n += it->scratch_cap[s][k];
    return n * sizeof(float);
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

int as_interp_restore_done(as_interp *it, as_error *err)
{
    as_pass ps;
    if (!next_spans(it, &ps, 0))
        return AS_OK;
    if (begin_pass(it, &ps, err))
        return AS_ERR;
    it->pc = it->prog->n_ops;
    end_pass(it);
    it->gen++;
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
            replay |= !as_capture_stored(it->cap, h);
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
