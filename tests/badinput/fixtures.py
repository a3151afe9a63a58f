"""The bad-input corpus's files: copies of the bundled models and of test
fixtures, and broken or odd files made from them, all in the scratch
directory the runner gives (never the originals in place).

    build(scratch, repo)  -> makes every file below in scratch

GGUF edits go through a small reader of GGUF v3's layout (header, metadata,
tensor records), so a broken file is the shipped model with one field
changed and everything else intact: the message must then name that field.
Needs Python's standard library only."""
import os
import shutil
import struct
import zlib

# GGUF metadata value types and their scalar sizes (string and array apart)
SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
STRING, ARRAY = 8, 9


class Gguf:
    """Where each field of a GGUF file lies: kv[key] = (type, value offset,
    value size); tensors[name] = dict(name_off, dims_off, type_off, off_off,
    dims, type, offset); data = where the tensor data begins."""

    def __init__(self, blob):
        self.blob = blob
        assert blob[:4] == b"GGUF"
        self.n_tensors, self.n_kv = struct.unpack_from("<QQ", blob, 8)
        p = 24
        self.kv, self.key_off = {}, {}
        for _ in range(self.n_kv):
            key, q = self._str(p)
            self.key_off[key] = p
            t = struct.unpack_from("<I", blob, q)[0]
            end = self._value_end(t, q + 4)
            self.kv[key] = (t, q + 4, end - (q + 4))
            p = end
        self.tensors = {}
        for _ in range(self.n_tensors):
            name, q = self._str(p)
            nd = struct.unpack_from("<I", blob, q)[0]
            dims = struct.unpack_from("<%dQ" % nd, blob, q + 4)
            tq = q + 4 + 8 * nd
            t, off = struct.unpack_from("<IQ", blob, tq)
            self.tensors[name] = dict(name_off=p, dims_off=q + 4, type_off=tq, off_off=tq + 4,
                                      dims=dims, type=t, offset=off)
            p = tq + 12
        align = 32
        if "general.alignment" in self.kv:
            align = struct.unpack_from("<I", blob, self.kv["general.alignment"][1])[0]
        self.data = (p + align - 1) // align * align

    def _str(self, p):
        n = struct.unpack_from("<Q", self.blob, p)[0]
        return self.blob[p + 8:p + 8 + n].decode("utf-8"), p + 8 + n

    def _value_end(self, t, p):
        if t == STRING:
            return p + 8 + struct.unpack_from("<Q", self.blob, p)[0]
        if t == ARRAY:
            et, n = struct.unpack_from("<IQ", self.blob, p)
            p += 12
            if et in SCALAR:
                return p + n * SCALAR[et]
            for _ in range(n):
                p = self._value_end(et, p)
            return p
        return p + SCALAR[t]

    def tensor_data(self, name):
        return self.data + self.tensors[name]["offset"]


def edit(src, dst, changes):
    """Writes src with each (offset, bytes) of changes put in place to dst."""
    blob = bytearray(open(src, "rb").read())
    for off, data in changes:
        blob[off:off + len(data)] = data
    with open(dst, "wb") as f:
        f.write(blob)


