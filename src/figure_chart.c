/* Figures: charts over tokens. Norm statistics across positions,
 * next-token probabilities as bars, the tokens each routed expert takes,
 * and the probability trace of generated tokens. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure_internal.h"

/* ======================================================== token charts */

/* A categorical x axis of n tokens with labels, shared by stacked panels. */
typedef struct xaxis {
    float x0, step; /* px: left edge of the plot, width per token */
    bool upright;   /* labels read upwards (they are wider than a step) */
    float depth;    /* px the labels take under the axis */
    labels lb;
} xaxis;

static float xaxis_center(const xaxis *xa, int i) { return xa->x0 + ((float)i + 0.5f) * xa->step; }

static int xaxis_make(lay *L, xaxis *xa, const char *const *src, int n)
{
    float maxw = 0.3f * L->W, widest = as_lay_max_label_w(L, src, n, maxw);
    xa->upright = widest + PT(L, 2) > xa->step;
    int stride = xa->upright ? as_lay_label_stride(L, xa->step) : 1;
    if (as_lay_labels_make(L, &xa->lb, src, n, L->small, stride, maxw))
        return AS_ERR;
    xa->depth = PT(L, TICK_LEN_PT + TICK_PAD_PT) + (xa->upright ? xa->lb.maxw : lineh(L, L->small));
    return AS_OK;
}

/* A panel: a frame, y ticks with light grid lines, values mapped through s. */
typedef struct panel {
    float x, y, w, h;
    scale s;
    ticks t;
} panel;

float panel_y(const panel *p, double v) { return p->y + (float)(1 - as_fig_scale_t(&p->s, v)) * p->h; }

static void draw_panel(lay *L, const panel *p, const char *header)
{
    float lw = PT(L, FRAME_PT);
    for (int i = 0; i < p->t.n; i++) {
        float y = panel_y(p, p->t.v[i]);
        if (y < p->y - 0.5f || y > p->y + p->h + 0.5f)
            continue;
        as_lay_line(L, p->x, y, p->x + p->w, y, GRIDC, PT(L, 0.5f));
        as_lay_line(L, p->x - PT(L, TICK_LEN_PT), y, p->x, y, INK, lw);
        as_lay_text_vc(L, p->x - PT(L, TICK_LEN_PT + TICK_PAD_PT), y, L->small, AL_END, INK, p->t.label[i]);
    }
    as_lay_rect(L, p->x, p->y, p->w, p->h, NULL, INK, lw);
    if (header)
        as_lay_text(L, p->x, p->y - PT(L, 2.5f), L->small, false, AL_START, INK, header);
}

static void draw_xlabels(lay *L, const xaxis *xa, float y)
{
    float lw = PT(L, FRAME_PT), tl = PT(L, TICK_LEN_PT), tp = PT(L, TICK_PAD_PT);
    for (int i = 0; xa->lb.s && i < xa->lb.n; i += xa->lb.stride) {
        float cx = xaxis_center(xa, i);
        as_lay_line(L, cx, y, cx, y + tl, INK, lw);
        if (xa->upright)
            as_lay_text_up(L, cx, y + tl + tp, L->small, AL_END, INK, xa->lb.s[i]);
        else
            as_lay_text(L, cx, y + tl + tp + caph(L, L->small), L->small, false, AL_MIDDLE, INK, xa->lb.s[i]);
    }
}

/* Series swatches in a row: a line with a marker, then the name. Returns the x after them. */
static float draw_legend(lay *L, float x, float cy, int n, const char *const *names, const uint8_t (*cols)[3])
{
    for (int i = 0; i < n; i++) {
        float sz = PT(L, 10);
        as_lay_line(L, x, cy, x + sz, cy, cols[i], PT(L, 1.2f));
        as_lay_mark(L, x + sz / 2, cy, PT(L, 1.8f), cols[i], 1);
        as_lay_text_vc(L, x + sz + PT(L, 3), cy, L->small, AL_START, INK, names[i]);
        x += sz + PT(L, 3) + tw(L, names[i], L->small) + PT(L, 8);
    }
    return x;
}

/* ============================================================== norms */

