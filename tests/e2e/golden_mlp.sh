#!/bin/sh
# Golden screens of `view mlp` (the MLP's activation curve, where the
# token's pre-activations fall, the neurons of largest |post|): the
# full-screen view driven in tmux at 160x48, 120x35 and 80x24 on
# austen-gpt2 (GELU), austen-llama (SwiGLU), austen-moe (a dense layer, a
# routed layer's chosen expert and its shared expert) and de-en (ReLU; the
# decoder's MLP and the encoder's); one run outside UTF-8 (ASCII curve and
# histogram); each screen written by `view dump` and compared whole with
# tests/e2e/golden/mlp-*.txt, as tests/e2e/golden.sh does (golden_lib.sh's
# machinery; GOLDEN_UPDATE=1 rewrites the expected screens: read every
# changed file before committing it).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/golden_lib.sh"
golden_setup attnscope-golden-mlp

PROMPT='It is a truth universally acknowledged, that a single man in possession of a good fortune'
S="set delay 0; prompt $PROMPT; finish"
D="set delay 0; source Der Mann ist gut.; prompt The man; finish"

for size in "160 48" "120 35" "80 24"; do
    set -- $size
    c=$1 r=$2
    start "mg$c" austen-gpt2 "$c" "$r"
    state "mg$c" "mlp-gpt2-${c}x$r" "$S; view layer 1; view pos 8; view mlp"
    start "ml$c" austen-llama "$c" "$r"
    state "ml$c" "mlp-llama-${c}x$r" "$S; view layer 1; view pos 8; view mlp"
    start "mm$c" austen-moe "$c" "$r"
    state "mm$c" "mlp-moe-${c}x$r-expert" "$S; view layer 1; view pos 8; view mlp"
    start "md$c" de-en "$c" "$r"
    state "md$c" "mlp-de-en-${c}x$r-decoder" "$D; view layer 1; view mlp"
done
# a routed layer: Left from the first chosen expert to the shared one;
# the dense first layer
state_keys mm80 mlp-moe-80x24-shared Left
state mm120 mlp-moe-120x35-dense 'view layer 0'
# the encoder's MLP, at its row 3
state md120 mlp-de-en-120x35-encoder 'view site encoder'
state_keys md120 mlp-de-en-120x35-encoder-row3 J J J
# outside UTF-8: the curve in '*', the histogram in ASCII shades
start ma80 austen-gpt2 80 24 'LANG=C LC_ALL=C'
state ma80 mlp-gpt2-80x24-ascii "$S; view layer 1; view pos 8; view mlp"
# before any pass, and in the middle of one: what there is to do
start mf80 austen-llama 80 24
state mf80 mlp-llama-80x24-no-context 'view mlp'
state mf80 mlp-llama-80x24-mid-pass 'set delay 0; prompt It is a truth; step; step; step; view layer 1'

echo "golden mlp e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
