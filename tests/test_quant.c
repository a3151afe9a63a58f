/* Tests for the ggml type table and the scalar conversions (quant.c):
 * f16 and bf16 over every 16-bit pattern and an f32 sweep against a search
 * oracle, Q8_0 quantization against ggml's algorithm (and read back through
 * a parsed tensor), block sizes, byte counts and names of the ggml types,
 * the decoder refusing every type it has no decoder for, decoders against
 * blocks built by hand with values worked out by hand, the scan of blocks'
 * scales against their decoded values, and (quant_ggml) the type table,
 * every decoder and the Q8_0 quantizer against ggml's own, bit for bit. */
#include <criterion/criterion.h>
#include <criterion/logging.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "attnscope/gguf.h"
#include "attnscope/quant.h"
#include "attnscope/weight.h"
#include "ggml_ref.h"

/* ------------------------------------------------------------------ */
/* helpers (the same values test_gguf.c's sample model uses) */

static uint32_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(*s >> 33);
}

static void q8_vals(float *v, int n)
{
    uint64_t s = 42;
    for (int i = 0; i < n; i++)
        v[i] = ((float)(lcg(&s) % 20001) - 10000.0f) / 997.0f;
    v[5] = 0.0f;
}

/* ------------------------------------------------------------------ */
/* conversions */

/* nearest f16 to a finite positive x by search over the f16 values, ties to even */
static uint16_t f16_oracle(float x)
{
    if (x >= 65520.0f)
        return 0x7c00;
    unsigned lo = 0, hi = 0x7bff;
    while (lo < hi) { /* largest h with value(h) <= x */
        unsigned mid = (lo + hi + 1) / 2;
        if (as_f16_to_f32((uint16_t)mid) <= x)
            lo = mid;
        else
            hi = mid - 1;
    }
    if (lo == 0x7bff)
        return 0x7bff;
    double dl = (double)x - as_f16_to_f32((uint16_t)lo), dh = (double)as_f16_to_f32((uint16_t)(lo + 1)) - x;
    if (dl < dh)
        return (uint16_t)lo;
    if (dh < dl)
        return (uint16_t)(lo + 1);
    return (uint16_t)((lo & 1) ? lo + 1 : lo);
}

Test(quant, f16_roundtrip_every_value)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = as_f16_to_f32((uint16_t)h);
        bool nan = (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
        if (nan) {
            cr_assert(isnan(f), "0x%04x should be NaN", h);
            cr_assert(isnan(as_f16_to_f32(as_f32_to_f16(f))));
        } else {
            cr_assert_eq(as_f32_to_f16(f), h, "0x%04x -> %g -> 0x%04x", h, f, as_f32_to_f16(f));
        }
    }
    cr_assert_eq(as_f16_to_f32(0x3c00), 1.0f);
    cr_assert_eq(as_f16_to_f32(0x0001), 5.9604644775390625e-08f);
    cr_assert_eq(as_f16_to_f32(0x7bff), 65504.0f);
    cr_assert(isinf(as_f16_to_f32(0xfc00)) && as_f16_to_f32(0xfc00) < 0);
}

Test(quant, f32_to_f16_rounds_to_nearest_even)
{
    /* hand-picked edges */
    cr_assert_eq(as_f32_to_f16(65519.996f), 0x7bff);
    cr_assert_eq(as_f32_to_f16(65520.0f), 0x7c00);
    cr_assert_eq(as_f32_to_f16(1e10f), 0x7c00);
    cr_assert_eq(as_f32_to_f16(-1e10f), 0xfc00);
    cr_assert_eq(as_f32_to_f16(2.98023223876953125e-08f), 0x0000); /* 2^-25: tie to even 0 */
    cr_assert_eq(as_f32_to_f16(2.9802326e-08f), 0x0001);           /* just above 2^-25 */
    cr_assert_eq(as_f32_to_f16(8.94069671630859375e-08f), 0x0002); /* 1.5 * 2^-24: tie to even 2 */
    cr_assert_eq(as_f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);        /* tie: stays even */
    cr_assert_eq(as_f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);        /* tie: rounds up to even */
    cr_assert_eq(as_f32_to_f16(6.1035156e-05f), 0x0400);
    cr_assert_eq(as_f32_to_f16(-0.0f), 0x8000);
    cr_assert_eq(as_f32_to_f16(INFINITY), 0x7c00);
    cr_assert(isnan(as_f16_to_f32(as_f32_to_f16(NAN))));
    cr_assert_eq(as_f32_to_f16(1e-45f), 0x0000); /* f32 subnormal */
    /* a sweep over the f32 range against the search oracle */
    for (uint64_t u = 0; u < 0x7f800000u; u += 0x1003) {
        float x;
        uint32_t b = (uint32_t)u;
        memcpy(&x, &b, 4);
        uint16_t want = f16_oracle(x);
        cr_assert_eq(as_f32_to_f16(x), want, "x=%a", x);
        cr_assert_eq(as_f32_to_f16(-x), want | 0x8000, "x=-%a", x);
    }
}

