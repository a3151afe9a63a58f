/* Figures and array export. Every PNG is decoded again with libpng and
 * checked: size, colour type, resolution, text chunks, and pixels — a
 * known pattern (one cell at 1.0, the rest 0, the upper triangle masked)
 * must land in the right cell with the colormap's exact colour. The cell
 * grid is found from the pixels themselves, not from the layout. PDFs and
 * SVGs are checked by other programs: poppler (pdfinfo accepts them,
 * pdftotext finds the words where they should be and none overlapping,
 * pdftoppm renders the same cells) and librsvg (rsvg-convert renders
 * them); without those tools (Debian poppler-utils, librsvg2-bin; `make
 * fig-tools` installs them) those tests skip, saying so loudly. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <png.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "attnscope/colormap.h"
#include "attnscope/figure.h"
#include "helpers.h"

#define GPT2 "fixtures/tiny-gpt2.gguf"
#define LLAMA "fixtures/tiny-llama.gguf"
#define SPACE_MARK "\xE2\x90\xA3" /* ␣ */

/* ---- helpers: files, PNG decoding, pixel geometry, XML, other programs ---- */

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
    int w, h;
    uint8_t *rgb;
    png_uint_32 res_x, res_y;
    int res_unit;
    int n_text;
    char keys[32][80];
    char *vals[32];
} png_img;

/* Decodes any 8-bit PNG to RGB (other programs write RGBA, or grey). */
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
    png_get_pHYs(png, info, &im->res_x, &im->res_y, &im->res_unit);
    int ct = png_get_color_type(png, info);
    if (png_get_bit_depth(png, info) == 16)
        png_set_strip_16(png);
    if (ct == PNG_COLOR_TYPE_PALETTE)
        png_set_palette_to_rgb(png);
    if (ct == PNG_COLOR_TYPE_GRAY || ct == PNG_COLOR_TYPE_GRAY_ALPHA)
        png_set_gray_to_rgb(png);
    if (ct & PNG_COLOR_MASK_ALPHA)
        png_set_strip_alpha(png);
    png_read_update_info(png, info);
    cr_assert_eq(png_get_rowbytes(png, info), (size_t)im->w * 3);
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

/* Our own PNGs are 8-bit RGB: checked on the file itself. */
static void png_check_rgb8(const char *path)
{
    FILE *f = fopen(path, "rb");
    unsigned char hdr[26];
    cr_assert(f && fread(hdr, 1, 26, f) == 26, "%s", path);
    fclose(f);
    cr_assert_eq(hdr[24], 8, "bit depth");
    cr_assert_eq(hdr[25], PNG_COLOR_TYPE_RGB, "colour type");
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

/* Is tool on the PATH? When not, says so loudly (once per test). */
static bool have_tool(const char *tool)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
    if (system(cmd) == 0)
        return true;
    fprintf(stderr, "\n********************************************************************\n"
                    "*** SKIPPED: %s is not installed, so the PDF/SVG checks that\n"
                    "*** need it did not run. Debian: apt-get install poppler-utils\n"
                    "*** librsvg2-bin (make fig-tools does it as root).\n"
                    "********************************************************************\n\n",
            tool);
    return false;
}

/* Runs a shell command; its standard output (malloc'd) and exit status. */
static char *run_tool(const char *cmd, int *status)
{
    FILE *p = popen(cmd, "r");
    cr_assert(p, "cannot run %s", cmd);
    size_t cap = 1 << 16, n = 0;
    char *out = malloc(cap);
    for (size_t got; (got = fread(out + n, 1, cap - n - 1, p)) > 0;) {
        n += got;
        if (n + 1 == cap)
            out = realloc(out, cap *= 2);
    }
    out[n] = '\0';
    *status = pclose(p);
    return out;
}

/* A word's box from pdftotext -bbox, in points, y down. */
typedef struct word {
    double x0, y0, x1, y1;
    char text[128];
} word;

static int pdf_words(const char *pdf, word *w, int cap)
{
    char cmd[600];
    int status, n = 0;
    snprintf(cmd, sizeof cmd, "pdftotext -bbox '%s' - 2>&1", pdf);
    char *out = run_tool(cmd, &status);
    cr_assert_eq(status, 0, "pdftotext failed on %s: %s", pdf, out);
    for (const char *p = out; n < cap && (p = strstr(p, "<word ")); p++) {
        word *x = &w[n];
        const char *gt = strchr(p, '>'), *end = strstr(p, "</word>");
        cr_assert(gt && end && sscanf(p, "<word xMin=\"%lf\" yMin=\"%lf\" xMax=\"%lf\" yMax=\"%lf\"", &x->x0, &x->y0,
                                      &x->x1, &x->y1) == 4, "%.80s", p);
        snprintf(x->text, sizeof x->text, "%.*s", (int)(end - gt - 1), gt + 1);
        n++;
    }
    free(out);
    return n;
}

/* The overlap of two words' boxes along both axes (points). */
static double overlap(const word *a, const word *b)
{
    double ox = fmin(a->x1, b->x1) - fmax(a->x0, b->x0), oy = fmin(a->y1, b->y1) - fmax(a->y0, b->y0);
    return ox > 0 && oy > 0 ? fmin(ox, oy) : 0;
}

/* Every word inside the page and no two words on top of each other
 * (pdftotext's boxes run from the font's ascent to its descent, so
 * stacked lines may touch: 0.9 pt of overlap is allowed). */
static void check_words_apart(const char *pdf, double page_w, double page_h)
{
    static word w[4000];
    int n = pdf_words(pdf, w, 4000);
    cr_assert_gt(n, 0, "%s has no words", pdf);
    for (int i = 0; i < n; i++) {
        cr_assert(w[i].x0 >= -0.5 && w[i].y0 >= -0.5 && w[i].x1 <= page_w + 0.5 && w[i].y1 <= page_h + 0.5,
                  "%s: '%s' [%g %g %g %g] is off the %gx%g page", pdf, w[i].text, w[i].x0, w[i].y0, w[i].x1, w[i].y1,
                  page_w, page_h);
        for (int j = i + 1; j < n; j++)
            cr_assert_leq(overlap(&w[i], &w[j]), 0.9, "%s: '%s' [%g %g %g %g] overlaps '%s' [%g %g %g %g]", pdf,
                          w[i].text, w[i].x0, w[i].y0, w[i].x1, w[i].y1, w[j].text, w[j].x0, w[j].y0, w[j].x1,
                          w[j].y1);
    }
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
/* The one-hot pattern with keys further back than window - 1 masked too
 * (window 0: causal only). */
static void check_one_hot_window(const uint8_t *rgb, int w, int h, as_cmap cmap, int n, int hot_r, int hot_c,
                                 int window);

static void check_one_hot(const uint8_t *rgb, int w, int h, as_cmap cmap, int n, int hot_r, int hot_c)
{
    check_one_hot_window(rgb, w, h, cmap, n, hot_r, hot_c, 0);
}

static void check_one_hot_window(const uint8_t *rgb, int w, int h, as_cmap cmap, int n, int hot_r, int hot_c,
                                 int window)
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
            bool hidden = k > r || (window > 0 && r - k >= window);
            const uint8_t *want = hidden ? c.masked : r == hot_r && k == hot_c ? c.one : c.zero;
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
    o->m = (as_fig_matrix){o->v, o->mk, NULL, NULL};
    o->h = (as_fig_heat){n, n, (const char *const *)o->labels, (const char *const *)o->labels, "query position",
                         "key position", "attention weight", 1, &o->m, NULL, 1, 1, NULL, NULL, NULL, NULL, 0, 0, NULL};
}

static void one_hot_free(one_hot *o)
{
    for (int i = 0; i < o->n; i++)
        free(o->labels[i]);
    free(o->labels);
    free(o->v);
    free(o->mk);
}


/* ---- figures from plain data ---- */

static const as_fig_caption CAPTION = {"Layer 3 \xC2\xB7 head 5", "model hand-built \xC2\xB7 prompt \xE2\x80\x9CIt is\xE2\x80\x9D",
                                       NULL, 0};

Test(figure, visible_text_shows_whitespace_and_escapes_bytes)
{
    char out[64];
    as_fig_visible_text(" the", 4, out, sizeof out);
    cr_assert_str_eq(out, SPACE_MARK "the");
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

/* At tick size the old marker '·' is a dot like '.', only higher; the
 * open box is several times wider than '.' and flat: measured on the
 * glyphs' ink at 6 pt, the smallest text a figure draws. */
Test(figure, space_marker_is_unmistakable_beside_a_period)
{
    as_fig_ctx *c;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&c, NULL, &err), AS_OK);
    if (!as_fig_ctx_has_font(c))
        cr_skip_test("DejaVu Sans is not installed: the measurement is of its glyphs");
    float pw, ph, dw, dh, sw, sh;
    as_fig_ctx_ink(c, ".", 6, &pw, &ph);
    as_fig_ctx_ink(c, "\xC2\xB7", 6, &dw, &dh);
    as_fig_ctx_ink(c, SPACE_MARK, 6, &sw, &sh);
    cr_assert(fabsf(dw - pw) < 0.3f * pw && fabsf(dh - ph) < 0.3f * ph, "'\xC2\xB7' %gx%g vs '.' %gx%g: alike",
              dw, dh, pw, ph);
    cr_assert_geq(sw, 3 * pw, "the space mark is %g pt wide, '.' %g pt", sw, pw);
    cr_assert_gt(sw, 1.3f * sh, "the space mark is wider than tall (%g x %g)", sw, sh);
    as_fig_ctx_free(c);
}

Test(figure, format_from_file_name)
{
    as_fig_format f;
    as_error err;
    cr_assert_eq(as_fig_format_of("a/b.PNG", &f, &err), AS_OK);
    cr_assert_eq(f, AS_FIG_PNG);
    cr_assert_eq(as_fig_format_of("x.svg", &f, &err), AS_OK);
    cr_assert_eq(f, AS_FIG_SVG);
    cr_assert_eq(as_fig_format_of("x.Pdf", &f, &err), AS_OK);
    cr_assert_eq(f, AS_FIG_PDF);
    cr_assert_eq(as_fig_format_of("x.jpg", &f, &err), AS_ERR);
    cr_assert(strstr(err.msg, "x.jpg") && strstr(err.msg, ".png, .svg or .pdf"), "%s", err.msg);
}

