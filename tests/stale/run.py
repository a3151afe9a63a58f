#!/usr/bin/python3
"""Derived state never outlives the interventions it was computed under.

On a decoder with routed experts (austen-moe), an encoder (austen-bert)
and an encoder-decoder (de-en), for every ordered pair (r1, r2) of rule
changes from {ablate zero, ablate mean, patch, route off (or ablate mlp),
unablate}, session A runs

    prompt P; finish; r1; <instruments>; r2; <instruments>

so that every instrument has read a state computed under r1 before r2
changes the rules; session B, fresh, sets the prompt, applies the rules
still in effect after r1 and r2 (in order), runs `finish` and then the
instruments once. The instruments' output after r2 (standard output, and
the bytes of every file they write: a .npy dump, a PNG figure, a lens
array) must equal B's bit for bit. The instruments: top, stats, norms,
dump, export attn; and by model dla, lens table, heads, experts, fill,
embed; the logits of `compare` (clean and changed), and a greedy `gen 2`
last (it extends the context).

Also the issue's sequence on the default model: the first and the third
mean ablation's compare agree, and `unablate; finish; top` after an
ablation equals a fresh session's `top`.

  AS_BIN=build/attnscope /usr/bin/python3 tests/stale/run.py
"""
import hashlib
import itertools
import os
import subprocess
import sys
import tempfile

BIN = os.environ.get("AS_BIN", "build/attnscope")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
GPT = os.path.join(ROOT, "models", "austen-gpt2.gguf")
MARK = "help quit"  # prints a fixed block: the instruments' output starts after it


def common(d, tag):
    return ["top 5", "stats blocks.2.hook_resid_post", "norms 1", "dump blocks.2.hook_resid_post %s/%s-resid.npy" % (d, tag),
            "export attn 1 1 %s/%s-attn.png" % (d, tag)]


# Per model: its prompt (and source), the rule changes that apply, the
# instruments that read its pass, and what ends the session.
MODELS = {
    "austen-moe": dict(
        setup=["prompt It is a truth universally acknowledged, that a single man"],
        changes={
            "ablate-zero": "ablate 1.1 zero",
            "ablate-mean": "ablate 2.2 mean",
            "patch": 'patch blocks.2.hook_resid_pre from "It is a truth universally acknowledged, that a single woman"',
            "route-off": "route 2.3 off",
            "unablate": "unablate",
        },
        instruments=lambda d, t: common(d, t) + [
            "dla 11", "lens table %s/%s-lens.npy" % (d, t), "heads", "experts 2"],
        tail=["compare", "gen 2"]),
    "austen-bert": dict(
        setup=["prompt It is a truth [MASK] acknowledged"],
        changes={
            "ablate-zero": "ablate 1.1 zero",
            "ablate-mean": "ablate 2.2 mean",
            "patch": 'patch blocks.2.hook_resid_pre from "It is a lie [MASK] acknowledged"',
            "ablate-mlp": "ablate mlp 3",
            "unablate": "unablate",
        },
        instruments=lambda d, t: common(d, t) + ["fill 3", "embed", "heads context"],
        tail=["compare"]),
    "de-en": dict(
        setup=["source Ein Mann geht nach Hause.", "prompt"],
        changes={
            "ablate-zero": "ablate 1.1 zero",
            "ablate-mean": "ablate 2.2 mean",
            "ablate-mlp": "ablate mlp 0",
            "unablate": "unablate",
        },
        instruments=lambda d, t: ["top 5", "stats decoder.2.hook_resid_post", "norms 1",
                                  "dump encoder.2.hook_resid_post %s/%s-enc.npy" % (d, t),
                                  "dump decoder.2.hook_resid_post %s/%s-resid.npy" % (d, t),
                                  "export attn 1 1 %s/%s-attn.png" % (d, t)],
        tail=["compare", "gen 2"]),
}


def run(model, cmds):
    p = subprocess.run([BIN, "-m", os.path.join(ROOT, "models", model + ".gguf"), "--no-tui", "-e", "; ".join(cmds)],
                       capture_output=True, text=True, timeout=300)
    return p.returncode, p.stdout, p.stderr


def after_mark(out):
    marker = "quit\n  Leave attnscope.\n  example: quit\n"
    i = out.rfind(marker)
    return out[i + len(marker):] if i >= 0 else None


def files(d, tag):
    h = {}
    for name in sorted(os.listdir(d)):
        if name.startswith(tag + "-"):
            with open(os.path.join(d, name), "rb") as f:
                h[name[len(tag):]] = hashlib.sha256(f.read()).hexdigest()
    return h


