#!/usr/bin/python3
"""WordPiece in the manner of BERT's uncased tokenizer: a trainer, an encoder.

Pre-tokenizer (the same steps, in the same order, as llama.cpp's WPM
tokenizer, llm_tokenizer_wpm_session::preprocess): each code point is
replaced by the first code point of its NFD decomposition (that drops the
accent of a precomposed letter), then white space (Unicode White_Space)
ends a word, NUL, U+FFFD and control/format/private-use code points are
dropped, combining marks are dropped, letters are lower-cased (single code
point mappings only), and every punctuation character (\\p{P}, and the ASCII
symbols $ + < = > ^ ` | ~) and every CJK ideograph is a word of its own.

Vocabulary: [PAD] 0, [UNK] 1, [CLS] 2, [SEP] 3, [MASK] 4, then every
character of the training split twice (as a word start "x" and as a
continuation "##x", in code point order), then one piece per learned merge.
Training is BPE over the word counts, as the WordPiece trainer of Hugging
Face's tokenizers does it: a word starts as its first character followed by
"##" continuations; each step merges the most frequent adjacent pair (ties:
the pair whose strings sort first); "a" + "##b" gives "ab", "##a" + "##b"
gives "##ab". The merges themselves are not kept: encoding is BERT's
greedy longest-match-first over the pieces, so only the vocabulary matters.

Encoding: for each word, from its start, take the longest piece that
matches (a continuation piece "##x" after the first), and a word with any
position that no piece matches becomes a single [UNK].  BERT also maps a
word over 100 characters to [UNK]; llama.cpp does not, so this encoder
follows llama.cpp by default (`max_word_chars=None`); no word of the
corpus comes near 100 characters.

In a GGUF (llama.cpp's converter, conversion/bert.py `phantom`): "##x"
is stored as "x" and a word-start piece "x" as "\\u2581x"; the five
specials stay as they are, with token type 3 (control), the rest type 1.

Usage: python3 wordpiece.py train --vocab 5000 --out work/wordpiece.json work/corpus_train.txt
       python3 wordpiece.py encode work/wordpiece.json "some text"
       python3 wordpiece.py check build/llama-ref/llama.cpp/models/ggml-vocab-bert-bge.gguf
"""
import argparse
import collections
import heapq
import json
import sys
import unicodedata

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
PAD, UNK, CLS, SEP, MASK = range(5)
PHANTOM = "\u2581"

# Unicode White_Space, as llama.cpp's unicode tables list it
WHITESPACE = set(range(0x09, 0x0E)) | set(range(0x2000, 0x200B)) | {
    0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000}


