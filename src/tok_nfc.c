/* tok_nfc: Unicode Normalization Form C (UAX #15), for a tokenizer.json
 * whose normalizer is NFC (Qwen's): canonical decomposition (the tables'
 * full decompositions, Hangul syllables by formula), canonical ordering of
 * combining marks, then canonical composition (primary composites only,
 * a mark not blocked from its starter; Hangul L+V and LV+T by formula).
 * Tables in unicode_nfc.h, generated from python3's unicodedata. Bytes
 * that are not UTF-8 are kept as they are: starters that compose with
 * nothing. */
#include "tokenizer_internal.h"
#include "unicode_nfc.h"

#include <stdlib.h>
#include <string.h>

#define RAW_BYTE 0x110000u /* + the byte: an invalid byte kept */
enum { SBASE = 0xAC00, LBASE = 0x1100, VBASE = 0x1161, TBASE = 0x11A7, LCOUNT = 19, VCOUNT = 21, TCOUNT = 28,
       NCOUNT = VCOUNT * TCOUNT, SCOUNT = LCOUNT * NCOUNT };

static int ccc_of(uint32_t cp)
{
    size_t lo = 0, hi = sizeof as_uni_ccc / sizeof as_uni_ccc[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (as_uni_ccc[mid][0] == cp)
            return (int)as_uni_ccc[mid][1];
        if (as_uni_ccc[mid][0] < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static const uint32_t *decomp_of(uint32_t cp, size_t *n)
{
    size_t lo = 0, hi = sizeof as_uni_decomp / sizeof as_uni_decomp[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (as_uni_decomp[mid][0] == cp) {
            *n = as_uni_decomp[mid][2];
            return as_uni_decomp_cps + as_uni_decomp[mid][1];
        }
        if (as_uni_decomp[mid][0] < cp)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int as_tok_ccc(uint32_t cp)
{
    return ccc_of(cp);
}

size_t as_tok_nfd_cp(uint32_t cp, uint32_t out[4])
{
    size_t m;
    const uint32_t *dec;
    if (cp >= SBASE && cp < SBASE + SCOUNT) {
        uint32_t si = cp - SBASE;
        out[0] = LBASE + si / NCOUNT, out[1] = VBASE + si % NCOUNT / TCOUNT;
        if (si % TCOUNT == 0)
            return 2;
        out[2] = TBASE + si % TCOUNT;
        return 3;
    }
    if ((dec = decomp_of(cp, &m))) {
        memcpy(out, dec, m * sizeof *out);
        return m;
    }
    out[0] = cp;
    return 1;
}

/* The primary composite of a then b, or 0. */
static uint32_t compose(uint32_t a, uint32_t b)
{
    if (a >= LBASE && a < LBASE + LCOUNT && b >= VBASE && b < VBASE + VCOUNT)
        return SBASE + ((a - LBASE) * VCOUNT + (b - VBASE)) * TCOUNT;
    if (a >= SBASE && a < SBASE + SCOUNT && (a - SBASE) % TCOUNT == 0 && b > TBASE && b < TBASE + TCOUNT)
        return a + (b - TBASE);
    size_t lo = 0, hi = sizeof as_uni_comp / sizeof as_uni_comp[0];
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        const uint32_t *e = as_uni_comp[mid];
        if (e[0] == a && e[1] == b)
            return e[2];
        if (e[0] < a || (e[0] == a && e[1] < b))
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

static size_t put_utf8(uint32_t cp, char *o)
{
    if (cp >= RAW_BYTE)
        return o[0] = (char)(cp - RAW_BYTE), 1;
    if (cp < 0x80)
        return o[0] = (char)cp, 1;
    if (cp < 0x800)
        return o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 63)), 2;
    if (cp < 0x10000)
        return o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | (cp >> 6 & 63)), o[2] = (char)(0x80 | (cp & 63)), 3;
    o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | (cp >> 12 & 63));
    o[2] = (char)(0x80 | (cp >> 6 & 63)), o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

int as_tok_nfc(const char *s, size_t n, char **out, size_t *out_n, as_error *err)
{
    /* a code point of two or more bytes decomposes into at most 4 (the
     * tables' longest; a Hangul syllable, 3 bytes, into 3); ASCII into itself */
    uint32_t *d = malloc((n * 2 + 1) * sizeof *d);
    if (!d)
        return as_tok_oom(err);
    size_t k = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        size_t c = as_tok_utf8_char((const uint8_t *)s + i, n - i, &cp);
        if (!c)
            cp = RAW_BYTE + (uint8_t)s[i], c = 1;
        i += c;
        size_t m;
        const uint32_t *dec;
        if (cp >= SBASE && cp < SBASE + SCOUNT) {
            uint32_t si = cp - SBASE;
            d[k++] = LBASE + si / NCOUNT, d[k++] = VBASE + si % NCOUNT / TCOUNT;
            if (si % TCOUNT)
                d[k++] = TBASE + si % TCOUNT;
        } else if (cp < RAW_BYTE && (dec = decomp_of(cp, &m))) {
            memcpy(d + k, dec, m * sizeof *d), k += m;
        } else {
            d[k++] = cp;
        }
    }
    /* canonical ordering: each run of marks sorted by class, stably */
    for (size_t i = 1; i < k; i++) {
        int ci = d[i] < RAW_BYTE ? ccc_of(d[i]) : 0;
        if (!ci)
            continue;
        uint32_t x = d[i];
        size_t j = i;
        while (j > 0 && d[j - 1] < RAW_BYTE && ccc_of(d[j - 1]) > ci)
            d[j] = d[j - 1], j--;
        d[j] = x;
    }
    /* composition: a mark (or starter) joins the last starter unless blocked */
    size_t w = 0;
    long starter = -1;
    int last = 0;
    for (size_t i = 0; i < k; i++) {
        uint32_t c = d[i];
        int cc = c < RAW_BYTE ? ccc_of(c) : 0;
        if (starter >= 0 && (w == (size_t)starter + 1 || (last != 0 && last < cc))) {
            uint32_t comp = d[starter] < RAW_BYTE && c < RAW_BYTE ? compose(d[starter], c) : 0;
            if (comp) {
                d[starter] = comp;
                continue;
            }
        }
        if (cc == 0)
            starter = (long)w;
        last = cc;
        d[w++] = c;
    }
    char *o = malloc(w * 4 + 1);
    if (!o) {
        free(d);
        return as_tok_oom(err);
    }
    size_t len = 0;
    for (size_t i = 0; i < w; i++)
        len += put_utf8(d[i], o + len);
    o[len] = '\0';
    free(d);
    *out = o, *out_n = len;
    return AS_OK;
}
