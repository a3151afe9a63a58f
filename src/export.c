/* The skeleton every figure of `export` (and of the instruments' FILE.png
 * outputs) runs, written once: the options, the window of positions, the
 * labels and text of tokens, the caption, drawing with figure.c's
 * builders, the provenance, the file and the "wrote" line
 * (export_internal.h). The kinds of figure are export_*.c; they only read
 * the capture, the context's tokens and the tokenizer. */
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/figure.h"
#include "export_internal.h"

/* ---- options ---- */

static const char *const opt_names[] = {"cmap", "dpi", "scale", "hide-bos", "tokens", "title", "top",
                                        "width", "height", "font", "site", "cells"};
#define N_OPTS ((int)(sizeof opt_names / sizeof *opt_names))

static void opt_list(unsigned allowed, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < N_OPTS && o < cap; i++)
        if (allowed & (1u << i))
            o += (size_t)snprintf(buf + o, cap - o, "%s%s=", o ? ", " : "", opt_names[i]);
}

/* "FROM:TO" with either side optional and negatives counted from the end. */
static int parse_window(const char *v, export_opts *o, as_error *err)
{
    const char *colon = strchr(v, ':');
    if (!colon)
        return as_error_set(err, "tokens must be FROM:TO (a window of positions, e.g. tokens=0:16), not '%s'", v);
    char a[32] = "", b[32] = "";
    size_t la = (size_t)(colon - v);
    if (la >= sizeof a || strlen(colon + 1) >= sizeof b)
        return as_error_set(err, "tokens must be FROM:TO, not '%s'", v);
    memcpy(a, v, la);
    strcpy(b, colon + 1);
    o->from = LONG_MIN, o->to = LONG_MAX;
    if (*a && as_cmd_parse_long(a, -1000000, 1000000, "tokens= FROM", &o->from, err))
        return AS_ERR;
    if (*b && as_cmd_parse_long(b, -1000000, 1000000, "tokens= TO", &o->to, err))
        return AS_ERR;
    o->window = true;
    return AS_OK;
}

/* One option's value into o; k is its bit. */
static int parse_value(unsigned k, const char *v, export_opts *o, as_error *err)
{
    long n;
    double x;
    switch (k) {
    case OPT_CMAP: {
        int m = as_cmap_parse(v);
        if (m < 0)
            return as_error_set(err, "bad option: cmap must be viridis, magma or gray, not '%s'", v);
        o->st.cmap = (as_cmap)m;
        return AS_OK;
    }
    case OPT_DPI:
        if (as_cmd_parse_long(v, 30, 1200, "dpi", &n, err))
            return as_error_prefix(err, "bad option");
        o->st.dpi = (int)n;
        return AS_OK;
    case OPT_SCALE:
        if (strcmp(v, "linear") && strcmp(v, "log"))
            return as_error_set(err, "bad option: scale must be linear or log, not '%s'", v);
        o->st.log_scale = !strcmp(v, "log");
        return AS_OK;
    case OPT_HIDE_BOS:
        if (strcmp(v, "yes") && strcmp(v, "no"))
            return as_error_set(err, "bad option: hide-bos must be yes or no, not '%s'", v);
        o->hide_bos = !strcmp(v, "yes");
        return AS_OK;
    case OPT_TOKENS:
        return parse_window(v, o, err) ? as_error_prefix(err, "bad option") : AS_OK;
    case OPT_TITLE:
        o->title = v;
        return AS_OK;
    case OPT_TOP:
        return as_cmd_parse_long(v, 1, 50, "top", &o->top, err) ? as_error_prefix(err, "bad option") : AS_OK;
    case OPT_WIDTH:
        return as_fig_parse_length(v, "width", &o->st.width_pt, err) ? as_error_prefix(err, "bad option") : AS_OK;
    case OPT_HEIGHT:
        return as_fig_parse_length(v, "height", &o->st.height_pt, err) ? as_error_prefix(err, "bad option") : AS_OK;
    case OPT_FONT:
        if (as_cmd_parse_float(v, 4, 36, "font (points)", &x, err))
            return as_error_prefix(err, "bad option");
        o->st.font_pt = (float)x;
        return AS_OK;
    case OPT_SITE:
        if (!strcmp(v, "self") || !strcmp(v, "cross") || !strcmp(v, "encoder")) {
            o->site = !strcmp(v, "self") ? AS_PICK_SELF : !strcmp(v, "cross") ? AS_PICK_CROSS : AS_PICK_SOURCE;
            return AS_OK;
        }
        return as_error_set(err, "bad option: site must be self, cross or encoder, not '%s'", v);
    case OPT_CELLS:
        if (strcmp(v, "max") && strcmp(v, "mean"))
            return as_error_set(err, "bad option: cells must be max or mean (what an SVG or PDF's block of tokens "
                                "shows when the grid has too many for a cell each), not '%s'", v);
        o->cells_mean = !strcmp(v, "mean");
        return AS_OK;
    }
    return AS_ERR;
}

