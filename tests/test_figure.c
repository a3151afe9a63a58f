/* Figures and array export. Every PNG is decoded again with libpng and
 * checked: size, colour type, resolution, text chunks, and pixels — a
 * known pattern (one cell at 1.0, the rest 0, the upper triangle masked)
 * must land in the right cell with the colormap's exact colour. The cell
 * grid is found from the pixels themselves, not from the layout. SVG is
 * checked for well-formed XML and its count of cells and labels. */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <png.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <dirent.h>
#include <unistd.h>

#include "attnscope/colormap.h"
#include "attnscope/figure.h"
#include "helpers.h"

#define GPT2 "fixtures/tiny-gpt2.gguf"
#define LLAMA "fixtures/tiny-llama.gguf"

/* ---- helpers: files, PNG decoding, pixel geometry, XML ---- */

static char *make_tmpdir(void)
{
    char *d = strdup("/tmp/attnscope-figure-XXXXXX");
    cr_assert(d && mkdtemp(d));
    return d;
}

static void remove_tree(const char *dir)
{
    DIR *dp = opendir(dir);
    struct dirent *e;
    char path[1024];
    while (dp && (e = readdir(dp))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        struct stat st;
        if (!lstat(path, &st) && S_ISDIR(st.st_mode))
            remove_tree(path);
        else
            unlink(path);
    }
    if (dp)
        closedir(dp);
    rmdir(dir);
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    cr_assert_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

typedef struct png_img {
    int w, h, color_type, bit_depth;
    uint8_t *rgb;
    png_uint_32 res_x, res_y;
    int res_unit;
    int n_text;
    char keys[32][80];
    char *vals[32];
} png_img;

static void png_load(const char *path, png_img *im)
{
    memset(im, 0, sizeof *im);
    FILE *f = fopen(path, "rb");
    cr_assert(f, "cannot open %s", path);
    unsigned char sig[8];
    cr_assert_eq(fread(sig, 1, 8, f), 8);
    cr_assert(!png_sig_cmp(sig, 0, 8), "%s is not a PNG", path);
    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    cr_assert(png && info);
    if (setjmp(png_jmpbuf(png)))
        cr_assert_fail("libpng could not decode %s", path);
    png_init_io(png, f);
    png_set_sig_bytes(png, 8);
    png_read_info(png, info);
    im->w = (int)png_get_image_width(png, info);
    im->h = (int)png_get_image_height(png, info);
    im->color_type = png_get_color_type(png, info);
    im->bit_depth = png_get_bit_depth(png, info);
    png_get_pHYs(png, info, &im->res_x, &im->res_y, &im->res_unit);
    cr_assert_eq(im->color_type, PNG_COLOR_TYPE_RGB);
    cr_assert_eq(im->bit_depth, 8);
    im->rgb = malloc((size_t)im->w * (size_t)im->h * 3);
    for (int y = 0; y < im->h; y++)
        png_read_row(png, im->rgb + (size_t)y * (size_t)im->w * 3, NULL);
    png_read_end(png, info);
    png_textp text;
    int n = 0;
    png_get_text(png, info, &text, &n);
    for (int i = 0; i < n && i < 32; i++) {
        snprintf(im->keys[i], sizeof im->keys[i], "%s", text[i].key);
        im->vals[i] = strdup(text[i].text ? text[i].text : "");
    }
    im->n_text = n < 32 ? n : 32;
    png_destroy_read_struct(&png, &info, NULL);
    fclose(f);
}

static void png_free_img(png_img *im)
{
    free(im->rgb);
    for (int i = 0; i < im->n_text; i++)
        free(im->vals[i]);
}

static const char *text_chunk(const png_img *im, const char *key)
{
    for (int i = 0; i < im->n_text; i++)
        if (!strcmp(im->keys[i], key))
            return im->vals[i];
    return NULL;
}

static const uint8_t *px(const uint8_t *rgb, int w, int x, int y) { return rgb + ((size_t)y * (size_t)w + (size_t)x) * 3; }
static bool same(const uint8_t *a, const uint8_t *b) { return a[0] == b[0] && a[1] == b[1] && a[2] == b[2]; }

/* The heatmap's pixels are exactly one of these colours. */
typedef struct heat_colours {
    uint8_t zero[3], one[3], masked[3];
} heat_colours;

static heat_colours colours_of(as_cmap cmap)
{
    heat_colours c;
    as_colormap(cmap, 0, c.zero);
    as_colormap(cmap, 1, c.one);
    as_masked_rgb(cmap, c.masked);
    return c;
}

/* Zero and masked cells: the colours that surround a single hot cell.
 * (The hot colour may be the background's white, with the grey ramp.) */
static bool is_heat(const heat_colours *c, const uint8_t *p) { return same(p, c->zero) || same(p, c->masked); }

/* Finds the heatmap from the pixels: the longest horizontal run of zero
 * and masked colours (the top row: one zero cell, then masked ones) and
 * the longest vertical run through its last column (masked, then zero).
 * The colour bar and the legend swatch are far narrower. */
static void find_heatmap(const uint8_t *rgb, int w, int h, const heat_colours *c, int box[4])
{
    int best = 0, bx = 0, by = 0;
    for (int y = 0; y < h; y++)
        for (int x = 0, run = 0; x < w; x++) {
            run = is_heat(c, px(rgb, w, x, y)) ? run + 1 : 0;
            if (run > best)
                best = run, bx = x - run + 1, by = y;
        }
    int last = bx + best - 1, top = by, bottom = by;
    while (top > 0 && is_heat(c, px(rgb, w, last, top - 1)))
        top--;
    while (bottom + 1 < h && is_heat(c, px(rgb, w, last, bottom + 1)))
        bottom++;
    box[0] = bx, box[1] = top, box[2] = best, box[3] = bottom - top + 1;
}

/* The one-hot pattern: (hot_r, hot_c) is 1, the rest 0, k > q masked. */
static void check_one_hot(const uint8_t *rgb, int w, int h, as_cmap cmap, int n, int hot_r, int hot_c)
{
    heat_colours c = colours_of(cmap);
    int box[4];
    find_heatmap(rgb, w, h, &c, box);
    cr_assert_eq(box[2], box[3], "heatmap %dx%d is not square", box[2], box[3]);
    cr_assert_eq(box[2] % n, 0, "heatmap width %d is not a multiple of %d cells", box[2], n);
    int cell = box[2] / n;
    cr_assert_geq(cell, 1);
    for (int r = 0; r < n; r++)
        for (int k = 0; k < n; k++) {
            const uint8_t *want = k > r ? c.masked : r == hot_r && k == hot_c ? c.one : c.zero;
            /* Every pixel of the cell: nearest-neighbour cells have no blur. */
            for (int y = 0; y < cell; y++)
                for (int x = 0; x < cell; x++) {
                    const uint8_t *p = px(rgb, w, box[0] + k * cell + x, box[1] + r * cell + y);
                    cr_assert(same(p, want), "cell (%d, %d) pixel (%d, %d) is #%02x%02x%02x, want #%02x%02x%02x", r, k,
                              x, y, p[0], p[1], p[2], want[0], want[1], want[2]);
                }
        }
}

static int count_substr(const char *s, const char *sub)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, sub)); p += strlen(sub))
        n++;
    return n;
}

