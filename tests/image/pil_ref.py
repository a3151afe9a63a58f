#!/usr/bin/env python3
"""PIL's own answers for tests/test_image.c: JPEG decoding, EXIF
orientation, Image.resize and transformers' preprocessing arithmetic.

    python3 pil_ref.py OUTDIR

writes test photos (JPEG) and what PIL makes of them as raw 8-bit files,
and OUTDIR/manifest.txt, one case a line:

    decode  FILE.jpg  REF.raw  W H C          PIL's decode (RGB or L), after exif_transpose
    resize  SRC.raw W H  REF.raw OW OH FILTER  Image.resize(src, (OW, OH), FILTER) of an RGB image
    rgb8    FILE REF.raw W H                   PIL's convert("RGB") of a PPM/PGM of another maxval or a 16-bit PNG
    prep    FILE.jpg REF.f32 FILTER RH RW EDGE CH CW C  transformers' preparation (float32 [C][S][S],
                                               mean 0.5/std 0.25 per channel) as its slow image processors run it
    bad     FILE.jpg  WHAT                     a file PIL refuses to load

The photos are "real-ish": smooth shading, edges, texture and sensor noise
(a fixed seed), so that every filter's ringing and rounding is exercised.
"""
import io
import os
import sys

import numpy as np
from PIL import Image, ImageOps


