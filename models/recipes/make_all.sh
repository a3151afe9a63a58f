#!/bin/sh
# Re-create every shipped model from nothing (see models/README.md).
#
#   models/recipes/make_all.sh            # everything, about 1 h 45 min on 2 cores
#   models/recipes/make_all.sh induction  # only the named models
#
# Needs Debian's python3-torch, python3-numpy, python3-sentencepiece,
# python3-regex, r-base-core and r-cran-janeaustenr (de-en: trans-de-en,
# the German-English dictionary). Writes:
#   models/recipes/work/      corpus, tokenizers, checkpoints, logs, results
#   models/NAME.gguf          the shipped models
#   tests/fixtures/models/    NAME.tokens.npy + NAME.logits.npy per model
# Each train.py run exports its GGUF, fixtures and head scores when it ends;
# the card numbers are in work/NAME.results.json and work/NAME.log.
set -eu
cd "$(dirname "$0")"
PY=/usr/bin/python3
mkdir -p work

if [ ! -f work/corpus_train.txt ]; then
    $PY corpus.py
fi
if [ ! -f work/bpe.json ]; then
    $PY bpe.py train --vocab 2048 --out work/bpe.json work/corpus_train.txt
fi
if [ ! -f work/spm.model ]; then
    $PY spm.py train --vocab 2048 --prefix work/spm work/corpus_train.txt
fi
if [ ! -f work/wordpiece.json ]; then
    $PY wordpiece.py train --vocab 5000 --out work/wordpiece.json work/corpus_train.txt
fi

models="${*:-austen-gpt2 induction austen-llama austen-bert vit-fashion de-en austen-moe}"
for m in $models; do
    echo "== $m (log: models/recipes/work/$m.log)"
    case "$m" in
    austen-bert)
        # masked-LM pre-training, then export_bert.py (GGUF, fixtures, card numbers)
        nice -n 10 $PY train_bert.py > "work/$m.log" 2>&1 ;;
    vit-fashion)
        # Fashion-MNIST from Debian's dataset-fashion-mnist; writes the
        # GGUF, assets/fashion/*.png and tests/fixtures/models/vit-fashion.*
        nice -n 10 $PY train_vit.py > "work/$m.log" 2>&1 ;;
    de-en)
        # the German-English dictionary (/usr/share/trans/de-en): splits and
        # tokenizer, training, test-split evaluation, GGUF and fixtures;
        # then the cross-attention head scores and attnscope's own greedy
        # output checked against PyTorch's (needs build/attnscope)
        nice -n 10 $PY train_deen.py > "work/$m.log" 2>&1
        nice -n 10 $PY deen_heads.py >> "work/$m.log" 2>&1
        if [ -x ../../build/attnscope ]; then
            $PY deen_check.py >> "work/$m.log" 2>&1
        fi ;;
    austen-moe)
        # DeepSeek-style MoE (MLA, 1 dense + 3 routed layers): training,
        # routing statistics, GGUF and the every-hook fixture
        nice -n 10 $PY train_moe.py > "work/$m.log" 2>&1 ;;
    *)
        nice -n 10 $PY train.py --model "$m" > "work/$m.log" 2>&1 ;;
    esac
    grep -E '"step"|wrote|accuracy|identical' "work/$m.log" | tail -3
done
ls -l ../*.gguf ../../tests/fixtures/models/
