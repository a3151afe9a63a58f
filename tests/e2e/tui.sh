#!/bin/sh
# End-to-end tests of the full-screen view and the REPL, driven through
# tmux as a user would drive them: keys in, the screen read back with
# capture-pane (-e for colours). Each step polls for what it expects, with
# a timeout. Needs no terminal of its own: tmux runs detached. AS_BIN is
# the binary; the bundled model is used when present, else the fixture.
set -u
BIN=${AS_BIN:-$(pwd)/build/attnscope}
HERE=$(cd "$(dirname "$0")" && pwd)
MODEL=${AS_TUI_MODEL:-$HERE/../../models/austen-gpt2.gguf}
[ -f "$MODEL" ] || MODEL=$HERE/../fixtures/tiny-gpt2.gguf
. "$HERE/tmux_lib.sh"
tmux_setup attnscope-e2e

ok() { pass=$((pass + 1)); }
bad() {
    fail=$((fail + 1))
    echo "FAIL: $1"
    [ -f "$TMP/screen" ] && sed 's/^/  screen: /' "$TMP/screen" | head -60
}

# start NAME COLS ROWS ENV ARGS: runs attnscope in a new tmux session; its
# exit status and the tty settings before and after land in $TMP/NAME.*
start() {
    name=$1 cols=$2 rows=$3 envs=$4
    shift 4
    # The wrapper survives the Ctrl-C sent to the pane (attnscope catches it).
    cat > "$TMP/$name.sh" <<EOF
trap : INT
export $envs XDG_STATE_HOME="$TMP/state" TERM=$TERMINAL
stty -g > "$TMP/$name.before"
"$BIN" -m "$MODEL" $*
echo \$? > "$TMP/$name.status.tmp"
stty -g > "$TMP/$name.after"
mv "$TMP/$name.status.tmp" "$TMP/$name.status"
exec sleep 600
EOF
    $T new-session -d -s "$name" -c "$TMP" -x "$cols" -y "$rows" "sh $TMP/$name.sh"
}


wait_gone() {
    i=0
    while [ $i -lt 200 ]; do
        screen "$1"
        grep -Eq -- "$2" "$TMP/screen" || return 0
        sleep 0.05
        i=$((i + 1))
    done
    return 1
}

wait_exit() {
    i=0
    while [ $i -lt 200 ] && [ ! -f "$TMP/$1.status" ]; do
        sleep 0.05
        i=$((i + 1))
    done
    [ -f "$TMP/$1.status" ]
}

expect() { # NAME DESCRIPTION PATTERN [SECONDS]
    if wait_for "$1" "$3" "${4:-10}"; then ok; else bad "$2: no /$3/ on screen"; fi
}

# The terminal is as it was: same tty modes, main screen, no mouse or
# keypad mode, visible cursor.
restored() {
    name=$1
    if ! wait_exit "$name"; then bad "$name: did not exit"; return; fi
    [ "$(cat "$TMP/$name.status")" = 0 ] && ok || bad "$name: exit status $(cat "$TMP/$name.status")"
    cmp -s "$TMP/$name.before" "$TMP/$name.after" && ok || bad "$name: tty modes not restored"
    flags=$($T display -p -t "$name" '#{alternate_on} #{mouse_any_flag} #{keypad_flag} #{cursor_flag}')
    [ "$flags" = "0 0 0 1" ] && ok || bad "$name: terminal left in mode '$flags' (alternate mouse keypad cursor)"
}

U="LANG=C.UTF-8 LC_ALL=C.UTF-8"

