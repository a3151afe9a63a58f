/* Saved runs: `save run PATH [dtype=f32|f16|bf16]` writes what a session
 * computed to one file, and `attnscope --open RUN` (as_session_open_run)
 * reopens it without the model's weights.
 *
 * A run file holds (little-endian, as this machine writes it; the version
 * and a byte-order mark are checked):
 *   magic "ATTNSCOPE-RUN\0\0\0", u32 version, u32 byte-order mark, u32 dtype
 *   the model: its path as loaded (str), its GGUF metadata (a blob: a GGUF
 *     file of key/values only, as gguf_write.c writes it: config, tokenizer,
 *     names), its tensor table (name, type, dims) without data
 *   the session: capture budget (MB), ctx, the metric, the image's name,
 *     how `gen` sampled, whether the patterns were computed on demand
 *     (from version 2)
 *   per stream: tokens, their types, pixels, tokens from the prompt, done
 *   the first non-finite value of the pass
 *   per hook: name, stream, width (checked against the program rebuilt),
 *     positions filled, its kind (0 not kept, 1 stored, 2 computed on
 *     demand: no values, its rows computed from the q and k kept, as in
 *     the live session, so a long context's run holds no patterns: 8,192
 *     tokens of stories110M's shape are 39 GB of them); its values (float32, or f16/bf16
 *     where asked: int32 hooks stay float32, their ids exact) in rows as
 *     the capture's readers give them (a position's row; an attention
 *     head's query row over its stored keys), and a norm's statistics.
 * Reopening rebuilds the model from its metadata with every weight zero
 * (an anonymous mapping: no memory until read), so the program, tokenizer,
 * hooks and facts are the live session's; the inputs are set and marked
 * computed in one pass, and the capture filled from the file. Commands
 * that compute (run, generate, grad, patch...) are refused on such a
 * session (as_cmd_saved_refuse): their answer would come from zeros. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnscope/file.h"
#include "attnscope/gguf.h"
#include "attnscope/quant.h"
#include "session_internal.h"

#define RUN_MAGIC "ATTNSCOPE-RUN\0\0\0"
#define RUN_VERSION 2u /* 1: without the patterns' mode (read too) */
#define RUN_BOM 0x01020304u

enum { DT_F32, DT_F16, DT_BF16 };

/* ---- writing ---- */

typedef struct wbuf {
    FILE *f;
    bool bad;
} wbuf;

static void put(wbuf *w, const void *p, size_t n)
{
    if (!w->bad && n && fwrite(p, 1, n, w->f) != n)
        w->bad = true;
}
static void put_u32(wbuf *w, uint32_t v) { put(w, &v, 4); }
static void put_i32(wbuf *w, int32_t v) { put(w, &v, 4); }
static void put_u64(wbuf *w, uint64_t v) { put(w, &v, 8); }
static void put_str(wbuf *w, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    put_u64(w, n);
    put(w, s, n);
}

/* n floats in the run's dtype (int32 hooks always float32). */
static void put_floats(wbuf *w, const float *v, size_t n, int dt)
{
    if (dt == DT_F32) {
        put(w, v, n * sizeof *v);
        return;
    }
    uint16_t buf[1024];
    for (size_t i = 0; i < n;) {
        size_t k = n - i < 1024 ? n - i : 1024;
        for (size_t j = 0; j < k; j++)
            buf[j] = dt == DT_F16 ? as_f32_to_f16(v[i + j]) : as_f32_to_bf16(v[i + j]);
        put(w, buf, k * 2);
        i += k;
    }
}

typedef struct save_ctx {
    as_session *s;
    int dtype;
    uint8_t *meta; /* the GGUF metadata blob */
    size_t meta_len;
} save_ctx;

