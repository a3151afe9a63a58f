# The batch-mode harness tests/e2e/run.sh and figures.sh share: counts
# in $pass and $fail, the last run's output in $TMP/out and $TMP/err.
# Sourced after BIN and TMP are set.

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $1"; [ -f "$TMP/out" ] && sed 's/^/  out: /' "$TMP/out" | head -20; [ -f "$TMP/err" ] && sed 's/^/  err: /' "$TMP/err" | head -10; }

# expect NAME STATUS PATTERN_IN_STDOUT PATTERN_IN_STDERR -- ARGS...
expect() {
    name=$1 want=$2 out_pat=$3 err_pat=$4
    shift 5
    "$BIN" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    got=$?
    if [ "$got" -ge 128 ]; then bad "$name: crashed with signal $((got - 128))"; return; fi
    if [ "$want" = 0 ] && [ "$got" != 0 ]; then bad "$name: exit $got, wanted 0"; return; fi
    if [ "$want" != 0 ] && [ "$got" = 0 ]; then bad "$name: exit 0, wanted failure"; return; fi
    if [ -n "$out_pat" ] && ! grep -Eq -- "$out_pat" "$TMP/out"; then bad "$name: stdout lacks /$out_pat/"; return; fi
    if [ -n "$err_pat" ] && ! grep -Eq -- "$err_pat" "$TMP/err"; then bad "$name: stderr lacks /$err_pat/"; return; fi
    ok
}
