/* The full-screen view's logic without a terminal: pane layout at the
 * sizes a classroom meets (and below the minimum), the heatmap's cell
 * grid (fit, scrolling, half blocks, masked cells, small multiples),
 * colours mapped to the 256-colour cube, token pieces, bars, sparklines,
 * wrapping, the log, the view's commands and completion's reading of
 * usage lines. */
#include <criterion/criterion.h>
#include <locale.h>
#include <math.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../ui/heatmap.h"
#include "../ui/layout.h"
#include "../ui/logbuf.h"
#include "../ui/palette.h"
#include "../ui/textfmt.h"
#include "../ui/usage.h"
#include "../ui/view.h"
#include "attnscope/colormap.h"
#include "helpers.h"

static void utf8(void)
{
    cr_assert_not_null(setlocale(LC_CTYPE, "C.UTF-8"), "the C.UTF-8 locale is needed");
}

/* ---- layout ---- */

static bool overlap(rect a, rect b)
{
    return a.h > 0 && b.h > 0 && a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

static void check_tiling(const layout *l)
{
    for (int p = 0; p < P_COUNT; p++) {
        rect r = l->r[p];
        if (r.h == 0)
            continue;
        cr_assert(r.y >= 0 && r.x >= 0 && r.y + r.h <= l->rows && r.x + r.w <= l->cols, "pane %d outside", p);
        for (int q = p + 1; q < P_COUNT; q++)
            cr_assert(!overlap(r, l->r[q]), "panes %d and %d overlap", p, q);
    }
}

Test(tui_layout, projector_size_shows_every_pane_and_the_heatmap_is_largest)
{
    layout l;
    layout_compute(&l, 48, 160, P_PROBS);
    cr_assert(!l.too_small);
    cr_assert(!l.shared);
    check_tiling(&l);
    /* the image pane is a vision model's, the routing pane a MoE's: absent here; the arithmetic only when asked */
    for (int p = 0; p < P_COUNT; p++)
        cr_assert(p == P_IMAGE || p == P_ROUTE || PANE_IS_WIDE(p) ? l.r[p].h == 0 : l.r[p].h > 0, "pane %d %s at 160x48", p,
                  p == P_IMAGE || p == P_ROUTE || PANE_IS_WIDE(p) ? "shown unasked" : "hidden");
    int attn = l.r[P_ATTN].h * l.r[P_ATTN].w;
    for (int p = 0; p < P_COUNT; p++)
        if (p != P_ATTN)
            cr_assert_gt(attn, l.r[p].h * l.r[p].w, "pane %d is larger than the heatmap", p);
    cr_assert_eq(l.r[P_CMD].y, 47);
    cr_assert_eq(l.r[P_STATUS].y, 46);
    cr_assert_eq(layout_pane_at(&l, l.r[P_ATTN].y + 3, 5), P_ATTN);
}

/* A vision model's image pane takes the right part of the heatmap's area
 * (as high as it, at most half its width, the heatmap at its left), on
 * wide screens and on a projector's 80x24 too; a terminal too short for
 * two rows of panes shows one pane at a time, and no image. */
Test(tui_layout, image_pane_beside_the_heatmap)
{
    layout l;
    unsigned all = LAYOUT_ALL;
    int sizes[][2] = {{35, 120}, {48, 160}, {30, 100}, {24, 80}};
    for (int i = 0; i < 4; i++) {
        layout_compute_for(&l, sizes[i][0], sizes[i][1], P_PROBS, all);
        check_tiling(&l);
        rect a = l.r[P_ATTN], im = l.r[P_IMAGE];
        cr_assert_gt(im.h, 0, "no image pane at %dx%d", sizes[i][1], sizes[i][0]);
        cr_assert_eq(im.y, a.y);
        cr_assert_eq(im.h, a.h);
        cr_assert_eq(im.x, a.x + a.w, "the image pane sits right of the heatmap");
        cr_assert_geq(a.w, im.w, "the heatmap keeps at least half");
        cr_assert_gt(l.r[P_PROBS].h, 0);
    }
    layout_compute_for(&l, 12, 60, P_PROBS, all);
    check_tiling(&l);
    cr_assert(l.single, "60x12 shows one pane at a time");
    cr_assert_eq(l.r[P_IMAGE].h, 0, "no image pane at 60x12");
}

/* A model with routed MLPs: the routing pane right of the heatmap, as
 * high as it, 32 columns or more but never over half the heatmap's area, at
 * 80x24, 100x30, 120x35 and 160x48; on a one-pane screen it shows alone
 * when asked for (its focus), else the heatmap does. Never with an image. */
Test(tui_layout, routing_pane_beside_the_heatmap)
{
    layout l;
    unsigned moe = LAYOUT_ALL & ~LAYOUT_PANE(P_IMAGE);
    int sizes[][2] = {{24, 80}, {30, 100}, {35, 120}, {48, 160}};
    for (int i = 0; i < 4; i++) {
        layout_compute_for(&l, sizes[i][0], sizes[i][1], P_PROBS, moe);
        check_tiling(&l);
        rect a = l.r[P_ATTN], r = l.r[P_ROUTE];
        cr_assert_gt(r.h, 0, "no routing pane at %dx%d", sizes[i][1], sizes[i][0]);
        cr_assert_eq(r.y, a.y);
        cr_assert_eq(r.h, a.h);
        cr_assert_eq(r.x, a.x + a.w, "the routing pane sits right of the heatmap");
        cr_assert(r.w >= 32 || r.w == (a.w + r.w) / 2, "%d columns at %dx%d", r.w, sizes[i][1], sizes[i][0]);
        cr_assert_geq(a.w, r.w, "the heatmap keeps at least half");
        cr_assert_eq(l.r[P_IMAGE].h, 0);
        cr_assert_gt(l.r[P_PROBS].h, 0);
    }
    layout_compute_for(&l, 14, 60, P_ROUTE, moe);
    check_tiling(&l);
    cr_assert(l.single);
    cr_assert_gt(l.r[P_ROUTE].h, 0, "a one-pane screen shows the routing pane when it is asked for");
    cr_assert_eq(l.r[P_ATTN].h, 0);
    layout_compute_for(&l, 14, 60, P_ATTN, moe);
    cr_assert_eq(l.r[P_ROUTE].h, 0);
    cr_assert_gt(l.r[P_ATTN].h, 0);
    layout_compute_for(&l, 35, 120, P_PROBS, LAYOUT_ALL);
    cr_assert_eq(l.r[P_ROUTE].h, 0, "no routing pane beside an image");
}

/* `view math`: the arithmetic takes the side stack over the log on a wide
 * screen (wider than the stack is otherwise), the shared slot on a small
 * one (taller than the other side panes get it), the body on the
 * smallest; only when it is the pane shown. */
Test(tui_layout, math_pane_where_asked)
{
    unsigned present = LAYOUT_ALL & ~LAYOUT_PANE(P_IMAGE) & ~LAYOUT_PANE(P_ROUTE);
    layout l, plain;
    int sizes[][2] = {{48, 160}, {35, 120}};
    for (int i = 0; i < 2; i++) {
        int rows = sizes[i][0], cols = sizes[i][1];
        layout_compute_for(&plain, rows, cols, P_PROBS, present);
        cr_assert_eq(plain.r[P_MATH].h, 0, "no arithmetic unasked at %dx%d", cols, rows);
        layout_compute_for(&l, rows, cols, P_MATH, present);
        check_tiling(&l);
        cr_assert_gt(l.r[P_MATH].h, l.r[P_LOG].h, "the arithmetic over a short log at %dx%d", cols, rows);
        cr_assert_gt(l.r[P_MATH].w, plain.r[P_PROBS].w, "the arithmetic's stack wider at %dx%d", cols, rows);
        cr_assert_eq(l.r[P_PROBS].h + l.r[P_LENS].h + l.r[P_NORMS].h, 0, "the stack is the arithmetic's");
        cr_assert_gt(l.r[P_ATTN].w, 0, "the heatmap beside it");
    }
    layout_compute_for(&plain, 24, 80, P_LENS, present);
    layout_compute_for(&l, 24, 80, P_MATH, present);
    check_tiling(&l);
    cr_assert(l.shared && l.shown == P_MATH, "80x24: the shared slot shows the arithmetic");
    cr_assert_eq(l.r[P_MATH].w, 80);
    cr_assert_gt(l.r[P_MATH].h, plain.r[P_LENS].h, "80x24: the slot taller for the arithmetic");
    cr_assert_gt(l.r[P_ATTN].h, 5, "80x24: the heatmap keeps rows");
    layout_compute_for(&l, 14, 60, P_MATH, present);
    cr_assert(l.single && l.r[P_MATH].h > 0 && l.r[P_ATTN].h == 0, "one pane: the arithmetic alone");
}

Test(tui_layout, small_terminal_shares_one_slot)
{
    layout l;
    for (pane_id shown = P_PROBS; shown <= P_LOG; shown++) {
        layout_compute(&l, 20, 60, shown);
        cr_assert(!l.too_small);
        cr_assert(l.shared);
        check_tiling(&l);
        cr_assert_gt(l.r[P_ATTN].h, 0);
        cr_assert_gt(l.r[shown].h, 0);
        for (pane_id p = P_PROBS; p <= P_LOG; p++)
            if (p != shown)
                cr_assert_eq(l.r[p].h, 0, "pane %d shown beside %d", p, shown);
    }
    layout_compute(&l, 20, 130, P_NORMS); /* wide but short */
    cr_assert(l.shared);
    cr_assert_gt(l.r[P_NORMS].h, 0);
    check_tiling(&l);
}

Test(tui_layout, below_the_minimum_only_a_notice)
{
    layout l;
    layout_compute(&l, 5, 20, P_PROBS);
    cr_assert(l.too_small);
    for (int p = 0; p < P_COUNT; p++)
        cr_assert_eq(l.r[p].h, 0);
    layout_compute(&l, LAYOUT_MIN_H, LAYOUT_MIN_W, P_PROBS);
    cr_assert(!l.too_small);
    check_tiling(&l);
    layout_compute(&l, LAYOUT_MIN_H, LAYOUT_MIN_W - 1, P_PROBS);
    cr_assert(l.too_small);
}

/* ---- heatmap ---- */

Test(tui_heatmap, short_context_gets_large_square_cells)
{
    hm_geom g = {0};
    hm_fit(&g, 10, 10, 40, 80, 2, 16);
    cr_assert_eq(g.ch, 8);
    cr_assert_eq(g.cw, 8, "with half blocks a sub-row is as tall as a column is wide");
    cr_assert_eq(g.vis_q, 10);
    cr_assert_eq(g.vis_k, 10);
    hm_fit(&g, 10, 10, 40, 80, 1, 16);
    cr_assert_eq(g.cw, 2 * g.ch, "one row per character: two columns make a square");
    hm_fit(&g, 2, 2, 40, 80, 2, 12);
    cr_assert_eq(g.ch, 12, "zoom capped");
    hm_fit(&g, 39, 39, 32, 78, 2, 16);
    cr_assert_eq(g.ch, 1);
    cr_assert_eq(g.cw, 2, "wider cells fill the pane, up to 2:1");
    hm_fit(&g, 39, 39, 20, 200, 2, 16);
    cr_assert_eq(g.cw, 2, "never more than 2:1");
    hm_fit(&g, 10, 10, 100, 10, 2, 16);
    cr_assert_eq(g.cw, 1);
    cr_assert_eq(g.ch, 2, "nor taller than 2:1");
}

/* A context a little longer than the rows (26 tokens, 25 rows at 120x35):
 * a query a sub-row filled 13 rows and left 12 empty; now each query has
 * a row of its own but the first 2 x 1, two to a row, and all show. */
Test(tui_heatmap, a_context_just_over_the_rows_fills_them)
{
    hm_geom g = {0};
    hm_fit(&g, 26, 26, 25, 54, 2, 16);
    cr_assert_eq(g.ch, 1);
    cr_assert_eq(hm_rows_used(&g), 13, "a query a sub-row: half the rows");
    hm_fill_rows(&g);
    cr_assert_eq(g.shared, 1);
    cr_assert_eq(hm_rows_used(&g), 25);
    cr_assert_eq(g.vis_q, 26);
    cr_assert_eq(g.cw, 2, "the columns as before");
    int sub = 0;
    for (int q = 0; q < 26; q++) {
        cr_assert_eq(hm_query_subrow(&g, q), sub, "query %d", q);
        cr_assert_eq(hm_query_height(&g, q), q < 2 ? 1 : 2);
        for (int i = 0; i < hm_query_height(&g, q); i++)
            cr_assert_eq(hm_query_at(&g, sub + i), q);
        sub += hm_query_height(&g, q);
    }
    cr_assert_eq(sub, 50, "every sub-row of the 25 rows");
    cr_assert_eq(hm_query_at(&g, 50), -1);
    hm_follow(&g, 25, 25);
    cr_assert_eq(g.q0, 0, "nothing scrolls");
    /* not when a query a sub-row already fills two thirds, nor with one
     * sub-row a character, nor when the queries outnumber the sub-rows */
    hm_fit(&g, 40, 40, 25, 54, 2, 16);
    hm_fill_rows(&g);
    cr_assert_eq(g.shared, 0);
    hm_fit(&g, 26, 26, 25, 54, 1, 16);
    hm_fill_rows(&g);
    cr_assert_eq(g.shared, 0);
    hm_fit(&g, 26, 26, 8, 54, 2, 16);
    hm_fill_rows(&g);
    cr_assert_eq(g.shared, 0);
    hm_fit(&g, 26, 26, 25, 54, 2, 16);
    cr_assert_eq(g.shared, 0, "a refit starts uniform");
}

/* The labels take what the cells leave: the query labels the columns
 * right of the map, the key labels the rows free above it. */
Test(tui_heatmap, labels_get_the_room_the_map_leaves)
{
    cr_assert_eq(hm_label_cols(14, 17, 78, 52), 17, "80x24: 12 columns free, 3 of them wanted");
    cr_assert_eq(hm_label_cols(14, 17, 68, 52), 16, "2 free");
    cr_assert_eq(hm_label_cols(14, 17, 66, 52), 14, "none free");
    cr_assert_eq(hm_label_cols(14, 10, 78, 20), 14, "never shrinks");
    cr_assert_eq(hm_key_rows(8, 7, 7, 0), 1, "pieces across when each fits its key");
    cr_assert_eq(hm_key_rows(3, 7, 6, 11), 3, "·Wasser over 3-column keys: 3 rows of 8");
    cr_assert_eq(hm_key_rows(3, 13, 6, 14), 5, "<|endoftext|>: 5 rows of 14");
    cr_assert_eq(hm_key_rows(2, 13, 1, 4), 1, "one <|endoftext|> among letters: one row, it alone cut");
    cr_assert_eq(hm_key_rows(3, 13, 7, 3), 3, "else the rows the typical piece needs");
    cr_assert_eq(hm_key_rows(3, 7, 7, 1), 2, "fewer rows free: 2 rows, pieces cut to 5");
    cr_assert_eq(hm_key_rows(2, 7, 7, 1), 0, "3 columns is no piece: numbers");
    cr_assert_eq(hm_key_rows(2, 7, 7, 0), 0);
    cr_assert_eq(hm_key_rows(6, 9, 9, 0), 1, "no row free, wide keys: cut pieces across");
    cr_assert_eq(hm_key_rows(1, 7, 5, 20), 0, "one column a key: numbers, however many rows are free");
    cr_assert_eq(hm_key_rows(0, 7, 7, 5), 0);
}

Test(tui_heatmap, long_context_scrolls_to_the_cursor)
{
    hm_geom g = {0};
    hm_fit(&g, 200, 200, 20, 50, 2, 16);
    cr_assert_eq(g.ch, 1);
    cr_assert_eq(g.cw, 1);
    cr_assert_eq(g.vis_q, 40);
    cr_assert_eq(g.vis_k, 50);
    hm_follow(&g, 150, 120);
    cr_assert(g.q0 <= 150 && 150 < g.q0 + g.vis_q);
    cr_assert(g.k0 <= 120 && 120 < g.k0 + g.vis_k);
    cr_assert_eq(hm_query_at(&g, hm_query_subrow(&g, 150)), 150);
    cr_assert_eq(hm_key_at(&g, hm_key_col(&g, 120)), 120);
    int q0 = g.q0;
    hm_follow(&g, 149, 120);
    cr_assert_eq(g.q0, q0, "no scrolling while the cursor stays visible");
    hm_follow(&g, 199, 199);
    cr_assert_eq(g.q0 + g.vis_q, 200, "never past the end");
    hm_fit(&g, 200, 200, 20, 50, 2, 16);
    cr_assert_eq(g.q0 + g.vis_q, 200, "a refit keeps the scroll position");
    cr_assert_eq(hm_query_at(&g, -1), -1);
    cr_assert_eq(hm_key_at(&g, 50), -1);
}

static hm_sample causal(void *ctx, int q, int k)
{
    (void)ctx;
    hm_sample s = {k > q ? HM_MASKED : HM_VALUE, k > q ? 0 : (float)k / (float)(q + 1)};
    return s;
}

Test(tui_heatmap, half_blocks_carry_two_rows_and_masked_differs_from_zero)
{
    hm_geom g = {0};
    hm_fit(&g, 4, 4, 2, 4, 2, 1);
    hm_sample cells[2 * 2 * 4];
    hm_fill(&g, causal, NULL, cells);
    /* Character (0, 1): query 0 over query 1 at key 1: masked over a value. */
    hm_glyph gl = hm_glyph_at(HM_HALF, cells[0 * 4 + 1], cells[1 * 4 + 1], 64);
    cr_assert_str_eq(gl.text, "▀");
    cr_assert_eq(gl.fg, HM_SLOT_MASKED(64));
    cr_assert_eq(gl.bg, 32, "0.5 on a 64-step scale");
    /* Key 0 is zero at every query: a colour of the scale, not the masked one. */
    hm_glyph zero = hm_glyph_at(HM_HALF, cells[0], cells[4], 64);
    cr_assert_eq(zero.fg, 0);
    cr_assert_neq(zero.fg, HM_SLOT_MASKED(64));
    hm_sample z = {HM_VALUE, 0}, m = {HM_MASKED, 0}, one = {HM_VALUE, 1};
    cr_assert_str_neq(hm_glyph_at(HM_SHADE, z, z, 5).text, hm_glyph_at(HM_SHADE, m, m, 5).text);
    cr_assert_str_neq(hm_glyph_at(HM_ASCII, z, z, 5).text, hm_glyph_at(HM_ASCII, m, m, 5).text);
    cr_assert_str_eq(hm_glyph_at(HM_SHADE, one, one, 5).text, "█");
    cr_assert_eq(hm_glyph_at(HM_BLOCK, one, one, 64).bg, 63);
    hm_sample nan = {HM_VALUE, NAN};
    cr_assert_eq(hm_slot(nan, 64), 0);
}

/* A cell not computed yet is never drawn as a weight: in the glyph styles
 * (no colour) it differs from zero, from the masked cell and from every
 * level; in the coloured styles it takes its own slot. */
Test(tui_heatmap, pending_cells_differ_from_every_weight_in_every_style)
{
    hm_sample p = {HM_PENDING, 0}, m = {HM_MASKED, 0};
    static const hm_style glyph_styles[] = {HM_SHADE, HM_ASCII};
    for (int i = 0; i < 2; i++) {
        hm_style st = glyph_styles[i];
        const char *pt = hm_glyph_at(st, p, p, 5).text;
        cr_assert_str_neq(pt, hm_glyph_at(st, m, m, 5).text, "style %d", st);
        for (int level = 0; level <= 4; level++) {
            hm_sample v = {HM_VALUE, (float)level / 4.0f};
            cr_assert_str_neq(pt, hm_glyph_at(st, v, v, 5).text, "style %d level %d", st, level);
        }
    }
    cr_assert_eq(hm_glyph_at(HM_BLOCK, p, p, 64).bg, HM_SLOT_PENDING(64));
    hm_glyph half = hm_glyph_at(HM_HALF, p, (hm_sample){HM_VALUE, 0}, 64);
    cr_assert_eq(half.fg, HM_SLOT_PENDING(64));
    cr_assert_eq(half.bg, 0);
}

Test(tui_heatmap, grid_places_every_head_once)
{
    hm_grid gr = hm_grid_arrange(8, 12, 40, 96, 2);
    cr_assert_geq(gr.tx * gr.ty, 8);
    cr_assert_leq(gr.ty * gr.tile_rows, 40);
    cr_assert_leq(gr.tx * gr.tile_cols + gr.tx - 1, 96);
    bool seen[8] = {0};
    for (int h = 0; h < 8; h++) {
        int y, x;
        hm_grid_origin(&gr, h, &y, &x);
        int at = hm_grid_tile_at(&gr, y + 1, x);
        cr_assert_eq(at, h);
        seen[h] = true;
    }
    for (int h = 0; h < 8; h++)
        cr_assert(seen[h]);
    cr_assert_eq(hm_grid_tile_at(&gr, 0, gr.tile_cols), -1, "the gap between tiles");
    /* A wide area prefers tiles side by side; a tall one, stacked. */
    hm_grid wide = hm_grid_arrange(4, 10, 12, 200, 2), tall = hm_grid_arrange(4, 10, 120, 30, 2);
    cr_assert_gt(wide.tx, wide.ty);
    cr_assert_gt(tall.ty, tall.tx);
}

/* ---- colours ---- */

Test(tui_palette, nearest_256_colours)
{
    static const uint8_t red[3] = {255, 0, 0}, black[3] = {0, 0, 0}, white[3] = {255, 255, 255},
                         grey[3] = {128, 128, 128}, steel[3] = {95, 135, 175};
    cr_assert_eq(pal_nearest_256(red), 196);
    cr_assert_eq(pal_nearest_256(black), 16);
    cr_assert_eq(pal_nearest_256(white), 231);
    cr_assert_eq(pal_nearest_256(grey), 244);
    cr_assert_eq(pal_nearest_256(steel), 67);
    uint8_t rgb[3];
    for (int i = 16; i < 256; i++) {
        pal_256_rgb(i, rgb);
        cr_assert_eq(pal_nearest_256(rgb), i, "colour %d maps to itself", i);
    }
    pal_256_rgb(196, rgb);
    cr_assert(rgb[0] == 255 && rgb[1] == 0 && rgb[2] == 0);
    pal_256_rgb(232, rgb);
    cr_assert_eq(rgb[0], 8);
    cr_assert_eq(pal_direct(red), 0xff0000);
    cr_assert(pal_is_light(white));
    cr_assert(!pal_is_light(black));
}

Test(tui_palette, colormaps_fit_the_cube_without_getting_darker)
{
    for (int c = 0; c < AS_CMAP_COUNT; c++) {
        uint8_t ramp[64][3];
        int idx[64];
        for (int i = 0; i < 64; i++)
            as_colormap((as_cmap)c, (float)i / 63.0f, ramp[i]);
        cr_assert_eq(pal_ramp_256((const uint8_t(*)[3])ramp, 64, idx), 0);
        double prev = -1;
        for (int i = 0; i < 64; i++) {
            uint8_t rgb[3];
            cr_assert(idx[i] >= 16 && idx[i] <= 255);
            pal_256_rgb(idx[i], rgb);
            double l = pal_lightness(rgb);
            cr_assert_geq(l, prev - 1e-9, "%s: level %d darker than level %d", as_cmap_name((as_cmap)c), i, i - 1);
            prev = l;
        }
        cr_assert_neq(idx[0], idx[63]);
    }
    uint8_t v0[3], v1[3];
    as_colormap(AS_CMAP_VIRIDIS, 0, v0);
    as_colormap(AS_CMAP_VIRIDIS, 1, v1);
    int ends[2];
    const uint8_t two[2][3] = {{v0[0], v0[1], v0[2]}, {v1[0], v1[1], v1[2]}};
    pal_ramp_256(two, 2, ends);
    cr_assert_eq(ends[0], 53, "viridis starts dark purple");
    cr_assert_eq(ends[1], 220, "and ends yellow");
}

/* ---- text ---- */

Test(tui_text, pieces_show_their_whitespace)
{
    utf8();
    char out[64];
    cr_assert_eq(tf_piece_visible(" the\n", 5, true, out, sizeof out), 5);
    cr_assert_str_eq(out, "·the↵");
    tf_piece_visible(" the\n", 5, false, out, sizeof out);
    cr_assert_str_eq(out, "_the$");
    cr_assert_eq(tf_piece_visible("\xC3", 1, true, out, sizeof out), 4);
    cr_assert_str_eq(out, "\\xC3");
    cr_assert_eq(tf_piece_visible("é\t", 3, true, out, sizeof out), 2);
    cr_assert_str_eq(out, "é→");
    tf_piece_visible("é", 2, false, out, sizeof out);
    cr_assert_str_eq(out, "\\xC3\\xA9", "no bytes above 127 outside UTF-8");
}

Test(tui_text, widths_and_cutting)
{
    utf8();
    char out[64];
    cr_assert_eq(tf_width("·a↵", true), 3);
    cr_assert_eq(tf_fit("abcdef", 4, true, out, sizeof out), 4);
    cr_assert_str_eq(out, "abc…");
    tf_fit("abcdef", 4, false, out, sizeof out);
    cr_assert_str_eq(out, "abc~");
    tf_fit("abcd", 4, true, out, sizeof out);
    cr_assert_str_eq(out, "abcd");
    tf_fit("ab", 0, true, out, sizeof out);
    cr_assert_str_eq(out, "");
    /* What the terminal cannot show as it is, it is shown escaped. */
    cr_assert_eq(tf_fit("a\x01" "b", 10, true, out, sizeof out), 6);
    cr_assert_str_eq(out, "a\\x01b");
    cr_assert_eq(tf_width("caf\xE9", true), 7, "invalid UTF-8");
    cr_assert_eq(tf_width("caf\xE9", false), 7, "a byte the locale cannot print");
    tf_fit("caf\xE9", 10, false, out, sizeof out);
    cr_assert_str_eq(out, "caf\\xE9");
}

Test(tui_text, bars_in_eighths)
{
    utf8();
    char out[128];
    tf_bar(0.5, 4, true, out, sizeof out);
    cr_assert_str_eq(out, "██");
    tf_bar(17.0 / 32.0, 4, true, out, sizeof out); /* 2 cells and 1/8 */
    cr_assert_str_eq(out, "██▏");
    tf_bar(1.0 / 64.0, 2, true, out, sizeof out);
    cr_assert_str_eq(out, "", "under half an eighth rounds to nothing");
    tf_bar(0.5, 4, false, out, sizeof out);
    cr_assert_str_eq(out, "##");
    tf_bar(2.0, 3, true, out, sizeof out);
    cr_assert_str_eq(out, "███", "clamped");
}

Test(tui_text, sparkline_scales_between_extremes)
{
    utf8();
    float v[5] = {1, 2, 3, 8, NAN};
    char out[64];
    tf_spark(v, 5, true, out, sizeof out);
    cr_assert_str_eq(out, "▁▂▃█?");
    tf_spark(v, 4, false, out, sizeof out);
    cr_assert_eq(out[0], '_');
    cr_assert_eq(out[3], '@');
    float flat[2] = {3, 3};
    tf_spark(flat, 2, true, out, sizeof out);
    cr_assert_str_eq(out, "▁▁");
}

Test(tui_text, table_rows_align_their_cells)
{
    utf8();
    const char *rows[] = {"layer\t0\t1", "embed\t·truth\tIt", "10\t,\t·is"};
    int widths[TF_TABLE_COLS] = {0};
    for (int i = 0; i < 3; i++)
        tf_table_widths(rows[i], true, widths, TF_TABLE_COLS);
    cr_assert_eq(widths[0], 5);
    cr_assert_eq(widths[1], 6, "columns, not bytes: ·truth is 6 wide");
    cr_assert_eq(widths[2], 3);
    char out[128];
    tf_table_format(rows[2], widths, TF_TABLE_COLS, true, out, sizeof out);
    cr_assert_str_eq(out, "10     ,       ·is");
    tf_table_format(rows[1], widths, TF_TABLE_COLS, true, out, sizeof out);
    cr_assert_str_eq(out, "embed  ·truth  It");
    cr_assert_str_eq(tf_skip_cols(out, 8, true), "truth  It", "skips display columns");
    cr_assert_str_eq(tf_skip_cols("ab", 5, true), "");
}

Test(tui_text, wrapping_prefers_spaces)
{
    utf8();
    int starts[8];
    cr_assert_eq(tf_wrap("hello world foo", 8, true, starts, 8), 3);
    cr_assert_eq(starts[1], 6);
    cr_assert_eq(starts[2], 12);
    cr_assert_eq(tf_wrap("abcdefghij", 4, true, starts, 8), 3, "no space: hard breaks");
    cr_assert_eq(starts[1], 4);
    cr_assert_eq(tf_wrap("", 4, true, starts, 8), 1);
    cr_assert_eq(tf_wrap("·····", 2, true, starts, 8), 3, "columns, not bytes");
}

Test(tui_text, token_strip_wraps_and_follows_the_selection)
{
    int widths[5] = {3, 3, 3, 5, 1}, row[5], col[5];
    cr_assert_eq(tf_strip_layout(widths, 5, 7, 0, row, col), 3);
    cr_assert(row[0] == 0 && row[1] == 0 && row[2] == 1 && row[3] == 2 && row[4] == 2);
    cr_assert_eq(col[1], 3);
    cr_assert_eq(col[4], 5);
    tf_strip_layout(widths, 5, 7, 1, row, col);
    cr_assert_eq(col[1], 4, "gaps take room");
    cr_assert_eq(tf_scroll_follow(0, 5, 3, 10), 3);
    cr_assert_eq(tf_scroll_follow(3, 4, 3, 10), 3);
    cr_assert_eq(tf_scroll_follow(3, 1, 3, 10), 1);
    cr_assert_eq(tf_scroll_follow(9, 9, 3, 4), 1, "never past the end");
}

/* One row (80x24): chips scrolled whole around the selection, a marker
 * column where chips are hidden, a chip or two of movement per step. */
Test(tui_text, one_row_strip_scrolls_by_chip_with_context)
{
    enum { N = 30 };
    int widths[N], col[N], last;
    for (int i = 0; i < N; i++)
        widths[i] = 4;
    widths[7] = 9;
    /* 30 chips of ~4 in 40 columns, a quarter of it (10) as context */
    int first = tf_strip_window(widths, N, 40, 0, 0, 0, 10, &last, col);
    cr_assert_eq(first, 0);
    cr_assert_eq(col[0], 0, "no left marker at the start");
    cr_assert_eq(last, 7, "chips 0..7 (4*7+9 = 37) fit before the right marker's column");
    cr_assert_eq(col[8], -1);
    int prev = first;
    for (int sel = 0; sel < N; sel++) {
        first = tf_strip_window(widths, N, 40, 0, sel, prev, 10, &last, col);
        cr_assert(first <= sel && sel <= last, "sel %d shows (%d..%d)", sel, first, last);
        cr_assert_geq(col[sel], first > 0 ? 1 : 0);
        cr_assert_leq(col[last] + widths[last] + (last < N - 1 ? 1 : 0), 40, "whole chips and the marker fit");
        int left = col[sel] - (first > 0 ? 1 : 0), right = col[last] + widths[last] - col[sel] - widths[sel];
        cr_assert(first == 0 || left >= 10, "sel %d: %d columns of context at the left", sel, left);
        cr_assert(last == N - 1 || right >= 10, "sel %d: %d columns of context at the right", sel, right);
        cr_assert_leq(first - prev, 3, "sel %d: a chip or three, never a row (%d -> %d)", sel, prev, first);
        prev = first;
    }
    cr_assert_eq(last, N - 1, "the end reached");
    cr_assert_gt(col[N - 1] + widths[N - 1] + widths[first - 1] - (first - 1 > 0 ? 0 : 1), 40,
                 "no room left at the end for the chip before the first");
    /* back to the start a step at a time, then a jump back from the end */
    for (int sel = N - 1; sel >= 0; sel--) {
        first = tf_strip_window(widths, N, 40, 0, sel, prev, 10, &last, col);
        cr_assert(first <= sel && sel <= last);
        cr_assert_leq(prev - first, 3, "sel %d: %d -> %d", sel, prev, first);
        prev = first;
    }
    cr_assert_eq(first, 0);
    /* everything fits: no scrolling, no markers */
    first = tf_strip_window(widths, 5, 40, 1, 4, 3, 10, &last, col);
    cr_assert(first == 0 && last == 4 && col[4] == 20, "gaps take room: 4 * (4 + 1)");
    /* a chip wider than the row shows alone, from the left marker */
    widths[3] = 60;
    first = tf_strip_window(widths, N, 40, 0, 3, 0, 10, &last, col);
    cr_assert(first == 3 && last == 3 && col[3] == 1);
}

/* ---- log ---- */

Test(tui_log, lines_join_wrap_around_and_expand_tabs)
{
    logbuf b;
    log_init(&b, 3);
    log_add(&b, LOG_OUT, "par", 3);
    log_add(&b, LOG_OUT, "tial\nnext\n", 10);
    cr_assert_eq(b.count, 2);
    cr_assert_str_eq(log_get(&b, 0)->text, "partial");
    log_addf(&b, LOG_ERROR, "e%d", 1);
    log_addf(&b, LOG_OUT, "a\tb");
    cr_assert_eq(b.count, 3, "bounded");
    cr_assert_str_eq(log_get(&b, 0)->text, "next");
    cr_assert_eq(log_get(&b, 1)->kind, LOG_ERROR);
    cr_assert_str_eq(log_get(&b, 2)->text, "a       b");
    log_add(&b, LOG_OUT, "unfinished", 10);
    log_flush(&b);
    cr_assert_str_eq(log_get(&b, 2)->text, "unfinished");
    cr_assert_null(log_get(&b, 3));
    log_free(&b);
}

/* ---- the view's commands and completion ---- */

Test(tui_view, view_commands_sit_in_front_of_the_session)
{
    as_session *s = open_session("fixtures/tiny-gpt2.gguf", 64);
    view v;
    view_init(&v);
    as_error err = {{0}};
    bool changed = false;
    cr_assert_eq(view_exec(&v, s, "set delay 250", &changed, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(v.delay_ms, 250);
    cr_assert(changed);
    cr_assert_eq(view_exec(&v, s, "set cmap magma", &changed, &err), AS_OK);
    cr_assert_eq(v.cmap, AS_CMAP_MAGMA);
    cr_assert_eq(view_exec(&v, s, "set cmap plaid", &changed, &err), AS_ERR);
    cr_assert(strstr(err.msg, "plaid"));
    cr_assert_eq(view_exec(&v, s, "set temp 0", &changed, &err), AS_OK, "the session's settings still work");
    cr_assert(!changed);
    cr_assert_eq(view_exec(&v, s, "prompt-ids 1 2 3 4", NULL, &err), AS_OK);
    cr_assert_eq(view_exec(&v, s, "view layer 1", &changed, &err), AS_OK);
    cr_assert_eq(v.layer, 1);
    cr_assert_eq(view_exec(&v, s, "view layer 2", NULL, &err), AS_ERR, "tiny-gpt2 has 2 layers");
    cr_assert_eq(view_exec(&v, s, "view pos 1", NULL, &err), AS_OK);
    cr_assert_eq(v.query, 1);
    cr_assert(!v.follow);
    cr_assert_eq(view_exec(&v, s, "view pos last", NULL, &err), AS_OK);
    view_clamp(&v, s);
    cr_assert_eq(v.query, 3);
    cr_assert_eq(view_exec(&v, s, "view norm final", NULL, &err), AS_OK);
    cr_assert_eq(v.norm, NK_FINAL);
    cr_assert_eq(view_exec(&v, s, "view grid on", NULL, &err), AS_OK);
    cr_assert(v.grid);
    cr_assert_eq(view_exec(&v, s, "frobnicate", NULL, &err), AS_ERR);
    close_session(s);
}

static int fake_dump(void *ctx, const char *path, as_error *err)
{
    snprintf(ctx, 64, "%s", path);
    return AS_OK;
}

Test(tui_view, view_dump_needs_a_screen_and_completes_a_file)
{
    as_session *s = open_session("fixtures/tiny-gpt2.gguf", 64);
    view v;
    view_init(&v);
    as_error err = {{0}};
    cr_assert_eq(view_exec(&v, s, "view dump screen.txt", NULL, &err), AS_ERR, "no screen outside the view");
    cr_assert(strstr(err.msg, "full-screen view"), "%s", err.msg);
    char got[64] = "";
    v.dump = fake_dump;
    v.dump_ctx = got;
    bool changed = true;
    cr_assert_eq(view_exec(&v, s, "view dump screen.txt", &changed, &err), AS_OK, "%s", err.msg);
    cr_assert_str_eq(got, "screen.txt");
    cr_assert(!changed, "a dump changes nothing shown");
    char lits[32][32];
    int n;
    char *words[] = {"view", "dump"};
    cr_assert(usage_arg_kind("view", words, 2, lits, 32, &n) & USAGE_FILE);
    close_session(s);
}

Test(tui_view, completion_reads_usage_lines)
{
    char lits[32][32];
    int n;
    char *dump[] = {"dump", "blocks.0.attn.hook_pattern"};
    cr_assert_eq(usage_arg_kind("dump", dump, 1, lits, 32, &n) & USAGE_HOOK, USAGE_HOOK);
    cr_assert_eq(usage_arg_kind("dump", dump, 2, lits, 32, &n) & USAGE_FILE, USAGE_FILE);
    char *set[] = {"set", "cmap"};
    cr_assert(usage_arg_kind("set", set, 1, lits, 32, &n) & USAGE_LITERAL);
    bool temp = false, delay = false;
    for (int i = 0; i < n; i++) {
        temp |= !strcmp(lits[i], "temp");
        delay |= !strcmp(lits[i], "delay");
    }
    cr_assert(temp && delay, "settings of the session and of the view");
    usage_arg_kind("set", set, 2, lits, 32, &n);
    bool magma = false;
    for (int i = 0; i < n; i++)
        magma |= !strcmp(lits[i], "magma");
    cr_assert(magma, "colormaps after set cmap");
    char *site[] = {"view", "site"};
    usage_arg_kind("view", site, 2, lits, 32, &n);
    int sites = 0;
    for (int i = 0; i < n; i++)
        sites += !strcmp(lits[i], "self") + !strcmp(lits[i], "cross") + !strcmp(lits[i], "encoder");
    cr_assert_eq(sites, 3, "view site self|cross|encoder completes (%d literals)", n);
    char *help[] = {"help"};
    cr_assert(usage_arg_kind("help", help, 1, lits, 32, &n) & USAGE_COMMAND);
    char *norms[] = {"norms"};
    usage_arg_kind("norms", norms, 1, lits, 32, &n);
    cr_assert(n >= 1 && !strcmp(lits[0], "final"));
    cr_assert_eq(usage_arg_kind("", NULL, 0, lits, 32, &n), USAGE_COMMAND);
    cr_assert_not_null(usage_command_at(0));
    const as_command_info *c;
    bool has_view = false;
    for (int i = 0; (c = usage_command_at(i)); i++)
        has_view |= !strcmp(c->name, "view");
    cr_assert(has_view);
}

Test(tui_layout, medium_height_lens_shares_the_probabilities_slot)
{
    /* 120x30: the side stack has room for three panes; the lens takes the
     * probabilities' place when it is the one asked for, and back. */
    layout l;
    layout_compute(&l, 30, 120, P_PROBS);
    cr_assert(!l.shared);
    check_tiling(&l);
    cr_assert_gt(l.r[P_PROBS].h, 0);
    cr_assert_eq(l.r[P_LENS].h, 0);
    cr_assert_gt(l.r[P_NORMS].h, 0);
    cr_assert_gt(l.r[P_LOG].h, 0);
    rect probs = l.r[P_PROBS];
    layout_compute(&l, 30, 120, P_LENS);
    check_tiling(&l);
    cr_assert_eq(l.r[P_PROBS].h, 0);
    cr_assert_eq(l.r[P_LENS].y, probs.y);
    cr_assert_eq(l.r[P_LENS].h, probs.h);
    cr_assert_gt(l.r[P_NORMS].h, 0);
    /* Tall enough: four panes, the lens between probabilities and norms. */
    layout_compute(&l, 48, 160, P_PROBS);
    cr_assert_eq(l.r[P_LENS].y, l.r[P_PROBS].y + l.r[P_PROBS].h);
    cr_assert_eq(l.r[P_NORMS].y, l.r[P_LENS].y + l.r[P_LENS].h);
    cr_assert_geq(l.r[P_LOG].h, 5, "the log keeps room to read");
}

Test(tui_layout, a_pane_that_does_not_apply_gets_no_place)
{
    /* A program without norms (say): at every size the norms pane has no
     * rectangle, the log takes its rows, and a shared slot asked to show
     * it shows another side pane. */
    unsigned no_norms = LAYOUT_ALL & ~LAYOUT_PANE(P_NORMS);
    layout all, l;
    layout_compute(&all, 48, 160, P_PROBS);
    layout_compute_for(&l, 48, 160, P_PROBS, no_norms);
    check_tiling(&l);
    cr_assert_eq(l.r[P_NORMS].h, 0);
    cr_assert_eq(l.r[P_LOG].y, all.r[P_NORMS].y, "the log moves up into the norms' place");
    cr_assert_eq(l.r[P_LOG].y + l.r[P_LOG].h, all.r[P_LOG].y + all.r[P_LOG].h);
    cr_assert_eq(l.r[P_LENS].y, all.r[P_LENS].y);
    layout_compute_for(&l, 30, 120, P_NORMS, no_norms);
    check_tiling(&l);
    cr_assert_eq(l.r[P_NORMS].h, 0);
    cr_assert_gt(l.r[P_PROBS].h, 0);
    cr_assert_gt(l.r[P_LOG].h, 0);
    layout_compute_for(&l, 24, 80, P_NORMS, no_norms);
    check_tiling(&l);
    cr_assert(l.shared);
    cr_assert_eq(l.r[P_NORMS].h, 0);
    cr_assert_eq(l.shown, P_PROBS, "the first side pane that applies");
    cr_assert_gt(l.r[P_PROBS].h, 0);
    /* No logits (an encoder without a head): the lens takes the first slot. */
    layout_compute_for(&l, 30, 120, P_PROBS, LAYOUT_ALL & ~LAYOUT_PANE(P_PROBS));
    check_tiling(&l);
    cr_assert_eq(l.r[P_PROBS].h, 0);
    cr_assert_gt(l.r[P_LENS].h, 0);
}

/* N steps through the norms the program has: a pre-LN model's ln1, ln2,
 * final; Gemma's post-norms between them. */
Test(tui_view, norms_the_program_has)
{
    as_session *g = open_session("fixtures/tiny-gpt2.gguf", 16), *m = open_session("fixtures/tiny-gemma2.gguf", 16);
    norm_kind k = NK_LN1;
    cr_assert_eq(k = view_norm_step(g->prog, 0, k, 1), NK_LN2);
    cr_assert_eq(k = view_norm_step(g->prog, 0, k, 1), NK_FINAL);
    cr_assert_eq(view_norm_step(g->prog, 0, k, 1), NK_LN1, "wraps round");
    cr_assert_eq(view_norm_step(g->prog, 0, NK_LN1, -1), NK_FINAL);
    cr_assert_lt(view_norm_hook(g->prog, 0, NK_LN1_POST), 0);
    k = NK_LN1;
    cr_assert_eq(k = view_norm_step(m->prog, 1, k, 1), NK_LN1_POST);
    cr_assert_eq(k = view_norm_step(m->prog, 1, k, 1), NK_LN2);
    cr_assert_eq(k = view_norm_step(m->prog, 1, k, 1), NK_LN2_POST);
    int h = view_norm_hook(m->prog, 1, NK_LN2_POST);
    cr_assert_geq(h, 0);
    cr_assert_str_eq(m->prog->hooks[h].name, "blocks.1.ln2_post.hook_scale");
    close_session(g);
    close_session(m);
}

/* What the session printed for one command (its out stream swapped for a
 * memory stream). */
static char *run_text(view *v, as_session *s, const char *cmd, int *rc)
{
    char *text = NULL;
    size_t len = 0;
    FILE *saved = s->out, *mem = open_memstream(&text, &len);
    cr_assert(mem);
    s->out = mem;
    as_error err = {{0}};
    *rc = view_exec(v, s, cmd, NULL, &err);
    fclose(mem);
    s->out = saved;
    return text;
}

Test(tui_view, load_swaps_the_model_only_when_the_new_one_loads)
{
    as_session *s = open_session("fixtures/tiny-gpt2.gguf", 64);
    view v;
    view_init(&v);
    as_error err = {{0}};
    const as_model *before = s->model;
    cr_assert_eq(view_exec(&v, s, "prompt-ids 1 2 3", NULL, &err), AS_OK);
    cr_assert_eq(view_exec(&v, s, "load fixtures/no-such-model.gguf", NULL, &err), AS_ERR);
    cr_assert(strstr(err.msg, "no-such-model.gguf"), "the message names the file: %s", err.msg);
    cr_assert_eq(view_exec(&v, s, "load fixtures/README.md", NULL, &err), AS_ERR, "not a model");
    cr_assert_eq(s->model, before, "a failed load keeps the model");
    cr_assert_eq(s->it->out->n_tokens, 3, "and its context");
    cr_assert_eq(view_exec(&v, s, "finish", NULL, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(view_exec(&v, s, "load fixtures/tiny-llama.gguf", NULL, &err), AS_OK, "%s", err.msg);
    cr_assert_str_eq(as_model_arch_name(s->model), "llama");
    cr_assert_eq(s->it->out->n_tokens, 0, "a new model starts with no context");
    cr_assert_eq(view_exec(&v, s, "prompt-ids 1 5 6", NULL, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(view_exec(&v, s, "finish", NULL, &err), AS_OK, "%s", err.msg);
    int rc;
    char *top = run_text(&v, s, "top 2", &rc);
    cr_assert_eq(rc, AS_OK);
    cr_assert(strstr(top, "\n2\t"), "the new model ranks: %s", top);
    free(top);
    close_session(s);
}

Test(tui_view, a_pane_by_name_and_the_settings_listed)
{
    as_session *s = open_session("fixtures/tiny-gpt2.gguf", 64);
    view v;
    view_init(&v);
    as_error err = {{0}};
    cr_assert_eq(v.pane_req, -1);
    cr_assert_eq(view_exec(&v, s, "view lens", NULL, &err), AS_OK, "%s", err.msg);
    cr_assert_str_eq(view_pane_name(v.pane_req), "lens");
    cr_assert_eq(view_exec(&v, s, "view output", NULL, &err), AS_OK, "%s", err.msg);
    cr_assert_str_eq(view_pane_name(v.pane_req), "output");
    cr_assert_eq(view_exec(&v, s, "view sideways", NULL, &err), AS_ERR);
    int rc;
    cr_assert_eq(view_exec(&v, s, "set temp 0.7", NULL, &err), AS_OK);
    char *text = run_text(&v, s, "set", &rc);
    cr_assert_eq(rc, AS_OK, "set alone lists the settings");
    cr_assert(strstr(text, "temp = 0.7\n") && strstr(text, "topk = 0 (off)\n") && strstr(text, "seed = 42\n") &&
                  strstr(text, "delay = 150 ms") && strstr(text, "cmap = viridis\n"),
              "%s", text);
    free(text);
    close_session(s);
}

Test(tui_view, prompts_that_open_with_a_quote_are_dialogue)
{
    as_session *s = open_session("fixtures/tiny-llama.gguf", 64);
    view v;
    view_init(&v);
    int rc;
    /* As the whole line: the quotes are part of the text. */
    char *a = run_text(&v, s, "tokenize \"Yes,\" said he.", &rc);
    cr_assert_eq(rc, AS_OK);
    char *b = run_text(&v, s, "tokenize-raw '\"Yes,\" said he.'", &rc);
    cr_assert_eq(rc, AS_OK);
    cr_assert_str_eq(a, b, "dialogue is taken as typed");
    free(a);
    free(b);
    /* An unmatched quote is text too. */
    a = run_text(&v, s, "prompt \"Well, I never", &rc);
    cr_assert_eq(rc, AS_OK, "an open quote in dialogue");
    cr_assert(strstr(a, "context: "), "%s", a);
    free(a);
    /* One quoted word still loses its quotes. */
    a = run_text(&v, s, "tokenize \"the cat\"", &rc);
    b = run_text(&v, s, "tokenize the cat", &rc);
    cr_assert_str_eq(a, b);
    free(a);
    free(b);
    close_session(s);
}

Test(tui_layout, the_shortest_screens_show_one_pane_whole)
{
    for (int rows = LAYOUT_MIN_H; rows <= 60; rows++)
        for (int cols = LAYOUT_MIN_W; cols <= 200; cols += 7) {
            layout l;
            layout_compute(&l, rows, cols, P_ATTN);
            check_tiling(&l);
            /* Whatever the size, the heatmap has a box, a key row, two
             * character rows of cells and the value line. */
            cr_assert_geq(l.r[P_ATTN].h, 6, "%dx%d: the heatmap has %d rows", cols, rows, l.r[P_ATTN].h);
            cr_assert_eq(l.single, layout_single(rows));
            if (l.single) {
                layout_compute(&l, rows, cols, P_LENS);
                check_tiling(&l);
                cr_assert_eq(l.r[P_ATTN].h, 0, "%dx%d: one pane at a time", cols, rows);
                cr_assert_geq(l.r[P_LENS].h, 6, "%dx%d: the lens takes the body", cols, rows);
            }
        }
    cr_assert(layout_single(12) && layout_single(16) && !layout_single(17) && !layout_single(24));
}

/* ---- lessons ---- */

#include "../ui/lesson.h"

Test(tui_lesson, a_script_reads_as_steps_of_commands_and_text)
{
    const char *text = "# a comment\n"
                       "title: Two steps\n"
                       "model: induction\n"
                       "\n"
                       ": prompt the cat\n"
                       ":finish\n"
                       "First line\n"
                       "joins the second.\n"
                       "\n"
                       "A new paragraph.\n"
                       "---\n"
                       ": view layer 1\n"
                       "Step two.\n"
                       "---\n";
    lesson l;
    as_error err = {{0}};
    cr_assert_eq(lesson_parse(text, "two.txt", &l, &err), AS_OK, "%s", err.msg);
    cr_assert_str_eq(l.title, "Two steps");
    cr_assert_str_eq(l.model, "induction");
    cr_assert_eq(l.n_steps, 2, "a trailing --- adds no step");
    cr_assert_eq(l.steps[0].n_cmds, 2);
    cr_assert_str_eq(l.steps[0].cmds[0], "prompt the cat");
    cr_assert_str_eq(l.steps[0].cmds[1], "finish");
    cr_assert_str_eq(l.steps[0].text, "First line joins the second.\nA new paragraph.");
    cr_assert_str_eq(l.steps[1].cmds[0], "view layer 1");
    cr_assert_str_eq(l.steps[1].text, "Step two.");
    lesson_free(&l);
    cr_assert_eq(lesson_parse("no title\n", "a.txt", &l, &err), AS_ERR);
    cr_assert(strstr(err.msg, "a.txt: no `title:`"), "%s", err.msg);
    cr_assert_eq(lesson_parse("title: t\nText.\n---\n: finish\n---\nMore.\n", "b.txt", &l, &err), AS_ERR);
    cr_assert(strstr(err.msg, "b.txt:4: step 2 has no text"), "%s", err.msg);
}

/* Every shipped lesson parses, and runs straight through (batch mode's
 * way) without a failing command, on the bundled models. */
Test(tui_lesson, every_shipped_lesson_runs)
{
    char names[64][64], titles[64][128];
    int n = lesson_list(names, titles, 64);
    cr_assert_geq(n, 5, "the five lessons: found %d", n);
    const char *want[] = {"attention", "heads", "lens", "norms", "bert"};
    for (int k = 0; k < 5; k++) {
        bool found = false;
        for (int i = 0; i < n; i++)
            found |= !strcmp(names[i], want[k]);
        cr_assert(found, "lesson %s", want[k]);
    }
    as_session *s = open_session("../models/austen-gpt2.gguf", 256);
    for (int i = 0; i < n; i++) {
        view v;
        view_init(&v);
        as_error err = {{0}};
        char cmd[96];
        snprintf(cmd, sizeof cmd, "lesson %.63s", names[i]);
        cr_assert_eq(view_exec(&v, s, cmd, NULL, &err), AS_OK, "%s: %s", names[i], err.msg);
    }
    close_session(s);
}

/* A lesson is found by name in the lesson folders (here the current
 * directory's assets/lessons, after the repository's), never as a path. */
Test(tui_lesson, a_lesson_cannot_start_a_lesson)
{
    char dir[] = "/tmp/attnscope-lesson-XXXXXX", sub[64], path[96], cwd[4096];
    cr_assert(mkdtemp(dir));
    snprintf(sub, sizeof sub, "%s/assets", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    snprintf(sub, sizeof sub, "%s/assets/lessons", dir);
    cr_assert_eq(mkdir(sub, 0755), 0);
    snprintf(path, sizeof path, "%s/loop-test.txt", sub);
    FILE *f = fopen(path, "w");
    cr_assert(f);
    fputs("title: Loops\n: prompt-ids 1 2\nA step.\n---\n: lesson loop-test\nAgain.\n", f);
    fclose(f);
    as_session *s = open_session("fixtures/tiny-gpt2.gguf", 64);
    cr_assert(getcwd(cwd, sizeof cwd));
    cr_assert_eq(chdir(dir), 0);
    view v;
    view_init(&v);
    as_error err = {{0}};
    int rc = view_exec(&v, s, "lesson loop-test", NULL, &err);
    cr_assert_eq(chdir(cwd), 0);
    cr_assert_eq(rc, AS_ERR);
    cr_assert(strstr(err.msg, "a lesson cannot start a lesson"), "%s", err.msg);
    cr_assert(!v.in_lesson);
    unlink(path);
    rmdir(sub);
    snprintf(sub, sizeof sub, "%s/assets", dir);
    rmdir(sub);
    rmdir(dir);
    close_session(s);
}

/* `lesson ../../../../etc/passwd` opened any file as a lesson. */
Test(tui_lesson, a_path_is_refused_with_the_lessons_there_are)
{
    as_session *s = open_session("fixtures/tiny-gpt2.gguf", 64);
    const char *bad[] = {"../../../../etc/passwd", "/etc/passwd", "sub/attention", ".attention", "..", "a..b"};
    for (int i = 0; i < 6; i++) {
        view v;
        view_init(&v);
        as_error err = {{0}};
        char cmd[96];
        snprintf(cmd, sizeof cmd, "lesson %s", bad[i]);
        cr_assert_eq(view_exec(&v, s, cmd, NULL, &err), AS_ERR, "%s was opened", bad[i]);
        cr_assert(strstr(err.msg, "a lesson is named, not a path") && strstr(err.msg, "the lessons: attention, "),
                  "%s", err.msg);
    }
    view v;
    view_init(&v);
    as_error err = {{0}};
    cr_assert_eq(view_exec(&v, s, "lesson nope", NULL, &err), AS_ERR);
    cr_assert(strstr(err.msg, "no lesson 'nope'; the lessons: attention, "), "%s", err.msg);
    close_session(s);
}

/* Half blocks: a query takes whole character rows (or shares one with its
 * neighbour), never one and a half, so labels fall evenly. */
Test(tui_heatmap, every_token_gets_the_same_whole_rows)
{
    for (int n = 1; n <= 80; n++)
        for (int rows = 2; rows <= 60; rows += 3) {
            hm_geom g = {0};
            hm_fit(&g, n, n, rows, 120, 2, 16);
            cr_assert(g.ch == 1 || g.ch % 2 == 0, "n %d, %d rows: %d half-rows a token", n, rows, g.ch);
            cr_assert_leq(g.vis_q * g.ch, rows * 2, "n %d, %d rows: drawn past the area", n, rows);
        }
}

/* `view site cross` on an encoder-decoder: the cursor's key ranges over
 * the source; a decoder-only model has no cross-attention to show. */
Test(tui_view, view_site_cross_is_an_encoder_decoders)
{
    as_session *s = open_session("fixtures/tiny-gpt2.gguf", 64);
    view v;
    view_init(&v);
    as_error err = {{0}};
    cr_assert_eq(view_exec(&v, s, "view site cross", NULL, &err), AS_ERR);
    cr_assert(strstr(err.msg, "no cross-attention"), "%s", err.msg);
    cr_assert_eq(v.site, AS_PICK_SELF);
    close_session(s);
    s = open_session("fixtures/tiny-transformer.gguf", 64);
    view_init(&v);
    bool changed = false;
    cr_assert_eq(view_exec(&v, s, "source-ids 1 275 286 287 288 285", NULL, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(view_exec(&v, s, "prompt-ids 2 275", NULL, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(view_exec(&v, s, "view site cross", &changed, &err), AS_OK, "%s", err.msg);
    cr_assert(changed && v.site == AS_PICK_CROSS);
    cr_assert_eq(view_exec(&v, s, "view key 5", NULL, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(v.key, 5, "a cross key is any of the 6 source positions, past the query (1)");
    cr_assert_eq(view_exec(&v, s, "view key 6", NULL, &err), AS_ERR);
    v.key = 9;
    view_clamp(&v, s);
    cr_assert_eq(v.key, 5);
    cr_assert_eq(view_exec(&v, s, "view site self", NULL, &err), AS_OK);
    cr_assert_eq(v.key, 1, "back on the decoder's self-attention, the key is at most the query");
    cr_assert_eq(view_exec(&v, s, "view site sideways", NULL, &err), AS_ERR);
    /* the encoder's heatmap: its own row (a source position), every source key */
    cr_assert_eq(view_exec(&v, s, "view site encoder", NULL, &err), AS_OK, "%s", err.msg);
    v.src_query = 9;
    v.key = 4;
    view_clamp(&v, s);
    cr_assert(v.src_query == 5 && v.key == 4 && v.query == 1, "row %d key %d query %d", v.src_query, v.key, v.query);
    cr_assert_eq(view_row(&v), 5);
    close_session(s);
}

/* ---- a lesson's box ---- */

#include "../ui/tour_place.h"

static int need_rows(int width, void *ctx)
{
    (void)width;
    return *(int *)ctx;
}

/* The box keeps clear of the pane looked at (laid out as the view lays it
 * out when that pane has the focus), of the strip, the status and the
 * command line, at every size a class meets and with any pane focused,
 * and is as tall as its text where a free place holds it (7 rows from
 * 80x24 up, 4 everywhere); on a screen
 * of one pane at a time it stays inside the body. */
Test(tui_lesson, the_box_keeps_clear_of_the_pane_looked_at)
{
    int sizes[][2] = {{24, 80}, {35, 120}, {48, 160}, {30, 100}, {20, 60}, {16, 80}, {12, 40}};
    unsigned kinds[] = {LAYOUT_ALL & ~LAYOUT_PANE(P_IMAGE) & ~LAYOUT_PANE(P_ROUTE),
                        LAYOUT_ALL & ~LAYOUT_PANE(P_ROUTE), LAYOUT_ALL & ~LAYOUT_PANE(P_IMAGE)};
    int needs[] = {4, 7, 12, 200};
    for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
        for (size_t k = 0; k < sizeof kinds / sizeof kinds[0]; k++)
            for (int p = 0; p < P_CMD; p++) {
                if (!(kinds[k] & LAYOUT_PANE(p)))
                    continue;
                layout l;
                /* as redraw.c lays out: a side pane focused is the one shown */
                pane_id shown = PANE_IS_SIDE(p) ? (pane_id)p
                                : layout_single(sizes[s][0]) ? (p == P_ROUTE ? P_ROUTE : P_ATTN)
                                                             : P_PROBS;
                layout_compute_for(&l, sizes[s][0], sizes[s][1], shown, kinds[k]);
                if (l.r[p].h == 0)
                    continue;
                for (size_t n = 0; n < sizeof needs / sizeof needs[0]; n++) {
                    rect b = tour_place(&l, (pane_id)p, need_rows, &needs[n]);
                    char what[96];
                    snprintf(what, sizeof what, "%dx%d, kind %zu, pane %d focused, %d rows wanted: box %d,%d %dx%d",
                             sizes[s][1], sizes[s][0], k, p, needs[n], b.y, b.x, b.h, b.w);
                    cr_assert_gt(b.h, 0, "%s", what);
                    cr_assert(b.y >= l.r[P_TOKENS].h && b.y + b.h <= l.rows - 2 && b.x >= 0 && b.x + b.w <= l.cols,
                              "%s: outside the body", what);
                    if (l.single)
                        continue;
                    cr_assert(!overlap(b, l.r[p]), "%s: over the focused pane %d,%d %dx%d", what, l.r[p].y, l.r[p].x,
                              l.r[p].h, l.r[p].w);
                    if (needs[n] <= 4 || (needs[n] <= 7 && sizes[s][0] >= 24)) /* 80x24's slot holds 7 */
                        cr_assert_eq(b.h, needs[n], "%s: not as tall as its text", what);
                }
            }
}

/* Where it goes: on a wide screen over the stack's bottom when the
 * heatmap is looked at, above the Output pane when that is; on 80x24
 * over the shared slot, or over the heatmap when the slot's pane is
 * looked at. */
Test(tui_lesson, the_box_goes_where_it_hides_least)
{
    layout l;
    int six = 6;
    layout_compute(&l, 35, 120, P_PROBS);
    rect b = tour_place(&l, P_ATTN, need_rows, &six);
    cr_assert(b.x == l.r[P_LOG].x && b.y + b.h == l.rows - 2 && b.h == 6, "%d,%d %dx%d", b.y, b.x, b.h, b.w);
    b = tour_place(&l, P_LOG, need_rows, &six);
    cr_assert(b.x == l.r[P_LOG].x && b.y == l.r[P_TOKENS].h && b.h == 6, "%d,%d %dx%d", b.y, b.x, b.h, b.w);
    int tall = 25; /* more than the stack holds around the norms pane: the heatmap's bottom */
    layout_compute(&l, 35, 120, P_NORMS);
    b = tour_place(&l, P_NORMS, need_rows, &tall);
    cr_assert(b.x == 0 && b.w == l.r[P_ATTN].w && b.h == 25, "%d,%d %dx%d", b.y, b.x, b.h, b.w);
    layout_compute(&l, 24, 80, P_PROBS);
    b = tour_place(&l, P_ATTN, need_rows, &six);
    cr_assert(b.y >= l.r[P_PROBS].y && b.w == 80, "%d,%d %dx%d", b.y, b.x, b.h, b.w);
    b = tour_place(&l, P_PROBS, need_rows, &six);
    cr_assert(b.y == l.r[P_TOKENS].h && b.y + b.h <= l.r[P_PROBS].y, "%d,%d %dx%d", b.y, b.x, b.h, b.w);
}
