/* pane_mlp: the MLP of the selected layer at the selected token (`view
 * mlp`): the activation function's curve drawn over the range of the
 * token's pre-activations (braille dots; ASCII outside UTF-8), where
 * those pre-activations fall (a histogram under the curve), the neurons
 * of largest |post| listed (and the first nine marked on the curve by
 * their rank), and the share of neurons the activation lets through
 * (act > 0, which for GELU, SiLU and ReLU alike is pre > 0). A gated MLP
 * (SwiGLU, GEGLU) draws act(gate) and lists gate, act(gate), up and
 * their product. A routed MLP (mixture of experts) draws one of the
 * experts the token chose, or the shared expert (Left/Right choose).
 *
 * Which hooks are pre, up and post, and which function, is read off the
 * op that fills the post hook (as_view_op_act), never from the
 * architecture's name; the curve is the function's formula, the marks
 * and the table the captured values, and the formula applied to the
 * captured pre (× up) is checked against the captured post for every
 * neuron: the title says whether it reproduces it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "textfmt.h"
#include "tui.h"

#define MAX_SLOTS 16 /* experts chosen per token the pane lists */
#define MAX_TOP 24   /* neurons the table lists at most */
#define MARKED 9     /* of which the curve marks (by rank digit) */
#define SEG "\037"   /* between a line's segments (pack) */

/* The pane's state: which of a routed layer's MLPs it draws (0..k-1: the
 * token's chosen experts in the router's order; k: the shared expert). */
typedef struct mlp_state {
    int slot;
} mlp_state;

static mlp_state *state(const tui *u)
{
    return u->pane_state[P_MLP];
}

/* What the pane reads at one (stream, layer, token). */
typedef struct mlp_src {
    const as_session *s;
    const as_capture *cap;
    int stream, layer, pos;
    int post, pre, up;          /* hooks (up: -1 when not gated) */
    as_act_kind act;
    bool gated;
    int f;                      /* neurons (one expert's, when routed) */
    const float *pre_v, *up_v, *post_v; /* the token's values of the drawn MLP */
    /* a routed layer */
    bool routed, shared, shared_gated;
    int k, n_expert, slot, n_slots; /* n_slots: k, + 1 with a shared expert */
    int expert[MAX_SLOTS];
    float gate[MAX_SLOTS];
    float shared_gate;
    /* what the token's values say */
    double lo, hi;              /* the x range drawn: the pre-activations', with 0 */
    int active;
    int top[MAX_TOP], n_top;
    double inactive_min;        /* the smallest act among the inactive (0 for ReLU) */
    int bad;                    /* the first neuron the formula does not reproduce, -1: none */
    double bad_calc, bad_cap;
} mlp_src;

static double act_of(as_act_kind a, double x)
{
    switch (a) {
    case AS_ACT_GELU_TANH: return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case AS_ACT_GELU_ERF: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case AS_ACT_RELU: return x < 0 ? 0 : x;
    case AS_ACT_SILU: return x / (1 + exp(-x));
    default: return x;
    }
}

static const char *act_name(as_act_kind a)
{
    return a == AS_ACT_RELU ? "relu" : a == AS_ACT_SILU ? "silu" : "gelu";
}

/* The kind's hook among the stream's, in the layer. */
static int hook(const tui *u, as_hook_kind kind, int layer, int stream)
{
    return as_program_hook_in(as_view_program(u->s), kind, layer, stream);
}

/* The stream the view's selection stands in: an encoder-decoder's
 * encoder when its heatmap shows the encoder, else the output stream. */
static int sel_stream(const tui *u)
{
    int st = as_program_pick_stream(as_view_program(u->s), u->v.site);
    return st >= 0 ? st : as_view_out_stream(u->s);
}

static bool has_rows(const mlp_src *m, int h)
{
    return h >= 0 && as_capture_has(m->cap, h) && as_view_filled(m->s, h) > m->pos;
}

