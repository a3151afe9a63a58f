/* `export attn`, `export grid` and `export lines`: attention patterns as
 * heatmaps (one head, every head of a layer, every layer and head; an
 * encoder-decoder's cross-attention or encoder self-attention with site=)
 * and bertviz's head view, read through the capture's accessors. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export_internal.h"

/* One head's pattern over positions [a, b) through the capture's
 * accessors: the keys each query sees (causal, a window, or all of them),
 * the rest masked. */
static void head_matrix_keys(const as_session *s, int hook, int head, int a, int b, int ka, int kb, float *v,
                             unsigned char *mk)
{
    int m = b - a, mkeys = kb - ka;
    for (int q = 0; q < m; q++) {
        int k0, k1, nk;
        as_capture_attn_visible(s->cap, hook, a + q, &k0, &k1);
        const float *row = as_capture_attn_row(s->cap, hook, head, a + q, &nk);
        for (int k = 0; k < mkeys; k++) {
            int key = ka + k;
            bool seen = key >= k0 && key < k1 && key < nk;
            v[q * mkeys + k] = seen ? row[key] : 0;
            mk[q * mkeys + k] = !seen;
        }
    }
}

/* Queries and keys over the same positions [a, b) (a self-attention site). */
static void head_matrix(const as_session *s, int hook, int head, int a, int b, float *v, unsigned char *mk)
{
    head_matrix_keys(s, hook, head, a, b, a, b, v, mk);
}

/* AS_ERR naming the first non-finite weight of a head's matrix as
 * head_matrix_keys built it (m queries from a, mkeys keys from ka; a
 * hidden key is 0 there), else AS_OK. */
static int refuse_nonfinite_head(cmd_ctx *c, const char *what, int hook, int head, int a, int ka, const float *v,
                                 int m, int mkeys)
{
    for (int q = 0; q < m; q++)
        for (int k = 0; k < mkeys; k++)
            if (!isfinite(v[(size_t)q * mkeys + k])) {
                int len = as_capture_attn_keys(c->s->cap, hook, a + q);
                return as_cmd_refuse_at(c->s, c->s->cap, hook, a + q, head * len + ka + k, v[(size_t)q * mkeys + k],
                                        what, c->err);
            }
    return AS_OK;
}

static const char *const pick_name[] = {"self-attention", "cross-attention", "encoder self-attention"};

/* Positions every listed layer's pattern holds (the fewest), or AS_ERR;
 * the site each shows is `pick`'s. */
static int pattern_positions_at(as_session *s, const int *layers, int n_layers, int *hooks, as_site_pick pick,
                                as_error *err)
{
    int n = -1;
    for (int i = 0; i < n_layers; i++) {
        hooks[i] = as_program_pattern(s->prog, layers[i], pick);
        int got = hooks[i] >= 0 ? as_cmd_hook_positions(s, hooks[i], err)
                  : pick == AS_PICK_SELF ? as_error_set(err, "no attention pattern in layer %d", layers[i])
                                         : as_error_set(err, "%s has no %s in layer %d (site=%s is an encoder-decoder's)",
                                                        s->model->cfg.name, pick_name[pick], layers[i],
                                                        pick == AS_PICK_CROSS ? "cross" : "encoder");
        if (got < 0)
            return AS_ERR;
        n = n < 0 || got < n ? got : n;
    }
    return n;
}

static int pattern_positions(as_session *s, const int *layers, int n_layers, int *hooks, as_error *err)
{
    return pattern_positions_at(s, layers, n_layers, hooks, AS_PICK_SELF, err);
}

/* hide-bos drops the first key's column but keeps each row's weights as
 * they are: say so, and how much of a row went with it. */
static void note_hidden_bos(export_fig *e, const as_session *s, const int *hooks, int n_layers, int head, int heads,
                            int a, int b)
{
    if (a != 1)
        return;
    double most = 0;
    for (int l = 0; l < n_layers; l++)
        for (int h = 0; h < heads; h++)
            for (int q = a; q < b; q++) {
                int k0, k1;
                as_capture_attn_visible(s->cap, hooks[l], q, &k0, &k1);
                if (k0 == 0)
                    most = fmax(most, as_capture_attn_row(s->cap, hooks[l], head >= 0 ? head : h, q, NULL)[0]);
            }
    as_export_note(e, "hide-bos: the first token (position 0) is hidden and rows are not renormalised: a row shown "
                      "sums to 1 minus its weight on position 0 (up to %.2f here).", most);
}

typedef struct attn_job {
    int n_layers, layer0; /* layers [layer0, layer0 + n_layers) */
    int head;             /* -1: every head */
} attn_job;

