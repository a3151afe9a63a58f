/* The model file's tensors: `weights [PATTERN]` (statistics per tensor,
 * the health of a quantized tensor's block scales, a histogram when one
 * matches) and `diff OTHER` (another GGUF file or Hugging Face directory:
 * every tensor's values, NaN and Inf located, block scales, shapes and types,
 * per tensor and per layer, then every metadata key). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attnscope/instruments.h"
#include "attnscope/hf.h"
#include "session_internal.h"

/* A tensor name from the file, escaped: a hostile name must not drive the terminal. */
static const char *shown_name(const char *name, char *buf, size_t cap)
{
    as_format_piece(name, strlen(name), buf, cap);
    return buf;
}

/* Block types have scales to report; their rows gain columns (batch
 * output is a contract: the other rows and the columns before stay). */
static bool has_scale_columns(const as_gguf_tensor *t)
{
    return as_ggml_type_supported(t->type) && as_ggml_has_scales(t->type);
}

static void print_weight_line(as_session *s, const as_gguf_tensor *t, const as_weight_stats *st)
{
    char nm[256];
    fprintf(s->out, "%s\t%s\t%.4g\t%.4g\t%.4g\t%.4g\t%.4g\t%llu\t%llu\t%.4f", shown_name(t->name, nm, sizeof nm),
            as_ggml_type_name(t->type),
            st->min, st->max, st->mean, st->std, st->norm, (unsigned long long)st->nan, (unsigned long long)st->inf,
            st->n ? (double)st->zeros / (double)st->n : 0.0);
    const as_block_scan *b = &st->scales;
    if (has_scale_columns(t) && b->blocks) {
        /* %g, not %f: one corrupt block in a million must not print as 0 */
        fprintf(s->out, "\t%llu\t%.4g\t%.4g\t%.4g\t", (unsigned long long)b->blocks,
                (double)b->zero / (double)b->blocks, (double)b->bad / (double)b->blocks, (double)b->max_d);
        if (b->bad)
            fprintf(s->out, "%llu", (unsigned long long)b->first_bad);
        else
            fputs("-", s->out);
    }
    fputs("\n", s->out);
}

/* For the one tensor shown in full: its scales in words. */
static void print_scales(as_session *s, const as_gguf_tensor *t, const as_block_scan *b)
{
    const as_ggml_traits *tr = as_ggml_traits_of(t->type);
    fprintf(s->out, "scales of %llu %s blocks: %llu zero, %llu NaN or Inf, largest |d| %.4g\n",
            (unsigned long long)b->blocks, tr->name, (unsigned long long)b->zero, (unsigned long long)b->bad,
            (double)b->max_d);
    if (b->bad) {
        uint64_t per_row = t->ne[0] / tr->block_elems, col = b->first_bad % per_row * tr->block_elems;
        fprintf(s->out, "first corrupt block: %llu (row %llu, columns %llu..%llu), scale %g\n",
                (unsigned long long)b->first_bad, (unsigned long long)(b->first_bad / per_row),
                (unsigned long long)col, (unsigned long long)(col + tr->block_elems - 1), (double)b->first_bad_scale);
    }
}

static void print_histogram(as_session *s, const as_weight_stats *st)
{
    uint64_t most = 1;
    for (int b = 0; b < AS_HIST_BINS; b++)
        most = st->hist[b] > most ? st->hist[b] : most;
    double w = (st->max - st->min) / AS_HIST_BINS;
    for (int b = 0; b < AS_HIST_BINS; b++) {
        int bar = (int)(40.0 * (double)st->hist[b] / (double)most + 0.5);
        fprintf(s->out, "  [%+10.4g, %+10.4g) %10llu ", st->min + b * w, st->min + (b + 1) * w,
                (unsigned long long)st->hist[b]);
        for (int k = 0; k < bar; k++)
            fputs("#", s->out);
        fputs("\n", s->out);
    }
}

