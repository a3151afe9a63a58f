#!/bin/sh
# `view mlp`'s numbers are the capture's: the full-screen view driven in
# tmux shows the MLP of one layer at one token (`view mlp`), `view dump`
# writes the screen, and in the same session `dump` writes the hooks the
# MLP's activation reads and fills (pre, up where gated, post; a routed
# layer's expert indices and gates) as .npy. numpy then reads the screen
# back and compares:
#   - the table: each listed neuron's pre (gate), up and post equal the
#     arrays to the printed 3 decimals (half a unit of the last place, plus
#     1e-6 relative), act(gate) equals the formula computed here in float64
#     (GELU tanh form, SiLU, ReLU) to the same precision, and the rows are
#     the neurons of largest |post| in order;
#   - the formula: applied here to every neuron's captured pre (× up), it
#     gives the captured post within 1e-4 × (1 + |post|), and the pane's
#     title says so ("the formula gives post");
#   - the active share: the count of pre (gate) > 0, the neuron count and
#     the percentage (to its 0.1), and the inactive neurons' smallest act;
#   - the plot: the x range's labels are min(pre, 0) and max(pre, 0) to 2
#     decimals; rank digits 1-9 sit in the cell of their neuron's (pre,
#     act(pre)) (or under a better rank's digit in the same cell); the
#     histogram's every cell is the count of pre values in its column, in
#     eighths of the tallest;
#   - a routed layer: the title's expert is the token's chosen one
#     (hook_expert_indices), the listed gates are hook_expert_gates; the
#     shared expert's hooks when it is drawn.
# On austen-gpt2 (GELU, tanh form), austen-llama (SwiGLU), austen-moe (a
# dense SwiGLU layer, a routed layer's chosen expert and its shared
# expert) and de-en (ReLU; decoder and encoder), at 160x48, 120x35 and
# 80x24 (the plot beside the table, or above it).
#
# Then lesson mlp's claims (assets/lessons/mlp.txt): each number the
# lesson states is read from its text and compared with the arrays of the
# state the lesson's step sets up (the same prompt, layer and token).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/tmux_lib.sh"
e2e_setup attnscope-mlp
need_numpy
LESSON=$ROOT/assets/lessons/mlp.txt

PROMPT='It is a truth universally acknowledged, that a single man in possession of a good fortune'

cat > "$TMP/check.py" <<'EOF'
import math, re, sys
import numpy as np
from e2e_read import find_pane

base, act, kind, pos, layer = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
slot = int(sys.argv[6]) if len(sys.argv) > 6 else 0
gated = act == "silu"
pre = np.load(f"{base}-pre.npy").astype(np.float64)
post = np.load(f"{base}-post.npy").astype(np.float64)
up = np.load(f"{base}-up.npy").astype(np.float64) if gated else None
if kind != "dense":
    idx = np.load(f"{base}-idx.npy")
    gates = np.load(f"{base}-gates.npy")
if kind == "expert":
    pre, post, up = pre[:, slot], post[:, slot], up[:, slot]
x, p = pre[pos], post[pos]
u = up[pos] if gated else None

def f(v):
    v = np.asarray(v, dtype=np.float64)
    if act == "gelu":
        return 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
    if act == "silu":
        return v / (1 + np.exp(-v))
    return np.maximum(v, 0)

errors, checked = [], 0
def close(shown, want, what, places):
    global checked
    checked += 1
    if not abs(shown - want) <= 0.5 * 10 ** -places + 1e-6 * abs(want):
        errors.append(f"{what}: the pane shows {shown}, the arrays give {want}")
def same(a, b, what):
    global checked
    checked += 1
    if a != b:
        errors.append(f"{what}: the pane shows {a!r}, the arrays give {b!r}")

lines = open(f"{base}.txt", encoding="utf-8").read().split("\n")
top, col, end, pane = find_pane(lines, r"┌ (Encoder |Decoder )?MLP L\d")
title = lines[top][col:end]

# the title: layer, token, the drawn expert; the check of the formula
m = re.search(r"MLP L(\d+)(?: expert (\d+)| shared expert)?, (?:token|source) (\d+) ", title)
same(int(m.group(1)), layer, "title's layer")
same(int(m.group(3)), pos, "title's token")
if kind == "expert":
    same(int(m.group(2)), int(idx[pos, slot]), "the drawn expert")