static int write_run(void *ctx, void *stream, as_error *err)
{
    save_ctx *sc = ctx;
    as_session *s = sc->s;
    const as_program *p = s->prog;
    const as_capture *cap = s->cap;
    const as_interp *it = s->it;
    const as_gguf *g = s->model->gguf;
    wbuf w = {stream, false};
    put(&w, RUN_MAGIC, 16);
    put_u32(&w, RUN_VERSION);
    put_u32(&w, RUN_BOM);
    put_u32(&w, (uint32_t)sc->dtype);
    put_str(&w, s->model->path);
    put_u64(&w, sc->meta_len);
    put(&w, sc->meta, sc->meta_len);
    put_u64(&w, g->n_tensors);
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        put_str(&w, g->tensors[i].name);
        put_u32(&w, (uint32_t)g->tensors[i].type);
        put_u32(&w, g->tensors[i].n_dims);
        for (int d = 0; d < 4; d++)
            put_u64(&w, g->tensors[i].ne[d]);
    }
    put_u64(&w, s->capture_mb);
    put_i32(&w, s->ctx);
    put_i32(&w, s->has_metric);
    put_i32(&w, s->metric_kind);
    put_i32(&w, s->metric_pos);
    put_i32(&w, s->metric[0]);
    put_i32(&w, s->metric[1]);
    put_str(&w, s->image);
    put_str(&w, s->sampled);
    put_i32(&w, cap->od);
    put_u32(&w, (uint32_t)p->n_streams);
    for (int t = 0; t < p->n_streams; t++) {
        const as_stream_state *st = &it->st[t];
        bool pixels = p->streams[t].input == AS_INPUT_PIXELS;
        put_i32(&w, st->n_tokens);
        put_i32(&w, st->n_prompt);
        put_i32(&w, st->n_done);
        put_i32(&w, pixels);
        if (pixels) {
            const as_patch_spec *ps = &p->streams[t].patch;
            size_t n = st->n_tokens ? (size_t)ps->channels * (size_t)ps->size * (size_t)ps->size : 0;
            put_u64(&w, n);
            put(&w, st->pixels, n * sizeof(float));
        } else {
            put(&w, st->tokens, (size_t)st->n_tokens * sizeof(int32_t));
            put(&w, st->types, (size_t)st->n_tokens * sizeof(int32_t));
        }
    }
    put_i32(&w, it->nonfinite.found);
    put_i32(&w, it->nonfinite.hook);
    put_i32(&w, it->nonfinite.pos);
    put_i32(&w, it->nonfinite.index);
    put(&w, &it->nonfinite.value, 4);
    /* the logits the pass ended with where the capture does not keep them (a small budget): `top` reads them */
    const float *lg = p->unembed >= 0 && !as_capture_has(cap, p->ops[p->unembed].out) ? as_interp_logits(it) : NULL;
    int n_vocab = lg ? (int)p->hooks[p->ops[p->unembed].out].width : 0;
    put_i32(&w, n_vocab);
    put(&w, lg, (size_t)n_vocab * sizeof(float));
    put_u32(&w, (uint32_t)p->n_hooks);
    for (int h = 0; h < p->n_hooks && !w.bad; h++) {
        const as_hook *hk = &p->hooks[h];
        bool stored = as_capture_has(cap, h), od = stored && cap->ondemand[h];
        int filled = stored ? cap->filled[h] : 0;
        bool stats = cap->stats[h] != NULL;
        int sfill = stats ? it->st[hk->stream].n_done : 0;
        put_str(&w, hk->name);
        put_i32(&w, hk->stream);
        put_i32(&w, hk->width);
        put_i32(&w, od ? 2 : stored);
        put_i32(&w, filled);
        put_i32(&w, sfill);
        int dt = hk->dtype == AS_DT_I32 ? DT_F32 : sc->dtype;
        uint64_t count = 0; /* the values that follow, so a reader skips a hook without knowing its shape */
        if (od)
            count = 0;
        else if (stored && !hk->is_attn)
            count = (uint64_t)filled * (uint64_t)hk->width;
        else if (stored)
            for (int q = 0; q < filled; q++)
                count += (uint64_t)hk->width * (uint64_t)as_capture_attn_keys(cap, h, q);
        put_u64(&w, count);
        if (od)
            ; /* computed from q and k when read */
        else if (stored && !hk->is_attn)
            put_floats(&w, as_capture_row(cap, h, 0), (size_t)filled * (size_t)hk->width, dt);
        else if (stored)
            for (int head = 0; head < hk->width; head++)
                for (int q = 0; q < filled; q++) {
                    int nk;
                    const float *row = as_capture_attn_row(cap, h, head, q, &nk);
                    put_floats(&w, row, (size_t)nk, dt);
                }
        for (int pos = 0; pos < sfill; pos++)
            put(&w, as_capture_norm_group(cap, h, pos, 0), (size_t)hk->width * sizeof(as_norm_stat));
    }
    if (w.bad)
        return as_error_set(err, "%s", strerror(errno ? errno : EIO));
    return AS_OK;
}

