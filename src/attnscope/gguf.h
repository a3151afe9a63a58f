/* gguf: reads and writes GGUF files (versions 2 and 3, little-endian).
 * Owns the memory map of a model file, its metadata key/values and its
 * tensor table. Every count, length, offset and dimension is checked
 * against the file size (with overflow checks on products) before use;
 * a bad file gets an error naming the file, the byte offset and the field.
 * Also owns reading a tensor's rows as float32 (decoded by quant.h), a
 * writer used by tests and converters, and the --info model card.
 * Reader: src/gguf_read.c; writer: src/gguf_write.c; model card:
 * src/gguf_info.c. */
#ifndef ATTNSCOPE_GGUF_H
#define ATTNSCOPE_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attnscope/engine.h"
#include "attnscope/error.h"
#include "attnscope/file.h"
#include "attnscope/quant.h" /* the ggml tensor types, their conversions and decoders */

#define AS_GGUF_MAGIC 0x46554747u /* "GGUF" read as little-endian uint32 */
#define AS_GGUF_DEFAULT_ALIGNMENT 32

typedef enum as_gguf_type {
    AS_GGUF_UINT8 = 0,
    AS_GGUF_INT8 = 1,
    AS_GGUF_UINT16 = 2,
    AS_GGUF_INT16 = 3,
    AS_GGUF_UINT32 = 4,
    AS_GGUF_INT32 = 5,
    AS_GGUF_FLOAT32 = 6,
    AS_GGUF_BOOL = 7,
    AS_GGUF_STRING = 8,
    AS_GGUF_ARRAY = 9,
    AS_GGUF_UINT64 = 10,
    AS_GGUF_INT64 = 11,
    AS_GGUF_FLOAT64 = 12,
    AS_GGUF_TYPE_COUNT
} as_gguf_type;

/* One metadata value. Scalars are decoded; strings are copied and
 * NUL-terminated (a string holding a NUL byte keeps its full length in
 * str_len). Arrays of numbers/bools point into the map (little-endian,
 * possibly unaligned: read with the as_gguf_arr_* helpers); arrays of
 * strings are copied into `strs` (with lengths in `str_lens`). */
typedef struct as_gguf_kv {
    char *key;
    as_gguf_type type;
    uint64_t offset; /* file offset where this key/value starts */
    union {
        uint64_t u64;  /* UINT8/16/32/64 */
        int64_t i64;   /* INT8/16/32/64 */
        double f64;    /* FLOAT32/64 */
        bool b;        /* BOOL */
    } v;
    char *str;         /* STRING */
    uint64_t str_len;
    as_gguf_type arr_type; /* ARRAY: element type (never ARRAY: nested arrays are rejected) */
    uint64_t arr_len;
    const uint8_t *arr_data; /* ARRAY of non-strings: raw little-endian elements in the map */
    char **strs;             /* ARRAY of STRING: copied, NUL-terminated */
    uint64_t *str_lens;
} as_gguf_kv;

typedef struct as_gguf_tensor {
    char *name;
    uint32_t n_dims;     /* 1..4 */
    uint64_t ne[4];      /* ne[0] is the contiguous (innermost) dimension; unused dims are 1 */
    as_ggml_type type;
    uint64_t offset;     /* relative to the data section, as stored */
    uint64_t info_offset;/* file offset of this tensor's info record */
    uint64_t n_elements;
    uint64_t n_bytes;
    const uint8_t *data; /* into the map; checked to lie inside it */
    const char *path;    /* the owning file's path, for error messages (may be NULL) */
} as_gguf_tensor;

typedef struct as_gguf {
    char *path;            /* name used in error messages */
    const uint8_t *map;
    size_t size;
    bool mapped;           /* true when map is an mmap we must munmap */
    size_t map_lead;       /* bytes of that mapping before map (a shifted copy) */
    uint32_t version;
    uint64_t alignment;
    uint64_t data_offset;  /* file offset of the tensor data section */
    as_gguf_kv *kvs;
    uint64_t n_kv;
    as_gguf_tensor *tensors;
    uint64_t n_tensors;
    /* A view over another format (version 0): what it is, for the model
     * card (NULL: a llama2.c checkpoint), and what the view owns beyond the
     * above (its files' maps, converted copies), freed by release(owner). */
    const char *view_of;
    const char *view_note; /* what the view skipped or renamed on the way (NULL or "": nothing), a load warning */
    void *owner;
    void (*release)(void *owner);
    /* Every tensor's data is zero (a saved run's model, cmd_save.c): the
     * load skips the scan for NaN and Inf, which would read every byte the
     * tensor table claims (terabytes of a hostile run's table). */
    bool zero_weights;
    /* The files read into this model (the GGUF, a checkpoint and its
     * tokenizer, a directory's JSON and safetensors), protected from every
     * write (file.h) until as_gguf_close. */
    as_file_id *held;
    size_t n_held;
} as_gguf;

/* Opening a file (as_gguf_open), closing it and its model card
 * (as_gguf_print_info): engine.h. */

/* Same as as_gguf_open over a caller's buffer (which must outlive the
 * result); `name` is used in messages. For tests and fuzzing. */
int as_gguf_parse(as_gguf **out, const void *buf, size_t size, const char *name, as_error *err);
/* Protects the file st describes (an fstat of what was read) for g's
 * lifetime; false when out of memory (err names path). */
int as_gguf_hold(as_gguf *g, const struct stat *st, const char *path, as_error *err);

