/* Internal to the GGUF files (gguf_read.c, gguf_write.c, gguf_info.c) and
 * the type table (quant.c): little-endian access and overflow-checked
 * arithmetic they share. Not part of the public API. */
#ifndef ATTNSCOPE_GGUF_INTERNAL_H
#define ATTNSCOPE_GGUF_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
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

#endif
