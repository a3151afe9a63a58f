/* The benchmark (make bench): random-weight models of fixed shapes, timed
 * in attnscope and in the peers people would use instead. Not a test: it
 * reports numbers, it does not judge them. */
#ifndef ATTNSCOPE_BENCH_H
#define ATTNSCOPE_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "attnscope/quant.h"

#define BENCH_PROMPT 256 /* prompt tokens */
#define BENCH_GEN 256    /* greedy tokens generated */

/* A llama2.c-format shape (arch llama, shared classifier). */
typedef struct bench_llama_shape {
    const char *name;
    int dim, hidden, layers, heads, vocab, seq_len;
    int kv_heads;
    /* Timed only as llama.cpp's quantizations of it, against llama.cpp: a
     * 1B model in float32 would take minutes a run in every engine. */
    bool quant_only;
} bench_llama_shape;

/* The llama2.c tokenizer file for a shape's vocabulary size. */
void bench_tokenizer_path(const char *dir, const bench_llama_shape *s, char *buf, size_t cap);

/* Writes DIR/NAME.bin, DIR/tokenizer.bin and DIR/NAME.gguf unless they are
 * there already; returns 0 or prints why not and returns -1. */
int bench_make_llama(const char *dir, const bench_llama_shape *s);
/* A GPT-2 124M-shaped GGUF (12 layers, d 768, vocab 50257, context 1024). */
int bench_make_gpt2(const char *dir, const char *name);

/* The token ids every engine is given: BOS, ' ' and 254 letters for the
 * llama shapes (what run.c's encoder makes of the prompt text below), 256
 * letter pairs for GPT-2. */
void bench_llama_prompt(int32_t *ids, char *text, int cap);
void bench_gpt2_prompt(int32_t *ids);
int32_t bench_gpt2_start(void); /* the token decoding starts from */

/* Nanoseconds on CLOCK_MONOTONIC (comparable across processes). */
int64_t bench_now(void);

/* The attnscope side: run in a child process so its peak RSS is its own.
 * Prints "key value" lines to stdout. */
int bench_worker(int argc, char **argv);

/* The typed kernels alone (kernels.c): as_matvec per weight type in GB/s,
 * cold and hot, and as_linear_pool over a prompt; a markdown section. */
int bench_kernels(FILE *f, int threads);

/* Uniform values in [-1, 1) from a seed; one rows x cols matrix stored
 * as type (random codes with finite scales for the 4- to 6-bit types). */
void bench_fill(float *x, size_t n, uint64_t seed);
uint8_t *bench_encode(as_ggml_type type, int rows, int cols);

/* Native mode's prompt product (bench --only qgemm, qgemm.c): the
 * many-position kernels against the one-row loop they replaced, as time
 * ratios per type and shape; a markdown section. */
int bench_qgemm(FILE *f, int threads);

/* The backward pass against its forward at a model's shape (grad.c): a
 * markdown section, and the median ratio of their times in *ratio. */
int bench_grad(FILE *f, const char *gguf, int threads, int runs, double *ratio);

#endif
