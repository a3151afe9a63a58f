/* gguf writer: builds a GGUF file (version 2 or 3) from metadata and
 * tensors given in memory, laid out as llama.cpp expects (keys in the order
 * added, each tensor's offset the padded end of the one before), and
 * writes it through as_write_atomic (file.h), or to a buffer. Used by
 * tests, the fuzz corpus and converters. A setter that goes wrong poisons
 * the writer; write() then reports the first cause. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "attnscope/gguf.h"
#include "attnscope/file.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gguf_internal.h"

typedef struct wkv {
    char *key;
    as_gguf_type type;
    uint8_t *val; /* the value as it is written after the type */
    size_t len;
} wkv;

typedef struct wtensor {
    char *name;
    as_ggml_type type;
    uint32_t n_dims;
    uint64_t ne[4];
    uint8_t *data;
    uint64_t n_bytes;
} wtensor;

struct as_gguf_writer {
    uint32_t version;
    wkv *kvs;
    size_t n_kv;
    wtensor *ts;
    size_t n_t;
    bool failed; /* a setter went wrong; err says how; write() reports it */
    as_error err;
};

as_gguf_writer *as_gguf_writer_new(uint32_t version)
{
    as_gguf_writer *w = calloc(1, sizeof *w);
    if (!w)
        return NULL;
    w->version = version;
    if (version != 2 && version != 3) {
        w->failed = true;
        as_error_set(&w->err, "cannot write GGUF version %" PRIu32 " (only 2 and 3)", version);
    }
    return w;
}

void as_gguf_writer_free(as_gguf_writer *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n_kv; i++)
        free(w->kvs[i].key), free(w->kvs[i].val);
    for (size_t i = 0; i < w->n_t; i++)
        free(w->ts[i].name), free(w->ts[i].data);
    free(w->kvs);
    free(w->ts);
    free(w);
}

static void writer_fail(as_gguf_writer *w, const char *key, const char *what)
{
    if (w->failed)
        return; /* keep the first cause */
    w->failed = true;
    as_error_set(&w->err, "metadata key '%s': %s", key ? key : "(null)", what);
}

/* Sets key to (type, val); takes ownership of val (NULL means allocation failed). */
static void put_kv(as_gguf_writer *w, const char *key, as_gguf_type type, uint8_t *val, size_t len)
{
    if (!w || !key || !val) {
        if (w)
            writer_fail(w, key, key ? "out of memory" : "key is NULL");
        free(val);
        return;
    }
    for (size_t i = 0; i < w->n_kv; i++)
        if (strcmp(w->kvs[i].key, key) == 0) {
            free(w->kvs[i].val);
            w->kvs[i] = (wkv){w->kvs[i].key, type, val, len};
            return;
        }
    char *k = strdup(key);
    wkv *kvs = w->n_kv ? grow(w->kvs, w->n_kv, sizeof *kvs) : calloc(1, sizeof *kvs);
    if (kvs)
        w->kvs = kvs;
    if (!k || !kvs) {
        free(k), free(val);
        writer_fail(w, key, "out of memory");
        return;
    }
    w->kvs[w->n_kv++] = (wkv){k, type, val, len};
}

static void put_scalar(as_gguf_writer *w, const char *key, as_gguf_type type, uint64_t bits)
{
    size_t n = gguf_type_size[type];
    uint8_t *v = malloc(n);
    if (v)
        for (size_t i = 0; i < n; i++)
            v[i] = (uint8_t)(bits >> (8 * i));
    put_kv(w, key, type, v, n);
}

void as_gguf_writer_set_u32(as_gguf_writer *w, const char *key, uint32_t v) { put_scalar(w, key, AS_GGUF_UINT32, v); }
void as_gguf_writer_set_i32(as_gguf_writer *w, const char *key, int32_t v) { put_scalar(w, key, AS_GGUF_INT32, (uint32_t)v); }
void as_gguf_writer_set_u64(as_gguf_writer *w, const char *key, uint64_t v) { put_scalar(w, key, AS_GGUF_UINT64, v); }
void as_gguf_writer_set_f32(as_gguf_writer *w, const char *key, float v) { put_scalar(w, key, AS_GGUF_FLOAT32, f32_bits(v)); }
void as_gguf_writer_set_bool(as_gguf_writer *w, const char *key, bool v) { put_scalar(w, key, AS_GGUF_BOOL, v); }

