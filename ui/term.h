/* term: the terminal under the full-screen view. Opens and closes curses
 * (leaving the terminal as it was found), works out what the terminal can
 * show (UTF-8 or ASCII; no colour, 8, 256 or direct colour) and looks
 * colours up by role, htop-style, so panes say what a thing is, not which
 * colour it has. Heatmap colours are colour-pair slots allocated on demand
 * from the selected colormap. */
#ifndef ATTNSCOPE_UI_TERM_H
#define ATTNSCOPE_UI_TERM_H

#include <stdbool.h>
#include <stdint.h>

#include <curses.h>

#include "attnscope/colormap.h"
#include "heatmap.h"

typedef enum role {
    R_NORMAL, R_DIM, R_TITLE, R_TITLE_FOCUS, R_BORDER, R_BORDER_FOCUS,
    R_LABEL, R_LABEL_SEL,
    R_TOK_PROMPT_A, R_TOK_PROMPT_B, R_TOK_GEN_A, R_TOK_GEN_B, R_TOK_SEL,
    R_BAR, R_BAR_MARK, R_OUTLIER,
    R_ERROR, R_WARN, R_ECHO, R_HINT,
    R_STATUS, R_STATUS_KEY, R_PROMPT,
    R_COUNT
} role;

typedef enum colour_mode { CM_MONO, CM_8, CM_256, CM_DIRECT } colour_mode;

#define TERM_MAX_LEVELS 64

typedef struct term {
    SCREEN *screen;
    bool utf8;
    colour_mode cm;
    hm_style style;      /* how heatmap cells are drawn here */
    int levels;          /* colour-scale steps the heatmap uses */
    as_cmap cmap;
    int n_slots;         /* heat slots plus black and white for the cursor */
    int *heat_pair;      /* [(fg+1) * (n_slots+1) + (bg+1)]: pair number, 0 unallocated */
    int next_pair;
    int *slot_colour;    /* [n_slots]: the terminal's colour number of each slot */
    bool mouse;
    /* Pairs of any two colours (the image pane), above the heat pairs:
     * [rgb_base, rgb_base + rgb_cap), handed out again from the start at
     * each term_rgb_reset (one pane's frame). */
    int rgb_base, rgb_cap, rgb_used;
    struct rgb_pair { int fg, bg, pair; } *rgb_table; /* open addressing, 2 * rgb_cap entries */
} term;

/* Slots after the colour scale, for text over heat cells. */
#define TERM_SLOT_BLACK(t) ((t)->levels + 2)
#define TERM_SLOT_WHITE(t) ((t)->levels + 3)

/* Opens curses on the controlling terminal; 0 on success, else -1 with a
 * reason in why (the caller falls back to the plain REPL). */
int term_open(term *t, char *why, size_t cap);
void term_close(term *t);
/* While the view hides stderr in a scratch file (hidden, an fd) and keeps
 * the real one (real): a crash shows that file on the real stderr, the
 * terminal put back first. term_catch_crashes(-1, -1) stops it. */
void term_catch_crashes(int hidden, int real);
/* Recolours the heatmap slots for a colormap (cells on screen follow). */
void term_set_cmap(term *t, as_cmap cmap);

void term_role(const term *t, WINDOW *w, role r);
/* Role with extra attributes (e.g. A_BOLD). */
void term_role_attr(const term *t, WINDOW *w, role r, attr_t extra);
/* Sets w's attributes to draw over heat slots fg/bg. */
void term_heat(term *t, WINDOW *w, int fg_slot, int bg_slot);
/* The cursor glyph's slot over a heat slot: black or white, whichever reads. */
int term_contrast_slot(term *t, int bg_slot);
/* Whether term_rgb can draw any colour (256 or direct colour with pairs to
 * spare); else draw in shades. */
bool term_rgb_ok(const term *t);
/* Starts a frame of term_rgb cells: the pairs of the last one are reused. */
void term_rgb_reset(term *t);
/* Sets w's attributes to draw fg over bg: the nearest of the 256 colours,
 * or 15 bits of direct colour; false when the frame ran out of pairs
 * (the caller draws in shades). */
bool term_rgb(term *t, WINDOW *w, const uint8_t fg[3], const uint8_t bg[3]);
/* RGB of a heat slot (for the legend and tests of what is drawn). */
void term_slot_rgb(const term *t, int slot, uint8_t rgb[3]);

#endif
