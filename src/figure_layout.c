/* Figures: the layout every builder shares. Starting and ending a figure,
 * the primitives (rectangles, lines, marks, text), axis scales and ticks,
 * the title and the notes, colour bars, legends and axis labels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure_internal.h"

/* ============================================================== layout */

int as_lay_begin(lay *L, as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                     as_error *err)
{
    *out = NULL;
    if (st->dpi < 10 || st->dpi > 2400)
        return as_error_set(err, "dpi must be from 10 to 2400, not %d", st->dpi);
    if (!(st->width_pt >= 36 && st->width_pt <= 2880) || !(st->height_pt == 0 || (st->height_pt >= 36 && st->height_pt <= 2880)))
        return as_error_set(err, "the figure's width and height must be from 0.5 to 40 in (36 to 2880 pt), not "
                                 "%g x %g pt", (double)st->width_pt, (double)st->height_pt);
    if (!(st->font_pt >= 4 && st->font_pt <= 36))
        return as_error_set(err, "font must be from 4 to 36 pt, not %g", (double)st->font_pt);
    as_figure *f = calloc(1, sizeof *f);
    if (!f || !(f->title = as_fig_utf8_clean(cap && cap->title ? cap->title : ""))) {
        free(f);
        return as_error_set(err, "out of memory");
    }
    f->ctx = ctx;
    f->dpi = st->dpi;
    L->f = f;
    L->c = ctx;
    L->st = st;
    L->P = (float)st->dpi / 72.0f;
    L->W = roundf(PT(L, st->width_pt));
    L->H = roundf(PT(L, st->height_pt));
    L->body = st->font_pt;
    L->title = st->font_pt + 1;
    L->small = fmaxf(st->font_pt - 1, fminf(st->font_pt, AS_FIG_MIN_FONT_PT));
    return AS_OK;
}

/* Sets the canvas size and hands the figure over. */
int as_lay_end(lay *L, float h, as_figure **out, as_error *err)
{
    as_figure *f = L->f;
    f->w = (int)L->W;
    f->h = (int)ceilf(L->H > 0 ? L->H : h);
    if (f->oom) {
        as_figure_free(f);
        return as_error_set(err, "out of memory laying out the figure");
    }
    if ((double)f->w * f->h > 64e6) {
        int w0 = f->w, h0 = f->h;
        as_figure_free(f);
        return as_error_set(err, "the figure would be %dx%d pixels: lower dpi= or show fewer tokens", w0, h0);
    }
    *out = f;
    return AS_OK;
}

/* A layout that cannot fit the size asked for: say which and what for. */
int as_lay_too_small(lay *L, const char *what, as_error *err)
{
    const as_fig_style *st = L->st;
    as_figure_free(L->f);
    L->f = NULL;
    if (st->height_pt > 0)
        return as_error_set(err, "width=%.2fin height=%.2fin is too small for %s", (double)st->width_pt / 72,
                            (double)st->height_pt / 72, what);
    return as_error_set(err, "width=%.2fin is too narrow for %s", (double)st->width_pt / 72, what);
}

void as_lay_rect(lay *L, float x, float y, float w, float h, const uint8_t *fill, const uint8_t *stroke, float lw)
{
    prim *p = as_fig_add(L->f, PR_RECT);
    if (!p)
        return;
    p->x = x, p->y = y, p->w = w, p->h = h;
    if (fill)
        memcpy(p->fill, fill, 3), p->filled = true;
    if (stroke)
        memcpy(p->stroke, stroke, 3), p->stroked = true;
    p->lw = lw;
}

void as_lay_polyline_a(lay *L, const float *pts, int n, const uint8_t *rgb, float lw, float alpha)
{
    if (n < 2)
        return;
    prim *p = as_fig_add(L->f, PR_LINE);
    if (!p)
        return;
    if (!(p->pts = malloc((size_t)n * 2 * sizeof *p->pts))) {
        L->f->oom = true;
        return;
    }
    memcpy(p->pts, pts, (size_t)n * 2 * sizeof *pts);
    p->n_pts = n;
    memcpy(p->stroke, rgb, 3);
    p->lw = lw;
    p->alpha = alpha;
}