static double stat_value(const as_norm_stat *st, int which)
{
    switch (which) {
    case 0: return st->mean;
    case 1: return sqrt(st->var > 0 ? st->var : 0);
    default: return fmax(fabs(st->min), fabs(st->max));
    }
}

/* The input dimensions that are among a token's largest for many tokens:
 * the outliers worth naming. */
#define MAX_NAMED 5
typedef struct outliers {
    int n;
    int dim[MAX_NAMED], count[MAX_NAMED];
    char text[MAX_NAMED][64];
    float vmax; /* largest |x| among all tokens' top dimensions */
} outliers;

static int find_outliers(const as_fig_norms *nm, outliers *o)
{
    int *count = calloc((size_t)nm->d_model, sizeof *count);
    memset(o, 0, sizeof *o);
    if (!count)
        return AS_ERR;
    for (int i = 0; i < nm->n; i++) {
        int dims[AS_NORM_TOP * 2], nd = 0;
        for (int sr = 0; sr < nm->n_series; sr++)
            for (int t = 0; t < AS_NORM_TOP; t++) {
                const as_norm_stat *s0 = &nm->series[sr].stat[i];
                int d = s0->top_dim[t];
                if (d < 0 || d >= nm->d_model)
                    continue;
                if (isfinite(s0->top_val[t]))
                    o->vmax = fmaxf(o->vmax, fabsf(s0->top_val[t]));
                bool dup = false;
                for (int j = 0; j < nd; j++)
                    dup |= dims[j] == d;
                if (!dup)
                    dims[nd++] = d;
            }
        for (int j = 0; j < nd; j++)
            count[dims[j]]++; /* once per token, whichever norm saw it */
    }
    int min_count = nm->n / 4 > 2 ? nm->n / 4 : 2;
    for (int k = 0; k < MAX_NAMED && nm->n > 1; k++) {
        int best = -1;
        for (int d = 0; d < nm->d_model; d++)
            if (count[d] >= min_count && (best < 0 || count[d] > count[best]))
                best = d;
        if (best < 0)
            break;
        o->dim[o->n] = best, o->count[o->n] = count[best];
        snprintf(o->text[o->n], sizeof o->text[0], "dim %d: %d/%d", best, count[best], nm->n);
        o->n++;
        count[best] = 0;
    }
    free(count);
    return AS_OK;
}

/* One statistic of every series: a line (broken at non-finite values) with markers. */
static int draw_stat(lay *L, const xaxis *xa, const panel *p, const as_fig_norms *nm, int which)
{
    float *pts = malloc((size_t)nm->n * 2 * sizeof *pts);
    if (!pts)
        return AS_ERR;
    float mr = fminf(PT(L, 1.6f), xa->step * 0.3f), lw = PT(L, 1.0f);
    for (int sr = 0; sr < nm->n_series; sr++) {
        int m = 0;
        for (int i = 0; i <= nm->n; i++) {
            double v = i < nm->n ? stat_value(&nm->series[sr].stat[i], which) : NAN;
            if (isfinite(v)) {
                pts[2 * m] = xaxis_center(xa, i), pts[2 * m + 1] = panel_y(p, v);
                m++;
                continue;
            }
            as_lay_polyline(L, pts, m, SERIES[sr], lw);
            for (int j = 0; j < m; j++)
                as_lay_mark(L, pts[2 * j], pts[2 * j + 1], mr, SERIES[sr], 1);
            m = 0;
        }
    }
    free(pts);
    return AS_OK;
}

/* A marker per (token, top dimension), its area by |x|; the recurring
 * dimensions ruled across and named at the right, spread apart so the
 * names never overlap. */