Test(quant, bf16_conversions)
{
    for (uint32_t h = 0; h < 65536; h++) {
        float f = as_bf16_to_f32((uint16_t)h);
        if (isnan(f))
            cr_assert(isnan(as_bf16_to_f32(as_f32_to_bf16(f))));
        else
            cr_assert_eq(as_f32_to_bf16(f), h);
    }
    cr_assert_eq(as_f32_to_bf16(1.0f), 0x3f80);
    float x;
    uint32_t b = 0x3f808000u; /* exactly between 0x3f80 and 0x3f81: to even */
    memcpy(&x, &b, 4);
    cr_assert_eq(as_f32_to_bf16(x), 0x3f80);
    b = 0x3f818000u; /* between 0x3f81 and 0x3f82: to even (up) */
    memcpy(&x, &b, 4);
    cr_assert_eq(as_f32_to_bf16(x), 0x3f82);
    b = 0x3f808001u;
    memcpy(&x, &b, 4);
    cr_assert_eq(as_f32_to_bf16(x), 0x3f81);
    cr_assert_eq(as_f32_to_bf16(3.4028235e38f), 0x7f80); /* FLT_MAX rounds up to inf */
    cr_assert(isnan(as_bf16_to_f32(as_f32_to_bf16(NAN))));
    b = 0x7f800001u; /* a signalling NaN whose payload is only in the low bits stays NaN */
    memcpy(&x, &b, 4);
    cr_assert(isnan(as_bf16_to_f32(as_f32_to_bf16(x))));
}

