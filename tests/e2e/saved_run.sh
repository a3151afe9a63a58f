#!/bin/sh
# The capture file and saved runs (issue 35): a live session capturing to
# a memory-mapped file, `save run`, and `attnscope --open RUN` without the
# weights. Held to the live session: every hook's `dump all` array, `heads
# context` and an exported PNG are identical bytes (cmp) on a decoder
# (tiny-gpt2), encoders (tiny-bert, tiny-nomic-bert) and the de-en
# encoder-decoder; runs saved in f16 / bf16 give arrays equal to NumPy's
# rounding of the live float32 values (np.float16(x); bf16: round to
# nearest even on the top 16 bits), exactly. AS_BIN is the binary.
set -u
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
FIX=$HERE/../fixtures
MODELS=$HERE/../../models
PY=${PYTHON:-/usr/bin/python3}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

. "$HERE/expect_lib.sh"

# same NAME MODEL "INPUT COMMANDS" FIGURE-COMMAND
same() {
    name=$1 model=$2 input=$3 fig=$4
    d=$TMP/$name
    mkdir -p "$d"
    if ! "$BIN" --no-tui -m "$model" --capture-file "$d/capture.bin" -e "$input; finish; dump all $d/live; heads context; \
$fig $d/live.png; save run $d/f32.run; save run $d/f16.run dtype=f16; save run $d/bf16.run dtype=bf16; info" \
        >"$d/live.out" 2>"$d/live.err"; then
        bad "$name: the live session failed: $(head -3 "$d/live.err")"
        return
    fi
    grep -q "^capture file: $d/capture.bin" "$d/live.out" && ok || bad "$name: info names the capture file"
    [ ! -e "$d/capture.bin" ] && ok || bad "$name: the capture file is removed when the session ends"
    for dt in f32 f16 bf16; do
        if ! "$BIN" --no-tui --open "$d/$dt.run" -e "dump all $d/$dt; heads context; $fig $d/$dt.png; info" \
            >"$d/$dt.out" 2>"$d/$dt.err"; then
            bad "$name: --open $dt.run failed: $(head -3 "$d/$dt.err")"
            continue
        fi
        grep -q "^saved run: $d/$dt.run, of $model .*hooks kept in $dt" "$d/$dt.out" && ok ||
            bad "$name: info says the saved run and its dtype ($dt)"
    done
    # f32: bit for bit
    n=0 diff=0
    for f in "$d"/live/*.npy; do
        n=$((n + 1))
        cmp -s "$f" "$d/f32/$(basename "$f")" || { diff=$((diff + 1)); echo "  differs: $(basename "$f")"; }
    done
    [ "$n" -gt 10 ] && [ "$diff" = 0 ] && ok || bad "$name: $diff of $n dumped hooks differ from the live session's"
    sed -n '/^previous-token/,$p' "$d/live.out" | sed '/^wrote /,$d' >"$d/heads.live"
    sed -n '/^previous-token/,$p' "$d/f32.out" | sed '/^wrote /,$d' >"$d/heads.f32"
    [ -s "$d/heads.live" ] && cmp -s "$d/heads.live" "$d/heads.f32" && ok || bad "$name: heads context differs"
    cmp -s "$d/live.png" "$d/f32.png" && ok || bad "$name: the PNG figure differs"
    cmp -s "$d/live/index.json" "$d/f32/index.json" && ok || bad "$name: dump all's index.json differs"
    # f16, bf16: NumPy's rounding of the live values, exactly
    if "$PY" - "$d" <<'EOF'; then ok; else bad "$name: f16/bf16 values are not the live values rounded"; fi
import glob, os, sys
import numpy as np
d = sys.argv[1]
def bf16(x):
    u = x.astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000).astype(np.uint32).view(np.float32)
    return np.where(np.isnan(x), x, r)
n = 0
for f in sorted(glob.glob(os.path.join(d, "live", "*.npy"))):
    live = np.load(f)
    for dt, rnd in (("f16", lambda x: x.astype(np.float16).astype(np.float32)), ("bf16", bf16)):
        got = np.load(os.path.join(d, dt, os.path.basename(f)))
        assert got.dtype == live.dtype and got.shape == live.shape, (f, dt)
        want = live if live.dtype != np.float32 else rnd(live)  # int32 hooks are kept exact
        if not np.array_equal(got, want, equal_nan=True):
            bad = np.flatnonzero(~((got == want) | (np.isnan(got) & np.isnan(want))))
            print("  %s %s: %d values differ, first at %d: %r vs %r" % (dt, os.path.basename(f), bad.size, bad[0],
                  got.flat[bad[0]], want.flat[bad[0]]))
            sys.exit(1)
        n += 1
assert n > 20, n
EOF
}

same gpt2 "$FIX/tiny-gpt2.gguf" "prompt hello world, hello world" "export grid all"
same bert "$FIX/tiny-bert.gguf" "prompt the cat sat on the mat" "export attn 1 0"
same nomic "$FIX/tiny-nomic-bert.gguf" "prompt-ids 1 5 9 12 7 2" "export grid 0"
same deen "$MODELS/de-en.gguf" "source Der Mann ist gut.; prompt The man" "export attn 1 2"
# a mixture of experts: its int32 hooks (the experts chosen) stay exact in f16/bf16 runs
same moe "$MODELS/austen-moe.gguf" "prompt It is a truth universally" "export routing 1"
# a Hugging Face directory's view, and a vision transformer (its pixels travel in the run; the overlay draws them)
d=$TMP/hfvit
mkdir -p "$d"
"$BIN" --no-tui -m "$FIX/hf/tiny-gemma2-hf" -e "prompt-ids 1 2 3 4; finish; dump all $d/hl; save run $d/h.run" >/dev/null 2>&1
"$BIN" --no-tui --open "$d/h.run" -e "dump all $d/ho" >/dev/null 2>&1
[ -s "$d/hl/index.json" ] && diff -r "$d/hl" "$d/ho" >/dev/null && ok || bad "a Hugging Face directory's run reopened differs"
"$BIN" --no-tui -m "$MODELS/vit-fashion.gguf" -e "image $FIX/image/grey-17x11.png; finish; top 3; export overlay 3 mean $d/a.png; dump all $d/vl; save run $d/v.run" 2>/dev/null | grep '^[1-3]	' >"$d/top.live"
"$BIN" --no-tui --open "$d/v.run" -e "top 3; export overlay 3 mean $d/b.png; dump all $d/vo" 2>/dev/null | grep '^[1-3]	' >"$d/top.open"
[ -s "$d/top.live" ] && cmp -s "$d/top.live" "$d/top.open" && cmp -s "$d/a.png" "$d/b.png" && diff -r "$d/vl" "$d/vo" >/dev/null && ok ||
    bad "a vision transformer's run reopened: top, overlay or arrays differ"

# the dtype kept is in a figure's provenance (f16/bf16 only: an f32 run's figure is the live one, byte for byte)
grep -aq "Hook dtype.f16 (a saved run's hooks, rounded to f16" "$TMP/gpt2/f16.png" && ok || bad "an f16 run's PNG says its dtype"
grep -aq "Hook dtype.bf16" "$TMP/gpt2/bf16.png" && ok || bad "a bf16 run's PNG says its dtype"
! grep -aq "Hook dtype" "$TMP/gpt2/f32.png" && ok || bad "an f32 run's PNG carries no dtype note"
# `load` keeps the capture file for the new model
expect "load keeps the capture file" 0 "^capture file: $TMP/load.bin \(" '' -- --no-tui -m "$FIX/tiny-gpt2.gguf" --capture-file "$TMP/load.bin" -e "load $FIX/tiny-llama.gguf; prompt the cat; finish; info"

# What a saved run cannot do without the weights: one line naming the model
R=$TMP/gpt2/f32.run
expect "a saved run refuses to compute" 1 '' "^error: this is a saved run of .*tiny-gpt2.gguf: finish needs the model's weights$" -- --no-tui --open "$R" -e "finish"
expect "a saved run refuses gen" 1 '' "saved run of .*: gen needs the model's weights" -- --no-tui --open "$R" -e "gen 3"
expect "a saved run refuses grad" 1 '' "saved run of .*: grad needs the model's weights" -- --no-tui --open "$R" -e "grad blocks.0.hook_resid_pre"
expect "a saved run refuses patch" 1 '' "saved run of .*: patch needs the model's weights" -- --no-tui --open "$R" -e "patch sweep"
expect "a saved run's heads says heads context" 1 '' "heads needs the model's weights \(its probe runs the model; .heads context. reads" -- --no-tui --open "$R" -e "heads"
expect "a saved run refuses export lens" 1 '' "export lens needs the model's weights" -- --no-tui --open "$R" -e "export lens $TMP/l.png"
expect "a saved run's top" 0 '^1	' '' -- --no-tui --open "$R" -e "top 3"
# settings that run the context again would replace the saved values with a zero-weight pass (top was uniform)
for st in "attn-result on" "in-hooks on" "patterns stored" "patterns on-demand" "capture-file $TMP/c.bin" "activations native"; do
    expect "a saved run refuses set $st" 1 '' "^error: this is a saved run of .*tiny-gpt2.gguf: set ${st%% *} needs the model's weights" -- --no-tui --open "$R" -e "set $st"
done
"$BIN" --no-tui --open "$R" -e "top 3" 2>/dev/null | grep '^[1-3]	' >"$TMP/top.saved"
"$BIN" --no-tui --open "$R" -e "set ctx 32; set temp 0.5; set threads 2; set seed 4; top 3" 2>/dev/null | grep '^[1-3]	' >"$TMP/top.set"
[ -s "$TMP/top.saved" ] && cmp -s "$TMP/top.saved" "$TMP/top.set" && ok || bad "a saved run's top changed after the settings it allows"
expect "a saved run saves again" 0 "^wrote $TMP/again.run: a saved run of tiny-gpt2" '' -- --no-tui --open "$R" -e "save run $TMP/again.run"
cmp -s "$R" "$TMP/again.run" && ok || bad "a saved run saved again is the same bytes"
expect "--open with a model" 2 '' "both given" -- --open "$R" -m "$FIX/tiny-gpt2.gguf" -e info

# patterns computed on demand live: the run keeps the q and k they come from, not the rows, and reopened
# computes the same rows (every dumped array the same bytes); the file is smaller than the same pass saved
# with the patterns stored by exactly their bytes (scores and pattern, n(n+1)/2 rows' keys a head, float32)
D=$TMP/od
mkdir -p "$D"
"$BIN" --no-tui -m "$FIX/tiny-gpt2.gguf" --patterns on-demand -e "prompt the cat sat on the mat and looked at the dog; \
finish; dump all $D/live; save run $D/od.run; set patterns stored; finish; save run $D/stored.run" >"$D/out" 2>&1
"$BIN" --no-tui --open "$D/od.run" -e "info; dump all $D/re" >"$D/re.out" 2>&1
grep -q "^patterns: on-demand .*computed on demand" "$D/re.out" && ok || bad "a run saved on demand reopens on demand"
# each run reopens as it was saved, whatever --patterns says (a stored run under --patterns on-demand
# said "hook 8 ... does not match ..., or is damaged": the session fuzzer, after a `set patterns` input)
for pair in "od.run stored" "stored.run on-demand"; do
    set -- $pair
    "$BIN" --no-tui --patterns "$2" --open "$D/$1" -e "dump all $D/flip-$1" >"$D/flip-$1.out" 2>&1
    [ -s "$D/flip-$1/index.json" ] && diff -r "$D/live" "$D/flip-$1" >/dev/null && ok ||
        bad "$1 reopened under --patterns $2 differs or fails: $(head -c 300 "$D/flip-$1.out")"
done
n=0 diff=0
for f in "$D"/live/*.npy; do
    n=$((n + 1))
    cmp -s "$f" "$D/re/$(basename "$f")" || diff=$((diff + 1))
done
[ "$n" -gt 10 ] && [ "$diff" = 0 ] && ok || bad "on demand: $diff of $n dumped hooks of the reopened run differ from the live ones"
last=$(sed -n 's/^pass over positions 0-\([0-9]*\) complete.*/\1/p' "$D/out" | tail -1)
tok=$((last + 1))
# tiny-gpt2: 2 layers of 4 heads
want=$((2 * 2 * 4 * tok * (tok + 1) / 2 * 4))
got=$(($(wc -c <"$D/stored.run") - $(wc -c <"$D/od.run")))
[ "$tok" -gt 10 ] && [ "$got" = "$want" ] && ok || bad "on demand: the run is $got bytes smaller than with the patterns stored, not their $want"

# a run whose budget kept nothing (--capture-mb 0): the last logits travel in the run, so `top` is the live one's,
# and what was not captured is said alike
"$BIN" --no-tui -m "$FIX/tiny-gpt2.gguf" --capture-mb 0 -e "prompt hello world; finish; top 5; save run $TMP/zero.run" 2>/dev/null | grep '^[1-5]	' >"$TMP/top.live"
"$BIN" --no-tui --open "$TMP/zero.run" -e "top 5" 2>/dev/null | grep '^[1-5]	' >"$TMP/top.open"
[ -s "$TMP/top.live" ] && cmp -s "$TMP/top.live" "$TMP/top.open" && ok || bad "a run of budget 0: top differs from the live session's"
expect "a run of budget 0: not captured, said" 1 '' "blocks.0.attn.hook_pattern is not captured: capture budget 0.0 MB at 11 positions" -- --no-tui --open "$TMP/zero.run" -e "dump blocks.0.attn.hook_pattern $TMP/p.npy"

# Hostile and truncated run files: one clear message, never a crash
printf 'GGUF not a run at all, some bytes more' >"$TMP/not.run"
expect "not a run" 1 '' "not.run: not a saved run \(it does not start with ATTNSCOPE-RUN" -- --no-tui --open "$TMP/not.run" -e info
size=$(wc -c <"$R")
for cut in 20 40 100 1000 3000 5000 $((size / 2)) $((size - 4)) $((size - 1)); do
    head -c "$cut" "$R" >"$TMP/cut.run"
    expect "a run cut at $cut bytes" 1 '' "cut.run: .*(truncated or damaged|not a saved run|metadata|does not match)" -- --no-tui --open "$TMP/cut.run" -e info
done
cat "$R" "$R" >"$TMP/long.run"
expect "a run with bytes past its end" 1 '' "long.run: damaged saved run: [0-9]+ bytes past its last hook" -- --no-tui --open "$TMP/long.run" -e info
# bytes flipped through the file: refused or read, never a crash
i=0
for at in 30 200 2000 4000 $((size - 700)) $((size - 300)); do
    i=$((i + 1))
    cp "$R" "$TMP/flip$i.run"
    printf '\377\377\377\177' | dd of="$TMP/flip$i.run" bs=1 seek="$at" conv=notrunc 2>/dev/null
    "$BIN" --no-tui --open "$TMP/flip$i.run" -e "info; dump all $TMP/flip$i" >/dev/null 2>"$TMP/err"
    rc=$?
    [ "$rc" -lt 128 ] && ok || bad "a run with bytes flipped at $at: crashed (signal $((rc - 128)))"
done

# The capture file: an unwritable path is said, naming it, and the session goes on in RAM
expect "unwritable capture file" 0 '^1	' "warning: capture file /nonexistent/dir/c.bin: No such file or directory; the capture stays in RAM" -- --no-tui -m "$FIX/tiny-gpt2.gguf" --capture-file /nonexistent/dir/c.bin -e "prompt hello; finish; top 1"
: >"$TMP/exists.bin"
expect "an existing capture file is refused" 1 '' "capture file $TMP/exists.bin: File exists \(it is made new" -- --no-tui -m "$FIX/tiny-gpt2.gguf" -e "set capture-file $TMP/exists.bin"
expect "set capture-file and off" 0 "capture-file = off \(the capture is in RAM\)" '' -- --no-tui -m "$FIX/tiny-gpt2.gguf" -e "prompt hello world; finish; set capture-file $TMP/c2.bin; top 1; set capture-file off; top 1; set"
[ ! -e "$TMP/c2.bin" ] && ok || bad "set capture-file off removes the file"
# the same values in RAM and in the file, moved there mid-session and grown past the first capacity (64)
# (austen-gpt2: a window of 256, so 150 tokens grow the capacity 64 -> 128 -> 256; then 5 generated tokens)
A=$MODELS/austen-gpt2.gguf
long=$(printf 'It is a truth universally acknowledged that a single man %.0s' 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15)
"$BIN" --no-tui -m "$A" -e "prompt $long; finish; gen 5; dump all $TMP/ram" >/dev/null 2>&1
"$BIN" --no-tui -m "$A" -e "prompt-ids 1 5; finish; set capture-file $TMP/c3.bin; prompt $long; finish; gen 5; dump all $TMP/file; save run $TMP/long.run; info" >"$TMP/out" 2>&1
"$BIN" --no-tui --open "$TMP/long.run" -e "dump all $TMP/reopened" >/dev/null 2>&1
n=$(ls "$TMP/ram"/*.npy 2>/dev/null | wc -l)
[ "$n" -gt 20 ] && diff -r "$TMP/ram" "$TMP/file" >/dev/null && ok || bad "hooks grown in the capture file (150 tokens, then gen) equal RAM's"
diff -r "$TMP/ram" "$TMP/reopened" >/dev/null && ok || bad "a generated run reopened equals RAM's"
grep -q "^capture file: $TMP/c3.bin (" "$TMP/out" && ok || bad "info names the capture file"
# a full disk (here a file-size limit of 2 MB, its signal ignored): said once, naming the file, and the
# session goes on in RAM with the same values
P="prompt It is a truth universally acknowledged that a single man in possession of a good fortune; finish; top 3"
"$BIN" --no-tui -m "$A" -e "$P" 2>/dev/null | grep "^[123]	" >"$TMP/top.ram"
(trap '' XFSZ; ulimit -f 4096; "$BIN" --no-tui -m "$A" --capture-file "$TMP/full.bin" -e "$P; info" >"$TMP/out" 2>"$TMP/err")
rc=$?
[ "$rc" = 0 ] && [ "$(grep -c "capture file $TMP/full.bin: File too large (growing it to [0-9.]* MB); capturing in RAM from here" "$TMP/err")" = 1 ] &&
    grep -q "^capture file $TMP/full.bin: File too large" "$TMP/out" && ok || bad "a full capture file: exit $rc, said once, info says so"
grep '^[123]	' "$TMP/out" | cmp -s - "$TMP/top.ram" && ok || bad "a full capture file: the same top 3 as in RAM"
[ ! -e "$TMP/full.bin" ] && ok || bad "a full capture file is removed at exit"
expect "dtype of save run refused" 1 '' "save run: 'dtype=f8': the option is dtype=f32, dtype=f16 or dtype=bf16" -- --no-tui -m "$FIX/tiny-gpt2.gguf" -e "prompt hi; finish; save run $TMP/x.run dtype=f8"
expect "save run before a pass" 1 '' "save run: nothing computed to save" -- --no-tui -m "$FIX/tiny-gpt2.gguf" -e "save run $TMP/x.run"
expect "--capture-dtype" 0 "hooks in bf16" '' -- --no-tui -m "$FIX/tiny-gpt2.gguf" --capture-dtype bf16 -e "prompt hi; finish; save run $TMP/y.run"
expect "--capture-dtype refused" 2 '' "capture-dtype f8.*f32, f16 or bf16" -- --capture-dtype f8 -m "$FIX/tiny-gpt2.gguf" -e info

echo "saved_run: $pass passed, $fail failed"
[ "$fail" = 0 ]