/* Well-formedness of the XML the SVG writer produces: one root, tags
 * nested and closed, attributes quoted, entities known, no stray '<'. */
static bool xml_well_formed(const char *s, char *why, size_t cap)
{
    char stack[64][64];
    int depth = 0, roots = 0;
    const char *p = s;
    if (!strncmp(p, "<?xml", 5)) {
        p = strstr(p, "?>");
        if (!p)
            return snprintf(why, cap, "unterminated declaration"), false;
        p += 2;
    }
    while (*p) {
        if (*p == '&') {
            const char *e = strchr(p, ';');
            if (!e || e - p > 8)
                return snprintf(why, cap, "bad entity at %.20s", p), false;
            p = e + 1;
            continue;
        }
        if (*p == '>')
            return snprintf(why, cap, "stray '>' at %.20s", p), false;
        if (*p != '<') {
            if (depth == 0 && !strchr(" \n\r\t", *p))
                return snprintf(why, cap, "text outside the root: %.20s", p), false;
            p++;
            continue;
        }
        bool closing = p[1] == '/';
        const char *n0 = p + (closing ? 2 : 1), *n1 = n0;
        while (*n1 && !strchr(" \t\n/>", *n1))
            n1++;
        if (n1 == n0 || n1 - n0 >= 64)
            return snprintf(why, cap, "bad tag name at %.20s", p), false;
        const char *q = n1;
        char quote = 0;
        while (*q && (quote || (*q != '>'))) {
            if (quote && *q == '<')
                return snprintf(why, cap, "'<' in an attribute at %.30s", p), false;
            if (!quote && (*q == '"' || *q == '\''))
                quote = *q;
            else if (quote && *q == quote)
                quote = 0;
            else if (!quote && *q == '=' && q[1] != '"' && q[1] != '\'')
                return snprintf(why, cap, "unquoted attribute at %.30s", p), false;
            q++;
        }
        if (!*q)
            return snprintf(why, cap, "unterminated tag at %.20s", p), false;
        bool self = q[-1] == '/';
        if (closing) {
            if (depth == 0 || strncmp(stack[depth - 1], n0, (size_t)(n1 - n0)) || stack[depth - 1][n1 - n0])
                return snprintf(why, cap, "mismatched close at %.20s", p), false;
            depth--;
        } else if (!self) {
            if (depth == 0)
                roots++;
            if (depth == 64)
                return snprintf(why, cap, "too deep"), false;
            memcpy(stack[depth], n0, (size_t)(n1 - n0));
            stack[depth++][n1 - n0] = '\0';
        }
        p = q + 1;
    }
    if (depth)
        return snprintf(why, cap, "%d unclosed tags (innermost %s)", depth, stack[depth - 1]), false;
    if (roots != 1)
        return snprintf(why, cap, "%d root elements", roots), false;
    return true;
}

/* ---- hand-built figures ---- */

typedef struct one_hot {
    int n;
    float *v;
    unsigned char *mk;
    char **labels;
    as_fig_matrix m;
    as_fig_heat h;
} one_hot;

static void one_hot_make(one_hot *o, int n, int hot_r, int hot_c, const char *const *words)
{
    o->n = n;
    o->v = calloc((size_t)n * n, sizeof *o->v);
    o->mk = calloc((size_t)n * n, 1);
    o->labels = calloc((size_t)n, sizeof *o->labels);
    for (int q = 0; q < n; q++)
        for (int k = 0; k < n; k++)
            o->mk[q * n + k] = k > q;
    o->v[hot_r * n + hot_c] = 1.0f;
    for (int i = 0; i < n; i++) {
        char buf[256];
        const char *w = words ? words[i] : NULL;
        char tmp[32];
        if (!w)
            snprintf(tmp, sizeof tmp, " tok%d", i), w = tmp;
        as_fig_visible_text(w, strlen(w), buf, sizeof buf);
        o->labels[i] = strdup(buf);
    }
    o->m = (as_fig_matrix){o->v, o->mk};
    o->h = (as_fig_heat){n, n, (const char *const *)o->labels, (const char *const *)o->labels, "query position",
                         "key position", "attention weight", 1, &o->m, NULL, 1, 1, NULL, NULL, 0, 0};
}

