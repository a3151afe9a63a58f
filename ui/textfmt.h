/* textfmt: text for the full-screen view without a terminal: token pieces
 * with whitespace made visible, display widths, truncation, probability
 * bars in eighth blocks, sparklines, and the glyphs that degrade to ASCII
 * outside a UTF-8 locale. Pure functions (the locale's LC_CTYPE decides
 * character widths), so they are unit-tested. */
#ifndef ATTNSCOPE_UI_TEXTFMT_H
#define ATTNSCOPE_UI_TEXTFMT_H

#include <stdbool.h>
#include <stddef.h>

typedef enum tf_glyph_id {
    G_SPACE,      /* a space inside a token piece */
    G_NEWLINE,
    G_TAB,
    G_ELLIPSIS,   /* text cut short */
    G_HALF_TOP,   /* upper half block: two heatmap rows per cell */
    G_CURSOR,     /* the heatmap cell under the cursor */
    G_MARK,       /* the token that was sampled / came next */
    G_SEP,        /* a thin vertical separator */
    G_MASKED,     /* a causally masked cell without colour */
    G_ARROW,
    G_TIMES,
    G_PENDING,    /* a heatmap cell not computed yet, without colour */
    G_COUNT
} tf_glyph_id;

const char *tf_glyph(tf_glyph_id g, bool utf8);

/* Display columns of a UTF-8 (or, outside UTF-8, single-byte) string. */
int tf_width(const char *s, bool utf8);
/* Copies s cut to at most `width` columns, ending in an ellipsis when cut.
 * Returns the columns used. */
int tf_fit(const char *s, int width, bool utf8, char *out, size_t cap);
/* A token's bytes for display: space as a middle dot, newline and tab as
 * arrows, other control bytes and invalid UTF-8 as \xNN (in ASCII: space
 * as '_', newline as "\n"). Returns the display width. */
int tf_piece_visible(const char *bytes, size_t len, bool utf8, char *out, size_t cap);

/* A bar of frac (0..1) of `width` cells: full blocks and one eighth-block
 * remainder (ASCII: '#' and nothing finer). */
void tf_bar(double frac, int width, bool utf8, char *out, size_t cap);
/* One character per value, scaled between the smallest and largest finite
 * value ("▁▂▃▄▅▆▇█"; ASCII "_.-=+*#@"); NaN/Inf shows as '?'. */
void tf_spark(const float *v, int n, bool utf8, char *out, size_t cap);
/* A number in at most `width` columns (%.Ng, then e-notation). */
void tf_num(double v, int width, char *out, size_t cap);

/* Tokens as a wrapped strip: item i of widths[i] columns at (row[i],
 * col[i]), items separated by `gap` columns, a new row when one is full.
 * Returns the number of rows. */
int tf_strip_layout(const int *widths, int n, int cols, int gap, int *row, int *col);
/* Tokens as one row scrolled by whole chips, for a strip one row high:
 * the chips first..*last show whole, col[i] their column; a marker (one
 * column and the gap) at the left when chips before `first` are hidden,
 * at the right after *last when chips after it are. Chip `sel` shows
 * whole with `margin` columns of its neighbours on each side where the
 * strip has them, `first` moving from its previous value as little as
 * that needs (a chip or two when sel moves by one, never a whole row);
 * the end of the strip reaches the right edge rather than leave it
 * empty. A chip wider than the row shows alone, to be cut. Returns first. */
int tf_strip_window(const int *widths, int n, int cols, int gap, int sel, int first, int margin, int *last, int *col);
/* First row to show so that row `sel` is visible in `visible` rows,
 * starting from the previous first row `first` (scrolls only as needed). */
int tf_scroll_follow(int first, int sel, int visible, int total);

/* Wraps a line into segments of at most `width` columns, after a space
 * where there is one (a segment may end in spaces, to be trimmed when
 * drawn): writes the byte offset where each segment starts into starts
 * (up to max) and returns the number of segments (at least 1). */
int tf_wrap(const char *s, int width, bool utf8, int *starts, int max);

/* A table's rows as tab-separated cells, drawn aligned: tf_table_widths
 * widens widths[0..max) to the row's cells (start from zeros, over every
 * row of the table), tf_table_format writes the row with each cell padded
 * to its column's width, two spaces apart. */
#define TF_TABLE_COLS 64
void tf_table_widths(const char *row, bool utf8, int *widths, int max);
void tf_table_format(const char *row, const int *widths, int max, bool utf8, char *out, size_t cap);
/* s past its first `cols` display columns (a table scrolled sideways). */
const char *tf_skip_cols(const char *s, int cols, bool utf8);

/* A line built up piece by piece, printf-style: tf_add appends and stops
 * at the buffer's end (the text cut, never overrun). */
typedef struct tf_line {
    char buf[1024];
    size_t len;
} tf_line;
void tf_add(tf_line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