static int parse_opts(cmd_ctx *c, int first, unsigned allowed, export_opts *o)
{
    as_error *err = c->err;
    char names[200], cmd[96];
    /* the command the figure is for: export's kind, or another command's (attribute heads) */
    snprintf(cmd, sizeof cmd, "%s %s", c->argv[0], c->argc > 1 ? c->argv[1] : "");
    memset(o, 0, sizeof *o);
    as_fig_style_default(&o->st);
    opt_list(allowed, names, sizeof names);
    for (int i = first; i < c->argc; i++) {
        const char *arg = c->argv[i], *eq = strchr(arg, '=');
        if (!eq || eq == arg)
            return as_error_set(err, "bad option '%s' for %s: options are key=value (%s)", arg, cmd, names);
        size_t klen = (size_t)(eq - arg);
        int k = -1;
        for (int j = 0; j < N_OPTS; j++)
            if (strlen(opt_names[j]) == klen && !strncmp(arg, opt_names[j], klen))
                k = j;
        if (k < 0 || !(allowed & (1u << k)))
            return as_error_set(err, "bad option '%.*s' for %s (options: %s)", (int)klen, arg, cmd, names);
        if (parse_value(1u << k, eq + 1, o, err))
            return AS_ERR;
    }
    return AS_OK;
}

/* The positions [*a, *b) a figure shows out of [0, n) of a stream. */
int as_export_window_in(as_session *s, int stream, const export_opts *o, int n, int *a, int *b, as_error *err)
{
    const as_stream_state *st = &s->it->st[stream];
    long from = 0, to = n;
    if (o->window) {
        if (o->from != LONG_MIN)
            from = o->from < 0 ? n + o->from : o->from;
        if (o->to != LONG_MAX)
            to = o->to < 0 ? n + o->to : o->to;
        if (from < 0 || to > n || from >= to)
            return as_error_set(err, "tokens=%ld:%ld selects no positions within the %d captured (0:%d)", from, to,
                                n, n);
    }
    if (o->hide_bos && from == 0 && st->n_tokens > 0 && st->tokens[0] == as_tokenizer_bos(s->model->tok))
        from = 1;
    if (from >= to)
        return as_error_set(err, "hide-bos=yes leaves no positions to show");
    *a = (int)from, *b = (int)to;
    return AS_OK;
}

/* The same over the output stream's positions. */
int as_export_window(as_session *s, const export_opts *o, int n, int *a, int *b, as_error *err)
{
    return as_export_window_in(s, s->prog->out_stream, o, n, a, b, err);
}

/* ---- labels and provenance ---- */

/* Labels of a stream's positions [a, b), malloc'd strings; numbered with
 * their positions when numbered (a cropped figure says where it is). */
char **as_export_stream_labels(const as_session *s, int stream, int a, int b, bool numbered)
{
    char **l = calloc((size_t)(b - a), sizeof *l);
    for (int p = a; l && p < b; p++) {
        char buf[256], tok[240];
        as_position at;
        as_interp_position(s->it, stream, p, &at);
        if (at.token < 0)
            snprintf(tok, sizeof tok, "%s", at.name);
        else
            as_cmd_token_label(s, at.token, tok, sizeof tok);
        if (numbered)
            snprintf(buf, sizeof buf, "%d %s", p, tok);
        else
            snprintf(buf, sizeof buf, "%s", tok);
        if (!(l[p - a] = strdup(buf))) {
            for (int q = a; q < p; q++)
                free(l[q - a]);
            free(l);
            return NULL;
        }
    }
    return l;
}

/* The same for the context (the output stream). */
char **as_export_position_labels(const as_session *s, int a, int b, bool numbered)
{
    return as_export_stream_labels(s, s->prog->out_stream, a, b, numbered);
}

