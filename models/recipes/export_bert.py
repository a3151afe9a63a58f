#!/usr/bin/python3
"""Export austen-bert from work/austen-bert.pt; measure it for its card.

    python3 export_bert.py            (train_bert.py runs this when it ends)

Writes:
  models/austen-bert.gguf                    the shipped model (F32)
  work/austen-bert.nomlm.gguf                the same without mlm.* (what
                                             llama.cpp's `bert` loads)
  work/austen-bert.results.json              the card's numbers
  tests/fixtures/models/austen-bert/          every hook of a short pair
                                             ([CLS] A [SEP] B [SEP], types
                                             0/1, one [MASK]) from
                                             reference.Encoder in float64,
                                             as make_fixtures.py writes them
  tests/fixtures/models/austen-bert.gguf      a link to the shipped file

GGUF layout: llama.cpp's `bert` tensor names (token_embd, token_types,
position_embd, token_embd_norm, blk.N.attn_{q,k,v,output},
blk.N.attn_output_norm, blk.N.ffn_{up,down}, blk.N.layer_output_norm) plus
the masked-LM head as mlm.dense.{weight,bias}, mlm.norm.{weight,bias},
mlm.output.bias (the output matrix is token_embd.weight, tied). Tokenizer
keys as llama.cpp's converter writes a BERT vocabulary (conversion/bert.py
and gguf-py's SpecialVocab): "##x" -> "x", word start "x" -> "\\u2581x",
specials of type 3; bos = [CLS], eos = [SEP], add_bos and add_sep on.

Checks, recorded in the results: llama.cpp (libllama of the npm package,
through llama_bert_check.c) loads the copy without mlm.*, its WordPiece ids
equal wordpiece.py's on held-out paragraphs and test strings, and its
per-token outputs equal this file's PyTorch model's.
"""
import json
import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gguf_writer as gw  # noqa: E402
import train_bert as tb  # noqa: E402
import wordpiece  # noqa: E402

ROOT, WORK, NAME = tb.ROOT, tb.WORK, tb.NAME
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "models")
LLAMA_REF = os.path.join(ROOT, "build", "llama-ref")
POOLING_MEAN = 1

# The fixture: a sentence pair with one [MASK] (typed where the word was).
FIXTURE_A = ("It is a truth universally acknowledged, that a single man in "
             "possession of a good fortune, must be in want of a", "[MASK]", ".")
FIXTURE_B = "However little known the feelings or views of such a man may be."

# Strings whose WordPiece ids must equal llama.cpp's: accents, punctuation,
# symbols, digits, unknown characters, runs of white space.
TEST_STRINGS = [
    "It is a truth universally acknowledged.",
    "  Mr. Darcy's £10,000 a-year; \"Indeed!\" said she -- naïve café, Mrs. Élise.",
    "w048 7tuijk dsdfhu \t tabs\tand\nnewlines",
    "ÀÉÎÕÜ àéîõü ñ ç ß — “quotes” ‘single’ … 3.14 1/2 $5 +=<>^`|~ @#%&*",
    "нещо на Български 🦙.cpp 東京",
]


def load():
    ck = torch.load(os.path.join(WORK, NAME + ".pt"))
    model = tb.Bert(ck["cfg"])
    model.load_state_dict(ck["state"])
    model.eval()
    tok = wordpiece.Tokenizer.load(os.path.join(WORK, "wordpiece.json"))
    return model, tok, ck


# -- GGUF -----------------------------------------------------------------------
def tensors(model, with_mlm=True):
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    out = [("token_embd.weight", sd["tok.weight"]),
           ("token_types.weight", sd["typ.weight"]),
           ("position_embd.weight", sd["pos.weight"]),
           ("token_embd_norm.weight", sd["ln_emb.weight"]),
           ("token_embd_norm.bias", sd["ln_emb.bias"])]
    names = [("q", "attn_q"), ("k", "attn_k"), ("v", "attn_v"), ("o", "attn_output"),
             ("ln1", "attn_output_norm"), ("up", "ffn_up"), ("down", "ffn_down"),
             ("ln2", "layer_output_norm")]
    for i in range(model.cfg["n_layer"]):
        for ours, theirs in names:
            for part in ("weight", "bias"):
                out.append(("blk.%d.%s.%s" % (i, theirs, part),
                            sd["blocks.%d.%s.%s" % (i, ours, part)]))
    if with_mlm:
        out += [("mlm.dense.weight", sd["mlm_dense.weight"]),
                ("mlm.dense.bias", sd["mlm_dense.bias"]),
                ("mlm.norm.weight", sd["mlm_ln.weight"]),
                ("mlm.norm.bias", sd["mlm_ln.bias"]),
                ("mlm.output.bias", sd["mlm_bias"])]
    return out


