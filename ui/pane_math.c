/* pane_math: scaled dot-product attention worked out (`view math`), for
 * the selected layer, head and query row and the heatmap cursor's key:
 * the query vector, each key's vector (its first dimensions), q·k, the
 * scale, the mask, the score and the softmax weight, the weighted sum of
 * v (z), and the cursor's key followed from q and k to its weight. Every
 * number is read from the captured hooks the site itself reads and fills
 * (q, k, v; scores, pattern, z) or computed from them as the site does;
 * a hook not captured is said so, never replaced by something else, and
 * where the arithmetic does not give back the captured score, weight or
 * z (beyond float rounding) the pane says so. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "textfmt.h"
#include "tui.h"

/* What the pane reads at one (layer, head, query). */
typedef struct math_src {
    const as_session *s;
    const as_capture *cap;
    const as_attn *site;
    as_site_math m;
    int layer, head, kvh, qpos, nk, shown_keys, q_stream, k_stream;
    const float *q, *z;      /* the head's slices; NULL: not captured (yet) */
    bool scores, pattern;    /* the query's row of each is captured */
    double max, sum;         /* softmax of the captured scores over the visible keys */
    int bad_key;             /* the first key whose arithmetic does not give the captured value, -1: none */
    double bad_calc, bad_cap;
    const char *bad_what;
    bool z_checked, z_bad;
} math_src;

/* One key's arithmetic. */
typedef struct key_math {
    bool visible, have_k;
    const float *k;
    double dot, scaled, score; /* computed: q·k, × scale, then soft-cap and bias */
    double bias;
    float score_cap, weight_cap; /* captured (NAN: not captured) */
    double weight;               /* exp(captured score − max) / Σ (NAN without captured scores) */
} key_math;

static const float *row_of(const math_src *m, int hook, int pos)
{
    if (hook < 0 || !as_capture_has(m->cap, hook) || as_view_filled(m->s, hook) <= pos)
        return NULL;
    return as_capture_row(m->cap, hook, pos);
}

static bool attn_row(const math_src *m, int hook)
{
    return hook >= 0 && as_capture_has(m->cap, hook) && as_view_filled(m->s, hook) > m->qpos;
}

static const char *hook_name(const math_src *m, int hook)
{
    if (hook < 0)
        return "-";
    const char *n = as_view_hook_name(m->s, hook), *dot = strrchr(n, '.');
    return dot ? dot + 1 : n;
}

static key_math key_at(const math_src *m, int k)
{
    key_math r = {0};
    r.visible = as_attn_visible(m->site, m->qpos, k);
    const float *kr = row_of(m, m->m.k, k);
    r.have_k = kr != NULL && m->q != NULL;
    r.k = kr ? kr + (size_t)m->kvh * m->m.d_qk : NULL;
    r.score_cap = m->scores ? as_capture_attn(m->cap, m->m.scores, m->head, m->qpos, k) : NAN;
    r.weight_cap = m->pattern ? as_capture_attn(m->cap, m->m.pattern, m->head, m->qpos, k) : NAN;
    r.weight = m->scores && r.visible ? exp((double)r.score_cap - m->max) / m->sum : m->scores ? 0 : NAN;
    if (r.have_k) {
        for (int i = 0; i < m->m.d_qk; i++)
            r.dot += (double)m->q[i] * r.k[i];
        r.scaled = r.dot * m->m.scale;
        r.score = m->m.softcap > 0 ? m->m.softcap * tanh(r.scaled / m->m.softcap) : r.scaled;
        if (m->m.bias >= 0 && attn_row(m, m->m.bias)) {
            r.bias = as_capture_attn(m->cap, m->m.bias, m->head, m->qpos, k);
            r.score += r.bias;
        }
    }
    return r;
}

static bool differs(double calc, double cap, double tol)
{
    return !(fabs(calc - cap) <= tol * (1 + fabs(cap)));
}

/* Reads the site at the view's selection; false (and *why) when there is
 * nothing to work out. */
