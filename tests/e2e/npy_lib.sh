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