static void one_hot_free(one_hot *o)
{
    for (int i = 0; i < o->n; i++)
        free(o->labels[i]);
    free(o->labels);
    free(o->v);
    free(o->mk);
}

Test(figure, visible_text_shows_whitespace_and_escapes_bytes)
{
    char out[64];
    as_fig_visible_text(" the", 4, out, sizeof out);
    cr_assert_str_eq(out, "\xC2\xB7the");
    as_fig_visible_text("a\nb\tc", 5, out, sizeof out);
    cr_assert_str_eq(out, "a\xE2\x86\xB5" "b\xE2\x87\xA5" "c");
    as_fig_visible_text("caf\xC3\xA9", 5, out, sizeof out);
    cr_assert_str_eq(out, "caf\xC3\xA9");
    as_fig_visible_text("\xC3", 1, out, sizeof out); /* half of é: a byte token */
    cr_assert_str_eq(out, "\\xC3");
    as_fig_visible_text("\x01x\x7f", 3, out, sizeof out);
    cr_assert_str_eq(out, "\\x01x\\x7F");
    as_fig_visible_text("\xE2\x96\x81", 3, out, sizeof out); /* ▁ stays */
    cr_assert_str_eq(out, "\xE2\x96\x81");
    as_fig_visible_text("abcdef", 6, out, 4); /* truncated, still terminated */
    cr_assert_str_eq(out, "abc");
}

Test(figure, format_from_file_name)
{
    as_fig_format f;
    as_error err;
    cr_assert_eq(as_fig_format_of("a/b.PNG", &f, &err), AS_OK);
    cr_assert_eq(f, AS_FIG_PNG);
    cr_assert_eq(as_fig_format_of("x.svg", &f, &err), AS_OK);
    cr_assert_eq(f, AS_FIG_SVG);
    cr_assert_eq(as_fig_format_of("x.jpg", &f, &err), AS_ERR);
    cr_assert(strstr(err.msg, ".png or .svg"), "%s", err.msg);
}

static void one_hot_png(as_cmap cmap, const char *font)
{
    static const char *const words[] = {"<|endoftext|>", "It", " is", " a", " truth", " caf\xC3\xA9", "\n"};
    as_fig_ctx *ctx;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&ctx, font, &err), AS_OK);
    one_hot o;
    one_hot_make(&o, 7, 3, 1, words);
    as_fig_style st;
    as_fig_style_default(&st);
    st.cmap = cmap;
    as_figure *f;
    cr_assert_eq(as_fig_heatmap(&f, ctx, &st, "Layer 3 \xC2\xB7 Head 5 \xE2\x80\x94 test", &o.h, &err), AS_OK, "%s",
                 err.msg);
    cr_assert_eq(as_figure_add_meta(f, "Model", "hand-built", &err), AS_OK);
    cr_assert_eq(as_figure_add_meta(f, "Prompt", "It is a truth caf\xC3\xA9", &err), AS_OK);
    char *dir = make_tmpdir(), path[256];
    snprintf(path, sizeof path, "%s/one.png", dir);
    cr_assert_eq(as_figure_write(f, path, AS_FIG_PNG, &err), AS_OK, "%s", err.msg);
    int w, h;
    as_figure_size(f, &w, &h);

    png_img im;
    png_load(path, &im);
    cr_assert_eq(im.w, w);
    cr_assert_eq(im.h, h);
    cr_assert_eq(im.res_unit, PNG_RESOLUTION_METER);
    cr_assert_eq(im.res_x, 7874); /* 200 dpi */
    cr_assert_eq(im.res_y, 7874);
    cr_assert_str_eq(text_chunk(&im, "Model"), "hand-built");
    cr_assert_str_eq(text_chunk(&im, "Prompt"), "It is a truth caf\xC3\xA9"); /* UTF-8 through iTXt */
    cr_assert_str_eq(text_chunk(&im, "Title"), "Layer 3 \xC2\xB7 Head 5 \xE2\x80\x94 test");
    cr_assert(text_chunk(&im, "Software") && !strncmp(text_chunk(&im, "Software"), "attnscope ", 10));
    check_one_hot(im.rgb, im.w, im.h, cmap, 7, 3, 1);

    /* The layout's own cell rectangle agrees with what the pixels say. */
    int r[4];
    cr_assert_eq(as_figure_cell_rect(f, 0, 3, 1, r), AS_OK);
    uint8_t one[3];
    as_colormap(cmap, 1, one);
    cr_assert_eq(r[2], r[3]);
    cr_assert(same(px(im.rgb, im.w, r[0], r[1]), one));
    cr_assert(same(px(im.rgb, im.w, r[0] + r[2] - 1, r[1] + r[3] - 1), one));
    cr_assert(!same(px(im.rgb, im.w, r[0] + r[2], r[1]), one));
    cr_assert_eq(as_figure_cell_rect(f, 0, 7, 0, r), AS_ERR);

    /* Text was drawn: the title band holds dark, anti-aliased pixels. */
    int dark = 0, grey = 0;
    for (int y = 0; y < r[1] - 10 && y < im.h; y++)
        for (int x = 0; x < im.w; x++) {
            const uint8_t *p = px(im.rgb, im.w, x, y);
            dark += p[0] < 80;
            grey += p[0] > 100 && p[0] < 200 && p[0] == p[1] && p[1] == p[2];
        }
    cr_assert_gt(dark, 50);
    if (font == NULL)
        cr_assert_gt(grey, 20, "no anti-aliased edges in the title");
    png_free_img(&im);
    as_figure_free(f);
    one_hot_free(&o);
    as_fig_ctx_free(ctx);
    remove_tree(dir);
    free(dir);
}

