#!/bin/sh
# `weight`, `circuit` and `steer` against NumPy on the weights read by an
# independent GGUF reader (tests/e2e/e2e_read.py, from the format's spec):
# - weight: the .npy of a matrix, the embedding and a norm vector equal the
#   reader's arrays bit for bit, in the same shape (gguf-py's: ne reversed);
#   the summary's shape, min, max and first value agree with them (to the
#   printed 6 significant digits);
# - circuit ov|qk L.H: the [vocab, vocab] .npy equals NumPy's product of
#   the same matrices in float64 (the norm weights folded, the embedding
#   scale sqrt(d_model) on Gemma) within 1e-4 of its largest |entry|; the
#   copying score equals NumPy's sum(eig)/sum(|eig|) of W_O W_U W_E W_V
#   within 1e-4, the count of positive eigenvalues exactly, the top pairs'
#   values NumPy's largest entries within 1e-4 of the largest, and the
#   "own token first" share exactly; on induction (plain heads), austen-gpt2
#   (a fused q/k/v matrix, LayerNorm, tied unembedding), tiny-llama3 and
#   tiny-gemma2 (grouped-query heads: head h reads kv head h // (H/H_kv));
#   on induction the four induction heads 1.x (models/README.md) score
#   above 0.9 and the previous-token head 0.3 below 0.5; the figures are
#   written as PNG, SVG and PDF;
# - steer: a zero vector changes no logit's bits; steering the last
#   layer's resid_post by v at one position changes only that position's
#   logits, to W_U · rmsnorm(resid_post + scale·v) computed here (within
#   1e-4 of the largest |logit|); `ablations` lists the rule and
#   `unablate` gives the first logits back bit for bit;
# - export lens: written as PNG, SVG and PDF, refused before the pass,
#   for an array, and on a model without an unembedding;
# - wrong input is refused with a message naming it (a FIFO at once; the loaded model,
#   even through a link, never written over).
set -u
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$HERE/../..
M=$ROOT/models
F=$ROOT/tests/fixtures
PY=/usr/bin/python3
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
bad() {
    fail=$((fail + 1))
    echo "FAIL: $1"
}
# refused WANT CMDS [MODEL]: the commands fail with a message holding WANT
refused() {
    want=$1 cmds=$2 model=${3:-$M/induction.gguf}
    out=$("$BIN" -m "$model" -e "$cmds" 2>&1) && { bad "'$cmds' was not refused"; return; }
    case $out in
    *"$want"*) pass=$((pass + 1)) ;;
    *) bad "'$cmds': expected '$want', got: $out" ;;
    esac
}
$PY -c 'import numpy' 2>/dev/null || { echo "FAIL: $PY with numpy is needed"; exit 1; }

# ---- weight
if "$BIN" -m "$M/induction.gguf" -e "weight blk.1.attn_v.weight $TMP/wv.npy; weight token_embd.weight $TMP/we.npy; weight output_norm.weight $TMP/wn.npy; weight blk.1.attn_v.weight" > "$TMP/weight.txt" 2>&1 &&
    PYTHONPATH=$HERE $PY - "$M/induction.gguf" "$TMP" <<'PYEOF'; then pass=$((pass + 1)); else bad "weight: not the file's tensors"; fi
import sys
import numpy as np
from e2e_read import read_gguf
kv, T = read_gguf(sys.argv[1])
d = sys.argv[2]
for f, name in (("wv", "blk.1.attn_v.weight"), ("we", "token_embd.weight"), ("wn", "output_norm.weight")):
    a, want = np.load(f"{d}/{f}.npy"), T[name]
    assert a.dtype == np.float32 and a.shape == want.shape, (name, a.shape, want.shape)
    assert np.array_equal(a, want), name
out = open(f"{d}/weight.txt").read()
w = T["blk.1.attn_v.weight"]
field = dict(l.split("\t", 1) for l in out.splitlines() if "\t" in l)
assert field["shape"].startswith("(%d, %d)" % w.shape), field["shape"]
# printed to 6 significant digits
for shown, want in ((field["min"], w.min()), (field["max"], w.max()), (field["first"].split()[0], w.flat[0])):
    assert abs(float(shown) - want) <= 5e-6 * abs(want) + 1e-12, (shown, want)
