/* The context's commands: `prompt` (and -raw, -ids), an encoder-decoder's
 * `source` (and -ids), `tokenize` (and -raw), and `tokens`, which lists
 * the context. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "session_internal.h"

static int set_context(as_session *s, const int32_t *ids, int n, as_error *err)
{
    if (n == 0)
        return as_error_set(err, "the prompt is empty");
    if (as_interp_set_tokens(s->it, ids, n, err))
        return AS_ERR;
    fprintf(s->out, "context: %d tokens (nothing computed yet: step, next, finish or gen)\n", n);
    return AS_OK;
}

static int prompt(cmd_ctx *c, bool raw)
{
    const char *r = c->rest + strspn(c->rest, " \t");
    if (c->s->prog->streams[c->s->prog->out_stream].input == AS_INPUT_PIXELS)
        return as_error_set(c->err, "%s reads an image, not text: give it one with `image FILE`",
                            c->s->model->cfg.name);
    if (c->argc == 3 && (*r == '"' || *r == '\''))
        return as_cmd_prompt_pair(c, raw);
    char *text = as_cmd_text_arg(c->rest, c->err);
    int32_t *ids = NULL;
    size_t n = 0;
    if (!text)
        return AS_ERR;
    int rc;
    int32_t start = c->s->prog->start_token;
    if (c->s->prog->source_stream >= 0 && start >= 0) {
        /* An encoder-decoder's prompt is the decoder's prefix: its start
         * token, then the text's pieces without the tokenizer's own BOS or
         * EOS (T5's tokenizer would end the prefix with </s>). */
        rc = as_tokenizer_tokenize(c->s->model->tok, text, strlen(text), raw ? 0 : AS_TOK_PARSE_SPECIAL, &ids, &n,
                                   c->err);
        int32_t *all = rc == AS_OK ? malloc((n + 1) * sizeof *all) : NULL;
        if (rc == AS_OK && !all)
            rc = as_error_set(c->err, "out of memory");
        if (all) {
            all[0] = start;
            memcpy(all + 1, ids, n * sizeof *ids);
            as_cmd_warn_tokens(c->s, text);
            rc = set_context(c->s, all, (int)n + 1, c->err);
            free(all);
        }
    } else {
        rc = as_cmd_encode(c->s, text, raw, &ids, &n, c->err);
        if (rc == AS_OK)
            rc = set_context(c->s, ids, (int)n, c->err);
    }
    free(ids);
    free(text);
    return rc;
}

int as_cmd_prompt(cmd_ctx *c) { return prompt(c, false); }
int as_cmd_prompt_raw(cmd_ctx *c) { return prompt(c, true); }

/* The ids of `prompt-ids` and `source-ids` (malloc'd, argc - 1 of them),
 * each checked against the vocabulary; NULL after a message. */
static int32_t *parse_ids(cmd_ctx *c, const char *usage)
{
    if (c->argc < 2) {
        as_error_set(c->err, "usage: %s", usage);
        return NULL;
    }
    int32_t *ids = malloc((size_t)(c->argc - 1) * sizeof *ids);
    if (!ids) {
        as_error_set(c->err, "out of memory");
        return NULL;
    }
    for (int i = 1; i < c->argc; i++) {
        long v;
        if (as_cmd_parse_long(c->argv[i], 0, c->s->model->cfg.n_vocab - 1, "a token id", &v, c->err)) {
            free(ids);
            return NULL;
        }
        ids[i - 1] = (int32_t)v;
    }
    return ids;
}

int as_cmd_prompt_ids(cmd_ctx *c)
{
    int32_t *ids = parse_ids(c, "prompt-ids ID [ID ...]");
    if (!ids)
        return AS_ERR;
    int rc = set_context(c->s, ids, c->argc - 1, c->err);
    free(ids);
    return rc;
}

/* The source of an encoder-decoder (the program's source stream): the
 * encoder's input. A decoder with no prefix yet starts from the start
 * token the file names. */
