"""attribute (attribution patching) against NumPy from dumped arrays: for
each model and kind, the clean prompt's activations (`dump HOOK FILE.npy`),
the other prompt's (a second run, `dump`) and the gradient (`grad HOOK
FILE.npy`) give every cell as (other - clean) . grad summed over the cell
(a position's row; a head's slice of hook_z over every position); the
table `attribute KIND from OTHER FILE.npy` wrote must equal it within 1e-5
relative to the largest |cell| (float32 values, float64 sums both sides).
Also that the cells are not all zero (a test that passes on zeros proves
nothing) and that the printed table is the .npy's.

usage: attribute_ref.py ATTNSCOPE_BINARY WORKDIR"""
import os
import subprocess
import sys

import numpy as np

BIN, WORK = sys.argv[1], sys.argv[2]
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..", "..")
FIX = os.path.join(ROOT, "tests", "fixtures")
MODELS = os.path.join(ROOT, "models")
TOL = 1e-5
HOOK = {"resid": "hook_resid_pre", "attn": "hook_attn_out", "mlp": "hook_mlp_out", "heads": "attn.hook_z"}
CASES = [
    (os.path.join(FIX, "tiny-gpt2.gguf"), "the cat sat on the mat", "the sat sat on the mat", "metric logprob 5"),
    (os.path.join(FIX, "tiny-llama.gguf"), "the cat sat on the mat", "the sat sat on the mat", "metric 280 285"),
    (os.path.join(MODELS, "austen-gpt2.gguf"), "Elizabeth and Anne walked to the house, and Anne gave the letter to",
     "Elizabeth and Anne walked to the house, and Elizabeth gave the letter to", 'metric " Elizabeth" " Anne"'),
]
fails = []


def run(model, script):
    r = subprocess.run([BIN, "-m", model, "--no-tui", "-e", script], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit("attnscope failed: %s\n%s" % (script[:200], r.stderr))
    return r.stdout


for ci, (model, clean, other, metric) in enumerate(CASES):
    name = os.path.basename(model)
    out = run(model, 'prompt "%s"; hooks' % clean)
    L = 1 + max(int(l.split(".")[1]) for l in out.split() if l.startswith("blocks.") and l.endswith("hook_resid_pre"))
    d = os.path.join(WORK, "attr%d" % ci)
    os.makedirs(d, exist_ok=True)
    cmds = ['prompt "%s"' % clean, metric, "finish"]
    for kind in HOOK:
        cmds.append('attribute %s from "%s" %s/a_%s.npy' % (kind, other, d, kind))
    for kind, hk in HOOK.items():
        for l in range(L):
            cmds.append("dump blocks.%d.%s %s/c_%s_%d.npy" % (l, hk, d, kind, l))
            cmds.append("grad blocks.%d.%s %s/g_%s_%d.npy" % (l, hk, d, kind, l))
    printed = run(model, "; ".join(cmds))
    cmds = ['prompt "%s"' % other, "finish"]
    for kind, hk in HOOK.items():
        for l in range(L):
            cmds.append("dump blocks.%d.%s %s/o_%s_%d.npy" % (l, hk, d, kind, l))
    run(model, "; ".join(cmds))
    for kind in HOOK:
        got = np.load("%s/a_%s.npy" % (d, kind)).astype(np.float64)
        want = np.zeros_like(got)
        for l in range(L):
            c = np.load("%s/c_%s_%d.npy" % (d, kind, l)).astype(np.float64)
            o = np.load("%s/o_%s_%d.npy" % (d, kind, l)).astype(np.float64)
            g = np.load("%s/g_%s_%d.npy" % (d, kind, l)).astype(np.float64)
            prod = (o - c) * g
            if kind == "heads":  # [n, H, d_head] -> per head over positions
                want[l] = prod.sum(axis=(0, 2))
            else:
                want[l] = prod.sum(axis=1)
        scale = np.abs(want).max()
        err = np.abs(got - want).max() / scale if scale > 0 else np.inf
        if got.shape != want.shape or not err <= TOL:
            fails.append("%s %s: max error %.3g of the largest cell %.3g" % (name, kind, err, scale))
        else:
            print("ok %s attribute %s %s: max error %.2e relative to %.3g" % (name, kind, got.shape, err, scale))
    # the printed table (first kind: resid) is the array, to the 4 decimals printed
    lines = printed.split("attribution patching of resid_pre")[1].split("\n")[2:2 + L]
    table = np.array([[float(x) for x in ln.split("\t")[1:]] for ln in lines])
    a = np.load("%s/a_resid.npy" % d)
    if table.shape != a.shape or np.abs(table - a).max() > 6e-5:
        fails.append("%s: the printed resid table is not the .npy's" % name)

for f in fails:
    print("FAIL:", f)
sys.exit(1 if fails else 0)
