/* Tiny GGUF models built in memory with the engine's writer: valid gpt2
 * and llama files of a few KB (the seeds of the model and GGUF fuzz
 * targets) and, by changing the spec or the writer before serializing,
 * the broken ones the loader must refuse or warn about. Used by
 * tests/fuzz/make_corpus.c and tests/test_reliability.c. */
#ifndef ATTNSCOPE_TINY_MODELS_H
#define ATTNSCOPE_TINY_MODELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attnscope/gguf.h"

typedef struct tiny_spec {
    bool llama;
    uint32_t version;          /* GGUF 2 or 3 */
    int d_model, n_layer, n_head, n_head_kv, d_ff, n_ctx;
    int rope_dim;              /* llama: written when > 0 */
    as_ggml_type wtype;        /* matrices (norms and biases stay F32); Q8_0 needs d_model, d_ff % 32 == 0 */
    int tensor_layers;         /* layers whose tensors are written (default n_layer) */
    bool byte_tokens;          /* llama: add <0x00>..<0xFF> */
    const char *poison_tensor; /* when set, poison_value is written into this tensor's element 3 */
    float poison_value;
    int poison_at;             /* > 0: the element poisoned instead of 3 */
} tiny_spec;

/* A spec for a valid model: d_model 8, 1 layer, 2 heads, d_ff 16, context 8. */
void tiny_default(tiny_spec *sp, bool llama);
/* The writer for a spec (keys set with the writer's setters may then be
 * replaced before serializing). NULL on error (printed). */
as_gguf_writer *tiny_writer(const tiny_spec *sp);
/* Serializes and frees the writer; 0 on success. */
int tiny_serialize(as_gguf_writer *w, uint8_t **buf, size_t *size);
/* Writes the writer's file to path and frees the writer; 0 on success. */
int tiny_save(as_gguf_writer *w, const char *path);

/* Little-endian helpers for hand-made corruptions. */
void tiny_put_u32(uint8_t *p, uint32_t v);
void tiny_put_u64(uint8_t *p, uint64_t v);

#endif
