"""grad and saliency against PyTorch autograd (float64) on the reference
model with the fixture's weights (models/recipes/make_fixtures.py builds
it, seeded, as its --check does): for tiny-gpt2 and tiny-llama, every hook
point's d metric / d hook written by `grad HOOK FILE.npy`, for each metric
kind (a logit difference, logprob, prob at an earlier position, logit),
within 1e-4 of the largest |gradient| of that hook (attnscope's forward and
backward are float32); `saliency` (gradient x input on hook_embed) within
the same tolerance; `saliency ig=STEPS` against the same Riemann sum
(midpoint rule) in torch, and IG's completeness (the sum over tokens
equals metric(input) - metric(zero baseline)) within 2% at 64 steps.
Plus a central finite difference on a few coordinates of the torch model,
so that a transpose that torch and attnscope share would still be caught,
and `ablate 0.1 zero` on gpt2 and llama against torch with that head cut
(the gradient stops where an intervention sets values); BERT (a sentence
pair's token types, bidirectional, Post-LN, the masked-LM head) for every
metric kind. The bundled models (models/*.gguf) the same way, each read
back into its reference class by models/recipes/gguf_import.py, after
the loaded model's logits are checked against attnscope's dump
(check_bundled_ref), and against finite differences of attnscope's own
steered forward (check_bundled).
GRAD_REF_ONLY="tiny-gpt2 austen-moe bundled-ref bundled" runs only those.

usage: grad_ref.py ATTNSCOPE_BINARY WORKDIR"""
import json
import os
import subprocess
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "models", "recipes"))
import make_fixtures as MF  # noqa: E402
import reference as R  # noqa: E402

BIN, WORK = sys.argv[1], sys.argv[2]
FIX = os.path.join(ROOT, "tests", "fixtures")
TOL = 1e-4
fails = []


def bad(msg):
    fails.append(msg)
    print("FAIL: " + msg)


_orig_rec = R._rec


def _rec_grad(hooks, name, t):
    if hooks is not None:
        if t.requires_grad:
            t.retain_grad()
        hooks[name] = t


def torch_grads(model, ids, metric, types=None):
    """metric(logits [T,V]) -> scalar; returns (value, {hook: grad [..]})."""
    R._rec = _rec_grad
    try:
        hooks = {}
        if types is None:
            logits = model(torch.tensor([ids], dtype=torch.long), hooks)[0]
        else:
            logits = model(torch.tensor([ids], dtype=torch.long), torch.tensor([types], dtype=torch.long), hooks)[0][0]
        m = metric(logits)
        m.backward()
    finally:
        R._rec = _orig_rec
    out = {}
    for k, t in hooks.items():
        out[k] = None if t.grad is None else t.grad[0].numpy()
    return m.item(), out, {k: t[0].detach().numpy() for k, t in hooks.items()}


def run(model_path, lines):
    script = os.path.join(WORK, "grad.cmds")
    with open(script, "w") as f:
        f.write("\n".join(lines) + "\n")
    p = subprocess.run([BIN, "--no-tui", "-x", script, model_path], capture_output=True, text=True)
    if p.returncode != 0:
        bad("%s: attnscope failed: %s %s" % (model_path, p.stdout[-2000:], p.stderr[-2000:]))
    return p.stdout


def metrics(ids, V):
    a, b = 5 % V, 7 % V
    T = len(ids)
    return [
        ("diff", "metric %d %d" % (a, b), lambda l: l[T - 1, a] - l[T - 1, b]),
        ("logprob", "metric logprob %d" % a, lambda l: torch.log_softmax(l[T - 1], -1)[a]),
        ("prob", "metric prob %d 3" % b, lambda l: torch.softmax(l[3], -1)[b]),
        ("logit", "metric logit %d" % a, lambda l: l[T - 1, a]),
    ]


def _attn_absorbed_as_attnscope(self, blk, q, latent, k_r, L, hooks):
    """reference.DeepSeek2._attn_absorbed with attnscope's dataflow (the same
    values): q_absorbed reads rot_q's unrotated columns (the reference reads
    q's, equal to them) and q_mqa reads hook_rot_q_pe itself (the reference
    records a slice and concatenates another). The gradient at a hook is a
    fact of the graph downstream of it: these two hooks' gradients differ
    between the two graphs though every value is the same."""
    F_ = R.torch
    c = self.cfg
    B, T = q.shape[:2]
    H, dn, dr, dv, kl = c.n_head, c.d_nope, c.d_rope, c.d_v, c.kv_lora
    p = "blocks.%d.attn." % L
    kvb = blk.kv_b.weight.view(H, dn + dv, kl)
    w_uk, w_uv = kvb[:, :dn, :], kvb[:, dn:, :]
    q_rot = F_.cat((q[..., :dn], self._rope(q[..., dn:])), dim=-1)
    R._rec(hooks, p + "hook_rot_q", q_rot)
    q_abs = F_.einsum("bthj,hjc->bthc", q_rot[..., :dn], w_uk)
    R._rec(hooks, p + "hook_q_absorbed", q_abs)
    q_pe = q_rot[..., dn:]
    R._rec(hooks, p + "hook_rot_q_pe", q_pe)
    q_mqa = F_.cat((q_abs, q_pe), dim=-1)
    R._rec(hooks, p + "hook_q_mqa", q_mqa)
    k = F_.cat((latent, k_r.reshape(B, T, dr)), dim=-1).view(B, T, 1, kl + dr)
    R._rec(hooks, p + "hook_k", k)
    k = F_.cat((k[..., :kl], self._rope(k[..., kl:])), dim=-1)
    R._rec(hooks, p + "hook_rot_k", k)
    v = latent.view(B, T, 1, kl)
    R._rec(hooks, p + "hook_v", v)
    scores = (q_mqa.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)) * self._scale()
    hidden = F_.arange(T)[None, :] > F_.arange(T)[:, None]
    scores = scores.masked_fill(hidden, float("-inf"))
    R._rec(hooks, p + "hook_attn_scores", scores)
    pattern = F_.softmax(scores, dim=-1)
    R._rec(hooks, p + "hook_pattern", pattern)
    z_lat = (pattern @ v.transpose(1, 2)).transpose(1, 2)
    R._rec(hooks, p + "hook_z_latent", z_lat)
    z = F_.einsum("bthc,hvc->bthv", z_lat, w_uv)
    R._rec(hooks, p + "hook_z", z)
    out = blk.o(z.reshape(B, T, H * dv))
    R._rec(hooks, "blocks.%d.hook_attn_out" % L, out)
    return out


