"""The view's gradient page (key G) against NumPy: every row the screen
shows, `pos token |grad| grad.x`, equals the L2 norm of that position's
row of `grad HOOK FILE.npy` and its dot product with `dump HOOK FILE.npy`
to the 4 significant digits printed (relative 1e-3, plus 1e-6 absolute
for the dot's rounding near 0); the page names the hook; at least
MIN_ROWS rows are read (so a page that shows nothing fails).

usage: grad_page.py SCREEN GRAD.npy ACT.npy HOOK MIN_ROWS"""
import re
import sys

import numpy as np

screen, gpath, apath, hook, min_rows = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5])
lines = open(screen, encoding="utf-8").read().split("\n")
g = np.load(gpath).astype(np.float64)
x = np.load(apath).astype(np.float64)
norm, dot = np.linalg.norm(g, axis=1), (g * x).sum(axis=1)
top = [i for i, ln in enumerate(lines) if "┌ Gradient  d metric / d " in ln]
if not top:
    sys.exit("no gradient page on the screen")
col = lines[top[0]].index("┌ Gradient")
if "d metric / d %s " % hook not in lines[top[0]][col:]:
    sys.exit("the page's title does not name %s: %r" % (hook, lines[top[0]][col:]))
rows, fails = 0, []
for ln in lines[top[0] + 1:]:
    part = ln[col:]
    if part.startswith("└"):
        break
    m = re.match(r"^│\s+(\d+) .{8}\s+(-?[0-9.e+-]+)\s+([+-][0-9.e+-]+)\s", part)
    if not m:
        continue
    p, n, d = int(m.group(1)), float(m.group(2)), float(m.group(3))
    rows += 1
    if abs(n - norm[p]) > 1e-3 * abs(norm[p]):
        fails.append("pos %d: |grad| %g on screen, %g by NumPy" % (p, n, norm[p]))
    if abs(d - dot[p]) > 1e-3 * abs(dot[p]) + 1e-6:
        fails.append("pos %d: grad.x %g on screen, %g by NumPy" % (p, d, dot[p]))
if rows < min_rows:
    fails.append("%d rows read, wanted at least %d" % (rows, min_rows))
for f in fails:
    print("FAIL:", f)
print("%d rows of the gradient page checked" % rows)
sys.exit(1 if fails else 0)
