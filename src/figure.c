#include "attnscope/figure.h"

#include <ft2build.h>
#include FT_FREETYPE_H
#include FT_ADVANCES_H
#include FT_TRUETYPE_TABLES_H
#include <math.h>
#include <png.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "attnscope/npy.h"

#ifndef AS_VERSION
#define AS_VERSION "unknown"
#endif

/* ================================================================ fonts */

struct as_fig_ctx {
    FT_Library lib;   /* NULL if FreeType would not start */
    FT_Face face;     /* NULL: the built-in bitmap font */
    float face_px;    /* the size the face is set to */
    float cap_em;     /* cap height per em */
    char name[512];
};

/* Where distributions put DejaVu Sans. */
static const char *const font_paths[] = {
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",   /* Debian, Ubuntu */
    "/usr/share/fonts/TTF/DejaVuSans.ttf",               /* Arch */
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf", /* Fedora */
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/local/share/fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/DejaVuSans.ttf",
};

/* The fallback font: 5x9 glyphs for ASCII 32-126 (rows 0-6 above the
 * baseline, 7-8 descenders; bit 4 is the leftmost column), drawn for
 * attnscope; entry 95 is the box drawn for every other character. */
static const uint8_t bitmap_font[96][9] = {
    {0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x00}, /*   */
    {0x04,0x04,0x04,0x04,0x04,0x00,0x04,0x00,0x00}, /* ! */
    {0x0a,0x0a,0x0a,0x00,0x00,0x00,0x00,0x00,0x00}, /* " */
    {0x0a,0x0a,0x1f,0x0a,0x1f,0x0a,0x0a,0x00,0x00}, /* # */
    {0x04,0x0f,0x14,0x0e,0x05,0x1e,0x04,0x00,0x00}, /* $ */
    {0x18,0x19,0x02,0x04,0x08,0x13,0x03,0x00,0x00}, /* % */
    {0x0c,0x12,0x14,0x08,0x15,0x12,0x0d,0x00,0x00}, /* & */
    {0x04,0x04,0x04,0x00,0x00,0x00,0x00,0x00,0x00}, /* ' */
    {0x02,0x04,0x08,0x08,0x08,0x04,0x02,0x00,0x00}, /* ( */
    {0x08,0x04,0x02,0x02,0x02,0x04,0x08,0x00,0x00}, /* ) */
    {0x00,0x04,0x15,0x0e,0x15,0x04,0x00,0x00,0x00}, /* star */
    {0x00,0x04,0x04,0x1f,0x04,0x04,0x00,0x00,0x00}, /* + */
    {0x00,0x00,0x00,0x00,0x00,0x06,0x06,0x02,0x04}, /* , */
    {0x00,0x00,0x00,0x1f,0x00,0x00,0x00,0x00,0x00}, /* - */
    {0x00,0x00,0x00,0x00,0x00,0x0c,0x0c,0x00,0x00}, /* . */
    {0x00,0x01,0x02,0x04,0x08,0x10,0x00,0x00,0x00}, /* / */
    {0x0e,0x11,0x13,0x15,0x19,0x11,0x0e,0x00,0x00}, /* 0 */
    {0x04,0x0c,0x04,0x04,0x04,0x04,0x0e,0x00,0x00}, /* 1 */
    {0x0e,0x11,0x01,0x02,0x04,0x08,0x1f,0x00,0x00}, /* 2 */
    {0x1f,0x02,0x04,0x02,0x01,0x11,0x0e,0x00,0x00}, /* 3 */
    {0x02,0x06,0x0a,0x12,0x1f,0x02,0x02,0x00,0x00}, /* 4 */
    {0x1f,0x10,0x1e,0x01,0x01,0x11,0x0e,0x00,0x00}, /* 5 */
    {0x06,0x08,0x10,0x1e,0x11,0x11,0x0e,0x00,0x00}, /* 6 */
    {0x1f,0x01,0x02,0x04,0x08,0x08,0x08,0x00,0x00}, /* 7 */
    {0x0e,0x11,0x11,0x0e,0x11,0x11,0x0e,0x00,0x00}, /* 8 */
    {0x0e,0x11,0x11,0x0f,0x01,0x02,0x0c,0x00,0x00}, /* 9 */
    {0x00,0x0c,0x0c,0x00,0x0c,0x0c,0x00,0x00,0x00}, /* : */
    {0x00,0x0c,0x0c,0x00,0x0c,0x0c,0x04,0x08,0x00}, /* ; */
    {0x02,0x04,0x08,0x10,0x08,0x04,0x02,0x00,0x00}, /* < */
    {0x00,0x00,0x1f,0x00,0x1f,0x00,0x00,0x00,0x00}, /* = */
    {0x08,0x04,0x02,0x01,0x02,0x04,0x08,0x00,0x00}, /* > */
    {0x0e,0x11,0x01,0x02,0x04,0x00,0x04,0x00,0x00}, /* ? */
    {0x0e,0x11,0x01,0x0d,0x15,0x15,0x0e,0x00,0x00}, /* @ */
    {0x0e,0x11,0x11,0x1f,0x11,0x11,0x11,0x00,0x00}, /* A */
    {0x1e,0x11,0x11,0x1e,0x11,0x11,0x1e,0x00,0x00}, /* B */
    {0x0e,0x11,0x10,0x10,0x10,0x11,0x0e,0x00,0x00}, /* C */
    {0x1c,0x12,0x11,0x11,0x11,0x12,0x1c,0x00,0x00}, /* D */
    {0x1f,0x10,0x10,0x1e,0x10,0x10,0x1f,0x00,0x00}, /* E */
    {0x1f,0x10,0x10,0x1e,0x10,0x10,0x10,0x00,0x00}, /* F */
    {0x0e,0x11,0x10,0x17,0x11,0x11,0x0f,0x00,0x00}, /* G */
    {0x11,0x11,0x11,0x1f,0x11,0x11,0x11,0x00,0x00}, /* H */
    {0x0e,0x04,0x04,0x04,0x04,0x04,0x0e,0x00,0x00}, /* I */
    {0x07,0x02,0x02,0x02,0x02,0x12,0x0c,0x00,0x00}, /* J */
    {0x11,0x12,0x14,0x18,0x14,0x12,0x11,0x00,0x00}, /* K */
    {0x10,0x10,0x10,0x10,0x10,0x10,0x1f,0x00,0x00}, /* L */
    {0x11,0x1b,0x15,0x15,0x11,0x11,0x11,0x00,0x00}, /* M */
    {0x11,0x11,0x19,0x15,0x13,0x11,0x11,0x00,0x00}, /* N */
    {0x0e,0x11,0x11,0x11,0x11,0x11,0x0e,0x00,0x00}, /* O */
    {0x1e,0x11,0x11,0x1e,0x10,0x10,0x10,0x00,0x00}, /* P */
    {0x0e,0x11,0x11,0x11,0x15,0x12,0x0d,0x00,0x00}, /* Q */
    {0x1e,0x11,0x11,0x1e,0x14,0x12,0x11,0x00,0x00}, /* R */
    {0x0f,0x10,0x10,0x0e,0x01,0x01,0x1e,0x00,0x00}, /* S */
    {0x1f,0x04,0x04,0x04,0x04,0x04,0x04,0x00,0x00}, /* T */
    {0x11,0x11,0x11,0x11,0x11,0x11,0x0e,0x00,0x00}, /* U */
    {0x11,0x11,0x11,0x11,0x11,0x0a,0x04,0x00,0x00}, /* V */
    {0x11,0x11,0x11,0x15,0x15,0x15,0x0a,0x00,0x00}, /* W */
    {0x11,0x11,0x0a,0x04,0x0a,0x11,0x11,0x00,0x00}, /* X */
    {0x11,0x11,0x11,0x0a,0x04,0x04,0x04,0x00,0x00}, /* Y */
    {0x1f,0x01,0x02,0x04,0x08,0x10,0x1f,0x00,0x00}, /* Z */
    {0x0e,0x08,0x08,0x08,0x08,0x08,0x0e,0x00,0x00}, /* [ */
    {0x00,0x10,0x08,0x04,0x02,0x01,0x00,0x00,0x00}, /* backslash */
    {0x0e,0x02,0x02,0x02,0x02,0x02,0x0e,0x00,0x00}, /* ] */
    {0x04,0x0a,0x11,0x00,0x00,0x00,0x00,0x00,0x00}, /* ^ */
    {0x00,0x00,0x00,0x00,0x00,0x00,0x00,0x1f,0x00}, /* _ */
    {0x08,0x04,0x02,0x00,0x00,0x00,0x00,0x00,0x00}, /* ` */
    {0x00,0x00,0x0e,0x01,0x0f,0x11,0x0f,0x00,0x00}, /* a */
    {0x10,0x10,0x16,0x19,0x11,0x11,0x1e,0x00,0x00}, /* b */
    {0x00,0x00,0x0e,0x10,0x10,0x11,0x0e,0x00,0x00}, /* c */
    {0x01,0x01,0x0d,0x13,0x11,0x11,0x0f,0x00,0x00}, /* d */
    {0x00,0x00,0x0e,0x11,0x1f,0x10,0x0e,0x00,0x00}, /* e */
    {0x06,0x09,0x08,0x1c,0x08,0x08,0x08,0x00,0x00}, /* f */
    {0x00,0x00,0x0f,0x11,0x11,0x13,0x0d,0x01,0x0e}, /* g */
    {0x10,0x10,0x16,0x19,0x11,0x11,0x11,0x00,0x00}, /* h */
    {0x04,0x00,0x0c,0x04,0x04,0x04,0x0e,0x00,0x00}, /* i */
    {0x02,0x00,0x06,0x02,0x02,0x02,0x02,0x12,0x0c}, /* j */
    {0x10,0x10,0x12,0x14,0x18,0x14,0x12,0x00,0x00}, /* k */
    {0x0c,0x04,0x04,0x04,0x04,0x04,0x0e,0x00,0x00}, /* l */
    {0x00,0x00,0x1a,0x15,0x15,0x11,0x11,0x00,0x00}, /* m */
    {0x00,0x00,0x16,0x19,0x11,0x11,0x11,0x00,0x00}, /* n */
    {0x00,0x00,0x0e,0x11,0x11,0x11,0x0e,0x00,0x00}, /* o */
    {0x00,0x00,0x1e,0x11,0x11,0x19,0x16,0x10,0x10}, /* p */
    {0x00,0x00,0x0f,0x11,0x11,0x13,0x0d,0x01,0x01}, /* q */
    {0x00,0x00,0x16,0x19,0x10,0x10,0x10,0x00,0x00}, /* r */
    {0x00,0x00,0x0e,0x10,0x0e,0x01,0x1e,0x00,0x00}, /* s */
    {0x08,0x08,0x1c,0x08,0x08,0x09,0x06,0x00,0x00}, /* t */
    {0x00,0x00,0x11,0x11,0x11,0x13,0x0d,0x00,0x00}, /* u */
    {0x00,0x00,0x11,0x11,0x11,0x0a,0x04,0x00,0x00}, /* v */
    {0x00,0x00,0x11,0x11,0x15,0x15,0x0a,0x00,0x00}, /* w */
    {0x00,0x00,0x11,0x0a,0x04,0x0a,0x11,0x00,0x00}, /* x */
    {0x00,0x00,0x11,0x11,0x11,0x13,0x0d,0x01,0x0e}, /* y */
    {0x00,0x00,0x1f,0x02,0x04,0x08,0x1f,0x00,0x00}, /* z */
    {0x02,0x04,0x04,0x08,0x04,0x04,0x02,0x00,0x00}, /* { */
    {0x04,0x04,0x04,0x04,0x04,0x04,0x04,0x00,0x00}, /* | */
    {0x08,0x04,0x04,0x02,0x04,0x04,0x08,0x00,0x00}, /* } */
    {0x00,0x00,0x08,0x15,0x02,0x00,0x00,0x00,0x00}, /* ~ */
    {0x1f,0x11,0x11,0x11,0x11,0x11,0x1f,0x00,0x00}, /* box */
};

