#!/usr/bin/python3
"""Pre-train austen-bert, a small BERT, by masked-word prediction; export it.

    python3 train_bert.py                 # train (28 min) + export
    python3 train_bert.py --threads 1     # the same on a machine shared with other work
    python3 train_bert.py --train-only    # train, save work/austen-bert.pt
    python3 train_bert.py --export-only   # export from work/austen-bert.pt

Needs work/corpus_{train,val}.txt (corpus.py) and work/wordpiece.json
(wordpiece.py, trained on corpus_train.txt only).

Model (class Bert; export_bert.py checks it against reference.Encoder, the
float64 pass whose every hook the C engine is tested against):
BERT as Devlin et al. and llama.cpp's `bert` define it. Embeddings: token +
learned position + token type (2 types), then LayerNorm. Each block is
Post-LN: x = LN(x + attn(x)); x = LN(x + mlp(x)); attention has separate
Q, K, V, output projections with biases and no mask (every position sees
every other); the MLP is up, GELU, down with biases. GELU is the tanh
approximation, because that is what llama.cpp's ggml_gelu computes (BERT's
own code uses erf; the two differ by < 1e-3). LayerNorm eps 1e-12 as in
BERT. Masked-LM head (BERT's "cls.predictions"): dense d->d, GELU,
LayerNorm, then the output matrix tied to the token embedding, plus an
output bias.

Data: every row is consecutive training text, 32 tokens for the first 35%
of the steps, 64 up to 65%, then 128 (the context); a batch holds 2,048
tokens (64 rows of 32, ..., 16 of 128). Half the rows are [CLS] A [SEP] (one
span, token type 0), half [CLS] A [SEP] B [SEP] (two consecutive spans cut
at a random point, types 0 for [CLS] A [SEP] and 1 for B [SEP]), so both
token-type rows are trained. No next-sentence task. Masking as BERT, at a
higher rate: 20% of the non-special positions are chosen (numpy rng); of
those 80% become [MASK], 10% a random ordinary piece, 10% stay; the loss is
the cross-entropy at the chosen positions only. The card's evaluation
masks 15%, as BERT does.

Why the short rows first: a run of 1,800 steps on 128-token rows from the
start (32 rows a batch, 15% masked, the 2026-11-24 recipe) stayed on the
unigram plateau (validation loss 5.52, the unigram entropy being 6.16) with
uniform attention; on 32-token rows a neighbour has 1/32 of a uniform
head's weight instead of 1/128, and this recipe leaves the plateau near
step 1,000 (train loss 5.19 at 1,000, 4.62 at 1,200).

The learned position embeddings start from a sinusoidal table (scaled to
std 0.02), the other matrices from N(0, 0.02), biases at 0.

Optimisation: 3,500 steps; AdamW (lr 1e-3, betas 0.9/0.98, weight decay
0.01 on matrices), 200 warm-up steps then cosine decay to 10%, whose
progress is the larger of step/steps and elapsed/max_minutes (45), so the
run always ends within its budget on a slow machine (the shipped run took
27.8 min and never met it: the schedule was the steps'); gradient clipping
at 1; bfloat16 autocast with float32 master weights; 2 torch threads by
default (--threads 1 on a machine shared with another job: two spinning
threads on one free core are about 4x slower); fixed seeds.
"""
import argparse
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import wordpiece  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
WORK = os.path.join(HERE, "work")
NAME = "austen-bert"
CKPT = os.path.join(WORK, NAME + ".pt")

CFG = dict(vocab=5000, d_model=256, n_layer=4, n_head=4, d_ff=1024, ctx=128,
           n_types=2, eps=1e-12)
RECIPE = dict(batch_tokens=2048, steps=3500, warmup=200, lr=1e-3,
              min_lr_frac=0.1, wd=0.01, eval_every=100, max_minutes=45, seed=4,
              mask_frac=0.2, pair_frac=0.5,
              # row length by share of the steps: [(from, length), ...]
              lengths=((0.0, 32), (0.35, 64), (0.65, 128)))


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def gelu(x):
    return F.gelu(x, approximate="tanh")


def sinusoidal_(weight, std=0.02):
    """Start the learned positions from a sinusoidal table scaled to the
    embedding's std (as austen-gpt2 does): attention can tell positions
    apart from the first step, which shortens the long uniform-attention
    plateau masked-LM training starts with (a first run from noise was
    still at unigram loss, with uniform attention, after 300 steps)."""
    ctx, d = weight.shape
    pos = torch.arange(ctx, dtype=torch.float64)[:, None]
    inv = 10000.0 ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    tab = torch.zeros(ctx, d, dtype=torch.float64)
    tab[:, 0::2] = torch.sin(pos * inv)
    tab[:, 1::2] = torch.cos(pos * inv)
    with torch.no_grad():
        weight.copy_((tab / tab.std() * std).float())


