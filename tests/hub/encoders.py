"""Checkpoints as the Hugging Face hub ships them: GPT-2, bert-base-uncased
and sentence-transformers/all-MiniLM-L6-v2 (issue #29).

    encoders.py BUILD_DIR ATTNSCOPE TOKIDS NODE_PATH [N_STRINGS (2000)]

For each, tests/hub/NAME holds the real metadata files (SOURCE says from
where); a directory is made in BUILD_DIR/hub/NAME around them with
config.json's sizes shrunk (layers, width, heads, positions: the
vocabulary stays real, so the tokenization is) and small random weights
(seed 29) written in the real checkpoint's key layout, names, dtypes and
buffers: bert-base-uncased's bert.* prefix, LayerNorm gamma/beta and its
cls.* heads and pooler; MiniLM's BertModel names with the int64
embeddings.position_ids buffer; GPT-2's names without a prefix, its tied
lm_head absent, h.N.attn.bias and h.N.attn.masked_bias buffers.

Checked, each against an independent reference:
- attnscope loads each directory; its note names what it skipped;
- one sentence, tokenized by attnscope's `prompt`, gives the logits
  (GPT-2, bert-base-uncased's masked-LM head), the last hidden states
  (both BERTs) and `embed`'s vector (MiniLM: mean pooling then L2
  normalisation, as its modules.json says) of a float64 NumPy forward pass
  written here from the models' definitions, run on the ids
  @lenml/tokenizers gives the sentence: within 1e-4 of the largest value;
- attnscope's ids (TOKIDS, tests/hfref/tokids.c) equal @lenml/tokenizers'
  on N mixed strings (tests/hfref/texts.py: make hf-tokref's 2000, seed 21), special-token texts
  read as those tokens, no template. Strings whose text NFD changes are
  compared like the others (a directory's WordPiece normalises as the
  library does); those holding a typed U+2581 are counted apart
  (attnscope's WordPiece, llama.cpp's, marks word starts with it), with how
  many differ.
Exits 1 on any difference beyond those, naming it."""
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import unicodedata

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TEXTS_PY = os.path.join(HERE, "..", "hfref", "texts.py")
SENTENCE = "The quick brown fox jumps over the lazy dog, naturally."
TOL = 1e-4  # of the largest magnitude of the reference

# --------------------------------------------------------------- writing a checkpoint


def safetensors(path, tensors):
    """tensors: (name, array, dtype) with dtype F32, F16 or I64, in file order."""
    header, blobs, off = {}, [], 0
    for name, a, dt in tensors:
        np_dt = {"F32": "<f4", "F16": "<f2", "I64": "<i8"}[dt]
        b = np.ascontiguousarray(a, dtype=np_dt).tobytes()
        header[name] = {"dtype": dt, "shape": list(np.shape(a)), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def make_dir(build, name, overrides):
    """BUILD/hub/NAME: the real metadata files, config.json's sizes overridden."""
    src, out = os.path.join(HERE, name), os.path.join(build, "hub", name)
    shutil.rmtree(out, ignore_errors=True)
    for root, _, files in os.walk(src):
        for f in files:
            if f == "SOURCE":
                continue
            d = os.path.join(out, os.path.relpath(root, src))
            os.makedirs(d, exist_ok=True)
            shutil.copy(os.path.join(root, f), d)
    cfg = json.load(open(os.path.join(src, "config.json")))
    cfg.update(overrides)
    json.dump(cfg, open(os.path.join(out, "config.json"), "w"), indent=2)
    pool = os.path.join(out, "1_Pooling", "config.json")
    if os.path.exists(pool):  # its width follows the model's
        p = json.load(open(pool))
        p["word_embedding_dimension"] = cfg["hidden_size"]
        json.dump(p, open(pool, "w"), indent=2)
    return out, cfg


class Rand:
    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)

    def w(self, *shape, scale=0.2):
        return (scale * self.rng.standard_normal(shape)).astype(np.float32)

    def norm(self, d):
        return (1 + 0.2 * self.rng.standard_normal(d)).astype(np.float32)


