/* pane_positions: the model's position signal (`view positions`, key p),
 * read from the op that puts positions in (as_view_pos_facts):
 *   - a learned table (GPT-2, BERT, ViT: hook_pos_embed = W_pos[pos]) or
 *     the paper's sinusoids (the original Transformer) as a heatmap,
 *     position × dimension, the selected token's row marked and its first
 *     values printed;
 *   - rotary (Llama, DeepSeek's decoupled part of MLA): the angle pos·θ_i
 *     each pair turns by at the selected position, cos(pos·θ_i) as a
 *     heatmap position × pair, and the curve of q·k for q = k = (1,…,1)
 *     rotated Δ positions apart over its value at Δ = 0 (the mean of
 *     cos(Δ·θ_i)): RoPE's long-term decay;
 *   - T5's relative position bias: the bucket of each distance k − q and
 *     the selected head's bias from the table, and where each bucket
 *     starts.
 * Every number is the engine's (the op's table, its sinusoids, its rotary
 * spec with its scalings, its bucket function); the pane only lays them
 * out. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "textfmt.h"
#include "tui.h"

#define LABEL_W 11 /* a heatmap row's label: "> 12 piece " */

/* The position op the view shows, for the selected site's stream and layer. */
typedef struct pos_src {
    const as_op *op;
    as_pos_facts f;
    int stream, hook, n_tok, sel;
} pos_src;

static bool find(const tui *u, pos_src *ps)
{
    const as_program *p = as_view_program(u->s);
    memset(ps, 0, sizeof *ps);
    ps->stream = as_program_pick_stream(p, u->v.site);
    if (ps->stream < 0)
        ps->stream = as_view_out_stream(u->s);
    static const struct {
        as_hook_kind kind;
        bool block;
    } kinds[] = {{AS_HK_POS_EMBED, false}, {AS_HK_ROT_Q, true}, {AS_HK_ATTN_BIAS, true}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        int h = as_program_hook_in(p, kinds[i].kind, kinds[i].block ? u->v.layer : -1, ps->stream);
        if (h < 0 && kinds[i].block) /* another layer may have it (a layer without rotary) */
            for (int l = 0; l < as_view_n_layer(u->s) && h < 0; l++)
                h = as_program_hook_in(p, kinds[i].kind, l, ps->stream);
        const as_op *op = h >= 0 ? as_program_producer(p, h) : NULL;
        if (op && as_view_pos_facts(u->s, op, &ps->f)) {
            ps->op = op;
            ps->hook = h;
            break;
        }
    }
    ps->n_tok = as_view_stream_tokens(u->s, ps->stream);
    ps->sel = view_row(&u->v);
    return ps->op != NULL;
}

/* ---- text helpers ---- */

/* Wrapped text from row y, at most max rows; returns the rows used. */
static int wrapped(tui *u, WINDOW *w, int y, const char *s, int cols, int max, int look)
{
    int starts[8], n = tf_wrap(s, cols - 1, u->t.utf8, starts, 8);
    n = n > 8 ? 8 : n;
    n = n > max ? max : n;
    for (int i = 0; i < n; i++) {
        int end = i + 1 < n ? starts[i + 1] : (int)strlen(s);
        char one[512];
        snprintf(one, sizeof one, "%.*s", end - starts[i], s + starts[i]);
        for (size_t k = strlen(one); k > 0 && one[k - 1] == ' '; k--) /* a segment may end in spaces */
            one[k - 1] = '\0';
        put_text_in(u, w, y + i, 2, one, cols - 1, look, A_NORMAL);
    }
    return n;
}

/* The long description where it fits in max rows, else the short one. */
static int described(tui *u, WINDOW *w, int y, const char *lng, const char *shrt, int cols, int max)
{
    int starts[8], n = tf_wrap(lng, cols - 1, u->t.utf8, starts, 8);
    return wrapped(u, w, y, n <= max ? lng : shrt, cols, max, R_DIM);
}

/* "v0 v1 v2 … (n dims)" in `width` columns, values as fmt prints them. */
static void values_text(const double *v, int n, const char *fmt, int width, bool utf8, tf_line *l)
{
    char tail[48];
    snprintf(tail, sizeof tail, " %s (%d)", tf_glyph(G_ELLIPSIS, utf8), n);
    int tw = tf_width(tail, utf8), start = (int)l->len;
    for (int i = 0; i < n; i++) {
        char one[32];
        snprintf(one, sizeof one, fmt, v[i]);
        int need = (int)l->len - start + 1 + (int)strlen(one) + (i + 1 < n ? tw : 0);
        if (need > width)
            break;
        tf_add(l, " %s", one);
        if (i + 1 == n)
            return;
    }
    tf_add(l, "%s", tail);
}

