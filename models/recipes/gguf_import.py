"""The inverse of reference.py's exporters: a GGUF file read back into the
reference model (float64) it was written from.

    import gguf_import
    model, cfg, meta = gguf_import.load("models/austen-gpt2.gguf")

The configuration comes from the file's metadata (and, for what the
metadata does not say, from which tensors are present: an untied output, a
selection bias, the masked-LM head). Which tensor element is which
parameter element is not written out by hand a second time: the exporter
itself says it. Every parameter of a model of that configuration is filled
with its own index (2^23 + its position in the concatenation of all
parameters, exact in float32 below 2^24), the exporter is run on it with a
recording writer, and each written tensor then names, element by element,
the parameter it came from; values outside the index range are constants
the exporter writes (an attention-only model's zero MLP) and must equal
the file's. An exporter that computes a tensor instead of copying one
(none of the bundled models' does) or a parameter no tensor covers is an
error here, and a loaded model whose logits differ from the C engine's is
caught by the caller's check (tests/e2e/grad_ref.py).

Handles export_gguf (gpt2, llama), export_deepseek2_gguf (deepseek2),
export_encoder_gguf (bert, nomic-bert), export_encdec_gguf
(transformer) and convert_vit.py's tensors (vit: torchvision's
VisionTransformer), all F32/F16/BF16. Anything else raises Unsupported with the
reason (a quantized tensor, an architecture without an exporter here)."""
import struct

import numpy as np
import torch

import reference as R

BASE = 1 << 23


class Unsupported(Exception):
    pass


_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def read_gguf(path):
    """(metadata dict, {name: float32 array of shape reversed(ne)}); raises
    Unsupported at a quantized tensor."""
    buf = open(path, "rb").read()
    if buf[:4] != b"GGUF":
        raise Unsupported("%s: not a GGUF file" % path)
    pos = 4

    def take(fmt):
        nonlocal pos
        v = struct.unpack_from("<" + fmt, buf, pos)[0]
        pos += struct.calcsize("<" + fmt)
        return v

    def string():
        nonlocal pos
        n = take("Q")
        s = buf[pos:pos + n].decode("utf-8", "replace")
        pos += n
        return s

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return [value(et) for _ in range(n)]
        return take(_SCALAR[t])
    _version, n_t, n_kv = take("I"), take("Q"), take("Q")
    kv = {}
    for _ in range(n_kv):
        k = string()
        kv[k] = value(take("I"))
    infos = []
    for _ in range(n_t):
        name = string()
        ne = [take("Q") for _ in range(take("I"))]
        infos.append((name, ne, take("I"), take("Q")))
    align = kv.get("general.alignment", 32)
    data0 = pos + (-pos) % align
    out = {}
    for name, ne, gt, off in infos:
        n, shape = int(np.prod(ne)), list(reversed(ne))
        if gt == 0:
            out[name] = np.frombuffer(buf, "<f4", n, data0 + off).reshape(shape)
        elif gt == 1:
            out[name] = np.frombuffer(buf, "<f2", n, data0 + off).astype(np.float32).reshape(shape)
        elif gt == 30:
            u = np.frombuffer(buf, "<u2", n, data0 + off).astype(np.uint32) << 16
            out[name] = u.view(np.float32).reshape(shape)
        else:
            raise Unsupported("%s: tensor %s is quantized (ggml type %d); the reference holds float weights "
                              "and no dequantizer is written here" % (path, name, gt))
    return kv, out


class _Recorder:
    """GGUFWriter's interface, keeping the tensors and nothing else."""

    def __init__(self, *_a, **_k):
        self.tensors = {}

    def add_tensor(self, name, array, *_a, **_k):
        self.tensors[name] = np.asarray(array)

    def write(self):
        return None

    def __getattr__(self, name):  # add_string, add_uint32, ...: the metadata is not needed
        return lambda *a, **k: None


def _recorded(export):
    """export(model, cfg) with reference.py's writer replaced by a recorder:
    a function (model, cfg) -> {name: array written}."""
    def run(model, cfg):
        rec = _Recorder()
        real_writer, real_tok = R.GGUFWriter, R._add_tokenizer
        R.GGUFWriter, R._add_tokenizer = (lambda *a, **k: rec), (lambda *a, **k: None)
        try:
            export(model, cfg)
        finally:
            R.GGUFWriter, R._add_tokenizer = real_writer, real_tok
        return rec.tensors
    return run


