#!/usr/bin/python3
"""Generates src/unicode_tables.h and src/unicode_norm.h. The first holds
the Unicode character classes the tokenizer's pre-tokenizers need
(src/tok_pre.c, src/tok_regex.c), as llama.cpp classifies code points (its
unicode_cpt_flags):

  category   one of undefined (Cn), number (N*), letter (L*), separator
             (Z*), mark (M*), punctuation (P*), symbol (S*), control (Cc
             Cf Co Cs) -- \\p{N}, \\p{L}, \\p{P}, \\p{M}, \\p{S}
  \\s         the White_Space property

llama.cpp's tables (src/unicode-data.cpp, made by its
scripts/gen-unicode-data.py) are Unicode 15.1, so these are too: tokenizing
as llama.cpp does means classifying as it does, and a character added in a
later version would otherwise split differently. The data comes from the
npm package @unicode/unicode-15.1.0 (the Unicode Character Database's
General_Category and White_Space as ranges), fetched with

  npm pack @unicode/unicode-15.1.0@2.0.7 && tar xzf unicode-unicode-15.1.0-2.0.7.tgz

and is checked against this python3's unicodedata (an older version): every
code point that version assigns must have the same category here.

It also writes src/unicode_norm.h, what WordPiece's normalizer needs
(src/tok_wpm.c), as llama.cpp's tables have it:

  lower-case  the simple lower-case mapping (UnicodeData.txt's field 13,
              one code point to one), from the same package's
              Simple_Case_Mapping/Lowercase, checked against this
              python3's str.lower() wherever that gives one code point;
  NFD         each code point's canonical decomposition cut to its first
              code point (llama.cpp's unicode_cpts_normalize_nfd keeps only
              that: "é" -> "e", the accent dropped), from this python3's
              unicodedata.normalize("NFD"). The package has no
              decompositions, so the generator checks that every code
              point 15.1 lists as Expands_On_NFD expands in this python3
              too (none was added since). These tables are equal, entry
              for entry, to llama.cpp's unicode-data.cpp (13,233 NFD
              entries, 1,433 lower-case ones, checked when written).

Usage: python3 models/recipes/gen_unicode_tables.py PACKAGE_DIR SRC_DIR
(writes SRC_DIR/unicode_tables.h and SRC_DIR/unicode_norm.h)

With --nfc SRC_DIR it writes SRC_DIR/unicode_nfc.h instead, what NFC
(the tokenizers library's NFC normalizer, Qwen's) needs, all from this
python3's unicodedata (no package): each code point's full canonical
decomposition (Hangul syllables excepted: they are computed), the
canonical combining class of every code point that has one, and the
primary composites as pairs (a, b) -> c, those c whose two-code-point
canonical decomposition unicodedata.normalize("NFC") composes back to c
(so the composition exclusions and singletons are left out by
unicodedata's own judgement). Plus tests/fixtures/unicode-nfc.json:
strings and their unicodedata NFC, for tests/test_tokenizer.c.

With --wpm SRC_DIR it writes SRC_DIR/unicode_wpm.h, what the tokenizers
library's WordPiece normalisation (tok_wpm.c, a Hugging Face directory's
BertNormalizer or NFD/Lowercase/StripAccents) needs beyond unicode_nfc.h's
decompositions, from this python3's unicodedata: the Mn (Nonspacing_Mark)
ranges, which BertNormalizer's accent stripping removes, and the code
points whose full lower-case mapping (Rust's char::to_lowercase) is more
than one code point (U+0130 only); every other code point's must equal
unicode_norm.h's simple mapping, which the generator checks.
"""
import base64
import gzip
import json
import os
import re
import sys
import unicodedata

VERSION = "15.1.0"

# White_Space (PropList.txt); what llama.cpp's unicode_set_whitespace holds.
WHITE_SPACE = [(0x09, 0x0D), (0x20, 0x20), (0x85, 0x85), (0xA0, 0xA0),
               (0x1680, 0x1680), (0x2000, 0x200A), (0x2028, 0x2029),
               (0x202F, 0x202F), (0x205F, 0x205F), (0x3000, 0x3000)]

