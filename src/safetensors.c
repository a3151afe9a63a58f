/* safetensors: the weights of a Hugging Face directory, model.safetensors
 * or the shards its index names, mapped and their headers checked, each
 * tensor in place in its file's map (hf_internal.h's as_hf_tensor). */
#include "hf_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnscope/file.h"

#define MAX_SHARDS 4096

/* ---------------------------------------------------------------- safetensors */

/* safetensors' dtypes: the float ones the kernels read, and the others a
 * checkpoint holds as buffers (position_ids is I64), checked in size and
 * place like any tensor, read by nothing. */
static int dtype_of(const char *s, as_ggml_type *type, size_t *esize, bool *readable, const char **name)
{
    static const struct {
        const char *name;
        size_t size;
    } other[] = {{"I64", 8}, {"U64", 8}, {"F64", 8}, {"I32", 4}, {"U32", 4}, {"I16", 2}, {"U16", 2},
                 {"I8", 1},  {"U8", 1},  {"BOOL", 1}, {"F8_E4M3", 1}, {"F8_E5M2", 1}};
    *readable = true;
    if (!strcmp(s, "F32"))
        *type = AS_GGML_F32, *esize = 4, *name = "F32";
    else if (!strcmp(s, "F16"))
        *type = AS_GGML_F16, *esize = 2, *name = "F16";
    else if (!strcmp(s, "BF16"))
        *type = AS_GGML_BF16, *esize = 2, *name = "BF16";
    else {
        *readable = false;
        for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
            if (!strcmp(s, other[i].name)) {
                *type = AS_GGML_F32, *esize = other[i].size, *name = other[i].name; /* type unused: never viewed */
                return AS_OK;
            }
        return AS_ERR;
    }
    return AS_OK;
}

/* One entry of a header: dtype, shape, data_offsets, checked against the data section. */
static int parse_entry(as_hf_tensor *t, const char *path, const char *name, json_t *v, const uint8_t *data,
                       uint64_t data_at, uint64_t data_size, as_error *err)
{
    json_t *dt = json_object_get(v, "dtype"), *sh = json_object_get(v, "shape"),
           *off = json_object_get(v, "data_offsets");
    if (!json_is_object(v) || !json_is_string(dt) || !json_is_array(sh) || !json_is_array(off) ||
        json_array_size(off) != 2)
        return as_error_set(err, "%s: tensor '%s': the header entry needs dtype, shape and data_offsets [begin, end]",
                            path, name);
    if (dtype_of(json_string_value(dt), &t->type, &t->esize, &t->readable, &t->dtype))
        return as_error_set(err, "%s: tensor '%s': dtype '%.20s' is not a safetensors dtype attnscope knows (F32, "
                            "F16, BF16 are read; I64, I32, U8, BOOL ... only as buffers it skips)", path, name,
                            json_string_value(dt));
    size_t nd = json_array_size(sh);
    if (nd > 4)
        return as_error_set(err, "%s: tensor '%s': %zu dimensions (at most 4 are read)", path, name, nd);
    uint64_t n = 1;
    t->n_dims = nd ? (uint32_t)nd : 1;
    t->shape[0] = 1;
    for (size_t i = 0; i < nd; i++) {
        json_t *e = json_array_get(sh, i);
        if (!json_is_integer(e) || json_integer_value(e) < 0)
            return as_error_set(err, "%s: tensor '%s': shape entry %zu is not a non-negative integer", path, name, i);
        t->shape[i] = (uint64_t)json_integer_value(e);
        if (__builtin_mul_overflow(n, t->shape[i], &n))
            return as_error_set(err, "%s: tensor '%s': the shape's size overflows", path, name);
    }
    json_t *b = json_array_get(off, 0), *e = json_array_get(off, 1);
    if (!json_is_integer(b) || !json_is_integer(e) || json_integer_value(b) < 0 ||
        json_integer_value(e) < json_integer_value(b))
        return as_error_set(err, "%s: tensor '%s': data_offsets must be two integers, 0 <= begin <= end", path,
                            name);
    uint64_t begin = (uint64_t)json_integer_value(b), end = (uint64_t)json_integer_value(e), bytes;
    char s[96];
    as_hf_shape_str(t->shape, t->n_dims, s, sizeof s);
    if (end > data_size)
        return as_error_set(err, "%s: tensor '%s': data_offsets [%llu, %llu] run past the end of the file (its "
                            "data section holds %llu bytes)", path, name, (unsigned long long)begin,
                            (unsigned long long)end, (unsigned long long)data_size);
    if (__builtin_mul_overflow(n, (uint64_t)t->esize, &bytes) || end - begin != bytes)
        return as_error_set(err, "%s: tensor '%s': data_offsets [%llu, %llu] hold %llu bytes, but shape %s of %s "
                            "needs %llu", path, name, (unsigned long long)begin, (unsigned long long)end,
                            (unsigned long long)(end - begin), s, json_string_value(dt),
                            (unsigned long long)n * t->esize);
    if (t->readable && (data_at + begin) % t->esize)
        return as_error_set(err, "%s: tensor '%s': its data at byte %llu are not aligned to its %zu-byte "
                            "elements", path, name, (unsigned long long)(data_at + begin), t->esize);
    t->n_elements = n;
    t->n_bytes = bytes;
    t->offset = data_at + begin;
    t->data = data + begin;
    return AS_OK;
}

