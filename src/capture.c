#include "attnscope/capture.h"

#include "attnscope/attention_row.h"
#include "attnscope/pool.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Storage is sized by the positions in use, never by the context window a
 * file declares (131072 for Llama 3): each stream has a capacity in
 * positions that grows (doubling, up to its window) when a pass needs
 * more, and the budget is held to the bytes the positions in use need. */
enum { FIRST_CAPACITY = 64 };

/* Causal (and windowed) rows are stored as a triangle: row q holds keys
 * 0..q. Unmasked rows hold every key of the key stream. */
static bool triangle(const as_attn *a)
{
    return a->mask != AS_MASK_NONE;
}

/* Floats of one head's rows when the query stream holds nq positions and
 * the key stream nk. */
static size_t head_floats_at(const as_attn *a, size_t nq, size_t nk)
{
    return triangle(a) ? nq * (nq + 1) / 2 : nq * nk;
}

/* Bytes a hook needs when stream s holds pos[s] positions. */
static size_t bytes_at(const as_program *p, int hook, const int *pos)
{
    const as_hook *h = &p->hooks[hook];
    size_t n = (size_t)pos[h->stream];
    if (h->is_attn) {
        const as_attn *a = &p->attn[h->attn];
        return (size_t)h->width * head_floats_at(a, n, (size_t)pos[a->kv_stream]) * sizeof(float);
    }
    return (size_t)h->width * n * sizeof(float);
}

size_t as_capture_hook_bytes(const as_program *p, int hook, int n_pos)
{
    int pos[AS_MAX_STREAMS];
    for (int s = 0; s < p->n_streams; s++)
        pos[s] = n_pos < p->streams[s].n_ctx ? n_pos : p->streams[s].n_ctx;
    return bytes_at(p, hook, pos);
}

static size_t head_floats(const as_capture *c, const as_hook *h)
{
    const as_attn *a = &c->prog->attn[h->attn];
    return head_floats_at(a, (size_t)c->capacity[h->stream], (size_t)c->capacity[a->kv_stream]);
}

size_t as_capture_attn_offset(const as_capture *c, int hook, int head, int q)
{
    const as_program *p = c->prog;
    const as_hook *h = &p->hooks[hook];
    const as_attn *a = &p->attn[h->attn];
    size_t row = triangle(a) ? (size_t)q * ((size_t)q + 1) / 2 : (size_t)q * (size_t)c->capacity[a->kv_stream];
    return (size_t)head * head_floats(c, h) + row;
}

int as_capture_attn_keys(const as_capture *c, int hook, int q)
{
    const as_attn *a = &c->prog->attn[c->prog->hooks[hook].attn];
    return triangle(a) ? q + 1 : c->filled[a->k];
}

void as_capture_attn_visible(const as_capture *c, int hook, int q, int *k0, int *k1)
{
    const as_attn *a = &c->prog->attn[c->prog->hooks[hook].attn];
    *k1 = as_capture_attn_keys(c, hook, q);
    *k0 = a->mask == AS_MASK_WINDOW && q - a->window + 1 > 0 ? q - a->window + 1 : 0;
}

/* A head's row computed on demand, in one of ROW_SLOTS rows kept (the
 * last ones asked for: a reader alternating a site's scores and pattern, or
 * walking a row key by key, computes each row once). The slots are the
 * capture's scratch, so the capture is cast from const: what it holds
 * does not change. */
static const float *od_row(const as_capture *cc, int hook, int head, int q)
{
    as_capture *c = (as_capture *)cc;
    const as_program *p = c->prog;
    const as_attn *a = &p->attn[p->hooks[hook].attn];
    for (int s = 0; s < AS_ROW_SLOTS; s++) {
        const as_row_key *k = &c->row_keys[s];
        if (k->gen == c->rows_gen && k->hook == hook && k->head == head && k->q == q)
            return c->row_buf + (size_t)s * c->row_cap;
    }
    int len = as_capture_attn_keys(c, hook, q), slot = c->row_next++ % AS_ROW_SLOTS;
    float *out = c->row_buf + (size_t)slot * c->row_cap, *tmp = c->row_buf + (size_t)AS_ROW_SLOTS * c->row_cap;
    const float *qr = c->store[a->q] + (size_t)q * (size_t)p->hooks[a->q].width + (size_t)head * (size_t)a->d_qk;
    const float *kr = c->store[a->k] + (size_t)(head / (a->n_head / a->n_head_kv)) * (size_t)a->d_qk;
    size_t k_stride = (size_t)p->hooks[a->k].width;
    if (hook == a->pattern) {
        as_attn_score_row(a, qr, kr, k_stride, q, len, NULL, tmp);
        as_softmax(tmp, out, len);
    } else {
        as_attn_score_row(a, qr, kr, k_stride, q, len, NULL, out);
    }
    c->row_keys[slot] = (as_row_key){hook, head, q, c->rows_gen};
    return out;
}

/* The one way to a head's row: the stored one, or computed on demand. */
static const float *attn_row(const as_capture *c, int hook, int head, int q)
{
    if (c->ondemand[hook])
        return od_row(c, hook, head, q);
    return c->store[hook] + as_capture_attn_offset(c, hook, head, q);
}

/* Room for the rows computed on demand: a row of every key the
 * capacities hold, in each slot and the scratch. */
static int size_rows(as_capture *c, as_error *err)
{
    if (!c->od)
        return AS_OK;
    size_t want = 1;
    for (int s = 0; s < c->prog->n_streams; s++)
        want = (size_t)c->capacity[s] > want ? (size_t)c->capacity[s] : want;
    if (want <= c->row_cap)
        return AS_OK;
    float *b = realloc(c->row_buf, (AS_ROW_SLOTS + 1) * want * sizeof *b);
    if (!b)
        return as_error_set(err, "out of memory for the attention rows computed on demand (%zu keys)", want);
    c->row_buf = b;
    c->row_cap = want;
    c->rows_gen++;
    return AS_OK;
}

const float *as_capture_attn_row(const as_capture *c, int hook, int head, int q, int *n_keys)
{
    if (n_keys)
        *n_keys = as_capture_attn_keys(c, hook, q);
    return attn_row(c, hook, head, q);
}

static const char *const class_name[] = {
    "essential", "attention patterns", "attention scores", "logits",
    "q/k/v/z", "MLP activations", "residual-stream copies",
};

/* ---- where the bytes live: RAM (calloc) or the capture file ----
 *
 * The capture file (as_capture_set_file) is an arena: one file mapped
 * shared into an address range reserved once (PROT_NONE, no swap reserved),
 * so a hook's storage never moves when the file grows; a hook's region is
 * allocated at the top (whole pages, the blocks reserved with
 * posix_fallocate so a full disk is an error here, not a SIGBUS at a
 * write), and a region given up (a hook dropped or grown) is punched out of
 * the file, its disk blocks returned. Growth by doubling thus uses about
 * twice the final size of address space, and the final size of disk. */
struct as_capfile {
    int fd;
    char *path;
    uint8_t *base;   /* the reserved range */
    size_t reserved; /* its bytes */
    size_t top;      /* bytes of the file in use (and mapped) */
    bool full;       /* an allocation failed (disk full, unwritable): new storage goes to RAM, the
                      * regions made before stay mapped */
};

