/* keys: what the view's own keys and mouse clicks do, whatever pane has
 * the focus; a focused pane's class sees each key first (its own arrows,
 * scrolling, the command line's typing) and leaves the rest here.
 * Handlers change the view and return the redraw bits of the panes that
 * show what changed; keys that run the interpreter go through the same
 * commands as the command line. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "textfmt.h"
#include "tui.h"

#define KEY_CTRL(c) ((c) & 0x1f)

/* Tab and Shift-Tab: the next pane that takes the focus and applies to
 * the program, in the table's order; the concept views (math, positions,
 * ...) are reached by their keys, not by Tab, which would otherwise
 * pass through five of them on every round. */
static unsigned cycle_focus(tui *u, int dir)
{
    int p = (int)u->focus;
    for (int i = 0; i < P_COUNT; i++) {
        p = (p + dir + P_COUNT) % P_COUNT;
        if (pane_classes[p]->focusable && (u->present & RD(p)) && !PANE_IS_WIDE(p))
            return tui_focus(u, (pane_id)p);
    }
    return 0;
}

/* Keys 1-8 (and the letters of the concept views): the pane of that
 * number, or why this model has none. */
static unsigned focus_key(tui *u, pane_id p, int ch)
{
    if (u->present & RD(p))
        return tui_focus(u, p);
    tui_say(u, LOG_HINT, "%c: %s %s: no %s pane", ch, as_view_model_name(u->s), pane_why_absent(p),
            pane_classes[p]->name);
    return 0;
}

/* The image pane: blend, image, heat. */
static unsigned cycle_image(tui *u)
{
    if (!(u->present & RD(P_IMAGE))) {
        tui_say(u, LOG_HINT, "i: %s reads no image: i is for a vision model's image pane",
                as_view_model_name(u->s));
        return 0;
    }
    u->v.image_mode = (u->v.image_mode + 1) % IMG_MODES;
    return RD(P_IMAGE);
}

static unsigned move_layer(tui *u, int d)
{
    int old = u->v.layer;
    u->v.layer += d;
    view_clamp(&u->v, u->s);
    return old == u->v.layer ? 0 : panes_showing(u, SHOWS_LAYER);
}

static unsigned move_head(tui *u, int d)
{
    int old = u->v.head;
    u->v.head += d;
    view_clamp(&u->v, u->s);
    return old == u->v.head ? 0 : panes_showing(u, SHOWS_HEAD);
}

static unsigned move_key(tui *u, int d)
{
    int old = u->v.key;
    u->v.key += d;
    view_clamp(&u->v, u->s);
    return old == u->v.key ? 0 : panes_showing(u, SHOWS_KEY);
}

/* - and +: the heatmap's cells twice or half as many tokens; z: a
 * zoomed cell the max or the mean of its block. */
static unsigned zoom(tui *u, int how)
{
    int old = u->v.zoom;
    bool mean = u->v.zoom_mean;
    if (how == 0)
        u->v.zoom_mean = !u->v.zoom_mean;
    else if (how > 0 && u->v.zoom < view_zoom_most(as_view_n_tokens(u->s)))
        u->v.zoom *= 2;
    else if (how < 0 && u->v.zoom > 1)
        u->v.zoom /= 2;
    if (how == 0 && u->v.zoom == 1)
        tui_say(u, LOG_HINT, "z: zoomed cells show their block's %s (- zooms out)", u->v.zoom_mean ? "mean" : "max");
    return old == u->v.zoom && (mean == u->v.zoom_mean || u->v.zoom == 1) ? 0 : panes_showing(u, SHOWS_LOOK);
}

static unsigned cycle_cmap(tui *u)
{
    u->v.cmap = (as_cmap)((u->v.cmap + 1) % AS_CMAP_COUNT);
    term_set_cmap(&u->t, u->v.cmap);
    return panes_showing(u, SHOWS_LOOK);
}

/* x: an encoder-decoder's heatmap from the decoder's self-attention to its
 * cross-attention over the source, to the encoder's self-attention. */
static unsigned toggle_site(tui *u)
{
    as_error err;
    static const char *const next[] = {[AS_PICK_SELF] = "cross", [AS_PICK_CROSS] = "encoder",
                                       [AS_PICK_SOURCE] = "self"};
    if (view_site(&u->v, u->s, next[u->v.site], &err)) {
        tui_say(u, LOG_HINT, "x: %s has no cross-attention: x is for an encoder-decoder",
                as_view_model_name(u->s));
        return 0;
    }
    view_clamp(&u->v, u->s);
    return panes_showing(u, SHOWS_LOOK | SHOWS_KEY);
}

/* G: the norms pane's gradient page (d metric / d the selected norm's
 * input, per position) and back; the pane takes the focus to show it. */