class VitConfig:
    """What convert_vit.py's `vit` GGUF says of torchvision's VisionTransformer."""

    def __init__(self, kv, t):
        g = lambda k: kv["clip.vision." + k]  # noqa: E731
        self.image_size, self.patch, self.d = g("image_size"), g("patch_size"), g("embedding_length")
        self.mlp, self.n_layer, self.n_head = g("feed_forward_length"), g("block_count"), g("attention.head_count")
        self.eps, self.channels = g("attention.layer_norm_epsilon"), g("channels")
        self.mean, self.std = g("image_mean"), g("image_std")
        self.classes = t["v.head.weight"].shape[0]
        self.vocab = self.classes

    def __repr__(self):
        return "VitConfig(%s)" % ", ".join("%s=%r" % kv for kv in self.__dict__.items())


def _vit(cfg):
    import functools
    import torch.nn as nn
    from torchvision.models.vision_transformer import VisionTransformer
    m = VisionTransformer(image_size=cfg.image_size, patch_size=cfg.patch, num_layers=cfg.n_layer,
                          num_heads=cfg.n_head, hidden_dim=cfg.d, mlp_dim=cfg.mlp, num_classes=cfg.classes,
                          norm_layer=functools.partial(nn.LayerNorm, eps=cfg.eps))
    m.conv_proj = nn.Conv2d(cfg.channels, cfg.d, kernel_size=cfg.patch, stride=cfg.patch)
    return m


def _config(kv, t):
    """(config, model class or builder, exporter as (model, cfg) -> {name: array})."""
    a = kv["general.architecture"]
    g = lambda k, d=None: kv.get("%s.%s" % (a, k), d)  # noqa: E731
    if a == "vit":
        import convert_vit
        return VitConfig(kv, t), _vit, lambda m, c: convert_vit.tensors(m.state_dict())[0]
    if "token_embd.weight" not in t:
        raise Unsupported("architecture %r: no exporter here to invert" % a)
    vocab = t["token_embd.weight"].shape[0]
    if a in ("gpt2", "llama"):
        cfg = R.Config(arch=a, vocab=vocab, d_model=g("embedding_length"), n_layer=g("block_count"),
                       n_head=g("attention.head_count"), n_kv_head=g("attention.head_count_kv"),
                       d_ff=g("feed_forward_length"), ctx=g("context_length"),
                       eps=g("attention.layer_norm_epsilon" if a == "gpt2" else "attention.layer_norm_rms_epsilon"),
                       rope_base=g("rope.freq_base", 10000.0), rope_dim=g("rope.dimension_count"),
                       tie_embeddings="output.weight" not in t)
        return cfg, R.Model, _recorded(lambda m, c: R.export_gguf(m, c, "-", "-", {"tokens": [""] * c.vocab}))
    if a == "deepseek2":
        absorbed = g("attention.key_length_mla") is not None
        d_rope = g("rope.dimension_count")
        yarn = None
        if g("rope.scaling.type") == "yarn":
            yarn = (g("rope.scaling.factor"), g("rope.scaling.original_context_length"),
                    g("rope.scaling.yarn_log_multiplier"))
        n_expert = g("expert_count", 0)
        cfg = R.DeepSeek2Config(
            vocab=vocab, d_model=g("embedding_length"), n_layer=g("block_count"), n_head=g("attention.head_count"),
            d_nope=(g("attention.key_length_mla") if absorbed else g("attention.key_length")) - d_rope,
            d_rope=d_rope, d_v=g("attention.value_length_mla") if absorbed else g("attention.value_length"),
            kv_lora=g("attention.kv_lora_rank"), q_lora=g("attention.q_lora_rank", 0),
            d_ff=g("feed_forward_length"), ctx=g("context_length"), eps=g("attention.layer_norm_rms_epsilon"),
            rope_base=g("rope.freq_base", 10000.0), absorbed=absorbed, yarn=yarn,
            n_dense=g("leading_dense_block_count") if n_expert else None, n_expert=n_expert,
            n_expert_used=g("expert_used_count", 0),
            d_expert=g("expert_feed_forward_length") if n_expert else 16, n_shared=g("expert_shared_count", 0),
            sigmoid=g("expert_gating_func", 1) == 2, bias=any(k.endswith("exp_probs_b.bias") for k in t),
            n_group=g("expert_group_count", 0), group_used=g("expert_group_used_count", 0),
            norm=bool(g("expert_weights_norm", False)), scale=g("expert_weights_scale", 1.0))
        return cfg, R.DeepSeek2, _recorded(lambda m, c: R.export_deepseek2_gguf(m, c, "-", "-",
                                                                              {"tokens": [""] * c.vocab}))
    if a in ("bert", "nomic-bert"):
        cfg = R.EncoderConfig(arch=a, vocab=vocab, d_model=g("embedding_length"), n_layer=g("block_count"),
                              n_head=g("attention.head_count"), d_ff=g("feed_forward_length"),
                              ctx=g("context_length"), eps=g("attention.layer_norm_epsilon"),
                              n_types=kv.get("tokenizer.ggml.token_type_count", 2), pooling=g("pooling_type", 1),
                              mlm="mlm.dense.weight" in t, rope_base=g("rope.freq_base", 10000.0))
        return cfg, R.Encoder, _recorded(lambda m, c: R.export_encoder_gguf(m, c, "-", "-", None, with_mlm=c.mlm))
    if a == "transformer":
        cfg = R.EncDecConfig(vocab=vocab, d_model=g("embedding_length"), n_enc=g("block_count"),
                             n_dec=g("decoder_block_count"), n_head=g("attention.head_count"),
                             d_ff=g("feed_forward_length"), ctx=g("context_length"),
                             eps=g("attention.layer_norm_epsilon"), shared_embd="dec.token_embd.weight" not in t,
                             tied_output="output.weight" not in t, output_bias="output.bias" in t,
                             start=g("decoder_start_token_id", 0))
        return cfg, R.EncDec, _recorded(lambda m, c: R.export_encdec_gguf(m, c, "-", "-", {"tokens": [""] * c.vocab}))
    raise Unsupported("architecture %r: no exporter in reference.py or convert_vit.py to invert" % a)


