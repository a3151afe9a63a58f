#!/bin/sh
# End-to-end: no file is lost and no input hangs (issue #30). The real
# binary on temporary copies of the bundled model (models/ is never
# touched): dump and export never replace the loaded model, a FIFO, a
# device or a directory, and a link is written through to its file; a
# FIFO, a device or a directory given as a model, an image or a script is
# refused at once; a NUL byte on stdin refuses its line; a lesson is a
# name, never a path. AS_BIN is the binary.
set -u
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
MODELS=$HERE/../../models
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

. "$HERE/expect_lib.sh"

# expect, under `timeout 10`: a hang is a failure, not a stuck test run.
texpect() {
    name=$1 want=$2 out_pat=$3 err_pat=$4
    shift 5
    timeout 10 "$BIN" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    got=$?
    if [ "$got" = 124 ]; then bad "$name: still running after 10 s"; return; fi
    if [ "$got" -ge 128 ]; then bad "$name: crashed with signal $((got - 128))"; return; fi
    if [ "$want" = 0 ] && [ "$got" != 0 ]; then bad "$name: exit $got, wanted 0"; return; fi
    if [ "$want" != 0 ] && [ "$got" = 0 ]; then bad "$name: exit 0, wanted failure"; return; fi
    if [ -n "$out_pat" ] && ! grep -Eq -- "$out_pat" "$TMP/out"; then bad "$name: stdout lacks /$out_pat/"; return; fi
    if [ -n "$err_pat" ] && ! grep -Eq -- "$err_pat" "$TMP/err"; then bad "$name: stderr lacks /$err_pat/"; return; fi
    ok
}

sum() { cksum < "$1"; }

M=$TMP/models-copy.gguf
cp "$MODELS/austen-gpt2.gguf" "$M"
before=$(sum "$M")
P="prompt It is a truth; finish"
H=blocks.0.hook_resid_pre

# ---- writes
texpect "dump onto the loaded model refused" 1 '' "models-copy\.gguf: dump writes NumPy arrays only: the file name must end in \.npy" \
    -- -m "$M" -e "$P; dump $H $M"
[ "$(sum "$M")" = "$before" ] && ok || bad "dump changed the loaded model"
ln -s models-copy.gguf "$TMP/model-link.npy"
texpect "dump through a link onto the loaded model refused" 1 '' "model-link\.npy -> .*models-copy\.gguf: a model file in use \(the loaded model's, or one being read\): nothing written" \
    -- -m "$M" -e "$P; dump $H $TMP/model-link.npy"
[ "$(sum "$M")" = "$before" ] && [ -L "$TMP/model-link.npy" ] && ok || bad "dump through a link changed the loaded model"
ln -s models-copy.gguf "$TMP/model-link.png"
texpect "export through a link onto the loaded model refused" 1 '' "model-link\.png -> .*models-copy\.gguf: a model file in use \(the loaded model's, or one being read\): nothing written" \
    -- -m "$M" -e "$P; export attn 0 0 $TMP/model-link.png"
texpect "convert onto the loaded model refused" 1 '' "models-copy\.gguf: a model file in use \(the loaded model's, or one being read\): nothing written" \
    -- -m "$M" -e "convert $HERE/../fixtures/hf/tiny-gpt2 $M"
[ "$(sum "$M")" = "$before" ] && ok || bad "export or convert changed the loaded model"
mkfifo "$TMP/pipe.npy" "$TMP/pipe.png"
texpect "dump onto a FIFO refused" 1 '' "pipe\.npy: a FIFO, not a regular file: nothing written" -- -m "$M" -e "$P; dump $H $TMP/pipe.npy"
texpect "export onto a FIFO refused" 1 '' "pipe\.png: a FIFO, not a regular file: nothing written" -- -m "$M" -e "$P; export attn 0 0 $TMP/pipe.png"
[ -p "$TMP/pipe.npy" ] && [ -p "$TMP/pipe.png" ] && ok || bad "a FIFO was replaced"
# A device reached through a link (dump and export refuse other names
# before): refused before a temporary file is made beside it in /dev.
ln -s /dev/null "$TMP/null.npy"
ln -s /dev/null "$TMP/null.png"
texpect "dump onto a device refused" 1 '' "null\.npy -> /dev/null: a character device, not a regular file: nothing written" -- -m "$M" -e "$P; dump $H $TMP/null.npy"
texpect "export onto a device refused" 1 '' "null\.png -> /dev/null: a character device, not a regular file: nothing written" -- -m "$M" -e "$P; export attn 0 0 $TMP/null.png"
[ -c /dev/null ] && ok || bad "/dev/null is no longer a device"
mkdir "$TMP/dir.npy"
texpect "dump onto a directory refused" 1 '' "dir\.npy: a directory, not a file name: nothing written" -- -m "$M" -e "$P; dump $H $TMP/dir.npy"
echo old > "$TMP/real.npy"
ln -s real.npy "$TMP/link.npy"
texpect "dump through a link replaces its file" 0 "wrote $TMP/link\.npy" '' -- -m "$M" -e "$P; dump $H $TMP/link.npy"
[ -L "$TMP/link.npy" ] && head -c 6 "$TMP/real.npy" | grep -q NUMPY && ok || bad "the link or its file is wrong after dump"
ln -s nowhere/x.npy "$TMP/dangling.npy"
texpect "dump through a dangling link refused" 1 '' "dangling\.npy: a symbolic link to nowhere/x\.npy, which does not exist: nothing written" \
    -- -m "$M" -e "$P; dump $H $TMP/dangling.npy"
