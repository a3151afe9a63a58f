#!/bin/sh
# `view mla`'s numbers: the full-screen view driven in tmux at 160x48 on
# austen-moe (deepseek2's latent attention) shows layer 1, head 3, token 8
# (`view mla`); `view dump` writes the screen, and in the same session
# `dump` writes the hooks the pane reads (the normed latent
# kv_a_norm.hook_normalized, hook_k_pe, hook_k_nope, hook_v) as .npy.
# numpy then reads the screen back and checks, to the printed precision
# (3 decimals: |shown - array| <= 0.0005):
# - the latent: its min and max and their dimensions, its first values,
#   and the strip: one cell a value, each cell the level
#   rint((v - min) / (max - min) * 7) of ▁..█ (float32 as the view computes);
# - the rotary key's first values, the selected head's k (W_UK·c) and v
#   (W_UV·c), and every head's first k and v values;
# - the cache bars (values and float32 bytes a token and a layer, and the
#   ratios to MLA's) and the title's ratio against the arithmetic from the
#   model's hyperparameters, read from the GGUF file by a reader written
#   for the tests (e2e_read.py, not attnscope's): MLA = kv_lora_rank +
#   rope.dimension_count, MHA = head_count x (key_length + value_length),
#   GQA with head_count/4 kv heads, MQA with one;
# - `info`'s cache lines against the same arithmetic (issue #33: it said
#   1.0x, no saving);
# - lesson moe's claims (assets/lessons/moe.txt) from the same dumps and
#   the routing hooks (each numbered sentence rebuilt from them): see the end.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/tmux_lib.sh"
e2e_setup attnscope-mla
need_numpy

PROMPT='It is a truth universally acknowledged, that a single man in possession of a good fortune'
LAYER=1 HEAD=3 POS=8
name=mla160
view_start "$name" "$MODELS/austen-moe.gguf" 160 48
b=blocks.$LAYER.attn
view_run "$name" "set delay 0; prompt $PROMPT; finish; view layer $LAYER; view head $HEAD; view pos $POS; view mla; view dump $name.txt; dump $b.kv_a_norm.hook_normalized c.npy; dump $b.hook_k_pe kpe.npy; dump $b.hook_k_nope knope.npy; dump $b.hook_v v.npy; dump blocks.1.mlp.hook_expert_gates gates.npy; dump blocks.1.mlp.hook_routed_out routed.npy; dump blocks.1.mlp.shared.hook_out shared.npy; dump blocks.1.hook_mlp_out mlpout.npy; dump blocks.1.mlp.hook_expert_indices idx.npy" \
    30 "$name.txt" idx.npy
"$BIN" -m "$MODELS/austen-moe.gguf" --threads 1 --no-tui -e info > "$TMP/info.txt" 2>&1 || bad "info failed"
"$BIN" -m "$MODELS/austen-moe.gguf" --threads 1 --no-tui -e "prompt a; hooks" > "$TMP/hooks.txt" 2>&1 || bad "hooks failed"

if $PY - "$TMP" "$MODELS/austen-moe.gguf" "$HEAD" "$POS" "$HERE/../../assets/lessons/moe.txt" <<'EOF'; then pass=$((pass + 1)); else bad "view mla's numbers are not the capture's or the hyperparameters'"; fi
import re, sys
import numpy as np
tmp, gguf, head, pos = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])

# the GGUF file's metadata, read by tests/e2e/e2e_read.py (not attnscope's)
from e2e_read import find_pane, gguf_meta, num

m = gguf_meta(gguf)
a = "deepseek2."
H, dk, dv = m[a + "attention.head_count"], m[a + "attention.key_length"], m[a + "attention.value_length"]
kl, r, L = m[a + "attention.kv_lora_rank"], m[a + "rope.dimension_count"], m[a + "block_count"]
MLA, MHA, MQA = kl + r, H * (dk + dv), dk + dv
G = H // 4
GQA = G * (dk + dv)

errors, checked = [], 0
def check(ok, what):
    global checked
    checked += 1
    if not ok:
        errors.append(what)
