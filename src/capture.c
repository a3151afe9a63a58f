#include "attnscope/capture.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

/* Positions a hook's stream holds. */
static size_t hook_ctx(const as_program *p, const as_hook *h)
{
    return (size_t)p->streams[h->stream].n_ctx;
}

/* A site's keys come from its key/value stream. */
static size_t key_ctx(const as_program *p, const as_attn *a)
{
    return (size_t)p->streams[a->kv_stream].n_ctx;
}

/* Causal (and windowed) rows are stored as a triangle: row q holds keys
 * 0..q. Unmasked rows hold every key of the key stream. */
static bool triangle(const as_attn *a)
{
    return a->mask != AS_MASK_NONE;
}

/* Floats of one head's rows over a whole context. */
static size_t head_floats(const as_program *p, const as_hook *h)
{
    const as_attn *a = &p->attn[h->attn];
    size_t n = hook_ctx(p, h);
    return triangle(a) ? n * (n + 1) / 2 : n * key_ctx(p, a);
}

size_t as_capture_hook_bytes(const as_program *p, int hook)
{
    const as_hook *h = &p->hooks[hook];
    if (h->is_attn)
        return (size_t)h->width * head_floats(p, h) * sizeof(float);
    return (size_t)h->width * hook_ctx(p, h) * sizeof(float);
}

size_t as_capture_attn_offset(const as_capture *c, int hook, int head, int q)
{
    const as_program *p = c->prog;
    const as_hook *h = &p->hooks[hook];
    const as_attn *a = &p->attn[h->attn];
    size_t row = triangle(a) ? (size_t)q * ((size_t)q + 1) / 2 : (size_t)q * key_ctx(p, a);
    return (size_t)head * head_floats(p, h) + row;
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

const float *as_capture_attn_row(const as_capture *c, int hook, int head, int q, int *n_keys)
{
    if (n_keys)
        *n_keys = as_capture_attn_keys(c, hook, q);
    return c->store[hook] + as_capture_attn_offset(c, hook, head, q);
}

static const char *const class_name[] = {
    "essential", "attention patterns", "attention scores", "logits",
    "q/k/v/z", "MLP activations", "residual-stream copies",
};

/* Keeps hooks class by class, lowest class first, while they fit; the
 * classes that did not fit are dropped whole so what remains is coherent. */
static int allocate(as_capture *c, as_error *err)
{
    const as_program *p = c->prog;
    size_t used = 0, droppable = 0; /* the KV cache and norm scales are not the budget's to drop */
    int dropped_from = -1;
    for (int klass = AS_CLASS_ESSENTIAL; klass <= AS_CLASS_RESID; klass++) {
        size_t need = 0;
        for (int i = 0; i < p->n_hooks; i++)
            if ((int)p->hooks[i].klass == klass)
                need += as_capture_hook_bytes(p, i);
        bool keep = klass == AS_CLASS_ESSENTIAL || (dropped_from < 0 && droppable + need <= c->budget);
        if (!keep) {
            if (dropped_from < 0)
                dropped_from = klass;
            continue;
        }
        for (int i = 0; i < p->n_hooks; i++) {
            if ((int)p->hooks[i].klass != klass)
                continue;
            c->store[i] = calloc(1, as_capture_hook_bytes(p, i));
            if (!c->store[i])
                return as_error_set(err, "out of memory capturing %s (%zu bytes)", p->hooks[i].name,
                                    as_capture_hook_bytes(p, i));
        }
        used += need;
        droppable += klass == AS_CLASS_ESSENTIAL ? 0 : need;
    }
    c->used = used;
    if (dropped_from >= 0) {
        size_t off = 0;
        off += (size_t)snprintf(c->dropped, sizeof c->dropped, "capture budget %.1f MB: not keeping",
                                (double)c->budget / (1 << 20));
        for (int klass = AS_CLASS_RESID; klass >= dropped_from && off < sizeof c->dropped; klass--)
            off += (size_t)snprintf(c->dropped + off, sizeof c->dropped - off, "%s %s",
                                    klass == AS_CLASS_RESID ? "" : ",", class_name[klass]);
        for (int i = 0; i < p->n_hooks; i++)
            c->n_dropped += c->store[i] == NULL;
    }
    return AS_OK;
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
    c->store = calloc((size_t)p->n_hooks, sizeof *c->store);
    c->stats = calloc((size_t)p->n_hooks, sizeof *c->stats);
    c->filled = calloc((size_t)p->n_hooks, sizeof *c->filled);
    c->committed = calloc((size_t)p->n_hooks, sizeof *c->committed);
    if (!c->store || !c->stats || !c->filled || !c->committed) {
        as_capture_free(c);
        return as_error_set(err, "out of memory");
    }
    for (int o = 0; o < p->n_ops; o++) {
        if (p->ops[o].kind != AS_OP_NORM_SCALE)
            continue;
        int i = p->ops[o].out; /* one statistic per group (head) per position */
        c->stats[i] = calloc(hook_ctx(p, &p->hooks[i]) * (size_t)p->hooks[i].width, sizeof **c->stats);
        if (!c->stats[i]) {
            as_capture_free(c);
            return as_error_set(err, "out of memory");
        }
    }
    if (allocate(c, err)) {
        as_capture_free(c);
        return AS_ERR;
    }
    *out = c;
    return AS_OK;
}

void as_capture_free(as_capture *c)
{
    if (!c)
        return;
    for (int i = 0; c->store && i < c->prog->n_hooks; i++) {
        free(c->store[i]);
        if (c->stats)
            free(c->stats[i]);
    }
    free(c->store);
    free(c->stats);
    free(c->filled);
    free(c->committed);
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

void as_capture_prepare(as_capture *c, const int *ends)
{
    const as_program *p = c->prog;
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
            want = (double)end + (double)budget / (h->is_attn ? (double)key_ctx(p, &p->attn[h->attn]) : 1.0);
        if (want < end + 8.0)
            want = end + 8.0;
        int n_ctx = (int)hook_ctx(p, h);
        int to = want >= (double)n_ctx ? n_ctx : (int)want;
        int from = c->committed[i];
        if (h->is_attn)
            for (int head = 0; head < h->width; head++)
                populate(c->store[i], as_capture_attn_offset(c, i, head, from), as_capture_attn_offset(c, i, head, to));
        else
            populate(c->store[i], (size_t)from * (size_t)h->width, (size_t)to * (size_t)h->width);
        c->committed[i] = to;
    }
}

bool as_capture_has(const as_capture *c, int hook)
{
    return hook >= 0 && hook < c->prog->n_hooks && c->store[hook] != NULL;
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
    return c->store[hook][as_capture_attn_offset(c, hook, head, q) + (size_t)k];
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