static void draw_dims(lay *L, const xaxis *xa, const panel *p, const as_fig_norms *nm, const outliers *o)
{
    for (int i = 0; i < o->n; i++) {
        float y = panel_y(p, o->dim[i]);
        as_lay_line(L, p->x, y, p->x + p->w, y, (const uint8_t[]){0xBB, 0xBB, 0xBB}, PT(L, 0.5f));
    }
    float rmax = fminf(PT(L, 3.5f), xa->step * 0.45f);
    for (int sr = 0; sr < nm->n_series; sr++)
        for (int i = 0; i < nm->n; i++)
            for (int t = 0; t < AS_NORM_TOP; t++) {
                const as_norm_stat *s0 = &nm->series[sr].stat[i];
                int d = s0->top_dim[t];
                if (d < 0 || d >= nm->d_model)
                    continue;
                float v = fabsf(s0->top_val[t]);
                float r = o->vmax > 0 && isfinite(v) ? rmax * sqrtf(v / o->vmax) : rmax;
                float cx = xaxis_center(xa, i) + (nm->n_series > 1 ? (sr ? 1 : -1) * xa->step * 0.12f : 0);
                as_lay_mark(L, cx, panel_y(p, d), fmaxf(r, PT(L, 0.6f)), SERIES[sr], 0.75f);
            }
    int order[MAX_NAMED];
    float y[MAX_NAMED], gap = lineh(L, L->small);
    for (int i = 0; i < o->n; i++) {
        int j = i;
        for (; j > 0 && o->dim[order[j - 1]] < o->dim[i]; j--)
            order[j] = order[j - 1];
        order[j] = i; /* top of the panel (highest dimension) first */
    }
    for (int i = 0; i < o->n; i++) {
        y[i] = panel_y(p, o->dim[order[i]]);
        if (i > 0 && y[i] < y[i - 1] + gap)
            y[i] = y[i - 1] + gap;
    }
    for (int i = o->n - 1; i >= 0; i--)
        y[i] = fminf(y[i], p->y + p->h - gap / 2 - (float)(o->n - 1 - i) * gap);
    for (int i = 0; i < o->n; i++)
        as_lay_text_vc(L, p->x + p->w + PT(L, 4), y[i], L->small, AL_START, INK, o->text[order[i]]);
}

static void norm_scales(lay *L, const as_fig_norms *nm, panel *pn)
{
    for (int k = 0; k < 3; k++) {
        double lo = INFINITY, hi = -INFINITY, minpos = INFINITY;
        for (int sr = 0; sr < nm->n_series; sr++)
            for (int i = 0; i < nm->n; i++) {
                double v = stat_value(&nm->series[sr].stat[i], k);
                if (!isfinite(v))
                    continue;
                lo = fmin(lo, v), hi = fmax(hi, v);
                if (v > 0)
                    minpos = fmin(minpos, v);
            }
        /* The spread and the magnitude are positive: they may go on a log axis. */
        pn[k].s = L->st->log_scale && k > 0 ? as_fig_scale_log(minpos, hi) : as_fig_scale_linear(lo, hi, true);
    }
    pn[3].s = as_fig_scale_linear(-0.5, nm->d_model - 0.5, false);
}

