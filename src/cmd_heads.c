/* Head detectors: `heads [context]`, each head's previous-token,
 * first-token, duplicate-token and induction scores (and next-token on an
 * encoder, whose queries see later keys) on a repeated random-token probe
 * or the current context, as a table, a .npy or a figure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/instruments.h"
#include "session_internal.h"

/* A section of heads' tables: its name, then the layer x head header. */
static void table_head(FILE *out, const char *name, int n_head)
{
    fprintf(out, "%s\nlayer", name);
    for (int h = 0; h < n_head; h++)
        fprintf(out, "\tH%d", h);
    fprintf(out, "\n");
}

/* The first id past a SentencePiece vocabulary's byte-fallback tokens
 * (<0x00>..<0xFF>), which no text uses as a word; 0 where there are none
 * or the vocabulary is too small to spare them. */
static int32_t past_byte_tokens(const as_tokenizer *tok, int n_vocab)
{
    int32_t lo = 0;
    for (int32_t id = 0; n_vocab > 300 && id < 300; id++) {
        const char *p = as_tokenizer_piece(tok, id);
        unsigned byte;
        char end;
        if (p && sscanf(p, "<0x%2X%c", &byte, &end) == 2 && end == '>')
            lo = id + 1;
    }
    return lo;
}

int as_cmd_heads(cmd_ctx *c)
{
    as_session *s = c->s;
    const as_config *cfg = &s->model->cfg;
    double threshold = 0.4;
    if (s->prog->streams[s->prog->out_stream].input != AS_INPUT_TOKENS)
        return as_error_set(c->err, "heads scores token patterns (previous token, duplicate, induction), which %s's "
                                    "image patches do not have; `export overlay LAYER all` shows where each head "
                                    "looks, `rollout` where the class reads from", cfg->name);
    bool context = false;
    as_out_arg o = as_cmd_output_arg(c, 1);
    if (o.npy && o.at + 1 < c->argc)
        return as_error_set(c->err, "heads: options such as '%s' are for a figure (.png/.svg/.pdf)", c->argv[o.at + 1]);
    for (int i = 1; i < o.argc; i++) {
        if (!strcmp(c->argv[i], "context"))
            context = true;
        else if (!strncmp(c->argv[i], "threshold=", 10)) {
            if (as_cmd_parse_float(c->argv[i] + 10, 0, 1, "threshold", &threshold, c->err))
                return AS_ERR;
        } else
            return as_error_set(c->err, "usage: heads [context] [threshold=X] [FILE.npy|FILE.png|FILE.svg|FILE.pdf]");
    }
    const as_capture *cap = s->cap;
    const int32_t *tokens = s->it->out->tokens;
    int n = s->it->out->n_done;
    as_side_run probe = {0};
    int32_t *ids = NULL;
    if (!context && s->prog->source_stream >= 0)
        return as_error_set(c->err, "heads' probe is a prompt of repeated random tokens with nothing to translate: on "
                            "an encoder-decoder, `heads context` scores the decoder's self-attention over the "
                            "current target");
    if (!context) {
        /* BOS + R + R: R distinct random ordinary tokens, the same for every model of this vocabulary. */
        int len = cfg->n_ctx >= 65 ? 32 : (cfg->n_ctx - 1) / 2;
        int32_t bos = as_tokenizer_bos(s->model->tok), lo = past_byte_tokens(s->model->tok, cfg->n_vocab);
        int32_t hi = cfg->n_vocab - (as_tokenizer_eos(s->model->tok) == cfg->n_vocab - 1 ? 1 : 0);
        ids = malloc((size_t)(2 * len + 1) * sizeof *ids);
        if (!ids)
            return as_error_set(c->err, "out of memory");
        n = as_induction_probe(ids, bos, len, lo, hi, 1234);
        size_t patterns = 0;
        for (int h = 0; h < s->prog->n_hooks; h++)
            if (s->prog->hooks[h].kind == AS_HK_PATTERN)
                patterns += as_capture_hook_bytes(s->prog, h, n);
        if (as_cmd_side_run_new(s, ids, n, patterns, &probe, c->err)) {
            as_cmd_side_run_free(&probe);
            free(ids);
            return AS_ERR;
        }
        cap = probe.cap;
        tokens = ids;
    } else if (n < 2) {
        return as_error_set(c->err, "heads context needs a computed context of at least 2 tokens");
    }
    /* every layer's pattern, captured and finite: a score of anything else would be made up */
    for (int l = 0; l < cfg->n_layer; l++) {
        int hook = as_program_pattern(s->prog, l, AS_PICK_SELF);
        int rc = AS_OK;
        if (hook >= 0 && !as_capture_has(cap, hook))
            rc = as_error_set(c->err, "heads needs every layer's attention pattern, but %s is not captured%s%s",
                              s->prog->hooks[hook].name, context && s->cap->dropped[0] ? ": " : "",
                              context ? s->cap->dropped : "");
        else if (hook >= 0)
            rc = as_cmd_check_finite(s, cap, hook, 0, n, "heads: no scores", c->err);
        if (rc) {
            as_cmd_side_run_free(&probe);
            free(ids);
            return AS_ERR;
        }
    }
    size_t per = (size_t)cfg->n_layer * (size_t)cfg->n_head;
    int n_scores = as_cmd_is_encoder(s) ? AS_SCORE_COUNT : AS_SCORE_NEXT_TOKEN;
    float *scores = o.path ? malloc((size_t)n_scores * per * sizeof *scores) : NULL;
    if (o.path && !scores) {
        as_cmd_side_run_free(&probe);
        free(ids);
        return as_error_set(c->err, "out of memory");
    }
    fprintf(s->out, "head scores on %s (%d tokens); * marks scores >= %.2f\n",
            context ? "the current context" : "a repeated random-token probe", n, threshold);
    for (int k = 0; k < n_scores; k++) {
        /* a score over no query is undefined, for every head alike: say why rather than print nan */
        const char *undefined = as_head_score_undefined(tokens, n, (as_head_score)k);
        if (undefined) {
            fprintf(s->out, "%s\nundefined: %s\n", as_head_score_name((as_head_score)k), undefined);
            for (size_t i = 0; scores && i < per; i++)
                scores[(size_t)k * per + i] = NAN;
            continue;
        }
        table_head(s->out, as_head_score_name((as_head_score)k), cfg->n_head);
        for (int l = 0; l < cfg->n_layer; l++) {
            int hook = as_program_pattern(s->prog, l, AS_PICK_SELF); /* the context's own self-attention */
            fprintf(s->out, "%d", l);
            for (int h = 0; h < cfg->n_head; h++) {
                double v = as_capture_has(cap, hook) ? as_head_score_of(cap, hook, h, tokens, n, (as_head_score)k) : NAN;
                if (scores)
                    scores[(size_t)k * per + (size_t)l * (size_t)cfg->n_head + (size_t)h] = (float)v;
                fprintf(s->out, "\t%.3f%s", v, v >= threshold ? "*" : "");
            }
            fprintf(s->out, "\n");
        }
    }
    /* The long-context statistics, on the context only (a random probe has
     * no sinks or distances worth reading, and the probe's output, which
     * the heads lesson shows, ends with its scores): not scores on 0-1 (no
     * threshold), and not in the array or the figure, whose shape is a
     * contract. */
    if (context)
        fprintf(s->out, "long-context statistics, each a mean over queries: sink-mass the weight on keys 0-%d "
                        "(queries q >= %d), distance sum_k w_qk |q-k| in positions, entropy -sum_k w_qk ln w_qk in "
                        "nats (queries q >= 1)\n", AS_SINK_KEYS - 1, AS_SINK_KEYS);
    for (int k = 0; context && k < AS_STAT_COUNT; k++) {
        if (k == AS_STAT_SINK && n <= AS_SINK_KEYS) {
            fprintf(s->out, "%s\nundefined: %d tokens, no query past the first %d keys\n",
                    as_head_stat_name((as_head_stat)k), n, AS_SINK_KEYS);
            continue;
        }
        table_head(s->out, as_head_stat_name((as_head_stat)k), cfg->n_head);
        for (int l = 0; l < cfg->n_layer; l++) {
            int hook = as_program_pattern(s->prog, l, AS_PICK_SELF);
            fprintf(s->out, "%d", l);
            for (int h = 0; h < cfg->n_head; h++)
                fprintf(s->out, "\t%.3f", as_capture_has(cap, hook) ? as_head_stat_of(cap, hook, h, n, (as_head_stat)k)
                                                                     : NAN);
            fprintf(s->out, "\n");
        }
    }
    as_cmd_side_run_free(&probe);
    free(ids);
    int rc = AS_OK;
    if (scores) {
        size_t shape[3] = {(size_t)n_scores, (size_t)cfg->n_layer, (size_t)cfg->n_head};
        char what[160];
        snprintf(what, sizeof what, "scores [%s, %s, %s, %s%s%s] x layer x head", as_head_score_name(0),
                 as_head_score_name(1), as_head_score_name(2), as_head_score_name(3), n_scores > 4 ? ", " : "",
                 n_scores > 4 ? as_head_score_name(AS_SCORE_NEXT_TOKEN) : "");
        if (o.npy) {
            rc = as_cmd_write_npy(s, o.path, AS_NPY_F32, scores, shape, 3, what, c->err);
        } else {
            const char *names[AS_SCORE_COUNT];
            for (int k = 0; k < n_scores; k++)
                names[k] = as_head_score_name((as_head_score)k);
            char title[128], desc[96];
            snprintf(title, sizeof title, "Head scores on %s", context ? "the context" : "a repeated random-token probe");
            snprintf(desc, sizeof desc, "head scores, %d scores x %d layers x %d heads", n_scores, cfg->n_layer,
                     cfg->n_head);
            char note[256];
            snprintf(note, sizeof note, context ? "Scores on the current context, %d tokens."
                     : "Scores on a probe of %d tokens: BOS, then random ordinary tokens, then the same again.", n);
            const char *note_ptrs[1] = {note};
            as_table_fig fig = {.v = scores, .rows = cfg->n_layer, .cols = cfg->n_head, .n_mats = n_scores,
                                .mat_titles = names, .title = title, .cbar_label = "score", .what = desc,
                                .notes = note_ptrs, .n_notes = 1};
            rc = as_cmd_export_table(c, o.path, o.at + 1, &fig);
        }
        free(scores);
    }
    return rc;
}

