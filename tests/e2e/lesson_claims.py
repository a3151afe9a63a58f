"""Every numeric or ordinal claim of the shipped lessons, checked against
the arrays the program dumps (tests/e2e/lesson_claims.sh runs it).

    lesson_claims.py ATTNSCOPE MODELS_DIR SCRATCH_DIR

Each lesson's state is rebuilt in batch mode (`-e`) with the lesson's own
commands, the hooks its steps talk about written with `dump HOOK F.npy`,
and each claim is one check below, named by lesson and step, with the
sentence it checks, which must be in that step's text (so a lesson
rewritten without its check fails here). Numbers the text prints are compared to the arrays
at the text's precision (0.71 means the value rounds to 0.71); counts and
orders ("19 of its 25 rows", "the brightest cell") exactly. A lesson
changed here must change its checks too: the quoted sentence is the
lesson's.
"""
import os
import re
import subprocess
import sys

import numpy as np

BIN, MODELS, TMP = sys.argv[1:4]
passed, failed = 0, []

P1 = "It is a truth universally acknowledged, that a single man in possession of a good fortune"
P2 = P1 + ", must be in want of a"


def run(model, cmds):
    """Runs the commands in batch mode on models/MODEL.gguf in TMP; the output."""
    r = subprocess.run([BIN, "-m", os.path.join(MODELS, model + ".gguf"), "--threads", "1", "-e", cmds],
                       cwd=TMP, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise SystemExit(f"FAIL: {model}: {cmds}: exit {r.returncode}: {r.stderr}{r.stdout[-2000:]}")
    return r.stdout


def npy(name):
    return np.load(os.path.join(TMP, name))


def tokens(out, stream="prompt"):
    """The pieces of the `tokens` listing (pos, id, piece, kind), by position."""
    rows = [l.split("\t") for l in out.split("\n") if re.match(r"^\d+\t", l)]
    return [r[2] for r in rows if len(r) >= 4 and (r[3] == stream or stream == "any")]


def top(out, header):
    """The rows (piece, prob) of the `top` table after the line starting with header."""
    lines = out.split("\n")
    i = next(k for k, l in enumerate(lines) if l.startswith(header))
    rows = []
    for l in lines[i + 2:]:
        c = l.split("\t")
        if len(c) < 5 or not c[0].isdigit():
            break
        rows.append((c[2], float(c[3])))
    return rows


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lesson_check  # noqa: E402  (the lesson files' reader)

LESSONS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "assets", "lessons")
_texts = {}


def said(name, sentence):
    """Whether lesson NAME's step (name: "LESSON STEP") still says the
    sentence (its parts between " ... " in order, whitespace as one)."""
    lesson, step = name.split()
    if lesson not in _texts:
        _texts[lesson] = [" ".join(st["text"].split()) for st in
                          lesson_check.parse_lesson(os.path.join(LESSONS, lesson + ".txt"))[1]]
    steps = _texts[lesson]
    text = steps[int(step) - 1] if int(step) <= len(steps) else ""
    at = 0
    for part in sentence.split(" ... "):
        at = text.find(" ".join(part.split()), at)
        if at < 0:
            return False
    return True


def check(name, sentence, ok, detail=""):
    global passed
    if not said(name, sentence):
        failed.append(f"{name}: the lesson no longer says \"{sentence}\": change this check with it")
        return
    if ok:
        passed += 1
    else:
        failed.append(f"{name}: \"{sentence}\": {detail}")


def r2(x, want, places=2):
    return round(float(x), places) == want


def prev_argmax_rows(p):
    """Rows whose brightest cell is just left of the diagonal."""
    return sum(int(p[q].argmax()) == q - 1 for q in range(p.shape[0]))


# ---- attention (austen-gpt2) ----
out = run("austen-gpt2", f"prompt {P1}; finish; tokens; dump blocks.0.attn.hook_pattern at-p0.npy; "
          "dump blocks.0.attn.hook_attn_scores at-s0.npy")