static size_t page_bytes(void)
{
    long pg = sysconf(_SC_PAGESIZE);
    return pg > 0 ? (size_t)pg : 4096;
}

static size_t page_up(size_t n)
{
    size_t pg = page_bytes();
    return (n + pg - 1) / pg * pg;
}

static void capfile_close(struct as_capfile *f)
{
    if (!f)
        return;
    if (f->base)
        munmap(f->base, f->reserved);
    if (f->fd >= 0) {
        close(f->fd);
        unlink(f->path); /* working storage, made by us: `save run` writes what is kept */
    }
    free(f->path);
    free(f);
}

/* A region of bytes in the file (zeros), or NULL with why in err. */
static float *capfile_alloc(struct as_capfile *f, size_t bytes, as_error *err)
{
    size_t len = page_up(bytes ? bytes : 1);
    if (len > f->reserved - f->top)
        return as_error_set(err, "capture file %s: the %zu GB of address space reserved for it are used up", f->path,
                            f->reserved >> 30), NULL;
    int rc = posix_fallocate(f->fd, (off_t)f->top, (off_t)len);
    if (rc == EOPNOTSUPP || rc == EINVAL) /* a file system without fallocate: extend sparse */
        rc = ftruncate(f->fd, (off_t)(f->top + len)) ? errno : 0;
    if (rc) {
        if (ftruncate(f->fd, (off_t)f->top)) { /* give back what a partial fallocate took */
        }
        return as_error_set(err, "capture file %s: %s (growing it to %.1f MB)", f->path, strerror(rc),
                            (double)(f->top + len) / (1 << 20)), NULL;
    }
    void *at = mmap(f->base + f->top, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, f->fd, (off_t)f->top);
    if (at == MAP_FAILED)
        return as_error_set(err, "capture file %s: mapping it: %s", f->path, strerror(errno)), NULL;
    f->top += len;
    return (float *)at;
}

/* Gives a region back: its pages dropped and its disk blocks punched out. */
static void capfile_release(struct as_capfile *f, float *p, size_t bytes)
{
    size_t len = page_up(bytes ? bytes : 1);
    size_t off = (size_t)((uint8_t *)p - f->base);
    (void)madvise(p, len, MADV_DONTNEED);
#ifdef FALLOC_FL_PUNCH_HOLE
    (void)fallocate(f->fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (off_t)off, (off_t)len);
#else
    (void)off;
#endif
}

void as_capture_rows_done(as_capture *c, int hook, int from, int to)
{
    if (hook < 0 || !c->file || !c->in_file[hook] || !c->store[hook] || c->prog->hooks[hook].is_attn || to <= from)
        return;
    const as_hook *hk = &c->prog->hooks[hook];
    size_t pg = page_bytes();
    uintptr_t a = (uintptr_t)(c->store[hook] + (size_t)from * (size_t)hk->width) & ~(uintptr_t)(pg - 1);
    uintptr_t b = (uintptr_t)(c->store[hook] + (size_t)to * (size_t)hk->width);
    b = (b + pg - 1) & ~(uintptr_t)(pg - 1);
    /* a shared file mapping: the pages leave this process (its RSS), their
     * contents stay in the page cache to be written back; a later read
     * maps them again */
    if (b > a)
        (void)madvise((void *)a, b - a, MADV_DONTNEED);
}

/* Storage for hook i of `bytes` zeros: in the capture file when there is
 * one (a failure there is said once in c->file_note and the capture goes
 * on in RAM), else calloc'd. */
static float *store_alloc(as_capture *c, int i, size_t bytes)
{
    c->in_file[i] = false;
    if (c->file && !c->file->full) {
        as_error e = {0};
        float *p = capfile_alloc(c->file, bytes, &e);
        if (p) {
            c->in_file[i] = true;
            return p;
        }
        snprintf(c->file_note, sizeof c->file_note, "%s; capturing in RAM from here (the budget, --capture-mb, "
                 "still holds)", e.msg);
        c->file->full = true;
        c->file_failed = true;
    }
    return calloc(1, bytes ? bytes : 1);
}

static void store_free(as_capture *c, int i, size_t bytes)
{
    if (!c->store[i])
        return;
    if (c->in_file[i] && c->file)
        capfile_release(c->file, c->store[i], bytes);
    else if (!c->in_file[i])
        free(c->store[i]);
    c->store[i] = NULL;
    c->in_file[i] = false;
}

/* Moves every stored hook to the present backing (the file, or RAM). */
static int rehome(as_capture *c, bool to_file, as_error *err)
{
    const as_program *p = c->prog;
    for (int i = 0; i < p->n_hooks; i++) {
        if (!c->store[i] || c->in_file[i] == to_file)
            continue;
        size_t bytes = bytes_at(p, i, c->capacity);
        bool old_file = c->in_file[i];
        float *n = to_file ? store_alloc(c, i, bytes) : calloc(1, bytes ? bytes : 1);
        bool now_file = to_file && c->in_file[i];
        if (!n) {
            c->in_file[i] = old_file;
            return as_error_set(err, "out of memory moving %s (%zu bytes)", p->hooks[i].name, bytes);
        }
        memcpy(n, c->store[i], bytes);
        c->in_file[i] = old_file; /* free the old storage as what it was */
        store_free(c, i, bytes);
        c->store[i] = n;
        c->in_file[i] = now_file;
        if (to_file && c->file->full) /* the file failed: the rest stays in RAM */
            return AS_OK;
    }
    return AS_OK;
}

