#!/bin/sh
# TransformerLens's optional hooks and the per-head instruments:
#  - hooks_ref.py (NumPy, W_O and b_O read from the GGUF by e2e_read.py):
#    attn.hook_result's heads sum with b_O to hook_attn_out and each is
#    hook_z's head through its W_O columns (1e-5 relative); the logits and
#    attn_out match the plain program's; hook_attn_in / hook_mlp_in are
#    resid_pre / resid_mid to the bit; grad at them against the plain
#    program's gradients (held to PyTorch by grad.sh) within 1e-4; `patch
#    L.H from "OTHER" pos=P` bit-exact on hook_z and as NumPy predicts on
#    attn_out; `ablate L.H mean over FILE` against NumPy's pooled mean;
#  - the settings: listed by `set`, kept across `load`, on the command line;
#    a watch on hook_result stops a run; the view survives a rebuild (its
#    panes are made again for the new program) and shows the new hooks.
set -u
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
MODELS=$HERE/../../models
PY=/usr/bin/python3
. "$HERE/tmux_lib.sh"
tmux_setup attnscope-hooks
. "$HERE/expect_lib.sh"

py_ref hooks_ref.py numpy && grep -c '^ok' "$TMP/hooks_ref.py.log" | sed 's/^/hooks_ref.py: /; s/$/ checks passed/'

G=$MODELS/austen-gpt2.gguf
expect "set lists the optional hooks, off by default" 0 '^attn-result = off$' '' -- -m "$G" -e 'set'
expect "set in-hooks on is listed" 0 '^in-hooks = on \(blocks.L.hook_attn_in, hook_mlp_in\)$' '' -- -m "$G" -e 'set in-hooks on; set'
expect "hook_result's shape in hooks" 0 'blocks.2.attn.hook_result	\[5, 8, 256\]' '' \
    -- -m "$G" --attn-result on -e 'prompt "the cat sat"; finish; hooks blocks.2.attn.*'
expect "setting it again rebuilds nothing" 0 'attn-result = on \(unchanged\)' '' -- -m "$G" --attn-result on -e 'set attn-result on'
expect "off removes the hooks" 1 '' "no hook matches 'blocks.0.attn.hook_result'" \
    -- -m "$G" -e 'set attn-result on; set attn-result off; hooks blocks.0.attn.hook_result'
expect "load keeps the options" 0 'blocks.0.hook_mlp_in' '' \
    -- -m "$G" -e "set in-hooks on; load $MODELS/austen-llama.gguf; hooks blocks.0.hook_mlp_in"
expect "the context is run again after a rebuild" 0 'ran the context again \(5 positions\)' '' \
    -- -m "$G" -e 'prompt "the cat sat"; finish; set attn-result on'
expect "a watch on hook_result stops the run" 0 'watch.*blocks.1.attn.hook_result' '' \
    -- -m "$G" --attn-result on -e 'prompt "the cat sat"; watch blocks.1.attn.hook_result max > 0.1; continue'
$PY -c "import numpy as np, sys; np.save(sys.argv[1], np.ones(256, np.float32))" "$TMP/v.npy" 2>/dev/null
expect "steer at hook_mlp_in" 0 'steer by v.npy' '' \
    -- -m "$G" --in-hooks on -e "prompt \"the cat sat\"; finish; steer blocks.1.hook_mlp_in $TMP/v.npy scale=0.5; ablations; top 1"

# the view: a rebuild under it (tmux, 120x35), then the new hooks in its command output
if view_start hv "$G" 120 35; then
    typed hv 'set delay 0; prompt "the cat sat on the mat"; finish; view'
    keys hv Enter
    wait_for hv 'pass done' 10
    keys hv ':'
    sleep 0.3
    typed hv 'set in-hooks on'
    keys hv Enter
    if wait_for hv 'in-hooks = on' 10; then ok; else bad "the view: set in-hooks on"; fi
    keys hv ':'
    sleep 0.3
    typed hv 'hooks blocks.3.hook_mlp_in'
    keys hv Enter
    if wait_for hv 'blocks.3.hook_mlp_in +\[8, 256\]' 10; then ok; else bad "the view after a rebuild: hooks does not show blocks.3.hook_mlp_in"; cat "$TMP/screen"; fi
fi

echo "hooks.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