# CJK ideograph blocks, each character a word of its own (BERT's
# _is_chinese_char, with the upper bound of one block as llama.cpp has it)
CJK = [(0x4E00, 0x9FFF), (0x3400, 0x4DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
       (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0xF900, 0xFAFF), (0x2F800, 0x2FA1F)]


def _is_cjk(cp):
    return any(lo <= cp <= hi for lo, hi in CJK)


def _nfd_first(c):
    return unicodedata.normalize("NFD", c)[0]


def _lower(c):
    lc = c.lower()
    return lc if len(lc) == 1 else c


def words(text):
    """Split text into lower-cased, accent-stripped words and punctuation."""
    out, cur = [], []
    for c in text:
        c = _nfd_first(c)
        cp = ord(c)
        if cp in WHITESPACE:
            if cur:
                out.append("".join(cur))
                cur = []
            continue
        cat = unicodedata.category(c)
        if cp == 0 or cp == 0xFFFD or cat in ("Cc", "Cf", "Co", "Cs"):
            continue
        if cat[0] == "M":
            continue
        s = _lower(c)
        if cat[0] == "P" or (cp < 0x7F and cat[0] == "S") or _is_cjk(cp):
            if cur:
                out.append("".join(cur))
                cur = []
            out.append(s)
        else:
            cur.append(s)
    if cur:
        out.append("".join(cur))
    return out


def train(text, vocab_size, log=sys.stderr):
    """Learn the vocabulary; returns the list of pieces (specials first)."""
    counts = collections.Counter(words(text))
    chars = sorted({c for w in counts for c in w})
    tokens = SPECIALS + chars + ["##" + c for c in chars]
    index = {t: i for i, t in enumerate(tokens)}
    seqs = [[index[w[0]]] + [index["##" + c] for c in w[1:]] for w in counts]
    freq = list(counts.values())
    pairs = collections.defaultdict(int)
    where = collections.defaultdict(set)
    for wi, w in enumerate(seqs):
        for a, b in zip(w, w[1:]):
            pairs[a, b] += freq[wi]
            where[a, b].add(wi)

    def merged(a, b):
        return tokens[a] + tokens[b][2:]

    def key(p):
        return (-pairs[p], tokens[p[0]], tokens[p[1]])

    heap = [(*key(p), p) for p in pairs]
    heapq.heapify(heap)
    n_merges = 0
    while len(tokens) < vocab_size and heap:
        negc, _, _, p = heapq.heappop(heap)
        if pairs.get(p, 0) != -negc or -negc < 2:
            if -negc < 2 and pairs.get(p, 0) == -negc:
                break
            continue  # stale entry
        a, b = p
        new = merged(a, b)
        if new not in index:
            index[new] = len(tokens)
            tokens.append(new)
        nid = index[new]
        changed = set()
        for wi in list(where[p]):
            w, f = seqs[wi], freq[wi]
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
            seqs[wi] = out
            for x, y in zip(out, out[1:]):
                pairs[x, y] += f
                where[x, y].add(wi)
                changed.add((x, y))
        pairs.pop(p, None)
        where.pop(p, None)
        changed.discard(p)
        for q in changed:
            if pairs.get(q, 0) > 0:
                heapq.heappush(heap, (*key(q), q))
            else:
                pairs.pop(q, None)
                where.pop(q, None)
        n_merges += 1
        if log and n_merges % 500 == 0:
            print("merge %d: %s (count %d), vocab %d"
                  % (n_merges, new, -negc, len(tokens)), file=log)
    return tokens


class Tokenizer:
    def __init__(self, tokens, max_word_chars=None):
        self.tokens = list(tokens)
        self.index = {t: i for i, t in enumerate(self.tokens)}
        if self.tokens[:5] != SPECIALS:
            raise ValueError("the vocabulary must start with %s" % SPECIALS)
        self.max_len = max(len(t) for t in self.tokens)
        self.max_word_chars = max_word_chars
        self.pad, self.unk, self.cls, self.sep, self.mask = PAD, UNK, CLS, SEP, MASK

    @classmethod
    def load(cls, path):
        with open(path, encoding="utf-8") as f:
            return cls(json.load(f)["tokens"])

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump({"tokens": self.tokens}, f, ensure_ascii=False, indent=0)

    def word_ids(self, w):
        if self.max_word_chars is not None and len(w) > self.max_word_chars:
            return [UNK]
        ids, i = [], 0
        while i < len(w):
            pre = "##" if i else ""
            for j in range(min(len(w), i + self.max_len), i, -1):
                t = self.index.get(pre + w[i:j])
                if t is not None and t >= len(SPECIALS):
                    ids.append(t)
                    i = j
                    break
            else:
                return [UNK]
        return ids

    def encode(self, text):
        """Ids of the text, without [CLS]/[SEP]."""
        out = []
        for w in words(text):
            out.extend(self.word_ids(w))
        return out

    def encode_words(self, text):
        """[(word, [ids])] for each word (for whole-word statistics)."""
        return [(w, self.word_ids(w)) for w in words(text)]

    def decode(self, ids):
        s = []
        for i in ids:
            t = self.tokens[i]
            if t.startswith("##"):
                s.append(t[2:])
            else:
                s.append((" " if s else "") + t)
        return "".join(s)

    def gguf_pieces(self):
        """Tokens and token types as llama.cpp's converter stores them."""
        toks, types = [], []
        for i, t in enumerate(self.tokens):
            if i < len(SPECIALS):
                toks.append(t)
                types.append(3)
            elif t.startswith("##"):
                toks.append(t[2:])
                types.append(1)
            else:
                toks.append(PHANTOM + t)
                types.append(1)
        return toks, types


def check_llama_vocab(gguf):
    """Encode llama.cpp's test strings (GGUF.inp) with the GGUF's own
    vocabulary turned back into BERT's pieces; returns the (text, ours,
    expected) triples that differ from llama.cpp's ids (GGUF.out)."""
    import make_fixtures
    kv, _ = make_fixtures.read_gguf(gguf)
    stored = kv["tokenizer.ggml.tokens"][1][1]
    types = [t for _, t in kv["tokenizer.ggml.token_type"][1][1]]
    pieces = [t if ty != 1 else t[1:] if t.startswith(PHANTOM) else "##" + t
              for t, ty in zip(stored, types)]
    unk = kv["tokenizer.ggml.unknown_token_id"][1][1]
    index = {t: i for i, t in enumerate(pieces) if types[i] == 1}
    max_len = max(len(t) for t in index)
    texts = open(gguf + ".inp", encoding="utf-8").read().split("\n__ggml_vocab_test__\n")
    expected = open(gguf + ".out", encoding="utf-8").read().split("\n")
    if texts[-1] == "" and expected[-1] == "":  # both files end in a separator
        texts, expected = texts[:-1], expected[:-1]
    bad = []
    for text, exp in zip(texts, expected):
        ids = []
        for w in words(text):
            wid, i = [], 0
            while i < len(w):
                for j in range(min(len(w), i + max_len), i, -1):
                    t = index.get(("##" if i else "") + w[i:j])
                    if t is not None:
                        wid.append(t)
                        i = j
                        break
                else:
                    wid = [unk]
                    break
            ids += wid
        if ids != [int(x) for x in exp.split()]:
            bad.append((text, ids, exp))
    return bad, min(len(texts), len(expected))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--vocab", type=int, default=5000)
    t.add_argument("--out", required=True)
    t.add_argument("text")
    c = sub.add_parser("check", help="compare with llama.cpp's expected ids "
                       "for its test vocabularies (GGUF + GGUF.inp + GGUF.out)")
    c.add_argument("gguf")
    e = sub.add_parser("encode")
    e.add_argument("vocab")
    e.add_argument("text")
    a = ap.parse_args()
    if a.cmd == "train":
        with open(a.text, encoding="utf-8") as f:
            toks = train(f.read(), a.vocab)
        Tokenizer(toks).save(a.out)
        print("wrote %s: %d pieces" % (a.out, len(toks)))
    elif a.cmd == "check":
        bad, n = check_llama_vocab(a.gguf)
        for text, ids, exp in bad:
            print("DIFFERS %r: ours %s, llama.cpp %s" % (text, ids, exp))
        print("%d of %d texts tokenized as llama.cpp's %s.out" % (n - len(bad), n, a.gguf))
        sys.exit(1 if bad else 0)
    else:
        tok = Tokenizer.load(a.vocab)
        ids = tok.encode(a.text)
        print(ids)
        print([tok.tokens[i] for i in ids])


if __name__ == "__main__":
    main()