static unsigned toggle_grad(tui *u)
{
    if (!(u->present & RD(P_NORMS))) {
        tui_say(u, LOG_HINT, "G: %s has no norms pane to show the gradient in", as_view_model_name(u->s));
        return 0;
    }
    u->v.grad_page = !u->v.grad_page;
    return RD(P_NORMS) | (u->focus == P_NORMS ? 0 : tui_focus(u, P_NORMS));
}

static unsigned toggle_grid(tui *u, bool on)
{
    if (u->v.grid == on)
        return 0;
    u->v.grid = on;
    return panes_showing(u, SHOWS_LOOK);
}

/* Runs a command for a key, unless one is already running. */
static unsigned run(tui *u, const char *cmd)
{
    if (u->busy)
        return 0;
    tour_run_line(u, cmd, RUN_KEY);
    return tui_after_command(u);
}

/* `e`: the figure of what the heatmap shows, written to the current
 * directory under a name that says what it is; never over a file already
 * there (a key gives no chance to confirm): attn-L1-H3.png, then
 * attn-L1-H3-2.png, -3, ... */
static unsigned export_shown(tui *u)
{
    char base[64], name[80], cmd[200];
    const char *kind = u->v.site == AS_PICK_CROSS ? "cross" : u->v.site == AS_PICK_SOURCE ? "enc" : "attn";
    if (u->v.grid)
        snprintf(base, sizeof base, "%s-L%d", kind, u->v.layer);
    else
        snprintf(base, sizeof base, "%s-L%d-H%d", kind, u->v.layer, u->v.head);
    snprintf(name, sizeof name, "%s.png", base);
    for (int i = 2; access(name, F_OK) == 0 && i < 10000; i++)
        snprintf(name, sizeof name, "%s-%d.png", base, i);
    const char *cmap = as_cmap_name(u->v.cmap);
    const char *site = u->v.site == AS_PICK_CROSS ? " site=cross" : u->v.site == AS_PICK_SOURCE ? " site=encoder" : "";
    if (u->v.grid)
        snprintf(cmd, sizeof cmd, "export grid %d %s cmap=%s%s", u->v.layer, name, cmap, site);
    else
        snprintf(cmd, sizeof cmd, "export attn %d %d %s cmap=%s%s", u->v.layer, u->v.head, name, cmap, site);
    return run(u, cmd);
}

static unsigned arrow(tui *u, int key)
{
    bool vertical = key == KEY_UP || key == KEY_DOWN;
    int d = key == KEY_UP || key == KEY_LEFT ? -1 : 1;
    return vertical ? move_layer(u, d) : move_head(u, d);
}

static unsigned special_key(tui *u, int key)
{
    switch (key) {
    case KEY_UP: case KEY_DOWN: case KEY_LEFT: case KEY_RIGHT: return arrow(u, key);
    case KEY_SR: return tui_select_query(u, view_row(&u->v) - (u->v.grid ? 1 : u->v.zoom));
    case KEY_SF: return tui_select_query(u, view_row(&u->v) + (u->v.grid ? 1 : u->v.zoom));
    case KEY_SLEFT: return move_key(u, u->v.grid ? -1 : -u->v.zoom);
    case KEY_SRIGHT: return move_key(u, u->v.grid ? 1 : u->v.zoom);
    case KEY_PPAGE: return tui_select_query(u, view_row(&u->v) - pane_attn_page(u));
    case KEY_NPAGE: return tui_select_query(u, view_row(&u->v) + pane_attn_page(u));
    case KEY_HOME: return tui_select_query(u, 0);
    case KEY_END: return tui_select_query(u, 1 << 30); /* the last (of the source, on the encoder's heatmap) */
    case KEY_BTAB: return cycle_focus(u, -1);
    case KEY_F(1): u->help = true; u->help_top = 0; return RD_HELP;
    case KEY_ENTER: return toggle_grid(u, false);
    default: return 0;
    }
}