/* Headers of panels: "head 0".. (one layer) or numbers with the axis named. */
static char **panel_names(const as_config *cfg, const attn_job *job)
{
    int n = cfg->n_head + job->n_layers;
    char **names = calloc((size_t)n, sizeof *names);
    for (int i = 0; names && i < n; i++) {
        char buf[32];
        if (i < cfg->n_head)
            snprintf(buf, sizeof buf, job->n_layers == 1 ? "head %d" : "%d", i);
        else
            snprintf(buf, sizeof buf, "%d", job->layer0 + i - cfg->n_head);
        if (!(names[i] = strdup(buf))) {
            as_export_free_labels(names, i);
            return NULL;
        }
    }
    return names;
}

/* Block labels "64-127" for positions [a, a + n) in blocks of z. */
static char **block_labels(int a, int n, int z, int nb)
{
    char **l = calloc((size_t)nb, sizeof *l);
    for (int i = 0; l && i < nb; i++) {
        char buf[48];
        int lo = a + i * z, hi = a + (i + 1) * z < a + n ? a + (i + 1) * z - 1 : a + n - 1;
        snprintf(buf, sizeof buf, "%d-%d", lo, hi);
        if (!(l[i] = strdup(buf))) {
            as_export_free_labels(l, i);
            return NULL;
        }
    }
    return l;
}

/* A vector figure (SVG, PDF) of more tokens than its width gives a point
 * each: the same matrices in blocks of z x z tokens (z = 2, 4, 8, ...,
 * the least that fits), each cell the largest weight of its block's
 * visible cells (cells=mean: their mean), masked where all are: the long
 * context whole, where a PNG would ask for a larger width or tokens=.
 * v, mk: h's n_mats matrices of m x mk_n; the first query a, key ka. */
static int write_blocks(export_fig *fig, as_fig_heat *h, const float *v, const unsigned char *mk, int m, int mk_n,
                        int a, int ka, int q_stream, int k_stream, const char *what)
{
    cmd_ctx *c = fig->c;
    int rc = AS_ERR, note = -1;
    (void)q_stream, (void)k_stream;
    /* at least 8 blocks along the longer side: a map of fewer is no map, and the width is what is wrong */
    for (int z = 2; z <= (m > mk_n ? m : mk_n) / 8; z *= 2) {
        int bq = (m + z - 1) / z, bk = (mk_n + z - 1) / z;
        size_t cells = (size_t)h->n_mats * (size_t)bq * (size_t)bk;
        float *bv = malloc(cells * sizeof *bv);
        unsigned char *bm = malloc(cells);
        as_fig_matrix *mats = calloc((size_t)h->n_mats, sizeof *mats);
        char **rl = block_labels(a, m, z, bq), **cl = block_labels(ka, mk_n, z, bk);
        if (!bv || !bm || !mats || !rl || !cl) {
            rc = as_error_set(c->err, "out of memory for %d patterns in blocks of %d", h->n_mats, z);
        } else {
            for (int t = 0; t < h->n_mats; t++)
                for (int i = 0; i < bq; i++)
                    for (int j = 0; j < bk; j++) {
                        const float *src = v + (size_t)t * (size_t)m * (size_t)mk_n;
                        const unsigned char *smk = mk + (size_t)t * (size_t)m * (size_t)mk_n;
                        double sum = 0, most = 0;
                        long count = 0;
                        for (int q = i * z; q < m && q < (i + 1) * z; q++)
                            for (int k = j * z; k < mk_n && k < (j + 1) * z; k++) {
                                size_t at = (size_t)q * (size_t)mk_n + (size_t)k;
                                if (smk[at])
                                    continue;
                                most = count == 0 || src[at] > most ? src[at] : most;
                                sum += src[at];
                                count++;
                            }
                        size_t o = (size_t)t * (size_t)bq * (size_t)bk + (size_t)i * (size_t)bk + (size_t)j;
                        bv[o] = count ? (float)(fig->o.cells_mean ? sum / (double)count : most) : 0;
                        bm[o] = count == 0;
                    }
            for (int t = 0; t < h->n_mats; t++) {
                size_t o = (size_t)t * (size_t)bq * (size_t)bk;
                mats[t] = (as_fig_matrix){.v = bv + o, .masked = bm + o};
            }
            as_fig_heat hb = *h;
            hb.rows = bq, hb.cols = bk, hb.mats = mats;
            hb.row_labels = (const char *const *)rl, hb.col_labels = (const char *const *)cl;
            char text[256], w2[160];
            snprintf(text, sizeof text, "Each cell is the %s weight of a block of %d x %d tokens (masked weights left "
                     "out): %d tokens are more than the width has a pixel each for at this dpi (cells=max|mean).",
                     fig->o.cells_mean ? "mean" : "largest", z, z, m > mk_n ? m : mk_n);
            if (note < 0) {
                note = fig->cp.c.n_notes;
                as_export_note(fig, "%s", text);
            } else
                snprintf(fig->cp.notes[note], sizeof fig->cp.notes[0], "%s", text);
            snprintf(w2, sizeof w2, "%s, %s of %dx%d blocks", what, fig->o.cells_mean ? "mean" : "max", z, z);
            /* the file's metadata: "Cells: max of 4x4 tokens" (z < 2^20 here) */
            char cell_meta[64];
            snprintf(cell_meta, sizeof cell_meta, "%s of %dx%d tokens", fig->o.cells_mean ? "mean" : "max", z & 0xFFFFF,
                     z & 0xFFFFF);
            int at = -1;
            for (int i = 0; i < fig->n_meta; i++)
                at = !strcmp(fig->meta_key[i], "Cells") ? i : at;
            if (at < 0 && fig->n_meta < EXPORT_MAX_META)
                as_export_meta(fig, "Cells", "%.28s", cell_meta);
            else if (at >= 0)
                snprintf(fig->meta_val[at], sizeof fig->meta_val[0], "%.28s", cell_meta);
            c->err->msg[0] = '\0';
            rc = as_export_write(fig, EXPORT_HEATMAP, &hb, a, a + m, w2);
        }
        free(bv);
        free(bm);
        free(mats);
        if (rl)
            as_export_free_labels(rl, bq);
        if (cl)
            as_export_free_labels(cl, bk);
        if (rc == AS_OK || !strstr(c->err->msg, "a pixel per cell"))
            return rc;
    }
    return rc;
}