static const char *short_name(const as_session *s, int h)
{
    const char *n = as_view_hook_name(s, h);
    if (strncmp(n, "blocks.", 7) == 0) {
        const char *dot = strchr(n + 7, '.');
        if (dot)
            return dot + 1;
    }
    if (strncmp(n, "encoder.", 8) == 0 || strncmp(n, "decoder.", 8) == 0) {
        const char *dot = strchr(n + 8, '.');
        if (dot)
            return dot + 1;
    }
    return n;
}

/* The drawn MLP's hooks: the layer's dense MLP, or a routed layer's
 * expert slot or shared expert; false (and *why) when there is none. */
static bool find_hooks(tui *u, mlp_src *m, const char **why)
{
    const as_program *p = as_view_program(u->s);
    int L = m->layer, st = m->stream;
    int ex = hook(u, AS_HK_EXPERTS_POST, L, st), sh = hook(u, AS_HK_SHARED_POST, L, st);
    int ix = hook(u, AS_HK_EXPERT_INDICES, L, st);
    m->post = hook(u, AS_HK_MLP_POST, L, st);
    if (ex >= 0 && ix >= 0) {
        const as_op *op = as_program_producer(p, ix);
        m->routed = true;
        m->k = op ? as_view_op_k(op) : 1;
        m->k = m->k > MAX_SLOTS ? MAX_SLOTS : m->k < 1 ? 1 : m->k;
        m->n_expert = op ? as_view_op_experts(op) : 0;
        m->shared = sh >= 0;
        m->n_slots = m->k + (m->shared ? 1 : 0);
        int slot = state(u)->slot;
        slot = slot >= m->n_slots ? m->n_slots - 1 : slot < 0 ? 0 : slot;
        m->slot = slot;
        m->post = slot < m->k ? ex : sh;
    }
    if (m->post < 0) {
        *why = "This layer has no MLP.";
        return false;
    }
    const as_op *op = as_program_producer(p, m->post);
    m->act = op ? as_view_op_act(op, &m->gated) : AS_ACT_NONE;
    if (m->act == AS_ACT_NONE) {
        *why = "This MLP's activation is not one the pane draws.";
        return false;
    }
    m->pre = as_view_op_in(op, 0);
    m->up = m->gated ? as_view_op_in(op, 1) : -1;
    m->f = as_view_hook_width(u->s, m->post) / (m->routed && m->slot < m->k ? m->k : 1);
    return m->pre >= 0 && m->f > 0 && (!m->gated || m->up >= 0);
}

/* The token's routing: the experts it chose and their gates. */
static void read_routing(tui *u, mlp_src *m)
{
    int ix = hook(u, AS_HK_EXPERT_INDICES, m->layer, m->stream), g = hook(u, AS_HK_EXPERT_GATES, m->layer, m->stream);
    int sg = hook(u, AS_HK_SHARED_GATE, m->layer, m->stream);
    const float *ixr = has_rows(m, ix) ? as_capture_row(m->cap, ix, m->pos) : NULL;
    const float *gr = has_rows(m, g) ? as_capture_row(m->cap, g, m->pos) : NULL;
    for (int j = 0; j < m->k; j++) {
        m->expert[j] = ixr ? (int)ixr[j] : -1;
        m->gate[j] = gr ? gr[j] : NAN;
    }
    m->shared_gated = sg >= 0;
    m->shared_gate = has_rows(m, sg) ? as_capture_row(m->cap, sg, m->pos)[0] : NAN;
}