Test(figure, one_hot_cell_lands_in_place_viridis) { one_hot_png(AS_CMAP_VIRIDIS, NULL); }
Test(figure, one_hot_cell_lands_in_place_magma) { one_hot_png(AS_CMAP_MAGMA, NULL); }
Test(figure, one_hot_cell_lands_in_place_gray) { one_hot_png(AS_CMAP_GRAY, NULL); }
Test(figure, bitmap_font_fallback_still_draws) { one_hot_png(AS_CMAP_VIRIDIS, "/nonexistent/font.ttf"); }

Test(figure, bitmap_fallback_is_reported)
{
    as_fig_ctx *c;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&c, "/nonexistent/font.ttf", &err), AS_OK);
    cr_assert(!as_fig_ctx_has_font(c));
    cr_assert_str_eq(as_fig_ctx_font_name(c), "built-in bitmap font");
    as_fig_ctx_free(c);
    cr_assert_eq(as_fig_ctx_new(&c, NULL, &err), AS_OK);
    if (access("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", R_OK) == 0)
        cr_assert(as_fig_ctx_has_font(c), "DejaVu Sans is installed but was not loaded");
    as_fig_ctx_free(c);
}

Test(figure, svg_is_well_formed_with_every_cell_and_label)
{
    as_fig_ctx *ctx;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&ctx, NULL, &err), AS_OK);
    static const char *const words[] = {"<|endoftext|>", " a&b", " \"q\"", " x", " y"};
    one_hot o;
    one_hot_make(&o, 5, 2, 0, words);
    as_fig_style st;
    as_fig_style_default(&st);
    as_figure *f;
    cr_assert_eq(as_fig_heatmap(&f, ctx, &st, "T <&>", &o.h, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_figure_add_meta(f, "Prompt", "a < b & \"c\"", &err), AS_OK);
    char *dir = make_tmpdir(), path[256];
    snprintf(path, sizeof path, "%s/f.svg", dir);
    cr_assert_eq(as_figure_write(f, path, AS_FIG_SVG, &err), AS_OK, "%s", err.msg);
    char *svg = read_all(path, NULL), why[200];
    cr_assert(xml_well_formed(svg, why, sizeof why), "%s", why);
    cr_assert_eq(count_substr(svg, "class=\"cell\""), 25);
    cr_assert_eq(count_substr(svg, "class=\"label\""), 10);
    cr_assert_eq(count_substr(svg, "class=\"title\""), 1);
    cr_assert_eq(count_substr(svg, "<text "), count_substr(svg, "</text>"));
    cr_assert(strstr(svg, ">&lt;|endoftext|&gt;</text>"), "labels are real, escaped text");
    cr_assert(strstr(svg, "\xC2\xB7" "a&amp;b</text>"));
    cr_assert(strstr(svg, "key position</text>") && strstr(svg, "query position</text>"));
    cr_assert(strstr(svg, "rotate(-90"), "x labels are turned");
    int w, h;
    char vb[64];
    as_figure_size(f, &w, &h);
    snprintf(vb, sizeof vb, "viewBox=\"0 0 %d %d\"", w, h);
    cr_assert(strstr(svg, vb), "the SVG has the raster's layout");
    /* The hot cell in its colour, the masked ones grey. */
    uint8_t one[3], mk[3];
    char hex[16];
    as_colormap(AS_CMAP_VIRIDIS, 1, one);
    snprintf(hex, sizeof hex, "fill=\"#%02x%02x%02x\"", one[0], one[1], one[2]);
    cr_assert_eq(count_substr(svg, hex), 1);
    as_masked_rgb(AS_CMAP_VIRIDIS, mk);
    snprintf(hex, sizeof hex, "fill=\"#%02x%02x%02x\"", mk[0], mk[1], mk[2]);
    cr_assert_eq(count_substr(svg, hex), 10 + 1, "10 masked cells and the legend swatch");
    free(svg);
    as_figure_free(f);
    one_hot_free(&o);
    as_fig_ctx_free(ctx);
    remove_tree(dir);
    free(dir);
}

/* Row labels of a single head never overlap, however many tokens. */
Test(figure, labels_are_elided_and_never_overlap)
{
    as_fig_ctx *ctx;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&ctx, NULL, &err), AS_OK);
    for (int n = 8; n <= 200; n *= 5) {
        const char **words = calloc((size_t)n, sizeof *words);
        for (int i = 0; i < n; i++)
            words[i] = i % 3 ? " word" : " an extraordinarily long token label that goes on and on and on";
        one_hot o;
        one_hot_make(&o, n, 1, 0, words);
        as_fig_style st;
        as_fig_style_default(&st);
        st.dpi = 72;
        as_figure *f;
        cr_assert_eq(as_fig_heatmap(&f, ctx, &st, "t", &o.h, &err), AS_OK, "%s", err.msg);
        char *dir = make_tmpdir(), path[256];
        snprintf(path, sizeof path, "%s/f.svg", dir);
        cr_assert_eq(as_figure_write(f, path, AS_FIG_SVG, &err), AS_OK, "%s", err.msg);
        char *svg = read_all(path, NULL);
        cr_assert(!strstr(svg, "goes on and on and on</text>"), "long labels are elided");
        cr_assert(strstr(svg, "\xE2\x80\xA6</text>"), "with an ellipsis");
        /* Successive horizontal labels: baselines at least a font size apart. */
        double prev = -1e9, size = 0;
        int seen = 0;
        for (const char *p = svg; (p = strstr(p, "<text class=\"label\"")); p++) {
            const char *eol = strchr(p, '\n');
            if (strstr(p, "rotate(") && strstr(p, "rotate(") < eol)
                continue;
            double y = strtod(strstr(p, " y=\"") + 4, NULL);
            size = strtod(strstr(p, "font-size=\"") + 11, NULL);
            cr_assert_geq(y - prev, size, "labels %g and %g px apart at %g px (n=%d)", prev, y, size, n);
            prev = y;
            seen++;
        }
        cr_assert_gt(seen, 0);
        cr_assert_geq(size, 5.0, "labels stay readable (%g pt)", size);
        free(svg);
        as_figure_free(f);
        one_hot_free(&o);
        remove_tree(dir);
        free(dir);
        free(words);
    }
    as_fig_ctx_free(ctx);
}

