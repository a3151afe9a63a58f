#!/bin/sh
# Every step of every lesson in assets/lessons, as a class sees it: each
# lesson given in the full-screen view in tmux at 80x24, 120x35 and 160x48
# (LESSON_SIZES to choose; LESSONS to name some), and at each step
# `view dump-layout` (where the panes and the box are, and which pane has
# the focus) and `view dump` (the screen's text) checked by
# tests/e2e/lesson_check.py: the step's whole text in the box, no word cut;
# the title and the keys whole in its borders; the box clear of the pane
# the step is about (its `view PANE`, or the focused pane) and of the
# strip, status and command lines. A step whose text names a pane's key
# ("(key 6)", "key 3") gets that key pressed: the pane takes the focus and
# the box moves off it; then the focus goes back.
#
# Why the layout file and not the dump alone: a pane under the box has its
# border partly hidden, so finding its rectangle from the text would guess;
# the layout is what the windows were made from, and the check ties it to
# the screen (the box's corners must be where the layout says).
# LESSON_KEEP=DIR keeps the dumps there, to read.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
. "$HERE/tmux_lib.sh"
e2e_setup attnscope-lessons

SIZES="${LESSON_SIZES:-80x24 120x35 160x48}"
LIST=${LESSONS:-$(cd "$ROOT/assets/lessons" && ls *.txt | sed 's/\.txt$//')}

# The key that focuses a pane, by the pane's name in dump-layout.
pane_key() {
    case $1 in
    attention) echo 1 ;; tokens) echo 2 ;; probs) echo 3 ;; lens) echo 4 ;; norms) echo 5 ;;
    output) echo 6 ;; routing) echo 7 ;; math) echo 8 ;; positions) echo p ;; mlp) echo a ;;
    residual) echo r ;; mla) echo M ;; *) echo "" ;;
    esac
}
key_pane() {
    case $1 in
    1) echo attention ;; 3) echo probs ;; 4) echo lens ;; 5) echo norms ;; 6) echo output ;; 7) echo routing ;;
    8|m) echo math ;; p) echo positions ;; a) echo mlp ;; r) echo residual ;; M) echo mla ;; *) echo "" ;;
    esac
}

# dump SESSION BASE: the layout and the screen, BASE.layout and BASE.txt.
dump() {
    rm -f "$TMP/$2.layout" "$TMP/$2.txt"
    typed "$1" ":view dump-layout $2.layout; view dump $2.txt"
    keys "$1" Enter
    wait_file "$TMP/$2.txt" 60 || { screen "$1"; sed 's/^/  screen: /' "$TMP/screen"; return 1; }
    keys "$1" Escape
    return 0
}

for size in $SIZES; do
    cols=${size%x*} rows=${size#*x}
    for l in $LIST; do
        file=$ROOT/assets/lessons/$l.txt
        n=$($PY -c "import sys; sys.path.insert(0, '$HERE'); import lesson_check as c; print(len(c.parse_lesson('$file')[1]))")
        name=$l-$size
        view_start "$name" "$MODELS/austen-gpt2.gguf" "$cols" "$rows" || continue
        typed "$name" "lesson $l"
        keys "$name" Enter
        i=1
        while [ $i -le "$n" ]; do
            if ! wait_for "$name" " $i/$n " 60; then
                bad "$name: step $i of $n not shown"
                screen "$name"; sed 's/^/  screen: /' "$TMP/screen"
                break
            fi
            base=$name-$i
            if ! dump "$name" "$base"; then
                bad "$name: step $i: no dump written"
                break
            fi
            if out=$($PY "$HERE/lesson_check.py" "$file" "$i" "$TMP/$base.txt" "$TMP/$base.layout"); then
                pass=$((pass + 1))
            else
                bad "$name: step $i of $n:"
                echo "$out" | sed 's/^/    /'
                sed 's/^/  | /' "$TMP/$base.txt"
            fi
            # the keys the step's text names: each pane in turn, then back
            ks=$($PY -c "
import re, sys
sys.path.insert(0, '$HERE')
import lesson_check as c
t = c.parse_lesson('$file')[1][$i - 1]['text']
print(' '.join(sorted(set(re.findall(r'\bkeys? ([1-8mparM])\b', t)))))")
            for k in $ks; do
                pane=$(key_pane "$k")
                [ -n "$pane" ] || continue
                was=$(sed -n 's/^focus //p' "$TMP/$base.layout")
                keys "$name" "$k"
                sleep 0.3
                if dump "$name" "$base-key$k" &&
                    out=$($PY "$HERE/lesson_check.py" "$file" "$i" "$TMP/$base-key$k.txt" "$TMP/$base-key$k.layout" "$pane"); then
                    pass=$((pass + 1))
                else
                    bad "$name: step $i: key $k ($pane):"
                    echo "$out" | sed 's/^/    /'
                    sed 's/^/  | /' "$TMP/$base-key$k.txt"
                fi
                back=$(pane_key "$was")
                [ -n "$back" ] && keys "$name" "$back"
            done
            keys "$name" Space
            i=$((i + 1))
        done
        $T kill-session -t "$name" 2>/dev/null
    done
done

[ -n "${LESSON_KEEP:-}" ] && mkdir -p "$LESSON_KEEP" && cp "$TMP"/*.txt "$TMP"/*.layout "$LESSON_KEEP"/ 2>/dev/null
echo "lessons: $pass passed, $fail failed (every step of: $(echo $LIST) at $SIZES)"
[ $fail -eq 0 ]
