#!/bin/sh
# `view residual`'s numbers are the capture's, and its wiring is the
# model's: the full-screen view driven in tmux at 160x48 shows the
# residual stream at one token (`view residual` at a layer and pos), `view
# dump` writes the screen, and in the same session `dump all` writes every
# hook as .npy; numpy then reads the pane back and checks
#  - every cell of the table: the L2 norm of the hook its column names
#    (hook_resid_pre, hook_resid_mid, a norm's hook_normalized, ...) at
#    that layer and token, to the printed precision (4 significant digits:
#    |shown - numpy| <= half a unit of the last printed digit, + 1e-6
#    relative; the capture is float32, numpy sums in float64);
#  - the columns (which points of the stream, in order), the selected
#    layer's row marked, the final norm's line (its input and output
#    norms) or its absence, what each branch adds (hook_attn_out, ...);
#  - the wiring: Pre-LN (a norm opening each branch: gpt2, llama, moe),
#    Post-LN (a norm on the stream after each add: austen-bert and de-en's
#    decoder, with its cross-attention's add and third norm), and Gemma 2's
#    sandwich (a norm opening and one closing each branch: the tiny-gemma2
#    fixture), each as the title's note and the schematic's lines; and on
#    more fixtures (gemma3, t5 with its cross-attention and encoder, nomic-
#    bert, vit, qwen2moe, deepseek2) the note and the schematic's pieces.
# Then lesson prepost's claims, each phrase found in the lesson's text and
# its numbers checked against the arrays of the same prompts (batch mode).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/tmux_lib.sh"
e2e_setup attnscope-resid
need_numpy
FIXTURES=$HERE/../fixtures
LESSON=$ROOT/assets/lessons/prepost.txt

PROMPT='It is a truth universally acknowledged, that a single man in possession of a good fortune'

