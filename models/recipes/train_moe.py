#!/usr/bin/python3
"""Train austen-moe: a DeepSeek-style mixture of experts on the Austen corpus.

    python3 train_moe.py                 # time-budgeted training, then export
    python3 train_moe.py --export-only   # re-export from work/austen-moe.pt
    python3 train_moe.py --minutes 2 --tag trial   # a short trial (work/trial.*)

The model is reference.DeepSeek2 (models/recipes/reference.py, the
independent forward pass the deepseek2 fixtures are tested against), in the
layout llama.cpp reads as `deepseek2`:
  - multi-head latent attention: q straight from the stream (attn_q; a
    separate q latent saves nothing at width 256), keys and values rebuilt
    from a 64-wide latent with its RMSNorm, plus one 16-wide rotary key
    shared by the 8 heads (d_nope 32, d_rope 16, d_v 32);
  - layer 0 a dense SwiGLU (704 wide, as austen-llama's), layers 1-3
    DeepSeekMoE: 8 routed experts of width 192, top 2, and one shared expert
    of width 192 every token uses; sigmoid affinities, the top 2 chosen by
    affinity + a selection bias, gates = the chosen affinities over their
    sum (DeepSeek-V3's routing, without groups).
Load balancing is DeepSeek-V3's auxiliary-loss-free rule: after each step
each MoE layer's bias moves by BIAS_RATE towards balance (up for an expert
that took less than its share of the batch's choices, down for one that
took more). The bias only chooses; it never scales an output and gets no
gradient.

The same tokenizer (work/spm.model, 2,048 pieces), training split and
validation windows (256 tokens) as austen-llama, so the two validation
losses are in the same units; austen-llama's batches also had 3 of 16 rows
of synthetic copying tasks, these have only text. AdamW (0.9, 0.95), weight
decay 0.1 on matrices, warmup then cosine decay that follows the step count
or the time budget, whichever is further along; bfloat16 autocast with
float32 weights; gradient clipping at 1.

Training uses its own forward for the experts (each expert once over the
tokens that chose it: the reference's gather of every chosen expert's
matrices is for checking, not training); the export checks that the
reference's forward gives the same logits on the trained weights.

Writes work/austen-moe.{pt,log,results.json}, models/austen-moe.gguf and
tests/fixtures/models/austen-moe/ (every hook of reference.DeepSeek2 in
float64 on the trained weights, the fixture prompt) with a link
tests/fixtures/models/austen-moe.gguf -> models/austen-moe.gguf.
"""
import argparse
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference as R  # noqa: E402
import train as T  # noqa: E402

NAME = "austen-moe"
ROOT = os.path.dirname(os.path.dirname(HERE))
WORK = os.path.join(HERE, "work")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "models")
FIXTURE_TEXT = "It is a truth universally acknowledged, that a single man in possession of a good fortune"

CFG = dict(vocab=2048, d_model=256, n_layer=4, n_head=8, d_nope=32, d_rope=16, d_v=32, kv_lora=64, q_lora=0,
           d_ff=704, ctx=256, eps=1e-5, rope_base=10000.0, n_dense=1, n_expert=8, n_expert_used=2,
           d_expert=192, n_shared=1, sigmoid=True, bias=True, norm=True, scale=1.0)
RECIPE = dict(tokenizer="spm", batch=16, seq=256, steps=2400, warmup=100, lr=2e-3, min_lr_frac=0.1, wd=0.1,
              eval_every=200, max_minutes=26, time_schedule=True, seed=5)
BIAS_RATE = 3e-3


class TrainMoE(R.DeepSeek2):
    """reference.DeepSeek2 with a training forward for the routed experts;
    with hooks (the fixture pass) it is the reference's own."""

    def __init__(self, c):
        super().__init__(c)
        self.loads = {}
        self.chosen = {}   # per MoE layer: the last batch's experts, [tokens, k]

    def _moe(self, blk, x, L, hooks):
        if hooks is not None:
            return super()._moe(blk, x, L, hooks)
        c = self.cfg
        B, Tn, d = x.shape
        xf = x.reshape(-1, d)
        logits = blk.router(xf)
        s = torch.sigmoid(logits.float() if logits.dtype == torch.bfloat16 else logits)
        idx = torch.topk(s + blk.exp_probs_b.detach(), c.n_expert_used, dim=-1).indices
        g = torch.gather(s, -1, idx)
        g = g / g.sum(-1, keepdim=True)
        out = torch.zeros_like(xf)
        for e in range(c.n_expert):
            tok, slot = (idx == e).nonzero(as_tuple=True)
            if tok.numel() == 0:
                continue
            xe = xf[tok]
            h = F.silu(xe @ blk.gate_exps[e].t()) * (xe @ blk.up_exps[e].t())
            out = out.index_add(0, tok, (h @ blk.down_exps[e].t()) * g[tok, slot, None].to(xe.dtype))
        self.loads[L] = torch.bincount(idx.flatten(), minlength=c.n_expert).float()
        self.chosen[L] = idx
        shared = blk.down_shexp(F.silu(blk.gate_shexp(xf)) * blk.up_shexp(xf))
        return (out + shared).reshape(B, Tn, d)