/* bertviz's model view as one figure: 12 layers × 12 heads × 64 tokens. */
Test(figure, grid_of_144_heads_uses_headers_not_cell_labels)
{
    enum { L = 12, H = 12, N = 64 };
    as_fig_ctx *ctx;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&ctx, NULL, &err), AS_OK);
    one_hot o;
    one_hot_make(&o, N, 5, 2, NULL);
    as_fig_matrix mats[L * H];
    char row_buf[L][24], col_buf[H][24];
    const char *rows[L], *cols[H];
    for (int i = 0; i < L * H; i++)
        mats[i] = o.m;
    for (int i = 0; i < L; i++)
        snprintf(row_buf[i], sizeof row_buf[i], "Layer %d", i), rows[i] = row_buf[i];
    for (int i = 0; i < H; i++)
        snprintf(col_buf[i], sizeof col_buf[i], "Head %d", i), cols[i] = col_buf[i];
    as_fig_heat h = o.h;
    h.n_mats = L * H, h.mats = mats, h.grid_rows = L, h.grid_cols = H;
    h.grid_row_names = rows, h.grid_col_names = cols;
    as_fig_style st;
    as_fig_style_default(&st);
    as_figure *f;
    cr_assert_eq(as_fig_heatmap(&f, ctx, &st, "all", &h, &err), AS_OK, "%s", err.msg);
    int w, ht;
    as_figure_size(f, &w, &ht);
    cr_assert(w < 3600 && ht < 3600, "a 12x12 grid stays page-sized: %dx%d px at 200 dpi", w, ht);
    int r0[4], r1[4];
    cr_assert_eq(as_figure_cell_rect(f, 0, 0, 0, r0), AS_OK);
    cr_assert_eq(as_figure_cell_rect(f, L * H - 1, N - 1, N - 1, r1), AS_OK);
    cr_assert_geq(r0[2], 1);
    cr_assert_eq(r0[2], r0[3]);
    char *dir = make_tmpdir(), path[256];
    snprintf(path, sizeof path, "%s/g.svg", dir);
    cr_assert_eq(as_figure_write(f, path, AS_FIG_SVG, &err), AS_OK, "%s", err.msg);
    char *svg = read_all(path, NULL), why[200];
    cr_assert(xml_well_formed(svg, why, sizeof why), "%s", why);
    cr_assert_eq(count_substr(svg, "class=\"label\""), 0, "cells too small for token labels");
    cr_assert_eq(count_substr(svg, "class=\"header\""), L + H);
    cr_assert_eq(count_substr(svg, "<image class=\"heatmap\""), L * H, "large grids embed pixel images");
    free(svg);
    /* The raster: every panel has the hot cell at the same place. */
    snprintf(path, sizeof path, "%s/g.png", dir);
    cr_assert_eq(as_figure_write(f, path, AS_FIG_PNG, &err), AS_OK, "%s", err.msg);
    png_img im;
    png_load(path, &im);
    uint8_t one[3];
    as_colormap(AS_CMAP_VIRIDIS, 1, one);
    for (int m = 0; m < L * H; m += 13) {
        int r[4];
        as_figure_cell_rect(f, m, 5, 2, r);
        cr_assert(same(px(im.rgb, im.w, r[0], r[1]), one), "panel %d", m);
        as_figure_cell_rect(f, m, 5, 3, r);
        cr_assert(!same(px(im.rgb, im.w, r[0], r[1]), one), "panel %d", m);
    }
    png_free_img(&im);
    as_figure_free(f);
    one_hot_free(&o);
    as_fig_ctx_free(ctx);
    remove_tree(dir);
    free(dir);
}

Test(figure, charts_from_plain_data)
{
    as_fig_ctx *ctx;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&ctx, NULL, &err), AS_OK);
    as_fig_style st;
    as_fig_style_default(&st);
    const char *labels[] = {"\xC2\xB7" "the", "\xC2\xB7" "cat", "\xC2\xB7" "sat", "\xC2\xB7" "on"};
    as_norm_stat s1[4], s2[4];
    for (int i = 0; i < 4; i++) {
        s1[i] = (as_norm_stat){0.1f * i, 1 + i, 1, -2, 3, {5, 7, 1, 2}, {3, -2, 1, 0.5f}};
        s2[i] = (as_norm_stat){-0.1f * i, 2 + i, 1, -4, 9, {5, 9, 0, 3}, {9, 4, -1, 0.2f}};
    }
    as_fig_norms nm = {4, labels, false, 16, 2, {{"ln1", s1}, {"ln2", s2}}};
    as_figure *f;
    for (int log = 0; log < 2; log++) {
        st.log_scale = log;
        cr_assert_eq(as_fig_norm_chart(&f, ctx, &st, "norms", &nm, &err), AS_OK, "%s", err.msg);
        uint8_t *rgb;
        cr_assert_eq(as_figure_raster(f, &rgb, &err), AS_OK);
        free(rgb);
        as_figure_free(f);
    }
    float p[3] = {0.5f, 0.25f, 0.001f};
    as_fig_probs pr = {3, labels, p, "context"};
    cr_assert_eq(as_fig_prob_bars(&f, ctx, &st, "probs", &pr, &err), AS_OK, "%s", err.msg);
    as_figure_free(f);
    int pos[2] = {4, 5}, rank[2] = {1, 3};
    float cp[2] = {0.5f, 0.1f}, ap[4] = {0.5f, 0.2f, 0.6f, 0.2f};
    const char *alts[4] = {"a", "b", "c", "d"}, *chosen[2] = {"a", "e"};
    as_fig_trace tr = {2, 2, pos, chosen, cp, rank, alts, ap};
    cr_assert_eq(as_fig_prob_trace(&f, ctx, &st, "trace", &tr, &err), AS_OK, "%s", err.msg);
    as_figure_free(f);
    st.dpi = 5;
    cr_assert_eq(as_fig_prob_trace(&f, ctx, &st, "trace", &tr, &err), AS_ERR);
    cr_assert(strstr(err.msg, "dpi"), "%s", err.msg);
    as_fig_ctx_free(ctx);
}

