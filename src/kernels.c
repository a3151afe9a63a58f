/* The kernels' entry points: the work shared among the engine's threads
 * (matrix-vector products cut into tasks, prompts through sgemm on slices
 * or decoded panels), the scalar rotary and soft-cap code, the thread
 * setting, and the run-time choice of the vector kernels (src/simd/), to
 * which the other public functions forward. */
#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include "attnscope/kernels.h"

#include "attnscope/pool.h"
#include "attnscope/qdot.h"
#include "attnscope/quant.h"
#include "simd/simd.h"

#include <cblas.h>
#include <sched.h>
#include <stdatomic.h>
#include <unistd.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- the vector kernels, chosen at run time */

/* The widest the CPU runs, unless as_kernels_use chose: one choice for the
 * process (set once and only read after, like the CPU it describes). */
static const as_simd_ops *_Atomic simd_ops;

#if defined(__x86_64__)
/* F16C from CPUID leaf 1 (ECX bit 29): clang's __builtin_cpu_supports
 * does not know the name "f16c", GCC's does. */
static bool has_f16c(void)
{
    unsigned a, b, c, d;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
}
#endif

static bool simd_runs(const as_simd_ops *k)
{
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (k == &as_simd_avx512)
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    if (k == &as_simd_avx2)
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
#endif
    return k == &as_simd_generic;
}

static const as_simd_ops *const simd_tables[] = {
#if defined(__x86_64__)
    &as_simd_avx512, &as_simd_avx2,
#endif
    &as_simd_generic,
};

static const as_simd_ops *K(void)
{
    const as_simd_ops *k = atomic_load_explicit(&simd_ops, memory_order_acquire);
    if (k)
        return k;
    for (size_t i = 0; i < sizeof simd_tables / sizeof *simd_tables; i++)
        if (simd_runs(simd_tables[i])) {
            k = simd_tables[i];
            break;
        }
    const as_simd_ops *none = NULL; /* another thread may have chosen first: keep its choice */
    atomic_compare_exchange_strong(&simd_ops, &none, k);
    return atomic_load(&simd_ops);
}

const char *as_kernels_isa(void)
{
    return K()->name;
}

bool as_kernels_use(const char *name)
{
    for (size_t i = 0; i < sizeof simd_tables / sizeof *simd_tables; i++)
        if (name && strcmp(simd_tables[i]->name, name) == 0 && simd_runs(simd_tables[i])) {
            atomic_store(&simd_ops, simd_tables[i]);
            return true;
        }
    return false;
}

/* ---------------------------------------------------------------- the activations' arithmetic */

/* llama.cpp's (native: activations quantized to the weight type's
 * vec_dot_type, integer dots, qdot.c) or float32 for quantized matrices;
 * one setting for the process, like the threads. Native by default
 * (issue #32): a quantized file computes as llama.cpp computes it;
 * F32/F16/BF16 weights take float32 activations either way. */
static _Atomic bool activations_native = true;

bool as_set_activations(const char *name)
{
    if (!name || (strcmp(name, "native") && strcmp(name, "f32")))
        return false;
    atomic_store(&activations_native, !strcmp(name, "native"));
    return true;
}

const char *as_get_activations(void)
{
    return atomic_load(&activations_native) ? "native" : "f32";
}

const char *as_activations_describe(void)
{
    if (!atomic_load(&activations_native))
        return "f32 (float32 activations for every weight type)";
    return strcmp(K()->name, "generic") && as_qdot_isa_runs(AS_QDOT_AVX2)
               ? "native (llama.cpp's: quantized weights take 8-bit activations, integer dots, AVX2)"
               : "native (llama.cpp's: quantized weights take 8-bit activations, integer dots, portable C)";
}

/* The integer kernel for w in native mode, on the vector kernels' choice
 * (the generic table takes the portable code); NULL: float32. */
static as_qdot_fn native_kernel(const as_weight *w)
{
    if (!atomic_load_explicit(&activations_native, memory_order_relaxed))
        return NULL;
    return as_qdot_kernel(strcmp(K()->name, "generic") ? AS_QDOT_AVX2 : AS_QDOT_PORTABLE, w->type);
}