Test(quant, q8_0_quantization_matches_ggml)
{
    float x[64], back[64];
    uint8_t q[68];
    q8_vals(x, 64);
    for (int i = 32; i < 64; i++)
        x[i] = 0.0f; /* an all-zero block: d = 0, q = 0 */
    as_quantize_q8_0(x, 64, q);
    float amax = 0;
    for (int j = 0; j < 32; j++)
        amax = fmaxf(amax, fabsf(x[j]));
    float d = amax / 127, d16 = as_f16_to_f32((uint16_t)(q[0] | q[1] << 8));
    cr_assert_eq(d16, as_f16_to_f32(as_f32_to_f16(d)));
    for (int j = 0; j < 32; j++)
        cr_assert_eq((int8_t)q[2 + j], (int8_t)roundf(x[j] * (1.0f / d)), "j=%d", j);
    cr_assert_eq(q[34] | q[35], 0);
    for (int j = 0; j < 32; j++)
        cr_assert_eq(q[36 + j], 0);
    /* dequantize through a parsed tensor */
    as_gguf_writer *w = as_gguf_writer_new(3);
    as_error err;
    uint64_t ne[1] = {64};
    cr_assert_eq(as_gguf_writer_add_tensor(w, "q", AS_GGML_Q8_0, 1, ne, q, &err), AS_OK);
    uint8_t *buf;
    size_t n;
    as_gguf *g;
    cr_assert_eq(as_gguf_writer_to_memory(w, &buf, &n, &err), AS_OK);
    cr_assert_eq(as_gguf_parse(&g, buf, n, "q.gguf", &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_tensor_row_f32(&g->tensors[0], 0, back, &err), AS_OK);
    for (int j = 0; j < 64; j++) {
        cr_assert_eq(back[j], d16 * (float)(int8_t)q[2 + j + (j >= 32 ? 2 : 0)]);
        cr_assert(fabsf(back[j] - x[j]) <= d / 2 + 127 * fabsf(d - d16) + 1e-6f, "j=%d", j);
    }
    as_gguf_close(g);
    free(buf);
    as_gguf_writer_free(w);
}

Test(quant, type_tables)
{
    cr_assert_eq(as_ggml_nbytes(AS_GGML_F32, 10), 40);
    cr_assert_eq(as_ggml_nbytes(AS_GGML_BF16, 10), 20);
    cr_assert_eq(as_ggml_nbytes(AS_GGML_Q8_0, 64), 68);
    cr_assert_eq(as_ggml_nbytes(AS_GGML_Q4_0, 32), 18);
    cr_assert_eq(as_ggml_nbytes(AS_GGML_Q4_K, 512), 288);
    cr_assert_eq(as_ggml_nbytes(AS_GGML_Q6_K, 256), 210);
    cr_assert_eq(as_ggml_nbytes(AS_GGML_Q8_K, 256), 292);
    cr_assert_eq(as_ggml_nbytes(AS_GGML_I64, 3), 24);
    cr_assert_eq(as_ggml_nbytes(AS_GGML_Q8_0, 33), 0);          /* not whole blocks */
    cr_assert_eq(as_ggml_nbytes((as_ggml_type)4, 32), 0);        /* removed Q4_2 */
    cr_assert_eq(as_ggml_nbytes((as_ggml_type)99, 32), 0);
    cr_assert_eq(as_ggml_nbytes(AS_GGML_F32, 1ull << 62), 0);   /* overflow */
    cr_assert_str_eq(as_ggml_type_name(AS_GGML_Q4_K), "Q4_K");
    cr_assert_str_eq(as_ggml_type_name(AS_GGML_BF16), "BF16");
    cr_assert_str_eq(as_ggml_type_name((as_ggml_type)99), "unknown");
    cr_assert_eq(as_ggml_nbytes(AS_GGML_IQ4_XS, 256), 136);
    cr_assert_eq(as_ggml_nbytes(AS_GGML_Q2_0, 128), 36);
    cr_assert_eq(as_ggml_nbytes((as_ggml_type)31, 32), 0);        /* removed Q4_0_4_4 */
    cr_assert_str_eq(as_ggml_type_name(AS_GGML_IQ2_XXS), "IQ2_XXS");
    cr_assert_str_eq(as_ggml_type_name(AS_GGML_MXFP4), "MXFP4");
    cr_assert(as_ggml_type_supported(AS_GGML_Q8_0));
    cr_assert(as_ggml_type_supported(AS_GGML_Q4_K));
    cr_assert(!as_ggml_type_supported(AS_GGML_IQ2_XXS));
    cr_assert(!as_ggml_type_supported(AS_GGML_TQ1_0));
    for (int t = 0; t < AS_GGML_TYPE_END + 4; t++) /* what the loader reads is the table's decoder column */
        cr_assert_eq(as_weight_type_readable((as_ggml_type)t), as_ggml_type_supported((as_ggml_type)t), "type %d", t);
}

/* ------------------------------------------------------------------ */
/* decoding */

#define SUPPORTED "F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS"

/* The decoder once read any type it did not know as Q8_0 blocks. */
Test(quant, dequantize_refuses_types_without_a_decoder)
{
    uint8_t blocks[2 * 292];
    float out[512];
    as_error err;
    for (size_t i = 0; i < sizeof blocks; i++)
        blocks[i] = (uint8_t)(37 * i + 1); /* as Q8_0 these bytes would decode to nonzero floats */
    for (int i = 0; i < 512; i++)
        out[i] = 7.0f;
    cr_assert_eq(as_dequantize(AS_GGML_IQ2_XXS, blocks, 256, out, &err), AS_ERR);
    cr_assert_str_eq(err.msg, "cannot decode type IQ2_XXS yet (supported: " SUPPORTED ")");
    cr_assert_eq(as_dequantize((as_ggml_type)99, blocks, 32, out, &err), AS_ERR);
    cr_assert_str_eq(err.msg, "cannot decode type 99, which is not a ggml type attnscope knows "
                              "(supported: " SUPPORTED ")");
    for (uint32_t t = 0; t < AS_GGML_TYPE_END + 8; t++) {
        if (as_ggml_type_supported((as_ggml_type)t))
            continue;
        const as_ggml_traits *tr = as_ggml_traits_of((as_ggml_type)t);
        uint64_t n = tr ? tr->block_elems : 32;
        cr_assert_eq(as_dequantize((as_ggml_type)t, blocks, n, out, &err), AS_ERR, "type %u decoded", t);
        if (tr)
            cr_assert(strstr(err.msg, tr->name), "type %u: %s", t, err.msg);
    }
    for (int i = 0; i < 512; i++)
        cr_assert_eq(out[i], 7.0f, "out[%d] written by a refused decode", i);
    /* a partial block is refused too, rather than left half-written */
    cr_assert_eq(as_dequantize(AS_GGML_Q8_0, blocks, 33, out, &err), AS_ERR);
    cr_assert(strstr(err.msg, "not a whole number of Q8_0 blocks"), "%s", err.msg);
}

Test(quant, dequantize_decodes_each_supported_type)
{
    const float x[32] = {1.0f, -2.5f, 0.0f, 65504.0f, -0.125f, 3.0f};
    uint8_t f32[128], f16[64], bf16[64], q8[34];
    float out[32];
    as_error err;
    for (int i = 0; i < 32; i++) {
        uint16_t h = as_f32_to_f16(x[i]), b = as_f32_to_bf16(x[i]);
        memcpy(f32 + 4 * i, &x[i], 4);
        f16[2 * i] = (uint8_t)h, f16[2 * i + 1] = (uint8_t)(h >> 8);
        bf16[2 * i] = (uint8_t)b, bf16[2 * i + 1] = (uint8_t)(b >> 8);
    }
    as_quantize_q8_0(x, 32, q8);
    cr_assert_eq(as_dequantize(AS_GGML_F32, f32, 32, out, &err), AS_OK, "%s", err.msg);
    for (int i = 0; i < 32; i++)
        cr_assert_eq(out[i], x[i]);
    cr_assert_eq(as_dequantize(AS_GGML_F16, f16, 32, out, &err), AS_OK, "%s", err.msg);
    for (int i = 0; i < 32; i++)
        cr_assert_eq(out[i], x[i]);
    cr_assert_eq(as_dequantize(AS_GGML_BF16, bf16, 32, out, &err), AS_OK, "%s", err.msg);
    for (int i = 0; i < 32; i++)
        cr_assert_eq(out[i], as_bf16_to_f32(as_f32_to_bf16(x[i])));
    cr_assert_eq(as_dequantize(AS_GGML_Q8_0, q8, 32, out, &err), AS_OK, "%s", err.msg);
    float d = as_f16_to_f32((uint16_t)(q8[0] | q8[1] << 8));
    for (int i = 0; i < 32; i++)
        cr_assert_eq(out[i], d * (float)(int8_t)q8[2 + i]);
    char list[AS_TYPE_LIST_CAP];
    as_ggml_supported_list(list, sizeof list);
    cr_assert_str_eq(list, SUPPORTED);
    cr_assert_lt(strlen(SUPPORTED), AS_TYPE_LIST_CAP);
}

/* ------------------------------------------------------------------ */
/* decoders against blocks built by hand: each expected value is worked
 * out in the comments from the block's definition in ggml-common.h */

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }

/* out[i] == want for i in [lo, hi) */
static void expect_run(const float *out, int lo, int hi, float want, const char *type)
{
    for (int i = lo; i < hi; i++)
        cr_assert_eq(out[i], want, "%s value %d: %g, want %g", type, i, out[i], want);
}

static void decode_ok(as_ggml_type t, const uint8_t *block, float *out)
{
    as_error err;
    const as_ggml_traits *tr = as_ggml_traits_of(t);
    cr_assert_eq(as_dequantize(t, block, tr->block_elems, out, &err), AS_OK, "%s", err.msg);
}

Test(quant, q4_0_and_q5_1_by_hand)
{
    uint8_t b[24] = {0};
    float out[32];
    put16(b, 0x3400); /* d = 0.25 */
    b[2] = 0x9f;      /* value 0: low nibble 15 -> (15-8)*0.25; value 16: high nibble 9 -> 0.25 */
    decode_ok(AS_GGML_Q4_0, b, out);
    cr_assert_eq(out[0], 1.75f);
    cr_assert_eq(out[16], 0.25f);
    expect_run(out, 1, 16, -2.0f, "Q4_0"); /* nibble 0 -> (0-8)*0.25 */
    expect_run(out, 17, 32, -2.0f, "Q4_0");

    memset(b, 0, sizeof b);
    put16(b, 0x3800);     /* d = 0.5 */
    put16(b + 2, 0xbc00); /* m = -1 */
    b[4] = 0x01;          /* fifth bits: value 0 ... */
    b[6] = 0x02;          /* ... and value 17 (bit 17 of the little-endian word) */
    b[8] = 0x03;          /* value 0: 3 | 16 = 19 -> 19*0.5 - 1 = 8.5 */
    b[9] = 0x40;          /* value 17: high nibble 4 | 16 = 20 -> 9; value 1: 0 -> -1 */
    decode_ok(AS_GGML_Q5_1, b, out);
    cr_assert_eq(out[0], 8.5f);
    cr_assert_eq(out[17], 9.0f);
    expect_run(out, 1, 17, -1.0f, "Q5_1");
    expect_run(out, 18, 32, -1.0f, "Q5_1");
}

