/* Tests for llama.cpp's arithmetic on quantized weights (qdot.c), held to
 * ggml's own CPU backend (tests/ggml_ref.h: libggml-cpu-VARIANT.so of the
 * npm package, the variant llama.cpp loads on this CPU): the pairing of
 * each weight type with its activations' type, the activations quantized
 * byte for byte as its from_float does, and the dot products equal to its
 * vec_dot but for the order of float additions. The portable and AVX2
 * kernels give the same bits. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attnscope/gguf.h"
#include "attnscope/interp.h"
#include "attnscope/kernels.h"
#include "attnscope/program.h"
#include "attnscope/qdot.h"
#include "attnscope/quant.h"
#include "ggml_ref.h"
#include "helpers.h"

static void ggml_cpu_or_skip(const char *test)
{
    char why[512];
    int rc = ggml_ref_cpu_open(why, sizeof why);
    if (rc == GGML_REF_MISSING) {
        fprintf(stderr, "\n**** SKIP qdot::%s: NOT CHECKED AGAINST GGML: %s ****\n\n", test, why);
        cr_skip_test("not checked against ggml: %s", why);
    }
    cr_assert_eq(rc, GGML_REF_OK, "%s", why);
    cr_log_info("ggml %s, CPU variant %s", ggml_ref_version(), ggml_ref_cpu_variant());
}

/* The block types attnscope reads whose activations ggml quantizes. */
static const as_ggml_type quantized[] = {
    AS_GGML_Q4_0, AS_GGML_Q4_1, AS_GGML_Q5_0, AS_GGML_Q5_1, AS_GGML_Q8_0, AS_GGML_Q2_K,
    AS_GGML_Q3_K, AS_GGML_Q4_K, AS_GGML_Q5_K, AS_GGML_Q6_K, AS_GGML_IQ4_NL, AS_GGML_IQ4_XS,
};
#define N_QUANTIZED (int)(sizeof quantized / sizeof *quantized)

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float uniform(void) /* [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * (1.0 / (1ull << 23))) - 1.0f;
}

/* Activations as a model has them: a scale per 64 values from 1e-3 to 10,
 * one block of zeros, one spike, and values on rounding's halfway points
 * (k + 0.5 after the scaling ggml applies) in the first block. */
static void activations(float *x, int n)
{
    for (int i = 0; i < n; i++) {
        float scale = powf(10.0f, 4.0f * (float)((i / 64) % 5) / 4.0f - 3.0f);
        x[i] = uniform() * scale;
    }
    for (int i = 256; i < 512 && i < n; i++)
        x[i] = 0.0f;
    if (n > 700)
        x[700] = 50.0f;
    x[0] = 127.0f; /* max 127: id = 1, so x itself is rounded */
    for (int i = 1; i < 32; i++)
        x[i] = (float)(i % 7) - 3.5f;
}

Test(qdot, activation_types_are_ggmls)
{
    ggml_cpu_or_skip("activation_types_are_ggmls");
    for (int t = 0; t < AS_GGML_TYPE_END; t++) {
        if (!as_ggml_type_supported((as_ggml_type)t))
            continue;
        as_ggml_type ours = as_qdot_act_type((as_ggml_type)t);
        int theirs = ggml_ref_vec_dot_type(t);
        if (t == AS_GGML_F32 || t == AS_GGML_F16 || t == AS_GGML_BF16) {
            /* float weights keep float32 activations (ggml's F16 and BF16 pair with themselves) */
            cr_expect_eq(ours, AS_GGML_F32, "%s", as_ggml_type_name((as_ggml_type)t));
            continue;
        }
        cr_expect_eq((int)ours, theirs, "%s: attnscope pairs it with %s, ggml with %s", as_ggml_type_name((as_ggml_type)t),
                     as_ggml_type_name(ours), as_ggml_type_name((as_ggml_type)theirs));
        cr_expect_not_null(as_qdot_kernel(AS_QDOT_PORTABLE, (as_ggml_type)t), "%s has no kernel",
                           as_ggml_type_name((as_ggml_type)t));
    }
}