static int by_offset(const void *a, const void *b)
{
    const as_hf_tensor *x = *(as_hf_tensor *const *)a, *y = *(as_hf_tensor *const *)b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Tensors first..h->n of one file: none may share a byte with another. */
static int check_overlaps(as_hf *h, size_t first, const char *path, as_error *err)
{
    size_t n = h->n - first;
    as_hf_tensor **s = malloc((n ? n : 1) * sizeof *s);
    if (!s)
        return as_error_set(err, "%s: out of memory", path);
    for (size_t i = 0; i < n; i++)
        s[i] = &h->t[first + i];
    qsort(s, n, sizeof *s, by_offset);
    int rc = AS_OK;
    const as_hf_tensor *reach = n ? s[0] : NULL; /* the tensor ending furthest so far */
    for (size_t i = 1; i < n && rc == AS_OK; i++) {
        if (s[i]->n_bytes && reach->offset + reach->n_bytes > s[i]->offset)
            rc = as_error_set(err, "%s: tensors '%s' (bytes %llu..%llu) and '%s' (from byte %llu) overlap", path,
                              reach->name, (unsigned long long)reach->offset,
                              (unsigned long long)(reach->offset + reach->n_bytes), s[i]->name,
                              (unsigned long long)s[i]->offset);
        if (s[i]->offset + s[i]->n_bytes > reach->offset + reach->n_bytes)
            reach = s[i];
    }
    free(s);
    return rc;
}

static int map_file(as_hf *h, const char *path, void **map, size_t *size, const char *why, as_error *err)
{
    struct stat st;
    int fd = as_file_open_read(path, &st, err); /* a FIFO or a device is refused, never waited on */
    if (fd < 0) {
        as_error was = err ? *err : (as_error){{0}};
        return as_error_set(err, "%s%s", was.msg, why);
    }
    if (st.st_size < 8) {
        close(fd);
        return as_error_set(err, "%s: %lld bytes: truncated (a safetensors file starts with an 8-byte header "
                            "length)%s", path, (long long)st.st_size, why);
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int e = errno;
    close(fd);
    if (m == MAP_FAILED)
        return as_error_set(err, "%s: cannot memory-map it: %s", path, strerror(e));
    *map = m;
    *size = (size_t)st.st_size;
    return as_gguf_hold(h->g, &st, path, err);
}

/* Parses one safetensors file into h's tensors. why: " (the index places 'X' there)" or "". */
static int read_safetensors(as_hf *h, const char *path, const char *why, as_error *err)
{
    as_hf_file *f = realloc(h->files, (h->n_files + 1) * sizeof *f);
    if (!f)
        return as_error_set(err, "%s: out of memory", path);
    h->files = f;
    f = &h->files[h->n_files];
    memset(f, 0, sizeof *f);
    if (!(f->path = strdup(path)))
        return as_error_set(err, "%s: out of memory", path);
    h->n_files++;
    if (map_file(h, path, &f->map, &f->size, why, err))
        return AS_ERR;
    const uint8_t *m = f->map;
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | m[i];
    if (hlen > AS_HF_MAX_HEADER)
        return as_error_set(err, "%s: the JSON header is %llu bytes, over the %llu-byte (100 MB) limit", path,
                            (unsigned long long)hlen, (unsigned long long)AS_HF_MAX_HEADER);
    if (hlen > f->size - 8)
        return as_error_set(err, "%s: truncated: the header says %llu bytes of JSON, the file has %zu after its "
                            "8-byte length", path, (unsigned long long)hlen, f->size - 8);
    json_error_t je;
    json_t *root = json_loadb((const char *)m + 8, (size_t)hlen, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return as_error_set(err, "%s: header JSON, byte %d: %s", path, je.position + 8, je.text);
    if (!json_is_object(root)) {
        json_decref(root);
        return as_error_set(err, "%s: the header is not a JSON object", path);
    }
    size_t first = h->n, need = h->n + json_object_size(root);
    if (need > h->cap) {
        as_hf_tensor *t = realloc(h->t, need * sizeof *t);
        if (!t) {
            json_decref(root);
            return as_error_set(err, "%s: out of memory", path);
        }
        h->t = t, h->cap = need;
    }
    const char *key;
    json_t *v;
    int rc = AS_OK;
    json_object_foreach(root, key, v) {
        if (!strcmp(key, "__metadata__"))
            continue;
        if (as_hf_find(h, key)) {
            rc = as_error_set(err, "%s: tensor '%s' is also in another file of the directory", path, key);
            break;
        }
        as_hf_tensor *t = &h->t[h->n];
        memset(t, 0, sizeof *t);
        if (!(t->name = strdup(key)) || json_object_set_new(h->names, key, json_integer((json_int_t)h->n))) {
            free(t->name);
            rc = as_error_set(err, "%s: out of memory", path);
            break;
        }
        h->n++;
        t->file = f->path;
        if ((rc = parse_entry(t, path, key, v, m + 8 + hlen, 8 + hlen, f->size - 8 - hlen, err)))
            break;
    }
    json_decref(root);
    return rc ? rc : check_overlaps(h, first, path, err);
}

/* model.safetensors, or every shard model.safetensors.index.json names. */
int as_hf_read_weights(as_hf *h, as_error *err)
{
    char path[PATH_MAX], why[600];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", h->dir);
    if (access(path, F_OK) != 0) {
        snprintf(path, sizeof path, "%s/model.safetensors", h->dir);
        if (access(path, F_OK) != 0)
            return as_error_set(err, "%s: neither model.safetensors nor model.safetensors.index.json is there",
                                h->dir);
        return read_safetensors(h, path, "", err);
    }
    json_t *idx = as_hf_load_json(h, path, err);
    if (!idx)
        return AS_ERR;
    json_t *wm = json_object_get(idx, "weight_map");
    int rc = AS_OK;
    if (!json_is_object(wm) || json_object_size(wm) == 0)
        rc = as_error_set(err, "%s: 'weight_map' must be a non-empty object (tensor name: shard file)", path);
    const char *name;
    json_t *v;
    /* Each shard once, in the order the index first names it. */
    json_object_foreach(wm, name, v) {
        if (rc)
            break;
        const char *file = json_string_value(v);
        if (!file || !file[0] || strchr(file, '/') || !strcmp(file, "..") || strlen(file) > 255) {
            rc = as_error_set(err, "%s: tensor '%s': shard '%.80s' must be a file name in the directory", path, name,
                              file ? file : "(not a string)");
            break;
        }
        char shard[PATH_MAX];
        snprintf(shard, sizeof shard, "%s/%s", h->dir, file);
        bool seen = false;
        for (size_t i = 0; i < h->n_files && !seen; i++)
            seen = !strcmp(h->files[i].path, shard);
        if (seen)
            continue;
        if (h->n_files >= MAX_SHARDS) {
            rc = as_error_set(err, "%s: more than %d shards", path, MAX_SHARDS);
            break;
        }
        snprintf(why, sizeof why, " (the index places tensor '%.200s' there)", name);
        rc = read_safetensors(h, shard, why, err);
    }
    /* Every tensor the index names is in the shard it names. */
    json_object_foreach(wm, name, v) {
        if (rc)
            break;
        const as_hf_tensor *t = as_hf_find(h, name);
        char shard[PATH_MAX];
        snprintf(shard, sizeof shard, "%s/%s", h->dir, json_string_value(v));
        if (!t || strcmp(t->file, shard))
            rc = as_error_set(err, "%s: tensor '%s' is not there (model.safetensors.index.json places it there)",
                              shard, name);
    }
    json_decref(idx);
    return rc;
}
