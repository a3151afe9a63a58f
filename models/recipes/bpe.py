#!/usr/bin/python3
"""Byte-level BPE in the manner of GPT-2: a trainer, an encoder, a decoder.

Pre-tokenizer: GPT-2's regex (python `regex` module). Alphabet: GPT-2's
byte-to-unicode table (bytes 33..126, 161..172, 174..255 map to the same code
point; the other 68 bytes map to U+0100, U+0101, ... in byte order; space is
'Ġ', newline 'Ċ'). Vocabulary: the 256 byte symbols first (in GPT-2's order,
i.e. the order of the table above), then one symbol per learned merge, then
<|endoftext|> (used as both BOS and EOS, token type 3 = control).

Training: pairs are counted over the pre-token counts of the training text;
each step merges the most frequent adjacent pair (ties: the pair whose
symbol strings sort first), updating pair counts incrementally, until the
vocabulary (without <|endoftext|>) has `vocab_size - 1` symbols.

Encoding: within each pre-token, repeatedly apply the lowest-rank merge
present (exactly what llama.cpp and attnscope's C tokenizer do). Special
tokens are never produced from text; callers prepend the BOS id themselves.

Usage: python3 bpe.py train --vocab 2048 --out work/bpe.json work/corpus_train.txt
       python3 bpe.py encode work/bpe.json "some text"
"""
import argparse
import collections
import heapq
import json
import sys

import regex

PAT = regex.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+""")
EOT = "<|endoftext|>"


def bytes_to_unicode():
    """GPT-2's reversible byte -> printable unicode character table."""
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))  # insertion order = GPT-2 token order


BYTE_ENC = bytes_to_unicode()
BYTE_DEC = {c: b for b, c in BYTE_ENC.items()}


def pretokenize(text):
    return PAT.findall(text)


def to_symbols(piece):
    return "".join(BYTE_ENC[b] for b in piece.encode("utf-8"))


def train(text, vocab_size, log=sys.stderr):
    """Learn merges; returns (tokens list, merges list of (a, b) strings)."""
    counts = collections.Counter(to_symbols(p) for p in pretokenize(text))
    tokens = list(BYTE_ENC.values())
    index = {t: i for i, t in enumerate(tokens)}
    words = [[index[c] for c in w] for w in counts]
    freq = list(counts.values())
    pairs = collections.defaultdict(int)
    where = collections.defaultdict(set)
    for wi, w in enumerate(words):
        for a, b in zip(w, w[1:]):
            pairs[a, b] += freq[wi]
            where[a, b].add(wi)

    def key(p):
        return (-pairs[p], tokens[p[0]], tokens[p[1]])

    heap = [(*key(p), p) for p in pairs]
    heapq.heapify(heap)
    merges = []
    while len(tokens) < vocab_size - 1 and heap:
        negc, sa, sb, p = heapq.heappop(heap)
        if pairs.get(p, 0) != -negc or -negc <= 0:
            continue  # stale entry
        if pairs[p] < 2:
            break
        a, b = p
        new = tokens[a] + tokens[b]
        merges.append((tokens[a], tokens[b]))
        if new in index:  # same string reached by another merge path
            nid = index[new]
        else:
            nid = len(tokens)
            tokens.append(new)
            index[new] = nid
        changed = set()
        for wi in list(where[p]):
            w, f = words[wi], freq[wi]
            for x, y in zip(w, w[1:]):
                pairs[x, y] -= f
                changed.add((x, y))
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and w[i] == a and w[i + 1] == b:
                    out.append(nid)
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            words[wi] = out
            for x, y in zip(out, out[1:]):
                pairs[x, y] += f
                where[x, y].add(wi)
                changed.add((x, y))
        del pairs[p]
        del where[p]
        changed.discard(p)
        for q in changed:
            if pairs.get(q, 0) > 0:
                heapq.heappush(heap, (*key(q), q))
            else:
                pairs.pop(q, None)
                where.pop(q, None)
        if log and len(merges) % 200 == 0:
            print("merge %d: %r + %r (count %d)" % (len(merges), sa, sb, -negc),
                  file=log)
    tokens.append(EOT)
    return tokens, merges


class Tokenizer:
    def __init__(self, tokens, merges):
        self.tokens = tokens
        self.merges = [tuple(m) for m in merges]
        self.ranks = {m: i for i, m in enumerate(self.merges)}
        self.index = {t: i for i, t in enumerate(tokens)}
        self.eot = self.index[EOT]
        self.cache = {}

    @classmethod
    def load(cls, path):
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        return cls(d["tokens"], d["merges"])

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"tokens": self.tokens,
                       "merges": [list(m) for m in self.merges]},
                      f, ensure_ascii=False)

    def bpe(self, sym):
        if sym in self.cache:
            return self.cache[sym]
        parts = list(sym)
        while len(parts) > 1:
            best = min(((self.ranks.get((x, y), 1 << 30), i)
                        for i, (x, y) in enumerate(zip(parts, parts[1:]))))
            if best[0] == 1 << 30:
                break
            i = best[1]
            parts[i:i + 2] = [parts[i] + parts[i + 1]]
        ids = [self.index[p] for p in parts]
        self.cache[sym] = ids
        return ids

    def encode(self, text):
        ids = []
        for p in pretokenize(text):
            ids.extend(self.bpe(to_symbols(p)))
        return ids

    def decode(self, ids):
        out = bytearray()
        for i in ids:
            t = self.tokens[i]
            if t == EOT:
                continue
            out.extend(BYTE_DEC[c] for c in t)
        return out.decode("utf-8", errors="replace")

    def gguf_dict(self):
        """Tokenizer metadata for reference.export_gguf."""
        return {
            "model": "gpt2",
            "tokens": self.tokens,
            "token_type": [3 if t == EOT else 1 for t in self.tokens],
            "merges": ["%s %s" % m for m in self.merges],
            "bos_token_id": self.eot,
            "eos_token_id": self.eot,
            "unknown_token_id": None,
            "add_bos_token": True,
            "add_space_prefix": False,
        }


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--vocab", type=int, default=2048)
    t.add_argument("--out", required=True)
    t.add_argument("text")
    e = sub.add_parser("encode")
    e.add_argument("model")
    e.add_argument("text")
    a = ap.parse_args()
    if a.cmd == "train":
        with open(a.text, encoding="utf-8") as f:
            text = f.read()
        tokens, merges = train(text, a.vocab)
        tok = Tokenizer(tokens, merges)
        tok.save(a.out)
        n = len(tok.encode(text))
        print("vocab %d, %d merges, %d tokens for %d chars (%.2f chars/token)"
              % (len(tokens), len(merges), n, len(text), len(text) / n))
    else:
        tok = Tokenizer.load(a.model)
        ids = tok.encode(a.text)
        print(ids)
        print([tok.tokens[i] for i in ids])
        assert tok.decode(ids) == a.text


if __name__ == "__main__":
    main()