def ggufs(s, repo):
    """Broken and odd GGUF files made from tests/fixtures/tiny-gpt2.gguf (a
    gpt2 of 2 blocks, 4 heads, 32 dimensions, 148 kB: cheap to copy)."""
    src = os.path.join(s, "tiny.gguf")
    shutil.copy(os.path.join(repo, "tests/fixtures/tiny-gpt2.gguf"), src)
    blob = open(src, "rb").read()
    g = Gguf(blob)

    def out(name, changes):
        edit(src, os.path.join(s, name), changes)

    def u32(key, v):
        t, off, _ = g.kv[key]
        assert t == 4, key
        return (off, struct.pack("<I", v))

    def f32s(tensor, index, values):
        return (g.tensor_data(tensor) + 4 * index, struct.pack("<%df" % len(values), *values))

    def rename_key(key, new):
        assert len(new) == len(key)
        return (g.key_off[key] + 8, new.encode())

    def rename_tensor(name, new):
        assert len(new) == len(name)
        return (g.tensors[name]["name_off"] + 8, new.encode())

    def arch(new):
        t, off, size = g.kv["general.architecture"]
        assert len(new) == size - 8
        return (off + 8, new.encode())

    for n, size in (("trunc-4", 4), ("trunc-24", 24), ("trunc-1k", 1000), ("trunc-mid", 100000),
                    ("trunc-tail", len(blob) - 32)):
        with open(os.path.join(s, n + ".gguf"), "wb") as f:
            f.write(blob[:size])
    open(os.path.join(s, "empty.gguf"), "wb").close()
    with open(os.path.join(s, "text.gguf"), "w") as f:
        f.write("this is not a model, it is a note\n")
    out("badmagic.gguf", [(0, b"GGUX")])
    out("version99.gguf", [(4, struct.pack("<I", 99))])
    out("version1.gguf", [(4, struct.pack("<I", 1))])
    out("hugetensors.gguf", [(8, struct.pack("<Q", 1 << 62))])
    out("hugekv.gguf", [(16, struct.pack("<Q", 1 << 62))])
    out("hugekeylen.gguf", [(24, struct.pack("<Q", 1 << 60))])
    first_key = min(g.key_off.values())
    key0 = [k for k, o in g.key_off.items() if o == first_key][0]
    out("badkvtype.gguf", [(first_key + 8 + len(key0), struct.pack("<I", 77))])
    emb = g.tensors["token_embd.weight"]
    out("badtensortype.gguf", [(emb["type_off"], struct.pack("<I", 99))])
    out("hugedims.gguf", [(emb["dims_off"], struct.pack("<Q", 1 << 40))])
    out("misaligned.gguf", [(g.tensors["blk.0.attn_norm.weight"]["off_off"],
                             struct.pack("<Q", g.tensors["blk.0.attn_norm.weight"]["offset"] + 1))])
    out("offpastend.gguf", [(g.tensors["output_norm.weight"]["off_off"], struct.pack("<Q", 1 << 40))])
    out("noarch.gguf", [arch("gpx2")])
    out("notensor.gguf", [rename_tensor("blk.1.ffn_up.weight", "blk.1.ffn_up.weighX")])
    out("duptensor.gguf", [rename_tensor("blk.1.ffn_up.weight", "blk.0.ffn_up.weight")])
    out("nokey.gguf", [rename_key("gpt2.block_count", "gpt2.block_counX")])
    out("blocks99.gguf", [u32("gpt2.block_count", 99)])
    out("heads0.gguf", [u32("gpt2.attention.head_count", 0)])
    out("heads7.gguf", [u32("gpt2.attention.head_count", 7)])
    out("ctx0.gguf", [u32("gpt2.context_length", 0)])
    out("embd0.gguf", [u32("gpt2.embedding_length", 0)])
    # non-finite weights: the file loads, the numbers are poisoned
    out("nan-attn1.gguf", [f32s("blk.1.attn_qkv.weight", 0, [float("nan")] * 32)])
    out("inf-attn1.gguf", [f32s("blk.1.attn_qkv.weight", 5, [float("inf")])])
    # q's output 11 is head 1, dimension 3 (8 dimensions a head)
    out("nan-q-h1d3.gguf", [f32s("blk.1.attn_qkv.weight", 11 * 32, [float("nan")] * 32)])
    out("nan-embd.gguf", [f32s("token_embd.weight", 0, [float("nan")] * 32 * 277)])
    # copies that differ from tiny.gguf in one tensor value, in one
    # hyperparameter: diff must find each
    out("edited.gguf", [f32s("blk.1.ffn_down.weight", 7, [12.5])])
    # a shape edit before the value edit: diff must list both
    norm = g.tensors["blk.0.attn_norm.weight"]
    out("shape-edited.gguf", [(norm["dims_off"], struct.pack("<Q", 16)), f32s("blk.1.ffn_down.weight", 7, [12.5])])
    t, off, _ = g.kv["gpt2.attention.layer_norm_epsilon"]
    out("eps.gguf", [(off, struct.pack("<f", 1e-3))])


def png(path, w, h, data=None, colour=0, depth=8):
    """A PNG whose header says w x h; data (raw scanlines) may lie about it."""
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))
    if data is None:
        data = b"".join(b"\0" + b"\x80" * w for _ in range(h))
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, colour, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(data)) + chunk(b"IEND", b""))


def images(s, repo):
    shutil.copy(os.path.join(repo, "tests/fixtures/tiny-vit/image.png"), os.path.join(s, "shirt.png"))
    good = open(os.path.join(s, "shirt.png"), "rb").read()
    with open(os.path.join(s, "trunc.png"), "wb") as f:
        f.write(good[:60])
    open(os.path.join(s, "empty.png"), "wb").close()
    with open(os.path.join(s, "text.png"), "w") as f:
        f.write("a note, not a picture\n")
    png(os.path.join(s, "huge.png"), 1000000, 1000000, data=b"\0" * 64)
    png(os.path.join(s, "zero.png"), 0, 0, data=b"")
    png(os.path.join(s, "short.png"), 28, 28, data=b"\0" * 100)
    with open(os.path.join(s, "huge.pgm"), "wb") as f:
        f.write(b"P5 100000 100000 255\n" + b"\0" * 16)
    with open(os.path.join(s, "zero.pgm"), "wb") as f:
        f.write(b"P5 0 0 255\n")
    with open(os.path.join(s, "maxval0.pgm"), "wb") as f:
        f.write(b"P5 2 2 0\n\0\0\0\0")
    with open(os.path.join(s, "short.pgm"), "wb") as f:
        f.write(b"P5 28 28 255\n" + b"\x80" * 10)
    with open(os.path.join(s, "trunc.jpg"), "wb") as f:
        f.write(b"\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00")