/* An attention figure of one site kind (site=): queries are the site's
 * stream's positions [a, b); keys the same window on a self-attention
 * site, every position of the source on a cross-attention one (rows
 * labelled by the decoder's tokens, columns by the source's: the
 * alignment of a translation). */
static int export_attention(cmd_ctx *c, const attn_job *job, const char *path, int opt_first)
{
    as_session *s = c->s;
    const as_config *cfg = &s->model->cfg;
    export_fig fig;
    unsigned site_opt = s->prog->source_stream >= 0 ? OPT_SITE : 0;
    if (as_export_begin(&fig, c, path, opt_first,
                        OPT_FIG | OPT_CMAP | OPT_SCALE | OPT_HIDE_BOS | OPT_TOKENS | OPT_CELLS | site_opt))
        return AS_ERR;
    bool cross = fig.o.site == AS_PICK_CROSS;
    if (cross && fig.o.hide_bos)
        return as_error_set(c->err, "hide-bos applies to self-attention: a cross-attention figure shows every "
                            "source position");
    attn_job all = *job;
    /* `grid all`: every block the site's stack has (an encoder-decoder's two stacks may differ in depth) */
    while (all.layer0 == 0 && all.n_layers == cfg->n_layer && all.n_layers > 1 &&
           as_program_pattern(s->prog, all.n_layers - 1, fig.o.site) < 0)
        all.n_layers--;
    if (all.n_layers != job->n_layers && all.n_layers < cfg->n_layer)
        job = &all;
    int layers[256], hooks[256], a, b;
    if (job->n_layers > 256)
        return as_error_set(c->err, "too many layers for one figure (%d)", job->n_layers);
    for (int i = 0; i < job->n_layers; i++)
        layers[i] = job->layer0 + i;
    int qs = as_program_pick_stream(s->prog, fig.o.site);
    int n = pattern_positions_at(s, layers, job->n_layers, hooks, fig.o.site, c->err);
    if (n < 0 || as_export_window_in(s, qs, &fig.o, n, &a, &b, c->err))
        return AS_ERR;
    const as_attn *site = as_program_attn(s->prog, hooks[0]);
    int ka = a, kb = b, nkeys = cross ? s->cap->filled[site->k] : n;
    if (cross)
        ka = 0, kb = nkeys;
    int m = b - a, mk_n = kb - ka, heads = job->head < 0 ? cfg->n_head : 1, n_mats = job->n_layers * heads;
    float *v = malloc((size_t)n_mats * (size_t)m * (size_t)mk_n * sizeof *v);
    unsigned char *mk = malloc((size_t)n_mats * (size_t)m * (size_t)mk_n);
    as_fig_matrix *mats = calloc((size_t)n_mats, sizeof *mats);
    char **labels = as_export_stream_labels(s, qs, a, b, a > 0 || b < n);
    char **key_labels = cross ? as_export_stream_labels(s, site->kv_stream, ka, kb, false) : labels;
    char **names = panel_names(cfg, job);
    int rc = AS_ERR;
    if (!v || !mk || !mats || !labels || !key_labels || !names) {
        as_error_set(c->err, "out of memory for %d patterns of %d tokens", n_mats, m);
        goto out;
    }
    for (int i = 0; i < n_mats; i++) {
        int li = i / heads, head = job->head < 0 ? i % heads : job->head;
        size_t off = (size_t)i * (size_t)m * (size_t)mk_n;
        head_matrix_keys(s, hooks[li], head, a, b, ka, kb, v + off, mk + off);
        mats[i] = (as_fig_matrix){v + off, mk + off, NULL, NULL};
    }
    as_fig_heat h = {m, mk_n, (const char *const *)labels, (const char *const *)key_labels,
                     cross ? "target position (decoder)" : fig.o.site == AS_PICK_SOURCE ? "source query position" : "query position",
                     cross ? "source position (encoder)" : fig.o.site == AS_PICK_SOURCE ? "source key position" : "key position",
                     "attention weight", n_mats, mats, NULL, 1, 1, NULL, NULL, NULL, NULL, 0, 0, NULL};
    char what[96], kind[48] = "";
    if (fig.o.site != AS_PICK_SELF)
        snprintf(kind, sizeof kind, " \xC2\xB7 %s", pick_name[fig.o.site]);
    if (job->head >= 0) {
        as_export_title(&fig, "Layer %d \xC2\xB7 head %d%s", job->layer0, job->head, kind);
        snprintf(what, sizeof what, "%s layer %d head %d", fig.o.site == AS_PICK_SELF ? "attention" : pick_name[fig.o.site],
                 job->layer0, job->head);
    } else if (job->n_layers == 1) {
        h.grid_rows = h.grid_cols = 0; /* as many panels a row as the width allows */
        h.mat_titles = (const char *const *)names;
        as_export_title(&fig, "Layer %d \xC2\xB7 every head%s", job->layer0, kind);
        snprintf(what, sizeof what, "%s layer %d, %d heads", fig.o.site == AS_PICK_SELF ? "attention" : pick_name[fig.o.site],
                 job->layer0, heads);
    } else {
        h.grid_rows = job->n_layers, h.grid_cols = heads;
        h.grid_col_names = (const char *const *)names;
        h.grid_row_names = (const char *const *)names + cfg->n_head;
        h.grid_col_axis = "head", h.grid_row_axis = "layer";
        as_export_title(&fig, "%s of every layer and head", fig.o.site == AS_PICK_CROSS ? "Cross-attention"
                                                               : fig.o.site == AS_PICK_SOURCE ? "Encoder self-attention"
                                                                                          : "Attention");
        snprintf(what, sizeof what, "%s %d layers x %d heads", fig.o.site == AS_PICK_SELF ? "attention" : pick_name[fig.o.site],
                 job->n_layers, heads);
    }
    as_export_note_window(&fig, a, b, n);
    if (fig.o.hide_bos)
        note_hidden_bos(&fig, s, hooks, job->n_layers, job->head, heads, a, b);
    for (size_t i = 0; i < (size_t)n_mats * (size_t)m * (size_t)mk_n; i++)
        if (!mk[i] && !isfinite(v[i])) {
            char first[256];
            as_cmd_first_nonfinite(s, "; the first non-finite value of the pass is ", first, sizeof first);
            as_export_note(&fig, "Cells marked NaN hold a non-finite weight (%g)%s.", v[i], first);
            break;
        }
    as_export_meta(&fig, "Layer", job->n_layers == 1 ? "%d" : "all", job->layer0);
    as_export_meta(&fig, "Head", job->head >= 0 ? "%d" : "all", job->head);
    if (site_opt)
        as_export_meta(&fig, "Site", "%s", pick_name[fig.o.site]);
    rc = as_export_write(&fig, EXPORT_HEATMAP, &h, a, b, what);
    if (rc != AS_OK && fig.fmt != AS_FIG_PNG && strstr(c->err->msg, "a pixel per cell"))
        rc = write_blocks(&fig, &h, v, mk, m, mk_n, a, ka, qs, cross ? site->kv_stream : qs, what);
out:
    if (key_labels != labels)
        as_export_free_labels(key_labels, mk_n);
    as_export_free_labels(labels, m);
    as_export_free_labels(names, cfg->n_head + job->n_layers);
    free(v);
    free(mk);
    free(mats);
    return rc;
}

