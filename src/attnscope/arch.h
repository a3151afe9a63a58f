/* arch: the registry of architectures. An architecture file
 * (src/arch_gpt2.c, src/arch_llama.c, ...) exports one descriptor: the
 * name general.architecture gives it in GGUF, how it reads its
 * hyperparameters, how it loads and checks its tensors (into a weight
 * struct private to that file), and how it describes one forward pass as a
 * program. It runs nothing. Nothing outside src/arch_*.c names an
 * architecture or a GGUF tensor: everything else asks the program's facts.
 *
 * Adding an architecture: write src/arch_NAME.c exporting
 * `const as_arch as_arch_NAME`, add one line to the table in src/arch.c,
 * one fixture recipe and one row in the test table (see ARCHITECTURE.md). */
#ifndef ATTNSCOPE_ARCH_H
#define ATTNSCOPE_ARCH_H

#include <stddef.h>

#include "attnscope/error.h"
#include "attnscope/gguf.h"

typedef struct as_config as_config;
typedef struct as_model as_model;
typedef struct as_program as_program;
typedef struct as_tokenizer as_tokenizer;

typedef struct as_arch {
    const char *gguf_name; /* general.architecture */
    const char *block_prefix; /* its per-block tensors are "{prefix}N.": "blk." */
    /* Fills the hyperparameters from the file's "{arch}.*" keys, checked. */
    int (*read_config)(as_config *c, const as_gguf *g, as_error *err);
    /* Finds, checks and keeps its tensors: sets m->weights (one malloc'd
     * block, freed with free()) through the as_model_matrix/vector helpers.
     * Tensors of blocks past the block count are refused after it. */
    int (*load)(as_model *m, as_error *err);
    /* The op list for one forward pass over m->weights. */
    int (*build)(as_program *p, as_error *err);
    /* Optional (NULL: the file's tokenizer.ggml.* keys): the vocabulary of
     * a model whose output is no token, e.g. a classifier's class names,
     * so that views and `top` label its outputs by name. */
    int (*vocabulary)(as_tokenizer **out, const as_gguf *g, as_error *err);
} as_arch;

/* The architecture registered under a GGUF name, or NULL. */
const as_arch *as_arch_find(const char *gguf_name);
/* The registered names, ", "-separated (for messages). */
void as_arch_names(char *out, size_t cap);

#endif
