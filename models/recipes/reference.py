"""PyTorch reference definitions of the two architectures attnscope runs,
written from the architectures' published definitions (GPT-2; LLaMA as
llama.cpp runs it), plus a GGUF exporter that llama.cpp loads unchanged.

Used for two things: the numerical fixtures under tests/fixtures/ (every
hook point's value for a fixed input) and training the small shipped
models.  The C program never depends on this file.

Hook points use TransformerLens names; values are recorded for batch
element 0, without the batch dimension (see tests/fixtures/README.md for
the exact definitions, which the C engine must match).
"""

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from gguf_writer import GGUFWriter, GGUF_FLOAT32, GGUF_INT32, GGUF_STRING


@dataclass
class Config:
    arch: str                  # 'gpt2' | 'llama'
    vocab: int
    d_model: int
    n_layer: int
    n_head: int
    n_kv_head: Optional[int]   # None: same as n_head (gpt2 must have n_kv_head == n_head)
    d_ff: int
    ctx: int
    eps: float                 # LayerNorm eps (gpt2) or RMSNorm eps (llama)
    rope_base: float = 10000.0
    rope_dim: Optional[int] = None       # None: d_head
    attn_only: bool = False              # no MLP at all (exported as zero MLP tensors)
    tie_embeddings: Optional[bool] = None  # None: True for gpt2, False for llama

    def __post_init__(self):
        if self.arch not in ("gpt2", "llama"):
            raise ValueError("arch must be 'gpt2' or 'llama', not %r" % self.arch)
        if self.n_kv_head is None:
            self.n_kv_head = self.n_head
        if self.d_model % self.n_head:
            raise ValueError("d_model must be a multiple of n_head")
        if self.n_head % self.n_kv_head:
            raise ValueError("n_head must be a multiple of n_kv_head")
        if self.arch == "gpt2" and self.n_kv_head != self.n_head:
            raise ValueError("gpt2 has no grouped-query attention")
        if self.rope_dim is None:
            self.rope_dim = self.d_head
        if self.rope_dim % 2 or self.rope_dim > self.d_head:
            raise ValueError("rope_dim must be even and at most d_head")
        if self.tie_embeddings is None:
            self.tie_embeddings = self.arch == "gpt2"

    @property
    def d_head(self):
        return self.d_model // self.n_head


def _at_least_f32(x):
    """Norm statistics and rotary angles in float32 at least (bf16 autocast
    training); float64 stays float64."""
    return x.float() if x.dtype in (torch.float16, torch.bfloat16) else x


def _rec(hooks, name, t):
    """Record batch element 0 of t under name (hooks-on path only)."""
    if hooks is not None:
        hooks[name] = t[0].detach().clone()


def _routed_experts(blk, x, idx, gates, p, hooks):
    """The chosen experts' SwiGLUs (each token's k experts gathered from
    the 3-D gate/up/down tensors), summed under their gates; hooks in slot
    layout [pos, k, ...] under p ("blocks.L.mlp.")."""
    pre = torch.einsum("btkfd,btd->btkf", blk.gate_exps[idx], x)   # [B,T,k,F]
    _rec(hooks, p + "experts.hook_pre", pre)
    lin = torch.einsum("btkfd,btd->btkf", blk.up_exps[idx], x)
    _rec(hooks, p + "experts.hook_pre_linear", lin)
    post = F.silu(pre) * lin
    _rec(hooks, p + "experts.hook_post", post)
    out = torch.einsum("btkdf,btkf->btkd", blk.down_exps[idx], post)
    _rec(hooks, p + "experts.hook_out", out)
    return (gates[..., None] * out).sum(dim=2)


def _shared_expert(blk, x, p, hooks):
    """The shared expert every token takes: a SwiGLU (ffn_*_shexp), hooks mlp.shared.*."""
    pre = blk.gate_shexp(x)
    _rec(hooks, p + "shared.hook_pre", pre)
    lin = blk.up_shexp(x)
    _rec(hooks, p + "shared.hook_pre_linear", lin)
    post = F.silu(pre) * lin
    _rec(hooks, p + "shared.hook_post", post)
    shared = blk.down_shexp(post)
    _rec(hooks, p + "shared.hook_out", shared)
    return shared


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d, dh, H, Hk, Fd = cfg.d_model, cfg.d_head, cfg.n_head, cfg.n_kv_head, cfg.d_ff
        gpt2 = cfg.arch == "gpt2"
        self.ln1_w = nn.Parameter(torch.ones(d))
        self.ln1_b = nn.Parameter(torch.zeros(d)) if gpt2 else None
        if gpt2:
            # fused, rows: Q (H*dh), then K, then V -- llama.cpp's attn_qkv layout
            self.qkv = nn.Linear(d, 3 * d, bias=True)
        else:
            self.q = nn.Linear(d, H * dh, bias=False)
            self.k = nn.Linear(d, Hk * dh, bias=False)
            self.v = nn.Linear(d, Hk * dh, bias=False)
        self.o = nn.Linear(H * dh, d, bias=gpt2)
        if not cfg.attn_only:
            self.ln2_w = nn.Parameter(torch.ones(d))
            self.ln2_b = nn.Parameter(torch.zeros(d)) if gpt2 else None
            self.up = nn.Linear(d, Fd, bias=gpt2)
            self.gate = None if gpt2 else nn.Linear(d, Fd, bias=False)
            self.down = nn.Linear(Fd, d, bias=gpt2)


