/* The encoder's commands: `fill` (the masked-LM head's predictions at
 * each [MASK], or at a position), `embed` and `similarity` (the pooled
 * vector, and the cosine of two), `token-types` and the sentence pair of
 * `prompt "A" "B"` (BERT's segments), and `top` at a position. They ask
 * the program's facts (a non-causal output stream, a pooled hook, an
 * unembedding), never the architecture's name. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/npy.h"
#include "attnscope/sampler.h"
#include "session_internal.h"

const float *as_cmd_logits_at(as_session *s, int pos, as_error *err)
{
    const as_program *p = s->prog;
    if (p->unembed < 0) {
        as_error_set(err, "%s has no masked-LM head (the mlm.* tensors), so it predicts no tokens: it gives "
                     "vectors (embed, similarity)", s->model->cfg.name);
        return NULL;
    }
    const as_interp *it = s->it;
    if (it->in_pass || it->out->n_done == 0 || it->out->n_done != it->out->n_tokens) {
        as_error_set(err, "no predictions yet: the pass is not finished (`finish` computes them)");
        return NULL;
    }
    int h = p->ops[p->unembed].out;
    if (as_capture_has(s->cap, h) && s->cap->filled[h] > pos)
        return as_capture_row(s->cap, h, pos);
    if (pos == it->out->n_tokens - 1)
        return as_interp_logits(it);
    as_error_set(err, "the predictions at position %d were not captured (the capture budget dropped the logits; "
                 "a larger --capture-mb keeps them)", pos);
    return NULL;
}

/* The top k predictions at one position: rank, id, piece, probability, logit. */
static void print_top(as_session *s, const float *logits, int k)
{
    int n = s->model->cfg.n_vocab;
    as_probs(logits, n, s->probs);
    int m = as_top_indices(logits, n, k, s->order);
    fprintf(s->out, "rank\tid\tpiece\tprob\tlogit\n");
    for (int i = 0; i < m; i++) {
        char piece[256];
        as_cmd_label(s, s->order[i], 0, piece, sizeof piece);
        fprintf(s->out, "%d\t%d\t%s\t%.6f\t%.4f\n", i + 1, s->order[i], piece, s->probs[s->order[i]],
                logits[s->order[i]]);
    }
}

static int predictions_at(as_session *s, int pos, int k, as_error *err)
{
    const float *logits = as_cmd_logits_at(s, pos, err);
    if (!logits || as_cmd_nonfinite_logits(s, logits, pos, err))
        return AS_ERR;
    char piece[256];
    as_cmd_label(s, s->it->out->tokens[pos], 0, piece, sizeof piece);
    fprintf(s->out, "predictions at position %d (%s):\n", pos, piece);
    print_top(s, logits, k);
    return AS_OK;
}

/* top [K] [POS] on an encoder: what the head predicts at POS (the last
 * position by default), not a next token. */
int as_cmd_top_encoder(cmd_ctx *c, long k)
{
    as_session *s = c->s;
    int pos = s->it->out->n_tokens - 1;
    if (as_cmd_require_tokens(s, c->err) || (c->argc > 2 && as_cmd_parse_pos(s, c->argv[2], &pos, c->err)))
        return AS_ERR;
    if (c->argc > 3)
        return as_error_set(c->err, "usage: top [K] [POS]");
    return predictions_at(s, pos, (int)k, c->err);
}

int as_cmd_fill(cmd_ctx *c)
{
    as_session *s = c->s;
    long k = 5;
    int pos = -1;
    if (c->argc > 3)
        return as_error_set(c->err, "usage: fill [K] [POS]");
    if (s->prog->logits_pos >= 0)
        return as_error_set(c->err, "%s has no masked-LM head: it classifies %s at %s (`top` lists its classes)",
                            s->model->cfg.name,
                            s->prog->streams[s->prog->out_stream].input == AS_INPUT_PIXELS ? "an image" : "the input",
                            s->prog->logits_pos == 0 ? "CLS" : "one position");
    if (as_cmd_require_tokens(s, c->err) ||
        (c->argc > 1 && as_cmd_parse_long(c->argv[1], 1, s->model->cfg.n_vocab, "K", &k, c->err)) ||
        (c->argc > 2 && as_cmd_parse_pos(s, c->argv[2], &pos, c->err)) || !as_cmd_logits_at(s, 0, c->err))
        return AS_ERR;
    if (pos >= 0)
        return predictions_at(s, pos, (int)k, c->err);
    int32_t mask = as_tokenizer_find(s->model->tok, "[MASK]");
    int found = 0;
    for (int i = 0; i < s->it->out->n_tokens; i++) {
        if (mask < 0 || s->it->out->tokens[i] != mask)
            continue;
        if (predictions_at(s, i, (int)k, c->err))
            return AS_ERR;
        found++;
    }
    if (!found)
        return as_error_set(c->err, "no [MASK] in the context%s: give a position (fill K POS)",
                            mask < 0 ? " (the vocabulary has no [MASK] token)" : "");
    return AS_OK;
}

