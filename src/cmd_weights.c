/* The model file's tensors: `weights [PATTERN]` (statistics per tensor,
 * the health of a quantized tensor's block scales, a histogram when one
 * matches) and `diff OTHER.gguf` (relative differences per tensor and per
 * layer). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/instruments.h"
#include "attnscope/hf.h"
#include "session_internal.h"

/* A tensor name from the file, escaped: a hostile name must not drive the terminal. */
static const char *shown_name(const char *name, char *buf, size_t cap)
{
    as_format_piece(name, strlen(name), buf, cap);
    return buf;
}

/* Block types have scales to report; their rows gain columns (batch
 * output is a contract: the other rows and the columns before stay). */
static bool has_scale_columns(const as_gguf_tensor *t)
{
    return as_ggml_type_supported(t->type) && as_ggml_has_scales(t->type);
}

static void print_weight_line(as_session *s, const as_gguf_tensor *t, const as_weight_stats *st)
{
    char nm[256];
    fprintf(s->out, "%s\t%s\t%.4g\t%.4g\t%.4g\t%.4g\t%.4g\t%llu\t%llu\t%.4f", shown_name(t->name, nm, sizeof nm),
            as_ggml_type_name(t->type),
            st->min, st->max, st->mean, st->std, st->norm, (unsigned long long)st->nan, (unsigned long long)st->inf,
            st->n ? (double)st->zeros / (double)st->n : 0.0);
    const as_block_scan *b = &st->scales;
    if (has_scale_columns(t) && b->blocks) {
        /* %g, not %f: one corrupt block in a million must not print as 0 */
        fprintf(s->out, "\t%llu\t%.4g\t%.4g\t%.4g\t", (unsigned long long)b->blocks,
                (double)b->zero / (double)b->blocks, (double)b->bad / (double)b->blocks, (double)b->max_d);
        if (b->bad)
            fprintf(s->out, "%llu", (unsigned long long)b->first_bad);
        else
            fputs("-", s->out);
    }
    fputs("\n", s->out);
}

/* For the one tensor shown in full: its scales in words. */
static void print_scales(as_session *s, const as_gguf_tensor *t, const as_block_scan *b)
{
    const as_ggml_traits *tr = as_ggml_traits_of(t->type);
    fprintf(s->out, "scales of %llu %s blocks: %llu zero, %llu NaN or Inf, largest |d| %.4g\n",
            (unsigned long long)b->blocks, tr->name, (unsigned long long)b->zero, (unsigned long long)b->bad,
            (double)b->max_d);
    if (b->bad) {
        uint64_t per_row = t->ne[0] / tr->block_elems, col = b->first_bad % per_row * tr->block_elems;
        fprintf(s->out, "first corrupt block: %llu (row %llu, columns %llu..%llu), scale %g\n",
                (unsigned long long)b->first_bad, (unsigned long long)(b->first_bad / per_row),
                (unsigned long long)col, (unsigned long long)(col + tr->block_elems - 1), (double)b->first_bad_scale);
    }
}

static void print_histogram(as_session *s, const as_weight_stats *st)
{
    uint64_t most = 1;
    for (int b = 0; b < AS_HIST_BINS; b++)
        most = st->hist[b] > most ? st->hist[b] : most;
    double w = (st->max - st->min) / AS_HIST_BINS;
    for (int b = 0; b < AS_HIST_BINS; b++) {
        int bar = (int)(40.0 * (double)st->hist[b] / (double)most + 0.5);
        fprintf(s->out, "  [%+10.4g, %+10.4g) %10llu ", st->min + b * w, st->min + (b + 1) * w,
                (unsigned long long)st->hist[b]);
        for (int k = 0; k < bar; k++)
            fputs("#", s->out);
        fputs("\n", s->out);
    }
}

