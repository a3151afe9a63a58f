/* Figures: bertviz's head view, queries joined to keys by lines whose
 * opacity is the attention weight (one head, or every head of a layer
 * overlaid in its own colour). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure_internal.h"

/* ====================================================== the head view */

/* Head i of n: the series colours, then hues a golden angle apart. */
static void head_colour(int i, uint8_t rgb[3])
{
    if (i < 12) {
        memcpy(rgb, SERIES[i], 3);
        return;
    }
    float h = fmodf((float)i * 137.508f, 360.0f) / 60.0f, s = 0.65f, v = 0.8f;
    float c = v * s, x = c * (1 - fabsf(fmodf(h, 2) - 1)), m = v - c;
    float r = 0, g = 0, b = 0;
    switch ((int)h) {
    case 0: r = c, g = x; break;
    case 1: r = x, g = c; break;
    case 2: g = c, b = x; break;
    case 3: g = x, b = c; break;
    case 4: r = x, b = c; break;
    default: r = c, b = x; break;
    }
    rgb[0] = (uint8_t)lrintf((r + m) * 255), rgb[1] = (uint8_t)lrintf((g + m) * 255), rgb[2] = (uint8_t)lrintf((b + m) * 255);
}

/* The legend of heads: a short line in each head's colour and its name,
 * wrapped to the width. Returns its height; draws when draw. */
static float heads_legend(lay *L, const as_fig_lines *ln, float y, bool draw)
{
    if (!ln->head_names || ln->n_heads < 2)
        return 0;
    float x0 = PT(L, MARGIN_PT), x = x0, sw = PT(L, 8), rowh = lineh(L, L->small), cy = y + rowh / 2;
    for (int i = 0; i < ln->n_heads; i++) {
        float w = sw + PT(L, 2) + tw(L, ln->head_names[i], L->small) + PT(L, 6);
        if (x > x0 && x + w > L->W - PT(L, MARGIN_PT))
            x = x0, cy += rowh;
        if (draw) {
            uint8_t rgb[3];
            head_colour(i, rgb);
            as_lay_line(L, x, cy, x + sw, cy, rgb, PT(L, 1.5f));
            as_lay_text_vc(L, x + sw + PT(L, 2), cy, L->small, AL_START, INK, ln->head_names[i]);
        }
        x += w;
    }
    return cy + rowh / 2 - y + PT(L, 3);
}

int as_fig_lines_view(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const as_fig_caption *cap,
                      const as_fig_lines *ln, as_error *err)
{
    lay L;
    if (ln->n < 1 || ln->n_heads < 1)
        return as_error_set(err, "head view: nothing to draw (%d tokens, %d heads)", ln->n, ln->n_heads);
    /* Past a few hundred tokens the lines are a grey fog (and up to
     * tokens² of them would be kept): a window reads better. */
    if (ln->n > AS_FIG_LINES_MAX)
        return as_error_set(err, "head view: %d tokens is more than the %d it draws (tokens=FROM:TO picks a window)",
                            ln->n, AS_FIG_LINES_MAX);
    if (as_lay_begin(&L, out, ctx, st, cap, err))
        return AS_ERR;
    int n = ln->n;
    float lab_max = 0.3f * L.W, sm = lineh(&L, L.small), pad = PT(&L, 3);
    float lw_ = as_lay_max_label_w(&L, ln->labels, n, lab_max);
    float xl = PT(&L, MARGIN_PT) + lw_, xr = L.W - PT(&L, MARGIN_PT) - lw_;
    if (xr - xl < PT(&L, 40))
        return as_lay_too_small(&L, "the head view of these tokens", err);
    /* On a wide page the columns stay close, as in bertviz: lines much
     * longer than they fall would all look level. */
    float span = fminf(xr - xl, PT(&L, 200));
    xl = roundf((L.W - span) / 2), xr = xl + span;
    float top = as_lay_title_height(&L, cap);
    float legend_h = heads_legend(&L, ln, top, false);
    float y0 = top + legend_h + sm;
    float pitch = sm * 1.1f;
    if (L.H > 0)
        pitch = (L.H - y0 - as_lay_notes_height(&L, cap) - PT(&L, MARGIN_PT)) / (float)n;
    if (pitch < PT(&L, 0.5f))
        return as_lay_too_small(&L, "this many tokens at height= (use tokens= or a larger height)", err);
    labels lb;
    if (as_lay_labels_make(&L, &lb, ln->labels, n, L.small, as_lay_label_stride(&L, pitch), lab_max)) {
        as_lay_labels_free(&lb);
        as_figure_free(L.f);
        return as_error_set(err, "out of memory");
    }
    heads_legend(&L, ln, top, true);
    as_lay_text(&L, xl, y0 - sm * 0.35f, L.small, false, AL_END, GREYTXT, "query");
    as_lay_text(&L, xr, y0 - sm * 0.35f, L.small, false, AL_START, GREYTXT, "key");
    float lw = PT(&L, ln->n_heads > 1 ? 0.8f : 1.0f);
    for (int hd = 0; hd < ln->n_heads; hd++) {
        uint8_t rgb[3];
        head_colour(ln->n_heads > 1 ? hd : 0, rgb);
        for (int q = 0; q < n; q++)
            for (int k = 0; k < n; k++) {
                float w = ln->weights[hd][(size_t)q * (size_t)n + (size_t)k];
                /* Below half a percent a line is invisible anyway. */
                if (!(w > 0.005f))
                    continue;
                float pts[4] = {xl + pad, y0 + ((float)q + 0.5f) * pitch, xr - pad, y0 + ((float)k + 0.5f) * pitch};
                as_lay_polyline_a(&L, pts, 2, rgb, lw, fminf(w, 1));
            }
    }
    for (int i = 0; i < n; i += lb.stride) {
        float cy = y0 + ((float)i + 0.5f) * pitch;
        as_lay_text_vc(&L, xl, cy, L.small, AL_END, INK, lb.s[i]);
        as_lay_text_vc(&L, xr, cy, L.small, AL_START, INK, lb.s[i]);
    }
    float H = as_lay_draw_notes(&L, cap, y0 + (float)n * pitch) + PT(&L, MARGIN_PT);
    as_lay_draw_title(&L, cap);
    as_lay_labels_free(&lb);
    return as_lay_end(&L, H, out, err);
}

