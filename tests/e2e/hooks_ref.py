"""The optional hooks (`set attn-result on`, `set in-hooks on`) against
NumPy, on models whose W_O and b_O e2e_read.py reads from the GGUF itself:

  - attn.hook_result summed over heads + b_O equals hook_attn_out (1e-5
    relative to the largest |value|), and head h's slice equals hook_z's
    head h times W_O[:, h*dh:(h+1)*dh]ᵀ in float64 (1e-5 relative);
  - hook_attn_out and the logits with the options on equal the plain
    program's (1e-5 relative: the heads are summed in another order);
  - hook_attn_in equals hook_resid_pre and hook_mlp_in hook_resid_mid, to
    the bit (they are copies);
  - grad: d metric / d result_h equals d metric / d hook_attn_out of the
    plain program for every head (TransformerLens's attn_out = Σ_h result_h
    + b_O: the sum passes the gradient to each head unchanged; the plain
    program's grad at hook_attn_out is held to PyTorch autograd by
    grad_ref.py); d/d hook_z with the options equals the plain program's
    (it goes back through each head's W_O slice: a transpose or a wrong
    slice changes it); d/d hook_attn_in = d/d resid_pre - d/d resid_mid and
    d/d hook_mlp_in = d/d resid_mid - d/d resid_post (the residual's other
    path), all within 1e-4 of the largest |gradient|;
  - `patch L.H from "OTHER" pos=P`: hook_z equals the clean run's with
    [P, H] from OTHER's run, to the bit, and hook_attn_out moves by
    W_O[:, H] · (z_other - z_clean) at P only (NumPy, 1e-5 relative);
  - `ablate L.H mean over FILE`: head H's hook_z at every position equals
    NumPy's mean of the dumped hook_z over every position of every prompt
    in FILE (pooled; blank lines skipped), 1e-6 relative; the other heads
    unchanged to the bit.

usage: hooks_ref.py ATTNSCOPE_BINARY WORKDIR"""
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import e2e_read as E  # noqa: E402

ROOT = os.path.join(HERE, "..", "..")
BIN, WORK = sys.argv[1], sys.argv[2]
fails = []
CASES = [  # model, prompt line, metric
    ("tests/fixtures/tiny-gpt2.gguf", "prompt-ids 276 257 262 264 270", "metric logprob 5"),
    ("tests/fixtures/tiny-llama.gguf", "prompt-ids 1 276 257 262 264", "metric 5 7"),
    ("tests/fixtures/tiny-qwen2.gguf", "prompt-ids 276 257 262 264", "metric logit 9 2"),
    ("models/austen-gpt2.gguf", 'prompt "Elizabeth walked to the door and"', "metric logprob 1302"),
]


def bad(msg):
    fails.append(msg)
    print("FAIL: " + msg)


def run(model, lines):
    script = os.path.join(WORK, "hooks.cmds")
    with open(script, "w") as f:
        f.write("\n".join(lines) + "\n")
    p = subprocess.run([BIN, "--no-tui", "-x", script, model], capture_output=True, text=True)
    if p.returncode != 0:
        bad("%s: attnscope failed: %s %s" % (model, p.stdout[-1500:], p.stderr[-1500:]))
    return p.stdout


def close(name, a, b, tol):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        bad("%s: shapes %s and %s" % (name, a.shape, b.shape))
        return
    scale = max(np.abs(b).max(), 1e-30)
    err = np.abs(a - b).max() / scale
    if not err <= tol:
        bad("%s: max error %.3g of the largest |value| %.3g (tolerance %g)" % (name, err, scale, tol))
    else:
        print("ok %s (%.2g)" % (name, err))