static bool try_face(as_fig_ctx *c, const char *path)
{
    FT_Face face;
    if (!c->lib || FT_New_Face(c->lib, path, 0, &face))
        return false;
    if (!FT_IS_SCALABLE(face) || FT_Select_Charmap(face, FT_ENCODING_UNICODE)) {
        FT_Done_Face(face);
        return false;
    }
    const TT_OS2 *os2 = FT_Get_Sfnt_Table(face, FT_SFNT_OS2);
    c->cap_em = os2 && os2->version >= 2 && os2->sCapHeight > 0
                    ? (float)os2->sCapHeight / (float)face->units_per_EM : 0.72f;
    c->face = face;
    snprintf(c->name, sizeof c->name, "%s", path);
    return true;
}

int as_fig_ctx_new(as_fig_ctx **out, const char *font_path, as_error *err)
{
    as_fig_ctx *c = calloc(1, sizeof *c);
    *out = NULL;
    if (!c)
        return as_error_set(err, "out of memory");
    if (FT_Init_FreeType(&c->lib))
        c->lib = NULL;
    bool found = false;
    if (font_path)
        found = try_face(c, font_path);
    for (size_t i = 0; !font_path && !found && i < sizeof font_paths / sizeof *font_paths; i++)
        found = try_face(c, font_paths[i]);
    if (!found)
        snprintf(c->name, sizeof c->name, "built-in bitmap font");
    *out = c;
    return AS_OK;
}

void as_fig_ctx_free(as_fig_ctx *c)
{
    if (!c)
        return;
    if (c->face)
        FT_Done_Face(c->face);
    if (c->lib)
        FT_Done_FreeType(c->lib);
    free(c);
}

bool as_fig_ctx_has_font(const as_fig_ctx *c) { return c->face != NULL; }
const char *as_fig_ctx_font_name(const as_fig_ctx *c) { return c->name; }

static void set_px(as_fig_ctx *c, float px)
{
    if (c->face && c->face_px != px) {
        FT_Set_Char_Size(c->face, 0, (FT_F26Dot6)lrintf(px * 64.0f), 72, 72);
        c->face_px = px;
    }
}

/* Bitmap glyphs are scaled by whole pixels so they stay sharp. */
static int bitmap_scale(float px)
{
    int s = (int)lrintf(px * 0.72f / 7.0f);
    return s < 1 ? 1 : s;
}

/* Next code point of UTF-8 text; an invalid byte reads as U+FFFD. */
static uint32_t utf8_next(const char **pp)
{
    const unsigned char *p = (const unsigned char *)*pp;
    uint32_t c = p[0];
    int n = c < 0x80 ? 0 : (c & 0xE0) == 0xC0 && c >= 0xC2 ? 1 : (c & 0xF0) == 0xE0 ? 2
          : (c & 0xF8) == 0xF0 && c <= 0xF4 ? 3 : -1;
    if (n < 0) {
        *pp += 1;
        return 0xFFFD;
    }
    c &= n == 0 ? 0x7F : n == 1 ? 0x1F : n == 2 ? 0x0F : 0x07;
    for (int i = 1; i <= n; i++) {
        if ((p[i] & 0xC0) != 0x80) {
            *pp += 1;
            return 0xFFFD;
        }
        c = c << 6 | (p[i] & 0x3F);
    }
    *pp += n + 1;
    return c;
}

/* The bitmap glyph for a code point: ASCII as itself, a few marks the
 * figures use as their nearest ASCII, anything else the box. */
static const uint8_t *bitmap_glyph(uint32_t cp)
{
    switch (cp) {
    case 0xB7: cp = '_'; break;            /* the visible space */
    case 0xD7: cp = 'x'; break;            /* multiplication sign */
    case 0x2013: case 0x2014: case 0x2212: cp = '-'; break;
    case 0x2026: cp = '.'; break;
    case 0x221D: cp = '~'; break;          /* proportional to */
    }
    return bitmap_font[cp >= 32 && cp < 127 ? cp - 32 : 95];
}

static float text_width(as_fig_ctx *c, const char *s, float px)
{
    float w = 0;
    if (!c->face) {
        for (const char *p = s; *p;)
            utf8_next(&p), w += 6.0f;
        return w * (float)bitmap_scale(px);
    }
    set_px(c, px);
    for (const char *p = s; *p;) {
        FT_Fixed adv = 0;
        FT_UInt gi = FT_Get_Char_Index(c->face, utf8_next(&p));
        if (!FT_Get_Advance(c->face, gi, FT_LOAD_NO_HINTING, &adv))
            w += (float)adv / 65536.0f;
    }
    return w;
}

static float cap_height(const as_fig_ctx *c, float px)
{
    return c->face ? c->cap_em * px : 7.0f * (float)bitmap_scale(px);
}

/* Distance between the baselines of stacked lines. */
static float line_height(const as_fig_ctx *c, float px)
{
    float h = 1.2f * px;
    return c->face ? h : fmaxf(h, 11.0f * (float)bitmap_scale(px));
}

static size_t put_utf8(char *out, size_t o, size_t cap, const char *s)
{
    size_t n = strlen(s);
    if (o + n + 1 > cap)
        return o;
    memcpy(out + o, s, n);
    return o + n;
}

/* Length of the valid UTF-8 sequence at p (complete within avail,
 * shortest form, no surrogates), or 0. */
static size_t utf8_seq_len(const unsigned char *p, size_t avail)
{
    unsigned char b = p[0];
    size_t n;
    uint32_t cp, min;
    if (b < 0x80)
        return 1;
    if ((b & 0xE0) == 0xC0)
        n = 2, cp = b & 0x1F, min = 0x80;
    else if ((b & 0xF0) == 0xE0)
        n = 3, cp = b & 0x0F, min = 0x800;
    else if ((b & 0xF8) == 0xF0)
        n = 4, cp = b & 0x07, min = 0x10000;
    else
        return 0;
    if (n > avail)
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((p[i] & 0xC0) != 0x80)
            return 0;
        cp = cp << 6 | (p[i] & 0x3F);
    }
    return cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF) ? 0 : n;
}

/* A malloc'd copy of s with every invalid UTF-8 byte replaced by U+FFFD,
 * so SVG stays well-formed and PNG iTXt valid whatever a title holds. */
static char *utf8_clean(const char *s)
{
    size_t len = strlen(s), o = 0;
    char *out = malloc(len * 3 + 1);
    if (!out)
        return NULL;
    for (size_t i = 0; i < len;) {
        size_t n = utf8_seq_len((const unsigned char *)s + i, len - i);
        if (n) {
            memcpy(out + o, s + i, n);
            o += n, i += n;
        } else {
            memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3, i++;
        }
    }
    out[o] = '\0';
    return out;
}

void as_fig_visible_text(const char *bytes, size_t len, char *out, size_t cap)
{
    size_t o = 0;
    if (cap == 0)
        return;
    for (size_t i = 0; i < len;) {
        unsigned char b = (unsigned char)bytes[i];
        const char *p = bytes + i;
        char tmp[8];
        if (b == ' ')
            o = put_utf8(out, o, cap, "\xC2\xB7"), i++;
        else if (b == '\n')
            o = put_utf8(out, o, cap, "\xE2\x86\xB5"), i++;
        else if (b == '\t')
            o = put_utf8(out, o, cap, "\xE2\x87\xA5"), i++;
        else if (b < 0x20 || b == 0x7F) {
            snprintf(tmp, sizeof tmp, "\\x%02X", b);
            o = put_utf8(out, o, cap, tmp), i++;
        } else {
            /* Only a complete sequence within len counts as a character. */
            char seq[5] = {0};
            size_t n = utf8_seq_len((const unsigned char *)p, len - i);
            if (n) {
                memcpy(seq, p, n);
                o = put_utf8(out, o, cap, seq);
                i += n;
            } else {
                snprintf(tmp, sizeof tmp, "\\x%02X", b);
                o = put_utf8(out, o, cap, tmp), i++;
            }
        }
    }
    out[o] = '\0';
}

/* Copies s into out, cut with an ellipsis so it is at most maxw px wide. */
static void elide(as_fig_ctx *c, const char *s, float px, float maxw, char *out, size_t cap)
{
    snprintf(out, cap, "%s", s);
    if (text_width(c, out, px) <= maxw)
        return;
    const char *dots = c->face ? "\xE2\x80\xA6" : "..";
    const char *p = s;
    size_t keep = 0;
    char buf[512];
    while (*p) {
        utf8_next(&p);
        size_t n = (size_t)(p - s);
        if (n + 4 >= sizeof buf || n + 4 >= cap)
            break;
        memcpy(buf, s, n);
        strcpy(buf + n, dots);
        if (text_width(c, buf, px) > maxw)
            break;
        keep = n;
    }
    memcpy(out, s, keep);
    strcpy(out + keep, dots);
}

/* ========================================================= display list */

typedef enum prim_kind { PR_RECT, PR_CELLS, PR_LINE, PR_MARK, PR_TEXT, PR_GRAD } prim_kind;
enum { AL_START, AL_MIDDLE, AL_END };

/* One drawing primitive, in device pixels (y down). */
typedef struct prim {
    prim_kind kind;
    float x, y, w, h;       /* RECT, CELLS, GRAD: the box; MARK: centre in x, y */
    uint8_t fill[3], stroke[3];
    bool filled, stroked;
    float lw;               /* stroke width */
    float alpha;            /* fill opacity */
    int rows, cols, mat;    /* CELLS: rows × cols cells of w × h each, of matrix mat */
    uint8_t *rgb;           /* CELLS: rows*cols*3 */
    float *pts;             /* LINE: n_pts (x, y) pairs */
    int n_pts;
    float r;                /* MARK: radius */
    char *text;             /* TEXT: anchored at (x, y) on the baseline */
    float size;             /* TEXT: px */
    bool rot;               /* TEXT: turned 90° counter-clockwise (reads upwards) */
    int align;              /* TEXT: AL_* along the reading direction */
    const char *cls;        /* TEXT, RECT: SVG class */
    as_cmap cmap;           /* GRAD: colour bar, low end at the bottom */
} prim;

struct as_figure {
    as_fig_ctx *ctx;
    int w, h, dpi;
    prim *p;
    int n, cap;
    char **meta;            /* key, value, key, value, ... */
    int n_meta;
    char *title;
    bool oom;
};

static const uint8_t INK[3] = {0x26, 0x26, 0x26}, GREYTXT[3] = {0x59, 0x59, 0x59},
                     GRIDC[3] = {0xE6, 0xE6, 0xE6}, WHITE[3] = {255, 255, 255},
                     NANC[3] = {0xFF, 0x00, 0xFF};
/* matplotlib's tab10, for series */
static const uint8_t SERIES[4][3] = {{0x1F, 0x77, 0xB4}, {0xFF, 0x7F, 0x0E}, {0x2C, 0xA0, 0x2C},
                                     {0xD6, 0x27, 0x28}};
static const uint8_t HILITE[3] = {0xD6, 0x27, 0x28};

static prim *add(as_figure *f, prim_kind kind)
{
    if (f->oom)
        return NULL;
    if (f->n == f->cap) {
        int cap = f->cap ? f->cap * 2 : 256;
        prim *p = realloc(f->p, (size_t)cap * sizeof *p);
        if (!p) {
            f->oom = true;
            return NULL;
        }
        f->p = p;
        f->cap = cap;
    }
    prim *p = &f->p[f->n++];
    memset(p, 0, sizeof *p);
    p->kind = kind;
    p->alpha = 1;
    return p;
}

static void free_prim(prim *p)
{
    free(p->rgb);
    free(p->pts);
    free(p->text);
}

void as_figure_free(as_figure *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->n; i++)
        free_prim(&f->p[i]);
    for (int i = 0; i < f->n_meta * 2; i++)
        free(f->meta[i]);
    free(f->meta);
    free(f->p);
    free(f->title);
    free(f);
}

void as_figure_size(const as_figure *f, int *w, int *h)
{
    *w = f->w;
    *h = f->h;
}

int as_figure_add_meta(as_figure *f, const char *key, const char *value, as_error *err)
{
    char **m = realloc(f->meta, (size_t)(f->n_meta + 1) * 2 * sizeof *m);
    if (!m)
        return as_error_set(err, "out of memory");
    f->meta = m;
    m[f->n_meta * 2] = utf8_clean(key);
    m[f->n_meta * 2 + 1] = utf8_clean(value ? value : "");
    if (!m[f->n_meta * 2] || !m[f->n_meta * 2 + 1]) {
        free(m[f->n_meta * 2]);
        free(m[f->n_meta * 2 + 1]);
        return as_error_set(err, "out of memory");
    }
    f->n_meta++;
    return AS_OK;
}