void as_lay_polyline(lay *L, const float *pts, int n, const uint8_t *rgb, float lw)
{
    as_lay_polyline_a(L, pts, n, rgb, lw, 1);
}

void as_lay_line(lay *L, float x0, float y0, float x1, float y1, const uint8_t *rgb, float lw)
{
    float pts[4] = {x0, y0, x1, y1};
    as_lay_polyline(L, pts, 2, rgb, lw);
}

void as_lay_mark(lay *L, float x, float y, float r, const uint8_t *rgb, float alpha)
{
    prim *p = as_fig_add(L->f, PR_MARK);
    if (!p)
        return;
    p->x = x, p->y = y, p->r = r, p->alpha = alpha;
    memcpy(p->fill, rgb, 3);
    p->filled = true;
}

/* Text anchored on its baseline at (x, y). */
void as_lay_text(lay *L, float x, float y, float size_pt, bool rot, int align, const uint8_t *rgb, const char *s)
{
    if (!s || !*s)
        return;
    prim *p = as_fig_add(L->f, PR_TEXT);
    if (!p)
        return;
    if (!(p->text = as_fig_utf8_clean(s))) {
        L->f->oom = true;
        return;
    }
    p->x = x, p->y = y, p->size = PT(L, size_pt), p->rot = rot, p->align = align;
    memcpy(p->fill, rgb, 3);
    if (L->f->min_font_pt == 0 || size_pt < L->f->min_font_pt)
        L->f->min_font_pt = size_pt;
}

/* Horizontal text centred vertically (by cap height) on cy. */
void as_lay_text_vc(lay *L, float x, float cy, float size_pt, int align, const uint8_t *rgb, const char *s)
{
    as_lay_text(L, x, cy + caph(L, size_pt) / 2, size_pt, false, align, rgb, s);
}

/* Upward text whose glyphs are centred horizontally on cx. */
void as_lay_text_up(lay *L, float cx, float y, float size_pt, int align, const uint8_t *rgb, const char *s)
{
    as_lay_text(L, cx + caph(L, size_pt) / 2, y, size_pt, true, align, rgb, s);
}

/* ---- axis scales and ticks ---- */

/* Position of v within the scale, 0 at lo and 1 at hi (clamped). */
double as_fig_scale_t(const scale *s, double v)
{
    double t;
    if (s->log)
        t = (log10(v > 0 ? v : s->lo) - log10(s->lo)) / (log10(s->hi) - log10(s->lo));
    else
        t = (v - s->lo) / (s->hi - s->lo);
    return isnan(t) ? 0 : t < 0 ? 0 : t > 1 ? 1 : t;
}

double as_fig_nice_step(double range, int target)
{
    double raw = range / target, mag = pow(10, floor(log10(raw))), n = raw / mag;
    return (n < 1.5 ? 1 : n < 3 ? 2 : n < 7 ? 5 : 10) * mag;
}

/* A linear scale over [lo, hi] padded by 5% (matplotlib's margins). */
scale as_fig_scale_linear(double lo, double hi, bool pad)
{
    scale s = {lo, hi, false};
    if (!(isfinite(lo) && isfinite(hi)) || lo > hi)
        s.lo = 0, s.hi = 1;
    if (s.hi - s.lo < 1e-12) {
        double d = fabs(s.lo) > 1e-9 ? fabs(s.lo) * 0.1 : 1;
        s.lo -= d, s.hi += d;
    }
    if (pad) {
        double m = (s.hi - s.lo) * 0.05;
        s.lo -= m, s.hi += m;
    }
    return s;
}

/* A log scale over whole decades covering the positive values in [lo, hi]. */
scale as_fig_scale_log(double lo, double hi)
{
    scale s = {1e-4, 1, true};
    if (hi > 0 && isfinite(hi))
        s.hi = pow(10, ceil(log10(hi) - 1e-9));
    if (lo > 0 && isfinite(lo))
        s.lo = pow(10, floor(log10(lo) + 1e-9));
    if (s.lo >= s.hi)
        s.lo = s.hi / 10;
    return s;
}

