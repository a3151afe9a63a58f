"""Hugging Face-layout directories of the fixtures tiny-gpt2 and tiny-llama:
the same seeded PyTorch weights as make_fixtures.py builds (and writes as
GGUF), written as HF writes them — HF's tensor names and config.json keys,
safetensors files, a tokenizer.json — so attnscope's pass over the
directory can be held to the GGUF fixture's hooks.

    /usr/bin/python3 models/recipes/hf_fixtures.py            # write
    /usr/bin/python3 models/recipes/hf_fixtures.py --check    # rebuild in memory, compare bytes

Writes tests/fixtures/hf/tiny-gpt2/ (one model.safetensors, F32),
tests/fixtures/hf/tiny-llama/ (two shards and model.safetensors.index.json),
tiny-llama-yarn/, tiny-mistral/ and tiny-qwen3/ (the decoder fixtures
of those names: YaRN, a window with linear scaling, q/k norms with NEOX
rotary), tiny-gemma3/ (norms as w for 1 + w, local layers' rotary base),
tiny-bert/ (BertForMaskedLM's names, WordPiece, 1_Pooling),
tiny-t5/ and tiny-t5-relu/ (T5ForConditionalGeneration's names: Flan-T5's
gated GELU and T5's ReLU, the tied output stored as lm_head.weight),
tiny-vit/ (ViTForImageClassification's names, id2label, a
preprocessor_config.json; no tokenizer.json),
t5-ugm/ (a Unigram tokenizer.json made from t5-ugm.gguf's SentencePiece
vocabulary, around a T5 just large enough to carry it),
tiny-bert-erf/ (tiny-bert's weights with hidden_act "gelu", BERT's usual
exact erf GELU, which no GGUF fixture has: tiny-bert-erf.ref/ beside it
holds every hook of the PyTorch pass with F.gelu, checked here against
PyTorch's own nn.TransformerEncoderLayer(activation=F.gelu)),
and the same weights stored as F16 (tiny-gpt2-f16/) and BF16
(tiny-llama-bf16/), each with NAME.logits.npy beside it: the float64
PyTorch pass over the weights so rounded, on the fixture's tokens; and
llama3-rope-factors.npy: the rotary divisors transformers computes for
LLAMA3_SCALING on tiny-llama's rotary (the test puts that rope_scaling in a
copy of tiny-llama's config.json and reads attnscope's rope_freqs).

safetensors files are written by safetensors_writer.py (NumPy only, from
the format's specification; no `safetensors` package).

The layouts HF uses and llama.cpp's converter undoes:
  - GPT-2's Conv1D weights are [in, out]: the transpose of nn.Linear's;
  - Llama's q_proj / k_proj rows are in rotate-half order: for each head,
    the first components of the rotated pairs, then the second ones. The
    reference model (like the GGUF) rotates adjacent pairs, so its rows are
    un-permuted here: the inverse of convert_hf_to_gguf.py's permute.

tokenizer.json, as the tokenizers library writes it:
  - tiny-gpt2: byte-level BPE, its vocab and merges, ByteLevel
    pre-tokenizer (GPT-2's regex), no template (no BOS added);
  - tiny-llama: SentencePiece-style BPE with byte fallback, its merges made
    as HF's SentencePiece converter makes them (every split of a piece into
    two pieces, ordered by the piece's score), normalizer Prepend("▁") +
    Replace(" ", "▁"), a template that puts <s> first.
"""

import argparse
import dataclasses
import json
import math
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_fixtures as MF  # noqa: E402
from safetensors_writer import safetensors_bytes  # noqa: E402,F401  (tests/hfref/make_dir.py writes with it too)

OUT = os.path.join(MF.FIXTURES, "hf")


def f32(t):
    return t.detach().double().numpy().astype(np.float32)


def hf_pairs_to_halves(w, heads):
    """Adjacent-pair rows (llama.cpp, the reference) -> HF's rotate-half rows;
    convert_hf_to_gguf.py's permute() is the inverse of this."""
    rows = w.shape[0]
    dh = rows // heads
    return w.reshape(heads, dh // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def gpt2_dir(model, cfg, tok, dtype="F32", sharded=False):
    t = [("wte.weight", f32(model.tok_embd.weight)), ("wpe.weight", f32(model.pos_embd.weight))]
    for L, b in enumerate(model.blocks):
        p = "h.%d." % L
        t += [(p + "ln_1.weight", f32(b.ln1_w)), (p + "ln_1.bias", f32(b.ln1_b)),
              (p + "attn.c_attn.weight", f32(b.qkv.weight).T), (p + "attn.c_attn.bias", f32(b.qkv.bias)),
              (p + "attn.c_proj.weight", f32(b.o.weight).T), (p + "attn.c_proj.bias", f32(b.o.bias)),
              (p + "ln_2.weight", f32(b.ln2_w)), (p + "ln_2.bias", f32(b.ln2_b)),
              (p + "mlp.c_fc.weight", f32(b.up.weight).T), (p + "mlp.c_fc.bias", f32(b.up.bias)),
              (p + "mlp.c_proj.weight", f32(b.down.weight).T), (p + "mlp.c_proj.bias", f32(b.down.bias))]
    t += [("ln_f.weight", f32(model.lnf_w)), ("ln_f.bias", f32(model.lnf_b))]
    if model.out is not None:
        t.append(("lm_head.weight", f32(model.out.weight)))
    config = {
        "architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": cfg.vocab,
        "n_embd": cfg.d_model, "n_layer": cfg.n_layer, "n_head": cfg.n_head, "n_positions": cfg.ctx,
        "n_ctx": cfg.ctx, "n_inner": cfg.d_ff, "layer_norm_epsilon": cfg.eps,
        "activation_function": "gelu_new", "bos_token_id": tok["bos_token_id"],
        "eos_token_id": tok["eos_token_id"], "tie_word_embeddings": model.out is None,
    }
    eot = tok["tokens"].index("<|endoftext|>")
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": eot, "content": "<|endoftext|>", "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": True, "special": True}],
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
                           "use_regex": True},
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "vocab": {s: i for i, s in enumerate(tok["tokens"])},
                  "merges": list(tok["merges"])},
    }
    return {"model.safetensors": safetensors_bytes(t, dtype)}, config, tokenizer