int as_figure_cell_rect(const as_figure *f, int mat, int row, int col, int rect[4])
{
    for (int i = 0; i < f->n; i++) {
        const prim *p = &f->p[i];
        if (p->kind != PR_CELLS || p->mat != mat || row < 0 || col < 0 || row >= p->rows || col >= p->cols)
            continue;
        rect[0] = (int)lrintf(p->x + (float)col * p->w);
        rect[1] = (int)lrintf(p->y + (float)row * p->h);
        rect[2] = (int)lrintf(p->x + (float)(col + 1) * p->w) - rect[0];
        rect[3] = (int)lrintf(p->y + (float)(row + 1) * p->h) - rect[1];
        return AS_OK;
    }
    return AS_ERR;
}

/* ============================================================== layout */

/* What a builder carries: the figure, the font and points-to-pixels. */
typedef struct lay {
    as_figure *f;
    as_fig_ctx *c;
    const as_fig_style *st;
    float P; /* pixels per point */
} lay;

static float PT(const lay *L, float pt) { return pt * L->P; }

static int lay_begin(lay *L, as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const char *title,
                     as_error *err)
{
    *out = NULL;
    if (st->dpi < 10 || st->dpi > 2400)
        return as_error_set(err, "dpi must be from 10 to 2400, not %d", st->dpi);
    as_figure *f = calloc(1, sizeof *f);
    if (!f || !(f->title = utf8_clean(title ? title : ""))) {
        free(f);
        return as_error_set(err, "out of memory");
    }
    f->ctx = ctx;
    f->dpi = st->dpi;
    L->f = f;
    L->c = ctx;
    L->st = st;
    L->P = (float)st->dpi / 72.0f;
    return AS_OK;
}

/* Sets the canvas size and hands the figure over. */
static int lay_end(lay *L, float w, float h, as_figure **out, as_error *err)
{
    as_figure *f = L->f;
    f->w = (int)ceilf(w);
    f->h = (int)ceilf(h);
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

static void rect(lay *L, float x, float y, float w, float h, const uint8_t *fill, const uint8_t *stroke,
                 float lw, const char *cls)
{
    prim *p = add(L->f, PR_RECT);
    if (!p)
        return;
    p->x = x, p->y = y, p->w = w, p->h = h;
    if (fill)
        memcpy(p->fill, fill, 3), p->filled = true;
    if (stroke)
        memcpy(p->stroke, stroke, 3), p->stroked = true;
    p->lw = lw;
    p->cls = cls;
}

static void line(lay *L, float x0, float y0, float x1, float y1, const uint8_t *rgb, float lw)
{
    prim *p = add(L->f, PR_LINE);
    if (!p)
        return;
    if (!(p->pts = malloc(4 * sizeof *p->pts))) {
        L->f->oom = true;
        return;
    }
    p->pts[0] = x0, p->pts[1] = y0, p->pts[2] = x1, p->pts[3] = y1;
    p->n_pts = 2;
    memcpy(p->stroke, rgb, 3);
    p->lw = lw;
}

static void polyline(lay *L, const float *pts, int n, const uint8_t *rgb, float lw)
{
    if (n < 2) /* before add(): an empty line's bounds would be infinite */
        return;
    prim *p = add(L->f, PR_LINE);
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
}

static void mark(lay *L, float x, float y, float r, const uint8_t *rgb, float alpha)
{
    prim *p = add(L->f, PR_MARK);
    if (!p)
        return;
    p->x = x, p->y = y, p->r = r, p->alpha = alpha;
    memcpy(p->fill, rgb, 3);
    p->filled = true;
}

/* Text anchored on its baseline at (x, y). */
static void text(lay *L, float x, float y, float size_pt, bool rot, int align, const uint8_t *rgb,
                 const char *cls, const char *s)
{
    if (!s || !*s)
        return;
    prim *p = add(L->f, PR_TEXT);
    if (!p)
        return;
    if (!(p->text = utf8_clean(s))) {
        L->f->oom = true;
        return;
    }
    p->x = x, p->y = y, p->size = PT(L, size_pt), p->rot = rot, p->align = align, p->cls = cls;
    memcpy(p->fill, rgb, 3);
}

static float tw(lay *L, const char *s, float size_pt) { return text_width(L->c, s, PT(L, size_pt)); }
static float caph(lay *L, float size_pt) { return cap_height(L->c, PT(L, size_pt)); }
static float lineh(lay *L, float size_pt) { return line_height(L->c, PT(L, size_pt)); }

/* Horizontal text centred vertically (by cap height) on cy. */
static void text_vc(lay *L, float x, float cy, float size_pt, int align, const uint8_t *rgb, const char *cls,
                    const char *s)
{
    text(L, x, cy + caph(L, size_pt) / 2, size_pt, false, align, rgb, cls, s);
}

/* Upward text whose glyphs are centred horizontally on cx. */
static void text_up(lay *L, float cx, float y, float size_pt, int align, const uint8_t *rgb, const char *cls,
                    const char *s)
{
    text(L, cx + caph(L, size_pt) / 2, y, size_pt, true, align, rgb, cls, s);
}

/* ---- axis scales and ticks ---- */

typedef struct scale {
    double lo, hi;
    bool log;
} scale;

/* Position of v within the scale, 0 at lo and 1 at hi (clamped). */
static double scale_t(const scale *s, double v)
{
    double t;
    if (s->log)
        t = (log10(v > 0 ? v : s->lo) - log10(s->lo)) / (log10(s->hi) - log10(s->lo));
    else
        t = (v - s->lo) / (s->hi - s->lo);
    return isnan(t) ? 0 : t < 0 ? 0 : t > 1 ? 1 : t;
}

static double nice_step(double range, int target)
{
    double raw = range / target, mag = pow(10, floor(log10(raw))), n = raw / mag;
    return (n < 1.5 ? 1 : n < 3 ? 2 : n < 7 ? 5 : 10) * mag;
}

/* A linear scale over [lo, hi] padded by 5% (matplotlib's margins). */
static scale scale_linear(double lo, double hi, bool pad)
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
static scale scale_log(double lo, double hi)
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

#define MAX_TICKS 32

/* Tick values and their labels. */
typedef struct ticks {
    int n;
    double v[MAX_TICKS];
    char label[MAX_TICKS][24];
} ticks;

static void fmt_decade(const lay *L, int e, char *buf, size_t cap)
{
    static const char *const sup[] = {"\xE2\x81\xB0", "\xC2\xB9", "\xC2\xB2", "\xC2\xB3", "\xE2\x81\xB4",
                                      "\xE2\x81\xB5", "\xE2\x81\xB6", "\xE2\x81\xB7", "\xE2\x81\xB8",
                                      "\xE2\x81\xB9"};
    if (e >= -2 && e <= 2) {
        snprintf(buf, cap, "%g", pow(10, e));
        return;
    }
    if (!L->c->face) {
        snprintf(buf, cap, "1e%d", e);
        return;
    }
    size_t o = (size_t)snprintf(buf, cap, "10%s", e < 0 ? "\xE2\x81\xBB" : "");
    char digits[16];
    snprintf(digits, sizeof digits, "%d", abs(e));
    for (char *d = digits; *d && o + 4 < cap; d++)
        o = put_utf8(buf, o, cap, sup[*d - '0']);
    buf[o] = '\0';
}

static void make_ticks(const lay *L, const scale *s, int target, ticks *t)
{
    t->n = 0;
    if (s->log) {
        int e0 = (int)lrint(log10(s->lo)), e1 = (int)lrint(log10(s->hi));
        int every = (e1 - e0 + target - 1) / (target > 0 ? target : 1);
        every = every < 1 ? 1 : every;
        for (int e = e1; e >= e0 && t->n < MAX_TICKS; e -= every) {
            t->v[t->n] = pow(10, e);
            fmt_decade(L, e, t->label[t->n], sizeof t->label[0]);
            t->n++;
        }
        return;
    }
    double step = nice_step(s->hi - s->lo, target);
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
        if (L->c->face && t->label[t->n][0] == '-') {
            char tmp[24];
            snprintf(tmp, sizeof tmp, "\xE2\x88\x92%s", t->label[t->n] + 1);
            snprintf(t->label[t->n], sizeof t->label[0], "%s", tmp);
        }
        t->n++;
    }
}

static float ticks_width(lay *L, const ticks *t, float size_pt)
{
    float w = 0;
    for (int i = 0; i < t->n; i++)
        w = fmaxf(w, tw(L, t->label[i], size_pt));
    return w;
}

/* ---- shared pieces ---- */

#define TITLE_PT 12.0f
#define AXIS_PT 9.0f
#define TICK_PT 8.0f
#define HEAD_PT 9.0f
#define MARGIN_PT 8.0f
#define TICK_LEN_PT 3.5f
#define TICK_PAD_PT 2.0f
#define FRAME_PT 0.8f

/* Moves everything drawn so far right by dx (whole pixels, so cells stay
 * on the pixel grid). */
static void shift_all(as_figure *f, float dx)
{
    dx = floorf(dx);
    for (int i = 0; i < f->n; i++) {
        prim *p = &f->p[i];
        p->x += dx;
        for (int k = 0; k < p->n_pts; k++)
            p->pts[2 * k] += dx;
    }
}

/* Widens the figure to its title, centring what is drawn under it. */
static float fit_title(lay *L, float w, const char *title)
{
    float tw0 = title && *title ? tw(L, title, TITLE_PT) + 2 * PT(L, MARGIN_PT) : 0;
    if (tw0 <= w)
        return w;
    shift_all(L->f, (tw0 - w) / 2);
    return tw0;
}

/* Title (and a grey subtitle) at the top; returns the y below them. */
static float draw_title(lay *L, float w, const char *title, const char *subtitle)
{
    float y = PT(L, MARGIN_PT);
    if (title && *title) {
        y += caph(L, TITLE_PT) + PT(L, 2);
        text(L, w / 2, y, TITLE_PT, false, AL_MIDDLE, INK, "title", title);
        y += PT(L, 8);
    }
    if (subtitle && *subtitle) {
        y += caph(L, TICK_PT) + PT(L, 2);
        text(L, w / 2, y, TICK_PT, false, AL_MIDDLE, GREYTXT, "subtitle", subtitle);
        y += PT(L, 6);
    }
    return y;
}

/* The width a figure needs for its title. */
static float title_width(lay *L, const char *title)
{
    return title ? tw(L, title, TITLE_PT) + 2 * PT(L, MARGIN_PT) : 0;
}

/* Height the title block takes (the same sums as draw_title). */
static float title_height(lay *L, const char *title, const char *subtitle)
{
    float y = PT(L, MARGIN_PT);
    if (title && *title)
        y += caph(L, TITLE_PT) + PT(L, 10);
    if (subtitle && *subtitle)
        y += caph(L, TICK_PT) + PT(L, 8);
    return y;
}

/* A vertical colour bar over scale s; returns its right edge with labels. */
typedef struct cbar {
    float x, y, w, h;
    const scale *s;
    const char *label;
} cbar;

static float cbar_width(lay *L, const ticks *t, const char *label)
{
    return PT(L, 10) + PT(L, TICK_LEN_PT + TICK_PAD_PT) + ticks_width(L, t, TICK_PT) +
           (label ? PT(L, 6) + lineh(L, AXIS_PT) : 0);
}

static void draw_cbar(lay *L, const cbar *cb, const ticks *t)
{
    prim *g = add(L->f, PR_GRAD);
    if (g) {
        g->x = cb->x, g->y = cb->y, g->w = cb->w, g->h = cb->h;
        g->cmap = L->st->cmap;
    }
    float lw = PT(L, FRAME_PT);
    rect(L, cb->x - lw / 2, cb->y - lw / 2, cb->w + lw, cb->h + lw, NULL, INK, lw, NULL);
    float x = cb->x + cb->w;
    for (int i = 0; i < t->n; i++) {
        float y = cb->y + (float)(1 - scale_t(cb->s, t->v[i])) * cb->h;
        line(L, x, y, x + PT(L, TICK_LEN_PT), y, INK, lw);
        text_vc(L, x + PT(L, TICK_LEN_PT + TICK_PAD_PT), y, TICK_PT, AL_START, INK, "tick", t->label[i]);
    }
    if (cb->label) {
        float lx = x + PT(L, TICK_LEN_PT + TICK_PAD_PT) + ticks_width(L, t, TICK_PT) + PT(L, 6) +
                   lineh(L, AXIS_PT) / 2;
        text_up(L, lx, cb->y + cb->h / 2, AXIS_PT, AL_MIDDLE, INK, "axis", cb->label);
    }
}