# ---- the view at projector size: a prompt, three tokens, every pane ----
start tui 160 48 "$U"
expect tui "opens on an empty context" 'No context yet'
expect tui "the command line has the focus" '^attnscope>'
# The hint says "press :": typing it where the line is open already must
# not become part of the command.
typed tui ':prompt the cat sat on the mat'
keys tui Enter
expect tui "prompt echoed in the log" 'context: [0-9]+ tokens'
typed tui 'gen 3'
keys tui Enter
expect tui "gen output" 'generated: '
expect tui "tokens pane: prompt and generated counted" 'Tokens +[0-9]+ prompt \+ 3 generated'
expect tui "tokens pane: the prompt's pieces, spaces visible" 'the·cat·sat·on·the·mat'
expect tui "attention pane title" 'Attention +layer 0 +head 0'
expect tui "probabilities: ranked rows with percentages" '│ +1 .* [0-9]+\.[0-9]+%'
expect tui "probabilities: title names the token" 'Next token after [0-9]+ '
expect tui "norm statistics header" 'pos token +mean +(std|rms) +scale'
expect tui "logit lens: title names the token" 'Logit lens at [0-9]+ '
expect tui "logit lens: the embeddings' row with a top token" '│ emb +[^ ].* +[0-9.]+% '
expect tui "logit lens: the last layer's row, the chosen token's rank" '│ L[0-9]+ +.*#[0-9]+ +[0-9.]+%'
expect tui "residual sparkline" 'resid‖ by layer [▁▂▃▄▅▆▇█]+'
expect tui "status line: context length" 'ctx [0-9]+/[0-9]+'
expect tui "value under the cursor" '[0-9]\.[0-9]{3}  query [0-9]+ .* key [0-9]+ '
screen_e tui
halves=$(grep -o '▀' "$TMP/screen" | wc -l)
[ "$halves" -ge 20 ] && ok || bad "heatmap: only $halves half blocks"
grep -q '48;5;[0-9]*m▀' "$TMP/screen" || grep -q '\[48;5;[0-9]*m' "$TMP/screen" && ok || bad "heatmap: no 256-colour backgrounds"
grep -q '38;5;250' "$TMP/screen" && ok || bad "heatmap: masked cells not in the masked grey"