def fd_embed(name, call, emb, hook_val, grad, fn, src=None, n=3, seed=11):
    """Central finite differences (float64, h = 1e-5) of the metric on the
    torch model at n coordinates of the embedding module emb's output (the
    source's only, when src is the source ids tensor: across cross-attention),
    against attnscope's gradient at the hook holding that output times a
    constant (Gemma's and the Transformer's sqrt(d): found from the values).
    Catches a VJP off by a transpose that torch and attnscope would share."""
    real = emb.forward
    with torch.no_grad():
        base = None

        def grab(idx):
            nonlocal base
            out = real(idx)
            if src is None or idx is src:
                base = out[0].clone()
            return out
        emb.forward = grab
        try:
            call()
        finally:
            emb.forward = real
    hv = np.asarray(hook_val, dtype=np.float64).reshape(base.shape)
    b = base.numpy()
    c = float((hv * b).sum() / (b * b).sum())
    if not np.abs(hv - c * b).max() <= 1e-6 * max(np.abs(hv).max(), 1.0):
        bad("%s finite differences: the hook is not a multiple of the embedding's output" % name)
        return
    g = np.asarray(grad, dtype=np.float64).reshape(b.shape) * c
    rng = np.random.default_rng(seed)
    worst = 0.0
    for k in range(n):  # the largest |gradient|, then random coordinates
        i, j = np.unravel_index(np.abs(g).argmax(), g.shape) if k == 0 else \
            (int(rng.integers(b.shape[0])), int(rng.integers(b.shape[1])))
        vals = []
        for h in (1e-5, -1e-5):
            def bump(idx, h=h):
                out = real(idx)
                if src is None or idx is src:
                    out = out.clone()
                    out[0, i, j] += h
                return out
            emb.forward = bump
            try:
                with torch.no_grad():
                    vals.append(fn(call()).item())
            finally:
                emb.forward = real
        num = (vals[0] - vals[1]) / 2e-5
        err = abs(num - g[i, j]) / max(np.abs(g).max(), 1e-12)
        worst = max(worst, err)
        if not err <= 1e-4:
            bad("%s finite difference at [%d, %d]: %.6g, attnscope's gradient %.6g" % (name, i, j, num, g[i, j]))
    print("ok %s: central finite differences agree at %d coordinates (worst %.1e of the largest |grad|)"
          % (name, n, worst))


def encdec_forward(model, src, tgt, hooks):
    """reference.EncDec's forward written out over nn.Transformer's own
    modules (Post-LN blocks, its in_proj split into q, k, v), every hook on
    the autograd path (the reference records the in-layer ones by a second
    computation beside the modules', off the path): logits [B,T,V]."""
    c = model.c
    d, H = c.d_model, c.n_head
    dh = d // H

    def rec(name, t):
        if t.requires_grad:
            t.retain_grad()
        hooks[name] = t
        return t

    def ln(mod, x, prefix):
        xc = x - x.mean(-1, keepdim=True)
        sc = rec(prefix + ".hook_scale", torch.sqrt((xc * xc).mean(-1, keepdim=True) + mod.eps))
        return rec(prefix + ".hook_normalized", xc / sc * mod.weight + mod.bias)

    def mha(mod, xq, xkv, causal, prefix):
        W, b = mod.in_proj_weight, mod.in_proj_bias
        q = rec(prefix + "hook_q", (xq @ W[:d].t() + b[:d]).view(xq.shape[0], -1, H, dh))
        k = rec(prefix + "hook_k", (xkv @ W[d:2 * d].t() + b[d:2 * d]).view(xkv.shape[0], -1, H, dh))
        v = rec(prefix + "hook_v", (xkv @ W[2 * d:].t() + b[2 * d:]).view(xkv.shape[0], -1, H, dh))
        scores = (q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)) / dh ** 0.5
        if causal:
            T = scores.shape[-1]
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        rec(prefix + "hook_attn_scores", scores)
        pattern = rec(prefix + "hook_pattern", torch.softmax(scores, dim=-1))
        z = rec(prefix + "hook_z", (pattern @ v.transpose(1, 2)).transpose(1, 2))
        return z.reshape(z.shape[0], z.shape[1], d) @ mod.out_proj.weight.t() + mod.out_proj.bias

    def mlp(layer, x, p):
        pre = rec(p + "mlp.hook_pre", layer.linear1(x))
        post = rec(p + "mlp.hook_post", torch.relu(pre))
        return rec(p + "hook_mlp_out", layer.linear2(post))
    x = model.embed(src, model.src_embd, "encoder", hooks)
    y = model.embed(tgt, model.target_embedding(), "decoder", hooks)
    for L, layer in enumerate(model.tf.encoder.layers):
        p = "encoder.%d." % L
        rec(p + "hook_resid_pre", x)
        mid = rec(p + "hook_resid_mid", x + rec(p + "hook_attn_out", mha(layer.self_attn, x, x, False, p + "attn.")))
        n1 = ln(layer.norm1, mid, p + "ln1")
        x = ln(layer.norm2, rec(p + "hook_resid_post", n1 + mlp(layer, n1, p)), p + "ln2")
    mem = ln(model.tf.encoder.norm, x, "encoder_final_ln")
    for L, layer in enumerate(model.tf.decoder.layers):
        p = "decoder.%d." % L
        rec(p + "hook_resid_pre", y)
        mid = rec(p + "hook_resid_mid", y + rec(p + "hook_attn_out", mha(layer.self_attn, y, y, True, p + "attn.")))
        n1 = ln(layer.norm1, mid, p + "ln1")
        cross = rec(p + "hook_cross_attn_out", mha(layer.multihead_attn, n1, mem, False, p + "cross_attn."))
        n2 = ln(layer.norm2, rec(p + "hook_resid_mid_cross", n1 + cross), p + "ln2")
        y = ln(layer.norm3, rec(p + "hook_resid_post", n2 + mlp(layer, n2, p)), p + "ln3")
    h = ln(model.tf.decoder.norm, y, "decoder_final_ln")
    W = model.target_embedding().weight if model.out is None else model.out.weight
    logits = h @ W.t()
    if model.out_b is not None:
        logits = logits + model.out_b
    return rec("unembed.hook_out", logits)