def spm_merges(tokens, scores, types):
    """HF's SentencePiece BPE converter: for each normal piece, every split
    into two pieces of the vocabulary, ordered by the piece's score (then the
    halves' ids)."""
    vocab = {s: i for i, s in enumerate(tokens) if types[i] == 1}
    merges = []
    for piece, pid in vocab.items():
        for k in range(1, len(piece)):
            a, b = piece[:k], piece[k:]
            if a in vocab and b in vocab:
                merges.append((-scores[pid], vocab[a], vocab[b], a, b))
    merges.sort()
    return ["%s %s" % (m[3], m[4]) for m in merges]


def spm_tokenizer(tok):
    """tokenizer.json of a SentencePiece-style BPE (Llama 2's layout)."""
    tokens, types = tok["tokens"], tok["token_type"]
    special = [i for i, ty in enumerate(types) if ty in (2, 3)]
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": tokens[i], "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i in special],
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "\u2581"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}]},
        "pre_tokenizer": None,
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "<s>", "type_id": 0}},
                                    {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "<s>", "type_id": 1}},
                                    {"Sequence": {"id": "B", "type_id": 1}}],
                           "special_tokens": {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": {s: i for i, s in enumerate(tokens)},
                  "merges": spm_merges(tokens, tok["scores"], types)},
    }
    return tokenizer


def llama_dir(model, cfg, tok, dtype="F32", sharded=True):
    """Llama, Mistral (a window), Qwen 3 (q/k norms; NEOX rotary, which is
    HF's rotate-half already: its rows stay as they are)."""
    H, Hk = cfg.n_head, cfg.n_kv_head
    neox, qk_norm = getattr(cfg, "neox", False), getattr(cfg, "qk_norm", False)

    def qk(w, heads):
        return w if neox else hf_pairs_to_halves(w, heads)

    t = [("model.embed_tokens.weight", f32(model.tok_embd.weight))]
    for L, b in enumerate(model.blocks):
        p = "model.layers.%d." % L
        t += [(p + "input_layernorm.weight", f32(b.ln1_w)),
              (p + "self_attn.q_proj.weight", qk(f32(b.q.weight), H)),
              (p + "self_attn.k_proj.weight", qk(f32(b.k.weight), Hk))]
        if qk_norm:
            t += [(p + "self_attn.q_norm.weight", f32(b.q_norm_w)), (p + "self_attn.k_norm.weight", f32(b.k_norm_w))]
        t += [(p + "self_attn.v_proj.weight", f32(b.v.weight)),
              (p + "self_attn.o_proj.weight", f32(b.o.weight)),
              (p + "post_attention_layernorm.weight", f32(b.ln2_w)),
              (p + "mlp.gate_proj.weight", f32(b.gate.weight)),
              (p + "mlp.up_proj.weight", f32(b.up.weight)),
              (p + "mlp.down_proj.weight", f32(b.down.weight))]
    t.append(("model.norm.weight", f32(model.lnf_w)))
    if model.out is not None:
        t.append(("lm_head.weight", f32(model.out.weight)))
    if sharded:  # two shards: the embedding and layer 0, then the rest
        cut = 1 + 9
        shards = {"model-00001-of-00002.safetensors": t[:cut], "model-00002-of-00002.safetensors": t[cut:]}
        files = {k: safetensors_bytes(v, dtype) for k, v in shards.items()}
        index = {"metadata": {"total_size": sum(a.nbytes for _, a in t)},
                 "weight_map": {n: k for k, v in shards.items() for n, _ in v}}
        files["model.safetensors.index.json"] = (json.dumps(index, indent=2) + "\n").encode()
    else:
        files = {"model.safetensors": safetensors_bytes(t, dtype)}
    window = getattr(cfg, "window", 0)
    model_type = "qwen3" if qk_norm else "mistral" if window else "llama"
    sc = getattr(cfg, "rope_scaling", None)
    if sc is None:
        scaling = None
    elif sc[0] == "linear":
        scaling = {"rope_type": "linear", "factor": sc[1]}
    elif sc[0] == "yarn":
        scaling = {"rope_type": "yarn", "factor": sc[1], "original_max_position_embeddings": sc[2]}
    else:
        raise ValueError("no HF form written for rope scaling %r" % (sc,))
    config = {
        "architectures": [{"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
                           "qwen3": "Qwen3ForCausalLM"}[model_type]],
        "model_type": model_type, "vocab_size": cfg.vocab,
        "hidden_size": cfg.d_model, "intermediate_size": cfg.d_ff, "num_hidden_layers": cfg.n_layer,
        "num_attention_heads": H, "num_key_value_heads": Hk, "head_dim": cfg.d_head,
        "max_position_embeddings": cfg.ctx, "rms_norm_eps": cfg.eps, "rope_theta": cfg.rope_base,
        "rope_scaling": scaling, "hidden_act": "silu", "tie_word_embeddings": model.out is None,
        "attention_bias": False, "bos_token_id": tok["bos_token_id"], "eos_token_id": tok["eos_token_id"],
    }
    if window:
        config["sliding_window"] = window
    tokenizer = spm_tokenizer(tok)
    return files, config, tokenizer


