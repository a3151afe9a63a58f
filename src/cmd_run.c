/* Running the interpreter: `step`, `next`, `finish`, `continue`, `back`,
 * `where`, breakpoints (`break`, `unbreak`), `gen` with the sampler, and
 * `set` (the sampler's and the engine's settings); what a run says when it
 * stops (as_cmd_print_stop). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"

static void print_op(as_session *s, const char *lead, int pc)
{
    const as_op *op = &s->prog->ops[pc];
    fprintf(s->out, "%sop %d/%d  %-34s %s\n", lead, pc + 1, s->prog->n_ops, s->prog->hooks[op->out].name,
            op->text);
}

void as_cmd_print_stop(as_session *s, as_stop stop, int last_pc)
{
    const as_interp *it = s->it;
    switch (stop) {
    case AS_STOP_IDLE:
        fprintf(s->out, "nothing to run: all %d tokens are processed (gen adds more)\n", it->out->n_tokens);
        return;
    case AS_STOP_PASS_END:
        if (s->prog->logits_pos >= 0) {
            char at[32];
            as_cmd_position_label(s, s->prog->logits_pos, at, sizeof at);
            fprintf(s->out, "pass over positions %d-%d complete: class logits ready at %s (top)\n", it->out->p0,
                    it->out->p0 + it->out->n - 1, at);
        } else if (as_cmd_is_encoder(s))
            fprintf(s->out, "pass over positions %d-%d complete: %s\n", it->out->p0, it->out->p0 + it->out->n - 1,
                    s->prog->unembed >= 0 ? "predictions ready at every position (fill, top)"
                    : s->prog->pooled >= 0 ? "the pooled vector is ready (embed)" : "hidden states ready");
        else {
            int src = s->prog->source_stream;
            if (src >= 0 && it->st[src].n > 0)
                fprintf(s->out, "encoder over source positions %d-%d, then ", it->st[src].p0,
                        it->st[src].p0 + it->st[src].n - 1);
            fprintf(s->out, "pass over positions %d-%d complete: logits ready at position %d\n", it->out->p0,
                    it->out->p0 + it->out->n - 1, it->out->n_done - 1);
        }
        return;
    case AS_STOP_BREAK:
        print_op(s, "breakpoint: ", last_pc);
        return;
    case AS_STOP_WATCH: {
        const as_watch_hit *w = &it->watch_hit;
        fprintf(s->out, "watch '%s': %s at position %d", it->rules[w->rule].label, s->prog->hooks[w->hook].name,
                w->pos);
        if (w->index >= 0)
            fprintf(s->out, ", index %d", w->index);
        fprintf(s->out, " = %g%s\n", w->value, w->index < 0 ? " (mean)" : "");
        return;
    }
    case AS_STOP_INTERRUPT:
        fprintf(s->out, "interrupted before op %d/%d\n", it->pc + 1, s->prog->n_ops);
        return;
    case AS_STOP_COUNT:
    case AS_STOP_BLOCK_END:
        print_op(s, "", last_pc);
        return;
    }
}

int as_cmd_step(cmd_ctx *c)
{
    long n = 1;
    as_stop stop;
    if (as_cmd_require_tokens(c->s, c->err))
        return AS_ERR;
    if (c->argc > 1 && as_cmd_parse_long(c->argv[1], 1, 1000000000L, "the op count", &n, c->err))
        return AS_ERR;
    int before = c->s->it->in_pass ? c->s->it->pc : 0;
    if (as_cmd_run(c->s, AS_RUN_STEP, n, &stop, c->err))
        return AS_ERR;
    /* `step N` lists each op it ran only when N is small; otherwise the last. */
    int last = c->s->it->in_pass ? c->s->it->pc - 1 : c->s->prog->n_ops - 1;
    if (stop == AS_STOP_COUNT && n <= 20)
        for (int pc = before; pc < last; pc++)
            print_op(c->s, "", pc);
    as_cmd_print_stop(c->s, stop, last);
    return AS_OK;
}

