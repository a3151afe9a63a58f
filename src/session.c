/* The session core: a session's life (made from a model, `load` swapping
 * one in whole, freed), the table of commands (name, usage, help, example
 * and the function in its command file: cmd_context.c, cmd_run.c,
 * cmd_inspect.c and the instruments' cmd_*.c), `help`, and running one
 * command line (as_session_exec). */
#include "attnscope/session.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/file.h"
#include "attnscope/hf.h"
#include "session_internal.h"

/* ---- construction ---- */

int as_session_from_model(as_session **out, as_model *m, size_t capture_mb, FILE *out_stream,
                          FILE *warn_stream, as_error *err)
{
    *out = NULL;
    as_session *s = calloc(1, sizeof *s);
    if (!s)
        return as_error_set(err, "out of memory");
    s->model = m;
    s->capture_mb = capture_mb;
    s->metric_pos = -1;
    s->out = out_stream;
    s->warn = warn_stream;
    as_sampler_init(&s->sampler);
    s->probs = malloc((size_t)m->cfg.n_vocab * sizeof *s->probs);
    s->order = malloc((size_t)m->cfg.n_vocab * sizeof *s->order);
    if (!s->probs || !s->order) {
        as_error_set(err, "out of memory");
        goto fail;
    }
    if (as_program_build(&s->prog, m, err) || as_capture_new(&s->cap, s->prog, capture_mb << 20, err) ||
        as_interp_new(&s->it, s->prog, s->cap, err))
        goto fail;
    *out = s;
    return AS_OK;
fail:
    s->model = NULL; /* the caller keeps the model on failure */
    as_session_free(s);
    return AS_ERR;
}

int as_session_new(as_session **out, const char *model_path, size_t capture_mb, FILE *out_stream,
                   FILE *warn_stream, as_error *err)
{
    as_model *m;
    *out = NULL;
    if (as_model_load(&m, model_path, err))
        return AS_ERR;
    if (as_session_from_model(out, m, capture_mb, out_stream, warn_stream, err)) {
        as_model_free(m);
        return AS_ERR;
    }
    return AS_OK;
}

void as_session_free(as_session *s)
{
    if (!s)
        return;
    as_interp_free(s->it);
    as_capture_free(s->cap);
    as_program_free(s->prog);
    as_model_free(s->model);
    free(s->probs);
    free(s->saliency);
    free(s->gpage.norm);
    free(s->gpage.dot);
    free(s->order);
    free(s);
}

/* Commands whose argument is text taken as typed: their line need not
 * split into words (an unmatched quote in dialogue is text). */
static bool takes_text(const char *line, size_t len)
{
    static const char *const names[] = {"prompt", "prompt-raw", "tokenize", "tokenize-raw", "source"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && !strncmp(line, names[i], len))
            return true;
    return false;
}

static int cmd_help(cmd_ctx *c);

int as_session_optional_hooks(as_session *s, int attn_result, int in_hooks, as_error *err)
{
    unsigned opts = (attn_result ? AS_PROG_ATTN_RESULT : 0) | (in_hooks ? AS_PROG_IN_HOOKS : 0);
    return opts == s->prog_opts ? AS_OK : as_cmd_rebuild(s, opts, err);
}


int as_session_load(as_session *s, const char *path, as_error *err)
{
    as_session *fresh;
    as_model *m;
    as_file_set_interrupt(s->interrupt); /* Ctrl-C stops a long read */
    int rc = as_model_load_with(&m, path, NULL, err);
    as_file_set_interrupt(NULL);
    if (rc)
        return AS_ERR;
    if (as_session_from_model(&fresh, m, s->capture_mb, s->out, s->warn, err)) {
        as_model_free(m);
        return AS_ERR;
    }
    if (s->ctx > 0 && as_interp_set_ctx(fresh->it, s->ctx, err)) {
        as_session_free(fresh);
        return AS_ERR;
    }
    if (s->prog_opts && as_cmd_rebuild(fresh, s->prog_opts, err)) {
        as_session_free(fresh);
        return AS_ERR;
    }
    as_session old = *s;
    s->model = fresh->model, s->prog = fresh->prog, s->cap = fresh->cap, s->it = fresh->it;
    s->probs = fresh->probs, s->order = fresh->order;
    s->has_metric = false;
    s->metric_pos = -1;
    s->image[0] = 0;
    s->gpage.valid = false; /* its hook and state were the old model's */
    s->it->interrupt = old.it->interrupt;
    fresh->model = old.model, fresh->prog = old.prog, fresh->cap = old.cap, fresh->it = old.it;
    fresh->probs = old.probs, fresh->order = old.order;
    /* the capture file goes on for the new model (the old one's removed with its capture first) */
    char *file = as_session_capture_file(&old);
    as_session_free(fresh);
    as_session_carry_capture_file(s, file);
    const as_config *cfg = &s->model->cfg;
    fprintf(s->out, "loaded %s: %s (%s, %d layers, %d heads, context %d); no context yet\n", path, cfg->name,
            as_model_arch_name(s->model), cfg->n_layer, cfg->n_head, cfg->n_ctx);
    if (s->model->warnings[0] && s->warn)
        fprintf(s->warn, "warning: %s: %s\n", path, s->model->warnings);
    return AS_OK;
}

