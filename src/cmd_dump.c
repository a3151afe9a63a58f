/* `dump all DIR`: every captured hook as a .npy array in DIR, and
 * index.json saying what each file holds and what the context was (called
 * by `dump`). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "attnscope/file.h"
#include "attnscope/npy.h"
#include "export_internal.h"

static void json_string(FILE *o, const char *s)
{
    fputc('"', o);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            fprintf(o, "\\%c", ch);
        else if (ch < 0x20)
            fprintf(o, "\\u%04x", ch);
        else
            fputc(ch, o);
    }
    fputc('"', o);
}

typedef struct index_job {
    as_session *s;
    const int *hooks;
    int n;
} index_job;

static int write_index(void *ctx, void *stream, as_error *err)
{
    const index_job *j = ctx;
    const as_session *s = j->s;
    FILE *o = stream;
    fprintf(o, "{\n  \"format\": \"attnscope capture\",\n  \"attnscope\": ");
    json_string(o, AS_VERSION);
    fprintf(o, ",\n  \"model\": ");
    json_string(o, s->model->cfg.name);
    fprintf(o, ",\n  \"architecture\": ");
    json_string(o, as_model_arch_name(s->model));
    char *text = as_export_context_text(s, 0, s->it->out->n_tokens);
    fprintf(o, ",\n  \"text\": ");
    json_string(o, text ? text : "");
    free(text);
    fprintf(o, ",\n  \"n_prompt\": %d,\n  \"positions\": [", s->it->out->n_prompt);
    /* what stands at each position, as the views label it: a token, or a name (CLS, r3c5) */
    for (int i = 0; i < s->it->out->n_tokens; i++) {
        char label[256];
        as_cmd_position_label(s, i, label, sizeof label);
        fprintf(o, "%s", i ? ", " : "");
        json_string(o, label);
    }
    fprintf(o, "]");
    /* An image's positions are no tokens: it has neither ids nor pieces. */
    if (s->prog->streams[s->prog->out_stream].input == AS_INPUT_TOKENS) {
        fprintf(o, ",\n  \"tokens\": [");
        for (int i = 0; i < s->it->out->n_tokens; i++)
            fprintf(o, "%s%d", i ? ", " : "", s->it->out->tokens[i]);
        fprintf(o, "],\n  \"pieces\": [");
        for (int i = 0; i < s->it->out->n_tokens; i++) {
            char piece[256];
            as_cmd_piece(s, s->it->out->tokens[i], piece, sizeof piece);
            fprintf(o, "%s", i ? ", " : "");
            json_string(o, piece);
        }
        fprintf(o, "]");
    }
    /* An encoder-decoder's source: the positions of the encoder stream's hooks. */
    int src = s->prog->source_stream;
    if (src >= 0) {
        const as_stream_state *st = &s->it->st[src];
        char *stext = as_export_source_text(s);
        fprintf(o, ",\n  \"source_text\": ");
        json_string(o, stext ? stext : "");
        free(stext);
        fprintf(o, ",\n  \"source_tokens\": [");
        for (int i = 0; i < st->n_tokens; i++)
            fprintf(o, "%s%d", i ? ", " : "", st->tokens[i]);
        fprintf(o, "],\n  \"source_pieces\": [");
        for (int i = 0; i < st->n_tokens; i++) {
            char piece[256];
            as_cmd_piece(s, st->tokens[i], piece, sizeof piece);
            fprintf(o, "%s", i ? ", " : "");
            json_string(o, piece);
        }
        fprintf(o, "]");
    }
    fprintf(o, ",\n  \"hooks\": [\n");
    for (int i = 0; i < j->n; i++) {
        int h = j->hooks[i], n = s->cap->filled[h];
        size_t shape[3];
        int nd = as_capture_shape(s->cap, h, n, shape);
        char file[96];
        snprintf(file, sizeof file, "%s.npy", s->prog->hooks[h].name);
        fprintf(o, "    {\"name\": ");
        json_string(o, s->prog->hooks[h].name);
        fprintf(o, ", \"file\": ");
        json_string(o, file);
        fprintf(o, ", \"dtype\": \"%s\", \"positions\": %d, \"shape\": [",
                s->prog->hooks[h].dtype == AS_DT_I32 ? "int32" : "float32", n);
        for (int d = 0; d < nd; d++)
            fprintf(o, "%s%zu", d ? ", " : "", shape[d]);
        fprintf(o, "]");
        if (s->prog->n_streams > 1) { /* whose positions: an encoder-decoder's source or target */
            fprintf(o, ", \"stream\": ");
            json_string(o, s->prog->streams[s->prog->hooks[h].stream].name);
        }
        fprintf(o, "}%s\n", i + 1 < j->n ? "," : "");
    }
    fprintf(o, "  ],\n  \"not_captured\": [");
    int k = 0;
    for (int h = 0; h < s->prog->n_hooks; h++)
        if (!as_capture_has(s->cap, h)) {
            fprintf(o, "%s", k++ ? ", " : "");
            json_string(o, s->prog->hooks[h].name);
        }
    fprintf(o, "]\n}\n");
    return ferror(o) ? as_error_set(err, "write error") : AS_OK;
}

