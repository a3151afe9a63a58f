/* gguf info: the model card `attnscope --info` prints for a GGUF file (or
 * a llama2.c checkpoint shown through GGUF's names): file and format, the
 * architecture's hyperparameters, the tokenizer (its pre-tokenizer and
 * special tokens in the tokenizer's own words), a table of tensors (name,
 * type, shape, bytes, with totals) and one of every metadata key. Text from
 * the file is escaped, so a hostile name cannot drive the terminal, and
 * long values are cut with "...". */
#include "attnscope/gguf.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/tokenizer.h"
#include "gguf_internal.h"

/* One line of display text, cut with "..." at max columns. Bytes from the
 * file are escaped so a hostile name cannot drive the terminal, and UTF-8
 * sequences are kept whole. */
#define LINE_MAX_COLS 200
typedef struct line {
    char b[4 * LINE_MAX_COLS + 8]; /* a column is at most one 4-byte UTF-8 sequence */
    size_t len, cut;               /* cut: where "..." goes if the text overflows */
    unsigned cols, max;
    bool full;
} line;

static void line_unit(line *l, const char *s, size_t n)
{
    if (l->full)
        return;
    if (l->cols == l->max - 3)
        l->cut = l->len;
    if (l->cols == l->max) {
        memcpy(l->b + l->cut, "...", 4);
        l->len = l->cut + 3, l->cols = l->max, l->full = true;
        return;
    }
    memcpy(l->b + l->len, s, n);
    l->len += n, l->cols += 1;
    l->b[l->len] = '\0';
}

/* Length of a printable UTF-8 sequence at s (of n bytes), or 0. C1
 * controls (U+0080..U+009F) count as unprintable: some terminals obey them. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t k = s[0] >= 0xf0 && s[0] < 0xf5 ? 4 : s[0] >= 0xe0 && s[0] < 0xf0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
    if (k == 0 || k > n || (s[0] == 0xc2 && s[1] < 0xa0))
        return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    return k;
}

static char named_escape(unsigned char c)
{
    switch (c) {
    case '"': return '"';
    case '\\': return '\\';
    case '\n': return 'n';
    case '\t': return 't';
    case '\r': return 'r';
    default: return 0;
    }
}

static void line_text(line *l, const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n && !l->full;) {
        char esc[8];
        size_t k = u[i] >= 0x80 ? utf8_len(u + i, n - i) : 0;
        if (k) {
            line_unit(l, s + i, k);
            i += k;
            continue;
        }
        if (named_escape(u[i]))
            snprintf(esc, sizeof esc, "\\%c", named_escape(u[i]));
        else if (u[i] < 0x20 || u[i] >= 0x7f)
            snprintf(esc, sizeof esc, "\\x%02x", u[i]);
        else
            esc[0] = (char)u[i], esc[1] = '\0';
        for (const char *e = esc; *e; e++)
            line_unit(l, e, 1);
        i++;
    }
}

static void line_fmt(line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void line_fmt(line *l, const char *fmt, ...)
{
    char tmp[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    line_text(l, tmp, strlen(tmp));
}

static void line_init(line *l, unsigned max)
{
    l->len = 0, l->cut = 0, l->cols = 0, l->full = false;
    l->max = max < 8 ? 8 : max > LINE_MAX_COLS ? LINE_MAX_COLS : max;
    l->b[0] = '\0';
}

static void line_str(line *l, const char *s, uint64_t n)
{
    line_unit(l, "\"", 1);
    line_text(l, s, (size_t)n);
    line_unit(l, "\"", 1);
}

/* the shortest decimal that reads back as the same value: 1e-05, not 9.99999975e-06 */
static void line_float(line *l, double v, bool single)
{
    char tmp[40];
    for (int prec = single ? 6 : 15; prec <= (single ? 9 : 17); prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (single ? strtof(tmp, NULL) == (float)v : strtod(tmp, NULL) == v)
            break;
    }
    line_text(l, tmp, strlen(tmp));
}

static void line_scalar(line *l, as_gguf_type t, const uint8_t *p)
{
    if (type_is_unsigned(t))
        line_fmt(l, "%" PRIu64, raw_u64(t, p));
    else if (type_is_signed(t))
        line_fmt(l, "%" PRId64, raw_i64(t, p));
    else if (t == AS_GGUF_BOOL)
        line_fmt(l, "%s", p[0] ? "true" : "false");
    else
        line_float(l, raw_f64(t, p), t == AS_GGUF_FLOAT32);
}