int as_session_open_run(as_session **out, const char *path, FILE *out_stream, FILE *warn_stream, as_error *err)
{
    as_run_reader *rr;
    as_model *m;
    size_t mb;
    *out = NULL;
    if (as_run_begin(&rr, path, &m, &mb, err))
        return AS_ERR;
    as_session *s;
    if (as_session_from_model(&s, m, mb, out_stream, warn_stream, err)) {
        as_model_free(m);
        as_run_reader_free(rr);
        return AS_ERR;
    }
    int rc = as_run_finish(rr, s, err);
    as_run_reader_free(rr);
    if (rc) {
        as_session_free(s);
        return AS_ERR;
    }
    *out = s;
    return AS_OK;
}

int as_session_set_capture_file(as_session *s, const char *path, as_error *err)
{
    return as_capture_set_file(s->cap, path, err);
}

int as_session_set_save_dtype(as_session *s, const char *dtype, as_error *err)
{
    int dt = as_run_dtype_parse(dtype);
    if (dt < 0)
        return as_error_set(err, "--capture-dtype %s: f32, f16 or bf16", dtype);
    s->save_dtype = dt;
    return AS_OK;
}

static int cmd_convert(cmd_ctx *c)
{
    if (c->argc != 3)
        return as_error_set(c->err, "usage: convert DIR OUT.gguf");
    if (!as_hf_is_dir(c->argv[1]))
        return as_error_set(c->err, "%s: not a directory (convert reads a Hugging Face model directory)", c->argv[1]);
    char note[640];
    if (as_hf_to_gguf(c->argv[1], c->argv[2], note, sizeof note, c->err))
        return AS_ERR;
    fprintf(c->s->out, "wrote %s\n", c->argv[2]);
    if (note[0])
        fprintf(c->s->out, "note: %s\n", note);
    return AS_OK;
}

static int cmd_load(cmd_ctx *c)
{
    if (c->argc != 2)
        return as_error_set(c->err, "usage: load MODEL.gguf (or a llama2.c .bin with tokenizer.bin beside it)");
    return as_session_load(c->s, c->argv[1], c->err);
}

static int cmd_quit(cmd_ctx *c)
{
    c->s->quit = true;
    return AS_OK;
}

