/* weight: a weight matrix as the model file stores it. A view, never a
 * copy: data points into the memory-mapped file, rows stay in their GGUF
 * type (F32, F16, BF16, and every block type quant.c decodes: Q4_0 to
 * Q8_0, the K-quants, IQ4_NL, IQ4_XS), and kernels decode blocks as they
 * read them. So a model's
 * memory is its file, not a float32 expansion of it. Row r holds the
 * weights of output feature r (ggml's ne = [cols, rows]), so y = W · x
 * reads row by row. */
#ifndef ATTNSCOPE_WEIGHT_H
#define ATTNSCOPE_WEIGHT_H

#include <stdbool.h>
#include <stddef.h>

#include "attnscope/error.h"
#include "attnscope/gguf.h"

typedef struct as_weight {
    const void *data;    /* row 0, as stored */
    as_ggml_type type;
    int rows;            /* output features (ggml ne[1]) */
    int cols;            /* input features (ggml ne[0]); a multiple of the type's block */
    size_t row_bytes;    /* bytes from one row to the next */
} as_weight;

/* Types whose rows the kernels read in place. */
bool as_weight_type_readable(as_ggml_type t);
/* A float32 matrix in memory (rows x cols, row-major). */
as_weight as_weight_f32(const float *data, int rows, int cols);
/* Rows [r0, r0 + n) of w (a fused q/k/v matrix's slices). */
as_weight as_weight_rows(const as_weight *w, int r0, int n);
/* A 2-D (or 1 x N) tensor of the file as a weight; refuses, by the
 * tensor's name and type, a type the kernels cannot read. */
int as_weight_from_tensor(as_weight *w, const as_gguf_tensor *t, as_error *err);
/* Bytes the weight occupies as stored. */
size_t as_weight_bytes(const as_weight *w);

/* Row r decoded into out[cols]. */
void as_weight_row(const as_weight *w, int r, float *out);
/* Row r · x[cols], decoding on the fly; the same value as_matvec gives
 * for that row. */
float as_weight_dot(const as_weight *w, int r, const float *x);

#endif