def photo(w, h, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    r = 128 + 90 * np.sin(x / (w / 3.1) + 0.4) * np.cos(y / (h / 2.3))
    g = 100 + 80 * np.cos((x + y) / (w / 4.7))
    b = 60 + 150 * (x / w) * (1 - y / h)
    img = np.stack([r, g, b], -1)
    # a hard-edged object and a fine texture (stripes near the Nyquist rate)
    cx, cy = w * 0.6, h * 0.45
    disc = (x - cx) ** 2 + (y - cy) ** 2 < (min(w, h) * 0.22) ** 2
    img[disc] = [230, 40, 35]
    img[(x.astype(int) // 2 + y.astype(int) // 3) % 2 == 0] *= 0.85
    img += rng.normal(0, 6, img.shape)
    return np.clip(np.rint(img), 0, 255).astype(np.uint8)


def raw(path, arr):
    arr = np.ascontiguousarray(arr, dtype=np.uint8)
    arr.tofile(path)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    lines = []

    def decode_case(name, im_bytes):
        p = os.path.join(out, name)
        with open(p, "wb") as f:
            f.write(im_bytes)
        im = ImageOps.exif_transpose(Image.open(p))
        if im.mode not in ("L", "RGB"):
            im = im.convert("RGB")
        a = np.asarray(im)
        c = 1 if a.ndim == 2 else a.shape[2]
        raw(p + ".raw", a)
        lines.append(f"decode {name} {name}.raw {im.size[0]} {im.size[1]} {c}")

    def jpeg(im, **kw):
        b = io.BytesIO()
        im.save(b, "JPEG", **kw)
        return b.getvalue()

    # decoding: sizes, subsamplings, progressive, grey, CMYK
    sizes = [(300, 200), (97, 131), (224, 224), (640, 480), (50, 37)]
    for i, (w, h) in enumerate(sizes):
        im = Image.fromarray(photo(w, h, i))
        decode_case(f"photo{i}.jpg", jpeg(im, quality=90))
    base = Image.fromarray(photo(120, 90, 7))
    decode_case("s444.jpg", jpeg(base, quality=95, subsampling=0))
    decode_case("s422.jpg", jpeg(base, quality=80, subsampling=1))
    decode_case("progressive.jpg", jpeg(base, quality=85, progressive=True))
    decode_case("grey.jpg", jpeg(base.convert("L"), quality=90))
    decode_case("cmyk.jpg", jpeg(base.convert("CMYK"), quality=90))

    # EXIF orientations 1..8 on a non-square photo
    small = Image.fromarray(photo(40, 24, 11))
    for o in range(1, 9):
        exif = Image.Exif()
        exif[0x0112] = o
        decode_case(f"orient{o}.jpg", jpeg(small, quality=92, exif=exif.tobytes()))
    # big-endian EXIF ("MM"), written by hand: IFD0 with one Orientation entry (6)
    tiff = b"MM\x00\x2a\x00\x00\x00\x08" + b"\x00\x01" + b"\x01\x12\x00\x03\x00\x00\x00\x01\x00\x06\x00\x00" + b"\x00\x00\x00\x00"
    decode_case("orient6-mm.jpg", jpeg(small, quality=92, exif=b"Exif\x00\x00" + tiff))

    # resize: every filter ViT / CLIP use (and the rest), down, up, non-square
    for i, (w, h) in enumerate([(300, 200), (97, 131), (640, 480), (50, 37)]):
        src = photo(w, h, 20 + i)
        sp = f"src{i}.raw"
        raw(os.path.join(out, sp), src)
        targets = [(224, 224), (61, 45), (w, 224), (333, 256)]
        for (ow, oh) in targets:
            for flt in (0, 1, 2, 3, 4, 5):
                ref = Image.fromarray(src).resize((ow, oh), resample=flt)
                name = f"res{i}_{ow}x{oh}_{flt}.raw"
                raw(os.path.join(out, name), np.asarray(ref))
                lines.append(f"resize {sp} {w} {h} {name} {ow} {oh} {flt}")

    # 8-bit RGB of samples of other depths, as PIL reads them
    import struct
    import zlib
    rng = np.random.default_rng(3)

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)

    for name, maxval, ch in [("c16.ppm", 65535, 3), ("c1000.ppm", 1000, 3), ("g15.pgm", 15, 1), ("c16.png", 65535, 3)]:
        w, h = 61, 7
        v = rng.integers(0, maxval + 1, (h, w, ch))
        v.flat[:4] = [0, maxval, maxval // 2, 255 % (maxval + 1)]
        if name.endswith(".png"):
            rows = b"".join(b"\x00" + v[y].astype(">u2").tobytes() for y in range(h))
            data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 16, 2, 0, 0, 0)) +
                    chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
        else:
            dt = ">u2" if maxval > 255 else "u1"
            data = f"P{6 if ch == 3 else 5}\n{w} {h}\n{maxval}\n".encode() + v.astype(dt).tobytes()
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        a = np.asarray(Image.open(os.path.join(out, name)).convert("RGB"))
        raw(os.path.join(out, name + ".raw"), a)
        lines.append(f"rgb8 {name} {name}.raw {w} {h}")

    # transformers' preparation of photos: resize to a square, or CLIP's
    # shortest edge then a centre crop (odd margins), rescale by 1/255 in
    # float64 cast to float32, normalise in float32; a grey model's "L"
    mean = np.array([0.48145466, 0.4578275, 0.40821073], np.float32)
    std = np.array([0.26862954, 0.26130258, 0.27577711], np.float32)
    for name, flt, rh, rw, edge, ch, cw, c in [("photo0.jpg", 2, 24, 24, 0, 0, 0, 3),
                                               ("photo1.jpg", 3, 0, 0, 33, 31, 31, 3),
                                               ("photo3.jpg", 3, 0, 0, 50, 49, 49, 3),
                                               ("orient6.jpg", 1, 0, 0, 17, 17, 17, 3),
                                               ("photo4.jpg", 2, 20, 20, 0, 0, 0, 1)]:
        im = ImageOps.exif_transpose(Image.open(os.path.join(out, name))).convert("RGB" if c == 3 else "L")
        if edge:
            w, h = im.size
            short, long = (w, h) if w <= h else (h, w)
            ns, nl = edge, int(edge * long / short)
            size = (ns, nl) if w <= h else (nl, ns)
        else:
            size = (rw, rh)
        a = np.asarray(im.resize(size, resample=flt))
        if a.ndim == 2:
            a = a[:, :, None]
        if ch:
            top, left = (a.shape[0] - ch) // 2, (a.shape[1] - cw) // 2
            a = a[top:top + ch, left:left + cw]
        x = (a.astype(np.float64) * (1 / 255)).astype(np.float32)
        x = (x - mean[:c]) / std[:c]
        ref = f"prep-{name}-{flt}.f32"
        np.ascontiguousarray(x.transpose(2, 0, 1), dtype="<f4").tofile(os.path.join(out, ref))
        lines.append(f"prep {name} {ref} {flt} {rh} {rw} {edge} {ch} {cw} {c}")

    # bad files PIL refuses
    good = jpeg(base, quality=90)
    for name, data, what in [("truncated.jpg", good[: len(good) // 2], "truncated"),
                             ("header-only.jpg", good[:300], "truncated"),
                             ("no-frame.jpg", b"\xff\xd8\xff\xd9", "corrupt")]:
        p = os.path.join(out, name)
        with open(p, "wb") as f:
            f.write(data)
        try:
            Image.open(p).load()
            raise SystemExit(f"PIL loaded {name}")
        except (OSError, SyntaxError):
            pass
        lines.append(f"bad {name} {what}")
    with open(os.path.join(out, "manifest.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