void as_gguf_writer_set_scalar(as_gguf_writer *w, const char *key, as_gguf_type type, const void *data)
{
    if (w && ((unsigned)type >= AS_GGUF_TYPE_COUNT || gguf_type_size[type] == 0 || !data)) {
        writer_fail(w, key, "as_gguf_writer_set_scalar needs a scalar type and a value");
        return;
    }
    if (w)
        put_scalar(w, key, type, raw_u64(type, data));
}

void as_gguf_writer_set_str(as_gguf_writer *w, const char *key, const char *v)
{
    size_t n = v ? strlen(v) : 0;
    uint8_t *buf = n <= SIZE_MAX - 8 ? malloc(8 + n) : NULL;
    if (buf) {
        put_le64(buf, n);
        memcpy(buf + 8, v ? v : "", n);
    }
    put_kv(w, key, AS_GGUF_STRING, buf, 8 + n);
}

void as_gguf_writer_set_arr(as_gguf_writer *w, const char *key, as_gguf_type elem, const void *data, uint64_t n)
{
    if (!w)
        return;
    if ((unsigned)elem >= AS_GGUF_TYPE_COUNT || gguf_type_size[elem] == 0 || (n && !data)) {
        writer_fail(w, key, "as_gguf_writer_set_arr needs a scalar element type and data");
        return;
    }
    size_t es = gguf_type_size[elem];
    uint8_t *buf = n <= (SIZE_MAX - 12) / es ? malloc(12 + (size_t)n * es) : NULL;
    if (buf) {
        put_le32(buf, elem);
        put_le64(buf + 4, n);
        if (n)
            memcpy(buf + 12, data, (size_t)n * es);
    }
    put_kv(w, key, AS_GGUF_ARRAY, buf, buf ? 12 + (size_t)n * es : 0);
}

void as_gguf_writer_copy_kv(as_gguf_writer *w, const as_gguf_kv *kv)
{
    uint8_t raw[8];
    switch (kv->type) {
    case AS_GGUF_STRING:
        as_gguf_writer_set_str(w, kv->key, kv->str);
        return;
    case AS_GGUF_ARRAY:
        if (kv->arr_type == AS_GGUF_STRING)
            as_gguf_writer_set_arr_str(w, kv->key, (const char *const *)kv->strs, kv->arr_len);
        else
            as_gguf_writer_set_arr(w, kv->key, kv->arr_type, kv->arr_data, kv->arr_len);
        return;
    case AS_GGUF_FLOAT32: {
        float f = (float)kv->v.f64;
        uint32_t bits;
        memcpy(&bits, &f, sizeof bits);
        put_le32(raw, bits);
        break;
    }
    case AS_GGUF_FLOAT64: {
        uint64_t bits;
        memcpy(&bits, &kv->v.f64, sizeof bits);
        put_le64(raw, bits);
        break;
    }
    case AS_GGUF_BOOL:
        raw[0] = kv->v.b;
        break;
    default: /* integers: the low bytes, little-endian, of either member */
        put_le64(raw, kv->v.u64);
        break;
    }
    as_gguf_writer_set_scalar(w, kv->key, kv->type, raw);
}

void as_gguf_writer_set_arr_str(as_gguf_writer *w, const char *key, const char *const *strs, uint64_t n)
{
    if (w && !strs && n) {
        writer_fail(w, key, "as_gguf_writer_set_arr_str given no strings");
        return;
    }
    size_t total = 12;
    for (uint64_t i = 0; i < n && total != SIZE_MAX; i++) {
        size_t l = strs[i] ? strlen(strs[i]) : 0;
        total = l <= SIZE_MAX - 8 - total ? total + 8 + l : SIZE_MAX;
    }
    uint8_t *buf = total != SIZE_MAX ? malloc(total) : NULL;
    if (buf) {
        size_t pos = 12;
        put_le32(buf, AS_GGUF_STRING);
        put_le64(buf + 4, n);
        for (uint64_t i = 0; i < n; i++) {
            size_t l = strs[i] ? strlen(strs[i]) : 0;
            put_le64(buf + pos, l);
            memcpy(buf + pos + 8, strs[i] ? strs[i] : "", l);
            pos += 8 + l;
        }
    }
    put_kv(w, key, AS_GGUF_ARRAY, buf, total);
}

