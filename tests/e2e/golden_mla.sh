#!/bin/sh
# Golden screens of `view mla` (key M): multi-head latent attention on
# austen-moe at 160x48, 120x35 and 80x24 (layer 1, head 3, token 8), and
# key M on austen-gpt2 at 80x24, which has no latent: the line saying why.
# The way of tests/e2e/golden.sh (golden_lib.sh's machinery): `view dump`
# compared whole with tests/e2e/golden/mla-*.txt; GOLDEN_UPDATE=1 rewrites
# them, to be read before committing. mla.sh checks the numbers.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/golden_lib.sh"
golden_setup attnscope-golden-mla

PROMPT='It is a truth universally acknowledged, that a single man in possession of a good fortune'
for size in "160 48" "120 35" "80 24"; do
    set -- $size
    start "mla$1" austen-moe "$1" "$2"
    state "mla$1" "mla-moe-${1}x$2" "set delay 0; prompt $PROMPT; finish; view layer 1; view head 3; view pos 8; view mla"
done
# another layer and token at 80x24 (the view follows the selection)
state mla80 mla-moe-80x24-layer3-pos20 "view layer 3; view head 0; view pos 20"
# austen-gpt2 has no latent: key M says why
start mlag80 austen-gpt2 80 24
state mlag80 mla-gpt2-80x24-finish "set delay 0; prompt $PROMPT; finish"
# (the line is the command line's row, which a dump's own ':' would
# clear: this screen is tmux's, after the key)
keys mlag80 Escape
wait_for mlag80 'press : to type a command' || bad "mla-gpt2: Esc did not leave the command line"
keys mlag80 M
if wait_for mlag80 'no MLA latent pane' 10; then
    cp "$TMP/screen" "$TMP/mla-gpt2-80x24-key-M.txt"
    compare mla-gpt2-80x24-key-M
else
    bad "mla-gpt2: key M said nothing"
    sed 's/^/  screen: /' "$TMP/screen"
fi

echo "golden mla: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
