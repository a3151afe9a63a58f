#!/bin/sh
# A whole session under valgrind (memcheck): load a model, prompt, step,
# finish, read statistics, generate, export arrays and figures, quit -- for
# each fixture model and the bundled one, in batch mode; then the
# full-screen view in tmux. Passes when valgrind reports no
# error (invalid read or write, uninitialised value, bad free) and no leak
# (definitely, indirectly or possibly lost); prints the figures of each run.
#
#   sh tests/valgrind.sh            (or: make valgrind)
#   VALGRIND_MODELS="a.gguf b.gguf" sh tests/valgrind.sh
#
# The program is built for valgrind in build/valgrind: -O1 -g and no
# -march=native (valgrind cannot run AVX-512). OpenBLAS runs one thread.
set -u
cd "$(dirname "$0")/.."
OUT=build/valgrind
BIN=$OUT/attnscope

command -v valgrind >/dev/null 2>&1 ||
    { echo "valgrind.sh: valgrind is missing: make valgrind installs it (sudo apt-get install -y valgrind)"; exit 1; }
make -s BUILD=$OUT OPT="-O1 -g" $BIN || exit 1

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
MODELS=${VALGRIND_MODELS:-"tests/fixtures/tiny-gpt2.gguf tests/fixtures/tiny-llama.gguf models/austen-gpt2.gguf"}
status=0

for model in $MODELS; do
    [ -f "$model" ] || { echo "valgrind: $model: missing, skipped"; continue; }
    name=$(basename "$model" .gguf)
    log=$OUT/$name.log
    cmds="prompt the cat sat on the mat; step 5; back 2; finish; top 5; \
stats blocks.0.hook_resid_post; norms 0; lens table; lens 3 $TMP/$name-lens.npy; \
heads $TMP/$name-heads.png; dla 5 4 $TMP/$name-dla.png; metric 5 6; \
patch sweep heads from \"the cat sat on the mat\" $TMP/$name-sweep.png; gen 8; tokens; \
dump blocks.0.attn.hook_pattern $TMP/$name-pattern.npy; dump all $TMP/$name-all; \
export attn 0 0 $TMP/$name-head.png; export grid all $TMP/$name-grid.svg; \
export norms 0 $TMP/$name-norms.png; export probs-trace $TMP/$name-trace.svg; quit"
    start=$(date +%s)
    OPENBLAS_NUM_THREADS=1 valgrind --tool=memcheck --error-exitcode=99 --leak-check=full \
        --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible \
        --track-origins=yes --log-file="$log" \
        "$BIN" -m "$model" --threads 1 --no-tui -e "$cmds" > "$OUT/$name.out" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -1)
    heap=$(sed -n 's/.*total heap usage: //p' "$log" | tail -1)
    lost=$(grep -E 'definitely lost|indirectly lost|possibly lost' "$log" | sed 's/.*== *//' | tr '\n' ';')
    [ -n "$lost" ] || lost="no leaks are possible"
    files=$(ls "$TMP" | grep -c "^$name-")
    echo "valgrind $name: exit $rc, ${errors:-?} errors, $heap; $lost $files exports written, ${secs} s (log: $log)"
    if [ "$rc" != 0 ] || [ "${errors:-1}" != 0 ]; then
        status=1
        sed 's/^/  out: /' "$OUT/$name.out" | tail -5
        grep -E 'Invalid|uninitialised|lost in|Mismatched' "$log" | head -10 | sed 's/^/  /'
    fi
done
# The full-screen view too, driven through tmux: prompt, gen, export, view
# keys, a resize, quit. Blocks curses and readline keep until exit are
# "still reachable" and allowed; lost ones are not.
if command -v tmux >/dev/null 2>&1; then
    T="tmux -L attnscope-vg-$$ -f /dev/null"
    log=$OUT/view.log
    rm -f "$log" "$TMP/view.status"
    start=$(date +%s)
    $T new-session -d -x 140 -y 45 "TERM=tmux-256color LANG=C.UTF-8 OPENBLAS_NUM_THREADS=1 valgrind --error-exitcode=99 \
        --leak-check=full --show-leak-kinds=definite,indirect,possible --errors-for-leak-kinds=definite,indirect,possible \
        --track-origins=yes --log-file=$log $BIN -m tests/fixtures/tiny-gpt2.gguf --threads 1; \
        echo \$? > $TMP/view.status; sleep 60"
    step() { sleep "$1"; shift; $T send-keys -t 0 "$@"; }
    step 8 -l 'prompt the cat sat on the mat'; step 0 Enter
    step 3 -l 'gen 5'; step 0 Enter
    step 8 -l "export attn 0 1 $TMP/view-head.png"; step 0 Enter
    step 6 Escape
    for k in j l g g x Space , Tab Tab Tab; do step 1 "$k"; done
    sleep 1; $T resize-window -t 0 -x 60 -y 20; sleep 2; $T resize-window -t 0 -x 140 -y 45
    step 2 :; step 0 -l quit; step 0 Enter
    i=0
    while [ ! -f "$TMP/view.status" ] && [ $i -lt 120 ]; do sleep 0.5; i=$((i + 1)); done
    $T kill-server 2>/dev/null
    rc=$(cat "$TMP/view.status" 2>/dev/null || echo "none")
    errors=$(sed -n 's/.*ERROR SUMMARY: \([0-9]*\) errors.*/\1/p' "$log" | tail -1)
    heap=$(sed -n 's/.*total heap usage: //p' "$log" | tail -1)
    lost=$(grep -E 'definitely lost|indirectly lost|possibly lost|still reachable' "$log" | sed 's/.*== *//' | tr '\n' ';')
    echo "valgrind view: exit $rc, ${errors:-?} errors, $heap; $lost $(( $(date +%s) - start )) s (log: $log)"
    if [ "$rc" != 0 ] || [ "${errors:-1}" != 0 ]; then
        status=1
        grep -E 'Invalid|uninitialised|lost in|Mismatched' "$log" | head -10 | sed 's/^/  /'
    fi
fi
exit $status
