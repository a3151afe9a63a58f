/* The kernels against plain double-precision references, and the
 * invariants the interpreter relies on: a matrix-vector row has the same
 * bits whatever the thread count, the two-step rotary equals as_rope
 * bit for bit, the finite check finds a NaN or Inf anywhere. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/kernels.h"
#include "attnscope/pool.h"
#include "helpers.h"

KERNEL_ISA_PARAMS(kernels, softmax_matches_double_precision)
ParameterizedTest(int *isa, kernels, softmax_matches_double_precision)
{
    if (!use_kernels(*isa))
        return;
    /* Lengths around the vector width, and spreads that reach exp's underflow. */
    int lens[] = {1, 3, 15, 16, 17, 33, 300};
    float scales[] = {0.1f, 5.0f, 60.0f};
    for (size_t a = 0; a < sizeof lens / sizeof *lens; a++)
        for (size_t b = 0; b < 3; b++) {
            int n = lens[a];
            float *x = rand_vector((size_t)n, scales[b], (uint64_t)(n * 7 + b)), *y = malloc((size_t)n * 4);
            as_softmax(x, y, n);
            double mx = -INFINITY, sum = 0;
            for (int i = 0; i < n; i++)
                mx = fmax(mx, x[i]);
            for (int i = 0; i < n; i++)
                sum += exp((double)x[i] - mx);
            for (int i = 0; i < n; i++) {
                /* x - max is rounded to float first, which costs |x - max| ulps of 1. */
                double want = exp((double)x[i] - mx) / sum, tol = want * (3e-7 + (mx - x[i]) * 6e-8) + 1e-37;
                cr_assert_leq(fabs(y[i] - want), tol, "n %d scale %g [%d]: %.9g vs %.9g", n, scales[b], i, y[i], want);
            }
            free(x);
            free(y);
        }
}

KERNEL_ISA_PARAMS(kernels, softmax_keeps_nan_and_handles_infinities)
ParameterizedTest(int *isa, kernels, softmax_keeps_nan_and_handles_infinities)
{
    if (!use_kernels(*isa))
        return;
    float x[20] = {0}, y[20];
    x[3] = NAN;
    as_softmax(x, y, 20);
    cr_assert(isnan(y[3]) && isnan(y[0]), "a NaN score poisons the row, as expf's would");
    for (int i = 0; i < 20; i++)
        x[i] = i == 7 ? 0.0f : -INFINITY;
    as_softmax(x, y, 20);
    for (int i = 0; i < 20; i++)
        cr_assert_eq(y[i], i == 7 ? 1.0f : 0.0f);
}

/* The element-wise kernels run over a whole span (positions x width), which
 * passes 2^31 values on long contexts (128k positions x 28672 MLP units):
 * their counts are long, as as_add's, as_scale's and as_softcap's are. A
 * count narrowed to int does not compile. */
#define TAKES_LONG(f, type) _Static_assert(_Generic(&f, type: 1, default: 0), #f " takes a long count")
TAKES_LONG(as_gelu_tanh, void (*)(const float *, float *, long));
TAKES_LONG(as_gelu_erf, void (*)(const float *, float *, long));
TAKES_LONG(as_swiglu, void (*)(const float *, const float *, float *, long));
TAKES_LONG(as_geglu, void (*)(const float *, const float *, float *, long));
TAKES_LONG(as_add, void (*)(const float *, const float *, float *, long));
TAKES_LONG(as_scale, void (*)(float *, long, float));
TAKES_LONG(as_softcap, void (*)(const float *, float *, long, float));
TAKES_LONG(as_all_finite, bool (*)(const float *, long));