for model, prompt, metric in CASES:
    path = os.path.join(ROOT, model)
    tag = os.path.basename(model).replace(".gguf", "")
    kv, T = E.read_gguf(path)
    n_layer = kv[kv["general.architecture"] + ".block_count"]
    d = lambda kind, L, on: os.path.join(WORK, "%s_%s_%d_%s.npy" % (tag, kind, L, "on" if on else "off"))
    for on in (False, True):
        lines = [prompt, metric, "finish"]
        if on:
            lines += ["set attn-result on", "set in-hooks on"]
        for L in range(n_layer):
            b = "blocks.%d." % L
            kinds = {"attn_out": "hook_attn_out", "z": "attn.hook_z", "pre": "hook_resid_pre",
                     "mid": "hook_resid_mid", "post": "hook_resid_post"}
            if on:
                kinds.update({"result": "attn.hook_result", "attn_in": "hook_attn_in", "mlp_in": "hook_mlp_in"})
            for k, h in kinds.items():
                lines.append("dump %s%s %s" % (b, h, d(k, L, on)))
                lines.append("grad %s%s %s" % (b, h, d("g" + k, L, on)))
        lines.append("dump unembed.hook_out %s" % d("logits", 0, on))
        run(path, lines)
    close("%s logits, options on vs off" % tag, np.load(d("logits", 0, True)), np.load(d("logits", 0, False)), 1e-5)
    for L in range(n_layer):
        ld = lambda k, on=True: np.load(d(k, L, on)).astype(np.float64)
        W = T["blk.%d.attn_output.weight" % L].astype(np.float64)  # [d_model, heads * d_head]
        bias = T.get("blk.%d.attn_output.bias" % L)
        bias = np.zeros(W.shape[0]) if bias is None else bias.astype(np.float64)
        res, z, out = ld("result"), ld("z"), ld("attn_out")
        H, dh = z.shape[1], z.shape[2]
        if res.shape != (z.shape[0], H, W.shape[0]):
            bad("%s L%d hook_result's shape %s, not [pos, %d, %d]" % (tag, L, res.shape, H, W.shape[0]))
            continue
        close("%s L%d Σ_h result + b_O = attn_out" % (tag, L), res.sum(1) + bias, out, 1e-5)
        ref = np.stack([z[:, h] @ W[:, h * dh:(h + 1) * dh].T for h in range(H)], 1)
        close("%s L%d result_h = z_h · W_O[:, h]ᵀ (NumPy, GGUF's W_O)" % (tag, L), res, ref, 1e-5)
        close("%s L%d attn_out on vs off" % (tag, L), out, ld("attn_out", False), 1e-5)
        if not (np.array_equal(ld("attn_in"), ld("pre")) and np.array_equal(ld("mlp_in"), ld("mid"))):
            bad("%s L%d hook_attn_in / hook_mlp_in are not resid_pre / resid_mid to the bit" % (tag, L))
        g_out = ld("gattn_out", False)
        gres = ld("gresult")
        close("%s L%d grad result_h = grad attn_out (every head)" % (tag, L),
              gres, np.repeat(g_out[:, None, :], H, 1), 1e-4)
        close("%s L%d grad z, options on vs off" % (tag, L), ld("gz"), ld("gz", False), 1e-4)
        close("%s L%d grad z = Σ_r grad result_h[r] W_O[r, h]" % (tag, L), ld("gz"),
              np.stack([gres[:, h] @ W[:, h * dh:(h + 1) * dh] for h in range(H)], 1), 1e-4)
        close("%s L%d grad attn_in = grad resid_pre - grad resid_mid" % (tag, L), ld("gattn_in"),
              ld("gpre") - ld("gmid"), 1e-4)
        close("%s L%d grad mlp_in = grad resid_mid - grad resid_post" % (tag, L), ld("gmlp_in"),
              ld("gmid") - ld("gpost"), 1e-4)