/* Its many-position kernel, where the type has one (NULL: f position by position). */
static as_qdot_many_fn native_kernel_many(const as_weight *w)
{
    return as_qdot_kernel_many(strcmp(K()->name, "generic") ? AS_QDOT_AVX2 : AS_QDOT_PORTABLE, w->type);
}

/* Rows [r0, r1) of w times the quantized activations act. */
static void qdot_rows(as_qdot_fn f, const void *act, const as_weight *w, const float *b, float *y, int r0, int r1)
{
    const char *rows = w->data;
    for (int r = r0; r < r1; r++) {
        float v = f(rows + (size_t)r * w->row_bytes, act, w->cols);
        y[r] = b ? v + b[r] : v;
    }
}

/* x[n] quantized for w's type: into buf when it fits, else allocated
 * (*owned set, to free); NULL when memory ran out. */
static void *quantize_act(const as_weight *w, const float *x, void *buf, size_t cap, void **owned)
{
    size_t bytes = as_qdot_act_bytes(w->type, w->cols);
    void *a = bytes <= cap ? buf : (*owned = malloc(bytes));
    if (a)
        as_qdot_quantize(w->type, x, w->cols, a);
    return a;
}

#define ACT_STACK 32768 /* bytes of quantized activations kept on the stack: 28000 Q8_K columns */

float as_dot(const float *a, const float *b, int n) { return K()->dot(a, b, n); }
void as_weight_row(const as_weight *w, int r, float *out) { K()->weight_row(w, r, out); }
/* Native mode's rows [r0, r1) of w · x (one row: as_weight_dot), x
 * quantized here; apart, so the float path's frame keeps no buffer. */
__attribute__((noinline)) static void native_rows(as_qdot_fn f, const float *x, const as_weight *w, const float *b,
                                                  float *y, int r0, int r1)
{
    unsigned char buf[ACT_STACK];
    void *owned = NULL, *a = quantize_act(w, x, buf, sizeof buf, &owned);
    if (a)
        qdot_rows(f, a, w, b, y, r0, r1);
    else
        for (int r = r0; r < r1; r++)
            y[r] = NAN; /* no memory: said by the interpreter's non-finite checks */
    free(owned);
}

float as_weight_dot(const as_weight *w, int r, const float *x)
{
    as_qdot_fn f = native_kernel(w);
    if (!f)
        return K()->weight_dot(w, r, x);
    float v[1];
    native_rows(f, x, &(as_weight){(const char *)w->data + (size_t)r * w->row_bytes, w->type, 1, w->cols, w->row_bytes},
                NULL, v, 0, 1);
    return v[0];
}
void as_matvec_rows(const float *x, const as_weight *w, const float *b, float *y, int r0, int r1)
{
    as_qdot_fn f = native_kernel(w);
    if (!f)
        K()->matvec_rows(x, w, b, y, r0, r1);
    else
        native_rows(f, x, w, b, y, r0, r1);
}
void as_matvec_rows_ld(const float *x, int in, const float *w, size_t ld, float *y, int r0, int r1)
{
    K()->matvec_rows_ld(x, in, w, ld, y, r0, r1);
}
void as_mix_heads(const float *const *p, int heads, int keys, const float *v, size_t ld, int group, int h0,
                  float *z, int dh)
{
    K()->mix_heads(p, heads, keys, v, ld, group, h0, z, dh);
}
bool as_all_finite(const float *x, long n) { return K()->all_finite(x, n); }
void as_norm_measure(const float *x, int d, float eps, bool rms, as_norm_stat *st)
{
    K()->norm_measure(x, d, eps, rms, st);
}
void as_norm_apply(const float *x, int d, const as_norm_stat *st, bool rms, const float *w, const float *b, float *y)
{
    K()->norm_apply(x, d, st, rms, w, b, y);
}
void as_gelu_tanh(const float *x, float *y, long n) { K()->gelu_tanh(x, y, n); }
void as_gelu_erf(const float *x, float *y, long n)
{
    for (long i = 0; i < n; i++)
        y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678118654752f));
}
void as_swiglu(const float *gate, const float *up, float *y, long n) { K()->swiglu(gate, up, y, n); }
void as_geglu(const float *gate, const float *up, float *y, long n) { K()->geglu(gate, up, y, n); }
void as_rope_apply(const float *x, float *y, int n_heads, int d_head, int rope_dim, const float *cs)
{
    K()->rope_apply(x, y, n_heads, d_head, rope_dim, cs);
}
void as_softmax(const float *x, float *y, int n) { K()->softmax(x, y, n); }
void as_add(const float *a, const float *b, float *y, long n) { K()->add(a, b, y, n); }

