# npy_differ DIR-A DIR-B: compares every .npy of DIR-A with DIR-B's file of
# the same name byte for byte; sets n (arrays in DIR-A), npat (pattern
# arrays among them) and differ (the names that differ, space-led).
npy_differ() {
    n=0 differ=""
    for _f in "$1"/*.npy; do
        [ -e "$_f" ] || continue
        n=$((n + 1))
        cmp -s "$_f" "$2/$(basename "$_f")" || differ="$differ $(basename "$_f")"
    done
    npat=$(ls "$1" | grep -c 'hook_pattern\.npy$')
}

# need_numpy: PY (/usr/bin/python3) with numpy, and tests/e2e on its
# module path (e2e_read.py), or the script stops.
need_numpy() {
    PY=/usr/bin/python3
    export PYTHONPATH="$HERE${PYTHONPATH:+:$PYTHONPATH}"
    $PY -c 'import numpy' 2>/dev/null || { echo "FAIL: $PY with numpy is needed"; exit 1; }
}
