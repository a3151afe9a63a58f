/* Internal to the GGUF files (gguf_read.c, gguf_write.c, gguf_info.c) and
 * the type table (quant.c): little-endian access, overflow-checked
 * arithmetic, GGUF scalar sizes and decoding (arrays' elements too), and
 * the doubling growth of record arrays, which they share. Not part of the
 * public API. */
#ifndef ATTNSCOPE_GGUF_INTERNAL_H
#define ATTNSCOPE_GGUF_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/gguf.h"

/* little-endian access (the map may be unaligned, and the host need not
 * be little-endian) */

static inline uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static inline uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t le64(const uint8_t *p) { return (uint64_t)le32(p) | ((uint64_t)le32(p + 4) << 32); }

static inline void put_le32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline float f32_from_bits(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

/* a*b without wrapping; false on overflow */
static inline bool mul_u64(uint64_t a, uint64_t b, uint64_t *out)
{
    if (a != 0 && b > UINT64_MAX / a)
        return false;
    *out = a * b;
    return true;
}

static inline bool is_pow2(uint64_t x) { return x != 0 && (x & (x - 1)) == 0; }

/* GGUF scalars: their sizes and their values, widened */

/* bytes of one scalar; 0 for STRING and ARRAY, whose size is in the data */
static const uint8_t gguf_type_size[AS_GGUF_TYPE_COUNT] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static inline uint64_t raw_u64(as_gguf_type t, const uint8_t *p)
{
    switch (gguf_type_size[t]) {
    case 1: return p[0];
    case 2: return le16(p);
    case 4: return le32(p);
    default: return le64(p);
    }
}

static inline int64_t raw_i64(as_gguf_type t, const uint8_t *p)
{
    switch (t) {
    case AS_GGUF_INT8: return (int8_t)p[0];
    case AS_GGUF_INT16: return (int16_t)le16(p);
    case AS_GGUF_INT32: return (int32_t)le32(p);
    case AS_GGUF_INT64: return (int64_t)le64(p);
    default: return (int64_t)raw_u64(t, p);
    }
}

static inline double raw_f64(as_gguf_type t, const uint8_t *p)
{
    uint64_t u;
    double d;
    switch (t) {
    case AS_GGUF_FLOAT32: return f32_from_bits(le32(p));
    case AS_GGUF_FLOAT64: u = le64(p), memcpy(&d, &u, 8); return d;
    case AS_GGUF_INT8: case AS_GGUF_INT16: case AS_GGUF_INT32: case AS_GGUF_INT64:
        return (double)raw_i64(t, p);
    case AS_GGUF_BOOL: return p[0] != 0;
    default: return (double)raw_u64(t, p);
    }
}

static inline bool type_is_unsigned(as_gguf_type t)
{
    return t == AS_GGUF_UINT8 || t == AS_GGUF_UINT16 || t == AS_GGUF_UINT32 || t == AS_GGUF_UINT64;
}

static inline bool type_is_signed(as_gguf_type t)
{
    return t == AS_GGUF_INT8 || t == AS_GGUF_INT16 || t == AS_GGUF_INT32 || t == AS_GGUF_INT64;
}

/* element i of an array of scalars, or NULL when there is none */
static inline const uint8_t *arr_elem(const as_gguf_kv *kv, uint64_t i)
{
    if (kv->type != AS_GGUF_ARRAY || !kv->arr_data || i >= kv->arr_len ||
        (unsigned)kv->arr_type >= AS_GGUF_TYPE_COUNT || gguf_type_size[kv->arr_type] == 0)
        return NULL;
    return kv->arr_data + i * gguf_type_size[kv->arr_type];
}

/* Grows a parse array one record at a time (doubling), so memory follows
 * the records actually present rather than the count the file claims. */
static inline void *grow(void *arr, uint64_t n, size_t elem)
{
    if (n == 0 || (n & (n - 1)) != 0)
        return arr; /* capacity is the next power of two at or above n */
    void *p = realloc(arr, (size_t)(2 * n) * elem);
    if (p)
        memset((char *)p + n * elem, 0, (size_t)n * elem);
    return p;
}

#endif