/* ---------------------------------------------------------------- products shared among threads */

typedef struct matvec_job {
    const as_matvec_spec *s;
    int n;
    int rows[AS_MATVEC_MAX];  /* rows per task of each product */
    int first[AS_MATVEC_MAX + 1]; /* each product's first task */
    as_qdot_fn qdot[AS_MATVEC_MAX]; /* native: each product's integer kernel, or NULL */
    const void *act[AS_MATVEC_MAX]; /* and its x quantized once for every task */
} matvec_job;

static void matvec_spec_rows(const matvec_job *j, int i, int r0, int r1)
{
    const as_matvec_spec *s = &j->s[i];
    if (j->qdot[i])
        qdot_rows(j->qdot[i], j->act[i], s->w, s->b, s->y, r0, r1);
    else
        as_matvec_rows(s->x, s->w, s->b, s->y, r0, r1);
}

static void matvec_task(void *ctx, int t)
{
    const matvec_job *j = ctx;
    int i = 0;
    while (t >= j->first[i + 1])
        i++;
    const as_matvec_spec *s = &j->s[i];
    int r0 = (t - j->first[i]) * j->rows[i], r1 = r0 + j->rows[i] < s->w->rows ? r0 + j->rows[i] : s->w->rows;
    matvec_spec_rows(j, i, r0, r1);
}

void as_matvec_many(as_pool *pool, const as_matvec_spec *s, int n)
{
    /* Each thread streams its own contiguous share of the tasks (pool.c),
     * cut into tasks of ~1 MB of weights, as many per thread, whole cache
     * lines of y each so threads never write the same line. Measured on
     * the 110M and 15M shapes: tasks of 512 KB to 2 MB ran level with
     * OpenMP's static halves, 256 KB lost up to 20%, 64 KB a third (each
     * task restarts the stream the prefetcher follows). */
    int threads = as_pool_size(pool);
    matvec_job j = {s, n, {0}, {0}, {NULL}, {NULL}};
    /* Native: each x quantized once here, not once per task (the
     * quantized bytes are the same either way, so are the outputs). */
    unsigned char buf[ACT_STACK];
    size_t used = 0;
    void *owned[AS_MATVEC_MAX] = {NULL};
    for (int i = 0; i < n; i++)
        if ((j.qdot[i] = native_kernel(s[i].w))) {
            size_t bytes = as_qdot_act_bytes(s[i].w->type, s[i].w->cols);
            void *a = used + bytes <= sizeof buf ? buf + used : (owned[i] = malloc(bytes));
            if (!a) { /* no memory: this product quantizes x in each task */
                j.qdot[i] = NULL;
                continue;
            }
            used += a == buf + used ? (bytes + 63) / 64 * 64 : 0;
            as_qdot_quantize(s[i].w->type, s[i].x, s[i].w->cols, a);
            j.act[i] = a;
        }
    long work = 0;
    for (int i = 0; i < n; i++) {
        long in = s[i].w->cols, out = s[i].w->rows;
        long per_thread = (in * out + 262143L * threads) / (262144L * threads);
        if (per_thread < 1) /* an empty product (a slice of no rows) */
            per_thread = 1;
        j.rows[i] = (int)(((out + per_thread * threads - 1) / (per_thread * threads) + 15) / 16 * 16);
        if (j.rows[i] < 16)
            j.rows[i] = 16;
        j.first[i + 1] = j.first[i] + (int)((out + j.rows[i] - 1) / j.rows[i]);
        work += in * out;
    }
    if (work < 65536 || threads == 1) {
        for (int i = 0; i < n; i++)
            matvec_spec_rows(&j, i, 0, s[i].w->rows);
    } else {
        as_pool_run(pool, matvec_task, &j, j.first[n]);
    }
    for (int i = 0; i < n; i++)
        free(owned[i]);
}

