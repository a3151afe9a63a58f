# Shared by the scripts that drive attnscope inside tmux (tests/e2e/tui.sh,
# the golden screens through golden_lib.sh, the numeric checks math.sh,
# mla.sh, positions.sh, mlp.sh, resid.sh, lessons.sh, and
# tests/test_reliability_tui.sh): a private tmux server, read the screen,
# send keys, wait for a pattern or a file, the pass/fail counts, attnscope
# started in a session, commands run in it until their dumps are written.

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

# e2e_setup NAME: for a script that set HERE (tests/e2e): BIN (AS_BIN, or
# build/attnscope under the current directory), ROOT (the checkout), MODELS
# (its models/), then tmux_setup NAME.
e2e_setup() {
    BIN=${AS_BIN:-$(pwd)/build/attnscope}
    ROOT=$HERE/../..
    MODELS=$ROOT/models
    tmux_setup "$1"
}

# ok / bad MESSAGE: count a check passed or failed (a script may define
# its own after sourcing this, as tui.sh does to print the screen too).
ok() { pass=$((pass + 1)); }
bad() {
    fail=$((fail + 1))
    echo "FAIL: $1"
}

# wait_file FILE [SECONDS]: polls until FILE exists (a dump is renamed
# into place whole, so its existence says it is complete).
wait_file() {
    _w=0
    while [ $_w -lt $(( ${2:-20} * 20 )) ]; do
        [ -f "$1" ] && return 0
        sleep 0.05
        _w=$((_w + 1))
    done
    return 1
}

# view_start NAME MODEL-PATH COLS ROWS [ENV]: attnscope (AS_BIN, one
# compute thread) on the model in a new tmux session of COLS x ROWS whose
# working directory (where dumps land) is $TMP; UTF-8, no COLORTERM or
# NO_COLOR unless ENV (VAR=VALUE ...) sets them, a readline history of its
# own; waits for the prompt (else a failure and status 1).
view_start() {
    _name=$1
    cat > "$TMP/$_name.sh" <<EOS
unset COLORTERM NO_COLOR
export LANG=C.UTF-8 LC_ALL=C.UTF-8 TERM=$TERMINAL XDG_STATE_HOME="$TMP/state-$_name" ${5:-}
"$BIN" -m "$2" --threads 1
exec sleep 600
EOS
    $T new-session -d -s "$_name" -c "$TMP" -x "$3" -y "$4" "sh $TMP/$_name.sh"
    wait_for "$_name" '^attnscope>' 20 || { bad "$_name: the view did not start"; return 1; }
}

# view_run NAME "COMMANDS" SECONDS FILE...: types the commands on the
# command line and Enter, then waits up to SECONDS for every FILE (in
# $TMP; else a failure and status 1).
view_run() {
    _name=$1 _secs=$3
    typed "$_name" "$2"
    keys "$_name" Enter
    shift 3
    _w=0
    while :; do
        _all=1
        for _f in "$@"; do
            [ -f "$TMP/$_f" ] || { _all=0; break; }
        done
        [ $_all = 1 ] && return 0
        [ $_w -ge $((_secs * 20)) ] && break
        sleep 0.05
        _w=$((_w + 1))
    done
    bad "$_name: no dump written"
    return 1
}

# need_numpy: npy_lib.sh lies beside this file, HERE for tests/e2e's
# scripts, HERE/e2e for tests/test_reliability_tui.sh
if [ -f "$HERE/npy_lib.sh" ]; then
    . "$HERE/npy_lib.sh"
else
    . "$HERE/e2e/npy_lib.sh"
fi

# py_ref SCRIPT "MODULES": runs $PY $HERE/SCRIPT BIN TMP (a reference check
# printing "ok ..." lines) into $TMP/SCRIPT.log: one pass, or one failure
# with the log's other lines; a $PY without the MODULES (import names) is a
# failure naming them.
py_ref() {
    if ! $PY -c "import $(echo "$2" | tr ' ' ',')" 2>/dev/null; then
        bad "$PY with $2 is needed (make test-deps)"
        return 1
    fi
    if $PY "$HERE/$1" "$BIN" "$TMP" >"$TMP/$1.log" 2>&1; then ok; else bad "$1"; grep -v '^ok' "$TMP/$1.log" | tail -30; fi
}
