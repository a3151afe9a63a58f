/* pane_mla: multi-head latent attention (`view mla`, key M), for the
 * selected layer, head and token: the widths (the stream, the latent and
 * the rotary key every head shares, the heads' keys and values), the KV
 * cache a position as MLA holds it against a plain multi-head, a
 * grouped-query and a multi-query cache of the same heads (bars, from
 * the program's hooks' widths: as_view_site_cache, which `info` prints
 * too), the selected token's latent as a strip with its smallest and
 * largest values and its first values, and how the selected head's key
 * and value are rebuilt from it (the up-projections W_UK, W_UV; in the
 * absorbed layout W_UK taken into q and W_UV applied after the mix).
 * Every value is read from the captured hooks; a hook not captured is
 * said so. Only a program with latent attention (deepseek2) has it. */
#include <math.h>
#include <string.h>

#include "textfmt.h"
#include "tui.h"

/* The site of a layer's self-attention, or NULL. */
static const as_attn *site_of(const tui *u, int layer)
{
    const as_program *p = as_view_program(u->s);
    int pat = as_program_pattern(p, layer, AS_PICK_SELF);
    return pat >= 0 ? as_program_attn(p, pat) : NULL;
}

static const float *row_of(const tui *u, int hook, int pos)
{
    const as_capture *cap = as_view_capture(u->s);
    if (hook < 0 || !as_capture_has(cap, hook) || as_view_filled(u->s, hook) <= pos)
        return NULL;
    return as_capture_row(cap, hook, pos);
}

static const char *short_name(const tui *u, int hook)
{
    const char *n = as_view_hook_name(u->s, hook), *a = strstr(n, "attn.");
    return a ? a + 5 : n;
}

/* "0.123 -0.456 … (32 dims)": as many leading values as fit in width. */
static void add_vec(tf_line *l, const float *v, int n, int width, bool utf8)
{
    char tail[48];
    snprintf(tail, sizeof tail, " %s (%d dims)", tf_glyph(G_ELLIPSIS, utf8), n);
    int tw = tf_width(tail, utf8), used = 0;
    for (int i = 0; i < n; i++) {
        char one[32];
        int w = snprintf(one, sizeof one, "%s%.3f", i ? " " : "", (double)v[i]);
        if (used + w + (i + 1 < n ? tw : 0) > width)
            break;
        tf_add(l, "%s", one);
        used += w;
        if (i + 1 == n)
            return;
    }
    tf_add(l, "%s", tail + (used ? 0 : 1));
}

/* Lines with a priority: the fewest rows keep the first ones. */
enum { MAX_LINES = 40 };
typedef struct sheet {
    tf_line l[MAX_LINES];
    int prio[MAX_LINES], look[MAX_LINES], attr[MAX_LINES];
    int n;
} sheet;

static tf_line *put(sheet *s, int prio, int look, int attr)
{
    if (s->n == MAX_LINES)
        s->n--;
    tf_line *l = &s->l[s->n];
    *l = (tf_line){0};
    s->prio[s->n] = prio, s->look[s->n] = look, s->attr[s->n] = attr;
    s->n++;
    return l;
}

/* One bar of the cache: NAME, what, values, bytes in float32, a bar
 * scaled to the largest, and the ratio to MLA's. */
static void cache_bar(tf_line *l, const char *name, const char *what, int values, int mla, int largest, int cols,
                      bool utf8)
{
    char bar[256];
    if (cols >= 56)
        tf_add(l, "%-4s%-15s%5d%6d B ", name, what, values, values * 4);
    else
        tf_add(l, "%-4s%5d%6d B ", name, values, values * 4);
    int bw = cols - 2 - (int)strlen(l->buf) - 7;
    bw = bw < 4 ? 4 : bw > 60 ? 60 : bw;
    tf_bar(largest ? (double)values / largest : 0, bw, utf8, bar, sizeof bar);
    tf_add(l, "%s", bar);
    int pad = bw - tf_width(bar, utf8);
    tf_add(l, "%*s %5.1fx", pad > 0 ? pad : 0, "", mla ? (double)values / mla : 0.0);
}

