"""Make attnscope's numerical fixtures: two tiny random-weight models as
GGUF files and every hook point's value for a fixed token sequence.

    /usr/bin/python3 models/recipes/make_fixtures.py           # write, then check
    /usr/bin/python3 models/recipes/make_fixtures.py --check   # check the committed ones

Writes under tests/fixtures/:
    tiny-gpt2.gguf   tiny-gpt2/<hook name>.npy  tiny-gpt2/tokens.npy  tiny-gpt2/meta.json
    tiny-llama.gguf  tiny-llama/...

Everything is seeded: running it twice gives the same bytes (--check
verifies that by rebuilding in memory and comparing).  Hook values are
computed in float64 from the float32 weights stored in the GGUF, then
saved as float32.  See tests/fixtures/README.md for the hook definitions.
"""

import argparse
import json
import math
import os
import shutil
import struct
import sys
import tempfile

import numpy as np
import regex
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference as R  # noqa: E402
import vit_fixtures as V  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
N_TOKENS = 16

# ---------------------------------------------------------------------------
# GPT-2 byte-level BPE tokenizer (tiny)
# ---------------------------------------------------------------------------

GPT2_PAT = regex.compile(
    r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")

GPT2_TRAIN_TEXT = ("the cat sat on the mat. the dog sat on the log. "
                   "then the cat and the dog ate the fish at the table.")
GPT2_TEXT = "the cat sat on the mat, the dog ate é!"
N_MERGES = 20


def bytes_to_unicode():
    """GPT-2's map: printable bytes stand for themselves, the other 68 map
    to U+0100.. in byte order.  Returned in GPT-2's vocabulary order."""
    bs = list(range(33, 127)) + list(range(161, 173)) + list(range(174, 256))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return [(b, chr(c)) for b, c in zip(bs, cs)]


def gpt2_words(text, b2u):
    return ["".join(b2u[b] for b in w.encode("utf-8")) for w in GPT2_PAT.findall(text)]


def train_bpe(text, n_merges, b2u):
    """Most frequent adjacent pair first; ties go to the pair seen first."""
    words = [list(w) for w in gpt2_words(text, b2u)]
    merges = []
    for _ in range(n_merges):
        counts, first = {}, {}
        for w in words:
            for pair in zip(w, w[1:]):
                counts[pair] = counts.get(pair, 0) + 1
                first.setdefault(pair, len(first))
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], first[p]))
        merges.append(best)
        for w in words:
            i = 0
            while i < len(w) - 1:
                if (w[i], w[i + 1]) == best:
                    w[i:i + 2] = [w[i] + w[i + 1]]
                i += 1
    return merges


def bpe_encode(text, merges, vocab, b2u):
    """Rank-ordered BPE within each pre-tokenized word (lowest rank first,
    leftmost on ties), as llama.cpp's BPE tokenizer does."""
    rank = {m: i for i, m in enumerate(merges)}
    ids = []
    for word in gpt2_words(text, b2u):
        sym = list(word)
        while len(sym) > 1:
            pairs = [(rank.get((a, b), math.inf), i) for i, (a, b) in enumerate(zip(sym, sym[1:]))]
            r, i = min(pairs)
            if r == math.inf:
                break
            sym[i:i + 2] = [sym[i] + sym[i + 1]]
        ids += [vocab[s] for s in sym]
    return ids


def gpt2_tokenizer():
    pairs = bytes_to_unicode()
    b2u = dict(pairs)
    tokens = [c for _, c in pairs]
    merges = train_bpe(GPT2_TRAIN_TEXT, N_MERGES, b2u)
    tokens += [a + b for a, b in merges]
    eot = len(tokens)
    tokens.append("<|endoftext|>")
    assert len(set(tokens)) == len(tokens)
    vocab = {t: i for i, t in enumerate(tokens)}
    ids = [eot] + bpe_encode(GPT2_TEXT, merges, vocab, b2u)
    tok = {
        "model": "gpt2", "pre": "gpt-2", "tokens": tokens,
        "token_type": [1] * eot + [3],
        "merges": ["%s %s" % m for m in merges],
        "bos_token_id": eot, "eos_token_id": eot,
    }
    return tok, ids, GPT2_TEXT


# ---------------------------------------------------------------------------
# LLaMA SentencePiece-style tokenizer (tiny, byte fallback)
# ---------------------------------------------------------------------------

SPM_PIECES = ["▁", "e", "t", "a", "h", "o", "n", "s", "i", "r", "c", "m", "d", "l",
              "▁t", "he", "▁the", "at", "▁c", "▁s", "▁m", "on", "▁o", "in", "er",
              "an", "▁a", "▁cat", "▁sat", "▁on"]
LLAMA_TEXT = "the cat sat on a mat, hi é!"


def spm_encode(text, tokens, scores, byte_id):
    """llama.cpp's SPM tokenizer: start from UTF-8 characters, repeatedly
    merge the adjacent pair whose concatenation is the highest-scoring token
    (leftmost on ties); what is left that is no token falls back to bytes."""
    vocab = {t: i for i, t in enumerate(tokens)}
    sym = list("▁" + text.replace(" ", "▁"))
    while True:
        best = None
        for i in range(len(sym) - 1):
            t = vocab.get(sym[i] + sym[i + 1])
            if t is not None and (best is None or scores[t] > scores[best[1]]):
                best = (i, t)
        if best is None:
            break
        i = best[0]
        sym[i:i + 2] = [sym[i] + sym[i + 1]]
    ids = []
    for s in sym:
        if s in vocab:
            ids.append(vocab[s])
        else:
            ids += [byte_id[b] for b in s.encode("utf-8")]
    return ids


def llama_tokenizer():
    tokens = ["<unk>", "<s>", "</s>"] + ["<0x%02X>" % b for b in range(256)] + SPM_PIECES
    types = [2, 3, 3] + [6] * 256 + [1] * len(SPM_PIECES)
    scores = [0.0] * 259 + [-float(i) for i in range(len(SPM_PIECES))]
    byte_id = {b: 3 + b for b in range(256)}
    ids = [1] + spm_encode(LLAMA_TEXT, tokens, scores, byte_id)
    tok = {
        "model": "llama", "tokens": tokens, "token_type": types, "scores": scores,
        "bos_token_id": 1, "eos_token_id": 2, "unknown_token_id": 0,
        "add_bos_token": True, "add_space_prefix": True,
    }
    return tok, ids, LLAMA_TEXT


# ---------------------------------------------------------------------------
# models
# ---------------------------------------------------------------------------

def make_model(cfg, seed):
    """Random weights with O(1) activations and clearly non-uniform
    attention.  The weights are rounded to float32 (what the GGUF stores)
    and the model is float64, so the fixtures are the exact float64 pass
    over the stored weights."""
    torch.manual_seed(seed)
    model = R.Model(cfg).double()
    g = torch.Generator().manual_seed(seed)
    d, Fd = cfg.d_model, cfg.d_ff

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:
                if name.endswith("_w"):                  # norm weight
                    p.copy_(1.0 + 0.1 * randn(*p.shape))
                else:                                     # bias
                    p.copy_(0.1 * randn(*p.shape))
                continue
            if name == "tok_embd.weight":
                std = 0.5 if cfg.tie_embeddings else 1.0
            elif name == "pos_embd.weight":
                std = 0.3
            elif name.endswith("qkv.weight"):
                p.copy_(randn(*p.shape))
                p[:2 * d].mul_(0.3)                       # Q and K rows
                p[2 * d:].mul_(1.0 / math.sqrt(d))        # V rows
                continue
            elif name.endswith(("q.weight", "k.weight")):
                std = 0.3
            elif name.endswith("down.weight"):
                std = 1.0 / math.sqrt(Fd)
            elif name == "out.weight":
                std = 0.4
            else:                                         # v, o, up, gate
                std = 1.0 / math.sqrt(d)
            p.copy_(std * randn(*p.shape))
        for p in model.parameters():
            p.copy_(p.float().double())
    return model


GPT2_CFG = R.Config(arch="gpt2", vocab=0, d_model=32, n_layer=2, n_head=4, n_kv_head=4,
                    d_ff=128, ctx=32, eps=1e-5)
LLAMA_CFG = R.Config(arch="llama", vocab=0, d_model=32, n_layer=2, n_head=4, n_kv_head=2,
                     d_ff=96, ctx=32, eps=1e-5, rope_base=10000.0, rope_dim=8,
                     tie_embeddings=False)


SEEDS = {"tiny-gpt2": 1234, "tiny-llama": 5678}


def build(which):
    """-> (name, cfg, model, tokenizer dict, ids, text)"""
    if which == "tiny-gpt2":
        tok, ids, text = gpt2_tokenizer()
        cfg = GPT2_CFG
    else:
        tok, ids, text = llama_tokenizer()
        cfg = LLAMA_CFG
    cfg = R.Config(**{**cfg.__dict__, "vocab": len(tok["tokens"])})
    if len(ids) != N_TOKENS:
        raise SystemExit("%s: text encodes to %d tokens, want %d" % (which, len(ids), N_TOKENS))
    return which, cfg, make_model(cfg, SEEDS[which]), tok, ids, text


def run_hooks(model, ids):
    hooks = {}
    with torch.no_grad():
        model(torch.tensor([ids], dtype=torch.long), hooks)
    return {k: v.numpy() for k, v in hooks.items()}


def write_fixture(outdir, which):
    name, cfg, model, tok, ids, text = build(which)
    R.export_gguf(model, cfg, os.path.join(outdir, name + ".gguf"), name, tok)
    hooks = run_hooks(model, ids)
    save_hooks(outdir, name, cfg, tok, ids, text, hooks, R.hook_names(cfg))


def save_hooks(outdir, name, cfg, tok, ids, text, hooks, order):
    """NAME/<hook>.npy for every hook, tokens.npy and meta.json (hook
    shapes listed in `order`)."""
    d = os.path.join(outdir, name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(d)
    for k, v in hooks.items():   # integer hooks (the experts chosen) as int32, as attnscope exports them
        dt = np.int32 if np.issubdtype(v.dtype, np.integer) else np.float32
        np.save(os.path.join(d, k + ".npy"), np.ascontiguousarray(v, dtype=dt))
    np.save(os.path.join(d, "tokens.npy"), np.array(ids, dtype=np.int32))
    meta = {
        "model": name + ".gguf",
        "text": text,
        "tokens": ids,
        "token_strings": [tok["tokens"][i] for i in ids],
        "config": {k: v for k, v in cfg.__dict__.items()},
        "hooks": {k: list(hooks[k].shape) for k in order},
    }
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1, ensure_ascii=False)
        f.write("\n")


# ---------------------------------------------------------------------------
# the Llama family (reference.Decoder): one fixture per architecture, each
# with the same SentencePiece vocabulary and prompt as tiny-llama
# ---------------------------------------------------------------------------

