#!/bin/sh
# The campaign table of a `make fuzz-long` run, as tests/RELIABILITY.md
# keeps it: a row per target from build/fuzz/T.summary (what fuzz-run-T
# wrote), with the commit the targets were built from.
#   sh tests/fuzz/campaign.sh FUZZ_BUILD TARGET...
set -u
dir=$1; shift
# the commit make fuzz-long started from (the targets were built from it), else HEAD
if [ -s "$dir/campaign.commit" ]; then
  commit=$(head -n 1 "$dir/campaign.commit")
  grep -q dirty "$dir/campaign.commit" && commit="$commit (with uncommitted changes)"
else
  commit=$(git rev-parse --short=10 HEAD 2>/dev/null || echo unknown)
  [ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && commit="$commit (with uncommitted changes)"
fi
echo "| target | time run | executions | coverage edges | corpus | findings | commit |"
echo "|---|---|---|---|---|---|---|"
for t in "$@"; do
  s=$dir/$t.summary
  if [ ! -f "$s" ]; then echo "| $t | not run | | | | | $commit |"; continue; fi
  # T: S s (of N), E executions, C coverage edges, corpus U inputs, F findings (exit R)
  sed -n 's/^\([a-z0-9]*\): \([0-9]*\) s (of \([0-9]*\)), \([0-9?]*\) executions, \([0-9?]*\) coverage edges, corpus \([0-9]*\) inputs, \([0-9]*\) findings (exit \([0-9]*\))$/\1 \2 \3 \4 \5 \6 \7 \8/p' "$s" |
    while read -r name secs of execs cov units found rc; do
      m=$((secs / 60))
      echo "| \`$name\` | ${m} min ($secs s of $of) | $execs | $cov | $units | $found (exit $rc) | \`$commit\` |"
    done
done