Test(figure, lengths_in_inches_centimetres_millimetres_points)
{
    static const struct {
        const char *v;
        float pt;
    } ok[] = {{"3.3in", 237.6f}, {"8.4cm", 238.110f}, {"84mm", 238.110f}, {"240pt", 240}, {"0.5in", 36}, {"40in", 2880}};
    as_error err;
    for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
        float pt = 0;
        cr_assert_eq(as_fig_parse_length(ok[i].v, "width", &pt, &err), AS_OK, "%s: %s", ok[i].v, err.msg);
        cr_assert_float_eq(pt, ok[i].pt, 0.01f, "%s -> %g", ok[i].v, pt);
    }
    static const char *const bad[] = {"3.3", "in", "3.3 in", "3.3inch", "-1in", "0.4in", "41in", "nanin", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        float pt = 0;
        cr_assert_eq(as_fig_parse_length(bad[i], "height", &pt, &err), AS_ERR, "'%s' was taken", bad[i]);
        cr_assert(!strncmp(err.msg, "height must be", 14), "%s", err.msg);
    }
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
    cr_assert_eq(as_fig_heatmap(&f, ctx, &st, &CAPTION, &o.h, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_figure_add_meta(f, "Model", "hand-built", &err), AS_OK);
    cr_assert_eq(as_figure_add_meta(f, "Prompt", "It is a truth caf\xC3\xA9", &err), AS_OK);
    char *dir = make_tmpdir(), path[256];
    snprintf(path, sizeof path, "%s/one.png", dir);
    cr_assert_eq(as_figure_write(f, path, AS_FIG_PNG, &err), AS_OK, "%s", err.msg);
    int w, h;
    as_figure_size(f, &w, &h);
    cr_assert_eq(w, 660, "3.3 in at 200 dpi"); /* 237.6 pt * 200 / 72 */

    png_img im;
    png_check_rgb8(path);
    png_load(path, &im);
    cr_assert_eq(im.w, w);
    cr_assert_eq(im.h, h);
    cr_assert_eq(im.res_unit, PNG_RESOLUTION_METER);
    cr_assert_eq(im.res_x, 7874); /* 200 dpi */
    cr_assert_eq(im.res_y, 7874);
    cr_assert_str_eq(text_chunk(&im, "Model"), "hand-built");
    cr_assert_str_eq(text_chunk(&im, "Prompt"), "It is a truth caf\xC3\xA9"); /* UTF-8 through iTXt */
    cr_assert_str_eq(text_chunk(&im, "Title"), "Layer 3 \xC2\xB7 head 5");
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
Test(figure, missing_font_file_falls_back_and_still_draws) { one_hot_png(AS_CMAP_VIRIDIS, "/nonexistent/font.ttf"); }

Test(figure, font_fallback_is_reported)
{
    as_fig_ctx *c;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&c, "/nonexistent/font.ttf", &err), AS_OK);
    cr_assert(!as_fig_ctx_has_font(c));
    cr_assert(strstr(as_fig_ctx_font_name(c), "fontconfig") && strstr(as_fig_ctx_font_name(c), "/nonexistent/font.ttf"),
              "%s", as_fig_ctx_font_name(c));
    as_fig_ctx_free(c);
    cr_assert_eq(as_fig_ctx_new(&c, NULL, &err), AS_OK);
    if (access("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf", R_OK) == 0) {
        cr_assert(as_fig_ctx_has_font(c), "DejaVu Sans is installed but was not loaded");
        cr_assert(strstr(as_fig_ctx_font_name(c), "DejaVuSans.ttf"));
    }
    as_fig_ctx_free(c);
}

/* ---- every kind of figure, from plain data ---- */

enum { K_HEAD, K_LONG, K_LAYER, K_MODEL, K_TABLE, K_LINES, K_LINES_ALL, K_NORMS, K_PROBS, K_TRACE, N_KINDS };
static const char *const kind_name[N_KINDS] = {"head", "long", "layer", "model", "table", "lines", "lines-all",
                                               "norms", "probs", "trace"};

/* The data every kind is drawn from: tokens with long and short labels,
 * patterns with a known hot cell, norm statistics, probabilities. */
typedef struct kinds_data {
    one_hot small, big;         /* 7 tokens; 40 tokens with long labels */
    as_fig_matrix mats[12];
    char *names[12], *nums[12];
    float table[2 * 6];
    const char *tcols[6];
    const float *w[8];
    float *lw;                  /* 8 heads of 7 tokens */
    as_norm_stat s1[7], s2[7];
    const char *words[10];
    float p[10];
    int pos[6], rank[6];
    float cp[6], ap[18];
    const char *alts[18], *chosen[6];
    const char *notes[2];
} kinds_data;

static void kinds_init(kinds_data *d)
{
    static const char *const words[] = {"<|endoftext|>", "It", " is", " a", " truth", " universally", " known"};
    memset(d, 0, sizeof *d);
    one_hot_make(&d->small, 7, 3, 1, words);
    const char **longw = calloc(40, sizeof *longw);
    for (int i = 0; i < 40; i++)
        longw[i] = i % 3 ? " word" : " an extraordinarily long token label that goes on and on";
    one_hot_make(&d->big, 40, 5, 2, longw);
    free(longw);
    for (int i = 0; i < 12; i++) {
        d->mats[i] = d->small.m;
        /* room for any int: GCC's -O1 truncation check does not see i < 12 */
        d->names[i] = malloc(24), d->nums[i] = malloc(16);
        snprintf(d->names[i], 24, "head %d", i);
        snprintf(d->nums[i], 16, "%d", i);
    }
    for (int i = 0; i < 12; i++)
        d->table[i] = (float)(i - 6) / 3.0f;
    static const char *const tc[] = {"H0", "H1", "H2", "H3", "bias", "MLP"};
    memcpy(d->tcols, tc, sizeof tc);
    d->lw = calloc(8 * 49, sizeof *d->lw);
    for (int h = 0; h < 8; h++) {
        for (int q = 0; q < 7; q++)
            for (int k = 0; k <= q; k++)
                d->lw[h * 49 + q * 7 + k] = 1.0f / (float)(q + 1);
        d->w[h] = d->lw + h * 49;
    }
    for (int i = 0; i < 7; i++) {
        d->s1[i] = (as_norm_stat){0.1f * i, 1 + i, 1, -2, 3, {5, 7, 1, 2}, {3, -2, 1, 0.5f}};
        d->s2[i] = (as_norm_stat){-0.1f * i, 2 + i, 1, -4, 9, {5, 9, 0, 3}, {9, 4, -1, 0.2f}};
    }
    static const char *const pw[] = {SPACE_MARK "the", SPACE_MARK "a", ",", SPACE_MARK "extraordinarily", "\xE2\x86\xB5",
                                     SPACE_MARK "of", ".", SPACE_MARK "and", SPACE_MARK "to", SPACE_MARK "in"};
    memcpy(d->words, pw, sizeof pw);
    for (int i = 0; i < 10; i++)
        d->p[i] = 0.4f / (float)(i + 1);
    for (int i = 0; i < 6; i++) {
        d->pos[i] = 7 + i, d->rank[i] = 1 + i % 3, d->cp[i] = 0.5f / (float)(1 + i % 3);
        d->chosen[i] = words[i];
        for (int k = 0; k < 3; k++)
            d->ap[i * 3 + k] = 0.5f / (float)(k + 1), d->alts[i * 3 + k] = words[(i + k) % 7];
    }
    d->notes[0] = "Positions 1 to 6 of 0 to 40 shown (tokens=1:7); labels give each token's position.";
    d->notes[1] = "hide-bos: the first token is hidden and rows are not renormalised.";
}

static void kinds_free(kinds_data *d)
{
    one_hot_free(&d->small);
    one_hot_free(&d->big);
    for (int i = 0; i < 12; i++)
        free(d->names[i]), free(d->nums[i]);
    free(d->lw);
}

static int make_kind(int kind, kinds_data *d, as_fig_ctx *ctx, const as_fig_style *st, as_figure **f, as_error *err)
{
    as_fig_caption cap = CAPTION;
    cap.notes = d->notes, cap.n_notes = 2;
    as_fig_heat h = d->small.h;
    switch (kind) {
    case K_HEAD: return as_fig_heatmap(f, ctx, st, &cap, &h, err);
    case K_LONG: return as_fig_heatmap(f, ctx, st, &cap, &d->big.h, err);
    case K_LAYER:
        h.n_mats = 8, h.mats = d->mats, h.mat_titles = (const char *const *)d->names, h.grid_rows = h.grid_cols = 0;
        return as_fig_heatmap(f, ctx, st, &cap, &h, err);
    case K_MODEL:
        h.n_mats = 12, h.mats = d->mats, h.grid_rows = 3, h.grid_cols = 4;
        h.grid_row_names = (const char *const *)d->nums, h.grid_col_names = (const char *const *)d->nums;
        h.grid_row_axis = "layer", h.grid_col_axis = "head";
        return as_fig_heatmap(f, ctx, st, &cap, &h, err);
    case K_TABLE: {
        static const char *const rows[] = {"0", "1"};
        as_fig_matrix m = {d->table, NULL, NULL, NULL};
        as_fig_heat t = {2, 6, rows, d->tcols, "layer", "component", "contribution to the logit", 1, &m, NULL, 1, 1,
                         NULL, NULL, NULL, NULL, -2, 2, NULL};
        return as_fig_heatmap(f, ctx, st, &cap, &t, err);
    }
    case K_LINES:
    case K_LINES_ALL: {
        as_fig_lines ln = {7, (const char *const *)d->small.labels, kind == K_LINES ? 1 : 8, d->w,
                           kind == K_LINES ? NULL : (const char *const *)d->names};
        return as_fig_lines_view(f, ctx, st, &cap, &ln, err);
    }
    case K_NORMS: {
        as_fig_norms nm = {7, (const char *const *)d->small.labels, false, 16, 2, {{"ln1", d->s1}, {"ln2", d->s2}}};
        return as_fig_norm_chart(f, ctx, st, &cap, &nm, err);
    }
    case K_PROBS: {
        as_fig_probs pr = {10, d->words, d->p};
        return as_fig_prob_bars(f, ctx, st, &cap, &pr, err);
    }
    default: {
        as_fig_trace tr = {6, 3, d->pos, d->chosen, d->cp, d->rank, d->alts, d->ap};
        return as_fig_prob_trace(f, ctx, st, &cap, &tr, err);
    }
    }
}

/* Every kind, one column wide (the default) and page wide: the width
 * asked for, and no text under 6 pt. */
Test(figure, every_kind_fits_the_width_with_no_text_under_6pt)
{
    as_fig_ctx *ctx;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&ctx, NULL, &err), AS_OK);
    kinds_data d;
    kinds_init(&d);
    static const float widths[] = {237.6f, 504, 160};
    for (size_t wi = 0; wi < 3; wi++)
        for (int k = 0; k < N_KINDS; k++) {
            as_fig_style st;
            as_fig_style_default(&st);
            st.width_pt = widths[wi];
            as_figure *f;
            cr_assert_eq(make_kind(k, &d, ctx, &st, &f, &err), AS_OK, "%s at %g pt: %s", kind_name[k], widths[wi],
                         err.msg);
            float w, h;
            as_figure_size_pt(f, &w, &h);
            cr_assert_float_eq(w, widths[wi], 0.4f, "%s is %g pt wide, asked %g", kind_name[k], w, widths[wi]);
            cr_assert_geq(as_figure_min_font_pt(f), 6.0f, "%s at %g pt has %g pt text", kind_name[k], widths[wi],
                          as_figure_min_font_pt(f));
            cr_assert_leq(as_figure_min_font_pt(f), 7.0f, "%s: the ticks are a point under the 8 pt body",
                          kind_name[k]);
            as_figure_free(f);
        }
    kinds_free(&d);
    as_fig_ctx_free(ctx);
}