class Model(nn.Module):
    """forward(ids [B,T] long, hooks=None) -> logits [B,T,V]."""

    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        gpt2 = cfg.arch == "gpt2"
        self.tok_embd = nn.Embedding(cfg.vocab, cfg.d_model)
        self.pos_embd = nn.Embedding(cfg.ctx, cfg.d_model) if gpt2 else None
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.lnf_w = nn.Parameter(torch.ones(cfg.d_model))
        self.lnf_b = nn.Parameter(torch.zeros(cfg.d_model)) if gpt2 else None
        self.out = None if cfg.tie_embeddings else nn.Linear(cfg.d_model, cfg.vocab, bias=False)
        if not gpt2:
            # theta[p, i] = p * base^(-2i/rope_dim), i < rope_dim/2; computed in
            # float64 once, cast to the activations' dtype when used.
            i = torch.arange(cfg.rope_dim // 2, dtype=torch.float64)
            inv = cfg.rope_base ** (-2.0 * i / cfg.rope_dim)
            theta = torch.arange(cfg.ctx, dtype=torch.float64)[:, None] * inv[None, :]
            self.register_buffer("rope_cos", torch.cos(theta), persistent=False)
            self.register_buffer("rope_sin", torch.sin(theta), persistent=False)
        self.reset_parameters()

    def reset_parameters(self, std=0.02):
        """GPT-2-style init for training: normal(std) matrices, residual
        projections scaled by 1/sqrt(2*n_layer), norms 1, biases 0."""
        for name, p in self.named_parameters():
            if p.dim() == 1:
                nn.init.ones_(p) if name.endswith("_w") else nn.init.zeros_(p)
            elif name.endswith(("o.weight", "down.weight")):
                nn.init.normal_(p, 0.0, std / math.sqrt(2 * self.cfg.n_layer))
            else:
                nn.init.normal_(p, 0.0, std)

    # -- pieces -----------------------------------------------------------
    def _norm(self, x, w, b, prefix, hooks):
        """LayerNorm (gpt2) or RMSNorm (llama) over the last dim."""
        eps = self.cfg.eps
        if self.cfg.arch == "gpt2":
            if hooks is None:
                return F.layer_norm(x, (x.shape[-1],), w, b, eps)
            xc = x - x.mean(-1, keepdim=True)
            scale = torch.sqrt((xc * xc).mean(-1, keepdim=True) + eps)  # biased variance
            out = xc / scale * w + b
        else:
            xf = _at_least_f32(x)
            scale = torch.sqrt((xf * xf).mean(-1, keepdim=True) + eps)
            out = (xf / scale).to(x.dtype) * w
        _rec(hooks, prefix + ".hook_scale", scale)
        _rec(hooks, prefix + ".hook_normalized", out)
        return out

    def _rope(self, x):
        """llama.cpp rope mode NORM: rotate adjacent pairs (x[2i], x[2i+1])
        for i < rope_dim/2; dims past rope_dim pass through.  x: [B,T,h,dh]."""
        T, rd = x.shape[1], self.cfg.rope_dim
        xf = _at_least_f32(x)
        cos = self.rope_cos[:T].to(xf.dtype)[None, :, None, :]
        sin = self.rope_sin[:T].to(xf.dtype)[None, :, None, :]
        xr = xf[..., :rd].reshape(*x.shape[:-1], rd // 2, 2)
        x0, x1 = xr[..., 0], xr[..., 1]
        rot = torch.stack((x0 * cos - x1 * sin, x0 * sin + x1 * cos), dim=-1)
        rot = rot.reshape(*x.shape[:-1], rd).to(x.dtype)
        return rot if rd == x.shape[-1] else torch.cat((rot, x[..., rd:]), dim=-1)

    def _attn(self, blk, x, L, hooks):
        cfg = self.cfg
        B, T, _ = x.shape
        H, Hk, dh = cfg.n_head, cfg.n_kv_head, cfg.d_head
        p = "blocks.%d.attn." % L
        if cfg.arch == "gpt2":
            q, k, v = blk.qkv(x).split(H * dh, dim=-1)
        else:
            q, k, v = blk.q(x), blk.k(x), blk.v(x)
        q = q.view(B, T, H, dh)
        k = k.view(B, T, Hk, dh)
        v = v.view(B, T, Hk, dh)
        _rec(hooks, p + "hook_q", q)
        _rec(hooks, p + "hook_k", k)
        _rec(hooks, p + "hook_v", v)
        if cfg.arch == "llama":
            q, k = self._rope(q), self._rope(k)
            _rec(hooks, p + "hook_rot_q", q)
            _rec(hooks, p + "hook_rot_k", k)
        if Hk != H:
            # query head h reads kv head h // (H/Hk)
            k = k.repeat_interleave(H // Hk, dim=2)
            v = v.repeat_interleave(H // Hk, dim=2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B,H,T,dh]
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(dh)                  # [B,H,T,T]
        mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)  # key > query
        scores = scores.masked_fill(mask, float("-inf"))
        _rec(hooks, p + "hook_attn_scores", scores)
        pattern = torch.softmax(scores, dim=-1)
        _rec(hooks, p + "hook_pattern", pattern)
        z = (pattern @ v).transpose(1, 2)                                   # [B,T,H,dh]
        _rec(hooks, p + "hook_z", z)
        out = blk.o(z.reshape(B, T, H * dh))
        _rec(hooks, "blocks.%d.hook_attn_out" % L, out)
        return out

    def _mlp(self, blk, x, L, hooks):
        p = "blocks.%d.mlp." % L
        if self.cfg.arch == "gpt2":
            pre = blk.up(x)
            _rec(hooks, p + "hook_pre", pre)
            post = F.gelu(pre, approximate="tanh")
        else:
            pre = blk.gate(x)
            _rec(hooks, p + "hook_pre", pre)
            lin = blk.up(x)
            _rec(hooks, p + "hook_pre_linear", lin)
            post = F.silu(pre) * lin
        _rec(hooks, p + "hook_post", post)
        out = blk.down(post)
        _rec(hooks, "blocks.%d.hook_mlp_out" % L, out)
        return out

    # -- forward ----------------------------------------------------------
    def forward(self, ids, hooks=None):
        B, T = ids.shape
        if T > self.cfg.ctx:
            raise ValueError("sequence of %d exceeds ctx %d" % (T, self.cfg.ctx))
        x = self.tok_embd(ids)
        _rec(hooks, "hook_embed", x)
        if self.pos_embd is not None:
            pos = self.pos_embd(torch.arange(T, device=ids.device))[None].expand(B, T, -1)
            _rec(hooks, "hook_pos_embed", pos)
            x = x + pos
        for L, blk in enumerate(self.blocks):
            _rec(hooks, "blocks.%d.hook_resid_pre" % L, x)
            h = self._norm(x, blk.ln1_w, blk.ln1_b, "blocks.%d.ln1" % L, hooks)
            x = x + self._attn(blk, h, L, hooks)
            _rec(hooks, "blocks.%d.hook_resid_mid" % L, x)
            if self.cfg.attn_only:
                # the exported file has zero MLP weights: the MLP adds exactly 0
                _rec(hooks, "blocks.%d.hook_mlp_out" % L, torch.zeros_like(x))
            else:
                h = self._norm(x, blk.ln2_w, blk.ln2_b, "blocks.%d.ln2" % L, hooks)
                x = x + self._mlp(blk, h, L, hooks)
            _rec(hooks, "blocks.%d.hook_resid_post" % L, x)
        x = self._norm(x, self.lnf_w, self.lnf_b, "ln_final", hooks)
        w_out = self.tok_embd.weight if self.out is None else self.out.weight
        logits = x @ w_out.t()
        _rec(hooks, "unembed.hook_out", logits)
        return logits


def hook_names(cfg):
    """Every hook point forward() fills for cfg, in execution order."""
    names = ["hook_embed"] + (["hook_pos_embed"] if cfg.arch == "gpt2" else [])
    for L in range(cfg.n_layer):
        b = "blocks.%d." % L
        names += [b + "hook_resid_pre", b + "ln1.hook_scale", b + "ln1.hook_normalized",
                  b + "attn.hook_q", b + "attn.hook_k", b + "attn.hook_v"]
        if cfg.arch == "llama":
            names += [b + "attn.hook_rot_q", b + "attn.hook_rot_k"]
        names += [b + "attn.hook_attn_scores", b + "attn.hook_pattern", b + "attn.hook_z",
                  b + "hook_attn_out", b + "hook_resid_mid"]
        if not cfg.attn_only:
            names += [b + "ln2.hook_scale", b + "ln2.hook_normalized", b + "mlp.hook_pre"]
            if cfg.arch == "llama":
                names += [b + "mlp.hook_pre_linear"]
            names += [b + "mlp.hook_post"]
        names += [b + "hook_mlp_out", b + "hook_resid_post"]
    return names + ["ln_final.hook_scale", "ln_final.hook_normalized", "unembed.hook_out"]


# ---------------------------------------------------------------------------
# GGUF export
#
# Key and tensor names, and shapes, as llama.cpp reads them.  Checked against
# ggml-org/llama.cpp:
#   gguf-py/gguf/constants.py  Keys.LLM / Keys.Attention / Keys.Rope /
#       Keys.Tokenizer: "{arch}.context_length", "{arch}.embedding_length",
#       "{arch}.block_count", "{arch}.feed_forward_length",
#       "{arch}.attention.head_count(_kv)", "{arch}.attention.layer_norm_epsilon",
#       "{arch}.attention.layer_norm_rms_epsilon", "{arch}.rope.freq_base",
#       "{arch}.rope.dimension_count", "{arch}.vocab_size", "tokenizer.ggml.*".
#   src/models/gpt2.cpp (load_arch_tensors): token_embd {n_embd, n_vocab},
#       position_embd {n_embd, n_ctx_train}, attn_qkv {n_embd, n_embd + 2*n_embd_gqa}
#       (+ bias {n_embd + 2*n_embd_gqa}), attn_output {n_embd, n_embd} + bias,
#       ffn_up {n_embd, n_ff} + bias, ffn_down {n_ff, n_embd} + bias,
#       attn_norm / ffn_norm / output_norm weight + bias, output {n_embd, n_vocab}
#       TENSOR_NOT_REQUIRED (falls back to token_embd, i.e. tied);
#       LLM_KV_ATTENTION_LAYERNORM_EPS read for the norm eps.
#   llama-arch.cpp LLM_TENSOR_NAMES for LLM_ARCH_LLAMA: token_embd, output_norm,
#       output, blk.%d.attn_norm, attn_q, attn_k, attn_v, attn_output, ffn_norm,
#       ffn_gate, ffn_down, ffn_up.  llama_model_rope_type(): LLAMA uses the
#       "normal" rope on pairs of consecutive head values, so q/k rows are
#       written as-is (no HF-style permutation: this model already uses the
#       adjacent-pair convention).  The llama graph asserts n_rot == n_embd_head.
#   llama-vocab.cpp: tokenizer.ggml.pre "gpt-2" selects the GPT-2 pre-tokenizer.
# Dims are in ggml order (ne[0] innermost): a PyTorch Linear weight [out, in]
# is written as-is and gets ne = [in, out], e.g. attn_qkv ne = [d, 3d].
# Special token ids are UINT32, token_type INT32, scores FLOAT32 (the loader
# checks value types strictly).
# ---------------------------------------------------------------------------

_FTYPE = {"F32": 0, "F16": 1, "Q8_0": 7}   # general.file_type (LLAMA_FTYPE_*)


def _np(t):
    return t.detach().cpu().double().numpy().astype(np.float32)


def export_gguf(model, cfg, path, name, tokenizer, dtype="F32"):
    """Write model as a GGUF file llama.cpp loads unchanged.

    tokenizer: dict with model ('gpt2'|'llama'), tokens (list of str),
    token_type (list of int), merges (gpt2), scores (llama), bos_token_id,
    eos_token_id, and optionally unknown_token_id, add_bos_token,
    add_eos_token, add_space_prefix, pre.
    dtype: 'F32', 'F16' or 'Q8_0' for the 2-D matrices; 1-D tensors (norms,
    biases) are always F32.  Q8_0 falls back to F32 where ne[0] % 32 != 0.
    """
    if dtype not in _FTYPE:
        raise ValueError("dtype must be one of %s" % sorted(_FTYPE))
    arch = cfg.arch
    if len(tokenizer["tokens"]) != cfg.vocab:
        raise ValueError("tokenizer has %d tokens, model vocab is %d"
                         % (len(tokenizer["tokens"]), cfg.vocab))
    if arch == "llama" and cfg.rope_dim != cfg.d_head:
        raise ValueError("llama.cpp's llama graph needs rope_dim == d_head")
    d, Fd = cfg.d_model, cfg.d_ff

    w = GGUFWriter(path)
    w.add_string("general.architecture", arch)
    w.add_string("general.name", name)
    w.add_uint32("general.file_type", _FTYPE[dtype])
    if dtype == "Q8_0":
        w.add_uint32("general.quantization_version", 2)
    w.add_uint32(arch + ".context_length", cfg.ctx)
    w.add_uint32(arch + ".embedding_length", d)
    w.add_uint32(arch + ".block_count", cfg.n_layer)
    w.add_uint32(arch + ".feed_forward_length", Fd)
    w.add_uint32(arch + ".attention.head_count", cfg.n_head)
    if arch == "gpt2":
        w.add_float32(arch + ".attention.layer_norm_epsilon", cfg.eps)
    else:
        w.add_uint32(arch + ".attention.head_count_kv", cfg.n_kv_head)
        w.add_float32(arch + ".attention.layer_norm_rms_epsilon", cfg.eps)
        w.add_float32(arch + ".rope.freq_base", cfg.rope_base)
        w.add_uint32(arch + ".rope.dimension_count", cfg.rope_dim)
        w.add_uint32(arch + ".vocab_size", cfg.vocab)
    _add_tokenizer(w, tokenizer)

    def mat(tname, t):
        a = _np(t) if torch.is_tensor(t) else np.asarray(t, dtype=np.float32)
        kind = dtype
        if kind == "Q8_0" and a.shape[-1] % 32:
            kind = "F32"
        w.add_tensor(tname, a, kind)

    def vec(tname, t):
        a = _np(t) if torch.is_tensor(t) else np.asarray(t, dtype=np.float32)
        w.add_tensor(tname, a, "F32")

    mat("token_embd.weight", model.tok_embd.weight)
    if arch == "gpt2":
        mat("position_embd.weight", model.pos_embd.weight)
    for L, blk in enumerate(model.blocks):
        b = "blk.%d." % L
        vec(b + "attn_norm.weight", blk.ln1_w)
        if arch == "gpt2":
            vec(b + "attn_norm.bias", blk.ln1_b)
            mat(b + "attn_qkv.weight", blk.qkv.weight)     # [3d, d]: ne = [d, 3d]
            vec(b + "attn_qkv.bias", blk.qkv.bias)
            mat(b + "attn_output.weight", blk.o.weight)
            vec(b + "attn_output.bias", blk.o.bias)
        else:
            mat(b + "attn_q.weight", blk.q.weight)
            mat(b + "attn_k.weight", blk.k.weight)
            mat(b + "attn_v.weight", blk.v.weight)
            mat(b + "attn_output.weight", blk.o.weight)
        if cfg.attn_only:
            # a normal MLP whose output is exactly zero, so the file loads as
            # an ordinary model of this arch
            vec(b + "ffn_norm.weight", np.ones(d))
            if arch == "gpt2":
                vec(b + "ffn_norm.bias", np.zeros(d))
                mat(b + "ffn_up.weight", np.zeros((Fd, d)))
                vec(b + "ffn_up.bias", np.zeros(Fd))
                mat(b + "ffn_down.weight", np.zeros((d, Fd)))
                vec(b + "ffn_down.bias", np.zeros(d))
            else:
                mat(b + "ffn_gate.weight", np.zeros((Fd, d)))
                mat(b + "ffn_up.weight", np.zeros((Fd, d)))
                mat(b + "ffn_down.weight", np.zeros((d, Fd)))
            continue
        vec(b + "ffn_norm.weight", blk.ln2_w)
        if arch == "gpt2":
            vec(b + "ffn_norm.bias", blk.ln2_b)
            mat(b + "ffn_up.weight", blk.up.weight)
            vec(b + "ffn_up.bias", blk.up.bias)
            mat(b + "ffn_down.weight", blk.down.weight)
            vec(b + "ffn_down.bias", blk.down.bias)
        else:
            mat(b + "ffn_gate.weight", blk.gate.weight)
            mat(b + "ffn_up.weight", blk.up.weight)
            mat(b + "ffn_down.weight", blk.down.weight)
    vec("output_norm.weight", model.lnf_w)
    if arch == "gpt2":
        vec("output_norm.bias", model.lnf_b)
    if model.out is not None:
        mat("output.weight", model.out.weight)
    return w.write()


def _add_tokenizer(w, tok):
    kind = tok["model"]
    if kind not in ("gpt2", "llama", "bert"):
        raise ValueError("tokenizer model must be 'gpt2', 'llama' or 'bert'")
    n = len(tok["tokens"])
    w.add_string("tokenizer.ggml.model", kind)
    pre = tok.get("pre", "gpt-2" if kind == "gpt2" else None)
    if pre is not None:
        w.add_string("tokenizer.ggml.pre", pre)
    w.add_array("tokenizer.ggml.tokens", list(tok["tokens"]), GGUF_STRING)
    if len(tok["token_type"]) != n:
        raise ValueError("token_type length differs from tokens")
    w.add_array("tokenizer.ggml.token_type", [int(t) for t in tok["token_type"]], GGUF_INT32)
    if kind == "gpt2":
        w.add_array("tokenizer.ggml.merges", list(tok["merges"]), GGUF_STRING)
    if tok.get("scores") is not None:
        if len(tok["scores"]) != n:
            raise ValueError("scores length differs from tokens")
        w.add_array("tokenizer.ggml.scores", [float(s) for s in tok["scores"]], GGUF_FLOAT32)
    elif kind == "llama":
        raise ValueError("a llama tokenizer needs scores")
    for key in ("bos_token_id", "eos_token_id", "unknown_token_id", "padding_token_id", "seperator_token_id",
                "mask_token_id", "cls_token_id"):
        if tok.get(key) is not None:
            if not 0 <= tok[key] < n:
                raise ValueError("%s %d out of range" % (key, tok[key]))
            w.add_uint32("tokenizer.ggml." + key, tok[key])
    for key in ("add_bos_token", "add_eos_token", "add_space_prefix"):
        if tok.get(key) is not None:
            w.add_bool("tokenizer.ggml." + key, tok[key])


# ---------------------------------------------------------------------------
# The Llama family as llama.cpp runs it: qwen2, qwen3, gemma2, gemma3, phi3,
# and llama with a sliding window and rotary scaling.  Written from each
# architecture's published definition (Hugging Face's modeling files:
# Qwen2/Qwen3/Gemma2/Gemma3/Phi3/Llama, and llama.cpp's src/models/*.cpp
# for the facts a GGUF file carries), independently of the C engine.
# Float64 throughout; hooks named as attnscope (and TransformerLens) name
# them.  Differences from the Llama block, each a field of DecoderConfig:
#   qkv_bias      Qwen 2: biases on q, k, v
#   qk_norm       Qwen 3, Gemma 3: RMSNorm over each head of q and k before rotary
#   post_norms    Gemma 2, 3: RMSNorm after attention and after the MLP too
#   gemma_norm    Gemma: RMSNorm weights are stored zero-centred, used as 1 + w
#                 (the GGUF stores 1 + w, as llama.cpp's converter writes it)
#   embed_scale   Gemma: embeddings times sqrt(d_model)
#   gelu          Gemma: GEGLU (gelu, tanh form) instead of SwiGLU
#   neox          rotary on the two halves of each head (HF's rotate_half),
#                 llama.cpp's NEOX mode; else adjacent pairs (llama)
#   window, windowed(L)   sliding-window layers: query q sees keys q-window < k <= q
#   rope_base_window      their rotary base (Gemma)
#   attn_softcap, final_softcap   cap * tanh(x / cap) on scores, on logits
#   rope_scaling  None | ("linear", f) | ("yarn", f, orig) | ("llama3", freqs)
#                 | ("longrope", long, short, orig, attn_factor)
#   fused         Phi-3: the file fuses q|k|v and gate|up
# ---------------------------------------------------------------------------

@dataclass
class DecoderConfig:
    arch: str
    vocab: int
    d_model: int
    n_layer: int
    n_head: int
    n_kv_head: int
    d_head: int
    d_ff: int
    ctx: int
    eps: float
    rope_base: float = 10000.0
    neox: bool = False
    qkv_bias: bool = False
    output_bias: bool = False
    qk_norm: bool = False
    post_norms: bool = False
    gemma_norm: bool = False
    embed_scale: bool = False
    gelu: bool = False
    fused: bool = False
    tie_embeddings: bool = False
    window: int = 0
    window_pattern: int = 0          # period n: layer L windowed unless L % n == n - 1 (0: all)
    rope_base_window: Optional[float] = None
    attn_softcap: float = 0.0
    final_softcap: float = 0.0
    attn_scale: Optional[float] = None   # None: 1/sqrt(d_head)
    rope_scaling: Optional[tuple] = None
    n_expert: int = 0                # > 0: every MLP routed (Mixtral): n_expert SwiGLU experts of d_ff,
    n_expert_used: int = 0           # n_expert_used chosen per token, their weights renormalised
    router_tie: bool = False         # the fixture copies the router's row of expert E-2 to E-1 (equal weights)
    expert_renorm: bool = True       # False: the chosen weights used as they are (Qwen-MoE)
    d_expert: int = 0                # an expert's width (0: d_ff)
    d_shared: int = 0                # > 0: a shared SwiGLU expert of this width under a sigmoid gate (Qwen-MoE)

    def windowed(self, L):
        if not self.window:
            return False
        n = self.window_pattern
        return n == 0 or L % n < n - 1


class DecoderBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, dh, H, Hk, Fd = c.d_model, c.d_head, c.n_head, c.n_kv_head, c.d_ff
        self.ln1_w = nn.Parameter(torch.ones(d))
        self.q = nn.Linear(d, H * dh, bias=c.qkv_bias)
        self.k = nn.Linear(d, Hk * dh, bias=c.qkv_bias)
        self.v = nn.Linear(d, Hk * dh, bias=c.qkv_bias)
        if c.qk_norm:
            self.q_norm_w = nn.Parameter(torch.ones(dh))
            self.k_norm_w = nn.Parameter(torch.ones(dh))
        self.o = nn.Linear(H * dh, d, bias=False)
        self.ln2_w = nn.Parameter(torch.ones(d))
        if c.post_norms:
            self.ln1_post_w = nn.Parameter(torch.ones(d))
            self.ln2_post_w = nn.Parameter(torch.ones(d))
        if c.n_expert:
            E, Fe = c.n_expert, c.d_expert or Fd
            self.router = nn.Linear(d, E, bias=False)
            self.gate_exps = nn.Parameter(torch.empty(E, Fe, d))
            self.up_exps = nn.Parameter(torch.empty(E, Fe, d))
            self.down_exps = nn.Parameter(torch.empty(E, d, Fe))
            if c.d_shared:
                self.shexp_gate_inp = nn.Linear(d, 1, bias=False)
                self.gate_shexp = nn.Linear(d, c.d_shared, bias=False)
                self.up_shexp = nn.Linear(d, c.d_shared, bias=False)
                self.down_shexp = nn.Linear(c.d_shared, d, bias=False)
            return
        self.gate = nn.Linear(d, Fd, bias=False)
        self.up = nn.Linear(d, Fd, bias=False)
        self.down = nn.Linear(Fd, d, bias=False)


class Decoder(nn.Module):
    """forward(ids [B,T] long, hooks=None) -> logits [B,T,V]."""

    def __init__(self, c: DecoderConfig):
        super().__init__()
        self.cfg = c
        self.tok_embd = nn.Embedding(c.vocab, c.d_model)
        self.blocks = nn.ModuleList(DecoderBlock(c) for _ in range(c.n_layer))
        self.lnf_w = nn.Parameter(torch.ones(c.d_model))
        self.out = None if c.tie_embeddings else nn.Linear(c.d_model, c.vocab, bias=c.output_bias)

    # -- pieces -----------------------------------------------------------
    def _rms(self, x, w, prefix, hooks, per_head=False):
        """RMSNorm over the last dim; Gemma's weights are used as 1 + w."""
        scale = torch.sqrt((x * x).mean(-1, keepdim=True) + self.cfg.eps)
        out = x / scale * ((1.0 + w) if self.cfg.gemma_norm else w)
        _rec(hooks, prefix + ".hook_scale", scale)
        _rec(hooks, prefix + ".hook_normalized", out)
        return out

    def _angles(self, L, T):
        """cos, sin [T, dim/2] and the magnitude they are scaled by."""
        c = self.cfg
        dim = c.d_head
        base = c.rope_base_window if c.windowed(L) and c.rope_base_window else c.rope_base
        i = torch.arange(dim // 2, dtype=torch.float64)
        inv = base ** (-2.0 * i / dim)
        mag = 1.0
        sc = None if c.windowed(L) and c.rope_base_window else c.rope_scaling
        if sc is not None:
            kind = sc[0]
            if kind == "linear":                       # positions divided by the factor
                inv = inv / sc[1]
            elif kind == "llama3":                     # per-frequency divisors
                inv = inv / torch.tensor(sc[1], dtype=torch.float64)
            elif kind == "longrope":                   # Phi-3: long factors past the trained context
                factors = sc[1] if c.ctx > sc[3] else sc[2]
                inv = inv / torch.tensor(factors, dtype=torch.float64)
                mag = sc[4]
            elif kind == "yarn":                       # YaRN (Peng et al.), as HF computes it
                factor, orig = sc[1], sc[2]
                def corr(rot):
                    return dim * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(base))
                low, high = max(math.floor(corr(32.0)), 0), min(math.ceil(corr(1.0)), dim - 1)
                ramp = ((i - low) / max(high - low, 0.001)).clamp(0, 1)
                extrap = 1.0 - ramp                    # 1: keep the unscaled frequency
                inv = (inv / factor) * (1 - extrap) + inv * extrap
                mag = 0.1 * math.log(factor) + 1.0
        theta = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
        return torch.cos(theta) * mag, torch.sin(theta) * mag

    def _rope(self, x, cos, sin):
        """x: [B,T,h,dh]; NEOX rotates (i, i + dh/2), else (2i, 2i+1)."""
        cos, sin = cos.to(x.dtype)[None, :, None, :], sin.to(x.dtype)[None, :, None, :]
        if self.cfg.neox:
            half = x.shape[-1] // 2
            a, b = x[..., :half], x[..., half:]
            return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)
        xr = x.reshape(*x.shape[:-1], x.shape[-1] // 2, 2)
        a, b = xr[..., 0], xr[..., 1]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).reshape(x.shape)

    def _attn(self, blk, x, L, hooks):
        c = self.cfg
        B, T, _ = x.shape
        H, Hk, dh = c.n_head, c.n_kv_head, c.d_head
        p = "blocks.%d.attn." % L
        q = blk.q(x).view(B, T, H, dh)
        k = blk.k(x).view(B, T, Hk, dh)
        v = blk.v(x).view(B, T, Hk, dh)
        _rec(hooks, p + "hook_q", q)
        _rec(hooks, p + "hook_k", k)
        _rec(hooks, p + "hook_v", v)
        if c.qk_norm:
            q = self._rms(q, blk.q_norm_w, p + "q_norm", hooks)
            k = self._rms(k, blk.k_norm_w, p + "k_norm", hooks)
        cos, sin = self._angles(L, T)
        q, k = self._rope(q, cos, sin), self._rope(k, cos, sin)
        _rec(hooks, p + "hook_rot_q", q)
        _rec(hooks, p + "hook_rot_k", k)
        k = k.repeat_interleave(H // Hk, dim=2)
        v = v.repeat_interleave(H // Hk, dim=2)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # [B,H,T,dh]
        scale = c.attn_scale if c.attn_scale is not None else 1.0 / math.sqrt(dh)
        scores = (q @ k.transpose(-1, -2)) * scale
        if c.attn_softcap:
            scores = c.attn_softcap * torch.tanh(scores / c.attn_softcap)
        qi = torch.arange(T)[:, None]
        ki = torch.arange(T)[None, :]
        hidden = ki > qi
        if c.windowed(L):
            hidden = hidden | (ki <= qi - c.window)
        scores = scores.masked_fill(hidden, float("-inf"))
        _rec(hooks, p + "hook_attn_scores", scores)
        pattern = torch.softmax(scores, dim=-1)
        _rec(hooks, p + "hook_pattern", pattern)
        z = (pattern @ v).transpose(1, 2)
        _rec(hooks, p + "hook_z", z)
        out = blk.o(z.reshape(B, T, H * dh))
        if c.post_norms:
            _rec(hooks, p + "hook_out", out)
            out = self._rms(out, blk.ln1_post_w, "blocks.%d.ln1_post" % L, hooks)
        _rec(hooks, "blocks.%d.hook_attn_out" % L, out)
        return out

    def _moe(self, blk, x, L, hooks):
        """Mixtral's sparse MLP (Jiang et al. 2024): a softmax router over
        the experts, the top k (a stable descending sort: of equal weights
        the lower index first), their weights renormalised to sum 1, each
        chosen expert's SwiGLU, and their weighted sum. Slot j of a token
        is its j-th largest weight. Qwen-MoE (Qwen Team 2024): the weights
        as they are, plus a shared expert's SwiGLU times sigmoid(x · w)."""
        c = self.cfg
        p = "blocks.%d.mlp." % L
        logits = blk.router(x)                                        # [B,T,E]
        _rec(hooks, p + "hook_router_logits", logits)
        weights = torch.softmax(logits, dim=-1)
        _rec(hooks, p + "hook_expert_weights", weights)
        idx = torch.sort(weights, dim=-1, descending=True, stable=True).indices[..., :c.n_expert_used]
        _rec(hooks, p + "hook_expert_indices", idx.to(torch.int32))
        gates = torch.gather(weights, -1, idx)
        if c.expert_renorm:
            gates = gates / gates.sum(-1, keepdim=True)
        _rec(hooks, p + "hook_expert_gates", gates)
        out = _routed_experts(blk, x, idx, gates, p, hooks)
        if c.d_shared:
            _rec(hooks, p + "hook_routed_out", out)
            logit = blk.shexp_gate_inp(x)
            _rec(hooks, p + "shared.hook_gate_logit", logit)
            gate = torch.sigmoid(logit)
            _rec(hooks, p + "shared.hook_gate", gate)
            out = out + gate * _shared_expert(blk, x, p, hooks)
        _rec(hooks, "blocks.%d.hook_mlp_out" % L, out)
        return out

    def _mlp(self, blk, x, L, hooks):
        c = self.cfg
        if c.n_expert:
            return self._moe(blk, x, L, hooks)
        p = "blocks.%d.mlp." % L
        pre = blk.gate(x)
        _rec(hooks, p + "hook_pre", pre)
        lin = blk.up(x)
        _rec(hooks, p + "hook_pre_linear", lin)
        act = F.gelu(pre, approximate="tanh") if c.gelu else F.silu(pre)
        post = act * lin
        _rec(hooks, p + "hook_post", post)
        out = blk.down(post)
        if c.post_norms:
            _rec(hooks, p + "hook_out", out)
            out = self._rms(out, blk.ln2_post_w, "blocks.%d.ln2_post" % L, hooks)
        _rec(hooks, "blocks.%d.hook_mlp_out" % L, out)
        return out

    def forward(self, ids, hooks=None):
        c = self.cfg
        x = self.tok_embd(ids)
        if c.embed_scale:
            x = x * math.sqrt(c.d_model)
        _rec(hooks, "hook_embed", x)
        for L, blk in enumerate(self.blocks):
            _rec(hooks, "blocks.%d.hook_resid_pre" % L, x)
            h = self._rms(x, blk.ln1_w, "blocks.%d.ln1" % L, hooks)
            x = x + self._attn(blk, h, L, hooks)
            _rec(hooks, "blocks.%d.hook_resid_mid" % L, x)
            h = self._rms(x, blk.ln2_w, "blocks.%d.ln2" % L, hooks)
            x = x + self._mlp(blk, h, L, hooks)
            _rec(hooks, "blocks.%d.hook_resid_post" % L, x)
        x = self._rms(x, self.lnf_w, "ln_final", hooks)
        logits = x @ self.tok_embd.weight.t() if self.out is None else self.out(x)
        if c.final_softcap:
            logits = c.final_softcap * torch.tanh(logits / c.final_softcap)
        _rec(hooks, "unembed.hook_out", logits)
        return logits


def export_decoder_gguf(model, c, path, name, tokenizer):
    """A GGUF of a Decoder with the keys and tensor names llama.cpp reads
    for c.arch (src/llama-arch.cpp, src/models/<arch>.cpp), all F32."""
    a = c.arch
    w = GGUFWriter(path)
    w.add_string("general.architecture", a)
    w.add_string("general.name", name)
    w.add_uint32("general.file_type", 0)
    for key, val in (("context_length", c.ctx), ("embedding_length", c.d_model), ("block_count", c.n_layer),
                     ("feed_forward_length", c.d_ff), ("attention.head_count", c.n_head),
                     ("attention.head_count_kv", c.n_kv_head), ("rope.dimension_count", c.d_head),
                     ("vocab_size", c.vocab)):
        w.add_uint32("%s.%s" % (a, key), val)
    if c.d_head != c.d_model // c.n_head:
        w.add_uint32(a + ".attention.key_length", c.d_head)
        w.add_uint32(a + ".attention.value_length", c.d_head)
    w.add_float32(a + ".attention.layer_norm_rms_epsilon", c.eps)
    w.add_float32(a + ".rope.freq_base", c.rope_base)
    if c.window:
        w.add_uint32(a + ".attention.sliding_window", c.window)
        if c.window_pattern:
            w.add_uint32(a + ".attention.sliding_window_pattern", c.window_pattern)
    if c.rope_base_window:
        w.add_float32(a + ".rope.freq_base_swa", c.rope_base_window)
    if c.n_expert:
        w.add_uint32(a + ".expert_count", c.n_expert)
        w.add_uint32(a + ".expert_used_count", c.n_expert_used)
        if c.d_expert:
            w.add_uint32(a + ".expert_feed_forward_length", c.d_expert)
        if c.d_shared and c.d_shared != c.d_ff:
            w.add_uint32(a + ".expert_shared_feed_forward_length", c.d_shared)
    if c.attn_softcap:
        w.add_float32(a + ".attn_logit_softcapping", c.attn_softcap)
    if c.final_softcap:
        w.add_float32(a + ".final_logit_softcapping", c.final_softcap)
    sc = c.rope_scaling
    if sc is not None and sc[0] in ("linear", "yarn"):
        w.add_string(a + ".rope.scaling.type", sc[0])
        w.add_float32(a + ".rope.scaling.factor", sc[1])
        if sc[0] == "yarn":
            w.add_uint32(a + ".rope.scaling.original_context_length", sc[2])
    if sc is not None and sc[0] == "longrope":
        w.add_uint32(a + ".rope.scaling.original_context_length", sc[3])
        w.add_float32(a + ".rope.scaling.attn_factor", sc[4])
    _add_tokenizer(w, tokenizer)

    def t(tname, x):
        w.add_tensor(tname, _np(x) if torch.is_tensor(x) else np.asarray(x, dtype=np.float32), "F32")

    def norm_w(x):
        return 1.0 + x if c.gemma_norm else x

    t("token_embd.weight", model.tok_embd.weight)
    if sc is not None and sc[0] == "llama3":
        t("rope_freqs.weight", np.asarray(sc[1], dtype=np.float32))
    if sc is not None and sc[0] == "longrope":
        t("rope_factors_long.weight", np.asarray(sc[1], dtype=np.float32))
        t("rope_factors_short.weight", np.asarray(sc[2], dtype=np.float32))
    for L, blk in enumerate(model.blocks):
        b = "blk.%d." % L
        t(b + "attn_norm.weight", norm_w(blk.ln1_w))
        if c.fused:
            t(b + "attn_qkv.weight", torch.cat((blk.q.weight, blk.k.weight, blk.v.weight)))
        else:
            t(b + "attn_q.weight", blk.q.weight)
            t(b + "attn_k.weight", blk.k.weight)
            t(b + "attn_v.weight", blk.v.weight)
        if c.qkv_bias:
            t(b + "attn_q.bias", blk.q.bias)
            t(b + "attn_k.bias", blk.k.bias)
            t(b + "attn_v.bias", blk.v.bias)
        if c.qk_norm:
            t(b + "attn_q_norm.weight", norm_w(blk.q_norm_w))
            t(b + "attn_k_norm.weight", norm_w(blk.k_norm_w))
        t(b + "attn_output.weight", blk.o.weight)
        if c.post_norms:
            t(b + "post_attention_norm.weight", norm_w(blk.ln1_post_w))
            t(b + "post_ffw_norm.weight", norm_w(blk.ln2_post_w))
        t(b + "ffn_norm.weight", norm_w(blk.ln2_w))
        if c.n_expert:   # llama.cpp's ffn_gate_inp and the 3-D ffn_*_exps, ne = [cols, rows, experts]
            t(b + "ffn_gate_inp.weight", blk.router.weight)
            t(b + "ffn_gate_exps.weight", blk.gate_exps)
            t(b + "ffn_up_exps.weight", blk.up_exps)
            t(b + "ffn_down_exps.weight", blk.down_exps)
            if c.d_shared:   # the shared expert's gate is one row, stored 1-D as llama.cpp reads it
                t(b + "ffn_gate_inp_shexp.weight", blk.shexp_gate_inp.weight[0])
                t(b + "ffn_gate_shexp.weight", blk.gate_shexp.weight)
                t(b + "ffn_up_shexp.weight", blk.up_shexp.weight)
                t(b + "ffn_down_shexp.weight", blk.down_shexp.weight)
        elif c.fused:
            t(b + "ffn_up.weight", torch.cat((blk.gate.weight, blk.up.weight)))
        else:
            t(b + "ffn_gate.weight", blk.gate.weight)
            t(b + "ffn_up.weight", blk.up.weight)
        if not c.n_expert:
            t(b + "ffn_down.weight", blk.down.weight)
    t("output_norm.weight", norm_w(model.lnf_w))
    if model.out is not None:
        t("output.weight", model.out.weight)
        if c.output_bias:
            t("output.bias", model.out.bias)
    return w.write()


# ---------------------------------------------------------------------------
# DeepSeek-V2's multi-head latent attention (DeepSeek-AI 2024, section 2.1:
# "Multi-Head Latent Attention"), as llama.cpp lays out its tensors for
# general.architecture "deepseek2" (the legacy attn_kv_b): q = W_Q h (or
# W_QB RMSNorm(W_QA h)); [c_KV, k_R] = W_KVA h, the latent c_KV normed;
# [k_C, v] per head = W_KVB c_KV; each head's q = [q_C, RoPE(q_R)] and
# k = [k_C, RoPE(k_R)] (one k_R for every head); softmax(q k^T /
# sqrt(d_nope + d_rope)) v. Rotary on adjacent pairs (llama.cpp's NORM
# mode for deepseek2). Dense SwiGLU MLPs (every layer "leading dense").
# Float64; written from the paper, independently of the C engine.
# ---------------------------------------------------------------------------

@dataclass
class DeepSeek2Config:
    vocab: int
    d_model: int = 32
    n_layer: int = 2
    n_head: int = 4
    d_nope: int = 8
    d_rope: int = 4
    d_v: int = 6
    kv_lora: int = 12
    q_lora: int = 0          # 0: q straight from the stream (attn_q)
    d_ff: int = 64
    ctx: int = 32
    eps: float = 1e-6
    rope_base: float = 10000.0
    arch: str = "deepseek2"
    absorbed: bool = False       # newer converters' attn_k_b / attn_v_b: MLA computed as llama.cpp's MQA form
    # YaRN as DeepSeek-V2 applies it (HF's DeepseekV2YarnRotaryEmbedding with mscale = mscale_all_dim):
    # (factor, original context, yarn_log_multiplier = 0.1 * mscale_all_dim); None: no scaling
    yarn: Optional[tuple] = None
    # DeepSeekMoE after the first n_dense layers (n_dense None: every layer dense)
    n_dense: Optional[int] = None
    n_expert: int = 0
    n_expert_used: int = 0
    d_expert: int = 16
    n_shared: int = 0            # shared experts: one SwiGLU of n_shared * d_expert, no gate
    sigmoid: bool = False        # V3: sigmoid affinities; V2: softmax
    bias: bool = False           # V3's selection bias (exp_probs_b), for choosing only
    n_group: int = 0             # > 1: group-limited routing, group_used groups chosen from
    group_used: int = 0
    norm: bool = False           # chosen weights divided by their sum
    scale: float = 1.0           # then multiplied by it

    def dense(self, L):
        return self.n_dense is None or L < self.n_dense


class DeepSeek2Block(nn.Module):
    def __init__(self, c, dense=True):
        super().__init__()
        d, H = c.d_model, c.n_head
        dk = c.d_nope + c.d_rope
        self.ln1_w = nn.Parameter(torch.ones(d))
        if c.q_lora:
            self.q_a = nn.Linear(d, c.q_lora, bias=False)
            self.q_a_norm_w = nn.Parameter(torch.ones(c.q_lora))
            self.q_b = nn.Linear(c.q_lora, H * dk, bias=False)
        else:
            self.q = nn.Linear(d, H * dk, bias=False)
        self.kv_a = nn.Linear(d, c.kv_lora + c.d_rope, bias=False)
        self.kv_a_norm_w = nn.Parameter(torch.ones(c.kv_lora))
        self.kv_b = nn.Linear(c.kv_lora, H * (c.d_nope + c.d_v), bias=False)
        self.o = nn.Linear(H * c.d_v, d, bias=False)
        self.ln2_w = nn.Parameter(torch.ones(d))
        if not dense:
            E, Fe = c.n_expert, c.d_expert
            self.router = nn.Linear(d, E, bias=False)
            if c.bias:
                self.exp_probs_b = nn.Parameter(torch.zeros(E))
            self.gate_exps = nn.Parameter(torch.empty(E, Fe, d))
            self.up_exps = nn.Parameter(torch.empty(E, Fe, d))
            self.down_exps = nn.Parameter(torch.empty(E, d, Fe))
            if c.n_shared:
                self.gate_shexp = nn.Linear(d, c.n_shared * Fe, bias=False)
                self.up_shexp = nn.Linear(d, c.n_shared * Fe, bias=False)
                self.down_shexp = nn.Linear(c.n_shared * Fe, d, bias=False)
            return
        self.gate = nn.Linear(d, c.d_ff, bias=False)
        self.up = nn.Linear(d, c.d_ff, bias=False)
        self.down = nn.Linear(c.d_ff, d, bias=False)


class DeepSeek2(nn.Module):
    """forward(ids [B,T] long, hooks=None) -> logits [B,T,V]."""

    def __init__(self, c: DeepSeek2Config):
        super().__init__()
        self.cfg = c
        self.tok_embd = nn.Embedding(c.vocab, c.d_model)
        self.blocks = nn.ModuleList(DeepSeek2Block(c, c.dense(L)) for L in range(c.n_layer))
        self.lnf_w = nn.Parameter(torch.ones(c.d_model))
        self.out = nn.Linear(c.d_model, c.vocab, bias=False)

    def _rms(self, x, w, prefix, hooks):
        scale = torch.sqrt((x * x).mean(-1, keepdim=True) + self.cfg.eps)
        out = x / scale * w
        _rec(hooks, prefix + ".hook_scale", scale)
        _rec(hooks, prefix + ".hook_normalized", out)
        return out

    def _rope(self, x):
        """x [B,T,h,d_rope]: pair (2i, 2i+1) rotated by pos * base^(-2i/d_rope)."""
        c = self.cfg
        T = x.shape[1]
        i = torch.arange(c.d_rope // 2, dtype=torch.float64)
        inv = c.rope_base ** (-2.0 * i / c.d_rope)
        if c.yarn is not None:   # the slow dimensions' frequencies divided by the factor, a linear ramp between
            factor, orig, dim = c.yarn[0], c.yarn[1], c.d_rope
            def corr(rot):
                return dim * math.log(orig / (rot * 2 * math.pi)) / (2 * math.log(c.rope_base))
            low, high = max(math.floor(corr(32.0)), 0), min(math.ceil(corr(1.0)), dim - 1)
            ramp = ((i - low) / max(high - low, 0.001)).clamp(0, 1)
            inv = (inv / factor) * ramp + inv * (1.0 - ramp)
        theta = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
        cos, sin = torch.cos(theta).to(x.dtype)[None, :, None, :], torch.sin(theta).to(x.dtype)[None, :, None, :]
        xr = x.reshape(*x.shape[:-1], x.shape[-1] // 2, 2)
        a, b = xr[..., 0], xr[..., 1]
        return torch.stack((a * cos - b * sin, a * sin + b * cos), dim=-1).reshape(x.shape)

    def _scale(self):
        """1/sqrt(d_nope + d_rope), times mscale^2 under YaRN (mscale = 1 + log_mul ln factor)."""
        c = self.cfg
        m = 1.0 + c.yarn[2] * math.log(c.yarn[0]) if c.yarn is not None else 1.0
        return m * m / math.sqrt(c.d_nope + c.d_rope)

    def _attn(self, blk, x, L, hooks):
        c = self.cfg
        B, T, _ = x.shape
        H, dn, dr, dv = c.n_head, c.d_nope, c.d_rope, c.d_v
        p = "blocks.%d.attn." % L
        if c.q_lora:
            ql = blk.q_a(x)
            _rec(hooks, p + "hook_q_latent", ql)
            q = blk.q_b(self._rms(ql, blk.q_a_norm_w, p + "q_a_norm", hooks))
        else:
            q = blk.q(x)
        q = q.view(B, T, H, dn + dr)
        _rec(hooks, p + "hook_q", q)
        kva = blk.kv_a(x)
        latent, k_r = kva[..., :c.kv_lora], kva[..., c.kv_lora:].reshape(B, T, 1, dr)
        _rec(hooks, p + "hook_kv_latent", latent)
        _rec(hooks, p + "hook_k_pe", k_r)
        latent = self._rms(latent, blk.kv_a_norm_w, p + "kv_a_norm", hooks)
        if c.absorbed:
            return self._attn_absorbed(blk, q, latent, k_r, L, hooks)
        kv = blk.kv_b(latent).view(B, T, H, dn + dv)
        _rec(hooks, p + "hook_kv", kv)
        k_c, v = kv[..., :dn], kv[..., dn:]
        _rec(hooks, p + "hook_k_nope", k_c)
        _rec(hooks, p + "hook_v", v)
        k = torch.cat((k_c, k_r.expand(B, T, H, dr)), dim=-1)
        _rec(hooks, p + "hook_k", k)
        q = torch.cat((q[..., :dn], self._rope(q[..., dn:])), dim=-1)
        k = torch.cat((k[..., :dn], self._rope(k[..., dn:])), dim=-1)
        _rec(hooks, p + "hook_rot_q", q)
        _rec(hooks, p + "hook_rot_k", k)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        scores = (q @ k.transpose(-1, -2)) * self._scale()
        hidden = torch.arange(T)[None, :] > torch.arange(T)[:, None]
        scores = scores.masked_fill(hidden, float("-inf"))
        _rec(hooks, p + "hook_attn_scores", scores)
        pattern = torch.softmax(scores, dim=-1)
        _rec(hooks, p + "hook_pattern", pattern)
        z = (pattern @ v).transpose(1, 2)
        _rec(hooks, p + "hook_z", z)
        out = blk.o(z.reshape(B, T, H * dv))
        _rec(hooks, "blocks.%d.hook_attn_out" % L, out)
        return out

    def _attn_absorbed(self, blk, q, latent, k_r, L, hooks):
        """The same attention with W_UK absorbed into q and W_UV applied
        after the mix (V2 section 2.1.3): scores = [W_UK^T q_C, RoPE(q_R)] .
        [c_KV, RoPE(k_R)], one key-value head for all; z = W_UV (pattern c_KV)."""
        c = self.cfg
        B, T = q.shape[:2]
        H, dn, dr, dv, kl = c.n_head, c.d_nope, c.d_rope, c.d_v, c.kv_lora
        p = "blocks.%d.attn." % L
        kvb = blk.kv_b.weight.view(H, dn + dv, kl)
        w_uk, w_uv = kvb[:, :dn, :], kvb[:, dn:, :]
        q_rot = torch.cat((q[..., :dn], self._rope(q[..., dn:])), dim=-1)
        _rec(hooks, p + "hook_rot_q", q_rot)
        q_abs = torch.einsum("bthj,hjc->bthc", q[..., :dn], w_uk)
        _rec(hooks, p + "hook_q_absorbed", q_abs)
        _rec(hooks, p + "hook_rot_q_pe", q_rot[..., dn:])
        q_mqa = torch.cat((q_abs, q_rot[..., dn:]), dim=-1)
        _rec(hooks, p + "hook_q_mqa", q_mqa)
        k = torch.cat((latent, k_r.reshape(B, T, dr)), dim=-1).view(B, T, 1, kl + dr)
        _rec(hooks, p + "hook_k", k)
        k = torch.cat((k[..., :kl], self._rope(k[..., kl:])), dim=-1)
        _rec(hooks, p + "hook_rot_k", k)
        v = latent.view(B, T, 1, kl)
        _rec(hooks, p + "hook_v", v)
        scores = (q_mqa.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)) * self._scale()  # [B,H,T,T]
        hidden = torch.arange(T)[None, :] > torch.arange(T)[:, None]
        scores = scores.masked_fill(hidden, float("-inf"))
        _rec(hooks, p + "hook_attn_scores", scores)
        pattern = torch.softmax(scores, dim=-1)
        _rec(hooks, p + "hook_pattern", pattern)
        z_lat = (pattern @ v.transpose(1, 2)).transpose(1, 2)   # [B,T,H,kl]
        _rec(hooks, p + "hook_z_latent", z_lat)
        z = torch.einsum("bthc,hvc->bthv", z_lat, w_uv)
        _rec(hooks, p + "hook_z", z)
        out = blk.o(z.reshape(B, T, H * dv))
        _rec(hooks, "blocks.%d.hook_attn_out" % L, out)
        return out

    def _moe(self, blk, x, L, hooks):
        """DeepSeekMoE (DeepSeek-AI 2024, V2 section 2.2; V3 section 2.1.2):
        affinities s = softmax or sigmoid of the router's logits; the top k
        of s + b (b: V3's bias, for choosing only; a stable descending sort,
        of equal ones the lower index) among the experts of the group_used
        groups whose two largest s + b sum highest; gates g = s of the
        chosen, over their sum when normalised, times the scale; output
        sum_j g_j FFN_j(x) plus the shared experts' FFN(x)."""
        c = self.cfg
        p = "blocks.%d.mlp." % L
        B, T, _ = x.shape
        logits = blk.router(x)
        _rec(hooks, p + "hook_router_logits", logits)
        s = torch.sigmoid(logits) if c.sigmoid else torch.softmax(logits, dim=-1)
        _rec(hooks, p + "hook_expert_weights", s)
        sel = s + blk.exp_probs_b if c.bias else s
        if c.n_group > 1:
            per = c.n_expert // c.n_group
            grp = sel.reshape(B, T, c.n_group, per)
            top2 = torch.sort(grp, dim=-1, descending=True, stable=True).values[..., :2].sum(-1)  # [B,T,G]
            keep = torch.sort(top2, dim=-1, descending=True, stable=True).indices[..., :c.group_used]
            mask = torch.zeros(B, T, c.n_group, dtype=torch.bool).scatter_(-1, keep, True)
            sel = sel.masked_fill(~mask.repeat_interleave(per, dim=-1), float("-inf"))
        idx = torch.sort(sel, dim=-1, descending=True, stable=True).indices[..., :c.n_expert_used]
        _rec(hooks, p + "hook_expert_indices", idx.to(torch.int32))
        g = torch.gather(s, -1, idx)
        if c.norm:
            g = g / g.sum(-1, keepdim=True)
        if c.scale not in (0.0, 1.0):
            g = g * c.scale
        _rec(hooks, p + "hook_expert_gates", g)
        out = _routed_experts(blk, x, idx, g, p, hooks)
        if c.n_shared:
            _rec(hooks, p + "hook_routed_out", out)
            out = out + _shared_expert(blk, x, p, hooks)
        _rec(hooks, "blocks.%d.hook_mlp_out" % L, out)
        return out

    def forward(self, ids, hooks=None):
        x = self.tok_embd(ids)
        _rec(hooks, "hook_embed", x)
        for L, blk in enumerate(self.blocks):
            _rec(hooks, "blocks.%d.hook_resid_pre" % L, x)
            h = self._rms(x, blk.ln1_w, "blocks.%d.ln1" % L, hooks)
            x = x + self._attn(blk, h, L, hooks)
            _rec(hooks, "blocks.%d.hook_resid_mid" % L, x)
            h = self._rms(x, blk.ln2_w, "blocks.%d.ln2" % L, hooks)
            p = "blocks.%d.mlp." % L
            if not self.cfg.dense(L):
                x = x + self._moe(blk, h, L, hooks)
                _rec(hooks, "blocks.%d.hook_resid_post" % L, x)
                continue
            pre = blk.gate(h)
            _rec(hooks, p + "hook_pre", pre)
            lin = blk.up(h)
            _rec(hooks, p + "hook_pre_linear", lin)
            post = F.silu(pre) * lin
            _rec(hooks, p + "hook_post", post)
            out = blk.down(post)
            _rec(hooks, "blocks.%d.hook_mlp_out" % L, out)
            x = x + out
            _rec(hooks, "blocks.%d.hook_resid_post" % L, x)
        x = self._rms(x, self.lnf_w, "ln_final", hooks)
        logits = self.out(x)
        _rec(hooks, "unembed.hook_out", logits)
        return logits


def export_deepseek2_gguf(model, c, path, name, tokenizer):
    """A GGUF of a DeepSeek2 with the keys and tensor names llama.cpp
    reads for deepseek2 (src/llama-model.cpp, src/llama-arch.cpp), F32."""
    a = c.arch
    w = GGUFWriter(path)
    w.add_string("general.architecture", a)
    w.add_string("general.name", name)
    w.add_uint32("general.file_type", 0)
    for key, val in (("context_length", c.ctx), ("embedding_length", c.d_model), ("block_count", c.n_layer),
                     ("feed_forward_length", c.d_ff), ("attention.head_count", c.n_head),
                     ("attention.head_count_kv", 1 if c.absorbed else c.n_head), ("rope.dimension_count", c.d_rope),
                     # absorbed: key_length / value_length the one key-value head's, *_mla the heads'
                     ("attention.key_length", c.kv_lora + c.d_rope if c.absorbed else c.d_nope + c.d_rope),
                     ("attention.value_length", c.kv_lora if c.absorbed else c.d_v),
                     ("attention.kv_lora_rank", c.kv_lora), ("vocab_size", c.vocab),
                     # llama.cpp reads the routing keys even when every layer is dense
                     ("leading_dense_block_count", c.n_layer if c.n_dense is None else c.n_dense),
                     ("expert_feed_forward_length", c.d_expert if c.n_expert else c.d_ff),
                     ("expert_count", c.n_expert), ("expert_used_count", c.n_expert_used),
                     ("expert_shared_count", c.n_shared)):
        w.add_uint32("%s.%s" % (a, key), val)
    if c.absorbed:
        w.add_uint32(a + ".attention.key_length_mla", c.d_nope + c.d_rope)
        w.add_uint32(a + ".attention.value_length_mla", c.d_v)
    if c.n_expert:
        w.add_uint32(a + ".expert_gating_func", 2 if c.sigmoid else 1)
        w.add_bool(a + ".expert_weights_norm", c.norm)
        if c.n_group > 1:
            w.add_uint32(a + ".expert_group_count", c.n_group)
            w.add_uint32(a + ".expert_group_used_count", c.group_used)
    w.add_uint32(a + ".attention.q_lora_rank", c.q_lora)   # 0: attn_q (llama.cpp reads the key either way)
    w.add_float32(a + ".expert_weights_scale", c.scale)
    w.add_float32(a + ".attention.layer_norm_rms_epsilon", c.eps)
    w.add_float32(a + ".rope.freq_base", c.rope_base)
    if c.yarn is not None:
        w.add_string(a + ".rope.scaling.type", "yarn")
        w.add_float32(a + ".rope.scaling.factor", c.yarn[0])
        w.add_uint32(a + ".rope.scaling.original_context_length", c.yarn[1])
        w.add_float32(a + ".rope.scaling.yarn_log_multiplier", c.yarn[2])
    _add_tokenizer(w, tokenizer)

    def t(tname, x):
        w.add_tensor(tname, _np(x), "F32")

    t("token_embd.weight", model.tok_embd.weight)
    for L, blk in enumerate(model.blocks):
        b = "blk.%d." % L
        t(b + "attn_norm.weight", blk.ln1_w)
        if c.q_lora:
            t(b + "attn_q_a.weight", blk.q_a.weight)
            t(b + "attn_q_a_norm.weight", blk.q_a_norm_w)
            t(b + "attn_q_b.weight", blk.q_b.weight)
        else:
            t(b + "attn_q.weight", blk.q.weight)
        t(b + "attn_kv_a_mqa.weight", blk.kv_a.weight)
        t(b + "attn_kv_a_norm.weight", blk.kv_a_norm_w)
        if c.absorbed:   # ne = [nope, kv_lora, head] and [kv_lora, d_v, head]
            kvb = blk.kv_b.weight.view(c.n_head, c.d_nope + c.d_v, c.kv_lora)
            t(b + "attn_k_b.weight", kvb[:, :c.d_nope, :].transpose(1, 2).contiguous())
            t(b + "attn_v_b.weight", kvb[:, c.d_nope:, :].contiguous())
        else:
            t(b + "attn_kv_b.weight", blk.kv_b.weight)
        t(b + "attn_output.weight", blk.o.weight)
        t(b + "ffn_norm.weight", blk.ln2_w)
        if not c.dense(L):   # llama.cpp's ffn_gate_inp, exp_probs_b and the 3-D ffn_*_exps
            t(b + "ffn_gate_inp.weight", blk.router.weight)
            if c.bias:
                t(b + "exp_probs_b.bias", blk.exp_probs_b)
            t(b + "ffn_gate_exps.weight", blk.gate_exps)
            t(b + "ffn_up_exps.weight", blk.up_exps)
            t(b + "ffn_down_exps.weight", blk.down_exps)
            if c.n_shared:
                t(b + "ffn_gate_shexp.weight", blk.gate_shexp.weight)
                t(b + "ffn_up_shexp.weight", blk.up_shexp.weight)
                t(b + "ffn_down_shexp.weight", blk.down_shexp.weight)
            continue
        t(b + "ffn_gate.weight", blk.gate.weight)
        t(b + "ffn_up.weight", blk.up.weight)
        t(b + "ffn_down.weight", blk.down.weight)
    t("output_norm.weight", model.lnf_w)
    t("output.weight", model.out.weight)
    return w.write()


# ---------------------------------------------------------------------------
# The BERT family of encoders as llama.cpp runs them (src/models/bert.cpp):
# bert and nomic-bert.  Written from the definitions (Devlin et al. 2018:
# Post-LN blocks, learned positions, token types, the embedding LayerNorm,
# the masked-LM head of Hugging Face's BertForMaskedLM `cls.predictions`;
# nomic-embed-text: rotary on the halves of each head, SwiGLU, no biases),
# independently of the C engine.  Float64; hooks named as TransformerLens's
# HookedEncoder names them.  GELU is the tanh form, as llama.cpp's
# ggml_gelu computes it (BERT's own is the erf form: they differ by < 1e-3),
# or with gelu_erf PyTorch's exact F.gelu (a Hugging Face config's
# hidden_act "gelu", which attnscope reads from a directory).
# ---------------------------------------------------------------------------

@dataclass
class EncoderConfig:
    arch: str                  # 'bert' | 'nomic-bert'
    vocab: int
    d_model: int
    n_layer: int
    n_head: int
    d_ff: int
    ctx: int
    eps: float                 # LayerNorm eps
    n_types: int = 2
    pooling: int = 1           # 0 none, 1 mean, 2 cls, 3 last (llama.cpp's pooling_type)
    mlm: bool = True           # the masked-LM head (mlm.* tensors)
    rope_base: float = 10000.0
    gelu_erf: bool = False     # the exact erf GELU (F.gelu) in the MLP and the masked-LM head

    @property
    def d_head(self):
        return self.d_model // self.n_head

    @property
    def nomic(self):
        return self.arch == "nomic-bert"


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


class EncoderBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        d, Fd, bias = c.d_model, c.d_ff, not c.nomic
        self.q = nn.Linear(d, d, bias=bias)
        self.k = nn.Linear(d, d, bias=bias)
        self.v = nn.Linear(d, d, bias=bias)
        self.o = nn.Linear(d, d, bias=bias)
        self.ln1_w, self.ln1_b = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))
        self.gate = nn.Linear(d, Fd, bias=False) if c.nomic else None
        self.up = nn.Linear(d, Fd, bias=bias)
        self.down = nn.Linear(Fd, d, bias=bias)
        self.ln2_w, self.ln2_b = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))


class Encoder(nn.Module):
    """forward(ids [B,T], types [B,T] or None, hooks=None) -> (logits or
    None, last hidden states [B,T,d], pooled [B,d] or None)."""

    def __init__(self, c: EncoderConfig):
        super().__init__()
        self.c = c
        d = c.d_model
        self.tok_embd = nn.Embedding(c.vocab, d)
        self.pos_embd = None if c.nomic else nn.Embedding(c.ctx, d)
        self.type_embd = nn.Embedding(c.n_types, d)
        self.embd_ln_w, self.embd_ln_b = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))
        self.blocks = nn.ModuleList(EncoderBlock(c) for _ in range(c.n_layer))
        if c.mlm:
            self.mlm_dense = nn.Linear(d, d, bias=True)
            self.mlm_ln_w, self.mlm_ln_b = nn.Parameter(torch.ones(d)), nn.Parameter(torch.zeros(d))
            self.mlm_out_b = nn.Parameter(torch.zeros(c.vocab))

    def _ln(self, x, w, b, prefix, hooks):
        xc = x - x.mean(-1, keepdim=True)
        scale = torch.sqrt((xc * xc).mean(-1, keepdim=True) + self.c.eps)   # biased variance
        out = xc / scale * w + b
        _rec(hooks, prefix + ".hook_scale", scale)
        _rec(hooks, prefix + ".hook_normalized", out)
        return out

    def _rope(self, x):
        """NEOX: dims i and i + dh/2 rotate together by pos * base^(-2i/dh)."""
        T, dh = x.shape[1], x.shape[-1]
        i = torch.arange(dh // 2, dtype=torch.float64)
        theta = torch.arange(T, dtype=torch.float64)[:, None] * self.c.rope_base ** (-2.0 * i / dh)[None, :]
        cos = torch.cos(theta).to(x.dtype)[None, :, None, :]
        sin = torch.sin(theta).to(x.dtype)[None, :, None, :]
        a, b = x[..., :dh // 2], x[..., dh // 2:]
        return torch.cat((a * cos - b * sin, a * sin + b * cos), dim=-1)

    def _attn(self, blk, x, L, hooks):
        c = self.c
        B, T, _ = x.shape
        H, dh = c.n_head, c.d_head
        p = "blocks.%d.attn." % L
        q, k, v = (lin(x).view(B, T, H, dh) for lin in (blk.q, blk.k, blk.v))
        _rec(hooks, p + "hook_q", q)
        _rec(hooks, p + "hook_k", k)
        _rec(hooks, p + "hook_v", v)
        if c.nomic:
            q, k = self._rope(q), self._rope(k)
            _rec(hooks, p + "hook_rot_q", q)
            _rec(hooks, p + "hook_rot_k", k)
        q, k, v = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)   # [B,H,T,dh]
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(dh)                   # every key: no mask
        _rec(hooks, p + "hook_attn_scores", scores)
        pattern = torch.softmax(scores, dim=-1)
        _rec(hooks, p + "hook_pattern", pattern)
        z = (pattern @ v).transpose(1, 2)
        _rec(hooks, p + "hook_z", z)
        return blk.o(z.reshape(B, T, H * dh))

    def _mlp(self, blk, x, L, hooks):
        p = "blocks.%d.mlp." % L
        if self.c.nomic:
            g, u = blk.gate(x), blk.up(x)
            _rec(hooks, p + "hook_pre", g)
            _rec(hooks, p + "hook_pre_linear", u)
            post = F.silu(g) * u
        else:
            pre = blk.up(x)
            _rec(hooks, p + "hook_pre", pre)
            post = F.gelu(pre) if self.c.gelu_erf else gelu_tanh(pre)
        _rec(hooks, p + "hook_post", post)
        return blk.down(post)

    def embed(self, ids, types, hooks=None):
        B, T = ids.shape
        e = self.tok_embd(ids)
        _rec(hooks, "embed.hook_embed", e)
        total = e
        if self.pos_embd is not None:
            pe = self.pos_embd(torch.arange(T)[None, :].expand(B, T))
            _rec(hooks, "embed.hook_pos_embed", pe)
            total = total + pe
        te = self.type_embd(types)
        _rec(hooks, "embed.hook_token_type_embed", te)
        total = total + te
        _rec(hooks, "embed.hook_sum", total)
        return self._ln(total, self.embd_ln_w, self.embd_ln_b, "embed.ln", hooks)

    def block(self, L, x, hooks=None):
        blk = self.blocks[L]
        p = "blocks.%d." % L
        _rec(hooks, p + "hook_resid_pre", x)
        a = self._attn(blk, x, L, hooks)
        _rec(hooks, p + "hook_attn_out", a)
        mid = x + a
        _rec(hooks, p + "hook_resid_mid", mid)
        n1 = self._ln(mid, blk.ln1_w, blk.ln1_b, p + "ln1", hooks)
        m = self._mlp(blk, n1, L, hooks)
        _rec(hooks, p + "hook_mlp_out", m)
        post = n1 + m
        _rec(hooks, p + "hook_resid_post", post)
        return self._ln(post, blk.ln2_w, blk.ln2_b, p + "ln2", hooks)

    def forward(self, ids, types=None, hooks=None):
        c = self.c
        if types is None:
            types = torch.zeros_like(ids)
        x = self.embed(ids, types, hooks)
        for L in range(c.n_layer):
            x = self.block(L, x, hooks)
        pooled = None
        if c.pooling in (1, 2, 3):
            pooled = x.mean(1) if c.pooling == 1 else x[:, 0] if c.pooling == 2 else x[:, -1]
            _rec(hooks, "pooler.hook_out", pooled[:, None, :].expand(x.shape))
        logits = None
        if c.mlm:
            pre = self.mlm_dense(x)
            _rec(hooks, "mlm_head.hook_pre", pre)
            post = F.gelu(pre) if c.gelu_erf else gelu_tanh(pre)
            _rec(hooks, "mlm_head.hook_post", post)
            n = self._ln(post, self.mlm_ln_w, self.mlm_ln_b, "mlm_head.ln", hooks)
            logits = n @ self.tok_embd.weight.t() + self.mlm_out_b              # tied
            _rec(hooks, "unembed.hook_out", logits)
        return logits, x, pooled


def export_encoder_gguf(model, c, path, name, tokenizer=None, with_mlm=True):
    """A GGUF of an Encoder with the keys and tensor names llama.cpp reads
    for c.arch (src/models/bert.cpp, nomic-bert.cpp), all F32; the
    tokenizer as export_gguf's, or "none" (a vocabulary of c.vocab ids
    without text); our masked-LM head as mlm.* unless with_mlm is False
    (llama.cpp refuses tensors it does not know)."""
    a = c.arch
    w = GGUFWriter(path)
    w.add_string("general.architecture", a)
    w.add_string("general.name", name)
    w.add_uint32("general.file_type", 0)
    for key, val in (("context_length", c.ctx), ("embedding_length", c.d_model), ("block_count", c.n_layer),
                     ("feed_forward_length", c.d_ff), ("attention.head_count", c.n_head),
                     ("pooling_type", c.pooling), ("vocab_size", c.vocab)):
        w.add_uint32("%s.%s" % (a, key), val)
    w.add_float32(a + ".attention.layer_norm_epsilon", c.eps)
    w.add_bool(a + ".attention.causal", False)
    if c.nomic:
        w.add_float32(a + ".rope.freq_base", c.rope_base)
    if tokenizer is None:
        w.add_string("tokenizer.ggml.model", "none")
    else:
        _add_tokenizer(w, tokenizer)
    w.add_uint32("tokenizer.ggml.token_type_count", c.n_types)

    def t(tname, x):
        w.add_tensor(tname, _np(x) if torch.is_tensor(x) else np.asarray(x, dtype=np.float32), "F32")

    t("token_embd.weight", model.tok_embd.weight)
    t("token_types.weight", model.type_embd.weight)
    if model.pos_embd is not None:
        t("position_embd.weight", model.pos_embd.weight)
    t("token_embd_norm.weight", model.embd_ln_w)
    t("token_embd_norm.bias", model.embd_ln_b)
    for L, blk in enumerate(model.blocks):
        b = "blk.%d." % L
        if c.nomic:
            t(b + "attn_qkv.weight", torch.cat((blk.q.weight, blk.k.weight, blk.v.weight)))
        else:
            for n_, lin in (("attn_q", blk.q), ("attn_k", blk.k), ("attn_v", blk.v)):
                t(b + n_ + ".weight", lin.weight)
                t(b + n_ + ".bias", lin.bias)
        t(b + "attn_output.weight", blk.o.weight)
        if blk.o.bias is not None:
            t(b + "attn_output.bias", blk.o.bias)
        t(b + "attn_output_norm.weight", blk.ln1_w)
        t(b + "attn_output_norm.bias", blk.ln1_b)
        if c.nomic:
            t(b + "ffn_gate.weight", blk.gate.weight)
        t(b + "ffn_up.weight", blk.up.weight)
        t(b + "ffn_down.weight", blk.down.weight)
        if blk.up.bias is not None:
            t(b + "ffn_up.bias", blk.up.bias)
            t(b + "ffn_down.bias", blk.down.bias)
        t(b + "layer_output_norm.weight", blk.ln2_w)
        t(b + "layer_output_norm.bias", blk.ln2_b)
    if c.mlm and with_mlm:
        t("mlm.dense.weight", model.mlm_dense.weight)
        t("mlm.dense.bias", model.mlm_dense.bias)
        t("mlm.norm.weight", model.mlm_ln_w)
        t("mlm.norm.bias", model.mlm_ln_b)
        t("mlm.output.bias", model.mlm_out_b)
    return w.write()


# ---------------------------------------------------------------------------
# The original encoder-decoder Transformer ("Attention Is All You Need") as
# PyTorch's own nn.Transformer computes it (norm_first=False: Post-LN;
# activation relu; its final encoder and decoder norms), with the paper's
# embeddings (times sqrt(d_model)) and sinusoidal positions around it, and
# an output projection (tied to the target embedding or its own), with a
# bias or none.  Hooks as TransformerLens's HookedEncoderDecoder names them
# (encoder.L.*, decoder.L.cross_attn.*, decoder.L.hook_resid_mid_cross,
# ln3, encoder_final_ln, decoder_final_ln).  Every hook between the
# embeddings and the logits is read from nn.Transformer's own modules as
# they run (forward hooks on its layers, norms, attention modules and
# linears); only the inside of nn.MultiheadAttention (q, k, v, scores,
# pattern, z) is recomputed from its in_proj, and checked to give the
# module's own output.  The modules run in training mode (dropout 0), which
# keeps PyTorch off its fused inference path, so every submodule is called.
# ---------------------------------------------------------------------------

@dataclass
class EncDecConfig:
    vocab: int
    d_model: int
    n_enc: int
    n_dec: int
    n_head: int
    d_ff: int
    ctx: int
    eps: float = 1e-5
    shared_embd: bool = True   # one embedding for source and target (token_embd only)
    tied_output: bool = True   # the output projection is the target embedding
    output_bias: bool = True
    start: int = 0             # decoder start token (transformer.decoder_start_token_id)
    arch: str = "transformer"

    @property
    def d_head(self):
        return self.d_model // self.n_head


def sinusoids(n, d):
    """PE[pos, 2i] = sin(pos / 10000^(2i/d)), PE[pos, 2i+1] = cos(the same)."""
    pe = np.zeros((n, d))
    for pos in range(n):
        for i in range(d // 2):
            a = pos / 10000.0 ** (2.0 * i / d)
            pe[pos, 2 * i], pe[pos, 2 * i + 1] = math.sin(a), math.cos(a)
    return torch.tensor(pe)


class EncDec(nn.Module):
    def __init__(self, c: EncDecConfig):
        super().__init__()
        self.c = c
        d, V = c.d_model, c.vocab
        self.tf = nn.Transformer(d_model=d, nhead=c.n_head, num_encoder_layers=c.n_enc,
                                 num_decoder_layers=c.n_dec, dim_feedforward=c.d_ff, dropout=0.0,
                                 activation="relu", layer_norm_eps=c.eps, batch_first=True, norm_first=False)
        self.src_embd = nn.Embedding(V, d)
        self.tgt_embd = None if c.shared_embd else nn.Embedding(V, d)
        self.out = None if c.tied_output else nn.Linear(d, V, bias=False)
        self.out_b = nn.Parameter(torch.zeros(V)) if c.output_bias else None

    def target_embedding(self):
        return self.src_embd if self.tgt_embd is None else self.tgt_embd

    def _mha(self, mod, xq, xkv, causal, prefix, out, hooks):
        """q, k, v, scores, pattern and z of one nn.MultiheadAttention call,
        from its in_proj (q's rows, then k's, then v's); z · W_O + b_O must
        be the module's own output."""
        c = self.c
        d, H, dh = c.d_model, c.n_head, c.d_head
        W, b = mod.in_proj_weight, mod.in_proj_bias
        q = (xq @ W[:d].t() + b[:d]).view(xq.shape[0], -1, H, dh)
        k = (xkv @ W[d:2 * d].t() + b[d:2 * d]).view(xkv.shape[0], -1, H, dh)
        v = (xkv @ W[2 * d:].t() + b[2 * d:]).view(xkv.shape[0], -1, H, dh)
        _rec(hooks, prefix + "hook_q", q)
        _rec(hooks, prefix + "hook_k", k)
        _rec(hooks, prefix + "hook_v", v)
        qh, kh, vh = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)
        scores = (qh @ kh.transpose(-1, -2)) / math.sqrt(dh)
        if causal:
            T = scores.shape[-1]
            scores = scores.masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        _rec(hooks, prefix + "hook_attn_scores", scores)
        pattern = torch.softmax(scores, dim=-1)
        _rec(hooks, prefix + "hook_pattern", pattern)
        z = (pattern @ vh).transpose(1, 2)
        _rec(hooks, prefix + "hook_z", z)
        mine = z.reshape(z.shape[0], z.shape[1], d) @ mod.out_proj.weight.t() + mod.out_proj.bias
        err = float((mine - out).abs().max())
        if err > (1e-10 if out.dtype == torch.float64 else 1e-4) * max(1.0, float(out.abs().max())):
            raise AssertionError("%s: z · W_O differs from nn.MultiheadAttention's output by %g" % (prefix, err))

    def _ln(self, mod, x, y, prefix, hooks):
        """A norm module's statistics: scale = sqrt(biased variance + eps);
        its output must be (x - mean) / scale * w + b."""
        xc = x - x.mean(-1, keepdim=True)
        scale = torch.sqrt((xc * xc).mean(-1, keepdim=True) + mod.eps)
        _rec(hooks, prefix + ".hook_scale", scale)
        _rec(hooks, prefix + ".hook_normalized", y)
        err = float((xc / scale * mod.weight + mod.bias - y).abs().max())
        if err > (1e-10 if y.dtype == torch.float64 else 1e-4):
            raise AssertionError("%s: LayerNorm statistics off by %g" % (prefix, err))

    def _watch(self, hooks):
        """Forward hooks on nn.Transformer's modules that record our hooks."""
        handles = []

        def on(mod, fn):     # a hook that returned a value would replace the module's output
            handles.append(mod.register_forward_hook(lambda m, i, o: (fn(m, i, o), None)[1]))

        def pre(mod, fn):
            handles.append(mod.register_forward_pre_hook(lambda m, i: (fn(m, i), None)[1]))

        for stack, layers in (("encoder", self.tf.encoder.layers), ("decoder", self.tf.decoder.layers)):
            for L, layer in enumerate(layers):
                p = "%s.%d." % (stack, L)
                dec = stack == "decoder"
                pre(layer, lambda m, i, p=p: _rec(hooks, p + "hook_resid_pre", i[0]))
                on(layer.self_attn, lambda m, i, o, p=p, dec=dec:
                   (self._mha(m, i[0], i[1], dec, p + "attn.", o[0], hooks), _rec(hooks, p + "hook_attn_out", o[0])))
                on(layer.norm1, lambda m, i, o, p=p:
                   (_rec(hooks, p + "hook_resid_mid", i[0]), self._ln(m, i[0], o, p + "ln1", hooks)))
                on(layer.linear1, lambda m, i, o, p=p:
                   (_rec(hooks, p + "mlp.hook_pre", o), _rec(hooks, p + "mlp.hook_post", F.relu(o))))
                on(layer.linear2, lambda m, i, o, p=p: _rec(hooks, p + "hook_mlp_out", o))
                if dec:
                    on(layer.multihead_attn, lambda m, i, o, p=p:
                       (self._mha(m, i[0], i[1], False, p + "cross_attn.", o[0], hooks),
                        _rec(hooks, p + "hook_cross_attn_out", o[0])))
                    on(layer.norm2, lambda m, i, o, p=p:
                       (_rec(hooks, p + "hook_resid_mid_cross", i[0]), self._ln(m, i[0], o, p + "ln2", hooks)))
                    on(layer.norm3, lambda m, i, o, p=p:
                       (_rec(hooks, p + "hook_resid_post", i[0]), self._ln(m, i[0], o, p + "ln3", hooks)))
                else:
                    on(layer.norm2, lambda m, i, o, p=p:
                       (_rec(hooks, p + "hook_resid_post", i[0]), self._ln(m, i[0], o, p + "ln2", hooks)))
        on(self.tf.encoder.norm, lambda m, i, o: self._ln(m, i[0], o, "encoder_final_ln", hooks))
        on(self.tf.decoder.norm, lambda m, i, o: self._ln(m, i[0], o, "decoder_final_ln", hooks))
        return handles

    def embed(self, ids, emb, stack, hooks):
        c = self.c
        e = emb(ids) * math.sqrt(c.d_model)
        _rec(hooks, stack + ".hook_embed", e)
        pe = sinusoids(ids.shape[1], c.d_model).to(e.dtype)[None].expand(e.shape)
        _rec(hooks, stack + ".hook_pos_embed", pe)
        return e + pe

    def forward(self, src, tgt, hooks=None):
        """src [B,S], tgt [B,T] -> logits [B,T,V] at every target position."""
        was = self.training
        self.train()          # dropout is 0: training mode only keeps PyTorch on its module-by-module path
        handles = self._watch(hooks) if hooks is not None else []
        try:
            x = self.embed(src, self.src_embd, "encoder", hooks)
            y = self.embed(tgt, self.target_embedding(), "decoder", hooks)
            T = tgt.shape[1]
            mask = torch.zeros(T, T, dtype=x.dtype).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1),
                                                                 float("-inf"))
            h = self.tf(x, y, tgt_mask=mask)
            W = self.target_embedding().weight if self.out is None else self.out.weight
            logits = h @ W.t()
            if self.out_b is not None:
                logits = logits + self.out_b
            _rec(hooks, "unembed.hook_out", logits)
        finally:
            for hd in handles:
                hd.remove()
            self.train(was)
        return logits


