#include "textfmt.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

const char *tf_glyph(tf_glyph_id g, bool utf8)
{
    static const char *const uni[G_COUNT] = {"·", "↵", "→", "…", "▀", "◆", "◀", "│", "·", "→", "×", "?"};
    static const char *const ascii[G_COUNT] = {"_", "$", ">", "~", "\"", "+", "<", "|", "-", ">", "x", "?"};
    return g < G_COUNT ? (utf8 ? uni[g] : ascii[g]) : "?";
}

/* One character at s: returns its byte length (0 at the end) and its
 * display width in *w. *escaped is set when it cannot be shown as it is
 * (a control byte, invalid UTF-8, a byte the single-byte locale cannot
 * print): it is then one byte, shown as \xNN, four columns wide. */
static int next_char(const char *s, size_t avail, bool utf8, int *w, bool *escaped)
{
    unsigned char c = (unsigned char)*s;
    *escaped = false;
    *w = 1;
    if (!c)
        return 0;
    if (c < 0x20 || c == 0x7f || (!utf8 && c >= 0x80 && !isprint(c))) {
        *escaped = true;
        *w = 4;
        return 1;
    }
    if (!utf8 || c < 0x80)
        return 1;
    mbstate_t st;
    memset(&st, 0, sizeof st);
    wchar_t wc;
    size_t n = mbrtowc(&wc, s, avail, &st);
    int cw = n == (size_t)-1 || n == (size_t)-2 || n == 0 ? -1 : wcwidth(wc);
    if (cw < 0) {
        *escaped = true;
        *w = 4;
        return 1;
    }
    *w = cw;
    return (int)n;
}

int tf_width(const char *s, bool utf8)
{
    int total = 0;
    size_t left = strlen(s);
    while (*s) {
        bool esc;
        int w, n = next_char(s, left, utf8, &w, &esc);
        total += w;
        s += n;
        left -= (size_t)n;
    }
    return total;
}

int tf_fit(const char *s, int width, bool utf8, char *out, size_t cap)
{
    if (cap == 0)
        return 0;
    out[0] = '\0';
    if (width <= 0)
        return 0;
    int full = tf_width(s, utf8);
    const char *ell = tf_glyph(G_ELLIPSIS, utf8);
    int limit = full <= width ? width : width - 1; /* room for the ellipsis */
    size_t o = 0, left = strlen(s);
    int used = 0;
    while (*s) {
        bool esc;
        int w, n = next_char(s, left, utf8, &w, &esc);
        if (used + w > limit || o + (size_t)n + 8 >= cap)
            break;
        if (esc) {
            o += (size_t)snprintf(out + o, cap - o, "\\x%02X", (unsigned char)*s);
        } else {
            memcpy(out + o, s, (size_t)n);
            o += (size_t)n;
        }
        used += w;
        s += n;
        left -= (size_t)n;
    }
    if (full > width && o + strlen(ell) < cap) {
        memcpy(out + o, ell, strlen(ell));
        o += strlen(ell);
        used++;
    }
    out[o] = '\0';
    return used;
}

