#!/bin/sh
# End-to-end tests of the batch command contract: run the program as a user
# would and check its output, exit status and files. AS_BIN is the binary.
set -u
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
FIX=$HERE/../fixtures
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

. "$HERE/expect_lib.sh"

G=$FIX/tiny-gpt2.gguf
L=$FIX/tiny-llama.gguf

expect "top after finish" 0 '^1	[0-9]+	.*	0\.[0-9]+	' '' -- -m "$G" -e "prompt-ids 276 257 262; finish; top 3"
expect "top before compute says why" 1 '' 'no logits yet.*finish' -- -m "$G" -e "prompt-ids 276 257; top"
expect "unknown command" 1 '' "unknown command 'frobnicate'" -- -m "$G" -e "frobnicate"
expect "stops at first failing command" 1 '' 'no hook point' -- -m "$G" -e "prompt-ids 1 2; finish; stats nope; top"
expect "tokenize prints id<TAB>piece" 0 '^[0-9]+	' '' -- -m "$L" -e 'tokenize "the cat"'
expect "prompt text then gen" 0 '^generated: ' '' -- -m "$L" -e 'prompt the cat; gen 5'
expect "hooks lists shapes" 0 '^blocks\.1\.attn\.hook_pattern	\[4, 3, 3\]' '' -- -m "$L" -e 'prompt-ids 1 5 6; hooks'
expect "where after step" 0 'op 3/' '' -- -m "$G" -e 'prompt-ids 1 5 6; step 3; where'
expect "norms table" 0 'blocks\.0\.ln1 \(LayerNorm\) over 3 tokens' '' -- -m "$G" -e 'prompt-ids 1 5 6; finish; norms 0'
expect "stats" 0 'nan 0 inf 0' '' -- -m "$G" -e 'prompt-ids 1 5 6; finish; stats blocks.1.hook_resid_post'
expect "seeded sampling" 0 'generated' '' -- -m "$G" -e 'set temp 0.9; set seed 7; prompt-ids 276; gen 8'
a=$("$BIN" -m "$G" -e 'set temp 0.9; set seed 7; prompt-ids 276; gen 8' 2>&1)
b=$("$BIN" -m "$G" -e 'set temp 0.9; set seed 7; prompt-ids 276; gen 8' 2>&1)
c=$("$BIN" -m "$G" -e 'set temp 0.9; set seed 8; prompt-ids 276; gen 8' 2>&1)
if [ "$a" = "$b" ] && [ "$a" != "$c" ]; then ok; else bad "same seed, same tokens; other seed, other tokens"; fi

# The vector kernels: --version names the set in use; a set the CPU or
# build lacks is refused by name; every set greedily picks the same tokens.
expect "version names the kernels" 0 '^attnscope [0-9.]+ \(kernels: (avx512|avx2|generic)\)$' '' -- --version
expect "generic kernels on request" 0 '\(kernels: generic\)$' '' -- --kernels generic --version
expect "version names the activations' arithmetic, native by default" 0 '^activations: native \(llama.cpp' '' -- --version
expect "float32 activations on request" 0 '^activations: f32 \(float32' '' -- --activations f32 --version
expect "native activations on request" 0 '^activations: native ' '' -- --activations native --version
expect "unknown activations refused" 2 '' "--activations int4.*native or f32" -- --activations int4 -m "$G" -e "info"
expect "unknown kernels refused by name" 1 '' '--kernels sse9: .*no such kernels' -- --kernels sse9 -m "$G" -e "info"
k1=$("$BIN" -m "$L" -e 'prompt-ids 1 5 6; gen 12' 2>&1)
k2=$("$BIN" --kernels generic -m "$L" -e 'prompt-ids 1 5 6; gen 12' 2>&1)
if [ -n "$k1" ] && [ "$k1" = "$k2" ]; then ok; else bad "generic kernels generate other tokens: '$k1' vs '$k2'"; fi

printf 'prompt-ids 276 257\nfinish\ntop 2\n' > "$TMP/script"
expect "-x script" 0 '^2	' '' -- -m "$G" -x "$TMP/script"
"$BIN" -m "$G" < "$TMP/script" > "$TMP/out" 2>&1 && grep -q '^2	' "$TMP/out" && ok || bad "commands on stdin"

