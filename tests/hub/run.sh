#!/bin/sh
# Real hub metadata (tests/hub/<name>/, each with its SOURCE) around small
# random weights, against independent references: one script a line.
# Usage: sh tests/hub/run.sh [ATTNSCOPE]   (make hub-ref)
here=$(dirname "$0")
bin=${1:-$here/../../build/attnscope}
rc=0
for script in vit.py; do
    /usr/bin/python3 "$here/$script" "$bin" || rc=1
done
exit $rc
