/* engine: what a front calls of the engine besides the session and its
 * accessors (session.h, view_api.h): the machine's settings, opening a
 * model for `--info` and the batch run, and the readers that take the
 * engine's objects as opaque pointers (types.h). The engine's own headers
 * (src/attnscope/) include this one and declare the rest. */
#ifndef ATTNSCOPE_ENGINE_H
#define ATTNSCOPE_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "attnscope/error.h"
#include "attnscope/types.h"

/* ---- the machine (the rest: src/attnscope/kernels.h) ---- */

/* The instruction set the vector kernels use ("avx512", "avx2" or
 * "generic"): the widest this CPU runs, chosen at first use, unless
 * as_kernels_use chose another. */
const char *as_kernels_isa(void);
/* Chooses the vector kernels by that name for the whole process; false,
 * with nothing changed, when this build or CPU has none such. Meant for
 * before any work starts (tests, comparing paths, an older CPU's results). */
bool as_kernels_use(const char *name);
/* Number of threads the engine uses: its pool's size (OpenBLAS itself is
 * kept single-threaded and runs inside the pool's tasks). */
void as_set_threads(int n);
int as_get_threads(void);
/* The arithmetic of products with quantized weight matrices, for the
 * whole process: "native" (llama.cpp's: each activation row quantized to
 * the weight type's vec_dot_type, integer dot products; the default) or
 * "f32" (float32 activations, the model's exact arithmetic).
 * F32, F16 and BF16 weights always take float32. as_set_activations is
 * false, with nothing changed, for another name. A session recomputes
 * what it computed under the other setting (as_interp_stale). */
bool as_set_activations(const char *name);
const char *as_get_activations(void);
/* The setting in words, with the kernels native mode runs on: for `info`,
 * `--version` and figures' provenance. */
const char *as_activations_describe(void);

/* Attention patterns (capture.c): stored in full, computed on demand from
 * the captured q and k (linear in the context, the same bits), or auto
 * (stored while they fit the capture budget). A process-wide setting read
 * when a context is computed anew: `--patterns`, `set patterns`. */
typedef enum as_patterns { AS_PATTERNS_AUTO, AS_PATTERNS_STORED, AS_PATTERNS_ON_DEMAND } as_patterns;
bool as_set_patterns(const char *mode); /* "stored", "on-demand", "auto"; false for anything else */
as_patterns as_get_patterns(void);
const char *as_patterns_describe(void);

/* ---- a model: opening, the checks of `--info` (model.h, gguf.h, hf.h) ---- */

/* Loads a GGUF file, a Hugging Face directory (hf.h) or a llama2.c
 * checkpoint (told apart from GGUF by its magic);
 * a checkpoint's tokenizer is looked for as tokenizer.bin (see llama2c.h). */
int as_model_load(as_model **out, const char *path, as_error *err);
/* The same with a llama2.c tokenizer file given (NULL: look for it). */
int as_model_load_with(as_model **out, const char *path, const char *tokenizer, as_error *err);
void as_model_free(as_model *m);
/* general.architecture of the loaded model ("gpt2", ...). */
const char *as_model_arch_name(const as_model *m);
/* What `--info` says of a file's tensors against its architecture: every
 * tensor the architecture needs and the file lacks or shapes otherwise
 * (each named; loading stops at the first), and every tensor of the file
 * it does not use (a warning). Prints nothing for a file whose
 * architecture attnscope does not run, beyond saying so. Returns AS_OK
 * when the model would load (unused tensors are only warnings), else
 * AS_ERR with why (may be NULL) saying the first reason. */
int as_model_print_check(as_gguf *g, FILE *out, as_error *why);
/* Opens and memory-maps path; validates the whole header, metadata and
 * tensor table. On failure *out is NULL and err names file, offset, field. */