void as_export_free_labels(char **l, int n)
{
    for (int i = 0; l && i < n; i++)
        free(l[i]);
    free(l);
}

/* Tokens as text: runs of text tokens decoded as the tokenizer does, and
 * control tokens ([CLS], [MASK], <s>), which decode to nothing, by their
 * vocabulary string, so captions and index.json show them (a WordPiece
 * vocabulary's words stand apart: joined by spaces there). Escaped to one
 * line; malloc'd, NULL when out of memory. */
static char *tokens_text(const as_session *s, const int32_t *ids, int n)
{
    const as_tokenizer *tok = s->model->tok;
    bool spaced = as_tokenizer_kind(tok) == AS_TOK_BERT;
    char *raw = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&raw, &len);
    if (!f)
        return NULL;
    for (int i = 0; i < n;) {
        char bytes[8];
        const char *piece = as_tokenizer_piece(tok, ids[i]);
        const char *part = NULL;
        char *run = NULL;
        size_t rlen = 0;
        as_error err;
        int j = i + 1;
        if (as_tokenizer_token_bytes(tok, ids[i], bytes, sizeof bytes) == 0) {
            part = piece ? piece : "", rlen = strlen(part);
        } else {
            while (j < n && as_tokenizer_token_bytes(tok, ids[j], bytes, sizeof bytes) > 0)
                j++;
            if (as_tokenizer_decode(tok, ids + i, (size_t)(j - i), &run, &rlen, &err) == AS_OK)
                part = run;
        }
        if (part && rlen) {
            if (spaced && ftell(f) > 0 && part[0] != ' ')
                fputc(' ', f);
            fwrite(part, 1, rlen, f);
        }
        free(run);
        i = j;
    }
    if (fclose(f) || !raw)
        return NULL;
    size_t cap = len * 4 + 16;
    char *out = malloc(cap);
    if (out)
        as_format_piece(raw, len, out, cap);
    free(raw);
    return out;
}

/* The context's text [a, b) (tokens_text); malloc'd. */
char *as_export_context_text(const as_session *s, int a, int b)
{
    return b > a ? tokens_text(s, s->it->out->tokens + a, b - a) : strdup("");
}

/* An encoder-decoder's source, as context_text gives the context; NULL
 * when the program has no source stream. */
char *as_export_source_text(const as_session *s)
{
    int src = s->prog->source_stream;
    if (src < 0 || s->it->st[src].n_tokens == 0)
        return NULL;
    return tokens_text(s, s->it->st[src].tokens, s->it->st[src].n_tokens);
}

/* An image model's input file and its predicted class ("tabby cat", its id
 * and probability) once the pass has its logits; false for a token model. */
static bool image_class(const as_session *s, char *cls, size_t cap, double *prob)
{
    const float *lg = s->image[0] ? as_interp_logits(s->it) : NULL;
    int n = s->model->cfg.n_vocab, best = 0;
    *cls = 0;
    if (!s->image[0])
        return false;
    if (!lg)
        return true;
    double mx = lg[0], sum = 0;
    for (int i = 1; i < n; i++)
        if (lg[i] > lg[best])
            best = i, mx = lg[i];
    for (int i = 0; i < n; i++)
        sum += exp((double)lg[i] - mx);
    if (!isfinite(sum))
        return true;
    as_cmd_label(s, best, 0, cls, cap);
    *prob = 1.0 / sum;
    return true;
}