expect "dump writes npy" 0 'wrote .*pattern.npy' '' -- -m "$G" -e "prompt-ids 276 257 262; finish; dump blocks.0.attn.hook_pattern $TMP/pattern.npy"
if head -c 6 "$TMP/pattern.npy" | grep -q NUMPY; then ok; else bad "npy magic"; fi
expect "dump to missing dir" 1 '' 'cannot write in directory' -- -m "$G" -e "prompt-ids 1; finish; dump hook_embed $TMP/nodir/x.npy"
mkdir "$TMP/ro" && chmod 555 "$TMP/ro"
if [ "$(id -u)" != 0 ]; then
    expect "dump to read-only dir" 1 '' 'ro/x.npy' -- -m "$G" -e "prompt-ids 1; finish; dump hook_embed $TMP/ro/x.npy"
fi
if ls "$TMP/ro" "$TMP" | grep -q '\.tmp\.'; then bad "temp file left behind"; else ok; fi

# Figures: one line on success; an unwritable place or a bad option is one clear error.
P3="prompt-ids 276 257 262; finish"
expect "export attn png" 0 "^wrote $TMP/head\.png: attention layer 0 head 1 [0-9]+x[0-9]+ px$" '' -- -m "$G" -e "$P3; export attn 0 1 $TMP/head.png"
if head -c 8 "$TMP/head.png" | grep -q PNG; then ok; else bad "png magic"; fi
expect "export grid all svg" 0 "^wrote $TMP/grid\.svg: attention 2 layers x 4 heads [0-9]+x[0-9]+ viewBox$" '' -- -m "$G" -e "$P3; export grid all $TMP/grid.svg"
if grep -q '</svg>' "$TMP/grid.svg"; then ok; else bad "svg complete"; fi
expect "export to missing dir" 1 '' 'nodir/x\.png: cannot write in directory' -- -m "$G" -e "$P3; export attn 0 1 $TMP/nodir/x.png"
expect "export into a file's place" 1 '' 'cannot write in directory /dev/null' -- -m "$G" -e "$P3; export probs /dev/null/x.png"
if [ "$(id -u)" != 0 ]; then
    expect "export to read-only dir" 1 '' 'ro/x\.png' -- -m "$G" -e "$P3; export attn 0 1 $TMP/ro/x.png"
fi
expect "export bad option" 1 '' "bad option 'colour' for export attn" -- -m "$G" -e "$P3; export attn 0 1 $TMP/x.png colour=red"
expect "export bad value" 1 '' 'cmap must be viridis, magma or gray' -- -m "$G" -e "$P3; export attn 0 1 $TMP/x.png cmap=jet"
if [ -e "$TMP/x.png" ] || ls "$TMP/ro" "$TMP" | grep -q '\.tmp\.'; then bad "failed export left a file"; else ok; fi
expect "dump all" 0 "^wrote $TMP/cap: [0-9]+ arrays \(\.npy\) and index\.json over 3 tokens$" '' -- -m "$G" -e "$P3; dump all $TMP/cap"
if grep -q '"name": "blocks.0.attn.hook_pattern"' "$TMP/cap/index.json" && [ -f "$TMP/cap/blocks.0.attn.hook_pattern.npy" ]; then ok; else bad "dump all index"; fi

expect "--info" 0 'blk\.0\.attn_q\.weight' '' -- --info "$L"
# diff: differences are its answer (exit 0, the batch goes on); a file it cannot open is an error.
expect "diff reports metadata and goes on" 0 '^llama\.rope\.freq_base	10000	500000$' '' -- -m "$L" -e "diff $FIX/tiny-llama3.gguf; info"
if grep -Eq '^[0-9]+ tensors differ, 4 metadata keys differ, [0-9]+ tensors. values not compared$' "$TMP/out" &&
   grep -q '^blk\.0\.ffn_up\.weight	shape \[32, 96\] in A, \[32, 64\] in B: values not compared$' "$TMP/out" &&
   grep -q '^architecture  llama' "$TMP/out"; then ok; else bad "diff summary, shape line or the command after it"; fi