def _dec(arch, **kw):
    base = dict(arch=arch, vocab=0, d_model=32, n_layer=2, n_head=4, n_kv_head=2, d_head=8, d_ff=64,
                ctx=32, eps=1e-6)
    base.update(kw)
    return R.DecoderConfig(**base)


DECODERS = {
    # q/k/v biases, NEOX rotary, a bias on the unembedding
    "tiny-qwen2": (_dec("qwen2", neox=True, qkv_bias=True, output_bias=True, rope_base=1000000.0), 2001),
    # llama with YaRN (factor 4 over a trained context of 8)
    "tiny-llama-yarn": (_dec("llama", rope_scaling=("yarn", 4.0, 8)), 2002),
    # llama 3's rotary frequency factors (rope_freqs.weight)
    "tiny-llama3": (_dec("llama", rope_base=500000.0, rope_scaling=("llama3", [1.0, 1.5, 4.0, 8.0])), 2003),
    # Mistral 7B v0.1: every layer windowed (5 keys), here with linear rotary scaling (x2)
    "tiny-mistral": (_dec("llama", window=5, rope_scaling=("linear", 2.0)), 2004),
    # per-head RMSNorm of q and k before rotary; heads of 16 (q is 64 wide, the stream 32)
    "tiny-qwen3": (_dec("qwen3", neox=True, qk_norm=True, d_head=16, rope_base=1000000.0), 2005),
    # fused q|k|v and gate|up; LongRoPE: the long factors (context 32 > 8), cos and sin
    # scaled by sqrt(1 + ln(32/8) / ln 8) as Phi-3's conversion computes it
    "tiny-phi3": (_dec("phi3", neox=True, fused=True,
                       rope_scaling=("longrope", [1.0, 2.0, 4.0, 16.0], [1.0, 1.1, 1.2, 1.3], 8,
                                     math.sqrt(1 + math.log(32 / 8) / math.log(8)))), 2006),
    # embeddings times sqrt(32); norms after attention and MLP too (1 + w); GEGLU;
    # scores soft-capped at 8 and logits at 5 (low, so the caps bite); layers 0, 2
    # windowed (5 keys, rotary base 1e4), layer 1 global (base 1e6); heads of 16
    "tiny-gemma2": (_dec("gemma2", n_layer=3, d_head=16, neox=True, gemma_norm=True, post_norms=True,
                         embed_scale=True, gelu=True, tie_embeddings=True, attn_softcap=8.0, final_softcap=5.0,
                         window=5, window_pattern=2, rope_base=1000000.0, rope_base_window=10000.0), 2007),
    # Gemma 2's block with per-head q and k norms and no score cap; layers 0, 1 windowed
    # (5 keys, base 1e4, unscaled), layer 2 global (base 1e6, linear rotary scaling x4)
    "tiny-gemma3": (_dec("gemma3", n_layer=3, d_head=16, neox=True, gemma_norm=True, post_norms=True,
                         qk_norm=True, embed_scale=True, gelu=True, tie_embeddings=True, window=5,
                         window_pattern=3, rope_base=1000000.0, rope_base_window=10000.0,
                         rope_scaling=("linear", 4.0)), 2008),
    # Mixtral: llama with 4 experts in every MLP, 2 chosen per token (softmax, renormalised)
    "tiny-mixtral": (_dec("llama", n_expert=4, n_expert_used=2), 2009),
    # 5 experts, 3 chosen; experts 3 and 4 share a router row, so their weights are equal on every
    # token: whenever they are 3rd and 4th the choice is a tie (the lower index is taken, as
    # llama.cpp's argsort does: its logits agree)
    "tiny-mixtral-tie": (_dec("llama", n_expert=5, n_expert_used=3, router_tie=True), 2010),
    # Gemma (the first): embeddings times sqrt(32), norms as 1 + w, GEGLU (tanh), NEOX
    # rotary, multi-query attention (one kv head), heads of 16; no post-norms, caps or window
    "tiny-gemma": (_dec("gemma", d_head=16, n_kv_head=1, neox=True, gemma_norm=True, embed_scale=True, gelu=True,
                        tie_embeddings=True), 2012),
    # Qwen-MoE: qwen2's attention; 4 experts of 16, 2 chosen, weights not renormalised; a shared
    # expert of d_ff (64, the default: no key) under a sigmoid gate
    "tiny-qwen2moe": (_dec("qwen2moe", neox=True, qkv_bias=True, rope_base=1000000.0, n_expert=4,
                           n_expert_used=2, expert_renorm=False, d_expert=16, d_shared=64), 2011),
}


def make_decoder(cfg, seed):
    """As make_model: O(1) activations, peaked attention, float32-exact
    weights in a float64 model."""
    model = R.Decoder(cfg).double()
    g = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("_w"):                      # norm weight (Gemma's zero-centred)
                p.copy_((0.0 if cfg.gemma_norm else 1.0) + 0.1 * randn(*p.shape))
            elif name.endswith("bias"):
                p.copy_(0.1 * randn(*p.shape))
            elif name == "tok_embd.weight":
                std = 1.0 / math.sqrt(cfg.d_model) if cfg.embed_scale else 0.5 if cfg.tie_embeddings else 1.0
                p.copy_(std * randn(*p.shape))
            elif name.endswith(("q.weight", "k.weight")):
                p.copy_(0.3 * randn(*p.shape))
            elif name == "out.weight":
                p.copy_(0.4 * randn(*p.shape))
            elif name.endswith("_exps"):                 # [E, rows, cols]: each expert as a Linear
                p.copy_(randn(*p.shape) / math.sqrt(p.shape[2]))
            else:
                p.copy_(randn(*p.shape) / math.sqrt(p.shape[1]))
        if cfg.router_tie:
            for blk in model.blocks:
                blk.router.weight[-1] = blk.router.weight[-2]
        for p in model.parameters():
            p.copy_(p.float().double())
    return model


def build_decoder(which):
    cfg, seed = DECODERS[which]
    tok, ids, text = llama_tokenizer()
    cfg = R.DecoderConfig(**{**cfg.__dict__, "vocab": len(tok["tokens"])})
    return which, cfg, make_decoder(cfg, seed), tok, ids, text


def write_decoder_fixture(outdir, which):
    name, cfg, model, tok, ids, text = build_decoder(which)
    # llama.cpp's vocabulary loader expects Phi-3's special tokens of a file
    # whose general.name contains "phi3" or "phi-3" (any case): this one has none
    R.export_decoder_gguf(model, cfg, os.path.join(outdir, name + ".gguf"), name.replace("phi3", "Phi 3"), tok)
    hooks = run_hooks(model, ids)
    save_hooks(outdir, name, cfg, tok, ids, text, hooks, list(hooks))


def check_decoder(fixdir, which, fresh_dir):
    """Determinism, masks and softmax, and a float32 pass (as the C engine
    computes) within tolerance of the float64 fixtures."""
    name, cfg, model, tok, ids, text = build_decoder(which)
    for rel in [name + ".gguf"] + [os.path.join(name, f) for f in sorted(os.listdir(os.path.join(fresh_dir, name)))]:
        a = open(os.path.join(fixdir, rel), "rb").read()
        b = open(os.path.join(fresh_dir, rel), "rb").read()
        expect(a == b, "%s differs from a fresh build" % rel)
    kv, T = read_gguf(os.path.join(fixdir, name + ".gguf"))
    expect(kval(kv, "general.architecture") == cfg.arch, "architecture key")
    H = {k[:-4]: np.load(os.path.join(fixdir, name, k)) for k in os.listdir(os.path.join(fixdir, name))
         if k.endswith(".npy") and k != "tokens.npy"}
    n = len(ids)
    for L in range(cfg.n_layer):
        sc = H["blocks.%d.attn.hook_attn_scores" % L]
        pat = H["blocks.%d.attn.hook_pattern" % L]
        q, k = np.arange(n)[:, None], np.arange(n)[None, :]
        hidden = (k > q) | ((k <= q - cfg.window) if cfg.windowed(L) else False)
        expect(np.all(np.isneginf(sc[:, hidden])) and np.all(pat[:, hidden] == 0), "layer %d mask" % L)
        expect(np.all(np.isfinite(sc[:, ~hidden])), "layer %d: finite visible scores" % L)
        expect(float(np.max(np.abs(pat.sum(-1) - 1))) < 1e-6, "layer %d softmax sums" % L)
    m32 = make_decoder(cfg, DECODERS[which][1]).float()
    h32 = {}
    with torch.no_grad():
        m32(torch.tensor([ids]), h32)
    d32 = max((max_diff(h32[k].numpy(), H[k]), k) for k in H)
    expect(d32[0] < 1e-4, "float32 pass differs by %g at %s" % d32)
    lines = ["%d hooks; masks, softmax rows; float32 torch pass within %.1e of the fixtures (at %s)"
             % (len(H), d32[0], d32[1])]
    for L in range(cfg.n_layer if cfg.n_expert else 0):
        # the experts chosen: the float32 pass's equal the fixture's; the
        # closest call between the k-th and the next weight, and the ties
        ix, w = H["blocks.%d.mlp.hook_expert_indices" % L], H["blocks.%d.mlp.hook_expert_weights" % L]
        expect(np.array_equal(h32["blocks.%d.mlp.hook_expert_indices" % L].numpy(), ix),
               "layer %d: float32 pass chooses other experts" % L)
        s = -np.sort(-w, axis=-1)
        gap = s[:, cfg.n_expert_used - 1] - s[:, cfg.n_expert_used]
        ties = [int(i) for i in np.nonzero(gap == 0)[0]]
        lines.append("layer %d experts: closest call %.2e; ties at positions %s" % (L, gap[gap > 0].min(), ties))
    return lines


# ---------------------------------------------------------------------------
# DeepSeek-V2's multi-head latent attention (reference.DeepSeek2), legacy
# attn_kv_b, dense MLPs; the same vocabulary and prompt as tiny-llama
# ---------------------------------------------------------------------------

