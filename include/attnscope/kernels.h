/* kernels: the numerical building blocks of a forward pass, on float32
 * row-major arrays. Matrix work goes through OpenBLAS. Pure functions of
 * their arguments: no state, no allocation except where noted. */
#ifndef ATTNSCOPE_KERNELS_H
#define ATTNSCOPE_KERNELS_H

#include <stdbool.h>

#define AS_NORM_TOP 4 /* largest-magnitude input dimensions kept per token */

/* What a norm saw at one token: the statistics an engineer checks first
 * when a layer misbehaves. `var` is the variance (LayerNorm) or the mean
 * square (RMSNorm); scale = sqrt(var + eps). */
typedef struct as_norm_stat {
    float mean, var, scale, min, max;
    int top_dim[AS_NORM_TOP];
    float top_val[AS_NORM_TOP];
} as_norm_stat;

/* y[n][out] = x[n][in] · w[out][in]ᵀ (+ b). x and y must not overlap. */
void as_linear(const float *x, int n, int in, const float *w, int out, const float *b, float *y);
/* Statistics of one token's input x[d]; fills st (including scale). */
void as_norm_measure(const float *x, int d, float eps, bool rms, as_norm_stat *st);
/* y = (x - mean) / scale * w + b (LayerNorm) or x / scale * w (RMSNorm). */
void as_norm_apply(const float *x, int d, const as_norm_stat *st, bool rms, const float *w,
                   const float *b, float *y);
void as_gelu_tanh(const float *x, float *y, int n);
/* y = silu(gate) * up */
void as_swiglu(const float *gate, const float *up, float *y, int n);
/* Rotary embedding as llama.cpp applies it for arch llama ("NORM" mode):
 * adjacent pairs (2i, 2i+1) of each head, i < rope_dim/2, rotated by
 * pos · base^(-2i/rope_dim). x and y are [n_heads][d_head]. */
void as_rope(const float *x, float *y, int n_heads, int d_head, int rope_dim, int pos, float base);
/* Softmax of x[n] into y[n] (max-subtracted). */
void as_softmax(const float *x, float *y, int n);
void as_add(const float *a, const float *b, float *y, long n);

/* Number of threads OpenBLAS uses (the engine's only knob on it). */
void as_set_threads(int n);
int as_get_threads(void);

#endif