int as_fig_norm_chart(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                      const as_fig_norms *nm, as_error *err)
{
    lay L;
    if (nm->n < 1 || nm->n_series < 1 || nm->n_series > 2 || nm->d_model < 1)
        return as_error_set(err, "norm chart: no tokens to draw");
    if (as_lay_begin(&L, out, ctx, st, cap, err))
        return AS_ERR;
    int n = nm->n;
    outliers ol;
    if (find_outliers(nm, &ol)) {
        as_figure_free(L.f);
        return as_error_set(err, "out of memory");
    }
    enum { NP = 4 };
    panel pn[NP];
    const char *heads[NP] = {"mean of the input", nm->rms ? "RMS of the input" : "std of the input",
                             "max |x| of the input",
                             "largest input dimensions (marker area \xE2\x88\x9D |x|)"};
    const float share[NP] = {1, 1, 1, 1.5f};
    norm_scales(&L, nm, pn);
    float tickw = 0, named_w = 0, sm = lineh(&L, L.small);
    /* Ticks first (a panel's height sets how many), then the widest sets the left margin. */
    float top = as_lay_title_height(&L, cap) + sm + PT(&L, 2);
    float unit = L.H > 0 ? 0 : PT(&L, 0.2f * st->width_pt);
    for (int k = 0; k < NP; k++)
        as_fig_make_ticks(&pn[k].s, unit > 0 ? (int)fmaxf(2, share[k] * unit / PT(&L, 26)) : 3, &pn[k].t);
    for (int k = 0; k < NP; k++)
        tickw = fmaxf(tickw, as_lay_ticks_width(&L, &pn[k].t, L.small));
    for (int i = 0; i < ol.n; i++)
        named_w = fmaxf(named_w, tw(&L, ol.text[i], L.small) + PT(&L, 6));
    xaxis xa = {0};
    xa.x0 = ceilf(PT(&L, MARGIN_PT) + tickw + PT(&L, TICK_LEN_PT + TICK_PAD_PT));
    float plot_w = L.W - xa.x0 - named_w - PT(&L, MARGIN_PT);
    if (plot_w < PT(&L, 40))
        return as_lay_too_small(&L, "the norm chart", err);
    xa.step = plot_w / (float)n;
    if (xaxis_make(&L, &xa, nm->labels, n)) {
        as_lay_labels_free(&xa.lb);
        as_figure_free(L.f);
        return as_error_set(err, "out of memory");
    }
    float headh = sm + PT(&L, 1), gaps = 0;
    for (int k = 0; k < NP; k++)
        gaps += headh + PT(&L, 3);
    float bottom_room = xa.depth + PT(&L, 2) + lineh(&L, L.body) + as_lay_notes_height(&L, cap) + PT(&L, MARGIN_PT);
    if (L.H > 0)
        unit = (L.H - top - gaps - bottom_room) / (share[0] + share[1] + share[2] + share[3]);
    if (unit < PT(&L, 10)) {
        as_lay_labels_free(&xa.lb);
        return as_lay_too_small(&L, "the norm chart's four panels (a larger height=)", err);
    }
    float y = top;
    for (int k = 0; k < NP; k++) {
        y += headh;
        pn[k].x = xa.x0, pn[k].y = roundf(y), pn[k].w = plot_w, pn[k].h = roundf(share[k] * unit);
        y = pn[k].y + pn[k].h + PT(&L, 3);
        if (L.H > 0)
            as_fig_make_ticks(&pn[k].s, (int)fmaxf(2, pn[k].h / PT(&L, 26)), &pn[k].t);
    }
    const char *names[2] = {nm->series[0].name, nm->n_series > 1 ? nm->series[1].name : NULL};
    draw_legend(&L, xa.x0, top - sm / 2 - PT(&L, 2), nm->n_series, names, SERIES);
    for (int k = 0; k < NP; k++) {
        draw_panel(&L, &pn[k], heads[k]);
        if (k < 3 && draw_stat(&L, &xa, &pn[k], nm, k))
            L.f->oom = true;
    }
    draw_dims(&L, &xa, &pn[3], nm, &ol);
    float xl_y = pn[NP - 1].y + pn[NP - 1].h;
    draw_xlabels(&L, &xa, xl_y);
    float ay = xl_y + xa.depth + PT(&L, 2) + caph(&L, L.body);
    as_lay_text(&L, xa.x0 + plot_w / 2, ay, L.body, false, AL_MIDDLE, INK, "token");
    float H = as_lay_draw_notes(&L, cap, ay + PT(&L, 2)) + PT(&L, MARGIN_PT);
    as_lay_draw_title(&L, cap);
    as_lay_labels_free(&xa.lb);
    return as_lay_end(&L, H, out, err);
}

/* ======================================================== probabilities */

static scale prob_scale(const as_fig_style *st, const as_fig_probs *pr)
{
    double pmax = 0, pmin = 1;
    for (int i = 0; i < pr->k; i++)
        if (isfinite(pr->p[i])) {
            pmax = fmax(pmax, pr->p[i]);
            if (pr->p[i] > 0)
                pmin = fmin(pmin, pr->p[i]);
        }
    if (st->log_scale)
        return as_fig_scale_log(pmin, 1);
    double step = as_fig_nice_step(pmax > 0 ? pmax : 1, 4);
    scale s = {0, fmin(1, ceil(pmax * 1.12 / step - 1e-9) * step), false};
    if (s.hi <= 0)
        s.hi = 1;
    return s;
}

