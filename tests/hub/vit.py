#!/usr/bin/env python3
"""ViT checkpoints as the hub ships them, against an independent reference.

For each real metadata set under tests/hub/ (google/vit-base-patch16-224's
config.json with its 1000 classes and legacy ViTFeatureExtractor file; a
fine-tuned PlantNet ViT whose id2label values are integers; a CLIP image
processor paired with the ViT config), this writes a directory under
build/hub/vit/: the real config.json with its sizes shrunk (hidden size,
layers, heads, MLP, patch) and its preprocessor_config.json as shipped,
plus random weights (fixed seed) in ViTForImageClassification's key layout
and dtype (float32 safetensors: vit.embeddings.cls_token, ...,
vit.encoder.layer.N..., vit.layernorm, classifier). It makes JPEG photos
with PIL (landscape 300 x 200, portrait 97 x 131, one with EXIF
orientation 6) and runs attnscope on each: `image PHOTO; finish; dump
head.hook_out`. The reference is written here from the definitions:
transformers' preprocessing as its slow image processors run it (PIL
Image.open, ImageOps.exif_transpose, convert("RGB"), PIL resize with the
file's filter to `size` (a square, {height, width}, or CLIP's shortest
edge), numpy centre crop, float64 * rescale_factor cast to float32,
(x - mean) / std in float32), then a float64 NumPy ViT forward pass. The
logits at [CLS] must agree within 1e-4 of the largest, and `top` must name
the reference's best class by its id2label name.

    python3 tests/hub/vit.py [ATTNSCOPE]

Prints one line per case and 'N passed, N failed'; exits 1 on a failure.
"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys

import numpy as np
from PIL import Image, ImageOps

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "attnscope")
OUT = os.path.join(ROOT, "build", "hub", "vit")

SHRINK = {"hidden_size": 48, "num_hidden_layers": 2, "num_attention_heads": 4, "intermediate_size": 96,
          "patch_size": 32}

# name, config.json from, preprocessor_config.json from, extra overrides to the preprocessor
CASES = [
    ("vit-base-patch16-224", "vit-base-patch16-224", "vit-base-patch16-224", None),
    ("plantnet-vit", "plantnet-vit", "plantnet-vit", None),
    ("vit-with-clip-processor", "vit-base-patch16-224", "sd15-clip-preprocessor", None),
    # the same real files with the other filters PIL has (ViT checkpoints use 2, CLIP 3)
    ("plantnet-vit-nearest", "plantnet-vit", "plantnet-vit", {"resample": 0}),
    ("plantnet-vit-lanczos", "plantnet-vit", "plantnet-vit", {"resample": 1}),
]


def write_safetensors(path, tensors):
    header, blobs, off = {}, [], 0
    for name, arr in tensors.items():
        b = np.ascontiguousarray(arr, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    header["__metadata__"] = {"format": "pt"}
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def weights(cfg, rng):
    D, L, F, P = cfg["hidden_size"], cfg["num_hidden_layers"], cfg["intermediate_size"], cfg["patch_size"]
    C, S = len(cfg["id2label"]), cfg["image_size"]
    N = (S // P) ** 2
    r = lambda *shape, s=0.2: (rng.standard_normal(shape) * s).astype(np.float32)
    t = {"vit.embeddings.cls_token": r(1, 1, D), "vit.embeddings.position_embeddings": r(1, 1 + N, D),
         "vit.embeddings.patch_embeddings.projection.weight": r(D, 3, P, P, s=0.05),
         "vit.embeddings.patch_embeddings.projection.bias": r(D)}
    for i in range(L):
        p = f"vit.encoder.layer.{i}."
        for m in ("attention.attention.query", "attention.attention.key", "attention.attention.value",
                  "attention.output.dense"):
            t[p + m + ".weight"], t[p + m + ".bias"] = r(D, D), r(D)
        t[p + "intermediate.dense.weight"], t[p + "intermediate.dense.bias"] = r(F, D), r(F)
        t[p + "output.dense.weight"], t[p + "output.dense.bias"] = r(D, F), r(D)
        for n in ("layernorm_before", "layernorm_after"):
            t[p + n + ".weight"], t[p + n + ".bias"] = 1 + r(D, s=0.1), r(D, s=0.1)
    t["vit.layernorm.weight"], t["vit.layernorm.bias"] = 1 + r(D, s=0.1), r(D, s=0.1)
    t["classifier.weight"], t["classifier.bias"] = r(C, D), r(C)
    return t


# ---------------------------------------------------------------- the reference

def size_dict(v, default_to_square):
    """transformers' get_size_dict."""
    if isinstance(v, int):
        return {"height": v, "width": v} if default_to_square else {"shortest_edge": v}
    return dict(v)