static void pos_label(tui *u, const pos_src *ps, int pos, char *out, size_t cap)
{
    char piece[96] = "";
    if (pos < ps->n_tok)
        stream_label(u, ps->stream, pos, piece, sizeof piece);
    char lab[128], fit[64];
    snprintf(lab, sizeof lab, "%3d %s", pos, piece);
    tf_fit(lab, LABEL_W - 2, u->t.utf8, fit, sizeof fit);
    snprintf(out, cap, "%s", fit);
}

/* ---- the heatmap: positions × columns ---- */

typedef double (*cell_fn)(const pos_src *ps, int pos, int col, void *ctx);

typedef struct heat {
    int n_pos;      /* positions that can be shown */
    int n_col;      /* values per position (dims or pairs) */
    int stride;     /* columns sampled every `stride` */
    int cw;         /* screen columns per value */
    double lo, hi;  /* the colour scale */
} heat;

/* sines: an even stride, so that every column is a sine (the sinusoids' interleaved sin, cos) */
static heat heat_fit(int n_pos, int n_col, int avail, bool sines)
{
    heat h = {n_pos, n_col, 1, 1, -1, 1};
    if (avail < 1)
        avail = 1;
    if (n_col > avail)
        h.stride = (n_col + avail - 1) / avail + (sines && (n_col + avail - 1) / avail % 2);
    else
        h.cw = avail / n_col > 3 ? 3 : avail / n_col;
    return h;
}

static int heat_first(int sel, int rows, int n_pos)
{
    int first = sel - rows / 2;
    first = first + rows > n_pos ? n_pos - rows : first;
    return first < 0 ? 0 : first;
}

/* Draws rows [first, first + rows) from screen row y; the selected row
 * marked by '>' and its label highlighted. */
static void heat_draw(tui *u, WINDOW *w, int y, int rows, const pos_src *ps, const heat *h, cell_fn fn, void *ctx)
{
    hm_style st = u->t.style; /* half blocks: both halves the position's colour */
    int first = heat_first(ps->sel, rows, h->n_pos);
    for (int r = 0; r < rows && first + r < h->n_pos; r++) {
        int pos = first + r;
        bool sel = pos == ps->sel;
        char lab[64];
        pos_label(u, ps, pos, lab, sizeof lab);
        term_role_attr(&u->t, w, sel ? R_LABEL_SEL : R_LABEL, sel ? A_BOLD | A_REVERSE : A_NORMAL);
        mvwaddstr(w, y + r, 1, sel ? ">" : " ");
        put_text(u, w, y + r, 2, lab, LABEL_W - 2);
        term_role(&u->t, w, R_NORMAL);
        int x = 1 + LABEL_W;
        for (int c = 0; c * h->stride < h->n_col; c++) {
            double v = fn(ps, pos, c * h->stride, ctx);
            float t = (float)((v - h->lo) / (h->hi - h->lo));
            hm_sample s = {HM_VALUE, t < 0 ? 0 : t > 1 ? 1 : t};
            hm_glyph g = hm_glyph_at(st, s, s, u->t.levels);
            term_heat(&u->t, w, g.fg, g.bg);
            for (int k = 0; k < h->cw; k++)
                mvwaddstr(w, y + r, x++, g.text);
        }
        term_role_attr(&u->t, w, R_LABEL_SEL, A_BOLD);
        if (sel)
            mvwaddstr(w, y + r, x, "<");
        term_role(&u->t, w, R_NORMAL);
    }
}

/* "lo ▒▒▒▒▒ hi" at (y, x). */
static void legend(tui *u, WINDOW *w, int y, int x, double lo, double hi)
{
    char a[32];
    snprintf(a, sizeof a, "%.2f ", lo);
    term_role(&u->t, w, R_DIM);
    mvwaddstr(w, y, x, a);
    hm_style st = u->t.style;
    for (int i = 0; i < 10; i++) {
        hm_sample s = {HM_VALUE, (float)i / 9.0f};
        hm_glyph g = hm_glyph_at(st, s, s, u->t.levels);
        term_heat(&u->t, w, g.fg, g.bg);
        waddstr(w, g.text);
    }
    snprintf(a, sizeof a, " %.2f", hi);
    term_role(&u->t, w, R_DIM);
    waddstr(w, a);
    term_role(&u->t, w, R_NORMAL);
}

