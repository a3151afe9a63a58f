#!/bin/sh
# `view math`'s numbers are the capture's: the full-screen view driven in
# tmux at 160x48 shows the arithmetic of one head at one query (`view
# math` at a layer, head, pos and key), `view dump` writes the screen, and
# in the same session `dump` writes the hooks the site reads and fills
# (q, k, attention scores, pattern, z) as .npy; then numpy reads the
# screen's numbers back and compares each with the arrays to the printed
# precision: q's dimensions, every key row's k dimensions, q·k (from the
# whole vectors), score and weight (masked rows: -inf and 0 in the
# arrays), the followed key's products, score and weight, and z.
# On austen-gpt2 (plain multi-head, hook_q / hook_k) and austen-llama
# (grouped-query: query head 3 reads kv head 0; rotary: hook_rot_q /
# hook_rot_k).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/tmux_lib.sh"
e2e_setup attnscope-math
need_numpy

PROMPT='It is a truth universally acknowledged, that a single man in possession'

# check NAME MODEL Q-HOOK K-HOOK LAYER HEAD POS KEY
check() {
    name=$1 model=$2 qh=$3 kh=$4 layer=$5 head=$6 pos=$7 key=$8
    view_start "$name" "$MODELS/$model.gguf" 160 48 || return
    b=blocks.$layer.attn
    view_run "$name" "set delay 0; prompt $PROMPT; finish; view layer $layer; view head $head; view pos $pos; view key $key; view math; view dump $name.txt; dump $b.$qh $name-q.npy; dump $b.$kh $name-k.npy; dump $b.hook_attn_scores $name-s.npy; dump $b.hook_pattern $name-p.npy; dump $b.hook_z $name-z.npy" \
        30 "$name.txt" "$name-z.npy" || return
    if $PY - "$TMP/$name" "$head" "$pos" "$key" <<'EOF'; then pass=$((pass + 1)); else bad "$name: the pane's numbers are not the capture's"; fi
import re, sys
import numpy as np
from e2e_read import find_pane, num
base, head, pos, key = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
q, k, s, p, z = (np.load(f"{base}-{x}.npy") for x in "qkspz")
H, Hkv = q.shape[1], k.shape[1]
kvh = head // (H // Hkv)
lines = open(f"{base}.txt", encoding="utf-8").read().split("\n")
top, col, end, pane = find_pane(lines, "worked out L")
errors, checked = [], 0
def close(shown, want, what, places):
    global checked
    checked += 1
    if not abs(shown - want) <= 0.5 * 10 ** -places + 1e-6 * abs(want):
        errors.append(f"{what}: the pane shows {shown}, the array holds {want}")
qv = q[pos, head].astype(np.float64)
# q's first dimensions
ql = next(l for l in pane if l.strip().startswith("q = "))
qs = ql.split("]", 1)[1].split("…")[0].split()
assert len(qs) >= 3, ql
for i, t in enumerate(qs):
    close(num(t), qv[i], f"q[{i}]", 3)
header = next(l for l in pane if l.strip().startswith("key "))
scaled = "scale" in header
rows = 0
cursor = None
for l in pane:
    m = re.match(r"^ ([ >=])\s*(\d+) \S+\s+(.*)$", l)
    if not m or "…" not in m.group(3):
        continue
    kk, rest = int(m.group(2)), m.group(3)
    if m.group(1) == ">":
        cursor = kk
    dims, after = rest.split("…")
    kv = k[kk, kvh].astype(np.float64)
    for i, t in enumerate(dims.split()):
        close(num(t), kv[i], f"k[{kk}][{i}]", 3)
    t = after.split()
    close(num(t[0]), float(qv @ kv), f"q·k at key {kk}", 4)
    t = t[2:] if scaled else t[1:]
    if t[1] == "masked":
        checked += 1
        if not (np.isneginf(s[head, pos, kk]) and p[head, pos, kk] == 0):
            errors.append(f"key {kk} shown masked, the arrays hold {s[head, pos, kk]}, {p[head, pos, kk]}")
    else:
        close(num(t[1]), s[head, pos, kk], f"score at key {kk}", 4)
        close(num(t[2]), p[head, pos, kk], f"weight at key {kk}", 4)
    rows += 1
if rows < 3:
    errors.append(f"only {rows} key rows read")
if cursor != key:
    errors.append(f"the highlighted row is {cursor}, not the cursor's key {key}")
# the followed key
kv = k[key, kvh].astype(np.float64)
dl = next(l for l in pane if l.strip().startswith("q·k = "))
pairs = re.findall(r"(-?\d+\.\d+)×(-?\d+\.\d+)", dl)
assert len(pairs) >= 2, dl
for i, (a, b) in enumerate(pairs):
    close(float(a), qv[i], f"followed q[{i}]", 3)
    close(float(b), kv[i], f"followed k[{i}]", 3)
close(float(dl.split("=")[-1]), float(qv @ kv), "followed q·k", 4)
sl = next(l for l in pane if "= score" in l)
close(float(sl.split("= score")[0].split("=")[-1]), s[head, pos, key], "followed score", 4)
close(float(re.search(r"\((?:hook_attn_scores|captured) (-?\d+\.\d+)", sl).group(1)), s[head, pos, key], "captured score", 4)
wl = next(l for l in pane if "= weight" in l)
close(float(wl.split("= weight")[0].split("=")[-1]), p[head, pos, key], "followed weight", 4)
mx = s[head, pos, :pos + 1].max()
close(float(re.search(r"max (-?\d+\.\d+)", wl).group(1)), mx, "max score", 4)
zl = next(l for l in pane if l.strip().startswith("z = "))
for i, t in enumerate(zl.split("]", 1)[1].split("…")[0].split()):
    close(num(t), z[pos, head, i], f"z[{i}]", 3)
if "does NOT reproduce" in "\n".join(lines) or "DIFFERS" in "\n".join(pane):
    errors.append("the pane says its arithmetic does not reproduce the capture")
for e in errors:
    print("  " + e)
print(f"  {checked} numbers compared, {len(errors)} differ")
sys.exit(1 if errors or checked < 30 else 0)
EOF
}

check m-gpt2 austen-gpt2 hook_q hook_k 1 3 8 5
check m-llama austen-llama hook_rot_q hook_rot_k 1 3 10 4

echo "math e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