#define N 2304      /* 9 super-blocks, 72 blocks of 32 */
#define N_TAIL 2144 /* 67 blocks of 32 */

Test(qdot, activations_quantize_as_ggml_byte_for_byte)
{
    ggml_cpu_or_skip("activations_quantize_as_ggml_byte_for_byte");
    float *x = malloc(sizeof(float) * N);
    activations(x, N);
    const as_ggml_type by_act[] = {AS_GGML_Q8_0, AS_GGML_Q4_1, AS_GGML_Q4_K}; /* Q8_0, Q8_1, Q8_K */
    for (int k = 0; k < 3; k++) {
        as_ggml_type w = by_act[k], a = as_qdot_act_type(w);
        size_t bytes = as_qdot_act_bytes(w, N);
        cr_assert_eq((uint64_t)bytes, as_ggml_nbytes(a, N));
        uint8_t *ours = malloc(bytes), *theirs = calloc(1, bytes); /* ggml leaves a zero Q8_K block's sums unwritten */
        as_qdot_quantize(w, x, N, ours);
        ggml_ref_from_float(a, x, theirs, N);
        for (size_t i = 0; i < bytes; i++)
            cr_assert_eq(ours[i], theirs[i], "%s: byte %zu: 0x%02x, ggml 0x%02x", as_ggml_type_name(a), i, ours[i],
                         theirs[i]);
        free(ours);
        free(theirs);
    }
    free(x);
}

#define ROWS 16

/* For every type: rows quantized by ggml, activations quantized by ggml's
 * from_float; our dot against ggml's vec_dot, relative to Σ|w·x| of the
 * row (the size of the rounding a float sum of these terms may carry). */
Test(qdot, dots_equal_ggmls_vec_dot)
{
    ggml_cpu_or_skip("dots_equal_ggmls_vec_dot");
    float *w = malloc(sizeof(float) * ROWS * N), *x = malloc(sizeof(float) * N), *wd = malloc(sizeof(float) * N);
    uint8_t *q = malloc((size_t)ROWS * N * 2), *act = malloc((size_t)N * 2);
    for (int i = 0; i < ROWS * N; i++)
        w[i] = uniform() * (1.0f + (float)(i % 97) / 10.0f);
    activations(x, N);
    double worst_all = 0;
    for (int k = 0; k < N_QUANTIZED; k++)
        for (int len = 0; len < 2; len++) {
            /* N, and for the 32-blocks 67 of them: eight groups of eight and three after */
            as_ggml_type t = quantized[k];
            int n = len ? N_TAIL : N;
            if (n % (int)as_ggml_traits_of(t)->block_elems)
                continue;
            size_t row_bytes = (size_t)as_ggml_nbytes(t, n);
            ggml_ref_quantize(t, w, q, ROWS, n);
            ggml_ref_from_float(ggml_ref_vec_dot_type(t), x, act, n);
            as_qdot_fn portable = as_qdot_kernel(AS_QDOT_PORTABLE, t), avx2 = as_qdot_kernel(AS_QDOT_AVX2, t);
            double worst = 0;
            for (int r = 0; r < ROWS; r++) {
                const uint8_t *row = q + (size_t)r * row_bytes;
                float ours = portable(row, act, n), theirs = ggml_ref_vec_dot(t, n, row, act);
                float simd = avx2(row, act, n);
                cr_assert(memcmp(&ours, &simd, sizeof ours) == 0, "%s row %d: portable %.9g, avx2 %.9g",
                          as_ggml_type_name(t), r, ours, simd);
                as_dequantize(t, row, n, wd, NULL);
                double mag = 0;
                for (int i = 0; i < n; i++)
                    mag += fabs((double)wd[i] * x[i]);
                double rel = fabs((double)ours - theirs) / mag;
                worst = rel > worst ? rel : worst;
                cr_assert(rel <= 1e-6, "%s row %d of %d: %.9g, ggml %.9g (%.3g of sum |w·x| = %g)",
                          as_ggml_type_name(t), r, n, ours, theirs, rel, mag);
            }
            cr_log_info("%s, rows of %d: worst |ours - ggml| / sum|w·x| = %.3g", as_ggml_type_name(t), n, worst);
            worst_all = worst > worst_all ? worst : worst_all;
        }
    fprintf(stderr, "qdot: dots vs ggml %s vec_dot: worst |diff| / sum|w*x| = %.3g\n", ggml_ref_cpu_variant(), worst_all);
    free(w);
    free(x);
    free(wd);
    free(q);
    free(act);
}

