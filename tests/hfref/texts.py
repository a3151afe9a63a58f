"""N mixed strings (seeded) as a JSON array: words in several cases and
scripts, contractions, digits, whitespace runs (tabs, CR LF, no-break and
em spaces), emoji, ligatures, punctuation, code, URLs and special-token
texts, glued or spaced at random.   texts.py N SEED > texts.json"""
import json
import random
import sys

n, seed = int(sys.argv[1]), int(sys.argv[2])
random.seed(seed)
pieces = ["the", "The", "CAT", "don't", "I'M", "we'll", " ", "  ", "\n", "\n\n", "\t", "\r\n", "123", "4567890", "3.14",
          "日本語", "中文字符", "ß", "é", "e\u0301", "naïve", "Ünïcödé", "😀", "🎉🎉", "!!", "...", "—", "«»", "$", "#",
          "@user", "x=y+1;", "if (a) {", "}", "https://example.com/a?b=c", "ḁ", "\u00a0", "\u2003", "ﬁ", "١٢٣",
          "Привет", "мир", "שלום", "<|begin_of_text|>", "<|im_start|>", "<s>", "</s>", "'s", "'S", "  \n  ", "A", "b",
          "ZZZ", "ok?", "end.", "▁", "<0x0A>"]
out = []
for _ in range(n):
    k = random.randint(1, 12)
    out.append("".join(random.choice(pieces) + (" " if random.random() < 0.5 else "") for _ in range(k)))
json.dump(out, sys.stdout, ensure_ascii=False)