DEEPSEEK2S = {
    # q straight from the stream; heads of q/k 8 + 4 rotary, values 6, latent 12
    "tiny-deepseek2": (dict(), 2101),
    # q through its own latent of 16 and RMSNorm (V2's attn_q_a / attn_q_b)
    "tiny-deepseek2-qlora": (dict(q_lora=16), 2102),
    # DeepSeek-V3's routing: layer 0 dense, layers 1-2 among 8 experts of 16, 2 chosen by sigmoid
    # affinities plus a selection bias, only from the better of 2 groups of 4; gates normalised, times 2.5;
    # one shared expert; q through its latent
    "tiny-deepseek2-v3moe": (dict(q_lora=16, n_layer=3, n_dense=1, n_expert=8, n_expert_used=2, n_shared=1,
                                  sigmoid=True, bias=True, n_group=2, group_used=1, norm=True, scale=2.5), 2103),
    # DeepSeek-V2(-Lite)'s: softmax, no bias nor groups, gates as they are; two shared experts; q direct
    "tiny-deepseek2-v2moe": (dict(n_layer=3, n_dense=1, n_expert=6, n_expert_used=2, n_shared=2), 2104),
    # the absorbed layout of newer converters (attn_k_b, attn_v_b; *_mla head sizes), with V3's routing
    # of tiny-deepseek2-v3moe: the same weights, the MQA form (the cache holding the latent)
    "tiny-deepseek2-absorbed": (dict(q_lora=16, n_layer=3, n_dense=1, n_expert=8, n_expert_used=2, n_shared=1,
                                     sigmoid=True, bias=True, n_group=2, group_used=1, norm=True, scale=2.5,
                                     absorbed=True), 2103),
    # YaRN (factor 4 over a trained context of 8; yarn_log_multiplier 0.0707, V2's 0.1 * mscale_all_dim):
    # the rotary part's slow dimensions stretched, the scores times mscale^2 = (1 + 0.0707 ln 4)^2
    "tiny-deepseek2-yarn": (dict(yarn=(4.0, 8, 0.0707)), 2105),
}


def make_deepseek2(cfg, seed):
    """As make_decoder: O(1) activations, float32-exact weights in a float64 model."""
    model = R.DeepSeek2(cfg).double()
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            r = torch.randn(*p.shape, generator=g, dtype=torch.float64)
            if name.endswith("_w"):
                p.copy_(1.0 + 0.1 * r)
            elif name.endswith("exp_probs_b"):                   # large enough to change choices
                p.copy_(0.3 * r)
            elif name.endswith("_exps"):                         # [E, rows, cols]: each expert as a Linear
                p.copy_(r / math.sqrt(p.shape[2]))
            elif name == "tok_embd.weight":
                p.copy_(r)
            elif name.endswith(("q.weight", "q_b.weight", "kv_b.weight")):
                p.copy_(r * 1.5 / math.sqrt(p.shape[1]))     # peaked attention
            elif name == "out.weight":
                p.copy_(0.4 * r)
            else:
                p.copy_(r / math.sqrt(p.shape[1]))
        for p in model.parameters():
            p.copy_(p.float().double())
    return model


def build_deepseek2(which):
    kw, seed = DEEPSEEK2S[which]
    tok, ids, text = llama_tokenizer()
    cfg = R.DeepSeek2Config(vocab=len(tok["tokens"]), **kw)
    return which, cfg, make_deepseek2(cfg, seed), tok, ids, text


def write_deepseek2_fixture(outdir, which):
    name, cfg, model, tok, ids, text = build_deepseek2(which)
    R.export_deepseek2_gguf(model, cfg, os.path.join(outdir, name + ".gguf"), name, tok)
    hooks = run_hooks(model, ids)
    save_hooks(outdir, name, cfg, tok, ids, text, hooks, list(hooks))


def check_deepseek2(fixdir, which, fresh_dir):
    """Determinism, the causal mask, softmax rows, and a float32 pass
    within 1e-4 of the float64 fixtures."""
    name, cfg, model, tok, ids, text = build_deepseek2(which)
    for rel in [name + ".gguf"] + [os.path.join(name, f) for f in sorted(os.listdir(os.path.join(fresh_dir, name)))]:
        expect(open(os.path.join(fixdir, rel), "rb").read() == open(os.path.join(fresh_dir, rel), "rb").read(),
               "%s differs from a fresh build" % rel)
    H = {k[:-4]: np.load(os.path.join(fixdir, name, k)) for k in os.listdir(os.path.join(fixdir, name))
         if k.endswith(".npy") and k != "tokens.npy"}
    n = len(ids)
    hidden = np.arange(n)[None, :] > np.arange(n)[:, None]
    for L in range(cfg.n_layer):
        sc, pat = H["blocks.%d.attn.hook_attn_scores" % L], H["blocks.%d.attn.hook_pattern" % L]
        expect(np.all(np.isneginf(sc[:, hidden])) and np.all(pat[:, hidden] == 0), "layer %d mask" % L)
        expect(float(np.max(np.abs(pat.sum(-1) - 1))) < 1e-6, "layer %d softmax sums" % L)
        if not cfg.absorbed:
            k = H["blocks.%d.attn.hook_k" % L]
            expect(np.all(k[:, 1:, cfg.d_nope:] == k[:, :1, cfg.d_nope:]), "layer %d: one rotary key for all heads" % L)
    m32 = make_deepseek2(cfg, DEEPSEEK2S[which][1]).float()
    h32 = {}
    with torch.no_grad():
        m32(torch.tensor([ids]), h32)
    d32 = max((max_diff(h32[k].numpy(), H[k]), k) for k in H)
    expect(d32[0] < 1e-4, "float32 pass differs by %g at %s" % d32)
    lines = ["%d hooks; mask, softmax rows, shared rotary key; float32 torch pass within %.1e (at %s)"
             % (len(H), d32[0], d32[1])]
    if cfg.absorbed:   # the MQA form gives the expanded form's scores, z and logits on the same weights
        expanded = R.DeepSeek2(R.DeepSeek2Config(**{**cfg.__dict__, "absorbed": False})).double()
        expanded.load_state_dict(model.state_dict())
        he, ha = {}, {}
        with torch.no_grad():
            expanded(torch.tensor([ids]), he)
            model(torch.tensor([ids]), ha)   # float64 both (the fixtures are float32)
        common = [k for k in ha if k in he and ("scores" in k or "pattern" in k or k.endswith("hook_z") or "unembed" in k)]
        de = max((max_diff(he[k].numpy(), ha[k].numpy()), k) for k in common)
        expect(de[0] < 1e-9, "absorbed and expanded forms differ by %g at %s" % de)
        lines.append("absorbed = expanded form within %.1e at scores, patterns, z, logits (%d hooks)"
                     % (de[0], len(common)))
    for L in range(cfg.n_layer):
        if cfg.dense(L):
            continue
        # the experts chosen: the float32 pass's equal the fixture's; the closest call between the
        # k-th and the next biased weight among the allowed groups (the reference's choice), and ties
        ix = H["blocks.%d.mlp.hook_expert_indices" % L]
        expect(np.array_equal(h32["blocks.%d.mlp.hook_expert_indices" % L].numpy(), ix),
               "layer %d: float32 pass chooses other experts" % L)
        w = H["blocks.%d.mlp.hook_expert_weights" % L].astype(np.float64)
        sel = w + (model.blocks[L].exp_probs_b.detach().numpy() if cfg.bias else 0)
        s_ = -np.sort(-sel, axis=-1)
        gap = s_[:, cfg.n_expert_used - 1] - s_[:, cfg.n_expert_used]
        unbiased = np.argsort(-w, axis=-1, kind="stable")[:, :cfg.n_expert_used]
        lines.append("layer %d experts: closest call %.2e (ignoring groups); ties at positions %s; "
                     "%d of %d positions choose otherwise than by the weights alone"
                     % (L, gap[gap > 0].min(), [int(i) for i in np.nonzero(gap == 0)[0]],
                        int(np.sum(np.any(np.sort(unbiased, -1) != np.sort(ix, -1), -1))), n))
    return lines


# ---------------------------------------------------------------------------
# the BERT family of encoders (reference.Encoder), each with a sentence
# pair's token types (0 for the first 9 positions, 1 after). tiny-bert
# reads text: a small WordPiece vocabulary (tokenizer "bert"); tiny-nomic-bert
# has a vocabulary of 64 ids without text (tokenizer "none", which
# llama.cpp also loads).
# ---------------------------------------------------------------------------

ENC_VOCAB = 64
ENC_IDS = [2, 17, 40, 9, 33, 61, 5, 12, 3, 44, 28, 4, 50, 19, 7, 3]
ENC_TYPES = [0] * 9 + [1] * 7


BERT_TEXT = "the cat sat on the mat, the dog ate the fishes!"


