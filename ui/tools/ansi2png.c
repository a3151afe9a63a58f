/* ansi2png: renders a terminal screen captured with colours
 * (`tmux capture-pane -p -e`) as a PNG, in DejaVu Sans Mono, the way a
 * terminal with a dark background would show it. Block elements, shades
 * and box-drawing lines are drawn as shapes, not glyphs, so half blocks
 * tile without seams. Used for the README's screenshot:
 *
 *   tmux capture-pane -p -e -t S > screen.ans
 *   build/ansi2png screen.ans 160 48 assets/screenshot.png [font-px]
 *
 * Built by `make screenshot` (see tests/e2e/tui_screenshot.sh). */
#include <ft2build.h>
#include FT_FREETYPE_H
#include <png.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../palette.h"

#define FONT_DIR "/usr/share/fonts/truetype/dejavu/"

typedef struct cell {
    uint32_t ch;
    uint8_t fg[3], bg[3];
    int bold;
} cell;

typedef struct pen {
    int fg, bg;       /* -1 default, else 0xRRGGBB */
    int bold, reverse, dim;
} pen;

static const uint8_t DEF_FG[3] = {0xdc, 0xdc, 0xdc}, DEF_BG[3] = {0x1c, 0x1c, 0x1c};

static int idx_rgb(int i)
{
    uint8_t c[3];
    pal_256_rgb(i, c);
    return c[0] << 16 | c[1] << 8 | c[2];
}

/* Applies one SGR parameter list ("38;5;12;1") to the pen. */
static void sgr(pen *p, const char *params)
{
    int v[32], n = 0;
    for (const char *s = params; n < 32;) {
        v[n++] = atoi(s);
        s = strchr(s, ';');
        if (!s)
            break;
        s++;
    }
    for (int i = 0; i < n; i++) {
        int a = v[i];
        if (a == 0)
            *p = (pen){-1, -1, 0, 0, 0};
        else if (a == 1)
            p->bold = 1;
        else if (a == 2)
            p->dim = 1;
        else if (a == 22)
            p->bold = p->dim = 0;
        else if (a == 7)
            p->reverse = 1;
        else if (a == 27)
            p->reverse = 0;
        else if (a >= 30 && a <= 37)
            p->fg = idx_rgb(a - 30);
        else if (a >= 90 && a <= 97)
            p->fg = idx_rgb(a - 90 + 8);
        else if (a >= 40 && a <= 47)
            p->bg = idx_rgb(a - 40);
        else if (a >= 100 && a <= 107)
            p->bg = idx_rgb(a - 100 + 8);
        else if (a == 39)
            p->fg = -1;
        else if (a == 49)
            p->bg = -1;
        else if ((a == 38 || a == 48) && i + 2 < n && v[i + 1] == 5) {
            *(a == 38 ? &p->fg : &p->bg) = idx_rgb(v[i + 2]);
            i += 2;
        } else if ((a == 38 || a == 48) && i + 4 < n && v[i + 1] == 2) {
            *(a == 38 ? &p->fg : &p->bg) = v[i + 2] << 16 | v[i + 3] << 8 | v[i + 4];
            i += 4;
        }
    }
}

static void set_rgb(uint8_t out[3], int hex, const uint8_t def[3])
{
    if (hex < 0) {
        memcpy(out, def, 3);
        return;
    }
    out[0] = (uint8_t)(hex >> 16);
    out[1] = (uint8_t)(hex >> 8);
    out[2] = (uint8_t)hex;
}

static void put(cell *grid, int cols, int rows, int y, int x, uint32_t ch, const pen *p)
{
    if (y >= rows || x >= cols)
        return;
    cell *c = &grid[y * cols + x];
    c->ch = ch;
    set_rgb(c->fg, p->reverse ? p->bg : p->fg, p->reverse ? DEF_BG : DEF_FG);
    set_rgb(c->bg, p->reverse ? p->fg : p->bg, p->reverse ? DEF_FG : DEF_BG);
    if (p->dim)
        for (int k = 0; k < 3; k++)
            c->fg[k] = (uint8_t)((c->fg[k] + c->bg[k]) / 2);
    c->bold = p->bold;
}

static uint32_t utf8_next(const unsigned char **s)
{
    const unsigned char *p = *s;
    uint32_t c = *p++;
    int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
    if (extra)
        c &= 0x3F >> extra;
    while (extra-- > 0 && (*p & 0xC0) == 0x80)
        c = c << 6 | (*p++ & 0x3F);
    *s = p;
    return c;
}