/* ---- the commands ---- */

/* Runs cmd with the session's output captured into out. */
static int run_captured(as_session *s, const char *cmd, char *out, size_t cap, char *msg, size_t mcap)
{
    FILE *saved = s->out, *tmp = tmpfile();
    cr_assert(tmp);
    s->out = tmp;
    int rc = run_cmd(s, cmd, msg, mcap);
    s->out = saved;
    rewind(tmp);
    size_t n = fread(out, 1, cap - 1, tmp);
    out[n] = '\0';
    fclose(tmp);
    return rc;
}

/* A capture edited by hand: layer 0 head 2 attends only from 3 to 1. */
Test(figure, export_attn_from_a_hand_built_capture)
{
    as_session *s = open_session(GPT2, 64);
    run_ok(s, "prompt-ids 276 257 262 264 266 258; finish");
    int hk = as_program_hook(s->prog, AS_HK_PATTERN, 0), n = 6;
    for (int q = 0; q < n; q++)
        for (int k = 0; k <= q; k++)
            s->cap->store[hk][as_capture_attn_offset(s->cap, hk, 2, q) + (size_t)k] = q == 3 && k == 1;
    char *dir = make_tmpdir(), cmd[512], out[1024], msg[1024], path[256];
    snprintf(path, sizeof path, "%s/head.png", dir);
    snprintf(cmd, sizeof cmd, "export attn 0 2 %s cmap=magma", path);
    cr_assert_eq(run_captured(s, cmd, out, sizeof out, msg, sizeof msg), AS_OK, "%s", msg);
    png_img im;
    png_load(path, &im);
    char want[512];
    snprintf(want, sizeof want, "wrote %s: attention layer 0 head 2 %dx%d px\n", path, im.w, im.h);
    cr_assert_str_eq(out, want);
    check_one_hot(im.rgb, im.w, im.h, AS_CMAP_MAGMA, n, 3, 1);
    cr_assert_str_eq(text_chunk(&im, "Model"), "tiny-gpt2");
    cr_assert_str_eq(text_chunk(&im, "Layer"), "0");
    cr_assert_str_eq(text_chunk(&im, "Head"), "2");
    cr_assert_str_eq(text_chunk(&im, "Positions"), "0:6");
    cr_assert_str_eq(text_chunk(&im, "Colormap"), "magma");
    cr_assert(text_chunk(&im, "Prompt") && strstr(text_chunk(&im, "Prompt"), "the cat"), "prompt recorded");
    cr_assert(strstr(text_chunk(&im, "Software"), "attnscope"));
    cr_assert(strstr(text_chunk(&im, "Title"), "Layer 0") && strstr(text_chunk(&im, "Title"), "Head 2"));
    cr_assert_eq(im.res_x, 7874);
    png_free_img(&im);

    /* A window and a lower dpi: 4 positions, cell (3,1) becomes (2,0). */
    snprintf(cmd, sizeof cmd, "export attn 0 2 %s tokens=1:5 dpi=100", path);
    cr_assert_eq(run_captured(s, cmd, out, sizeof out, msg, sizeof msg), AS_OK, "%s", msg);
    png_load(path, &im);
    check_one_hot(im.rgb, im.w, im.h, AS_CMAP_VIRIDIS, 4, 2, 0);
    cr_assert_eq(im.res_x, 3937);
    cr_assert_str_eq(text_chunk(&im, "Positions"), "1:5");
    png_free_img(&im);

    /* SVG: the same figure as vectors. */
    snprintf(path, sizeof path, "%s/head.svg", dir);
    snprintf(cmd, sizeof cmd, "export attn 0 2 %s title=\"My head\"", path);
    cr_assert_eq(run_captured(s, cmd, out, sizeof out, msg, sizeof msg), AS_OK, "%s", msg);
    cr_assert(strstr(out, " viewBox\n"), "%s", out);
    char *svg = read_all(path, NULL), why[200];
    cr_assert(xml_well_formed(svg, why, sizeof why), "%s", why);
    cr_assert_eq(count_substr(svg, "class=\"cell\""), n * n);
    cr_assert_eq(count_substr(svg, "class=\"label\""), 2 * n);
    cr_assert(strstr(svg, ">My head</text>"));
    cr_assert(strstr(svg, "Model: tiny-gpt2"));
    free(svg);
    close_session(s);
    remove_tree(dir);
    free(dir);
}

/* `\xFF` in a quoted title is a raw byte: the files stay valid UTF-8. */
Test(figure, invalid_utf8_in_a_title_is_replaced)
{
    as_session *s = open_session(GPT2, 64);
    run_ok(s, "prompt-ids 276 257 262; finish");
    char *dir = make_tmpdir(), cmd[512], msg[1024];
    snprintf(cmd, sizeof cmd, "export attn 0 0 %s/t.svg \"title=bad \\xFF byte\"", dir);
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_OK, "%s", msg);
    snprintf(cmd, sizeof cmd, "export attn 0 0 %s/t.png \"title=bad \\xFF byte\"", dir);
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_OK, "%s", msg);
    char path[300], why[200];
    snprintf(path, sizeof path, "%s/t.svg", dir);
    char *svg = read_all(path, NULL);
    cr_assert(xml_well_formed(svg, why, sizeof why), "%s", why);
    cr_assert(strstr(svg, ">bad \xEF\xBF\xBD byte</text>"), "U+FFFD stands in for the byte");
    free(svg);
    snprintf(path, sizeof path, "%s/t.png", dir);
    png_img im;
    png_load(path, &im);
    cr_assert_str_eq(text_chunk(&im, "Title"), "bad \xEF\xBF\xBD byte");
    png_free_img(&im);
    close_session(s);
    remove_tree(dir);
    free(dir);
}

