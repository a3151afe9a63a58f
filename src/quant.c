/* quant: the ggml type table, f16/bf16 conversions, decoding blocks to
 * float32, the health of blocks' scales and Q8_0 quantization.
 *
 * The table has one row per ggml type, indexed by its number in ggml.h.
 * A row's decoder is what makes the type readable: as_ggml_type_supported,
 * as_weight_type_readable, the list in messages and as_dequantize all
 * follow the table, so a type without a decoder is refused by name instead
 * of being read as some other type's layout. */
#include "attnscope/quant.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

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

/* Each decoder below follows its block as ggml-common.h lays it out, and
 * computes each value with ggml's operations in ggml's order, so that its
 * floats are ggml's to the bit (tests/test_quant.c holds them to ggml's
 * own decoders). Scales are fp16, little-endian. */

static float f16_at(const uint8_t *p) { return as_f16_to_f32(le16(p)); }

/* Q8_0 (34 bytes): d, then 32 int8 q; value = q*d */
static void q8_0_to_f32(const uint8_t *p, uint64_t n, float *out)
{
    for (uint64_t b = 0; b < n / AS_QK8_0; b++, p += 34, out += AS_QK8_0) {
        float d = f16_at(p);
        for (int j = 0; j < AS_QK8_0; j++)
            out[j] = d * (float)(int8_t)p[2 + j];
    }
}

/* Q4_0 (18 bytes): d, then 16 bytes of nibbles: value j is the low nibble
 * of byte j, value j+16 its high nibble; value = (q - 8)*d */
static void q4_0_to_f32(const uint8_t *p, uint64_t n, float *out)
{
    for (uint64_t b = 0; b < n / 32; b++, p += 18, out += 32) {
        float d = f16_at(p);
        const uint8_t *qs = p + 2;
        for (int j = 0; j < 16; j++) {
            out[j] = (float)((qs[j] & 15) - 8) * d;
            out[j + 16] = (float)((qs[j] >> 4) - 8) * d;
        }
    }
}

/* Q4_1 (20 bytes): d, min m, nibbles as Q4_0; value = q*d + m */
static void q4_1_to_f32(const uint8_t *p, uint64_t n, float *out)
{
    for (uint64_t b = 0; b < n / 32; b++, p += 20, out += 32) {
        float d = f16_at(p), m = f16_at(p + 2);
        const uint8_t *qs = p + 4;
        for (int j = 0; j < 16; j++) {
            out[j] = (float)(qs[j] & 15) * d + m;
            out[j + 16] = (float)(qs[j] >> 4) * d + m;
        }
    }
}

/* The fifth bits of Q5_0 and Q5_1: bit j of a 32-bit little-endian word
 * belongs to value j. */
static int fifth_bit(uint32_t qh, int j) { return (int)((qh >> j) & 1) << 4; }

/* Q5_0 (22 bytes): d, 4 bytes of fifth bits, nibbles as Q4_0;
 * value = (q - 16)*d */
static void q5_0_to_f32(const uint8_t *p, uint64_t n, float *out)
{
    for (uint64_t b = 0; b < n / 32; b++, p += 22, out += 32) {
        float d = f16_at(p);
        uint32_t qh = le32(p + 2);
        const uint8_t *qs = p + 6;
        for (int j = 0; j < 16; j++) {
            out[j] = (float)(((qs[j] & 15) | fifth_bit(qh, j)) - 16) * d;
            out[j + 16] = (float)(((qs[j] >> 4) | fifth_bit(qh, j + 16)) - 16) * d;
        }
    }
}

/* Q5_1 (24 bytes): d, min m, fifth bits, nibbles; value = q*d + m */
static void q5_1_to_f32(const uint8_t *p, uint64_t n, float *out)
{
    for (uint64_t b = 0; b < n / 32; b++, p += 24, out += 32) {
        float d = f16_at(p), m = f16_at(p + 2);
        uint32_t qh = le32(p + 4);
        const uint8_t *qs = p + 8;
        for (int j = 0; j < 16; j++) {
            out[j] = (float)((qs[j] & 15) | fifth_bit(qh, j)) * d + m;
            out[j + 16] = (float)((qs[j] >> 4) | fifth_bit(qh, j + 16)) * d + m;
        }
    }
}

