#!/bin/sh
# What a `make test` log says was checked and what was skipped, one
# normalised line each, sorted (the unit tests run in parallel), for
# tests/fresh/run.sh to compare two runs:
#   - "count LINE": the lines that count checks (Criterion's synthesis,
#     "NAME: N passed, ...", "N/N strings identical", "... within TOL",
#     the files llama-compare compared, hf-tokref's counts, and the checks
#     hub-ref and longctx ran with how each ended, the bad-input corpus's
#     and the stale-state check's counts, make deps's verdicts),
#   - "skip N LINE": every line that says something was SKIPPED, with how
#     often it came.
# The repository's path becomes <repo>, temporary names <tmp>, timings go.
#   sh tests/fresh/summary.sh LOG REPO
set -u
log=$1 repo=$2
norm() {
    sed -e "s|$repo|<repo>|g" -e 's|/tmp/[A-Za-z0-9._-]*|<tmp>|g' \
        -e 's/ *([0-9.]* *m\{0,1\}s)//g' -e 's/ in [0-9.]* *m\{0,1\}s\b//g' -e 's/[[:space:]]*$//' "$log"
}
{
    norm | grep -E 'Synthesis:|: [0-9]+ passed|[0-9]+/[0-9]+ (strings|checks|files|positions|models)|within [0-9.e+-]+ of|replayed [0-9]+ inputs|^deps-scan: [0-9]|^hf-tokref [a-z0-9_]+: |^not compared |^locales: |^tiny: |^no_color: |^badinput: [0-9]+ of [0-9]+ cases|^stale: [0-9]+ of [0-9]+ checks|^deps: (src|ui)/: '
    # llama-compare: which files were compared (its figures are floating point, from two builds)
    norm | grep -E '^(ok|FAIL) +[^ ]+: ' | sed 's/^\(ok\|FAIL\) *\([^ ]*\): \([^,]*\),.*/\1 \2: \3/'
    # hub-ref and longctx: which checks ran and how each ended, without their figures
    norm | grep -E '^hub-ref ' | sed 's/^\(hub-ref [^:]*\):\( [a-zA-Z]*\)\{0,1\}.*/\1:\2/'
    norm | grep -E '^longctx (ok|FAIL): ' | sed 's/^\(longctx [A-Za-z]*: [^:(]*\).*/\1/'
} | grep -v SKIP | sed 's/^/count /' | sort
norm | grep -iE 'SKIP' | sort | uniq -c | sed 's/^ *\([0-9]*\) /skip \1 /'