if kind == "shared":
    same("shared expert" in title, True, "title names the shared expert")
checked += 1
if "✓ the formula gives post" not in title or "NOT" in title:
    errors.append(f"the title does not say the formula reproduces post: {title}")
calc = f(x) * u if gated else f(x)
checked += 1
if not np.all(np.abs(calc - p) <= 1e-4 * (1 + np.abs(p))):
    errors.append(f"the {act} formula does not give post: largest difference {np.abs(calc - p).max()}")
text = "\n".join(pane)
fns = {"gelu": ["post = gelu(pre)", "gelu(x) = 0.5x(1 + tanh("], "silu": ["SwiGLU: post = silu(gate) × up",
       "silu(x) = x·σ(x) = x/(1 + e^−x)"], "relu": ["post = relu(pre)", "relu(x) = max(0, x)"]}[act]
for fn in fns:
    checked += 1
    if fn not in text:
        errors.append(f"the formula line lacks {fn!r}")

# the routing line
if kind in ("expert", "shared"):
    rl = next(l for l in pane if "chose expert" in l)
    pairs = re.findall(r"(\d+) \((?:gate )?(\d\.\d+)\)", rl)
    same(len(pairs), idx.shape[1], "experts listed")
    for j, (e, g) in enumerate(pairs):
        same(int(e), int(idx[pos, j]), f"chosen expert {j}")
        close(float(g), gates[pos, j], f"expert {j}'s gate", 3)

# the active share
am = re.search(r"active \((pre|gate) > 0\): (\d+) of (\d+) neurons = ([\d.]+)%", text)
same(am.group(1), "gate" if gated else "pre", "the active line's input")
same(int(am.group(2)), int((x > 0).sum()), "active neurons")
same(int(am.group(3)), x.size, "neurons")
close(float(am.group(4)), 100 * (x > 0).sum() / x.size, "active share %", 1)
om = re.search(r"the other (\d+)(?: give exactly 0|: \w+\(\w+\) in \[(-?\d+\.\d+), 0\])", text)
if om:
    same(int(om.group(1)), int((x <= 0).sum()), "inactive neurons")
    if om.group(2):
        close(float(om.group(2)), f(x[x <= 0]).min(), "the inactive's smallest act", 3)
    else:
        same(act, "relu", "'exactly 0' said of relu")

# the table
hi = next(i for i, l in enumerate(pane) if re.search(r"#\s+neuron", l))
tcol = pane[hi].index("#") - 1
rows = []
for l in pane[hi + 1:]:
    r = re.match(r"\s*(\d+)\s+(\d+)((?:\s+-?\d+\.\d+){%d})" % (4 if gated else 2), l[tcol:])
    if not r:
        break
    rows.append((int(r.group(1)), int(r.group(2)), [float(t) for t in r.group(3).split()]))
if len(rows) < 5:
    errors.append(f"only {len(rows)} table rows read")
order = np.argsort(-np.abs(p), kind="stable")
for k, (rank, n, vals) in enumerate(rows):
    same(rank, k + 1, f"row {k}'s rank")
    close(abs(p[n]), abs(p[order[k]]), f"rank {rank}'s |post| (the {k + 1}th largest)", 6)
    close(vals[0], x[n], f"neuron {n}'s {'gate' if gated else 'pre'}", 3)
    if gated:
        close(vals[1], f(x[n]), f"neuron {n}'s {act}(gate)", 3)
        close(vals[2], u[n], f"neuron {n}'s up", 3)
    close(vals[-1], p[n], f"neuron {n}'s post", 3)

# the plot
xi = next(i for i, l in enumerate(pane) if re.match(r"^\s*(pre|gate) -?\d+\.\d+", l))
xl = pane[xi]
xm = re.match(r"^\s*(pre|gate) (-?\d+\.\d+)", xl)
px = xm.start(2)
side = hi < xi
region = xl[:tcol] if side else xl
nums = [(mm.start(), mm.group()) for mm in re.finditer(r"-?\d+\.\d+", region)]
lo, hi_ = min(x.min(), 0.0), max(x.max(), 0.0)
if hi_ - lo < 1e-6:
    lo, hi_ = lo - 1, hi_ + 1