def wordpiece_vocab(tokens):
    """llama.cpp's stored pieces back to BERT's vocab.txt form: '▁w' -> 'w',
    a continuation 'x' -> '##x', [SPECIAL] as it is."""
    out = []
    for t in tokens:
        if t.startswith("[") and t.endswith("]"):
            out.append(t)
        elif t.startswith("\u2581"):
            out.append(t[1:])
        else:
            out.append("##" + t)
    return out


def bert_dir(model, cfg, tok, dtype="F32", sharded=False):
    """BertForMaskedLM's names (bert.* and cls.predictions.*, the decoder tied
    to the word embeddings), sentence-transformers' 1_Pooling for the pooling."""
    t = [("bert.embeddings.word_embeddings.weight", f32(model.tok_embd.weight)),
         ("bert.embeddings.position_embeddings.weight", f32(model.pos_embd.weight)),
         ("bert.embeddings.token_type_embeddings.weight", f32(model.type_embd.weight)),
         ("bert.embeddings.LayerNorm.weight", f32(model.embd_ln_w)),
         ("bert.embeddings.LayerNorm.bias", f32(model.embd_ln_b))]
    for L, b in enumerate(model.blocks):
        p = "bert.encoder.layer.%d." % L
        for hf, lin in (("attention.self.query", b.q), ("attention.self.key", b.k), ("attention.self.value", b.v),
                        ("attention.output.dense", b.o), ("intermediate.dense", b.up), ("output.dense", b.down)):
            t += [(p + hf + ".weight", f32(lin.weight)), (p + hf + ".bias", f32(lin.bias))]
        t += [(p + "attention.output.LayerNorm.weight", f32(b.ln1_w)),
              (p + "attention.output.LayerNorm.bias", f32(b.ln1_b)),
              (p + "output.LayerNorm.weight", f32(b.ln2_w)), (p + "output.LayerNorm.bias", f32(b.ln2_b))]
    t += [("cls.predictions.transform.dense.weight", f32(model.mlm_dense.weight)),
          ("cls.predictions.transform.dense.bias", f32(model.mlm_dense.bias)),
          ("cls.predictions.transform.LayerNorm.weight", f32(model.mlm_ln_w)),
          ("cls.predictions.transform.LayerNorm.bias", f32(model.mlm_ln_b)),
          ("cls.predictions.bias", f32(model.mlm_out_b))]
    config = {
        "architectures": ["BertForMaskedLM"], "model_type": "bert", "vocab_size": cfg.vocab,
        "hidden_size": cfg.d_model, "num_hidden_layers": cfg.n_layer, "num_attention_heads": cfg.n_head,
        "intermediate_size": cfg.d_ff, "hidden_act": "gelu" if cfg.gelu_erf else "gelu_new",
        "max_position_embeddings": cfg.ctx,
        "type_vocab_size": cfg.n_types, "layer_norm_eps": cfg.eps, "position_embedding_type": "absolute",
        "pad_token_id": 0,
    }
    vocab = wordpiece_vocab(tok["tokens"])
    special = [i for i, ty in enumerate(tok["token_type"]) if ty == 3]
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None,
        "added_tokens": [{"id": i, "content": vocab[i], "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True} for i in special],
        "normalizer": {"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True,
                       "strip_accents": None, "lowercase": True},
        "pre_tokenizer": {"type": "BertPreTokenizer"},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                                      {"Sequence": {"id": "A", "type_id": 0}},
                                      {"SpecialToken": {"id": "[SEP]", "type_id": 0}}],
                           "pair": [{"SpecialToken": {"id": "[CLS]", "type_id": 0}},
                                    {"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": "[SEP]", "type_id": 0}},
                                    {"Sequence": {"id": "B", "type_id": 1}},
                                    {"SpecialToken": {"id": "[SEP]", "type_id": 1}}],
                           "special_tokens": {
                               "[CLS]": {"id": "[CLS]", "ids": [vocab.index("[CLS]")], "tokens": ["[CLS]"]},
                               "[SEP]": {"id": "[SEP]", "ids": [vocab.index("[SEP]")], "tokens": ["[SEP]"]}}},
        "decoder": {"type": "WordPiece", "prefix": "##", "cleanup": True},
        "model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##",
                  "max_input_chars_per_word": 100, "vocab": {w: i for i, w in enumerate(vocab)}},
    }
    pooling = {"word_embedding_dimension": cfg.d_model, "pooling_mode_cls_token": cfg.pooling == 2,
               "pooling_mode_mean_tokens": cfg.pooling == 1, "pooling_mode_max_tokens": False,
               "pooling_mode_mean_sqrt_len_tokens": False, "pooling_mode_lasttoken": cfg.pooling == 3}
    files = {"model.safetensors": safetensors_bytes(t, dtype),
             "1_Pooling/config.json": (json.dumps(pooling, indent=2) + "\n").encode()}
    return files, config, tokenizer