/* The 6-bit scales and mins of sub-blocks 4..7 are split over three bytes. */
Test(quant, q4_k_by_hand)
{
    uint8_t b[144] = {0};
    float out[256];
    put16(b, 0x3c00);     /* d = 1 */
    put16(b + 2, 0x3800); /* dmin = 0.5 */
    uint8_t *sc = b + 4, *qs = b + 16;
    sc[0] = 1, sc[4] = 2;          /* sub-block 0: scale 1, min 2 */
    sc[1] = 0x80 | 3, sc[5] = 0xc0 | 4; /* sub-block 1: scale 3, min 4; top bits of 5's: 2 and 3 */
    sc[9] = 0x25;                  /* sub-block 5: scale 5 | 2<<4 = 37, min 2 | 3<<4 = 50 */
    qs[0] = 0x7a;                  /* value 0: q 10 -> 1*1*10 - 0.5*2 = 9; value 32: q 7 -> 3*7 - 2 = 19 */
    qs[64 + 3] = 0xf0;             /* sub-block 5 reads high nibbles of bytes 64..95: value 163: 37*15 - 25 */
    decode_ok(AS_GGML_Q4_K, b, out);
    cr_assert_eq(out[0], 9.0f);
    expect_run(out, 1, 32, -1.0f, "Q4_K");
    cr_assert_eq(out[32], 19.0f);
    expect_run(out, 33, 64, -2.0f, "Q4_K");
    expect_run(out, 64, 160, 0.0f, "Q4_K");
    cr_assert_eq(out[163], 530.0f);
    expect_run(out, 160, 163, -25.0f, "Q4_K");
    expect_run(out, 164, 192, -25.0f, "Q4_K");
    expect_run(out, 192, 256, 0.0f, "Q4_K");
}

Test(quant, q3_k_by_hand)
{
    uint8_t b[110] = {0};
    float out[256];
    uint8_t *hmask = b, *qs = b + 32, *sc = b + 96;
    put16(b + 108, 0x3800); /* d = 0.5 */
    /* every scale's top 2 bits 2 (6-bit 32: scale 0) but scale 13's (bits 6-7 of byte 9) */
    sc[8] = sc[10] = sc[11] = 0xaa, sc[9] = 0x2a;
    sc[0] = 0x01; /* scale 0: 1 | 2<<4 = 33 -> 1 */
    sc[5] = 0xa0; /* scale 13: high nibble of byte 5, 10 | 0<<4 -> 10 - 32 = -22 */
    qs[0] = 0x03, hmask[0] = 0x01; /* value 0: q 3, high bit set -> 0.5*1*3 = 1.5 */
    /* values 1..15: q 0, high bit clear -> 0 - 4 -> 0.5*1*-4 = -2 */
    /* value 208 (second half, bits 4-5 of byte 16 of its 32, high bit 6 of hmask byte 16) */
    qs[32 + 16] = 0x20, hmask[16] = 0x40; /* q 2 -> 0.5*-22*2 = -22 */
    decode_ok(AS_GGML_Q3_K, b, out);
    cr_assert_eq(out[0], 1.5f);
    expect_run(out, 1, 16, -2.0f, "Q3_K");
    expect_run(out, 16, 208, 0.0f, "Q3_K");
    cr_assert_eq(out[208], -22.0f);
    expect_run(out, 209, 224, 44.0f, "Q3_K"); /* 0.5*-22*(0-4) */
    expect_run(out, 224, 256, 0.0f, "Q3_K");
}