/* bertviz's head view: one head, or every head of the layer overlaid. */
static int export_lines_fig(cmd_ctx *c, int layer, int head, const char *path)
{
    as_session *s = c->s;
    const as_config *cfg = &s->model->cfg;
    export_fig fig;
    if (as_export_begin(&fig, c, path, 5, OPT_FIG | OPT_HIDE_BOS | OPT_TOKENS))
        return AS_ERR;
    int hook, a, b;
    int n = pattern_positions(s, &layer, 1, &hook, c->err);
    if (n < 0 || as_export_window(s, &fig.o, n, &a, &b, c->err))
        return AS_ERR;
    int m = b - a, heads = head < 0 ? cfg->n_head : 1;
    float *v = malloc((size_t)heads * (size_t)m * (size_t)m * sizeof *v);
    unsigned char *mk = malloc((size_t)m * (size_t)m);
    const float **w = calloc((size_t)heads, sizeof *w);
    char **labels = as_export_position_labels(s, a, b, a > 0 || b < n);
    attn_job job = {1, layer, head};
    char **names = panel_names(cfg, &job);
    int rc = AS_ERR;
    if (!v || !mk || !w || !labels || !names) {
        as_error_set(c->err, "out of memory for %d heads of %d tokens", heads, m);
        goto out;
    }
    for (int i = 0; i < heads; i++) {
        head_matrix(s, hook, head < 0 ? i : head, a, b, v + (size_t)i * m * m, mk);
        w[i] = v + (size_t)i * m * m;
        /* a line's opacity cannot show NaN: drawing nothing would look like a head that attends nowhere */
        if (refuse_nonfinite_head(c, "export lines: no figure", hook, head < 0 ? i : head, a, a, w[i], m, m))
            goto out;
    }
    as_fig_lines ln = {m, (const char *const *)labels, heads, w, head < 0 ? (const char *const *)names : NULL};
    char what[96];
    if (head >= 0)
        as_export_title(&fig, "Layer %d \xC2\xB7 head %d", layer, head);
    else
        as_export_title(&fig, "Layer %d \xC2\xB7 every head", layer);
    snprintf(what, sizeof what, head >= 0 ? "head view layer %d head %d" : "head view layer %d, every head", layer,
             head);
    as_export_note(&fig, "A line joins a query (left) to a key (right); its opacity is the attention weight.");
    as_export_note_window(&fig, a, b, n);
    if (fig.o.hide_bos)
        note_hidden_bos(&fig, s, &hook, 1, head, heads, a, b);
    as_export_meta(&fig, "Layer", "%d", layer);
    as_export_meta(&fig, "Head", head >= 0 ? "%d" : "all", head);
    rc = as_export_write(&fig, EXPORT_LINES, &ln, a, b, what);
out:
    as_export_free_labels(labels, m);
    as_export_free_labels(names, cfg->n_head + 1);
    free(v);
    free(mk);
    free(w);
    return rc;
}

