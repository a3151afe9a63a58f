#!/bin/sh
# attnscope's logits against llama.cpp's on the 12 quantized presets of
# issue #32, each file written by llama.cpp's quantizer from one F32 model
# (models/austen-llama.gguf widened to whole 256-blocks) and run by both
# (tests/peer/llama_quant.c says how). llama.cpp is the copy `make
# llama-ref` installs in $LLAMA_REF; where it could not be had, the
# comparison is skipped with a banner, never silently.
#
#   CC=cc LIB=build/libattnscope.a LIB_DEPS="..." CFLAGS="..." LLAMA_REF=build/llama-ref sh tests/peer/llama_quant.sh
set -u
BUILD=${BUILD:-build}
REF=${LLAMA_REF:-$BUILD/llama-ref}
LIBDIR=$REF/npm/bins/package/bins/linux-x64
SRC=$REF/llama.cpp
BIN=$BUILD/llama-quant
PTOL=${LLAMA_QUANT_PRODUCT_TOL:-1e-5}
TOL=${LLAMA_QUANT_TOL:-1e-3}
MODEL=${LLAMA_QUANT_MODEL:-models/austen-llama.gguf}

skip() {
    echo "################################################################################"
    echo "## SKIPPED: attnscope vs llama.cpp on the 12 quantized presets was NOT compared."
    echo "## $1"
    echo "## (make llama-ref installs llama.cpp from npm; it needs npm and its registry)"
    echo "################################################################################"
    exit 0
}

lib() { ls "$LIBDIR"/$1 2>/dev/null | head -n 1; }

[ "$(cat "$REF/status" 2>/dev/null)" = ok ] || skip "llama.cpp is not installed: $(cat "$REF/status" 2>/dev/null || echo "no $REF")"
LLAMA=$(lib 'libllama.*so') GGML=$(lib 'libggml.*so') BASE=$(lib 'libggml-base.so')
[ -n "$LLAMA" ] && [ -n "$GGML" ] && [ -n "$BASE" ] || skip "the npm package has no libllama/libggml for this machine"
if [ ! -x "$BIN" ] || [ "$BIN" -ot tests/peer/llama_quant.c ] || [ "$BIN" -ot "$LIB" ]; then
    # shellcheck disable=SC2086
    ${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 ${CFLAGS:-} -Iinclude -Isrc -I"$SRC/include" -I"$SRC/ggml/include" \
        tests/peer/llama_quant.c "$LIB" -L"$LIBDIR" -Wl,-rpath,"$(cd "$LIBDIR" && pwd)" \
        -l:"$(basename "$LLAMA")" -l:"$(basename "$GGML")" -l:"$(basename "$BASE")" ${LIB_DEPS:-} -o "$BIN" ||
        { echo "llama-quant: cannot build $BIN"; exit 1; }
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
"$BIN" "$LIBDIR" "$PTOL" "$TOL" "$MODEL" "$TMP"