Test(figure, size_and_font_options_are_obeyed)
{
    as_fig_ctx *ctx;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&ctx, NULL, &err), AS_OK);
    kinds_data d;
    kinds_init(&d);
    for (int k = 0; k < N_KINDS; k++) {
        as_fig_style st;
        as_fig_style_default(&st);
        st.width_pt = 7 * 72, st.height_pt = 5 * 72, st.font_pt = 10, st.dpi = 100;
        as_figure *f;
        cr_assert_eq(make_kind(k, &d, ctx, &st, &f, &err), AS_OK, "%s: %s", kind_name[k], err.msg);
        int w, h;
        as_figure_size(f, &w, &h);
        cr_assert(w == 700 && h == 500, "%s is %dx%d px, asked 7x5 in at 100 dpi", kind_name[k], w, h);
        cr_assert_float_eq(as_figure_min_font_pt(f), 9.0f, 0.01f, "%s: font=10 puts ticks at 9 pt", kind_name[k]);
        as_figure_free(f);
        /* font= below 6 is the user's choice: then nothing is larger than asked. */
        st.font_pt = 5;
        cr_assert_eq(make_kind(k, &d, ctx, &st, &f, &err), AS_OK, "%s: %s", kind_name[k], err.msg);
        cr_assert_float_eq(as_figure_min_font_pt(f), 5.0f, 0.01f, "%s", kind_name[k]);
        as_figure_free(f);
    }
    /* A size nothing fits in: one message naming the option. */
    as_fig_style st;
    as_fig_style_default(&st);
    st.width_pt = 36;
    as_figure *f = NULL;
    cr_assert_eq(make_kind(K_LONG, &d, ctx, &st, &f, &err), AS_ERR);
    cr_assert(strstr(err.msg, "width=0.50in is too narrow"), "%s", err.msg);
    cr_assert_null(f);
    st.width_pt = 237.6f, st.height_pt = 36;
    cr_assert_eq(make_kind(K_NORMS, &d, ctx, &st, &f, &err), AS_ERR);
    cr_assert(strstr(err.msg, "height=0.50in is too small"), "%s", err.msg);
    st.height_pt = 0, st.font_pt = 2;
    cr_assert_eq(make_kind(K_HEAD, &d, ctx, &st, &f, &err), AS_ERR);
    cr_assert(strstr(err.msg, "font must be from 4 to 36"), "%s", err.msg);
    st.font_pt = 8, st.dpi = 5;
    cr_assert_eq(make_kind(K_TRACE, &d, ctx, &st, &f, &err), AS_ERR);
    cr_assert(strstr(err.msg, "dpi"), "%s", err.msg);
    kinds_free(&d);
    as_fig_ctx_free(ctx);
}

/* A colour bar stands beside the panels no taller than they are, or lies
 * under panels too short for it. */
Test(figure, colour_bar_never_taller_than_the_plot)
{
    as_fig_ctx *ctx;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&ctx, NULL, &err), AS_OK);
    kinds_data d;
    kinds_init(&d);
    static const int kinds[] = {K_HEAD, K_LONG, K_LAYER, K_MODEL, K_TABLE};
    static const float widths[] = {237.6f, 504};
    int vertical = 0, horizontal = 0;
    for (size_t wi = 0; wi < 2; wi++)
        for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
            as_fig_style st;
            as_fig_style_default(&st);
            st.width_pt = widths[wi];
            as_figure *f;
            cr_assert_eq(make_kind(kinds[i], &d, ctx, &st, &f, &err), AS_OK, "%s", err.msg);
            float cb[4];
            int first[4], last[4], n_mats = kinds[i] == K_LAYER ? 8 : kinds[i] == K_MODEL ? 12 : 1;
            int rows = kinds[i] == K_TABLE ? 2 : kinds[i] == K_LONG ? 40 : 7, cols = kinds[i] == K_TABLE ? 6 : rows;
            cr_assert_eq(as_figure_cbar_rect(f, cb), AS_OK);
            cr_assert_eq(as_figure_cell_rect(f, 0, 0, 0, first), AS_OK);
            cr_assert_eq(as_figure_cell_rect(f, n_mats - 1, rows - 1, cols - 1, last), AS_OK);
            float top = (float)first[1], bottom = (float)(last[1] + last[3]);
            if (cb[3] > cb[2]) {
                vertical++;
                cr_assert_geq(cb[1], top - 1, "%s: the bar starts above the plot", kind_name[kinds[i]]);
                cr_assert_leq(cb[1] + cb[3], bottom + 1, "%s: bar %g px, plot %g px", kind_name[kinds[i]], cb[3],
                              bottom - top);
            } else {
                horizontal++;
                cr_assert_geq(cb[1], bottom, "%s: a lying bar goes under the plot", kind_name[kinds[i]]);
            }
            as_figure_free(f);
        }
    cr_assert(vertical > 0 && horizontal > 0, "both kinds of bar were drawn (%d, %d)", vertical, horizontal);
    kinds_free(&d);
    as_fig_ctx_free(ctx);
}

/* bertviz's model view as one figure: 12 layers × 12 heads × 64 tokens,
 * page wide: cells of a pixel and a fraction, yet every pixel is one
 * cell's exact colour; in one column there is not a pixel a cell, said. */
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
        snprintf(row_buf[i], sizeof row_buf[i], "%d", i), rows[i] = row_buf[i];
    for (int i = 0; i < H; i++)
        snprintf(col_buf[i], sizeof col_buf[i], "%d", i), cols[i] = col_buf[i];
    as_fig_heat h = o.h;
    h.n_mats = L * H, h.mats = mats, h.grid_rows = L, h.grid_cols = H;
    h.grid_row_names = rows, h.grid_col_names = cols, h.grid_row_axis = "layer", h.grid_col_axis = "head";
    as_fig_style st;
    as_fig_style_default(&st);
    as_figure *f = NULL;
    cr_assert_eq(as_fig_heatmap(&f, ctx, &st, &CAPTION, &h, &err), AS_ERR);
    cr_assert(strstr(err.msg, "width=3.30in is too narrow for a pixel per cell"), "%s", err.msg);
    st.width_pt = 7 * 72;
    cr_assert_eq(as_fig_heatmap(&f, ctx, &st, &CAPTION, &h, &err), AS_OK, "%s", err.msg);
    int w, ht;
    as_figure_size(f, &w, &ht);
    cr_assert_eq(w, 1400);
    cr_assert_lt(ht, 2000, "a 12x12 grid page wide: %dx%d px at 200 dpi", w, ht);
    char *dir = make_tmpdir(), path[256];
    snprintf(path, sizeof path, "%s/g.png", dir);
    cr_assert_eq(as_figure_write(f, path, AS_FIG_PNG, &err), AS_OK, "%s", err.msg);
    png_img im;
    png_load(path, &im);
    uint8_t one[3], zero[3];
    as_colormap(AS_CMAP_VIRIDIS, 1, one);
    as_colormap(AS_CMAP_VIRIDIS, 0, zero);
    for (int m = 0; m < L * H; m += 7) {
        int r[4];
        cr_assert_eq(as_figure_cell_rect(f, m, 5, 2, r), AS_OK);
        cr_assert(r[2] >= 1 && r[3] >= 1);
        cr_assert(same(px(im.rgb, im.w, r[0], r[1]), one), "panel %d's hot cell at (%d, %d)", m, r[0], r[1]);
        cr_assert(same(px(im.rgb, im.w, r[0] + r[2] - 1, r[1] + r[3] - 1), one), "panel %d", m);
        cr_assert(same(px(im.rgb, im.w, r[0] + r[2], r[1]), zero), "panel %d: the next cell is 0", m);
        cr_assert(same(px(im.rgb, im.w, r[0] - 1, r[1]), zero), "panel %d: the cell before is 0", m);
    }
    png_free_img(&im);
    as_figure_free(f);
    one_hot_free(&o);
    as_fig_ctx_free(ctx);
    remove_tree(dir);
    free(dir);
}

/* The head view: a line's opacity is its weight, a zero weight draws
 * nothing, and a key after the query (an unmasked site) is drawn too. */
Test(figure, head_view_lines_are_as_opaque_as_the_weight)
{
    as_fig_ctx *ctx;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&ctx, NULL, &err), AS_OK);
    static const char *const labels[] = {"a", "b", "c", "d"};
    float w1[16] = {0}, w2[16] = {0};
    const float *one[1] = {w1}, *two[2] = {w1, w2};
    static const char *const names[] = {"head 0", "head 1"};
    as_fig_style st;
    as_fig_style_default(&st);
    char *dir = make_tmpdir(), path[256];
    snprintf(path, sizeof path, "%s/l.png", dir);
    static const uint8_t blue[3] = {0x1F, 0x77, 0xB4}, orange[3] = {0xFF, 0x7F, 0x0E};
    uint8_t half[3];
    for (int i = 0; i < 3; i++)
        half[i] = (uint8_t)((255 + blue[i]) / 2);
    for (int round = 0; round < 4; round++) {
        memset(w1, 0, sizeof w1), memset(w2, 0, sizeof w2);
        if (round == 1)
            w1[0 * 4 + 3] = 1; /* the first query on the last key: no causal mask could show it */
        if (round == 2)
            w1[2 * 4 + 1] = 0.5f;
        if (round == 3)
            w1[3 * 4 + 0] = 1, w2[1 * 4 + 2] = 1;
        as_fig_lines ln = {4, labels, round == 3 ? 2 : 1, round == 3 ? two : one, round == 3 ? names : NULL};
        as_figure *f;
        cr_assert_eq(as_fig_lines_view(&f, ctx, &st, &CAPTION, &ln, &err), AS_OK, "%s", err.msg);
        cr_assert_eq(as_figure_write(f, path, AS_FIG_PNG, &err), AS_OK, "%s", err.msg);
        as_figure_free(f);
        png_img im;
        png_load(path, &im);
        int full = 0, halfway = 0, orange_n = 0;
        for (int i = 0; i < im.w * im.h; i++) {
            const uint8_t *p = im.rgb + (size_t)i * 3;
            full += same(p, blue);
            halfway += abs(p[0] - half[0]) <= 2 && abs(p[1] - half[1]) <= 2 && abs(p[2] - half[2]) <= 2;
            orange_n += same(p, orange);
        }
        png_free_img(&im);
        if (round == 0)
            cr_assert(full == 0 && halfway == 0, "no weights, no lines (%d, %d)", full, halfway);
        if (round == 1 || round == 3)
            cr_assert_gt(full, 200, "a weight of 1 is an opaque line (%d px)", full);
        if (round == 2)
            cr_assert(full == 0 && halfway > 200, "a weight of 0.5 is a half-opaque line (%d, %d)", full, halfway);
        if (round == 3)
            cr_assert_gt(orange_n, 200, "the second head in its own colour (%d px)", orange_n);
    }
    /* Too many tokens for lines: said, with the way out. */
    as_fig_lines big = {AS_FIG_LINES_MAX + 1, labels, 1, one, NULL};
    as_figure *f = NULL;
    cr_assert_eq(as_fig_lines_view(&f, ctx, &st, &CAPTION, &big, &err), AS_ERR);
    cr_assert(strstr(err.msg, "257 tokens") && strstr(err.msg, "tokens=FROM:TO"), "%s", err.msg);
    cr_assert_null(f);
    remove_tree(dir);
    free(dir);
    as_fig_ctx_free(ctx);
}

