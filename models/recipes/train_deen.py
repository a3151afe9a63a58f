#!/usr/bin/python3
"""de-en: a small original Transformer (Vaswani et al.) that translates
short German dictionary entries into English, trained on the dictionary
Debian ships (package trans-de-en, /usr/share/trans/de-en: Frank Richter's
TU Chemnitz dictionary, GPL 2+).

    python3 train_deen.py                 # data, tokenizer, training, evaluation, export
    python3 train_deen.py --steps 20      # a smoke run of the whole recipe (writes nothing shipped
                                          # unless --export is given)
    python3 train_deen.py --export-only   # evaluation and export from work/de-en.pt

Data (`pairs`): each line `German :: English` is split at ` | ` into its
aligned sub-entries (headword, plural, participles, examples); a sub-entry
is kept when neither side holds `;` (synonyms or senses), brackets `( ) [ ]
< >` or `/`, or an abbreviation (a letter followed by `.`: jd., etw., sth.,
[ugs.] ...), once the grammar labels `{m}` `{f}` `{pl}` `{adj}` ... are
removed, and each side is 1..4 words. Pairs are grouped by their German
side and a German side with more than one distinct English side (several
senses) is dropped, so every kept source has one reference. The groups are
shuffled (seed 17); 2,000 are the held-out test split, 1,000 validation,
the rest training. The tokenizer and the model never see the test split.

Tokenizer: one SentencePiece BPE vocabulary of 4,000 pieces for both
languages (spm.py's options: byte fallback, identity normalisation, a "▁"
prefix), trained on the training split's German and English sides, one
per line. In the GGUF it is a llama-style SentencePiece vocabulary with
add_bos_token, which is what attnscope's `source` and `prompt` read:
source = <s> + pieces(German), decoder = <s> (the decoder start token) +
pieces(English), the target ends with </s>.

Model: reference.EncDec, i.e. PyTorch's own nn.Transformer (Post-LN,
ReLU, no dropout) with embeddings times sqrt(d) plus sinusoids, one
embedding for both languages, tied to the output projection (with a
bias). d 192, 3 + 3 layers, 4 heads, d_ff 768.

Training: batches of 128 pairs whose sources have one length (no padding
in the encoder, so the model needs no masks beyond the causal one; targets
padded at the end, where the causal mask keeps them from the real
positions, and ignored by the loss); cross-entropy with label smoothing
0.1; AdamW (betas 0.9/0.98, weight decay 0.01 on matrices), linear warmup
over 400 steps, cosine decay to 10% by step 3,600 (the last); gradient clipping at
1; float32, one thread (torch.set_num_threads(1)), under `nice`. The
exported weights are the checkpoint with the best validation loss.

Evaluation (test split): greedy decoding up to 24 tokens; exact match (the
decoded string equals the reference) and chrF (Popovic 2015: character
n-grams of orders 1..6 of the strings without spaces, precision and recall
over the whole split per order, averaged over the orders, F with beta 2),
written here from that definition. attnscope's own greedy output on a
sample (`source TEXT; gen N`) is checked against these decodings by
deen_check.py.

Writes work/deen_{train,val,test}.tsv, work/deen_spm.model,
work/de-en.pt, work/de-en.results.json, work/de-en.test_out.tsv,
models/de-en.gguf, tests/fixtures/models/de-en.{source,tokens,logits}.npy,
de-en.greedy.tsv (PyTorch's greedy ids for 25 sources) and
tests/fixtures/models/de-en/ (every hook, float64 reference).
"""
import argparse
import collections
import json
import math
import os
import random
import re
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import reference as R  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
WORK = os.path.join(HERE, "work")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "models")
DICT = "/usr/share/trans/de-en"
NAME = "de-en"

RECIPE = dict(seed=17, n_test=2000, n_val=1000, max_words=4, vocab=4000,
              d_model=192, n_enc=3, n_dec=3, n_head=4, d_ff=768, ctx=64,
              batch=128, steps=3600, warmup=400, lr=1e-3, min_lr_frac=0.1, wd=0.01,
              smoothing=0.1, eval_every=1000, max_minutes=38, max_gen=24)

# the fixture pair (test_models.c and the every-hook fixture): a compound
FIXTURE_SRC, FIXTURE_TGT = "Hausaufgabe", "homework"
# sources whose greedy translations test_models.c asks attnscope for (its
# own tokenizer, `source TEXT`, then `gen`): the first 20 of the test split
# and a few compounds
GREEDY_EXTRA = ["Hausaufgabe", "Holzfensterrahmen", "Kinderzimmer", "Wasserflasche", "Haustür"]


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