# Keys: leave the command line, move layer and head, grid, help, a token.
keys tui Escape
expect tui "Esc returns to the panes" 'press : to type a command'
keys tui j
expect tui "j: next layer" 'Attention +layer 1 +head 0'
screen_e tui
grep -q 'L1 ' "$TMP/screen" && grep 'L1 ' "$TMP/screen" | grep -q '\[1m' && ok || bad "lens: the selected layer's row not in bold"
keys tui l
expect tui "l: next head" 'Attention +layer 1 +head 1'
keys tui g
expect tui "g: grid of heads" 'all [0-9]+ heads'
expect tui "grid tiles" 'head 0 .* head 1'
keys tui g
expect tui "g again: one head" 'Attention +layer 1 +head 1'
keys tui e
expect tui "e exports the head shown" 'wrote attn-L1-H1\.png: attention layer 1 head 1'
[ -s "$TMP/attn-L1-H1.png" ] && head -c 8 "$TMP/attn-L1-H1.png" | grep -q PNG && ok || bad "e: no PNG written"
sum=$(cksum < "$TMP/attn-L1-H1.png")
keys tui e
expect tui "e again: a new name, the first file kept" 'wrote attn-L1-H1-2\.png: attention layer 1 head 1'
[ "$(cksum < "$TMP/attn-L1-H1.png")" = "$sum" ] && [ -s "$TMP/attn-L1-H1-2.png" ] && ok || bad "e overwrote its file"
keys tui '?'
expect tui "? shows the keys" 'Press any key to close'
keys tui x
if wait_gone tui 'Press any key to close'; then ok; else bad "help overlay stays"; fi
keys tui Space
expect tui "Space generates one token" 'prompt \+ 4 generated'
n=$(sed -n 's/.*Tokens  *\([0-9]*\) prompt + \([0-9]*\) generated.*/\1 \2/p' "$TMP/screen" | head -1)
last=$(( ${n% *} + ${n#* } - 1 ))
keys tui ,
expect tui ", selects the previous token" "Next token after $((last - 1)) "
expect tui "the token that came next is marked" '◀ generated'
expect tui "greedy decoding is not called sampling" "at $((last - 1)) was generated: p "
expect tui "greedy: the header says so" 'greedy, p at temp 1'
typed tui ':set temp 0.7'
keys tui Enter
expect tui "the header shows the real temperature" 'p at temp 0\.7 '
keys tui Escape

# A click on the first token of the strip selects it (an X10 mouse report).
$T send-keys -t tui -l "$(printf '\033[M #"\033[M##"')"
expect tui "a click selects a token" 'Next token after 0 '
expect tui "the lens follows the selected token" 'Logit lens at 0 '

# Completion (matches listed in the log) and history on the command line.
keys tui :
typed tui 'stats blocks.0.attn.hook_'
keys tui Tab Tab
expect tui "Tab Tab lists the matches in the log" 'blocks\.0\.attn\.hook_attn_scores'
typed tui 'pa'
keys tui Tab
expect tui "Tab completes a hook name" '^attnscope> stats blocks\.0\.attn\.hook_pattern'
keys tui Enter
expect tui "the completed command runs" 'blocks\.0\.attn\.hook_pattern \[.*min .* max'
typed tui 'bogus-command'
keys tui Enter
expect tui "errors are shown in the log" "error: unknown command 'bogus-command'"
keys tui Up
expect tui "Up recalls the last command" '^attnscope> bogus-command'
keys tui C-u
# A byte that is not UTF-8 is kept, as batch mode keeps it, with the rest of the line.
typed tui 'tokenize-raw a'
keys tui -H ff
typed tui 'bc'
keys tui Enter
expect tui "invalid UTF-8 typed: the line kept whole" '› tokenize-raw a\\xFFbc'
expect tui "invalid UTF-8 typed: the byte is a token" '[0-9]+ +\\xFF +│'

# Resizing: small, too small, and back.
$T resize-window -t tui -x 60 -y 20
expect tui "60x20: the heatmap stays" 'Attention +layer'
expect tui "60x20: one more pane below it" '┌ (Next token|Logit lens|LayerNorm|Output)'
$T resize-window -t tui -x 20 -y 5
expect tui "20x5: too small" 'terminal too small'
$T resize-window -t tui -x 160 -y 48
expect tui "back to 160x48: the panes return" 'pos token +mean'
if wait_gone tui 'too small'; then ok; else bad "the notice stays after growing"; fi

# Ctrl-C stops a slow gen between tokens, the view stays, state intact.
typed tui 'set delay 400'
keys tui Enter
expect tui "set delay" 'delay = 400 ms'
typed tui 'gen 20'
keys tui Enter
expect tui "gen 20 running" 'running gen 20'
keys tui C-c
expect tui "Ctrl-C interrupts gen" 'interrupted'
expect tui "and the view keeps running" 'press : to type a command|^attnscope>'
keys tui C-c
expect tui "Ctrl-C at rest says how to leave" 'q, Ctrl-D or quit leaves'

typed tui 'quit'
keys tui Enter
restored tui
screen tui
grep -q 'Attention' "$TMP/screen" && bad "the view's screen is left behind" || ok

# ---- a projector's sizes: 80x24 and 120x35 are first class ----
start small 80 24 "$U"
expect small "80x24: the welcome shows though the Output pane is hidden" 'Type a prompt and Enter'
typed small '?'
expect small "? at the command line shows the keys" 'attnscope keys'
expect small "the key overlay pages at 80x24" 'lines 1-[0-9]+ of [0-9]+: Space/Down for more'
keys small Space
expect small "Space pages on" 'lines 2[0-9]-[0-9]+ of [0-9]+'
keys small Space # the list is three pages at 80x24 since view math's key (8, m)
expect small "Space pages on to the end" 'lines [0-9]+-[0-9]+ of [0-9]+: Up goes back'
expect small "the keys list the panes' keys and commands" 'lesson, lesson NAME'
keys small x
wait_gone small 'attnscope keys' && ok || bad "the key overlay stays"
keys small C-u
typed small 'set delay 0; prompt It is a truth universally acknowledged; finish; top 3'
keys small Enter
expect small "80x24: a command's output shows over the panes" '┌─ Output .*any key closes'
expect small "80x24: top's rows are visible" '│ 3 +[0-9]+ +'
typed small 'bogus-command'
keys small Enter
expect small "80x24: an error is visible" "error: unknown command 'bogus-command'"
typed small 'view lens'
keys small Enter
expect small "view lens shows the lens at 80x24" 'Logit lens at [0-9]+ '
keys small Escape
expect small "Esc to the panes" 'press : to type a command'
keys small 5
expect small "5 shows the norms" 'LayerNorm +blocks'
keys small 3
expect small "3 shows the next token" 'Next token after'
keys small s
expect small "a key's output is echoed on the command line row" 'nothing to run: all [0-9]+ tokens'
keys small 1
keys small :
typed small 'lesson attention'
keys small Enter
expect small "a lesson starts, its step in a box" 'What attention is: one head, the grid'
expect small "its number in the box's bottom border" 'Esc ends ─+ 1/6 '
expect small "the box says how to go on" 'Space next +Backspace back +Esc ends'
keys small Space
expect small "Space: the next step" ' 2/6 '
expect small "the step's command ran" 'query 13 ·that → key 12 ,'
keys small BSpace
expect small "Backspace: one step back" ' 1/6 '
expect small "and its view" 'query [0-9]+ ·fortune'
keys small Escape
wait_gone small ' 1/6 ' && ok || bad "Esc does not end the lesson"
keys small :
typed small 'quit'
keys small Enter
restored small

start mid 120 35 "$U"
expect mid "120x35 starts" '^attnscope>'
typed mid 'set delay 0; prompt It is a truth universally acknowledged, that a single man in possession of a good fortune; finish; view lens'
keys mid Enter
expect mid "120x35: view lens shows the lens" 'Logit lens at 25 '
expect mid "120x35: the value under the cursor is not cut" '│ 0\.[0-9]{3}  query 25 ·fortune'
expect mid "120x35: key columns numbered, not spelt downwards" '│ key +0 +2 +4 +6'
typed mid 'quit'
keys mid Enter
restored mid

# Nothing drawn over a pane's border, down to the minimum size: every row
# above the status line starts and ends with a box side.
for size in 40x12 44x13 50x14 60x16 70x18; do
    start "b$size" "${size%x*}" "${size#*x}" "$U"
    expect "b$size" "$size starts" '^attnscope>'
    typed "b$size" 'set delay 0; prompt It is a truth universally acknowledged, that a single man; finish'
    keys "b$size" Enter
    expect "b$size" "$size: the pass ran" 'logits ready'
    keys "b$size" Escape
    expect "b$size" "$size: back to the panes" 'attnscope> *$|press :|^ *$' 3
    screen "b$size"
    rows=$(( ${size#*x} - 2 ))
    if head -n "$rows" "$TMP/screen" | grep -Ev '^[┌│└].*[┐│┘]$' | grep -q .; then
        bad "$size: something drawn over a border"
        head -n "$rows" "$TMP/screen" | grep -Ev '^[┌│└].*[┐│┘]$' | sed 's/^/  line: /'
    else
        ok
    fi
    $T kill-session -t "b$size"
done

# ---- q leaves from the panes; Ctrl-D from an empty command line ----
start q 100 30 "$U"
expect q "starts" 'No context yet'
keys q Escape q
restored q
start d 100 30 "$U"
expect d "starts" '^attnscope>'
keys d C-d
restored d

# ---- without colour: shading characters; masked distinct ----
start mono 100 30 "$U NO_COLOR=1"
expect mono "starts" '^attnscope>'
typed mono 'prompt the cat sat; finish'
keys mono Enter
expect mono "pass runs" 'logits ready'
screen_e mono
grep -q '38;5;\|48;5;' "$TMP/screen" && bad "NO_COLOR: colours on screen" || ok
screen mono
grep -q '[░▒▓█]' "$TMP/screen" && ok || bad "NO_COLOR: no shading characters"
grep -Eq '│ *0 [^│]*[░▒▓█ ]·' "$TMP/screen" && ok || bad "NO_COLOR: masked cells not shown"
keys mono Escape q
restored mono

# ---- outside UTF-8: nothing but ASCII on screen ----
start ascii 100 30 "LANG=C LC_ALL=C"
expect ascii "starts" 'No context yet'
typed ascii 'prompt the cat sat; finish'
keys ascii Enter
expect ascii "pass runs" 'logits ready'
screen ascii
if LC_ALL=C grep -q "$(printf '[\200-\377]')" "$TMP/screen"; then bad "C locale: non-ASCII on screen"; else ok; fi
expect ascii "C locale: spaces as _" 'the_cat_sat'
keys ascii Escape q
restored ascii

# ---- the plain REPL: completion, Ctrl-C, history ----
start repl 100 30 "$U" --no-tui
expect repl "REPL prompt" '^attnscope>'
typed repl 'set te'
keys repl Tab
expect repl "Tab completes a setting" '^attnscope> set temp *$'
keys repl C-c
expect repl "Ctrl-C drops the line" '\^C$'
typed repl 'prompt-ids 1 2 3; finish; stats blocks.0.ln1.hook_sc'
keys repl Tab
keys repl Enter
expect repl "completed hook name runs" 'blocks\.0\.ln1\.hook_scale \[3, 1\]: min'
typed repl 'load no-such-model.gguf'
keys repl Enter
expect repl "REPL: a bad load is one message" "error: no-such-model\.gguf: "
typed repl 'load induction'
keys repl Enter
expect repl "REPL: load a bundled model by name" 'loaded .*induction\.gguf: induction \(llama, 2 layers'
typed repl 'prompt "Yes," said he.; tokens'
keys repl Enter
expect repl "REPL: dialogue keeps its quotes" '^1 +[0-9]+ +" +prompt'
typed repl 'lesson heads'
keys repl Enter
expect repl "REPL: a lesson pauses after its first step" '^-- step 1 of 6: Enter goes on'
keys repl Enter
expect repl "REPL: Enter goes on" '^== Previous-token heads and induction heads \(2/6\) =='
typed repl 'b'
keys repl Enter
expect repl "REPL: b goes back" '^-- step 1 of 6: Enter goes on, b Enter back, q Enter ends -- *$'
typed repl 'q'
keys repl Enter
typed repl 'help set'
keys repl Enter
expect repl "help explains the view's settings too" 'set delay MS'
# A key typed while a command runs meets a cooked terminal: wait for the prompt.
i=0
while [ $i -lt 200 ]; do
    screen repl
    [ "$(grep -v '^$' "$TMP/screen" | tail -1)" = "attnscope>" ] && break
    sleep 0.05
    i=$((i + 1))
done
keys repl C-d
restored repl
grep -q 'prompt-ids 1 2 3' "$TMP/state/attnscope/history" 2>/dev/null && ok || bad "history not written"

# ---- an encoder: square heatmaps, the predictions at the selected token ----
SAVED_MODEL=$MODEL
MODEL=$HERE/../fixtures/tiny-bert.gguf
start bert 100 30 "$U NO_COLOR=1"
expect bert "starts" '^attnscope>'
typed bert 'prompt "the [MASK] sat"; finish'
keys bert Enter
expect bert "pass runs" 'predictions ready'
keys bert Escape
expect bert "the view starts at the [MASK]" 'Predictions at 2 \[MASK\]'
screen bert
grep -Eq '│ *0 [^│]*[░▒▓█ ]·' "$TMP/screen" && bad "encoder: masked cells in the heatmap" || ok
grep -q ' masked' "$TMP/screen" && bad "encoder: the legend offers a masked colour" || ok
expect bert "the token there is marked" '◀ here|< here' 2
keys bert L L L L
expect bert "keys after the query can be selected" 'query 2 \[MASK\] → key 4 \[SEP\]|query 2 \[MASK\] -> key 4 \[SEP\]'
keys bert S-Down S-Down
expect bert "Shift-Down selects a later token" 'Predictions at 4 \[SEP\]'
expect bert "the status says what is ready and offers no Space" 'pass done, predictions ready'
screen bert
grep -q 'Space gen' "$TMP/screen" && bad "encoder: the status offers Space gen" || ok
keys bert Space
expect bert "Space says why an encoder does not generate" 'no next token' 5
keys bert Escape q
restored bert
MODEL=$SAVED_MODEL

# ---- an encoder-decoder: both sentences in the strip, x switches to the
# cross-attention (rows the target's tokens, columns the source's) ----
SAVED_MODEL=$MODEL
MODEL=$HERE/../fixtures/tiny-transformer.gguf
start encdec 120 36 "$U NO_COLOR=1"
expect encdec "starts" '^attnscope>'
typed encdec 'source the cat sat on a mat; prompt-ids 2 275 279; finish'
keys encdec Enter
expect encdec "the encoder then the decoder" 'encoder over source positions 0-7'
keys encdec Escape
expect encdec "the strip: the source, an arrow, the target" '<s> +·the +·cat +·sat +·on +·a +·m +at +→ +</s> +·the +·m'
expect encdec "the strip's title counts both" 'Tokens +source 8, target 3 prompt'
expect encdec "self-attention first" 'Attention +layer 0 +head 0'
keys encdec x
expect encdec "x: cross-attention" 'Cross-attention +layer 0 +head 0'
expect encdec "columns are the source's tokens" 'key +<s> +·the +·cat +·sat +·on'
expect encdec "rows are the target's" '│ 2 ·m '
keys encdec L L L L L
expect encdec "the cursor reaches any source position" 'query 2 ·m → key 5 ·a|query 2 ·m -> key 5 ·a'
screen encdec
grep -q ' masked' "$TMP/screen" && bad "cross-attention: the legend offers a masked colour" || ok
keys encdec j j
expect encdec "the decoder's third block" 'Cross-attention +layer 2'
keys encdec N N
expect encdec "the decoder's norms, ln3 among them" 'LayerNorm +decoder\.2\.ln'
keys encdec k x
expect encdec "x again: the encoder's self-attention" 'Encoder attention +layer 1 +head 0'
keys encdec J J J
expect encdec "its rows are source positions" 'query 3 ·sat → key [0-9] |query 3 ·sat -> key [0-9] '
keys encdec :
typed encdec 'view site self'
keys encdec Enter
expect encdec "view site self" 'Attention +layer 1 +head 0'
expect encdec "the decoder's selection kept" 'Next token after 2 ·m'
keys encdec Escape q
restored encdec
MODEL=$SAVED_MODEL

# ---- a vision transformer: the image pane, classes at CLS, patches named ----
MODEL=$HERE/../fixtures/tiny-vit.gguf
start vit 120 35 "$U"
expect vit "starts" '^attnscope>'
expect vit "an image model asks for an image" 'No image yet'
typed vit "image $HERE/../fixtures/tiny-vit/image.png; finish"
keys vit Enter
expect vit "pass runs" 'logits ready at CLS'
keys vit Escape
expect vit "the view starts at CLS, the image pane shows its attention" 'Image  L0 H0  CLS'
expect vit "the probabilities pane lists the classes at CLS" 'Classes at CLS'
expect vit "blend by default, with the largest weight" 'blend \(i\)  max 0\.[0-9]+'
expect vit "the status says the classes are ready" 'pass done, classes ready'
screen vit
grep -q '◀ here' "$TMP/screen" && bad "vit: a class marked as the token here" || ok
keys vit J J J J J J
expect vit "the heatmap's query selects the patch" 'Image  L0 H0  r1c1'
keys vit i
expect vit "i shows the image alone" 'image \(i\)  max'
keys vit i
expect vit "then the heat" 'heat \(i\)  max'
keys vit g
expect vit "g: every head's map as a small image" 'every head, each on its own scale'
screen vit
grep -Eq '│h2 +h3 ' "$TMP/screen" && ok || bad "vit: the grid names heads 2 and 3"
keys vit Enter
expect vit "Enter: one head again" 'heat \(i\)  max'
keys vit Escape q
restored vit
MODEL=$SAVED_MODEL

# ---- routed MLPs: the routing pane beside the heatmap at three sizes ----
MODEL=$HERE/../fixtures/tiny-mixtral.gguf
for size in "80 24" "120 35" "160 48"; do
    set -- $size
    n=moe$1
    start $n $1 $2 "$U"
    expect $n "starts" '^attnscope>'
    typed $n "prompt-ids 1 5 9 30 41 77 120 200; finish"
    keys $n Enter
    expect $n "pass runs" 'logits ready'
    keys $n Escape
    expect $n "$1x$2: the routing pane, its experts numbered" 'Routing .*top 2 of 4'
    expect $n "$1x$2: the header names the experts" '│token +0 +1 +2 +3'
    expect $n "$1x$2: the load row under the tokens" '│load % +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+'
    screen $n
    # every token row marks exactly the k = 2 experts chosen
    rows=$(grep -Ec '│[0-9]+ [^│]*● +●' "$TMP/screen")
    [ "$rows" -ge 4 ] && ok || bad "$n: token rows with two experts marked: $rows"
    grep -E '│[0-9]+ [^│]*●[^│]*●[^│]*●' "$TMP/screen" | grep -q . && bad "$n: a row with three marks" || ok
    # the loads of a layer sum to k = 2 (200%, each rounded)
    sum=$(grep -Eo '│load % +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+' "$TMP/screen" | head -1 |
          awk '{print $3 + $4 + $5 + $6}')
    [ "$sum" -ge 198 ] && [ "$sum" -le 202 ] && ok || bad "$n: loads sum to $sum%, not 200%"
    # the pane's loads are the batch command's (`experts 0`: times chosen of 8 tokens)
    want=$("$BIN" -m "$MODEL" -e "prompt-ids 1 5 9 30 41 77 120 200; finish; experts 0" 2>/dev/null |
           awk '/^ +[0-9]+ +[0-9.]+% +[0-9]+ / { printf "%s%d", sep, int(100 * $3 / 8 + 0.5); sep = " " }')
    got=$(grep -Eo '│load % +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+' "$TMP/screen" | head -1 | awk '{print $3, $4, $5, $6}')
    [ -n "$want" ] && [ "$got" = "$want" ] && ok || bad "$n: the pane's loads '$got', the experts command's '$want'"
    keys $n 7
    keys $n Right Right
    expect $n "$1x$2: 7 focuses it, Right selects expert 1" 'expert 1: [0-9]+'
    # the strip underlines the tokens that chose expert 1 (red, bold, underlined)
    screen_e $n
    sed -n 2p "$TMP/screen" | grep -q '\[1;4m' && ok || bad "$n: no token of expert 1 marked in the strip"
    # a click on expert 3's number in the header selects it (an X10 mouse report, 1-based cells)
    screen $n
    # (box lines made one byte each, so awk's byte columns are the screen's)
    at=$(sed 's/│/|/g' "$TMP/screen" | awk '/\|token +0 +1 +2 +3/ { t = index($0, "token");
              for (i = t; i <= length($0); i++) if (substr($0, i, 1) == "3") { print NR " " i; exit } }')
    if [ -n "$at" ]; then
        $T send-keys -t $n -l "$(printf '\033[M %b%b\033[M#%b%b' "$(printf '\\%03o' $((32 + ${at#* })))" \
            "$(printf '\\%03o' $((32 + ${at% *})))" "$(printf '\\%03o' $((32 + ${at#* })))" \
            "$(printf '\\%03o' $((32 + ${at% *})))")"
        expect $n "$1x$2: a click on expert 3's column selects it" 'expert 3: [0-9]+'
    else
        bad "$n: no routing header to click"
    fi
    keys $n j
    expect $n "$1x$2: the pane follows the layer" 'Routing[^│]*(L1|layer 1)'
    keys $n Escape q
    restored $n
done
MODEL=$SAVED_MODEL

# ---- the panes never show values computed under interventions since changed ----
# The same interventions added after the pass ("after") or before it
# ("fresh"): the logit lens, the probabilities and the norms show the same.
for v in after fresh; do
    n=rules$v
    start $n 160 48 "$U"
    expect $n "$v: opens" '^attnscope>'
    if [ $v = after ]; then
        typed $n 'prompt the cat sat on the mat; finish; ablate mlp 2; ablate 1.1 zero'
    else
        typed $n 'prompt the cat sat on the mat; ablate mlp 2; ablate 1.1 zero; finish'
    fi
    keys $n Enter
    expect $n "$v: the interventions are in effect" 'ablate 1\.1 zero: in effect'
    expect $n "$v: the lens is drawn" '│ L[0-9]+ +.*#[0-9]+ +[0-9.]+%'
    screen $n
    grep -Eo '│ (emb|L[0-9]+) +[^│]*|│ +[0-9]+ [^│]*[0-9]+\.[0-9]+%[^│]*' "$TMP/screen" > "$TMP/$n.panes"
    keys $n Escape q
    restored $n
done
[ -s "$TMP/rulesafter.panes" ] && cmp -s "$TMP/rulesafter.panes" "$TMP/rulesfresh.panes" && ok ||
    bad "the panes after adding interventions differ from a session that had them from the start: $(diff "$TMP/rulesafter.panes" "$TMP/rulesfresh.panes" | head -4)"

echo "tui e2e: $pass passed, $fail failed"
[ "$fail" = 0 ]
