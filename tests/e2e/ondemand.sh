#!/bin/sh
# Patterns on demand (issue #35): with `--patterns on-demand` the capture
# keeps no attention score or pattern rows, only what they are computed
# from (each site's q after rotary, its KV cache's k), and computes a
# head's rows when read, by the forward pass's own row function
# (attention_row.c). Checked, on every GGUF fixture in tests/fixtures and
# every bundled model:
#  - `dump all` of the on-demand run equals the stored run's, file for
#    file, bit for bit (cmp of the .npy files: every pattern and scores
#    hook, and every other hook), after a prompt and, for the decoders,
#    three greedy tokens decoded one position at a time;
#  - `heads`, `heads context` and `zoom` print the same text in both, and
#    on austen-llama `retrieval` too, and export distance, attn, grid and
#    lines write the same bytes; `grad` and `saliency` agree bit for bit;
#  - `info` says which way the context's patterns are kept;
# and on a small fixture at 256, 512, 1024 and 2048 positions, `info`'s
# capture size in bytes grows linearly with the positions on demand (the
# second differences are 0 up to the capacity's doubling: checked as
# bytes per position within 1% between 1024 and 2048), where the stored
# patterns grow quadratically; and auto turns on demand mid-generation
# when the budget would drop a class, its rows still the stored ones.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$HERE/../..
BIN=${AS_BIN:-$ROOT/build/attnscope}
FIXTURES=$HERE/../fixtures
MODELS=$ROOT/models
TMP=$(mktemp -d "${TMPDIR:-/tmp}/attnscope-ondemand.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM
pass=0 fail=0
bad() { echo "FAIL: $*"; fail=$((fail + 1)); }
. "$HERE/npy_lib.sh"

# the context a model takes: decoders a prompt of ids and three tokens
# decoded one at a time, encoder-decoders a source and a target, ViT an image
context_of() {
    case $(basename "$1") in
    *t5encoder*|*bert*|austen-bert*) echo "prompt-ids 1 5 9 30 41 7 3 12; finish" ;;
    *t5*|*transformer*|de-en*) echo "source-ids 5 9 30 41 7; prompt-ids 0 5 9 3; finish" ;;
    *vit*) echo "image $FIXTURES/image/grey-17x11.png; finish" ;;
    *) echo "set temp 0; prompt-ids 1 5 9 30 41 7 3 12; finish; gen 3" ;;
    esac
}
# the instruments a model takes: heads reads token patterns (not an image's
# patches, nor an encoder-decoder's probe), zoom any site's layer 0
instruments_of() {
    case $(basename "$1") in
    *vit*) echo "zoom 0 0 2 max; zoom 0 0 4 mean" ;;
    *t5encoder*) echo "heads; heads context; zoom 0 0 2 max; zoom 0 0 4 mean" ;;
    *t5*|*transformer*|de-en*) echo "heads context; zoom 0 0 2 max; zoom 0 0 4 mean" ;;
    *) echo "heads; heads context; zoom 0 0 2 max; zoom 0 0 4 mean" ;;
    esac
}

