/* gguf reader: opens a GGUF file (over an mmap or a caller's buffer),
 * validates its header, metadata and tensor table, answers typed lookups,
 * and reads tensor rows as float32 through quant.c's decoders. The writer
 * is gguf_write.c, the --info model card gguf_info.c.
 *
 * The reader trusts nothing in the file: every field is read through a
 * cursor that refuses to step past the end, every count is compared with the
 * bytes left before anything is allocated for it, and every product of
 * dimensions is checked for overflow. Messages say "FILE: offset N: what". */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif

#include "attnscope/gguf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gguf_internal.h"

/* ------------------------------------------------------------------ */
/* metadata value type names */

static const char *const gguf_type_names[AS_GGUF_TYPE_COUNT] = {
    "uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
    "bool", "string", "array", "uint64", "int64", "float64",
};

const char *as_gguf_type_name(as_gguf_type t)
{
    return (unsigned)t < AS_GGUF_TYPE_COUNT ? gguf_type_names[t] : "unknown";
}

/* ------------------------------------------------------------------ */
/* reader cursor */

typedef struct reader {
    const uint8_t *p;
    size_t size, pos;
    const char *name; /* file name for messages */
    char ctx[160];    /* the record being read, e.g. "tensor 'x'" */
    as_error *err;
} reader;

static size_t left(const reader *r) { return r->size - r->pos; }

