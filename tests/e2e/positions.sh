#!/bin/sh
# `view positions`' numbers are the model's: the full-screen view driven
# in tmux at 160x48 shows each kind of position signal, `view dump`
# writes the screen, and /usr/bin/python3 with numpy reads its numbers
# back and compares them, to the printed precision (3 decimals: within
# 0.0005; the T5 bias at 2: within 0.005), with what is computed here
# independently of attnscope:
#   - learned (austen-gpt2): W_pos[8]'s values on screen == the row 8 of
#     the file's position_embd.weight (read by tests/e2e/e2e_read.py, not attnscope's)
#     and == the dumped hook_pos_embed at position 8;
#   - sinusoidal (de-en, the decoder): PE[3] == sin(3 / 10000^(2i/d)) at
#     2i and cos at 2i+1, d the model's width (embedding_length), and ==
#     the dumped decoder.hook_pos_embed at 3;
#   - rotary (austen-llama; austen-moe's decoupled part): the angles at
#     pos 8 == 8 · base^(-2i/dim) with the file's rope.freq_base and
#     rope.dimension_count (the files have no rope scaling: asserted, so a
#     file that gets one fails here until the formula has it), and the
#     curve's values q·k(Δ)/q·k(0) == mean_i cos(Δ θ_i); on austen-llama
#     the token's own q·k at Δ == its dumped hook_q · hook_k (the rotary's
#     inputs) each turned pair by pair here, q by 8·θ_i and k by (8 − Δ)·θ_i;
#   - T5's relative buckets (tests/fixtures/tiny-t5.gguf, the decoder:
#     causal): each distance's bucket == transformers'
#     _relative_position_bucket written out below, each bias == the file's
#     dec.blk.0.attn_rel_b.weight[bucket, head], and the line of where each
#     bucket starts == the same function's;
# and on each, the heatmap row marked '>' is the selected position.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/tmux_lib.sh"
e2e_setup attnscope-positions
need_numpy

PROMPT='It is a truth universally acknowledged, that a single man in possession'

# run NAME MODEL-PATH "COMMANDS" LAST-FILE: the view at 160x48, the
# commands then `view dump NAME.txt`, waiting for LAST-FILE in $TMP.
run() {
    name=$1 model=$2 cmds=$3 last=$4
    view_start "$name" "$model" 160 48 || return 1
    view_run "$name" "$cmds; view dump $name.txt" 30 "$name.txt" "$last"
}