static bool gather(tui *u, mlp_src *m, const char **why)
{
    memset(m, 0, sizeof *m);
    m->s = u->s;
    m->cap = as_view_capture(u->s);
    m->stream = sel_stream(u);
    m->layer = u->v.layer;
    m->pos = view_row(&u->v);
    m->bad = -1;
    if (!find_hooks(u, m, why))
        return false;
    if (as_view_stream_tokens(u->s, m->stream) == 0) {
        *why = "No context yet.";
        return false;
    }
    static char msg[160];
    int need[3] = {m->pre, m->post, m->up};
    for (int i = 0; i < 3; i++) {
        if (need[i] < 0)
            continue;
        if (!as_capture_has(m->cap, need[i])) {
            snprintf(msg, sizeof msg, "%s is not captured (--capture-mb keeps it).", short_name(u->s, need[i]));
            *why = msg;
            return false;
        }
        if (as_view_filled(u->s, need[i]) <= m->pos) {
            *why = "Not computed yet at this token:  f  finishes the pass.";
            return false;
        }
    }
    if (m->routed)
        read_routing(u, m);
    size_t off = m->routed && m->slot < m->k ? (size_t)m->slot * m->f : 0;
    m->pre_v = as_capture_row(m->cap, m->pre, m->pos) + off;
    m->post_v = as_capture_row(m->cap, m->post, m->pos) + off;
    m->up_v = m->gated ? as_capture_row(m->cap, m->up, m->pos) + off : NULL;
    double lo = 0, hi = 0;
    m->inactive_min = 0;
    for (int i = 0; i < m->f; i++) {
        double x = m->pre_v[i];
        lo = x < lo ? x : lo;
        hi = x > hi ? x : hi;
        double a = act_of(m->act, x);
        if (a > 0)
            m->active++;
        else if (a < m->inactive_min)
            m->inactive_min = a;
        double calc = m->gated ? a * m->up_v[i] : a, cap = m->post_v[i];
        if (m->bad < 0 && !(fabs(calc - cap) <= 1e-4 * (1 + fabs(cap))))
            m->bad = i, m->bad_calc = calc, m->bad_cap = cap;
        /* the largest |post| so far, kept sorted (insertion; MAX_TOP is small) */
        int at = m->n_top < MAX_TOP ? m->n_top : MAX_TOP;
        while (at > 0 && fabs(m->post_v[m->top[at - 1]]) < fabs(cap))
            at--;
        if (at < MAX_TOP) {
            int last = m->n_top < MAX_TOP ? m->n_top : MAX_TOP - 1;
            memmove(m->top + at + 1, m->top + at, (size_t)(last - at) * sizeof *m->top);
            m->top[at] = i;
            if (m->n_top < MAX_TOP)
                m->n_top++;
        }
    }
    if (hi - lo < 1e-6)
        lo -= 1, hi += 1;
    m->lo = lo;
    m->hi = hi;
    return true;
}

/* ---- text ---- */

/* The formula, then which hooks it reads. */
static void formula_text(const mlp_src *m, bool utf8, tf_line *l)
{
    const char *dot = utf8 ? "·" : "*", *fn = act_name(m->act);
    if (m->gated)
        tf_add(l, "%s: post = %s(gate) %s up" SEG, m->act == AS_ACT_SILU ? "SwiGLU" : "GEGLU", fn,
            tf_glyph(G_TIMES, utf8));
    else
        tf_add(l, "post = %s(pre)" SEG, fn);
    switch (m->act) {
    case AS_ACT_GELU_TANH:
        tf_add(l, "gelu(x) = 0.5x(1 + tanh(%s(x + 0.044715x%s)))" SEG "the tanh form", utf8 ? "√(2/π)" : "sqrt(2/pi)",
            utf8 ? "³" : "^3");
        break;
    case AS_ACT_GELU_ERF:
        tf_add(l, "gelu(x) = 0.5x(1 + erf(x/%s))" SEG "the exact, erf form", utf8 ? "√2" : "sqrt 2");
        break;
    case AS_ACT_RELU: tf_add(l, "relu(x) = max(0, x)"); break;
    case AS_ACT_SILU:
        tf_add(l, "silu(x) = x%s%s(x) = x/(1 + e^%sx)", dot, utf8 ? "σ" : "sigmoid", utf8 ? "−" : "-");
        break;
    default: break;
    }
    if (m->gated)
        tf_add(l, SEG "gate = %s, up = %s" SEG "post = %s", short_name(m->s, m->pre), short_name(m->s, m->up),
            short_name(m->s, m->post));
    else
        tf_add(l, SEG "pre = %s, post = %s", short_name(m->s, m->pre), short_name(m->s, m->post));
}

