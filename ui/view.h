/* view: what the full-screen view shows (layer, head, selected token,
 * norm, grid, colormap, pace of `gen`), and the view's own commands
 * (`set delay`, `set cmap`, `view ...`, `view dump FILE`), which sit in front of the
 * session's commands. No terminal here: the plain REPL and batch mode run
 * the same commands (they only take effect in the full-screen view). */
#ifndef ATTNSCOPE_UI_VIEW_H
#define ATTNSCOPE_UI_VIEW_H

#include <stdbool.h>
#include <stdio.h>

#include "attnscope/colormap.h"
#include "attnscope/engine.h"
#include "attnscope/view_api.h"

struct lesson;

/* The norms the pane can show, in the order N steps through them; a
 * program shows those it has (Gemma's post-norms, say). */
typedef enum norm_kind { NK_LN1, NK_LN1_POST, NK_LN2, NK_LN2_POST, NK_LN3, NK_FINAL, NK_COUNT } norm_kind;

/* What the image pane shows (a vision model): `i` cycles them. */
enum { IMG_BLEND, IMG_IMAGE, IMG_HEAT, IMG_MODES };

typedef struct view {
    int layer, head;
    int image_mode;   /* IMG_*: the image, the selected query's attention over it, or both */
    int query;        /* the selected token: the heatmap's cursor row */
    int key;          /* the heatmap's cursor column */
    bool follow;      /* the query moves to each new token */
    norm_kind norm;
    bool grid;        /* every head of the layer as small multiples */
    bool grad_page;   /* G: the norms pane shows d metric / d (the norm's input) per position */
    as_site_pick site; /* the attention the heatmap shows: self, or an encoder-decoder's cross-attention or
                        * its encoder's self-attention */
    int src_query;    /* the heatmap's row on the encoder's self-attention: a source position (the other
                       * panes keep showing the decoder's selected token) */
    as_cmap cmap;
    int zoom;         /* the heatmap's cells: zoom x zoom tokens each (a power of two; 1 one token a cell) */
    bool zoom_mean;   /* a zoomed cell is its block's mean weight, else its largest */
    int delay_ms;     /* pause after each generated token */
    int pane_req;     /* `view PANE`: the pane to focus (VIEW_PANES order), -1 none; the view takes it */
    /* `view dump FILE`: writes the screen as text; set by the full-screen
     * view, NULL where there is no screen (the REPL, batch mode). */
    int (*dump)(void *ctx, const char *path, as_error *err);
    int (*dump_layout)(void *ctx, const char *path, as_error *err); /* `view dump-layout FILE`: the panes' places */
    void *dump_ctx;
    /* `lesson NAME`: the full-screen view and the REPL take the lesson
     * (*l, to free) and pause between its steps; NULL: the steps run
     * straight through, each step's text printed before its commands
     * (batch mode). */
    int (*lesson)(void *ctx, struct lesson *l, as_error *err);
    bool in_lesson;   /* a lesson's step is running: a `lesson` inside it is refused */
} view;

/* The panes `view PANE` names, in the full-screen view's Tab order (the
 * keys 1-8 too): attention, tokens, probs, lens, norms, output, a
 * model with routed MLPs' routing pane, and the concept views: the
 * attention worked out, positions, the MLP, the residual stream, MLA. */
#define VIEW_N_PANES 12
const char *view_pane_name(int i);

void view_init(view *v);
/* Keeps the selection inside the model and the context (after a prompt,
 * a generated token or `back`); with follow on, selects the newest token. */
void view_clamp(view *v, const as_session *s);
const char *view_norm_name(norm_kind k);
/* The largest zoom worth having for n tokens: the power of two at which
 * the whole context is one or two cells (at most 4096). */
int view_zoom_most(int n);
/* `view find TEXT`: the first position after `from` (wrapping) whose
 * token starts an occurrence of TEXT in the context's text, or -1. */
int view_find(const as_session *s, const char *text, int from);
/* `view site self|cross|encoder`: an encoder-decoder's heatmap shows its
 * decoder's self-attention, its cross-attention over the source, or its
 * encoder's self-attention. */
int view_site(view *v, const as_session *s, const char *name, as_error *err);
/* The heatmap's cursor row: the selected token, or on the encoder's
 * self-attention the selected source position. */
static inline int view_row(const view *v)
{
    return v->site == AS_PICK_SOURCE ? v->src_query : v->query;
}
/* The scale hook of norm k (in `layer` for a block's norms) among the
 * output stream's (an encoder-decoder's decoder's), or -1 where the
 * program has none. */
int view_norm_hook(const as_program *p, int layer, norm_kind k);
/* The next norm the program has from k, stepping by d (+1 or -1). */
norm_kind view_norm_step(const as_program *p, int layer, norm_kind k, int d);

/* Runs one command: a view command, else the session's. *view_changed
 * (may be NULL) is set when the view's selection or look changed. */
int view_exec(view *v, as_session *s, const char *cmd, bool *view_changed, as_error *err);
/* A lesson's model: loads it unless the session has it already. */
int view_lesson_model(as_session *s, const struct lesson *l, as_error *err);

/* The view commands, for help and completion. */
const as_command_info *view_commands(int *n);

#endif