Test(figure, every_export_writes_a_decodable_png)
{
    as_session *s = open_session(LLAMA, 64);
    run_ok(s, "prompt the cat sat on a mat; finish");
    char *dir = make_tmpdir(), cmd[512], out[1024], msg[1024], path[256];
    static const char *const what[] = {"attn 1 3", "grid 0", "grid all", "norms 1", "norms final", "probs",
                                       "attn 0 0 %s scale=log hide-bos=yes", "probs %s top=3 scale=log"};
    for (size_t i = 0; i < sizeof what / sizeof *what; i++) {
        snprintf(path, sizeof path, "%s/f%zu.png", dir, i);
        if (strstr(what[i], "%s")) {
            char tmp[256];
            snprintf(tmp, sizeof tmp, what[i], path);
            snprintf(cmd, sizeof cmd, "export %s", tmp);
        } else {
            snprintf(cmd, sizeof cmd, "export %s %s", what[i], path);
        }
        cr_assert_eq(run_captured(s, cmd, out, sizeof out, msg, sizeof msg), AS_OK, "%s: %s", cmd, msg);
        png_img im;
        png_load(path, &im);
        char tail[64];
        snprintf(tail, sizeof tail, " %dx%d px\n", im.w, im.h);
        cr_assert(!strncmp(out, "wrote ", 6) && strstr(out, tail), "%s -> %s", cmd, out);
        cr_assert_str_eq(text_chunk(&im, "Model"), "tiny-llama");
        cr_assert(text_chunk(&im, "Prompt"));
        png_free_img(&im);
        snprintf(path, sizeof path, "%s/f%zu.svg", dir, i);
        if (!strstr(what[i], "%s")) {
            snprintf(cmd, sizeof cmd, "export %s %s", what[i], path);
            cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_OK, "%s: %s", cmd, msg);
            char *svg = read_all(path, NULL), why[200];
            cr_assert(xml_well_formed(svg, why, sizeof why), "%s: %s", cmd, why);
            free(svg);
        }
    }
    close_session(s);
    remove_tree(dir);
    free(dir);
}

Test(figure, probs_trace_uses_the_logits_each_token_was_drawn_from)
{
    as_session *s = open_session(GPT2, 64);
    run_ok(s, "prompt-ids 276 257 262; set temp 0; gen 4");
    char *dir = make_tmpdir(), cmd[512], out[1024], msg[1024], path[256];
    snprintf(path, sizeof path, "%s/trace.svg", dir);
    snprintf(cmd, sizeof cmd, "export probs-trace %s top=3", path);
    cr_assert_eq(run_captured(s, cmd, out, sizeof out, msg, sizeof msg), AS_OK, "%s", msg);
    cr_assert(strstr(out, "probability trace, 4 steps"), "%s", out);
    char *svg = read_all(path, NULL), why[200];
    cr_assert(xml_well_formed(svg, why, sizeof why), "%s", why);
    /* Greedy: each chosen token is the top one, outlined in row 1. */
    cr_assert_eq(count_substr(svg, "class=\"cell\""), 4 * (3 + 1));
    cr_assert_eq(count_substr(svg, "stroke=\"#d62728\""), 4);
    free(svg);
    close_session(s);

    /* Without the logits captured there is nothing to trace: say why. */
    s = open_session(GPT2, 0);
    run_ok(s, "prompt-ids 276 257 262; gen 2");
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "unembed.hook_out") && strstr(msg, "not captured"), "%s", msg);
    close_session(s);
    s = open_session(GPT2, 64);
    run_ok(s, "prompt-ids 276 257 262; finish");
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "no generated tokens"), "%s", msg);
    close_session(s);
    remove_tree(dir);
    free(dir);
}

Test(figure, bad_options_and_places_are_one_clear_error)
{
    as_session *s = open_session(GPT2, 64);
    run_ok(s, "prompt-ids 276 257 262; finish");
    char *dir = make_tmpdir(), cmd[512], msg[1024];
    static const struct {
        const char *args, *want;
    } cases[] = {
        {"attn 0 0 %s/x.png cmap=jet", "cmap must be viridis, magma or gray"},
        {"attn 0 0 %s/x.png dpi=5", "dpi must be"},
        {"attn 0 0 %s/x.png scale=cubic", "scale must be linear or log"},
        {"attn 0 0 %s/x.png tokens=5", "tokens must be FROM:TO"},
        {"attn 0 0 %s/x.png tokens=2:1", "selects no positions"},
        {"attn 0 0 %s/x.png tokens=0:99", "selects no positions"},
        {"attn 0 0 %s/x.png colour=red", "bad option 'colour'"},
        {"attn 0 0 %s/x.png loud", "bad option 'loud'"},
        {"probs %s/x.png cmap=magma", "bad option 'cmap'"},
        {"attn 0 9 %s/x.png", "the head must be"},
        {"attn 7 0 %s/x.png", "the layer must be"},
        {"attn 0 0 %s/x.jpeg", ".png or .svg"},
        {"attn 0 0 /dev/null/x.png%s", "cannot write in directory"},
        {"attn 0 0 %s/nodir/x.png", "cannot write in directory"},
        {"heatmap %s", "unknown figure 'heatmap'"},
        {"attn 0%s", "usage: export attn"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char args[256];
        snprintf(args, sizeof args, cases[i].args, strstr(cases[i].args, "/dev/null") ? "" : dir);
        snprintf(cmd, sizeof cmd, "export %s", args);
        cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_ERR, "%s succeeded", cmd);
        cr_assert(strstr(msg, cases[i].want), "%s: '%s' lacks '%s'", cmd, msg, cases[i].want);
    }
    /* The session goes on, and nothing was left in the directory. */
    run_ok(s, "top 2");
    char path[300];
    snprintf(path, sizeof path, "%s/x.png", dir);
    snprintf(cmd, sizeof cmd, "export attn 0 0 %s", path);
    run_ok(s, cmd);
    DIR *dp = opendir(dir);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(dp)))
        files += e->d_name[0] != '.';
    closedir(dp);
    cr_assert_eq(files, 1);
    close_session(s);
    remove_tree(dir);
    free(dir);
}