static int run_cmd(cmd_ctx *c, as_run_mode mode)
{
    as_stop stop;
    if (as_cmd_require_tokens(c->s, c->err) || as_cmd_run(c->s, mode, 0, &stop, c->err))
        return AS_ERR;
    int last = c->s->it->in_pass ? c->s->it->pc - 1 : c->s->prog->n_ops - 1;
    as_cmd_print_stop(c->s, stop, last);
    return AS_OK;
}

int as_cmd_next(cmd_ctx *c) { return run_cmd(c, AS_RUN_NEXT); }
int as_cmd_finish(cmd_ctx *c) { return run_cmd(c, AS_RUN_FINISH); }
int as_cmd_continue(cmd_ctx *c) { return run_cmd(c, AS_RUN_CONTINUE); }

int as_cmd_where(cmd_ctx *c)
{
    const as_interp *it = c->s->it;
    if (it->out->n_tokens == 0) {
        fprintf(c->s->out, "no context (prompt TEXT starts one)\n");
        return AS_OK;
    }
    if (it->in_pass) {
        int src = c->s->prog->source_stream;
        if (src >= 0 && it->st[src].n > 0)
            fprintf(c->s->out, "encoder over source positions %d-%d, then ", it->st[src].p0,
                    it->st[src].p0 + it->st[src].n - 1);
        fprintf(c->s->out, "pass over positions %d-%d, before ", it->out->p0, it->out->p0 + it->out->n - 1);
        print_op(c->s, "", it->pc);
    } else if (it->out->n_done < it->out->n_tokens) {
        fprintf(c->s->out, "%d of %d tokens processed; the next pass covers positions %d-%d\n",
                it->out->n_done, it->out->n_tokens, it->out->n_done, it->out->n_tokens - 1);
    } else {
        fprintf(c->s->out, "all %d tokens processed; logits ready at position %d\n", it->out->n_tokens,
                it->out->n_tokens - 1);
    }
    return AS_OK;
}

int as_cmd_back(cmd_ctx *c)
{
    long n = 1;
    if (c->argc > 1 && as_cmd_parse_long(c->argv[1], 1, 1000000000L, "the op count", &n, c->err))
        return AS_ERR;
    if (as_interp_back(c->s->it, n, c->err))
        return AS_ERR;
    return as_cmd_where(c);
}

static int cmd_break(cmd_ctx *c, bool on)
{
    if (c->argc != 2)
        return as_error_set(c->err, "usage: %s HOOK (wildcards: blocks.*.attn.hook_pattern)", c->argv[0]);
    int n = as_interp_break(c->s->it, c->argv[1], on);
    if (n == 0)
        return as_error_set(c->err, "no hook point matches '%s' (`hooks` lists them)", c->argv[1]);
    fprintf(c->s->out, "%s on %d hook point%s\n", on ? "breakpoint set" : "breakpoint removed", n,
            n == 1 ? "" : "s");
    return AS_OK;
}

int as_cmd_break_on(cmd_ctx *c) { return cmd_break(c, true); }
int as_cmd_unbreak(cmd_ctx *c) { return cmd_break(c, false); }

/* Runs the pending pass to its end. Returns -1 on error, 1 if it stopped
 * early (breakpoint, watch, Ctrl-C; *why says which), else 0. */
static int settle(as_session *s, const char **why, as_error *err)
{
    as_stop stop = AS_STOP_IDLE;
    if ((s->it->in_pass || s->it->out->n_done < s->it->out->n_tokens) && as_cmd_run(s, AS_RUN_CONTINUE, 0, &stop, err))
        return -1;
    if (stop == AS_STOP_BREAK || stop == AS_STOP_WATCH || stop == AS_STOP_INTERRUPT) {
        as_cmd_print_stop(s, stop, s->it->pc - 1);
        *why = stop == AS_STOP_BREAK   ? "stopped at a breakpoint (continue, then gen again)"
               : stop == AS_STOP_WATCH ? "stopped by a watch (continue, then gen again)"
                                       : "interrupted";
        return 1;
    }
    if (stop == AS_STOP_PASS_END && s->on_pass)
        s->on_pass(s->on_pass_ctx, s);
    return 0;
}

