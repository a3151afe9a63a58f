/* ggml's own quantizers and decoders, the independent reference
 * tests/test_quant.c holds attnscope's decoders to: libggml-base.so of the
 * npm package @node-llama-cpp/linux-x64 (llama.cpp's ggml, built by
 * others), which `make llama-ref` fetches into build/llama-ref for every
 * comparison with llama.cpp. It is opened with dlopen at run time, so
 * nothing is built or linked against it and the suite still runs (and
 * says SKIP) where npm could not fetch it. */
#ifndef ATTNSCOPE_TEST_GGML_REF_H
#define ATTNSCOPE_TEST_GGML_REF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The library's path: $AS_GGML_LIB, else build/llama-ref's (from tests/). */
const char *ggml_ref_path(void);
/* Opens the library once. GGML_REF_MISSING (the caller skips, loudly):
 * it is not there to open; GGML_REF_WRONG (the caller fails): it is not
 * the ggml release these declarations mirror. why says which and where. */
enum { GGML_REF_OK, GGML_REF_MISSING, GGML_REF_WRONG };
int ggml_ref_open(char *why, size_t cap);
/* "v0.5.0 (de3ff81)": what was opened, for the log */
const char *ggml_ref_version(void);

/* ggml's row of its type table for type number t. */
typedef struct ggml_ref_type {
    const char *name; /* ggml's own spelling: "q4_K"; NULL for a number it has retired */
    int64_t block_elems;
    size_t block_bytes;
    bool can_quantize; /* from float32 without an importance matrix */
    bool can_decode;   /* has to_float */
} ggml_ref_type;
ggml_ref_type ggml_ref_type_of(int t);

/* ggml_quantize_chunk: rows x n_per_row floats into type t's blocks. */
size_t ggml_ref_quantize(int t, const float *src, void *dst, int64_t rows, int64_t n_per_row);
/* ggml's to_float: n values of type t. */
void ggml_ref_decode(int t, const void *src, float *out, int64_t n);

/* The CPU backend (libggml-cpu-VARIANT.so beside libggml-base.so, the
 * variant llama.cpp would load on this CPU: haswell with AVX2, else x64;
 * $AS_GGML_CPU_VARIANT names another):
 * its type traits, what llama.cpp multiplies with. Opens the base library
 * first; same return values as ggml_ref_open. */
int ggml_ref_cpu_open(char *why, size_t cap);
const char *ggml_ref_cpu_variant(void); /* "haswell" or "x64" */
/* Weight type t's vec_dot_type (the activations' type); -1: no vec_dot. */
int ggml_ref_vec_dot_type(int t);
/* Type t's from_float on the CPU backend: n floats into t's blocks. */
void ggml_ref_from_float(int t, const float *x, void *out, int64_t n);
/* Type t's vec_dot: a row of n weights · act (quantized to its vec_dot_type). */
float ggml_ref_vec_dot(int t, int n, const void *row, const void *act);

/* Frees ggml's quantization tables (LeakSanitizer would report them). */
void ggml_ref_close(void);

#endif
