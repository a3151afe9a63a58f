#!/bin/sh
# attnscope's logits against llama.cpp's on every fixture model, through
# llama.cpp's C API (tests/peer/llama_compare.c). llama.cpp comes as the
# project's benchmark takes it (tests/bench/RESULTS.md): prebuilt
# libraries from npm's @node-llama-cpp/linux-x64, headers from the
# llama.cpp git bundle inside node-llama-cpp, both 3.22.1, installed once
# under $LLAMA_PEERS (default build/peers). Where they cannot be had, the
# comparison is skipped with a banner, never silently.
#
#   CC=cc LIB=build/libattnscope.a LIB_DEPS="..." CFLAGS="..." sh tests/peer/llama_compare.sh
set -u
BUILD=${BUILD:-build}
PEERS=${LLAMA_PEERS:-$BUILD/peers}
VERSION=3.22.1
NPM_DIR=$PEERS/npm
LIBDIR=$NPM_DIR/node_modules/@node-llama-cpp/linux-x64/bins/linux-x64
SRC=$PEERS/llama.cpp
BIN=$BUILD/llama-compare
TOL=${LLAMA_COMPARE_TOL:-1e-3}
FIXTURES=${LLAMA_COMPARE_FIXTURES:-$(ls tests/fixtures/*.gguf | sed 's/\.gguf$//')}
# Fixtures llama.cpp computes otherwise, by design, each with the reason
# (attnscope checks them against PyTorch only, in tests/test_interp.c).
EXCEPT="tiny-mistral: llama.cpp runs arch llama without attention.sliding_window (src/models/llama.cpp)"

skip() {
    echo "################################################################################"
    echo "## SKIPPED: attnscope vs llama.cpp logits were NOT compared."
    echo "## $1"
    echo "## (needs npm and its registry; set LLAMA_PEERS to a folder holding an install)"
    echo "################################################################################"
    exit 0
}

lib() { ls "$LIBDIR"/$1 2>/dev/null | head -n 1; }

if [ -z "$(lib 'libllama.*so')" ] || [ ! -f "$NPM_DIR/node_modules/node-llama-cpp/llama/gitRelease.bundle" ]; then
    command -v npm >/dev/null 2>&1 || skip "npm is not installed (apt-get install npm)"
    mkdir -p "$NPM_DIR"
    echo "llama-compare: installing llama.cpp $VERSION from npm into $NPM_DIR"
    (cd "$NPM_DIR" && npm install --no-audit --no-fund --ignore-scripts --loglevel=error \
        "@node-llama-cpp/linux-x64@$VERSION" "node-llama-cpp@$VERSION" >/dev/null) ||
        skip "npm install of @node-llama-cpp/linux-x64@$VERSION failed"
fi
if [ ! -f "$SRC/include/llama.h" ]; then
    command -v git >/dev/null 2>&1 || skip "git is not installed (for llama.cpp's headers)"
    rm -rf "$SRC"
    git -c advice.detachedHead=false clone -q "$NPM_DIR/node_modules/node-llama-cpp/llama/gitRelease.bundle" "$SRC" ||
        skip "cannot unpack llama.cpp's headers from node-llama-cpp's git bundle"
fi

LLAMA=$(lib 'libllama.*so') GGML=$(lib 'libggml.*so') BASE=$(lib 'libggml-base.so')
[ -n "$LLAMA" ] && [ -n "$GGML" ] && [ -n "$BASE" ] || skip "the npm package has no libllama/libggml for this machine"
if [ ! -x "$BIN" ] || [ "$BIN" -ot tests/peer/llama_compare.c ] || [ "$BIN" -ot "$LIB" ]; then
    # shellcheck disable=SC2086
    ${CC:-cc} -std=c11 -D_GNU_SOURCE -O2 ${CFLAGS:-} -Iinclude -I"$SRC/include" -I"$SRC/ggml/include" \
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
