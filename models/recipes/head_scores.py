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

austen-bert's encoder scores ([CLS], [SEP], previous, next, self, pronoun
and subject heads) are bert_report's, called by export_bert.py; see the
comment above it.

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



# -- BERT (austen-bert, export_bert.py) ----------------------------------------
# Encoder heads see both ways, so besides the previous token a head can read
# the NEXT one, and [CLS]/[SEP] serve as resting places. Scores on the
# validation text: 8 probes [CLS] A [SEP] B [SEP] (A: 62 pieces, B: the 63
# after, types 0/1; T = 128), consecutive from the split's start; each score
# is the mean over all query positions i of:
#   cls  weight on position 0        sep  summed weight on the two [SEP]s
#   prev weight on i-1 (i >= 1)      next weight on i+1 (i <= T-2)
#   self weight on i
# Subject heads: in hand-written sentences (below; never in the corpus), the
# weight from a pronoun to the name it stands for, and from a verb to its
# subject across a clause ("The lady who lived at the cottage was ..."),
# with how often that word is the head's most-attended piece (hit rate).
BERT_PROBES, BERT_A, BERT_B = 8, 62, 63

PRONOUNS = [
    "<Elinor was very tired, and >she went up to her room.",
    "<Marianne sat down at the piano, but >she could not play.",
    "Mr. <Darcy looked at the letter again, and >he smiled.",
    "<Emma was delighted with the plan, for >she loved to be useful.",
    "<Edward had been silent for some time, but now >he spoke.",
    "<Anne walked along the shore, and >she thought of the past.",
    "The <colonel was very kind to us, and >he stayed for dinner.",
    "Her <mother was in the drawing-room, where >she had been all morning.",
]
SUBJECTS = [
    "The <lady who lived at the cottage >was often seen walking.",
    "Her <sister, after a long silence, >said nothing.",
    "<Elizabeth, who had been reading all the morning, >walked into the garden.",
    "The young <man whom they had met at the ball >called the next day.",
    "My <father, in spite of all his fears, >agreed to the plan.",
    "<Harriet, though she was very tired, >danced with him.",
    "The <letters which she had written to him >were never answered.",
    "Mrs. <Jennings, with all her kindness, >laughed at them.",
]


def marked_ids(tok, text):
    """[CLS] ids [SEP], and the positions of the first piece of the words
    marked '>' (source) and '<' (target)."""
    ids, src, tgt = [tok.cls], None, None
    for chunk in text.split():
        if chunk[0] == ">":
            chunk, src = chunk[1:], len(ids)
        elif chunk[0] == "<":
            chunk, tgt = chunk[1:], len(ids)
        ids += tok.encode(chunk)
    return ids + [tok.sep], src, tgt


def link_scores(model, tok, items):
    """Mean weight source -> target and hit rate, [n_layer, n_head] each."""
    ws, hits = [], []
    for text in items:
        ids, s, t = marked_ids(tok, text)
        pats = patterns(model, ids)
        p = torch.stack([pats[k] for k in sorted(pats)])[:, :, s]  # [L, H, T]
        inner = p[:, :, 1:-1]
        ws.append(p[:, :, t].numpy())
        hits.append((inner.argmax(-1) + 1 == t).float().numpy())
    return np.mean(ws, 0), np.mean(hits, 0), float(np.mean([1 / len(marked_ids(tok, x)[0]) for x in items]))


def bert_probe(tok, va, k):
    a = [int(x) for x in va[k * 125:k * 125 + BERT_A]]
    b = [int(x) for x in va[k * 125 + BERT_A:k * 125 + BERT_A + BERT_B]]
    ids = [tok.cls] + a + [tok.sep] + b + [tok.sep]
    types = [0] * (len(a) + 2) + [1] * (len(b) + 1)
    return ids, types


def bert_scores(model, tok, va):
    """{name: [n_layer, n_head]} for cls, sep, prev, next, self."""
    acc = {k: [] for k in ("cls", "sep", "prev", "next", "self")}
    for k in range(BERT_PROBES):
        ids, types = bert_probe(tok, va, k)
        hooks = {}
        with torch.no_grad():
            model.encode(torch.tensor([ids]), torch.tensor([types]), hooks=hooks)
        p = torch.stack([hooks["blocks.%d.attn.hook_pattern" % i][0].float()
                         for i in range(len(hooks))])  # [L, H, T, T]
        t = p.shape[-1]
        i = torch.arange(t)
        seps = [j for j, x in enumerate(ids) if x == tok.sep]
        acc["cls"].append(p[..., 0].mean(-1).numpy())
        acc["sep"].append(p[..., seps].sum(-1).mean(-1).numpy())
        acc["prev"].append(p[:, :, i[1:], i[1:] - 1].mean(-1).numpy())
        acc["next"].append(p[:, :, i[:-1], i[:-1] + 1].mean(-1).numpy())
        acc["self"].append(p[:, :, i, i].mean(-1).numpy())
    return {k: np.mean(v, 0) for k, v in acc.items()}


def bert_report(model, tok, va):
    """Every head's scores (lists [L][H]) and the best head of each kind."""
    model.eval()
    sc = bert_scores(model, tok, va)
    sc["pronoun"], sc["pronoun_hits"], base_p = link_scores(model, tok, PRONOUNS)
    sc["subject"], sc["subject_hits"], base_s = link_scores(model, tok, SUBJECTS)
    best = {}
    for k, v in sc.items():
        layer, head = np.unravel_index(int(np.argmax(v)), v.shape)
        best[k] = dict(layer=int(layer), head=int(head), score=round(float(v[layer, head]), 4))
    out = {k: np.round(v, 4).tolist() for k, v in sc.items()}
    out.update(best=best, uniform_pronoun=round(base_p, 4), uniform_subject=round(base_s, 4),
               uniform_probe=round(1 / (BERT_A + BERT_B + 3), 4),
               pronoun_items=PRONOUNS, subject_items=SUBJECTS)
    return out

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
