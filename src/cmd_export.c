/* The `export` and `dump all` commands: figures (PNG, SVG, PDF) and
 * arrays (.npy plus an index) from the capture. They only read the
 * capture, the context's tokens and the tokenizer; the drawing is
 * figure.c's. A figure's caption keeps apart what it shows (the title),
 * where it comes from (model and prompt, the subtitle) and what was left
 * out or normalised (the notes). */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "attnscope/figure.h"
#include "attnscope/file.h"
#include "attnscope/instruments.h"
#include "attnscope/npy.h"
#include "session_internal.h"

/* ---- options ---- */

enum {
    OPT_CMAP = 1 << 0, OPT_DPI = 1 << 1, OPT_SCALE = 1 << 2, OPT_HIDE_BOS = 1 << 3,
    OPT_TOKENS = 1 << 4, OPT_TITLE = 1 << 5, OPT_TOP = 1 << 6, OPT_WIDTH = 1 << 7,
    OPT_HEIGHT = 1 << 8, OPT_FONT = 1 << 9, OPT_SITE = 1 << 10,
    /* what every figure takes: its size, text size, resolution and title */
    OPT_FIG = OPT_DPI | OPT_TITLE | OPT_WIDTH | OPT_HEIGHT | OPT_FONT,
};
static const char *const opt_names[] = {"cmap", "dpi", "scale", "hide-bos", "tokens", "title", "top",
                                        "width", "height", "font", "site"};
#define N_OPTS ((int)(sizeof opt_names / sizeof *opt_names))

typedef struct export_opts {
    as_fig_style st;
    const char *title;   /* NULL: the default title */
    bool hide_bos;
    bool window;         /* tokens=FROM:TO given */
    long from, to;       /* Python slice bounds; LONG_MIN/LONG_MAX when left open */
    long top;            /* top=K, 0 when not given */
    as_site_pick site;   /* site=self|cross|encoder: which attention of a layer (self by default) */
} export_opts;

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
    }
    return AS_ERR;
}

static int parse_opts(cmd_ctx *c, int first, unsigned allowed, export_opts *o)
{
    as_error *err = c->err;
    char names[200];
    memset(o, 0, sizeof *o);
    as_fig_style_default(&o->st);
    opt_list(allowed, names, sizeof names);
    for (int i = first; i < c->argc; i++) {
        const char *arg = c->argv[i], *eq = strchr(arg, '=');
        if (!eq || eq == arg)
            return as_error_set(err, "bad option '%s' for export %s: options are key=value (%s)", arg, c->argv[1],
                                names);
        size_t klen = (size_t)(eq - arg);
        int k = -1;
        for (int j = 0; j < N_OPTS; j++)
            if (strlen(opt_names[j]) == klen && !strncmp(arg, opt_names[j], klen))
                k = j;
        if (k < 0 || !(allowed & (1u << k)))
            return as_error_set(err, "bad option '%.*s' for export %s (options: %s)", (int)klen, arg, c->argv[1],
                                names);
        if (parse_value(1u << k, eq + 1, o, err))
            return AS_ERR;
    }
    return AS_OK;
}

/* The positions [*a, *b) a figure shows out of [0, n) of a stream. */
static int resolve_window_in(as_session *s, int stream, const export_opts *o, int n, int *a, int *b, as_error *err)
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
static int resolve_window(as_session *s, const export_opts *o, int n, int *a, int *b, as_error *err)
{
    return resolve_window_in(s, s->prog->out_stream, o, n, a, b, err);
}

/* ---- labels and provenance ---- */

void as_cmd_token_label(const as_session *s, int32_t id, char *out, size_t cap)
{
    char bytes[256];
    size_t n = as_tokenizer_token_bytes(s->model->tok, id, bytes, sizeof bytes);
    if (n == 0) {
        /* Control tokens decode to nothing: show their vocabulary string. */
        const char *p = as_tokenizer_piece(s->model->tok, id);
        snprintf(bytes, sizeof bytes, "%s", p ? p : "?");
        n = strlen(bytes);
    }
    as_fig_visible_text(bytes, n, out, cap);
}

/* Labels of a stream's positions [a, b), malloc'd strings; numbered with
 * their positions when numbered (a cropped figure says where it is). */
static char **stream_labels(const as_session *s, int stream, int a, int b, bool numbered)
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
static char **position_labels(const as_session *s, int a, int b, bool numbered)
{
    return stream_labels(s, s->prog->out_stream, a, b, numbered);
}

static void free_labels(char **l, int n)
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
static char *context_text(const as_session *s, int a, int b)
{
    return b > a ? tokens_text(s, s->it->out->tokens + a, b - a) : strdup("");
}

/* An encoder-decoder's source, as context_text gives the context; NULL
 * when the program has no source stream. */
static char *source_text(const as_session *s)
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
    char *prompt = context_text(s, 0, s->it->out->n_prompt);
    char win[64];
    snprintf(win, sizeof win, "%d:%d", a, b);
    /* The file's name, not its path: figures are made to be shared. */
    const char *path = s->model->path ? s->model->path : "", *slash = strrchr(path, '/');
    int rc = as_figure_add_meta(f, "Model", s->model->cfg.name, err) ||
             as_figure_add_meta(f, "Model file", slash ? slash + 1 : path, err) ||
             as_figure_add_meta(f, "Prompt", prompt ? prompt : "", err) ||
             as_figure_add_meta(f, "Positions", win, err) ||
             as_figure_add_meta(f, "Colormap", as_cmap_name(o->st.cmap), err) ||
             as_figure_add_meta(f, "Scale", o->st.log_scale ? "log" : "linear", err);
    free(prompt);
    char *source = source_text(s);
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
        char *gen = context_text(s, s->it->out->n_prompt, s->it->out->n_tokens);
        rc = as_figure_add_meta(f, "Generated", gen ? gen : "", err);
        free(gen);
    }
    return rc ? AS_ERR : AS_OK;
}

/* A figure's caption: its title (title= or the default), the model and
 * prompt as the subtitle, and up to a few notes, all in one struct that
 * owns its strings. */
#define MAX_NOTES 6
typedef struct caption {
    char title[512], subtitle[640];
    char notes[MAX_NOTES][768];
    const char *note_ptrs[MAX_NOTES];
    as_fig_caption c;
} caption;

