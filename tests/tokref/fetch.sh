#!/bin/sh
# Installs the reference tests/test_tok_llama.c compares attnscope's
# tokenizer with, into DIR (make's $(BUILD)/llama-ref), from the npm
# registry only:
#   - node-llama-cpp@VERSION carries llama.cpp's source as a git bundle
#     (llama/gitRelease.bundle): llama.h, and the vocabulary test files
#     models/ggml-vocab-*.gguf with their .inp/.out;
#   - @node-llama-cpp/linux-x64@VERSION carries libllama built from it.
# `npm pack` fetches just those two tarballs (no dependencies, no install
# scripts). The peer program tests/tokref/llama_tokenize.c is built
# against them and tried once.
#
# It never fails the build: when something is missing (npm, the network,
# git, a compiler, a CPU libllama runs on) it writes DIR/status with the
# reason and prints it in a box, and the tests that need it skip loudly.
# DIR/status holds "ok" once everything is in place; rerun after
# deleting DIR to try again.
#
# usage: fetch.sh DIR VERSION CC SRCDIR
set -u
dir=$1 version=$2 cc=$3 src=$4

skip() {
    mkdir -p "$dir"
    echo "$*" > "$dir/status"
    {
        echo "**********************************************************************"
        echo "** attnscope: llama.cpp tokenizer reference NOT installed:"
        echo "**   $*"
        echo "** tests/test_tok_llama.c will SKIP its comparisons with llama.cpp."
        echo "** (delete $dir to try again)"
        echo "**********************************************************************"
    } >&2
    exit 0
}

[ "$(cat "$dir/status" 2>/dev/null)" = ok ] && exit 0
rm -rf "$dir"
mkdir -p "$dir/npm" || skip "cannot create $dir"
dir=$(cd "$dir" && pwd) src=$(cd "$src" && pwd)
command -v npm >/dev/null 2>&1 || skip "npm is not installed (apt-get install npm)"
command -v git >/dev/null 2>&1 || skip "git is not installed"
[ "$(uname -m)" = x86_64 ] && [ "$(uname -s)" = Linux ] || skip "libllama from npm is built for linux-x64 only"

echo "attnscope: fetching node-llama-cpp@$version and @node-llama-cpp/linux-x64@$version from npm" >&2
(cd "$dir/npm" && npm pack --loglevel=error --fetch-retries=1 --fetch-timeout=120000 \
    "node-llama-cpp@$version" "@node-llama-cpp/linux-x64@$version" >/dev/null 2>"$dir/npm.log") ||
    skip "npm pack failed (registry unreachable?): $(tail -n 2 "$dir/npm.log" | tr '\n' ' ')"
(cd "$dir/npm" && tar xzf "node-llama-cpp-$version.tgz" package/llama/gitRelease.bundle &&
    mkdir -p bins && tar xzf "node-llama-cpp-linux-x64-$version.tgz" -C bins) ||
    skip "the npm tarballs do not hold what was expected"
rm -f "$dir/npm"/*.tgz

git clone -q --no-checkout "$dir/npm/package/llama/gitRelease.bundle" "$dir/llama.cpp" 2>"$dir/git.log" &&
    (cd "$dir/llama.cpp" && git -c advice.detachedHead=false checkout -q HEAD -- include ggml/include models LICENSE) \
    2>>"$dir/git.log" || skip "cannot unpack llama.cpp's source bundle: $(tail -n 1 "$dir/git.log")"
rm -rf "$dir/npm/package"

lib=$dir/npm/bins/package/bins/linux-x64
soname() { ls "$lib" | grep -E "^$1(\.v[0-9.]+)?\.so\$" | head -n 1; }
llama=$(soname libllama) ggml=$(soname libggml) base=$(soname libggml-base)
[ -n "$llama" ] && [ -n "$ggml" ] && [ -n "$base" ] || skip "libllama/libggml not found in @node-llama-cpp/linux-x64"
$cc -std=c11 -O2 -I"$dir/llama.cpp/include" -I"$dir/llama.cpp/ggml/include" "$src/tests/tokref/llama_tokenize.c" \
    -L"$lib" -Wl,-rpath,"$(cd "$lib" && pwd)" -l:"$llama" -l:"$ggml" -l:"$base" -o "$dir/llama-tokenize" \
    2>"$dir/cc.log" || skip "cannot build tests/tokref/llama_tokenize.c: $(head -n 1 "$dir/cc.log")"
got=$(printf '0 0 4\n3333\n1 0 4\n3333\n' | "$dir/llama-tokenize" "$dir/llama.cpp/models/ggml-vocab-llama-bpe.gguf" \
    2>"$dir/run.log" | tr '\n' ,)
[ "$got" = "8765 18,128000 8765 18," ] || skip "llama-tokenize does not run here: $(head -n 1 "$dir/run.log") (got '$got')"
echo ok > "$dir/status"
echo "attnscope: llama.cpp tokenizer reference installed in $dir" >&2
