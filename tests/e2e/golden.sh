#!/bin/sh
# Golden screens: the full-screen view driven in tmux on the bundled
# models, at 160x48 (every pane), 120x35 (a projector at a large font) and
# 80x24 (the smallest common terminal, a projector at the largest), through
# a few states, a lesson's step among them; at each, `view dump NAME.txt` writes the
# screen as text and it is compared whole with the reviewed screen in
# tests/e2e/golden/NAME.txt (diff -u printed on a difference). Text only:
# the heatmap's colours are not in a dump, so one run is without colour
# (NO_COLOR), where cells are shading characters and the values show.
#
# Deterministic by construction: one compute thread (--threads 1), greedy
# decoding for `gen`, relative file names (the log echoes the command), a
# fresh readline history, and nothing on screen that depends on time (the
# status line shows no timings). Numbers are the same on one build; another
# compiler or CPU (-march=native, BLAS) may move a last digit, and then the
# diff shows exactly where.
#
# GOLDEN_UPDATE=1 rewrites the expected screens from this run instead of
# comparing: read every changed file (git diff) before committing it. The
# machinery (start, state, state_keys, same_as_tmux, lesson_step) is
# golden_lib.sh's, shared with the other golden_*.sh.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/golden_lib.sh"
golden_setup attnscope-golden

PROMPT='It is a truth universally acknowledged, that a single man in possession of a good fortune'

# ---- austen-gpt2 at 160x48: every pane at once ----
start g160 austen-gpt2 160 48
state g160 gpt2-160x48-fresh ''
state g160 gpt2-160x48-finish "set delay 0; prompt $PROMPT; finish"
state g160 gpt2-160x48-grid 'view grid on'
state g160 gpt2-160x48-layer2-head5 'view grid off; view layer 2; view head 5'
state g160 gpt2-160x48-norms-final-pos5 'view norm final; view pos 5'
state g160 gpt2-160x48-gen 'view norm ln1; view layer 0; view head 1; view pos last; set temp 0; gen 4'

# ---- austen-gpt2 at 80x24: one side pane at a time ----
start g80 austen-gpt2 80 24
state g80 gpt2-80x24-fresh ''
same_as_tmux g80 gpt2-80x24-fresh
state g80 gpt2-80x24-finish "set delay 0; prompt $PROMPT; finish"
same_as_tmux g80 gpt2-80x24-finish
state g80 gpt2-80x24-grid 'view grid on'
state g80 gpt2-80x24-layer2-head5 'view grid off; view layer 2; view head 5'
# Esc leaves the command line for the heatmap; Tab walks the panes: tokens,
# next token, lens, norms. The shared slot shows the focused one.
state_keys g80 gpt2-80x24-lens-tab Tab Tab Tab
state_keys g80 gpt2-80x24-norms-tab Tab
same_as_tmux g80 gpt2-80x24-norms-tab

# ---- austen-gpt2 at 120x35: a projector at a large font ----
start g120 austen-gpt2 120 35
state g120 gpt2-120x35-fresh ''
state g120 gpt2-120x35-finish "set delay 0; prompt $PROMPT; finish"
state g120 gpt2-120x35-lens 'view lens'
state g120 gpt2-120x35-grid 'view grid on'
state g120 gpt2-120x35-gen 'view grid off; view layer 0; view head 1; view pos last; set temp 0; gen 4'

# ---- a lesson's step at 80x24: the box over the bottom slot ----
start l80 austen-gpt2 80 24
lesson_step l80 induction-80x24-lesson-heads-3 heads 3

# ---- austen-llama: RMSNorm, grouped-query attention ----
start l160 austen-llama 160 48
state l160 llama-160x48-finish "set delay 0; prompt $PROMPT; finish"

# ---- induction, without colour: the heads' patterns in shades ----
start i160 induction 160 48 NO_COLOR=1
state i160 induction-160x48-nocolor-grid-l1 'prompt qzvkwjxbmfpdqzvkwjxbmfpd; finish; view layer 1; view grid on'
state i160 induction-160x48-nocolor-l0-h3 'view grid off; view layer 0; view head 3'

# ---- a mixture of experts (the tiny-mixtral test fixture), without
# colour: the routing pane's weights in shades, the chosen experts marked,
# the load under the tokens; an expert selected, its tokens in the strip ----
start m120 ../tests/fixtures/tiny-mixtral 120 35 NO_COLOR=1
state m120 mixtral-120x35-nocolor-routing 'prompt-ids 1 5 9 30 41 77 120 200 250 270; finish; view routing'
state_keys m120 mixtral-120x35-nocolor-expert1 Right Right
start m80 ../tests/fixtures/tiny-mixtral 80 24 NO_COLOR=1
state m80 mixtral-80x24-nocolor-layer1 'prompt-ids 1 5 9 30 41 77 120 200 250 270; finish; view layer 1'

