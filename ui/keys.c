/* keys: what each key and mouse click does. Handlers change the view and
 * return the redraw bits of the panes that show what changed; keys that
 * run the interpreter go through the same commands as the command line. */
#include <stdio.h>
#include <string.h>

#include "textfmt.h"
#include "tui.h"

#define KEY_ESC 27
#define KEY_CTRL(c) ((c) & 0x1f)

/* The panes a change of selection touches. */
#define RD_LAYER (RD(P_ATTN) | RD(P_LENS) | RD(P_NORMS) | RD(P_STATUS))
#define RD_QUERY (RD(P_ATTN) | RD(P_TOKENS) | RD(P_NORMS) | RD(P_PROBS) | RD(P_LENS))

static unsigned set_focus(tui *u, pane_id p)
{
    unsigned bits = RD(u->focus) | RD(p) | RD(P_STATUS) | RD(P_CMD);
    if (p != P_CMD)
        u->last_pane = p;
    u->focus = p;
    if (PANE_IS_SIDE(p) && u->lay.r[p].h <= 0 && p != u->shared) {
        u->shared = p; /* the slot it shares now shows this pane */
        bits |= RD_LAYOUT;
    }
    return bits;
}

static unsigned cycle_focus(tui *u, int dir)
{
    int p = ((int)u->focus + dir + (P_CMD + 1)) % (P_CMD + 1);
    return set_focus(u, (pane_id)p);
}

static unsigned move_layer(tui *u, int d)
{
    int old = u->v.layer;
    u->v.layer += d;
    view_clamp(&u->v, u->s);
    return old == u->v.layer ? 0 : RD_LAYER;
}

static unsigned move_head(tui *u, int d)
{
    int old = u->v.head;
    u->v.head += d;
    view_clamp(&u->v, u->s);
    return old == u->v.head ? 0 : RD(P_ATTN) | RD(P_STATUS);
}

static unsigned select_query(tui *u, int q)
{
    int n = u->s->it->out->n_tokens, old = u->v.query;
    if (n == 0)
        return 0;
    u->v.query = q < 0 ? 0 : q >= n ? n - 1 : q;
    u->v.follow = u->v.query == n - 1;
    view_clamp(&u->v, u->s);
    return old == u->v.query ? 0 : RD_QUERY;
}

static unsigned move_key(tui *u, int d)
{
    int old = u->v.key;
    u->v.key += d;
    view_clamp(&u->v, u->s);
    return old == u->v.key ? 0 : RD(P_ATTN);
}

static unsigned cycle_norm(tui *u, int d)
{
    u->v.norm = (norm_kind)(((int)u->v.norm + d + NK_COUNT) % NK_COUNT);
    return RD(P_NORMS);
}

static unsigned cycle_cmap(tui *u)
{
    u->v.cmap = (as_cmap)((u->v.cmap + 1) % AS_CMAP_COUNT);
    term_set_cmap(&u->t, u->v.cmap);
    return RD(P_ATTN);
}

static unsigned scroll_log(tui *u, int d)
{
    u->log_scroll += d;
    if (u->log_scroll < 0)
        u->log_scroll = 0;
    return RD(P_LOG);
}

static int page(const tui *u)
{
    int h = u->geom.ch > 0 ? u->geom.rows * u->geom.sub / u->geom.ch : 10;
    return h > 1 ? h - 1 : 1;
}

/* Runs a command for a key, unless one is already running. */
static unsigned run(tui *u, const char *cmd)
{
    if (u->busy)
        return 0;
    tui_run_line(u, cmd);
    return tui_after_command(u);
}

/* `e`: the figure of what the heatmap shows, written to the current
 * directory under a name that says what it is. */
static unsigned export_shown(tui *u)
{
    char cmd[160];
    const char *cmap = as_cmap_name(u->v.cmap);
    if (u->v.grid)
        snprintf(cmd, sizeof cmd, "export grid %d attn-L%d.png cmap=%s", u->v.layer, u->v.layer, cmap);
    else
        snprintf(cmd, sizeof cmd, "export attn %d %d attn-L%d-H%d.png cmap=%s", u->v.layer, u->v.head,
                 u->v.layer, u->v.head, cmap);
    return run(u, cmd);
}

static unsigned arrow(tui *u, int key)
{
    bool vertical = key == KEY_UP || key == KEY_DOWN;
    int d = key == KEY_UP || key == KEY_LEFT ? -1 : 1;
    if (u->focus == P_LOG && vertical)
        return scroll_log(u, -d);
    if (u->focus == P_TOKENS && !vertical)
        return select_query(u, u->v.query + d);
    if (u->focus == P_NORMS && !vertical)
        return cycle_norm(u, d);
    return vertical ? move_layer(u, d) : move_head(u, d);
}

static unsigned paging(tui *u, int d)
{
    if (u->focus == P_LOG) {
        int h = u->lay.r[P_LOG].h > 3 ? u->lay.r[P_LOG].h - 3 : 1;
        return scroll_log(u, -d * h);
    }
    return select_query(u, u->v.query + d * page(u));
}