/* A routed layer: the experts the token chose, and the key. */
static void routing_text(const mlp_src *m, bool utf8, tf_line *l)
{
    tf_add(l, "chose");
    for (int j = 0; j < m->k; j++) {
        if (m->expert[j] < 0)
            tf_add(l, "%s ?", j ? "," : "");
        else if (isnan(m->gate[j]))
            tf_add(l, "%s expert %d", j ? "," : "", m->expert[j]);
        else
            tf_add(l, "%s %s%d (%s%.3f)", j ? "," : "", j ? "" : "expert ", m->expert[j], j ? "" : "gate ",
                (double)m->gate[j]);
    }
    if (m->shared) {
        if (m->shared_gated && !isnan(m->shared_gate))
            tf_add(l, " + shared (gate %.3f)", (double)m->shared_gate);
        else
            tf_add(l, " + shared (ungated)");
    }
    tf_add(l, SEG "%s another", utf8 ? "←/→" : "<-/->");
}

static void active_text(const mlp_src *m, bool utf8, tf_line *l)
{
    const char *in = m->gated ? "gate" : "pre";
    tf_add(l, "active (%s > 0): %d of %d neurons = %.1f%%", in, m->active, m->f,
        m->f ? 100.0 * m->active / m->f : 0.0);
    int rest = m->f - m->active;
    if (rest > 0) {
        if (m->act == AS_ACT_RELU)
            tf_add(l, SEG "the other %d give exactly 0", rest);
        else
            tf_add(l, SEG "the other %d: %s(%s) in [%.3f, 0]", rest, act_name(m->act), in, m->inactive_min);
    }
}

/* Packs a text's segments (separated by SEG) into lines of at most
 * width columns, " │ " between segments on a line; a segment wider than
 * a tf_line gets one of its own (cut when drawn). Returns the tf_line count
 * (at most max), each tf_line written into out[i]. */
static int pack(const char *text, int width, bool utf8, tf_line *out, int max)
{
    int n = 0;
    const char *p = text, *sep = tf_glyph(G_SEP, utf8);
    while (*p && n <= max) {
        const char *e = strchr(p, SEG[0]);
        size_t len = e ? (size_t)(e - p) : strlen(p);
        char seg[512];
        snprintf(seg, sizeof seg, "%.*s", (int)len, p);
        if (n > 0 && out[n - 1].len && tf_width(out[n - 1].buf, utf8) + 3 + tf_width(seg, utf8) <= width) {
            tf_add(&out[n - 1], " %s %s", sep, seg);
        } else {
            if (n == max)
                break;
            out[n] = (tf_line){0};
            tf_add(&out[n++], "%s", seg);
        }
        p = e ? e + 1 : p + len;
    }
    return n;
}

/* ---- the plot ---- */

/* Where the curve goes: cols x rows cells, x over [lo, hi], y over [ylo, yhi]. */
typedef struct plot {
    int y0, x0, rows, cols, label_w;
    double lo, hi, ylo, yhi;
} plot;

static int col_of(const plot *g, double x)
{
    int c = (int)floor((x - g->lo) / (g->hi - g->lo) * g->cols);
    return c < 0 ? 0 : c >= g->cols ? g->cols - 1 : c;
}

/* The dot row (0 at the top, 4 a cell) of y. */
static int dot_row(const plot *g, double y)
{
    int n = 4 * g->rows;
    int r = (int)lround((g->yhi - y) / (g->yhi - g->ylo) * (n - 1));
    return r < 0 ? 0 : r >= n ? n - 1 : r;
}

static void put_braille(WINDOW *w, int y, int x, unsigned bits)
{
    unsigned cp = 0x2800 + bits;
    char b[4] = {(char)(0xE0 | (cp >> 12)), (char)(0x80 | ((cp >> 6) & 0x3F)), (char)(0x80 | (cp & 0x3F)), 0};
    mvwaddstr(w, y, x, b);
}