def gemma3_dir(model, cfg, tok, dtype="F32", sharded=False):
    """Gemma3ForCausalLM's names and Gemma3TextConfig's keys: norms stored as
    w (the reference, like HF, computes with 1 + w), NEOX rotary (rows as
    they are), the local layers' rotary base apart."""
    H, Hk = cfg.n_head, cfg.n_kv_head
    t = [("model.embed_tokens.weight", f32(model.tok_embd.weight))]
    for L, b in enumerate(model.blocks):
        p = "model.layers.%d." % L
        t += [(p + "input_layernorm.weight", f32(b.ln1_w)),
              (p + "self_attn.q_proj.weight", f32(b.q.weight)),
              (p + "self_attn.k_proj.weight", f32(b.k.weight)),
              (p + "self_attn.v_proj.weight", f32(b.v.weight)),
              (p + "self_attn.q_norm.weight", f32(b.q_norm_w)),
              (p + "self_attn.k_norm.weight", f32(b.k_norm_w)),
              (p + "self_attn.o_proj.weight", f32(b.o.weight)),
              (p + "post_attention_layernorm.weight", f32(b.ln1_post_w)),
              (p + "pre_feedforward_layernorm.weight", f32(b.ln2_w)),
              (p + "post_feedforward_layernorm.weight", f32(b.ln2_post_w)),
              (p + "mlp.gate_proj.weight", f32(b.gate.weight)),
              (p + "mlp.up_proj.weight", f32(b.up.weight)),
              (p + "mlp.down_proj.weight", f32(b.down.weight))]
    t.append(("model.norm.weight", f32(model.lnf_w)))
    sc = cfg.rope_scaling
    config = {
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "vocab_size": cfg.vocab,
        "hidden_size": cfg.d_model, "intermediate_size": cfg.d_ff, "num_hidden_layers": cfg.n_layer,
        "num_attention_heads": H, "num_key_value_heads": Hk, "head_dim": cfg.d_head,
        "max_position_embeddings": cfg.ctx, "rms_norm_eps": cfg.eps, "rope_theta": cfg.rope_base,
        "rope_local_base_freq": cfg.rope_base_window, "sliding_window": cfg.window,
        "sliding_window_pattern": cfg.window_pattern, "query_pre_attn_scalar": cfg.d_head,
        "rope_scaling": {"rope_type": sc[0], "factor": sc[1]} if sc else None,
        "hidden_activation": "gelu_pytorch_tanh", "attn_logit_softcapping": None,
        "final_logit_softcapping": None, "tie_word_embeddings": True,
        "bos_token_id": tok["bos_token_id"], "eos_token_id": tok["eos_token_id"],
    }
    return {"model.safetensors": safetensors_bytes(t, dtype)}, config, spm_tokenizer(tok)


def gemma1_dir(model, cfg, tok, dtype="F32", sharded=False):
    """GemmaForCausalLM's names and GemmaConfig's keys: norms stored as w
    (used as 1 + w), post_attention_layernorm the MLP's norm (as Llama's),
    NEOX rotary (rows as they are), multi-query attention."""
    assert not (cfg.post_norms or cfg.window or cfg.attn_softcap or cfg.final_softcap or cfg.qk_norm)
    t = [("model.embed_tokens.weight", f32(model.tok_embd.weight))]
    for L, b in enumerate(model.blocks):
        p = "model.layers.%d." % L
        t += [(p + "input_layernorm.weight", f32(b.ln1_w)),
              (p + "self_attn.q_proj.weight", f32(b.q.weight)),
              (p + "self_attn.k_proj.weight", f32(b.k.weight)),
              (p + "self_attn.v_proj.weight", f32(b.v.weight)),
              (p + "self_attn.o_proj.weight", f32(b.o.weight)),
              (p + "post_attention_layernorm.weight", f32(b.ln2_w)),
              (p + "mlp.gate_proj.weight", f32(b.gate.weight)),
              (p + "mlp.up_proj.weight", f32(b.up.weight)),
              (p + "mlp.down_proj.weight", f32(b.down.weight))]
    t.append(("model.norm.weight", f32(model.lnf_w)))
    config = {
        "architectures": ["GemmaForCausalLM"], "model_type": "gemma", "vocab_size": cfg.vocab,
        "hidden_size": cfg.d_model, "intermediate_size": cfg.d_ff, "num_hidden_layers": cfg.n_layer,
        "num_attention_heads": cfg.n_head, "num_key_value_heads": cfg.n_kv_head, "head_dim": cfg.d_head,
        "max_position_embeddings": cfg.ctx, "rms_norm_eps": cfg.eps, "rope_theta": cfg.rope_base,
        "hidden_act": "gelu", "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True,
        "bos_token_id": tok["bos_token_id"], "eos_token_id": tok["eos_token_id"],
    }
    return {"model.safetensors": safetensors_bytes(t, dtype)}, config, spm_tokenizer(tok)


