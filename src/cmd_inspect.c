/* Reading what a pass computed: `top` (the next-token distribution),
 * `hooks`, `stats`, `norms`, `dump` (one hook as .npy) and `info` (the
 * model card and the capture's budget). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/npy.h"
#include "attnscope/view_api.h"
#include "session_internal.h"

int as_cmd_top(cmd_ctx *c)
{
    as_session *s = c->s;
    long k = 10;
    if (c->argc > 1 && as_cmd_parse_long(c->argv[1], 1, s->model->cfg.n_vocab, "K", &k, c->err))
        return AS_ERR;
    if (s->prog->logits_pos >= 0)
        return as_cmd_top_classes(c, k);
    if (as_cmd_is_encoder(s))
        return as_cmd_top_encoder(c, k);
    if (c->argc > 3)
        return as_error_set(c->err, "usage: top [K] [POS] (the next token after POS, the last position by default)");
    /* POS: the logits there (the next token after it), as the capture kept them */
    int pos = s->it->out->n_tokens - 1;
    if (c->argc > 2 && (as_cmd_require_tokens(s, c->err) || as_cmd_parse_pos(s, c->argv[2], &pos, c->err)))
        return AS_ERR;
    const float *logits = pos == s->it->out->n_tokens - 1 ? as_interp_logits(s->it) : as_cmd_logits_at(s, pos, c->err);
    if (!logits) {
        if (pos < s->it->out->n_tokens - 1 || as_cmd_require_tokens(s, c->err))
            return AS_ERR;
        return as_error_set(c->err, "no logits yet at position %d: the pass is not finished (`finish` computes them)",
                            pos);
    }
    int n = s->model->cfg.n_vocab;
    if (as_cmd_nonfinite_logits(s, logits, pos, c->err))
        return AS_ERR;
    as_probs(logits, n, s->probs);
    int m = as_top_indices(logits, n, (int)k, s->order);
    fprintf(s->out, "next token after position %d:\nrank\tid\tpiece\tprob\tlogit\n", pos);
    for (int i = 0; i < m; i++) {
        char piece[256];
        as_cmd_label(s, s->order[i], 0, piece, sizeof piece);
        fprintf(s->out, "%d\t%d\t%s\t%.6f\t%.4f\n", i + 1, s->order[i], piece, s->probs[s->order[i]],
                logits[s->order[i]]);
    }
    return AS_OK;
}

void as_cmd_format_shape(const as_session *s, int h, int n_pos, char *buf, size_t cap)
{
    size_t shape[3];
    int nd = as_capture_shape(s->cap, h, n_pos, shape);
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < nd && o < cap; i++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%zu", i ? ", " : "", shape[i]);
    if (o < cap)
        snprintf(buf + o, cap - o, "]");
}

int as_cmd_hooks(cmd_ctx *c)
{
    as_session *s = c->s;
    const char *pattern = c->argc > 1 ? c->argv[1] : "*";
    int matched = 0;
    for (int h = 0; h < s->prog->n_hooks; h++)
        matched += as_hook_name_match(pattern, s->prog->hooks[h].name);
    if (!matched)
        return as_error_set(c->err, "no hook matches '%s' (* is the only wildcard: `hooks blocks.0.*` lists block "
                            "0's, `hooks` every hook)", pattern);
    for (int h = 0; h < s->prog->n_hooks; h++) {
        if (!as_hook_name_match(pattern, s->prog->hooks[h].name))
            continue;
        char shape[64];
        as_cmd_format_shape(s, h, s->it->st[s->prog->hooks[h].stream].n_tokens, shape, sizeof shape);
        fprintf(s->out, "%s\t%s%s\n", s->prog->hooks[h].name, shape,
                as_capture_has(s->cap, h) ? "" : "\t(not captured)");
    }
    return AS_OK;
}

typedef struct moments {
    double sum, sq;
    float mn, mx;
    size_t n, nan, inf;
} moments;

static void add_values(moments *m, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i])) {
            m->nan++;
            continue;
        }
        if (isinf(x[i])) {
            m->inf++;
            continue;
        }
        if (m->n == 0 || x[i] < m->mn)
            m->mn = x[i];
        if (m->n == 0 || x[i] > m->mx)
            m->mx = x[i];
        m->sum += x[i];
        m->sq += (double)x[i] * x[i];
        m->n++;
    }
}

/* The hook named by argv[1] (with argc checked against `want`) and how
 * many positions it holds; AS_ERR with a message when it holds none. */