static void draw_plot(tui *u, WINDOW *w, const plot *g, const mlp_src *m, int hist_rows)
{
    bool utf8 = u->t.utf8;
    int R = g->rows, C = g->cols;
    unsigned char *cells = calloc((size_t)R * C, 1); /* braille bits (UTF-8) or 1 (ASCII) */
    if (!cells)
        return;
    static const unsigned char bit[2][4] = {{0x01, 0x02, 0x04, 0x40}, {0x08, 0x10, 0x20, 0x80}};
    int sub = utf8 ? 2 : 1, prev = -1;
    for (int sx = 0; sx < sub * C; sx++) {
        double x = g->lo + (sx + 0.5) * (g->hi - g->lo) / (sub * C);
        int r = dot_row(g, act_of(m->act, x));
        if (!utf8)
            r = r / 4 * 4;
        /* the dots between the previous sample's row and this one's, so a steep curve stays joined */
        int step = utf8 ? 1 : 4, a = r, b = r;
        if (prev >= 0 && prev < r)
            a = prev + step;
        else if (prev > r)
            b = prev - step;
        for (int d = a; d <= b; d += step) {
            int cy = d / 4, cx = sx / sub;
            cells[(size_t)cy * C + cx] |= utf8 ? bit[sx % 2][d % 4] : 1;
        }
        prev = r;
    }
    int zr = dot_row(g, 0) / 4, zc = col_of(g, 0);
    /* the y labels: the top, 0 and the bottom */
    char lab[32];
    term_role(&u->t, w, R_DIM);
    for (int r = 0; r < R; r++) {
        double v = r == 0 ? g->yhi : r == R - 1 ? g->ylo : r == zr ? 0 : NAN;
        if (isnan(v) || (r != zr && abs(r - zr) < 1))
            continue;
        tf_num(v, g->label_w - 1, lab, sizeof lab);
        mvwprintw(w, g->y0 + r, g->x0, "%*s", g->label_w - 1, lab);
    }
    int px = g->x0 + g->label_w;
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++) {
            unsigned char b = cells[(size_t)r * C + c];
            if (b) {
                term_role(&u->t, w, R_LABEL);
                if (utf8)
                    put_braille(w, g->y0 + r, px + c, b);
                else
                    mvwaddch(w, g->y0 + r, px + c, '*');
            } else if (r == zr || c == zc) {
                term_role(&u->t, w, R_DIM);
                const char *ax = r == zr && c == zc ? (utf8 ? "┼" : "+")
                                 : r == zr           ? (utf8 ? "─" : "-")
                                                     : (utf8 ? "│" : "|");
                mvwaddstr(w, g->y0 + r, px + c, ax);
            }
        }
    free(cells);
    /* the first neurons of the table, by rank, where they sit on the curve */
    term_role_attr(&u->t, w, R_LABEL_SEL, A_BOLD);
    for (int i = (m->n_top < MARKED ? m->n_top : MARKED) - 1; i >= 0; i--) {
        double x = m->pre_v[m->top[i]];
        mvwaddch(w, g->y0 + dot_row(g, act_of(m->act, x)) / 4, px + col_of(g, x), (chtype)('1' + i));
    }
    /* where the pre-activations fall: a count per column */
    int *count = calloc((size_t)C, sizeof *count), most = 0;
    if (count) {
        for (int i = 0; i < m->f; i++) {
            int c = col_of(g, m->pre_v[i]);
            count[c]++;
            most = count[c] > most ? count[c] : most;
        }
        static const char *const blocks[9] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
        static const char ascii[] = " .:-=+*#@";
        term_role(&u->t, w, R_DIM);
        mvwaddstr(w, g->y0 + R + hist_rows - 1, g->x0, "");
        wprintw(w, "%*s", g->label_w - 1, "count");
        term_role(&u->t, w, R_BAR);
        for (int c = 0; c < C; c++) {
            int h = count[c] ? (int)ceil((double)count[c] / most * 8 * hist_rows) : 0;
            for (int r = 0; r < hist_rows; r++) {
                int fill = h - 8 * r;
                fill = fill < 0 ? 0 : fill > 8 ? 8 : fill;
                int y = g->y0 + R + hist_rows - 1 - r;
                if (utf8)
                    mvwaddstr(w, y, px + c, blocks[fill]);
                else
                    mvwaddch(w, y, px + c, (chtype)ascii[fill]);
            }
        }
        free(count);
    }
    /* the x labels: the range's ends and 0 */
    int xy = g->y0 + R + hist_rows;
    term_role(&u->t, w, R_DIM);
    mvwprintw(w, xy, g->x0, "%*s", g->label_w - 1, m->gated ? "gate" : "pre");
    char a[32], b[32];
    snprintf(a, sizeof a, "%.2f", g->lo);
    snprintf(b, sizeof b, "%.2f", g->hi);
    mvwaddstr(w, xy, px, a);
    int bx = px + C - (int)strlen(b);
    if (zc > (int)strlen(a) && zc < bx - px - 1)
        mvwaddstr(w, xy, px + zc, "0");
    if (bx > px + (int)strlen(a))
        mvwaddstr(w, xy, bx, b);
    term_role(&u->t, w, R_NORMAL);
}

