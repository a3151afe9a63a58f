#!/bin/sh
# Stress tests of the full-screen view, driven through tmux: resize storms
# while tokens are generated, tiny terminals, TERM=dumb, NO_COLOR, a
# non-UTF-8 (Latin-1) locale, pastes and key floods faster than the view
# renders, and signals. After every run the program must have exited by
# itself (no signal death), with the terminal settings (stty -g) it found.
# Prints one line of figures per scenario; tests/RELIABILITY.md records
# them. Run: sh tests/test_reliability_tui.sh (make tui-stress), AS_BIN is
# the binary, STORM (default 400) the number of resizes.
set -u
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
MODEL=$HERE/../models/austen-gpt2.gguf
[ -f "$MODEL" ] || MODEL=$HERE/fixtures/tiny-gpt2.gguf
STORM=${STORM:-400}
. "$HERE/e2e/tmux_lib.sh"
tmux_setup attnscope-rel
U="LANG=C.UTF-8 LC_ALL=C.UTF-8"

ok() { pass=$((pass + 1)); }
bad() {
    fail=$((fail + 1))
    echo "FAIL: $1"
    [ -f "$TMP/screen" ] && sed 's/^/  screen: /' "$TMP/screen" | head -30
}
now_ms() { date +%s%3N; }

# start NAME COLS ROWS "ENV" ARGS...: the program in a new tmux session, its
# pid, exit status and tty settings before and after in $TMP/NAME.*
start() {
    name=$1 cols=$2 rows=$3 envs=$4
    shift 4
    cat > "$TMP/$name.sh" <<EOF
export XDG_STATE_HOME="$TMP/state" TERM=$TERMINAL $envs
stty -g > "$TMP/$name.before"
sh -c 'echo \$\$ > "$TMP/$name.pid"; exec "$BIN" -m "$MODEL" $*'
echo \$? > "$TMP/$name.status.tmp"
stty -g > "$TMP/$name.after"
mv "$TMP/$name.status.tmp" "$TMP/$name.status"
exec sleep 600
EOF
    $T new-session -d -s "$name" -x "$cols" -y "$rows" "sh $TMP/$name.sh"
}


expect() { if wait_for "$1" "$3" "${4:-15}"; then ok; else bad "$1: $2: no /$3/ on screen"; fi; }

# died NAME: where a program that died of a signal was: the stack its
# crash handler printed (ui/term.c: frames of the program as
# attnscope(+0xOFFSET)), named with file and line by addr2line.
died() {
    $T capture-pane -p -J -S -400 -t "$1" > "$TMP/$1.dead" 2>/dev/null
    offs=$(grep -o 'attnscope(+0x[0-9a-f]*)' "$TMP/$1.dead" | sed 's/.*(+\(0x[0-9a-f]*\))/\1/')
    grep -E '^attnscope:|\((abort|raise|__libc_message|__fortify|malloc|free|_int_)' "$TMP/$1.dead" | sed 's/^/  stack: /' | head -12
    if [ -n "$offs" ]; then
        addr2line -f -i -C -p -e "$BIN" $offs 2>&1 | sed 's/^/  stack: /' | head -40
    else
        echo "  (no stack of the program's on screen)"
    fi
}

# finished NAME WHAT: the program exited on its own with status 0 and left
# the terminal as it found it.
finished() {
    _f=0
    while [ ! -f "$TMP/$1.status" ] && [ $_f -lt 200 ]; do sleep 0.05; _f=$((_f + 1)); done
    if [ ! -f "$TMP/$1.status" ]; then bad "$1: $2: did not exit"; return; fi
    st=$(cat "$TMP/$1.status")
    if [ "$st" -ge 128 ]; then
        screen "$1"
        bad "$1: $2: died of signal $((st - 128)) (the screen after it above)"
        died "$1"
        return
    fi
    [ "${3:-0}" = any ] || [ "$st" = 0 ] || { bad "$1: $2: exit status $st"; return; }
    if cmp -s "$TMP/$1.before" "$TMP/$1.after"; then ok; else bad "$1: $2: terminal settings not restored"; fi
}

# cmd NAME TEXT: from wherever the focus is, a command typed and run
cmd() { keys "$1" Escape; sleep 0.1; keys "$1" :; typed "$1" "$2"; keys "$1" Enter; }
quit() { cmd "$1" quit; }
# run SCENARIO: true when ONLY (default: all) names it
run() { [ -z "${ONLY:-}" ] || echo " $ONLY " | grep -q " $1 "; }

