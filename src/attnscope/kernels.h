/* kernels: the numerical building blocks of a forward pass. Activations
 * are float32 row-major arrays; weight matrices are typed views (weight.h)
 * read in place and decoded as they are read: a fused decode-and-dot per
 * row for one position, and for many, rows decoded into bounded float
 * panels for sgemm (F32 rows go to sgemm as they are). Matrix-matrix work
 * goes through OpenBLAS; the matrix-vector products of a generated token,
 * attention over the KV cache and the elementwise functions are vectorized
 * here (GCC/Clang vector extensions, as wide as the target allows, F16C and
 * the AVX2/AVX-512 widening loads where the target has them). With
 * as_set_activations("native") (engine.h), every product with a quantized
 * matrix (these, as_weight_dot) instead quantizes each x row to the type's
 * vec_dot_type and takes llama.cpp's integer dots (qdot.h), the same bits
 * for a prompt, a token and a row. Pure functions of their arguments and
 * that setting: no other state, no allocation except where noted. */
#ifndef ATTNSCOPE_KERNELS_H
#define ATTNSCOPE_KERNELS_H

#include <stdbool.h>
#include <stddef.h>

#include "attnscope/engine.h"
#include "attnscope/weight.h"

/* as_norm_stat: types.h. The kernels chosen and the threads
 * (as_kernels_isa, as_kernels_use, as_set_threads): engine.h. */

typedef struct as_pool as_pool;

/* y[n][out] = x[n][in] · w[out][in]ᵀ (+ b). x and y must not overlap.
 * One row is a matrix-vector product (as_matvec_rows); more go to sgemm
 * (a stored type through 64-row float panels, allocated here: at most
 * threads x 64 x in floats, never the whole matrix). */
void as_linear(const float *x, int n, const as_weight *w, const float *b, float *y);
/* y[out] = w[out][in] · x[in] (+ b), rows shared among the pool's threads;
 * every row's value is the same whatever the thread count. */
void as_matvec(as_pool *pool, const float *x, const as_weight *w, const float *b, float *y);
/* Several such products as one job (q, k and v read the same input): one
 * hand-off between threads instead of one per product. */
#define AS_MATVEC_MAX 4
typedef struct as_matvec_spec {
    const float *x;
    const as_weight *w;
    const float *b;
    float *y;
} as_matvec_spec;
void as_matvec_many(as_pool *pool, const as_matvec_spec *s, int n);
/* as_linear with the work shared among the pool's threads (sgemm on
 * slices of output features; as_matvec for one position). For a stored
 * type the outputs are the same whatever the thread count; for F32 to
 * rounding (kernels.c says when not to the bit). */
void as_linear_pool(as_pool *pool, const float *x, int n, const as_weight *w, const float *b, float *y);
/* Rows [r0, r1) of the above on the calling thread. */
void as_matvec_rows(const float *x, const as_weight *w, const float *b, float *y, int r0, int r1);
/* The same with rows ld floats apart, no bias (attention: keys in the KV cache). */
void as_matvec_rows_ld(const float *x, int in, const float *w, size_t ld, float *y, int r0, int r1);
/* Σ a[i]·b[i], summed as the matrix-vector rows are. */
float as_dot(const float *a, const float *b, int n);
/* Attention outputs of heads h0 .. h0+heads-1 at one position:
 * z[h][0..dh) = Σ_t p[h][t] · v[t·ld + ((h0+h)/group)·dh ..], t < keys
 * (group: query heads per key/value head). */
void as_mix_heads(const float *const *p, int heads, int keys, const float *v, size_t ld, int group, int h0,
                  float *z, int dh);
/* False if any of x[n] is NaN or ±Inf. */
bool as_all_finite(const float *x, long n);
/* Statistics of one token's input x[d]; fills st (including scale). */
void as_norm_measure(const float *x, int d, float eps, bool rms, as_norm_stat *st);
/* y = (x - mean) / scale * w + b (LayerNorm) or x / scale * w (RMSNorm). */
void as_norm_apply(const float *x, int d, const as_norm_stat *st, bool rms, const float *w,
                   const float *b, float *y);