static void fmt_decade(int e, char *buf, size_t cap)
{
    static const char *const sup[] = {"\xE2\x81\xB0", "\xC2\xB9", "\xC2\xB2", "\xC2\xB3", "\xE2\x81\xB4",
                                      "\xE2\x81\xB5", "\xE2\x81\xB6", "\xE2\x81\xB7", "\xE2\x81\xB8",
                                      "\xE2\x81\xB9"};
    if (e >= -2 && e <= 2) {
        snprintf(buf, cap, "%g", pow(10, e));
        return;
    }
    size_t o = (size_t)snprintf(buf, cap, "10%s", e < 0 ? "\xE2\x81\xBB" : "");
    char digits[16];
    snprintf(digits, sizeof digits, "%d", abs(e));
    for (char *d = digits; *d && o + 4 < cap; d++)
        o = as_fig_put_utf8(buf, o, cap, sup[*d - '0']);
    buf[o] = '\0';
}

void as_fig_make_ticks(const scale *s, int target, ticks *t)
{
    t->n = 0;
    target = target < 1 ? 1 : target;
    if (s->log) {
        int e0 = (int)lrint(log10(s->lo)), e1 = (int)lrint(log10(s->hi));
        int every = (e1 - e0 + target - 1) / target;
        every = every < 1 ? 1 : every;
        for (int e = e1; e >= e0 && t->n < MAX_TICKS; e -= every) {
            t->v[t->n] = pow(10, e);
            fmt_decade(e, t->label[t->n], sizeof t->label[0]);
            t->n++;
        }
        return;
    }
    double step = as_fig_nice_step(s->hi - s->lo, target);
    int dec = step >= 1 ? 0 : (int)ceil(-log10(step) - 1e-9);
    bool sci = step >= 1e5 || step < 1e-4;
    for (double v = ceil(s->lo / step - 1e-9) * step; v <= s->hi + step * 1e-9 && t->n < MAX_TICKS; v += step) {
        double r = fabs(v) < step * 1e-6 ? 0 : v;
        t->v[t->n] = r;
        if (sci)
            snprintf(t->label[t->n], sizeof t->label[0], "%.3g", r);
        else
            snprintf(t->label[t->n], sizeof t->label[0], "%.*f", dec, r);
        /* a minus sign, as typeset, rather than a hyphen */
        if (t->label[t->n][0] == '-') {
            char tmp[24];
            snprintf(tmp, sizeof tmp, "\xE2\x88\x92%s", t->label[t->n] + 1);
            snprintf(t->label[t->n], sizeof t->label[0], "%s", tmp);
        }
        t->n++;
    }
}

float as_lay_ticks_width(lay *L, const ticks *t, float size_pt)
{
    float w = 0;
    for (int i = 0; i < t->n; i++)
        w = fmaxf(w, tw(L, t->label[i], size_pt));
    return w;
}

/* ---- captions ---- */

/* Copies src into dst, cut at cap - 1 bytes. */
static void copy_cut(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);
    n = n < cap ? n : cap - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

/* Greedy word wrap of s into lines at most maxw px wide; calls draw for
 * each (or only counts them when draw is NULL). A word wider than a line
 * is elided. Returns the number of lines. */
static int wrap(lay *L, const char *s, float size_pt, float maxw, void (*draw)(lay *, const char *, int, void *),
                void *arg)
{
    char cur[1024] = "", word[512], trial[1600];
    int lines = 0;
    const char *p = s;
    while (*p) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n == 0)
            break;
        copy_cut(word, n + 1 < sizeof word ? n + 1 : sizeof word, p);
        p += n;
        snprintf(trial, sizeof trial, "%s%s%s", cur, *cur ? " " : "", word);
        if (*cur && tw(L, trial, size_pt) > maxw) {
            if (draw)
                draw(L, cur, lines, arg);
            lines++;
            copy_cut(trial, sizeof trial, word);
        }
        if (tw(L, trial, size_pt) > maxw) {
            char cut[1600];
            as_fig_elide(L->c, trial, PT(L, size_pt), maxw, cut, sizeof cut);
            copy_cut(trial, sizeof trial, cut);
        }
        copy_cut(cur, sizeof cur, trial);
    }
    if (*cur) {
        if (draw)
            draw(L, cur, lines, arg);
        lines++;
    }
    return lines;
}

