#!/bin/sh
# The shipped lessons' claims against the arrays: tests/e2e/lesson_claims.py
# rebuilds each lesson's state in batch mode, dumps the hooks its steps
# talk about and checks every numeric or ordinal claim, one check each.
set -u
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
$PY -c 'import numpy' 2>/dev/null || { echo "FAIL: $PY with numpy is needed"; exit 1; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
$PY "$HERE/lesson_claims.py" "$BIN" "$HERE/../../models" "$TMP"