/* A disk that fills mid-write (a file-size limit stands in for it): the
 * error is reported, the old file is intact, no temporary file is left. */
Test(figure, a_failed_write_leaves_the_old_file)
{
    as_session *s = open_session(GPT2, 64);
    run_ok(s, "prompt-ids 276 257 262 264 266 258 271 11; finish");
    char *dir = make_tmpdir(), cmd[512], msg[1024], path[300];
    snprintf(path, sizeof path, "%s/keep.png", dir);
    FILE *f = fopen(path, "w");
    fputs("the old figure", f);
    fclose(f);
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = 4096;
    cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
    snprintf(cmd, sizeof cmd, "export grid all %s", path);
    int rc = run_cmd(s, cmd, msg, sizeof msg);
    setrlimit(RLIMIT_FSIZE, &old);
    cr_assert_eq(rc, AS_ERR, "a 4 KB limit should stop the write");
    cr_assert(strstr(msg, "keep.png"), "%s", msg);
    char *kept = read_all(path, NULL);
    cr_assert_str_eq(kept, "the old figure");
    free(kept);
    DIR *dp = opendir(dir);
    struct dirent *e;
    while ((e = readdir(dp)))
        cr_assert(!strstr(e->d_name, ".tmp."), "temporary file %s left behind", e->d_name);
    closedir(dp);
    run_ok(s, cmd); /* and with room, it is replaced */
    png_img im;
    png_load(path, &im);
    png_free_img(&im);
    close_session(s);
    remove_tree(dir);
    free(dir);
}

Test(figure, dump_all_writes_every_hook_and_an_index)
{
    as_session *s = open_session(GPT2, 64);
    run_ok(s, "prompt-ids 276 257 262 264; finish");
    char *dir = make_tmpdir(), sub[300], cmd[512], out[1024], msg[1024], path[600];
    snprintf(sub, sizeof sub, "%s/capture", dir);
    snprintf(cmd, sizeof cmd, "dump all %s", sub);
    cr_assert_eq(run_captured(s, cmd, out, sizeof out, msg, sizeof msg), AS_OK, "%s", msg);
    int captured = 0;
    for (int h = 0; h < s->prog->n_hooks; h++)
        captured += as_capture_has(s->cap, h) && s->cap->filled[h] > 0;
    char want[512];
    snprintf(want, sizeof want, "wrote %s: %d arrays (.npy) and index.json over 4 tokens\n", sub, captured);
    cr_assert_str_eq(out, want);
    snprintf(path, sizeof path, "%s/index.json", sub);
    char *idx = read_all(path, NULL);
    cr_assert(strstr(idx, "\"tokens\": [276, 257, 262, 264]"), "%s", idx);
    cr_assert(strstr(idx, "\"model\": \"tiny-gpt2\""));
    cr_assert(strstr(idx, "{\"name\": \"blocks.1.attn.hook_pattern\", \"file\": \"blocks.1.attn.hook_pattern.npy\", "
                          "\"dtype\": \"float32\", \"positions\": 4, \"shape\": [4, 4, 4]}"),
              "%s", idx);
    cr_assert(strstr(idx, "\"name\": \"unembed.hook_out\""));
    cr_assert_eq(count_substr(idx, "\"file\": "), captured);
    free(idx);
    /* Each array equals what `dump HOOK` writes, byte for byte. */
    for (int h = 0; h < s->prog->n_hooks; h++) {
        if (!as_capture_has(s->cap, h))
            continue;
        const char *name = s->prog->hooks[h].name;
        char one[300], dump[1024];
        snprintf(one, sizeof one, "%s/one.npy", dir);
        snprintf(dump, sizeof dump, "dump %s %s", name, one);
        run_ok(s, dump);
        snprintf(path, sizeof path, "%s/%s.npy", sub, name);
        size_t la, lb;
        char *a = read_all(path, &la), *b = read_all(one, &lb);
        cr_assert(la == lb && !memcmp(a, b, la), "%s differs from dump's", name);
        free(a);
        free(b);
    }
    npy arr;
    snprintf(path, sizeof path, "%s/blocks.0.attn.hook_pattern.npy", sub);
    cr_assert_eq(npy_read(path, &arr), 0);
    cr_assert_eq(arr.ndim, 3);
    cr_assert_eq(arr.shape[0], 4);
    npy_free(&arr);
    /* Into a file's place, or before any context: a clear error. */
    snprintf(cmd, sizeof cmd, "dump all %s/index.json", sub);
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "not a directory"), "%s", msg);
    cr_assert_eq(run_cmd(s, "dump all /dev/null/x", msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "cannot create"), "%s", msg);
    close_session(s);
    s = open_session(GPT2, 64);
    snprintf(cmd, sizeof cmd, "dump all %s/empty", dir);
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "no context"), "%s", msg);
    close_session(s);
    remove_tree(dir);
    free(dir);
}
