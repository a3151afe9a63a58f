/* The typed kernels alone (bench --kernels): as_matvec on one matrix per
 * weight type, in GB/s of stored weights streamed, and as_linear_pool over
 * a prompt's positions in GFLOP/s.
 *
 * Two matvec figures per type: "cold", cycling through copies of the
 * matrix that together are far larger than the last-level cache (what
 * decode does: every weight comes from memory once per token), and "hot",
 * the same copy again and again (small matrices then sit in cache, so the
 * figure is the decoder's own speed). A kernel is bandwidth-bound when its
 * cold figure is near the machine's read bandwidth (measured on the same
 * bytes by a plain streaming read) and well below its hot figure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/gguf.h"
#include "attnscope/kernels.h"
#include "attnscope/pool.h"
#include "attnscope/weight.h"
#include "bench.h"

#define COLD_BYTES (256u << 20) /* copies of a matrix: 8x the 32 MB L3 of the machine in RESULTS.md */

static const as_ggml_type bench_types[] = {AS_GGML_F32,  AS_GGML_F16,  AS_GGML_BF16, AS_GGML_Q8_0,
                                           AS_GGML_Q4_0, AS_GGML_Q4_K, AS_GGML_Q5_K, AS_GGML_Q6_K};
#define N_BENCH_TYPES 8