# --------------------------------------------------------------------- data

LABEL = re.compile(r"\s*\{[^}]*\}")
BAD = re.compile(r"[()\[\]<>{}/;]")
ABBR = re.compile(r"\w\.")


def clean(side):
    s = LABEL.sub("", side).strip()
    if not s or BAD.search(s) or ABBR.search(s) or len(s.split()) > RECIPE["max_words"]:
        return None
    return " ".join(s.split())


def read_pairs(path=DICT):
    pairs = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("#") or " :: " not in line:
                continue
            de, en = line.rstrip("\n").split(" :: ", 1)
            ds, es = de.split(" | "), en.split(" | ")
            if len(ds) != len(es):
                continue
            for d, e in zip(ds, es):
                d, e = clean(d), clean(e)
                if d and e:
                    pairs.append((d, e))
    return pairs


def make_splits():
    pairs = read_pairs()
    groups = collections.OrderedDict()
    for d, e in pairs:
        groups.setdefault(d, set()).add(e)
    single = sorted((d, next(iter(es))) for d, es in groups.items() if len(es) == 1)
    random.Random(RECIPE["seed"]).shuffle(single)
    nt, nv = RECIPE["n_test"], RECIPE["n_val"]
    splits = {"test": single[:nt], "val": single[nt:nt + nv], "train": single[nt + nv:]}
    stats = dict(sub_entries_kept=len(pairs), german_sides=len(groups), single_sense=len(single),
                 **{"n_" + k: len(v) for k, v in splits.items()})
    for k, v in splits.items():
        with open(os.path.join(WORK, "deen_%s.tsv" % k), "w", encoding="utf-8") as f:
            f.writelines("%s\t%s\n" % p for p in v)
    return stats


def load_split(name):
    with open(os.path.join(WORK, "deen_%s.tsv" % name), encoding="utf-8") as f:
        return [tuple(line.rstrip("\n").split("\t")) for line in f]


# ---------------------------------------------------------------- tokenizer

def train_tokenizer(train):
    import sentencepiece as spm
    lines = os.path.join(WORK, "deen_spm.lines.txt")
    with open(lines, "w", encoding="utf-8") as f:
        for d, e in train:
            f.write(d + "\n" + e + "\n")
    spm.SentencePieceTrainer.train(
        input=lines, model_prefix=os.path.join(WORK, "deen_spm"), model_type="bpe",
        vocab_size=RECIPE["vocab"], byte_fallback=True, character_coverage=1.0,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        normalization_rule_name="identity", remove_extra_whitespaces=False,
        add_dummy_prefix=True, split_digits=True, num_threads=1, minloglevel=1)
    os.remove(lines)


def load_tokenizer():
    import spm as S
    return S.Tokenizer(os.path.join(WORK, "deen_spm.model"))


def encode_pairs(tok, pairs):
    return [([tok.bos] + tok.encode(d), [tok.bos] + tok.encode(e) + [tok.eos]) for d, e in pairs]


# -------------------------------------------------------------------- model

def make_model(V):
    r = RECIPE
    cfg = R.EncDecConfig(vocab=V, d_model=r["d_model"], n_enc=r["n_enc"], n_dec=r["n_dec"],
                         n_head=r["n_head"], d_ff=r["d_ff"], ctx=r["ctx"], start=1)
    model = R.EncDec(cfg)
    with torch.no_grad():   # nn.Transformer's own init is xavier; the shared embedding N(0, 1/d)
        model.src_embd.weight.normal_(0.0, cfg.d_model ** -0.5)
    return cfg, model


class Fast:
    """EncDec's forward without its hooks and with the sinusoids computed
    once; the same modules. Checked against EncDec.forward at start."""

    def __init__(self, model, cfg):
        self.m, self.c = model, cfg
        self.pe = R.sinusoids(cfg.ctx, cfg.d_model).float()
        T = cfg.ctx
        self.mask = torch.zeros(T, T).masked_fill(torch.ones(T, T, dtype=torch.bool).triu(1), float("-inf"))
        self.s = math.sqrt(cfg.d_model)

    def embed(self, ids):
        return self.m.src_embd(ids) * self.s + self.pe[:ids.shape[1]]

    def encode(self, src):
        return self.m.tf.encoder(self.embed(src))

    def decode(self, mem, tgt):
        T = tgt.shape[1]
        h = self.m.tf.decoder(self.embed(tgt), mem, tgt_mask=self.mask[:T, :T])
        return h @ self.m.src_embd.weight.t() + self.m.out_b

    def __call__(self, src, tgt):
        return self.decode(self.encode(src), tgt)


