# Shared by the scripts that drive attnscope inside tmux (tests/e2e/tui.sh,
# tests/e2e/golden.sh, tests/test_reliability_tui.sh): a private tmux
# server, read the screen, send keys, wait for a pattern.

# tmux_setup NAME: sets T (tmux on a socket of its own), TMP (a scratch
# directory), TERMINAL and the pass/fail counts; both go at exit.
tmux_setup() {
    command -v tmux >/dev/null 2>&1 || { echo "FAIL: tmux is needed for the view's tests"; exit 1; }
    TMP=$(mktemp -d)
    SOCK=$1-$$
    T="tmux -L $SOCK -f /dev/null"
    trap '$T kill-server 2>/dev/null; rm -rf "$TMP"' EXIT
    pass=0
    fail=0
    TERMINAL=tmux-256color
    infocmp $TERMINAL >/dev/null 2>&1 || TERMINAL=screen-256color
}

screen() { $T capture-pane -p -t "$1" > "$TMP/screen" 2>/dev/null; }
screen_e() { $T capture-pane -p -e -t "$1" > "$TMP/screen" 2>/dev/null; }
keys() { name=$1; shift; $T send-keys -t "$name" "$@"; }
typed() { $T send-keys -t "$1" -l "$2"; }

# wait_for NAME PATTERN [SECONDS]: polls the screen until grep -E finds it.
wait_for() {
    _w=0
    _polls=$(( ${3:-10} * 20 ))
    while [ $_w -lt $_polls ]; do
        screen "$1"
        grep -Eq -- "$2" "$TMP/screen" && return 0
        sleep 0.05
        _w=$((_w + 1))
    done
    return 1
}
