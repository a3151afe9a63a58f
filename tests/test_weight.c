/* Typed weights (weight.c, and the row kernels in kernels.c) against the
 * reference decoders (quant.c's as_dequantize, written from ggml's block
 * layouts) and a double-precision dot product. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/kernels.h"
#include "attnscope/pool.h"
#include "attnscope/weight.h"

static float frand(uint32_t *s)
{
    *s = *s * 1664525u + 1013904223u;
    return ((float)(*s >> 8) / (float)(1u << 24) - 0.5f) * 4.0f;
}

/* rows x cols random values stored as `type`; returns the stored bytes. */
static uint8_t *make(as_ggml_type type, int rows, int cols, uint32_t seed)
{
    size_t n = (size_t)rows * cols;
    float *f = malloc(n * sizeof *f);
    uint8_t *out = malloc(as_ggml_nbytes(type, n));
    for (size_t i = 0; i < n; i++)
        f[i] = frand(&seed);
    if (type == AS_GGML_Q8_0)
        as_quantize_q8_0(f, n, out);
    else if (type == AS_GGML_F32)
        memcpy(out, f, n * sizeof *f);
    for (size_t i = 0; (type == AS_GGML_F16 || type == AS_GGML_BF16) && i < n; i++) {
        uint16_t h = type == AS_GGML_F16 ? as_f32_to_f16(f[i]) : as_f32_to_bf16(f[i]);
        memcpy(out + 2 * i, &h, 2);
    }
    free(f);
    return out;
}

static const as_ggml_type types[] = {AS_GGML_F32, AS_GGML_F16, AS_GGML_BF16, AS_GGML_Q8_0};
/* Q8_0 needs whole blocks of 32; the others take any width, including
 * widths that end in a partial vector. */
static const int widths[] = {32, 64, 96, 4096, 33, 7};

Test(weight, rows_decode_exactly_as_the_reference)
{
    for (size_t t = 0; t < 4; t++)
        for (size_t c = 0; c < 6; c++) {
            int cols = widths[c], rows = 5;
            if (types[t] == AS_GGML_Q8_0 && cols % 32)
                continue;
            uint8_t *data = make(types[t], rows, cols, 7u + (uint32_t)c);
            as_weight w = {data, types[t], rows, cols, (size_t)as_ggml_nbytes(types[t], (uint64_t)cols)};
            float *got = malloc((size_t)cols * sizeof *got), *want = malloc((size_t)cols * sizeof *want);
            as_error err;
            for (int r = 0; r < rows; r++) {
                as_weight_row(&w, r, got);
                cr_assert_eq(as_dequantize(types[t], data + (size_t)r * w.row_bytes, (uint64_t)cols, want, &err), AS_OK);
                cr_assert_eq(memcmp(got, want, (size_t)cols * sizeof *got), 0, "%s cols %d row %d differs",
                             as_ggml_type_name(types[t]), cols, r);
            }
            free(got), free(want), free(data);
        }
}

/* The fused dot against Σ in double over the decoded row: float32 sums of
 * up to 4096 terms of size ~4 stay within 1e-5 relative to Σ|w·x|. */
Test(weight, fused_dots_and_matvec_match_a_double_reference)
{
    as_pool *pool = NULL;
    as_error err;
    cr_assert_eq(as_pool_new(&pool, 2, &err), AS_OK);
    for (size_t t = 0; t < 4; t++)
        for (size_t c = 0; c < 6; c++) {
            int cols = widths[c], rows = 37; /* not a multiple of the threads' shares */
            if (types[t] == AS_GGML_Q8_0 && cols % 32)
                continue;
            uint8_t *data = make(types[t], rows, cols, 99u + (uint32_t)c);
            as_weight w = {data, types[t], rows, cols, (size_t)as_ggml_nbytes(types[t], (uint64_t)cols)};
            uint32_t seed = 5;
            float *x = malloc((size_t)cols * sizeof *x), *row = malloc((size_t)cols * sizeof *row);
            float y1[37], y2[37], y3[37];
            for (int i = 0; i < cols; i++)
                x[i] = frand(&seed);
            as_matvec(NULL, x, &w, NULL, y1);
            as_matvec(pool, x, &w, NULL, y2);
            as_linear(x, 1, &w, NULL, y3);
            for (int r = 0; r < rows; r++) {
                as_weight_row(&w, r, row);
                double dot = 0, mag = 0;
                for (int i = 0; i < cols; i++) {
                    dot += (double)row[i] * x[i];
                    mag += fabs((double)row[i] * x[i]);
                }
                float d = as_weight_dot(&w, r, x);
                cr_assert_float_eq(d, dot, 1e-5 * mag + 1e-6, "%s cols %d row %d: %g vs %g",
                                   as_ggml_type_name(types[t]), cols, r, d, dot);
                cr_assert_eq(y1[r], d, "matvec row %d is not the row's dot", r);
                cr_assert_eq(y2[r], y1[r], "2 threads differ from 1 at row %d", r);
                cr_assert_eq(y3[r], y1[r], "as_linear of one position differs at row %d", r);
            }
            free(x), free(row), free(data);
        }
    as_pool_free(pool);
}

/* Many positions decode rows into panels for sgemm: within 1e-4 relative
 * of the one-position kernels (sgemm sums in its own order). */
Test(weight, panels_agree_with_one_position)
{
    for (size_t t = 1; t < 4; t++) {
        int rows = 300, cols = 96, n = 5; /* more rows than one panel */
        uint8_t *data = make(types[t], rows, cols, 3);
        as_weight w = {data, types[t], rows, cols, (size_t)as_ggml_nbytes(types[t], (uint64_t)cols)};
        uint32_t seed = 11;
        float *x = malloc((size_t)n * cols * sizeof *x), *y = malloc((size_t)n * rows * sizeof *y), b[300];
        float one[300];
        for (int i = 0; i < n * cols; i++)
            x[i] = frand(&seed);
        for (int r = 0; r < rows; r++)
            b[r] = frand(&seed);
        as_linear(x, n, &w, b, y);
        for (int i = 0; i < n; i++) {
            as_matvec(NULL, x + (size_t)i * cols, &w, b, one);
            for (int r = 0; r < rows; r++)
                cr_assert_float_eq(y[(size_t)i * rows + r], one[r], 1e-4 * (1 + fabsf(one[r])), "%s pos %d row %d",
                                   as_ggml_type_name(types[t]), i, r);
        }
        free(x), free(y), free(data);
    }
}

Test(weight, unreadable_types_are_refused_by_name)
{
    as_gguf_tensor t = {.name = "blk.0.ffn_up.weight", .n_dims = 2, .ne = {256, 2, 1, 1}, .type = AS_GGML_Q4_K,
                        .n_elements = 512, .path = "model.gguf"};
    uint8_t bytes[1024] = {0};
    t.data = bytes;
    as_weight w;
    as_error err = {{0}};
    cr_assert_eq(as_weight_from_tensor(&w, &t, &err), AS_ERR);
    cr_assert(strstr(err.msg, "blk.0.ffn_up.weight") && strstr(err.msg, "Q4_K") && strstr(err.msg, "model.gguf"),
              "%s", err.msg);
    t.type = AS_GGML_Q8_0;
    t.ne[0] = 32, t.n_elements = 64;
    cr_assert_eq(as_weight_from_tensor(&w, &t, &err), AS_OK, "%s", err.msg);
    cr_assert(w.rows == 2 && w.cols == 32 && w.row_bytes == 34);
}