/* Colour-bar ticks that fit a bar h px tall. */
static void cbar_ticks(lay *L, const scale *s, float h, ticks *t)
{
    make_ticks(L, s, h >= PT(L, 110) ? 5 : h >= PT(L, 50) ? 2 : 1, t);
}

/* A small filled square and its name; returns the x after it. */
static float legend_swatch(lay *L, float x, float cy, const uint8_t *rgb, const char *name)
{
    float sz = PT(L, 8);
    rect(L, x, cy - sz / 2, sz, sz, rgb, INK, PT(L, 0.5f), NULL);
    text_vc(L, x + sz + PT(L, 3), cy, TICK_PT, AL_START, INK, "legend", name);
    return x + sz + PT(L, 3) + tw(L, name, TICK_PT) + PT(L, 10);
}

/* ============================================================= heatmap */

/* Cell size (points) for a heatmap of n cells a side. */
static float heat_cell_pt(const as_fig_heat *h, int n)
{
    /* Short contexts get larger cells, so a panel is never smaller than its labels. */
    if (h->n_mats == 1 && h->grid_rows * h->grid_cols == 1)
        return fmaxf(3.0f, fminf(fmaxf(22.0f, 110.0f / (float)n), 400.0f / (float)n));
    float panel = fmaxf(48.0f, fminf(170.0f, 760.0f / (float)h->grid_cols - 8.0f));
    return fminf(fmaxf(22.0f, 60.0f / (float)n), panel / (float)n);
}

/* Token labels elided to maxw; a NULL entry where it is not drawn. */
typedef struct labels {
    char **s;
    int n;
    float size_pt, maxw; /* font size; widest label drawn (px) */
    int stride;
} labels;

static void labels_free(labels *lb)
{
    for (int i = 0; lb->s && i < lb->n; i++)
        free(lb->s[i]);
    free(lb->s);
    lb->s = NULL;
}

static int labels_make(lay *L, labels *lb, const char *const *src, int n, float size_pt, int stride,
                       float maxw_pt)
{
    memset(lb, 0, sizeof *lb);
    if (!src)
        return AS_OK;
    lb->s = calloc((size_t)n, sizeof *lb->s);
    if (!lb->s)
        return AS_ERR;
    lb->n = n;
    lb->size_pt = size_pt;
    lb->stride = stride;
    for (int i = 0; i < n; i += stride) {
        char buf[512];
        elide(L->c, src[i] ? src[i] : "", PT(L, size_pt), PT(L, maxw_pt), buf, sizeof buf);
        if (!(lb->s[i] = strdup(buf)))
            return AS_ERR;
        lb->maxw = fmaxf(lb->maxw, tw(L, buf, size_pt));
    }
    return AS_OK;
}

static void heat_rgb(const as_fig_style *st, const scale *s, float v, bool masked, uint8_t *rgb)
{
    if (masked)
        as_masked_rgb(st->cmap, rgb);
    else if (isnan(v))
        memcpy(rgb, NANC, 3);
    else
        as_colormap(st->cmap, (float)scale_t(s, v), rgb);
}

int as_fig_heatmap(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const char *title,
                   const as_fig_heat *h, as_error *err)
{
    lay L;
    if (h->rows < 1 || h->cols < 1 || h->n_mats < 1 || h->grid_rows < 1 || h->grid_cols < 1 ||
        h->grid_rows * h->grid_cols < h->n_mats)
        return as_error_set(err, "heatmap: nothing to draw (%d x %d cells, %d matrices in %d x %d panels)",
                            h->rows, h->cols, h->n_mats, h->grid_rows, h->grid_cols);
    if (lay_begin(&L, out, ctx, st, title, err))
        return AS_ERR;
    bool single = h->n_mats == 1 && h->grid_rows * h->grid_cols == 1;
    int GR = h->grid_rows, GC = h->grid_cols, R = h->rows, C = h->cols;
    int cell = (int)lrintf(PT(&L, heat_cell_pt(h, R > C ? R : C)));
    cell = cell < 1 ? 1 : cell;
    float cell_pt = (float)cell / L.P;

    /* Labels as large as the cells allow; a single head keeps every k-th
     * label at a readable size, a grid drops them for its headers. */
    float lab_pt = fminf(8.0f, 0.8f * cell_pt);
    int stride = 1;
    if (lab_pt < 5.0f) {
        lab_pt = 5.0f;
        stride = single ? (int)ceilf(1.2f * 5.0f / cell_pt) : 0;
    }
    labels rl = {0}, cl = {0};
    float maxw_pt = single ? 90.0f : 60.0f;
    if (stride > 0 && (labels_make(&L, &rl, h->row_labels, R, lab_pt, stride, maxw_pt) ||
                       labels_make(&L, &cl, h->col_labels, C, lab_pt, stride, maxw_pt))) {
        labels_free(&rl), labels_free(&cl);
        as_figure_free(L.f);
        return as_error_set(err, "out of memory");
    }

    float tick = PT(&L, TICK_LEN_PT), pad = PT(&L, TICK_PAD_PT), lw = PT(&L, single ? FRAME_PT : 0.6f);
    float head_h = lineh(&L, HEAD_PT);
    float rowh_w = 0;
    for (int r = 0; h->grid_row_names && r < GR; r++)
        rowh_w = fmaxf(rowh_w, tw(&L, h->grid_row_names[r], HEAD_PT));

    /* Horizontal: axis name | row headers | row labels | panels | colour bar. */
    float x = PT(&L, MARGIN_PT);
    if (h->row_axis)
        x += lineh(&L, AXIS_PT) + PT(&L, 4);
    if (rowh_w > 0)
        x += rowh_w + PT(&L, 8);
    if (rl.s)
        x += rl.maxw + pad + tick;
    int gx0 = (int)ceilf(x);
    int pw = C * cell, ph = R * cell;
    int gap_x = (int)lrintf(PT(&L, single ? 0 : 8));
    int grid_w = GC * pw + (GC - 1) * gap_x;

    /* Vertical: title | column headers | panel titles | panels | column labels | axis name. */
    float y = title_height(&L, title, NULL);
    if (h->grid_col_names)
        y += head_h + PT(&L, 2);
    float ptitle = h->mat_titles ? head_h + PT(&L, 2) : 0;
    int gap_y = (int)lrintf(PT(&L, single ? 0 : 8) + ptitle);
    int row_pitch = ph + gap_y;
    int grid_h = GR * ph + (GR - 1) * gap_y;
    /* A grid shorter than its rotated axis name leaves room for it. */
    float spill = h->row_axis ? fmaxf(0, (tw(&L, h->row_axis, AXIS_PT) - (float)grid_h) / 2 + PT(&L, 4)) : 0;
    y += spill;
    int gy0 = (int)ceilf(y);
    float bottom = (float)(gy0 + (int)ptitle + grid_h);
    if (cl.s)
        bottom += tick + pad + cl.maxw;
    float axis_y = bottom + PT(&L, 4) + caph(&L, AXIS_PT);
    if (h->col_axis)
        bottom = axis_y + PT(&L, 4);
    bottom = fmaxf(bottom, (float)(gy0 + (int)ptitle + grid_h) + spill);

    /* The colour scale: fixed, so heads compare. */
    scale s = h->vmax > h->vmin ? (scale){h->vmin, h->vmax, false}
              : st->log_scale   ? (scale){AS_FIG_LOG_MIN, 1, true}
                                : (scale){0, 1, false};
    cbar cb = {(float)(gx0 + grid_w) + PT(&L, 14), (float)gy0 + ptitle, PT(&L, 10), 0, &s, h->cbar_label};
    cb.h = single ? fmaxf((float)ph, PT(&L, 72)) : fminf((float)grid_h, fmaxf((float)ph, PT(&L, 260)));
    /* A bar at least as tall as its label, which is centred on it (a short
     * table's bar would otherwise leave the label poking into the title). */
    if (h->cbar_label)
        cb.h = fmaxf(cb.h, tw(&L, h->cbar_label, AXIS_PT) + PT(&L, 8));
    ticks ct;
    cbar_ticks(&L, &s, cb.h, &ct);
    float W = cb.x + cbar_width(&L, &ct, h->cbar_label) + PT(&L, MARGIN_PT);

    bool any_masked = false, any_nan = false;
    for (int m = 0; m < h->n_mats; m++) {
        int gr = m / GC, gc = m % GC;
        int px = gx0 + gc * (pw + gap_x), py = gy0 + (int)ptitle + gr * row_pitch;
        prim *p = add(L.f, PR_CELLS);
        if (!p)
            break;
        p->x = (float)px, p->y = (float)py, p->w = p->h = (float)cell;
        p->rows = R, p->cols = C, p->mat = m;
        if (!(p->rgb = malloc((size_t)R * (size_t)C * 3))) {
            L.f->oom = true;
            break;
        }
        for (int i = 0; i < R * C; i++) {
            bool mk = h->mats[m].masked && h->mats[m].masked[i];
            float v = h->mats[m].v[i];
            any_masked |= mk;
            any_nan |= !mk && isnan(v);
            heat_rgb(st, &s, v, mk, p->rgb + (size_t)i * 3);
        }
        rect(&L, (float)px - lw / 2, (float)py - lw / 2, (float)pw + lw, (float)ph + lw, NULL, INK, lw, NULL);
        if (h->mat_titles)
            text(&L, (float)px + (float)pw / 2, (float)py - PT(&L, 4), HEAD_PT, false, AL_MIDDLE, INK, "header",
                 h->mat_titles[m]);
        bool left = gc == 0, below = m + GC >= h->n_mats;
        for (int r = 0; left && rl.s && r < R; r += rl.stride) {
            float cy = (float)py + ((float)r + 0.5f) * (float)cell;
            line(&L, (float)px - lw - tick, cy, (float)px - lw, cy, INK, lw);
            text_vc(&L, (float)px - lw - tick - pad, cy, rl.size_pt, AL_END, INK, "label", rl.s[r]);
        }
        for (int k = 0; below && cl.s && k < C; k += cl.stride) {
            float cx = (float)px + ((float)k + 0.5f) * (float)cell, by = (float)(py + ph) + lw;
            line(&L, cx, by, cx, by + tick, INK, lw);
            text_up(&L, cx, by + tick + pad, cl.size_pt, AL_END, INK, "label", cl.s[k]);
        }
    }
    for (int r = 0; h->grid_row_names && r < GR; r++) {
        float cy = (float)(gy0 + (int)ptitle + r * row_pitch) + (float)ph / 2;
        float rx = (float)gx0 - (rl.s ? rl.maxw + pad + tick : 0) - PT(&L, 8);
        text_vc(&L, rx, cy, HEAD_PT, AL_END, INK, "header", h->grid_row_names[r]);
    }
    for (int c = 0; h->grid_col_names && c < GC; c++)
        text(&L, (float)(gx0 + c * (pw + gap_x)) + (float)pw / 2, (float)gy0 - PT(&L, 4), HEAD_PT, false,
             AL_MIDDLE, INK, "header", h->grid_col_names[c]);
    if (h->row_axis)
        text_up(&L, PT(&L, MARGIN_PT) + lineh(&L, AXIS_PT) / 2, (float)gy0 + ptitle + (float)grid_h / 2, AXIS_PT,
                AL_MIDDLE, INK, "axis", h->row_axis);
    if (h->col_axis)
        text(&L, (float)gx0 + (float)grid_w / 2, axis_y, AXIS_PT, false, AL_MIDDLE, INK, "axis", h->col_axis);
    draw_cbar(&L, &cb, &ct);
    float ly = cb.y + cb.h + PT(&L, 14), lx = cb.x;
    if (any_masked) {
        uint8_t mrgb[3];
        as_masked_rgb(st->cmap, mrgb);
        legend_swatch(&L, lx, ly, mrgb, "masked");
        ly += PT(&L, 13);
    }
    if (any_nan) {
        legend_swatch(&L, lx, ly, NANC, "NaN");
        ly += PT(&L, 13);
    }
    W = fmaxf(W, lx + PT(&L, 8 + 3 + 10 + MARGIN_PT) + tw(&L, "masked", TICK_PT));
    W = fit_title(&L, W, title);
    float H = fmaxf(fmaxf(bottom, ly), cb.y + cb.h + PT(&L, 6)) + PT(&L, MARGIN_PT);
    draw_title(&L, W, title, NULL);
    labels_free(&rl), labels_free(&cl);
    return lay_end(&L, W, H, out, err);
}