def bert_tokenizer():
    """A WordPiece vocabulary stored as llama.cpp's converter stores BERT's
    (a word's first piece with '▁' in front, a continuation without its
    '##'): specials [PAD] [UNK] [CLS] [SEP] [MASK], a few words, and every
    lower-case letter as a word start and a continuation, so any
    lower-case word has pieces. Encoded greedily, longest piece first,
    punctuation a word of its own, [CLS] ... [SEP] around."""
    letters = [chr(c) for c in range(ord("a"), ord("z") + 1)]
    words = ["the", "cat", "sat", "on", "mat", "dog", "ate", "fish", ",", ".", "!", "?", "'"]
    tokens = (["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + ["\u2581" + w for w in words] + ["es", "ing"]
              + ["\u2581" + c for c in letters] + letters)
    vocab = {t: i for i, t in enumerate(tokens)}
    ids = [vocab["[CLS]"]]
    for word in regex.findall(r"\w+|[^\w\s]", BERT_TEXT.lower()):
        rest, first = word, True
        while rest:
            k = max(k for k in range(1, len(rest) + 1) if (("\u2581" if first else "") + rest[:k]) in vocab)
            ids.append(vocab[("\u2581" if first else "") + rest[:k]])
            rest, first = rest[k:], False
    ids.append(vocab["[SEP]"])
    tok = {"model": "bert", "tokens": tokens, "token_type": [3] * 5 + [1] * (len(tokens) - 5),
           "bos_token_id": 2, "seperator_token_id": 3, "padding_token_id": 0, "unknown_token_id": 1,
           "mask_token_id": 4, "cls_token_id": 2}
    return tok, ids, BERT_TEXT


def _enc(arch, **kw):
    base = dict(arch=arch, vocab=ENC_VOCAB, d_model=32, n_layer=2, n_head=4, d_ff=64, ctx=32, eps=1e-5)
    base.update(kw)
    return R.EncoderConfig(**base)


ENCODERS = {
    # split q, k, v; biases everywhere; learned positions; mean pooling; the masked-LM head (tied)
    "tiny-bert": (_enc("bert", vocab=len(bert_tokenizer()[0]["tokens"]), pooling=1, mlm=True), 3001),
    # fused q|k|v, no biases, NEOX rotary (base 1000), SwiGLU; CLS pooling; no masked-LM head
    "tiny-nomic-bert": (_enc("nomic-bert", d_ff=48, pooling=2, mlm=False, rope_base=1000.0), 3002),
}


def make_encoder(cfg, seed):
    """As make_model: O(1) activations, peaked attention, float32-exact
    weights in a float64 model."""
    model = R.Encoder(cfg).double()
    g = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("_w"):                      # LayerNorm weight
                p.copy_(1.0 + 0.1 * randn(*p.shape))
            elif name.endswith(("bias", "_b")):          # biases and LayerNorm biases
                p.copy_(0.1 * randn(*p.shape))
            elif name in ("tok_embd.weight", "pos_embd.weight", "type_embd.weight"):
                p.copy_(0.5 * randn(*p.shape))
            elif name.endswith(("q.weight", "k.weight")):
                p.copy_(0.3 * randn(*p.shape))
            else:
                p.copy_(randn(*p.shape) / math.sqrt(p.shape[1]))
        for p in model.parameters():
            p.copy_(p.float().double())
    return model


def run_encoder_hooks(model, ids, types):
    hooks = {}
    with torch.no_grad():
        model(torch.tensor([ids]), torch.tensor([types]), hooks)
    return {k: v.numpy() for k, v in hooks.items()}


def encoder_input(which):
    """-> (tokenizer dict or None, ids, text)"""
    if which == "tiny-bert":
        return bert_tokenizer()
    return None, ENC_IDS, ""


def write_encoder_fixture(outdir, which):
    cfg, seed = ENCODERS[which]
    tok, ids, text = encoder_input(which)
    model = make_encoder(cfg, seed)
    R.export_encoder_gguf(model, cfg, os.path.join(outdir, which + ".gguf"), which, tok)
    hooks = run_encoder_hooks(model, ids, ENC_TYPES)
    save_hooks(outdir, which, cfg, tok or {"tokens": ["#%d" % i for i in range(cfg.vocab)]}, ids, text, hooks,
               list(hooks))
    np.save(os.path.join(outdir, which, "types.npy"), np.array(ENC_TYPES, dtype=np.int32))


def check_bert_block_against_torch(model, cfg, H, act=None):
    """PyTorch's own Post-LN layer (nn.TransformerEncoderLayer with
    norm_first=False) given a bert block's weights maps the block's input
    to its output (float64, the reference's own hooks): the reference's
    block is the standard one. Its activation is the tanh GELU the
    reference (and llama.cpp) use, or `act` (F.gelu for a gelu_erf model)."""
    worst = 0.0
    for L, blk in enumerate(model.blocks):
        layer = torch.nn.TransformerEncoderLayer(
            cfg.d_model, cfg.n_head, cfg.d_ff, dropout=0.0, activation=act or R.gelu_tanh, layer_norm_eps=cfg.eps,
            batch_first=True, norm_first=False, dtype=torch.float64).eval()
        with torch.no_grad():
            layer.self_attn.in_proj_weight.copy_(torch.cat((blk.q.weight, blk.k.weight, blk.v.weight)))
            layer.self_attn.in_proj_bias.copy_(torch.cat((blk.q.bias, blk.k.bias, blk.v.bias)))
            layer.self_attn.out_proj.weight.copy_(blk.o.weight)
            layer.self_attn.out_proj.bias.copy_(blk.o.bias)
            layer.linear1.weight.copy_(blk.up.weight)
            layer.linear1.bias.copy_(blk.up.bias)
            layer.linear2.weight.copy_(blk.down.weight)
            layer.linear2.bias.copy_(blk.down.bias)
            layer.norm1.weight.copy_(blk.ln1_w)
            layer.norm1.bias.copy_(blk.ln1_b)
            layer.norm2.weight.copy_(blk.ln2_w)
            layer.norm2.bias.copy_(blk.ln2_b)
            x = torch.tensor(H["blocks.%d.hook_resid_pre" % L], dtype=torch.float64)[None]
            got = layer(x)[0].numpy()
        worst = max(worst, max_diff(got, H["blocks.%d.ln2.hook_normalized" % L]))
    expect(worst < 1e-12, "nn.TransformerEncoderLayer(norm_first=False) differs from the bert block by %g" % worst)
    return "nn.TransformerEncoderLayer(norm_first=False) gives every block's output within %.1e" % worst


def check_encoder(fixdir, which, fresh_dir):
    """Determinism, unmasked softmax rows, a float32 pass within
    tolerance, PyTorch's own Post-LN layer, and token types that matter."""
    cfg, seed = ENCODERS[which]
    ids = encoder_input(which)[1]
    for rel in [which + ".gguf"] + [os.path.join(which, f) for f in sorted(os.listdir(os.path.join(fresh_dir, which)))]:
        a = open(os.path.join(fixdir, rel), "rb").read()
        b = open(os.path.join(fresh_dir, rel), "rb").read()
        expect(a == b, "%s differs from a fresh build" % rel)
    kv, T = read_gguf(os.path.join(fixdir, which + ".gguf"))
    expect(kval(kv, "general.architecture") == cfg.arch, "architecture key")
    H = {k[:-4]: np.load(os.path.join(fixdir, which, k)) for k in os.listdir(os.path.join(fixdir, which))
         if k.endswith(".npy") and k not in ("tokens.npy", "types.npy")}
    for L in range(cfg.n_layer):
        sc, pat = H["blocks.%d.attn.hook_attn_scores" % L], H["blocks.%d.attn.hook_pattern" % L]
        expect(np.all(np.isfinite(sc)), "layer %d: every score is finite (no mask)" % L)
        expect(float(np.max(np.abs(pat.sum(-1) - 1))) < 1e-6, "layer %d softmax sums" % L)
        expect(float(pat[:, :, -1].max()) > 0.01, "layer %d: early queries see the last key" % L)
    lines = []
    m = make_encoder(cfg, seed)
    if cfg.arch == "bert":
        lines.append(check_bert_block_against_torch(m, cfg, run_encoder_hooks(m, ids, ENC_TYPES)))
    h0 = run_encoder_hooks(m, ids, [0] * len(ids))
    expect(max_diff(h0["blocks.0.hook_resid_pre"][:9], H["blocks.0.hook_resid_pre"][:9]) < 1e-6 and
           max_diff(h0["blocks.0.hook_resid_pre"][9:], H["blocks.0.hook_resid_pre"][9:]) > 1e-2,
           "token types change only the positions of type 1")
    m32 = make_encoder(cfg, seed).float()
    h32 = {}
    with torch.no_grad():
        m32(torch.tensor([ids]), torch.tensor([ENC_TYPES]), h32)
    d32 = max((max_diff(h32[k].numpy(), H[k]), k) for k in H)
    expect(d32[0] < 1e-4, "float32 pass differs by %g at %s" % d32)
    lines.append("%d hooks; unmasked softmax rows; token types; float32 torch pass within %.1e (at %s)"
                 % (len(H), d32[0], d32[1]))
    return lines


# ---------------------------------------------------------------------------
# the original encoder-decoder Transformer (reference.EncDec: PyTorch's own
# nn.Transformer, Post-LN, ReLU). Its fixture has two inputs: source.npy (the
# encoder's ids: tiny-llama's prompt) and tokens.npy (the decoder's: the start
# token, then a sentence of other length), over tiny-llama's vocabulary.
# Encoder and decoder have different depths, so nothing may assume one count.
# ---------------------------------------------------------------------------

ENCDEC_TARGET = "the mat sat on a cat"
ENCDEC_START = 2   # </s> starts the decoder (as Marian's and T5's pad/eos do): not BOS, so the key is read

ENCDECS = {
    # one embedding for both languages, the output tied to it, with a bias; the decoder deeper
    "tiny-transformer": (R.EncDecConfig(vocab=0, d_model=32, n_enc=2, n_dec=3, n_head=4, d_ff=64, ctx=32,
                                        start=ENCDEC_START), 4001),
    # a target embedding of its own (dec.token_embd), an output matrix of its own without bias; the
    # encoder deeper; LayerNorm eps 1e-6
    "tiny-transformer-sep": (R.EncDecConfig(vocab=0, d_model=32, n_enc=3, n_dec=2, n_head=2, d_ff=48, ctx=32,
                                            eps=1e-6, shared_embd=False, tied_output=False, output_bias=False,
                                            start=ENCDEC_START), 4002),
}


def encdec_input():
    """-> (tokenizer dict, source ids, target ids, source text)"""
    tok, src, text = llama_tokenizer()
    byte_id = {b: 3 + b for b in range(256)}
    tgt = [ENCDEC_START] + spm_encode(ENCDEC_TARGET, tok["tokens"], tok["scores"], byte_id)
    return tok, src, tgt, text


def make_encdec(cfg, seed):
    """As make_model: O(1) activations, peaked attention, float32-exact
    weights in a float64 model."""
    model = R.EncDec(cfg).double()
    g = torch.Generator().manual_seed(seed)
    d = cfg.d_model

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1 and "norm" in name and name.endswith("weight"):   # LayerNorm weight
                p.copy_(1.0 + 0.1 * randn(*p.shape))
            elif p.dim() == 1:                                                # biases
                p.copy_(0.1 * randn(*p.shape))
            elif name.endswith("in_proj_weight"):
                p.copy_(randn(*p.shape))
                p[:2 * d].mul_(0.3)                                           # Q and K rows
                p[2 * d:].mul_(1.0 / math.sqrt(d))                            # V rows
            elif name in ("src_embd.weight", "tgt_embd.weight"):
                p.copy_(randn(*p.shape) / math.sqrt(d))                       # times sqrt(d) in the model
            else:
                p.copy_(randn(*p.shape) / math.sqrt(p.shape[1]))
        for p in model.parameters():
            p.copy_(p.float().double())
    return model


def build_encdec(which):
    cfg, seed = ENCDECS[which]
    tok, src, tgt, text = encdec_input()
    cfg = R.EncDecConfig(**{**cfg.__dict__, "vocab": len(tok["tokens"])})
    return cfg, make_encdec(cfg, seed), tok, src, tgt, text


def run_encdec_hooks(model, src, tgt):
    hooks = {}
    with torch.no_grad():
        model(torch.tensor([src]), torch.tensor([tgt]), hooks)
    return {k: v.numpy() for k, v in hooks.items()}


def write_encdec_fixture(outdir, which):
    cfg, model, tok, src, tgt, text = build_encdec(which)
    R.export_encdec_gguf(model, cfg, os.path.join(outdir, which + ".gguf"), which, tok)
    hooks = run_encdec_hooks(model, src, tgt)
    save_hooks(outdir, which, cfg, tok, tgt, ENCDEC_TARGET, hooks, list(hooks))
    np.save(os.path.join(outdir, which, "source.npy"), np.array(src, dtype=np.int32))


def expected_encdec_tensors(cfg):
    """The GGUF layout README.md documents, written out independently of
    the exporter: ne = [cols, rows]."""
    d, Fd, V = cfg.d_model, cfg.d_ff, cfg.vocab
    e = {"token_embd.weight": [d, V]}
    for n_ in ("enc.output_norm", "dec.output_norm"):
        e[n_ + ".weight"] = e[n_ + ".bias"] = [d]
    if not cfg.shared_embd:
        e["dec.token_embd.weight"] = [d, V]
    if not cfg.tied_output:
        e["output.weight"] = [d, V]
    if cfg.output_bias:
        e["output.bias"] = [V]
    for stack, n, sites in (("enc", cfg.n_enc, ("attn",)), ("dec", cfg.n_dec, ("attn", "cross_attn"))):
        for L in range(n):
            b = "%s.blk.%d." % (stack, L)
            for site in sites:
                for m in "qkvo":
                    e[b + site + "_" + m + ".weight"] = [d, d]
                    e[b + site + "_" + m + ".bias"] = [d]
            norms = ("attn_norm", "ffn_norm") if stack == "enc" else ("attn_norm", "cross_attn_norm", "ffn_norm")
            for nm in norms:
                e[b + nm + ".weight"] = e[b + nm + ".bias"] = [d]
            e.update({b + "ffn_up.weight": [d, Fd], b + "ffn_up.bias": [Fd],
                      b + "ffn_down.weight": [Fd, d], b + "ffn_down.bias": [d]})
    return e


def check_encdec(fixdir, which, fresh_dir):
    """Determinism; the GGUF's keys and layout; masks and softmax rows of
    every site (the cross-attention's a full [head, n_dec, n_enc]
    rectangle); nn.Transformer in inference mode (PyTorch's fused path,
    no hooks) gives the fixture's logits; a float32 pass within 1e-4."""
    cfg, seed = ENCDECS[which]
    tok, src, tgt, text = encdec_input()
    cfg = R.EncDecConfig(**{**cfg.__dict__, "vocab": len(tok["tokens"])})
    for rel in [which + ".gguf"] + [os.path.join(which, f) for f in sorted(os.listdir(os.path.join(fresh_dir, which)))]:
        a = open(os.path.join(fixdir, rel), "rb").read()
        b = open(os.path.join(fresh_dir, rel), "rb").read()
        expect(a == b, "%s differs from a fresh build" % rel)
    kv, T = read_gguf(os.path.join(fixdir, which + ".gguf"))
    expect(kval(kv, "general.architecture") == "transformer", "architecture key")
    expect(kval(kv, "transformer.block_count") == cfg.n_enc and kval(kv, "transformer.decoder_block_count") == cfg.n_dec,
           "block counts")
    expect(kval(kv, "transformer.decoder_start_token_id") == ENCDEC_START, "decoder start token")
    exp = expected_encdec_tensors(cfg)
    expect(set(T) == set(exp), "tensor names differ: %s" % sorted(set(T) ^ set(exp)))
    for k, ne in exp.items():
        expect(T[k][0] == ne, "%s ne %s, want %s" % (k, T[k][0], ne))
    H = {k[:-4]: np.load(os.path.join(fixdir, which, k)) for k in os.listdir(os.path.join(fixdir, which))
         if k.endswith(".npy") and k not in ("tokens.npy", "source.npy")}
    S, Tn = len(src), len(tgt)
    expect(np.load(os.path.join(fixdir, which, "source.npy")).tolist() == src, "source.npy")
    expect(np.load(os.path.join(fixdir, which, "tokens.npy")).tolist() == tgt, "tokens.npy")
    causal = np.triu(np.ones((Tn, Tn), bool), 1)
    for L in range(cfg.n_enc):
        pat = H["encoder.%d.attn.hook_pattern" % L]
        expect(pat.shape == (cfg.n_head, S, S) and np.all(np.isfinite(H["encoder.%d.attn.hook_attn_scores" % L])),
               "encoder %d: unmasked [head, n_enc, n_enc]" % L)
        expect(float(np.max(np.abs(pat.sum(-1) - 1))) < 1e-6, "encoder %d softmax sums" % L)
    for L in range(cfg.n_dec):
        sc, pat = H["decoder.%d.attn.hook_attn_scores" % L], H["decoder.%d.attn.hook_pattern" % L]
        expect(np.all(np.isneginf(sc[:, causal])) and np.all(pat[:, causal] == 0), "decoder %d causal mask" % L)
        cp = H["decoder.%d.cross_attn.hook_pattern" % L]
        expect(cp.shape == (cfg.n_head, Tn, S), "decoder %d cross pattern shape %s" % (L, cp.shape))
        expect(H["decoder.%d.cross_attn.hook_k" % L].shape == (S, cfg.n_head, cfg.d_head), "cross k is the source's")
        expect(float(np.max(np.abs(cp.sum(-1) - 1))) < 1e-6 and float(cp[:, 0, -1].max()) > 0.01,
               "decoder %d: cross rows sum to 1 and see the last source position" % L)
    pe = torch.zeros(cfg.ctx, cfg.d_model, dtype=torch.float64)
    div = torch.exp(torch.arange(0, cfg.d_model, 2, dtype=torch.float64) * (-math.log(10000.0) / cfg.d_model))
    pos = torch.arange(cfg.ctx, dtype=torch.float64)[:, None]
    pe[:, 0::2], pe[:, 1::2] = torch.sin(pos * div), torch.cos(pos * div)
    expect(max_diff(pe[:S].numpy(), H["encoder.hook_pos_embed"]) < 1e-6, "sinusoids differ from PyTorch's tutorial's")
    m = make_encdec(cfg, seed)
    m.eval()
    with torch.no_grad():
        e = lambda ids, emb: emb(torch.tensor([ids])) * math.sqrt(cfg.d_model) + pe[:len(ids)]
        mask = m.tf.generate_square_subsequent_mask(Tn).double()
        h = m.tf(e(src, m.src_embd), e(tgt, m.target_embedding()), tgt_mask=mask)
        W = m.target_embedding().weight if m.out is None else m.out.weight
        lg = (h @ W.t() + (0 if m.out_b is None else m.out_b))[0].numpy()
    d_inf = max_diff(lg, H["unembed.hook_out"])
    # the fixtures are float32: what remains is their rounding
    expect(d_inf < 1e-6, "nn.Transformer in inference mode differs from the hooked pass by %g" % d_inf)
    m32 = make_encdec(cfg, seed).float()
    h32 = {}
    with torch.no_grad():
        m32(torch.tensor([src]), torch.tensor([tgt]), h32)
    d32 = max((max_diff(h32[k].numpy(), H[k]), k) for k in H)
    expect(d32[0] < 1e-4, "float32 pass differs by %g at %s" % d32)
    return ["%d hooks; gguf layout; masks and softmax rows, cross-attention [head, %d, %d]; sinusoids; "
            "nn.Transformer's inference path within %.1e; float32 pass within %.1e (at %s)"
            % (len(H), Tn, S, d_inf, d32[0], d32[1])]


# ---------------------------------------------------------------------------
# T5 (reference.T5, written from the paper and llama.cpp's layout): arch t5,
# its input the same source and target as the original Transformer's, and
# arch t5encoder over the source alone. Few buckets, so that the fixture's
# distances reach the logarithmic ones (every distance here stays below
# the first integer boundary of the log bins, 16, where float rounding
# could tell two implementations apart).
# ---------------------------------------------------------------------------

T5S = {
    # Flan-T5's gated GELU, the output tied to the embedding (unscaled, as llama.cpp), a head size
    # of its own (key_length 6, not 32 / 4), 8 buckets; as deep as the encoder (llama.cpp as
    # `make llama-ref` installs it cannot load a T5 whose decoder is deeper than its encoder:
    # its per-layer arrays have block_count entries)
    "tiny-t5": (R.T5Config(vocab=0, d_model=32, n_enc=2, n_dec=2, n_head=4, d_head=6, d_ff=48, ctx=32, buckets=8,
                           gated=True, tied=True, start=ENCDEC_START), 5001),
    # T5's ReLU MLP, an output matrix of its own, 32 buckets (T5's), the encoder deeper
    "tiny-t5-relu": (R.T5Config(vocab=0, d_model=32, n_enc=3, n_dec=2, n_head=2, d_head=16, d_ff=64, ctx=32,
                                buckets=32, gated=False, tied=False, start=0), 5002),
    # the encoder alone (an embeddings model): ReLU, 32 buckets
    "tiny-t5encoder": (R.T5Config(vocab=0, d_model=32, n_enc=2, n_dec=0, n_head=4, d_head=8, d_ff=64, ctx=32,
                                  buckets=32, gated=False), 5003),
}


def make_t5(cfg, seed):
    """O(1) activations, peaked but not saturated attention (no 1/sqrt(d)
    on the scores: q and k small), float32-exact weights in a float64 model."""
    model = R.T5(cfg).double()
    g = torch.Generator().manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=g, dtype=torch.float64)

    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() == 1:                                           # RMSNorm weights
                p.copy_(1.0 + 0.1 * randn(*p.shape))
            elif name.endswith("_rel"):                                # bias tables [bucket, head]
                p.copy_(randn(*p.shape))
            elif name.split(".")[-2] in ("q", "k", "cq", "ck"):
                p.copy_(0.5 * randn(*p.shape) / math.sqrt(p.shape[1]))
            elif name == "embd.weight":
                p.copy_(randn(*p.shape))
            else:
                p.copy_(randn(*p.shape) / math.sqrt(p.shape[1]))
        for p in model.parameters():
            p.copy_(p.float().double())
    return model