/* The 2-bit fields of Q2_K and Q3_K: a super-block's 256 values are two
 * halves of 128 over 32 bytes each; value i of a half takes bits
 * 2*(i/32) of byte (i % 32) of its half. */
static int crumb(const uint8_t *qs, int i)
{
    return (qs[32 * (i / 128) + i % 32] >> (2 * ((i % 128) / 32))) & 3;
}

/* Q2_K (84 bytes): 16 bytes of 4-bit scale (low) and min (high) per 16
 * values, 64 bytes of 2-bit q, d, dmin; value = d*sc*q - dmin*mn */
static void q2_k_to_f32(const uint8_t *p, uint64_t n, float *out)
{
    for (uint64_t b = 0; b < n / AS_QK_K; b++, p += 84, out += AS_QK_K) {
        float d = f16_at(p + 80), dmin = f16_at(p + 82);
        for (int s = 0; s < 16; s++) {
            float dl = d * (float)(p[s] & 15), ml = dmin * (float)(p[s] >> 4);
            for (int i = 16 * s; i < 16 * s + 16; i++)
                out[i] = dl * (float)crumb(p + 16, i) - ml;
        }
    }
}

/* Q3_K's sixteen 6-bit scales in 12 bytes: scale s keeps its low 4 bits
 * in byte s % 8 (low nibble for s < 8, high for the rest) and its top 2
 * bits in byte 8 + s % 4, at bit 2*(s/4). Stored with a bias of 32. */
static int q3_k_scale(const uint8_t *sc, int s)
{
    int lo = (sc[s % 8] >> (4 * (s / 8))) & 15, hi = (sc[8 + s % 4] >> (2 * (s / 4))) & 3;
    return (lo | hi << 4) - 32;
}

/* Q3_K (110 bytes): 32 bytes of high bits, 64 bytes of 2-bit q, 12 bytes
 * of scales, d. Value i's high bit is bit i/32 of byte i % 32; a clear
 * high bit subtracts 4. value = d*scale*(q - 4*!h) */
static void q3_k_to_f32(const uint8_t *p, uint64_t n, float *out)
{
    for (uint64_t b = 0; b < n / AS_QK_K; b++, p += 110, out += AS_QK_K) {
        const uint8_t *hmask = p, *qs = p + 32, *sc = p + 96;
        float d = f16_at(p + 108);
        for (int s = 0; s < 16; s++) {
            float dl = d * (float)q3_k_scale(sc, s);
            for (int i = 16 * s; i < 16 * s + 16; i++) {
                int high = (hmask[i % 32] >> (i / 32)) & 1;
                out[i] = dl * (float)(crumb(qs, i) - (high ? 0 : 4));
            }
        }
    }
}

/* Q4_K's and Q5_K's eight 6-bit scales and mins in 12 bytes: for
 * sub-block j < 4, the low 6 bits of byte j (scale) and j+4 (min); for
 * j >= 4, the nibbles of byte j+4 (scale low, min high) under the top
 * 2 bits of bytes j-4 (scale) and j (min). */
static void k4_scale_min(const uint8_t *sc, int j, int *scale, int *min)
{
    if (j < 4) {
        *scale = sc[j] & 63;
        *min = sc[j + 4] & 63;
    } else {
        *scale = (sc[j + 4] & 15) | (sc[j - 4] >> 6) << 4;
        *min = (sc[j + 4] >> 4) | (sc[j] >> 6) << 4;
    }
}

/* Q4_K (144 bytes): d, dmin, 12 bytes of scales and mins, 128 bytes of
 * nibbles. Sub-block j (32 values) reads bytes 32*(j/2) onward, low
 * nibbles for even j, high for odd. value = d*scale*q - dmin*min */
