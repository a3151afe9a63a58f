#!/bin/sh
# Golden screens: the full-screen view driven in tmux on the bundled
# Golden screens of `view mla` (key M): multi-head latent attention on
# austen-moe at 160x48, 120x35 and 80x24 (layer 1, head 3, token 8), and
# key M on austen-gpt2 at 80x24, which has no latent: the line saying why.
# The way of tests/e2e/golden.sh (its functions copied; state_keys left out): `view dump`
# compared whole with tests/e2e/golden/mla-*.txt; GOLDEN_UPDATE=1 rewrites
# them, to be read before committing. mla.sh checks the numbers.
set -u
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
MODELS=$HERE/../../models
GOLDEN=$HERE/golden
UPDATE=${GOLDEN_UPDATE:-0}
. "$HERE/tmux_lib.sh"
tmux_setup attnscope-golden-mla

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
state() {
    name=$1 golden=$2 cmds=$3
    rm -f "$TMP/$golden.txt"
    typed "$name" "${cmds:+$cmds; }view dump $golden.txt"
    dumped "$name" "$golden"
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