/* First occurrence of ids[0, m) in tokens[0, n), or -1. */
static int find_span(const int32_t *tokens, int n, const int32_t *ids, int m)
{
    for (int p = 0; m > 0 && p + m <= n; p++)
        if (!memcmp(tokens + p, ids, (size_t)m * sizeof *ids))
            return p;
    return -1;
}

/* `retrieval NEEDLE [threshold=X]`: every head's copy score (Wu et al.
 * 2024) for the needle's tokens said again after its first occurrence in
 * the computed context (as_retrieval_score). */
int as_cmd_retrieval(cmd_ctx *c)
{
    as_session *s = c->s;
    const as_config *cfg = &s->model->cfg;
    double threshold = 0.1;
    const char *usage = "usage: retrieval NEEDLE [threshold=X] (NEEDLE a text of the context, quoted when it has "
                        "spaces, said again later in it)";
    if (c->argc < 2)
        return as_error_set(c->err, "%s", usage);
    const char *rest = c->rest;
    char *thr = c->argc >= 3 ? strstr(c->rest, "threshold=") : NULL;
    if (thr && !strncmp(c->argv[c->argc - 1], "threshold=", 10)) {
        if (as_cmd_parse_float(c->argv[c->argc - 1] + 10, 0, 1, "threshold", &threshold, c->err))
            return AS_ERR;
    } else
        thr = NULL;
    if (s->prog->streams[s->prog->out_stream].input != AS_INPUT_TOKENS || s->prog->source_stream >= 0)
        return as_error_set(c->err, "retrieval scores a decoder's self-attention over a text context; %s has %s",
                            cfg->name, s->prog->source_stream >= 0 ? "two streams (an encoder-decoder)"
                                                                     : "no tokens (image patches)");
    char *line = strdup(rest), *text = NULL;
    if (!line)
        return as_error_set(c->err, "out of memory");
    if (thr) {
        line[thr - rest] = '\0';
        size_t l = strlen(line);
        while (l && (line[l - 1] == ' ' || line[l - 1] == '\t'))
            line[--l] = '\0';
    }
    text = as_cmd_text_arg(line, c->err);
    free(line);
    if (!text)
        return AS_ERR;
    const int32_t *tokens = s->it->out->tokens;
    int n = s->it->out->n_done;
    if (n < 2) {
        free(text);
        return as_error_set(c->err, "retrieval needs a computed context (prompt with the needle planted and said "
                                    "again, then finish or gen)");
    }
    /* The needle as the context spells it: the text's tokens, else with a
     * space in front (a word inside a sentence). */
    int32_t *ids = NULL;
    size_t m = 0;
    int p = -1;
    for (int tries = 0; tries < 2 && p < 0; tries++) {
        char *t = malloc(strlen(text) + 2);
        if (!t) {
            free(text);
            return as_error_set(c->err, "out of memory");
        }
        snprintf(t, strlen(text) + 2, "%s%s", tries ? " " : "", text);
        free(ids);
        ids = NULL;
        int rc = as_tokenizer_tokenize(s->model->tok, t, strlen(t), 0, &ids, &m, c->err);
        free(t);
        if (rc) {
            free(text);
            return AS_ERR;
        }
        p = find_span(tokens, n, ids, (int)m);
    }
    if (p < 0 || m == 0) {
        int rc = as_error_set(c->err, "retrieval: the needle \"%s\" (%zu tokens) is not in the context's %d computed "
                              "tokens (`tokens` lists them)", text, m, n);
        free(ids);
        free(text);
        return rc;
    }
    free(ids);
    for (int l = 0; l < cfg->n_layer; l++) {
        int hook = as_program_pattern(s->prog, l, AS_PICK_SELF);
        int rc = AS_OK;
        if (hook >= 0 && !as_capture_has(s->cap, hook))
            rc = as_error_set(c->err, "retrieval needs every layer's attention pattern, but %s is not captured%s%s",
                              s->prog->hooks[hook].name, s->cap->dropped[0] ? ": " : "", s->cap->dropped);
        else if (hook >= 0)
            rc = as_cmd_check_finite(s, s->cap, hook, 0, n, "retrieval: no scores", c->err);
        if (rc) {
            free(text);
            return AS_ERR;
        }
    }
    int counted = 0;
    as_retrieval_score(s->cap, as_program_pattern(s->prog, 0, AS_PICK_SELF), 0, tokens, n, p, (int)m, &counted);
    if (counted == 0) {
        int rc = as_error_set(c->err, "retrieval: the needle \"%s\" is at positions %d-%d, but no later token is "
                              "one of its tokens: nothing is copied to score (say the needle again after it)",
                              text, p, p + (int)m - 1);
        free(text);
        return rc;
    }
    fprintf(s->out, "retrieval scores (Wu et al. 2024) for the needle \"%s\" at positions %d-%d (%zu tokens), over "
                    "the %d later queries whose next token is one of the needle's: the share whose top key is that "
                    "token inside the needle; * marks scores >= %.2f\nlayer",
            text, p, p + (int)m - 1, m, counted, threshold);
    for (int h = 0; h < cfg->n_head; h++)
        fprintf(s->out, "\tH%d", h);
    fprintf(s->out, "\n");
    for (int l = 0; l < cfg->n_layer; l++) {
        int hook = as_program_pattern(s->prog, l, AS_PICK_SELF);
        fprintf(s->out, "%d", l);
        for (int h = 0; h < cfg->n_head; h++) {
            double v = hook >= 0 ? as_retrieval_score(s->cap, hook, h, tokens, n, p, (int)m, NULL) : NAN;
            fprintf(s->out, "\t%.3f%s", v, v >= threshold ? "*" : "");
        }
        fprintf(s->out, "\n");
    }
    free(text);
    return AS_OK;
}