static void q4_k_to_f32(const uint8_t *p, uint64_t n, float *out)
{
    for (uint64_t b = 0; b < n / AS_QK_K; b++, p += 144, out += AS_QK_K) {
        float d = f16_at(p), dmin = f16_at(p + 2);
        for (int j = 0; j < 8; j++) {
            int sc, mn;
            k4_scale_min(p + 4, j, &sc, &mn);
            float dl = d * (float)sc, ml = dmin * (float)mn;
            const uint8_t *qs = p + 16 + 32 * (j / 2);
            for (int l = 0; l < 32; l++)
                out[32 * j + l] = dl * (float)((qs[l] >> (4 * (j % 2))) & 15) - ml;
        }
    }
}

/* Q5_K (176 bytes): d, dmin, scales and mins as Q4_K, 32 bytes of fifth
 * bits (sub-block j's at bit j of byte l), 128 bytes of nibbles as Q4_K */
static void q5_k_to_f32(const uint8_t *p, uint64_t n, float *out)
{
    for (uint64_t b = 0; b < n / AS_QK_K; b++, p += 176, out += AS_QK_K) {
        float d = f16_at(p), dmin = f16_at(p + 2);
        const uint8_t *qh = p + 16;
        for (int j = 0; j < 8; j++) {
            int sc, mn;
            k4_scale_min(p + 4, j, &sc, &mn);
            float dl = d * (float)sc, ml = dmin * (float)mn;
            const uint8_t *qs = p + 48 + 32 * (j / 2);
            for (int l = 0; l < 32; l++) {
                int q = ((qs[l] >> (4 * (j % 2))) & 15) | ((qh[l] >> j) & 1) << 4;
                out[32 * j + l] = dl * (float)q - ml;
            }
        }
    }
}

/* Q6_K's 6-bit q of value i, less its bias of 32. Each half of 128
 * values has 64 low bytes and 32 high bytes; value 32k + l of a half
 * (k = 0..3) takes the low nibble (k < 2) or high nibble of low byte
 * l + 32*(k % 2), and bits 2k of high byte l. */
static int q6_k_q(const uint8_t *ql, const uint8_t *qh, int i)
{
    int h = i / 128, k = (i % 128) / 32, l = i % 32;
    int lo = (ql[64 * h + l + 32 * (k % 2)] >> (4 * (k / 2))) & 15;
    int hi = (qh[32 * h + l] >> (2 * k)) & 3;
    return (lo | hi << 4) - 32;
}

/* Q6_K (210 bytes): 128 low bytes, 64 high bytes, 16 int8 scales (one
 * per 16 values), d; value = (d*scale)*q */
static void q6_k_to_f32(const uint8_t *p, uint64_t n, float *out)
{
    for (uint64_t b = 0; b < n / AS_QK_K; b++, p += 210, out += AS_QK_K) {
        const uint8_t *ql = p, *qh = p + 128;
        const int8_t *sc = (const int8_t *)(p + 192);
        float d = f16_at(p + 208);
        for (int i = 0; i < AS_QK_K; i++)
            out[i] = d * (float)sc[i / 16] * (float)q6_k_q(ql, qh, i);
    }
}

/* IQ4_NL's and IQ4_XS's sixteen levels, a non-linear grid (ggml's
 * kvalues_iq4nl) */
static const int8_t iq4_levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

/* IQ4_NL (18 bytes): d, nibbles as Q4_0 indexing the levels; value = d*level */
static void iq4_nl_to_f32(const uint8_t *p, uint64_t n, float *out)
{
    for (uint64_t b = 0; b < n / 32; b++, p += 18, out += 32) {
        float d = f16_at(p);
        const uint8_t *qs = p + 2;
        for (int j = 0; j < 16; j++) {
            out[j] = d * (float)iq4_levels[qs[j] & 15];
            out[j + 16] = d * (float)iq4_levels[qs[j] >> 4];
        }
    }
}

