/* Direct logit attribution: `dla TOKEN [POS]`, each head's, MLP's and
 * bias's share of a token's logit, as a table, a .npy or a figure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/instruments.h"
#include "session_internal.h"

static int by_magnitude(const void *a, const void *b)
{
    double x = fabs(((const as_dla_term *)a)->value), y = fabs(((const as_dla_term *)b)->value);
    return (x < y) - (x > y);
}

int as_cmd_dla(cmd_ctx *c)
{
    as_session *s = c->s;
    int32_t tok;
    int pos = s->prog->logits_pos >= 0 ? s->prog->logits_pos : s->it->out->n_done - 1;
    if (as_cmd_lens_applies(s, true, c->err))
        return AS_ERR;
    as_out_arg o = as_cmd_output_arg(c, 2);
    if (o.argc < 2 || o.argc > 3 || (o.npy && o.at + 1 < c->argc))
        return as_error_set(c->err, "usage: dla TOKEN [POS] [FILE.npy|FILE.png|FILE.svg|FILE.pdf [key=value ...]]");
    if (as_cmd_parse_token(s, c->argv[1], &tok, c->err) ||
        (o.argc == 3 && as_cmd_parse_pos(s, c->argv[2], &pos, c->err)))
        return AS_ERR;
    if (pos < 0)
        return as_error_set(c->err, "no position is computed yet (`finish` runs the pass)");
    as_dla d;
    if (as_dla_compute(s->cap, s->it->out->tokens, pos, tok, &d, c->err))
        return AS_ERR;
    double sum = d.constant;
    for (int i = 0; i < d.n_terms; i++)
        sum += d.terms[i].value;
    int rc = AS_OK;
    char piece[64];
    as_cmd_label(s, tok, 0, piece, sizeof piece);
    if (o.path) {
        /* [n_layer + 1, n_head + 2]: layer l's heads, then its attention
         * output bias and its MLP; the last row holds the embeddings and
         * the final norm's bias. The whole array sums to the logit. */
        const as_config *cfg = &s->model->cfg;
        int W = cfg->n_head + 2;
        float *t = calloc((size_t)(cfg->n_layer + 1) * (size_t)W, sizeof *t);
        if (!t) {
            as_dla_free(&d);
            return as_error_set(c->err, "out of memory");
        }
        for (int i = 0; i < d.n_terms; i++) {
            const as_dla_term *e = &d.terms[i];
            int col = e->head >= 0 ? e->head : strstr(e->name, "mlp") ? W - 1 : W - 2;
            t[e->layer < 0 ? (size_t)cfg->n_layer * W : (size_t)e->layer * W + (size_t)col] += (float)e->value;
        }
        t[(size_t)cfg->n_layer * W + 1] = (float)d.constant;
        size_t shape[2] = {(size_t)cfg->n_layer + 1, (size_t)W};
        if (o.npy) {
            rc = as_cmd_write_npy(s, o.path, AS_NPY_F32, t, shape, 2,
                                  "rows: layers then [embeddings, final norm bias]; columns: heads, attention bias, MLP",
                           c->err);
        } else {
            /* The figure: the layers' rows (heads, attention bias, MLP). */
            char(*names)[16] = calloc((size_t)W, sizeof *names), title[160], desc[96];
            const char **labels = calloc((size_t)W, sizeof *labels);
            for (int j = 0; names && labels && j < W; j++) {
                snprintf(names[j], sizeof names[j], j < cfg->n_head ? "H%d" : j == cfg->n_head ? "bias" : "MLP", j);
                labels[j] = names[j];
            }
            char label[64];
            as_cmd_token_label(s, tok, label, sizeof label);
            snprintf(title, sizeof title, "Direct logit attribution of %s at position %d", label, pos);
            snprintf(desc, sizeof desc, "direct logit attribution, %d layers x %d heads + bias + MLP", cfg->n_layer,
                     cfg->n_head);
            char notes[2][512];
            double embed = 0;
            for (int i = 0; i < d.n_terms; i++)
                embed += d.terms[i].layer < 0 ? d.terms[i].value : 0;
            snprintf(notes[0], sizeof notes[0], "Metric: the logit of %s (id %d) at position %d, %.3f: each cell is a "
                     "component's output through the final norm's scale at that position, dotted with the token's "
                     "unembedding.", label, tok, pos, d.logit);
            snprintf(notes[1], sizeof notes[1], "Not drawn: the embeddings (%+.3f) and the final norm's bias (%+.3f); "
                     "with them the terms sum to %.3f.", embed, d.constant, sum);
            const char *note_ptrs[2] = {notes[0], notes[1]};
            as_table_fig fig = {.v = t, .rows = cfg->n_layer, .cols = W, .n_mats = 1, .col_labels = labels,
                                .col_axis = "component", .diverging = true, .title = title,
                                .cbar_label = "contribution to the logit", .what = desc, .notes = note_ptrs,
                                .n_notes = 2};
            rc = names && labels ? as_cmd_export_table(c, o.path, o.at + 1, &fig)
                                 : as_error_set(c->err, "out of memory");
            free(names);
            free(labels);
        }
        free(t);
    }
    qsort(d.terms, (size_t)d.n_terms, sizeof *d.terms, by_magnitude);
    fprintf(s->out, "direct logit attribution of %s (id %d) at position %d\ncomponent\tcontribution\n", piece, tok, pos);
    for (int i = 0; i < d.n_terms; i++)
        fprintf(s->out, "%s\t%+.4f\n", d.terms[i].name, d.terms[i].value);
    fprintf(s->out, "final norm bias\t%+.4f\nsum\t%+.4f\nlogit\t%+.4f\n", d.constant, sum, d.logit);
    as_dla_free(&d);
    return rc;
}