# check KIND NAME MODEL-PATH SELECTED: the Python below on the dumped screen
check() {
    if $PY - "$1" "$TMP/$2" "$3" "$4" ${5:-} <<'PYEOF'; then pass=$((pass + 1)); else bad "$2: the pane's numbers are not the model's"; fi
import math, re, sys
import numpy as np
from e2e_read import find_pane, num, read_gguf  # tests/e2e/e2e_read.py
kind, base, model, sel = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
own = len(sys.argv) > 5

lines = open(base + ".txt", encoding="utf-8").read().split("\n")
top, col, end, pane = find_pane(lines, "Positions: ")
errors, checked = [], 0
def close(shown, want, what, tol=0.0005):
    global checked
    checked += 1
    if not abs(shown - want) <= tol + 1e-6 * abs(want):
        errors.append(f"{what}: the pane shows {shown}, want {want}")
def values_after(prefix):
    l = next((l for l in pane if l.strip().startswith(prefix)), None)
    if l is None:
        errors.append(f"no line starting {prefix!r}")
        return []
    return [num(t) for t in l.split(prefix, 1)[1].split("…")[0].split()]
def marked_row():
    rows = [l for l in pane if l.startswith(">")]
    if len(rows) != 1:
        errors.append(f"{len(rows)} rows marked '>', not 1")
        return
    global checked
    checked += 1
    p = int(rows[0][1:].split()[0])
    if p != sel:
        errors.append(f"the marked row is position {p}, the selected token is {sel}")

kv, T = read_gguf(model)
arch = kv["general.architecture"]
if kind == "learned":
    shown = values_after(f"W_pos[{sel}] =")
    table = T["position_embd.weight"].astype(np.float64)
    hook = np.load(base + "-pe.npy").astype(np.float64)
    assert len(shown) >= 4, shown
    for i, v in enumerate(shown):
        close(v, table[sel, i], f"W_pos[{sel}][{i}] against the file's position_embd.weight")
        close(v, hook[sel, i], f"W_pos[{sel}][{i}] against the dumped hook_pos_embed")
    marked_row()
elif kind == "sinusoid":
    d = kv[f"{arch}.embedding_length"]
    shown = values_after(f"PE[{sel}] =")
    hook = np.load(base + "-pe.npy").astype(np.float64)
    assert len(shown) >= 4, shown
    for j, v in enumerate(shown):
        i2 = j - j % 2
        a = sel / 10000 ** (i2 / d)
        close(v, math.sin(a) if j % 2 == 0 else math.cos(a), f"PE[{sel}][{j}] against the formula")
        close(v, hook[sel, j], f"PE[{sel}][{j}] against the dumped decoder.hook_pos_embed")
    if f"10000^(2i/{d})" not in "".join(pane):
        errors.append(f"the formula on screen does not name 10000^(2i/{d})")
    marked_row()
elif kind == "rotary":
    scal = [k for k in kv if ".rope.scaling" in k or k.endswith("rope_freqs")]
    if scal or any(n.startswith("rope_freqs") for n in T):
        errors.append(f"the file has rope scaling ({scal}): this test's formula has none")
    b, dim = kv[f"{arch}.rope.freq_base"], kv[f"{arch}.rope.dimension_count"]
    theta = [b ** (-2 * i / dim) for i in range(dim // 2)]
    shown = values_after(f"pos {sel} angles (rad):")
    assert len(shown) >= 4, shown
    for i, v in enumerate(shown):
        close(v, sel * theta[i], f"angle of pair {i} at {sel}")
    cl = next(l for l in pane if l.strip().startswith("at Δ"))
    pts = re.findall(r"(\d+): (-?\d+\.\d+)", cl)
    assert len(pts) >= 4, cl
    for dlt, v in pts:
        dlt = int(dlt)
        close(float(v), sum(math.cos(dlt * t) for t in theta) / len(theta), f"q·k({dlt})/q·k(0)")
    if own:  # the token's own q and k (the rope's inputs, dumped), k turned Δ back: rotations done here
        q = np.load(base + "-q.npy").astype(np.float64)
        k = np.load(base + "-k.npy").astype(np.float64)
        head = int(re.search(r"L\d+ H(\d+): token", "\n".join(pane)).group(1))
        kvh = head * k.shape[1] // q.shape[1]
        def rot(x, p):
            y = x.copy()
            for i, t in enumerate(theta):
                c, s = math.cos(p * t), math.sin(p * t)
                y[2 * i], y[2 * i + 1] = x[2 * i] * c - x[2 * i + 1] * s, x[2 * i] * s + x[2 * i + 1] * c
            return y
        ol = next(l for l in pane if l.strip().startswith("own q·k at Δ"))
        pts = re.findall(r"(\d+): (-?\d+\.\d+)", ol)
        assert len(pts) >= 4, ol
        for dlt, v in pts:
            dlt = int(dlt)
            want = float(rot(q[sel, head], sel) @ rot(k[sel, kvh], sel - dlt))
            close(float(v), want, f"own q·k at Δ {dlt}")
    if f"{b:g}^(−2i/{dim})" not in "".join(pane):
        errors.append(f"the formula on screen does not name {b:g}^(−2i/{dim})")
    marked_row()
elif kind == "t5":
    nb = kv[f"{arch}.attention.relative_buckets_count"]
    table = T["dec.blk.0.attn_rel_b.weight"].astype(np.float64)  # [bucket, head]
    def bucket(rel, bidirectional=False, num_buckets=nb, max_distance=128):
        # transformers' T5Attention._relative_position_bucket (rel = memory - query)
        b = 0
        if bidirectional:
            num_buckets //= 2
            b += (rel > 0) * num_buckets
            rel = abs(rel)
        else:
            rel = -min(rel, 0)
        max_exact = num_buckets // 2
        if rel < max_exact:
            return b + rel
        large = max_exact + int(np.float32(np.log(np.float32(rel) / max_exact)) / np.float32(math.log(max_distance / max_exact))
                                * (num_buckets - max_exact))
        return b + min(large, num_buckets - 1)
    head = int(re.search(r"bias H(\d+)", "\n".join(pane)).group(1))
    dl = next(l for l in pane if l.strip().startswith("k−q"))
    bl = next(l for l in pane if l.strip().startswith("bucket "))
    hl = next(l for l in pane if l.strip().startswith("bias H"))
    ds, bs, hs = [int(t) for t in dl.split()[1:]], [int(t) for t in bl.split()[1:]], [float(t) for t in hl.split()[2:]]
    assert len(ds) == len(bs) == len(hs) >= 5, (dl, bl, hl)
    for dlt, bk, h in zip(ds, bs, hs):
        checked += 1
        if bk != bucket(dlt):
            errors.append(f"k-q {dlt}: bucket {bk} on screen, the reference gives {bucket(dlt)}")
        close(h, table[bucket(dlt), head], f"bias at k-q {dlt}, head {head}", 0.005)
    sl = " ".join(l for l in pane if "→" in l or re.match(r"^\s*(\d+→\d+\s*)+$", l))
    starts = [(int(a), int(b)) for a, b in re.findall(r"(\d+)→(\d+)", sl)]
    want, prev = [], -1
    for dist in range(0, 257):
        bk = bucket(-dist)
        if bk != prev:
            want.append((dist, bk))
        prev = bk
    checked += 1
    if starts != want:
        errors.append(f"bucket starts {starts}, the reference gives {want}")
for e in errors:
    print("  " + e)
print(f"  {kind}: {checked} numbers compared, {len(errors)} differ")
sys.exit(1 if errors or checked < 5 else 0)
PYEOF
}

M=$ROOT/models
run p-gpt2 "$M/austen-gpt2.gguf" "set delay 0; prompt $PROMPT; finish; view pos 8; view positions; dump hook_pos_embed p-gpt2-pe.npy" p-gpt2-pe.npy &&
    check learned p-gpt2 "$M/austen-gpt2.gguf" 8
run p-deen "$M/de-en.gguf" "set delay 0; source Der Mann ist gut.; prompt The man is; finish; view pos 3; view positions; dump decoder.hook_pos_embed p-deen-pe.npy" p-deen-pe.npy &&
    check sinusoid p-deen "$M/de-en.gguf" 3
run p-llama "$M/austen-llama.gguf" "set delay 0; prompt $PROMPT; finish; view layer 1; view head 3; view pos 8; view positions; dump blocks.1.attn.hook_q p-llama-q.npy; dump blocks.1.attn.hook_k p-llama-k.npy" p-llama-k.npy &&
    check rotary p-llama "$M/austen-llama.gguf" 8 own
run p-moe "$M/austen-moe.gguf" "set delay 0; prompt $PROMPT; finish; view layer 2; view pos 8; view positions" p-moe.txt &&
    check rotary p-moe "$M/austen-moe.gguf" 8
run p-t5 "$ROOT/tests/fixtures/tiny-t5.gguf" "set delay 0; source-ids 5 6 7 8 9; prompt-ids 0 5 6 7; finish; view head 2; view positions" p-t5.txt &&
    check t5 p-t5 "$ROOT/tests/fixtures/tiny-t5.gguf" 3

# ---- lesson positions at 80x24 and 120x35: each step's screen dumped
# (`view dump` typed during the lesson), and every number the step's text
# names found on its screen and equal to its source: the formula (sin,
# cos; the rotary angles; the all-ones curve) or the file's table ----
lesson_run() {
    name=$1 cols=$2 rows=$3
    view_start "$name" "$M/austen-gpt2.gguf" "$cols" "$rows" || return 1
    typed "$name" 'lesson positions'
    keys "$name" Enter
    for i in 1 2 3 4 5; do
        if [ "$i" != 1 ]; then # leave the command line (alone: Esc and Space together read as Alt+Space)
            keys "$name" Escape
            wait_for "$name" 'press : to type a command' || bad "$name: Esc did not leave the command line"
            keys "$name" Space
        fi
        wait_for "$name" " $i/5 " 30 || { bad "$name: lesson positions: no step $i"; return 1; }
        typed "$name" ":view dump $name-$i.txt"
        keys "$name" Enter
        wait_file "$TMP/$name-$i.txt" 30 || { bad "$name: step $i: no dump"; return 1; }
    done
}
for size in "80 24" "120 35"; do
    set -- $size
    lesson_run "les$1" "$1" "$2" || continue
    if $PY - "$TMP/les$1" "$ROOT/assets/lessons/positions.txt" "$M/austen-gpt2.gguf" <<'PYEOF'; then pass=$((pass + 1)); else bad "lesson positions at $1x$2: a claim the screen does not bear out"; fi
import math, re, sys
import numpy as np
from e2e_read import read_gguf
base, lesson, gpt2 = sys.argv[1:4]
steps = open(lesson, encoding="utf-8").read().split("\n---\n")
text = [" ".join(l for l in st.split("\n") if l and not l.startswith((":", "#", "title:", "model:"))) for st in steps]
assert len(text) == 5, len(text)
errors, checked = [], 0
def screen(i):
    return open(f"{base}-{i}.txt", encoding="utf-8").read()
def pane_line(i, prefix):
    for l in screen(i).split("\n"):
        m = re.search(re.escape(prefix) + r"(.*)", l)
        if m:
            return [float(t.replace("−", "-")) for t in m.group(1).split("…")[0].replace("│", " ").split()]
    errors.append(f"step {i}: no {prefix!r} on screen")
    return []
def claim(i, said, shown, want, what):
    """said: the number in the step's text; shown: on the screen; want: its source"""
    global checked
    checked += 1
    if said not in text[i - 1]:
        errors.append(f"step {i}: the text does not say {said}")
    s = float(said.replace("−", "-"))
    if shown is None or abs(shown - s) > 1e-9:
        errors.append(f"step {i}: {what}: the text says {said}, the screen {shown}")
    if abs(s - want) > 0.0005 + 1e-9:
        errors.append(f"step {i}: {what}: the text says {said}, the source gives {want:.4f}")
v = pane_line(1, "PE[3] =")
claim(1, "0.141", v[0] if v else None, math.sin(3), "PE[3][0] = sin 3")
claim(1, "−0.990", v[1] if len(v) > 1 else None, math.cos(3), "PE[3][1] = cos 3")
v = pane_line(2, "PE[4] =")
claim(2, "−0.757", v[0] if v else None, math.sin(4), "PE[4][0] = sin 4")
checked += 1
if "the sines" not in screen(2):
    errors.append("step 2: the heatmap's header does not say its columns are the sines")
# the learned table, from the file (tests/e2e/e2e_read.py)
W = read_gguf(gpt2)[1]["position_embd.weight"]
checked += 1
if f"{W.shape[0]} rows" not in text[2]:
    errors.append(f"step 3: the table has {W.shape[0]} rows, the text says otherwise")
v = pane_line(3, "W_pos[8] =")
claim(3, "0.086", v[0] if v else None, W[8, 0], "W_pos[8][0]")
claim(3, "−0.047", v[1] if len(v) > 1 else None, W[8, 1], "W_pos[8][1]")
theta = [10000 ** (-2 * i / 32) for i in range(16)]
v = pane_line(4, "pos 8 angles (rad):")
claim(4, "8.000", v[0] if v else None, 8 * theta[0], "pair 0's angle at 8")
claim(4, "0.253", v[6] if len(v) > 6 else None, 8 * theta[6], "pair 6's angle at 8")
cl = next((l for l in screen(5).split("\n") if "at Δ 1:" in l), "")
pts = dict(re.findall(r"(\d+): (-?\d+\.\d+)", cl))
for d, said in (("8", "0.658"), ("16", "0.495")):
    claim(5, said, float(pts[d]) if d in pts else None, sum(math.cos(int(d) * t) for t in theta) / 16, f"q·k({d})/q·k(0)")
for e in errors:
    print("  " + e)
print(f"  lesson: {checked} claims checked, {len(errors)} wrong")
sys.exit(1 if errors else 0)
PYEOF
done

echo "positions e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