/* llama.cpp refuses names of GGML_MAX_NAME (64) bytes or more */
static int check_new_tensor(const as_gguf_writer *w, const char *name, as_ggml_type type, uint32_t n_dims,
                            const uint64_t *ne, const void *data, as_error *err)
{
    if (!name || strlen(name) >= 64)
        return as_error_set(err, "tensor name '%.80s' must be 1 to 63 bytes (llama.cpp's limit)", name ? name : "");
    for (size_t i = 0; i < w->n_t; i++)
        if (strcmp(w->ts[i].name, name) == 0)
            return as_error_set(err, "tensor '%s' added twice", name);
    if (n_dims < 1 || n_dims > 4 || !ne)
        return as_error_set(err, "tensor '%s': n_dims is %" PRIu32 ", expected 1 to 4", name, n_dims);
    if (!as_ggml_traits_of(type))
        return as_error_set(err, "tensor '%s': unknown ggml type %d", name, (int)type);
    if (ne[0] % as_ggml_traits_of(type)->block_elems != 0)
        return as_error_set(err, "tensor '%s': ne[0] = %" PRIu64 " is not a multiple of the %s block size",
                            name, ne[0], as_ggml_type_name(type));
    if (!data)
        return as_error_set(err, "tensor '%s': no data", name);
    return AS_OK;
}

int as_gguf_writer_add_tensor(as_gguf_writer *w, const char *name, as_ggml_type type, uint32_t n_dims,
                              const uint64_t *ne, const void *data, as_error *err)
{
    if (!w)
        return as_error_set(err, "no writer (out of memory?)");
    if (check_new_tensor(w, name, type, n_dims, ne, data, err))
        return AS_ERR;
    wtensor t = {.type = type, .n_dims = n_dims, .ne = {1, 1, 1, 1}};
    uint64_t n = 1;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] == 0 || ne[d] > (uint64_t)INT64_MAX || !mul_u64(n, ne[d], &n) || n > (uint64_t)INT64_MAX)
            return as_error_set(err, "tensor '%s': ne[%" PRIu32 "] = %" PRIu64 " is zero or too large", name, d,
                                ne[d]);
        t.ne[d] = ne[d];
    }
    t.n_bytes = as_ggml_nbytes(type, n);
    if (t.n_bytes == 0 || t.n_bytes > SIZE_MAX)
        return as_error_set(err, "tensor '%s': %" PRIu64 " elements are too many", name, n);
    t.name = strdup(name);
    t.data = malloc((size_t)t.n_bytes);
    wtensor *ts = w->n_t ? grow(w->ts, w->n_t, sizeof *ts) : calloc(1, sizeof *ts);
    if (ts)
        w->ts = ts;
    if (!t.name || !t.data || !ts) {
        free(t.name), free(t.data);
        return as_error_set(err, "tensor '%s': out of memory for %" PRIu64 " bytes", name, t.n_bytes);
    }
    memcpy(t.data, data, (size_t)t.n_bytes);
    w->ts[w->n_t++] = t;
    return AS_OK;
}

/* Where serialized bytes go: a FILE, a buffer, or nowhere (to measure). */
typedef struct sink {
    FILE *f;
    uint8_t *buf;
    uint64_t pos;
} sink;

static void emit(sink *s, const void *p, size_t n)
{
    if (s->buf && n)
        memcpy(s->buf + s->pos, p, n);
    else if (s->f && n)
        fwrite(p, 1, n, s->f);
    s->pos += n;
}

static void emit_u32(sink *s, uint32_t v)
{
    uint8_t b[4];
    put_le32(b, v);
    emit(s, b, 4);
}

