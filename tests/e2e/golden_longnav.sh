#!/bin/sh
# Golden screens of the zoomed-out heatmap (issue 35), at 80x24 and
# 120x35, each compared whole with the reviewed screen in
# tests/e2e/golden/longnav-*.txt (diff -u on a difference;
# GOLDEN_UPDATE=1 rewrites them: read every changed file). The machinery
# is tests/e2e/golden_lib.sh's: `view dump`, one thread.
#
# induction.gguf on 200 random letters and spaces: `view zoom 8` (each
# cell the max of 8x8 tokens, the title says so, queries labelled by
# their blocks, keys numbered by their blocks' first positions, the line
# under the map the cursor's block and its value), then key z (the mean),
# key - (16x16), then `view find` (the query and key jump to a text) at
# zoom 4; and `view zoom 1` gives back the unzoomed screen byte for byte.
# The cells' numbers: tests/e2e/longnav.sh (`zoom`, the same cells,
# against NumPy).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/golden_lib.sh"
golden_setup attnscope-longnav

PROMPT=$(/usr/bin/python3 -c "
import random, string
r = random.Random(3); print(''.join(r.choice(string.ascii_lowercase + ' ') for _ in range(200)).strip())")

# pane_box FILE TITLE: a pane of a dumped screen (the one whose title
# begins with TITLE), its box alone
pane_box() {
    /usr/bin/python3 - "$1" "$2" <<'PYEOF'
import sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
title = "┌ " + sys.argv[2]
top = next(i for i, l in enumerate(lines) if title in l)
left = lines[top].index(title)
right = lines[top].index("┐", left)
for l in lines[top:]:
    print(l[left:right + 1])
    if l[left:left + 1] == "└":
        break
PYEOF
}
attn_box() { pane_box "$1" Attention; }

# until_done SESSION PATTERN TENTHS: screens SESSION (into $TMP/screen)
# every 0.1 s until PATTERN (the progress) is gone, TENTHS tries at most
until_done() {
    _n=0
    while [ "$_n" -lt "$3" ]; do
        screen "$1"
        grep -q "$2" "$TMP/screen" || break
        sleep 0.1
        _n=$((_n + 1))
    done
}

for size in "80 24" "120 35"; do
    set -- $size
    c=$1 r=$2
    start "z$c" induction "$c" "$r"
    state "z$c" "longnav-induction-${c}x$r-unzoomed" "set delay 0; prompt $PROMPT; finish; view pos 150; view key 40"
    state "z$c" "longnav-induction-${c}x$r-zoom8-max" "view zoom 8"
    grep -q "Attention  layer 0  head 0  max of 8×8 tokens a cell" "$TMP/longnav-induction-${c}x$r-zoom8-max.txt" && ok ||
        bad "${c}x$r: the title does not say max of 8x8"
    state_keys "z$c" "longnav-induction-${c}x$r-zoom8-mean" z
    grep -q "mean of 8×8 tokens a cell" "$TMP/longnav-induction-${c}x$r-zoom8-mean.txt" && ok ||
        bad "${c}x$r: key z did not switch to the mean"
    state_keys "z$c" "longnav-induction-${c}x$r-zoom16-mean" -
    grep -q "mean of 16×16 tokens a cell" "$TMP/longnav-induction-${c}x$r-zoom16-mean.txt" && ok ||
        bad "${c}x$r: key - did not zoom out to 16"
    state "z$c" "longnav-induction-${c}x$r-find" "view layer 1; view zoom 4; view zoom max; view find $(echo "$PROMPT" | cut -c31-36)"
    # zoom 1 again: the screen of before, byte for byte
    rm -f "$TMP/back-$c.txt"
    typed "z$c" "view layer 0; view zoom 1; view pos 150; view key 40; view dump back-$c.txt"
    keys "z$c" Enter
    # the attention pane's box (the Output pane beside it logs the commands)
    wait_file "$TMP/back-$c.txt" 60
    attn_box "$TMP/back-$c.txt" > "$TMP/back-$c.box"
    attn_box "$TMP/longnav-induction-${c}x$r-unzoomed.txt" > "$TMP/unzoomed-$c.box"
    if [ -s "$TMP/back-$c.box" ] && cmp -s "$TMP/back-$c.box" "$TMP/unzoomed-$c.box"; then ok; else
        bad "${c}x$r: view zoom 1 does not give the unzoomed heatmap back"
        diff -u "$TMP/unzoomed-$c.box" "$TMP/back-$c.box" | head -20
    fi
done

# ---- a redraw's cells bounded in time (as_capture_cells_budget) ----
# The same commands in two views: one bounded to a tile of rows a redraw
# (AS_TEST_CELL_BUDGET_MS=0) that waits 2 s before going on while idle
# (AS_TEST_CELL_IDLE_MS, a moment to read its first screen), one
# unbounded (-1). Read with colours (capture-pane -e; tests/e2e/cells_lib.py):
# the first screen's title says "computing N%", it shows pending cells
# (the ramp's pending colour, which the unbounded screen never shows), and
# its every other heat cell is the unbounded screen's; once idle, the
# bounded view's attention pane equals the unbounded one cell for cell
# (characters and colours). For the zoomed-out map (8x8, then 4x4 tokens
# a cell on another head) and the grid of every head.
bounded() {
    tag=$1 cmds=$2
    typed "p$tag" "$cmds"
    keys "p$tag" Enter
    typed "f$tag" "$cmds"
    keys "f$tag" Enter
    if ! wait_for "p$tag" 'computing [0-9]+%' 20; then
        bad "$tag: the bounded view never said computing"
        screen "p$tag"
        sed 's/^/  screen: /' "$TMP/screen"
        return
    fi
    sleep 0.3 # the rest of that screen's update (its title is written first)
    $T capture-pane -p -e -t "p$tag" > "$TMP/$tag-part.txt"
    # then the rest, made while no key comes: until the title no longer says computing (60 s at most)
    until_done "p$tag" 'computing [0-9]*%' 600
    wait_for "f$tag" 'attnscope>' 5
    sleep 0.3
    $T capture-pane -p -e -t "p$tag" > "$TMP/$tag-done.txt"
    $T capture-pane -p -e -t "f$tag" > "$TMP/$tag-full.txt"
    if /usr/bin/python3 "$HERE/cells_lib.py" "$TMP/$tag-part.txt" "$TMP/$tag-full.txt" "$TMP/$tag-done.txt" \
        > "$TMP/$tag.log" 2>&1; then ok; else
        bad "$tag: the bounded redraw's screens (tests/e2e/cells_lib.py):"
        sed 's/^/  /' "$TMP/$tag.log"
    fi
}
for size in "80 24" "120 35"; do
    set -- $size
    c=$1 r=$2
    start "pb$c" induction "$c" "$r" "AS_TEST_CELL_BUDGET_MS=0 AS_TEST_CELL_IDLE_MS=2000"
    start "fb$c" induction "$c" "$r" "AS_TEST_CELL_BUDGET_MS=-1"
    for s in pb$c fb$c; do
        typed "$s" "set delay 0; prompt $PROMPT; finish; view pos 150; view key 40"
        keys "$s" Enter
        wait_for "$s" 'logits ready' 20 || bad "$s: the prompt's pass did not finish"
    done
    bounded "b$c" "view zoom 8"
    bounded "b$c" "view head 1; view zoom 4"
    bounded "b$c" "view zoom 1; view layer 1; view grid on"
done

# ---- the logit lens under the same bound (ui/pane_lens.c) ----
# austen-gpt2 (4 layers: 5 lens rows, unembedded 4 at a time, the last
# layer first) at 160x48, bounded (one product a redraw, then the 2 s
# wait) and unbounded: after `view pos 5` the bounded lens's title says
# computing 80%, its embeddings row says computing and shows no number,
# its layer rows are the unbounded pane's; once idle, the whole pane is
# the unbounded one.
start lb austen-gpt2 160 48 "AS_TEST_CELL_BUDGET_MS=0 AS_TEST_CELL_IDLE_MS=2000"
start lf austen-gpt2 160 48 "AS_TEST_CELL_BUDGET_MS=-1"
for s in lb lf; do
    typed "$s" "set delay 0; prompt It is a truth universally acknowledged that a single man; finish"
    keys "$s" Enter
    wait_for "$s" 'logits ready' 20 || bad "$s: the prompt's pass did not finish"
done
for s in lb lf; do
    typed "$s" "view pos 5"
    keys "$s" Enter
done
if wait_for lb 'Logit lens at 5 .*computing 80%' 20; then
    sleep 0.3
    screen lb
    cp "$TMP/screen" "$TMP/lens-part.txt"
    wait_for lf 'Logit lens at 5 .*rank of' 10 || bad "the unbounded lens did not show position 5"
    screen lf
    cp "$TMP/screen" "$TMP/lens-full.txt"
    pane_box "$TMP/lens-part.txt" "Logit lens" > "$TMP/lens-part.box"
    pane_box "$TMP/lens-full.txt" "Logit lens" > "$TMP/lens-full.box"
    grep -q '│ emb  computing  *│' "$TMP/lens-part.box" && ok || bad "the bounded lens's emb row is not pending"
    for l in L0 L1 L2 L3; do
        if grep "│ $l " "$TMP/lens-part.box" | grep -q '#' &&
            [ "$(grep "│ $l " "$TMP/lens-part.box")" = "$(grep "│ $l " "$TMP/lens-full.box")" ]; then ok; else
            bad "the bounded lens's $l row differs from the unbounded one's"
            grep "│ $l " "$TMP/lens-part.box" "$TMP/lens-full.box"
        fi
    done
    until_done lb computing 100
    pane_box "$TMP/screen" "Logit lens" > "$TMP/lens-done.box"
    if cmp -s "$TMP/lens-done.box" "$TMP/lens-full.box"; then ok; else
        bad "the bounded lens, once idle, differs from the unbounded one"
        diff -u "$TMP/lens-full.box" "$TMP/lens-done.box" | head -20
    fi
else
    bad "the bounded lens never said computing 80%"
    screen lb
    sed 's/^/  screen: /' "$TMP/screen"
fi

# ---- pending cells without colour (NO_COLOR: shade glyphs) ----
# A blank cell is a weight of 0 in the shade style: the cells left for
# later are '?', and every other cell of that screen is the unbounded
# screen's; once idle, no '?' is left and the map is the unbounded one.
start nb induction 120 35 "NO_COLOR=1 AS_TEST_CELL_BUDGET_MS=0 AS_TEST_CELL_IDLE_MS=2000"
start nf induction 120 35 "NO_COLOR=1 AS_TEST_CELL_BUDGET_MS=-1"
for s in nb nf; do
    typed "$s" "set delay 0; prompt $PROMPT; finish; view pos 150; view key 40; view zoom 8"
    keys "$s" Enter
done
if wait_for nb 'computing [0-9]+%' 20; then
    sleep 0.3
    screen nb
    attn_box "$TMP/screen" > "$TMP/shade-part.box"
    wait_for nf 'max of 8×8' 10 || bad "the unbounded shade view did not zoom"
    sleep 0.3
    screen nf
    attn_box "$TMP/screen" > "$TMP/shade-full.box"
    until_done nb 'computing [0-9]*%' 100
    attn_box "$TMP/screen" > "$TMP/shade-done.box"
    if /usr/bin/python3 - "$TMP/shade-part.box" "$TMP/shade-full.box" "$TMP/shade-done.box" <<'PYEOF'; then ok; else bad "the shade style's pending cells (above)"; fi
import sys
part, full, done = (open(f, encoding="utf-8").read().splitlines() for f in sys.argv[1:])
# the map's rows: those whose label column ends before the cells (a row label "N text")
rows = [i for i, l in enumerate(full) if i > 2 and l.startswith("│") and i < len(full) - 2]
pending = 0
bad = []
for i in rows:
    if i >= len(part) or len(part[i]) != len(full[i]):
        bad.append(f"row {i}: lengths differ")
        continue
    for j, (a, b) in enumerate(zip(part[i], full[i])):
        if a == "?" and b != "?":
            pending += 1
        elif a != b and not (i == len(full) - 3):  # the cursor's value line may say computing
            bad.append(f"row {i} col {j}: partial {a!r}, whole {b!r}")
if pending == 0:
    bad.append("no pending '?' cell on the bounded screen")
if any("?" in l for l in done):
    bad.append("a '?' is left once idle")
if done != full:
    bad.append("the map once idle differs from the unbounded one")
for b in bad[:10]:
    print("  " + b)
sys.exit(1 if bad else 0)
PYEOF
else
    bad "the bounded shade view never said computing"
    screen nb
    sed 's/^/  screen: /' "$TMP/screen"
fi

echo "longnav golden: $pass passed, $fail failed"
[ "$fail" = 0 ]
