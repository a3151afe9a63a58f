#!/bin/sh
# Real Hugging Face metadata (tests/hub/NAME, each with its SOURCE) around
# small random weights in the real checkpoints' layouts, held to independent
# references: float64 NumPy forward passes and @lenml/tokenizers' ids.
#   sh tests/hub/run.sh BUILD_DIR LIB "CC" "LDLIBS"
# Each script below is run as SCRIPT BUILD ATTNSCOPE TOKIDS NODE_PATH, one
# line each (so make deps-scan reads them): add a model family's line. @lenml/tokenizers comes from npm
# into BUILD/hfref as make hf-tokref fetches it (or here, alone); without
# npm/node or numpy the run says SKIPPED and exits 0. Exits 1 when a script fails.
set -u
build=$1 lib=$2 cc=$3 ldlibs=$4
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
mkdir -p "$build/hub" && build=$(cd "$build" && pwd)
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "*** hub-ref: npm/node missing (apt-get install npm): SKIPPED ***"; exit 0
fi
/usr/bin/python3 -c 'import numpy' 2>/dev/null || { echo "*** hub-ref: python3-numpy missing: SKIPPED ***"; exit 0; }
nm=$build/hfref/node_modules
if [ ! -d "$nm/@lenml/tokenizers" ]; then
  nm=$build/hub/node_modules
  [ -d "$nm/@lenml/tokenizers" ] ||
    (cd "$build/hub" && npm install --silent --no-audit --no-fund @lenml/tokenizers@3.7.2 >/dev/null) ||
    { echo "*** hub-ref: could not fetch @lenml/tokenizers: SKIPPED ***"; exit 0; }
fi
$cc -std=c11 -D_GNU_SOURCE -I"$root/include" -I"$root/src" "$root/tests/hfref/tokids.c" "$lib" $ldlibs -o "$build/hub/tokids" ||
  exit 1
rc=0
/usr/bin/python3 "$here/encoders.py" "$build" "$build/attnscope" "$build/hub/tokids" "$nm" || rc=1
/usr/bin/python3 "$here/decoders.py" "$build" "$build/attnscope" "$build/hub/tokids" "$nm" || rc=1
if /usr/bin/python3 -c 'import PIL' 2>/dev/null; then
  /usr/bin/python3 "$here/vit.py" "$build/attnscope" || rc=1
else
  echo "*** hub-ref: python3-pil missing (apt-get install python3-pil): the ViT checks SKIPPED ***" >&2
fi
exit $rc