void as_matvec(as_pool *pool, const float *x, const as_weight *w, const float *b, float *y)
{
    as_matvec_spec s = {x, w, b, y};
    as_matvec_many(pool, &s, 1);
}

/* ---------------------------------------------------------------- layers */

void as_linear(const float *x, int n, const as_weight *w, const float *b, float *y)
{
    as_linear_pool(NULL, x, n, w, b, y);
}

typedef struct gemm_job {
    const float *x;
    const as_weight *w;
    const float *b;
    float *y;
    int n, in, out, cols; /* cols: output features per task (F32) */
    float *panels;        /* stored types: one panel per thread, or NULL */
    _Atomic unsigned busy; /* which of the panels are in use */
    int n_panels;
} gemm_job;

/* Rows of a stored type are decoded into float panels of this many rows,
 * each multiplied as it is made. */
#define PANEL_ROWS 64

/* Output features [c0, c1) of every position start at the bias, if any. */
static void gemm_bias(const gemm_job *j, int c0, int c1)
{
    if (j->b)
        for (int i = 0; i < j->n; i++)
            memcpy(j->y + (long)i * j->out + c0, j->b + c0, (size_t)(c1 - c0) * sizeof *j->y);
}

/* Output features [c0, c1) of every position: a single-threaded sgemm on
 * that slice of the weights, read in place. */
static void gemm_task(void *ctx, int t)
{
    const gemm_job *j = ctx;
    int c0 = t * j->cols, c1 = c0 + j->cols < j->out ? c0 + j->cols : j->out;
    gemm_bias(j, c0, c1);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->n, c1 - c0, j->in, 1.0f, j->x, j->in,
                (const float *)((const char *)j->w->data + (size_t)c0 * j->w->row_bytes),
                (int)(j->w->row_bytes / sizeof(float)), j->b ? 1.0f : 0.0f, j->y + c0, j->out);
}

/* Panel t of a stored type: rows [t·PANEL_ROWS, ...) decoded into a free
 * panel, then sgemm on it. The panels are the same whatever the thread
 * count, and so are the outputs: OpenBLAS's value for an output depends on
 * the shape of the call that makes it (measured: a 13-row call differs
 * from the same rows inside a 77-row one), so calls never follow threads. */
static void panel_task(void *ctx, int t)
{
    gemm_job *j = ctx;
    int r0 = t * PANEL_ROWS, m = j->out - r0 < PANEL_ROWS ? j->out - r0 : PANEL_ROWS;
    if (!j->panels) { /* no memory for panels: row by row, the same values to rounding */
        for (int i = 0; i < j->n; i++)
            for (int r = r0; r < r0 + m; r++)
                j->y[(long)i * j->out + r] = (j->b ? j->b[r] : 0.0f) + as_weight_dot(j->w, r, j->x + (long)i * j->in);
        return;
    }
    gemm_bias(j, r0, r0 + m);
    /* At most n_panels tasks run at once (one per thread), so one is free. */
    int k = 0;
    for (;; k = (k + 1) % j->n_panels)
        if (!(atomic_fetch_or(&j->busy, 1u << k) & (1u << k)))
            break;
    float *panel = j->panels + (size_t)k * PANEL_ROWS * (size_t)j->in;
    for (int r = 0; r < m; r++)
        as_weight_row(j->w, r0 + r, panel + (size_t)r * j->in);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, j->n, m, j->in, 1.0f, j->x, j->in, panel, j->in,
                j->b ? 1.0f : 0.0f, j->y + r0, j->out);
    atomic_fetch_and(&j->busy, ~(1u << k));
}

typedef struct qgemm_job {
    as_qdot_fn f;
    as_qdot_many_fn many;      /* NULL: f position by position */
    const unsigned char *acts; /* n positions' activations, quantized */
    size_t act_bytes;
    const as_weight *w;
    const float *b;
    float *y;
    int n;
} qgemm_job;

/* Positions taken against one panel of rows at a time: their activations
 * (QGEMM_POS x act_bytes, 26 KB at 768 Q8_0 columns) stay in the first
 * levels of cache while each row of the panel passes over them. */