def close(shown, want, what):
    check(abs(shown - want) <= 0.0005 + 1e-6 * abs(want), f"{what}: the pane shows {shown}, the array holds {want}")

lines = open(f"{tmp}/mla160.txt", encoding="utf-8").read().split("\n")
top, col, end, pane = find_pane(lines, "MLA latent L")
pane = [r.strip() for r in pane]
title = lines[top][col:]

c = np.load(f"{tmp}/c.npy")[pos].astype(np.float64)
kpe = np.load(f"{tmp}/kpe.npy")[pos, 0].astype(np.float64)
knope = np.load(f"{tmp}/knope.npy")[pos].astype(np.float64)
v = np.load(f"{tmp}/v.npy")[pos].astype(np.float64)
check(c.shape == (kl,) and kpe.shape == (r,), f"hook widths {c.shape} {kpe.shape} against kv_lora_rank {kl}, rope {r}")

# the widths line
w = next(l for l in pane if l.startswith("x "))
check(f"latent c {kl} + rope key {r}" in w and f"{H} heads" in w and f"(k {dk - r}+{r}, v {dv})" in w, f"widths: {w}")

# the latent: min, max, their dims, the first values, the strip
lab = next(l for l in pane if l.startswith("c (kv_a_norm.hook_normalized["))
mm = re.search(r"min (\S+) @(\d+), max (\S+) @(\d+)", lab)
close(num(mm.group(1)), c.min(), "latent min")
check(int(mm.group(2)) == int(c.argmin()), f"latent argmin {mm.group(2)} != {c.argmin()}")
close(num(mm.group(3)), c.max(), "latent max")
check(int(mm.group(4)) == int(c.argmax()), f"latent argmax {mm.group(4)} != {c.argmax()}")
cl = next(l for l in pane if l.startswith("c = "))
vals = cl[4:].split("…")[0].split()
check(len(vals) >= 5, f"too few latent values: {cl}")
for i, t in enumerate(vals):
    close(num(t), c[i], f"c[{i}]")
strip = pane[pane.index(lab) + 1].split(" ", 1)[1].strip()
glyphs = "▁▂▃▄▅▆▇█"
c32 = np.load(f"{tmp}/c.npy")[pos]
lo, hi = c32.min(), c32.max()
want = "".join(glyphs[int(np.rint(np.float32((x - lo) / (hi - lo)) * np.float32(7)))] for x in c32)
check(strip == want, f"the strip\n  {strip}\nis not the latent's levels\n  {want}")

# the rotary key, the selected head's k and v, every head's
kl_ = next(l for l in pane if l.startswith("k_pe = "))
for i, t in enumerate(kl_[7:].split("…")[0].split()):
    close(num(t), kpe[i], f"k_pe[{i}]")
hk = next(l for l in pane if l.startswith(f"H{head} k = [W_UK[{head}]"))
for i, t in enumerate(hk.split("c = ", 1)[1].split("…")[0].split()):
    close(num(t), knope[head, i], f"H{head} k_nope[{i}]")
hv = next(l for l in pane if l.startswith(f"v = W_UV[{head}]"))
for i, t in enumerate(hv.split("c = ", 1)[1].split("…")[0].split()):
    close(num(t), v[head, i], f"H{head} v[{i}]")
for h in range(H):
    hl = next(l for l in pane if re.match(rf"H{h}\s+k\s+-?\d", l))
    ks, vs = hl.split("│")
    for i, t in enumerate(ks.split()[2:]):
        if t != "…":
            close(num(t), knope[h, i], f"every head: H{h} k[{i}]")
    for i, t in enumerate(vs.split()[1:]):
        if t != "…":
            close(num(t), v[h, i], f"every head: H{h} v[{i}]")

# the cache bars and the title
def bar(name):
    l = next(l for l in pane if l.startswith(name + " "))
    n = re.match(rf"{name} .*?\s(\d+)\s+(\d+) B .*?\s([\d.]+)x$", l)
    return int(n.group(1)), int(n.group(2)), float(n.group(3))