def gemma2_dir(model, cfg, tok, dtype="F32", sharded=False):
    """Gemma2ForCausalLM's names and Gemma2Config's keys: Gemma 3's layout
    without q/k norms, scores and logits soft-capped, every other layer
    windowed from layer 0 (Gemma 2's fixed pattern), one rotary base."""
    assert cfg.window_pattern == 2 and not cfg.rope_base_window and not cfg.qk_norm
    t = [("model.embed_tokens.weight", f32(model.tok_embd.weight))]
    for L, b in enumerate(model.blocks):
        p = "model.layers.%d." % L
        t += [(p + "input_layernorm.weight", f32(b.ln1_w)),
              (p + "self_attn.q_proj.weight", f32(b.q.weight)),
              (p + "self_attn.k_proj.weight", f32(b.k.weight)),
              (p + "self_attn.v_proj.weight", f32(b.v.weight)),
              (p + "self_attn.o_proj.weight", f32(b.o.weight)),
              (p + "post_attention_layernorm.weight", f32(b.ln1_post_w)),
              (p + "pre_feedforward_layernorm.weight", f32(b.ln2_w)),
              (p + "post_feedforward_layernorm.weight", f32(b.ln2_post_w)),
              (p + "mlp.gate_proj.weight", f32(b.gate.weight)),
              (p + "mlp.up_proj.weight", f32(b.up.weight)),
              (p + "mlp.down_proj.weight", f32(b.down.weight))]
    t.append(("model.norm.weight", f32(model.lnf_w)))
    config = {
        "architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "vocab_size": cfg.vocab,
        "hidden_size": cfg.d_model, "intermediate_size": cfg.d_ff, "num_hidden_layers": cfg.n_layer,
        "num_attention_heads": cfg.n_head, "num_key_value_heads": cfg.n_kv_head, "head_dim": cfg.d_head,
        "max_position_embeddings": cfg.ctx, "rms_norm_eps": cfg.eps, "rope_theta": cfg.rope_base,
        "sliding_window": cfg.window, "query_pre_attn_scalar": cfg.d_head,
        "attn_logit_softcapping": cfg.attn_softcap, "final_logit_softcapping": cfg.final_softcap,
        "hidden_activation": "gelu_pytorch_tanh", "tie_word_embeddings": True,
        "bos_token_id": tok["bos_token_id"], "eos_token_id": tok["eos_token_id"],
    }
    return {"model.safetensors": safetensors_bytes(t, dtype)}, config, spm_tokenizer(tok)


def t5_dir(model, cfg, tok, dtype="F32", sharded=False):
    """T5ForConditionalGeneration's names and T5Config's keys. The
    reference (like llama.cpp) unembeds with the token embedding unscaled
    where tied; transformers scales a tied T5's output by d_model^-0.5, so
    the directory stores the embedding again as lm_head.weight with
    tie_word_embeddings false: the same computation in HF's terms."""
    t = [("shared.weight", f32(model.embd.weight))]
    for stack, layers in (("encoder", model.enc), ("decoder", model.dec)):
        for L, b in enumerate(layers):
            p = "%s.block.%d.layer." % (stack, L)
            sites = [("0", "SelfAttention", b.attn_norm, (b.q, b.k, b.v, b.o))]
            if stack == "decoder":
                sites.append(("1", "EncDecAttention", b.cross_norm, (b.cq, b.ck, b.cv, b.co)))
            for sub, site, norm, lins in sites:
                for n_, lin in zip("qkvo", lins):
                    t.append((p + "%s.%s.%s.weight" % (sub, site, n_), f32(lin.weight)))
                t.append((p + sub + ".layer_norm.weight", f32(norm)))
            if L == 0:
                rel = model.enc_rel if stack == "encoder" else model.dec_rel
                t.append((p + "0.SelfAttention.relative_attention_bias.weight", f32(rel)))
            f = "2" if stack == "decoder" else "1"
            if b.gate is not None:
                t += [(p + f + ".DenseReluDense.wi_0.weight", f32(b.gate.weight)),
                      (p + f + ".DenseReluDense.wi_1.weight", f32(b.up.weight))]
            else:
                t.append((p + f + ".DenseReluDense.wi.weight", f32(b.up.weight)))
            t += [(p + f + ".DenseReluDense.wo.weight", f32(b.down.weight)),
                  (p + f + ".layer_norm.weight", f32(b.ffn_norm))]
    t += [("encoder.final_layer_norm.weight", f32(model.enc_norm)),
          ("decoder.final_layer_norm.weight", f32(model.dec_norm)),
          ("lm_head.weight", f32(model.embd.weight if model.out is None else model.out.weight))]
    config = {
        "architectures": ["T5ForConditionalGeneration"], "model_type": "t5", "vocab_size": cfg.vocab,
        "d_model": cfg.d_model, "d_kv": cfg.d_head, "d_ff": cfg.d_ff, "num_layers": cfg.n_enc,
        "num_decoder_layers": cfg.n_dec, "num_heads": cfg.n_head, "relative_attention_num_buckets": cfg.buckets,
        "relative_attention_max_distance": cfg.max_distance, "layer_norm_epsilon": cfg.eps,
        "feed_forward_proj": "gated-gelu" if cfg.gated else "relu", "is_encoder_decoder": True,
        "tie_word_embeddings": False, "decoder_start_token_id": cfg.start, "n_positions": cfg.ctx,
        "eos_token_id": tok["eos_token_id"], "pad_token_id": 0,
    }
    return {"model.safetensors": safetensors_bytes(t, dtype)}, config, spm_tokenizer(tok) if "tokens" in tok else None


