/* Instrument tables as figures: a layer × column table (head scores,
 * direct logit attribution, a patching sweep, expert load) as a heatmap,
 * for the commands that take FILE.png|FILE.svg|FILE.pdf (as_table_fig in
 * session_internal.h). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_internal.h"

int as_cmd_export_table_check(cmd_ctx *c, const char *path, int opt_first)
{
    return as_export_check(c, path, opt_first, OPT_FIG);
}

int as_cmd_export_table(cmd_ctx *c, const char *path, int opt_first, const as_table_fig *t)
{
    as_session *s = c->s;
    export_fig fig;
    if (as_export_begin(&fig, c, path, opt_first, OPT_FIG))
        return AS_ERR;
    int n_mats = t->n_mats > 0 ? t->n_mats : 1;
    double a = 1;
    if (t->diverging) {
        fig.o.st.cmap = AS_CMAP_RDBU;
        for (long i = 0; i < (long)n_mats * t->rows * t->cols; i++)
            if (isfinite(t->v[i]) && fabs(t->v[i]) > a)
                a = fabs(t->v[i]);
    }
    char **rows = calloc((size_t)t->rows, sizeof *rows);
    char **cols = t->by_position ? as_export_position_labels(s, 0, t->cols, false) : calloc((size_t)t->cols, sizeof *cols);
    as_fig_matrix *mats = calloc((size_t)n_mats, sizeof *mats);
    int rc = AS_ERR;
    if (!rows || !cols || !mats) {
        as_error_set(c->err, "out of memory");
        goto out;
    }
    for (int i = 0; i < t->rows; i++)
        if (!(rows[i] = t->row_labels ? strdup(t->row_labels[i]) : malloc(16)) ||
            (!t->row_labels && snprintf(rows[i], 16, "%d", i) < 0))
            goto oom;
    for (int j = 0; !t->by_position && j < t->cols; j++)
        if (!(cols[j] = t->col_labels ? strdup(t->col_labels[j]) : malloc(16)) ||
            (!t->col_labels && snprintf(cols[j], 16, "%d", j) < 0))
            goto oom;
    for (int i = 0; i < n_mats; i++)
        mats[i] = (as_fig_matrix){t->v + (size_t)i * (size_t)t->rows * (size_t)t->cols,
                                  t->masked ? t->masked + (size_t)i * (size_t)t->rows * (size_t)t->cols : NULL, NULL,
                                  t->cell_text ? t->cell_text + (size_t)i * (size_t)t->rows * (size_t)t->cols : NULL};
    as_fig_heat h = {t->rows, t->cols, (const char *const *)rows, (const char *const *)cols,
                     t->row_axis ? t->row_axis : "layer",
                     t->col_axis ? t->col_axis : t->by_position ? "position" : "head", t->cbar_label, n_mats, mats,
                     t->mat_titles, n_mats > 1 ? 0 : 1, n_mats > 1 ? 0 : 1, NULL, NULL, NULL, NULL,
                     t->diverging ? (float)-a : 0, t->diverging ? (float)a : t->vmax > 0 ? t->vmax : 0, t->masked_label};
    as_export_title(&fig, "%s", t->title);
    for (int i = 0; i < t->n_notes; i++)
        as_export_note(&fig, "%s", t->notes[i]);
    rc = as_export_write(&fig, EXPORT_HEATMAP, &h, 0, s->it->out->n_tokens, t->what);
    goto out;
oom:
    as_error_set(c->err, "out of memory");
out:
    as_export_free_labels(rows, t->rows);
    as_export_free_labels(cols, t->cols);
    free(mats);
    return rc;
}