def load(path):
    """(model in float64, eval mode; its config; the metadata)."""
    kv, tensors = read_gguf(path)
    cfg, cls, export = _config(kv, tensors)
    model = cls(cfg).double().eval()
    params = list(model.parameters())
    sizes = [p.numel() for p in params]
    total = sum(sizes)
    if total >= BASE:
        raise Unsupported("%s: %d parameters, more than float32 indexes exactly (%d)" % (path, total, BASE))
    with torch.no_grad():
        start = BASE
        for p in params:
            p.copy_(torch.arange(start, start + p.numel(), dtype=torch.float64).view(p.shape))
            start += p.numel()
    written = export(model, cfg)
    flat = np.zeros(total)
    seen = np.zeros(total, bool)
    for name, idx in written.items():
        if name not in tensors:
            raise Unsupported("%s: the exporter writes %s, the file has no such tensor" % (path, name))
        f = tensors[name]
        if f.size != idx.size:
            raise Unsupported("%s: %s has %d elements, the exporter writes %d" % (path, name, f.size, idx.size))
        i, v = idx.reshape(-1).astype(np.float64), f.reshape(-1).astype(np.float64)
        inside = (i >= BASE) & (i < BASE + total)
        if not np.array_equal(i[inside], np.round(i[inside])):
            raise Unsupported("%s: %s is computed by the exporter, not copied" % (path, name))
        if not np.array_equal(v[~inside], i[~inside]):
            raise Unsupported("%s: %s differs from the constant the exporter writes there" % (path, name))
        j = i[inside].astype(np.int64) - BASE
        flat[j] = v[inside]
        seen[j] = True
    extra = sorted(set(tensors) - set(written))
    if extra:
        raise Unsupported("%s: tensors the exporter does not write: %s" % (path, ", ".join(extra[:5])))
    if not seen.all():
        raise Unsupported("%s: %d parameter elements no tensor holds" % (path, int((~seen).sum())))
    with torch.no_grad():
        start = 0
        for p, n in zip(params, sizes):
            p.copy_(torch.from_numpy(flat[start:start + n]).view(p.shape))
            start += n
    return model, cfg, kv