tok = tokens(out)
p0, s0 = npy("at-p0.npy"), npy("at-s0.npy")
h1 = p0[1]
n = h1.shape[0]
check("attention 2", "Each row shares out a budget of exactly 1", np.allclose(h1.sum(1), 1, atol=1e-4),
      f"row sums {h1.sum(1)}")
upper = np.triu(np.ones((n, n), bool), 1)
check("attention 2", "Cells above the diagonal are grey: masked", (h1[upper] == 0).all() and np.isneginf(s0[1][upper]).all(),
      "nonzero weight or finite score above the diagonal")
check("attention 2", "row 13 (·that) on column 12, the comma before it", tok[13] == "·that" and tok[12] == ",",
      f"tokens 12, 13: {tok[12]!r} {tok[13]!r}")
k = prev_argmax_rows(h1)
check("attention 3", "in 19 of its 25 rows the brightest cell is just left of the diagonal", k == 19 and n - 1 == 25,
      f"{k} of {n - 1}")
check("attention 3", "Row 24 (·good) gives 0.71 of its budget to ·a before it",
      tok[24] == "·good" and tok[23] == "·a" and r2(h1[24, 23], 0.71) and h1[24].argmax() == 23,
      f"{tok[24]!r}->{tok[23]!r} {h1[24, 23]:.4f}, brightest {h1[24].argmax()}")
check("attention 4", "here all 8 heads of layer 0", p0.shape[0] == 8, f"{p0.shape[0]} heads")
others = [h for h in range(8) if h != 1]
check("attention 4", "Head 1 looks at the previous token",
      prev_argmax_rows(p0[1]) > n / 2 and all(prev_argmax_rows(p0[h]) < n / 4 for h in others),
      f"previous-token rows by head {[prev_argmax_rows(p0[h]) for h in range(8)]}")
first = [float(p0[h, 1:, 0].mean()) for h in others]
check("attention 4", "the other seven give a quarter to a third of each row to the first token",
      all(0.2 <= f <= 0.34 for f in first), f"mean weight on the first token {first}")
rest = [float(p0[h, 1:, 1:].max(1).mean()) for h in others]
check("attention 4", "and spread the rest thinly", all(r < 0.25 for r in rest),
      f"mean largest weight off the first token {rest}")
out = run("austen-gpt2", f"set temp 0; prompt {P1}; finish; gen 3; dump blocks.0.attn.hook_pattern at-g.npy")
g = npy("at-g.npy")
check("attention 6", "gen generated three tokens ... each new token is one more row and one more column",
      g.shape[1:] == (n + 3, n + 3), f"pattern {g.shape} after gen 3 (before: {n})")

# ---- bert (austen-bert) ----
PAIR = '"She was not handsome, but she was clever." "Her sister thought him [MASK] agreeable."'
out = run("austen-bert", f"prompt {PAIR}; finish; tokens; top 5 16; dump blocks.1.attn.hook_pattern b-p1.npy; "
          "dump blocks.1.attn.hook_attn_scores b-s1.npy; dump blocks.0.ln2.hook_normalized b-ln2.npy; "
          "dump blocks.1.hook_resid_pre b-pre1.npy; dump blocks.0.hook_resid_pre b-pre0.npy; "
          "dump blocks.0.hook_attn_out b-att0.npy; dump blocks.0.ln1.hook_scale b-sc1.npy")
tok = tokens(out)
m = re.search(r"a pair: (\d+) of type 0, (\d+) of type 1", out)
check("bert 1", "[CLS] A [SEP] B [SEP]; the second has token type 1",
      tok[0] == "[CLS]" and m and tok[int(m.group(1)) - 1] == "[SEP]" and tok[-1] == "[SEP]" and
      int(m.group(1)) + int(m.group(2)) == len(tok), f"tokens {tok}, {m and m.group(0)}")