/* A row of n weights of type t: random bytes, with finite random scales
 * (so comparisons are of numbers). */
static void random_row(uint8_t *row, as_ggml_type t, int n)
{
    const as_ggml_traits *tr = as_ggml_traits_of(t);
    size_t bytes = (size_t)as_ggml_nbytes(t, n);
    for (size_t i = 0; i < bytes; i++)
        row[i] = (uint8_t)(uniform() * 128 + 128);
    for (size_t b = 0; b < bytes; b += tr->block_bytes) {
        if (tr->d_off >= 0) {
            uint16_t h = as_f32_to_f16(uniform());
            row[b + tr->d_off] = (uint8_t)h, row[b + tr->d_off + 1] = (uint8_t)(h >> 8);
        }
        if (tr->dmin_off >= 0) {
            uint16_t h = as_f32_to_f16(uniform());
            row[b + tr->dmin_off] = (uint8_t)h, row[b + tr->dmin_off + 1] = (uint8_t)(h >> 8);
        }
    }
}

/* Portable and AVX2 agree bit for bit on random bytes too (any scales,
 * any codes, -128 in a Q8_0 weight), where ggml's quantizers would never
 * put them. */
Test(qdot, portable_equals_avx2_on_any_bytes)
{
    if (!as_qdot_isa_runs(AS_QDOT_AVX2)) {
        fprintf(stderr, "\n**** SKIP qdot::portable_equals_avx2_on_any_bytes: this CPU has no AVX2 ****\n\n");
        cr_skip_test("no AVX2");
    }
    float *x = malloc(sizeof(float) * N);
    activations(x, N);
    uint8_t *row = malloc((size_t)N * 2), *act = malloc((size_t)N * 2);
    for (int k = 0; k < N_QUANTIZED; k++) {
        as_ggml_type t = quantized[k];
        const as_ggml_traits *tr = as_ggml_traits_of(t);
        int n = tr->block_elems == 32 ? N_TAIL : N; /* a 32-block type: with blocks after the groups of 8 */
        as_qdot_quantize(t, x, n, act);
        for (int rep = 0; rep < 8; rep++) {
            random_row(row, t, n);
            float p = as_qdot_kernel(AS_QDOT_PORTABLE, t)(row, act, n), v = as_qdot_kernel(AS_QDOT_AVX2, t)(row, act, n);
            cr_assert(memcmp(&p, &v, sizeof p) == 0, "%s: portable %.9g, avx2 %.9g", as_ggml_type_name(t), p, v);
        }
    }
    free(x);
    free(row);
    free(act);
}

/* ---------------------------------------------------------------- wired into the engine */

/* A copy of the GGUF at src with every float32 matrix whose rows are
 * whole blocks of `type` quantized by ggml (the others stay float32). */
static void write_ggml_quantized(const char *src, const char *dst, as_ggml_type type)
{
    as_gguf *g;
    as_error err = {{0}};
    cr_assert_eq(as_gguf_open(&g, src, &err), AS_OK, "%s", err.msg);
    as_gguf_writer *w = as_gguf_writer_new(3);
    for (uint64_t i = 0; i < g->n_kv; i++)
        as_gguf_writer_copy_kv(w, &g->kvs[i]);
    uint32_t block = as_ggml_traits_of(type)->block_elems;
    int quantized_n = 0;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        if (t->n_dims != 2 || t->type != AS_GGML_F32 || t->ne[0] % block) {
            cr_assert_eq(as_gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, &err), AS_OK);
            continue;
        }
        uint8_t *q = malloc(as_ggml_nbytes(type, t->n_elements));
        ggml_ref_quantize(type, (const float *)t->data, q, (int64_t)(t->n_elements / t->ne[0]), t->ne[0]);
        cr_assert_eq(as_gguf_writer_add_tensor(w, t->name, type, t->n_dims, t->ne, q, &err), AS_OK, "%s", err.msg);
        free(q);
        quantized_n++;
    }
    cr_assert_gt(quantized_n, 0);
    cr_assert_eq(as_gguf_writer_write(w, dst, &err), AS_OK, "%s", err.msg);
    as_gguf_writer_free(w);
    as_gguf_close(g);
}