/* Keys of a GGUF view built in memory (a llama2.c checkpoint, a Hugging
 * Face directory shown as the GGUF it would convert to): one more record
 * of `type` with a copy of `key`, zeroed, or NULL when out of memory;
 * and the scalar and string keys through it (false when out of memory).
 * as_gguf_close frees them with the rest. */
as_gguf_kv *as_gguf_view_kv(as_gguf *g, const char *key, as_gguf_type type);
bool as_gguf_view_u32(as_gguf *g, const char *key, uint32_t v);
bool as_gguf_view_f32(as_gguf *g, const char *key, float v);
bool as_gguf_view_bool(as_gguf *g, const char *key, bool v);
bool as_gguf_view_str(as_gguf *g, const char *key, const char *s);

const char *as_gguf_type_name(as_gguf_type t);

const as_gguf_kv *as_gguf_find(const as_gguf *g, const char *key);
/* Typed getters: accept any integer type that fits (resp. float32/64);
 * return AS_ERR with "FILE: key 'K': expected ..., found ..." on mismatch
 * or absence. The _opt variants leave *out unchanged and return AS_OK when
 * the key is absent (but AS_ERR when present with a wrong type). */
int as_gguf_get_u64(const as_gguf *g, const char *key, uint64_t *out, as_error *err);
int as_gguf_get_u32(const as_gguf *g, const char *key, uint32_t *out, as_error *err);
int as_gguf_get_f32(const as_gguf *g, const char *key, float *out, as_error *err);
int as_gguf_get_bool(const as_gguf *g, const char *key, bool *out, as_error *err);
int as_gguf_get_str(const as_gguf *g, const char *key, const char **out, as_error *err);
int as_gguf_get_u32_opt(const as_gguf *g, const char *key, uint32_t *out, as_error *err);
int as_gguf_get_f32_opt(const as_gguf *g, const char *key, float *out, as_error *err);
int as_gguf_get_bool_opt(const as_gguf *g, const char *key, bool *out, as_error *err);
/* Array element readers (index checked by caller against arr_len). */
double as_gguf_arr_f64(const as_gguf_kv *kv, uint64_t i);
int64_t as_gguf_arr_i64(const as_gguf_kv *kv, uint64_t i);

const as_gguf_tensor *as_gguf_tensor_find(const as_gguf *g, const char *name);
/* Number of rows = n_elements / ne[0]. */
uint64_t as_tensor_rows(const as_gguf_tensor *t);
/* Dequantize row `row` (ne[0] floats) into out (quant.h decodes it); a
 * type attnscope cannot decode is an error naming the file, the tensor and
 * the type. */
int as_tensor_row_f32(const as_gguf_tensor *t, uint64_t row, float *out, as_error *err);
/* Dequantize the whole tensor into out (n_elements floats). */
int as_tensor_to_f32(const as_gguf_tensor *t, float *out, as_error *err);

/* ---- writer ---- */
typedef struct as_gguf_writer as_gguf_writer;

as_gguf_writer *as_gguf_writer_new(uint32_t version); /* 2 or 3 */
void as_gguf_writer_free(as_gguf_writer *w);
/* Setters copy their arguments. Keys are written in the order added;
 * setting an existing key replaces its value in place. */
void as_gguf_writer_set_u32(as_gguf_writer *w, const char *key, uint32_t v);
void as_gguf_writer_set_i32(as_gguf_writer *w, const char *key, int32_t v);
void as_gguf_writer_set_u64(as_gguf_writer *w, const char *key, uint64_t v);
void as_gguf_writer_set_f32(as_gguf_writer *w, const char *key, float v);
void as_gguf_writer_set_bool(as_gguf_writer *w, const char *key, bool v);
void as_gguf_writer_set_str(as_gguf_writer *w, const char *key, const char *v);
/* Any scalar type (not STRING/ARRAY); data holds one little-endian value.
 * For the types without a setter of their own (uint8, int64, float64, ...). */
void as_gguf_writer_set_scalar(as_gguf_writer *w, const char *key, as_gguf_type type, const void *data);
/* Any scalar element type (not STRING/ARRAY); data holds n little-endian elements. */
void as_gguf_writer_set_arr(as_gguf_writer *w, const char *key, as_gguf_type elem, const void *data, uint64_t n);
void as_gguf_writer_set_arr_str(as_gguf_writer *w, const char *key, const char *const *strs, uint64_t n);
/* Copies one key/value of a parsed file, whatever its type. */
void as_gguf_writer_copy_kv(as_gguf_writer *w, const as_gguf_kv *kv);
/* Adds a tensor; data (as_ggml_nbytes(type, prod(ne)) bytes) is copied. */
int as_gguf_writer_add_tensor(as_gguf_writer *w, const char *name, as_ggml_type type,
                              uint32_t n_dims, const uint64_t *ne, const void *data, as_error *err);
/* Writes to a temporary file beside path and renames it into place. */
int as_gguf_writer_write(as_gguf_writer *w, const char *path, as_error *err);
/* Serializes into a malloc'd buffer (for tests that then corrupt it). */
int as_gguf_writer_to_memory(as_gguf_writer *w, uint8_t **buf, size_t *size, as_error *err);

/* One metadata value as the model card shows it (text escaped, floats the
 * shortest decimal that reads back, an array as its type, length and first
 * elements), cut with "..." at max_cols columns (8..200); with elem >= 0,
 * element elem of an array alone ("absent" past its end). buf gets at most
 * 4 * max_cols + 8 bytes. */
void as_gguf_kv_text(const as_gguf_kv *kv, int64_t elem, unsigned max_cols, char *buf, size_t cap);

#endif
