/* Figures: fonts and text. The font context (DejaVu Sans from its file,
 * or fontconfig's sans-serif), measuring text, UTF-8 cleaning, tokens made
 * visible, and elision. */
#include <cairo-ft.h>
#include <cairo.h>
#include <ft2build.h>
#include FT_FREETYPE_H
#include FT_TRUETYPE_TABLES_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "figure_internal.h"

/* ================================================================ fonts */

/* Where distributions put DejaVu Sans. */
static const char *const font_paths[] = {
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",   /* Debian, Ubuntu */
    "/usr/share/fonts/TTF/DejaVuSans.ttf",               /* Arch */
    "/usr/share/fonts/dejavu-sans-fonts/DejaVuSans.ttf", /* Fedora */
    "/usr/share/fonts/dejavu/DejaVuSans.ttf",
    "/usr/local/share/fonts/DejaVuSans.ttf",
    "/usr/share/fonts/truetype/DejaVuSans.ttf",
};

/* A FreeType face and its library, owned by the Cairo font face: Cairo
 * keeps font faces in caches past our last reference, so it frees them. */
typedef struct ft_owner {
    FT_Library lib;
    FT_Face face;
} ft_owner;

static const cairo_user_data_key_t ft_key;

static void ft_owner_free(void *p)
{
    ft_owner *o = p;
    FT_Done_Face(o->face);
    FT_Done_FreeType(o->lib);
    free(o);
}

static bool try_face(as_fig_ctx *c, const char *path)
{
    ft_owner *o = calloc(1, sizeof *o);
    if (!o || FT_Init_FreeType(&o->lib)) {
        free(o);
        return false;
    }
    if (FT_New_Face(o->lib, path, 0, &o->face)) {
        FT_Done_FreeType(o->lib);
        free(o);
        return false;
    }
    const TT_OS2 *os2 = FT_Get_Sfnt_Table(o->face, FT_SFNT_OS2);
    float cap = os2 && os2->version >= 2 && os2->sCapHeight > 0
                    ? (float)os2->sCapHeight / (float)o->face->units_per_EM : 0.72f;
    if (!FT_IS_SCALABLE(o->face) || FT_Select_Charmap(o->face, FT_ENCODING_UNICODE)) {
        ft_owner_free(o);
        return false;
    }
    cairo_font_face_t *ff = cairo_ft_font_face_create_for_ft_face(o->face, 0);
    if (cairo_font_face_set_user_data(ff, &ft_key, o, ft_owner_free)) {
        cairo_font_face_destroy(ff);
        ft_owner_free(o);
        return false;
    }
    c->face = ff;
    c->cap_em = cap;
    c->from_file = true;
    snprintf(c->name, sizeof c->name, "%s", path);
    return true;
}

/* Text is laid out with unhinted metrics, so measuring here and drawing
 * at any resolution agree. */
void as_fig_set_font_options(cairo_t *cr)
{
    cairo_font_options_t *fo = cairo_font_options_create();
    cairo_font_options_set_hint_style(fo, CAIRO_HINT_STYLE_NONE);
    cairo_font_options_set_hint_metrics(fo, CAIRO_HINT_METRICS_OFF);
    cairo_font_options_set_antialias(fo, CAIRO_ANTIALIAS_GRAY);
    cairo_set_font_options(cr, fo);
    cairo_font_options_destroy(fo);
}