static int fail_at(reader *r, uint64_t off, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail_at(reader *r, uint64_t off, const char *fmt, ...)
{
    char what[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return as_error_set(r->err, "%s: offset %" PRIu64 ": %s%s%s", r->name, off, r->ctx,
                        r->ctx[0] ? ": " : "", what);
}

/* Copies a name from the file into buf for messages: control bytes would
 * garble the terminal, and a hostile name could be megabytes long. */
static void safe_name(char *buf, size_t cap, const char *s)
{
    size_t len = strlen(s), keep = len < cap ? len : cap - 4, n;
    for (n = 0; n < keep; n++)
        buf[n] = ((unsigned char)s[n] < 0x20 || s[n] == 0x7f) ? '?' : s[n];
    if (keep < len)
        memcpy(buf + n, "...", 3), n += 3;
    buf[n] = '\0';
}

static void set_ctx(reader *r, const char *what, uint64_t index, const char *name)
{
    char nm[72];
    if (name) {
        safe_name(nm, sizeof nm, name);
        snprintf(r->ctx, sizeof r->ctx, "%s '%s'", what, nm);
    } else {
        snprintf(r->ctx, sizeof r->ctx, "%s %" PRIu64, what, index);
    }
}

/* Hands out the next n bytes, or fails naming the field. */
static int take(reader *r, size_t n, const char *field, const uint8_t **out)
{
    if (n > left(r))
        return fail_at(r, r->pos, "%s needs %zu bytes, only %zu left (truncated file?)", field, n,
                       left(r));
    *out = r->p + r->pos;
    r->pos += n;
    return AS_OK;
}

static int rd_u32(reader *r, const char *field, uint32_t *out)
{
    const uint8_t *p = NULL;
    if (take(r, 4, field, &p))
        return AS_ERR;
    *out = le32(p);
    return AS_OK;
}

static int rd_u64(reader *r, const char *field, uint64_t *out)
{
    const uint8_t *p = NULL;
    if (take(r, 8, field, &p))
        return AS_ERR;
    *out = le64(p);
    return AS_OK;
}

/* GGUF string: uint64 length + bytes; copied and NUL-terminated */
static int rd_str(reader *r, const char *field, char **out, uint64_t *len_out)
{
    uint64_t off = r->pos, len;
    if (left(r) < 8)
        return fail_at(r, off, "%s length needs 8 bytes, only %zu left (truncated file?)", field, left(r));
    len = le64(r->p + r->pos);
    r->pos += 8;
    if (len > left(r))
        return fail_at(r, off, "%s length %" PRIu64 " exceeds the %zu bytes left", field, len, left(r));
    char *s = malloc((size_t)len + 1);
    if (!s)
        return fail_at(r, off, "out of memory for a %s of %" PRIu64 " bytes", field, len);
    memcpy(s, r->p + r->pos, (size_t)len);
    s[len] = '\0';
    r->pos += (size_t)len;
    *out = s;
    if (len_out)
        *len_out = len;
    return AS_OK;
}

/* Names are looked up as C strings, so an embedded NUL would make two
 * different names compare equal (or hide a duplicate). */
static int rd_name(reader *r, const char *field, char **out)
{
    uint64_t off = r->pos, len;
    if (rd_str(r, field, out, &len))
        return AS_ERR;
    if (strlen(*out) != len)
        return fail_at(r, off, "%s contains a NUL byte", field);
    return AS_OK;
}

/* ------------------------------------------------------------------ */
/* duplicate detection: an open-addressing set of borrowed names, so a file
 * with a million records is not checked in quadratic time */

typedef struct name_set {
    const char **slot;
    size_t cap, count;
} name_set;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool set_init(name_set *s, size_t cap)
{
    s->cap = cap;
    s->count = 0;
    s->slot = calloc(s->cap, sizeof *s->slot);
    return s->slot != NULL;
}

/* 1 when added, 0 when the name is already present, -1 out of memory */
static int set_add(name_set *s, const char *name)
{
    if (2 * (s->count + 1) > s->cap) { /* sized by what is present, not by a count in the file */
        name_set big;
        if (!set_init(&big, 2 * s->cap))
            return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slot[i])
                set_add(&big, s->slot[i]);
        free(s->slot);
        *s = big;
    }
    size_t i = (size_t)hash_str(name) & (s->cap - 1);
    for (; s->slot[i]; i = (i + 1) & (s->cap - 1))
        if (strcmp(s->slot[i], name) == 0)
            return 0;
    s->slot[i] = name;
    s->count++;
    return 1;
}

static int add_name(reader *r, name_set *s, const char *name, uint64_t off, const char *what)
{
    int added = set_add(s, name);
    if (added < 0)
        return fail_at(r, off, "out of memory");
    return added ? AS_OK : fail_at(r, off, "duplicate %s", what);
}

/* ------------------------------------------------------------------ */
/* metadata */

static void decode_scalar(as_gguf_kv *kv, const uint8_t *p)
{
    if (type_is_unsigned(kv->type))
        kv->v.u64 = raw_u64(kv->type, p);
    else if (type_is_signed(kv->type))
        kv->v.i64 = raw_i64(kv->type, p);
    else if (kv->type == AS_GGUF_BOOL)
        kv->v.b = p[0] != 0;
    else
        kv->v.f64 = raw_f64(kv->type, p);
}

static int rd_str_array(reader *r, as_gguf_kv *kv, uint64_t count_off)
{
    /* each string costs at least its 8-byte length, so this bounds the allocation */
    if (kv->arr_len > left(r) / 8)
        return fail_at(r, count_off,
                       "array of %" PRIu64 " strings cannot fit in the %zu bytes left "
                       "(each needs at least 8)", kv->arr_len, left(r));
    size_t n = (size_t)kv->arr_len ? (size_t)kv->arr_len : 1;
    kv->strs = calloc(n, sizeof *kv->strs);
    kv->str_lens = calloc(n, sizeof *kv->str_lens);
    if (!kv->strs || !kv->str_lens)
        return fail_at(r, count_off, "out of memory for %" PRIu64 " strings", kv->arr_len);
    for (uint64_t i = 0; i < kv->arr_len; i++) {
        char field[48];
        snprintf(field, sizeof field, "element %" PRIu64, i);
        if (rd_str(r, field, &kv->strs[i], &kv->str_lens[i]))
            return AS_ERR;
    }
    return AS_OK;
}

static int rd_array(reader *r, as_gguf_kv *kv)
{
    uint64_t type_off = r->pos, count_off;
    uint32_t et;
    if (rd_u32(r, "array element type", &et))
        return AS_ERR;
    if (et >= AS_GGUF_TYPE_COUNT)
        return fail_at(r, type_off, "array element type %" PRIu32 " is not a GGUF type (0 to 12)", et);
    if (et == AS_GGUF_ARRAY)
        return fail_at(r, type_off, "arrays of arrays are not supported");
    kv->arr_type = (as_gguf_type)et;
    count_off = r->pos;
    if (rd_u64(r, "array length", &kv->arr_len))
        return AS_ERR;
    if (et == AS_GGUF_STRING)
        return rd_str_array(r, kv, count_off);
    size_t es = gguf_type_size[et];
    if (kv->arr_len > left(r) / es)
        return fail_at(r, count_off,
                       "array of %" PRIu64 " %s elements (%zu bytes each) exceeds the %zu bytes left",
                       kv->arr_len, gguf_type_names[et], es, left(r));
    kv->arr_data = r->p + r->pos;
    r->pos += (size_t)kv->arr_len * es;
    return AS_OK;
}

static int rd_value(reader *r, as_gguf_kv *kv)
{
    const uint8_t *p = NULL;
    if (kv->type == AS_GGUF_STRING)
        return rd_str(r, "string", &kv->str, &kv->str_len);
    if (kv->type == AS_GGUF_ARRAY)
        return rd_array(r, kv);
    if (take(r, gguf_type_size[kv->type], gguf_type_names[kv->type], &p))
        return AS_ERR;
    decode_scalar(kv, p);
    return AS_OK;
}

/* The array with room for element n (grow's doubling), or NULL having
 * failed the read; the caller stores the pointer. */
static void *reserve(reader *r, void *arr, uint64_t n, size_t elem)
{
    void *p = n == 0 ? calloc(1, elem) : grow(arr, n, elem);
    if (!p)
        fail_at(r, r->pos, "out of memory");
    return p;
}

static int rd_kv(reader *r, as_gguf_kv *kv, uint64_t i, name_set *keys)
{
    uint32_t type;
    uint64_t key_off = r->pos, type_off;
    kv->offset = r->pos;
    set_ctx(r, "metadata key", i, NULL);
    if (rd_name(r, "key", &kv->key))
        return AS_ERR;
    set_ctx(r, "metadata key", i, kv->key);
    if (add_name(r, keys, kv->key, key_off, "key"))
        return AS_ERR;
    type_off = r->pos;
    if (rd_u32(r, "value type", &type))
        return AS_ERR;
    if (type >= AS_GGUF_TYPE_COUNT)
        return fail_at(r, type_off, "value type %" PRIu32 " is not a GGUF type (0 to 12)", type);
    kv->type = (as_gguf_type)type;
    return rd_value(r, kv);
}

static int rd_kvs(reader *r, as_gguf *g, uint64_t n)
{
    name_set keys;
    if (!set_init(&keys, 16))
        return fail_at(r, r->pos, "out of memory");
    int rc = AS_OK;
    for (uint64_t i = 0; i < n && rc == AS_OK; i++) {
        as_gguf_kv *kvs = reserve(r, g->kvs, g->n_kv, sizeof *g->kvs);
        rc = kvs ? AS_OK : AS_ERR;
        if (kvs) {
            g->kvs = kvs;
            rc = rd_kv(r, &g->kvs[g->n_kv++], i, &keys);
        }
    }
    free(keys.slot);
    r->ctx[0] = '\0';
    return rc;
}

/* ------------------------------------------------------------------ */
/* tensor infos */

/* Shape checks that need no data section: element count, block fit, size. */
static int check_shape(reader *r, as_gguf_tensor *t)
{
    const as_ggml_traits *tr = as_ggml_traits_of(t->type);
    uint64_t n = 1;
    for (uint32_t d = 0; d < t->n_dims; d++)
        if (!mul_u64(n, t->ne[d], &n) || n > (uint64_t)INT64_MAX)
            return fail_at(r, t->info_offset, "shape [%" PRIu64 ", %" PRIu64 ", %" PRIu64 ", %" PRIu64
                           "] has more than 2^63 elements", t->ne[0], t->ne[1], t->ne[2], t->ne[3]);
    if (t->ne[0] % tr->block_elems != 0)
        return fail_at(r, t->info_offset, "ne[0] = %" PRIu64 " is not a multiple of the %s block size %"
                       PRIu32, t->ne[0], tr->name, tr->block_elems);
    t->n_elements = n;
    t->n_bytes = as_ggml_nbytes(t->type, n);
    if (t->n_bytes == 0)
        return fail_at(r, t->info_offset, "size of %" PRIu64 " %s elements overflows", n, tr->name);
    return AS_OK;
}

static int rd_dims(reader *r, as_gguf_tensor *t)
{
    uint64_t off = r->pos;
    if (rd_u32(r, "n_dims", &t->n_dims))
        return AS_ERR;
    if (t->n_dims < 1 || t->n_dims > 4)
        return fail_at(r, off, "n_dims is %" PRIu32 ", expected 1 to 4", t->n_dims);
    for (uint32_t d = 0; d < 4; d++)
        t->ne[d] = 1;
    for (uint32_t d = 0; d < t->n_dims; d++) {
        char field[16];
        snprintf(field, sizeof field, "ne[%" PRIu32 "]", d);
        off = r->pos;
        if (rd_u64(r, field, &t->ne[d]))
            return AS_ERR;
        /* ggml keeps dimensions in int64; an empty tensor has no rows to show */
        if (t->ne[d] == 0 || t->ne[d] > (uint64_t)INT64_MAX)
            return fail_at(r, off, "%s is %" PRIu64 ", expected 1 to 2^63-1", field, t->ne[d]);
    }
    return AS_OK;
}

static int rd_tensor_info(reader *r, as_gguf_tensor *t, uint64_t i, name_set *names)
{
    uint64_t off;
    uint32_t type;
    t->info_offset = r->pos;
    set_ctx(r, "tensor", i, NULL);
    if (rd_name(r, "name", &t->name))
        return AS_ERR;
    set_ctx(r, "tensor", i, t->name);
    if (add_name(r, names, t->name, t->info_offset, "tensor name"))
        return AS_ERR;
    if (rd_dims(r, t))
        return AS_ERR;
    off = r->pos;
    if (rd_u32(r, "type", &type))
        return AS_ERR;
    if (!as_ggml_traits_of((as_ggml_type)type))
        return fail_at(r, off, "unknown ggml type %" PRIu32, type);
    t->type = (as_ggml_type)type;
    if (rd_u64(r, "data offset", &t->offset))
        return AS_ERR;
    return check_shape(r, t);
}

static int rd_tensor_infos(reader *r, as_gguf *g, uint64_t n)
{
    name_set names;
    if (!set_init(&names, 16))
        return fail_at(r, r->pos, "out of memory");
    int rc = AS_OK;
    for (uint64_t i = 0; i < n && rc == AS_OK; i++) {
        as_gguf_tensor *tensors = reserve(r, g->tensors, g->n_tensors, sizeof *g->tensors);
        rc = tensors ? AS_OK : AS_ERR;
        if (tensors) {
            g->tensors = tensors;
            g->tensors[g->n_tensors].path = g->path;
            rc = rd_tensor_info(r, &g->tensors[g->n_tensors++], i, &names);
        }
    }
    free(names.slot);
    return rc;
}

/* ------------------------------------------------------------------ */
/* header, alignment, data placement */

static int rd_header(reader *r, as_gguf *g, uint64_t *n_tensors, uint64_t *n_kv)
{
    uint32_t magic;
    if (rd_u32(r, "magic", &magic))
        return AS_ERR;
    if (magic != AS_GGUF_MAGIC)
        return fail_at(r, 0, "not a GGUF file (the first 4 bytes are %02x %02x %02x %02x, expected \"GGUF\")",
                       magic & 0xff, (magic >> 8) & 0xff, (magic >> 16) & 0xff, magic >> 24);
    if (rd_u32(r, "version", &g->version))
        return AS_ERR;
    if (g->version != 2 && g->version != 3)
        return fail_at(r, 4, "unsupported GGUF version %" PRIu32 " (attnscope reads versions 2 and 3)%s",
                       g->version, g->version > 0xffff && (g->version & 0xffff) == 0 ? "; the file may be big-endian" : "");
    if (rd_u64(r, "tensor count", n_tensors) || rd_u64(r, "metadata count", n_kv))
        return AS_ERR;
    /* smallest records: key(8) + type(4) + 1 byte; name(8) + n_dims(4) + ne(8) + type(4) + offset(8) */
    if (*n_kv > left(r) / 13)
        return fail_at(r, 16, "metadata count %" PRIu64 " cannot fit in the %zu bytes left "
                       "(each key/value takes at least 13)", *n_kv, left(r));
    if (*n_tensors > left(r) / 32)
        return fail_at(r, 8, "tensor count %" PRIu64 " cannot fit in the %zu bytes left "
                       "(each tensor record takes at least 32)", *n_tensors, left(r));
    return AS_OK;
}

static int read_alignment(reader *r, as_gguf *g)
{
    g->alignment = AS_GGUF_DEFAULT_ALIGNMENT;
    const as_gguf_kv *kv = as_gguf_find(g, "general.alignment");
    if (!kv)
        return AS_OK;
    set_ctx(r, "metadata key", 0, kv->key);
    if (kv->type != AS_GGUF_UINT32)
        return fail_at(r, kv->offset, "expected a uint32, found %s", as_gguf_type_name(kv->type));
    if (!is_pow2(kv->v.u64))
        return fail_at(r, kv->offset, "alignment %" PRIu64 " is not a nonzero power of two", kv->v.u64);
    g->alignment = kv->v.u64;
    r->ctx[0] = '\0';
    return AS_OK;
}

static int place_tensor(reader *r, as_gguf *g, as_gguf_tensor *t)
{
    set_ctx(r, "tensor", 0, t->name);
    if (t->offset % g->alignment != 0)
        return fail_at(r, t->info_offset, "data offset %" PRIu64 " is not a multiple of the alignment %" PRIu64,
                       t->offset, g->alignment);
    if (g->data_offset > g->size || t->offset > g->size - g->data_offset)
        return fail_at(r, t->info_offset, "data offset %" PRIu64 " points past the end of the file "
                       "(data starts at %" PRIu64 ", the file has %zu bytes)", t->offset, g->data_offset, g->size);
    r->ctx[0] = '\0';
    uint64_t start = g->data_offset + t->offset;
    if (t->n_bytes > g->size - start) {
        char nm[72];
        safe_name(nm, sizeof nm, t->name);
        return fail_at(r, start, "tensor '%s' extends past end of file (needs %" PRIu64 " bytes, %" PRIu64 " left)",
                       nm, t->n_bytes, g->size - start);
    }
    t->data = g->map + start;
    return AS_OK;
}

static int parse_into(as_gguf *g, as_error *err)
{
    reader r = {.p = g->map, .size = g->size, .name = g->path, .err = err};
    uint64_t n_tensors, n_kv;
    if (rd_header(&r, g, &n_tensors, &n_kv) || rd_kvs(&r, g, n_kv) || rd_tensor_infos(&r, g, n_tensors))
        return AS_ERR;
    r.ctx[0] = '\0';
    if (read_alignment(&r, g))
        return AS_ERR;
    /* r.pos <= size and alignment <= 2^31, so this cannot wrap */
    g->data_offset = ((uint64_t)r.pos + g->alignment - 1) / g->alignment * g->alignment;
    for (uint64_t i = 0; i < g->n_tensors; i++)
        if (place_tensor(&r, g, &g->tensors[i]))
            return AS_ERR;
    return AS_OK;
}

static as_gguf *new_gguf(const char *name, as_error *err)
{
    as_gguf *g = calloc(1, sizeof *g);
    if (g)
        g->path = strdup(name ? name : "<buffer>");
    if (!g || !g->path) {
        free(g);
        as_error_set(err, "%s: out of memory", name ? name : "<buffer>");
        return NULL;
    }
    return g;
}

int as_gguf_parse(as_gguf **out, const void *buf, size_t size, const char *name, as_error *err)
{
    *out = NULL;
    as_gguf *g = new_gguf(name, err);
    if (!g)
        return AS_ERR;
    g->map = buf;
    g->size = buf ? size : 0;
    if (parse_into(g, err)) {
        as_gguf_close(g);
        return AS_ERR;
    }
    *out = g;
    return AS_OK;
}

static int map_file(as_gguf *g, const char *path, as_error *err)
{
    struct stat st;
    int fd = as_file_open_read(path, &st, err); /* a FIFO or a device is refused, never waited on */
    if (fd < 0)
        return AS_ERR;
    if (st.st_size <= 0 || (uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        if (st.st_size == 0)
            return as_error_set(err, "%s: file is empty (a GGUF file starts with a 24-byte header)", path);
        return as_error_set(err, "%s: too large to map (%lld bytes)", path, (long long)st.st_size);
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (m == MAP_FAILED)
        return as_error_set(err, "%s: cannot memory-map %lld bytes: %s", path, (long long)st.st_size,
                            strerror(e));
    g->map = m;
    g->size = (size_t)st.st_size;
    g->mapped = true;
    return as_gguf_hold(g, &st, path, err);
}

int as_gguf_open(as_gguf **out, const char *path, as_error *err)
{
    *out = NULL;
    as_gguf *g = new_gguf(path, err);
    if (!g)
        return AS_ERR;
    if (map_file(g, path, err) || parse_into(g, err)) {
        as_gguf_close(g);
        return AS_ERR;
    }
    *out = g;
    return AS_OK;
}

static void free_kv(as_gguf_kv *kv)
{
    free(kv->key);
    free(kv->str);
    if (kv->strs)
        for (uint64_t i = 0; i < kv->arr_len; i++)
            free(kv->strs[i]);
    free(kv->strs);
    free(kv->str_lens);
}

void as_gguf_close(as_gguf *g)
{
    if (!g)
        return;
    for (uint64_t i = 0; i < g->n_kv; i++)
        free_kv(&g->kvs[i]);
    for (uint64_t i = 0; i < g->n_tensors; i++)
        free(g->tensors[i].name);
    free(g->kvs);
    free(g->tensors);
    if (g->mapped)
        munmap((void *)(g->map - g->map_lead), g->size + g->map_lead);
    if (g->release)
        g->release(g->owner);
    for (size_t i = 0; i < g->n_held; i++)
        as_file_unprotect(g->held[i]);
    free(g->held);
    free(g->path);
    free(g);
}

int as_gguf_hold(as_gguf *g, const struct stat *st, const char *path, as_error *err)
{
    as_file_id *h = realloc(g->held, (g->n_held + 1) * sizeof *h);
    if (!h)
        return as_error_set(err, "%s: out of memory", path);
    g->held = h;
    g->held[g->n_held++] = as_file_id_of(st);
    as_file_protect(as_file_id_of(st));
    return AS_OK;
}

/* ------------------------------------------------------------------ */
/* lookups and typed getters */

const as_gguf_kv *as_gguf_find(const as_gguf *g, const char *key)
{
    for (uint64_t i = 0; g && i < g->n_kv; i++)
        if (strcmp(g->kvs[i].key, key) == 0)
            return &g->kvs[i];
    return NULL;
}

const as_gguf_tensor *as_gguf_tensor_find(const as_gguf *g, const char *name)
{
    for (uint64_t i = 0; g && i < g->n_tensors; i++)
        if (strcmp(g->tensors[i].name, name) == 0)
            return &g->tensors[i];
    return NULL;
}

/* "uint32 7", "string", "array of float32": what a key holds, for messages */
static void describe_kv(const as_gguf_kv *kv, char *buf, size_t cap)
{
    if (type_is_unsigned(kv->type))
        snprintf(buf, cap, "%s %" PRIu64, gguf_type_names[kv->type], kv->v.u64);
    else if (type_is_signed(kv->type))
        snprintf(buf, cap, "%s %" PRId64, gguf_type_names[kv->type], kv->v.i64);
    else if (kv->type == AS_GGUF_ARRAY)
        snprintf(buf, cap, "an array of %s", as_gguf_type_name(kv->arr_type));
    else
        snprintf(buf, cap, "%s", as_gguf_type_name(kv->type));
}

static int wrong_type(const as_gguf *g, const as_gguf_kv *kv, const char *key, const char *expected,
                      const char *why, as_error *err)
{
    char found[96];
    if (kv)
        describe_kv(kv, found, sizeof found);
    else
        snprintf(found, sizeof found, "nothing (the key is missing)");
    return as_error_set(err, "%s: key '%s': expected %s, found %s%s", g->path, key, expected, found, why);
}

int as_gguf_get_u64(const as_gguf *g, const char *key, uint64_t *out, as_error *err)
{
    const as_gguf_kv *kv = as_gguf_find(g, key);
    if (kv && type_is_unsigned(kv->type))
        *out = kv->v.u64;
    else if (kv && type_is_signed(kv->type) && kv->v.i64 >= 0)
        *out = (uint64_t)kv->v.i64;
    else
        return wrong_type(g, kv, key, "an unsigned integer", "", err);
    return AS_OK;
}

int as_gguf_get_u32(const as_gguf *g, const char *key, uint32_t *out, as_error *err)
{
    uint64_t v = 0;
    if (as_gguf_get_u64(g, key, &v, err))
        return wrong_type(g, as_gguf_find(g, key), key, "a uint32", "", err);
    if (v > UINT32_MAX)
        return wrong_type(g, as_gguf_find(g, key), key, "a uint32", " (too large)", err);
    *out = (uint32_t)v;
    return AS_OK;
}

int as_gguf_get_f32(const as_gguf *g, const char *key, float *out, as_error *err)
{
    const as_gguf_kv *kv = as_gguf_find(g, key);
    if (!kv || (kv->type != AS_GGUF_FLOAT32 && kv->type != AS_GGUF_FLOAT64))
        return wrong_type(g, kv, key, "a float32", "", err);
    *out = (float)kv->v.f64;
    return AS_OK;
}

int as_gguf_get_bool(const as_gguf *g, const char *key, bool *out, as_error *err)
{
    const as_gguf_kv *kv = as_gguf_find(g, key);
    if (!kv || kv->type != AS_GGUF_BOOL)
        return wrong_type(g, kv, key, "a bool", "", err);
    *out = kv->v.b;
    return AS_OK;
}

int as_gguf_get_str(const as_gguf *g, const char *key, const char **out, as_error *err)
{
    const as_gguf_kv *kv = as_gguf_find(g, key);
    if (!kv || kv->type != AS_GGUF_STRING)
        return wrong_type(g, kv, key, "a string", "", err);
    *out = kv->str;
    return AS_OK;
}

int as_gguf_get_u32_opt(const as_gguf *g, const char *key, uint32_t *out, as_error *err)
{
    return as_gguf_find(g, key) ? as_gguf_get_u32(g, key, out, err) : AS_OK;
}

int as_gguf_get_f32_opt(const as_gguf *g, const char *key, float *out, as_error *err)
{
    return as_gguf_find(g, key) ? as_gguf_get_f32(g, key, out, err) : AS_OK;
}

int as_gguf_get_bool_opt(const as_gguf *g, const char *key, bool *out, as_error *err)
{
    return as_gguf_find(g, key) ? as_gguf_get_bool(g, key, out, err) : AS_OK;
}

double as_gguf_arr_f64(const as_gguf_kv *kv, uint64_t i)
{
    const uint8_t *p = arr_elem(kv, i);
    return p ? raw_f64(kv->arr_type, p) : 0.0;
}

int64_t as_gguf_arr_i64(const as_gguf_kv *kv, uint64_t i)
{
    const uint8_t *p = arr_elem(kv, i);
    if (!p)
        return 0;
    if (kv->arr_type == AS_GGUF_FLOAT32 || kv->arr_type == AS_GGUF_FLOAT64) {
        /* out-of-range float to integer conversion is undefined: clamp */
        double d = raw_f64(kv->arr_type, p);
        if (!(d == d))
            return 0;
        return d >= 9.2233720368547758e18 ? INT64_MAX : d < -9.2233720368547758e18 ? INT64_MIN : (int64_t)d;
    }
    return raw_i64(kv->arr_type, p);
}

/* ------------------------------------------------------------------ */
/* tensor rows as float32 */

uint64_t as_tensor_rows(const as_gguf_tensor *t)
{
    return t->ne[0] ? t->n_elements / t->ne[0] : 0;
}

/* "FILE: tensor 'NAME'" (without "FILE: " when the tensor has no file) */
static void tensor_label(const as_gguf_tensor *t, char *buf, size_t cap)
{
    char nm[72];
    safe_name(nm, sizeof nm, t->name ? t->name : "");
    snprintf(buf, cap, "%s%stensor '%s'", t->path ? t->path : "", t->path ? ": " : "", nm);
}

/* The label is only built for a refusal: rows are read one at a time over
 * whole models. */
static int check_readable(const as_gguf_tensor *t, as_error *err)
{
    if (t->data && as_ggml_type_supported(t->type))
        return AS_OK;
    char what[sizeof ((as_error *)0)->msg], type[64], list[AS_TYPE_LIST_CAP];
    tensor_label(t, what, sizeof what);
    if (!t->data)
        return as_error_set(err, "%s has no data", what);
    if (as_ggml_traits_of(t->type))
        snprintf(type, sizeof type, "%s", as_ggml_type_name(t->type));
    else
        snprintf(type, sizeof type, "%u (not a ggml type attnscope knows)", (unsigned)t->type);
    as_ggml_supported_list(list, sizeof list);
    return as_error_set(err, "%s has type %s, which attnscope cannot read yet (supported: %s)", what, type, list);
}

/* n elements at src through the type's decoder; a refusal names the tensor */
static int decode(const as_gguf_tensor *t, const uint8_t *src, uint64_t n, float *out, as_error *err)
{
    if (as_dequantize(t->type, src, n, out, err) == AS_OK)
        return AS_OK;
    char what[sizeof ((as_error *)0)->msg];
    tensor_label(t, what, sizeof what);
    return as_error_prefix(err, "%s", what);
}

int as_tensor_row_f32(const as_gguf_tensor *t, uint64_t row, float *out, as_error *err)
{
    if (check_readable(t, err))
        return AS_ERR;
    uint64_t rows = as_tensor_rows(t);
    if (row >= rows)
        return as_error_set(err, "%s%stensor '%s': row %" PRIu64 " is out of range (it has %" PRIu64 " rows)",
                            t->path ? t->path : "", t->path ? ": " : "", t->name, row, rows);
    uint64_t row_bytes = as_ggml_nbytes(t->type, t->ne[0]);
    return decode(t, t->data + row * row_bytes, t->ne[0], out, err);
}

int as_tensor_to_f32(const as_gguf_tensor *t, float *out, as_error *err)
{
    if (check_readable(t, err))
        return AS_ERR;
    /* rows are stored back to back and ne[0] is a whole number of blocks */
    return decode(t, t->data, t->n_elements, out, err);
}

/* ---------------------------------------------------------------- views built in memory */

as_gguf_kv *as_gguf_view_kv(as_gguf *g, const char *key, as_gguf_type type)
{
    as_gguf_kv *kvs = realloc(g->kvs, (size_t)(g->n_kv + 1) * sizeof *kvs);
    if (!kvs)
        return NULL;
    g->kvs = kvs;
    as_gguf_kv *kv = &kvs[g->n_kv];
    memset(kv, 0, sizeof *kv);
    if (!(kv->key = strdup(key)))
        return NULL;
    kv->type = type;
    g->n_kv++;
    return kv;
}

bool as_gguf_view_u32(as_gguf *g, const char *key, uint32_t v)
{
    as_gguf_kv *kv = as_gguf_view_kv(g, key, AS_GGUF_UINT32);
    return kv && (kv->v.u64 = v, true);
}

bool as_gguf_view_f32(as_gguf *g, const char *key, float v)
{
    as_gguf_kv *kv = as_gguf_view_kv(g, key, AS_GGUF_FLOAT32);
    return kv && (kv->v.f64 = v, true);
}

bool as_gguf_view_bool(as_gguf *g, const char *key, bool v)
{
    as_gguf_kv *kv = as_gguf_view_kv(g, key, AS_GGUF_BOOL);
    return kv && (kv->v.b = v, true);
}

bool as_gguf_view_str(as_gguf *g, const char *key, const char *s)
{
    as_gguf_kv *kv = as_gguf_view_kv(g, key, AS_GGUF_STRING);
    return kv && (kv->str = strdup(s)) && (kv->str_len = strlen(s), true);
}