/* What this gen's sampling is, for figures (probs-trace's caption): kept
 * with the context's generated tokens, "mixed" once gens differ. */
static void note_sampling(as_session *s, int start)
{
    const as_sampler *sm = &s->sampler;
    char now[128];
    if (sm->temp == 0)
        snprintf(now, sizeof now, "greedy (temperature 0)");
    else {
        char k[32] = "", p[32] = "";
        if (sm->top_k)
            snprintf(k, sizeof k, ", top-k %d", sm->top_k);
        if (sm->top_p < 1)
            snprintf(p, sizeof p, ", top-p %g", (double)sm->top_p);
        snprintf(now, sizeof now, "temperature %g%s%s", (double)sm->temp, k, p);
    }
    if (start > s->it->out->n_prompt && s->sampled[0] && strcmp(s->sampled, now))
        snprintf(s->sampled, sizeof s->sampled, "settings that changed between gens");
    else if (start <= s->it->out->n_prompt || !s->sampled[0])
        snprintf(s->sampled, sizeof s->sampled, "%s", now);
}

int as_cmd_gen(cmd_ctx *c)
{
    as_session *s = c->s;
    long n = 1;
    if (as_cmd_is_encoder(s) && s->prog->streams[s->prog->out_stream].input == AS_INPUT_PIXELS)
        return as_error_set(c->err, "%s classifies an image: every patch sees every other and there is no next "
                            "token to generate (top lists the classes at CLS; image FILE gives another image)",
                            s->model->cfg.name);
    if (as_cmd_is_encoder(s))
        return as_error_set(c->err, "%s is an encoder: every position sees every other, so there is no next token "
                            "to generate (fill predicts masked ones; embed gives its vector)", s->model->cfg.name);
    if (as_cmd_require_tokens(s, c->err))
        return AS_ERR;
    if (c->argc > 1 && as_cmd_parse_long(c->argv[1], 1, 1000000, "the token count", &n, c->err))
        return AS_ERR;
    int start = s->it->out->n_tokens;
    const char *why = NULL;
    bool eos = false;
    note_sampling(s, start);
    for (long i = 0; i < n && !why; i++) {
        int st = settle(s, &why, c->err);
        if (st < 0)
            return AS_ERR;
        if (st > 0)
            break;
        int32_t tok;
        if (as_sampler_pick(&s->sampler, as_interp_logits(s->it), s->model->cfg.n_vocab, s->probs,
                            s->order, &tok, c->err))
            return AS_ERR;
        if (s->it->out->n_tokens >= s->it->n_ctx) {
            why = "stopped: the context is full";
            break;
        }
        as_interp_append(s->it, tok, c->err);
        if (tok == as_tokenizer_eos(s->model->tok)) {
            why = "stopped: end-of-sequence token";
            eos = true;
        }
    }
    /* The last token is computed like any other, the end-of-sequence token
     * too: the view then shows its attention rather than a position with
     * nothing computed yet. */
    if ((!why || eos) && settle(s, &why, c->err) < 0)
        return AS_ERR;
    char *text = NULL;
    size_t len = 0;
    int count = s->it->out->n_tokens - start;
    if (as_tokenizer_decode(s->model->tok, s->it->out->tokens + start, (size_t)count, &text, &len, c->err))
        return AS_ERR;
    char shown[4096];
    as_format_piece(text, len, shown, sizeof shown);
    fprintf(s->out, "generated: %s\nids:", shown);
    for (int i = start; i < s->it->out->n_tokens; i++)
        fprintf(s->out, " %d", s->it->out->tokens[i]);
    fprintf(s->out, "\n");
    if (why)
        fprintf(s->out, "%s (%d tokens in context, limit %d)\n", why, s->it->out->n_tokens, s->it->n_ctx);
    free(text);
    return AS_OK;
}