print("weight: 3 tensors equal the reader's bit for bit; summary agrees")
PYEOF

# ---- circuit: check MODEL KIND L.H [top]
circuit() {
    name=$1 model=$2 kind=$3 lh=$4
    if ! "$BIN" -m "$model" -e "circuit $kind $lh top=5 $TMP/$name.npy" > "$TMP/$name.txt" 2>&1; then
        bad "circuit $kind $lh on $name: $(tail -1 "$TMP/$name.txt")"
        return
    fi
    if PYTHONPATH=$HERE $PY - "$model" "$kind" "$lh" "$TMP/$name" <<'PYEOF'; then pass=$((pass + 1)); else bad "circuit $kind $lh on $name: not NumPy's"; fi
import sys
import numpy as np
from e2e_read import read_gguf
model, kind, lh, base = sys.argv[1:5]
kv, T = read_gguf(model)
arch = kv["general.architecture"]
l, h = map(int, lh.split("."))
H, Hk = kv[arch + ".attention.head_count"], kv.get(arch + ".attention.head_count_kv", kv[arch + ".attention.head_count"])
d = kv[arch + ".embedding_length"]
B = lambda n: T[f"blk.{l}.{n}"].astype(np.float64)
if f"blk.{l}.attn_qkv.weight" in T:
    qkv = B("attn_qkv.weight")
    dh = d // H
    wq, wk, wv = qkv[:H * dh], qkv[H * dh:H * dh + Hk * dh], qkv[H * dh + Hk * dh:]
else:
    wq, wk, wv = B("attn_q.weight"), B("attn_k.weight"), B("attn_v.weight")
    dh = wq.shape[0] // H
kvh = h // (H // Hk)
E = T["token_embd.weight"].astype(np.float64)
if arch.startswith("gemma"):
    E = E * np.float32(np.sqrt(d))
E1 = E * B("attn_norm.weight")
if kind == "ov":
    U = T.get("output.weight", T["token_embd.weight"]).astype(np.float64) * T["output_norm.weight"]
    A = E1 @ wv[kvh * dh:(kvh + 1) * dh].T
    Bm = B("attn_output.weight")[:, h * dh:(h + 1) * dh].T @ U.T
else:
    A = E1 @ wq[h * dh:(h + 1) * dh].T
    Bm = (E1 @ wk[kvh * dh:(kvh + 1) * dh].T).T
Mx = A @ Bm
got = np.load(base + ".npy")
assert got.shape == Mx.shape, (got.shape, Mx.shape)
big = np.abs(Mx).max()
err = np.abs(got - Mx).max() / big
assert err <= 1e-4, f"matrix: max |diff| / max |M| = {err:.3g}"
text = open(base + ".txt").read()
field = {l.split("\t")[0]: l.split("\t")[1:] for l in text.splitlines() if "\t" in l}
n = min(Mx.shape)
own = np.mean(np.argmax(Mx[:n], axis=1) == np.arange(n))
assert abs(float(field["own token first"][0]) - own) < 5e-5, (field["own token first"], own)
top = np.sort(Mx.ravel())[::-1][:5]
shown = [float(l.split("\t")[3]) for l in text.splitlines() if l[:1].isdigit() and l.count("\t") == 3]
assert len(shown) == 5 and np.abs(np.array(shown) - top).max() <= 1e-4 * big, (shown, top)
msg = ""
if kind == "ov":
    lam = np.linalg.eigvals(Bm @ A)
    score = lam.real.sum() / np.abs(lam).sum()
    assert abs(float(field["copying score"][0]) - score) <= 1e-4, (field["copying score"], score)
    pos = int(np.sum((lam.imag == 0) & (lam.real > 0)))
    assert field["positive eigenvalues"][0] == f"{pos} of {dh}", (field["positive eigenvalues"], pos)
    msg = f", copying score {score:.4f}"
print(f"circuit {kind} {lh} of {model.split('/')[-1]}: max |diff| / max |M| = {err:.2g}{msg}")
PYEOF
}
for h in 0 1 2 3; do circuit ind-ov-1$h "$M/induction.gguf" ov 1.$h; done
circuit ind-ov-03 "$M/induction.gguf" ov 0.3
circuit ind-qk-10 "$M/induction.gguf" qk 1.0
circuit gpt2-ov "$M/austen-gpt2.gguf" ov 2.5
circuit gpt2-qk "$M/austen-gpt2.gguf" qk 0.1
circuit llama3-ov "$F/tiny-llama3.gguf" ov 1.3
circuit llama3-qk "$F/tiny-llama3.gguf" qk 0.2
circuit gemma2-ov "$F/tiny-gemma2.gguf" ov 0.3
circuit gemma2-qk "$F/tiny-gemma2.gguf" qk 1.1
# the induction heads copy, the previous-token head does not (models/README.md names them)
for h in 0 1 2 3; do
    s=$(awk -F'\t' '$1 == "copying score" {print $2}' "$TMP/ind-ov-1$h.txt")
    awk -v s="$s" 'BEGIN {exit !(s > 0.9)}' && pass=$((pass + 1)) || bad "induction head 1.$h: copying score $s, not above 0.9"