def init_weights(model, std=0.02):
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("exp_probs_b"):
                p.zero_()
                p.requires_grad_(False)
            elif p.dim() >= 2:
                p.normal_(0.0, std)
            else:
                p.fill_(1.0)   # the RMSNorm weights


def update_bias(model):
    """DeepSeek-V3's balancing: each expert's bias up by BIAS_RATE when it
    took fewer than its share of the batch's choices, down when more."""
    with torch.no_grad():
        for L, load in model.loads.items():
            b = model.blocks[L].exp_probs_b
            b += BIAS_RATE * torch.sign(load.mean() - load)


def routing_stats(model, vx, bs=16):
    """Per MoE layer: the share of the validation tokens' choices each expert
    took, and for each expert the pieces it takes most often (count, and the
    share of that piece's occurrences it takes)."""
    model.eval()
    c = model.cfg
    E = c.n_expert
    loads = {L: torch.zeros(E) for L in range(c.n_layer) if not c.dense(L)}
    per_tok = {L: torch.zeros(E, c.vocab) for L in loads}
    tok_count = torch.zeros(c.vocab)
    with torch.no_grad():
        for i in range(0, len(vx), bs):
            x = vx[i:i + bs]
            model(x)
            flat = x.reshape(-1)
            tok_count += torch.bincount(flat, minlength=c.vocab).float()
            for L in loads:
                idx = model.chosen[L]
                loads[L] += torch.bincount(idx.flatten(), minlength=E).float()
                for k in range(c.n_expert_used):
                    per_tok[L].index_put_((idx[:, k], flat), torch.ones(flat.numel()), accumulate=True)
    model.train()
    out = {}
    for L in loads:
        share = (loads[L] / loads[L].sum()).tolist()
        top = []
        for e in range(E):
            counts = per_tok[L][e]
            best = torch.argsort(counts, descending=True)[:8]
            top.append([[int(t), int(counts[t]), round(float(counts[t] / max(tok_count[t], 1)), 3)] for t in best])
        out[L] = dict(share=[round(v, 4) for v in share], top=top)
    return out


