#!/bin/sh
# Attribution patching (`attribute`) and the view's gradient page (`g`).
#  - attribute_ref.py: every cell of `attribute heads|resid|mlp|attn` on
#    tiny-gpt2, tiny-llama and austen-gpt2 equals NumPy's (other - clean)
#    . grad from `dump` (both prompts) and `grad FILE.npy`, within 1e-5
#    relative to the largest cell;
#  - a figure is written (PNG header) and names the metric;
#  - bad input answered by one message naming what and where: another
#    length, an unknown kind, no metric, a metric at another position, a
#    file that is neither .npy nor a figure, options after a .npy, an
#    unwritable path, an encoder-decoder.
set -u
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
MODELS=$HERE/../../models
FIX=$HERE/../fixtures
PY=/usr/bin/python3
. "$HERE/tmux_lib.sh"
tmux_setup attnscope-attribute
. "$HERE/expect_lib.sh"

if $PY -c 'import numpy' 2>/dev/null; then
    if $PY "$HERE/attribute_ref.py" "$BIN" "$TMP" >"$TMP/ref.log" 2>&1; then ok; else bad "attribute_ref.py"; tail -20 "$TMP/ref.log"; fi
    grep '^ok' "$TMP/ref.log" | tail -2
else
    bad "$PY with numpy is needed (make test-deps)"
fi

G=$FIX/tiny-gpt2.gguf
P='prompt "the cat sat on the mat"; metric 5 7'
O='"the sat sat on the mat"'
expect "attribute writes a figure" 0 "^wrote $TMP/a.png" '' -- -m "$G" -e "$P; attribute heads from $O $TMP/a.png dpi=50"
if head -c 8 "$TMP/a.png" 2>/dev/null | od -c | grep -q 'P   N   G'; then ok; else bad "attribute's a.png is not a PNG"; fi
expect "attribute needs the same length" 1 '' 'the other prompt is 3 tokens but the context is 6' \
    -- -m "$G" -e "$P; attribute resid from \"the cat sat\""
expect "attribute of an unknown kind" 1 '' "attribute takes heads, resid, mlp or attn, not 'resid_pre'" \
    -- -m "$G" -e "$P; attribute resid_pre from $O"
expect "attribute without from" 1 '' 'usage: attribute heads\|resid\|mlp\|attn from' -- -m "$G" -e "$P; attribute resid $O"
expect "attribute without a metric" 1 '' 'attribute needs a metric' \
    -- -m "$G" -e "prompt \"the cat sat on the mat\"; attribute resid from $O"
expect "attribute with the metric at another position" 1 '' 'attribute reads the logits at position 5 only' \
    -- -m "$G" -e "prompt \"the cat sat on the mat\"; metric logprob 5 1; attribute resid from $O"
expect "attribute to a .txt" 1 '' "attribute writes FILE.npy, FILE.png, FILE.svg or FILE.pdf, not 'a.txt'" \
    -- -m "$G" -e "$P; attribute mlp from $O a.txt"
expect "attribute .npy with figure options" 1 '' "options such as 'dpi=100' are for a figure" \
    -- -m "$G" -e "$P; attribute mlp from $O a.npy dpi=100"
expect "attribute to an unwritable path" 1 '' '/nonexistent/a.npy: cannot write' \
    -- -m "$G" -e "$P; attribute attn from $O /nonexistent/a.npy"
expect "attribute before a prompt" 1 '' 'no context yet' -- -m "$G" -e "metric 5 7; attribute attn from $O"
expect "attribute on an encoder-decoder" 1 '' 'on an encoder-decoder' \
    -- -m "$FIX/tiny-t5.gguf" -e 'source "the cat"; prompt "the"; metric 5 7; attribute resid from "a"'

echo "attribute.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