static void parse(const char *text, cell *grid, int cols, int rows)
{
    pen p = {-1, -1, 0, 0, 0};
    int y = 0, x = 0;
    for (int i = 0; i < cols * rows; i++)
        put(grid, cols, rows, i / cols, i % cols, ' ', &p);
    const unsigned char *s = (const unsigned char *)text;
    while (*s && y < rows) {
        if (*s == '\033' && s[1] == '[') {
            const unsigned char *e = s + 2;
            while (*e && !(*e >= 0x40 && *e <= 0x7e))
                e++;
            if (*e == 'm') {
                char params[256];
                snprintf(params, sizeof params, "%.*s", (int)(e - s - 2), s + 2);
                sgr(&p, params);
            }
            s = *e ? e + 1 : e;
            continue;
        }
        if (*s == '\n') {
            /* tmux ends a line without resetting the pen; the rest of the
             * line keeps the default background. */
            y++;
            x = 0;
            s++;
            continue;
        }
        put(grid, cols, rows, y, x++, utf8_next(&s), &p);
    }
}

/* ---- drawing ---- */

typedef struct canvas {
    int w, h, cw, ch, baseline;
    uint8_t *px;
    FT_Face regular, bold;
} canvas;

static void fill(canvas *cv, int x0, int y0, int w, int h, const uint8_t rgb[3])
{
    for (int y = y0; y < y0 + h && y < cv->h; y++)
        for (int x = x0; x < x0 + w && x < cv->w; x++)
            memcpy(&cv->px[(y * cv->w + x) * 3], rgb, 3);
}

static void blend(uint8_t out[3], const uint8_t a[3], const uint8_t b[3], int alpha)
{
    for (int k = 0; k < 3; k++)
        out[k] = (uint8_t)((a[k] * alpha + b[k] * (255 - alpha)) / 255);
}

static bool is_shape(uint32_t ch)
{
    return (ch >= 0x2580 && ch <= 0x2593) || (ch >= 0x2800 && ch <= 0x28FF) || ch == 0x2500 || ch == 0x2502 ||
           (ch >= 0x250C && ch <= 0x2524 && (ch - 0x250C) % 4 == 0);
}

/* Block elements, shades, braille dots (the plots' curves: the fonts
 * here have no braille glyphs) and light box lines; 0 if ch is none of
 * them. */
static int shape(canvas *cv, const cell *c, int x0, int y0)
{
    uint32_t ch = c->ch;
    int cw = cv->cw, chh = cv->ch, t = cv->ch >= 24 ? 2 : 1;
    uint8_t mix[3];
    if (ch == 0x2580) {
        fill(cv, x0, y0, cw, chh / 2, c->fg);
    } else if (ch >= 0x2581 && ch <= 0x2588) {
        int h = (int)(ch - 0x2580) * chh / 8;
        fill(cv, x0, y0 + chh - h, cw, h, c->fg);
    } else if (ch >= 0x2589 && ch <= 0x258F) {
        int w = (int)(0x2590 - ch) * cw / 8;
        fill(cv, x0, y0, w, chh, c->fg);
    } else if (ch >= 0x2800 && ch <= 0x28FF) {
        /* bits 0-2 and 6 the left column's dots top to bottom, 3-5 and 7 the right's */
        static const int dx[8] = {0, 0, 0, 1, 1, 1, 0, 1}, dy[8] = {0, 1, 2, 0, 1, 2, 3, 3};
        int d = cw / 4 > 1 ? cw / 4 : 1;
        for (int b = 0; b < 8; b++)
            if ((ch - 0x2800) >> b & 1)
                fill(cv, x0 + cw / 4 + dx[b] * cw / 2 - d / 2, y0 + chh / 8 + dy[b] * chh / 4 - d / 2, d, d, c->fg);
    } else if (ch >= 0x2591 && ch <= 0x2593) {
        blend(mix, c->fg, c->bg, (int)(ch - 0x2590) * 64);
        fill(cv, x0, y0, cw, chh, mix);
    } else if (ch == 0x2500 || ch == 0x2502 || (ch >= 0x250C && ch <= 0x2524 && (ch - 0x250C) % 4 == 0)) {
        int mx = x0 + cw / 2, my = y0 + chh / 2;
        bool left = ch == 0x2500 || ch == 0x2510 || ch == 0x2518 || ch == 0x2524;
        bool right = ch == 0x2500 || ch == 0x250C || ch == 0x2514 || ch == 0x251C;
        bool up = ch == 0x2502 || ch == 0x2514 || ch == 0x2518 || ch == 0x251C || ch == 0x2524;
        bool down = ch == 0x2502 || ch == 0x250C || ch == 0x2510 || ch == 0x251C || ch == 0x2524;
        if (left)
            fill(cv, x0, my, mx - x0 + t, t, c->fg);
        if (right)
            fill(cv, mx, my, x0 + cw - mx, t, c->fg);
        if (up)
            fill(cv, mx, y0, t, my - y0 + t, c->fg);
        if (down)
            fill(cv, mx, my, t, y0 + chh - my, c->fg);
    } else {
        return 0;
    }
    return 1;
}

