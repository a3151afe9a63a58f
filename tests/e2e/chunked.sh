#!/bin/sh
# A long prompt's attention a block of query rows at a time (issue #35):
# an attention site whose scores and patterns the capture does not keep
# (patterns on demand, or dropped) and no rule reads is "fused" when their
# rows for the whole span (heads x n x n floats, twice) would pass
# AS_ATTN_WORK_BYTES (256 MB): its mix computes each head's rows 64
# (AS_ATTN_BLOCK) at a time (scores, softmax, then that block's share of
# z), so the working memory grows as threads x 64 x n floats. `info`
# reports the interpreter's working memory in bytes. AS_TEST_ATTN_FUSED=1
# in the environment fuses every site that can be: a setting for the tests
# only (their fixtures are far below the bound), read by attention.c's
# as_attn_plan. Checked on tiny-llama (2 layers, 4 heads, head size 8)
# with its window widened to 2048 (as in ondemand.sh), patterns on demand:
#  - a 600-token prompt's `dump all` fused equals the unfused run's file
#    for file, byte for byte (cmp): every hook, z and the patterns computed
#    on demand included;
#  - fused, the on-demand run's arrays equal a stored run's byte for byte
#    (the stored run keeps its patterns, so it is not fused: the forward's
#    own rows against the fused pass's);
#  - the working memory `info` reports at 256, 512, 1024 and 2048
#    positions grows linearly fused: 584 bytes a position exactly
#    (hand-computed: each of 2 threads' 64-row block plus a score row, 2 x
#    65 x 4 = 520 bytes a key, and the rotary angles, 2 x 8 dims x 4 = 64
#    bytes a position); unfused it grows quadratically (the step to 2048
#    over 3x the step to 1024).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$HERE/../..
BIN=${AS_BIN:-$ROOT/build/attnscope}
FIXTURES=$HERE/../fixtures
TMP=$(mktemp -d "${TMPDIR:-/tmp}/attnscope-chunked.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
pass=0 fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
. "$HERE/npy_lib.sh"
need_numpy

M=$TMP/tiny-llama-2048.gguf
python3 - "$FIXTURES/tiny-llama.gguf" "$M" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], 'rb').read())
k = b'llama.context_length'
i = b.find(k) + len(k)
assert struct.unpack_from('<II', b, i) == (4, 32), 'context_length is not the uint32 32'
struct.pack_into('<I', b, i + 4, 2048)
open(sys.argv[2], 'wb').write(b)
EOF

ids=$(awk 'BEGIN { for (i = 0; i < 600; i++) printf "%d ", 3 + (i * 7) % 280 }')
run() { # fused mode dir
    AS_TEST_ATTN_FUSED=$1 "$BIN" -m "$M" --threads 2 --no-tui --ctx 2048 --patterns "$2" \
        -e "prompt-ids $ids; finish; dump all $3; info" > "$3.txt" 2> "$3.err"
}
run 0 on-demand "$TMP/one"
run 1 on-demand "$TMP/fused"
run 1 stored "$TMP/stored"
if grep -q "Sanitizer\|runtime error\|error" "$TMP"/*.err; then
    bad "a run failed: $(cat "$TMP"/*.err | head -3)"
fi
same() { # label dir-a dir-b
    npy_differ "$2" "$3"
    if [ "$n" -lt 30 ] || [ "$npat" -ne 2 ]; then
        bad "$1: too few arrays dumped ($n, $npat patterns)"
    elif [ -n "$differ" ]; then
        bad "$1: these arrays differ:$differ"
    else
        pass=$((pass + 1))
    fi
}
same "fused against one pass" "$TMP/one" "$TMP/fused"
same "fused on demand against stored" "$TMP/stored" "$TMP/fused"
grep -q "position[s]*: computed on demand" "$TMP/fused.txt" && pass=$((pass + 1)) ||
    bad "the on-demand run's info does not say so: $(grep '^patterns' "$TMP/fused.txt")"

# A prompt's linear ops in blocks of rows (interp_internal.h's
# AS_LINEAR_BLOCK_BYTES, 64 MB of output; AS_TEST_LINEAR_BLOCK=64 here, so
# the 600 positions take 10 blocks): with a capture file each block of the
# logits is checked and its pages dropped as it is done (interp.c's
# run_blocks), in RAM the op runs whole; both must give the same arrays
# byte for byte, and the blocked logits equal one block's within 1e-5 of
# the largest logit (OpenBLAS's bits depend on a call's shape).
blocks() { # dir rows [capture-file]
    AS_TEST_LINEAR_BLOCK=$2 "$BIN" -m "$M" --threads 2 --no-tui --ctx 2048 ${3:+--capture-file "$3"} \
        -e "prompt-ids $ids; finish; dump all $1; info" > "$1.txt" 2> "$1.err"
}
ids=$(awk 'BEGIN { for (i = 0; i < 600; i++) printf "%d ", 3 + (i * 7) % 280 }')
blocks "$TMP/ram" 64
blocks "$TMP/file" 64 "$TMP/blocks.capture"
blocks "$TMP/whole" 0
grep -q "^capture file: $TMP/blocks.capture" "$TMP/file.txt" || bad "the blocked run did not use its capture file: $(head -3 "$TMP/file.err")"
same "blocked logits, capture file against RAM" "$TMP/ram" "$TMP/file"
if $PY - "$TMP/ram/unembed.hook_out.npy" "$TMP/whole/unembed.hook_out.npy" <<'EOF'
import sys, numpy as np
a, b = np.load(sys.argv[1]), np.load(sys.argv[2])
assert a.shape == b.shape == (600, a.shape[1]), (a.shape, b.shape)
err = float(np.abs(a - b).max() / np.abs(b).max())
print("blocked against whole logits: %.2e of the largest" % err)
sys.exit(0 if err <= 1e-5 else 1)
EOF
then pass=$((pass + 1)); else bad "blocked logits differ from one block's"; fi

# working memory: linear fused, quadratic unfused
for c in 1 0; do
    : > "$TMP/work.$c"
    for n in 256 512 1024 2048; do
        ids=$(awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "%d ", 3 + i % 200 }')
        AS_TEST_ATTN_FUSED=$c "$BIN" -m "$M" --threads 2 --no-tui --ctx 2048 --patterns on-demand \
            -e "prompt-ids $ids; finish; info" 2>&1 |
            sed -n 's/^working memory: \([0-9]*\) bytes.*/\1/p' | sed "s/^/$n /" >> "$TMP/work.$c"
    done
done
if awk '
    NR == FNR { ch[$1] = $2; next } { one[$1] = $2 }
    END {
        if (length(ch) != 4 || length(one) != 4) { print "missing figures"; exit 1 }
        s0 = (ch[512] - ch[256]) / 256; s1 = (ch[1024] - ch[512]) / 512; s2 = (ch[2048] - ch[1024]) / 1024
        if (s0 != 584 || s1 != 584 || s2 != 584) { print "fused: " s0 ", " s1 ", " s2 " bytes a position, not 584"; exit 1 }
        o1 = one[1024] - one[512]; o2 = one[2048] - one[1024]
        if (o2 < 3 * o1) { print "one pass did not grow quadratically: " o1 ", " o2; exit 1 }
        printf "working memory at 2048 positions: %d bytes fused, %d not\n", ch[2048], one[2048]
    }' "$TMP/work.1" "$TMP/work.0"; then
    pass=$((pass + 1))
else
    bad "working memory: fused $(tr '\n' ' ' < "$TMP/work.1") / not $(tr '\n' ' ' < "$TMP/work.0")"
fi

echo "chunked: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