/* ---- learned table and sinusoids ---- */

static int cmp_float(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

typedef struct table_ctx {
    float *row;
    int row_pos;
} table_ctx;

static double table_cell(const pos_src *ps, int pos, int col, void *ctx)
{
    table_ctx *t = ctx;
    if (t->row_pos != pos) {
        as_view_pos_row(ps->op, pos, t->row);
        t->row_pos = pos;
    }
    return t->row[col];
}

static int table_positions(const tui *u, const pos_src *ps)
{
    int n = ps->f.kind == AS_POSK_LEARNED ? ps->f.rows : as_view_model_ctx(u->s);
    return n > 0 ? n : 1;
}

static void draw_table(tui *u, WINDOW *w, int rows, int cols, const pos_src *ps)
{
    bool utf8 = u->t.utf8, learned = ps->f.kind == AS_POSK_LEARNED;
    int d = ps->f.dims, n_pos = table_positions(u, ps), y = 1;
    int sel = ps->sel < n_pos ? ps->sel : n_pos - 1;
    float *row = malloc(sizeof *row * (size_t)(d > 0 ? d : 1));
    double *v = malloc(sizeof *v * (size_t)(d > 0 ? d : 1));
    if (!row || !v) {
        free(row);
        free(v);
        pane_message(u, P_POS, "Out of memory.");
        return;
    }
    tf_line l = {0};
    const char *hook = as_view_hook_name(u->s, ps->hook);
    if (learned)
        tf_add(&l, "Learned: %s = W_pos[position], a trained table of %d positions %s %d dims, added to the token's "
                "embedding.",
            hook, ps->f.rows, tf_glyph(G_TIMES, utf8), d);
    else
        tf_add(&l, "Sinusoidal: %s[p, 2i] = sin(p / %g^(2i/%d)), [p, 2i+1] = cos(the same): no weights; fast "
                "waves in the first dims, slow in the last.",
            hook, ps->f.base, d);
    tf_line sh = {0};
    if (learned)
        tf_add(&sh, "Learned: W_pos, %d positions %s %d dims, added to each input's embedding.", ps->f.rows,
            tf_glyph(G_TIMES, utf8), d);
    else
        tf_add(&sh, "Sinusoidal: PE[p,2i] = sin(p/%g^(2i/%d)), [2i+1] = cos; no weights.", ps->f.base, d);
    y += described(u, w, y, l.buf, sh.buf, cols, rows >= 16 ? 3 : rows >= 11 ? 2 : 1);
    /* the selected position's values */
    as_view_pos_row(ps->op, sel, row);
    for (int i = 0; i < d; i++)
        v[i] = row[i];
    char lab[64];
    pos_label(u, ps, sel, lab, sizeof lab);
    l = (tf_line){0};
    tf_add(&l, "%s[%d] =", learned ? "W_pos" : "PE", sel);
    values_text(v, d, "%.3f", cols - 2 - (int)l.len, utf8, &l);
    put_text_in(u, w, y++, 2, l.buf, cols - 1, R_NORMAL, A_BOLD);
    /* the heatmap */
    heat h = heat_fit(n_pos, d, cols - LABEL_W - 2, !learned);
    bool clipped = false;
    if (learned) { /* a symmetric scale over the cells shown, 0 in the middle: up to the 95th percentile of
                    * |value| (one outlier, such as GPT-2's position 0, would leave the rest one grey) */
        int hrows = rows - (y - 1) - 2, first = heat_first(sel, hrows > 0 ? hrows : 1, n_pos), n = 0;
        hrows = hrows > 0 ? hrows : 1;
        float *a = malloc(sizeof *a * (size_t)hrows * (size_t)d);
        for (int p = first; a && p < first + hrows && p < n_pos; p++) {
            as_view_pos_row(ps->op, p, row);
            for (int i = 0; i < d; i += h.stride)
                a[n++] = fabsf(row[i]);
        }
        double mx = 0, all = 0;
        if (n > 0) {
            qsort(a, (size_t)n, sizeof *a, cmp_float);
            mx = a[(int)(0.95 * (n - 1))];
            all = a[n - 1];
        }
        free(a);
        clipped = all > mx;
        h.lo = -(mx > 0 ? mx : 1);
        h.hi = mx > 0 ? mx : 1;
    }
    l = (tf_line){0};
    if (h.stride > 1)
        tf_add(&l, "position %s dim 0..%d, every %d%s dim%s", tf_glyph(G_TIMES, utf8), d - 1, h.stride,
            h.stride == 2 ? "nd" : h.stride == 3 ? "rd" : "th", !learned && h.stride % 2 == 0 ? ": the sines" : "");
    else
        tf_add(&l, "position %s dim 0..%d", tf_glyph(G_TIMES, utf8), d - 1);
    put_text_in(u, w, y++, 2, l.buf, cols - 1, R_LABEL, A_BOLD);
    int hrows = rows - y; /* the legend below */
    if (hrows < 1)
        hrows = 1;
    pos_src at = *ps;
    at.sel = sel;
    table_ctx tc = {row, -1};
    heat_draw(u, w, y, hrows, &at, &h, table_cell, &tc);
    y += hrows < n_pos ? hrows : n_pos;
    if (y <= rows) {
        legend(u, w, y, 2, h.lo, h.hi);
        if (clipped)
            put_text_in(u, w, y, 2 + 24, "(the largest 5% of |values| beyond the scale)", cols - 25, R_DIM, A_NORMAL);
    }
    free(row);
    free(v);
}

/* ---- rotary ---- */

typedef struct rope_ctx {
    double *theta;
    int pos;
} rope_ctx;

static double rope_cell(const pos_src *ps, int pos, int col, void *ctx)
{
    rope_ctx *r = ctx;
    if (r->pos != pos) {
        as_view_rope_theta(ps->op, pos, r->theta);
        r->pos = pos;
    }
    return cos(r->theta[col]);
}

/* A curve of q·k over the distance Δ between a query and a key: both
 * vectors the same at every Δ, only their rotations differ (θ_i(Δ) =
 * Δ·θ_i(1), every scaling being linear in the position). q NULL: q = k =
 * (1,…,1), divided by its value at Δ = 0 (the mean of cos(Δ·θ_i)); else
 * a token's own q and k (their rotated dims), the rotary part of q·k
 * when k is turned Δ positions back from q. */
typedef struct curve {
    const double *theta1;
    int pairs;
    bool halves;
    const float *q, *k;
    double scale; /* cos and sin scaled by the model's attention factor: the dot by its square */
} curve;

static double curve_at(const curve *cv, int delta)
{
    double s = 0;
    for (int i = 0; i < cv->pairs; i++) {
        double c = cos(delta * cv->theta1[i]), sn = sin(delta * cv->theta1[i]);
        if (!cv->q) {
            s += c;
            continue;
        }
        int a = cv->halves ? i : 2 * i, b = cv->halves ? i + cv->pairs : 2 * i + 1;
        /* R(Δθ)q · k with y0 = x0·c − x1·s, y1 = x0·s + x1·c (as the kernels turn pairs) */
        s += ((double)cv->q[a] * cv->k[a] + (double)cv->q[b] * cv->k[b]) * c +
             ((double)cv->q[a] * cv->k[b] - (double)cv->q[b] * cv->k[a]) * sn;
    }
    return cv->q ? s * cv->scale : s / cv->pairs;
}

/* The plot (rows rows, y from row y), then its axis below. */
static void draw_curve(tui *u, WINDOW *w, int y, int rows, int cols, const pos_src *ps, const curve *cv, int max_delta)
{
    bool utf8 = u->t.utf8;
    int x0 = 9, xs = cols - x0 - 1;
    if (xs < 8 || rows < 3 || max_delta < 1)
        return;
    double *yv = malloc(sizeof *yv * (size_t)xs);
    if (!yv)
        return;
    double lo = 0, hi = cv->q ? 0 : 1;
    for (int c = 0; c < xs; c++) {
        int dlt = (int)lround((double)c * max_delta / (xs - 1));
        yv[c] = curve_at(cv, dlt);
        lo = yv[c] < lo ? yv[c] : lo;
        hi = yv[c] > hi ? yv[c] : hi;
    }
    if (hi - lo < 1e-12)
        hi = lo + 1;
    int zero = (int)lround(hi / (hi - lo) * (rows - 1));
    for (int r = 0; r < rows; r++) {
        char a[16] = "";
        if (r == 0)
            tf_num(hi, 6, a, sizeof a);
        else if (r == rows - 1)
            tf_num(lo, 6, a, sizeof a);
        else if (r == zero)
            snprintf(a, sizeof a, "0");
        term_role(&u->t, w, R_DIM);
        mvwprintw(w, y + r, 2, "%6s", a);
        mvwaddstr(w, y + r, x0 - 1, utf8 ? "│" : "|");
        if (r == zero && zero > 0 && zero < rows - 1)
            for (int c = 0; c < xs; c++)
                mvwaddstr(w, y + r, x0 + c, utf8 ? "·" : ".");
    }
    int sel_col = ps->sel <= max_delta ? (int)lround((double)ps->sel * (xs - 1) / max_delta) : -1;
    for (int c = 0; c < xs; c++) {
        int r = (int)lround((hi - yv[c]) / (hi - lo) * (rows - 1));
        term_role_attr(&u->t, w, c == sel_col ? R_LABEL_SEL : R_BAR, c == sel_col ? A_BOLD : A_NORMAL);
        mvwaddstr(w, y + r, x0 + c, utf8 ? "•" : "*");
    }
    term_role(&u->t, w, R_NORMAL);
    free(yv);
    /* the axis: Δ from 0 to max_delta, the selected position's distance from token 0 marked */
    tf_line l = {0};
    char right[32];
    snprintf(right, sizeof right, "%d", max_delta);
    tf_add(&l, "%s 0", utf8 ? "Δ" : "d");
    int pad = xs - 2 - (int)strlen(right);
    if (sel_col >= 0) {
        char mark[48];
        snprintf(mark, sizeof mark, "%s%d", utf8 ? "▲" : "^", ps->sel);
        int at = sel_col - 1 > 2 ? sel_col - 1 : 2;
        int mw = tf_width(mark, utf8);
        if (at + mw < xs - (int)strlen(right) - 1) {
            tf_add(&l, "%*s%s", at - 2, "", mark);
            pad = xs - at - mw - (int)strlen(right);
        }
    }
    tf_add(&l, "%*s%s", pad > 0 ? pad : 0, "", right);
    put_text_in(u, w, y + rows, x0 - 2, l.buf, cols - x0 + 1, R_DIM, A_NORMAL);
}

/* A curve's block of `n` rows from y: its title, the plot, its axis, and
 * its values at a few distances (prefix, then " Δ: value" pairs). */
static void curve_block(tui *u, WINDOW *w, int y, int n, int cols, const pos_src *ps, const curve *cv,
                        const char *title, const char *prefix, int max_delta)
{
    bool utf8 = u->t.utf8;
    put_text_in(u, w, y, 2, title, cols - 1, R_LABEL, A_BOLD);
    draw_curve(u, w, y + 1, n - 3, cols, ps, cv, max_delta);
    tf_line l = {0};
    static const int ds[] = {0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
    tf_add(&l, "%s", prefix);
    for (size_t i = cv->q ? 0 : 1; i < sizeof ds / sizeof ds[0] && ds[i] <= max_delta; i++) {
        char one[32];
        snprintf(one, sizeof one, " %d: %.3f", ds[i], curve_at(cv, ds[i]));
        if (tf_width(l.buf, utf8) + (int)strlen(one) > cols - 2)
            break;
        tf_add(&l, "%s", one);
    }
    put_text_in(u, w, y + n - 1, 2, l.buf, cols - 1, R_NORMAL, A_NORMAL);
}

/* The selected token's own q and k at the selected head, where the
 * capture holds the rotation's inputs: their rotated dims. */
static bool own_qk(tui *u, const pos_src *ps, curve *cv, int *head)
{
    const as_program *p = as_view_program(u->s);
    const as_capture *cap = as_view_capture(u->s);
    int layer = as_view_op_layer(ps->op);
    int hk = as_program_hook_in(p, AS_HK_ROT_K, layer, ps->stream);
    const as_op *kop = hk >= 0 ? as_program_producer(p, hk) : NULL;
    as_pos_facts kf;
    if (!kop || !as_view_pos_facts(u->s, kop, &kf) || kf.rot_dim != ps->f.rot_dim || kf.halves != ps->f.halves)
        return false;
    int qin = as_view_op_in(ps->op, 0), kin = as_view_op_in(kop, 0);
    if (qin < 0 || kin < 0 || !as_capture_has(cap, qin) || !as_capture_has(cap, kin) ||
        as_view_filled(u->s, qin) <= ps->sel || as_view_filled(u->s, kin) <= ps->sel)
        return false;
    int H = ps->f.n_heads, h = u->v.head < H ? u->v.head : H - 1;
    int kvh = (int)((long)h * kf.n_heads / H);
    cv->q = as_capture_row(cap, qin, ps->sel) + (size_t)h * (size_t)ps->f.d_head + (size_t)ps->f.offset;
    cv->k = as_capture_row(cap, kin, ps->sel) + (size_t)kvh * (size_t)kf.d_head + (size_t)kf.offset;
    double m = ps->f.attn_factor;
    if (ps->f.ext_factor != 0)
        m *= 1.0 + 0.1 * log(1.0 / ps->f.freq_scale);
    cv->scale = m * m;
    *head = h;
    return true;
}

static void draw_rotary(tui *u, WINDOW *w, int rows, int cols, const pos_src *ps)
{
    bool utf8 = u->t.utf8;
    const as_pos_facts *f = &ps->f;
    int pairs = f->rot_dim / 2, y = 1;
    double *theta = malloc(sizeof *theta * (size_t)(pairs > 0 ? pairs : 1));
    double *theta1 = malloc(sizeof *theta1 * (size_t)(pairs > 0 ? pairs : 1));
    if (!theta || !theta1 || pairs < 1) {
        free(theta);
        free(theta1);
        pane_message(u, P_POS, "No rotary pairs.");
        return;
    }
    as_view_rope_theta(ps->op, 1, theta1);
    /* what rotates */
    tf_line l = {0};
    tf_add(&l, "Rotary (L%d): q and k turn in %d pairs ", as_view_op_layer(ps->op), pairs);
    if (f->halves)
        tf_add(&l, "(i, i+%d)", pairs);
    else
        tf_add(&l, "(2i, 2i+1)");
    if (f->offset > 0 || f->rot_dim < f->d_head)
        tf_add(&l, " of dims %d..%d of each %d-dim head (the rest carry no position)", f->offset,
            f->offset + f->rot_dim - 1, f->d_head);
    tf_add(&l, " by pos%s%s_i, %s_i = %g^(%s2i/%d)", utf8 ? "·" : "*", utf8 ? "θ" : "theta", utf8 ? "θ" : "theta",
        f->base, utf8 ? "−" : "-", f->rot_dim);
    if (f->ext_factor != 0)
        tf_add(&l, ", scaled by YaRN (factor %g: the slow pairs' angles divided by it, the fast ones kept)",
            1 / f->freq_scale);
    else if (f->freq_scale != 1)
        tf_add(&l, ", scaled linearly (angles divided by %g)", 1 / f->freq_scale);
    if (f->freqs)
        tf_add(&l, ", each pair's angle divided by its own factor (rope_freqs)");
    tf_add(&l, "; q%sk then depends on the distance only.", utf8 ? "·" : ".");
    int desc_max = rows >= 16 ? 3 : rows >= 12 ? 2 : 1;
    tf_line sh = {0};
    tf_add(&sh, "Rotary (L%d): %d pairs turn by pos%s%s_i, %s_i = %g^(%s2i/%d)%s.", as_view_op_layer(ps->op), pairs,
        utf8 ? "·" : "*", utf8 ? "θ" : "theta", utf8 ? "θ" : "theta", f->base, utf8 ? "−" : "-", f->rot_dim,
        f->freq_scale != 1 || f->ext_factor != 0 || f->freqs ? ", scaled" : "");
    y += described(u, w, y, l.buf, sh.buf, cols, desc_max);
    /* the angles at the selected position */
    as_view_rope_theta(ps->op, ps->sel, theta);
    l = (tf_line){0};
    tf_add(&l, "pos %d angles (rad):", ps->sel);
    values_text(theta, pairs, "%.3f", cols - 2 - (int)l.len, utf8, &l);
    put_text_in(u, w, y++, 2, l.buf, cols - 1, R_NORMAL, A_BOLD);
    /* rows left: the curves (each a title, at least 3 rows of plot, the
     * axis and values: 6 rows) before the heatmap (a header and rows):
     * the all-ones curve first, the token's own q·k where there is room */
    int left = rows - y + 1, head = 0;
    int max_delta = as_view_model_ctx(u->s) - 1; /* the distances drawn: the context, at most 1023 */
    max_delta = max_delta > 1023 ? 1023 : max_delta;
    curve ones = {theta1, pairs, f->halves, NULL, NULL, 1}, own = ones;
    bool have_own = own_qk(u, ps, &own, &head);
    int n_curves = left >= 16 && have_own ? 2 : left >= 6 ? 1 : 0;
    int hrows = n_curves == 2 ? (left / 3 > 4 ? left / 3 : 4) - 1 : left >= 10 ? (left - 6) / 2 - 1 : n_curves ? 0 : left - 1;
    int crows = left - (hrows > 0 ? hrows + 1 : 0);
    if (hrows >= 1) {
        heat h = heat_fit(max_delta + 1, pairs, cols - LABEL_W - 2, false);
        l = (tf_line){0};
        tf_add(&l, "cos(pos%s%s_i), position %s pair 0..%d", utf8 ? "·" : "*", utf8 ? "θ" : "theta",
            tf_glyph(G_TIMES, utf8), pairs - 1);
        put_text_in(u, w, y++, 2, l.buf, cols - 1, R_LABEL, A_BOLD);
        rope_ctx rc = {theta, -1};
        heat_draw(u, w, y, hrows, ps, &h, rope_cell, &rc);
        y += hrows;
    }
    const char *dl = utf8 ? "Δ" : "d", *dot = utf8 ? "·" : ".", *th = utf8 ? "θ" : "theta";
    if (n_curves >= 1) {
        int n = n_curves == 2 ? crows / 2 : crows;
        l = (tf_line){0};
        tf_add(&l, "q%sk(%s)/q%sk(0), q = k = (1,%s,1) turned %s apart = mean cos(%s%s%s_i)", dot, dl, dot,
            tf_glyph(G_ELLIPSIS, utf8), dl, dl, dot, th);
        char pre[32];
        snprintf(pre, sizeof pre, "at %s", dl);
        curve_block(u, w, y, n, cols, ps, &ones, l.buf, pre, max_delta);
        y += n;
        crows -= n;
    }
    if (n_curves == 2) {
        l = (tf_line){0};
        tf_add(&l, "%s q%sk, L%d H%d: token %d's own q and k, k turned %s back",
            f->rot_dim < f->d_head ? "rotary part of" : "this", dot, as_view_op_layer(ps->op), head, ps->sel, dl);
        char pre[32];
        snprintf(pre, sizeof pre, "own q%sk at %s", dot, dl);
        curve_block(u, w, y, crows, cols, ps, &own, l.buf, pre, max_delta);
    }
    free(theta);
    free(theta1);
}

/* ---- T5's relative buckets ---- */

static void draw_relative(tui *u, WINDOW *w, int rows, int cols, const pos_src *ps)
{
    bool utf8 = u->t.utf8;
    const as_pos_facts *f = &ps->f;
    int H = f->dims, head = u->v.head < H ? u->v.head : H - 1, y = 1;
    float *bias = malloc(sizeof *bias * (size_t)(H > 0 ? H : 1));
    if (!bias) {
        pane_message(u, P_POS, "Out of memory.");
        return;
    }
    int half = f->bidirectional ? f->rows / 2 : f->rows, exact = half / 2;
    tf_line l = {0};
    tf_add(&l, "Relative (T5, L%d): no position vectors; each head adds bias[bucket(k%sq)] to its scores. %d buckets%s: "
            "distances below %d each their own, then log-spaced up to %d.",
        as_view_op_layer(ps->op), utf8 ? "−" : "-", f->rows, f->bidirectional ? ", half each way" : ", keys before",
        exact, f->max_distance);
    y += wrapped(u, w, y, l.buf, cols, rows >= 10 ? 3 : 2, R_DIM);
    /* k − q, bucket, bias: columns of 6 */
    int n = (cols - 12) / 6;
    n = n < 1 ? 1 : n;
    int lo = f->bidirectional ? -(n / 2) : -(n - 1), q = 1000; /* a query far from the start: every distance */
    tf_line a = {0}, b = {0}, c = {0};
    tf_add(&a, "%s       ", utf8 ? "k−q" : "k-q"); /* 10 columns: "−" is one */
    tf_add(&b, "%-10s", "bucket");
    tf_add(&c, "bias H%-4d", head);
    for (int i = 0; i < n; i++) {
        int dk = lo + i, bk = as_view_rel_bucket(ps->op, q, q + dk);
        as_view_rel_row(ps->op, bk, bias);
        tf_add(&a, "%6d", dk);
        tf_add(&b, "%6d", bk);
        tf_add(&c, "%6.2f", (double)bias[head]);
    }
    if (y + 3 <= rows + 1) {
        put_text_in(u, w, y++, 2, a.buf, cols - 1, R_LABEL, A_BOLD);
        put_text_in(u, w, y++, 2, b.buf, cols - 1, R_NORMAL, A_NORMAL);
        put_text_in(u, w, y++, 2, c.buf, cols - 1, R_NORMAL, A_NORMAL);
    }
    /* where each bucket of one side starts */
    l = (tf_line){0};
    tf_add(&l, "bucket starts at |k%sq|%s:", utf8 ? "−" : "-", f->bidirectional ? " (keys before; after: + half)" : "");
    int prev = -1;
    for (int d = 0; d <= f->max_distance * 2 && d < 100000; d++) {
        int bk = as_view_rel_bucket(ps->op, q, q - d);
        if (bk != prev)
            tf_add(&l, " %d%s%d", d, utf8 ? "→" : ">", bk);
        prev = bk;
    }
    if (y <= rows)
        y += wrapped(u, w, y, l.buf, cols, rows - y + 1 < 2 ? rows - y + 1 : 2, R_NORMAL);
    /* every head's bias at those distances, a row each, on one scale (the table's largest |bias|) */
    double mx = 0;
    for (int bk = 0; bk < f->rows; bk++) {
        as_view_rel_row(ps->op, bk, bias);
        for (int h = 0; h < H; h++)
            mx = fabs(bias[h]) > mx ? fabs(bias[h]) : mx;
    }
    mx = mx > 0 ? mx : 1;
    if (y + 2 <= rows) {
        put_text_in(u, w, y++, 2, "bias by head (rows) and k−q (columns above)", cols - 1, R_LABEL, A_BOLD);
        int room = rows - y, h0 = head - room / 2; /* the heads around the selected one */
        h0 = h0 + room > H ? H - room : h0;
        h0 = h0 < 0 ? 0 : h0;
        for (int h = h0; h < H && y < rows; h++, y++) {
            char lab[16];
            snprintf(lab, sizeof lab, "H%d", h);
            term_role_attr(&u->t, w, h == head ? R_LABEL_SEL : R_LABEL, h == head ? A_BOLD | A_REVERSE : A_NORMAL);
            mvwaddstr(w, y, 1, h == head ? ">" : " ");
            put_text(u, w, y, 2, lab, 8);
            int x = 2 + 10;
            for (int i = 0; i < n; i++) {
                as_view_rel_row(ps->op, as_view_rel_bucket(ps->op, q, q + lo + i), bias);
                float t = (float)((bias[h] + mx) / (2 * mx));
                hm_sample sm = {HM_VALUE, t < 0 ? 0 : t > 1 ? 1 : t};
                hm_glyph g = hm_glyph_at(u->t.style, sm, sm, u->t.levels);
                term_heat(&u->t, w, g.fg, g.bg);
                for (int k = 0; k < 6; k++)
                    mvwaddstr(w, y, x++, g.text);
            }
            term_role(&u->t, w, R_NORMAL);
        }
        legend(u, w, y, 2, -mx, mx);
    }
    free(bias);
}

static void draw(tui *u)
{
    WINDOW *w = u->win[P_POS];
    int rows = getmaxy(w) - 2, cols = getmaxx(w) - 2;
    pos_src ps;
    if (!find(u, &ps)) {
        pane_frame(u, P_POS, "Positions", NULL);
        pane_message(u, P_POS, "This model adds no position signal to this stream.");
        wnoutrefresh(w);
        return;
    }
    static const char *kind[] = {"", "learned", "sinusoidal", "rotary", "relative buckets"};
    char title[160], piece[96] = "";
    if (ps.sel < ps.n_tok)
        stream_label(u, ps.stream, ps.sel, piece, sizeof piece);
    snprintf(title, sizeof title, "Positions: %s, pos %d %s", kind[ps.f.kind], ps.sel, piece);
    pane_frame(u, P_POS, title, NULL);
    if (rows < 4 || cols < 30) {
        pane_message(u, P_POS, "Too small: a larger terminal shows the positions.");
        wnoutrefresh(w);
        return;
    }
    switch (ps.f.kind) {
    case AS_POSK_LEARNED:
    case AS_POSK_SINUSOID:
        draw_table(u, w, rows, cols, &ps);
        break;
    case AS_POSK_ROTARY:
        draw_rotary(u, w, rows, cols, &ps);
        break;
    case AS_POSK_RELATIVE:
        draw_relative(u, w, rows, cols, &ps);
        break;
    default:
        break;
    }
    wnoutrefresh(w);
}

/* Where the program puts positions in: a position embedding, rotary q
 * and k, or a relative bias in some stream. */
static bool applies(const tui *u)
{
    pos_src ps;
    const as_program *p = as_view_program(u->s);
    for (int h = 0; h < as_view_n_hooks(u->s); h++) {
        const as_op *op = as_program_producer(p, h);
        if (op && as_view_pos_facts(u->s, op, &ps.f))
            return true;
    }
    return false;
}

const pane_class pane_positions = {
    .name = "Positions",
    .shows = SHOWS_LAYER | SHOWS_HEAD | SHOWS_QUERY | SHOWS_LOOK | SHOWS_DATA,
    .focusable = true,
    .applies = applies,
    .draw = draw,
};