/* Keys that move the selection or change the look. */
static unsigned view_key(tui *u, int ch)
{
    switch (ch) {
    case 'k': return move_layer(u, -1);
    case 'j': return move_layer(u, 1);
    case 'h': return move_head(u, -1);
    case 'l': return move_head(u, 1);
    /* zoomed out, the cursor moves a cell: a block of tokens */
    case 'K': return tui_select_query(u, view_row(&u->v) - (u->v.grid ? 1 : u->v.zoom));
    case 'J': return tui_select_query(u, view_row(&u->v) + (u->v.grid ? 1 : u->v.zoom));
    case 'H': return move_key(u, u->v.grid ? -1 : -u->v.zoom);
    case 'L': return move_key(u, u->v.grid ? 1 : u->v.zoom);
    case '-': return zoom(u, 1);
    case '+': case '=': return zoom(u, -1);
    case 'z': return zoom(u, 0);
    case ',': case '[': return tui_select_query(u, view_row(&u->v) - 1);
    case '.': case ']': return tui_select_query(u, view_row(&u->v) + 1);
    case 'g': return toggle_grid(u, !u->v.grid);
    case 'x': return toggle_site(u);
    case '\r': case '\n': return toggle_grid(u, false);
    case 'N': return tui_cycle_norm(u, 1);
    case 'G': return toggle_grad(u);
    case 'c': return cycle_cmap(u);
    case 'i': return cycle_image(u);
    case '\t': return cycle_focus(u, 1);
    case '?': u->help = true; u->help_top = 0; return RD_HELP;
    case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8':
        return focus_key(u, (pane_id)(ch - '1'), ch);
    case 'm': return focus_key(u, P_MATH, 'm');
    case 'p': return focus_key(u, P_POS, 'p');
    case 'a': return focus_key(u, P_MLP, 'a');
    case 'r': return focus_key(u, P_RESID, 'r');
    case 'M': return focus_key(u, P_MLA, 'M');
    case KEY_CTRL('l'): clearok(curscr, TRUE); return RD_LAYOUT;
    default: return 0;
    }
}

static unsigned char_key(tui *u, int ch)
{
    switch (ch) {
    case ':': case '/': return tui_focus(u, P_CMD);
    case 's': return run(u, "step");
    case 'n': return run(u, "next");
    case 'f': return run(u, "finish");
    case 'e': return export_shown(u);
    case 'b': return run(u, "back");
    case ' ':
        if (!as_view_causal(u->s) && !u->busy) {
            tui_say(u, LOG_HINT, "Space: no next token: %s is an encoder (f runs the pass)", as_view_model_name(u->s));
            return 0;
        }
        return run(u, "gen 1");
    case 'q': case KEY_CTRL('d'):
        if (u->busy)
            *u->interrupted = 1;
        else
            u->quit = true;
        return 0;
    default: return view_key(u, ch);
    }
}

bool tui_key_waits(const tui *u, int ch, bool keycode)
{
    if (!u->busy || u->help)
        return false;
    if (u->first_ahead < u->n_ahead)
        return true; /* behind another waiting key: keep the order */
    if (u->focus == P_CMD)
        return keycode || ch != KEY_ESC; /* typing ahead of the running command */
    return !keycode && strchr(":/snfb ", ch) && ch != 0;
}

/* The output overlay and the one-line echo go at the next key, which
 * does its own work too (Esc leaves the command line as ever). */
static unsigned drop_output(tui *u)
{
    if (!u->popup && u->echo_from < 0)
        return 0;
    unsigned bits = u->popup ? RD_PANES : RD(P_CMD);
    u->popup = false;
    u->echo_from = -1;
    return bits;
}

unsigned tui_key(tui *u, int ch, bool keycode)
{
    if (u->help)
        return help_key(u, ch, keycode);
    unsigned bits = drop_output(u);
    if (u->lesson && u->focus != P_CMD) {
        unsigned own = tour_key(u, ch, keycode);
        if (!(own & RD_IGNORED))
            return bits | own;
    }
    const pane_class *pc = pane_classes[u->focus];
    if (pc->key) {
        unsigned own = pc->key(u, ch, keycode);
        if (!(own & RD_IGNORED))
            return bits | own;
    }
    return bits | (keycode ? special_key(u, ch) : char_key(u, ch));
}

/* ---- mouse ---- */

/* A click focuses the pane, then the pane's class reads it; a wheel turn
 * is the pane's, or else moves the selected token. */
unsigned tui_mouse(tui *u)
{
    MEVENT ev;
    if (getmouse(&ev) != OK || u->lay.too_small)
        return 0;
    pane_id p = layout_pane_at(&u->lay, ev.y, ev.x);
    if (p == P_COUNT || !pane_classes[p]->focusable)
        return 0;
    const pane_class *pc = pane_classes[p];
    bool wheel = (ev.bstate & (BUTTON4_PRESSED | BUTTON5_PRESSED)) != 0;
    unsigned bits = wheel || u->focus == p ? 0 : tui_focus(u, p);
    if (pc->mouse) {
        unsigned own = pc->mouse(u, ev.y - u->lay.r[p].y, ev.x - u->lay.r[p].x, ev.bstate);
        if (!(own & RD_IGNORED))
            return bits | own;
    }
    if (wheel)
        bits |= tui_select_query(u, view_row(&u->v) + (ev.bstate & BUTTON4_PRESSED ? -1 : 1));
    return bits;
}
