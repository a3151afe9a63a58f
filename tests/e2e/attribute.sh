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

py_ref attribute_ref.py numpy && grep '^ok' "$TMP/attribute_ref.py.log" | tail -2

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

# the view's gradient page (G) at 80x24 and 160x48: its rows against NumPy
# norms and dots of `grad` and `dump` (grad_page.py); one line without a metric
M=$MODELS/austen-gpt2.gguf
TXT='When Mary and John went to the store, John gave a drink to'
"$BIN" -m "$M" --no-tui -e "prompt \"$TXT\"; finish; metric \" Mary\" \" John\"; grad blocks.1.hook_resid_pre $TMP/gp.npy;
    dump blocks.1.hook_resid_pre $TMP/xp.npy" >/dev/null 2>&1 || bad "grad/dump for the gradient page"
for size in 80x24 160x48; do
    name=g$size
    view_start "$name" "$M" "${size%x*}" "${size#*x}" || continue
    typed "$name" "set delay 0; prompt \"$TXT\"; finish; view"
    keys "$name" Enter
    wait_for "$name" 'Tokens  19 prompt' 10
    keys "$name" Escape
    sleep 0.3
    keys "$name" G
    if wait_for "$name" 'no metric: set one' 5; then ok; else bad "$size: G without a metric does not say so"; fi
    keys "$name" ':'
    sleep 0.3
    typed "$name" 'metric " Mary" " John"'
    keys "$name" Enter
    sleep 0.5
    keys "$name" Escape
    sleep 0.3
    keys "$name" j
    if wait_for "$name" 'd metric / d blocks.1.hook_resid_pre' 5 && wait_for "$name" 'at the last position = 1.79' 10; then
        screen "$name"
        min=3
        [ "$size" = 160x48 ] && min=8
        if $PY "$HERE/grad_page.py" "$TMP/screen" "$TMP/gp.npy" "$TMP/xp.npy" blocks.1.hook_resid_pre $min >"$TMP/gp.log" 2>&1
        then ok; else bad "$size: the gradient page differs from NumPy"; cat "$TMP/gp.log"; cat "$TMP/screen"; fi
    else
        bad "$size: G after the metric shows no gradient of blocks.1.hook_resid_pre"; screen "$name"; cat "$TMP/screen"
    fi
    # ? lists G (at 80x24 a page down: the overlay scrolls)
    keys "$name" '?'
    sleep 0.3
    [ "$size" = 80x24 ] && keys "$name" Space
    if wait_for "$name" "N, c, G .*colormap; d metric" 5; then ok; else bad "$size: ? does not list G"; screen "$name"; cat "$TMP/screen"; fi
done

echo "attribute.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