b1, bs = npy("b-p1.npy"), npy("b-s1.npy")
check("bert 1", "The heatmap is a full square ... every row may look at every column",
      np.isfinite(bs).all() and (b1 > 0).all(), "a masked (-inf) score or zero weight")
preds = [t for t, _ in top(out, "predictions at position 16")]
check("bert 2", "so, very, no...", tok[16] == "[MASK]" and preds[:3] == ["·so", "·very", "·no"], f"{preds}")
k = prev_argmax_rows(b1[1])
check("bert 3", "in 15 of its 20 rows the brightest cell is just left of the diagonal", k == 15 and b1.shape[1] == 20,
      f"{k} of {b1.shape[1]}")
check("bert 3", "The [MASK] gives 0.96 of its weight to ·him before it", tok[15] == "·him" and r2(b1[1, 16, 15], 0.96),
      f"{tok[15]!r} {b1[1, 16, 15]:.4f}")
k = sum(int(b1[0, q].argmax()) == q + 1 for q in range(20))
check("bert 4", "in 15 rows the brightest cell is the token after it", k == 15, f"{k}")
check("bert 4", "the [MASK]: 0.96 on ·agreeable", tok[17] == "·agreeable" and r2(b1[0, 16, 17], 0.96),
      f"{tok[17]!r} {b1[0, 16, 17]:.4f}")
peak = [float(b1[h].max(1).mean()) for h in range(4)]
check("bert 5", "All four heads of layer 1: one looking left, one looking right, two spread out",
      b1.shape[0] == 4 and peak[0] > 0.8 and peak[1] > 0.8 and peak[2] < 0.3 and peak[3] < 0.3,
      f"mean row maxima {peak}")
check("bert 6", "ln2's output is the next block's input", np.array_equal(npy("b-ln2.npy"), npy("b-pre1.npy")),
      "blocks.0.ln2.hook_normalized != blocks.1.hook_resid_pre")
x = (npy("b-pre0.npy") + npy("b-att0.npy")).astype(np.float64)
sd = np.sqrt(x.var(1) + 1e-12)
check("bert 6", "(Post-LN): ln1 after attention", np.allclose(npy("b-sc1.npy")[:, 0], sd, rtol=2e-3),
      f"ln1 scale {npy('b-sc1.npy')[:3, 0]} vs std of resid_pre + attn_out {sd[:3]}")

# ---- heads (induction) ----
out = run("induction", "prompt qzvkwjxbmfpdqzvkwjxbmfpd; finish; tokens; heads i-h.npy; heads; "
          "dump blocks.0.attn.hook_pattern i-p0.npy; dump blocks.1.attn.hook_pattern i-p1.npy; top 1 18; top 1 24")
tok = tokens(out)
H = npy("i-h.npy")
i0, i1 = npy("i-p0.npy"), npy("i-p1.npy")
check("heads 1", "A tiny model (2 layers, 4 heads)", H.shape[1:] == (2, 4), f"heads array {H.shape}")
check("heads 1", "12 random letters, then the same 12 again",
      len(tok) == 25 and tok[1:13] == tok[13:25] and len(set(tok[1:13])) == 12, f"{tok}")
check("heads 1", "Layer 0, head 3 is a previous-token head: every token looks at the one just before it",
      prev_argmax_rows(i0[3]) == 24, f"{prev_argmax_rows(i0[3])} of 24 rows")
offs = [q - int(i1[0, q].argmax()) for q in range(13, 25)]
check("heads 2", "the second q (row 13) looks at the first z (column 2",
      tok[13] == "q" and tok[2] == "z" and i1[0, 13].argmax() == 2, f"{tok[13]} {tok[2]} {i1[0, 13].argmax()}")
check("heads 2", "The bright stripe runs parallel to the diagonal 11 columns left of it", offs == [11] * 12,
      f"offsets in the second half {offs}")