int as_gguf_open(as_gguf **out, const char *path, as_error *err);
void as_gguf_close(as_gguf *g);
/* Prints a model card: architecture, hyperparameters ({arch}.* keys),
 * vocabulary size, tokenizer kind, then a table of tensors (name, type,
 * shape, bytes) and a table of metadata keys (long arrays summarized). */
void as_gguf_print_info(const as_gguf *g, FILE *out);
/* True when path is a directory holding config.json. */
bool as_hf_is_dir(const char *path);
/* Opens a directory as a GGUF view (tokenizer.json included). */
int as_hf_open(as_gguf **out, const char *dir, as_error *err);

/* ---- the program (program.h) ---- */

/* The hook of a kind in a layer (layer -1 for non-block hooks), or -1. */
int as_program_hook(const as_program *p, as_hook_kind kind, int layer);
/* The same among one stream's hooks (an encoder-decoder's decoder: its
 * blocks are numbered as the encoder's), or -1. */
int as_program_hook_in(const as_program *p, as_hook_kind kind, int layer, int stream);
/* The op that fills a hook, or NULL. */
const as_op *as_program_producer(const as_program *p, int hook);
/* The attention site of an attention hook (scores or pattern), or NULL. */
const as_attn *as_program_attn(const as_program *p, int hook);
/* The pattern hook of a pick's site (as_site_pick) in block `layer`, or -1 where there is none. */
int as_program_pattern(const as_program *p, int layer, as_site_pick pick);
/* The stream a pick's queries belong to, or -1 where the program has no such site. */
int as_program_pick_stream(const as_program *p, as_site_pick pick);
/* Whether query position q of a site sees key position k. */
bool as_attn_visible(const as_attn *a, int q, int k);

/* ---- the interpreter (interp.h) ---- */

/* What stands at a stream's position (as_position). */
void as_interp_position(const as_interp *it, int stream, int pos, as_position *out);
/* Logits at the position the program gives them (the last; a ViT's
 * [CLS]), if its pass is complete; else NULL. */
const float *as_interp_logits(const as_interp *it);
/* The op the interpreter will run next, or NULL when the pass is complete. */
const as_op *as_interp_current(const as_interp *it);
/* True when something is computed and the rules changed since (an
 * intervention added or removed, or the rules turned off or on). */
bool as_interp_stale(const as_interp *it);

/* ---- the capture (capture.h) ---- */

/* The default budget in MB: half of this machine's memory, at least 1024
 * (storage is committed only as positions are written). */
size_t as_capture_default_mb(void);
bool as_capture_has(const as_capture *c, int hook);
/* Readers; the caller checks pos < filled[hook]. */
const float *as_capture_row(const as_capture *c, int hook, int pos);
/* Attention weight or score at (head, q, k); a key the site hides from q
 * gives -inf for scores and 0 for patterns, as TransformerLens stores them. */
float as_capture_attn(const as_capture *c, int hook, int head, int q, int k);
/* One cell of a zoomed-out heatmap: queries [q0, q1) by keys [k0, k1) of
 * one head, rows from `filled` on not computed yet. The cell is the
 * largest weight (mean false) or the mean of the weights (true) of the
 * block's visible, computed cells; masked cells are left out (never
 * averaged in as zeros). Returns AS_BLOCK_VALUE with *v set, or
 * AS_BLOCK_MASKED when every cell of the block is masked, AS_BLOCK_PENDING
 * when its visible cells are all in rows not computed yet. */
enum { AS_BLOCK_VALUE, AS_BLOCK_MASKED, AS_BLOCK_PENDING, AS_BLOCK_LATER };
int as_capture_attn_block(const as_capture *c, int hook, int head, int filled, int q0, int q1, int k0, int k1,
                          bool mean, float *v);