/* ---- PDF and SVG, through other programs ---- */

/* Writes kind k as PNG, SVG and PDF into dir; returns its size in pt. */
static as_figure *write_three(int k, kinds_data *d, as_fig_ctx *ctx, const as_fig_style *st, const char *dir)
{
    as_figure *f;
    as_error err;
    cr_assert_eq(make_kind(k, d, ctx, st, &f, &err), AS_OK, "%s", err.msg);
    cr_assert_eq(as_figure_add_meta(f, "Model", "hand-built", &err), AS_OK);
    static const char *const ext[] = {"png", "svg", "pdf"};
    static const as_fig_format fmt[] = {AS_FIG_PNG, AS_FIG_SVG, AS_FIG_PDF};
    for (int i = 0; i < 3; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s.%s", dir, kind_name[k], ext[i]);
        cr_assert_eq(as_figure_write(f, path, fmt[i], &err), AS_OK, "%s: %s", path, err.msg);
    }
    return f;
}

/* Every kind as SVG is well-formed XML with the provenance in <title> and
 * <desc>; as PDF it begins and ends as a PDF does. */
Test(figure, every_kind_writes_png_svg_and_pdf)
{
    as_fig_ctx *ctx;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&ctx, NULL, &err), AS_OK);
    kinds_data d;
    kinds_init(&d);
    char *dir = make_tmpdir();
    as_fig_style st;
    as_fig_style_default(&st);
    for (int k = 0; k < N_KINDS; k++) {
        as_figure *f = write_three(k, &d, ctx, &st, dir);
        char path[512], why[200];
        snprintf(path, sizeof path, "%s/%s.png", dir, kind_name[k]);
        png_check_rgb8(path);
        snprintf(path, sizeof path, "%s/%s.svg", dir, kind_name[k]);
        char *svg = read_all(path, NULL);
        cr_assert(xml_well_formed(svg, why, sizeof why), "%s: %s", path, why);
        cr_assert(strstr(svg, "<title>Layer 3 \xC2\xB7 head 5</title>"), "%s", path);
        cr_assert(strstr(svg, "<desc>Software: attnscope ") && strstr(svg, "&#10;Model: hand-built</desc>"), "%s",
                  path);
        cr_assert(strstr(svg, "width=\"237.6"), "%s: one column wide", path);
        free(svg);
        size_t len;
        snprintf(path, sizeof path, "%s/%s.pdf", dir, kind_name[k]);
        char *pdf = read_all(path, &len);
        cr_assert(len > 100 && !strncmp(pdf, "%PDF-", 5) && strstr(pdf + len - 8, "%%EOF"), "%s", path);
        free(pdf);
        as_figure_free(f);
    }
    kinds_free(&d);
    as_fig_ctx_free(ctx);
    remove_tree(dir);
    free(dir);
}

/* A pixel of an image rendered by another program, within tol of want. */
static void near_colour(const png_img *im, int x, int y, const uint8_t *want, int tol, const char *what)
{
    cr_assert(x >= 0 && y >= 0 && x < im->w && y < im->h, "%s: (%d, %d) outside %dx%d", what, x, y, im->w, im->h);
    const uint8_t *p = px(im->rgb, im->w, x, y);
    cr_assert(abs(p[0] - want[0]) <= tol && abs(p[1] - want[1]) <= tol && abs(p[2] - want[2]) <= tol,
              "%s: (%d, %d) is #%02x%02x%02x, want #%02x%02x%02x", what, x, y, p[0], p[1], p[2], want[0], want[1],
              want[2]);
}

/* pdfinfo accepts every PDF at the figure's size; rsvg-convert renders
 * every SVG at it; both renderings put the hot cell where the PNG has it. */
Test(figure, pdfs_pass_pdfinfo_and_svgs_render_with_rsvg_convert)
{
    if (!have_tool("pdfinfo") || !have_tool("rsvg-convert") || !have_tool("pdftoppm"))
        cr_skip_test("poppler-utils or librsvg2-bin missing (see the banner above)");
    as_fig_ctx *ctx;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&ctx, NULL, &err), AS_OK);
    kinds_data d;
    kinds_init(&d);
    char *dir = make_tmpdir(), cmd[1200];
    as_fig_style st;
    as_fig_style_default(&st);
    uint8_t one[3], zero[3];
    as_colormap(AS_CMAP_VIRIDIS, 1, one);
    as_colormap(AS_CMAP_VIRIDIS, 0, zero);
    for (int k = 0; k < N_KINDS; k++) {
        as_figure *f = write_three(k, &d, ctx, &st, dir);
        float wpt, hpt;
        int wpx, hpx, status;
        as_figure_size_pt(f, &wpt, &hpt);
        as_figure_size(f, &wpx, &hpx);
        snprintf(cmd, sizeof cmd, "pdfinfo '%s/%s.pdf' 2>&1", dir, kind_name[k]);
        char *info = run_tool(cmd, &status);
        cr_assert_eq(status, 0, "pdfinfo refused %s.pdf: %s", kind_name[k], info);
        double pw = 0, ph = 0;
        const char *size = strstr(info, "Page size:");
        cr_assert(size && sscanf(size, "Page size: %lf x %lf pts", &pw, &ph) == 2, "%s", info);
        cr_assert(fabs(pw - wpt) < 0.5 && fabs(ph - hpt) < 0.5, "%s: page %gx%g, figure %gx%g", kind_name[k], pw, ph,
                  wpt, hpt);
        cr_assert(strstr(info, "Pages:           1"), "%s", info);
        cr_assert(strstr(info, "Title:           Layer 3 \xC2\xB7 head 5"), "%s", info);
        free(info);
        /* The SVG through librsvg, the PDF through poppler, both at 200 dpi. */
        snprintf(cmd, sizeof cmd,
                 "rsvg-convert -d 200 -p 200 -f png -o '%s/%s-rsvg.png' '%s/%s.svg' 2>&1 && "
                 "pdftoppm -r 200 -png -singlefile '%s/%s.pdf' '%s/%s-poppler' 2>&1",
                 dir, kind_name[k], dir, kind_name[k], dir, kind_name[k], dir, kind_name[k]);
        char *out = run_tool(cmd, &status);
        cr_assert_eq(status, 0, "%s: %s", kind_name[k], out);
        free(out);
        static const char *const who[] = {"rsvg", "poppler"};
        for (int r = 0; r < 2; r++) {
            char path[600];
            snprintf(path, sizeof path, "%s/%s-%s.png", dir, kind_name[k], who[r]);
            png_img im;
            png_load(path, &im);
            cr_assert(abs(im.w - wpx) <= 1 && abs(im.h - hpx) <= 1, "%s by %s: %dx%d, the PNG is %dx%d", kind_name[k],
                      who[r], im.w, im.h, wpx, hpx);
            int c[4];
            if (k == K_HEAD && as_figure_cell_rect(f, 0, 3, 1, c) == AS_OK) {
                near_colour(&im, c[0] + c[2] / 2, c[1] + c[3] / 2, one, 3, who[r]);
                as_figure_cell_rect(f, 0, 3, 2, c);
                near_colour(&im, c[0] + c[2] / 2, c[1] + c[3] / 2, zero, 3, who[r]);
            }
            png_free_img(&im);
        }
        as_figure_free(f);
    }
    kinds_free(&d);
    as_fig_ctx_free(ctx);
    remove_tree(dir);
    free(dir);
}

/* The words of every kind, as poppler reads them from the PDF, sit inside
 * the page and never on top of each other, one column wide or page wide,
 * however long the labels. */
Test(figure, no_words_overlap_in_any_figure)
{
    if (!have_tool("pdftotext"))
        cr_skip_test("poppler-utils missing (see the banner above)");
    as_fig_ctx *ctx;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&ctx, NULL, &err), AS_OK);
    kinds_data d;
    kinds_init(&d);
    char *dir = make_tmpdir();
    static const float widths[] = {237.6f, 504};
    for (size_t wi = 0; wi < 2; wi++)
        for (int k = 0; k < N_KINDS; k++) {
            as_fig_style st;
            as_fig_style_default(&st);
            st.width_pt = widths[wi];
            as_figure *f = write_three(k, &d, ctx, &st, dir);
            float w, h;
            as_figure_size_pt(f, &w, &h);
            char path[512];
            snprintf(path, sizeof path, "%s/%s.pdf", dir, kind_name[k]);
            check_words_apart(path, w, h);
            as_figure_free(f);
        }
    kinds_free(&d);
    as_fig_ctx_free(ctx);
    remove_tree(dir);
    free(dir);
}

/* Single digits under a table read across; token labels that are wider
 * than a column turn to read upwards. poppler's box of a word read
 * across is wider than tall for a long word and taller than wide for one
 * digit; turned, the other way round. */