# check NAME MODEL-PATH "COMMANDS" LAYER SPEC-JSON: the commands set the
# context and finish the pass; the pane is shown at LAYER (and the pos the
# commands chose), dumped with every hook, and read back against SPEC.
check() {
    name=$1 model=$2 cmds=$3 layer=$4 spec=$5
    view_start "$name" "$model" 160 48 || return
    view_run "$name" "set delay 0; $cmds; view layer $layer; view residual; view dump $name.txt; dump all $name-hooks" \
        30 "$name.txt" "$name-hooks/index.json" || return
    if $PY - "$TMP/$name" "$layer" "$spec" <<'EOF'; then pass=$((pass + 1)); else bad "$name: the pane is not the capture's or the model's wiring"; fi
import json, re, sys
import numpy as np
from e2e_read import find_pane
base, layer, spec = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
lines = open(f"{base}.txt", encoding="utf-8").read().split("\n")
top, col, right, pane = find_pane(lines, "┌ Residual")
pane = [r.rstrip() for r in pane]
title = lines[top][col:]
errors, checked = [], 0
def hook(name):
    return np.load(f"{base}-hooks/{name}.npy").astype(np.float64)
def norm(name, pos):
    return float(np.linalg.norm(hook(name)[pos].ravel()))
def close(text, want, what):
    global checked
    checked += 1
    d = len(text.split(".")[1]) if "." in text else 0
    if not abs(float(text) - want) <= 0.5 * 10 ** -d + 1e-6 * abs(want):
        errors.append(f"{what}: the pane shows {text}, numpy gives {want:.6f}")
def must(cond, what):
    global checked
    checked += 1
    if not cond:
        errors.append(what)
m = re.search(r"token (\d+) ", title)
must(m is not None, f"no token in the title: {title}")
pos = int(m.group(1)) if m else 0
must(spec["kind"] in title, f"the title's note does not say {spec['kind']}: {title}")
# the wiring: the schematic's lines hold the expected pieces
text = "\n".join(pane)
for piece in spec["wiring"]:
    must(piece in text, f"the schematic lacks {piece!r}")
for piece in spec.get("not", []):
    must(piece not in text, f"the schematic shows {piece!r}, which this model does not have")
for piece in spec.get("lines", []):
    must(piece in text, f"the pane lacks the line {piece!r}")
# the table
hi = next(i for i, l in enumerate(pane) if l.strip().startswith("layer"))
labels = pane[hi].split()[1:]
must(labels == [c[0] for c in spec["cols"]], f"columns {labels}, expected {[c[0] for c in spec['cols']]}")
rows, marked = 0, None
for l in pane[hi + 1:]:
    m = re.match(r"^\s*(>?)L(\d+)\s+(.*)$", l)
    if not m:
        break
    L = int(m.group(2))
    if m.group(1):
        marked = L
    nums = re.findall(r"\d+\.\d+|\d+", m.group(3))
    must(len(nums) == len(spec["cols"]), f"L{L}: {len(nums)} numbers for {len(spec['cols'])} columns")
    for (lab, suffix), t in zip(spec["cols"], nums):
        close(t, norm(f"{spec['scope']}.{L}.{suffix}", pos), f"L{L} {lab} ({suffix})")
    rows += 1
must(rows == spec["layers"], f"{rows} layer rows, the model has {spec['layers']}")
must(marked == layer, f"the marked row is L{marked}, the selected layer {layer}")
# the final norm: its input (the last block's last column) and output
last = f"{spec['scope']}.{spec['layers'] - 1}.{spec['cols'][-1][1]}"
fl = next((l for l in pane if "final norm" in l or l.strip().startswith("final ")), "")
if spec["final"]:
    m = re.search(r"final (LayerNorm|RMSNorm) \((\S+)\): (\d+\.\d+) → (\d+\.\d+)", fl)
    must(m is not None and m.group(2) == spec["final"], f"the final norm's line: {fl!r}")
    if m:
        close(m.group(3), norm(last, pos), "the final norm's input")
        close(m.group(4), norm(f"{spec['final']}.hook_normalized", pos), "the final norm's output")
else:
    must("no final norm" in fl, f"no final norm expected: {fl!r}")
# what each branch of the selected block adds
flat = " ".join(l.strip() for l in pane)
adds = re.findall(r"(\w+) ‖·‖ (\d+\.\d+) \(([\w.]+)\)", flat)
must([a[0] for a in adds] == spec["branches"], f"branches {[a[0] for a in adds]}, expected {spec['branches']}")
for name, t, h in adds:
    close(t, norm(f"{spec['scope']}.{layer}.{h}", pos), f"L{layer} adds {name} ({h})")
# the block's output at every token: one character a token on one scale
# (level = floor(8 * norm / the largest), the eighth blocks), min and max
si = next((i for i, l in enumerate(pane) if l.strip().startswith("block output (")), None)
must(si is not None, "no every-token strip")
if si is not None:
    m = re.search(r"block output \((\S+)\), tokens (\d+)-(\d+):", pane[si])
    must(m is not None and m.group(1) == spec["cols"][-1][0], f"the strip's title: {pane[si]!r}")
    t0, t1 = int(m.group(2)), int(m.group(3))
    suffix = spec["cols"][-1][1]
    allv = np.array([[np.linalg.norm(r) for r in hook(f"{spec['scope']}.{L}.{suffix}").reshape(-1, hook(f"{spec['scope']}.{L}.{suffix}").shape[-1])]
                     for L in range(spec["layers"])])
    top = allv.max()
    for L in range(spec["layers"]):
        m = re.match(r"^\s*>?L(\d+)\s+(\S+)\s+(\d+\.\d+)\s+(\d+\.\d+)$", pane[si + 1 + L])
        must(m is not None and int(m.group(1)) == L, f"strip row {L}: {pane[si + 1 + L]!r}")
        if not m:
            continue
        strip = m.group(2)
        want = "".join("▁▂▃▄▅▆▇█"[min(7, int(v / top * 8))] for v in allv[L, t0:t1 + 1])
        must(strip == want, f"L{L} strip {strip}, expected {want}")
        close(m.group(3), allv[L].min(), f"L{L} least over the tokens")
        close(m.group(4), allv[L].max(), f"L{L} largest over the tokens")
if "n/c" in flat or re.search(r"\s-\s", " ".join(pane[hi + 1:hi + 1 + rows]) + " "):
    errors.append("a cell is not computed or not captured")
for e in errors:
    print("  " + e)
print(f"  {checked} checks, {len(errors)} failed")
sys.exit(1 if errors or checked < 15 else 0)
EOF
}