def preprocess(path, pp, exif=True):
    """ViTImageProcessor / CLIPImageProcessor (the slow, PIL ones)."""
    kind = pp.get("image_processor_type") or pp.get("feature_extractor_type") or "ViTImageProcessor"
    clip = kind.startswith("CLIP")
    im = Image.open(path)
    im = (ImageOps.exif_transpose(im) if exif else im).convert("RGB")
    resample = pp.get("resample", 3 if clip else 2)
    if pp.get("do_resize", True):
        size = size_dict(pp.get("size", 224), default_to_square=not clip)
        if "shortest_edge" in size:  # get_resize_output_image_size(default_to_square=False)
            w, h = im.size
            short, long = (w, h) if w <= h else (h, w)
            new_short, new_long = size["shortest_edge"], int(size["shortest_edge"] * long / short)
            ow, oh = (new_short, new_long) if w <= h else (new_long, new_short)
        else:
            ow, oh = size["width"], size["height"]
        im = im.resize((ow, oh), resample=resample)
    a = np.asarray(im)  # H, W, 3 uint8
    if pp.get("do_center_crop", clip):
        c = size_dict(pp.get("crop_size", 224), default_to_square=True)
        H, W = a.shape[:2]
        top, left = (H - c["height"]) // 2, (W - c["width"]) // 2
        assert top >= 0 and left >= 0, "the photos are larger than the crop"
        a = a[top:top + c["height"], left:left + c["width"]]
    x = a
    if pp.get("do_rescale", True):
        x = (x.astype(np.float64) * pp.get("rescale_factor", 1 / 255)).astype(np.float32)
    if pp.get("do_normalize", True):
        mean = np.array(pp.get("image_mean", [0.48145466, 0.4578275, 0.40821073] if clip else [0.5] * 3), np.float32)
        std = np.array(pp.get("image_std", [0.26862954, 0.26130258, 0.27577711] if clip else [0.5] * 3), np.float32)
        x = (x.astype(np.float32) - mean) / std
    return x.transpose(2, 0, 1)  # C, H, W


def layer_norm(x, w, b, eps):
    m = x.mean(-1, keepdims=True)
    v = ((x - m) ** 2).mean(-1, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * w + b


ERF = np.vectorize(math.erf)


def vit_forward(px, cfg, t):
    """ViTForImageClassification's forward, float64."""
    g = {k: v.astype(np.float64) for k, v in t.items()}
    D, H, P = cfg["hidden_size"], cfg["num_attention_heads"], cfg["patch_size"]
    eps = cfg.get("layer_norm_eps", 1e-12)
    C, S, _ = px.shape
    n = S // P
    patches = px.astype(np.float64).reshape(C, n, P, n, P).transpose(1, 3, 0, 2, 4).reshape(n * n, C * P * P)
    wp = g["vit.embeddings.patch_embeddings.projection.weight"].reshape(D, -1)
    x = patches @ wp.T + g["vit.embeddings.patch_embeddings.projection.bias"]
    x = np.concatenate([g["vit.embeddings.cls_token"][0], x]) + g["vit.embeddings.position_embeddings"][0]
    dh = D // H
    for i in range(cfg["num_hidden_layers"]):
        p = f"vit.encoder.layer.{i}."
        lin = lambda y, m: y @ g[p + m + ".weight"].T + g[p + m + ".bias"]
        h = layer_norm(x, g[p + "layernorm_before.weight"], g[p + "layernorm_before.bias"], eps)
        q, k, v = (lin(h, "attention.attention." + m).reshape(-1, H, dh).transpose(1, 0, 2)
                   for m in ("query", "key", "value"))
        s = q @ k.transpose(0, 2, 1) / math.sqrt(dh)
        s = np.exp(s - s.max(-1, keepdims=True))
        s /= s.sum(-1, keepdims=True)
        z = (s @ v).transpose(1, 0, 2).reshape(-1, D)
        x = x + lin(z, "attention.output.dense")
        h = layer_norm(x, g[p + "layernorm_after.weight"], g[p + "layernorm_after.bias"], eps)
        u = lin(h, "intermediate.dense")
        x = x + lin(0.5 * u * (1 + ERF(u / math.sqrt(2))), "output.dense")
    x = layer_norm(x, g["vit.layernorm.weight"], g["vit.layernorm.bias"], eps)
    return x[0] @ g["classifier.weight"].T + g["classifier.bias"]


# ---------------------------------------------------------------- the photos

def photo(w, h, seed):
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w].astype(np.float64)
    img = np.stack([128 + 90 * np.sin(x / (w / 3.1)) * np.cos(y / (h / 2.3)),
                    100 + 80 * np.cos((x + y) / (w / 4.7)), 60 + 150 * (x / w) * (1 - y / h)], -1)
    img[(x - w * 0.6) ** 2 + (y - h * 0.45) ** 2 < (min(w, h) * 0.22) ** 2] = [230, 40, 35]
    img += rng.normal(0, 6, img.shape)
    return Image.fromarray(np.clip(np.rint(img), 0, 255).astype(np.uint8))