# -- model --------------------------------------------------------------------
class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        d = c["d_model"]
        self.n_head = c["n_head"]
        self.q, self.k, self.v, self.o = (nn.Linear(d, d) for _ in range(4))
        self.ln1 = nn.LayerNorm(d, eps=c["eps"])
        self.up = nn.Linear(d, c["d_ff"])
        self.down = nn.Linear(c["d_ff"], d)
        self.ln2 = nn.LayerNorm(d, eps=c["eps"])

    def forward(self, x, hooks, li):
        b, t, d = x.shape
        h, dh = self.n_head, d // self.n_head

        def split(y):
            return y.view(b, t, h, dh).transpose(1, 2)

        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        att = torch.softmax((q @ k.transpose(-1, -2)) / math.sqrt(dh), dim=-1)
        if hooks is not None:
            hooks["blocks.%d.attn.hook_pattern" % li] = att.detach()
        z = (att @ v).transpose(1, 2).reshape(b, t, d)
        x = self.ln1(x + self.o(z))
        return self.ln2(x + self.down(gelu(self.up(x))))


class Bert(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.cfg = dict(c)
        d = c["d_model"]
        self.tok = nn.Embedding(c["vocab"], d)
        self.pos = nn.Embedding(c["ctx"], d)
        self.typ = nn.Embedding(c["n_types"], d)
        self.ln_emb = nn.LayerNorm(d, eps=c["eps"])
        self.blocks = nn.ModuleList(Block(c) for _ in range(c["n_layer"]))
        self.mlm_dense = nn.Linear(d, d)
        self.mlm_ln = nn.LayerNorm(d, eps=c["eps"])
        self.mlm_bias = nn.Parameter(torch.zeros(c["vocab"]))
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                nn.init.normal_(p, std=0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
        sinusoidal_(self.pos.weight)

    def encode(self, ids, types=None, hooks=None):
        if types is None:
            types = torch.zeros_like(ids)
        t = ids.shape[1]
        x = self.tok(ids) + self.pos(torch.arange(t)) + self.typ(types)
        x = self.ln_emb(x)
        for li, blk in enumerate(self.blocks):
            x = blk(x, hooks, li)
        return x

    def mlm_logits(self, x):
        # LayerNorm statistics in float32 (bf16 autocast hands it bf16)
        x = self.mlm_ln(gelu(self.mlm_dense(x)).float())
        return x @ self.tok.weight.t() + self.mlm_bias

    def forward(self, ids, types=None, hooks=None):
        """MLM logits at every position [B, T, V]."""
        return self.mlm_logits(self.encode(ids, types, hooks))


# -- data ---------------------------------------------------------------------
def load_split(name, tok):
    cache = os.path.join(WORK, "wordpiece.%s.npy" % name)
    if os.path.exists(cache):
        return np.load(cache)
    with open(os.path.join(WORK, "corpus_%s.txt" % name), encoding="utf-8") as f:
        ids = np.asarray(tok.encode(f.read()), dtype=np.int32)
    np.save(cache, ids)
    return ids


def make_rows(ids, batch, ctx, pair_frac, rng):
    """Rows of consecutive text: [CLS] A [SEP] or [CLS] A [SEP] B [SEP]."""
    xs, ts = [], []
    for _ in range(batch):
        pair = rng.random() < pair_frac
        n = ctx - (3 if pair else 2)
        s = int(rng.integers(0, len(ids) - n))
        span = ids[s:s + n].astype(np.int64)
        if pair:
            cut = int(rng.integers(8, n - 8))
            row = np.concatenate([[wordpiece.CLS], span[:cut], [wordpiece.SEP],
                                  span[cut:], [wordpiece.SEP]])
            typ = np.zeros(ctx, dtype=np.int64)
            typ[cut + 2:] = 1
        else:
            row = np.concatenate([[wordpiece.CLS], span, [wordpiece.SEP]])
            typ = np.zeros(ctx, dtype=np.int64)
        xs.append(row)
        ts.append(typ)
    return np.stack(xs), np.stack(ts)


def mask_rows(x, vocab, frac, rng):
    """BERT's masking: returns (inputs, targets with -100 where not chosen)."""
    x = x.copy()
    normal = x >= len(wordpiece.SPECIALS)
    chosen = (rng.random(x.shape) < frac) & normal
    y = np.where(chosen, x, -100)
    r = rng.random(x.shape)
    x[chosen & (r < 0.8)] = wordpiece.MASK
    rand = chosen & (r >= 0.8) & (r < 0.9)
    x[rand] = rng.integers(len(wordpiece.SPECIALS), vocab, size=int(rand.sum()))
    return x, y


def row_length(r, progress):
    n = r["lengths"][0][1]
    for start, length in r["lengths"]:
        if progress >= start:
            n = length
    return n


def batch_tensors(ids, r, c, rng, length):
    x, t = make_rows(ids, max(1, r["batch_tokens"] // length), length,
                     r["pair_frac"], rng)
    x, y = mask_rows(x, c["vocab"], r["mask_frac"], rng)
    return torch.from_numpy(x), torch.from_numpy(t), torch.from_numpy(y)


def val_set(va, c, r, n_rows=64, seed=1234):
    rng = np.random.default_rng(seed)
    x, t = make_rows(va, n_rows, c["ctx"], r["pair_frac"], rng)
    x, y = mask_rows(x, c["vocab"], r["mask_frac"], rng)
    return torch.from_numpy(x), torch.from_numpy(t), torch.from_numpy(y)


def mlm_loss(model, x, t, y):
    h = model.encode(x, t)
    sel = y >= 0
    lo = model.mlm_logits(h[sel]).float()
    return F.cross_entropy(lo, y[sel]), lo, y[sel]


def evaluate(model, vset, bf16=True, bs=32):
    model.eval()
    tot, n, top1 = 0.0, 0, 0
    x, t, y = vset
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        for i in range(0, len(x), bs):
            loss, lo, yy = mlm_loss(model, x[i:i + bs], t[i:i + bs], y[i:i + bs])
            tot += loss.item() * len(yy)
            n += len(yy)
            top1 += int((lo.argmax(-1) == yy).sum())
    model.train()
    return tot / n, top1 / n


# -- training -----------------------------------------------------------------
def lr_at(step, r, progress):
    if step < r["warmup"]:
        return r["lr"] * (step + 1) / r["warmup"]
    wf = r["warmup"] / r["steps"]
    frac = min(1.0, (progress - wf) / max(1e-9, 1 - wf))
    m = r["min_lr_frac"]
    return r["lr"] * (m + (1 - m) * 0.5 * (1 + math.cos(math.pi * frac)))


def make_optimizer(model, r):
    decay = [p for p in model.parameters() if p.dim() >= 2]
    other = [p for p in model.parameters() if p.dim() < 2]
    return torch.optim.AdamW([{"params": decay, "weight_decay": r["wd"]},
                              {"params": other, "weight_decay": 0.0}],
                             lr=r["lr"], betas=(0.9, 0.98), eps=1e-6)


def train(max_steps=None):
    r, c = RECIPE, CFG
    torch.manual_seed(r["seed"])
    rng = np.random.default_rng(r["seed"])
    tok = wordpiece.Tokenizer.load(os.path.join(WORK, "wordpiece.json"))
    assert len(tok.tokens) == c["vocab"], "vocabulary size %d" % len(tok.tokens)
    tr, va = load_split("train", tok), load_split("val", tok)
    log("train pieces %d, val pieces %d" % (len(tr), len(va)))
    vset = val_set(va, c, r)
    model = Bert(c)
    log("parameters %d" % sum(p.numel() for p in model.parameters()))
    opt = make_optimizer(model, r)
    steps = r["steps"] if max_steps is None else max_steps
    t0, budget, acc, curve = time.time(), r["max_minutes"] * 60, [], []
    step, cur_len = 0, None
    for step in range(steps):
        progress = max(step / r["steps"], (time.time() - t0) / budget)
        if progress >= 1.0:
            log("time budget reached at step %d" % step)
            break
        for g in opt.param_groups:
            g["lr"] = lr_at(step, r, progress)
        length = row_length(r, progress)
        if length != cur_len:
            log("rows of %d tokens from step %d" % (length, step))
            cur_len = length
        x, t, y = batch_tensors(tr, r, c, rng, length)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            loss, _, _ = mlm_loss(model, x, t, y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        acc.append(loss.item())
        if (step + 1) % r["eval_every"] == 0 or step + 1 == steps:
            vl, v1 = evaluate(model, vset)
            mins = (time.time() - t0) / 60
            row = dict(step=step + 1, minutes=round(mins, 2), length=cur_len,
                       train_loss=round(float(np.mean(acc)), 4),
                       val_loss=round(vl, 4), val_top1=round(v1, 4))
            curve.append(row)
            log(json.dumps(row))
            acc = []
            torch.save({"cfg": c, "state": model.state_dict(), "curve": curve,
                        "steps": step + 1, "minutes": mins},
                       CKPT)
    else:
        step = steps
    mins = (time.time() - t0) / 60
    torch.save({"cfg": c, "state": model.state_dict(), "curve": curve,
                "steps": step if step < steps else steps, "minutes": mins},
               CKPT)
    log("trained %d steps in %.1f min" % (step, mins))
    return model


def main():
    global CKPT
    ap = argparse.ArgumentParser()
    ap.add_argument("--train-only", action="store_true")
    ap.add_argument("--export-only", action="store_true")
    ap.add_argument("--max-steps", type=int, default=None,
                    help="stop early (for timing a step)")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                    help="override a RECIPE entry for a trial (Python literal)")
    ap.add_argument("--threads", type=int, default=2,
                    help="torch threads (1 on a machine shared with other work: "
                         "two spinning threads on one free core are 4x slower)")
    ap.add_argument("--ckpt", default=CKPT, help="checkpoint path (trials)")
    a = ap.parse_args()
    CKPT = a.ckpt
    import ast
    for kv in a.set:
        k, v = kv.split("=", 1)
        if k not in RECIPE:
            ap.error("no recipe entry %r" % k)
        RECIPE[k] = ast.literal_eval(v)
    torch.set_num_threads(a.threads)
    if not a.export_only:
        train(a.max_steps)
    if not a.train_only:
        import export_bert
        export_bert.main()


if __name__ == "__main__":
    main()
