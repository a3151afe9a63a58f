#!/usr/bin/python3
"""Train vit-fashion, a small ViT on Fashion-MNIST; export it as GGUF.

    python3 train_vit.py                  # train (time-capped) + evaluate + export
    python3 train_vit.py --bench 20       # time 20 steps and stop
    python3 train_vit.py --export-only    # export from work/vit-fashion.pt

Data: Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist):
the 60,000 training images only for training; the 10,000 test images only
for the accuracy and confusion matrix reported at the end.

Model: torchvision's own VisionTransformer (torchvision.models.vision_transformer),
so the C engine is checked against a model it did not write: 28x28 grey
input, patch 7 (a 4x4 grid, 16 patches + [CLS]), d 64, 4 layers, 4 heads,
MLP 128, LayerNorm eps 1e-6, erf GELU, no dropout. torchvision's patch
embedding takes three channels; ours is the same Conv2d with one.

Input: pixels / 255, then (x - mean) / std with the training set's mean and
std (stored in the GGUF as clip.vision.image_mean / image_std).

Optimisation: batch 128; AdamW (lr 2e-3, betas 0.9/0.999, weight decay
0.05 on matrices), linear warmup (300 steps) then cosine decay to 0, whose
progress is the larger of step/steps and elapsed/max_minutes, so the run
always ends within its time budget on a shared machine; gradient clipping
at 1; label smoothing 0.1. Augmentation: random crop of the image padded by
2 pixels, and horizontal flip. torch.set_num_threads(1) (two threads ran 13x slower beside another
training run on the 2 cores); fixed seeds.
"""
import argparse
import gzip
import json
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torchvision.models.vision_transformer import VisionTransformer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import convert_vit  # noqa: E402

DATA = "/usr/share/datasets/fashion-mnist"
WORK = os.path.join(HERE, "work")
ROOT = os.path.dirname(os.path.dirname(HERE))
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]


def read_idx(name):
    with gzip.open(os.path.join(DATA, name), "rb") as f:
        raw = f.read()
    magic = int.from_bytes(raw[0:4], "big")
    nd = magic & 0xFF
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * nd).reshape(dims)


def load_split(train):
    p = "train" if train else "t10k"
    x = read_idx(f"{p}-images-idx3-ubyte.gz")
    y = read_idx(f"{p}-labels-idx1-ubyte.gz")
    return x, y.astype(np.int64)


def make_model(args):
    m = VisionTransformer(image_size=28, patch_size=args.patch, num_layers=args.layers,
                          num_heads=args.heads, hidden_dim=args.dim, mlp_dim=args.mlp,
                          dropout=0.0, attention_dropout=0.0, num_classes=len(CLASSES))
    m.conv_proj = nn.Conv2d(1, args.dim, kernel_size=args.patch, stride=args.patch)
    # torchvision initialises its conv_proj with a fan-in normal; keep it for the new one.
    fan_in = m.conv_proj.in_channels * args.patch * args.patch
    nn.init.trunc_normal_(m.conv_proj.weight, std=math.sqrt(1 / fan_in))
    nn.init.zeros_(m.conv_proj.bias)
    return m


def augment(x, gen, black):
    """x: (B, 1, 28, 28) float. Random crop of the image padded by 2 black
    pixels (`black`: a black pixel's normalised value), random h-flip."""
    B = x.shape[0]
    pad = F.pad(x, (2, 2, 2, 2), value=black)
    iy = torch.randint(0, 5, (B,), generator=gen)
    ix = torch.randint(0, 5, (B,), generator=gen)
    r = iy[:, None] + torch.arange(28)
    c = ix[:, None] + torch.arange(28)
    out = pad[torch.arange(B)[:, None, None], 0, r[:, :, None], c[:, None, :]].unsqueeze(1)
    flip = torch.rand(B, generator=gen) < 0.5
    out[flip] = out[flip].flip(-1)
    return out


def evaluate(model, x, y, bs=1000):
    model.eval()
    preds = []
    with torch.no_grad():
        for i in range(0, len(x), bs):
            preds.append(model(x[i:i + bs]).argmax(-1))
    model.train()
    p = torch.cat(preds).numpy()
    conf = np.zeros((len(CLASSES), len(CLASSES)), dtype=np.int64)
    for t, q in zip(y.numpy(), p):
        conf[t, q] += 1
    return float((p == y.numpy()).mean()), conf


ASSET_NAMES = ["tshirt-top", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker", "bag",
               "ankle-boot"]