def train(model, r, tok, res, ckpt):
    rng = np.random.default_rng(r["seed"])
    tr = T.load_split("train", "spm", tok)
    va = T.load_split("val", "spm", tok)
    vx, vy = T.val_windows(va, tok.bos, r["seq"])
    T.log("train tokens %d, val tokens %d (%d windows)" % (len(tr), len(va), len(vx)))
    opt = T.make_optimizer(model, r)
    t0, best, acc, curve = time.time(), float("inf"), [], []
    budget = r["max_minutes"] * 60
    for step in range(r["steps"]):
        progress = max(step / r["steps"], (time.time() - t0) / budget)
        for g in opt.param_groups:
            g["lr"] = T.lr_at(step, r, progress) * g.get("lr_mult", 1.0)
        x, y = T.text_batch(tr, tok.bos, r["batch"], r["seq"], rng)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            lo = model(x)
        loss = F.cross_entropy(lo.float().reshape(-1, lo.shape[-1]), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        update_bias(model)
        acc.append(loss.item())
        last = step == r["steps"] - 1
        over = time.time() - t0 > budget
        if (step + 1) % r["eval_every"] == 0 or last or over:
            vl = T.evaluate(model, vx, vy)
            loads = {L: [round(float(v), 3) for v in (l / l.sum())] for L, l in model.loads.items()}
            row = dict(step=step + 1, minutes=round((time.time() - t0) / 60, 2),
                       train_loss=round(float(np.mean(acc)), 4), val_loss=round(vl, 4), batch_loads=loads)
            curve.append(row)
            acc = []
            T.log(json.dumps(row))
            if vl < best:
                best = vl
                torch.save({"model": model.state_dict(), "step": step + 1}, ckpt)
        if over:
            T.log("time budget reached at step %d" % (step + 1))
            break
    res["curve"] = curve
    res["train_minutes"] = round((time.time() - t0) / 60, 1)
    res["steps_run"] = step + 1
    res["tokens_seen"] = (step + 1) * r["batch"] * r["seq"]
    res["train_tokens"] = int(len(tr))


def export(model, cfg, tok, res, prefix):
    model.eval()
    va = T.load_split("val", "spm", tok)
    vx, vy = T.val_windows(va, tok.bos, RECIPE["seq"])
    res["params_total"] = sum(p.numel() for n, p in model.named_parameters() if not n.endswith("exp_probs_b"))
    per_expert = 3 * cfg.d_model * cfg.d_expert
    n_moe = sum(1 for L in range(cfg.n_layer) if not cfg.dense(L))
    res["params_active"] = res["params_total"] - n_moe * (cfg.n_expert - cfg.n_expert_used) * per_expert
    res["val_loss_f32"] = round(T.evaluate(model, vx, vy, bf16=False), 4)
    res["routing"] = routing_stats(model, vx)
    res["biases"] = {L: [round(float(v), 4) for v in model.blocks[L].exp_probs_b]
                     for L in range(cfg.n_layer) if not cfg.dense(L)}
    sp = [tok.bos] + tok.encode(T.SAMPLE_PROMPT)
    with torch.no_grad():
        res["sample_greedy"] = tok.decode(T.generate(model, sp, 80, 0, 0, cfg.ctx))
    T.log("val loss (f32) %.4f; greedy: %s" % (res["val_loss_f32"], res["sample_greedy"]))
    # the reference's own forward (every chosen expert gathered) on the trained weights, float64
    ref = R.DeepSeek2(cfg).double()
    ref.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    ids = [tok.bos] + tok.encode(FIXTURE_TEXT)
    with torch.no_grad():
        fast = model.double()(torch.tensor([ids]))[0]
        model.float()
        hooks = {}
        full = ref(torch.tensor([ids]), hooks)[0]
    res["train_forward_vs_reference"] = float((fast - full).abs().max())
    T.log("training forward vs reference.DeepSeek2 (float64): %.2e" % res["train_forward_vs_reference"])
    path = os.path.join(ROOT, "models", prefix + ".gguf") if prefix == NAME else os.path.join(WORK, prefix + ".gguf")
    d = tok.gguf_dict()
    R.export_deepseek2_gguf(ref.float(), cfg, path, prefix, d)
    res["gguf_bytes"] = os.path.getsize(path)
    if prefix == NAME:
        import make_fixtures as MF
        H = {k: v.numpy() for k, v in hooks.items()}   # batch element 0, as make_fixtures.run_hooks
        MF.save_hooks(FIXTURES, NAME, cfg, {"tokens": d["tokens"]}, ids, FIXTURE_TEXT, H, list(H))
        link = os.path.join(FIXTURES, NAME + ".gguf")
        if not os.path.islink(link):
            os.symlink(os.path.join("..", "..", "..", "models", NAME + ".gguf"), link)
    with open(os.path.join(WORK, prefix + ".results.json"), "w") as f:
        json.dump(res, f, indent=1)
    T.log("wrote", path, res["gguf_bytes"], "bytes")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--export-only", action="store_true")
    ap.add_argument("--minutes", type=float, help="override the time budget (trials)")
    ap.add_argument("--tag", default=NAME, help="file prefix in work/ (trials); the shipped model is austen-moe")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(RECIPE["seed"])
    r = dict(RECIPE)
    if a.minutes:
        r["max_minutes"] = a.minutes
    cfg = R.DeepSeek2Config(**CFG)
    tok = T.load_tokenizer("spm")
    model = TrainMoE(cfg)
    init_weights(model)
    ckpt = os.path.join(WORK, a.tag + ".pt")
    res = dict(recipe=r, config=CFG, bias_rate=BIAS_RATE, threads=a.threads)
    if not a.export_only:
        train(model, r, tok, res, ckpt)
    else:
        prev = os.path.join(WORK, a.tag + ".results.json")
        if os.path.exists(prev):
            res = json.load(open(prev))
    model.load_state_dict(torch.load(ckpt)["model"])
    export(model, cfg, tok, res, a.tag)


if __name__ == "__main__":
    main()