static void build(tui *u, const as_site_cache *c, int pos, int head, int cols, sheet *sh)
{
    bool utf8 = u->t.utf8;
    const char *to = tf_glyph(G_ARROW, utf8), *x = tf_glyph(G_TIMES, utf8);
    int nope = c->d_k - c->rope, mla = c->latent + c->rope, dkv = c->d_k + c->d_v;
    tf_line *l = put(sh, 1, R_LABEL, A_BOLD);
    tf_add(l, "x %d %s latent c %d + rope key %d %s %d heads %s (k %d+%d, v %d)", as_view_d_model(u->s), to,
        c->latent, c->rope, to, c->n_head, x, nope, c->rope, c->d_v);
    l = put(sh, 5, R_DIM, A_NORMAL);
    tf_add(l, "W_DKV packs x into c; W_UK, W_UV rebuild each head's k, v from c");
    l = put(sh, 4, R_DIM, A_NORMAL);
    tf_add(l, "%-19s%5s%8s  (float32)", "cache a token/layer", "vals", "bytes");
    int gap = cols - 2 - tf_width(l->buf, utf8) - 5;
    tf_add(l, "%*s%s MLA", gap > 0 ? gap : 1, "", utf8 ? "×" : "x");
    int gqa = c->gqa_kv * dkv;
    char what[48];
    snprintf(what, sizeof what, "latent+rope");
    cache_bar(put(sh, 1, R_BAR, A_BOLD), "MLA", what, mla, mla, c->plain, cols, utf8);
    if (c->gqa_kv) {
        snprintf(what, sizeof what, "%d kv heads", c->gqa_kv);
        cache_bar(put(sh, 3, R_NORMAL, A_NORMAL), "GQA", what, gqa, mla, c->plain, cols, utf8);
    }
    cache_bar(put(sh, 6, R_NORMAL, A_NORMAL), "MQA", "1 kv head", dkv, mla, c->plain, cols, utf8);
    snprintf(what, sizeof what, "%d heads", c->n_head);
    cache_bar(put(sh, 1, R_NORMAL, A_NORMAL), "MHA", what, c->plain, mla, c->plain, cols, utf8);
    l = put(sh, 7, R_DIM, A_NORMAL);
    if (c->plain <= mla)
        tf_add(l, "no saving: c and the rope key are as wide as all heads' k and v");
    else if (mla <= dkv)
        tf_add(l, "as small as MQA's one kv head, yet every head has its own k and v");
    else
        tf_add(l, "%.1fx smaller than MHA: the heads share c, each rebuilding k, v", (double)c->plain / mla);
    l = put(sh, 8, R_DIM, A_NORMAL);
    if (c->absorbed)
        tf_add(l, "attnscope keeps %d a layer: k = [c, rope key], v = c (absorbed)", c->held);
    else
        tf_add(l, "attnscope keeps %d a layer: legacy attn_kv_b caches k, v expanded", c->held);

    /* the latent of the selected token */
    const float *cv = row_of(u, c->latent_hook, pos);
    l = put(sh, 1, R_LABEL_SEL, A_BOLD);
    if (as_view_filled(u->s, c->latent_hook) <= pos) {
        tf_add(l, "token %d's latent: not computed yet (f finishes the pass)", pos);
        return;
    }
    if (!cv) {
        tf_add(l, "c (%s[%d]): not captured here (--capture-mb keeps it)", short_name(u, c->latent_hook), pos);
    } else {
        int lo = 0, hi = 0;
        for (int i = 1; i < c->latent; i++) {
            lo = cv[i] < cv[lo] ? i : lo;
            hi = cv[i] > cv[hi] ? i : hi;
        }
        tf_add(l, "c (%s[%d]): min %.3f @%d, max %.3f @%d", short_name(u, c->latent_hook), pos, (double)cv[lo], lo,
            (double)cv[hi], hi);
        /* the strip: one cell a value, in rows of the pane's width (at most two: then the first values) */
        int w = cols - 2 - 2, n = c->latent;
        if (n > 2 * w)
            tf_add(l, "; strip: dims 0-%d", 2 * w - 1);
        for (int r = 0; r < 2 && r * w < n; r++) {
            int k = n - r * w < w ? n - r * w : w;
            char spark[4096];
            tf_spark(cv, n, utf8, spark, sizeof spark); /* scaled over the whole vector */
            /* cut the row's cells out of the whole strip (one glyph a value) */
            const char *s = spark;
            for (int i = 0; i < r * w; i++)
                s += utf8 ? (((unsigned char)*s & 0xe0) == 0xe0 ? 3 : 1) : 1;
            const char *e = s;
            for (int i = 0; i < k; i++)
                e += utf8 ? (((unsigned char)*e & 0xe0) == 0xe0 ? 3 : 1) : 1;
            l = put(sh, 1, R_BAR, A_NORMAL);
            tf_add(l, "%s %.*s", r ? " " : (utf8 ? "▕" : "|"), (int)(e - s), s);
        }
        l = put(sh, 2, R_NORMAL, A_NORMAL);
        tf_add(l, "c = ");
        add_vec(l, cv, c->latent, cols - 2 - 4, utf8);
    }
    const float *kp = row_of(u, c->rope_hook, pos);
    l = put(sh, 3, R_NORMAL, A_NORMAL);
    if (kp) {
        tf_add(l, "k_pe = ");
        add_vec(l, kp, c->rope, cols - 2 - 7 - 14, utf8);
        tf_add(l, " (all heads')");
    } else {
        tf_add(l, "k_pe: %s not captured here", short_name(u, c->rope_hook));
    }

    /* the selected head rebuilt from c */
    if (c->absorbed) {
        l = put(sh, 2, R_NORMAL, A_NORMAL);
        tf_add(l, "H%d: W_UK[%d] is folded into q (q_absorbed = W_UK[%d]%sq_nope): scores read c", head, head,
            head, utf8 ? "ᵀ·" : "^T.");
        l = put(sh, 2, R_NORMAL, A_NORMAL);
        tf_add(l, "    z = W_UV[%d]%s(the weights' mix of c), %d values: no k, v kept per head", head,
            utf8 ? "·" : ".", c->d_v);
        return;
    }
    const float *kn = row_of(u, c->k_nope_hook, pos);
    int vh = as_program_hook(as_view_program(u->s), AS_HK_V, c->layer);
    const float *vv = row_of(u, vh, pos);
    l = put(sh, 2, R_NORMAL, A_NORMAL);
    char pre[96];
    snprintf(pre, sizeof pre, "H%d k = [W_UK[%d]%sc = ", head, head, utf8 ? "·" : ".");
    tf_add(l, "%s", pre);
    if (kn)
        add_vec(l, kn + (size_t)head * nope, nope, cols - 2 - tf_width(pre, utf8) - 14, utf8);
    else
        tf_add(l, "(%s not captured)", short_name(u, c->k_nope_hook));
    tf_add(l, ", k_pe %d]", c->rope);
    l = put(sh, 2, R_NORMAL, A_NORMAL);
    snprintf(pre, sizeof pre, "%*s v = W_UV[%d]%sc = ", head >= 10 ? 3 : 2, "", head, utf8 ? "·" : ".");
    tf_add(l, "%s", pre);
    if (vv)
        add_vec(l, vv + (size_t)head * c->d_v, c->d_v, cols - 2 - tf_width(pre, utf8), utf8);
    else
        tf_add(l, "(%s not captured)", vh >= 0 ? short_name(u, vh) : "hook_v");
    if (!kn || !vv)
        return;
    /* every head rebuilt from the same c: its k and v's first values */
    l = put(sh, 10, R_DIM, A_NORMAL);
    tf_add(l, "every head from the same c: k = W_UK[h]%sc %s v = W_UV[h]%sc", utf8 ? "·" : ".", tf_glyph(G_SEP, utf8),
        utf8 ? "·" : ".");
    int each = (cols - 2 - 4 - 2 * 4 - 2) / 2 / 7; /* values a side, 7 columns each */
    each = each < 1 ? 1 : each;
    for (int h = 0; h < c->n_head && sh->n < MAX_LINES; h++) {
        l = put(sh, 10, h == head ? R_LABEL_SEL : R_NORMAL, A_NORMAL);
        tf_add(l, "H%-2d k", h);
        for (int i = 0; i < each && i < nope; i++)
            tf_add(l, "%7.3f", (double)kn[(size_t)h * nope + i]);
        tf_add(l, " %s %s v", each < nope ? tf_glyph(G_ELLIPSIS, utf8) : " ", tf_glyph(G_SEP, utf8));
        for (int i = 0; i < each && i < c->d_v; i++)
            tf_add(l, "%7.3f", (double)vv[(size_t)h * c->d_v + i]);
        if (each < c->d_v)
            tf_add(l, " %s", tf_glyph(G_ELLIPSIS, utf8));
    }
}