Test(figure, short_ticks_read_across_long_labels_turn)
{
    if (!have_tool("pdftotext"))
        cr_skip_test("poppler-utils missing (see the banner above)");
    as_fig_ctx *ctx;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&ctx, NULL, &err), AS_OK);
    static const char *const digits[] = {"0", "1", "2", "3", "4", "5", "6", "7"};
    static const char *const words[] = {"<|endoftext|>", "Elizabeth", "Darcy", "Bingley", "Netherfield", "Longbourn",
                                        "Pemberley", "Wickham"};
    float v[8 * 8] = {0};
    as_fig_matrix m = {v, NULL, NULL, NULL};
    char *dir = make_tmpdir(), path[300];
    snprintf(path, sizeof path, "%s/t.pdf", dir);
    for (int round = 0; round < 2; round++) {
        const char *const *cols = round ? words : digits;
        as_fig_heat h = {4, 8, digits, cols, "layer", "head", "score", 1, &m, NULL, 1, 1, NULL, NULL, NULL, NULL, 0, 0, NULL};
        as_fig_style st;
        as_fig_style_default(&st);
        as_figure *f;
        cr_assert_eq(as_fig_heatmap(&f, ctx, &st, &CAPTION, &h, &err), AS_OK, "%s", err.msg);
        cr_assert_eq(as_figure_write(f, path, AS_FIG_PDF, &err), AS_OK, "%s", err.msg);
        int cell[4];
        as_figure_cell_rect(f, 0, 3, 0, cell);
        double below = (cell[1] + cell[3]) * 72.0 / st.dpi; /* the bottom of the table, pt */
        as_figure_free(f);
        static word w[400];
        int n = pdf_words(path, w, 400), seen = 0;
        for (int i = 0; i < n; i++) {
            if (w[i].y0 < below - 0.5)
                continue; /* the row labels and the rest above */
            bool across = w[i].x1 - w[i].x0 > w[i].y1 - w[i].y0;
            for (int j = 0; j < 8; j++)
                if (!strcmp(w[i].text, cols[j]) || (round && strstr(cols[j], w[i].text) && strlen(w[i].text) > 3)) {
                    seen++;
                    if (round)
                        cr_assert(!across, "'%s' should read upwards: %gx%g pt", w[i].text, w[i].x1 - w[i].x0,
                                  w[i].y1 - w[i].y0);
                    else
                        cr_assert(!across && w[i].y1 - w[i].y0 < 12, "'%s' should read across: %gx%g pt", w[i].text,
                                  w[i].x1 - w[i].x0, w[i].y1 - w[i].y0);
                }
        }
        cr_assert_geq(seen, 6, "the column labels were found (%d)", seen);
    }
    remove_tree(dir);
    free(dir);
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
    snprintf(want, sizeof want, "wrote %s: attention layer 0 head 2 660x%d px\n", path, im.h);
    cr_assert_str_eq(out, want);
    check_one_hot(im.rgb, im.w, im.h, AS_CMAP_MAGMA, n, 3, 1);
    cr_assert_str_eq(text_chunk(&im, "Model"), "tiny-gpt2");
    cr_assert_str_eq(text_chunk(&im, "Layer"), "0");
    cr_assert_str_eq(text_chunk(&im, "Head"), "2");
    cr_assert_str_eq(text_chunk(&im, "Positions"), "0:6");
    cr_assert_str_eq(text_chunk(&im, "Colormap"), "magma");
    cr_assert(text_chunk(&im, "Prompt") && strstr(text_chunk(&im, "Prompt"), "the cat"), "prompt recorded");
    cr_assert(strstr(text_chunk(&im, "Software"), "attnscope"));
    /* The title names what is shown, nothing else: the model is the subtitle's. */
    cr_assert_str_eq(text_chunk(&im, "Title"), "Layer 0 \xC2\xB7 head 2");
    cr_assert_eq(im.res_x, 7874);
    png_free_img(&im);

    /* A window, a lower dpi, a page-wide size: 4 positions, cell (3,1) becomes (2,0). */
    snprintf(cmd, sizeof cmd, "export attn 0 2 %s tokens=1:5 dpi=100 width=6in height=5in", path);
    cr_assert_eq(run_captured(s, cmd, out, sizeof out, msg, sizeof msg), AS_OK, "%s", msg);
    png_load(path, &im);
    check_one_hot(im.rgb, im.w, im.h, AS_CMAP_VIRIDIS, 4, 2, 0);
    cr_assert(im.w == 600 && im.h == 500, "%dx%d", im.w, im.h);
    cr_assert_eq(im.res_x, 3937);
    cr_assert_str_eq(text_chunk(&im, "Positions"), "1:5");
    png_free_img(&im);

    /* SVG and PDF: the same figure, sized in points. */
    snprintf(path, sizeof path, "%s/head.svg", dir);
    snprintf(cmd, sizeof cmd, "export attn 0 2 %s title=\"My head\" width=8.4cm", path);
    cr_assert_eq(run_captured(s, cmd, out, sizeof out, msg, sizeof msg), AS_OK, "%s", msg);
    cr_assert(strstr(out, ": attention layer 0 head 2 238x") && strstr(out, " viewBox\n"), "%s", out);
    char *svg = read_all(path, NULL), why[200];
    cr_assert(xml_well_formed(svg, why, sizeof why), "%s", why);
    cr_assert(strstr(svg, "<title>My head</title>"));
    cr_assert(strstr(svg, "Model: tiny-gpt2"));
    free(svg);
    snprintf(path, sizeof path, "%s/head.pdf", dir);
    snprintf(cmd, sizeof cmd, "export attn 0 2 %s", path);
    cr_assert_eq(run_captured(s, cmd, out, sizeof out, msg, sizeof msg), AS_OK, "%s", msg);
    cr_assert(strstr(out, ": attention layer 0 head 2 238x") && strstr(out, " pt\n"), "%s", out);
    close_session(s);
    remove_tree(dir);
    free(dir);
}

/* A sliding window's hidden keys are masked in the figure as in the
 * model: tiny-mistral's layers see the last 5 keys (its file says
 * llama.attention.sliding_window = 5). */
Test(figure, sliding_window_keys_are_masked)
{
    as_session *s = open_session("fixtures/tiny-mistral.gguf", 64);
    run_ok(s, "prompt-ids 1 5 6 7 8 9 10 11 12 13; finish");
    int hk = as_program_hook(s->prog, AS_HK_PATTERN, 0), n = 10;
    for (int q = 0; q < n; q++)
        for (int k = 0; k <= q; k++)
            s->cap->store[hk][as_capture_attn_offset(s->cap, hk, 1, q) + (size_t)k] = q == 7 && k == 4;
    char *dir = make_tmpdir(), cmd[512], msg[1024], path[256];
    snprintf(path, sizeof path, "%s/w.png", dir);
    snprintf(cmd, sizeof cmd, "export attn 0 1 %s", path);
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_OK, "%s", msg);
    png_img im;
    png_load(path, &im);
    check_one_hot_window(im.rgb, im.w, im.h, AS_CMAP_VIRIDIS, n, 7, 4, 5);
    png_free_img(&im);
    close_session(s);
    remove_tree(dir);
    free(dir);
}

/* The lines of text poppler finds in a PDF, one string. */
static char *pdf_text(const char *pdf)
{
    char cmd[600];
    int status;
    snprintf(cmd, sizeof cmd, "pdftotext -layout '%s' - 2>&1", pdf);
    char *out = run_tool(cmd, &status);
    cr_assert_eq(status, 0, "pdftotext: %s", out);
    /* Runs of spaces (the layout's) as one, so sentences can be searched. */
    char *o = out;
    for (const char *p = out; *p; p++)
        if (*p != ' ' || o == out || o[-1] != ' ')
            *o++ = *p;
    *o = '\0';
    return out;
}

/* The line of text that holds needle (a malloc'd copy), or NULL. */
static char *line_with(const char *text, const char *needle)
{
    const char *p = strstr(text, needle);
    if (!p)
        return NULL;
    const char *a = p, *b = p;
    while (a > text && a[-1] != '\n')
        a--;
    while (*b && *b != '\n')
        b++;
    return strndup(a, (size_t)(b - a));
}

/* What a figure shows, where it comes from and what was left out are
 * said apart, in words a reader finds on the page. */
Test(figure, titles_and_notes_say_what_is_shown)
{
    if (!have_tool("pdftotext"))
        cr_skip_test("poppler-utils missing (see the banner above)");
    as_session *s = open_session(GPT2, 64);
    run_ok(s, "prompt-ids 276 257 262 264 266 258 271 11; finish");
    char *dir = make_tmpdir(), cmd[800], msg[1024], path[300];
    snprintf(path, sizeof path, "%s/f.pdf", dir);

    snprintf(cmd, sizeof cmd, "export attn 1 3 %s", path);
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_OK, "%s", msg);
    char *t = pdf_text(path), *title = line_with(t, "Layer 1"), *sub = line_with(t, "tiny-gpt2");
    cr_assert(title && sub && strcmp(title, sub), "title and model on separate lines:\n%s", t);
    cr_assert(strstr(sub, "model tiny-gpt2") && strstr(sub, "prompt"), "%s", sub);
    cr_assert(!strstr(t, "Positions") && !strstr(t, "hide-bos"), "nothing cropped, nothing said:\n%s", t);
    free(title), free(sub), free(t);

    /* Cropped and with BOS hidden: the positions are numbered and both are said. */
    snprintf(cmd, sizeof cmd, "export attn 1 3 %s tokens=0:5 hide-bos=yes", path);
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_OK, "%s", msg);
    t = pdf_text(path);
    cr_assert(strstr(t, "Positions 1 to 4 of 0 to 7 shown"), "%s", t);
    cr_assert(strstr(t, "position 0) is hidden") && strstr(t, "rows are not") && strstr(t, "renormalised"), "%s", t);
    char label[32];
    snprintf(label, sizeof label, "4 ");
    cr_assert(strstr(t, label), "labels carry their positions:\n%s", t);
    free(t);
    snprintf(cmd, sizeof cmd, "export lines 1 all %s tokens=2:", path);
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_OK, "%s", msg);
    t = pdf_text(path);
    cr_assert(strstr(t, "Positions 2 to 7 of 0 to 7 shown") && strstr(t, "its opacity is the"), "%s", t);
    cr_assert(strstr(t, "head 0") && strstr(t, "head 3"), "a legend of the heads:\n%s", t);
    free(t);

    /* Patching states the metric, both values and the other prompt. */
    run_ok(s, "metric 262 264");
    snprintf(cmd, sizeof cmd, "patch sweep resid_pre from \"the cat sat on the mat the dog\" %s", path);
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_OK, "%s", msg);
    t = pdf_text(path);
    cr_assert(strstr(t, "Metric: logit(") && strstr(t, "(clean)") && strstr(t, "(corrupted)"), "%s", t);
    cr_assert(strstr(t, "Other prompt: \xE2\x80\x9Cthe cat sat on the mat the dog"), "%s", t);
    free(t);
    snprintf(cmd, sizeof cmd, "dla 262 %s", path);
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_OK, "%s", msg);
    t = pdf_text(path);
    cr_assert(strstr(t, "Metric: the logit of") && strstr(t, "Not drawn: the embeddings"), "%s", t);
    free(t);
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
    snprintf(cmd, sizeof cmd, "export attn 0 0 %s/t.pdf \"title=bad \\xFF byte\"", dir);
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_OK, "%s", msg);
    char path[300], why[200];
    snprintf(path, sizeof path, "%s/t.svg", dir);
    char *svg = read_all(path, NULL);
    cr_assert(xml_well_formed(svg, why, sizeof why), "%s", why);
    cr_assert(strstr(svg, "<title>bad \xEF\xBF\xBD byte</title>"), "U+FFFD stands in for the byte");
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

