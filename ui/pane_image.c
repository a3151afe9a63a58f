/* pane_image: a vision model's input image, with the selected query's
 * attention over its patches (layer and head as the heatmap shows them):
 * the image alone, the heat alone, or the two blended (`i` cycles). Drawn
 * with half blocks (two pixels a cell) in 256 or direct colour; without
 * colour, in shades of the value shown. The selected query's patch is
 * marked; a click on a patch selects it as the query. In grid mode (`g`),
 * every head of the layer as a small image of its own. Applies only where
 * the program reads pixels. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "textfmt.h"
#include "tui.h"

static const char *const mode_name[IMG_MODES] = {"blend", "image", "heat"};

static int pixel_stream(const as_session *s)
{
    return as_view_pixels(s) ? as_view_out_stream(s) : -1;
}

/* What the pane reads of the pixel stream: its patches and normalisation. */
typedef struct img_stream {
    as_patch_spec patch;
    as_image_spec image;
} img_stream;

static img_stream stream_of(const as_session *s, int si)
{
    return (img_stream){*as_view_patch(s, si), *as_view_image(s, si)};
}

static bool applies(const tui *u)
{
    return pixel_stream(u->s) >= 0;
}

/* Where the image goes in the window: D x D pixels, each pw columns wide
 * and 1/sub of a row high, from (y0, x0). */
typedef struct img_geom {
    int D, pw, sub, y0, x0;
} img_geom;

static img_geom geometry(const tui *u, WINDOW *w)
{
    img_geom g = {0};
    int rows = getmaxy(w) - 3, cols = getmaxx(w) - 2;
    g.sub = u->t.style == HM_HALF ? 2 : 1;
    g.pw = g.sub == 2 ? 1 : 2; /* a cell is about twice as high as wide */
    g.D = cols / g.pw < rows * g.sub ? cols / g.pw : rows * g.sub;
    if (g.D < 0)
        g.D = 0;
    g.y0 = 1;
    g.x0 = 1 + (cols - g.D * g.pw) / 2;
    return g;
}

/* The query's attention to each patch, scaled by its largest (so the map
 * uses the whole colour scale); false when not computed yet. */
static bool patch_heat(const tui *u, int head, int q, float *heat, int n_patch, float *max)
{
    const as_session *s = u->s;
    int h = as_program_hook(as_view_program(s), AS_HK_PATTERN, u->v.layer);
    if (h < 0 || !as_capture_has(as_view_capture(s), h) || as_view_filled(s, h) <= q)
        return false;
    *max = 0;
    for (int i = 0; i < n_patch; i++) {
        heat[i] = as_capture_attn(as_view_capture(s), h, head, q, 1 + i);
        *max = heat[i] > *max ? heat[i] : *max;
    }
    for (int i = 0; i < n_patch; i++)
        heat[i] = *max > 0 ? heat[i] / *max : 0;
    return true;
}

