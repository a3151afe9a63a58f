"""The ViT fixtures and the image fixtures, for make_fixtures.py.

Images (tests/fixtures/image/): seeded random PNGs written by PIL, and
PyTorch's torch.nn.functional.interpolate of their samples / 255 (float64)
to 28 x 28: bilinear (align_corners=False, antialias=False) and nearest;
RGB to grey with torchvision's rgb_to_grayscale weights, grey to RGB by
repeating the channel. tests/test_image.c holds attnscope's loader to them.

tiny-vit (tests/fixtures/tiny-vit.gguf, tiny-vit/): torchvision's own
VisionTransformer, random weights (seeded), 28 x 28 grey input, patch 7
(a 4 x 4 grid: 16 patches + [CLS]), d 32, 2 layers, 4 heads, MLP 64,
LayerNorm eps 1e-6, erf GELU, 10 classes; converted by convert_vit.py.
Its input is tiny-vit/image.png (one grey 8-bit image, 28 x 28), prepared
as the file says (/255, (x - mean) / std); pixels.npy is that prepared
input [1, 28, 28]. Every hook is computed in float64 by hooking
torchvision's own modules (forward hooks on ln_1, self_attention's
in/out projections, ln_2, mlp.0, mlp.1, mlp.3, encoder.ln, heads) and by
the attention's own definition between them (scores, softmax, z), which
the check then holds to torchvision's own attention output.
head.hook_out holds the head over every position; row 0 ([CLS]) is
torchvision's logits.
"""
import json
import os
import shutil
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert_vit  # noqa: E402

IMAGES = {
    # name: (width, height, mode, seed)
    "grey-45x37": (45, 37, "L", 11),
    "grey-17x11": (17, 11, "L", 12),
    "rgb-40x30": (40, 30, "RGB", 13),
}
GREY_W = (0.2989, 0.587, 0.114)


def _png(path, arr, mode):
    from PIL import Image
    Image.fromarray(arr, mode=mode).save(path, optimize=False, compress_level=6)


def _interp(x, mode):
    """x: (C, H, W) float64 -> (C, 28, 28)"""
    t = torch.tensor(x, dtype=torch.float64)[None]
    if mode == "bilinear":
        y = F.interpolate(t, size=(28, 28), mode="bilinear", align_corners=False, antialias=False)
    else:
        y = F.interpolate(t, size=(28, 28), mode="nearest")
    return y[0].numpy()


def image_arrays(name):
    w, h, mode, seed = IMAGES[name]
    rng = np.random.default_rng(seed)
    shape = (h, w) if mode == "L" else (h, w, 3)
    # smooth structure plus noise, so the interpolation is exercised on edges and ramps
    yy, xx = np.mgrid[0:h, 0:w]
    base = (127 + 100 * np.sin(xx / 3.0) * np.cos(yy / 4.0))
    if mode == "RGB":
        base = np.stack([base, base[::-1], 255 - base], -1)
    arr = np.clip(base + rng.integers(-40, 41, size=shape), 0, 255).astype(np.uint8)
    return arr, mode


def write_image_fixtures(outdir):
    d = os.path.join(outdir, "image")
    os.makedirs(d, exist_ok=True)
    for name in IMAGES:
        arr, mode = image_arrays(name)
        _png(os.path.join(d, name + ".png"), arr, mode)
        x = arr.astype(np.float64) / 255.0
        chw = x[None] if mode == "L" else x.transpose(2, 0, 1)
        out = {"bilinear28": _interp(chw, "bilinear")}
        if name == "grey-45x37":
            out["nearest28"] = _interp(chw, "nearest")
            out["rgb-bilinear28"] = _interp(np.repeat(chw, 3, 0), "bilinear")
        if mode == "RGB":
            grey = sum(w * chw[c] for c, w in enumerate(GREY_W))[None]
            out["grey-bilinear28"] = _interp(grey, "bilinear")
        for k, v in out.items():
            np.save(os.path.join(d, "%s.%s.npy" % (name, k)), v.astype(np.float32))


def check_image_fixtures(fixdir):
    from PIL import Image
    d = os.path.join(fixdir, "image")
    for name in IMAGES:
        arr, mode = image_arrays(name)
        back = np.asarray(Image.open(os.path.join(d, name + ".png")))
        if not np.array_equal(back, arr):
            raise ValueError("%s.png does not hold its seeded samples" % name)
        ref = np.load(os.path.join(d, name + ".bilinear28.npy"))
        x = arr.astype(np.float64) / 255.0
        chw = x[None] if mode == "L" else x.transpose(2, 0, 1)
        if np.abs(ref - _interp(chw, "bilinear")).max() > 1e-7:
            raise ValueError("%s bilinear fixture differs from a fresh interpolate" % name)
    return "image fixtures: %d PNGs decode to their seeded samples; interpolate reproduced" % len(IMAGES)


