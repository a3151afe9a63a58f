#!/bin/sh
# Golden screens of the zoomed-out heatmap (issue 35), at 80x24 and
# 120x35, each compared whole with the reviewed screen in
# tests/e2e/golden/longnav-*.txt (diff -u on a difference;
# GOLDEN_UPDATE=1 rewrites them: read every changed file). The way of
# tests/e2e/golden.sh: `view dump`, one thread.
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
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
MODELS=$HERE/../../models
GOLDEN=$HERE/golden
UPDATE=${GOLDEN_UPDATE:-0}
. "$HERE/tmux_lib.sh"
tmux_setup attnscope-longnav

ok() { pass=$((pass + 1)); }
bad() {
    fail=$((fail + 1))
    echo "FAIL: $1"
}

start() {
    name=$1 model=$2 cols=$3 rows=$4 envs=${5:-}
    cat > "$TMP/$name.sh" <<EOF
unset COLORTERM NO_COLOR
export LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=$TERMINAL XDG_STATE_HOME="$TMP/state-$name" $envs
"$BIN" -m "$MODELS/$model.gguf" --threads 1
exec sleep 600
EOF
    $T new-session -d -s "$name" -c "$TMP" -x "$cols" -y "$rows" "sh $TMP/$name.sh"
    wait_for "$name" '^attnscope>' 20 || bad "$name: the view did not start"
}

wait_file() {
    _w=0
    while [ $_w -lt $(( ${2:-20} * 20 )) ]; do
        [ -f "$1" ] && return 0
        sleep 0.05
        _w=$((_w + 1))
    done
    return 1
}

compare() {
    if [ "$UPDATE" = 1 ]; then
        cmp -s "$TMP/$1.txt" "$GOLDEN/$1.txt" || echo "golden: updated $1.txt"
        cp "$TMP/$1.txt" "$GOLDEN/$1.txt"
        ok
    elif [ ! -f "$GOLDEN/$1.txt" ]; then
        bad "$1: no expected screen tests/e2e/golden/$1.txt (GOLDEN_UPDATE=1 writes it)"
    elif diff -u "$GOLDEN/$1.txt" "$TMP/$1.txt" > "$TMP/$1.diff"; then
        ok
    else
        bad "$1: the screen differs from tests/e2e/golden/$1.txt (- expected, + now)"
        cat "$TMP/$1.diff"
    fi
}

dumped() {
    keys "$1" Enter
    if ! wait_file "$TMP/$2.txt" 60; then
        screen "$1"
        bad "$2: no dump written"
        sed 's/^/  screen: /' "$TMP/screen"
        return
    fi
    compare "$2"
}

# state SESSION GOLDEN "COMMANDS": the commands and `view dump` on one line.
state() {
    name=$1 golden=$2 cmds=$3
    rm -f "$TMP/$golden.txt"
    typed "$name" "${cmds:+$cmds; }view dump $golden.txt"
    dumped "$name" "$golden"
}

# state_keys SESSION GOLDEN KEYS...: Esc, the keys, then : and the dump.
state_keys() {
    name=$1 golden=$2
    shift 2
    rm -f "$TMP/$golden.txt"
    keys "$name" Escape
    wait_for "$name" 'press : to type a command' || bad "$golden: Esc did not leave the command line"
    keys "$name" "$@"
    sleep 0.3
    typed "$name" ":view dump $golden.txt"
    dumped "$name" "$golden"
}

PROMPT=$(/usr/bin/python3 -c "
import random, string
r = random.Random(3); print(''.join(r.choice(string.ascii_lowercase + ' ') for _ in range(200)).strip())")

# attn_box FILE: the Attention pane of a dumped screen, its box alone
attn_box() {
    /usr/bin/python3 - "$1" <<'PYEOF'
import sys
lines = open(sys.argv[1], encoding="utf-8").read().splitlines()
top = next(i for i, l in enumerate(lines) if "┌ Attention" in l)
left = lines[top].index("┌ Attention")
right = lines[top].index("┐", left)
for l in lines[top:]:
    print(l[left:right + 1])
    if l[left:left + 1] == "└":
        break
PYEOF
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

echo "longnav golden: $pass passed, $fail failed"
[ "$fail" = 0 ]
