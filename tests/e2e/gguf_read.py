"""A GGUF reader in NumPy, written from the format's specification
(llama.cpp's docs/gguf.md) and independent of attnscope: the metadata and
the F32, F16 and BF16 tensors as arrays in gguf-py's shape (ne reversed,
ne[0] the last, C order). Other types come back as (type number, raw bytes).
Used by the e2e scripts (circuits.sh) as the reference attnscope's reads
are held to."""
import struct

import numpy as np

_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read_gguf(path):
    """(kv, tensors): kv a dict of the metadata; tensors name -> array."""
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
        s = buf[pos:pos + n].decode("utf-8")
        pos += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(_SCALAR[t])

    assert buf[:4] == b"GGUF", path + ": not a GGUF file"
    version, n_t, n_kv = take("I"), take("Q"), take("Q")
    kv = {}
    for _ in range(n_kv):
        k = string()
        kv[k] = value(take("I"))
    align = kv.get("general.alignment", 32)
    infos = []
    for _ in range(n_t):
        name = string()
        nd = take("I")
        ne = [take("Q") for _ in range(nd)]
        gt, off = take("I"), take("Q")
        infos.append((name, ne, gt, off))
    data0 = pos + (-pos) % align
    tensors = {}
    for name, ne, gt, off in infos:
        n = int(np.prod(ne))
        shape = list(reversed(ne))
        if gt == 0:
            tensors[name] = np.frombuffer(buf, "<f4", n, data0 + off).reshape(shape)
        elif gt == 1:
            tensors[name] = np.frombuffer(buf, "<f2", n, data0 + off).astype(np.float32).reshape(shape)
        elif gt == 30:
            u = np.frombuffer(buf, "<u2", n, data0 + off).astype(np.uint32) << 16
            tensors[name] = u.view(np.float32).reshape(shape)
        else:
            tensors[name] = (gt, buf[data0 + off:])
    return kv, tensors
