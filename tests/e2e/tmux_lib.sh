# Shared by the scripts that drive attnscope inside tmux (tests/e2e/tui.sh,
# tests/test_reliability_tui.sh): read the screen, send keys, wait for a
# pattern. Callers set T (the tmux command with its socket) and TMP.

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