for name, want in (("MLA", MLA), ("GQA", GQA), ("MQA", MQA), ("MHA", MHA)):
    vals_, byts, ratio = bar(name)
    check(vals_ == want and byts == 4 * want, f"{name}: {vals_} values, {byts} B; the arithmetic: {want}, {4 * want}")
    check(abs(ratio - want / MLA) <= 0.05, f"{name}: {ratio}x, the arithmetic {want / MLA:.2f}")
check(f"{G} kv heads" in next(l for l in pane if l.startswith("GQA")), "GQA's kv heads")
check(f"cache {MHA / MLA:.1f}x smaller than MHA" in title, f"title: {title}")

# info's lines
info = open(f"{tmp}/info.txt", encoding="utf-8").read()
for want in (f"{kl} + {r} = {MLA} values a layer, {MLA * L} over {L} layers",
             f"{H} x (k {dk} + v {dv}) = {MHA} a layer, {MHA * L} ({MHA / MLA:.1f}x the latent's)",
             f"{G} kv heads of {H // G} query heads each: {GQA} a layer, {GQA * L} ({GQA / MLA:.1f}x)",
             f"1 kv head: {MQA} a layer, {MQA * L} ({MQA / MLA:.1f}x)"):
    check(want in info, f"info lacks '{want}'")
check("(1.0x)" not in info.split("plain multi-head")[1].split("\n")[0], "info's plain cache still 1.0x")

# lesson moe's claims: each sentence with a number is rebuilt here from the
# hyperparameters and the dumps and must stand in the lesson as written
lesson = " ".join(open(sys.argv[5], encoding="utf-8").read().split())
idx = np.load(f"{tmp}/idx.npy").astype(int)
gates = np.load(f"{tmp}/gates.npy").astype(np.float64)
E, k, dense = m[a + "expert_count"], m[a + "expert_used_count"], m[a + "leading_dense_block_count"]
hooks = open(f"{tmp}/hooks.txt", encoding="utf-8").read()
routed_layers = [l for l in range(L) if f"blocks.{l}.mlp.hook_expert_indices" in hooks]
check(routed_layers == list(range(dense, L)), f"routed layers {routed_layers}, dense {dense}")
check(dense == 1, f"leading dense layers: {dense}")
def says(text):
    check(text in lesson, f"lesson moe does not say '{text}'")
says(f"From layer {dense} on, each MLP is a mixture of {E} experts (layer 0 is one plain MLP)")
check(idx.shape[1] == k, f"experts chosen a token: {idx.shape[1]}, expert_used_count {k}")
says(f"A router picks {k} of the {E} for every token")
order = np.argsort(idx[pos])
e0, e1 = idx[pos][order]
g0, g1 = gates[pos][order]
says(f'Token {pos} "ally" goes to experts {e0} and {e1}: its output is their sum weighted {g0:.2f} and {g1:.2f}')
mo, ro, so = (np.load(f"{tmp}/{x}.npy").astype(np.float64) for x in ("mlpout", "routed", "shared"))
check(np.abs(mo - (ro + so)).max() <= 1e-5 * (1 + np.abs(mo).max()), "mlp_out is not the routed sum + the shared expert")
check(np.abs(so).min(axis=1).shape[0] == mo.shape[0] and (np.abs(so).sum(axis=1) > 0).all(),
      "the shared expert is not on every token")
says("its output added to the chosen two's")
says(f"a latent c of {kl} values plus a {r}-value rotary key; all {H} heads rebuild")
says(f"So the cache holds {MLA} values a token and layer, where plain attention of {H} heads would hold "
     f"{H} x ({dk} + {dv}) = {MHA}: {MHA / MLA:.1f}x less")
says(f"its largest is at dimension {int(c.argmax())} ({c.max():.3f}), its smallest at {int(c.argmin())}")
says(f"H{head} shows head {head}'s k and v")

if errors:
    print("\n".join(errors[:20]))
    sys.exit(1)
print(f"view mla: {checked} checks against the capture, the GGUF's hyperparameters and info")
EOF

echo "mla: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