/* `set attn-result on|off`, `set in-hooks on|off`: the program built again with or without the
 * optional hooks, the context run again when it had been. */
static int set_hooks(cmd_ctx *c, const char *key, const char *val)
{
    as_session *s = c->s;
    bool result = !strcmp(key, "attn-result"), on = !strcmp(val, "on");
    if (!on && strcmp(val, "off"))
        return as_error_set(c->err, "%s is on or off, not '%s'", key, val);
    unsigned bit = result ? AS_PROG_ATTN_RESULT : AS_PROG_IN_HOOKS;
    unsigned opts = on ? s->prog_opts | bit : s->prog_opts & ~bit;
    if (opts != s->prog_opts) {
        bool ran = s->it->out->n_done > 0;
        if (as_cmd_rebuild(s, opts, c->err))
            return AS_ERR;
        as_hook_kind kinds[3] = {AS_HK_HEAD_RESULT, AS_HK_ATTN_IN, AS_HK_MLP_IN};
        int n = 0;
        for (int h = 0; h < s->prog->n_hooks; h++)
            for (int k = result ? 0 : 1; k < (result ? 1 : 3); k++)
                n += s->prog->hooks[h].kind == kinds[k];
        fprintf(s->out, "%s = %s (the program rebuilt: %d hook%s %s)\n", key, val, n, n == 1 ? "" : "s",
                result ? "attn.hook_result" : "hook_attn_in / hook_mlp_in");
        if (on && n == 0)
            fprintf(s->out, "%s has none: %s\n", s->model->cfg.name,
                    result ? "no attention's output is one linear map of its heads' z"
                           : "its blocks are not pre-norm blocks over one stream (ln1 over resid_pre, ln2 over resid_mid)");
        if (ran) {
            as_stop stop;
            if (as_cmd_run(s, AS_RUN_FINISH, 0, &stop, c->err))
                return AS_ERR;
            fprintf(s->out, "ran the context again (%d positions)\n", s->it->out->n_tokens);
        }
        return AS_OK;
    }
    fprintf(s->out, "%s = %s (unchanged)\n", key, val);
    return AS_OK;
}