# GPT-2: Pre-LN, LayerNorm; the final ln_final.
check r-gpt2 "$MODELS/austen-gpt2.gguf" "prompt $PROMPT; finish; view pos 8" 1 '{
 "kind": "Pre-LN │ LayerNorm", "scope": "blocks", "layers": 4,
 "cols": [["pre", "hook_resid_pre"], ["+attn", "hook_resid_mid"], ["+MLP", "hook_resid_post"]],
 "wiring": ["└─LayerNorm─attn─┘", "└─LayerNorm─MLP─┘", "(+)─┬"], "not": ["(+)─LayerNorm", "RMSNorm"],
 "final": "ln_final", "branches": ["attn", "MLP"]}'
# Llama: Pre-LN with RMSNorm.
check r-llama "$MODELS/austen-llama.gguf" "prompt $PROMPT; finish; view pos 5" 2 '{
 "kind": "Pre-LN │ RMSNorm", "scope": "blocks", "layers": 4,
 "cols": [["pre", "hook_resid_pre"], ["+attn", "hook_resid_mid"], ["+MLP", "hook_resid_post"]],
 "wiring": ["└─RMSNorm─attn─┘", "└─RMSNorm─MLP─┘"], "not": ["(+)─RMSNorm", "LayerNorm"],
 "final": "ln_final", "branches": ["attn", "MLP"]}'
# DeepSeek-style MoE: its MLP branch named by its routed experts.
check r-moe "$MODELS/austen-moe.gguf" "prompt $PROMPT; finish; view pos 3" 3 '{
 "kind": "Pre-LN │ RMSNorm", "scope": "blocks", "layers": 4,
 "cols": [["pre", "hook_resid_pre"], ["+attn", "hook_resid_mid"], ["+MoE", "hook_resid_post"]],
 "wiring": ["└─RMSNorm─attn─┘", "└─RMSNorm─MoE─┘"], "final": "ln_final", "branches": ["attn", "MoE"]}'
# BERT: Post-LN, the norm on the stream after each add; no final norm,
# the embedding's LayerNorm before block 0.
check r-bert "$MODELS/austen-bert.gguf" "prompt the cat sat on the [MASK]; finish; view pos 0" 3 '{
 "kind": "Post-LN │ LayerNorm", "scope": "blocks", "layers": 4,
 "cols": [["pre", "hook_resid_pre"], ["+attn", "hook_resid_mid"], ["ln1", "ln1.hook_normalized"],
          ["+MLP", "hook_resid_post"], ["ln2", "ln2.hook_normalized"]],
 "wiring": ["(+)─LayerNorm", "└─attn─┘", "└─MLP─┘"], "not": ["└─LayerNorm"],
 "lines": ["embedding LayerNorm (embed.ln) before L0"], "final": null, "branches": ["attn", "MLP"]}'
# The original Transformer (de-en): Post-LN; the decoder shown (the other
# panes' stream), with cross-attention's add and the third norm; the
# decoder's final norm; the encoder's wiring named.
check r-de "$MODELS/de-en.gguf" "source Der Mann ist gut.; prompt The man; finish; view pos 2" 1 '{
 "kind": "Post-LN │ LayerNorm", "scope": "decoder", "layers": 3,
 "cols": [["pre", "hook_resid_pre"], ["+attn", "hook_resid_mid"], ["ln1", "ln1.hook_normalized"],
          ["+cross", "hook_resid_mid_cross"], ["ln2", "ln2.hook_normalized"],
          ["+MLP", "hook_resid_post"], ["ln3", "ln3.hook_normalized"]],
 "wiring": ["(+)─LayerNorm", "└─attn─┘", "└─cross─┘", "└─MLP─┘"], "not": ["└─LayerNorm"],
 "lines": ["Decoder shown, as in the other panes; encoder: Post-LN, LayerNorm"],
 "final": "decoder_final_ln", "branches": ["attn", "cross", "MLP"]}'