for m in "$FIXTURES"/*.gguf "$MODELS"/*.gguf; do
    name=$(basename "$m" .gguf)
    [ "$name" = t5-ugm ] && continue # a tokenizer's fixture: no weights
    ctx=$(context_of "$m") ins=$(instruments_of "$m")
    for mode in stored on-demand; do
        "$BIN" -m "$m" --threads 2 --no-tui --patterns "$mode" \
            -e "$ctx; dump all $TMP/$name.$mode; $ins; info" \
            > "$TMP/$name.$mode.txt" 2> "$TMP/$name.$mode.err"
    done
    if grep -q "Sanitizer\|runtime error" "$TMP/$name.stored.err" "$TMP/$name.on-demand.err"; then
        bad "$name: the sanitizer reports: $(grep -h "Sanitizer\|runtime error" "$TMP/$name".*.err | head -3)"
        continue
    fi
    if grep -q "error" "$TMP/$name.stored.err"; then
        bad "$name: the stored run failed: $(head -c 300 "$TMP/$name.stored.err")"
        continue
    fi
    npy_differ "$TMP/$name.stored" "$TMP/$name.on-demand"
    if [ "$n" -eq 0 ] || [ "$npat" -eq 0 ]; then
        bad "$name: no arrays dumped ($n, $npat patterns)"
    elif [ -n "$differ" ]; then
        bad "$name: on demand, these arrays differ from the stored run's:$differ"
    else
        pass=$((pass + 1))
    fi
    # the instruments' text (info's lines on the capture aside)
    grep -v '^patterns:\|^capture\|^working memory' "$TMP/$name.stored.txt" | sed "s|$TMP/$name.stored|DIR|g" > "$TMP/a.txt"
    grep -v '^patterns:\|^capture\|^working memory' "$TMP/$name.on-demand.txt" | sed "s|$TMP/$name.on-demand|DIR|g" > "$TMP/b.txt"
    if ! cmp -s "$TMP/a.txt" "$TMP/b.txt"; then
        bad "$name: heads/zoom/info differ on demand: $(diff "$TMP/a.txt" "$TMP/b.txt" | head -5)"
    else
        pass=$((pass + 1))
    fi
    if ! grep -q "position[s]*: stored (" "$TMP/$name.stored.txt"; then
        bad "$name: info does not say the stored run's patterns are stored"
    elif [ "$name" = tiny-t5encoder ]; then
        # every site of T5's encoder adds the relative position bias, itself
        # as quadratic as the pattern: such sites stay stored
        grep -q "position[s]*: stored (" "$TMP/$name.on-demand.txt" && pass=$((pass + 1)) ||
            bad "$name: its sites all have a bias hook, yet info says: $(grep '^patterns' "$TMP/$name.on-demand.txt")"
    elif ! grep -q "position[s]*: computed on demand" "$TMP/$name.on-demand.txt"; then
        bad "$name: info does not say the patterns are computed on demand: $(grep '^patterns' "$TMP/$name.on-demand.txt")"
    else
        pass=$((pass + 1))
    fi
done

# the long-context instruments and the figures, on a model with a
# tokenizer: retrieval's table, and export distance, attn, grid and lines
# written byte for byte the same (the PDF but for its CreationDate line)
for mode in stored on-demand; do
    mkdir -p "$TMP/fig.$mode"
    d=$TMP/fig.$mode
    "$BIN" -m "$MODELS/austen-llama.gguf" --threads 2 --no-tui --patterns "$mode" -e "prompt \"the key is 7341. It is a truth universally acknowledged, that a single man. Remember: the key is 7341\"; finish; retrieval \"the key is 7341\"; export distance $d/d.svg; export attn 1 2 $d/a.png; export grid 1 $d/g.pdf; export lines 0 all $d/l.svg" 2>&1 |
        sed "s|$d|DIR|g" > "$TMP/fig.$mode.txt"
done
nfig=$(ls "$TMP/fig.stored" | wc -l)
if [ "$nfig" -ne 4 ] || ! grep -q "^retrieval scores" "$TMP/fig.stored.txt"; then
    bad "figures: $nfig of 4 written, or no retrieval table: $(grep error "$TMP/fig.stored.txt" | head -2)"
elif ! cmp -s "$TMP/fig.stored.txt" "$TMP/fig.on-demand.txt"; then
    bad "figures: retrieval or export output differs on demand: $(diff "$TMP/fig.stored.txt" "$TMP/fig.on-demand.txt" | head -4)"
else
    same=1
    for mode in stored on-demand; do
        grep -av '/CreationDate' "$TMP/fig.$mode/g.pdf" > "$TMP/fig.$mode/g.nodate"
    done
    for f in d.svg a.png g.nodate l.svg; do
        cmp -s "$TMP/fig.stored/$f" "$TMP/fig.on-demand/$f" || { bad "figures: $f differs on demand"; same=0; }
    done
    [ "$same" = 1 ] && pass=$((pass + 1))
fi

# the backward pass reads the patterns through the same accessor: grad of
# a hook before the attention and of a pattern, and saliency, equal
G=$MODELS/austen-llama.gguf
for mode in stored on-demand; do
    "$BIN" -m "$G" --threads 2 --no-tui --patterns "$mode" -e "prompt-ids 276 257 262 264 270 280; metric logprob 5; grad blocks.0.hook_resid_pre $TMP/g.$mode.npy; grad blocks.1.attn.hook_pattern $TMP/gp.$mode.npy; saliency" 2>&1 |
        grep -v '^wrote' > "$TMP/grad.$mode.txt"
done
if [ ! -s "$TMP/g.stored.npy" ] || [ ! -s "$TMP/gp.stored.npy" ]; then
    bad "grad wrote no arrays: $(head -3 "$TMP/grad.stored.txt")"
elif ! cmp -s "$TMP/g.stored.npy" "$TMP/g.on-demand.npy" || ! cmp -s "$TMP/gp.stored.npy" "$TMP/gp.on-demand.npy" ||
    ! cmp -s "$TMP/grad.stored.txt" "$TMP/grad.on-demand.txt"; then
    bad "grad or saliency differ on demand: $(diff "$TMP/grad.stored.txt" "$TMP/grad.on-demand.txt" | head -4)"
else
    pass=$((pass + 1))
fi

# memory: the capture's bytes at 256..2048 positions on tiny-llama (2
# layers, 4 heads) with its window widened to 2048 (its context_length
# key's value rewritten in a copy: rotary positions have no table)
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
for mode in on-demand stored; do
    : > "$TMP/mem.$mode"
    for n in 256 512 1024 2048; do
        ids=$(awk -v n="$n" 'BEGIN { for (i = 0; i < n; i++) printf "%d ", 3 + i % 200 }')
        "$BIN" -m "$M" --threads 2 --no-tui --ctx 2048 --patterns "$mode" -e "prompt-ids $ids; finish; info" 2>&1 |
            sed -n 's/^patterns: .*capture holds \([0-9]*\) bytes.*/\1/p' | sed "s/^/$n /" >> "$TMP/mem.$mode"
    done
