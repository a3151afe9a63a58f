/* Native mode's prompt product alone (bench --only qgemm): as_linear_pool
 * over 256 positions with 8-bit activations (AVX2 quantization, the
 * many-position kernels tiled over panels of rows and blocks of positions)
 * against the code it replaced, rebuilt here from the public kernels: the
 * activations quantized by the portable code, then each row of a 64-row
 * panel against every position through the one-row dot. Both run in this
 * process, taking turns, so a busy machine slows both alike; the figure is
 * the median of the per-round ratios old / new. The two must agree bit for
 * bit (checked here on every shape). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/kernels.h"
#include "attnscope/pool.h"
#include "attnscope/qdot.h"
#include "attnscope/weight.h"
#include "bench.h"

typedef struct old_job {
    as_qdot_fn f;
    const unsigned char *acts;
    size_t act_bytes;
    const as_weight *w;
    float *y;
    int n;
} old_job;

#define OLD_PANEL 64

/* The replaced qgemm_task: rows [t·64, ...) against every position, one dot each. */
static void old_task(void *ctx, int t)
{
    const old_job *j = ctx;
    int out = j->w->rows, r0 = t * OLD_PANEL, r1 = r0 + OLD_PANEL < out ? r0 + OLD_PANEL : out;
    for (int r = r0; r < r1; r++) {
        const char *row = (const char *)j->w->data + (size_t)r * j->w->row_bytes;
        for (int i = 0; i < j->n; i++)
            j->y[(size_t)i * out + r] = j->f(row, j->acts + (size_t)i * j->act_bytes, j->w->cols);
    }
}

static void old_linear(as_pool *pool, const float *x, int n, const as_weight *w, float *y)
{
    size_t ab = as_qdot_act_bytes(w->type, w->cols);
    unsigned char *acts = malloc(ab * (size_t)n);
    for (int i = 0; i < n; i++)
        as_qdot_quantize_isa(AS_QDOT_PORTABLE, w->type, x + (size_t)i * w->cols, w->cols, acts + (size_t)i * ab);
    old_job j = {as_qdot_kernel(AS_QDOT_AVX2, w->type), acts, ab, w, y, n};
    as_pool_run(pool, old_task, &j, (w->rows + OLD_PANEL - 1) / OLD_PANEL);
    free(acts);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* Quantizing 256 positions' activations: portable over AVX2 (time ratio). */
static double quantize_ratio(as_ggml_type w, int cols)
{
    enum { ROUNDS = 7, INNER = 20 };
    int n = BENCH_PROMPT;
    float *x = malloc(sizeof(float) * (size_t)n * cols);
    bench_fill(x, (size_t)n * cols, 11);
    size_t ab = as_qdot_act_bytes(w, cols);
    unsigned char *a = malloc(ab * (size_t)n);
    double ratio[ROUNDS];
    for (int r = 0; r < ROUNDS; r++) {
        double t[2];
        for (int isa = 0; isa < 2; isa++) {
            int64_t t0 = bench_now();
            for (int k = 0; k < INNER; k++)
                for (int i = 0; i < n; i++)
                    as_qdot_quantize_isa((as_qdot_isa)isa, w, x + (size_t)i * cols, cols, a + (size_t)i * ab);
            t[isa] = (double)(bench_now() - t0);
        }
        ratio[r] = t[0] / t[1];
    }
    free(x), free(a);
    return median(ratio, ROUNDS);
}

int bench_qgemm(FILE *f, int threads)
{
    static const as_ggml_type types[] = {AS_GGML_Q8_0, AS_GGML_Q4_0, AS_GGML_Q4_K, AS_GGML_Q5_K, AS_GGML_Q6_K};
    static const int shapes[][2] = {{768, 768}, {2048, 768}, {768, 2048}, {32000, 768}}; /* rows (out) x cols (in) */
    enum { N_TYPES = 5, N_SHAPES = 4, ROUNDS = 5 };
    if (!as_qdot_isa_runs(AS_QDOT_AVX2))
        return fprintf(f, "\n### Native prompt product: this CPU has no AVX2; nothing to compare\n"), 0;
    as_pool *pools[2];
    as_error err = {{0}};
    if (as_pool_new(&pools[0], 1, &err) || as_pool_new(&pools[1], threads, &err))
        return fprintf(stderr, "bench: %s\n", err.msg), -1;
    as_set_threads(threads);
    if (!as_set_activations("native"))
        return -1;
    int n = BENCH_PROMPT, bad = 0;
    fprintf(f, "\n### Native prompt product: many-position kernels vs the one-row loop (%d positions)\n\n"
               "Old: activations quantized by the portable code, each row of a 64-row panel against every position "
               "through the one-row AVX2 dot. New: as_linear_pool in native mode. Time old / new, median of %d "
               "rounds taking turns (order swapped each round); the outputs are compared bit for bit.\n\n"
               "| type | rows x cols | old / new, 1 thread | old / new, %d threads | bits equal |\n"
               "|---|---|---:|---:|---|\n",
            n, ROUNDS, threads);
    for (int s = 0; s < N_SHAPES; s++) {
        int rows = shapes[s][0], cols = shapes[s][1];
        float *x = malloc(sizeof(float) * (size_t)n * cols);
        float *y0 = malloc(sizeof(float) * (size_t)n * rows), *y1 = malloc(sizeof(float) * (size_t)n * rows);
        bench_fill(x, (size_t)n * cols, 5);
        for (int k = 0; k < N_TYPES; k++) {
            as_ggml_type t = types[k];
            uint8_t *m = bench_encode(t, rows, cols);
            as_weight w = {m, t, rows, cols, (size_t)as_ggml_nbytes(t, (uint64_t)cols)};
            double ratio[2];
            bool same = true;
            for (int p = 0; p < 2; p++) {
                as_pool *pool = pools[p];
                old_linear(pool, x, n, &w, y0); /* warm */
                as_linear_pool(pool, x, n, &w, NULL, y1);
                same = same && !memcmp(y0, y1, sizeof(float) * (size_t)n * rows);
                double r[ROUNDS];
                for (int round = 0; round < ROUNDS; round++) {
                    double t_old = 0, t_new = 0;
                    for (int half = 0; half < 2; half++) {
                        bool old_now = (half == 0) == (round % 2 == 0);
                        int64_t t0 = bench_now();
                        if (old_now)
                            old_linear(pool, x, n, &w, y0);
                        else
                            as_linear_pool(pool, x, n, &w, NULL, y1);
                        double dt = (double)(bench_now() - t0);
                        *(old_now ? &t_old : &t_new) = dt;
                    }
                    r[round] = t_old / t_new;
                }
                ratio[p] = median(r, ROUNDS);
            }
            bad += !same;
            fprintf(f, "| %s | %d x %d | %.2fx | %.2fx | %s |\n", as_ggml_type_name(t), rows, cols, ratio[0], ratio[1],
                    same ? "yes" : "NO");
            fflush(f);
            free(m);
        }
        free(x), free(y0), free(y1);
    }
    fprintf(f, "\nActivation quantization alone, 256 positions, portable / AVX2 time: Q8_0 (768) %.2fx, Q8_K (768) "
               "%.2fx, Q8_0 (2048) %.2fx, Q8_K (2048) %.2fx\n",
            quantize_ratio(AS_GGML_Q8_0, 768), quantize_ratio(AS_GGML_Q4_K, 768), quantize_ratio(AS_GGML_Q8_0, 2048),
            quantize_ratio(AS_GGML_Q4_K, 2048));
    as_set_activations("f32");
    as_pool_free(pools[0]);
    as_pool_free(pools[1]);
    return bad ? -1 : 0;
}