def write_gguf(path, model, tok, with_mlm=True):
    c = model.cfg
    w = gw.GGUFWriter(path)
    w.add_string("general.architecture", "bert")
    w.add_string("general.name", NAME)
    w.add_uint32("general.file_type", 0)  # all F32
    w.add_uint32("bert.context_length", c["ctx"])
    w.add_uint32("bert.embedding_length", c["d_model"])
    w.add_uint32("bert.feed_forward_length", c["d_ff"])
    w.add_uint32("bert.block_count", c["n_layer"])
    w.add_uint32("bert.attention.head_count", c["n_head"])
    w.add_float32("bert.attention.layer_norm_epsilon", c["eps"])
    w.add_bool("bert.attention.causal", False)
    w.add_uint32("bert.pooling_type", POOLING_MEAN)
    toks, types = tok.gguf_pieces()
    w.add_string("tokenizer.ggml.model", "bert")
    w.add_string("tokenizer.ggml.pre", "default")
    w.add_array("tokenizer.ggml.tokens", toks)
    w.add_array("tokenizer.ggml.token_type", np.asarray(types, dtype=np.int32))
    w.add_uint32("tokenizer.ggml.token_type_count", c["n_types"])
    w.add_bool("tokenizer.ggml.normalizer.lowercase", True)
    for key, tid in [("bos", tok.cls), ("eos", tok.sep), ("unknown", tok.unk),
                     ("seperator", tok.sep), ("padding", tok.pad), ("cls", tok.cls),
                     ("mask", tok.mask)]:
        w.add_uint32("tokenizer.ggml.%s_token_id" % key, tid)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    w.add_bool("tokenizer.ggml.add_sep_token", True)
    for name, arr in tensors(model, with_mlm):
        w.add_tensor(name, arr)
    return w.write()


# -- measurements ---------------------------------------------------------------
def windows(ids, ctx):
    n = ctx - 2
    rows = [np.concatenate([[wordpiece.CLS], ids[k:k + n], [wordpiece.SEP]])
            for k in range(0, len(ids) - n + 1, n)]
    return np.stack(rows).astype(np.int64)


def mlm_eval(model, ids, ctx, vocab, seed=1234, max_rows=None, bs=32):
    """Loss, top-1 and top-5 over BERT-masked windows (float32)."""
    x = windows(ids, ctx)[:max_rows]
    xm, y = tb.mask_rows(x, vocab, 0.15, np.random.default_rng(seed))
    xm, y = torch.from_numpy(xm), torch.from_numpy(y)
    t = torch.zeros_like(xm)
    tot, n, top1, top5 = 0.0, 0, 0, 0
    with torch.no_grad():
        for i in range(0, len(xm), bs):
            loss, lo, yy = tb.mlm_loss(model, xm[i:i + bs], t[i:i + bs], y[i:i + bs])
            tot += loss.item() * len(yy)
            n += len(yy)
            best = lo.topk(5, -1).indices
            top1 += int((best[:, 0] == yy).sum())
            top5 += int((best == yy[:, None]).any(-1).sum())
    return dict(rows=len(xm), masked=n, loss=round(tot / n, 4),
                top1=round(top1 / n, 4), top5=round(top5 / n, 4))


def fixture_ids(tok):
    a = (tok.encode(FIXTURE_A[0]) + [tok.mask] + tok.encode(FIXTURE_A[2]))
    b = tok.encode(FIXTURE_B)
    ids = [tok.cls] + a + [tok.sep] + b + [tok.sep]
    types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    return np.asarray(ids, np.int32), np.asarray(types, np.int32)


def fixture_report(model, tok):
    """The card's example: the top predictions at the [MASK] of the
    opening sentence (a pair, as the fixture of make_fixtures.py is)."""
    ids, types = fixture_ids(tok)
    with torch.no_grad():
        x = torch.from_numpy(ids.astype(np.int64))[None]
        t = torch.from_numpy(types.astype(np.int64))[None]
        logits = model(x, t)[0].float().numpy()
    m = int(np.where(ids == tok.mask)[0][0])
    top = np.argsort(-logits[m])[:5]
    p = torch.softmax(torch.from_numpy(logits[m]), -1).numpy()
    return dict(tokens=[tok.tokens[i] for i in ids], mask_position=m,
                mask_top5=[[tok.tokens[i], round(float(p[i]), 4)] for i in top])


