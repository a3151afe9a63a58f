/* `export probs` and `export probs-trace`: the next-token (or masked-LM)
 * distribution as bars, and for every generated token the distribution it
 * was drawn from (its probability, its rank, each step's top candidates). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/sampler.h"
#include "export_internal.h"

int as_export_probs(cmd_ctx *c)
{
    as_session *s = c->s;
    if (c->argc < 3)
        return as_error_set(c->err, "usage: export probs FILE.png|FILE.svg|FILE.pdf [key=value ...]");
    const char *path = c->argv[2];
    export_fig fig;
    if (as_export_begin(&fig, c, path, 3, OPT_FIG | OPT_SCALE | OPT_TOP))
        return AS_ERR;
    const float *logits = as_interp_logits(s->it);
    if (!logits) {
        if (as_cmd_require_tokens(s, c->err))
            return AS_ERR;
        return as_error_set(c->err, "no logits yet at position %d: the pass is not finished (`finish` computes them)",
                            s->it->out->n_tokens - 1);
    }
    fig.o.top = fig.o.top ? fig.o.top : 10;
    int V = s->model->cfg.n_vocab, k = (int)(fig.o.top < V ? fig.o.top : V), pos = s->it->out->n_tokens - 1;
    if (as_cmd_nonfinite_logits(s, logits, pos, c->err))
        return AS_ERR;
    as_probs(logits, V, s->probs);
    k = as_top_indices(s->probs, V, k, s->order);
    char **labels = calloc((size_t)k, sizeof *labels);
    float *p = malloc((size_t)k * sizeof *p);
    char *ctx_text = as_export_context_text(s, pos >= 12 ? pos - 11 : 0, pos + 1);
    int rc = AS_ERR;
    if (!labels || !p || !ctx_text) {
        as_error_set(c->err, "out of memory");
        goto out;
    }
    for (int i = 0; i < k; i++) {
        char buf[256];
        as_cmd_token_label(s, s->order[i], buf, sizeof buf);
        p[i] = s->probs[s->order[i]];
        if (!(labels[i] = strdup(buf))) {
            as_error_set(c->err, "out of memory");
            goto out;
        }
    }
    char what[64];
    bool enc = as_cmd_is_encoder(s); /* the head predicts the token at the position itself */
    as_export_title(&fig, enc ? "Predictions at position %d" : "Next token after position %d", pos);
    as_export_note(&fig, "The context ends: %s%s", pos >= 12 ? "\xE2\x80\xA6" : "", ctx_text);
    as_fig_probs pr = {k, (const char *const *)labels, p};
    as_export_meta(&fig, "Position", "%d", pos);
    snprintf(what, sizeof what, enc ? "masked-LM probabilities, top %d" : "next-token probabilities, top %d", k);
    rc = as_export_write(&fig, EXPORT_PROBS, &pr, 0, pos + 1, what);
out:
    as_export_free_labels(labels, k);
    free(p);
    free(ctx_text);
    return rc;
}

/* For every generated position p, the distribution its token was drawn
 * from: the softmax of the captured logits at p - 1. */
int as_export_probs_trace(cmd_ctx *c)
{
    as_session *s = c->s;
    if (c->argc < 3)
        return as_error_set(c->err, "usage: export probs-trace FILE.png|FILE.svg|FILE.pdf [key=value ...]");
    const char *path = c->argv[2];
    export_fig fig;
    if (as_export_begin(&fig, c, path, 3, OPT_FIG | OPT_CMAP | OPT_SCALE | OPT_TOP | OPT_TOKENS))
        return AS_ERR;
    fig.o.top = fig.o.top ? fig.o.top : 5;
    const as_interp *it = s->it;
    if (as_cmd_require_tokens(s, c->err))
        return AS_ERR;
    int first = it->out->n_prompt > 1 ? it->out->n_prompt : 1;
    if (it->out->n_tokens <= first && !s->prog->streams[s->prog->out_stream].causal)
        return as_error_set(c->err, "%s does not generate (its attention sees every position), so there is no "
                            "probability trace: `export probs` draws its predictions", s->model->cfg.name);
    if (it->out->n_tokens <= first)
        return as_error_set(c->err, "no generated tokens yet: `gen N` produces some to trace");
    int hl = as_program_hook(s->prog, AS_HK_LOGITS, -1);
    if (!as_capture_has(s->cap, hl))
        return as_error_set(c->err, "probs-trace needs the logits of every step, but %s is not captured: %s",
                            s->prog->hooks[hl].name, s->cap->dropped[0] ? s->cap->dropped : "it was dropped");
    int filled = s->cap->filled[hl], a = first, b = it->out->n_tokens;
    if (fig.o.window) {
        export_opts w = fig.o;
        w.hide_bos = false;
        if (as_export_window(s, &w, it->out->n_tokens, &a, &b, c->err))
            return AS_ERR;
        a = a < first ? first : a;
    }
    if (b > filled + 1)
        b = filled + 1; /* a token whose logits are not computed yet */
    if (a >= b)
        return as_error_set(c->err, "no generated token in the chosen positions has its logits computed");
    int S = b - a, V = s->model->cfg.n_vocab, K = (int)(fig.o.top < V ? fig.o.top : V);
    int *positions = malloc((size_t)S * sizeof *positions), *rank = malloc((size_t)S * sizeof *rank);
    float *cp = malloc((size_t)S * sizeof *cp), *ap = malloc((size_t)S * (size_t)K * sizeof *ap);
    char **chosen = calloc((size_t)S, sizeof *chosen), **alts = calloc((size_t)S * (size_t)K, sizeof *alts);
    int rc = AS_ERR;
    if (!positions || !rank || !cp || !ap || !chosen || !alts) {
        as_error_set(c->err, "out of memory");
        goto out;
    }
    for (int i = 0; i < S; i++) {
        int p = a + i;
        int32_t tok = it->out->tokens[p];
        if (as_cmd_nonfinite_logits(s, as_capture_row(s->cap, hl, p - 1), p - 1, c->err))
            goto out;
        as_probs(as_capture_row(s->cap, hl, p - 1), V, s->probs);
        as_top_indices(s->probs, V, K, s->order);
        positions[i] = p;
        cp[i] = s->probs[tok];
        rank[i] = 1;
        for (int v = 0; v < V; v++)
            rank[i] += s->probs[v] > cp[i];
        char buf[256];
        as_cmd_token_label(s, tok, buf, sizeof buf);
        if (!(chosen[i] = strdup(buf)))
            goto oom;
        for (int k = 0; k < K; k++) {
            ap[(size_t)i * K + k] = s->probs[s->order[k]];
            as_cmd_token_label(s, s->order[k], buf, sizeof buf);
            if (!(alts[(size_t)i * K + k] = strdup(buf)))
                goto oom;
        }
    }
    char what[64];
    as_export_title(&fig, "Probability of each generated token");
    as_export_note(&fig, "Probabilities are the softmax of the logits each token was drawn from, at temperature 1 "
                       "(the tokens were sampled with %s); the table holds each step's top %d.",
                 s->sampled[0] ? s->sampled : "no gen: given as ids", K);
    as_fig_trace tr = {S, K, positions, (const char *const *)chosen, cp, rank, (const char *const *)alts, ap};
    snprintf(what, sizeof what, "probability trace, %d steps", S);
    rc = as_export_write(&fig, EXPORT_TRACE, &tr, a, b, what);
    goto out;
oom:
    as_error_set(c->err, "out of memory");
out:
    as_export_free_labels(chosen, S);
    as_export_free_labels(alts, S * K);
    free(positions);
    free(rank);
    free(cp);
    free(ap);
    return rc;
}