static void line_array(line *l, const as_gguf_kv *kv)
{
    line_fmt(l, "[%s ", as_gguf_type_name(kv->arr_type));
    line_unit(l, "\xc3\x97", 2); /* × */
    line_fmt(l, " %" PRIu64 "]", kv->arr_len);
    for (uint64_t i = 0; i < kv->arr_len && !l->full; i++) {
        line_text(l, i ? ", " : " ", i ? 2 : 1);
        if (kv->arr_type == AS_GGUF_STRING)
            line_str(l, kv->strs[i], kv->str_lens[i]);
        else
            line_scalar(l, kv->arr_type, arr_elem(kv, i));
    }
}

static void line_value(line *l, const as_gguf_kv *kv)
{
    if (kv->type == AS_GGUF_STRING)
        line_str(l, kv->str, kv->str_len);
    else if (kv->type == AS_GGUF_ARRAY)
        line_array(l, kv);
    else if (type_is_unsigned(kv->type))
        line_fmt(l, "%" PRIu64, kv->v.u64);
    else if (type_is_signed(kv->type))
        line_fmt(l, "%" PRId64, kv->v.i64);
    else if (kv->type == AS_GGUF_BOOL)
        line_fmt(l, "%s", kv->v.b ? "true" : "false");
    else
        line_float(l, kv->v.f64, kv->type == AS_GGUF_FLOAT32);
}

/* prints s escaped, cut at width columns, padded to width when pad */
static void put_cell(FILE *out, const char *s, unsigned width, bool pad)
{
    line l;
    line_init(&l, width);
    line_text(&l, s, strlen(s));
    fputs(l.b, out);
    for (unsigned c = l.cols; pad && c < width; c++)
        fputc(' ', out);
}

static unsigned text_cols(const char *s, unsigned cap)
{
    line l;
    line_init(&l, cap);
    line_text(&l, s, strlen(s));
    return l.cols;
}

static void human_count(char *buf, size_t cap, double v, const char *const units[4], double base)
{
    int u = 0;
    while (v >= base && u < 3)
        v /= base, u++;
    snprintf(buf, cap, u ? "%.1f%s" : "%.0f%s", v, units[u]);
}

/* prints the keys starting with prefix (all when NULL); returns how many */
static uint64_t print_kv_rows(const as_gguf *g, FILE *out, const char *prefix, bool show_type)
{
    uint64_t shown = 0;
    unsigned kw = 3;
    size_t pl = prefix ? strlen(prefix) : 0;
    for (uint64_t i = 0; i < g->n_kv; i++)
        if (!prefix || strncmp(g->kvs[i].key, prefix, pl) == 0)
            kw = text_cols(g->kvs[i].key, 48) > kw ? text_cols(g->kvs[i].key, 48) : kw;
    if (show_type)
        fprintf(out, "  %-*s  %-7s  value\n", (int)kw, "key", "type");
    for (uint64_t i = 0; i < g->n_kv; i++) {
        const as_gguf_kv *kv = &g->kvs[i];
        if (prefix && strncmp(kv->key, prefix, pl) != 0)
            continue;
        line l;
        line_init(&l, 72);
        line_value(&l, kv);
        fputs("  ", out);
        put_cell(out, kv->key, kw, true);
        if (show_type)
            fprintf(out, "  %-7s", as_gguf_type_name(kv->type));
        fprintf(out, "  %s\n", l.b);
        shown++;
    }
    return shown;
}