/* ======================================================== token charts */

/* A categorical x axis of n tokens with labels, shared by stacked panels. */
typedef struct xaxis {
    float x0, step; /* px: left edge of the plot, width per token */
    labels lb;
} xaxis;

static float xaxis_center(const xaxis *xa, int i) { return xa->x0 + ((float)i + 0.5f) * xa->step; }

static int xaxis_make(lay *L, xaxis *xa, const char *const *src, int n, float min_w_pt)
{
    /* Up to 24 pt per token, and at least min_w_pt for the whole axis. */
    float step_pt = fmaxf(min_w_pt / (float)n, fminf(24.0f, 360.0f / (float)n));
    xa->step = PT(L, step_pt);
    float lab_pt = fminf(8.0f, 0.8f * step_pt);
    int stride = 1;
    if (lab_pt < 5.0f) {
        lab_pt = 5.0f;
        stride = (int)ceilf(1.2f * 5.0f / step_pt);
    }
    return labels_make(L, &xa->lb, src, n, lab_pt, stride, 80.0f);
}

/* A panel: a frame, y ticks with light grid lines, values mapped through s. */
typedef struct panel {
    float x, y, w, h;
    scale s;
    ticks t;
} panel;

static float panel_y(const panel *p, double v) { return p->y + (float)(1 - scale_t(&p->s, v)) * p->h; }

static void draw_panel(lay *L, const panel *p, const char *header)
{
    float lw = PT(L, FRAME_PT);
    for (int i = 0; i < p->t.n; i++) {
        float y = panel_y(p, p->t.v[i]);
        if (y < p->y - 0.5f || y > p->y + p->h + 0.5f)
            continue;
        line(L, p->x, y, p->x + p->w, y, GRIDC, PT(L, 0.6f));
        line(L, p->x - PT(L, TICK_LEN_PT), y, p->x, y, INK, lw);
        text_vc(L, p->x - PT(L, TICK_LEN_PT + TICK_PAD_PT), y, TICK_PT, AL_END, INK, "tick", p->t.label[i]);
    }
    rect(L, p->x, p->y, p->w, p->h, NULL, INK, lw, NULL);
    if (header)
        text(L, p->x, p->y - PT(L, 4), AXIS_PT, false, AL_START, INK, "header", header);
}

