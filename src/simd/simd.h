/* The kernels that depend on the vector instructions, compiled once per
 * instruction set (src/simd/kernels_simd.c with -DAS_ISA=generic, avx2,
 * avx512; see the Makefile) and chosen at run time by kernels.c, which
 * forwards the public as_* functions to the chosen table. Each table's
 * functions are the same code at another vector width, so results agree
 * across tables within rounding (tests/test_kernels.c holds them to the
 * tolerances it states), and within one table bit for bit as before. */
#ifndef ATTNSCOPE_SIMD_H
#define ATTNSCOPE_SIMD_H

#include "attnscope/kernels.h"

typedef struct as_simd_ops {
    const char *name; /* "generic", "avx2", "avx512" */
    float (*dot)(const float *a, const float *b, int n);
    void (*weight_row)(const as_weight *w, int r, float *out);
    float (*weight_dot)(const as_weight *w, int r, const float *x);
    void (*matvec_rows)(const float *x, const as_weight *w, const float *b, float *y, int r0, int r1);
    void (*matvec_rows_ld)(const float *x, int in, const float *w, size_t ld, float *y, int r0, int r1);
    void (*mix_heads)(const float *const *p, int heads, int keys, const float *v, size_t ld, int group, int h0,
                      float *z, int dh);
    bool (*all_finite)(const float *x, long n);
    void (*norm_measure)(const float *x, int d, float eps, bool rms, as_norm_stat *st);
    void (*norm_apply)(const float *x, int d, const as_norm_stat *st, bool rms, const float *w, const float *b,
                       float *y);
    void (*gelu_tanh)(const float *x, float *y, long n);
    void (*swiglu)(const float *gate, const float *up, float *y, long n);
    void (*geglu)(const float *gate, const float *up, float *y, long n);
    void (*rope_apply)(const float *x, float *y, int n_heads, int d_head, int rope_dim, const float *cs);
    void (*softmax)(const float *x, float *y, int n);
    void (*add)(const float *a, const float *b, float *y, long n);
} as_simd_ops;

/* The tables this build has: generic everywhere; avx2 and avx512 on x86-64. */
extern const as_simd_ops as_simd_generic;
#if defined(__x86_64__)
extern const as_simd_ops as_simd_avx2, as_simd_avx512;
#endif

#endif