static int captured_arg(cmd_ctx *c, int want, const char *usage, int *h, int *n)
{
    if (c->argc != want)
        return as_error_set(c->err, "usage: %s", usage);
    *h = as_cmd_find_hook(c->s, c->argv[1], c->err);
    *n = *h < 0 ? -1 : as_cmd_hook_positions(c->s, *h, c->err);
    return *n < 0 ? AS_ERR : AS_OK;
}

int as_cmd_stats(cmd_ctx *c)
{
    as_session *s = c->s;
    int h = -1, n = 0;
    if (captured_arg(c, 2, "stats HOOK", &h, &n))
        return AS_ERR;
    const as_hook *hk = &s->prog->hooks[h];
    moments m = {0};
    for (int q = 0; q < n; q++) {
        if (!hk->is_attn) {
            add_values(&m, as_capture_row(s->cap, h, q), (size_t)hk->width);
            continue;
        }
        /* Only the keys the query sees: hidden ones are -inf/0 by definition. */
        int k0, k1;
        as_capture_attn_visible(s->cap, h, q, &k0, &k1);
        for (int head = 0; head < hk->width; head++)
            add_values(&m, as_capture_attn_row(s->cap, h, head, q, NULL) + k0, (size_t)(k1 - k0));
    }
    double mean = m.n ? m.sum / (double)m.n : 0, var = m.n ? m.sq / (double)m.n - mean * mean : 0;
    char shape[64];
    as_cmd_format_shape(s, h, n, shape, sizeof shape);
    fprintf(s->out, "%s %s: min %.6g max %.6g mean %.6g std %.6g nan %zu inf %zu\n", hk->name, shape,
            (double)m.mn, (double)m.mx, mean, sqrt(var > 0 ? var : 0), m.nan, m.inf);
    return AS_OK;
}

/* A norm's statistics per position (and per head, for a norm of each
 * head: q and k norms). */
static void print_norm_table(as_session *s, int h, const char *title)
{
    int n = s->cap->filled[h], G = s->prog->hooks[h].width;
    bool rms = as_program_producer(s->prog, h)->norm == AS_NORM_RMS;
    fprintf(s->out, "%s (%s%s) over %d tokens\npos\ttoken\t%smean\t%s\tscale\tmin\tmax\ttop dims\n", title,
            rms ? "RMSNorm" : "LayerNorm", G > 1 ? ", per head" : "", n, G > 1 ? "head\t" : "", rms ? "rms" : "std");
    for (int q = 0; q < n; q++) { /* an encoder-decoder's encoder norms: the source's positions */
        char piece[64];
        as_cmd_stream_label(s, s->prog->hooks[h].stream, q, piece, sizeof piece);
        for (int g = 0; g < G; g++) {
            const as_norm_stat *st = as_capture_norm_group(s->cap, h, q, g);
            fprintf(s->out, "%d\t%s\t", q, piece);
            if (G > 1)
                fprintf(s->out, "%d\t", g);
            fprintf(s->out, "%.4f\t%.4f\t%.4f\t%.4f\t%.4f\t", st->mean, sqrt(st->var), st->scale, st->min, st->max);
            for (int k = 0; k < AS_NORM_TOP && st->top_dim[k] >= 0; k++)
                fprintf(s->out, "%s%d:%.3g", k ? " " : "", st->top_dim[k], st->top_val[k]);
            fprintf(s->out, "\n");
        }
    }
}

/* Every norm of a layer in the order the program runs them (ln1, the q
 * and k norms, ln1_post, ln2, ln2_post: whichever the architecture has). */
int as_cmd_norms(cmd_ctx *c)
{
    as_session *s = c->s;
    if (c->argc != 2)
        return as_error_set(c->err, "usage: norms LAYER | norms final | norms embed");
    bool final = !strcmp(c->argv[1], "final");
    if (final || !strcmp(c->argv[1], "embed")) {
        /* the norm after the blocks (ln_final, an encoder's mlm_head.ln), or an encoder's embed.ln */
        int h = as_program_hook(s->prog, final ? AS_HK_LNF_SCALE : AS_HK_EMBED_LN_SCALE, -1);
        if (h < 0)
            return as_error_set(c->err, "%s has no %s norm", s->model->cfg.name,
                                final ? "final" : "embedding");
        if (as_cmd_hook_positions(s, h, c->err) < 0)
            return AS_ERR;
        char title[64];
        const char *name = s->prog->hooks[h].name, *dot = strrchr(name, '.');
        snprintf(title, sizeof title, "%.*s", (int)(dot - name), name);
        print_norm_table(s, h, title);
        return AS_OK;
    }
    long l;
    if (as_cmd_parse_long(c->argv[1], 0, s->model->cfg.n_layer - 1, "the layer", &l, c->err))
        return AS_ERR;
    int shown = 0;
    for (int o = 0; o < s->prog->n_ops; o++) {
        const as_op *op = &s->prog->ops[o];
        if (op->kind != AS_OP_NORM_SCALE || op->layer != (int)l)
            continue;
        if (shown == 0 && as_cmd_hook_positions(s, op->out, c->err) < 0)
            return AS_ERR;
        if (shown++ && s->cap->filled[op->out] == 0)
            continue;
        char title[64];
        const char *name = s->prog->hooks[op->out].name, *dot = strrchr(name, '.');
        snprintf(title, sizeof title, "%.*s", (int)(dot ? dot - name : (long)strlen(name)), name);
        print_norm_table(s, op->out, title);
    }
    return AS_OK;
}