def export_encdec_gguf(model, c, path, name, tokenizer):
    """A GGUF of an EncDec: general.architecture "transformer", tensors in
    llama.cpp's T5 style (enc.blk.N.*, dec.blk.N.cross_attn_*) with biases,
    nn.MultiheadAttention's in_proj split into q, k and v; the layout is
    README.md's (GGUF section)."""
    a = c.arch
    w = GGUFWriter(path)
    w.add_string("general.architecture", a)
    w.add_string("general.name", name)
    w.add_uint32("general.file_type", 0)
    for key, val in (("context_length", c.ctx), ("embedding_length", c.d_model), ("block_count", c.n_enc),
                     ("decoder_block_count", c.n_dec), ("feed_forward_length", c.d_ff),
                     ("attention.head_count", c.n_head), ("decoder_start_token_id", c.start)):
        w.add_uint32("%s.%s" % (a, key), val)
    w.add_float32(a + ".attention.layer_norm_epsilon", c.eps)
    _add_tokenizer(w, tokenizer)
    d = c.d_model

    def t(tname, x):
        w.add_tensor(tname, _np(x), "F32")

    def attn(prefix, mod):
        for i, n_ in enumerate("qkv"):
            t("%s_%s.weight" % (prefix, n_), mod.in_proj_weight[i * d:(i + 1) * d])
            t("%s_%s.bias" % (prefix, n_), mod.in_proj_bias[i * d:(i + 1) * d])
        t(prefix + "_o.weight", mod.out_proj.weight)
        t(prefix + "_o.bias", mod.out_proj.bias)

    def norm(prefix, mod):
        t(prefix + ".weight", mod.weight)
        t(prefix + ".bias", mod.bias)

    def ffn(prefix, layer):
        t(prefix + "ffn_up.weight", layer.linear1.weight)
        t(prefix + "ffn_up.bias", layer.linear1.bias)
        t(prefix + "ffn_down.weight", layer.linear2.weight)
        t(prefix + "ffn_down.bias", layer.linear2.bias)

    t("token_embd.weight", model.src_embd.weight)
    if model.tgt_embd is not None:
        t("dec.token_embd.weight", model.tgt_embd.weight)
    for L, layer in enumerate(model.tf.encoder.layers):
        b = "enc.blk.%d." % L
        attn(b + "attn", layer.self_attn)
        norm(b + "attn_norm", layer.norm1)
        ffn(b, layer)
        norm(b + "ffn_norm", layer.norm2)
    norm("enc.output_norm", model.tf.encoder.norm)
    for L, layer in enumerate(model.tf.decoder.layers):
        b = "dec.blk.%d." % L
        attn(b + "attn", layer.self_attn)
        norm(b + "attn_norm", layer.norm1)
        attn(b + "cross_attn", layer.multihead_attn)
        norm(b + "cross_attn_norm", layer.norm2)
        ffn(b, layer)
        norm(b + "ffn_norm", layer.norm3)
    norm("dec.output_norm", model.tf.decoder.norm)
    if model.out is not None:
        t("output.weight", model.out.weight)
    if model.out_b is not None:
        t("output.bias", model.out_b)
    return w.write()


