#!/bin/sh
# Golden screens of `view residual` (the residual stream's norm by depth
# under the block's wiring): the full-screen view driven in tmux at 80x24
# (the pane in the shared slot), 120x35 and 160x48, on a Pre-LN model with
# LayerNorm (austen-gpt2), with RMSNorm (austen-llama), with routed experts
# (austen-moe), the Post-LN encoder-decoder (de-en: its decoder, with
# cross-attention's add and third norm), and at 80x24 the Post-LN encoder
# (austen-bert) and Gemma 2's sandwich (the tiny-gemma2 test fixture);
# `view dump NAME.txt` writes each screen, compared whole with
# tests/e2e/golden/resid-NAME.txt. Deterministic as golden.sh's (one
# thread, no timings on screen); the numbers themselves are checked
# against the arrays by resid.sh.
#
# GOLDEN_UPDATE=1 rewrites the expected screens from this run instead of
# comparing: read every changed file (git diff) before committing it
# (golden_lib.sh's machinery, as golden.sh).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/golden_lib.sh"
golden_setup attnscope-golden-resid

PROMPT='It is a truth universally acknowledged, that a single man in possession of a good fortune'

for size in "80 24" "120 35" "160 48"; do
    set -- $size
    c=$1 r=$2
    for m in gpt2 llama moe; do
        start "r$m$c" "austen-$m" "$c" "$r"
        state "r$m$c" "resid-$m-${c}x$r" "set delay 0; prompt $PROMPT; finish; view layer 2; view pos 8; view residual"
    done
    start "rde$c" de-en "$c" "$r"
    state "rde$c" "resid-de-en-${c}x$r" "set delay 0; source Der Mann ist gut.; prompt The man; finish; view layer 1; view residual"
done
start rbert80 austen-bert 80 24
state rbert80 resid-bert-80x24 "set delay 0; prompt the cat sat on the [MASK]; finish; view layer 1; view residual"
start rgemma80 ../tests/fixtures/tiny-gemma2 80 24
state rgemma80 resid-gemma2-80x24 "set delay 0; prompt-ids 1 5 9 30 41 77 120; finish; view residual"

echo "golden resid e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