static bool gather(tui *u, math_src *m, const char **why)
{
    const as_session *s = u->s;
    const as_program *p = as_view_program(s);
    memset(m, 0, sizeof *m);
    m->s = s;
    m->cap = as_view_capture(s);
    m->layer = u->v.layer;
    m->head = u->v.head;
    m->bad_key = -1;
    int pat = as_program_pattern(p, m->layer, u->v.site);
    m->site = pat >= 0 ? as_program_attn(p, pat) : NULL;
    if (!m->site) {
        *why = "This layer has no such attention site.";
        return false;
    }
    as_view_site_math(m->site, &m->m);
    if (m->head >= m->m.n_head) {
        *why = "No such head at this site.";
        return false;
    }
    m->kvh = m->head / (m->m.n_head / m->m.n_head_kv);
    m->q_stream = as_view_site_q_stream(m->site);
    m->k_stream = as_view_site_kv_stream(m->site);
    m->qpos = view_row(&u->v);
    m->nk = as_view_stream_tokens(s, m->k_stream);
    if (as_view_stream_tokens(s, m->q_stream) == 0 || m->nk == 0) {
        *why = "No context yet.";
        return false;
    }
    /* a causal site's keys past the query are all masked: one of them shows it */
    m->shown_keys = m->m.causal && m->qpos + 2 < m->nk ? m->qpos + 2 : m->nk;
    const float *q = row_of(m, m->m.q, m->qpos), *z = row_of(m, m->m.z, m->qpos);
    m->q = q ? q + (size_t)m->head * m->m.d_qk : NULL;
    m->z = z ? z + (size_t)m->head * m->m.d_v : NULL;
    m->scores = attn_row(m, m->m.scores);
    m->pattern = attn_row(m, m->m.pattern);
    if (!m->q && !m->scores && as_view_filled(s, m->m.scores) <= m->qpos && as_capture_has(m->cap, m->m.scores)) {
        *why = "Not computed yet at this token:  f  finishes the pass.";
        return false;
    }
    m->max = -INFINITY;
    for (int k = 0; m->scores && k < m->nk; k++)
        if (as_attn_visible(m->site, m->qpos, k)) {
            double sc = as_capture_attn(m->cap, m->m.scores, m->head, m->qpos, k);
            m->max = sc > m->max ? sc : m->max;
        }
    for (int k = 0; m->scores && k < m->nk; k++)
        if (as_attn_visible(m->site, m->qpos, k))
            m->sum += exp(as_capture_attn(m->cap, m->m.scores, m->head, m->qpos, k) - m->max);
    /* The check: every visible key's score and weight, and z. */
    for (int k = 0; k < m->nk && m->bad_key < 0; k++) {
        key_math r = key_at(m, k);
        if (!r.visible)
            continue;
        if (r.have_k && m->scores && differs(r.score, r.score_cap, 1e-4)) {
            m->bad_key = k, m->bad_calc = r.score, m->bad_cap = r.score_cap, m->bad_what = "score";
        } else if (m->scores && m->pattern && differs(r.weight, r.weight_cap, 1e-4)) {
            m->bad_key = k, m->bad_calc = r.weight, m->bad_cap = r.weight_cap, m->bad_what = "weight";
        }
    }
    bool all_v = m->z && m->pattern;
    for (int k = 0; all_v && k < m->nk; k++)
        all_v = !as_attn_visible(m->site, m->qpos, k) || row_of(m, m->m.v, k);
    if (all_v) {
        m->z_checked = true;
        for (int i = 0; i < m->m.d_v && !m->z_bad; i++) {
            double acc = 0;
            for (int k = 0; k < m->nk; k++)
                if (as_attn_visible(m->site, m->qpos, k))
                    acc += (double)as_capture_attn(m->cap, m->m.pattern, m->head, m->qpos, k) *
                           row_of(m, m->m.v, k)[(size_t)m->kvh * m->m.d_v + i];
            m->z_bad = differs(acc, m->z[i], 1e-3);
        }
    }
    return true;
}

/* ---- drawing ---- */

/* "0.123 -0.456 … (32 dims)" in at most width columns: as many leading
 * values as fit. */
static void vec_text(const float *v, int n, int width, bool utf8, char *out, size_t cap)
{
    char tail[48];
    snprintf(tail, sizeof tail, " %s (%d dims)", tf_glyph(G_ELLIPSIS, utf8), n);
    int tw = tf_width(tail, utf8);
    size_t len = 0;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        char one[32];
        snprintf(one, sizeof one, "%s%.3f", i ? " " : "", (double)v[i]);
        int need = (int)(len + strlen(one)) + (i + 1 < n ? tw : 0);
        if (need > width || len + strlen(one) + 1 >= cap)
            break;
        len += (size_t)snprintf(out + len, cap - len, "%s", one);
        if (i + 1 == n)
            return;
    }
    snprintf(out + len, cap - len, "%s", tail + (len ? 0 : 1));
}