int as_cmd_weights(cmd_ctx *c)
{
    as_session *s = c->s;
    const as_gguf *g = s->model->gguf;
    const char *pattern = c->argc > 1 ? c->argv[1] : "*";
    if (!g)
        return as_error_set(c->err, "weights reads GGUF files; this model was not loaded from one");
    int matched = 0;
    const as_gguf_tensor *only = NULL;
    as_weight_stats last;
    char nm[256];
    bool scale_columns = false;
    for (uint64_t i = 0; i < g->n_tensors; i++)
        scale_columns |= as_hook_name_match(pattern, g->tensors[i].name) && has_scale_columns(&g->tensors[i]);
    fprintf(s->out, "tensor\ttype\tmin\tmax\tmean\tstd\tnorm\tnan\tinf\tzeros%s\n",
            scale_columns ? "\tblocks\tzero_scale\tbad_scale\tmax_scale\tfirst_bad" : "");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        if (!as_hook_name_match(pattern, t->name))
            continue;
        if (as_cmd_interrupted(s))
            return as_error_set(c->err, "interrupted after %d tensor%s", matched, matched == 1 ? "" : "s");
        if (!as_ggml_type_supported(t->type)) {
            fprintf(s->out, "%s\t%s\t(cannot read this type yet)\n", shown_name(t->name, nm, sizeof nm),
                    as_ggml_type_name(t->type));
            continue;
        }
        if (as_weight_stats_of(t, &last, c->err))
            return AS_ERR;
        print_weight_line(s, t, &last);
        only = t;
        matched++;
    }
    if (!matched)
        return as_error_set(c->err, "no tensor matches '%s' (`info` lists them)", pattern);
    if (matched == 1) {
        fprintf(s->out, "histogram of %s:\n", shown_name(only->name, nm, sizeof nm));
        print_histogram(s, &last);
        if (has_scale_columns(only))
            print_scales(s, only, &last.scales);
    }
    return AS_OK;
}

int as_cmd_diff(cmd_ctx *c)
{
    as_session *s = c->s;
    const as_gguf *a = s->model->gguf;
    if (c->argc != 2)
        return as_error_set(c->err, "usage: diff OTHER.gguf");
    if (!a)
        return as_error_set(c->err, "diff compares GGUF files; this model was not loaded from one");
    as_gguf *b;
    if (as_hf_open_any(&b, c->argv[1], c->err)) /* a GGUF file or a Hugging Face directory */
        return AS_ERR;
    int L = s->model->cfg.n_layer, differ = 0, rc = AS_OK;
    char nm[256];
    double *d2 = calloc((size_t)L + 1, sizeof *d2), *a2 = calloc((size_t)L + 1, sizeof *a2);
    fprintf(s->out, "tensor\trelative difference\t|a-b|\t|a|\n");
    for (uint64_t i = 0; d2 && a2 && rc == AS_OK && i < a->n_tensors; i++) {
        const as_gguf_tensor *ta = &a->tensors[i], *tb = as_gguf_tensor_find(b, ta->name);
        double rel, dn, na;
        if (!tb) {
            fprintf(s->out, "%s\tonly in %s\n", shown_name(ta->name, nm, sizeof nm), a->path);
            differ++;
            continue;
        }
        if (!as_ggml_type_supported(ta->type) || !as_ggml_type_supported(tb->type))
            continue;
        if ((rc = as_weight_diff(ta, tb, &rel, &dn, &na, c->err)))
            break;
        int l = as_model_tensor_block(s->model, ta->name);
        d2[l < 0 || l >= L ? L : l] += dn * dn;
        a2[l < 0 || l >= L ? L : l] += na * na;
        if (dn > 0) {
            fprintf(s->out, "%s\t%.3e\t%.4g\t%.4g\n", shown_name(ta->name, nm, sizeof nm), rel, dn, na);
            differ++;
        }
    }
    for (uint64_t i = 0; rc == AS_OK && i < b->n_tensors; i++)
        if (!as_gguf_tensor_find(a, b->tensors[i].name)) {
            fprintf(s->out, "%s\tonly in %s\n", shown_name(b->tensors[i].name, nm, sizeof nm), b->path);
            differ++;
        }
    if (rc == AS_OK && d2 && a2) {
        fprintf(s->out, "%d tensor%s differ\nper layer\trelative difference\n", differ, differ == 1 ? "" : "s");
        for (int l = 0; l <= L; l++) {
            if (l < L)
                fprintf(s->out, "%d", l);
            fprintf(s->out, "%s\t%.3e\n", l < L ? "" : "other", a2[l] > 0 ? sqrt(d2[l] / a2[l]) : 0.0);
        }
    }
    free(d2);
    free(a2);
    as_gguf_close(b);
    return rc;
}