/* IQ4_XS (136 bytes): d, a 16-bit word of the scales' top 2 bits
 * (sub-block j's at bit 2j), 4 bytes of their low nibbles (j's in byte
 * j/2, the low nibble for even j), then 8 sub-blocks of 16 bytes of
 * nibbles as IQ4_NL. Scales have a bias of 32; value = (d*scale)*level */
static void iq4_xs_to_f32(const uint8_t *p, uint64_t n, float *out)
{
    for (uint64_t b = 0; b < n / AS_QK_K; b++, p += 136, out += AS_QK_K) {
        float d = f16_at(p);
        uint16_t high = le16(p + 2);
        for (int j = 0; j < 8; j++) {
            int ls = ((p[4 + j / 2] >> (4 * (j % 2))) & 15) | ((high >> (2 * j)) & 3) << 4;
            float dl = d * (float)(ls - 32);
            const uint8_t *qs = p + 8 + 16 * j;
            for (int l = 0; l < 16; l++) {
                out[32 * j + l] = dl * (float)iq4_levels[qs[l] & 15];
                out[32 * j + l + 16] = dl * (float)iq4_levels[qs[l] >> 4];
            }
        }
    }
}

/* ------------------------------------------------------------------ */
/* the type table */

/* Rows: name, elements and bytes per block (ggml-common.h's block
 * structs), decoder, the offsets of the fp16 d and min scale in a block
 * (-1: none; also for scales of other kinds: Q8_K's float d, MXFP4's and
 * NVFP4's 8-bit scales, IQ1_M's spread over its scale bytes). */
static const as_ggml_traits ggml_table[AS_GGML_TYPE_END] = {
    /*                    name       elems bytes decoder         d    dmin */
    [AS_GGML_F32]     = {"F32",      1,   4,   f32_to_f32,     -1,  -1},
    [AS_GGML_F16]     = {"F16",      1,   2,   f16_to_f32,     -1,  -1},
    [AS_GGML_Q4_0]    = {"Q4_0",     32,  18,  q4_0_to_f32,    0,   -1},
    [AS_GGML_Q4_1]    = {"Q4_1",     32,  20,  q4_1_to_f32,    0,   2},
    [AS_GGML_Q5_0]    = {"Q5_0",     32,  22,  q5_0_to_f32,    0,   -1},
    [AS_GGML_Q5_1]    = {"Q5_1",     32,  24,  q5_1_to_f32,    0,   2},
    [AS_GGML_Q8_0]    = {"Q8_0",     32,  34,  q8_0_to_f32,    0,   -1},
    [AS_GGML_Q8_1]    = {"Q8_1",     32,  36,  NULL,           0,   -1},
    [AS_GGML_Q2_K]    = {"Q2_K",     256, 84,  q2_k_to_f32,    80,  82},
    [AS_GGML_Q3_K]    = {"Q3_K",     256, 110, q3_k_to_f32,    108, -1},
    [AS_GGML_Q4_K]    = {"Q4_K",     256, 144, q4_k_to_f32,    0,   2},
    [AS_GGML_Q5_K]    = {"Q5_K",     256, 176, q5_k_to_f32,    0,   2},
    [AS_GGML_Q6_K]    = {"Q6_K",     256, 210, q6_k_to_f32,    208, -1},
    [AS_GGML_Q8_K]    = {"Q8_K",     256, 292, NULL,           -1,  -1},
    [AS_GGML_IQ2_XXS] = {"IQ2_XXS",  256, 66,  NULL,           0,   -1},
    [AS_GGML_IQ2_XS]  = {"IQ2_XS",   256, 74,  NULL,           0,   -1},
    [AS_GGML_IQ3_XXS] = {"IQ3_XXS",  256, 98,  NULL,           0,   -1},
    [AS_GGML_IQ1_S]   = {"IQ1_S",    256, 50,  NULL,           0,   -1},
    [AS_GGML_IQ4_NL]  = {"IQ4_NL",   32,  18,  iq4_nl_to_f32,  0,   -1},
    [AS_GGML_IQ3_S]   = {"IQ3_S",    256, 110, NULL,           0,   -1},
    [AS_GGML_IQ2_S]   = {"IQ2_S",    256, 82,  NULL,           0,   -1},
    [AS_GGML_IQ4_XS]  = {"IQ4_XS",   256, 136, iq4_xs_to_f32,  0,   -1},
    [AS_GGML_I8]      = {"I8",       1,   1,   NULL,           -1,  -1},
    [AS_GGML_I16]     = {"I16",      1,   2,   NULL,           -1,  -1},
    [AS_GGML_I32]     = {"I32",      1,   4,   NULL,           -1,  -1},
    [AS_GGML_I64]     = {"I64",      1,   8,   NULL,           -1,  -1},
    [AS_GGML_F64]     = {"F64",      1,   8,   NULL,           -1,  -1},
    [AS_GGML_IQ1_M]   = {"IQ1_M",    256, 56,  NULL,           -1,  -1},
    [AS_GGML_BF16]    = {"BF16",     1,   2,   bf16_to_f32,    -1,  -1},
    [AS_GGML_TQ1_0]   = {"TQ1_0",    256, 54,  NULL,           52,  -1},
    [AS_GGML_TQ2_0]   = {"TQ2_0",    256, 66,  NULL,           64,  -1},
    [AS_GGML_MXFP4]   = {"MXFP4",    32,  17,  NULL,           -1,  -1},
    [AS_GGML_NVFP4]   = {"NVFP4",    64,  36,  NULL,           -1,  -1},
    [AS_GGML_Q1_0]    = {"Q1_0",     128, 18,  NULL,           0,   -1},
    [AS_GGML_Q2_0]    = {"Q2_0",     64,  18,  NULL,           0,   -1},
};