int as_cmd_dump(cmd_ctx *c)
{
    as_session *s = c->s;
    int h = -1, n = 0;
    if (c->argc >= 2 && !strcmp(c->argv[1], "all"))
        return as_cmd_dump_all(c);
    size_t len = c->argc == 3 ? strlen(c->argv[2]) : 0;
    if (c->argc == 3 && len == 0)
        return as_error_set(c->err, "usage: dump HOOK FILE.npy | dump all DIR (the file name is empty)");
    if (c->argc == 3 && (len < 5 || strcmp(c->argv[2] + len - 4, ".npy")))
        return as_error_set(c->err, "%s: dump writes NumPy arrays only: the file name must end in .npy", c->argv[2]);
    if (captured_arg(c, 3, "dump HOOK FILE.npy", &h, &n))
        return AS_ERR;
    size_t shape[3], count = as_capture_count(s->cap, h, n);
    int nd = as_capture_shape(s->cap, h, n, shape);
    float *data = malloc(count * sizeof *data);
    if (!data)
        return as_error_set(c->err, "out of memory (%zu floats)", count);
    as_capture_copy(s->cap, h, n, data);
    as_npy_dtype dt = as_cmd_hook_npy(s, h, data, count);
    int rc = as_npy_write(c->argv[2], dt, data, shape, nd, c->err);
    free(data);
    if (rc == AS_OK) {
        char sh[64];
        as_cmd_format_shape(s, h, n, sh, sizeof sh);
        fprintf(s->out, "wrote %s: %s %s %s\n", c->argv[2], s->prog->hooks[h].name, sh,
                dt == AS_NPY_I32 ? "int32" : "float32");
    }
    return rc;
}