# General_Category long names -> (short name, llama.cpp's flag class)
CATEGORIES = {
    "Unassigned": ("Cn", "UNDEFINED"), "Control": ("Cc", "CONTROL"),
    "Format": ("Cf", "CONTROL"), "Private_Use": ("Co", "CONTROL"),
    "Surrogate": ("Cs", "CONTROL"),
    "Lowercase_Letter": ("Ll", "LETTER"), "Modifier_Letter": ("Lm", "LETTER"),
    "Other_Letter": ("Lo", "LETTER"), "Titlecase_Letter": ("Lt", "LETTER"),
    "Uppercase_Letter": ("Lu", "LETTER"),
    "Spacing_Mark": ("Mc", "MARK"), "Enclosing_Mark": ("Me", "MARK"),
    "Nonspacing_Mark": ("Mn", "MARK"),
    "Decimal_Number": ("Nd", "NUMBER"), "Letter_Number": ("Nl", "NUMBER"),
    "Other_Number": ("No", "NUMBER"),
    "Connector_Punctuation": ("Pc", "PUNCT"), "Dash_Punctuation": ("Pd", "PUNCT"),
    "Close_Punctuation": ("Pe", "PUNCT"), "Final_Punctuation": ("Pf", "PUNCT"),
    "Initial_Punctuation": ("Pi", "PUNCT"), "Other_Punctuation": ("Po", "PUNCT"),
    "Open_Punctuation": ("Ps", "PUNCT"),
    "Currency_Symbol": ("Sc", "SYMBOL"), "Modifier_Symbol": ("Sk", "SYMBOL"),
    "Math_Symbol": ("Sm", "SYMBOL"), "Other_Symbol": ("So", "SYMBOL"),
    "Line_Separator": ("Zl", "SEPARATOR"), "Paragraph_Separator": ("Zp", "SEPARATOR"),
    "Space_Separator": ("Zs", "SEPARATOR"),
}
CLASSES = ["UNDEFINED", "NUMBER", "LETTER", "SEPARATOR", "MARK", "PUNCT", "SYMBOL", "CONTROL"]

B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"


def decode_ranges(s):
    """The package's decode-ranges.mjs: base64 variable-length deltas, then
    (gap, length - 1) pairs. Returns [begin, end) ranges."""
    d = {c: i for i, c in enumerate(B64)}
    deltas, i = [], 0
    while i < len(s):
        x = d[s[i]]
        i += 1
        top = x & 56
        if top in (32, 40):
            x = ((x & 15) << 6) | d[s[i]]
            i += 1
        elif top == 48:
            x = ((x & 7) << 12) | (d[s[i]] << 6) | d[s[i + 1]]
            i += 2
        elif top == 56:
            x = ((x & 7) << 18) | (d[s[i]] << 12) | (d[s[i + 1]] << 6) | d[s[i + 2]]
            i += 3
        deltas.append(x)
    out, end = [], -1
    for k in range(1, len(deltas), 2):
        begin = end + 1 + deltas[k - 1]
        end = begin + 1 + deltas[k]
        out.append((begin, end))
    return out


def read_ranges(pkg, path):
    text = open(os.path.join(pkg, path, "ranges.mjs"), encoding="utf-8").read()
    m = re.search(r"decodeRanges\('([A-Za-z0-9_-]*)'\)", text)
    if not m:
        sys.exit("%s/%s/ranges.mjs: no encoded ranges found" % (pkg, path))
    return decode_ranges(m.group(1))


def read_map(pkg, path):
    """A package Map file (gzipped JSON pairs in base64) as a dict."""
    text = open(os.path.join(pkg, path, "code-points.mjs"), encoding="utf-8").read()
    m = re.search(r"Buffer\.from\('([A-Za-z0-9+/=]*)'", text)
    if not m:
        sys.exit("%s/%s/code-points.mjs: no encoded map found" % (pkg, path))
    return dict(json.loads(gzip.decompress(base64.b64decode(m.group(1)))))


def lower_table(pkg):
    lower = {a: b for a, b in read_map(pkg, "Simple_Case_Mapping/Lowercase").items() if a != b}
    for cp in range(0x110000):
        if unicodedata.category(chr(cp)) == "Cn":
            continue
        py = chr(cp).lower()
        if len(py) == 1 and ord(py) != lower.get(cp, cp):
            sys.exit("U+%04X: lower case U+%04X here, U+%04X in unicodedata" % (cp, lower.get(cp, cp), ord(py)))
    return sorted(lower.items())