# patch L.H from "OTHER" pos=P and ablate L.H mean over FILE on austen-gpt2, from dumped arrays
path = os.path.join(ROOT, "models", "austen-gpt2.gguf")
kv, T = E.read_gguf(path)
CTX, OTHER, L, H, P = "She walked to the window", "Elizabeth walked to the door", 1, 3, 4
W = T["blk.%d.attn_output.weight" % L].astype(np.float64)
w = lambda name: os.path.join(WORK, name + ".npy")
zb, ob = "blocks.%d.attn.hook_z" % L, "blocks.%d.hook_attn_out" % L
out = run(path, ['prompt "%s"' % OTHER, "finish", "dump %s %s" % (zb, w("z_other")),
                 'prompt "%s"' % CTX, "finish", "dump %s %s" % (zb, w("z_clean")), "dump %s %s" % (ob, w("o_clean")),
                 'patch %d.%d from "%s" pos=%d' % (L, H, OTHER, P), "ablations",
                 "dump %s %s" % (zb, w("z_patched")), "dump %s %s" % (ob, w("o_patched"))])
if "patch %d.%d from other prompt at pos=%d" % (L, H, P) not in out:
    bad("ablations does not list the head patch: %s" % out[-400:])
zo, zc, zp = np.load(w("z_other")), np.load(w("z_clean")), np.load(w("z_patched"))
want = zc.copy()
want[P, H] = zo[P, H]
if not np.array_equal(zp, want):
    bad("patch %d.%d pos=%d: hook_z is not the clean one with [%d, %d] from the other prompt, to the bit" % (L, H, P, P, H))
else:
    print("ok patch L.H pos=P replaces exactly hook_z[P, H] (bit-equal)")
dh = zc.shape[2]
delta = np.zeros_like(np.load(w("o_clean")), dtype=np.float64)
delta[P] = W[:, H * dh:(H + 1) * dh] @ (zo[P, H].astype(np.float64) - zc[P, H])
close("patch L.H pos=P: attn_out = clean + W_O[:, H](z_other - z_clean) at P", np.load(w("o_patched")),
      np.load(w("o_clean")) + delta, 1e-5)

prompts = ["It is a truth universally acknowledged", "She walked", "The door was open and the wind blew"]
fp = os.path.join(WORK, "prompts.txt")
with open(fp, "w") as f:  # a blank line and a line of spaces are skipped
    f.write(prompts[0] + "\n" + prompts[1] + "\n\n   \n" + prompts[2] + "\n")
lines = []
for i, t in enumerate(prompts):
    lines += ['prompt "%s"' % t, "finish", "dump %s %s" % (zb, w("zp%d" % i))]
lines += ['prompt "%s"' % CTX, "finish", "ablate %d.%d mean over %s" % (L, H, fp), "ablations",
          "dump %s %s" % (zb, w("z_ablated"))]
out = run(path, lines)
zs = [np.load(w("zp%d" % i)).astype(np.float64) for i in range(3)]
if "over 3 prompts (%d positions)" % sum(z.shape[0] for z in zs) not in out:
    bad("ablate mean over FILE does not say 3 prompts and their positions: %s" % out[-400:])
if "ablate %d.%d mean over prompts.txt" % (L, H) not in out:
    bad("ablations does not list the mean-over-file rule")
mean = np.concatenate([z[:, H] for z in zs], 0).mean(0)  # every position of every prompt, pooled
za = np.load(w("z_ablated"))
close("ablate L.H mean over FILE: hook_z[:, H] = NumPy's pooled mean", za[:, H], np.tile(mean, (za.shape[0], 1)), 1e-6)
others = [h for h in range(za.shape[1]) if h != H]
if not np.array_equal(za[:, others], zc[:, others]):
    bad("ablate L.H mean over FILE changed other heads of layer %d" % L)
# a per-prompt mean (the shortest's positions) would differ: the test tells them apart
alt = np.mean([z[:, H].mean(0) for z in zs], 0)
if np.abs(alt - mean).max() < 1e-4 * np.abs(mean).max():
    bad("the prompts' per-prompt and pooled means coincide: the test cannot tell them apart")

if fails:
    print("%d failure(s)" % len(fails))
    sys.exit(1)
print("ok all")