int as_cmd_weights(cmd_ctx *c)
{
    as_session *s = c->s;
    const as_gguf *g = s->model->gguf;
    const char *pattern = c->argc > 1 ? c->argv[1] : "*";
    if (!g)
        return as_error_set(c->err, "weights reads GGUF files; this model was not loaded from one");
    int matched = 0;
    const as_gguf_tensor *only = NULL;
    as_weight_stats last;
    char nm[256];
    bool scale_columns = false;
    bool any = false;
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        any |= as_hook_name_match(pattern, g->tensors[i].name);
        scale_columns |= as_hook_name_match(pattern, g->tensors[i].name) && has_scale_columns(&g->tensors[i]);
    }
    if (!any)
        return as_error_set(c->err, "no tensor matches '%s' (`info` lists them)", pattern);
    fprintf(s->out, "tensor\ttype\tmin\tmax\tmean\tstd\tnorm\tnan\tinf\tzeros%s\n",
            scale_columns ? "\tblocks\tzero_scale\tbad_scale\tmax_scale\tfirst_bad" : "");
    for (uint64_t i = 0; i < g->n_tensors; i++) {
        const as_gguf_tensor *t = &g->tensors[i];
        if (!as_hook_name_match(pattern, t->name))
            continue;
        if (as_cmd_interrupted(s))
            return as_error_set(c->err, "interrupted after %d tensor%s", matched, matched == 1 ? "" : "s");
        if (!as_ggml_type_supported(t->type)) {
            fprintf(s->out, "%s\t%s\t(cannot read this type yet)\n", shown_name(t->name, nm, sizeof nm),
                    as_ggml_type_name(t->type));
            continue;
        }
        if (as_weight_stats_of(t, &last, c->err))
            return AS_ERR;
        print_weight_line(s, t, &last);
        only = t;
        matched++;
    }
    if (!matched)
        return as_error_set(c->err, "no tensor matches '%s' (`info` lists them)", pattern);
    if (matched == 1) {
        fprintf(s->out, "histogram of %s:\n", shown_name(only->name, nm, sizeof nm));
        print_histogram(s, &last);
        if (has_scale_columns(only))
            print_scales(s, only, &last.scales);
    }
    return AS_OK;
}

/* ---- diff ---- */

/* What the comparison found, for the summary line and the per-layer table. */
typedef struct diff_sum {
    int tensors_differ, tensors_nonfinite, not_compared, keys_differ;
    int L;
    double *d2, *a2; /* per layer (L: the tensors outside the blocks) */
    bool *unbounded; /* a layer whose non-finite values do not match */
} diff_sum;

static const char *plural(long n, const char *one, const char *many)
{
    return n == 1 ? one : many;
}

/* A flat index (ne[0] fastest) as the place a reader looks for: (row r,
 * col c); with span > 1, the columns c..c+span-1 (a block). */
static void index_text(const as_gguf_tensor *t, uint64_t at, uint64_t span, char *buf, size_t cap)
{
    unsigned long long c = at % t->ne[0], rest = at / t->ne[0], r = rest % t->ne[1], m = rest / t->ne[1];
    char col[48];
    if (span > 1)
        snprintf(col, sizeof col, "%s %llu..%llu", t->n_dims <= 1 ? "index" : "cols", c, c + span - 1);
    else
        snprintf(col, sizeof col, "%s %llu", t->n_dims <= 1 ? "index" : "col", c);
    if (t->n_dims <= 1)
        snprintf(buf, cap, "(%s)", col);
    else if (t->n_dims == 2)
        snprintf(buf, cap, "(row %llu, %s)", r, col);
    else if (t->n_dims == 3)
        snprintf(buf, cap, "(matrix %llu, row %llu, %s)", m, r, col);
    else
        snprintf(buf, cap, "(dim3 %llu, matrix %llu, row %llu, %s)", m / t->ne[2], m % t->ne[2], r, col);
}