/* ---- pooled vectors ---- */

/* The per-token vectors llama.cpp gives: the encoder's final norm when
 * the program has one (T5's), else the last block's output (BERT's). */
static int no_pooling(const as_session *s, as_error *err)
{
    int h = as_program_hook(s->prog, AS_HK_ENC_LNF_NORMALIZED, -1);
    if (h < 0)
        h = as_program_hook(s->prog, AS_HK_LN2_NORMALIZED, s->model->cfg.n_layer - 1);
    return as_error_set(err, "%s pools nothing (%s.pooling_type is none or rank): llama.cpp gives its vectors per "
                        "token then, which `dump %s FILE.npy` writes",
                        s->model->cfg.name, as_model_arch_name(s->model), h >= 0 ? s->prog->hooks[h].name : "?");
}

/* The pooled vector of a finished pass over a capture. */
static const float *pooled_of(const as_session *s, const as_capture *cap, const as_stream_state *st, as_error *err)
{
    int h = s->prog->pooled;
    if (h < 0) {
        no_pooling(s, err);
        return NULL;
    }
    if (st->n_done == 0 || st->n_done != st->n_tokens) {
        as_error_set(err, "no pooled vector yet: the pass is not finished (`finish` computes it)");
        return NULL;
    }
    if (!as_capture_has(cap, h) || cap->filled[h] < st->n_tokens) {
        as_error_set(err, "the pooled vector was not captured (the capture budget dropped it)");
        return NULL;
    }
    return as_capture_row(cap, h, st->n_tokens - 1);
}

static const char *pooling_name(const as_program *prog)
{
    static const char *const names[][2] = {
        [AS_POOL_MEAN] = {"mean", "mean, L2-normalized"},
        [AS_POOL_CLS] = {"cls (first position)", "cls (first position), L2-normalized"},
        [AS_POOL_LAST] = {"last position", "last position, L2-normalized"},
        [AS_POOL_MAX] = {"max", "max, L2-normalized"},
        [AS_POOL_MEAN_SQRT_LEN] = {"sum / sqrt(tokens)", "sum / sqrt(tokens), L2-normalized"}};
    as_pooling p = prog->pooling;
    return p >= AS_POOL_MEAN && p <= AS_POOL_MEAN_SQRT_LEN && p != AS_POOL_RANK ? names[p][prog->pooled_l2] : "?";
}

int as_cmd_embed(cmd_ctx *c)
{
    as_session *s = c->s;
    if (c->argc > 2 || (c->argc == 2 && !as_cmd_output_kind(c->argv[1])))
        return as_error_set(c->err, "usage: embed [FILE.npy]");
    if (c->argc == 2 && strcmp(as_cmd_output_kind(c->argv[1]), "npy"))
        return as_error_set(c->err, "embed writes a .npy array, not %s", c->argv[1]);
    const float *v;
    if (as_cmd_require_tokens(s, c->err) || !(v = pooled_of(s, s->cap, s->it->out, c->err)))
        return AS_ERR;
    int d = s->model->cfg.d_model;
    if (c->argc == 2) {
        size_t shape[1] = {(size_t)d};
        return as_cmd_write_npy(s, c->argv[1], AS_NPY_F32, v, shape, 1, "the pooled vector", c->err);
    }
    double norm = 0;
    for (int i = 0; i < d; i++)
        norm += (double)v[i] * v[i];
    fprintf(s->out, "pooled vector (%s over %d tokens), %d values, L2 norm %.6f:\n",
            pooling_name(s->prog), s->it->out->n_tokens, d, sqrt(norm));
    for (int i = 0; i < d; i++)
        fprintf(s->out, "%.6f%c", v[i], i + 1 == d || i % 8 == 7 ? '\n' : ' ');
    return AS_OK;
}

/* A side run's capture keeps the classes up to the logits: the pooled
 * vector is of that class. */
static size_t side_budget(const as_program *p, int n)
{
    size_t b = 0;
    for (int h = 0; h < p->n_hooks; h++)
        if (p->hooks[h].klass <= AS_CLASS_LOGITS)
            b += as_capture_hook_bytes(p, h, n);
    return b;
}

/* The pooled vector of a text, through a side run, into out[d]. */
static int embed_text(as_session *s, const char *text, float *out, int *n_tok, as_error *err)
{
    int32_t *ids = NULL;
    size_t n = 0;
    as_side_run r;
    if (as_tokenizer_tokenize(s->model->tok, text, strlen(text), AS_TOK_ADD_SPECIAL | AS_TOK_PARSE_SPECIAL, &ids,
                              &n, err))
        return AS_ERR;
    int rc = n == 0 ? as_error_set(err, "\"%s\" has no tokens", text)
                    : as_cmd_side_run_new(s, ids, (int)n, side_budget(s->prog, (int)n), &r, err);
    if (n > 0) {
        const float *v = rc ? NULL : pooled_of(s, r.cap, r.it->out, err);
        if (v)
            memcpy(out, v, (size_t)s->model->cfg.d_model * sizeof *out);
        rc = v ? AS_OK : AS_ERR;
        as_cmd_side_run_free(&r);
    }
    *n_tok = (int)n;
    free(ids);
    return rc;
}