/* The colour of display pixel (px, py) and its value for shades (0..1). */
static float pixel(const tui *u, const img_stream *st, const float *pixels, const img_geom *g, const float *heat,
                   int px, int py, uint8_t rgb[3])
{
    const as_patch_spec *ps = &st->patch;
    const as_image_spec *is = &st->image;
    int S = ps->size, ix = px * S / g->D, iy = py * S / g->D;
    float img[3];
    for (int c = 0; c < 3; c++) {
        int ch = ps->channels == 1 ? 0 : c;
        float v = pixels[((size_t)ch * (size_t)S + (size_t)iy) * (size_t)S + (size_t)ix] * is->std[ch] + is->mean[ch];
        img[c] = v < 0 ? 0 : v > 1 ? 1 : v;
    }
    float grey = 0.2989f * img[0] + 0.587f * img[1] + 0.114f * img[2];
    int mode = heat ? u->v.image_mode : IMG_IMAGE;
    float hv = heat ? heat[(iy / ps->patch) * ps->grid + ix / ps->patch] : 0;
    uint8_t hc[3];
    as_colormap(u->v.cmap, hv, hc);
    for (int c = 0; c < 3; c++) {
        float v = mode == IMG_IMAGE ? img[c] * 255 : mode == IMG_HEAT ? hc[c] : 0.45f * img[c] * 255 + 0.55f * hc[c];
        rgb[c] = (uint8_t)lrintf(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    return mode == IMG_IMAGE ? grey : mode == IMG_HEAT ? hv : 0.5f * grey + 0.5f * hv;
}

static const char *shade(float v, bool utf8)
{
    static const char *const u8[] = {" ", "\xe2\x96\x91", "\xe2\x96\x92", "\xe2\x96\x93", "\xe2\x96\x88"};
    static const char *const ascii[] = {" ", ".", ":", "+", "#"};
    int i = (int)lrintf(v * 4);
    i = i < 0 ? 0 : i > 4 ? 4 : i;
    return utf8 ? u8[i] : ascii[i];
}

static void draw_pixels(tui *u, WINDOW *w, const img_stream *st, const float *pixels, const img_geom *g,
                        const float *heat)
{
    bool colour = term_rgb_ok(&u->t) && g->sub == 2;
    for (int r = 0; r * g->sub < g->D; r++) {
        for (int px = 0; px < g->D; px++) {
            uint8_t top[3], bot[3];
            float vt = pixel(u, st, pixels, g, heat, px, r * g->sub, top), vb = vt;
            if (g->sub == 2 && r * 2 + 1 < g->D)
                vb = pixel(u, st, pixels, g, heat, px, r * 2 + 1, bot);
            else
                memcpy(bot, top, 3);
            if (colour && term_rgb(&u->t, w, top, bot)) {
                mvwaddstr(w, g->y0 + r, g->x0 + px, "\xe2\x96\x80"); /* upper half block */
                continue;
            }
            term_role(&u->t, w, R_NORMAL);
            for (int k = 0; k < g->pw; k++)
                mvwaddstr(w, g->y0 + r, g->x0 + px * g->pw + k, shade(0.5f * (vt + vb), u->t.utf8));
        }
    }
    term_role(&u->t, w, R_NORMAL);
}

/* The query's patch: its corners marked, so the image under it stays seen. */
static void mark_patch(tui *u, WINDOW *w, const img_stream *st, const img_geom *g, int q)
{
    if (q < 1)
        return;
    const as_patch_spec *ps = &st->patch;
    int pr = (q - 1) / ps->grid, pc = (q - 1) % ps->grid;
    int x0 = pc * ps->patch * g->D / ps->size, x1 = ((pc + 1) * ps->patch * g->D) / ps->size - 1;
    int y0 = pr * ps->patch * g->D / ps->size, y1 = ((pr + 1) * ps->patch * g->D) / ps->size - 1;
    term_role_attr(&u->t, w, R_LABEL_SEL, A_BOLD);
    const char *c = u->t.utf8 ? "\xe2\x97\x86" : "x"; /* ◆ */
    int cy = g->y0 + (y0 + y1) / 2 / g->sub, cx = g->x0 + ((x0 + x1) / 2) * g->pw;
    mvwaddstr(w, cy, cx, c);
    term_role(&u->t, w, R_NORMAL);
}

/* Every head of the layer, each a small image under its name (the
 * selected head's name highlighted), tiled as squarely as the pane allows. */
static void draw_grid(tui *u, WINDOW *w, const img_stream *st, const float *pixels, float *heat, int n_patch)
{
    int H = as_view_n_head(u->s), rows = getmaxy(w) - 3, cols = getmaxx(w) - 2;
    int sub = u->t.style == HM_HALF ? 2 : 1, pw = sub == 2 ? 1 : 2, best = 0, tx = 1;
    for (int c = 1; c <= H; c++) { /* the tiling whose tiles are largest */
        int r = (H + c - 1) / c, d = (cols - (c - 1)) / c / pw, dh = (rows / r - 1) * sub;
        d = d < dh ? d : dh;
        if (d > best)
            best = d, tx = c;
    }
    if (best < 2) {
        pane_message(u, P_IMAGE, "Too small for every head: g goes back to one head.");
        return;
    }
    int tile_h = (best + sub - 1) / sub + 1;
    for (int h = 0; h < H; h++) {
        float max;
        bool have = patch_heat(u, h, u->v.query, heat, n_patch, &max);
        img_geom g = {best, pw, sub, 1 + (h / tx) * tile_h + 1, 1 + (h % tx) * (best * pw + 1)};
        char name[16];
        snprintf(name, sizeof name, "h%d", h);
        term_role(&u->t, w, h == u->v.head ? R_LABEL_SEL : R_TITLE);
        put_text(u, w, g.y0 - 1, g.x0, name, best * pw);
        draw_pixels(u, w, st, pixels, &g, have ? heat : NULL);
    }
    term_role(&u->t, w, R_HINT);
    put_text(u, w, getmaxy(w) - 2, 1, "every head, each on its own scale (i: mode)", getmaxx(w) - 2);
    term_role(&u->t, w, R_NORMAL);
}

static void draw(tui *u)
{
    WINDOW *w = u->win[P_IMAGE];
    const as_session *s = u->s;
    int si = pixel_stream(s);
    img_stream st_ = stream_of(s, si);
    const img_stream *st = &st_;
    char title[128], q[32], note[32];
    snprintf(note, sizeof note, "i: %s", mode_name[u->v.image_mode]);
    if (as_view_n_tokens(s) == 0) {
        pane_frame(u, P_IMAGE, "Image", note);
        pane_message(u, P_IMAGE, "No image yet:  :image FILE");
        wnoutrefresh(w);
        return;
    }
    token_label(u, u->v.query, q, sizeof q);
    snprintf(title, sizeof title, "Image  L%d H%d  %s", u->v.layer, u->v.head, q);
    pane_frame(u, P_IMAGE, title, NULL);
    int n_patch = st->patch.grid * st->patch.grid;
    float *heat = malloc((size_t)n_patch * sizeof *heat), max = 0;
    term_rgb_reset(&u->t);
    if (u->v.grid && heat) {
        draw_grid(u, w, st, as_view_stream_pixels(s, si), heat, n_patch);
        free(heat);
        wnoutrefresh(w);
        return;
    }
    bool have = heat && patch_heat(u, u->v.head, u->v.query, heat, n_patch, &max);
    img_geom g = geometry(u, w);
    draw_pixels(u, w, st, as_view_stream_pixels(s, si), &g, have ? heat : NULL);
    mark_patch(u, w, st, &g, u->v.query);
    char line[160];
    if (have)
        snprintf(line, sizeof line, "%s (i)  max %.3f, CLS %.3f", mode_name[u->v.image_mode], (double)max,
                 (double)as_capture_attn(as_view_capture(s), as_program_hook(as_view_program(s), AS_HK_PATTERN, u->v.layer), u->v.head,
                                         u->v.query, 0));
    else
        snprintf(line, sizeof line, "image; heat after  f  (finish)");
    term_role(&u->t, w, R_HINT);
    put_text(u, w, getmaxy(w) - 2, 1, line, getmaxx(w) - 2);
    term_role(&u->t, w, R_NORMAL);
    free(heat);
    wnoutrefresh(w);
}

/* A click on a patch selects it as the query (on the image's border: CLS). */
static unsigned mouse(tui *u, int y, int x, mmask_t buttons)
{
    if (!(buttons & (BUTTON1_PRESSED | BUTTON1_CLICKED)))
        return RD_IGNORED;
    const as_session *s = u->s;
    int si = pixel_stream(s);
    if (si < 0 || as_view_n_tokens(s) == 0)
        return RD_IGNORED;
    img_stream st_ = stream_of(s, si);
    const img_stream *st = &st_;
    img_geom g = geometry(u, u->win[P_IMAGE]);
    int px = (x - g.x0) / g.pw, py = (y - g.y0) * g.sub;
    if (px < 0 || py < 0 || px >= g.D || py >= g.D)
        return tui_select_query(u, 0);
    int ix = px * st->patch.size / g.D, iy = py * st->patch.size / g.D;
    return tui_select_query(u, 1 + (iy / st->patch.patch) * st->patch.grid + ix / st->patch.patch);
}

const pane_class pane_image = {
    .name = "Image",
    .shows = SHOWS_LAYER | SHOWS_HEAD | SHOWS_QUERY | SHOWS_LOOK | SHOWS_DATA,
    .focusable = false,
    .applies = applies,
    .draw = draw,
    .mouse = mouse,
};
