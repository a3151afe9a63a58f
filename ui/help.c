/* help: the key overlay `?` shows over the panes. Entries are a key and
 * what it does, laid out in two columns where the screen is wide and the
 * key above its text where it is narrow; taller than the screen, it
 * scrolls (Down, Space, PgDn; Up, PgUp), and any other key closes it. */
#include <string.h>

#include "textfmt.h"
#include "tui.h"

/* A heading has no text; a blank line has neither. */
static const struct entry {
    const char *key, *text;
} entries[] = {
    {"Panes", NULL},
    {"1 to 6", "Attention, Tokens, Next token, Logit lens, LayerNorm, Output (or view attention|tokens|probs|lens|"
               "norms|output); a small screen shows one side pane at a time"},
    {"7", "Routing (a model with routed MLPs: view routing): tokens by experts, Left/Right pick an expert, whose "
          "tokens the strip underlines"},
    {"8, m", "Attention worked out (view math): q, each key's k, q·k, scale, mask, softmax and z from the "
             "captured hooks; H/L follow a key"},
    {"p a r M", "Positions, MLP, Residual stream, MLA latent (view positions|mlp|residual|mla)"},
    {"Tab, Shift-Tab", "next / previous pane"},
    {"", NULL},
    {"Moving", NULL},
    {"Up/Down  k/j", "layer"},
    {"Left/Right  h/l", "head"},
    {", .  [ ]", "previous / next token (the query row)"},
    {"H J K L  - +  z", "heatmap cursor (Shift+arrows); zoom out, in; max/mean"},
    {"PgUp/PgDn", "a page of tokens; in Output, scroll"},
    {"g, Enter", "grid of every head; back to one head"},
    {"x", "an encoder-decoder: cross-attention (target rows, source columns), the encoder's, then self again"},
    {"i", "image pane (a vision model): blend, image, heat over its patches"},
    {"N, c, G", "next norm (ln1, ln2, final); colormap; d metric / d input"},
    {"", NULL},
    {"Running", NULL},
    {"s n f b", "step one op, next block, finish the pass, back one op"},
    {"Space", "generate one token (in a lesson: the next step)"},
    {"e", "export the heatmap shown as a PNG (a new name, never over a file)"},
    {"mouse", "click a token, a cell or a head to select it"},
    {"", NULL},
    {"Commands", NULL},
    {": or /", "type a command: Enter runs it, Esc returns to the panes, Tab completes, Up recalls"},
    {"help, help CMD", "every command, with an example"},
    {"lesson, lesson NAME", "the guided tours; Space next step, Backspace back, Esc ends"},
    {"load MODEL", "open another model (the bundled ones by name: load induction)"},
    {"set", "the settings; set temp 0.8, set delay MS (the pace of gen)"},
    {"Ctrl-C", "stop a running command; clear the command line"},
    {"q, Ctrl-D, quit", "leave"},
};

#define N_ENTRIES ((int)(sizeof entries / sizeof entries[0]))

/* Lays the entries out as screen lines of at most `width` columns: each
 * line is a (key, text segment) pair. Returns the line count; with
 * out NULL, only counts. */
typedef struct help_line {
    const char *key;   /* NULL: a continuation */
    const char *text;  /* a segment of an entry's text, len bytes */
    int len;
    bool heading;
} help_line;

static int layout_lines(int width, bool utf8, help_line *out, int cap)
{
    int n = 0, kw = width >= 56 ? 22 : 0; /* narrow: the key on a line of its own */
    for (int i = 0; i < N_ENTRIES; i++) {
        const struct entry *e = &entries[i];
        if (!e->text) {
            if (out && n < cap)
                out[n] = (help_line){e->key, "", 0, e->key[0] != '\0'};
            n++;
            continue;
        }
        if (!kw) {
            if (out && n < cap)
                out[n] = (help_line){e->key, "", 0, false};
            n++;
        }
        int tw = width - (kw ? kw : 4), starts[32], k = tf_wrap(e->text, tw > 8 ? tw : 8, utf8, starts, 32);
        k = k > 32 ? 32 : k;
        for (int j = 0; j < k; j++, n++) {
            int end = j + 1 < k ? starts[j + 1] : (int)strlen(e->text);
            while (end > starts[j] && e->text[end - 1] == ' ')
                end--;
            if (out && n < cap)
                out[n] = (help_line){kw && j == 0 ? e->key : NULL, e->text + starts[j], end - starts[j], false};
        }
    }
    return n;
}

