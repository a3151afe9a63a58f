"""The view's token strip after `saliency` (grad.sh): the chips of the
screen before and after (tmux capture-pane -e), read from their SGR codes,
against the batch table of the same prompt and metric: a chip is underlined
exactly where the table's saliency is negative (the last chip is the
selected one, in its own colours), the backgrounds changed and differ
among tokens; before, no chip is underlined.

usage: grad_view.py BEFORE AFTER SALIENCY_TABLE"""
import re
import sys


def chips(path):
    """The token line's chips: (text, underlined, background)."""
    lines = open(path, encoding="utf-8").read().split("\n")
    line = next(l for l in lines if "·mat" in l and "Tokens" not in l)
    out, ul, bg = [], False, None
    for tok in re.split(r"(\x1b\[[0-9;]*m)", line):
        m = re.fullmatch(r"\x1b\[([0-9;]*)m", tok)
        if m:
            codes = m.group(1).split(";")
            i = 0
            while i < len(codes):
                c = codes[i]
                if c in ("0", ""):
                    ul, bg = False, None
                elif c == "4":
                    ul = True
                elif c == "24":
                    ul = False
                elif c in ("38", "48") and i + 2 < len(codes):
                    if c == "48":
                        bg = codes[i + 2]
                    i += 2
                elif c == "49":
                    bg = None
                i += 1
            continue
        for word in re.findall(r"·?[a-z]+", tok):
            out.append((word, ul, bg))
    return out[:6]


before, after = chips(sys.argv[1]), chips(sys.argv[2])
table = [l.split() for l in open(sys.argv[3], encoding="utf-8") if re.match(r"\s*\d+\s+\S+\s+[-+]\d", l)]
sal = [float(r[2]) for r in table]
print("before", before)
print("after ", after)
print("saliency", sal)
ok = len(before) == len(after) == len(sal) == 6
ok = ok and all(after[i][1] == (sal[i] < 0) for i in range(5)) and not any(c[1] for c in before[:5])
ok = ok and [c[2] for c in before[:5]] != [c[2] for c in after[:5]] and len({c[2] for c in after[:5]}) >= 3
sys.exit(0 if ok else 1)