def batches(data, batch, rng):
    """Endless batches of pairs whose sources have one length, the length
    drawn in proportion to its number of pairs."""
    by_len = collections.defaultdict(list)
    for s, t in data:
        by_len[len(s)].append((s, t))
    lens = sorted(by_len)
    weights = [len(by_len[n]) for n in lens]
    while True:
        n = rng.choices(lens, weights)[0]
        rows = rng.sample(by_len[n], min(batch, len(by_len[n])))
        yield collate(rows)


def collate(rows):
    src = torch.tensor([s for s, _ in rows])
    T = max(len(t) for _, t in rows) - 1
    tin = torch.full((len(rows), T), 2, dtype=torch.long)
    tout = torch.full((len(rows), T), -100, dtype=torch.long)
    for i, (_, t) in enumerate(rows):
        tin[i, :len(t) - 1] = torch.tensor(t[:-1])
        tout[i, :len(t) - 1] = torch.tensor(t[1:])
    return src, tin, tout


def eval_loss(fast, data):
    by_len = collections.defaultdict(list)
    for s, t in data:
        by_len[len(s)].append((s, t))
    tot, n = 0.0, 0
    with torch.no_grad():
        for rows in by_len.values():
            for i in range(0, len(rows), 256):
                src, tin, tout = collate(rows[i:i + 256])
                lg = fast(src, tin)
                tot += float(F.cross_entropy(lg.reshape(-1, lg.shape[-1]), tout.reshape(-1),
                                             ignore_index=-100, reduction="sum"))
                n += int((tout != -100).sum())
    return tot / n


def lr_at(step):
    r = RECIPE
    if step < r["warmup"]:
        return r["lr"] * (step + 1) / r["warmup"]
    p = min(1.0, (step - r["warmup"]) / max(1, r["steps"] - r["warmup"]))
    return r["lr"] * (r["min_lr_frac"] + (1 - r["min_lr_frac"]) * 0.5 * (1 + math.cos(math.pi * p)))


def train(model, cfg, tr, va):
    r = RECIPE
    fast = Fast(model, cfg)
    # the training path is EncDec's forward
    s, ti, _ = collate(tr[:1])
    with torch.no_grad():
        d = float((fast(s, ti) - model(s, ti)).abs().max())
    assert d < 1e-4, "Fast differs from EncDec.forward by %g" % d
    decay = [p for n, p in model.named_parameters() if p.dim() == 2 and "embd" not in n]
    rest = [p for n, p in model.named_parameters() if not (p.dim() == 2 and "embd" not in n)]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": r["wd"]}, {"params": rest, "weight_decay": 0.0}],
                            lr=r["lr"], betas=(0.9, 0.98), eps=1e-9)
    rng = random.Random(r["seed"])
    gen = batches(tr, r["batch"], rng)
    t0 = time.time()
    best, best_state, hist = float("inf"), None, []
    model.train()
    step = 0
    for step in range(r["steps"]):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        src, tin, tout = next(gen)
        lg = fast(src, tin)
        loss = F.cross_entropy(lg.reshape(-1, lg.shape[-1]), tout.reshape(-1), ignore_index=-100,
                               label_smoothing=r["smoothing"])
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        minutes = (time.time() - t0) / 60
        last = step + 1 == r["steps"] or minutes > r["max_minutes"]
        if (step + 1) % 100 == 0:
            log("step %d loss %.3f lr %.2e %.1f min" % (step + 1, float(loss), lr_at(step), minutes))
        if (step + 1) % r["eval_every"] == 0 or last:
            model.eval()
            vl = eval_loss(fast, va)
            model.train()
            hist.append(dict(step=step + 1, val_loss=vl, minutes=minutes))
            log(json.dumps(hist[-1]))
            if vl < best:
                best = vl
                best_state = {k: v.detach().clone() for k, v in model.state_dict().items()}
        if last:
            if minutes > r["max_minutes"]:
                log("time budget reached at step %d" % (step + 1))
            break
    model.load_state_dict(best_state)
    return dict(steps_run=step + 1, minutes=(time.time() - t0) / 60, best_val_loss=best, history=hist)


# --------------------------------------------------------------- evaluation