#define PROMPT "prompt-ids 1 5 6 9 12 3 7 2 8"

/* Logits after the prompt, copied (n_vocab floats). */
static float *logits_of(as_session *s)
{
    const float *l = as_interp_logits(s->it);
    cr_assert_not_null(l);
    float *c = malloc(sizeof(float) * s->model->cfg.n_vocab);
    memcpy(c, l, sizeof(float) * s->model->cfg.n_vocab);
    return c;
}

static void native_model(const char *src, as_ggml_type type, const char *test)
{
    ggml_cpu_or_skip(test);
    char path[128];
    snprintf(path, sizeof path, "/tmp/attnscope-qdot-%d-%s.gguf", (int)getpid(), as_ggml_type_name(type));
    write_ggml_quantized(src, path, type);
    cr_assert(as_set_activations("native"));

    /* the unembedding against ggml's vec_dot on the final norm's output */
    as_session *s = open_session(path, 64);
    run_ok(s, PROMPT "; finish");
    const as_program *p = s->prog;
    const as_weight *w = &p->ops[p->unembed].w;
    cr_assert_eq(w->type, type, "the unembedding is %s", as_ggml_type_name(w->type));
    int n_tok = s->it->out->n_tokens, hook = as_program_find_hook(p, "ln_final.hook_normalized");
    cr_assert_geq(hook, 0);
    const float *h = as_capture_row(s->cap, hook, n_tok - 1);
    cr_assert_not_null(h);
    uint8_t *act = malloc(as_qdot_act_bytes(type, w->cols));
    ggml_ref_from_float(ggml_ref_vec_dot_type(type), h, act, w->cols);
    float *l = logits_of(s), big = 0;
    for (int r = 0; r < w->rows; r++)
        big = fabsf(l[r]) > big ? fabsf(l[r]) : big;
    double worst = 0;
    for (int r = 0; r < w->rows; r++) {
        float theirs = ggml_ref_vec_dot(type, w->cols, (const uint8_t *)w->data + (size_t)r * w->row_bytes, act);
        double d = fabs((double)l[r] - theirs) / big;
        worst = d > worst ? d : worst;
        cr_assert(d <= 1e-6, "logit %d: %.9g, ggml %.9g", r, l[r], theirs);
    }
    fprintf(stderr, "qdot: %s logits vs ggml vec_dot: worst |diff| / max|logit| = %.3g\n", as_ggml_type_name(type), worst);

    /* the f32 arithmetic gives other logits (so native was in use), and
     * switching back recomputes: the session's state is stale */
    cr_assert(as_set_activations("f32"));
    cr_assert(as_interp_stale(s->it));
    run_ok(s, "top 1");
    float *lf = logits_of(s);
    cr_assert_neq(memcmp(l, lf, sizeof(float) * w->rows), 0);
    cr_assert(as_set_activations("native"));
    run_ok(s, "top 1");
    float *ln = logits_of(s);
    cr_assert_eq(memcmp(l, ln, sizeof(float) * w->rows), 0, "native again gives other bits");

    /* step == run, and 1 thread == 2 threads, bit for bit */
    as_session *st = open_session(path, 64);
    run_ok(st, PROMPT);
    do
        run_ok(st, "step");
    while (st->it->in_pass);
    float *ls = logits_of(st);
    cr_assert_eq(memcmp(l, ls, sizeof(float) * w->rows), 0, "stepping differs from running");
    as_set_threads(1);
    as_session *one = open_session(path, 64);
    run_ok(one, PROMPT "; finish");
    float *l1 = logits_of(one);
    as_set_threads(2);
    cr_assert_eq(memcmp(l, l1, sizeof(float) * w->rows), 0, "1 thread differs from 2");

    /* KV cache == recompute: the last token generated one at a time */
    as_session *kv = open_session(path, 64);
    run_ok(kv, "prompt-ids 1 5 6 9 12 3 7 2; finish; set temp 0; gen 1");
    int last = kv->it->out->tokens[kv->it->out->n_tokens - 1];
    char cmd[128];
    snprintf(cmd, sizeof cmd, "prompt-ids 1 5 6 9 12 3 7 2 %d; finish", last);
    as_session *re = open_session(path, 64);
    run_ok(re, cmd);
    run_ok(kv, "gen 1");
    run_ok(re, "gen 1");
    float *lk = logits_of(kv), *lr = logits_of(re), kvd = 0;
    for (int r = 0; r < w->rows; r++)
        kvd = fabsf(lk[r] - lr[r]) > kvd ? fabsf(lk[r] - lr[r]) : kvd;
    fprintf(stderr, "qdot: %s KV cache vs recompute: max |diff| = %.3g (max|logit| %.3g)\n", as_ggml_type_name(type),
            (double)kvd, (double)big);
    cr_assert(kvd <= 1e-5f * big, "KV cache %.3g from recompute", (double)kvd);

    free(act);
    free(l);
    free(lf);
    free(ln);
    free(ls);
    free(l1);
    free(lk);
    free(lr);
    close_session(s);
    close_session(st);
    close_session(one);
    close_session(kv);
    close_session(re);
    unlink(path);
}