const as_ggml_traits *as_ggml_traits_of(as_ggml_type t)
{
    if ((uint32_t)t >= AS_GGML_TYPE_END || !ggml_table[t].name)
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
        for (uint32_t t = 0; t < AS_GGML_TYPE_END; t++) {
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
        char list[AS_TYPE_LIST_CAP];
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
/* the health of blocks' scales */

bool as_ggml_has_scales(as_ggml_type t)
{
    const as_ggml_traits *tr = as_ggml_traits_of(t);
    return tr && tr->d_off >= 0;
}

/* fp16 bits: all-ones exponent is Inf or NaN; magnitudes order as integers */
static bool f16_nonfinite(uint16_t h) { return (h & 0x7c00) == 0x7c00; }

/* Integer tests on the stored bits, no conversion: this runs over every
 * block of every tensor at each load. */
void as_ggml_scan_blocks(as_ggml_type t, const void *src, uint64_t n_blocks, as_block_scan *s)
{
    const as_ggml_traits *tr = as_ggml_traits_of(t);
    memset(s, 0, sizeof *s);
    s->first_bad = UINT64_MAX;
    if (!tr || tr->d_off < 0)
        return;
    const uint8_t *p = src;
    uint16_t max_mag = 0;
    for (uint64_t b = 0; b < n_blocks; b++, p += tr->block_bytes) {
        uint16_t d = le16(p + tr->d_off), dmin = tr->dmin_off >= 0 ? le16(p + tr->dmin_off) : 0;
        if (f16_nonfinite(d) || f16_nonfinite(dmin)) {
            if (s->bad++ == 0) {
                s->first_bad = b;
                s->first_bad_scale = as_f16_to_f32(f16_nonfinite(d) ? d : dmin);
            }
            continue;
        }
        s->zero += (d & 0x7fff) == 0;
        max_mag = (d & 0x7fff) > max_mag ? (d & 0x7fff) : max_mag;
    }
    s->blocks = n_blocks;
    s->max_d = as_f16_to_f32(max_mag);
}

/* ------------------------------------------------------------------ */
/* scalar conversions */

float as_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) /* Inf, or a NaN made quiet, as F16C's conversion and ggml's do */
        return f32_from_bits(sign | 0x7f800000u | (man << 13) | (man ? 0x400000u : 0));
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