def nfd_table(pkg):
    first = {}
    for cp in range(0x110000):
        n = unicodedata.normalize("NFD", chr(cp))
        if ord(n[0]) != cp:
            first[cp] = ord(n[0])
    for b, e in read_ranges(pkg, "Binary_Property/Expands_On_NFD"):
        for cp in range(b, e):
            if len(unicodedata.normalize("NFD", chr(cp))) < 2:
                sys.exit("U+%04X expands under NFD in %s but not in unicodedata %s"
                         % (cp, VERSION, unicodedata.unidata_version))
    ranges = []  # [first, last, nfd], runs of consecutive code points with one nfd
    for cp, n in sorted(first.items()):
        if ranges and ranges[-1][1] == cp - 1 and ranges[-1][2] == n:
            ranges[-1][1] = cp
        else:
            ranges.append([cp, cp, n])
    return len(first), ranges


def write_norm(pkg, out):
    lower = lower_table(pkg)
    n_nfd, nfd = nfd_table(pkg)
    w = out.write
    w("/* Generated by models/recipes/gen_unicode_tables.py; do not edit. What\n")
    w(" * WordPiece's normalizer (tok_wpm.c) needs, as llama.cpp's tables have it.\n")
    w(" * as_uni_lower: the simple lower-case mapping of Unicode %s (%d code\n" % (VERSION, len(lower)))
    w(" * points; the npm package @unicode/unicode-%s), {code point, lower}.\n" % VERSION)
    w(" * as_uni_nfd: the first code point of each code point's canonical\n")
    w(" * decomposition (%d code points; python3's unicodedata %s), as ranges\n" % (n_nfd, unicodedata.unidata_version))
    w(" * {first, last, nfd}. Both sorted, for binary search. */\n")
    w("#ifndef ATTNSCOPE_UNICODE_NORM_H\n#define ATTNSCOPE_UNICODE_NORM_H\n\n#include <stdint.h>\n\n")
    w("static const uint32_t as_uni_lower[][2] = {\n")
    for i in range(0, len(lower), 4):
        w("    " + " ".join("{0x%05X, 0x%05X}," % r for r in lower[i:i + 4]) + "\n")
    w("};\n\nstatic const uint32_t as_uni_nfd[][3] = {\n")
    for i in range(0, len(nfd), 3):
        w("    " + " ".join("{0x%05X, 0x%05X, 0x%05X}," % tuple(r) for r in nfd[i:i + 3]) + "\n")
    w("};\n\n#endif\n")


def nfc_tables():
    decomp, ccc, comp = [], [], []
    for cp in range(0x110000):
        c = chr(cp)
        if unicodedata.combining(c):
            ccc.append((cp, unicodedata.combining(c)))
        if 0xAC00 <= cp <= 0xD7A3:
            continue  # Hangul syllables: by formula
        d = unicodedata.normalize("NFD", c)
        if d != c:
            decomp.append((cp, [ord(x) for x in d]))
        raw = unicodedata.decomposition(c)
        if raw and not raw.startswith("<"):
            parts = [int(x, 16) for x in raw.split()]
            if len(parts) == 2 and unicodedata.normalize("NFC", chr(parts[0]) + chr(parts[1])) == c:
                comp.append((parts[0], parts[1], cp))
    comp.sort()
    return decomp, ccc, comp


def nfc_cases():
    """Strings whose NFC python's unicodedata gives: every composite
    decomposed, marks reordered, Hangul jamo, excluded composites,
    singletons, and random mixes."""
    import random
    rng = random.Random(21)
    decomp, ccc, comp = nfc_tables()
    marks = [chr(cp) for cp, _ in ccc if cp < 0x3000]
    cases = [unicodedata.normalize("NFD", chr(c)) for _, _, c in comp]
    cases += [chr(cp) for cp, _ in decomp]  # singletons and exclusions among them
    cases += ["\u1100\u1161", "\u1100\u1161\u11A8", "\uAC00\u11A8", "\u1112\u1173\u11AF\u1100", "\uD4DB\u11AF"]
    for _ in range(3000):
        k = rng.randint(1, 6)
        parts = []
        for _ in range(k):
            r = rng.random()
            if r < 0.3:
                parts.append(rng.choice("aeiouAEIOUnNcCsSzZ "))
            elif r < 0.6:
                parts.append(rng.choice(marks))
            elif r < 0.75:
                parts.append(chr(rng.choice(comp)[2]))
            elif r < 0.85:
                parts.append(chr(rng.choice([0x1100 + i for i in range(19)] + [0x1161 + i for i in range(21)] +
                                            [0x11A8 + i for i in range(27)] + [0xAC00, 0xAC01, 0xD7A3])))
            else:
                parts.append(rng.choice(["\u212B", "\u2126", "\u0344", "\u0F73", "\u1E9B\u0323", "x", "\u0958"]))
        cases.append("".join(parts))
    return [[c, unicodedata.normalize("NFC", c)] for c in cases]