Test(quant, q6_k_and_iq4_xs_by_hand)
{
    uint8_t b[210] = {0};
    float out[256];
    uint8_t *ql = b, *qh = b + 128;
    int8_t *sc = (int8_t *)(b + 192);
    put16(b + 208, 0x4000); /* d = 2 */
    sc[0] = 3, sc[14] = -5;
    ql[0] = 0x05, qh[0] = 0x02;  /* value 0: 5 | 2<<4 = 37 -> 2*3*(37-32) = 30 */
    ql[96] = 0xb0, qh[32] = 0x40; /* value 224 (half 1, k 3: high nibble of low byte 64+32, bits 6-7 of high byte 32): 11 | 1<<4 = 27 -> 2*-5*-5 */
    decode_ok(AS_GGML_Q6_K, b, out);
    cr_assert_eq(out[0], 30.0f);
    expect_run(out, 1, 16, -192.0f, "Q6_K"); /* 2*3*(0-32) */
    expect_run(out, 16, 224, 0.0f, "Q6_K");
    cr_assert_eq(out[224], 50.0f);
    expect_run(out, 225, 240, 320.0f, "Q6_K"); /* 2*-5*-32 */
    expect_run(out, 240, 256, 0.0f, "Q6_K");

    uint8_t x[136] = {0};
    put16(x, 0x3c00);     /* d = 1 */
    put16(x + 2, 0x0080); /* sub-block 3's top scale bits (bits 6-7): 2 */
    x[4 + 1] = 0x80;      /* its low nibble (high nibble of byte 1): 8 -> 40 - 32 = 8; the others 0 - 32 */
    x[8 + 16 * 3] = 0x3f; /* value 96: level 15 = 113 -> 904; value 112: level 3 = -65 -> -520 */
    decode_ok(AS_GGML_IQ4_XS, x, out);
    cr_assert_eq(out[96], 904.0f);
    cr_assert_eq(out[112], -520.0f);
    expect_run(out, 97, 112, -1016.0f, "IQ4_XS"); /* 8 * level 0 (-127) */
    expect_run(out, 113, 128, -1016.0f, "IQ4_XS");
    expect_run(out, 0, 96, 4064.0f, "IQ4_XS"); /* -32 * -127 */
    expect_run(out, 128, 256, 4064.0f, "IQ4_XS");
}

/* ------------------------------------------------------------------ */
/* the scan of blocks' scales */

static void decode_ok_n(as_ggml_type t, const uint8_t *src, uint64_t n, float *out)
{
    as_error err;
    cr_assert_eq(as_dequantize(t, src, n, out, &err), AS_OK, "%s", err.msg);
}

static void random_bytes(uint8_t *p, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(lcg(&seed) >> 7);
}

/* On random blocks, where every scale pattern turns up: a block the scan
 * calls bad decodes to no finite value, any other to finite values only. */
Test(quant, scan_finds_exactly_the_blocks_that_decode_to_nan_or_inf)
{
    enum { N = 4096 };
    uint8_t *bytes = malloc((size_t)N * 210);
    float *out = malloc((size_t)N * 256 * sizeof *out);
    int types = 0;
    for (uint32_t t = 0; t < AS_GGML_TYPE_END; t++) {
        const as_ggml_traits *tr = as_ggml_traits_of((as_ggml_type)t);
        if (!tr || !tr->to_f32 || tr->block_elems == 1)
            continue;
        cr_assert(as_ggml_has_scales((as_ggml_type)t), "%s", tr->name);
        types++;
        random_bytes(bytes, (size_t)N * tr->block_bytes, 1000 + t);
        as_block_scan s;
        as_ggml_scan_blocks((as_ggml_type)t, bytes, N, &s);
        decode_ok_n((as_ggml_type)t, bytes, (uint64_t)N * tr->block_elems, out);
        uint64_t bad = 0, zero = 0, first = UINT64_MAX;
        float max_d = 0;
        for (uint64_t b = 0; b < N; b++) {
            uint64_t nonfinite = 0;
            for (uint32_t j = 0; j < tr->block_elems; j++)
                nonfinite += !isfinite(out[b * tr->block_elems + j]);
            cr_assert(nonfinite == 0 || nonfinite == tr->block_elems, "%s block %llu: %llu of %u non-finite",
                      tr->name, (unsigned long long)b, (unsigned long long)nonfinite, tr->block_elems);
            float d = as_f16_to_f32((uint16_t)(bytes[b * tr->block_bytes + tr->d_off] |
                                               bytes[b * tr->block_bytes + tr->d_off + 1] << 8));
            if (nonfinite) {
                first = bad++ ? first : b;
                continue;
            }
            zero += d == 0.0f;
            max_d = fabsf(d) > max_d ? fabsf(d) : max_d;
        }
        cr_assert_gt(bad, 0, "%s: random scales should include NaN and Inf", tr->name);
        cr_assert_eq(s.blocks, N);
        cr_assert_eq(s.bad, bad, "%s: scan %llu bad blocks, decoding %llu", tr->name,
                     (unsigned long long)s.bad, (unsigned long long)bad);
        cr_assert_eq(s.first_bad, first, "%s", tr->name);
        cr_assert(!isfinite(s.first_bad_scale), "%s", tr->name);
        cr_assert_eq(s.zero, zero, "%s", tr->name);
        cr_assert_eq(s.max_d, max_d, "%s: %g vs %g", tr->name, s.max_d, max_d);
    }
    cr_assert_eq(types, 12);
    as_block_scan s;
    as_ggml_scan_blocks(AS_GGML_F32, bytes, 4, &s); /* no scales: nothing to say */
    cr_assert(s.blocks == 0 && s.bad == 0 && s.first_bad == UINT64_MAX);
    free(bytes), free(out);
}