/* A value in words: NaN and Inf spelled out (printf's "-nan" says nothing true). */
static const char *value_text(double v, char *buf, size_t cap)
{
    if (isnan(v))
        return "NaN";
    if (isinf(v))
        return v > 0 ? "+Inf" : "-Inf";
    snprintf(buf, cap, "%.6g", v);
    return buf;
}

static void shape_text(const as_gguf_tensor *t, char *buf, size_t cap)
{
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (uint32_t k = 0; k < t->n_dims && k < 4 && o < cap; k++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%llu", k ? ", " : "", (unsigned long long)t->ne[k]);
    if (o < cap)
        snprintf(buf + o, cap - o, "]");
}

static bool same_shape(const as_gguf_tensor *a, const as_gguf_tensor *b)
{
    return a->n_dims == b->n_dims && !memcmp(a->ne, b->ne, sizeof a->ne);
}

/* ||a-b|| / ||a|| as a word where a number would lie. */
static void rel_text(const as_weight_delta *d, char *buf, size_t cap)
{
    double rel = as_weight_delta_rel(d);
    if (d->mismatch)
        snprintf(buf, cap, "non-finite");
    else if (isinf(rel))
        snprintf(buf, cap, "inf (|a| = 0)");
    else
        snprintf(buf, cap, "%.3e", rel);
}

/* "1 NaN", "3 Inf", "1 NaN and 3 Inf" */
static const char *count_text(const as_weight_nonfinite *nf, char *buf, size_t cap)
{
    if (nf->nan && nf->inf)
        snprintf(buf, cap, "%llu NaN and %llu Inf", (unsigned long long)nf->nan, (unsigned long long)nf->inf);
    else
        snprintf(buf, cap, "%llu %s", (unsigned long long)(nf->nan ? nf->nan : nf->inf), nf->nan ? "NaN" : "Inf");
    return buf;
}

/* The non-finite values of one tensor, per file, or once when both files
 * hold the same ones at the same places. */
static void print_nonfinite(as_session *s, const as_gguf_tensor *t, const as_weight_delta *d)
{
    char at[192], v[32], w[32], n[64];
    const char *side[2] = {"A", "B"};
    const as_weight_nonfinite *nf = d->nf;
    if (!d->mismatch && nf[0].nan + nf[0].inf) {
        index_text(t, nf[0].first, 1, at, sizeof at);
        fprintf(s->out, "  both files hold %s at %s (%s in each, at the same places)\n",
                value_text(nf[0].value, v, sizeof v), at, count_text(&nf[0], n, sizeof n));
        return;
    }
    for (int k = 0; k < 2; k++) {
        if (!(nf[k].nan + nf[k].inf))
            continue;
        index_text(t, nf[k].first, 1, at, sizeof at);
        fprintf(s->out, "  %s holds %s; the first, %s, at %s, where %s holds %s\n", side[k],
                count_text(&nf[k], n, sizeof n), value_text(nf[k].value, v, sizeof v), at, side[1 - k],
                value_text(nf[k].other, w, sizeof w));
    }
}

/* Block scales that are NaN or Inf (llama.cpp computes with them as they are). */
static void print_bad_scales(as_session *s, const as_gguf_tensor *const t[2], const as_weight_delta *d)
{
    char at[192], v[32];
    const as_block_scan *sc = d->scales;
    for (int k = 0; k < 2; k++) {
        if (!sc[k].bad)
            continue;
        const as_ggml_traits *tr = as_ggml_traits_of(t[k]->type);
        index_text(t[k], sc[k].first_bad * tr->block_elems, tr->block_elems, at, sizeof at);
        bool both = k == 0 && sc[1].bad == sc[0].bad && sc[1].first_bad == sc[0].first_bad && t[0]->type == t[1]->type;
        fprintf(s->out, "  %s %llu of %llu %s blocks with a non-finite scale; the first, block %llu %s, scale %s\n",
                both ? "both files hold" : k ? "B holds" : "A holds", (unsigned long long)sc[k].bad,
                (unsigned long long)sc[k].blocks, tr->name, (unsigned long long)sc[k].first_bad, at,
                value_text(sc[k].first_bad_scale, v, sizeof v));
        if (both)
            return;
    }
}

static void add_layer(diff_sum *sum, as_session *s, const char *name, const as_weight_delta *d)
{
    int l = as_model_tensor_block(s->model, name);
    l = l < 0 || l >= sum->L ? sum->L : l;
    sum->d2[l] += d->diff_norm * d->diff_norm;
    sum->a2[l] += d->norm_a * d->norm_a;
    sum->unbounded[l] |= d->mismatch > 0;
}

/* One tensor present in both files: a row when anything differs or is not
 * finite, then what is wrong in words. */
static int diff_tensor(as_session *s, const as_gguf_tensor *ta, const as_gguf_tensor *tb, diff_sum *sum,
                       as_error *err)
{
    char nm[256], x[64], y[64];
    const char *name = shown_name(ta->name, nm, sizeof nm), *tya = as_ggml_type_name(ta->type),
               *tyb = as_ggml_type_name(tb->type);
    if (!same_shape(ta, tb)) {
        shape_text(ta, x, sizeof x);
        shape_text(tb, y, sizeof y);
        fprintf(s->out, "%s\tshape %s in A, %s in B", name, x, y);
        if (ta->type != tb->type)
            fprintf(s->out, ", type %s in A, %s in B", tya, tyb);
        fputs(": values not compared\n", s->out);
        sum->tensors_differ++, sum->not_compared++;
        return AS_OK;
    }
    if (!as_ggml_type_supported(ta->type) || !as_ggml_type_supported(tb->type)) {
        /* what cannot be decoded can still be told apart by its bytes */
        if (ta->type == tb->type && ta->n_bytes == tb->n_bytes && !memcmp(ta->data, tb->data, ta->n_bytes))
            return AS_OK;
        fprintf(s->out, "%s\ttype %s in A, %s in B (attnscope cannot decode %s yet): %s, values not compared\n",
                name, tya, tyb, as_ggml_type_supported(ta->type) ? tyb : tya,
                ta->type == tb->type ? "the bytes differ" : "the types differ");
        sum->tensors_differ++, sum->not_compared++;
        return AS_OK;
    }
    as_weight_delta d;
    if (as_weight_compare(ta, tb, &d, err))
        return AS_ERR;
    add_layer(sum, s, ta->name, &d);
    bool nonfinite = d.nf[0].nan + d.nf[0].inf + d.nf[1].nan + d.nf[1].inf + d.scales[0].bad + d.scales[1].bad > 0;
    bool differs = d.changed || d.mismatch || ta->type != tb->type;
    if (!differs && !nonfinite)
        return AS_OK;
    sum->tensors_differ += differs;
    sum->tensors_nonfinite += nonfinite;
    char rel[32], at[192] = "-";
    rel_text(&d, rel, sizeof rel);
    if (d.changed)
        index_text(ta, d.max_at, 1, at, sizeof at);
    fprintf(s->out, "%s\t%s\t%.4g\t%.4g\t%.4g\t%s\n", name, rel, d.diff_norm, d.norm_a, d.max_abs, at);
    if (ta->type != tb->type)
        fprintf(s->out, "  type %s in A, %s in B (values compared dequantized)\n", tya, tyb);
    const as_gguf_tensor *t[2] = {ta, tb};
    print_bad_scales(s, t, &d);
    print_nonfinite(s, ta, &d);
    return AS_OK;
}

/* ---- metadata ---- */

static bool is_float_type(as_gguf_type t)
{
    return t == AS_GGUF_FLOAT32 || t == AS_GGUF_FLOAT64;
}

static bool same_number(double x, double y)
{
    return x == y || (isnan(x) && isnan(y));
}

static bool kv_scalar_equal(const as_gguf_kv *x, const as_gguf_kv *y)
{
    if (x->type != y->type)
        return false;
    if (x->type == AS_GGUF_STRING)
        return x->str_len == y->str_len && !memcmp(x->str, y->str, x->str_len);
    if (x->type == AS_GGUF_BOOL)
        return x->v.b == y->v.b;
    if (is_float_type(x->type))
        return same_number(x->v.f64, y->v.f64);
    return x->v.u64 == y->v.u64; /* an integer: the same bits in either member */
}

static bool arr_elem_equal(const as_gguf_kv *x, const as_gguf_kv *y, uint64_t i)
{
    if (x->arr_type == AS_GGUF_STRING || y->arr_type == AS_GGUF_STRING)
        return x->arr_type == y->arr_type && x->str_lens[i] == y->str_lens[i] &&
               !memcmp(x->strs[i], y->strs[i], x->str_lens[i]);
    if (is_float_type(x->arr_type) || is_float_type(y->arr_type))
        return same_number(as_gguf_arr_f64(x, i), as_gguf_arr_f64(y, i));
    return as_gguf_arr_i64(x, i) == as_gguf_arr_i64(y, i);
}

/* An array element by what it is to a reader: "token 40", "merge 7". */
static void elem_name(const char *key, uint64_t i, char *buf, size_t cap)
{
    const char *dot = strrchr(key, '.'), *last = dot ? dot + 1 : key;
    unsigned long long n = i;
    if (!strcmp(last, "tokens"))
        snprintf(buf, cap, "token %llu", n);
    else if (!strcmp(last, "token_type"))
        snprintf(buf, cap, "token %llu's type", n);
    else if (!strcmp(last, "scores"))
        snprintf(buf, cap, "token %llu's score", n);
    else if (!strcmp(last, "merges"))
        snprintf(buf, cap, "merge %llu", n);
    else
        snprintf(buf, cap, "element %llu", n);
}

#define KV_COLS 60

/* A value for its cell; a special token's id with its text (from that file's vocabulary). */
static void kv_cell(const as_gguf *g, const as_gguf_kv *kv, bool with_type, char *buf, size_t cap)
{
    size_t key_len = strlen(kv->key), o;
    if (kv->type == AS_GGUF_ARRAY)
        snprintf(buf, cap, "[%s \xc3\x97 %llu]", as_gguf_type_name(kv->arr_type), (unsigned long long)kv->arr_len);
    else
        as_gguf_kv_text(kv, -1, KV_COLS, buf, cap);
    o = strlen(buf);
    const as_gguf_kv *tokens = as_gguf_find(g, "tokenizer.ggml.tokens");
    if (key_len > 9 && !strcmp(kv->key + key_len - 9, "_token_id") && (kv->type == AS_GGUF_UINT32 ||
        kv->type == AS_GGUF_INT32) && tokens && tokens->type == AS_GGUF_ARRAY && tokens->arr_type == AS_GGUF_STRING) {
        char piece[4 * KV_COLS + 8] = "(not a token)";
        int64_t id = kv->type == AS_GGUF_UINT32 ? (int64_t)kv->v.u64 : kv->v.i64;
        if (id >= 0 && (uint64_t)id < tokens->arr_len)
            as_gguf_kv_text(tokens, id, KV_COLS, piece, sizeof piece);
        o += (size_t)snprintf(buf + o, o < cap ? cap - o : 0, " %s", piece);
    }
    if (with_type && o < cap)
        snprintf(buf + o, cap - o, " (%s)", as_gguf_type_name(kv->type));
}

/* Two arrays: where they first differ, and how much. */
static void arr_detail(const as_gguf_kv *x, const as_gguf_kv *y, char *buf, size_t cap)
{
    uint64_t n = x->arr_len < y->arr_len ? x->arr_len : y->arr_len, count = 0, first = UINT64_MAX;
    for (uint64_t i = 0; i < n; i++)
        if (!arr_elem_equal(x, y, i) && count++ == 0)
            first = i;
    if (first == UINT64_MAX && x->arr_len != y->arr_len)
        first = n;
    unsigned long long nx = x->arr_len, ny = y->arr_len;
    if (first == UINT64_MAX) {
        snprintf(buf, cap, "element types %s in A, %s in B; the values are equal", as_gguf_type_name(x->arr_type),
                 as_gguf_type_name(y->arr_type));
        return;
    }
    char what[64], vx[4 * KV_COLS + 8], vy[4 * KV_COLS + 8];
    elem_name(x->key, first, what, sizeof what);
    as_gguf_kv_text(x, (int64_t)first, KV_COLS, vx, sizeof vx);
    as_gguf_kv_text(y, (int64_t)first, KV_COLS, vy, sizeof vy);
    size_t o = (size_t)snprintf(buf, cap, "%s: %s in A, %s in B (", what, vx, vy);
    if (o >= cap)
        return;
    if (nx == ny)
        snprintf(buf + o, cap - o, "%llu of %llu %s)", (unsigned long long)count, nx, plural((long)count, "differs", "differ"));
    else
        snprintf(buf + o, cap - o, "%llu elements in A, %llu in B; %llu of the first %llu %s)", nx, ny,
                 (unsigned long long)count, (unsigned long long)n, plural((long)count, "differs", "differ"));
}

/* One key present in either file; true when it differs. */
static bool diff_key(as_session *s, const as_gguf *a, const as_gguf *b, const as_gguf_kv *ka, const as_gguf_kv *kb)
{
    char nm[256], va[8 * KV_COLS], vb[8 * KV_COLS], detail[16 * KV_COLS] = "";
    const as_gguf_kv *k = ka ? ka : kb;
    if (ka && kb) {
        bool arrays = ka->type == AS_GGUF_ARRAY && kb->type == AS_GGUF_ARRAY;
        bool equal = arrays ? ka->arr_type == kb->arr_type && ka->arr_len == kb->arr_len : kv_scalar_equal(ka, kb);
        for (uint64_t i = 0; arrays && equal && i < ka->arr_len; i++)
            equal = arr_elem_equal(ka, kb, i);
        if (equal)
            return false;
        kv_cell(a, ka, ka->type != kb->type, va, sizeof va);
        kv_cell(b, kb, ka->type != kb->type, vb, sizeof vb);
        if (arrays)
            arr_detail(ka, kb, detail, sizeof detail);
    } else {
        kv_cell(ka ? a : b, ka ? ka : kb, false, ka ? va : vb, sizeof va);
        snprintf(ka ? vb : va, sizeof va, "(absent)");
        snprintf(detail, sizeof detail, "only in %s", ka ? "A" : "B");
    }
    fprintf(s->out, "%s\t%s\t%s%s%s\n", shown_name(k->key, nm, sizeof nm), va, vb, detail[0] ? "\t" : "", detail);
    return true;
}

static void diff_keys(as_session *s, const as_gguf *a, const as_gguf *b, diff_sum *sum)
{
    fprintf(s->out, "metadata key\tA\tB\n");
    for (uint64_t i = 0; i < a->n_kv; i++)
        sum->keys_differ += diff_key(s, a, b, &a->kvs[i], as_gguf_find(b, a->kvs[i].key));
    for (uint64_t i = 0; i < b->n_kv; i++)
        if (!as_gguf_find(a, b->kvs[i].key))
            sum->keys_differ += diff_key(s, a, b, NULL, &b->kvs[i]);
}

static void print_layers(as_session *s, const diff_sum *sum)
{
    fprintf(s->out, "per layer\trelative difference\n");
    for (int l = 0; l <= sum->L; l++) {
        if (l < sum->L)
            fprintf(s->out, "%d\t", l);
        else
            fputs("other\t", s->out);
        if (sum->unbounded[l])
            fputs("non-finite\n", s->out);
        else if (sum->d2[l] == 0)
            fputs("0.000e+00\n", s->out);
        else if (sum->a2[l] == 0)
            fputs("inf (|a| = 0)\n", s->out);
        else
            fprintf(s->out, "%.3e\n", sqrt(sum->d2[l] / sum->a2[l]));
    }
}

static void print_summary(as_session *s, const diff_sum *sum)
{
    fprintf(s->out, "%d %s, %d metadata %s", sum->tensors_differ, plural(sum->tensors_differ, "tensor differs", "tensors differ"),
            sum->keys_differ, plural(sum->keys_differ, "key differs", "keys differ"));
    if (sum->tensors_nonfinite)
        fprintf(s->out, ", %d %s NaN or Inf", sum->tensors_nonfinite,
                plural(sum->tensors_nonfinite, "tensor holds", "tensors hold"));
    if (sum->not_compared)
        fprintf(s->out, ", %d %s", sum->not_compared,
                plural(sum->not_compared, "tensor's values not compared", "tensors' values not compared"));
    fputs("\n", s->out);
}

/* Compares every tensor of both files (going on past any that cannot be
 * compared), then every metadata key. Differences are the answer, not an
 * error: only a file that cannot be read fails the command. */
int as_cmd_diff(cmd_ctx *c)
{
    as_session *s = c->s;
    const as_gguf *a = s->model->gguf;
    if (c->argc != 2)
        return as_error_set(c->err, "usage: diff OTHER.gguf|DIR");
    if (!a)
        return as_error_set(c->err, "diff compares GGUF files; this model was not loaded from one");
    as_gguf *b;
    if (as_hf_open_any(&b, c->argv[1], c->err)) /* a GGUF file or a Hugging Face directory */
        return AS_ERR;
    diff_sum sum = {0};
    sum.L = s->model->cfg.n_layer > 0 ? s->model->cfg.n_layer : 0;
    sum.d2 = calloc((size_t)sum.L + 1, sizeof *sum.d2);
    sum.a2 = calloc((size_t)sum.L + 1, sizeof *sum.a2);
    sum.unbounded = calloc((size_t)sum.L + 1, sizeof *sum.unbounded);
    int rc = sum.d2 && sum.a2 && sum.unbounded ? AS_OK : as_error_set(c->err, "out of memory");
    char nm[256], pa[1024], pb[1024];
    shown_name(a->path ? a->path : "(the loaded model)", pa, sizeof pa);
    shown_name(b->path ? b->path : c->argv[1], pb, sizeof pb);
    if (rc == AS_OK) {
        fprintf(s->out, "A: %s\nB: %s\n", pa, pb);
        fprintf(s->out, "tensor\trelative difference\t|a-b|\t|a|\tmax |a-b|\tat\n");
    }
    for (uint64_t i = 0; rc == AS_OK && i < a->n_tensors; i++) {
        const as_gguf_tensor *ta = &a->tensors[i], *tb = as_gguf_tensor_find(b, ta->name);
        if (!tb) {
            fprintf(s->out, "%s\tonly in %s\n", shown_name(ta->name, nm, sizeof nm), pa);
            sum.tensors_differ++;
            continue;
        }
        rc = diff_tensor(s, ta, tb, &sum, c->err);
    }
    for (uint64_t i = 0; rc == AS_OK && i < b->n_tensors; i++)
        if (!as_gguf_tensor_find(a, b->tensors[i].name)) {
            fprintf(s->out, "%s\tonly in %s\n", shown_name(b->tensors[i].name, nm, sizeof nm), pb);
            sum.tensors_differ++;
        }
    if (rc == AS_OK) {
        print_layers(s, &sum);
        diff_keys(s, a, b, &sum);
        print_summary(s, &sum);
    }
    free(sum.d2);
    free(sum.a2);
    free(sum.unbounded);
    as_gguf_close(b);
    return rc;
}