expect "diff of a file it cannot open" 1 '' 'nofile\.gguf' -- -m "$L" -e "diff $TMP/nofile.gguf"
expect "diff against a Hugging Face directory" 0 '^0 tensors differ, [0-9]+ metadata keys? differs?$' '' -- -m "$G" -e "diff $FIX/hf/tiny-gpt2"
# Answers that would mislead (issue 30): each says what is wrong instead.
expect "--info on a file that cannot load exits 1" 1 'MISSING OR WRONG' 't5-ugm\.gguf cannot be loaded as a model' -- --info "$FIX/t5-ugm.gguf"
expect "unknown option named" 2 '' "unknown option '--frob' \(see --help\)" -- --frob
expect "set topp out of range says the range" 1 '' "topp must be a number in \(0, 1\]" -- -m "$G" -e 'set topp 2'
expect "hooks matching nothing says so" 1 '' "no hook matches '\['" -- -m "$G" -e 'hooks ['
expect "a second ablation of a head refused" 1 '' "ablate 1.2 mean: 'ablate 1.2 mean' ablates it already" -- -m "$G" -e "$P3; ablate 1.2 mean; ablate 1.2 mean"
expect "top POS out of range" 1 '' 'the position must be a whole number from 0 to 2' -- -m "$G" -e "$P3; top 5 -1"
expect "top POS on a decoder" 0 '^next token after position 1:$' '' -- -m "$G" -e "$P3; top 5 1"
"$BIN" -m "$G" -e "prompt-ids 276; set temp 0.5; set topk 7; gen 2; export probs-trace $TMP/trace.pdf" > "$TMP/out" 2>&1
if command -v pdftotext >/dev/null; then
    pdftotext "$TMP/trace.pdf" - | tr '\n' ' ' | grep -q 'sampled with temperature 0.5, top-k 7' && ok ||
      bad "probs-trace names the sampling setting"
fi
head -c 1000 "$G" > "$TMP/trunc.gguf"
expect "truncated model" 1 '' 'trunc\.gguf.*offset' -- -m "$TMP/trunc.gguf" -e "top"
printf 'not a model at all' > "$TMP/junk.gguf"
expect "not a gguf" 1 '' 'junk\.gguf' -- -m "$TMP/junk.gguf" -e "top"
expect "missing file" 1 '' 'nofile\.gguf' -- -m "$TMP/nofile.gguf" -e "top"
expect "long prompt refused" 1 '' 'context holds 32' -- -m "$G" -e "prompt $(printf 'word %.0s' $(seq 1 40))"
expect "bad option" 2 '' 'bad option' -- --capture-mb lots

# Encoders (bert, nomic-bert): the masked-LM head, pooled vectors, pairs.
B=$FIX/tiny-bert.gguf
NB=$FIX/tiny-nomic-bert.gguf
expect "fill at each [MASK]" 0 '^predictions at position 2 \(\[MASK\]\):' '' -- -m "$B" -e 'prompt "the [MASK] sat"; finish; fill 3'
expect "fill without a [MASK] says how" 1 '' 'no \[MASK\] in the context.*fill K POS' -- -m "$B" -e 'prompt the cat; finish; fill'
expect "fill before the pass" 1 '' 'not finished.*finish' -- -m "$B" -e 'prompt "the [MASK]"; fill'
expect "top on an encoder: at a position" 0 '^predictions at position 1 ' '' -- -m "$B" -e 'prompt the cat; finish; top 3 1'
expect "gen on an encoder says why not" 1 '' 'encoder.*no next token' -- -m "$B" -e 'prompt the cat; gen 3'
"$BIN" -m "$B" -e "prompt \"the [MASK] sat\"; finish; dump all $TMP/bcap" > "$TMP/out" 2>&1
grep -q '"text": "\[CLS\] the \[MASK\] sat \[SEP\]"' "$TMP/bcap/index.json" && ok ||
  bad "BERT's index.json text keeps [CLS], [MASK], [SEP]: $(grep '"text"' "$TMP/bcap/index.json")"