/* " (HOOK 0.1234)" after a computed value: the captured one it is checked
 * against ("captured" when full is off), " DIFFERS" where they part, or
 * that the hook was not captured. */
static void add_captured(tf_line *l, const math_src *m, bool have, int hook, bool full, double calc, float cap)
{
    if (have)
        tf_add(l, " (%s %.4f%s)", full ? hook_name(m, hook) : "captured", (double)cap,
            differs(calc, cap, 1e-4) ? " DIFFERS" : "");
    else
        tf_add(l, " (%s not captured)", hook_name(m, hook));
}

static void draw_text(tui *u, WINDOW *w, int y, const char *text, int cols, int look, int attr)
{
    put_text_in(u, w, y, 2, text, cols - 1, look, attr);
}

static void scale_text(const math_src *m, bool utf8, char *out, size_t cap)
{
    double plain = 1 / sqrt((double)m->m.d_qk);
    if (fabs(m->m.scale - plain) <= 1e-6 * plain)
        snprintf(out, cap, "1/%s%d = %.4f", utf8 ? "√" : "sqrt ", m->m.d_qk, (double)m->m.scale);
    else if (m->m.scale == 1.0f)
        snprintf(out, cap, "1 (unscaled)");
    else
        snprintf(out, cap, "%.4f (the model's; 1/%s%d = %.4f)", (double)m->m.scale, utf8 ? "√" : "sqrt ", m->m.d_qk,
                 plain);
}

/* The site's facts: scale, mask, which kv head, where keys come from. */
static void facts_text(tui *u, const math_src *m, tf_line *l)
{
    bool utf8 = u->t.utf8;
    char sc[96];
    scale_text(m, utf8, sc, sizeof sc);
    tf_add(l, "scale %s", sc);
    if (m->m.softcap > 0)
        tf_add(l, ", soft-cap %g%stanh(x/%g)", (double)m->m.softcap, tf_glyph(G_TIMES, utf8), (double)m->m.softcap);
    if (m->m.window > 0)
        tf_add(l, " %s sliding window: last %d keys", tf_glyph(G_SEP, utf8), m->m.window);
    else if (m->m.causal)
        tf_add(l, " %s causal: later keys masked", tf_glyph(G_SEP, utf8));
    else if (m->q_stream != m->k_stream)
        tf_add(l, " %s no mask; keys: the source's %d positions", tf_glyph(G_SEP, utf8), m->nk);
    else
        tf_add(l, " %s no mask (an encoder: every key)", tf_glyph(G_SEP, utf8));
    if (m->m.n_head_kv < m->m.n_head)
        tf_add(l, " %s GQA: head %d reads kv head %d (heads %d-%d)", tf_glyph(G_SEP, utf8), m->head, m->kvh,
            m->kvh * (m->m.n_head / m->m.n_head_kv), (m->kvh + 1) * (m->m.n_head / m->m.n_head_kv) - 1);
    const as_program *p = as_view_program(u->s);
    if (as_program_hook(p, AS_HK_KV_LATENT, m->layer) >= 0)
        tf_add(l, " %s MLA: k = [k_nope from the latent hook_kv_latent%s, shared rotary k_pe]", tf_glyph(G_SEP, utf8),
            as_program_hook(p, AS_HK_KV, m->layer) >= 0 ? " via hook_kv" : " (absorbed into q)");
    if (m->m.bias >= 0)
        tf_add(l, " %s + %s", tf_glyph(G_SEP, utf8), hook_name(m, m->m.bias));
    else
        tf_add(l, " %s no position bias", tf_glyph(G_SEP, utf8));
}

/* The columns of a key's row, for a width: how many k dimensions, and
 * whether the ×scale column fits. */
typedef struct cols_fit {
    int label, dims;
    bool scaled;
} cols_fit;

static cols_fit fit_cols(int cols, int d)
{
    cols_fit c = {10, 0, true};
    int fixed = 2 + c.label + 9 + 9 + 5 + 9 + 8;
    int room = cols - fixed - 2;
    if (room < 2 * 8) {
        c.scaled = false;
        room += 9;
    }
    c.dims = room >= 8 ? room / 8 : 0;
    c.dims = c.dims > d ? d : c.dims;
    return c;
}