# Gemma 2 (test fixture): the sandwich, RMSNorm opening and closing each
# branch (the post-norm copied to hook_attn_out / hook_mlp_out).
check r-gemma2 "$FIXTURES/tiny-gemma2.gguf" "prompt-ids 1 5 9 30 41 77 120; finish; view pos 4" 1 '{
 "kind": "sandwich norms │ RMSNorm", "scope": "blocks", "layers": 3,
 "cols": [["pre", "hook_resid_pre"], ["+attn", "hook_resid_mid"], ["+MLP", "hook_resid_post"]],
 "wiring": ["└─RMSNorm─attn─RMSNorm─┘", "└─RMSNorm─MLP─RMSNorm─┘"], "not": ["(+)─RMSNorm"],
 "final": "ln_final", "branches": ["attn", "MLP"]}'

# wiring NAME MODEL-PATH "COMMANDS" "NOTE" "PIECE"...: on more of the
# test fixtures' architectures, the title's note and the schematic's
# pieces (the wiring read from their ops, no name of theirs known to the view).
wiring() {
    name=$1 model=$2 cmds=$3 note=$4
    shift 4
    view_start "$name" "$model" 120 35 || return
    view_run "$name" "set delay 0; $cmds; view residual; view dump $name.txt" 20 "$name.txt" || return
    _ok=1
    grep -q "┌ Residual.*$note" "$TMP/$name.txt" || { _ok=0; bad "$name: the title does not say $note"; }
    for piece in "$@"; do
        grep -qF -- "$piece" "$TMP/$name.txt" || { _ok=0; bad "$name: no $piece on screen"; }
    done
    [ $_ok = 1 ] && pass=$((pass + 1))
}
IDS='prompt-ids 1 5 9 30 41 77 120'
wiring w-gemma3 "$FIXTURES/tiny-gemma3.gguf" "$IDS; finish" "sandwich norms │ RMSNorm" "└─RMSNorm─attn─RMSNorm─┘"
wiring w-t5 "$FIXTURES/tiny-t5.gguf" "source-ids 5 9 30 41; prompt-ids 0 5 9; finish" "Pre-LN │ RMSNorm" \
    "└─RMSNorm─cross─┘" "encoder: Pre-LN, RMSNorm" "final RMSNorm (decoder_final_ln)"
wiring w-nomic "$FIXTURES/tiny-nomic-bert.gguf" "prompt-ids 1 5 9 30 41 2; finish" "Post-LN │ LayerNorm" \
    "(+)─LayerNorm" "└─MLP─┘" "no final norm"
wiring w-vit "$FIXTURES/tiny-vit.gguf" "image $FIXTURES/image/grey-17x11.png; finish" "Pre-LN │ LayerNorm" \
    "└─LayerNorm─attn─┘" "token 0 CLS"
wiring w-qwen2moe "$FIXTURES/tiny-qwen2moe.gguf" "$IDS; finish" "Pre-LN │ RMSNorm" "└─RMSNorm─MoE─┘"
wiring w-deepseek "$FIXTURES/tiny-deepseek2.gguf" "$IDS; finish" "Pre-LN │ RMSNorm" "└─RMSNorm─attn─┘"

