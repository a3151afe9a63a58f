#!/bin/sh
# The backward pass: `grad`, `saliency` and the metric's kinds.
#  - grad_ref.py: every hook's d metric / d hook on every fixture
#    architecture (gpt2, the llama family, gemma2/3, phi3, qwen2/3, mixtral,
#    qwen2moe, the deepseek2 variants, bert, transformer, t5, vit) equals
#    PyTorch autograd on the reference model (float64) within 1e-4 of the
#    largest gradient, for a logit difference, logprob, prob at an earlier
#    position and logit (vit: at a class on [CLS]), with central finite
#    differences at the embeddings; every bundled model (austen-gpt2,
#    austen-llama, induction, austen-moe, austen-bert, de-en, vit-fashion)
#    read back into its reference class (models/recipes/gguf_import.py),
#    its logits first equal to attnscope's dump within 1e-4 of the largest,
#    then every hook's grad against autograd within 1e-4, the same four
#    metric kinds (a model the loader cannot read is a failure naming why);
#    and against finite differences of attnscope's steered forward;
#    saliency and integrated gradients against torch; IG's completeness on
#    gpt2 within 2%; central finite differences at a few coordinates;
#  - the metric's words: `metric prob 1434` on austen-llama is a
#    probability (prob is a token there), `metric "prob" 1434` the logit
#    difference; usage errors;
#  - the view: after `saliency` the token strip's chips are shaded and the
#    tokens of negative saliency (in the batch table) underlined, the title
#    saying so; before it, neither (grad_view.py reads the screen's colours);
#  - routed experts (austen-moe): the gradient passes the chosen gates and
#    experts, none reaches the indices, and d/d expert weights is nonzero at
#    the chosen experts alone;
#  - bad input answered by one message naming what and where: an unknown
#    hook, an unwritable path, an embedding model without logits, no metric,
#    no prompt. (No op kind on a path to the logits lacks a VJP now: the
#    poolings without one, max, rank and L2-normalized, are on embedding
#    models, refused for their lack of logits first.)
set -u
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
MODELS=$HERE/../../models
FIX=$HERE/../fixtures
PY=/usr/bin/python3
. "$HERE/tmux_lib.sh"
tmux_setup attnscope-grad
. "$HERE/expect_lib.sh"

py_ref grad_ref.py "numpy torch torchvision PIL" && grep '^ok' "$TMP/grad_ref.py.log" | grep 'loaded into reference' | cut -c1-150

L=$MODELS/austen-llama.gguf
G=$FIX/tiny-gpt2.gguf
expect "metric prob is a probability even where prob is a token" 0 '^metric: p\(' '' -- -m "$L" -e 'metric prob 1434'
expect "a quoted keyword is a token" 0 '^metric: logit\[.prob\] - logit\[' '' -- -m "$L" -e 'metric "prob" 1434'
expect "metric logprob with a position" 0 '^metric: log p\(.*\) at position 2$' '' -- -m "$L" -e 'metric logprob 1434 2'
expect "metric without its token" 1 '' 'usage: metric' -- -m "$L" -e 'metric logit'
expect "grad before a metric" 1 '' 'no metric' -- -m "$G" -e 'prompt-ids 276 257 262; grad hook_embed'
expect "grad before a prompt" 1 '' 'prompt' -- -m "$G" -e 'metric 5 7; grad hook_embed'
expect "grad of an unknown hook" 1 '' 'blocks.9.hook_nope' -- -m "$G" -e 'prompt-ids 276 257 262; metric 5 7; grad blocks.9.hook_nope'
expect "grad to an unwritable path" 1 '' '/nonexistent/g.npy' -- -m "$G" -e 'prompt-ids 276 257 262; metric 5 7; grad hook_embed /nonexistent/g.npy'
expect "grad to a file that is not .npy" 1 '' "not 'g.png'" -- -m "$G" -e 'prompt-ids 276 257 262; metric 5 7; grad hook_embed g.png'
# routed experts: the gradient reaches the chosen experts' weights through
# their gates and nothing through the choice (the indices): on austen-moe,
# d/d hook_expert_weights is nonzero exactly where the dumped indices point
expect "grad through austen-moe's routed experts" 0 '^  4  ' '' \
    -- -m "$MODELS/austen-moe.gguf" -e 'prompt "It is a truth"; metric logprob 5; grad hook_embed'
expect "the chosen indices get no gradient" 0 'no gradient reaches blocks.1.mlp.hook_expert_indices' '' \
    -- -m "$MODELS/austen-moe.gguf" -e 'prompt "It is a truth"; finish; metric logprob 5; grad blocks.1.mlp.hook_expert_indices'