texpect "dump to a name not ending in .npy refused" 1 '' "out\.txt: dump writes NumPy arrays only" -- -m "$M" -e "$P; dump $H $TMP/out.txt"
[ ! -e "$TMP/out.txt" ] && ok || bad "dump wrote out.txt"
if ls "$TMP" | grep -q '\.tmp\.'; then bad "temporary file left behind"; else ok; fi

# ---- reads that would block or never end
texpect "-m FIFO refused at once" 1 '' "pipe\.npy: not a regular file \(a FIFO\)" -- -m "$TMP/pipe.npy" -e "info"
texpect "load FIFO refused at once" 1 '' "pipe\.npy: not a regular file \(a FIFO\)" -- -m "$M" -e "load $TMP/pipe.npy"
texpect "image FIFO refused at once" 1 '' "pipe\.png: not a regular file \(a FIFO\)" -- -m "$MODELS/vit-fashion.gguf" -e "image $TMP/pipe.png"
texpect "--info FIFO refused at once" 1 '' "not a regular file \(a FIFO\)" -- --info "$TMP/pipe.npy"
texpect "-x /dev/zero refused" 1 '' "-x /dev/zero: not a regular file \(a character device\)" -- -m "$M" -x /dev/zero
texpect "-x DIR fails" 1 '' "-x $TMP: not a regular file \(a directory\)" -- -m "$M" -x "$TMP"
texpect "-x FIFO refused at once" 1 '' "not a regular file \(a FIFO\)" -- -m "$M" -x "$TMP/pipe.npy"
head -c 17000000 /dev/zero | tr '\0' '#' > "$TMP/huge.txt"
texpect "-x over 16 MB refused" 1 '' "huge\.txt: 17000000 bytes, over the 16 MB a script may have" -- -m "$M" -x "$TMP/huge.txt"
timeout 10 "$BIN" -m "$M" < /dev/zero > "$TMP/out" 2> "$TMP/err"
[ $? = 1 ] && grep -q "stdin:1: a NUL byte at column 1" "$TMP/err" && ok || bad "stdin from /dev/zero: $(cat "$TMP/err")"

# ---- a NUL byte on stdin refuses its line, naming where
printf 'prompt hel\000lo; finish\ntop 1\n' | timeout 10 "$BIN" -m "$M" > "$TMP/out" 2> "$TMP/err"
[ $? = 1 ] && grep -q "error: stdin:1: a NUL byte at column 11: the line is refused" "$TMP/err" && ! grep -q 'context:' "$TMP/out" &&
    ok || bad "a NUL byte on stdin: $(cat "$TMP/err")"
printf 'prompt hello\r\nfinish\r\ntop 1\r\n' | timeout 10 "$BIN" -m "$M" > "$TMP/out" 2> "$TMP/err"
[ $? = 0 ] && grep -q '^1	' "$TMP/out" && ok || bad "CRLF lines: $(cat "$TMP/err")"

# ---- lessons are names
texpect "lesson path traversal refused" 1 '' "no lesson '\.\./\.\./\.\./\.\./etc/passwd' \(a lesson is named, not a path.*the lessons: attention" \
    -- -m "$M" -e "lesson ../../../../etc/passwd"
texpect "lesson absolute path refused" 1 '' "a lesson is named, not a path" -- -m "$M" -e "lesson /etc/passwd"

[ "$(sum "$M")" = "$before" ] && ok || bad "the model copy changed"
echo "files e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