def hf_dirs(s, repo):
    hf = os.path.join(repo, "tests/fixtures/hf")

    def mk(name, src):
        d = os.path.join(s, name)
        shutil.copytree(os.path.join(hf, src), d)
        return d

    def sub(path, old, new):
        text = open(path).read()
        assert old in text, (path, old)
        with open(path, "w") as f:
            f.write(text.replace(old, new))

    mk("hf-gpt2", "tiny-gpt2")
    with open(os.path.join(mk("hf-badjson", "tiny-gpt2"), "config.json"), "w") as f:
        f.write("{not json\n")
    open(os.path.join(mk("hf-emptyconfig", "tiny-gpt2"), "config.json"), "w").close()
    os.remove(os.path.join(mk("hf-noweights", "tiny-gpt2"), "model.safetensors"))
    os.remove(os.path.join(mk("hf-notok", "tiny-gpt2"), "tokenizer.json"))
    d = mk("hf-badtype", "tiny-gpt2")
    sub(os.path.join(d, "config.json"), '"gpt2"', '"frobnet"')
    d = mk("hf-trunc", "tiny-gpt2")
    st = os.path.join(d, "model.safetensors")
    blob = open(st, "rb").read()
    with open(st, "wb") as f:
        f.write(blob[:5000])
    d = mk("hf-hugehdr", "tiny-gpt2")
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(b"\xff" * 8 + b"{}")
    os.remove(os.path.join(mk("hf-noshard", "tiny-llama"), "model-00002-of-00002.safetensors"))
    with open(os.path.join(mk("hf-badtok", "tiny-gpt2"), "tokenizer.json"), "w") as f:
        f.write('{"vocab": \n')
    d = mk("hf-layers99", "tiny-gpt2")
    cfg = os.path.join(d, "config.json")
    import json
    c = json.load(open(cfg))
    c["n_layer"] = 99
    json.dump(c, open(cfg, "w"))
    d = mk("hf-heads0", "tiny-gpt2")
    c["n_layer"] = json.load(open(os.path.join(hf, "tiny-gpt2/config.json")))["n_layer"]
    c["n_head"] = 0
    json.dump(c, open(os.path.join(d, "config.json"), "w"))
    os.mkdir(os.path.join(s, "emptydir"))


def scripts(s):
    def w(name, data):
        with open(os.path.join(s, name), "wb") as f:
            f.write(data)
    w("script-bad3.txt", b"prompt the cat sat\nfinish\nfrob 3\ntop 2\n")
    w("script-ok.txt", b"# a comment\n\nprompt the cat sat\n  finish  \ntop 2\n")
    w("script-crlf.txt", b"prompt the cat sat\r\nfinish\r\ntop 2\r\n")
    w("script-nul.txt", b"prompt the cat\0 sat\nfinish\ntop 2\n")
    w("script-binary.txt", bytes(range(256)) * 4)
    w("script-longline.txt", b"prompt " + b"word " * 20000 + b"\n")
    w("script-noeol.txt", b"prompt the cat sat\nfinish\ntop 2")
    w("script-empty.txt", b"")


def build(s, repo):
    models = os.path.join(repo, "models")
    for src, dst in (("austen-gpt2", "gpt2"), ("austen-bert", "bert"), ("austen-llama", "llama"),
                     ("de-en", "deen"), ("vit-fashion", "vit"), ("austen-moe", "moe")):
        shutil.copy(os.path.join(models, src + ".gguf"), os.path.join(s, dst + ".gguf"))
    ggufs(s, repo)
    images(s, repo)
    hf_dirs(s, repo)
    scripts(s)
    with open(os.path.join(s, "note.txt"), "w") as f:
        f.write("a file that is in the way\n")
    for name in ("fifo", "fifo.npy", "fifo.png"):
        os.mkfifo(os.path.join(s, name))
    os.symlink("gpt2.gguf", os.path.join(s, "link.gguf"))
    os.symlink("nowhere.gguf", os.path.join(s, "dangling.gguf"))
    os.symlink("note.txt", os.path.join(s, "note-link.npy"))
    os.symlink("gpt2.gguf", os.path.join(s, "model-link.png"))
    os.symlink("gpt2.gguf", os.path.join(s, "model-link.npy"))
    for name in ("out", "dir.npy", "dir.png"):
        os.mkdir(os.path.join(s, name))