static int add_provenance(as_session *s, as_figure *f, const export_opts *o, int a, int b, as_error *err)
{
    char *prompt = as_export_context_text(s, 0, s->it->out->n_prompt);
    char win[64];
    snprintf(win, sizeof win, "%d:%d", a, b);
    /* The file's name, not its path: figures are made to be shared. */
    const char *path = s->model->path ? s->model->path : "", *slash = strrchr(path, '/');
    int rc = as_figure_add_meta(f, "Model", s->model->cfg.name, err) ||
             as_figure_add_meta(f, "Model file", slash ? slash + 1 : path, err) ||
             as_figure_add_meta(f, "Prompt", prompt ? prompt : "", err) ||
             as_figure_add_meta(f, "Positions", win, err) ||
             as_figure_add_meta(f, "Colormap", as_cmap_name(o->st.cmap), err) ||
             as_figure_add_meta(f, "Scale", o->st.log_scale ? "log" : "linear", err) ||
             as_figure_add_meta(f, "Activations", as_activations_describe(), err);
    /* a saved run's hooks kept in half precision: not the pass's float32 values */
    if (rc == AS_OK && s->saved_run[0] && s->saved_dtype != 0) {
        char dt[160];
        snprintf(dt, sizeof dt, "%s (a saved run's hooks, rounded to %s and read back as float32)",
                 as_run_dtype_name(s->saved_dtype), as_run_dtype_name(s->saved_dtype));
        rc = as_figure_add_meta(f, "Hook dtype", dt, err);
    }
    free(prompt);
    char *source = as_export_source_text(s);
    if (rc == AS_OK && source)
        rc = as_figure_add_meta(f, "Source", source, err);
    free(source);
    char cls[256], val[320];
    double p = 0;
    if (rc == AS_OK && image_class(s, cls, sizeof cls, &p)) {
        rc = as_figure_add_meta(f, "Image", s->image, err);
        snprintf(val, sizeof val, "%s (probability %.4f)", cls, p);
        if (rc == AS_OK && *cls)
            rc = as_figure_add_meta(f, "Class", val, err);
    }
    if (rc == AS_OK && s->it->out->n_tokens > s->it->out->n_prompt) {
        char *gen = as_export_context_text(s, s->it->out->n_prompt, s->it->out->n_tokens);
        rc = as_figure_add_meta(f, "Generated", gen ? gen : "", err);
        free(gen);
    }
    return rc ? AS_ERR : AS_OK;
}

void as_export_title(export_fig *e, const char *fmt, ...)
{
    caption *cp = &e->cp;
    const as_session *s = e->c->s;
    const export_opts *o = &e->o;
    memset(cp, 0, sizeof *cp);
    if (o && o->title) {
        snprintf(cp->title, sizeof cp->title, "%s", o->title);
    } else {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(cp->title, sizeof cp->title, fmt, ap);
        va_end(ap);
    }
    char *prompt = as_export_context_text(s, 0, s->it->out->n_prompt), *source = as_export_source_text(s);
    char cls[256];
    double p = 0;
    if (image_class(s, cls, sizeof cls, &p) && *cls)
        snprintf(cp->subtitle, sizeof cp->subtitle, "model %s \xC2\xB7 class \xE2\x80\x9C%.160s\xE2\x80\x9D (%.0f%%)",
                 s->model->cfg.name, cls, 100 * p);
    else if (source && *source)
        snprintf(cp->subtitle, sizeof cp->subtitle, "model %s \xC2\xB7 source \xE2\x80\x9C%s\xE2\x80\x9D \xC2\xB7 "
                 "target \xE2\x80\x9C%s\xE2\x80\x9D", s->model->cfg.name, source, prompt ? prompt : "");
    else if (prompt && *prompt)
        snprintf(cp->subtitle, sizeof cp->subtitle, "model %s \xC2\xB7 prompt \xE2\x80\x9C%s\xE2\x80\x9D",
                 s->model->cfg.name, prompt);
    else
        snprintf(cp->subtitle, sizeof cp->subtitle, "model %s", s->model->cfg.name);
    free(prompt);
    free(source);
    cp->c = (as_fig_caption){cp->title, cp->subtitle, cp->note_ptrs, 0};
    if (s->image[0]) /* the file, in full, where a long class name cannot push it out */
        as_export_note(e, "Input: %s%s", s->image, *cls ? "." : " (the pass is not finished: no class yet).");
}

void as_export_note(export_fig *e, const char *fmt, ...)
{
    caption *cp = &e->cp;
    if (cp->c.n_notes >= MAX_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cp->notes[cp->c.n_notes], sizeof cp->notes[0], fmt, ap);
    va_end(ap);
    cp->note_ptrs[cp->c.n_notes] = cp->notes[cp->c.n_notes];
    cp->c.n_notes++;
}

/* What a window of [a, b) out of n positions leaves out, as a note. */
void as_export_note_window(export_fig *e, int a, int b, int n)
{
    const export_opts *o = &e->o;
    bool bos_hidden = o->hide_bos && a == 1 && (!o->window || o->from == LONG_MIN || o->from == 0);
    if (a > (bos_hidden ? 1 : 0) || b < n)
        as_export_note(e, "Positions %d to %d of 0 to %d shown (tokens=%d:%d); labels give each token's position.", a,
                          b - 1, n - 1, a, b);
}

