/* tui: the full-screen view. One struct holds what the panes need; the
 * main loop (tui.c) reads keys, runs commands and redraws only the panes
 * whose `dirty` bit is set. Each pane is a class in htop's manner
 * (pane_class below, listed in panes.c): it says whether it applies to the
 * loaded program, draws itself from the session's capture, keeps its own
 * state (which only its file knows), and may handle keys and clicks of its
 * own when focused; handlers return the redraw
 * bits of the panes that show what changed, as htop's return what to
 * redraw. The view's own keys are in keys.c. */
#ifndef ATTNSCOPE_UI_TUI_H
#define ATTNSCOPE_UI_TUI_H

#include <signal.h>
#include <stdbool.h>
#include <stdio.h>

#include "attnscope/engine.h"
#include "attnscope/view_api.h"
#include "heatmap.h"
#include "layout.h"
#include "logbuf.h"
#include "term.h"
#include "view.h"

/* Redraw bits: one per pane, plus a new layout (windows remade). A pane's
 * key or mouse handler returns RD_IGNORED for what is not its own: the
 * view's keys then decide. */
#define RD(p) (1u << (p))
#define RD_LAYOUT (1u << P_COUNT)
#define RD_HELP (1u << (P_COUNT + 1))
#define RD_POPUP (1u << (P_COUNT + 2))
#define RD_LESSON (1u << (P_COUNT + 3))
#define RD_IGNORED (1u << 31)
#define RD_PANES ((1u << P_COUNT) - 1)

#define KEY_ESC 27

/* What of the view a pane shows: the panes showing a thing are redrawn
 * when it changes (panes_showing). */
enum {
    SHOWS_LAYER = 1 << 0,  /* the selected layer */
    SHOWS_HEAD = 1 << 1,   /* the selected head */
    SHOWS_QUERY = 1 << 2,  /* the selected token */
    SHOWS_KEY = 1 << 3,    /* the heatmap cursor's key */
    SHOWS_NORM = 1 << 4,   /* which norm */
    SHOWS_LOOK = 1 << 5,   /* colormap, one head or the grid */
    SHOWS_DATA = 1 << 6,   /* the context, the capture, where the interpreter stands */
    SHOWS_LOG = 1 << 7,    /* what commands printed */
    SHOWS_FOCUS = 1 << 8,  /* which pane has the focus (besides the focused pane itself) */
    SHOWS_BUSY = 1 << 9,   /* a command is running */
};

struct pane_class;

typedef struct tui {
    as_session *s;
    /* The panes (panes.c's table, by pane_id) and each one's own state,
     * which only its file knows (NULL: none). */
    const struct pane_class *const *panes;
    void *pane_state[P_COUNT];
    term t;
    layout lay;
    WINDOW *win[P_COUNT];
    view v;
    pane_id focus;
    pane_id last_pane;   /* where Esc from the command line returns */
    pane_id shared;      /* which side pane (probs, lens, norms, log) a shared slot shows */
    unsigned present;    /* the panes that apply to the program (RD bits), as of the last layout */
    unsigned dirty;
    bool help;           /* the key overlay is up */
    int help_top;        /* its first line shown, when it is taller than the screen */
    /* Where a command's output shows when the Output pane is hidden (a
     * small screen): a typed command's in an overlay over the bottom of
     * the screen, a key's (s, Space, e...) as one line in the command
     * line's row; both go at the next key. Log line numbers (log.total). */
    bool popup;
    long popup_from, echo_from;
    /* A lesson being given (tour.c): its step on screen, in a box. */
    struct lesson *lesson;
    int lesson_step;
    bool lesson_pending;  /* `lesson NAME` ran: its first step follows the command line */
    char lesson_error[256];
    bool lesson_grid;     /* the grid and the focus before the lesson, given back when it ends */
    pane_id lesson_focus;
    rect lesson_box;      /* where the step's box was drawn (h == 0: nowhere) */
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

    float *probs;        /* vocabulary-sized scratch of the probabilities and lens panes */
    int *order;
    const as_model *model;   /* the model the scratch, the panes' states and the layout were made for (`load`
                              * changes it) */
    const as_program *prog;  /* and the program (`set attn-result`, `set in-hooks` build another: the
                              * panes' hook indices belong to the old one) */
    /* The view's own timing (ATTNSCOPE_KEY_TIMES=FILE): for each key read,
     * the monotonic time from reading it to the end of the screen update
     * that follows, one line a key appended to the file (tui.c). */
    FILE *key_times;
    long long key_t0_ns; /* when the key waiting for its redraw was read; 0: none */
    int key_ch;
    bool key_code;
    /* A redraw's bound on making zoomed-out cells (as_capture_cells_budget;
     * 40 ms, AS_TEST_CELL_BUDGET_MS for the tests, < 0 none): the cells
     * left for later are drawn pending, and while cells_late the view
     * redraws the attention pane whenever no key waits, until it is whole. */
    double cell_budget_ms;
    int cells_late;
    /* AS_TEST_CELL_IDLE_MS (the tests' only): the wait before the first
     * redraw that goes on with the cells left for later (a moment to read
     * the partial screen); 0 otherwise. */
    int cell_idle_ms;
    bool cells_going_on; /* that wait is over: the next redraws follow at once */
    /* The logit lens's rows left for later by the same bound (pane_lens.c):
     * the lens pane is redrawn while no key waits, until it is whole. */
    bool lens_late;
    double redraw_t0_ms; /* when the redraw now drawing began (tui_now_ns, in ms) */
} tui;