"$BIN" --no-tui -m "$MODELS/austen-moe.gguf" -e "prompt \"It is a truth universally acknowledged\"; finish; metric logprob 5; dump blocks.2.mlp.hook_expert_indices $TMP/ix.npy; grad blocks.2.mlp.hook_expert_weights $TMP/w.npy" >/dev/null 2>&1
if $PY -c "
import numpy as np, sys
ix, w = np.load(sys.argv[1]), np.load(sys.argv[2])
chosen = np.zeros(w.shape, bool)
np.put_along_axis(chosen, ix.astype(int), True, 1)
sys.exit(0 if ix.shape == (w.shape[0], 2) and (w[~chosen] == 0).all() and (w[chosen] != 0).all() else 1)" "$TMP/ix.npy" "$TMP/w.npy" 2>/dev/null; then ok; else
    bad "austen-moe: d/d expert weights is not nonzero at the chosen experts alone"; fi
# austen-moe at --capture-mb 0 (the experts' outputs and gates recomputed): the same array to the bit
for mb in 0 ""; do
    "$BIN" -m "$MODELS/austen-moe.gguf" ${mb:+--capture-mb $mb} --no-tui -e "prompt \"It is a truth universally acknowledged\"; metric logprob 5; grad hook_embed $TMP/moe$mb.npy" >/dev/null 2>&1
done
if $PY -c "import numpy as np, sys; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); sys.exit(0 if a.shape == (12, 256) and np.array_equal(a, b) and abs(b).max() > 0 else 1)" "$TMP/moe0.npy" "$TMP/moe.npy" 2>/dev/null; then ok; else bad "austen-moe: grad at --capture-mb 0 (recomputed) differs from the captured run's"; fi
expect "grad on an embedding model without logits" 1 '' 'tiny-nomic-bert gives no logits' \
    -- -m "$FIX/tiny-nomic-bert.gguf" -e 'prompt-ids 1 2 3; metric 5 7; grad embed.hook_embed'
# with nothing captured (--capture-mb 0) the pass is recomputed with the
# default budget, the interventions included: the same array to the bit
for mb in 0 ""; do
    "$BIN" -m "$G" ${mb:+--capture-mb $mb} --no-tui -e "prompt-ids 276 257 262 264; metric logprob 5; ablate 0.1 zero; grad blocks.0.hook_resid_pre $TMP/g$mb.npy" >/dev/null 2>&1
done
if $PY -c "import numpy as np, sys; a, b = np.load(sys.argv[1]), np.load(sys.argv[2]); sys.exit(0 if a.shape == (4, 32) and np.array_equal(a, b) and abs(b).max() > 0 else 1)" "$TMP/g0.npy" "$TMP/g.npy" 2>/dev/null; then ok; else bad "grad at --capture-mb 0 (recomputed) differs from the captured run's"; fi
expect "grad runs the pass when needed and summarises per position" 0 '^  2  ' '' \
    -- -m "$G" -e 'prompt-ids 276 257 262; metric logprob 5; grad blocks.0.hook_resid_pre'
expect "grad at a metric position past the prompt" 1 '' 'position 9.*3 tokens' \
    -- -m "$G" -e 'prompt-ids 276 257 262; metric logprob 5 9; grad hook_embed'
expect "saliency's table and its sum" 0 '^sum [-+][0-9.]+; metric' '' \
    -- -m "$G" -e 'prompt-ids 276 257 262; metric logprob 5; saliency'
expect "saliency ig= out of range" 1 '' 'ig steps' -- -m "$G" -e 'prompt-ids 276 257 262; metric logprob 5; saliency ig=0'
expect "saliency with a stray argument" 1 '' "saliency: 'x.png'" -- -m "$G" -e 'prompt-ids 276 257 262; metric logprob 5; saliency x.png'
expect "patch sweep refuses a metric at another position" 1 '' 'patch sweep reads the logits at position 2 only' \
    -- -m "$G" -e 'prompt-ids 276 257 262; metric logprob 5 1; patch sweep resid_pre from "the cat"'

# the view's token strip (tmux, 120x35): the chips before and after `saliency`
"$BIN" --no-tui -m "$G" -e 'prompt "the cat sat on the mat"; finish; metric logprob 5; saliency' > "$TMP/sal.txt" 2>&1
if view_start sal "$G" 120 35; then
    typed sal 'set delay 0; prompt "the cat sat on the mat"; finish; view'
    keys sal Enter
    wait_for sal 'Tokens  6 prompt' 10
    screen_e sal; cp "$TMP/screen" "$TMP/before"
    keys sal ':'
    sleep 0.3
    typed sal 'metric logprob 5; saliency'
    keys sal Enter
    wait_for sal 'shaded by \|saliency\|' 10
    screen_e sal; cp "$TMP/screen" "$TMP/after"
    if $PY "$HERE/grad_view.py" "$TMP/before" "$TMP/after" "$TMP/sal.txt"; then ok; else
        bad "the token strip after saliency: shading or underlines do not follow the table"; fi
    if grep -q 'shaded by |saliency|' "$TMP/before"; then bad "the token strip says it is shaded before saliency ran"; else ok; fi
fi

echo "grad.sh: $pass passed, $fail failed"
[ "$fail" = 0 ]