static void draw(tui *u)
{
    WINDOW *w = u->win[P_MLA];
    int rows = getmaxy(w) - 2, cols = getmaxx(w) - 2;
    const as_attn *a = site_of(u, u->v.layer);
    as_site_cache c = {0};
    if (a)
        as_view_site_cache(u->s, a, &c);
    if (!a || !c.latent) {
        pane_frame(u, P_MLA, "MLA latent", NULL);
        pane_message(u, P_MLA, "This layer has no latent attention.");
        wnoutrefresh(w);
        return;
    }
    int pos = view_row(&u->v), head = u->v.head < c.n_head ? u->v.head : 0;
    char title[160], piece[96], note[64];
    bool have = as_view_n_tokens(u->s) > 0;
    if (have)
        token_label(u, pos, piece, sizeof piece);
    if (have)
        snprintf(title, sizeof title, "MLA latent L%d H%d, token %d %s", u->v.layer, head, pos, piece);
    else
        snprintf(title, sizeof title, "MLA latent L%d H%d", u->v.layer, head);
    snprintf(note, sizeof note, "cache %.1fx smaller than MHA", (double)c.plain / (c.latent + c.rope));
    pane_frame(u, P_MLA, title, note);
    sheet sh = {0};
    build(u, &c, have ? pos : 0, head, cols, &sh);
    if (!have) {
        /* no token: the widths and the cache only */
        for (int i = 0; i < sh.n; i++)
            if (sh.look[i] == R_LABEL_SEL)
                sh.n = i;
    }
    /* the rows go to the lines of the highest priorities (ties: the first), drawn in their order */
    bool take[MAX_LINES] = {0};
    int taken = 0;
    for (int p = 1; p <= 10 && taken < rows; p++) {
        int want = 0;
        for (int i = 0; i < sh.n; i++)
            want += sh.prio[i] == p;
        if (p == 10 && taken + want > rows)
            break; /* every head or none */
        for (int i = 0; i < sh.n && taken < rows; i++)
            if (sh.prio[i] == p)
                take[i] = true, taken++;
    }
    int y = 1;
    for (int i = 0; i < sh.n; i++) {
        if (!take[i])
            continue;
        term_role_attr(&u->t, w, sh.look[i], sh.attr[i]);
        put_text(u, w, y++, 2, sh.l[i].buf, cols - 1);
        term_role(&u->t, w, R_NORMAL);
    }
    wnoutrefresh(w);
}

/* Only a program with latent attention (deepseek2's MLA) has the view. */
static bool applies(const tui *u)
{
    for (int l = 0; l < as_view_n_layer(u->s); l++)
        if (as_program_hook(as_view_program(u->s), AS_HK_KV_LATENT, l) >= 0)
            return true;
    return false;
}

const pane_class pane_mla = {
    .name = "MLA latent",
    .shows = SHOWS_LAYER | SHOWS_HEAD | SHOWS_QUERY | SHOWS_DATA,
    .focusable = true,
    .applies = applies,
    .draw = draw,
};
