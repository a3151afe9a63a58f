#!/bin/sh
# End-to-end tests of the figure exports: every figure in PNG, SVG and
# PDF from the batch command line, read back by other programs (pdfinfo,
# rsvg-convert; `make fig-tools` installs them, and without them those
# checks are skipped with a banner), and every way an export can be
# refused: one clear message, exit status 1, nothing left behind.
# AS_BIN is the binary.
set -u
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
FIX=$HERE/../fixtures
TMP=$(mktemp -d)
trap 'chmod -R u+w "$TMP"; rm -rf "$TMP"' EXIT
pass=0
fail=0
skipped=0

. "$HERE/expect_lib.sh"

have() {
    command -v "$1" >/dev/null 2>&1 && return 0
    echo "**********************************************************************"
    echo "** figures.sh: $1 is not installed: its checks are SKIPPED."
    echo "** Debian: apt-get install poppler-utils librsvg2-bin (make fig-tools)"
    echo "**********************************************************************"
    skipped=$((skipped + 1))
    return 1
}

G=$FIX/tiny-gpt2.gguf
L=$FIX/tiny-llama.gguf
P="prompt-ids 276 257 262 264 266 258; finish"

# Every figure, in every format, one column wide by default.
for kind in "attn 0 1" "grid 0" "grid all" "lines 0 1" "lines 1 all" "norms 0" "norms final" "probs"; do
    fig=$(echo "$kind" | tr ' ' '-')
    for ext in png svg pdf; do
        f=$TMP/$fig.$ext
        case $ext in png) unit=px size='660x[0-9]+' ;; svg) unit=viewBox size='238x[0-9]+' ;; pdf) unit=pt size='238x[0-9]+' ;; esac
        expect "export $kind $ext" 0 "^wrote $f: .* $size $unit\$" '' -- -m "$G" -e "$P; export $kind $f"
    done
    if head -c 8 "$TMP/$fig.png" | grep -q PNG; then ok; else bad "$fig.png is a PNG"; fi
    if grep -q '<title>' "$TMP/$fig.svg" && grep -q 'Model: tiny-gpt2' "$TMP/$fig.svg"; then ok; else bad "$fig.svg carries its provenance"; fi
    if have pdfinfo; then
        if pdfinfo "$TMP/$fig.pdf" > "$TMP/info" 2>&1 && grep -Eq '^Page size: +237\.6 x' "$TMP/info"; then ok
        else bad "pdfinfo accepts $fig.pdf, 3.3 in wide"; sed 's/^/  /' "$TMP/info"; fi
    fi
    if have rsvg-convert; then
        if rsvg-convert -f png -o "$TMP/$fig-rsvg.png" "$TMP/$fig.svg" 2>"$TMP/err" && head -c 8 "$TMP/$fig-rsvg.png" | grep -q PNG; then ok
        else bad "rsvg-convert renders $fig.svg"; fi
    fi
done
expect "probs-trace pdf" 0 "^wrote $TMP/trace\.pdf: probability trace, 4 steps 504x[0-9]+ pt\$" '' \
    -- -m "$G" -e "prompt-ids 276 257 262; set temp 0; gen 4; export probs-trace $TMP/trace.pdf width=7in"
expect "instrument figure as pdf" 0 "^wrote $TMP/heads\.pdf: head scores" '' -- -m "$L" -e "heads $TMP/heads.pdf"
M=$FIX/tiny-mixtral.gguf
expect "expert load figure" 0 "^wrote $TMP/load\.svg: expert load 238x[0-9]+ viewBox\$" '' -- -m "$M" -e "$P; export load $TMP/load.svg"
if grep -q 'Model: tiny-mixtral' "$TMP/load.svg"; then ok; else bad "load.svg carries its provenance"; fi
for ext in png svg pdf; do
    case $ext in png) unit=px ;; svg) unit=viewBox ;; pdf) unit=pt ;; esac
    expect "routing figure $ext" 0 "^wrote $TMP/routing\.$ext: routing layer 1 [0-9]+x[0-9]+ $unit\$" '' \
        -- -m "$M" -e "$P; export routing 1 $TMP/routing.$ext"
done
if have pdfinfo; then
    if pdfinfo "$TMP/routing.pdf" > "$TMP/info" 2>&1; then ok; else bad "pdfinfo accepts routing.pdf"; fi
