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
# rewrites them, to be read before committing). The way golden.sh works.
set -u
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
MODELS=$HERE/../../models
GOLDEN=$HERE/golden
UPDATE=${GOLDEN_UPDATE:-0}
. "$HERE/tmux_lib.sh"
tmux_setup attnscope-golden-pos

ok() { pass=$((pass + 1)); }
bad() {
    fail=$((fail + 1))
    echo "FAIL: $1"
}

start() {
    name=$1 model=$2 cols=$3 rows=$4
    cat > "$TMP/$name.sh" <<EOS
unset COLORTERM
export NO_COLOR=1 LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=$TERMINAL XDG_STATE_HOME="$TMP/state-$name"
"$BIN" -m "$MODELS/$model.gguf" --threads 1
exec sleep 600
EOS
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

# state SESSION GOLDEN "COMMANDS"
state() {
    name=$1 golden=$2 cmds=$3
    rm -f "$TMP/$golden.txt"
    typed "$name" "${cmds:+$cmds; }view dump $golden.txt"
    keys "$name" Enter
    if ! wait_file "$TMP/$golden.txt" 60; then
        screen "$name"
        bad "$golden: no dump written"
        sed 's/^/  screen: /' "$TMP/screen"
        return
    fi
    compare "$golden"
}

PROMPT='It is a truth universally acknowledged, that a single man in possession of a good fortune'

for size in "160 48" "120 35" "80 24"; do
    set -- $size
    c=$1 r=$2
    for m in gpt2 llama moe; do
        start "po$m$c" "austen-$m" "$c" "$r"
        state "po$m$c" "positions-$m-${c}x$r" "set delay 0; prompt $PROMPT; finish; view layer 1; view pos 8; view positions"
    done
    start "pode$c" de-en "$c" "$r"
    state "pode$c" "positions-de-en-${c}x$r" "set delay 0; source Der Mann ist gut.; prompt The man is; finish; view pos 3; view positions"
done

# T5's relative buckets (a fixture: no bundled model has them), the
# decoder's (causal) and the encoder's (both ways)
start pot5 ../tests/fixtures/tiny-t5 120 35
state pot5 positions-t5-120x35 "set delay 0; source-ids 5 6 7 8; prompt-ids 0 5 6; finish; view head 2; view positions"
state pot5 positions-t5-120x35-encoder "view site encoder"

echo "golden positions e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