same(xm.group(2), f"{lo:.2f}", "the x range's left label")
same(nums[-1][1], f"{hi_:.2f}", "the x range's right label")
C = nums[-1][0] + len(nums[-1][1]) - px
label = lambda l: l[px - 7:px - 1].strip()
isnum = lambda t: re.fullmatch(r"-?\d+(\.\d*)?(e[+-]?\d+)?", t) is not None
ci = next(i for i in range(xi) if label(pane[i]) == "count")
ptop = next(i for i in range(ci) if isnum(label(pane[i])))
pbot = max(i for i in range(ci) if isnum(label(pane[i])))
R, hr = pbot - ptop + 1, ci - pbot
ys = [float(f(lo + c * (hi_ - lo) / (4 * C))) for c in range(4 * C + 1)]
ylo, yhi = min(0.0, min(ys)), max(0.0, max(ys))
def col_of(v):
    return min(max(int(math.floor((v - lo) / (hi_ - lo) * C)), 0), C - 1)
def dot_row(y):
    t = (yhi - y) / (yhi - ylo) * (4 * R - 1)
    r = int(math.floor(t + 0.5)) if t >= 0 else -int(math.floor(-t + 0.5))
    return min(max(r, 0), 4 * R - 1)
for k in range(min(9, len(order))):
    n = order[k]
    cy, cx = ptop + dot_row(float(f(x[n]))) // 4, px + col_of(x[n])
    ch = pane[cy][cx] if cx < len(pane[cy]) else " "
    checked += 1
    if not (ch.isdigit() and 1 <= int(ch) <= k + 1):
        errors.append(f"rank {k + 1} (neuron {n}) should be marked at row {cy - ptop}, column {cx - px}: found {ch!r}")
cnt = np.zeros(C, dtype=int)
for v in x:
    cnt[col_of(v)] += 1
most = cnt.max()
blocks = " ▁▂▃▄▅▆▇█"
for c in range(C):
    lev = math.ceil(cnt[c] / most * 8 * hr) if cnt[c] else 0
    for k in range(hr):
        fill = min(max(lev - 8 * k, 0), 8)
        ch = pane[ci - k][px + c] if px + c < len(pane[ci - k]) else " "
        checked += 1
        if ch != blocks[fill]:
            errors.append(f"histogram column {c} row {k}: {ch!r}, the counts give {blocks[fill]!r} ({cnt[c]} of most {most})")
            break
for e in errors[:20]:
    print("  " + e)
print(f"  {checked} checks, {len(errors)} failed ({'side by side' if side else 'stacked'}, {R} curve rows, {C} columns)")
sys.exit(1 if errors or checked < 40 else 0)
EOF

# check NAME MODEL COLS ROWS LAYER POS ACT KIND PREFIX "SETUP" [KEYS...]
# KIND: dense, expert (slot 0) or shared; PREFIX: the hooks' scope
# (blocks.1.mlp, decoder.1.mlp, ...).
check() {
    name=$1 model=$2 cols=$3 rows=$4 layer=$5 pos=$6 act=$7 kind=$8 prefix=$9
    shift 9
    setup=$1
    shift
    view_start "$name" "$MODELS/$model.gguf" "$cols" "$rows" || return
    typed "$name" "$setup; view mlp"
    keys "$name" Enter
    wait_for "$name" 'MLP L' 30 || { bad "$name: no MLP pane"; return; }
    if [ $# -gt 0 ]; then
        keys "$name" Escape
        wait_for "$name" 'press : to type a command' || bad "$name: Esc did not leave the command line"
        keys "$name" "$@"
        sleep 0.3
        typed "$name" ":"
    fi
    case $kind in
    expert) h=$prefix.experts ;;
    shared) h=$prefix.shared ;;
    *) h=$prefix ;;
    esac
    up=""
    [ "$act" = silu ] && up="; dump $h.hook_pre_linear $name-up.npy"
    route=""
    [ "$kind" = dense ] || route="; dump $prefix.hook_expert_indices $name-idx.npy; dump $prefix.hook_expert_gates $name-gates.npy"
    view_run "$name" "view dump $name.txt; dump $h.hook_pre $name-pre.npy$up$route; dump $h.hook_post $name-post.npy" \
        30 "$name.txt" "$name-post.npy" || return
    echo "$name:"
    if $PY "$TMP/check.py" "$TMP/$name" "$act" "$kind" "$pos" "$layer"; then pass=$((pass + 1)); else bad "$name: the pane's numbers are not the capture's"; fi
}

