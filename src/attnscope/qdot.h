/* qdot: llama.cpp's arithmetic for quantized weights. Before a product
 * with a quantized matrix, ggml quantizes the activation row to its
 * type's vec_dot_type and takes the dot products on integers; this module
 * does the same, so that the numbers are the ones llama.cpp computes.
 *
 * The pairs, as ggml 0.25.1's CPU type traits give them (checked by
 * tests/test_qdot.c against ggml_get_type_traits_cpu):
 *   Q4_0, Q5_0, Q8_0, IQ4_NL          -> Q8_0 (fp16 d, 32 int8)
 *   Q4_1, Q5_1                        -> Q8_1 (fp16 d, fp16 s = d·Σq, 32 int8)
 *   Q2_K, Q3_K, Q4_K, Q5_K, Q6_K,
 *   IQ4_XS                            -> Q8_K (float d, 256 int8, 16 int16 sums)
 * The activations are quantized as ggml's x86 code does on any CPU with
 * AVX (127/max as the inverse scale, rounding half to even), which is
 * what llama.cpp runs on every x86-64 it ships a fast build for.
 *
 * One arithmetic whatever the instruction set: the integer sums are
 * exact and the float steps after them the same operations in the same
 * order in every kernel (qdot.c says which), so the portable and the AVX2
 * kernels give the same bits (tests/test_qdot.c). Against ggml's own
 * vec_dot the values differ only by the order of float additions and
 * ggml's FMA (measured: within 1.2e-7 of Σ|w·x|). */
#ifndef ATTNSCOPE_QDOT_H
#define ATTNSCOPE_QDOT_H

#include <stdbool.h>
#include <stddef.h>

#include "attnscope/quant.h"

typedef enum as_qdot_isa {
    AS_QDOT_PORTABLE, /* C, any CPU */
    AS_QDOT_AVX2,     /* AVX2 maddubs/madd on x86-64 with AVX2 (checked with the CPU) */
} as_qdot_isa;

/* The type ggml quantizes activations to for weight type w: AS_GGML_Q8_0,
 * AS_GGML_Q8_1 or AS_GGML_Q8_K; AS_GGML_F32 where attnscope keeps float32
 * (F32, F16, BF16, and the types it cannot read). */
as_ggml_type as_qdot_act_type(as_ggml_type w);
/* Bytes of one activation row of n elements quantized for weight type w
 * (n a multiple of w's block); 0 if as_qdot_act_type(w) is F32. */
size_t as_qdot_act_bytes(as_ggml_type w, int n);
/* x[n] quantized for weight type w into act (as_qdot_act_bytes bytes),
 * with AVX2 where the CPU has it. */
void as_qdot_quantize(as_ggml_type w, const float *x, int n, void *act);
/* The same on isa's code (AVX2 on a CPU without it: the portable code);
 * every isa writes the same bytes (tests/test_qdot.c). */
void as_qdot_quantize_isa(as_qdot_isa isa, as_ggml_type w, const float *x, int n, void *act);

/* One weight row (n elements of its type) · one quantized activation row. */
typedef float (*as_qdot_fn)(const void *row, const void *act, int n);
/* The kernel for weight type w on isa; NULL if w has no quantized
 * activations. A type without an AVX2 kernel gets the portable one. */
as_qdot_fn as_qdot_kernel(as_qdot_isa isa, as_ggml_type w);
/* The most positions a many-position kernel takes at once. */
#define AS_QDOT_POS 4
/* One weight row (n elements) against np positions' quantized activations,
 * stride bytes apart: out[p] for p < np, each with the bits the one-row
 * kernel of the same type and isa gives for that position
 * (tests/test_qdot.c); the weights' blocks are decoded once for
 * AS_QDOT_POS positions. */
typedef void (*as_qdot_many_fn)(const void *row, const void *act, size_t stride, int np, int n, float *out);
/* isa's many-position kernel for w, NULL where it has none (the portable
 * code, and AVX2 for Q2_K, Q3_K, IQ4_XS): then as_qdot_many_by_one with
 * the one-row kernel. */
as_qdot_many_fn as_qdot_kernel_many(as_qdot_isa isa, as_ggml_type w);
/* np positions through the one-row kernel f, one after another. */
void as_qdot_many_by_one(as_qdot_fn f, const void *row, const void *act, size_t stride, int np, int n, float *out);
/* Whether this CPU runs isa's kernels. */
bool as_qdot_isa_runs(as_qdot_isa isa);

#endif