# ---- view math: attention worked out, at every size, on a plain
# multi-head model (gpt2), grouped-query with rotary (llama), latent
# attention (moe) and an encoder-decoder's self- and cross-attention
# (de-en: the keys are the source's positions) ----
for size in "160 48" "120 35" "80 24"; do
    set -- $size
    c=$1 r=$2
    for m in gpt2 llama moe; do
        start "ma$m$c" "austen-$m" "$c" "$r"
        state "ma$m$c" "$m-${c}x$r-math" "set delay 0; prompt $PROMPT; finish; view layer 1; view head 3; view pos 8; view key 5; view math"
    done
    start "made$c" de-en "$c" "$r"
    state "made$c" "de-en-${c}x$r-math-self" "set delay 0; source Der Mann ist gut.; prompt The man; finish; view layer 1; view head 2; view key 1; view math"
    state "made$c" "de-en-${c}x$r-math-cross" "view site cross; view key 2"
done

# ---- issue 33's live-class defects, each at the size a class saw it ----
# The "◀ generated" mark inside the next-token pane's border, and a token
# at ~100% printed as 100.0%, not 1e+02% (the line under the list).
start d80 induction 80 24
typed d80 'set delay 0; prompt abcdefghabcdefgh; gen 4; view pos 16'
keys d80 Enter
wait_for d80 'generated: abcd' 30 || bad "induction: gen 4 did not finish"
state_keys d80 induction-80x24-probs-generated 3
start d120 induction 120 35
state d120 induction-120x35-probs-generated 'set delay 0; prompt abcdefghabcdefgh; gen 4; view pos 17'
# The all-heads grid shows each head's whole map (blocks of keys to a
# cell, the title says how many): the first token's column is there.
start e80 austen-gpt2 80 24 NO_COLOR=1
state e80 gpt2-80x24-nocolor-grid-layer2 "set delay 0; prompt $PROMPT; finish; view grid on; view layer 2"
start e120 austen-gpt2 120 35 NO_COLOR=1
state e120 gpt2-120x35-nocolor-grid-layer2 "set delay 0; prompt $PROMPT; finish; view grid on; view layer 2"

# Keys that do not apply say why (the Output pane at 120x35; at 80x24 the
# command line's row, which the dump's own ':' clears).
start k120 austen-bert 120 35
state k120 bert-120x35-finish 'set delay 0; prompt the cat sat on the [MASK]; finish'
state_keys k120 bert-120x35-keys-not-here x 7 i Space
# A lesson ended gives back the grid and the focus it found; q ends the
# lesson first and says a second q quits.
# (lesson_step: the lesson to its step, then the keys and the dump)
start b80 austen-gpt2 80 24
lesson_step b80 bert-80x24-lesson-esc-at-grid bert 5 Escape
start b80r austen-gpt2 80 24
lesson_step b80r bert-80x24-lesson-end-right bert 6 Space Right
start b120 austen-gpt2 120 35
lesson_step b120 bert-120x35-lesson-q bert 2 q

# austen-moe's shared expert (ungated, DeepSeek's) drawn as the routing
# pane's sh column; BERT's sentence pair: segment B's positions in the
# strip's title, A and B in its legend (B's chips underlined).
start m2 austen-moe 120 35 NO_COLOR=1
state m2 moe-120x35-nocolor-routing-shared 'set delay 0; prompt It is a truth universally acknowledged, that a single man; finish; view layer 2; view routing'
start m3 austen-moe 80 24 NO_COLOR=1
state m3 moe-80x24-nocolor-routing-shared 'set delay 0; prompt It is a truth universally acknowledged, that a single man; finish; view layer 2; view routing'
PAIR='"She was not handsome, but she was clever." "Her sister thought him [MASK] agreeable."'
start p80 austen-bert 80 24
state p80 bert-80x24-pair "set delay 0; prompt $PAIR; finish"
start p120 austen-bert 120 35
state p120 bert-120x35-pair "set delay 0; prompt $PAIR; finish"

# `lens table` in the Output pane: aligned columns cut at the border (not
# wrapped mid-row); at 80x24 the pane (6) scrolled sideways with Right.
start t120 austen-gpt2 120 35
state t120 gpt2-120x35-lens-table "set delay 0; prompt $PROMPT; finish; lens table"
start t80 austen-gpt2 80 24
typed t80 "set delay 0; prompt $PROMPT; finish; lens table"
keys t80 Enter
wait_for t80 'any key closes' 30 || bad "lens table: no output overlay at 80x24"
state_keys t80 gpt2-80x24-lens-table-right 6 Right

echo "golden e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