static void emit_u64(sink *s, uint64_t v)
{
    uint8_t b[8];
    put_le64(b, v);
    emit(s, b, 8);
}

static void emit_str(sink *s, const char *str)
{
    emit_u64(s, strlen(str));
    emit(s, str, strlen(str));
}

static void emit_pad(sink *s, uint64_t align)
{
    static const uint8_t zeros[64];
    while (s->pos % align)
        emit(s, zeros, (size_t)(align - s->pos % align < 64 ? align - s->pos % align : 64));
}

static uint64_t pad_to(uint64_t n, uint64_t align) { return (n + align - 1) / align * align; }

static int writer_alignment(const as_gguf_writer *w, uint64_t *align, as_error *err)
{
    *align = AS_GGUF_DEFAULT_ALIGNMENT;
    for (size_t i = 0; i < w->n_kv; i++) {
        if (strcmp(w->kvs[i].key, "general.alignment") != 0)
            continue;
        if (w->kvs[i].type != AS_GGUF_UINT32 || !is_pow2(le32(w->kvs[i].val)))
            return as_error_set(err, "metadata key 'general.alignment' must be a nonzero power-of-two uint32");
        *align = le32(w->kvs[i].val);
    }
    return AS_OK;
}

static void serialize(const as_gguf_writer *w, uint64_t align, sink *s)
{
    emit_u32(s, AS_GGUF_MAGIC);
    emit_u32(s, w->version);
    emit_u64(s, w->n_t);
    emit_u64(s, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        emit_str(s, w->kvs[i].key);
        emit_u32(s, w->kvs[i].type);
        emit(s, w->kvs[i].val, w->kvs[i].len);
    }
    /* llama.cpp insists each offset is the padded end of the one before */
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->ts[i];
        emit_str(s, t->name);
        emit_u32(s, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++)
            emit_u64(s, t->ne[d]);
        emit_u32(s, (uint32_t)t->type);
        emit_u64(s, off);
        off += pad_to(t->n_bytes, align);
    }
    emit_pad(s, align);
    for (size_t i = 0; i < w->n_t; i++) {
        emit(s, w->ts[i].data, (size_t)w->ts[i].n_bytes);
        emit_pad(s, align);
    }
}

static int writer_ready(const as_gguf_writer *w, uint64_t *align, as_error *err)
{
    if (!w)
        return as_error_set(err, "no writer (out of memory?)");
    if (w->failed)
        return as_error_set(err, "%s", w->err.msg);
    return writer_alignment(w, align, err);
}

int as_gguf_writer_to_memory(as_gguf_writer *w, uint8_t **buf, size_t *size, as_error *err)
{
    uint64_t align;
    sink count = {0};
    *buf = NULL;
    *size = 0;
    if (writer_ready(w, &align, err))
        return AS_ERR;
    serialize(w, align, &count);
    if (count.pos > SIZE_MAX)
        return as_error_set(err, "GGUF image of %" PRIu64 " bytes does not fit in memory", count.pos);
    sink mem = {.buf = malloc((size_t)count.pos ? (size_t)count.pos : 1)};
    if (!mem.buf)
        return as_error_set(err, "out of memory for a GGUF image of %" PRIu64 " bytes", count.pos);
    serialize(w, align, &mem);
    *buf = mem.buf;
    *size = (size_t)mem.pos;
    return AS_OK;
}

struct write_job {
    const as_gguf_writer *w;
    uint64_t align;
};

/* The whole file into the temporary file as_write_atomic opened. */
static int write_stream(void *ctx, void *stream, as_error *err)
{
    const struct write_job *j = ctx;
    sink s = {.f = stream};
    serialize(j->w, j->align, &s);
    if (ferror(s.f))
        return as_error_set(err, "cannot write: %s", strerror(errno ? errno : EIO));
    return AS_OK;
}

int as_gguf_writer_write(as_gguf_writer *w, const char *path, as_error *err)
{
    uint64_t align;
    if (writer_ready(w, &align, err))
        return as_error_prefix(err, "%s", path);
    struct write_job j = {w, align};
    return as_write_atomic(path, write_stream, &j, err);
}
