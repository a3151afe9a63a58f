/* Tests for the ggml type table and the scalar conversions (quant.c):
 * f16 and bf16 over every 16-bit pattern and an f32 sweep against a search
 * oracle, Q8_0 quantization against ggml's algorithm (and read back through
 * a parsed tensor), block sizes, byte counts and names of the ggml types,
 * and the decoder refusing every type it has no decoder for. */
#include <criterion/criterion.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/gguf.h"
#include "attnscope/quant.h"

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
    cr_assert(as_ggml_type_supported(AS_GGML_Q8_0));
    cr_assert(!as_ggml_type_supported(AS_GGML_Q4_K));
}

/* ------------------------------------------------------------------ */
/* decoding */

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
    cr_assert_eq(as_dequantize(AS_GGML_Q4_K, blocks, 256, out, &err), AS_ERR);
    cr_assert_str_eq(err.msg, "cannot decode type Q4_K yet (supported: F32, F16, BF16, Q8_0)");
    cr_assert_eq(as_dequantize((as_ggml_type)99, blocks, 32, out, &err), AS_ERR);
    cr_assert_str_eq(err.msg, "cannot decode type 99, which is not a ggml type attnscope knows "
                              "(supported: F32, F16, BF16, Q8_0)");
    for (uint32_t t = 0; t < 40; t++) {
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
    char list[64];
    as_ggml_supported_list(list, sizeof list);
    cr_assert_str_eq(list, "F32, F16, BF16, Q8_0");
}