expect "pair prompt" 0 'a pair: 4 of type 0, 3 of type 1' '' -- -m "$B" -e 'prompt "the cat" "sat on"'
expect "embed prints the pooled vector" 0 '^pooled vector \(mean over 4 tokens\), 32 values' '' -- -m "$B" -e 'prompt the cat; finish; embed'
expect "embed writes .npy" 0 "^wrote $TMP/e\.npy: \[32\] float32" '' -- -m "$NB" -e "prompt-ids 1 2 3; finish; embed $TMP/e.npy"
expect "embed to a missing dir" 1 '' 'cannot write in directory' -- -m "$NB" -e "prompt-ids 1 2 3; finish; embed $TMP/nodir/e.npy"
expect "similarity" 0 '^cosine similarity 0\.[0-9]+ \(pooled vectors: mean' '' -- -m "$B" -e 'similarity "the cat sat" "a mat"'
expect "similarity of a text with itself" 0 '^cosine similarity 1\.0000' '' -- -m "$B" -e 'similarity "the cat" "the cat"'
expect "no masked-LM head" 1 '' 'no masked-LM head' -- -m "$NB" -e 'prompt-ids 1 2 3; finish; fill 2 1'
expect "lens on an encoder: through the masked-LM head" 0 '^logit lens at position 1' '' -- -m "$B" -e 'prompt the cat; finish; lens 1'
expect "dla on an encoder says why not" 1 '' 'does not apply.*Post-LN' -- -m "$B" -e 'prompt the cat; finish; dla 5'
expect "no lens without a masked-LM head" 1 '' 'needs an unembedding' -- -m "$NB" -e 'prompt-ids 1 2; finish; lens'
expect "encoder hooks" 0 '^embed\.hook_token_type_embed	\[4, 32\]' '' -- -m "$B" -e 'prompt the cat; hooks embed.*'
expect "norms embed on an encoder" 0 '^embed\.ln \(LayerNorm\) over 4 tokens' '' -- -m "$B" -e 'prompt the cat; finish; norms embed'
expect "encoder pattern is square" 0 '^blocks\.0\.attn\.hook_pattern	\[4, 4, 4\]' '' -- -m "$B" -e 'prompt the cat; finish; hooks blocks.0.attn.*'

# A vision transformer (vit): an image as input, classes at CLS, rollout,
# positions named CLS and r3c5; bad images get one message and the session
# goes on (batch mode stops at the first failing command, status 1).
V=$FIX/tiny-vit.gguf
VI="image $FIX/tiny-vit/image.png"
expect "image then top: classes at CLS" 0 '^1	7	seven	0\.62' '' -- -m "$V" -e "$VI; finish; top 3"
expect "image says what it read" 0 '28 x 28 grey, 8-bit; 17 positions: CLS, r0c0 \.\. r3c3' '' -- -m "$V" -e "$VI"
expect "an RGB image of another size is made grey and resized" 0 '40 x 30 RGB, 8-bit, made grey, resized \(bilinear\)' '' -- -m "$V" -e "image $FIX/image/rgb-40x30.png"
expect "tokens name CLS and patches" 0 '^6	r1c1	patch' '' -- -m "$V" -e "$VI; tokens"
expect "norms label positions by name" 0 '^16	r3c3	' '' -- -m "$V" -e "$VI; finish; norms 0"
expect "rollout prints the CLS grid" 0 '^r3 +[0-9.]+ +[0-9.]+ +[0-9.]+ +[0-9.]+$' '' -- -m "$V" -e "$VI; finish; rollout"
expect "rollout writes .npy" 0 "^wrote $TMP/r\.npy: \[17, 17\] float32" '' -- -m "$V" -e "$VI; finish; rollout $TMP/r.npy"
expect "rollout as a figure" 0 "^wrote $TMP/r\.png: overlay layer 1 rollout 660x[0-9]+ px" '' -- -m "$V" -e "$VI; finish; rollout $TMP/r.png"
expect "rollout to another kind of file" 1 '' "rollout writes \.npy.*or a figure" -- -m "$V" -e "$VI; finish; rollout $TMP/r.txt"
expect "dump all names the positions" 0 "index.json over 17 tokens" '' -- -m "$V" -e "$VI; finish; dump all $TMP/vcap"
if grep -q '"positions": \["CLS", "r0c0", "r0c1"' "$TMP/vcap/index.json" && ! grep -q '"pieces"' "$TMP/vcap/index.json"; then ok; else bad "vit index.json: positions named, no pieces"; fi
expect "heads says why not on an image" 1 '' 'heads scores token patterns.*export overlay' -- -m "$V" -e "$VI; finish; heads"
expect "compare reads the classes at CLS" 0 '^at position 0 \(CLS\), with 1 rule: KL' '' -- -m "$V" -e "$VI; finish; ablate 1.2 zero; compare"
expect "lens reads CLS" 0 '^logit lens at position 0' '' -- -m "$V" -e "$VI; finish; lens"
expect "a position by name" 0 '^logit lens at position 6' '' -- -m "$V" -e "$VI; finish; lens r1c1"
expect "text to a vision model" 1 '' 'reads an image, not text.*image FILE' -- -m "$V" -e "prompt hello"
expect "ids to a vision model" 1 '' 'reads an image, not token ids' -- -m "$V" -e "prompt-ids 1 2"
expect "top before an image" 1 '' 'no image yet' -- -m "$V" -e "top"
expect "gen on an image model says what it does instead" 1 '' 'classifies an image.*top lists the classes' -- -m "$V" -e "$VI; finish; gen 1"
expect "missing image" 1 '' "cannot open image $TMP/none\.png: No such file" -- -m "$V" -e "image $TMP/none.png"
head -c 100 "$FIX/tiny-vit/image.png" > "$TMP/cut.png"
expect "truncated image" 1 '' "$TMP/cut\.png: truncated or corrupt PNG" -- -m "$V" -e "image $TMP/cut.png"
expect "not an image" 1 '' "$FIX/tiny-vit/meta\.json: not an image" -- -m "$V" -e "image $FIX/tiny-vit/meta.json"
expect "image to a text model" 1 '' 'reads tokens, not images' -- -m "$G" -e "$VI"