void as_gelu_tanh(const float *x, float *y, long n);
/* The exact GELU, 0.5·x·(1 + erf(x/√2)): PyTorch's nn.GELU() (torchvision's
 * ViT). Scalar: only small vision models use it, and erf has no vector form here. */
void as_gelu_erf(const float *x, float *y, long n);
/* y = silu(gate) * up */
void as_swiglu(const float *gate, const float *up, float *y, long n);
/* Rotary embedding as llama.cpp applies it for arch llama ("NORM" mode):
 * adjacent pairs (2i, 2i+1) of each head, i < rope_dim/2, rotated by
 * pos · base^(-2i/rope_dim). x and y are [n_heads][d_head]. */
void as_rope(const float *x, float *y, int n_heads, int d_head, int rope_dim, int pos, float base);
/* The same in two steps, so a pass computes each position's angles once:
 * cs holds 2·rope_dim floats (cos of pos · base^(-2i/rope_dim) at 2i and
 * 2i+1, then -sin at 2i and sin at 2i+1). Bit-identical to as_rope. */
void as_rope_angles(float *cs, int rope_dim, int pos, float base);
void as_rope_apply(const float *x, float *y, int n_heads, int d_head, int rope_dim, const float *cs);
/* Rotary positions as llama.cpp's rope op reads its facts: which pairs
 * of a head rotate together, the base, and the context-extension
 * scalings (linear, YaRN, per-frequency factors). */
typedef enum as_rope_mode {
    AS_ROPE_PAIRS,  /* (2i, 2i+1): llama.cpp's NORM mode (llama) */
    AS_ROPE_HALVES, /* (i, i + dim/2): its NEOX mode (qwen2, gemma, phi3) */
} as_rope_mode;
typedef struct as_rope_spec {
    int dim;            /* dimensions rotated per head (even, at most the head size) */
    float base;         /* theta_i = pos · base^(-2i/dim) */
    as_rope_mode mode;
    float freq_scale;   /* theta · freq_scale: 1 / the linear or YaRN factor (1: none) */
    float ext_factor;   /* YaRN (> 0): the fast dimensions keep their unscaled angle */
    float attn_factor;  /* cos and sin are scaled by it (YaRN adds 1 + 0.1 ln(factor)) */
    float beta_fast, beta_slow; /* YaRN's ramp, in rotations over n_ctx_orig */
    int n_ctx_orig;     /* YaRN: the context the model was trained on */
    const float *freqs; /* [dim/2] divisors of theta_i (llama 3's rope_freqs), or NULL */
    int offset;         /* the rotated dims start here in each head (DeepSeek's MLA: after the
                         * nope part); the others are copied */
} as_rope_spec;
/* No scaling: freq_scale 1, attn_factor 1, YaRN off, pairs. */
as_rope_spec as_rope_plain(int dim, float base);
/* cs for as_rope_apply (both modes read it): cos_i at 2i and 2i+1, then
 * -sin_i at dim + 2i and sin_i at dim + 2i + 1. Bit-identical to
 * as_rope_angles when the spec is plain. */
void as_rope_angles_spec(float *cs, const as_rope_spec *r, int pos);
/* The angle each pair i < dim/2 turns by at pos, as as_rope_angles_spec
 * computes it before its cos and sin (`view positions`). */
void as_rope_theta(const as_rope_spec *r, int pos, double *theta);
/* The original Transformer's sinusoidal positions at pos, n values:
 * [2i] = sin(pos / base^(2i/n)), [2i+1] the cosine, in double, rounded
 * once (the forward pass and `view positions` both call it). */
void as_sinusoid_row(int pos, int n, float base, float *out);
/* NEOX mode: pair (i, i + dim/2) of each head rotated by angle i. */
void as_rope_apply_halves(const float *x, float *y, int n_heads, int d_head, int rope_dim, const float *cs);
/* y = gelu_tanh(gate) * up (GEGLU: Gemma's MLP) */
void as_geglu(const float *gate, const float *up, float *y, long n);
/* y = cap · tanh(x / cap), in place allowed */
void as_softcap(const float *x, float *y, long n, float cap);
/* x *= s */
void as_scale(float *x, long n, float s);
/* Softmax of x[n] into y[n] (max-subtracted). */
void as_softmax(const float *x, float *y, int n);
void as_add(const float *a, const float *b, float *y, long n);

#endif