def check_model(which, decoder=False, encoder=False, encdec=False, builder=None):
    types = None
    if encdec:  # two streams: the encoder's source and the decoder's target, cross-attention between them
        cfg, seed = MF.ENCDECS[which] if which in MF.ENCDECS else MF.T5S[which]
        maker = MF.make_encdec if which in MF.ENCDECS else MF.make_t5
        tok, src, tgt, text = MF.encdec_input()
        cfg = type(cfg)(**{**cfg.__dict__, "vocab": len(tok["tokens"])})
        name, model = which, maker(cfg, seed).double()
        gguf = os.path.join(FIX, name + ".gguf")
        with torch.no_grad():
            hk = {}
            model(torch.tensor([src]), torch.tensor([tgt]), hk)
        names = [h for h in hk if not np.issubdtype(hk[h].numpy().dtype, np.integer)]
        skipped = set()
        for kind, cmd, fn in metrics(tgt, cfg.vocab):
            lines = ["source-ids " + " ".join(map(str, src)), "prompt-ids " + " ".join(map(str, tgt)), "finish", cmd]
            for h in names:
                lines.append("grad %s %s" % (h, os.path.join(WORK, "%s.%s.%s.npy" % (name, kind, h))))
            run(gguf, lines)
            R._rec = _rec_grad
            try:
                hooks = {}
                if which in MF.ENCDECS:  # nn.Transformer's in-layer hooks on the autograd path
                    logits = encdec_forward(model, torch.tensor([src]), torch.tensor([tgt]), hooks)[0]
                    with torch.no_grad():
                        ref = model(torch.tensor([src]), torch.tensor([tgt]))[0]
                    if not (logits - ref).abs().max().item() <= 1e-10:
                        bad("%s: the written-out forward's logits differ from reference.EncDec's" % name)
                else:
                    logits = model(torch.tensor([src]), torch.tensor([tgt]), hooks)[0]
                fn(logits).backward()
            finally:
                R._rec = _orig_rec
            worst = 0.0
            for h in names:
                path = os.path.join(WORK, "%s.%s.%s.npy" % (name, kind, h))
                if not os.path.exists(path):
                    bad("%s %s: no %s written" % (name, kind, h))
                    continue
                a = np.load(path).astype(np.float64)
                t = hooks[h].grad
                if t is None:
                    # constants in the reference (sinusoidal positions, T5's position bias);
                    # nn.Transformer's in-layer hooks are on the path in encdec_forward
                    skipped.add(h)
                    continue
                t = t[0].numpy()
                if a.size != t.size:
                    bad("%s %s %s: shape %s, torch %s" % (name, kind, h, a.shape, t.shape))
                    continue
                a = a.reshape(t.shape)
                if h.endswith("hook_attn_scores"):
                    t = np.where(np.isfinite(hooks[h][0].detach().numpy()), t, 0.0)
                scale = np.abs(t).max()
                err = np.abs(a - t).max() / scale if scale > 0 else np.abs(a).max()
                worst = max(worst, err)
                if not err <= TOL:
                    bad("%s %s d/d %s: max error %.3g relative to the largest |grad| %.3g" % (name, kind, h, err, scale))
            print("ok %s %s: %d hooks of encoder and decoder with a torch gradient (%d without: not compared), "
                  "worst relative error %.2e" % (name, kind, len(names) - len(skipped), len(skipped), worst))
        # the encoder's embedding, whose gradient comes through cross-attention only
        kind, cmd, fn = metrics(tgt, cfg.vocab)[1]
        st, tt = torch.tensor([src]), torch.tensor([tgt])
        fd_embed(name + " (the source's embedding)", lambda: model(st, tt)[0],
                 model.src_embd if hasattr(model, "src_embd") else model.embd,
                 hk["encoder.hook_embed"].numpy(),
                 np.load(os.path.join(WORK, "%s.%s.encoder.hook_embed.npy" % (name, kind))), fn, src=st)
        return
    if encoder:  # a sentence pair: token types 0 then 1, bidirectional, Post-LN, the masked-LM head
        cfg, seed = MF.ENCODERS[which]
        name, model = which, MF.make_encoder(cfg, seed)
        prompt = 'prompt "the cat sat on the mat" "the dog ate the fishes"'
        if MF.encoder_input(which)[0] is None:  # no tokenizer: ids, all of type 0
            prompt = "prompt-ids " + " ".join(str(i) for i in MF.encoder_input(which)[1])
    else:
        name, cfg, model, tok, ids, text = (builder or (MF.build_decoder if decoder else MF.build))(which)
        meta = json.load(open(os.path.join(FIX, name, "meta.json")))
        prompt = "prompt %s" % json.dumps(meta["text"], ensure_ascii=False)
    model = model.double()
    gguf = os.path.join(FIX, name + ".gguf")
    # the ids attnscope's `prompt` gives the text (its tokenizer's, no BOS on gpt2)
    out = run(gguf, [prompt, "tokens"])
    ids = [int(l.split("\t")[1]) for l in out.splitlines() if l.count("\t") >= 3]
    if len(ids) < 4:
        bad("%s: no token ids from `tokens`" % name)
        return
    if encoder:
        import re
        m = re.search(r"a pair: (\d+) of type 0, (\d+) of type 1", out)
        types = [0] * int(m.group(1)) + [1] * int(m.group(2)) if m else [0] * len(ids)
    if decoder or encoder:
        with torch.no_grad():
            hk = {}
            if encoder:
                model(torch.tensor([ids], dtype=torch.long), torch.tensor([types]), hk)
            else:
                model(torch.tensor([ids], dtype=torch.long), hk)
        names = [h for h in hk if not np.issubdtype(hk[h].numpy().dtype, np.integer)]
    else:
        names = R.hook_names(cfg)
    for kind, cmd, fn in metrics(ids, cfg.vocab):
        lines = [prompt, "finish", cmd]
        for h in names:
            lines.append("grad %s %s" % (h, os.path.join(WORK, "%s.%s.%s.npy" % (name, kind, h))))
        lines.append("saliency " + os.path.join(WORK, "%s.%s.sal.npy" % (name, kind)))
        run(gguf, lines)
        value, grads, vals = torch_grads(model, ids, fn, types)
        worst = 0.0
        for h in names:
            path = os.path.join(WORK, "%s.%s.%s.npy" % (name, kind, h))
            if not os.path.exists(path):
                bad("%s %s: no %s written" % (name, kind, h))
                continue
            a = np.load(path).astype(np.float64)
            t = grads.get(h)
            if t is None:
                t = np.zeros_like(a)
            if a.size != t.size:
                bad("%s %s %s: shape %s, torch %s" % (name, kind, h, a.shape, t.shape))
                continue
            a = a.reshape(t.shape)
            if h.endswith("hook_attn_scores"):
                t = np.where(np.isfinite(vals[h]), t, 0.0)
            scale = np.abs(t).max()
            err = np.abs(a - t).max() / scale if scale > 0 else np.abs(a).max()
            worst = max(worst, err)
            if not err <= TOL:
                bad("%s %s d/d %s: max error %.3g relative to the largest |grad| %.3g" % (name, kind, h, err, scale))
        # saliency: gradient x input on hook_embed
        sal = np.load(os.path.join(WORK, "%s.%s.sal.npy" % (name, kind)))
        he = "embed.hook_embed" if encoder else "hook_embed"
        want = (grads[he] * vals[he]).sum(-1)
        e = np.abs(sal - want).max() / max(np.abs(want).max(), 1e-30)
        if not e <= TOL:
            bad("%s %s saliency: max error %.3g relative" % (name, kind, e))
        print("ok %s %s: %d hooks, worst relative error %.2e; saliency %.2e" % (name, kind, len(names), worst, e))
    if decoder or encoder:
        kind, cmd, fn = metrics(ids, cfg.vocab)[1]
        it = torch.tensor([ids], dtype=torch.long)
        if encoder:
            tt = torch.tensor([types], dtype=torch.long)
            call = lambda: model(it, tt)[0][0]  # noqa: E731
        else:
            call = lambda: model(it)[0]  # noqa: E731
        fd_embed(name, call, model.tok_embd, hk[he].numpy(),
                 np.load(os.path.join(WORK, "%s.%s.%s.npy" % (name, kind, he))), fn)
        return
    # integrated gradients with the logprob metric
    steps = 64
    fn = metrics(ids, cfg.vocab)[1][2]
    out = run(gguf, [prompt, "finish", metrics(ids, cfg.vocab)[1][1],
                     "saliency ig=%d %s" % (steps, os.path.join(WORK, name + ".ig.npy")),
                     "saliency ig=%d" % steps])
    ig = np.load(os.path.join(WORK, name + ".ig.npy")).astype(np.float64)
    emb = model.tok_embd.weight.detach()[torch.tensor(ids)]
    acc = torch.zeros_like(emb)
    for k in range(steps):
        alpha = (k + 0.5) / steps
        x = (alpha * emb).clone().requires_grad_(True)
        l = forward_from_embed(model, cfg, ids, x)
        fn(l).backward()
        acc += x.grad / steps
    want = (acc * emb).sum(-1).numpy()
    with torch.no_grad():
        f1 = fn(forward_from_embed(model, cfg, ids, emb)).item()
        f0 = fn(forward_from_embed(model, cfg, ids, torch.zeros_like(emb))).item()
    e = np.abs(ig - want).max() / np.abs(want).max()
    if not e <= TOL:
        bad("%s IG: max error %.3g relative to torch's Riemann sum" % (name, e))
    comp = abs(ig.sum() - (f1 - f0)) / abs(f1 - f0)
    # Completeness is asserted on gpt2 only: on llama the zero baseline puts
    # the residual stream at 0, where RMSNorm(alpha x) jumps within alpha ~
    # sqrt(eps) / rms(x) ~ 0.003, a spike no Riemann sum of 64 (or 2048)
    # steps resolves (torch's own sums: -2.16 at 64 steps, -0.22 at 256,
    # -1.24 at 2048, against -1.99); there attnscope equals torch's sum above.
    if cfg.arch == "gpt2" and not comp <= 0.02:
        bad("%s IG completeness: sum %.5f vs metric difference %.5f" % (name, ig.sum(), f1 - f0))
    if "difference %+.6f" % (f1 - f0) not in out and "difference %+.6f" % (f1 - f0 + 1e-6) not in out:
        # the table states metric - metric(baseline); float32 vs float64: compare loosely
        line = [x for x in out.splitlines() if "baseline" in x]
        got = float(line[-1].split("difference")[1]) if line else float("nan")
        if not abs(got - (f1 - f0)) <= 1e-4 * max(1.0, abs(f1 - f0)):
            bad("%s IG: attnscope's metric difference %.6f, torch %.6f" % (name, got, f1 - f0))
    print("ok %s IG (%d steps): %.2e relative to torch; completeness %.2e (sum %.5f, difference %.5f)"
          % (name, steps, e, comp, ig.sum(), f1 - f0))
    # finite differences (torch, float64) on the attnscope gradient at blocks.0.hook_resid_pre
    g = np.load(os.path.join(WORK, "%s.logprob.blocks.0.hook_resid_pre.npy" % name)).astype(np.float64)
    rng = np.random.default_rng(7)
    for _ in range(4):
        i, j = int(rng.integers(len(ids))), int(rng.integers(cfg.d_model))
        h = 1e-5
        fd = []
        for sgn in (1, -1):
            fd.append(fn(forward_with_resid0(model, cfg, ids, i, j, sgn * h)).item())
        num = (fd[0] - fd[1]) / (2 * h)
        if not abs(num - g[i, j]) <= 1e-4 * max(np.abs(g).max(), 1e-12):
            bad("%s finite difference at resid_pre[0][%d, %d]: %.6g, grad %.6g" % (name, i, j, num, g[i, j]))
    print("ok %s: central finite differences agree at 4 coordinates" % name)
    # an intervention stops the gradient where it sets values: `ablate 0.1
    # zero` (head 1 of blocks.0.attn.hook_z) against torch with the head
    # zeroed in the graph; the gradient at hook_z itself is still its output's
    kind, cmd, fn = metrics(ids, cfg.vocab)[1]
    lines = [prompt, "ablate 0.1 zero", "finish", cmd]
    for h in names:
        lines.append("grad %s %s" % (h, os.path.join(WORK, "%s.abl.%s.npy" % (name, h))))
    run(gguf, lines)
    # torch: head 1's columns of W_O's input zeroed (z itself stays in the
    # graph, so torch's gradient at hook_z is zero at head 1 where
    # attnscope's is z's output gradient: that head is left out below)
    blk = model.blocks[0]
    orig = blk.o.forward
    mask = torch.ones(cfg.n_head, cfg.d_model // cfg.n_head, dtype=torch.float64)
    mask[1] = 0
    blk.o.forward = lambda x: orig(x * mask.reshape(-1))
    try:
        value, grads, vals = torch_grads(model, ids, fn)
    finally:
        blk.o.forward = orig
    worst = 0.0
    for h in names:
        a = np.load(os.path.join(WORK, "%s.abl.%s.npy" % (name, h))).astype(np.float64)
        t = grads.get(h)
        t = np.zeros_like(a) if t is None else t
        a = a.reshape(t.shape)
        if h.endswith("hook_attn_scores"):
            t = np.where(np.isfinite(vals[h]), t, 0.0)
        if h == "blocks.0.attn.hook_z":
            a, t = a.copy(), t.copy()
            a[:, 1, :] = t[:, 1, :] = 0
        scale = np.abs(t).max()
        err = np.abs(a - t).max() / scale if scale > 0 else np.abs(a).max()
        worst = max(worst, err)
        if not err <= TOL:
            bad("%s with head 0.1 ablated, d/d %s: max error %.3g relative" % (name, h, err))
    # and the ablation did something: head 1's q, k, v get no gradient in layer 0
    q = np.load(os.path.join(WORK, "%s.abl.blocks.0.attn.hook_q.npy" % name))
    if not (np.abs(q[:, 1, :]).max() == 0 and np.abs(q).max() > 0):
        bad("%s with head 0.1 ablated: hook_q's gradient is not zero at head 1 alone" % name)
    print("ok %s with head 0.1 ablated: %d hooks, worst relative error %.2e" % (name, len(names), worst))


def vit_forward(m, pixels, hooks, bump=None):
    """vit_fixtures.run_vit_hooks's computation (torchvision's modules,
    TransformerLens's hook names) with autograd on: logits [17, classes];
    bump (i, j, h) adds h to embed.hook_patch_embed[i, j]."""
    d, nh = m.hidden_dim, m.encoder.layers[0].self_attention.num_heads
    dh = d // nh
    x = torch.tensor(pixels, dtype=torch.float64)[None]

    def rec(name, t):
        if t.requires_grad:
            t.retain_grad()
        hooks[name] = t
        return t
    pe = torch.cat([m.class_token[0], m._process_input(x)[0]], 0)
    if bump is not None:
        pe = pe.clone()
        pe[bump[0], bump[1]] += bump[2]
    rec("embed.hook_patch_embed", pe)
    pos = rec("hook_pos_embed", m.encoder.pos_embedding[0] * 1.0)
    resid = pe + pos
    for L, blk in enumerate(m.encoder.layers):
        b = "blocks.%d." % L
        rec(b + "hook_resid_pre", resid)
        mu = resid.mean(-1, keepdim=True)
        sc = rec(b + "ln1.hook_scale", torch.sqrt(((resid - mu) ** 2).mean(-1, keepdim=True) + blk.ln_1.eps))
        n1 = rec(b + "ln1.hook_normalized", (resid - mu) / sc * blk.ln_1.weight + blk.ln_1.bias)
        at = blk.self_attention
        W, B = at.in_proj_weight, at.in_proj_bias
        q = rec(b + "attn.hook_q", (n1 @ W[:d].T + B[:d]).reshape(-1, nh, dh))
        k = rec(b + "attn.hook_k", (n1 @ W[d:2 * d].T + B[d:2 * d]).reshape(-1, nh, dh))
        v = rec(b + "attn.hook_v", (n1 @ W[2 * d:].T + B[2 * d:]).reshape(-1, nh, dh))
        scores = rec(b + "attn.hook_attn_scores", torch.einsum("qhd,khd->hqk", q, k) / dh ** 0.5)
        pat = rec(b + "attn.hook_pattern", scores.softmax(-1))
        z = rec(b + "attn.hook_z", torch.einsum("hqk,khd->qhd", pat, v))
        mid = rec(b + "hook_resid_mid", resid + rec(b + "hook_attn_out", at.out_proj(z.reshape(-1, d))))
        mu = mid.mean(-1, keepdim=True)
        sc = rec(b + "ln2.hook_scale", torch.sqrt(((mid - mu) ** 2).mean(-1, keepdim=True) + blk.ln_2.eps))
        n2 = rec(b + "ln2.hook_normalized", (mid - mu) / sc * blk.ln_2.weight + blk.ln_2.bias)
        pre = rec(b + "mlp.hook_pre", blk.mlp[0](n2))
        post = rec(b + "mlp.hook_post", blk.mlp[1](pre))
        resid = rec(b + "hook_resid_post", mid + rec(b + "hook_mlp_out", blk.mlp[3](post)))
    mu = resid.mean(-1, keepdim=True)
    sc = rec("ln_final.hook_scale", torch.sqrt(((resid - mu) ** 2).mean(-1, keepdim=True) + m.encoder.ln.eps))
    fin = rec("ln_final.hook_normalized", (resid - mu) / sc * m.encoder.ln.weight + m.encoder.ln.bias)
    return rec("head.hook_out", m.heads(fin))


def check_vit():
    """tiny-vit (torchvision's VisionTransformer): the class metrics at [CLS]
    (position 0, where a classifier's classes are read), every hook against
    autograd, and finite differences at the patch embeddings."""
    import vit_fixtures as VF
    m = VF.make_vit(torch.float64)
    name = "tiny-vit"
    gguf = os.path.join(FIX, name + ".gguf")
    pixels = np.load(os.path.join(FIX, name, "pixels.npy")).astype(np.float64)
    with torch.no_grad():
        logits0 = m(torch.tensor(pixels)[None])[0]
    hk = {}
    full = vit_forward(m, pixels, hk)
    if not (full[0] - logits0).abs().max().item() <= 1e-12:
        bad("tiny-vit: the hooked forward's logits differ from torchvision's")
    names = list(hk)
    kinds = [("diff", "metric 3 5", lambda l: l[0, 3] - l[0, 5]),
             ("logprob", "metric logprob 3", lambda l: torch.log_softmax(l[0], -1)[3]),
             ("prob", "metric prob 5", lambda l: torch.softmax(l[0], -1)[5]),
             ("logit", "metric logit 3", lambda l: l[0, 3])]
    for kind, cmd, fn in kinds:
        lines = ["image " + os.path.join(FIX, name, "image.png"), "finish", cmd]
        for h in names:
            lines.append("grad %s %s" % (h, os.path.join(WORK, "%s.%s.%s.npy" % (name, kind, h))))
        run(gguf, lines)
        hooks = {}
        fn(vit_forward(m, pixels, hooks)).backward()
        worst = 0.0
        for h in names:
            path = os.path.join(WORK, "%s.%s.%s.npy" % (name, kind, h))
            if not os.path.exists(path):
                bad("%s %s: no %s written" % (name, kind, h))
                continue
            a = np.load(path).astype(np.float64)
            t = hooks[h].grad.numpy()
            if a.size != t.size:
                bad("%s %s %s: shape %s, torch %s" % (name, kind, h, a.shape, t.shape))
                continue
            a = a.reshape(t.shape)
            scale = np.abs(t).max()
            err = np.abs(a - t).max() / scale if scale > 0 else np.abs(a).max()
            worst = max(worst, err)
            if not err <= TOL:
                bad("%s %s d/d %s: max error %.3g relative to the largest |grad| %.3g" % (name, kind, h, err, scale))
        print("ok %s %s (at [CLS]): %d hooks, worst relative error %.2e" % (name, kind, len(names), worst))
    fn = kinds[1][2]
    g = np.load(os.path.join(WORK, "%s.logprob.embed.hook_patch_embed.npy" % name)).astype(np.float64)
    rng = np.random.default_rng(5)
    worst = 0.0
    for k in range(3):
        i, j = np.unravel_index(np.abs(g).argmax(), g.shape) if k == 0 else \
            (int(rng.integers(g.shape[0])), int(rng.integers(g.shape[1])))
        with torch.no_grad():
            f = [fn(vit_forward(m, pixels, {}, (i, j, h))).item() for h in (1e-5, -1e-5)]
        num = (f[0] - f[1]) / 2e-5
        err = abs(num - g[i, j]) / np.abs(g).max()
        worst = max(worst, err)
        if not err <= 1e-4:
            bad("%s finite difference at patch_embed[%d, %d]: %.6g, grad %.6g" % (name, i, j, num, g[i, j]))
    print("ok %s: central finite differences agree at 3 coordinates (worst %.1e of the largest |grad|)" % (name, worst))


def check_bundled_ref():
    """The bundled models against PyTorch autograd: each GGUF read back into
    its reference class in float64 (models/recipes/gguf_import.py, the
    exporters' inverse, the configuration from the file's metadata). First
    the loader is proved: the reference's logits equal attnscope's `dump
    unembed.hook_out` within 1e-4 of the largest |logit|. Then every hook's
    `grad` for the four metric kinds within 1e-4 of the largest |gradient|
    of that hook, as for the fixtures. A model not loaded is a failure
    named with its reason, never a silent skip. Short prompts (5-10
    tokens; vit-fashion one 28 x 28 image, its pixels prepared here)."""
    import gguf_import as GI
    M = os.path.join(ROOT, "models")
    cases = [("austen-gpt2", ['prompt "It is a truth universally acknowledged"']),
             ("austen-llama", ['prompt "It is a truth universally acknowledged"']),
             ("induction", ['prompt "abcdeabcd"']),
             ("austen-moe", ['prompt "It is a truth universally acknowledged"']),
             ("austen-bert", ['prompt "she was very happy" "he said nothing"']),
             ("de-en", ['source "Das Haus ist klein."', 'prompt "The house is"']),
             ("vit-fashion", ["image " + os.path.join(ROOT, "assets", "fashion", "ankle-boot.png")])]
    sel = [m for m in ONLY if m in dict(cases)]  # GRAD_REF_ONLY="austen-moe": that one alone
    for name, inp in cases:
        if sel and name not in sel:
            continue
        path = os.path.join(M, name + ".gguf")
        try:
            model, cfg, kv = GI.load(path)
        except GI.Unsupported as e:
            bad("%s: not loaded into the reference, so not checked against autograd: %s" % (name, e))
            continue
        arch = kv["general.architecture"]
        V = cfg.vocab
        if arch == "vit":
            # the image prepared independently of attnscope (PIL, /255, (x - mean) / std, the file's):
            # the logits check below proves it as it proves the loader
            from PIL import Image
            img = np.asarray(Image.open(inp[0].split(" ", 1)[1]).convert("L"), dtype=np.float64)
            if img.shape != (cfg.image_size, cfg.image_size):
                bad("%s: the test image is %s, not the model's %d x %d" % (name, img.shape, cfg.image_size,
                                                                         cfg.image_size))
                continue
            pixels = ((img / 255.0 - cfg.mean[0]) / cfg.std[0])[None]
            ids, lines = [0], inp + ["finish"]
        else:
            out = run(path, inp + ["tokens"])
            rows = [l.split("\t") for l in out.splitlines() if l.count("\t") >= 3]
            if arch == "transformer":
                # `tokens` lists the source's then the target's, each numbered from 0
                starts = [k for k, r in enumerate(rows) if r[0].strip() == "0"]
                if len(starts) != 2:
                    bad("%s: `tokens` does not list source and target" % name)
                    continue
                src = [int(r[1]) for r in rows[:starts[1]]]
                ids = [int(r[1]) for r in rows[starts[1]:]]
                lines = ["source-ids " + " ".join(map(str, src)), "prompt-ids " + " ".join(map(str, ids)), "finish"]
            else:
                ids = [int(r[1]) for r in rows]
                lines = ["prompt-ids " + " ".join(map(str, ids)), "finish"]
            types = None
            if arch == "bert":
                import re
                m = re.search(r"a pair: (\d+) of type 0, (\d+) of type 1", out)
                if not m:
                    bad("%s: `tokens` does not say the pair's types" % name)
                    continue
                types = [0] * int(m.group(1)) + [1] * int(m.group(2))
                lines = inp + ["finish"]
            if len(ids) < 4:
                bad("%s: no token ids from `tokens`" % name)
                continue

        def forward(hooks):
            if arch == "vit":
                return vit_forward(model, pixels, hooks)
            it = torch.tensor([ids], dtype=torch.long)
            if arch == "transformer":
                return encdec_forward(model, torch.tensor([src]), it, hooks)[0]
            if arch == "bert":
                return model(it, torch.tensor([types], dtype=torch.long), hooks)[0][0]
            return model(it, hooks)[0]
        # the loader's proof: the logits
        lf = os.path.join(WORK, name + ".ref.logits.npy")
        run(path, lines + ["dump %s %s" % ("head.hook_out" if arch == "vit" else "unembed.hook_out", lf)])
        with torch.no_grad():
            want_l = forward({}).numpy()
            if arch == "transformer":
                direct = model(torch.tensor([src]), torch.tensor([ids]))[0].numpy()
                if not np.abs(direct - want_l).max() <= 1e-10:
                    bad("%s: the written-out forward's logits differ from reference.EncDec's" % name)
        if not os.path.exists(lf):
            bad("%s: no logits dumped" % name)
            continue
        got = np.load(lf).astype(np.float64).reshape(want_l.shape)
        le = np.abs(got - want_l).max() / np.abs(want_l).max()
        if not le <= TOL:
            bad("%s: the loaded reference's logits differ from attnscope's by %.3g of the largest" % (name, le))
            continue
        hk = {}
        R._rec = _rec_grad
        try:
            with torch.no_grad():
                forward(hk)
        finally:
            R._rec = _orig_rec
        names = [h for h in hk if not np.issubdtype(hk[h].numpy().dtype, np.integer)]
        worst_all, skipped = 0.0, set()
        kinds = metrics(ids, V)
        if arch == "vit":  # a classifier: the classes at [CLS], as check_vit's
            kinds = [("diff", "metric 3 5", lambda l: l[0, 3] - l[0, 5]),
                     ("logprob", "metric logprob 3", lambda l: torch.log_softmax(l[0], -1)[3]),
                     ("prob", "metric prob 5", lambda l: torch.softmax(l[0], -1)[5]),
                     ("logit", "metric logit 3", lambda l: l[0, 3])]
        for kind, cmd, fn in kinds:
            glines = lines + [cmd]
            for h in names:
                glines.append("grad %s %s" % (h, os.path.join(WORK, "%s.ref.%s.%s.npy" % (name, kind, h))))
            run(path, glines)
            hooks = {}
            R._rec = _rec_grad
            try:
                fn(forward(hooks)).backward()
            finally:
                R._rec = _orig_rec
            worst = 0.0
            for h in names:
                f = os.path.join(WORK, "%s.ref.%s.%s.npy" % (name, kind, h))
                if not os.path.exists(f):
                    bad("%s %s: no %s written" % (name, kind, h))
                    continue
                a = np.load(f).astype(np.float64)
                g = hooks[h].grad
                if g is None and h.endswith("hook_pos_embed"):
                    # a constant in the reference (de-en's sinusoidal positions) added to the
                    # embedding: its gradient is the sum's, the first block's resid_pre
                    pre = h.replace("hook_pos_embed", "0.hook_resid_pre") if h != "hook_pos_embed" \
                        else "blocks.0.hook_resid_pre"
                    g = hooks[pre].grad if pre in hooks else None
                    skipped.add("%s (as %s)" % (h, pre))
                if g is None:
                    # off the path to the metric in torch (austen-bert's pooler.hook_out: the
                    # masked-LM logits do not read it): the gradient there is zero
                    g = torch.zeros_like(hooks[h])
                    skipped.add("%s (zero)" % h)
                t = g.numpy() if arch == "vit" else g[0].numpy()  # vit_forward's hooks are unbatched
                if a.size != t.size:
                    bad("%s %s %s: shape %s, torch %s" % (name, kind, h, a.shape, t.shape))
                    continue
                a = a.reshape(t.shape)
                if h.endswith("hook_attn_scores") and arch != "vit":
                    t = np.where(np.isfinite(hooks[h][0].detach().numpy()), t, 0.0)
                scale = np.abs(t).max()
                err = np.abs(a - t).max() / scale if scale > 0 else np.abs(a).max()
                worst = max(worst, err)
                if not err <= TOL:
                    bad("%s %s d/d %s: max error %.3g relative to the largest |grad| %.3g" % (name, kind, h, err,
                                                                                             scale))
            worst_all = max(worst_all, worst)
            print("ok %s %s: %d hooks against autograd, worst relative error %.2e" % (name, kind, len(names), worst))
        print("ok %s: loaded into reference (%s), logits %.2e of the largest; every hook's grad (%d hooks; "
              "without a torch gradient of their own: %s) worst %.2e" % (
                  name, type(model).__name__, le, len(names), ", ".join(sorted(skipped)) or "none", worst_all))


def check_bundled():
    """The bundled models (models/*.gguf, trained, not random): attnscope's
    gradient at an early hook against central finite differences of
    attnscope's own forward, steered (`steer HOOK v.npy pos=P`) by +-h·v:
    along the gradient's own direction at its largest position (the
    derivative is then |g[P]|: a wrong VJP would not give its own norm)
    and along two random unit vectors. The forward is float32 and the metric
    printed to 1e-6: h = 3e-3, agreement within 1% of |g[P]| (2% for de-en's
    ReLUs). (Their check against autograd is check_bundled_ref's.)"""
    M = os.path.join(ROOT, "models")
    prompt = 'prompt "It is a truth universally acknowledged, that a single man"'
    cases = [
        ("austen-gpt2", [prompt], "metric logprob 262", "blocks.0.hook_resid_pre"),
        ("austen-llama", [prompt], "metric logprob 278", "blocks.0.hook_resid_pre"),
        ("induction", ['prompt "abcdefg abcde"'], "metric logprob 10", "blocks.0.hook_resid_pre"),
        ("austen-moe", [prompt], "metric logprob 278", "blocks.0.hook_resid_pre"),
        ("austen-bert", ['prompt "it is a truth universally [MASK], that a single man"'], "metric logprob 5 6",
         "embed.hook_sum"),
        ("de-en", ['source "Das Haus ist klein."', 'prompt "The house"'], "metric logprob 10",
         "encoder.0.hook_resid_pre"),
        ("vit-fashion", ["image " + os.path.join(FIX, "tiny-vit", "image.png")], "metric logprob 3",
         "blocks.0.hook_resid_pre"),
    ]
    rng = np.random.default_rng(3)

    def metric_of(path, lines, hook):
        if "vit" in path:  # no saliency (no token embedding): grad's line, 6 digits (the metric is about -1)
            out = run(path, lines + ["grad " + hook])
            got = [l for l in out.splitlines() if "   (metric " in l]
            return float(got[-1].split("(metric ")[1].rstrip(")")) if got else float("nan")
        out = run(path, lines + ["saliency"])
        got = [l for l in out.splitlines() if l.startswith("sum ") and "; metric " in l]
        return float(got[-1].split("; metric ")[1]) if got else float("nan")
    for name, inp, metric, hook in cases:
        path = os.path.join(M, name + ".gguf")
        gfile = os.path.join(WORK, name + ".bundled.npy")
        run(path, inp + ["finish", metric, "grad %s %s" % (hook, gfile)])
        if not os.path.exists(gfile):
            bad("%s: no gradient at %s" % (name, hook))
            continue
        g = np.load(gfile).astype(np.float64)
        P = int(np.linalg.norm(g, axis=1).argmax())
        dirs = [(P, g[P] / np.linalg.norm(g[P]))]
        for _ in range(2):
            v = rng.standard_normal(g.shape[1])
            dirs.append((int(rng.integers(g.shape[0])), v / np.linalg.norm(v)))
        h, worst = float(os.environ.get("GRAD_REF_H", "3e-3")), 0.0
        for pos, v in dirs:
            f = []
            for sgn in (1, -1):
                vf = os.path.join(WORK, "%s.steer.npy" % name)
                np.save(vf, sgn * h * v)
                f.append(metric_of(path, inp + ["steer %s %s pos=%d" % (hook, vf, pos), "finish", metric], hook))
            num = (f[0] - f[1]) / (2 * h)
            err = abs(num - g[pos] @ v) / np.linalg.norm(g[P])
            if os.environ.get("GRAD_REF_VERBOSE"):
                print("  %s pos %d: finite difference %.7g, gradient %.7g" % (name, pos, num, g[pos] @ v))
            worst = max(worst, err)
            # de-en's MLPs are ReLUs: a step of h crosses kinks, and its differences wander
            # by about 0.5% (0.6735, 0.6725, 0.671, 0.6761 at h = 1e-3, 3e-3, 1e-2, 3e-2
            # against a gradient of 0.6763); the smooth models agree within 1e-4
            if not err <= (2e-2 if name == "de-en" else 1e-2):
                bad("%s: finite difference along a direction at %s[%d]: %.6g, gradient %.6g" % (name, hook, pos, num,
                                                                                                g[pos] @ v))
        print("ok %s: d/d %s agrees with central finite differences of the forward in 3 directions "
              "(worst %.1e of |g| at position %d)" % (name, hook, worst, P))


def forward_from_embed(model, cfg, ids, emb):
    """The model with hook_embed replaced by emb [T, d]."""
    real = model.tok_embd.forward
    model.tok_embd.forward = lambda idx: emb[None]
    try:
        return model(torch.tensor([ids], dtype=torch.long))[0]
    finally:
        model.tok_embd.forward = real


def forward_with_resid0(model, cfg, ids, i, j, h):
    """The model with h added to blocks.0.hook_resid_pre[i, j]."""
    real = model.tok_embd.forward

    def f(idx):
        x = real(idx).clone()  # resid_pre 0 = embed (+ pos_embed on gpt2): adding to the embedding adds to it
        x[0, i, j] += h
        return x
    model.tok_embd.forward = f
    try:
        with torch.no_grad():
            return model(torch.tensor([ids], dtype=torch.long))[0]
    finally:
        model.tok_embd.forward = real


torch.set_grad_enabled(True)
# GRAD_REF_ONLY="tiny-mixtral tiny-vit": only those (for working on one architecture)
ONLY = os.environ.get("GRAD_REF_ONLY", "").split()


def want(which):
    return not ONLY or which in ONLY


for which in ("tiny-gpt2", "tiny-llama"):
    if want(which):
        check_model(which)
# the llama family's variants: q/k/v biases and NEOX rotary (qwen2), YaRN,
# llama 3's frequencies, a sliding window with linear scaling (mistral),
# per-head q/k norms (qwen3), fused qkv (phi3), soft-capped scores and
# logits with post-norms and GEGLU (gemma2), gemma3; routed experts:
# Mixtral (softmax router, top 2 renormalised; -tie: a tie in the choice),
# Qwen2-MoE (weights as they are, a shared expert under a sigmoid gate)
for which in ("tiny-qwen2", "tiny-llama-yarn", "tiny-llama3", "tiny-mistral", "tiny-qwen3", "tiny-phi3",
              "tiny-gemma", "tiny-gemma2", "tiny-gemma3", "tiny-mixtral", "tiny-mixtral-tie", "tiny-qwen2moe"):
    if want(which):
        check_model(which, decoder=True)
# DeepSeek-V2's latent attention (q direct or through its own latent; the
# decoupled rotary key shared by the heads; the absorbed MQA layout; YaRN)
# and DeepSeekMoE (softmax or sigmoid affinities, a choice-only bias, groups,
# normalised and scaled gates, shared experts)
for which in ("tiny-deepseek2", "tiny-deepseek2-qlora", "tiny-deepseek2-v3moe", "tiny-deepseek2-v2moe",
              "tiny-deepseek2-yarn"):
    if want(which):
        check_model(which, decoder=True, builder=MF.build_deepseek2)
if want("tiny-deepseek2-absorbed"):
    # the absorbed layout with attnscope's dataflow at rot_q (see _attn_absorbed_as_attnscope)
    _orig_absorbed = R.DeepSeek2._attn_absorbed
    _, _, _m, _, _ids, _ = MF.build_deepseek2("tiny-deepseek2-absorbed")
    with torch.no_grad():
        _l0 = _m.double()(torch.tensor([_ids]))
        R.DeepSeek2._attn_absorbed = _attn_absorbed_as_attnscope
        _l1 = _m(torch.tensor([_ids]))
        R.DeepSeek2._attn_absorbed = _orig_absorbed
    if not (_l0 - _l1).abs().max().item() <= 1e-12:
        bad("tiny-deepseek2-absorbed: the rewired reference's logits differ from reference.py's")
    R.DeepSeek2._attn_absorbed = _attn_absorbed_as_attnscope
    try:
        check_model("tiny-deepseek2-absorbed", decoder=True, builder=MF.build_deepseek2)
    finally:
        R.DeepSeek2._attn_absorbed = _orig_absorbed
# BERT: bidirectional attention, token types (a sentence pair), Post-LN, the
# masked-LM head's dense layer, GELU and norm (nomic-bert, an embedding
# model without logits, has no metric yet: grad.sh checks it says so)
for which in ("tiny-bert",):
    if want(which):
        check_model(which, encoder=True)
# encoder-decoders: cross-attention reads the encoder's stream (tiny-transformer:
# sinusoidal positions, Post-LN, ReLU; tiny-t5: relative position bias, RMSNorm, gated GELU)
# (-sep: its own target embedding and output matrix, the encoder deeper; t5-relu: ReLU, 32 buckets, untied)
for which in ("tiny-transformer", "tiny-transformer-sep", "tiny-t5", "tiny-t5-relu"):
    if want(which):
        check_model(which, encdec=True)
# a classifier: torchvision's ViT, the metric at a class on [CLS]
if want("tiny-vit"):
    check_vit()
# the bundled models: read back into the reference (every hook against
# autograd), then finite differences of attnscope's own forward
if want("bundled") or want("bundled-ref") or any(m.startswith(("austen", "de-", "induction", "vit-")) for m in ONLY):
    check_bundled_ref()
if want("bundled"):
    check_bundled()
print("grad_ref: %d failures" % len(fails))
sys.exit(1 if fails else 0)
