/* Internal to the `export` command and its figures: what the skeleton
 * (export.c) gives every kind of figure (export_attn.c, export_norms.c,
 * export_probs.c, export_routing.c, export_overlay.c, export_table.c).
 * Not part of the public API.
 *
 * Every figure runs the same skeleton: as_export_begin (the file's format,
 * then the options the kind takes), the kind gathers its data, names it
 * (as_export_title, as_export_note, as_export_meta), and as_export_write
 * draws it, adds the provenance, writes the file and says "wrote ...".
 * A figure's caption keeps apart what it shows (the title), where it
 * comes from (model and prompt, the subtitle) and what was left out or
 * normalised (the notes). */
#ifndef ATTNSCOPE_EXPORT_INTERNAL_H
#define ATTNSCOPE_EXPORT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "attnscope/figure.h"
#include "session_internal.h"

/* ---- options ---- */

enum {
    OPT_CMAP = 1 << 0, OPT_DPI = 1 << 1, OPT_SCALE = 1 << 2, OPT_HIDE_BOS = 1 << 3,
    OPT_TOKENS = 1 << 4, OPT_TITLE = 1 << 5, OPT_TOP = 1 << 6, OPT_WIDTH = 1 << 7,
    OPT_HEIGHT = 1 << 8, OPT_FONT = 1 << 9, OPT_SITE = 1 << 10, OPT_CELLS = 1 << 11,
    /* what every figure takes: its size, text size, resolution and title */
    OPT_FIG = OPT_DPI | OPT_TITLE | OPT_WIDTH | OPT_HEIGHT | OPT_FONT,
};

typedef struct export_opts {
    as_fig_style st;
    const char *title;   /* NULL: the default title */
    bool hide_bos;
    bool window;         /* tokens=FROM:TO given */
    long from, to;       /* Python slice bounds; LONG_MIN/LONG_MAX when left open */
    long top;            /* top=K, 0 when not given */
    as_site_pick site;   /* site=self|cross|encoder: which attention of a layer (self by default) */
    bool cells_mean;     /* cells=mean: a vector figure's aggregated cells are their blocks' means, else maxima */
} export_opts;

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

/* ---- the skeleton ---- */

/* Which builder of figure.h draws the figure, and so what as_export_write's
 * data is. */
typedef enum export_draw {
    EXPORT_HEATMAP,  /* as_fig_heat */
    EXPORT_OVERLAY,  /* as_fig_overlay */
    EXPORT_LINES,    /* as_fig_lines */
    EXPORT_NORMS,    /* as_fig_norms */
    EXPORT_PROBS,    /* as_fig_probs */
    EXPORT_EXPERTS,  /* as_fig_experts */
    EXPORT_TRACE,    /* as_fig_trace */
} export_draw;

#define EXPORT_MAX_META 3

/* One figure being exported. */
typedef struct export_fig {
    cmd_ctx *c;
    const char *path;
    as_fig_format fmt;
    export_opts o;
    caption cp;
    int n_meta; /* the figure's own metadata (Layer, Head, ...), before the provenance */
    const char *meta_key[EXPORT_MAX_META];
    char meta_val[EXPORT_MAX_META][32];
} export_fig;

/* Starts e: the format of path, then the options from argv[opt_first] on
 * (the bits of `allowed`); AS_ERR saying which is wrong. */
int as_export_begin(export_fig *e, cmd_ctx *c, const char *path, int opt_first, unsigned allowed);
/* The same checks alone (the file's format, the options), for a command
 * that computes a while before it draws: bad options said before the work. */
int as_export_check(cmd_ctx *c, const char *path, int opt_first, unsigned allowed);
/* The caption's title (title= wins over the default fmt), its subtitle
 * from the session, and an image's input as the first note. */
void as_export_title(export_fig *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void as_export_note(export_fig *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* What a window of [a, b) out of n positions leaves out, as a note. */
void as_export_note_window(export_fig *e, int a, int b, int n);
/* A key of the figure's own metadata (at most EXPORT_MAX_META). */
void as_export_meta(export_fig *e, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Draws data with the builder `draw`, adds e's metadata and the
 * provenance (positions [a, b)), writes the file and reports it as
 * "wrote PATH: WHAT WxH unit". */
int as_export_write(export_fig *e, export_draw draw, const void *data, int a, int b, const char *what);

/* ---- what the kinds share ---- */

int as_export_parse_layer(as_session *s, const char *arg, int *layer, as_error *err);
/* The positions [*a, *b) a figure shows out of [0, n) of a stream (the
 * output stream: as_export_window). */
int as_export_window_in(as_session *s, int stream, const export_opts *o, int n, int *a, int *b, as_error *err);
int as_export_window(as_session *s, const export_opts *o, int n, int *a, int *b, as_error *err);
/* Labels of a stream's positions [a, b), malloc'd strings; numbered with
 * their positions when numbered (a cropped figure says where it is). */
char **as_export_stream_labels(const as_session *s, int stream, int a, int b, bool numbered);
char **as_export_position_labels(const as_session *s, int a, int b, bool numbered);
void as_export_free_labels(char **l, int n);
/* The context's text [a, b), and an encoder-decoder's source (NULL
 * without one), decoded as the tokenizer does; malloc'd. */
char *as_export_context_text(const as_session *s, int a, int b);
char *as_export_source_text(const as_session *s);

/* ---- the kinds (called by cmd_export.c) ---- */

int as_export_attn(cmd_ctx *c);
int as_export_grid(cmd_ctx *c);
int as_export_lines(cmd_ctx *c);
int as_export_norms(cmd_ctx *c);
int as_export_probs(cmd_ctx *c);
int as_export_probs_trace(cmd_ctx *c);
int as_export_routing(cmd_ctx *c);
int as_export_experts(cmd_ctx *c);

#endif