def bert_weights(cfg, r, prefix, legacy, mlm, position_ids):
    """BertModel's (or BertForMaskedLM's) state dict as the file names it."""
    D, F, L, V = cfg["hidden_size"], cfg["intermediate_size"], cfg["num_hidden_layers"], cfg["vocab_size"]
    P, T = cfg["max_position_embeddings"], cfg["type_vocab_size"]
    g, b = ("gamma", "beta") if legacy else ("weight", "bias")
    t = [(prefix + "embeddings.word_embeddings.weight", r.w(V, D, scale=1.0)),
         (prefix + "embeddings.position_embeddings.weight", r.w(P, D, scale=0.5)),
         (prefix + "embeddings.token_type_embeddings.weight", r.w(T, D, scale=0.5)),
         (prefix + "embeddings.LayerNorm." + g, r.norm(D)), (prefix + "embeddings.LayerNorm." + b, r.w(D))]
    for l in range(L):
        p = "%sencoder.layer.%d." % (prefix, l)
        for m in ("query", "key", "value"):
            t += [(p + "attention.self.%s.weight" % m, r.w(D, D, scale=1 / math.sqrt(D) * 1.5)),
                  (p + "attention.self.%s.bias" % m, r.w(D))]
        t += [(p + "attention.output.dense.weight", r.w(D, D, scale=1 / math.sqrt(D))),
              (p + "attention.output.dense.bias", r.w(D)),
              (p + "attention.output.LayerNorm." + g, r.norm(D)), (p + "attention.output.LayerNorm." + b, r.w(D)),
              (p + "intermediate.dense.weight", r.w(F, D, scale=1 / math.sqrt(D))),
              (p + "intermediate.dense.bias", r.w(F)),
              (p + "output.dense.weight", r.w(D, F, scale=1 / math.sqrt(F))), (p + "output.dense.bias", r.w(D)),
              (p + "output.LayerNorm." + g, r.norm(D)), (p + "output.LayerNorm." + b, r.w(D))]
    t += [(prefix + "pooler.dense.weight", r.w(D, D)), (prefix + "pooler.dense.bias", r.w(D))]
    if mlm:  # the decoder is tied to the word embeddings: one copy stored, as safetensors keeps shared tensors
        t += [("cls.predictions.bias", r.w(V)),
              ("cls.predictions.transform.dense.weight", r.w(D, D, scale=1 / math.sqrt(D))),
              ("cls.predictions.transform.dense.bias", r.w(D)),
              ("cls.predictions.transform.LayerNorm." + g, r.norm(D)),
              ("cls.predictions.transform.LayerNorm." + b, r.w(D)),
              ("cls.seq_relationship.weight", r.w(2, D)), ("cls.seq_relationship.bias", r.w(2))]
    out = [(n, a, "F32") for n, a in t]
    if position_ids:
        out.insert(3, (prefix + "embeddings.position_ids", np.arange(P, dtype=np.int64)[None, :], "I64"))
    return out


def gpt2_weights(cfg, r):
    """GPT2LMHeadModel's state dict as openai-community/gpt2's file names it."""
    D, L, V, P = cfg["n_embd"], cfg["n_layer"], cfg["vocab_size"], cfg["n_positions"]
    t = [("wte.weight", r.w(V, D, scale=0.5), "F32"), ("wpe.weight", r.w(P, D, scale=0.3), "F32")]
    for l in range(L):
        p = "h.%d." % l
        t += [(p + "ln_1.weight", r.norm(D), "F32"), (p + "ln_1.bias", r.w(D), "F32"),
              (p + "attn.bias", np.tril(np.ones((P, P), np.float32))[None, None], "F32"),
              (p + "attn.masked_bias", np.array(-1e4, np.float32), "F32"),
              (p + "attn.c_attn.weight", r.w(D, 3 * D, scale=1.5 / math.sqrt(D)), "F32"),
              (p + "attn.c_attn.bias", r.w(3 * D), "F32"),
              (p + "attn.c_proj.weight", r.w(D, D, scale=1 / math.sqrt(D)), "F32"),
              (p + "attn.c_proj.bias", r.w(D), "F32"),
              (p + "ln_2.weight", r.norm(D), "F32"), (p + "ln_2.bias", r.w(D), "F32"),
              (p + "mlp.c_fc.weight", r.w(D, 4 * D, scale=1 / math.sqrt(D)), "F32"),
              (p + "mlp.c_fc.bias", r.w(4 * D), "F32"),
              (p + "mlp.c_proj.weight", r.w(4 * D, D, scale=1 / math.sqrt(4 * D)), "F32"),
              (p + "mlp.c_proj.bias", r.w(D), "F32")]
    t += [("ln_f.weight", r.norm(D), "F32"), ("ln_f.bias", r.w(D), "F32")]
    return t


# --------------------------------------------------------------- the references (float64)