int as_cmd_dump_all(cmd_ctx *c)
{
    as_session *s = c->s;
    if (c->argc != 3)
        return as_error_set(c->err, "usage: dump all DIR (one .npy per captured hook, plus index.json)");
    const char *dir = c->argv[2];
    if (as_cmd_require_tokens(s, c->err))
        return AS_ERR;
    struct stat sb;
    if (mkdir(dir, 0777) && errno != EEXIST)
        return as_error_set(c->err, "%s: cannot create the directory: %s", dir, strerror(errno));
    if (stat(dir, &sb) || !S_ISDIR(sb.st_mode))
        return as_error_set(c->err, "%s: not a directory", dir);
    int *hooks = malloc((size_t)s->prog->n_hooks * sizeof *hooks), n = 0;
    float *data = NULL;
    size_t data_cap = 0;
    size_t plen = strlen(dir) + 128;
    char *path = malloc(plen);
    int rc = AS_OK;
    if (!hooks || !path) {
        rc = as_error_set(c->err, "out of memory");
        goto out;
    }
    for (int h = 0; h < s->prog->n_hooks && rc == AS_OK; h++) {
        if (as_cmd_interrupted(s)) {
            rc = as_error_set(c->err, "interrupted (the files written so far stay)");
            break;
        }
        int npos = s->cap->filled[h];
        if (!as_capture_has(s->cap, h) || npos == 0)
            continue;
        size_t shape[3], count = as_capture_count(s->cap, h, npos);
        int nd = as_capture_shape(s->cap, h, npos, shape);
        if (count > data_cap) {
            float *d = realloc(data, count * sizeof *d);
            if (!d) {
                rc = as_error_set(c->err, "out of memory (%zu floats)", count);
                break;
            }
            data = d, data_cap = count;
        }
        as_capture_copy(s->cap, h, npos, data);
        snprintf(path, plen, "%s/%s.npy", dir, s->prog->hooks[h].name);
        rc = as_npy_write(path, as_cmd_hook_npy(s, h, data, count), data, shape, nd, c->err);
        hooks[n++] = h;
    }
    if (rc == AS_OK && n == 0)
        rc = as_error_set(c->err, "nothing captured yet: run the pass first (`finish`)");
    if (rc == AS_OK) {
        index_job j = {s, hooks, n};
        snprintf(path, plen, "%s/index.json", dir);
        rc = as_write_atomic(path, write_index, &j, c->err);
    }
    if (rc == AS_OK)
        fprintf(s->out, "wrote %s: %d arrays (.npy) and index.json over %d tokens\n", dir, n, s->it->out->n_tokens);
out:
    free(hooks);
    free(data);
    free(path);
    return rc;
}