static void draw_xlabels(lay *L, const xaxis *xa, float y)
{
    float lw = PT(L, FRAME_PT);
    for (int i = 0; xa->lb.s && i < xa->lb.n; i += xa->lb.stride) {
        float cx = xaxis_center(xa, i);
        line(L, cx, y, cx, y + PT(L, TICK_LEN_PT), INK, lw);
        text_up(L, cx, y + PT(L, TICK_LEN_PT + TICK_PAD_PT), xa->lb.size_pt, AL_END, INK, "label", xa->lb.s[i]);
    }
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

/* Series swatches in a row: a line with a marker, then the name. Returns the x after them. */
static float draw_legend(lay *L, float x, float cy, int n, const char *const *names, const uint8_t (*cols)[3])
{
    for (int i = 0; i < n; i++) {
        float sz = PT(L, 14);
        line(L, x, cy, x + sz, cy, cols[i], PT(L, 1.5f));
        mark(L, x + sz / 2, cy, PT(L, 2.2f), cols[i], 1);
        text_vc(L, x + sz + PT(L, 4), cy, TICK_PT, AL_START, INK, "legend", names[i]);
        x += sz + PT(L, 4) + tw(L, names[i], TICK_PT) + PT(L, 14);
    }
    return x;
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
        snprintf(o->text[o->n], sizeof o->text[0], "dim %d: %d/%d tokens", best, count[best], nm->n);
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
    float mr = fminf(PT(L, 2.2f), xa->step * 0.3f), lw = PT(L, 1.5f);
    for (int sr = 0; sr < nm->n_series; sr++) {
        int m = 0;
        for (int i = 0; i <= nm->n; i++) {
            double v = i < nm->n ? stat_value(&nm->series[sr].stat[i], which) : NAN;
            if (isfinite(v)) {
                pts[2 * m] = xaxis_center(xa, i), pts[2 * m + 1] = panel_y(p, v);
                m++;
                continue;
            }
            polyline(L, pts, m, SERIES[sr], lw);
            for (int j = 0; j < m; j++)
                mark(L, pts[2 * j], pts[2 * j + 1], mr, SERIES[sr], 1);
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
        line(L, p->x, y, p->x + p->w, y, (const uint8_t[]){0xBB, 0xBB, 0xBB}, PT(L, 0.6f));
    }
    float rmax = fminf(PT(L, 5), xa->step * 0.45f);
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
                mark(L, cx, panel_y(p, d), fmaxf(r, PT(L, 0.8f)), SERIES[sr], 0.75f);
            }
    int order[MAX_NAMED];
    float y[MAX_NAMED], gap = lineh(L, TICK_PT);
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
        text_vc(L, p->x + p->w + PT(L, 6), y[i], TICK_PT, AL_START, INK, "legend", o->text[order[i]]);
}

int as_fig_norm_chart(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const char *title,
                      const as_fig_norms *nm, as_error *err)
{
    lay L;
    if (nm->n < 1 || nm->n_series < 1 || nm->n_series > 2 || nm->d_model < 1)
        return as_error_set(err, "norm chart: no tokens to draw");
    if (lay_begin(&L, out, ctx, st, title, err))
        return AS_ERR;
    int n = nm->n;
    xaxis xa = {0};
    outliers ol;
    if (xaxis_make(&L, &xa, nm->labels, n, 320.0f) || find_outliers(nm, &ol)) {
        labels_free(&xa.lb);
        as_figure_free(L.f);
        return as_error_set(err, "out of memory");
    }
    /* Scales first: the widest tick label sets the left margin. */
    enum { NP = 4 };
    panel pn[NP];
    const char *heads[NP] = {"mean of the input", nm->rms ? "RMS of the input" : "std of the input",
                             "max |x| of the input",
                             "largest-magnitude input dimensions (marker area \xE2\x88\x9D |x|)"};
    const float hts[NP] = {80, 80, 80, 120};
    for (int k = 0; k < 3; k++) {
        double lo = INFINITY, hi = -INFINITY, minpos = INFINITY;
        for (int sr = 0; sr < nm->n_series; sr++)
            for (int i = 0; i < n; i++) {
                double v = stat_value(&nm->series[sr].stat[i], k);
                if (!isfinite(v))
                    continue;
                lo = fmin(lo, v), hi = fmax(hi, v);
                if (v > 0)
                    minpos = fmin(minpos, v);
            }
        /* The spread and the magnitude are positive: they may go on a log axis. */
        pn[k].s = st->log_scale && k > 0 ? scale_log(minpos, hi) : scale_linear(lo, hi, true);
        make_ticks(&L, &pn[k].s, 4, &pn[k].t);
    }
    pn[3].s = scale_linear(-0.5, nm->d_model - 0.5, false);
    make_ticks(&L, &pn[3].s, 4, &pn[3].t);
    float tickw = 0, named_w = 0;
    for (int k = 0; k < NP; k++)
        tickw = fmaxf(tickw, ticks_width(&L, &pn[k].t, TICK_PT));
    for (int i = 0; i < ol.n; i++)
        named_w = fmaxf(named_w, tw(&L, ol.text[i], TICK_PT) + PT(&L, 10));
    xa.x0 = ceilf(PT(&L, MARGIN_PT) + tickw + PT(&L, TICK_LEN_PT + TICK_PAD_PT + 4));
    float plot_w = xa.step * (float)n;

    /* Title, legend, then the panels stacked on the token axis. */
    float legend_y = title_height(&L, title, NULL) + PT(&L, 4), y = legend_y + PT(&L, 10);
    for (int k = 0; k < NP; k++) {
        y += lineh(&L, AXIS_PT) + PT(&L, 2);
        pn[k].x = xa.x0, pn[k].y = roundf(y), pn[k].w = plot_w, pn[k].h = roundf(PT(&L, hts[k]));
        y = pn[k].y + pn[k].h + PT(&L, 6);
    }
    float xl_y = pn[NP - 1].y + pn[NP - 1].h;
    float H = xl_y + PT(&L, TICK_LEN_PT + TICK_PAD_PT) + xa.lb.maxw + PT(&L, 4) + lineh(&L, AXIS_PT) +
              PT(&L, MARGIN_PT);
    const char *names[2] = {nm->series[0].name, nm->n_series > 1 ? nm->series[1].name : NULL};
    float W = fmaxf(xa.x0 + plot_w + named_w, draw_legend(&L, xa.x0, legend_y, nm->n_series, names, SERIES)) +
              PT(&L, MARGIN_PT);

    for (int k = 0; k < NP; k++) {
        draw_panel(&L, &pn[k], heads[k]);
        if (k < 3 && draw_stat(&L, &xa, &pn[k], nm, k))
            L.f->oom = true;
    }
    draw_dims(&L, &xa, &pn[3], nm, &ol);
    draw_xlabels(&L, &xa, xl_y);
    text(&L, xa.x0 + plot_w / 2, H - PT(&L, MARGIN_PT) - PT(&L, 2), AXIS_PT, false, AL_MIDDLE, INK, "axis",
         "token");
    W = fit_title(&L, W, title);
    draw_title(&L, W, title, NULL);
    labels_free(&xa.lb);
    return lay_end(&L, W, H, out, err);
}

/* ======================================================== probabilities */

int as_fig_prob_bars(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const char *title,
                     const as_fig_probs *pr, as_error *err)
{
    lay L;
    if (pr->k < 1)
        return as_error_set(err, "probability chart: no tokens to draw");
    if (lay_begin(&L, out, ctx, st, title, err))
        return AS_ERR;
    int k = pr->k;
    labels lb;
    if (labels_make(&L, &lb, pr->labels, k, 9.0f, 1, 110.0f)) {
        labels_free(&lb);
        as_figure_free(L.f);
        return as_error_set(err, "out of memory");
    }
    double pmax = 0, pmin = 1;
    for (int i = 0; i < k; i++)
        if (isfinite(pr->p[i])) {
            pmax = fmax(pmax, pr->p[i]);
            if (pr->p[i] > 0)
                pmin = fmin(pmin, pr->p[i]);
        }
    panel pn;
    if (st->log_scale) {
        pn.s = scale_log(pmin, 1);
    } else {
        double step = nice_step(pmax > 0 ? pmax : 1, 5);
        pn.s = (scale){0, fmin(1, ceil(pmax * 1.12 / step - 1e-9) * step), false};
        if (pn.s.hi <= 0)
            pn.s.hi = 1;
    }
    make_ticks(&L, &pn.s, 5, &pn.t);

    float row = roundf(PT(&L, 16));
    pn.x = ceilf(PT(&L, MARGIN_PT) + lb.maxw + PT(&L, TICK_LEN_PT + TICK_PAD_PT));
    pn.w = roundf(PT(&L, 300));
    pn.y = roundf(title_height(&L, title, pr->subtitle));
    pn.h = row * (float)k;
    float valw = tw(&L, "0.0000", TICK_PT) + PT(&L, 4);
    float W = pn.x + pn.w + valw + PT(&L, MARGIN_PT);
    float need = fmaxf(title_width(&L, title), tw(&L, pr->subtitle ? pr->subtitle : "", TICK_PT) + 2 * PT(&L, MARGIN_PT));
    float lw = PT(&L, FRAME_PT);
    /* Vertical grid lines at the value ticks. */
    for (int i = 0; i < pn.t.n; i++) {
        float x = pn.x + (float)scale_t(&pn.s, pn.t.v[i]) * pn.w;
        line(&L, x, pn.y, x, pn.y + pn.h, GRIDC, PT(&L, 0.6f));
        line(&L, x, pn.y + pn.h, x, pn.y + pn.h + PT(&L, TICK_LEN_PT), INK, lw);
        text(&L, x, pn.y + pn.h + PT(&L, TICK_LEN_PT + TICK_PAD_PT) + caph(&L, TICK_PT), TICK_PT, false,
             AL_MIDDLE, INK, "tick", pn.t.label[i]);
    }
    for (int i = 0; i < k; i++) {
        float cy = pn.y + ((float)i + 0.5f) * row;
        float len = isfinite(pr->p[i]) ? (float)scale_t(&pn.s, pr->p[i]) * pn.w : 0;
        rect(&L, pn.x, cy - row * 0.36f, len, row * 0.72f, SERIES[0], NULL, 0, "bar");
        line(&L, pn.x - PT(&L, TICK_LEN_PT), cy, pn.x, cy, INK, lw);
        text_vc(&L, pn.x - PT(&L, TICK_LEN_PT + TICK_PAD_PT), cy, lb.size_pt, AL_END, INK, "label", lb.s[i]);
        char v[32];
        snprintf(v, sizeof v, pr->p[i] >= 0.001 ? "%.3f" : "%.1e", pr->p[i]);
        text_vc(&L, pn.x + len + PT(&L, 3), cy, TICK_PT, AL_START, GREYTXT, "value", v);
    }
    rect(&L, pn.x, pn.y, pn.w, pn.h, NULL, INK, lw, NULL);
    float axis_y = pn.y + pn.h + PT(&L, TICK_LEN_PT + TICK_PAD_PT) + lineh(&L, TICK_PT) + PT(&L, 4) +
                   caph(&L, AXIS_PT);
    text(&L, pn.x + pn.w / 2, axis_y, AXIS_PT, false, AL_MIDDLE, INK, "axis", "probability");
    if (need > W) {
        shift_all(L.f, (need - W) / 2);
        W = need;
    }
    draw_title(&L, W, title, pr->subtitle);
    labels_free(&lb);
    return lay_end(&L, W, axis_y + PT(&L, 4 + MARGIN_PT), out, err);
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
    bool cell_text;       /* cells wide enough to hold their token */
    scale ps;             /* the colour scale of the table */
} trace_geom;

#define TRACE_CELL_PT 7.0f

/* Columns wide enough for a short token in each cell, unless there are
 * so many steps that the cells hold colour only. */
static void trace_columns(lay *L, const as_fig_trace *tr, trace_geom *g)
{
    int S = tr->steps, K = tr->k;
    float need = 0;
    for (int i = 0; i < S * K; i++)
        need = fmaxf(need, tw(L, tr->alt_labels[i] ? tr->alt_labels[i] : "", TRACE_CELL_PT));
    for (int i = 0; i < S; i++)
        need = fmaxf(need, tw(L, tr->chosen[i] ? tr->chosen[i] : "", TRACE_CELL_PT));
    float col_pt = fmaxf(30.0f, fminf(56.0f, need / L->P + 6.0f));
    col_pt = fmaxf(col_pt, fminf(120.0f, 240.0f / (float)S)); /* a short trace still reads as a chart */
    g->cell_text = (float)S * col_pt <= 1440.0f;
    if (!g->cell_text)
        col_pt = fmaxf(4.0f, 1440.0f / (float)S);
    g->colw = roundf(PT(L, col_pt));
    g->rowh = roundf(PT(L, 14));
}

/* The line chart: the chosen token's probability, and the top one's behind it. */
static int draw_trace_chart(lay *L, const as_fig_trace *tr, const trace_geom *g, const panel *pa)
{
    static const uint8_t GREY[3] = {0x99, 0x99, 0x99};
    int S = tr->steps;
    float *pts = malloc((size_t)S * 2 * sizeof *pts);
    if (!pts)
        return AS_ERR;
    draw_panel(L, pa, NULL);
    text_up(L, pa->x - PT(L, TICK_LEN_PT + TICK_PAD_PT + 4) - ticks_width(L, &pa->t, TICK_PT) - lineh(L, AXIS_PT) / 2,
            pa->y + pa->h / 2, AXIS_PT, AL_MIDDLE, INK, "axis", "probability");
    float mr = fminf(PT(L, 2.5f), g->colw * 0.3f);
    for (int top = 1; top >= 0; top--) {
        for (int i = 0; i < S; i++) {
            double v = top ? tr->alt_p[(size_t)i * (size_t)tr->k] : tr->chosen_p[i];
            pts[2 * i] = pa->x + ((float)i + 0.5f) * g->colw, pts[2 * i + 1] = panel_y(pa, v);
        }
        polyline(L, pts, S, top ? GREY : SERIES[0], PT(L, top ? 1.0f : 1.5f));
        for (int i = 0; i < S; i++)
            mark(L, pts[2 * i], pts[2 * i + 1], top ? mr * 0.7f : mr, top ? GREY : SERIES[0], 1);
    }
    free(pts);
    return AS_OK;
}

/* The table: a row per rank, then the chosen token's row; cells coloured
 * by probability, the chosen candidate outlined. */
static void draw_trace_table(lay *L, const as_fig_trace *tr, const trace_geom *g)
{
    int S = tr->steps, K = tr->k;
    float x0 = g->x0, colw = g->colw, rowh = g->rowh, ty = g->ty, lw = PT(L, FRAME_PT);
    for (int r = 0; r <= K; r++) {
        float ry = ty + (float)r * rowh + (r == K ? PT(L, 3) : 0);
        char name[16] = "chosen";
        if (r < K)
            snprintf(name, sizeof name, "%d", r + 1);
        text_vc(L, x0 - PT(L, TICK_PAD_PT + 2), ry + rowh / 2, TICK_PT, AL_END, INK, "tick", name);
        for (int i = 0; i < S; i++) {
            float cx = x0 + (float)i * colw;
            float p = r < K ? tr->alt_p[(size_t)i * (size_t)K + (size_t)r] : tr->chosen_p[i];
            const char *lab = r < K ? tr->alt_labels[(size_t)i * (size_t)K + (size_t)r] : tr->chosen[i];
            uint8_t rgb[3];
            heat_rgb(L->st, &g->ps, p, false, rgb);
            rect(L, cx, ry, colw, rowh, rgb, NULL, 0, "cell");
            if (g->cell_text && lab) {
                char buf[256];
                elide(L->c, lab, PT(L, TRACE_CELL_PT), colw - PT(L, 4), buf, sizeof buf);
                text_vc(L, cx + colw / 2, ry + rowh / 2, TRACE_CELL_PT, AL_MIDDLE, contrast(rgb), "label", buf);
            }
        }
    }
    float plot_w = colw * (float)S, hw = PT(L, 1.6f);
    rect(L, x0, ty, plot_w, rowh * (float)K, NULL, INK, lw, NULL);
    rect(L, x0, ty + rowh * (float)K + PT(L, 3), plot_w, rowh, NULL, INK, lw, NULL);
    for (int i = 0; i < S; i++)
        if (tr->chosen_rank[i] >= 1 && tr->chosen_rank[i] <= K)
            rect(L, x0 + (float)i * colw + hw / 2, ty + (float)(tr->chosen_rank[i] - 1) * rowh + hw / 2, colw - hw,
                 rowh - hw, NULL, HILITE, hw, NULL);
    /* Under the table, the context position of each generated token. */
    float by = ty + rowh * (float)(K + 1) + PT(L, 3);
    int every = 1;
    while ((float)every * colw < PT(L, 18))
        every++;
    for (int i = 0; i < S; i += every) {
        char num[16];
        snprintf(num, sizeof num, "%d", tr->positions[i]);
        float cx = x0 + ((float)i + 0.5f) * colw;
        line(L, cx, by, cx, by + PT(L, TICK_LEN_PT), INK, lw);
        text(L, cx, by + PT(L, TICK_LEN_PT + TICK_PAD_PT) + caph(L, TICK_PT), TICK_PT, false, AL_MIDDLE, INK,
             "tick", num);
    }
}

int as_fig_prob_trace(as_figure **out, as_fig_ctx *ctx, const as_fig_style *st, const char *title,
                      const as_fig_trace *tr, as_error *err)
{
    lay L;
    if (tr->steps < 1 || tr->k < 1)
        return as_error_set(err, "probability trace: no generated tokens to draw");
    if (lay_begin(&L, out, ctx, st, title, err))
        return AS_ERR;
    static const char table_head[] = "top candidates at each step (the chosen one outlined)";
    static const char *const names[2] = {"chosen token", "most likely token"};
    static const uint8_t cols[2][3] = {{0x1F, 0x77, 0xB4}, {0x99, 0x99, 0x99}};
    int S = tr->steps, K = tr->k;
    trace_geom g;
    trace_columns(&L, tr, &g);
    g.ps = st->log_scale ? (scale){AS_FIG_LOG_MIN, 1, true} : (scale){0, 1, false};
    panel pa;
    pa.s = st->log_scale ? g.ps : scale_linear(0, 1, true);
    make_ticks(&L, &pa.s, 5, &pa.t);
    float rowlab_w = fmaxf(tw(&L, "chosen", TICK_PT), ticks_width(&L, &pa.t, TICK_PT));
    g.x0 = ceilf(PT(&L, MARGIN_PT) + lineh(&L, AXIS_PT) + PT(&L, 4) + rowlab_w + PT(&L, TICK_LEN_PT + TICK_PAD_PT));
    float plot_w = g.colw * (float)S;

    /* Title, legend, chart, table (with its colour bar), axis name. */
    float legend_y = title_height(&L, title, NULL) + PT(&L, 4);
    pa.x = g.x0, pa.y = roundf(legend_y + PT(&L, 12)), pa.w = plot_w, pa.h = roundf(PT(&L, 110));
    g.ty = roundf(pa.y + pa.h + PT(&L, 12) + lineh(&L, AXIS_PT));
    float th = g.rowh * (float)(K + 1) + PT(&L, 3);
    ticks ct;
    cbar cb = {g.x0 + plot_w + PT(&L, 14), g.ty, PT(&L, 10), fmaxf(th, PT(&L, 60)), &g.ps, "probability"};
    cbar_ticks(&L, &g.ps, cb.h, &ct);
    float axis_y = g.ty + th + PT(&L, TICK_LEN_PT + TICK_PAD_PT) + lineh(&L, TICK_PT) + PT(&L, 4) + caph(&L, AXIS_PT);
    float W = fmaxf(cb.x + cbar_width(&L, &ct, cb.label), g.x0 + tw(&L, table_head, AXIS_PT)) + PT(&L, MARGIN_PT);
    float H = fmaxf(axis_y, cb.y + cb.h) + PT(&L, 4 + MARGIN_PT);

    draw_legend(&L, g.x0, legend_y, 2, names, cols);
    if (draw_trace_chart(&L, tr, &g, &pa))
        L.f->oom = true;
    text(&L, g.x0, g.ty - PT(&L, 4), AXIS_PT, false, AL_START, INK, "header", table_head);
    draw_trace_table(&L, tr, &g);
    draw_cbar(&L, &cb, &ct);
    text(&L, g.x0 + plot_w / 2, axis_y, AXIS_PT, false, AL_MIDDLE, INK, "axis", "position of the generated token");
    W = fit_title(&L, W, title);
    draw_title(&L, W, title, NULL);
    return lay_end(&L, W, H, out, err);
}

/* ============================================================== raster */

typedef struct canvas {
    int w, h;
    uint8_t *px;
} canvas;

static void blend(canvas *cv, int x, int y, const uint8_t *c, float a)
{
    if (x < 0 || y < 0 || x >= cv->w || y >= cv->h || a <= 0)
        return;
    uint8_t *d = cv->px + ((size_t)y * (size_t)cv->w + (size_t)x) * 3;
    if (a >= 1) {
        memcpy(d, c, 3);
        return;
    }
    for (int i = 0; i < 3; i++)
        d[i] = (uint8_t)lrintf((float)d[i] + ((float)c[i] - (float)d[i]) * a);
}

/* An axis-aligned box with exact coverage at fractional edges. */
static void fill_box(canvas *cv, float x0, float y0, float x1, float y1, const uint8_t *c, float alpha)
{
    if (x1 <= x0 || y1 <= y0)
        return;
    int ix0 = (int)floorf(x0), ix1 = (int)ceilf(x1), iy0 = (int)floorf(y0), iy1 = (int)ceilf(y1);
    ix0 = ix0 < 0 ? 0 : ix0, iy0 = iy0 < 0 ? 0 : iy0;
    ix1 = ix1 > cv->w ? cv->w : ix1, iy1 = iy1 > cv->h ? cv->h : iy1;
    for (int y = iy0; y < iy1; y++) {
        float cy = fminf(y1, (float)y + 1) - fmaxf(y0, (float)y);
        for (int x = ix0; x < ix1; x++) {
            float cx = fminf(x1, (float)x + 1) - fmaxf(x0, (float)x);
            blend(cv, x, y, c, alpha * cx * cy);
        }
    }
}

static void draw_rect(canvas *cv, const prim *p)
{
    if (p->filled)
        fill_box(cv, p->x, p->y, p->x + p->w, p->y + p->h, p->fill, p->alpha);
    if (!p->stroked)
        return;
    float h = p->lw / 2, x0 = p->x, y0 = p->y, x1 = p->x + p->w, y1 = p->y + p->h;
    fill_box(cv, x0 - h, y0 - h, x1 + h, y0 + h, p->stroke, 1);
    fill_box(cv, x0 - h, y1 - h, x1 + h, y1 + h, p->stroke, 1);
    fill_box(cv, x0 - h, y0 + h, x0 + h, y1 - h, p->stroke, 1);
    fill_box(cv, x1 - h, y0 + h, x1 + h, y1 - h, p->stroke, 1);
}

static void draw_cells(canvas *cv, const prim *p)
{
    for (int r = 0; r < p->rows; r++) {
        int y0 = (int)lrintf(p->y + (float)r * p->h), y1 = (int)lrintf(p->y + (float)(r + 1) * p->h);
        for (int c = 0; c < p->cols; c++) {
            int x0 = (int)lrintf(p->x + (float)c * p->w), x1 = (int)lrintf(p->x + (float)(c + 1) * p->w);
            const uint8_t *rgb = p->rgb + ((size_t)r * (size_t)p->cols + (size_t)c) * 3;
            for (int y = y0; y < y1; y++)
                for (int x = x0; x < x1; x++)
                    blend(cv, x, y, rgb, 1);
        }
    }
}

static void draw_grad(canvas *cv, const prim *p)
{
    int y0 = (int)lrintf(p->y), y1 = (int)lrintf(p->y + p->h);
    int x0 = (int)lrintf(p->x), x1 = (int)lrintf(p->x + p->w);
    for (int y = y0; y < y1; y++) {
        uint8_t rgb[3];
        as_colormap(p->cmap, 1.0f - ((float)y + 0.5f - p->y) / p->h, rgb);
        for (int x = x0; x < x1; x++)
            blend(cv, x, y, rgb, 1);
    }
}

static float seg_dist(float px, float py, float ax, float ay, float bx, float by)
{
    float dx = bx - ax, dy = by - ay, l2 = dx * dx + dy * dy;
    float t = l2 > 0 ? ((px - ax) * dx + (py - ay) * dy) / l2 : 0;
    t = t < 0 ? 0 : t > 1 ? 1 : t;
    float ex = ax + t * dx - px, ey = ay + t * dy - py;
    return sqrtf(ex * ex + ey * ey);
}

/* A pixel index from a coordinate, clamped to [lo, hi] before the
 * conversion: data can put a point at NaN or infinity (a model with NaN
 * logits), and converting those to int is undefined. */
static int px_clamp(float v, int lo, int hi)
{
    return !(v > (float)lo) ? lo : v >= (float)hi ? hi : (int)v;
}

/* Straight axis-aligned lines are boxes (crisp); others are capsules whose
 * coverage comes from the distance to the segment, taken once per pixel
 * over the whole polyline so joins are not drawn twice. */
static int draw_line(canvas *cv, const prim *p)
{
    float hw = p->lw / 2;
    if (p->n_pts == 2 && (p->pts[0] == p->pts[2] || p->pts[1] == p->pts[3])) {
        float x0 = fminf(p->pts[0], p->pts[2]), x1 = fmaxf(p->pts[0], p->pts[2]);
        float y0 = fminf(p->pts[1], p->pts[3]), y1 = fmaxf(p->pts[1], p->pts[3]);
        if (x0 == x1)
            fill_box(cv, x0 - hw, y0, x1 + hw, y1, p->stroke, 1);
        else
            fill_box(cv, x0, y0 - hw, x1, y1 + hw, p->stroke, 1);
        return AS_OK;
    }
    if (p->n_pts < 1)
        return AS_OK;
    float bx0 = INFINITY, by0 = INFINITY, bx1 = -INFINITY, by1 = -INFINITY;
    for (int i = 0; i < p->n_pts; i++) {
        bx0 = fminf(bx0, p->pts[2 * i]), bx1 = fmaxf(bx1, p->pts[2 * i]);
        by0 = fminf(by0, p->pts[2 * i + 1]), by1 = fmaxf(by1, p->pts[2 * i + 1]);
    }
    int ix0 = px_clamp(floorf(bx0 - hw - 1), 0, cv->w), iy0 = px_clamp(floorf(by0 - hw - 1), 0, cv->h);
    int ix1 = px_clamp(ceilf(bx1 + hw + 1), 0, cv->w), iy1 = px_clamp(ceilf(by1 + hw + 1), 0, cv->h);
    if (ix1 <= ix0 || iy1 <= iy0)
        return AS_OK;
    int mw = ix1 - ix0, mh = iy1 - iy0;
    float *cov = calloc((size_t)mw * (size_t)mh, sizeof *cov);
    if (!cov)
        return AS_ERR;
    float thin = p->lw < 1 ? p->lw : 1;
    for (int i = 0; i + 1 < p->n_pts; i++) {
        float ax = p->pts[2 * i], ay = p->pts[2 * i + 1], bx = p->pts[2 * i + 2], by = p->pts[2 * i + 3];
        if (!isfinite(ax) || !isfinite(ay) || !isfinite(bx) || !isfinite(by))
            continue;
        int sx0 = px_clamp(floorf(fminf(ax, bx) - hw - 1), 0, cv->w), sx1 = px_clamp(ceilf(fmaxf(ax, bx) + hw + 1), 0, cv->w);
        int sy0 = px_clamp(floorf(fminf(ay, by) - hw - 1), 0, cv->h), sy1 = px_clamp(ceilf(fmaxf(ay, by) + hw + 1), 0, cv->h);
        for (int y = sy0 < iy0 ? iy0 : sy0; y < (sy1 > iy1 ? iy1 : sy1); y++)
            for (int x = sx0 < ix0 ? ix0 : sx0; x < (sx1 > ix1 ? ix1 : sx1); x++) {
                float d = seg_dist((float)x + 0.5f, (float)y + 0.5f, ax, ay, bx, by);
                float c = fmaxf(hw, 0.5f) + 0.5f - d;
                c = (c < 0 ? 0 : c > 1 ? 1 : c) * thin;
                float *m = &cov[(size_t)(y - iy0) * (size_t)mw + (size_t)(x - ix0)];
                *m = fmaxf(*m, c);
            }
    }
    for (int y = 0; y < mh; y++)
        for (int x = 0; x < mw; x++)
            blend(cv, ix0 + x, iy0 + y, p->stroke, cov[(size_t)y * (size_t)mw + (size_t)x]);
    free(cov);
    return AS_OK;
}

static void draw_mark(canvas *cv, const prim *p)
{
    if (!isfinite(p->x) || !isfinite(p->y) || !isfinite(p->r))
        return;
    int x0 = px_clamp(floorf(p->x - p->r - 1), -1, cv->w), x1 = px_clamp(ceilf(p->x + p->r + 1), -1, cv->w);
    int y0 = px_clamp(floorf(p->y - p->r - 1), -1, cv->h), y1 = px_clamp(ceilf(p->y + p->r + 1), -1, cv->h);
    for (int y = y0; y < y1; y++)
        for (int x = x0; x < x1; x++) {
            float dx = (float)x + 0.5f - p->x, dy = (float)y + 0.5f - p->y;
            float c = p->r + 0.5f - sqrtf(dx * dx + dy * dy);
            blend(cv, x, y, p->fill, p->alpha * (c < 0 ? 0 : c > 1 ? 1 : c));
        }
}

/* One glyph coverage pixel at (a, b) from the pen origin: a rightwards
 * along the baseline, b downwards. Upward text turns that by 90°. */
static void glyph_px(canvas *cv, const prim *p, int ox, int oy, int a, int b, float cov)
{
    if (p->rot)
        blend(cv, ox + b, oy - a - 1, p->fill, cov);
    else
        blend(cv, ox + a, oy + b, p->fill, cov);
}

static void draw_text(canvas *cv, as_fig_ctx *c, const prim *p)
{
    float w = text_width(c, p->text, p->size);
    float u0 = p->align == AL_START ? 0 : p->align == AL_MIDDLE ? -w / 2 : -w;
    int ox = (int)lrintf(p->x), oy = (int)lrintf(p->y);
    float pen = u0;
    if (!c->face) {
        int s = bitmap_scale(p->size);
        for (const char *q = p->text; *q;) {
            uint32_t cp = utf8_next(&q);
            const uint8_t *g = bitmap_glyph(cp);
            int a0 = (int)lrintf(pen);
            for (int row = 0; row < 9; row++)
                for (int col = 0; col < 5; col++)
                    if (g[row] & (0x10 >> col))
                        for (int sy = 0; sy < s; sy++)
                            for (int sx = 0; sx < s; sx++)
                                glyph_px(cv, p, ox, oy, a0 + (col + 1) * s + sx, (row - 7) * s + sy, 1);
            pen += 6.0f * (float)s;
        }
        return;
    }
    set_px(c, p->size);
    FT_GlyphSlot slot = c->face->glyph;
    for (const char *q = p->text; *q;) {
        FT_UInt gi = FT_Get_Char_Index(c->face, utf8_next(&q));
        FT_Fixed adv = 0;
        FT_Get_Advance(c->face, gi, FT_LOAD_NO_HINTING, &adv);
        if (!FT_Load_Glyph(c->face, gi, FT_LOAD_RENDER | FT_LOAD_TARGET_LIGHT) &&
            slot->bitmap.pixel_mode == FT_PIXEL_MODE_GRAY) {
            const FT_Bitmap *bm = &slot->bitmap;
            int a0 = (int)lrintf(pen) + slot->bitmap_left, b0 = -slot->bitmap_top;
            for (unsigned row = 0; row < bm->rows; row++)
                for (unsigned col = 0; col < bm->width; col++) {
                    unsigned v = bm->buffer[(size_t)row * (size_t)abs(bm->pitch) + col];
                    if (v)
                        glyph_px(cv, p, ox, oy, a0 + (int)col, b0 + (int)row, (float)v / 255.0f);
                }
        }
        pen += (float)adv / 65536.0f;
    }
}

int as_figure_raster(const as_figure *f, uint8_t **rgb, as_error *err)
{
    canvas cv = {f->w, f->h, malloc((size_t)f->w * (size_t)f->h * 3)};
    *rgb = NULL;
    if (!cv.px)
        return as_error_set(err, "out of memory for a %dx%d raster", f->w, f->h);
    memset(cv.px, 255, (size_t)f->w * (size_t)f->h * 3);
    for (int i = 0; i < f->n; i++) {
        const prim *p = &f->p[i];
        switch (p->kind) {
        case PR_RECT: draw_rect(&cv, p); break;
        case PR_CELLS: draw_cells(&cv, p); break;
        case PR_GRAD: draw_grad(&cv, p); break;
        case PR_MARK: draw_mark(&cv, p); break;
        case PR_TEXT: draw_text(&cv, f->ctx, p); break;
        case PR_LINE:
            if (draw_line(&cv, p)) {
                free(cv.px);
                return as_error_set(err, "out of memory drawing a line");
            }
            break;
        }
    }
    *rgb = cv.px;
    return AS_OK;
}

/* ================================================================= PNG */

typedef struct png_out {
    FILE *f;                /* a file, or NULL for memory */
    uint8_t *buf;
    size_t len, cap;
    bool oom;
    char msg[256];
    jmp_buf jmp;
} png_out;

static void png_on_error(png_structp png, png_const_charp msg)
{
    png_out *o = png_get_error_ptr(png);
    snprintf(o->msg, sizeof o->msg, "%s", msg);
    longjmp(o->jmp, 1);
}

static void png_on_warning(png_structp png, png_const_charp msg)
{
    (void)png, (void)msg;
}

static void png_mem_write(png_structp png, png_bytep data, png_size_t n)
{
    png_out *o = png_get_io_ptr(png);
    if (o->len + n > o->cap) {
        size_t cap = (o->cap ? o->cap * 2 : 4096) + n;
        uint8_t *b = realloc(o->buf, cap);
        if (!b)
            png_error(png, "out of memory");
        o->buf = b, o->cap = cap;
    }
    memcpy(o->buf + o->len, data, n);
    o->len += n;
}

static void png_mem_flush(png_structp png) { (void)png; }

static bool is_ascii(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s >= 0x80 || ((unsigned char)*s < 0x20 && *s != '\n'))
            return false;
    return true;
}