def write_nfc(src):
    decomp, ccc, comp = nfc_tables()
    # src/tok_nfc.c sizes its buffer by these: at most 4 code points, from a character of 2 bytes or more
    if max(len(d) for _, d in decomp) > 4 or min(len(chr(cp).encode()) for cp, _ in decomp) < 2:
        sys.exit("a decomposition longer than tok_nfc.c's buffer allows")
    flat, index = [], []
    for cp, d in decomp:
        index.append((cp, len(flat), len(d)))
        flat += d
    with open(os.path.join(src, "unicode_nfc.h"), "w", encoding="utf-8") as out:
        w = out.write
        w("/* Generated by models/recipes/gen_unicode_tables.py --nfc; do not edit.\n")
        w(" * What NFC needs, from python3's unicodedata %s: as_uni_decomp, each\n" % unicodedata.unidata_version)
        w(" * code point's full canonical decomposition {code point, offset, length}\n")
        w(" * into as_uni_decomp_cps (%d code points; Hangul syllables by formula);\n" % len(index))
        w(" * as_uni_ccc, the canonical combining classes other than 0 {code point,\n")
        w(" * class} (%d); as_uni_comp, the primary composites {first, second,\n" % len(ccc))
        w(" * composite} (%d). All sorted, for binary search. */\n" % len(comp))
        w("#ifndef ATTNSCOPE_UNICODE_NFC_H\n#define ATTNSCOPE_UNICODE_NFC_H\n\n#include <stdint.h>\n\n")
        w("static const uint32_t as_uni_decomp[][3] = {\n")
        for i in range(0, len(index), 3):
            w("    " + " ".join("{0x%05X, %d, %d}," % r for r in index[i:i + 3]) + "\n")
        w("};\n\nstatic const uint32_t as_uni_decomp_cps[] = {\n")
        for i in range(0, len(flat), 8):
            w("    " + " ".join("0x%05X," % c for c in flat[i:i + 8]) + "\n")
        w("};\n\nstatic const uint32_t as_uni_ccc[][2] = {\n")
        for i in range(0, len(ccc), 4):
            w("    " + " ".join("{0x%05X, %d}," % r for r in ccc[i:i + 4]) + "\n")
        w("};\n\nstatic const uint32_t as_uni_comp[][3] = {\n")
        for i in range(0, len(comp), 3):
            w("    " + " ".join("{0x%05X, 0x%05X, 0x%05X}," % r for r in comp[i:i + 3]) + "\n")
        w("};\n\n#endif\n")
    fix = os.path.join(os.path.dirname(os.path.abspath(src)), "tests", "fixtures", "unicode-nfc.json")
    with open(fix, "w", encoding="utf-8") as out:
        json.dump(nfc_cases(), out, ensure_ascii=True, indent=0)
        out.write("\n")