KERNEL_ISA_PARAMS(kernels, gelu_and_swiglu_match_libm)
ParameterizedTest(int *isa, kernels, gelu_and_swiglu_match_libm)
{
    if (!use_kernels(*isa))
        return;
    int n = 1000 + 7;
    float *x = rand_vector((size_t)n, 12.0f, 3), *u = rand_vector((size_t)n, 2.0f, 4), *y = malloc((size_t)n * 4);
    as_gelu_tanh(x, y, n);
    for (int i = 0; i < n; i++) {
        double v = x[i], want = 0.5 * v * (1 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        cr_assert_leq(fabs(y[i] - want), 1e-6 * (1 + fabs(want)), "gelu(%g) = %.9g, want %.9g", v, y[i], want);
    }
    as_swiglu(x, u, y, n);
    for (int i = 0; i < n; i++) {
        double g = x[i], want = g / (1 + exp(-g)) * u[i];
        cr_assert_leq(fabs(y[i] - want), 1e-6 * (1 + fabs(want)), "swiglu(%g) = %.9g, want %.9g", g, y[i], want);
    }
    float big[3] = {-200.0f, 200.0f, NAN}, one[3] = {1, 1, 1}, out[3];
    as_swiglu(big, one, out, 3);
    cr_assert(out[0] == 0.0f && out[1] == 200.0f && isnan(out[2]));
    free(x);
    free(u);
    free(y);
}

KERNEL_ISA_PARAMS(kernels, matvec_rows_have_the_same_bits_on_any_thread_count)
ParameterizedTest(int *isa, kernels, matvec_rows_have_the_same_bits_on_any_thread_count)
{
    if (!use_kernels(*isa))
        return;
    int out = 333, in = 291;
    float *w = rand_vector((size_t)out * in, 1.0f, 5), *x = rand_vector((size_t)in, 1.0f, 6), *b = rand_vector((size_t)out, 1.0f, 7);
    float *y1 = malloc((size_t)out * 4), *y2 = malloc((size_t)out * 4), *y3 = malloc((size_t)out * 4);
    as_pool *p;
    as_error err;
    cr_assert_eq(as_pool_new(&p, 3, &err), AS_OK);
    as_weight wt = as_weight_f32(w, out, in);
    as_matvec(NULL, x, &wt, b, y1);
    as_matvec(p, x, &wt, b, y2);
    as_linear(x, 1, &wt, b, y3);
    cr_assert_eq(memcmp(y1, y2, (size_t)out * 4), 0);
    cr_assert_eq(memcmp(y1, y3, (size_t)out * 4), 0, "the logit lens's rows equal the interpreter's");
    for (int r = 0; r < out; r++) {
        double want = b[r];
        for (int j = 0; j < in; j++)
            want += (double)w[(size_t)r * in + j] * x[j];
        cr_assert_leq(fabs(y1[r] - want), 1e-4, "row %d: %g vs %g", r, y1[r], want);
    }
    as_pool_free(p);
    free(w), free(x), free(b), free(y1), free(y2), free(y3);
}

static void count_task(void *ctx, int t)
{
    atomic_fetch_add((atomic_int *)ctx + t, 1);
}

Test(kernels, pool_runs_every_task_once)
{
    as_pool *p;
    as_error err;
    cr_assert_eq(as_pool_new(&p, 2, &err), AS_OK);
    cr_assert_eq(as_pool_size(p), 2);
    static atomic_int counts[64];
    for (int rep = 0; rep < 2000; rep++)
        as_pool_run(p, count_task, counts, 1 + rep % 64);
    for (int t = 0; t < 64; t++) {
        int want = 0;
        for (int rep = 0; rep < 2000; rep++)
            want += t < 1 + rep % 64;
        cr_assert_eq(atomic_load(&counts[t]), want, "task %d ran %d times, not %d", t, atomic_load(&counts[t]), want);
    }
    as_pool_free(p);
}

KERNEL_ISA_PARAMS(kernels, two_step_rope_equals_as_rope_bit_for_bit)
ParameterizedTest(int *isa, kernels, two_step_rope_equals_as_rope_bit_for_bit)
{
    if (!use_kernels(*isa))
        return;
    int heads = 3, dh = 48, rd = 32;
    float *x = rand_vector((size_t)heads * dh, 3.0f, 8), *a = malloc((size_t)heads * dh * 4), *b = malloc((size_t)heads * dh * 4);
    float cs[64];
    for (int pos = 0; pos < 300; pos += 37) {
        as_rope(x, a, heads, dh, rd, pos, 10000.0f);
        as_rope_angles(cs, rd, pos, 10000.0f);
        as_rope_apply(x, b, heads, dh, rd, cs);
        cr_assert_eq(memcmp(a, b, (size_t)heads * dh * 4), 0, "position %d", pos);
    }
    free(x), free(a), free(b);
}

KERNEL_ISA_PARAMS(kernels, norm_statistics_match_double_precision)
ParameterizedTest(int *isa, kernels, norm_statistics_match_double_precision)
{
    if (!use_kernels(*isa))
        return;
    int d = 301;
    float *x = rand_vector((size_t)d, 4.0f, 9), *w = rand_vector((size_t)d, 1.0f, 10), *y = malloc((size_t)d * 4);
    x[100] = 9.5f, x[7] = -9.75f, x[250] = 9.0f, x[33] = -8.5f;
    for (int rms = 0; rms < 2; rms++) {
        as_norm_stat st;
        as_norm_measure(x, d, 1e-5f, rms, &st);
        double sum = 0, sq = 0;
        for (int i = 0; i < d; i++)
            sum += x[i];
        for (int i = 0; i < d; i++)
            sq += (x[i] - (rms ? 0 : sum / d)) * (x[i] - (rms ? 0 : sum / d));
        cr_assert_float_eq(st.mean, sum / d, 1e-6);
        cr_assert_float_eq(st.var, sq / d, 1e-5);
        cr_assert_eq(st.min, -9.75f);
        cr_assert_eq(st.max, 9.5f);
        int want[4] = {7, 100, 250, 33};
        for (int k = 0; k < 4; k++)
            cr_assert_eq(st.top_dim[k], want[k], "top %d: dim %d", k, st.top_dim[k]);
        as_norm_apply(x, d, &st, rms, w, NULL, y);
        for (int i = 0; i < d; i++)
            cr_assert_float_eq(y[i], (x[i] - (rms ? 0 : st.mean)) / st.scale * w[i], 1e-5);
    }
    free(x), free(w), free(y);
}

KERNEL_ISA_PARAMS(kernels, finite_check_finds_nan_and_inf_anywhere)
ParameterizedTest(int *isa, kernels, finite_check_finds_nan_and_inf_anywhere)
{
    if (!use_kernels(*isa))
        return;
    float x[37];
    for (int at = 0; at < 37; at++)
        for (int k = 0; k < 3; k++) {
            for (int i = 0; i < 37; i++)
                x[i] = (float)i;
            cr_assert(as_all_finite(x, 37));
            x[at] = k == 0 ? NAN : k == 1 ? INFINITY : -INFINITY;
            cr_assert(!as_all_finite(x, 37), "missed %g at %d", x[at], at);
        }
}

KERNEL_ISA_PARAMS(kernels, mix_heads_matches_a_plain_sum_with_grouped_keys)
ParameterizedTest(int *isa, kernels, mix_heads_matches_a_plain_sum_with_grouped_keys)
{
    if (!use_kernels(*isa))
        return;
    /* 4 query heads on 2 key/value heads, d_head 20 (not a whole vector). */
    int heads = 4, kv = 2, dh = 20, keys = 37, ld = kv * dh;
    float *v = rand_vector((size_t)keys * ld, 1.0f, 11), *pat = rand_vector((size_t)heads * keys, 1.0f, 12);
    float z[80];
    const float *p[4] = {pat, pat + keys, pat + 2 * keys, pat + 3 * keys};
    as_mix_heads(p + 1, 3, keys, v, (size_t)ld, heads / kv, 1, z, dh); /* heads 1..3 */
    for (int h = 1; h < heads; h++)
        for (int j = 0; j < dh; j++) {
            double want = 0;
            for (int t = 0; t < keys; t++)
                want += (double)p[h][t] * v[(size_t)t * ld + (h / 2) * dh + j];
            cr_assert_float_eq(z[(h - 1) * dh + j], want, 1e-5, "head %d [%d]", h, j);
        }
    free(v), free(pat);
}

Test(kernels, pools_come_and_go_with_or_without_jobs)
{
    /* A worker woken by the pool's end must not run a job that never was. */
    for (int rep = 0; rep < 200; rep++) {
        as_pool *p;
        as_error err;
        cr_assert_eq(as_pool_new(&p, 1 + rep % 3, &err), AS_OK);
        static atomic_int counts[8];
        if (rep % 2)
            as_pool_run(p, count_task, counts, 8);
        as_pool_free(p);
    }
}

/* as_rope_theta (view positions) gives the angles as_rope_angles_spec
 * takes the cos and sin of: plain, pos · base^(-2i/dim) exactly as
 * written; under YaRN (the fast pairs keep their angle, the slow ones are
 * divided by the factor, a ramp between) and per-pair divisors,
 * cos(theta) · mscale and sin(theta) · mscale equal the spec's table. */
Test(kernels, rope_theta_is_the_angle_the_rotation_uses)
{
    enum { DIM = 16 };
    double th[DIM / 2];
    float cs[2 * DIM];
    as_rope_spec plain = as_rope_plain(DIM, 10000.0f);
    as_rope_theta(&plain, 7, th);
    for (int i = 0; i < DIM / 2; i++)
        cr_assert_float_eq(th[i], 7 * pow(10000.0, -2.0 * i / DIM), 1e-12, "plain pair %d", i);
    static const float freqs[DIM / 2] = {1, 1, 1.5f, 2, 3, 4, 6, 8};
    as_rope_spec yarn = plain;
    yarn.freq_scale = 0.25f;
    yarn.ext_factor = 1.0f;
    yarn.attn_factor = 1.0f;
    yarn.beta_fast = 32.0f;
    yarn.beta_slow = 1.0f;
    yarn.n_ctx_orig = 64;
    as_rope_spec divided = plain;
    divided.freqs = freqs;
    const as_rope_spec *specs[] = {&yarn, &divided};
    for (int k = 0; k < 2; k++) {
        const as_rope_spec *r = specs[k];
        double mscale = r->attn_factor * (r->ext_factor != 0 ? 1 + 0.1 * log(1 / r->freq_scale) : 1);
        for (int pos = 0; pos < 300; pos += 37) {
            as_rope_theta(r, pos, th);
            as_rope_angles_spec(cs, r, pos);
            for (int i = 0; i < DIM / 2; i++) {
                cr_assert_float_eq(cos(th[i]) * mscale, cs[2 * i], 1e-6, "spec %d pos %d pair %d: cos", k, pos, i);
                cr_assert_float_eq(sin(th[i]) * mscale, cs[DIM + 2 * i + 1], 1e-6, "spec %d pos %d pair %d: sin", k,
                                   pos, i);
            }
        }
    }
    /* YaRN leaves the fastest pair's angle unscaled and divides the slowest's by the factor */
    as_rope_theta(&yarn, 100, th);
    cr_assert_float_eq(th[0], 100.0, 1e-9);
    cr_assert_float_eq(th[DIM / 2 - 1], 100 * pow(10000.0, -2.0 * (DIM / 2 - 1) / DIM) * 0.25, 1e-9);
}