Test(figure, every_export_writes_png_svg_and_pdf)
{
    as_session *s = open_session(LLAMA, 64);
    run_ok(s, "prompt the cat sat on a mat; finish");
    char *dir = make_tmpdir(), cmd[512], out[1024], msg[1024], path[256];
    static const char *const what[] = {"attn 1 3", "grid 0", "grid all", "lines 0 1", "lines 1 all", "norms 1",
                                       "norms final", "probs", "attn 0 0 %s scale=log hide-bos=yes font=9",
                                       "probs %s top=3 scale=log width=7in", "lines 0 all %s height=4in dpi=72"};
    static const char *const ext[] = {"png", "svg", "pdf"};
    for (size_t i = 0; i < sizeof what / sizeof *what; i++)
        for (int e = 0; e < 3; e++) {
            snprintf(path, sizeof path, "%s/f%zu.%s", dir, i, ext[e]);
            if (strstr(what[i], "%s")) {
                char tmp[256];
                snprintf(tmp, sizeof tmp, what[i], path);
                snprintf(cmd, sizeof cmd, "export %s", tmp);
            } else {
                snprintf(cmd, sizeof cmd, "export %s %s", what[i], path);
            }
            cr_assert_eq(run_captured(s, cmd, out, sizeof out, msg, sizeof msg), AS_OK, "%s: %s", cmd, msg);
            cr_assert(!strncmp(out, "wrote ", 6), "%s -> %s", cmd, out);
            if (e == 0) {
                png_img im;
                png_check_rgb8(path);
                png_load(path, &im);
                char tail[64];
                snprintf(tail, sizeof tail, " %dx%d px\n", im.w, im.h);
                cr_assert(strstr(out, tail), "%s -> %s", cmd, out);
                cr_assert_str_eq(text_chunk(&im, "Model"), "tiny-llama");
                cr_assert(text_chunk(&im, "Prompt"));
                png_free_img(&im);
            } else if (e == 1) {
                char *svg = read_all(path, NULL), why[200];
                cr_assert(xml_well_formed(svg, why, sizeof why), "%s: %s", cmd, why);
                cr_assert(strstr(svg, "Model: tiny-llama"), "%s", cmd);
                free(svg);
            } else {
                size_t len;
                char *pdf = read_all(path, &len);
                cr_assert(!strncmp(pdf, "%PDF-", 5) && strstr(pdf + len - 8, "%%EOF"), "%s", cmd);
                free(pdf);
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
    snprintf(path, sizeof path, "%s/trace.png", dir);
    snprintf(cmd, sizeof cmd, "export probs-trace %s top=3", path);
    cr_assert_eq(run_captured(s, cmd, out, sizeof out, msg, sizeof msg), AS_OK, "%s", msg);
    cr_assert(strstr(out, "probability trace, 4 steps"), "%s", out);
    /* Greedy: each chosen token is the top one, outlined in red. */
    png_img im;
    png_load(path, &im);
    static const uint8_t red[3] = {0xD6, 0x27, 0x28};
    int reds = 0;
    for (int i = 0; i < im.w * im.h; i++)
        reds += same(im.rgb + (size_t)i * 3, red);
    cr_assert_gt(reds, 4 * 40, "four outlined candidates (%d red px)", reds);
    png_free_img(&im);
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
        {"attn 0 0 %s/x.png width=3.3", "bad option: width must be a length such as 3.3in"},
        {"attn 0 0 %s/x.png width=0.2in", "bad option: width must be from 0.5in to 40in"},
        {"attn 0 0 %s/x.pdf height=tall", "bad option: height must be a length"},
        {"attn 0 0 %s/x.svg font=2", "bad option: font (points) must be a number from 4 to 36"},
        {"attn 0 0 %s/x.svg font=big", "bad option: font (points) must be"},
        {"norms 0 %s/x.pdf width=0.5in", "width=0.50in is too narrow"},
        {"lines 0 9 %s/x.png", "the head (or all) must be"},
        {"lines 0 all %s/x.png cmap=magma", "bad option 'cmap' for export lines"},
        {"lines 0%s", "usage: export lines LAYER HEAD|all"},
        {"probs %s/x.png cmap=magma", "bad option 'cmap'"},
        {"attn 0 9 %s/x.png", "the head must be"},
        {"attn 7 0 %s/x.png", "the layer must be"},
        {"attn 0 0 %s/x.jpeg", ".png, .svg or .pdf"},
        {"attn 0 0 /dev/null/x.png%s", "cannot write in directory"},
        {"attn 0 0 %s/nodir/x.pdf", "cannot write in directory"},
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
    /* The instruments' figures take the same options and refuse the same way. */
    snprintf(cmd, sizeof cmd, "heads %s/x.pdf width=2", dir);
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "width must be a length"), "%s", msg);
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
 * error is reported, the old file is intact, no temporary file is left,
 * whichever the format. */
Test(figure, a_failed_write_leaves_the_old_file)
{
    as_session *s = open_session(GPT2, 64);
    run_ok(s, "prompt-ids 276 257 262 264 266 258 271 11; finish");
    char *dir = make_tmpdir(), cmd[512], msg[1024], path[300];
    static const char *const ext[] = {"png", "svg", "pdf"};
    signal(SIGXFSZ, SIG_IGN);
    for (int e = 0; e < 3; e++) {
        snprintf(path, sizeof path, "%s/keep.%s", dir, ext[e]);
        FILE *f = fopen(path, "w");
        fputs("the old figure", f);
        fclose(f);
        struct rlimit old, lim;
        getrlimit(RLIMIT_FSIZE, &old);
        lim = old;
        lim.rlim_cur = 4096;
        cr_assert_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
        snprintf(cmd, sizeof cmd, "export grid all %s width=7in", path);
        int rc = run_cmd(s, cmd, msg, sizeof msg);
        setrlimit(RLIMIT_FSIZE, &old);
        cr_assert_eq(rc, AS_ERR, "a 4 KB limit should stop the %s write", ext[e]);
        cr_assert(strstr(msg, "keep."), "%s", msg);
        char *kept = read_all(path, NULL);
        cr_assert_str_eq(kept, "the old figure");
        free(kept);
        DIR *dp = opendir(dir);
        struct dirent *de;
        while ((de = readdir(dp)))
            cr_assert(!strstr(de->d_name, ".tmp."), "temporary file %s left behind", de->d_name);
        closedir(dp);
        run_ok(s, cmd); /* and with room, it is replaced */
        kept = read_all(path, NULL);
        cr_assert(strcmp(kept, "the old figure"), "%s was replaced", path);
        free(kept);
    }
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

/* An encoder-decoder's cross-attention figure (site=cross) is the
 * alignment rectangle: rows the decoder's positions, columns every source
 * position, nothing masked; its cells are the captured cross pattern (a
 * one-hot planted at target 1, source 4 of layer 1, head 2). Titled and
 * labelled as such, with the source in the subtitle. */
Test(figure, cross_attention_is_the_target_by_source_rectangle)
{
    as_session *s = open_session("fixtures/tiny-transformer.gguf", 64);
    run_ok(s, "source-ids 1 275 286 287 288 285; prompt-ids 2 275 279; finish");
    int hk = as_program_pattern(s->prog, 1, AS_PICK_CROSS), n_dec = 3, n_enc = 6;
    cr_assert(hk >= 0 && hk != as_program_pattern(s->prog, 1, AS_PICK_SELF));
    for (int q = 0; q < n_dec; q++)
        for (int k = 0; k < n_enc; k++)
            s->cap->store[hk][as_capture_attn_offset(s->cap, hk, 2, q) + (size_t)k] = q == 1 && k == 4;
    char *dir = make_tmpdir(), cmd[512], msg[1024], path[256];
    snprintf(path, sizeof path, "%s/x.png", dir);
    snprintf(cmd, sizeof cmd, "export attn 1 2 %s site=cross", path);
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_OK, "%s", msg);
    png_img im;
    png_load(path, &im);
    heat_colours c = colours_of(AS_CMAP_VIRIDIS);
    int box[4];
    find_heatmap(im.rgb, im.w, im.h, &c, box);
    cr_assert_eq(box[2] % n_enc, 0, "width %d is not %d cells", box[2], n_enc);
    int cell = box[2] / n_enc;
    cr_assert_eq(box[3], n_dec * cell, "height %d is not %d cells of %d", box[3], n_dec, cell);
    for (int r = 0; r < n_dec; r++)
        for (int k = 0; k < n_enc; k++) {
            const uint8_t *p = px(im.rgb, im.w, box[0] + k * cell + cell / 2, box[1] + r * cell + cell / 2);
            const uint8_t *want = r == 1 && k == 4 ? c.one : c.zero;
            cr_assert(same(p, want), "cell (%d, %d) is #%02x%02x%02x", r, k, p[0], p[1], p[2]);
        }
    png_free_img(&im);
    snprintf(path, sizeof path, "%s/x.pdf", dir);
    snprintf(cmd, sizeof cmd, "export attn 1 2 %s site=cross width=7in", path);
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_OK, "%s", msg);
    char *t = pdf_text(path);
    cr_assert(strstr(t, "Layer 1 · head 2 · cross-attention") && strstr(t, "source position (encoder)") &&
              strstr(t, "target position (decoder)") && strstr(t, "source “<s>the cat sat on a”") /* special tokens shown */, "%s", t);
    free(t);
    /* A decoder-only model takes no site=, and hide-bos has no meaning across. */
    cr_assert_neq(run_cmd(s, "export attn 1 2 /tmp/never.png site=cross hide-bos=yes", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "hide-bos applies to self-attention"), "%s", msg);
    close_session(s);
    s = open_session("fixtures/tiny-gpt2.gguf", 64);
    run_ok(s, "prompt-ids 1 2 3; finish");
    cr_assert_neq(run_cmd(s, "export attn 0 0 /tmp/never.png site=cross", msg, sizeof msg), AS_OK);
    cr_assert(strstr(msg, "bad option 'site'"), "%s", msg);
    close_session(s);
    remove_tree(dir);
    free(dir);
}

/* A short alignment (one target row) has no room along its side for
 * "target position (decoder)": the name is shortened rather than drawn
 * into the title; a tall one keeps it whole (the test above). */
Test(figure, a_short_alignment_shortens_its_row_axis_name)
{
    as_session *s = open_session("fixtures/tiny-transformer.gguf", 64);
    run_ok(s, "source-ids 1 275 286 287 288 285; finish");
    char *dir = make_tmpdir(), cmd[512], msg[1024], path[256];
    snprintf(path, sizeof path, "%s/x.pdf", dir);
    snprintf(cmd, sizeof cmd, "export attn 0 0 %s site=cross", path);
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_OK, "%s", msg);
    char *t = pdf_text(path);
    /* Drawn whole it ran off the page, where pdftotext cuts it: "target position (decode". */
    cr_assert(!strstr(t, "(decode") && strstr(t, "target") && strstr(t, "source position"), "%s", t);
    free(t);
    close_session(s);
    remove_tree(dir);
    free(dir);
}