static void draw_line(tui *u, WINDOW *w, int y, const help_line *l, int width)
{
    int kw = width >= 56 ? 22 : 0;
    if (l->heading) {
        term_role(&u->t, w, R_TITLE);
        put_text(u, w, y, 2, l->key, width);
        return;
    }
    char seg[512];
    snprintf(seg, sizeof seg, "%.*s", l->len, l->text);
    term_role(&u->t, w, R_LABEL_SEL);
    if (l->key && (kw || !l->len))
        put_text(u, w, y, 3, l->key, kw ? kw - 2 : width - 1);
    term_role(&u->t, w, R_NORMAL);
    if (l->len)
        put_text(u, w, y, 2 + (kw ? kw : 4), seg, width - (kw ? kw : 4));
}

/* The screen lines of the overlay at this size, and how many fit. */
static int help_size(const tui *u, int *width, int *height, int *inner)
{
    *width = u->lay.cols < 84 ? u->lay.cols : 84;
    int n = layout_lines(*width - 4, u->t.utf8, NULL, 0);
    *height = n + 3 < u->lay.rows ? n + 3 : u->lay.rows;
    *inner = *height - 3;
    return n;
}

void help_draw(tui *u)
{
    int width, height, inner, n = help_size(u, &width, &height, &inner);
    help_line lines[256];
    layout_lines(width - 4, u->t.utf8, lines, 256);
    n = n > 256 ? 256 : n;
    if (u->help_top > n - inner)
        u->help_top = n - inner > 0 ? n - inner : 0;
    WINDOW *w = overlay_box(u, height, width, (u->lay.rows - height) / 2, (u->lay.cols - width) / 2);
    if (!w)
        return;
    mvwaddstr(w, 0, 2, " attnscope keys ");
    for (int i = 0; i < inner && u->help_top + i < n; i++)
        draw_line(u, w, 1 + i, &lines[u->help_top + i], width - 4);
    char foot[96];
    bool more = u->help_top + inner < n;
    if (n > inner && width >= 60)
        snprintf(foot, sizeof foot, "lines %d-%d of %d: %s, any other key closes", u->help_top + 1,
                 u->help_top + inner, n, more ? "Space/Down for more" : "Up goes back");
    else if (n > inner)
        snprintf(foot, sizeof foot, "%d-%d/%d  %s", u->help_top + 1, u->help_top + inner, n,
                 more ? "Space: more" : "Up: back");
    else
        snprintf(foot, sizeof foot, "Press any key to close.");
    term_role(&u->t, w, R_DIM);
    put_text(u, w, height - 2, 2, foot, width - 4);
    term_role(&u->t, w, R_NORMAL);
    wnoutrefresh(w);
    delwin(w);
}

unsigned help_key(tui *u, int ch, bool keycode)
{
    int width, height, inner, n = help_size(u, &width, &height, &inner), step = 0;
    if (keycode && (ch == KEY_DOWN || ch == KEY_NPAGE))
        step = ch == KEY_DOWN ? 1 : inner;
    else if (keycode && (ch == KEY_UP || ch == KEY_PPAGE))
        step = ch == KEY_UP ? -1 : -inner;
    else if (!keycode && (ch == ' ' || ch == 'j'))
        step = ch == ' ' ? inner : 1;
    else if (!keycode && ch == 'k')
        step = -1;
    if (step == 0 || n <= inner) {
        u->help = false;
        return RD_PANES;
    }
    int top = u->help_top + step, last = n - inner;
    u->help_top = top < 0 ? 0 : top > last ? last : top;
    return RD_HELP | RD_PANES;
}
