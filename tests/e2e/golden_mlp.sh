#!/bin/sh
# Golden screens of `view mlp` (the MLP's activation curve, where the
# token's pre-activations fall, the neurons of largest |post|): the
# full-screen view driven in tmux at 160x48, 120x35 and 80x24 on
# austen-gpt2 (GELU), austen-llama (SwiGLU), austen-moe (a dense layer, a
# routed layer's chosen expert and its shared expert) and de-en (ReLU; the
# decoder's MLP and the encoder's); one run outside UTF-8 (ASCII curve and
# histogram); each screen written by `view dump` and compared whole with
# tests/e2e/golden/mlp-*.txt, as tests/e2e/golden.sh does (its helpers
# copied here; GOLDEN_UPDATE=1 rewrites the expected screens: read every
# changed file before committing it).
set -u
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
MODELS=$HERE/../../models
GOLDEN=$HERE/golden
UPDATE=${GOLDEN_UPDATE:-0}
. "$HERE/tmux_lib.sh"
tmux_setup attnscope-golden-mlp

ok() { pass=$((pass + 1)); }
bad() {
    fail=$((fail + 1))
    echo "FAIL: $1"
}

# start NAME MODEL COLS ROWS [ENV]: attnscope on models/MODEL.gguf in a new
# tmux session whose working directory (where dumps land) is $TMP.
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

# wait_file FILE [SECONDS]: the dump is renamed into place whole, so its
# existence says it is complete.
wait_file() {
    _w=0
    while [ $_w -lt $(( ${2:-20} * 20 )) ]; do
        [ -f "$1" ] && return 0
        sleep 0.05
        _w=$((_w + 1))
    done
    return 1
}

# state SESSION GOLDEN "COMMANDS": runs the commands (';'-separated, may
# be empty) and `view dump GOLDEN.txt` on one command line, then compares.
state() {
    name=$1 golden=$2 cmds=$3
    rm -f "$TMP/$golden.txt"
    typed "$name" "${cmds:+$cmds; }view dump $golden.txt"
    dumped "$name" "$golden"
}

# Enter on the typed dump command, then the dump compared once written.
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

# Keys (not commands) then the dump, for states only keys reach: Esc
# leaves the command line first (alone: Esc and the next key sent
# together would read as Alt+key), then the keys, then : and the dump.
state_keys() {
    name=$1 golden=$2
    shift 2
    rm -f "$TMP/$golden.txt"
    keys "$name" Escape
    wait_for "$name" 'press : to type a command' || bad "$golden: Esc did not leave the command line"
    keys "$name" "$@"
    typed "$name" ":view dump $golden.txt"
    dumped "$name" "$golden"
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

# The dump is what the terminal shows: once the command is done, tmux's
# own copy of the screen (capture-pane trims trailing spaces too) is the
# same, where no pane changes after the dump (at 80x24 the log, where
# "wrote ..." lands, is hidden).
same_as_tmux() {
    name=$1 golden=$2
    _w=0
    while [ $_w -lt 200 ]; do
        screen "$name"
        cmp -s "$TMP/screen" "$TMP/$golden.txt" && { ok; return; }
        sleep 0.05
        _w=$((_w + 1))
    done
    bad "$golden: the dump is not what tmux shows (- dump, + tmux)"
    diff -u "$TMP/$golden.txt" "$TMP/screen"
}

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
