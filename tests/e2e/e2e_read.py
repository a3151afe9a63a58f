"""What the numeric e2e checks (tests/e2e/math.sh, mla.sh, positions.sh,
mlp.sh, resid.sh, circuits.sh) read, shared by their Python: a pane of a dumped screen
(`view dump`), and a GGUF file read here, not by attnscope's reader, so
that the hyperparameters and tables the screens are checked against come
from the file independently. The scripts import it with tests/e2e on
PYTHONPATH (need_numpy in tmux_lib.sh puts it there).

GGUF: the magic GGUF, the version (uint32), the tensor and key counts
(uint64), the metadata as key (a uint64-sized string), type (uint32) and
value, the tensors' infos (name, dimension count, dimensions, type,
offset), then the data aligned to general.alignment (32 by default)."""
import re
import struct

import numpy as np

_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read_gguf(path, tensors=True):
    """(metadata, tensors): the metadata as a dict (arrays as lists), and the
    F32 tensors (type 0, viewing the file's bytes), F16 and BF16 ones
    (widened to float32) as numpy arrays of shape reversed(ne) (gguf-py's);
    quantized types are left out. tensors=False: the metadata
    only, and {}."""
    buf = open(path, "rb").read()
    pos = 4

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, buf, pos)
        pos += struct.calcsize("<" + fmt)
        return v[0]

    def string():
        nonlocal pos
        n = take("Q")
        s = buf[pos:pos + n].decode("utf-8", "replace")
        pos += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        if t not in _SCALAR:
            raise ValueError(f"{path}: metadata type {t}")
        return take(_SCALAR[t])

    if buf[:4] != b"GGUF":
        raise ValueError(f"{path}: not a GGUF file")
    _version, n_t, n_kv = take("I"), take("Q"), take("Q")
    kv = {}
    for _ in range(n_kv):
        k = string()
        kv[k] = value(take("I"))
    if not tensors:
        return kv, {}
    infos = []
    for _ in range(n_t):
        name = string()
        nd = take("I")
        ne = [take("Q") for _ in range(nd)]
        gt, off = take("I"), take("Q")
        infos.append((name, ne, gt, off))
    align = kv.get("general.alignment", 32)
    data0 = pos + (-pos) % align
    out = {}
    for name, ne, gt, off in infos:
        n, shape = int(np.prod(ne)), list(reversed(ne))
        if gt == 0:
            out[name] = np.frombuffer(buf, "<f4", n, data0 + off).reshape(shape)
        elif gt == 1:
            out[name] = np.frombuffer(buf, "<f2", n, data0 + off).astype(np.float32).reshape(shape)
        elif gt == 30:  # BF16: the float32's upper half
            u = np.frombuffer(buf, "<u2", n, data0 + off).astype(np.uint32) << 16
            out[name] = u.view(np.float32).reshape(shape)
    return kv, out


def gguf_meta(path):
    """The metadata alone."""
    return read_gguf(path, tensors=False)[0]


def find_pane(lines, title):
    """The pane whose top border holds the regular expression title, in a
    dumped screen's lines: (top, col, end, rows), top the border's line,
    col and end the columns of its corners ┌ and ┐, rows the text between
    its side borders, line by line down to its bottom border └."""
    top = next(i for i, l in enumerate(lines) if re.search(title, l))
    tl = lines[top]
    col = tl.rindex("┌", 0, re.search(title, tl).start() + 1)
    end = tl.index("┐", col)
    rows = []
    for l in lines[top + 1:]:
        if l[col:].startswith("└"):
            break
        rows.append(l[col + 1:end])
    return top, col, end, rows


def num(t):
    """A number as the screen prints it (− the minus sign)."""
    return float(t.replace("−", "-"))