/* The same cells, as a heatmap asks for them, kept between reads: cell
 * (i, j) of one head's n_q x n_k map cut into blocks, either of zoom x
 * zoom tokens from position 0 (zoom > 0; the last ones short, as `zoom`
 * and the view's zoom cut them) or, zoom 0, into vq x vk blocks as even
 * as they come (cell i the queries [i n_q / vq, (i + 1) n_q / vq), the
 * grid's tiles). Equal to as_capture_attn_block over the block: a block
 * row's cells are made at once from its query rows, each read once (the
 * same sums in the same order: bit for bit), or, zoomed, from a finer
 * zoom's cells kept (the max bit for bit, the mean's double sum added in
 * another order), and kept until a pass, a new filled count or a change
 * of extents makes them stale (a few maps are kept, the least recently
 * read going first past a byte budget). */
int as_capture_attn_cells(const as_capture *c, int hook, int head, int filled, int n_q, int n_k, int zoom, int vq,
                          int vk, int i, int j, bool mean, float *v);
/* A bound on the time as_capture_attn_cells spends making cells, for a
 * view that must answer a key quickly: from now, once ms milliseconds have
 * passed and at least one tile of rows (32 queries) was added, a cell
 * whose block row is not made yet answers AS_BLOCK_LATER (no value: it
 * is neither masked nor computed yet) and the rows begun are kept, to go
 * on from where they stopped at the next read (the same sums in the same
 * order: the same bits as unbounded). ms < 0: no bound (the default: the
 * batch `zoom`, exports and figures always read complete cells). */
void as_capture_cells_budget(const as_capture *c, double ms);
/* How many cells answered AS_BLOCK_LATER since the bound was last set,
 * and (made) the sum over them of the share of their block row's queries
 * already added (0 to 1 each): a progress of late + made of those cells. */
int as_capture_cells_late(const as_capture *c);
double as_capture_cells_late_made(const as_capture *c);
const as_norm_stat *as_capture_norm(const as_capture *c, int hook, int pos);

/* ---- probabilities (sampler.h), the logit lens (instruments.h) ---- */

/* Softmax probabilities of logits (at temperature 1) into probs; a NaN
 * logit gets probability 0 (probs may be logits). */
void as_probs(const float *logits, int n, float *probs);
/* The same at temperature temp > 0 (logits / temp): what `gen` draws
 * from, before top-k and top-p; the one softmax the sampler and the view
 * share. */
void as_probs_temp(const float *logits, int n, float temp, float *probs);
/* Indices of the k largest values, largest first (NaN last). */
int as_top_indices(const float *x, int n, int k, int *idx);
/* The output head applied to one residual vector: logits[V]. The final
 * norm then the unembedding, after the head's own ops where it has some
 * (an encoder's masked-LM dense layer and GELU: program.head_first). */
void as_lens_logits(const as_program *p, const float *resid, float *logits);
/* The same for n vectors at once (logits[n][V]), as one matrix product:
 * what a lens over every layer, or every position, wants. AS_ERR (and
 * zeros) when out of memory. */
int as_lens_logits_rows(const as_program *p, const float *const *resid, int n, float *logits);

/* ---- the tokenizer (tokenizer.h) ---- */

/* bert: the separator ([SEP], which AS_TOK_ADD_SPECIAL appends, and
 * which ends each segment of a pair), mask ([MASK]) and padding tokens;
 * -1 when absent or for other kinds. */
int32_t as_tokenizer_sep(const as_tokenizer *t);
int32_t as_tokenizer_mask(const as_tokenizer *t);
int32_t as_tokenizer_pad(const as_tokenizer *t);
/* The stored vocabulary string of a token (e.g. "Ġthe", "▁the", "<0x0A>";
 * "#17" for id 17 of a file without a vocabulary). NULL if out of range. */
const char *as_tokenizer_piece(const as_tokenizer *t, int32_t id);
/* The bytes a single token stands for (byte tokens give their byte; BOS/EOS
 * give ""). Writes at most cap-1 bytes plus NUL; returns the byte count. */
size_t as_tokenizer_token_bytes(const as_tokenizer *t, int32_t id, char *buf, size_t cap);

#endif