# ---------------------------------------------------------------------------
# T5 (Raffel et al. 2020, "Exploring the Limits of Transfer Learning with a
# Unified Text-to-Text Transformer"; Flan-T5's gated GELU), as llama.cpp's
# GGUF carries it (arch t5: an encoder-decoder; t5encoder: the encoder
# alone).  Written from the paper's definition and llama.cpp's tensor
# layout, independently of the C engine:
#   - pre-norm RMSNorm without mean or bias ("T5LayerNorm"): x / sqrt(mean(x²) + eps) * w,
#     before every sublayer, and a final one after each stack;
#   - no position embeddings: a learned scalar per (bucket, head) added to the
#     self-attention logits; buckets of the relative position key - query:
#     bidirectional in the encoder (half the buckets each way), causal in the
#     decoder; in each half, distances below half of it exact, then
#     logarithmic bins up to max_distance (128), then the last bucket; one
#     table shared by all layers of a stack (the first layer's);
#   - logits q·kᵀ without 1/sqrt(d_head); cross-attention has no bias;
#   - MLP: gated GELU (tanh form) * up, or ReLU; no biases anywhere;
#   - logits = final norm · W_outᵀ with W_out = output.weight or, tied, the
#     token embedding itself (llama.cpp does not rescale the tied case by
#     d_model^-0.5 as the paper's code does; attnscope follows llama.cpp).
# Float64; hooks named as TransformerLens's HookedEncoderDecoder names them,
# plus attn.hook_position_bias (masked entries 0, as attnscope's capture
# gives them) and mlp.hook_pre_linear for the gated MLP.
# ---------------------------------------------------------------------------