def build_t5(which):
    cfg, seed = T5S[which]
    tok, src, tgt, text = encdec_input()
    cfg = R.T5Config(**{**cfg.__dict__, "vocab": len(tok["tokens"])})
    return cfg, make_t5(cfg, seed), tok, src, tgt, text


def write_t5_fixture(outdir, which):
    cfg, model, tok, src, tgt, text = build_t5(which)
    R.export_t5_gguf(model, cfg, os.path.join(outdir, which + ".gguf"), which, tok)
    hooks = {}
    with torch.no_grad():
        if cfg.n_dec:
            model(torch.tensor([src]), torch.tensor([tgt]), hooks)
        else:
            model(torch.tensor([src]), None, hooks)
    hooks = {k: v.numpy() for k, v in hooks.items()}
    if cfg.n_dec:
        save_hooks(outdir, which, cfg, tok, tgt, ENCDEC_TARGET, hooks, list(hooks))
        np.save(os.path.join(outdir, which, "source.npy"), np.array(src, dtype=np.int32))
    else:   # the encoder's input is its prompt
        save_hooks(outdir, which, cfg, tok, src, text, hooks, list(hooks))


def expected_t5_tensors(cfg):
    """llama.cpp's T5 layout (llama-model.cpp's create_tensor calls), written
    out independently of the exporter: ne = [cols, rows]."""
    d, F, V, q = cfg.d_model, cfg.d_ff, cfg.vocab, cfg.n_head * cfg.d_head
    e = {"token_embd.weight": [d, V], "enc.output_norm.weight": [d], "enc.blk.0.attn_rel_b.weight": [cfg.n_head, cfg.buckets]}
    if cfg.n_dec:
        e.update({"dec.output_norm.weight": [d], "dec.blk.0.attn_rel_b.weight": [cfg.n_head, cfg.buckets]})
        if not cfg.tied:
            e["output.weight"] = [d, V]
    for stack, n, sites in (("enc", cfg.n_enc, ("attn",)), ("dec", cfg.n_dec, ("attn", "cross_attn"))):
        for L in range(n):
            b = "%s.blk.%d." % (stack, L)
            for site in sites:
                e[b + site + "_norm.weight"] = [d]
                e.update({b + site + "_q.weight": [d, q], b + site + "_k.weight": [d, q],
                          b + site + "_v.weight": [d, q], b + site + "_o.weight": [q, d]})
            e.update({b + "ffn_norm.weight": [d], b + "ffn_up.weight": [d, F], b + "ffn_down.weight": [F, d]})
            if cfg.gated:
                e[b + "ffn_gate.weight"] = [d, F]
    return e


