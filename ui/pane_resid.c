/* pane_resid: the residual stream and the norms' place (`view residual`).
 * For the selected token, the L2 norm of the residual stream at every
 * point a block passes it through (before the block, after each add, and
 * after a norm that sits on the stream itself), one row per layer with a
 * bar and the number, and above them the block's wiring drawn from the
 * program's op list: which norm feeds each branch (Pre-LN, GPT-2 and
 * Llama), which one sits on the stream after an add (Post-LN, the
 * original Transformer and BERT), which one closes a branch before its
 * add (Gemma's sandwich), each LayerNorm or RMSNorm, and the final norm.
 *
 * The wiring is read from the ops, not from the architecture's name: the
 * walk starts at a block's hook_resid_pre and follows the hook the stream
 * is in. An add that reads it moves the stream to its output (the other
 * term is the branch; a branch whose last op is a norm has a post-norm);
 * a norm that reads it either feeds a branch (the stream is read again
 * after it: a pre-norm) or replaces the stream (nothing reads the old
 * hook again: a norm on the stream, Post-LN). A branch is named by what
 * ran in it: an attention site over its own stream (attn) or another
 * (cross), routed experts (MoE), else an MLP. An encoder-decoder shows
 * its decoder, the stream the other panes show. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "textfmt.h"
#include "tui.h"

#define RS_POINTS 12

/* A point of the stream in one block: the hook it is in there. */
typedef struct rs_point {
    int hook;
    bool norm;          /* the output of a norm on the stream (Post-LN) */
    bool rms;           /* that norm is an RMSNorm */
    char label[24];     /* "pre", "+attn", "ln1" */
    /* an add's branch: its name, and the norms that open and close it (-1: none) */
    char branch[16];
    int branch_hook;    /* the add's other term: what the branch adds */
    int pre_norm, post_norm;
    bool pre_rms, post_rms;
} rs_point;

typedef enum rs_kind { RS_NONE, RS_PRE, RS_POST, RS_SANDWICH, RS_MIXED } rs_kind;

typedef struct rs_block {
    int n;
    rs_point pt[RS_POINTS];
    int end;            /* the hook the stream is in when the block ends */
} rs_block;

/* What the pane reads for one stream. */
typedef struct rs_src {
    const as_session *s;
    const as_program *p;
    const as_capture *cap;
    int stream, n_layer, pos;
    int *last_read;     /* per hook: the last op reading it, -1: none */
    int final_norm;     /* the final norm's output on the stream, -1: none */
    bool final_rms;
    int embed_norm;     /* a norm the stream passes before block 0, -1: none */
    bool embed_rms;
} rs_src;

/* The part of a hook's name that names it within its block:
 * "decoder.0.ln1.hook_normalized" is "ln1", "ln_final.hook_normalized"
 * "ln_final". */