done
s=$(awk -F'\t' '$1 == "copying score" {print $2}' "$TMP/ind-ov-03.txt")
awk -v s="$s" 'BEGIN {exit !(s < 0.5)}' && pass=$((pass + 1)) || bad "previous-token head 0.3: copying score $s, not below 0.5"

# the figure: a PNG, an SVG and a PDF of the circuit over its top pairs' tokens
if "$BIN" -m "$M/induction.gguf" -e "circuit ov 1.0 top=8 $TMP/ov.png; circuit qk 1.0 $TMP/qk.svg width=12cm; circuit ov 0.3 $TMP/ov.pdf" > "$TMP/fig.txt" 2>&1 &&
    [ "$(head -c 8 "$TMP/ov.png" | od -An -c | tr -d ' ')" = '211PNG\r\n032\n' ] &&
    grep -q '<svg' "$TMP/qk.svg" && [ "$(head -c 4 "$TMP/ov.pdf")" = '%PDF' ] &&
    [ "$(grep -c '^wrote ' "$TMP/fig.txt")" = 3 ]; then
    pass=$((pass + 1))
else
    bad "circuit figures: $(cat "$TMP/fig.txt")"
fi

# ---- steer
P='abcabcabcxyz'
$PY - "$TMP" <<'PYEOF'
import sys
import numpy as np
np.save(sys.argv[1] + "/zero.npy", np.zeros(128, np.float32))
np.save(sys.argv[1] + "/v.npy", np.random.default_rng(3).standard_normal(128))  # float64: read as float32
PYEOF
if "$BIN" -m "$M/induction.gguf" -e "prompt $P; finish; dump unembed.hook_out $TMP/l0.npy; dump blocks.1.hook_resid_post $TMP/r.npy; steer blocks.1.hook_resid_post $TMP/zero.npy; dump unembed.hook_out $TMP/lz.npy; unablate; steer blocks.1.hook_resid_post $TMP/v.npy scale=2.5 pos=4; ablations; dump unembed.hook_out $TMP/ls.npy; unablate; ablations; dump unembed.hook_out $TMP/lu.npy" > "$TMP/steer.txt" 2>&1 &&
    PYTHONPATH=$HERE $PY - "$M/induction.gguf" "$TMP" <<'PYEOF'; then pass=$((pass + 1)); else bad "steer: not NumPy's logits"; cat "$TMP/steer.txt"; fi
import sys
import numpy as np
from e2e_read import read_gguf
kv, T = read_gguf(sys.argv[1])
d = sys.argv[2]
l0, lz, ls, lu, r = (np.load(f"{d}/{n}.npy") for n in ("l0", "lz", "ls", "lu", "r"))
assert np.array_equal(l0, lz), "steering by zero changed the logits"
assert np.array_equal(l0, lu), "unablate did not give the logits back"
others = [p for p in range(l0.shape[0]) if p != 4]
assert np.array_equal(ls[others], l0[others]), "steering at pos=4 changed another position"
v = np.load(f"{d}/v.npy").astype(np.float32).astype(np.float64)
x = r[4].astype(np.float64) + 2.5 * v
eps = kv["llama.attention.layer_norm_rms_epsilon"]
y = x / np.sqrt(np.mean(x * x) + eps) * T["output_norm.weight"]
want = T["output.weight"] @ y
err = np.abs(ls[4] - want).max() / np.abs(want).max()
assert err <= 1e-4, f"steered logits: max |diff| / max |logit| = {err:.3g}"
assert np.abs(ls[4] - l0[4]).max() > 0.1, "the steering changed nothing"
out = open(f"{d}/steer.txt").read()
assert "steer by v.npy scale=2.5 pos=4" in out and "no ablations or patches" in out, out
print(f"steer: zero and unablate bit for bit, pos 4 steered: max |diff| / max |logit| = {err:.2g}")
PYEOF

