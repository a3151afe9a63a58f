"""A model directory around a real tokenizer.json, for comparing tokenizers:
    make_dir.py TOKENIZER.json MODEL_TYPE OUT_DIR [VOCAB_SIZE]
config.json with the vocabulary size the tokenizer implies (rounded up to a
multiple of 128, as Qwen's embeddings are padded, for model_type qwen3), or
VOCAB_SIZE (Gemma 3's 262144: its last added token has no embedding row),
and a one-layer model of width 8 with random BF16 weights (model_type bert:
F32, BertForMaskedLM's key layout) (safetensors
written by models/recipes/safetensors_writer.py, NumPy only: this helper runs
in `make test`, which does not need PyTorch). Only the tokenizer is of interest."""
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "recipes"))
import safetensors_writer as ST  # noqa: E402

tok_path, model_type, out = sys.argv[1:4]
tok = json.load(open(tok_path, encoding="utf-8"))
n = 1 + max([*tok["model"]["vocab"].values(), *(a["id"] for a in tok.get("added_tokens", []))])
V = (n + 127) // 128 * 128 if model_type == "qwen3" else n
if len(sys.argv) > 4:
    V = int(sys.argv[4])
os.makedirs(out, exist_ok=True)
shutil.copy(tok_path, os.path.join(out, "tokenizer.json"))
D, rng = 8, np.random.default_rng(0)
if model_type == "bert":
    # BertForMaskedLM's layout (tests/fixtures/hf/tiny-bert's), one layer of width 8
    P = 512
    t = [("bert.embeddings.word_embeddings.weight", (V, D)), ("bert.embeddings.position_embeddings.weight", (P, D)),
         ("bert.embeddings.token_type_embeddings.weight", (2, D)), ("bert.embeddings.LayerNorm.weight", (D,)),
         ("bert.embeddings.LayerNorm.bias", (D,))]
    for k, sh in [("attention.self.query", (D, D)), ("attention.self.key", (D, D)), ("attention.self.value", (D, D)),
                  ("attention.output.dense", (D, D)), ("intermediate.dense", (8, D)), ("output.dense", (D, 8))]:
        t += [("bert.encoder.layer.0.%s.weight" % k, sh), ("bert.encoder.layer.0.%s.bias" % k, (sh[0],))]
    for k in ["attention.output.LayerNorm", "output.LayerNorm"]:
        t += [("bert.encoder.layer.0.%s.weight" % k, (D,)), ("bert.encoder.layer.0.%s.bias" % k, (D,))]
    t += [("cls.predictions.transform.dense.weight", (D, D)), ("cls.predictions.transform.dense.bias", (D,)),
          ("cls.predictions.transform.LayerNorm.weight", (D,)), ("cls.predictions.transform.LayerNorm.bias", (D,)),
          ("cls.predictions.bias", (V,))]
    t = [(k, 0.1 * rng.standard_normal(sh).astype(np.float32)) for k, sh in t]
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(ST.safetensors_bytes(t, "F32"))
    cfg = {"architectures": ["BertForMaskedLM"], "model_type": "bert", "vocab_size": V, "hidden_size": D,
           "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 8, "hidden_act": "gelu",
           "max_position_embeddings": P, "type_vocab_size": 2, "layer_norm_eps": 1e-12, "pad_token_id": 0}
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=1)
    sys.exit(0)
t = [("model.embed_tokens.weight", 0.1 * rng.standard_normal((V, D)).astype(np.float32))]
shapes = [("input_layernorm.weight", (D,)), ("self_attn.q_proj.weight", (D, D)), ("self_attn.k_proj.weight", (D, D)),
          ("self_attn.v_proj.weight", (D, D)), ("self_attn.o_proj.weight", (D, D)),
          ("post_attention_layernorm.weight", (D,)), ("mlp.gate_proj.weight", (8, D)), ("mlp.up_proj.weight", (8, D)),
          ("mlp.down_proj.weight", (D, 8))]
if model_type == "qwen3":
    shapes += [("self_attn.q_norm.weight", (4,)), ("self_attn.k_norm.weight", (4,))]
t += [("model.layers.0." + k, rng.standard_normal(s).astype(np.float32)) for k, s in shapes]
t.append(("model.norm.weight", np.ones(D, np.float32)))
with open(os.path.join(out, "model.safetensors"), "wb") as f:
    f.write(ST.safetensors_bytes(t, "BF16"))
cfg = {"model_type": model_type, "vocab_size": V, "hidden_size": D, "intermediate_size": 8, "num_hidden_layers": 1,
       "num_attention_heads": 2, "num_key_value_heads": 2, "max_position_embeddings": 64, "rms_norm_eps": 1e-6,
       "tie_word_embeddings": True}
if model_type == "qwen3":
    cfg["head_dim"] = 4
json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=1)
