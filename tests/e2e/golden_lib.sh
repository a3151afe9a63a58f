# Golden screens' machinery, sourced by tests/e2e/golden*.sh after they set
# HERE (this folder): attnscope driven in tmux (tmux_lib.sh), `view dump
# NAME.txt` writing the screen as text, compared whole with the reviewed
# screen tests/e2e/golden/NAME.txt (diff -u printed on a difference).
# GOLDEN_UPDATE=1 rewrites the expected screens from the run instead of
# comparing: read every changed file (git diff) before committing it.
#
# golden_setup NAME: e2e_setup NAME (tmux_lib.sh: BIN, ROOT, MODELS, the
# tmux server, the pass/fail counts), GOLDEN (the expected screens' folder)
# and UPDATE (GOLDEN_UPDATE).
. "$HERE/tmux_lib.sh"
golden_setup() {
    e2e_setup "$1"
    GOLDEN=$HERE/golden
    UPDATE=${GOLDEN_UPDATE:-0}
}

# start NAME MODEL COLS ROWS [ENV]: attnscope on models/MODEL.gguf (a
# fixture as ../tests/fixtures/NAME) in a new tmux session whose working
# directory (where dumps land) is $TMP.
start() {
    view_start "$1" "$MODELS/$2.gguf" "$3" "$4" "${5:-}"
}

# state SESSION GOLDEN "COMMANDS": runs the commands (';'-separated, may
# be empty) and `view dump GOLDEN.txt` on one command line, then compares.
state() {
    name=$1 golden=$2 cmds=$3
    rm -f "$TMP/$golden.txt"
    typed "$name" "${cmds:+$cmds; }view dump $golden.txt"
    dumped "$name" "$golden"
}

# dumped SESSION GOLDEN: Enter on the typed dump command, then the dump
# compared once written.
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

# state_keys SESSION GOLDEN KEYS...: keys (not commands) then the dump,
# for states only keys reach: Esc leaves the command line first (alone:
# Esc and the next key sent together would read as Alt+key), then the
# keys, a moment for them, then : and the dump.
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

# compare GOLDEN: $TMP/GOLDEN.txt against tests/e2e/golden/GOLDEN.txt (or
# copied there under GOLDEN_UPDATE=1).
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

# same_as_tmux SESSION GOLDEN: the dump is what the terminal shows: once
# the command is done, tmux's own copy of the screen (capture-pane trims
# trailing spaces too) is the same, where no pane changes after the dump
# (at 80x24 the log, where "wrote ..." lands, is hidden).
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

# lesson_to SESSION LESSON STEP: `lesson LESSON` typed, then Space to its
# step STEP (each step waited for).
lesson_to() {
    name=$1 lesson=$2 step=$3
    typed "$name" "lesson $lesson"
    keys "$name" Enter
    wait_for "$name" ' 1/[0-9]+ ' 30 || bad "$name: lesson $lesson did not start"
    _i=1
    while [ $_i -lt "$step" ]; do
        keys "$name" Space
        _i=$((_i + 1))
        wait_for "$name" " $_i/[0-9]+ " 30 || bad "$name: lesson $lesson: no step $_i"
    done
}

# lesson_step SESSION GOLDEN LESSON STEP [KEYS...]: the lesson to its step
# STEP, then the keys (and a moment for them), then the dump.
lesson_step() {
    name=$1 golden=$2 lesson=$3 step=$4
    shift 4
    rm -f "$TMP/$golden.txt"
    lesson_to "$name" "$lesson" "$step"
    [ $# -gt 0 ] && keys "$name" "$@" && sleep 0.3
    typed "$name" ':view dump '"$golden.txt"
    dumped "$name" "$golden"
}
