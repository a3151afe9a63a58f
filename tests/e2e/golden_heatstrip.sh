#!/bin/sh
# Golden screens for issue 33's heatmap and token-strip defects, at the
# sizes a class meets (80x24, 120x35, 160x48), each compared whole with
# the reviewed screen in tests/e2e/golden/heatstrip-*.txt (diff -u on a
# difference; GOLDEN_UPDATE=1 rewrites them: read every changed file).
# The way of tests/e2e/golden.sh (golden_lib.sh's machinery): `view dump`,
# one thread, greedy `gen`.
#
# - The heatmap uses its pane: the cells first, then the labels take what
#   they leave (query labels whole where the map leaves columns, the key
#   pieces staggered over the rows free above it: the source's words
#   over a cross-attention's columns); a context just over the rows
#   fills them (a row a query, the first few two to a row) instead of
#   half the pane. austen-gpt2, austen-llama, austen-moe, de-en (self-
#   and cross-attention).
# - The 80x24 token strip (one row) scrolls by whole tokens around the
#   selection, a … where tokens are hidden: a step of the selection moves
#   it a token or two, never a screen.
# - After lesson bert, Right changes the head (not the norm) at 120x35
#   too (80x24: golden.sh).
# - The "◀ generated" mark inside the next-token pane, ~100% as 100.0%,
#   and the line under the list whole, at 160x48 too (80x24 and 120x35:
#   golden.sh, and here with the issue's key 3 at 120x35).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/golden_lib.sh"
golden_setup attnscope-heatstrip

PROMPT='It is a truth universally acknowledged, that a single man in possession of a good fortune'
SOURCE='Der Mann ist gut, aber das Wasser ist kalt.'
TARGET='The man is good, but the water is cold.'

# ---- the heatmap: every model, every size ----
for size in "80 24" "120 35" "160 48"; do
    set -- $size
    c=$1 r=$2
    for m in gpt2 llama moe; do
        start "h$m$c" "austen-$m" "$c" "$r"
        state "h$m$c" "heatstrip-$m-${c}x$r-heatmap" "set delay 0; prompt $PROMPT; finish; view pos 18; view key 4"
    done
    # de-en: the decoder's self-attention, then its cross-attention over
    # the source (·water's row, ·Wasser's column)
    start "hde$c" de-en "$c" "$r"
    state "hde$c" "heatstrip-de-en-${c}x$r-self" "set delay 0; source $SOURCE; prompt $TARGET; finish; view pos 10; view key 3"
    state "hde$c" "heatstrip-de-en-${c}x$r-cross" "view site cross; view pos 10; view key 12"
done

# ---- the 80x24 token strip: one row, scrolled by token ----
start s80 austen-gpt2 80 24
state s80 heatstrip-gpt2-80x24-strip-start "set delay 0; prompt $PROMPT; finish; view pos 3"
state s80 heatstrip-gpt2-80x24-strip-middle 'view pos 13'
# one step right from the middle: the strip moves by a token, not a row
state s80 heatstrip-gpt2-80x24-strip-step 'view pos 19'
state s80 heatstrip-gpt2-80x24-strip-step2 'view pos 20'
# and every step, left and right: the selected chip always whole on the
# row, the row starting at a chip (or the marker), never a jump past it
_prev=''
for p in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 24 12 11 10 9 8 7 6 5 0; do
    typed s80 "view pos $p"
    keys s80 Enter
    sleep 0.3
    screen s80
    line=$(sed -n 2p "$TMP/screen")
    case "$line" in
    '│ <|endoftext|>'*|'│ …'*) ok ;;
    *) bad "strip at pos $p: starts with a fragment: $line" ;;
    esac
    grep -q 'Attention' "$TMP/screen" || bad "strip at pos $p: no heatmap"
done
# the strip at 120x35 (two rows: the whole sentence, as before)
start s120 austen-gpt2 120 35
state s120 heatstrip-gpt2-120x35-strip "set delay 0; prompt $PROMPT; finish; view pos 13"

# ---- after lesson bert, Right changes the head, at 120x35 too ----
start b120 austen-gpt2 120 35
lesson_to b120 bert 6
keys b120 Space
sleep 0.5
state_keys b120 heatstrip-bert-120x35-lesson-end-right Right

# ---- the next-token pane after gen, the issue's keys, every size ----
for size in "120 35" "160 48"; do
    set -- $size
    start "i$1" induction "$1" "$2"
    typed "i$1" 'set delay 0; prompt abcdefghabcdefgh; gen 4'
    keys "i$1" Enter
    wait_for "i$1" 'generated: abcd' 30 || bad "induction: gen 4 did not finish"
    typed "i$1" 'view pos 16'
    keys "i$1" Enter
    sleep 0.3
    state_keys "i$1" "heatstrip-induction-${1}x$2-probs-key3" 3
done

echo "heatstrip e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