def unigram_tokenizer(gguf_path):
    """tokenizer.json of a Unigram model as transformers' SpmConverter
    writes it for T5, from the vocabulary llama.cpp's converter wrote as
    GGUF (tests/fixtures/t5-ugm.gguf, t5_vocab.py): model.vocab the
    [piece, score] pairs in id order, unk_id; the normalizer Precompiled
    (the charsmap, base64) then Strip (right) and Replace(" {2,}", "▁")
    (remove_extra_whitespaces); Metaspace with prepend_scheme "always"
    (add_space_prefix); control and unknown pieces as special added
    tokens, user-defined ones as non-special; the template $A </s>."""
    import base64
    kv, _ = MF.read_gguf(gguf_path)
    arr = lambda k: [v[1] if isinstance(v, tuple) else v for v in kv[k][1][1]]
    toks, scores, types = arr("tokenizer.ggml.tokens"), arr("tokenizer.ggml.scores"), arr("tokenizer.ggml.token_type")
    charsmap = bytes(arr("tokenizer.ggml.precompiled_charsmap"))
    assert MF.kval(kv, "tokenizer.ggml.remove_extra_whitespaces") and MF.kval(kv, "tokenizer.ggml.add_space_prefix")
    unk = MF.kval(kv, "tokenizer.ggml.unknown_token_id")
    eos = toks[MF.kval(kv, "tokenizer.ggml.eos_token_id")]
    added = [{"id": i, "content": toks[i], "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": types[i] == 4, "special": types[i] != 4}
             for i in range(len(toks)) if types[i] in (2, 3, 4)]
    tokenizer = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Precompiled", "precompiled_charsmap": base64.b64encode(charsmap).decode()},
            {"type": "Strip", "strip_left": False, "strip_right": True},
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": "\u2581"}]},
        "pre_tokenizer": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "post_processor": {"type": "TemplateProcessing",
                           "single": [{"Sequence": {"id": "A", "type_id": 0}},
                                      {"SpecialToken": {"id": eos, "type_id": 0}}],
                           "pair": [{"Sequence": {"id": "A", "type_id": 0}},
                                    {"SpecialToken": {"id": eos, "type_id": 0}},
                                    {"Sequence": {"id": "B", "type_id": 0}},
                                    {"SpecialToken": {"id": eos, "type_id": 0}}],
                           "special_tokens": {eos: {"id": eos, "ids": [toks.index(eos)], "tokens": [eos]}}},
        "decoder": {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "always", "split": True},
        "model": {"type": "Unigram", "unk_id": unk, "vocab": [[t, float(sc)] for t, sc in zip(toks, scores)],
                  "byte_fallback": False},
    }
    return tokenizer, len(toks)


def ugm_dir():
    """t5-ugm/: the Unigram tokenizer.json above in a directory around a
    T5 small enough to carry its 2,000-piece vocabulary (d_model 8, one
    layer each side, seeded weights nothing checks: the directory exists
    for its tokenizer, held to SentencePiece's ids by tests/test_hf.c)."""
    tokenizer, V = unigram_tokenizer(os.path.join(MF.FIXTURES, "t5-ugm.gguf"))
    cfg = MF.R.T5Config(vocab=V, d_model=8, n_enc=1, n_dec=1, n_head=2, d_head=4, d_ff=8, ctx=64, buckets=8,
                        gated=False, tied=False, start=0)
    model = MF.make_t5(cfg, 5099)
    tok = {"eos_token_id": 1}
    files, config, _ = t5_dir(model, cfg, tok)
    return files, config, tokenizer


