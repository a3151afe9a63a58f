/* llama2c: checkpoints and tokenizers in the format of Andrej Karpathy's
 * llama2.c (what its run.c reads), so the same weights run here and there.
 *
 * A checkpoint (.bin) is seven int32 — dim, hidden_dim, n_layers, n_heads,
 * n_kv_heads, vocab_size (negative: the classifier is not shared with the
 * embedding) and seq_len — then float32 arrays stacked over layers:
 * token_embedding [vocab][dim], rms_att [L][dim], wq [L][dim][dim],
 * wk [L][kv_dim][dim], wv [L][kv_dim][dim], wo [L][dim][dim],
 * rms_ffn [L][dim], w1 [L][hidden][dim] (gate), w2 [L][dim][hidden] (down),
 * w3 [L][hidden][dim] (up), rms_final [dim], freq_cis_real and
 * freq_cis_imag [seq_len][head_size/2] (unused: rotary angles are
 * recomputed), and wcls [vocab][dim] when not shared. The architecture is
 * llama with rotary on adjacent pairs, RMSNorm eps 1e-5, rope base 10000.
 *
 * The file is memory-mapped and presented as a GGUF view: an as_gguf whose
 * metadata uses llama.cpp's keys and whose tensors (llama.cpp's names) point
 * into the map. The model loader, `info`, `weights` and `diff` then treat
 * it as any GGUF file (its version is 0, so the model card can say what
 * the file really is), and as_llama2c_to_gguf writes it out as one.
 *
 * A tokenizer file (tokenizer.bin) is int32 max_token_length, then for each
 * of the checkpoint's vocab_size tokens: float32 score, int32 length, the
 * bytes. Spaces are stored as ' ' (SentencePiece's '▁' in GGUF), ids 0, 1, 2
 * are unknown, BOS and EOS, and bytes are "<0xNN>" tokens. */
#ifndef ATTNSCOPE_LLAMA2C_H
#define ATTNSCOPE_LLAMA2C_H

#include "attnscope/error.h"
#include "attnscope/gguf.h"
#include "attnscope/model.h"

#define AS_L2C_HEADER_BYTES 28

/* Maps a checkpoint and validates every size against the file length; the
 * view's tensors point into the map (closed by as_gguf_close). */
int as_llama2c_open(as_gguf **out, const char *path, as_error *err);
/* Reads a tokenizer file holding n_vocab tokens. */
int as_llama2c_tokenizer(as_tokenizer **out, const char *path, int n_vocab, as_error *err);
/* A checkpoint with its tokenizer. tok_path NULL: tokenizer.bin beside the
 * checkpoint, then in the current directory. */
int as_llama2c_load(as_model **out, const char *path, const char *tok_path, as_error *err);
/* Writes checkpoint + tokenizer as an F32 GGUF file that llama.cpp loads. */
int as_llama2c_to_gguf(const char *path, const char *tok_path, const char *gguf_path, as_error *err);

#endif