# ---- lesson prepost: each claim's phrase is in the lesson, and holds in
# the arrays of the lesson's own prompts ----
claims() {
    dir=$TMP/lesson
    mkdir -p "$dir"
    "$BIN" -m "$MODELS/austen-gpt2.gguf" --threads 1 -e "prompt $PROMPT; finish; dump all $dir/gpt2" >/dev/null 2>&1 &&
    "$BIN" -m "$MODELS/austen-bert.gguf" --threads 1 -e "prompt the cat sat on the [MASK]; finish; dump all $dir/bert" >/dev/null 2>&1 &&
    "$BIN" -m "$MODELS/de-en.gguf" --threads 1 -e "source Der Mann ist gut.; prompt The man; finish; dump all $dir/de" >/dev/null 2>&1 ||
        { bad "lesson prepost: the dumps failed"; return; }
    if $PY - "$dir" "$LESSON" <<'EOF'; then pass=$((pass + 1)); else bad "lesson prepost: a claim does not hold"; fi
import re, sys
import numpy as np
d, lesson = sys.argv[1], sys.argv[2]
text = " ".join(open(lesson, encoding="utf-8").read().split())
errors, checked = [], 0
def n(run, h):
    a = np.load(f"{d}/{run}/{h}.npy").astype(np.float64)
    return np.linalg.norm(a.reshape(a.shape[0], -1), axis=1)
def claim(phrase, ok, what):
    global checked
    checked += 1
    if phrase not in text:
        errors.append(f"the lesson no longer says {phrase!r}")
    elif not ok:
        errors.append(f"{phrase!r}: {what}")
# GPT-2 (Pre-LN), token 8 ("ally"), the pane's columns
pre = [n("gpt2", f"blocks.{l}.hook_resid_pre") for l in range(4)]
mid = [n("gpt2", f"blocks.{l}.hook_resid_mid") for l in range(4)]
post = [n("gpt2", f"blocks.{l}.hook_resid_post") for l in range(4)]
t = 8
claim("under 2 after layer 0's attention", mid[0][t] < 2, f"{mid[0][t]:.3f}")
claim("20 after its MLP", abs(post[0][t] - 20) < 0.5, f"{post[0][t]:.3f}")
claim("about 23, 25 and 26 after layers 1, 2 and 3",
      all(abs(post[l][t] - v) < 0.5 for l, v in ((1, 23), (2, 25), (3, 26))) and post[1][t] < post[2][t] < post[3][t],
      f"{[round(post[l][t], 3) for l in (1, 2, 3)]}")
claim("layer 3's attention takes it from 25 to 23.5", abs(pre[3][t] - 25) < 0.5 and abs(mid[3][t] - 23.5) < 0.05,
      f"{pre[3][t]:.3f} -> {mid[3][t]:.3f}")
ratio = post[3] / pre[0]
claim("more than 15 times larger than it entered layer 0", ratio.min() > 15, f"smallest ratio {ratio.min():.2f}")
claim("at the first token it reaches almost 90", 85 < post[3][0] < 90, f"{post[3][0]:.2f}")
fin = n("gpt2", "ln_final.hook_normalized")
claim("Only the final norm, before the output, scales it back", fin[0] < post[3][0] / 2,
      f"ln_final gives {fin[0]:.2f} from {post[3][0]:.2f}")
# BERT (Post-LN)
lns = np.array([n("bert", f"blocks.{l}.{h}") for l in range(4) for h in ("ln1.hook_normalized", "ln2.hook_normalized")])
claim("between 15 and 17.5 at every layer and every token", lns.min() >= 15 and lns.max() <= 17.5,
      f"{lns.min():.3f} .. {lns.max():.3f}")
p3 = n("bert", "blocks.3.hook_resid_post")[0]
l3 = n("bert", "blocks.3.ln2.hook_normalized")[0]
claim("the sum after layer 3's MLP reaches 110", 105 <= p3 <= 115, f"{p3:.2f}")
claim("ln2 brings it back under 16", 15 < l3 < 16, f"{l3:.3f}")
sums = np.array([n("bert", f"blocks.{l}.{h}") for l in range(4) for h in ("hook_resid_mid", "hook_resid_post")])
claim("what reaches the norms can be far larger", sums.max() > 6 * lns.max(), f"largest sum {sums.max():.2f}")
# de-en's decoder (Post-LN): its nine norms
dl = np.array([n("de", f"decoder.{l}.{h}") for l in range(3) for h in ("ln1.hook_normalized", "ln2.hook_normalized", "ln3.hook_normalized")])
claim("between 12.5 and 15 after each of its nine norms", dl.min() >= 12.5 and dl.max() <= 15 and dl.shape[0] == 9,
      f"{dl.min():.3f} .. {dl.max():.3f}")
for e in errors:
    print("  " + e)
print(f"  {checked} claims checked, {len(errors)} failed")
sys.exit(1 if errors else 0)
EOF
}
claims

echo "resid e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