S="set delay 0; prompt $PROMPT; finish"
check p-gpt2-160 austen-gpt2 160 48 1 8 gelu dense blocks.1.mlp "$S; view layer 1; view pos 8"
check p-gpt2-80 austen-gpt2 80 24 1 12 gelu dense blocks.1.mlp "$S; view layer 1; view pos 12"
check p-gpt2-120 austen-gpt2 120 35 3 20 gelu dense blocks.3.mlp "$S; view layer 3; view pos 20"
check p-llama-120 austen-llama 120 35 1 8 silu dense blocks.1.mlp "$S; view layer 1; view pos 8"
check p-llama-80 austen-llama 80 24 2 5 silu dense blocks.2.mlp "$S; view layer 2; view pos 5"
check p-moe-160 austen-moe 160 48 1 8 silu expert blocks.1.mlp "$S; view layer 1; view pos 8"
check p-moe-80 austen-moe 80 24 0 8 silu dense blocks.0.mlp "$S; view layer 0; view pos 8"
# Left from the first chosen expert wraps to the shared one
check p-moe-120 austen-moe 120 35 2 5 silu shared blocks.2.mlp "$S; view layer 2; view pos 5" Left
check p-deen-160 de-en 160 48 1 2 relu dense decoder.1.mlp "set delay 0; source Der Mann ist gut.; prompt The man; finish; view layer 1; view pos 2"
# the encoder's MLP at its row 3 (J moves the encoder heatmap's row)
check p-deen-enc-80 de-en 80 24 2 3 relu dense encoder.2.mlp "set delay 0; source Der Mann ist gut.; prompt The man; finish; view layer 2; view site encoder" J J J

# ---- lesson mlp: each number it states, against the arrays ----
run_dumps() {
    "$BIN" -m "$MODELS/$1.gguf" --threads 1 -e "$2" > "$TMP/$1.log" 2>&1 || bad "lesson check: $1's dumps failed: $(tail -3 "$TMP/$1.log")"
}
run_dumps austen-gpt2 "prompt $PROMPT; finish; tokens; dump blocks.1.mlp.hook_pre $TMP/l-gpre.npy; dump blocks.1.mlp.hook_post $TMP/l-gpost.npy"
run_dumps austen-llama "prompt $PROMPT; finish; tokens; dump blocks.1.mlp.hook_pre $TMP/l-lpre.npy; dump blocks.1.mlp.hook_pre_linear $TMP/l-lup.npy; dump blocks.1.mlp.hook_post $TMP/l-lpost.npy"
echo "lesson mlp:"
if $PY - "$TMP" "$LESSON" <<'EOF'; then pass=$((pass + 1)); else bad "lesson mlp states what the arrays do not"; fi
import math, re, sys
import numpy as np
tmp, lesson = sys.argv[1], sys.argv[2]
# the lesson's prose: its lines that are no command, comment or header, joined
lines = open(lesson, encoding="utf-8").read().split("\n")
prose = " ".join(" ".join(l for l in lines if not l.startswith((":", "#", "title:", "model:", "---"))).split())
gp, gq = np.load(f"{tmp}/l-gpre.npy").astype(np.float64), np.load(f"{tmp}/l-gpost.npy").astype(np.float64)
lp, lu, lq = (np.load(f"{tmp}/l-l{n}.npy").astype(np.float64) for n in ("pre", "up", "post"))
gtok = [l.split("\t") for l in open(f"{tmp}/austen-gpt2.log", encoding="utf-8") if re.match(r"^\d+\t", l)]
ltok = [l.split("\t") for l in open(f"{tmp}/austen-llama.log", encoding="utf-8") if re.match(r"^\d+\t", l)]
gelu = lambda v: 0.5 * v * (1 + np.tanh(math.sqrt(2 / math.pi) * (v + 0.044715 * v ** 3)))
gelu_erf = lambda v: 0.5 * v * (1 + np.vectorize(math.erf)(v / math.sqrt(2)))
silu = lambda v: v / (1 + np.exp(-v))
grid = np.linspace(-6, 2, 800001)
errors, checked = [], 0
def need(pattern):
    m = re.search(pattern, prose)
    if not m:
        errors.append(f"the lesson no longer says {pattern!r}")
    return m