#define QGEMM_POS 32

/* Rows [t·PANEL_ROWS, ...) of the weights against every position, in
 * blocks of QGEMM_POS positions; each row against AS_QDOT_POS positions
 * per kernel call, each (row, position) with the one-row kernel's bits,
 * so the outputs are those of any other tiling or thread count. */
static void qgemm_task(void *ctx, int t)
{
    const qgemm_job *j = ctx;
    int out = j->w->rows, r0 = t * PANEL_ROWS, r1 = r0 + PANEL_ROWS < out ? r0 + PANEL_ROWS : out;
    for (int i0 = 0; i0 < j->n; i0 += QGEMM_POS) {
        int i1 = i0 + QGEMM_POS < j->n ? i0 + QGEMM_POS : j->n;
        for (int r = r0; r < r1; r++) {
            const char *row = (const char *)j->w->data + (size_t)r * j->w->row_bytes;
            float bias = j->b ? j->b[r] : 0.0f;
            for (int i = i0; i < i1; i += AS_QDOT_POS) {
                int np = i1 - i < AS_QDOT_POS ? i1 - i : AS_QDOT_POS;
                float v[AS_QDOT_POS];
                const unsigned char *a = j->acts + (size_t)i * j->act_bytes;
                if (j->many)
                    j->many(row, a, j->act_bytes, np, j->w->cols, v);
                else
                    as_qdot_many_by_one(j->f, row, a, j->act_bytes, np, j->w->cols, v);
                for (int p = 0; p < np; p++)
                    j->y[(size_t)(i + p) * out + r] = j->b ? v[p] + bias : v[p];
            }
        }
    }
}

void as_linear_pool(as_pool *pool, const float *x, int n, const as_weight *wt, const float *b, float *y)
{
    int in = wt->cols, out = wt->rows;
    if (n == 1) {
        /* One position: the same kernel the interpreter's decode path uses,
         * so every consumer of a row computes it identically. */
        as_matvec(pool, x, wt, b, y);
        return;
    }
    if ((long)n * in * out < (1L << 20))
        pool = NULL;
    int threads = as_pool_size(pool);
    as_qdot_fn f = native_kernel(wt);
    size_t act_bytes = f ? as_qdot_act_bytes(wt->type, in) : 0;
    unsigned char *acts = f ? malloc(act_bytes * (size_t)n) : NULL;
    if (acts) {
        /* Native: every position quantized once, then each row of the
         * weights against every position, panel by panel; the same dots
         * as one position's, so a prompt equals its positions decoded. */
        for (int i = 0; i < n; i++)
            as_qdot_quantize(wt->type, x + (size_t)i * in, in, acts + (size_t)i * act_bytes);
        qgemm_job j = {f, native_kernel_many(wt), acts, act_bytes, wt, b, y, n};
        as_pool_run(pool, qgemm_task, &j, (out + PANEL_ROWS - 1) / PANEL_ROWS);
        free(acts);
        return;
    }
    if (f) { /* no memory for the positions' activations: row by row, the same values */
        for (int i = 0; i < n; i++)
            as_matvec_rows(x + (size_t)i * in, wt, b, y + (size_t)i * out, 0, out);
        return;
    }
    if (wt->type != AS_GGML_F32) {
        /* Decoded panels of a bounded size (threads x PANEL_ROWS rows),
         * never the whole matrix in float32. */
        gemm_job j = {x, wt, b, y, n, in, out, 0, NULL, 0, threads < 32 ? threads : 32};
        j.panels = malloc((size_t)j.n_panels * PANEL_ROWS * (size_t)in * sizeof *j.panels);
        as_pool_run(pool, panel_task, &j, (out + PANEL_ROWS - 1) / PANEL_ROWS);
        free(j.panels);
        return;
    }
    /* F32, read in place: one slice per thread, cut at multiples of 64
     * features (whole micro-kernel panels), so the slices' sgemm calls each
     * run at the single-threaded kernel's full speed. Unlike the panels,
     * these calls follow the thread count, and some of their shapes give
     * other bits than one whole call (measured with OpenBLAS 0.3.21: 2
     * positions x 768x768 split 384 + 384, 5 or 9 positions x 288x768 split
     * 192 + 96): a few-token F32 prompt can then differ in the last bits
     * between thread counts. Kept for the prompt speed the bench holds;
     * fixed slices (say out/4 whatever the threads) would make it exact. */
    int cols = (out + threads - 1) / threads;
    cols = (cols + 63) / 64 * 64;
    gemm_job j = {x, wt, b, y, n, in, out, cols, NULL, 0, 0};
    as_pool_run(pool, gemm_task, &j, (out + cols - 1) / cols);
}