int as_cmd_info(cmd_ctx *c)
{
    const as_model *m = c->s->model;
    if (m->gguf)
        as_gguf_print_info(m->gguf, c->s->out);
    const as_capture *cap = c->s->cap;
    const as_interp *it = c->s->it;
    int in_use = 0;
    for (int st = 0; st < c->s->prog->n_streams; st++)
        in_use = it->st[st].n_tokens > in_use ? it->st[st].n_tokens : in_use;
    /* computed so far, and what the budget keeps for the whole context as it stands */
    int done = 0, pos[AS_MAX_STREAMS];
    for (int st = 0; st < c->s->prog->n_streams; st++) {
        done = it->st[st].n_done > done ? it->st[st].n_done : done;
        pos[st] = it->st[st].n_tokens;
    }
    fprintf(c->s->out, "capture: %zu MB budget, %.1f MB in use at %d computed position%s (%.1f MB of it the KV cache "
            "and norm statistics, which the budget does not count; storage grows with the positions in use)\n",
            c->s->capture_mb, (double)cap->used / (1 << 20), done, done == 1 ? "" : "s",
            (double)cap->essential / (1 << 20));
    char plan[512];
    as_capture_plan(cap, pos, plan, sizeof plan);
    fprintf(c->s->out, "capture at the context's %d position%s: %s\n", in_use, in_use == 1 ? "" : "s",
            plan[0] ? plan : "everything kept");
    /* where the bytes live, and what a saved run kept */
    if (as_capture_file_path(cap))
        fprintf(c->s->out, "capture file: %s (%.1f MB in use, memory-mapped: bounded by the disk, not RAM)\n",
                as_capture_file_path(cap), (double)as_capture_file_bytes(cap) / (1 << 20));
    if (cap->file_failed)
        fprintf(c->s->out, "%s\n", cap->file_note);
    if (c->s->saved_run[0])
        fprintf(c->s->out, "saved run: %s, of %s (no weights: commands that compute are refused); hooks kept in %s%s\n",
                c->s->saved_run, m->path, as_run_dtype_name(c->s->saved_dtype),
                c->s->saved_dtype ? ", read back as float32" : ", the pass's values bit for bit");
    else
        fprintf(c->s->out, "save run: hooks in %s (--capture-dtype; `save run FILE dtype=`)\n",
                as_run_dtype_name(c->s->save_dtype));
    fprintf(c->s->out, "context: %d of %d positions%s\n", it->out->n_tokens, it->n_ctx,
            it->n_ctx < c->s->prog->streams[c->s->prog->out_stream].n_ctx ? " (set ctx; the model's window is larger)"
                                                                          : " (the model's window)");
    /* which arithmetic produced the numbers (quantized weights: float32 or llama.cpp's 8-bit activations) */
    fprintf(c->s->out, "activations: %s\n", as_activations_describe());
    /* how the attention rows are kept, and the capture's exact size (which grows linearly with the
     * positions when they are computed on demand) */
    fprintf(c->s->out, "patterns: %s; at the context's %d position%s: %s (capture holds %zu bytes)\n",
            as_patterns_describe(), in_use, in_use == 1 ? "" : "s",
            as_capture_plan_on_demand(cap, pos) ? "computed on demand" : "stored", cap->used);
    /* the interpreter's own buffers, outside the capture: a long prompt's attention runs a block of query
     * rows at a time so that they grow linearly with it (interp.h's AS_ATTN_WORK_BYTES) */
    fprintf(c->s->out, "working memory: %zu bytes (the interpreter's buffers outside the capture; attention whose "
            "scores and patterns are not kept runs %d query rows at a time past %zu MB of them)\n",
            as_interp_work_bytes(it), AS_ATTN_BLOCK, AS_ATTN_WORK_BYTES >> 20);
    /* MLA's cache (the latent and the shared rotary key) against a plain multi-head and a grouped-query
     * one of the same heads, values a position (as_view_site_cache: the program's hooks' widths; `view
     * mla` shows the same) */
    const as_program *p = c->s->prog;
    long mla = 0, plain = 0, gqa = 0, mqa = 0, held = 0;
    int n = 0;
    bool uniform = true;
    as_site_cache f = {0};
    for (int a = 0; a < p->n_attn; a++) {
        as_site_cache k;
        as_view_site_cache(c->s, &p->attn[a], &k);
        if (!k.latent)
            continue;
        if (n++ == 0)
            f = k;
        uniform = uniform && k.latent == f.latent && k.rope == f.rope && k.plain == f.plain && k.held == f.held &&
                  k.gqa_kv == f.gqa_kv && k.d_k == f.d_k && k.d_v == f.d_v;
        mla += k.latent + k.rope, plain += k.plain, held += k.held;
        gqa += (long)k.gqa_kv * (k.d_k + k.d_v), mqa += k.d_k + k.d_v;
    }
    if (n == 0)
        return AS_OK;
    FILE *o = c->s->out;
    fprintf(o, "KV cache: MLA caches a position the latent and the rotary key every head shares: ");
    if (uniform)
        fprintf(o, "%d + %d = %d values a layer, ", f.latent, f.rope, f.latent + f.rope);
    fprintf(o, "%ld over %d layer%s (%.2f KiB a token in float32)\n", mla, n, n == 1 ? "" : "s", mla * 4 / 1024.0);
    fprintf(o, "  plain multi-head attention of the same %d heads: ", f.n_head);
    if (uniform)
        fprintf(o, "%d x (k %d + v %d) = %d a layer, ", f.n_head, f.d_k, f.d_v, f.plain);
    fprintf(o, "%ld (%.1fx the latent's)%s\n", plain, (double)plain / (double)mla,
            plain <= mla ? ": no saving, the latent and the rotary key are as wide as every head's keys and "
                           "values together" : "");
    if (gqa && uniform)
        fprintf(o, "  grouped-query, %d kv heads of %d query heads each: %d a layer, %ld (%.1fx); multi-query, "
                "1 kv head: %d a layer, %ld (%.1fx)\n", f.gqa_kv, f.n_head / f.gqa_kv,
                f.gqa_kv * (f.d_k + f.d_v), gqa, (double)gqa / (double)mla, f.d_k + f.d_v, mqa,
                (double)mqa / (double)mla);
    fprintf(o, "  attnscope's own cache as it runs this file: %ld values a position over the layers (%s)\n", held,
            f.absorbed ? "llama.cpp's absorbed form: k holds the latent and the rotary key, v the latent again"
                       : "the legacy attn_kv_b layout: the keys and values expanded per head, as a plain cache");
    return AS_OK;
}