static const command commands[] = {
    {{"prompt", "prompt TEXT | prompt \"A\" \"B\"", "Tokenize TEXT and make it the context (no compute yet); <|im_start|>, <s>... are special tokens. Two quoted texts: a sentence pair [CLS] A [SEP] B [SEP], types 0 then 1.",
      "prompt \"It is a truth universally acknowledged\""}, as_cmd_prompt, .keeps_state = true},
    {{"prompt-ids", "prompt-ids ID [ID ...]", "Set the context from token ids.", "prompt-ids 0 464 1310"},
     as_cmd_prompt_ids, .keeps_state = true},
    {{"source", "source TEXT", "An encoder-decoder's source sentence: the encoder's input (prompt then sets the "
      "decoder's prefix, by default its start token).", "source \"Das Haus ist klein.\""}, as_cmd_source, .keeps_state = true},
    {{"source-ids", "source-ids ID [ID ...]", "Set an encoder-decoder's source from token ids.", "source-ids 5 9 12"},
     as_cmd_source_ids, .keeps_state = true},
    {{"tokenize", "tokenize TEXT", "Show how TEXT splits into tokens: id<TAB>piece lines.",
      "tokenize \"Mr. Darcy's\""}, as_cmd_tokenize, .keeps_state = true},
    {{"prompt-raw", "prompt-raw TEXT", "Like prompt, but special tokens' texts (<|im_start|>, <s>) stay plain text.",
      "prompt-raw \"a literal <|im_start|>\""}, as_cmd_prompt_raw, .keeps_state = true},
    {{"tokenize-raw", "tokenize-raw TEXT", "Like tokenize, but special tokens' texts stay plain text.",
      "tokenize-raw \"<s>\""}, as_cmd_tokenize_raw, .keeps_state = true},
    {{"token-types", "token-types T [T ...]", "Set each token's type (BERT's segments: 0, then 1), one per token.",
      "token-types 0 0 0 1 1"}, as_cmd_token_types, .keeps_state = true},
    {{"image", "image FILE", "Make an image (PNG, JPEG, PGM, PPM; a JPEG turned as its EXIF orientation says) the "
      "input of a vision model, resized and normalised as the model file says (a Hugging Face directory's "
      "preprocessor_config.json as transformers' PIL image processors do).", "image assets/fashion/sneaker.png"},
     as_cmd_image, .keeps_state = true},
    {{"tokens", "tokens", "List the context: position, id, piece, prompt or generated (an image: CLS and its "
      "patches r0c0, r0c1, ...).", "tokens"},
     as_cmd_tokens, .keeps_state = true, .args = ARGS(0)},
    {{"step", "step [N]", "Run the next op (or N ops), stopping at breakpoints.", "step 5"}, as_cmd_step, .keeps_state = true, .args = ARGS(1)},
    {{"next", "next", "Run to the end of the current block.", "next"}, as_cmd_next, .keeps_state = true, .args = ARGS(0)},
    {{"finish", "finish", "Run the pass to the logits (ignores breakpoints).", "finish"}, as_cmd_finish, .keeps_state = true, .args = ARGS(0)},
    {{"continue", "continue", "Run until a breakpoint's hook is filled or the pass ends.", "continue"},
     as_cmd_continue, .keeps_state = true, .args = ARGS(0)},
    {{"back", "back [N]", "Go back one op (or N), restoring the captured state.", "back 3"}, as_cmd_back, .args = ARGS(1)},
    {{"break", "break HOOK", "Stop after HOOK is filled; '*' matches anything.",
      "break blocks.*.attn.hook_pattern"}, as_cmd_break_on, .keeps_state = true},
    {{"unbreak", "unbreak HOOK", "Remove breakpoints matching HOOK.", "unbreak blocks.*"}, as_cmd_unbreak, .keeps_state = true},
    {{"where", "where", "Show the op the interpreter stands at.", "where"}, as_cmd_where, .keeps_state = true, .args = ARGS(0)},
    {{"gen", "gen [N]", "Generate N tokens (one pass per token, using the KV cache).", "gen 20"}, as_cmd_gen, .args = ARGS(1)},
    {{"set", "set [temp X | topk K | topp P | seed S | threads N | ctx N | activations native|f32 | "
      "attn-result on|off | in-hooks on|off | capture-file PATH|off | patterns stored|on-demand|auto]",
      "Sampler and engine settings (temp 0 is greedy; ctx caps the context you work in, 0 for the "
      "model's window; activations: quantized weights' arithmetic, native (llama.cpp's 8-bit, the default) or f32; "
      "attn-result: the hooks blocks.L.attn.hook_result, each head's output through its slice of W_O "
      "[head, d_model]; in-hooks: blocks.L.hook_attn_in and hook_mlp_in, the residual stream entering "
      "ln1 and ln2; either rebuilds the program and runs the context again; "
      "capture-file: the captured hooks in a memory-mapped file made new at PATH, removed at exit, or off: "
      "RAM; patterns: attention rows stored in full, or computed from the captured q and k when read (the same "
      "bits, memory linear in the context), or auto: stored while they fit the capture budget); "
      "`set` alone lists them.", "set temp 0.8"}, as_cmd_set, .keeps_state = true},
    {{"top", "top [K] [POS]", "The next-token distribution after POS (the last position by default): rank, id, piece, probability, logit (an encoder: "
      "its predictions at POS, the last by default; a classifier: its classes at CLS).", "top 5"},
     as_cmd_top, .args = ARGS(2)},
    {{"rollout", "rollout [FILE.npy|FILE.png|FILE.svg|FILE.pdf]", "Attention rollout (Abnar & Zuidema): per layer 0.5 * "
      "mean-over-heads pattern + 0.5 * I, rows renormalised, multiplied through the layers; printed for CLS over the "
      "patch grid, the matrix as .npy, or laid over the image as a figure.",
      "rollout rollout.npy"}, as_cmd_rollout, .keeps_state = false},
    {{"fill", "fill [K] [POS]", "An encoder's masked-LM predictions at each [MASK] (or at POS): rank, id, piece, "
      "probability, logit.", "fill 5"}, as_cmd_fill, .keeps_state = false},
    {{"embed", "embed [FILE.npy]", "The pooled vector of an embedding model (pooling as the file says).",
      "embed vec.npy"}, as_cmd_embed, .keeps_state = false},
    {{"similarity", "similarity \"A\" \"B\"", "Cosine of the pooled vectors of two texts (each its own run).",
      "similarity \"a cat\" \"a dog\""}, as_cmd_similarity, .keeps_state = false},
    {{"hooks", "hooks [PATTERN]", "Every hook point with its shape.", "hooks blocks.0.*"}, as_cmd_hooks, .keeps_state = true},
    {{"stats", "stats HOOK", "Min, max, mean, std and NaN/Inf counts of a captured hook.",
      "stats blocks.2.hook_resid_post"}, as_cmd_stats, .keeps_state = false},
    {{"norms", "norms LAYER|final|embed", "Per-token statistics of a layer's norms (mean, std or RMS, scale, "
      "min, max, largest dimensions); final: the norm after the blocks; embed: an encoder's embedding norm.",
      "norms 1"}, as_cmd_norms, .keeps_state = false},
    {{"dump", "dump HOOK FILE.npy | dump all DIR", "Write a captured hook as a NumPy array (float32, or int32 "
      "for expert indices; C order) to FILE, whose name must end in .npy; `dump all`: every hook into DIR, plus "
      "index.json. A file is replaced whole or not at all, never a device, a FIFO or the loaded model's file.",
      "dump blocks.0.attn.hook_pattern pattern.npy"}, as_cmd_dump, .keeps_state = false},
    {{"export", "export attn L H | grid L|all | lines L H|all | norms L|final | probs | probs-trace | "
      "overlay L H|mean|rollout|all | routing L | load | experts L | lens | distance  FILE.png|FILE.svg|FILE.pdf [key=value]",
      "Write a figure, one column (3.3 in) wide by default (distance: each head's mean attention distance on the "
      "computed context, layers x heads and each layer's mean; SVG/PDF attention grids with more tokens than pixels "
      "show blocks, cells=max|mean). Options: width=7in height=8cm font=PT dpi=N "
      "cmap=viridis|magma|gray scale=linear|log hide-bos=yes tokens=FROM:TO title=\"...\" top=K.",
      "export attn 0 1 head.pdf width=3.3in"}, as_cmd_export, .keeps_state = false},
    {{"lens", "lens [POS] [FILE.npy] | lens table [FILE.npy]", "Logit lens: the final norm and unembedding applied after every layer.",
      "lens table"}, as_cmd_lens, .keeps_state = false},
    {{"ablate", "ablate L.H zero|mean | ablate L.H mean over FILE | ablate mlp L | ablate expert L.E",
      "Zero or mean-ablate a head's output (hook_z) or an MLP; zero a routed expert's output (the routing kept). "
      "`mean` is the head's mean over the context's positions; `mean over FILE` over every position of every "
      "prompt in FILE (one a line, blank lines skipped, each run clean on its own, the positions pooled).",
      "ablate 1.3 mean over prompts.txt"}, as_cmd_ablate, .keeps_state = true},
    {{"route", "route L.E off", "The router of layer L may not choose expert E (the next best is taken); "
      "`unablate` removes it.", "route 1.3 off"}, as_cmd_route, .keeps_state = true},
    {{"steer", "steer HOOK FILE.npy [scale=S] [pos=P]",
      "Add a vector (a .npy of the hook's width per position, float32 or float64) times S to HOOK as it is filled, "
      "at every position or at P: a steering intervention, listed by `ablations` and removed by `unablate`.",
      "steer blocks.1.hook_resid_post dir.npy scale=4"}, as_cmd_steer, .keeps_state = true},
    {{"experts", "experts [LAYER]", "A routed MLP's experts over the context: each one's load (the share of tokens "
      "whose router chose it), times chosen, mean gate, and the tokens it took most often.", "experts 1"},
     as_cmd_experts, .keeps_state = false},
    {{"unablate", "unablate", "Remove every ablation and patch.", "unablate"}, as_cmd_unablate, .keeps_state = true, .args = ARGS(0)},
    {{"ablations", "ablations", "List ablations and patches.", "ablations"}, as_cmd_ablations, .keeps_state = true, .args = ARGS(0)},
    {{"compare", "compare [TOKEN_A TOKEN_B]", "Rerun with and without ablations/patches: KL, top tokens, logit "
      "difference.", "compare"}, as_cmd_compare, .keeps_state = true, .args = ARGS(2)},
    {{"metric", "metric TOKEN_A TOKEN_B | metric logprob|prob|logit TOKEN [POS]", "What compare, patch sweep, grad "
      "and saliency measure: a logit difference, or a token's log-probability, probability or logit (at POS; "
      "default the last). A token whose text is a keyword is quoted: metric \"prob\" X.",
      "metric logprob \" Paris\""}, as_cmd_metric, .keeps_state = true, .args = ARGS(3)},
    {{"grad", "grad HOOK [FILE.npy]", "d metric / d HOOK at every position by the backward pass: the norm and largest "
      "entries per position, or the whole array in the hook's shape.",
      "grad blocks.0.hook_resid_pre"}, as_cmd_grad, .keeps_state = false, .args = ARGS(2)},
    {{"saliency", "saliency [ig=STEPS] [FILE.npy]", "Gradient x input of the metric on the token embeddings, per "
      "token; ig=STEPS: integrated gradients from a zero baseline (the sum then equals metric - metric(baseline)).",
      "saliency ig=32"}, as_cmd_saliency, .keeps_state = false, .args = ARGS(2)},
    {{"patch", "patch HOOK|L.H from \"OTHER\" [pos=N] | patch sweep KIND from \"OTHER\" [FILE.npy|FILE.png|FILE.svg|FILE.pdf]",
      "Activation patching from another prompt of the same length (L.H: head H's slice of layer L's hook_z, "
      "e.g. patch 1.3 from \"The cat sat\" pos=2); sweep over layers x positions (or heads), "
      "as an array or a heatmap figure.",
      "patch sweep resid_pre from \"The cat sat\""}, as_cmd_patch, .keeps_state = true},
    {{"attribute", "attribute heads|resid|mlp|attn from \"OTHER\" [FILE.npy|FILE.png|FILE.svg|FILE.pdf]",
      "Attribution patching: patch sweep's table estimated from one run of each prompt and one backward pass, "
      "each cell (other - clean activation) . d metric / d activation (heads through hook_z's slices, resid at "
      "hook_resid_pre, attn at hook_attn_out, mlp at hook_mlp_out).",
      "attribute heads from \"The cat sat\" attr.png"}, as_cmd_attribute, .keeps_state = false},
    {{"dla", "dla TOKEN [POS] [FILE.npy|FILE.png|FILE.svg|FILE.pdf]", "Direct logit attribution: each head's and MLP's share of a token's logit.",
      "dla \" the\""}, as_cmd_dla, .keeps_state = false},
    {{"heads", "heads [context] [threshold=X] [FILE.npy|FILE.png|FILE.svg|FILE.pdf]", "Score every head: previous-token, first-token, duplicate, induction (and next-token on an encoder); with "
      "`context`, on the current context, then also its long-context statistics: sink-mass (weight on keys 0-3), "
      "mean attention distance and entropy (nats).",
      "heads"}, as_cmd_heads, .keeps_state = false},
    {{"zoom", "zoom LAYER HEAD BLOCK max|mean [FILE.npy]", "The heatmap zoomed out as numbers: each cell the max "
      "or the mean of a BLOCK x BLOCK block of one head's self-attention pattern (BLOCK a power of two, blocks from "
      "position 0; masked cells left out), the cells the view draws at that zoom.",
      "zoom 1 2 4 max"}, as_cmd_zoom, .keeps_state = true, .args = ARGS(5)},
    {{"retrieval", "retrieval NEEDLE [threshold=X]", "Score every head as a retrieval head (Wu et al. 2024, \"Retrieval Head Mechanistically "
      "Explains Long-Context Factuality\", sec. 2) on the computed context: the needle is its first occurrence; over "
      "the later queries whose next token is one of the needle's, the share whose top key (argmax of the row) is "
      "that same token inside the needle (a copy). * marks scores >= X (0.1).",
      "retrieval \"the key is 7341\""}, as_cmd_retrieval, .keeps_state = false},
    {{"watch", "watch HOOK nan | watch HOOK max > X", "Stop continue/gen when a condition holds at a hook.",
      "watch blocks.*.ln1.hook_scale max > 50"}, as_cmd_watch, .keeps_state = true},
    {{"unwatch", "unwatch", "Remove every watch.", "unwatch"}, as_cmd_unwatch, .keeps_state = true, .args = ARGS(0)},
    {{"watches", "watches", "List watches.", "watches"}, as_cmd_watches, .keeps_state = true, .args = ARGS(0)},
    {{"weights", "weights [PATTERN]", "Per-tensor statistics (and a histogram for one tensor).",
      "weights blk.0.*"}, as_cmd_weights, .keeps_state = true, .args = ARGS(1)},
    {{"weight", "weight TENSOR [FILE.npy]",
      "One tensor of the model file by its name (as `weights` lists it; a Hugging Face directory's under llama.cpp's "
      "names), dequantized to float32: its shape, type, min, max, mean, std and first values, or the array. The "
      "array's shape is the one gguf-py gives (ggml's ne reversed): blk.0.attn_q.weight is [out, in], "
      "token_embd.weight [vocab, d_model].",
      "weight blk.0.attn_v.weight v.npy"}, as_cmd_weight, .keeps_state = true, .args = ARGS(2)},
    {{"circuit", "circuit ov|qk L.H [top=K] [FILE.npy|FILE.png|FILE.svg|FILE.pdf]",
      "A head's OV circuit (W_E W_V W_O W_U: the token attended to against the logit written) or QK circuit "
      "(W_E W_Q W_K^T W_E^T: query token against key token), kept factored as TransformerLens's FactoredMatrix; "
      "the K largest token pairs, the share of tokens whose largest entry is their own, and for OV the copying "
      "score (sum of the eigenvalues over the sum of their moduli, from the d_head x d_head factor). The norms' "
      "weights are folded in, their centring and scaling, biases and rotary are not; a grouped-query head reads its "
      "key-value head. FILE.npy: the [vocab, vocab] matrix (beyond 4096 tokens its factors [2, vocab, d_head]); a figure: "
      "the circuit over the tokens of the K largest pairs.",
      "circuit ov 1.0 top=5"}, as_cmd_circuit, .keeps_state = true},
    {{"diff", "diff OTHER.gguf|DIR", "Compare with another model (a GGUF file or a Hugging Face directory): "
      "tensors' values per tensor and per layer (NaN and Inf counted and located, block scales, shapes and types) "
      "and every metadata key (hyperparameters, vocabulary, merges, special ids).",
      "diff models/austen-gpt2-f16.gguf"}, as_cmd_diff, .keeps_state = true},
    {{"load", "load MODEL", "Open another model in place of this one (a GGUF file, a Hugging Face directory, or a "
      "llama2.c checkpoint); a model that does not load leaves the current one.", "load models/induction.gguf"},
     cmd_load, .keeps_state = true},
    {{"convert", "convert DIR OUT.gguf", "Write a Hugging Face directory (config.json, safetensors, tokenizer.json) "
      "as a GGUF file llama.cpp loads, its tensors in their stored types.", "convert ~/models/gpt2 gpt2.gguf"},
     cmd_convert, .keeps_state = true},
    {{"save", "save run FILE [dtype=f32|f16|bf16]", "Save the computed run (every captured hook, the tokens, the "
      "model's metadata and hook table, not its weights) to FILE, for `attnscope --open FILE` here or on a "
      "colleague's machine: the view, dump, heads context, info and export work on it. dtype=f16/bf16 halves it "
      "(values rounded to nearest even; default --capture-dtype, else f32).", "save run story.run dtype=f16"},
     as_cmd_save, .keeps_state = false, .args = ARGS(3)},
    {{"info", "info", "The model card: hyperparameters, tensors, metadata, capture budget.", "info"},
     as_cmd_info, .keeps_state = true, .args = ARGS(0)},
    {{"help", "help [COMMAND]", "List the commands, or explain one.", "help break"}, cmd_help, .keeps_state = true, .args = ARGS(1)},
    {{"quit", "quit", "Leave attnscope.", "quit"}, cmd_quit, .keeps_state = true, .args = ARGS(0)},
};