# The model as a plain argument, as one opens a file; `load` in a session.
expect "model as a positional argument" 0 '^1	[0-9]+	' '' -- "$G" -e "prompt-ids 276 257; finish; top 1"
expect "two models at once refused" 2 '' 'one model at a time' -- "$G" "$L" -e "top"
expect "load another model" 0 "^loaded $L: .*\(llama, " '' -- -m "$G" -e "load $L; prompt the cat; finish; top 1"
expect "load a bad file: one message" 1 '' "^error: $TMP/junk\.gguf" -- -m "$G" -e "load $TMP/junk.gguf"
# Text output labels tokens as the view does: a space is ·, never the vocabulary's Ġ.
A=$HERE/../../models/austen-gpt2.gguf
if [ -f "$A" ]; then
    expect "top labels as the view" 0 '^1	[0-9]+	·her	' '' -- -m "$A" -e "prompt When Mary and John went to the store, John gave; finish; top 1"
    "$BIN" -m "$A" -e "prompt When Mary and John went to the store, John gave; finish; top 5; tokens; lens table" > "$TMP/out" 2>&1
    if grep -q 'Ġ\|Ċ' "$TMP/out"; then bad "raw vocabulary pieces in text output"; else ok; fi
    grep -q '	·Mary	prompt' "$TMP/out" && ok || bad "tokens: ·Mary"
    grep -q '	<|endof…	' "$TMP/out" && ok || bad "lens table: a cut piece ends in an ellipsis"
    expect "metric reads ·Mary as printed" 0 'logit\[·Mary\] - logit\[·John\]' '' -- -m "$A" -e "metric ·Mary ·John"
else
    echo "e2e: models/austen-gpt2.gguf missing: the label checks are SKIPPED"
fi

