#!/bin/sh
# attnscope's logits against llama.cpp's on every fixture model, through
# llama.cpp's C API (tests/peer/llama_compare.c); an encoder's per-token
# outputs and pooled vector in llama.cpp's embeddings mode instead. llama.cpp is the copy
# `make llama-ref` installs (prebuilt libraries from npm's
# @node-llama-cpp/linux-x64, headers from the llama.cpp git bundle inside
# node-llama-cpp, both 3.22.1) in $LLAMA_REF. Where it could not be had,
# the comparison is skipped with a banner, never silently.
#
#   CC=cc LIB=build/libattnscope.a LIB_DEPS="..." CFLAGS="..." LLAMA_REF=build/llama-ref sh tests/peer/llama_compare.sh
set -u
BUILD=${BUILD:-build}
# llama.cpp as `make llama-ref` installs it (tests/tokref/fetch.sh: npm's
# @node-llama-cpp/linux-x64 and node-llama-cpp's source bundle): one copy
# for every comparison with llama.cpp.
REF=${LLAMA_REF:-$BUILD/llama-ref}
LIBDIR=$REF/npm/bins/package/bins/linux-x64
SRC=$REF/llama.cpp
BIN=$BUILD/llama-compare
TOL=${LLAMA_COMPARE_TOL:-1e-3}
FIXTURES=${LLAMA_COMPARE_FIXTURES:-$(ls tests/fixtures/*.gguf | sed 's/\.gguf$//')}
# Fixtures llama.cpp computes otherwise, by design, each with the reason
# (attnscope checks them against PyTorch only, in tests/test_interp.c).
EXCEPT="tiny-mistral: llama.cpp runs arch llama without attention.sliding_window (src/models/llama.cpp)
tiny-transformer: llama.cpp has no graph for the original encoder-decoder Transformer (its t5 graph is pre-norm RMSNorm with relative position buckets); nn.Transformer is its reference
tiny-transformer-sep: as tiny-transformer
tiny-vit: libllama runs no vision tower (llama.cpp's CLIP graph lives in tools/mtmd, outside libllama); torchvision is its reference
t5-ugm: a vocabulary without weights, the t5 tokenizer's fixture (tests/test_tok_llama.c holds its ids to llama.cpp's)
tiny-bert-erf: llama.cpp runs every bert with the tanh GELU (convert's note says so); PyTorch's erf pass is its reference"

skip() {
    echo "################################################################################"
    echo "## SKIPPED: attnscope vs llama.cpp logits were NOT compared."
    echo "## $1"
    echo "## (make llama-ref installs llama.cpp from npm; it needs npm and its registry)"
    echo "################################################################################"
    exit 0
}

lib() { ls "$LIBDIR"/$1 2>/dev/null | head -n 1; }

[ "$(cat "$REF/status" 2>/dev/null)" = ok ] || skip "llama.cpp is not installed: $(cat "$REF/status" 2>/dev/null || echo "no $REF")"
LLAMA=$(lib 'libllama.*so') GGML=$(lib 'libggml.*so') BASE=$(lib 'libggml-base.so')
[ -n "$LLAMA" ] && [ -n "$GGML" ] && [ -n "$BASE" ] || skip "the npm package has no libllama/libggml for this machine"
if [ ! -x "$BIN" ] || [ "$BIN" -ot tests/peer/llama_compare.c ] || [ "$BIN" -ot "$LIB" ]; then
    # shellcheck disable=SC2086
    ${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 ${CFLAGS:-} -Iinclude -Isrc -I"$SRC/include" -I"$SRC/ggml/include" \
        tests/peer/llama_compare.c "$LIB" -L"$LIBDIR" -Wl,-rpath,"$(cd "$LIBDIR" && pwd)" \
        -l:"$(basename "$LLAMA")" -l:"$(basename "$GGML")" -l:"$(basename "$BASE")" ${LIB_DEPS:-} -o "$BIN" ||
        { echo "llama-compare: cannot build $BIN"; exit 1; }
fi
RUN=""
for f in $FIXTURES; do
    why=$(echo "$EXCEPT" | sed -n "s|^$(basename "$f"): ||p")
    if [ -n "$why" ]; then echo "not compared $f.gguf: $why"; else RUN="$RUN $f"; fi
done
# shellcheck disable=SC2086
"$BIN" "$LIBDIR" "$TOL" $RUN
