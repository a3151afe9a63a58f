/* Typed weights (weight.c, and the row kernels in kernels.c) against the
 * reference decoders (quant.c's as_dequantize, written from ggml's block
 * layouts) and a double-precision dot product; then, for matrices stored
 * in a GGUF in memory and read back as views, on shapes the kernels split
 * (rows not a multiple of the threads, the matrix-vector tasks or the
 * 64-row panels; 32 to 4096 columns): fused dots within a bound derived
 * from their summation order, many positions (panels into sgemm) against
 * one, one thread against two bit for bit, empty slices. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/gguf.h"
#include "attnscope/kernels.h"
#include "attnscope/pool.h"
#include "attnscope/weight.h"
#include "ggml_ref.h"
#include "helpers.h"

/* Values in [-2, 2): rand_unit (helpers.c) scaled. */
static float frand(uint64_t *s)
{
    return 2.0f * rand_unit(s);
}

/* rows x cols random values stored as `type`; returns the stored bytes. */
static uint8_t *make(as_ggml_type type, int rows, int cols, uint64_t seed)
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

KERNEL_ISA_PARAMS(weight, rows_decode_exactly_as_the_reference)
ParameterizedTest(int *isa, weight, rows_decode_exactly_as_the_reference)
{
    if (!use_kernels(*isa))
        return;
    for (size_t t = 0; t < 4; t++)
        for (size_t c = 0; c < 6; c++) {
            int cols = widths[c], rows = 5;
            if (types[t] == AS_GGML_Q8_0 && cols % 32)
                continue;
            uint8_t *data = make(types[t], rows, cols, 7u + (uint64_t)c);
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
KERNEL_ISA_PARAMS(weight, fused_dots_and_matvec_match_a_double_reference)
ParameterizedTest(int *isa, weight, fused_dots_and_matvec_match_a_double_reference)
{
    if (!use_kernels(*isa))
        return;
    /* the float32-activation kernels (native, the default for block types, is test_qdot.c's) */
    cr_assert(as_set_activations("f32"));
    as_pool *pool = NULL;
    as_error err;
    cr_assert_eq(as_pool_new(&pool, 2, &err), AS_OK);
    for (size_t t = 0; t < 4; t++)
        for (size_t c = 0; c < 6; c++) {
            int cols = widths[c], rows = 37; /* not a multiple of the threads' shares */
            if (types[t] == AS_GGML_Q8_0 && cols % 32)
                continue;
            uint8_t *data = make(types[t], rows, cols, 99u + (uint64_t)c);
            as_weight w = {data, types[t], rows, cols, (size_t)as_ggml_nbytes(types[t], (uint64_t)cols)};
            uint64_t seed = 5;
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
KERNEL_ISA_PARAMS(weight, panels_agree_with_one_position)
ParameterizedTest(int *isa, weight, panels_agree_with_one_position)
{
    if (!use_kernels(*isa))
        return;
    for (size_t t = 1; t < 4; t++) {
        int rows = 300, cols = 96, n = 5; /* more rows than one panel */
        uint8_t *data = make(types[t], rows, cols, 3);
        as_weight w = {data, types[t], rows, cols, (size_t)as_ggml_nbytes(types[t], (uint64_t)cols)};
        uint64_t seed = 11;
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
    as_gguf_tensor t = {.name = "blk.0.ffn_up.weight", .n_dims = 2, .ne = {256, 2, 1, 1}, .type = AS_GGML_IQ2_XXS,
                        .n_elements = 512, .path = "model.gguf"};
    uint8_t bytes[1024] = {0};
    t.data = bytes;
    as_weight w;
    as_error err = {{0}};
    cr_assert_eq(as_weight_from_tensor(&w, &t, &err), AS_ERR);
    cr_assert(strstr(err.msg, "blk.0.ffn_up.weight") && strstr(err.msg, "IQ2_XXS") && strstr(err.msg, "model.gguf"),
              "%s", err.msg);
    t.type = AS_GGML_Q8_0;
    t.ne[0] = 32, t.n_elements = 64;
    cr_assert_eq(as_weight_from_tensor(&w, &t, &err), AS_OK, "%s", err.msg);
    cr_assert(w.rows == 2 && w.cols == 32 && w.row_bytes == 34);
}

/* ---------------------------------------------------------------- views of a file, on split shapes */

#define N_TYPES (int)(sizeof types / sizeof *types)

/* rows x cols: rows prime or odd (never a multiple of 2 threads, of the
 * matrix-vector tasks' 16 rows or of the 64-row panels), columns one to
 * three Q8_0 blocks (shorter than one vector loop of 4 vectors), a
 * Llama-sized 4096, and 101 for the types without blocks (a scalar tail
 * after the vectors); 2051 x 32 and 333 x 4096 are large enough to be
 * shared among threads. */
static const int shapes[][2] = {{1, 96}, {2051, 32}, {1031, 64}, {683, 96}, {37, 4096}, {333, 4096}, {45, 101}};
#define N_SHAPES (int)(sizeof shapes / sizeof *shapes)

/* A matrix stored as `type` in a GGUF in memory, and its view. */
typedef struct typed {
    uint8_t *buf;
    as_gguf *g;
    const as_gguf_tensor *t;
    as_weight w;
    float *ref; /* rows x cols, dequantized by the reference (as_tensor_to_f32) */
} typed;

/* Bytes of a rows x cols matrix x stored as type, by the writer-side
 * conversions a model converter would use. */
static uint8_t *encode(as_ggml_type type, const float *x, size_t n)
{
    uint8_t *out = malloc(as_ggml_nbytes(type, n));
    for (size_t i = 0; type == AS_GGML_F16 && i < n; i++) {
        uint16_t h = as_f32_to_f16(x[i]);
        memcpy(out + 2 * i, &h, 2);
    }
    for (size_t i = 0; type == AS_GGML_BF16 && i < n; i++) {
        uint16_t h = as_f32_to_bf16(x[i]);
        memcpy(out + 2 * i, &h, 2);
    }
    if (type == AS_GGML_Q8_0)
        as_quantize_q8_0(x, n, out);
    if (type == AS_GGML_F32)
        memcpy(out, x, n * sizeof *x);
    return out;
}

static void typed_make(typed *m, as_ggml_type type, int rows, int cols, uint64_t seed)
{
    size_t n = (size_t)rows * (size_t)cols, size;
    float *x = rand_vector(n, 1.0f, seed);
    /* A block of zeros (a Q8_0 scale of 0) and one of large values. */
    memset(x, 0, 32 * sizeof *x);
    for (int j = 0; j < 32 && n >= 64; j++)
        x[32 + j] *= 1000.0f;
    uint8_t *bytes = encode(type, x, n);
    as_gguf_writer *wr = as_gguf_writer_new(3);
    as_error err = {{0}};
    uint64_t ne[2] = {(uint64_t)cols, (uint64_t)rows};
    as_gguf_writer_set_str(wr, "general.architecture", "test");
    cr_assert_eq(as_gguf_writer_add_tensor(wr, "blk.0.test.weight", type, 2, ne, bytes, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_gguf_writer_to_memory(wr, &m->buf, &size, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_gguf_parse(&m->g, m->buf, size, "weights.gguf", &err), AS_OK, "%s", err.msg);
    m->t = as_gguf_tensor_find(m->g, "blk.0.test.weight");
    cr_assert_not_null(m->t);
    cr_assert_eq(as_weight_from_tensor(&m->w, m->t, &err), AS_OK, "%s", err.msg);
    m->ref = malloc(n * sizeof *m->ref);
    cr_assert_eq(as_tensor_to_f32(m->t, m->ref, &err), AS_OK, "%s", err.msg);
    as_gguf_writer_free(wr);
    free(bytes);
    free(x);
}

static void typed_free(typed *m)
{
    as_gguf_close(m->g);
    free(m->buf);
    free(m->ref);
}

/* Σ w·x over the dequantized row in double, and Σ |w·x| for the bounds. */
static double ref_dot(const float *w, const float *x, int n, double *abs_sum)
{
    double s = 0, a = 0;
    for (int j = 0; j < n; j++) {
        s += (double)w[j] * x[j];
        a += fabs((double)w[j] * x[j]);
    }
    *abs_sum = a;
    return s;
}

/* The fused kernels' bound. Each sums a row in float accumulators: F32,
 * F16 and BF16 in four vectors (16 lanes or more), each lane's share in
 * order with fused multiply-adds; Q8_0 each block's 32 products in a vector
 * of its own (32/VL long), then d times it into one of two accumulators
 * (n/64 blocks each). Then a tree over the vectors and lanes, at most 6
 * levels. So every product w·x reaches the result through at most
 * n/8 + 8 roundings, counting one for a product rounded before its
 * addition (Q8_0's first in a block, or every product in a build without
 * FMA; d·q and d·p are exact inside an FMA or in float: 11 + 8 significant
 * bits), and Higham's bound for summation gives (n/8 + 8)·u·Σ|w·x| with
 * u = 2^-24, plus one rounding when a bias is added. A decoding mistake
 * (a wrong or 0.1%-off scale, a dropped or shifted block, a wrong tail)
 * moves a row by far more: each of those fails this test. */
static double fused_tol(int n, double abs_sum, double want)
{
    return (n / 8.0 + 8.0) * 0x1p-24 * abs_sum + 0x1p-24 * fabs(want) + 1e-30;
}

/* sgemm's: OpenBLAS sums in an order of its own, so the bound that holds
 * for any order, γ_n = n·u / (1 - n·u) times Σ|w·x| (Higham, Thm 3.1). */
static double gemm_tol(int n, double abs_sum, double want)
{
    double nu = n * 0x1p-24;
    return nu / (1 - nu) * abs_sum + 0x1p-24 * fabs(want) + 1e-30;
}

static const char *tn(as_ggml_type t)
{
    return as_ggml_type_name(t);
}

/* Whether rows of cols elements are whole blocks of type t. */
static bool fits(as_ggml_type t, int cols)
{
    return as_ggml_nbytes(t, (uint64_t)cols) != 0;
}

Test(weight, views_describe_the_stored_tensor)
{
    for (int k = 0; k < N_TYPES; k++) {
        typed m;
        typed_make(&m, types[k], 37, 96, 1);
        cr_assert_eq(m.w.type, types[k]);
        cr_assert_eq(m.w.rows, 37);
        cr_assert_eq(m.w.cols, 96);
        cr_assert_eq(m.w.row_bytes, as_ggml_nbytes(types[k], 96), "%s", tn(types[k]));
        cr_assert_eq(as_weight_bytes(&m.w), m.t->n_bytes, "%s: the view covers the tensor's bytes", tn(types[k]));
        cr_assert_eq(m.w.data, (const void *)m.t->data, "%s: read in place, not copied", tn(types[k]));
        as_weight s = as_weight_rows(&m.w, 5, 7);
        cr_assert_eq(s.rows, 7);
        cr_assert_eq((const uint8_t *)s.data, m.t->data + 5 * m.w.row_bytes);
        typed_free(&m);
    }
    float f[6] = {0};
    as_weight w = as_weight_f32(f, 2, 3);
    cr_assert(w.data == f && w.type == AS_GGML_F32 && w.rows == 2 && w.cols == 3 && w.row_bytes == 12);
}

Test(weight, rows_of_a_parsed_file_decode_as_as_tensor_row_f32)
{
    for (int k = 0; k < N_TYPES; k++)
        for (int s = 0; s < N_SHAPES; s++) {
            int rows = shapes[s][0], cols = shapes[s][1];
            if (!fits(types[k], cols))
                continue;
            typed m;
            typed_make(&m, types[k], rows, cols, 10 + (uint64_t)s);
            float *got = malloc((size_t)cols * sizeof *got), *want = malloc((size_t)cols * sizeof *want);
            as_error err = {{0}};
            for (int r = 0; r < rows; r++) {
                cr_assert_eq(as_tensor_row_f32(m.t, (uint64_t)r, want, &err), AS_OK, "%s", err.msg);
                memset(got, 0xff, (size_t)cols * sizeof *got);
                as_weight_row(&m.w, r, got);
                cr_assert_eq(memcmp(got, want, (size_t)cols * sizeof *got), 0, "%s %dx%d: row %d", tn(types[k]), rows,
                             cols, r);
            }
            free(got), free(want);
            typed_free(&m);
        }
}

KERNEL_ISA_PARAMS(weight, fused_dot_and_matvec_match_double_precision)
ParameterizedTest(int *isa, weight, fused_dot_and_matvec_match_double_precision)
{
    if (!use_kernels(*isa))
        return;
    /* the float32-activation kernels (native, the default for block types, is test_qdot.c's) */
    cr_assert(as_set_activations("f32"));
    for (int k = 0; k < N_TYPES; k++)
        for (int s = 0; s < N_SHAPES; s++) {
            int rows = shapes[s][0], cols = shapes[s][1];
            if (!fits(types[k], cols))
                continue;
            typed m;
            typed_make(&m, types[k], rows, cols, 20 + (uint64_t)s);
            float *x = rand_vector((size_t)cols, 2.0f, 30 + (uint64_t)s), *b = rand_vector((size_t)rows, 1.0f, 40);
            float *y = malloc((size_t)rows * sizeof *y), *yb = malloc((size_t)rows * sizeof *yb);
            as_matvec(NULL, x, &m.w, NULL, y);
            as_matvec(NULL, x, &m.w, b, yb);
            for (int r = 0; r < rows; r++) {
                double a, want = ref_dot(m.ref + (size_t)r * cols, x, cols, &a);
                float d = as_weight_dot(&m.w, r, x);
                cr_assert_leq(fabs(d - want), fused_tol(cols, a, want), "%s %dx%d row %d: %.9g vs %.9g (bound %.3g)",
                              tn(types[k]), rows, cols, r, d, want, fused_tol(cols, a, want));
                cr_assert_eq(d, y[r], "%s %dx%d row %d: as_weight_dot is as_matvec's row", tn(types[k]), rows, cols, r);
                cr_assert_leq(fabs(yb[r] - (want + b[r])), fused_tol(cols, a, want + b[r]) + 0x1p-24 * fabs(b[r]),
                              "%s %dx%d row %d with bias", tn(types[k]), rows, cols, r);
                if (types[k] == AS_GGML_F32)
                    cr_assert_eq(d, as_dot(m.ref + (size_t)r * cols, x, cols), "F32 rows are as_dot's, bit for bit");
            }
            /* A range of rows on the calling thread, as a pool task computes it. */
            float *yr = malloc((size_t)rows * sizeof *yr);
            as_matvec_rows(x, &m.w, b, yr, rows / 3, rows);
            cr_assert_eq(memcmp(yr + rows / 3, yb + rows / 3, (size_t)(rows - rows / 3) * sizeof *yr), 0, "%s %dx%d",
                         tn(types[k]), rows, cols);
            free(x), free(b), free(y), free(yb), free(yr);
            typed_free(&m);
        }
}

KERNEL_ISA_PARAMS(weight, many_positions_agree_with_one)
ParameterizedTest(int *isa, weight, many_positions_agree_with_one)
{
    if (!use_kernels(*isa))
        return;
    /* the float32-activation kernels (native, the default for block types, is test_qdot.c's) */
    cr_assert(as_set_activations("f32"));
    as_pool *pool;
    as_error err;
    cr_assert_eq(as_pool_new(&pool, 2, &err), AS_OK);
    for (int k = 0; k < N_TYPES; k++)
        for (int s = 0; s < N_SHAPES; s++) {
            int rows = shapes[s][0], cols = shapes[s][1], n = 7;
            if (!fits(types[k], cols))
                continue;
            typed m;
            typed_make(&m, types[k], rows, cols, 50 + (uint64_t)s);
            float *x = rand_vector((size_t)n * cols, 1.0f, 60 + (uint64_t)s), *b = rand_vector((size_t)rows, 1.0f, 70);
            float *many = malloc((size_t)n * rows * sizeof *many), *one = malloc((size_t)rows * sizeof *one);
            as_linear_pool(pool, x, n, &m.w, b, many);
            for (int i = 0; i < n; i++) {
                as_linear(x + (size_t)i * cols, 1, &m.w, b, one);
                for (int r = 0; r < rows; r++) {
                    double a, want = ref_dot(m.ref + (size_t)r * cols, x + (size_t)i * cols, cols, &a) + b[r];
                    float got = many[(size_t)i * rows + r];
                    double tol = gemm_tol(cols, a, want) + fused_tol(cols, a, want) + 0x1p-23 * fabs(b[r]);
                    cr_assert_leq(fabs(got - one[r]), tol, "%s %dx%d position %d row %d: %.9g (%d positions) vs %.9g",
                                  tn(types[k]), rows, cols, i, r, got, n, one[r]);
                    cr_assert_leq(fabs(got - want), gemm_tol(cols, a, want) + 0x1p-24 * fabs(b[r]),
                                  "%s %dx%d position %d row %d: %.9g vs %.9g in double", tn(types[k]), rows, cols, i, r,
                                  got, want);
                }
            }
            free(x), free(b), free(many), free(one);
            typed_free(&m);
        }
    as_pool_free(pool);
}

/* For F32 over many positions this holds on these shapes, not on all: its
 * slices follow the thread count and OpenBLAS's bits can follow a call's
 * shape (kernels.c names shapes where they differ). The stored types'
 * panels do not follow the thread count, so they hold everywhere. */
KERNEL_ISA_PARAMS(weight, one_thread_or_two_give_the_same_bits)
ParameterizedTest(int *isa, weight, one_thread_or_two_give_the_same_bits)
{
    if (!use_kernels(*isa))
        return;
    as_pool *pool;
    as_error err;
    cr_assert_eq(as_pool_new(&pool, 2, &err), AS_OK);
    for (int k = 0; k < N_TYPES; k++)
        for (int s = 0; s < N_SHAPES; s++) {
            int rows = shapes[s][0], cols = shapes[s][1], n = 9;
            if (!fits(types[k], cols))
                continue;
            typed m;
            typed_make(&m, types[k], rows, cols, 80 + (uint64_t)s);
            float *x = rand_vector((size_t)n * cols, 1.0f, 90), *b = rand_vector((size_t)rows, 1.0f, 91);
            size_t ybytes = (size_t)n * rows * sizeof(float);
            float *y1 = malloc(ybytes), *y2 = malloc(ybytes);
            as_matvec(NULL, x, &m.w, b, y1);
            as_matvec(pool, x, &m.w, b, y2);
            cr_assert_eq(memcmp(y1, y2, (size_t)rows * sizeof *y1), 0, "%s %dx%d: matvec", tn(types[k]), rows, cols);
            as_linear_pool(NULL, x, n, &m.w, b, y1);
            as_linear_pool(pool, x, n, &m.w, b, y2);
            cr_assert_eq(memcmp(y1, y2, ybytes), 0, "%s %dx%d: %d positions", tn(types[k]), rows, cols, n);
            if (rows < 2) /* no two slices to make */
                goto next;
            /* q, k and v as one job: each product's rows are its own. */
            as_weight q = as_weight_rows(&m.w, 0, rows / 2), v = as_weight_rows(&m.w, rows / 2, rows - rows / 2);
            as_matvec_spec spec[3] = {{x, &q, NULL, y2}, {x + cols, &v, b, y2 + rows}, {x, &m.w, NULL, y2 + 2 * rows}};
            as_matvec_many(pool, spec, 3);
            as_matvec(NULL, x, &m.w, NULL, y1);
            cr_assert_eq(memcmp(y2, y1, (size_t)(rows / 2) * sizeof *y1), 0, "%s %dx%d: a slice's rows", tn(types[k]),
                         rows, cols);
            cr_assert_eq(memcmp(y2 + 2 * rows, y1, (size_t)rows * sizeof *y1), 0, "%s %dx%d: in one job",
                         tn(types[k]), rows, cols);
            as_matvec(NULL, x + cols, &v, b, y1);
            cr_assert_eq(memcmp(y2 + rows, y1, (size_t)v.rows * sizeof *y1), 0, "%s %dx%d: the second product",
                         tn(types[k]), rows, cols);
        next:
            free(x), free(b), free(y1), free(y2);
            typed_free(&m);
        }
    as_pool_free(pool);
}

Test(weight, empty_slices_compute_nothing)
{
    float w[64 * 3] = {0}, x[64] = {0}, y[3] = {1, 2, 3};
    as_weight a = as_weight_f32(w, 3, 64), none = as_weight_rows(&a, 1, 0);
    as_matvec(NULL, x, &none, NULL, y);
    as_matvec_spec spec[2] = {{x, &none, NULL, y}, {x, &a, NULL, y}};
    as_matvec_many(NULL, spec, 2);
    cr_assert(y[0] == 0 && y[1] == 0 && y[2] == 0, "a product of no rows writes nothing and stops nothing");
}

/* The 4- to 6-bit types and the K-quants, on rows ggml's own quantizer
 * wrote (tests/ggml_ref.c; skipped loudly where the library is absent):
 * every row decodes exactly as the reference decoders (quant.c, held to
 * ggml's bit for bit in test_quant.c), and the fused kernel's row · x is
 * within 1e-6 of Σ|w·x| of the double-precision dot of that row (measured
 * worst 3e-8: sums of up to 2048 float32 products in a changed order),
 * with 1 and 2 threads giving the same bits and panels agreeing. */
KERNEL_ISA_PARAMS(weight, block_types_on_rows_ggml_quantized)
ParameterizedTest(int *isa, weight, block_types_on_rows_ggml_quantized)
{
    if (!use_kernels(*isa))
        return;
    /* the float32-activation kernels (native, the default for block types, is test_qdot.c's) */
    cr_assert(as_set_activations("f32"));
    char why[512];
    int st = ggml_ref_open(why, sizeof why);
    if (st == GGML_REF_MISSING) {
        fprintf(stderr, "**** SKIP weight::block_types_on_rows_ggml_quantized: NOT CHECKED AGAINST GGML: %s ****\n", why);
        return;
    }
    cr_assert_eq(st, GGML_REF_OK, "%s", why);
    static const as_ggml_type block_types[] = {AS_GGML_Q4_0, AS_GGML_Q4_1, AS_GGML_Q5_0, AS_GGML_Q5_1, AS_GGML_Q8_0,
                                               AS_GGML_Q2_K, AS_GGML_Q3_K, AS_GGML_Q4_K, AS_GGML_Q5_K, AS_GGML_Q6_K,
                                               AS_GGML_IQ4_NL, AS_GGML_IQ4_XS};
    /* 2048 is whole super-blocks; 2144 leaves the 32-blocks a tail of
     * three after the groups of four (128) the Q4_0 kernel takes */
    for (int wi = 0; wi < 2; wi++) {
        int rows = 70, cols = wi ? 2144 : 2048;
        float *src = malloc((size_t)rows * cols * sizeof *src), *x = malloc((size_t)cols * sizeof *x);
        float *row = malloc((size_t)cols * sizeof *row), *ref = malloc((size_t)cols * sizeof *ref);
        float y1[70], y2[70];
        uint64_t seed = 17;
        for (int i = 0; i < rows * cols; i++)
            src[i] = frand(&seed);
        for (int i = 0; i < cols; i++)
            x[i] = frand(&seed);
        as_pool *pool = NULL;
        as_error err;
        cr_assert_eq(as_pool_new(&pool, 2, &err), AS_OK);
        for (size_t t = 0; t < sizeof block_types / sizeof block_types[0]; t++) {
            as_ggml_type ty = block_types[t];
            if (!fits(ty, cols))
                continue;
            size_t rb = (size_t)as_ggml_nbytes(ty, (uint64_t)cols);
            uint8_t *q = malloc(rb * rows);
            cr_assert_eq(ggml_ref_quantize((int)ty, src, q, rows, cols), rb * rows, "%s", as_ggml_type_name(ty));
            as_weight w = {q, ty, rows, cols, rb};
            cr_assert(as_weight_type_readable(ty), "%s is not readable", as_ggml_type_name(ty));
            as_matvec(NULL, x, &w, NULL, y1);
            as_matvec(pool, x, &w, NULL, y2);
            for (int r = 0; r < rows; r++) {
                as_weight_row(&w, r, row);
                cr_assert_eq(as_dequantize(ty, q + (size_t)r * rb, (uint64_t)cols, ref, &err), AS_OK);
                cr_assert_eq(memcmp(row, ref, (size_t)cols * sizeof *row), 0, "%s row %d", as_ggml_type_name(ty), r);
                double dot = 0, mag = 0;
                for (int i = 0; i < cols; i++) {
                    dot += (double)ref[i] * x[i];
                    mag += fabs((double)ref[i] * x[i]);
                }
                cr_assert_float_eq(as_weight_dot(&w, r, x), dot, 1e-6 * mag, "%s row %d: %g vs %g", as_ggml_type_name(ty),
                                   r, as_weight_dot(&w, r, x), dot);
                cr_assert_eq(y1[r], y2[r], "%s row %d: 1 and 2 threads differ", as_ggml_type_name(ty), r);
                cr_assert_eq(y1[r], as_weight_dot(&w, r, x), "%s row %d: the product's row is not the row's dot",
                             as_ggml_type_name(ty), r);
            }
            free(q);
        }
        as_pool_free(pool);
        free(src), free(x), free(row), free(ref);
    }
    ggml_ref_close();
}