void as_rope_angles(float *cs, int rope_dim, int pos, float base)
{
    for (int i = 0; i < rope_dim / 2; i++) {
        double theta = pos * pow(base, -2.0 * i / rope_dim);
        float c = (float)cos(theta), s = (float)sin(theta);
        /* Laid out for as_rope_apply: cos per element, then sin signed per element. */
        cs[2 * i] = cs[2 * i + 1] = c;
        cs[rope_dim + 2 * i] = -s;
        cs[rope_dim + 2 * i + 1] = s;
    }
}

void as_rope(const float *x, float *y, int n_heads, int d_head, int rope_dim, int pos, float base)
{
    for (int i = 0; i < rope_dim / 2; i++) {
        double theta = pos * pow(base, -2.0 * i / rope_dim);
        float c = (float)cos(theta), s = (float)sin(theta);
        for (int h = 0; h < n_heads; h++) {
            const float *xh = x + (long)h * d_head;
            float *yh = y + (long)h * d_head;
            float a = xh[2 * i], b = xh[2 * i + 1];
            yh[2 * i] = a * c - b * s;
            yh[2 * i + 1] = a * s + b * c;
        }
    }
    for (int h = 0; h < n_heads; h++)
        for (int i = rope_dim; i < d_head; i++)
            y[(long)h * d_head + i] = x[(long)h * d_head + i];
}

/* The engine's threads are its own pool's (interp.c sizes one from this
 * setting at each pass); OpenBLAS runs single-threaded inside the pool's
 * tasks. Its own threads would otherwise spin for a while after each
 * prompt's matrix products and take cores from the decode that follows
 * (measured: ~10% of the CPU time of a 256-token decode after a prompt). */
static _Atomic int engine_threads = 0;

/* OpenBLAS's pthread build exports this (its fork handler uses it); weak,
 * so a build of OpenBLAS without it still links. Serial OpenBLAS is no
 * alternative: Debian builds it without locking, and concurrent sgemm
 * calls from the pool's threads then corrupt each other's buffers
 * (measured: logits off by 2.7). */
extern int blas_thread_shutdown_(void) __attribute__((weak));

void as_set_threads(int n)
{
    static atomic_flag once = ATOMIC_FLAG_INIT;
    openblas_set_num_threads(1);
    if (!atomic_flag_test_and_set(&once) && blas_thread_shutdown_)
        blas_thread_shutdown_();
    engine_threads = n < 1 ? 1 : n;
}

int as_get_threads(void)
{
    if (!engine_threads) {
        /* First use: one per core this process may run on (taskset and
         * container cpusets included), at most 16 (decode's work is
         * memory-bound well before that). */
        cpu_set_t set;
        long n = sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : sysconf(_SC_NPROCESSORS_ONLN);
        as_set_threads(n < 1 ? 1 : n > 16 ? 16 : (int)n);
    }
    return engine_threads;
}

/* ---------------------------------------------------------------- rotary variants, gated GELU, soft-cap */

as_rope_spec as_rope_plain(int dim, float base)
{
    return (as_rope_spec){.dim = dim, .base = base, .mode = AS_ROPE_PAIRS, .freq_scale = 1.0f,
                          .attn_factor = 1.0f, .beta_fast = 32.0f, .beta_slow = 1.0f};
}

static bool rope_is_plain(const as_rope_spec *r)
{
    return r->freq_scale == 1.0f && r->ext_factor == 0.0f && r->attn_factor == 1.0f && !r->freqs;
}

/* YaRN's ramp: dimension pairs below corr[0] keep their extrapolated
 * angle, those above corr[1] are interpolated, linearly in between
 * (ggml's rope_yarn_corr_dims and rope_yarn_ramp, in the same float
 * arithmetic so the same dimensions fall on each side). */
