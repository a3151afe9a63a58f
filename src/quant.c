/* quant: the ggml type table, f16/bf16 conversions, decoding blocks to
 * float32 and Q8_0 quantization.
 *
 * The table has one row per ggml type, indexed by its number in ggml.h.
 * A row's decoder is what makes the type readable: as_ggml_type_supported,
 * the list in messages and as_dequantize all follow the table, so a type
 * without a decoder is refused by name instead of being read as some other
 * type's layout. */
#include "attnscope/quant.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "gguf_internal.h"

/* ------------------------------------------------------------------ */
/* decoders: n elements, a whole number of blocks */

static void f32_to_f32(const uint8_t *p, uint64_t n, float *out)
{
    for (uint64_t i = 0; i < n; i++)
        out[i] = f32_from_bits(le32(p + 4 * i));
}

static void f16_to_f32(const uint8_t *p, uint64_t n, float *out)
{
    for (uint64_t i = 0; i < n; i++)
        out[i] = as_f16_to_f32(le16(p + 2 * i));
}

static void bf16_to_f32(const uint8_t *p, uint64_t n, float *out)
{
    for (uint64_t i = 0; i < n; i++)
        out[i] = as_bf16_to_f32(le16(p + 2 * i));
}

/* fp16 scale d, then 32 int8 q; value = d*q */
static void q8_0_to_f32(const uint8_t *p, uint64_t n, float *out)
{
    for (uint64_t b = 0; b < n / AS_QK8_0; b++, p += 34, out += AS_QK8_0) {
        float d = as_f16_to_f32(le16(p));
        for (int j = 0; j < AS_QK8_0; j++)
            out[j] = d * (float)(int8_t)p[2 + j];
    }
}

/* ------------------------------------------------------------------ */
/* the type table */

#define GGML_TABLE_LEN 31
static const as_ggml_traits ggml_table[GGML_TABLE_LEN] = {
    /*                 name    block elems, bytes  decoder */
    [AS_GGML_F32]  = {"F32",   1,   4,   f32_to_f32},
    [AS_GGML_F16]  = {"F16",   1,   2,   f16_to_f32},
    [AS_GGML_Q4_0] = {"Q4_0",  32,  18,  NULL},
    [AS_GGML_Q4_1] = {"Q4_1",  32,  20,  NULL},
    [AS_GGML_Q5_0] = {"Q5_0",  32,  22,  NULL},
    [AS_GGML_Q5_1] = {"Q5_1",  32,  24,  NULL},
    [AS_GGML_Q8_0] = {"Q8_0",  32,  34,  q8_0_to_f32},
    [AS_GGML_Q8_1] = {"Q8_1",  32,  36,  NULL},
    [AS_GGML_Q2_K] = {"Q2_K",  256, 84,  NULL},
    [AS_GGML_Q3_K] = {"Q3_K",  256, 110, NULL},
    [AS_GGML_Q4_K] = {"Q4_K",  256, 144, NULL},
    [AS_GGML_Q5_K] = {"Q5_K",  256, 176, NULL},
    [AS_GGML_Q6_K] = {"Q6_K",  256, 210, NULL},
    [AS_GGML_Q8_K] = {"Q8_K",  256, 292, NULL},
    [AS_GGML_I8]   = {"I8",    1,   1,   NULL},
    [AS_GGML_I16]  = {"I16",   1,   2,   NULL},
    [AS_GGML_I32]  = {"I32",   1,   4,   NULL},
    [AS_GGML_I64]  = {"I64",   1,   8,   NULL},
    [AS_GGML_F64]  = {"F64",   1,   8,   NULL},
    [AS_GGML_BF16] = {"BF16",  1,   2,   bf16_to_f32},
};

const as_ggml_traits *as_ggml_traits_of(as_ggml_type t)
{
    if ((uint32_t)t >= GGML_TABLE_LEN || !ggml_table[t].name)
        return NULL;
    return &ggml_table[t];
}

const char *as_ggml_type_name(as_ggml_type t)
{
    const as_ggml_traits *tr = as_ggml_traits_of(t);
    return tr ? tr->name : "unknown";
}

uint64_t as_ggml_nbytes(as_ggml_type t, uint64_t n)
{
    const as_ggml_traits *tr = as_ggml_traits_of(t);
    uint64_t bytes;
    if (!tr || n % tr->block_elems != 0 || !mul_u64(n / tr->block_elems, tr->block_bytes, &bytes))
        return 0;
    return bytes;
}

bool as_ggml_type_supported(as_ggml_type t)
{
    const as_ggml_traits *tr = as_ggml_traits_of(t);
    return tr && tr->to_f32;
}