static void print_summary(const as_gguf *g, FILE *out)
{
    const as_gguf_kv *arch = as_gguf_find(g, "general.architecture");
    const as_gguf_kv *name = as_gguf_find(g, "general.name");
    const as_gguf_kv *tok = as_gguf_find(g, "tokenizer.ggml.model");
    const as_gguf_kv *vocab = as_gguf_find(g, "tokenizer.ggml.tokens");
    bool has_arch = arch && arch->type == AS_GGUF_STRING;

    fputs("file          ", out), put_cell(out, g->path, 200, false), fputc('\n', out);
    if (g->version == 0) /* a view over another format (llama2c.h) */
        fprintf(out, "format        %s (shown with GGUF's names), %zu bytes\n",
                g->view_of ? g->view_of : "llama2.c checkpoint", g->size);
    else
        fprintf(out, "format        GGUF version %" PRIu32 ", alignment %" PRIu64 ", %zu bytes\n", g->version,
                g->alignment, g->size);
    fputs("architecture  ", out), put_cell(out, has_arch ? arch->str : "(not set)", 60, false), fputc('\n', out);
    if (name && name->type == AS_GGUF_STRING)
        fputs("name          ", out), put_cell(out, name->str, 60, false), fputc('\n', out);
    fputs("tokenizer     ", out);
    put_cell(out, tok && tok->type == AS_GGUF_STRING ? tok->str : "(none)", 40, false);
    if (vocab && vocab->type == AS_GGUF_ARRAY)
        fprintf(out, ", vocabulary of %" PRIu64 " tokens", vocab->arr_len);
    fputc('\n', out);
    as_tokenizer_print_card(g, out);
    if (has_arch) {
        char prefix[80];
        snprintf(prefix, sizeof prefix, "%.70s.", arch->str);
        fputs("\nhyperparameters\n", out);
        /* llama.cpp's vision towers keep theirs under clip.* (clip.vision.image_size, ...) */
        if (!print_kv_rows(g, out, prefix, false) && !print_kv_rows(g, out, "clip.", false))
            fputs("  (none)\n", out);
    }
}

static void shape_str(const as_gguf_tensor *t, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < t->n_dims && n < cap; d++)
        n += (size_t)snprintf(buf + n, cap - n, d ? ", %" PRIu64 : "%" PRIu64, t->ne[d]);
    if (n < cap)
        snprintf(buf + n, cap - n, "]");
}

static void print_tensors(const as_gguf *g, FILE *out)
{
    static const char *const bytes_u[4] = {" B", " KiB", " MiB", " GiB"};
    static const char *const count_u[4] = {"", "K", "M", "B"};
    unsigned nw = 4, sw = 5, tw = 5; /* type names grow past 5 (IQ2_XXS) only where a file has them */
    uint64_t total = 0, params = 0;
    char shape[128], hb[32], hp[32];
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        shape_str(&g->tensors[i], shape, sizeof shape);
        nw = text_cols(g->tensors[i].name, 64) > nw ? text_cols(g->tensors[i].name, 64) : nw;
        sw = strlen(shape) > sw ? (unsigned)strlen(shape) : sw;
        size_t tl = strlen(as_ggml_type_name(g->tensors[i].type));
        tw = tl > tw ? (unsigned)tl : tw;
    }
    fprintf(out, "\ntensors\n  %-*s  %-*s  %-*s  %14s\n", (int)nw, "name", (int)tw, "type", (int)sw, "shape",
            "bytes");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        shape_str(t, shape, sizeof shape);
        fputs("  ", out);
        put_cell(out, t->name, nw, true);
        fprintf(out, "  %-*s  %-*s  %14" PRIu64 "\n", (int)tw, as_ggml_type_name(t->type), (int)sw, shape,
                t->n_bytes);
        total += t->n_bytes;
        params += t->n_elements; /* each below 2^63 and all fit in the file: no overflow in practice */
    }
    human_count(hb, sizeof hb, (double)total, bytes_u, 1024);
    human_count(hp, sizeof hp, (double)params, count_u, 1000);
    fprintf(out, "  total: %" PRIu64 " tensors, %s (%" PRIu64 " bytes), %s parameters\n", g->n_tensors, hb, total,
            hp);
}

void as_gguf_print_info(const as_gguf *g, FILE *out)
{
    if (!g || !out)
        return;
    print_summary(g, out);
    print_tensors(g, out);
    fputs("\nmetadata\n", out);
    print_kv_rows(g, out, NULL, true);
}

void as_gguf_kv_text(const as_gguf_kv *kv, int64_t elem, unsigned max_cols, char *buf, size_t cap)
{
    line l;
    line_init(&l, max_cols);
    if (elem < 0)
        line_value(&l, kv);
    else if (kv->type != AS_GGUF_ARRAY || (uint64_t)elem >= kv->arr_len)
        line_text(&l, "absent", 6);
    else if (kv->arr_type == AS_GGUF_STRING)
        line_str(&l, kv->strs[elem], kv->str_lens[elem]);
    else if (arr_elem(kv, (uint64_t)elem))
        line_scalar(&l, kv->arr_type, arr_elem(kv, (uint64_t)elem));
    snprintf(buf, cap, "%s", l.b);
}