Test(qdot, native_q8_0_model_matches_ggml_step_threads_kv)
{
    native_model("fixtures/tiny-llama.gguf", AS_GGML_Q8_0, "native_q8_0_model_matches_ggml_step_threads_kv");
}
Test(qdot, native_q4_k_model_matches_ggml_step_threads_kv)
{
    native_model("../models/austen-llama.gguf", AS_GGML_Q4_K, "native_q4_k_model_matches_ggml_step_threads_kv");
}

/* In native mode a prompt's product (many positions), a generated
 * token's (one position, rows shared among threads) and one row's dot
 * give the same bits for every type, with and without a bias. */
Test(qdot, native_products_agree_bit_for_bit)
{
    ggml_cpu_or_skip("native_products_agree_bit_for_bit");
    cr_assert(as_set_activations("native"));
    enum { ROWS_W = 96, POS = 37 }; /* two blocks of QGEMM_POS positions and a remainder of 1 after groups of 4 */
    float *w = malloc(sizeof(float) * ROWS_W * N), *x = malloc(sizeof(float) * POS * N), *bias = malloc(sizeof(float) * ROWS_W);
    float *y_many = malloc(sizeof(float) * POS * ROWS_W), *y_one = malloc(sizeof(float) * ROWS_W);
    uint8_t *q = malloc((size_t)ROWS_W * N * 2);
    for (int i = 0; i < ROWS_W * N; i++)
        w[i] = uniform();
    for (int p = 0; p < POS; p++)
        activations(x + (size_t)p * N, N);
    for (int r = 0; r < ROWS_W; r++)
        bias[r] = uniform();
    for (int k = 0; k < N_QUANTIZED; k++) {
        as_ggml_type t = quantized[k];
        ggml_ref_quantize(t, w, q, ROWS_W, N);
        as_weight m = {q, t, ROWS_W, N, (size_t)as_ggml_nbytes(t, N)};
        for (int with_bias = 0; with_bias < 2; with_bias++) {
            const float *b = with_bias ? bias : NULL;
            as_linear(x, POS, &m, b, y_many);
            for (int p = 0; p < POS; p++) {
                as_linear(x + (size_t)p * N, 1, &m, b, y_one);
                cr_assert_eq(memcmp(y_one, y_many + (size_t)p * ROWS_W, sizeof(float) * ROWS_W), 0,
                             "%s: position %d alone differs from the prompt's", as_ggml_type_name(t), p);
                for (int r = 0; r < ROWS_W; r++) {
                    float d = as_weight_dot(&m, r, x + (size_t)p * N);
                    if (b)
                        d += b[r];
                    cr_assert(memcmp(&d, &y_one[r], sizeof d) == 0, "%s row %d: dot %.9g, product %.9g",
                              as_ggml_type_name(t), r, d, y_one[r]);
                }
            }
        }
    }
    free(w);
    free(x);
    free(bias);
    free(y_many);
    free(y_one);
    free(q);
}

