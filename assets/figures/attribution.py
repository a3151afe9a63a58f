"""Attribution patching against the exact patch sweep on a bundled model:
for resid, attn, mlp and heads, the Pearson correlation over every cell
(layers x positions, or layers x heads) between `attribute KIND` (the
estimated change of the metric) and `patch sweep` (the patched metric
minus the clean one), and the largest cells of each. Prints one line per
kind; the README quotes them.

usage: attribution.py ATTNSCOPE MODEL.gguf CLEAN OTHER TOKEN_A TOKEN_B WORKDIR"""
import subprocess
import sys

import numpy as np

BIN, MODEL, CLEAN, OTHER, A, B, WORK = sys.argv[1:8]
KINDS = [("resid", "resid_pre"), ("attn", "attn_out"), ("mlp", "mlp_out"), ("heads", "heads")]
cmds = ['prompt "%s"' % CLEAN, "finish", 'metric "%s" "%s"' % (A, B)]
for a, p in KINDS:
    cmds.append('attribute %s from "%s" %s/attr_%s.npy' % (a, OTHER, WORK, a))
    cmds.append('patch sweep %s from "%s" %s/sweep_%s.npy' % (p, OTHER, WORK, a))
out = subprocess.run([BIN, "-m", MODEL, "--no-tui", "-e", "; ".join(cmds)], capture_output=True, text=True,
                     check=True).stdout
line = [ln for ln in out.splitlines() if "metric clean" in ln][0]
clean = float(line.split("metric clean ")[1].split(",")[0])
other = float(line.split("other ")[-1])
print("metric clean %.4f, other %.4f" % (clean, other))
for a, _ in KINDS:
    at = np.load("%s/attr_%s.npy" % (WORK, a)).astype(np.float64)
    sw = np.load("%s/sweep_%s.npy" % (WORK, a)).astype(np.float64) - clean
    r = np.corrcoef(at.ravel(), sw.ravel())[0, 1]
    ia, isw = np.unravel_index(np.abs(at).argmax(), at.shape), np.unravel_index(np.abs(sw).argmax(), sw.shape)
    print("%-5s r = %.4f over %d cells; largest |attribution| at %s (%+.3f, exact %+.3f); largest |patch| at %s "
          "(%+.3f, attribution %+.3f)" % (a, r, at.size, tuple(int(i) for i in ia), at[ia], sw[ia],
                                          tuple(int(i) for i in isw), sw[isw], at[isw]))