def ln(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


ERF = np.frompyfunc(math.erf, 1, 1)


def gelu_erf(x):
    return 0.5 * x * (1 + ERF(x / math.sqrt(2)).astype(np.float64))


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


def softmax(s):
    s = s - s.max(-1, keepdims=True)
    e = np.exp(s)
    return e / e.sum(-1, keepdims=True)


def attention(q, k, v, heads, causal):
    n, d = q.shape
    dh = d // heads
    out = np.zeros_like(q)
    for h in range(heads):
        sl = slice(h * dh, (h + 1) * dh)
        s = q[:, sl] @ k[:, sl].T / math.sqrt(dh)
        if causal:
            s = np.where(np.tril(np.ones((n, n), bool)), s, -np.inf)
        out[:, sl] = softmax(s) @ v[:, sl]
    return out


def bert_forward(W, cfg, ids, prefix, mlm):
    """BertModel (Post-LN, exact GELU) on one sequence of type 0; with the
    masked-LM head (dense, GELU, LayerNorm, the tied decoder) its logits."""
    f = lambda n: W[prefix + n].astype(np.float64) if prefix + n in W else W[n].astype(np.float64)
    ln_w = lambda n: f(n + ".weight") if (prefix + n + ".weight") in W or (n + ".weight") in W else f(n + ".gamma")
    ln_b = lambda n: f(n + ".bias") if (prefix + n + ".bias") in W or (n + ".bias") in W else f(n + ".beta")
    eps, n = cfg["layer_norm_eps"], len(ids)
    x = f("embeddings.word_embeddings.weight")[ids] + f("embeddings.position_embeddings.weight")[:n] + \
        f("embeddings.token_type_embeddings.weight")[0]
    x = ln(x, ln_w("embeddings.LayerNorm"), ln_b("embeddings.LayerNorm"), eps)
    for l in range(cfg["num_hidden_layers"]):
        p = "encoder.layer.%d." % l
        lin = lambda m, z: z @ f(p + m + ".weight").T + f(p + m + ".bias")
        a = attention(lin("attention.self.query", x), lin("attention.self.key", x), lin("attention.self.value", x),
                      cfg["num_attention_heads"], False)
        h = ln(lin("attention.output.dense", a) + x, ln_w(p + "attention.output.LayerNorm"),
               ln_b(p + "attention.output.LayerNorm"), eps)
        x = ln(lin("output.dense", gelu_erf(lin("intermediate.dense", h))) + h, ln_w(p + "output.LayerNorm"),
               ln_b(p + "output.LayerNorm"), eps)
    if not mlm:
        return x, None
    t = gelu_erf(x @ f("cls.predictions.transform.dense.weight").T + f("cls.predictions.transform.dense.bias"))
    t = ln(t, ln_w("cls.predictions.transform.LayerNorm"), ln_b("cls.predictions.transform.LayerNorm"), eps)
    return x, t @ f("embeddings.word_embeddings.weight").T + f("cls.predictions.bias")


def gpt2_forward(W, cfg, ids):
    """GPT-2 (Pre-LN, tanh GELU, Conv1D weights [in, out], the tied unembedding)."""
    f = lambda n: W[n].astype(np.float64)
    eps, n, D = cfg["layer_norm_epsilon"], len(ids), cfg["n_embd"]
    x = f("wte.weight")[ids] + f("wpe.weight")[:n]
    for l in range(cfg["n_layer"]):
        p = "h.%d." % l
        qkv = ln(x, f(p + "ln_1.weight"), f(p + "ln_1.bias"), eps) @ f(p + "attn.c_attn.weight") + \
            f(p + "attn.c_attn.bias")
        a = attention(qkv[:, :D], qkv[:, D:2 * D], qkv[:, 2 * D:], cfg["n_head"], True)
        x = x + a @ f(p + "attn.c_proj.weight") + f(p + "attn.c_proj.bias")
        m = gelu_tanh(ln(x, f(p + "ln_2.weight"), f(p + "ln_2.bias"), eps) @ f(p + "mlp.c_fc.weight") +
                      f(p + "mlp.c_fc.bias"))
        x = x + m @ f(p + "mlp.c_proj.weight") + f(p + "mlp.c_proj.bias")
    return ln(x, f("ln_f.weight"), f("ln_f.bias"), eps) @ f("wte.weight").T


def sentence_embedding(hidden):
    """sentence-transformers' Pooling (mean over the attention mask: every
    token of one unpadded sequence) then Normalize (x / max(|x|, 1e-12))."""
    v = hidden.mean(0)
    return v / max(np.linalg.norm(v), 1e-12)


# --------------------------------------------------------------- running both


class Check:
    def __init__(self):
        self.failed = []

    def close(self, label, got, ref):
        got, ref = np.asarray(got, np.float64), np.asarray(ref, np.float64)
        if got.shape != ref.shape:
            self.failed.append("%s: shape %s, the reference's %s" % (label, got.shape, ref.shape))
            print("hub-ref %s: shape %s, the reference's %s: FAIL" % (label, got.shape, ref.shape))
            return
        big = np.abs(ref).max()
        err = np.abs(got - ref).max()
        ok = err <= TOL * big
        print("hub-ref %s: max |diff| %.3g, %.2g of the largest |value| %.3g (limit %g)%s" %
              (label, err, err / big, big, TOL, "" if ok else ": FAIL"))
        if not ok:
            self.failed.append(label)


def noted(check, name, res, wants):
    """The load note (stderr) names what the directory's reading skipped or renamed."""
    note = (res.stderr.strip().splitlines() or ["no note"])[0]
    print("hub-ref %s: loads; %s" % (name, note))
    for w in wants:
        if w not in note:
            check.failed.append("%s note lacks %r" % (name, w))
            print("hub-ref %s: the load note lacks %r: FAIL" % (name, w))


def attnscope(binary, model, cmds):
    r = subprocess.run([binary, model, "--no-tui", "-e", cmds], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit("hub-ref: %s on %s failed:\n%s%s" % (cmds, model, r.stdout, r.stderr))
    return r


def lenml_ids(node_path, tok, texts, special, work):
    path = os.path.join(work, "texts.json")
    json.dump(texts, open(path, "w", encoding="utf-8"), ensure_ascii=False)
    r = subprocess.run(["node", os.path.join(HERE, "ids.js"), tok, path, "special" if special else "plain"],
                       capture_output=True, text=True, env=dict(os.environ, NODE_PATH=node_path))
    if r.returncode:
        raise SystemExit("hub-ref: @lenml/tokenizers failed on %s:\n%s" % (tok, r.stderr))
    return json.loads(r.stdout)


def load_tensors(path):
    """A safetensors file's arrays (the ones written above)."""
    raw = open(path, "rb").read()
    n = struct.unpack("<Q", raw[:8])[0]
    h = json.loads(raw[8:8 + n])
    dt = {"F32": "<f4", "F16": "<f2", "I64": "<i8"}
    return {k: np.frombuffer(raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]],
                             dt[v["dtype"]]).reshape(v["shape"]) for k, v in h.items()}