static void yarn_corr(const as_rope_spec *r, float corr[2])
{
    float lb = 2 * logf(r->base);
    float lo = floorf((float)r->dim * logf((float)r->n_ctx_orig / (r->beta_fast * 2 * (float)M_PI)) / lb);
    float hi = ceilf((float)r->dim * logf((float)r->n_ctx_orig / (r->beta_slow * 2 * (float)M_PI)) / lb);
    corr[0] = lo > 0 ? lo : 0;
    corr[1] = hi < (float)(r->dim - 1) ? hi : (float)(r->dim - 1);
}

/* Pair i's angle at pos under a spec's scalings (corr: yarn_corr's, when
 * YaRN is on). */
static double rope_theta_i(const as_rope_spec *r, const float corr[2], int pos, int i)
{
    double extrap = pos * pow(r->base, -2.0 * i / r->dim) / (r->freqs ? r->freqs[i] : 1.0f);
    double theta = r->freq_scale * extrap;
    if (r->ext_factor != 0.0f) {
        float y = ((float)i - corr[0]) / fmaxf(0.001f, corr[1] - corr[0]);
        double mix = (1.0f - fminf(1.0f, fmaxf(0.0f, y))) * r->ext_factor;
        theta = theta * (1 - mix) + extrap * mix;
    }
    return theta;
}

void as_sinusoid_row(int pos, int n, float base, float *out)
{
    for (int j = 0; j + 1 < n; j += 2) {
        double a = pos * pow((double)base, -(double)j / n);
        out[j] = (float)sin(a);
        out[j + 1] = (float)cos(a);
    }
}

void as_rope_theta(const as_rope_spec *r, int pos, double *theta)
{
    float corr[2] = {0, 0};
    if (rope_is_plain(r)) {
        for (int i = 0; i < r->dim / 2; i++)
            theta[i] = pos * pow(r->base, -2.0 * i / r->dim); /* as as_rope_angles */
        return;
    }
    if (r->ext_factor != 0.0f)
        yarn_corr(r, corr);
    for (int i = 0; i < r->dim / 2; i++)
        theta[i] = rope_theta_i(r, corr, pos, i);
}

void as_rope_angles_spec(float *cs, const as_rope_spec *r, int pos)
{
    if (rope_is_plain(r)) {
        as_rope_angles(cs, r->dim, pos, r->base);
        return;
    }
    float corr[2] = {0, 0};
    double mscale = r->attn_factor;
    if (r->ext_factor != 0.0f) {
        yarn_corr(r, corr);
        mscale *= 1.0 + 0.1 * log(1.0 / r->freq_scale);
    }
    for (int i = 0; i < r->dim / 2; i++) {
        double theta = rope_theta_i(r, corr, pos, i);
        float c = (float)(cos(theta) * mscale), s = (float)(sin(theta) * mscale);
        cs[2 * i] = cs[2 * i + 1] = c;
        cs[r->dim + 2 * i] = -s;
        cs[r->dim + 2 * i + 1] = s;
    }
}

void as_rope_apply_halves(const float *x, float *y, int n_heads, int d_head, int rope_dim, const float *cs)
{
    int half = rope_dim / 2;
    /* x is (n_heads, d_head); pair (i, i + half) turns by angle i:
     * y[i] = a·c - b·s, y[i + half] = a·s + b·c */
    for (int h = 0; h < n_heads; h++) {
        const float *xh = x + (long)h * d_head;
        float *yh = y + (long)h * d_head;
        for (int i = 0; i < half; i++) {
            float a = xh[i], b = xh[i + half], c = cs[2 * i], s = cs[rope_dim + 2 * i + 1];
            yh[i] = a * c - b * s;
            yh[i + half] = a * s + b * c;
        }
        for (int j = rope_dim; j < d_head; j++)
            yh[j] = xh[j];
    }
}

void as_softcap(const float *x, float *y, long n, float cap)
{
    for (long i = 0; i < n; i++)
        y[i] = cap * tanhf(x[i] / cap);
}

void as_scale(float *x, long n, float s)
{
    for (long i = 0; i < n; i++)
        x[i] *= s;
}