/* Length of a valid UTF-8 sequence at b (0 if invalid). */
static size_t utf8_len(const unsigned char *b, size_t left)
{
    size_t n = b[0] < 0x80 ? 1 : (b[0] & 0xE0) == 0xC0 ? 2 : (b[0] & 0xF0) == 0xE0 ? 3 : (b[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 0 || n > left || (n > 1 && b[0] < 0xC2))
        return 0;
    for (size_t k = 1; k < n; k++)
        if ((b[k] & 0xC0) != 0x80)
            return 0;
    return n;
}

int tf_piece_visible(const char *bytes, size_t len, bool utf8, char *out, size_t cap)
{
    size_t o = 0;
    int width = 0;
    const unsigned char *b = (const unsigned char *)bytes;
    for (size_t i = 0; i < len && o + 8 < cap;) {
        char tmp[8];
        const char *put = tmp;
        size_t n = utf8 ? utf8_len(b + i, len - i) : (b[i] < 0x80);
        int w = 1;
        if (b[i] == ' ' || b[i] == '\n' || b[i] == '\t') {
            put = tf_glyph(b[i] == ' ' ? G_SPACE : b[i] == '\n' ? G_NEWLINE : G_TAB, utf8);
            n = 1;
        } else if (n == 0 || b[i] < 0x20 || b[i] == 0x7f) {
            snprintf(tmp, sizeof tmp, "\\x%02X", b[i]);
            n = 1;
            w = 4;
        } else {
            memcpy(tmp, b + i, n);
            tmp[n] = '\0';
            w = tf_width(tmp, utf8);
        }
        size_t pl = strlen(put);
        memcpy(out + o, put, pl);
        o += pl;
        width += w;
        i += n;
    }
    out[o] = '\0';
    return width;
}

void tf_bar(double frac, int width, bool utf8, char *out, size_t cap)
{
    static const char *const eighths[8] = {"", "▏", "▎", "▍", "▌", "▋", "▊", "▉"};
    size_t o = 0;
    if (!(frac > 0))
        frac = 0;
    if (frac > 1)
        frac = 1;
    long units = lround(frac * width * (utf8 ? 8 : 1));
    long full = utf8 ? units / 8 : units;
    const char *block = utf8 ? "█" : "#";
    for (long i = 0; i < full && o + 4 < cap; i++) {
        memcpy(out + o, block, strlen(block));
        o += strlen(block);
    }
    if (utf8 && units % 8 && o + 4 < cap) {
        memcpy(out + o, eighths[units % 8], strlen(eighths[units % 8]));
        o += strlen(eighths[units % 8]);
    }
    out[o] = '\0';
}

void tf_spark(const float *v, int n, bool utf8, char *out, size_t cap)
{
    static const char *const uni[8] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    static const char ascii[] = "_.-=+*#@";
    float lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i])) {
            lo = v[i] < lo ? v[i] : lo;
            hi = v[i] > hi ? v[i] : hi;
        }
    size_t o = 0;
    for (int i = 0; i < n && o + 4 < cap; i++) {
        int level = 0;
        if (!isfinite(v[i])) {
            out[o++] = '?';
            continue;
        }
        if (hi > lo)
            level = (int)lrintf((v[i] - lo) / (hi - lo) * 7.0f);
        const char *g = utf8 ? uni[level] : (char[2]){ascii[level], 0};
        memcpy(out + o, g, strlen(g));
        o += strlen(g);
    }
    out[o] = '\0';
}

void tf_num(double v, int width, char *out, size_t cap)
{
    for (int prec = 4; prec >= 1; prec--) {
        int n = snprintf(out, cap, "%.*g", prec, v);
        if (n <= width)
            return;
    }
    snprintf(out, cap, "%.0e", v);
}

int tf_strip_layout(const int *widths, int n, int cols, int gap, int *row, int *col)
{
    int r = 0, c = 0;
    for (int i = 0; i < n; i++) {
        int w = widths[i] < cols ? widths[i] : cols;
        if (c > 0 && c + w > cols) {
            r++;
            c = 0;
        }
        row[i] = r;
        col[i] = c;
        c += w + gap;
    }
    return n ? r + 1 : 0;
}

/* The last chip from `first` that fits whole, markers counted. */
static int strip_last(const int *widths, int n, int cols, int gap, int first)
{
    int used = first > 0 ? 1 + gap : 0, last = first - 1;
    for (int i = first; i < n; i++) {
        int room = i < n - 1 ? cols - 1 - gap : cols; /* a right marker unless this is the end */
        if (used + widths[i] > room) {
            /* the rest may still fit without a right marker */
            int rest = used;
            for (int j = i; j < n; j++)
                rest += widths[j] + (j < n - 1 ? gap : 0);
            return rest <= cols ? n - 1 : last;
        }
        used += widths[i] + gap;
        last = i;
    }
    return last;
}

int tf_strip_window(const int *widths, int n, int cols, int gap, int sel, int first, int margin, int *last, int *col)
{
    if (n <= 0) {
        *last = -1;
        return 0;
    }
    sel = sel < 0 ? 0 : sel >= n ? n - 1 : sel;
    first = first < 0 ? 0 : first > sel ? sel : first;
    /* context at the left: columns of the chips between first and sel */
    for (;;) {
        int left = 0;
        for (int i = first; i < sel; i++)
            left += widths[i] + gap;
        if (first == 0 || left >= margin)
            break;
        first--;
    }
    /* sel whole, and context at the right, moving right a chip at a time */
    for (; first < sel; first++) {
        int l = strip_last(widths, n, cols, gap, first);
        if (l < sel)
            continue;
        int right = 0;
        for (int i = sel + 1; i <= l; i++)
            right += gap + widths[i];
        if (l == n - 1 || right >= margin)
            break;
    }
    /* no empty room at the end while chips before first are hidden */
    while (first > 0 && strip_last(widths, n, cols, gap, first - 1) == n - 1)
        first--;
    *last = strip_last(widths, n, cols, gap, first);
    if (*last < first)
        *last = first; /* wider than the row: alone, cut */
    int x = first > 0 ? 1 + gap : 0;
    for (int i = 0; i < n; i++) {
        col[i] = i < first || i > *last ? -1 : x;
        if (i >= first && i <= *last)
            x += widths[i] + gap;
    }
    return first;
}

