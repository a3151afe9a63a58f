"""A small GGUF v3 writer, written from the format specification.

The `gguf` Python package is not available here, so this is a standalone
writer of the subset attnscope's recipes need.  Layout (ggml docs/gguf.md,
checked against ggml's gguf.h enums):

    u32  magic "GGUF" (bytes 47 47 55 46)      u32 version = 3
    u64  n_tensors                              u64 n_kv
    n_kv times:      string key, u32 value_type, value
    n_tensors times: string name, u32 n_dims, u64 ne[n_dims],
                     u32 ggml_type, u64 offset (relative to the data section,
                     a multiple of the alignment)
    zero padding up to a multiple of the alignment (general.alignment, 32
    by default), then the tensor data, each tensor zero-padded likewise.

A string is u64 byte length + UTF-8 bytes (no terminator).  An array value
is u32 element type, u64 count, then the elements.  Everything is
little-endian.  A BOOL is one byte.

Tensor dims are in ggml order: ne[0] is the innermost (contiguous) dim, so
a row-major NumPy/PyTorch array of shape (a, b, c) has ne = [c, b, a].  A
PyTorch Linear weight [out, in] is written as-is and gets ne = [in, out].

Usage:

    w = GGUFWriter("model.gguf")
    w.add_string("general.architecture", "llama")
    w.add_uint32("llama.block_count", 2)
    w.add_array("tokenizer.ggml.tokens", ["a", "b"])          # STRING array
    w.add_array("tokenizer.ggml.scores", [0.0, -1.0], GGUF_FLOAT32)
    w.add_tensor("token_embd.weight", np_array)               # F32
    w.add_tensor("blk.0.ffn_up.weight", arr, GGML_F16)
    w.write()                      # temp file in the same folder, then rename
"""

import os
import struct
import tempfile

import numpy as np

GGUF_MAGIC = b"GGUF"
GGUF_VERSION = 3
GGUF_DEFAULT_ALIGNMENT = 32

# gguf value types
GGUF_UINT8 = 0
GGUF_INT8 = 1
GGUF_UINT16 = 2
GGUF_INT16 = 3
GGUF_UINT32 = 4
GGUF_INT32 = 5
GGUF_FLOAT32 = 6
GGUF_BOOL = 7
GGUF_STRING = 8
GGUF_ARRAY = 9
GGUF_UINT64 = 10
GGUF_INT64 = 11
GGUF_FLOAT64 = 12

# struct format for each fixed-size scalar value type
_SCALAR_FMT = {
    GGUF_UINT8: "<B", GGUF_INT8: "<b",
    GGUF_UINT16: "<H", GGUF_INT16: "<h",
    GGUF_UINT32: "<I", GGUF_INT32: "<i",
    GGUF_FLOAT32: "<f", GGUF_BOOL: "<?",
    GGUF_UINT64: "<Q", GGUF_INT64: "<q",
    GGUF_FLOAT64: "<d",
}

# numpy dtype of each scalar value type (for arrays of numbers)
_SCALAR_NP = {
    GGUF_UINT8: "<u1", GGUF_INT8: "<i1",
    GGUF_UINT16: "<u2", GGUF_INT16: "<i2",
    GGUF_UINT32: "<u4", GGUF_INT32: "<i4",
    GGUF_FLOAT32: "<f4", GGUF_BOOL: "<u1",
    GGUF_UINT64: "<u8", GGUF_INT64: "<i8",
    GGUF_FLOAT64: "<f8",
}

# ggml tensor types
GGML_F32 = 0
GGML_F16 = 1
GGML_Q8_0 = 8
QK8_0 = 32  # Q8_0 block: f16 scale d, then 32 int8 (34 bytes)

_GGML_NAMES = {"F32": GGML_F32, "F16": GGML_F16, "Q8_0": GGML_Q8_0}


def _pack_string(s):
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def _infer_scalar_type(v):
    if isinstance(v, (bool, np.bool_)):
        return GGUF_BOOL
    if isinstance(v, (int, np.integer)):
        if -2**31 <= v < 2**31:
            return GGUF_INT32
        if v >= 0 and v < 2**64:
            return GGUF_UINT64
        return GGUF_INT64
    if isinstance(v, (float, np.floating)):
        return GGUF_FLOAT32
    if isinstance(v, str):
        return GGUF_STRING
    raise TypeError("cannot infer a GGUF type for %r" % (v,))