/* ---- the table ---- */

static int table_width(const mlp_src *m)
{
    return 2 + 7 + 8 + (m->gated ? 8 + 8 : 0) + 8;
}

static void table_header(const mlp_src *m, tf_line *l)
{
    tf_add(l, "%2s %6s%8s", "#", "neuron", m->gated ? "gate" : "pre");
    if (m->gated) {
        char an[16];
        snprintf(an, sizeof an, "%s(g)", act_name(m->act));
        tf_add(l, "%8s%8s", an, "up");
    }
    tf_add(l, "%8s", "post");
}

static void table_row(const mlp_src *m, int rank, tf_line *l)
{
    int i = m->top[rank];
    tf_add(l, "%2d %6d%8.3f", rank + 1, i, (double)m->pre_v[i]);
    if (m->gated)
        tf_add(l, "%8.3f%8.3f", act_of(m->act, m->pre_v[i]), (double)m->up_v[i]);
    tf_add(l, "%8.3f", (double)m->post_v[i]);
}

/* ---- the pane ---- */

static void draw(tui *u)
{
    WINDOW *w = u->win[P_MLP];
    int rows = getmaxy(w) - 2, width = getmaxx(w) - 3;
    bool utf8 = u->t.utf8;
    mlp_src m;
    const char *why = NULL;
    char title[200], piece[96];
    bool ok = gather(u, &m, &why);
    bool two = as_view_source_stream(u->s) >= 0;
    const char *who = !two ? "MLP" : m.stream == as_view_source_stream(u->s) ? "Encoder MLP" : "Decoder MLP";
    if (!ok) {
        snprintf(title, sizeof title, "%s L%d", who, u->v.layer);
        pane_frame(u, P_MLP, title, NULL);
        pane_message(u, P_MLP, why);
        wnoutrefresh(w);
        return;
    }
    stream_label(u, m.stream, m.pos, piece, sizeof piece);
    char drawn[48] = "";
    if (m.routed && m.slot < m.k && m.expert[m.slot] >= 0)
        snprintf(drawn, sizeof drawn, " expert %d", m.expert[m.slot]);
    else if (m.routed && m.slot < m.k)
        snprintf(drawn, sizeof drawn, " chosen expert %d of %d", m.slot + 1, m.k);
    else if (m.routed)
        snprintf(drawn, sizeof drawn, " shared expert");
    snprintf(title, sizeof title, "%s L%d%s, %s %d %s", who, m.layer, drawn,
             two && m.stream == as_view_source_stream(u->s) ? "source" : "token", m.pos, piece);
    char note[64];
    if (m.bad >= 0)
        snprintf(note, sizeof note, "the formula does NOT give post");
    else
        snprintf(note, sizeof note, "%sthe formula gives post", utf8 ? "✓ " : "");
    pane_frame(u, P_MLP, title, note);
    if (rows < 4 || width < 30) {
        pane_message(u, P_MLP, "Too small: a larger window shows the MLP.");
        wnoutrefresh(w);
        return;
    }
    /* Rows: the formula (wrapped), the routing, the active share, a
     * warning when the formula does not reproduce post, then the body. */
    tf_line fl = {0}, rl = {0}, al = {0}, fls[6], rls[2], als[2];
    formula_text(&m, utf8, &fl);
    if (m.routed)
        routing_text(&m, utf8, &rl);
    active_text(&m, utf8, &al);
    int nf = pack(fl.buf, width, utf8, fls, 6);
    int nr = m.routed ? pack(rl.buf, width, utf8, rls, 2) : 0;
    int na = pack(al.buf, width, utf8, als, 2);
    int fixed = (m.routed ? 1 : 0) + 1 + (m.bad >= 0 ? 1 : 0);
    int body_min = 7;
    int facts = rows - fixed - body_min;
    facts = facts > nf ? nf : facts < 1 ? 1 : facts;
    int y = 1;
    for (int i = 0; i < facts; i++)
        put_text_in(u, w, y++, 2, fls[i].buf, width, R_DIM, A_NORMAL);
    /* a routing tf_line that does not fit one line: the experts, then which is drawn */
    for (int i = 0; i < nr && (i == 0 || rows - y - 1 - body_min >= 0); i++)
        put_text_in(u, w, y++, 2, rls[i].buf, width, R_NORMAL, A_NORMAL);
    for (int i = 0; i < na && (i == 0 || rows - y - body_min >= 0); i++)
        put_text_in(u, w, y++, 2, als[i].buf, width, R_NORMAL, i == 0 ? A_BOLD : A_NORMAL);
    if (m.bad >= 0) {
        tf_line l = {0};
        tf_add(&l, "! neuron %d: the formula gives %.4f, %s holds %.4f", m.bad, m.bad_calc, short_name(u->s, m.post),
            m.bad_cap);
        put_text_in(u, w, y++, 2, l.buf, width, R_WARN, A_BOLD);
    }
    int body = rows - y + 1;
    if (body < 2) {
        wnoutrefresh(w);
        return;
    }
    /* Side by side (the plot left, the table right) on a short pane;
     * stacked (the plot across the pane, the table and the legend under
     * it) where there are rows for both. */
    int tw = table_width(&m), label_w = 7;
    bool stacked = body >= 18;
    int pw = stacked ? width : width - tw - 2;
    bool plot_on = pw - label_w >= 16 && body >= 4; /* two curve rows at least */
    int hist_rows = body >= 16 ? 2 : 1, curve = 0;
    if (plot_on) {
        curve = stacked ? (body - 3) / 2 : body - hist_rows - 1;
        curve = curve > 14 ? 14 : curve;
    }
    int plot_rows = plot_on ? curve + hist_rows + 1 + (stacked ? 1 : 0) : 0;
    int ty = stacked ? y + plot_rows : y, tx = stacked || !plot_on ? 2 : 2 + pw + 2;
    int n_rows = rows - ty < m.n_top ? rows - ty : m.n_top;
    n_rows = n_rows > 20 ? 20 : n_rows;
    tf_line th = {0};
    table_header(&m, &th);
    put_text_in(u, w, ty, tx, th.buf, width - tx + 2, R_LABEL, A_BOLD);
    for (int r = 0; r < n_rows; r++) {
        tf_line l = {0};
        table_row(&m, r, &l);
        put_text_in(u, w, ty + 1 + r, tx, l.buf, width - tx + 2, r < MARKED ? R_NORMAL : R_DIM, A_NORMAL);
    }
    if (!plot_on) {
        wnoutrefresh(w);
        return;
    }
    int cols = pw - label_w;
    plot g = {y, 2, curve, cols, label_w, m.lo, m.hi, 0, 0};
    double ylo = 0, yhi = 0;
    for (int c = 0; c <= 4 * cols; c++) {
        double v = act_of(m.act, m.lo + c * (m.hi - m.lo) / (4 * cols));
        ylo = v < ylo ? v : ylo;
        yhi = v > yhi ? v : yhi;
    }
    if (yhi - ylo < 1e-9)
        yhi = ylo + 1;
    g.ylo = ylo;
    g.yhi = yhi;
    draw_plot(u, w, &g, &m, hist_rows);
    /* The legend: beside the table when stacked, else under a plot shorter than its rows. */
    int lx = stacked ? tx + tw + 3 : 2, lw = stacked ? width - tw - 3 : pw;
    int ly = stacked ? ty + 1 : y + plot_rows + 1, lrows = rows - ly + 1;
    if (lw >= 20 && lrows > 0) {
        tf_line lg = {0};
        int marked = m.n_top < MARKED ? m.n_top : MARKED;
        tf_add(&lg, "The curve: %s(x) over the range of this token's %d %s values; under it, how many fall in "
                 "each column. 1-%d on the curve: the table's first %d neurons, by |post|.",
            act_name(m.act), m.f, m.gated ? "gate" : "pre", marked, marked);
        if (m.gated)
            tf_add(&lg, " Each neuron's post is %s(gate) %s up: its gate picks the point on the curve, up scales "
                     "it (and may flip its sign).",
                act_name(m.act), tf_glyph(G_TIMES, utf8));
        int ls[16], nl = tf_wrap(lg.buf, lw, utf8, ls, 16);
        nl = nl > 16 ? 16 : nl;
        if (nl <= lrows)
            for (int i = 0; i < nl; i++, ly++) {
                tf_line l = {0};
                int end = i + 1 < nl ? ls[i + 1] : (int)lg.len;
                while (end > ls[i] && lg.buf[end - 1] == ' ')
                    end--;
                tf_add(&l, "%.*s", end - ls[i], lg.buf + ls[i]);
                put_text_in(u, w, ly, lx, l.buf, lw, R_DIM, A_NORMAL);
            }
    }
    wnoutrefresh(w);
}