/* An image with a map over its patches: every image pixel's cell is the
 * blend (1 - alpha) · image + alpha · colour(value / vmax), in the raster
 * Cairo draws (±2 levels for rounding); the patch of `marked` is outlined
 * in the highlight colour; a shape that cannot be drawn is refused. */
Test(figure, overlay_blends_the_image_with_the_patch_colours)
{
    as_fig_ctx *ctx;
    as_error err;
    cr_assert_eq(as_fig_ctx_new(&ctx, NULL, &err), AS_OK);
    enum { S = 8, G = 2 };
    uint8_t img[S * S * 3];
    for (int i = 0; i < S * S; i++)
        for (int k = 0; k < 3; k++)
            img[i * 3 + k] = (uint8_t)((i * 37 + k * 80) % 256);
    float m0[G * G] = {0, 0.25f, 0.5f, 0.5f}, m1[G * G] = {0.1f, 0, 0.2f, 0.4f};
    const float *maps[2] = {m0, m1};
    const char *titles[2] = {"head 0", "head 1"};
    as_fig_overlay ov = {.size = S, .rgb = img, .grid = G, .n_maps = 2, .maps = maps, .map_titles = titles,
                         .vmax = 0.5f, .alpha = 0.6f, .marked = -1, .cbar_label = "attention weight"};
    as_fig_style st;
    as_fig_style_default(&st);
    as_fig_caption cap = {"overlay", NULL, NULL, 0};
    as_figure *f;
    cr_assert_eq(as_fig_overlay_view(&f, ctx, &st, &cap, &ov, &err), AS_OK, "%s", err.msg);
    uint8_t *rgb;
    int w, h;
    as_figure_size(f, &w, &h);
    cr_assert_eq(as_figure_raster(f, &rgb, &err), AS_OK, "%s", err.msg);
    for (int m = 0; m < 2; m++)
        for (int y = 0; y < S; y++)
            for (int x = 0; x < S; x++) {
                int r[4];
                cr_assert_eq(as_figure_cell_rect(f, m, y, x, r), AS_OK);
                uint8_t c[3];
                as_colormap(st.cmap, maps[m][(y / (S / G)) * G + x / (S / G)] / 0.5f, c);
                /* a pixel inside the cell, off the patch grid's lines */
                const uint8_t *p = rgb + ((size_t)(r[1] + r[3] / 2) * (size_t)w + (size_t)(r[0] + r[2] / 3)) * 3;
                for (int k = 0; k < 3; k++) {
                    float want = 0.4f * img[(y * S + x) * 3 + k] + 0.6f * c[k];
                    cr_assert(fabsf((float)p[k] - want) <= 2.5f, "map %d pixel (%d, %d) channel %d: %d, want %.1f", m,
                              y, x, k, p[k], (double)want);
                }
            }
    free(rgb);
    float cb[4];
    cr_assert_eq(as_figure_cbar_rect(f, cb), AS_OK);
    as_figure_free(f);
    ov.grid = 3; /* 8 is no multiple of 3 */
    cr_assert_eq(as_fig_overlay_view(&f, ctx, &st, &cap, &ov, &err), AS_ERR);
    cr_assert(strstr(err.msg, "overlay"), "%s", err.msg);
    as_fig_ctx_free(ctx);
}

/* ---- routed MLPs ---- */

/* The PyTorch reference's tokens and experts chosen on tiny-mixtral
 * (tests/fixtures/tiny-mixtral, written by the independent forward pass):
 * the prompt as prompt-ids, and each layer's load per expert counted from
 * the reference's hook_expert_indices. */
#define MIXTRAL_REF "fixtures/tiny-mixtral"
static int mixtral_ref(char *prompt, size_t cap, float load[2][4])
{
    npy t;
    cr_assert_eq(npy_read(MIXTRAL_REF "/tokens.npy", &t), 0);
    int n = (int)t.count;
    size_t o = (size_t)snprintf(prompt, cap, "prompt-ids");
    for (int i = 0; i < n; i++)
        o += (size_t)snprintf(prompt + o, cap - o, " %d", t.i ? t.i[i] : (int)t.f[i]);
    npy_free(&t);
    for (int L = 0; L < 2; L++) {
        char path[128];
        npy ix;
        snprintf(path, sizeof path, MIXTRAL_REF "/blocks.%d.mlp.hook_expert_indices.npy", L);
        cr_assert_eq(npy_read(path, &ix), 0, "%s", path);
        cr_assert_eq(ix.shape[ix.ndim - 2], (size_t)n);
        for (int e = 0; e < 4; e++)
            load[L][e] = 0;
        for (size_t i = 0; i < ix.count; i++)
            load[L][ix.i ? ix.i[i] : (int)ix.f[i]] += 1.0f / (float)n;
        npy_free(&ix);
    }
    return n;
}

/* export load: layers x experts, each cell the colour of the share of
 * tokens the PyTorch reference routed to that expert (exact counts, so
 * the colours are exact up to 1 level of rounding). The heatmap is found
 * from the pixels: the longest run of the expected colours. */
/* A dense layer among routed ones (DeepSeek's leading layer) is a grey
 * row named in the legend, not a NaN. */
Test(figure, expert_load_names_a_dense_layer)
{
    as_session *s = open_session("fixtures/tiny-deepseek2-v3moe.gguf", 64);
    run_ok(s, "prompt-ids 1 5 9 20 33 7 3 2; finish");
    char *dir = make_tmpdir(), cmd[512], msg[1024], path[256];
    snprintf(path, sizeof path, "%s/load.pdf", dir);
    snprintf(cmd, sizeof cmd, "export load %s", path);
    cr_assert_eq(run_cmd(s, cmd, msg, sizeof msg), AS_OK, "%s", msg);
    char *t = pdf_text(path);
    cr_assert(strstr(t, "dense layer") && !strstr(t, "NaN"), "%s", t);
    free(t);
    close_session(s);
    remove_tree(dir);
    free(dir);
}

Test(figure, expert_load_cells_are_the_reference_shares)
{
    char prompt[512], out[512], msg[512], cmd[600];
    float load[2][4];
    mixtral_ref(prompt, sizeof prompt, load);
    as_session *s = open_session("fixtures/tiny-mixtral.gguf", 64);
    run_ok(s, prompt);
    run_ok(s, "finish");
    char *dir = make_tmpdir(), path[256];
    snprintf(path, sizeof path, "%s/load.png", dir);
    snprintf(cmd, sizeof cmd, "export load %s", path);
    cr_assert_eq(run_captured(s, cmd, out, sizeof out, msg, sizeof msg), AS_OK, "%s", msg);
    cr_assert(strstr(out, "expert load"), "%s", out);
    png_img im;
    png_load(path, &im);
    uint8_t want[2][4][3];
    for (int L = 0; L < 2; L++)
        for (int e = 0; e < 4; e++)
            as_colormap(AS_CMAP_VIRIDIS, load[L][e], want[L][e]);
#define CLOSE(p, c) (abs((p)[0] - (c)[0]) <= 1 && abs((p)[1] - (c)[1]) <= 1 && abs((p)[2] - (c)[2]) <= 1)
    /* the longest horizontal run of pixels that are some layer-0 cell's colour */
    int best = 0, bx = 0, by = 0;
    for (int y = 0; y < im.h; y++)
        for (int x = 0, run = 0; x < im.w; x++) {
            const uint8_t *p = px(im.rgb, im.w, x, y);
            bool in = false;
            for (int e = 0; e < 4; e++)
                in |= CLOSE(p, want[0][e]);
            run = in ? run + 1 : 0;
            if (run > best)
                best = run, bx = x - run + 1, by = y;
        }
    cr_assert_geq(best, 40, "no heatmap row found (longest run %d px)", best);
    int cw = best / 4, bottom = by;
    /* down the first column: layer 0's colour, then layer 1's */
    while (bottom + 1 < im.h && (CLOSE(px(im.rgb, im.w, bx, bottom + 1), want[0][0]) ||
                                 CLOSE(px(im.rgb, im.w, bx, bottom + 1), want[1][0])))
        bottom++;
    int top = by;
    while (top > 0 && CLOSE(px(im.rgb, im.w, bx, top - 1), want[0][0]))
        top--;
    int ch = (bottom - top + 1) / 2;
    cr_assert_geq(ch, 10, "heatmap rows of %d px", ch);
    for (int L = 0; L < 2; L++)
        for (int e = 0; e < 4; e++) {
            char what[64];
            snprintf(what, sizeof what, "layer %d expert %d (load %.4f)", L, e, load[L][e]);
            near_colour(&im, bx + e * cw + cw / 2, top + L * ch + ch / 2, want[L][e], 1, what);
        }
#undef CLOSE
    png_free_img(&im);
    /* a model without experts: one message, no file */
    as_session *d = open_session(LLAMA, 64);
    run_ok(d, "prompt the cat; finish");
    snprintf(path, sizeof path, "%s/none.png", dir);
    snprintf(cmd, sizeof cmd, "export load %s", path);
    cr_assert_eq(run_captured(d, cmd, out, sizeof out, msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "no routed MLPs"), "%s", msg);
    cr_assert_neq(access(path, F_OK), 0, "%s was written", path);
    close_session(d);
    close_session(s);
    remove_tree(dir);
    free(dir);
}

/* export routing: each token's row holds the PyTorch reference's router
 * weights (hook_expert_weights; attnscope's agree within 1e-4, so the
 * colours within 3 levels a channel), a white dot exactly on the experts
 * the reference chose (hook_expert_indices), and the bottom row the load
 * counted from them. The heatmap is found from its bottom row (no dots):
 * the longest run of the load colours; cells are square. */