static int set_source(as_session *s, const int32_t *ids, int n, as_error *err)
{
    int src = s->prog->source_stream;
    if (n == 0)
        return as_error_set(err, "the source is empty");
    if (as_interp_set_input(s->it, src, ids, n, err))
        return AS_ERR;
    fprintf(s->out, "source: %d tokens", n);
    int32_t start = s->prog->start_token;
    if (s->it->out->n_tokens == 0 && start >= 0) {
        if (as_interp_set_tokens(s->it, &start, 1, err))
            return AS_ERR;
        char piece[64];
        as_cmd_label(s, start, 0, piece, sizeof piece);
        fprintf(s->out, "; the decoder starts from %s (id %d)", piece, start);
    }
    fprintf(s->out, " (nothing computed yet: step, next, finish or gen)\n");
    return AS_OK;
}

static int require_source_stream(cmd_ctx *c)
{
    if (c->s->prog->source_stream < 0)
        return as_error_set(c->err, "%s (%s) has no source: it is not an encoder-decoder, and `prompt` sets its "
                            "whole input", c->s->model->cfg.name, as_model_arch_name(c->s->model));
    return AS_OK;
}

int as_cmd_source(cmd_ctx *c)
{
    if (require_source_stream(c))
        return AS_ERR;
    char *text = as_cmd_text_arg(c->rest, c->err);
    int32_t *ids = NULL;
    size_t n = 0;
    if (!text)
        return AS_ERR;
    int rc = as_cmd_encode(c->s, text, false, &ids, &n, c->err);
    if (rc == AS_OK)
        rc = set_source(c->s, ids, (int)n, c->err);
    free(ids);
    free(text);
    return rc;
}

int as_cmd_source_ids(cmd_ctx *c)
{
    if (require_source_stream(c))
        return AS_ERR;
    int32_t *ids = parse_ids(c, "source-ids ID [ID ...]");
    if (!ids)
        return AS_ERR;
    int rc = set_source(c->s, ids, c->argc - 1, c->err);
    free(ids);
    return rc;
}

static int tokenize(cmd_ctx *c, bool raw)
{
    if (c->s->prog->streams[c->s->prog->out_stream].input == AS_INPUT_PIXELS)
        return as_error_set(c->err, "%s reads an image, not text: it has no tokenizer (`image FILE` gives it its input)",
                            c->s->model->cfg.name);
    char *text = as_cmd_text_arg(c->rest, c->err);
    int32_t *ids = NULL;
    size_t n = 0;
    if (!text)
        return AS_ERR;
    int rc = as_cmd_encode(c->s, text, raw, &ids, &n, c->err);
    for (size_t i = 0; rc == AS_OK && i < n; i++) {
        char piece[256];
        as_cmd_label(c->s, ids[i], 0, piece, sizeof piece);
        fprintf(c->s->out, "%d\t%s\n", ids[i], piece);
    }
    free(ids);
    free(text);
    return rc;
}

int as_cmd_tokenize(cmd_ctx *c) { return tokenize(c, false); }
int as_cmd_tokenize_raw(cmd_ctx *c) { return tokenize(c, true); }

int as_cmd_tokens(cmd_ctx *c)
{
    as_session *s = c->s;
    int src = s->prog->source_stream;
    if (s->it->out->n_tokens == 0 && (src < 0 || s->it->st[src].n_tokens == 0))
        return as_cmd_require_tokens(s, c->err);
    for (int i = 0; src >= 0 && i < s->it->st[src].n_tokens; i++) {
        char piece[256];
        as_cmd_label(s, s->it->st[src].tokens[i], 0, piece, sizeof piece);
        fprintf(s->out, "%d\t%d\t%s\tsource\n", i, s->it->st[src].tokens[i], piece);
    }
    bool pixels = s->prog->streams[s->prog->out_stream].input == AS_INPUT_PIXELS;
    for (int i = 0; i < s->it->out->n_tokens; i++) {
        char piece[256];
        as_cmd_position_label(s, i, piece, sizeof piece);
        if (pixels)
            fprintf(s->out, "%d\t%s\t%s\n", i, piece, i ? "patch" : "class token");
        else
            fprintf(s->out, "%d\t%d\t%s\t%s\n", i, s->it->out->tokens[i], piece,
                    i < s->it->out->n_prompt ? "prompt" : "generated");
    }
    return AS_OK;
}
