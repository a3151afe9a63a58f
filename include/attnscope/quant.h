/* quant: the ggml tensor types and how their bytes become floats.
 * Owns the type table (one row per ggml type: its name, elements and bytes
 * per block, and attnscope's decoder for it when it has one), the scalar
 * conversions between float32 and f16 / bf16, decoding whole blocks of a
 * type to float32, and quantizing float32 to Q8_0 as ggml does.
 * A type attnscope cannot decode is refused by name, never guessed at.
 * Supporting another ggml type = a decoder in quant.c named in its row,
 * and its tests in tests/test_quant.c. */
#ifndef ATTNSCOPE_QUANT_H
#define ATTNSCOPE_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attnscope/error.h"

/* ggml tensor types, numbered as in ggml.h. Only those whose row has a
 * decoder can be read; the others are named so errors can say which. */
typedef enum as_ggml_type {
    AS_GGML_F32 = 0,
    AS_GGML_F16 = 1,
    AS_GGML_Q4_0 = 2,
    AS_GGML_Q4_1 = 3,
    AS_GGML_Q5_0 = 6,
    AS_GGML_Q5_1 = 7,
    AS_GGML_Q8_0 = 8,
    AS_GGML_Q8_1 = 9,
    AS_GGML_Q2_K = 10,
    AS_GGML_Q3_K = 11,
    AS_GGML_Q4_K = 12,
    AS_GGML_Q5_K = 13,
    AS_GGML_Q6_K = 14,
    AS_GGML_Q8_K = 15,
    AS_GGML_I8 = 24,
    AS_GGML_I16 = 25,
    AS_GGML_I32 = 26,
    AS_GGML_I64 = 27,
    AS_GGML_F64 = 28,
    AS_GGML_BF16 = 30,
} as_ggml_type;

#define AS_QK8_0 32 /* Q8_0 block: fp16 scale + 32 int8 */

/* Decodes n elements (a whole number of blocks) stored at src into out. */
typedef void (*as_ggml_to_f32_fn)(const uint8_t *src, uint64_t n, float *out);

/* One row of the type table. */
typedef struct as_ggml_traits {
    const char *name;         /* as ggml.h names it: "F32", "Q8_0", ... */
    uint32_t block_elems;     /* elements per block (1 for plain types) */
    uint32_t block_bytes;     /* bytes per block */
    as_ggml_to_f32_fn to_f32; /* NULL: attnscope cannot decode this type yet */
} as_ggml_traits;

/* The row of type t; NULL for numbers ggml.h does not define (or
 * attnscope does not know). */
const as_ggml_traits *as_ggml_traits_of(as_ggml_type t);
const char *as_ggml_type_name(as_ggml_type t); /* "F32", "Q8_0", ... or "unknown" */
/* Bytes for n elements of a type (n must be a multiple of the block size);
 * returns 0 for unknown types or on overflow. */
uint64_t as_ggml_nbytes(as_ggml_type t, uint64_t n);
bool as_ggml_type_supported(as_ggml_type t); /* has a decoder */
/* The decodable types for messages, "F32, F16, BF16, Q8_0": the plain
 * types, then the block types, each in ggml's order. */
void as_ggml_supported_list(char *buf, size_t cap);

/* Decodes n elements of type t (a whole number of its blocks) from src
 * into out. A type without a decoder, or a partial block, is an error
 * naming the type; out is left untouched. */
int as_dequantize(as_ggml_type t, const void *src, uint64_t n, float *out, as_error *err);

/* Scalar conversions, exposed for kernels, tests and the writer. */
float as_f16_to_f32(uint16_t h);
uint16_t as_f32_to_f16(float f);
float as_bf16_to_f32(uint16_t h);
uint16_t as_f32_to_bf16(float f); /* round to nearest even */
/* Quantize n floats (multiple of 32) into Q8_0 blocks as ggml does. */
void as_quantize_q8_0(const float *x, uint64_t n, uint8_t *out);

#endif