int as_fig_ctx_new(as_fig_ctx **out, const char *font_path, as_error *err)
{
    as_fig_ctx *c = calloc(1, sizeof *c);
    *out = NULL;
    if (!c)
        return as_error_set(err, "out of memory");
    bool found = font_path && try_face(c, font_path);
    for (size_t i = 0; !font_path && !found && i < sizeof font_paths / sizeof *font_paths; i++)
        found = try_face(c, font_paths[i]);
    if (!found) {
        c->face = cairo_toy_font_face_create("sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
        c->cap_em = 0.72f;
        snprintf(c->name, sizeof c->name, "sans-serif through fontconfig (no DejaVu Sans file%s%s)",
                 font_path ? " at " : "", font_path ? font_path : "");
    }
    c->probe = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
    c->m = cairo_create(c->probe);
    if (cairo_status(c->m) || cairo_font_face_status(c->face)) {
        as_fig_ctx_free(c);
        return as_error_set(err, "Cairo could not start (out of memory?)");
    }
    cairo_set_font_face(c->m, c->face);
    as_fig_set_font_options(c->m);
    *out = c;
    return AS_OK;
}

void as_fig_ctx_free(as_fig_ctx *c)
{
    if (!c)
        return;
    cairo_destroy(c->m);
    cairo_surface_destroy(c->probe);
    cairo_font_face_destroy(c->face);
    free(c);
}

bool as_fig_ctx_has_font(const as_fig_ctx *c) { return c->from_file; }
const char *as_fig_ctx_font_name(const as_fig_ctx *c) { return c->name; }

float as_fig_text_width(as_fig_ctx *c, const char *s, float px)
{
    cairo_text_extents_t e;
    cairo_set_font_size(c->m, px);
    cairo_text_extents(c->m, s, &e);
    return (float)e.x_advance;
}

void as_fig_ctx_ink(as_fig_ctx *c, const char *s, float size_pt, float *w, float *h)
{
    cairo_text_extents_t e;
    cairo_set_font_size(c->m, size_pt);
    cairo_text_extents(c->m, s, &e);
    *w = (float)e.width;
    *h = (float)e.height;
}

float as_fig_cap_height(const as_fig_ctx *c, float px) { return c->cap_em * px; }

/* Distance between the baselines of stacked lines. */
float as_fig_line_height(const as_fig_ctx *c, float px) { return (void)c, 1.2f * px; }

/* ================================================================ text */

/* Next code point of UTF-8 text; an invalid byte reads as U+FFFD. */
uint32_t as_fig_utf8_next(const char **pp)
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

size_t as_fig_put_utf8(char *out, size_t o, size_t cap, const char *s)
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
 * so Cairo draws it, SVG stays well-formed and PNG iTXt valid whatever a
 * title holds. */
char *as_fig_utf8_clean(const char *s)
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
            o = as_fig_put_utf8(out, o, cap, "\xE2\x90\xA3"), i++;
        else if (b == '\n')
            o = as_fig_put_utf8(out, o, cap, "\xE2\x86\xB5"), i++;
        else if (b == '\t')
            o = as_fig_put_utf8(out, o, cap, "\xE2\x87\xA5"), i++;
        else if (b < 0x20 || b == 0x7F) {
            snprintf(tmp, sizeof tmp, "\\x%02X", b);
            o = as_fig_put_utf8(out, o, cap, tmp), i++;
        } else {
            /* Only a complete sequence within len counts as a character. */
            char seq[5] = {0};
            size_t n = utf8_seq_len((const unsigned char *)p, len - i);
            if (n) {
                memcpy(seq, p, n);
                o = as_fig_put_utf8(out, o, cap, seq);
                i += n;
            } else {
                snprintf(tmp, sizeof tmp, "\\x%02X", b);
                o = as_fig_put_utf8(out, o, cap, tmp), i++;
            }
        }
    }
    out[o] = '\0';
}

/* Copies s into out, cut with an ellipsis so it is at most maxw px wide. */
void as_fig_elide(as_fig_ctx *c, const char *s, float px, float maxw, char *out, size_t cap)
{
    snprintf(out, cap, "%s", s);
    if (as_fig_text_width(c, out, px) <= maxw)
        return;
    const char *p = s;
    size_t keep = 0;
    char buf[1024];
    while (*p) {
        as_fig_utf8_next(&p);
        size_t n = (size_t)(p - s);
        if (n + 4 >= sizeof buf || n + 4 >= cap)
            break;
        memcpy(buf, s, n);
        strcpy(buf + n, "\xE2\x80\xA6");
        if (as_fig_text_width(c, buf, px) > maxw)
            break;
        keep = n;
    }
    memcpy(out, s, keep);
    strcpy(out + keep, "\xE2\x80\xA6");
}