# ---- 1. resize storm while generating ----
if run storm; then
    start storm 160 48 "$U"
    expect storm "opens" 'attnscope>'
    cmd storm 'prompt It is a truth universally acknowledged'
    expect storm "prompt" 'context: [0-9]+ tokens'
    cmd storm 'gen 200'
    t0=$(now_ms)
    k=0
    for size in $(seq 1 "$STORM"); do
        case $((size % 8)) in
            0) x=160 y=48 ;; 1) x=20 y=5 ;; 2) x=80 y=24 ;; 3) x=1 y=1 ;;
            4) x=250 y=80 ;; 5) x=40 y=10 ;; 6) x=3 y=2 ;; *) x=120 y=30 ;;
        esac
        $T resize-window -t storm -x $x -y $y 2>/dev/null && k=$((k + 1))
    done
    t1=$(now_ms)
    ms=$((t1 - t0))
    [ "$ms" -gt 0 ] || ms=1
    $T resize-window -t storm -x 160 -y 48
    expect storm "gen finished through the storm" 'prompt \+ 200 generated' 120
    expect storm "redrawn at the final size" 'Attention +layer'
    cmd storm 'top 3'
    expect storm "responsive after the storm" 'next token after position'
    quit storm
    finished storm "after $k resizes"
    echo "storm: $k resizes in $ms ms ($((k * 1000 / ms)) per second) during gen 200, sizes 1x1 to 250x80"
fi