/* Writes the figure and reports it; owns f. */
static int finish(cmd_ctx *c, as_figure *f, const export_opts *o, int a, int b, const char *path,
                  as_fig_format fmt, const char *what)
{
    int rc = add_provenance(c->s, f, o, a, b, c->err);
    if (rc == AS_OK)
        rc = as_figure_write(f, path, fmt, c->err);
    if (rc == AS_OK) {
        int w, h;
        float wp, hp;
        as_figure_size(f, &w, &h);
        as_figure_size_pt(f, &wp, &hp);
        if (fmt == AS_FIG_PNG)
            fprintf(c->s->out, "wrote %s: %s %dx%d px\n", path, what, w, h);
        else
            fprintf(c->s->out, "wrote %s: %s %dx%d %s\n", path, what, (int)lrintf(wp), (int)lrintf(hp),
                    fmt == AS_FIG_SVG ? "viewBox" : "pt");
    }
    as_figure_free(f);
    return rc;
}

/* ---- the skeleton ---- */

int as_export_begin(export_fig *e, cmd_ctx *c, const char *path, int opt_first, unsigned allowed)
{
    memset(e, 0, sizeof *e);
    e->c = c;
    e->path = path;
    return as_fig_format_of(path, &e->fmt, c->err) || parse_opts(c, opt_first, allowed, &e->o) ? AS_ERR : AS_OK;
}

int as_export_check(cmd_ctx *c, const char *path, int opt_first, unsigned allowed)
{
    export_fig e;
    return as_export_begin(&e, c, path, opt_first, allowed);
}

void as_export_meta(export_fig *e, const char *key, const char *fmt, ...)
{
    if (e->n_meta >= EXPORT_MAX_META)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->meta_val[e->n_meta], sizeof e->meta_val[0], fmt, ap);
    va_end(ap);
    e->meta_key[e->n_meta++] = key;
}

/* The figure of data as `draw`'s builder lays it out. */
static int draw_figure(as_figure **f, as_fig_ctx *ctx, const export_fig *e, export_draw draw, const void *data,
                       as_error *err)
{
    const as_fig_style *st = &e->o.st;
    const as_fig_caption *cap = &e->cp.c;
    switch (draw) {
    case EXPORT_HEATMAP: return as_fig_heatmap(f, ctx, st, cap, data, err);
    case EXPORT_OVERLAY: return as_fig_overlay_view(f, ctx, st, cap, data, err);
    case EXPORT_LINES: return as_fig_lines_view(f, ctx, st, cap, data, err);
    case EXPORT_NORMS: return as_fig_norm_chart(f, ctx, st, cap, data, err);
    case EXPORT_PROBS: return as_fig_prob_bars(f, ctx, st, cap, data, err);
    case EXPORT_EXPERTS: return as_fig_expert_tokens(f, ctx, st, cap, data, err);
    case EXPORT_TRACE: return as_fig_prob_trace(f, ctx, st, cap, data, err);
    }
    return as_error_set(err, "no such figure (%d)", (int)draw);
}

int as_export_write(export_fig *e, export_draw draw, const void *data, int a, int b, const char *what)
{
    cmd_ctx *c = e->c;
    as_fig_ctx *ctx = NULL;
    as_figure *f = NULL;
    int rc = as_fig_ctx_new(&ctx, NULL, c->err);
    if (rc == AS_OK)
        rc = draw_figure(&f, ctx, e, draw, data, c->err);
    for (int i = 0; rc == AS_OK && i < e->n_meta; i++)
        rc = as_figure_add_meta(f, e->meta_key[i], e->meta_val[i], c->err);
    if (rc == AS_OK) {
        rc = finish(c, f, &e->o, a, b, e->path, e->fmt, what);
        f = NULL;
    }
    as_figure_free(f);
    as_fig_ctx_free(ctx);
    return rc;
}

/* ---- what the kinds share ---- */

int as_export_parse_layer(as_session *s, const char *arg, int *layer, as_error *err)
{
    long l;
    if (as_cmd_parse_long(arg, 0, s->model->cfg.n_layer - 1, "the layer", &l, err))
        return AS_ERR;
    *layer = (int)l;
    return AS_OK;
}