static unsigned special_key(tui *u, int key)
{
    switch (key) {
    case KEY_UP: case KEY_DOWN: case KEY_LEFT: case KEY_RIGHT: return arrow(u, key);
    case KEY_SR: return select_query(u, u->v.query - 1);
    case KEY_SF: return select_query(u, u->v.query + 1);
    case KEY_SLEFT: return move_key(u, -1);
    case KEY_SRIGHT: return move_key(u, 1);
    case KEY_PPAGE: return paging(u, -1);
    case KEY_NPAGE: return paging(u, 1);
    case KEY_HOME: return select_query(u, 0);
    case KEY_END: return select_query(u, u->s->it->out->n_tokens - 1);
    case KEY_BTAB: return cycle_focus(u, -1);
    case KEY_F(1): u->help = true; return RD_HELP;
    case KEY_ENTER: return u->v.grid ? (u->v.grid = false, RD(P_ATTN)) : 0;
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
    case 'K': return select_query(u, u->v.query - 1);
    case 'J': return select_query(u, u->v.query + 1);
    case 'H': return move_key(u, -1);
    case 'L': return move_key(u, 1);
    case ',': case '[': return select_query(u, u->v.query - 1);
    case '.': case ']': return select_query(u, u->v.query + 1);
    case 'g': u->v.grid = !u->v.grid; return RD(P_ATTN);
    case '\r': case '\n': return u->v.grid ? (u->v.grid = false, RD(P_ATTN)) : 0;
    case 'N': return cycle_norm(u, 1);
    case 'c': return cycle_cmap(u);
    case '\t': return cycle_focus(u, 1);
    case '?': u->help = true; return RD_HELP;
    case KEY_CTRL('l'): clearok(curscr, TRUE); return RD_LAYOUT;
    default: return 0;
    }
}

static unsigned char_key(tui *u, int ch)
{
    switch (ch) {
    case ':': case '/': return set_focus(u, P_CMD);
    case 's': return run(u, "step");
    case 'n': return run(u, "next");
    case 'f': return run(u, "finish");
    case 'e': return export_shown(u);
    case 'b': return run(u, "back");
    case ' ': return run(u, "gen 1");
    case 'q': case KEY_CTRL('d'):
        if (u->busy)
            *u->interrupted = 1;
        else
            u->quit = true;
        return 0;
    default: return view_key(u, ch);
    }
}

static unsigned cmd_key(tui *u, int ch, bool keycode)
{
    if (!keycode && ch == KEY_ESC)
        return set_focus(u, u->last_pane); /* Ctrl-C, not Esc, stops a command */
    if (u->busy)
        return 0; /* typing waits for the running command */
    bool enter = keycode ? ch == KEY_ENTER : ch == '\r' || ch == '\n';
    if (enter && cmdline_empty())
        return set_focus(u, u->last_pane);
    if (keycode && (ch == KEY_PPAGE || ch == KEY_NPAGE))
        return scroll_log(u, ch == KEY_PPAGE ? 5 : -5);
    /* The key that opens the command line, typed when it is open already
     * (the view starts there): no command begins with it. */
    if (!keycode && (ch == ':' || ch == '/') && cmdline_empty())
        return RD(P_CMD);
    if (keycode && ch == KEY_F(1)) {
        u->help = true;
        return RD_HELP;
    }
    cmdline_key(u, ch, keycode);
    return RD(P_CMD);
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

unsigned tui_key(tui *u, int ch, bool keycode)
{
    if (u->help) {
        u->help = false;
        return RD_PANES;
    }
    if (u->focus == P_CMD)
        return cmd_key(u, ch, keycode);
    return keycode ? special_key(u, ch) : char_key(u, ch);
}

/* ---- mouse ---- */

static unsigned click_tokens(tui *u, int y, int x)
{
    int row = y - 1 + u->tok_first_row, col = x - 2, hit = -1;
    for (int i = 0; i < u->tok_n && i < u->s->it->out->n_tokens; i++)
        if (u->tok_row[i] == row && u->tok_col[i] <= col)
            hit = i;
    return hit >= 0 ? select_query(u, hit) : 0;
}

static unsigned click_attn(tui *u, int y, int x)
{
    int hy = y - u->heat_y, hx = x - u->heat_x;
    if (u->s->it->out->n_tokens == 0)
        return 0;
    if (u->v.grid) {
        int h = hm_grid_tile_at(&u->grid, hy, hx);
        if (h < 0)
            return 0;
        u->v.head = h;
        return RD(P_ATTN) | RD(P_STATUS);
    }
    int q = hm_query_at(&u->geom, hy * u->geom.sub);
    if (q < 0)
        return 0;
    unsigned bits = select_query(u, q) | RD(P_ATTN);
    int k = hm_key_at(&u->geom, hx);
    if (k >= 0 && k <= q)
        u->v.key = k;
    return bits;
}

static unsigned wheel(tui *u, pane_id p, int d)
{
    if (p == P_LOG)
        return scroll_log(u, -d * 3);
    return select_query(u, u->v.query + d);
}

unsigned tui_mouse(tui *u)
{
    MEVENT ev;
    if (getmouse(&ev) != OK || u->lay.too_small)
        return 0;
    pane_id p = layout_pane_at(&u->lay, ev.y, ev.x);
    if (p == P_COUNT || p == P_STATUS)
        return 0;
    if (ev.bstate & (BUTTON4_PRESSED | BUTTON5_PRESSED))
        return wheel(u, p, ev.bstate & BUTTON4_PRESSED ? -1 : 1);
    unsigned bits = u->focus == p ? 0 : set_focus(u, p);
    int y = ev.y - u->lay.r[p].y, x = ev.x - u->lay.r[p].x;
    if (p == P_TOKENS)
        bits |= click_tokens(u, y, x);
    else if (p == P_ATTN)
        bits |= click_attn(u, y, x);
    return bits;
}