check("heads 3", "Row 18 is the second j (positions 6 and 18). Its bright cell is column 7 ... the x",
      tok[6] == tok[18] == "j" and tok[7] == "x" and i1[0, 18].argmax() == 7, f"{tok[6]}{tok[18]}{tok[7]} {i1[0, 18].argmax()}")
check("heads 3", "And x is what the model predicts next", top(out, "next token after position 18")[0][0] == "x",
      f"{top(out, 'next token after position 18')[:1]}")
check("heads 4", "All four heads of layer 1 learned it", (H[3, 1] >= 0.4).all() and
      all([q - int(i1[h, q].argmax()) for q in range(13, 25)] == [11] * 12 for h in range(4)),
      f"induction scores {H[3, 1]}")
t24 = top(out, "next token after position 24")[0]
check("heads 5", "the model is sure the next letter is q", t24[0] == "q" and t24[1] > 0.99, f"{t24}")
out = run("induction", "prompt qzvkwjxbmfpdqzvkwjxbmfpd; finish; dump unembed.hook_out i-log.npy")
guess = npy("i-log.npy").argmax(1)
ids = [int(l.split("\t")[1]) for l in run("induction", "prompt qzvkwjxbmfpdqzvkwjxbmfpd; tokens").split("\n")
       if re.match(r"^\d+\t", l)]
check("heads 5", "In the second half it predicts every letter right",
      all(guess[p] == ids[p + 1] for p in range(13, 24)), f"{[(p, guess[p], ids[p + 1]) for p in range(13, 24)]}")
check("heads 5", "in the first half ... its guesses are wrong",
      all(guess[p] != ids[p + 1] for p in range(1, 12)), f"{[(p, guess[p], ids[p + 1]) for p in range(1, 12)]}")
starred = [(l, h) for l in range(2) for h in range(4) if H[0, l, h] >= 0.4]
check("heads 6", "layer 0's head 3 is the previous-token head", starred == [(0, 3)], f"previous-token >= 0.40: {starred}")
check("heads 6", "layer 1's heads score 0.96 to 0.99 as induction",
      all(0.96 <= round(float(v), 2) <= 0.99 for v in H[3, 1]), f"{H[3, 1]}")

# ---- lens (austen-gpt2) ----
out = run("austen-gpt2", f"prompt {P2}; finish; tokens; lens")
tok = tokens(out)
rows = [r for r in (l.split("\t") for l in out.split("\n")) if len(r) == 9 and re.match(r"^(embed|\d+)$", r[0])]
check("lens 1", "emb (the embeddings alone), then L0 to L3", [r[0] for r in rows] == ["embed", "0", "1", "2", "3"],
      f"{[r[0] for r in rows]}")
m = re.search(r"final top token: (\S+)", out)
ranks = [int(r[7]) for r in rows[1:]]
check("lens 2", "the answer is ·man: rank 3 after layer 0, rank 2 after layer 1, first from layer 2 on",
      m and m.group(1) == "·man" and ranks == [3, 2, 1, 1], f"{m and m.group(1)} ranks {ranks}")
check("lens 3", "The emb row predicts ·a, the token itself", rows[0][1] == "·a" and tok[-1] == "·a",
      f"emb top {rows[0][1]!r}, token {tok[-1]!r}")
check("lens 4", "Here, after \"in possession of\"", tok[19:23] == ["·in", "·poss", "ession", "·of"], f"{tok[19:23]}")

# ---- norms (austen-gpt2, then austen-llama) ----
out = run("austen-gpt2", f"prompt {P1}; finish; dump blocks.0.ln1.hook_scale n-s0.npy; "
          "dump blocks.3.ln1.hook_scale n-s3.npy; dump blocks.3.hook_resid_pre n-r3.npy; "
          + "; ".join(f"dump blocks.{l}.hook_resid_pre n-pre{l}.npy" for l in range(4))
          + "; dump blocks.3.hook_resid_post n-post3.npy")