done
if awk '
    NR == FNR { od[$1] = $2; next } { st[$1] = $2 }
    END {
        if (length(od) != 4 || length(st) != 4) { print "missing sizes"; exit 1 }
        # linear on demand: bytes per position the same at 1024 and 2048 (within 1%),
        # and the step 1024 -> 2048 twice the step 512 -> 1024
        a = od[1024] / 1024; b = od[2048] / 2048
        if (b > a * 1.01 || b < a * 0.99) { print "on demand, bytes a position " a " at 1024, " b " at 2048"; exit 1 }
        d1 = od[1024] - od[512]; d2 = od[2048] - od[1024]
        if (d2 > 2 * d1 * 1.01 || d2 < 2 * d1 * 0.99) { print "on demand not linear: steps " d1 ", " d2; exit 1 }
        # stored: the patterns grow quadratically: the step to 2048 over 3x the step to 1024
        s1 = st[1024] - st[512]; s2 = st[2048] - st[1024]
        if (s2 < 3 * s1) { print "stored did not grow quadratically: " s1 ", " s2; exit 1 }
        if (od[2048] * 4 > st[2048]) { print "on demand " od[2048] " not well under stored " st[2048]; exit 1 }
        printf "capture at 2048 positions: %d bytes on demand, %d stored\n", od[2048], st[2048]
    }' "$TMP/mem.on-demand" "$TMP/mem.stored"; then
    pass=$((pass + 1))
else
    bad "memory on demand: $(cat "$TMP/mem.on-demand" | tr '\n' ' ') / stored $(cat "$TMP/mem.stored" | tr '\n' ' ')"
fi

# auto (the default): stored while everything fits (a short prompt at the
# default budget); a generation outgrowing a 50 MB budget turns it on
# demand at the first class it would drop (info says so, and keeps every
# class), and its arrays still equal a stored run's bit for bit
ids=$(awk 'BEGIN { for (i = 0; i < 1000; i++) printf "%d ", 3 + (i * 7) % 280 }')
"$BIN" -m "$M" --threads 2 --no-tui -e "prompt-ids 5 9 30; finish; info" > "$TMP/auto.small" 2>&1
"$BIN" -m "$M" --threads 2 --no-tui --capture-mb 50 -e "set temp 0; prompt-ids $ids; finish; info; gen 400; info; dump blocks.1.attn.hook_pattern $TMP/auto.p.npy; dump blocks.0.attn.hook_attn_scores $TMP/auto.s.npy" > "$TMP/auto.txt" 2>&1
"$BIN" -m "$M" --threads 2 --no-tui --patterns stored -e "set temp 0; prompt-ids $ids; finish; gen 400; dump blocks.1.attn.hook_pattern $TMP/st.p.npy; dump blocks.0.attn.hook_attn_scores $TMP/st.s.npy" > "$TMP/st.txt" 2>&1
if ! grep -q "^patterns: auto.*position[s]*: stored (" "$TMP/auto.small"; then
    bad "auto: a 3-token prompt is not stored: $(grep '^patterns' "$TMP/auto.small")"
elif [ "$(grep -c "^patterns: auto.*position[s]*: stored (" "$TMP/auto.txt")" != 1 ] ||
    ! grep -q "^patterns: auto.*position[s]*: computed on demand" "$TMP/auto.txt" ||
    [ "$(grep -c 'capture at the context.*everything kept' "$TMP/auto.txt")" != 2 ]; then
    bad "auto: 1000 positions stored, then on demand at 1400 with everything kept: $(grep '^patterns\|^capture at' "$TMP/auto.txt")"
elif ! cmp -s "$TMP/auto.p.npy" "$TMP/st.p.npy" || ! cmp -s "$TMP/auto.s.npy" "$TMP/st.s.npy"; then
    bad "auto: the rows after turning on demand differ from the stored run's"
else
    pass=$((pass + 1))
fi

echo "ondemand: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