# An encoder-decoder (the original Transformer): `source` feeds the encoder,
# the decoder starts from the file's start token, `finish` runs the encoder
# then the decoder, `gen` extends the decoder only; one clear error each for
# gen before a source, a source past the encoder's context, and `source` on
# a decoder-only model.
T=$FIX/tiny-transformer.gguf
expect "source sets the encoder, the decoder starts" 0 '^source: 4 tokens; the decoder starts from </s> \(id 2\)' '' -- -m "$T" -e 'source the cat sat'
expect "finish runs encoder then decoder" 0 '^encoder over source positions 0-3, then pass over positions 0-0 complete: logits ready at position 0$' '' -- -m "$T" -e 'source the cat sat; finish'
expect "gen extends the decoder" 0 '^generated: ' '' -- -m "$T" -e 'source-ids 1 275 286 287; gen 3'
"$BIN" -m "$T" -e 'source-ids 1 275 286 287; prompt-ids 2 275; gen 2; tokens; hooks decoder.0.cross_attn.hook_pattern' > "$TMP/out" 2>&1
grep -q '^3	287	·sat	source$' "$TMP/out" && ok || bad "tokens lists the source"
grep -q '^1	275	·the	prompt$' "$TMP/out" && ok || bad "tokens lists the decoder prefix"
grep -q '^decoder.0.cross_attn.hook_pattern	\[4, 4, 4\]$' "$TMP/out" && ok || bad "cross pattern is [head, n_dec, n_enc]"
"$BIN" -m "$T" -e "source-ids 1 275 286 287; prompt-ids 2 275 279; finish; dump decoder.1.cross_attn.hook_pattern $TMP/cross.npy" > "$TMP/out" 2>&1
grep -q 'cross.npy: decoder.1.cross_attn.hook_pattern \[4, 3, 4\] float32' "$TMP/out" && ok || bad "dump a cross pattern"
"$BIN" -m "$T" -e "source-ids 1 275 286 287; prompt-ids 2 275 279; finish; dump all $TMP/ed" > "$TMP/out" 2>&1
grep -q '"source_tokens": \[1, 275, 286, 287\]' "$TMP/ed/index.json" && grep -q '"tokens": \[2, 275, 279\]' "$TMP/ed/index.json" && ok || bad "dump all: both inputs in index.json"
grep -q '{"name": "decoder.0.cross_attn.hook_k", .*"positions": 4, "shape": \[4, 4, 8\], "stream": "encoder"}' "$TMP/ed/index.json" && ok || bad "dump all: a cross key's positions are the source's"
"$BIN" -m "$T" -e 'source the cat; prompt the mat; tokens' > "$TMP/out" 2>&1
grep -q '^0	2	</s>	prompt$' "$TMP/out" && grep -q '^3	276	at	prompt$' "$TMP/out" && ! grep -q '^4	' "$TMP/out" && ok ||
  bad "prompt TEXT on an encoder-decoder: the start token, the pieces, no BOS or EOS of the tokenizer's"
expect "gen before a source" 1 '' 'no source yet.*source TEXT' -- -m "$T" -e 'gen 3'
expect "source past the encoder context" 1 '' 'encoder input has 40 tokens but .* encoder context holds 32' -- -m "$T" -e "source-ids $(seq -s ' ' 1 40)"
expect "source on a decoder-only model" 1 '' 'tiny-gpt2 \(gpt2\) has no source' -- -m "$G" -e 'source the cat'

# T5 on the same streams: its relative position bias is a hook ([head, n_q,
# n_k] like the scores it is added to), cross-attention exports as the
# original Transformer's does, and the encoder alone has no source.
T5=$FIX/tiny-t5.gguf
expect "t5: finish runs encoder then decoder" 0 '^encoder over source positions 0-3, then pass over positions 0-0 complete: logits ready at position 0$' '' -- -m "$T5" -e 'source the cat sat; finish'
"$BIN" -m "$T5" -e "source-ids 1 275 286 287; prompt-ids 2 275 279; finish; dump decoder.1.attn.hook_position_bias $TMP/pb.npy; dump encoder.0.attn.hook_position_bias $TMP/pbe.npy; export attn 1 2 $TMP/t5cross.png site=cross" > "$TMP/out" 2>&1
grep -q 'pb.npy: decoder.1.attn.hook_position_bias \[4, 3, 3\] float32' "$TMP/out" && ok || bad "t5: the decoder's bias is [head, n_dec, n_dec]"
grep -q 'pbe.npy: encoder.0.attn.hook_position_bias \[4, 4, 4\] float32' "$TMP/out" && ok || bad "t5: the encoder's bias is [head, n_enc, n_enc]"
grep -q "t5cross.png: cross-attention layer 1 head 2" "$TMP/out" && [ -s "$TMP/t5cross.png" ] && ok || bad "t5: export a cross-attention figure"
expect "t5encoder has no source" 1 '' 'tiny-t5encoder \(t5encoder\) has no source' -- -m "$FIX/tiny-t5encoder.gguf" -e 'source the cat'

echo "e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
