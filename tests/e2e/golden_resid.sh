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
# comparing: read every changed file (git diff) before committing it.
set -u
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
MODELS=$HERE/../../models
GOLDEN=$HERE/golden
UPDATE=${GOLDEN_UPDATE:-0}
. "$HERE/tmux_lib.sh"
tmux_setup attnscope-golden-resid

ok() { pass=$((pass + 1)); }
bad() {
    fail=$((fail + 1))
    echo "FAIL: $1"
}

# start NAME MODEL-PATH COLS ROWS: attnscope in a new tmux session whose
# working directory (where dumps land) is $TMP.
start() {
    name=$1 model=$2 cols=$3 rows=$4
    cat > "$TMP/$name.sh" <<SH
unset COLORTERM NO_COLOR
export LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=$TERMINAL XDG_STATE_HOME="$TMP/state-$name"
"$BIN" -m "$model" --threads 1
exec sleep 600
SH
    $T new-session -d -s "$name" -c "$TMP" -x "$cols" -y "$rows" "sh $TMP/$name.sh"
    wait_for "$name" '^attnscope>' 20 || bad "$name: the view did not start"
}

compare() {
    if [ "$UPDATE" = 1 ]; then
        mkdir -p "$GOLDEN"
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

# state SESSION GOLDEN "COMMANDS": the commands and `view dump GOLDEN.txt`
# on one command line, then the dump (renamed into place whole) compared.
state() {
    name=$1 golden=$2 cmds=$3
    rm -f "$TMP/$golden.txt"
    typed "$name" "${cmds:+$cmds; }view dump $golden.txt"
    keys "$name" Enter
    _w=0
    while [ $_w -lt 1200 ] && [ ! -f "$TMP/$golden.txt" ]; do sleep 0.05; _w=$((_w + 1)); done
    if [ ! -f "$TMP/$golden.txt" ]; then
        screen "$name"
        bad "$golden: no dump written"
        sed 's/^/  screen: /' "$TMP/screen"
        return
    fi
    compare "$golden"
}

PROMPT='It is a truth universally acknowledged, that a single man in possession of a good fortune'

for size in "80 24" "120 35" "160 48"; do
    set -- $size
    c=$1 r=$2
    for m in gpt2 llama moe; do
        start "r$m$c" "$MODELS/austen-$m.gguf" "$c" "$r"
        state "r$m$c" "resid-$m-${c}x$r" "set delay 0; prompt $PROMPT; finish; view layer 2; view pos 8; view residual"
    done
    start "rde$c" "$MODELS/de-en.gguf" "$c" "$r"
    state "rde$c" "resid-de-en-${c}x$r" "set delay 0; source Der Mann ist gut.; prompt The man; finish; view layer 1; view residual"
done
start rbert80 "$MODELS/austen-bert.gguf" 80 24
state rbert80 resid-bert-80x24 "set delay 0; prompt the cat sat on the [MASK]; finish; view layer 1; view residual"
start rgemma80 "$HERE/../fixtures/tiny-gemma2.gguf" 80 24
state rgemma80 resid-gemma2-80x24 "set delay 0; prompt-ids 1 5 9 30 41 77 120; finish; view residual"

echo "golden resid e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