/* ------------------------------------------------------------------ */
/* against ggml's own quantizers and decoders (tests/ggml_ref.h) */

/* Opens ggml's library, or skips the test saying so where everyone sees
 * it; a library of another release fails. */
static void ggml_or_skip(const char *test)
{
    char why[512];
    int rc = ggml_ref_open(why, sizeof why);
    if (rc == GGML_REF_MISSING) {
        fprintf(stderr, "\n**** SKIP quant_ggml::%s: NOT CHECKED AGAINST GGML: %s ****\n\n", test, why);
        cr_skip_test("not checked against ggml: %s", why);
    }
    cr_assert_eq(rc, GGML_REF_OK, "%s", why);
    cr_log_info("ggml %s from %s", ggml_ref_version(), ggml_ref_path());
}

/* Both tables name the same types, with the same blocks; a number ggml
 * retired has no row here. */
Test(quant_ggml, type_table_matches_ggml)
{
    ggml_or_skip("type_table_matches_ggml");
    char undecoded[256] = "";
    for (int t = 0; t < AS_GGML_TYPE_END; t++) {
        ggml_ref_type g = ggml_ref_type_of(t);
        const as_ggml_traits *tr = as_ggml_traits_of((as_ggml_type)t);
        cr_assert_eq(g.name != NULL, tr != NULL, "type %d: ggml %s, attnscope %s", t, g.name ? g.name : "-",
                     tr ? tr->name : "-");
        if (!tr)
            continue;
        cr_assert(!strcasecmp(g.name, tr->name), "type %d: ggml %s, attnscope %s", t, g.name, tr->name);
        cr_assert_eq(g.block_elems, tr->block_elems, "%s", tr->name);
        cr_assert_eq(g.block_bytes, tr->block_bytes, "%s", tr->name);
        if (g.can_decode && !tr->to_f32 && strlen(undecoded) + 16 < sizeof undecoded)
            snprintf(undecoded + strlen(undecoded), sizeof undecoded - strlen(undecoded), " %s", tr->name);
    }
    cr_log_info("ggml decodes, attnscope not yet:%s", undecoded);
    ggml_ref_close();
}

enum { COLS = 512, ROWS = 8 }; /* two super-blocks a row */

/* Rows for the quantizers: ordinary weights, zeros, a constant, values
 * whose scales overflow fp16 (3e7) or vanish in it (1e-9), a lone outlier,
 * and small integers. */
static void ggml_rows(float *x)
{
    uint64_t s = 7;
    for (int i = 0; i < ROWS * COLS; i++)
        x[i] = ((float)(lcg(&s) % 20001) - 10000.0f) / 40000.0f;
    for (int j = 0; j < COLS; j++) {
        x[1 * COLS + j] = 0.0f;
        x[2 * COLS + j] = 0.75f;
        x[3 * COLS + j] = (j % 2 ? -3e7f : 3e7f) * (float)(j % 7 + 1) / 7;
        x[4 * COLS + j] = (float)(j % 5) * 1e-9f;
        x[6 * COLS + j] = (float)(j % 9) - 4.0f;
    }
    x[5 * COLS + 77] = 400.0f;
}

/* Scales ggml's quantizer would not write: NaN, +-Inf, -0 and the smallest
 * subnormal d, and a NaN min where the type has one. */
static void poison_scales(const as_ggml_traits *tr, uint8_t *q)
{
    if (tr->d_off < 0)
        return;
    size_t bb = tr->block_bytes, per_row = COLS / tr->block_elems;
    const uint16_t d[] = {0x7e00, 0x7c00, 0xfc00, 0x8000, 0x0001, 0xfd01 /* a signalling NaN */};
    for (size_t k = 0; k < sizeof d / sizeof *d; k++)
        put16(q + (k * per_row + k % per_row) * bb + tr->d_off, d[k]);
    if (tr->dmin_off < 0)
        return;
    put16(q + (7 * per_row) * bb + tr->dmin_off, 0x7e00);
    /* both NaN: which payload wins is the order of the operations */
    put16(q + (7 * per_row + 1) * bb + tr->d_off, 0x7e01);
    put16(q + (7 * per_row + 1) * bb + tr->dmin_off, 0xfe02);
}

