#!/usr/bin/env python3
"""A copy of a GGUF file whose ARCH.context_length says N: the only byte
change is that key's uint32 value (the tensors, and so every computation
over a prompt shorter than both windows, are the original's).
    python3 set_ctx.py SRC DST N"""
import struct
import sys

src, dst, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = bytearray(open(src, "rb").read())
if data[:4] != b"GGUF":
    sys.exit("%s: not a GGUF file" % src)
n_kv = struct.unpack_from("<Q", data, 16)[0]
off, found = 24, False
SIZES = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


def skip(t, off):
    if t in SIZES:
        return off + SIZES[t]
    if t == 8:
        return off + 8 + struct.unpack_from("<Q", data, off)[0]
    if t == 9:
        et, cnt = struct.unpack_from("<IQ", data, off)
        off += 12
        for _ in range(cnt):
            off = skip(et, off)
        return off
    sys.exit("%s: unknown GGUF value type %d" % (src, t))


for _ in range(n_kv):
    klen = struct.unpack_from("<Q", data, off)[0]
    key = data[off + 8:off + 8 + klen].decode()
    off += 8 + klen
    t = struct.unpack_from("<I", data, off)[0]
    off += 4
    if key.endswith(".context_length"):
        if t != 4:
            sys.exit("%s: %s is not a uint32" % (src, key))
        struct.pack_into("<I", data, off, n)
        found = True
    off = skip(t, off)
if not found:
    sys.exit("%s: no context_length key" % src)
open(dst, "wb").write(data)
