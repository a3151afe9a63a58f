/* hf: Hugging Face model directories — config.json, model.safetensors (or
 * shards listed by model.safetensors.index.json) and tokenizer.json.
 *
 * A directory is presented as a GGUF view, as llama2c.h presents a
 * llama2.c checkpoint: an as_gguf (version 0, view_of says what it is)
 * whose metadata uses llama.cpp's keys for the architecture config.json's
 * model_type maps to, whose tensors carry llama.cpp's names and point into
 * the memory-mapped safetensors files, and whose tokenizer.ggml.* keys are
 * read from tokenizer.json. Every architecture file then loads it
 * unchanged. Tensors HF stores in another layout than llama.cpp's are
 * converted once into memory the view owns: GPT-2's Conv1D weights
 * ([in, out], transposed) and Llama's q/k rows (HF's rotate-half order,
 * permuted to llama.cpp's adjacent pairs as convert_hf_to_gguf.py does).
 *
 * Checked, each failure one message naming the file and the tensor: the
 * 8-byte header length (a JSON header over 100 MB is refused), the JSON,
 * each tensor's dtype (F32, F16, BF16), shape and data_offsets (inside the
 * file, size = shape x dtype, no two overlapping), every shard the index
 * names, config.json's model_type and keys, every tensor against the shape
 * config.json implies, no tensor left unmapped.
 * Reader: src/hf.c; the per-family mappings: src/arch_hf.c. */
#ifndef ATTNSCOPE_HF_H
#define ATTNSCOPE_HF_H

#include <stdbool.h>

#include "attnscope/engine.h"
#include "attnscope/error.h"
#include "attnscope/gguf.h"
#include "attnscope/model.h"

#define AS_HF_MAX_HEADER (100ull << 20) /* bytes of a safetensors JSON header */

/* Whether a path is such a directory (as_hf_is_dir) and opening it as a
 * GGUF view (as_hf_open): engine.h. */

/* as_hf_open, then the model. */
int as_hf_load(as_model **out, const char *dir, as_error *err);
/* Writes the view as a GGUF file (keys, tokenizer and tensors as the view
 * has them, each tensor in its stored type): what llama.cpp's converter
 * would write, so llama.cpp loads it. Written beside gguf_path and renamed
 * into place: nothing half-written. When note is not NULL it receives
 * (note_cap bytes at most) what llama.cpp will compute otherwise than the
 * directory says (the directory's semantics kept in keys of ours that
 * llama.cpp ignores), or "" when nothing. */
int as_hf_to_gguf(const char *dir, const char *gguf_path, char *note, size_t note_cap, as_error *err);
/* Opens path as a GGUF view if it is a directory, else as a GGUF file. */
int as_hf_open_any(as_gguf **out, const char *path, as_error *err);

#endif
