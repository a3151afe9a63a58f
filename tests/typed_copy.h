/* Typed copies of a model file (typed_copy.c). No Criterion: the
 * benchmark links it too. */
#ifndef ATTNSCOPE_TEST_TYPED_COPY_H
#define ATTNSCOPE_TEST_TYPED_COPY_H

#include "attnscope/gguf.h"

/* Writes a copy of the GGUF at src with every float32 matrix (2-D, or 3-D: a
 * stack of experts' matrices; rows a multiple of 32) stored as `type` (F16, BF16 or Q8_0, converted by the
 * project's own writer-side conversions), or, with type F32, every other
 * matrix decoded to float32 by the reference dequantizer; 0 on success. */
int write_typed_copy(const char *src, const char *dst, as_ggml_type type);

#endif