@dataclass
class T5Config:
    vocab: int
    d_model: int
    n_enc: int
    n_dec: int          # 0: t5encoder
    n_head: int
    d_head: int
    d_ff: int
    ctx: int
    buckets: int
    gated: bool = True  # Flan-T5's gated GELU; else T5's ReLU
    tied: bool = True   # no output.weight: the token embedding unembeds
    eps: float = 1e-6
    start: int = 0      # decoder start token
    max_distance: int = 128

    @property
    def arch(self):
        return "t5" if self.n_dec else "t5encoder"


def t5_bucket(rel, bidirectional, buckets, max_distance):
    """The bucket of each relative position (key - query), integer tensor."""
    n = buckets
    out = torch.zeros_like(rel)
    if bidirectional:
        n //= 2
        out = out + (rel > 0).long() * n
        dist = rel.abs()
    else:
        dist = (-rel).clamp(min=0)
    exact = n // 2
    large = exact + (torch.log(dist.double().clamp(min=1) / exact) / math.log(max_distance / exact)
                     * (n - exact)).floor().long()
    large = large.clamp(max=n - 1)
    return out + torch.where(dist < exact, dist, large)


class T5Layer(nn.Module):
    def __init__(self, c: T5Config, cross: bool):
        super().__init__()
        d, hq = c.d_model, c.n_head * c.d_head
        self.attn_norm = nn.Parameter(torch.ones(d))
        self.q, self.k = nn.Linear(d, hq, bias=False), nn.Linear(d, hq, bias=False)
        self.v, self.o = nn.Linear(d, hq, bias=False), nn.Linear(hq, d, bias=False)
        if cross:
            self.cross_norm = nn.Parameter(torch.ones(d))
            self.cq, self.ck = nn.Linear(d, hq, bias=False), nn.Linear(d, hq, bias=False)
            self.cv, self.co = nn.Linear(d, hq, bias=False), nn.Linear(hq, d, bias=False)
        self.ffn_norm = nn.Parameter(torch.ones(d))
        self.gate = nn.Linear(d, c.d_ff, bias=False) if c.gated else None
        self.up, self.down = nn.Linear(d, c.d_ff, bias=False), nn.Linear(c.d_ff, d, bias=False)