# The every-hook fixture: a short pair (the full one's [T, V] logits and MLP
# activations would be megabytes), so that tests/test_interp.c holds
# austen-bert to reference.Encoder like the tiny random encoders.
HOOKS_A, HOOKS_B = "It is a truth universally acknowledged.", "She was [MASK] happy."


def write_hook_fixture(model, tok):
    """reference.Encoder (float64, the independent forward pass the tiny
    encoders are tested against) given austen-bert's float32 weights:
    every hook to tests/fixtures/models/austen-bert/, beside a link to the
    shipped GGUF; PyTorch's nn.TransformerEncoderLayer(norm_first=False)
    checks each block; the float64 logits against the recipe's float32."""
    import make_fixtures as MF
    import reference as R
    c = model.cfg
    cfg = R.EncoderConfig(arch="bert", vocab=c["vocab"], d_model=c["d_model"], n_layer=c["n_layer"],
                          n_head=c["n_head"], d_ff=c["d_ff"], ctx=c["ctx"], eps=c["eps"],
                          n_types=c["n_types"], pooling=POOLING_MEAN, mlm=True)
    ref = R.Encoder(cfg).double()
    sd = {k: v.detach().double() for k, v in model.state_dict().items()}
    pairs = {"tok_embd.weight": "tok.weight", "pos_embd.weight": "pos.weight",
             "type_embd.weight": "typ.weight", "embd_ln_w": "ln_emb.weight",
             "embd_ln_b": "ln_emb.bias", "mlm_dense.weight": "mlm_dense.weight",
             "mlm_dense.bias": "mlm_dense.bias", "mlm_ln_w": "mlm_ln.weight",
             "mlm_ln_b": "mlm_ln.bias", "mlm_out_b": "mlm_bias"}
    for i in range(c["n_layer"]):
        for part in ("q", "k", "v", "o", "up", "down"):
            for wb in ("weight", "bias"):
                pairs["blocks.%d.%s.%s" % (i, part, wb)] = "blocks.%d.%s.%s" % (i, part, wb)
        for ln in ("ln1", "ln2"):
            pairs["blocks.%d.%s_w" % (i, ln)] = "blocks.%d.%s.weight" % (i, ln)
            pairs["blocks.%d.%s_b" % (i, ln)] = "blocks.%d.%s.bias" % (i, ln)
    params = dict(ref.named_parameters())
    assert set(params) == set(pairs), set(params) ^ set(pairs)
    with torch.no_grad():
        for ours, theirs in pairs.items():
            params[ours].copy_(sd[theirs])
    a = tok.encode(HOOKS_A)
    b = sum(([tok.mask] + tok.encode(part) if k else tok.encode(part)
             for k, part in enumerate(HOOKS_B.split("[MASK]"))), [])
    ids = [tok.cls] + a + [tok.sep] + b + [tok.sep]
    types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    hooks = MF.run_encoder_hooks(ref, ids, types)
    MF.save_hooks(FIXTURES, NAME, cfg, {"tokens": tok.tokens}, ids, HOOKS_A + " | " + HOOKS_B,
                  hooks, list(hooks))
    np.save(os.path.join(FIXTURES, NAME, "types.npy"), np.asarray(types, np.int32))
    link = os.path.join(FIXTURES, NAME + ".gguf")
    if not os.path.islink(link):
        os.symlink(os.path.join("..", "..", "..", "models", NAME + ".gguf"), link)
    block_check = MF.check_bert_block_against_torch(ref, cfg, hooks)
    with torch.no_grad():
        f32 = model(torch.tensor([ids]), torch.tensor([types]))[0].double().numpy()
    worst = float(np.abs(f32 - hooks["unembed.hook_out"].reshape(f32.shape)).max())
    return dict(tokens=[tok.tokens[i] for i in ids], hooks=len(hooks), torch_block=block_check,
                recipe_vs_reference_logits=worst)