s0, s3, r3 = npy("n-s0.npy")[:, 0], npy("n-s3.npy")[:, 0], npy("n-r3.npy")
check("norms 2", "where layer 0 saw 0.07 to 0.09", round(float(s0[1:].min()), 2) == 0.07 and round(float(s0[1:].max()), 2) == 0.09,
      f"{s0[1:].min():.4f} to {s0[1:].max():.4f}")
check("norms 2", "The std is now 1.3 to 2.6", round(float(s3[1:].min()), 1) == 1.3 and round(float(s3[1:].max()), 1) == 2.6,
      f"{s3[1:].min():.4f} to {s3[1:].max():.4f}")
norms = [float(np.linalg.norm(npy(f"n-pre{l}.npy")[1:], axis=1).mean()) for l in range(4)]
norms.append(float(np.linalg.norm(npy("n-post3.npy")[1:], axis=1).mean()))
check("norms 2", "each layer adds to the residual stream, so it grows", all(a < b for a, b in zip(norms, norms[1:])),
      f"mean ‖resid‖ by layer {norms}")
med = float(np.median(s3[1:]))
check("norms 3", "its std is 4.8", round(float(s3[0]), 1) == 4.8, f"{s3[0]:.4f}")
check("norms 3", "nearly three times the others'", 2.5 <= s3[0] / med < 3, f"{s3[0] / med:.2f} times the median")
big = np.abs(r3[0]).max()
check("norms 3", "from a few huge dimensions (one near -27)",
      round(float(r3[0].min())) == -27 and (np.abs(r3[0]) > np.abs(r3[1:]).max()).sum() >= 2,
      f"min {r3[0].min():.2f}, dims above every other token's largest: {(np.abs(r3[0]) > np.abs(r3[1:]).max()).sum()}")
out = run("austen-llama", f"prompt {P1}; finish; norms 3; dump blocks.3.hook_resid_pre n-lr.npy; "
          "dump blocks.3.ln1.hook_scale n-ls.npy")
x = npy("n-lr.npy").astype(np.float64)
rms = np.sqrt((x * x).mean(1))
check("norms 5", "RMSNorm: it does not subtract the mean, it divides by the root mean square (the rms column)",
      "\tmean\trms\tscale" in out and np.allclose(npy("n-ls.npy")[:, 0], rms, rtol=1e-3) and
      not np.allclose(npy("n-ls.npy")[:, 0], x.std(1), rtol=1e-3), "scale vs rms of resid_pre")

# ---- cross (de-en) ----
SRC = 'source Hauswasserpumpen; prompt "domestic water pumps"; finish'
out = run("de-en", f"{SRC}; tokens; dump decoder.2.cross_attn.hook_pattern c-p.npy; "
          "dump decoder.2.cross_attn.hook_attn_scores c-s.npy; dump decoder.2.attn.hook_pattern c-self.npy; "
          "dump decoder.2.attn.hook_attn_scores c-selfs.npy; dump encoder.2.attn.hook_attn_scores c-encs.npy; "
          "top 1 0; top 1 1; top 1 2; top 1 3")
src, tgt = tokens(out, "source"), tokens(out, "prompt")
c, cs = npy("c-p.npy"), npy("c-s.npy")
check("cross 1", "its rows are the 4 target tokens, its columns the 4 source tokens",
      len(src) == 4 and len(tgt) == 4 and c.shape == (4, 4, 4), f"{src} {tgt} {c.shape}")
check("cross 1", "nothing is masked: every row may read the whole source",
      np.isfinite(cs).all() and np.allclose(c.sum(2), 1, atol=1e-4), "a masked score")
nxt = [top(out, f"next token after position {p}")[0][0] for p in range(4)]
check("cross 2", "Layer 2, head 2 gives it all to ·Haus (the cursor ◆, 1.00)",
      tgt[0] == "<s>" and src[1] == "·Haus" and c[2, 0].argmax() == 1 and r2(c[2, 0, 1], 1.00), f"{c[2, 0]}")
