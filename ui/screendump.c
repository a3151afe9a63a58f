/* screendump: the terminal's screen as plain text, as tig dumps its
 * views: one line per row, trailing spaces trimmed, read back from curses'
 * own picture of the screen (curscr), so the file is exactly what is
 * shown. Line-drawing characters (the pane boxes) come back as the
 * alternate character set's letters and are turned into the characters
 * they stand for. Colours and attributes are not kept: a text dump is
 * for comparing layouts and words, `capture-pane -e` for colours. */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "attnscope/file.h"
#include "lesson.h"
#include "tui.h"

/* The VT100 alternate character set: the letter curses stores, the
 * character it stands for, and a plain ASCII stand-in. */
static const struct {
    char acs;
    const char *utf8, *ascii;
} acs_chars[] = {
    {'j', "┘", "+"}, {'k', "┐", "+"}, {'l', "┌", "+"}, {'m', "└", "+"}, {'n', "┼", "+"},
    {'t', "├", "+"}, {'u', "┤", "+"}, {'v', "┴", "+"}, {'w', "┬", "+"}, {'q', "─", "-"},
    {'x', "│", "|"}, {'a', "▒", "#"}, {'`', "◆", "+"}, {'f', "°", "'"}, {'g', "±", "#"},
    {'~', "·", "o"}, {',', "←", "<"}, {'+', "→", ">"}, {'.', "↓", "v"}, {'-', "↑", "^"},
    {'h', "░", "#"}, {'0', "█", "#"}, {'o', "⎺", "-"}, {'p', "⎻", "-"}, {'r', "⎼", "-"},
    {'s', "⎽", "_"}, {'y', "≤", "<"}, {'z', "≥", ">"}, {'{', "π", "*"}, {'|', "≠", "!"},
    {'}', "£", "f"},
};

static const char *acs_text(wchar_t c, bool utf8)
{
    for (size_t i = 0; i < sizeof acs_chars / sizeof acs_chars[0]; i++)
        if ((wchar_t)acs_chars[i].acs == c)
            return utf8 ? acs_chars[i].utf8 : acs_chars[i].ascii;
    return NULL;
}

typedef struct text {
    char *buf;
    size_t len, cap;
    bool failed;     /* out of memory: what follows is dropped */
} text;

static void put(text *t, const char *s, size_t n)
{
    if (t->failed)
        return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 16384;
        while (cap < t->len + n + 1)
            cap *= 2;
        char *grown = realloc(t->buf, cap);
        if (!grown) {
            t->failed = true;
            return;
        }
        t->buf = grown;
        t->cap = cap;
    }
    memcpy(t->buf + t->len, s, n);
    t->len += n;
    t->buf[t->len] = '\0';
}

/* One screen cell's characters in the locale's encoding; returns the
 * columns it covers (a wide character covers two cells, the second of
 * which curses keeps as a continuation). */
static int cell(WINDOW *scr, int y, int x, bool utf8, text *t)
{
    cchar_t cc;
    wchar_t wch[CCHARW_MAX + 1] = {0};
    attr_t attrs = 0;
    short pair = 0;
    if (mvwin_wch(scr, y, x, &cc) == ERR || getcchar(&cc, wch, &attrs, &pair, NULL) == ERR || !wch[0]) {
        put(t, " ", 1);
        return 1;
    }
    const char *acs = (attrs & A_ALTCHARSET) ? acs_text(wch[0], utf8) : NULL;
    if (acs) {
        put(t, acs, strlen(acs));
        return 1;
    }
    for (int i = 0; i < CCHARW_MAX && wch[i]; i++) {
        char mb[MB_LEN_MAX];
        mbstate_t st;
        memset(&st, 0, sizeof st);
        size_t n = wcrtomb(mb, wch[i], &st);
        if (n == (size_t)-1)
            put(t, "?", 1);
        else
            put(t, mb, n);
    }
    int w = wcwidth(wch[0]);
    return w > 1 ? w : 1;
}

/* The screen as text, malloc'd (NULL if out of memory). */
static char *screen_text(const tui *u, size_t *len)
{
    WINDOW *scr = curscr;
    int rows, cols;
    getmaxyx(scr, rows, cols);
    text t = {0};
    for (int y = 0; y < rows; y++) {
        size_t start = t.len;
        for (int x = 0; x < cols;)
            x += cell(scr, y, x, u->t.utf8, &t);
        while (t.len > start && t.buf[t.len - 1] == ' ')
            t.len--;
        put(&t, "\n", 1);
    }
    if (t.failed || !t.buf) {
        free(t.buf);
        return NULL;
    }
    *len = t.len;
    return t.buf;
}

struct dump_job {
    const char *text;
    size_t len;
};

static int write_text(void *ctx, void *stream, as_error *err)
{
    const struct dump_job *j = ctx;
    if (fwrite(j->text, 1, j->len, stream) != j->len)
        return as_error_set(err, "short write");
    return AS_OK;
}

int screen_dump(const tui *u, const char *path, as_error *err)
{
    struct dump_job j = {NULL, 0};
    char *s = screen_text(u, &j.len);
    if (!s)
        return as_error_set(err, "%s: out of memory for the screen's text", path);
    j.text = s;
    int rc = as_write_atomic(path, write_text, &j, err);
    free(s);
    return rc;
}

/* ---- the layout ---- */

static const char *pane_word(pane_id p)
{
    switch (p) {
    case P_IMAGE: return "image";
    case P_CMD: return "command";
    case P_STATUS: return "status";
    default: return view_pane_name((int)p);
    }
}

static int write_layout(void *ctx, void *stream, as_error *err)
{
    const tui *u = ctx;
    FILE *f = stream;
    const layout *l = &u->lay;
    pane_id at = u->focus == P_CMD ? u->last_pane : u->focus;
    fprintf(f, "# attnscope layout: `size ROWS COLS`, `focus PANE` (the pane looked at), `pane NAME Y X H W` for each "
               "pane shown, `lesson Y X H W STEP/STEPS` for a lesson's box\n");
    fprintf(f, "size %d %d\n", l->rows, l->cols);
    fprintf(f, "focus %s\n", pane_word(at));
    for (int p = 0; p < P_COUNT && !l->too_small; p++)
        if (l->r[p].h > 0 && l->r[p].w > 0)
            fprintf(f, "pane %s %d %d %d %d\n", pane_word((pane_id)p), l->r[p].y, l->r[p].x, l->r[p].h, l->r[p].w);
    rect b = u->lesson_box;
    if (u->lesson && b.h > 0)
        fprintf(f, "lesson %d %d %d %d %d/%d\n", b.y, b.x, b.h, b.w, u->lesson_step + 1, u->lesson->n_steps);
    if (ferror(f))
        return as_error_set(err, "short write");
    return AS_OK;
}

int layout_dump(const tui *u, const char *path, as_error *err)
{
    return as_write_atomic(path, write_layout, (void *)u, err);
}