/* float bits, so NaNs compare too (their sign and payload) */
static uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void expect_same_bits(const as_ggml_traits *tr, const char *what, const float *ours, const float *theirs,
                             size_t n)
{
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(bits_of(ours[i]), bits_of(theirs[i]),
                     "%s, %s, value %zu (block %zu): attnscope %a (0x%08x), ggml %a (0x%08x)", tr->name, what, i,
                     i / tr->block_elems, ours[i], bits_of(ours[i]), theirs[i], bits_of(theirs[i]));
}

/* Every type attnscope decodes: rows quantized by ggml (then given broken
 * scales), and rows of random bytes (every bit pattern of every field),
 * decoded by both, equal to the bit. */
Test(quant_ggml, every_decoder_equals_ggml_bit_for_bit, .timeout = 60)
{
    ggml_or_skip("every_decoder_equals_ggml_bit_for_bit");
    float *x = malloc(sizeof(float) * ROWS * COLS);
    float *ours = malloc(sizeof(float) * ROWS * COLS), *theirs = malloc(sizeof(float) * ROWS * COLS);
    uint8_t *q = malloc((size_t)ROWS * COLS * 4);
    ggml_rows(x);
    int checked = 0;
    for (int t = 0; t < AS_GGML_TYPE_END; t++) {
        const as_ggml_traits *tr = as_ggml_traits_of((as_ggml_type)t);
        if (!tr || !tr->to_f32)
            continue;
        ggml_ref_type g = ggml_ref_type_of(t);
        size_t bytes = (size_t)as_ggml_nbytes((as_ggml_type)t, (uint64_t)ROWS * COLS);
        if (!g.can_decode) { /* F32: ggml has no decoder to compare with; its bytes are the values */
            cr_assert_eq(t, AS_GGML_F32, "ggml cannot decode %s", tr->name);
            continue;
        }
        cr_assert_eq(ggml_ref_quantize(t, x, q, ROWS, COLS), bytes, "%s", tr->name);
        poison_scales(tr, q);
        decode_ok_n((as_ggml_type)t, q, (uint64_t)ROWS * COLS, ours);
        ggml_ref_decode(t, q, theirs, ROWS * COLS);
        expect_same_bits(tr, "quantized by ggml", ours, theirs, (size_t)ROWS * COLS);
        int overflowed = 0; /* the 3e7 row: scales past fp16's range, where the type's arithmetic lets them */
        for (int j = 0; j < COLS; j++)
            overflowed += !isfinite(theirs[3 * COLS + j]);
        random_bytes(q, bytes, 77 + (uint64_t)t);
        decode_ok_n((as_ggml_type)t, q, (uint64_t)ROWS * COLS, ours);
        ggml_ref_decode(t, q, theirs, ROWS * COLS);
        expect_same_bits(tr, "random bytes", ours, theirs, (size_t)ROWS * COLS);
        cr_log_info("%s: %d values equal to ggml's, bit for bit (%d of the 3e7 row not finite)", tr->name,
                    2 * ROWS * COLS, overflowed);
        checked++;
    }
    cr_assert_eq(checked, 14); /* every decoder but F32's */
    free(x), free(ours), free(theirs), free(q);
    ggml_ref_close();
}

/* as_quantize_q8_0 (the writer's and the bench's) writes ggml's bytes. */
Test(quant_ggml, q8_0_quantizer_equals_ggml)
{
    ggml_or_skip("q8_0_quantizer_equals_ggml");
    float *x = malloc(sizeof(float) * ROWS * COLS);
    size_t bytes = (size_t)as_ggml_nbytes(AS_GGML_Q8_0, (uint64_t)ROWS * COLS);
    uint8_t *ours = malloc(bytes), *theirs = malloc(bytes);
    ggml_rows(x);
    x[3 * COLS] = 1e-45f; /* a subnormal float */
    as_quantize_q8_0(x, (uint64_t)ROWS * COLS, ours);
    cr_assert_eq(ggml_ref_quantize(AS_GGML_Q8_0, x, theirs, ROWS, COLS), bytes);
    for (size_t i = 0; i < bytes; i++)
        cr_assert_eq(ours[i], theirs[i], "byte %zu of block %zu: attnscope 0x%02x, ggml 0x%02x", i, i / 34, ours[i],
                     theirs[i]);
    free(x), free(ours), free(theirs);
    ggml_ref_close();
}