class T5(nn.Module):
    def __init__(self, c: T5Config):
        super().__init__()
        self.c = c
        self.embd = nn.Embedding(c.vocab, c.d_model)
        self.enc = nn.ModuleList([T5Layer(c, False) for _ in range(c.n_enc)])
        self.dec = nn.ModuleList([T5Layer(c, True) for _ in range(c.n_dec)])
        self.enc_rel = nn.Parameter(torch.zeros(c.buckets, c.n_head))
        self.enc_norm = nn.Parameter(torch.ones(c.d_model))
        if c.n_dec:
            self.dec_rel = nn.Parameter(torch.zeros(c.buckets, c.n_head))
            self.dec_norm = nn.Parameter(torch.ones(c.d_model))
            self.out = None if c.tied else nn.Linear(c.d_model, c.vocab, bias=False)

    def _rms(self, x, w, prefix, hooks):
        scale = torch.sqrt((x * x).mean(-1, keepdim=True) + self.c.eps)
        y = x / scale * w
        _rec(hooks, prefix + ".hook_scale", scale)
        _rec(hooks, prefix + ".hook_normalized", y)
        return y

    def _attn(self, xq, xkv, q_, k_, v_, o_, bias, causal, prefix, hooks):
        c = self.c
        H, dh = c.n_head, c.d_head
        q = q_(xq).view(xq.shape[0], -1, H, dh)
        k = k_(xkv).view(xkv.shape[0], -1, H, dh)
        v = v_(xkv).view(xkv.shape[0], -1, H, dh)
        _rec(hooks, prefix + "hook_q", q)
        _rec(hooks, prefix + "hook_k", k)
        _rec(hooks, prefix + "hook_v", v)
        scores = q.transpose(1, 2) @ k.transpose(1, 2).transpose(-1, -2)      # unscaled
        Tq, Tk = scores.shape[-2:]
        hidden = torch.ones(Tq, Tk, dtype=torch.bool).triu(1) if causal else torch.zeros(Tq, Tk, dtype=torch.bool)
        if bias is not None:
            _rec(hooks, prefix + "hook_position_bias", bias.masked_fill(hidden, 0.0)[None])
            scores = scores + bias
        scores = scores.masked_fill(hidden, float("-inf"))
        _rec(hooks, prefix + "hook_attn_scores", scores)
        pattern = torch.softmax(scores, dim=-1)
        _rec(hooks, prefix + "hook_pattern", pattern)
        z = (pattern @ v.transpose(1, 2)).transpose(1, 2)
        _rec(hooks, prefix + "hook_z", z)
        return o_(z.reshape(z.shape[0], z.shape[1], H * dh))

    def _mlp(self, L, x, prefix, hooks):
        if L.gate is not None:
            pre, lin = L.gate(x), L.up(x)
            _rec(hooks, prefix + "mlp.hook_pre", pre)
            _rec(hooks, prefix + "mlp.hook_pre_linear", lin)
            post = gelu_tanh(pre) * lin
        else:
            pre = L.up(x)
            _rec(hooks, prefix + "mlp.hook_pre", pre)
            post = F.relu(pre)
        _rec(hooks, prefix + "mlp.hook_post", post)
        out = L.down(post)
        _rec(hooks, prefix + "hook_mlp_out", out)
        return out

    def _bias(self, table, n_q, n_k, bidirectional):
        rel = torch.arange(n_k)[None, :] - torch.arange(n_q)[:, None]          # key - query
        b = t5_bucket(rel, bidirectional, self.c.buckets, self.c.max_distance)
        return table[b].permute(2, 0, 1)                                         # [head, q, k]

    def encode(self, src, hooks=None):
        x = self.embd(src)
        _rec(hooks, "encoder.hook_embed", x)
        S = src.shape[1]
        bias = self._bias(self.enc_rel, S, S, True)
        for i, L in enumerate(self.enc):
            p = "encoder.%d." % i
            _rec(hooks, p + "hook_resid_pre", x)
            h = self._rms(x, L.attn_norm, p + "ln1", hooks)
            a = self._attn(h, h, L.q, L.k, L.v, L.o, bias, False, p + "attn.", hooks)
            _rec(hooks, p + "hook_attn_out", a)
            x = x + a
            _rec(hooks, p + "hook_resid_mid", x)
            m = self._mlp(L, self._rms(x, L.ffn_norm, p + "ln2", hooks), p, hooks)
            x = x + m
            _rec(hooks, p + "hook_resid_post", x)
        return self._rms(x, self.enc_norm, "encoder_final_ln", hooks)

    def forward(self, src, tgt=None, hooks=None):
        """src [B,S] (tgt [B,T]) -> the encoder's output [B,S,d] (t5encoder)
        or the logits [B,T,V] at every target position."""
        mem = self.encode(src, hooks)
        if not self.c.n_dec:
            return mem
        y = self.embd(tgt)
        _rec(hooks, "decoder.hook_embed", y)
        T = tgt.shape[1]
        bias = self._bias(self.dec_rel, T, T, False)
        for i, L in enumerate(self.dec):
            p = "decoder.%d." % i
            _rec(hooks, p + "hook_resid_pre", y)
            h = self._rms(y, L.attn_norm, p + "ln1", hooks)
            a = self._attn(h, h, L.q, L.k, L.v, L.o, bias, True, p + "attn.", hooks)
            _rec(hooks, p + "hook_attn_out", a)
            y = y + a
            _rec(hooks, p + "hook_resid_mid", y)
            h = self._rms(y, L.cross_norm, p + "ln2", hooks)
            a = self._attn(h, mem, L.cq, L.ck, L.cv, L.co, None, False, p + "cross_attn.", hooks)
            _rec(hooks, p + "hook_cross_attn_out", a)
            y = y + a
            _rec(hooks, p + "hook_resid_mid_cross", y)
            m = self._mlp(L, self._rms(y, L.ffn_norm, p + "ln3", hooks), p, hooks)
            y = y + m
            _rec(hooks, p + "hook_resid_post", y)
        y = self._rms(y, self.dec_norm, "decoder_final_ln", hooks)
        W = self.embd.weight if self.out is None else self.out.weight
        logits = y @ W.t()
        _rec(hooks, "unembed.hook_out", logits)
        return logits