static void caption_init(caption *cp, const as_session *s, const export_opts *o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void caption_note(caption *cp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void caption_init(caption *cp, const as_session *s, const export_opts *o, const char *fmt, ...)
{
    memset(cp, 0, sizeof *cp);
    if (o && o->title) {
        snprintf(cp->title, sizeof cp->title, "%s", o->title);
    } else {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(cp->title, sizeof cp->title, fmt, ap);
        va_end(ap);
    }
    char *prompt = context_text(s, 0, s->it->out->n_prompt), *source = source_text(s);
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
        caption_note(cp, "Input: %s%s", s->image, *cls ? "." : " (the pass is not finished: no class yet).");
}

static void caption_note(caption *cp, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void caption_note(caption *cp, const char *fmt, ...)
{
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
static void note_window(caption *cp, const as_session *s, const export_opts *o, int a, int b, int n)
{
    bool bos_hidden = o->hide_bos && a == 1 && (!o->window || o->from == LONG_MIN || o->from == 0);
    if (a > (bos_hidden ? 1 : 0) || b < n)
        caption_note(cp, "Positions %d to %d of 0 to %d shown (tokens=%d:%d); labels give each token's position.", a,
                     b - 1, n - 1, a, b);
    (void)s;
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

/* ---- attention ---- */

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
static void note_hidden_bos(caption *cp, const as_session *s, const int *hooks, int n_layers, int head, int heads,
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
    caption_note(cp, "hide-bos: the first token (position 0) is hidden and rows are not renormalised: a row shown "
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
            free_labels(names, i);
            return NULL;
        }
    }
    return names;
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
    export_opts o;
    as_fig_format fmt;
    unsigned site_opt = s->prog->source_stream >= 0 ? OPT_SITE : 0;
    if (as_fig_format_of(path, &fmt, c->err) ||
        parse_opts(c, opt_first, OPT_FIG | OPT_CMAP | OPT_SCALE | OPT_HIDE_BOS | OPT_TOKENS | site_opt, &o))
        return AS_ERR;
    bool cross = o.site == AS_PICK_CROSS;
    if (cross && o.hide_bos)
        return as_error_set(c->err, "hide-bos applies to self-attention: a cross-attention figure shows every "
                            "source position");
    attn_job all = *job;
    /* `grid all`: every block the site's stack has (an encoder-decoder's two stacks may differ in depth) */
    while (all.layer0 == 0 && all.n_layers == cfg->n_layer && all.n_layers > 1 &&
           as_program_pattern(s->prog, all.n_layers - 1, o.site) < 0)
        all.n_layers--;
    if (all.n_layers != job->n_layers && all.n_layers < cfg->n_layer)
        job = &all;
    int layers[256], hooks[256], a, b;
    if (job->n_layers > 256)
        return as_error_set(c->err, "too many layers for one figure (%d)", job->n_layers);
    for (int i = 0; i < job->n_layers; i++)
        layers[i] = job->layer0 + i;
    int qs = as_program_pick_stream(s->prog, o.site);
    int n = pattern_positions_at(s, layers, job->n_layers, hooks, o.site, c->err);
    if (n < 0 || resolve_window_in(s, qs, &o, n, &a, &b, c->err))
        return AS_ERR;
    const as_attn *site = as_program_attn(s->prog, hooks[0]);
    int ka = a, kb = b, nkeys = cross ? s->cap->filled[site->k] : n;
    if (cross)
        ka = 0, kb = nkeys;
    int m = b - a, mk_n = kb - ka, heads = job->head < 0 ? cfg->n_head : 1, n_mats = job->n_layers * heads;
    float *v = malloc((size_t)n_mats * (size_t)m * (size_t)mk_n * sizeof *v);
    unsigned char *mk = malloc((size_t)n_mats * (size_t)m * (size_t)mk_n);
    as_fig_matrix *mats = calloc((size_t)n_mats, sizeof *mats);
    char **labels = stream_labels(s, qs, a, b, a > 0 || b < n);
    char **key_labels = cross ? stream_labels(s, site->kv_stream, ka, kb, false) : labels;
    char **names = panel_names(cfg, job);
    as_fig_ctx *ctx = NULL;
    as_figure *f = NULL;
    caption cp;
    int rc = AS_ERR;
    if (!v || !mk || !mats || !labels || !key_labels || !names) {
        as_error_set(c->err, "out of memory for %d patterns of %d tokens", n_mats, m);
        goto out;
    }
    for (int i = 0; i < n_mats; i++) {
        int li = i / heads, head = job->head < 0 ? i % heads : job->head;
        size_t off = (size_t)i * (size_t)m * (size_t)mk_n;
        head_matrix_keys(s, hooks[li], head, a, b, ka, kb, v + off, mk + off);
        mats[i] = (as_fig_matrix){v + off, mk + off, NULL};
    }
    if (as_fig_ctx_new(&ctx, NULL, c->err))
        goto out;
    as_fig_heat h = {m, mk_n, (const char *const *)labels, (const char *const *)key_labels,
                     cross ? "target position (decoder)" : o.site == AS_PICK_SOURCE ? "source query position" : "query position",
                     cross ? "source position (encoder)" : o.site == AS_PICK_SOURCE ? "source key position" : "key position",
                     "attention weight", n_mats, mats, NULL, 1, 1, NULL, NULL, NULL, NULL, 0, 0, NULL};
    char what[96], kind[48] = "";
    if (o.site != AS_PICK_SELF)
        snprintf(kind, sizeof kind, " \xC2\xB7 %s", pick_name[o.site]);
    if (job->head >= 0) {
        caption_init(&cp, s, &o, "Layer %d \xC2\xB7 head %d%s", job->layer0, job->head, kind);
        snprintf(what, sizeof what, "%s layer %d head %d", o.site == AS_PICK_SELF ? "attention" : pick_name[o.site],
                 job->layer0, job->head);
    } else if (job->n_layers == 1) {
        h.grid_rows = h.grid_cols = 0; /* as many panels a row as the width allows */
        h.mat_titles = (const char *const *)names;
        caption_init(&cp, s, &o, "Layer %d \xC2\xB7 every head%s", job->layer0, kind);
        snprintf(what, sizeof what, "%s layer %d, %d heads", o.site == AS_PICK_SELF ? "attention" : pick_name[o.site],
                 job->layer0, heads);
    } else {
        h.grid_rows = job->n_layers, h.grid_cols = heads;
        h.grid_col_names = (const char *const *)names;
        h.grid_row_names = (const char *const *)names + cfg->n_head;
        h.grid_col_axis = "head", h.grid_row_axis = "layer";
        caption_init(&cp, s, &o, "%s of every layer and head", o.site == AS_PICK_CROSS ? "Cross-attention"
                                                               : o.site == AS_PICK_SOURCE ? "Encoder self-attention"
                                                                                          : "Attention");
        snprintf(what, sizeof what, "%s %d layers x %d heads", o.site == AS_PICK_SELF ? "attention" : pick_name[o.site],
                 job->n_layers, heads);
    }
    note_window(&cp, s, &o, a, b, n);
    if (o.hide_bos)
        note_hidden_bos(&cp, s, hooks, job->n_layers, job->head, heads, a, b);
    for (size_t i = 0; i < (size_t)n_mats * (size_t)m * (size_t)mk_n; i++)
        if (!mk[i] && !isfinite(v[i])) {
            char first[256];
            as_cmd_first_nonfinite(s, "; the first non-finite value of the pass is ", first, sizeof first);
            caption_note(&cp, "Cells marked NaN hold a non-finite weight (%g)%s.", v[i], first);
            break;
        }
    if (as_fig_heatmap(&f, ctx, &o.st, &cp.c, &h, c->err))
        goto out;
    char val[32];
    snprintf(val, sizeof val, job->n_layers == 1 ? "%d" : "all", job->layer0);
    if (as_figure_add_meta(f, "Layer", val, c->err))
        goto out;
    snprintf(val, sizeof val, job->head >= 0 ? "%d" : "all", job->head);
    if (as_figure_add_meta(f, "Head", val, c->err) ||
        (site_opt && as_figure_add_meta(f, "Site", pick_name[o.site], c->err)))
        goto out;
    rc = finish(c, f, &o, a, b, path, fmt, what);
    f = NULL;
out:
    as_figure_free(f);
    as_fig_ctx_free(ctx);
    if (key_labels != labels)
        free_labels(key_labels, mk_n);
    free_labels(labels, m);
    free_labels(names, cfg->n_head + job->n_layers);
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
    export_opts o;
    as_fig_format fmt;
    if (as_fig_format_of(path, &fmt, c->err) || parse_opts(c, 5, OPT_FIG | OPT_HIDE_BOS | OPT_TOKENS, &o))
        return AS_ERR;
    int hook, a, b;
    int n = pattern_positions(s, &layer, 1, &hook, c->err);
    if (n < 0 || resolve_window(s, &o, n, &a, &b, c->err))
        return AS_ERR;
    int m = b - a, heads = head < 0 ? cfg->n_head : 1;
    float *v = malloc((size_t)heads * (size_t)m * (size_t)m * sizeof *v);
    unsigned char *mk = malloc((size_t)m * (size_t)m);
    const float **w = calloc((size_t)heads, sizeof *w);
    char **labels = position_labels(s, a, b, a > 0 || b < n);
    attn_job job = {1, layer, head};
    char **names = panel_names(cfg, &job);
    as_fig_ctx *ctx = NULL;
    as_figure *f = NULL;
    caption cp;
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
    if (as_fig_ctx_new(&ctx, NULL, c->err))
        goto out;
    as_fig_lines ln = {m, (const char *const *)labels, heads, w, head < 0 ? (const char *const *)names : NULL};
    char what[96];
    if (head >= 0)
        caption_init(&cp, s, &o, "Layer %d \xC2\xB7 head %d", layer, head);
    else
        caption_init(&cp, s, &o, "Layer %d \xC2\xB7 every head", layer);
    snprintf(what, sizeof what, head >= 0 ? "head view layer %d head %d" : "head view layer %d, every head", layer,
             head);
    caption_note(&cp, "A line joins a query (left) to a key (right); its opacity is the attention weight.");
    note_window(&cp, s, &o, a, b, n);
    if (o.hide_bos)
        note_hidden_bos(&cp, s, &hook, 1, head, heads, a, b);
    if (as_fig_lines_view(&f, ctx, &o.st, &cp.c, &ln, c->err))
        goto out;
    char val[32];
    snprintf(val, sizeof val, "%d", layer);
    if (as_figure_add_meta(f, "Layer", val, c->err))
        goto out;
    snprintf(val, sizeof val, head >= 0 ? "%d" : "all", head);
    if (as_figure_add_meta(f, "Head", val, c->err))
        goto out;
    rc = finish(c, f, &o, a, b, path, fmt, what);
    f = NULL;
out:
    as_figure_free(f);
    as_fig_ctx_free(ctx);
    free_labels(labels, m);
    free_labels(names, cfg->n_head + 1);
    free(v);
    free(mk);
    free(w);
    return rc;
}

/* ---- instrument tables ---- */

const char *as_cmd_output_kind(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (!dot || strchr(dot, '/'))
        return NULL;
    return !strcasecmp(dot, ".npy")   ? "npy"
           : !strcasecmp(dot, ".png") ? "png"
           : !strcasecmp(dot, ".svg") ? "svg"
           : !strcasecmp(dot, ".pdf") ? "pdf"
                                      : NULL;
}

int as_cmd_export_table(cmd_ctx *c, const char *path, int opt_first, const as_table_fig *t)
{
    as_session *s = c->s;
    export_opts o;
    as_fig_format fmt;
    if (as_fig_format_of(path, &fmt, c->err) || parse_opts(c, opt_first, OPT_FIG, &o))
        return AS_ERR;
    int n_mats = t->n_mats > 0 ? t->n_mats : 1;
    double a = 1;
    if (t->diverging) {
        o.st.cmap = AS_CMAP_RDBU;
        for (long i = 0; i < (long)n_mats * t->rows * t->cols; i++)
            if (isfinite(t->v[i]) && fabs(t->v[i]) > a)
                a = fabs(t->v[i]);
    }
    char **rows = calloc((size_t)t->rows, sizeof *rows);
    char **cols = t->by_position ? position_labels(s, 0, t->cols, false) : calloc((size_t)t->cols, sizeof *cols);
    as_fig_matrix *mats = calloc((size_t)n_mats, sizeof *mats);
    as_fig_ctx *ctx = NULL;
    as_figure *f = NULL;
    caption cp;
    int rc = AS_ERR;
    if (!rows || !cols || !mats) {
        as_error_set(c->err, "out of memory");
        goto out;
    }
    for (int i = 0; i < t->rows; i++)
        if (!(rows[i] = malloc(16)) || snprintf(rows[i], 16, "%d", i) < 0)
            goto oom;
    for (int j = 0; !t->by_position && j < t->cols; j++)
        if (!(cols[j] = t->col_labels ? strdup(t->col_labels[j]) : malloc(16)) ||
            (!t->col_labels && snprintf(cols[j], 16, "%d", j) < 0))
            goto oom;
    for (int i = 0; i < n_mats; i++)
        mats[i] = (as_fig_matrix){t->v + (size_t)i * (size_t)t->rows * (size_t)t->cols,
                                  t->masked ? t->masked + (size_t)i * (size_t)t->rows * (size_t)t->cols : NULL, NULL};
    as_fig_heat h = {t->rows, t->cols, (const char *const *)rows, (const char *const *)cols, "layer",
                     t->col_axis ? t->col_axis : t->by_position ? "position" : "head", t->cbar_label, n_mats, mats,
                     t->mat_titles, n_mats > 1 ? 0 : 1, n_mats > 1 ? 0 : 1, NULL, NULL, NULL, NULL,
                     t->diverging ? (float)-a : 0, t->diverging ? (float)a : 0, t->masked_label};
    if (as_fig_ctx_new(&ctx, NULL, c->err))
        goto out;
    caption_init(&cp, s, &o, "%s", t->title);
    for (int i = 0; i < t->n_notes; i++)
        caption_note(&cp, "%s", t->notes[i]);
    if (as_fig_heatmap(&f, ctx, &o.st, &cp.c, &h, c->err))
        goto out;
    rc = finish(c, f, &o, 0, s->it->out->n_tokens, path, fmt, t->what);
    f = NULL;
    goto out;
oom:
    as_error_set(c->err, "out of memory");
out:
    as_figure_free(f);
    as_fig_ctx_free(ctx);
    free_labels(rows, t->rows);
    free_labels(cols, t->cols);
    free(mats);
    return rc;
}

static int parse_layer(as_session *s, const char *arg, int *layer, as_error *err)
{
    long l;
    if (as_cmd_parse_long(arg, 0, s->model->cfg.n_layer - 1, "the layer", &l, err))
        return AS_ERR;
    *layer = (int)l;
    return AS_OK;
}

static int export_attn(cmd_ctx *c)
{
    if (c->argc < 5)
        return as_error_set(c->err, "usage: export attn LAYER HEAD FILE.png|FILE.svg|FILE.pdf [key=value ...]");
    attn_job job = {1, 0, 0};
    long head;
    if (parse_layer(c->s, c->argv[2], &job.layer0, c->err) ||
        as_cmd_parse_long(c->argv[3], 0, c->s->model->cfg.n_head - 1, "the head", &head, c->err))
        return AS_ERR;
    job.head = (int)head;
    return export_attention(c, &job, c->argv[4], 5);
}

static int export_lines(cmd_ctx *c)
{
    if (c->argc < 5)
        return as_error_set(c->err, "usage: export lines LAYER HEAD|all FILE.png|FILE.svg|FILE.pdf [key=value ...]");
    int layer;
    long head = -1;
    if (parse_layer(c->s, c->argv[2], &layer, c->err) ||
        (strcmp(c->argv[3], "all") &&
         as_cmd_parse_long(c->argv[3], 0, c->s->model->cfg.n_head - 1, "the head (or all)", &head, c->err)))
        return AS_ERR;
    return export_lines_fig(c, layer, (int)head, c->argv[4]);
}

static int export_grid(cmd_ctx *c)
{
    if (c->argc < 4)
        return as_error_set(c->err, "usage: export grid LAYER|all FILE.png|FILE.svg|FILE.pdf [key=value ...]");
    attn_job job = {1, 0, -1};
    if (!strcmp(c->argv[2], "all"))
        job.n_layers = c->s->model->cfg.n_layer;
    else if (parse_layer(c->s, c->argv[2], &job.layer0, c->err))
        return AS_ERR;
    return export_attention(c, &job, c->argv[3], 4);
}

/* ---- norms ---- */

static int export_norms(cmd_ctx *c)
{
    as_session *s = c->s;
    if (c->argc < 4)
        return as_error_set(c->err, "usage: export norms LAYER|final FILE.png|FILE.svg|FILE.pdf [key=value ...]");
    const char *path = c->argv[3];
    export_opts o;
    as_fig_format fmt;
    int layer = -1;
    bool final = !strcmp(c->argv[2], "final");
    if ((!final && parse_layer(s, c->argv[2], &layer, c->err)) || as_fig_format_of(path, &fmt, c->err) ||
        parse_opts(c, 4, OPT_FIG | OPT_SCALE | OPT_HIDE_BOS | OPT_TOKENS, &o))
        return AS_ERR;
    /* the context's own norms (an encoder-decoder's: the decoder's) */
    int out = s->prog->out_stream;
    int h1 = as_program_hook_in(s->prog, final ? AS_HK_LNF_SCALE : AS_HK_LN1_SCALE, layer, out);
    int h2 = final ? -1 : as_program_hook_in(s->prog, AS_HK_LN2_SCALE, layer, out);
    if (h1 < 0)
        return as_error_set(c->err, "the %s stream has no block %d (an encoder-decoder's stacks may differ in depth)",
                            s->prog->streams[out].name, layer);
    int n = as_cmd_hook_positions(s, h1, c->err), a, b;
    if (n < 0 || resolve_window(s, &o, n, &a, &b, c->err))
        return AS_ERR;
    bool two = h2 >= 0 && s->cap->filled[h2] >= b;
    int m = b - a;
    as_norm_stat *st = malloc((size_t)m * 2 * sizeof *st);
    char **labels = position_labels(s, a, b, a > 0 || b < n);
    as_fig_ctx *ctx = NULL;
    as_figure *f = NULL;
    caption cp;
    int rc = AS_ERR;
    if (!st || !labels) {
        as_error_set(c->err, "out of memory");
        goto out;
    }
    /* the scale is non-finite exactly where the norm's input is: its statistics would be made up */
    if (as_cmd_check_finite(s, s->cap, h1, a, b, "export norms: no figure", c->err) ||
        (two && as_cmd_check_finite(s, s->cap, h2, a, b, "export norms: no figure", c->err)))
        goto out;
    for (int i = 0; i < m; i++) {
        st[i] = *as_capture_norm(s->cap, h1, a + i);
        if (two)
            st[m + i] = *as_capture_norm(s->cap, h2, a + i);
    }
    const as_op *norm = as_program_producer(s->prog, h1);
    bool rms = norm->norm == AS_NORM_RMS;
    as_fig_norms nm = {m, (const char *const *)labels, rms, norm->n_in, two ? 2 : 1,
                       {{final ? "ln_final (unembedding input)" : "ln1 (attention input)", st},
                        {"ln2 (MLP input)", st + m}}};
    if (as_fig_ctx_new(&ctx, NULL, c->err))
        goto out;
    char what[64];
    const char *kind = rms ? "RMSNorm" : "LayerNorm";
    if (final)
        caption_init(&cp, s, &o, "Final %s: its input across tokens", kind);
    else
        caption_init(&cp, s, &o, "Layer %d %s statistics across tokens", layer, kind);
    note_window(&cp, s, &o, a, b, n);
    if (o.hide_bos && a == 1)
        caption_note(&cp, "hide-bos: the first token (position 0) is not shown.");
    if (as_fig_norm_chart(&f, ctx, &o.st, &cp.c, &nm, c->err))
        goto out;
    char val[16];
    snprintf(val, sizeof val, final ? "final" : "%d", layer);
    if (as_figure_add_meta(f, "Layer", val, c->err))
        goto out;
    snprintf(what, sizeof what, final ? "norms final" : "norms layer %d", layer);
    rc = finish(c, f, &o, a, b, path, fmt, what);
    f = NULL;
out:
    as_figure_free(f);
    as_fig_ctx_free(ctx);
    free_labels(labels, m);
    free(st);
    return rc;
}

/* ---- a routed MLP ---- */

/* export routing|experts LAYER FILE [key=value ...]: the layer, its
 * chosen-experts hook and the op that chooses them (the routing hooks of
 * a layer come together), the format and options; a dense layer refused. */
static int routed_figure_args(cmd_ctx *c, const char *kind, int *layer, int *hi, const as_op **op, export_opts *o,
                              as_fig_format *fmt)
{
    as_session *s = c->s;
    if (c->argc < 4)
        return as_error_set(c->err, "usage: export %s LAYER FILE.png|FILE.svg|FILE.pdf [key=value ...]", kind);
    if (parse_layer(s, c->argv[2], layer, c->err))
        return AS_ERR;
    *hi = as_program_hook_in(s->prog, AS_HK_EXPERT_INDICES, *layer, s->prog->out_stream);
    *op = *hi >= 0 ? as_program_producer(s->prog, *hi) : NULL;
    if (!*op)
        return as_error_set(c->err, "layer %d of %s has no experts (its MLP is dense)", *layer, s->model->cfg.name);
    return as_fig_format_of(c->argv[3], fmt, c->err) || parse_opts(c, 4, OPT_FIG, o) ? AS_ERR : AS_OK;
}

/* A routed layer's figure over the context's n tokens, written with its
 * layer in the provenance ("routing layer 3"); f is freed either way. */
static int finish_layer(cmd_ctx *c, as_figure *f, const export_opts *o, int n, const char *path, as_fig_format fmt,
                        const char *kind, int layer)
{
    char val[16], what[64];
    snprintf(val, sizeof val, "%d", layer);
    if (as_figure_add_meta(f, "Layer", val, c->err)) {
        as_figure_free(f);
        return AS_ERR;
    }
    snprintf(what, sizeof what, "%s layer %d", kind, layer);
    return finish(c, f, o, 0, n, path, fmt, what);
}

/* export routing LAYER FILE: tokens × experts, the router's weights
 * (hook_expert_weights) with the k chosen (hook_expert_indices) dotted,
 * and under them a row of each expert's load (the share of the tokens
 * that chose it), on the same 0–1 scale. */
static int export_routing(cmd_ctx *c)
{
    as_session *s = c->s;
    export_opts o;
    as_fig_format fmt;
    int layer, hi;
    const as_op *op;
    if (routed_figure_args(c, "routing", &layer, &hi, &op, &o, &fmt))
        return AS_ERR;
    const char *path = c->argv[3];
    int hw = as_program_hook_in(s->prog, AS_HK_EXPERT_WEIGHTS, layer, s->prog->out_stream);
    int n = as_cmd_hook_positions(s, hi, c->err), nw = n < 0 ? -1 : as_cmd_hook_positions(s, hw, c->err);
    if (n < 0 || nw < 0)
        return AS_ERR;
    if (nw < n)
        n = nw;
    int E = op->n_expert, R = n + 1, ne, np;
    float *v = malloc((size_t)R * (size_t)E * sizeof *v);
    unsigned char *mk = calloc((size_t)R * (size_t)E, 1);
    char **rows = position_labels(s, 0, n, false), **cols = calloc((size_t)E, sizeof *cols);
    char **all_rows = rows ? realloc(rows, (size_t)R * sizeof *rows) : NULL;
    as_fig_ctx *ctx = NULL;
    as_figure *f = NULL;
    caption cp;
    int rc = AS_ERR;
    if (all_rows)
        rows = all_rows, rows[n] = strdup("load");
    if (!v || !mk || !all_rows || !rows[n] || !cols) {
        as_error_set(c->err, "out of memory");
        goto out;
    }
    for (int e = 0; e < E; e++)
        if (!(cols[e] = malloc(16)) || snprintf(cols[e], 16, "%d", e) < 0) {
            as_error_set(c->err, "out of memory");
            goto out;
        }
    for (int p = 0; p < n; p++) {
        memcpy(v + (size_t)p * (size_t)E, as_capture_row(s->cap, hw, p), (size_t)E * sizeof *v);
        const float *ix = as_capture_row(s->cap, hi, p);
        for (int j = 0; j < op->k; j++)
            if ((int)ix[j] >= 0 && (int)ix[j] < E)
                mk[(size_t)p * (size_t)E + (size_t)ix[j]] = 1;
    }
    if (as_cmd_expert_load(s, layer, v + (size_t)n * (size_t)E, &ne, &np, c->err))
        goto out;
    as_fig_matrix mat = {v, NULL, mk};
    as_fig_heat h = {R, E, (const char *const *)rows, (const char *const *)cols, "token", "expert",
                     "router weight; load", 1, &mat, NULL, 1, 1, NULL, NULL, NULL, NULL, 0, 0, NULL};
    /* A few experts across the width would make cells the size of a
     * column's quarter: unless a height is given, the figure is as tall
     * as rows of about 13 pt need (the cells then fit the height). */
    if (o.st.height_pt <= 0)
        o.st.height_pt = fminf(2880, 170 + 13 * (float)R);
    if (as_fig_ctx_new(&ctx, NULL, c->err))
        goto out;
    caption_init(&cp, s, &o, "Layer %d routing: %d of %d experts per token", layer, op->k, E);
    caption_note(&cp, "Cells: the router's weight of each expert for each token; dots: the %d it chose.", op->k);
    /* op is the choice (TOPK): a selection bias or group limit lets it pass over a larger weight */
    if (op->b || op->n_group > 1)
        caption_note(&cp, "The choice is made on the weights%s%s, so a dot may sit on a darker cell than one "
                     "left out.", op->b ? " plus a per-expert selection bias (which balances the load)" : "",
                     op->n_group > 1 ? " within the best groups of experts" : "");
    char loads[512];
    size_t lo = 0;
    for (int e = 0; e < E && lo < sizeof loads - 16; e++)
        lo += (size_t)snprintf(loads + lo, sizeof loads - lo, "%s%d %.0f%%", e ? ", " : "", e,
                               100.0 * v[(size_t)n * (size_t)E + (size_t)e]);
    caption_note(&cp, "Bottom row, load: the share of the %d tokens that chose each expert (%s).", n, loads);
    if (as_fig_heatmap(&f, ctx, &o.st, &cp.c, &h, c->err))
        goto out;
    rc = finish_layer(c, f, &o, n, path, fmt, "routing", layer);
    f = NULL;
out:
    as_figure_free(f);
    as_fig_ctx_free(ctx);
    free_labels(rows, rows && rows == all_rows ? R : n);
    free_labels(cols, E);
    free(v);
    free(mk);
    return rc;
}

/* ---- next-token probabilities ---- */

static int export_probs(cmd_ctx *c)
{
    as_session *s = c->s;
    if (c->argc < 3)
        return as_error_set(c->err, "usage: export probs FILE.png|FILE.svg|FILE.pdf [key=value ...]");
    const char *path = c->argv[2];
    export_opts o;
    as_fig_format fmt;
    if (as_fig_format_of(path, &fmt, c->err) || parse_opts(c, 3, OPT_FIG | OPT_SCALE | OPT_TOP, &o))
        return AS_ERR;
    const float *logits = as_interp_logits(s->it);
    if (!logits) {
        if (as_cmd_require_tokens(s, c->err))
            return AS_ERR;
        return as_error_set(c->err, "no logits yet at position %d: the pass is not finished (`finish` computes them)",
                            s->it->out->n_tokens - 1);
    }
    o.top = o.top ? o.top : 10;
    int V = s->model->cfg.n_vocab, k = (int)(o.top < V ? o.top : V), pos = s->it->out->n_tokens - 1;
    if (as_cmd_nonfinite_logits(s, logits, pos, c->err))
        return AS_ERR;
    as_probs(logits, V, s->probs);
    k = as_top_indices(s->probs, V, k, s->order);
    char **labels = calloc((size_t)k, sizeof *labels);
    float *p = malloc((size_t)k * sizeof *p);
    char *ctx_text = context_text(s, pos >= 12 ? pos - 11 : 0, pos + 1);
    as_fig_ctx *ctx = NULL;
    as_figure *f = NULL;
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
    if (as_fig_ctx_new(&ctx, NULL, c->err))
        goto out;
    char what[64];
    caption cp;
    bool enc = as_cmd_is_encoder(s); /* the head predicts the token at the position itself */
    caption_init(&cp, s, &o, enc ? "Predictions at position %d" : "Next token after position %d", pos);
    caption_note(&cp, "The context ends: %s%s", pos >= 12 ? "\xE2\x80\xA6" : "", ctx_text);
    as_fig_probs pr = {k, (const char *const *)labels, p};
    if (as_fig_prob_bars(&f, ctx, &o.st, &cp.c, &pr, c->err))
        goto out;
    char val[16];
    snprintf(val, sizeof val, "%d", pos);
    if (as_figure_add_meta(f, "Position", val, c->err))
        goto out;
    snprintf(what, sizeof what, enc ? "masked-LM probabilities, top %d" : "next-token probabilities, top %d", k);
    rc = finish(c, f, &o, 0, pos + 1, path, fmt, what);
    f = NULL;
out:
    as_figure_free(f);
    as_fig_ctx_free(ctx);
    free_labels(labels, k);
    free(p);
    free(ctx_text);
    return rc;
}

/* For every generated position p, the distribution its token was drawn
 * from: the softmax of the captured logits at p - 1. */
static int export_probs_trace(cmd_ctx *c)
{
    as_session *s = c->s;
    if (c->argc < 3)
        return as_error_set(c->err, "usage: export probs-trace FILE.png|FILE.svg|FILE.pdf [key=value ...]");
    const char *path = c->argv[2];
    export_opts o;
    as_fig_format fmt;
    if (as_fig_format_of(path, &fmt, c->err) ||
        parse_opts(c, 3, OPT_FIG | OPT_CMAP | OPT_SCALE | OPT_TOP | OPT_TOKENS, &o))
        return AS_ERR;
    o.top = o.top ? o.top : 5;
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
    if (o.window) {
        export_opts w = o;
        w.hide_bos = false;
        if (resolve_window(s, &w, it->out->n_tokens, &a, &b, c->err))
            return AS_ERR;
        a = a < first ? first : a;
    }
    if (b > filled + 1)
        b = filled + 1; /* a token whose logits are not computed yet */
    if (a >= b)
        return as_error_set(c->err, "no generated token in the chosen positions has its logits computed");
    int S = b - a, V = s->model->cfg.n_vocab, K = (int)(o.top < V ? o.top : V);
    int *positions = malloc((size_t)S * sizeof *positions), *rank = malloc((size_t)S * sizeof *rank);
    float *cp = malloc((size_t)S * sizeof *cp), *ap = malloc((size_t)S * (size_t)K * sizeof *ap);
    char **chosen = calloc((size_t)S, sizeof *chosen), **alts = calloc((size_t)S * (size_t)K, sizeof *alts);
    as_fig_ctx *ctx = NULL;
    as_figure *f = NULL;
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
    if (as_fig_ctx_new(&ctx, NULL, c->err))
        goto out;
    char what[64];
    caption capt;
    caption_init(&capt, s, &o, "Probability of each generated token");
    caption_note(&capt, "Probabilities are the softmax of the logits each token was drawn from, at temperature 1 "
                        "(the tokens were sampled with %s); the table holds each step's top %d.",
                 s->sampled[0] ? s->sampled : "no gen: given as ids", K);
    as_fig_trace tr = {S, K, positions, (const char *const *)chosen, cp, rank, (const char *const *)alts, ap};
    if (as_fig_prob_trace(&f, ctx, &o.st, &capt.c, &tr, c->err))
        goto out;
    snprintf(what, sizeof what, "probability trace, %d steps", S);
    rc = finish(c, f, &o, a, b, path, fmt, what);
    f = NULL;
    goto out;
oom:
    as_error_set(c->err, "out of memory");
out:
    as_figure_free(f);
    as_fig_ctx_free(ctx);
    free_labels(chosen, S);
    free_labels(alts, S * K);
    free(positions);
    free(rank);
    free(cp);
    free(ap);
    return rc;
}

/* ---- attention over an image ---- */

/* export overlay LAYER HEAD|mean|rollout|all FILE: [CLS]'s attention to
 * the patches over the input image (one head, the mean of the heads, the
 * rollout through layers 0..LAYER, or every head of the layer). */
int as_cmd_export_overlay(cmd_ctx *c)
{
    as_session *s = c->s;
    static const char usage[] = "usage: export overlay LAYER HEAD|mean|rollout|all FILE.png|FILE.svg|FILE.pdf "
                                "[key=value ...]";
    if (c->argc < 5)
        return as_error_set(c->err, "%s", usage);
    const as_stream *st = &s->prog->streams[s->prog->out_stream];
    if (st->input != AS_INPUT_PIXELS)
        return as_error_set(c->err, "export overlay lays attention over an image: %s reads tokens (export attn "
                                    "draws its heatmap)", s->model->cfg.name);
    int layer, H = s->model->cfg.n_head;
    long head = -1;
    const char *which = c->argv[3];
    bool mean = !strcmp(which, "mean"), roll = !strcmp(which, "rollout"), all = !strcmp(which, "all");
    if (parse_layer(s, c->argv[2], &layer, c->err) ||
        (!mean && !roll && !all && as_cmd_parse_long(which, 0, H - 1, "the head (or mean, rollout, all)", &head, c->err)))
        return AS_ERR;
    const char *path = c->argv[4];
    as_fig_format fmt;
    export_opts o;
    if (as_fig_format_of(path, &fmt, c->err) || parse_opts(c, 5, OPT_FIG | OPT_CMAP, &o) ||
        as_cmd_require_tokens(s, c->err))
        return AS_ERR;
    int hook = as_program_hook(s->prog, AS_HK_PATTERN, layer), n = s->it->out->n_tokens;
    int q = s->prog->logits_pos >= 0 ? s->prog->logits_pos : 0;
    if (hook < 0 || !as_capture_has(s->cap, hook) || s->cap->filled[hook] < n)
        return as_error_set(c->err, "blocks.%d.attn.hook_pattern is not computed yet (`finish` runs the pass)", layer);
    const as_patch_spec *ps = &st->patch;
    int G = ps->grid, NP = G * G, S = ps->size, n_maps = all ? H : 1;
    float *maps = calloc((size_t)n_maps * (size_t)NP, sizeof *maps), *roll_m = NULL;
    uint8_t *rgb = malloc((size_t)S * (size_t)S * 3);
    const float **mp = calloc((size_t)n_maps, sizeof *mp);
    char(*names)[32] = calloc((size_t)n_maps, sizeof *names);
    const char **titles = calloc((size_t)n_maps, sizeof *titles);
    int rc = AS_OK;
    if (!maps || !rgb || !mp || !names || !titles) {
        rc = as_error_set(c->err, "out of memory");
        goto out;
    }
    if (roll) {
        if (!(roll_m = malloc((size_t)n * (size_t)n * sizeof *roll_m))) {
            rc = as_error_set(c->err, "out of memory");
            goto out;
        }
        if ((rc = as_attn_rollout_layers(s->cap, n, layer + 1, roll_m, c->err)))
            goto out;
        for (int i = 0; i < NP; i++)
            maps[i] = roll_m[(size_t)q * (size_t)n + 1 + (size_t)i];
    } else {
        for (int m = 0; m < n_maps; m++)
            for (int i = 0; i < NP; i++) {
                if (mean) {
                    double sum = 0;
                    for (int h = 0; h < H; h++)
                        sum += as_capture_attn(s->cap, hook, h, q, 1 + i);
                    maps[i] = (float)(sum / H);
                } else {
                    maps[(size_t)m * NP + (size_t)i] = as_capture_attn(s->cap, hook, all ? m : (int)head, q, 1 + i);
                }
            }
    }
    for (int i = 0; i < n_maps * NP; i++)
        if (!isfinite(maps[i])) { /* drawn as 0, it would look like a head that looks nowhere */
            rc = as_cmd_check_finite(s, s->cap, hook, roll ? 0 : q, roll ? n : q + 1, "export overlay: no figure",
                                     c->err);
            if (rc == AS_OK)
                rc = as_error_set(c->err, "export overlay: no figure: the map holds %g at patch %d", maps[i], i % NP);
            goto out;
        }
    float vmax = 0;
    for (int i = 0; i < n_maps * NP; i++)
        vmax = maps[i] > vmax ? maps[i] : vmax;
    if (!(vmax > 0))
        vmax = 1;
    for (int m = 0; m < n_maps; m++) {
        mp[m] = maps + (size_t)m * NP;
        snprintf(names[m], sizeof names[m], "head %d", m);
        titles[m] = names[m];
    }
    const float *px = s->it->st[s->prog->out_stream].pixels;
    for (int i = 0; i < S * S; i++)
        for (int k = 0; k < 3; k++) {
            int ch = ps->channels == 1 ? 0 : k;
            float v = px[(size_t)ch * (size_t)S * (size_t)S + (size_t)i] * st->image.std[ch] + st->image.mean[ch];
            rgb[(size_t)i * 3 + (size_t)k] = (uint8_t)lrintf(255 * (v < 0 ? 0 : v > 1 ? 1 : v));
        }
    caption cp;
    char qn[32];
    as_cmd_position_label(s, q, qn, sizeof qn);
    if (roll)
        caption_init(&cp, s, &o, "Attention rollout to %s, layers 0-%d", qn, layer);
    else if (all)
        caption_init(&cp, s, &o, "Layer %d \xC2\xB7 every head \xC2\xB7 %s's attention", layer, qn);
    else if (mean)
        caption_init(&cp, s, &o, "Layer %d \xC2\xB7 mean of %d heads \xC2\xB7 %s's attention to the patches", layer, H, qn);
    else
        caption_init(&cp, s, &o, "Layer %d \xC2\xB7 head %ld \xC2\xB7 %s's attention to the patches", layer, head, qn);
    caption_note(&cp, "Colour over each of the %d x %d patches: %s, on a scale from 0 to the largest shown (%.3g); "
                      "the weight on %s itself is not drawn%s.",
                 G, G, roll ? "its share of the rollout (Abnar & Zuidema: 0.5 x mean over heads + 0.5 x I per layer, "
                              "rows renormalised, multiplied through the layers)"
                            : "the attention weight",
                 (double)vmax, qn, roll ? "" : " (it takes the rest of the row)");
    as_fig_overlay ov = {.size = S, .rgb = rgb, .grid = G, .n_maps = n_maps, .maps = mp,
                         .map_titles = all ? titles : NULL, .vmax = vmax, .alpha = 0.6f, .marked = -1,
                         .cbar_label = roll ? "rollout share" : "attention weight"};
    if (q >= 1)
        ov.marked = q - 1;
    as_figure *f;
    as_fig_ctx *ctx = NULL;
    if ((rc = as_fig_ctx_new(&ctx, NULL, c->err)) == AS_OK &&
        (rc = as_fig_overlay_view(&f, ctx, &o.st, &cp.c, &ov, c->err)) == AS_OK) {
        char what[96];
        snprintf(what, sizeof what, "overlay layer %d %s", layer, which);
        rc = finish(c, f, &o, 0, n, path, fmt, what);
    }
    as_fig_ctx_free(ctx);
out:
    free(maps);
    free(roll_m);
    free(rgb);
    free(mp);
    free(names);
    free(titles);
    return rc;
}

static int export_experts(cmd_ctx *c);

int as_cmd_export(cmd_ctx *c)
{
    static const char usage[] = "usage: export attn LAYER HEAD FILE | export grid LAYER|all FILE | export lines "
                                "LAYER HEAD|all FILE | export norms LAYER|final FILE | export probs FILE | export "
                                "probs-trace FILE | export overlay LAYER HEAD|mean|rollout|all FILE | export routing LAYER FILE | export load FILE | export experts LAYER FILE  (FILE .png, .svg "
                                "or .pdf, then key=value options)";
    if (c->argc < 2)
        return as_error_set(c->err, "%s", usage);
    const char *what = c->argv[1];
    if (!strcmp(what, "attn"))
        return export_attn(c);
    if (!strcmp(what, "grid"))
        return export_grid(c);
    if (!strcmp(what, "lines"))
        return export_lines(c);
    if (!strcmp(what, "norms"))
        return export_norms(c);
    if (!strcmp(what, "probs"))
        return export_probs(c);
    if (!strcmp(what, "probs-trace"))
        return export_probs_trace(c);
    if (!strcmp(what, "overlay"))
        return as_cmd_export_overlay(c);
    if (!strcmp(what, "load"))
        return as_cmd_export_load(c);
    if (!strcmp(what, "routing"))
        return export_routing(c);
    if (!strcmp(what, "experts"))
        return export_experts(c);
    return as_error_set(c->err, "export: unknown figure '%s' (attn, grid, lines, norms, probs, probs-trace, overlay, "
                        "routing, load, experts)",
                        what);
}

/* export experts LAYER FILE: one column per routed expert, the tokens
 * it took most often over the context (hook_expert_indices), each with a
 * bar for its share of that expert's choices. */
#define EXPERT_FIG_ROWS 8
static int export_experts(cmd_ctx *c)
{
    as_session *s = c->s;
    export_opts o;
    as_fig_format fmt;
    int layer, hi;
    const as_op *op;
    if (routed_figure_args(c, "experts", &layer, &hi, &op, &o, &fmt))
        return AS_ERR;
    const char *path = c->argv[3];
    int n = as_cmd_hook_positions(s, hi, c->err);
    int hw = as_program_hook_in(s->prog, AS_HK_EXPERT_WEIGHTS, layer, s->prog->out_stream);
    if (n < 0)
        return AS_ERR;
    /* experts chosen from non-finite weights are no choice */
    if (hw >= 0 && as_capture_has(s->cap, hw) && s->cap->filled[hw] >= n &&
        as_cmd_check_finite(s, s->cap, hw, 0, n, "export experts: no figure", c->err))
        return AS_ERR;
    int E = op->n_expert, R = EXPERT_FIG_ROWS, rows = 0;
    int32_t *ids = malloc((size_t)n * sizeof *ids);
    int *cnt = malloc((size_t)n * sizeof *cnt);
    as_fig_expert_col *cols = calloc((size_t)E, sizeof *cols);
    char **labels = calloc((size_t)E * (size_t)R, sizeof *labels), **titles = calloc((size_t)E, sizeof *titles);
    float *share = calloc((size_t)E * (size_t)R, sizeof *share), full = 0;
    int *counts = calloc((size_t)E * (size_t)R, sizeof *counts);
    as_fig_ctx *ctx = NULL;
    as_figure *f = NULL;
    caption cp;
    int rc = AS_ERR;
    if (!ids || !cnt || !cols || !labels || !titles || !share || !counts) {
        as_error_set(c->err, "out of memory");
        goto out;
    }
    for (int e = 0; e < E; e++) {
        int chosen, nd = as_cmd_expert_tokens(s, hi, e, n, R, ids, cnt, &chosen);
        int shown = nd < R ? nd : R;
        for (int t = 0; t < shown; t++) {
            int32_t bi = ids[t];
            int bc = cnt[t];
            char piece[48];
            as_cmd_label(s, bi, 12, piece, sizeof piece);
            if (!(labels[e * R + t] = malloc(64))) {
                as_error_set(c->err, "out of memory");
                goto out;
            }
            snprintf(labels[e * R + t], 64, "%s", piece);
            counts[e * R + t] = bc;
            share[e * R + t] = (float)bc / (float)chosen;
            full = fmaxf(full, share[e * R + t]);
        }
        if (!(titles[e] = malloc(32))) {
            as_error_set(c->err, "out of memory");
            goto out;
        }
        snprintf(titles[e], 32, "%d: %.0f%%", e, n ? 100.0 * chosen / n : 0.0);
        cols[e] = (as_fig_expert_col){titles[e], shown, (const char *const *)labels + e * R, counts + e * R,
                                      share + e * R};
        rows = shown > rows ? shown : rows;
    }
    as_fig_experts ex = {E, rows > 0 ? rows : 1, full > 0 ? full : 1, cols};
    if (as_fig_ctx_new(&ctx, NULL, c->err))
        goto out;
    caption_init(&cp, s, &o, "Layer %d: the tokens each expert takes most often", layer);
    caption_note(&cp, "Columns: the %d routed experts, each headed by its load (the share of the %d tokens that "
                 "chose it; %d chosen per token).", E, n, op->k);
    caption_note(&cp, "Lines: a token and how many times the expert took it, the most frequent first (at most %d); "
                 "bars: that count's share of the expert's choices (a column's width is %.0f%%).", R, 100.0 * ex.full);
    if (as_fig_expert_tokens(&f, ctx, &o.st, &cp.c, &ex, c->err))
        goto out;
    rc = finish_layer(c, f, &o, n, path, fmt, "experts", layer);
    f = NULL;
out:
    as_figure_free(f);
    as_fig_ctx_free(ctx);
    if (labels)
        free_labels(labels, E * R);
    if (titles)
        free_labels(titles, E);
    free(cols);
    free(share);
    free(counts);
    free(ids);
    free(cnt);
    return rc;
}

/* ---- dump all ---- */

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
    char *text = context_text(s, 0, s->it->out->n_tokens);
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
        char *stext = source_text(s);
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
