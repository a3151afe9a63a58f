#!/usr/bin/python3
"""Previous-token and induction scores of every attention head.

Both read `blocks.L.attn.hook_pattern` (softmax output, [H, T, T]) from
reference.py's hooks on one fixed probe sequence, in float32, no autocast.

previous-token score of a head = mean over positions i = 1 .. T-1 of the
    attention weight from i to i-1.
    Probe for the text models: BOS followed by the first 255 tokens of the
    validation split (T = 256). Probe for the induction model: the induction
    probe below.

induction score of a head = on BOS + R + R, where R is 32 tokens drawn
    uniformly (numpy seed 1234) from the model's ordinary vocabulary (all
    tokens that are not control/unknown/byte tokens for SentencePiece; all but
    <|endoftext|> for GPT-2 BPE; the 256 byte tokens for the induction
    model), the mean over the 32 positions i = 33 .. 64 of the second copy of
    the attention weight from i to i - 31, the position right after the same
    token's earlier occurrence.

Usage: python3 head_scores.py NAME   (scores work/NAME.pt, the checkpoint
       train.py exported; train.py itself scores every model it trains)
"""
import numpy as np
import torch

PROBE_SEED = 1234
PROBE_LEN = 32


def induction_probe(bos, symbols, n=PROBE_LEN, seed=PROBE_SEED):
    """BOS + R + R as a list of ints; `symbols` are the ids R is drawn from."""
    rng = np.random.default_rng(seed)
    r = [int(x) for x in rng.choice(np.asarray(symbols), size=n)]
    return [bos] + r + r


def patterns(model, ids):
    """{layer: pattern [H, T, T] float32 tensor} for one sequence."""
    hooks = {}
    model.eval()
    with torch.no_grad():
        model(torch.tensor([ids], dtype=torch.long), hooks=hooks)
    out = {}
    for name, v in hooks.items():
        if name.endswith("attn.hook_pattern"):
            v = v.float()
            if v.dim() == 4:
                v = v[0]
            out[int(name.split(".")[1])] = v
    return out


def prev_token_scores(model, ids):
    """[n_layer, n_head] numpy array."""
    pats = patterns(model, ids)
    rows = []
    for layer in sorted(pats):
        p = pats[layer]
        t = p.shape[-1]
        idx = torch.arange(1, t)
        rows.append(p[:, idx, idx - 1].mean(-1).numpy())
    return np.stack(rows)


def induction_scores(model, ids):
    """[n_layer, n_head]; `ids` = BOS + R + R as from induction_probe."""
    n = (len(ids) - 1) // 2
    pats = patterns(model, ids)
    rows = []
    for layer in sorted(pats):
        p = pats[layer]
        i = torch.arange(1 + n, 1 + 2 * n)
        rows.append(p[:, i, i - n + 1].mean(-1).numpy())
    return np.stack(rows)


def table(prev, ind):
    """Markdown table: one row per head."""
    lines = ["| layer.head | previous-token | induction | role |",
             "|---|---|---|---|"]
    for layer in range(prev.shape[0]):
        for h in range(prev.shape[1]):
            role = []
            if prev[layer, h] >= 0.5:
                role.append("previous-token")
            if ind[layer, h] >= 0.5:
                role.append("induction")
            elif ind[layer, h] >= 0.2:
                role.append("weak induction")
            lines.append("| %d.%d | %.3f | %.3f | %s |" % (
                layer, h, prev[layer, h], ind[layer, h], ", ".join(role)))
    return "\n".join(lines)


def main():
    import os
    import sys
    import train
    name = sys.argv[1]
    r = train.RECIPES[name]
    cfg = train.reference.Config(**r["cfg"])
    model = train.reference.Model(cfg)
    model.load_state_dict(torch.load(os.path.join(train.WORK, name + ".pt"))["model"])
    tok = train.load_tokenizer(r["tokenizer"])
    probe_ind = induction_probe(tok.bos, tok.symbols)
    if r["tokenizer"] in ("bpe", "spm"):
        va = train.load_split("val", r["tokenizer"], tok)
        probe_prev = [tok.bos] + [int(t) for t in va[:255]]
    else:
        probe_prev = probe_ind
    print(table(prev_token_scores(model, probe_prev), induction_scores(model, probe_ind)))


if __name__ == "__main__":
    main()
