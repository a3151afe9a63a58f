#!/bin/sh
# The Hugging Face fixture directories (tests/fixtures/hf/NAME, made by
# models/recipes/hf_fixtures.py) written as GGUF by attnscope's `convert`
# into BUILD/hf-converted/NAME.gguf, each beside a link to the GGUF
# fixture's folder (its tokens and types), so llama_compare.sh can hold
# llama.cpp's pass over the converted file to attnscope's. Prints the
# converted files' paths without .gguf, one a line.
#   sh tests/peer/hf_convert.sh PROG BUILD
set -u
prog=$1 out=$2/hf-converted
mkdir -p "$out"
for d in tests/fixtures/hf/*/; do
    n=$(basename "$d")
    # the tokens of its GGUF twin's fixture, else of PyTorch's pass beside it (tiny-gemma2-hf.ref/); the
    # F16/BF16 copies have neither
    fix=tests/fixtures/$n
    [ -d "$fix" ] || fix=tests/fixtures/hf/$n.ref
    [ -d "$fix" ] || continue
    rm -f "$out/$n.gguf"
    "$prog" -e "convert $d $out/$n.gguf" >/dev/null || echo "hf_convert: $d was not converted" >&2
    ln -sfn "$(pwd)/$fix" "$out/$n"
    echo "$out/$n"
done
