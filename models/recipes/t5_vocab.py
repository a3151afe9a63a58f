#!/usr/bin/python3
"""A T5-style vocabulary for the tests: a small SentencePiece *unigram* model
(Debian's python3-sentencepiece) written into a vocabulary-only GGUF the way
llama.cpp's converter writes a T5 vocabulary (tokenizer.ggml.model "t5").

  - trained on every 8th line of Debian's German-English dictionary
    (/usr/share/trans/de-en, package trans-de-en) plus a few lines in other
    scripts, model_type=unigram, vocabulary 2000, normalization_rule_name=
    nmt_nfkc (so the model carries a precompiled charsmap: NFKC, control
    characters dropped, tabs and newlines made spaces), T5's ids: 0 <pad>,
    1 </s>, 2 <unk>, no BOS; two user-defined pieces; character coverage
    0.9995, so rare characters are <unk>;
  - the GGUF: tokens, scores, token types (SentencePiece's piece types, which
    are GGUF's), tokenizer.ggml.precompiled_charsmap (uint8 array, the blob
    as the model stores it), add_space_prefix = the normalizer's
    add_dummy_prefix, remove_extra_whitespaces as the normalizer says,
    eos/unk/padding ids, add_bos false, add_eos true; t5 hyperparameter keys
    so that llama.cpp loads it with vocab_only. No tensors.

The model is read with a few lines of protobuf decoding (no python3-protobuf
here). The .model file is written beside the GGUF, so sentencepiece's own
encoding can be compared (`encode`).

usage: /usr/bin/python3 t5_vocab.py build OUT.gguf
       /usr/bin/python3 t5_vocab.py encode OUT.model < lines   (ids per line)
       /usr/bin/python3 t5_vocab.py spm-ids OUT.model > OUT.spm.txt

spm-ids writes 1200 mixed strings (fixed seed) with SentencePiece's own ids,
one per line: the text's UTF-8 bytes in hex, a tab, the ids. Only strings
where llama.cpp and SentencePiece agree by construction: valid UTF-8, no NUL,
no user-defined piece's text (llama.cpp cuts those out first and normalizes
each side on its own; SentencePiece matches them inside the text).
tests/test_tok_ugm.c holds attnscope's ids to them.
"""
import io
import os
import struct
import sys

import sentencepiece as spm

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gguf_writer import GGUFWriter, GGUF_UINT8, GGUF_INT32, GGUF_FLOAT32  # noqa: E402

EXTRA = [
    "Ein Haus am See, ein Häuschen, Straße und Fluß; naïve café, garçon, Œuvre.",
    "日本語のテキスト、東京都、漢字とひらがな。中文分词测试，北京。",
    "Русский текст и Ελληνικά γράμματα, עברית, العربية, हिन्दी.",
    "ＡＢＣ full-width １２３, ligature ﬁne, ½ ², ™ ① Ⅻ — 'quotes' “curly” «guillemets»",
    "emoji 🙂 👋🏽 ❤️ and symbols € ¥ ° → ∑",
]