def eq(a, b, what):
    global checked
    checked += 1
    if a != b:
        errors.append(f"{what}: the lesson says {a}, the arrays give {b}")
pct = lambda v: f"{100 * (v > 0).sum() / v.size:.1f}"
# step 1: 1024 neurons
m = need(r"widens the token's vector to (\d+) neurons")
if m: eq(int(m.group(1)), gp.shape[1], "GPT-2's neurons")
# step 2: GELU's least value; the active count at token 8 ("ally")
m = need(r"never below (-\d\.\d+)\)")
if m: eq(m.group(1), f"{gelu(grid).min():.3f}", "GELU's minimum")
m = need(r"only (\d+) of (\d+) neurons are active \((\d+\.\d)%\)")
if m:
    eq(int(m.group(1)), int((gp[8] > 0).sum()), "active at token 8")
    eq(int(m.group(2)), gp.shape[1], "neurons")
    eq(m.group(3), pct(gp[8]), "active share at token 8")
m = need(r"Most pre values are negative")
if m: eq(True, (gp[8] < 0).mean() > 0.5, "most pre values negative at token 8")
# step 3: the comma, its share and top neuron; "ally"'s top neuron
m = need(r"At the comma \(token (\d+)\) only (\d+\.\d)% fire and neuron (\d+) leads; at \"(\w+)\" it was neuron (\d+)")
if m:
    t = int(m.group(1))
    eq(gtok[t][2], ",", f"token {t}")
    eq(m.group(2), pct(gp[t]), f"active share at token {t}")
    eq(int(m.group(3)), int(np.abs(gq[t]).argmax()), f"the top neuron at token {t}")
    eq(m.group(4), gtok[8][2], "token 8")
    eq(int(m.group(5)), int(np.abs(gq[8]).argmax()), "the top neuron at token 8")
# step 4: the tanh form reproduces post; the erf form's largest difference in the layer
need(r"GPT-2 uses GELU's tanh form")
checked += 1
if not np.all(np.abs(gelu(gp) - gq) <= 1e-5 * (1 + np.abs(gq))):
    errors.append("the tanh form does not reproduce GPT-2's post")
m = need(r"would be off by up to (\d\.\d+) in this layer")
if m: eq(m.group(1), f"{np.abs(gelu_erf(gp) - gq).max():.4f}", "the erf form's largest difference")
# step 5-7: Llama's gated MLP at token 8
eq(ltok[8][2], "ally", "Llama's token 8")
m = need(r"The top neuron \((\d+)\) has gate (-?\d+\.\d+), which SiLU passes, but up is (-?\d+\.\d+): its post is (-?\d+\.\d+)")
if m:
    n = int(np.abs(lq[8]).argmax())
    eq(int(m.group(1)), n, "Llama's top neuron at token 8")
    eq(m.group(2), f"{lp[8, n]:.3f}", "its gate")
    eq(m.group(3), f"{lu[8, n]:.3f}", "its up")
    eq(m.group(4), f"{lq[8, n]:.3f}", "its post")
    eq(True, lp[8, n] > 0 and lq[8, n] < -0.170, "a positive gate, a post below GELU's least")
m = need(r"SiLU too dips below 0 \(to (-\d\.\d+)\)")
if m: eq(m.group(1), f"{silu(grid).min():.3f}", "SiLU's minimum")
m = need(r"Here (\d+) of (\d+) gates are positive \((\d+\.\d)%\), against (\d+\.\d)% of GPT-2's neurons at the same word")
if m:
    eq(int(m.group(1)), int((lp[8] > 0).sum()), "Llama's positive gates at token 8")
    eq(int(m.group(2)), lp.shape[1], "Llama's neurons")
    eq(m.group(3), pct(lp[8]), "Llama's share")
    eq(m.group(4), pct(gp[8]), "GPT-2's share at token 8")
    eq(gtok[8][2], ltok[8][2], "the same word")
checked += 1
for e in errors:
    print("  " + e)
print(f"  {checked} claims checked, {len(errors)} wrong")
sys.exit(1 if errors else 0)
EOF

echo "mlp e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
