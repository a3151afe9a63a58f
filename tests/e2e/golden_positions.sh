#!/bin/sh
# Golden screens of `view positions` (key p): the full-screen view driven
# in tmux at 160x48, 120x35 and 80x24 (its shared slot) on the four kinds
# of position signal the bundled models have: a learned table
# (austen-gpt2), the sinusoids (de-en, the decoder's), rotary
# (austen-llama) and MLA's decoupled rotary part (austen-moe); and T5's
# relative buckets on the tiny-t5 fixture at 120x35. Without
# colour (NO_COLOR), so the heatmap's cells are shading characters and
# its pattern is in the text. `view dump` writes each screen and it is
# compared whole with tests/e2e/golden/positions-*.txt (GOLDEN_UPDATE=1
# rewrites them, to be read before committing). The way golden.sh works
# (golden_lib.sh's machinery).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/golden_lib.sh"
golden_setup attnscope-golden-pos

PROMPT='It is a truth universally acknowledged, that a single man in possession of a good fortune'

for size in "160 48" "120 35" "80 24"; do
    set -- $size
    c=$1 r=$2
    for m in gpt2 llama moe; do
        start "po$m$c" "austen-$m" "$c" "$r" NO_COLOR=1
        state "po$m$c" "positions-$m-${c}x$r" "set delay 0; prompt $PROMPT; finish; view layer 1; view pos 8; view positions"
    done
    start "pode$c" de-en "$c" "$r" NO_COLOR=1
    state "pode$c" "positions-de-en-${c}x$r" "set delay 0; source Der Mann ist gut.; prompt The man is; finish; view pos 3; view positions"
done

# T5's relative buckets (a fixture: no bundled model has them), the
# decoder's (causal) and the encoder's (both ways)
start pot5 ../tests/fixtures/tiny-t5 120 35 NO_COLOR=1
state pot5 positions-t5-120x35 "set delay 0; source-ids 5 6 7 8; prompt-ids 0 5 6; finish; view head 2; view positions"
state pot5 positions-t5-120x35-encoder "view site encoder"

echo "golden positions e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
