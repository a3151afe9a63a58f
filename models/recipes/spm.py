#!/usr/bin/python3
"""SentencePiece BPE tokenizer for austen-llama (Debian's python3-sentencepiece).

Trained on the training split, one paragraph per line: model_type=bpe,
byte_fallback=True, vocab 2048, ids 0,1,2 = <unk>, <s>, </s>, no <pad>,
identity normalisation (no NFKC, whitespace kept as is), a dummy "▁" prefix
(add_space_prefix, as Llama's tokenizer), digits split, character coverage 1.
Characters not among the pieces -- newline in particular -- are encoded as
byte pieces <0xNN> (token type 6).

Whole texts are encoded in one call, so "\\n\\n" between paragraphs becomes
<0x0A> <0x0A> and the next paragraph's first word has no "▁" -- the same
thing llama.cpp (and attnscope) produce for such a prompt.

Usage: python3 spm.py train --vocab 2048 --prefix work/spm work/corpus_train.txt
       python3 spm.py encode work/spm.model "some text"
"""
import argparse
import os

import sentencepiece as spm


def train(text_path, prefix, vocab_size):
    lines_path = prefix + ".lines.txt"
    with open(text_path, encoding="utf-8") as f:
        paras = [p for p in f.read().split("\n\n") if p.strip()]
    with open(lines_path, "w", encoding="utf-8") as f:
        f.write("\n".join(p.replace("\n", " ") for p in paras) + "\n")
    spm.SentencePieceTrainer.train(
        input=lines_path, model_prefix=prefix, model_type="bpe",
        vocab_size=vocab_size, byte_fallback=True, character_coverage=1.0,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        normalization_rule_name="identity", remove_extra_whitespaces=False,
        add_dummy_prefix=True, split_digits=True,
        max_sentence_length=1 << 16, num_threads=2, minloglevel=1)
    os.remove(lines_path)


class Tokenizer:
    def __init__(self, path):
        self.sp = spm.SentencePieceProcessor(model_file=path)
        self.bos = self.sp.bos_id()
        self.eos = self.sp.eos_id()
        self.n_vocab = self.sp.get_piece_size()

    def encode(self, text):
        return self.sp.encode(text)

    def decode(self, ids):
        return self.sp.decode([int(i) for i in ids if i not in (self.bos, self.eos)])

    def gguf_dict(self):
        sp = self.sp
        tokens, scores, types = [], [], []
        for i in range(sp.get_piece_size()):
            tokens.append(sp.id_to_piece(i))
            scores.append(float(sp.get_score(i)))
            types.append(2 if sp.is_unknown(i) else 3 if sp.is_control(i)
                         else 6 if sp.is_byte(i) else 1)
        return {
            "model": "llama",
            "tokens": tokens,
            "scores": scores,
            "token_type": types,
            "bos_token_id": self.bos,
            "eos_token_id": self.eos,
            "unknown_token_id": sp.unk_id(),
            "add_bos_token": True,
            "add_space_prefix": True,
        }


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train")
    t.add_argument("--vocab", type=int, default=2048)
    t.add_argument("--prefix", required=True)
    t.add_argument("text")
    e = sub.add_parser("encode")
    e.add_argument("model")
    e.add_argument("text")
    a = ap.parse_args()
    if a.cmd == "train":
        train(a.text, a.prefix, a.vocab)
        tok = Tokenizer(a.prefix + ".model")
        with open(a.text, encoding="utf-8") as f:
            text = f.read()
        n = len(tok.encode(text))
        print("vocab %d, %d tokens for %d chars (%.2f chars/token)"
              % (tok.n_vocab, n, len(text), len(text) / n))
    else:
        tok = Tokenizer(a.model)
        ids = tok.encode(a.text)
        print(ids)
        print([tok.sp.id_to_piece(i) for i in ids])
        print(repr(tok.decode(ids)))


if __name__ == "__main__":
    main()
