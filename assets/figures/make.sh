#!/bin/sh
# The example figures in assets/figures/, drawn by attnscope itself from a
# bundled model on the opening sentence of Pride and Prejudice:
#
#   assets/figures/make.sh [MODEL.gguf [LAYER HEAD]]
#
# LAYER HEAD pick the head drawn on its own and the layer of the layer
# figures (default: layer 0, head 0). Figures are one column wide (3.3 in,
# attnscope's default). AS_BIN overrides the binary, TEXT
# the prompt (the test fixtures' 32-token context needs a shorter one:
# TEXT='the cat sat on the mat, the dog ate é!').
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${AS_BIN:-$ROOT/build/attnscope}
MODEL=${1:-$ROOT/models/austen-gpt2.gguf}
L=${2:-0}
H=${3:-0}
OUT=$ROOT/assets/figures
TEXT=${TEXT:-'It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife.'}

"$BIN" -m "$MODEL" -e "prompt \"$TEXT\"; finish;
    export attn $L $H $OUT/attention-head.png;
    export attn $L $H $OUT/attention-head.svg;
    export grid $L $OUT/attention-layer.png;
    export grid all $OUT/attention-model.png;
    export norms $L $OUT/norms.png;
    export probs $OUT/next-token.png;
    set temp 0; gen ${GEN:-12};
    export probs-trace $OUT/probs-trace.png"

# The model's head-score tables (as in models/README.md).
"$BIN" -m "$MODEL" -e "heads $OUT/heads-$(basename "$MODEL" .gguf).png"

# Activation patching: which positions and layers carry the name the model
# is about to repeat (the metric: logit of " Mary" minus " John").
"$BIN" -m "$MODEL" -e "prompt \"When Mary and John went to the store, John gave a drink to\"; finish;
    metric \" Mary\" \" John\";
    patch sweep resid_pre from \"When Mary and John went to the store, Mary gave a drink to\" $OUT/patch-resid.png;
    attribute resid from \"When Mary and John went to the store, Mary gave a drink to\" $OUT/attribute-resid.png"
# Attribution patching against the exact sweep on the same pair (the
# README's correlations): attribution.py prints them.
W=$(mktemp -d)
/usr/bin/python3 "$ROOT/assets/figures/attribution.py" "$BIN" "$MODEL" \
    "When Mary and John went to the store, John gave a drink to" \
    "When Mary and John went to the store, Mary gave a drink to" " Mary" " John" "$W"
rm -rf "$W"

# A vision transformer: every head's attention from CLS laid over the
# image, in the last layer (models/README.md, vit-fashion's card).
VIT=$ROOT/models/vit-fashion.gguf
if [ -f "$VIT" ]; then
    for img in sneaker shirt; do
        "$BIN" -m "$VIT" -e "image $ROOT/assets/fashion/$img.png; finish; export overlay 3 all $OUT/vit-$img-L3.png"
    done
fi

# A BERT: layer 1's next-token (head 0) and previous-token (head 1) heads on
# a sentence pair with a [MASK], and the head scores of attnscope's heads,
# next-token included (models/README.md, austen-bert's card).
BERT=$ROOT/models/austen-bert.gguf
if [ -f "$BERT" ]; then
    "$BIN" -m "$BERT" -e "prompt \"She was not handsome, but she was clever.\" \"Her sister thought him [MASK] agreeable.\";
        finish; fill 5; export grid 1 $OUT/bert-layer1.png; export lines 1 all $OUT/bert-layer1-lines.png"
    "$BIN" -m "$BERT" -e "heads $OUT/heads-austen-bert.png"
fi

# The encoder-decoder: de-en's cross-attention on a held-out compound it
# translates right (Haus|wasser|pumpen -> domestic water pumps), decoder
# layer 2 head 2 (its best aligning head by deen_heads.py) and every
# cross-attention head (models/README.md, de-en's card).
DEEN=$ROOT/models/de-en.gguf
if [ -f "$DEEN" ]; then
    "$BIN" -m "$DEEN" -e "source Hauswasserpumpen; prompt \"domestic water pumps\"; finish;
        export attn 2 2 $OUT/deen-cross-L2H2.png site=cross; export grid all $OUT/deen-cross-grid.png site=cross"
fi

# A mixture of experts: austen-moe's last layer, tokens by its 8 routed
# experts with the 2 chosen dotted (what each expert takes, on a passage
# from Pride and Prejudice), and the load of every layer and expert
# (models/README.md, austen-moe's card).
MOE=$ROOT/models/austen-moe.gguf
if [ -f "$MOE" ]; then
    "$BIN" -m "$MOE" -e "prompt \"My dear Mr. Bennet, said his lady to him one day, have you heard that Netherfield Park is let at last? Mr. Bennet replied that he had not.\";
        finish; export routing 3 $OUT/moe-routing-L3.png; export routing 1 $OUT/moe-routing-L1.png; export load $OUT/moe-load.png"
    # what each expert of layers 1 and 3 takes over the opening of Pride and
    # Prejudice's first chapter (about 200 tokens), two columns wide
    P1="It is a truth universally acknowledged, that a single man in possession of a good fortune, must be in want of a wife. However little known the feelings or views of such a man may be on his first entering a neighbourhood, this truth is so well fixed in the minds of the surrounding families, that he is considered the rightful property of some one or other of their daughters. My dear Mr. Bennet, said his lady to him one day, have you heard that Netherfield Park is let at last? Mr. Bennet replied that he had not. But it is, returned she; for Mrs. Long has just been here, and she told me all about it. Mr. Bennet made no answer. Do you not want to know who has taken it? cried his wife impatiently. You want to tell me, and I have no objection to hearing it."
    "$BIN" -m "$MOE" -e "prompt \"$P1\"; finish;
        export experts 3 $OUT/moe-experts-L3.png width=7in; export experts 1 $OUT/moe-experts-L1.png width=7in"
fi