int as_fig_prob_bars(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                     const as_fig_probs *pr, as_error *err)
{
    lay L;
    if (pr->k < 1)
        return as_error_set(err, "probability chart: no tokens to draw");
    if (as_lay_begin(&L, out, ctx, st, cap, err))
        return AS_ERR;
    int k = pr->k;
    labels lb;
    if (as_lay_labels_make(&L, &lb, pr->labels, k, L.small, 1, 0.35f * L.W)) {
        as_lay_labels_free(&lb);
        as_figure_free(L.f);
        return as_error_set(err, "out of memory");
    }
    panel pn;
    pn.s = prob_scale(st, pr);
    float tl = PT(&L, TICK_LEN_PT), tp = PT(&L, TICK_PAD_PT), sm = lineh(&L, L.small), lw = PT(&L, FRAME_PT);
    float valw = tw(&L, "0.000", L.small) + PT(&L, 3);
    pn.x = ceilf(PT(&L, MARGIN_PT) + lb.maxw + tl + tp);
    pn.w = roundf(L.W - pn.x - valw - PT(&L, MARGIN_PT));
    pn.y = roundf(as_lay_title_height(&L, cap));
    float below = tl + tp + sm + PT(&L, 2) + lineh(&L, L.body);
    float row = L.H > 0 ? (L.H - pn.y - below - as_lay_notes_height(&L, cap) - PT(&L, MARGIN_PT)) / (float)k : sm * 1.3f;
    if (pn.w < PT(&L, 30) || row < PT(&L, 1)) {
        as_lay_labels_free(&lb);
        return as_lay_too_small(&L, "these bars", err);
    }
    pn.h = row * (float)k;
    as_fig_make_ticks(&pn.s, (int)fmaxf(2, pn.w / PT(&L, 36)), &pn.t);
    for (int i = 0; i < pn.t.n; i++) {
        float x = pn.x + (float)as_fig_scale_t(&pn.s, pn.t.v[i]) * pn.w;
        as_lay_line(&L, x, pn.y, x, pn.y + pn.h, GRIDC, PT(&L, 0.5f));
        as_lay_line(&L, x, pn.y + pn.h, x, pn.y + pn.h + tl, INK, lw);
        as_lay_text(&L, x, pn.y + pn.h + tl + tp + caph(&L, L.small), L.small, false, AL_MIDDLE, INK, pn.t.label[i]);
    }
    int stride = as_lay_label_stride(&L, row);
    for (int i = 0; i < k; i++) {
        float cy = pn.y + ((float)i + 0.5f) * row;
        float len = isfinite(pr->p[i]) ? (float)as_fig_scale_t(&pn.s, pr->p[i]) * pn.w : 0;
        as_lay_rect(&L, pn.x, cy - row * 0.36f, len, row * 0.72f, SERIES[0], NULL, 0);
        if (i % stride)
            continue;
        as_lay_line(&L, pn.x - tl, cy, pn.x, cy, INK, lw);
        as_lay_text_vc(&L, pn.x - tl - tp, cy, L.small, AL_END, INK, lb.s[i]);
        char v[32];
        snprintf(v, sizeof v, pr->p[i] >= 0.001 ? "%.3f" : "%.0e", pr->p[i]);
        as_lay_text_vc(&L, pn.x + len + PT(&L, 2), cy, L.small, AL_START, GREYTXT, v);
    }
    as_lay_rect(&L, pn.x, pn.y, pn.w, pn.h, NULL, INK, lw);
    float axis_y = pn.y + pn.h + tl + tp + sm + PT(&L, 2) + caph(&L, L.body);
    as_lay_text(&L, pn.x + pn.w / 2, axis_y, L.body, false, AL_MIDDLE, INK, "probability");
    float H = as_lay_draw_notes(&L, cap, axis_y + PT(&L, 2)) + PT(&L, MARGIN_PT);
    as_lay_draw_title(&L, cap);
    as_lay_labels_free(&lb);
    return as_lay_end(&L, H, out, err);
}

/* The columns of as_fig_expert_tokens: each row a label line and a bar
 * under it; the bars' scale (0–1) spans a column's inner width. */