#define N_COMMANDS ((int)(sizeof commands / sizeof commands[0]))

const as_command_info *as_command_at(int i)
{
    return i >= 0 && i < N_COMMANDS ? &commands[i].info : NULL;
}

static int cmd_help(cmd_ctx *c)
{
    for (int i = 0; i < N_COMMANDS; i++) {
        const as_command_info *in = &commands[i].info;
        if (c->argc > 1 && strcmp(c->argv[1], in->name))
            continue;
        if (c->argc > 1)
            fprintf(c->s->out, "%s\n  %s\n  example: %s\n", in->usage, in->help, in->example);
        else
            fprintf(c->s->out, "  %-28s %s\n", in->usage, in->help);
        if (c->argc > 1)
            return AS_OK;
    }
    if (c->argc > 1)
        return as_error_set(c->err, "no command '%s' (help lists them)", c->argv[1]);
    return AS_OK;
}

/* A command with a fixed most of arguments (.args): one more is refused
 * with the usage, never dropped silently (`gen 2 3` generated 2). */
static int too_many_args(const command *cmd, const cmd_ctx *c)
{
    if (!cmd->args)
        return AS_OK;
    int most = cmd->args - 1;
    if (!strcmp(cmd->info.name, "compare") && c->argc == 2)
        return as_error_set(c->err, "usage: %s (the metric takes two tokens, or none to keep the one set)",
                            cmd->info.usage);
    if (c->argc - 1 > most)
        return as_error_set(c->err, "usage: %s (%s takes %s%d argument%s: '%s' is one too many)", cmd->info.usage,
                            cmd->info.name, most ? "at most " : "", most, most == 1 ? "" : "s", c->argv[most + 1]);
    return AS_OK;
}