# -- llama.cpp ------------------------------------------------------------------
def build_check():
    src = os.path.join(HERE, "llama_bert_check.c")
    libdir = os.path.join(LLAMA_REF, "npm", "bins", "package", "bins", "linux-x64")
    if open(os.path.join(LLAMA_REF, "status")).read().strip() != "ok":
        raise RuntimeError("build/llama-ref is not installed (make llama-ref)")
    libs = {p: [f for f in sorted(os.listdir(libdir)) if f.startswith(p) and ".so" in f][0]
            for p in ("libllama.", "libggml.", "libggml-base")}
    binp = os.path.join(WORK, "llama-bert-check")
    inc = os.path.join(LLAMA_REF, "llama.cpp")
    subprocess.run(["cc", "-std=c11", "-O2", "-Wall", "-Wextra", "-I" + inc + "/include",
                    "-I" + inc + "/ggml/include", src, "-L" + libdir,
                    "-Wl,-rpath," + os.path.abspath(libdir)]
                   + ["-l:" + v for v in libs.values()] + ["-o", binp], check=True)
    return binp, libdir


def llama_check(model, tok, nomlm_path, va_text):
    binp, libdir = build_check()
    paras = [p.replace("\n", " ") for p in va_text.split("\n\n") if p.strip()]
    texts = TEST_STRINGS + [p for p in paras if len(tok.encode(p)) <= 126][:40]
    out = subprocess.run([binp, libdir, nomlm_path], input="\n".join(
        t.replace("\n", " ") for t in texts) + "\n", capture_output=True, text=True)
    if out.returncode:
        raise RuntimeError("llama-bert-check failed: " + out.stderr)
    lines = out.stdout.splitlines()
    n_same, worst, k = 0, 0.0, 0
    mismatches = []
    for text in texts:
        ids = [int(v) for v in lines[k].split()[1:]]
        k += 1
        ours = [tok.cls] + tok.encode(text.replace("\n", " ")) + [tok.sep]
        if ids == ours:
            n_same += 1
        else:
            mismatches.append(dict(text=text, llama=ids, ours=ours))
        vec = np.asarray([[float(v) for v in lines[k + i].split()[1:]]
                          for i in range(len(ids))])
        k += len(ids)
        with torch.no_grad():
            h = model.encode(torch.tensor([ids]))[0].numpy()
        worst = max(worst, float(np.abs(vec - h).max() / np.abs(h).max()))
    return dict(texts=len(texts), same_ids=n_same, mismatches=mismatches,
                worst_rel_output_diff=worst)


# -- heads ----------------------------------------------------------------------
def main():
    torch.set_num_threads(int(os.environ.get("AS_THREADS", "2")))
    model, tok, ck = load()
    c = model.cfg
    gguf = os.path.join(ROOT, "models", NAME + ".gguf")
    nomlm = os.path.join(WORK, NAME + ".nomlm.gguf")
    size = write_gguf(gguf, model, tok)
    write_gguf(nomlm, model, tok, with_mlm=False)
    tr, va = tb.load_split("train", tok), tb.load_split("val", tok)
    va_text = open(os.path.join(WORK, "corpus_val.txt"), encoding="utf-8").read()
    res = dict(params=sum(p.numel() for p in model.parameters()), bytes=size,
               steps=ck["steps"], minutes=round(ck["minutes"], 1), curve=ck["curve"])
    res["val"] = mlm_eval(model, va, c["ctx"], c["vocab"])
    res["train"] = mlm_eval(model, tr, c["ctx"], c["vocab"], max_rows=res["val"]["rows"])
    print("val", res["val"], "train", res["train"], flush=True)
    res["fixture"] = fixture_report(model, tok)
    print("fixture", res["fixture"], flush=True)
    res["hook_fixture"] = write_hook_fixture(model, tok)
    print("hook fixture", res["hook_fixture"], flush=True)
    import head_scores
    res["heads"] = head_scores.bert_report(model, tok, va)
    try:
        res["llama"] = llama_check(model, tok, nomlm, va_text)
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        print("#" * 72 + "\n## llama.cpp check NOT run: %s\n" % e + "#" * 72)
        res["llama"] = dict(error=str(e))
    print("llama", res["llama"], flush=True)
    with open(os.path.join(WORK, NAME + ".results.json"), "w") as f:
        json.dump(res, f, indent=1, ensure_ascii=False)
    print("wrote %s (%d bytes) and work/%s.results.json" % (gguf, size, NAME))


if __name__ == "__main__":
    main()
