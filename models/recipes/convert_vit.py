#!/usr/bin/python3
"""Convert a torchvision VisionTransformer's state dict into attnscope's
`vit` GGUF: llama.cpp's CLIP vision-tower layout (tools/mtmd/clip-impl.h:
`clip.vision.*` keys, `v.*` tensor names), plus a classification head
(`v.head.*`) and its class names (`clip.vision.class_names`).

    python3 convert_vit.py STATE_DICT.pt OUT.gguf --classes names.txt \
        [--mean 0.5 --std 0.5] [--channels 1|3] [--resize bilinear]

STATE_DICT.pt: torch.save(model.state_dict()) of
torchvision.models.vision_transformer.VisionTransformer (any size; its
conv_proj may take 1 or 3 channels), or a dict holding it under
"state_dict". Hyperparameters are read from the tensors' shapes, but for
the head count, which the state dict does not hold (--heads).

Tensors (PyTorch shapes; GGUF stores them as-is, so ne is reversed):
    v.patch_embd.weight   [d, C, p, p]  conv_proj.weight (a 4-D conv kernel, as llama.cpp's)
    v.patch_embd.bias     [d]
    v.class_embd          [d]           class_token
    v.position_embd.weight [1 + n_patch, d]  encoder.pos_embedding ([CLS] first)
    v.blk.N.ln1.{weight,bias}, v.blk.N.ln2.{weight,bias}
    v.blk.N.attn_q/attn_k/attn_v.{weight,bias}  self_attention.in_proj_* split in three
    v.blk.N.attn_out.{weight,bias}              self_attention.out_proj
    v.blk.N.ffn_up.{weight,bias}, v.blk.N.ffn_down.{weight,bias}  mlp.0, mlp.3
    v.post_ln.{weight,bias}                     encoder.ln
    v.head.{weight,bias}  [n_class, d]          heads.head (ours: not in llama.cpp)
"""
import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import gguf_writer as G  # noqa: E402


def _np(t):
    return t.detach().cpu().numpy().astype(np.float32)


def _mlp_key(sd, prefix, idx, old):
    """torchvision 0.14 names the MLP's linears mlp.0 / mlp.3; older files linear_1 / linear_2."""
    k = f"{prefix}.mlp.{idx}"
    return k if k + ".weight" in sd else f"{prefix}.mlp.{old}"


def tensors(sd):
    """The GGUF tensors (name -> float32 array) of a torchvision ViT state dict."""
    out = {}
    w = _np(sd["conv_proj.weight"])
    d = w.shape[0]
    out["v.patch_embd.weight"] = w
    out["v.patch_embd.bias"] = _np(sd["conv_proj.bias"])
    out["v.class_embd"] = _np(sd["class_token"]).reshape(d)
    pos = _np(sd["encoder.pos_embedding"])
    out["v.position_embd.weight"] = pos.reshape(pos.shape[-2], d)
    L = 0
    while f"encoder.layers.encoder_layer_{L}.ln_1.weight" in sd:
        L += 1
    for i in range(L):
        p = f"encoder.layers.encoder_layer_{i}"
        b = f"v.blk.{i}"
        out[f"{b}.ln1.weight"] = _np(sd[f"{p}.ln_1.weight"])
        out[f"{b}.ln1.bias"] = _np(sd[f"{p}.ln_1.bias"])
        inw = _np(sd[f"{p}.self_attention.in_proj_weight"])
        inb = _np(sd[f"{p}.self_attention.in_proj_bias"])
        for j, n in enumerate("qkv"):
            out[f"{b}.attn_{n}.weight"] = np.ascontiguousarray(inw[j * d:(j + 1) * d])
            out[f"{b}.attn_{n}.bias"] = np.ascontiguousarray(inb[j * d:(j + 1) * d])
        out[f"{b}.attn_out.weight"] = _np(sd[f"{p}.self_attention.out_proj.weight"])
        out[f"{b}.attn_out.bias"] = _np(sd[f"{p}.self_attention.out_proj.bias"])
        out[f"{b}.ln2.weight"] = _np(sd[f"{p}.ln_2.weight"])
        out[f"{b}.ln2.bias"] = _np(sd[f"{p}.ln_2.bias"])
        up, down = _mlp_key(sd, p, 0, "linear_1"), _mlp_key(sd, p, 3, "linear_2")
        out[f"{b}.ffn_up.weight"] = _np(sd[f"{up}.weight"])
        out[f"{b}.ffn_up.bias"] = _np(sd[f"{up}.bias"])
        out[f"{b}.ffn_down.weight"] = _np(sd[f"{down}.weight"])
        out[f"{b}.ffn_down.bias"] = _np(sd[f"{down}.bias"])
    out["v.post_ln.weight"] = _np(sd["encoder.ln.weight"])
    out["v.post_ln.bias"] = _np(sd["encoder.ln.bias"])
    out["v.head.weight"] = _np(sd["heads.head.weight"])
    out["v.head.bias"] = _np(sd["heads.head.bias"])
    return out, L