typedef struct note_at {
    float x, y;
} note_at;

static void draw_note_line(lay *L, const char *s, int i, void *arg)
{
    const note_at *at = arg;
    as_lay_text(L, at->x, at->y + (float)i * lineh(L, L->small) + caph(L, L->small), L->small, false, AL_START, GREYTXT, s);
}

/* Height of the notes under a figure. */
float as_lay_notes_height(lay *L, const as_fig_caption *cap)
{
    int lines = 0;
    for (int i = 0; cap && i < cap->n_notes; i++)
        lines += wrap(L, cap->notes[i], L->small, L->W - 2 * PT(L, MARGIN_PT), NULL, NULL);
    return lines ? PT(L, 4) + (float)lines * lineh(L, L->small) : 0;
}

/* The notes from y down; returns the y below them. */
float as_lay_draw_notes(lay *L, const as_fig_caption *cap, float y)
{
    note_at at = {PT(L, MARGIN_PT), y + PT(L, 4)};
    int lines = 0;
    for (int i = 0; cap && i < cap->n_notes; i++) {
        at.y = y + PT(L, 4) + (float)lines * lineh(L, L->small);
        lines += wrap(L, cap->notes[i], L->small, L->W - 2 * PT(L, MARGIN_PT), draw_note_line, &at);
    }
    return lines ? y + PT(L, 4) + (float)lines * lineh(L, L->small) : y;
}

/* Height the title block takes (the same sums as as_lay_draw_title). */
float as_lay_title_height(lay *L, const as_fig_caption *cap)
{
    float y = PT(L, MARGIN_PT);
    if (cap && cap->title && *cap->title)
        y += caph(L, L->title) + PT(L, 4);
    if (cap && cap->subtitle && *cap->subtitle)
        y += lineh(L, L->small);
    return y + PT(L, 4);
}

/* Title and the grey subtitle, centred, each cut to the width. */
void as_lay_draw_title(lay *L, const as_fig_caption *cap)
{
    float y = PT(L, MARGIN_PT), maxw = L->W - 2 * PT(L, MARGIN_PT);
    char buf[1024];
    if (cap && cap->title && *cap->title) {
        y += caph(L, L->title);
        as_fig_elide(L->c, cap->title, PT(L, L->title), maxw, buf, sizeof buf);
        as_lay_text(L, L->W / 2, y, L->title, false, AL_MIDDLE, INK, buf);
        y += PT(L, 4);
    }
    if (cap && cap->subtitle && *cap->subtitle) {
        as_fig_elide(L->c, cap->subtitle, PT(L, L->small), maxw, buf, sizeof buf);
        as_lay_text(L, L->W / 2, y + caph(L, L->small), L->small, false, AL_MIDDLE, GREYTXT, buf);
    }
}

/* ---- colour bars ---- */

/* Ticks that fit a bar len px long. */
void as_lay_cbar_ticks(lay *L, cbar *cb)
{
    int target = (int)(cb->len / PT(L, cb->horiz ? 36 : 22));
    as_fig_make_ticks(cb->s, target < 1 ? 1 : target > 5 ? 5 : target, &cb->t);
}

/* The room a vertical bar takes beside the plot, or a horizontal one under it. */
float as_lay_cbar_extent(lay *L, const cbar *cb)
{
    float ticklen = PT(L, TICK_LEN_PT + TICK_PAD_PT);
    if (cb->horiz)
        return PT(L, CBAR_PT) + ticklen + lineh(L, L->small) + (cb->label ? lineh(L, L->small) : 0);
    return PT(L, CBAR_PT) + ticklen + as_lay_ticks_width(L, &cb->t, L->small) +
           (cb->label ? PT(L, 3) + lineh(L, L->small) : 0);
}