int as_capture_set_file(as_capture *c, const char *path, as_error *err)
{
    c->file_note[0] = '\0';
    c->file_failed = false;
    if (!path) { /* back to RAM, the file removed */
        struct as_capfile *f = c->file;
        if (!f)
            return AS_OK;
        int rc = rehome(c, false, err);
        if (rc)
            return rc;
        c->file = NULL;
        capfile_close(f);
        return AS_OK;
    }
    if (c->file)
        return as_error_set(err, "the capture already goes to %s (set capture-file off first)", c->file->path);
    struct as_capfile *f = calloc(1, sizeof *f);
    if (!f || !(f->path = strdup(path))) {
        free(f);
        return as_error_set(err, "out of memory");
    }
    f->fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (f->fd < 0) {
        int e = errno;
        free(f->path);
        free(f);
        return as_error_set(err, "capture file %s: %s%s; the capture stays in RAM", path, strerror(e),
                            e == EEXIST ? " (it is made new, and removed when the session ends: name another "
                                          "path, or `save run` to keep a run)" : "");
    }
    for (size_t r = sizeof(void *) == 8 ? (size_t)1 << 40 : (size_t)1 << 30; r >= (size_t)1 << 28; r >>= 2) {
        void *b = mmap(NULL, r, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (b != MAP_FAILED) {
            f->base = b;
            f->reserved = r;
            break;
        }
    }
    if (!f->base) {
        capfile_close(f);
        return as_error_set(err, "capture file %s: no address space to map it; the capture stays in RAM", path);
    }
    c->file = f;
    if (rehome(c, true, err))
        return AS_ERR;
    if (f->full) { /* failed on the way: said in file_note */
        as_error_set(err, "%s", c->file_note);
        return AS_ERR;
    }
    return AS_OK;
}

void as_capture_drop_hook(as_capture *c, int hook)
{
    store_free(c, hook, bytes_at(c->prog, hook, c->capacity));
    c->filled[hook] = 0;
}

const char *as_capture_file_path(const as_capture *c)
{
    return c->file ? c->file->path : NULL;
}

size_t as_capture_file_bytes(const as_capture *c)
{
    return c->file ? c->file->top : 0;
}

/* New storage for hook i (or its norm statistics) at capacities cap,
 * holding what the old storage at c->capacity held. Attention rows move
 * one by one (a head's share grows with both capacities). */
static int restore_hook(as_capture *c, int i, const int *cap, as_error *err)
{
    const as_program *p = c->prog;
    const as_hook *h = &p->hooks[i];
    if (c->stats[i]) {
        size_t w = (size_t)h->width;
        as_norm_stat *st = calloc((size_t)cap[h->stream] * w, sizeof *st);
        if (!st)
            return as_error_set(err, "out of memory keeping the statistics of %s (%d positions)", h->name,
                                cap[h->stream]);
        memcpy(st, c->stats[i], (size_t)c->capacity[h->stream] * w * sizeof *st);
        free(c->stats[i]);
        c->stats[i] = st;
    }
    if (!c->store[i])
        return AS_OK;
    size_t bytes = bytes_at(p, i, cap);
    bool was_file = c->in_file[i];
    float *s = store_alloc(c, i, bytes);
    bool now_file = c->in_file[i];
    if (!s)
        return as_error_set(err, "out of memory capturing %s (%zu bytes at %d positions; --capture-mb 0 keeps only "
                            "what the computation needs)", h->name, bytes, cap[h->stream]);
    if (!h->is_attn) {
        /* the rows computed (later ones are zeros, or a pass taken back: never read); in a capture file
         * their pages then leave the process, as a prompt's do (as_capture_rows_done) */
        int rows = c->filled[i] < c->capacity[h->stream] ? c->filled[i] : c->capacity[h->stream];
        memcpy(s, c->store[i], (size_t)rows * (size_t)h->width * sizeof *s);
        if (now_file && rows > 0) {
            float *old = c->store[i];
            c->store[i] = s;
            as_capture_rows_done(c, i, 0, rows);
            c->store[i] = old;
        }
    } else {
        const as_attn *a = &p->attn[h->attn];
        size_t oq = (size_t)c->capacity[h->stream], ok = (size_t)c->capacity[a->kv_stream];
        size_t nq = (size_t)cap[h->stream], nk = (size_t)cap[a->kv_stream];
        for (size_t head = 0; head < (size_t)h->width; head++) {
            if (triangle(a)) { /* a head's triangle is one block */
                memcpy(s + head * head_floats_at(a, nq, nk), c->store[i] + head * head_floats_at(a, oq, ok),
                       head_floats_at(a, oq, ok) * sizeof *s);
                continue;
            }
            for (size_t q = 0; q < oq; q++)
                memcpy(s + head * nq * nk + q * nk, c->store[i] + head * oq * ok + q * ok, ok * sizeof *s);
        }
    }
    c->in_file[i] = was_file; /* the old storage freed as what it was */
    store_free(c, i, bytes_at(p, i, c->capacity));
    c->store[i] = s;
    c->in_file[i] = now_file;
    return AS_OK;
}

/* Grows each stream's capacity to hold ends[s] positions (doubling, up to
 * its window), moving the hooks that depend on it. */
static int grow(as_capture *c, const int *ends, as_error *err)
{
    const as_program *p = c->prog;
    int cap[AS_MAX_STREAMS];
    bool any = false;
    for (int s = 0; s < p->n_streams; s++) {
        cap[s] = c->capacity[s];
        if (ends[s] <= cap[s])
            continue;
        long want = 2L * cap[s] > ends[s] ? 2L * cap[s] : ends[s];
        cap[s] = want > p->streams[s].n_ctx ? p->streams[s].n_ctx : (int)want;
        any = true;
    }
    if (!any)
        return AS_OK;
    for (int i = 0; i < p->n_hooks; i++) {
        const as_hook *h = &p->hooks[i];
        bool moves = cap[h->stream] != c->capacity[h->stream] ||
                     (h->is_attn && cap[p->attn[h->attn].kv_stream] != c->capacity[p->attn[h->attn].kv_stream]);
        if (moves && restore_hook(c, i, cap, err))
            return AS_ERR;
        if (moves)
            c->committed[i] = 0;
    }
    memcpy(c->capacity, cap, sizeof cap);
    return AS_OK;
}

/* Which classes the budget keeps at pos[s] positions, lowest class first
 * while they fit: returns the first class dropped (-1: none). A class that
 * does not fit is dropped whole with every class after it, so what remains
 * is coherent; one dropped before (from) stays dropped, its earlier
 * positions being gone (-1: nothing computed yet, decide anew). need[]
 * gets each class's bytes, *used those kept. */
static int plan(const as_capture *c, const int *pos, int from, bool od, size_t *need, size_t *used)
{
    const as_program *p = c->prog;
    memset(need, 0, (AS_CLASS_RESID + 1) * sizeof *need);
    for (int i = 0; i < p->n_hooks; i++)
        if (!(od && c->od_attn[i])) /* computed on demand: nothing stored */
            need[od && c->od_q[i] ? AS_CLASS_ESSENTIAL : p->hooks[i].klass] += bytes_at(p, i, pos);
    size_t droppable = 0; /* the KV cache and norm scales are not the budget's to drop */
    *used = need[AS_CLASS_ESSENTIAL];
    for (int klass = AS_CLASS_ESSENTIAL + 1; klass <= AS_CLASS_RESID; klass++) {
        bool keep = c->budget > 0 && (from < 0 || klass < from) && droppable + need[klass] <= c->budget;
        if (!keep)
            return klass;
        droppable += need[klass];
        *used += need[klass];
    }
    return -1;
}

static size_t mb_up(size_t bytes)
{
    return (bytes + (1u << 20) - 1) >> 20;
}

/* The budget (MB) that keeps every class plan() sized. */
static size_t keep_all_mb(const size_t *need)
{
    size_t all = 0;
    for (int klass = AS_CLASS_ESSENTIAL + 1; klass <= AS_CLASS_RESID; klass++)
        all += need[klass];
    return mb_up(all);
}

/* What plan() decided, in words: "" when everything is kept. */
static void describe(const as_capture *c, const int *pos, int from, const size_t *need, char *buf, size_t size)
{
    buf[0] = '\0';
    if (from < 0)
        return;
    int n = 0;
    for (int s = 0; s < c->prog->n_streams; s++)
        n = pos[s] > n ? pos[s] : n;
    size_t off = (size_t)snprintf(buf, size, "capture budget %.1f MB at %d position%s: not keeping",
                                  (double)c->budget / (1 << 20), n, n == 1 ? "" : "s");
    for (int klass = AS_CLASS_RESID; klass >= from && off < size; klass--)
        off += (size_t)snprintf(buf + off, size - off, "%s %s", klass == AS_CLASS_RESID ? "" : ",", class_name[klass]);
    /* what would keep them: every droppable class at these positions */
    if (off < size)
        snprintf(buf + off, size - off, " (--capture-mb %zu keeps them at %d positions)", keep_all_mb(need), n);
}

/* ---------------------------------------------------------------- patterns on demand
 *
 * An attention site's scores and pattern are quadratic in the context;
 * what they are computed from (the site's q after rotary, its KV cache's
 * k; its soft-cap, window and scale) grows linearly. On demand, the two
 * hooks of a site without a bias hook (T5's relative bias is itself
 * quadratic: such sites stay stored) keep no storage: their q hook is kept
 * as the KV cache is (never dropped by the budget) and a head's row is
 * computed when read, by as_attn_score_row and as_softmax, the calls the
 * forward pass makes, so it is the forward's row bit for bit. */

static as_patterns patterns_mode = AS_PATTERNS_AUTO;

bool as_set_patterns(const char *mode)
{
    if (!strcmp(mode, "stored"))
        patterns_mode = AS_PATTERNS_STORED;
    else if (!strcmp(mode, "on-demand"))
        patterns_mode = AS_PATTERNS_ON_DEMAND;
    else if (!strcmp(mode, "auto"))
        patterns_mode = AS_PATTERNS_AUTO;
    else
        return false;
    return true;
}

as_patterns as_get_patterns(void)
{
    return patterns_mode;
}

const char *as_patterns_describe(void)
{
    switch (patterns_mode) {
    case AS_PATTERNS_STORED: return "stored (every attention row kept in full)";
    case AS_PATTERNS_ON_DEMAND: return "on-demand (rows computed from the captured q and k when read)";
    default: return "auto (stored while they fit the capture budget, else computed on demand)";
    }
}

/* Whether the q hooks of the on-demand sites hold every position their
 * patterns hold, so the patterns can be computed from them from here on. */
static bool q_intact(const as_capture *c)
{
    const as_program *p = c->prog;
    for (int a = 0; a < p->n_attn; a++) {
        const as_attn *s = &p->attn[a];
        if (!c->od_attn[s->pattern])
            continue;
        if (!c->store[s->pattern] || !c->store[s->q] || c->filled[s->q] < c->filled[s->pattern])
            return false;
    }
    return true;
}

/* On demand or stored at pos: as the setting says; auto: on demand when
 * the budget would drop a class with the patterns stored and keep more
 * with them on demand (a budget of 0 keeps nothing but the essentials, as
 * before). Mid-context (a generation outgrowing the budget) that is at the
 * first drop, while the q rows are all there; once on, it stays on until
 * the context is computed anew. */
static bool choose_od(const as_capture *c, const int *pos, bool fresh)
{
    bool any = false;
    for (int i = 0; i < c->prog->n_hooks; i++)
        any = any || c->od_attn[i];
    if (!any)
        return false;
    if (!fresh && c->od)
        return true;
    if (fresh && patterns_mode != AS_PATTERNS_AUTO)
        return patterns_mode == AS_PATTERNS_ON_DEMAND;
    if (patterns_mode != AS_PATTERNS_AUTO || c->budget == 0)
        return false;
    size_t need[AS_CLASS_RESID + 1], used;
    int from = plan(c, pos, fresh ? -1 : c->dropped_from, false, need, &used);
    if (from < 0) /* everything fits stored */
        return false;
    int from_od = plan(c, pos, fresh ? -1 : c->dropped_from, true, need, &used);
    if (from_od >= 0 && from_od <= from) /* on demand would keep no more */
        return false;
    return fresh || q_intact(c);
}

/* Applies plan() at pos: frees the classes dropped, allocates (at the
 * present capacity) those kept that have no storage yet. */
static int decide(as_capture *c, const int *pos, bool fresh, as_error *err)
{
    const as_program *p = c->prog;
    size_t need[AS_CLASS_RESID + 1];
    bool od = choose_od(c, pos, fresh);
    if (od != c->od)
        c->rows_gen++;
    c->od = od;
    for (int i = 0; i < p->n_hooks; i++)
        c->ondemand[i] = od && c->od_attn[i];
    c->dropped_from = plan(c, pos, fresh ? -1 : c->dropped_from, od, need, &c->used);
    c->essential = need[AS_CLASS_ESSENTIAL];
    c->keep_mb = keep_all_mb(need);
    c->n_dropped = 0;
    for (int i = 0; i < p->n_hooks; i++) {
        const as_hook *h = &p->hooks[i];
        if (c->ondemand[i]) { /* its rows are computed when read: filled stays */
            store_free(c, i, bytes_at(p, i, c->capacity));
            continue;
        }
        int klass = od && c->od_q[i] ? AS_CLASS_ESSENTIAL : (int)h->klass;
        if (c->dropped_from >= 0 && klass >= c->dropped_from) {
            store_free(c, i, bytes_at(p, i, c->capacity));
            c->filled[i] = 0;
            c->n_dropped++;
            continue;
        }
        if (c->store[i])
            continue;
        size_t bytes = bytes_at(p, i, c->capacity);
        c->store[i] = store_alloc(c, i, bytes);
        c->committed[i] = 0;
        if (!c->store[i])
            return as_error_set(err, "out of memory capturing %s (%zu bytes at %d positions)", h->name, bytes,
                                c->capacity[h->stream]);
    }
    describe(c, pos, c->dropped_from, need, c->dropped, sizeof c->dropped);
    return AS_OK;
}

/* No hook holds a value: a new context, whose budget is decided anew. */
static bool nothing_computed(const as_capture *c)
{
    for (int i = 0; i < c->prog->n_hooks; i++)
        if (c->filled[i])
            return false;
    return true;
}

bool as_capture_plan_on_demand(const as_capture *c, const int *pos)
{
    return choose_od(c, pos, nothing_computed(c));
}

void as_capture_plan(const as_capture *c, const int *pos, char *buf, size_t size)
{
    size_t need[AS_CLASS_RESID + 1], used;
    bool fresh = nothing_computed(c);
    int from = plan(c, pos, fresh ? -1 : c->dropped_from, choose_od(c, pos, fresh), need, &used);
    describe(c, pos, from, need, buf, size);
}

size_t as_capture_default_mb(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    size_t half = pages > 0 && page > 0 ? (size_t)pages / 2 * (size_t)page >> 20 : 0;
    return half > 1024 ? half : 1024;
}

int as_capture_new(as_capture **out, const as_program *p, size_t budget, as_error *err)
{
    *out = NULL;
    as_capture *c = calloc(1, sizeof *c);
    if (!c)
        return as_error_set(err, "out of memory");
    c->prog = p;
    c->n_ctx = p->streams[p->out_stream].n_ctx;
    c->budget = budget;
    c->dropped_from = -1;
    c->rows_gen = 1; /* the slots' zeroed keys name no row */
    for (int e = 0; e < AS_CELL_CACHES; e++)
        c->cells[e].hook = -1;
    c->store = calloc((size_t)p->n_hooks, sizeof *c->store);
    c->stats = calloc((size_t)p->n_hooks, sizeof *c->stats);
    c->filled = calloc((size_t)p->n_hooks, sizeof *c->filled);
    c->committed = calloc((size_t)p->n_hooks, sizeof *c->committed);
    c->in_file = calloc((size_t)p->n_hooks, sizeof *c->in_file);
    c->ondemand = calloc((size_t)p->n_hooks, sizeof *c->ondemand);
    c->od_attn = calloc((size_t)p->n_hooks, sizeof *c->od_attn);
    c->od_q = calloc((size_t)p->n_hooks, sizeof *c->od_q);
    if (!c->store || !c->stats || !c->filled || !c->committed || !c->in_file || !c->ondemand || !c->od_attn || !c->od_q) {
        as_capture_free(c);
        return as_error_set(err, "out of memory");
    }
    for (int a = 0; a < p->n_attn; a++) {
        const as_attn *s = &p->attn[a];
        if (s->bias >= 0 || s->scores < 0 || s->pattern < 0)
            continue;
        c->od_attn[s->scores] = c->od_attn[s->pattern] = true;
        c->od_q[s->q] = true;
    }
    for (int s = 0; s < p->n_streams; s++)
        c->capacity[s] = p->streams[s].n_ctx < FIRST_CAPACITY ? p->streams[s].n_ctx : FIRST_CAPACITY;
    for (int o = 0; o < p->n_ops; o++) {
        if (p->ops[o].kind != AS_OP_NORM_SCALE)
            continue;
        int i = p->ops[o].out; /* one statistic per group (head) per position */
        c->stats[i] = calloc((size_t)c->capacity[p->hooks[i].stream] * (size_t)p->hooks[i].width, sizeof **c->stats);
        if (!c->stats[i]) {
            as_capture_free(c);
            return as_error_set(err, "out of memory");
        }
    }
    int none[AS_MAX_STREAMS] = {0};
    if (decide(c, none, true, err) || size_rows(c, err)) {
        as_capture_free(c);
        return AS_ERR;
    }
    *out = c;
    return AS_OK;
}

static void cells_drop(as_capture *c, as_cell_cache *e);

void as_capture_free(as_capture *c)
{
    if (!c)
        return;
    for (int i = 0; c->store && i < c->prog->n_hooks; i++) {
        if (c->in_file && !c->in_file[i])
            free(c->store[i]);
        if (c->stats)
            free(c->stats[i]);
    }
    for (int e = 0; e < AS_CELL_CACHES; e++)
        if (c->cells[e].hook >= 0)
            cells_drop(c, &c->cells[e]);
    as_pool_free(c->cell_pool);
    capfile_close(c->file); /* its regions go with the mapping */
    free(c->in_file);
    free(c->store);
    free(c->stats);
    free(c->filled);
    free(c->committed);
    free(c->ondemand);
    free(c->od_attn);
    free(c->od_q);
    free(c->row_buf);
    free(c);
}

/* Float offsets [from, to) of hook storage, widened to whole pages. */
static void populate(float *base, size_t from, size_t to)
{
    static long page;
    if (!page)
        page = sysconf(_SC_PAGESIZE) > 0 ? sysconf(_SC_PAGESIZE) : 4096;
    uintptr_t a = (uintptr_t)(base + from) & ~(uintptr_t)(page - 1);
    uintptr_t b = ((uintptr_t)(base + to) + (uintptr_t)page - 1) & ~(uintptr_t)(page - 1);
    if (b > a)
        (void)madvise((void *)a, b - a, MADV_POPULATE_WRITE); /* a hint: failure changes nothing */
}

int as_capture_prepare(as_capture *c, const int *ends, as_error *err)
{
    const as_program *p = c->prog;
    c->rows_gen++; /* a pass changes what a row computed on demand reads */
    if (decide(c, ends, nothing_computed(c), err) || grow(c, ends, err) || size_rows(c, err))
        return AS_ERR;
    for (int i = 0; i < p->n_hooks; i++) {
        const as_hook *h = &p->hooks[i];
        int end = ends[h->stream];
        if (!c->store[i] || c->committed[i] >= end)
            continue;
        /* Ahead by about 64 KB per hook (at least 8 positions): a few
         * calls per hook over a whole context, little committed in vain.
         * An attention head's rows grow with the position, so its share
         * is counted in the triangle's floats: rows [end, to) hold
         * (to(to+1) - end(end+1))/2 of them. */
        size_t budget = (64u << 10) / sizeof(float) / (size_t)(h->width > 0 ? h->width : 1);
        double want;
        bool tri = h->is_attn && triangle(&p->attn[h->attn]);
        if (tri)
            want = ceil(sqrt(2.0 * (double)budget + (double)end * (end + 1) + 0.25) - 0.5);
        else
            want = (double)end + (double)budget / (h->is_attn ? (double)c->capacity[p->attn[h->attn].kv_stream] : 1.0);
        if (want < end + 8.0)
            want = end + 8.0;
        int n_ctx = c->capacity[h->stream];
        int to = want >= (double)n_ctx ? n_ctx : (int)want;
        int from = c->committed[i];
        if (c->in_file[i])
            ; /* the file's blocks are reserved already (posix_fallocate); its pages faulted in
               * here would only count in the process's RSS (as_capture_rows_done) */
        else if (h->is_attn)
            for (int head = 0; head < h->width; head++)
                populate(c->store[i], as_capture_attn_offset(c, i, head, from), as_capture_attn_offset(c, i, head, to));
        else
            populate(c->store[i], (size_t)from * (size_t)h->width, (size_t)to * (size_t)h->width);
        c->committed[i] = to;
    }
    return AS_OK;
}

bool as_capture_has(const as_capture *c, int hook)
{
    return hook >= 0 && hook < c->prog->n_hooks && (c->store[hook] != NULL || c->ondemand[hook]);
}

bool as_capture_stored(const as_capture *c, int hook)
{
    return hook >= 0 && hook < c->prog->n_hooks && c->store[hook] != NULL;
}

bool as_capture_in_file(const as_capture *c, int hook)
{
    return as_capture_stored(c, hook) && c->file && c->in_file[hook];
}

bool as_capture_on_demand(const as_capture *c, int hook)
{
    return hook >= 0 && hook < c->prog->n_hooks && c->ondemand[hook];
}

bool as_capture_patterns_on_demand(const as_capture *c)
{
    return c->od;
}

const float *as_capture_row(const as_capture *c, int hook, int pos)
{
    return c->store[hook] + (size_t)pos * (size_t)c->prog->hooks[hook].width;
}

float as_capture_attn(const as_capture *c, int hook, int head, int q, int k)
{
    const as_attn *a = &c->prog->attn[c->prog->hooks[hook].attn];
    if (!as_attn_visible(a, q, k))
        return c->prog->hooks[hook].kind == AS_HK_ATTN_SCORES ? -INFINITY : 0.0f;
    return attn_row(c, hook, head, q)[k];
}

int as_capture_attn_block(const as_capture *c, int hook, int head, int filled, int q0, int q1, int k0, int k1,
                          bool mean, float *v)
{
    const as_attn *a = &c->prog->attn[c->prog->hooks[hook].attn];
    double sum = 0;
    float most = 0;
    long count = 0;
    bool pending = false;
    for (int q = q0; q < q1; q++)
        for (int k = k0; k < k1; k++) {
            if (!as_attn_visible(a, q, k))
                continue;
            if (q >= filled) {
                pending = true;
                continue;
            }
            float w = attn_row(c, hook, head, q)[k];
            most = count == 0 || w > most ? w : most;
            sum += w;
            count++;
        }
    if (count == 0)
        return pending ? AS_BLOCK_PENDING : AS_BLOCK_MASKED;
    *v = mean ? (float)(sum / (double)count) : most;
    return AS_BLOCK_VALUE;
}

/* ---- zoomed-out maps' cells, kept (as_capture_attn_cells) ---- */

enum { AS_CELL_BYTES = 128 << 20 }; /* the kept cells' bytes at most: a map at zoom 2 of 8k tokens is 256 MB */

static void cells_drop(as_capture *c, as_cell_cache *e)
{
    for (int i = 0; e->rows && i < e->nbq; i++)
        free(e->rows[i]);
    free(e->rows);
    free(e->todo);
    free(e->kb);
    c->cell_bytes -= e->bytes;
    memset(e, 0, sizeof *e);
    e->hook = -1;
}

/* The first item of block i of n items: blocks of zoom, or v even blocks. */
static int cell_start(int i, int n, int zoom, int v)
{
    if (zoom > 0)
        return (long)i * zoom < n ? i * zoom : n;
    return (int)((long)i * n / v);
}

/* The kept map for these arguments, made (empty) if there is none; NULL
 * when out of memory. */
static as_cell_cache *cells_find(as_capture *c, int hook, int head, int filled, int n_q, int n_k, int zoom, int vq,
                                 int vk)
{
    as_cell_cache *free_one = NULL, *oldest = NULL;
    for (int s = 0; s < AS_CELL_CACHES; s++) {
        as_cell_cache *e = &c->cells[s];
        if (e->hook == hook && e->head == head && e->filled == filled && e->n_q == n_q && e->n_k == n_k &&
            e->zoom == zoom && e->vq == vq && e->vk == vk && e->gen == c->rows_gen)
            return e;
        if (e->hook >= 0 && e->gen != c->rows_gen)
            cells_drop(c, e); /* stale: a pass ran since */
        if (e->hook < 0 && !free_one)
            free_one = e;
        if (e->hook >= 0 && (!oldest || e->used < oldest->used))
            oldest = e;
    }
    as_cell_cache *e = free_one;
    if (!e) {
        cells_drop(c, oldest);
        e = oldest;
    }
    e->nbq = zoom > 0 ? (n_q + zoom - 1) / zoom : vq;
    e->nbk = zoom > 0 ? (n_k + zoom - 1) / zoom : vk;
    e->rows = calloc((size_t)e->nbq, sizeof *e->rows);
    e->todo = calloc((size_t)e->nbq, sizeof *e->todo);
    e->kb = malloc(((size_t)e->nbk + 1) * sizeof *e->kb);
    if (!e->rows || !e->todo || !e->kb) {
        cells_drop(c, e);
        return NULL;
    }
    for (int j = 0; j <= e->nbk; j++)
        e->kb[j] = cell_start(j, n_k, zoom, vk);
    e->hook = hook, e->head = head, e->filled = filled, e->n_q = n_q, e->n_k = n_k;
    e->zoom = zoom, e->vq = vq, e->vk = vk, e->gen = c->rows_gen;
    return e;
}

enum { CELL_TILE = 32 }; /* on-demand rows computed together: each key read once for them all */
enum { CELL_BASE = 64 }; /* zooms past it made from its cells (256 KB a head at 8k tokens) */

/* Block row i of e made: begun and every query of it added. */
static bool row_done(const as_cell_cache *e, int i)
{
    return e->rows[i] && e->todo[i] >= cell_start(i + 1, e->n_q, e->zoom, e->vq);
}

static long long mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void as_capture_cells_budget(const as_capture *cc, double ms)
{
    as_capture *c = (as_capture *)cc; /* the bound is the readers' scratch, as the cells are */
    c->cell_deadline = ms < 0 ? 0 : mono_ns() + (long long)(ms * 1e6);
    c->cell_worked = false;
    c->cell_late = 0;
    c->cell_late_made = 0;
}

int as_capture_cells_late(const as_capture *c)
{
    return c->cell_late;
}

double as_capture_cells_late_made(const as_capture *c)
{
    return c->cell_late_made;
}

/* Past the bound: a deadline set and passed, a tile added since it was set. */
static bool cells_out_of_time(const as_capture *c)
{
    return c->cell_deadline && c->cell_worked && mono_ns() >= c->cell_deadline;
}

/* Rows [q0, q1) of a head on demand, each as od_row computes it (the same
 * as_dot of each key and the query, the same finish and softmax: the same
 * bits), the keys read once for the tile's queries rather than once a
 * row: a long context's keys (8k positions x every head's k, strided) come
 * from memory once a tile, not once a row. rows: (q1 - q0) rows of
 * `stride` floats; tmp: a row. */
static void od_rows(const as_capture *c, int hook, int head, int q0, int q1, float *rows, size_t stride, float *tmp)
{
    const as_program *p = c->prog;
    const as_attn *a = &p->attn[p->hooks[hook].attn];
    const float *kr = c->store[a->k] + (size_t)(head / (a->n_head / a->n_head_kv)) * (size_t)a->d_qk;
    size_t k_stride = (size_t)p->hooks[a->k].width, q_stride = (size_t)p->hooks[a->q].width;
    const float *qr = c->store[a->q] + (size_t)head * (size_t)a->d_qk;
    int len[CELL_TILE], most = 0;
    for (int q = q0; q < q1; q++) {
        len[q - q0] = as_capture_attn_keys(c, hook, q);
        most = len[q - q0] > most ? len[q - q0] : most;
    }
    for (int t = 0; t < most; t++) {
        const float *k = kr + (size_t)t * k_stride;
        for (int q = q0; q < q1; q++)
            if (t < len[q - q0])
                rows[(size_t)(q - q0) * stride + (size_t)t] = as_dot(k, qr + (size_t)q * q_stride, a->d_qk) * a->scale;
    }
    for (int q = q0; q < q1; q++) {
        float *row = rows + (size_t)(q - q0) * stride;
        if (!as_attn_row_plain(a))
            as_attn_finish_scores(a, q, NULL, row, len[q - q0]);
        if (hook == a->pattern) {
            memcpy(tmp, row, (size_t)len[q - q0] * sizeof *tmp);
            as_softmax(tmp, row, len[q - q0]);
        }
    }
}

/* A tile's rows split over the threads (as_set_threads), each thread's
 * rows by od_rows: each row the same arithmetic whichever thread and
 * group computes it (the same bits). The capture's own pool, made when
 * first needed: the interpreter's serves passes. */
typedef struct od_job {
    const as_capture *c;
    int hook, head, q0, q1, per;
    float *rows, *tmp;
    size_t stride;
} od_job;

static void od_task(void *ctx, int t)
{
    const od_job *j = ctx;
    int a = j->q0 + t * j->per, b = a + j->per < j->q1 ? a + j->per : j->q1;
    if (a < b)
        od_rows(j->c, j->hook, j->head, a, b, j->rows + (size_t)(a - j->q0) * j->stride, j->stride,
                j->tmp + (size_t)t * j->stride);
}

static int cells_threads(as_capture *c)
{
    int want = as_get_threads();
    want = want < 1 ? 1 : want > 8 ? 8 : want;
    if (as_pool_size(c->cell_pool) != want || (want > 1 && !c->cell_pool)) {
        as_pool_free(c->cell_pool);
        c->cell_pool = NULL;
        as_error ignore;
        if (want > 1 && as_pool_new(&c->cell_pool, want, &ignore))
            c->cell_pool = NULL; /* no threads: the same rows on this one */
    }
    return as_pool_size(c->cell_pool);
}

static void od_rows_split(as_capture *c, int hook, int head, int q0, int q1, float *rows, size_t stride, float *tmp,
                          int threads)
{
    od_job j = {c, hook, head, q0, q1, (q1 - q0 + threads - 1) / threads, rows, tmp, stride};
    as_pool_run(threads > 1 ? c->cell_pool : NULL, od_task, &j, threads);
}

/* Block row i's cells: each of its query rows read once (on demand, a
 * tile of them computed together), its visible weights added to their
 * key blocks' cells in the order as_capture_attn_block adds them
 * (queries, then keys, ascending). */
static bool cells_make_row(as_capture *c, as_cell_cache *e, int i, as_cell_agg *out)
{
    const as_attn *a = &c->prog->attn[c->prog->hooks[e->hook].attn];
    int q0 = e->todo[i], q1 = cell_start(i + 1, e->n_q, e->zoom, e->vq);
    int tile0 = q0, tile1 = q0; /* on demand: rows [tile0, tile1) are in tile */
    size_t stride = 0;
    float *tile = NULL;
    int threads = 1;
    if (c->ondemand[e->hook] && q0 < (q1 < e->filled ? q1 : e->filled)) {
        int last = (q1 < e->filled ? q1 : e->filled) - 1;
        stride = (size_t)as_capture_attn_keys(c, e->hook, last); /* the longest row of the block */
        threads = cells_threads(c);
        tile = malloc(((size_t)CELL_TILE + (size_t)threads) * (stride ? stride : 1) * sizeof *tile);
    }
    for (int q = q0; q < q1; q++) {
        if ((q - q0) % CELL_TILE == 0 && q < e->filled) {
            /* a tile of rows at a time under a bound (as_capture_cells_budget): the sums so far kept */
            if (q > q0)
                c->cell_worked = true; /* a tile added */
            if (cells_out_of_time(c)) {
                e->todo[i] = q;
                free(tile);
                return false;
            }
        }
        int lo = 0, hi = e->n_k; /* the keys q sees: as_attn_visible's */
        if (a->mask != AS_MASK_NONE && hi > q + 1)
            hi = q + 1;
        if (a->mask == AS_MASK_WINDOW && lo < q - a->window + 1)
            lo = q - a->window + 1;
        if (lo >= hi)
            continue;
        const float *row = NULL;
        if (q < e->filled && tile) {
            if (q >= tile1) {
                tile0 = q;
                tile1 = q + CELL_TILE < q1 ? q + CELL_TILE : q1;
                tile1 = tile1 < e->filled ? tile1 : e->filled;
                od_rows_split(c, e->hook, e->head, tile0, tile1, tile, stride, tile + (size_t)CELL_TILE * stride,
                              threads);
            }
            row = tile + (size_t)(q - tile0) * stride;
        } else if (q < e->filled) {
            row = attn_row(c, e->hook, e->head, q);
        }
        int j = e->zoom > 0 ? lo / e->zoom : 0;
        while (e->kb[j + 1] <= lo)
            j++;
        for (; j < e->nbk && e->kb[j] < hi; j++) {
            as_cell_agg *g = &out[j];
            int k0 = e->kb[j] > lo ? e->kb[j] : lo, k1 = e->kb[j + 1] < hi ? e->kb[j + 1] : hi;
            if (k0 >= k1)
                continue;
            if (!row) {
                g->count |= AS_CELL_PENDING;
                continue;
            }
            double sum = g->sum;
            float most = g->max;
            unsigned n = g->count & ~AS_CELL_PENDING;
            for (int k = k0; k < k1; k++) {
                float w = row[k];
                most = n == 0 || w > most ? w : most;
                sum += w;
                n++;
            }
            g->sum = sum;
            g->max = most;
            g->count = n | (g->count & AS_CELL_PENDING);
        }
    }
    if (q0 < q1 && q0 < e->filled)
        c->cell_worked = true;
    e->todo[i] = q1;
    free(tile);
    return true;
}

/* Block row i of a map in blocks of zoom from a finer one kept (blocks of
 * a power of two dividing zoom), its block rows there made: each cell the
 * largest of the finer cells' maxima, their sums and counts added (the
 * mean's double sum in another order: equal to the row-by-row one to a
 * double's rounding). False when there is none, or a maximum is NaN
 * (whose place in the order decides the row-by-row max). */
static bool cells_from_finer(const as_capture *c, const as_cell_cache *e, int i, as_cell_agg *out)
{
    const as_cell_cache *best = NULL;
    for (int s = 0; s < AS_CELL_CACHES; s++) {
        const as_cell_cache *f = &c->cells[s];
        if (f == e || f->hook != e->hook || f->head != e->head || f->filled != e->filled || f->n_q != e->n_q ||
            f->n_k != e->n_k || f->gen != e->gen || f->zoom <= 0 || f->zoom >= e->zoom || e->zoom % f->zoom ||
            (best && best->zoom > f->zoom))
            continue;
        int r = e->zoom / f->zoom, r0 = i * r, r1 = r0 + r < f->nbq ? r0 + r : f->nbq;
        bool all = true;
        for (int fr = r0; fr < r1 && all; fr++)
            all = row_done(f, fr);
        if (all)
            best = f;
    }
    if (!best)
        return false;
    int r = e->zoom / best->zoom, r0 = i * r, r1 = r0 + r < best->nbq ? r0 + r : best->nbq;
    memset(out, 0, (size_t)e->nbk * sizeof *out);
    for (int fr = r0; fr < r1; fr++)
        for (int fj = 0; fj < best->nbk; fj++) {
            const as_cell_agg *f = &best->rows[fr][fj];
            as_cell_agg *g = &out[fj / r];
            unsigned fn = f->count & ~AS_CELL_PENDING, n = g->count & ~AS_CELL_PENDING;
            if (fn) {
                if (isnan(f->max))
                    return false;
                g->max = n == 0 || f->max > g->max ? f->max : g->max;
                g->sum += f->sum;
            }
            g->count = (n + fn) | ((g->count | f->count) & AS_CELL_PENDING);
        }
    return true;
}

/* A cell left for later (as_capture_cells_budget): AS_BLOCK_LATER where
 * the block has a visible key in a row computed; else what it is without
 * a row read (masked, or pending past the filled rows). */
static int cell_later(as_capture *c, int hook, int filled, int q0, int q1, int k0, int k1, double made)
{
    const as_attn *a = &c->prog->attn[c->prog->hooks[hook].attn];
    bool pending = false;
    for (int q = q0; q < q1; q++) {
        int lo = 0, hi = k1; /* the keys q sees among the block's: as_attn_visible's */
        if (a->mask != AS_MASK_NONE && hi > q + 1)
            hi = q + 1;
        if (a->mask == AS_MASK_WINDOW && lo < q - a->window + 1)
            lo = q - a->window + 1;
        lo = lo > k0 ? lo : k0;
        if (lo >= hi)
            continue;
        if (q >= filled) {
            pending = true;
            continue;
        }
        c->cell_late++;
        c->cell_late_made += made;
        return AS_BLOCK_LATER;
    }
    return pending ? AS_BLOCK_PENDING : AS_BLOCK_MASKED;
}

/* The share (0 to 1) of the queries of the base zoom's block rows [b0, b1)
 * of a head added: 1 when they are made. */
static double base_rows_made(const as_capture *c, int hook, int head, int filled, int n_q, int n_k, int b0, int b1)
{
    for (int s = 0; s < AS_CELL_CACHES; s++) {
        const as_cell_cache *f = &c->cells[s];
        if (f->hook != hook || f->head != head || f->filled != filled || f->n_q != n_q || f->n_k != n_k ||
            f->zoom != CELL_BASE || f->gen != c->rows_gen)
            continue;
        long made = 0, all = 0;
        for (int b = b0; b < b1 && b < f->nbq; b++) {
            int q0 = cell_start(b, n_q, CELL_BASE, 0), q1 = cell_start(b + 1, n_q, CELL_BASE, 0);
            all += q1 - q0;
            made += row_done(f, b) ? q1 - q0 : f->rows[b] ? f->todo[b] - q0 : 0;
        }
        return all ? (double)made / (double)all : 1;
    }
    return 0;
}

int as_capture_attn_cells(const as_capture *cc, int hook, int head, int filled, int n_q, int n_k, int zoom, int vq,
                          int vk, int i, int j, bool mean, float *v)
{
    as_capture *c = (as_capture *)cc; /* the cells kept are scratch: what the capture holds does not change */
    int q0 = cell_start(i, n_q, zoom, vq), q1 = cell_start(i + 1, n_q, zoom, vq);
    int k0 = cell_start(j, n_k, zoom, vk), k1 = cell_start(j + 1, n_k, zoom, vk);
    as_cell_cache *e = zoom > 0 || (vq > 0 && vk > 0) ? cells_find(c, hook, head, filled, n_q, n_k, zoom, vq, vk) : NULL;
    if (!e || i < 0 || i >= e->nbq || j < 0 || j >= e->nbk)
        return as_capture_attn_block(c, hook, head, filled, q0, q1, k0, k1, mean, v);
    e->used = ++c->cell_clock;
    if (!e->rows[i] && zoom > CELL_BASE && zoom % CELL_BASE == 0) {
        /* past the base zoom, from the base zoom's block rows (made as needed, kept): zooming in and out
         * again over a head reads each query row once */
        int r = zoom / CELL_BASE, nb = (n_q + CELL_BASE - 1) / CELL_BASE;
        int late = c->cell_late;
        double late_made = c->cell_late_made;
        for (int b = i * r; b < (i + 1) * r && b < nb; b++) {
            float x;
            as_capture_attn_cells(c, hook, head, filled, n_q, n_k, CELL_BASE, 0, 0, b, 0, mean, &x);
        }
        c->cell_late = late, c->cell_late_made = late_made; /* the base cells left are counted as this cell, below */
        e = cells_find(c, hook, head, filled, n_q, n_k, zoom, vq, vk); /* the same slot (the newest is never the one to go) */
        if (!e)
            return as_capture_attn_block(c, hook, head, filled, q0, q1, k0, k1, mean, v);
        e->used = ++c->cell_clock;
        double made = c->cell_deadline ? base_rows_made(c, hook, head, filled, n_q, n_k, i * r, (i + 1) * r) : 1;
        if (made < 1)
            return cell_later(c, hook, filled, q0, q1, k0, k1, made); /* the base rows go on at the next read */
    }
    if (!e->rows[i]) {
        size_t bytes = (size_t)e->nbk * sizeof(as_cell_agg);
        /* past the budget: the least recently read maps go, then this one's rows */
        while (c->cell_bytes + bytes > AS_CELL_BYTES) {
            as_cell_cache *oldest = NULL;
            for (int s = 0; s < AS_CELL_CACHES; s++)
                if (&c->cells[s] != e && c->cells[s].hook >= 0 && c->cells[s].bytes &&
                    (!oldest || c->cells[s].used < oldest->used))
                    oldest = &c->cells[s];
            if (oldest) {
                cells_drop(c, oldest);
                continue;
            }
            for (int r = 0; r < e->nbq; r++) {
                free(e->rows[r]);
                e->rows[r] = NULL;
            }
            c->cell_bytes -= e->bytes;
            e->bytes = 0;
            break;
        }
        if (!(e->rows[i] = calloc(e->nbk ? (size_t)e->nbk : 1, sizeof(as_cell_agg))))
            return as_capture_attn_block(c, hook, head, filled, q0, q1, k0, k1, mean, v);
        e->bytes += bytes;
        c->cell_bytes += bytes;
        e->todo[i] = q0;
        if (e->zoom > 0 && cells_from_finer(c, e, i, e->rows[i]))
            e->todo[i] = q1;
        else
            memset(e->rows[i], 0, bytes); /* a finer map's partial sums (a NaN max) gone */
    }
    if (e->todo[i] < q1 && !cells_make_row(c, e, i, e->rows[i])) /* the sums so far kept, to go on from */
        return cell_later(c, hook, filled, q0, q1, k0, k1, q1 > q0 ? (double)(e->todo[i] - q0) / (q1 - q0) : 0);
    const as_cell_agg *g = &e->rows[i][j];
    unsigned n = g->count & ~AS_CELL_PENDING;
    if (n == 0)
        return g->count & AS_CELL_PENDING ? AS_BLOCK_PENDING : AS_BLOCK_MASKED;
    *v = mean ? (float)(g->sum / (double)n) : g->max;
    return AS_BLOCK_VALUE;
}

const as_norm_stat *as_capture_norm(const as_capture *c, int hook, int pos)
{
    return as_capture_norm_group(c, hook, pos, 0);
}

const as_norm_stat *as_capture_norm_group(const as_capture *c, int hook, int pos, int group)
{
    return c->stats[hook] ? &c->stats[hook][(size_t)pos * (size_t)c->prog->hooks[hook].width + (size_t)group] : NULL;
}

int as_capture_shape(const as_capture *c, int hook, int n_pos, size_t shape[3])
{
    const as_hook *h = &c->prog->hooks[hook];
    if (h->is_attn) {
        const as_attn *a = &c->prog->attn[h->attn];
        shape[0] = (size_t)h->width;
        shape[1] = (size_t)n_pos;
        shape[2] = triangle(a) ? (size_t)n_pos : (size_t)c->filled[a->k];
        return 3;
    }
    shape[0] = (size_t)n_pos;
    shape[1] = (size_t)h->dims[0];
    shape[2] = (size_t)h->dims[1];
    return 1 + h->n_dims;
}

size_t as_capture_count(const as_capture *c, int hook, int n_pos)
{
    size_t shape[3], n = 1;
    int nd = as_capture_shape(c, hook, n_pos, shape);
    for (int i = 0; i < nd; i++)
        n *= shape[i];
    return n;
}

void as_capture_copy(const as_capture *c, int hook, int n_pos, float *out)
{
    const as_hook *h = &c->prog->hooks[hook];
    if (!h->is_attn) {
        memcpy(out, c->store[hook], as_capture_count(c, hook, n_pos) * sizeof *out);
        return;
    }
    size_t shape[3];
    as_capture_shape(c, hook, n_pos, shape);
    for (int head = 0; head < h->width; head++)
        for (int q = 0; q < n_pos; q++)
            for (int k = 0; k < (int)shape[2]; k++)
                *out++ = as_capture_attn(c, hook, head, q, k);
}