/* `zoom LAYER HEAD BLOCK max|mean [FILE.npy]`: the heatmap zoomed out as
 * numbers, each cell the max or the mean of a BLOCK x BLOCK block of the
 * self-attention pattern (blocks from position 0; the last ones may be
 * short), masked cells left out (as_capture_attn_block's cells, through
 * the view's cache, as_capture_attn_cells). The view's zoom draws these
 * cells; printed here so that they can be checked. */
int as_cmd_zoom(cmd_ctx *c)
{
    as_session *s = c->s;
    const char *usage = "usage: zoom LAYER HEAD BLOCK max|mean [FILE.npy] (BLOCK a power of two, 1 to 4096)";
    if (c->argc != 5 && c->argc != 6)
        return as_error_set(c->err, "%s", usage);
    long layer, head, block;
    if (as_cmd_parse_long(c->argv[1], 0, s->model->cfg.n_layer - 1, "the layer", &layer, c->err) ||
        as_cmd_parse_long(c->argv[2], 0, s->model->cfg.n_head - 1, "the head", &head, c->err) ||
        as_cmd_parse_long(c->argv[3], 1, 4096, "the block", &block, c->err))
        return AS_ERR;
    if (block & (block - 1))
        return as_error_set(c->err, "zoom: the block %ld is not a power of two (the view zooms by halves: 1, 2, 4, "
                            "8, ...)", block);
    bool mean = !strcmp(c->argv[4], "mean");
    if (!mean && strcmp(c->argv[4], "max"))
        return as_error_set(c->err, "zoom: '%s' is neither max nor mean (%s)", c->argv[4], usage);
    const char *path = c->argc == 6 ? c->argv[5] : NULL;
    size_t len = path ? strlen(path) : 0;
    if (path && (len < 5 || strcmp(path + len - 4, ".npy")))
        return as_error_set(c->err, "%s: zoom writes a NumPy array only: the file name must end in .npy", path);
    int hook = as_program_pattern(s->prog, (int)layer, AS_PICK_SELF);
    if (hook < 0)
        return as_error_set(c->err, "zoom: %s has no self-attention in layer %ld", s->model->cfg.name, layer);
    int n = s->it->st[s->prog->hooks[hook].stream].n_tokens, filled = s->cap->filled[hook];
    if (head >= s->prog->attn[s->prog->hooks[hook].attn].n_head)
        return as_error_set(c->err, "zoom: layer %ld has %d heads", layer, s->prog->attn[s->prog->hooks[hook].attn].n_head);
    if (!as_capture_has(s->cap, hook))
        return as_error_set(c->err, "zoom needs %s, which is not captured%s%s", s->prog->hooks[hook].name,
                            s->cap->dropped[0] ? ": " : "", s->cap->dropped);
    if (filled == 0)
        return as_error_set(c->err, "zoom: %s is not computed yet (finish runs the pass)", s->prog->hooks[hook].name);
    int b = (int)block, nq = (n + b - 1) / b;
    float *v = malloc((size_t)nq * (size_t)nq * sizeof *v);
    if (!v)
        return as_error_set(c->err, "out of memory");
    fprintf(s->out, "%s head %ld, %d tokens in blocks of %d: each cell the %s of a block's visible weights "
            "(masked ones left out; '-' all masked, '?' not computed yet)\nqueries", s->prog->hooks[hook].name, head,
            n, b, mean ? "mean" : "max");
    for (int j = 0; j < nq; j++)
        fprintf(s->out, "\t%d-%d", j * b, (j + 1) * b < n ? (j + 1) * b - 1 : n - 1);
    fprintf(s->out, "\n");
    for (int i = 0; i < nq; i++) {
        fprintf(s->out, "%d-%d", i * b, (i + 1) * b < n ? (i + 1) * b - 1 : n - 1);
        for (int j = 0; j < nq; j++) {
            float x = NAN;
            int st = as_capture_attn_cells(s->cap, hook, (int)head, filled, n, n, b, 0, 0, i, j, mean, &x);
            v[(size_t)i * (size_t)nq + (size_t)j] = st == AS_BLOCK_VALUE ? x : NAN;
            if (st == AS_BLOCK_VALUE)
                fprintf(s->out, "\t%.6f", (double)x);
            else
                fprintf(s->out, "\t%s", st == AS_BLOCK_MASKED ? "-" : "?");
        }
        fprintf(s->out, "\n");
    }
    int rc = AS_OK;
    if (path) {
        size_t shape[2] = {(size_t)nq, (size_t)nq};
        char what[96];
        snprintf(what, sizeof what, "%s blocks [query block, key block] (NaN masked or not computed)", mean ? "mean" : "max");
        rc = as_cmd_write_npy(s, path, AS_NPY_F32, v, shape, 2, what, c->err);
    }
    free(v);
    return rc;
}