def strip_paths(text, d, tag):
    return text.replace("%s/%s-" % (d, tag), "OUT-")


def main():
    failures = 0
    checked = 0
    with tempfile.TemporaryDirectory() as d:
        for model, m in MODELS.items():
            inst = m["instruments"]
            for (n1, r1), (n2, r2) in itertools.product(m["changes"].items(), repeat=2):
                rules = []
                for r in (r1, r2):
                    if r == "unablate":
                        rules = []
                    elif r not in rules:  # the same change twice: the session says it is in effect already
                        rules.append(r)
                ta, tb = "a-%s-%s-%s" % (model, n1, n2), "b-%s-%s-%s" % (model, n1, n2)
                second = [] if r1 == r2 and r1 != "unablate" else [r2]
                a_cmds = ["set temp 0"] + m["setup"] + ["finish", r1] + inst(d, ta + "-1") + second + [MARK] + \
                    inst(d, ta) + m["tail"]
                b_cmds = ["set temp 0"] + m["setup"] + rules + ["finish", MARK] + inst(d, tb) + m["tail"]
                rca, outa, erra = run(model, a_cmds)
                rcb, outb, errb = run(model, b_cmds)
                what = "%s: %s then %s" % (model, n1, n2)
                if rca != 0 or rcb != 0:
                    print("stale FAIL: %s: exit %d / %d: %s | %s" % (what, rca, rcb, erra.strip()[-300:],
                                                                       errb.strip()[-300:]))
                    failures += 1
                    continue
                sa, sb = after_mark(outa), after_mark(outb)
                if sa is None or sb is None:
                    print("stale FAIL: %s: marker missing" % what)
                    failures += 1
                    continue
                sa, sb = strip_paths(sa, d, ta), strip_paths(sb, d, tb)
                if sa != sb:
                    la, lb = sa.splitlines(), sb.splitlines()
                    k = next((i for i in range(min(len(la), len(lb))) if la[i] != lb[i]), min(len(la), len(lb)))
                    print("stale FAIL: %s: output differs from a fresh session's at line %d:\n  after: %s\n  "
                          "fresh: %s" % (what, k + 1, la[k] if k < len(la) else "<end>", lb[k] if k < len(lb) else "<end>"))
                    failures += 1
                    continue
                fa, fb = files(d, ta), files(d, tb)
                fa = {k: v for k, v in fa.items() if not k.startswith("-1-")}
                if fa != fb or len(fa) < 2:
                    print("stale FAIL: %s: written files differ from a fresh session's: %s" % (
                        what, sorted(k for k in set(fa) | set(fb) if fa.get(k) != fb.get(k)) or "count %d" % len(fa)))
                    failures += 1
                    continue
                checked += 1

        # The sequence on the bundled default model.
        seq = ('prompt When Mary and John went to the store, John gave a drink to; finish; metric " Mary" " John"; '
               'ablate 2.2 mean; compare; unablate; ablate 2.2 zero; compare; unablate; ablate 2.2 mean; compare; '
               'unablate; finish; top 5')
        p = subprocess.run([BIN, "-m", GPT, "--no-tui", "-e", seq], capture_output=True, text=True, timeout=300)
        changed = [l for l in p.stdout.splitlines() if l.startswith("logit difference")]
        fresh = subprocess.run([BIN, "-m", GPT, "--no-tui", "-e", "prompt When Mary and John went to the store, "
                                "John gave a drink to; finish; top 5"], capture_output=True, text=True, timeout=300)
        top_after = p.stdout[p.stdout.rfind("next token after"):]
        top_fresh = fresh.stdout[fresh.stdout.rfind("next token after"):]
        if p.returncode or len(changed) != 3 or changed[0] != changed[2] or changed[0] == changed[1]:
            print("stale FAIL: mean, zero, mean ablation: %s" % (changed or p.stderr.strip()))
            failures += 1
        elif top_after != top_fresh or "pass over positions 0-" not in p.stdout.split("removed")[-1]:
            print("stale FAIL: unablate; finish; top is not a fresh session's top")
            failures += 1
        else:
            checked += 1
            print("stale ok: mean/zero/mean ablation compare: %s | %s | %s" % tuple(c.split(": ")[1] for c in changed))

    print("stale: %d of %d checks equal a fresh session's, bit for bit" % (checked, checked + failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