def greedy(fast, tok, sources, max_gen):
    """Greedy decoding, batched by source length: -> list of id lists (no
    start token, up to and without </s>)."""
    out = [None] * len(sources)
    by_len = collections.defaultdict(list)
    for i, s in enumerate(sources):
        by_len[len(s)].append(i)
    with torch.no_grad():
        for idx in by_len.values():
            for j in range(0, len(idx), 256):
                ii = idx[j:j + 256]
                src = torch.tensor([sources[i] for i in ii])
                mem = fast.encode(src)
                y = torch.full((len(ii), 1), tok.bos, dtype=torch.long)
                done = torch.zeros(len(ii), dtype=torch.bool)
                for _ in range(max_gen):
                    nxt = fast.decode(mem, y)[:, -1].argmax(-1)
                    y = torch.cat([y, nxt[:, None]], 1)
                    done |= nxt == tok.eos
                    if bool(done.all()):
                        break
                for k, i in enumerate(ii):
                    ids = y[k, 1:].tolist()
                    out[i] = ids[:ids.index(tok.eos)] if tok.eos in ids else ids
    return out


def char_ngrams(s, n):
    s = "".join(s.split())
    return collections.Counter(s[i:i + n] for i in range(len(s) - n + 1))


def chrf(hyps, refs, max_n=6, beta=2.0):
    """Corpus chrF (Popovic 2015), in percent: for each order n = 1..6 the
    clipped character n-gram matches over all pairs, divided by the
    hypotheses' n-grams (precision) and the references' (recall); both
    averaged over the orders that have n-grams on either side (all six on
    any real split); F_beta of the two averages."""
    match, nh, nr = [0] * max_n, [0] * max_n, [0] * max_n
    for h, r in zip(hyps, refs):
        for n in range(1, max_n + 1):
            ch, cr = char_ngrams(h, n), char_ngrams(r, n)
            match[n - 1] += sum(min(c, cr[g]) for g, c in ch.items())
            nh[n - 1] += sum(ch.values())
            nr[n - 1] += sum(cr.values())
    orders = [n for n in range(max_n) if nh[n] or nr[n]]   # a text shorter than n has no n-grams
    if not orders:
        return 0.0
    P = sum(match[n] / nh[n] if nh[n] else 0.0 for n in orders) / len(orders)
    Rc = sum(match[n] / nr[n] if nr[n] else 0.0 for n in orders) / len(orders)
    if P + Rc == 0:
        return 0.0
    return 100.0 * (1 + beta ** 2) * P * Rc / (beta ** 2 * P + Rc)


def check_chrf():
    """chrF by hand: hypothesis "ab", reference "abc". Order 1: 2 matches,
    2 hypothesis and 3 reference n-grams (P 1, R 2/3); order 2: 1, 1, 2
    (P 1, R 1/2); order 3: 0, 0, 1 (P 0, R 0); orders 4-6 have none and do
    not count. P = 2/3, R = (2/3 + 1/2)/3 = 7/18, F2 = 5PR / (4P + R) =
    14/33."""
    got = chrf(["ab"], ["abc"])
    assert abs(got - 1400.0 / 33) < 1e-9, got
    assert chrf(["a b c"], ["abc"]) == 100.0 and chrf(["xyz"], ["abc"]) == 0.0


def evaluate(model, cfg, tok, test):
    fast = Fast(model, cfg)
    model.eval()
    srcs = [[tok.bos] + tok.encode(d) for d, _ in test]
    t0 = time.time()
    outs = greedy(fast, tok, srcs, RECIPE["max_gen"])
    hyps = [tok.decode(o) for o in outs]
    refs = [e for _, e in test]
    em = sum(h == r for h, r in zip(hyps, refs)) / len(test)
    res = dict(n=len(test), exact_match=100.0 * em, chrf=chrf(hyps, refs),
               exact_match_casefold=100.0 * sum(h.lower() == r.lower() for h, r in zip(hyps, refs)) / len(test),
               decode_seconds=time.time() - t0)
    with open(os.path.join(WORK, NAME + ".test_out.tsv"), "w", encoding="utf-8") as f:
        for (d, e), h, o in zip(test, hyps, outs):
            f.write("%s\t%s\t%s\t%s\n" % (d, e, h, " ".join(map(str, o))))
    res["examples"] = [dict(de=d, ref=e, out=h) for (d, e), h in list(zip(test, hyps))[:40]]
    return res


# ------------------------------------------------------------------- export

