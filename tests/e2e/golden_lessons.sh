#!/bin/sh
# Golden screens of lessons (tests/e2e/golden/lesson-*.txt), for the
# defects issue #33 listed, at the sizes a class saw them, each of which
# failed before: the box over the pane the step is about (bert's
# predictions at 80x24, heads' grid at 80x24, heads' Output table at
# 120x35), the title and the keys line cut at 120x35 ("Previous-token
# heads and induction he…", "Backspace ba…"), claims the screen
# contradicted (attention's previous-token head shown on a weak row,
# norms pointing at columns a 48-column pane lacks); and the new
# lessons' steps (cross, vit). The way is golden.sh's (golden_lib.sh's
# machinery): `view dump` compared whole; GOLDEN_UPDATE=1 rewrites.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/golden_lib.sh"
golden_setup attnscope-golden-lessons

# lesson_step SESSION GOLDEN LESSON STEP [KEYS...] (golden_lib.sh): the
# lesson to its step STEP, then the keys, then the dump.
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