def photos():
    d = os.path.join(OUT, "photos")
    os.makedirs(d, exist_ok=True)
    out = []
    for name, (w, h), exif in [("landscape-300x200.jpg", (300, 200), None), ("portrait-97x131.jpg", (97, 131), None),
                               ("turned-260x240-exif6.jpg", (260, 240), 6)]:
        p = os.path.join(d, name)
        kw = {}
        if exif:
            e = Image.Exif()
            e[0x0112] = exif
            kw["exif"] = e.tobytes()
        photo(w, h, len(out)).save(p, "JPEG", quality=90, **kw)
        out.append(p)
    return out


def read_npy(path):
    with open(path, "rb") as f:
        return np.load(f)


def run_case(name, cfg_from, pp_from, pp_edit, pics):
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    with open(os.path.join(HERE, cfg_from, "config.json")) as f:
        cfg = json.load(f)
    cfg.update(SHRINK)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
    with open(os.path.join(HERE, pp_from, "preprocessor_config.json")) as f:
        pp = json.load(f)
    if pp_edit:
        pp.update(pp_edit)
    with open(os.path.join(d, "preprocessor_config.json"), "w") as f:
        json.dump(pp, f, indent=2)
    t = weights(cfg, np.random.default_rng(29))
    write_safetensors(os.path.join(d, "model.safetensors"), t)
    fails = 0
    for pic in pics:
        ref = vit_forward(preprocess(pic, pp), cfg, t)
        # what a wrong preparation would give (another filter; the EXIF tag
        # ignored): the tolerance must tell these apart, or the test proves nothing
        other = dict(pp, resample=3 if pp.get("resample", 2) != 3 else 2)
        alts = [vit_forward(preprocess(pic, other), cfg, t)]
        if "exif" in pic:
            alts.append(vit_forward(preprocess(pic, pp, exif=False), cfg, t))
        gap = min(np.abs(a - ref).max() for a in alts) / np.abs(ref).max()
        assert gap > 1e-3, f"{name}: a wrong preparation changes the logits by only {gap:.1e}"
        npy = os.path.join(d, "logits.npy")
        cmd = [BIN, d, "--no-tui", "-e", f"image {pic}; finish; dump head.hook_out {npy}; top 1"]
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            print(f"FAIL {name} {os.path.basename(pic)}: attnscope exited {r.returncode}: {r.stderr.strip()}")
            fails += 1
            continue
        got = read_npy(npy).astype(np.float64)
        got = got.reshape(-1, ref.shape[0])[0]  # [CLS]
        scale = np.abs(ref).max()
        err = np.abs(got - ref).max() / scale
        best = str(cfg["id2label"][str(int(ref.argmax()))])
        rows = [l.split("\t") for l in r.stdout.splitlines() if l.startswith("1\t")]
        named = rows and rows[0][2] == best
        ok = err <= 1e-4 and named
        fails += not ok
        line = [l for l in r.stdout.splitlines() if l.startswith("image ")]
        print(f"{'ok  ' if ok else 'FAIL'} {name} {os.path.basename(pic)}: max |logit diff| / max |logit| = "
              f"{err:.2e} (1e-4 allowed; another filter or no EXIF turn: {gap:.1e}); best class {best!r}{'' if named else ', attnscope: ' + repr(rows)}"
              f"\n     {line[0] if line else r.stdout.strip()[:200]}")
    return fails


def main():
    if not os.path.exists(BIN):
        print(f"SKIP: {BIN} is not built", file=sys.stderr)
        return 1
    pics = photos()
    passed = failed = 0
    for name, cfg_from, pp_from, edit in CASES:
        f = run_case(name, cfg_from, pp_from, edit, pics)
        failed += f
        passed += len(pics) - f
    print(f"vit: {passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