def export_t5_gguf(model, c, path, name, tokenizer):
    """A GGUF of a T5 as llama.cpp's converter lays it out (arch t5 or
    t5encoder; tensors enc.blk.N.*, dec.blk.N.*, attn_rel_b in the first
    layer of each stack only, ne = [heads, buckets])."""
    a = c.arch
    w = GGUFWriter(path)
    w.add_string("general.architecture", a)
    w.add_string("general.name", name)
    w.add_uint32("general.file_type", 0)
    keys = [("context_length", c.ctx), ("embedding_length", c.d_model), ("block_count", c.n_enc),
            ("feed_forward_length", c.d_ff), ("attention.head_count", c.n_head),
            ("attention.key_length", c.d_head), ("attention.value_length", c.d_head),
            ("attention.relative_buckets_count", c.buckets)]
    if c.n_dec:
        keys += [("decoder_block_count", c.n_dec), ("decoder_start_token_id", c.start)]
    for key, val in keys:
        w.add_uint32("%s.%s" % (a, key), val)
    w.add_float32(a + ".attention.layer_norm_rms_epsilon", c.eps)
    _add_tokenizer(w, tokenizer)

    def t(tname, x):
        w.add_tensor(tname, _np(x), "F32")

    def layer(b, L, cross):
        t(b + "attn_norm.weight", L.attn_norm)
        for n_, m in (("q", L.q), ("k", L.k), ("v", L.v), ("o", L.o)):
            t(b + "attn_" + n_ + ".weight", m.weight)
        if cross:
            t(b + "cross_attn_norm.weight", L.cross_norm)
            for n_, m in (("q", L.cq), ("k", L.ck), ("v", L.cv), ("o", L.co)):
                t(b + "cross_attn_" + n_ + ".weight", m.weight)
        t(b + "ffn_norm.weight", L.ffn_norm)
        if L.gate is not None:
            t(b + "ffn_gate.weight", L.gate.weight)
        t(b + "ffn_up.weight", L.up.weight)
        t(b + "ffn_down.weight", L.down.weight)

    t("token_embd.weight", model.embd.weight)
    for i, L in enumerate(model.enc):
        layer("enc.blk.%d." % i, L, False)
    t("enc.blk.0.attn_rel_b.weight", model.enc_rel)
    t("enc.output_norm.weight", model.enc_norm)
    if c.n_dec:
        for i, L in enumerate(model.dec):
            layer("dec.blk.%d." % i, L, True)
        t("dec.blk.0.attn_rel_b.weight", model.dec_rel)
        t("dec.output_norm.weight", model.dec_norm)
        if model.out is not None:
            t("output.weight", model.out.weight)
    return w.write()