# ---------------------------------------------------------------------------
# tiny-vit
# ---------------------------------------------------------------------------

VIT_CFG = dict(image_size=28, patch=7, d=32, layers=2, heads=4, mlp=64, classes=10, seed=4321)
VIT_CLASSES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
VIT_MEAN, VIT_STD = [0.25], [0.4]


def make_vit(dtype=torch.float64):
    from torchvision.models.vision_transformer import VisionTransformer
    c = VIT_CFG
    torch.manual_seed(c["seed"])
    m = VisionTransformer(image_size=c["image_size"], patch_size=c["patch"], num_layers=c["layers"],
                          num_heads=c["heads"], hidden_dim=c["d"], mlp_dim=c["mlp"], num_classes=c["classes"])
    m.conv_proj = nn.Conv2d(1, c["d"], kernel_size=c["patch"], stride=c["patch"])
    # torchvision zero-initialises the head and leaves the class token at 0:
    # randomise everything so that every weight is exercised
    g = torch.Generator().manual_seed(c["seed"] + 1)
    with torch.no_grad():
        for n, p in m.named_parameters():
            if n.endswith("weight") and "ln" in n:
                p.copy_(1 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                p.copy_(0.3 * torch.randn(p.shape, generator=g))
    return m.to(dtype).eval()


def vit_image():
    rng = np.random.default_rng(99)
    yy, xx = np.mgrid[0:28, 0:28]
    base = 255 * ((xx - 13.5) ** 2 + (yy - 11) ** 2 < 90)
    return np.clip(base * 0.8 + rng.integers(0, 50, size=(28, 28)), 0, 255).astype(np.uint8)


def vit_pixels(img):
    return ((img.astype(np.float64) / 255.0 - VIT_MEAN[0]) / VIT_STD[0])[None]


def run_vit_hooks(m, pixels):
    """Every hook, float64, from torchvision's modules (see the docstring)."""
    c = VIT_CFG
    H = {}
    x = torch.tensor(pixels, dtype=torch.float64)[None]
    d, nh = c["d"], c["heads"]
    dh = d // nh
    with torch.no_grad():
        pe = m._process_input(x)[0]                       # (16, d)
        pe = torch.cat([m.class_token[0], pe], 0)         # (17, d): [CLS] first
        H["embed.hook_patch_embed"] = pe
        H["hook_pos_embed"] = m.encoder.pos_embedding[0]
        resid = pe + m.encoder.pos_embedding[0]
        for L, blk in enumerate(m.encoder.layers):
            b = "blocks.%d." % L
            H[b + "hook_resid_pre"] = resid
            mu = resid.mean(-1, keepdim=True)
            var = ((resid - mu) ** 2).mean(-1, keepdim=True)
            H[b + "ln1.hook_scale"] = torch.sqrt(var + blk.ln_1.eps)
            n1 = blk.ln_1(resid)
            H[b + "ln1.hook_normalized"] = n1
            at = blk.self_attention
            W, B = at.in_proj_weight, at.in_proj_bias
            q = (n1 @ W[:d].T + B[:d]).reshape(-1, nh, dh)
            k = (n1 @ W[d:2 * d].T + B[d:2 * d]).reshape(-1, nh, dh)
            v = (n1 @ W[2 * d:].T + B[2 * d:]).reshape(-1, nh, dh)
            H[b + "attn.hook_q"], H[b + "attn.hook_k"], H[b + "attn.hook_v"] = q, k, v
            sc = torch.einsum("qhd,khd->hqk", q, k) / dh ** 0.5
            H[b + "attn.hook_attn_scores"] = sc
            pat = sc.softmax(-1)
            H[b + "attn.hook_pattern"] = pat
            z = torch.einsum("hqk,khd->qhd", pat, v)
            H[b + "attn.hook_z"] = z
            ao = at.out_proj(z.reshape(-1, d))
            # torchvision's own attention gives the same output and weights
            ref, refw = at(n1[None], n1[None], n1[None], need_weights=True, average_attn_weights=False)
            assert (ref[0] - ao).abs().max() < 1e-12 and (refw[0] - pat).abs().max() < 1e-12
            H[b + "hook_attn_out"] = ao
            mid = resid + ao
            H[b + "hook_resid_mid"] = mid
            mu = mid.mean(-1, keepdim=True)
            var = ((mid - mu) ** 2).mean(-1, keepdim=True)
            H[b + "ln2.hook_scale"] = torch.sqrt(var + blk.ln_2.eps)
            n2 = blk.ln_2(mid)
            H[b + "ln2.hook_normalized"] = n2
            pre = blk.mlp[0](n2)
            H[b + "mlp.hook_pre"] = pre
            post = blk.mlp[1](pre)
            H[b + "mlp.hook_post"] = post
            mo = blk.mlp[3](post)
            H[b + "hook_mlp_out"] = mo
            resid = mid + mo
            assert (resid - blk(H[b + "hook_resid_pre"][None])[0]).abs().max() < 1e-12
            H[b + "hook_resid_post"] = resid
        mu = resid.mean(-1, keepdim=True)
        var = ((resid - mu) ** 2).mean(-1, keepdim=True)
        H["ln_final.hook_scale"] = torch.sqrt(var + m.encoder.ln.eps)
        fin = m.encoder.ln(resid)
        H["ln_final.hook_normalized"] = fin
        H["head.hook_out"] = m.heads(fin)
        logits = m(x)[0]
        assert (logits - H["head.hook_out"][0]).abs().max() < 1e-12
    return {k: v.detach().numpy() for k, v in H.items()}


def rollout(H, n_layer):
    """Abnar & Zuidema's attention rollout in NumPy (float64): per layer
    0.5 * mean over heads + 0.5 * I, rows renormalised, multiplied from
    the first layer on: R = A_{L-1} @ ... @ A_0."""
    R = None
    for L in range(n_layer):
        pat = H["blocks.%d.attn.hook_pattern" % L].astype(np.float64)
        A = 0.5 * pat.mean(0) + 0.5 * np.eye(pat.shape[-1])
        A = A / A.sum(-1, keepdims=True)
        R = A if R is None else A @ R
    return R


def write_vit_fixture(outdir):
    m = make_vit()
    path = os.path.join(outdir, "tiny-vit.gguf")
    m32 = make_vit(torch.float32)
    convert_vit.write_gguf(path, m32.state_dict(), m32, VIT_CLASSES, VIT_MEAN, VIT_STD, channels=1,
                           name="tiny-vit")
    # the hooks come from the float32 weights the GGUF stores, computed in float64
    m.load_state_dict({k: v.to(torch.float64) for k, v in m32.state_dict().items()})
    d = os.path.join(outdir, "tiny-vit")
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    img = vit_image()
    _png(os.path.join(d, "image.png"), img, "L")
    px = vit_pixels(img)
    H = run_vit_hooks(m, px)
    for k, v in H.items():
        np.save(os.path.join(d, k + ".npy"), np.ascontiguousarray(v, dtype=np.float32))
    np.save(os.path.join(d, "pixels.npy"), px.astype(np.float32))
    # outside tiny-vit/, whose .npy files are all hooks (and pixels.npy)
    np.save(os.path.join(outdir, "tiny-vit.rollout.npy"), rollout(H, VIT_CFG["layers"]).astype(np.float32))
    meta = {"model": "tiny-vit.gguf", "image": "image.png", "config": VIT_CFG, "classes": VIT_CLASSES,
            "mean": VIT_MEAN, "std": VIT_STD, "hooks": {k: list(v.shape) for k, v in H.items()}}
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)
        f.write("\n")


