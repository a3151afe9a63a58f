#!/usr/bin/env python3
"""A Llama-3.2-1B-shaped GGUF (16 layers, 32 query heads over 8 key-value
heads of 64, d_model 2048, MLP 8192, vocabulary 128256, tied embeddings,
context_length 131072) whose weights are all zero F16, written as a
sparse file: its 2.5 GB of tensor data are a hole, so it costs nothing on
disk and loads at once. What it computes is meaningless (uniform
attention, zero logits); what matters is its shape, which sizes what the
capture must hold.
    python3 sparse_1b.py OUT.gguf"""
import os
import struct
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "recipes"))
from gguf_writer import GGUFWriter, GGML_F16, GGML_F32, _pack_string  # noqa: E402

L, D, H, KV, HD, FF, V, CTX = 16, 2048, 32, 8, 64, 8192, 128256, 131072
w = GGUFWriter(sys.argv[1])
w.add_string("general.architecture", "llama")
w.add_string("general.name", "zero-1b-shaped")
for k, v in [("block_count", L), ("embedding_length", D), ("feed_forward_length", FF), ("attention.head_count", H),
             ("attention.head_count_kv", KV), ("context_length", CTX), ("vocab_size", V), ("rope.dimension_count", HD)]:
    w.add_uint32("llama." + k, v)
w.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
w.add_float32("llama.rope.freq_base", 500000.0)
w.add_string("tokenizer.ggml.model", "none")
shapes = [("token_embd.weight", [D, V], GGML_F16), ("output_norm.weight", [D], GGML_F32)]
for i in range(L):
    b = "blk.%d." % i
    shapes += [(b + "attn_norm.weight", [D], GGML_F32), (b + "ffn_norm.weight", [D], GGML_F32),
               (b + "attn_q.weight", [D, H * HD], GGML_F16), (b + "attn_k.weight", [D, KV * HD], GGML_F16),
               (b + "attn_v.weight", [D, KV * HD], GGML_F16), (b + "attn_output.weight", [H * HD, D], GGML_F16),
               (b + "ffn_gate.weight", [D, FF], GGML_F16), (b + "ffn_up.weight", [D, FF], GGML_F16),
               (b + "ffn_down.weight", [FF, D], GGML_F16)]
# the header as GGUFWriter lays it out, the data a hole of the right size
parts = [b"GGUF", struct.pack("<IQQ", 3, len(shapes), len(w._kv))]
for key, packed in w._kv:
    parts += [_pack_string(key), packed]
off = 0
for name, ne, t in shapes:
    parts += [_pack_string(name), struct.pack("<I", len(ne)), struct.pack("<%dQ" % len(ne), *ne), struct.pack("<IQ", t, off)]
    n = 1
    for d in ne:
        n *= d
    off += -(-n * (2 if t == GGML_F16 else 4) // 32) * 32
head = b"".join(parts)
head += b"\0" * (-len(head) % 32)
with open(sys.argv[1], "wb") as f:
    f.write(head)
    f.truncate(len(head) + off)