static void scope_of(const as_session *s, int hook, char *out, size_t cap)
{
    const char *n = as_view_hook_name(s, hook), *h = strstr(n, ".hook_");
    size_t len = h ? (size_t)(h - n) : strlen(n), skip = 0;
    if (as_view_hook_layer(s, hook) >= 0) {
        /* the block's own prefix, "blocks.3." */
        const char *d1 = strchr(n, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
        skip = d2 ? (size_t)(d2 + 1 - n) : 0;
        if (skip > len)
            skip = len;
    }
    snprintf(out, cap, "%.*s", (int)(len - skip), n + skip);
}

static bool reads(const as_op *op, int hook)
{
    for (int j = 0; j < 3; j++)
        if (as_view_op_in(op, j) == hook)
            return true;
    return false;
}

/* The ops of one block of the stream, walked in order (see the top). */
static void walk(const rs_src *r, int layer, rs_block *b)
{
    const as_session *s = r->s;
    memset(b, 0, sizeof *b);
    int cur = as_program_hook_in(r->p, AS_HK_RESID_PRE, layer, r->stream);
    b->end = cur;
    if (cur < 0)
        return;
    b->pt[b->n++] = (rs_point){.hook = cur, .label = "pre", .branch_hook = -1, .pre_norm = -1, .post_norm = -1};
    int pending = -1;
    bool pending_rms = false, attn = false, cross = false, moe = false;
    int n_ops = as_view_n_ops(s);
    for (int i = 0; i < n_ops && b->n < RS_POINTS; i++) {
        const as_op *op = as_view_op(s, i);
        int out = as_view_op_out(op);
        if (as_view_op_layer(op) != layer || out < 0 || as_view_hook_stream(s, out) != r->stream)
            continue;
        switch (as_view_op_role(op)) {
        case AS_ROLE_SCORES: {
            const as_attn *a = as_program_attn(r->p, out);
            if (a && as_view_site_q_stream(a) != as_view_site_kv_stream(a))
                cross = true;
            else
                attn = true;
            break;
        }
        case AS_ROLE_OTHER:
            if (as_view_op_experts(op) > 0)
                moe = true;
            break;
        case AS_ROLE_NORM:
            if (as_view_op_in(op, 0) != cur)
                break;
            if (r->last_read[cur] > i) {
                pending = out;
                pending_rms = as_view_op_rms(op);
            } else {
                rs_point *pt = &b->pt[b->n++];
                *pt = (rs_point){.hook = out, .norm = true, .rms = as_view_op_rms(op), .branch_hook = -1, .pre_norm = -1,
                                 .post_norm = -1};
                scope_of(s, out, pt->label, sizeof pt->label);
                cur = out;
                pending = -1;
                attn = cross = moe = false;
            }
            break;
        case AS_ROLE_ADD: {
            if (!reads(op, cur))
                break;
            int branch = -1;
            for (int j = 0; j < 3 && branch < 0; j++)
                if (as_view_op_in(op, j) >= 0 && as_view_op_in(op, j) != cur)
                    branch = as_view_op_in(op, j);
            rs_point *pt = &b->pt[b->n++];
            *pt = (rs_point){.hook = out, .branch_hook = branch, .pre_norm = pending, .pre_rms = pending_rms,
                             .post_norm = -1};
            /* the branch's last op, through copies (Gemma's post-norm is copied to hook_attn_out) */
            const as_op *last = branch >= 0 ? as_program_producer(r->p, branch) : NULL;
            for (int hops = 0; last && as_view_op_role(last) == AS_ROLE_COPY && hops < 8; hops++)
                last = as_view_op_in(last, 0) >= 0 ? as_program_producer(r->p, as_view_op_in(last, 0)) : NULL;
            if (last && as_view_op_role(last) == AS_ROLE_NORM) {
                pt->post_norm = branch;
                pt->post_rms = as_view_op_rms(last);
            }
            const char *name = cross ? "cross" : attn ? "attn" : moe ? "MoE" : "MLP";
            snprintf(pt->branch, sizeof pt->branch, "%s", name);
            snprintf(pt->label, sizeof pt->label, "+%s", name);
            cur = out;
            pending = -1;
            attn = cross = moe = false;
            break;
        }
        case AS_ROLE_COPY:
            /* the stream copied to another hook is the same point */
            if (as_view_op_in(op, 0) == cur && b->n > 1)
                cur = out;
            break;
        default:
            break;
        }
    }
    b->end = cur;
}

static rs_kind kind_of(const rs_block *b, bool *rms_any, bool *ln_any)
{
    bool stream_norm = false, pre = false, post = false, bare = false;
    for (int i = 1; i < b->n; i++) {
        const rs_point *pt = &b->pt[i];
        if (pt->norm) {
            stream_norm = true;
            *rms_any |= pt->rms, *ln_any |= !pt->rms;
            continue;
        }
        if (pt->pre_norm >= 0)
            pre = true, *rms_any |= pt->pre_rms, *ln_any |= !pt->pre_rms;
        if (pt->post_norm >= 0)
            post = true, *rms_any |= pt->post_rms, *ln_any |= !pt->post_rms;
        if (pt->pre_norm < 0 && pt->post_norm < 0)
            bare = true;
    }
    if (stream_norm)
        return pre || post ? RS_MIXED : RS_POST;
    if (pre && post && !bare)
        return RS_SANDWICH;
    if (pre && !post && !bare)
        return RS_PRE;
    return pre || post ? RS_MIXED : RS_NONE;
}

static const char *kind_name(rs_kind k)
{
    switch (k) {
    case RS_PRE: return "Pre-LN";
    case RS_POST: return "Post-LN";
    case RS_SANDWICH: return "sandwich norms";
    case RS_MIXED: return "mixed norms";
    default: return "no norms";
    }
}

/* The stream's ends: a norm before block 0 (BERT's embedding LayerNorm)
 * and the final norm after the last block (one that reads where the
 * stream ends; an encoder whose stream ends in a block's norm has none). */
static void ends(rs_src *r, const rs_block *last)
{
    r->final_norm = r->embed_norm = -1;
    const as_session *s = r->s;
    int n_ops = as_view_n_ops(s);
    for (int i = 0; last && last->end >= 0 && i < n_ops; i++) {
        const as_op *op = as_view_op(s, i);
        if (as_view_op_layer(op) < 0 && as_view_op_role(op) == AS_ROLE_NORM && as_view_op_in(op, 0) == last->end) {
            r->final_norm = as_view_op_out(op);
            r->final_rms = as_view_op_rms(op);
            break;
        }
    }
    int pre = as_program_hook_in(r->p, AS_HK_RESID_PRE, 0, r->stream);
    const as_op *op = pre >= 0 ? as_program_producer(r->p, pre) : NULL;
    if (op && as_view_op_role(op) == AS_ROLE_COPY && as_view_op_in(op, 0) >= 0)
        op = as_program_producer(r->p, as_view_op_in(op, 0));
    if (op && as_view_op_role(op) == AS_ROLE_NORM) {
        r->embed_norm = as_view_op_out(op);
        r->embed_rms = as_view_op_rms(op);
    }
}

/* Reads the stream's facts; false when out of memory. */
static bool src_open(rs_src *r, const tui *u, int stream)
{
    memset(r, 0, sizeof *r);
    r->s = u->s;
    r->p = as_view_program(u->s);
    r->cap = as_view_capture(u->s);
    r->stream = stream;
    r->pos = u->v.query;
    int nh = as_view_n_hooks(u->s), n_ops = as_view_n_ops(u->s);
    r->last_read = malloc((size_t)(nh > 0 ? nh : 1) * sizeof *r->last_read);
    if (!r->last_read)
        return false;
    for (int h = 0; h < nh; h++)
        r->last_read[h] = -1;
    for (int i = 0; i < n_ops; i++) {
        const as_op *op = as_view_op(u->s, i);
        for (int j = 0; j < 3; j++) {
            int h = as_view_op_in(op, j);
            if (h >= 0 && h < nh)
                r->last_read[h] = i;
        }
    }
    while (as_program_hook_in(r->p, AS_HK_RESID_PRE, r->n_layer, stream) >= 0)
        r->n_layer++;
    return true;
}

/* ‖hook[pos]‖₂; NAN where it is not computed yet, -1 where it is not
 * captured (the budget dropped it). */
static double norm_at(const rs_src *r, int hook, int pos)
{
    if (hook < 0 || !as_capture_has(r->cap, hook))
        return -1;
    if (pos < 0 || as_view_filled(r->s, hook) <= pos)
        return NAN;
    const float *x = as_capture_row(r->cap, hook, pos);
    int n = as_view_hook_width(r->s, hook);
    double acc = 0;
    for (int i = 0; i < n; i++)
        acc += (double)x[i] * x[i];
    return sqrt(acc);
}

/* Four significant digits, fixed point (what the test reads back). */
static void fmt_norm(double v, char *out, size_t cap)
{
    if (isnan(v))
        snprintf(out, cap, "-");
    else if (v < 0)
        snprintf(out, cap, "n/c");
    else if (v < 10)
        snprintf(out, cap, "%.3f", v);
    else if (v < 100)
        snprintf(out, cap, "%.2f", v);
    else if (v < 1000)
        snprintf(out, cap, "%.1f", v);
    else if (v < 100000)
        snprintf(out, cap, "%.0f", v);
    else
        snprintf(out, cap, "%.2e", v);
}

/* ---- the wiring, drawn ---- */

#define SW 512 /* cells a schematic tf_line holds */

typedef struct cell {
    const char *g; /* a glyph (static) or NULL: the char c */
    char c;
    int role;
} cell;

typedef struct schematic {
    cell line[3][SW]; /* labels, the stream, the branches */
    int width;
} schematic;

static void put_c(schematic *sc, int row, int col, char c, int look)
{
    if (col >= 0 && col < SW)
        sc->line[row][col] = (cell){NULL, c, look};
}

static void put_g(schematic *sc, int row, int col, const char *g, int look)
{
    if (col >= 0 && col < SW)
        sc->line[row][col] = (cell){g, 0, look};
}

static void put_s(schematic *sc, int row, int col, const char *s, int look)
{
    for (int i = 0; s[i]; i++)
        put_c(sc, row, col + i, s[i], look);
}

static const char *norm_word(bool rms, int level)
{
    return level == 0 ? (rms ? "RMSNorm" : "LayerNorm") : (rms ? "RMS" : "LN");
}

/* Lays out block b's wiring at a level of detail (0: full names, 1:
 * short); returns the width it takes. */
static int lay_out(const tui *u, const rs_block *b, int level, schematic *sc)
{
    bool utf8 = u->t.utf8;
    const char *H = utf8 ? "─" : "-", *fork = utf8 ? "┬" : "+", *bl = utf8 ? "└" : "`", *br = utf8 ? "┘" : "'";
    memset(sc, 0, sizeof *sc);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < SW; c++)
            sc->line[r][c] = (cell){NULL, ' ', R_NORMAL};
    int col = 0, label_end = 0;
    put_s(sc, 0, 0, b->pt[0].label, R_LABEL);
    label_end = (int)strlen(b->pt[0].label) + 1;
    for (int i = 1; i < b->n; i++) {
        const rs_point *pt = &b->pt[i];
        char text[64];
        int need;
        if (pt->norm) {
            snprintf(text, sizeof text, "%s", norm_word(pt->rms, level));
            need = 1 + (int)strlen(text) + 1;
        } else {
            snprintf(text, sizeof text, "%s%s%s%s%s", pt->pre_norm >= 0 ? norm_word(pt->pre_rms, level) : "",
                     pt->pre_norm >= 0 ? "-" : "", pt->branch, pt->post_norm >= 0 ? "-" : "",
                     pt->post_norm >= 0 ? norm_word(pt->post_rms, level) : "");
            need = 2 + (int)strlen(text) + 4;
        }
        /* the point's label must clear the one before */
        while (col + need < label_end)
            put_g(sc, 1, col++, H, R_DIM);
        if (pt->norm) {
            put_g(sc, 1, col++, H, R_DIM);
            put_s(sc, 1, col, text, R_BAR_MARK);
            col += (int)strlen(text);
            put_g(sc, 1, col++, H, R_DIM);
        } else {
            int tw = (int)strlen(text);
            put_g(sc, 1, col, H, R_DIM);
            put_g(sc, 1, col + 1, fork, R_DIM);
            for (int k = col + 2; k <= col + 2 + tw; k++)
                put_g(sc, 1, k, H, R_DIM);
            put_s(sc, 1, col + 3 + tw, "(+)", R_LABEL);
            put_g(sc, 2, col + 1, bl, R_DIM);
            put_g(sc, 2, col + 2, H, R_DIM);
            /* the branch's text, its norms in the norm's colour, '-' drawn as a tf_line */
            for (int k = 0; k < tw; k++) {
                bool in_norm = (pt->pre_norm >= 0 && k < (int)strlen(norm_word(pt->pre_rms, level))) ||
                               (pt->post_norm >= 0 && k >= tw - (int)strlen(norm_word(pt->post_rms, level)));
                if (text[k] == '-')
                    put_g(sc, 2, col + 3 + k, H, R_DIM);
                else
                    put_c(sc, 2, col + 3 + k, text[k], in_norm ? R_BAR_MARK : R_NORMAL);
            }
            put_g(sc, 2, col + 3 + tw, H, R_DIM);
            put_g(sc, 2, col + 4 + tw, br, R_DIM);
            col += 6 + tw;
        }
        put_s(sc, 0, col, pt->label, pt->norm ? R_BAR_MARK : R_LABEL);
        label_end = col + (int)strlen(pt->label) + 1;
    }
    put_g(sc, 1, col++, H, R_DIM);
    put_g(sc, 1, col++, tf_glyph(G_ARROW, utf8), R_DIM);
    sc->width = col > label_end - 1 ? col : label_end - 1;
    return sc->width;
}