def run_model(build, binary, node_path, name, overrides, weights, check):
    d, cfg = make_dir(build, name, overrides)
    safetensors(os.path.join(d, "model.safetensors"), weights(cfg))
    W = load_tensors(os.path.join(d, "model.safetensors"))
    tok = os.path.join(d, "tokenizer.json")
    ids = lenml_ids(node_path, tok, [SENTENCE], True, d)[0]
    out = os.path.join(d, "out")
    os.makedirs(out, exist_ok=True)
    return d, cfg, W, ids, out


def main():
    build, binary, tokids, node_path = sys.argv[1:5]
    n_strings = int(sys.argv[5]) if len(sys.argv) > 5 else 2000
    build = os.path.abspath(build)
    check = Check()
    r = Rand(29)
    esc = SENTENCE.replace('"', '\\"')

    # GPT-2: logits at every position
    d, cfg, W, ids, out = run_model(build, binary, node_path, "gpt2",
                                    {"n_embd": 32, "n_layer": 2, "n_head": 4, "n_positions": 64, "n_ctx": 64},
                                    lambda c: gpt2_weights(c, r), check)
    res = attnscope(binary, d, 'prompt "%s"; finish; dump unembed.hook_out %s/logits.npy' % (esc, out))
    noted(check, "gpt2", res, ["h.N.attn.bias (2x)", "h.N.attn.masked_bias (2x)"])
    check.close("gpt2 logits (%d tokens)" % len(ids), np.load(out + "/logits.npy"), gpt2_forward(W, cfg, ids))

    # bert-base-uncased: the masked-LM logits and the last hidden states
    small = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 64,
             "max_position_embeddings": 64}
    d, cfg, W, ids, out = run_model(build, binary, node_path, "bert-base-uncased", small,
                                    lambda c: bert_weights(c, r, "bert.", True, True, False), check)
    L = cfg["num_hidden_layers"]
    res = attnscope(binary, d, 'prompt "%s"; finish; dump unembed.hook_out %s/logits.npy; '
                    'dump blocks.%d.ln2.hook_normalized %s/hidden.npy' % (esc, out, L - 1, out))
    noted(check, "bert-base-uncased", res, ["cls.seq_relationship.weight", "12 LayerNorm tensors read under their "
                                            "legacy names"])
    hidden, logits = bert_forward(W, cfg, ids, "bert.", True)
    check.close("bert-base-uncased hidden states (%d tokens)" % len(ids), np.load(out + "/hidden.npy"), hidden)
    check.close("bert-base-uncased masked-LM logits", np.load(out + "/logits.npy"), logits)

    # all-MiniLM-L6-v2: the last hidden states and embed's vector (mean pooling, normalized)
    small = {"hidden_size": 48, "num_hidden_layers": 2, "num_attention_heads": 12, "intermediate_size": 96,
             "max_position_embeddings": 64}
    d, cfg, W, ids, out = run_model(build, binary, node_path, "all-MiniLM-L6-v2", small,
                                    lambda c: bert_weights(c, r, "", False, False, True), check)
    L = cfg["num_hidden_layers"]
    res = attnscope(binary, d, 'prompt "%s"; finish; dump blocks.%d.ln2.hook_normalized %s/hidden.npy; '
                    'embed %s/embed.npy; embed' % (esc, L - 1, out, out))
    noted(check, "all-MiniLM-L6-v2", res, ["embeddings.position_ids (I64)", "pooler.dense.weight"])
    print("hub-ref all-MiniLM-L6-v2: embed says: %s" % [l for l in res.stdout.splitlines() if l.startswith("pooled vector (")][0])
    hidden, _ = bert_forward(W, cfg, ids, "", False)
    check.close("all-MiniLM-L6-v2 hidden states (%d tokens)" % len(ids), np.load(out + "/hidden.npy"), hidden)
    check.close("all-MiniLM-L6-v2 embed (mean pooling, L2-normalized)", np.load(out + "/embed.npy"),
                sentence_embedding(hidden))

    # the ids of mixed strings
    texts_path = os.path.join(build, "hub", "texts.json")
    with open(texts_path, "w", encoding="utf-8") as f:
        subprocess.run([sys.executable, TEXTS_PY, str(n_strings), "21"], stdout=f, check=True)
    texts = json.load(open(texts_path, encoding="utf-8"))
    for name in ("gpt2", "bert-base-uncased", "all-MiniLM-L6-v2"):
        d = os.path.join(build, "hub", name)
        js = lenml_ids(node_path, os.path.join(d, "tokenizer.json"), texts, False, d)
        r2 = subprocess.run([tokids, d, texts_path], capture_output=True, text=True)
        if r2.returncode:
            check.failed.append("%s ids" % name)
            print("hub-ref %s ids: tokids failed: %s" % (name, r2.stderr.strip()))
            continue
        us = json.loads(r2.stdout)
        wordpiece = name != "gpt2"
        # attnscope's WordPiece stores a word's first piece with '▁' in front, as llama.cpp's converter
        # does, so a '▁' typed in the text reads as a word start (tests/hfref/run.sh counts it apart too)
        typed = {i for i, t in enumerate(texts) if wordpiece and "\u2581" in t}
        nfd = {i for i, t in enumerate(texts) if wordpiece and unicodedata.normalize("NFD", t) != t} - typed
        bad = [i for i in range(len(texts)) if js[i] != us[i] and i not in typed]
        note = ""
        if wordpiece:
            note = ("; %d holding a typed \u2581 counted apart, %d of them differ; of the others, %d whose text NFD "
                    "changes, %d of them differ" %
                    (len(typed), sum(js[i] != us[i] for i in typed), len(nfd), sum(js[i] != us[i] for i in nfd)))
        print("hub-ref %s ids: %d strings, %d ids, %d differ%s" % (name, len(texts), sum(map(len, js)), len(bad),
                                                                 note))
        for i in bad[:3]:
            print("  %r\n    @lenml:    %s\n    attnscope: %s" % (texts[i], js[i], us[i]))
        if bad:
            check.failed.append("%s ids" % name)
    if check.failed:
        print("hub-ref: FAILED: %s" % ", ".join(check.failed))
        sys.exit(1)
    print("hub-ref encoders: all checks passed")


if __name__ == "__main__":
    main()