def check_t5(fixdir, which, fresh_dir):
    """Determinism; keys; the buckets against the paper's worked cases; the
    bias is the first layer's table in every layer; masks and softmax rows;
    a float32 pass within 1e-4."""
    cfg, seed = T5S[which]
    tok, src, tgt, text = encdec_input()
    cfg = R.T5Config(**{**cfg.__dict__, "vocab": len(tok["tokens"])})
    for rel in [which + ".gguf"] + [os.path.join(which, f) for f in sorted(os.listdir(os.path.join(fresh_dir, which)))]:
        a = open(os.path.join(fixdir, rel), "rb").read()
        b = open(os.path.join(fresh_dir, rel), "rb").read()
        expect(a == b, "%s differs from a fresh build" % rel)
    kv, T = read_gguf(os.path.join(fixdir, which + ".gguf"))
    expect(kval(kv, "general.architecture") == cfg.arch, "architecture key")
    expect(kval(kv, cfg.arch + ".attention.relative_buckets_count") == cfg.buckets, "buckets key")
    exp = expected_t5_tensors(cfg)
    expect(set(T) == set(exp), "tensor names differ: %s" % sorted(set(T) ^ set(exp)))
    for k, ne in exp.items():
        expect(T[k][0] == ne, "%s ne %s, want %s" % (k, T[k][0], ne))
    # buckets by hand (32 buckets both ways: 16 a side, 8 exact; one way: 32, 16 exact)
    rel = torch.tensor([-200, -20, -9, -8, -1, 0, 1, 7, 8, 12, 200])
    got = R.t5_bucket(rel, True, 32, 128).tolist()
    want = [15, 10, 8, 8, 1, 0, 17, 23, 24, 25, 31]
    expect(got == want, "bidirectional buckets %s, want %s" % (got, want))
    got = R.t5_bucket(rel, False, 32, 128).tolist()
    want = [31, 17, 9, 8, 1, 0, 0, 0, 0, 0, 0]
    expect(got == want, "causal buckets %s, want %s" % (got, want))
    H = {k[:-4]: np.load(os.path.join(fixdir, which, k)) for k in os.listdir(os.path.join(fixdir, which))
         if k.endswith(".npy") and k not in ("tokens.npy", "source.npy")}
    S, Tn = len(src), len(tgt)
    for L in range(cfg.n_enc):
        b = H["encoder.%d.attn.hook_position_bias" % L]
        expect(b.shape == (cfg.n_head, S, S) and np.array_equal(b, H["encoder.0.attn.hook_position_bias"]),
               "encoder %d: the first layer's bias" % L)
        expect(float(np.max(np.abs(H["encoder.%d.attn.hook_pattern" % L].sum(-1) - 1))) < 1e-6, "softmax rows")
    for L in range(cfg.n_dec):
        sc = H["decoder.%d.attn.hook_attn_scores" % L]
        causal = np.triu(np.ones((Tn, Tn), bool), 1)
        expect(np.all(np.isneginf(sc[:, causal])), "decoder %d causal mask" % L)
        expect(H["decoder.%d.cross_attn.hook_pattern" % L].shape == (cfg.n_head, Tn, S), "cross shape")
        expect("decoder.%d.cross_attn.hook_position_bias" % L not in H, "no bias on cross-attention")
    m32 = make_t5(cfg, seed).float()
    h32 = {}
    with torch.no_grad():
        m32(torch.tensor([src]), torch.tensor([tgt]) if cfg.n_dec else None, h32)
    d32 = max((max_diff(h32[k].numpy(), H[k]), k) for k in H)
    expect(d32[0] < 1e-4, "float32 pass differs by %g at %s" % d32)
    return ["%d hooks; keys; gguf layout; buckets by hand; one bias table for every layer; masks; float32 pass within "
            "%.1e (at %s)"
            % (len(H), d32[0], d32[1])]


# ---------------------------------------------------------------------------
# --check: an independent GGUF reader and an independent NumPy forward pass
# ---------------------------------------------------------------------------

class CheckError(Exception):
    pass


def expect(cond, msg):
    if not cond:
        raise CheckError(msg)