def _pack_value(vtype, value, elem_type=None):
    if vtype == GGUF_STRING:
        return _pack_string(value)
    if vtype == GGUF_ARRAY:
        return _pack_array(value, elem_type)
    fmt = _SCALAR_FMT.get(vtype)
    if fmt is None:
        raise ValueError("unknown GGUF value type %r" % (vtype,))
    if vtype in (GGUF_FLOAT32, GGUF_FLOAT64):
        value = float(value)
    elif vtype == GGUF_BOOL:
        value = bool(value)
    else:
        value = int(value)
    return struct.pack(fmt, value)


def _pack_array(values, elem_type=None):
    values = list(values) if not isinstance(values, np.ndarray) else values
    n = len(values)
    if elem_type is None:
        if isinstance(values, np.ndarray):
            elem_type = {
                "u1": GGUF_UINT8, "i1": GGUF_INT8, "u2": GGUF_UINT16,
                "i2": GGUF_INT16, "u4": GGUF_UINT32, "i4": GGUF_INT32,
                "f4": GGUF_FLOAT32, "b1": GGUF_BOOL, "u8": GGUF_UINT64,
                "i8": GGUF_INT64, "f8": GGUF_FLOAT64,
            }[values.dtype.str[1:]]
        elif n == 0:
            raise ValueError("empty array needs an explicit elem_type")
        else:
            types = {_infer_scalar_type(v) for v in values}
            if types == {GGUF_INT32, GGUF_UINT64} or types == {GGUF_INT32, GGUF_INT64}:
                types = {GGUF_INT64}
            if types == {GGUF_INT32, GGUF_FLOAT32}:
                types = {GGUF_FLOAT32}
            if len(types) != 1:
                raise TypeError("mixed element types in GGUF array")
            elem_type = types.pop()
    if elem_type == GGUF_ARRAY:
        raise ValueError("nested arrays are not supported")
    out = [struct.pack("<IQ", elem_type, n)]
    if elem_type == GGUF_STRING:
        out.extend(_pack_string(s) for s in values)
    else:
        arr = np.asarray(values)
        if elem_type == GGUF_BOOL:
            arr = arr.astype(bool)
        out.append(np.ascontiguousarray(arr.astype(_SCALAR_NP[elem_type])).tobytes())
    return b"".join(out)


def _f16_bytes(arr):
    a = np.asarray(arr, dtype=np.float32)
    if not np.all(np.isfinite(a)) or np.max(np.abs(a), initial=0.0) > 65504.0:
        raise ValueError("tensor does not fit in F16")
    return np.ascontiguousarray(a.astype("<f2")).tobytes()


def quantize_q8_0(arr):
    """Q8_0 as ggml's reference quantizer: per block of 32 along ne[0],
    d = amax/127, q = round(x/d) (ties away from zero, as C roundf), d
    stored as F16."""
    a = np.ascontiguousarray(arr, dtype=np.float32)
    if a.shape[-1] % QK8_0:
        raise ValueError("Q8_0 needs the innermost dim to be a multiple of 32")
    blocks = a.reshape(-1, QK8_0)
    amax = np.max(np.abs(blocks), axis=1)
    d = amax / 127.0
    inv = np.where(d > 0, 1.0 / np.where(d > 0, d, 1.0), 0.0).astype(np.float32)
    x = blocks * inv[:, None]
    q = (np.sign(x) * np.floor(np.abs(x) + 0.5)).astype(np.int8)
    rec = np.zeros(len(blocks), dtype=[("d", "<f2"), ("qs", "i1", (QK8_0,))])
    rec["d"] = d.astype(np.float16)
    rec["qs"] = q
    return rec.tobytes()


