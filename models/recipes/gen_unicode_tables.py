#!/usr/bin/python3
"""Generates src/unicode_tables.h: the Unicode character classes the
tokenizer's pre-tokenizers need (src/tok_pre.c, src/tok_regex.c), as
llama.cpp classifies code points (its unicode_cpt_flags):

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

Usage: python3 models/recipes/gen_unicode_tables.py PACKAGE_DIR > src/unicode_tables.h
"""
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


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    pkg = sys.argv[1]
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