def write_wpm(src):
    text = open(os.path.join(src, "unicode_norm.h"), encoding="utf-8").read()
    body = text.split("as_uni_lower[][2] = {")[1].split("};")[0]
    simple = {int(a, 16): int(b, 16) for a, b in re.findall(r"\{0x([0-9A-F]+), 0x([0-9A-F]+)\}", body)}
    multi = []
    for cp in range(0x110000):
        low = chr(cp).lower()
        if len(low) > 2:
            sys.exit("U+%04X lower-cases to %d code points; tok_wpm.c allows 2" % (cp, len(low)))
        if len(low) == 2:
            multi.append((cp, ord(low[0]), ord(low[1])))
        elif ord(low) != simple.get(cp, cp):
            sys.exit("U+%04X: lower case U+%04X in unicodedata %s, U+%04X in unicode_norm.h"
                     % (cp, ord(low), unicodedata.unidata_version, simple.get(cp, cp)))
    mn = []
    for cp in range(0x110000):
        if unicodedata.category(chr(cp)) == "Mn":
            if mn and mn[-1][1] == cp - 1:
                mn[-1][1] = cp
            else:
                mn.append([cp, cp])
    with open(os.path.join(src, "unicode_wpm.h"), "w", encoding="utf-8") as out:
        w = out.write
        w("/* Generated by models/recipes/gen_unicode_tables.py --wpm; do not edit.\n")
        w(" * What the tokenizers library's WordPiece normalisation adds to\n")
        w(" * unicode_nfc.h and unicode_norm.h, from python3's unicodedata %s:\n" % unicodedata.unidata_version)
        w(" * as_uni_mn, the General_Category Mn ranges {first, last} (%d);\n" % len(mn))
        w(" * as_uni_lower2, the code points whose full lower-case mapping is two\n")
        w(" * code points {code point, first, second} (%d; every other one's is\n" % len(multi))
        w(" * unicode_norm.h's simple mapping, checked when written). Sorted. */\n")
        w("#ifndef ATTNSCOPE_UNICODE_WPM_H\n#define ATTNSCOPE_UNICODE_WPM_H\n\n#include <stdint.h>\n\n")
        w("static const uint32_t as_uni_mn[][2] = {\n")
        for i in range(0, len(mn), 4):
            w("    " + " ".join("{0x%05X, 0x%05X}," % tuple(r) for r in mn[i:i + 4]) + "\n")
        w("};\n\nstatic const uint32_t as_uni_lower2[][3] = {\n")
        for r in multi:
            w("    {0x%05X, 0x%05X, 0x%05X},\n" % r)
        w("};\n\n#endif\n")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--wpm":
        write_wpm(sys.argv[2])
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--nfc":
        write_nfc(sys.argv[2])
        return
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    pkg, src = sys.argv[1], sys.argv[2]
    with open(os.path.join(src, "unicode_norm.h"), "w", encoding="utf-8") as out:
        write_norm(pkg, out)
    sys.stdout = open(os.path.join(src, "unicode_tables.h"), "w", encoding="utf-8")
    name = open(os.path.join(pkg, "package.json"), encoding="utf-8").read()
    if '"@unicode/unicode-%s"' % VERSION not in name:
        sys.exit("%s is not the package @unicode/unicode-%s" % (pkg, VERSION))
    short = [None] * 0x110000
    for long_name, (sname, _) in CATEGORIES.items():
        for b, e in read_ranges(pkg, "General_Category/" + long_name):
            for cp in range(b, e):
                if short[cp] is not None:
                    sys.exit("U+%04X is in two categories" % cp)
                short[cp] = sname
    missing = [cp for cp in range(0x110000) if short[cp] is None]
    if missing:
        sys.exit("%d code points have no category (first U+%04X)" % (len(missing), missing[0]))
    differ = [cp for cp in range(0x110000)
              if unicodedata.category(chr(cp)) != "Cn" and unicodedata.category(chr(cp)) != short[cp]]
    if differ:
        sys.exit("%d code points differ from unicodedata %s (first U+%04X)"
                 % (len(differ), unicodedata.unidata_version, differ[0]))
    ws = {cp for b, e in read_ranges(pkg, "Binary_Property/White_Space") for cp in range(b, e)}
    listed = {cp for a, b in WHITE_SPACE for cp in range(a, b + 1)}
    if ws != listed:
        sys.exit("White_Space differs from the list llama.cpp uses: %r" % sorted(ws ^ listed))

    cls = {s: c for s, c in CATEGORIES.values()}
    rows = []
    for cp in range(0x110000):
        c = CLASSES.index(cls[short[cp]])
        if not rows or rows[-1][1] != c:
            rows.append((cp, c))

    print("/* Generated by models/recipes/gen_unicode_tables.py from Unicode %s" % VERSION)
    print(" * (the npm package @unicode/unicode-%s), the version llama.cpp's" % VERSION)
    print(" * tables are; do not edit. as_uni_class: every code point's class as")
    print(" * llama.cpp's unicode_cpt_flags has it, as ranges {first code point,")
    print(" * class} each running to the next one's start, searched by binary search")
    print(" * in tok_pre.c. as_uni_space: the White_Space property. */")
    print("#ifndef ATTNSCOPE_UNICODE_TABLES_H")
    print("#define ATTNSCOPE_UNICODE_TABLES_H")
    print()
    print("#include <stdint.h>")
    print()
    print('#define AS_UNICODE_VERSION "%s"' % VERSION)
    print()
    print("enum {")
    for i, c in enumerate(CLASSES):
        print("    AS_UC_%s = %d," % (c, i))
    print("};")
    print()
    print("static const uint32_t as_uni_class[][2] = {")
    for i in range(0, len(rows), 4):
        print("    " + " ".join("{0x%05X, %d}," % r for r in rows[i:i + 4]))
    print("};")
    print()
    print("static const uint32_t as_uni_space[][2] = {")
    for i in range(0, len(WHITE_SPACE), 4):
        print("    " + " ".join("{0x%05X, 0x%05X}," % r for r in WHITE_SPACE[i:i + 4]))
    print("};")
    print()
    print("#endif")


if __name__ == "__main__":
    main()