int as_cmd_set(cmd_ctx *c)
{
    as_sampler *sm = &c->s->sampler;
    double v;
    long k;
    if (c->argc == 1) {
        fprintf(c->s->out, "temp = %g%s\ntopk = %d%s\ntopp = %g%s\nseed = %llu\nthreads = %d\n", (double)sm->temp,
                sm->temp == 0 ? " (greedy: the most probable token)" : "", sm->top_k, sm->top_k ? "" : " (off)",
                (double)sm->top_p, sm->top_p >= 1 ? " (off)" : "", (unsigned long long)sm->seed, as_get_threads());
        fprintf(c->s->out, "ctx = %d%s\n", c->s->it->n_ctx,
                c->s->ctx > 0 && c->s->it->n_ctx < c->s->model->cfg.n_ctx ? "" : " (the model's window)");
        fprintf(c->s->out, "activations = %s\n", as_activations_describe());
        fprintf(c->s->out, "attn-result = %s\nin-hooks = %s\n",
                c->s->prog_opts & AS_PROG_ATTN_RESULT ? "on (blocks.L.attn.hook_result)" : "off",
                c->s->prog_opts & AS_PROG_IN_HOOKS ? "on (blocks.L.hook_attn_in, hook_mlp_in)" : "off");
        const char *file = as_capture_file_path(c->s->cap);
        fprintf(c->s->out, "capture-file = %s\n", file ? file : "off (the capture is in RAM)");
        fprintf(c->s->out, "patterns = %s\n", as_patterns_describe());
        return AS_OK;
    }
    if (c->argc != 3)
        return as_error_set(c->err, "usage: set (lists the settings) | set temp X | topk K | topp P | seed S | threads N"
                                    " | ctx N | activations native|f32 | attn-result on|off | in-hooks on|off"
                                    " | capture-file PATH|off | patterns stored|on-demand|auto");
    const char *key = c->argv[1], *val = c->argv[2];
    if (!strcmp(key, "temp")) {
        if (as_cmd_parse_float(val, 0, 100, "temp", &v, c->err))
            return AS_ERR;
        sm->temp = (float)v;
    } else if (!strcmp(key, "topk")) {
        if (as_cmd_parse_long(val, 0, c->s->model->cfg.n_vocab, "topk", &k, c->err))
            return AS_ERR;
        sm->top_k = (int)k;
    } else if (!strcmp(key, "topp")) {
        char *end;
        errno = 0;
        v = strtod(val, &end);
        if (errno || end == val || *end || !(v > 0 && v <= 1))
            return as_error_set(c->err, "topp must be a number in (0, 1] (above 0, at most 1; 1 turns it off), "
                                "not '%s'", val);
        sm->top_p = (float)v;
    } else if (!strcmp(key, "seed")) {
        if (as_cmd_parse_long(val, 0, 0x7fffffffL, "seed", &k, c->err))
            return AS_ERR;
        as_sampler_seed(sm, (uint64_t)k);
    } else if (!strcmp(key, "threads")) {
        if (as_cmd_parse_long(val, 1, 256, "threads", &k, c->err))
            return AS_ERR;
        as_set_threads((int)k);
    } else if (!strcmp(key, "activations")) {
        /* what was computed under the other arithmetic is stale from here
         * (as_interp_stale): the next command that reads it recomputes */
        if (!as_set_activations(val))
            return as_error_set(c->err, "activations is native (llama.cpp's arithmetic: 8-bit activations for "
                                        "quantized weights) or f32 (float32 activations), not '%s'", val);
        fprintf(c->s->out, "activations = %s\n", as_activations_describe());
        return AS_OK;
    } else if (!strcmp(key, "patterns")) {
        /* read when a context is computed anew: what is in context now is
         * recomputed under it by the next command that reads it */
        if (!as_set_patterns(val))
            return as_error_set(c->err, "patterns is stored (every attention row kept), on-demand (rows computed "
                                        "from the captured q and k when read) or auto, not '%s'", val);
        fprintf(c->s->out, "patterns = %s\n", as_patterns_describe());
        return AS_OK;
    } else if (!strcmp(key, "ctx")) {
        if (as_cmd_parse_long(val, 0, 1L << 30, "ctx", &k, c->err) || as_interp_set_ctx(c->s->it, (int)k, c->err))
            return AS_ERR;
        c->s->ctx = (int)k;
        fprintf(c->s->out, "ctx = %d%s\n", c->s->it->n_ctx,
                c->s->it->n_ctx < c->s->model->cfg.n_ctx ? "" : " (the model's window)");
        return AS_OK;
    } else if (!strcmp(key, "attn-result") || !strcmp(key, "in-hooks")) {
        return set_hooks(c, key, val);
    } else if (!strcmp(key, "capture-file")) {
        /* the hooks' storage moved to a memory-mapped file (or back to RAM): what is kept is the budget's
         * to say, where it lives this setting's */
        as_capture *cap = c->s->cap;
        bool off = !strcmp(val, "off");
        if (!off && as_capture_file_path(cap) && !strcmp(as_capture_file_path(cap), val)) {
            fprintf(c->s->out, "capture-file = %s\n", val);
            return AS_OK;
        }
        if (!off && as_capture_file_path(cap) && as_capture_set_file(cap, NULL, c->err))
            return AS_ERR;
        if (as_capture_set_file(cap, off ? NULL : val, c->err))
            return AS_ERR;
        fprintf(c->s->out, "capture-file = %s\n", off ? "off (the capture is in RAM)" : val);
        return AS_OK;
    } else {
        return as_error_set(c->err, "unknown setting '%s' (temp, topk, topp, seed, threads, ctx, activations, "
                            "attn-result, in-hooks, capture-file, patterns)", key);
    }
    fprintf(c->s->out, "%s = %s\n", key, val);
    return AS_OK;
}