static void header_text(const math_src *m, const cols_fit *c, bool utf8, tf_line *l)
{
    char kd[64];
    snprintf(kd, sizeof kd, "k[0:%d] %s", c->dims, hook_name(m, m->m.k));
    tf_add(l, " %-*s ", c->label, "key");
    if (c->dims)
        tf_add(l, "%-*s", c->dims * 8 + 2, kd);
    tf_add(l, "%9s", utf8 ? "q·k" : "q.k");
    if (c->scaled)
        tf_add(l, "%*s", utf8 ? 10 : 9, utf8 ? "×scale" : "xscale");
    tf_add(l, " %-4s%9s%8s", "mask", "score", "weight");
}

static void key_text(tui *u, const math_src *m, const cols_fit *c, int k, const key_math *r, tf_line *l)
{
    bool utf8 = u->t.utf8;
    char piece[96], lab[128], fit[64];
    stream_label(u, m->k_stream, k, piece, sizeof piece);
    snprintf(lab, sizeof lab, "%3d %s", k, piece);
    tf_fit(lab, c->label, utf8, fit, sizeof fit);
    int pad = c->label - tf_width(fit, utf8);
    tf_add(l, "%s%s%*s ", k == m->qpos && m->q_stream == m->k_stream ? "=" : " ", fit, pad > 0 ? pad : 0, "");
    if (c->dims) {
        if (r->k) {
            for (int i = 0; i < c->dims; i++)
                tf_add(l, "%8.3f", (double)r->k[i]);
            tf_add(l, c->dims < m->m.d_qk ? " %s" : "  ", tf_glyph(G_ELLIPSIS, utf8));
        } else {
            tf_add(l, "%-*s", c->dims * 8 + 2, "  (k not captured)");
        }
    }
    if (r->have_k)
        tf_add(l, "%9.4f", r->dot);
    else
        tf_add(l, "%9s", "-");
    if (c->scaled) {
        if (r->have_k)
            tf_add(l, "%9.4f", r->scaled);
        else
            tf_add(l, "%9s", "-");
    }
    tf_add(l, " %-4s", r->visible ? "0" : utf8 ? "−∞" : "-inf");
    if (!r->visible)
        tf_add(l, "%9s%8s", "masked", "0");
    else if (m->scores)
        tf_add(l, "%9.4f%8.4f", (double)r->score_cap, m->pattern ? (double)r->weight_cap : r->weight);
    else
        tf_add(l, "%9s%8s", "n/c", "n/c");
}

/* q·k = q0×k0 + q1×k1 + … (d terms) = total, as much as fits. */
static void dot_text(tui *u, const math_src *m, const key_math *r, int cols, tf_line *l)
{
    bool utf8 = u->t.utf8;
    char total[64];
    snprintf(total, sizeof total, " %s %s (%d terms) = %.4f", "+", tf_glyph(G_ELLIPSIS, utf8), m->m.d_qk, r->dot);
    tf_add(l, "%s = ", utf8 ? "q·k" : "q.k");
    int tw = tf_width(total, utf8);
    for (int i = 0; i < m->m.d_qk; i++) {
        char one[64];
        snprintf(one, sizeof one, "%s%.3f%s%.3f", i ? " + " : "", (double)m->q[i], tf_glyph(G_TIMES, utf8),
                 (double)r->k[i]);
        if (tf_width(l->buf, utf8) + tf_width(one, utf8) + (i + 1 < m->m.d_qk ? tw : 12) > cols - 1)
            break;
        tf_add(l, "%s", one);
        if (i + 1 == m->m.d_qk) {
            tf_add(l, " = %.4f", r->dot);
            return;
        }
    }
    tf_add(l, "%s", total);
}