/* `export distance FILE`: each head's mean attention distance (as
 * `heads` prints it: sum_k w_qk |q - k| averaged over queries q >= 1) on
 * the computed context, layers x heads with each layer's mean as a last
 * column, on a sequential scale from 0 to the largest. */
int as_cmd_export_distance(cmd_ctx *c)
{
    as_session *s = c->s;
    const as_config *cfg = &s->model->cfg;
    if (c->argc < 3)
        return as_error_set(c->err, "usage: export distance FILE.png|FILE.svg|FILE.pdf [key=value ...]");
    if (s->prog->streams[s->prog->out_stream].input != AS_INPUT_TOKENS)
        return as_error_set(c->err, "export distance measures attention over a text context; %s reads image patches",
                            cfg->name);
    int n = s->it->out->n_done;
    if (n < 2)
        return as_error_set(c->err, "export distance needs a computed context of at least 2 tokens (prompt, then "
                                    "finish)");
    int L = cfg->n_layer, H = cfg->n_head, cols = H + 1;
    float *v = malloc((size_t)L * (size_t)cols * sizeof *v);
    unsigned char *mk = calloc((size_t)L * (size_t)cols, 1);
    char **labels = calloc((size_t)cols, sizeof *labels);
    char names[64][16];
    int rc = AS_ERR;
    if (!v || !mk || !labels || H > 63) {
        rc = as_error_set(c->err, H > 63 ? "export distance draws at most 63 heads (%d here)" : "out of memory", H);
        goto out;
    }
    float most = 0;
    for (int l = 0; l < L; l++) {
        int hook = as_program_pattern(s->prog, l, AS_PICK_SELF);
        if (hook < 0 || !as_capture_has(s->cap, hook)) {
            rc = as_error_set(c->err, "export distance needs every layer's attention pattern, but %s%s%s",
                              hook < 0 ? "a layer has none" : s->prog->hooks[hook].name,
                              hook >= 0 ? " is not captured: " : "", hook >= 0 ? s->cap->dropped : "");
            goto out;
        }
        if (as_cmd_check_finite(s, s->cap, hook, 0, n, "export distance: no figure", c->err))
            goto out;
        double sum = 0;
        for (int h = 0; h < H; h++) {
            double d = as_head_stat_of(s->cap, hook, h, n, AS_STAT_DISTANCE);
            v[(size_t)l * cols + h] = (float)d;
            sum += d;
            most = d > most ? (float)d : most;
        }
        v[(size_t)l * cols + H] = (float)(sum / H);
    }
    for (int h = 0; h < cols; h++) {
        snprintf(names[h], sizeof names[h], h < H ? "%d" : "mean", h);
        labels[h] = names[h];
    }
    char note[200], title[64], what[96];
    snprintf(note, sizeof note, "Mean attention distance: sum over keys of weight x |query - key|, in positions, "
             "averaged over queries 1 to %d of the context (%d tokens); the last column is the layer's mean.", n - 1, n);
    snprintf(title, sizeof title, "Mean attention distance by layer and head");
    snprintf(what, sizeof what, "mean attention distance, %d layers x %d heads", L, H);
    const char *notes[1] = {note};
    as_table_fig fig = {.v = v, .rows = L, .cols = cols, .n_mats = 1, .col_labels = (const char *const *)labels,
                        .col_axis = "head", .title = title, .cbar_label = "distance (positions)", .what = what,
                        .notes = notes, .n_notes = 1, .vmax = most > 0 ? most : 1};
    rc = as_cmd_export_table(c, c->argv[2], 3, &fig);
out:
    free(v);
    free(mk);
    free(labels);
    return rc;
}