/* Writes w × h RGB as PNG to o (its file or memory), with the figure's
 * provenance in text chunks and its resolution in pHYs when f is given. */
static int png_encode(png_out *o, const as_figure *f, const uint8_t *rgb, int w, int h, as_error *err)
{
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, o, png_on_error, png_on_warning);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    png_text *volatile texts = NULL;
    if (!info) {
        png_destroy_write_struct(&png, NULL);
        return as_error_set(err, "out of memory starting libpng");
    }
    if (setjmp(o->jmp)) {
        png_destroy_write_struct(&png, &info);
        free(texts);
        return as_error_set(err, "PNG: %s", o->msg);
    }
    if (o->f)
        png_init_io(png, o->f);
    else
        png_set_write_fn(png, o, png_mem_write, png_mem_flush);
    png_set_IHDR(png, info, (png_uint_32)w, (png_uint_32)h, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (f) {
        png_uint_32 ppm = (png_uint_32)lrint(f->dpi / 0.0254);
        png_set_pHYs(png, info, ppm, ppm, PNG_RESOLUTION_METER);
        int n = f->n_meta + 2;
        texts = calloc((size_t)n, sizeof *texts);
        if (!texts)
            png_error(png, "out of memory");
        char software[64];
        snprintf(software, sizeof software, "attnscope %s", AS_VERSION);
        const char *kv[2][2] = {{"Title", f->title}, {"Software", software}};
        for (int i = 0; i < n; i++) {
            const char *key = i < 2 ? kv[i][0] : f->meta[(i - 2) * 2];
            const char *val = i < 2 ? kv[i][1] : f->meta[(i - 2) * 2 + 1];
            texts[i].key = (png_charp)key;
            texts[i].text = (png_charp)val;
            /* tEXt is Latin-1: anything else goes in an iTXt chunk as UTF-8. */
            texts[i].compression = is_ascii(val) ? PNG_TEXT_COMPRESSION_NONE : PNG_ITXT_COMPRESSION_NONE;
            texts[i].lang = NULL;
            texts[i].lang_key = NULL;
        }
        png_set_text(png, info, texts, n);
    }
    png_write_info(png, info);
    for (int y = 0; y < h; y++)
        png_write_row(png, (png_const_bytep)(rgb + (size_t)y * (size_t)w * 3));
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    free(texts);
    return AS_OK;
}