def read_gguf(path):
    """Parse a GGUF v3 file from its bytes, checking layout as it goes.
    Returns (kv dict, {name: (ne list, ggml type, float32 array in row-major
    shape reversed(ne))})."""
    buf = open(path, "rb").read()
    pos = 0

    def take(fmt):
        nonlocal pos
        vals = struct.unpack_from("<" + fmt, buf, pos)
        pos += struct.calcsize("<" + fmt)
        return vals if len(vals) > 1 else vals[0]

    def string():
        nonlocal pos
        n = take("Q")
        s = buf[pos:pos + n].decode("utf-8")
        pos += n
        return s

    scalar = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?",
              10: "Q", 11: "q", 12: "d"}

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("I"), take("Q")
            return (et, [value(et) for _ in range(n)])
        expect(t in scalar, "unknown value type %d at %d" % (t, pos))
        return (t, take(scalar[t]))

    expect(buf[:4] == b"GGUF", "bad magic")
    pos = 4
    version, n_tensors, n_kv = take("I"), take("Q"), take("Q")
    expect(version == 3, "version %d" % version)
    kv = {}
    for _ in range(n_kv):
        key = string()
        t = take("I")
        expect(key not in kv, "duplicate key " + key)
        kv[key] = (t, value(t))
    align = kv.get("general.alignment", (4, (4, 32)))[1][1]
    infos = []
    for _ in range(n_tensors):
        name = string()
        nd = take("I")
        expect(1 <= nd <= 4, "%s: %d dims" % (name, nd))
        ne = [take("Q") for _ in range(nd)]
        gt, off = take("I"), take("Q")
        infos.append((name, ne, gt, off))
    data0 = pos + (-pos) % align
    expect(all(b == 0 for b in buf[pos:data0]), "nonzero padding before data")
    tensors, end = {}, 0
    for name, ne, gt, off in sorted(infos, key=lambda x: x[3]):
        expect(off % align == 0, "%s: offset %d not aligned" % (name, off))
        expect(off >= end, "%s overlaps the previous tensor" % name)
        expect(all(b == 0 for b in buf[data0 + end:data0 + off]), "nonzero padding before " + name)
        n = int(np.prod(ne))
        start = data0 + off
        if gt == 0:
            size = 4 * n
            a = np.frombuffer(buf, "<f4", n, start).astype(np.float32)
        elif gt == 1:
            size = 2 * n
            a = np.frombuffer(buf, "<f2", n, start).astype(np.float32)
        elif gt == 8:
            expect(ne[0] % 32 == 0, name + ": Q8_0 row not a multiple of 32")
            size = n // 32 * 34
            a = np.empty(n, np.float32)
            for i in range(n // 32):
                p = start + 34 * i
                dq = np.frombuffer(buf, "<f2", 1, p)[0].astype(np.float32)
                a[32 * i:32 * i + 32] = dq * np.frombuffer(buf, "i1", 32, p + 2)
        else:
            raise CheckError("%s: unexpected ggml type %d" % (name, gt))
        expect(start + size <= len(buf), name + " runs past the end of the file")
        tensors[name] = (ne, gt, a.reshape(list(reversed(ne))))
        end = off + size
    expect(len(tensors) == len(infos), "duplicate tensor names")
    return kv, tensors


def kval(kv, key):
    t, v = kv[key]
    return v if t == 8 else (v[1] if t != 9 else v)


def expected_tensors(cfg):
    """llama.cpp's tensor names and ne per arch (src/models/gpt2.cpp,
    llama-arch.cpp), written out independently of the exporter."""
    d, Fd, V, dh = cfg.d_model, cfg.d_ff, cfg.vocab, cfg.d_head
    e = {"token_embd.weight": [d, V], "output_norm.weight": [d]}
    if cfg.arch == "gpt2":
        e.update({"position_embd.weight": [d, cfg.ctx], "output_norm.bias": [d]})
    if not cfg.tie_embeddings:
        e["output.weight"] = [d, V]
    for L in range(cfg.n_layer):
        b = "blk.%d." % L
        e.update({b + "attn_norm.weight": [d], b + "ffn_norm.weight": [d],
                  b + "ffn_up.weight": [d, Fd], b + "ffn_down.weight": [Fd, d],
                  b + "attn_output.weight": [cfg.n_head * dh, d]})
        if cfg.arch == "gpt2":
            e.update({b + "attn_norm.bias": [d], b + "ffn_norm.bias": [d],
                      b + "attn_qkv.weight": [d, 3 * d], b + "attn_qkv.bias": [3 * d],
                      b + "attn_output.bias": [d], b + "ffn_up.bias": [Fd],
                      b + "ffn_down.bias": [d]})
        else:
            e.update({b + "attn_q.weight": [d, cfg.n_head * dh],
                      b + "attn_k.weight": [d, cfg.n_kv_head * dh],
                      b + "attn_v.weight": [d, cfg.n_kv_head * dh],
                      b + "ffn_gate.weight": [d, Fd]})
    return e


def numpy_forward(cfg, T, ids):
    """A plain per-position, per-head forward pass over the weights as read
    back from the GGUF (float64), in the style of llama2.c: no shared code
    with reference.py.  Returns the same hook dict."""
    W = {k: v[2].astype(np.float64) for k, v in T.items()}
    n, d, H, Hk, dh = len(ids), cfg.d_model, cfg.n_head, cfg.n_kv_head, cfg.d_head
    gpt2 = cfg.arch == "gpt2"
    out = {}

    def norm(x, w, b, prefix):
        s = np.zeros((n, 1))
        y = np.zeros_like(x)
        for t in range(n):
            if gpt2:
                mu = sum(x[t]) / d
                var = sum((x[t] - mu) ** 2) / d
                s[t, 0] = math.sqrt(var + cfg.eps)
                y[t] = (x[t] - mu) / s[t, 0] * w + b
            else:
                s[t, 0] = math.sqrt(sum(x[t] ** 2) / d + cfg.eps)
                y[t] = x[t] / s[t, 0] * w
        out[prefix + ".hook_scale"], out[prefix + ".hook_normalized"] = s, y
        return y

    def rope(v):          # v: [n, heads, dh]
        r = v.copy()
        for t in range(n):
            for i in range(cfg.rope_dim // 2):
                th = t * cfg.rope_base ** (-2.0 * i / cfg.rope_dim)
                c, s = math.cos(th), math.sin(th)
                a, b = v[t, :, 2 * i], v[t, :, 2 * i + 1]
                r[t, :, 2 * i], r[t, :, 2 * i + 1] = a * c - b * s, a * s + b * c
        return r

    x = np.array([W["token_embd.weight"][i] for i in ids])
    out["hook_embed"] = x.copy()
    if gpt2:
        out["hook_pos_embed"] = W["position_embd.weight"][:n].copy()
        x = x + out["hook_pos_embed"]
    for L in range(cfg.n_layer):
        b, p = "blk.%d." % L, "blocks.%d." % L
        out[p + "hook_resid_pre"] = x.copy()
        h = norm(x, W[b + "attn_norm.weight"], W.get(b + "attn_norm.bias"), p + "ln1")
        if gpt2:
            qkv = h @ W[b + "attn_qkv.weight"].T + W[b + "attn_qkv.bias"]
            q, k, v = qkv[:, :d], qkv[:, d:2 * d], qkv[:, 2 * d:]
        else:
            q, k, v = (h @ W[b + "attn_q.weight"].T, h @ W[b + "attn_k.weight"].T,
                       h @ W[b + "attn_v.weight"].T)
        q, k, v = q.reshape(n, H, dh), k.reshape(n, Hk, dh), v.reshape(n, Hk, dh)
        out[p + "attn.hook_q"], out[p + "attn.hook_k"], out[p + "attn.hook_v"] = q, k, v
        if not gpt2:
            q, k = rope(q), rope(k)
            out[p + "attn.hook_rot_q"], out[p + "attn.hook_rot_k"] = q, k
        sc = np.full((H, n, n), -np.inf)
        pat = np.zeros((H, n, n))
        z = np.zeros((n, H, dh))
        for hh in range(H):
            kh = hh // (H // Hk)
            for t in range(n):
                for u in range(t + 1):
                    sc[hh, t, u] = sum(q[t, hh] * k[u, kh]) / math.sqrt(dh)
                m = max(sc[hh, t, :t + 1])
                e = [math.exp(sc[hh, t, u] - m) for u in range(t + 1)]
                for u in range(t + 1):
                    pat[hh, t, u] = e[u] / sum(e)
                    z[t, hh] += pat[hh, t, u] * v[u, kh]
        out[p + "attn.hook_attn_scores"], out[p + "attn.hook_pattern"] = sc, pat
        out[p + "attn.hook_z"] = z
        a = z.reshape(n, H * dh) @ W[b + "attn_output.weight"].T
        if gpt2:
            a = a + W[b + "attn_output.bias"]
        out[p + "hook_attn_out"] = a
        x = x + a
        out[p + "hook_resid_mid"] = x.copy()
        h = norm(x, W[b + "ffn_norm.weight"], W.get(b + "ffn_norm.bias"), p + "ln2")
        if gpt2:
            pre = h @ W[b + "ffn_up.weight"].T + W[b + "ffn_up.bias"]
            post = 0.5 * pre * (1 + np.tanh(math.sqrt(2 / math.pi) * (pre + 0.044715 * pre ** 3)))
            m = post @ W[b + "ffn_down.weight"].T + W[b + "ffn_down.bias"]
        else:
            pre = h @ W[b + "ffn_gate.weight"].T
            lin = h @ W[b + "ffn_up.weight"].T
            out[p + "mlp.hook_pre_linear"] = lin
            post = pre / (1 + np.exp(-pre)) * lin
            m = post @ W[b + "ffn_down.weight"].T
        out[p + "mlp.hook_pre"], out[p + "mlp.hook_post"] = pre, post
        out[p + "hook_mlp_out"] = m
        x = x + m
        out[p + "hook_resid_post"] = x.copy()
    h = norm(x, W["output_norm.weight"], W.get("output_norm.bias"), "ln_final")
    out["unembed.hook_out"] = h @ W.get("output.weight", W["token_embd.weight"]).T
    return out


def max_diff(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    if a.shape != b.shape:
        return math.inf
    inf_a, inf_b = np.isinf(a), np.isinf(b)
    if not np.array_equal(inf_a, inf_b) or not np.array_equal(a[inf_a], b[inf_b]):
        return math.inf
    fin = ~inf_a
    return float(np.max(np.abs(a[fin] - b[fin]), initial=0.0))


def check_one(fixdir, which, fresh_dir):
    name, cfg, model, tok, ids, text = build(which)
    gpath = os.path.join(fixdir, name + ".gguf")
    hdir = os.path.join(fixdir, name)
    report = []

    # 1. the committed files are what this script makes now (determinism)
    for rel in [name + ".gguf"] + [os.path.join(name, f) for f in sorted(os.listdir(os.path.join(fresh_dir, name)))]:
        a = open(os.path.join(fixdir, rel), "rb").read()
        b = open(os.path.join(fresh_dir, rel), "rb").read()
        expect(a == b, "%s differs from a fresh build" % rel)
    expect(sorted(os.listdir(hdir)) == sorted(os.listdir(os.path.join(fresh_dir, name))),
           name + ": fixture file list differs from a fresh build")

    # 2. the GGUF read back independently: keys, tensor names/shapes, values
    kv, T = read_gguf(gpath)
    a = cfg.arch
    want_kv = {"general.architecture": a, "general.name": name,
               a + ".context_length": cfg.ctx, a + ".embedding_length": cfg.d_model,
               a + ".block_count": cfg.n_layer, a + ".feed_forward_length": cfg.d_ff,
               a + ".attention.head_count": cfg.n_head,
               "tokenizer.ggml.model": tok["model"],
               "tokenizer.ggml.bos_token_id": tok["bos_token_id"],
               "tokenizer.ggml.eos_token_id": tok["eos_token_id"]}
    if a == "gpt2":
        want_kv[a + ".attention.layer_norm_epsilon"] = np.float32(cfg.eps)
    else:
        want_kv.update({a + ".attention.head_count_kv": cfg.n_kv_head,
                        a + ".attention.layer_norm_rms_epsilon": np.float32(cfg.eps),
                        a + ".rope.freq_base": np.float32(cfg.rope_base),
                        a + ".rope.dimension_count": cfg.rope_dim,
                        "tokenizer.ggml.unknown_token_id": 0,
                        "tokenizer.ggml.add_bos_token": True})
    for k, v in want_kv.items():
        expect(k in kv, "missing key " + k)
        expect(kval(kv, k) == v, "%s = %r, want %r" % (k, kval(kv, k), v))
    for k in ("bos_token_id", "eos_token_id"):
        expect(kv["tokenizer.ggml." + k][0] == 4, k + " is not UINT32")
    et, toks = kv["tokenizer.ggml.tokens"][1]
    expect(et == 8 and toks == tok["tokens"], "token list differs")
    et, types = kv["tokenizer.ggml.token_type"][1]
    expect(et == 5 and [x[1] for x in types] == tok["token_type"], "token_type differs")
    if a == "gpt2":
        et, merges = kv["tokenizer.ggml.merges"][1]
        expect(et == 8 and merges == tok["merges"], "merges differ")
    else:
        et, scores = kv["tokenizer.ggml.scores"][1]
        expect(et == 6 and [x[1] for x in scores] == tok["scores"], "scores differ")
    exp = expected_tensors(cfg)
    expect(set(T) == set(exp), "tensor names differ: %s" % sorted(set(T) ^ set(exp)))
    for k, ne in exp.items():
        expect(T[k][0] == ne, "%s ne %s, want %s" % (k, T[k][0], ne))
        expect(T[k][1] == 0, k + " is not F32")
    sd = {"token_embd.weight": model.tok_embd.weight, "output_norm.weight": model.lnf_w}
    if a == "gpt2":
        sd["blk.0.attn_qkv.weight"] = model.blocks[0].qkv.weight
        sd["blk.1.ffn_down.weight"] = model.blocks[1].down.weight
        sd["position_embd.weight"] = model.pos_embd.weight
    else:
        sd["blk.1.attn_k.weight"] = model.blocks[1].k.weight
        sd["output.weight"] = model.out.weight
    for k, t in sd.items():
        expect(np.array_equal(T[k][2], t.detach().numpy().astype(np.float32)), k + " values differ")
    report.append("gguf read back: %d keys, %d tensors, layout and values ok" % (len(kv), len(T)))

    # 3. saved hooks: complete, float32, C order; tokens
    tokens = np.load(os.path.join(hdir, "tokens.npy"))
    expect(tokens.dtype == np.int32 and tokens.tolist() == ids, "tokens.npy")
    expect(ids[0] == tok["bos_token_id"], "first token is not BOS")
    H = {}
    for k in R.hook_names(cfg):
        arr = np.load(os.path.join(hdir, k + ".npy"))
        expect(arr.dtype == np.float32 and arr.flags.c_contiguous, k + ": not float32 C order")
        H[k] = arr
    expect(len(H) + 2 == len(os.listdir(hdir)), "unexpected extra files in " + hdir)

    # 4. invariants
    worst_sum = 0.0
    for L in range(cfg.n_layer):
        pat = H["blocks.%d.attn.hook_pattern" % L].astype(np.float64)
        sc = H["blocks.%d.attn.hook_attn_scores" % L]
        worst_sum = max(worst_sum, float(np.max(np.abs(pat.sum(-1) - 1))))
        upper = np.triu(np.ones(sc.shape[1:], bool), 1)
        expect(np.all(np.isneginf(sc[:, upper])) and np.all(pat[:, upper] == 0), "mask")
        expect(np.all(np.isfinite(sc[:, ~upper])), "finite scores below the diagonal")
        if a == "llama":
            pre = "blocks.%d.attn." % L
            expect(np.array_equal(H[pre + "hook_rot_q"][0], H[pre + "hook_q"][0]), "rot_q[0] != q[0]")
            expect(np.array_equal(H[pre + "hook_rot_k"][0], H[pre + "hook_k"][0]), "rot_k[0] != k[0]")
            expect(max_diff(H[pre + "hook_rot_q"][1:], H[pre + "hook_q"][1:]) > 1e-3, "rope did nothing")
    expect(worst_sum < 1e-6, "softmax rows sum off by %g" % worst_sum)
    # attention should be clearly non-uniform: mean max-weight of rows with >= 4 keys
    pats = np.stack([H["blocks.%d.attn.hook_pattern" % L] for L in range(cfg.n_layer)])
    peak = float(pats[..., 4:, :].max(-1).mean())
    report.append("softmax rows sum to 1 (worst %.1e); masked scores -inf; mean row max %.2f"
                  % (worst_sum, peak) + ("; rot_q[0] == q[0]" if a == "llama" else ""))

    # 5. an independent NumPy forward over the GGUF's weights agrees
    ref = numpy_forward(cfg, T, ids)
    expect(set(ref) == set(H), "numpy forward fills different hooks: %s" % sorted(set(ref) ^ set(H)))
    worst = max((max_diff(ref[k], H[k]) / max(1.0, float(np.max(np.abs(H[k][np.isfinite(H[k])])))), k)
                for k in H)
    expect(worst[0] < 1e-6, "numpy forward disagrees at %s by %g" % (worst[1], worst[0]))
    report.append("independent numpy forward from the GGUF agrees (worst rel %.1e at %s)" % worst)

    # 6. a float32 forward (as the C engine computes) stays within tolerance
    m32 = make_model(cfg, SEEDS[which]).float()
    h32 = {}
    with torch.no_grad():
        m32(torch.tensor([ids]), h32)
    d32 = max((max_diff(h32[k].numpy(), H[k]), k) for k in H)
    expect(d32[0] < 1e-4, "float32 pass differs by %g at %s" % d32)
    report.append("float32 torch pass within %.1e of the fixtures (at %s)" % d32)

    # 7. hooks-off path gives the same logits, batched rows are independent
    with torch.no_grad():
        ids_t = torch.tensor([ids, ids[::-1]])
        lg = model(ids_t)
    expect(max_diff(lg[0].numpy().astype(np.float32), H["unembed.hook_out"]) < 1e-5, "hooks-off logits")
    value_range = max(float(np.max(np.abs(v[np.isfinite(v)]))) for v in H.values())
    report.append("hooks-off batched logits match; largest |value| %.2f; vocab %d" % (value_range, cfg.vocab))
    return report


def check_writer_roundtrip():
    """Writer features the fixtures do not use: every scalar type, number
    arrays, F16 and Q8_0 tensors, odd sizes."""
    import gguf_writer as G
    with tempfile.TemporaryDirectory() as tmp:
        p = os.path.join(tmp, "x.gguf")
        w = G.GGUFWriter(p)
        vals = [(G.GGUF_UINT8, 200), (G.GGUF_INT8, -100), (G.GGUF_UINT16, 60000),
                (G.GGUF_INT16, -30000), (G.GGUF_UINT32, 4000000000), (G.GGUF_INT32, -2000000000),
                (G.GGUF_FLOAT32, 0.25), (G.GGUF_BOOL, True), (G.GGUF_UINT64, 2 ** 63 + 5),
                (G.GGUF_INT64, -2 ** 62), (G.GGUF_FLOAT64, math.pi), (G.GGUF_STRING, "héllo ▁")]
        for i, (t, v) in enumerate(vals):
            w.add_kv("k%d" % i, v, t)
        w.add_array("arr.u16", [1, 2, 65535], G.GGUF_UINT16)
        w.add_array("arr.f64", np.array([0.5, -2.0]))
        w.add_array("arr.str", ["a", "", "ü"])
        rng = np.random.default_rng(0)
        t32 = rng.standard_normal((3, 5)).astype(np.float32)
        t16 = rng.standard_normal((7,)).astype(np.float32)
        tq = rng.standard_normal((2, 2, 64)).astype(np.float32)
        w.add_tensor("a", t32)
        w.add_tensor("b", t16, "F16")
        w.add_tensor("c", tq, "Q8_0")
        w.write()
        kv, T = read_gguf(p)
        for i, (t, v) in enumerate(vals):
            got_t, got = kv["k%d" % i]
            got = got if t == 8 else got[1]
            expect(got_t == t, "k%d type" % i)
            expect(got == (np.float32(v) if t == G.GGUF_FLOAT32 else v), "k%d = %r, want %r" % (i, got, v))
        expect(kv["arr.u16"][1] == (2, [(2, 1), (2, 2), (2, 65535)]), "u16 array")
        expect(kv["arr.f64"][1] == (12, [(12, 0.5), (12, -2.0)]), "f64 array")
        expect(kv["arr.str"][1] == (8, ["a", "", "ü"]), "string array")
        expect(T["a"][0] == [5, 3] and np.array_equal(T["a"][2], t32), "F32 tensor")
        expect(T["b"][1] == 1 and np.array_equal(T["b"][2], t16.astype(np.float16).astype(np.float32)), "F16")
        expect(T["c"][0] == [64, 2, 2] and T["c"][1] == 8, "Q8_0 header")
        qerr = float(np.max(np.abs(T["c"][2] - tq)))
        expect(qerr < np.max(np.abs(tq)) / 127 * 0.51 + 1e-3, "Q8_0 error %g" % qerr)
        expect(np.allclose(G.dequantize_q8_0(G.quantize_q8_0(tq), tq.size), T["c"][2].reshape(-1)), "Q8_0")
    return "writer round trip: 12 scalar types, 3 arrays, F32/F16/Q8_0 tensors ok (Q8_0 max err %.3f)" % qerr


def check_export_variants():
    """attn_only models and F16 / Q8_0 exports (used for the shipped models)
    load through the independent reader and give the reference's logits."""
    lines = []
    with tempfile.TemporaryDirectory() as tmp:
        for base, tok_fn, seed in ((GPT2_CFG, gpt2_tokenizer, 11), (LLAMA_CFG, llama_tokenizer, 12)):
            tok, ids, _ = tok_fn()
            cfg = R.Config(**{**base.__dict__, "vocab": len(tok["tokens"]), "attn_only": True})
            model = make_model(cfg, seed)
            want = run_hooks(model, ids)
            expect(not np.any(want["blocks.0.hook_mlp_out"]), "attn_only mlp_out is not zero")
            for dtype, tol in (("F32", 1e-6), ("F16", 2e-2), ("Q8_0", 5e-2)):
                p = os.path.join(tmp, "%s-%s.gguf" % (cfg.arch, dtype))
                R.export_gguf(model, cfg, p, "t", tok, dtype)
                kv, T = read_gguf(p)
                expect(set(T) == set(expected_tensors(cfg)), "attn_only tensor names")
                expect(not np.any(T["blk.1.ffn_down.weight"][2]), "attn_only ffn_down not zero")
                got = numpy_forward(cfg, T, ids)
                common = [k for k in want if not k.startswith(("blocks.0.ln2", "blocks.1.ln2"))]
                err = max(max_diff(got[k], want[k]) / max(1.0, float(np.max(np.abs(want[k][np.isfinite(want[k])]))))
                          for k in common)
                expect(err < tol, "%s attn_only %s: rel err %g" % (cfg.arch, dtype, err))
                lines.append("%s %s %.1e" % (cfg.arch, dtype, err))
    return "attn_only exports load and match (worst rel err per dtype: %s)" % ", ".join(lines)


def check(fixdir):
    ok = True
    with tempfile.TemporaryDirectory() as fresh:
        for which in ("tiny-gpt2", "tiny-llama"):
            write_fixture(fresh, which)
        for which in DECODERS:
            write_decoder_fixture(fresh, which)
        for which in DEEPSEEK2S:
            write_deepseek2_fixture(fresh, which)
        for which in ENCODERS:
            write_encoder_fixture(fresh, which)
        for which in ENCDECS:
            write_encdec_fixture(fresh, which)
        for which in T5S:
            write_t5_fixture(fresh, which)
        V.write_image_fixtures(fresh)
        V.write_vit_fixture(fresh)
        try:
            print(check_writer_roundtrip())
            print(check_export_variants())
        except CheckError as e:
            print("FAIL writer:", e)
            ok = False
        # each family's fixtures and its check (CheckError, OSError and
        # KeyError name the fixture and go on to the next)
        families = [(("tiny-gpt2", "tiny-llama"), check_one), (DECODERS, check_decoder),
                    (DEEPSEEK2S, check_deepseek2), (ENCODERS, check_encoder), (ENCDECS, check_encdec),
                    (T5S, check_t5)]
        for names, check_fn in families:
            for which in names:
                try:
                    for line in check_fn(fixdir, which, fresh):
                        print("%s: %s" % (which, line))
                except (CheckError, OSError, KeyError) as e:
                    print("FAIL %s: %s" % (which, e))
                    ok = False
        try:
            print(V.check_image_fixtures(fixdir))
            print(V.check_vit_fixture(fixdir, fresh))
        except (ValueError, OSError, KeyError) as e:
            print("FAIL vit/images:", e)
            ok = False
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(fixdir) for f in fs)
    print("fixtures total %.0f KiB" % (total / 1024))
    print("all checks passed" if ok else "CHECKS FAILED")
    return ok


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--check", action="store_true", help="only check the existing fixtures")
    ap.add_argument("--out", default=FIXTURES, help="fixtures folder (default tests/fixtures)")
    args = ap.parse_args()
    torch.set_num_threads(1)
    if not args.check:
        os.makedirs(args.out, exist_ok=True)
        for which in ("tiny-gpt2", "tiny-llama"):
            write_fixture(args.out, which)
            print("wrote", os.path.join(args.out, which + ".gguf"), "and", os.path.join(args.out, which) + "/")
        for which in DECODERS:
            write_decoder_fixture(args.out, which)
            print("wrote", os.path.join(args.out, which + ".gguf"), "and", os.path.join(args.out, which) + "/")
        for which in DEEPSEEK2S:
            write_deepseek2_fixture(args.out, which)
            print("wrote", os.path.join(args.out, which + ".gguf"), "and", os.path.join(args.out, which) + "/")
        for which in ENCODERS:
            write_encoder_fixture(args.out, which)
            print("wrote", os.path.join(args.out, which + ".gguf"), "and", os.path.join(args.out, which) + "/")
        for which in ENCDECS:
            write_encdec_fixture(args.out, which)
            print("wrote", os.path.join(args.out, which + ".gguf"), "and", os.path.join(args.out, which) + "/")
        for which in T5S:
            write_t5_fixture(args.out, which)
            print("wrote", os.path.join(args.out, which + ".gguf"), "and", os.path.join(args.out, which) + "/")
        V.write_image_fixtures(args.out)
        V.write_vit_fixture(args.out)
        print("wrote", os.path.join(args.out, "image") + "/,", os.path.join(args.out, "tiny-vit.gguf"), "and",
              os.path.join(args.out, "tiny-vit") + "/")
    sys.exit(0 if check(args.out) else 1)


if __name__ == "__main__":
    main()