/* The model's metadata as a GGUF file of key/values only. */
static int meta_blob(const as_gguf *g, uint8_t **buf, size_t *len, as_error *err)
{
    as_gguf_writer *w = as_gguf_writer_new(3);
    if (!w)
        return as_error_set(err, "out of memory");
    for (uint64_t i = 0; i < g->n_kv; i++)
        as_gguf_writer_copy_kv(w, &g->kvs[i]);
    int rc = as_gguf_writer_to_memory(w, buf, len, err);
    as_gguf_writer_free(w);
    return rc;
}

/* save run PATH [dtype=f32|f16|bf16] */
int as_cmd_save(cmd_ctx *c)
{
    as_session *s = c->s;
    if (c->argc < 3 || strcmp(c->argv[1], "run") || c->argc > 4)
        return as_error_set(c->err, "usage: save run FILE [dtype=f32|f16|bf16]");
    int dt = s->save_dtype;
    if (c->argc == 4) {
        if (strncmp(c->argv[3], "dtype=", 6) || (dt = as_run_dtype_parse(c->argv[3] + 6)) < 0)
            return as_error_set(c->err, "save run: '%s': the option is dtype=f32, dtype=f16 or dtype=bf16",
                                c->argv[3]);
    }
    if (s->it->in_pass || s->it->out->n_done == 0)
        return as_error_set(c->err, "save run: nothing computed to save (a prompt and `finish` first%s)",
                            s->it->in_pass ? ": a pass is under way" : "");
    if (as_interp_stale(s->it))
        return as_error_set(c->err, "save run: the interventions changed since the pass ran: `finish` computes it "
                            "again first");
    const as_gguf *g = s->model->gguf;
    if (g->version == 0 && !g->view_of) /* a llama2.c checkpoint's view (gguf.h) */
        return as_error_set(c->err, "save run: %s keeps its tokenizer outside its metadata (a llama2.c "
                            "checkpoint's tokenizer.bin): a run of it cannot be reopened (convert the model to GGUF "
                            "first)", s->model->path);
    save_ctx sc = {s, dt, NULL, 0};
    if (meta_blob(s->model->gguf, &sc.meta, &sc.meta_len, c->err))
        return AS_ERR;
    errno = 0;
    int rc = as_write_atomic(c->argv[2], write_run, &sc, c->err);
    free(sc.meta);
    if (rc)
        return AS_ERR;
    struct stat st;
    double mb = stat(c->argv[2], &st) == 0 ? (double)st.st_size / (1 << 20) : 0;
    fprintf(s->out, "wrote %s: a saved run of %s, %d position%s, hooks in %s (%.1f MB); attnscope --open %s "
            "reopens it without the weights\n", c->argv[2], s->model->cfg.name, s->it->out->n_done,
            s->it->out->n_done == 1 ? "" : "s", as_run_dtype_name(dt), mb, c->argv[2]);
    return AS_OK;
}

/* ---- reading ---- */

typedef struct rbuf {
    const uint8_t *p;
    size_t len, at;
    bool bad;
    const char *what; /* the first field that did not fit */
} rbuf;

static const void *take(rbuf *r, size_t n, const char *what)
{
    if (r->bad || n > r->len - r->at) {
        if (!r->bad)
            r->what = what;
        r->bad = true;
        return NULL;
    }
    const void *q = r->p + r->at;
    r->at += n;
    return q;
}
static uint32_t get_u32(rbuf *r, const char *what)
{
    uint32_t v = 0;
    const void *q = take(r, 4, what);
    if (q)
        memcpy(&v, q, 4);
    return v;
}
static int32_t get_i32(rbuf *r, const char *what) { return (int32_t)get_u32(r, what); }
static uint64_t get_u64(rbuf *r, const char *what)
{
    uint64_t v = 0;
    const void *q = take(r, 8, what);
    if (q)
        memcpy(&v, q, 8);
    return v;
}
/* A string (malloc'd, NUL-terminated), or NULL when it does not fit. */
static char *get_str(rbuf *r, const char *what)
{
    uint64_t n = get_u64(r, what);
    if (r->bad || n > 1u << 20 || n > r->len - r->at) {
        if (!r->bad)
            r->what = what;
        r->bad = true;
        return NULL;
    }
    char *s = strndup((const char *)r->p + r->at, (size_t)n);
    r->at += (size_t)n;
    if (!s)
        r->bad = true, r->what = "memory";
    return s;
}
static void get_floats(rbuf *r, float *out, size_t n, int dt, const char *what)
{
    size_t each = dt == DT_F32 ? 4 : 2;
    if (n > (r->len - r->at) / each) {
        take(r, SIZE_MAX, what);
        return;
    }
    const uint8_t *q = take(r, n * each, what);
    if (!q)
        return;
    if (dt == DT_F32) {
        memcpy(out, q, n * 4);
        return;
    }
    for (size_t i = 0; i < n; i++) {
        uint16_t h;
        memcpy(&h, q + 2 * i, 2);
        out[i] = dt == DT_F16 ? as_f16_to_f32(h) : as_bf16_to_f32(h);
    }
}