int as_fig_expert_tokens(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                         const as_fig_experts *ex, as_error *err)
{
    lay L;
    int E = ex->n_expert, R = ex->rows;
    if (E < 1 || R < 1 || !(ex->full > 0))
        return as_error_set(err, "expert figure: no experts to draw");
    if (as_lay_begin(&L, out, ctx, st, cap, err))
        return AS_ERR;
    float m = PT(&L, MARGIN_PT), gap = PT(&L, 4), lw = PT(&L, FRAME_PT);
    float colw = (L.W - 2 * m - (float)(E - 1) * gap) / (float)E;
    float sm = lineh(&L, L.small), barh = fmaxf(PT(&L, 3), 2), rowh = sm + barh + PT(&L, 2);
    float head = as_lay_title_height(&L, cap), hb = lineh(&L, L.body);
    if (colw < PT(&L, 24))
        return as_lay_too_small(&L, "a column per expert", err);
    float top = head + hb + PT(&L, 2);
    for (int e = 0; e < E; e++) {
        const as_fig_expert_col *c = &ex->cols[e];
        float x = m + (float)e * (colw + gap);
        as_lay_text(&L, x + colw / 2, head + caph(&L, L.body), L.small, false, AL_MIDDLE, INK, c->title);
        as_lay_line(&L, x, top - PT(&L, 1), x + colw, top - PT(&L, 1), INK, lw);
        if (c->n == 0)
            as_lay_text_vc(&L, x + colw / 2, top + sm / 2, L.small, AL_MIDDLE, GREYTXT, "none");
        for (int i = 0; i < c->n && i < R; i++) {
            float y = top + (float)i * rowh;
            char lab[64], num[24];
            snprintf(num, sizeof num, "\xc3\x97%d", c->count[i]);
            float nw = tw(&L, num, L.small) + PT(&L, 2);
            /* a token's text is cut to what the column holds beside its count */
            snprintf(lab, sizeof lab, "%s", c->labels[i]);
            for (size_t n = strlen(lab); n > 1 && tw(&L, lab, L.small) > colw - nw; n--) {
                while (n > 1 && ((unsigned char)lab[n - 1] & 0xC0) == 0x80)
                    n--;
                lab[n - 1] = 0;
            }
            as_lay_text_vc(&L, x, y + sm / 2, L.small, AL_START, INK, lab);
            as_lay_text_vc(&L, x + colw, y + sm / 2, L.small, AL_END, GREYTXT, num);
            float sh = isfinite(c->share[i]) ? fminf(1, fmaxf(0, c->share[i] / ex->full)) : 0;
            as_lay_rect(&L, x, roundf(y + sm), roundf(sh * colw), roundf(barh), SERIES[0], NULL, 0);
            as_lay_line(&L, x, y + sm, x, y + sm + barh, INK, lw);
        }
    }
    float H = as_lay_draw_notes(&L, cap, top + (float)R * rowh + PT(&L, 2)) + m;
    as_lay_draw_title(&L, cap);
    return as_lay_end(&L, H, out, err);
}

/* Black or white, whichever reads better on rgb. */
static const uint8_t *contrast(const uint8_t *rgb)
{
    float lum = 0.2126f * rgb[0] + 0.7152f * rgb[1] + 0.0722f * rgb[2];
    return lum > 140 ? INK : WHITE;
}

/* Where the parts of a probability trace go. */
typedef struct trace_geom {
    float x0, colw, rowh; /* left edge of the columns, column width, table row height */
    float ty;             /* top of the table */
    bool cell_text;       /* cells wide enough to hold a token */
    scale ps;             /* the colour scale of the table */
} trace_geom;

/* The line chart: the chosen token's probability, and the top one's behind it. */
static int draw_trace_chart(lay *L, const as_fig_trace *tr, const trace_geom *g, const panel *pa)
{
    static const uint8_t GREY[3] = {0x99, 0x99, 0x99};
    int S = tr->steps;
    float *pts = malloc((size_t)S * 2 * sizeof *pts);
    if (!pts)
        return AS_ERR;
    draw_panel(L, pa, NULL);
    as_lay_text_up(L, PT(L, MARGIN_PT) + lineh(L, L->body) / 2, pa->y + pa->h / 2, L->body, AL_MIDDLE, INK, "probability");
    float mr = fminf(PT(L, 1.8f), g->colw * 0.3f);
    for (int top = 1; top >= 0; top--) {
        for (int i = 0; i < S; i++) {
            double v = top ? tr->alt_p[(size_t)i * (size_t)tr->k] : tr->chosen_p[i];
            pts[2 * i] = pa->x + ((float)i + 0.5f) * g->colw, pts[2 * i + 1] = panel_y(pa, v);
        }
        as_lay_polyline(L, pts, S, top ? GREY : SERIES[0], PT(L, top ? 0.8f : 1.2f));
        for (int i = 0; i < S; i++)
            as_lay_mark(L, pts[2 * i], pts[2 * i + 1], top ? mr * 0.7f : mr, top ? GREY : SERIES[0], 1);
    }
    free(pts);
    return AS_OK;
}