def export(model, cfg, tok):
    import make_fixtures as MF
    path = os.path.join(ROOT, "models", NAME + ".gguf")
    R.export_encdec_gguf(model, cfg, path, NAME, tok.gguf_dict())
    src = [tok.bos] + tok.encode(FIXTURE_SRC)
    tgt = [tok.bos] + tok.encode(FIXTURE_TGT) + [tok.eos]
    fast = Fast(model, cfg)
    model.eval()
    with torch.no_grad():
        lg = fast(torch.tensor([src]), torch.tensor([tgt]))[0].numpy().astype(np.float32)
    np.save(os.path.join(FIXTURES, NAME + ".source.npy"), np.array(src, np.int32))
    np.save(os.path.join(FIXTURES, NAME + ".tokens.npy"), np.array(tgt, np.int32))
    np.save(os.path.join(FIXTURES, NAME + ".logits.npy"), lg)
    # every hook: the float64 EncDec (hooks on nn.Transformer's modules) with the float32 weights
    m64 = R.EncDec(cfg).double()
    m64.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
    hooks = MF.run_encdec_hooks(m64, src, tgt)
    d = float(np.abs(hooks["unembed.hook_out"] - lg).max())
    assert d < 1e-3, "float64 hooks' logits differ from the float32 recipe's by %g" % d
    MF.save_hooks(FIXTURES, NAME, cfg, {"tokens": [tok.sp.id_to_piece(i) for i in range(tok.n_vocab)]},
                  tgt, FIXTURE_SRC + " -> " + FIXTURE_TGT, hooks, list(hooks))
    np.save(os.path.join(FIXTURES, NAME, "source.npy"), np.array(src, np.int32))
    # PyTorch's greedy ids for some sources: "German<TAB>id id ..." (up to </s>, without it)
    srcs = [d for d, _ in load_split("test")[:20]] + GREEDY_EXTRA
    outs = greedy(fast, tok, [[tok.bos] + tok.encode(d) for d in srcs], RECIPE["max_gen"])
    with open(os.path.join(FIXTURES, NAME + ".greedy.tsv"), "w", encoding="utf-8") as f:
        f.writelines("%s\t%s\n" % (d, " ".join(map(str, o))) for d, o in zip(srcs, outs))
    link = os.path.join(FIXTURES, NAME + ".gguf")
    if not os.path.lexists(link):
        os.symlink(os.path.join("..", "..", "..", "models", NAME + ".gguf"), link)
    return dict(gguf=path, bytes=os.path.getsize(path), fixture_hooks=len(hooks), float64_vs_float32=d)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int)
    ap.add_argument("--export-only", action="store_true")
    ap.add_argument("--export", action="store_true", help="export after a --steps run too")
    a = ap.parse_args()
    torch.set_num_threads(1)
    torch.set_num_interop_threads(1)
    torch.manual_seed(RECIPE["seed"])
    os.makedirs(WORK, exist_ok=True)
    check_chrf()
    res = {}
    if a.steps:
        RECIPE["steps"] = a.steps
        RECIPE["eval_every"] = max(1, a.steps // 2)
    if not os.path.exists(os.path.join(WORK, "deen_test.tsv")):
        res["data"] = make_splits()
        log("data", res["data"])
    tr, va, te = load_split("train"), load_split("val"), load_split("test")
    assert not set(d for d, _ in te) & set(d for d, _ in tr), "a test source is in the training split"
    if not os.path.exists(os.path.join(WORK, "deen_spm.model")):
        train_tokenizer(tr)
    tok = load_tokenizer()
    trn, van = encode_pairs(tok, tr), encode_pairs(tok, va)
    cfg, model = make_model(tok.n_vocab)
    log("vocab %d, %d parameters, %d train pairs, %.2f source / %.2f target tokens a pair"
        % (tok.n_vocab, sum(p.numel() for p in model.parameters()), len(trn),
           np.mean([len(s) for s, _ in trn]), np.mean([len(t) for _, t in trn])))
    ckpt = os.path.join(WORK, NAME + ".pt")
    if a.export_only:
        model.load_state_dict(torch.load(ckpt))
        with open(os.path.join(WORK, NAME + ".results.json"), encoding="utf-8") as f:
            res = json.load(f)
    else:
        res["recipe"] = dict(RECIPE)
        res["train"] = train(model, cfg, trn, van)
        log("trained", {k: v for k, v in res["train"].items() if k != "history"})
        torch.save(model.state_dict(), ckpt if not a.steps else ckpt + ".smoke")
    res["test"] = evaluate(model, cfg, tok, te)
    log("test: exact match %.2f%%, chrF %.2f" % (res["test"]["exact_match"], res["test"]["chrf"]))
    for ex in res["test"]["examples"][:15]:
        log("  %s -> %s (ref %s)" % (ex["de"], ex["out"], ex["ref"]))
    if not a.steps or a.export:
        res["export"] = export(model, cfg, tok)
        log("export", res["export"])
    out = os.path.join(WORK, NAME + (".results.json" if not a.steps else ".smoke.json"))
    with open(out, "w", encoding="utf-8") as f:
        json.dump(res, f, indent=1, ensure_ascii=False)
    log("wrote", out)


if __name__ == "__main__":
    main()