def vit_dir():
    """tiny-vit/ as ViTForImageClassification's names and ViTConfig's keys
    (torchvision's weights of vit_fixtures.make_vit, float32 as the GGUF
    stores them): in_proj split into query/key/value, cls_token [1, 1, d],
    position_embeddings [1, 17, d]; id2label the class names;
    preprocessor_config.json with the fixture's mean and std, its size,
    bilinear resampling (2), rescaling by 1/255."""
    import vit_fixtures as VF
    m = VF.make_vit(torch.float32)
    sd = m.state_dict()
    c = VF.VIT_CFG
    d = c["d"]
    t = [("vit.embeddings.cls_token", f32(sd["class_token"])),
         ("vit.embeddings.position_embeddings", f32(sd["encoder.pos_embedding"])),
         ("vit.embeddings.patch_embeddings.projection.weight", f32(sd["conv_proj.weight"])),
         ("vit.embeddings.patch_embeddings.projection.bias", f32(sd["conv_proj.bias"]))]
    for L in range(c["layers"]):
        p, q = "encoder.layers.encoder_layer_%d." % L, "vit.encoder.layer.%d." % L
        inw, inb = sd[p + "self_attention.in_proj_weight"], sd[p + "self_attention.in_proj_bias"]
        for i, n in enumerate(("query", "key", "value")):
            t += [(q + "attention.attention.%s.weight" % n, f32(inw[i * d:(i + 1) * d])),
                  (q + "attention.attention.%s.bias" % n, f32(inb[i * d:(i + 1) * d]))]
        for hf, tv in (("attention.output.dense", "self_attention.out_proj"), ("layernorm_before", "ln_1"),
                       ("layernorm_after", "ln_2"), ("intermediate.dense", "mlp.0"), ("output.dense", "mlp.3")):
            t += [(q + hf + ".weight", f32(sd[p + tv + ".weight"])), (q + hf + ".bias", f32(sd[p + tv + ".bias"]))]
    t += [("vit.layernorm.weight", f32(sd["encoder.ln.weight"])), ("vit.layernorm.bias", f32(sd["encoder.ln.bias"])),
          ("classifier.weight", f32(sd["heads.head.weight"])), ("classifier.bias", f32(sd["heads.head.bias"]))]
    config = {
        "architectures": ["ViTForImageClassification"], "model_type": "vit", "hidden_size": d,
        "num_hidden_layers": c["layers"], "num_attention_heads": c["heads"], "intermediate_size": c["mlp"],
        "hidden_act": "gelu", "layer_norm_eps": 1e-6, "image_size": c["image_size"], "patch_size": c["patch"],
        "num_channels": 1, "qkv_bias": True,
        "id2label": {str(i): n for i, n in enumerate(VF.VIT_CLASSES)},
        "label2id": {n: i for i, n in enumerate(VF.VIT_CLASSES)},
    }
    pre = {"do_normalize": True, "do_rescale": True, "do_resize": True, "image_mean": VF.VIT_MEAN,
           "image_std": VF.VIT_STD, "image_processor_type": "ViTImageProcessor", "resample": 2,
           "rescale_factor": 1 / 255, "size": {"height": c["image_size"], "width": c["image_size"]}}
    return {"model.safetensors": safetensors_bytes(t, "F32"),
            "preprocessor_config.json": (json.dumps(pre, indent=2) + "\n").encode()}, config


# directory -> (fixture whose weights it holds, dtype, sharded)
DIRS = {
    "tiny-gpt2": ("tiny-gpt2", "F32", False),
    "tiny-llama": ("tiny-llama", "F32", True),
    "tiny-gpt2-f16": ("tiny-gpt2", "F16", False),
    "tiny-llama-bf16": ("tiny-llama", "BF16", False),
    "tiny-llama-yarn": ("tiny-llama-yarn", "F32", False),
    "tiny-mistral": ("tiny-mistral", "F32", False),
    "tiny-qwen3": ("tiny-qwen3", "F32", False),
    "tiny-bert": ("tiny-bert", "F32", False),
    "tiny-bert-erf": ("tiny-bert", "F32", False),
    "tiny-gemma": ("tiny-gemma", "F32", False),
    "tiny-gemma3": ("tiny-gemma3", "F32", False),
    # tiny-gemma2's weights with one rotary base for every layer (Gemma2Config
    # has no other): no GGUF twin, PyTorch's hooks beside it (tiny-gemma2-hf.ref/)
    "tiny-gemma2-hf": ("tiny-gemma2", "F32", False),
    "tiny-t5": ("tiny-t5", "F32", False),
    "tiny-t5-relu": ("tiny-t5-relu", "F32", False),
    "t5-ugm": ("t5-ugm", "F32", False),
    "tiny-vit": ("tiny-vit", "F32", False),
}
TORCH_DTYPE = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}


def reference_logits(model, ids, dtype):
    """The float64 pass over the weights as the file stores them (rounded
    to F16 / BF16): the logits attnscope must give from that directory."""
    with torch.no_grad():
        for p in model.parameters():
            p.copy_(p.to(getattr(torch, TORCH_DTYPE[dtype])).double())
    return np.ascontiguousarray(MF.run_hooks(model, ids)["unembed.hook_out"], dtype=np.float32)


