# Fails (exit 1) when a LeakSanitizer report in the unit tests' output
# names a leak allocated anywhere but in libcriterion itself (Criterion's
# runner leaks a few bytes of its own). Frame #0 is the allocator.
/(Direct|Indirect) leak of/ { leak = $0; next }
leak != "" && /^ *#1 / {
    if ($0 !~ /libcriterion\.so/) {
        print "unit tests: " leak " at" $0 > "/dev/stderr"
        bad = 1
    }
    leak = ""
}
END { exit bad }