/* Where some layer has an MLP the pane draws (in either stream). */
static bool applies(const tui *u)
{
    const as_program *p = as_view_program(u->s);
    int n = as_view_n_layer(u->s);
    int streams[2] = {as_view_out_stream(u->s), as_view_source_stream(u->s)};
    for (int s = 0; s < 2; s++)
        for (int l = 0; streams[s] >= 0 && l < n; l++)
            if (as_program_hook_in(p, AS_HK_MLP_POST, l, streams[s]) >= 0 ||
                as_program_hook_in(p, AS_HK_EXPERTS_POST, l, streams[s]) >= 0)
                return true;
    return false;
}

/* Focused, on a routed layer: Left/Right step through the token's chosen
 * experts and the shared one. */
static unsigned key(tui *u, int ch, bool keycode)
{
    mlp_src m;
    const char *why;
    if (!keycode || (ch != KEY_LEFT && ch != KEY_RIGHT))
        return RD_IGNORED;
    memset(&m, 0, sizeof m);
    m.s = u->s;
    m.cap = as_view_capture(u->s);
    m.stream = sel_stream(u);
    m.layer = u->v.layer;
    if (!find_hooks(u, &m, &why) || !m.routed)
        return RD_IGNORED;
    state(u)->slot = (m.slot + (ch == KEY_RIGHT ? 1 : -1) + m.n_slots) % m.n_slots;
    return RD(P_MLP);
}

static void reset(void *st)
{
    ((mlp_state *)st)->slot = 0;
}

static void *init(void)
{
    mlp_state *st = malloc(sizeof *st);
    if (st)
        reset(st);
    return st;
}

const pane_class pane_mlp = {
    .name = "MLP",
    .shows = SHOWS_LAYER | SHOWS_QUERY | SHOWS_LOOK | SHOWS_DATA,
    .focusable = true,
    .applies = applies,
    .draw = draw,
    .key = key,
    .init = init,
    .reset = reset,
    .free = free,
};