void as_ggml_supported_list(char *buf, size_t cap)
{
    size_t len = 0;
    if (cap == 0)
        return;
    buf[0] = '\0';
    for (int blocks = 0; blocks < 2; blocks++)
        for (uint32_t t = 0; t < GGML_TABLE_LEN; t++) {
            const as_ggml_traits *tr = &ggml_table[t];
            if (!tr->to_f32 || (tr->block_elems > 1) != blocks || len >= cap)
                continue;
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "", tr->name);
        }
}

int as_dequantize(as_ggml_type t, const void *src, uint64_t n, float *out, as_error *err)
{
    const as_ggml_traits *tr = as_ggml_traits_of(t);
    if (!tr || !tr->to_f32) {
        char list[128];
        as_ggml_supported_list(list, sizeof list);
        if (!tr)
            return as_error_set(err, "cannot decode type %u, which is not a ggml type attnscope knows "
                                "(supported: %s)", (unsigned)t, list);
        return as_error_set(err, "cannot decode type %s yet (supported: %s)", tr->name, list);
    }
    if (n % tr->block_elems != 0)
        return as_error_set(err, "%" PRIu64 " elements are not a whole number of %s blocks (%" PRIu32 " each)",
                            n, tr->name, tr->block_elems);
    tr->to_f32(src, n, out);
    return AS_OK;
}

/* ------------------------------------------------------------------ */
/* scalar conversions */

float as_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f)
        return f32_from_bits(sign | 0x7f800000u | (man << 13));
    if (exp == 0) {
        /* subnormal: man * 2^-24, exact in float */
        float v = (float)man * 5.9604644775390625e-08f;
        return sign ? -v : v;
    }
    return f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
}

/* round v >> shift to nearest, ties to even */
static uint32_t shift_round_even(uint32_t v, unsigned shift)
{
    uint32_t r = v >> shift, rem = v & ((1u << shift) - 1), half = 1u << (shift - 1);
    if (rem > half || (rem == half && (r & 1)))
        r++;
    return r;
}

uint16_t as_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t ax = x & 0x7fffffffu;
    if (ax > 0x7f800000u) /* NaN: keep it a (quiet) NaN with the top payload bits */
        return (uint16_t)(sign | 0x7e00 | ((ax >> 13) & 0x3ff));
    if (ax >= 0x477ff000u) /* >= 65520 rounds past 65504: infinity */
        return (uint16_t)(sign | 0x7c00);
    if (ax >= 0x38800000u) { /* normal in f16; a carry into the exponent is correct */
        uint32_t rebased = ax - (112u << 23);
        return (uint16_t)(sign | shift_round_even(rebased, 13));
    }
    /* f16 subnormal or zero: count units of 2^-24 */
    uint32_t exp = ax >> 23;
    if (exp < 102) /* below 2^-25: rounds to zero */
        return sign;
    uint32_t man = (ax & 0x7fffffu) | 0x800000u;
    return (uint16_t)(sign | shift_round_even(man, 126 - exp));
}

float as_bf16_to_f32(uint16_t h) { return f32_from_bits((uint32_t)h << 16); }

uint16_t as_f32_to_bf16(float f)
{
    uint32_t u = f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) /* NaN: force quiet so truncation keeps it NaN */
        return (uint16_t)((u >> 16) | 64);
    return (uint16_t)((u + 0x7fffu + ((u >> 16) & 1)) >> 16);
}

/* ------------------------------------------------------------------ */
/* Q8_0 quantization */

/* ggml stores roundf(x*id) in an int8; NaN or inf would make that cast
 * undefined, so they become 0 or are clamped */
static int8_t q8_round(float v)
{
    if (!(v == v))
        return 0;
    if (v > 127.0f)
        v = 127.0f;
    if (v < -127.0f)
        v = -127.0f;
    return (int8_t)roundf(v);
}

void as_quantize_q8_0(const float *x, uint64_t n, uint8_t *out)
{
    for (uint64_t b = 0; b < n / AS_QK8_0; b++, x += AS_QK8_0, out += 34) {
        float amax = 0.0f;
        for (int j = 0; j < AS_QK8_0; j++)
            amax = fabsf(x[j]) > amax ? fabsf(x[j]) : amax;
        float d = amax / 127;
        float id = d != 0.0f ? 1.0f / d : 0.0f;
        uint16_t dh = as_f32_to_f16(d);
        out[0] = (uint8_t)dh;
        out[1] = (uint8_t)(dh >> 8);
        for (int j = 0; j < AS_QK8_0; j++)
            out[2 + j] = (uint8_t)q8_round(x[j] * id);
    }
}