int tf_scroll_follow(int first, int sel, int visible, int total)
{
    if (visible <= 0)
        return 0;
    if (sel < first)
        first = sel;
    if (sel >= first + visible)
        first = sel - visible + 1;
    if (first > total - visible)
        first = total - visible;
    return first < 0 ? 0 : first;
}

int tf_wrap(const char *s, int width, bool utf8, int *starts, int max)
{
    int count = 1, used = 0, used_at_space = 0;
    size_t left = strlen(s);
    const char *p = s, *after_space = NULL; /* where a break after the last space would go */
    if (max > 0)
        starts[0] = 0;
    if (width < 1)
        width = 1;
    while (*p) {
        bool esc;
        int w, n = next_char(p, left, utf8, &w, &esc);
        if (used + w > width && used > 0 && *p == ' ') {
            /* A space at the edge ends the segment (drawn trimmed). */
            if (count < max)
                starts[count] = (int)(p + 1 - s);
            count++;
            used = 0;
            after_space = NULL;
            p += n;
            left -= (size_t)n;
            continue;
        }
        if (used + w > width && used > 0) {
            /* Break after the segment's last space when there is one. */
            const char *brk = after_space ? after_space : p;
            if (count < max)
                starts[count] = (int)(brk - s);
            count++;
            used = brk == p ? 0 : used - used_at_space;
            after_space = NULL;
        }
        used += w;
        if (*p == ' ') {
            after_space = p + 1;
            used_at_space = used;
        }
        p += n;
        left -= (size_t)n;
    }
    return count;
}

/* The next cell of a tab-separated row into cell; returns what follows
 * its tab, or NULL after the last. */
static const char *next_cell(const char *t, char *cell, size_t cap)
{
    const char *tab = strchr(t, '\t');
    snprintf(cell, cap, "%.*s", tab ? (int)(tab - t) : (int)strlen(t), t);
    return tab ? tab + 1 : NULL;
}

void tf_table_widths(const char *row, bool utf8, int *widths, int max)
{
    char cell[512];
    for (int c = 0; c < max && row; c++) {
        row = next_cell(row, cell, sizeof cell);
        int w = tf_width(cell, utf8);
        widths[c] = w > widths[c] ? w : widths[c];
    }
}

void tf_table_format(const char *row, const int *widths, int max, bool utf8, char *out, size_t cap)
{
    char cell[512];
    size_t len = 0;
    if (cap)
        out[0] = '\0';
    for (int c = 0; c < max && row && len + 1 < cap; c++) {
        row = next_cell(row, cell, sizeof cell);
        int pad = row ? widths[c] - tf_width(cell, utf8) + 2 : 0; /* the last cell unpadded */
        int n = snprintf(out + len, cap - len, "%s%*s", cell, pad > 0 ? pad : 0, "");
        len = n < 0 || (size_t)n >= cap - len ? cap - 1 : len + (size_t)n;
    }
}

const char *tf_skip_cols(const char *s, int cols, bool utf8)
{
    for (int col = 0; *s && col < cols;) {
        int n = 1;
        while (utf8 && s[n] && ((unsigned char)s[n] & 0xC0) == 0x80)
            n++;
        char ch[8];
        snprintf(ch, sizeof ch, "%.*s", n, s);
        col += tf_width(ch, utf8);
        s += n;
    }
    return s;
}

void tf_add(tf_line *l, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (l->len < sizeof l->buf)
        l->len += (size_t)vsnprintf(l->buf + l->len, sizeof l->buf - l->len, fmt, ap);
    va_end(ap);
    if (l->len >= sizeof l->buf)
        l->len = sizeof l->buf - 1;
}