static void draw_followed(tui *u, WINDOW *w, int y, const math_src *m, int cols)
{
    bool utf8 = u->t.utf8;
    int k = u->v.key;
    key_math r = key_at(m, k);
    tf_line a = {0}, b = {0}, c = {0};
    if (!r.visible) {
        tf_add(&a, "key %d is %s: masked (score %s, weight 0)", k,
            m->m.window > 0 && k <= m->qpos ? "outside the window" : "after the query", utf8 ? "−∞" : "-inf");
    } else if (!r.have_k) {
        tf_add(&a, "q%sk: %s not captured here (--capture-mb keeps it)", utf8 ? "·" : ".",
            !m->q ? hook_name(m, m->m.q) : hook_name(m, m->m.k));
    } else {
        dot_text(u, m, &r, cols, &a);
        tf_add(&b, "%.4f %s %.4f = %.4f", r.dot, tf_glyph(G_TIMES, utf8), (double)m->m.scale, r.scaled);
        if (m->m.softcap > 0)
            tf_add(&b, "; %g%stanh(%s/%g) = %.4f", (double)m->m.softcap, tf_glyph(G_TIMES, utf8), "x",
                (double)m->m.softcap, m->m.softcap * tanh(r.scaled / m->m.softcap));
        if (m->m.bias >= 0)
            tf_add(&b, " + bias %.4f", r.bias);
        tf_add(&b, " = score");
        size_t at = b.len;
        for (int full = 1; full >= 0; full--) {
            b.len = at;
            b.buf[at] = '\0';
            add_captured(&b, m, m->scores, m->m.scores, full, r.score, r.score_cap);
            if (tf_width(b.buf, utf8) <= cols - 1)
                break;
        }
    }
    if (r.visible && m->scores) {
        for (int full = 1; full >= 0; full--) {
            c = (tf_line){0};
            tf_add(&c, "exp(%.4f %s%s %.4f) / %s%.4f = %.4f = weight", (double)r.score_cap, utf8 ? "−" : "-",
                full ? " max" : "", m->max, full ? (utf8 ? "Σ " : "sum ") : "", m->sum, r.weight);
            add_captured(&c, m, m->pattern, m->m.pattern, full, r.weight, r.weight_cap);
            if (tf_width(c.buf, utf8) <= cols - 1)
                break;
        }
    } else if (r.visible) {
        tf_add(&c, "weight: %s not captured here", hook_name(m, m->m.scores));
    }
    const tf_line *ls[3] = {&a, &b, &c};
    for (int i = 0, yy = y; i < 3; i++)
        if (ls[i]->len)
            draw_text(u, w, yy++, ls[i]->buf, cols, i == 0 ? R_LABEL_SEL : R_NORMAL, i == 0 ? A_BOLD : A_NORMAL);
}

static int followed_rows(void)
{
    return 3;
}