static void glyph(canvas *cv, const cell *c, int x0, int y0)
{
    FT_Face face = c->bold ? cv->bold : cv->regular;
    if (FT_Load_Char(face, c->ch, FT_LOAD_RENDER | FT_LOAD_TARGET_LIGHT))
        return;
    FT_Bitmap *bm = &face->glyph->bitmap;
    int gx = x0 + face->glyph->bitmap_left, gy = y0 + cv->baseline - face->glyph->bitmap_top;
    for (unsigned r = 0; r < bm->rows; r++)
        for (unsigned col = 0; col < bm->width; col++) {
            int x = gx + (int)col, y = gy + (int)r;
            if (x < 0 || y < 0 || x >= cv->w || y >= cv->h)
                continue;
            uint8_t *dst = &cv->px[(y * cv->w + x) * 3];
            blend(dst, c->fg, dst, bm->buffer[r * (unsigned)bm->pitch + col]);
        }
}

static int write_png(const canvas *cv, const char *path)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png_create_info_struct(png);
    if (setjmp(png_jmpbuf(png))) {
        fclose(f);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)cv->w, (png_uint_32)cv->h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < cv->h; y++)
        png_write_row(png, cv->px + (size_t)y * (size_t)cv->w * 3);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    return fclose(f);
}

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *buf = malloc((size_t)n + 1);
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    if (buf)
        buf[n] = '\0';
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    if (argc < 5) {
        fprintf(stderr, "usage: ansi2png SCREEN.ans COLS ROWS OUT.png [FONT_PX]\n");
        return 2;
    }
    int cols = atoi(argv[2]), rows = atoi(argv[3]), px = argc > 5 ? atoi(argv[5]) : 16;
    char *text = slurp(argv[1]);
    cell *grid = calloc((size_t)cols * (size_t)rows, sizeof *grid);
    FT_Library ft;
    canvas cv = {0};
    if (!text || !grid || cols < 1 || rows < 1 || FT_Init_FreeType(&ft) ||
        FT_New_Face(ft, FONT_DIR "DejaVuSansMono.ttf", 0, &cv.regular) ||
        FT_New_Face(ft, FONT_DIR "DejaVuSansMono-Bold.ttf", 0, &cv.bold)) {
        fprintf(stderr, "ansi2png: cannot read %s or the DejaVu Sans Mono fonts\n", argv[1]);
        return 1;
    }
    FT_Set_Pixel_Sizes(cv.regular, 0, (FT_UInt)px);
    FT_Set_Pixel_Sizes(cv.bold, 0, (FT_UInt)px);
    cv.cw = (int)(cv.regular->size->metrics.max_advance >> 6);
    cv.ch = (int)((cv.regular->size->metrics.height >> 6));
    cv.baseline = (int)(cv.regular->size->metrics.ascender >> 6);
    cv.w = cols * cv.cw;
    cv.h = rows * cv.ch;
    cv.px = malloc((size_t)cv.w * (size_t)cv.h * 3);
    parse(text, grid, cols, rows);
    /* Backgrounds and shapes first, glyphs after, so that descenders
     * (an underscore) are not covered by the row below. */
    for (int y = 0; y < rows; y++)
        for (int x = 0; x < cols; x++) {
            const cell *c = &grid[y * cols + x];
            fill(&cv, x * cv.cw, y * cv.ch, cv.cw, cv.ch, c->bg);
            shape(&cv, c, x * cv.cw, y * cv.ch);
        }
    for (int y = 0; y < rows; y++)
        for (int x = 0; x < cols; x++) {
            const cell *c = &grid[y * cols + x];
            if (c->ch != ' ' && !is_shape(c->ch))
                glyph(&cv, c, x * cv.cw, y * cv.ch);
        }
    int rc = write_png(&cv, argv[4]) ? 1 : 0;
    if (rc)
        fprintf(stderr, "ansi2png: cannot write %s\n", argv[4]);
    return rc;
}