static void draw_cells(tui *u, WINDOW *w, int y, const cell *cells, int n, int x0)
{
    for (int c = 0; c < n && c < SW; c++) {
        term_role(&u->t, w, cells[c].role);
        if (cells[c].g) {
            mvwaddstr(w, y, x0 + c, cells[c].g);
        } else {
            char one[2] = {cells[c].c, 0};
            mvwaddstr(w, y, x0 + c, one);
        }
    }
    term_role(&u->t, w, R_NORMAL);
}

/* ---- the pane ---- */

static void text_at(tui *u, WINDOW *w, int y, const char *s, int cols, int look, int attr)
{
    if (y > getmaxy(w) - 2)
        return; /* below the pane (a pane too short for its fixed rows) */
    put_text_in(u, w, y, 2, s, cols - 1, look, attr);
}

/* text wrapped to the pane, when it fits in `room` rows: the rows used
 * (0: it does not fit, nothing drawn) */
static int wrapped(tui *u, WINDOW *w, int y, const char *text, int cols, int room, int look)
{
    bool utf8 = u->t.utf8;
    int starts[8], n = tf_wrap(text, cols - 1 > 8 ? cols - 1 : 8, utf8, starts, 8);
    if (n > room || n > 8)
        return 0;
    for (int i = 0; i < n; i++) {
        int end = i + 1 < n ? starts[i + 1] : (int)strlen(text);
        while (end > starts[i] && text[end - 1] == ' ')
            end--;
        char seg[512];
        snprintf(seg, sizeof seg, "%.*s", end - starts[i], text + starts[i]);
        text_at(u, w, y + i, seg, cols, look, A_NORMAL);
    }
    return n;
}