/* The table: a row per rank, then the chosen token's row; cells coloured
 * by probability, the chosen candidate outlined. */
static void draw_trace_table(lay *L, const as_fig_trace *tr, const trace_geom *g)
{
    int S = tr->steps, K = tr->k;
    float x0 = g->x0, colw = g->colw, rowh = g->rowh, ty = g->ty, lw = PT(L, FRAME_PT), gap = PT(L, 2);
    for (int r = 0; r <= K; r++) {
        float ry = ty + (float)r * rowh + (r == K ? gap : 0);
        char name[16] = "chosen";
        if (r < K)
            snprintf(name, sizeof name, "%d", r + 1);
        as_lay_text_vc(L, x0 - PT(L, TICK_PAD_PT + 1), ry + rowh / 2, L->small, AL_END, INK, name);
        for (int i = 0; i < S; i++) {
            float cx = x0 + (float)i * colw;
            float p = r < K ? tr->alt_p[(size_t)i * (size_t)K + (size_t)r] : tr->chosen_p[i];
            const char *lab = r < K ? tr->alt_labels[(size_t)i * (size_t)K + (size_t)r] : tr->chosen[i];
            uint8_t rgb[3];
            as_fig_heat_rgb(L->st, &g->ps, p, false, rgb);
            /* A little over the next cell, so no seam shows between them. */
            as_lay_rect(L, cx, ry, colw + (i + 1 < S ? 0.6f : 0), rowh + (r + 1 < K ? 0.6f : 0), rgb, NULL, 0);
            if (g->cell_text && lab) {
                char buf[256];
                float fs = L->small;
                as_fig_elide(L->c, lab, PT(L, fs), colw - PT(L, 1.5f), buf, sizeof buf);
                /* One character and an ellipsis tells nothing: colour only. */
                const char *q = buf;
                as_fig_utf8_next(&q);
                if (strcmp(q, "\xE2\x80\xA6"))
                    as_lay_text_vc(L, cx + colw / 2, ry + rowh / 2, fs, AL_MIDDLE, contrast(rgb), buf);
            }
        }
    }
    float plot_w = colw * (float)S, hw = PT(L, 1.2f);
    as_lay_rect(L, x0, ty, plot_w, rowh * (float)K, NULL, INK, lw);
    as_lay_rect(L, x0, ty + rowh * (float)K + gap, plot_w, rowh, NULL, INK, lw);
    for (int i = 0; i < S; i++)
        if (tr->chosen_rank[i] >= 1 && tr->chosen_rank[i] <= K)
            as_lay_rect(L, x0 + (float)i * colw + hw / 2, ty + (float)(tr->chosen_rank[i] - 1) * rowh + hw / 2, colw - hw,
                 rowh - hw, NULL, HILITE, hw);
    /* Under the table, the context position of each generated token. */
    float by = ty + rowh * (float)(K + 1) + gap;
    char widest[16];
    snprintf(widest, sizeof widest, "%d", tr->positions[S - 1]);
    int every = 1;
    while ((float)every * colw < tw(L, widest, L->small) + PT(L, 3))
        every++;
    for (int i = 0; i < S; i += every) {
        char num[16];
        snprintf(num, sizeof num, "%d", tr->positions[i]);
        float cx = x0 + ((float)i + 0.5f) * colw;
        as_lay_line(L, cx, by, cx, by + PT(L, TICK_LEN_PT), INK, lw);
        as_lay_text(L, cx, by + PT(L, TICK_LEN_PT + TICK_PAD_PT) + caph(L, L->small), L->small, false, AL_MIDDLE, INK, num);
    }
}

