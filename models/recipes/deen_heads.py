#!/usr/bin/python3
"""Which of de-en's cross-attention heads align source and target?

    python3 deen_heads.py [CHECKPOINT]   # after train_deen.py (default work/de-en.pt): writes
                                         # work/de-en.heads.json

Every cross-attention head (decoder layer L, head H) is scored on the
held-out pairs (test and validation splits), teacher-forced (decoder input <s> + the reference's
pieces; source <s> + the German's), from reference.EncDec's hooks
(decoder.L.cross_attn.hook_pattern [head, n_dec, n_enc]). The row of
decoder position i is the query that predicts target piece i+1.

- lexical: word links from the dictionary itself. A German word a and an
  English word b of a test pair are linked when the training split has the
  one-word pair a -> b (case ignored). For each piece of b, the weight the row
  predicting it puts on a's pieces; averaged over all linked pieces, with
  the same average for uniform attention over the source as the baseline.
- monotone: per pair (3+ target pieces, 3+ German pieces), the Pearson
  correlation between i and the row's centre of mass over the source's
  German pieces (the <s> column left out, the row renormalised), averaged
  over the pairs: 1 for a head that walks along the source as the target
  goes on; also over the pairs whose German is one word (compounds and
  long words cut into pieces) alone.
- bos: the mean weight on the source's <s> (a head parked there does little).
"""
import collections
import json
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference as R  # noqa: E402
import train_deen as T  # noqa: E402


def word_index(tok, text):
    """The word (space-separated, 0-based) of each piece of tok.encode(text)."""
    out, w = [], -1
    for p in tok.sp.encode(text, out_type=str):
        if p.startswith("\u2581") or w < 0:
            w += 1
        out.append(w)
    return out


def main():
    torch.set_num_threads(1)
    tok = T.load_tokenizer()
    cfg, model = T.make_model(tok.n_vocab)
    model.load_state_dict(torch.load(sys.argv[1] if len(sys.argv) > 1 else os.path.join(T.WORK, T.NAME + ".pt")))
    model.eval()
    train, test = T.load_split("train"), T.load_split("test") + T.load_split("val")
    lex = collections.defaultdict(set)
    for d, e in train:
        if " " not in d and " " not in e:
            lex[d.lower()].add(e.lower())
    nL, nH = cfg.n_dec, cfg.n_head
    lexical, lex_base, n_links = np.zeros((nL, nH)), 0.0, 0
    mono, n_mono = np.zeros((nL, nH)), 0
    mono_c, n_mono_c = np.zeros((nL, nH)), 0
    bos, n_rows = np.zeros((nL, nH)), 0
    examples = []
    for d, e in test:
        src = [tok.bos] + tok.encode(d)
        tgt = [tok.bos] + tok.encode(e)
        hooks = {}
        with torch.no_grad():
            model(torch.tensor([src]), torch.tensor([tgt]), hooks)
        P = np.stack([hooks["decoder.%d.cross_attn.hook_pattern" % L].numpy() for L in range(nL)])  # L,H,T,S
        S, Tn = len(src), len(tgt)
        bos += P[:, :, :, 0].sum(-1)
        n_rows += Tn
        # monotone
        if Tn - 1 >= 3 and S - 1 >= 3:
            rows = P[:, :, :Tn - 1, 1:]
            rows = rows / rows.sum(-1, keepdims=True)
            com = (rows * np.arange(1, S)).sum(-1)              # L,H,T-1
            i = np.arange(Tn - 1)
            ic = i - i.mean()
            cc = com - com.mean(-1, keepdims=True)
            den = np.sqrt((ic ** 2).sum() * (cc ** 2).sum(-1))
            r = np.where(den > 0, (cc * ic).sum(-1) / np.maximum(den, 1e-12), 0.0)
            mono += r
            n_mono += 1
            if " " not in d:          # one German word: a compound's pieces
                mono_c += r
                n_mono_c += 1
        # lexical links
        dw, ew = d.split(), e.split()
        if len(dw) < 2 or len(ew) < 2:
            continue
        links = [(a, b) for a, x in enumerate(dw) for b, y in enumerate(ew) if y.lower() in lex.get(x.lower(), ())]
        if not links:
            continue
        sw, tw = word_index(tok, d), word_index(tok, e)
        for a, b in links:
            cols = [1 + j for j, w in enumerate(sw) if w == a]
            for k, w in enumerate(tw):
                if w != b:
                    continue
                row = k            # target piece k+1 (1-based in tgt) is predicted by row k
                lexical += P[:, :, row, cols].sum(-1)
                lex_base += len(cols) / S
                n_links += 1
        if len(examples) < 30:
            examples.append(dict(de=d, en=e, links=[(dw[a], ew[b]) for a, b in links]))
    res = dict(n_pairs=len(test), lexical_links=n_links, lexical=(lexical / n_links).round(4).tolist(),
               lexical_uniform=round(lex_base / n_links, 4), monotone_pairs=n_mono,
               monotone=(mono / n_mono).round(4).tolist(), monotone_compound_pairs=n_mono_c,
               monotone_compound=(mono_c / n_mono_c).round(4).tolist(), bos=(bos / n_rows).round(4).tolist(),
               link_examples=examples)
    order = sorted(((res["lexical"][L][H], L, H) for L in range(nL) for H in range(nH)), reverse=True)
    res["ranking"] = ["%d.%d lexical %.3f monotone %.3f (one-word sources %.3f) bos %.3f"
                      % (L, H, s, res["monotone"][L][H], res["monotone_compound"][L][H], res["bos"][L][H])
                      for s, L, H in order]
    with open(os.path.join(T.WORK, T.NAME + ".heads.json"), "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1, ensure_ascii=False)
    print("%d dictionary links (uniform attention: %.3f on the linked word)" % (n_links, res["lexical_uniform"]))
    for line in res["ranking"]:
        print(line)


if __name__ == "__main__":
    main()