static void draw(tui *u)
{
    WINDOW *w = u->win[P_MATH];
    int rows = getmaxy(w) - 2, cols = getmaxx(w) - 2;
    bool utf8 = u->t.utf8;
    math_src m;
    const char *why = NULL;
    char title[160], piece[96];
    bool ok = gather(u, &m, &why);
    const char *kind = u->v.site == AS_PICK_CROSS    ? "Cross-attention"
                       : u->v.site == AS_PICK_SOURCE ? "Encoder attention"
                                                     : "Attention";
    if (!ok) {
        snprintf(title, sizeof title, "%s worked out", kind);
        pane_frame(u, P_MATH, title, NULL);
        pane_message(u, P_MATH, why);
        wnoutrefresh(w);
        return;
    }
    stream_label(u, m.q_stream, m.qpos, piece, sizeof piece);
    snprintf(title, sizeof title, "%s worked out L%d H%d, query %d %s", kind, m.layer, m.head, m.qpos, piece);
    pane_frame(u, P_MATH, title,
               m.bad_key >= 0 || m.z_bad ? "does NOT reproduce the capture"
               : m.scores && m.q        ? (utf8 ? "✓ reproduces the captured scores" : "reproduces the captured scores")
                                        : NULL);
    /* Rows: q, the check (when it fails), the header and one key at
     * least, the followed key; then the facts, z, the other keys, and the
     * facts' further lines. */
    bool bad = m.bad_key >= 0 || m.z_bad;
    int spare = rows - (1 + (bad ? 1 : 0) + 2 + followed_rows());
    bool zline = spare-- > 0;
    tf_line fl = {0};
    facts_text(u, &m, &fl);
    int starts[8], nf = tf_wrap(fl.buf, cols - 1 > 8 ? cols - 1 : 8, utf8, starts, 8);
    nf = nf > 8 ? 8 : nf;
    /* the facts' first two lines (the architecture's part) before more keys */
    int facts = spare > 0 ? (spare < (nf < 2 ? nf : 2) ? spare : (nf < 2 ? nf : 2)) : 0;
    spare -= facts;
    int shown = m.shown_keys, key_rows = 1 + (spare > 0 ? (spare < shown - 1 ? spare : shown - 1) : 0);
    spare -= key_rows - 1;
    if (spare > 0)
        facts += spare < nf - facts ? spare : nf - facts;
    int y = 1;
    tf_line l = {0};
    char vec[512];
    /* q */
    if (m.q) {
        tf_add(&l, "q = %s[%d, H%d]  ", hook_name(&m, m.m.q), m.qpos, m.head);
        vec_text(m.q, m.m.d_qk, cols - 2 - tf_width(l.buf, utf8), utf8, vec, sizeof vec);
        tf_add(&l, "%s", vec);
    } else {
        tf_add(&l, "q: %s not captured at %d (--capture-mb keeps it)", hook_name(&m, m.m.q), m.qpos);
    }
    draw_text(u, w, y++, l.buf, cols, R_NORMAL, A_NORMAL);
    if (bad) {
        l = (tf_line){0};
        if (m.bad_key >= 0)
            tf_add(&l, "! key %d: the arithmetic gives %s %.4f, the capture holds %.4f: the pane does not reproduce it",
                m.bad_key, m.bad_what, m.bad_calc, m.bad_cap);
        else
            tf_add(&l, "! z: the sum of weight%sv does not reproduce %s", utf8 ? "·" : "*", hook_name(&m, m.m.z));
        draw_text(u, w, y++, l.buf, cols, R_WARN, A_BOLD);
    }
    for (int i = 0; i < facts; i++) {
        l = (tf_line){0};
        int end = i + 1 < nf ? starts[i + 1] : (int)fl.len;
        tf_add(&l, "%.*s", end - starts[i], fl.buf + starts[i]);
        draw_text(u, w, y++, l.buf, cols, R_DIM, A_NORMAL);
    }
    cols_fit c = fit_cols(cols - 1, m.m.d_qk);
    l = (tf_line){0};
    header_text(&m, &c, utf8, &l);
    draw_text(u, w, y++, l.buf, cols, R_LABEL, A_BOLD);
    int kc = u->v.key < shown ? u->v.key : shown - 1;
    int first = kc - key_rows / 2;
    first = first + key_rows > shown ? shown - key_rows : first;
    first = first < 0 ? 0 : first;
    for (int i = 0; i < key_rows; i++) {
        int k = first + i;
        key_math r = key_at(&m, k);
        l = (tf_line){0};
        key_text(u, &m, &c, k, &r, &l);
        bool sel = k == u->v.key;
        if (sel)
            l.buf[0] = '>';
        draw_text(u, w, y++, l.buf, cols, sel ? R_LABEL_SEL : r.visible ? R_NORMAL : R_DIM,
                  sel ? A_BOLD | A_REVERSE : A_NORMAL);
    }
    draw_followed(u, w, y, &m, cols);
    y += followed_rows();
    if (zline && y <= rows) {
        l = (tf_line){0};
        if (m.z) {
            tf_add(&l, "z = %s weight%sv = %s[%d, H%d]  ", utf8 ? "Σ" : "sum", utf8 ? "·" : "*", hook_name(&m, m.m.z),
                m.qpos, m.head);
            vec_text(m.z, m.m.d_v, cols - 2 - tf_width(l.buf, utf8) - 4, utf8, vec, sizeof vec);
            tf_add(&l, "%s%s", vec, m.z_checked && !m.z_bad ? (utf8 ? " ✓" : " ok") : "");
        } else {
            tf_add(&l, "z: %s not captured at %d", hook_name(&m, m.m.z), m.qpos);
        }
        draw_text(u, w, y++, l.buf, cols, R_NORMAL, A_NORMAL);
    }
    wnoutrefresh(w);
}

/* Where there is attention to work out: every program has a site. */
static bool applies(const tui *u)
{
    return as_program_pattern(as_view_program(u->s), 0, AS_PICK_SELF) >= 0;
}

const pane_class pane_math = {
    .name = "Attention worked out",
    .shows = SHOWS_LAYER | SHOWS_HEAD | SHOWS_QUERY | SHOWS_KEY | SHOWS_LOOK | SHOWS_DATA,
    .focusable = true,
    .applies = applies,
    .draw = draw,
};