int as_session_exec(as_session *s, const char *line, as_error *err)
{
    cmd_ctx c = {s, NULL, 0, NULL, err};
    const char *word = line;
    while (isspace((unsigned char)*word))
        word++;
    size_t wlen = strcspn(word, " \t\n\r\f\v");
    if (as_split_words(line, &c.argv, &c.argc, err)) {
        if (!takes_text(word, wlen))
            return AS_ERR;
        /* `prompt "Yes, said he`: only the command word is a word. */
        char *name = strndup(word, wlen);
        char **one = name ? calloc(1, sizeof *one) : NULL;
        if (!one) {
            free(name);
            return as_error_set(err, "out of memory");
        }
        one[0] = name;
        c.argv = one;
        c.argc = 1;
        as_error_clear(err);
    }
    int rc = AS_OK;
    if (c.argc > 0 && c.argv[0][0] != '#') {
        const char *p = line;
        while (isspace((unsigned char)*p))
            p++;
        while (*p && !isspace((unsigned char)*p))
            p++;
        c.rest = p;
        const command *cmd = NULL;
        for (int i = 0; i < N_COMMANDS && !cmd; i++)
            if (!strcmp(c.argv[0], commands[i].info.name))
                cmd = &commands[i];
        /* a command that reads the pass sees it recomputed first when the
         * interventions changed since it ran */
        if (!cmd)
            rc = as_error_set(err, "unknown command '%s' (help lists them)", c.argv[0]);
        else if (as_cmd_saved_refuse(s, c.argc, c.argv, err) || too_many_args(cmd, &c) || (!cmd->keeps_state && as_session_refresh(s, err)))
            rc = AS_ERR;
        else
            rc = cmd->fn(&c);
    }
    as_free_commands(c.argv, c.argc);
    return rc;
}