/* What the wiring means, in a sentence the numbers below it can be read
 * against (structural: true of the ops, whatever the values). */
static const char *meaning(rs_kind k)
{
    switch (k) {
    case RS_PRE:
        return "Pre-LN: each branch reads a normalised copy; the stream itself is only added to, "
               "never normalised until the final norm.";
    case RS_POST:
        return "Post-LN: the norm sits on the stream after each add, so the stream is renormalised "
               "after every sublayer.";
    case RS_SANDWICH:
        return "Sandwich: each branch is normalised on the way in and on the way out; the stream "
               "itself is only added to.";
    case RS_MIXED:
        return "Mixed: some norms feed branches, others sit on the stream.";
    default:
        return "No norm on the stream or its branches.";
    }
}

static void draw(tui *u)
{
    WINDOW *w = u->win[P_RESID];
    const as_session *s = u->s;
    int rows = getmaxy(w) - 2, cols = getmaxx(w) - 2;
    bool utf8 = u->t.utf8;
    int stream = as_view_out_stream(s), src = as_view_source_stream(s);
    rs_src r;
    if (!src_open(&r, u, stream)) {
        pane_frame(u, P_RESID, "Residual stream", NULL);
        pane_message(u, P_RESID, "Out of memory.");
        wnoutrefresh(w);
        return;
    }
    if (r.n_layer == 0) {
        free(r.last_read);
        pane_frame(u, P_RESID, "Residual stream", NULL);
        pane_message(u, P_RESID, "This program has no residual stream (no hook_resid_pre).");
        wnoutrefresh(w);
        return;
    }
    int sel = u->v.layer < 0 ? 0 : u->v.layer >= r.n_layer ? r.n_layer - 1 : u->v.layer;
    rs_block *blk = calloc((size_t)r.n_layer, sizeof *blk);
    schematic *sc = malloc(sizeof *sc);
    if (!blk || !sc) {
        free(blk), free(sc), free(r.last_read);
        pane_frame(u, P_RESID, "Residual stream", NULL);
        pane_message(u, P_RESID, "Out of memory.");
        wnoutrefresh(w);
        return;
    }
    for (int l = 0; l < r.n_layer; l++)
        walk(&r, l, &blk[l]);
    ends(&r, &blk[r.n_layer - 1]);
    const rs_block *b = &blk[sel];
    bool rms = false, ln = false;
    rs_kind kind = kind_of(b, &rms, &ln);
    int n_tok = as_view_n_tokens(s);
    bool have_tok = n_tok > 0 && r.pos >= 0 && r.pos < n_tok;

    /* title and note: the title shortened until both fit the border */
    char title[200], note[96], piece[96];
    snprintf(note, sizeof note, "%s %s %s", kind_name(kind), tf_glyph(G_SEP, utf8),
             rms && ln ? "LayerNorm+RMSNorm" : rms ? "RMSNorm" : ln ? "LayerNorm" : "no norm");
    if (have_tok)
        stream_label(u, stream, r.pos, piece, sizeof piece);
    for (int form = 0; form < 3; form++) {
        const char *name = form < 2 ? "Residual stream" : "Residual";
        const char *dec = src < 0 ? "" : form < 1 ? " (decoder)" : " (dec.)";
        if (have_tok)
            snprintf(title, sizeof title, "%s%s %s%s, token %d %s", name, dec, utf8 ? "‖x‖" : "|x|",
                     form == 0 ? " by depth" : "", r.pos, piece);
        else
            snprintf(title, sizeof title, "%s%s", name, dec);
        if (tf_width(title, utf8) + tf_width(note, utf8) + 9 < cols + 2)
            break;
    }
    pane_frame(u, P_RESID, title, note);

    /* the schematic at the widest detail that fits */
    int sw = 0;
    for (int level = 0; level < 2; level++)
        if ((sw = lay_out(u, b, level, sc)) <= cols - 1)
            break;
    bool schem = sw <= cols - 1;

    double vmax = 0;
    double (*val)[RS_POINTS] = calloc((size_t)r.n_layer, sizeof *val);
    bool any_nc = false, any_done = false;
    for (int l = 0; val && l < r.n_layer; l++)
        for (int i = 0; i < blk[l].n; i++) {
            double v = have_tok ? norm_at(&r, blk[l].pt[i].hook, r.pos) : NAN;
            val[l][i] = v;
            any_nc |= v < 0;
            any_done |= v >= 0;
            if (v > vmax)
                vmax = v;
        }
    double fin_in = NAN, fin_out = NAN;
    if (r.final_norm >= 0 && have_tok) {
        fin_in = norm_at(&r, blk[r.n_layer - 1].end, r.pos);
        fin_out = norm_at(&r, r.final_norm, r.pos);
    }
    /* rows: schematic (stream, branches; labels), header, layers, ends,
     * the note on cells not captured, then the extras */
    int fixed = (schem ? 2 : 1) + 1 + 1 + (any_nc ? 1 : 0);
    int layer_rows = rows - fixed;
    bool labels = schem && layer_rows - 1 >= r.n_layer;
    if (labels)
        layer_rows--;
    if (layer_rows > r.n_layer)
        layer_rows = r.n_layer;
    if (layer_rows < 1)
        layer_rows = 1;
    int spare = rows - fixed - (labels ? 1 : 0) - layer_rows;

    int y = 1;
    if (schem) {
        int x0 = 2;
        if (labels)
            draw_cells(u, w, y++, sc->line[0], sw, x0);
        draw_cells(u, w, y++, sc->line[1], sw, x0);
        draw_cells(u, w, y++, sc->line[2], sw, x0);
    } else {
        tf_line l = {0};
        for (int i = 0; i < b->n; i++)
            tf_add(&l, "%s%s", i ? tf_glyph(G_ARROW, utf8) : "", b->pt[i].label);
        text_at(u, w, y++, l.buf, cols, R_NORMAL, A_NORMAL);
    }

    /* the table: a column per point of the selected block; a cell is
     * [x, x + cw - 1): the number right-aligned in numw columns, then its bar */
    int np = b->n;
    int lw = 6, cw = (cols - 1 - lw) / (np > 0 ? np : 1);
    if (cw < 7)
        cw = 7;
    int numw = 6, bw = cw - 1 - numw - 1;
    if (bw < 0)
        bw = 0;
    /* the columns that fit (a narrow pane shows the first ones) */
    int shown = (cols - 1 - lw) / cw;
    shown = shown > np ? np : shown < 0 ? 0 : shown;
    term_role_attr(&u->t, w, R_LABEL, A_BOLD);
    put_text(u, w, y, 2, "layer", lw - 1);
    for (int i = 0; i < shown; i++) {
        char lab[32];
        int x = 2 + lw + i * cw, lwid = tf_fit(b->pt[i].label, cw - 1, utf8, lab, sizeof lab);
        term_role_attr(&u->t, w, b->pt[i].norm ? R_BAR_MARK : R_LABEL, A_BOLD);
        put_text(u, w, y, lwid <= numw ? x + numw - lwid : x, lab, lwid);
    }
    term_role(&u->t, w, R_NORMAL);
    y++;
    int first = sel - layer_rows / 2;
    first = first + layer_rows > r.n_layer ? r.n_layer - layer_rows : first;
    first = first < 0 ? 0 : first;
    for (int k = 0; k < layer_rows && y <= rows; k++) {
        int l = first + k;
        bool is_sel = l == sel;
        char lab[16];
        snprintf(lab, sizeof lab, "%sL%-3d", is_sel ? ">" : " ", l);
        term_role_attr(&u->t, w, is_sel ? R_LABEL_SEL : R_LABEL, is_sel ? A_BOLD | A_REVERSE : A_NORMAL);
        put_text(u, w, y, 2, lab, lw - 1);
        term_role(&u->t, w, R_NORMAL);
        for (int i = 0; i < blk[l].n && i < shown; i++) {
            double v = val ? val[l][i] : NAN;
            int x = 2 + lw + i * cw;
            char num[24], bar[256];
            fmt_norm(v, num, sizeof num);
            term_role_attr(&u->t, w, v >= 0 ? R_NORMAL : R_DIM, is_sel ? A_BOLD : A_NORMAL);
            put_text(u, w, y, x + numw - (int)strlen(num), num, (int)strlen(num));
            if (bw > 0 && v > 0 && vmax > 0) {
                tf_bar(v / vmax, bw, utf8, bar, sizeof bar);
                term_role(&u->t, w, blk[l].pt[i].norm ? R_BAR_MARK : R_BAR);
                put_text(u, w, y, x + numw + 1, bar, bw);
            }
            term_role(&u->t, w, R_NORMAL);
        }
        y++;
    }
    /* the ends: the final norm (its input and output), or none */
    {
        tf_line l = {0};
        char a[24], c[24], nm[48];
        if (r.final_norm >= 0) {
            scope_of(s, r.final_norm, nm, sizeof nm);
            fmt_norm(fin_in, a, sizeof a);
            fmt_norm(fin_out, c, sizeof c);
            tf_add(&l, "final %s (%s): %s %s %s", r.final_rms ? "RMSNorm" : "LayerNorm", nm, a, tf_glyph(G_ARROW, utf8),
                c);
        } else {
            tf_add(&l, "no final norm after L%d", r.n_layer - 1);
        }
        if (r.embed_norm >= 0) {
            scope_of(s, r.embed_norm, nm, sizeof nm);
            tf_line e = {0};
            tf_add(&e, " %s embedding %s (%s) before L0", tf_glyph(G_SEP, utf8), r.embed_rms ? "RMSNorm" : "LayerNorm",
                nm);
            if (tf_width(l.buf, utf8) + tf_width(e.buf, utf8) <= cols - 1)
                tf_add(&l, "%s", e.buf);
        }
        text_at(u, w, y++, l.buf, cols, R_NORMAL, A_NORMAL);
    }
    if (any_nc)
        text_at(u, w, y++, "n/c: not captured under the memory budget (--capture-mb keeps it).", cols, R_WARN,
                A_NORMAL);
    /* extras, as rows allow: the encoder's wiring, what the wiring
     * means, the hooks read, what is missing */
    if (spare > 0 && src >= 0) {
        rs_src e;
        if (src_open(&e, u, src) && e.n_layer > 0) {
            rs_block eb;
            walk(&e, 0, &eb);
            bool er = false, el = false;
            rs_kind ek = kind_of(&eb, &er, &el);
            tf_line l = {0};
            tf_add(&l, "Decoder shown, as in the other panes; encoder: %s, %s", kind_name(ek), er && el ? "LayerNorm+RMSNorm" : er ? "RMSNorm" : el ? "LayerNorm" : "no norm");
            text_at(u, w, y++, l.buf, cols, R_DIM, A_NORMAL);
            spare--;
        }
        free(e.last_read);
    }
    if (spare > 0 && have_tok && !any_done) {
        text_at(u, w, y++, as_view_in_pass(s) ? "Not computed yet at this token:  f  finishes the pass."
                                              : "Nothing computed yet:  f  runs the pass.",
                cols, R_HINT, A_NORMAL);
        spare--;
    } else if (spare > 0 && !have_tok) {
        text_at(u, w, y++, "No context yet: a prompt, then  f .", cols, R_HINT, A_NORMAL);
        spare--;
    }

    int used = spare > 0 ? wrapped(u, w, y, meaning(kind), cols, spare, R_DIM) : 0;
    y += used, spare -= used;
    /* what each branch of the selected block adds: the norm of its term */
    if (spare > 0 && have_tok && any_done) {
        tf_line l = {0};
        tf_add(&l, "L%d adds:", sel);
        for (int i = 1; i < np; i++) {
            const rs_point *pt = &b->pt[i];
            if (pt->norm || pt->branch_hook < 0)
                continue;
            char v[24], nm[64];
            const char *h = strstr(as_view_hook_name(s, pt->branch_hook), ".hook_");
            scope_of(s, pt->branch_hook, nm, sizeof nm);
            fmt_norm(norm_at(&r, pt->branch_hook, r.pos), v, sizeof v);
            tf_add(&l, " %s %s %s (%s%s%s)", pt->branch, utf8 ? "‖·‖" : "|.|", v, nm, *nm && h ? "." : "",
                h ? h + 1 : "");
        }
        used = wrapped(u, w, y, l.buf, cols, spare, R_NORMAL);
        y += used, spare -= used;
    }
    /* the block's output at every token, on one scale: a character a
     * token (a window around the selected one where they do not fit),
     * the selected one in reverse, and the least and the largest */
    if (have_tok && any_done && spare >= r.n_layer + 1) {
        int lastc = np - 1, avail = cols - 1 - lw - 17;
        int nshow = n_tok < avail ? n_tok : avail;
        double *tv = nshow > 0 ? malloc((size_t)r.n_layer * (size_t)n_tok * sizeof *tv) : NULL;
        if (tv) {
            double top = 0;
            for (int l = 0; l < r.n_layer; l++)
                for (int t = 0; t < n_tok; t++) {
                    int h = blk[l].n > lastc ? blk[l].pt[lastc].hook : -1;
                    tv[(size_t)l * n_tok + t] = norm_at(&r, h, t);
                    top = tv[(size_t)l * n_tok + t] > top ? tv[(size_t)l * n_tok + t] : top;
                }
            int t0 = r.pos - nshow / 2;
            t0 = t0 + nshow > n_tok ? n_tok - nshow : t0;
            t0 = t0 < 0 ? 0 : t0;
            tf_line l = {0};
            tf_add(&l, "block output (%s), tokens %d-%d:", b->pt[lastc].label, t0, t0 + nshow - 1);
            /* the numbers' columns right of the strip and of this title */
            int xn = 2 + lw + nshow + 1, tw = 2 + tf_width(l.buf, utf8) + 1;
            xn = xn < tw ? tw : xn;
            char hdr[64];
            snprintf(hdr, sizeof hdr, "%7s %7s", "min", "max");
            text_at(u, w, y, l.buf, cols, R_LABEL, A_BOLD);
            term_role_attr(&u->t, w, R_LABEL, A_BOLD);
            put_text(u, w, y, xn, hdr, cols + 1 - xn);
            term_role(&u->t, w, R_NORMAL);
            y++, spare--;
            static const char *const blocks[8] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
            static const char ascii[8] = {'_', '.', '-', '=', '+', '*', '#', '@'};
            for (int k = 0; k < r.n_layer; k++) {
                const double *v = tv + (size_t)k * n_tok;
                char lab[16];
                snprintf(lab, sizeof lab, "%sL%-3d", k == sel ? ">" : " ", k);
                term_role_attr(&u->t, w, k == sel ? R_LABEL_SEL : R_LABEL, A_NORMAL);
                put_text(u, w, y, 2, lab, lw - 1);
                double lo = INFINITY, hi = -INFINITY;
                for (int t = 0; t < n_tok; t++)
                    if (v[t] >= 0)
                        lo = v[t] < lo ? v[t] : lo, hi = v[t] > hi ? v[t] : hi;
                for (int t = t0; t < t0 + nshow; t++) {
                    int q = v[t] >= 0 && top > 0 ? (int)(v[t] / top * 8) : -1;
                    q = q > 7 ? 7 : q;
                    char one[2] = {q < 0 ? ' ' : ascii[q], 0};
                    term_role_attr(&u->t, w, R_BAR, t == r.pos ? A_REVERSE : A_NORMAL);
                    mvwaddstr(w, y, 2 + lw + t - t0, q < 0 ? "?" : utf8 ? blocks[q] : one);
                }
                char a[24], c[24], nums[64];
                fmt_norm(isinf(lo) ? NAN : lo, a, sizeof a);
                fmt_norm(isinf(hi) ? NAN : hi, c, sizeof c);
                snprintf(nums, sizeof nums, "%7s %7s", a, c);
                term_role(&u->t, w, R_NORMAL);
                put_text(u, w, y, xn, nums, cols + 1 - xn);
                y++, spare--;
            }
            free(tv);
        }
    }
    /* the hooks the columns read */
    if (spare > 0) {
        tf_line l = {0};
        char nm[64], blkname[64];
        const char *n0 = as_view_hook_name(s, b->pt[0].hook), *d1 = strchr(n0, '.');
        snprintf(blkname, sizeof blkname, "%.*s", d1 ? (int)(d1 - n0) : 0, n0);
        tf_add(&l, "%s = L2 norm over %d dims of %s.L's", utf8 ? "‖x‖" : "|x|", as_view_hook_width(s, b->pt[0].hook),
            blkname);
        for (int i = 0; i < np; i++) {
            const char *h = strstr(as_view_hook_name(s, b->pt[i].hook), ".hook_");
            scope_of(s, b->pt[i].hook, nm, sizeof nm);
            tf_add(&l, "%s %s%s%s", i ? "," : "", nm, *nm && h ? "." : "", h ? h + 1 : "");
        }
        used = wrapped(u, w, y, l.buf, cols, spare, R_DIM);
        y += used, spare -= used;
    }
    free(val);
    free(blk);
    free(sc);
    free(r.last_read);
    wnoutrefresh(w);
}

/* Where there is a residual stream to draw: a block's hook_resid_pre on
 * the stream the panes show. */
static bool applies(const tui *u)
{
    const as_session *s = u->s;
    return as_program_hook_in(as_view_program(s), AS_HK_RESID_PRE, 0, as_view_out_stream(s)) >= 0;
}

const pane_class pane_resid = {
    .name = "Residual stream",
    .shows = SHOWS_LAYER | SHOWS_QUERY | SHOWS_DATA,
    .focusable = true,
    .applies = applies,
    .draw = draw,
};