Test(figure, routing_figure_marks_the_reference_choices)
{
    char prompt[512], out[512], msg[512], cmd[600];
    float load[2][4];
    int n = mixtral_ref(prompt, sizeof prompt, load);
    as_session *s = open_session("fixtures/tiny-mixtral.gguf", 64);
    run_ok(s, prompt);
    run_ok(s, "finish");
    char *dir = make_tmpdir(), path[256];
    const int L = 1;
    snprintf(path, sizeof path, "%s/routing.png", dir);
    snprintf(cmd, sizeof cmd, "export routing %d %s", L, path);
    cr_assert_eq(run_captured(s, cmd, out, sizeof out, msg, sizeof msg), AS_OK, "%s", msg);
    cr_assert(strstr(out, "routing layer 1"), "%s", out);
    npy w, ix;
    cr_assert_eq(npy_read(MIXTRAL_REF "/blocks.1.mlp.hook_expert_weights.npy", &w), 0);
    cr_assert_eq(npy_read(MIXTRAL_REF "/blocks.1.mlp.hook_expert_indices.npy", &ix), 0);
    int k = (int)ix.shape[ix.ndim - 1];
    png_img im;
    png_load(path, &im);
    uint8_t lc[4][3];
    for (int e = 0; e < 4; e++)
        as_colormap(AS_CMAP_VIRIDIS, load[L][e], lc[e]);
#define NEAR(p, c, t) (abs((p)[0] - (c)[0]) <= (t) && abs((p)[1] - (c)[1]) <= (t) && abs((p)[2] - (c)[2]) <= (t))
    int best = 0, bx = 0, by = 0;
    for (int y = 0; y < im.h; y++)
        for (int x = 0, run = 0; x < im.w; x++) {
            const uint8_t *p = px(im.rgb, im.w, x, y);
            bool in = false;
            for (int e = 0; e < 4; e++)
                in |= NEAR(p, lc[e], 1);
            run = in ? run + 1 : 0;
            if (run > best)
                best = run, bx = x - run + 1, by = y;
        }
    cr_assert_geq(best, 20, "no load row found (longest run %d px)", best);
    int cell = best / 4, bottom = by;
    while (bottom + 1 < im.h && NEAR(px(im.rgb, im.w, bx, bottom + 1), lc[0], 1))
        bottom++;
    for (int e = 0; e < 4; e++)
        near_colour(&im, bx + e * cell + cell / 2, bottom - cell / 2, lc[e], 1, "load row");
    static const uint8_t white[3] = {255, 255, 255};
    for (int p = 0; p < n; p++)
        for (int e = 0; e < 4; e++) {
            int cx = bx + e * cell + cell / 2, cy = bottom + 1 - cell * (n - p) - cell / 2 - 1;
            bool chosen = false;
            for (int j = 0; j < k; j++)
                chosen |= (ix.i ? ix.i[p * k + j] : (int)ix.f[p * k + j]) == e;
            char what[96];
            snprintf(what, sizeof what, "token %d expert %d (weight %.4f, %s)", p, e, w.f[p * 4 + e],
                     chosen ? "chosen" : "not chosen");
            if (chosen) {
                near_colour(&im, cx, cy, white, 8, what);
            } else {
                uint8_t want[3];
                as_colormap(AS_CMAP_VIRIDIS, w.f[p * 4 + e], want);
                near_colour(&im, cx, cy, want, 3, what);
            }
        }
#undef NEAR
    png_free_img(&im);
    npy_free(&w);
    npy_free(&ix);
    cr_assert_eq(run_captured(s, "export routing 2 x.png", out, sizeof out, msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "layer"), "%s", msg);
    close_session(s);
    as_session *d = open_session(LLAMA, 64);
    run_ok(d, "prompt the cat; finish");
    snprintf(path, sizeof path, "%s/dense.png", dir);
    snprintf(cmd, sizeof cmd, "export routing 0 %s", path);
    cr_assert_eq(run_captured(d, cmd, out, sizeof out, msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "no experts"), "%s", msg);
    cr_assert_neq(access(path, F_OK), 0, "%s was written", path);
    close_session(d);
    remove_tree(dir);
    free(dir);
}

/* export experts: a column per expert, its most frequent tokens with a bar
 * for each one's share of the expert's choices, the widest bar the largest
 * share. The reference counts come from the PyTorch reference's chosen
 * experts (hook_expert_indices, which attnscope's equal exactly) over the
 * fixture's tokens. Found from the pixels: each bar is a run of the bar
 * colour; columns by the bars' left edges, left to right. Each column's
 * top bar is its most frequent token's share, scaled so the longest bar
 * is the largest share (2 px), and a column has a bar for each distinct
 * token up to 8. A dense layer, a layer past the last, and an
 * unwritable path: one message each, no file. */
Test(figure, expert_tokens_bars_are_the_reference_shares)
{
    char prompt[512], out[512], msg[512], cmd[600];
    float load[2][4];
    int n = mixtral_ref(prompt, sizeof prompt, load);
    as_session *s = open_session("fixtures/tiny-mixtral.gguf", 64);
    run_ok(s, prompt);
    run_ok(s, "finish");
    char *dir = make_tmpdir(), path[256];
    const int L = 1, E = 4;
    snprintf(path, sizeof path, "%s/experts.png", dir);
    snprintf(cmd, sizeof cmd, "export experts %d %s", L, path);
    cr_assert_eq(run_captured(s, cmd, out, sizeof out, msg, sizeof msg), AS_OK, "%s", msg);
    cr_assert(strstr(out, "experts layer 1"), "%s", out);
    npy t, ix;
    cr_assert_eq(npy_read(MIXTRAL_REF "/tokens.npy", &t), 0);
    cr_assert_eq(npy_read(MIXTRAL_REF "/blocks.1.mlp.hook_expert_indices.npy", &ix), 0);
    int k = (int)ix.shape[ix.ndim - 1];
    double top[4] = {0}, full = 0;
    int distinct[4] = {0};
    for (int e = 0; e < E; e++) {
        int chosen = 0, best = 0;
        for (int p = 0; p < n; p++) {
            int c = 0, earlier = 0;
            for (int q = 0; q < n; q++)
                for (int j = 0; j < k; j++)
                    if ((int)ix.f[q * k + j] == e && t.i[q] == t.i[p]) {
                        c++;
                        earlier |= q < p;
                    }
            for (int j = 0; j < k; j++)
                chosen += (int)ix.f[p * k + j] == e;
            distinct[e] += c > 0 && !earlier;
            best = c > best ? c : best;
        }
        top[e] = chosen ? (double)best / chosen : 0;
        full = fmax(full, top[e]);
        if (distinct[e] > 8)
            distinct[e] = 8;
    }
    png_img im;
    png_load(path, &im);
    static const uint8_t BAR[3] = {0x1F, 0x77, 0xB4};
#define IS_BAR(p) (abs((p)[0] - BAR[0]) <= 2 && abs((p)[1] - BAR[1]) <= 2 && abs((p)[2] - BAR[2]) <= 2)
    /* bars by left edge: the top bar's length and how many bars (runs of rows) */
    int x0s[8], len0[8], bars[8], last_y[8], nc = 0, longest = 0;
    for (int y = 0; y < im.h; y++)
        for (int x = 0; x < im.w; x++) {
            if (!IS_BAR(px(im.rgb, im.w, x, y)) || (x > 0 && IS_BAR(px(im.rgb, im.w, x - 1, y))))
                continue;
            int len = 0;
            while (x + len < im.w && IS_BAR(px(im.rgb, im.w, x + len, y)))
                len++;
            longest = len > longest ? len : longest;
            int c = 0;
            while (c < nc && abs(x0s[c] - x) > 1)
                c++;
            if (c == nc) {
                cr_assert_lt(nc, 8, "more bar columns than experts");
                x0s[nc] = x, len0[nc] = len, bars[nc] = 0, last_y[nc++] = -2;
            }
            if (last_y[c] != y - 1)
                bars[c]++;
            last_y[c] = y;
        }
#undef IS_BAR
    int want_cols = 0;
    for (int e = 0; e < E; e++)
        want_cols += top[e] > 0;
    cr_assert_eq(nc, want_cols, "%d columns of bars, the reference's experts that took tokens %d", nc, want_cols);
    cr_assert_geq(longest, 40, "the longest bar is %d px", longest);
    /* columns left to right */
    for (int a = 0; a < nc; a++)
        for (int b = a + 1; b < nc; b++)
            if (x0s[b] < x0s[a]) {
                int tx = x0s[a], tl = len0[a], tb = bars[a];
                x0s[a] = x0s[b], len0[a] = len0[b], bars[a] = bars[b];
                x0s[b] = tx, len0[b] = tl, bars[b] = tb;
            }
    for (int e = 0, c = 0; e < E; e++) {
        if (top[e] == 0)
            continue;
        double want = top[e] / full * longest;
        cr_assert(fabs(len0[c] - want) <= 2, "expert %d's top bar %d px, the reference's share %.3f of %.3f: %.1f px",
                  e, len0[c], top[e], full, want);
        cr_assert_eq(bars[c], distinct[e], "expert %d: %d bars, the reference's distinct tokens %d", e, bars[c],
                     distinct[e]);
        c++;
    }
    png_free_img(&im);
    npy_free(&t);
    npy_free(&ix);
    /* bad requests: a message naming what, and nothing written */
    const char *bad[][2] = {{"export experts 2 %s", "layer"}, {"export experts 1 /nonexistent-dir/x.png", "/nonexistent-dir"}};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/bad%d.png", dir, i);
        snprintf(cmd, sizeof cmd, bad[i][0], path);
        cr_assert_eq(run_captured(s, cmd, out, sizeof out, msg, sizeof msg), AS_ERR, "%s", cmd);
        cr_assert(strstr(msg, bad[i][1]), "%s: %s", cmd, msg);
        cr_assert_neq(access(path, F_OK), 0, "%s was written", path);
    }
    as_session *d = open_session("fixtures/tiny-deepseek2-v3moe.gguf", 64);
    run_ok(d, "prompt the cat sat; finish");
    snprintf(path, sizeof path, "%s/dense.png", dir);
    snprintf(cmd, sizeof cmd, "export experts 0 %s", path);
    cr_assert_eq(run_captured(d, cmd, out, sizeof out, msg, sizeof msg), AS_ERR);
    cr_assert(strstr(msg, "dense"), "%s", msg);
    cr_assert_neq(access(path, F_OK), 0, "%s was written", path);
    close_session(d);
    close_session(s);
    remove_tree(dir);
    free(dir);
}

/* An image model's figure says which image it shows and what the model
 * made of it: the file's name (not its folder) and the class at [CLS]
 * with its probability (the softmax of the logits, computed here) in the
 * metadata. */
Test(figure, image_figures_record_the_image_and_its_class)
{
    as_session *s = open_session("fixtures/tiny-vit.gguf", 64);
    char *dir = make_tmpdir(), cmd[512], out[1024], msg[1024], path[256];
    snprintf(path, sizeof path, "%s/ov.png", dir);
    run_ok(s, "image fixtures/tiny-vit/image.png; finish");
    snprintf(cmd, sizeof cmd, "export overlay 0 0 %s", path);
    cr_assert_eq(run_captured(s, cmd, out, sizeof out, msg, sizeof msg), AS_OK, "%s", msg);
    const float *lg = as_interp_logits(s->it);
    cr_assert(lg);
    int n = s->model->cfg.n_vocab, best = 0;
    double sum = 0;
    for (int i = 1; i < n; i++)
        best = lg[i] > lg[best] ? i : best;
    for (int i = 0; i < n; i++)
        sum += exp((double)lg[i] - lg[best]);
    char want[256];
    snprintf(want, sizeof want, "%s (probability %.4f)", as_tokenizer_piece(s->model->tok, best), 1 / sum);
    png_img im;
    png_load(path, &im);
    cr_assert_str_eq(text_chunk(&im, "Image"), "image.png");
    cr_assert_str_eq(text_chunk(&im, "Class"), want);
    png_free_img(&im);
    close_session(s);
    remove_tree(dir);
    free(dir);
}