def check_vit_fixture(fixdir, fresh_dir):
    for rel in ["tiny-vit.gguf", "tiny-vit.rollout.npy"] + [os.path.join("tiny-vit", f) for f in sorted(os.listdir(os.path.join(fresh_dir, "tiny-vit")))]:
        a = open(os.path.join(fixdir, rel), "rb").read()
        b = open(os.path.join(fresh_dir, rel), "rb").read()
        if a != b:
            raise ValueError("%s differs from a fresh build" % rel)
    d = os.path.join(fixdir, "tiny-vit")
    H = {k[:-4]: np.load(os.path.join(d, k)) for k in os.listdir(d) if k.endswith(".npy") and k != "pixels.npy"}
    m32 = make_vit(torch.float32)
    px = np.load(os.path.join(d, "pixels.npy"))
    with torch.no_grad():
        logits = m32(torch.tensor(px)[None])[0].numpy()
    diff = float(np.abs(logits - H["head.hook_out"][0]).max())
    if diff > 1e-4:
        raise ValueError("torchvision's float32 logits differ from head.hook_out[0] by %g" % diff)
    for L in range(VIT_CFG["layers"]):
        pat = H["blocks.%d.attn.hook_pattern" % L]
        if np.abs(pat.sum(-1) - 1).max() > 1e-5:
            raise ValueError("layer %d softmax rows" % L)
    return "tiny-vit: %d hooks; torchvision float32 logits = head.hook_out[CLS] within %.1e" % (len(H), diff)
