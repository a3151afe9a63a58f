#!/usr/bin/python3
"""attnscope's own greedy translations against train_deen.py's.

    python3 deen_check.py [--n 2000] [--attnscope ../../build/attnscope]

Takes the held-out test split (or a fixed sample, seed 17, of --n rows) as
train_deen.py decoded it (work/de-en.test_out.tsv: German, reference,
PyTorch's greedy output and its ids), runs attnscope on models/de-en.gguf
with, for each German side, `source TEXT` (attnscope's own tokenizer),
`prompt-ids 1` (the decoder start token) and `gen 24` at temperature 0,
and compares: the source's token count with SentencePiece's, the generated
ids with PyTorch's (up to </s>), and exact match and chrF over the sample
computed from either side's strings. Writes work/de-en.check.json; exits 1
on any difference.
"""
import argparse
import json
import os
import random
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import train_deen as T  # noqa: E402

ROOT = T.ROOT


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--attnscope", default=os.path.join(ROOT, "build", "attnscope"))
    a = ap.parse_args()
    tok = T.load_tokenizer()
    with open(os.path.join(T.WORK, T.NAME + ".test_out.tsv"), encoding="utf-8") as f:
        rows = [line.rstrip("\n").split("\t") for line in f]
    # `source` reads a leading quote as the start of a quoted word: such sources are left out
    rows = [r for r in rows if r[0][0] not in "\"'"]
    sample = random.Random(17).sample(rows, min(a.n, len(rows)))
    with tempfile.NamedTemporaryFile("w", suffix=".as", delete=False, encoding="utf-8") as f:
        f.write("set temp 0\n")
        for de, _, _, _ in sample:
            f.write("source %s\nprompt-ids %d\ngen %d\n" % (de, tok.bos, T.RECIPE["max_gen"]))
        script = f.name
    try:
        out = subprocess.run([a.attnscope, os.path.join(ROOT, "models", T.NAME + ".gguf"), "--no-tui",
                              "--threads", "1", "-x", script], capture_output=True, text=True, check=True).stdout
    finally:
        os.remove(script)
    n_src = [int(m) for m in re.findall(r"^source: (\d+) tokens", out, re.M)]
    gens = [[int(x) for x in m.split()] for m in re.findall(r"^ids:(.*)$", out, re.M)]
    assert len(n_src) == len(sample) and len(gens) == len(sample), \
        "attnscope answered %d sources and %d gens for %d" % (len(n_src), len(gens), len(sample))
    bad, hyp_a, hyp_p, refs = [], [], [], []
    for (de, ref, hyp, ids), n, g in zip(sample, n_src, gens):
        mine = [int(x) for x in ids.split()]
        g = g[:g.index(tok.eos)] if tok.eos in g else g
        want_n = 1 + len(tok.encode(de))
        if n != want_n or g != mine:
            bad.append(dict(de=de, source_tokens=[n, want_n], attnscope=g, pytorch=mine))
        hyp_a.append(tok.decode(g))
        hyp_p.append(hyp)
        refs.append(ref)
    em = lambda hs: 100.0 * sum(h == r for h, r in zip(hs, refs)) / len(refs)
    res = dict(n=len(sample), identical=len(sample) - len(bad), differences=bad[:20],
               attnscope=dict(exact_match=em(hyp_a), chrf=T.chrf(hyp_a, refs)),
               pytorch=dict(exact_match=em(hyp_p), chrf=T.chrf(hyp_p, refs)))
    with open(os.path.join(T.WORK, T.NAME + ".check.json"), "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1, ensure_ascii=False)
    print("%d of %d sample translations identical (source tokens and greedy ids); on the sample: "
          "attnscope exact match %.2f%%, chrF %.2f; PyTorch %.2f%%, %.2f"
          % (res["identical"], res["n"], res["attnscope"]["exact_match"], res["attnscope"]["chrf"],
             res["pytorch"]["exact_match"], res["pytorch"]["chrf"]))
    for b in bad[:5]:
        print("differs:", b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