void as_lay_draw_cbar(lay *L, const cbar *cb)
{
    float bw = PT(L, CBAR_PT), lw = PT(L, FRAME_PT), tl = PT(L, TICK_LEN_PT), tp = PT(L, TICK_PAD_PT);
    prim *g = as_fig_add(L->f, PR_GRAD);
    if (g) {
        g->x = cb->x, g->y = cb->y, g->w = cb->horiz ? cb->len : bw, g->h = cb->horiz ? bw : cb->len;
        g->cmap = L->st->cmap, g->horiz = cb->horiz;
        as_lay_rect(L, g->x, g->y, g->w, g->h, NULL, INK, lw);
    }
    for (int i = 0; i < cb->t.n; i++) {
        float t = (float)as_fig_scale_t(cb->s, cb->t.v[i]);
        if (cb->horiz) {
            float x = cb->x + t * cb->len, y = cb->y + bw;
            as_lay_line(L, x, y, x, y + tl, INK, lw);
            as_lay_text(L, x, y + tl + tp + caph(L, L->small), L->small, false, AL_MIDDLE, INK, cb->t.label[i]);
        } else {
            float y = cb->y + (1 - t) * cb->len, x = cb->x + bw;
            as_lay_line(L, x, y, x + tl, y, INK, lw);
            as_lay_text_vc(L, x + tl + tp, y, L->small, AL_START, INK, cb->t.label[i]);
        }
    }
    if (!cb->label)
        return;
    if (cb->horiz)
        as_lay_text(L, cb->x + cb->len / 2, cb->y + bw + tl + tp + lineh(L, L->small) + caph(L, L->small), L->small, false,
             AL_MIDDLE, INK, cb->label);
    else
        as_lay_text_up(L, cb->x + bw + tl + tp + as_lay_ticks_width(L, &cb->t, L->small) + PT(L, 3) + lineh(L, L->small) / 2,
                cb->y + cb->len / 2, L->small, AL_MIDDLE, INK, cb->label);
}

/* A small filled square and its name; returns the x after it. */
float as_lay_legend_swatch(lay *L, float x, float cy, const uint8_t *rgb, const char *name)
{
    float sz = PT(L, 6);
    as_lay_rect(L, x, cy - sz / 2, sz, sz, rgb, INK, PT(L, 0.4f));
    as_lay_text_vc(L, x + sz + PT(L, 2), cy, L->small, AL_START, INK, name);
    return x + sz + PT(L, 2) + tw(L, name, L->small) + PT(L, 6);
}

void as_lay_labels_free(labels *lb)
{
    for (int i = 0; lb->s && i < lb->n; i++)
        free(lb->s[i]);
    free(lb->s);
    lb->s = NULL;
}

int as_lay_labels_make(lay *L, labels *lb, const char *const *src, int n, float size_pt, int stride, float maxw_px)
{
    memset(lb, 0, sizeof *lb);
    if (!src || stride < 1)
        return AS_OK;
    lb->s = calloc((size_t)n, sizeof *lb->s);
    if (!lb->s)
        return AS_ERR;
    lb->n = n;
    lb->size_pt = size_pt;
    lb->stride = stride;
    for (int i = 0; i < n; i += stride) {
        char buf[512];
        as_fig_elide(L->c, src[i] ? src[i] : "", PT(L, size_pt), maxw_px, buf, sizeof buf);
        if (!(lb->s[i] = strdup(buf)))
            return AS_ERR;
        lb->maxw = fmaxf(lb->maxw, tw(L, buf, size_pt));
    }
    return AS_OK;
}

/* Every k-th label, so that labels pitch px apart are a line apart. */
int as_lay_label_stride(lay *L, float pitch)
{
    int s = (int)ceilf(lineh(L, L->small) * 0.95f / fmaxf(pitch, 0.01f));
    return s < 1 ? 1 : s;
}

void as_fig_heat_rgb(const as_fig_style *st, const scale *s, float v, bool masked, uint8_t *rgb)
{
    if (masked)
        as_masked_rgb(st->cmap, rgb);
    else if (!isfinite(v)) /* an infinity is no colour of the scale either */
        memcpy(rgb, NANC, 3);
    else
        as_colormap(st->cmap, (float)as_fig_scale_t(s, v), rgb);
}

float as_lay_max_label_w(lay *L, const char *const *src, int n, float maxw)
{
    float w = 0;
    char buf[512];
    for (int i = 0; src && i < n; i++) {
        as_fig_elide(L->c, src[i] ? src[i] : "", PT(L, L->small), maxw, buf, sizeof buf);
        w = fmaxf(w, tw(L, buf, L->small));
    }
    return w;
}