fi
expect "routing on a dense layer" 1 '' "no experts" -- -m "$G" -e "$P; export routing 0 $TMP/dense-r.png"
if [ ! -e "$TMP/dense-r.png" ]; then ok; else bad "a refused routing figure leaves no file"; fi
expect "expert load on a dense model" 1 '' "no routed MLPs" -- -m "$G" -e "$P; export load $TMP/dense.png"
if [ ! -e "$TMP/dense.png" ]; then ok; else bad "a refused load figure leaves no file"; fi
expect "size options" 0 "^wrote $TMP/big\.png: attention layer 0 head 1 600x400 px\$" '' \
    -- -m "$G" -e "$P; export attn 0 1 $TMP/big.png width=6in height=4in dpi=100 font=10"
expect "centimetres" 0 "^wrote $TMP/cm\.pdf: attention layer 0 head 1 238x[0-9]+ pt\$" '' \
    -- -m "$G" -e "$P; export attn 0 1 $TMP/cm.pdf width=8.4cm"

# Refusals: one message naming what is wrong, the session's exit status 1, no file.
rm -f "$TMP"/x.*
expect "unknown extension" 1 '' 'x\.eps: the file name must end in \.png, \.svg or \.pdf' -- -m "$G" -e "$P; export attn 0 1 $TMP/x.eps"
expect "width without a unit" 1 '' "bad option: width must be a length such as 3\.3in" -- -m "$G" -e "$P; export attn 0 1 $TMP/x.png width=3"
expect "height out of range" 1 '' 'bad option: height must be from 0\.5in to 40in' -- -m "$G" -e "$P; export lines 0 1 $TMP/x.pdf height=100in"
expect "font not a number" 1 '' "bad option: font \(points\) must be a number from 4 to 36, not 'big'" -- -m "$G" -e "$P; export probs $TMP/x.svg font=big"
expect "too narrow" 1 '' 'width=0\.50in is too narrow' -- -m "$G" -e "$P; export norms 0 $TMP/x.png width=0.5in"
expect "lines head" 1 '' 'the head \(or all\) must be' -- -m "$G" -e "$P; export lines 0 everything $TMP/x.png"
expect "pdf to missing dir" 1 '' 'nodir/x\.pdf: cannot write in directory' -- -m "$G" -e "$P; export attn 0 1 $TMP/nodir/x.pdf"
mkdir "$TMP/ro" && chmod 555 "$TMP/ro"
if [ "$(id -u)" != 0 ]; then
    expect "svg to read-only dir" 1 '' 'ro/x\.svg' -- -m "$G" -e "$P; export grid 0 $TMP/ro/x.svg"
fi
# A vision transformer: CLS's attention laid over the image, in every format.
V=$FIX/tiny-vit.gguf
VP="image $FIX/tiny-vit/image.png; finish"
for kind in "1 0" "0 mean" "1 rollout" "1 all"; do
    fig=overlay-$(echo "$kind" | tr ' ' '-')
    for ext in png svg pdf; do
        f=$TMP/$fig.$ext
        case $ext in png) unit=px size='660x[0-9]+' ;; svg) unit=viewBox size='238x[0-9]+' ;; pdf) unit=pt size='238x[0-9]+' ;; esac
        expect "export overlay $kind $ext" 0 "^wrote $f: overlay layer .* $size $unit\$" '' -- -m "$V" -e "$VP; export overlay $kind $f"
    done
    if head -c 8 "$TMP/$fig.png" | grep -q PNG; then ok; else bad "$fig.png is a PNG"; fi
    if have pdfinfo; then
        if pdfinfo "$TMP/$fig.pdf" > "$TMP/info" 2>&1 && grep -Eq '^Page size: +237\.6 x' "$TMP/info"; then ok
        else bad "pdfinfo accepts $fig.pdf"; fi
    fi
    if have rsvg-convert; then
        if rsvg-convert -f png -o "$TMP/$fig-rsvg.png" "$TMP/$fig.svg" 2>"$TMP/err"; then ok; else bad "rsvg-convert renders $fig.svg"; fi
    fi
done
expect "overlay on a text model" 1 '' 'reads tokens' -- -m "$G" -e "$P; export overlay 0 0 $TMP/x.png"
expect "overlay before the pass" 1 '' 'not computed yet.*finish' -- -m "$V" -e "image $FIX/tiny-vit/image.png; export overlay 0 0 $TMP/x.png"
expect "overlay of a head past the last" 1 '' 'head' -- -m "$V" -e "$VP; export overlay 0 9 $TMP/x.png"
expect "overlay to a bad extension" 1 '' '' -- -m "$V" -e "$VP; export overlay 0 0 $TMP/x.jpg"

if ls "$TMP"/x.* "$TMP/ro"/* >/dev/null 2>&1 || ls -a "$TMP" "$TMP/ro" | grep -q '\.tmp\.'; then bad "a refused export left a file"; else ok; fi

echo "figures e2e: $pass passed, $fail failed, $skipped tool checks skipped"
[ "$fail" = 0 ]