check("cross 2", "the word it writes is ·domestic", nxt[0] == "·domestic", f"{nxt}")
check("cross 3", "Row 1, ·domestic ... reads wasser (0.74). Row 2, ·water, reads pumpen (0.99)",
      src[2] == "wasser" and src[3] == "pumpen" and c[2, 1].argmax() == 2 and r2(c[2, 1, 2], 0.74) and
      c[2, 2].argmax() == 3 and r2(c[2, 2, 3], 0.99), f"{c[2, 1]} {c[2, 2]}")
check("cross 3", "is about to write ·water ... and writes ·pumps", nxt[1:3] == ["·water", "·pumps"], f"{nxt}")
am = c.argmax(2)
check("cross 4", "In rows 0 to 2 head 1 reads the same pieces as head 2; head 0 reads wasser already from <s>",
      list(am[1, :3]) == list(am[2, :3]) and am[0, 0] == 2, f"argmax by head and row {am.tolist()}")
check("cross 4", "Row 3, whose next token is </s>, reads the source's <s> in heads 0, 1 and 3",
      nxt[3] == "</s>" and src[0] == "<s>" and all(am[h, 3] == 0 for h in (0, 1, 3)), f"{nxt[3]} {am[:, 3]}")
sp, ss = npy("c-self.npy"), npy("c-selfs.npy")
up = np.triu(np.ones((4, 4), bool), 1)
check("cross 5", "The decoder's self-attention: causal ... grey above the diagonal",
      (sp[:, up] == 0).all() and np.isneginf(ss[:, up]).all(), "weight above the diagonal")
check("cross 5", "The encoder's (view site encoder) is a full square", np.isfinite(npy("c-encs.npy")).all(),
      "a masked score in the encoder")

# ---- vit (vit-fashion) ----
out = run("vit-fashion", "image sneaker.png; finish; tokens; top 3; "
          + "; ".join(f"dump blocks.{l}.attn.hook_attn_scores v-s{l}.npy" for l in range(4))
          + "; dump blocks.3.attn.hook_pattern v-p3.npy")
labels = [r[1] for r in (l.split("\t") for l in out.split("\n")) if len(r) == 3 and r[2] in ("class token", "patch")]
m = re.search(r"(\d+) x (\d+) grey", out)
check("vit 1", "The 28x28 sneaker is cut into 16 patches of 7x7 pixels ... (r0c0 to r3c3), and a CLS token comes first: "
      "17 tokens", m and m.groups() == ("28", "28") and len(labels) == 17 and labels[0] == "CLS" and
      labels[1] == "r0c0" and labels[16] == "r3c3", f"{m and m.groups()} {labels}")
check("vit 2", "Nothing is masked: as in BERT, every patch sees every other",
      all(np.isfinite(npy(f"v-s{l}.npy")).all() for l in range(4)), "a masked score")
cls = top(out, "classes at CLS")
check("vit 2", "the classes pane reads the CLS token's vector alone: Sneaker, 91%",
      cls[0][0] == "Sneaker" and round(cls[0][1] * 100) == 91, f"{cls[:2]}")
v3 = npy("v-p3.npy")
check("vit 3", "Layer 3, head 2, row CLS: it gives 0.69 of its weight to patch r2c3",
      labels[12] == "r2c3" and v3[2, 0].argmax() == 12 and r2(v3[2, 0, 12], 0.69), f"{v3[2, 0].argmax()} {v3[2, 0, 12]:.4f}")
firsts = [labels[int(v3[h, 0].argmax())] for h in range(4)]
check("vit 4", "heads 0, 1, 2 and 3 look hardest at r1c3, r1c2, r2c3 and r0c3",
      firsts == ["r1c3", "r1c2", "r2c3", "r0c3"], f"{firsts}")

for f in failed:
    print("FAIL:", f)
print(f"lesson claims: {passed} passed, {len(failed)} failed")
sys.exit(1 if failed else 0)