/* What a zero-weight model's view owns: the metadata blob, the mapping of zeros. */
typedef struct run_owner {
    uint8_t *meta;
    void *zeros;
    size_t zeros_len;
} run_owner;

static void run_release(void *o)
{
    run_owner *ro = o;
    if (!ro)
        return;
    if (ro->zeros)
        munmap(ro->zeros, ro->zeros_len);
    free(ro->meta);
    free(ro);
}

/* The model, rebuilt from the run's metadata and tensor table, its
 * weights zero. */
static int zero_model(rbuf *r, const char *path, as_model **out, as_error *err)
{
    uint64_t meta_len = get_u64(r, "the metadata's length");
    const uint8_t *meta = meta_len <= r->len - r->at ? take(r, (size_t)meta_len, "the metadata") : NULL;
    if (!meta)
        return as_error_set(err, "%s: truncated or damaged saved run (at byte %zu: the model's metadata)", path, r->at);
    run_owner *ro = calloc(1, sizeof *ro);
    if (!ro || !(ro->meta = malloc(meta_len ? meta_len : 1))) {
        free(ro);
        return as_error_set(err, "out of memory");
    }
    memcpy(ro->meta, meta, meta_len);
    as_gguf *g;
    if (as_gguf_parse(&g, ro->meta, meta_len, path, err)) {
        run_release(ro);
        return as_error_prefix(err, "%s: the saved run's model metadata", path);
    }
    g->owner = ro;
    g->release = run_release;
    if (g->n_tensors) {
        as_gguf_close(g);
        return as_error_set(err, "%s: the saved run's metadata holds tensors (not a run this attnscope wrote)", path);
    }
    uint64_t nt = get_u64(r, "the tensor count");
    if (r->bad || nt > (r->len - r->at) / 32) {
        as_gguf_close(g);
        return as_error_set(err, "%s: truncated or damaged saved run (the tensor table)", path);
    }
    g->tensors = calloc(nt ? nt : 1, sizeof *g->tensors);
    if (!g->tensors) {
        as_gguf_close(g);
        return as_error_set(err, "out of memory");
    }
    uint64_t total = 0;
    for (uint64_t i = 0; i < nt; i++) {
        as_gguf_tensor *t = &g->tensors[i];
        t->name = get_str(r, "a tensor's name");
        g->n_tensors = i + 1;
        uint32_t type = get_u32(r, "a tensor's type"), nd = get_u32(r, "a tensor's dims");
        uint64_t n = 1;
        bool ok = !r->bad && type < 64 && strcmp(as_ggml_type_name((as_ggml_type)type), "unknown") && nd >= 1 && nd <= 4;
        for (int d = 0; d < 4; d++) {
            t->ne[d] = get_u64(r, "a tensor's shape");
            /* as a GGUF file has them: the dimensions past n_dims are 1 */
            ok = ok && t->ne[d] >= 1 && t->ne[d] <= (1ull << 40) && n <= (1ull << 44) / t->ne[d] &&
                 (d < (int)nd || t->ne[d] == 1);
            if (ok)
                n *= t->ne[d];
        }
        if (!ok || r->bad) {
            as_gguf_close(g);
            return as_error_set(err, "%s: damaged saved run: tensor %llu of the model's table (%s)", path,
                                (unsigned long long)i, r->bad ? "truncated" : "impossible type or shape");
        }
        t->type = (as_ggml_type)type;
        t->n_dims = nd;
        t->n_elements = n;
        t->n_bytes = as_ggml_nbytes(t->type, n);
        t->offset = total;
        t->path = g->path;
        total += (t->n_bytes + 63) / 64 * 64;
        if (total > (1ull << 46)) {
            as_gguf_close(g);
            return as_error_set(err, "%s: damaged saved run: its model's tensors add up past 64 TB", path);
        }
    }
    ro->zeros_len = total ? (size_t)total : 4096;
    ro->zeros = mmap(NULL, ro->zeros_len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (ro->zeros == MAP_FAILED) {
        ro->zeros = NULL;
        as_gguf_close(g);
        return as_error_set(err, "%s: no address space for the model's (zero) weights", path);
    }
    for (uint64_t i = 0; i < g->n_tensors; i++)
        g->tensors[i].data = (const uint8_t *)ro->zeros + g->tensors[i].offset;
    g->zero_weights = true; /* nothing for the load's NaN scan to find */
    if (as_model_from_gguf(out, g, err)) {
        as_gguf_close(g);
        return as_error_prefix(err, "%s: the saved run's model", path);
    }
    return AS_OK;
}

static int damaged(const char *path, const rbuf *r, as_error *err)
{
    return as_error_set(err, "%s: truncated or damaged saved run (at byte %zu of %zu: %s)", path, r->at, r->len,
                        r->what ? r->what : "a value out of range");
}

/* The session's state from the rest of the file. */
static int restore(as_session *s, rbuf *r, int dt, uint32_t version, const char *path, as_error *err)
{
    as_program *p = s->prog;
    as_interp *it = s->it;
    int ctx = get_i32(r, "ctx");
    s->has_metric = get_i32(r, "the metric") != 0;
    s->metric_kind = get_i32(r, "the metric");
    s->metric_pos = get_i32(r, "the metric");
    s->metric[0] = get_i32(r, "the metric");
    s->metric[1] = get_i32(r, "the metric");
    char *image = get_str(r, "the image's name"), *sampled = get_str(r, "the sampling");
    if (image)
        snprintf(s->image, sizeof s->image, "%s", image);
    if (sampled)
        snprintf(s->sampled, sizeof s->sampled, "%s", sampled);
    free(image);
    free(sampled);
    /* patterns computed on demand live: so here (the capture decides when the pass is marked done), from
     * the q and k the run keeps */
    int od = version >= 2 ? get_i32(r, "the patterns' mode") : 0;
    if (r->bad)
        return damaged(path, r, err);
    /* the run's own mode, whatever --patterns or a `set patterns` before said (its hooks were kept that way) */
    as_set_patterns(od ? "on-demand" : "stored");
    if (ctx > 0 && as_interp_set_ctx(it, ctx, err))
        return as_error_prefix(err, "%s", path);
    s->ctx = ctx;
    /* the metric's tokens index the logits (as_cmd_metric_of), its kind a description */
    int V = s->model->cfg.n_vocab;
    if (s->has_metric && (s->metric_kind < AS_METRIC_DIFF || s->metric_kind > AS_METRIC_LOGIT || s->metric[0] < 0 ||
                          s->metric[0] >= V || s->metric[1] < 0 || s->metric[1] >= V || s->metric_pos < -1 ||
                          s->metric_pos >= it->n_ctx))
        return as_error_set(err, "%s: damaged saved run (its metric: kind %d, tokens %d and %d of %d, position %d)",
                            path, s->metric_kind, s->metric[0], s->metric[1], V, s->metric_pos);
    uint32_t ns = get_u32(r, "the stream count");
    if (r->bad || ns != (uint32_t)p->n_streams)
        return r->bad ? damaged(path, r, err)
                      : as_error_set(err, "%s: the run has %u streams, the model's program %d", path, ns, p->n_streams);
    int n_prompt[AS_MAX_STREAMS];
    for (int t = 0; t < p->n_streams; t++) {
        as_stream_state *st = &it->st[t];
        int n = get_i32(r, "a stream's tokens"), prompt = get_i32(r, "a stream's prompt");
        (void)get_i32(r, "a stream's positions done");
        int pixels = get_i32(r, "a stream's kind");
        n_prompt[t] = prompt;
        if (r->bad || n < 0 || n > st->n_ctx || prompt < 0 || prompt > n ||
            pixels != (p->streams[t].input == AS_INPUT_PIXELS))
            return r->bad ? damaged(path, r, err)
                          : as_error_set(err, "%s: damaged saved run: stream %s holds %d tokens (its window %d)",
                                         path, p->streams[t].name, n, st->n_ctx);
        if (pixels) {
            uint64_t np = get_u64(r, "the pixels' count");
            if (r->bad || np > (r->len - r->at) / 4)
                return damaged(path, r, err);
            float *px = malloc(np ? (size_t)np * 4 : 4);
            if (!px)
                return as_error_set(err, "out of memory");
            get_floats(r, px, (size_t)np, DT_F32, "the pixels");
            int rc = np ? as_interp_set_pixels(it, t, px, (int)np, err) : AS_OK;
            free(px);
            if (rc)
                return as_error_prefix(err, "%s", path);
            continue;
        }
        const int32_t *ids = take(r, (size_t)n * 4, "a stream's token ids");
        const int32_t *types = take(r, (size_t)n * 4, "a stream's token types");
        if (r->bad)
            return damaged(path, r, err);
        int32_t *a = malloc((size_t)n * 4 + 4), *b = malloc((size_t)n * 4 + 4);
        int rc = !a || !b ? as_error_set(err, "out of memory") : AS_OK;
        if (rc == AS_OK) {
            memcpy(a, ids, (size_t)n * 4);
            memcpy(b, types, (size_t)n * 4);
            rc = as_interp_set_input(it, t, a, n, err);
            if (rc == AS_OK && n)
                rc = as_interp_set_types(it, t, b, n, err);
        }
        free(a);
        free(b);
        if (rc)
            return as_error_prefix(err, "%s", path);
    }
    for (int t = 0; t < p->n_streams; t++)
        it->st[t].n_prompt = n_prompt[t];
    as_nonfinite nf;
    nf.found = get_i32(r, "the first non-finite value") != 0;
    nf.hook = get_i32(r, "the first non-finite value");
    nf.pos = get_i32(r, "the first non-finite value");
    nf.index = get_i32(r, "the first non-finite value");
    const void *v = take(r, 4, "the first non-finite value");
    /* where it lies is printed (as_cmd_value_at: a query's keys are its position + 1), so inside the inputs */
    if (r->bad || (nf.found && (nf.hook < 0 || nf.hook >= p->n_hooks || nf.pos < 0 ||
                                nf.pos >= it->st[p->hooks[nf.hook].stream].n_tokens || nf.index < 0)))
        return r->bad ? damaged(path, r, err)
                      : as_error_set(err, "%s: damaged saved run (its first non-finite value's hook, position or index)",
                                     path);
    memcpy(&nf.value, v, 4);
    int n_vocab = get_i32(r, "the last logits");
    int lh = p->unembed >= 0 ? p->ops[p->unembed].out : -1;
    if (r->bad || n_vocab < 0 || (n_vocab && (lh < 0 || n_vocab != p->hooks[lh].width)))
        return r->bad ? damaged(path, r, err) : as_error_set(err, "%s: damaged saved run (its last logits)", path);
    const void *logits = take(r, (size_t)n_vocab * sizeof(float), "the last logits");
    if (r->bad)
        return damaged(path, r, err);
    if (as_interp_restore_done(it, err))
        return as_error_prefix(err, "%s", path);
    it->nonfinite = nf;

    as_capture *cap = s->cap;
    uint32_t nh = get_u32(r, "the hook count");
    if (r->bad || nh != (uint32_t)p->n_hooks)
        return r->bad ? damaged(path, r, err)
                      : as_error_set(err, "%s: the run has %u hooks, the program attnscope builds for %s %d (saved by "
                                     "another version?)", path, nh, s->model->cfg.name, p->n_hooks);
    /* the hooks' headers and positions first (an unmasked row's keys are its key hook's positions), then values */
    size_t first = r->at;
    for (int pass = 0; pass < 2; pass++) {
        r->at = first;
        for (int h = 0; h < p->n_hooks; h++) {
            const as_hook *hk = &p->hooks[h];
            char *name = get_str(r, "a hook's name");
            int stream = get_i32(r, "a hook's stream"), width = get_i32(r, "a hook's width");
            int stored = get_i32(r, "a hook's kind"), filled = get_i32(r, "a hook's positions");
            int sfill = get_i32(r, "a hook's statistics");
            uint64_t count = get_u64(r, "a hook's value count");
            bool same = name && !strcmp(name, hk->name) && stream == hk->stream && width == hk->width;
            free(name);
            if (r->bad)
                return damaged(path, r, err);
            int n_st = it->st[hk->stream].n_done;
            if (!same || filled < 0 || filled > n_st || sfill < 0 || sfill > n_st || (sfill && !cap->stats[h]) ||
                stored < 0 || stored > 2 || (stored && !as_capture_has(cap, h)) || (!stored && (filled || count)) ||
                (stored == 2) != (stored && cap->ondemand[h]) || (stored == 2 && count))
                return as_error_set(err, "%s: hook %d of the run (%s) does not match %s's program here, or is damaged",
                                    path, h, hk->name, s->model->cfg.name);
            int hdt = hk->dtype == AS_DT_I32 ? DT_F32 : dt;
            size_t each = hdt == DT_F32 ? 4 : 2;
            if (count > (r->len - r->at) / each)
                return take(r, SIZE_MAX, "a hook's values"), damaged(path, r, err);
            size_t end = r->at + (size_t)count * each;
            if (pass == 0) {
                if (!stored && as_capture_has(cap, h))
                    as_capture_drop_hook(cap, h);
                else if (stored)
                    cap->filled[h] = filled;
                r->at = end;
            } else if (stored == 1 && !hk->is_attn) {
                if (count != (uint64_t)filled * (uint64_t)width)
                    return as_error_set(err, "%s: damaged saved run: %s holds %llu values, not %d x %d", path,
                                        hk->name, (unsigned long long)count, filled, width);
                get_floats(r, (float *)as_capture_row(cap, h, 0), (size_t)count, hdt, "a hook's values");
            } else if (stored == 1) {
                uint64_t want = 0;
                for (int q = 0; q < filled; q++)
                    want += (uint64_t)width * (uint64_t)as_capture_attn_keys(cap, h, q);
                if (count != want)
                    return as_error_set(err, "%s: damaged saved run: %s holds %llu values, its rows %llu", path,
                                        hk->name, (unsigned long long)count, (unsigned long long)want);
                for (int head = 0; head < width; head++)
                    for (int q = 0; q < filled; q++)
                        get_floats(r, (float *)as_capture_attn_row(cap, h, head, q, NULL),
                                   (size_t)as_capture_attn_keys(cap, h, q), hdt, "an attention row");
            }
            if (r->bad)
                return damaged(path, r, err);
            size_t sbytes = (size_t)width * sizeof(as_norm_stat);
            if ((size_t)sfill > (r->len - r->at) / (sbytes ? sbytes : 1))
                return take(r, SIZE_MAX, "a norm's statistics"), damaged(path, r, err);
            for (int pos = 0; pos < sfill; pos++) {
                const void *q = take(r, sbytes, "a norm's statistics");
                if (pass == 1)
                    memcpy((void *)as_capture_norm_group(cap, h, pos, 0), q, sbytes);
            }
        }
    }
    if (r->at != r->len)
        return as_error_set(err, "%s: damaged saved run: %zu bytes past its last hook", path, r->len - r->at);
    /* logits not captured live in the pass's working row, where as_interp_logits reads them */
    const float *row = n_vocab && !as_capture_has(cap, lh) ? as_interp_logits(it) : NULL;
    if (row)
        memcpy((float *)row, logits, (size_t)n_vocab * sizeof(float));
    return AS_OK;
}

struct as_run_reader {
    void *map;
    size_t size;
    rbuf r;
    int dtype;
    uint32_t version;
    char *path;
};

void as_run_reader_free(as_run_reader *rr)
{
    if (!rr)
        return;
    if (rr->map)
        munmap(rr->map, rr->size);
    free(rr->path);
    free(rr);
}

int as_run_begin(as_run_reader **out, const char *path, as_model **model, size_t *capture_mb, as_error *err)
{
    *out = NULL;
    *model = NULL;
    struct stat st;
    int fd = as_file_open_read(path, &st, err);
    if (fd < 0)
        return AS_ERR;
    if (st.st_size < 32) {
        close(fd);
        return as_error_set(err, "%s: not a saved run (%lld bytes; a run starts with ATTNSCOPE-RUN)", path,
                            (long long)st.st_size);
    }
    void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return as_error_set(err, "%s: %s", path, strerror(errno));
    as_run_reader *rr = calloc(1, sizeof *rr);
    if (!rr || !(rr->path = strdup(path))) {
        free(rr);
        munmap(map, (size_t)st.st_size);
        return as_error_set(err, "out of memory");
    }
    rr->map = map;
    rr->size = (size_t)st.st_size;
    rr->r = (rbuf){map, (size_t)st.st_size, 0, false, NULL};
    rbuf *r = &rr->r;
    const char *magic = take(r, 16, "the magic");
    uint32_t version = get_u32(r, "the version"), bom = get_u32(r, "the byte order");
    uint32_t dt = get_u32(r, "the dtype");
    int rc = AS_OK;
    char *model_path = NULL;
    if (memcmp(magic, RUN_MAGIC, 16))
        rc = as_error_set(err, "%s: not a saved run (it does not start with ATTNSCOPE-RUN; `save run FILE` writes one)",
                          path);
    else if (bom != RUN_BOM || version < 1 || version > RUN_VERSION || dt > DT_BF16)
        rc = as_error_set(err, "%s: a saved run of another version or byte order (version %u, this attnscope reads "
                          "1 to %u)", path, version, RUN_VERSION);
    if (rc == AS_OK && !(model_path = get_str(r, "the model's path")))
        rc = damaged(path, r, err);
    if (rc == AS_OK)
        rc = zero_model(r, path, model, err);
    uint64_t mb = rc == AS_OK ? get_u64(r, "the capture budget") : 0;
    if (rc == AS_OK && r->bad)
        rc = damaged(path, r, err);
    if (rc) {
        if (*model)
            as_model_free(*model);
        *model = NULL;
        free(model_path);
        as_run_reader_free(rr);
        return AS_ERR;
    }
    free((*model)->path);
    (*model)->path = model_path;
    *capture_mb = mb > (1u << 30) ? (size_t)1 << 30 : (size_t)mb;
    rr->dtype = (int)dt;
    rr->version = version;
    *out = rr;
    return AS_OK;
}

int as_run_finish(as_run_reader *rr, as_session *s, as_error *err)
{
    s->saved_dtype = rr->dtype;
    s->save_dtype = rr->dtype;
    snprintf(s->saved_run, sizeof s->saved_run, "%s", rr->path);
    return restore(s, &rr->r, rr->dtype, rr->version, rr->path, err);
}

/* Commands a saved run answers: what reads the capture. The rest compute
 * (or set what a computation reads) and need the weights. */
int as_cmd_saved_refuse(const as_session *s, int argc, char **argv, as_error *err)
{
    static const char *const reads[] = {"help", "quit", "info", "hooks", "stats", "norms", "dump", "tokens",
                                        "tokenize", "tokenize-raw", "top", "zoom", "experts", "metric", "set",
                                        "load", "convert", "where", "rollout", "save", "ablations", "watches"};
    if (!s->saved_run[0] || argc < 1)
        return AS_OK;
    const char *cmd = argv[0];
    /* settings that change what the pass computes or where the capture lives: the context is run again, with
     * zero weights, over the saved values (`top` then read a uniform distribution) */
    static const char *const recompute[] = {"attn-result", "in-hooks", "patterns", "capture-file", "activations"};
    for (size_t i = 0; !strcmp(cmd, "set") && argc > 1 && i < sizeof recompute / sizeof *recompute; i++)
        if (!strcmp(argv[1], recompute[i]))
            return as_error_set(err, "this is a saved run of %s: set %s needs the model's weights (the context is "
                                "run again with it)", s->model->path, argv[1]);
    for (size_t i = 0; i < sizeof reads / sizeof *reads; i++)
        if (!strcmp(cmd, reads[i]))
            return AS_OK;
    bool context = false;
    for (int i = 1; i < argc; i++)
        context |= !strcmp(argv[i], "context");
    if (!strcmp(cmd, "heads") && context)
        return AS_OK;
    if (!strcmp(cmd, "export") && argc > 1 && strcmp(argv[1], "lens"))
        return AS_OK;
    bool exp = !strcmp(cmd, "export") && argc > 1;
    return as_error_set(err, "this is a saved run of %s: %s%s%s needs the model's weights%s", s->model->path, cmd,
                        exp ? " " : "", exp ? argv[1] : "",
                        !strcmp(cmd, "heads") ? " (its probe runs the model; `heads context` reads the saved run)"
                                              : "");
}