def npy_bytes(a):
    import io
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def build_dir(name):
    which, dtype, sharded = DIRS[name]
    if which == "tiny-vit":
        files, config = vit_dir()
        files["config.json"] = (json.dumps(config, indent=2) + "\n").encode()
        return files
    if which == "t5-ugm":
        files, config, tokenizer = ugm_dir()
        files["config.json"] = (json.dumps(config, indent=2) + "\n").encode()
        files["tokenizer.json"] = (json.dumps(tokenizer, indent=2, ensure_ascii=False) + "\n").encode()
        return files
    if which in MF.ENCODERS:
        cfg, seed = MF.ENCODERS[which]
        if name.endswith("-erf"):
            cfg = dataclasses.replace(cfg, gelu_erf=True)
        tok, ids, text = MF.encoder_input(which)
        model = MF.make_encoder(cfg, seed)
        make = bert_dir
    elif which in MF.T5S:
        cfg, model, tok, src, tgt, text = MF.build_t5(which)
        make = t5_dir
    else:
        _, cfg, model, tok, ids, text = (MF.build if which in MF.SEEDS else MF.build_decoder)(which)
        make = {"tiny-gpt2": gpt2_dir, "tiny-gemma": gemma1_dir, "tiny-gemma3": gemma3_dir}.get(which, llama_dir)
        if which == "tiny-gemma2":
            cfg = dataclasses.replace(cfg, rope_base_window=None)
            model, make = MF.make_decoder(cfg, MF.DECODERS[which][1]), gemma2_dir
    files, config, tokenizer = make(model, cfg, tok, dtype, sharded)
    config["torch_dtype"] = TORCH_DTYPE[dtype]
    files["config.json"] = (json.dumps(config, indent=2) + "\n").encode()
    files["tokenizer.json"] = (json.dumps(tokenizer, indent=2, ensure_ascii=False) + "\n").encode()
    if dtype != "F32":  # beside the directory, not in it
        files["../%s.logits.npy" % name] = npy_bytes(reference_logits(model, ids, dtype))
    if which == "tiny-gemma2":  # no GGUF twin: PyTorch's hooks beside it
        for k, v in MF.run_hooks(model, ids).items():
            files["../%s.ref/%s.npy" % (name, k)] = npy_bytes(np.ascontiguousarray(v, dtype=np.float32))
        files["../%s.ref/tokens.npy" % name] = npy_bytes(np.array(ids, dtype=np.int32))
    if which in MF.ENCODERS and cfg.gelu_erf:  # no GGUF twin: PyTorch's hooks beside it
        hooks = MF.run_encoder_hooks(model, ids, MF.ENC_TYPES)
        print(MF.check_bert_block_against_torch(model, cfg, hooks, torch.nn.functional.gelu))
        for k, v in hooks.items():
            files["../%s.ref/%s.npy" % (name, k)] = npy_bytes(np.ascontiguousarray(v, dtype=np.float32))
        files["../%s.ref/tokens.npy" % name] = npy_bytes(np.array(ids, dtype=np.int32))
        files["../%s.ref/types.npy" % name] = npy_bytes(np.array(MF.ENC_TYPES, dtype=np.int32))
    return files


# Llama 3's rope_scaling as tiny-llama's config.json would carry it (rope
# base 10000, head_dim 8: wavelengths 6.3, 63, 628, 6283 against a band of
# 16..64, so one frequency is kept, one smoothed and two divided).
LLAMA3_SCALING = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                  "original_max_position_embeddings": 64}


def llama3_factors(base, dim, sc):
    """The divisors of each rotary frequency as transformers'
    _compute_llama3_parameters applies them (inv_freq / its new inv_freq),
    computed its way: a mask per band, in float64."""
    inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float64) / dim))
    factor, lo, hi, old = (sc["factor"], sc["low_freq_factor"], sc["high_freq_factor"],
                           sc["original_max_position_embeddings"])
    low_wl, high_wl = old / lo, old / hi
    wavelen = 2 * math.pi / inv
    new = torch.where(wavelen > low_wl, inv / factor, inv)
    smooth = (old / wavelen - lo) / (hi - lo)
    smoothed = (1 - smooth) * new / factor + smooth * new
    medium = ~(wavelen < high_wl) * ~(wavelen > low_wl)
    new = torch.where(medium, smoothed, new)
    return (inv / new).numpy().astype(np.float32)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args()
    bad = 0
    extra = {os.path.join(OUT, "llama3-rope-factors.npy"):
             npy_bytes(llama3_factors(10000.0, 8, LLAMA3_SCALING))}
    for p, v in extra.items():
        if args.check:
            same = os.path.exists(p) and open(p, "rb").read() == v
            bad += not same
            print("%s %s" % ("ok  " if same else "DIFF", p))
        else:
            os.makedirs(OUT, exist_ok=True)
            open(p, "wb").write(v)
    for name in DIRS:
        d = os.path.join(OUT, name)
        files = build_dir(name)
        if args.check:
            for k, v in files.items():
                p = os.path.join(d, k)
                same = os.path.exists(p) and open(p, "rb").read() == v
                bad += not same
                print("%s %s" % ("ok  " if same else "DIFF", p))
            continue
        os.makedirs(d, exist_ok=True)
        for k, v in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, k)), exist_ok=True)
            with open(os.path.join(d, k), "wb") as f:
                f.write(v)
        print("wrote %s (%s)" % (d, ", ".join(sorted(files))))
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