/* Runs the view until quit; returns the exit status. notes are shown in
 * the log at start (model warnings). */
int as_tui(as_session *s, volatile sig_atomic_t *interrupted, const char *notes);

/* keys.c (above tour.c, run.c and the panes) */
unsigned tui_key(tui *u, int ch, bool keycode);
/* Whether a key must wait for the running command to finish (it starts a
 * command, or is typed ahead into the command line). */
bool tui_key_waits(const tui *u, int ch, bool keycode);
unsigned tui_mouse(tui *u);
/* How a command line came: typed at the command line, run by a key, or
 * by a lesson (whose box shows instead). */
typedef enum run_from { RUN_TYPED, RUN_KEY, RUN_LESSON } run_from;
/* run.c: Runs a command line (';'-separated) and logs its output; where
 * the log is hidden, shows it as `from` says. (tour_run_line: the same,
 * then a lesson it started.) */
int tui_run_line(tui *u, const char *line, run_from from);
/* Whether the Output pane is on screen. */
bool tui_log_visible(const tui *u);
/* A line for the log that a key's effect (or its lack) owes the user:
 * where the Output pane is hidden, shown in the command line's row. */
void tui_say(tui *u, log_kind kind, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The panes that change when the view's selection or data changes. */
unsigned tui_after_command(tui *u);
/* Moves what the running command printed so far into the log. */
void capture_drain(tui *u);
/* redraw.c: Draws dirty panes and shows them. */
void tui_redraw(tui *u);
void drop_windows(tui *u);
/* A key read (the main loop, tui.c): its time, for the line the screen
 * update after it writes to ATTNSCOPE_KEY_TIMES's file. */
void tui_key_read(tui *u, int ch, bool keycode);

/* frame.c: the monotonic clock in nanoseconds (the view's own timing,
 * the redraw's bound). */
long long tui_now_ns(void);
/* frame.c: a pane's box and title. */
void draw_box(const tui *u, WINDOW *w);
/* A focused box of h x w at (y, x) drawn over the panes (keys, output,
 * lesson), left in the title's colours; NULL if curses cannot make it. */
WINDOW *overlay_box(const tui *u, int h, int w, int y, int x);
void pane_frame(tui *u, pane_id p, const char *title, const char *note);
/* The frame's top line alone, drawn again: the title and note made after the pane's body. */
void pane_frame_top(tui *u, pane_id p, const char *title, const char *note);
void pane_message(tui *u, pane_id p, const char *msg);
/* Puts text at (y, x) of w cut to width columns; returns columns used. */
int put_text(tui *u, WINDOW *w, int y, int x, const char *s, int width);
/* put_text in a look (a role and attributes), the window's look restored after. */
void put_text_in(tui *u, WINDOW *w, int y, int x, const char *s, int width, int look, int attr);
/* The visible piece of token id (whitespace made visible). */
void token_label(const tui *u, int pos, char *out, size_t cap);
/* The same for a position of another stream (an encoder-decoder's source). */
void stream_label(const tui *u, int stream, int pos, char *out, size_t cap);
/* The same for a token id. */
void piece_label(const tui *u, int32_t id, char *out, size_t cap);
/* The vocabulary-sized scratch (probs, order) the panes share; false if out of memory. */
bool vocab_scratch(tui *u);

/* A pane, htop's way: one object per file (pane_*.c, status.c,
 * cmdline.c), listed in panes.c. */
typedef struct pane_class {
    const char *name;
    unsigned shows;        /* SHOWS_* bits: redrawn when one of these changes */
    bool focusable;        /* Tab and clicks give it the focus */
    bool cursor;           /* holds the terminal's cursor: drawn last (the command line) */
    const char *keys;      /* the status line's keys while it has the focus; NULL: the view's */
    const char *keys_short;/* when those do not fit; NULL: the view's */
    /* Whether it applies to the loaded program (NULL: to every one); a
     * pane that does not gets no place in the layout and no Tab stop. */
    bool (*applies)(const tui *u);
    void (*draw)(tui *u);  /* into u->win[its id], then wnoutrefresh */
    /* Its own keys while focused (NULL: none): redraw bits, or RD_IGNORED. */
    unsigned (*key)(tui *u, int ch, bool keycode);
    /* A click or wheel turn inside it, in its window's coordinates (NULL:
     * none): redraw bits, or RD_IGNORED. */
    unsigned (*mouse)(tui *u, int y, int x, mmask_t buttons);
    /* Whether the token strip marks the token at pos for it (NULL: it
     * marks none): the routing pane's selected expert's tokens. */
    bool (*marks)(const tui *u, int pos);
    /* Its own state, in u->pane_state[its id] (NULL: it has none): made
     * when the view starts (NULL: out of memory), reset when another model
     * is loaded (NULL: kept), freed when the view ends. */
    void *(*init)(void);
    void (*reset)(void *state);
    void (*free)(void *state);
} pane_class;

extern const pane_class pane_attn, pane_tokens, pane_probs, pane_lens, pane_norms, pane_log, pane_status,
    pane_cmdline, pane_image, pane_route, pane_math, pane_positions, pane_mlp, pane_resid, pane_mla;

/* panes.c: why pane p is not there for the loaded model ("has no routed
 * experts"), after the model's name. */
const char *pane_why_absent(pane_id p);

/* pane_attn.c: the queries a page of the heatmap shows (PgUp/PgDn). */
int pane_attn_page(const tui *u);

/* panes.c: the table, by pane_id (the view reaches it as u->panes). */
extern const pane_class *const pane_classes[P_COUNT];
/* The panes that apply to the loaded program, as a mask of RD(p) bits
 * (the same bits as layout's LAYOUT_PANE(p)). */
unsigned panes_present(const tui *u);

/* select.c: The redraw bits of the panes that show any of `what` (SHOWS_*). */
unsigned panes_showing(const tui *u, unsigned what);
/* Selection changes a pane's handler shares with the view's keys. */
unsigned tui_focus(tui *u, pane_id p);
unsigned tui_select_query(tui *u, int q);
unsigned tui_cycle_norm(tui *u, int d);

/* pane_log.c: scrolls the log d visual lines back (negative: forward). */
unsigned pane_log_scroll(tui *u, int d);

void help_draw(tui *u);
/* help.c: the overlay's keys (scrolling; others close it). */
unsigned help_key(tui *u, int ch, bool keycode);
/* popup.c: a typed command's output over the bottom of the screen. */
void popup_draw(tui *u);

/* tour.c: lessons in the view. The view's `lesson` callback (takes l). */
int tour_take(void *ctx, struct lesson *l, as_error *err);
/* Shows the first step of a lesson just taken. */
void tour_begin(tui *u);
int tour_run_line(tui *u, const char *line, run_from how);
/* Space, Backspace, Esc/q while a lesson runs (RD_IGNORED: not the lesson's). */
unsigned tour_key(tui *u, int ch, bool keycode);
void tour_end(tui *u);
/* tour_box.c: the step's box. */
void tour_draw(tui *u);
/* RD_PANES when the box goes elsewhere than where it was drawn (the
 * focus moved, say): the panes it covered are drawn again. */
unsigned tour_moved(tui *u);

/* screendump.c: the screen as plain text (`view dump FILE`), written
 * through a temporary file renamed into place. */
int screen_dump(const tui *u, const char *path, as_error *err);
/* `view dump-layout FILE`: where each pane and a lesson's box are, and
 * which pane is looked at, one line each (the file's first comment says
 * the format), for tests that check what covers what. */
int layout_dump(const tui *u, const char *path, as_error *err);

/* cmdline.c: GNU readline inside the view. */
void cmdline_init(tui *u);
void cmdline_close(void);
void cmdline_clear(tui *u);
bool cmdline_empty(void);
/* A line readline finished (malloc'd), or NULL. */
char *cmdline_take_line(void);
bool cmdline_eof(void);

#endif
