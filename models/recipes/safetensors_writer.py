"""safetensors files from NumPy arrays, with NumPy alone (no PyTorch, no
`safetensors` package), so a test helper that only writes a model
directory (tests/hfref/make_dir.py) runs on a machine without PyTorch.

The format, from its specification: an unsigned little-endian 64-bit
header length N, N bytes of JSON {name: {"dtype", "shape",
"data_offsets": [begin, end]}} (offsets relative to the byte after the
header, padded here with spaces to a multiple of 8 as HF's writer does),
then the tensors' bytes, C order."""
import json
import struct

import numpy as np


def bf16_bits(a):
    """float32 array -> its bfloat16 bit patterns (uint16), rounded to
    nearest even: PyTorch's .bfloat16() bit for bit on every non-NaN float32
    (2M random values and the edge cases checked); a NaN becomes the quiet
    NaN 0x7fc0 (PyTorch keeps other NaN bits; no fixture holds a NaN)."""
    u = np.ascontiguousarray(a, dtype="<f4").view("<u4").astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    return np.where(np.isnan(np.asarray(a, dtype=np.float32)), np.uint16(0x7FC0), r)


def to_bytes(a, dtype):
    """float32 array -> its bytes as dtype (F32; F16 and BF16 rounded to
    nearest even)."""
    a = np.ascontiguousarray(a, dtype="<f4")
    if dtype == "F32":
        return a.tobytes()
    if dtype == "F16":
        return a.astype("<f2").tobytes()
    if dtype == "BF16":
        return bf16_bits(a).astype("<u2").tobytes()
    raise ValueError("dtype %r is not written" % dtype)


def safetensors_bytes(tensors, dtype="F32"):
    """tensors: list of (name, float32 array) in file order -> bytes."""
    header, blobs, off = {}, [], 0
    for name, a in tensors:
        b = to_bytes(a, dtype)
        header[name] = {"dtype": dtype, "shape": list(np.shape(a)), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)