# ---- export lens: the figure in three formats, its cells the tokens `lens table` prints
if "$BIN" -m "$M/austen-gpt2.gguf" -e "prompt It is a truth universally acknowledged; finish; export lens $TMP/lens.png; export lens $TMP/lens.svg width=18cm; export lens $TMP/lens.pdf" > "$TMP/lens.txt" 2>&1 &&
    [ "$(grep -c '^wrote .*logit lens' "$TMP/lens.txt")" = 3 ] && [ "$(head -c 4 "$TMP/lens.pdf")" = '%PDF' ] &&
    grep -q '<svg' "$TMP/lens.svg"; then
    pass=$((pass + 1))
else
    bad "export lens: $(cat "$TMP/lens.txt")"
fi
refused "the pass has not reached every position" "prompt It is; export lens $TMP/l.png" "$M/austen-gpt2.gguf"
refused "lens table FILE.npy" "prompt It is; finish; export lens $TMP/l.npy" "$M/austen-gpt2.gguf"
refused "needs an unembedding" "prompt-ids 1 2 3; finish; export lens $TMP/l.png" "$F/tiny-t5encoder.gguf"

# ---- bad input, one message naming what
printf 'this is a text file and no array at all, long enough for a header\n' > "$TMP/junk.npy"
refused "no tensor 'blk.9.attn_q.weight'" "weight blk.9.attn_q.weight"
refused "is not one" "weight token_embd.weight $TMP/x.png"
refused "usage: weight" "weight"
refused "the layer" "circuit ov 7.0"
refused "the head" "circuit ov 1.9"
refused "neither ov nor qk" "circuit vo 1.0"
refused "not LAYER.HEAD" "circuit ov 1"
refused "normalized per head" "circuit qk 0.0" "$F/tiny-qwen3.gguf"
refused "not linear" "circuit ov 0.0" "$M/austen-bert.gguf"
$PY -c "import numpy as np; np.save('$TMP/three.npy', np.zeros(3, np.float32))"
refused "holds 3 values" "steer blocks.0.hook_resid_pre $TMP/three.npy"
refused "no hook point named" "steer blocks.9.hook_resid_pre $TMP/zero.npy"
refused "not a NumPy .npy file" "steer blocks.0.hook_resid_pre $TMP/junk.npy"
refused "attention scores" "steer blocks.0.attn.hook_pattern $TMP/zero.npy"
refused "neither scale=S nor pos=P" "steer blocks.0.hook_resid_pre $TMP/zero.npy sale=2"
refused "cannot write in directory /proc/nonexistent" "weight token_embd.weight /proc/nonexistent/x.npy"

# a FIFO as the vector is refused at once, never read (it would block)
mkfifo "$TMP/fifo.npy"
out=$(timeout 10 "$BIN" -m "$M/induction.gguf" -e "steer blocks.0.hook_resid_pre $TMP/fifo.npy" 2>&1 </dev/null)
rc=$?
if [ "$rc" = 124 ]; then bad "steer from a FIFO: still waiting after 10 s"
elif [ "$rc" = 0 ]; then bad "steer from a FIFO was not refused"
else case $out in *FIFO*|*fifo*) pass=$((pass + 1)) ;; *) bad "steer from a FIFO: $out" ;; esac
fi
# the loaded model is never written over, even through a link named .npy
cp "$M/induction.gguf" "$TMP/m.gguf" && ln -s "$TMP/m.gguf" "$TMP/link.npy"
refused "a model file in use" "weight token_embd.weight $TMP/link.npy" "$TMP/m.gguf"
cmp -s "$M/induction.gguf" "$TMP/m.gguf" && pass=$((pass + 1)) || bad "weight wrote over the loaded model"

echo "circuits: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
