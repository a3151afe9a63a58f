#!/bin/sh
# Makes the README's screenshots from a real run of the full-screen view:
# attnscope in tmux on the bundled model, a prompt, a few generated
# tokens, the head that best attends to the previous token (found with
# `heads`), captured with colours and rendered in DejaVu Sans Mono by
# ansi2png; or, with LESSON=NAME STEP=N, a lesson's step N as a class sees
# it; or, with ROUTE=E on a model with routed MLPs, the routing pane
# focused with expert E selected (PROMPT= sets the prompt, GEN= how many
# tokens follow it); or, with MATH=K, the attention worked out (`view
# math`) with the cursor on key K; or, with VIEW=NAME, that concept view
# (positions, mlp, residual, mla) focused. SIZE=COLSxROWS (default 160x48), FONT=PX (default
# 14). Usage (or `make screenshot`, which makes the README's):
#   AS_BIN=build/attnscope ANSI2PNG=build/ansi2png sh tests/e2e/tui_screenshot.sh assets/screenshot.png
#   SIZE=80x24 FONT=22 LESSON=heads STEP=3 sh tests/e2e/tui_screenshot.sh assets/screenshot-80x24.png
#   AS_TUI_MODEL=models/austen-moe.gguf PROMPT='My dear Mr. Bennet, ...' GEN=4 ROUTE=3 \
#     sh tests/e2e/tui_screenshot.sh assets/screenshot-routing.png
#   SIZE=80x24 FONT=22 MATH=37 sh tests/e2e/tui_screenshot.sh assets/screenshot-math-80x24.png
#   SIZE=120x35 FONT=16 VIEW=residual sh tests/e2e/tui_screenshot.sh assets/screenshot-residual.png
set -eu
BIN=${AS_BIN:-$(pwd)/build/attnscope}
RENDER=${ANSI2PNG:-$(pwd)/build/ansi2png}
OUT=${1:-assets/screenshot.png}
HERE=$(cd "$(dirname "$0")" && pwd)
MODEL=${AS_TUI_MODEL:-$HERE/../../models/austen-gpt2.gguf}
PROMPT=${PROMPT:-'It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a'}
GEN=${GEN:-6}
ROUTE=${ROUTE:-}
MATH=${MATH:-}
VIEW=${VIEW:-}
CMDS=${CMDS:-} # more commands after the prompt's (a metric, say)
KEY=${KEY:-}   # a view key pressed last (G: the gradient page)
SIZE=${SIZE:-160x48}
COLS=${SIZE%x*}
ROWS=${SIZE#*x}
FONT=${FONT:-14}
LESSON=${LESSON:-}
STEP=${STEP:-1}
TMP=$(mktemp -d)
SOCK=attnscope-shot-$$
T="tmux -L $SOCK -f /dev/null"
trap '$T kill-server 2>/dev/null; rm -rf "$TMP"' EXIT

# The layer and head with the highest previous-token score.
best=$("$BIN" -m "$MODEL" -e "prompt $PROMPT; heads" 2>/dev/null | awk '
    /^previous-token/ { on = 1; next }
    on && /^layer/ { next }
    on && /^[0-9]/ { for (i = 2; i <= NF; i++) { v = $i + 0; if (v > max) { max = v; l = $1; h = i - 2 } } next }
    on { exit }
    END { print (l == "" ? 0 : l) " " (h == "" ? 0 : h) }')
layer=${best% *}
head=${best#* }

cat > "$TMP/run.sh" <<EOF
export LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=tmux-256color XDG_STATE_HOME="$TMP/state"
"$BIN" -m "$MODEL"
exec sleep 60
EOF
$T new-session -d -s shot -x "$COLS" -y "$ROWS" "sh $TMP/run.sh"

wait_for() {
    i=0
    while [ $i -lt 200 ]; do
        $T capture-pane -p -t shot > "$TMP/screen"
        grep -Eq -- "$1" "$TMP/screen" && return 0
        sleep 0.05
        i=$((i + 1))
    done
    echo "screenshot: no /$1/ on screen" >&2
    exit 1
}

wait_for '^attnscope>'
if [ -n "$LESSON" ]; then
    $T send-keys -t shot -l "lesson $LESSON"
    $T send-keys -t shot Enter
    at=1 # (wait_for counts with i)
    wait_for " $at/[0-9]+ "
    while [ $at -lt "$STEP" ]; do
        $T send-keys -t shot Space
        at=$((at + 1))
        wait_for " $at/[0-9]+ "
    done
    sleep 0.5 # the step's commands have run when its box shows; let curses settle
    what="lesson $LESSON, step $STEP"
else
    $T send-keys -t shot -l "set delay 0; prompt $PROMPT; gen $GEN; view layer $layer; view head $head; view pos last${MATH:+; view key $MATH; view math}${VIEW:+; view $VIEW}${CMDS:+; $CMDS}"
    $T send-keys -t shot Enter
    wait_for 'generated: '
    $T send-keys -t shot Escape
    wait_for 'press : to type a command'
    what="layer $layer, head $head"
    if [ -n "$ROUTE" ]; then
        $T send-keys -t shot 7
        e=-1
        while [ $e -lt "$ROUTE" ]; do
            $T send-keys -t shot Right
            e=$((e + 1))
        done
        wait_for "expert $ROUTE: "
        what="$what, routing pane, expert $ROUTE"
    fi
    if [ -n "$MATH" ]; then
        wait_for 'worked out'
        what="$what, attention worked out, key $MATH"
    fi
    if [ -n "$VIEW" ]; then
        sleep 0.5 # the view's pane is drawn with the others; let curses settle
        what="$what, view $VIEW"
    fi
    if [ -n "$KEY" ]; then
        $T send-keys -t shot "$KEY"
        sleep 1 # the key's page (a backward pass for G) is drawn
        what="$what, key $KEY"
    fi
fi
$T capture-pane -p -e -t shot > "$TMP/screen.ans"
"$RENDER" "$TMP/screen.ans" "$COLS" "$ROWS" "$OUT" "$FONT"
echo "wrote $OUT ($SIZE, $what)"