int as_fig_prob_trace(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                      const as_fig_trace *tr, as_error *err)
{
    lay L;
    if (tr->steps < 1 || tr->k < 1)
        return as_error_set(err, "probability trace: no generated tokens to draw");
    if (as_lay_begin(&L, out, ctx, st, cap, err))
        return AS_ERR;
    static const char *const names[2] = {"chosen token", "most likely token"};
    static const uint8_t cols[2][3] = {{0x1F, 0x77, 0xB4}, {0x99, 0x99, 0x99}};
    int S = tr->steps, K = tr->k;
    float sm = lineh(&L, L.small), tl = PT(&L, TICK_LEN_PT + TICK_PAD_PT);
    trace_geom g;
    g.ps = st->log_scale ? (scale){AS_FIG_LOG_MIN, 1, true} : (scale){0, 1, false};
    g.rowh = roundf(sm * 1.25f);
    panel pa;
    pa.s = st->log_scale ? g.ps : as_fig_scale_linear(0, 1, true);
    as_fig_make_ticks(&pa.s, 3, &pa.t);
    float rowlab_w = fmaxf(tw(&L, "chosen", L.small), as_lay_ticks_width(&L, &pa.t, L.small));
    g.x0 = ceilf(PT(&L, MARGIN_PT) + lineh(&L, L.body) + PT(&L, 2) + rowlab_w + tl);
    float th = g.rowh * (float)(K + 1) + PT(&L, 2);
    cbar cb = {.s = &g.ps, .label = "probability"};
    cb.horiz = th < tw(&L, cb.label, L.small) + PT(&L, 4);
    cb.len = cb.horiz ? PT(&L, 100) : th;
    as_lay_cbar_ticks(&L, &cb);
    float right = cb.horiz ? 0 : PT(&L, 6) + as_lay_cbar_extent(&L, &cb);
    float plot_w = L.W - g.x0 - right - PT(&L, MARGIN_PT);
    if (plot_w < PT(&L, 40))
        return as_lay_too_small(&L, "the probability trace", err);
    g.colw = plot_w / (float)S;
    g.cell_text = g.colw >= PT(&L, 11);

    /* Title, legend, chart, table (with its colour bar), axis name, notes. */
    float legend_y = as_lay_title_height(&L, cap) + sm / 2;
    float below = tl + sm + PT(&L, 2) + lineh(&L, L.body) + (cb.horiz ? PT(&L, 8) + as_lay_cbar_extent(&L, &cb) : 0);
    float chart_h = roundf(PT(&L, 0.3f * st->width_pt));
    if (L.H > 0)
        chart_h = L.H - legend_y - sm - PT(&L, 6) - sm - th - below - as_lay_notes_height(&L, cap) - PT(&L, MARGIN_PT);
    if (chart_h < PT(&L, 20))
        return as_lay_too_small(&L, "the probability trace (a larger height=)", err);
    pa.x = g.x0, pa.y = roundf(legend_y + sm), pa.w = plot_w, pa.h = chart_h;
    g.ty = roundf(pa.y + pa.h + PT(&L, 6) + sm);
    draw_legend(&L, g.x0, legend_y, 2, names, cols);
    if (draw_trace_chart(&L, tr, &g, &pa))
        L.f->oom = true;
    as_lay_text(&L, g.x0, g.ty - PT(&L, 2.5f), L.small, false, AL_START, INK, "top candidates at each step (chosen outlined)");
    draw_trace_table(&L, tr, &g);
    float axis_y = g.ty + th + tl + sm + PT(&L, 2) + caph(&L, L.body);
    as_lay_text(&L, g.x0 + plot_w / 2, axis_y, L.body, false, AL_MIDDLE, INK, "position of the generated token");
    float bottom = axis_y + PT(&L, 2);
    if (cb.horiz) {
        cb.x = g.x0 + (plot_w - cb.len) / 2, cb.y = bottom + PT(&L, 6);
        bottom = cb.y + as_lay_cbar_extent(&L, &cb);
    } else {
        cb.x = g.x0 + plot_w + PT(&L, 6), cb.y = g.ty;
    }
    as_lay_draw_cbar(&L, &cb);
    float H = as_lay_draw_notes(&L, cap, bottom) + PT(&L, MARGIN_PT);
    as_lay_draw_title(&L, cap);
    return as_lay_end(&L, H, out, err);
}