def train(prefix):
    with open("/usr/share/trans/de-en", encoding="utf-8") as f:
        lines = [l.strip() for l in f if not l.startswith("#")]
    lines = [l.replace(" :: ", " ") for l in lines[::8] if l]
    text = prefix + ".train.txt"
    with open(text, "w", encoding="utf-8") as f:
        f.write("\n".join(lines + EXTRA * 20) + "\n")
    spm.SentencePieceTrainer.train(
        input=text, model_prefix=prefix, model_type="unigram", vocab_size=2000,
        normalization_rule_name="nmt_nfkc", character_coverage=0.9995,
        pad_id=0, eos_id=1, unk_id=2, bos_id=-1,
        user_defined_symbols=["<extra_id_0>", "[[sep]]"],
        num_threads=1, input_sentence_size=0, shuffle_input_sentence=False, minloglevel=2)
    os.remove(text)


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def fields(b):
    """protobuf message -> [(field, wire type, value)]"""
    i, out = 0, []
    while i < len(b):
        key, i = varint(b, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(b, i)
        elif wt == 1:
            v, i = b[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif wt == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        out.append((f, wt, v))
    return out


def read_model(path):
    m = fields(open(path, "rb").read())
    pieces = []
    norm = {"charsmap": b"", "dummy": True, "extra_ws": True, "escape": True}
    for f, wt, v in m:
        if f == 1:   # SentencePiece {1 piece, 2 score, 3 type}
            p = {"piece": "", "score": 0.0, "type": 1}
            for g, _, x in fields(v):
                if g == 1:
                    p["piece"] = x.decode("utf-8")
                elif g == 2:
                    p["score"] = struct.unpack("<f", x)[0]
                elif g == 3:
                    p["type"] = x
            pieces.append(p)
        elif f == 3:  # NormalizerSpec {2 charsmap, 3 add_dummy_prefix, 4 remove_extra_ws, 5 escape_ws}
            for g, _, x in fields(v):
                if g == 2:
                    norm["charsmap"] = x
                elif g == 3:
                    norm["dummy"] = bool(x)
                elif g == 4:
                    norm["extra_ws"] = bool(x)
                elif g == 5:
                    norm["escape"] = bool(x)
    return pieces, norm


def write_gguf(model_path, out):
    pieces, norm = read_model(model_path)
    w = GGUFWriter(out)
    w.add_string("general.architecture", "t5")
    w.add_string("general.name", "ugm-test")
    w.add_uint32("general.file_type", 0)
    for k, v in (("context_length", 512), ("embedding_length", 64), ("block_count", 1),
                 ("decoder_block_count", 1), ("feed_forward_length", 128), ("attention.head_count", 4),
                 ("attention.key_length", 16), ("attention.value_length", 16),
                 ("attention.relative_buckets_count", 32), ("decoder_start_token_id", 0)):
        w.add_uint32("t5." + k, v)
    w.add_float32("t5.attention.layer_norm_rms_epsilon", 1e-6)
    w.add_string("tokenizer.ggml.model", "t5")
    w.add_array("tokenizer.ggml.tokens", [p["piece"] for p in pieces])
    w.add_array("tokenizer.ggml.scores", [p["score"] for p in pieces], GGUF_FLOAT32)
    w.add_array("tokenizer.ggml.token_type", [p["type"] for p in pieces], GGUF_INT32)
    w.add_array("tokenizer.ggml.precompiled_charsmap", list(norm["charsmap"]), GGUF_UINT8)
    w.add_bool("tokenizer.ggml.add_space_prefix", norm["dummy"])
    w.add_bool("tokenizer.ggml.remove_extra_whitespaces", norm["extra_ws"])
    w.add_uint32("tokenizer.ggml.eos_token_id", 1)
    w.add_uint32("tokenizer.ggml.unknown_token_id", 2)
    w.add_uint32("tokenizer.ggml.padding_token_id", 0)
    w.add_bool("tokenizer.ggml.add_bos_token", False)
    w.add_bool("tokenizer.ggml.add_eos_token", True)
    w.write()
    print("%s: %d pieces, charsmap %d bytes, add_dummy_prefix %s, remove_extra_whitespaces %s"
          % (out, len(pieces), len(norm["charsmap"]), norm["dummy"], norm["extra_ws"]))


SPM_BITS = ["the", "Hello", "HELLO", "Haus", "aufgabe", "Hausaufgabe", "Straße", "Häuschen", "naïve café",
            "Œuvre", "ＡＢＣ", "１２３", "ｶﾀｶﾅ", "ﬁne", "½", "x²", "Ⅻ", "①", "™", "日本語", "東京都", "中文",
            "Привет", "Ελληνικά", "עברית", "العربية", "हिन्दी", "🙂", "👋🏽", "❤️", "€", "e\u0301", "Å", "Ω",
            "ǅ", "don't", "3.14", "a-b", "1,000", " ", "  ", "   ", "\t", "\n", "\r\n", "\u00a0", "\u3000",
            "\u200b", "\ufeff", "\x01", "\x7f", "\u2581", "</s>", "<pad>", "<unk>", "<extra", "[[se"]


def spm_ids(model):
    import random
    rng = random.Random(20261126)
    sp = spm.SentencePieceProcessor(model_file=model)
    out = []
    while len(out) < 1200:
        parts = []
        for _ in range(rng.randint(1, 10)):
            if rng.random() < 0.1:
                cp = rng.choice([rng.randrange(0x20, 0x3400), rng.randrange(0xE000, 0x110000)])
                parts.append(chr(cp))
            else:
                parts.append(rng.choice(SPM_BITS))
            if rng.random() < 0.3:
                parts.append(" ")
        s = "".join(parts)
        if "<extra_id_0>" in s or "[[sep]]" in s or "\0" in s:
            continue
        out.append("%s\t%s" % (s.encode("utf-8").hex(), " ".join(map(str, sp.encode(s)))))
    print("\n".join(out))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "build":
        out = sys.argv[2]
        prefix = out[:-5] if out.endswith(".gguf") else out
        train(prefix)
        os.remove(prefix + ".vocab")
        write_gguf(prefix + ".model", out)
    elif len(sys.argv) == 3 and sys.argv[1] == "encode":
        sp = spm.SentencePieceProcessor(model_file=sys.argv[2])
        for line in io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="surrogateescape"):
            print(" ".join(map(str, sp.encode(line.rstrip("\n")))))
    elif len(sys.argv) == 3 and sys.argv[1] == "spm-ids":
        spm_ids(sys.argv[2])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