/* ---------------------------------------------------------------- vector code against the portable code */

static void avx2_or_skip(const char *test)
{
    if (!as_qdot_isa_runs(AS_QDOT_AVX2)) {
        fprintf(stderr, "\n**** SKIP qdot::%s: this CPU has no AVX2 ****\n\n", test);
        cr_skip_test("no AVX2");
    }
}

/* Rows that reach each branch of the quantizers: per 256 values one case
 * (random at a scale from 1e-30 to 1e30, zeros, ties at .5 after the
 * scaling, the largest magnitude negative and repeated, subnormals whose
 * inverse scale overflows to inf, a NaN, an inf, a block zero but for one
 * tiny value). */
static void hostile_activations(float *x, int n, int variant)
{
    for (int i = 0; i < n; i++) {
        int blk = i / 256, k = (blk + variant) % 9;
        float u = uniform();
        switch (k) {
        case 0: x[i] = u * powf(10.0f, (float)((i / 32) % 61 - 30)); break;
        case 1: x[i] = 0.0f; break;
        case 2: /* max 127 in each 32: the scale is 1 (Q8_0) or -1 (Q8_K), so k + .5 is a tie */
            x[i] = i % 32 == 5 ? 127.0f : (float)((int)(u * 120)) + 0.5f;
            break;
        case 3: x[i] = i % 256 == 77 || i % 256 == 200 ? -3.0f : u * 3.0f; break;
        case 4: x[i] = u * 1e-41f; break; /* subnormal: 127 / max is inf */
        case 5: x[i] = i % 256 == 13 ? NAN : u; break;
        case 6: x[i] = i % 256 == 40 ? -INFINITY : u; break;
        case 7: x[i] = i % 256 == 255 ? 1e-30f : 0.0f; break;
        default: x[i] = u * 1e30f; break;
        }
    }
}

Test(qdot, avx2_quantizers_write_the_portable_bytes)
{
    avx2_or_skip("avx2_quantizers_write_the_portable_bytes");
    enum { LEN = 256 * 18 };
    float *x = malloc(sizeof(float) * LEN);
    const as_ggml_type by_act[] = {AS_GGML_Q8_0, AS_GGML_Q4_1, AS_GGML_Q4_K}; /* Q8_0, Q8_1, Q8_K */
    size_t cap = as_qdot_act_bytes(AS_GGML_Q4_1, LEN) * 2;
    uint8_t *p = malloc(cap), *v = malloc(cap);
    long checked = 0;
    for (int variant = 0; variant < 9; variant++) {
        hostile_activations(x, LEN, variant);
        for (int k = 0; k < 3; k++) {
            size_t bytes = as_qdot_act_bytes(by_act[k], LEN);
            memset(p, 0xA5, bytes);
            memset(v, 0x5A, bytes); /* every byte written by both */
            as_qdot_quantize_isa(AS_QDOT_PORTABLE, by_act[k], x, LEN, p);
            as_qdot_quantize_isa(AS_QDOT_AVX2, by_act[k], x, LEN, v);
            for (size_t i = 0; i < bytes; i++)
                cr_assert_eq(p[i], v[i], "%s variant %d: byte %zu: portable 0x%02x, avx2 0x%02x",
                             as_ggml_type_name(as_qdot_act_type(by_act[k])), variant, i, p[i], v[i]);
            checked += (long)bytes;
        }
    }
    /* the rounding really met ties: 126.5 -> 126 and 125.5 -> 126 (half to even) in Q8_0 */
    float t[32] = {127.0f, 126.5f, 125.5f, -0.5f, 0.5f, 1.5f};
    uint8_t q[34];
    as_qdot_quantize_isa(AS_QDOT_AVX2, AS_GGML_Q8_0, t, 32, q);
    cr_expect(q[2] == 127 && q[3] == 126 && q[4] == 126 && q[5] == 0 && q[6] == 0 && q[7] == 2,
              "ties: %d %d %d %d %d %d", (int8_t)q[2], (int8_t)q[3], (int8_t)q[4], (int8_t)q[5], (int8_t)q[6], (int8_t)q[7]);
    cr_log_info("%ld bytes equal", checked);
    free(x);
    free(p);
    free(v);
}