def write_assets(model, xte, yte, mean, std):
    """assets/fashion/NAME.png: the first test image of each class (8-bit
    grey, as the dataset stores it), and tests/fixtures/models/
    vit-fashion.logits.npy: torchvision's logits for each, read back from
    the PNG, in ASSET_NAMES order ([10 images, 10 classes]); the names in
    vit-fashion.images.txt."""
    from PIL import Image
    adir = os.path.join(ROOT, "assets", "fashion")
    fdir = os.path.join(ROOT, "tests", "fixtures", "models")
    os.makedirs(adir, exist_ok=True)
    os.makedirs(fdir, exist_ok=True)
    logits, names = [], []
    model.eval()
    for c, name in enumerate(ASSET_NAMES):
        i = int(np.nonzero(yte == c)[0][0])
        path = os.path.join(adir, name + ".png")
        Image.fromarray(xte[i], mode="L").save(path, optimize=False, compress_level=6)
        back = np.asarray(Image.open(path)).astype(np.float32)
        assert np.array_equal(back, xte[i].astype(np.float32))
        x = ((torch.from_numpy(back) / 255.0 - mean) / std)[None, None]
        with torch.no_grad():
            logits.append(model(x)[0].numpy())
        names.append(name)
        print("asset %-12s test image %5d  predicted %s" % (name, i, CLASSES[int(np.argmax(logits[-1]))]))
    np.save(os.path.join(fdir, "vit-fashion.logits.npy"), np.stack(logits).astype(np.float32))
    with open(os.path.join(fdir, "vit-fashion.images.txt"), "w") as f:
        f.write("\n".join(names) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--patch", type=int, default=7)
    ap.add_argument("--dim", type=int, default=64)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--mlp", type=int, default=128)
    ap.add_argument("--steps", type=int, default=12000)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--max-minutes", type=float, default=27.0)
    ap.add_argument("--bench", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--export-only", action="store_true")
    ap.add_argument("--out", default=os.path.join(ROOT, "models", "vit-fashion.gguf"))
    args = ap.parse_args()
    torch.manual_seed(0)
    torch.set_num_threads(args.threads)
    os.makedirs(WORK, exist_ok=True)
    ckpt = os.path.join(WORK, "vit-fashion.pt")

    xtr, ytr = load_split(True)
    mean = float(xtr.mean() / 255.0)
    std = float(xtr.std() / 255.0)
    model = make_model(args)

    if not args.export_only:
        X = (torch.from_numpy(xtr.astype(np.float32)) / 255.0 - mean) / std
        X = X.unsqueeze(1)
        Y = torch.from_numpy(ytr)
        decay = [p for n, p in model.named_parameters() if p.ndim >= 2 and "pos_embedding" not in n
                 and "class_token" not in n]
        no_decay = [p for n, p in model.named_parameters() if not (p.ndim >= 2 and "pos_embedding" not in n
                                                                   and "class_token" not in n)]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.05},
                                 {"params": no_decay, "weight_decay": 0.0}], lr=args.lr)
        gen = torch.Generator().manual_seed(1)
        t0 = time.time()
        warm = 300
        perm = torch.randperm(len(X), generator=gen)
        at = 0
        steps = args.bench or args.steps
        for step in range(steps):
            elapsed = (time.time() - t0) / 60.0
            prog = max(step / args.steps, elapsed / args.max_minutes)
            if prog >= 1.0:
                print(f"time budget reached at step {step}", flush=True)
                break
            lr = args.lr * min(1.0, (step + 1) / warm) * 0.5 * (1 + math.cos(math.pi * prog))
            for g in opt.param_groups:
                g["lr"] = lr
            if at + args.batch > len(X):
                perm = torch.randperm(len(X), generator=gen)
                at = 0
            idx = perm[at:at + args.batch]
            at += args.batch
            xb = augment(X[idx], gen, -mean / std)
            loss = F.cross_entropy(model(xb), Y[idx], label_smoothing=0.1)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            if step % 200 == 0 or step == steps - 1:
                print(json.dumps({"step": step, "loss": round(loss.item(), 4), "lr": round(lr, 6),
                                  "minutes": round((time.time() - t0) / 60, 2)}), flush=True)
        minutes = (time.time() - t0) / 60
        if args.bench:
            print(f"{args.bench} steps in {minutes * 60:.1f} s: {minutes * 60 / args.bench * 1000:.0f} ms/step")
            return
        torch.save({"state_dict": model.state_dict(), "args": vars(args), "mean": mean, "std": std,
                    "steps": step + 1, "minutes": minutes}, ckpt)
    saved = torch.load(ckpt)
    model.load_state_dict(saved["state_dict"])
    xte, yte = load_split(False)
    Xt = ((torch.from_numpy(xte.astype(np.float32)) / 255.0 - mean) / std).unsqueeze(1)
    acc, conf = evaluate(model, Xt, torch.from_numpy(yte))
    res = {"test_accuracy": acc, "confusion": conf.tolist(), "classes": CLASSES,
           "steps": saved["steps"], "minutes": round(saved["minutes"], 1), "mean": mean, "std": std,
           "args": saved["args"]}
    with open(os.path.join(WORK, "vit-fashion.results.json"), "w") as f:
        json.dump(res, f, indent=1)
    print(json.dumps({"test_accuracy": acc}))
    print("confusion (rows: true, cols: predicted)")
    for name, row in zip(CLASSES, conf):
        print(f"{name:12s}", " ".join(f"{v:4d}" for v in row))
    convert_vit.write_gguf(args.out, model.state_dict(), model, CLASSES, [mean], [std], channels=1,
                           name="vit-fashion")
    print("wrote", args.out)
    write_assets(model, xte, yte, mean, std)


if __name__ == "__main__":
    main()