def write_gguf(path, sd, model, classes, mean, std, channels, name="vit", heads=None, eps=1e-6,
               resize="bilinear"):
    """Writes the GGUF for a state dict (model: the VisionTransformer, for its
    image size and head count when given; else read from sd and `heads`)."""
    t, L = tensors(sd)
    d, C, p, _ = t["v.patch_embd.weight"].shape
    n_pos = t["v.position_embd.weight"].shape[0]
    side = int(round((n_pos - 1) ** 0.5))
    image_size = model.image_size if model is not None else side * p
    if model is not None:
        heads = model.encoder.layers[0].self_attention.num_heads
        eps = model.encoder.ln.eps
    if heads is None:
        raise SystemExit("convert_vit: the head count is not in a state dict: give --heads")
    if C != channels:
        raise SystemExit(f"convert_vit: the patch embedding takes {C} channels, not {channels}")
    if len(classes) != t["v.head.weight"].shape[0]:
        raise SystemExit(f"convert_vit: {len(classes)} class names for a head of "
                         f"{t['v.head.weight'].shape[0]} classes")
    if len(mean) != C or len(std) != C:
        raise SystemExit(f"convert_vit: mean and std need {C} value(s) each")
    w = G.GGUFWriter(path)
    w.add_string("general.architecture", "vit")
    w.add_string("general.name", name)
    w.add_bool("clip.has_vision_encoder", True)
    w.add_uint32("clip.vision.image_size", int(image_size))
    w.add_uint32("clip.vision.patch_size", int(p))
    w.add_uint32("clip.vision.embedding_length", int(d))
    w.add_uint32("clip.vision.feed_forward_length", int(t["v.blk.0.ffn_up.weight"].shape[0]))
    w.add_uint32("clip.vision.block_count", int(L))
    w.add_uint32("clip.vision.attention.head_count", int(heads))
    w.add_float32("clip.vision.attention.layer_norm_epsilon", float(eps))
    w.add_array("clip.vision.image_mean", [float(x) for x in mean], G.GGUF_FLOAT32)
    w.add_array("clip.vision.image_std", [float(x) for x in std], G.GGUF_FLOAT32)
    w.add_uint32("clip.vision.channels", int(C))
    w.add_string("clip.vision.resize", resize)
    w.add_array("clip.vision.class_names", list(classes))
    for k, v in t.items():
        w.add_tensor(k, v)
    w.write()


def main():
    import torch
    ap = argparse.ArgumentParser()
    ap.add_argument("state_dict")
    ap.add_argument("out")
    ap.add_argument("--classes", required=True, help="a text file, one class name per line")
    ap.add_argument("--heads", type=int, required=True)
    ap.add_argument("--mean", type=float, nargs="+", default=[0.485, 0.456, 0.406])
    ap.add_argument("--std", type=float, nargs="+", default=[0.229, 0.224, 0.225])
    ap.add_argument("--channels", type=int, default=3)
    ap.add_argument("--eps", type=float, default=1e-6)
    ap.add_argument("--resize", default="bilinear", choices=["bilinear", "nearest"])
    ap.add_argument("--name", default="vit")
    a = ap.parse_args()
    sd = torch.load(a.state_dict, map_location="cpu")
    if "state_dict" in sd:
        sd = sd["state_dict"]
    with open(a.classes, encoding="utf-8") as f:
        classes = [line.rstrip("\n") for line in f if line.strip()]
    write_gguf(a.out, sd, None, classes, a.mean, a.std, a.channels, name=a.name, heads=a.heads,
               eps=a.eps, resize=a.resize)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