int as_export_attn(cmd_ctx *c)
{
    if (c->argc < 5)
        return as_error_set(c->err, "usage: export attn LAYER HEAD FILE.png|FILE.svg|FILE.pdf [key=value ...]");
    attn_job job = {1, 0, 0};
    long head;
    if (as_export_parse_layer(c->s, c->argv[2], &job.layer0, c->err) ||
        as_cmd_parse_long(c->argv[3], 0, c->s->model->cfg.n_head - 1, "the head", &head, c->err))
        return AS_ERR;
    job.head = (int)head;
    return export_attention(c, &job, c->argv[4], 5);
}

int as_export_lines(cmd_ctx *c)
{
    if (c->argc < 5)
        return as_error_set(c->err, "usage: export lines LAYER HEAD|all FILE.png|FILE.svg|FILE.pdf [key=value ...]");
    int layer;
    long head = -1;
    if (as_export_parse_layer(c->s, c->argv[2], &layer, c->err) ||
        (strcmp(c->argv[3], "all") &&
         as_cmd_parse_long(c->argv[3], 0, c->s->model->cfg.n_head - 1, "the head (or all)", &head, c->err)))
        return AS_ERR;
    return export_lines_fig(c, layer, (int)head, c->argv[4]);
}

int as_export_grid(cmd_ctx *c)
{
    if (c->argc < 4)
        return as_error_set(c->err, "usage: export grid LAYER|all FILE.png|FILE.svg|FILE.pdf [key=value ...]");
    attn_job job = {1, 0, -1};
    if (!strcmp(c->argv[2], "all"))
        job.n_layers = c->s->model->cfg.n_layer;
    else if (as_export_parse_layer(c->s, c->argv[2], &job.layer0, c->err))
        return AS_ERR;
    return export_attention(c, &job, c->argv[3], 4);
}
