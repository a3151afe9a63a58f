"""N mixed strings (seeded) as a JSON array: words in several cases and
scripts, contractions, digits, whitespace runs (tabs, CR LF, no-break and
em spaces), emoji, ligatures, punctuation, code, URLs and special-token
texts, glued or spaced at random.   texts.py N SEED [scripts] > texts.json
With "scripts", more of what a normaliser meets (for WordPiece): Hangul
syllables and jamo, Devanagari, Vietnamese, polytonic and capital Greek,
combining sequences out of canonical order, Turkish dotted I, CJK (an
astral Extension B ideograph, compatibility ideographs), halfwidth and
fullwidth forms, Thai, Arabic, pointed Hebrew, Georgian, controls, format,
private-use and unassigned code points."""
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
if len(sys.argv) > 3 and sys.argv[3] == "scripts":
    pieces += ["한국어", "안녕하세요", "각", "\u1100\u1161\u11a8", "नमस्ते", "हिन्दी", "क्षत्रिय", "Tiếng Việt", "Nguyễn",
               "Ἀθῆναι", "ΟΔΟΣ", "Σ", "άέήίόύώ", "ΐΰ", "Ελληνικά", "e\u0301\u0323", "a\u0323\u0302", "\u1e0b\u0323",
               "o\u0308\u0301\u0327", "İstanbul", "ǅ", "\u212b", "\u2126", "ﬀ", "中文", "\U00020000\U0002a6d6", "\uf900",
               "\U0002f800", "日本語のテキスト", "ｶﾀｶﾅ", "ＡＢＣ", "ไทย", "العربية", "עִבְרִית", "ქართული", "\x00", "\ufffd",
               "\u200b", "\u00ad", "\x0b", "\x85", "\ue000", "\u0378", "ẞ", "ŉ", "①", "…", "¿", "\u0345", "\u0ccd"]
out = []
for _ in range(n):
    k = random.randint(1, 12)
    out.append("".join(random.choice(pieces) + (" " if random.random() < 0.5 else "") for _ in range(k)))
json.dump(out, sys.stdout, ensure_ascii=False)
