/* tui: the full-screen view. One struct holds what the panes need; the
 * main loop (tui.c) reads keys, runs commands and redraws only the panes
 * whose `dirty` bit is set. Key handlers (keys.c) return the bits to set,
 * as htop's handlers return what to redraw. Each pane draws itself from
 * the session's capture (pane_*.c, status.c, cmdline.c). */
#ifndef ATTNSCOPE_UI_TUI_H
#define ATTNSCOPE_UI_TUI_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "attnscope/session.h"
#include "heatmap.h"
#include "layout.h"
#include "logbuf.h"
#include "term.h"
#include "view.h"

/* Redraw bits: one per pane, plus a new layout (windows remade). */
#define RD(p) (1u << (p))
#define RD_LAYOUT (1u << P_COUNT)
#define RD_HELP (1u << (P_COUNT + 1))
#define RD_PANES ((1u << P_COUNT) - 1)
#define RD_DATA (RD(P_ATTN) | RD(P_TOKENS) | RD(P_PROBS) | RD(P_LENS) | RD(P_NORMS) | RD(P_STATUS))

typedef struct tui {
    as_session *s;
    term t;
    layout lay;
    WINDOW *win[P_COUNT];
    view v;
    pane_id focus;
    pane_id last_pane;   /* where Esc from the command line returns */
    pane_id shared;      /* which side pane (probs, lens, norms, log) a shared slot shows */
    unsigned dirty;
    bool help;           /* the key overlay is up */
    bool busy;           /* a command is running: keys that run commands wait */
    bool quit;
    volatile sig_atomic_t *interrupted;

    logbuf log;
    int log_scroll;      /* visual lines up from the newest */
    FILE *null_out;      /* the session's streams between commands */
    FILE *cap_out, *cap_warn; /* the running command's output, captured */
    char *cap_out_buf, *cap_warn_buf;
    size_t cap_out_len, cap_warn_len, cap_out_seen, cap_warn_seen;
    char running[128];   /* the command being run, for the command line */
    struct typed_key {
        int ch;
        bool keycode;
    } *ahead;            /* keys typed while it ran (a paste, say), handled after it */
    int first_ahead, n_ahead, cap_ahead; /* waiting: [first_ahead, n_ahead) */

    /* Remembered from the last draw, for scrolling and mouse hits. */
    hm_geom geom;
    hm_grid grid;
    int heat_y, heat_x;  /* the heat area's origin inside the attention window */
    int tok_first_row;
    int tok_rows, *tok_row, *tok_col, tok_n, tok_cap;
    int norm_first;

    float *probs;        /* vocabulary-sized scratch of the probabilities and lens panes */
    int *order;
    struct lens_cache *lens; /* the lens pane's rows, kept until the pass or token changes */
} tui;

/* Runs the view until quit; returns the exit status. notes are shown in
 * the log at start (model warnings). */
int as_tui(as_session *s, volatile sig_atomic_t *interrupted, const char *notes);

/* keys.c */
unsigned tui_key(tui *u, int ch, bool keycode);
/* Whether a key must wait for the running command to finish (it starts a
 * command, or is typed ahead into the command line). */
bool tui_key_waits(const tui *u, int ch, bool keycode);
unsigned tui_mouse(tui *u);
/* Runs a command line (';'-separated) and logs its output. */
void tui_run_line(tui *u, const char *line);
/* The panes that change when the view's selection or data changes. */
unsigned tui_after_command(tui *u);
/* Draws dirty panes and shows them. */
void tui_redraw(tui *u);

/* frame.c: a pane's box and title. */
void draw_box(const tui *u, WINDOW *w);
void pane_frame(tui *u, pane_id p, const char *title, const char *note);
void pane_message(tui *u, pane_id p, const char *msg);
/* Puts text at (y, x) of w cut to width columns; returns columns used. */
int put_text(tui *u, WINDOW *w, int y, int x, const char *s, int width);
/* The visible piece of token id (whitespace made visible). */
void token_label(const tui *u, int pos, char *out, size_t cap);
/* The same for a token id. */
void piece_label(const tui *u, int32_t id, char *out, size_t cap);
/* The vocabulary-sized scratch (probs, order) the panes share; false if out of memory. */
bool vocab_scratch(tui *u);

void pane_tokens_draw(tui *u);
void pane_attn_draw(tui *u);
void pane_norms_draw(tui *u);
void pane_probs_draw(tui *u);
void pane_lens_draw(tui *u);
void pane_log_draw(tui *u);
void status_draw(tui *u);
void help_draw(tui *u);

/* screendump.c: the screen as plain text (`view dump FILE`), written
 * through a temporary file renamed into place. */
int screen_dump(const tui *u, const char *path, as_error *err);

/* cmdline.c: GNU readline inside the view. */
void cmdline_init(tui *u);
void cmdline_close(void);
void cmdline_key(tui *u, int ch, bool keycode);
void cmdline_clear(tui *u);
bool cmdline_empty(void);
void cmdline_draw(tui *u);
/* A line readline finished (malloc'd), or NULL. */
char *cmdline_take_line(void);
bool cmdline_eof(void);

#endif