# ---- 2. tiny terminals ----
if run tiny; then
    for geom in 20x5 1x1 2x3 12x2; do
        x=${geom%x*} y=${geom#*x}
        n=tiny$x$y
        start $n "$x" "$y" "$U"
        sleep 0.5
        cmd $n 'prompt the cat sat'
        sleep 0.2
        cmd $n 'gen 5'
        sleep 0.5
        for k in Escape j l g '?' Escape x Space , Tab g h k; do keys $n "$k"; sleep 0.02; done
        $T resize-window -t $n -x 100 -y 30
        expect $n "a $geom view grows back" 'Attention +layer'
        quit $n
        finished $n "$geom terminal"
    done
    echo "tiny: 20x5, 1x1, 2x3, 12x2 terminals: prompt, gen 5, 12 view keys, grown to 100x30, quit"
fi

# ---- 3. TERM=dumb: no cursor addressing ----
if run dumb; then
    start dumb 80 24 "$U TERM=dumb"
    sleep 1
    screen dumb
    typed dumb 'prompt the cat'
    keys dumb Enter
    typed dumb 'gen 2'
    keys dumb Enter
    expect dumb "commands still run" 'generated: '
    typed dumb 'quit'
    keys dumb Enter
    finished dumb "TERM=dumb" any
    echo "dumb: first screen: $(head -c 200 "$TMP/screen" | tr '\n' ' ' | tr -s ' ')"
fi

# ---- 4. NO_COLOR while generating ----
if run mono; then
    start mono 120 40 "$U NO_COLOR=1"
    expect mono "opens" 'attnscope>'
    cmd mono 'prompt the cat sat on the mat; gen 10'
    expect mono "gen" 'generated: '
    keys mono Escape
    sleep 0.3
    screen_e mono
    colours=$(grep -c '38;5;\|48;5;\|\[3[0-7]m\|\[4[0-7]m\|\[9[0-7]m' "$TMP/screen")
    [ "$colours" = 0 ] && ok || bad "NO_COLOR: $colours lines with colour codes"
    quit mono
    finished mono "NO_COLOR"
    echo "no_color: $colours screen lines with colour escape codes"
fi

# ---- 5. non-UTF-8 locales: C and Latin-1 ----
if run locale; then
    LOC=""
    mkdir -p "$TMP/loc"
    if command -v localedef >/dev/null 2>&1 && localedef -i en_US -f ISO-8859-1 "$TMP/loc/en_US.ISO-8859-1" 2>/dev/null; then
        LOC="LOCPATH=$TMP/loc LANG=en_US.ISO-8859-1 LC_ALL=en_US.ISO-8859-1"
    else
        echo "**** SKIP: the Latin-1 locale (localedef -i en_US needs Debian's locales package; make test installs it): NOT CHECKED ****"
    fi
    for loc in "LANG=C LC_ALL=C" ${LOC:+"$LOC"}; do
        n=loc$(echo "$loc" | cut -c1-12 | tr -dc 'a-zA-Z0-9')
        start $n 100 30 "$loc"
        expect $n "opens in $loc" 'attnscope>'
        typed $n 'prompt caf'
        $T send-keys -t $n -H e9 c3 a9 20 e2 96 81
        keys $n Enter
        expect $n "a prompt with Latin-1 and UTF-8 bytes" 'context: [0-9]+ tokens'
        cmd $n 'gen 3'
        expect $n "gen" 'generated: '
        quit $n
        finished $n "$loc"
    done
    echo "locales: C${LOC:+, en_US.ISO-8859-1 (localedef)}: prompt with bytes e9 c3a9 e29681, gen 3"
fi

# ---- 6. a paste and a key flood faster than the view renders ----
if run flood; then
    start flood 120 40 "$U"
    expect flood "opens" 'attnscope>'
    : > "$TMP/paste"
    for i in $(seq 1 60); do printf 'prompt the cat sat %d\ngen 2\ntop 3\n' "$i" >> "$TMP/paste"; done
    printf 'stats blocks.0.hook_resid_post\n' >> "$TMP/paste"
    bytes=$(wc -c < "$TMP/paste")
    $T load-buffer -b flood "$TMP/paste"
    t0=$(now_ms)
    $T paste-buffer -b flood -t flood
    expect flood "the last pasted command ran" 'blocks\.0\.hook_resid_post \[' 120
    t1=$(now_ms)
    keys flood Escape
    # 3000 view keys in 30 sends of 100, without waiting
    ks=$(printf 'jklhg?x ,.njkl' | fold -w1 | tr '\n' ' ')
    for r in $(seq 1 30); do
        set --
        for i in $(seq 1 7); do set -- "$@" $ks; done
        $T send-keys -t flood "$@" 2>/dev/null
    done
    t2=$(now_ms)
    keys flood Escape
    cmd flood 'where'
    expect flood "responsive after the key flood" 'all [0-9]+ tokens processed|pass over positions|of [0-9]+ tokens processed' 60
    t3=$(now_ms)
    quit flood
    finished flood "paste and key flood"
    echo "flood: pasted $bytes bytes (181 commands) in one paste, settled in $((t1 - t0)) ms; 2940 view keys sent in $((t2 - t1)) ms, responsive $((t3 - t2)) ms later"
fi

# ---- 7. signals: the terminal comes back whatever ends the program ----
if run signals; then
    for sig in TERM HUP INT QUIT ABRT; do
        n=sig$sig
        start $n 100 30 "$U"
        expect $n "opens" 'attnscope>'
        cmd $n 'prompt It is a truth universally acknowledged; gen 200'
        sleep 0.5
        kill -s $sig "$(cat "$TMP/$n.pid")" 2>/dev/null
        if [ $sig = INT ]; then
            expect $n "SIGINT interrupts gen" 'interrupted|generated: '
            quit $n
            finished $n "SIGINT during gen"
        else
            i=0
            while [ ! -f "$TMP/$n.status" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
            if cmp -s "$TMP/$n.before" "$TMP/$n.after"; then ok; else bad "SIG$sig during gen: terminal settings not restored"; fi
            screen $n
            if grep -q 'Attention +layer\|attnscope>' "$TMP/screen"; then bad "SIG$sig: the view is still on screen"; else ok; fi
            # a crash's own words (here none: the signal came from outside) and the program's line after them
            if [ $sig = ABRT ]; then
                if grep -q 'ended by a fatal signal' "$TMP/screen"; then ok; else bad "SIGABRT: no word of the crash on screen"; fi
            fi
        fi
    done
    # stopped and continued (Ctrl-Z, fg)
    start stop 100 30 "$U"
    expect stop "opens" 'attnscope>'
    pid=$(cat "$TMP/stop.pid")
    kill -s TSTP "$pid"
    sleep 0.5
    state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
    kill -s CONT "$pid"
    cmd stop 'prompt the cat; gen 2'
    expect stop "redrawn and responsive after SIGTSTP/SIGCONT" 'generated: '
    quit stop
    finished stop "SIGTSTP then SIGCONT"
    echo "signals: SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGINT during gen 200; SIGTSTP (process state $state) then SIGCONT"
fi

echo "tui stress: $pass passed, $fail failed"
[ "$fail" = 0 ]