/* ================================================================= SVG */

static const char *num(char *buf, float v)
{
    snprintf(buf, 24, "%.2f", (double)v);
    char *e = buf + strlen(buf);
    while (e > buf && e[-1] == '0')
        *--e = '\0';
    if (e > buf && e[-1] == '.')
        *--e = '\0';
    if (!strcmp(buf, "-0"))
        strcpy(buf, "0");
    return buf;
}

static void xml_text(FILE *o, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': fputs("&amp;", o); break;
        case '<': fputs("&lt;", o); break;
        case '>': fputs("&gt;", o); break;
        case '"': fputs("&quot;", o); break;
        case '\n': fputs("&#10;", o); break;
        default:
            if ((unsigned char)*s >= 0x20 || *s == '\t')
                fputc(*s, o);
        }
    }
}

static void hex(char *buf, const uint8_t *c) { snprintf(buf, 8, "#%02x%02x%02x", c[0], c[1], c[2]); }

static int b64_write(FILE *o, const uint8_t *d, size_t n)
{
    static const char tb[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0) | (i + 2 < n ? d[i + 2] : 0);
        char q[4] = {tb[v >> 18 & 63], tb[v >> 12 & 63], i + 1 < n ? tb[v >> 6 & 63] : '=', i + 2 < n ? tb[v & 63] : '='};
        fwrite(q, 1, 4, o);
    }
    return ferror(o) ? AS_ERR : AS_OK;
}

/* Heatmaps beyond this many cells in all are embedded as a pixelated
 * image per panel (as matplotlib does), so the file stays small. */
#define SVG_MAX_CELL_RECTS 40000

static int svg_cells(FILE *o, const prim *p, bool as_image, as_error *err)
{
    char a[24], b[24], c[24], d[24], col[8];
    if (!as_image) {
        fprintf(o, "<g class=\"heatmap\" shape-rendering=\"crispEdges\">\n");
        for (int r = 0; r < p->rows; r++)
            for (int k = 0; k < p->cols; k++) {
                hex(col, p->rgb + ((size_t)r * (size_t)p->cols + (size_t)k) * 3);
                fprintf(o, "<rect class=\"cell\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"/>\n",
                        num(a, p->x + (float)k * p->w), num(b, p->y + (float)r * p->h), num(c, p->w),
                        num(d, p->h), col);
            }
        fprintf(o, "</g>\n");
        return AS_OK;
    }
    png_out po = {0};
    if (png_encode(&po, NULL, p->rgb, p->cols, p->rows, err)) {
        free(po.buf);
        return AS_ERR;
    }
    fprintf(o, "<image class=\"heatmap\" x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" preserveAspectRatio=\"none\" "
               "style=\"image-rendering:pixelated;image-rendering:crisp-edges\" xlink:href=\"data:image/png;base64,",
            num(a, p->x), num(b, p->y), num(c, p->w * (float)p->cols), num(d, p->h * (float)p->rows));
    b64_write(o, po.buf, po.len);
    fprintf(o, "\"/>\n");
    free(po.buf);
    return AS_OK;
}

static int svg_write(const as_figure *f, FILE *o, as_error *err)
{
    char a[24], b[24], c[24], d[24], col[8], col2[8];
    long cells = 0;
    for (int i = 0; i < f->n; i++)
        if (f->p[i].kind == PR_CELLS)
            cells += (long)f->p[i].rows * f->p[i].cols;
    bool as_image = cells > SVG_MAX_CELL_RECTS;
    float wpt = (float)f->w * 72.0f / (float)f->dpi, hpt = (float)f->h * 72.0f / (float)f->dpi;
    fprintf(o, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
               "<svg xmlns=\"http://www.w3.org/2000/svg\" xmlns:xlink=\"http://www.w3.org/1999/xlink\" "
               "version=\"1.1\" width=\"%spt\" height=\"%spt\" viewBox=\"0 0 %d %d\" xml:space=\"preserve\">\n",
            num(a, wpt), num(b, hpt), f->w, f->h);
    fprintf(o, "<title>");
    xml_text(o, f->title);
    fprintf(o, "</title>\n<desc>Software: attnscope %s", AS_VERSION);
    for (int i = 0; i < f->n_meta; i++) {
        fprintf(o, "&#10;");
        xml_text(o, f->meta[2 * i]);
        fprintf(o, ": ");
        xml_text(o, f->meta[2 * i + 1]);
    }
    fprintf(o, "</desc>\n<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n"
               "<g font-family=\"DejaVu Sans, Bitstream Vera Sans, Verdana, sans-serif\">\n");
    int grads = 0;
    for (int i = 0; i < f->n; i++) {
        const prim *p = &f->p[i];
        switch (p->kind) {
        case PR_RECT:
            hex(col, p->fill), hex(col2, p->stroke);
            fprintf(o, "<rect%s%s%s x=\"%s\" y=\"%s\" width=\"%s\" height=\"%s\" fill=\"%s\"", p->cls ? " class=\"" : "",
                    p->cls ? p->cls : "", p->cls ? "\"" : "", num(a, p->x), num(b, p->y), num(c, p->w), num(d, p->h),
                    p->filled ? col : "none");
            if (p->stroked)
                fprintf(o, " stroke=\"%s\" stroke-width=\"%s\"", col2, num(a, p->lw));
            fprintf(o, "/>\n");
            break;
        case PR_CELLS:
            if (svg_cells(o, p, as_image, err))
                return AS_ERR;
            break;
        case PR_GRAD:
            fprintf(o, "<defs><linearGradient id=\"cbar%d\" x1=\"0\" y1=\"1\" x2=\"0\" y2=\"0\">\n", grads);
            for (int s = 0; s <= 32; s++) {
                uint8_t rgb[3];
                as_colormap(p->cmap, (float)s / 32.0f, rgb);
                hex(col, rgb);
                fprintf(o, "<stop offset=\"%s\" stop-color=\"%s\"/>\n", num(a, (float)s / 32.0f), col);
            }
            fprintf(o, "</linearGradient></defs>\n<rect class=\"colorbar\" x=\"%s\" y=\"%s\" width=\"%s\" "
                       "height=\"%s\" fill=\"url(#cbar%d)\"/>\n",
                    num(a, p->x), num(b, p->y), num(c, p->w), num(d, p->h), grads);
            grads++;
            break;
        case PR_LINE:
            hex(col, p->stroke);
            fprintf(o, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"%s\" stroke-linejoin=\"round\" points=\"",
                    col, num(a, p->lw));
            for (int k = 0; k < p->n_pts; k++)
                fprintf(o, "%s%s,%s", k ? " " : "", num(a, p->pts[2 * k]), num(b, p->pts[2 * k + 1]));
            fprintf(o, "\"/>\n");
            break;
        case PR_MARK:
            hex(col, p->fill);
            fprintf(o, "<circle cx=\"%s\" cy=\"%s\" r=\"%s\" fill=\"%s\"", num(a, p->x), num(b, p->y), num(c, p->r), col);
            if (p->alpha < 1)
                fprintf(o, " fill-opacity=\"%s\"", num(a, p->alpha));
            fprintf(o, "/>\n");
            break;
        case PR_TEXT:
            hex(col, p->fill);
            fprintf(o, "<text class=\"%s\" x=\"%s\" y=\"%s\" font-size=\"%s\" fill=\"%s\"", p->cls ? p->cls : "text",
                    num(a, p->x), num(b, p->y), num(c, p->size), col);
            if (p->align != AL_START)
                fprintf(o, " text-anchor=\"%s\"", p->align == AL_MIDDLE ? "middle" : "end");
            if (p->rot)
                fprintf(o, " transform=\"rotate(-90 %s %s)\"", num(a, p->x), num(b, p->y));
            fprintf(o, ">");
            xml_text(o, p->text);
            fprintf(o, "</text>\n");
            break;
        }
    }
    fprintf(o, "</g>\n</svg>\n");
    if (ferror(o))
        return as_error_set(err, "write error");
    return AS_OK;
}

/* =============================================================== output */

int as_fig_format_of(const char *path, as_fig_format *fmt, as_error *err)
{
    size_t n = strlen(path);
    if (n > 4 && !strcasecmp(path + n - 4, ".png"))
        *fmt = AS_FIG_PNG;
    else if (n > 4 && !strcasecmp(path + n - 4, ".svg"))
        *fmt = AS_FIG_SVG;
    else
        return as_error_set(err, "%s: the file name must end in .png or .svg", path);
    return AS_OK;
}

void as_fig_style_default(as_fig_style *st)
{
    st->cmap = AS_CMAP_VIRIDIS;
    st->dpi = AS_FIG_DPI;
    st->log_scale = false;
}

typedef struct write_job {
    const as_figure *f;
    as_fig_format fmt;
    const uint8_t *rgb;
} write_job;

static int write_fig(void *ctx, void *stream, as_error *err)
{
    write_job *j = ctx;
    if (j->fmt == AS_FIG_SVG)
        return svg_write(j->f, stream, err);
    png_out o = {0};
    o.f = stream;
    return png_encode(&o, j->f, j->rgb, j->f->w, j->f->h, err);
}

int as_figure_write(const as_figure *f, const char *path, as_fig_format fmt, as_error *err)
{
    write_job j = {f, fmt, NULL};
    uint8_t *rgb = NULL;
    if (fmt == AS_FIG_PNG && as_figure_raster(f, &rgb, err))
        return AS_ERR;
    j.rgb = rgb;
    int rc = as_write_atomic(path, write_fig, &j, err);
    free(rgb);
    return rc;
}