static uint64_t rng(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

void bench_fill(float *x, size_t n, uint64_t seed)
{
    for (size_t i = 0; i < n; i++)
        x[i] = (float)(rng(&seed) >> 40) * 0x1.0p-23f - 1.0f;
}

/* One rows x cols matrix stored as type, as a converter writes it. */
uint8_t *bench_encode(as_ggml_type type, int rows, int cols)
{
    size_t n = (size_t)rows * (size_t)cols;
    float *x = malloc(n * sizeof *x);
    uint8_t *out = malloc(as_ggml_nbytes(type, n));
    bench_fill(x, n, (uint64_t)rows * 31 + (uint64_t)cols);
    if (type == AS_GGML_F32)
        memcpy(out, x, n * sizeof *x);
    else if (type == AS_GGML_Q8_0)
        as_quantize_q8_0(x, n, out);
    else if (type != AS_GGML_F16 && type != AS_GGML_BF16) {
        /* 4- and 6-bit blocks: random bits with finite scales (a kernel's
         * speed does not depend on the values; attnscope has no quantizer
         * for these, llama.cpp's is what makes the bench's files) */
        const as_ggml_traits *tr = as_ggml_traits_of(type);
        size_t blocks = n / tr->block_elems;
        uint64_t seed = n;
        for (size_t i = 0; i < blocks * tr->block_bytes; i++)
            out[i] = (uint8_t)(rng(&seed) >> 56);
        for (size_t b = 0; b < blocks; b++) {
            uint8_t *blk = out + b * tr->block_bytes;
            uint16_t d = as_f32_to_f16(0.001f + (float)(b % 7) * 0.0003f);
            memcpy(blk + (type == AS_GGML_Q6_K ? 208 : 0), &d, 2); /* d */
            if (type == AS_GGML_Q4_K || type == AS_GGML_Q5_K)
                memcpy(blk + 2, &d, 2); /* dmin */
        }
    } else
        for (size_t i = 0; i < n; i++) {
            uint16_t h = type == AS_GGML_F16 ? as_f32_to_f16(x[i]) : as_f32_to_bf16(x[i]);
            memcpy(out + 2 * i, &h, 2);
        }
    free(x);
    return out;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

#define REPS 3

/* Seconds per call of fn, the median of REPS timings of `inner` calls. */
typedef void (*timed_fn)(void *ctx, int i);
static double time_median(timed_fn fn, void *ctx, int inner)
{
    double t[REPS];
    fn(ctx, 0); /* warm: first-touch faults, the pool's threads awake */
    for (int r = 0; r < REPS; r++) {
        int64_t t0 = bench_now();
        for (int i = 0; i < inner; i++)
            fn(ctx, i);
        t[r] = (double)(bench_now() - t0) * 1e-9 / inner;
    }
    qsort(t, REPS, sizeof *t, cmp_double);
    return t[REPS / 2];
}

typedef struct mv_ctx {
    as_pool *pool;
    as_weight *w; /* copies */
    int copies;
    const float *x;
    float *y;
    const uint8_t *bytes;
    size_t n_bytes;
    volatile float sink;
} mv_ctx;

static void mv_cold(void *ctx, int i)
{
    mv_ctx *c = ctx;
    (void)i;
    for (int k = 0; k < c->copies; k++)
        as_matvec(c->pool, c->x, &c->w[k], NULL, c->y);
}

static void mv_hot(void *ctx, int i)
{
    mv_ctx *c = ctx;
    (void)i;
    as_matvec(c->pool, c->x, &c->w[0], NULL, c->y);
}

/* The floor any kernel reading these bytes has: a streaming read of them
 * that does nothing else (as_all_finite, as fast as loads go), each of the
 * pool's threads reading its share. */
static void read_share(void *ctx, int t)
{
    mv_ctx *c = ctx;
    size_t n = c->n_bytes / sizeof(float), per = n / (size_t)as_pool_size(c->pool);
    c->sink = as_all_finite((const float *)c->bytes + (size_t)t * per, (long)per);
}

static void read_cold(void *ctx, int i)
{
    mv_ctx *c = ctx;
    (void)i;
    as_pool_run(c->pool, read_share, c, as_pool_size(c->pool));
}

typedef struct lin_ctx {
    as_pool *pool;
    const as_weight *w;
    const float *x;
    float *y;
    int n;
} lin_ctx;

static void lin(void *ctx, int i)
{
    lin_ctx *c = ctx;
    (void)i;
    as_linear_pool(c->pool, c->x, c->n, c->w, NULL, c->y);
}

/* One matrix shape, every type: the types take turns within each round
 * (so a busy minute on a shared machine slows them all), and the ratios
 * to F32 are medians of per-round ratios. */
static void matvec_rows(FILE *f, as_pool *pools[2], int rows, int cols)
{
    enum { ROUNDS = 9 };
    float *x = malloc((size_t)cols * sizeof *x), *y = malloc((size_t)rows * sizeof *y);
    bench_fill(x, (size_t)cols, 7);
    uint8_t *all[N_BENCH_TYPES];
    mv_ctx c[N_BENCH_TYPES];
    size_t mb[N_BENCH_TYPES];
    for (int k = 0; k < N_BENCH_TYPES; k++) {
        as_ggml_type t = bench_types[k];
        as_weight one = {NULL, t, rows, cols, (size_t)as_ggml_nbytes(t, (uint64_t)cols)};
        mb[k] = as_weight_bytes(&one);
        size_t stride = (mb[k] + 63) / 64 * 64;
        int copies = (int)((COLD_BYTES + mb[k] - 1) / mb[k]);
        uint8_t *m = bench_encode(t, rows, cols);
        all[k] = aligned_alloc(64, (size_t)copies * stride);
        c[k] = (mv_ctx){NULL, malloc((size_t)copies * sizeof(as_weight)), copies, x, y, all[k],
                        (size_t)copies * stride, 0};
        for (int i = 0; i < copies; i++) {
            memcpy(all[k] + (size_t)i * stride, m, mb[k]);
            c[k].w[i] = one;
            c[k].w[i].data = all[k] + (size_t)i * stride;
        }
        free(m);
    }
    /* seconds per matrix [what][type][round]; what: cold, hot, read at 1 and N threads */
    static double sec[6][N_BENCH_TYPES][ROUNDS];
    for (int r = 0; r < ROUNDS; r++)
        for (int k = 0; k < N_BENCH_TYPES; k++)
            for (int p = 0; p < 2; p++) {
                c[k].pool = pools[p];
                sec[0 + p][k][r] = time_median(mv_cold, &c[k], 1) / c[k].copies;
                sec[2 + p][k][r] = time_median(mv_hot, &c[k], 16);
                sec[4 + p][k][r] = time_median(read_cold, &c[k], 1) / c[k].copies;
            }
    for (int k = 0; k < N_BENCH_TYPES; k++) {
        double gbs[6], ratio[2];
        for (int what = 0; what < 6; what++) {
            double v[ROUNDS];
            for (int r = 0; r < ROUNDS; r++)
                v[r] = sec[what][k][r];
            qsort(v, ROUNDS, sizeof *v, cmp_double);
            gbs[what] = (double)mb[k] / v[ROUNDS / 2] * 1e-9;
        }
        for (int p = 0; p < 2; p++) {
            double v[ROUNDS];
            for (int r = 0; r < ROUNDS; r++)
                v[r] = sec[p][k][r] / sec[p][0][r];
            qsort(v, ROUNDS, sizeof *v, cmp_double);
            ratio[p] = v[ROUNDS / 2];
        }
        fprintf(f, "| %s | %d x %d | %.2f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.2f | %.2f |\n",
                as_ggml_type_name(bench_types[k]), rows, cols, mb[k] / 1048576.0, gbs[0], gbs[1], gbs[2], gbs[3],
                gbs[4], gbs[5], ratio[0], ratio[1]);
        free(all[k]);
        free(c[k].w);
    }
    free(x), free(y);
}

static void linear_rows(FILE *f, as_pool *pool, int rows, int cols, int n)
{
    enum { ROUNDS = 5 };
    float *x = malloc((size_t)n * cols * sizeof *x), *y = malloc((size_t)n * rows * sizeof *y);
    bench_fill(x, (size_t)n * cols, 9);
    uint8_t *m[N_BENCH_TYPES];
    as_weight w[N_BENCH_TYPES];
    double sec[N_BENCH_TYPES][ROUNDS];
    for (int k = 0; k < N_BENCH_TYPES; k++) {
        as_ggml_type t = bench_types[k];
        m[k] = bench_encode(t, rows, cols);
        w[k] = (as_weight){m[k], t, rows, cols, (size_t)as_ggml_nbytes(t, (uint64_t)cols)};
    }
    for (int r = 0; r < ROUNDS; r++)
        for (int k = 0; k < N_BENCH_TYPES; k++) {
            lin_ctx c = {pool, &w[k], x, y, n};
            sec[k][r] = time_median(lin, &c, 1);
        }
    for (int k = 0; k < N_BENCH_TYPES; k++) {
        double v[ROUNDS], ratio[ROUNDS];
        for (int r = 0; r < ROUNDS; r++)
            v[r] = sec[k][r], ratio[r] = sec[0][r] / sec[k][r];
        qsort(v, ROUNDS, sizeof *v, cmp_double);
        qsort(ratio, ROUNDS, sizeof *ratio, cmp_double);
        fprintf(f, "| %s | %d x %d | %d | %.1f | %.2fx |\n", as_ggml_type_name(bench_types[k]), rows, cols, n,
                2.0 * n * rows * cols / v[ROUNDS / 2] * 1e-9, ratio[ROUNDS / 2]);
        free(m[k]);
    }
    free(x), free(y);
}

int bench_kernels(FILE *f, int threads)
{
    as_pool *pools[2];
    as_error err = {{0}};
    if (as_pool_new(&pools[0], 1, &err) || as_pool_new(&pools[1], threads, &err))
        return fprintf(stderr, "bench: %s\n", err.msg), -1;
    as_set_threads(threads);
    fprintf(f, "\n### Kernels: as_matvec per weight type (GB/s of stored weights)\n\n"
               "Cold: cycling through %u MB of copies of the matrix (every weight from memory, as in decode); hot: "
               "one copy again and again (from cache when it fits). Read: a plain streaming read of the same cold "
               "bytes (as_all_finite), the bandwidth this machine gives the access. Time vs F32: a product's time "
               "over F32's on the same shape, cold (bandwidth-bound kernels go as their bytes: F16 and BF16 0.50, "
               "Q8_0 0.27, Q4_0 and Q4_K 0.14, Q5_K 0.17, Q6_K 0.21). Medians of 9 rounds, the types taking turns in each; ratios are medians of per-round "
               "ratios.\n\n",
            COLD_BYTES >> 20);
    fprintf(f, "| type | shape | MB | cold, 1 thread | cold, %d threads | hot, 1 thread | hot, %d threads | read, 1 "
               "thread | read, %d threads | time vs F32, 1 thread | time vs F32, %d threads |\n"
               "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n",
            threads, threads, threads, threads);
    static const int shapes[2][2] = {{768, 3072}, {4096, 4096}};
    for (int s = 0; s < 2; s++)
        matvec_rows(f, pools, shapes[s][0], shapes[s][1]);
    fprintf(f, "\n### Kernels: as_linear_pool over %d positions, %d threads (GFLOP/s)\n\n"
               "Medians of 5 rounds, the types taking turns in each; speed vs F32 is the median of per-round ratios.\n\n"
               "| type | shape | positions | GFLOP/s | speed vs F32 |\n|---|---|---:|---:|---:|\n",
            BENCH_PROMPT, threads);
    for (int s = 0; s < 2; s++)
        linear_rows(f, pools[1], shapes[s][0], shapes[s][1], BENCH_PROMPT);
    as_pool_free(pools[0]);
    as_pool_free(pools[1]);
    return 0;
}
