#!/bin/sh
# Golden screens of lessons (tests/e2e/golden/lesson-*.txt), for the
# defects issue #33 listed, at the sizes a class saw them, each of which
# failed before: the box over the pane the step is about (bert's
# predictions at 80x24, heads' grid at 80x24, heads' Output table at
# 120x35), the title and the keys line cut at 120x35 ("Previous-token
# heads and induction he…", "Backspace ba…"), claims the screen
# contradicted (attention's previous-token head shown on a weak row,
# norms pointing at columns a 48-column pane lacks); and the new
# lessons' steps (cross, vit). The way is golden.sh's (its functions are
# copied here): `view dump` compared whole; GOLDEN_UPDATE=1 rewrites.
set -u
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
MODELS=$HERE/../../models
GOLDEN=$HERE/golden
UPDATE=${GOLDEN_UPDATE:-0}
. "$HERE/tmux_lib.sh"
tmux_setup attnscope-golden-lessons
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


# lesson_step SESSION GOLDEN LESSON STEP [KEYS...]: the lesson to its step
# STEP, then the keys, then the dump.
lesson_step() {
    name=$1 golden=$2 lesson=$3 step=$4
    shift 4
    rm -f "$TMP/$golden.txt"
    typed "$name" "lesson $lesson"
    keys "$name" Enter
    wait_for "$name" ' 1/[0-9]+ ' 30 || bad "$golden: lesson $lesson did not start"
    _i=1
    while [ $_i -lt "$step" ]; do
        keys "$name" Space
        _i=$((_i + 1))
        wait_for "$name" " $_i/[0-9]+ " 30 || bad "$golden: lesson $lesson: no step $_i"
    done
    [ $# -gt 0 ] && keys "$name" "$@" && sleep 0.3
    typed "$name" ':view dump '"$golden.txt"
    dumped "$name" "$golden"
}

for size in "80 24" "120 35"; do
    set -- $size
    c=$1 r=$2
    start "lb$c" austen-gpt2 "$c" "$r"
    lesson_step "lb$c" "lesson-bert-${c}x$r-2" bert 2
    start "lh$c" austen-gpt2 "$c" "$r"
    lesson_step "lh$c" "lesson-heads-${c}x$r-4" heads 4
    start "lo$c" austen-gpt2 "$c" "$r"
    lesson_step "lo$c" "lesson-heads-${c}x$r-6" heads 6
    start "la$c" austen-gpt2 "$c" "$r"
    lesson_step "la$c" "lesson-attention-${c}x$r-3" attention 3
    start "ln$c" austen-gpt2 "$c" "$r"
    lesson_step "ln$c" "lesson-norms-${c}x$r-3" norms 3
    start "lc$c" austen-gpt2 "$c" "$r"
    lesson_step "lc$c" "lesson-cross-${c}x$r-3" cross 3
    start "lv$c" austen-gpt2 "$c" "$r"
    lesson_step "lv$c" "lesson-vit-${c}x$r-3" vit 3
done
# A key during a lesson: 3 focuses the Next token pane, and the box
# moves off it (heads step 3 at 80x24, where the box sat over that slot).
start lk80 austen-gpt2 80 24
lesson_step lk80 lesson-heads-80x24-3-key3 heads 3 3

echo "golden lessons: $pass passed, $fail failed"
[ "$fail" = 0 ]