/* The many-position kernels give each (row, position) the one-row
 * kernel's bits: random bytes for the weights (any codes, finite scales)
 * and for the activations' codes, activations with their own scales and
 * 16-sums as the quantizers write them, positions a stride apart that is
 * not their size, 1 to AS_QDOT_POS positions, every type and isa. */
Test(qdot, many_position_kernels_equal_the_one_row_dot)
{
    enum { POS = AS_QDOT_POS, PAD = 40 };
    float *x = malloc(sizeof(float) * N);
    uint8_t *row = malloc((size_t)N * 2), *act = malloc(((size_t)N * 2 + PAD) * POS);
    int with_many = 0;
    for (int isa = 0; isa < 2; isa++) {
        if (isa == AS_QDOT_AVX2 && !as_qdot_isa_runs(AS_QDOT_AVX2))
            continue;
        for (int k = 0; k < N_QUANTIZED; k++) {
            as_ggml_type t = quantized[k];
            const as_ggml_traits *tr = as_ggml_traits_of(t);
            int n = tr->block_elems == 32 ? N_TAIL : N;
            size_t ab = as_qdot_act_bytes(t, n), stride = ab + PAD;
            as_qdot_fn one = as_qdot_kernel((as_qdot_isa)isa, t);
            as_qdot_many_fn many = as_qdot_kernel_many((as_qdot_isa)isa, t);
            with_many += many != NULL;
            for (int rep = 0; rep < 6; rep++) {
                for (int p = 0; p < POS; p++) {
                    for (int i = 0; i < n; i++)
                        x[i] = uniform() * (float)(1 + (p + rep) % 5);
                    if (rep == 0 && p == 1)
                        memset(x, 0, sizeof(float) * 256); /* a zero block (Q8_K: zero scale and sums) */
                    as_qdot_quantize(t, x, n, act + (size_t)p * stride);
                    if (rep % 2) /* codes anywhere in -128..127, scales as quantized */
                        for (size_t b = 0; b < ab; b++) {
                            size_t blk = as_qdot_act_type(t) == AS_GGML_Q8_K ? 292 : as_qdot_act_type(t) == AS_GGML_Q8_1 ? 36 : 34;
                            size_t off = b % blk, first = blk == 292 ? 4 : blk == 36 ? 4 : 2, last = blk == 292 ? 260 : blk;
                            if (off >= first && off < last)
                                act[(size_t)p * stride + b] = (uint8_t)(uniform() * 128 + 128);
                        }
                    memset(act + (size_t)p * stride + ab, 0xEE, PAD);
                }
                random_row(row, t, n);
                for (int np = 1; np <= POS; np++) {
                    float got[POS];
                    if (many)
                        many(row, act, stride, np, n, got);
                    else
                        as_qdot_many_by_one(one, row, act, stride, np, n, got);
                    for (int p = 0; p < np; p++) {
                        float want = one(row, act + (size_t)p * stride, n);
                        cr_assert(memcmp(&want, &got[p], sizeof want) == 0,
                                  "%s %s, %d positions, position %d: one row %.9g, many %.9g", isa ? "avx2" : "portable",
                                  as_ggml_type_name(t), np, p, want, got[p]);
                    }
                }
            }
        }
    }
    /* the five bench types at least have their own on AVX2 */
    if (as_qdot_isa_runs(AS_QDOT_AVX2))
        cr_expect_geq(with_many, 5, "%d types with a many-position kernel", with_many);
    free(x);
    free(row);
    free(act);
}