def dequantize_q8_0(raw, n):
    rec = np.frombuffer(raw, dtype=[("d", "<f2"), ("qs", "i1", (QK8_0,))],
                        count=n // QK8_0)
    return (rec["d"].astype(np.float32)[:, None] * rec["qs"].astype(np.float32)).reshape(-1)


class GGUFWriter:
    def __init__(self, path, alignment=GGUF_DEFAULT_ALIGNMENT):
        if alignment <= 0 or alignment % 8:
            raise ValueError("alignment must be a positive multiple of 8")
        self.path = path
        self.alignment = alignment
        self._kv = []          # (key, packed bytes after the key)
        self._keys = set()
        self._tensors = []     # (name, ne, ggml_type, data bytes)
        self._names = set()
        if alignment != GGUF_DEFAULT_ALIGNMENT:
            self.add_uint32("general.alignment", alignment)

    # -- metadata -------------------------------------------------------
    def add_kv(self, key, value, vtype=None, elem_type=None):
        if key in self._keys:
            raise KeyError("duplicate GGUF key %r" % key)
        if vtype is None:
            if isinstance(value, (list, tuple, np.ndarray)):
                vtype = GGUF_ARRAY
            else:
                vtype = _infer_scalar_type(value)
        self._keys.add(key)
        self._kv.append((key, struct.pack("<I", vtype) + _pack_value(vtype, value, elem_type)))

    def add_uint8(self, k, v): self.add_kv(k, v, GGUF_UINT8)
    def add_int8(self, k, v): self.add_kv(k, v, GGUF_INT8)
    def add_uint16(self, k, v): self.add_kv(k, v, GGUF_UINT16)
    def add_int16(self, k, v): self.add_kv(k, v, GGUF_INT16)
    def add_uint32(self, k, v): self.add_kv(k, v, GGUF_UINT32)
    def add_int32(self, k, v): self.add_kv(k, v, GGUF_INT32)
    def add_uint64(self, k, v): self.add_kv(k, v, GGUF_UINT64)
    def add_int64(self, k, v): self.add_kv(k, v, GGUF_INT64)
    def add_float32(self, k, v): self.add_kv(k, v, GGUF_FLOAT32)
    def add_float64(self, k, v): self.add_kv(k, v, GGUF_FLOAT64)
    def add_bool(self, k, v): self.add_kv(k, v, GGUF_BOOL)
    def add_string(self, k, v): self.add_kv(k, v, GGUF_STRING)

    def add_array(self, key, values, elem_type=None):
        """Array of numbers or strings; elem_type is a GGUF_* value type
        (inferred when omitted: str -> STRING, int -> INT32, float ->
        FLOAT32, bool -> BOOL, numpy array -> its dtype)."""
        self.add_kv(key, values, GGUF_ARRAY, elem_type)

    # -- tensors --------------------------------------------------------
    def add_tensor(self, name, array, ggml_type=GGML_F32):
        """array: row-major (NumPy/PyTorch order).  ne is its shape reversed."""
        if isinstance(ggml_type, str):
            ggml_type = _GGML_NAMES[ggml_type]
        if name in self._names:
            raise KeyError("duplicate tensor %r" % name)
        if hasattr(array, "detach"):
            array = array.detach().cpu().numpy()
        a = np.asarray(array)
        if a.ndim < 1 or a.ndim > 4:
            raise ValueError("tensor %r: ggml supports 1..4 dims" % name)
        ne = list(reversed(a.shape))
        if ggml_type == GGML_F32:
            data = np.ascontiguousarray(a, dtype="<f4").tobytes()
        elif ggml_type == GGML_F16:
            data = _f16_bytes(a)
        elif ggml_type == GGML_Q8_0:
            data = quantize_q8_0(a)
        else:
            raise ValueError("unsupported ggml type %r" % ggml_type)
        self._names.add(name)
        self._tensors.append((name, ne, ggml_type, data))

    # -- output ---------------------------------------------------------
    def _pad(self, n):
        return (-n) % self.alignment

    def to_bytes(self):
        parts = [GGUF_MAGIC, struct.pack("<IQQ", GGUF_VERSION, len(self._tensors), len(self._kv))]
        for key, packed in self._kv:
            parts.append(_pack_string(key))
            parts.append(packed)
        offset = 0
        for name, ne, gtype, data in self._tensors:
            parts.append(_pack_string(name))
            parts.append(struct.pack("<I", len(ne)))
            parts.append(struct.pack("<%dQ" % len(ne), *ne))
            parts.append(struct.pack("<IQ", gtype, offset))
            offset += len(data) + self._pad(len(data))
        head = b"".join(parts)
        out = [head, b"\0" * self._pad(len(head))]
        for _, _, _, data in self._tensors:
            out.append(data)
            out.append(b"\0" * self._pad(len(data)))
        return b"".join(out)

    def write(self):
        blob = self.to_bytes()
        d = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(d, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".gguf", dir=d)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(blob)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o644)
            os.replace(tmp, self.path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return len(blob)
