/* quant: the ggml tensor types and how their bytes become floats.
 * Owns the type table (one row per ggml type: its name, elements and bytes
 * per block, where its blocks keep their fp16 scales, and attnscope's
 * decoder for it when it has one), the scalar conversions between float32
 * and f16 / bf16, decoding whole blocks of a type to float32 (the reference
 * decoders: fused kernels must give their values), the health of a run of
 * blocks' scales, and quantizing float32 to Q8_0 as ggml does.
 * A type attnscope cannot decode is refused by name, never guessed at.
 * Supporting another ggml type = a decoder in quant.c named in its row,
 * and its tests in tests/test_quant.c. */
#ifndef ATTNSCOPE_QUANT_H
#define ATTNSCOPE_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attnscope/error.h"

/* ggml tensor types, numbered as in ggml.h (every type it defines; the
 * numbers it has retired have no row). Only those whose row has a decoder
 * can be read; the others are named so `--info` lists them and errors can
 * say which. */
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
    AS_GGML_IQ2_XXS = 16,
    AS_GGML_IQ2_XS = 17,
    AS_GGML_IQ3_XXS = 18,
    AS_GGML_IQ1_S = 19,
    AS_GGML_IQ4_NL = 20,
    AS_GGML_IQ3_S = 21,
    AS_GGML_IQ2_S = 22,
    AS_GGML_IQ4_XS = 23,
    AS_GGML_I8 = 24,
    AS_GGML_I16 = 25,
    AS_GGML_I32 = 26,
    AS_GGML_I64 = 27,
    AS_GGML_F64 = 28,
    AS_GGML_IQ1_M = 29,
    AS_GGML_BF16 = 30,
    AS_GGML_TQ1_0 = 34,
    AS_GGML_TQ2_0 = 35,
    AS_GGML_MXFP4 = 39,
    AS_GGML_NVFP4 = 40,
    AS_GGML_Q1_0 = 41,
    AS_GGML_Q2_0 = 42,
} as_ggml_type;

#define AS_GGML_TYPE_END 43 /* one past the largest number ggml.h gives a type */

#define AS_QK8_0 32 /* Q8_0 block: fp16 scale + 32 int8 */
#define AS_QK_K 256 /* the K-quants' (and IQ4_XS's) super-block */

/* Decodes n elements (a whole number of blocks) stored at src into out. */
typedef void (*as_ggml_to_f32_fn)(const uint8_t *src, uint64_t n, float *out);

/* One row of the type table. */
typedef struct as_ggml_traits {
    const char *name;         /* as ggml.h names it: "F32", "Q8_0", ... */
    uint32_t block_elems;     /* elements per block (1 for plain types) */
    uint32_t block_bytes;     /* bytes per block */
    as_ggml_to_f32_fn to_f32; /* NULL: attnscope cannot decode this type yet */
    int16_t d_off;            /* byte offset of the block's fp16 scale d; -1: none such */
    int16_t dmin_off;         /* of its fp16 scale of the mins (Q4_1, Q2_K, ...); -1: none */
} as_ggml_traits;

/* The row of type t; NULL for numbers ggml.h does not define (or
 * attnscope does not know). */
const as_ggml_traits *as_ggml_traits_of(as_ggml_type t);
const char *as_ggml_type_name(as_ggml_type t); /* "F32", "Q8_0", ... or "unknown" */
/* Bytes for n elements of a type (n must be a multiple of the block size);
 * returns 0 for unknown types or on overflow. */
uint64_t as_ggml_nbytes(as_ggml_type t, uint64_t n);
bool as_ggml_type_supported(as_ggml_type t); /* has a decoder */
/* The decodable types for messages, "F32, F16, BF16, Q4_0, ...": the
 * plain types, then the block types, each in ggml's order. AS_TYPE_LIST_CAP
 * bytes hold them all. */
#define AS_TYPE_LIST_CAP 192
void as_ggml_supported_list(char *buf, size_t cap);

/* Decodes n elements of type t (a whole number of its blocks) from src
 * into out. A type without a decoder, or a partial block, is an error
 * naming the type; out is left untouched. */
int as_dequantize(as_ggml_type t, const void *src, uint64_t n, float *out, as_error *err);

/* The health of a run of blocks, read from their fp16 scales alone. In
 * every type with a decoder, a block's values are all finite when its d
 * (and min scale) are, and none are when one is not: the scales find a
 * corrupt block without decoding it. */
typedef struct as_block_scan {
    uint64_t blocks;    /* blocks looked at */
    uint64_t zero;      /* whose d is +-0 (every value the block's min, or 0) */
    uint64_t bad;       /* whose d or min scale is NaN or Inf */
    uint64_t first_bad; /* index of the first bad block; UINT64_MAX if none */
    float first_bad_scale; /* its non-finite scale */
    float max_d;        /* the largest finite |d|; 0 if none */
} as_block_scan;

/* Whether type t's blocks carry fp16 scales as_ggml_scan_blocks reads. */
bool as_ggml_has_scales(as_ggml_type t);
/* Scans n_blocks blocks of type t at src into *s (all zero and
 * first_bad UINT64_MAX for a type without scales). */
void as_ggml_scan_blocks(as_ggml_type t, const void *src, uint64_t n_blocks, as_block_scan *s);

/* Scalar conversions, exposed for kernels, tests and the writer. */
float as_f16_to_f32(uint16_t h);
uint16_t as_f32_to_f16(float f);
float as_bf16_to_f32(uint16_t h);
uint16_t as_f32_to_bf16(float f); /* round to nearest even */
/* Quantize n floats (multiple of 32) into Q8_0 blocks as ggml does. */
void as_quantize_q8_0(const float *x, uint64_t n, uint8_t *out);

#endif