int as_cmd_similarity(cmd_ctx *c)
{
    as_session *s = c->s;
    int d = s->model->cfg.d_model, na, nb;
    if (c->argc != 3)
        return as_error_set(c->err, "usage: similarity \"TEXT A\" \"TEXT B\"");
    if (s->prog->pooled < 0)
        return no_pooling(s, c->err);
    float *a = malloc(2 * (size_t)d * sizeof *a), *b = a + d;
    if (!a)
        return as_error_set(c->err, "out of memory");
    int rc = embed_text(s, c->argv[1], a, &na, c->err) || embed_text(s, c->argv[2], b, &nb, c->err);
    if (rc == AS_OK) {
        double dot = 0, aa = 0, bb = 0;
        for (int i = 0; i < d; i++)
            dot += (double)a[i] * b[i], aa += (double)a[i] * a[i], bb += (double)b[i] * b[i];
        double cos = aa > 0 && bb > 0 ? dot / sqrt(aa * bb) : 0;
        fprintf(s->out, "cosine similarity %.6f (pooled vectors: %s; A %d tokens, B %d tokens)\n", cos,
                pooling_name(s->prog), na, nb);
    }
    free(a);
    return rc ? AS_ERR : AS_OK;
}

/* ---- token types and sentence pairs ---- */

int as_cmd_token_types(cmd_ctx *c)
{
    as_session *s = c->s;
    int n = s->it->out->n_tokens;
    if (as_cmd_require_tokens(s, c->err))
        return AS_ERR;
    if (c->argc - 1 != n)
        return as_error_set(c->err, "usage: token-types T [T ...]: one type per token of the context (%d given, "
                            "%d tokens)", c->argc - 1, n);
    int32_t *t = malloc((size_t)n * sizeof *t);
    if (!t)
        return as_error_set(c->err, "out of memory");
    int rc = AS_OK;
    for (int i = 0; i < n && rc == AS_OK; i++) {
        long v;
        rc = as_cmd_parse_long(c->argv[i + 1], 0, 1023, "a token type", &v, c->err);
        t[i] = (int32_t)v;
    }
    if (rc == AS_OK)
        rc = as_interp_set_types(s->it, s->prog->out_stream, t, n, c->err);
    if (rc == AS_OK)
        fprintf(s->out, "token types set (nothing computed yet: step, next or finish)\n");
    free(t);
    return rc;
}

/* [CLS] A [SEP] B [SEP] as llama.cpp's tokenizer and BERT's pairs make
 * it (as_tokenizer_tokenize_pair): types 0, then 1. */
int as_cmd_prompt_pair(cmd_ctx *c, bool raw)
{
    as_session *s = c->s;
    const as_tokenizer *t = s->model->tok;
    int types_n = 0;
    for (int o = 0; o < s->prog->n_ops; o++)
        if (s->prog->ops[o].kind == AS_OP_TYPE_EMBED)
            types_n = s->prog->ops[o].w.rows;
    if (types_n < 2)
        return as_error_set(c->err, "a sentence pair needs token types 0 and 1, and %s has %s (one quoted text is a "
                            "prompt)", s->model->cfg.name, types_n ? "one type only" : "no token-type embedding");
    int32_t *ids = NULL, *types = NULL;
    size_t n = 0, na = 0, zero = 0;
    int rc = as_tokenizer_tokenize_pair(t, c->argv[1], strlen(c->argv[1]), c->argv[2], strlen(c->argv[2]),
                                        raw ? 0 : AS_TOK_PARSE_SPECIAL, &ids, &types, &n, &na, c->err);
    for (size_t i = 0; rc == AS_OK && i < n; i++) {
        zero += types[i] == 0;
        if (types[i] >= types_n)
            rc = as_error_set(c->err, "the pair template gives token type %d, and %s has %d", types[i],
                              s->model->cfg.name, types_n);
    }
    if (rc == AS_OK)
        rc = as_interp_set_tokens(s->it, ids, (int)n, c->err) ||
             as_interp_set_types(s->it, s->prog->out_stream, types, (int)n, c->err);
    if (rc == AS_OK)
        fprintf(s->out, "context: %zu tokens, a pair: %zu of type 0, %zu of type 1 (nothing computed yet: step, "
                "next or finish)\n", n, zero, n - zero);
    free(ids), free(types);
    return rc ? AS_ERR : AS_OK;
}
